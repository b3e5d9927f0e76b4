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

TOLERANCE_TEXT = "f64 1e-9, f32 1e-4, f16 5e-3, bf16 3e-2, f8 0.25 (e4m3) / 0.5 (e5m2); integers and bools exactly"
