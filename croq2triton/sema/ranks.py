"""Element accesses with another number of indices than their tensor's rank (LANGUAGE.md 7.5:
``x.at(i, j)`` takes one index per dimension; a bounded ituple index counts as its components).

Checked where the tensor's rank is written (a parameter or a buffer declared with its extents,
named shapes spelled out) and every index's count is plain: an integer expression counts one, an
index tuple ``{a, b}`` or a bounded ituple its components; an index that computes with ituples is
left to the lifting.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution, shape_extents


def rank_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if not isinstance(n, A.At) or not isinstance(n.base, A.Name):
            continue
        b = res.binding(n.base)
        if b is None or b.kind != "spanned" or not b.dims:
            continue
        extents = shape_extents(A.MdspanLit(list(b.dims)), lambda x: res.binding(x))
        if extents is None:
            continue
        counts = [_count(i, res) for i in n.indices]
        if None in counts:
            continue
        given = sum(c for c in counts if c is not None)
        if given != len(extents):
            out.append(
                Diagnostic(
                    "error",
                    f"'{n.base.name}' has {len(extents)} dimension{'s' if len(extents) != 1 else ''},"
                    f" but '.at' gives {given} ind{'ices' if given != 1 else 'ex'}",
                    n.span,
                    f"give one index per dimension of '{n.base.name}'",
                )
            )
    return out


def view_rank_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    """The first operation of a view of a tensor or buffer of written rank with another number of
    extents, indices or ``.at`` / ``.from`` indices than it takes (``x.subspan(64, 32).at(b)`` of a
    2-D ``x``; a ``.view`` may change the rank, its ``.from`` gives one index per extent or per
    dimension of the tensor)."""
    out: list[Diagnostic] = []
    for n in fn.walk():
        if not isinstance(n, A.View) or not n.ops or not isinstance(n.base, A.Name):
            continue
        b = res.binding(n.base)
        if b is None or b.kind != "spanned" or not b.dims:
            continue
        extents = shape_extents(A.MdspanLit(list(b.dims)), lambda x: res.binding(x))
        op = n.ops[0]
        if extents is None or op.kind not in ("subspan", "chunkat", "modspan", "view"):
            continue
        args = _total(op.args, res)
        rank = len(extents)
        want = args if op.kind == "view" else rank
        if op.kind != "view" and args is not None and args != rank:
            what = ("index" if args == 1 else "indices") if op.kind == "chunkat" else "extent" + "s" * (args != 1)
            out.append(_view_error(n.base.name, rank, f"'.{op.kind}' gives {args} {what}", op))
        elif (
            op.at is not None
            and want is not None
            and (given := _total(op.at, res)) is not None
            and given != want
            and not (op.kind == "view" and given == rank)  # (the origin in the tensor's coordinates)
        ):
            after = "from" if op.kind == "view" else "at"
            whose = (
                f"the view's {want} extents or the {rank} dimensions of '{n.base.name}'"
                if op.kind == "view"
                else f"the {rank} dimensions of '{n.base.name}'"
            )
            out.append(
                Diagnostic(
                    "error",
                    f"'.{after}' gives {given} ind{'ices' if given != 1 else 'ex'} for {whose}",
                    op.span,
                    f"give the origin as one index per extent of the '.{op.kind}' (its own row-major order)"
                    f" or per dimension of '{n.base.name}'"
                    if op.kind == "view"
                    else f"give one index per extent of the '.{op.kind}'",
                )
            )
    return out


def _view_error(name: str, rank: int, what: str, op: A.ViewOp) -> Diagnostic:
    return Diagnostic(
        "error",
        f"'{name}' has {rank} dimension{'s' if rank != 1 else ''}, but {what}",
        op.span,
        f"give one per dimension of '{name}' ('_' keeps a whole dimension)",
    )


def _total(items: list[A.Expr], res: Resolution) -> int | None:
    counts = [1 if isinstance(x, A.Name) and x.name == "_" else _count(x, res) for x in items]
    return None if None in counts else sum(c for c in counts if c is not None)


def _count(e: A.Expr, res: Resolution) -> int | None:
    """How many indices ``e`` stands for (None: not plain)."""
    if isinstance(e, A.Paren):
        return _count(e.expr, res)
    if isinstance(e, A.ItupleLit):
        counts = [_count(x, res) for x in e.items]
        return None if None in counts else sum(c for c in counts if c is not None)
    if isinstance(e, A.Name):
        b = res.binding(e)
        if b is None:
            return None
        if b.kind == "bounded":  # an index tuple of unknown extents: not plain
            return len(b.bounds) if b.bounds and None not in b.bounds else None
        if b.kind in ("int", "elem", "dim"):
            return 1
        return None
    for x in e.walk():
        if isinstance(x, A.Name):
            b = res.binding(x)
            if (
                b is None
                or b.kind in ("ituple", "mdspan", "unknown")
                or (b.kind == "bounded" and len(b.bounds or []) != 1)
            ):
                return None
        if isinstance(x, (A.ItupleLit, A.MdspanLit, A.Member, A.Index)):
            return None
    return 1
