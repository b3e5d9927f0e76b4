"""The builtins of Croqtile (LANGUAGE.md 7.7): each one's name, parameters and what it computes.

One table for every stage: the lexer takes the names of its tokens from it (``MATHFN``,
``ATOMIC``, ``BARFN``), the static checks the number of arguments of each call (sema/calls.py)
and the lifting what a builtin it does not translate computes.  ``cdiv`` and ``__to`` are keywords
of the grammar, which fixes their arguments; they are here for the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["math", "atomic", "barrier", "keyword"]


@dataclass(frozen=True)
class Builtin:
    name: str
    params: tuple[str, ...]  # as LANGUAGE.md names them; their number is the builtin's arity
    kind: Kind  # its token: a math function, an atomic, a raw barrier, or a keyword of the grammar
    computes: str

    @property
    def arity(self) -> int:
        return len(self.params)

    @property
    def signature(self) -> str:
        """The call as LANGUAGE.md writes it: ``__max(a, b)``, ``__to<T>(e)``."""
        targs = "<T>" if self.name == "__to" else ""
        return f"{self.name}{targs}({', '.join(self.params)})"


def _math(name: str, params: str, computes: str) -> Builtin:
    return Builtin(name, tuple(params.split()), "math", computes)


def _atomic(name: str, computes: str) -> Builtin:
    params = ("x.at(..)", "cmp", "v") if name == "__atomic_cas" else ("x.at(..)", "v")
    return Builtin(name, params, "atomic", f"{computes}; returns the element's old value")


_ALL = [
    # math builtins on element scalars, in f32 (LANGUAGE.md 7.7)
    _math("__exp", "x", "e to the power x"),
    _math("__exp2f", "x", "2 to the power x"),
    _math("__expm1", "x", "e to the power x, minus 1"),
    _math("__log", "x", "the natural logarithm of x"),
    _math("__log1p", "x", "the natural logarithm of 1 + x"),
    _math("__pow", "x y", "x to the power y"),
    _math("__sqrt", "x", "the square root of x"),
    _math("__rsqrt", "x", "1 / sqrt(x)"),
    _math("__frcp_rn", "x", "1 / x, rounded to the nearest"),
    _math("__sin", "x", "the sine of x"),
    _math("__cos", "x", "the cosine of x"),
    _math("__tan", "x", "the tangent of x"),
    _math("__asin", "x", "the arc sine of x"),
    _math("__acos", "x", "the arc cosine of x"),
    _math("__atan", "x", "the arc tangent of x"),
    _math("__atan2", "y x", "the angle of the point (x, y)"),
    _math("__sinh", "x", "the hyperbolic sine of x"),
    _math("__cosh", "x", "the hyperbolic cosine of x"),
    _math("__tanh", "x", "the hyperbolic tangent of x"),
    _math("__ceil", "x", "x rounded up to an integer"),
    _math("__floor", "x", "x rounded down to an integer"),
    _math("__round", "x", "x rounded to the nearest integer"),
    _math("__fabs", "x", "the absolute value of x"),
    _math("__sign", "x", "the sign of x: -1, 0 or 1"),
    _math("__isfinite", "x", "whether x is finite"),
    _math("__max", "a b", "the larger of a and b"),
    _math("__min", "a b", "the smaller of a and b"),
    _math("__fmaf", "a b c", "a * b + c, rounded once"),
    _math("__gelu", "x", "the GELU activation of x"),
    _math("__sigmoid", "x", "1 / (1 + e to the power -x)"),
    _math("__softplus", "x", "the natural logarithm of 1 + e to the power x"),
    # integers
    _math("__alignup", "x a", "x rounded up to a multiple of a"),
    _math("__aligndown", "x a", "x rounded down to a multiple of a"),
    Builtin("cdiv", ("a", "b"), "keyword", "(a + b - 1) / b: the ceiling of a / b"),
    # conversions
    Builtin("__to", ("e",), "keyword", "e converted to the type T"),
    # atomics on an element of shared or global data
    _atomic("__atomic_add", "adds v to the element"),
    _atomic("__atomic_sub", "subtracts v from the element"),
    _atomic("__atomic_exch", "stores v into the element"),
    _atomic("__atomic_min", "stores the smaller of the element and v"),
    _atomic("__atomic_max", "stores the larger of the element and v"),
    _atomic("__atomic_and", "ands v into the element"),
    _atomic("__atomic_or", "ors v into the element"),
    _atomic("__atomic_xor", "xors v into the element"),
    _atomic("__atomic_cas", "stores v where the element equals cmp"),
    # raw named barriers
    Builtin("__bar_arrive", ("id", "n"), "barrier", "arrives at the named barrier id of n threads"),
    Builtin("__bar_sync", ("id", "n"), "barrier", "waits at the named barrier id of n threads"),
]
BUILTINS: dict[str, Builtin] = {b.name: b for b in _ALL}


def names(kind: Kind) -> frozenset[str]:
    """The builtins of one kind (the lexer's tokens)."""
    return frozenset(b.name for b in _ALL if b.kind == kind)


# ``__to<"C type">(e)`` (LANGUAGE.md 7.7) emits a C-style cast; where the type is a C/C++ scalar
# type it is the conversion to the element type of that width and kind
C_SCALARS = {
    "int": "s32",
    "signed": "s32",
    "signed int": "s32",
    "int32_t": "s32",
    "unsigned": "u32",
    "unsigned int": "u32",
    "uint32_t": "u32",
    "long long": "s64",
    "long long int": "s64",
    "int64_t": "s64",
    "unsigned long long": "u64",
    "uint64_t": "u64",
    "size_t": "u64",
    "short": "s16",
    "int16_t": "s16",
    "unsigned short": "u16",
    "uint16_t": "u16",
    "signed char": "s8",
    "int8_t": "s8",
    "unsigned char": "u8",
    "uint8_t": "u8",
    "float": "f32",
    "double": "f64",
    "half": "f16",
    "__half": "f16",
    "__nv_bfloat16": "bf16",
    "bool": "bool",
}


def c_scalar(text: str) -> str | None:
    """The element type a C scalar type spelled ``text`` (with or without its quotes) converts to
    (None: not one)."""
    return C_SCALARS.get(" ".join(text.strip('"').split()))
