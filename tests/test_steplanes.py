"""A thread's loop over independent steps run as more lanes under auto (lift/steplanes.py): the
classic CUDA transpose (32 x 8 threads, four rows a thread, a padded 32 x 33 shared tile) becomes a
transpose of a register tile; element-wise steps at ``t + k * 64`` stay steps (no access is then at a
lane's own position: nothing to gain) and run right; loops whose steps depend on each other (state carried, an element read that a step writes, writes that do not
move with the step, an atomic) stay loops.  Each kernel is checked in both schedules in the
interpreter against float64 torch on ragged sizes, outputs poisoned with NaN."""

from __future__ import annotations

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load_source, translate_full

PROGRAM = """
// four rows a thread of a 32 x 32 tile, through a padded shared tile
__co__ void transpose(global f32 [M, N] x, global f32 [N, M] y) {
  parallel {by_, bx} by [cdiv(M, 32), cdiv(N, 32)] : block {
    shared f32 [32, 33] tile;
    parallel {ty, tx} by [8, 32] : thread {
      foreach k in [4] {
        int r = by_ * 32 + ty + k * 8;
        if (r < M && bx * 32 + tx < N) tile.at(ty + k * 8, tx) = x.at(r, bx * 32 + tx);
      }
    }
    sync.shared;
    parallel {ty, tx} by [8, 32] : thread {
      foreach k in [4] {
        int c = bx * 32 + k * 8 + ty;
        if (c < N && by_ * 32 + tx < M) y.at(c, by_ * 32 + tx) = tile.at(tx, 8 * k + ty);
      }
    }
  }
}

// the same with the step's stride written #ty: a bounded index the merged lane is not, so that
// level stays a loop (the other merges)
__co__ void transpose_bounded(global f32 [M, N] x, global f32 [N, M] y) {
  parallel {by_, bx} by [cdiv(M, 32), cdiv(N, 32)] : block {
    shared f32 [32, 33] tile;
    parallel {ty, tx} by [8, 32] : thread {
      foreach k in [4] {
        int r = by_ * 32 + ty + k * #ty;
        if (r < M && bx * 32 + tx < N) tile.at(ty + k * 8, tx) = x.at(r, bx * 32 + tx);
      }
    }
    sync.shared;
    parallel {ty, tx} by [8, 32] : thread {
      foreach k in [4] {
        int c = bx * 32 + k * 8 + ty;
        if (c < N && by_ * 32 + tx < M) y.at(c, by_ * 32 + tx) = tile.at(tx, 8 * k + ty);
      }
    }
  }
}

// a thread does four elements 64 apart: y = 2 x + 1
__co__ void scale4(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 256) : block {
    parallel t by 64 : thread {
      foreach k in [4] {
        int i = p * 256 + t + k * 64;
        if (i < N) y.at(i) = 2.0f * x.at(i) + 1.0f;
      }
    }
  }
}

// state carried from one step to the next: a running sum over the thread's four elements
__co__ void carried(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 256) : block {
    parallel t by 64 : thread {
      mutable f32 acc = 0.0f;
      foreach k in [4] {
        int i = p * 256 + t + k * 64;
        if (i < N) { acc += x.at(i); y.at(i) = acc; }
      }
    }
  }
}

// each step reads the element the step before it wrote (a shift along the thread's elements)
__co__ void chained(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 256) : block {
    shared f32 [256] s;
    parallel t by 64 : thread {
      foreach k in [4] {
        s.at(t + k * 64) = x.at(p * 256 + t + k * 64);
      }
    }
    sync.shared;
    parallel t by 64 : thread {
      foreach k in [3] {
        s.at(t + k * 64 + 64) = s.at(t + k * 64) + s.at(t + k * 64 + 64);
      }
    }
    sync.shared;
    parallel t by 64 : thread {
      foreach k in [4] {
        if (p * 256 + t + k * 64 < N) y.at(p * 256 + t + k * 64) = s.at(t + k * 64);
      }
    }
  }
}
"""


def _chained(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0]
    xp = torch.zeros(-(-n // 256) * 256, dtype=torch.float64)
    xp[:n] = x.double().cpu()
    s = xp.view(-1, 4, 64).clone()
    for k in range(3):
        s[:, k + 1] = s[:, k] + s[:, k + 1]
    return s.reshape(-1)[:n]


def _carried(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0]
    xp = torch.zeros(-(-n // 256) * 256, dtype=torch.float64)
    xp[:n] = x.double().cpu()
    return xp.view(-1, 4, 64).cumsum(1).reshape(-1)[:n]


_MODULES: dict[str, object] = {}


def _module(schedule: str) -> object:
    if schedule not in _MODULES:
        _MODULES[schedule] = load_source(
            translate_full(PROGRAM, filename="steps.co", schedule=schedule).source, f"steps_{schedule}"
        )
    return _MODULES[schedule]


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_each_kernel_in_both_schedules(schedule: str) -> None:
    mod = _module(schedule)
    for m, n in ((37, 70), (64, 96)):
        x = randn(m, n, seed=m + n)
        for fn in ("transpose", "transpose_bounded"):
            y = poisoned(n, m)
            getattr(mod, fn)(x, y)
            assert_near_max(y, x.double().t(), 0.0, f"{fn} {m} x {n} ({schedule})")
    for n in (300, 512):
        x = randn(n, seed=n)
        for fn, ref in (("scale4", lambda v: 2 * v.double() + 1), ("carried", _carried), ("chained", _chained)):
            y = poisoned(n)
            getattr(mod, fn)(x, y)
            assert_near_max(y, ref(x), 1e-6, f"{fn} at {n} ({schedule})")


def _kernel(code: str, name: str) -> str:
    return code.split(f"def {name}(")[1].split("@triton.jit")[0]


def test_independent_steps_are_lanes_under_auto() -> None:
    code = translate_full(PROGRAM, filename="steps.co", schedule="auto").source
    body = _kernel(code, "transpose_k0")
    assert "for k" not in body and "tile_scratch" not in body and "tl.trans(x_val)" in body
    as_written = translate_full(PROGRAM, filename="steps.co", schedule="source").source
    assert "for k in range(0, 4)" in _kernel(as_written, "transpose_k0")


def test_dependent_steps_stay_loops() -> None:
    # (steps one after the other, not lanes.  Under auto a loop of a few constant steps whose loads shift
    # along the contiguous axis is unrolled, tl.static_range, which runs its steps in order as the loop
    # did: schedule/unroll.py; it was "for k in range(0, 4)" before)
    code = translate_full(PROGRAM, filename="steps.co", schedule="auto").source
    assert "for k in tl.static_range(0, 4)" in _kernel(code, "carried_k0")  # state carried between steps
    chained = _kernel(code, "chained_k0")
    assert "for k in tl.static_range(0, 3)" in chained  # a step reads what the step before it wrote
    assert "for k" not in chained.split("for k in tl.static_range(0, 3)")[0]  # the copy in before it: lanes


def test_a_level_using_its_bound_stays_a_loop() -> None:
    code = translate_full(PROGRAM, filename="steps.co", schedule="auto").source
    body = _kernel(code, "transpose_bounded_k0")
    assert "for k in range(0, 4)" in body  # the level that writes #ty
    assert body.count("for k") == 1  # the other level merged
