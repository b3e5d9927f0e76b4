"""A block reduction through scratch memory in halving steps (a tree), folded into one reduction.

The classic CUDA block reduction: each thread stores its partial into a shared buffer, then in
halving steps thread ``t`` adds the element at ``t + h`` to its own while ``t < h``, the block
meeting between steps (written out, as a ``foreach`` over the shift, or as a ``while`` halving
``h``); at the end element 0 holds the total, which one thread or every thread reads.  Lifted as
written (lift/scratch.py) each step is a masked load, a masked load and a masked store of scratch
memory between two barriers.  This rewrite proves on the IR what the steps compute and, where
the proof holds, reads the total as ``tl.sum`` (``tl.max``, ``tl.min``) of the stored tile.

The proof runs the statements after the store, as the lifted program means them (statement after
statement for all lanes), on one program: every element of the buffer holds a multiset of the
stored tile's positions (element ``p`` holds ``{p}`` after the store), a load gives each lane the
multiset of the element it reads, a store of ``a + b`` (or ``max``, ``min``) their union, with that
operator (a value combined by two operators ends the proof; a buffer may hold one tile's max tree,
then another tile's sum tree).  A load all of whose active lanes read every position exactly once (for
``max`` / ``min``: at least once, as they are idempotent) in every run of it reads the reduction of
the tile: it becomes that value.  What the run must know exactly, else the buffer stays as written:

* the store that starts it is unmasked, writes the buffer at ``base + arange(L)`` (the whole
  buffer of ``L`` elements, one lane each; a tile of several axes whose lanes reach the positions
  in row-major order, such as the ``[1, L]`` tile of a block narrowed to one row, is reshaped to
  ``[L]`` before it is reduced) and comes before any other access of the buffer;
* every index, mask, loop bound and ``while`` condition the run meets is computed from constants,
  lanes and loop counters (positions outside the buffer, or read before they were written, end
  the proof); indices are ``base + ...`` with the buffer's own per-program base;
* the values stored are loads of the buffer combined by one of the operators, converted to the
  buffer's type at most; no atomic, descriptor or other write touches the buffer.

A buffer of several rows of threads, each row its own tree (``[R, C]`` threads storing at ``ty * C + tx``,
halving ``tx < h``, lane ``tx == 0`` of each row reading ``ty * C``), is proved the same way, row by
row: the store that starts it is a tile of ``[R, C]`` lanes, and a load whose every active lane reads
every position of one row of it exactly once (for ``max`` / ``min``: at least once), lane ``(i, ..)``
row ``i`` at every run, reads the row's reduction: ``tl.sum`` (``tl.max``, ``tl.min``) of the tile
along its last axis, lane ``i`` of it.  Trees down the columns (halving ``ty < h``, each column its own
tree: the column sums of a block walking down rows) are the same with the axes swapped: lane ``(.., j)``
reading every position of column ``j`` reads the tile's reduction along its first axis, lane ``j`` of it.

Where no load of the buffer is left, its stores, the steps' loops and the scratch argument go, and
the barriers are placed again from what remains (lift/hazards.py).  Floating-point sums come out
in another order than the source's tree (within the dtype's rounding, as every reduction here).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lift.buffers import SUM_TYPES
from ..lift.hazards import fence_hazards
from ..tir import expr as E
from ..tir import nodes as N
from .foldloops import FOLDS

# the work the proof does before it gives up (a loop that does not end, or runs too long to follow
# while translating): statements run, plus a step for each lane a buffer access reaches
MAX_STEPS = 200_000


Total = tuple[int, str]  # (id of the store that started the tile, the operator that reduces it)


class NotTree(Exception):
    """What the run cannot follow: the buffer stays as written."""


@dataclass(frozen=True)
class Part:
    """What an element holds: the stored tile's positions it combines, (which store started them,
    position) -> how many times, and the operator that combined them (None: one position as stored)."""

    op: str | None
    counts: Counter[tuple[int, int]]

    def join(self, other: Part, op: str) -> Part:
        if self.op not in (None, op) or other.op not in (None, op):
            raise NotTree("two operators combine the buffer's elements")
        return Part(op, self.counts + other.counts)


def fold_trees(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each tree reduction through a scratch buffer read as one reduction (see the
    module docstring); the kernel itself where there is none."""
    for area in [a for a in kernel.args if isinstance(a, N.Scratch) and a.lanes == 1]:
        try:
            kernel = _fold(kernel, area.name)
        except NotTree:
            continue
    return kernel


