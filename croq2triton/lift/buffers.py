"""Buffers in the tile IR: ``shared`` / ``local`` buffers as register tiles, the views copies and
element accesses name (LANGUAGE.md 7.5, 7.6), as a mixin of the kernel lifter (lift/kernel.py).

A buffer is a register tile of the program, its extents padded to powers of two (how Triton holds
the data a block works on; LANGUAGE.md 9.2), bound at its first read or partial write.  A ``local``
buffer is per thread in the source, but every access lifted here reads each thread's copy where
all threads' copies agree, so one tile stands for all of them.

An element access of a buffer is lifted where each index is one thread lane over the buffer's
whole extent, in any order of the dimensions (``out.at(p) = ..`` under ``parallel p by 64`` with
``out`` of 64 elements; ``t.at(j, i) = s.at(i, j)`` is the tile transposed): a lane's element is then
its element of the tile.  Reads at other positions raise :class:`NotLifted`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..frontend.describe import describe
from ..tir import expr as E
from ..tir import host as H
from ..tir import nodes as N
from .arith import Value
from .checks import size_text
from .collapse import has_roles
from .host import ir_type
from .lanesums import added_term
from .notlifted import NotInRegisters, NotLifted
from .terms import Bounded, IndexTuple, Region, Reshaped, WithName, const_int, unparen
from .views import ViewAlgebra

STORAGES = ("shared", "local")


def view_shape(p: Place) -> tuple[E.Expr, ...]:
    """The extents of a view, one per dimension it keeps."""
    return p.shape if isinstance(p, Region) else tuple(p.shape[d] for d in p.axes)


SUM_TYPES = {"f8e4": "f32", "f8e5": "f32", "f16": "f32", "bf16": "f32"}  # what a tile of them is summed in


def spread(value: E.Expr, shape: tuple[int, ...], dtype: str) -> E.Expr:
    """``value`` broadcast to a tile of ``shape`` (a value that does not vary along some of its
    dimensions)."""
    return value if value.shape == shape else E.fold(E.Bin("+", value, E.Full(shape, 0, dtype)))


def pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def shared_element(index: tuple[E.Expr, ...], wide: E.Shape) -> tuple[E.Expr, ...]:
    """The address ``index`` of one element that lanes the value or a condition tells apart share
    (``out.at(t)`` under ``if (c == 0)``, ``sum.at(0)`` of an atomic): broadcast to their shape
    ``wide``, so each lane stores (or adds) its own and the masked-off ones do not."""
    if not index or E.broadcast(*(i.shape for i in index)) == wide:
        return index
    return (*index[:-1], spread(index[-1], wide, index[-1].dtype))


def strided_parts(
    op: A.ViewOp, rank: int, int_expr: Callable[[A.Expr], E.Expr]
) -> tuple[tuple[E.Expr, ...], tuple[E.Expr, ...], E.Expr, list[A.Expr] | None]:
    """The strides and extents of ``p.view(e.. : st..).from(o..)`` / ``p.subspan(e.. : st..)[.at(i..)]``
    (LANGUAGE.md 7.6), the offset of its origin past ``p``'s counted in strides (``sum o_d * st_d``) and the
    ``.at`` indices of a subspan, checked against a view ``p`` of ``rank`` dimensions."""
    strides = op.strides or []
    at = op.at if op.kind == "subspan" else None
    offsets = len(op.at or []) if op.kind == "view" else len(strides)
    if not len(op.args) == len(strides) == offsets or (at is not None and len(at) != rank):
        raise CroqSemanticError(
            f"'.{op.kind}' with {len(op.args)} extent(s), {len(strides)} stride(s)"
            + (f" and {len(op.at or [])} offset(s)" if op.kind == "view" else "")
            + (f" and {len(at)} index(es) of a view of {rank} dimension(s)" if at is not None else ""),
            op.span,
            "give one stride (and one offset) per extent, and one index per dimension of the view",
        )
    steps = tuple(int_expr(x) for x in strides)
    shape = tuple(int_expr(x) for x in op.args)
    flat: E.Expr = E.Const(0)
    if op.kind == "view":
        for o, st in zip(op.at or [], steps, strict=True):
            flat = E.Bin("+", flat, E.Bin("*", int_expr(o), st))
    return steps, shape, flat, at


def known_elements(extents: Iterable[int | None]) -> int:
    """The elements of a block along the extents known when translating (None: fixed at launch),
    each padded to a power of two: what the launcher multiplies the others by for its size check."""
    out = 1
    for n in extents:
        out *= pow2(n) if n else 1
    return out


@dataclass(frozen=True)
class ScratchHome:
    """Where a buffer in scratch memory lives (lift/scratch.py): the kernel's scratch argument,
    the program's first element, and for a thread's own array the lane's index among ``copies``
    (``owners``: the lanes' tile shape where the threads that write their copies apart are deeper
    levels than the buffer's declaration, whose own statements reach every copy)."""

    arg: str
    base: E.Var
    lane: E.Expr | None
    copies: int | E.Expr  # (an expression: lanes whose count is fixed at launch)
    owners: tuple[int, ...] | None = None


@dataclass(eq=False)
class TileBuffer:
    """A shared or local buffer: its element type, declared extents and the variable of its tile."""

    name: str
    elem: str
    extents: tuple[int, ...]  # its declared extents; see ``sizes`` for one of run-time shape
    var: E.Var
    fill: float | int = 0
    line: int = 0  # of its declaration
    defined: bool = False  # its variable is bound (at its first read or partial write)
    swizzle: tuple[int, int] | None = None  # (bytes, .co line) of the .swiz<N> of a copy that wrote it
    placing: tuple[str | None, ...] = ()  # per dimension, the unit whose tiles it concatenates (lift/units.py)
    # a buffer of run-time shape (a copy of a whole run-time window into fresh memory): per
    # dimension its size and the tile extent the launcher fixes (a constexpr argument); ``extents``
    # are then its constant sizes, 0 elsewhere, and only copies and views read it (``fixed``)
    launch: tuple[tuple[E.Expr, E.Dim] | None, ...] = ()
    home: ScratchHome | None = None  # in scratch memory (lift/scratch.py), not a register tile
    of: TileBuffer | None = None  # ``buf.span_as([..])``: the buffer whose elements it reshapes
    part: BufferView | None = None  # a part of a buffer in scratch memory, read and written by element
    origin: E.Expr | None = None  # a span_as of a part of a buffer in scratch memory: where it starts there
    # a strided or rank-changing view of a buffer in scratch memory (lift/bufferviews.py): per dimension
    # the elements of the area one step moves (from ``origin``), and the elements of the area it may reach
    steps: tuple[E.Expr, ...] | None = None
    room: E.Expr | None = None

    @property
    def fixed(self) -> bool:
        """Are its extents known when translating?"""
        return not any(self.launch)

    @property
    def sizes(self) -> tuple[E.Expr, ...]:
        """Its extents as expressions (run-time ones as the launcher passes them)."""
        if not self.launch:
            return tuple(E.Const(n) for n in self.extents)
        return tuple(E.Const(n) if x is None else x[0] for n, x in zip(self.extents, self.launch, strict=True))

    @property
    def tile(self) -> tuple[E.Dim, ...]:
        if not self.launch:
            return tuple(pow2(n) for n in self.extents)
        return tuple(pow2(n) if x is None else x[1] for n, x in zip(self.extents, self.launch, strict=True))


@dataclass(frozen=True)
class Ring:
    """An array of buffers (``shared f16 [64, 64] s[4]``): a stage ring of a pipeline, which only
    collapsed warp roles read and write (lift/collapse.py), as one buffer then."""

    name: str
    elem: str
    extents: tuple[int, ...]
    slots: int
    node: A.Node


@dataclass(frozen=True)
class BufferArray:
    """An array of buffers (``shared f16 [64, 64] buf[2]``) outside warp roles: one buffer whose
    first ``rank`` extents are the array's; ``buf[s]`` is its part at ``s`` (LANGUAGE.md 7.5)."""

    buffer: TileBuffer
    rank: int


@dataclass(frozen=True)
class BufferView:
    """A view of a buffer: per buffer dimension its offset and extent, and whether it is kept
    (``keep`` False: fixed by ``.at`` and squeezed away)."""

    buffer: TileBuffer
    offsets: tuple[E.Expr, ...]
    shape: tuple[E.Expr, ...]
    keep: tuple[bool, ...]

    @property
    def axes(self) -> tuple[int, ...]:
        return tuple(d for d, k in enumerate(self.keep) if k)

    def in_buffer(self, index: list[E.Expr]) -> list[E.Expr]:
        """The index in the buffer of the view's element ``index`` (one per kept dimension)."""
        inner = iter(index)
        return [E.fold(o + next(inner)) if k else o for o, k in zip(self.offsets, self.keep, strict=True)]

    @property
    def whole(self) -> bool:
        return all(k for k in self.keep) and all(
            const_int(o) == 0 and E.same(s, n)
            for o, s, n in zip(self.offsets, self.shape, self.buffer.sizes, strict=True)
        )


@dataclass(frozen=True)
class CopyFuture:
    """What ``f = dma.copy ..`` names: the destination it wrote (``f.data``, or ``f`` as a view)."""

    data: BufferView | Region


@dataclass(frozen=True)
class MmaFuture:
    """What ``f = mma.row.row.async ..`` names: the MMA, complete where it stands in the lifted
    program (``wait f`` has nothing to wait for)."""


Place = BufferView | Region


class Buffers(ViewAlgebra):
    """Buffers, views and element accesses of buffers; the lifter supplies scopes and expressions."""

    # supplied by the lifter (lift/kernel.py)
    body: list[N.Stmt]
    host: Any
    no_copy_read: Any
    args: dict[str, N.Arg]
    scopes: list[dict[str, Any]]
    pred: list[E.Expr]
    lane_summed: set[str]  # the buffers lanes have added to (lift/lanesums.py)
    apply_scopes: list[int]  # the scopes of the lanes of the ``apply`` loops being lifted
    lane_extents: dict[str, int]
    lane_axis: dict[str, int]
    lanes: tuple[int, tuple[int, ...]] | None
    expr: Any
    lookup: Any
    derived_bound: Any
    tensor: Any
    emit: Any
    claim: Any
    host_of: Any
    src_name: str
    convert: Any
    binary: Any
    scratch_names: set[str]
    give_home: Any
    buffer_strided: Any
    buffer_window: Any
    scratch_tile: Any
    scratch_store_tile: Any
    scratch_read: Any
    scratch_write: Any
    declared: Any
    extents: Any
    is_shape: Any
    check_access: Any
    launch_checks: list[H.Assert]
    top: A.Parallel
    lane_views: bool = False  # views may depend on the thread (a per-thread copy: lift/lanecopies.py)

    def int_expr(self, e: A.Expr) -> E.Expr:
        v = self.expr(e)
        value = self.block_level(v.expr)
        if value.shape and not self.lane_views:
            raise NotLifted("a view that depends on the thread index", e)
        if v.ctype not in ("int", "s32", "s64", "u32", "u64", "s16", "u16", "s8", "u8"):
            raise NotLifted("a view extent or offset that is not an integer", e)
        return E.fold(value)

    def bounded(self, e: A.Expr) -> Bounded:
        e = unparen(e)
        self.declared(e)
        if isinstance(e, A.Binary) and e.op == "#":
            a, b = self.bounded(e.lhs), self.bounded(e.rhs)
            return Bounded(E.fold(a.value * b.bound + b.value), E.fold(a.bound * b.bound))
        if isinstance(e, A.Binary) and e.op in ("#+", "#-"):  # ``p #+ 1``: p, among one chunk more (LANGUAGE.md 7.2)
            a = self.bounded(e.lhs)
            return Bounded(a.value, E.fold(E.Bin(e.op[1], a.bound, self.int_expr(e.rhs))))
        if isinstance(e, A.Binary) and e.op in ("+", "-") and not isinstance(unparen(e.lhs), A.IntLit):
            a = self.bounded(e.lhs)  # ``k - 1``: another index among the same chunks
            return Bounded(E.fold(E.Bin(e.op, a.value, self.int_expr(e.rhs))), a.bound)
        if isinstance(e, A.GetIth) and isinstance(unparen(e.base), A.Name):
            t = self.binding(unparen(e.base).name)  # type: ignore[attr-defined]
            k = const_int(self.int_expr(e.index)) if isinstance(t, IndexTuple) else None
            if isinstance(t, IndexTuple) and k is not None and -len(t.parts) <= k < len(t.parts):
                return self.bounded(A.Name(t.parts[k], span=e.span))  # ``c(1)``: a part of an index tuple
            a = self.bounded(e.base)  # ``k(-1)``: the last chunk
            return Bounded(self.int_expr(e), a.bound)
        if isinstance(e, A.Name):
            v = self.lookup(e.name, e)
            if isinstance(v, Bounded) and (self.lane_views or not self.block_level(v.value).shape):
                return Bounded(self.block_level(v.value), v.bound)
            if isinstance(v, WithName):  # named by 'with', no 'foreach' over it: 0 (LANGUAGE.md 7.4)
                return Bounded(E.Const(0), v.extent)
            if isinstance(v, Value) and (hb := self.host_bound_of(e.name)) is not None:  # a host loop's counter
                return Bounded(v.expr, hb)
            d = self.derived_bound(v)  # ``bn = idx % num_n`` (lift/kernel.py derived_index)
            if d is not None and (self.lane_views or not self.block_level(d.value).shape):
                return Bounded(self.block_level(d.value), d.bound)
        if isinstance(e, (A.Binary, A.Unary)) and (bound := self.kept_bound(e)) is not None:
            return Bounded(self.int_expr(e), bound)  # ``3 - q``, ``(q + 1) % #q``, ``2 * q``: among #q chunks
        raise NotLifted("a tiling index that is not a block-level bounded variable", e)

    def kept_bound(self, e: A.Expr) -> E.Expr | None:
        """The bound an integer expression over bounded indices keeps: arithmetic with plain values
        keeps the bound of its bounded operand (LANGUAGE.md 7.2, ``a + c``, ``a - 1``; likewise ``c -
        a``, ``a * c``, ``-a``), and of operands with one bound, that bound (None: no bound, or two)."""
        e = unparen(e)
        if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "%"):
            a, b = self.kept_bound(e.lhs), self.kept_bound(e.rhs)
            if a is None or b is None:
                return a if b is None else b
            return a if E.same(E.fold(a), E.fold(b)) else None
        if isinstance(e, A.Unary) and e.op in ("-", "+"):
            return self.kept_bound(e.operand)
        if not isinstance(e, (A.Name, A.GetIth)) and not (isinstance(e, A.Binary) and e.op in ("#", "#+", "#-")):
            return None
        try:
            return self.bounded(e).bound
        except NotLifted:
            return None

    def block_level(self, e: E.Expr) -> E.Expr:
        """``e`` with the lanes of levels of one thread or unit as 0 (their only value): a value
        the same for the whole block where it depends on no other lane."""
        if not e.shape:
            return e
        ones = {name: E.Const(0) for name, n in self.lane_extents.items() if n == 1}
        return E.fold(E.substitute(e, ones)) if ones else e

    def at_args(self, args: list[A.Expr], node: A.Node) -> list[E.Expr]:
        return [self.int_expr(x) for x in args]

    def chunk_extent(self, parent: E.Expr, factor: E.Expr) -> E.Expr:
        hp, hf = self.host_of(parent), self.host_of(factor)  # the grid's extents as the launcher has them
        if E.same(E.fold(parent), E.fold(factor)) or (hp is not None and hf is not None and E.same(hp, hf)):
            return E.Const(1)  # ``x.chunkat(s, _)`` of [S, ..] by S: the factor is a bound, at least 1 where it runs
        return E.fold(E.Bin("/", parent, factor))  # floor division (LANGUAGE.md 7.6)

    def buffer_decl(self, s: A.SpannedDecl) -> None:
        if s.storage not in STORAGES:
            raise NotLifted(f"a {s.storage or 'global'} buffer inside a kernel", s)
        sizes = self.shape_sizes(s.shape, s)
        if any(const_int(n) is None for n in sizes):  # a tile of extents fixed at launch
            for d in s.items:
                if d.init is not None:
                    raise NotLifted("a buffer with an initialiser of run-time shape", d)
                slots = tuple(const_int(self.int_expr(x)) for x in d.dims)
                if any(n is None or n < 1 for n in slots):
                    raise NotLifted("an array of buffers whose extents are not positive constants", d)
                # an array of them (``local f32 [N] bufs[4]``): one buffer with the array's extents first
                buf = self.launch_buffer(d.name, s.elem, (*(E.Const(n) for n in slots), *sizes), d)  # type: ignore[arg-type]
                buf.fill = self.fill_value(d)
                buf = self.give_home(buf, s.storage, d, d.fill is not None)
                self.scopes[-1][d.name] = BufferArray(buf, len(slots)) if slots else buf
            return
        extents = self.static_shape(s.shape, s)
        roles = any(isinstance(p, A.Parallel) and has_roles(p.body) for p in self.top.walk())
        for d in s.items:
            if (
                roles  # a stage ring of warp roles (lift/collapse.py)
                and len(d.dims) == 1
                and d.init is None
                and d.fill is None
                and (const_int(self.int_expr(d.dims[0])) or 0) > 0
                and d.name not in self.scratch_names  # else an array of buffers in scratch memory (below)
            ):
                self.scopes[-1][d.name] = Ring(d.name, s.elem, extents, const_int(self.int_expr(d.dims[0])) or 0, d)
                continue
            if d.init is not None:
                raise NotLifted("a buffer with an initialiser", d)
            slots = tuple(const_int(self.int_expr(x)) for x in d.dims)
            if any(n is None or n < 1 for n in slots):
                raise NotLifted("an array of buffers whose extents are not positive constants", d)
            # an array of buffers (``buf[2][3]``): one buffer with the array's extents first
            own = s.storage == "local" and d.name in self.scratch_names and not slots  # a thread's own array
            value = self.fill_expr(d, s.elem, own)
            fill = value.value if isinstance(value, E.Const) else 0
            buf = self.new_buffer(d.name, s.elem, (*slots, *extents), fill, d)  # type: ignore[arg-type]
            buf = self.give_home(buf, s.storage, d, isinstance(value, E.Const) and d.fill is not None)
            if not isinstance(value, E.Const):  # filled with a run-time value where it is declared
                self.set_tile(buf, value, d)
            self.scopes[-1][d.name] = BufferArray(buf, len(slots)) if slots else buf

    def fill_value(self, d: A.Declarator) -> float | int:
        if d.fill is None:
            return 0
        v = self.expr(d.fill)
        if not isinstance(v.expr, E.Const):
            raise NotLifted("a buffer of run-time shape filled with a run-time value", d.fill)
        return v.expr.value

    def fill_expr(self, d: A.Declarator, elem: str, own: bool = False) -> E.Expr:
        """The value ``{v}`` fills a buffer with (0 without one), converted to its element type
        (``own``: a thread's own array, which each thread may fill with its own value)."""
        if d.fill is None:
            return E.Const(0)
        v = self.expr(d.fill)
        if isinstance(v.expr, E.Const):
            return v.expr
        value = self.convert(v, elem).expr
        if value.shape and not (own and self.lanes is not None and value.shape == tuple(self.lanes[1])):
            raise NotLifted("a buffer filled with a value that differs between threads", d.fill)
        return value

    def global_slot(self, base: A.Name, indices: list[A.Expr], e: A.Index) -> Region:
        """``bufs[i]`` of an array of global buffers (one tensor, the array's extents first)."""
        self.tensor(base)
        whole = self.whole_tensor(base.name)
        if len(indices) >= len(whole.shape):
            raise NotLifted(f"an index of '{base.name}' that is not an element of an array of buffers", e)
        at = [self.int_expr(i) for i in indices]
        zeros = [E.Const(0)] * (len(whole.shape) - len(at))
        keep = [False] * len(at) + [True] * len(zeros)
        return whole.sub(at + zeros, list(whole.shape), keep)

    def array_slot(self, arr: BufferArray | Ring, indices: list[A.Expr], e: A.Index) -> BufferView:
        """``buf[s]`` of an array of buffers: the part of its buffer at ``s``."""
        if isinstance(arr, Ring):  # not a stage ring of warp roles: one buffer with the slots first
            buf = self.new_buffer(arr.name, arr.elem, (arr.slots, *arr.extents), 0, arr.node)
            arr = BufferArray(self.give_home(buf, "shared", arr.node), 1)
            for sc in reversed(self.scopes):
                if sc.get(arr.buffer.name) is not None and isinstance(sc[arr.buffer.name], Ring):
                    sc[arr.buffer.name] = arr
                    break
        if len(indices) != arr.rank:
            raise CroqSemanticError(f"{len(indices)} index(es) for an array of rank {arr.rank}", e.span)
        slots = [self.int_expr(i) for i in indices]
        buf = arr.buffer
        for i, n, x in zip(slots, buf.extents, indices, strict=False):
            k = const_int(i)
            if k is not None and not 0 <= k < n:
                raise CroqSemanticError(f"index {k} is outside the array of {n} buffers", x.span)
        offsets = (*slots, *(E.Const(0) for _ in buf.extents[arr.rank :]))
        shape = (*(E.Const(1) for _ in slots), *buf.sizes[arr.rank :])
        keep = (*(False for _ in slots), *(True for _ in buf.extents[arr.rank :]))
        return BufferView(buf, tuple(E.fold(o) for o in offsets), shape, keep)

    def shape_sizes(self, shape: list[A.Expr] | None, node: A.Node) -> tuple[E.Expr, ...]:
        """The extents of a declared shape (``[M, 64]``, ``[x.span]``), constants or not."""
        if shape is None:
            raise NotLifted("a buffer of inferred shape", node)
        if len(shape) == 1 and isinstance(unparen(shape[0]), A.Member):
            m = unparen(shape[0])
            assert isinstance(m, A.Member)
            if m.member != "span":
                raise NotLifted("a buffer shape of this form", m)
            return view_shape(self.place(m.base))
        out: list[E.Expr] = []
        for x in shape:
            out.extend(self.extents(x) if self.is_shape(x) else [self.int_expr(x)])
        return tuple(out)

    def static_shape(self, shape: list[A.Expr] | None, node: A.Node) -> tuple[int, ...]:
        out = [const_int(n) for n in self.shape_sizes(shape, node)]
        if any(n is None or n < 1 for n in out):
            raise NotLifted("a buffer whose extents are not constants", node)
        return tuple(n for n in out if n is not None)

    def extent_of(self, view: A.Expr, dim: A.Expr) -> E.Expr:
        """``view.span(dim)``: an extent of a tensor, a buffer or a view of them."""
        d = const_int(self.int_expr(dim))
        shape = view_shape(self.place(view))
        if d is None or not 0 <= d < len(shape):
            raise NotLifted("a '.span(d)' whose dimension is not a constant of the view's rank", dim)
        return shape[d]

    def place_shape(self, p: Place) -> tuple[int | None, ...]:
        return tuple(const_int(x) for x in view_shape(p))

    def new_buffer(self, name: str, elem: str, extents: tuple[int, ...], fill: float | int, node: A.Node) -> TileBuffer:
        dtype = ir_type(elem)
        if dtype is None:
            raise NotLifted(f"a buffer of type '{elem}'", node)
        tile = tuple(pow2(n) for n in extents)
        line = node.span.line if node.span else 0
        return TileBuffer(name, elem, extents, E.Var(self.claim(name), dtype, dims=tile), fill, line)

    def launch_buffer(
        self, name: str, elem: str, sizes: tuple[E.Expr, ...], node: A.Node, lanes: int = 1
    ) -> TileBuffer:
        """A buffer of run-time shape: a tile whose extents the launcher fixes, one constexpr
        argument per run-time size (``TILE_D0 = next_power_of_2(M)``), checked there against
        Triton's largest block (``lanes``: the tile is moved for that many lanes at once, each
        thread's own copy)."""
        dtype = ir_type(elem)
        if dtype is None:
            raise NotLifted(f"a buffer of type '{elem}'", node)
        line = node.span.line if node.span else 0
        var = self.claim(name)
        if any((const_int(n) or 1) < 1 for n in sizes):
            raise NotLifted("a buffer of no elements", node)
        extents = [const_int(n) or 0 for n in sizes]
        fixed = known_elements(extents) * lanes
        launch: list[tuple[E.Expr, E.Dim] | None] = []
        for d, n in enumerate(sizes):
            what = f"the buffer '{name}'"
            launch.append(None if extents[d] else (n, self.launch_extent(n, f"{var.upper()}_D{d}", what, node, fixed)))
        buf = TileBuffer(name, elem, tuple(extents), E.Var(var, dtype), 0, line, launch=tuple(launch))
        buf.var = E.Var(var, dtype, dims=buf.tile)
        return buf

    def launch_extent(self, size: E.Expr, name: str, what: str, node: A.Node, fixed: int) -> E.Extent:
        """A block extent the launcher fixes from the run-time ``size``: a constexpr argument
        (``fixed``: the product of the tile's extents known now, for the launcher's size check)."""
        host = self.host_of(size)
        if host is None:
            raise NotLifted("a tile extent the launcher cannot compute", node)
        for a in self.args.values():  # one extent of one size: the tiles of an MMA agree in shape
            if isinstance(a, N.Constexpr) and a.size is not None and E.same(E.fold(a.size), E.fold(host)):
                return E.Extent(a.name)
        arg = self.claim(name)
        line = node.span.line if node.span else 0
        self.args[arg] = N.Constexpr(arg, 0, size=host, of=f"{what} ({self.src_name}:{line})", fixed=fixed)
        return E.Extent(arg)

    def fixed_buffer(self, buf: TileBuffer, node: A.Node) -> TileBuffer:
        """``buf``, where its extents are known when translating (MMAs and element-wise work need them)."""
        if not buf.fixed:
            name = buf.name.split("__")[0]
            raise NotLifted(
                f"'{name}', a buffer of run-time shape (an extent known only at launch), used other than by"
                " copies, element reads, the MMA into it, 'apply' and a reduction along that extent (an MMA of"
                " its tile, a reduction along another axis, a 'copy' of it, an 'mma.store' into it)",
                node,
                "give the block a tile of constant extents (a 'subspan' of a constant or a '#define') and"
                " loop over the rest",
            )
        if buf.home is not None:
            raise NotLifted("a buffer in scratch memory used by an MMA", node)
        return buf

    def tile_value(self, buf: TileBuffer, node: A.Node) -> E.Var:
        """The buffer's tile, bound to its fill value where nothing wrote it yet."""
        if buf.home is not None:
            return self.scratch_tile(buf, node)
        if buf.of is not None:  # a reshaped view: the other buffer's tile, reshaped at each read
            return E.Reshape(self.tile_value(buf.of, node), buf.tile)  # type: ignore[return-value]
        if not buf.defined:
            self.body.append(N.Let(buf.var, E.Full(buf.tile, buf.fill, buf.var.type), line=buf.line))
            buf.defined = True
        return buf.var

    def place(self, e: A.Expr) -> Place:
        """The view an expression denotes: a region of a tensor, or of a buffer."""
        e = unparen(e)
        if isinstance(e, A.Name):
            if e.name in self.host.tensors:
                self.tensor(e)
                return self.whole_tensor(e.name)
            v = self.lookup(e.name, e)
            if isinstance(v, TileBuffer):
                return self.whole_buffer(v)
            if isinstance(v, CopyFuture):
                return v.data
            if isinstance(v, (BufferView, Region)):
                return v
            if getattr(v, "view", None) is not None:  # a named span_as of a tensor (lift/elements.py)
                return self.place(v.view)  # type: ignore[union-attr]
            raise NotLifted(f"'{e.name}' used as a view", e)
        if isinstance(e, A.Member) and e.member == "data":
            v = self.lookup(unparen(e.base).name, e) if isinstance(unparen(e.base), A.Name) else None  # type: ignore[attr-defined]
            if isinstance(v, CopyFuture):
                return v.data
            if isinstance(v, (TileBuffer, BufferView, Region)) or getattr(v, "view", None) is not None:
                return self.place(unparen(e.base))  # spanned data's '.data' is itself (upstream's 'dataof')
            self.no_copy_read(e)
            raise NotLifted("'.data' of something that is not a future", e)
        if isinstance(e, A.View):
            p = self.place(e.base)
            for op in e.ops:
                p = self.place_op(p, op)
            return p
        if isinstance(e, A.Index):
            indices, base = list(e.indices), unparen(e.base)
            while isinstance(base, A.Index):  # ``buf[r][1]``: the indices of every level, outermost first
                indices, base = list(base.indices) + indices, unparen(base.base)
            if isinstance(base, A.Name) and base.name in self.host.tensors and self.binding(base.name) is None:
                return self.global_slot(base, indices, e)  # an array of global buffers: one tensor
            arr = self.lookup(base.name, e) if isinstance(base, A.Name) else None
            if isinstance(arr, (BufferArray, Ring)):
                return self.array_slot(arr, indices, e)
        raise NotLifted(f"{describe(e)} used as a view", e)

    def whole_tensor(self, name: str) -> Region:
        ptr = self.args[f"{self.host.tensors[name].name}_ptr"]
        assert isinstance(ptr, N.Pointer)
        rank = len(ptr.extents)
        return Region(name, tuple(E.Const(0) for _ in range(rank)), tuple(range(rank)), tuple(ptr.extents))

    def whole_buffer(self, buf: TileBuffer) -> BufferView:
        zeros = tuple(E.Const(0) for _ in buf.extents)
        return BufferView(buf, zeros, buf.sizes, tuple(True for _ in buf.extents))

    def dense_view(self, p: Region, op: A.ViewOp) -> Region:
        """``.view(e..).from(o..)`` of another rank than its window (LANGUAGE.md 7.6): a dense view,
        ``e`` in row-major order from the element ``sum o_d * st_d`` past the window's origin (``st``
        the dense strides of ``e``)."""
        items = self.extent_items(op.args)
        if any(x is None for x in items) or len(op.at or []) != len(items):
            raise CroqSemanticError(
                f"a '.view' of {len(items)} extent(s) that changes the rank takes {len(items)} offset(s) and no '_',"
                f" {len(op.at or [])} given",
                op.span,
                "give one offset per extent of the view",
            )
        shape = tuple(x for x in items if x is not None)
        steps = dense_steps(shape)
        flat: E.Expr = E.Const(0)
        for o, st in zip(op.at or [], steps, strict=True):
            flat = E.Bin("+", flat, E.Bin("*", self.int_expr(o), st))
        return self.flat_view(p, shape, steps, flat, op)

    def parent_origin_view(self, p: Region, op: A.ViewOp) -> Region:
        """``.view(e..).from(o..)`` of another rank than its window with one offset per dimension of the
        window (LANGUAGE.md 7.6: the origin in parent coordinates): the dense view of ``e`` from the
        window's element ``o``."""
        items = self.extent_items(op.args)
        if any(x is None for x in items):
            raise CroqSemanticError(
                "a '.view' that changes the rank takes its extents without '_'", op.span, "spell out each extent"
            )
        shape = tuple(x for x in items if x is not None)
        moves = [self.int_expr(o) for o in op.at or []]
        moved = p.sub(moves, list(p.shape), [True] * len(p.shape))
        return self.flat_view(moved, shape, dense_steps(shape), E.Const(0), op)

    def place_op(self, p: Place, op: A.ViewOp) -> Place:
        if op.kind == "span_as" and isinstance(p, BufferView):
            return self.whole_buffer(self.span_as(p, op))
        if op.kind == "span_as":  # of a tensor or a window of one: its elements' row-major positions
            assert isinstance(p, Region)
            extents = tuple(self.span_as_count(list(p.shape), op))
            if len(extents) == len(p.shape) and all(E.same(E.fold(a), E.fold(b)) for a, b in zip(extents, p.shape)):
                return p  # the same shape: each element where it was (``output.span_as([M, N])``)
            zeros = tuple(E.Const(0) for _ in extents)
            return Region(p.tensor, zeros, tuple(range(len(extents))), extents, (), p.zfill, Reshaped(p, extents))
        if op.kind == "zfill":
            raise NotLifted(f"the view operation '.{op.kind}' in a copy", op)
        if op.strides is not None and isinstance(p, BufferView):
            return self.whole_buffer(self.buffer_strided(p, op))
        if op.strides is not None:
            return self.strided(p, op)
        if op.kind == "view" and op.at is not None and isinstance(p, BufferView):
            w = self.buffer_window(p, op)
            return w if isinstance(w, BufferView) else self.whole_buffer(w)
        # a view of another rank (shapes among its extents spelled out): dense
        if (
            isinstance(p, Region)
            and op.kind == "view"
            and op.at is not None
            and len(self.extent_items(op.args)) != len(p.shape)
        ):
            if len(op.at) == len(p.shape):  # the origin in the window's coordinates
                return self.parent_origin_view(p, op)
            return self.dense_view(p, op)
        if isinstance(p, Region):
            return self.region_op(p, op)
        if op.kind == "view":
            raise NotLifted("a '.view' of a buffer without '.from()'", op)
        kept = list(p.axes)
        offs, shape, keep = self.view_parts([p.shape[d] for d in kept], op)
        new_offs, new_shape, new_keep = list(p.offsets), list(p.shape), list(p.keep)
        for j, d in enumerate(kept):
            new_offs[d] = E.fold(new_offs[d] + offs[j])
            new_shape[d] = shape[j]
            new_keep[d] = keep[j]
        return BufferView(p.buffer, tuple(new_offs), tuple(new_shape), tuple(new_keep))

    def strided(self, p: Place, op: A.ViewOp) -> Region:
        """``.view(e.. : st..).from(o..)`` / ``.subspan(e.. : st..)[.at(i..)]`` (LANGUAGE.md 7.6) of a
        window of a tensor: element ``i`` of the view is the element ``sum o_d * st_d + sum i_d *
        st_d`` past the window's origin in the tensor's row-major order (the tensor's bounds and the
        window's limits hold).  The view of a one-dimensional window runs along its dimension; of
        a window of more dimensions, along the tensor's row-major elements (a ``span_as`` of it)."""
        if not isinstance(p, Region):
            raise NotLifted("a view with explicit strides of this form", op)
        if op.kind not in ("view", "subspan") or op.step or (op.kind == "view" and op.at is None):
            raise NotLifted(f"a '.{op.kind}' with explicit strides and this form", op)
        steps, shape, flat, at = strided_parts(op, len(p.shape), self.int_expr)
        if at is not None:  # ``.subspan(e : st).at(i)``: the window moves by ``i * e`` in its own coordinates first
            moves = [
                E.fold(E.Bin("*", i, n)) for i, n in zip(self.at_args(self.index_args(at), op), shape, strict=False)
            ]
            if len(moves) != len(p.shape):
                raise NotLifted("a '.subspan(.. : ..).at(..)' that changes the rank", op)
            p = p.sub(moves, list(p.shape), [True] * len(p.shape))
        rows = self.tensor_rows(p) if p.reshaped is not None else None
        if rows is not None:  # a span_as of the whole tensor: its row-major order is the tensor's
            p, flat = rows[0], E.Bin("+", rows[1], flat)
        return self.flat_view(p, shape, steps, flat, op)

    def tensor_rows(self, p: Region) -> tuple[Region, E.Expr] | None:
        """A view ``p`` of a ``span_as`` of a whole tensor (with no run-time limits of its own) as the
        whole tensor and the row-major position of ``p``'s origin in it (the reshape keeps the order
        of the elements, LANGUAGE.md 7.6); None for a ``span_as`` of part of a tensor."""
        rs = p.reshaped
        if rs is None or p.limits or p.steps is not None:
            return None
        whole = self.whole_tensor(p.tensor)
        q = rs.parent
        if q.reshaped is not None or q.steps is not None or q.limits or q.axes != whole.axes:
            return None
        same = all(E.same(E.fold(a), E.fold(b)) for a, b in zip(q.shape, whole.shape, strict=True))
        if not same or any(const_int(o) != 0 for o in q.origin):
            return None
        start: E.Expr = E.Const(0)
        for o, n in zip(p.origin, rs.extents, strict=True):
            start = E.Bin("+", E.Bin("*", start, n), o)
        return Region(p.tensor, whole.origin, whole.axes, whole.shape, (), p.zfill), E.fold(start)

    def flat_view(
        self, p: Region, shape: tuple[E.Expr, ...], steps: tuple[E.Expr, ...], flat: E.Expr, op: A.ViewOp
    ) -> Region:
        """``shape`` elements ``steps`` apart from ``flat`` past the origin of ``p`` in its tensor's
        row-major order (LANGUAGE.md 7.6: view offsets and strides count the root's elements, and the
        offsets of a view of a view add up).

        ``p`` may itself be strided or a ``span_as`` view.  A strided ``p`` runs along one line of
        its root already (one dimension of a one-dimensional tensor, or the row-major line of a
        tensor or of a ``span_as`` view): the new view starts ``flat`` elements past ``p``'s first
        along that line, with its own strides, and keeps ``p``'s windows and the line's bounds.  A
        ``span_as`` view ``p`` is the root of the line (its elements in the row-major order of its
        new extents, LANGUAGE.md 7.6: the same order as its parent's): elements past its count are
        outside it, read zero and are not written, as are those outside the parent's windows and
        tensor (lift/copies.py ``tensor_index`` checks each level of the chain)."""
        if p.steps is not None:
            axis = p.axes[0] if p.axes else 0
            if any(a != axis for a in p.axes):
                raise NotLifted("a view with explicit strides of a view whose dimensions run along different axes", op)
            origin = list(p.origin)
            origin[axis] = E.fold(E.Bin("+", origin[axis], flat))
            return Region(p.tensor, tuple(origin), (axis,) * len(shape), shape, p.limits, p.zfill, p.reshaped, steps)
        if len(p.shape) == 1 and len(p.origin) == 1:  # along the one dimension of a one-dimensional tensor (or span_as)
            axis = p.axes[0]
            origin = list(p.origin)
            origin[axis] = E.fold(E.Bin("+", origin[axis], flat))
            return Region(p.tensor, tuple(origin), (axis,) * len(shape), shape, p.limits, p.zfill, p.reshaped, steps)
        rs = p.reshaped
        extents = list(rs.extents) if rs is not None else list(self.whole_tensor(p.tensor).shape)
        start: E.Expr = E.Const(0)  # the window's origin in the tensor's row-major order
        for o, n in zip(p.origin, extents, strict=True):
            start = E.Bin("+", E.Bin("*", start, n), o)
        count: E.Expr = E.Const(1)
        for n in extents:
            count = E.Bin("*", count, n)
        zeros = tuple(E.Const(0) for _ in extents)
        whole = Region(p.tensor, zeros, tuple(range(len(extents))), tuple(extents), p.limits, p.zfill, rs)
        rows = Reshaped(whole, (E.fold(count),))
        origin = (E.fold(E.Bin("+", start, flat)),)
        return Region(p.tensor, origin, (0,) * len(shape), shape, (), p.zfill, rows, steps)

    def span_as_count(self, old: list[E.Expr], op: A.ViewOp) -> list[E.Expr]:
        """The extents ``.span_as([..])`` gives, checked to hold as many elements as ``old``."""
        items = [y for x in op.args for y in (unparen(x).items if isinstance(unparen(x), A.MdspanLit) else [x])]  # type: ignore[attr-defined]
        if any(self.is_blank(x) for x in items):
            raise NotLifted("a span_as with '_' among its extents", op)
        new = [x for x in self.extent_items(items) if x is not None]
        count: E.Expr = E.Const(1)
        was: E.Expr = E.Const(1)
        for n in new:
            count = E.fold(E.Bin("*", count, n))
        for n in old:
            was = E.fold(E.Bin("*", was, n))
        if isinstance(count, E.Const) and isinstance(was, E.Const) and count.value != was.value:
            raise CroqSemanticError(
                f"span_as: {count.value} elements cannot view {was.value} elements",
                op.span,
                "the new shape must have the same number of elements",
            )
        now, then = self.host_of(count), self.host_of(was)  # a count only the launch knows: checked there
        known = isinstance(count, E.Const) and isinstance(was, E.Const)
        if not known and now is not None and then is not None and not E.same(E.fold(now), E.fold(then)):
            line = op.span.line if op.span else 0
            message = f"span_as: the new shape does not have the {size_text(was)} elements of the view"
            self.launch_checks.append(H.Assert(E.Bin("==", now, then), message, line=line))
        return new

    def span_as(self, p: BufferView, op: A.ViewOp) -> TileBuffer:
        """``buf.span_as([a, b])``: the buffer's elements in row-major order as a buffer of that
        shape, a view that reads and writes the same tile through ``tl.reshape``."""
        dims = [const_int(x) for x in self.span_as_count(list(p.shape), op)]
        old = [const_int(x) for x in p.shape] if p.whole else None
        origin = None if p.whole or None in dims else self.contiguous_origin(p)
        if origin is not None:  # a part in one run of a buffer in scratch memory (``s[1].span_as(..)``)
            buf = p.buffer
            tile = tuple(pow2(n) for n in dims)  # type: ignore[arg-type]
            var = E.Var(self.claim(f"{buf.name}_as"), buf.var.type, dims=tile)
            return TileBuffer(
                buf.name,
                buf.elem,
                tuple(dims),
                var,
                buf.fill,
                buf.line,
                True,
                home=buf.home,
                origin=origin,  # type: ignore[arg-type]
            )
        if old is None or None in old or None in dims or p.buffer.of is not None:
            raise NotLifted("a span_as of a part of a buffer or of run-time extent", op)
        buf = p.buffer
        if buf.home is not None:  # in scratch memory, row-major: the same area with other extents
            tile = tuple(pow2(n) for n in dims)  # type: ignore[arg-type]
            var = E.Var(self.claim(f"{buf.name}_as"), buf.var.type, dims=tile)
            return TileBuffer(buf.name, buf.elem, tuple(dims), var, buf.fill, buf.line, True, home=buf.home)  # type: ignore[arg-type]
        if not buf.fixed or any(pow2(n) != n for n in (*buf.extents, *dims)):  # type: ignore[arg-type]
            raise NotLifted("a span_as of a buffer whose tile is padded", op)
        var = E.Var(self.claim(f"{buf.name}_as"), buf.var.type, dims=tuple(dims))  # type: ignore[arg-type]
        return TileBuffer(buf.name, buf.elem, tuple(dims), var, buf.fill, buf.line, True, of=buf)  # type: ignore[arg-type]

    def contiguous_origin(self, p: BufferView) -> E.Expr | None:
        """The row-major position of the first element of ``p``, a part of a buffer in scratch
        memory whose elements are one run there (dimensions of one element, then one of any
        extent, then whole ones); None where it is not such a part."""
        buf = p.buffer
        if buf.home is None or buf.part is not None or buf.origin is not None or buf.of is not None:
            return None
        sizes = [const_int(n) for n in buf.sizes]
        if None in sizes:
            return None
        free = False  # past the dimension of any extent: the rest must be whole
        for o, n, size, k in zip(p.offsets, p.shape, sizes, p.keep, strict=True):
            m = 1 if not k else const_int(n)
            if m is None:
                return None
            if free and not (const_int(o) == 0 and m == size):
                return None
            free = free or m != 1
        origin: E.Expr = E.Const(0)
        for o, n in zip(p.offsets, buf.sizes, strict=True):
            origin = E.Bin("+", E.Bin("*", origin, n), o)
        return E.fold(origin)

    def set_tile(self, buf: TileBuffer, value: E.Expr, node: A.Node) -> None:
        if buf.of is not None:  # written through a reshaped view: the other buffer, reshaped back
            self.set_tile(buf.of, E.Reshape(spread(E.fold(value), buf.tile, buf.var.type), buf.of.tile), node)
            return
        if buf.home is not None:
            self.scratch_store_tile(buf, value, node)
            return
        value = spread(E.fold(value), buf.tile, buf.var.type)
        if isinstance(value, E.Var) and value.name == buf.var.name:
            buf.defined = True
            return
        self.emit(N.Assign(buf.var, value) if buf.defined else N.Let(buf.var, value), node)
        buf.defined = True

    def slot_element(self, at: A.At) -> A.At:
        """``arr[s].at(i..)`` of an array of buffers whose slot depends on the thread
        (``rows[(t + 1) % 4].at(j)``), or kept in registers: the element ``at(s, i..)`` of its one
        buffer (the array's extents first); other accesses as written."""
        b = unparen(at.base)
        slots: list[A.Expr] = []
        while isinstance(b, A.Index):
            slots, b = list(b.indices) + slots, unparen(b.base)
        if not slots or not isinstance(b, A.Name) or b.name in self.host.tensors:
            return at
        arr = self.binding(b.name)
        if not isinstance(arr, BufferArray) or len(slots) != arr.rank:
            return at
        if arr.buffer.home is not None and not any(self.block_level(self.expr(x).expr).shape for x in slots):
            return at  # one part for the whole block, in scratch memory: buffer_of's part_of
        return A.At(b, slots + list(at.indices), span=at.span)

    def buffer_of(self, base: A.Expr) -> TileBuffer | None:
        """The buffer an element access reads or writes (None: not a buffer)."""
        b = unparen(base)
        if isinstance(b, A.Name) and b.name in self.host.tensors:
            return None
        if isinstance(b, A.Name) and isinstance(self.binding(b.name), BufferArray):
            return self.binding(b.name).buffer  # an element of the array's buffer (slot_element)
        if isinstance(b, A.Name):
            if not isinstance(self.binding(b.name), (TileBuffer, BufferView, CopyFuture)):
                return None
        elif isinstance(b, A.Index):  # ``buf[s].at(..)``: an element of one buffer of an array
            p = self.place(b)
            if not isinstance(p, BufferView):
                return None
            if p.buffer.home is None:
                raise NotLifted("an element of one buffer of an array kept in registers", base)
            return self.part_of(p, b)
        elif not (isinstance(b, A.Member) and b.member == "data"):
            return None
        p = self.place(b)
        if isinstance(p, BufferView) and not p.whole and p.buffer.home is not None:
            return self.part_of(p, b)  # in scratch memory: its elements' addresses in the buffer's area
        if isinstance(p, BufferView) and not p.whole and p.buffer.home is None and p.buffer.of is None:
            raise NotInRegisters("an element of a part of a buffer", p.buffer.name, base)  # read in scratch memory
        if not isinstance(p, BufferView) or not p.whole:
            raise NotLifted("an element of a part of a buffer", base)
        if p.buffer.of is not None:
            raise NotLifted("an element of a buffer viewed with span_as", base)
        return p.buffer

    def part_of(self, p: BufferView, node: A.Expr) -> TileBuffer:
        """A part of a buffer in scratch memory (``h = f.data.subspan(4, 32).at(0, 1)``) read and
        written by element: a buffer of the part's extents whose element ``i`` is the buffer's at
        the part's origin plus ``i`` (lift/scratch.py ``scratch_address``)."""
        extents = [const_int(p.shape[d]) for d in p.axes]
        if any(n is None or n < 1 for n in extents) or p.buffer.of is not None:
            raise NotLifted("an element of a part of a buffer of run-time extent", node)
        name = unparen(node).name if isinstance(unparen(node), A.Name) else p.buffer.name  # type: ignore[attr-defined]
        var = E.Var(self.claim(f"{name}_part"), p.buffer.var.type, dims=tuple(pow2(n) for n in extents))  # type: ignore[arg-type]
        buf = TileBuffer(name, p.buffer.elem, tuple(extents), var, p.buffer.fill, p.buffer.line, True)  # type: ignore[arg-type]
        buf.home, buf.part = p.buffer.home, p
        return buf

    def lane_axes(self, buf: TileBuffer, at: A.At) -> tuple[int, ...]:
        """Per dimension of ``buf``, the thread lane axis that indexes it over its whole extent:
        each thread's own element, up to an order of the dimensions (see the module's doc)."""
        rank = len(buf.extents)
        indices = self.index_args(at.indices)
        if len(indices) != rank:
            raise CroqSemanticError(f"{len(indices)} index(es) for data of rank {rank}", at.span)
        axes: list[int] = []
        lanes = len(self.lanes[1]) if self.lanes is not None else 0
        values = [E.fold(self.expr(i).expr) for i in indices]
        self.check_access(buf.name, buf.sizes, values, indices)
        for d, (i, v) in enumerate(zip(indices, values, strict=True)):
            axis = self.lane_axis.get(v.name) if isinstance(v, E.Var) else None
            if axis is None or self.lane_extents.get(v.name) != buf.extents[d] or len(v.shape) != lanes:
                raise NotInRegisters("a buffer element at a position other than the thread's own", buf.name, i)
            axes.append(axis)
        if len(set(axes)) != rank:
            raise NotLifted("a buffer element whose indices are not one thread lane each", at)
        return tuple(axes)

    def in_lanes(self, buf: TileBuffer, axes: tuple[int, ...], node: A.Node) -> E.Expr:
        """The buffer's tile in the threads' layout: buffer dimension d along lane axis axes[d]
        (a buffer of fewer dimensions than the lanes is the same along the others: ``row_max.at(i)``
        under ``apply {i, j}``)."""
        order = tuple(sorted(range(len(axes)), key=lambda d: axes[d]))
        tile = E.fold(E.Permute(self.tile_value(buf, node), order))
        lanes = len(self.lanes[1]) if self.lanes is not None else len(axes)
        return tile if lanes == len(axes) else E.fold(E.Lift(tile, lanes, tuple(sorted(axes))))

    def buffer_read(self, buf: TileBuffer, at: A.At) -> Value:
        if buf.home is not None:
            return self.scratch_read(buf, at)
        indices = self.index_args(at.indices)
        index = [E.fold(self.expr(i).expr) for i in indices]
        self.check_access(buf.name, buf.sizes, index, indices)
        if len(index) == len(buf.extents) and not any(i.shape for i in index) and buf.var.type != "i1":
            return Value(self.element_of(buf, tuple(index), at), buf.elem)
        return Value(self.in_lanes(buf, self.lane_axes(buf, at), at), buf.elem)

    def element_of(self, buf: TileBuffer, index: tuple[E.Expr, ...], node: A.Node) -> E.Expr:
        """The element of ``buf`` at a position the same for every thread (``g.at(n - 1)``): the sum
        of the tile where its coordinates are the position, zero elsewhere (Triton has no scalar
        read of a register tile)."""
        coords = self.coords(buf.tile, node)  # type: ignore[attr-defined]
        hit = E.conj(E.Bin("==", c, i) for c, i in zip(coords, index, strict=True))
        tile: E.Expr = self.tile_value(buf, node)
        wide = SUM_TYPES.get(buf.var.type)  # fp8 / 16-bit floats: Triton sums them in no such type on the GPU
        if wide is not None:  # (one element is not zero: the sum is exact)
            tile = E.Cast(tile, wide)
        value: E.Expr = E.Where(hit, tile, E.Full(buf.tile, 0, wide or buf.var.type))
        for _ in buf.tile:
            value = E.Reduce("sum", value, 0)
        return E.Cast(value, buf.var.type) if wide is not None else value

    def buffer_write(self, buf: TileBuffer, at: A.At, a: A.Assign) -> None:
        if buf.home is not None:
            self.scratch_write(buf, at, a)
            return
        axes = self.lane_axes(buf, at)
        if sorted(axes) != list(range(len(self.lanes[1]) if self.lanes is not None else 0)):
            # an element loop's sum (``apply``); threads of a thread level that add to one
            # element without an atomic race (lost updates): not a sum to keep
            term = (
                added_term(buf.name, at, a) if self.lanes is not None and self.lanes[0] in self.apply_scopes else None
            )
            if term is None:
                raise NotLifted("a buffer element that several threads write", at)
            self.lanes_add(buf, axes, term, a)
            return
        value = self.expr(a.value)
        if a.op != "=":
            value = self.binary(a.op, Value(self.in_lanes(buf, axes, a), buf.elem), value, a)
        new = self.convert(value, buf.elem).expr
        if self.pred:
            new = E.Where(E.conj(self.pred), new, self.in_lanes(buf, axes, a))
        lanes = tuple(buf.tile[axes.index(j)] for j in range(len(axes)))
        self.set_tile(buf, E.Permute(spread(new, lanes, buf.var.type), axes), a)

    def lanes_add(self, buf: TileBuffer, axes: tuple[int, ...], term: A.Expr, a: A.Assign) -> None:
        """``buf``'s elements (buffer dimension d along lane axis axes[d]) plus the sum of ``term``
        over the other lane axes, where the lanes hold (lift/lanesums.py)."""
        assert self.lanes is not None
        shape = tuple(self.lanes[1])
        wide = SUM_TYPES.get(buf.var.type, buf.var.type)
        value: E.Expr = spread(E.fold(E.Cast(self.convert(self.expr(term), buf.elem).expr, wide)), shape, wide)
        keep = E.fold(E.conj([*self.pred, *self.padding]))
        if not (isinstance(keep, E.Const) and keep.value):
            value = E.Where(keep, value, E.Full(shape, 0, wide))
        for axis in sorted(set(range(len(shape))) - set(axes), reverse=True):
            value = E.Reduce("sum", value, axis)
        kept = sorted(axes)
        order = tuple(kept.index(x) for x in axes)
        if order != tuple(range(len(order))):
            value = E.Permute(value, order)
        total = E.Bin("+", E.Cast(self.tile_value(buf, a), wide), value)
        self.set_tile(buf, E.fold(E.Cast(total, buf.var.type)), a)
        self.lane_summed.add(buf.name)

    def binding(self, name: str) -> Any:
        """What ``name`` is bound to in the innermost scope that has it (None: no scope has it)."""
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        return self.host_bounded(name)  # (lift/loops.py: a bounded name of host-level code)


def dense_steps(shape: tuple[E.Expr, ...]) -> tuple[E.Expr, ...]:
    """The row-major element strides of a dense block of ``shape``."""
    steps: list[E.Expr] = []
    step: E.Expr = E.Const(1)
    for n in reversed(shape):
        steps.insert(0, step)
        step = E.fold(E.Bin("*", step, n))
    return tuple(steps)
