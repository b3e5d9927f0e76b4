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
