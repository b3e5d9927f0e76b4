"""Units (warps, warpgroups) that each issue MMAs with an accumulator of their own, where lift/units.py
cannot concatenate their tiles (a unit index that also picks a shared part, an epilogue of each
unit's threads): the units unrolled, one copy of the unit's code per unit index (LANGUAGE.md 7.3:
a ``parallel`` of units runs its body once per unit, concurrently).

Concurrent units are one sequential program where nothing orders them but their barriers: the code
between two barriers runs for unit 0, then unit 1, ...; a barrier (``sync.shared``) is reached by
every unit before any goes on, so it stays one, between the units' copies; a loop with a barrier
inside (its bounds the same for every unit) is one loop whose body interleaves the units the same
way.  Each copy's names are its own (``acc`` of unit 1 is ``acc__u1``); the buffers of the block
(``shared``) and the names of the code around are the units' together.  A unit index is a
constant in each copy (``p__u1`` is 1 of 2); a wait on a future (an MMA's, a copy's) is its unit's
own and stays in each copy.  Units that wait on or trigger events, or with a
barrier under a condition, are not unrolled.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Callable

from ..frontend import ast as A
from ..sema.levels import chain_levels, chains
from ..tir import expr as E
from .localnames import defined_names, rename
from .sequence import event_name
from .terms import Bounded

MAX_UNITS = 8  # more copies than this: the kernel would grow past what is worth compiling


class NotUnrolled(Exception):
    """Units that cannot be unrolled; ``node``: where, and ``reason`` what (None: no reason to
    give beyond the first refusal)."""

    def __init__(self, reason: str | None = None, node: A.Node | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node


def unroll_units(top: A.Parallel) -> tuple[A.Parallel, dict[str, Bounded]] | None:
    """``top`` with its parallels of units that issue MMAs unrolled, and the constant unit indices
    of the copies; None where there is none to unroll; :class:`NotUnrolled` where one cannot be."""
    new = copy.deepcopy(top)
    units: set[int] = set()  # the levels of units (annotated, or by their place in the chain)
    for chain in chains(new):
        for b, lvl in zip(chain, chain_levels(chain), strict=True):
            if lvl in ("group", "group-4") and all(b is not t for t in new.levels):
                units.add(id(b))

    def target(p: A.Node) -> bool:
        return (
            isinstance(p, A.Parallel)
            and p is not new
            and bool(p.levels)
            and all(id(b) in units for b in p.levels)
            and not p.is_async
            and any(isinstance(n, A.MmaOp) for n in p.body.walk())
        )

    if not any(target(p) for p in new.walk()):
        return None
    fixed: dict[str, Bounded] = {}
    events = {d.name for n in new.walk() if isinstance(n, A.EventDecl) for d in n.items}
    _replace(new, fixed, target, events)  # NotUnrolled where it cannot
    return new, fixed


def _replace(node: A.Node, fixed: dict[str, Bounded], target: Callable[[A.Node], bool], events: set[str]) -> None:
    """Every unit parallel with MMAs under ``node`` replaced by its unrolled block, in place."""
    for f in dataclasses.fields(node):
        v = getattr(node, f.name)
        if isinstance(v, A.Parallel) and target(v):
            setattr(node, f.name, _unrolled(v, fixed, events))
        elif isinstance(v, list):
            setattr(
                node,
                f.name,
                [_unrolled(x, fixed, events) if isinstance(x, A.Parallel) and target(x) else x for x in v],
            )
    for child in node.children():
        _replace(child, fixed, target, events)


def _on_event(n: A.Node, events: set[str]) -> bool:
    """A trigger, or a wait on an event (a wait on a future is each unit's own: it stays in its copy)."""
    if isinstance(n, A.Trigger):
        return True
    return isinstance(n, A.Wait) and any(event_name(x) in events for x in n.items)


def _unrolled(p: A.Parallel, fixed: dict[str, Bounded], events: set[str]) -> A.Block:
    names: list[str | None] = []
    counts: list[int] = []
    for b in p.levels:
        vs: list[str | None] = list(b.vars) if b.vars is not None else [b.name]
        for var, bound in zip(vs, b.bound, strict=True):
            n = bound.value if isinstance(bound, A.IntLit) else None
            if not isinstance(n, int) or n < 1:
                raise NotUnrolled()
            names.append(var)
            counts.append(n)
    total = 1
    for n in counts:
        total *= n
    if total > MAX_UNITS:
        raise NotUnrolled()
    event = next((n for n in p.body.walk() if _on_event(n, events)), None)
    if event is not None and any(isinstance(n, A.InThreads) and n.is_async for n in p.body.walk()):
        raise NotUnrolled()  # warp roles (lift/collapse.py): why they did not lift is the first refusal
    if event is not None:
        raise NotUnrolled("units that each issue MMAs and wait on or trigger events", event)
    local = defined_names(p.body)
    for n in p.body.walk():  # an accumulator of the code around: the units own parts of it, not copies
        acc = n.acc if isinstance(n, (A.MmaOp, A.MmaStore)) else n.target if isinstance(n, A.MmaFill) else None
        if isinstance(acc, A.Name) and acc.name not in local:
            raise NotUnrolled()
    clones: list[list[A.Stmt]] = []
    for k, index in enumerate(itertools.product(*(range(n) for n in counts))):
        renames = {x: f"{x}__u{k}" for x in local}
        for var, i, n in zip(names, index, counts, strict=True):
            if var:
                renames[var] = f"{var}__u{k}"
                fixed[renames[var]] = Bounded(E.Const(i), E.Const(n))
        body = copy.deepcopy(p.body)
        rename(body, renames)
        stmts = _stmts(body)
        if k:  # the block's buffers are declared once
            stmts = [s for s in stmts if not (isinstance(s, A.SpannedDecl) and s.storage == "shared")]
        clones.append(stmts)
    if any(len(c) != len(clones[0]) for c in clones):
        raise NotUnrolled()
    return A.Block(_interleave(clones), span=p.span)


def _stmts(s: A.Stmt) -> list[A.Stmt]:
    return list(s.stmts) if isinstance(s, A.Block) else [s]


def _barrier(s: A.Node) -> bool:
    return any(isinstance(n, A.Sync) and n.kind in ("shared", "barrier") for n in s.walk())


def _interleave(clones: list[list[A.Stmt]]) -> list[A.Stmt]:
    """The units' copies of one statement list, the code between barriers unit after unit."""
    out: list[A.Stmt] = []
    pending: list[list[A.Stmt]] = [[] for _ in clones]

    def flush() -> None:
        for p in pending:
            out.extend(p)
            p.clear()

    for i, s0 in enumerate(clones[0]):
        if not _barrier(s0):
            for k, c in enumerate(clones):
                pending[k].append(c[i])
            continue
        flush()
        if isinstance(s0, A.Sync):
            out.append(s0)
        elif isinstance(s0, A.Block):
            out.append(A.Block(_interleave([_stmts(c[i]) for c in clones]), span=s0.span))
        elif isinstance(s0, A.Foreach) and all(_same_header(s0, c[i]) for c in clones):
            body = A.Block(_interleave([_stmts(c[i].body) for c in clones]), span=s0.body.span)  # type: ignore[attr-defined]
            out.append(dataclasses.replace(s0, body=body))
        elif isinstance(s0, A.Foreach):
            raise NotUnrolled("units that each issue MMAs, with a barrier in a loop whose bounds differ by unit", s0)
        else:
            raise NotUnrolled("units that each issue MMAs, with a barrier under a condition", s0)
    flush()
    return out


def _same_header(a: A.Foreach, b: A.Stmt) -> bool:
    return isinstance(b, A.Foreach) and a.items == b.items and a.suffixes == b.suffixes
