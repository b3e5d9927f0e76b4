"""Copies whose views depend on the thread (``l = dma.copy x.chunkat(p, _, t) => local`` under
``parallel t by 64 : thread``), as a mixin of the kernel lifter (lift/kernel.py).

Each thread copies its own window into its own local buffer (LANGUAGE.md 7.8): lifted, the copy
runs for all lanes at once over a tile whose leading axes are the lanes and whose trailing axes
are the window's (``[64, 1, 32, 1]`` for a ``[1, 17, 1]`` window), loaded from the tensor where
the element lies inside the window and the tensor and stored into the buffer's per-lane copies
in scratch memory (lift/placement.py puts such buffers there; element reads then take each
lane's own copy).  A copy of such a buffer back out to a per-thread window is the same tile the
other way, and so are a thread's part of a buffer the threads share (``s.chunkat(t, _)``, placed in
scratch memory by lift/placement.py) copied into its own buffer or filled from it.  Other copies of
per-thread views raise :class:`NotLifted`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import STORAGES, BufferView, CopyFuture, TileBuffer, pow2, spread
from .checks import copy_shapes
from .copies import NEUTRAL_ATTRS, Pad, constant_borders, outside, padded_at, padded_extent, same_elements
from .notlifted import NotInRegisters, NotLifted
from .terms import Bounded, Region, const_int, unparen


class LaneCopies:
    lanes: tuple[int, tuple[Any, ...]] | None
    lane_views: bool
    pred: list[E.Expr]
    padding: list[E.Expr]
    scopes: list[dict[str, Any]]
    scratch_names: set[str]
    host: Any
    binding: Any
    block_level: Any
    place: Any
    place_shape: Any
    new_buffer: Any
    launch_buffer: Any
    give_home: Any
    tensor: Any
    named_mask: Any
    tensor_index: Any
    scratch_address: Any
    coords: Any
    whole_buffer: Any
    named_offset: Any
    fresh: Any
    emit: Any
    pad_borders: Any
    permutation: Any
    top: A.Parallel

    def per_thread_copy(self, s: A.DmaStmt) -> bool:
        """Is ``s`` a copy whose source or destination view depends on the thread?"""
        if self.lanes is None or all(n == 1 for n in self.lanes[1]):
            return False
        exprs = [s.src] + ([] if s.dst_storage else [s.dst])
        for e in exprs:
            for n in e.walk():
                if not isinstance(n, A.Name):
                    continue
                v = self.binding(n.name)
                if isinstance(v, Bounded) and self.block_level(v.value).shape:
                    return True
                if isinstance(v, Value) and self.block_level(v.expr).shape:
                    return True  # a value of the thread (``int r = p # t;``)
        return False

    def named_anywhere(self, name: str) -> bool:
        """Does the kernel spell ``name`` anywhere (a read of a copy's future, a wait on it, a
        ``swap`` or ``rotate`` of it)?"""
        for n in self.top.walk():
            if (isinstance(n, A.Name) and n.name == name) or (isinstance(n, A.Swap) and name in n.names):
                return True
        return False

    def lane_copy(self, s: A.DmaStmt) -> None:
        """A copy of per-thread views: into each thread's own fresh local buffer, or out of it (a
        ``dma.pad`` of a thread's window into its own fresh buffer too)."""
        if (
            s.op not in ("copy", "pad", "transp")
            or any(a.name not in NEUTRAL_ATTRS for a in s.attrs)
            or s.engine != "dma"
        ):
            raise NotLifted("a per-thread copy other than a plain dma.copy, dma.transp or dma.pad", s)
        self.lane_views = True
        try:
            src = self.place(s.src)
            dst = None if s.dst_storage else self.place(s.dst)
        finally:
            self.lane_views = False
        if s.dst_storage and s.result is None:
            return  # a copy nothing reads: no effect to keep
        pad = self.pad_borders(s, src) if s.op == "pad" else None
        if pad is not None and not constant_borders(pad):
            raise NotLifted("a per-thread dma.pad with a run-time border", s)
        if pad is not None and not (s.dst_storage and isinstance(src, Region)):
            raise NotLifted("a per-thread dma.pad other than of a thread's window into its own fresh buffer", s)
        perm = self.permutation(s, src)  # destination dimension k is the source's perm[k]
        if s.op == "transp" and not (s.dst_storage and isinstance(src, Region)):
            raise NotLifted("a per-thread dma.transp other than of a thread's window into its own fresh buffer", s)
        if s.dst_storage and isinstance(src, BufferView) and not src.whole:  # a thread's part of a shared buffer
            storage = unparen(s.dst).name if isinstance(unparen(s.dst), A.Name) else None  # type: ignore[attr-defined]
            extents = tuple(const_int(n) for n in src.shape)
            if storage not in STORAGES or None in extents or any(n < 1 for n in extents):  # type: ignore[operator]
                why, hint = _lane_copy_refusal(storage, extents)
                raise NotLifted(why, s, hint)
            buf = self.give_home(self.new_buffer(s.result or "buf", src.buffer.elem, extents, 0, s), storage, s)
            if buf.home is None or buf.home.lane is None:
                raise NotLifted("a per-thread copy into a buffer the threads share", s)
            self.lane_part_move(src, buf, True, s)
            if s.result:
                self.scopes[-1][s.result] = CopyFuture(self.whole_buffer(buf))
            return
        if isinstance(src, BufferView) and isinstance(dst, BufferView) and src.whole:
            buf = src.buffer  # a thread's own buffer into its part of a shared one
            if buf.home is None or buf.home.lane is None:
                raise NotLifted("a per-thread copy out of a buffer the threads share", s)
            copy_shapes(buf.sizes, buf.sizes, dst.shape, s)  # a larger source: the user's error
            if tuple(const_int(x) for x in dst.shape) != buf.extents:
                raise NotLifted("a per-thread copy between windows of different shapes", s)
            same_elements(buf.elem, dst.buffer.elem, s)
            self.lane_part_move(dst, buf, False, s)
            return
        if s.dst_storage and isinstance(src, Region):
            storage = unparen(s.dst).name if isinstance(unparen(s.dst), A.Name) else None  # type: ignore[attr-defined]
            extents = self.place_shape(src)
            if storage == "local" and None in extents and pad is None and s.op == "copy":
                self.lane_copy_of_launch_extent(src, s)  # a window of run-time extent: a tile the launcher fixes
                return
            if storage not in STORAGES or None in extents or any(n < 1 for n in extents):  # type: ignore[operator]
                why, hint = _lane_copy_refusal(storage, extents)
                raise NotLifted(why, s, hint)
            if pad is not None:
                extents = tuple(padded_extent(n, c, pad) for c, n in enumerate(extents))
            extents = tuple(extents[c] for c in perm)
            elem = self.host.tensors[src.tensor].elem
            # each unit copies its own window into a fresh buffer only its future names: a fresh
            # 'shared' buffer of one unit's copy is no other unit's, each unit's own as a local one
            name = s.result or "buf"
            if storage == "shared" and name not in self.scratch_names:
                raise NotInRegisters("a unit's own copy into fresh shared memory", name, s)
            own = "local" if storage == "shared" else storage
            buf = self.give_home(self.new_buffer(name, elem, extents, 0, s), own, s)
            if buf.home is None or buf.home.lane is None:
                raise NotLifted("a per-thread copy into a buffer the threads share", s)
            self.lane_move(src, buf, True, s, pad, perm)
            if s.result:
                self.scopes[-1][s.result] = CopyFuture(self.whole_buffer(buf))
            return
        if isinstance(src, Region) and isinstance(dst, BufferView) and dst.whole and _own(dst.buffer):
            buf = dst.buffer  # a thread's window into its own (declared) buffer
            copy_shapes(src.shape, src.shape, buf.sizes, s)  # a larger source: the user's error
            if self.place_shape(src) != buf.extents:
                raise NotLifted("a per-thread copy between windows of different shapes", s)
            same_elements(self.host.tensors[src.tensor].elem, buf.elem, s)
            self.lane_move(src, buf, True, s)
            return
        if isinstance(src, BufferView) and isinstance(dst, Region) and src.whole:
            buf = src.buffer
            if buf.home is None or buf.home.lane is None:
                raise NotLifted("a per-thread copy out of a buffer the threads share", s)
            copy_shapes(buf.sizes, buf.sizes, dst.shape, s)  # a larger source: the user's error
            if not buf.fixed:  # of run-time shape: the window's extents are the buffer's
                if len(dst.shape) != len(buf.sizes) or not all(
                    E.same(E.fold(a), E.fold(b)) for a, b in zip(dst.shape, buf.sizes, strict=True)
                ):
                    raise NotLifted("a per-thread copy between windows of different shapes", s)
            elif tuple(const_int(x) for x in dst.shape) != buf.extents:
                raise NotLifted("a per-thread copy between windows of different shapes", s)
            same_elements(buf.elem, self.host.tensors[dst.tensor].elem, s)
            self.lane_move(dst, buf, False, s)
            return
        if isinstance(src, Region) and isinstance(dst, BufferView) and not dst.whole:
            self.lane_through_own(src, dst, True, s)  # a unit's window into its part of a shared buffer
            return
        if isinstance(src, BufferView) and isinstance(dst, Region) and not src.whole and not s.dst_storage:
            self.lane_through_own(dst, src, False, s)  # its part of a shared buffer out to its window
            return
        raise NotLifted("a per-thread copy of this form (a thread's window into or out of its own buffer)", s)

    def lane_copy_of_launch_extent(self, src: Region, s: A.DmaStmt) -> None:
        """``l = dma.copy WINDOW => local`` per thread where the window's extents are known only at
        launch (a row of ``N`` elements): each thread's own buffer of those extents in scratch memory,
        its tile of the launcher's power of two at or above each (lift/buffers.py ``launch_buffer``,
        the lanes counted in the launcher's size check); the elements past the window's extents are
        neither read nor written (lift/lanecopies.py ``_inside``)."""
        sizes = tuple(src.shape)
        elem = self.host.tensors[src.tensor].elem
        name = s.result or "buf"
        lanes = 1
        for n in self.lanes[1] if self.lanes is not None else ():
            if not isinstance(n, int):
                raise NotLifted("a thread's local array under lanes whose count is fixed at launch", s)
            lanes *= n
        buf = self.give_home(self.launch_buffer(name, elem, sizes, s, lanes), "local", s)
        if buf.home is None or buf.home.lane is None:
            raise NotLifted("a per-thread copy into a buffer the threads share", s)
        self.lane_move(src, buf, True, s)
        if s.result:
            self.scopes[-1][s.result] = CopyFuture(self.whole_buffer(buf))

    def lane_through_own(self, window: Region, part: BufferView, into: bool, s: A.DmaStmt) -> None:
        """Each unit's window of a tensor into (``into``) or out of its part of a buffer the units
        share (``quad[qi][qj]``, ``tile.chunkat(w, _)``): through a copy of its own, the two copies
        this form is made of (the part of the shared buffer in scratch memory)."""
        extents = self.place_shape(window)
        part_extents = tuple(const_int(part.shape[d]) for d in part.axes)
        if None in extents or any(n < 1 for n in extents) or extents != part_extents:  # type: ignore[operator]
            raise NotLifted("a per-thread copy between a window and a part of a buffer of other shapes", s)
        elem = self.host.tensors[window.tensor].elem
        if into:
            same_elements(elem, part.buffer.elem, s)
        else:
            same_elements(part.buffer.elem, elem, s)
        name = f"_{part.buffer.name}_own"
        if name not in self.scratch_names:
            raise NotInRegisters("a unit's own copy of its part of a shared buffer", name, s)
        buf = self.give_home(self.new_buffer(name, elem, extents, 0, s), "local", s)
        if buf.home is None or buf.home.lane is None:
            raise NotLifted("a per-thread copy into a buffer the threads share", s)
        # the two copies move the lanes' copies as tiles of one shape, yet Triton lays the store of the
        # one and the load of the other out apart (an element on two threads: wrong on an H100,
        # 2026-12-07, tests/test_probe5.py b_quadrants): the block's threads meet in between
        if into:
            self.lane_move(window, buf, True, s)
            self.emit(N.Barrier(), s)
            self.lane_part_move(part, buf, False, s)
        else:
            self.lane_part_move(part, buf, True, s)
            self.emit(N.Barrier(), s)
            self.lane_move(window, buf, False, s)

    def owners_match(self, buf: TileBuffer, node: A.Node) -> None:
        """A per-thread copy moves each lane's own copy of ``buf``: refused where deeper threads
        than these write their copies apart (lift/scratch.py ``owner_lanes``)."""
        if _owners_differ(buf, self.lanes[1] if self.lanes is not None else None):
            raise NotLifted(
                f"a per-thread copy of the local buffer '{buf.name}' under thread levels other than those"
                " that write it apart",
                node,
            )

    def lane_move(
        self,
        window: Region,
        buf: TileBuffer,
        into: bool,
        node: A.DmaStmt,
        pad: Pad | None = None,
        perm: tuple[int, ...] | None = None,
    ) -> None:
        """Every lane's ``window`` of the tensor into (``into``) or out of its copy of ``buf``; with
        ``pad`` (``dma.pad`` into the buffer) the window's elements land among the borders and the
        interior padding, which read the pad value; with ``perm`` (``dma.transp``) the buffer's
        dimension k is the window's ``perm[k]``."""
        assert self.lanes is not None and buf.home is not None and buf.home.lane is not None
        self.owners_match(buf, node)
        parent = window.reshaped.parent if window.reshaped is not None else None
        while parent is not None:  # a span_as view: its tensor's index is the lifted one's, re-split
            if any(o.shape for o in parent.origin):
                raise NotLifted("a per-thread copy of a span_as view of a per-thread window", node)
            parent = parent.reshaped.parent if parent.reshaped is not None else None
        if window.steps is not None:
            raise NotLifted("a per-thread copy of a view with explicit strides", node)
        lanes = len(self.lanes[1])
        rank = lanes + len(buf.extents)
        shape = (*(int(n) for n in self.lanes[1]), *buf.tile)
        coords = self.coords(shape, node)[lanes:]  # the window's axes, after the lanes'
        index = [_lifted(o, lanes, rank, node) for o in window.origin]
        # the bounds of a window that depend on the thread (``view(1, n).from(t, 0)``) on the lanes' axes too
        limits = tuple(
            (d, _lifted(lo, lanes, rank, node), _lifted(hi, lanes, rank, node)) for d, lo, hi in window.limits
        )
        window = dataclasses.replace(window, limits=limits)
        holds: list[E.Expr] = []  # a padded copy: the positions that hold an element of the window
        order = perm or tuple(range(len(window.axes)))
        for r, d in enumerate(window.axes):
            at: E.Expr = coords[order.index(r)]  # the buffer's axis that runs along the window's r
            if pad is not None:
                at, terms = padded_at(E.fold(E.Bin("-", at, E.Const(pad[0][r]))), r, pad, window.shape[r])
                holds += terms
            index[d] = E.fold(E.Bin("+", index[d], at))
        _, ptr = self.tensor(A.Name(window.tensor))
        inside = _inside(coords, buf)
        enclosing = [_lifted(t, lanes, rank, node) for t in self.pred + self.padding]
        idx, within = self.tensor_index(window, index, node)
        t_mask = self.named_mask(within + holds + inside + enclosing, node)
        home = buf.home
        lane = _lifted(home.lane, lanes, rank, node)
        addr, _ = self.scratch_address(buf, coords, node, masked=False, lane=lane)
        b_mask = self.named_mask(inside + enclosing, node)
        var = E.Var(self.fresh(f"{buf.name}_lanes"), ptr.dtype if into else buf.var.type, dims=shape)
        if into:  # outside the tensor: zero, or NaN under the OOB sanitizer (not .zfill)
            other = outside(ptr.dtype, 0) if t_mask is not None else None
            zfill = any(a.name == "zfill" for a in node.attrs)
            self.emit(N.Load(var, ptr.name, idx, t_mask, other, nan_outside=not zfill), node)
            value: E.Expr = var
            if pad is not None:  # the borders and the elements between take the pad value
                fill = E.Full(shape, outside(ptr.dtype, pad[2]), ptr.dtype)
                value = E.Where(E.fold(E.conj(holds)), var, fill)
            self.emit(N.Store(home.arg, (spread(addr, shape, addr.dtype),), value, b_mask), node)
        else:
            self.emit(N.Load(var, home.arg, (spread(addr, shape, addr.dtype),), b_mask), node)
            self.emit(N.Store(ptr.name, idx, E.fold(E.Cast(var, ptr.dtype)), t_mask), node)

    def lane_part_move(self, part: BufferView, buf: TileBuffer, into: bool, node: A.DmaStmt) -> None:
        """Every lane's ``part`` of a buffer the threads share (in scratch memory) into (``into``) or
        out of its own copy of ``buf``."""
        assert self.lanes is not None and buf.home is not None and buf.home.lane is not None
        self.owners_match(buf, node)
        shared = part.buffer
        if shared.home is None or shared.home.lane is not None or shared.part is not None:
            raise NotLifted("a per-thread copy with a part of a buffer kept in registers", node)
        lanes = len(self.lanes[1])
        rank = lanes + len(buf.extents)
        shape = (*(int(n) for n in self.lanes[1]), *buf.tile)
        coords = self.coords(shape, node)[lanes:]  # the part's axes, after the lanes'
        index = [_lifted(o, lanes, rank, node) for o in part.offsets]
        for r, d in enumerate(part.axes):
            index[d] = E.fold(E.Bin("+", index[d], coords[r]))
        inside = [E.Bin("<", c, E.Const(n)) for c, n in zip(coords, buf.extents, strict=True) if n != pow2(n)]
        enclosing = [_lifted(t, lanes, rank, node) for t in self.pred + self.padding]
        within = [
            t for i, n in zip(index, shared.sizes, strict=True) for t in (E.Bin(">=", i, E.Const(0)), E.Bin("<", i, n))
        ]
        s_addr, _ = self.scratch_address(shared, index, node, masked=False)
        s_mask = self.named_mask(within + inside + enclosing, node)
        lane = _lifted(buf.home.lane, lanes, rank, node)
        b_addr, _ = self.scratch_address(buf, coords, node, masked=False, lane=lane)
        b_mask = self.named_mask(inside + enclosing, node)
        s_addr, b_addr = spread(s_addr, shape, s_addr.dtype), spread(b_addr, shape, b_addr.dtype)
        src, dst = (
            ((shared, s_addr, s_mask), (buf, b_addr, b_mask))
            if into
            else ((buf, b_addr, b_mask), (shared, s_addr, s_mask))
        )
        var = E.Var(self.fresh(f"{buf.name}_lanes"), src[0].var.type, dims=shape)
        other = outside(src[0].var.type, 0) if into and s_mask is not None else None
        self.emit(N.Load(var, src[0].home.arg, (src[1],), src[2], other), node)  # type: ignore[union-attr]
        self.emit(N.Store(dst[0].home.arg, (dst[1],), E.fold(E.Cast(var, dst[0].var.type)), dst[2]), node)  # type: ignore[union-attr]


