"""A running maximum and its rescaled sum updated in the two branches of a comparison, as the one
update both branches compute (``--schedule auto``), so that schedule/rescaled.py folds the pair.

The online softmax is often written with a branch (Milakov and Gimelshein's form)::

    if (v > m) { s = s * exp(m - v) + 1;  m = v; }  else { s += exp(v - m); }

Lifted, the branches are assignments under ``c`` and ``!c`` (``c = v > m`` taken before them).  With
``n = max(m, v)`` each branch is the update ``s := s * exp(m - n) + exp(v - n); m := n`` at the
value ``n`` takes there: under ``c`` ``n = v`` (``s * exp(m - v) + exp(v - v)``, and ``exp(0) = 1``);
under ``!c`` ``n = m`` (``s * exp(m - m) + exp(v - m) = s + exp(v - m)``).  The branches are replaced
by that one update, which schedule/rescaled.py recognises as a fold.

What is proved on the IR (else the loop stays as written): in a loop whose body is lets, loads and
assignments, a let ``c`` compares ``v`` with an accumulator ``m`` (``v > m``, ``v >= m``, ``m < v``, ``m
<= v``), ``v`` free of the loop's accumulators; the assignments of ``m`` and of one other accumulator
``s`` (and of no other accumulator that reads them) are under a common guard ``G`` and each also
under ``c`` or ``!c`` or neither; executing them symbolically from ``(s, m)`` in each case gives
``m = v`` under ``c`` and ``m`` unchanged under ``!c``, and ``s`` equal to the update above at the
case's ``n``, after ``E(a - a) = 1`` and ``x * 1 = x`` on both sides (``E`` ``exp`` or ``exp2``).  The
identity ``E(a - a) = 1`` holds for finite ``a``: rows of infinities or NaN may differ from the branch
form (which gives NaN there as well where ``v = m = -inf``).
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from .foldloops import guarded
from .rescaled import EXPONENTIALS


class _NoMatch(Exception):
    pass


def merge_branches(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each loop's branch updates of a running maximum and its rescaled sum merged."""
    taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    done = [0]

    def one(loop: N.For) -> N.For:
        try:
            merged = _merged(loop, taken)
        except _NoMatch:
            return loop
        done[0] += 1
        return merged

    body = N.map_loops(kernel.body, one)
    if not done[0]:
        return kernel
    doc = kernel.doc + " Its running maximum's branches are one update (schedule/branchmax.py)."
    return dataclasses.replace(kernel, body=body, doc=doc)


def _compared(value: E.Expr, accs: set[str]) -> tuple[str, E.Expr] | None:
    """``v > m`` / ``v >= m`` / ``m < v`` / ``m <= v`` with ``m`` an accumulator: (m, v)."""
    if not isinstance(value, E.Bin):
        return None
    if value.op in (">", ">="):
        big, small = value.lhs, value.rhs
    elif value.op in ("<", "<="):
        big, small = value.rhs, value.lhs
    else:
        return None
    if isinstance(small, E.Var) and small.name in accs and not _names(big) & accs:
        return small.name, big
    return None


def _case_of(guard: E.Expr | None, c: str | None, cmp: E.Expr | None) -> tuple[bool | None, list[E.Expr]]:
    """The term of ``guard`` on the comparison (True: it holds, False: its negation, None: neither) and
    its other terms; the comparison is the let ``c`` or, where ``cmp`` is given, that expression."""

    def holds(t: E.Expr) -> bool:
        return (isinstance(t, E.Var) and t.name == c) or (cmp is not None and E.same(t, cmp))

    terms = E.conjuncts(guard) if guard is not None else []
    case: bool | None = None
    rest = []
    for t in terms:
        if holds(t):
            case = True
        elif (
            isinstance(t, E.Un)
            and t.op == "!"
            and holds(t.value)
            or isinstance(t, E.Bin)
            and t.op == "=="
            and holds(t.lhs)
            and t.rhs == E.Const(0)
        ):
            case = False
        else:
            rest.append(t)
    return case, rest


def _simplified(e: E.Expr) -> E.Expr:
    """``e`` with ``E(a - a)`` as 1 and ``x * 1`` as ``x``."""

    def walk(x: E.Expr) -> E.Expr:
        x = E.map_children(x, walk)
        if isinstance(x, E.Call) and x.fn in EXPONENTIALS and len(x.args) == 1:
            a = x.args[0]
            if isinstance(a, E.Bin) and a.op == "-" and E.same(a.lhs, a.rhs):
                return E.Const(1.0, x.dtype)
        if isinstance(x, E.Bin) and x.op == "*":
            for one, other in ((x.lhs, x.rhs), (x.rhs, x.lhs)):
                if isinstance(one, E.Const) and one.value == 1:
                    return other
        return x

    return E.fold(walk(E.fold(e)))


