"""Folding each lane's sequential loop into a tile axis: a row reduction written one thread per row
(``foreach j in [N] { m = __max(m, x.at(p # t, j)); }``) becomes a loop over blocks of ``j`` whose
every iteration loads a ``[lanes, BLOCK]`` tile and folds it with ``tl.max`` / ``tl.sum`` (Triton's
tutorials 02 and 05), or, where the block holds the whole extent, no loop at all.

As lifted, each lane walks its row one element a step: the loads of one step are one element of
each of the program's rows, a column of the tile, and the rows are read column by column (on the
H200 a row softmax so written ran at 0.12 of ``torch.softmax``, issue 27).  The rewrite changes how
the loop runs, not what it computes, where the IR shows (else :class:`NotFolded`):

* the loop steps by 1 from a start to a stop that are the same for every lane;
* its body is ``let``s, loads, stores and folds, nothing else (no inner loop, no branch of the
  program, no dot, atomic, barrier, and no reduction, permutation or gather in a ``let`` or a
  fold's value: their axes are their own); but the barriers the lifting puts in a loop that stores
  into a tensor and touches no scratch area (a softmax writing its exponentials into ``y`` and then
  scaling ``y`` in place): the store proof below makes each lane read only what it stores, and the
  fences the folded tiles need are derived again after scheduling (lift/hazards.py); so are those
  of a loop that only reads tensors (a row's statistic before a later loop writes the row in place);
* every variable it assigns is a **fold** ``acc := op(acc, f)`` or ``acc := where(g, op(acc, f),
  acc)`` with ``op`` associative and commutative (``+``, ``max``, ``min``) and ``acc`` read nowhere
  else in the loop: the only dependence between iterations; ``where(g, op(acc, f), acc)`` is
  ``op(acc, where(g, f, e))`` with ``e`` the identity of ``op``, so the block's values fold with ``e``
  where ``g`` or the block's tail masks them off.  A float ``+`` fold sums in another order: the
  result moves within the rounding of its type (``tl.sum`` adds pairwise, which is at least as
  accurate as the loop's running sum) for f32 and f64 accumulators; an f16 or bf16 accumulator
  rounds every step to its type (``acc = 2048; acc += 1`` stays 2048 in f16), which no other order
  reproduces, so its ``+`` loop stays as written (its ``max`` and ``min`` fold: exact in any order);
  ``acc - f`` is the sum of ``-f`` and ``fma(a, b, acc)`` the sum of ``a * b`` (one rounding a step
  where the fold has two: within the rounding of the type); ``*`` folds as ``+`` does (an integer's
  product exact in any order, a 16-bit float's as written), and the bitwise ``|``, ``&``, ``^`` of
  integers exactly (``tl.reduce`` with a combining function, tir/pyexpr.py); two folds of one
  accumulator by one operator in an iteration (``if (c) s += f; else s += g;``) are one, of ``op(where(c,
  f, e), where(!c, g, e))``;
* a ``+`` fold may also be read after its step by lets and stored values (a running sum: ``acc +=
  x; y.at(j) = acc;``); each step's value is then the sum so far plus the inclusive prefix sum of the
  block's terms (``tl.cumsum``), in the same order as the loop for integers and within the rounding of
  the type for floats; read before its step (an exclusive prefix) it stays as written;
* two accumulators may fold as one pair: an online softmax's running maximum and rescaled sum
  (schedule/rescaled.py), the best value so far and its index (schedule/argfold.py); their lets that
  read the accumulators are inlined into the folds;
* a value picked under a condition, ``acc := where(g, f, acc)`` with neither ``g`` nor ``f`` reading an
  accumulator (``if (j == k) xt = v;``: a target's logit; ``if (v > thr) at = j;``: the last position
  above a threshold), is the last iteration's ``f`` where ``g`` holds, else ``acc`` as it was: a fold
  whose operator takes the right operand where it is present (associative, not commutative: the blocks
  run in order, never last block first).  A block takes its last position ``P`` where ``g`` holds
  (``tl.max`` of the counter there) and ``f`` at ``P`` (exact: :meth:`_Rewrite.last`), where some
  position holds;
* what the loop defines is not read after it (but the folds' accumulators);
* a store writes a distinct element for each value of the counter (its index is affine in the
  counter with a non-zero coefficient in some dimension), and a tensor the loop stores into is
  read in the loop only at the element the same iteration stores, and two stores into one tensor
  write the same element (iterations touch disjoint elements: their order does not matter).

Every value of the body gains a trailing tile axis for the counter's block (``j`` becomes
``j0 + tl.arange(0, BLOCK)``); loads and stores are masked by ``j < stop`` as well.  Where the block
is the whole extent (a size fixed at launch: the power of two at or above ``stop - start``) the
loop is gone, and the loads of several such loops that read the same elements are one load (the
row is read once and kept in registers: a softmax's max, sum and write), also across statements
between them that store nothing into that tensor and re-bind nothing its index or mask reads (a
warp's shuffles between a row's two passes).  Loops over a register tile's elements are folded
first (schedule/selectfold.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import overload

from ..lift.buffers import pow2
from ..lift.hazards import lane_private
from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from . import argfold, chan, rescaled
from .argfold import ArgPick
from .chan import Group
from .rescaled import Rescaled

FOLDS = {"+": "sum", "max": "max", "min": "min"}
# folds of this module's loops alone, reduced by ``tl.reduce`` with a combining function of the module
# (tir/pyexpr.py): a product (an integer's exact in any order, a float's within the rounding of its
# type, as a sum's), and the bitwise or, and, exclusive or of integers (exact in any order)
MORE_FOLDS = {"*": "prod", "|": "or", "&": "and", "^": "xor"}
REDUCES = {**FOLDS, **MORE_FOLDS}
# folds whose running value a step may read (an inclusive scan of each block after the fold so far): a
# sum's by tl.cumsum, a maximum's and a minimum's by tl.associative_scan (emit/module.py's helpers)
SCANS = {"+": "cumsum", "max": "_scan_max", "min": "_scan_min"}
WHOLE_PER_THREAD = 16  # elements of a whole row a thread holds (the launcher picks 4 to 16 warps)
LEAD_PER_THREAD = 64  # the same where the counter's axis leads the tile (1 to 16 warps)
INT_LIMITS = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1), "i16": (-(2**15), 2**15 - 1)}


class NotFolded(Exception):
    """The proof does not hold for a loop (or the kernel has none to fold)."""


@dataclass(frozen=True)
class Fold:
    acc: E.Var
    op: str  # +, max, min; "rescale": the rescaled sum of an online softmax (schedule/rescaled.py); "last":
    # the value the last iteration where ``guard`` holds assigns
    value: E.Expr  # f: what each iteration folds in
    guard: E.Expr | None  # g: where it does (None: everywhere)
    rescaled: Rescaled | None = None  # op "rescale": its running maximum, exponential, f and weight
    pick: ArgPick | None = None  # op "argpick": the index of the best value so far (schedule/argfold.py)
    of: E.Expr | None = None  # a max / min fold matched from a strict comparison: the values compared
    running: bool = False  # a sum also read after its step (a prefix sum: each step's running value)
    count: int = 1  # the assignments of one iteration it stands for (if / else branches adding each their own)
    welford: Group | None = None  # op "welford": the count, mean and m2 updated by Welford's step (schedule/chan.py)


Block = int | E.Extent


def tile_rank(kernel: N.Kernel) -> int:
    """The rank of the kernel's tiles: the lanes' (a thread level of ``[32, 32]``: 2)."""
    return max((len(v.shape) for s in N.walk(kernel.body) for v in N.defines(s)), default=0)


def foldable(kernel: N.Kernel) -> list[N.For]:
    """The loops of ``kernel``'s top level that the proof admits, and the loops the proof admits
    inside a loop of the top level it does not (a loop over a slice's rows around a loop along each
    row: the inner loop folds, the outer one stays)."""
    out: list[N.For] = []
    tensors = tensors_of(kernel)

    def visit(body: list[N.Stmt], outside: list[N.Stmt]) -> None:
        for i, s in enumerate(body):
            if isinstance(s, N.For):
                try:
                    loop_folds(s, body[i + 1 :] + outside, fenced_tensors=tensors)
                except NotFolded:
                    visit(s.body, body[i + 1 :] + outside)
                    continue
                out.append(s)

    visit(kernel.body, [])
    return out


def walks_rows(kernel: N.Kernel) -> bool:
    """Whether a loop the proof admits reads or writes a tensor one element a lane across its lanes'
    rows: the counter indexes the contiguous (last) dimension, the lanes another one; or each lane
    walks a segment of its own that starts where a value it read says (``vals.at(lo + k)``, ``lo``
    read from a tensor: CSR rows, ragged segments), the counter at a unit step.  Folded, such an
    access reads whole lines of each row instead of a column of elements a step."""
    read = _read_tiles(kernel)
    for loop in foldable(kernel):
        values = {s.var.name: s.value for s in loop.body if isinstance(s, N.Let)}
        for s in loop.body:
            if not isinstance(s, (N.Load, N.Store)):
                continue
            index = [E.resolve(x, values) for x in s.index]
            last = index[-1]
            if loop.var.name in _names(last) and len(index) > 1 and not last.shape and any(x.shape for x in index[:-1]):
                return True
            extent = E.fold(loop.stop - loop.start)
            if not isinstance(extent, E.Const) and lane_run(index, loop.var.name, extent):
                return True  # a lane's row of a flat tensor (``x.at(r * N + j)``, ``j`` in ``[N]``)
            if _own_segment(last, loop.var.name, read):
                return True
    return False


def segment_tensors(kernel: N.Kernel) -> list[str]:
    """The tensors a loop the proof admits reads along each lane's own segment: its last index is the
    counter at a unit step plus a value the lane read from a tensor (``vals.at(lo + k)``)."""
    read = _read_tiles(kernel)
    out: list[str] = []
    for loop in foldable(kernel):
        values = {s.var.name: s.value for s in loop.body if isinstance(s, N.Let)}
        for s in loop.body:
            if not isinstance(s, (N.Load, N.Store)) or s.base in out:
                continue
            if _own_segment(E.resolve(s.index[-1], values), loop.var.name, read):
                out.append(s.base)
    return out


def fold_loops(kernel: N.Kernel, block: Block, whole: bool = False, selects: int = 0) -> N.Kernel:
    """``kernel`` with every loop of its top level that the proof admits folded into a trailing tile
    axis of ``block`` elements; ``whole``: ``block`` holds each loop's whole extent (fixed at launch:
    ``block`` is then the :class:`~croq2triton.tir.expr.Extent` of a new constexpr argument), the
    loops disappear and their identical loads are read once.  :class:`NotFolded` where no loop is
    admitted.  ``selects``: loops over a register tile's elements already made reductions
    (schedule/selectfold.py ``fold_all`` does that first); with none folded here the kernel is still
    re-tiled."""
    rank = tile_rank(kernel)
    taken = {v.name for s in N.walk(kernel.body) for v in N.defines(s)} | {a.name for a in kernel.args}
    folded = skipped = 0
    leads = False  # a loop folded onto a leading axis (_lanes_contiguous)
    read = _read_tiles(kernel)
    read_before: set[str] = set()  # tensors the loops folded so far load
    args = list(kernel.args)
    tensors = tensors_of(kernel)

    def visit(stmts: list[N.Stmt], outside: list[N.Stmt]) -> list[N.Stmt]:
        nonlocal folded, skipped, leads, read_before
        out: list[N.Stmt] = []
        for i, s in enumerate(stmts):
            if not isinstance(s, N.For):
                out.append(s)
                continue
            after = stmts[i + 1 :] + outside
            try:
                folds = loop_folds(s, after, fenced_tensors=tensors)
            except NotFolded:
                # a loop around loops that fold (a slice's rows around each row's walk): it stays, they fold
                out.append(dataclasses.replace(s, body=visit(s.body, after)))
                continue
            lead = _lanes_contiguous(s, read)
            if (
                lead
                and not whole
                and any(
                    f.rescaled is not None or f.pick is not None or f.running or f.op == "last" for f in folds.values()
                )
            ):
                # (a rescaled sum, an index fold or a running sum in blocks along a leading axis: element-wise
                # tiles of them, not done): the loop as written
                out.append(s)
                skipped += 1
                continue
            size: Block = block
            extent = E.fold(s.stop - s.start)
            known = list(args)
            if whole and _known_whole(extent, kernel):
                assert isinstance(extent, E.Const)
                size = pow2(int(extent.value))  # (an extent known when translating: the tile's size with it)
            elif whole:
                _whole_extent(s, kernel, args, block)
            reads = {x.base for x in N.walk(s.body) if isinstance(x, N.Load)}
            # blocks of a pass over what an earlier pass read (a norm's scaling after its statistics) run
            # last block first: the blocks read last are the likeliest still in L2
            # (a value picked last: blocks in order)
            again = not whole and bool(reads & read_before) and not outside
            again = again and all(f.op != "last" for f in folds.values())
            try:
                new = _Rewrite(s, folds, rank, size, whole, taken, lead=lead, reverse=again).run()
            except NotFolded:
                # a loop whose body holds tiles of another rank than the lanes' (a chunk staged in a lane's
                # local memory and stored whole, each step a [lanes, chunk] tile: schedule/selectfold.py):
                # it stays as written, each step a tile already; the other loops of the kernel still fold
                if not any(len(x.shape) not in (0, rank) for st in N.walk(s.body) for x in N.exprs_of(st)):
                    raise
                args[:] = known
                out.append(s)
                skipped += 1
                continue
            leads = leads or lead
            read_before |= reads
            out.extend(new)
            folded += 1
        return out

    body = visit(kernel.body, [])
    if not folded and (selects or skipped):
        if not selects:
            return kernel
        doc = kernel.doc + " Its loops over a tile's elements are reductions of the tile (schedule/selectfold.py)."
        sized = [a for a in kernel.args if isinstance(a, N.Constexpr) and a.size is not None]
        if kernel.warps_per is None and len(sized) == 1:
            # a tile whose extent is fixed at launch (a staged run-time row), reduced whole: warps to
            # match, at launch, as for a loop folded whole
            return dataclasses.replace(kernel, doc=doc, warps_per=(sized[0].name, sized[0].fixed, WHOLE_PER_THREAD))
        return dataclasses.replace(kernel, doc=doc)
    if not folded:
        raise NotFolded("no loop of the kernel's top level may be folded")
    if whole:
        body = _shared_loads(body)
    what = f"blocks of {block}" if isinstance(block, int) else "the whole extent"
    doc = kernel.doc + f" Its loops over each lane's row are tiles of {what} (schedule/foldloops.py)."
    warps = kernel.warps_per
    if whole and isinstance(block, E.Extent) and any(a.name == block.name for a in args):
        # the tile grows with the row: warps to match, at launch
        lanes = 1
        for d in lane_shape(kernel):
            lanes *= d if isinstance(d, int) else 1
        # a leading counter axis: a reduction over it costs more the more warps the tile has; on the
        # H200 a [16, 256] f16 row took 0.064 / 0.155 / 0.297 / 0.586 ms at 2 / 4 / 8 / 16 warps
        # (perf/probe_block_rows.py, 2026-12-03): fewer warps, more elements each (schedule/totals.py
        # gives the warps back where it takes every such reduction out)
        warps = (block.name, lanes, LEAD_PER_THREAD, 1) if leads else (block.name, lanes, WHOLE_PER_THREAD)
    return dataclasses.replace(kernel, body=N.without_dead_lets(body), args=args, doc=doc, warps_per=warps)


# ---------------------------------------------------------------- the proof
def loop_folds(
    loop: N.For,
    after: list[N.Stmt],
    tiled: bool = False,
    fenced_tensors: set[str] | None = None,
    stepped: bool = False,
) -> dict[str, Fold]:
    """The folds of ``loop`` where the proof admits it (``after``: what runs after it); ``tiled``
    admits reductions, permutations and gathers of tiles in the body too (the loop is not folded
    into a tile axis then: schedule/splitloop.py only runs its iterations in other programs).
    ``fenced_tensors``: the kernel's tensors (not its scratch areas); a loop that accesses only them
    (stores into them or reads them) may hold the barriers the lifting put in for it (else a barrier
    in the loop keeps it as written).  ``stepped``: a loop of any constant step (one folded into blocks
    already, each iteration a block: schedule/splitloop.py splits it in chunks of whole blocks)."""

    def own_axes(e: E.Expr) -> bool:
        return not tiled and any(isinstance(n, (E.Reduce, E.Permute, E.Reshape)) or _gathers(n) for n in e.walk())

    if not (isinstance(loop.step, E.Const) and (loop.step.value == 1 or stepped)):
        raise NotFolded("a loop whose step is not 1")
    for bound in (loop.start, loop.stop):
        if bound.shape:
            raise NotFolded("a loop whose bounds differ between lanes")
    j = loop.var.name
    folds: dict[str, Fold] = {}
    defined: dict[str, E.Expr] = {}  # lets and loads of the body: their values, for the store proof
    lets: dict[str, E.Expr] = {}
    stores: list[N.Store] = []
    loads: list[N.Load] = []
    order: dict[str, int] = {}  # accumulator -> the position of its assignment
    let_at: dict[str, int] = {}  # let -> its position
    raw: dict[str, E.Expr] = {}  # accumulator -> its assignment's value as written
    accs = {s.var.name for s in loop.body if isinstance(s, N.Assign)}
    # Welford's steps (schedule/chan.py): their let and three assignments are one fold of the triple
    steps: dict[int, Group] = {}
    for group, at in chan.groups(loop.body):
        if _names(group.value) & accs or (group.guard is not None and _names(group.guard) & accs):
            raise NotFolded(f"Welford's update of '{group.mean.name}' reads an accumulator")
        for k in at:
            steps[k] = group
        for k, v in zip(at[1:], (group.count, group.mean, group.m2), strict=True):
            if v.name in folds:
                raise NotFolded(f"'{v.name}' folded twice in one iteration")
            folds[v.name] = Fold(v, "welford", group.value, group.guard, welford=group)
            order[v.name] = k
    for i, s in enumerate(loop.body):
        if i in steps:
            continue
        if isinstance(s, N.Let):
            if own_axes(s.value):
                raise NotFolded("a reduction or a permutation of a tile inside the loop")
            defined[s.var.name] = s.value
            lets[s.var.name] = s.value
            let_at[s.var.name] = i
        elif isinstance(s, N.Load):
            defined[s.var.name] = s.var
            loads.append(s)
        elif isinstance(s, N.Store):
            stores.append(s)
        elif isinstance(s, N.Assign):
            if own_axes(s.value):
                raise NotFolded("a reduction or a permutation of a tile inside the loop")
            fold = _fold_through(s, lets, accs)
            raw[s.var.name] = s.value
            if fold.acc.name in folds and folds[fold.acc.name].welford is not None:
                raise NotFolded(f"'{fold.acc.name}' folded twice in one iteration")
            if fold.acc.name in folds:
                folds[fold.acc.name] = _merged(folds[fold.acc.name], fold)
                continue
            folds[fold.acc.name] = fold
            order[fold.acc.name] = i
        elif isinstance(s, N.Barrier) and fenced_tensors is not None and _fences_tensors(loop, fenced_tensors):
            # (the lifting's fence of a tensor the loop stores and the lanes read back: by the store proof
            # below each lane reads only the elements it stores, and the rewrite leaves barriers out;
            # fenced() derives the ones the folded tiles need again, lift/hazards.py)
            continue
        else:
            raise NotFolded(f"a {type(s).__name__} statement inside the loop")
    _check_rescaled(folds, order, lets)
    _check_picks(folds, lets, let_at, order, raw)
    # lets that read an accumulator: only where the folds' values inline them (an online softmax's new
    # maximum), read by nothing else
    inlined = {n for n, v in lets.items() if _names(v) & folds.keys()}
    # a sum read after its fold in the same iteration (``acc += x; y.at(j) = acc;``): a running sum, a
    # prefix sum of the block then (an inclusive scan); only by lets and stored values
    scannable = {
        n for n, f in folds.items() if f.op in SCANS and f.rescaled is None and f.pick is None and f.count == 1
    }
    running: set[str] = set()  # lets that hold a running sum (or a value of one)
    scanned: set[str] = set()
    for i, s in enumerate(loop.body):  # an accumulator is read only by its own fold
        if i in steps:
            continue
        reads = _reads(s)
        if isinstance(s, N.Assign):
            fold = folds[s.var.name]
            value = (
                fold.value
                if fold.rescaled is None
                else E.Bin("+", fold.rescaled.of, fold.rescaled.weight or fold.rescaled.of)
            )
            reads = _names(value) | (_names(fold.guard) if fold.guard is not None else set())
        elif isinstance(s, (N.Let, N.Store)):
            value_reads = _names(s.value)
            after_fold = {a for a in value_reads & folds.keys() if a in scannable and order[a] < i}
            if after_fold or value_reads & running:
                others = (value_reads & (folds.keys() | inlined)) - after_fold - running
                where = set().union(*(_names(x) for x in s.index)) | _names(s.mask) if isinstance(s, N.Store) else set()
                if not others and not where & (folds.keys() | inlined | running):
                    scanned |= after_fold | {a for r in value_reads & running for a in _running_of(r, lets, folds)}
                    if isinstance(s, N.Let):
                        running.add(s.var.name)
                    continue
            if isinstance(s, N.Let) and s.var.name in inlined:
                continue
        if reads & (folds.keys() | inlined | running):
            raise NotFolded("an accumulator read inside the loop other than by its fold")
    for name in scanned:
        folds[name] = dataclasses.replace(folds[name], running=True)
    later = set().union(*(_reads(s) for s in after)) if after else set()
    if later & defined.keys():
        raise NotFolded("a value of the loop read after it")
    for st in stores:
        index = [E.resolve(x, defined) for x in st.index]
        for other in stores:  # two stores into one tensor: iterations would overlap in another order
            if (
                other is not st
                and other.base == st.base
                and not all(E.same(E.resolve(a, defined), b) for a, b in zip(other.index, index, strict=True))
            ):
                raise NotFolded("two stores into one tensor at different elements in the loop")
        if not any(_steps_with(x, j) for x in index):
            raise NotFolded("a store that writes one element for several values of the counter")
        for ld in loads:
            if ld.base == st.base and not all(
                E.same(E.resolve(a, defined), b) for a, b in zip(ld.index, index, strict=True)
            ):
                raise NotFolded("a tensor read in the loop at other elements than it stores")
    return folds


def _fences_tensors(loop: N.For, tensors: set[str]) -> bool:
    """Whether ``loop``'s barriers can only be fences of the kernel's tensors: every access of its body
    is to one of ``tensors`` (none to a scratch area, whose elements other lanes stored before the
    loop).  A loop that only reads a tensor the kernel writes elsewhere (a row normalised in place:
    its statistic's loop reads ``x``, a later loop stores it) holds the lifting's fences too; they
    order other statements' stores, and fenced() derives the ones the folded tiles need again."""
    accesses = [x for x in loop.body if isinstance(x, (N.Load, N.Store))]
    if len(accesses) + sum(isinstance(x, (N.Let, N.Assign, N.Barrier)) for x in loop.body) != len(loop.body):
        return False
    return bool(accesses) and all(x.base in tensors for x in accesses)


def tensors_of(kernel: N.Kernel) -> set[str]:
    """The kernel's tensors in memory (its pointer arguments) and the scratch areas each lane has a
    copy of its own of (lift/hazards.py lane_private), not the other scratch areas."""
    return {a.name for a in kernel.args if isinstance(a, N.Pointer)} | lane_private(kernel)


def _merged(first: Fold, then: Fold) -> Fold:
    """Two folds of one accumulator in one iteration (``if (c) s += f; else s += g;`` is lifted as
    ``s := where(c, s + f, s); s := where(!c, s + g, s)``): with the same associative and commutative
    ``op``, and neither value nor guard reading the accumulator (checked by the caller), the
    iteration's value is ``op(s, op(where(c, f, e), where(!c, g, e)))``, ``e`` the identity of ``op``:
    one fold of the combined term, under no guard."""
    plain = all(f.rescaled is None and f.pick is None and f.of is None for f in (first, then))
    if not plain or first.op != then.op or first.op not in REDUCES:
        raise NotFolded(f"'{first.acc.name}' folded twice in one iteration")
    e = _identity(first.op, first.acc.dtype)

    def term(f: Fold) -> E.Expr:
        value = f.value if f.value.dtype == first.acc.dtype else E.Cast(f.value, first.acc.dtype)
        return value if f.guard is None else E.Where(f.guard, value, e)

    both = E.Bin(first.op, term(first), term(then))
    return Fold(first.acc, first.op, both, None, count=first.count + then.count)


def _running_of(name: str, lets: dict[str, E.Expr], folds: dict[str, Fold]) -> set[str]:
    """The accumulators a let reads, through other lets."""
    return _names(E.resolve(lets[name], lets)) & folds.keys()


def _fold_through(s: N.Assign, lets: dict[str, E.Expr], accs: set[str]) -> Fold:
    """The fold ``s`` makes: as written, else with the loop's lets inlined (``m := n`` where ``n =
    max(m, f)``), else the rescaled sum of an online softmax (schedule/rescaled.py), else the best
    value so far or its index (schedule/argfold.py)."""
    try:
        return _fold(s)
    except NotFolded as e:
        first = e
    inlined = N.Assign(s.var, E.resolve(s.value, lets), line=s.line)
    try:
        return _fold(inlined)
    except NotFolded:
        pass
    acc = s.var
    guard, value = guarded(acc.name, inlined.value)
    found = rescaled.match(acc, value)
    if found is not None and acc.dtype in SUMMED and not (guard and acc.name in _names(guard)):
        return Fold(acc, "rescale", value, guard, found)
    best = argfold.match_best(acc, inlined.value)
    if best is not None:
        op, f, g = best
        # NaNs never compare better: they never enter the fold
        skip = E.Where(E.Bin("==", f, f), f, _identity(op, acc.dtype)) if not E.is_int(f.dtype) else f
        return Fold(acc, op, skip, g, of=f)
    pick = argfold.match_index(acc, inlined.value, accs)
    if pick is not None:
        chosen, index, g = pick
        return Fold(acc, "argpick", index, g, pick=chosen)
    if guard is not None and acc.name not in _names(guard) | _names(value) and acc.dtype != "i1":
        # a value picked under a condition (the other accumulators' reads are refused by loop_folds)
        return Fold(acc, "last", value, guard)
    raise first


def _before(e: E.Expr, peer: str, lets: dict[str, E.Expr], let_at: dict[str, int], at: int, peer_at: int) -> bool:
    """Whether every reference to ``peer`` in ``e`` (evaluated at position ``at`` of the body), directly
    or through lets, is to its value before its assignment at ``peer_at``."""
    names = _names(e)
    if peer in names and at > peer_at:
        return False
    return all(_before(lets[n], peer, lets, let_at, let_at[n], peer_at) for n in names & lets.keys())


def _check_picks(
    folds: dict[str, Fold],
    lets: dict[str, E.Expr],
    let_at: dict[str, int],
    order: dict[str, int],
    raw: dict[str, E.Expr],
) -> None:
    """Each index fold's best value is a max / min fold of the same values under the same guard,
    the comparison the same and made with the best value before the step, one index a best value."""
    peers: set[str] = set()
    for name, f in folds.items():
        p = f.pick
        if p is None:
            continue
        peer = folds.get(p.peer)
        if peer is None or peer.op != p.op or peer.rescaled is not None or peer.pick is not None:
            raise NotFolded(f"'{name}' follows '{p.peer}', which is not the running {p.op} of what it compares")
        if not E.same(E.resolve(peer.of if peer.of is not None else peer.value, lets), E.resolve(p.of, lets)):
            raise NotFolded(f"'{name}' compares other values than '{p.peer}' folds")
        if not _same_guard(peer, f, lets):
            raise NotFolded(f"'{name}' and '{p.peer}' fold under different conditions")
        if not _before(raw[name], p.peer, lets, let_at, order[name], order[p.peer]):
            raise NotFolded(f"'{name}' compares with '{p.peer}' after it changed")
        if p.peer in peers:
            raise NotFolded(f"'{p.peer}' has two index folds")
        peers.add(p.peer)


def _check_rescaled(folds: dict[str, Fold], order: dict[str, int], lets: dict[str, E.Expr]) -> None:
    """Each rescaled sum's running maximum is a max fold of the same loop of the same values under the
    same guard, assigned after it (the sum's scale reads the maximum before the step)."""
    for name, f in folds.items():
        r = f.rescaled
        if r is None:
            continue
        peer = folds.get(r.peer)
        if peer is None or peer.op != "max" or not E.same(E.resolve(peer.value, lets), E.resolve(r.of, lets)):
            raise NotFolded(f"'{name}' is rescaled by '{r.peer}', which is not the running maximum of its terms")
        if not _same_guard(peer, f, lets):
            raise NotFolded(f"'{name}' and its running maximum '{r.peer}' fold under different conditions")
        if order[r.peer] < order[name]:
            raise NotFolded(f"'{name}' is rescaled by '{r.peer}' after the maximum changed")
        if any(g.rescaled is not None and g.rescaled.peer == r.peer for n, g in folds.items() if n != name):
            raise NotFolded(f"'{r.peer}' rescales two sums")


def _same_guard(a: Fold, b: Fold, lets: dict[str, E.Expr]) -> bool:
    """Whether two folds fold under the same condition (none, or the same one with lets inlined)."""
    if a.guard is None or b.guard is None:
        return a.guard is None and b.guard is None
    return E.same(E.resolve(a.guard, lets), E.resolve(b.guard, lets))


# float accumulators a '+' fold may sum in another order: within the rounding of the result (a
# 16-bit accumulator rounds every step to 11 or 8 bits, which no other order reproduces)
SUMMED = ("f32", "f64")


def guarded(acc: str, value: E.Expr) -> tuple[E.Expr | None, E.Expr]:
    """An accumulator's new value ``where(g, v, acc)`` (assigned under a condition): (g, v); any
    other value: (None, the value)."""
    if isinstance(value, E.Where) and isinstance(value.other, E.Var) and value.other.name == acc:
        return value.cond, value.then
    return None, value


def _fold(s: N.Assign) -> Fold:
    """``acc := op(acc, f)`` or ``acc := where(g, op(acc, f), acc)``; a sum written ``acc - f`` (the sum
    of ``-f``: ``a - b`` is ``a + (-b)`` exactly, in floats and in wrapping integers) or ``fma(a, b,
    acc)`` (the sum of ``a * b``: each step rounds once where ``acc + a * b`` rounds twice, a float sum
    in another order within the rounding of its type, as any ``+`` fold) as well."""
    acc = s.var
    guard, value = guarded(acc.name, s.value)
    value = _as_sum(acc, value)
    what = f"'{acc.name}' assigned in the loop other than by a fold (+, max, min, *, and bitwise |, &, ^)"
    if not (isinstance(value, E.Bin) and value.op in REDUCES):
        raise NotFolded(what)
    if value.op in ("|", "&", "^") and not (E.is_int(acc.dtype) and acc.dtype != "i1"):
        raise NotFolded(what)
    for mine, other in ((value.lhs, value.rhs), (value.rhs, value.lhs)):
        if isinstance(mine, E.Var) and mine.name == acc.name and acc.name not in _names(other):
            if guard is not None and acc.name in _names(guard):
                break
            if value.op in ("+", "*") and not E.is_int(acc.dtype) and acc.dtype not in SUMMED:
                break  # each step of a 16-bit float sum rounds in its type: summed in another order it
                # would not (``acc = 2048; acc += 1`` in f16 stays 2048), beyond the result's rounding
            if other.dtype != acc.dtype and value.op in MORE_FOLDS:
                break  # (the step's operation in a wider type than the accumulator's: as written)
            return Fold(acc, value.op, other, guard)
    raise NotFolded(what)


def _as_sum(acc: E.Var, value: E.Expr) -> E.Expr:
    """``acc - f`` as ``acc + (-f)`` and ``fma(a, b, acc)`` (a float accumulator) as ``acc + a * b``
    where ``f``, ``a`` and ``b`` do not read ``acc``; any other value as it is."""
    mine = acc.name
    if (
        isinstance(value, E.Bin)
        and value.op == "-"
        and isinstance(value.lhs, E.Var)
        and value.lhs.name == mine
        and mine not in _names(value.rhs)
    ):
        return E.Bin("+", value.lhs, E.Un("-", value.rhs))
    if (
        isinstance(value, E.Call)
        and value.fn == "fma"
        and len(value.args) == 3
        and isinstance(value.args[2], E.Var)
        and value.args[2].name == mine
        and not E.is_int(acc.dtype)
        and not (_names(value.args[0]) | _names(value.args[1])) & {mine}
    ):
        term: E.Expr = E.Bin("*", value.args[0], value.args[1])
        if term.dtype != acc.dtype:
            term = E.Cast(term, acc.dtype)
        return E.Bin("+", value.args[2], term)
    return value


def _steps_with(x: E.Expr, j: str) -> bool:
    """``x`` is affine in the counter ``j`` with a non-zero coefficient."""
    terms = E.linear(x, [j])
    return terms is not None and terms[0].get(j, 0) != 0


def _reads(s: N.Stmt) -> set[str]:
    return set().union(*(_names(x) for x in N.exprs_of(s))) if N.exprs_of(s) else set()


def _whole_extent(loop: N.For, kernel: N.Kernel, args: list[N.Arg], block: Block) -> None:
    """The constexpr argument of a block that holds the loop's whole extent: the launcher passes the
    power of two at or above ``stop - start`` (an expression of the kernel's scalar arguments)."""
    assert isinstance(block, E.Extent)
    host = kernel.on_host(E.fold(loop.stop - loop.start))
    if host is None:
        raise NotFolded("a loop whose extent the launcher does not know (it depends on the program)")
    lanes = 1
    for d in lane_shape(kernel):
        lanes *= d if isinstance(d, int) else 1
    arg = N.Constexpr(block.name, 0, size=host, of=f"the loop at line {loop.line}", fixed=lanes)
    known = next((a for a in args if a.name == block.name), None)
    if known is None:
        args.append(arg)
    elif not (isinstance(known, N.Constexpr) and known.size is not None and E.same(known.size, host)):
        raise NotFolded("loops of different extents in one kernel")


# a loop of an extent known when translating folds whole into a tile of that size (no size fixed at
# launch, no blocked variant) where the tile holds at most this much (policy.FOLD_WHOLE_BYTES: the launcher
# keeps a row in registers up to it)
KNOWN_WHOLE_BYTES = 64 * 1024
# the bytes of an element of the IR's types (4 where not named)
ELEM_BYTES = {"i1": 1, "i8": 1, "u8": 1, "f8_e4m3": 1, "f8_e5m2": 1, "i16": 2, "u16": 2, "f16": 2, "bf16": 2}
ELEM_BYTES |= {"f64": 8, "i64": 8, "u64": 8}


def _known_whole(extent: E.Expr, kernel: N.Kernel) -> bool:
    """Whether a loop of ``extent`` folds whole into a tile of a size known when translating."""
    if not (isinstance(extent, E.Const) and isinstance(extent.value, int) and extent.value > 0):
        return False
    lanes = 1
    for d in lane_shape(kernel):
        lanes *= d if isinstance(d, int) else 1
    elem = max((ELEM_BYTES.get(a.dtype, 4) for a in kernel.args if isinstance(a, N.Pointer)), default=4)
    return pow2(int(extent.value)) * lanes * elem <= KNOWN_WHOLE_BYTES


def lane_shape(kernel: N.Kernel) -> E.Shape:
    rank = tile_rank(kernel)
    shape = [1] * rank
    for s in N.walk(kernel.body):
        for v in N.defines(s):
            padded = (1,) * (rank - len(v.shape)) + tuple(v.shape)
            shape = [a if a != 1 else b for a, b in zip(shape, padded, strict=True)]
    return tuple(shape)


# ---------------------------------------------------------------- the rewrite
def _read_tiles(kernel: N.Kernel) -> set[str]:
    """The tiles ``kernel`` loads from memory (values a lane read: a segment's start)."""
    return {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Load) and s.var.shape}


