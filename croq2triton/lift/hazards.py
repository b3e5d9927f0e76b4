"""Block barriers between accesses of the block's threads to memory they share (the tile IR's
memory hazards).

Triton spreads a tile over the block's threads by layout, and the layouts of a load and of a store
need not put an element on the same thread.  The lifted program runs statement after statement
for all its lanes, as if every thread finished one statement before any began the next; on the GPU
one thread's store is seen by another thread's later load, and one thread's store does not
overtake another's earlier load of the same word, only where the block's threads meet in between
(``tl.debug_barrier()``).  Memory is shared that way in two cases:

* a tensor the program stores into and also reads at other indices (a state updated each loop
  iteration, ``State`` of a recurrence).  Where every load and store of the tensor uses the same
  index (``out.at(i) += x``: each element read and written through one pointer tile, so by the
  same thread) nothing is shared.  Which tensors a kernel writes is known before lifting
  (sema/writes.py): their descriptor loads are refused there (lift/tma.py), since a TMA load does
  not see the block's generic stores.  The indices need not be written alike: with the ``let``s
  they read put in, each dimension is either the same expression in every access (of the lanes
  and of names no statement re-binds) or a scalar in every access (one value for all lanes, a loop
  counter, say: it picks the element, not the lane), the first kind at least once, and every value
  stored is element-wise in the lanes (loaded values, lets and arithmetic: no dot, reduction,
  permutation, gather or accumulator, whose layouts spread elements over other threads).  A row
  written in one loop and read back in a later one (``h.at(r, j) = v; ... y.at(r, j2) = h.at(r, j2)
  * s``, a lane per row) is then read by the lane that wrote it;
* a buffer in scratch memory (lift/scratch.py), unless each lane has a copy of its own that every
  access reaches through tiles of one shape (a thread's element reads and writes); a per-thread
  copy moves all the lanes' copies as one wider tile (lift/lanecopies.py), which Triton spreads
  over the threads otherwise, so it shares the area with the element accesses.

The pass keeps, for each shared area, the kinds of access (read, write) made since the last
barrier: a read after a write of the same area, and a write after any access to it, get a barrier
first.  A loop's body starts, and its end
leaves, as if both had happened (the previous iteration's accesses come before the body's first);
the two branches of an ``if`` start from the state before it and leave the union of theirs.
"""

from __future__ import annotations

import copy
import dataclasses

from ..tir import expr as E
from ..tir import nodes as N

BOTH = frozenset({"read", "write"})


def fence_hazards(kernel: N.Kernel) -> None:
    """Insert, in place, the barriers ``kernel`` needs between accesses to shared memory (none where
    one is already there: the pass runs once after lifting and again after scheduling, whose
    rewrites change the tiles' shapes, and so which thread holds an element: :func:`fenced`)."""
    shared = _shared_areas(kernel)
    if shared:
        _Fence(shared).block(kernel.body, {})


