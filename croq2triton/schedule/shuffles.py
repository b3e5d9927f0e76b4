"""A warp's butterfly of shuffles (an all-reduce across lanes) folded into one reduction.

The warp-per-row idiom: each lane folds its share of a row, then ``foreach k in [5] { acc +=
__shfl_xor_sync(~0, acc, 16 >> k); }`` leaves every lane of the warp holding the warp's total.  Lifted
(lift/helpers.py) each step is a ``tl.gather`` of the accumulator along the lanes' axis, five
gathers and a reduction across warps before them.  This rewrite proves on the IR what the steps
compute and, where the proof holds, replaces the loop by ``tl.sum`` (``tl.max``, ``tl.min``) of the
accumulator along that axis, spread back to every lane, in a new variable that every later
statement reads (the accumulator is then read only as a total: schedule/totals.py keeps it as one).

The proof, on a loop ``for k in [a, b)`` with ``a`` and ``b`` constants (else the loop stays):

* its body is lets that compute a source lane index, one ``o = tl.gather(acc, src, axis)``, and
  one ``acc := op(acc, o)`` or ``acc := where(g, op(acc, o), acc)``, ``op`` ``+``, ``max`` or ``min``;
  ``acc`` is not read after the loop but by later statements (which read the new variable);
* the source index is computed from constants, lanes and ``k`` (known exactly for each ``k``), the
  same along every other axis, inside the axis; ``g`` (if any) is the same along the gathered axis;
* run on the positions each lane holds (multisets, as schedule/treefold.py does for trees): after
  the last step every lane holds every position of its axis exactly once (``max``, ``min``: at least
  once); or, a tree of shuffles down (``__shfl_down_sync``: lane 0 holds the total, the others parts
  of it), some lanes do and every statement after the loop that reads the accumulator is a store or
  an atomic under a mask with a term false at every other lane (``if (t == 0) out.at(r) = s;``):
  the lanes that would read a part never read at all, and the others read the total.

With a guard ``g`` the rows where ``g`` is false keep their own values: the new variable is
``where(g, total, acc)``, unless every definition of ``acc`` before the loop leaves the identity of
``op`` in those rows (a start of the identity, folds of values that the same ``g`` masks to the
identity: the source's ``if`` around the whole row), where the total of those rows is the identity
too and the guard is dropped.  Float sums come out in another order (within the dtype's rounding).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from .foldloops import FOLDS, NotFolded, _identity
from .pairshuffles import NotPair, prove_pair
from .treefold import NotTree, evaluate, extent_along, lane_sources

MAX_STEPS = 64  # butterfly steps followed (a warp needs 5)


class NotButterfly(Exception):
    """What the proof cannot follow: the loop stays as written."""


def fold_butterflies(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each butterfly of gathers at its top level read as one reduction (module
    docstring); the kernel itself where there is none."""
    body = list(kernel.body)
    done = 0
    for i in range(len(body)):
        s = body[i]
        if not isinstance(s, N.For):
            continue
        try:
            acc, new, value = _prove(s, body[:i], body[i + 1 :])
            lets = [(acc, N.Let(new, value, line=s.line))]
        except (NotButterfly, NotTree):
            taken = {v.name for x in N.walk(body) for v in N.defines(x)} | {a.name for a in kernel.args}
            try:  # (a pair of values merged by each step: schedule/pairshuffles.py)
                lets = prove_pair(s, body[:i], body[i + 1 :], taken)
            except NotPair:
                continue
        env: dict[str, E.Expr] = {a.name: let.var for a, let in lets}
        rest = [N.map_exprs(x, lambda e, env=env: E.substitute(e, env)) for x in body[i + 1 :]]
        body = [*body[:i], *(let for _, let in lets), *rest]
        done += 1
        break  # one a pass: the indices after it moved
    if not done:
        return kernel
    said = " Its warp shuffles in halving steps are one reduction across lanes (schedule/shuffles.py)."
    doc = kernel.doc if said in kernel.doc else kernel.doc + said
    return fold_butterflies(dataclasses.replace(kernel, body=body, doc=doc))


