"""The math builtins Triton has only in libdevice, callable from generated kernels as ``_libm.NAME``.

Compiled for a GPU each is libdevice's function (``tl.extra.cuda.libdevice``).  Triton's CPU
interpreter cannot call libdevice ("Did you forget to add @triton.jit ?"), so there each is
computed from the functions it has (``tl.exp``, ``tl.log``, ``tl.sqrt``, ...), in f32, to within a few
ulps on the ranges kernels use, with C's values at the special ones (C99 Annex F: signed zeros,
infinities, NaN, ``pow``'s exceptional cases; tests/test_libmath.py measures both against float64
NumPy).  A sign is set from the sign bit (``_with_sign``), so ``-0.0`` keeps it.

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
def _negative(x):
    """The sign bit of f32 ``x`` (set for -0.0 too)."""
    return tl.cast(x, tl.int32, bitcast=True) < 0


@triton.jit
def _with_sign(t, x):
    """``|t|`` with the sign of ``x`` (C's ``copysignf``; ``* -1.0`` flips the sign bit exactly)."""
    mag = tl.abs(t)
    return tl.where(_negative(x), mag * -1.0, mag)


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
    return _with_sign(t, x)


@triton.jit
def _atan2_portable(y, x):
    # C99 F.10.1.4: atan2(+-0, -0) is +-pi, atan2(+-0, +0) is +-0, atan2(+-inf, +-inf) is +-pi/4 or +-3pi/4
    base = _atan_portable(y / tl.where(x == 0, 1.0, x))
    out = tl.where(_negative(x), base + _with_sign(_PI, y), base)
    out = tl.where((x == 0) & (y != 0), _with_sign(_HALF_PI, y), out)
    corner = _with_sign(tl.where(_negative(x), 3.0 * _PI / 4.0, _PI / 4.0), y)
    infinite = (tl.abs(x) == float("inf")) & (tl.abs(y) == float("inf"))
    out = tl.where(infinite, corner, out)
    return tl.where((x != x) | (y != y), x + y, out)


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
        # log(u) - ((u - 1) - x) / u corrects the rounding of 1 + x, where u is finite and positive
        # (log1p(-1) is -inf, log1p(inf) inf, below -1 NaN: log's own)
        fine = (u > 0.0) & (u < float("inf"))
        v = tl.where(fine, u, 2.0)
        y = tl.where(fine, tl.log(v) - ((v - 1.0) - tl.where(fine, x, 1.0)) / v, tl.log(u))
        y = tl.where(u == 1.0, x, y)
    else:
        y = libdevice.log1p(x)
    return y


@triton.jit
def sinh(x):
    if _INTERPRET:
        a = tl.abs(x)
        e = _expm1_portable(a)
        s = 0.5 * (e + e / (e + 1.0))  # sinh|x| = (e^|x| - e^-|x|) / 2 without cancellation
        y = _with_sign(tl.where(a > 88.0, _half_exp(a), s), x)
    else:
        y = libdevice.sinh(x)
    return y


@triton.jit
def _half_exp(a):
    """e^a / 2 for a up to 89.4, past exp's f32 range (e^88.7): (e^(a/2) / 2) * e^(a/2)."""
    h = tl.exp(0.5 * a)
    return (0.5 * h) * h


@triton.jit
def cosh(x):
    if _INTERPRET:
        a = tl.abs(x)
        e = tl.exp(a)
        y = tl.where(a > 88.0, _half_exp(a), 0.5 * (e + 1.0 / e))
    else:
        y = libdevice.cosh(x)
    return y


@triton.jit
def tanh(x):
    if _INTERPRET:
        e = _expm1_portable(-2.0 * tl.abs(x))
        t = -e / (e + 2.0)  # tanh|x| = -expm1(-2|x|) / (expm1(-2|x|) + 2)
        y = _with_sign(t, x)
    else:
        y = libdevice.tanh(x)
    return y


@triton.jit
def pow(x, y):
    if _INTERPRET:
        # C99 F.10.4.4: pow(x, +-0) and pow(+1, y) are 1, NaN too; pow(-1, +-inf) is 1; an odd
        # integral exponent keeps the base's sign (-0.0 and -inf too); a negative finite base to a
        # finite non-integral exponent is NaN
        a = tl.abs(x)
        magnitude = tl.exp2(y * tl.log2(a))
        whole = tl.floor(y) == y
        odd = whole & (tl.floor(y * 0.5) * 2.0 != y)
        r = tl.where(odd & _negative(x), magnitude * -1.0, magnitude)
        r = tl.where((x < 0) & (a < float("inf")) & ~whole, float("nan"), r)
        r = tl.where((a == 1.0) & (tl.abs(y) == float("inf")), 1.0, r)
        r = tl.where((x == 1.0) | (y == 0), 1.0, r)
    else:
        # libdevice runs with denormals flushed (Triton links it so): a subnormal base came out as
        # neither C's value nor a zero's (pow(1.4e-45, -1) gave 2^127, not inf); it is scaled into the
        # normal range first (exact: a multiply outside libdevice keeps subnormals), 2^-24 raised apart
        if x.dtype == tl.float32:  # (f64 is not flushed)
            tiny = (tl.abs(x) < 1.1754943508222875e-38) & (x != 0)
            r = libdevice.pow(tl.where(tiny, x * 16777216.0, x), y)
            r = tl.where(tiny, r * libdevice.pow(tl.full(r.shape, 5.960464477539063e-08, tl.float32), y), r)
        else:
            r = libdevice.pow(x, y)
    return r


@triton.jit
def round(x):
    if _INTERPRET:
        # halfway cases away from zero, as C's roundf; not floor(|x| + 0.5), whose sum rounds up
        # 0.49999997 to 1
        a = tl.abs(x)
        t = tl.floor(a)
        y = _with_sign(tl.where(a - t >= 0.5, t + 1.0, t), x)
    else:
        y = libdevice.round(x)
    return y


@triton.jit
def fmod(x, y):
    """C's ``fmod`` of floats (a kernel's ``%`` of floats): exact, with the dividend's sign, so
    ``fmod(-4, 4)`` is ``-0.0``.  Compiled, libdevice's (Triton's ``%`` of floats, LLVM's ``frem``,
    is expanded for NVPTX as ``x - trunc(x / y) * y``: ``+0.0`` there, and inexact for large
    quotients); 16-bit operands in f32, the remainder (exact) rounded back.  The interpreter's ``%``
    of floats is NumPy's ``fmod`` already."""
    if _INTERPRET:
        r = x % y
    else:
        if x.dtype == tl.float16 or x.dtype == tl.bfloat16:
            r = libdevice.fmod(x.to(tl.float32), y.to(tl.float32)).to(x.dtype)
        else:
            r = libdevice.fmod(x, y)
    return r


# CUDA's math functions of a __device__ helper that Croqtile has no builtin for (frontend/device.py
# LIBM): C's values, in f32; in the interpreter through float64 where libdevice is out of reach
@triton.jit
def trunc(x):
    """C's ``truncf``: toward zero (``-0.4`` gives ``-0.0``: ``ceil`` keeps the sign)."""
    return tl.where(x < 0.0, tl.ceil(x), tl.floor(x))


@triton.jit
def rint(x):
    """C's ``rintf`` / ``nearbyintf`` under the default rounding: to the nearest, ties to even."""
    if _INTERPRET:
        f = tl.floor(x)
        d = x - f
        odd = (f - 2.0 * tl.floor(f * 0.5)) == 1.0
        y = _with_sign(tl.where((d > 0.5) | ((d == 0.5) & odd), f + 1.0, f), x)
    else:
        y = libdevice.rint(x)
    return y


@triton.jit
def log10(x):
    if _INTERPRET:
        y = (tl.log(x.to(tl.float64)) * 0.4342944819032518).to(tl.float32)
    else:
        y = libdevice.log10(x)
    return y


@triton.jit
def exp10(x):
    if _INTERPRET:
        y = tl.exp(x.to(tl.float64) * 2.302585092994046).to(tl.float32)
    else:
        y = libdevice.exp10(x)
    return y


@triton.jit
def cbrt(x):
    if _INTERPRET:
        a = tl.abs(x).to(tl.float64)
        y = _with_sign(tl.exp(tl.log(a) / 3.0).to(tl.float32), x)
    else:
        y = libdevice.cbrt(x)
    return y


@triton.jit
def hypot(x, y):
    """C's ``hypotf``: without overflow on the way, infinite where either is (even beside a NaN)."""
    if _INTERPRET:
        a = x.to(tl.float64)
        b = y.to(tl.float64)
        r = tl.sqrt(a * a + b * b).to(tl.float32)
        r = tl.where((tl.abs(x) == float("inf")) | (tl.abs(y) == float("inf")), float("inf"), r)
    else:
        r = libdevice.hypot(x, y)
    return r


@triton.jit
def copysign(x, y):
    """C's ``copysignf``: ``|x|`` with the sign bit of ``y``."""
    return _with_sign(x, y)


# the bits of a value as another type of the same width (CUDA's __float_as_int, __int_as_float, ...)
@triton.jit
def as_int32(x):
    return x.to(tl.int32, bitcast=True)


@triton.jit
def as_uint32(x):
    return x.to(tl.uint32, bitcast=True)


@triton.jit
def as_float32(x):
    return x.to(tl.float32, bitcast=True)


@triton.jit
def as_int64(x):
    return x.to(tl.int64, bitcast=True)


@triton.jit
def as_float64(x):
    return x.to(tl.float64, bitcast=True)
