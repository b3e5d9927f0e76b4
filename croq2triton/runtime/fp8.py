"""Conversions to 8-bit floats that give the same bits in Triton's interpreter as compiled.

Compiled for Hopper, ``x.to(tl.float8e4nv)`` / ``x.to(tl.float8e5)`` round to nearest even and
saturate at the largest finite value (``cvt.rn.satfinite``): 500 becomes 448 in e4m3, subnormals are
kept.  Triton 3.6's interpreter converts otherwise (127.5 -> 64, ties away from zero, 500 -> 256,
values below the normal range flushed to zero; docs/precision.md).  Generated kernels call
``_fp8.to_e4m3(x)`` / ``_fp8.to_e5m2(x)``: compiled, the plain conversion; in the interpreter, the
bits computed from the f32 value (round to nearest even on the f32 bits, subnormals from the value
scaled to their step, saturation, NaN kept) and reinterpreted.
"""

from __future__ import annotations

import os

import triton
import triton.language as tl

INTERPRET = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"))


@triton.jit
def _bits(x, mant: tl.constexpr, bias: tl.constexpr, most: tl.constexpr, nan: tl.constexpr):
    """The 8-bit code of f32 ``x`` in a format of ``mant`` mantissa bits and exponent bias ``bias``
    whose largest finite code is ``most``: round to nearest even, saturated, NaN as ``nan``."""
    f = x.to(tl.float32)
    u = f.to(tl.int32, bitcast=True)
    sign = (u >> 31) & 1
    a = tl.where(f != f, 0.0, tl.abs(f))  # (NaN: its code is set last)
    au = a.to(tl.int32, bitcast=True)
    drop: tl.constexpr = 23 - mant
    # normal values: the f32 exponent and mantissa as one integer, rounded to nearest even at the
    # format's last mantissa bit (a carry moves into the exponent), then rebased to the format's bias
    half = (1 << (drop - 1)) - 1
    normal = ((au + half + ((au >> drop) & 1)) >> drop) - ((127 - bias) << mant)
    # below the normal range: multiples of the subnormal step, rounded to nearest even by the f32 add
    scale: tl.constexpr = float(2 ** (bias - 1 + mant))
    least: tl.constexpr = float(2.0 ** (1 - bias))
    sub = ((tl.minimum(a, least) * scale + 8388608.0) - 8388608.0).to(tl.int32)
    code = tl.where(a < least, sub, normal)
    code = tl.minimum(code, most)
    code = tl.where(f != f, nan, code)
    return (code | (sign << 7)).to(tl.uint8)


@triton.jit
def to_e4m3(x):
    """``x`` as ``tl.float8e4nv`` (f8_e4m3: 3 mantissa bits, bias 7, largest 448, no infinity)."""
    if INTERPRET:
        y = _bits(x, 3, 7, 0x7E, 0x7F).to(tl.float8e4nv, bitcast=True)
    else:
        y = x.to(tl.float8e4nv)
    return y


@triton.jit
def to_e5m2(x):
    """``x`` as ``tl.float8e5`` (f8_e5m2: 2 mantissa bits, bias 15, largest finite 57344)."""
    if INTERPRET:
        y = _bits(x, 2, 15, 0x7B, 0x7F).to(tl.float8e5, bitcast=True)
    else:
        y = x.to(tl.float8e5)
    return y
