"""A fold loop split across programs: a kernel with too few programs for the device, each walking a
long loop (column sums written one thread per column, ``foreach i in [M] { acc += x.at(i, p # c);
}``: ``N / 128`` programs, 32 for 4096 columns on an H200's 132 SMs), as two kernels.

* The **partial** kernel runs each program of the grid ``S`` times, as a new last grid axis
  ``split``: program ``(p, split)`` runs the loop's iterations ``[a + split * CHUNK, min(b, a +
  (split + 1) * CHUNK))`` from the identity of each fold and stores its accumulators into a scratch
  area, ``S`` partials a lane.
* The **combine** kernel is the kernel as written with the loop replaced by a loop over the ``S``
  partials of its lanes, folded into its accumulators (schedule/foldloops.py folds that loop in
  turn), and everything after the loop as it was.

Partial results in a scratch area and a second pass, rather than atomics onto the output: the
second pass applies whatever the kernel does after the loop (``acc / M`` into an f16 mean, a
store under a condition, a second output) to the whole fold, in any element type, and the result
does not depend on the order the programs run in (an f32 ``atomic_add`` onto an output the launcher
zeroes could only take a fold stored as it is, into an f32 output, in an order that changes from
run to run).  The cost is the scratch area, ``S`` accumulators a lane (``S * N * 4`` bytes for column
sums: 0.06 % of a 16384 x 4096 f32 input at ``S = 9``), and a second launch.

What it proves on the IR (else :class:`NotSplit`, and the kernel runs as it is):

* the loop is the only one of the kernel's top level, and schedule/foldloops.py's proof admits it
  (every variable it assigns is a fold ``acc := op(acc, f)`` or ``where(g, op(acc, f), acc)``, ``op``
  associative and commutative, the only dependence between iterations; ``f`` may reduce a tile of
  its own, a loop over blocks of rows already: it is not folded into a tile axis here), and it
  stores nothing: each iteration runs exactly once, in one program of the partial kernel, whichever;
* what comes before it only defines values (lets and loads, no store or atomic), so both kernels
  may compute it; each fold's accumulator is defined there by a let (its initial value), and the
  partial kernel starts it from the identity of ``op`` instead: the combine kernel folds ``S``
  partials into the initial value, ``op`` being associative and commutative.  Float ``+`` folds sum
  in another order (within the rounding of their type); ``max`` and ``min`` are exact;
* the loop's bounds are scalars, the same for every lane (the proof of schedule/foldloops.py);
  its accumulators' shapes (the lanes' tile) may hold extents fixed at launch (a thread level of
  ``G`` threads): the scratch area counts them by their constexprs;
* the grid has at most two axes (the split is a third).

The launcher picks ``S`` (schedule/policy.py ``SPLIT_WAVES``) and runs the kernel as it is where
``S`` is 1.  Where it knows the loop's extent (an expression of the kernel's scalar arguments) it
passes ``CHUNK``, ``cdiv(extent, S)`` rounded up to whole blocks.  Where the kernel reads it (a CSR
row's ``foreach k in [hi - lo]``, ``lo`` and ``hi`` loaded before the loop: the segment sums of
issue 27) each program of the partial kernel computes its chunk itself from the same expression,
``cdiv(cdiv(max(b - a, 0), S), align) * align`` after the lets and loads before the loop (which
it runs anyway, and which depend on neither the split nor the loop; the tensors those bounds are
loaded from are ones no statement of the kernel writes, else :class:`NotSplit`): every program of a
group computes the same bounds, so the chunks ``[a + split * CHUNK, min(b, a + (split + 1) * CHUNK))``
of ``split`` in ``[0, S)`` cover ``[a, b)`` once and do not overlap, each empty past the end (a
program of an empty segment stores the identity, which the combine folds in exactly), whatever
``S`` the launcher picked (from the grid and the SMs, at most one a ``least`` of the segments' mean
length: schedule/policy.py ``segment_mean``, which it knows from the sizes).  Such a loop's bounds, a maximum over the lanes of
their segments' lengths as lifted, are scalars of the program: each lane of it masks the
iterations past its own segment as unsplit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from .foldloops import NotFolded, _identity, loop_folds


class NotSplit(Exception):
    """The proof does not hold for the kernel's loop (or it has no loop to split)."""