def _fold(kernel: N.Kernel, area: str) -> N.Kernel:
    run = _Run(kernel, area)
    run.block(kernel.body)
    full = {ld for ld, seen in run.reads.items() if seen}
    rows = {ld: got for ld, got in run.row_reads.items() if got is not None and ld not in full}
    uses: dict[int, list[tuple[E.Expr, Total]]] = {}  # id(statement) -> its whole parts and their totals
    for (sid, e), (whole, which) in run.uses.items():
        if whole and which is not None:
            uses.setdefault(sid, []).append((e, which))
    if not (full or uses or rows):
        raise NotTree("nothing reads a whole reduction")
    wanted = {run.read_start[ld] for ld in full} | {w for parts in uses.values() for _, w in parts}
    totals: dict[Total, E.Var] = {}
    after: dict[int, list[N.Let]] = {}  # id(start) -> the totals computed after it
    taken = {v.name for s in N.walk(kernel.body) for v in N.defines(s)} | {a.name for a in kernel.args}
    for store in run.starts:
        for op in sorted(o for sid, o in wanted if sid == id(store)):
            name = N.fresh_name(f"{area.removesuffix('_scratch')}_{FOLDS[op]}", taken)
            value = store.value
            if len(value.shape) > 1:  # the tile's elements in the buffer's (row-major) order
                value = E.Reshape(value, (run.size,))  # type: ignore[arg-type]
            wide = SUM_TYPES.get(value.dtype) if op == "+" else None
            total: E.Expr = E.Reduce(FOLDS[op], E.Cast(value, wide) if wide else value, 0)
            var = E.Var(name, value.dtype)
            totals[(id(store), op)] = var
            after.setdefault(id(store), []).append(
                N.Let(var, E.fold(E.Cast(total, value.dtype) if wide else total), line=store.line)
            )

    def whole_parts(s: N.Stmt) -> N.Stmt:
        def f(e: E.Expr) -> E.Expr:
            for part, start in uses[id(s)]:
                e = E.replace(e, part, _spread(totals[start], part.shape, part.dtype))
            return e

        return N.map_exprs(s, f)

    def rewrite(body: list[N.Stmt]) -> list[N.Stmt]:
        out: list[N.Stmt] = []
        for s in body:
            if isinstance(s, N.Load) and id(s) in full:
                out.append(N.Let(s.var, _broadcast(totals[run.read_start[id(s)]], s), line=s.line))
                continue
            if isinstance(s, (N.For, N.While)):
                s = dataclasses.replace(s, body=rewrite(s.body))
            elif isinstance(s, N.If):
                s = dataclasses.replace(s, then=rewrite(s.then), orelse=rewrite(s.orelse))
            elif id(s) in uses:
                s = whole_parts(s)
            out.append(s)
            out.extend(after.get(id(s), []))
        return out

    row_totals: dict[tuple[Total, int], E.Var] = {}
    for store in run.starts:
        for op, axis in sorted({(t[1], ax) for t, ax in rows.values() if t[0] == id(store)}):
            name = N.fresh_name(f"{area.removesuffix('_scratch')}_{FOLDS[op]}_{'rows' if axis else 'cols'}", taken)
            value = store.value
            r, c = value.shape[0], value.shape[-1]
            if len(value.shape) != 2 or not isinstance(r, int) or not isinstance(c, int):
                raise NotTree("rows of a tile that is not [R, C]")
            wide = SUM_TYPES.get(value.dtype) if op == "+" else None
            total = E.Reduce(FOLDS[op], E.Cast(value, wide) if wide else value, axis)
            var = E.Var(name, value.dtype, dims=(r,) if axis else (c,))
            row_totals[((id(store), op), axis)] = var
            after.setdefault(id(store), []).append(
                N.Let(var, E.fold(E.Cast(total, value.dtype) if wide else total), line=store.line)
            )
    full_rewrite = rewrite

    def rewrite_rows(body: list[N.Stmt]) -> list[N.Stmt]:
        out: list[N.Stmt] = []
        for s in body:
            if isinstance(s, N.Load) and id(s) in rows:
                axis = rows[id(s)][1]
                out.append(N.Let(s.var, _row_value(row_totals[rows[id(s)]], s, axis), line=s.line))
                continue
            if isinstance(s, (N.For, N.While)):
                s = dataclasses.replace(s, body=rewrite_rows(s.body))
            elif isinstance(s, N.If):
                s = dataclasses.replace(s, then=rewrite_rows(s.then), orelse=rewrite_rows(s.orelse))
            out.append(s)
        return out

    body = rewrite_rows(full_rewrite(kernel.body))
    body = _without_area(body, area)
    if any(_touches(s, area) for s in N.walk(body)):
        raise NotTree("the buffer is read other than for its total")
    while True:  # (a tree's loop whose counter only the next tree's condition read goes once that has gone)
        cleaner = _without_idle_loops(N.without_dead_lets(body))
        if len(N.walk(cleaner)) == len(N.walk(body)):
            break
        body = cleaner
    body = N.without(body, lambda s: isinstance(s, N.Barrier))
    args = [a for a in kernel.args if a.name != area]
    said = " Its block reductions through shared memory in halving steps are tile reductions (schedule/treefold.py)."
    doc = kernel.doc if said in kernel.doc else kernel.doc + said  # (said once for all the kernel's buffers)
    out = dataclasses.replace(kernel, body=N.without_dead_lets(body), args=args, doc=doc)
    fence_hazards(out)
    return out


