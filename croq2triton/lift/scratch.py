"""Buffers in per-program scratch memory (lift/placement.py decides which), as a mixin of the
kernel lifter (lift/kernel.py).

A scratch buffer is an area of global memory per program (a :class:`~croq2triton.tir.nodes.Scratch`
argument the launcher allocates for the whole grid), laid out row-major by the buffer's declared
extents; a ``local`` buffer declared inside lanes has one copy per lane, the lanes the fastest
index (neighbouring threads touch neighbouring words).  Element reads and writes are loads and
stores at the element's address, masked by the enclosing conditions, the lanes that only pad a
level, and the buffer's bounds; whole-tile work (copies in and out) loads or stores the tile.

The source's threads meet at its ``sync`` statements; the lifted program runs statement after
statement for all lanes, so it needs its own barriers between the lanes' accesses: lift/hazards.py
places them once the kernel is built (none for a thread's own array).
"""

from __future__ import annotations

from typing import Any

from ..errors import CroqSemanticError, Diagnostic
from ..frontend import ast as A
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import ScratchHome, TileBuffer, pow2, shared_element, spread
from .bufferviews import element_count, flat_position
from .notlifted import NotLifted
from .terms import const_int, element_base


def _racy(addr: tuple[Any, ...], value: tuple[Any, ...], mask: tuple[Any, ...], rank: int) -> bool:
    """Does a store of ``value`` at ``addr`` under ``mask`` (shapes, broadcast to ``rank``) write
    one address from lanes whose values differ, none of them singled out by the mask?"""

    def at(shape: tuple[Any, ...], d: int) -> Any:
        full = (1,) * (rank - len(shape)) + tuple(shape)
        return full[d]

    return any(at(addr, d) == 1 and at(value, d) != 1 and at(mask, d) == 1 for d in range(rank))


def is_view(buf: TileBuffer) -> bool:
    """Is ``buf`` a view of a buffer whose elements may lie outside the area it views (a part at a
    run-time origin, a strided or rank-changing view)?"""
    return buf.part is not None or buf.steps is not None


def _always(term: E.Expr) -> bool:
    """Does the comparison ``term`` hold for every value of its variables (by their ranges)?"""
    t = E.fold(term)
    if isinstance(t, E.Const):
        return bool(t.value)
    if not isinstance(t, E.Bin) or t.op not in ("<", ">="):
        return False
    (lo_l, hi_l), (lo_r, hi_r) = E.bounds(t.lhs), E.bounds(t.rhs)
    if t.op == "<":
        return hi_l is not None and lo_r is not None and hi_l < lo_r
    return lo_l is not None and hi_r is not None and lo_l >= hi_r


