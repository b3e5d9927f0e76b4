"""Programs that can do nothing, left out of the grid.

A block split one row a program (schedule/widen.py) launches as many programs as the source's block
had threads: ``cdiv(M, 64) * 64`` programs for ``M`` rows, those past ``M`` only masked.  They cost a
GPU little, but Triton's interpreter runs every program in turn (a split softmax of 3 rows ran 64
programs, 21 times the work).

The proof: along a grid axis of program id ``p``, every statement with an effect (a store, an
atomic, a TMA store, a print, an assert) is guarded by ``c * p + lanes < bound`` (a conjunct of its
mask or of the conditions around it, after the lets it reads are substituted; ``lanes`` lane
indices and constants, never negative), ``bound`` an expression of the kernel's scalar arguments.
A program ``p >= cdiv(bound, c)`` then has no effect.  Where the grid along that axis is the same
size rounded up to whole blocks (``cdiv(M, 64) * 64`` programs, each guarded by ``p < M``), it becomes
``cdiv(bound, c)`` (``M``); a grid of another form stays (the bound would be ``min(grid, ...)``,
which only the launch's sizes decide), and so does the grid of a kernel that reads its extent.  Anything else (an effect without that guard, a variable the kernel
re-binds on the way to the guard) leaves the grid as it is.
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N

EFFECTS = (N.Store, N.Atomic, N.TmaStore, N.Print, N.Assert)


def trim_grid(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each grid axis cut at the bound every effect's guard puts on its program id."""
    if len(kernel.program_ids) != len(kernel.grid) or _reads_grid(kernel):
        return kernel
    lets = _lets(kernel)
    if lets is None:
        return kernel
    guarded = _guards(kernel.body, [])
    if not guarded:  # (a kernel of no effect: as it is)
        return kernel
    grid = list(kernel.grid)
    for axis, p in enumerate(kernel.program_ids):
        bound = _common_bound(guarded, p.name, kernel, lets)
        if bound is None or E.same(grid[axis], bound):
            continue
        if _rounded_up(grid[axis], bound):
            grid[axis] = bound
    if grid == list(kernel.grid):
        return kernel
    return dataclasses.replace(kernel, grid=tuple(grid))


def _reads_grid(kernel: N.Kernel) -> bool:
    """Whether the kernel reads the grid's extent (``tl.num_programs``: a grid-stride loop would change)."""
    return any(
        isinstance(n, E.Call) and n.fn == "num_programs"
        for s in N.walk(kernel.body)
        for x in N.exprs_of(s)
        for n in x.walk()
    )


def _lets(kernel: N.Kernel) -> dict[str, E.Expr] | None:
    """The value of each let; None where a let's variable is defined twice (its value would depend
    on where it is read). Variables the kernel re-binds are left out."""
    assigned = {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Assign)}
    out: dict[str, E.Expr] = {}
    for s in N.walk(kernel.body):
        if not isinstance(s, N.Let) or s.var.name in assigned:
            continue
        if s.var.name in out:
            return None
        out[s.var.name] = s.value
    return out


def _unit_lanes_zero(e: E.Expr) -> E.Expr:
    """``e`` with each one-element lane (``tl.arange(0, 1)``) read as 0 and a tile placed on an axis
    (``r[:, None]``) read as its value, through sums, differences and products (else as it is)."""
    if isinstance(e, E.Arange) and e.n == 1:
        return E.Const(0)
    if isinstance(e, E.Lift):
        inner = _unit_lanes_zero(e.value)
        return inner if not inner.shape else e
    if isinstance(e, E.Bin) and e.op in ("+", "-", "*"):
        lhs, rhs = _unit_lanes_zero(e.lhs), _unit_lanes_zero(e.rhs)
        if lhs.shape or rhs.shape:
            return e
        return E.Bin(e.op, lhs, rhs)
    return e