def _row_value(totals: E.Var, ld: N.Load, axis: int) -> E.Expr:
    """The rows' totals (``[R]``, ``axis`` 1) as the value the load gave: lane ``(i, ..)`` row ``i``'s;
    the columns' (``[C]``, ``axis`` 0): lane ``(.., j)`` column ``j``'s (``other`` where its mask is off)."""
    shape, dtype = ld.var.shape, ld.var.type
    value: E.Expr = totals if totals.dtype == dtype else E.Cast(totals, dtype)
    if len(shape) > 1:
        lifted = E.Lift(value, len(shape), (0,) if axis else (len(shape) - 1,))
        value = E.Bin("+", E.Full(shape, 0, dtype), lifted)
    if ld.mask is not None and ld.other is not None:
        return E.Where(ld.mask, value, E.Full(shape, ld.other, dtype))
    return value


def _broadcast(total: E.Var, ld: N.Load) -> E.Expr:
    """The total as the value the load gave: every lane's (``other`` where its mask is off)."""
    shape, dtype = ld.var.shape, ld.var.type
    if ld.mask is not None and ld.other is not None:
        value = total if total.dtype == dtype else E.Cast(total, dtype)
        return E.Where(ld.mask, value, E.Full(shape, ld.other, dtype))
    return _spread(total, shape, dtype)


def _spread(total: E.Var, shape: E.Shape, dtype: str) -> E.Expr:
    """The total in every lane of a value of ``shape`` (lanes the value left undefined included)."""
    value: E.Expr = total if total.dtype == dtype else E.Cast(total, dtype)
    return E.Bin("+", E.Full(shape, 0, dtype), value) if shape else value