@dataclass(frozen=True)
class Split:
    """The two kernels, the loop's extent (a host expression: the launcher picks ``S`` from it; where
    the kernel reads it, an estimate of it) and the launcher's variables the kernels take ``S`` and
    ``CHUNK`` from (it defines them before the launches; no ``CHUNK`` where each program computes its
    own)."""

    partial: N.Kernel
    combine: N.Kernel
    # the loop's extent, a host expression; where the kernel reads it (a segment's length), None, or an
    # estimate of it the caller sets (policy.segment_mean): S never exceeds cdiv(it, least)
    extent: E.Expr | None
    splits_var: str  # the launcher's variables holding S and CHUNK
    chunk_var: str | None  # (None: each program of the partial kernel computes its chunk)
    block: int = 1  # the block of iterations the partial kernel folds a step (CHUNK is a multiple of it)
    least: int = 1  # the iterations a split takes at least (schedule/policy.py split_least)
    # partial and combine in one kernel: the last program of each group combines (schedule/lastcombine.py)
    fused: N.Kernel | None = None
    splits_arg: str = "SPLITS"  # the partial kernel's scalar argument holding S
    below: int | None = None  # split only below so many waves of programs (schedule/policy.py split_count)


def chunk_of(trip: E.Expr, splits: E.Expr, block: E.Expr) -> E.Expr:
    """The iterations a program of the partial kernel takes of ``trip``, split ``splits`` ways in whole
    ``block``s: ``cdiv(cdiv(trip, splits), block) * block`` (the launcher's ``CHUNK``, or the partial
    program's own where the kernel reads the trip count)."""
    return E.Bin("*", E.CDiv(E.CDiv(trip, splits), block), block)


