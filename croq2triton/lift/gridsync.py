"""Grid-wide barriers (LANGUAGE.md 7.3, 7.10): under ``parallel b by n : block<cooperative>``,
``sync.barrier : block`` waits for every block of the grid.  Triton has no grid barrier, but a
launch ends when all its programs do, so a barrier between top-level statements of the block's
body splits the kernel into phases launched one after another: each phase's programs see every
store of the phases before.

The block's parallel indices are the same in every phase.  A value an earlier phase computed
(``i = p # t``, a plain value of the thread) is computed again where a later phase uses it: its
declaration, a top-level statement of the block's body, is repeated at the start of that phase.
That is the same value only where it reads no memory (the barrier orders other blocks' writes
before the later phase), is bound once in the kernel, and reads only parameters, parallel
indices and other such values; anything else an earlier phase declared (a buffer, a future, a
value read from memory or assigned again) is refused where a later phase uses it.  A grid barrier
anywhere else (inside a loop, a branch or a thread level) cannot be split and is the user's to
restructure.
"""

from __future__ import annotations

import copy
import dataclasses

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
    binds = _binds(body)
    declared: set[str] = set()
    values: dict[str, A.Stmt] = {}  # the plain values the phases so far computed: their declarations
    carried: list[list[A.Stmt]] = []  # per phase: the declarations it repeats
    for phase in phases:
        needed: set[str] = set()
        for s in phase:
            used = {n.name for n in s.walk() if isinstance(n, A.Name)}
            for name in sorted(used & declared):
                if name not in values:
                    raise CroqLoweringError(
                        f"cannot lower to Triton: '{name}' is declared before a grid-wide barrier and used after it"
                        f" ({_why(name, body, binds)})",
                        s.span,
                        "each side of a grid barrier is a launch of its own: recompute it, or keep it in a global buffer",
                    )
                needed |= _closure(name, values)
        carried.append([copy.deepcopy(d) for n, d in values.items() if n in needed])  # (in source order)
        for s in phase:
            for name, d in _values(s, binds, values).items():
                values[name] = d
        declared |= {d for s in phase for d in _declares(s)}
    out: list[A.Parallel] = []
    for phase, repeated in zip(phases, carried, strict=True):
        p = copy.copy(top)
        p.levels = [copy.copy(b) for b in top.levels]
        for b in p.levels:
            b.cooperative = False
        p.body = A.Block([*repeated, *phase], span=top.body.span)
        out.append(p)
    return out


def _binds(body: list[A.Stmt]) -> dict[str, int]:
    """How often each name is bound anywhere in the kernel (declared, assigned, counted by a loop)."""
    out: dict[str, int] = {}
    for s in body:
        for n in s.walk():
            names: list[str] = []
            if isinstance(n, A.Declarator):
                names = [n.name]
            elif isinstance(n, A.Assign) and isinstance(n.target, A.Name):
                names = [n.target.name]
            elif isinstance(n, A.IncDec):
                names = [n.target]
            elif isinstance(n, (A.Within, A.PBy)):
                names = list(n.names)
            elif isinstance(getattr(n, "result", None), str):
                names = [n.result]  # type: ignore[attr-defined]
            for name in names:
                out[name] = out.get(name, 0) + 1
    return out


def _values(s: A.Stmt, binds: dict[str, int], values: dict[str, A.Stmt]) -> dict[str, A.Stmt]:
    """The plain values the top-level statement ``s`` declares, each with a declaration of it alone
    that a later phase can repeat (see the module's docstring)."""
    known = dict(values)  # (an item may read the items before it: ``int a = 1, b = a + 1;``)
    if isinstance(s, A.AssignStmt):
        for a in s.items:
            if isinstance(a.target, A.Name) and a.op == "=" and _plain(a.value, a.target.name, binds, known):
                known[a.target.name] = dataclasses.replace(s, items=[a])
    elif isinstance(s, A.ScalarDecl) and s.storage is None:
        for d in s.items:
            if not d.dims and d.init is not None and d.fill is None and _plain(d.init, d.name, binds, known):
                known[d.name] = dataclasses.replace(s, items=[d])
    return {name: d for name, d in known.items() if name not in values}


IMPURE = (A.At, A.Call, A.Select, A.IncDec)  # memory reads, calls, futures, side effects


def _plain(value: A.Expr, name: str, binds: dict[str, int], values: dict[str, A.Stmt]) -> bool:
    """Is ``name = value`` the same value wherever it is computed again?"""
    if binds.get(name) != 1 or any(isinstance(n, IMPURE) for n in value.walk()):
        return False
    return all(n.name in values or n.name not in binds for n in value.walk() if isinstance(n, A.Name))


def _closure(name: str, values: dict[str, A.Stmt]) -> set[str]:
    """``name`` and the carried values its declaration reads, and theirs."""
    out: set[str] = set()
    todo = [name]
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.add(n)
        todo.extend(x.name for x in values[n].walk() if isinstance(x, A.Name) and x.name in values)
    return out


def _why(name: str, body: list[A.Stmt], binds: dict[str, int]) -> str:
    """Why an earlier phase's ``name`` is not carried to a later one."""
    if binds.get(name, 0) > 1:
        return "it is assigned more than once, so no one value of it is carried"
    for s in body:
        for n in s.walk():
            if isinstance(n, (A.SpannedDecl, A.EventDecl)) and any(d.name == name for d in n.items):
                return "a buffer lives for one launch"
            if isinstance(n, A.DmaStmt) and n.result == name:
                return "a future lives for one launch"
    return "only a value computed from parameters, indices and other such values is computed again after it"


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
