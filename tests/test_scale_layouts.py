"""Scales of block-scaled MMAs stored either way round (LANGUAGE.md 7.9): the first scale is one
value per row of the accumulator, the second one per column (or one value), whatever the layout
of the tensor they are read from: a row scale stored ``[KB, M]`` is read as ``sa.subspan(1, 64)``
(a ``[1, 64]`` view), a column scale stored ``[N, KB]`` as ``sc.subspan(64, 1)``.  With square
64 x 64 tiles the view's shape alone could not say which; its position does.  Both forms of the
scaled MMA, both schedules, in the interpreter against float64 torch on ragged sizes."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, poisoned, randn

from croq2triton.api import load_source, translate_full

SCALED = """
__co__ void inline_form(global f8_e4m3 [M, K] a, global f32 [KB, M] sa, global f8_e4m3 [N, K] b,
                        global f32 [N, KB] sc, global f32 [M, N] out) {
  parallel {pm, pn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared f8_e4m3 [64, 64] as, bs;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {kb} in [cdiv(K, 64)] {
        dma.copy.zfill a.subspan(64, 64).at(pm, kb) => as;
        dma.copy.zfill b.subspan(64, 64).at(pn, kb) => bs;
        mma.row.row.scale acc, as, bs, sa.subspan(1, 64).at(kb, pm), sc.subspan(64, 1).at(pn, kb);
      }
      mma.store acc, out.subspan(64, 64).at(pm, pn);
    }
  }
}