def _merged(loop: N.For, taken: set[str]) -> N.For:
    if not all(isinstance(s, (N.Let, N.Load, N.Assign)) for s in loop.body):
        raise _NoMatch
    assigns = [(i, s) for i, s in enumerate(loop.body) if isinstance(s, N.Assign)]
    accs = {s.var.name for _, s in assigns}
    # the comparisons: lets (a branch and its else read one) and the guards' own terms
    candidates: list[tuple[int, str | None, E.Expr]] = [
        (i, x.var.name, x.value) for i, x in enumerate(loop.body) if isinstance(x, N.Let) and x.var.dtype == "i1"
    ]
    for i, a in assigns:
        if isinstance(a.value, E.Where):
            candidates.extend((i, None, t) for t in E.conjuncts(a.value.cond) if isinstance(t, E.Bin))
    seen: list[E.Expr] = []
    for at, c, cmp in candidates:
        found = _compared(cmp, accs)
        if found is None or any(E.same(cmp, x) for x in seen):
            continue
        seen.append(cmp)
        m, v = found
        first = at if c is None else at + 1
        mine = [(i, a) for i, a in assigns if i >= first]
        names = {a.var.name for _, a in mine}
        if any(a.var.name in names for i, a in assigns if i < first) or len(names) != 2 or m not in names:
            continue
        (s_name,) = names - {m}
        try:
            return _rewrite(loop, taken, c, None if c is not None else cmp, m, s_name, v, mine)
        except _NoMatch:
            continue
    raise _NoMatch


def _rewrite(
    loop: N.For,
    taken: set[str],
    c: str | None,
    cmp: E.Expr | None,
    m: str,
    s: str,
    v: E.Expr,
    mine: list[tuple[int, N.Assign]],
) -> N.For:
    """The merged loop for the comparison (the let ``c``, or the guards' term ``cmp``) of ``v`` with
    the running maximum ``m`` and the sum ``s`` (``mine``: their assignments)."""
    lets = {x.var.name: x.value for x in loop.body if isinstance(x, N.Let)}
    rest: list[E.Expr] | None = None
    steps: list[tuple[bool | None, str, E.Expr, int]] = []
    m_at = next(i for i, a in mine if a.var.name == m)
    for i, a in mine:
        guard, value = guarded(a.var.name, a.value)
        # (a guard's own comparison after m's assignment reads the new m: not the case's)
        case, others = _case_of(guard, c, cmp if i <= m_at else None)
        if rest is None:
            rest = others
        elif len(rest) != len(others) or not all(E.same(p, q) for p, q in zip(rest, others, strict=True)):
            raise _NoMatch  # another condition on some of them
        # lets read by the step that are defined after the comparison: only those before it (no lets
        # between the assignments read the accumulators: each reads the values as of its own position)
        between = [x for x in loop.body[:i] if isinstance(x, N.Let) and _names(x.value) & {m, s}]
        reads = _names(value) | (_names(guard) if guard is not None else set())
        if any(x.var.name != c and x.var.name in reads for x in between):
            raise _NoMatch
        steps.append((case, a.var.name, value, i))
    s0 = next(x.var for _, x in mine if x.var.name == s)
    m0 = next(x.var for _, x in mine if x.var.name == m)
    v = E.resolve(v, {k: x for k, x in lets.items() if k != c})
    finals = {}
    for case in (True, False):
        state: dict[str, E.Expr] = {s: s0, m: m0}
        for when, name, value, _ in steps:
            if when is None or when == case:
                state[name] = E.substitute(E.resolve(value, {k: x for k, x in lets.items() if k != c}), state)
        finals[case] = state
    if not (E.same(finals[True][m], v) and E.same(finals[False][m], m0)):
        raise _NoMatch
    fn = next((n.fn for n in finals[False][s].walk() if isinstance(n, E.Call) and n.fn in EXPONENTIALS), None)
    if fn is None:
        raise _NoMatch

    def update(top: E.Expr) -> E.Expr:
        return E.Bin(
            "+",
            E.Bin("*", s0, E.Call(fn, (E.Bin("-", m0, top),), s0.dtype)),
            E.Call(fn, (E.Bin("-", v, top),), s0.dtype),
        )

    for case, top in ((True, v), (False, m0)):
        if not E.same(_simplified(update(top)), _simplified(finals[case][s])):
            raise _NoMatch
    # the merged update, where the first of the branches' assignments stood
    first = mine[0][0]
    top = E.Var(N.fresh_name(f"{m}_new", taken), m0.type, dims=E.fold(E.Bin("max", m0, v)).shape)
    guard = E.conj(rest or [])
    merged_s: E.Expr = update(top)
    merged_m: E.Expr = top
    if rest:
        merged_s, merged_m = E.Where(guard, merged_s, s0), E.Where(guard, top, m0)
    line = loop.body[first].line
    new = [
        N.Let(top, E.fold(E.Bin("max", m0, v)), line=line),
        N.Assign(s0, E.fold(merged_s), line=line),
        N.Assign(m0, E.fold(merged_m), line=line),
    ]
    dropped = {i for i, _ in mine}
    body: list[N.Stmt] = []
    for i, x in enumerate(loop.body):
        if i == first:
            body.extend(new)
        if i not in dropped:
            body.append(x)
    return dataclasses.replace(loop, body=N.without_dead_lets(body))
