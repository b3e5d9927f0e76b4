"""Serial blocks: one program of a tile kernel runs ``F`` consecutive blocks of a grid axis, one
after the other.

Widening (schedule/widen.py) gives a program more blocks as more lanes; it needs every use of the
program id to be a coordinate with its lane.  Where it is not (a column sum whose block adds rows
``bm * 256 + i`` over a loop counter ``i``, then its partial sums into ``s`` with an atomic), the
blocks can still run in one program one after the other: blocks of a grid are independent (the
language gives them no order and no way to wait for each other but the global events the lifting
refuses), so any order, serial included, is one the hardware could have picked.  The rewrite::

    b_serial = tl.program_id(axis)
    for b_step in range(F):
        b = b_serial * F + b_step
        if b < G:        # G the grid's extent along the axis: the last program's extra blocks
            <body>

with ``cdiv(G, F)`` programs along the axis.

An atomic of the body that only accumulates (``add``, ``max``, ``min`` whose old value is not read)
into an address that does not depend on the block (neither ``b`` nor anything computed from it) is
folded across the blocks: each block adds its value where its mask holds into a running tile, and
the last block of the program issues one atomic of it, under the mask of any block.  The same
address each block means ``atomic(a, v_1, m_1); ..; atomic(a, v_F, m_F)`` is ``atomic(a, (v_1 where
m_1) + .. + (v_F where m_F), m_1 | .. | m_F)``: the atomics of several blocks have no order among
themselves, and a float add only sums in another order (within the rounding of its type, as the
atomics in another order would).

What it proves before rewriting (else :class:`NotSerial`, and the kernel is kept): the kernel does
not read the grid's extent (``tl.num_programs``: scratch areas a program, grid-stride loops); no
atomic's old value is read (a ticket: blocks that count each other); no ``while`` loop reads memory
the kernel writes (a block waiting for another's flag would wait for a block after it in its own
program).

The factors are the ``serial`` field of a :class:`~.schedule.TileSchedule`.
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.verify import VerifyError, verify
from .atomicfold import identity

MERGED = {"add": "+", "max": "max", "min": "min"}


class NotSerial(Exception):
    """The proof does not hold."""


def serialize(kernel: N.Kernel, factors: tuple[int, ...]) -> N.Kernel:
    """``kernel`` with ``factors[a]`` consecutive blocks of grid axis ``a`` run one after the other by
    one program (see the module docstring); raises :class:`NotSerial` where the proof fails."""
    if all(f == 1 for f in factors):
        return kernel
    if len(factors) != len(kernel.program_ids) or len(kernel.grid) != len(kernel.program_ids):
        raise NotSerial(f"{len(factors)} serial factor(s) for a grid of {len(kernel.grid)} axes")
    why = refusal(kernel)
    if why:
        raise NotSerial(why)
    taken = {a.name for a in kernel.args} | {p.name for p in kernel.program_ids}
    taken |= {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    taken |= {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Assign)}
    body, args = list(kernel.body), list(kernel.args)
    pids, grid = list(kernel.program_ids), list(kernel.grid)
    notes: list[str] = []
    # innermost loop for the last axis: the program's blocks in row-major order of the grid
    for axis in reversed(range(len(factors))):
        f = factors[axis]
        if f == 1:
            continue
        pid = pids[axis]
        # the grid's extent: the kernel's own argument where one is it (``M`` of a program per row:
        # the verifier then sees each access of the row inside), else a new one the launcher passes
        same = [a for a in args if isinstance(a, N.Scalar) and E.same(E.fold(a.host), E.fold(grid[axis]))]
        if same:
            blocks = E.Var(same[0].name, same[0].dtype)
        else:
            blocks = E.Var(N.fresh_name(f"{pid.name}_blocks", taken), "i32", lo=1)
            args.append(N.Scalar(blocks.name, "i32", grid[axis]))
        serial = E.Var(N.fresh_name(f"{pid.name}_serial", taken), "i32", lo=0)
        step = E.Var(N.fresh_name(f"{pid.name}_step", taken), "i32", lo=0, hi=f - 1)
        body, merged = _merged_atomics(body, pid, step, blocks, f, taken)
        bind = N.Let(E.Var(pid.name, pid.type, lo=0), E.fold(E.Bin("+", E.Bin("*", serial, E.Const(f)), step)))
        guard = N.If(E.Bin("<", E.Var(pid.name, pid.type), blocks), body)
        loop = N.For(step, E.Const(0), E.Const(f), E.Const(1), [bind, guard], line=kernel.line)
        body = [*merged, loop]
        pids[axis] = serial
        grid[axis] = E.CDiv(grid[axis], E.Const(f))
        notes.append(f"{f} blocks of axis {axis}")
    doc = f"{kernel.doc} Each program runs {' x '.join(notes)} one after the other (schedule/serial.py)."
    out = dataclasses.replace(kernel, body=body, args=args, program_ids=tuple(pids), grid=tuple(grid), doc=doc)
    try:  # (an access the verifier no longer sees inside: kept as it was rather than emitted unproved)
        verify(out)
    except VerifyError as e:
        raise NotSerial(f"the accesses of the blocks run in a loop are not shown inside their tensors ({e})") from None
    return out


def refusal(kernel: N.Kernel) -> str:
    """Why the blocks of ``kernel`` may not run one after the other in one program ("" where they may)."""
    stmts = N.walk(kernel.body)
    for s in stmts:
        for x in N.exprs_of(s):
            if any(isinstance(n, E.Call) and n.fn == "num_programs" for n in x.walk()):
                return "the kernel reads the grid's extent"
        if isinstance(s, N.Atomic) and s.result is not None:
            return "an atomic's old value is read (blocks that count each other)"
    written = {s.base for s in stmts if isinstance(s, (N.Store, N.Atomic))}
    for s in stmts:
        if isinstance(s, N.While) and any(isinstance(x, N.Load) and x.base in written for x in N.walk(s.body)):
            return "a 'while' loop reads memory the kernel writes (a block waiting for another)"
    return ""


def _merged_atomics(
    body: list[N.Stmt], pid: E.Var, step: E.Var, blocks: E.Var, f: int, taken: set[str]
) -> tuple[list[N.Stmt], list[N.Stmt]]:
    """``body`` with each atomic of its top level that accumulates into a block-independent address
    under a block-independent mask replaced by a running tile (and the atomic of that tile on the
    program's last block), and the lets that start the running tiles (before the serial loop)."""
    varying = _depends(body, pid.name)
    lets = {s.var.name: s.value for s in body if isinstance(s, N.Let)}
    out: list[N.Stmt] = []
    starts: list[N.Stmt] = []
    last = E.Bin(
        "|",
        E.Bin("==", step, E.Const(f - 1)),
        E.Bin("==", E.Var(pid.name, pid.type), E.Bin("-", blocks, E.Const(1))),
    )
    for s in body:
        if not (isinstance(s, N.Atomic) and _mergeable(s, varying, lets)):
            out.append(s)
            continue
        dtype = s.value.dtype
        op = MERGED[s.op]
        shape = E.broadcast(s.value.shape, s.mask.shape if s.mask is not None else ())
        base = s.base.removesuffix("_ptr")
        run = E.Var(N.fresh_name(f"{base}_serial_{s.op}", taken), dtype, dims=shape)
        value = s.value if s.value.shape == shape else E.Bin("+", s.value, E.Full(shape, 0, dtype))
        starts.append(N.Let(run, _full(shape, identity(op, dtype)), line=s.line))
        mask, define = s.mask, []
        if s.mask is not None and s.mask.name in varying:
            # a mask that changes from block to block: each block's value where its mask holds, the
            # atomic where the mask's block-independent terms hold (they keep the address inside) and
            # any block's others did
            value = E.Where(s.mask, value, identity(op, dtype))
            terms = E.conjuncts(lets[s.mask.name])
            kept = [t for t in terms if not any(v.name in varying for v in E.free_vars(t))]
            moving = E.conj([t for t in terms if not any(t is k for k in kept)])
            seen = E.Var(N.fresh_name(f"{base}_serial_seen", taken), "i1", dims=moving.shape)
            starts.append(N.Let(seen, _full(moving.shape, E.Const(False, "i1")), line=s.line))
            out.append(N.Assign(seen, E.Bin("|", seen, moving), line=s.line))
            mask = E.Var(N.fresh_name(f"{base}_serial_mask", taken), "i1", dims=s.mask.shape)
            define = [N.Let(mask, E.conj([*kept, seen]), line=s.line)]
        out.append(N.Assign(run, E.Bin(op, run, value), line=s.line))
        out.append(N.If(last, [*define, dataclasses.replace(s, value=run, mask=mask)], line=s.line))
    return out, starts


def _full(shape: E.Shape, value: E.Const) -> E.Expr:
    return E.Full(shape, value.value, value.type) if shape else value


def _mergeable(s: N.Atomic, varying: set[str], lets: dict[str, E.Expr]) -> bool:
    if s.op not in MERGED or s.result is not None or s.compare is not None:
        return False
    if s.mask is not None and s.mask.name in varying and s.mask.name not in lets:
        return False  # (a mask of the block whose terms are not known: its address bounds unseen)
    if E.is_int(s.value.dtype) and s.op != "add" and s.value.dtype not in ("i32", "i64", "u32", "u64"):
        return False
    return not any(v.name in varying for x in s.index for v in E.free_vars(x))


def _depends(body: list[N.Stmt], root: str) -> set[str]:
    """The variables of ``body`` whose value may depend on ``root`` (a compound statement's every
    variable where anything in it does: an over-estimate)."""
    out = {root}
    changed = True
    while changed:
        changed = False
        for s in body:
            inner = N.walk([s])
            reads = {v.name for x in inner for e in N.exprs_of(x) for v in E.free_vars(e)}
            if not reads & out:
                continue
            defined = {v.name for x in inner for v in N.defines(x)}
            defined |= {x.var.name for x in inner if isinstance(x, N.Assign)}
            if not defined <= out:
                out |= defined
                changed = True
    return out


def merging_axes(kernel: N.Kernel) -> list[int]:
    """The grid axes whose blocks, run one after the other, would add an atomic of the kernel once
    for them (none where the blocks may not run one after the other at all)."""
    if refusal(kernel):
        return []
    lets = {s.var.name: s.value for s in kernel.body if isinstance(s, N.Let)}
    out = []
    for axis, pid in enumerate(kernel.program_ids):
        varying = _depends(kernel.body, pid.name)
        if any(isinstance(s, N.Atomic) and _mergeable(s, varying, lets) for s in kernel.body):
            out.append(axis)
    return out


def merges_atomics(kernel: N.Kernel) -> bool:
    """Whether running blocks of some grid axis one after the other would add an atomic of the
    kernel once for them (the auto policy offers the ``serial`` field to tuning there)."""
    return bool(merging_axes(kernel))
