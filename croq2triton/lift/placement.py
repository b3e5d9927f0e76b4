"""Where a kernel's buffers live, decided before lifting (LANGUAGE.md 7.5): in registers, or in a
per-program scratch area of global memory.

A buffer is a register tile of the program (lift/buffers.py) when every element access is one of
the two forms a tile expresses: each thread's own element (``s.at(i, j)`` under ``parallel {i,
j}``: the indices are the thread levels' variables as they stand, one each, over the buffer's
extents), or a read of one element the same for the whole block (``g.at(n - 1)``).  A buffer
that a thread writes at any other position (``out.at(x, q)`` with ``x`` a loop's index,
``s.at(t + 1)``), reads at another thread's position (``s.at(15 - t)``), or that is the target
of an atomic (``counts.at(bin)``) has no such tile: Triton cannot gather from or scatter into a
register tile.  Those buffers live in scratch memory, addressed element by element
(lift/scratch.py), and whole-tile work on them (copies in and out) loads and stores the tile.

The analysis reads the AST with the levels the lifting gives each parallel: the names that vary
between threads are the thread levels' variables (and ``apply``'s) and every local computed
from one of them, to a fixed point.  Where the lanes of an enclosing thread level are nested
further (a warp's statements beside its threads', lift/kernel.py ``lanes_over``) the warp's own
writes have no tile form either.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from ..frontend import ast as A
from ..sema.consteval import const_int
from .collapse import has_roles
from .maps import map_counters
from .terms import element_base, unparen

Extent = Callable[[A.Expr], int | None]  # a constant extent of the source, None where not known


@dataclass
class _Lanes:
    """The thread-level variables of the lane scope an access is in, with their extents, and
    how many lane axes the scope's tiles have (more than its variables where lanes nest)."""

    names: list[tuple[str, int | None]] = field(default_factory=list)
    rank: int = 0
    # the thread levels these lanes are the threads of (outermost first; a map's or an apply's lanes
    # keep the enclosing threads'), and the rank of their tiles
    threads: tuple[A.PBy, ...] = ()
    thread_rank: int = 0


@dataclass(frozen=True, eq=False)
class OwnLanes:
    """The threads whose copies of a ``local`` buffer are written apart (LANGUAGE.md 7.5: each
    thread has its own): the thread levels of a scope that writes it, deeper than its declaration
    (``local f32 [4] v;`` at block level, written under ``parallel t by 32 : thread``), and the rank
    of their lanes' tiles."""

    levels: tuple[A.PBy, ...]
    rank: int


@dataclass
class Placed:
    """What the placement decides: the buffers in scratch memory, and the ``local`` buffers that
    each thread of deeper levels than their declaration's writes (their scratch copies are per
    thread of those levels; lift/scratch.py)."""

    scratch: set[str]
    own_lanes: dict[str, list[OwnLanes]]


def scratch_buffers(top: A.Parallel, level_of: dict[int, str], extent: Extent, units: Collection[int] = ()) -> Placed:
    """The names of the buffers of ``top`` (declared in it, or results of copies into fresh
    memory) that live in scratch memory, and the threads that own copies of its ``local`` buffers;
    ``level_of`` maps each ``PBy`` to its level after the lifting's mapping ("block" or "thread"),
    ``units`` holds the ids of the warp and warpgroup levels of one lane per unit."""
    p = _Placement(top, level_of, extent, units)
    return Placed(p.run(), p.own_lanes())


def is_unit_scope(levels: list[A.PBy], body: list[A.Stmt], units: Collection[int]) -> bool:
    """Are ``levels`` (with ``units`` as lift/kernel.py ``unit_threads`` holds them) units that each
    run MMAs on their own tiles (lifted as one, lift/units.py)?"""
    return (
        all(id(b) in units for b in levels)
        and any(const_int(x) != 1 for b in levels for x in b.bound)
        and any(isinstance(n, A.MmaOp) for x in body for n in x.walk())
    )


