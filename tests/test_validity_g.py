"""Invalid programs that upstream's negative tests show and croq2triton translated or refused
(issue 28, part G): each rule with invalid forms, the diagnostic's message and line:col, and valid
neighbours that still pass.

* a copy into a new ``local``/``shared`` buffer outside ``parallel`` (LANGUAGE.md 7.3, storage rules);
* ``[[schedule(k_tiles(...))]]`` that is not a permutation of the K tiles (LANGUAGE.md 7.9);
* a ``chunkat``/``chunk`` tiling factor larger than the extent it tiles, a ``subspan`` larger than
  its parent (LANGUAGE.md 7.6, static checks);
"""

from __future__ import annotations

import pytest

from croq2triton.errors import CroqError, Diagnostic
from croq2triton.frontend.driver import parse
from croq2triton.sema.checks import check_unit


def check(src: str) -> list[Diagnostic]:
    """``croq2triton check`` through the API: the warnings, or raises with the errors."""
    return check_unit(parse(src, "t.co"))


def errors(src: str) -> list[Diagnostic]:
    with pytest.raises(CroqError) as info:
        check(src)
    return [d for d in info.value.diagnostics if d.severity == "error"]


def where(d: Diagnostic) -> tuple[int, int]:
    assert d.span is not None
    return d.span.line, d.span.col


def fn(body: str, params: str = "f32 [16, 32] a") -> str:
    return f"__co__ void f({params}) {{\n{body}\n}}\n"


# ---- copies into local/shared buffers at host level (LANGUAGE.md 7.3) ------------------------


@pytest.mark.parametrize(
    ("body", "storage", "at"),
    [
        ("  dma.copy a => local;", "local", (2, 17)),
        (
            "  foreach i in [2] {\n    b = dma.copy.async a.chunkat(i, _) => shared;\n    wait b;\n  }",
            "shared",
            (3, 43),
        ),
        ("  with x in [4] {\n    c = dma.copy a.chunkat(x, _) => local;\n  }", "local", (3, 37)),
        ("  dma.transp<1, 0> a => shared;", "shared", (2, 25)),
    ],
)
def test_a_copy_into_local_or_shared_storage_outside_parallel_is_an_error(
    body: str, storage: str, at: tuple[int, int]
) -> None:
    (d,) = errors(fn(body))
    assert f"... => {storage}' outside 'parallel': a '{storage}' buffer only exists inside a kernel" in d.message
    assert where(d) == at
    assert d.hint is not None and "inside a 'parallel'" in d.hint


@pytest.mark.parametrize(
    "body",
    [
        "  b = dma.copy a => global;",  # device memory on the host: fine
        "  parallel p by 1 {\n    b = dma.copy a => shared;\n    c = dma.copy b => local;\n  }",
        "  parallel p by 2 : block {\n    foreach i in [2] {\n      b = dma.copy a.chunkat(p, i) => local;\n    }\n  }",
    ],
)
def test_copies_into_storage_where_it_exists_pass(body: str) -> None:
    check(fn(body))


# ---- k_tiles schedules (LANGUAGE.md 7.9) -----------------------------------------------------

MMA = """__co__ void f() {{
  parallel b by 1 : block {{
    shared bf16 [64, 64] lhs;
    shared bf16 [64, 128] rhs;
    parallel g by 1 : group-4 {{
      acc = mma.fill.f32 0.0f;
      [[schedule(k_tiles({order}))]]
      mma.row.col acc, lhs, rhs;
    }}
  }}
}}
"""


@pytest.mark.parametrize(
    ("order", "why"),
    [
        ("3, 2, 2, 0", "2 is listed more than once"),
        ("0, 1, 4, 2", "4 is not in [0, 4)"),
        ("1, 1, 5", "1 is listed more than once; 5 is not in [0, 3)"),
    ],
)
def test_a_k_tiles_schedule_must_permute_the_k_tiles(order: str, why: str) -> None:
    (d,) = errors(MMA.format(order=order))
    n = len(order.split(","))
    assert d.message == f"k_tiles({order}) is not a permutation of the {n} K tiles [0, {n}): {why}"
    assert where(d) == (7, 26)
    assert d.hint is not None and "exactly once" in d.hint


@pytest.mark.parametrize("order", ["3, 2, 1, 0", "0", "1, 0, 3, 2"])
def test_a_permutation_schedule_passes(order: str) -> None:
    check(MMA.format(order=order))


# ---- views larger than what they view (LANGUAGE.md 7.6) ------------------------------------


