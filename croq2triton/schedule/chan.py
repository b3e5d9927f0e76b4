"""Welford's update of a count, a mean and a sum of squared deviations, as the statements
schedule/moments.py writes and schedule/foldloops.py folds a tile at a time (Chan's formula combines
blocks: :meth:`~croq2triton.schedule.foldloops._Rewrite.welford`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..tir import expr as E
from ..tir import nodes as N


@dataclass(frozen=True)
class Group:
    """Welford's update of ``(count, mean, m2)`` by ``value`` where ``guard`` holds: the let ``diff``
    and three assignments (:func:`update`)."""

    count: E.Var
    mean: E.Var
    m2: E.Var
    value: E.Expr
    guard: E.Expr | None
    diff: E.Var

    @property
    def names(self) -> tuple[str, str, str]:
        return self.count.name, self.mean.name, self.m2.name


def update(group: Group, line: int) -> list[N.Stmt]:
    """The statements of one step of ``group``::

    diff = value - mean;  count := count + [g];  mean := mean + [g] diff / max(count, 1);
    m2 := m2 + [g] diff * (value - mean)

    (``[g] v``: ``where(g, v, 0)``; ``max(count, 1)``: no division by 0 where the guard fails)."""
    n, m, q, x, g = group.count, group.mean, group.m2, group.value, group.guard
    one, zero = E.Const(1.0, n.type), E.Const(0.0, n.type)

    def on(v: E.Expr) -> E.Expr:
        return v if g is None else E.Where(g, v, zero)

    return [
        N.Let(group.diff, E.Bin("-", x, m), line=line),
        N.Assign(n, E.Bin("+", n, on(one)), line=line),
        N.Assign(m, E.Bin("+", m, on(E.Bin("/", group.diff, E.Bin("max", n, one)))), line=line),
        N.Assign(q, E.Bin("+", q, on(E.Bin("*", group.diff, E.Bin("-", x, m)))), line=line),
    ]


def groups(body: list[N.Stmt]) -> list[tuple[Group, list[int]]]:
    """The Welford updates of ``body`` (exactly as :func:`update` writes them, in that order, one
    statement after the other): each group and the positions of its four statements."""
    out: list[tuple[Group, list[int]]] = []
    for i, s in enumerate(body[: len(body) - 3]):
        if not (isinstance(s, N.Let) and isinstance(s.value, E.Bin) and s.value.op == "-"):
            continue
        mean = s.value.rhs
        steps = body[i + 1 : i + 4]
        if not (isinstance(mean, E.Var) and all(isinstance(x, N.Assign) for x in steps)):
            continue
        count, assigned_mean, m2 = (x.var for x in steps if isinstance(x, N.Assign))
        if assigned_mean.name != mean.name:
            continue
        first = steps[0]
        assert isinstance(first, N.Assign)
        step = first.value.rhs if isinstance(first.value, E.Bin) else None
        guard = step.cond if isinstance(step, E.Where) else None
        group = Group(count, assigned_mean, m2, s.value.lhs, guard, s.var)
        made = update(group, s.line)
        if all(_same_stmt(a, b) for a, b in zip(made, body[i : i + 4], strict=True)):
            out.append((group, [i, i + 1, i + 2, i + 3]))
    return out


def _same_stmt(a: N.Stmt, b: N.Stmt) -> bool:
    if type(a) is not type(b) or not isinstance(a, (N.Let, N.Assign)) or not isinstance(b, (N.Let, N.Assign)):
        return False
    return a.var == b.var and E.same(a.value, b.value)