class _Run:
    """The statements run on one program, the buffer's elements as multisets (module docstring)."""

    def __init__(self, kernel: N.Kernel, area: str) -> None:
        self.kernel = kernel
        self.area = area
        self.size: int | None = None
        self.base: str | None = None
        self.mem: dict[int, Part] = {}
        self.env: dict[str, Any] = {}  # concrete values (numpy arrays, Python numbers)
        self.sym: dict[str, Any] = {}  # loads of the buffer and their combinations: multisets
        self.unknown: dict[str, E.Expr] = {}  # lets whose values the run cannot know: their expressions
        self.starts: list[N.Store] = []  # the stores that filled the whole buffer, in order
        self.reads: dict[int, bool] = {}  # id(load of the buffer): whole totals at every run so far
        self.read_start: dict[int, Total] = {}  # id(load) -> the total it reads
        self.row: dict[int, int] = {}  # id(store that started a tile of [R, C] lanes) -> C
        # id(load of the buffer) -> the rows' (axis 1) or the columns' (axis 0) totals it reads (lane (i, ..)
        # row i's, lane (.., j) column j's, at every run so far): (which, axis), or None
        self.row_reads: dict[int, tuple[Total, int] | None] = {}
        # (id(statement), a part of one of its expressions) -> (a whole reduction at every run, which)
        self.uses: dict[tuple[int, E.Expr], tuple[bool, Total | None]] = {}
        self.steps = 0
        self.top = {id(s) for s in kernel.body}  # a start at the top level: its total is in scope after it

    # ------------------------------------------------------------ statements
    def block(self, body: list[N.Stmt]) -> None:
        for s in body:
            self.spend(1)
            self.stmt(s)

    def spend(self, steps: int) -> None:
        self.steps += steps
        if self.steps > MAX_STEPS:
            raise NotTree("too many steps to follow while translating")

    def stmt(self, s: N.Stmt) -> None:
        if isinstance(s, N.Store) and s.base == self.area:
            self.store(s)
        elif isinstance(s, N.Load) and s.base == self.area:
            self.load(s)
        elif isinstance(s, (N.Atomic, N.TmaLoad, N.TmaStore)) and _touches(s, self.area):
            raise NotTree("an atomic or descriptor access of the buffer")
        elif not self.starts and not any(_touches(x, self.area) for x in N.walk([s])):
            self.quiet(s)  # before the buffer's first store: what can be known of the values
        elif isinstance(s, (N.Let, N.Assign)):
            self.let(s, s.var.name, s.value)
        elif isinstance(s, N.For):
            if not any(_touches(x, self.area) for x in N.walk(s.body)):
                self.forget(s)
                return
            start, stop, step = (self.scalar(x) for x in (s.start, s.stop, s.step))
            if step <= 0:
                raise NotTree("a loop step that is not positive")
            for i in range(start, stop, step):
                self.env[s.var.name] = i
                self.block(s.body)
            self.env.pop(s.var.name, None)
        elif isinstance(s, N.While):
            if not any(_touches(x, self.area) for x in N.walk(s.body)):
                self.forget(s)
                return
            while bool(self.scalar(s.cond)):
                self.block(s.body)
        elif isinstance(s, N.If):
            if not any(_touches(x, self.area) for x in N.walk([s])):
                self.forget(s)
                return
            self.block(s.then if bool(self.scalar(s.cond)) else s.orelse)
        elif isinstance(s, N.Barrier):
            return
        elif isinstance(s, (N.Load, N.TmaLoad, N.Dot, N.Atomic)):
            self.observe_all(s)
            self.forget(s)
        elif isinstance(s, (N.Store, N.TmaStore, N.Print, N.Assert)):
            self.observe_all(s)
        else:
            raise NotTree(f"a {type(s).__name__} statement")

    def observe_all(self, s: N.Stmt) -> None:
        for e in N.exprs_of(s):
            self.observe(s, e)

    def observe(self, s: N.Stmt, e: E.Expr) -> None:
        """The largest parts of ``e`` that combine the buffer's elements: whether each is a whole
        reduction (at every run of ``s``), to be read as the total."""
        if not any(v.name in self.sym for v in E.free_vars(e)):
            return
        try:
            got = self.multisets(e)
        except NotTree:
            for c in e.children():
                self.observe(s, c)
            return
        whole, start = self.wholeness(got)
        prev = self.uses.get((id(s), e))
        self.uses[(id(s), e)] = (whole and (prev is None or prev == (True, start)), start)

    def wholeness(self, got: Any) -> tuple[bool, Total | None]:
        """Whether every defined lane of ``got`` is the whole reduction of one start by one operator
        (and which)."""
        items = list(got.reshape(-1)) if isinstance(got, np.ndarray) else [got]
        active = [m for m in items if m is not None]
        which = {(g, m.op) for m in active for g, _ in m.counts}
        if not active or len(which) != 1 or not all(self.is_total(m) for m in active):
            return False, None
        start, op = which.pop()
        assert op is not None
        return True, (id(self.starts[start]), op)

    def quiet(self, s: N.Stmt) -> None:
        """A statement before the first store: lets known exactly are kept (lanes, constants)."""
        if isinstance(s, (N.Let, N.Assign)):
            try:
                self.env[s.var.name] = self.value(s.value)
            except NotTree:
                self.env.pop(s.var.name, None)
        else:
            self.forget(s)

    def forget(self, s: N.Stmt) -> None:
        """What ``s`` defines or assigns is no longer known."""
        for x in N.walk([s]):
            for v in [*N.defines(x), *([x.var] if isinstance(x, N.Assign) else [])]:
                self.env.pop(v.name, None)
                self.sym.pop(v.name, None)

    def let(self, s: N.Stmt, name: str, value: E.Expr) -> None:
        """``name = value``: its multisets where it combines the buffer's elements, else its value
        where known (computed before ``name`` is re-bound: ``h = h / 2``)."""
        sym, known = None, None
        if any(v.name in self.sym for v in E.free_vars(value)):
            try:
                sym = self.multisets(value)
            except NotTree:
                self.observe(s, value)
        else:
            with contextlib.suppress(NotTree):  # unknown: a later use that needs it ends the proof
                known = (self.value(value),)
        self.env.pop(name, None)
        self.sym.pop(name, None)
        self.unknown.pop(name, None)
        if sym is None and known is None and isinstance(s, N.Let):
            self.unknown[name] = value
        if sym is not None:
            self.sym[name] = sym
        elif known is not None:
            self.env[name] = known[0]

    def store(self, s: N.Store) -> None:
        lanes = self.positions(s.index)
        self.spend(lanes.size)
        if not self.starts or (s.mask is None and s.value.shape and self.whole(lanes)):
            self.start(s, lanes)
            return
        active = self.mask(s.mask, lanes.shape)
        values = self.multisets(s.value)
        for k in np.flatnonzero(active.reshape(-1)):
            p = int(lanes.reshape(-1)[k])
            v = values if not isinstance(values, np.ndarray) else values.reshape(-1)[k]
            if v is None or not 0 <= p < (self.size or 0):
                raise NotTree("an undefined value stored, or a position outside the buffer")
            self.mem[p] = v

    def start(self, s: N.Store, lanes: np.ndarray) -> None:
        """The store that fills the whole buffer, one lane an element: its positions start afresh."""
        if s.mask is not None or not s.value.shape or not self.whole(lanes) or id(s) not in self.top:
            raise NotTree("the first store does not fill the whole buffer, one lane an element, at the top level")
        if self.size is not None and self.size != lanes.size:
            raise NotTree("a later store fills another extent")
        if any(v.name in self.sym for v in E.free_vars(s.value)):
            raise NotTree("the stored tile is read from the buffer")
        self.size = int(lanes.size)
        k = len(self.starts)
        self.starts.append(s)
        if lanes.ndim == 2 and 1 < lanes.shape[-1] < lanes.size:
            self.row[id(s)] = int(lanes.shape[-1])
        self.mem = {p: Part(None, Counter({(k, p): 1})) for p in range(self.size)}

    def whole(self, lanes: np.ndarray) -> bool:
        """Whether the lanes reach every position once, in row-major order (a ``[1, L]`` tile of a
        block narrowed to one row, lift/narrow.py, as well as ``[L]``)."""
        return lanes.ndim >= 1 and bool(np.array_equal(lanes.reshape(-1), np.arange(lanes.size)))

    def load(self, s: N.Load) -> None:
        if not self.starts:
            raise NotTree("a load before the first store")
        lanes = self.positions(s.index)
        self.spend(lanes.size)
        active = self.may_read(s.mask, lanes.shape)
        out = np.empty(lanes.shape, dtype=object)
        for k in range(lanes.size):
            p = int(lanes.reshape(-1)[k])
            if not active.reshape(-1)[k]:
                out.reshape(-1)[k] = None
            elif p not in self.mem:
                raise NotTree("a position outside the buffer")
            else:
                out.reshape(-1)[k] = self.mem[p]
        whole, start = self.wholeness(out)
        if whole and self.read_start.setdefault(id(s), start) != start:  # type: ignore[arg-type]
            whole = False
        self.reads[id(s)] = self.reads.get(id(s), True) and whole
        rows = None if whole else self.rows_of(out)
        if id(s) not in self.row_reads:
            self.row_reads[id(s)] = rows
        elif self.row_reads[id(s)] != rows:
            self.row_reads[id(s)] = None  # (rows at one run, another reading at another)
        rows = self.row_reads[id(s)]
        self.env.pop(s.var.name, None)
        if s.mask is not None and s.mask.name in self.unknown:
            if not whole and rows is None:  # which lanes read is not known: the value only stands as the total
                raise NotTree("a load under a mask the run cannot know that is not the total")
            return
        self.sym[s.var.name] = out if lanes.shape else out.reshape(-1)[0]

    def rows_of(self, got: np.ndarray) -> tuple[Total, int] | None:
        """Where lane ``(i, ..)`` of every active lane of ``got`` holds the whole reduction of row ``i``
        of a tile of ``[R, C]`` lanes (by one start and one operator): (which, 1); where lane ``(.., j)``
        holds column ``j``'s: (which, 0); else None."""
        if not got.shape:
            return None
        which = {(g, m.op) for m in got.reshape(-1) if m is not None for g, _ in m.counts}
        if len(which) != 1:
            return None
        k, op = which.pop()
        width = self.row.get(id(self.starts[k]))
        if op is None or width is None:
            return None
        assert self.size is not None
        height = self.size // width

        def each(lanes: Any, want: set[int]) -> bool:
            for m in lanes.reshape(-1):
                if m is None:
                    continue
                if {p for _, p in m.counts} != want or (op == "+" and any(c != 1 for c in m.counts.values())):
                    return False
            return True

        which = (id(self.starts[k]), op)
        if got.shape[0] == height and all(each(got[i], set(range(i * width, (i + 1) * width))) for i in range(height)):
            return which, 1
        if got.shape[-1] == width and all(each(got[..., j], set(range(j, self.size, width))) for j in range(width)):
            return which, 0
        return None

    def is_total(self, m: Part) -> bool:
        """Every position of the stored tile, each once for a sum (max and min repeat harmlessly)."""
        assert self.size is not None
        if m.op is None or {p for _, p in m.counts} != set(range(self.size)):
            return False
        return m.op != "+" or all(c == 1 for c in m.counts.values())

    # ------------------------------------------------------------ values
    def positions(self, index: tuple[E.Expr, ...]) -> np.ndarray:
        """The buffer positions an access reaches, one per lane (its index less the buffer's base)."""
        if len(index) != 1:
            raise NotTree("a buffer of several dimensions")
        names = [v.name for v in E.free_vars(index[0]) if v.name not in self.env and v.name not in self.sym]
        terms = E.linear(index[0], names) if names else ({}, index[0])
        if terms is None:
            raise NotTree("an index that is not the base plus known terms")
        coefs, rest = terms
        if len(coefs) > 1 or any(c != 1 for c in coefs.values()):
            raise NotTree("an index with unknown terms")
        if coefs:
            (base,) = coefs
            if self.base is None:
                self.base = base
            if base != self.base:
                raise NotTree("an index at another base")
        elif self.base is not None:
            raise NotTree("an index without the buffer's base")
        return np.asarray(self.value(rest), dtype=np.int64)

    def may_read(self, mask: E.Var | None, shape: tuple[int, ...]) -> np.ndarray:
        """The lanes a load's mask may let read: where it is not known (a term of the program's
        position, ``t == 0 && r # q < M``), the conjuncts that are known hold (every lane where none
        is).  Such a load is read as the total only where every lane it may let read holds the
        total, so the lanes it does let read at run time do; else the proof ends (:meth:`load`)."""
        if mask is None or mask.name not in self.unknown:
            return self.mask(mask, shape)
        active = np.ones(shape, dtype=bool)
        for term in E.conjuncts(self.unknown[mask.name]):
            try:
                got = np.asarray(self.value(term), dtype=bool)
            except NotTree:
                continue
            active = active & np.broadcast_to(got, shape)
        return active

    def mask(self, mask: E.Var | None, shape: tuple[int, ...]) -> np.ndarray:
        if mask is None:
            return np.ones(shape, dtype=bool)
        got = np.asarray(self.value(mask), dtype=bool)
        return np.broadcast_to(got, shape) if got.shape != shape else got

    def scalar(self, e: E.Expr) -> int:
        v = self.value(e)
        if isinstance(v, np.ndarray):
            if v.shape:
                raise NotTree("a loop bound or condition that differs between lanes")
            v = v.item()
        return int(v)

    def value(self, e: E.Expr) -> Any:
        """``e`` computed exactly (numpy), or NotTree."""
        return evaluate(e, self.env)

    def multisets(self, e: E.Expr) -> Any:
        """``e`` as multisets: loads of the buffer combined by its one operator."""
        if isinstance(e, E.Var):
            if e.name not in self.sym:
                raise NotTree("a value stored that is not read from the buffer")
            return self.sym[e.name]
        if isinstance(e, E.Cast) and e.type == self.kernel_type():
            return self.multisets(e.value)
        if isinstance(e, E.Bin) and e.op in FOLDS:
            return _combine(self.multisets(e.lhs), self.multisets(e.rhs), e.op)
        raise NotTree(f"a {type(e).__name__} of the buffer's elements")

    def kernel_type(self) -> str:
        return next(a.dtype for a in self.kernel.args if isinstance(a, N.Scratch) and a.name == self.area)