def _guards(body: list[N.Stmt], around: list[E.Expr]) -> list[list[E.Expr]]:
    """Per statement with an effect, the conditions that guard it: the conditions of the branches it
    is in (an ``else`` adds none) and its mask."""
    out: list[list[E.Expr]] = []
    for s in body:
        if isinstance(s, EFFECTS):
            mask = getattr(s, "mask", None)
            out.append([*around, *([mask] if mask is not None else [])])
        elif isinstance(s, (N.For, N.While)):
            out += _guards(s.body, around)
        elif isinstance(s, N.If):
            out += _guards(s.then, [*around, s.cond]) + _guards(s.orelse, around)
    return out


def _common_bound(guarded: list[list[E.Expr]], pid: str, kernel: N.Kernel, lets: dict[str, E.Expr]) -> E.Expr | None:
    """The launcher's ``bound`` where every effect is guarded by ``pid < bound``, the same bound each."""
    found: E.Expr | None = None
    for conds in guarded:
        mine = None
        for cond in conds:
            for term in E.conjuncts(E.resolve(cond, lets)):
                mine = mine or _bound_of(term, pid, kernel)
        if mine is None or found is not None and not E.same(found, mine):
            return None
        found = mine
    return found


def _bound_of(term: E.Expr, pid: str, kernel: N.Kernel) -> E.Expr | None:
    """How many programs along ``pid`` may have an effect (as the launcher computes it) where ``term``
    is ``c * pid + lanes < bound`` (or ``bound > ...``), ``lanes`` never negative (lane indices and
    constants at least 0): ``cdiv(bound, c)``, ``bound`` itself where ``c`` is 1."""
    if not isinstance(term, E.Bin) or term.op not in ("<", ">"):
        return None
    low, high = (term.lhs, term.rhs) if term.op == "<" else (term.rhs, term.lhs)
    coef = None
    for part in _addends(_unit_lanes_zero(low)):
        c = _times(part, pid)
        if c is not None and coef is None:
            coef = c
        elif not _never_negative(part):
            return None
    host = kernel.on_host(high)
    if coef is None or host is None:
        return None
    bound = E.fold(host)
    return bound if coef == 1 else E.fold(E.CDiv(bound, E.Const(coef)))


def _addends(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.Bin) and e.op == "+":
        return _addends(e.lhs) + _addends(e.rhs)
    return [e]


def _times(e: E.Expr, pid: str) -> int | None:
    """``c`` where ``e`` is ``pid`` or ``c * pid`` (``c`` a positive constant)."""
    if isinstance(e, E.Var) and e.name == pid:
        return 1
    if isinstance(e, E.Bin) and e.op == "*":
        for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(a, E.Var) and a.name == pid and isinstance(b, E.Const) and isinstance(b.value, int):
                return b.value if b.value > 0 else None
    return None


def _never_negative(e: E.Expr) -> bool:
    """A lane index (``tl.arange``, placed on an axis or not) or a constant of at least 0."""
    if isinstance(e, E.Lift):
        return _never_negative(e.value)
    if isinstance(e, E.Arange):
        return True
    return isinstance(e, E.Const) and isinstance(e.value, int) and e.value >= 0


def _rounded_up(grid: E.Expr, bound: E.Expr) -> bool:
    """``grid`` is ``cdiv(size, c) * c`` and ``bound`` the size itself (a variable: not negative), or
    ``grid`` is ``cdiv(size, c * k) * k`` and ``bound`` is ``cdiv(size, c)`` (at least ``bound``)."""
    g = E.fold(grid)
    if not (isinstance(g, E.Bin) and g.op == "*"):
        return False
    for a, b in ((g.lhs, g.rhs), (g.rhs, g.lhs)):
        if not (isinstance(a, E.CDiv) and isinstance(b, E.Const) and isinstance(a.rhs, E.Const)):
            continue
        if isinstance(bound, E.Var) and E.same(a.rhs, b) and E.same(a.lhs, bound):
            return True
        if (
            isinstance(bound, E.CDiv)
            and isinstance(bound.lhs, E.Var)
            and isinstance(bound.rhs, E.Const)
            and E.same(a.lhs, bound.lhs)
            and int(a.rhs.value) == int(bound.rhs.value) * int(b.value)
        ):
            return True
    return False
