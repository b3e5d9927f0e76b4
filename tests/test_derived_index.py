"""Tile indices derived from a linear one by ``%`` and ``/`` (``bn = idx % nn; bm = idx / nn``, an
N-major or M-major tile order over a one-dimensional grid) used where a bounded index is asked for:
``chunkat(bm, ..)`` tiles by ``cdiv(#idx, nn)`` chunks and ``chunkat(bn, ..)`` by ``nn`` (the
values stay the plain quotient and remainder; LANGUAGE.md 7.2, 7.6: a chunk is the extent divided
by the count, with floor).  A GEMM over the linear grid in both tile orders and a tiled copy on
ragged sizes, in both schedules, in the interpreter against float64 torch, outputs poisoned with
NaN (the copy's reference keeps NaN where floor division leaves elements no chunk covers)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from kernel_util import assert_near_max, gemm_tol, poisoned, randn

from croq2triton.api import load_source, translate_full

GEMM = """
__co__ void NAME(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  nm = cdiv(M, 64);
  nn = cdiv(N, 32);
  parallel idx by nm * nn : block {
    ORDER
    shared f16 [64, 32] as;
    shared f16 [32, 32] bs;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {kb} in [cdiv(K, 32)] {
        dma.copy.zfill a.chunkat(bm, _).subspan(64, 32).at(0, kb) => as;
        dma.copy.zfill b.chunkat(bn, _).subspan(32, 32).at(0, kb) => bs;
        mma.row.row acc, as, bs;
      }
      mma.store acc, out.chunkat(bm, bn);
    }
  }
}
"""

# the same GEMM in N-major and M-major tile order
DERIVED = (
    GEMM.replace("NAME", "gemm_nmajor").replace("ORDER", "bn = idx % nn; bm = idx / nn;")
    + GEMM.replace("NAME", "gemm_mmajor").replace("ORDER", "bm = idx % nm; bn = idx / nm;")
    + """
__co__ void copy_tiles(global f32 [M, N] x, global f32 [M, N] y) {
  nm = cdiv(M, 8);
  nn = cdiv(N, 16);
  parallel idx by nm * nn : block {
    bn = idx % nn;
    bm = idx / nn;
    xv = x.chunkat(bm, bn);
    yv = y.chunkat(bm, bn);
    parallel {r, c} by [8, 16] : thread {
      if (r < #bm && c < #bn) {
        yv.at(r, c) = xv.at(r, c) * 2.0f;
      }
    }
  }
}
"""
)


def _module(schedule: str) -> Any:
    out = translate_full(DERIVED, filename="derived.co", schedule=schedule)
    assert not out.failed, out.failed
    return load_source(out.source, f"derived_{schedule}")


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("fn", ["gemm_nmajor", "gemm_mmajor"])
def test_gemm_over_a_linear_grid(schedule: str, fn: str) -> None:
    m, n, k = 192, 96, 150  # chunks of exactly the tiles (64 x 32); K ragged
    a, b = randn(m, k, seed=1).half(), randn(n, k, seed=2).half()
    c = poisoned(m, n)
    getattr(_module(schedule), fn)(a, b, c)
    assert_near_max(c, a.double() @ b.double().T, gemm_tol(k), f"{fn} under {schedule}")


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_copy_chunks_of_derived_indices(schedule: str) -> None:
    m, n = 37, 70
    x = randn(m, n, seed=3)
    y = poisoned(m, n)
    _module(schedule).copy_tiles(x, y)
    nm, nn = -(-m // 8), -(-n // 16)
    cm, cn = m // nm, n // nn  # floor: the chunk extents
    ref = torch.full((m, n), float("nan"), dtype=torch.float64, device=x.device)
    # each chunk's first 8 x 16 elements (the threads), where the chunk has them and r < #bm, c < #bn
    for bm in range(nm):
        for bn in range(nn):
            for r in range(min(8, cm, nm)):
                rows = bm * cm + r
                cols = [bn * cn + c for c in range(min(16, cn, nn))]
                ref[rows, cols] = x[rows, cols].double() * 2
    assert torch.equal(torch.isnan(y), torch.isnan(ref)), "elements written outside the chunks, or missed"
    keep = ~torch.isnan(ref)
    assert torch.allclose(y.double()[keep], ref[keep])