@pytest.mark.parametrize(
    ("body", "message", "at"),
    [
        (
            "  parallel p by 2 {\n    foreach i in [32] {\n      b = dma.copy a.chunkat(i, p) => shared;\n    }\n  }",
            "'.chunkat' tiles the 1st dimension of 'a' (extent 16) by 32: the tiling factor exceeds the extent,"
            " so every tile is empty",
            (4, 21),
        ),
        (
            "  parallel p by 64 {\n    b = dma.copy a.chunkat(_, p) => shared;\n  }",
            "'.chunkat' tiles the 2nd dimension of 'a' (extent 32) by 64: the tiling factor exceeds the extent,"
            " so every tile is empty",
            (3, 19),
        ),
        (
            "  parallel p by 2 {\n    b = dma.copy a.subspan(8, 33).at(p, 0) => shared;\n  }",
            "'.subspan' takes 33 elements of the 2nd dimension of 'a', whose extent is only 32: a part cannot be"
            " larger than what it is a part of",
            (3, 19),
        ),
        (
            "  parallel p by 2 {\n    b = dma.copy a.subspan(8, 16).at(p, 0).chunk(1, 32).at(0, 0) => shared;\n  }",
            "'.chunk' tiles the 2nd dimension of 'a' (extent 16) by 32: the tiling factor exceeds the extent,"
            " so every tile is empty",
            (3, 43),
        ),
        (
            "  parallel p by 2 {\n    b = dma.copy a.subspan(8, 16).at(p, 0).subspan(4, 17) => shared;\n  }",
            "'.subspan' takes 17 elements of the 2nd dimension of 'a', whose extent is only 16: a part cannot be"
            " larger than what it is a part of",
            (3, 43),
        ),
    ],
)
def test_a_view_larger_than_its_parent_is_an_error(body: str, message: str, at: tuple[int, int]) -> None:
    (d,) = errors(fn(body))
    assert d.message == message
    assert where(d) == at


@pytest.mark.parametrize(
    "body",
    [
        # factor == extent, subspan == extent, '_' keeps the parent's extent
        "  parallel p by 16 {\n    b = dma.copy a.chunkat(p, _) => shared;\n  }",
        "  parallel p by 2 {\n    b = dma.copy a.subspan(8, 32).at(p, 0) => shared;\n  }",
        "  parallel p by 2 {\n    b = dma.copy a.subspan(8, _).at(p, 0).subspan(8, 32) => shared;\n  }",
        # a modspan wider than its parent is its whole parent (LANGUAGE.md 7.6: P % e)
        "  parallel p by 2 {\n    b = dma.copy a.modspan(5, 40).at(0, 0) => shared;\n  }",
        # a run-time extent is not checked here
        "  parallel p by 2 {\n    b = dma.copy a.subspan(8, n).at(p, 0) => shared;\n  }",
    ],
)
def test_views_within_their_parent_pass(body: str) -> None:
    check(fn(body, "f32 [16, 32] a, int n"))


# ---- asynchronous global-to-global copies in a kernel (LANGUAGE.md 7.8) ----------------------

KERNEL = """__co__ void f(global f32 [64] g, f32 [64] h) {{
  global f32 [64] b;
  parallel p by 1 {{
    shared f32 [64] s;
{body}
  }}
}}
"""


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("    x = dma.copy.async g => b;\n    wait x;", "('g' => 'b')"),
        ("    x = dma.copy.async b.chunkat(p) => g;\n    wait x;", "('b.chunkat(p)' => 'g')"),
        ("    x = dma.copy.async g => global;\n    wait x;", "('g' => 'global')"),
    ],
)
def test_an_async_global_to_global_copy_in_a_kernel_is_an_error(body: str, what: str) -> None:
    (d,) = errors(KERNEL.format(body=body))
    assert d.message == (
        f"an asynchronous copy from global memory to global memory {what}: a GPU has no asynchronous"
        " global-to-global copy"
    )
    assert where(d) == (5, 5)


@pytest.mark.parametrize(
    "body",
    [
        "    dma.copy g => b;",  # synchronous: any direction
        "    x = dma.copy.async g => s;\n    wait x;",
        "    x = dma.copy.async s => g;\n    wait x;",
        "    x = dma.copy.async h => b;\n    wait x;",  # a parameter without storage is host data
    ],
)
def test_other_directions_pass(body: str) -> None:
    check(KERNEL.format(body=body))


