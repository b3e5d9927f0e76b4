"""Values some lanes store into shared memory and other lanes read back, kept as a tile in registers
(schedule/lanetile.py, issue 27): a row maximum in two levels (each of 4 warps' maximum by shuffles, the
warps' maxima through shared memory, read by warp 0), row sums by a 1-D block of 128 threads whose lanes
``t % 32 == 0`` store at ``t / 32`` and thread 0 adds the four partials, warps' partials rounded to f16 where
they are stored (the rounding kept). Near miss that stays in memory:
the store under a mask that depends on the row (``r < M``: not known from the lanes alone). All run in both
schedules against float64 torch on ragged sizes, outputs poisoned with NaN."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load, translate_full

F64 = torch.float64

PROGRAM = """
__device__ float XMAX(float v, int m) { return __max(v, __shfl_xor_sync(0xffffffff, v, m, 32)); }
__device__ float XSH(float v, int m) { return __shfl_xor_sync(0xffffffff, v, m, 32); }

__co__ void row_max_two_level(global f32 [M, N] x, global f32 [M] y) {
  parallel r by M : block {
    shared f32 [4] wmax;
    parallel w by 4 : group, t by 32 : thread {
      mutable f32 m = -inf;
      foreach k in [cdiv(N, 128)] {
        int j = k * 128 + w * 32 + t;
        if (j < N) m = __max(m, x.at(r, j));
      }
      foreach q in [5] { f32 o = call XSH(m, 16 >> q); m = __max(m, o); }
      if (t == 0) wmax.at(w) = m;
      sync.shared;
      if (w == 0) {
        mutable f32 v = t < 4 ? wmax.at(t) : -inf;
        foreach q in [5] { f32 o = call XSH(v, 16 >> q); v = __max(v, o); }
        if (t == 0) y.at(r) = v;
      }
    }
  }
}

__co__ void row_sums_flat_lanes(global f32 [M, N] x, global f32 [M] y) {
  parallel r by M : block {
    shared f32 [4] part;
    parallel t by 128 : thread {
      mutable f32 s = 0.0f;
      foreach k in [cdiv(N, 128)] {
        int j = k * 128 + t;
        if (j < N) s += x.at(r, j);
      }
      foreach q in [5] { f32 o = call XSH(s, 16 >> q); s += o; }
      if (t % 32 == 0) part.at(t / 32) = s;
      sync.shared;
      if (t == 0) y.at(r) = part.at(0) + part.at(1) + part.at(2) + part.at(3);
    }
  }
}

__co__ void row_sums_f16_partials(global f32 [M, N] x, global f32 [M] y) {
  parallel r by M : block {
    shared f16 [4] part;
    parallel w by 4 : group, t by 32 : thread {
      mutable f32 s = 0.0f;
      foreach k in [cdiv(N, 128)] {
        int j = k * 128 + w * 32 + t;
        if (j < N) s += x.at(r, j);
      }
      foreach q in [5] { f32 o = call XSH(s, 16 >> q); s += o; }
      if (t == 0) part.at(w) = __to<f16>(s);
      sync.shared;
      if (w == 0 && t == 0) {
        y.at(r) = __to<f32>(part.at(0)) + __to<f32>(part.at(1)) + __to<f32>(part.at(2)) + __to<f32>(part.at(3));
      }
    }
  }
}

__co__ void row_sums_row_masked(global f32 [M, N] x, global f32 [M] y) {
  parallel p by cdiv(M, 2) : block {
    shared f32 [2, 4] part;
    parallel {g, w} by [2, 4] : group, t by 32 : thread {
      int r = p # g;
      mutable f32 s = 0.0f;
      if (r < M) {
        foreach k in [cdiv(N, 128)] {
          int j = k * 128 + w * 32 + t;
          if (j < N) s += x.at(r, j);
        }
      }
      foreach q in [5] { f32 o = call XSH(s, 16 >> q); s += o; }
      if (t == 0 && r < M) part.at(g, w) = s;
      sync.shared;
      if (w == 0 && t == 0 && r < M) y.at(r) = part.at(g, 0) + part.at(g, 1) + part.at(g, 2) + part.at(g, 3);
    }
  }
}
"""


def _f16_partials(x: torch.Tensor) -> torch.Tensor:
    """Each warp's partial (its columns j with (j % 128) // 32 == w) rounded to f16, the four added."""
    cols = torch.arange(x.shape[1], device=x.device)
    parts = [x.to(F64)[:, (cols % 128) // 32 == w].sum(1).to(torch.float16).to(F64) for w in range(4)]
    return parts[0] + parts[1] + parts[2] + parts[3]


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_lane_tiles_in_both_schedules(schedule: str, tmp_path: Path) -> None:
    path = tmp_path / "tiles.co"
    path.write_text(PROGRAM)
    mod = load(path, schedule=schedule)
    for m, n in ((7, 300), (5, 45)):
        x = randn(m, n, seed=m * n + 9)
        for fn, ref in (
            ("row_max_two_level", x.to(F64).amax(1)),
            ("row_sums_flat_lanes", x.to(F64).sum(1)),
            ("row_sums_row_masked", x.to(F64).sum(1)),
            ("row_sums_f16_partials", _f16_partials(x)),
        ):
            y = poisoned(m)
            getattr(mod, fn)(x, y)
            assert_near_max(y, ref, 1e-5, f"{fn} at {m} x {n} ({schedule})")


def _kernel(source: str, name: str) -> str:
    return source.split(f"def {name}_k0(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


def test_tiles_leave_no_scratch_and_the_near_miss_stays() -> None:
    auto = translate_full(PROGRAM, filename="tiles.co", schedule="auto").source
    written = translate_full(PROGRAM, filename="tiles.co", schedule="source").source
    for fn in ("row_max_two_level", "row_sums_flat_lanes", "row_sums_row_masked"):
        assert "_scratch" in _kernel(written, fn), fn
    for fn in ("row_max_two_level", "row_sums_flat_lanes"):
        body = _kernel(auto, fn)
        assert "_scratch" not in body and "debug_barrier" not in body, body
    assert "_scratch" in _kernel(auto, "row_sums_row_masked")
    body = _kernel(auto, "row_sums_f16_partials")
    assert "_scratch" not in body and ".to(tl.float16)" in body, body