class _Placement:
    def __init__(self, top: A.Parallel, level_of: dict[int, str], extent: Extent, units: Collection[int] = ()) -> None:
        self.top = top
        self.units = units
        self.level_of = level_of
        self.extent = extent
        self.lane_names: set[str] = set()
        self.shapes: dict[str, tuple[int | None, ...]] = {}  # declared buffers' extents
        self.bools: set[str] = set()  # declared buffers of bool
        self.accesses: list[tuple[A.At, bool, _Lanes]] = []  # (access, is a write, lanes there)
        self.out: set[str] = set()
        self.buffers: set[str] = set()  # the names of its buffers (declared, or copied into)
        self.reshaped: dict[str, str] = {}  # ``v = b.span_as([..])``, ``b.subspan(..)``: what ``v`` views
        # buffers read or written by element through named views (span_as, parts), or viewed with
        # span_as in extents not powers of two
        self.odd_shapes: set[str] = set()
        self.lane_parts: set[str] = set()  # buffers whose parts per-thread copies move (lift/lanecopies.py)
        self.lane_copies: list[tuple[A.DmaStmt, set[str]]] = []  # copies inside thread lanes, their lanes
        self.locals: dict[str, tuple[A.PBy, ...]] = {}  # local buffers, the threads of their declaration
        self.writes: list[tuple[str, _Lanes]] = []  # a buffer written (by element, by a copy), the lanes there

    def run(self) -> set[str]:
        top_lanes = [b for b in self.top.levels if self.level_of.get(id(b)) == "thread"]
        self.visit(self.top.body, self.enter(top_lanes, [self.top.body], _Lanes()))
        varying = self.varying()
        derived = varying - self.lane_names  # locals computed from a thread index (``int r = p # t;``)
        widened = self.own_lanes()
        for n, threads in self.lane_copies:
            self.lane_copy(n, threads | derived)
        for at, write, lanes in self.accesses:
            slot = unparen(at.base)
            while isinstance(slot, A.Index):  # ``buf[s].at(..)``: an element of one buffer of an array
                slot = unparen(slot.base)
            if slot is not unparen(at.base) and isinstance(slot, A.Name):
                self.odd_shapes.add(slot.name)  # its address in the array's area
                continue
            name = element_base(at.base)
            if name in self.reshaped:  # an element of a view of a buffer: an address in the buffer's area
                seen = set()
                while name in self.reshaped and name not in seen:  # a view of a view: the buffer under both
                    seen.add(name)
                    name = self.reshaped[name]
                self.odd_shapes.add(name)
                continue
            if name is None or name in self.out:
                continue
            one_for_all = name in widened and not write and self.one_for_all(at, lanes, name, varying)
            if one_for_all or not self.in_registers(at, name, write, lanes, varying):
                self.out.add(name)
        # a span_as view of a tile padded to powers of two: its elements have other positions
        # than the buffer's tile gives them, so the buffer is addressed in scratch memory
        return self.out | ((self.odd_shapes | self.lane_parts) & self.buffers)

    def own_lanes(self) -> dict[str, list[OwnLanes]]:
        """The ``local`` buffers written under thread levels deeper than their declaration, with
        the threads of each such write (their copies differ between those threads)."""
        out: dict[str, list[OwnLanes]] = {}
        for name, lanes in self.writes:
            seen: set[str] = set()
            while name in self.reshaped and name not in seen:  # a view of it: the buffer under it
                seen.add(name)
                name = self.reshaped[name]
            if name in self.locals and self.deeper(lanes.threads, self.locals[name]):
                known = out.setdefault(name, [])
                if not any(_same(o.levels, lanes.threads) for o in known):
                    known.append(OwnLanes(lanes.threads, lanes.thread_rank))
        return out

    def one_for_all(self, at: A.At, lanes: _Lanes, name: str, varying: set[str]) -> bool:
        """Is ``at`` a read of one element for all the lanes of threads that write their copies of
        the local buffer ``name`` apart?  Each thread reads its own copy's, which the others' writes
        do not reach (a tile would give every lane the writer's)."""
        return self.deeper(lanes.threads, self.locals[name]) and not any(
            _names(unparen(i)) & varying for i in at.indices
        )

    def deeper(self, threads: tuple[A.PBy, ...], declared: tuple[A.PBy, ...]) -> bool:
        """Are ``threads`` more threads than ``declared`` (levels inside them of more than one)?"""
        extra = threads[len(declared) :] if _same(threads[: len(declared)], declared) else threads
        return any(self.extent(x) != 1 for b in extra for x in b.bound)

    def lane_copy(self, n: A.DmaStmt, per_thread: set[str]) -> None:
        """A copy inside thread lanes whose view names a value of the thread (``per_thread``):
        into a fresh local buffer, each thread's own copy of it (lift/lanecopies.py); a thread's
        part of a buffer is addressed in scratch memory."""
        local = isinstance(unparen(n.dst), A.Name) and unparen(n.dst).name == "local"  # type: ignore[attr-defined]
        if local and n.dst_storage and n.result and _names(n.src) & per_thread:
            self.out.add(n.result)
        sides = [n.src] + ([] if n.dst_storage else [n.dst])
        if any(_names(x) & per_thread for x in sides):
            for side in sides:  # a thread's whole local buffer, its window copied in or out
                whole = element_base(side)
                if whole is not None and whole in self.locals:
                    self.out.add(whole)
        for side in sides:
            view = unparen(side)
            name = element_base(view.base) if isinstance(view, A.View) else None
            if name is not None and _names(view) & per_thread:
                self.lane_parts.add(name)

    def span_as(self, n: A.View) -> None:
        """``b.span_as([..])`` (``b.data.span_as``) of a buffer whose new extents are not all
        powers of two (the old ones are then not either: their product is the same)."""
        name = element_base(_slot_array(n.base))
        if name is None or not n.ops or n.ops[0].kind != "span_as":
            return
        if isinstance(unparen(n.base), A.Index):  # ``s[1].span_as(..)``: a run of the array's area
            self.odd_shapes.add(name)
            return
        op = n.ops[0]
        items = [y for x in op.args for y in (x.items if isinstance(x, A.MdspanLit) else [x])]
        extents = [self.extent(x) for x in items]
        if any(e is None or e < 1 or e & (e - 1) for e in extents):
            self.odd_shapes.add(name)

    # ------------------------------------------------------------ the walk
    def enter(self, levels: list[A.PBy], body: list[A.Stmt], outer: _Lanes) -> _Lanes:
        """The lanes inside thread ``levels`` (as lift/kernel.py ``lanes_over`` makes them)."""
        pairs: list[tuple[str, int | None]] = []
        for b in levels:
            names = list(b.vars) if b.vars is not None else [b.name]
            for n, bound in zip(names, b.bound, strict=False):
                pairs.append((n or "", self.extent(bound)))
        self.lane_names.update(n for n, _ in pairs if n)
        if not pairs:
            return outer
        units = is_unit_scope(levels, body, self.units)  # lifted as one (lift/units.py): no threads' lanes
        if outer.rank and any(n != 1 for _, n in outer.names):  # nested in lanes: their axes follow
            threads = outer.threads if units else outer.threads + tuple(levels)
            return _Lanes(outer.names + pairs, outer.rank, threads, outer.thread_rank)
        inner = nested_lane_axes(body, self.level_of) if any(n != 1 for _, n in pairs) else 0
        if units:
            return _Lanes(pairs, len(pairs) + inner, outer.threads, outer.thread_rank)
        return _Lanes(pairs, len(pairs) + inner, tuple(levels), len(pairs) + inner)

    def thread_level(self, p: A.Parallel) -> bool:
        return _thread_level(p, self.level_of)

    def visit(self, n: A.Node, lanes: _Lanes) -> None:
        if isinstance(n, A.Parallel) and self.thread_level(n):
            self.visit(n.body, self.enter(n.levels, [n.body], lanes))
            return
        if isinstance(n, A.Foreach) and not (lanes.rank and any(e != 1 for _, e in lanes.names)):
            names = map_counters(n)
            if names is not None:  # a map over elements (lift/maps.py): its counters are lanes
                self.lane_names.update(names)
                self.visit(n.body, _Lanes([(v, None) for v in names], len(names), lanes.threads, lanes.thread_rank))
                return
        if isinstance(n, A.Apply):  # the elements of a fragment: lanes of extents not known here
            inner = _Lanes([(v, None) for v in n.vars], len(n.vars), lanes.threads, lanes.thread_rank)
            self.lane_names.update(n.vars)
            self.visit(n.body, inner)
            return
        if isinstance(n, A.SpannedDecl):
            self.buffers.update(d.name for d in n.items)
            if n.storage == "local":
                self.locals.update((d.name, lanes.threads) for d in n.items)
        if isinstance(n, A.DmaStmt) and n.dst_storage and n.result:
            self.buffers.add(n.result)
            if isinstance(unparen(n.dst), A.Name) and unparen(n.dst).name == "local":  # type: ignore[attr-defined]
                self.locals[n.result] = lanes.threads
        if isinstance(n, A.DmaStmt) and not n.dst_storage:
            name = _view_base(n.dst)
            if name is not None:
                self.writes.append((name, lanes))
        if isinstance(n, A.DmaStmt) and n.op == "pad" and (n.dst_storage or _view_base(n.dst) in self.buffers):
            name = _view_base(n.src)  # a buffer padded into another is read by element (lift/copies.py)
            if name is not None:
                self.odd_shapes.add(name)
        if isinstance(n, A.View):
            self.span_as(n)
        if isinstance(n, A.Assign) and isinstance(unparen(n.target), A.Name) and isinstance(unparen(n.value), A.View):
            view = unparen(n.value)
            base = element_base(_slot_array(view.base))  # type: ignore[attr-defined]
            if base is not None and view.ops:  # type: ignore[attr-defined]
                self.reshaped[unparen(n.target).name] = base  # type: ignore[attr-defined]
        if isinstance(n, A.Assign) and isinstance(unparen(n.target), A.Name) and isinstance(unparen(n.value), A.Index):
            base = element_base(_slot_array(n.value))  # ``v = s[1][0]``: one buffer of an array under a name
            if base is not None:
                self.reshaped[unparen(n.target).name] = base  # type: ignore[attr-defined]
        if isinstance(n, A.SpannedDecl) and n.shape is not None:
            dims = tuple(self.extent(x) for x in n.shape)
            for d in n.items:
                self.shapes[d.name] = dims
                if n.elem == "bool":
                    self.bools.add(d.name)
        if isinstance(n, A.Call) and n.kind == "atomic" and n.args and isinstance(unparen(n.args[0]), A.At):
            name = element_base(unparen(n.args[0]).base)  # type: ignore[attr-defined]
            if name is not None:
                self.out.add(name)
                self.writes.append((name, lanes))
        if isinstance(n, A.Assign) and isinstance(unparen(n.target), A.At):
            name = element_base(_slot_array(unparen(n.target).base))  # type: ignore[attr-defined]
            if name is not None:
                self.writes.append((name, lanes))
            self.accesses.append((unparen(n.target), True, lanes))  # type: ignore[arg-type]
            if n.op != "=":
                self.accesses.append((unparen(n.target), False, lanes))  # type: ignore[arg-type]
            self.visit(n.value, lanes)
            for i in unparen(n.target).indices:  # type: ignore[attr-defined]
                self.visit(i, lanes)
            return
        if isinstance(n, A.At):
            self.accesses.append((n, False, lanes))
        if isinstance(n, A.DmaStmt) and any(e != 1 for _, e in lanes.names):
            self.lane_copies.append((n, {v for v, _ in lanes.names if v}))  # decided in run()
        for c in n.children():
            self.visit(c, lanes)

    # ------------------------------------------------------------ the forms a tile expresses
    def in_registers(self, at: A.At, name: str, write: bool, lanes: _Lanes, varying: set[str]) -> bool:
        indices = [unparen(i) for i in at.indices]
        if not write and not any(_names(i) & varying for i in indices):
            return name not in self.bools  # one element the same for the whole block (a sum of the tile)
        own = [i.name for i in indices if isinstance(i, A.Name) and i.name in dict(lanes.names)]
        if len(own) != len(indices) or len(set(own)) != len(own):
            return False
        extents = dict(lanes.names)
        if write and len(own) != lanes.rank:  # written by fewer lanes than the tile has axes
            return False
        shape = self.shapes.get(name)
        if shape is not None and len(shape) == len(own):
            for v, n in zip(own, shape, strict=True):
                if n is not None and extents[v] is not None and n != extents[v]:
                    return False
        return True

    def varying(self) -> set[str]:
        """The names whose values differ between the threads of a block: a local is, where its
        value or the condition of an ``if`` around its assignment names one that is."""
        varying = set(self.lane_names)
        defs: list[tuple[str, set[str]]] = []  # a local and the names its value depends on
        _definitions(self.top.body, set(), defs)
        changed = True
        while changed:
            changed = False
            for name, uses in defs:
                if name not in varying and uses & varying:
                    varying.add(name)
                    changed = True
        return varying