def _own_segment(index: E.Expr, counter: str, read: set[str]) -> bool:
    """``index`` walks each lane's own segment: the counter at a unit step plus a value the lane read
    (``lo + k``)."""
    terms = E.linear(index, [counter])
    return terms is not None and terms[0].get(counter) == 1 and bool(_names(terms[1]) & read)


def flat_last(index: list[E.Expr]) -> E.Expr:
    """An access's flat index along the contiguous axis: its last index, or ``e`` where the last two
    are ``e / X`` and ``e % X`` (a flat index split into a row and a column)."""
    last = index[-1]
    before = index[-2] if len(index) > 1 else None
    if (
        isinstance(last, E.Bin)
        and last.op == "%"
        and isinstance(before, E.Bin)
        and before.op == "/"
        and E.same(before.lhs, last.lhs)
        and E.same(before.rhs, last.rhs)
    ):
        return last.lhs
    return last


def lane_run(index: list[E.Expr], counter: str, extent: E.Expr) -> bool:
    """Whether an access walks a run of the loop's ``extent`` elements of each lane: its flat index along
    the contiguous axis (:func:`flat_last`) steps by 1 with the counter and, with each lane, by at least
    ``extent`` (a constant; 2 where the extent is known at launch only) or by ``extent`` itself
    (``x.at(t * 8 + k)``, ``k`` in ``[8]``; ``x.at(r * N + j)``, ``j`` in ``[N]``: the rows of a flat
    tensor): folded, the counter's axis is the fast one."""
    flat = flat_last(index)
    lanes = sorted({v.name for v in E.free_vars(flat) if v.shape})
    terms = E.linear_terms(flat, [counter, *lanes])
    if terms is None or not lanes:
        return False
    step = E.fold(terms[0].get(counter, E.Const(0)))
    if not (isinstance(step, E.Const) and step.value == 1):
        return False
    least = int(extent.value) if isinstance(extent, E.Const) and isinstance(extent.value, int) else 2
    for v in lanes:
        coef = E.fold(terms[0].get(v, E.Const(0)))
        if isinstance(coef, E.Const) and isinstance(coef.value, int):
            if abs(coef.value) < max(2, least):
                return False
        elif not E.same(coef, E.fold(extent)):
            return False
    return True


