"""What kind of number an expression is, where the source shows it for sure: ``int``, ``float`` or
``bool`` (None where it is not known statically or is no number).

Read from literals, the declared types of scalars, parameters, buffers and fragments (an element
``x.at(..)`` has its tensor's element type, LANGUAGE.md 7.5), conversions ``__to<T>(..)``,
integer builtins (``cdiv``, ``|s|``, ``#v``, ``t(k)``), and C's rules for the operators (LANGUAGE.md
4.4, 7.7: a comparison is a bool, arithmetic with a float operand is a float).  Used by the checks
of the places that take an integer (sema/integers.py) and of conditions (sema/wrongkinds.py).
"""

from __future__ import annotations

from ..frontend import ast as A
from .scopes import Binding, Resolution
from .types import TYPES

_CMP = frozenset({"==", "!=", "<", ">", "<=", ">=", "&&", "||"})
_INT_BUILTINS = frozenset({"cdiv", "__alignup", "__aligndown"})
_FLOAT_BUILTINS = frozenset(
    {
        "__exp", "__exp2f", "__expm1", "__log", "__log1p", "__pow", "__sqrt", "__rsqrt", "__frcp_rn",
        "__sin", "__cos", "__tan", "__asin", "__acos", "__atan", "__atan2", "__sinh", "__cosh", "__tanh",
        "__ceil", "__floor", "__round", "__fabs", "__fmaf", "__gelu", "__sigmoid", "__softplus",
    }
)  # fmt: skip


def number_kind(elem: str | None) -> str | None:
    """``int``, ``float`` or ``bool`` for an element type's name (``int``, ``bool`` included)."""
    t = TYPES.get(elem or "")
    if t is None:
        return None
    return {"float": "float", "int": "int", "uint": "int", "bool": "bool"}[t.kind]


class ValueTypes:
    """The number kinds of one function's expressions."""

    def __init__(self, fn: A.CoFunction, res: Resolution) -> None:
        self.res = res
        self.declared: dict[tuple[int, str], str] = {}  # (start of the name's span, name) -> element type
        for p in fn.params:
            if p.name and p.span is not None and p.type.elem:
                self.declared[(p.span.start, p.name)] = p.type.elem
            elif p.name and p.span is not None and p.type.kind in ("int", "bool"):
                self.declared[(p.span.start, p.name)] = p.type.kind
        for n in fn.walk():
            if isinstance(n, (A.SpannedDecl, A.FragDecl, A.ScalarDecl)):
                elem = n.type if isinstance(n, A.ScalarDecl) else n.elem
                for d in n.items:
                    sp = d.span or n.span
                    if elem and sp is not None:
                        self.declared[(sp.start, d.name)] = elem
            elif isinstance(n, A.FragInit) and n.elem and n.span is not None:
                self.declared[(n.span.start, n.name)] = n.elem
        self._seen: set[int] = set()
        self._known: dict[int, str | None] = {}  # id(binding) -> the kind of its value

    def elem_of(self, b: Binding) -> str | None:
        """The declared element type of a scalar, a tensor, a buffer or a fragment."""
        return self.declared.get((b.span.start, b.name)) if b.span is not None else None

    def binding(self, e: A.Expr) -> Binding | None:
        return self.res.binding(e) if isinstance(e, A.Name) else None

    def kind(self, e: A.Expr | None) -> str | None:
        """``int``, ``float``, ``bool``, or None (not known)."""
        if e is None:
            return None
        if isinstance(e, A.IntLit):
            return "int"
        if isinstance(e, (A.FloatLit, A.InfLit)):
            return "float"
        if isinstance(e, A.BoolLit):
            return "bool"
        if isinstance(e, (A.UBound, A.SizeOf, A.GetIth)):
            return "int"
        if isinstance(e, A.Paren):
            return self.kind(e.expr)
        if isinstance(e, A.Cast):
            return None if e.is_string else number_kind(e.type)
        if isinstance(e, A.Builtin):
            if e.name in _INT_BUILTINS:
                return "int"
            return "float" if e.name in _FLOAT_BUILTINS else None
        if isinstance(e, A.Name):
            return self._name(e)
        if isinstance(e, A.At):
            root = e.base
            while isinstance(root, (A.View, A.Index, A.Paren)):
                root = root.expr if isinstance(root, A.Paren) else root.base
            b = self.binding(root)
            return number_kind(self.elem_of(b)) if b is not None and b.kind in ("spanned", "frag") else None
        if isinstance(e, A.Unary):
            if e.op == "!":
                return "bool"
            k = self.kind(e.operand)
            return "int" if e.op == "~" and k in ("int", "bool") else k if e.op in ("-", "+") else None
        if isinstance(e, A.Binary):
            if e.op in _CMP:
                return "bool"
            if e.op in ("#", "#+", "#-"):
                return "int"
            sides = {self.kind(e.lhs), self.kind(e.rhs)}
            if "float" in sides:
                return "float"
            return "int" if sides <= {"int", "bool"} else None
        if isinstance(e, A.Ternary):
            sides = {self.kind(e.then), self.kind(e.other)}
            return "float" if "float" in sides else sides.pop() if len(sides) == 1 else None
        return None

    def _name(self, e: A.Name) -> str | None:
        b = self.binding(e)
        if b is None:
            return None
        if b.kind in ("int", "dim") or (b.kind == "bounded" and len(b.bounds or []) == 1):
            return "int"
        if b.kind == "bool":
            return "bool"
        if b.kind != "elem":
            return None
        declared = self.elem_of(b)
        if declared is not None:
            return number_kind(declared)
        if b.value is None or id(b) in self._seen:  # (``x = x + 1`` refers to an earlier ``x``)
            return None
        if id(b) in self._known:
            return self._known[id(b)]
        self._seen.add(id(b))
        try:
            found = self._known[id(b)] = self.kind(b.value)
        finally:
            self._seen.discard(id(b))
        return found
