"""The constant evaluator: the value of a compile-time integer expression of the AST (C semantics),
for the checks of sema and for the lifting (thread counts, extents); names are seen through where
the caller says what they are (``constant_values`` knows immutable ``int`` names of a function)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..frontend import ast as A
from .carith import cdiv
from .types import TYPES

if TYPE_CHECKING:
    from .scopes import Binding, Resolution


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
    if isinstance(e, A.SizeOf) and e.expr is None and e.elem in TYPES:  # ``|f32|``: a byte size (LANGUAGE.md 4.2)
        return TYPES[e.elem].nbytes
    if isinstance(e, A.Unary) and e.op in ("-", "+"):
        v = const_int(e.operand, name_value)
        return None if v is None else (-v if e.op == "-" else v)
    if isinstance(e, A.Builtin) and e.name == "cdiv" and len(e.args) == 2:
        a, b = const_int(e.args[0], name_value), const_int(e.args[1], name_value)
        return None if a is None or not b else cdiv(a, b)
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


def static_values(res: Resolution) -> Callable[[A.Expr], int | bool | None]:
    """An evaluator of what is known when compiling, beyond integers: comparisons and logic
    (``a.span(0) > a.span(1)``), the extents of shapes and of spanned data declared with constant
    shapes (``x.span(k)``, ``s(k)``, ``|x.span|``), the bounds of bounded names (``#p``) and
    immutable ``int`` / ``bool`` names with constant values.  None where something is not known."""
    from .scopes import shape_extents

    busy: set[int] = set()

    def bound_value(b: Binding) -> int | bool | None:
        if id(b) in busy:
            return None
        busy.add(id(b))
        try:
            if b.kind in ("int", "bool") and not b.mutable and b.value is not None:
                return value(b.value)
            return None  # a bounded index takes every value below its bound ('#p' is the bound)
        finally:
            busy.discard(id(b))

    def extents(e: A.Expr) -> list[int] | None:
        """The constant extents of a shape: ``x.span``, a shape name, ``[a, b]``."""
        found = shape_extents(e, res.binding)
        if found is None:
            return None
        out = []
        for x in found:
            v = value(x)
            if not isinstance(v, int) or isinstance(v, bool):
                return None
            out.append(v)
        return out

    def value(e: A.Expr) -> int | bool | None:
        if isinstance(e, A.IntLit):
            return e.value
        if isinstance(e, A.BoolLit):
            return e.value
        if isinstance(e, A.Paren):
            return value(e.expr)
        if isinstance(e, A.Name):
            b = res.binding(e)
            return bound_value(b) if b is not None else None
        if isinstance(e, A.UBound):
            b = res.binding(e)
            if b is None or b.kind != "bounded" or b.bounds is None or len(b.bounds) != 1 or b.bounds[0] is None:
                return None
            return value(b.bounds[0])
        if isinstance(e, A.GetIth):
            whole = extents(e.base)
            k = value(e.index)
            if whole is None or not isinstance(k, int) or isinstance(k, bool) or not -len(whole) <= k < len(whole):
                return None
            return whole[k]
        if isinstance(e, A.SizeOf) and e.expr is None and e.elem in TYPES:
            return TYPES[e.elem].nbytes
        if isinstance(e, A.SizeOf) and e.expr is not None:
            whole = extents(e.expr)
            if whole is None:
                return None
            n = 1
            for x in whole:
                n *= x
            return n
        if isinstance(e, A.Unary):
            v = value(e.operand)
            if v is None:
                return None
            if e.op == "!":
                return not v
            if e.op == "-":
                return -int(v)
            return v if e.op == "+" else None
        if isinstance(e, A.Ternary):
            c = value(e.cond)
            return None if c is None else value(e.then if c else e.other)
        if isinstance(e, A.Builtin) and e.name == "cdiv" and len(e.args) == 2:
            a, b = value(e.args[0]), value(e.args[1])
            return None if a is None or not b else cdiv(int(a), int(b))
        if isinstance(e, A.Binary) and e.op not in ("#", "#+", "#-", "#*", "#/", "#%"):
            a, b = value(e.lhs), value(e.rhs)
            if a is None or b is None:
                return None
            try:
                v = fold_binary(e.op, a, b)
            except (ZeroDivisionError, TypeError, ValueError, KeyError):
                return None
            return v if isinstance(v, (int, bool)) else None
        return None

    return value


def static_shapes(res: Resolution) -> Callable[[A.Expr], list[int] | None]:
    """An evaluator of the extents of a shape known when compiling: ``[a, b]``, a shape's name,
    ``x.span`` of constant shape, an ituple, and their element-wise arithmetic with shapes of one
    rank or integers (``input.span / tile``, LANGUAGE.md 7.1).  None where one is not known."""
    from .scopes import shape_extents

    value = static_values(res)

    def ints(items: list[A.Expr]) -> list[int] | None:
        out = []
        for x in items:
            v = value(x)
            if not isinstance(v, int) or isinstance(v, bool):
                return None
            out.append(v)
        return out

    def shape(e: A.Expr) -> list[int] | None:
        if isinstance(e, A.Paren):
            return shape(e.expr)
        if isinstance(e, A.MdspanLit):  # ``[M, s, input.span / t]``: the items' extents in order
            out: list[int] = []
            for x in e.items:
                v = value(x)
                part = [v] if isinstance(v, int) and not isinstance(v, bool) else shape(x)
                if part is None:
                    return None
                out.extend(part)
            return out
        if isinstance(e, A.ItupleLit):
            return ints(list(e.items))
        if isinstance(e, A.Name):
            b = res.binding(e)
            if b is not None and b.kind == "ituple" and isinstance(b.value, A.ItupleLit):
                return ints(list(b.value.items))
        if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "%"):
            a, b = operand(e.lhs), operand(e.rhs)
            if a is None or b is None or (isinstance(a, int) and isinstance(b, int)):
                return None
            xs = a if isinstance(a, list) else [a] * len(b)  # type: ignore[arg-type]
            ys = b if isinstance(b, list) else [b] * len(xs)
            if len(xs) != len(ys):
                return None
            out = []
            for x, y in zip(xs, ys, strict=True):
                try:
                    v = fold_binary(e.op, x, y)
                except (ZeroDivisionError, TypeError, ValueError):
                    return None
                out.append(int(v))  # type: ignore[call-overload]
            return out
        found = shape_extents(e, res.binding)
        return ints(found) if found is not None else None

    def operand(e: A.Expr) -> list[int] | int | None:
        v = value(e)
        return v if isinstance(v, int) and not isinstance(v, bool) else shape(e)

    return shape