def _lanes_contiguous(loop: N.For, read: set[str]) -> bool:
    """Whether the loop's accesses read memory along the lanes: where an access's index holds the
    counter, its contiguous (last) dimension's index holds the lanes (``x.at(r, j * 256 + t)``: a
    block of threads striding along a row; ``x.at(i, p # c)``: a thread per column walking the
    rows), and no access has the counter alone there (a lane per row, walking it).  The counter's
    axis then leads the tile and the lanes' stay last, the axis Triton's layouts make each
    thread's contiguous one (on the H200 the axis order alone did not change these kernels' speed,
    2026-12-03; their warps did: :func:`fold_loops`)."""
    values = {s.var.name: s.value for s in loop.body if isinstance(s, N.Let)}
    along = False
    steps = {loop.var.name}  # the counter and the values loaded at it (a gather's rows: ``w.at(idx.at(b, k), d)``)
    for s in loop.body:
        if not isinstance(s, (N.Load, N.Store)) or not s.index:
            continue
        index = [E.resolve(x, values) for x in s.index]
        if not any(steps & _names(x) for x in index):
            continue
        if isinstance(s, N.Load):
            steps.add(s.var.name)
        if not any(x.shape for x in index):
            continue  # the same element for every lane (an embedding bag's row indices): no line of the lanes
        last = index[-1]
        if last.shape and _own_segment(last, loop.var.name, read):
            return False  # each lane walks a segment of its own (``vals.at(lo + k)``): a lane per row
        if lane_run(index, loop.var.name, E.fold(loop.stop - loop.start)):
            return False  # each lane walks a run of its own (``x.at(t * 8 + k)``): the counter's axis is the fast one
        if last.shape:
            along = True
        elif loop.var.name in _names(last):
            return False  # the counter alone walks the lines: a lane per row
    return along