def test_an_async_global_copy_between_launches_passes() -> None:
    check(fn("  global f32 [16, 32] b;\n  x = dma.copy.async a => b;\n  wait x;", "global f32 [16, 32] a"))


# ---- host-level copies that do not fit (LANGUAGE.md 7.8) --------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "  f32 [4, 8] d;\n  dma.transp<1, 0> a => d;",
            "dma.transp of 'a' [16, 32] (transposed: [32, 16]) into 'd' [4, 8]: the source is larger along"
            " dimension 0 (32 > 4)",
        ),
        (
            "  f32 [16, 8] d;\n  dma.copy a => d;",
            "dma.copy of 'a' [16, 32] into 'd' [16, 8]: the source is larger along dimension 1 (32 > 8)",
        ),
        (
            "  f32 [16, 32, 2] d;\n  dma.copy a => d;",
            "dma.copy of 'a' [16, 32] into 'd' [16, 32, 2]: the source has 2 dimension(s), the destination 3",
        ),
    ],
)
def test_a_host_copy_larger_than_its_destination_is_an_error(body: str, message: str) -> None:
    (d,) = errors(fn(body))
    assert d.message == message
    assert where(d) == (3, 3)
    assert d.hint is not None and "tail rule" in d.hint


@pytest.mark.parametrize(
    "body",
    [
        "  f32 [32, 16] d;\n  dma.transp<1, 0> a => d;",
        "  f32 [16, 64] d;\n  dma.copy a => d;",  # smaller source: the tail rule fills zeros
        "  f32 [16, n] d;\n  dma.copy a => d;",  # a run-time extent: checked at launch
    ],
)
def test_host_copies_that_fit_pass(body: str) -> None:
    check(fn(body, "f32 [16, 32] a, int n"))


# ---- dma.transp and dma.pad configurations (LANGUAGE.md 7.8) ---------------------------------


@pytest.mark.parametrize(
    ("copy", "why"),
    [
        ("dma.transp<1, 0, 2> a => local;", "'a' has 2 dimensions"),
        ("dma.transp<2, 0> a => local;", "it is not a permutation of 0 .. 1"),
        ("dma.transp<1, 1> a.chunkat(p, _) => shared;", "it is not a permutation of 0 .. 1"),
    ],
)
def test_a_transp_that_does_not_permute_the_source_is_an_error(copy: str, why: str) -> None:
    (d,) = errors(fn(f"  parallel p by 2 {{\n    {copy}\n  }}"))
    order = copy[copy.index("<") + 1 : copy.index(">")]
    assert d.message == f"dma.transp<{order}> names the source's dimensions in a new order, but {why}"
    assert where(d) == (3, 5)
    assert d.hint == "list each dimension of the source once: dma.transp<1, 0> reverses them"


@pytest.mark.parametrize(
    ("copy", "why"),
    [
        (
            "dma.pad<{1, 0}, {1, 0, 3}, {0, 0}, 0.0f> a => local;",
            "its low, high and interior paddings have 2, 3, 2 values",
        ),
        (
            "dma.pad<{1}, {1}, {0}, 0.0f> a.chunkat(p, _) => shared;",
            "it gives 1 values per padding for 'a.chunkat(p, _)' of 2 dimensions",
        ),
    ],
)
def test_a_pad_without_one_value_per_dimension_is_an_error(copy: str, why: str) -> None:
    (d,) = errors(fn(f"  parallel p by 2 {{\n    {copy}\n  }}"))
    assert d.message == f"dma.pad pads each dimension of its source, but {why}"
    assert where(d) == (3, 5)


@pytest.mark.parametrize(
    "copy",
    [
        "dma.transp<1, 0> a => local;",
        "dma.transp<0, 1> a.chunkat(p, _) => shared;",
        "dma.transp<1, 0, 2> a.span_as([4, 4, 32]) => shared;",  # span_as changes the rank: not followed
        "dma.pad<{1, 0}, {1, 2}, {0, 0}, 0.0f> a => local;",
    ],
)
def test_transp_and_pad_that_fit_the_source_pass(copy: str) -> None:
    check(fn(f"  parallel p by 2 {{\n    {copy}\n  }}"))


# ---- names bound over a shape (LANGUAGE.md 7.4) -----------------------------------------------


