"""C's scalar arithmetic on Python numbers (LANGUAGE.md 4.1, 4.4, 7.7): the types of results, and
the values, for host code between launches.

Types are tile-IR names (``i32`` is ``int`` and ``s32``, ``u32``, ``f32`` ...).  A result's type
comes from C's integer promotion (``bool`` and types narrower than ``int`` compute as ``int``) and
the usual arithmetic conversions (a float wins; else the unsigned type of the larger rank, or the
signed one that holds every value of the other: ``int < u32`` compares unsigned, ``i64 + u32`` is
an ``i64``).  An integer result wraps to its width (two's complement, as CUDA's does), an ``f32``
result rounds to the nearest ``f32`` (ties to even), ``/`` and ``%`` truncate toward zero and
``cdiv(a, b)`` is ``(a + b - 1) / b``; ``/`` of floats is IEEE's (by zero an infinity or NaN) and
``%`` of floats C's ``fmod`` (truncating).

The translator folds constants with :func:`fold` and :func:`convert`; generated launchers call the
conversions (``_rt.s32``, ``_rt.f32`` ...) and the divisions (``_rt.idiv``, ``_rt.imod``,
``_rt.cdiv``, ``_rt.fdiv``, ``_rt.fmod``), so the two agree.  Pure Python and small: each is a
scalar operation between launches.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from .ccast import host_cast

INT_BITS = {"i8": 8, "u8": 8, "i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64, "u64": 64}
FLOAT_BITS = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}  # significand bits: which float holds which
# the order of the usual arithmetic conversions: a later type wins over an earlier one
_RANK = ("i1", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f8e4", "f8e5", "f16", "bf16", "f32", "f64")


def is_int(t: str) -> bool:
    return t == "i1" or t in INT_BITS


def promoted(t: str) -> str:
    """C's integer promotion: ``bool`` and types narrower than ``int`` compute as ``int``."""
    return "i32" if t in ("i1", "i8", "u8", "i16", "u16") else t


def common(a: str, b: str) -> str:
    """The type C computes ``a op b`` in (after promotion): the usual arithmetic conversions."""
    a, b = promoted(a), promoted(b)
    if a == b:
        return a
    ra = _RANK.index(a) if a in _RANK else len(_RANK)
    rb = _RANK.index(b) if b in _RANK else len(_RANK)
    return a if ra >= rb else b


def int_range(t: str) -> tuple[int, int]:
    if t == "i1":
        return (0, 1)
    bits = INT_BITS[t]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t.startswith("i") else (0, (1 << bits) - 1)


def holds(outer: str, inner: str) -> bool:
    """Does the type ``outer`` hold every value of ``inner`` exactly (a conversion that changes nothing)?"""
    if outer == inner:
        return True
    if is_int(inner) and is_int(outer):
        lo, hi = int_range(inner)
        olo, ohi = int_range(outer)
        return olo <= lo and hi <= ohi
    if is_int(inner):  # an integer in a float: every value of it, exactly
        lo, hi = int_range(inner)
        return outer in FLOAT_BITS and max(hi, -lo) <= 1 << FLOAT_BITS[outer]
    if inner in FLOAT_BITS and outer in FLOAT_BITS:  # bf16 and f16 hold each other's values only in f32
        return FLOAT_BITS[outer] >= FLOAT_BITS[inner] and (outer, inner) not in (("f16", "bf16"), ("bf16", "f16"))
    return False


# ------------------------------------------------------------------ conversions (``_rt.s32`` ...)


def s8(x: int) -> int:
    return ((x + 0x80) & 0xFF) - 0x80


def u8(x: int) -> int:
    return x & 0xFF


def s16(x: int) -> int:
    return ((x + 0x8000) & 0xFFFF) - 0x8000


def u16(x: int) -> int:
    return x & 0xFFFF


