"""Outputs of fp8 MMAs compiled for a GPU are compared at the accumulator's tolerance
(tolerances.py ``FP8_MMA_RTOL``): `run --check` and `tune`'s verification marked every point of an
fp8 GEMM at 8192^3 on the H100 wrong at f32's 1e-4 (perf/RESULTS.md 2026-12-05), the accumulator of
an fp8 wgmma keeping about 14 bits. Everything else keeps its dtype's tolerance."""

from __future__ import annotations

from pathlib import Path

import torch

from croq2triton.check_run import compare, fp8_mma
from croq2triton.frontend.driver import parse, parse_file
from croq2triton.tolerances import FP8_MMA_RTOL, RTOL
from croq2triton.tune.verify import compare_outputs

FORMS = Path(__file__).parent / "programs" / "gemm_forms"


def _fn(path: Path, name: str = "gemm"):  # noqa: ANN202
    return next(f for f in parse_file(str(path)).functions if f.name == name)


def test_which_functions_take_fp8_mma_tolerance() -> None:
    assert fp8_mma(_fn(FORMS / "fp8_f32out.co"))
    assert fp8_mma(_fn(FORMS / "fp8_f16out.co"))
    assert not fp8_mma(_fn(FORMS / "staged_k16.co"))  # f16 operands
    # fp8 data without an MMA (a conversion): its dtype's tolerance
    src = """__co__ void widen(global f8_e4m3 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread
    if (p # t < N) y.at(p # t) = x.at(p # t);
}
"""
    assert not fp8_mma(parse(src, "widen.co").functions[0])


def test_the_floor_loosens_only_floating_outputs_and_only_when_asked() -> None:
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(64, 64, generator=g)
    near = ref * (1 + 0.01 * torch.randn(64, 64, generator=g).clamp(-1, 1))  # 1 % off: an fp8 accumulator
    wrong = ref.clone()
    wrong[3, 5] += 10.0  # a wrong element stays wrong
    assert RTOL["float32"] < 0.01 < FP8_MMA_RTOL
    for cmp in (compare, compare_outputs):
        assert cmp({"c": ref}, {"c": near})  # f32's tolerance: differs
        assert not cmp({"c": ref}, {"c": near}, FP8_MMA_RTOL)
        assert cmp({"c": ref}, {"c": wrong}, FP8_MMA_RTOL)
        ints = torch.arange(10)
        assert cmp({"i": ints}, {"i": ints + 1}, FP8_MMA_RTOL)  # integers: exactly
