"""Fold loops one after the other, each split across programs (schedule/splitphases.py): a thread per
column computing its mean and then the squared deviations from it runs one launch a loop under
``--schedule auto`` where its programs are too few for the SMs, each loop split across programs and
combined by its last program, which carries what the next loop reads (the mean) through a scratch
area.  Two and three phases, f16 data with f32 statistics, a carried value assigned after its loop
(``mu = mu / M``); near misses (loops over different ranges, a store between the loops) run as
written.  Each in both schedules against float64 torch on ragged sizes, outputs poisoned."""

from __future__ import annotations

from functools import cache

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.runtime.launch import Recorder

SRC = """
// a batch norm's statistics, the textbook two passes over each column
__co__ void col_mean_var(global f32 [M, N] x, global f32 [N] mean, global f32 [N] var) {
  parallel b by cdiv(N, 128) : block, t by 128 : thread {
    int c = b # t;
    if (c < N) {
      mutable f32 s = 0.0f;
      foreach i in [M] { s += x.at(i, c); }
      f32 mu = s / M;
      mutable f32 q = 0.0f;
      foreach i in [M] { f32 d = x.at(i, c) - mu; q += d * d; }
      mean.at(c) = mu;
      var.at(c) = q / M;
    }
  }
}

// three passes over f16 columns: the mean, the standard deviation, the mean absolute z-score
__co__ void col_zscore_f16(global f16 [M, N] x, global f32 [N] z) {
  parallel b by cdiv(N, 256) : block, t by 256 : thread {
    int c = b # t;
    if (c < N) {
      mutable f32 mu = 0.0f;
      foreach i in [M] { mu += x.at(i, c); }
      mu = mu / M;
      mutable f32 q = 0.0f;
      foreach i in [M] { f32 d = x.at(i, c) - mu; q += d * d; }
      f32 rs = __rsqrt(q / M + 0.00001f);
      mutable f32 a = 0.0f;
      foreach i in [M] { a += __fabs((x.at(i, c) - mu) * rs); }
      z.at(c) = a / M;
    }
  }
}

// near miss: the second loop over the first half of the rows (another range)
__co__ void col_mean_half_var(global f32 [M, N] x, global f32 [N] var) {
  parallel b by cdiv(N, 128) : block, t by 128 : thread {
    int c = b # t;
    if (c < N) {
      mutable f32 s = 0.0f;
      foreach i in [M] { s += x.at(i, c); }
      f32 mu = s / M;
      mutable f32 q = 0.0f;
      foreach i in [M / 2] { f32 d = x.at(i, c) - mu; q += d * d; }
      var.at(c) = q;
    }
  }
}

// near miss: the mean stored between the loops
__co__ void col_mean_stored_var(global f32 [M, N] x, global f32 [N] mean, global f32 [N] var) {
  parallel b by cdiv(N, 128) : block, t by 128 : thread {
    int c = b # t;
    if (c < N) {
      mutable f32 s = 0.0f;
      foreach i in [M] { s += x.at(i, c); }
      f32 mu = s / M;
      mean.at(c) = mu;
      mutable f32 q = 0.0f;
      foreach i in [M] { f32 d = x.at(i, c) - mu; q += d * d; }
      var.at(c) = q / M;
    }
  }
}
"""


@cache
def _module(schedule: str) -> object:
    out = translate_full(SRC, filename="phases.co", schedule=schedule)
    assert not out.failed, out.failed
    return load_source(out.source, f"phases_{schedule}")


def _ran(mod: object, fn: str, *args: torch.Tensor) -> list[str]:
    rec = Recorder()
    getattr(mod, fn)(*args, _launch=rec)
    return [la.kernel.__name__ for la in rec.launches]


# auto at both sizes (its launch picks a form by the programs and the rows); the source schedule has
# one kernel a function whatever the size, a loop over the rows an element a step: one size, fewer rows
# (3 programs, the last partial)
@pytest.mark.parametrize(
    ("schedule", "m", "n"), [("source", 70, 300), ("auto", 700, 300), ("auto", 1100, 77)], ids=lambda v: str(v)
)
def test_each_kernel_computes_what_torch_does(schedule: str, m: int, n: int) -> None:
    mod = _module(schedule)
    x = randn(m, n, seed=m + n) * 3.0 + 1.5
    xd = x.double()
    mean, var = poisoned(n), poisoned(n)
    mod.col_mean_var(x, mean, var)  # type: ignore[attr-defined]
    assert_near_max(mean, xd.mean(0), 1e-5, "col_mean_var mean")
    assert_near_max(var, xd.var(0, unbiased=False), 1e-5, "col_mean_var var")
    xh = x.half()
    xhd = xh.double()
    z = poisoned(n)
    mod.col_zscore_f16(xh, z)  # type: ignore[attr-defined]
    zs = ((xhd - xhd.mean(0)) * torch.rsqrt(xhd.var(0, unbiased=False) + 1e-5)).abs().mean(0)
    assert_near_max(z, zs, 1e-4, "col_zscore_f16")
    half = poisoned(n)
    mod.col_mean_half_var(x, half)  # type: ignore[attr-defined]
    assert_near_max(half, ((xd[: m // 2] - xd.mean(0)) ** 2).sum(0), 1e-5, "col_mean_half_var")
    mean, var = poisoned(n), poisoned(n)
    mod.col_mean_stored_var(x, mean, var)  # type: ignore[attr-defined]
    assert_near_max(mean, xd.mean(0), 1e-5, "col_mean_stored_var mean")
    assert_near_max(var, xd.var(0, unbiased=False), 1e-5, "col_mean_stored_var var")


def test_auto_runs_one_launch_a_loop_where_programs_are_few(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter counts 4 SMs: 3000 rows of 200 columns are 2 programs, at most half the SMs:
    one launch a loop; 300 columns, 3 programs: as written (policy.split_count).  The squared
    deviations from the mean fold in the mean's pass (schedule/moments.py): the mean and variance are
    one split launch, the z-score's three loops two phases, wherever the split pays."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "4")  # (the interpreter's count, on a GPU too)
    mod = _module("auto")
    m, n = 3000, 200
    x = randn(m, n, seed=1)
    got = _ran(mod, "col_mean_var", x, poisoned(n), poisoned(n))
    assert got == ["col_mean_var_k0_split"], got
    got = _ran(mod, "col_zscore_f16", x.half(), poisoned(n))
    assert got == [f"col_zscore_f16_k0_phase{k}_split" for k in range(2)], got
    got = _ran(mod, "col_zscore_f16", randn(m, 2100, seed=3).half(), poisoned(2100))  # (3 programs of 1024)
    assert all("phase" not in k for k in got), got
    for fn in ("col_mean_half_var", "col_mean_stored_var"):  # near misses: as written
        args = (x, poisoned(n)) if fn == "col_mean_half_var" else (x, poisoned(n), poisoned(n))
        got = _ran(mod, fn, *args)
        assert all("phase" not in k for k in got), (fn, got)
    got = _ran(mod, "col_mean_var", randn(m, 300, seed=2), poisoned(300), poisoned(300))
    assert got == ["col_mean_var_k0_split"], got
    from croq2triton.runtime import launch as rt

    assert all(not c.any() for c in rt._COUNTERS.values())  # (no counter left set by a Recorder run)
