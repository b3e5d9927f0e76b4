"""Squared deviations from a value an earlier loop computed, folded in that loop's pass: a column's
mean and variance read once (``--schedule auto``).

A batch norm's statistics written the textbook way walk each column twice::

    foreach i in [M] { s += x.at(i, c); }
    f32 mu = s / M;
    foreach i in [M] { f32 d = x.at(i, c) - mu; q += d * d; }

The second loop needs ``mu``, the whole of the first loop's fold, so split across programs it waits
for every program of the first (schedule/splitphases.py: one launch a loop, the input read twice,
at most 0.5 of the roofline).  But ``q`` needs only three numbers of the values ``u`` it squares the
deviations of: their count ``n``, their mean ``m`` and the sum of their own squared deviations
``M2 = sum (u - m)^2``, since for any ``c``::

    sum (u - c)^2 = M2 + n (m - c)^2

(expand ``(u - m + m - c)^2``: the cross term ``2 (m - c) sum (u - m)`` is 0).  The triple folds in
the first loop's pass, Welford's update a value at a time::

    n += 1;  d = u - m;  m += d / n;  M2 += d * (u - m);

and blocks of values combine by Chan's formula (schedule/foldloops.py folds the update a tile at a
time, schedule/splitloop.py combines the partial triples of a split).  So the rewrite is:

* the second loop's loads and lets move into the first loop (its counter the first's), each
  squared-deviation fold there becomes the update of a triple of accumulators of its own (0 before
  the first loop), and the second loop is gone;
* where it stood, ``q := q + (M2 + n * (m - c) * (m - c))``, ``c`` evaluated there as the kernel as
  written evaluates it.

Every term is a sum of non-negative parts, so nothing cancels: the result is as accurate as the two
passes (each deviation taken from the block's own mean, the blocks' means from the whole's), within
the rounding of the type; values far from ``c`` or a mean far from 0 lose nothing either
(tests/test_moments.py has a column whose first row is 10^4 standard deviations away).

What it proves on the IR (else :class:`NotMerged`, and the kernel is left as it is):

* two loops of one statement list over the same range (start, stop and step), only lets and
  assignments between them; both are loops schedule/foldloops.py's proof admits;
* the second loop's body is lets, loads and folds ``q := q + t`` (or ``where(g, q + t, q)``), each
  ``t`` (lets put in) the square ``a * a`` of a difference ``a = u - c`` (or ``c - u``) where ``c``
  reads nothing the loop defines and ``u`` does; ``q``, ``u`` and ``c`` of one float type, f32 or
  f64 (the types schedule/foldloops.py sums in another order);
* ``u`` and ``g`` read nothing defined or assigned in the first loop or between the loops (they move
  before them), nor ``q``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from .chan import Group, update
from .foldloops import SUMMED, NotFolded, guarded, loop_folds
from .sameloads import share_loads


class NotMerged(Exception):
    """No two loops of the kernel are a fold and the squared deviations from its result."""


@dataclass(frozen=True)
class _Deviation:
    acc: E.Var  # q
    value: E.Expr  # u (the second loop's names)
    center: E.Expr  # c
    guard: E.Expr | None


def merge_deviations(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each loop of its top level that only sums squared deviations from a value
    computed before it merged into an earlier loop over the same range (module docstring);
    :class:`NotMerged` where none is."""
    body = list(kernel.body)
    taken = {a.name for a in kernel.args} | {p.name for p in kernel.program_ids}
    taken |= {v.name for s in N.walk(body) for v in N.defines(s)}
    merged = 0
    k = 0
    while k < len(body):
        second = body[k]
        if isinstance(second, N.For):
            for i in range(k - 1, -1, -1):
                first = body[i]
                if not isinstance(first, N.For):
                    continue
                try:
                    body = _merged(body, i, k, taken)
                except NotMerged:
                    break
                merged += 1
                k -= 1  # (the second loop is gone; its statement's place holds the fix-up now)
                break
        k += 1
    if not merged:
        raise NotMerged("no loop sums squared deviations from a value an earlier loop over its range computed")
    note = " Its squared deviations fold in the pass before them, by Welford's update (schedule/moments.py)."
    return share_loads(dataclasses.replace(kernel, body=body, doc=kernel.doc + note))


