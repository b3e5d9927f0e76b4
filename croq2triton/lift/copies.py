"""Lifting ``dma.copy`` (and ``dma.transp``, ``dma.pad``; ``tma.copy`` through lift/tma.py) into the
tile IR (LANGUAGE.md 7.8), as a mixin of the kernel lifter (lift/kernel.py); the buffers and views
it moves between are lift/buffers.py's.

A copy is element-wise over the coordinates ``u`` of its destination view: element ``u`` reads the
source view at ``u`` where ``u`` lies inside the source's extents, its tensor and the run-time
limits of ``.view(..).from(..)`` windows, and is zero elsewhere (the tail rule of LANGUAGE.md 7.8);
it is written where ``u`` lies inside the destination view, its tensor and its limits.  Copies
into or out of a buffer run over the buffer's whole tile, so a copy into a part of a buffer
(``buf.subspan(16, 32).at(1, 0)``) keeps the rest of it.  A transposing copy pairs the dimensions
through its permutation; a padding copy reads its border as the pad value (a padded buffer is
read by element from scratch memory).  The rest (copies of run-time shape, copies whose views
depend on the thread) raises
:class:`NotLifted` (a located diagnostic: emit/kernels.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..tir import expr as E
from ..tir import host as H
from ..tir import nodes as N
from .buffers import (
    STORAGES,
    BufferView,
    CopyFuture,
    MmaFuture,
    Place,
    TileBuffer,
    known_elements,
    pow2,
    shared_element,
    spread,
    view_shape,
)
from .checks import copy_shapes, fits, larger_at_launch
from .densestores import dense_store_source
from .notlifted import NotLifted
from .terms import Region, const_int, unparen

# attributes that do not change what a copy moves: the zero fill is the tail rule's anyway, a
# swizzle only changes the shared-memory layout (sema checks its pairing with mma.load), the rest
# are TMA's cache and multicast hints
NEUTRAL_ATTRS = ("zfill", "swiz", "multicast", "evict_first", "evict_last", "promote")


def same_elements(src: str, dst: str, node: A.Node) -> None:
    """A copy moves elements without converting them: its destination has the source's element
    type (LANGUAGE.md 7.8), or the program is wrong."""
    if src != dst:
        what = f"{node.engine}.{node.op}" if isinstance(node, A.DmaStmt) else "a copy"
        raise CroqSemanticError(
            f"{what} from {src} to {dst}: a copy's destination must have the element type of its source",
            node.span,
            f"declare the destination as {src}, or convert element by element (dst.at(..) = src.at(..))",
        )


# ``dma.pad<{lo..}, {hi..}, {mid..}, value>``: (lo, hi, value, mid), one border and interior count
# per dimension of the source; a border may be a run-time value (an expression), ``mid`` is constant
Pad = tuple[tuple[int | E.Expr, ...], tuple[int | E.Expr, ...], float | int, tuple[int, ...]]


def pads_anything(pad: Pad) -> bool:
    """Does ``pad`` add any element (a border not provably 0, or interior padding)?"""
    return any(not isinstance(x, int) or x != 0 for x in (*pad[0], *pad[1], *pad[3]))


def constant_borders(pad: Pad) -> bool:
    return all(isinstance(x, int) for x in (*pad[0], *pad[1]))


def padded_extent(n: Any, c: int, pad: Pad) -> Any:
    """The extent dimension ``c`` of ``n`` elements has padded: its borders and ``mid`` elements
    between two of its own (LANGUAGE.md 7.8)."""
    out = n + pad[0][c] + pad[1][c]
    return out + (n - 1) * pad[3][c] if pad[3][c] else out


def padded_at(at: E.Expr, c: int, pad: Pad, n: E.Expr) -> tuple[E.Expr, list[E.Expr]]:
    """Position ``at`` past the lower border of dimension ``c`` of a padded copy: the source's
    element there, and the terms that say the position holds one (not a border nor between)."""
    mid = pad[3][c]
    if not mid:
        return at, [E.Bin(">=", at, E.Const(0)), E.Bin("<", at, n)]
    k = E.Const(mid + 1)
    j = E.fold(E.Bin("/", at, k))
    return j, [E.Bin(">=", at, E.Const(0)), E.Bin("==", E.Bin("%", at, k), E.Const(0)), E.Bin("<", j, n)]


def whole_slot(view: BufferView) -> bool:
    """Is ``view`` one whole buffer of an array of buffers the block shares (``ring[s]``: the
    array's dimensions fixed, every other one whole), and not the array's whole tile?"""
    buf = view.buffer
    if view.whole or all(view.keep) or buf.of is not None or buf.part is not None or not buf.fixed:
        return False
    if buf.var.type == "i1" or buf.origin is not None or (buf.home is not None and buf.home.lane is not None):
        return False
    return all(
        const_int(o) == 0 and E.same(n, size)
        for o, n, size, k in zip(view.offsets, view.shape, buf.sizes, view.keep, strict=True)
        if k
    )


def outside(dtype: str, value: float | int) -> float | int:
    """What a masked-off element of a copy reads, as a literal of the tile's type."""
    return float(value) if dtype.startswith("f") else int(value)


class Copies:
    """Copies; lift/buffers.py and lift/tma.py supply the buffers, views and descriptor accesses."""

    # supplied by the lifter (lift/kernel.py), lift/buffers.py and lift/tma.py
    tma_load: Any
    tma_store: Any
    concat_region: Any
    concat_view: Any
    units: dict[str, int]
    is_event: Any
    waited: Any
    swizzle: Any
    masked: Any
    place: Any
    place_shape: Any
    new_buffer: Any
    launch_buffer: Any
    give_home: Any
    launch_extent: Any
    host_of: Any
    whole_buffer: Any
    tile_value: Any
    set_tile: Any
    int_expr: Any
    root: list[N.Stmt]
    body: list[N.Stmt]
    coordinates: list[tuple[E.Expr, E.Var]]
    host: Any
    scopes: list[dict[str, Any]]
    pred: list[E.Expr]
    expr: Any
    lookup: Any
    placeholder: Any
    tensor: Any
    emit: Any
    fresh: Any
    named: Any
    mask_terms: Any
    named_offset: Any
    part_tile: Any
    copied_window: Any
    part_store: Any
    part_of: Any
    per_thread_copy: Any
    selected: Any
    select_index: Any
    chosen: Any
    lane_copy: Any
    scratch_address: Any
    named_anywhere: Any
    known: Any
    undeclared: Any  # (the kernel lifter's: the user's error, with the visible names closest)
    lets: list[tuple[E.Expr, E.Var]]
    lane_dependent: Any
    named: Any
    launch_checks: list[H.Assert]

    def dma(self, s: A.DmaStmt) -> None:
        if s.op not in ("copy", "load", "transp", "pad") or (s.cfg and s.op == "copy"):
            raise NotLifted(f"a {s.engine}.{s.op}", s)
        if s.event is not None and not self.is_event(s.event):  # ``tma.copy.async<full>``: it only orders
            raise NotLifted("a copy bound to something other than an event", s)
        if s.dst_storage and s.event is None and (s.result is None or not self.named_anywhere(s.result)):
            self.unread_copy(s)
            return
        self.live_copy(s)

    def unread_copy(self, s: A.DmaStmt) -> None:
        """A copy into fresh memory that nothing reads has no effect: lifted as any other where it
        can be, dropped where its form is one the lifting does not take (a user's error stays one)."""
        for n in s.src.walk():
            if isinstance(n, A.Name) and n.name != "_" and not self.known(n.name):
                raise self.undeclared(n.name, n.span)
        before, lets = {id(x) for x in self.body}, list(self.lets)
        scopes = [dict(sc) for sc in self.scopes]
        try:
            self.live_copy(s)
        except NotLifted:  # nothing of it stays: its statements, its buffers, the values it named
            coords = {v.name for _, v in self.coordinates}  # bound once at the top: kept
            self.body[:] = [x for x in self.body if id(x) in before or (isinstance(x, N.Let) and x.var.name in coords)]
            self.lets = lets
            for sc, old in zip(self.scopes, scopes, strict=True):
                sc.clear()
                sc.update(old)

    def live_copy(self, s: A.DmaStmt) -> None:
        if self.per_thread_copy(s):  # each thread's own window (lift/lanecopies.py)
            self.lane_copy(s)
            return
        if not s.dst_storage and isinstance(unparen(s.dst), A.Select):
            self.copy_into_select(s, unparen(s.dst))  # type: ignore[arg-type]
            return
        if any(a.name not in NEUTRAL_ATTRS for a in s.attrs):
            odd = [a.name for a in s.attrs if a.name not in NEUTRAL_ATTRS]
            what = "2:4 sparse copies ('.sp')" if odd == ["sp"] else f"a copy with '.{odd[0]}'"
            raise NotLifted(what, s)
        if any(p.shape for p in self.pred):
            self.copy_by_some_threads(s)
            return
        src = self.place(s.src)
        if s.engine == "tma" and isinstance(src, BufferView) and not s.dst_storage:
            dense_store_source(src, s)  # a TMA store reads dense shared memory (lift/densestores.py)
        placing: tuple[str | None, ...] = ()
        if isinstance(src, Region) and s.dst_storage and s.op in ("copy", "load"):
            src, placing = self.concat_region(src, s)  # the window of all the units' copies (lift/units.py)
        perm = self.permutation(s, src)  # destination dimension k is source dimension perm[k]
        pad = self.pad_borders(s, src)
        dst: Place
        again: BufferView | None = None
        if s.dst_storage:
            storage = unparen(s.dst).name if isinstance(unparen(s.dst), A.Name) else None  # type: ignore[attr-defined]
            if storage == "global":  # a fresh buffer only this instance names: the block's, wherever it lives
                storage = "shared"
            if storage not in STORAGES:
                raise NotLifted(f"a copy into fresh {storage or 'unknown'} memory", s)
            extents = tuple(self.place_shape(src)[c] for c in perm)
            if pad is not None:  # a run-time border: an extent fixed at launch
                extents = tuple(
                    x if n is not None and isinstance(x := padded_extent(n, c, pad), int) else None
                    for c, n in enumerate(extents)
                )
            if any(n is not None and n < 1 for n in extents):
                raise NotLifted("a copy into a fresh buffer of no elements", s)
            elem = src.buffer.elem if isinstance(src, BufferView) else self.host.tensors[src.tensor].elem
            again = self.reassigned_future(s, elem, extents)
            if again is not None:  # ``f = dma.copy .. => shared;`` in a loop, ``f`` bound before it
                dst = again
            elif None in extents:  # its tile's extents are fixed at launch
                sizes = tuple(view_shape(src)[c] for c in perm)
                if pad is not None:  # each dimension enlarged by its borders (LANGUAGE.md 7.8)
                    sizes = tuple(E.fold(padded_extent(n, c, pad)) for c, n in enumerate(sizes))
                buf = self.launch_buffer(s.result or "buf", elem, sizes, s)
            else:
                buf = self.new_buffer(s.result or "buf", elem, tuple(n for n in extents if n is not None), 0, s)
            if again is None:
                buf = self.give_home(buf, storage, s)
                buf.placing = placing
                dst = self.whole_buffer(buf)
        else:
            dst = self.place(s.dst)
            self.copy_fits(s, src, dst, perm, pad)
            if isinstance(src, BufferView) and isinstance(dst, Region) and self.units:
                src, dst = self.units_store(src, dst, perm, s)
        zfill = any(a.name == "zfill" for a in s.attrs)
        if s.engine == "tma" and not (isinstance(src, Region) != isinstance(dst, Region)):
            raise NotLifted("a tma.copy that is not between a tensor and a buffer", s)
        if isinstance(src, Region) and isinstance(dst, BufferView):
            self.fill(src, dst, zfill, s, perm, pad)
        elif isinstance(src, BufferView) and isinstance(dst, Region):
            self.empty(src, dst, s, perm, pad)
        elif isinstance(src, Region) and isinstance(dst, Region):
            self.between_tensors(src, dst, not zfill, s, perm, pad)
        elif pad is not None:
            self.pad_between_buffers(src, dst, s, pad)  # type: ignore[arg-type]
        elif perm != tuple(range(len(perm))):
            self.transposed_between_buffers(src, dst, perm, s)  # type: ignore[arg-type]
        else:
            self.between_buffers(src, dst, s)  # type: ignore[arg-type]
        if s.result and again is None:
            self.scopes[-1][s.result] = CopyFuture(dst)

    def reassigned_future(self, s: A.DmaStmt, elem: str, extents: tuple[int | None, ...]) -> BufferView | None:
        """The buffer of a future an enclosing scope binds, where ``s`` assigns it a copy into fresh
        memory again (``f = dma.copy x.. => shared;`` in a loop, ``f`` bound before it): the name is
        assigned, not declared anew (LANGUAGE.md 4.3), so after the statement -- in the loop's next
        step, after the loop -- ``f.data`` is the new copy.  The copy lands in the buffer ``f`` names:
        no other name views that buffer (else NotLifted), and what reads ``f.data`` before the
        statement reads it before it is overwritten, in program order."""
        if not s.result or s.result in self.scopes[-1]:
            return None  # a name of this scope: a fresh buffer, bound from here on
        old = next((sc[s.result] for sc in reversed(self.scopes[:-1]) if s.result in sc), None)
        if not isinstance(old, CopyFuture) or not isinstance(old.data, BufferView) or not old.data.whole:
            return None
        buf = old.data.buffer
        if buf.elem != elem or tuple(const_int(n) for n in buf.sizes) != extents or buf.of is not None:
            raise NotLifted(f"'{s.result}' assigned a copy of another shape or type than the one it holds", s)
        for sc in self.scopes:
            for name, v in sc.items():
                seen = v.data if isinstance(v, CopyFuture) else v
                if name != s.result and getattr(seen, "buffer", seen) is buf:
                    raise NotLifted(f"'{s.result}' assigned a new copy while '{name}' views the one it holds", s)
        return old.data

    def units_store(
        self, src: BufferView, dst: Region, perm: tuple[int, ...], node: A.DmaStmt
    ) -> tuple[BufferView, Region]:
        """A copy each unit makes of its part of a buffer into its window of a tensor
        (``out_s.subspan(64, N).at(g, 0) => out.subspan(64, N).at(m * 2 + g, n)``): the units'
        parts side by side and their windows side by side, where they place them alike
        (lift/units.py), are one copy of the whole."""
        whole, by_src = self.concat_view(src, node)
        if not any(by_src):
            return src, dst
        window, by_dst = self.concat_region(dst, node)
        if perm != tuple(range(len(perm))) or tuple(by_src) != tuple(by_dst):
            raise NotLifted("a copy of the units' parts of a buffer into windows they place otherwise", node)
        return whole, window

    def copy_by_some_threads(self, s: A.DmaStmt) -> None:
        """A copy under a condition on the thread index (``if (t == 0) dma.copy ..``): a copy moves
        the same elements whichever threads issue it (LANGUAGE.md 7.8: the unit's threads run it
        together), so it runs, once, where the condition holds for some thread of the block."""
        if self.lane_dependent(s):
            raise NotLifted("a copy under a condition on the thread index whose views differ between threads", s)
        lanes = [p for p in self.pred if p.shape]
        some = E.fold(E.Cast(E.conj([*lanes, *self.padding]), "i32"))
        for _ in range(len(some.shape)):
            some = E.Reduce("max", some, 0)
        runs = self.named(E.Bin(">", some, E.Const(0)), "some_lane", s)
        saved = self.pred
        self.pred = [p for p in self.pred if not p.shape] + [runs]
        try:
            self.dma(s)
        finally:
            self.pred = saved

    def copy_fits(self, s: A.DmaStmt, src: Place, dst: Place, perm: tuple[int, ...], pad: Any) -> None:
        """A source that does not fit its destination is the user's error (lift/checks.py); an
        extent only the launch knows is compared by the launcher."""
        shape = view_shape(src)
        moved = [shape[c] for c in perm]
        if pad is not None:  # each dimension enlarged by its borders
            moved = [E.fold(padded_extent(n, c, pad)) for c, n in enumerate(moved)]
        for d, a, b in copy_shapes(shape, moved, view_shape(dst), s):
            # into a buffer (out of one, a larger source is a store's tail: ``view(rows, N)``)
            src_host, dst_host = self.host_of(a), self.host_of(b)
            if not isinstance(dst, BufferView) or src_host is None or dst_host is None or fits(src_host, dst_host):
                continue
            line = s.span.line if s.span else 0
            self.launch_checks.append(
                H.Assert(E.Bin("<=", src_host, dst_host), larger_at_launch(a, b, d, s), line=line)
            )

    def copy_into_select(self, s: A.DmaStmt, sel: A.Select) -> None:
        """``dma.copy v => select(i, b0, b1, ..)``: into the chosen buffer; with ``i`` known only at
        run time, into a buffer each choice then takes where ``i`` names it."""
        index, k = self.select_index(sel)
        if k is not None:
            self.dma(dataclasses.replace(s, dst=sel.options[k]))
            return
        choices = self.selected(sel)
        tmp = self.chosen(choices, s)
        self.scopes[-1][tmp.name] = tmp
        self.dma(dataclasses.replace(s, dst=A.Name(tmp.name, span=sel.span), result=None))
        for j, b in enumerate(choices):
            taken = E.Bin("==", index, E.Const(j))
            self.set_tile(b, E.Where(taken, self.tile_value(tmp, s), self.tile_value(b, s)), s)
        if s.result:
            self.scopes[-1][s.result] = CopyFuture(self.whole_buffer(tmp))

    def permutation(self, s: A.DmaStmt, src: Place) -> tuple[int, ...]:
        """``dma.transp<p0, p1, ..>``: the destination's dimension k is the source's ``p_k``
        (identity for a plain copy)."""
        rank = len(view_shape(src))
        if s.op != "transp":
            return tuple(range(rank))
        perm = tuple(const_int(self.int_expr(x)) for x in s.cfg or [])
        if sorted(p for p in perm if p is not None) != list(range(rank)) or len(perm) != rank:
            raise NotLifted("a dma.transp whose order is not a permutation of the source's dimensions", s)
        return perm  # type: ignore[return-value]

    def pad_borders(self, s: A.DmaStmt, src: Place) -> Pad | None:
        """``dma.pad<{lo..}, {hi..}, {mid..}, v>``: the borders before and after each dimension, their
        value and the elements between two of the source's (None for other copies)."""
        if s.op != "pad":
            return None
        cfg = s.cfg or []
        rank = len(view_shape(src))
        lists = [x.items if isinstance(x, (A.ItupleLit, A.MdspanLit)) else None for x in cfg[:3]]
        if len(cfg) != 4 or any(x is None for x in lists):
            raise NotLifted("a dma.pad of this form", s)
        for x in lists:
            if x is not None and len(x) != rank:
                raise CroqSemanticError(
                    f"dma.pad: {len(x)} paddings for a source of rank {rank}",
                    s.span,
                    "each of the three paddings has one value per dimension of the source",
                )
        # a border may be a run-time value (``16 - K``: a tile of K columns padded to 16)
        lo, hi, mid = (
            [c if (c := const_int(x := E.fold(self.int_expr(e)))) is not None else x for e in items]
            for items in lists
            if items is not None
        )
        value = E.fold(self.expr(cfg[3]).expr)
        if any(not isinstance(x, int) for x in mid):
            raise NotLifted("a dma.pad with run-time interior padding", s)
        if not isinstance(value, E.Const):
            raise NotLifted("a dma.pad with a run-time pad value", s)
        if any(isinstance(x, int) and x < 0 for x in (*lo, *hi, *mid)):
            raise CroqSemanticError("a dma.pad with a negative padding", s.span, "paddings are >= 0")
        return tuple(lo), tuple(hi), value.value, tuple(mid)  # type: ignore[arg-type, return-value]

    def wait(self, s: A.Wait) -> None:
        for item in s.items:
            name = unparen(item)
            if self.is_event(item):
                self.waited(item, s)
                continue  # the block's events: they only order threads (lift/events.py)
            if isinstance(name, A.Name) and self.placeholder(name.name):
                continue  # a ``dma.any`` no copy has bound yet: nothing to wait for (lift/futures.py)
            if not isinstance(name, A.Name) or not isinstance(self.lookup(name.name, name), (CopyFuture, MmaFuture)):
                raise NotLifted("a wait on something other than a copy's or an MMA's future", item)
        # the copies and MMAs are complete where they stand: the lifted program has no asynchrony

    def coords(self, shape: tuple[E.Dim, ...], node: A.Node) -> list[E.Expr]:
        """The coordinates of a block of ``shape``, one lane axis per dimension, each bound once at
        the top of the kernel (loops do not recompute them)."""
        rank = len(shape)
        names = ["rows", "cols"] if rank == 2 else [f"dim{d}" for d in range(rank)] if rank > 2 else ["idx"]
        out: list[E.Expr] = []
        for d, n in enumerate(shape):
            lane = E.Arange(n) if rank == 1 else E.Lift(E.Arange(n), rank, (d,))
            found = next((v for e, v in self.coordinates if e == lane), None)
            if found is None:
                hi = n - 1 if isinstance(n, int) else None  # an extent fixed at launch: no bound known here
                found = E.Var(self.fresh(names[d]), "i32", lo=0, hi=hi, dims=lane.shape)
                let = N.Let(found, lane, line=node.span.line if node.span else 0)
                self.root.insert(len(self.coordinates), let)
                self.coordinates.append((lane, found))
            out.append(found)
        return out

    def in_tensor(self, index: list[E.Expr], extents: tuple[E.Expr, ...], limits: Any) -> list[E.Expr]:
        out: list[E.Expr] = []
        for i, n in zip(index, extents, strict=True):
            out += [E.Bin(">=", i, E.Const(0)), E.Bin("<", i, n)]
        for d, lo, hi in limits:
            out += [E.Bin(">=", index[d], lo), E.Bin("<", index[d], hi)]
        return out

    def tensor_index(
        self, region: Region, index: list[E.Expr], node: A.Node
    ) -> tuple[tuple[E.Expr, ...], list[E.Expr]]:
        """The tensor's index of element ``index`` of ``region``'s coordinates (the tensor's, or for a
        ``span_as`` view its new extents': the row-major position there, unravelled into the
        parent's coordinates), with the terms that keep it inside the tensor and every window."""
        terms: list[E.Expr] = []
        while region.reshaped is not None:
            extents = region.reshaped.extents
            terms += self.in_tensor(index, extents, region.limits)
            flat: E.Expr = E.Const(0)
            for i, n in zip(index, extents, strict=True):
                flat = E.fold(E.Bin("+", E.Bin("*", flat, n), i))
            flat = self.named_offset(flat, node)
            region = region.reshaped.parent
            child: list[E.Expr] = []
            for k in reversed(range(len(region.shape))):  # the last dimension varies fastest
                n = region.shape[k]
                child.append(E.fold(E.Bin("%", flat, n)) if k else flat)
                if k:
                    flat = self.named_offset(E.fold(E.Bin("/", flat, n)), node)
            index = list(region.origin)
            for c, d in enumerate(region.axes):
                index[d] = E.fold(index[d] + child[len(child) - 1 - c])
        idx = tuple(self.named_offset(i, node) for i in index)
        _, ptr = self.tensor(A.Name(region.tensor))
        return idx, terms + self.in_tensor(list(idx), ptr.extents, region.limits)

    def mask_of(self, terms: list[E.Expr], node: A.Node, after: list[E.Expr] | tuple[()] = ()) -> E.Var | None:
        """A named mask of ``terms``, the enclosing conditions and ``after`` (None: all hold)."""
        return self.named_mask(terms + self.pred + list(after), node)

    def named_mask(self, terms: list[E.Expr], node: A.Node) -> E.Var | None:
        """The conjunction of ``terms`` as a named mask (None: they all hold)."""
        m = E.conj(self.mask_terms(terms))
        if isinstance(m, E.Const) and m.value:
            return None
        return self.named(m, "mask", node)  # type: ignore[no-any-return]

    def same_elem(self, a: str, b: str, node: A.Node) -> None:
        same_elements(a, b, node)

    def buffer_part(self, view: BufferView, u: dict[int, E.Expr], node: A.Node) -> list[E.Expr]:
        """The coordinates of the buffer tile inside ``view`` (``u``: per kept dimension the
        coordinate relative to the view's origin)."""
        buf = view.buffer
        r = self.coords(buf.tile, node)
        out: list[E.Expr] = []
        for d in range(len(buf.extents)):
            local = E.fold(r[d] - view.offsets[d])
            if view.keep[d]:
                u[d] = local
                out += [E.Bin(">=", local, E.Const(0)), E.Bin("<", local, view.shape[d])]
            else:
                out.append(E.Bin("==", local, E.Const(0)))
        return out

    def fill(
        self, src: Region, dst: BufferView, zfill: bool, node: A.Stmt, perm: tuple[int, ...], pad: Any = None
    ) -> None:
        if getattr(node, "engine", "dma") == "tma" and pad is None and whole_slot(dst):
            self.fill_slot(src, dst, zfill, node, perm)
            return
        buf = dst.buffer
        elem, ptr = self.tensor(A.Name(src.tensor))
        self.same_elem(elem, buf.elem, node)
        if len(dst.axes) != len(src.axes):
            raise NotLifted("a copy whose views differ in rank", node)
        u: dict[int, E.Expr] = {}
        written = self.buffer_part(dst, u, node)
        # the tile's padding (coordinates past the declared extents) is never read: no need to keep it
        written = [t for t in written if not self.padding_term(t, buf, node)]
        read = list(written)
        index = list(src.origin)
        held: list[E.Expr] = []  # a padded copy: the positions that hold the source's elements
        for k, c in enumerate(perm):
            td, d = src.axes[c], dst.axes[k]
            at = E.fold(u[d] - pad[0][c]) if pad is not None else u[d]  # a border of lo elements first
            if pad is not None:  # the source's element, where the position holds one
                at, holds = padded_at(at, c, pad, src.shape[c])
                read += holds
                held += holds
            index[td] = E.fold(index[td] + src.at(c, at))
            if pad is None and not E.same(src.shape[c], dst.shape[d]):
                read.append(E.Bin("<", at, src.shape[c]))
        idx, inside = self.tensor_index(src, index, node)
        read += inside
        mask = self.mask_of(read, node)
        keep = E.fold(E.conj(written + self.pred))
        whole = isinstance(keep, E.Const) and keep.value
        every = E.fold(E.conj(written))  # the copy covers the tile (but for a block-level condition)
        covers = isinstance(every, E.Const) and every.value and not any(p.shape for p in self.pred)
        shape = E.broadcast(*(i.shape for i in idx), *((mask.shape,) if mask is not None else ()))
        # a copy over the whole tile loads straight into the buffer's variable
        name = buf.var.name if whole and shape == buf.tile and pad is None else self.fresh(f"{buf.var.name}_in")
        var = E.Var(name, ptr.dtype, dims=shape)
        other = outside(ptr.dtype, 0)  # outside the tensor: zero (NaN under the sanitizer), for a padded copy too
        if not whole:
            self.tile_value(buf, node)
        swiz = self.swizzle(node) if isinstance(node, A.DmaStmt) else None
        if swiz is not None:  # the layout mma.load reads it with (checked there)
            buf.swizzle = (swiz, node.span.line if node.span else 0)
        # a padded copy's borders take the pad value below: only its reads outside the tensor stay NaN
        sanitize = not zfill
        load = N.Load(var, ptr.name, idx, mask, other if mask is not None else None, nan_outside=sanitize)
        if getattr(node, "engine", "dma") != "tma":  # an MMA operand read from a tensor: a plain load
            self.emit(load, node)
        elif src.reshaped is not None:
            self.emit(self.masked(load, src, "the window is a span_as view", "loads", node), node)
        elif perm != tuple(range(len(perm))):
            self.emit(self.masked(load, src, "the copy transposes the window", "loads", node), node)
        elif pad is not None and pads_anything(pad):
            self.emit(self.masked(load, src, "the copy pads the window", "loads", node), node)
        elif covers and shape == buf.tile and buf.fixed:
            self.emit(self.tma_load(load, src, buf.extents, zfill, node), node)
        else:
            self.emit(self.masked(load, src, "the copy fills a part of a buffer", "loads", node), node)
        value: E.Expr = var
        if pad is not None:  # the borders (and between elements) read the pad value
            fill = E.Full(shape, outside(ptr.dtype, pad[2]), ptr.dtype)
            value = E.Where(E.fold(E.conj(held)), var, fill)
        self.set_tile(buf, value if whole else E.Where(keep, value, buf.var), node)

    def fill_slot(self, src: Region, dst: BufferView, zfill: bool, node: A.Stmt, perm: tuple[int, ...]) -> None:
        """A TMA copy into one whole buffer of an array (``=> ring[kk % 2]``, LANGUAGE.md 7.5): into
        a buffer of the slot's extents, as into any whole buffer (a descriptor load where TMA takes
        the window), then that buffer into the slot of the array's tile (lift/parts.py)."""
        buf = dst.buffer
        if buf.home is not None:  # in scratch memory: the slot written through its own addresses there
            slot = self.part_of(dst, node)
            self.fill(src, self.whole_buffer(slot), zfill, node, perm)
            buf.swizzle = slot.swizzle or buf.swizzle  # the layout mma.load reads the array with
            return
        extents = tuple(e for e, k in zip(buf.extents, dst.keep, strict=True) if k)
        slot = self.new_buffer(self.fresh(f"{buf.name}_slot"), buf.elem, extents, 0, node)
        self.fill(src, self.whole_buffer(slot), zfill, node, perm)
        buf.swizzle = slot.swizzle or buf.swizzle
        value = self.part_store(dst, self.tile_value(slot, node), node)
        keep = E.fold(E.conj(self.pred))
        if not (isinstance(keep, E.Const) and keep.value):  # under a condition: the array as it was where it fails
            value = E.Where(keep, value, self.tile_value(buf, node))
        self.set_tile(buf, value, node)

    def empty_slot(self, src: BufferView, dst: Region, node: A.Stmt, perm: tuple[int, ...]) -> None:
        """A TMA copy out of one whole buffer of an array (``ring[kk % 2] => ..``): the slot's tile
        (lift/parts.py) stored as a whole buffer is (a descriptor store where TMA takes the window)."""
        buf = src.buffer
        if buf.home is not None:  # in scratch memory: the slot read through its own addresses there
            self.empty(self.whole_buffer(self.part_of(src, node)), dst, node, perm)
            return
        value, _, _ = self.part_tile(src, node)
        extents = tuple(e for e, k in zip(buf.extents, src.keep, strict=True) if k)
        slot = self.new_buffer(self.fresh(f"{buf.name}_slot"), buf.elem, extents, 0, node)
        self.set_tile(slot, value, node)
        self.empty(self.whole_buffer(slot), dst, node, perm)

    def padding_term(self, t: E.Expr, buf: TileBuffer, node: A.Node) -> bool:
        """``r < n`` for a tile coordinate ``r`` and the buffer's declared extent ``n`` along it."""
        if not (isinstance(t, E.Bin) and t.op == "<"):
            return False
        lhs = E.fold(t.lhs)
        coords = self.coords(buf.tile, node)
        return any(E.same(t.rhs, ext) and E.same(lhs, coords[d]) for d, ext in enumerate(buf.sizes))

    def empty(
        self, src: BufferView, dst: Region, node: A.Stmt, perm: tuple[int, ...], pad: Any = None, only_src: bool = False
    ) -> None:
        """Store the buffer part ``src`` into the window ``dst``; ``only_src`` (``mma.store.mask``):
        a smaller source writes only its own elements (a copy would write the tail's zeros)."""
        if getattr(node, "engine", "dma") == "tma" and pad is None and whole_slot(src):
            self.empty_slot(src, dst, node, perm)
            return
        if pad is not None and dst.steps is not None:
            raise NotLifted("a dma.pad into a view with explicit strides", node)
        src = self.copied_window(src, node)
        if pad is not None:  # the border, then the buffer at the origin shifted by the lower borders
            self.border(src, dst, node, pad)
            origin = list(dst.origin)
            for c, t in enumerate(dst.axes):
                origin[t] = E.fold(origin[t] + pad[0][c])
            steps = tuple(E.Const(m + 1) for m in pad[3]) if any(pad[3]) else None  # mid elements between
            dst = dataclasses.replace(dst, origin=tuple(origin), shape=view_shape(src), steps=steps)
        buf = src.buffer
        elem, ptr = self.tensor(A.Name(dst.tensor))
        self.same_elem(buf.elem, elem, node)
        if len(src.axes) != len(dst.axes):
            raise NotLifted("a copy whose views differ in rank", node)
        u: dict[int, E.Expr] = {}
        cond = self.buffer_part(src, u, node)
        index = list(dst.origin)
        for c, td in enumerate(dst.axes):
            d = src.axes[perm[c]]
            index[td] = E.fold(index[td] + dst.at(c, u[d]))
            if not E.same(src.shape[d], dst.shape[c]):
                larger = const_int(src.shape[d]) is not None and (const_int(dst.shape[c]) or 0) > const_int(
                    src.shape[d]
                )  # type: ignore[operator]
                if larger and not only_src:
                    raise NotLifted("a copy out of a buffer into a larger view", node)
                cond.append(E.Bin("<", u[d], dst.shape[c]))
        idx, inside = self.tensor_index(dst, index, node)
        cond += inside
        value, mask = self.tile_value(buf, node), self.mask_of(cond, node)
        # a part along dimensions it does not keep (``buf[s]`` of an array): the other parts' lanes
        # address the same elements, masked off
        idx = shared_element(idx, E.broadcast(*(i.shape for i in idx), value.shape, mask.shape if mask else ()))
        store = N.Store(ptr.name, idx, value, mask)
        if getattr(node, "engine", "dma") != "tma":  # an mma.store is a plain store
            self.emit(store, node)
        elif dst.reshaped is not None:
            self.emit(self.masked(store, dst, "the window is a span_as view", "stores", node), node)
        elif perm != tuple(range(len(perm))):
            self.emit(self.masked(store, dst, "the copy transposes the buffer", "stores", node), node)
        elif src.whole and buf.fixed:
            self.emit(self.tma_store(store, dst, buf.extents, node), node)
        else:
            self.emit(self.masked(store, dst, "the copy empties a part of a buffer", "stores", node), node)

    def border(self, src: BufferView, dst: Region, node: A.DmaStmt, pad: Any) -> None:
        """The border of a ``dma.pad`` out of a buffer: the pad value where the destination is not
        the buffer's (a separate store of other elements: the two never write the same one)."""
        elem, ptr = self.tensor(A.Name(dst.tensor))
        block = []
        for c in range(len(dst.axes)):
            n = const_int(dst.shape[c])
            if n is None:
                raise NotLifted("a dma.pad into a window of run-time extent", node)
            block.append(pow2(n))
        g = self.coords(tuple(block), node)
        index, inside = list(dst.origin), []
        for c, t in enumerate(dst.axes):
            index[t] = E.fold(index[t] + g[c])
            at = E.fold(g[c] - pad[0][c])
            inside += padded_at(at, c, pad, src.shape[src.axes[c]])[1]
        idx, within = self.tensor_index(dst, index, node)
        cond = [E.Bin("<", g[c], dst.shape[c]) for c in range(len(block))]
        cond += [E.Un("!", E.fold(E.conj(inside)))] + within
        value = E.Full(tuple(block), pad[2], ptr.dtype)
        self.emit(N.Store(ptr.name, idx, value, self.mask_of(cond, node)), node)

    def between_tensors(
        self, src: Region, dst: Region, nan: bool, node: A.DmaStmt, perm: tuple[int, ...], pad: Any = None
    ) -> None:
        """A copy between windows of tensors, over the destination's block; a ``dma.pad`` reads
        the source shifted by its lower borders and writes the pad value on the borders."""
        s_elem, s_ptr = self.tensor(A.Name(src.tensor))
        d_elem, d_ptr = self.tensor(A.Name(dst.tensor))
        self.same_elem(s_elem, d_elem, node)
        if len(src.axes) != len(dst.axes):
            raise NotLifted("a copy whose views differ in rank", node)
        known: list[int | None] = []
        for c in range(len(dst.axes)):
            n = const_int(dst.shape[c])
            if n is None:
                hi = E.bounds(dst.shape[c])[1]
                n = hi if hi is not None or pad is not None else const_int(src.shape[perm[c]])
            if n is not None and n < 1:
                raise NotLifted("a copy between tensors of no elements", node)
            known.append(n)
        fixed = known_elements(known)
        block: list[E.Dim] = []
        for c, n in enumerate(known):
            if n is None:  # the whole run-time window as one block, its extent fixed at launch
                usable = self.host_of(dst.shape[c]) is not None or pad is not None
                size = dst.shape[c] if usable else src.shape[perm[c]]
                what = f"the copy into '{dst.tensor}'"
                block.append(self.launch_extent(size, f"COPY_D{c}", what, node, fixed))
            else:
                block.append(pow2(n))
        g = self.coords(tuple(block), node)
        read, write, border, moved = [], [], [], []
        s_index, d_index = list(src.origin), list(dst.origin)
        for c in range(len(block)):
            at = E.fold(g[c] - pad[0][perm[c]]) if pad is not None else g[c]  # a border of lo elements first
            within = [E.Bin("<", at, src.shape[perm[c]])] + ([E.Bin(">=", at, E.Const(0))] if pad else [])
            if pad is not None and pad[3][perm[c]]:  # the source's element, where the position holds one
                at, within = padded_at(at, perm[c], pad, src.shape[perm[c]])
            s_index[src.axes[perm[c]]] = E.fold(s_index[src.axes[perm[c]]] + src.at(perm[c], at))
            d_index[dst.axes[c]] = E.fold(d_index[dst.axes[c]] + dst.at(c, g[c]))
            write.append(E.Bin("<", g[c], dst.shape[c]))
            read += within
            border += within
            if pad is not None:  # past the source and its borders: the tail rule's zero
                moved.append(E.Bin("<", g[c], E.fold(padded_extent(src.shape[perm[c]], perm[c], pad))))
        s_idx, inside = self.tensor_index(src, s_index, node)
        d_idx, within = self.tensor_index(dst, d_index, node)
        read += inside
        write += within
        var = E.Var(self.fresh(f"{src.tensor}_tile"), s_ptr.dtype, dims=tuple(block))
        mask = self.mask_of(read, node)
        other = outside(s_ptr.dtype, 0)
        self.emit(N.Load(var, s_ptr.name, s_idx, mask, other if mask is not None else None, nan_outside=nan), node)
        value: E.Expr = var
        if pad is not None:  # the borders read the pad value (outside the tensor inside them: the load's fill)
            fill = E.Full(tuple(block), outside(s_ptr.dtype, pad[2]), s_ptr.dtype)
            zero = E.Full(tuple(block), outside(s_ptr.dtype, 0), s_ptr.dtype)
            value = E.Where(E.fold(E.conj(border)), var, E.fold(E.Where(E.fold(E.conj(moved)), fill, zero)))
        self.emit(N.Store(d_ptr.name, d_idx, value, self.mask_of(write, node)), node)

    def pad_between_buffers(self, src: BufferView, dst: BufferView, node: A.DmaStmt, pad: Pad) -> None:
        """``dma.pad`` of a buffer in scratch memory (lift/placement.py puts a padded one there)
        into a whole buffer: each element of the destination's tile read at the source's element
        its position holds, the pad value on the borders and between (LANGUAGE.md 7.8)."""
        home = src.buffer.home
        if home is None or home.lane is not None or not dst.whole or not dst.buffer.fixed:
            raise NotLifted("a dma.pad between buffers other than of a block's buffer into a whole one", node)
        self.same_elem(src.buffer.elem, dst.buffer.elem, node)
        buf = dst.buffer
        if len(src.axes) != len(buf.extents):
            raise NotLifted("a copy whose views differ in rank", node)
        g = self.coords(buf.tile, node)
        index = list(src.offsets)
        holds: list[E.Expr] = []
        for c, d in enumerate(src.axes):
            at, inside = padded_at(E.fold(g[c] - pad[0][c]), c, pad, src.shape[d])
            holds += inside
            index[d] = E.fold(index[d] + at)
        addr, _ = self.scratch_address(src.buffer, index, node, masked=False)
        mask = self.mask_of(holds + [E.Bin("<", g[c], n) for c, n in enumerate(buf.sizes)], node)
        var = E.Var(self.fresh(f"{buf.var.name}_in"), buf.var.type, dims=buf.tile)
        other = outside(buf.var.type, pad[2])
        self.emit(N.Load(var, home.arg, (spread(addr, buf.tile, addr.dtype),), mask, other), node)
        keep = E.fold(E.conj(self.pred))
        if isinstance(keep, E.Const) and keep.value:
            self.set_tile(buf, var, node)
        else:  # under a condition: the buffer as it was where it fails
            self.set_tile(buf, E.Where(keep, var, self.tile_value(buf, node)), node)

    def transposed_between_buffers(
        self, src: BufferView, dst: BufferView, perm: tuple[int, ...], node: A.DmaStmt
    ) -> None:
        """``dma.transp<..> s.data => local``: the source's tile (or a part of it) with its axes
        permuted, the destination's dimension k the source's ``perm[k]`` (LANGUAGE.md 7.8)."""
        self.same_elem(src.buffer.elem, dst.buffer.elem, node)
        if src.whole:
            value, shape, sizes = self.tile_value(src.buffer, node), src.buffer.tile, src.buffer.sizes
        else:
            value, shape, sizes = self.part_tile(src, node)
        moved = tuple(shape[k] for k in perm)
        sizes_moved = tuple(sizes[k] for k in perm)
        if not dst.whole or moved != tuple(dst.buffer.tile):
            raise NotLifted("a transposing copy into a part of a buffer, or of another shape", node)
        if not all(E.same(E.fold(a), E.fold(b)) for a, b in zip(sizes_moved, dst.buffer.sizes, strict=True)):
            raise NotLifted("a transposing copy between buffers of other extents", node)
        self.set_tile(dst.buffer, E.fold(E.Permute(value, perm)), node)

    def between_buffers(self, src: BufferView, dst: BufferView, node: A.DmaStmt) -> None:
        self.same_elem(src.buffer.elem, dst.buffer.elem, node)
        src = self.copied_window(src, node)
        if src.whole and dst.whole and src.buffer.sizes == dst.buffer.sizes:
            self.set_tile(dst.buffer, self.tile_value(src.buffer, node), node)
            return
        if not dst.whole:  # a part of the destination's tile replaced (lift/parts.py)
            if dst.buffer.home is not None:
                raise NotLifted("a copy into a part of a buffer from another buffer", node)
            value = self.tile_value(src.buffer, node) if src.whole else self.part_tile(src, node)[0]
            self.set_tile(dst.buffer, self.part_store(dst, value, node), node)
            return
        home = src.buffer.home
        if home is not None and home.lane is None and not src.buffer.fixed and dst.buffer.fixed:
            # a source of run-time extent in scratch memory (a strided view of a buffer of an extent known
            # at launch): each element of the destination's tile read at its address there, zero past the
            # source's extent (the tail rule), as a dma.pad of no borders does
            rank = len(src.axes)
            self.pad_between_buffers(src, dst, node, ((0,) * rank, (0,) * rank, 0, (0,) * rank))
            return
        value, shape, sizes = self.part_tile(src, node)  # a part of the source (lift/parts.py)
        if shape != dst.buffer.tile or not all(E.same(a, E.fold(b)) for a, b in zip(sizes, dst.buffer.sizes)):
            raise NotLifted("a copy between buffer parts of different shapes", node)
        self.set_tile(dst.buffer, value, node)