def s32(x: int) -> int:
    """An integer wrapped to ``int`` / ``s32`` (two's complement)."""
    return ((x + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def u32(x: int) -> int:
    return x & 0xFFFFFFFF


def s64(x: int) -> int:
    return ((x + 0x8000000000000000) & 0xFFFFFFFFFFFFFFFF) - 0x8000000000000000


def u64(x: int) -> int:
    return x & 0xFFFFFFFFFFFFFFFF


_F32 = struct.Struct("<f")


def f32(x: float | int) -> float:
    """A number rounded to the nearest ``f32`` (ties to even; past the range: infinity)."""
    try:
        return _F32.unpack(_F32.pack(x))[0]  # type: ignore[no-any-return]
    except OverflowError:
        return math.copysign(math.inf, x)


def f16(x: float | int) -> float:
    return host_cast(x, "f16")  # type: ignore[return-value]


def bf16(x: float | int) -> float:
    return host_cast(x, "bf16")  # type: ignore[return-value]


# the conversion of a value computed in Python to each C type (the name generated launchers call)
WRAP: dict[str, Callable[..., int | float]] = {
    "i8": s8, "u8": u8, "i16": s16, "u16": u16, "i32": s32, "u32": u32, "i64": s64, "u64": u64,
    "f16": f16, "bf16": bf16, "f32": f32,
}  # fmt: skip
RUNTIME_NAME = {t: fn.__name__ for t, fn in WRAP.items()}


def convert(value: float | int | bool, t: str) -> float | int | bool:
    """C's conversion of a number to the type ``t`` (a float to an integer truncates toward zero)."""
    if t == "i1":
        return bool(value)
    if t in INT_BITS:
        return WRAP[t](int(value))
    if t in WRAP:
        return WRAP[t](value)
    return float(value)


# ------------------------------------------------------------------ division


def fdiv(a: float | int, b: float | int) -> float:
    """C's ``a / b`` of floats (IEEE 754): by a zero, an infinity whose sign is the product of the
    operands' signs (``1.0 / -0.0`` is ``-inf``), and NaN where ``a`` is zero or NaN."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def fmod(a: float | int, b: float | int) -> float:
    """``a % b`` of floats as C's ``fmod`` (and Triton's ``%`` of floats, LLVM's ``frem``): the
    remainder of the quotient truncated toward zero, of the dividend's sign (``-7.5 % 2.0`` is
    -1.5, where Python's ``%`` floors to 0.5); NaN where ``b`` is zero or ``a`` infinite."""
    try:
        return math.fmod(a, b)
    except ValueError:
        return math.nan


def idiv(a: int, b: int) -> int:
    """C's ``a / b`` of integers: the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def imod(a: int, b: int) -> int:
    """C's ``a % b``: the remainder of :func:`idiv` (its sign is the dividend's)."""
    return a - b * idiv(a, b)


def cdiv(a: int, b: int) -> int:
    """Croqtile's ``cdiv(a, b)``: ``(a + b - 1) / b`` with C's truncating ``/`` (LANGUAGE.md 7.7);
    the ceiling of ``a / b`` where ``a >= 0`` and ``b > 0``."""
    n = a + b - 1
    if n >= 0 and b > 0:
        return n // b
    return idiv(n, b)


# ------------------------------------------------------------------ constants


def result_type(op: str, ta: str, tb: str) -> str:
    """The C type of ``a op b``."""
    if op in ("<", "<=", ">", ">=", "==", "!=", "&&", "||"):
        return "i1"
    if op in ("<<", ">>"):
        return promoted(ta)
    return common(ta, tb)


def fold(op: str, a: float | int | bool, ta: str, b: float | int | bool, tb: str) -> tuple[float | int | bool, str]:
    """``a op b`` of two constants of the types ``ta`` and ``tb``, as C computes it: the value and
    its type.  ZeroDivisionError, ValueError or TypeError where it has none (a division by zero, a
    negative shift)."""
    if op in ("&&", "||"):
        return (bool(a) and bool(b)) if op == "&&" else (bool(a) or bool(b)), "i1"
    if op in ("<<", ">>"):
        t = promoted(ta)
        x, n = convert(a, t), convert(b, promoted(tb))
        if not isinstance(x, int) or not isinstance(n, int):
            raise TypeError(f"'{op}' takes integers")
        if n < 0:
            raise ValueError("a negative shift count")
        return convert(x << n if op == "<<" else x >> n, t), t
    t = common(ta, tb)
    x, y = convert(a, t), convert(b, t)
    if op in ("<", "<=", ">", ">=", "==", "!="):
        cmp = {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}
        return cmp[op], "i1"
    ints = is_int(t)
    if op in ("/", "%") and y == 0 and ints:
        raise ZeroDivisionError
    if op == "+":
        v: float | int = x + y
    elif op == "-":
        v = x - y
    elif op == "*":
        v = x * y
    elif op == "/":
        v = idiv(int(x), int(y)) if ints else fdiv(x, y)
    elif op == "%":
        v = imod(int(x), int(y)) if ints else fmod(x, y)
    elif op in ("&", "|", "^") and ints:
        v = {"&": int(x) & int(y), "|": int(x) | int(y), "^": int(x) ^ int(y)}[op]
    else:
        raise TypeError(f"no constant '{op}' of {ta} and {tb}")
    return convert(v, t), t


def unary(op: str, a: float | int | bool, t: str) -> tuple[float | int | bool, str]:
    """``-a``, ``~a`` or ``!a`` of a constant of type ``t``, as C computes it."""
    if op == "!":
        return not a, "i1"
    p = promoted(t)
    if op == "~":
        if not is_int(p):
            raise TypeError("'~' takes an integer")
        return convert(~int(a), p), p
    return convert(-a, p), p
