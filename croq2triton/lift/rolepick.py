"""What a warp role's condition picks (LANGUAGE.md 7.4, 7.10): the units of its ``parallel`` it runs
on, and the threads of each (lift/collapse.py).

A role's condition is a conjunction (``&&``) of comparisons of an index with a constant:
``wg == 1``, ``wg > 0``, ``wg < 2``, ``wg >= 1 && wg < 3``, ``wg == 0 && t == 0``,
``g == 0 && t >= 32 && t < 64``.  The comparisons of the unit index give one range of units; those
of a thread index (the elected thread that issues a TMA copy, a sub-warp) give the threads of each
unit that run the role.  A role whose statements do not read the thread index computes the same on
each of its threads (the collapsed program runs it once per unit, lift/kernel.py ``levels``), so
its threads only have to be some: a thread range that is not empty is the unit's whole role.
A comparison of a thread index with a value known at launch only (``t < limit``) may leave no
thread: a role of waits only may run or not with nothing to tell (a race-free program's outputs
never depend on a wait alone); any other role is refused.

An ``inthreads (t == 32) { .. }`` inside a role, on a thread index only with a constant range that
is not empty, is its body, by the same argument (:func:`threads_spliced`).
"""

from __future__ import annotations

import dataclasses

from ..frontend import ast as A
from ..sema.consteval import const_int
from .notlifted import NotLifted
from .terms import unparen

_FLIPPED = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}


def conjuncts(e: A.Expr) -> list[A.Expr]:
    e = unparen(e)
    if isinstance(e, A.Binary) and e.op == "&&":
        return conjuncts(e.lhs) + conjuncts(e.rhs)
    return [e]


def comparison(e: A.Expr) -> tuple[str, str, A.Expr] | None:
    """``name op value`` (the name on either side, the operator as if it were on the left)."""
    if not isinstance(e, A.Binary) or e.op not in _FLIPPED:
        return None
    lhs, rhs = unparen(e.lhs), unparen(e.rhs)
    if isinstance(lhs, A.Name):
        return lhs.name, e.op, rhs
    if isinstance(rhs, A.Name):
        return rhs.name, _FLIPPED[e.op], lhs
    return None


def narrowed(lo: int, hi: int, op: str, v: int) -> tuple[int, int] | None:
    """The range ``[lo, hi)`` cut to the indices ``i`` with ``i op v`` (None: not one range)."""
    if op == "==":
        return max(lo, v), min(hi, v + 1)
    if op == ">":
        return max(lo, v + 1), hi
    if op == ">=":
        return max(lo, v), hi
    if op == "<":
        return lo, min(hi, v)
    if op == "<=":
        return lo, min(hi, v + 1)
    if v == lo:  # "!=" at either end of the range
        return lo + 1, hi
    if v == hi - 1:
        return lo, hi - 1
    return None if lo <= v < hi else (lo, hi)


def role_units(cond: A.Expr, var: str, units: int, threads: dict[str, int], waits_only: bool) -> tuple[int, int]:
    """The units a role runs on, (first, count), where its condition picks one range of units of
    ``var`` (``units`` of them) and, of the thread indices ``threads`` (their extents), threads
    that are some (or any where the role only waits: ``waits_only``)."""
    lo, hi = 0, units
    spans = {t: (0, n) for t, n in threads.items()}
    picked = False
    for c in conjuncts(cond):
        cmp = comparison(c)
        value = const_int(cmp[2]) if cmp is not None else None
        if cmp is not None and cmp[0] == var and value is not None:
            cut = narrowed(lo, hi, cmp[1], value)
            if cut is None:
                break
            lo, hi = cut
            picked = True
        elif cmp is not None and cmp[0] in spans and value is not None:
            cut = narrowed(*spans[cmp[0]], cmp[1], value)
            if cut is None:
                break
            spans[cmp[0]] = cut
        elif cmp is not None and cmp[0] in spans and waits_only:
            continue  # threads picked at launch: a role of waits only
        elif cmp is not None and cmp[0] in spans:
            raise NotLifted("a warp role whose threads are picked by a value known at launch only", c)
        else:
            break
    else:
        if not picked:
            raise NotLifted("a warp role whose condition picks no unit index", cond)
        if any(b <= a for a, b in spans.values()):
            raise NotLifted("a warp role whose condition picks no thread (it never runs)", cond)
        if lo < hi:
            return lo, hi - lo
    raise NotLifted("a warp role whose condition is not one range of units", cond)


def waits_only(body: A.Stmt) -> bool:
    """A role that only waits (and names scalars): nothing it does is seen."""
    stmts = body.stmts if isinstance(body, A.Block) else [body]
    return all(isinstance(s, (A.Wait, A.Empty, A.PragmaStmt, A.ScalarDecl)) for s in stmts)


def thread_range(cond: A.Expr, threads: dict[str, int]) -> bool | None:
    """Does ``cond``, comparisons of thread indices with constants only, pick some threads (None:
    a condition of another form)?"""
    spans = {t: (0, n) for t, n in threads.items()}
    for c in conjuncts(cond):
        cmp = comparison(c)
        value = const_int(cmp[2]) if cmp is not None else None
        if cmp is None or cmp[0] not in spans or value is None:
            return None
        cut = narrowed(*spans[cmp[0]], cmp[1], value)
        if cut is None:
            return None
        spans[cmp[0]] = cut
    return all(a < b for a, b in spans.values())


def threads_spliced(body: A.Stmt, threads: dict[str, int]) -> A.Stmt:
    """``body`` (a role's, a copy) with each ``inthreads`` on constant ranges of ``threads`` that
    picks some as its statements in its place (none where it picks no thread), in place."""

    def spliced(stmts: list[A.Stmt]) -> list[A.Stmt]:
        out: list[A.Stmt] = []
        for s in stmts:
            some = thread_range(s.cond, threads) if isinstance(s, A.InThreads) and not s.is_async else None
            if some is None:
                visit(s)
                out.append(s)
                continue
            if some:
                assert isinstance(s, A.InThreads)
                out.extend(spliced(list(s.body.stmts) if isinstance(s.body, A.Block) else [s.body]))
        return out

    def visit(node: A.Node) -> None:
        if isinstance(node, A.Block):
            node.stmts = spliced(node.stmts)
            return
        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            if isinstance(v, A.Block):
                v.stmts = spliced(v.stmts)
            elif isinstance(v, A.InThreads) and not v.is_async and thread_range(v.cond, threads) is not None:
                setattr(node, f.name, A.Block(spliced([v]), span=v.span))
            elif isinstance(v, A.Node):
                visit(v)
            elif isinstance(v, list):
                for x in v:
                    if isinstance(x, A.Node):
                        visit(x)

    if isinstance(body, A.Block):
        body.stmts = spliced(body.stmts)
        return body
    return A.Block(spliced([body]), span=body.span)
