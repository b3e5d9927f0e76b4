"""``tl.fma`` in Triton's interpreter rounds once, as compiled code (``fma.rn.f32``) and C's ``fmaf`` do.

Triton 3.6's interpreter computes ``x * y + z`` in the operands' type: the product is rounded before
the sum, so ``fma(1 + 2^-12, 1 + 2^-12, -(1 + 2^-11))`` is 0 there, 2^-24 compiled.  The patch
computes f32 and f16 operands in float64, where the product is exact (twice 24 significant bits fit
in 53), and the sum is rounded to odd (rounded to nearest, then moved to its odd neighbour where that
rounding was inexact: the exact error comes from Knuth's two-sum): a value rounded to odd with two
bits more than the target's precision rounds to nearest as the exact value would, so the final
conversion to the operands' type is the one rounding.  Other types keep the interpreter's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def fma_once(x: Any, y: Any, z: Any, dtype: Any) -> np.ndarray:
    """``x * y + z`` rounded once to ``dtype`` (f32 or f16 operands)."""
    p = np.asarray(x, dtype=np.float64) * np.asarray(y, dtype=np.float64)  # exact
    c = np.asarray(z, dtype=np.float64)
    with np.errstate(all="ignore"):
        s = p + c
        b = s - p
        err = (p - (s - b)) + (c - b)  # p + c == s + err exactly (two-sum)
        odd = (np.asarray(s).view(np.int64) & 1) == 1
        toward = np.nextafter(s, np.where(err > 0, np.inf, -np.inf))
        s = np.where((err != 0) & np.isfinite(s) & ~odd, toward, s)
    return np.asarray(s).astype(dtype)


def fma_rounds_once() -> bool:
    """Patch the interpreter's builder (idempotent; False where this Triton has no such builder)."""
    try:
        import triton.language as tl
        from triton.runtime.interpreter import InterpreterBuilder, TensorHandle
    except ImportError:
        return False
    if not hasattr(InterpreterBuilder, "create_fma"):
        return False
    if getattr(InterpreterBuilder, "_croq2triton_fma", False):
        return True
    original = InterpreterBuilder.create_fma
    types = {tl.float32: np.float32, tl.float16: np.float16}

    def create_fma(self: Any, x: Any, y: Any, z: Any) -> Any:
        t = z.dtype.scalar
        if t not in types or x.dtype.scalar != t or y.dtype.scalar != t:
            return original(self, x, y, z)
        return TensorHandle(fma_once(x.data, y.data, z.data, types[t]), t)

    InterpreterBuilder.create_fma = create_fma  # type: ignore[method-assign]
    InterpreterBuilder._croq2triton_fma = True  # type: ignore[attr-defined]
    return True