def split_loop(kernel: N.Kernel, prefix: str, step: int = 1, align: int = 1) -> Split:
    """The partial and combine kernels of ``kernel`` (see the module docstring); ``prefix`` names
    the launcher's variables of the split (``_{prefix}_splits``, ``_{prefix}_chunk``); ``step``: the
    loop's step where it is folded into blocks of that many already (the launcher's CHUNK a multiple
    of it, each chunk whole blocks); ``align``: the multiple a chunk the partial kernel computes
    itself (an extent the launcher does not know) is rounded up to (at least ``step``)."""
    loops = [(i, s) for i, s in enumerate(kernel.body) if isinstance(s, N.For)]
    if len(loops) != 1:
        raise NotSplit("a kernel whose top level has other than one loop")
    at, loop = loops[0]
    try:
        folds = loop_folds(loop, kernel.body[at + 1 :], tiled=True, stepped=step > 1)
    except NotFolded as e:
        raise NotSplit(str(e)) from None
    if not (isinstance(loop.step, E.Const) and loop.step.value == step):
        raise NotSplit(f"a loop whose step is not {step}")
    if any(isinstance(s, (N.Store, N.Atomic, N.TmaStore)) for s in N.walk(loop.body)):
        raise NotSplit("a loop that stores")
    if not folds:
        raise NotSplit("a loop without a fold")
    if any(f.rescaled is not None or f.pick is not None or f.op == "last" for f in folds.values()):
        raise NotSplit(
            "a rescaled sum, an index fold or a value picked last (their partials would combine as pairs: not done)"
        )
    if len(kernel.program_ids) > 2:
        raise NotSplit("a grid of three axes (the split would be a fourth)")
    before = kernel.body[:at]
    if any(not isinstance(s, (N.Let, N.Load)) for s in before):
        raise NotSplit("a statement before the loop other than a let or a load")
    inits = {s.var.name: s for s in before if isinstance(s, N.Let)}
    if any(name not in inits for name in folds):
        raise NotSplit("an accumulator not defined by a let before the loop")
    scalars = {a.name: a.host for a in kernel.args if isinstance(a, N.Scalar)}
    extent = loop_extent(kernel.body[:at], loop)
    if loop.start.shape or loop.stop.shape:  # (loop_folds refuses them: a guard of its own)
        raise NotSplit("a loop whose bounds differ between lanes")
    known = _names(extent) <= scalars.keys()  # (else the kernel reads it: each program's chunk its own)
    if not known and _writes_any(kernel.body, _read_bounds(before, loop)):
        # (a group's programs would read them at different times: their chunks could differ)
        raise NotSplit("a loop whose bounds are read from a tensor the kernel writes")
    taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    taken |= {p.name for p in kernel.program_ids}

    def fresh(name: str) -> str:
        base, k = name, 2
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        return name

    splits_var, chunk_var = f"_{prefix}_splits", f"_{prefix}_chunk"
    splits = N.Scalar(fresh("SPLITS"), "i32", E.Var(splits_var))
    s_arg = E.Var(splits.name, "i32", lo=1)
    chunk_args: list[N.Arg] = []
    chunk_let: list[N.Stmt] = []
    if known:
        chunk = N.Scalar(fresh("CHUNK"), "i32", E.Var(chunk_var))
        chunk_args.append(chunk)
        c_arg = E.Var(chunk.name, "i32", lo=1)
    else:
        # cdiv(cdiv(max(b - a, 0), S), align) * align, of the values before the loop: the same in
        # every program of a group (an empty loop: chunks of 0, every range empty)
        c_arg = E.Var(fresh("chunk"), "i32", lo=0)
        trip = E.Bin("max", E.fold(loop.stop - loop.start), E.Const(0))
        unit = E.Const(max(align, step))
        chunk_let.append(N.Let(c_arg, chunk_of(trip, s_arg, unit), line=loop.line))
    areas = {
        # (each program of the partial kernel stores its whole slot, unmasked, after its range of the
        # loop, an empty range too: the combine reads nothing the partials did not write)
        name: N.Scratch(fresh(f"{name}_partials"), f.acc.type, _count(f.acc.shape), written=True)
        for name, f in folds.items()
    }
    program = program_index(kernel.program_ids)
    line = loop.line

    # the partial kernel: one more grid axis, a range of the loop, the accumulators stored
    split = E.Var(fresh("split"), "i32", lo=0)
    start = E.fold(loop.start + split * c_arg)
    stop = E.Bin("min", loop.stop, E.fold(loop.start + (split + 1) * c_arg))
    body: list[N.Stmt] = []
    for s in before:
        if isinstance(s, N.Let) and s.var.name in folds:
            f = folds[s.var.name]
            first = 0.0 if f.welford is not None else _identity(f.op, s.var.type).value  # (a count, a mean, an m2)
            s = N.Let(s.var, E.Full(s.var.shape, first, s.var.type), line=s.line)
        body.append(s)
    body += chunk_let
    body.append(dataclasses.replace(loop, start=start, stop=stop))
    for name, f in folds.items():
        index = _slot(program, s_arg, split, f.acc.shape)
        body.append(N.Store(areas[name].name, (index,), f.acc, line=line))
    partial = dataclasses.replace(
        kernel,
        name=f"{kernel.name}_partial",
        grid=(*kernel.grid, E.Var(splits_var)),
        program_ids=(*kernel.program_ids, split),
        args=[*kernel.args, splits, *chunk_args, *areas.values()],
        body=N.without_dead_lets(body),
        doc=kernel.doc + f" The partial folds of 1 / S of the loop at line {line} (schedule/splitloop.py).",
    )

    # the combine kernel: the loop replaced by one over the partials
    sp = E.Var(fresh("part"), "i32", lo=0)
    inner: list[N.Stmt] = []

    def part(name: str, counter: E.Var, into: list[N.Stmt]) -> E.Var:
        """A load into ``into`` of partial ``counter`` of accumulator ``name``."""
        f = folds[name]
        got = E.Var(fresh(f"{name}_part"), f.acc.type, dims=f.acc.shape)
        into.append(N.Load(got, areas[name].name, (_slot(program, s_arg, counter, f.acc.shape),), line=line))
        return got

    groups = [f.welford for f in folds.values() if f.welford is not None and f.acc == f.welford.m2]
    for name, f in folds.items():
        if f.welford is None or f.acc == f.welford.count:  # (a count sums as a plain fold does)
            op = "+" if f.welford is not None else f.op
            inner.append(N.Assign(f.acc, E.fold(E.Bin(op, f.acc, part(name, sp, inner))), line=line))
    totals: list[E.Var] = []  # each group's sum of its partials' count times mean, from 0
    means: list[N.Stmt] = []
    for g in groups:
        if any(not (isinstance(inits[v].value, E.Full) and inits[v].value.value == 0) for v in g.names):
            raise NotSplit(f"Welford's '{g.mean.name}' does not start at 0")
        total = E.Var(fresh(f"{g.mean.name}_total"), g.mean.type, dims=g.mean.shape)
        totals.append(total)
        weighted = E.Bin("*", part(g.count.name, sp, inner), part(g.mean.name, sp, inner))
        inner.append(N.Assign(total, E.Bin("+", total, weighted), line=line))
        means.append(N.Assign(g.mean, E.Bin("/", total, E.Bin("max", g.count, E.Const(1.0, g.mean.type))), line=line))
    later = {v for g in groups for v in (g.mean.name, g.m2.name)}
    firsts = (*(v for v in loop.carried if v.name not in later), *totals)
    starts = [N.Let(t, E.Full(t.shape, 0.0, t.type), line=line) for t in totals]
    over = N.For(sp, E.Const(0), s_arg, E.Const(1), inner, line=line, carried=firsts)
    combined: list[N.Stmt] = [*starts, over, *means]
    if groups:
        # the m2 of the whole: each partial's m2 and its mean's squared distance from the whole's, times
        # its count (Chan's formula for many parts: every term non-negative)
        sp2 = E.Var(fresh("part"), "i32", lo=0)
        second: list[N.Stmt] = []
        for g in groups:
            n, m, q = (part(v, sp2, second) for v in g.names)
            off = E.Bin("-", m, g.mean)
            spread = E.Bin("+", q, E.Bin("*", n, E.Bin("*", off, off)))
            second.append(N.Assign(g.m2, E.Bin("+", g.m2, spread), line=line))
        combined.append(
            N.For(sp2, E.Const(0), s_arg, E.Const(1), second, line=line, carried=tuple(g.m2 for g in groups))
        )
    shared = [dataclasses.replace(a, area=f"_{partial.name}_{a.name}") for a in areas.values()]
    combine = dataclasses.replace(
        kernel,
        name=f"{kernel.name}_combine",
        args=[*kernel.args, splits, *shared],
        body=N.without_dead_lets([*kernel.body[:at], *combined, *kernel.body[at + 1 :]]),
        doc=kernel.doc + f" The loop at line {line} folds the S partial folds of its programs (schedule/splitloop.py).",
    )
    if not known:
        return Split(partial, combine, None, splits_var, None, splits_arg=splits.name)
    host_extent = E.substitute(extent, scalars)
    return Split(partial, combine, host_extent, splits_var, chunk_var, splits_arg=splits.name)