class _Rewrite:
    def __init__(
        self,
        loop: N.For,
        folds: dict[str, Fold],
        rank: int,
        block: Block,
        whole: bool,
        taken: set[str],
        lead: bool = False,
        reverse: bool = False,
    ) -> None:
        self.loop, self.folds, self.rank, self.block, self.whole, self.taken = loop, folds, rank, block, whole, taken
        self.reverse = reverse  # blocks in the opposite order (the iterations are independent: the proof)
        # the counter's axis: trailing, or leading where the lanes run along the lines (_lanes_contiguous)
        self.axis, self.off = (0, 1) if lead else (rank, 0)
        self.env: dict[str, E.Expr] = {}
        self.values: dict[str, E.Expr] = {}  # the lets of the new body
        self.tiles: dict[str, tuple[E.Var, Fold]] = {}  # accumulator -> its block's tile (folded in blocks)
        self.maxima: dict[str, E.Var] = {}  # running maximum -> its new value (a rescaled sum's, this block)
        # index fold and its best value (schedule/argfold.py): accumulator -> (index, best)
        self.pairs: dict[str, tuple[str, str]] = {}
        for name, f in folds.items():
            if f.pick is not None:
                self.pairs[name] = self.pairs[f.pick.peer] = (name, f.pick.peer)
        self.seen: set[tuple[str, str]] = set()
        self.merged: dict[str, int] = {}  # a merged fold's assignments met so far
        self.out: list[N.Stmt] = []
        # Welford's steps (schedule/chan.py): each group's tiles of counts, means and m2 of the block's
        # positions, and the lets of its steps' differences (folded with the group)
        self.wtiles: list[tuple[Group, E.Var, E.Var, E.Var, E.Expr | None]] = []
        self.diffs = {f.welford.diff.name for f in folds.values() if f.welford is not None}
        self.steps: E.Var | None = None  # the blocks folded so far (a scalar counter: Welford's 1 / n)

    def fresh(self, name: str) -> str:
        return N.fresh_name(name, self.taken)

    def run(self) -> list[N.Stmt]:
        return _kept_shapes(self.rewrite(), {name: f.acc for name, f in self.folds.items()})

    def rewrite(self) -> list[N.Stmt]:
        loop, line = self.loop, self.loop.line
        j = loop.var
        lo = E.bounds(loop.start)[0] if j.lo is None else j.lo
        start = E.Var(self.fresh(f"{j.name}_0"), "i32", lo=lo, hi=j.hi) if not self.whole else loop.start
        lanes = E.Lift(E.Arange(self.block), self.rank + 1, (self.axis,))
        counter = E.Var(j.name, "i32", lo=lo, dims=lanes.shape)
        self.env[j.name] = counter
        body: list[N.Stmt] = [N.Let(counter, E.fold(start + lanes), line=line)]
        self.tail = E.Bin("<", counter, loop.stop)  # the block's tail (a mask that has it already keeps it once)
        self.out = body
        for s in loop.body:
            self.stmt(s)
        if self.whole:
            return body
        step = self.block if isinstance(self.block, int) else None
        assert step is not None
        carried = tuple(self.tiles.get(v.name, (v,))[0] for v in loop.carried)
        before = [N.Let(tile, _full(f.op, tile), line=line) for tile, f in self.tiles.values()]
        after = [
            N.Assign(f.acc, E.Bin(f.op, f.acc, E.Reduce(REDUCES[f.op], tile, self.axis)), line=line)
            for tile, f in self.tiles.values()
        ]
        if self.wtiles:
            tiles = {g.count.name: n for g, n, _, _, _ in self.wtiles}
            tiles |= {g.mean.name: m for g, _, m, _, _ in self.wtiles} | {g.m2.name: q for g, _, _, q, _ in self.wtiles}
            carried = tuple(tiles.get(v.name, v) for v in carried)
            if self.steps is not None:
                before.append(N.Let(self.steps, E.Const(0.0, self.steps.type), line=line))
                carried = (*carried, self.steps)
            for group, n, m, q, lanes in self.wtiles:
                before += [N.Let(t, E.Full(t.shape, 0.0, t.type), line=line) for t in (n, m, q)]
                after += self.chan(group, n, m, q, lanes, line)
        if self.reverse:
            # block b of n runs as iteration n - 1 - b
            count = E.fold(E.CDiv(loop.stop - loop.start, E.Const(step)))
            back = E.Var(self.fresh(f"{j.name}_back"), "i32", lo=0)
            first = N.Let(start, E.fold(loop.start + (count - 1 - back) * step), line=line)
            loop_ = N.For(back, E.Const(0), count, E.Const(1), [first, *body], line=line, carried=carried)
            return [*before, loop_, *after]
        return [*before, N.For(start, loop.start, loop.stop, E.Const(step), body, line=line, carried=carried), *after]

    def stmt(self, s: N.Stmt) -> None:
        line = s.line
        if isinstance(s, N.Let) and s.var.name in self.diffs:
            return  # (a Welford step's difference: :meth:`welford` takes it again)
        if isinstance(s, N.Let):
            value = self.lift(s.value)
            # an integer's bounds from its value over every lane (the block's tail lanes too: the
            # counter keeps its lower bound there, so ``tile = it * 3 + p`` stays non-negative)
            lo, hi = E.bounds(value) if E.is_int(value.dtype) else (None, None)
            var = E.Var(s.var.name, value.dtype, lo=lo, hi=hi, dims=value.shape)
            self.env[s.var.name] = var
            self.values[s.var.name] = value
            self.out.append(N.Let(var, value, line=line))
        elif isinstance(s, N.Load):
            index = tuple(self.lift(x) for x in s.index)
            # an element the same for every step of the block (``w.at(b)`` in a loop over a row) is read
            # once for all: the terms wider than its index, the tail among them, left off (a read inside
            # the tensor has no effect; the mask's bounds terms stay), as lift/elements.py reads one
            read_mask = self.mask(s.mask, line, within=E.broadcast(*(x.shape for x in index)))
            shape = E.broadcast(*(x.shape for x in index), *((read_mask.shape,) if read_mask is not None else ()))
            var = E.Var(s.var.name, s.var.type, dims=shape)
            self.env[s.var.name] = var
            other = s.other if s.other is not None else (0 if E.is_int(s.var.type) else 0.0)
            if read_mask is None:
                other = None
            self.out.append(dataclasses.replace(s, var=var, index=index, mask=read_mask, other=other))
        elif isinstance(s, N.Store):
            index = tuple(self.lift(x) for x in s.index)
            mask = self.mask(s.mask, line)
            self.out.append(dataclasses.replace(s, index=index, value=self.lift(s.value), mask=mask))
        elif isinstance(s, N.Assign):
            f = self.folds[s.var.name]
            if f.count > 1:  # folds of one accumulator merged (_merged): at the last of their assignments
                self.merged[s.var.name] = self.merged.get(s.var.name, 0) + 1
                if self.merged[s.var.name] < f.count:
                    return
            conds = [self.tail] + ([self.lift(f.guard)] if f.guard is not None else [])
            if f.welford is not None:  # (its count, mean and m2 at once, at the last of them)
                if self.whole:  # (only schedule/moments.py writes them, for loops split in blocks)
                    raise NotFolded("Welford's update over a whole row")
                if s.var.name == f.welford.m2.name:
                    self.welford(f.welford, E.conj(conds), line)
                return
            if f.rescaled is not None:
                self.rescale(s.var, f.rescaled, E.conj(conds), line)
                return
            pair = self.pairs.get(s.var.name)
            if pair is not None:  # an index and its best value: both at the later of their assignments
                if pair not in self.seen:
                    self.seen.add(pair)
                    return
                self.pick(*pair, E.conj(conds), line)
                return
            if f.op == "last":
                self.last(s.var, f, E.conj(conds), line)
                return
            if s.var.name in self.maxima:  # the running maximum a rescaled sum computed already
                self.out.append(N.Assign(s.var, self.maxima[s.var.name], line=line))
                return
            value = self.lift(f.value)
            masked = E.Where(E.conj(conds), value, _identity(f.op, s.var.type))  # the tail: rank + 1
            if f.running:
                self.running(s.var, f.op, masked, line)
                return
            if not self.whole:
                # blocks: folded element-wise into a tile of the block, reduced once after the loop (a
                # reduction over the leading axis each block crosses the warps; along the row, one a block
                # measured 0.00-0.04 of the roofline slower on the H100, perf/RESULTS.md 2026-12-07 19:27).
                # The operator is associative and commutative (FOLDS): each position's partial, then the
                # positions, is the same fold in another order (a float sum within the dtype's rounding)
                tile = self.tiles.get(s.var.name, (None,))[0]
                if tile is None:
                    shape = E.broadcast(masked.shape, self.lift(s.var).shape)
                    tile = E.Var(self.fresh(f"{s.var.name}_tile"), s.var.type, dims=shape)
                    self.tiles[s.var.name] = (tile, f)
                self.out.append(N.Assign(tile, E.Bin(f.op, tile, masked), line=line))
                return
            folded = E.Reduce(REDUCES[f.op], masked, self.axis)
            self.out.append(N.Assign(s.var, E.Bin(f.op, s.var, folded), line=line))

    def rescale(self, acc: E.Var, r: Rescaled, cond: E.Expr, line: int) -> None:
        """A block of an online softmax's steps at once (schedule/rescaled.py): the block's maximum
        ``B``, the new maximum ``N = max(m, B)``, ``s := s * E(m - N) + sum(g * E(f - N))`` (the scale 1
        where ``m`` is ``N``: no element yet keeps ``s`` as it is); the maximum's own assignment takes
        ``N`` after."""
        peer = self.folds[r.peer].acc
        of = self.lift(r.of)
        dtype = acc.type
        lowest = _identity("max", peer.type)
        block_max = E.Reduce("max", E.Where(cond, of, lowest), self.axis)
        new = E.Var(self.fresh(f"{r.peer}_new"), peer.type, dims=E.broadcast(peer.shape, block_max.shape))
        self.out.append(N.Let(new, E.Bin("max", peer, block_max), line=line))
        self.maxima[r.peer] = new
        one = E.Const(1.0, dtype)
        scale = E.Where(E.Bin("==", peer, new), one, r.apply(peer, new, dtype))
        term: E.Expr = r.apply(of, self.lift(new), dtype)
        if r.weight is not None:
            term = E.Bin("*", self.lift(r.weight), term)
        added = E.Reduce("sum", E.Where(cond, term, E.Const(0.0, dtype)), self.axis)
        self.out.append(N.Assign(acc, E.Bin("+", E.Bin("*", acc, scale), added), line=line))

    def welford(self, group: Group, cond: E.Expr, line: int) -> None:
        """A block of Welford's steps at once (schedule/chan.py): each position of the block keeps its
        own count, mean and m2 (element-wise tiles, Welford's step a block), combined across the
        positions and merged after the loop (:meth:`chan`).  Where the guard reads nothing the loop defines, every
        position the tail leaves has seen as many values as the blocks so far: ``1 / n`` is one
        scalar a block (else a division a position)."""
        dtype = group.mean.type
        one, zero = E.Const(1.0, dtype), E.Const(0.0, dtype)
        value = self.lift(group.value)
        shape = E.broadcast(value.shape, cond.shape, self.lift(group.mean).shape)
        # (blocks last first: the tail's block comes first, its positions past the stop a value behind)
        uniform = not self.reverse and (
            group.guard is None or not (_names(group.guard) & (self.env.keys() | {self.loop.var.name}))
        )
        m, q = (E.Var(self.fresh(f"{v.name}_tile"), dtype, dims=shape) for v in (group.mean, group.m2))
        if uniform:
            # a position's count is the blocks whose tail held there, where the lane's guard holds: kept
            # along the counter's axis alone (registers for the means and m2, not for counts)
            n = E.Var(self.fresh(f"{group.count.name}_tile"), dtype, dims=self.tail.shape)
            self.out.append(N.Assign(n, E.Bin("+", n, E.Where(self.tail, one, zero)), line=line))
            lanes = E.Where(self.lift(group.guard), one, zero) if group.guard is not None else None
        else:
            n = E.Var(self.fresh(f"{group.count.name}_tile"), dtype, dims=shape)
            self.out.append(N.Assign(n, E.Bin("+", n, E.Where(cond, one, zero)), line=line))
            lanes = None
        self.wtiles.append((group, n, m, q, lanes))
        diff = E.Var(self.fresh(f"{group.diff.name}_tile"), dtype, dims=shape)
        self.out.append(N.Let(diff, E.Bin("-", value, m), line=line))
        if uniform:
            if self.steps is None:
                self.steps = E.Var(self.fresh("welford_steps"), dtype)
                self.out.append(N.Assign(self.steps, E.Bin("+", self.steps, one), line=line))
            inverse = E.Var(self.fresh("welford_inverse"), dtype)
            self.out.append(N.Let(inverse, E.Bin("/", one, self.steps), line=line))
            share: E.Expr = E.Bin("*", diff, inverse)
        else:
            share = E.Bin("/", diff, E.Bin("max", n, one))
        self.out.append(N.Assign(m, E.Bin("+", m, E.Where(cond, share, zero)), line=line))
        self.out.append(
            N.Assign(q, E.Bin("+", q, E.Where(cond, E.Bin("*", diff, E.Bin("-", value, m)), zero)), line=line)
        )

    def chan(self, group: Group, n: E.Var, m: E.Var, q: E.Var, lanes: E.Expr | None, line: int) -> list[N.Stmt]:
        """The counts ``n`` (times ``lanes``: 1 where the lane's guard holds, else 0; None: 1), means
        ``m`` and m2 ``q`` of the block's positions combined
        (``N = sum n``, ``mean = sum n m / N``, ``M2 = sum q + n (m - mean)^2``) and merged into the
        group's accumulators by Chan's formula: with ``T = n0 + N`` and ``d = mean - mean0``,
        ``mean0 += d N / T``, ``m2 += M2 + d^2 n0 N / T``, ``n0 = T`` (nothing where ``T`` is 0)."""
        dtype = group.mean.type
        one, zero = E.Const(1.0, dtype), E.Const(0.0, dtype)
        out: list[N.Stmt] = []

        def let(name: str, value: E.Expr) -> E.Var:
            var = E.Var(self.fresh(name), value.dtype, dims=value.shape)
            out.append(N.Let(var, value, line=line))
            return var

        if lanes is not None:
            n = let(f"{group.count.name}_lanes", E.Bin("*", n, lanes))
        total = let(f"{group.count.name}_sum", E.Reduce("sum", n, self.axis))
        mean = let(
            f"{group.mean.name}_sum",
            E.Bin("/", E.Reduce("sum", E.Bin("*", n, m), self.axis), E.Bin("max", total, one)),
        )
        off = E.Bin("-", m, self.lift(mean))
        spread = E.Bin("+", q, E.Bin("*", n, E.Bin("*", off, off)))
        m2 = let(f"{group.m2.name}_sum", E.Reduce("sum", E.Where(E.Bin(">", n, zero), spread, zero), self.axis))
        n0, mean0, m20 = group.count, group.mean, group.m2
        after = let(f"{group.count.name}_after", E.Bin("+", n0, total))
        d = let(f"{group.mean.name}_shift", E.Bin("-", mean, mean0))
        share = let(f"{group.count.name}_share", E.Bin("/", total, E.Bin("max", after, one)))
        out.append(N.Assign(mean0, E.Bin("+", mean0, E.Bin("*", d, share)), line=line))
        grown = E.Bin("*", E.Bin("*", d, d), E.Bin("*", n0, share))
        out.append(N.Assign(m20, E.Bin("+", m20, E.Bin("+", m2, grown)), line=line))
        out.append(N.Assign(n0, after, line=line))
        return out

    def running(self, acc: E.Var, op: str, masked: E.Expr, line: int) -> None:
        """A sum, maximum or minimum read after each step (a prefix sum, a running maximum), a block at
        once: the block's terms, their inclusive prefix folds (``tl.cumsum``; ``tl.associative_scan``
        with the module's maximum or minimum, emit/module.py) after the fold so far are each step's
        running value, which the statements after the fold read; the fold takes the block's."""
        terms_value = E.Cast(masked, acc.type) if masked.dtype != acc.type else masked
        terms = E.Var(self.fresh(f"{acc.name}_terms"), acc.type, dims=terms_value.shape)
        self.out.append(N.Let(terms, terms_value, line=line))
        scan = E.Call(SCANS[op], (terms, E.Const(self.axis, "i32")), acc.type)
        run_value = E.Bin(op, self.lift(acc), scan)
        run = E.Var(self.fresh(f"{acc.name}_run"), acc.type, dims=run_value.shape)
        self.out.append(N.Let(run, run_value, line=line))
        self.out.append(N.Assign(acc, E.Bin(op, acc, E.Reduce(REDUCES[op], terms, self.axis)), line=line))
        self.env[acc.name] = run

    def pick(self, index: str, best: str, cond: E.Expr, line: int) -> None:
        """A block of an argmax's steps at once (schedule/argfold.py): the block's best value ``B`` (NaNs
        and masked-off elements never win), its first position ``P``, the index expression there; taken
        where ``B`` is strictly better than the best so far (earlier positions win ties)."""
        fi, fb = self.folds[index], self.folds[best]
        assert fi.pick is not None
        op = fi.pick.op
        acc_i, acc_b = fi.acc, fb.acc
        of = self.lift(fi.pick.of)
        valid = E.conj([cond, E.Bin("==", of, of)]) if not E.is_int(of.dtype) else cond
        lowest = _identity(op, acc_b.type)
        vals = E.Var(self.fresh(f"{best}_vals"), acc_b.type, dims=E.broadcast(of.shape, valid.shape))
        self.out.append(
            N.Let(vals, E.Where(valid, E.Cast(of, acc_b.type) if of.dtype != acc_b.type else of, lowest), line=line)
        )
        top = E.Var(self.fresh(f"{best}_block"), acc_b.type, dims=E.Reduce(op, vals, self.axis).shape)
        self.out.append(N.Let(top, E.Reduce(op, vals, self.axis), line=line))
        counter = self.env[self.loop.var.name]
        big = E.Const(2**31 - 1, "i32")
        least = E.Const(-(2**31), "i32")
        if fi.pick.last:  # (>=: the last position of the block's best among the valid ones)
            hit = E.conj([E.Bin("==", vals, self.lift(top)), valid])
            first = E.Reduce("max", E.Where(hit, counter, least), self.axis)
        else:
            first = E.Reduce("min", E.Where(E.Bin("==", vals, self.lift(top)), counter, big), self.axis)
        at = E.Var(self.fresh(f"{index}_block"), "i32", dims=first.shape)
        self.out.append(N.Let(at, first, line=line))
        value = self.lift(fi.value)
        zero = _identity("+", acc_i.type)
        at_value = E.replace(value, counter, self.lift(at))
        if _index_arith(value) and len(at_value.shape) == len(value.shape) and at_value.shape[self.axis] == 1:
            # the index an affine (or any +, -, *) function of the counter alone along the axis: its value
            # at the position ``P`` is the function at ``P`` (no second pass over the block to pick it)
            chosen = at if at_value == self.lift(at) else E.Reduce("sum", at_value, self.axis)
        else:
            chosen = E.Reduce("sum", E.Where(E.Bin("==", counter, self.lift(at)), value, zero), self.axis)
        better: E.Expr = E.Bin(">" if op == "max" else "<", top, acc_b)
        if fi.pick.last:  # a later position as good as the best so far replaces it (where one is valid)
            better = E.conj([E.Bin(">=" if op == "max" else "<=", top, acc_b), E.Bin(">", at, least)])
        take = E.Var(self.fresh(f"{best}_better"), "i1", dims=better.shape)
        self.out.append(N.Let(take, better, line=line))
        self.out.append(
            N.Assign(
                acc_i,
                E.Where(take, E.Cast(chosen, acc_i.type) if chosen.dtype != acc_i.type else chosen, acc_i),
                line=line,
            )
        )
        self.out.append(N.Assign(acc_b, E.Where(take, top, acc_b), line=line))

    def last(self, acc: E.Var, f: Fold, cond: E.Expr, line: int) -> None:
        """A block of a value picked under a condition at once: the block's last position ``P`` where
        ``cond`` holds (the lowest ``i32`` where none does) and ``f`` there, taken where some position
        holds.  ``f`` at ``P`` is a reduction with one element that is not the identity: an integer's
        sum with 0; a float's maximum with ``-inf`` (the element itself, a zero's sign kept), NaN where
        the sum with 0 is NaN (the element is NaN: a sum of NaN, zeros and one infinity is not).  A
        value without a shape (a constant, a parameter) is the same at every position: itself."""
        counter = self.env[self.loop.var.name]
        none = E.Const(-(2**31), "i32")
        last = E.Reduce("max", E.Where(cond, counter, none), self.axis)
        at = E.Var(self.fresh(f"{acc.name}_at"), "i32", dims=last.shape)
        self.out.append(N.Let(at, last, line=line))
        value = self.lift(f.value)
        if value.dtype != acc.type:
            value = E.Cast(value, acc.type)
        hit = E.Bin("==", counter, self.lift(at))
        chosen: E.Expr
        if not value.shape:  # (the same at every position, ``if (..) same = 0;``: no reduction to pick it)
            chosen = value
        elif E.is_int(acc.type):
            chosen = E.Reduce("sum", E.Where(hit, value, E.Const(0, acc.type)), self.axis)
        else:
            top = E.Reduce("max", E.Where(hit, value, _identity("max", acc.type)), self.axis)
            total = E.Reduce("sum", E.Where(hit, value, _identity("+", acc.type)), self.axis)
            nan = E.Var(self.fresh(f"{acc.name}_nan"), acc.type, dims=total.shape)
            self.out.append(N.Let(nan, total, line=line))
            chosen = E.Where(E.Bin("!=", nan, nan), nan, top)
        if chosen.dtype != acc.type:
            chosen = E.Cast(chosen, acc.type)
        self.out.append(N.Assign(acc, E.Where(E.Bin(">", at, none), chosen, acc), line=line))

    def _value(self, mask: E.Var) -> E.Expr:
        """A mask's terms where the loop defined it (so the tail is added once), else the mask."""
        return self.values.get(mask.name, self.lift(mask))

    @overload
    def mask(self, mask: E.Var | None, line: int) -> E.Var: ...
    @overload
    def mask(self, mask: E.Var | None, line: int, within: E.Shape) -> E.Var | None: ...

    def mask(self, mask: E.Var | None, line: int, within: E.Shape | None = None) -> E.Var | None:
        """The access's mask and the block's tail, as a new let; with ``within``, only the terms whose
        shape fits in it (None where none does)."""
        parts: list[E.Expr] = [self.tail] if mask is None else [*E.conjuncts(self._value(mask)), self.tail]
        if within is not None:
            parts = [t for t in parts if E.fits_in(t.shape, within)]
            if not parts:
                return None
        value = E.conj(parts)
        var = E.Var(
            self.fresh(f"{mask.name}_{self.loop.var.name}" if mask is not None else "mask"), "i1", dims=value.shape
        )
        self.out.append(N.Let(var, value, line=line))
        return var

    def lift(self, e: E.Expr) -> E.Expr:
        """``e`` in the loop's new world: the counter's block on its axis (trailing, or leading), every
        tile of the lanes' rank lifted onto the other axes."""
        r, off = self.rank, self.off
        if isinstance(e, E.Var):
            if e.name in self.env:
                return self.env[e.name]
            k = len(e.shape)
            return e if k == 0 else E.Lift(e, r + 1, tuple(range(off + r - k, off + r)))
        if isinstance(e, E.Arange):
            return E.Lift(e, r + 1, (off + r - 1,))
        if isinstance(e, E.Lift):
            if e.rank != r or _names(e.value) & self.env.keys():
                raise NotFolded("a tile of another rank inside the loop")
            return E.Lift(e.value, r + 1, tuple(d + off for d in e.dims))
        if isinstance(e, E.Full):
            k = len(e.dims)
            ones = (1,) * (r - k)
            dims = (1, *ones, *e.dims) if off else (*ones, *e.dims, 1)
            return dataclasses.replace(e, dims=dims)
        if isinstance(e, (E.Reduce, E.Permute, E.Reshape)) or _gathers(e):
            raise NotFolded("a reduction or a permutation of a tile inside the loop")
        changes: dict[str, object] = {}
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            if isinstance(v, E.Expr):
                changes[f.name] = self.lift(v)
            elif isinstance(v, tuple) and v and all(isinstance(x, E.Expr) for x in v):
                changes[f.name] = tuple(self.lift(x) for x in v)
        return dataclasses.replace(e, **changes) if changes else e  # type: ignore[arg-type]


