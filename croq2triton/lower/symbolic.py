"""Spellings: launch-time extents compared by meaning and spelled back for the user.

Extents known only at launch are carried as two spellings (``values.Val``): kernel code, which
differs with where the value was computed (``M // _grid_1`` beside ``M // tl.cdiv(M, 64)``),
and the launcher expression (``_rt.idiv(M, _rt.cdiv(M, 64))``), which is built the same way
from the same source.  ``host_key`` normalises a launcher expression so that equal keys mean
equal values; ``user_text`` spells it back in Croqtile for diagnostics (``M / cdiv(M, 64)``),
never with generated names.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

from ..lift.names import RESERVED

_COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)


def _terms(node: ast.expr, op: type) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, op):
        return _terms(node.left, op) + _terms(node.right, op)
    return [node]


class _Normalise(ast.NodeTransformer):
    """Operands of chains of one commutative operator in a canonical order."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        op = type(node.op)
        if not issubclass(op, _COMMUTATIVE):
            return node
        terms = sorted(_terms(node, op), key=ast.dump)
        out = terms[0]
        for t in terms[1:]:
            out = ast.BinOp(out, op(), t)
        return out


@functools.lru_cache(maxsize=4096)
def host_key(host: str) -> str:
    """A normalised form of a launcher expression: equal keys mean equal values at launch
    (spelling, redundant parentheses and the order of commutative operands do not matter)."""
    try:
        tree = ast.parse(host.strip(), mode="eval")
    except SyntaxError:
        return " ".join(host.split())
    return ast.dump(_Normalise().visit(tree), annotate_fields=False)


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/", ast.Mod: "%"}
_CALLS = {"idiv": "/", "imod": "%"}  # runtime.launch helpers with C semantics
_FUNCS = {"cdiv": "cdiv", "min": "min", "max": "max", "minimum": "min", "maximum": "max"}


class _NotUser(Exception):
    """The expression mentions a name the user did not write."""


def _user_name(name: str) -> str:
    base = name[:-1]
    if name.endswith("_") and (base in RESERVED or base.startswith("_")):
        return base  # ``safe`` renamed it
    if name.startswith("_"):
        raise _NotUser
    return name


def _spell(e: ast.expr, top: bool = True) -> str:
    if isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return repr(e.value)
    if isinstance(e, ast.Name):
        return _user_name(e.id)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        return f"-{_spell(e.operand, False)}"
    if isinstance(e, ast.BinOp) and type(e.op) in _BINOPS:
        text = f"{_spell(e.left, False)} {_BINOPS[type(e.op)]} {_spell(e.right, False)}"
        return text if top else f"({text})"
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name):
        mod, fn = e.func.value.id, e.func.attr
        if mod in ("_rt", "tl") and len(e.args) == 2 and not e.keywords:
            if fn in _CALLS:
                text = f"{_spell(e.args[0], False)} {_CALLS[fn]} {_spell(e.args[1], False)}"
                return text if top else f"({text})"
            if fn in _FUNCS:
                return f"{_FUNCS[fn]}({_spell(e.args[0])}, {_spell(e.args[1])})"
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in _FUNCS and len(e.args) == 2:
        return f"{_FUNCS[e.func.id]}({_spell(e.args[0])}, {_spell(e.args[1])})"
    raise _NotUser


def user_text(v: Any) -> str | None:
    """A ``values.Val`` extent spelled in Croqtile (``32``, ``K / cdiv(K, 32)``), or None when it
    is not known before the launch (its kernel spelling uses names of the generated code)."""
    if v.is_const:
        return str(v.const)
    if v.host is None:
        return None
    try:
        return _spell(ast.parse(v.host.strip(), mode="eval").body)
    except (SyntaxError, _NotUser, RecursionError):
        return None


def shape_text(dims: list[Any] | None, pdims: list[str] | None = None) -> str:
    """``[64, K / cdiv(K, 32)]``: a shape for diagnostics, from real extents where known."""
    if dims is not None:
        parts = [user_text(d) or "(a run-time extent)" for d in dims]
    else:
        parts = [p if p.isdigit() else "(a run-time extent)" for p in pdims or []]
    return f"[{', '.join(parts)}]"