def loop_extent(before: list[N.Stmt], loop: N.For) -> E.Expr:
    """``loop``'s extent, the scalar lets of ``before`` (the statements before it at the kernel's top
    level: ``int cg = C / G``) substituted: an expression of the kernel's arguments where the
    launcher knows it (a value loaded from a tensor stays a name, and the launcher does not know it)."""
    lets = {s.var.name: s.value for s in before if isinstance(s, N.Let) and not s.var.shape}
    extent = E.fold(loop.stop - loop.start)
    for _ in range(8):
        found = _names(extent) & lets.keys()
        if not found:
            break
        extent = E.substitute(extent, {n: lets[n] for n in found})
    return extent


def _read_bounds(before: list[N.Stmt], loop: N.For) -> set[str]:
    """The tensors the loads of ``before`` (the lets and loads before ``loop``) that its bounds
    depend on read (``ptr`` of ``lo = ptr.at(r)``)."""
    values = {s.var.name: s for s in before if isinstance(s, (N.Let, N.Load))}
    seen: set[str] = set()
    todo = _names(loop.start) | _names(loop.stop)
    out: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in values:
            continue
        seen.add(name)
        s = values[name]
        if isinstance(s, N.Load):
            out.add(s.base)
            todo |= set().union(*(_names(x) for x in s.index)) | (_names(s.mask) if s.mask is not None else set())
        else:
            todo |= _names(s.value)
    return out


