"""Welford's running mean and variance as the two passes they compute: a sum, then the squared
deviations from the mean, each a fold (``--schedule auto``).

CUDA normalisation kernels keep the mean and the sum of squared deviations of a row in one pass
(Welford's update, stable where the mean is large against the spread)::

    foreach j in [N] { d = v - mean;  mean += d / (j + 1);  m2 += d * (v - mean); }

Each step reads the mean the step before left: as written the loop is a chain through ``mean``, not
a fold, so schedule/foldloops.py cannot take it and each lane walks its row one element a step.  But
the chain has a closed form.  With ``c`` the steps taken so far, ``mean_c = mean_{c-1} + (v_c -
mean_{c-1}) / c`` gives ``mean_c = (v_1 + .. + v_c) / c`` (induction: ``c mean_c = (c - 1) mean_{c-1}
+ v_c``), whatever ``mean`` held before the first step; and ``m2_c = m2_{c-1} + (v_c - mean_{c-1})(v_c
- mean_c)`` gives ``m2_c = m2_0 + sum_i (v_i - mean_c)^2`` (the classical identity behind Welford's
method).  So the loop is rewritten as::

    S = 0;  foreach j { S += v; }          (the other folds of the loop stay in it)
    mean = c > 0 ? S / c : mean;
    foreach j { m2 += (v - mean) * (v - mean); }

two loops that fold (a sum, then a sum of squares around a loop-invariant mean: the two passes a
LayerNorm makes; whole rows are read once, schedule/foldloops.py shares the loads).  In exact
arithmetic the values are equal; in floating point the two-pass form is the textbook accurate one
(each deviation taken from the final mean), so the result moves within the type's rounding.

What the proof asks of the IR (else the loop stays as written):

* the loop steps by 1 over bounds the same for every lane; its body is ``let``s, loads and
  assignments only;
* ``mean := mean + (V - mean) / C`` (or under a guard ``where(G, .., mean)``), ``V`` read from the
  step's loads and lets, free of every variable the loop assigns; ``C`` (casts aside) is either
  ``j - start + 1`` -- then ``G`` reads nothing the loop defines, so every step of a lane counts -- or
  a counter ``n`` the loop assigns ``n := n + 1`` under the same guard, before ``mean``, starting
  from 0 (the statement before the loop that binds it is a constant 0);
* ``m2 := m2 + (V - mean_before) * (V - mean_after)`` under the same guard (factors in either order,
  through lets), assigned after ``mean``;
* nothing else in the loop reads ``mean`` or ``m2``, and nothing after the loop reads a value the
  loop defines (but its accumulators).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from .foldloops import guarded


class _NotWelford(Exception):
    pass


@dataclass(frozen=True)
class _Pair:
    mean: E.Var
    m2: E.Var
    guard: E.Expr | None
    value: E.Expr  # V, lets inlined
    count: E.Var | None  # a counter accumulator (None: j - start + 1)
    at: tuple[int, int]  # positions of the mean's and m2's assignments


def split_welford(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each loop the proof admits as its two passes."""
    taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    done = [0]
    body = _visit(kernel.body, [], taken, done)
    if not done[0]:
        return kernel
    doc = kernel.doc + " Its Welford updates are a sum and then squared deviations (schedule/welford.py)."
    return dataclasses.replace(kernel, body=body, doc=doc)


def _visit(body: list[N.Stmt], outside: list[N.Stmt], taken: set[str], done: list[int]) -> list[N.Stmt]:
    out: list[N.Stmt] = []
    for i, s in enumerate(body):
        after = body[i + 1 :] + outside
        if isinstance(s, N.For):
            s = dataclasses.replace(s, body=_visit(s.body, after, taken, done))
            try:
                out.extend(_split(s, out, after, taken))
            except _NotWelford:
                out.append(s)
                continue
            done[0] += 1
            continue
        if isinstance(s, N.While):
            s = dataclasses.replace(s, body=_visit(s.body, after, taken, done))
        elif isinstance(s, N.If):
            s = dataclasses.replace(
                s, then=_visit(s.then, after, taken, done), orelse=_visit(s.orelse, after, taken, done)
            )
        out.append(s)
    return out


def _increment(acc: str, value: E.Expr) -> E.Expr | None:
    """``acc + q`` (either order): q."""
    if isinstance(value, E.Bin) and value.op == "+":
        for mine, other in ((value.lhs, value.rhs), (value.rhs, value.lhs)):
            if isinstance(mine, E.Var) and mine.name == acc:
                return other
    return None


def _uncast(e: E.Expr) -> E.Expr:
    while isinstance(e, E.Cast):
        e = e.value
    return e


