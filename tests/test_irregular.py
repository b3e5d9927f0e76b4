"""Irregular access (seed chapter): view/from with run-time origins, strided windows, span_as,
chunkat with '_' -- composed with dma.copy, tma.copy and MMA, on ragged sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, gemm_tol, poisoned, randn

from croq2triton.api import load, translate_full
from croq2triton.errors import CroqError

MOE = """
// grouped GEMM: expert e owns rows [offsets[e], offsets[e] + counts[e]) of lhs and out
__co__ void moe(global f16 [T, K] lhs, global f16 [E, N, K] rhs, global s32 [E] offsets,
                global s32 [E] counts, global f16 [T, N] out) {
  parallel {e, bm, bn} by [E, cdiv(T, 64), cdiv(N, 64)] : block {
    expert_offset = offsets.at(e);
    expert_M = counts.at(e);
    expert_lhs = lhs.view(expert_M, K).from(expert_offset, 0);
    expert_out = out.view(expert_M, N).from(expert_offset, 0);
    shared f16 [64, 64] a_s, b_s;
    acc = mma.fill.f32 0.0f;
    foreach {k} in [cdiv(K, 64)] {
      dma.copy expert_lhs.subspan(64, 64).at(bm, k) => a_s;
      tma.copy rhs.subspan(1, 64, 64).at(e, bn, k).sqz() => b_s;
      mma.row.row acc, a_s, b_s;
    }
    mma.store acc, expert_out.subspan(64, 64).at(bm, bn);
  }
}
"""

STRIDED = """
// window (i, j) of x starts at (i * SR, j * SC) and is 16 x 32: overlapping when the step is
// smaller than the window, gapped when it is larger; out gets the windows packed side by side
__co__ void windows(global f32 [R, C] x, global f32 [P, Q] out) {
  parallel {i, j} by [P / 16, Q / 32] : block {
    shared f32 [16, 32] s;
    dma.copy x.subspan(16, 32).step(SR, SC).at(i, j) => s;
    dma.copy s => out.subspan(16, 32).at(i, j);
  }
}
__co__ void windows_tma(global f32 [R, C] x, global f32 [P, Q] out) {
  parallel {i, j} by [P / 16, Q / 32] : block {
    shared f32 [16, 32] s;
    tma.copy x.subspan(16, 32).step(SR, SC).at(i, j) => s;
    tma.copy s => out.subspan(16, 32).at(i, j);
  }
}
"""

SPAN_AS = """
// a flat strip of 4096 elements is loaded once and viewed as a 64 x 64 matrix for the MMA
__co__ void strip_mm(global f16 [S, 4096] strips, global f16 [64, 64] b, global f32 [S, 64, 64] out) {
  parallel s by S : block {
    strip = dma.copy strips.chunkat(s, _) => shared;
    tile_2d = strip.data.span_as([64, 64]);
    shared f16 [64, 64] b_s;
    dma.copy b => b_s;
    acc = mma.fill.f32 0.0f;
    foreach {kw} in [4] {
      ma = mma.load tile_2d.chunkat(_, kw);
      mb = mma.load b_s.chunkat(_, kw);
      mma.row.row acc, ma, mb;
    }
    mma.store acc, out.subspan(1, 64, 64).at(s, 0, 0).sqz();
  }
}
"""


def _load(tmp: Path, name: str, src: str, **defines: object) -> object:
    p = tmp / name
    p.write_text(src)
    return load(p, defines=defines or None)


MOE_PREFIX = """
// grouped GEMM, the other common form: E + 1 offsets (a prefix sum), expert e's rows are
// [offsets[e], offsets[e + 1]); K tiles of 32 in a 4-stage shared ring read with tma.copy
__co__ void moe(global f16 [T, K] lhs, global f16 [E, N, K] rhs, global s32 [E1] offsets,
                global f16 [T, N] out) {
  parallel {e, bm, bn} by [E, cdiv(T, 128), cdiv(N, 64)] : block {
    start = offsets.at(e);
    rows = offsets.at(e + 1) - start;
    x = lhs.view(rows, K).from(start, 0);
    y = out.view(rows, N).from(start, 0);
    shared f16 [128, 32] a_s;
    shared f16 [64, 32] b_s;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {k} in [cdiv(K, 32)] {
        tma.copy x.subspan(128, 32).at(bm, k) => a_s;
        tma.copy rhs.subspan(1, 64, 32).at(e, bn, k).sqz() => b_s;
        mma.row.row acc, a_s, b_s;
      }
      mma.store acc, y.subspan(128, 64).at(bm, bn);
    }
  }
}
"""


def _moe_reference(lhs: torch.Tensor, rhs: torch.Tensor, offsets: list[int], counts: list[int]) -> torch.Tensor:
    ref = torch.full((lhs.shape[0], rhs.shape[1]), float("nan"), dtype=torch.float64)
    for ex, (o, c) in enumerate(zip(offsets, counts, strict=True)):
        ref[o : o + c] = lhs[o : o + c].double().cpu() @ rhs[ex].double().cpu().T
    return ref


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_moe_grouped_gemm_with_offsets_read_from_a_tensor(tmp_path: Path, schedule: str) -> None:
    p = tmp_path / "moe.co"
    p.write_text(MOE)
    src = translate_full(MOE, filename="moe.co", schedule=schedule).source
    # the grouped GEMM is tiled as a contraction in both schedules (one program per tile and expert;
    # tiles past an expert's rows do nothing)
    assert "for each group of rows" in " ".join(src.split())
    mod = load(p, schedule=schedule)
    counts = [37, 0, 70, 5]
    offsets = [0, 37, 37, 107]
    t, n, k, e = 112, 72, 100, 4
    lhs = randn(t, k, dtype=torch.float16, seed=1)
    rhs = randn(e, n, k, dtype=torch.float16, seed=2)
    out = poisoned(t, n, dtype=torch.float16)
    off = torch.tensor(offsets, dtype=torch.int32, device=DEVICE)
    cnt = torch.tensor(counts, dtype=torch.int32, device=DEVICE)
    mod.moe(lhs, rhs, off, cnt, out)
    assert_close(out, _moe_reference(lhs, rhs, offsets, counts), atol=gemm_tol(k), rtol=1e-2)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_moe_grouped_gemm_with_prefix_offsets(tmp_path: Path, schedule: str) -> None:
    p = tmp_path / "moe_prefix.co"
    p.write_text(MOE_PREFIX)
    src = translate_full(MOE_PREFIX, filename="moe_prefix.co", schedule=schedule).source
    assert "for each group of rows" in " ".join(src.split())
    mod = load(p, schedule=schedule)
    counts = [150, 0, 3, 97, 40]  # rows 290.. of the 300 belong to no expert: never written
    offsets = [0, 150, 150, 153, 250]
    t, n, k, e = 300, 72, 70, 5
    lhs = randn(t, k, dtype=torch.float16, seed=3)
    rhs = randn(e, n, k, dtype=torch.float16, seed=4)
    out = poisoned(t, n, dtype=torch.float16)
    off = torch.tensor([*offsets, offsets[-1] + counts[-1]], dtype=torch.int32, device=DEVICE)
    mod.moe(lhs, rhs, off, out)
    assert_close(out, _moe_reference(lhs, rhs, offsets, counts), atol=gemm_tol(k), rtol=1e-2)


@pytest.mark.parametrize(("sr", "sc"), [(8, 16), (24, 40), (16, 32)], ids=["overlap", "gap", "dense"])
@pytest.mark.parametrize("fn", ["windows", "windows_tma"])
def test_strided_windows(tmp_path: Path, fn: str, sr: int, sc: int) -> None:
    mod = _load(tmp_path, f"win_{sr}_{sc}.co", STRIDED, SR=sr, SC=sc)
    r, c = 100, 150
    x = randn(r, c, seed=3)
    p, q = 16 * 5, 32 * 4
    out = poisoned(p, q, dtype=torch.float32)
    getattr(mod, fn)(x, out)
    ref = torch.zeros(p, q, dtype=torch.float64)
    xc = x.double().cpu()
    for i in range(p // 16):
        for j in range(q // 32):
            win = xc[i * sr : i * sr + 16, j * sc : j * sc + 32]  # zero outside x
            ref[i * 16 : i * 16 + win.shape[0], j * 32 : j * 32 + win.shape[1]] = win
    assert_close(out, ref)


def test_span_as_strip_feeds_the_mma(tmp_path: Path) -> None:
    mod = _load(tmp_path, "strip.co", SPAN_AS)
    s = 3
    strips = randn(s, 4096, dtype=torch.float16, seed=4)
    b = randn(64, 64, dtype=torch.float16, seed=5)
    out = poisoned(s, 64, 64, dtype=torch.float32)
    mod.strip_mm(strips, b, out)
    ref = strips.double().cpu().reshape(s, 64, 64) @ b.double().cpu().T
    assert_close(out, ref, atol=1e-2, rtol=1e-3)
    src = mod.__croq_source__
    assert "tl.reshape(" in src and "scratch" not in src


def test_span_as_size_mismatch_is_a_translation_error() -> None:
    bad = SPAN_AS.replace("span_as([64, 64])", "span_as([64, 60])")
    with pytest.raises(CroqError) as ei:
        out = translate_full(bad, filename="strip.co")
        if out.failed:
            raise out.failed["strip_mm"]
    d = ei.value.diagnostics[0]
    assert "span_as: 3840 elements cannot view 4096 elements" in d.message
    assert d.span is not None and d.span.line == 6


def test_chunkat_with_wildcards_on_ragged_sizes(tmp_path: Path) -> None:
    src = """
