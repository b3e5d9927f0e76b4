"""CUDA's conversion intrinsics in ``__device__`` helpers (frontend/device.py), written as the
Croqtile conversions that compute them (LANGUAGE.md 4.4, 7.7).

* to a narrower float, or between floats (``__float2half``, ``__half2float``, ``__float2bfloat16``,
  ``__double2float_rn``, ...): ``__to<T>(x)``, which rounds to nearest even;
* from an integer to a float (``__int2float_rn``, ``__ll2double_rn``, ...): ``__to<T>(x)``;
* from a float to an integer by rounding mode: ``_rz`` truncates (``__to<T>(x)``, C's conversion),
  ``_rd`` / ``_ru`` take ``__floor`` / ``__ceil`` first, ``_rn`` rounds to nearest with ties to
  even: ``f = floor(x)``, then ``f + 1`` above the half, ``f`` below it, and at the half the even
  one of the two (``f - 2 floor(f / 2)`` is 1 where ``f`` is odd);
* the bits of a value as another type (``__float_as_int``, ``__int_as_float``, ...): a builtin of
  the lifting (lift/arith.py), a bit cast in the kernel.
"""

from __future__ import annotations

from ..errors import Span
from . import ast as A

_FLOATS = {"half": "f16", "float": "f32", "double": "f64", "bfloat16": "bf16"}
_INTS = {"int": "s32", "uint": "u32", "ll": "s64", "ull": "u64"}


def _table() -> dict[str, tuple[str, str]]:
    """name -> (the element type it converts to, the rounding mode: '' / rn / rz / rd / ru)."""
    t: dict[str, tuple[str, str]] = {
        "__float2half": ("f16", ""), "__float2half_rn": ("f16", ""), "__half2float": ("f32", ""),
        "__float2bfloat16": ("bf16", ""), "__float2bfloat16_rn": ("bf16", ""), "__bfloat162float": ("f32", ""),
        "__double2float_rn": ("f32", ""), "__half2double": ("f64", ""),
    }  # fmt: skip
    for src in _FLOATS:
        for dst, dt in _INTS.items():
            for mode in ("rn", "rz", "rd", "ru"):
                t[f"__{src}2{dst}_{mode}"] = (dt, mode)
    for src in _INTS:
        for dst, dt in _FLOATS.items():
            if dst != "bfloat16":
                t[f"__{src}2{dst}_rn"] = (dt, "")
    return t


CONVERSIONS = _table()
# the bits of a value as another type of its width: the builtin of the lifting that computes it
# (lift/arith.py BITCASTS), a name no program can spell (Croqtile has no such builtin)
BITCASTS = {
    "__float_as_int": "__bits_f32_as_s32",
    "__float_as_uint": "__bits_f32_as_u32",
    "__int_as_float": "__bits_s32_as_f32",
    "__uint_as_float": "__bits_u32_as_f32",
    "__double_as_longlong": "__bits_f64_as_s64",
    "__longlong_as_double": "__bits_s64_as_f64",
}


def conversion(name: str, arg: A.Expr, sp: Span | None) -> A.Expr:
    """The Croqtile expression of conversion intrinsic ``name`` (a key of CONVERSIONS) of ``arg``."""
    to, mode = CONVERSIONS[name]

    def paren(e: A.Expr) -> A.Expr:
        return A.Paren(e, span=sp)

    def num(v: float) -> A.Expr:
        return A.FloatLit(v, f"{v}f", span=sp)

    if mode == "rd":
        arg = A.Builtin("__floor", [arg], span=sp)
    elif mode == "ru":
        arg = A.Builtin("__ceil", [arg], span=sp)
    elif mode == "rn":
        f = A.Builtin("__floor", [arg], span=sp)
        frac = paren(A.Binary("-", arg, f, span=sp))
        odd = paren(A.Binary("-", f, paren(A.Binary("*", num(2.0), A.Builtin("__floor", [paren(A.Binary("*", f, num(0.5), span=sp))], span=sp), span=sp)), span=sp))  # fmt: skip
        tie = paren(A.Binary("+", f, odd, span=sp))
        below = paren(A.Ternary(A.Binary("<", frac, num(0.5), span=sp), f, tie, span=sp))
        arg = paren(A.Ternary(A.Binary(">", frac, num(0.5), span=sp), paren(A.Binary("+", f, num(1.0), span=sp)), below, span=sp))  # fmt: skip
    return A.Cast(to, False, arg, span=sp)
