"""The bounds of ``parallel`` are counts of instances (LANGUAGE.md 7.3, 7.2: a parallel index is a
bounded int whose bound is an integer): a bound that is a floating-point or boolean value is an
error.  The type is read where the expression shows it: literals, scalar parameters, arithmetic
and comparisons of them; anything else is left to the lifting."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .tiling import source_text

_FLOATS = frozenset({"f16", "bf16", "f32", "f64", "float", "double", "half", "tf32"})
_CMP = frozenset({"==", "!=", "<", ">", "<=", ">=", "&&", "||"})


def parallel_bound_errors(fn: A.CoFunction) -> list[Diagnostic]:
    scalars = _scalars(fn)
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.PBy):
            for b in n.bound:
                items = b.items if isinstance(b, A.MdspanLit) else [b]
                for e in items:
                    t = _type(e, scalars)
                    if t is not None:
                        out.append(_bound_error(e, t))
    return out


def buffer_extent_errors(fn: A.CoFunction) -> list[Diagnostic]:
    """A buffer's extents count its elements (LANGUAGE.md 7.5, 7.1: a shape is a list of integer
    extents): a declared extent that is a floating-point or boolean value is an error."""
    scalars = _scalars(fn)
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.SpannedDecl) and n.shape is not None:
            for e in n.shape:
                t = _type(e, scalars)
                if t is not None:
                    what = "a floating-point value" if t == "float" else "a boolean value"
                    out.append(
                        Diagnostic(
                            "error",
                            f"a buffer's extent counts its elements, but '{source_text(e)}' is {what}",
                            e.span,
                            "give each extent an integer expression",
                        )
                    )
    return out


def _scalars(fn: A.CoFunction) -> dict[str, str]:
    """The float and bool scalar parameters of ``fn``."""
    out: dict[str, str] = {}
    for p in fn.params:
        if p.name and p.type.kind == "bool":
            out[p.name] = "bool"
        elif p.name and p.type.kind == "elem" and (p.type.elem or "") in _FLOATS:
            out[p.name] = "float"
    return out


def _type(e: A.Expr, scalars: dict[str, str]) -> str | None:
    """'float' or 'bool' where ``e`` is one for sure; None for an integer or where it is not known."""
    if isinstance(e, A.FloatLit):
        return "float"
    if isinstance(e, A.BoolLit):
        return "bool"
    if isinstance(e, A.Name):
        return scalars.get(e.name)
    if isinstance(e, A.Paren):
        return _type(e.expr, scalars)
    if isinstance(e, A.Unary):
        return "bool" if e.op == "!" else _type(e.operand, scalars)
    if isinstance(e, A.Binary):
        if e.op in _CMP:
            return "bool"
        sides = {_type(e.lhs, scalars), _type(e.rhs, scalars)}
        return "float" if "float" in sides else "bool" if "bool" in sides else None
    return None


def _bound_error(e: A.Expr, t: str) -> Diagnostic:
    what = "a floating-point value" if t == "float" else "a boolean value"
    return Diagnostic(
        "error",
        f"the bound of a 'parallel' counts its instances, but '{source_text(e)}' is {what}",
        e.span,
        "give it an integer expression: the number of instances along that dimension",
    )