def _prove(loop: N.For, before: list[N.Stmt], after: list[N.Stmt]) -> tuple[E.Var, E.Var, E.Expr]:
    """(the accumulator, the new variable, its value) where the proof holds, else NotButterfly."""
    start, stop = E.fold(loop.start), E.fold(loop.stop)
    if not (isinstance(start, E.Const) and isinstance(stop, E.Const) and E.same(loop.step, E.Const(1))):
        raise NotButterfly("bounds not known when translating")
    steps = range(int(start.value), int(stop.value))
    if len(steps) > MAX_STEPS or not steps:
        raise NotButterfly("too many steps")
    lets = {s.var.name: s.value for s in loop.body if isinstance(s, N.Let)}
    assigns = [s for s in loop.body if isinstance(s, N.Assign)]
    if len(assigns) != 1 or len(lets) + 1 != len(loop.body):
        raise NotButterfly("a body other than lets and one fold")
    acc = assigns[0].var
    op, o_expr, guard = _fold(assigns[0])
    o = o_expr.name if isinstance(o_expr, E.Var) else ""
    gather = lets.get(o) if isinstance(o_expr, E.Var) else o_expr
    if not (isinstance(gather, E.Call) and gather.fn == "gather" and len(gather.args) == 3):
        raise NotButterfly("a fold of something other than a gather")
    src_of, index, axis_c = gather.args
    if not (isinstance(src_of, E.Var) and src_of.name == acc.name and isinstance(axis_c, E.Const)):
        raise NotButterfly("a gather of another value")
    axis = int(axis_c.value)
    n = acc.shape[axis]
    if not isinstance(n, int):
        raise NotButterfly("lanes fixed at launch")
    if any(acc.name in _names(v) for k, v in lets.items() if k != o):
        raise NotButterfly("the accumulator read by the index")
    if guard is not None and (acc.name in _names(guard) or loop.var.name in _names(guard)):
        raise NotButterfly("a guard that changes with the steps")
    if guard is not None and extent_along(guard, axis, len(acc.shape)) != 1:
        raise NotButterfly("a guard that differs along the lanes")
    if any(isinstance(s, N.Assign) and s.var.name == acc.name for s in N.walk(after)):
        raise NotButterfly("the accumulator assigned after the loop")
    top = {s.var.name: s.value for s in before if isinstance(s, N.Let)}
    parts = [Counter({i: 1}) for i in range(n)]
    for k in steps:
        src = lane_sources(
            E.resolve(index, {**top, **{x: v for x, v in lets.items() if x != o}}), loop.var.name, k, axis, n
        )
        parts = [parts[i] + parts[j] for i, j in enumerate(src)]
    whole = [set(p) == set(range(n)) and (op != "+" or all(c == 1 for c in p.values())) for p in parts]
    if not all(whole):
        # a tree of shuffles down: only some lanes hold the total (lane 0 of ``__shfl_down_sync``);
        # the others' values must never be read after the loop
        _read_only_at(acc, [i for i, ok in enumerate(whole) if ok], axis, after, top)
    total = E.Lift(E.Reduce(FOLDS[op], acc, axis), len(acc.shape), tuple(d for d in range(len(acc.shape)) if d != axis))
    spread: E.Expr = E.Bin("+", E.Full(acc.shape, 0, acc.type), total)
    if guard is not None and not _identity_where_not(acc, op, guard, before, top):
        spread = E.Where(guard, spread, acc)
    taken = {v.name for s in N.walk([*before, loop, *after]) for v in N.defines(s)}
    name, k = f"{acc.name}_all", 2
    while name in taken:
        name, k = f"{acc.name}_all_{k}", k + 1
    return acc, E.Var(name, acc.type, dims=acc.shape), spread


def _read_only_at(acc: E.Var, lanes: list[int], axis: int, after: list[N.Stmt], top: dict[str, E.Expr]) -> None:
    """Every statement after the loop that reads ``acc`` is a store or an atomic under a mask with a
    term that is false at every lane of the axis outside ``lanes`` (``t == 0``), so the values of
    the other lanes are never read; else NotButterfly."""
    if not lanes:
        raise NotButterfly("no lane holds every lane once")
    rank = len(acc.shape)
    top = {**top, **{s.var.name: s.value for s in N.walk(after) if isinstance(s, N.Let)}}
    for s in N.walk(after):
        if acc.name not in {v.name for e in N.exprs_of(s) for v in E.free_vars(e)}:
            continue
        if not isinstance(s, (N.Store, N.Atomic)) or s.mask is None:
            raise NotButterfly("a lane's partial read after the loop")
        if acc.name in _names(s.mask) or any(acc.name in _names(i) for i in s.index):
            raise NotButterfly("a lane's partial read by an index or a mask")
        if not any(_keeps_only(t, lanes, axis, rank) for t in E.conjuncts(E.resolve(s.mask, top))):
            raise NotButterfly("a lane's partial stored by a lane that does not hold the total")