def _inside(coords: list[E.Expr], buf: TileBuffer) -> list[E.Expr]:
    """The terms that keep a position of ``buf``'s tile inside its extents: along a padded constant
    extent, and along an extent known only at launch (its tile the power of two at or above it)."""
    out: list[E.Expr] = []
    launch = buf.launch or (None,) * len(buf.extents)
    for c, n, size, fixed_at in zip(coords, buf.extents, buf.sizes, launch, strict=True):
        if fixed_at is not None:
            out.append(E.Bin("<", c, size))
        elif n != pow2(n):
            out.append(E.Bin("<", c, E.Const(n)))
    return out


def _own(buf: TileBuffer) -> bool:
    """Is ``buf`` a thread's own array (a copy per lane in scratch memory)?"""
    return buf.home is not None and buf.home.lane is not None


def _owners_differ(buf: TileBuffer, lanes: tuple[Any, ...] | None) -> bool:
    """Are the threads whose copies of ``buf`` are written apart (``ScratchHome.owners``) other
    than the lanes here?"""
    owners = buf.home.owners if buf.home is not None else None
    return owners is not None and tuple(lanes or ()) != owners


def _lifted(e: E.Expr, lanes: int, rank: int, node: A.Node) -> E.Expr:
    """A value of the lanes (rank ``lanes``, or one value) placed on the leading axes of a tile of ``rank``."""
    if not e.shape:
        return e
    if len(e.shape) != lanes:
        raise NotLifted("a per-thread copy under lanes of another arrangement", node)
    return E.Lift(e, rank, tuple(range(lanes)))


def _lane_copy_refusal(storage: str | None, extents: tuple[int | None, ...]) -> tuple[str, str | None]:
    """Why a per-thread copy into fresh memory is refused (its extent, or the memory it names), and
    the hint."""
    if storage not in STORAGES:
        return f"a per-thread copy into fresh '{storage}' memory (a thread's own buffer is 'local' or 'shared')", None
    if None in extents:
        return (
            "a per-thread copy of a window whose extents are known only at launch into the thread's own buffer"
            " (croq2triton keeps each thread's buffer in constant extents)",
            "give each thread's window constant extents (x.subspan(16).at(p # q), with a grid that covers the"
            " tensor), or read and write its elements with '.at' in a loop over the window",
        )
    return "a per-thread copy of no elements", None
