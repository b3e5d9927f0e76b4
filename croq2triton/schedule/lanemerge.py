"""A loop in one lane that merges the other lanes' states one by one, folded into a reduction.

A block that keeps a Welford state a thread (count, mean, sum of squared deviations) often ends with
thread 0 merging the block's states in order by Chan's formula::

    if (t == 0) { foreach u in [64] { nb = cn[u]; if (nb > 0) { nt = na + nb; d = mn[u] - ma;
                  ma += d * nb / nt; qa += sq[u] + d * d * na * nb / nt; na = nt; } } }

Lifted (the scratch arrays forwarded into registers: schedule/forward.py), each step extracts lane
``u`` of the lanes' tiles (``sum(where(idx == u, cn, 0))``): 64 steps, three reductions across the
block each.  Chan's combine ``(na, ma, qa) . (nb, mb, qb) = (na + nb, ma + d nb / (na + nb), qa + qb
+ d^2 na nb / (na + nb))``, ``d = mb - ma``, is associative and commutative in exact arithmetic, and
``(0, m, 0)`` is its identity: the merge of every lane's state, from a count and a sum of squares of
0, is ``N = sum(n)``, ``mean = sum(n * m) / N``, ``M2 = sum(q + n * (m - mean)^2)`` (the states the
filter keeps, all lanes at once).  That is the stable two-pass form about the total mean; it adds in
another order than the source's chain of merges (within the rounding of the type, as every float
fold here: tolerances.py).

What is proved on the IR (else the loop stays as written):

* the loop runs ``u`` over ``[0, n)`` with constant bounds; its body is lets and then three
  assignments ``a := ..`` (none reading another's new value: every let before the first);
* ``u`` is read only by extractions ``sum(where(I == u, X, 0), 0)`` with ``I`` the lanes ``0 .. n - 1``
  (computed exactly) and ``X`` a tile of ``n`` lanes the loop does not assign; three tiles so read;
* each assignment is ``where(G & P, F, a)`` (or ``F``) with the same ``G`` (reading neither the loop,
  the states nor the extractions: a lane's guard, ``t == 0``) and the same ``P`` (reading the
  extractions only: a filter of lanes, ``nb > 0``) in all three;
* the three ``F`` (lets inlined, extractions named) are rational functions of the states and the
  extractions (``+ - * /`` of them and constants) equal to Chan's combine for some order of the
  states and of the tiles: checked exactly, with fractions, at random points (two rational
  functions that agree at random points of a large set are the same function but with a
  probability below degree / size: Schwartz-Zippel);
* the count and the sum of squares start at 0 (a let of zeros before the loop, assigned nowhere else
  before it), and no state is assigned after the loop.

The new values, where ``G`` holds, are the totals (else each state as it was); every later
statement reads them.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from fractions import Fraction
from typing import Any

import numpy as np

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from .treefold import NotTree, evaluate

MAX_LANES = 1024
_POINTS = 3
_SAID = " Its loop merging the lanes' Welford states by Chan's formula is one reduction over the lanes (schedule/lanemerge.py)."


class NotMerge(Exception):
    """What the proof cannot follow."""


def fold_lane_merges(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each top-level loop that merges the lanes' states by Chan's formula read as one
    reduction (module docstring); the kernel itself where there is none."""
    body = list(kernel.body)
    for i, s in enumerate(body):
        if not isinstance(s, N.For):
            continue
        taken = {v.name for x in N.walk(body) for v in N.defines(x)} | {a.name for a in kernel.args}
        try:
            lets = _prove(s, body[:i], body[i + 1 :], taken)
        except (NotMerge, NotTree, ZeroDivisionError):
            continue
        env: dict[str, E.Expr] = {a.name: let.var for a, let in lets if a is not None}
        rest = [N.map_exprs(x, lambda e, env=env: E.substitute(e, env)) for x in body[i + 1 :]]
        body = [*body[:i], *(let for _, let in lets), *rest]
        doc = kernel.doc if _SAID in kernel.doc else kernel.doc + _SAID
        return fold_lane_merges(dataclasses.replace(kernel, body=body, doc=doc))
    return kernel


