"""Probe 8 (issue 28): programs that are not valid Croqtile, each breaking a static rule of
LANGUAGE.md that upstream enforces (names bound twice by one statement, a parallel index assigned,
operand types of an MMA, arrays of events indexed past their end, a CUDA intrinsic in kernel code, indices that are not integers,
extents of no elements, copies and views of the wrong shape, TMA into local memory, ...), each
rejected by ``croq2triton check`` with a located ``file:line:col: error:`` at the construct, the rule
it breaks, and never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from probe_util import assert_rejected_at

# (name, program, where the error points, a phrase of its message)
INVALID = [
    (
        "parallel_names_twice",
        """__co__ void f(global f32 [N, N] x) {
  parallel {a, a} by [2, 2] : block {
    x.at(a, a) = 1.0f;
  }
}""",
        "2:12",
        "'a' names two indices of one 'parallel'",
    ),
    (
        "levels_names_twice",
        """__co__ void f(global f32 [N] x) {
  parallel p by 2 : block, p by 4 : thread {
    x.at(p) = 1.0f;
  }
}""",
        "2:28",
        "'p' names two indices of one 'parallel'",
    ),
    (
        "foreach_names_twice",
        """__co__ void f(global f32 [N, N] x) {
  parallel p by 1 : block {
    foreach {i, i} in [2, 2] x.at(i, 0) = 1.0f;
  }
}""",
        "3:13",
        "'i' names two indices of one 'foreach'",
    ),
    (
        "parallel_index_assigned",
        """__co__ void f(global f32 [N] x) {
  parallel p by 4 : block {
    p = 3;
    x.at(p) = 1.0f;
  }
}""",
        "3:5",
        "cannot re-assign 'p': 'p' is a parallel index",
    ),
    (
        "mma_mixed_operands",
        """__co__ void f(global f16 [M, K] a, global bf16 [N, K] b, global f32 [M, N] c) {
  parallel p by 1 : block {
    acc = mma.fill.f32 0.0f;
    sa = dma.copy a.subspan(16, 16).at(0, 0) => shared;
    sb = dma.copy b.subspan(16, 16).at(0, 0) => shared;
    mma.row.row acc, sa.data, sb.data;
    mma.store acc, c.subspan(16, 16).at(0, 0);
  }
}""",
        "6:5",
        "an MMA of f16 x bf16 operands: its operands must have the same type",
    ),
    (
        "event_array_past_end",
        """__co__ void f(global f32 [N] x) {
  parallel p by 1 : block {
    shared event e[2];
    trigger e[3];
    x.at(0) = 1.0f;
  }
}""",
        "4:15",
        "outside the array 'e' of 2 element(s)",
    ),
    (
        "float_index",
        """__co__ void f(global f32 [N] x) {
  parallel p by 4 : block {
    x.at(1.5f) = 1.0f;
  }
}""",
        "3:10",
        "an element index is an integer, but '1.5f' is a floating-point value",
    ),
    (
        "apply_too_many_indices",
        """__co__ void f(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel p by 1 : block {
    acc = mma.fill.f32 0.0f;
    sa = dma.copy a.subspan(16, 16).at(0, 0) => shared;
    sb = dma.copy b.subspan(16, 16).at(0, 0) => shared;
    mma.row.row acc, sa.data, sb.data;
    apply {i, j, k} in acc.span { acc.at(i, j) = 0.0f; }
    mma.store acc, c.subspan(16, 16).at(0, 0);
  }
}""",
        "7:5",
        "'apply {i, j, k}' names 3 indices for the 2 dimensions of 'acc'",
    ),
    (
        "local_extent_zero",
        """__co__ void f(global f32 [N] x) {
  parallel p by 1 : block {
    local f32 [0] l;
    x.at(0) = 1.0f;
  }
}""",
        "3:16",
        "the extent 0 of 'l' is invalid",
    ),
    (
        "subspan_negative_extent",
        """__co__ void f(global f32 [M, N] x, global f32 [M, N] y) {
  parallel p by 1 : block {
    t = dma.copy x.subspan(-4, 4).at(0, 0) => shared;
    dma.copy t.data => y.subspan(4, 4).at(0, 0);
  }
}""",
        "3:28",
        "the extent -4 along dimension 0 makes a region of no elements",
    ),
    (
        "transp_into_wrong_shape",
        """__co__ void f(global f32 [M, N] x, global f32 [M, N] y) {
  parallel p by 1 : block {
    shared f32 [4, 8] t;
    dma.transp<1, 0> x.subspan(4, 8).at(0, 0) => t;
    dma.copy t => y.subspan(4, 8).at(0, 0);
  }
}""",
        "4:5",
        "the source is larger along dimension 0 (8 > 4)",
    ),
    (
        "tma_into_local",
        """__co__ void f(global f32 [M, N] x, global f32 [M, N] y) {
  parallel p by 1 : block {
    parallel t by 1 : thread {
      l = tma.copy x.subspan(4, 4).at(0, 0) => local;
      y.at(0, 0) = l.data.at(0, 0);
    }
  }
}""",
        "4:7",
        "TMA copies between global and shared memory only",
    ),
    (
        "bars_of_parallel_index",
        """__co__ void f(global s32 [N] x) {
  parallel p by 4 : block {
    x.at(p) = |p|;
  }
}""",
        "3:16",
        "'|p|': 'p' is a parallel index, not a shape",
    ),
    (
        "trigger_a_buffer",
        """__co__ void f(global f32 [N] x) {
  parallel p by 1 : block {
    shared f32 [4] s;
    trigger s;
    x.at(0) = 1.0f;
  }
}""",
        "4:13",
        "'trigger' takes events; 's' is a tensor or buffer",
    ),
    (
        "activemask_in_kernel",
        """__co__ void f(global u32 [W, 32] m) {
  parallel w by W : block {
    parallel l by 32 : thread {
      m.at(w, l) = __activemask();
    }
  }
}""",
        "4:20",
        "'__activemask()' is a CUDA intrinsic, not a Croqtile builtin",
    ),
    (
        "parallel_of_zero",
        """__co__ void f(global f32 [N] x) {
  parallel p by 0 : block {
    x.at(0) = 1.0f;
  }
}""",
        "2:17",
        "a parallel bound is at least 1",
    ),
]


@pytest.mark.parametrize(("name", "src", "where", "phrase"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_program_is_rejected_at_its_construct(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, src: str, where: str, phrase: str
) -> None:
    err = assert_rejected_at(capsys, tmp_path, name, src, where, phrase)
    assert "\nhint: " in err or "^" in err, err  # the source line with a caret
