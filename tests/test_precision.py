"""What an f32 product means: f32-accurate (tf32x3 by default, IEEE f32 FMAs with
``f32_precision="ieee"``) unless TF32 is asked for (croq2triton/options.py).

The interpreter computes every dot exactly in f32, so on the CPU these tests check that the
translation keeps the f32 data (no rounding to TF32 on the way); the GPU run
(CROQ2TRITON_TEST_DEVICE=cuda, perf/device_pass.sh) checks the tensor cores' products at 1024^3,
where TF32 products are ~500x further from float64 than IEEE f32 ones (max error relative to the
largest output: TF32 ~5e-4, IEEE f32 ~1e-6).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, poisoned, randn

from croq2triton.api import load, translate_full

PROGRAM = Path(__file__).parent / "programs" / "f32_gemms.co"
GPU = DEVICE == "cuda"
# (Z,) M, N, K: 1024^3 (and a ragged size) on the GPU; small ragged sizes in the interpreter
SIZES = [(1024, 1024, 1024), (1000, 999, 1001)] if GPU else [(70, 45, 77)]
# a thread per element, its loop over K one step at a time in the interpreter: 2 x 2 blocks of 16 x 16
THREAD_SIZES = SIZES if GPU else [(20, 19, 77)]
F32_TOL = 2e-5  # max |error| / max |ref| of an IEEE f32 GEMM (TF32 products: ~5e-4 at K = 1024)
TF32_TOL = 3e-3


def _relative_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    g = got.double().cpu()
    assert not torch.isnan(g).any(), "some elements were never written (NaN poison left)"
    return float((g - ref).abs().max() / ref.abs().max())


@pytest.fixture(scope="module", params=["source", "auto"])
def modules(request: pytest.FixtureRequest) -> dict[str, object]:
    schedule = request.param
    return {
        "default": load(PROGRAM, schedule=schedule),  # tf32x3: f32-accurate
        "strict": load(PROGRAM, schedule=schedule, f32_precision="ieee"),
        "tf32": load(PROGRAM, schedule=schedule, allow_tf32=True),
    }


@pytest.mark.parametrize(("m", "n", "k"), THREAD_SIZES)
def test_per_thread_f32_gemm_keeps_f32_products(modules: dict[str, object], m: int, n: int, k: int) -> None:
    z = 2
    a, b = randn(z, m, k, seed=1), randn(z, k, n, seed=2)
    ref = torch.bmm(a.double().cpu(), b.double().cpu())
    for precision in ("default", "strict"):
        c = poisoned(z, m, n)
        modules[precision].bmm_thread(a, b, c)  # type: ignore[attr-defined]
        assert _relative_error(c, ref) < F32_TOL, precision
    c = poisoned(z, m, n)
    modules["tf32"].bmm_thread(a, b, c)  # type: ignore[attr-defined]
    err = _relative_error(c, ref)
    assert err < TF32_TOL
    if GPU:  # the opt-in is real: TF32 products on the tensor cores
        assert err > F32_TOL


@pytest.mark.parametrize(("m", "n", "k"), SIZES)
def test_mma_on_f32_keeps_f32_products(modules: dict[str, object], m: int, n: int, k: int) -> None:
    lhs, rhs = randn(m, k, seed=3), randn(n, k, seed=4)
    ref = lhs.double().cpu() @ rhs.double().cpu().T
    for precision in ("default", "strict"):
        out = poisoned(m, n)
        modules[precision].mma_f32(lhs, rhs, out)  # type: ignore[attr-defined]
        assert _relative_error(out, ref) < F32_TOL, precision
    out = poisoned(m, n)
    modules["default"].mma_tf32(lhs, rhs, out)  # type: ignore[attr-defined]  # operands declared tf32
    err = _relative_error(out, ref)
    assert err < TF32_TOL
    if GPU:
        assert err > F32_TOL


def _precisions(source: str) -> list[str]:
    """The input_precision of every dot (either quote: the module is formatted where ruff is present)."""
    return re.findall(r"input_precision=[\"']([a-z0-9]+)[\"']", source)


def test_the_precision_is_in_the_translation() -> None:
    text = PROGRAM.read_text()
    default = translate_full(text, filename=str(PROGRAM)).source
    assert _precisions(default) == ["tf32x3", "tf32x3", "tf32"]  # bmm_thread, mma_f32; mma_tf32 states TF32
    ieee = translate_full(text, filename=str(PROGRAM), f32_precision="ieee").source
    assert _precisions(ieee) == ["ieee", "ieee", "tf32"]
    tf32 = translate_full(text, filename=str(PROGRAM), allow_tf32=True).source
    assert _precisions(tf32) == ["tf32"] * 3
    assert "croq2triton translate --allow-tf32 f32_gemms.co" in tf32  # how to regenerate it
    assert "croq2triton translate --f32-precision ieee f32_gemms.co" in ieee
