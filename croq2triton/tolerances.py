"""Per-dtype tolerances of ``croq2triton run --check`` (no torch import: the CLI's help text uses them).

An element differs from the reference when ``|x - ref| > rtol * (|ref| + mean |ref|)``; integer and
bool outputs must be equal.  Variants compute the same sums in other orders (other tiles, other
pipelines), so the tolerance is a few units in the last place of the output type, wider where the
type is narrow.
"""

from __future__ import annotations

RTOL: dict[str, float] = {  # by torch dtype name
    "float64": 1e-9,
    "float32": 1e-4,
    "float16": 5e-3,
    "bfloat16": 3e-2,
    "float8_e4m3fn": 0.25,
    "float8_e5m2": 0.5,
}

# An fp8 MMA on Hopper accumulates its products with fewer mantissa bits than f32 (about 14: Triton's
# fp8 dots on sm_90 never promote the accumulator, max_num_imprecise_acc = 2^30, and the source's
# wgmma does the same; DeepSeek-V3's report measured up to 2 % at K = 4096, the test suite 1.4e-4 -
# 1.7e-4 of max|ref| at K = 200 on the H100). Compiled for a GPU, the outputs of a function whose
# MMAs take fp8 operands are compared at least this loosely: two tilings of K (or a float64 product)
# differ by the accumulator's rounding, while a wrong tile or a missing step still differs by more.
FP8_MMA_RTOL = 2.0**-5

TOLERANCE_TEXT = "f64 1e-9, f32 1e-4, f16 5e-3, bf16 3e-2, f8 0.25 (e4m3) / 0.5 (e5m2); integers and bools exactly"