def _prove(loop: N.For, before: list[N.Stmt], after: list[N.Stmt], taken: set[str]) -> list[tuple[Any, N.Let]]:
    start, stop = E.fold(loop.start), E.fold(loop.stop)
    if not (isinstance(start, E.Const) and start.value == 0 and isinstance(stop, E.Const)):
        raise NotMerge("bounds not 0 .. a constant")
    if not E.same(loop.step, E.Const(1)):
        raise NotMerge("a step other than 1")
    n = int(stop.value)
    if not 1 < n <= MAX_LANES:
        raise NotMerge("lanes out of range")
    body = loop.body
    k = sum(isinstance(s, N.Assign) for s in body)
    if k != 3 or not all(isinstance(s, N.Let) for s in body[:-3]) or len(body) < 3:
        raise NotMerge("not lets and then three assignments")
    assigns = [s for s in body[-3:] if isinstance(s, N.Assign)]
    states = [s.var for s in assigns]
    names = {v.name for v in states}
    if len(names) != 3 or any(v.type != states[0].type or E.is_int(v.type) for v in states):
        raise NotMerge("not three float states of one type")
    for j, s in enumerate(assigns):
        if {v.name for v in states[:j]} & _names(s.value):
            raise NotMerge("an assignment reading another's new value")
    lets = {s.var.name: s.value for s in body if isinstance(s, N.Let)}
    u = loop.var.name
    tiles: dict[str, E.Var] = {}
    top = {s.var.name: s.value for s in before if isinstance(s, N.Let)}
    values = [_extracted(E.resolve(s.value, lets), u, n, tiles, top) for s in assigns]
    assigned = {s.var.name for s in N.walk(body) if isinstance(s, N.Assign)}
    if len(tiles) != 3 or set(tiles) & assigned:
        raise NotMerge("not three tiles the loop does not assign")
    if any(u in _names(v) for v in values):
        raise NotMerge("the loop's counter read other than by an extraction")
    ext = {_ext(t) for t in tiles}
    split = [_split(v, s.var, names, ext) for v, s in zip(values, assigns, strict=True)]
    guards, filters = {_key(g) for g, _, _ in split}, {_key(p) for _, p, _ in split}
    if len(guards) != 1 or len(filters) != 1:
        raise NotMerge("the assignments under different guards")
    guard, keep = split[0][0], split[0][1]
    if guard is not None and (_names(guard) & (names | ext | {u})):
        raise NotMerge("a guard that reads the states or the loop")
    if keep is not None and (_names(keep) & (names | {u}) or not _names(keep) & ext):
        raise NotMerge("a filter that reads other than the extractions")
    fs = {s.var.name: f for (_, _, f), s in zip(split, assigns, strict=True)}
    order = _chan(fs, sorted(names), sorted(ext))
    if order is None:
        raise NotMerge("a combine other than Chan's")
    (cnt, mean, m2), (xc, xm, xq) = order
    for name in (cnt, m2):
        if not _starts_at_zero(name, before):
            raise NotMerge("a count or a sum of squares that does not start at 0")
    if any(isinstance(s, N.Assign) and s.var.name in names for s in N.walk(after)):
        raise NotMerge("a state assigned after the loop")
    var = {v.name: v for v in states}
    tile = {_ext(t): v for t, v in tiles.items()}
    c, m, q = tile[xc], tile[xm], tile[xq]
    on = E.Full(c.shape, True, "i1") if keep is None else E.substitute(keep, {_ext(t): v for t, v in tiles.items()})
    zero = E.Full(c.shape, 0.0, c.type)
    counted = E.Reduce("sum", E.Where(on, c, zero), 0)
    count, mu = (_fresh(f"{x}_total", c.type, (), taken) for x in (cnt, mean))
    n_all, m_all, q_all = (_fresh(f"{x}_all", c.type, var[x].shape, taken) for x in (cnt, mean, m2))
    weighted = E.Reduce("sum", E.Where(on, E.Bin("*", c, m), zero), 0)
    mean_total = E.Where(E.Bin("==", count, E.Const(0.0, c.type)), E.Const(0.0, c.type), E.Bin("/", weighted, count))
    dev = E.Bin("-", m, mu)
    spread = E.Reduce("sum", E.Where(on, E.Bin("+", q, E.Bin("*", c, E.Bin("*", dev, dev))), zero), 0)

    def out(acc: E.Var, total: E.Expr) -> E.Expr:
        v: E.Expr = E.Bin("+", E.Full(acc.shape, 0.0, acc.type), total)
        if guard is not None:
            v = E.Where(guard, v, acc)
        return v

    mean_kept = E.Where(
        E.Bin("==", count, E.Const(0.0, c.type)), var[mean], E.Bin("+", E.Full(var[mean].shape, 0.0, c.type), mu)
    )
    mean_value: E.Expr = mean_kept if guard is None else E.Where(guard, mean_kept, var[mean])
    line = loop.line
    return [
        (None, N.Let(count, counted, line=line)),
        (None, N.Let(mu, mean_total, line=line)),
        (var[cnt], N.Let(n_all, out(var[cnt], count), line=line)),
        (var[mean], N.Let(m_all, mean_value, line=line)),
        (var[m2], N.Let(q_all, out(var[m2], spread), line=line)),
    ]


def _fresh(base: str, dtype: str, dims: tuple[Any, ...], taken: set[str]) -> E.Var:
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return E.Var(name, dtype, dims=dims)


def _ext(tile: str) -> str:
    return f"_lane_of_{tile}"


