"""Block barriers around stores to tensors the program also reads (the tile IR's memory hazards).

Triton spreads a tile over the block's threads by layout, and the layouts of a load and of a store
need not put an element on the same thread: a program that stores into a tensor it also reads (a
state updated each loop iteration, ``State`` of a recurrence) needs the whole block's earlier reads
done before the store and its writes visible before the next read.  Each such store is fenced with
``tl.debug_barrier()`` before and after.  Where every load and store of the tensor uses the same
index (``out.at(i) += x``: each element read and written through one pointer tile, so by the same
thread) no barrier is needed.  Which tensors a kernel writes is known before lifting
(sema/writes.py): their descriptor loads are refused there (lift/tma.py), since a TMA load does
not see the block's generic stores.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import nodes as N


def fence_rereads(body: list[N.Stmt]) -> None:
    """Fence, in place, every store to a tensor the kernel also reads at other indices."""
    reads: dict[str, list[tuple[E.Expr, ...]]] = {}
    writes: dict[str, list[tuple[E.Expr, ...]]] = {}
    for s in N.walk(body):
        access = _access(s)
        if access is not None:
            (reads if isinstance(s, (N.Load, N.TmaLoad)) else writes).setdefault(access[0], []).append(access[1])
    hazards = {b for b in writes if b in reads and not _one_index(reads[b] + writes[b])}
    if hazards:
        _fence(body, hazards)


def _access(s: N.Stmt) -> tuple[str, tuple[E.Expr, ...]] | None:
    if isinstance(s, (N.Load, N.Store, N.Atomic)):
        return s.base, s.index
    if isinstance(s, (N.TmaLoad, N.TmaStore)):
        return s.fallback.base, s.fallback.index
    return None


def _one_index(indices: list[tuple[E.Expr, ...]]) -> bool:
    first = indices[0]
    return all(
        len(i) == len(first) and all(a.shape == b.shape and E.same(a, b) for a, b in zip(i, first, strict=True))
        for i in indices
    )


def _fence(body: list[N.Stmt], hazards: set[str]) -> None:
    out: list[N.Stmt] = []
    for s in body:
        if isinstance(s, N.For):
            _fence(s.body, hazards)
        elif isinstance(s, N.If):
            _fence(s.then, hazards)
            _fence(s.orelse, hazards)
        access = _access(s)
        if access is not None and access[0] in hazards and not isinstance(s, (N.Load, N.TmaLoad)):
            out += [N.Barrier(line=s.line), s, N.Barrier(line=s.line)]
        else:
            out.append(s)
    body[:] = out
