"""Names bound over a shape (LANGUAGE.md 7.4, 7.2): ``with {x, y} in S`` and ``foreach {x, y} in S``
give one name to each dimension of ``S``, so the names are as many as ``S``'s rank.  Checked where
the rank is written: a shape literal, a named shape, or ``x.span`` of a buffer or parameter."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution, shape_extents
from .tiling import source_text


def within_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.Within) and (what := _no_shape(n.shape, res)) is not None:
            out.append(_not_a_shape(n, what))
            continue
        if isinstance(n, A.Within) and n.vars:
            extents = shape_extents(n.shape, lambda x: res.binding(x))
            if extents is not None and all(_plain(e, res) for e in extents) and len(extents) != len(n.vars):
                out.append(_count_error(n, len(extents)))
    return out


# kinds of bindings that are no shape and no extent: what 'in' cannot bound a name by
_NO_SHAPE = {
    "spanned": "spanned data (a tensor or buffer)", "future": "a future", "event": "an event",
    "bool": "a bool", "stream": "a stream",
}  # fmt: skip


def _no_shape(e: A.Expr, res: Resolution) -> str | None:
    e = A.unparen(e)
    b = res.binding(e) if isinstance(e, A.Name) else None
    return None if b is None else _NO_SHAPE.get(b.kind)


def _not_a_shape(w: A.Within, what: str) -> Diagnostic:
    text = source_text(w.shape)
    return Diagnostic(
        "error",
        f"'{' '.join(w.names) or '_'} in {text}': '{text}' is {what}, not a shape or an extent",
        w.shape.span or w.span,
        f"bound the index by the shape of the data, '{text}.span', or by an extent",
    )


def _plain(e: A.Expr, res: Resolution) -> bool:
    """Is ``e`` one extent for sure (no shape or tuple inside it: ``cdiv(x.span, {4, 8})`` is a
    shape of several)?"""
    for x in e.walk():
        if isinstance(x, (A.Member, A.ItupleLit, A.MdspanLit, A.Builtin, A.Call)):
            return False
        if isinstance(x, A.Name):
            b = res.binding(x)
            if b is not None and b.kind not in ("int", "dim", "elem"):
                return False
    return True


def _count_error(w: A.Within, rank: int) -> Diagnostic:
    names = ", ".join(w.vars or [])
    k = len(w.vars or [])
    return Diagnostic(
        "error",
        f"{{{names}}} names {k} dimension{'s' if k != 1 else ''}, but '{source_text(w.shape)}' has {rank}",
        w.span,
        f"give one name per dimension of '{source_text(w.shape)}', or bind it whole: 'i in {source_text(w.shape)}'",
    )
