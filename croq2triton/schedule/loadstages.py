"""Loops that only read memory, software-pipelined (a ``TileSchedule``'s ``num_stages``).

Triton pipelines the loads of a ``for`` loop only where they feed a ``tl.dot``, unless the loop is a
``tl.range(..., num_stages=S)``: then every load of its body is issued ``S - 1`` iterations ahead
through shared memory (``cp.async`` on Hopper), so that a memory-bound loop (a lane's row folded
in blocks, a column walked in blocks of rows, the partial folds of a split loop) keeps several
blocks in flight instead of waiting for each one (checked for sm_90a on the CPU: plain ``range``
gives ``ld.global`` and no shared memory, ``tl.range`` gives ``cp.async`` and ``S - 1`` buffers).

The proof obligation, checked on the IR: issuing a load earlier changes nothing only where no
statement of the loop writes memory another iteration could read. A loop is pipelined only where
it is innermost (Triton pipelines innermost loops), its body holds no store, atomic, barrier,
print or assertion (nothing that writes memory or orders threads), and it loads from memory. Its
buffers, ``S - 1`` of each load's tile, must fit ``most_bytes`` of shared memory (a tile whose
extent is fixed at launch is not pipelined: its size is unknown here).
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N
from .widen import BYTES

# shared memory the pipeline's buffers may take (of the 227 KB a Hopper block may have: the rest is
# left to the layout conversions and reductions of the kernel)
MOST_BYTES = 128 * 1024
_READS = (N.Let, N.Assign, N.Load, N.TmaLoad)


def pipeline_loads(kernel: N.Kernel, stages: int, most_bytes: int = MOST_BYTES) -> N.Kernel:
    """``kernel`` with each loop that only reads memory run as ``tl.range(..., num_stages=stages)``
    (``stages`` <= 1: as it is)."""
    if stages <= 1:
        return kernel
    body, changed = _stmts(kernel.body, stages, most_bytes)
    return dataclasses.replace(kernel, body=body) if changed else kernel


def has_read_loops(kernel: N.Kernel) -> bool:
    """Whether ``kernel`` has a loop that only reads memory (of any tile size: folding its lanes'
    loops in blocks makes tiles of them), so that ``num_stages`` may change it."""
    return any(isinstance(s, N.For) and _loads_only(s) for s in N.walk(kernel.body))


def _stmts(body: list[N.Stmt], stages: int, most: int) -> tuple[list[N.Stmt], bool]:
    out: list[N.Stmt] = []
    changed = False
    for s in body:
        if isinstance(s, N.For):
            loads = _loads_only(s)
            if loads and _fits(loads, stages, most):
                s = dataclasses.replace(s, pipeline=N.Pipeline(stages))
                changed = True
            else:
                inner, c = _stmts(s.body, stages, most)
                if c:
                    s, changed = dataclasses.replace(s, body=inner), True
        elif isinstance(s, N.While):
            inner, c = _stmts(s.body, stages, most)
            if c:
                s, changed = dataclasses.replace(s, body=inner), True
        elif isinstance(s, N.If):
            then, c1 = _stmts(s.then, stages, most)
            orelse, c2 = _stmts(s.orelse, stages, most)
            if c1 or c2:
                s, changed = dataclasses.replace(s, then=then, orelse=orelse), True
        out.append(s)
    return out, changed


def _loads_only(loop: N.For) -> list[N.Load | N.TmaLoad]:
    """The loads of ``loop`` where it is innermost, not pipelined yet nor unrolled (schedule/unroll.py),
    and holds no statement that writes memory or orders threads (empty otherwise, or where it loads
    nothing)."""
    if loop.pipeline is not None or loop.unroll or not all(isinstance(s, _READS) for s in loop.body):
        return []
    return [s for s in loop.body if isinstance(s, (N.Load, N.TmaLoad))]


def _fits(loads: list[N.Load | N.TmaLoad], stages: int, most: int) -> bool:
    """Whether ``stages - 1`` copies of each load's tile fit ``most`` bytes (tiles of sizes known
    when translating, more than one element each)."""
    total = 0
    for s in loads:
        n = 1
        for d in s.var.shape:
            if isinstance(d, E.Extent):
                return False  # an extent fixed at launch
            n *= d
        if n == 1:
            return False  # a scalar a step: nothing to gain, and the pipeliner wants tiles
        total += n * BYTES.get(s.var.dtype, 4)
    return total * (stages - 1) <= most
