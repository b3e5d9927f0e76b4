"""Warp butterflies that merge a pair of values a lane (schedule/pairshuffles.py, issue 27): an online
softmax's (maximum, rescaled sum) with ``exp2`` and a scale, an argmin whose ties go to the last index,
an argmax with the comparisons written the other way round and the index first. Under auto each
butterfly is reductions over the lanes (no gathers, no step loop left); near misses stay as written: a
combine that is not associative (a sum halved at each step), a tree of shuffles down (lane 0 alone
holds the total), and a tie broken the wrong way round for a total order (the partner's index taken on a
tie whatever it is). All run in both schedules against float64 torch on ragged sizes, outputs poisoned
with NaN."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load, translate_full

F64 = torch.float64
S32 = torch.int32

PROGRAM = """
__device__ float XSH(float v, int m) { return __shfl_xor_sync(0xffffffff, v, m, 32); }
__device__ int XSH_I(int v, int m) { return __shfl_xor_sync(0xffffffff, v, m, 32); }
__device__ float DSH(float v, int m) { return __shfl_down_sync(0xffffffff, v, m, 32); }

// the logsumexp of each row in base 2 (c = log2(e)): a warp per row, (maximum, sum of exp2((v - m) * c))
// pairs
__co__ void lse2_warp(global f32 [M, N] x, global f32 [M] y) {
  parallel p by cdiv(M, 4) : block, w by 4 : group, t by 32 : thread {
    int r = p # w;
    if (r < M) {
      mutable f32 m = -inf;
      mutable f32 s = 0.0f;
      foreach k in [cdiv(N, 32)] {
        int j = k * 32 + t;
        if (j < N) {
          f32 v = x.at(r, j);
          f32 mn = __max(m, v);
          s = s * __exp2f((m - mn) * 1.4426950409f) + __exp2f((v - mn) * 1.4426950409f);
          m = mn;
        }
      }
      foreach q in [5] {
        f32 os = call XSH(s, 16 >> q);
        f32 om = call XSH(m, 16 >> q);
        f32 mn = __max(om, m);
        s = __exp2f((om - mn) * 1.4426950409f) * os + s * __exp2f((m - mn) * 1.4426950409f);
        m = mn;
      }
      if (t == 0) y.at(r) = m * 1.4426950409f + __log(s) * 1.4426950409f;
    }
  }
}

// the last index of the minimum of each row: (index, value) pairs, ties to the larger index
__co__ void argmin_last_warp(global f32 [M, N] x, global s32 [M] idx) {
  parallel p by cdiv(M, 2) : block, w by 2 : group, t by 32 : thread {
    int r = p # w;
    if (r < M) {
      mutable int bi = -1;
      mutable f32 best = inf;
      foreach k in [cdiv(N, 32)] {
        int j = k * 32 + t;
        if (j < N) {
          f32 v = x.at(r, j);
          if (v <= best) {
            best = v;
            bi = j;
          }
        }
      }
      foreach q in [5] {
        int oi = call XSH_I(bi, 1 << q);
        f32 ov = call XSH(best, 1 << q);
        if ((best == ov && bi < oi) || best > ov) {
          bi = oi;
          best = ov;
        }
      }
      if (t == 0) idx.at(r) = bi;
    }
  }
}

// near miss: a combine that is not associative (each step halves the sum): stays as written
__co__ void halved_warp(global f32 [M, N] x, global f32 [M] y) {
  parallel p by M : block, t by 32 : thread {
    mutable f32 m = -inf;
    mutable f32 s = 0.0f;
    foreach k in [cdiv(N, 32)] {
      int j = k * 32 + t;
      if (j < N) {
        m = __max(m, x.at(p, j));
        s += x.at(p, j);
      }
    }
    foreach q in [5] {
      f32 om = call XSH(m, 16 >> q);
      f32 os = call XSH(s, 16 >> q);
      s = (s + os) * 0.5f;
      m = __max(m, om);
    }
    if (t == 0) y.at(p) = s + m;
  }
}

