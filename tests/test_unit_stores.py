"""Units (warpgroups) that each store their part of a block's output through a buffer: each
unit's mma.store fills its part of a shared buffer (``out_s.subspan(32, 64).at(g, 0)``) and each
unit copies that part into its window of the output (LANGUAGE.md 7.3: a parallel of units runs
its body once per unit).  The units' parts side by side are the whole buffer, their windows side
by side the block's window: one copy of the whole (lift/copies.py ``units_store``).  As warp roles
(one producer, two consumers whose index is ``p - 1``) and as plain units, with a tensor window
nested in the block's own, in both schedules, in the interpreter against float64 torch on ragged
sizes with NaN-poisoned outputs.  And copies that one unit of a grid of units makes for all
(``inthreads (gm == 0 && gn == 0)``): a copy moves the same elements whichever unit issues it, so
it runs once (lift/units.py ``unit_pick``)."""

from __future__ import annotations

from typing import Any

import pytest
from kernel_util import assert_near_max, gemm_tol, kernel_code, poisoned, randn

from croq2triton.api import load_source, translate_full

UNIT_STORES = """
__co__ void units(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {pm, pn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared f16 [64, 32] as, bs;
    shared f32 [64, 64] out_s;
    parallel g by 2 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {kb} in [cdiv(K, 32)] {
        dma.copy.zfill a.subspan(64, 32).at(pm, kb) => as;
        dma.copy.zfill b.subspan(64, 32).at(pn, kb) => bs;
        mma.row.row acc, as.subspan(32, 32).at(g, 0), bs;
      }
      mma.store acc, out_s.subspan(32, 64).at(g, 0);
      dma.copy out_s.subspan(32, 64).at(g, 0) => out.subspan(32, 64).at(pm * 2 + g, pn);
    }
  }
}

__co__ void roles(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {pm, pn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared event full[2], empty[2];
    shared f16 [2 * 64, 32] as;
    shared f16 [2 * 64, 32] bs;
    shared f32 [64, 64] out_s;
    parallel p by 3 : group-4, t by 128 : thread {
      inthreads.async (p == 0 && t == 0) {
        foreach {kb} in [cdiv(K, 32)] {
          stage = kb % 2;
          wait empty[stage];
          tma.copy.async<full[stage]> a.subspan(64, 32).at(pm, kb) => as.subspan(64, 32).at(stage, 0);
          tma.copy.async<full[stage]> b.subspan(64, 32).at(pn, kb) => bs.subspan(64, 32).at(stage, 0);
          trigger full[stage];
        }
      }
      inthreads.async (p > 0) {
        acc = mma.fill.f32 0.0f;
        foreach {s} in [2] { trigger empty[s]; }
        foreach {kb} in [cdiv(K, 32)] {
          stage = kb % 2;
          wait full[stage];
          mma.row.row acc, as.subspan(64, 32).at(stage, 0).subspan(32, 32).at(p - 1, 0),
                      bs.subspan(64, 32).at(stage, 0);
          trigger empty[stage];
        }
        mma.store acc, out_s.subspan(32, 64).at(p - 1, 0);
        tma.copy out_s.subspan(32, 64).at(p - 1, 0)
          => out.subspan(64, 64).at(pm, pn).subspan(32, 64).at(p - 1, 0);
      }
    }
  }
}

__co__ void elected(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {pm, pn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    parallel {gm, gn} by [2, 2] : group {
      acc = mma.fill.f32 0.0f;
      foreach {kb} in [cdiv(K, 16)] {
        shared f16 [32, 16] as, bs;
        inthreads (gm == 0 && gn == 0) {
          dma.copy.zfill a.subspan(32, 16).at(pm, kb) => as;
          dma.copy.zfill b.subspan(32, 16).at(pn, kb) => bs;
        }
        sync.shared;
        ma = mma.load as.chunkat(gm, _);
        mb = mma.load bs.chunkat(gn, _);
        mma.row.row acc, ma, mb;
      }
      mma.store acc, out.subspan(16, 16).at(pm # gm, pn # gn);
    }
  }
}
"""

M, N, K = 77, 90, 150


def _module(schedule: str) -> Any:
    out = translate_full(UNIT_STORES, filename="unit_stores.co", schedule=schedule)
    assert not out.failed, out.failed
    for fn in ("units", "roles", "elected"):  # the units' tiles concatenated: one dot, not a copy per unit
        assert kernel_code(out.source, f"{fn}_k0").count("tl.dot(") == 1, fn
        # and each a proved contraction (lift/moves.py: a unit's part of the staged output copied out)
        assert out.contractions[fn], fn
    return load_source(out.source, f"unit_stores_{schedule}")


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("fn", ["units", "roles", "elected"])
def test_units_store_their_parts(schedule: str, fn: str) -> None:
    mod = _module(schedule)
    a = randn(M, K, seed=3).half()
    b = randn(N, K, seed=4).half()
    ref = a.double() @ b.double().T
    c = poisoned(M, N)
    getattr(mod, fn)(a, b, c)
    assert_near_max(c, ref, gemm_tol(K), f"{fn} under {schedule}")
