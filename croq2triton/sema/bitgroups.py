"""Operators that group otherwise than in C (LANGUAGE.md 5): Croqtile binds the bitwise ``& ^ |``
tighter than ``+``, ``<<`` and ``==`` (and all three at one level), and its unary ``!`` / ``-``
looser than them, so C code ported as written computes something else without any error:
``h ^ h >> 16`` is ``(h ^ h) >> 16`` (0), ``v & 6 == 6`` is ``(v & 6) == 6``, ``!v & 1`` is
``!(v & 1)``, ``a | b & c`` is ``(a | b) & c``.  The grouping is the language's and the program is
valid, so ``check`` warns where an operand that is not parenthesised would have grouped otherwise
under C's precedence, and says how Croqtile reads it."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from ..frontend.printer import Printer

# C's binary precedence, higher binds tighter (all left-associative)
_C = {
    "*": 10, "/": 10, "%": 10,
    "+": 9, "-": 9,
    "<<": 8, ">>": 8,
    "<": 7, "<=": 7, ">": 7, ">=": 7,
    "==": 6, "!=": 6,
    "&": 5, "^": 4, "|": 3,
    "&&": 2, "||": 1,
}  # fmt: skip
_BITWISE = {"&", "^", "|"}


def bit_group_warnings(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.Binary) and n.op in _C:
            for side, child in (("lhs", n.lhs), ("rhs", n.rhs)):
                if not (isinstance(child, A.Binary) and child.op in _C) or not {n.op, child.op} & _BITWISE:
                    continue
                inner, outer = _C[child.op], _C[n.op]
                if inner < outer or (side == "rhs" and inner == outer):
                    same = {n.op, child.op} <= _BITWISE  # one level in Croqtile: left to right
                    why = f"'{child.op}' and '{n.op}' group left to right" if same else None
                    out.append(_warn(n, why or f"'{child.op}' binds tighter than '{n.op}'"))
                    break
        elif _unary_over_bitwise(n):  # (C's unary operators bind tighter than any binary one)
            assert isinstance(n, A.Unary) and isinstance(n.operand, A.Binary)
            out.append(_warn(n, f"unary '{n.op}' applies to the whole '{n.operand.op}'"))
    return out


def _unary_over_bitwise(n: A.Node) -> bool:
    return (
        isinstance(n, A.Unary) and n.op in ("!", "-") and isinstance(n.operand, A.Binary) and n.operand.op in _BITWISE
    )


def _warn(n: A.Expr, why: str) -> Diagnostic:
    grouped = _grouped(n)
    return Diagnostic(
        "warning",
        f"{why} here, unlike in C (LANGUAGE.md 5): this reads as '{grouped}'",
        n.span,
        "add parentheses to say which grouping you mean",
    )


def _grouped(n: A.Expr) -> str:
    """``n`` printed with its operations' grouping made explicit."""
    if isinstance(n, A.Binary):
        return f"{_part(n.lhs)} {n.op} {_part(n.rhs)}"
    if isinstance(n, A.Unary):
        return f"{n.op}{_part(n.operand)}"
    return Printer().expr(n)


def _part(n: A.Expr) -> str:
    return f"({_grouped(n)})" if isinstance(n, (A.Binary, A.Unary)) else Printer().expr(n)