@pytest.mark.parametrize(
    ("body", "message", "at"),
    [
        ("  with {x, y, z} in a.span {}", "{x, y, z} names 3 dimensions, but 'a.span' has 2", (2, 8)),
        ("  foreach {x} in [4, 4] {}", "{x} names 1 dimension, but '[4, 4]' has 2", (2, 11)),
        ("  s : [2, 3, 4];\n  with t = {x, y} in s {}", "{x, y} names 2 dimensions, but 's' has 3", (3, 8)),
    ],
)
def test_names_not_matching_the_rank_of_their_shape_are_an_error(body: str, message: str, at: tuple[int, int]) -> None:
    (d,) = errors(fn(body))
    assert d.message == message
    assert where(d) == at


@pytest.mark.parametrize(
    "body",
    [
        "  with {x, y} in a.span {}",
        "  foreach {x, y} in [4, 4] {}",
        "  with t in a.span {}",  # bound whole: a bounded ituple
        "  s : [2, 3];\n  with {x, y} in [s] {}",  # a named shape expands to its extents
    ],
)
def test_names_matching_the_rank_pass(body: str) -> None:
    check(fn(body))


# ---- parallel bounds are integers (LANGUAGE.md 7.3) -------------------------------------------


@pytest.mark.parametrize(
    ("pb", "bound", "what", "col"),
    [
        ("parallel p by 4.0f {}", "4.0f", "a floating-point value", 17),
        ("parallel p by n * x {}", "n * x", "a floating-point value", 17),
        ("parallel {i, j} by [2, ok] {}", "ok", "a boolean value", 26),
        ("parallel p by n > 2 {}", "n > 2", "a boolean value", 17),
    ],
)
def test_a_parallel_bound_that_is_not_an_integer_is_an_error(pb: str, bound: str, what: str, col: int) -> None:
    (d,) = errors(fn(f"  {pb}", "int n, float x, bool ok"))
    assert d.message == f"the bound of a 'parallel' counts its instances, but '{bound}' is {what}"
    assert where(d) == (2, col)


@pytest.mark.parametrize(
    "pb", ["parallel p by n * 2 {}", "parallel {i, j} by [2, cdiv(n, 4)] {}", "parallel p by (n + 1) / 2 {}"]
)
def test_integer_parallel_bounds_pass(pb: str) -> None:
    check(fn(f"  {pb}", "int n, float x, bool ok"))


# ---- where inthreads and asynchronous parallel may stand (LANGUAGE.md 7.3, 7.4) --------------


@pytest.mark.parametrize(
    ("body", "message", "at"),
    [
        (
            "  inthreads (n > 0) { a.at(0, 0) = 1.0f; }",
            "'inthreads' outside 'parallel': its predicate selects instances of a 'parallel', and there are none here",
            (2, 3),
        ),
        (
            "  foreach i in [2] {\n    inthreads (i == 0) {}\n  }",
            "'inthreads' outside 'parallel': its predicate selects instances of a 'parallel', and there are none here",
            (3, 5),
        ),
        (
            "  parallel p by 4 {\n    inthreads (p < 2) {\n      inthreads.async (p == 0) {}\n    }\n  }",
            "an 'inthreads.async' inside another 'inthreads': only an outermost 'inthreads' may be '.async'",
            (4, 7),
        ),
        (
            "  parallel by 4 : block\n    parallel.async by 32 : thread {}",
            "an inner 'parallel' cannot be '.async': only the outermost 'parallel' launches a kernel",
            (3, 5),
        ),
        (
            "  parallel by 4 : block {\n    foreach i in [2]\n      parallel.async by 32 : thread {}\n  }",
            "an inner 'parallel' cannot be '.async': only the outermost 'parallel' launches a kernel",
            (4, 7),
        ),
    ],
)
def test_misplaced_inthreads_and_async_parallel_are_errors(body: str, message: str, at: tuple[int, int]) -> None:
    (d,) = errors(fn(body, "f32 [16, 32] a, int n, stream s"))
    assert d.message == message
    assert where(d) == at


@pytest.mark.parametrize(
    "body",
    [
        "  parallel p by 4 {\n    inthreads.async (p == 0) {}\n    inthreads.async (p != 0) {}\n  }",
        "  parallel p by 4 {\n    inthreads (p < 2) {\n      inthreads (p == 0) {}\n    }\n  }",
        "  parallel.async by 4 : block\n    parallel by 32 : thread {}",
        "  parallel<s> by 4 : block\n    parallel by 32 : thread {}",
    ],
)
def test_well_placed_inthreads_and_async_parallel_pass(body: str) -> None:
    check(fn(body, "f32 [16, 32] a, int n, stream s"))


# ---- arrays of buffers hold at least one (LANGUAGE.md 7.5) ------------------------------------


