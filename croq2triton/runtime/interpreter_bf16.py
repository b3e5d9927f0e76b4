"""Conversions to and from ``bf16`` in Triton's interpreter as compiled code computes them.

Compiled for Hopper, a conversion to ``tl.bfloat16`` rounds to nearest even and keeps subnormals
(``cvt.rn.bf16.f32``), and one from it is exact.  Triton 3.6's interpreter keeps bf16 data as
``uint16`` bits and converts f32 to bf16 by cutting the low half off (1.01171875 gives 1.0078125,
not 1.015625), garbles subnormals both ways (1e-40 to bf16 gives 1.01e-39; the bf16 subnormal
9.18e-41 to f32 gives 0), and converts an f64 or an integer by ``astype(uint16)``: the value, not
its bits.  The patch computes the bits: from the value (as a float64, exact for every f32, f16,
f64 with no more than 53 significant bits and every integer below 2^53) rounded to 8 significant
bits, ties to even, at bf16's subnormal step at least, infinite from 2^128 up; and back by
shifting them into the high half of an f32.  Other conversions are the interpreter's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def bf16_bits(values: Any) -> np.ndarray:
    """The bf16 codes (``uint16``) of ``values``, rounded to nearest even."""
    with np.errstate(all="ignore"):
        a = np.asarray(values, dtype=np.float64)
        _, e = np.frexp(a)  # |a| in [2^(e-1), 2^e)
        step = np.maximum(e - 8, -133)  # 8 significant bits; 2^-133 is bf16's subnormal step
        r = np.ldexp(np.round(np.ldexp(a, -step)), step)  # numpy rounds halves to even
        r = np.where(np.abs(r) >= 2.0**128, np.copysign(np.inf, a), r)
        r = np.where(np.isfinite(a), r, a)
    f = np.asarray(r.astype(np.float32))  # exact: a bf16 value
    return np.asarray(f.view(np.uint32) >> 16, dtype=np.uint16)


def bf16_values(bits: Any) -> np.ndarray:
    """The f32 values of bf16 codes (exact)."""
    return np.asarray((np.asarray(bits).astype(np.uint32) << 16).view(np.float32))


def convert_bf16_exactly() -> bool:
    """Patch the interpreter's builder (idempotent; False where this Triton has no such builder)."""
    try:
        import triton.language as tl
        from triton.runtime.interpreter import InterpreterBuilder, TensorHandle, _get_np_dtype
    except ImportError:
        return False
    if not hasattr(InterpreterBuilder, "cast_impl") or not hasattr(InterpreterBuilder, "create_fp_to_fp"):
        return False
    if getattr(InterpreterBuilder, "_croq2triton_bf16", False):
        return True
    plain = (tl.float16, tl.float32, tl.float64)

    def convert(src: Any, dst_type: Any) -> Any:
        """The converted handle, or None where the interpreter's own conversion is right."""
        s, d = src.dtype.scalar, dst_type.scalar
        if d == tl.bfloat16 and s != tl.bfloat16 and (s in plain or s.is_int()):
            return TensorHandle(bf16_bits(src.data), d)
        if s == tl.bfloat16 and d != tl.bfloat16 and (d in plain or d.is_int()):
            values = bf16_values(src.data)
            return TensorHandle(values if d == tl.float32 else values.astype(_get_np_dtype(d)), d)
        return None

    cast_impl = InterpreterBuilder.cast_impl
    fp_to_fp = InterpreterBuilder.create_fp_to_fp

    def patched_cast(self: Any, src: Any, dst_type: Any) -> Any:
        out = convert(src, dst_type)
        return out if out is not None else cast_impl(self, src, dst_type)

    def patched_fp_to_fp(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        out = convert(src, dst_type)
        return out if out is not None else fp_to_fp(self, src, dst_type, rounding_mode)

    InterpreterBuilder.cast_impl = patched_cast  # type: ignore[method-assign]
    InterpreterBuilder.create_fp_to_fp = patched_fp_to_fp  # type: ignore[method-assign]
    InterpreterBuilder._croq2triton_bf16 = True  # type: ignore[attr-defined]
    return True