def lane_sources(index: E.Expr, counter: str, k: int, axis: int, n: int) -> list[int]:
    """The lane each lane of ``axis`` (``n`` of them) reads at step ``k`` of a loop over ``counter``
    (a shuffle's or gather's index): the same along every other axis, in range; NotTree otherwise."""
    v = np.asarray(evaluate(index, {counter: k}))
    if v.ndim <= axis or v.shape[axis] != n:
        raise NotTree("an index that is not one per lane")
    moved = np.moveaxis(v, axis, -1).reshape(-1, n)
    if not (moved == moved[0]).all() or (moved[0] < 0).any() or (moved[0] >= n).any():
        raise NotTree("an index that differs between rows or leaves the axis")
    return [int(x) for x in moved[0]]


def extent_along(e: E.Expr, axis: int, rank: int) -> Any:
    """``e``'s extent along ``axis`` of a tile of ``rank`` it broadcasts to (1 where it does not vary)."""
    shape = (1,) * (rank - len(e.shape)) + tuple(e.shape)
    return shape[axis]


def evaluate(e: E.Expr, env: dict[str, Any]) -> Any:
    """``e`` computed exactly (numpy arrays of integers and booleans, Python numbers) with the
    variables of ``env``; NotTree where it cannot be (a float, an unknown variable, a division by zero)."""
    if isinstance(e, E.Const):
        return e.value
    if isinstance(e, E.Var):
        if e.name not in env:
            raise NotTree(f"'{e.name}' is not known")
        return env[e.name]
    if isinstance(e, E.Arange):
        if not isinstance(e.n, int):
            raise NotTree("a lane axis fixed at launch")
        return np.arange(e.n, dtype=np.int64)
    if isinstance(e, E.Lift):
        v = np.asarray(evaluate(e.value, env))
        if list(e.dims) != sorted(e.dims) or v.ndim != len(e.dims):
            raise NotTree("a tile lifted out of its axes' order")
        return v.reshape(tuple(n if isinstance(n, int) else -1 for n in e.shape))
    if isinstance(e, E.Bin):
        return apply_op(
            e.op, evaluate(e.lhs, env), evaluate(e.rhs, env), E.is_int(e.lhs.dtype) and E.is_int(e.rhs.dtype)
        )
    if isinstance(e, E.Un):
        v = evaluate(e.value, env)
        return {"-": lambda: -np.asarray(v), "~": lambda: ~np.asarray(v), "!": lambda: ~np.asarray(v, bool)}[e.op]()
    if isinstance(e, E.Cast):
        v = evaluate(e.value, env)
        if e.type == "i1":
            return np.asarray(v) != 0
        if E.is_int(e.type):
            return np.asarray(v).astype(np.int64)
        raise NotTree("a conversion to a float")
    if isinstance(e, E.Where):
        return np.where(evaluate(e.cond, env), evaluate(e.then, env), evaluate(e.other, env))
    if isinstance(e, E.CDiv):
        a, b = np.asarray(evaluate(e.lhs, env)), np.asarray(evaluate(e.rhs, env))
        return -(-a // b)
    if isinstance(e, E.Full) and isinstance(e.value, (int, bool)) and all(isinstance(d, int) for d in e.dims):
        return np.full(tuple(int(d) for d in e.dims), e.value)
    raise NotTree(f"a {type(e).__name__} value")


def _combine(a: Any, b: Any, op: str) -> Any:
    """Elementwise ``op`` of two parts (or arrays of them, one per lane); None where undefined."""
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        return None if a is None or b is None else a.join(b, op)
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    xa, xb = _lanes(a, shape), _lanes(b, shape)
    out = np.empty(shape, dtype=object)
    for k in range(out.size):
        x, y = xa.reshape(-1)[k], xb.reshape(-1)[k]
        out.reshape(-1)[k] = None if x is None or y is None else x.join(y, op)
    return out


def _lanes(x: Any, shape: tuple[int, ...]) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(np.broadcast_to(x, shape))
    out = np.empty(shape, dtype=object)
    for k in range(out.size):
        out.reshape(-1)[k] = x
    return out


_INT: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)),  # C division (truncates)
    "%": lambda a, b: a - b * (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))),
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "^": lambda a, b: a ^ b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "min": np.minimum,
    "max": np.maximum,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def apply_op(op: str, a: Any, b: Any, integers: bool) -> Any:
    if not integers and op not in E.COMPARE and op not in E.LOGIC:
        raise NotTree("arithmetic of floats")
    if op in ("/", "%") and np.any(np.asarray(b) == 0):
        raise NotTree("a division by zero")
    out = _INT[op](np.asarray(a), np.asarray(b))
    return out.item() if isinstance(out, np.ndarray) and not out.shape else out