// near miss: a tree of shuffles down, lane 0 the only one holding the pair's total: stays as written
__co__ void lse_down_warp(global f32 [M, N] x, global f32 [M] y) {
  parallel p by M : block, t by 32 : thread {
    mutable f32 m = -inf;
    mutable f32 s = 0.0f;
    foreach k in [cdiv(N, 32)] {
      int j = k * 32 + t;
      if (j < N) {
        f32 v = x.at(p, j);
        f32 mn = __max(m, v);
        s = s * __exp(m - mn) + __exp(v - mn);
        m = mn;
      }
    }
    foreach q in [5] {
      f32 om = call DSH(m, 16 >> q);
      f32 os = call DSH(s, 16 >> q);
      f32 mn = __max(m, om);
      s = s * __exp(m - mn) + os * __exp(om - mn);
      m = mn;
    }
    if (t == 0) y.at(p) = m + __log(s);
  }
}
"""


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.to(F64)


def _argmin_last(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[1]
    return (n - 1 - _d(x).flip(1).argmin(1)).to(S32)


def _halved(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    lanes = torch.full((m, 32), float("-inf"), dtype=F64), torch.zeros(m, 32, dtype=F64)
    mx, s = lanes
    for j in range(n):
        mx[:, j % 32] = torch.maximum(mx[:, j % 32], _d(x[:, j]).cpu())
        s[:, j % 32] += _d(x[:, j]).cpu()
    for q in range(5):
        src = torch.arange(32) ^ (16 >> q)
        s, mx = (s + s[:, src]) * 0.5, torch.maximum(mx, mx[:, src])
    return s[:, 0] + mx[:, 0]


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_pair_butterflies_in_both_schedules(schedule: str, tmp_path: Path) -> None:
    path = tmp_path / "pairs.co"
    path.write_text(PROGRAM)
    mod = load(path, schedule=schedule)
    for m, n in ((7, 300), (5, 45)):
        x = randn(m, n, seed=m * n + 3) * 4
        y = poisoned(m)
        mod.lse2_warp(x, y)
        ref = torch.logsumexp(_d(x), 1) * 1.4426950408889634
        assert_near_max(y, ref, 1e-5, f"lse2_warp at {m} x {n} ({schedule})")
        # (integers: ties in every row, the last index of the minimum wins)
        xi = torch.randint(-4, 4, (m, n), generator=torch.Generator().manual_seed(n)).to(x.device, torch.float32)
        idx = poisoned(m, dtype=S32)
        mod.argmin_last_warp(xi, idx)
        assert (idx.cpu() == _argmin_last(xi.cpu())).all(), (idx, _argmin_last(xi.cpu()), schedule)
        y = poisoned(m)
        mod.halved_warp(x, y)
        assert_near_max(y, _halved(x.cpu()).to(y.device), 1e-5, f"halved_warp at {m} x {n} ({schedule})")
        y = poisoned(m)
        mod.lse_down_warp(x, y)
        assert_near_max(y, torch.logsumexp(_d(x), 1), 1e-5, f"lse_down_warp at {m} x {n} ({schedule})")


def _kernel(source: str, name: str) -> str:
    return source.split(f"def {name}_k0(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


def test_pair_butterflies_fold_and_near_misses_stay() -> None:
    auto = translate_full(PROGRAM, filename="pairs.co", schedule="auto").source
    written = translate_full(PROGRAM, filename="pairs.co", schedule="source").source
    for fn, folds in (("lse2_warp", ("tl.max(", "tl.sum(")), ("argmin_last_warp", ("tl.min(", "tl.max("))):
        assert "tl.gather(" in _kernel(written, fn), fn
        body = _kernel(auto, fn)
        assert "tl.gather(" not in body and "for q in" not in body, body
        assert all(f in body for f in folds), body
    for fn in ("halved_warp", "lse_down_warp"):
        body = _kernel(auto, fn)
        assert "tl.gather(" in body and "for q in" in body, body
