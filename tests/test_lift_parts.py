"""MMAs the tile IR lifts beyond tl.dot's own forms (lift/mma.py, lift/parts.py): operands below
tl.dot's smallest shape and u8 operands (a broadcast product summed over K), operands that are
chunks of a staged buffer picked out by a loop over K, a copy of a part of a buffer, and an f16
accumulator loaded from the output; numerics against float64 references on ragged sizes with
NaN-poisoned outputs, as written (the contraction proof off) and as the translator takes them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

import croq2triton
from croq2triton.api import translate_full

# 8 x 8 x 4 MMAs of four warps each (m8n8k4): below tl.dot's 16 x 16 x 16
SMALL = """
__co__ void small(global f16 [M, K] lhs, global f16 [K, N] rhs, global f32 [M, N] out) {
  parallel {m, n} by [cdiv(M, 32), cdiv(N, 8)] : block {
    mc = mma.fill.f32 0.0f;
    parallel {g0, g1} by [4, 1] : group {
      foreach k in [cdiv(K, 4)] {
        ma = mma.load lhs.subspan(8, 4).at(m # g0, k);
        mb = mma.load rhs.subspan(4, 8).at(k, n # g1);
        mma.row.col mc, ma, mb;
      }
      mma.store mc, out.subspan(8, 8).at(m # g0, n # g1);
    }
  }
}
"""

# u8 x u8 -> s32: tl.dot takes no u8 operands
U8 = """
__co__ void u8mm(global u8 [M, K] lhs, global u8 [K, N] rhs, global s32 [M, N] out) {
  parallel {m, n} by [cdiv(M, 16), cdiv(N, 16)] : block {
    mc = mma.fill.s32 0;
    foreach k in [cdiv(K, 16)] {
      ma = mma.load lhs.subspan(16, 16).at(m, k);
      mb = mma.load rhs.subspan(16, 16).at(k, n);
      mma.row.col mc, ma, mb;
    }
    mma.store mc, out.subspan(16, 16).at(m, n);
  }
}
"""

# a 32 x 64 K tile staged in shared, its 16-wide chunks the operands of a loop over K inside the
# warps (each warp's rows a chunk along M too), the accumulator loaded from the output first
CHUNKS = """
__co__ void chunks(global f16 [M, K] lhs, global f16 [K, N] rhs, global f16 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 16)] : block {
    foreach kt in [cdiv(K, 64)] {
      ls = dma.copy lhs.subspan(32, 64).at(bm, kt) => shared;
      rs = dma.copy rhs.subspan(64, 16).at(kt, bn) => shared;
      parallel w by 2 : group {
        mc = mma.load out.subspan(16, 16).at(bm # w, bn);
        foreach kk in [4] {
          ma = mma.load ls.data.chunkat(w, kk);
          mb = mma.load rs.data.chunkat(kk, _);
          mma.row.col mc, ma, mb;
        }
        mma.store mc, out.subspan(16, 16).at(bm # w, bn);
      }
    }
  }
}
"""

# only the odd 16-wide chunks of each staged 64-wide K tile: the operands are parts of the buffers
# (not the whole tile a loop over all its chunks would fold into), picked out at run time
ODD = (
    CHUNKS.replace("chunks(", "odd(")
    .replace("foreach kk in [4]", "foreach kk in [2]")
    .replace("ls.data.chunkat(w, kk)", "ls.data.subspan(16, 16).at(w, kk * 2 + 1)")
    .replace("rs.data.chunkat(kk, _)", "rs.data.subspan(16, 16).at(kk * 2 + 1, 0)")
)

# the right half of a staged tile copied into a buffer of its own
PART = """
__co__ void part(global f32 [R, 32] x, global f32 [R, 16] y) {
  parallel r by cdiv(R, 16) : block {
    shared f32 [16, 32] s;
    dma.copy x.subspan(16, 32).at(r, 0) => s;
    h = dma.copy s.subspan(16, 16).at(0, 1) => shared;
    dma.copy h.data => y.subspan(16, 16).at(r, 0);
  }
}
"""


def _load(tmp_path: Path, name: str, src: str, schedule: str, written: bool, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN202
    if written:
        monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    out = translate_full(src, filename=f"{name}.co", schedule=schedule)
    assert not out.failed, {f: str(e) for f, e in out.failed.items()}
    (tmp_path / f"{name}.co").write_text(src)
    return croq2triton.load(tmp_path / f"{name}.co", schedule=schedule)


CASES = [("source", True), ("source", False), ("auto", False)]


@pytest.mark.parametrize(("schedule", "written"), CASES)
def test_mmas_below_tl_dots_smallest_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schedule: str, written: bool
) -> None:
    mod = _load(tmp_path, "small", SMALL, schedule, written, monkeypatch)
    if written:
        assert "tl.sum(" in mod.__croq_source__ and "tl.dot(" not in mod.__croq_source__
    m, n, k = 70, 44, 38  # ragged: no tile divides them
    a, b = randn(m, k, dtype=torch.float16, seed=1), randn(k, n, dtype=torch.float16, seed=2)
    c = poisoned(m, n)
    mod.small(a, b, c)
    assert_close(c, a.double().cpu() @ b.double().cpu(), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize(("schedule", "written"), CASES)
def test_u8_mmas_sum_in_s32(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schedule: str, written: bool) -> None:
    mod = _load(tmp_path, "u8mm", U8, schedule, written, monkeypatch)
    m, n, k = 37, 29, 41
    g = torch.Generator().manual_seed(3)
    a = torch.randint(0, 256, (m, k), dtype=torch.uint8, generator=g).to(DEVICE)
    b = torch.randint(0, 256, (k, n), dtype=torch.uint8, generator=g).to(DEVICE)
    c = torch.full((m, n), -(2**31), dtype=torch.int32, device=DEVICE)
    mod.u8mm(a, b, c)
    assert torch.equal(c.cpu(), (a.cpu().long() @ b.cpu().long()).int())


@pytest.mark.parametrize(("schedule", "written"), CASES)
def test_chunks_of_a_staged_tile_feed_the_mma(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schedule: str, written: bool
) -> None:
    mod = _load(tmp_path, "chunks", CHUNKS, schedule, written, monkeypatch)
    m, n, k = 64, 48, 128  # the chunks of K are exact; rows and columns in whole tiles
    a, b = randn(m, k, dtype=torch.float16, seed=4), randn(k, n, dtype=torch.float16, seed=5)
    c0 = randn(m, n, dtype=torch.float16, seed=6)
    c = c0.clone()
    mod.chunks(a, b, c)
    ref = c0.double().cpu() + a.double().cpu() @ b.double().cpu()
    assert_close(c, ref, atol=0.25, rtol=1e-2)  # f16 accumulator, as the source states


@pytest.mark.parametrize(("schedule", "written"), CASES)
def test_chunks_picked_out_of_a_staged_tile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schedule: str, written: bool
) -> None:
    mod = _load(tmp_path, "odd", ODD, schedule, written, monkeypatch)
    if written:
        assert "tl.reshape(" in mod.__croq_source__  # the chunk selected out of the tile
    m, n, k = 64, 48, 128
    a, b = randn(m, k, dtype=torch.float16, seed=8), randn(k, n, dtype=torch.float16, seed=9)
    c0 = randn(m, n, dtype=torch.float16, seed=10)
    c = c0.clone()
    mod.odd(a, b, c)
    cols = torch.cat([torch.arange(64 * t + 16 * j, 64 * t + 16 * j + 16) for t in range(k // 64) for j in (1, 3)])
    ref = c0.double().cpu() + a.double().cpu()[:, cols] @ b.double().cpu()[cols, :]
    assert_close(c, ref, atol=0.25, rtol=1e-2)


def test_a_part_of_a_buffer_copied_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _load(tmp_path, "part", PART, "source", False, monkeypatch)
    x = randn(40, 32, seed=7)
    y = poisoned(40, 16)
    mod.part(x, y)
    assert_close(y, x[:, 16:].double().cpu())