# ------------------------------------------------------------------ clean-up
def _touches(s: N.Stmt, area: str) -> bool:
    if isinstance(s, (N.Load, N.Store, N.Atomic)):
        return s.base == area
    if isinstance(s, (N.TmaLoad, N.TmaStore)):
        return s.fallback.base == area
    return False


def _without_area(body: list[N.Stmt], area: str) -> list[N.Stmt]:
    """``body`` without the buffer's stores, then without its loads nothing reads (repeated)."""
    body = N.without(body, lambda s: isinstance(s, N.Store) and s.base == area)
    while True:
        read = {v.name for s in N.walk(body) for e in N.exprs_of(s) for v in E.free_vars(e)}
        kept = N.without(body, lambda s, read=read: isinstance(s, N.Load) and s.base == area and s.var.name not in read)
        if len(N.walk(kept)) == len(N.walk(body)):
            return kept
        body = kept


def _without_idle_loops(body: list[N.Stmt]) -> list[N.Stmt]:
    """Loops (and ifs) left with nothing but lets, assignments and barriers whose names nothing
    after them reads: the tree's steps, their work gone (the proof ran them: they end)."""
    out: list[N.Stmt] = []  # (the statements after ``s``, cleaned: built from the end, so that a tree's
    # loop whose counter only the next tree's loop read goes once that loop has gone)
    for s in reversed(body):
        if isinstance(s, (N.For, N.While, N.If)):
            inner = [*(s.then + s.orelse)] if isinstance(s, N.If) else s.body
            inner = _without_idle_loops(inner)
            idle = all(isinstance(x, (N.Let, N.Assign, N.Barrier)) for x in N.walk(inner))
            later = {v.name for x in N.walk(out) for e in N.exprs_of(x) for v in E.free_vars(e)}
            assigned = {x.var.name for x in N.walk(inner) if isinstance(x, (N.Let, N.Assign))}
            if isinstance(s, N.While):
                assigned.add(s.cond.name)
            if idle and not (assigned & later):
                continue
            if isinstance(s, N.If):
                s = dataclasses.replace(s, then=_without_idle_loops(s.then), orelse=_without_idle_loops(s.orelse))
            else:
                s = dataclasses.replace(s, body=inner)
        out.insert(0, s)
    return out
