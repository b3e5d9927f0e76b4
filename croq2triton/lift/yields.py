"""``yield`` under a condition every thread of a block agrees on, as a branch around the rest of the
kernel (LANGUAGE.md 7.4: ``yield;`` leaves the device program for the thread that runs it).

    parallel bm by n : block { A; if (bm * 32 >= rows) yield; B; parallel w by 2 : group { C; } D; }

is lifted as

    parallel bm by n : block { A; if (!(bm * 32 >= rows)) { B; parallel w by 2 : group { C; } D; } }

A ``yield`` inside an inner ``parallel`` leaves the program too, not only that ``parallel``: the
statements after the inner ``parallel`` are under the negated condition as well.  The condition
must be one the whole block agrees on (no index of an inner ``parallel``, no name an inner
``parallel`` binds: those pick some threads, which the lifting masks off lane by lane instead,
lift/kernel.py ``yield_stmt``), and the ``yield`` the whole body of an ``if`` without ``else`` that
stands in a statement list of the block or of a ``parallel`` inside it (a ``yield`` in a loop or
another statement is left to the lifting).  Every kind of statement after it (MMAs, copies, stores
of whole tiles) is then under an ordinary block-level branch.
"""

from __future__ import annotations

import copy

from ..frontend import ast as A


def early_exits(top: A.Parallel) -> A.Parallel:
    """``top`` with its block-uniform ``if (c) yield;`` as branches around what follows (a copy
    where there is one)."""
    if not any(isinstance(n, A.Yield) for n in top.walk()):
        return top
    per_unit = _per_unit_names(top)
    if not any(_guard(s, per_unit) is not None for s in top.walk() if isinstance(s, A.Stmt)):
        return top
    top = copy.deepcopy(top)
    body, _ = _stmt_list(_stmts(top.body), per_unit)
    top.body = A.Block(body, span=top.body.span)
    return top


def _per_unit_names(top: A.Parallel) -> set[str]:
    """Names whose value may differ between the threads of a block: the indices of the inner
    ``parallel`` levels and every name bound inside an inner ``parallel``."""
    out: set[str] = set()
    for n in top.body.walk():
        if isinstance(n, A.Parallel):
            for level in n.levels:
                out.update(level.names)
            for m in n.body.walk():
                if isinstance(m, A.Declarator):
                    out.add(m.name)
                elif isinstance(m, A.Assign) and isinstance(m.target, A.Name):
                    out.add(m.target.name)
                elif result := getattr(m, "result", None):
                    out.add(result)
    return out


def _guard(s: A.Stmt, per_unit: set[str]) -> A.Expr | None:
    """``c`` of ``if (c) yield;`` (``true`` of a bare ``yield;``) where the block agrees on it."""
    if isinstance(s, A.Yield):
        return A.BoolLit(True, span=s.span)
    if not isinstance(s, A.If) or s.other is not None:
        return None
    then = _stmts(s.then)
    if len(then) != 1 or not isinstance(then[0], A.Yield):
        return None
    if any(isinstance(n, A.Name) and n.name in per_unit for n in s.cond.walk()):
        return None
    return s.cond


def _stmt_list(stmts: list[A.Stmt], per_unit: set[str]) -> tuple[list[A.Stmt], list[A.Expr]]:
    """``stmts`` with the statements after a uniform ``yield`` under its negated condition, and the
    conditions of the yields that leave the program from inside it (which the statements after the
    list are under as well)."""
    out: list[A.Stmt] = []
    for i, s in enumerate(stmts):
        leaving: list[A.Expr] = []
        c = _guard(s, per_unit)
        if c is not None:
            leaving = [c]
        elif isinstance(s, (A.Parallel, A.Block)) and not (isinstance(s, A.Parallel) and s.is_async):
            inner, leaving = _stmt_list(_stmts(s.body if isinstance(s, A.Parallel) else s), per_unit)
            if isinstance(s, A.Parallel):
                s.body = A.Block(inner, span=s.body.span)
            else:
                s.stmts = inner
            out.append(s)
        else:
            out.append(s)
        if not leaving:
            continue
        rest, more = _stmt_list(stmts[i + 1 :], per_unit)
        if rest and not any(isinstance(x, A.BoolLit) and x.value for x in leaving):
            span = s.span
            stay = A.Unary("!", A.Paren(_any(leaving), span=span), span=span)
            out.append(A.If(stay, A.Block(rest, span=span), span=span))
        return out, leaving + more
    return out, []


def _any(conds: list[A.Expr]) -> A.Expr:
    out = A.Paren(conds[0], span=conds[0].span)
    for c in conds[1:]:
        out = A.Binary("||", out, A.Paren(c, span=c.span), span=c.span)  # type: ignore[assignment]
    return out


def _stmts(s: A.Stmt) -> list[A.Stmt]:
    return list(s.stmts) if isinstance(s, A.Block) else [s]
