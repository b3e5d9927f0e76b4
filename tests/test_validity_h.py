"""Invalid programs upstream's negative tests show and croq2triton translated (issue 28, part H):
each rule with invalid forms, the message and line:col, and valid neighbours that still pass.

* ``f.at(i, j)`` of a copy's future: a future is no spanned data, its elements are
  ``f.data.at(i, j)`` (LANGUAGE.md 7.5, 7.6);
* the parallels inside one block start as many threads each (a block has one size; LANGUAGE.md 7.3);
* the options of a ``select`` are alike: one storage, element type and shape (LANGUAGE.md 7.6).
"""

from __future__ import annotations

import pytest
from kernel_util import check_errors, line_col

from croq2triton.frontend.driver import parse
from croq2triton.sema.checks import check_unit

errors, where = check_errors, line_col


# ---- elements of a future ---------------------------------------------------------------------

FUTURE = """__co__ void f(global f32 [M, 24] x, global f32 [M, 24] y) {
  parallel p by cdiv(M, 8) : block {
    parallel t by 8 : thread {
      ii = dma.copy x.chunkat(p, _) => local;
      y.at(p # t, 0) = READ;
    }
  }
}
"""


def test_an_element_of_a_future_is_an_error_at_its_name() -> None:
    errs = errors(FUTURE.replace("READ", "ii.at(t, 0)"))
    assert len(errs) == 1 and "'ii' is the future of a copy, not spanned data" in errs[0].message
    assert where(errs[0]) == (5, 24)
    assert "ii.data.at(...)" in (errs[0].hint or "")


@pytest.mark.parametrize("read", ["ii.data.at(t, 0)", "x.at(p # t, 1)"])
def test_reads_through_the_data_or_of_buffers_pass(read: str) -> None:
    assert errors(FUTURE.replace("READ", read)) == []


# ---- threads of sibling parallels -------------------------------------------------------------


def block(a: str, b: str) -> str:
    return f"""__co__ void f(global f32 [M] x) {{
  parallel p by 4 : block {{
    parallel {a} {{ x.at(p) = 1.0f; }}
    parallel {b} {{ x.at(p) = 2.0f; }}
  }}
}}
"""


@pytest.mark.parametrize(
    "a, b, counts",
    [
        ("w by 3 : group-4", "g by 3 : group", (96, 384)),  # 384 threads beside 96
        ("w by 2 : group-4, t by 128 : thread", "g by 4 : group", (128, 256)),
    ],
)
def test_sibling_parallels_of_different_thread_counts_are_an_error(a: str, b: str, counts: tuple[int, int]) -> None:
    errs = errors(block(a, b))
    assert len(errs) == 1, errs
    assert f"start different numbers of threads: {counts[0]} here, {counts[1]} at line 3" in errs[0].message
    assert where(errs[0])[0] == 4


@pytest.mark.parametrize(
    "a, b",
    [
        ("w by 1 : group-4", "g by 4 : group"),  # 128 and 4 x 32
        ("w by 2 : group-4, t by 128 : thread", "g by 8 : group, l by 32 : thread"),
        ("t by N : thread", "t2 by 64 : thread"),  # a count known at launch: not compared
    ],
)
def test_sibling_parallels_of_one_thread_count_pass(a: str, b: str) -> None:
    assert errors(block(a, b).replace("global f32 [M] x", "global f32 [M] x, int N")) == []


@pytest.mark.parametrize("a, b", [("t by 64 : thread", "t2 by 128 : thread"), ("i by 128 : thread", "j by 1 : thread")])
def test_thread_level_siblings_of_different_counts_are_a_warning(a: str, b: str) -> None:
    # a histogram's bins added by their first 16 threads, one thread's last sum: croq2triton runs
    # each as the first threads of the block (upstream rejects them: the warning says so)
    found = check_unit(parse(block(a, b), "t.co"))
    warned = [d for d in found if "start different numbers of threads" in d.message]
    assert len(warned) == 1 and warned[0].severity == "warning" and "upstream croqtile rejects" in warned[0].message


# ---- options of a select ----------------------------------------------------------------------

SELECT = """__co__ void f(global f32 [64, 64] x) {
  parallel p by 4 : block {
    A_DECL
    B_DECL
    parallel q by 4 : thread {
      foreach k in [4] {
        c = dma.copy x.subspan(4, 2).at(q, k) => select(k % 2, a, b);
      }
    }
  }
}
"""


@pytest.mark.parametrize(
    "a, b, what",
    [
        ("shared f32 [4, 2] a;", "local f32 [4, 2] b;", "'b' (local f32 [4, 2]) vs. 'a' (shared f32 [4, 2])"),
        ("local f32 [4, 2] a;", "local f32 [4, 4] b;", "'b' (local f32 [4, 4]) vs. 'a' (local f32 [4, 2])"),
        ("local f32 [4, 2] a;", "local f16 [4, 2] b;", "'b' (local f16 [4, 2]) vs. 'a' (local f32 [4, 2])"),
    ],
)
def test_select_options_that_differ_are_an_error(a: str, b: str, what: str) -> None:
    errs = errors(SELECT.replace("A_DECL", a).replace("B_DECL", b))
    assert len(errs) == 1 and f"the options of a select differ: {what}" in errs[0].message, errs
    assert where(errs[0]) == (7, 67)


def test_alike_select_options_pass() -> None:
    assert errors(SELECT.replace("A_DECL", "local f32 [4, 2] a;").replace("B_DECL", "local f32 [4, 2] b;")) == []
