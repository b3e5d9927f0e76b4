"""``--schedule auto``: the translator may pick stages, warps and program order; results must not change."""

from __future__ import annotations

import pytest
import torch
from conftest import EXAMPLES
from lowering_util import assert_close, gemm_tol, poisoned, randn

from croq2triton.api import load, translate_full
from croq2triton.errors import CroqError

GEMMS = ["gemm_v2.co", "gemm_v3.co", "gemm_v4.co", "tma_pipeline.co"]


@pytest.mark.parametrize("example", GEMMS)
def test_auto_schedule_gives_the_same_results(example: str) -> None:
    src = load(EXAMPLES / example)
    auto = load(EXAMPLES / example, schedule="auto")
    m, n, k = (256, 384, 200) if example != "gemm_v2.co" else (128, 256, 128)
    a, b = randn(m, k, dtype=torch.float16, seed=1), randn(n, k, dtype=torch.float16, seed=2)
    o1, o2 = poisoned(m, n, dtype=torch.float16), poisoned(m, n, dtype=torch.float16)
    src.matmul(a, b, o1)
    auto.matmul(a, b, o2)
    assert_close(o2, o1, atol=1e-3, rtol=1e-3)
    assert_close(o2, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)


def test_auto_schedule_deepens_pipelines_and_groups_programs() -> None:
    text = (EXAMPLES / "gemm_v3.co").read_text()
    src = translate_full(text, filename="gemm_v3.co").source
    auto = translate_full(text, filename="gemm_v3.co", schedule="auto").source
    assert "NUM_STAGES=1" in src and "NUM_STAGES=4" in auto
    assert "GROUP_M" not in src and "_gsize = tl.minimum(" in auto
    assert "croq2triton translate --schedule auto gemm_v3.co" in auto


def test_unknown_schedule_is_an_error() -> None:
    with pytest.raises(CroqError, match="unknown schedule"):
        translate_full("", filename="x.co", schedule="fast")


@pytest.mark.parametrize(("example", "k"), [("gemm_v0.co", 40), ("gemm_v1.co", 200)])
@pytest.mark.parametrize(("m", "n"), [(100, 72), (64, 32), (33, 65)])
def test_32_row_blocks_are_coarsened(example: str, k: int, m: int, n: int) -> None:
    for schedule, blocks in (("source", "2 x 1"), ("auto", "4 x 4")):
        # source: two row blocks (a 64-row dot, wgmma); auto: a 128 x 128 dot
        mod = load(EXAMPLES / example, schedule=schedule)
        assert f"Program = {blocks} neighbouring blocks" in mod.__croq_source__
        a, b = randn(m, k, dtype=torch.float16, seed=3), randn(n, k, dtype=torch.float16, seed=4)
        out = poisoned(m, n, dtype=torch.float16)
        mod.matmul(a, b, out)
        assert_close(out, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)


def test_coarsening_only_where_the_row_index_is_only_composed() -> None:
    text = (EXAMPLES / "gemm_v0.co").read_text()
    # block_m also used on its own: the rows of a program's second block would change meaning
    changed = text.replace(
        "output.at(block_m#thr_m, block_n#thr_n) = acc;", "output.at(block_m#thr_m, block_n#thr_n) = acc + block_m;"
    )
    assert changed != text
    auto = translate_full(changed, filename="v0.co").source
    assert "Program = one block" in auto and "neighbouring blocks" not in auto
    # a row index composed into a tensor whose rows are not the extent that was tiled
    other = text.replace("global f16 [M, N] output", "global f16 [P, N] output")
    assert other != text
    auto = translate_full(other, filename="v0.co").source
    assert "neighbouring blocks" not in auto
    # no dot product to lift: nothing to gain, the stated blocks stay
    add = """
__co__ void add(global f32 [M, N] x, global f32 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block, {tm, tn} by [32, 32] : thread
    y.at(bm#tm, bn#tn) = x.at(bm#tm, bn#tn) + 1.0f;
}
"""
    assert "neighbouring blocks" not in translate_full(add, filename="add.co").source
