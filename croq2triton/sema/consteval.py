"""The constant evaluator: the value of a compile-time integer expression of the AST (C semantics),
for the checks of sema and for the lifting (thread counts, extents); names are seen through where
the caller says what they are (``constant_values`` knows immutable ``int`` names of a function)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..frontend import ast as A

if TYPE_CHECKING:
    from .scopes import Resolution


def const_int(e: A.Expr, name_value: Callable[[A.Name], int | None] | None = None) -> int | None:
    """The value of an integer constant expression (C semantics: '/' and '%' truncate).

    ``name_value`` gives the value of a name (an immutable ``int`` with a constant initialiser);
    without it names are not constant.
    """
    if isinstance(e, A.IntLit):
        return e.value
    if isinstance(e, A.Name):
        return name_value(e) if name_value is not None else None
    if isinstance(e, A.Paren):
        return const_int(e.expr, name_value)
    if isinstance(e, A.Unary) and e.op in ("-", "+"):
        v = const_int(e.operand, name_value)
        return None if v is None else (-v if e.op == "-" else v)
    if isinstance(e, A.Builtin) and e.name == "cdiv" and len(e.args) == 2:
        a, b = const_int(e.args[0], name_value), const_int(e.args[1], name_value)
        return None if a is None or not b else -(-a // b)
    if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "%"):
        a, b = const_int(e.lhs, name_value), const_int(e.rhs, name_value)
        if a is None or b is None or (e.op in ("/", "%") and b == 0):
            return None
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return q if e.op == "/" else a - q * b
    return None


def fold_binary(op: str, a: object, b: object) -> object:
    """``a op b`` of two constants with C semantics (integer ``/`` and ``%`` truncate, ``&&`` and
    ``||`` give a bool); ZeroDivisionError, TypeError or ValueError where it has no value."""
    if isinstance(a, bool) or isinstance(b, bool):
        a, b = int(a), int(b)  # type: ignore[arg-type]
    if op == "+":
        return a + b  # type: ignore[operator]
    if op == "-":
        return a - b  # type: ignore[operator]
    if op == "*":
        return a * b  # type: ignore[operator]
    if op in ("/", "%"):
        if b == 0:
            raise ZeroDivisionError
        if isinstance(a, int) and isinstance(b, int):
            q = abs(a) // abs(b)
            q = q if (a >= 0) == (b >= 0) else -q
            return q if op == "/" else a - b * q
        return a / b if op == "/" else a % b  # type: ignore[operator]
    if op == "<<":
        return a << b  # type: ignore[operator]
    if op == ">>":
        return a >> b  # type: ignore[operator]
    if op == "&":
        return a & b  # type: ignore[operator]
    if op == "|":
        return a | b  # type: ignore[operator]
    if op == "^":
        return a ^ b  # type: ignore[operator]
    if op == "&&":
        return bool(a) and bool(b)
    if op == "||":
        return bool(a) or bool(b)
    cmp = {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "==": a == b, "!=": a != b}  # type: ignore[operator]
    return cmp[op]


def constant_values(res: Resolution) -> Callable[[A.Expr], int | None]:
    """An evaluator of compile-time integers that sees through immutable ``int`` names."""
    busy: set[int] = set()

    def name_value(n: A.Name) -> int | None:
        b = res.binding(n)
        if b is None or b.kind != "int" or b.mutable or b.value is None or id(b) in busy:
            return None
        busy.add(id(b))
        try:
            return const_int(b.value, name_value)
        finally:
            busy.discard(id(b))

    return lambda e: const_int(e, name_value)