def _kept_shapes(body: list[N.Stmt], accs: dict[str, E.Var]) -> list[N.Stmt]:
    """``body`` with each accumulator keeping its shape: a fold of a lane's scalar in a kernel whose tiles
    have lanes elsewhere (a block-level row walk beside a thread-level part) reduces a tile of one lane
    to a ``[1]`` tile; Triton refuses a loop-carried value whose shape changes, so the leading axes of one
    element are reduced away (a reduction of one element is that element)."""
    out: list[N.Stmt] = []
    for s in body:
        if isinstance(s, N.For):
            s = dataclasses.replace(s, body=_kept_shapes(s.body, accs))
        elif isinstance(s, N.Assign) and s.var.name in accs:
            value = s.value
            while len(value.shape) > len(s.var.shape) and value.shape[0] == 1:
                value = E.Reduce("max", value, 0)
            s = dataclasses.replace(s, value=value)
        out.append(s)
    return out


def _full(op: str, tile: E.Var) -> E.Full:
    """A tile of the identity of ``op``."""
    return E.Full(tile.shape, _identity(op, tile.dtype).value, tile.dtype)


def _index_arith(e: E.Expr) -> bool:
    """``e`` is integer arithmetic by ``+``, ``-``, ``*`` of names, constants and aranges (no load, no
    division: evaluated at any position, even one past the block, it reads nothing and cannot trap)."""
    if isinstance(e, (E.Var, E.Const, E.Arange)):
        return E.is_int(e.dtype)
    if isinstance(e, E.Lift):
        return _index_arith(e.value)
    if isinstance(e, E.Cast):
        return E.is_int(e.dtype) and _index_arith(e.value)
    if isinstance(e, E.Bin):
        return e.op in ("+", "-", "*") and _index_arith(e.lhs) and _index_arith(e.rhs)
    return False