def varying_names(top: A.Parallel, level_of: dict[int, str], extent: Extent) -> set[str]:
    """The names of ``top`` whose values may differ between the threads of a block (see
    ``_Placement.varying``)."""
    p = _Placement(top, level_of, extent)
    p.run()
    return p.varying()


def nested_lane_axes(body: list[A.Stmt], level_of: dict[int, str]) -> int:
    """How many lane axes the thread levels nested inside ``body`` add, at most (a warp's
    ``parallel t by 32`` inside ``parallel w by 4 : group``; warp roles collapse and add none)."""
    most = 0
    stack: list[A.Node] = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, A.Parallel) and not has_roles(n.body):
            if _thread_level(n, level_of):
                count = sum(len(b.vars) if b.vars is not None else 1 for b in n.levels)
                most = max(most, count + nested_lane_axes([n.body], level_of))
            continue
        stack.extend(n.children())
    return most


def _same(a: tuple[A.PBy, ...], b: tuple[A.PBy, ...]) -> bool:
    """The same levels (the same nodes, not levels spelt alike)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _thread_level(p: A.Parallel, level_of: dict[int, str]) -> bool:
    return all(level_of.get(id(b)) == "thread" for b in p.levels)


def _names(e: A.Node) -> set[str]:
    return {n.name for n in e.walk() if isinstance(n, A.Name)}


def _definitions(n: A.Node, conds: set[str], out: list[tuple[str, set[str]]]) -> None:
    if isinstance(n, A.If):
        inner = conds | _names(n.cond)
        for branch in (n.then, n.other):
            if branch is not None:
                _definitions(branch, inner, out)
        return
    if isinstance(n, A.ScalarDecl):
        for d in n.items:
            uses = set(conds)
            for x in (d.init, d.fill):
                if x is not None:
                    uses |= _names(x)
            out.append((d.name, uses))
    elif isinstance(n, A.Assign) and isinstance(unparen(n.target), A.Name):
        out.append((unparen(n.target).name, conds | _names(n.value)))  # type: ignore[attr-defined]
    for c in n.children():
        _definitions(c, conds, out)


def _slot_array(e: A.Expr) -> A.Expr:
    """The array of buffers ``s`` of ``s[1][0]`` (``e`` itself where it is no index)."""
    e = unparen(e)
    while isinstance(e, A.Index):
        e = unparen(e.base)
    return e


def _view_base(e: A.Expr) -> str | None:
    """The buffer or tensor a view starts from: ``s`` in ``s[1].subspan(..)``, ``f.data.chunkat(..)``."""
    e = unparen(e)
    return element_base(_slot_array(e.base if isinstance(e, A.View) else e))
