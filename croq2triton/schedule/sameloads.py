"""An element read twice in a row is read once: ``x.at(r, j) * x.at(r, j)`` is lifted as two loads of
the same tile; under ``--schedule auto`` the second is the first's value.

What it proves on the IR (else the loads stay): the two loads are in one statement list, read the
same tensor at the same index (the same expressions, lets put in) with the same fill, and nothing
between them writes memory, waits at a barrier or re-binds a variable the index or the masks read
(only lets, loads and assignments of other variables come between, no loop or branch).  Then:

* under the same mask, the second load reads what the first read, element by element: it is a
  ``let`` of the first's value;
* under a mask that holds every term of the first's and more (the load inside ``if (x.at(r, j) >
  best) { best = x.at(r, j); .. }``: the branch's condition is a term of its mask), it is
  ``where(mask, first, fill)``: where its mask holds so does the first's; and a value chosen
  ``where(c, second, d)`` by a condition ``c`` that, with the first's mask, holds every term of the
  second's mask is ``where(c, first, d)`` (where ``c`` holds and the first's mask does not, both
  loads give the fill).  An argmax written that way then reads as the fold it is
  (schedule/argfold.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..tir import expr as E
from ..tir import nodes as N


@dataclass(frozen=True)
class _Seen:
    load: N.Load
    index: tuple[E.Expr, ...]
    terms: list[E.Expr]  # its mask's terms, lets put in
    reads: set[str]  # the variables its index and mask read


@dataclass(frozen=True)
class _Covered:
    """A load made ``where(mask, first, fill)``: ``first`` where ``terms`` (its mask's) hold, and
    where the first's mask (``first_terms``) does not."""

    first: E.Var
    terms: list[E.Expr]
    first_terms: list[E.Expr]


def share_loads(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each load that repeats an earlier one a ``let`` of its value."""
    done = [0]
    body = _block(kernel.body, done)
    if not done[0]:
        return kernel
    # (a load read through its first where a condition chooses it: its let, and its mask's, unread)
    return dataclasses.replace(kernel, body=N.without_dead_lets(body))


def _block(body: list[N.Stmt], done: list[int]) -> list[N.Stmt]:
    out: list[N.Stmt] = []
    seen: list[_Seen] = []
    covered: dict[str, _Covered] = {}
    lets: dict[str, E.Expr] = {}
    for s in body:
        if covered and isinstance(s, (N.Let, N.Assign, N.Store)):
            s = _chosen(s, covered, lets)
        if isinstance(s, N.Let):
            lets[s.var.name] = s.value
            out.append(s)
            continue
        if isinstance(s, N.Assign):
            seen = [x for x in seen if s.var.name not in x.reads]
            # (a term that reads the variable now means its new value: no later choice may rely on it)
            covered = {k: c for k, c in covered.items() if s.var.name not in _reads(c, lets)}
            out.append(s)
            continue
        if isinstance(s, N.Load):
            index = tuple(E.resolve(i, lets) for i in s.index)
            mask = E.resolve(s.mask, lets) if s.mask is not None else None
            terms = E.conjuncts(mask) if mask is not None else []
            replaced = _reuse(s, index, terms, seen, covered)
            if replaced is not None:
                out.append(replaced)
                done[0] += 1
                continue
            reads = {v.name for e in (*index, *([mask] if mask is not None else [])) for v in E.free_vars(e)}
            seen.append(_Seen(s, index, terms, reads))
            out.append(s)
            continue
        seen = []  # a store, an atomic, a barrier, a loop or a branch: nothing read before is reused
        covered = {}
        if isinstance(s, (N.For, N.While)):
            s = dataclasses.replace(s, body=_block(s.body, done))
        elif isinstance(s, N.If):
            s = dataclasses.replace(s, then=_block(s.then, done), orelse=_block(s.orelse, done))
        out.append(s)
    return out


def _reuse(
    s: N.Load, index: tuple[E.Expr, ...], terms: list[E.Expr], seen: list[_Seen], covered: dict[str, _Covered]
) -> N.Stmt | None:
    for x in seen:
        a = x.load
        if a.base != s.base or a.other != s.other or a.nan_outside != s.nan_outside:
            continue
        if a.var.shape != s.var.shape or a.var.dtype != s.var.dtype or len(x.index) != len(index):
            continue
        if not all(E.same(p, q) for p, q in zip(x.index, index, strict=True)):
            continue
        if not _within(x.terms, terms):
            continue
        if _within(terms, x.terms) or s.other is None or s.mask is None:
            return N.Let(s.var, a.var, line=s.line)  # (no fill: the lanes the mask drops hold anything)
        covered[s.var.name] = _Covered(a.var, terms, x.terms)
        fill = E.Const(s.other, s.var.dtype)
        return N.Let(s.var, E.Where(s.mask, a.var, fill), line=s.line)
    return None


def _reads(c: _Covered, lets: dict[str, E.Expr]) -> set[str]:
    """The variables the terms of a covered load read (lets put in)."""
    return {v.name for t in (*c.terms, *c.first_terms) for v in E.free_vars(E.resolve(t, lets))}


def _within(small: list[E.Expr], big: list[E.Expr]) -> bool:
    """Every term of ``small`` is one of ``big``."""
    return all(any(E.same(t, u) for u in big) for t in small)


def _chosen(s: N.Stmt, covered: dict[str, _Covered], lets: dict[str, E.Expr]) -> N.Stmt:
    """``s`` with each ``where(c, second, d)`` whose ``c`` covers the second load's mask (with the
    first's) as ``where(c, first, d)``."""

    def walk(e: E.Expr) -> E.Expr:
        e = E.map_children(e, walk)
        if isinstance(e, E.Where) and isinstance(e.then, E.Var) and e.then.name in covered:
            c = covered[e.then.name]
            if _within(c.terms, E.conjuncts(E.resolve(e.cond, lets)) + c.first_terms):
                return E.Where(e.cond, c.first, e.other)
        return e

    return N.map_exprs(s, walk)