@pytest.mark.parametrize(
    ("decl", "name", "shown", "col"),
    [
        ("shared f32 [8] bufs[0];", "bufs", "0", 25),
        ("local f32 [8] bufs[2][n - 4];", "bufs", "n - 4 = -2", 27),
        ("shared event full[-1];", "full", "-1", 23),
    ],
)
def test_an_array_of_no_buffers_is_an_error(decl: str, name: str, shown: str, col: int) -> None:
    (d,) = errors(fn(f"  int n = 2;\n  parallel p by 2 {{\n    {decl}\n  }}"))
    assert d.message == (
        f"the array '{name}' has {shown} elements along one of its dimensions: an array holds at least one along each"
    )
    assert where(d) == (4, col)


@pytest.mark.parametrize("decl", ["shared f32 [8] bufs[1];", "local f32 [8] bufs[2][n];", "shared event full[n];"])
def test_arrays_of_buffers_pass(decl: str) -> None:
    check(fn(f"  int n = 2;\n  parallel p by 2 {{\n    {decl}\n  }}"))


# ---- asynchronous copies never waited for, beside futures that move (LANGUAGE.md 7.8) --------

MOVING = """__co__ void f(f32 [64] a) {{
  parallel p by 1 {{
    cur = dma.copy.async a => shared;
    nxt = dma.any;
{body}
    foreach k in [4] {{
      nxt = dma.copy.async a => shared;
      wait cur;
      swap(cur, nxt);
    }}
  }}
}}
"""


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ("    lost = dma.copy.async a => local;", "lost"),
        ("    g = dma.copy.async a => shared;\n    x = g.data.at(0);", "g"),
    ],
)
def test_an_unwaited_async_copy_is_an_error_beside_futures_that_move(body: str, name: str) -> None:
    (d,) = errors(MOVING.format(body=body))
    assert d.message == f"the asynchronous copy into '{name}' is never waited for"
    assert where(d) == (5, 5)


@pytest.mark.parametrize(
    "body",
    [
        "    g = dma.copy.async a => shared;\n    wait g;",
        "    g = dma.copy.async a => shared;\n    h = dma.copy.async a => shared;\n    s = select(p, g, h);\n    wait s;",
    ],
)
def test_waited_or_moved_futures_pass(body: str) -> None:
    check(MOVING.format(body=body))


# ---- an asynchronous copy needs a named future (LANGUAGE.md 7.8) ------------------------------


@pytest.mark.parametrize(
    ("copy", "what"),
    [
        ("dma.copy.async a => s;", "dma.copy"),
        ("tma.copy.async a.chunkat(p, _) => s;", "tma.copy"),
        ("dma.copy.async a.chunkat(p, _) => local;", "dma.copy"),
    ],
)
def test_an_async_copy_without_a_future_is_an_error(copy: str, what: str) -> None:
    (d,) = errors(fn(f"  parallel p by 2 {{\n    shared f32 [16, 32] s;\n    {copy}\n  }}"))
    assert d.message == f"an asynchronous {what} with no future: nothing can wait for it"
    assert where(d) == (4, 5)


@pytest.mark.parametrize("copy", ["dma.copy a => s;", "f = dma.copy.async a => s;\n    wait f;"])
def test_sync_copies_and_named_futures_pass(copy: str) -> None:
    check(fn(f"  parallel p by 2 {{\n    shared f32 [16, 32] s;\n    {copy}\n  }}"))


# ---- buffer extents are integers (LANGUAGE.md 7.5) --------------------------------------------


@pytest.mark.parametrize(
    ("decl", "extent", "what", "col"),
    [
        ("shared f32 [4, 2.5] s;", "2.5", "a floating-point value", 20),
        ("local f32 [x * 2] s;", "x * 2", "a floating-point value", 16),
        ("shared f32 [ok] s;", "ok", "a boolean value", 17),
    ],
)
def test_a_buffer_extent_that_is_not_an_integer_is_an_error(decl: str, extent: str, what: str, col: int) -> None:
    (d,) = errors(fn(f"  parallel p by 2 {{\n    {decl}\n  }}", "int n, float x, bool ok"))
    assert d.message == f"a buffer's extent counts its elements, but '{extent}' is {what}"
    assert where(d) == (3, col)


@pytest.mark.parametrize("decl", ["shared f32 [4, n] s;", "local f32 [cdiv(n, 2), 3] s;"])
def test_integer_buffer_extents_pass(decl: str) -> None:
    check(fn(f"  parallel p by 2 {{\n    {decl}\n  }}", "int n, float x, bool ok"))