def _extracted(e: E.Expr, u: str, n: int, tiles: dict[str, E.Var], top: dict[str, E.Expr]) -> E.Expr:
    """``e`` with each ``sum(where(I == u, X, 0), 0)`` (``I`` the lanes) a scalar variable named for ``X``."""
    if isinstance(e, E.Reduce) and e.op == "sum" and e.axis == 0 and isinstance(e.value, E.Where):
        w = e.value
        x = w.then
        if (
            isinstance(x, E.Var)
            and len(x.shape) == 1
            and x.shape[0] == n
            and _zero(w.other)
            and _picks(w.cond, u, n, top)
        ):
            tiles[x.name] = x
            return E.Var(_ext(x.name), x.type)
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(e):  # type: ignore[arg-type]
        v = getattr(e, f.name)
        if isinstance(v, E.Expr):
            changes[f.name] = _extracted(v, u, n, tiles, top)
        elif isinstance(v, tuple) and v and all(isinstance(y, E.Expr) for y in v):
            changes[f.name] = tuple(_extracted(y, u, n, tiles, top) for y in v)
    return dataclasses.replace(e, **changes) if changes else e  # type: ignore[type-var]


def _zero(e: E.Expr) -> bool:
    return isinstance(e, (E.Const, E.Full)) and e.value == 0


def _picks(cond: E.Expr, u: str, n: int, top: dict[str, E.Expr]) -> bool:
    """``I == u`` (either order) with ``I`` computed exactly as the lanes ``0 .. n - 1``."""
    if not (isinstance(cond, E.Bin) and cond.op == "=="):
        return False
    for lanes, at in ((cond.lhs, cond.rhs), (cond.rhs, cond.lhs)):
        if isinstance(at, E.Var) and at.name == u and u not in _names(lanes):
            try:
                v = np.asarray(evaluate(E.resolve(lanes, top), {}))
            except NotTree:
                continue
            if v.shape == (n,) and (v == np.arange(n)).all():
                return True
    return False


def _split(value: E.Expr, acc: E.Var, states: set[str], ext: set[str]) -> tuple[E.Expr | None, E.Expr | None, E.Expr]:
    """``where(G & P, F, acc)``: (G, P, F); ``F`` alone: (None, None, F)."""
    if not (isinstance(value, E.Where) and isinstance(value.other, E.Var) and value.other.name == acc.name):
        return None, None, value
    guard = [t for t in E.conjuncts(value.cond) if not _names(t) & (states | ext)]
    keep = [t for t in E.conjuncts(value.cond) if _names(t) & (states | ext)]
    return _all(guard), _all(keep), value.then


def _all(terms: list[E.Expr]) -> E.Expr | None:
    out: E.Expr | None = None
    for t in terms:
        out = t if out is None else E.Bin("&", out, t)
    return out


def _key(e: E.Expr | None) -> str:
    return "" if e is None else repr(e)


def _rational(e: E.Expr, env: dict[str, Fraction]) -> Fraction:
    if isinstance(e, E.Const) and not isinstance(e.value, bool):
        return Fraction(e.value)
    if isinstance(e, E.Var):
        if e.name not in env:
            raise NotMerge(f"'{e.name}' read by the combine")
        return env[e.name]
    if isinstance(e, E.Un) and e.op == "-":
        return -_rational(e.value, env)
    if isinstance(e, E.Bin) and e.op in ("+", "-", "*", "/"):
        a, b = _rational(e.lhs, env), _rational(e.rhs, env)
        return a + b if e.op == "+" else a - b if e.op == "-" else a * b if e.op == "*" else a / b
    raise NotMerge(f"a {type(e).__name__} in the combine")


def _chan_of(
    na: Fraction, ma: Fraction, qa: Fraction, nb: Fraction, mb: Fraction, qb: Fraction
) -> tuple[Fraction, ...]:
    nt = na + nb
    d = mb - ma
    return nt, ma + d * nb / nt, qa + qb + d * d * na * nb / nt


def _chan(fs: dict[str, E.Expr], states: list[str], ext: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The order (count, mean, m2) of the states and of the extractions in which ``fs`` is Chan's
    combine, checked exactly at random points; None where no order is."""
    rng = random.Random(20261208)
    points = [
        {x: Fraction(rng.randint(1, 10**6), rng.randint(1, 10**3)) for x in [*states, *ext]} for _ in range(_POINTS)
    ]
    for s_order in itertools.permutations(states):
        for x_order in itertools.permutations(ext):
            if all(_agrees(fs, s_order, x_order, p) for p in points):
                return s_order, x_order
    return None


def _agrees(fs: dict[str, E.Expr], s: tuple[str, ...], x: tuple[str, ...], p: dict[str, Fraction]) -> bool:
    try:
        want = _chan_of(*(p[k] for k in s), *(p[k] for k in x))
        return all(_rational(fs[k], p) == w for k, w in zip(s, want, strict=True))
    except ZeroDivisionError:
        return False


def _starts_at_zero(name: str, before: list[N.Stmt]) -> bool:
    defs = [s for s in N.walk(before) if isinstance(s, (N.Let, N.Assign)) and s.var.name == name]
    return (
        len(defs) == 1
        and isinstance(defs[0], N.Let)
        and isinstance(defs[0].value, (E.Full, E.Const))
        and defs[0].value.value == 0
    )
