"""Warp-role pipelines whose shared buffers and events are declared in the units' own body
(LANGUAGE.md 7.3: shared buffers and events may be declared anywhere inside a ``parallel``; 7.5: a
``shared`` buffer is the block's, one every role sees; 7.10: the producer / consumer ring), and
written with the block and unit levels in one comma list (7.3: ``parallel b .., w ..`` is ``parallel
b .. { parallel w .. }``, so the declarations can only sit in the units' body).  Declared in a
nested ``parallel w by 2 : group`` the ring reached the tile IR as a ring nothing declared before
the pipeline loop (an internal error); written as a comma list, the roles' waits were refused as if
they sat in a branch.  Both now translate as the ring declared in the block's body does."""

from __future__ import annotations

import pytest
import torch
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

# declarations inside a nested unit level of warps; three slots, 'drained' starts ready
NESTED = """
__co__ void shift_rows(global f32 [R, 32] x, global f32 [R, 32] y) {
  parallel b by cdiv(R, 6) : block {
    parallel w by 2 : group {
      shared f32 [32] stage[3];
      shared event filled[3], drained[3] = ready;
      inthreads.async (w == 0) {
        foreach i in [6] {
          wait drained.at(i);
          dma.copy x.subspan(1, 32).at(b * 6 + i, 0).sqz() => stage[i % 3];
          trigger filled.at(i);
        }
      }
      inthreads.async (w == 1) {
        foreach i in [6] {
          wait filled.at(i);
          dma.copy stage[i % 3] => y.subspan(1, 32).at(b * 6 + i, 0).sqz();
          trigger drained.at(i);
        }
      }
    }
  }
}
"""

# one comma list; physical slots, the consumer releases both first; its threads compute
COMMA_PHYSICAL = """
__co__ void square_rows(global f32 [R, 32] x, global f32 [R, 32] y) {
  parallel b by cdiv(R, 4) : block, u by 2 : group {
    shared f32 [32] a[2];
    shared event got[2], free[2];
    inthreads.async (u == 0) {
      foreach j in [4] {
        wait free[j % 2];
        dma.copy x.subspan(1, 32).at(b * 4 + j, 0).sqz() => a[j % 2];
        trigger got[j % 2];
      }
    }
    inthreads.async (u == 1) {
      trigger free[0], free[1];
      foreach j in [4] {
        wait got[j % 2];
        parallel t by 32 : thread
          if (b * 4 + j < R) y.at(b * 4 + j, t) = a[j % 2].at(t) * a[j % 2].at(t);
        trigger free[j % 2];
      }
    }
  }
}
"""

# three levels in one list: warpgroups and their threads, one elected thread per role
COMMA_THREADS = """
__co__ void copy_rows(global f32 [R, 128] x, global f32 [R, 128] y) {
  parallel b by cdiv(R, 4) : block, w by 2 : group-4, t by 128 : thread {
    shared f32 [128] ring[2];
    shared event full[2], empty[2] = ready;
    inthreads.async (w == 0 && t == 0) {
      foreach k in [4] {
        wait empty.at(k);
        dma.copy x.subspan(1, 128).at(b * 4 + k, 0).sqz() => ring[k % 2];
        trigger full.at(k);
      }
    }
    inthreads.async (w == 1 && t == 0) {
      foreach k in [4] {
        wait full.at(k);
        dma.copy ring[k % 2] => y.subspan(1, 128).at(b * 4 + k, 0).sqz();
        trigger empty.at(k);
      }
    }
  }
}
"""

# (translated before too) a comma list whose roles have no loop: ordered by their events alone
COMMA_ONCE = """
__co__ void neg_rows(global f32 [M, 128] x, global f32 [M, 128] y) {
  parallel m by M : block, g by 2 : group-4 {
    shared event full, empty = ready;
    shared f32 [128] tile;
    inthreads.async (g == 0) {
      wait empty;
      dma.copy x.subspan(1, 128).at(m, 0).sqz() => tile;
      trigger full;
    }
    inthreads.async (g == 1) {
      wait full;
      parallel c by 128 : thread
        y.at(m, c) = 0.0f - tile.at(c);
      trigger empty;
    }
  }
}
"""

# (translated before too, as a contraction) the 7.10 GEMM ring in one comma list
COMMA_GEMM = """
__co__ void mm(global f16 [M, K] lhs, global f16 [N, K] rhs, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block, wg by 2 : group-4 {
    shared f16 [64, 32] ls[2];
    shared f16 [64, 32] rs[2];
    shared event full[2], empty[2] = ready;
    inthreads.async (wg == 0) {
      foreach k in [cdiv(K, 32)] {
        wait empty.at(k);
        dma.copy lhs.subspan(64, 32).at(bm, k) => ls[k % 2];
        dma.copy rhs.subspan(64, 32).at(bn, k) => rs[k % 2];
        trigger full.at(k);
      }
    }
    inthreads.async (wg == 1) {
      acc = mma.fill.f32 0.0f;
      foreach k in [cdiv(K, 32)] {
        wait full.at(k);
        ma = mma.load ls[k % 2];
        mb = mma.load rs[k % 2];
        mma.row.row acc, ma, mb;
        trigger empty.at(k);
      }
      mma.store acc, out.subspan(64, 64).at(bm, bn);
    }
  }
}
"""


def _load(src: str, name: str, schedule: str) -> object:
    out = translate_full(src, filename=f"{name}.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    return load_source(out.source, f"role_declarations_{name}_{schedule}")


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_ring_declared_in_a_nested_unit_level_is_the_blocks(schedule: str) -> None:
    mod = _load(NESTED, "nested", schedule)
    x, y = randn(21, 32, seed=1), poisoned(21, 32)
    mod.shift_rows(x, y)  # type: ignore[attr-defined]
    assert_close(y, x)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_comma_list_with_physical_slots_and_a_bootstrap_trigger(schedule: str) -> None:
    mod = _load(COMMA_PHYSICAL, "physical", schedule)
    x, y = randn(14, 32, seed=2), poisoned(14, 32)
    mod.square_rows(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double() * x.double(), rtol=1e-6)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_comma_list_of_three_levels_with_elected_threads(schedule: str) -> None:
    mod = _load(COMMA_THREADS, "threads", schedule)
    x, y = randn(10, 128, seed=3), poisoned(10, 128)
    mod.copy_rows(x, y)  # type: ignore[attr-defined]
    assert_close(y, x)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_comma_list_of_roles_without_a_loop_still_translates(schedule: str) -> None:
    mod = _load(COMMA_ONCE, "once", schedule)
    x, y = randn(7, 128, seed=4), poisoned(7, 128)
    mod.neg_rows(x, y)  # type: ignore[attr-defined]
    assert_close(y, -x)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_comma_list_gemm_ring_still_translates(schedule: str) -> None:
    mod = _load(COMMA_GEMM, "gemm", schedule)
    a, b = randn(130, 96, dtype=torch.float16, seed=5), randn(70, 96, dtype=torch.float16, seed=6)
    out = poisoned(130, 70)
    mod.mm(a, b, out)  # type: ignore[attr-defined]
    assert_close(out, a.double() @ b.double().T, atol=1e-3, rtol=1e-3)
