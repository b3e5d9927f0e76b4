"""``dma.pad`` into a fresh buffer whose extents are known only at launch (LANGUAGE.md 7.8: each
dimension enlarged by its borders, the border filled with the pad value; 7.6: extents may be run-time
values for DMA): a tile of ``T`` rows (a scalar parameter) or ``N`` columns (a tensor's size), padded,
then copied out whole. Rows of the window past the tensor read zero (LANGUAGE.md 14.3), the borders
the pad value. This was refused ('a dma.pad into a fresh buffer of run-time shape')."""

from __future__ import annotations

import pytest
import torch
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void padrt(global f32 [M, N] x, global f32 [R, C] z, int T) {
  parallel p by cdiv(M, T) : block {
    t = dma.pad<{1, 0}, {2, 3}, {0, 0}, 7.5f> x.subspan(T, N).at(p, 0) => shared;
    dma.copy t.data => z.subspan(T + 3, N + 3).at(p, 0);
  }
}
__co__ void padn(global f32 [M, N] x, global f32 [R, C] z) {
  parallel p by cdiv(M, 4) : block {
    t = dma.pad<{1, 0}, {2, 3}, {0, 0}, -2.0f> x.subspan(4, N).at(p, 0) => local;
    dma.copy t.data => z.subspan(7, N + 3).at(p, 0);
  }
}
"""


def _padded(x: torch.Tensor, rows: int, value: float) -> torch.Tensor:
    """Each block of ``rows`` rows of ``x`` (zero past its end) with 1 row above, 2 below and 3
    columns after filled with ``value``, the blocks stacked."""
    m, n = x.shape
    blocks = -(-m // rows)
    out = torch.full((blocks * (rows + 3), n + 3), value, dtype=torch.float64)
    for p in range(blocks):
        tile = torch.zeros(rows, n, dtype=torch.float64)
        part = x[p * rows : (p + 1) * rows].double().cpu()
        tile[: part.shape[0]] = part
        out[p * (rows + 3) + 1 : p * (rows + 3) + 1 + rows, :n] = tile
    return out


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_pad_of_run_time_shape(schedule: str) -> None:
    out = translate_full(SOURCE, filename="padrt.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"pad_runtime_{schedule}")
    for m, n, rows in ((19, 13, 5), (7, 30, 3)):  # ragged: the last block reaches past the rows
        x = randn(m, n, seed=m)
        z = poisoned(-(-m // rows) * (rows + 3), n + 3)
        mod.padrt(x, z, rows)
        assert_close(z, _padded(x, rows, 7.5).float())
        z = poisoned(-(-m // 4) * 7, n + 3)
        mod.padn(x, z)
        assert_close(z, _padded(x, 4, -2.0).float())
