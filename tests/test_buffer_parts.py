"""Writes into parts of buffers held as register tiles (lift/parts.py ``part_store``): an
``mma.store`` into a part of a padded staging buffer, copies into halves of a buffer; and the work
of one unit picked by ``inthreads (g == u)`` (lift/units.py ``picked_unit``): each unit stores its
own tile of the units' accumulator.  Each program runs under both schedules in the interpreter
against float64 torch on ragged sizes, outputs poisoned with NaN."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load_source, translate_full

SCHEDULES = ["source", "auto"]
H = torch.float16

# the accumulator stored into the first 32 columns of a 48-column staging buffer (a padded row),
# and that part copied out; the same with a part 24 wide (no power of two) at column 0
PADDED_STAGING = """
__co__ void mm(global f16 [M, K] a, global f16 [N, K] b, global f16 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 32)] : block {
    shared f16 [64, 32 + 16] out_s;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach k in [cdiv(K, 16)] {
        sa = dma.copy.zfill a.subspan(64, 16).at(bm, k) => shared;
        sb = dma.copy.zfill b.subspan(32, 16).at(bn, k) => shared;
        mma.row.row acc, sa, sb;
      }
      mma.store acc, out_s.subspan(64, 32).at(0, 0);
      dma.copy out_s.subspan(64, 32).at(0, 0) => c.subspan(64, 32).at(bm, bn);
    }
  }
}

__co__ void mm24(global f16 [M, K] a, global f16 [N, K] b, global f16 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 24)] : block {
    shared f16 [64, 24 + 8] out_s;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach k in [cdiv(K, 16)] {
        sa = dma.copy.zfill a.subspan(64, 16).at(bm, k) => shared;
        sb = dma.copy.zfill b.subspan(24, 16).at(bn, k) => shared;
        mma.row.row acc, sa, sb;
      }
      mma.store acc, out_s.subspan(64, 24).at(0, 0);
      dma.copy out_s.subspan(64, 24).at(0, 0) => c.subspan(64, 24).at(bm, bn);
    }
  }
}
"""

# two tiles of x staged into the halves of one buffer (a copy between buffers into a part), then
# the whole buffer scaled and written: y[r, :] = 2 * x[r, :] in blocks of 32 columns
HALVES = """
__co__ void halves(global f32 [M, N] x, global f32 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 8), cdiv(N, 32)] : block {
    shared f32 [8, 32] both;
    lo = dma.copy.zfill x.subspan(8, 16).at(bm, bn * 2) => shared;
    hi = dma.copy.zfill x.subspan(8, 16).at(bm, bn * 2 + 1) => shared;
    dma.copy lo.data => both.subspan(8, 16).at(0, 0);
    dma.copy hi.data => both.subspan(8, 16).at(0, 1);
    parallel {r, j} by [8, 32] : thread {
      if (bm * 8 + r < M && bn * 32 + j < N) y.at(bm * 8 + r, bn * 32 + j) = 2.0f * both.at(r, j);
    }
  }
}
"""

# two warpgroups each with 32 rows of the block's accumulator; each stores its own tile through a
# buffer of its own under ``inthreads (g == u)`` and copies it to its rows
PER_UNIT_STORES = """
__co__ void mm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 32)] : block {
    shared f32 [32, 32] out0;
    shared f32 [32, 32] out1;
    parallel g by 2 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach k in [cdiv(K, 16)] {
        sa = dma.copy.zfill a.subspan(32, 16).at(bm * 2 + g, k) => shared;
        sb = dma.copy.zfill b.subspan(32, 16).at(bn, k) => shared;
        mma.row.row acc, sa, sb;
      }
      inthreads (g == 0) {
        mma.store acc, out0;
        dma.copy out0 => c.subspan(32, 32).at(bm * 2 + g, bn);
      }
      inthreads (g == 1) {
        mma.store acc, out1;
        dma.copy out1 => c.subspan(32, 32).at(bm * 2 + g, bn);
      }
    }
  }
}
"""


def _module(src: str, schedule: str) -> Any:
    out = translate_full(src, filename="parts.co", schedule=schedule)
    assert not out.failed, out.failed
    return load_source(out.source, f"parts_{schedule}_{abs(hash(src))}")


def _gemm(mod: Any, fn: str, m: int, n: int, k: int, out: torch.dtype) -> None:
    a, b = randn(m, k, dtype=H, seed=m), randn(n, k, dtype=H, seed=n + k)
    c = poisoned(m, n, dtype=out)
    getattr(mod, fn)(a, b, c)
    assert_near_max(c, a.double() @ b.double().T, 2e-3, fn)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_mma_store_into_a_part_of_a_padded_buffer(schedule: str) -> None:
    mod = _module(PADDED_STAGING, schedule)
    _gemm(mod, "mm", 77, 45, 100, H)
    _gemm(mod, "mm24", 77, 53, 40, H)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_copies_into_the_halves_of_a_buffer(schedule: str) -> None:
    mod = _module(HALVES, schedule)
    x = randn(21, 75, seed=6)
    y = poisoned(21, 75)
    mod.halves(x, y)
    assert_near_max(y, 2 * x.double(), 1e-6, "halves")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_each_unit_stores_its_own_tile_under_inthreads(schedule: str) -> None:
    _gemm(_module(PER_UNIT_STORES, schedule), "mm", 77, 45, 100, torch.float32)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_mma_of_one_unit_adds_to_that_units_rows_only(schedule: str) -> None:
    # unit 0 adds the product of the first 16 columns of K once more before its store
    src = PER_UNIT_STORES.replace(
        "      inthreads (g == 0) {\n        mma.store acc, out0;",
        "      inthreads (g == 0) {\n"
        "        mma.row.row acc, a.subspan(32, 16).at(bm * 2 + g, 0), b.subspan(32, 16).at(bn, 0);\n"
        "        mma.store acc, out0;",
    )
    m, n, k = 77, 45, 100
    a, b = randn(m, k, dtype=H, seed=8), randn(n, k, dtype=H, seed=9)
    c = poisoned(m, n)
    _module(src, schedule).mm(a, b, c)
    ref = a.double() @ b.double().T
    for r0 in range(0, m, 64):  # unit 0's rows of each block of 64
        r1 = min(r0 + 32, m)
        ref[r0:r1] += a[r0:r1, :16].double() @ b[:, :16].double().T
    assert_near_max(c, ref, 2e-3, "one unit's extra MMA")
