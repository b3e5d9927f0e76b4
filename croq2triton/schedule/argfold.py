"""The largest (or smallest) value so far and where it was: an argmax / argmin, recognised as a fold.

A lane that walks its row keeping the best value and its index::

    if (v > best) { best = v; at = j; }        // or: at = (v > best) ? j : at; best = __max(best, v);
    (nested conditions, a row guard around either, are one conjunction)

keeps ``best = max`` of the values and ``at`` the index expression of the *first* position that holds
it (a strict ``>``: a later equal value never replaces it; ``<`` with ``min`` for an argmin), or of the
*last* one where the index's comparison is ``>=`` (``<=``: a later equal value replaces it).  NaNs
never compare greater (nor equal), so they are never taken.  The pair ``(best, at)`` is a fold whose operator
takes the left operand unless the right one is strictly better -- associative, and with the
positions in order (the blocks of a row run in order; inside a block the first best position wins),
the same as the loop.  A block of values folds into it at once (schedule/foldloops.py writes it)::

    V = where(mask and v == v, v, -inf)               // masked-off and NaN elements never win
    B = max(V);  P = min(where(V == B, position, BIG)) // the block's best and its first position
    take = B > best;  at = where(take, index at P, at);  best = where(take, B, best)
    (the last: P = max(where(valid and V == B, position, -BIG)), take = P > -BIG and B >= best)

What is matched (else None): ``best := where(G and c, f, best)`` with ``c`` the comparison ``f > best``
(``best < f``; ``<`` / ``>`` swapped: an argmin), and ``at := where(G and c, i, at)`` with the same
``G`` and comparison of the same ``f`` against ``best``, ``i`` reading neither; or ``best`` a plain
``max`` (``min``) fold of ``f`` under ``G``.  Every reference to ``best`` in ``at``'s update is to its
value before the step (its assignment, or the let that reads it, comes before ``best``'s).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..tir import expr as E

COMPARE = {">": "max", "<": "min", ">=": "max", "<=": "min"}  # f > best: a running maximum; f < best: a minimum


@dataclass(frozen=True)
class ArgPick:
    """``at := where(G and f <op> best, i, at)``: the index of the best ``f`` so far."""

    peer: str  # best
    op: str  # max or min
    of: E.Expr  # f
    last: bool = False  # compared by >= / <=: the last position of the best (else the first)


def split_guard(acc: E.Var, value: E.Expr) -> tuple[list[E.Expr], E.Expr] | None:
    """``where(C, x, acc)``, also nested (``where(G, where(c, x, acc), acc)``): (the conjuncts, x)."""
    conds: list[E.Expr] = []
    while isinstance(value, E.Where) and isinstance(value.other, E.Var) and value.other.name == acc.name:
        conds.extend(E.conjuncts(value.cond))
        value = value.then
    return (conds, value) if conds else None


def comparison(term: E.Expr, peer: str, strict: bool = True) -> tuple[str, E.Expr] | None:
    """``f > peer`` / ``peer < f`` (max) or ``f < peer`` / ``peer > f`` (min): (op, f); with ``strict``
    False, ``>=`` and ``<=`` as well."""
    if not (isinstance(term, E.Bin) and term.op in COMPARE) or (strict and term.op in (">=", "<=")):
        return None
    flip = {">": "<", "<": ">", ">=": "<=", "<=": ">="}
    for op, f, other in ((term.op, term.lhs, term.rhs), (flip[term.op], term.rhs, term.lhs)):
        if isinstance(other, E.Var) and other.name == peer and peer not in {v.name for v in E.free_vars(f)}:
            return COMPARE[op], f
    return None


def match_best(acc: E.Var, value: E.Expr) -> tuple[str, E.Expr, E.Expr | None] | None:
    """``best := where(G and f > best, f, best)``: (max or min, f, G or None)."""
    parts = split_guard(acc, value)
    if parts is None:
        return None
    conds, then = parts
    for k, c in enumerate(conds):
        # (``f >= best``: best becomes f where f equals it, the same value; NaN never compares)
        found = comparison(c, acc.name, strict=False)
        if found is not None and E.same(found[1], then):
            rest = conds[:k] + conds[k + 1 :]
            if any(acc.name in {v.name for v in E.free_vars(x)} for x in rest):
                return None
            return found[0], then, E.conj(rest) if rest else None
    return None


def match_index(acc: E.Var, value: E.Expr, peers: set[str]) -> tuple[ArgPick, E.Expr, E.Expr | None] | None:
    """``at := where(G and f > best, i, at)`` with ``best`` one of ``peers``: (the pick, i, G or None)."""
    parts = split_guard(acc, value)
    if parts is None:
        return None
    conds, index = parts
    for k, c in enumerate(conds):
        for peer in sorted(peers - {acc.name}):
            found = comparison(c, peer, strict=False)
            if found is None:
                continue
            rest = conds[:k] + conds[k + 1 :]
            names = set().union(*({v.name for v in E.free_vars(x)} for x in (index, *rest)))
            if names & {acc.name, peer}:
                return None
            last = isinstance(c, E.Bin) and c.op in (">=", "<=")
            return ArgPick(peer, found[0], found[1], last), index, E.conj(rest) if rest else None
    return None
