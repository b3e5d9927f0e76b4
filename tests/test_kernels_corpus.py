"""Kernels of the shared corpus translated unchanged and run under the interpreter."""

from __future__ import annotations

import contextlib

import pytest
import torch
from conftest import CORPUS, needs_corpus
from kernel_util import assert_close, gemm_tol, load_co, poisoned, randn

pytestmark = needs_corpus
E2E = CORPUS / "upstream/tests/gpu/end2end"


def test_add_co_every_kernel() -> None:
    m = load_co(E2E / "add.co")
    a, b = randn(2, 3, 64, dtype=torch.int32, seed=1), randn(2, 3, 64, dtype=torch.int32, seed=2)
    assert_close(m.ele_add_span_as(a, b), (a + b).reshape(6, 64))
    a, b = randn(6, 17, 64, dtype=torch.int32, seed=3), randn(6, 17, 64, dtype=torch.int32, seed=4)
    assert_close(m.ele_add_local_dma(a, b), a + b)
    assert not m.__croq_translation__.failed


def test_add_shared_co() -> None:
    m = load_co(E2E / "add-shared.co")
    a, b = randn(6, 17, 64, dtype=torch.int32, seed=5), randn(6, 17, 64, dtype=torch.int32, seed=6)
    assert_close(m.ele_add(a, b), a + b)


def test_copy_co_every_kernel() -> None:
    m = load_co(E2E / "copy.co")
    x = randn(6, 17, 64, dtype=torch.int32, seed=7)
    assert_close(m.dma_copy_sync(x), x)
    assert_close(m.dma_copy_async(x), x)
    x = randn(5, 17, 32, dtype=torch.int32, seed=8)  # M is symbolic: not the host test's 6
    assert_close(m.dma_copy_group(x), x)
    x0, x1 = randn(6, 17, 32, dtype=torch.int32, seed=9), randn(6, 17, 32, dtype=torch.int32, seed=10)
    assert_close(m.dma_add(x0, x1), x0 + x1)
    assert_close(m.dma_add1(x0, x1), x0 + x1)
    assert not m.__croq_translation__.failed


@pytest.mark.parametrize(("fn", "dtype", "tol"), [
    ("ele_add_f32", torch.float32, 0.0),
    ("ele_add_f16", torch.float16, 1e-3),
    # the interpreter rounds f32 -> bf16 by truncation: one bf16 ulp
    ("ele_add_bf16", torch.bfloat16, 1.6e-2),
])  # fmt: skip
def test_float_types_adds(fn: str, dtype: torch.dtype, tol: float) -> None:
    m = load_co(E2E / "float_types.co")
    a, b = randn(6, 64, dtype=dtype, seed=11), randn(6, 64, dtype=dtype, seed=12)
    ref = (a.float() + b.float()).to(dtype)  # one rounding to the element type
    assert_close(getattr(m, fn)(a, b), ref, atol=tol, rtol=tol)


@pytest.mark.parametrize(("fn", "dtype"), [("copy_f8_e4m3", torch.float8_e4m3fn), ("copy_f8_e5m2", torch.float8_e5m2)])
def test_float_types_fp8_copies(fn: str, dtype: torch.dtype) -> None:
    m = load_co(E2E / "float_types.co")
    x = randn(6, 64, seed=13).to(dtype)
    assert torch.equal(getattr(m, fn)(x).float(), x.float())


def test_float_types_fp6_fp4_kernels_say_why_they_cannot_run() -> None:
    m = load_co(E2E / "float_types.co")
    tr = m.__croq_translation__
    for name in ("copy_f6_e3m2", "copy_f6_e2m3", "copy_f4_e2m1"):
        if name in tr.failed:
            with pytest.raises(Exception, match="is not translated"):
                getattr(m, name)(torch.zeros(6, 64, dtype=torch.uint8))


@pytest.mark.parametrize("k", [40, 128])
def test_wgmma_ss_matmul_f16(k: int) -> None:
    # lhs is tiled with subspan(64, 64) but rhs with chunkat (floor division): the two agree on
    # K only when K <= 64 or K is a multiple of 64, so only then is this source a GEMM
    m = load_co(E2E / "wgmma_ss.co")
    mm, n = 128, 192
    a, b = randn(mm, k, dtype=torch.float16, seed=14), randn(n, k, dtype=torch.float16, seed=15)
    out = poisoned(mm, n, dtype=torch.float16)
    m.matmul_f16(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)


@pytest.mark.parametrize(("name", "mnk"), [
    ("matmul_f16_v0_naive.co", (100, 72, 40)),
    ("matmul_f16_v1_shared_memory.co", (100, 72, 40)),
    ("matmul_f16_v2_hopper_tma_wgmma.co", (128, 256, 40)),
])  # fmt: skip
def test_tutorial_gemms_unchanged(name: str, mnk: tuple[int, int, int]) -> None:
    m = load_co(CORPUS / "tutorial" / name)
    mm, n, k = mnk
    a, b = randn(mm, k, dtype=torch.float16, seed=16), randn(n, k, dtype=torch.float16, seed=17)
    out = poisoned(mm, n, dtype=torch.float16)
    m.matmul(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_every_corpus_file_translates_or_explains(schedule: str) -> None:
    """Translation of any corpus program ends in a module or a located diagnostic, never a crash."""
    from croq2triton.api import translate_full
    from croq2triton.errors import CroqError

    files = sorted(CORPUS.rglob("*.co"))
    assert files
    for p in files:
        dialect = "upstream" if "upstream" in p.parts else "default"
        with contextlib.suppress(CroqError):  # a located diagnostic is a fine outcome
            translate_full(p.read_text(), filename=str(p), dialect=dialect, schedule=schedule)