def _keeps_only(term: E.Expr, lanes: list[int], axis: int, rank: int) -> bool:
    """``term`` is computed exactly (constants and lanes) and is false at every lane of the axis
    outside ``lanes``, whatever the other axes."""
    try:
        v = np.asarray(evaluate(term, {}), dtype=bool)
    except NotTree:
        return False
    v = v.reshape((1,) * (rank - v.ndim) + v.shape) if v.ndim <= rank else v
    if v.ndim != rank:
        return False
    moved = np.moveaxis(v, axis, -1).reshape(-1, v.shape[axis])
    outside = [i for i in range(moved.shape[1]) if i not in lanes]
    if moved.shape[1] == 1:  # (the term does not vary along the axis: it does not pick lanes)
        return False
    return not moved[:, outside].any()


def _fold(s: N.Assign) -> tuple[str, E.Expr, E.Expr | None]:
    """``acc := op(acc, o)`` or ``where(g, op(acc, o), acc)``: (op, ``o`` (a let's name or the call
    itself), ``g``)."""
    value, guard = s.value, None
    if isinstance(value, E.Where) and isinstance(value.other, E.Var) and value.other.name == s.var.name:
        guard, value = value.cond, value.then
    if isinstance(value, E.Bin) and value.op in FOLDS:
        for mine, other in ((value.lhs, value.rhs), (value.rhs, value.lhs)):
            if isinstance(mine, E.Var) and mine.name == s.var.name and isinstance(other, (E.Var, E.Call)):
                return value.op, other, guard
    raise NotButterfly("not a fold of a gathered value")


def _identity_where_not(acc: E.Var, op: str, guard: E.Expr, before: list[N.Stmt], top: dict[str, E.Expr]) -> bool:
    """Every definition of ``acc`` before the loop leaves the identity of ``op`` where ``guard`` is
    false: its start is the identity, each fold adds values masked to the identity by a term equal
    to ``guard``."""
    try:
        identity = _identity(op, acc.type).value
    except NotFolded:
        return False
    want = E.resolve(_bare(guard), top)
    seen = False
    for s in N.walk(before):
        if isinstance(s, N.Let) and s.var.name == acc.name:
            if not (isinstance(s.value, E.Full) and s.value.value == identity):
                return False
            seen = True
        elif isinstance(s, N.Assign) and s.var.name == acc.name:
            v = s.value
            if not (isinstance(v, E.Bin) and v.op == op):
                return False
            x = v.rhs if isinstance(v.lhs, E.Var) and v.lhs.name == acc.name else v.lhs
            while isinstance(x, E.Reduce) and x.op == FOLDS[op]:
                x = x.value
            if not (isinstance(x, E.Where) and isinstance(x.other, (E.Const, E.Full)) and x.other.value == identity):
                return False
            terms = [E.resolve(_bare(c), top) for c in E.conjuncts(x.cond)]
            if not any(E.same(t, want) for t in terms):
                return False
    return seen


def _bare(e: E.Expr) -> E.Expr:
    """``e`` with its tiles' placements taken off (``w[None, :, :]`` is ``w``): two guards written
    at different ranks compare equal."""
    if isinstance(e, E.Lift) and isinstance(e.value, E.Var):
        return e.value
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(e):  # type: ignore[arg-type]
        v = getattr(e, f.name)
        if isinstance(v, E.Expr):
            changes[f.name] = _bare(v)
        elif isinstance(v, tuple) and v and all(isinstance(x, E.Expr) for x in v):
            changes[f.name] = tuple(_bare(x) for x in v)
    return dataclasses.replace(e, **changes) if changes else e  # type: ignore[type-var]
