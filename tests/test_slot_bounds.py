"""An element of an array of buffers or events outside the array, where that is provable when
compiling (croq2triton/sema/slotbounds.py; LANGUAGE.md 7.5): the index is ``a * v + b`` of a bounded
index whose values run over its range, narrowed by the conditions it runs under. The tutorial's
GEMM v4 swept with ``CONSUMERS = 1`` while ``parallel wg by 3`` still starts two consumers: the
second wrote ``output_s[1]`` of an array of one (a crash at run time in the tutorial's sweep, a
refusal with the wrong reason here before). Valid neighbours, and indexes the check cannot read,
pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_util import check_errors, line_col

REPO = Path(__file__).resolve().parent.parent


errors, where = check_errors, line_col


def roles(slots: int, cond: str = "wg >= 1", index: str = "cidx") -> str:
    return f"""__co__ void f(global f32 [M, 64] x, global f32 [M, 64] y) {{
  parallel p by cdiv(M, 128) : block {{
    parallel wg by 3 : group-4, t by 128 : thread {{
      inthreads.async ({cond}) {{
        cidx = wg - 1;
        shared f32 [64, 64] part_s[{slots}];
        dma.copy x.subspan(64, 64).at(p * 2 + cidx, 0) => part_s[{index}];
        dma.copy part_s[{index}] => y.subspan(64, 64).at(p * 2 + cidx, 0);
      }}
    }}
  }}
}}
"""


def test_one_slot_for_two_consumers_is_an_error_at_the_index() -> None:
    errs = errors(roles(1))
    assert errs and "'cidx' reaches 1 (for wg = 2): outside the array 'part_s' of 1 element(s)" in errs[0].message
    assert where(errs[0]) == (7, 66)
    assert "declared with [1]" in (errs[0].hint or "")


@pytest.mark.parametrize(
    "slots, cond, index",
    [
        (2, "wg >= 1", "cidx"),  # one slot a consumer
        (3, "wg >= 1", "cidx"),  # a slot left unused
        (1, "wg == 2", "cidx - 1"),  # one consumer, its slot 0
        (1, "wg >= 1 && wg < 2", "cidx"),  # the condition narrows wg to 1
        (1, "wg * wg == 1", "cidx"),  # a condition the check cannot read: nothing is claimed
    ],
)
def test_valid_neighbours_pass(slots: int, cond: str, index: str) -> None:
    assert errors(roles(slots, cond, index)) == []


def test_a_constant_index_and_an_event_ring_one_short() -> None:
    src = """__co__ void f(global f32 [M, 64] x, global f32 [M, 64] y) {
  parallel p by cdiv(M, 64) : block {
    shared event full[2];
    shared f32 [64, 64] ring[2];
    parallel t by 64 : thread {
      foreach {s} in [3] {
        trigger full[s];
      }
      dma.copy x.subspan(64, 64).at(p, 0) => ring[2];
    }
  }
}
"""
    errs = errors(src)
    msgs = [e.message for e in errs]
    assert any("'s' reaches 2 (for s = 2): outside the array 'full' of 2 element(s)" in m for m in msgs), msgs
    assert any("'2' is 2: outside the array 'ring' of 2 element(s)" in m for m in msgs), msgs


def test_a_loop_that_may_stop_early_claims_nothing() -> None:
    src = """__co__ void f(global f32 [M, 64] x) {
  parallel p by cdiv(M, 64) : block {
    shared event full[2];
    parallel t by 64 : thread {
      foreach {s} in [3] {
        if (s == 2) break;
        trigger full[s];
      }
    }
  }
}
"""
    assert errors(src) == []


def test_the_tutorial_v4_with_one_consumer_is_rejected_and_with_two_translates() -> None:
    text = (REPO / "examples" / "gemm_v4.co").read_text()
    assert errors(text) == []
    errs = errors(text.replace("#define CONSUMERS 2", "#define CONSUMERS 1"))
    assert errs and all("outside the array 'output_s' of 1 element(s)" in e.message for e in errs)
    assert [where(e)[0] for e in errs] == [49, 50]  # the mma.store and the copy out
