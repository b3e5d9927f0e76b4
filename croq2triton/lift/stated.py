"""What a GEMM kernel states about how it runs: the inputs of the source schedule.

The contraction analysis (lift/contraction.py) proves *what* a kernel computes and forgets how
the source runs it.  This module reads the how off the checked AST of the same kernel: how many
threads execute the reduction (the warpgroups, warps or threads of the MMA's units, less the roles
that do not compute), the depth of its stage ring (arrays of shared buffers or events indexed by
stage), whether it reads through TMA, declares warp roles, and walks output tiles in a loop of its
own (a persistent kernel).  :func:`croq2triton.schedule.policy.source` turns these facts and the
source's tile into the :class:`~croq2triton.schedule.schedule.Schedule` of ``--schedule source``.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from ..frontend import ast as A
from ..sema.consteval import const_int
from ..sema.levels import IMPLICIT_THREADS, chain_levels, chains
from ..tir.contract import Stated
from .terms import unparen


def stated(top: A.Parallel, constants: dict[str, int], tensors: set[str], reduction_line: int) -> Stated:
    """The facts of :class:`Stated` for the kernel ``top`` whose reduction is on ``reduction_line``
    (``tensors``: the function's tensor parameters, ``constants``: integers known when translating)."""
    value = _values(constants)
    kinds: dict[int, str] = {}
    for chain in chains(top):
        for b, lvl in zip(chain, chain_levels(chain), strict=True):
            kinds[id(b)] = lvl
    threads = _Threads(kinds, value, tensors, reduction_line)
    threads.walk(top, Fraction(1), 1, {}, at_block=True)
    ring = 0
    tma = tma_store = roles = False
    for n in top.walk():
        if (isinstance(n, A.SpannedDecl) and n.storage == "shared") or isinstance(n, A.EventDecl):
            ring = max([ring] + [_slots(d.dims, value) for d in n.items])
        elif isinstance(n, A.DmaStmt) and n.engine == "tma":
            if _root(n.src) in tensors:
                tma = True
            else:
                tma_store = True
        elif isinstance(n, A.InThreads) and n.is_async:
            roles = True
    if ring and threads.in_flight:
        ring += 1
    return Stated(
        threads=int(threads.found) if threads.found else 0,
        stages=ring,
        tma=tma,
        tma_store=tma_store,
        roles=roles,
        persistent=threads.tile_loop,
    )


COMPOUND = (A.Block, A.Foreach, A.With, A.If, A.Parallel)  # statements that hold others


def _values(constants: dict[str, int]) -> Callable[[A.Expr], int | None]:
    def name_value(n: A.Name) -> int | None:
        return constants.get(n.name)

    return lambda e: const_int(e, name_value)


def _slots(dims: list[A.Expr], value: Callable[[A.Expr], int | None]) -> int:
    """The slots of a one-dimensional array of buffers or events (``lhs_s[STAGES]``): a ring."""
    if len(dims) != 1:
        return 0
    n = value(dims[0])
    return n if n is not None and n > 0 else 0


def _releases_in_flight(loop: A.Foreach) -> bool:
    """Does the loop free its stage right after ``mma.commit``, without waiting for the MMAs?  Then
    one tile more than the ring's slots is in flight (the next copy overwrites a slot the committed
    MMAs may still read); Triton never lets a load overwrite a buffer an MMA may still read, so the
    same overlap takes one stage more (tutorial v3 with ``STAGES = 1``: 0.54 -> 0.73 of cuBLAS at
    8192^3 with it, perf/RESULTS.md 2026-11-30)."""
    body = loop.body.stmts if isinstance(loop.body, A.Block) else [loop.body]
    return any(isinstance(a, A.MmaCommit) and isinstance(b, A.Trigger) for a, b in zip(body, body[1:]))


def _root(e: A.Expr) -> str | None:
    """The name a view expression starts from (``lhs`` of ``lhs.subspan(..).at(..)``)."""
    node: A.Node = unparen(e)
    while not isinstance(node, A.Name):
        inner = next((c for c in node.children() if isinstance(c, A.Expr)), None)
        if inner is None:
            return None
        node = unparen(inner)
    return node.name


class _Threads:
    """The threads that execute the reduction's statement: the product of the extents of the
    levels around it (a warpgroup unit is 128 threads, a warp 32), scaled by the share of units
    each enclosing role's condition selects (``wg >= 1`` of ``wg by 3``: two thirds)."""

    def __init__(
        self, kinds: dict[int, str], value: Callable[[A.Expr], int | None], tensors: set[str], line: int
    ) -> None:
        self.kinds = kinds
        self.tensors = tensors
        self.value = value
        self.line = line
        self.found: Fraction | None = None
        self.tile_loop = False  # a block-level loop around the reduction and the stores
        self.in_flight = False  # a loop that releases a stage while its MMAs may still read it

    def walk(self, s: A.Node, threads: Fraction, unit: int, extents: dict[str, int], at_block: bool) -> None:
        """``threads``: the product of the extents of the levels around ``s``; ``unit``: the threads
        of each unit of the innermost group level that no thread level has split yet."""
        if isinstance(s, A.Parallel):
            extents = dict(extents)
            for b in s.levels:
                kind = self.kinds.get(id(b), "thread")
                if kind in ("block", "cluster", "device"):
                    continue
                at_block = False
                names = list(b.vars) if b.vars is not None else [b.name]
                for name, bound in zip(names, b.bound, strict=False):
                    n = self.value(bound)
                    if n is None:
                        return
                    threads *= n
                    if name:
                        extents[name] = n
                unit = 1 if kind == "thread" else IMPLICIT_THREADS.get(kind, 1)
            self.walk(s.body, threads, unit, extents, at_block)
            return
        if isinstance(s, A.InThreads):
            share = self.share(s.cond, extents)
            self.walk(s.body, threads * share if share is not None else threads, unit, extents, at_block)
            return
        if isinstance(s, A.Foreach) and at_block and self.covers(s):
            self.tile_loop = True
        if isinstance(s, A.Foreach) and _releases_in_flight(s):
            self.in_flight = True
        if isinstance(s, A.Stmt) and not isinstance(s, COMPOUND) and self.at_reduction(s) and self.found is None:
            self.found = threads * unit
        for c in s.children():
            if isinstance(c, A.Stmt):
                self.walk(c, threads, unit, extents, at_block)

    def covers(self, loop: A.Foreach) -> bool:
        """A loop at block level whose body holds the reduction and a store after it: it walks
        output tiles (LANGUAGE.md 7.3: a persistent kernel's tile loop)."""
        reduction = store = False
        for n in loop.body.walk():
            reduction = reduction or (isinstance(n, A.Stmt) and self.at_reduction(n))
            store = store or self.stores(n)
        return reduction and store

    def at_reduction(self, s: A.Stmt) -> bool:
        return s.span is not None and s.span.line == self.line

    def stores(self, n: A.Node) -> bool:
        """An MMA store, a copy into a tensor or an element write of one."""
        if isinstance(n, A.DmaStmt):
            return _root(n.dst) in self.tensors
        if isinstance(n, A.Assign):
            return _root(n.target) in self.tensors
        return isinstance(n, A.MmaStore)

    def share(self, cond: A.Expr, extents: dict[str, int]) -> Fraction | None:
        """The share of a level's units a role condition selects (``v == c``, ``v >= c``, ``&&``)."""
        c = unparen(cond)
        if isinstance(c, A.Binary) and c.op == "&&":
            a, b = self.share(c.lhs, extents), self.share(c.rhs, extents)
            return a * b if a is not None and b is not None else None
        if not (isinstance(c, A.Binary) and isinstance(unparen(c.lhs), A.Name)):
            return None
        n = extents.get(unparen(c.lhs).name)  # type: ignore[attr-defined]
        k = self.value(c.rhs)
        if n is None or k is None:
            return None
        count = {
            "==": 1 if 0 <= k < n else 0,
            "!=": n - 1 if 0 <= k < n else n,
            ">=": n - max(0, k),
            ">": n - max(0, k + 1),
            "<": min(n, k),
            "<=": min(n, k + 1),
        }.get(c.op)
        return Fraction(max(0, count), n) if count is not None else None
