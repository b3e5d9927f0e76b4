"""The math builtins Triton has only in libdevice, callable from generated kernels as ``_libm.NAME``.

Compiled for a GPU each is libdevice's function (``tl.extra.cuda.libdevice``).  Triton's CPU
interpreter cannot call libdevice ("Did you forget to add @triton.jit ?"), so there each is
computed from the functions it has (``tl.exp``, ``tl.log``, ``tl.sqrt``, ...), in f32, to within a few
ulps on the ranges kernels use (tests/test_libmath.py measures it against float64 NumPy).

This module is imported by the generated modules after they set ``TRITON_INTERPRET``, so the
choice below sees the same setting as the kernels.
"""

from __future__ import annotations

import os

import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

_INTERPRET = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"))
_PI = tl.constexpr(3.141592653589793)
_HALF_PI = tl.constexpr(1.5707963267948966)
_PI_6 = tl.constexpr(0.5235987755982988)
_SQRT3 = tl.constexpr(1.7320508075688772)
_TAN_PI_12 = tl.constexpr(0.2679491924311227)


@triton.jit
def _atan_small(x):
    # |x| <= tan(pi/12): the odd Taylor series to x^13 (its next term is below 2e-9 there)
    z = x * x
    p = 1.0 / 13.0
    p = p * z - 1.0 / 11.0
    p = p * z + 1.0 / 9.0
    p = p * z - 1.0 / 7.0
    p = p * z + 1.0 / 5.0
    p = p * z - 1.0 / 3.0
    return x + x * z * p


@triton.jit
def _atan_portable(x):
    a = tl.abs(x)
    big = a > 1.0
    r = tl.where(big, 1.0 / tl.where(big, a, 1.0), a)  # r in [0, 1]
    mid = r > _TAN_PI_12
    s = tl.where(mid, (r * _SQRT3 - 1.0) / (_SQRT3 + r), r)  # atan(r) = pi/6 + atan(s)
    t = _atan_small(s) + tl.where(mid, _PI_6, 0.0)
    t = tl.where(big, _HALF_PI - t, t)
    return tl.where(x < 0, -t, t)


@triton.jit
def _atan2_portable(y, x):
    base = _atan_portable(y / tl.where(x == 0, 1.0, x))
    quadrant = tl.where(y < 0, -_PI, _PI)
    out = tl.where(x < 0, base + quadrant, base)
    axis = tl.where(y > 0, _HALF_PI, tl.where(y < 0, -_HALF_PI, 0.0))
    return tl.where(x == 0, axis, out)


@triton.jit
def atan(x):
    if _INTERPRET:
        y = _atan_portable(x)
    else:
        y = libdevice.atan(x)
    return y


@triton.jit
def atan2(y, x):
    if _INTERPRET:
        r = _atan2_portable(y, x)
    else:
        r = libdevice.atan2(y, x)
    return r


@triton.jit
def asin(x):
    if _INTERPRET:
        y = _atan2_portable(x, tl.sqrt((1.0 - x) * (1.0 + x)))
    else:
        y = libdevice.asin(x)
    return y


@triton.jit
def acos(x):
    if _INTERPRET:
        y = _atan2_portable(tl.sqrt((1.0 - x) * (1.0 + x)), x)
    else:
        y = libdevice.acos(x)
    return y


@triton.jit
def tan(x):
    if _INTERPRET:
        y = tl.sin(x) / tl.cos(x)
    else:
        y = libdevice.tan(x)
    return y


@triton.jit
def _expm1_portable(x):
    u = tl.exp(x)
    # Kahan: (u - 1) * x / log(u) cancels exp's rounding error; u == 1 means |x| is below an ulp
    exact = (u - 1.0) * x / tl.log(tl.where(u == 1.0, 2.0, u))
    out = tl.where(u == 1.0, x, exact)
    return tl.where(tl.abs(x) > 0.5, u - 1.0, out)


@triton.jit
def expm1(x):
    if _INTERPRET:
        y = _expm1_portable(x)
    else:
        y = libdevice.expm1(x)
    return y


@triton.jit
def log1p(x):
    if _INTERPRET:
        u = 1.0 + x
        # log(u) - ((u - 1) - x) / u corrects the rounding of 1 + x
        y = tl.where(u == 1.0, x, tl.log(u) - ((u - 1.0) - x) / u)
    else:
        y = libdevice.log1p(x)
    return y


@triton.jit
def sinh(x):
    if _INTERPRET:
        e = _expm1_portable(tl.abs(x))
        s = 0.5 * (e + e / (e + 1.0))  # sinh|x| = (e^|x| - e^-|x|) / 2 without cancellation
        y = tl.where(x < 0, -s, s)
    else:
        y = libdevice.sinh(x)
    return y


@triton.jit
def cosh(x):
    if _INTERPRET:
        e = tl.exp(tl.abs(x))
        y = 0.5 * (e + 1.0 / e)
    else:
        y = libdevice.cosh(x)
    return y


@triton.jit
def tanh(x):
    if _INTERPRET:
        e = _expm1_portable(-2.0 * tl.abs(x))
        t = -e / (e + 2.0)  # tanh|x| = -expm1(-2|x|) / (expm1(-2|x|) + 2)
        y = tl.where(x < 0, -t, t)
    else:
        y = libdevice.tanh(x)
    return y


@triton.jit
def pow(x, y):
    if _INTERPRET:
        magnitude = tl.exp2(y * tl.log2(tl.abs(x)))
        whole = tl.floor(y) == y
        odd = whole & (tl.floor(y * 0.5) * 2.0 != y)
        negative = tl.where(odd, -magnitude, magnitude)
        nan = magnitude * 0.0 + float("nan")
        r = tl.where(x < 0, tl.where(whole, negative, nan), magnitude)
        r = tl.where(y == 0, 1.0, r)
    else:
        r = libdevice.pow(x, y)
    return r


@triton.jit
def round(x):
    if _INTERPRET:
        r = tl.floor(tl.abs(x) + 0.5)  # halfway cases away from zero, as C's roundf
        y = tl.where(x < 0, -r, r)
    else:
        y = libdevice.round(x)
    return y