def _merged(body: list[N.Stmt], i: int, k: int, taken: set[str]) -> list[N.Stmt]:
    first, second = body[i], body[k]
    assert isinstance(first, N.For) and isinstance(second, N.For)
    between = body[i + 1 : k]
    if any(not isinstance(s, (N.Let, N.Assign)) for s in between):
        raise NotMerged("a statement between the loops other than a let or an assignment")
    if not all(E.same(a, b) for a, b in ((first.start, second.start), (first.stop, second.stop))):
        raise NotMerged("loops over different ranges")
    if not (E.same(first.step, second.step) and isinstance(first.step, E.Const) and first.step.value == 1):
        raise NotMerged("loops over different ranges")
    try:
        loop_folds(first, body[i + 1 :])
        loop_folds(second, body[k + 1 :])
    except NotFolded as e:
        raise NotMerged(str(e)) from None
    deviations = _deviations(second)
    # what moves before the loops may read nothing the first loop or the statements between define
    late = {v.name for s in [first, *between] for x in N.walk([s]) for v in N.defines(x)}
    late |= {s.var.name for x in [first, *between] for s in N.walk([x]) if isinstance(s, N.Assign)}
    late -= {first.var.name}
    # the second loop's lets and loads the moved values read (the others fed only its folds)
    needed = set().union(*(_names(d.value) | _names(d.guard) for d in deviations))
    kept: list[N.Stmt] = []
    for s in reversed(second.body):
        if isinstance(s, (N.Let, N.Load)) and s.var.name in needed:
            kept.insert(0, s)
            needed |= set().union(*(_names(e) for e in N.exprs_of(s)))
    needed -= {v.name for s in second.body for v in N.defines(s)} | {second.var.name}
    if needed & late:
        raise NotMerged("the second loop reads a value defined after the first loop begins")
    # the second loop's lets and loads, renamed, at the first loop's counter
    env: dict[str, E.Expr] = {second.var.name: first.var}
    moved: list[N.Stmt] = []
    for s in kept:
        s = N.map_exprs(s, lambda e: E.substitute(e, env))
        assert isinstance(s, (N.Let, N.Load))
        var = dataclasses.replace(s.var, name=N.fresh_name(s.var.name, taken))
        env[s.var.name] = var
        moved.append(dataclasses.replace(s, var=var))
    starts: list[N.Stmt] = []
    steps: list[N.Stmt] = []
    fixes: list[N.Stmt] = []
    line = second.line
    for d in deviations:
        dtype = d.acc.type
        shape = d.acc.shape

        def acc(role: str, dtype: str = dtype, shape: E.Shape = shape, q: str = d.acc.name) -> E.Var:
            return E.Var(N.fresh_name(f"{q}_{role}", taken), dtype, dims=shape)

        count, mean, m2 = acc("count"), acc("mean"), acc("m2")
        starts += [N.Let(v, E.Full(shape, 0.0, dtype), line=line) for v in (count, mean, m2)]
        value = E.substitute(d.value, env)
        guard = E.substitute(d.guard, env) if d.guard is not None else None
        diff = E.Var(N.fresh_name(f"{d.acc.name}_delta", taken), dtype, dims=E.broadcast(value.shape, shape))
        steps += update(Group(count, mean, m2, value, guard, diff), line)
        off = E.Bin("-", mean, d.center)
        total = E.Bin("+", m2, E.Bin("*", count, E.Bin("*", off, off)))
        fixes.append(N.Assign(d.acc, E.Bin("+", d.acc, total), line=line))
    carried = (*first.carried, *(s.var for s in steps if isinstance(s, N.Assign) and s.var not in first.carried))
    merged = dataclasses.replace(first, body=[*first.body, *moved, *steps], carried=_unique(carried))
    return [*body[:i], *starts, merged, *between, *fixes, *body[k + 1 :]]


def _unique(vs: tuple[E.Var, ...]) -> tuple[E.Var, ...]:
    out: list[E.Var] = []
    for v in vs:
        if all(v.name != w.name for w in out):
            out.append(v)
    return tuple(out)


def _deviations(loop: N.For) -> list[_Deviation]:
    """Each fold of ``loop`` as a sum of squared deviations (module docstring), or NotMerged."""
    lets = {s.var.name: s.value for s in loop.body if isinstance(s, N.Let)}
    inside = {v.name for s in loop.body for v in N.defines(s)} | {loop.var.name}
    out: list[_Deviation] = []
    for s in loop.body:
        if isinstance(s, (N.Let, N.Load)):
            continue
        if not isinstance(s, N.Assign):
            raise NotMerged(f"a {type(s).__name__} statement in the second loop")
        q = s.var
        guard, value = guarded(q.name, s.value)
        if q.type not in SUMMED or not (isinstance(value, E.Bin) and value.op == "+"):
            raise NotMerged(f"'{q.name}' is not a float sum")
        term = next((b for a, b in ((value.lhs, value.rhs), (value.rhs, value.lhs)) if a == q), None)
        if term is None:
            raise NotMerged(f"'{q.name}' is not a sum")
        square = E.resolve(term, lets)
        if not (isinstance(square, E.Bin) and square.op == "*" and E.same(square.lhs, square.rhs)):
            raise NotMerged(f"'{q.name}' does not sum squares")
        diff = square.lhs
        if not (isinstance(diff, E.Bin) and diff.op == "-"):
            raise NotMerged(f"'{q.name}' does not sum squared differences")
        sides = [x for x in (diff.lhs, diff.rhs) if not (_names(x) & inside)]
        if len(sides) != 1:
            raise NotMerged(f"'{q.name}' sums squared differences of no loop-invariant value")
        center = sides[0]
        u = diff.rhs if center is diff.lhs else diff.lhs
        if q.name in _names(u) | _names(center) | _names(guard) or not (u.dtype == center.dtype == q.type):
            raise NotMerged(f"'{q.name}' squares a difference of another type or reads itself")
        out.append(_Deviation(q, u, center, guard))
    if not out:
        raise NotMerged("a second loop without a fold")
    return out