def _identity(op: str, dtype: str) -> E.Const:
    if E.is_int(dtype):
        if op in ("+", "|", "^"):
            return E.Const(0, dtype)
        if op == "*":
            return E.Const(1, dtype)
        if op == "&" and dtype in INT_LIMITS:  # every bit set: -1 of a signed type
            return E.Const(-1, dtype)
        lo, hi = INT_LIMITS.get(dtype, (None, None))
        if op not in ("max", "min") or lo is None:
            raise NotFolded(f"a {op} fold of {dtype} values")
        return E.Const({"max": lo, "min": hi}[op], dtype)  # type: ignore[arg-type]
    if op not in ("+", "*", "max", "min"):
        raise NotFolded(f"a {op} fold of {dtype} values")
    return E.Const({"+": 0.0, "*": 1.0, "max": float("-inf"), "min": float("inf")}[op], dtype)


# ---------------------------------------------------------------- loads read once
def _shared_loads(body: list[N.Stmt]) -> list[N.Stmt]:
    """Straight-line code where two loads read the same elements with no store to that tensor
    between them: the second is the first's value (a row loaded once, kept in registers)."""
    values: dict[str, E.Expr] = {}
    seen: list[tuple[N.Load, tuple[E.Expr, ...], E.Expr | None]] = []
    rename: dict[str, E.Expr] = {}
    out: list[N.Stmt] = []
    for s in body:
        s = _renamed(s, rename)
        if isinstance(s, N.Let):
            values[s.var.name] = s.value
        if isinstance(s, N.While):
            seen = []  # what happens inside is not tracked
        elif isinstance(s, (N.Store, N.Atomic, N.TmaStore, N.Assign, N.For, N.If)):
            # a load is the same after a statement that stores nothing into its tensor and re-binds
            # nothing its index or mask reads (a loop between two passes over a row: a warp's shuffles)
            bases, names = _changes(s)
            seen = [x for x in seen if x[0].base not in bases and not (_names_of(x) & names)]
        if isinstance(s, N.Load):
            index = tuple(E.resolve(x, values) for x in s.index)
            mask = E.resolve(s.mask, values) if s.mask is not None else None
            match = next(
                (
                    ld
                    for ld, ix, mk in seen
                    if ld.base == s.base
                    and ld.var.shape == s.var.shape
                    and ld.nan_outside == s.nan_outside
                    and ld.other == s.other
                    and all(E.same(a, b) for a, b in zip(ix, index, strict=True))
                    and (mk is None) == (mask is None)
                    and (mask is None or E.same(mk, mask))  # type: ignore[arg-type]
                ),
                None,
            )
            if match is not None:
                rename[s.var.name] = match.var
                continue
            seen.append((s, index, mask))
        out.append(s)
    return out