__co__ void split_form(global f8_e4m3 [M, K] a, global f32 [KB, M] sa, global f8_e4m3 [N, K] b,
                       global f32 [N, KB] sc, global f32 [M, N] out) {
  parallel {pm, pn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared f8_e4m3 [64, 64] as, bs;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {kb} in [cdiv(K, 64)] {
        dma.copy.zfill a.subspan(64, 64).at(pm, kb) => as;
        dma.copy.zfill b.subspan(64, 64).at(pn, kb) => bs;
        mma.row.row acc, as, bs;
        mma.scale acc, sa.subspan(1, 64).at(kb, pm), sc.subspan(64, 1).at(pn, kb);
      }
      mma.store acc, out.subspan(64, 64).at(pm, pn);
    }
  }
}
"""


M, N, K = 77, 90, 150
KB = -(-K // 64)
# float64 of the fp8 products in the interpreter; on Hopper an fp8 wgmma accumulates with fewer
# mantissa bits than f32 (about 14: measured 1.4e-4 - 1.7e-4 of max|ref| on the H100), so 2^-11 there
TOL = 1e-5 if DEVICE == "cpu" else 2.0**-11


def _case(src: str, schedule: str, seed: int, rows_first: bool) -> tuple[Any, list[torch.Tensor], torch.Tensor]:
    """The module of ``src``, its inputs (a, row scales, b, column scales: the row scales stored
    ``[KB, M]`` where ``rows_first``, else ``[M, KB]``; the column scales ``[N, KB]``) and the
    float64 reference of the block-scaled product."""
    out = translate_full(src, filename="scales.co", schedule=schedule)
    assert not out.failed, out.failed
    mod: Any = load_source(out.source, f"scales_{schedule}_{seed}")
    a = randn(M, K, seed=seed).to(torch.float8_e4m3fn)
    b = randn(N, K, seed=seed + 1).to(torch.float8_e4m3fn)
    rows = (torch.rand(M, KB, generator=torch.Generator().manual_seed(seed + 2)) + 0.5).to(DEVICE)
    sc = (torch.rand(N, KB, generator=torch.Generator().manual_seed(seed + 3)) + 0.5).to(DEVICE)
    ref = torch.zeros(M, N, dtype=torch.float64, device=DEVICE)
    for j in range(KB):
        ks = slice(j * 64, min((j + 1) * 64, K))
        ref += (a[:, ks].double() @ b[:, ks].double().T) * rows[:, j].double()[:, None] * sc[:, j].double()[None, :]
    sa = rows.T.contiguous() if rows_first else rows
    return mod, [a, sa, b, sc], ref


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_row_and_column_scales_stored_either_way(schedule: str) -> None:
    mod, inputs, ref = _case(SCALED, schedule, 1, rows_first=True)
    for fn in ("inline_form", "split_form"):
        c = poisoned(M, N)
        getattr(mod, fn)(*inputs, c)
        assert_near_max(c, ref, TOL, f"{fn} under {schedule}")


# two warpgroups with 32 rows each of the block's accumulator, each scaling its rows by its own
# part of the row scales (the units' scale views side by side, as their MMAs place their tiles)
UNIT_SCALES = """
__co__ void units(global f8_e4m3 [M, K] a, global f32 [M, KB] sa, global f8_e4m3 [N, K] b,
                  global f32 [N, KB] sc, global f32 [M, N] out) {
  parallel {pm, pn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared f8_e4m3 [64, 64] as, bs;
    parallel g by 2 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {kb} in [cdiv(K, 64)] {
        dma.copy.zfill a.subspan(64, 64).at(pm, kb) => as;
        dma.copy.zfill b.subspan(64, 64).at(pn, kb) => bs;
        mma.row.row acc, as.subspan(32, 64).at(g, 0), bs;
        mma.scale acc, sa.subspan(32, 1).at(pm * 2 + g, kb), sc.subspan(64, 1).at(pn, kb);
      }
      mma.store acc, out.subspan(32, 64).at(pm * 2 + g, pn);
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_each_unit_scales_its_own_rows(schedule: str) -> None:
    mod, inputs, ref = _case(UNIT_SCALES, schedule, 5, rows_first=False)
    c = poisoned(M, N)
    mod.units(*inputs, c)
    assert_near_max(c, ref, TOL, f"units under {schedule}")


# scales staged in shared memory before the scaled MMA reads them: copied whole into a buffer, and
# (warp roles, a ring of two stages) a producer's asynchronous copies into a slot of a ring that
# the consumer's mma.scale reads (the column scales a column of the buffer: one a column)
STAGED_SCALES = """
__co__ void staged(global f8_e4m3 [M, K] a, global f32 [M, KB] sa, global f8_e4m3 [N, K] b,
                   global f32 [N, KB] sc, global f32 [M, N] out) {
  parallel {pm, pn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared f8_e4m3 [64, 64] as, bs;
    shared f32 [64, 1] sas;
    shared f32 [64, 1] scs;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {kb} in [cdiv(K, 64)] {
        dma.copy.zfill a.subspan(64, 64).at(pm, kb) => as;
        dma.copy.zfill b.subspan(64, 64).at(pn, kb) => bs;
        dma.copy.zfill sa.subspan(64, 1).at(pm, kb) => sas;
        dma.copy.zfill sc.subspan(64, 1).at(pn, kb) => scs;
        mma.row.row acc, as, bs;
        mma.scale acc, sas, scs;
      }
      mma.store acc, out.subspan(64, 64).at(pm, pn);
    }
  }
}

__co__ void ring(global f8_e4m3 [M, K] a, global f32 [M, KB] sa, global f8_e4m3 [N, K] b,
                 global f32 [N, KB] sc, global f32 [M, N] out) {
  parallel {pm, pn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared event full[2], empty[2];
    shared f8_e4m3 [2 * 64, 64] as;
    shared f8_e4m3 [2 * 64, 64] bs;
    shared f32 [2 * 64, 1] sas;
    shared f32 [2 * 64, 1] scs;
    parallel p by 2 : group-4 {
      inthreads.async (p == 0) {
        foreach {kb} in [cdiv(K, 64)] {
          stage = kb % 2;
          wait empty[stage];
          tma.copy.async<full[stage]> a.subspan(64, 64).at(pm, kb) => as.subspan(64, 64).at(stage, 0);
          tma.copy.async<full[stage]> b.subspan(64, 64).at(pn, kb) => bs.subspan(64, 64).at(stage, 0);
          fa = dma.copy.async sa.subspan(64, 1).at(pm, kb) => sas.subspan(64, 1).at(stage, 0);
          fc = dma.copy.async sc.subspan(64, 1).at(pn, kb) => scs.subspan(64, 1).at(stage, 0);
          wait fa, fc;
          trigger full[stage];
        }
      }
      inthreads.async (p == 1) {
        acc = mma.fill.f32 0.0f;
        foreach {s} in [2] { trigger empty[s]; }
        foreach {kb} in [cdiv(K, 64)] {
          stage = kb % 2;
          wait full[stage];
          mma.row.row acc, as.subspan(64, 64).at(stage, 0), bs.subspan(64, 64).at(stage, 0);
          mma.scale acc, sas.subspan(64, 1).at(stage, 0), scs.subspan(64, 1).at(stage, 0);
          trigger empty[stage];
        }
        mma.store acc, out.subspan(64, 64).at(pm, pn);
      }
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_scales_staged_in_shared_memory(schedule: str) -> None:
    mod, inputs, ref = _case(STAGED_SCALES, schedule, 9, rows_first=False)
    for fn in ("staged", "ring"):
        c = poisoned(M, N)
        getattr(mod, fn)(*inputs, c)
        assert_near_max(c, ref, TOL, f"{fn} under {schedule}")