def _deviation(e: E.Expr, mean: str) -> E.Expr | None:
    """``V - mean``: V."""
    if isinstance(e, E.Bin) and e.op == "-" and isinstance(e.rhs, E.Var) and e.rhs.name == mean:
        return e.lhs
    return None


def _same_guard(a: E.Expr | None, b: E.Expr | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return E.same(a, b)


def _pair(loop: N.For) -> _Pair:
    """The mean and m2 of ``loop``'s Welford update, as the module docstring states."""
    if not (isinstance(loop.step, E.Const) and loop.step.value == 1) or loop.start.shape or loop.stop.shape:
        raise _NotWelford
    if not all(isinstance(s, (N.Let, N.Load, N.Assign)) for s in loop.body):
        raise _NotWelford
    j = loop.var.name
    assigns = {s.var.name: (i, s) for i, s in enumerate(loop.body) if isinstance(s, N.Assign)}
    if len(assigns) != sum(isinstance(s, N.Assign) for s in loop.body):
        raise _NotWelford  # an accumulator assigned twice
    defined = {v.name for s in loop.body for v in N.defines(s)} | {j}
    for name, (at, s) in assigns.items():
        guard, value = guarded(s.var.name, s.value)
        q = _increment(name, value)
        if q is None:
            continue
        mean_after = E.Var(f"{name}__after", s.var.type, dims=s.var.shape)
        lets = _versioned_lets(loop.body, name, at, mean_after)
        q = E.resolve(q, lets)
        if not (isinstance(q, E.Bin) and q.op == "/"):
            continue
        v = _deviation(q.lhs, name)
        if v is None or _names(v) & assigns.keys():
            continue
        count = _count(_uncast(q.rhs), loop, assigns, at, guard, lets)
        if count is False:
            continue
        if count is None and _names(E.resolve(guard, lets) if guard is not None else None) & defined:
            continue  # a guard that skips steps: j - start + 1 would not count the steps taken
        for other, (at2, s2) in assigns.items():
            if other in (name, count.name if isinstance(count, E.Var) else None) or at2 < at:
                continue
            guard2, value2 = guarded(s2.var.name, s2.value)
            p = _increment(other, value2)
            if p is None or not _same_guard(
                E.resolve(guard, lets) if guard is not None else None,
                E.resolve(guard2, lets) if guard2 is not None else None,
            ):
                continue
            p = E.resolve(E.substitute(p, {name: mean_after}), lets)  # (m2 is assigned after mean)
            if not (isinstance(p, E.Bin) and p.op == "*"):
                continue
            for old, new in ((p.lhs, p.rhs), (p.rhs, p.lhs)):
                vo, vn = _deviation(old, name), _deviation(new, mean_after.name)
                if vo is not None and vn is not None and E.same(vo, v) and E.same(vn, v):
                    return _Pair(s.var, s2.var, guard, v, count if isinstance(count, E.Var) else None, (at, at2))
    raise _NotWelford


def _versioned_lets(body: list[N.Stmt], acc: str, at: int, after: E.Var) -> dict[str, E.Expr]:
    """The lets of ``body`` with their reads of ``acc`` named ``after`` where they follow its
    assignment at ``at`` (they read its new value)."""
    out: dict[str, E.Expr] = {}
    for i, s in enumerate(body):
        if isinstance(s, N.Let):
            out[s.var.name] = E.substitute(s.value, {acc: after}) if i > at else s.value
    return out


def _count(
    c: E.Expr, loop: N.For, assigns: dict[str, tuple[int, N.Assign]], at: int, guard: E.Expr | None, lets: dict
) -> E.Var | None | bool:
    """The divisor's meaning: None for ``j - start + 1``, the counter's variable, or False."""
    j = loop.var.name
    lin = E.linear(c, [j])
    if lin is not None and lin[0] == {j: 1} and E.same(lin[1], E.fold(E.Bin("-", E.Const(1), loop.start))):
        return None
    if isinstance(c, E.Var) and c.name in assigns:
        at_n, s = assigns[c.name]
        g, value = guarded(s.var.name, s.value)
        one = _increment(c.name, value)
        same = _same_guard(
            E.resolve(g, lets) if g is not None else None, E.resolve(guard, lets) if guard is not None else None
        )
        if at_n < at and one is not None and isinstance(one, E.Const) and one.value == 1 and same:
            return s.var
    return False


def _starts_at_zero(name: str, before: list[N.Stmt]) -> bool:
    """The last statement before the loop that binds ``name`` binds it to 0."""
    for s in reversed(before):
        if isinstance(s, (N.Let, N.Assign)) and s.var.name == name:
            v = s.value
            if isinstance(v, E.Full):
                return bool(v.value == 0)
            return isinstance(v, E.Const) and v.value == 0
        if name in {v.name for v in N.defines(s)}:
            return False
    return False


def _split(loop: N.For, before: list[N.Stmt], after: list[N.Stmt], taken: set[str]) -> list[N.Stmt]:
    pair = _pair(loop)
    if pair.count is not None and not _starts_at_zero(pair.count.name, before):
        raise _NotWelford
    mean, m2 = pair.mean, pair.m2
    at_mean, at_m2 = pair.at
    # nothing but the two updates (and the lets inlined into them) reads mean or m2
    lets = {s.var.name: s.value for s in loop.body if isinstance(s, N.Let)}
    inlined = {n for n, v in lets.items() if _names(E.resolve(v, lets)) & {mean.name, m2.name}}
    for i, s in enumerate(loop.body):
        if i in (at_mean, at_m2) or (isinstance(s, N.Let) and s.var.name in inlined):
            continue
        if set().union(*(_names(x) for x in N.exprs_of(s))) & ({mean.name, m2.name} | inlined):
            raise _NotWelford
    defined = {v.name for s in loop.body for v in N.defines(s)} | {loop.var.name}
    later = set().union(*(_names(x) for s in after for x in N.exprs_of(s))) if after else set()
    if later & (defined - {s.var.name for s in loop.body if isinstance(s, N.Assign)}):
        raise _NotWelford
    total = E.Var(N.fresh_name(f"{mean.name}_sum", taken), mean.type, dims=mean.shape)
    add: E.Expr = E.Bin("+", total, pair.value)
    if pair.guard is not None:
        add = E.Where(pair.guard, add, total)
    first: list[N.Stmt] = []
    for i, s in enumerate(loop.body):
        if i == at_mean:
            first.append(N.Assign(total, E.fold(add), line=s.line))
        elif i != at_m2 and not (isinstance(s, N.Let) and s.var.name in inlined):
            first.append(s)
    carried = tuple(v for v in loop.carried if v.name not in (mean.name, m2.name)) + (total,)
    out: list[N.Stmt] = [
        N.Let(total, E.Full(mean.shape, 0.0, mean.type), line=loop.line),
        dataclasses.replace(loop, body=N.without_dead_lets(first), carried=carried),
    ]
    # the mean: the sum over the steps taken, where a step was taken
    if pair.count is not None:
        count: E.Expr = E.Cast(pair.count, mean.type)
        took: E.Expr = E.Bin(">", pair.count, E.Const(0))
    else:
        steps = E.fold(E.Bin("-", loop.stop, loop.start))
        count, took = E.Cast(steps, mean.type), E.Bin(">", steps, E.Const(0))
        if pair.guard is not None:
            took = E.Bin("&", pair.guard, took)
    out.append(N.Assign(mean, E.fold(E.Where(took, E.Bin("/", total, count), mean)), line=loop.body[at_mean].line))
    # the second pass: the loads and lets V and the guard read, under new names, then the squares
    rename: dict[str, E.Expr] = {}
    j2 = E.Var(N.fresh_name(loop.var.name, taken), loop.var.type, lo=loop.var.lo, hi=loop.var.hi)
    rename[loop.var.name] = j2
    wanted = _names(pair.value) | _names(pair.guard)
    needed: list[N.Stmt] = []
    for s in reversed(loop.body[:at_m2]):
        if isinstance(s, (N.Let, N.Load)) and s.var.name in wanted:
            needed.append(s)
            wanted |= set().union(*(_names(x) for x in N.exprs_of(s))) if N.exprs_of(s) else set()
    second: list[N.Stmt] = []
    for s in reversed(needed):
        var = dataclasses.replace(s.var, name=N.fresh_name(s.var.name, taken))
        if isinstance(s, N.Let):
            second.append(N.Let(var, E.substitute(s.value, rename), line=s.line))
        else:
            index = tuple(E.substitute(x, rename) for x in s.index)
            mask = rename.get(s.mask.name, s.mask) if s.mask is not None else None
            second.append(dataclasses.replace(s, var=var, index=index, mask=mask))  # type: ignore[arg-type]
        rename[s.var.name] = var
    deviation = E.fold(E.Bin("-", E.substitute(pair.value, rename), mean))
    dev = E.Var(N.fresh_name(f"{m2.name}_dev", taken), deviation.dtype, dims=deviation.shape)
    second.append(N.Let(dev, deviation, line=loop.body[at_m2].line))
    sq: E.Expr = E.Bin("+", m2, E.Bin("*", dev, dev))
    if pair.guard is not None:
        sq = E.Where(E.substitute(pair.guard, rename), sq, m2)
    second.append(N.Assign(m2, E.fold(sq), line=loop.body[at_m2].line))
    out.append(
        N.For(j2, loop.start, loop.stop, loop.step, second, pipeline=loop.pipeline, carried=(m2,), line=loop.line)
    )
    return out