def _changes(s: N.Stmt) -> tuple[set[str], set[str]]:
    """The tensors ``s`` writes and the variables it re-binds (nested statements too)."""
    bases: set[str] = set()
    names: set[str] = set()
    for x in N.walk([s]):
        if isinstance(x, (N.Store, N.Atomic)):
            bases.add(x.base)
        elif isinstance(x, N.TmaStore):
            bases.add(x.fallback.base)
        elif isinstance(x, N.Assign):
            names.add(x.var.name)
        if isinstance(x, N.For):
            names.add(x.var.name)
        if isinstance(x, (N.Let, N.Load, N.TmaLoad, N.Dot)) and x is not s:
            names |= {v.name for v in N.defines(x)}
    return bases, names


def _names_of(seen: tuple[N.Load, tuple[E.Expr, ...], E.Expr | None]) -> set[str]:
    _, index, mask = seen
    return set().union(*(_names(i) for i in index)) | _names(mask)


def _renamed(s: N.Stmt, env: dict[str, E.Expr]) -> N.Stmt:
    if not env:
        return s
    return N.map_exprs(s, lambda e: E.substitute(e, env))


def _gathers(e: E.Expr) -> bool:
    """A gather along an axis of its own (a warp shuffle, lift/helpers.py)."""
    return isinstance(e, E.Call) and e.fn == "gather"