def _writes_any(body: list[N.Stmt], tensors: set[str]) -> bool:
    """Whether ``body`` stores into one of ``tensors`` or updates one by an atomic (a TMA store, into
    whichever tensor its descriptor names: taken as any)."""
    for s in N.walk(body):
        if isinstance(s, N.TmaStore) and tensors:
            return True
        if isinstance(s, (N.Store, N.Atomic)) and s.base in tensors:
            return True
    return False


def _count(shape: E.Shape) -> E.Expr:
    """The elements of a tile of ``shape``: an extent fixed at launch counted by its constexpr's name
    (the kernel's argument; the launcher's variable of that launch, tir/launch.py)."""
    out: E.Expr = E.Const(1)
    for d in shape:
        out = E.Bin("*", out, E.Var(d.name, "i32") if isinstance(d, E.Extent) else E.Const(d))
    return E.fold(out)


def program_index(program_ids: tuple[E.Var, ...]) -> E.Expr:
    """The program's index among a grid's, of the program ids of its axes (row-major; a split's last
    axis left out of them, the index among the original grid's)."""
    out: E.Expr = E.Const(0)
    stride: E.Expr = E.Const(1)
    for axis, pid in reversed(list(enumerate(program_ids))):
        out = E.Bin("+", out, E.Bin("*", pid, stride))
        stride = E.Bin("*", stride, E.Call("num_programs", (E.Const(axis),), "i32"))
    return E.fold(out)


def _slot(program: E.Expr, splits: E.Expr, split: E.Expr, shape: E.Shape) -> E.Expr:
    """Where partial ``split`` of an accumulator of ``shape`` of ``program`` lies in its area: ``S``
    tiles of the accumulator's elements a program, one after the other, each row-major."""
    lane: E.Expr = E.Const(0)
    step: E.Expr = E.Const(1)
    rank = len(shape)
    for axis in reversed(range(rank)):
        n = shape[axis]
        if isinstance(n, E.Extent) or n > 1:  # (an extent fixed at launch: its constexpr, a power of two)
            at = E.Arange(n) if rank == 1 else E.Lift(E.Arange(n), rank, (axis,))
            lane = E.Bin("+", lane, E.Bin("*", at, step))
        step = E.fold(E.Bin("*", step, E.Var(n.name, "i32") if isinstance(n, E.Extent) else E.Const(n)))
    if rank and isinstance(lane, E.Const):  # (a tile of one element, one lane a program: a tile's address)
        lane = E.Arange(1) if rank == 1 else E.Lift(E.Arange(1), rank, (rank - 1,))
    tile = E.Cast(E.Bin("+", E.Bin("*", program, splits), split), "i64")
    return E.fold(E.Bin("+", E.Bin("*", tile, step), lane))
