"""Grid-wide barriers (LANGUAGE.md 7.3, 7.10): under ``parallel b by n : block<cooperative>``,
``sync.barrier : block`` waits for every block of the grid.  Triton has no grid barrier, but a
launch ends when all its programs do, so a barrier between top-level statements of the block's
body splits the kernel into phases launched one after another: each phase's programs see every
store of the phases before.

A phase may not use what an earlier phase declared (a scalar, a buffer, a future: nothing carries
it across the launches); the block's parallel indices are the same in every phase.  A grid
barrier anywhere else (inside a loop, a branch or a thread level) cannot be split and is the
user's to restructure.
"""

from __future__ import annotations

import copy

from ..errors import CroqLoweringError
from ..frontend import ast as A

HINT = "put the grid barrier between top-level statements of the block, or split the work into two parallels"


def grid_phases(top: A.Parallel) -> list[A.Parallel]:
    """``top`` as the kernels of its phases, in order (``[top]`` where it has no grid barrier)."""
    if not any(b.cooperative for b in top.levels):
        return [top]
    body = top.body.stmts if isinstance(top.body, A.Block) else [top.body]
    phases: list[list[A.Stmt]] = [[]]
    for s in body:
        if _grid_barrier(s):
            phases.append([])
            continue
        nested = next((n for n in s.walk() if _grid_barrier(n)), None)
        if nested is not None:
            raise CroqLoweringError(
                "cannot lower to Triton: a grid-wide barrier that is not between top-level statements of the block",
                nested.span,
                HINT,
            )
        phases[-1].append(s)
    declared: set[str] = set()
    for phase in phases:
        for s in phase:
            used = {n.name for n in s.walk() if isinstance(n, A.Name)}
            crossing = sorted(used & declared)
            if crossing:
                raise CroqLoweringError(
                    f"cannot lower to Triton: '{crossing[0]}' is declared before a grid-wide barrier and used after it",
                    s.span,
                    "each side of a grid barrier is a launch of its own: recompute it, or keep it in a global buffer",
                )
        declared |= {d for s in phase for d in _declares(s)}
    out: list[A.Parallel] = []
    for phase in phases:
        p = copy.copy(top)
        p.levels = [copy.copy(b) for b in top.levels]
        for b in p.levels:
            b.cooperative = False
        p.body = A.Block(phase, span=top.body.span)
        out.append(p)
    return out


def _grid_barrier(n: A.Node) -> bool:
    return isinstance(n, A.Sync) and n.kind == "barrier" and n.level == "block"


def _declares(s: A.Stmt) -> set[str]:
    out: set[str] = set()
    for n in s.walk():
        if isinstance(n, (A.ScalarDecl, A.SpannedDecl)):
            out |= {d.name for d in n.items}
        elif isinstance(n, A.DmaStmt) and n.result:
            out.add(n.result)
        elif isinstance(n, A.Assign) and isinstance(n.target, A.Name):
            out.add(n.target.name)
    return out