class ScratchBuffers:
    warnings: list[Diagnostic]
    scratch_names: set[str]
    args: dict[str, N.Arg]
    lanes: tuple[int, tuple[Any, ...]] | None
    pred: list[E.Expr]
    padding: list[E.Expr]
    program_ids: tuple[E.Var, ...]
    fresh: Any
    emit: Any
    expr: Any
    convert: Any
    binary: Any
    named: Any
    mask_of: Any
    in_tensor: Any
    coords: Any
    host_of: Any
    index_args: Any
    check_access: Any
    own_lanes: dict[str, Any]
    fixed_bound: Any
    apply_scopes: list[int]
    binding: Any

    def give_home(self, buf: TileBuffer, storage: str, node: A.Node, filled: bool = False) -> TileBuffer:
        """``buf`` in scratch memory where the placement says so (else as it is); ``filled``: the
        declaration gives a fill, stored wherever it stands (in a loop: every iteration)."""
        if buf.name not in self.scratch_names:
            return buf
        lanes: tuple[Any, ...] = ()
        owners = self.owner_lanes(buf.name, node) if storage == "local" else None
        if owners is not None:
            lanes = owners  # written apart by the threads of levels inside its declaration's
        elif storage == "local" and self.lanes is not None and any(n != 1 for n in self.lanes[1]):
            lanes = self.lanes[1]  # a thread's own array: one copy per lane
        # the copies along each lane axis: its lanes, or where they are fixed at launch (``parallel t
        # by T``) the level's count, the lanes past it (padding) never reaching their copies
        counts: list[E.Expr] = []
        for n in lanes:
            count = E.Const(n) if isinstance(n, int) else self.lane_counts.get(getattr(n, "name", ""))
            if count is None:
                raise NotLifted("a thread's local array under lanes whose count is fixed at launch", node)
            counts.append(count)
        copies: int | E.Expr = 1
        for c in counts:
            if isinstance(copies, int) and isinstance(c, E.Const) and isinstance(c.value, int):
                copies *= c.value
            else:
                copies = E.fold(E.Bin("*", copy_count(copies), c))
        elements: E.Expr = copy_count(copies)
        for n in buf.sizes:
            elements = E.fold(E.Bin("*", elements, n))
        host = self.host_of(elements)  # extents known at launch: the launcher sizes the area
        if host is None:
            raise NotLifted("a buffer in scratch memory whose size the launcher cannot compute", node)
        arg = self.fresh(f"{buf.var.name}_scratch")
        self.args[arg] = N.Scratch(arg, buf.var.type, host, copies)
        program: E.Expr = E.Const(0)
        stride: E.Expr = E.Const(1)
        for axis, pid in enumerate(self.program_ids):
            program = E.Bin("+", program, E.Bin("*", pid, stride))
            stride = E.Bin("*", stride, E.Call("num_programs", (E.Const(axis),), "i32"))
        base = E.Var(self.fresh(f"{buf.var.name}_base"), "i64", lo=0)
        self.emit(N.Let(base, E.fold(E.Bin("*", E.Cast(E.fold(program), "i64"), elements))), node)
        lane: E.Expr | None = None
        if lanes:
            lane = E.Const(0)
            step: E.Expr = E.Const(1)
            for axis in reversed(range(len(lanes))):
                at = E.Arange(lanes[axis]) if len(lanes) == 1 else E.Lift(E.Arange(lanes[axis]), len(lanes), (axis,))
                lane = E.Bin("+", lane, E.Bin("*", at, step))
                step = E.fold(E.Bin("*", step, counts[axis]))
            lane = self.named(E.fold(lane), "lane_id", node)
        buf.home = ScratchHome(arg, base, lane, copies, owners)
        if filled:
            self.scratch_store_tile(buf, E.Full(buf.tile, buf.fill, buf.var.type), node)
        return buf

    def owner_lanes(self, name: str, node: A.Node) -> tuple[int, ...] | None:
        """The lanes' tile shape of the threads that write their copies of the ``local`` buffer
        ``name`` apart, where they are levels inside its declaration's (lift/placement.py
        ``OwnLanes``; LANGUAGE.md 7.5: each thread has its own copy), None where there are none."""
        own = self.own_lanes.get(name)
        if not own:
            return None
        shape: tuple[int, ...] | None = None
        for o in own:
            sizes = []
            for b in o.levels:
                for x in b.bound:
                    n = self.fixed_bound(x)
                    if n is None or n < 1:
                        raise NotLifted(
                            f"the local buffer '{name}', each thread's own, written by a thread level whose count is"
                            " known only at launch",
                            x,
                            hint="give the thread level a constant count (each thread's copies are laid out by it)",
                        )
                    sizes.append(pow2(n))
            lanes = (*sizes, *(1,) * (o.rank - len(sizes)))
            try:
                shape = lanes if shape is None else E.broadcast(shape, lanes)
            except E.ShapeError:
                raise NotLifted(
                    f"the local buffer '{name}', each thread's own, written by thread levels of different shapes"
                    " (each level's lanes number the block's threads its own way)",
                    node,
                    hint=f"declare '{name}' inside the thread-level 'parallel' that uses it",
                ) from None
        return shape if shape is not None and any(n != 1 for n in shape) else None

    def owned_here(self, buf: TileBuffer, node: A.Node, write: bool) -> None:
        """Refuse an access of a thread's own array whose copies deeper threads write apart
        (``ScratchHome.owners``) where the lanes here do not match theirs: a read outside them
        has no one value (each thread's copy is its own), and a write inside other lanes would go
        to copies that are not its threads'."""
        home = buf.home
        if home is None or home.owners is None:
            return
        if self.lanes is not None and self.lanes[0] in self.apply_scopes:  # lanes of elements, not threads
            raise NotLifted(f"an element access of the local buffer '{buf.name}' inside 'apply'", node)
        here = tuple(self.lanes[1]) if self.lanes is not None else ()
        if write and E.fits_in(here, home.owners):
            return  # the threads' copies all written (a block's statement: every thread runs it)
        if not write and len(here) == len(home.owners) and E.fits_in(home.owners, here):
            return
        if write:
            raise NotLifted(
                f"a write of the local buffer '{buf.name}' under thread levels other than those that write it apart",
                node,
            )
        raise NotLifted(
            f"a read of the local buffer '{buf.name}' outside the threads that write it: 'local' memory is each"
            " thread's own (LANGUAGE.md 7.5) and the threads of a thread-level 'parallel' inside its declaration"
            " write their copies apart, so here it has no one value",
            node,
            hint=f"read '{buf.name}' inside that thread-level 'parallel', or declare it 'shared' for one buffer of"
            " the block",
        )

    def touches_owned(self, n: A.Node) -> bool:
        """Does ``n`` access an element of a thread's own array whose copies deeper threads write
        apart (``ScratchHome.owners``)?  A loop over its elements is then no map (lift/maps.py):
        its lanes would be taken for those threads."""
        for x in n.walk():
            if isinstance(x, A.At) and (name := element_base(x.base)) is not None:
                buf = self.binding(name)
                if isinstance(buf, TileBuffer) and buf.home is not None and buf.home.owners is not None:
                    return True
        return False

    # ------------------------------------------------------------ addresses and barriers
    def scratch_address(
        self, buf: TileBuffer, index: list[E.Expr], node: A.Node, masked: bool = True, lane: E.Expr | None = None
    ) -> tuple[E.Expr, E.Var | None]:
        """The address of ``buf``'s element at ``index`` and its mask: the enclosing conditions,
        the padding lanes and the buffer's bounds (a read or write outside it touches nothing);
        ``lane``: the lane index of a thread's own array placed as ``index`` needs it (else the
        buffer's own)."""
        home = buf.home
        assert home is not None
        terms = self.scratch_bounds(buf, index)
        if buf.part is not None:  # a part of a buffer: at its origin in the buffer
            index, buf = buf.part.in_buffer(index), buf.part.buffer
        flat = flat_position(buf, index)  # row-major, or along a strided view's steps
        if home.lane is not None:
            flat = E.Bin("+", E.Bin("*", flat, copy_count(home.copies)), home.lane if lane is None else lane)
        mask = self.mask_of(terms, node, self.padding) if masked else None
        return E.fold(E.Bin("+", home.base, flat)), mask

    def scratch_bounds(self, buf: TileBuffer, index: list[E.Expr]) -> list[E.Expr]:
        """The terms that keep element ``index`` of ``buf`` inside it and, for a view of a buffer (a
        part, a window, a strided view), inside the area it views: an element outside reads zero and
        is not written (LANGUAGE.md 14.3)."""
        terms = self.in_tensor(index, buf.sizes, ())
        if buf.part is not None:
            terms += self.scratch_bounds(buf.part.buffer, buf.part.in_buffer(index))
        if buf.steps is not None:
            flat = flat_position(buf, index)
            terms += [E.Bin(">=", flat, E.Const(0)), E.Bin("<", flat, element_count(buf))]
        return terms

    # ------------------------------------------------------------ element accesses
    def scratch_index(self, at: A.At, buf: TileBuffer) -> list[E.Expr]:
        out = []
        indices = self.index_args(at.indices)
        for i in indices:
            v = self.expr(i)
            if v.ctype not in ("int", "bool", "s32", "s64", "u32", "u64", "s16", "s8", "u16", "u8"):
                raise NotLifted("a non-integer index", i)
            out.append(E.fold(v.expr))
        rank = len(buf.extents)
        if len(out) != rank:
            raise CroqSemanticError(f"{len(out)} index(es) for data of rank {rank}", at.span)
        self.check_access(buf.name, buf.sizes, out, indices)
        return out

    def scratch_read(self, buf: TileBuffer, at: A.At) -> Value:
        self.owned_here(buf, at, False)
        index = self.scratch_index(at, buf)
        addr, mask = self.scratch_address(buf, index, at)
        shape = E.broadcast(addr.shape, mask.shape if mask is not None else ())
        var = E.Var(self.fresh(f"{buf.var.name}_val"), buf.var.type, dims=shape)
        addr = spread(addr, shape, addr.dtype)
        other = 0 if mask is not None and is_view(buf) else None  # outside a view: zero
        self.emit(N.Load(var, buf.home.arg, (addr,), mask, other), at)  # type: ignore[union-attr]
        return Value(var, buf.elem)

    def scratch_write(self, buf: TileBuffer, at: A.At, a: A.Assign) -> None:
        self.owned_here(buf, at, True)
        value = self.expr(a.value)
        if a.op != "=":
            value = self.binary(a.op, self.scratch_read(buf, at), value, a)
        value = self.convert(value, buf.elem)
        index = self.scratch_index(at, buf)
        addr, mask = self.scratch_address(buf, index, at)
        wide = E.broadcast(addr.shape, value.expr.shape, mask.shape if mask is not None else ())
        if _racy(addr.shape, value.expr.shape, mask.shape if mask is not None else (), len(wide)):
            self.warnings.append(
                Diagnostic(
                    "warning",
                    f"threads write one element of '{buf.name}' with values that differ between them: a race (one"
                    " thread's value is kept, as a GPU keeps one)",
                    a.span,
                    "add with '__atomic_add', or let one thread write (an 'if' on the thread index)",
                )
            )
        (addr,) = shared_element((addr,), wide)
        self.emit(N.Store(buf.home.arg, (addr,), value.expr, mask), a)  # type: ignore[union-attr]

    # ------------------------------------------------------------ whole tiles
    def tile_address(self, buf: TileBuffer, node: A.Node, write: bool = False) -> tuple[E.Expr, E.Var | None]:
        if buf.home is not None and buf.home.lane is not None:
            self.owned_here(buf, node, write)  # a read outside its owners: why it has no one value
            raise NotLifted("a thread's local array moved as a whole tile", node)
        coords = self.coords(buf.tile, node)
        pad = [E.Bin("<", c, n) for c, n, t in zip(coords, buf.sizes, buf.tile, strict=True) if const_int(n) != t]
        if is_view(buf):  # a view of a buffer: its elements outside the area it views are left alone
            pad = [t for t in self.scratch_bounds(buf, coords) if not _always(t)]
        addr, _ = self.scratch_address(buf, coords, node, masked=False)
        mask = None if not pad else self.named(E.fold(E.conj(pad)), "mask", node)
        return addr, mask

    def scratch_tile(self, buf: TileBuffer, node: A.Node) -> E.Var:
        """The buffer's tile, loaded from scratch memory (a fresh load each time: element writes
        may have changed it)."""
        addr, mask = self.tile_address(buf, node)
        buf.var = E.Var(self.fresh(f"{buf.name}_tile"), buf.var.type, dims=buf.tile)
        other = 0 if mask is not None and is_view(buf) else None  # outside a view: zero
        self.emit(N.Load(buf.var, buf.home.arg, (addr,), mask, other), node)  # type: ignore[union-attr]
        return buf.var

    def scratch_store_tile(self, buf: TileBuffer, value: E.Expr, node: A.Node) -> None:
        value = E.fold(value)
        if isinstance(value, E.Full):  # one value in every element
            value = E.Const(value.value, value.type)
        lanes = tuple(self.lanes[1]) if self.lanes is not None else None
        if (
            buf.home is not None
            and buf.home.lane is not None
            and (all(n == 1 for n in value.shape) or value.shape == lanes)
        ):
            self.scratch_fill_lanes(buf, value, node)
            return
        addr, mask = self.tile_address(buf, node, True)
        self.emit(N.Store(buf.home.arg, (addr,), spread(E.fold(value), buf.tile, buf.var.type), mask), node)  # type: ignore[union-attr]

    def scratch_fill_lanes(self, buf: TileBuffer, value: E.Expr, node: A.Node) -> None:
        """A thread's own array filled with one value (``local f32 [4] acc{v}``): every lane's copy
        holds the same elements, so the program's whole area is stored at once, whatever its layout
        (lift/hazards.py puts a barrier before the lanes' own accesses: the shapes differ)."""
        home = buf.home
        assert home is not None and buf.part is None and buf.origin is None
        if not isinstance(home.copies, int):
            self.scratch_fill_launch_lanes(buf, value, node)
            return
        total: E.Expr = E.Const(home.copies)
        for n in buf.sizes:
            total = E.fold(E.Bin("*", total, n))
        count = const_int(total)
        if count is None:
            raise NotLifted("a thread's local array of run-time size filled with a value", node)
        if value.shape and any(n != 1 for n in value.shape):  # each thread's own value: element i of lane l
            assert home.lane is not None  # is at i * copies + l
            count //= home.copies
            rank = 1 + len(value.shape)
            width = 1 << max(count - 1, 0).bit_length()
            at = E.Lift(E.Arange(width), rank, (0,))
            axes = tuple(range(1, rank))
            addr = E.fold(
                E.Bin("+", home.base, E.Bin("+", E.Bin("*", at, E.Const(home.copies)), E.Lift(home.lane, rank, axes)))
            )
            shape = (width, *value.shape)
            wide = E.Lift(E.Cast(value, buf.var.type), rank, axes)
            mask = None if width == count else self.named(E.Bin("<", at, E.Const(count)), "mask", node)
            self.emit(
                N.Store(home.arg, (spread(addr, shape, addr.dtype),), spread(E.fold(wide), shape, buf.var.type), mask),
                node,
            )
            return
        width = 1 << max(count - 1, 0).bit_length()
        at = self.named(E.Arange(width), "fill_idx", node)
        mask = None if width == count else self.named(E.Bin("<", at, E.Const(count)), "mask", node)
        addr = E.fold(E.Bin("+", home.base, at))
        self.emit(N.Store(home.arg, (addr,), spread(value, (width,), buf.var.type), mask), node)

    def scratch_fill_launch_lanes(self, buf: TileBuffer, value: E.Expr, node: A.Node) -> None:
        """A thread's own array filled with one value where its lanes are fixed at launch (``parallel
        t by T``): element ``i`` of each lane ``l`` below the count, at ``i * copies + l`` (a lane
        past the count, padding, would reach another's copy: masked off)."""
        home = buf.home
        assert home is not None and home.lane is not None
        per: E.Expr = E.Const(1)
        for n in buf.sizes:
            per = E.fold(E.Bin("*", per, n))
        count = const_int(per)
        if count is None:
            raise NotLifted("a thread's local array of run-time size filled with a value", node)
        lanes = tuple(home.lane.shape)
        rank = 1 + len(lanes)
        width = 1 << max(count - 1, 0).bit_length()
        at = E.Lift(E.Arange(width), rank, (0,))
        axes = tuple(range(1, rank))
        lane_at = E.Lift(home.lane, rank, axes)
        addr = E.fold(E.Bin("+", home.base, E.Bin("+", E.Bin("*", at, copy_count(home.copies)), lane_at)))
        shape = (width, *lanes)
        wide = E.Lift(spread(E.Cast(value, buf.var.type), lanes, buf.var.type), rank, axes)
        terms = [E.Lift(t, rank, axes) if t.shape else t for t in self.padding]
        if width != count:
            terms.append(E.Bin("<", at, E.Const(count)))
        mask = self.named(E.fold(E.conj(terms)), "mask", node) if terms else None
        self.emit(
            N.Store(home.arg, (spread(addr, shape, addr.dtype),), spread(E.fold(wide), shape, buf.var.type), mask),
            node,
        )


def copy_count(copies: int | E.Expr) -> E.Expr:
    """The number of a thread's own array's copies (ScratchHome.copies) as an expression."""
    return E.Const(copies) if isinstance(copies, int) else copies
