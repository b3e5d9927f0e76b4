"""``mma.store`` of a fragment reduced to one dimension (LANGUAGE.md 7.9: ``reduce_sum`` /
``reduce_max`` into a lower-rank fragment; ``mma.store`` writes a fragment into a view, converting to
its element type; ``.mask`` stores only the first rows): a GEMM tile's row sums and row maxima stored
into 1-D windows of f32 and f16 tensors. This was refused ('an mma.store into a view that is not
two-dimensional')."""

from __future__ import annotations

import pytest
import torch
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void rows(global f16 [M, K] a, global f16 [N, K] b, global f32 [M] total, global f16 [M] top) {
  parallel p by cdiv(M, 64) : block {
    acc = mma.fill.f32 0.0f;
    foreach k in [cdiv(K, 16)] {
      la = dma.copy a.subspan(64, 16).at(p, k) => shared;
      lb = dma.copy b.subspan(32, 16).at(0, k) => shared;
      mma.row.row acc, la, lb;
    }
    frag f32 [64] s {0.0f};
    frag f32 [64] m {0.0f};
    reduce_sum(s, acc, 1);
    reduce_max(m, acc, 1);
    mma.store s, total.subspan(64).at(p);
    mma.store m, top.subspan(64).at(p);
  }
}
__co__ void firstrows(global f16 [M, K] a, global f16 [N, K] b, global f32 [M] total, int R) {
  parallel p by cdiv(M, 64) : block {
    acc = mma.fill.f32 0.0f;
    foreach k in [cdiv(K, 16)] {
      la = dma.copy a.subspan(64, 16).at(p, k) => shared;
      lb = dma.copy b.subspan(32, 16).at(0, k) => shared;
      mma.row.row acc, la, lb;
    }
    frag f32 [64] s {0.0f};
    reduce_sum(s, acc, 1);
    mma.store.mask s, total.subspan(64).at(p), R;
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_store_of_a_reduced_fragment(schedule: str) -> None:
    out = translate_full(SOURCE, filename="reduced.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"reduced_store_{schedule}")
    for m, n, k in ((70, 29, 37), (13, 32, 16)):  # ragged rows, columns short of the tile, K tails
        a = randn(m, k, dtype=torch.float16, seed=m)
        b = randn(n, k, dtype=torch.float16, seed=k)
        prod = torch.zeros(m, 32, dtype=torch.float64)  # the tile's columns past N hold zero products
        prod[:, :n] = a.double().cpu() @ b.double().cpu().T
        total, top = poisoned(m), poisoned(m, dtype=torch.float16)
        mod.rows(a, b, total, top)
        assert_close(total, prod.sum(1), atol=1e-4, rtol=1e-5)
        assert_close(top, prod.max(1).values.half(), atol=1e-3, rtol=1e-3)
        total = poisoned(m)
        mod.firstrows(a, b, total, 5)
        want = torch.full((m,), float("nan"), dtype=torch.float64)  # rows past the first 5 of a block: unwritten
        for p in range(0, m, 64):
            want[p : min(p + 5, m)] = prod.sum(1)[p : min(p + 5, m)]
        assert_close(total, want, atol=1e-4, rtol=1e-5)
