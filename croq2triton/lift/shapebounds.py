"""Bounds of a ``parallel`` that are shapes (LANGUAGE.md 7.1): ``parallel {x, y} by [sh]`` with
``sh : [4, 8]``, ``[d.span]``, an ``ituple`` or ``[sh(0), 8]`` give one bound per extent.  Spelled
out here, before any analysis of the kernel, so every later pass sees one bound per variable."""

from __future__ import annotations

import copy

from ..errors import CroqSemanticError
from ..frontend import ast as A
from .host import HostScope
from .terms import unparen


def expand_shape_bounds(top: A.Parallel, scope: HostScope) -> A.Parallel:
    """``top`` with every bound that names a shape replaced by its extents (``top`` itself when
    none does); a level whose variables do not match its bounds' count is an error."""
    if not any(_extents(b, scope) is not None for p in _levels(top) for b in p.bound):
        _check(top)
        return top
    top = copy.deepcopy(top)
    for p in _levels(top):
        bounds: list[A.Expr] = []
        for b in p.bound:
            ext = _extents(b, scope)
            if ext is None:
                bounds.append(b)
            elif len(ext) == 1 and isinstance(unparen(b), A.GetIth):  # ``sh(0)``: as written, or its name
                bounds.append(_as_expr(ext[0], b, scope, b))
            else:
                bounds.extend(
                    _as_expr(x, A.GetIth(b, A.IntLit(k, str(k), span=b.span), span=b.span), scope, b)
                    for k, x in enumerate(ext)
                )
        p.bound = bounds
    _check(top)
    return top


def _levels(top: A.Parallel) -> list[A.PBy]:
    return [b for n in top.walk() if isinstance(n, A.Parallel) for b in n.levels]


def _check(top: A.Parallel) -> None:
    for p in _levels(top):
        if p.vars is not None and len(p.vars) != len(p.bound):
            raise CroqSemanticError(f"{len(p.vars)} parallel variable(s) but {len(p.bound)} bound(s)", p.span)


def _extents(b: A.Expr, scope: HostScope) -> tuple[str | int, ...] | None:
    """The extents a bound that is a shape stands for (None: a bound of one extent, or extents
    the launcher spells as expressions rather than names)."""
    ext = _shape_of(b, scope)
    if ext is None or any(isinstance(x, str) and not x.isidentifier() for x in ext):
        return None
    return ext


def _shape_of(b: A.Expr, scope: HostScope) -> tuple[str | int, ...] | None:
    x = unparen(b)
    if isinstance(x, A.Name) and x.name in scope.shapes:
        return scope.shapes[x.name]
    if isinstance(x, A.Member) and x.member == "span":
        base = unparen(x.base)
        if isinstance(base, A.Name) and base.name in scope.tensors:
            return scope.tensors[base.name].extents
        if isinstance(base, A.Name) and base.name in scope.shapes:
            return scope.shapes[base.name]
    if isinstance(x, A.GetIth) and isinstance(unparen(x.index), A.IntLit):
        whole = _shape_of(x.base, scope)
        k = unparen(x.index).value  # type: ignore[attr-defined]
        if whole is not None and 0 <= k < len(whole):
            return (whole[k],)
    return None


def _as_expr(x: str | int, extent: A.Expr, scope: HostScope, at: A.Expr) -> A.Expr:
    """One extent as a bound: a literal, the size's own name (``M`` of ``[M, 16]``), else
    ``extent`` (``x.span(0)``) itself: an anonymous ``?`` dimension's launcher variable
    (``x_d0``) is no name of the source, and the kernel reads it through the tensor."""
    if isinstance(x, int):
        return A.IntLit(x, str(x), span=at.span)
    s = scope.scalars.get(x)
    if s is not None and s.host == x:
        return A.Name(x, span=at.span)
    return extent