__co__ void rows(global f32 [M, N] x, global f32 [M, N] y) {
  parallel r by M : block {
    f = dma.copy x.chunkat(r, _) => shared;
    dma.copy f.data => y.chunkat(r, _);
  }
}
"""
    mod = _load(tmp_path, "rows.co", src)
    x = randn(13, 77, seed=6)
    y = poisoned(13, 77, dtype=torch.float32)
    mod.rows(x, y)
    assert_close(y, x)


SQZ_BMM = """
__co__ void bmm(global f16 [B, M, 64] a, global f16 [B, 64, 64] b, global f32 [B, M, 64] c) {
  parallel {bm, bb} by [cdiv(M, 64), B] : block {
    a_s = dma.copy.zfill a.subspan(1, 64, 64).at(bb, bm, 0) => shared;
    b_s = dma.copy b.subspan(1, 64, 64).at(bb, 0, 0) => shared;
    parallel p by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      mma.row.row acc, a_s.data.sqz(), b_s.data.sqz();
      mma.store acc, c.subspan(1, 64, 64).at(bb, bm, 0).sqz();
    }
  }
}
"""


def test_sqz_of_a_copied_3d_tile_stays_in_registers(tmp_path: Path) -> None:
    # a batched GEMM through 3-D copies and .sqz(): tiled as a contraction (one program per tile and batch)
    mod = _load(tmp_path, "bmm.co", SQZ_BMM)
    assert "scratch" not in mod.__croq_source__
    assert "bmm" not in mod.__croq_translation__.failed
    a, b = randn(3, 100, 64, dtype=torch.float16, seed=41), randn(3, 64, 64, dtype=torch.float16, seed=42)
    c = poisoned(3, 100, 64, dtype=torch.float32)
    mod.bmm(a, b, c)
    assert_close(c, a.double().cpu() @ b.double().cpu().transpose(1, 2), atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("out.view(expert_M, N).from(expert_offset, 0)", "out.view(expert_M, N).from(expert_offset + 1, 0)"),
         "the output rows start one row after the operand's"),
        (("out.view(expert_M, N)", "out.view(expert_M + 1, N)"), "the output view is one row longer"),
        (("lhs.view(expert_M, K).from(expert_offset, 0)", "lhs.view(expert_M, K).from(0, 0)"),
         "the operand rows do not move with the expert"),
    ],
)  # fmt: skip
def test_a_grouped_gemm_whose_views_disagree_is_lowered_as_written(change: tuple[str, str], why: str) -> None:
    assert MOE.count(change[0]) == 1
    src = translate_full(MOE.replace(*change), filename="moe.co", schedule="auto").source
    assert "for each group of rows" not in " ".join(src.split()), why
