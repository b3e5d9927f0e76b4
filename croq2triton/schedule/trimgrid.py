"""Programs that can do nothing, left out of the grid.

A block split one row a program (schedule/widen.py) launches as many programs as the source's block
had threads: ``cdiv(M, 64) * 64`` programs for ``M`` rows, those past ``M`` only masked.  They cost a
GPU little, but Triton's interpreter runs every program in turn (a split softmax of 3 rows ran 64
programs, 21 times the work).

The proof: along a grid axis whose program id ``p`` occurs with lanes of one element only, every
statement with an effect (a store, an atomic, a TMA store, a print, an assert) is guarded by
``p < bound`` (a conjunct of its mask or of the conditions around it, after the lets it reads are
substituted and the one-element lanes read as 0), ``bound`` an expression of the kernel's scalar
arguments.  A program ``p >= bound`` then has no effect, and the grid along that axis becomes
``max(min(grid, bound), 0)`` (``bound`` itself where it is a size the grid rounds up to whole blocks).  Anything else (an effect without that guard, a variable the kernel
re-binds on the way to the guard) leaves the grid as it is.
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N

EFFECTS = (N.Store, N.Atomic, N.TmaStore, N.Print, N.Assert)


def trim_grid(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each grid axis cut at the bound every effect's guard puts on its program id."""
    if len(kernel.program_ids) != len(kernel.grid):
        return kernel
    lets = _lets(kernel)
    if lets is None:
        return kernel
    guarded = _guards(kernel.body, [])
    if not guarded:  # (a kernel of no effect: as it is)
        return kernel
    scalars = {a.name: a.host for a in kernel.args if isinstance(a, N.Scalar)}
    pids = {p.name for p in kernel.program_ids}
    grid = list(kernel.grid)
    for axis, p in enumerate(kernel.program_ids):
        bound = _common_bound(guarded, p.name, pids, lets, scalars)
        if bound is None:
            continue
        if isinstance(bound, E.Var) and _rounded_up(grid[axis], bound):
            grid[axis] = bound  # (a size, rounded up to whole blocks by the grid: the size itself)
        else:
            grid[axis] = E.Bin("max", E.Bin("min", grid[axis], bound), E.Const(0))
    if grid == list(kernel.grid):
        return kernel
    return dataclasses.replace(kernel, grid=tuple(grid))


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


def _common_bound(
    guarded: list[list[E.Expr]], pid: str, pids: set[str], lets: dict[str, E.Expr], scalars: dict[str, E.Expr]
) -> E.Expr | None:
    """The launcher's ``bound`` where every effect is guarded by ``pid < bound``, the same bound each."""
    found: E.Expr | None = None
    for conds in guarded:
        mine = None
        for cond in conds:
            for term in E.conjuncts(E.resolve(cond, lets)):
                mine = mine or _bound_of(term, pid, pids, scalars)
        if mine is None or found is not None and not E.same(found, mine):
            return None
        found = mine
    return found


def _bound_of(term: E.Expr, pid: str, pids: set[str], scalars: dict[str, E.Expr]) -> E.Expr | None:
    """``bound`` (as the launcher computes it) where ``term`` is ``pid < bound`` or ``bound > pid``."""
    if not isinstance(term, E.Bin) or term.op not in ("<", ">"):
        return None
    low, high = (term.lhs, term.rhs) if term.op == "<" else (term.rhs, term.lhs)
    low = _unit_lanes_zero(low)
    terms = E.linear(low, [pid])
    if terms is None or terms[0] != {pid: 1} or not _is_zero(terms[1]):
        return None
    names = {v.name for v in E.free_vars(high)}
    if high.shape or names & pids or not names <= scalars.keys():
        return None
    return E.fold(E.substitute(high, {n: scalars[n] for n in names}))


def _is_zero(x: E.Expr) -> bool:
    x = E.fold(x)
    return isinstance(x, E.Const) and x.value == 0


def _rounded_up(grid: E.Expr, size: E.Var) -> bool:
    """``grid`` is ``cdiv(size, c) * c`` (at least ``size``, which is not negative)."""
    g = E.fold(grid)
    if not (isinstance(g, E.Bin) and g.op == "*"):
        return False
    for a, b in ((g.lhs, g.rhs), (g.rhs, g.lhs)):
        if isinstance(a, E.CDiv) and isinstance(b, E.Const) and E.same(a.rhs, b) and E.same(a.lhs, size):
            return True
    return False