def fenced(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with the barriers it needs, as a copy where it needs any (the kernel itself else:
    a scheduled kernel's bodies may be shared with the other variants built from one lifting)."""
    shared = _shared_areas(kernel)
    if not shared:
        return kernel
    out = dataclasses.replace(kernel, body=copy.deepcopy(kernel.body))
    _Fence(shared).block(out.body, {})
    return out


def _shared_areas(kernel: N.Kernel) -> set[str]:
    """The tensors and scratch areas whose elements the block's threads share (module docstring)."""
    reads: dict[str, list[tuple[E.Expr, ...]]] = {}
    writes: dict[str, list[tuple[E.Expr, ...]]] = {}
    for s in N.walk(kernel.body):
        access = _access(s)
        if access is not None:
            (reads if _reads_only(s) else writes).setdefault(access[0], []).append(access[1])
    tensors = {a.name for a in kernel.args if isinstance(a, N.Pointer)}
    lanes = _LaneIndex(kernel)
    shared = {b for b in writes if b in reads and b in tensors and not lanes.one_lane(b, reads[b] + writes[b])}
    return shared | {a.name for a in kernel.args if isinstance(a, N.Scratch)}


def lane_private(kernel: N.Kernel) -> set[str]:
    """The scratch areas of which each lane has a copy of its own that every access reaches through
    tiles of one shape (a thread's element reads and writes).  They are fenced all the same (module
    docstring); a loop whose accesses are all to them or to the kernel's tensors may be folded across
    those fences (schedule/foldloops.py), since each lane reads only what it stores there."""
    shapes: dict[str, set[tuple[E.Dim, ...]]] = {}
    for s in N.walk(kernel.body):
        access = _access(s)
        if access is not None:
            shapes.setdefault(access[0], set()).add(E.broadcast(*(i.shape for i in access[1])))
    scratch = [a for a in kernel.args if isinstance(a, N.Scratch)]
    return {a.name for a in scratch if a.lanes != 1 and len(shapes.get(a.name, ())) <= 1}


def _access(s: N.Stmt) -> tuple[str, tuple[E.Expr, ...]] | None:
    if isinstance(s, (N.Load, N.Store, N.Atomic)):
        return s.base, s.index
    if isinstance(s, (N.TmaLoad, N.TmaStore)):
        return s.fallback.base, s.fallback.index
    return None


def _reads_only(s: N.Stmt) -> bool:
    return isinstance(s, (N.Load, N.TmaLoad))


class _LaneIndex:
    """Whether accesses reach each element from one lane (module docstring)."""

    def __init__(self, kernel: N.Kernel) -> None:
        lets: dict[str, list[E.Expr]] = {}
        self.rebound: set[str] = set()
        self.spread: set[str] = set()  # accumulators, dot products, atomics' results
        self.stored: dict[str, list[E.Expr]] = {}
        self.opaque: set[str] = set()  # written by descriptors or atomics: values of no lane's
        for s in N.walk(kernel.body):
            if isinstance(s, N.Let):
                lets.setdefault(s.var.name, []).append(s.value)
            elif isinstance(s, N.Assign):
                self.rebound.add(s.var.name)
                self.spread.add(s.var.name)
            else:  # loop counters and loaded values: other values at other steps
                self.rebound.update(v.name for v in N.defines(s))
                if isinstance(s, (N.Dot, N.Atomic)):
                    self.spread.update(v.name for v in N.defines(s))
            if isinstance(s, N.Store):
                self.stored.setdefault(s.base, []).append(s.value)
            elif isinstance(s, (N.TmaStore, N.Atomic)):
                self.opaque.add(_access(s)[0])  # type: ignore[index]
        self.rebound.update(n for n, values in lets.items() if len(values) > 1)
        self.lets = {n: values[0] for n, values in lets.items() if n not in self.rebound}

    def resolved(self, e: E.Expr) -> E.Expr:
        return E.resolve(e, self.lets)

    def element_wise_stores(self, base: str) -> bool:
        """Whether every value stored into ``base`` is element-wise in the lanes."""
        if base in self.opaque:
            return False
        return all(_element_wise(self.resolved(v), self.spread) for v in self.stored.get(base, []))

    def one_lane(self, base: str, indices: list[tuple[E.Expr, ...]]) -> bool:
        """Whether each element of ``base`` is reached from one lane by all of ``indices``."""
        first = indices[0]
        if all(
            len(i) == len(first) and all(a.shape == b.shape and E.same(a, b) for a, b in zip(i, first, strict=True))
            for i in indices
        ):
            return True  # one pointer tile
        if any(len(i) != len(first) for i in indices) or not self.element_wise_stores(base):
            return False
        each = [tuple(self.resolved(x) for x in i) for i in indices]
        lane_dims = [d for d, x in enumerate(each[0]) if x.shape]
        if not lane_dims:
            return False
        for index in each:
            for d, (a, b) in enumerate(zip(index, each[0], strict=True)):
                if d not in lane_dims:
                    if a.shape:
                        return False
                    continue
                if a.shape != b.shape or not E.same(a, b):
                    return False
                if any(v.name in self.rebound for v in E.free_vars(a)):
                    return False
        return True


SPREADING = (E.Permute, E.Reshape, E.Reduce)
SPREADING_CALLS = {"gather", "cumsum", "_scan_max", "_scan_min", "_as_dot_operand"}


def _element_wise(e: E.Expr, spread: set[str]) -> bool:
    """No node of ``e`` moves values between lanes or reads a value whose layout may (module docstring)."""
    if isinstance(e, SPREADING) or (isinstance(e, E.Call) and e.fn in SPREADING_CALLS):
        return False
    if isinstance(e, E.Var) and e.name in spread:
        return False
    return all(_element_wise(c, spread) for c in e.children())


Pending = dict[str, set[str]]  # per shared area, the kinds of access since the last barrier


class _Fence:
    def __init__(self, shared: set[str]) -> None:
        self.shared = shared

    def touched(self, stmts: list[N.Stmt]) -> set[str]:
        return {a[0] for s in N.walk(stmts) if (a := _access(s)) is not None and a[0] in self.shared}

    def block(self, body: list[N.Stmt], pending: Pending) -> Pending:
        """Fence ``body`` in place from the kinds ``pending`` at its start; the kinds at its end."""
        out: list[N.Stmt] = []
        for s in body:
            if isinstance(s, N.Barrier):  # a barrier already there (the pass runs again after scheduling)
                pending = {}
            if isinstance(s, (N.For, N.While)) and (areas := self.touched(s.body)):
                every = {**pending, **{a: set(BOTH) for a in areas}}
                self.block(s.body, {a: set(k) for a, k in every.items()})
                pending = every
            elif isinstance(s, N.If):
                then, other = self.block(s.then, _copy(pending)), self.block(s.orelse, _copy(pending))
                pending = {a: then.get(a, set()) | other.get(a, set()) for a in {*then, *other}}
            access = _access(s)
            if access is not None and access[0] in self.shared:
                kind = "read" if _reads_only(s) else "write"
                seen = pending.get(access[0], set())
                if (kind == "read" and "write" in seen) or (kind == "write" and seen):
                    out.append(N.Barrier(line=s.line))
                    pending = {}
                pending.setdefault(access[0], set()).add(kind)
            out.append(s)
        body[:] = out
        return pending


def _copy(pending: Pending) -> Pending:
    return {a: set(k) for a, k in pending.items()}
