"""Constant positions outside a shape or an int tuple (LANGUAGE.md 7.1): ``t(k)`` is element ``k``
of an ituple or an mdspan, ``x.span(d)`` the extent of dimension ``d`` of spanned data (the
positions a derivation ``s [(0) / 2, 8]`` names are checked where it is lifted).  A position
``k`` of an ituple or mdspan of ``n`` elements lies in ``[-n, n)`` (a negative one counts from the
end, as croq2triton reads it); a dimension of ``x.span(d)`` lies in ``[0, n)``.  Checked where the
rank is written: a literal value, a named shape or tuple made of them, a tensor or buffer declared
with its extents.  (``v(k)`` of a bounded index is the index ``k`` among ``#v``, LANGUAGE.md 7.2,
and has no rank.)
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .consteval import const_int
from .scopes import Resolution, shape_extents
from .tiling import source_text


def constant_position_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.GetIth):
            k = const_int(n.index)
            base = A.unparen(n.base)
            if k is None:
                continue
            if isinstance(base, A.Member) and base.member == "span":
                rank = _span_rank(base, res)
                if rank is not None and not 0 <= k < rank:
                    out.append(_dimension_error(n, base, k, rank))
            elif isinstance(base, A.Name):
                found = _rank(base, res)
                if found is not None and not -found[1] <= k < found[1]:
                    out.append(_position_error(n, n.index, base.name, found, k))
    return out


def _span_rank(m: A.Member, res: Resolution) -> int | None:
    """The rank of ``x.span`` of a tensor or buffer declared with its extents."""
    b = res.binding(m.base) if isinstance(m.base, A.Name) else None
    if b is None or b.kind != "spanned" or not b.dims:
        return None
    extents = shape_extents(A.MdspanLit(list(b.dims)), res.binding)
    return len(extents) if extents is not None else None


def _rank(name: A.Name, res: Resolution) -> tuple[str, int] | None:
    """('shape' | 'ituple', how many elements) of a named shape or int tuple of written rank."""
    b = res.binding(name)
    if b is None or b.kind not in ("mdspan", "ituple") or b.value is None:
        return None
    n = _count(b.value, res, 0)
    return None if n is None else ("shape" if b.kind == "mdspan" else "ituple", n)


def _count(e: A.Expr, res: Resolution, depth: int) -> int | None:
    """How many elements the shape or int tuple ``e`` has (None: not written out)."""
    if depth > 16:
        return None
    e = A.unparen(e)
    if isinstance(e, (A.MdspanLit, A.ItupleLit)):
        total = 0
        for x in e.items:
            x = A.unparen(x)
            if isinstance(x, (A.MdspanLit, A.ItupleLit)) or (isinstance(x, A.Member) and x.member == "span"):
                sub = _count(x, res, depth + 1)
            elif isinstance(x, A.Name):
                b = res.binding(x)
                if b is None or b.kind in ("bounded", "unknown"):
                    return None
                sub = _count(x, res, depth + 1) if b.kind in ("mdspan", "ituple") else 1
            elif _tuple_valued(x, res):  # ``[b * 8]`` of an ituple ``b``: element-wise, b's count
                sub = _count(x, res, depth + 1)
            else:
                sub = 1 if not any(isinstance(y, (A.MdspanLit, A.ItupleLit, A.Member)) for y in x.walk()) else None
            if sub is None:
                return None
            total += sub
        return total
    if isinstance(e, A.Name):
        b = res.binding(e)
        if b is None or b.kind not in ("mdspan", "ituple") or b.value is None:
            return None
        return _count(b.value, res, depth + 1)
    if isinstance(e, A.Member) and e.member == "span":
        return _span_rank(e, res)
    if isinstance(e, (A.Index, A.Derive)):
        return len(e.indices if isinstance(e, A.Index) else e.items)
    if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "%"):  # element-wise (LANGUAGE.md 7.1)
        sides = [_count(x, res, depth + 1) if _tuple_valued(x, res) else 0 for x in (e.lhs, e.rhs)]
        if None in sides or sides == [0, 0]:
            return None
        return max(c for c in sides if c is not None)
    return None


def _tuple_valued(e: A.Expr, res: Resolution) -> bool:
    """Is ``e`` a shape or an int tuple, or element-wise arithmetic with one?"""
    e = A.unparen(e)
    if isinstance(e, (A.MdspanLit, A.ItupleLit)) or (isinstance(e, A.Member) and e.member == "span"):
        return True
    if isinstance(e, A.Name):
        b = res.binding(e)
        return b is not None and b.kind in ("mdspan", "ituple")
    if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "%"):
        return _tuple_valued(e.lhs, res) or _tuple_valued(e.rhs, res)
    return False


def _position_error(n: A.Node, at: A.Node, name: str, found: tuple[str, int], k: int) -> Diagnostic:
    what, count = found
    kind = "the shape" if what == "shape" else "the ituple"
    return Diagnostic(
        "error",
        f"'{source_text(n)}': {kind} '{name}' has {count} element{'s' if count != 1 else ''}, so {k} is no position"
        f" in it (0 to {count - 1}, or -{count} to -1 from the end)",
        at.span,
        "positions count from 0",
    )


def _dimension_error(n: A.GetIth, m: A.Member, k: int, rank: int) -> Diagnostic:
    name = source_text(m.base)
    return Diagnostic(
        "error",
        f"'{source_text(n)}': '{name}' has {rank} dimension{'s' if rank != 1 else ''}, so {k} is no dimension of it"
        f" (0 to {rank - 1})",
        n.index.span,
        f"'{name}.span(d)' is the extent of dimension d, counted from 0",
    )
