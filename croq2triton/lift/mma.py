"""Lifting MMA as written (LANGUAGE.md 7.9, 9.3) into the tile IR, as a mixin of the kernel lifter
(lift/kernel.py): the accumulators, operand fragments and stores of a kernel that one unit (a
warpgroup, a warp, the block) runs, where lift/contraction.py does not prove a GEMM to tile.

An accumulator (``acc = mma.fill.f32 0.0f``) is a register tile of the program, kept in f32 for
floating-point element types (an ``.f16`` accumulator is rounded where it is stored: at least as
accurate, LANGUAGE.md 9.3) and in s32 for integer ones.  Its shape is the one the first MMA or
store that uses it gives it (the fill itself names none): the fill's statement is bound then.
``mma.L1.L2 acc, a, b`` is ``acc = tl.dot(a, b, acc)`` with each operand transposed where its K
dimension is not the innermost one; an operand that is a buffer, a fragment (``frag``, ``mma.load``)
or a window of a tensor is read as a tile, its padding along K (a buffer extent that is not a power
of two) zeroed.  ``.scale`` multiplies the product by its scale views before it is added.

A loop whose body only issues MMAs on chunks of K (``foreach j in [4] { ma = mma.load
lhs_s.chunkat(_, j); mb = ..; mma.row.row acc, ma, mb; }``) adds, over its iterations, the products
of chunks that partition K, both operands at the same chunk: their sum is the product of the whole
tiles (the sum over k reassociated, as a tensor-core dot does anyway), which is what it is lifted
to; Triton cannot take a chunk of a register tile at a run-time offset.

A 2:4 sparse MMA (``mma.row.L2.sp acc, a, b, meta``) multiplies the dense tile of its compressed
``a`` (lift/sparse.py), its metadata chunked along K with ``a`` in such a loop.

Accumulators of more than one unit (``parallel wg by 2 : group-4`` each with its own tile), sparse
MMAs without metadata or with A stored ``[K, M]``, the split ``mma.scale`` and operands that are
other parts of a buffer raise :class:`NotLifted`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import CroqLoweringError, CroqSemanticError
from ..frontend import ast as A
from ..frontend.printer import Printer
from ..options import Options
from ..sema.consteval import const_int as ast_int
from ..sema.levels import UNIT_THREADS
from ..sema.tiling import source_text
from ..sema.tma_rules import swizzle_bytes
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import BufferView, MmaFuture, Place, TileBuffer, spread, view_shape
from .checks import mma_types, size_text
from .host import ir_type
from .notlifted import NotLifted
from .parts import select_chunk
from .sparse import INDEX_BITS, dense_tile, packed_per_element
from .terms import Bounded, Region, const_int, unparen

# operand element types of tl.dot, and the accumulators each may add into
DOT_ACCUMULATORS = {
    "f16": ("f32", "f16"),
    "bf16": ("f32",),
    "tf32": ("f32",),
    "f32": ("f32",),
    "f8_e4m3": ("f32", "f16"),
    "f8_e5m2": ("f32", "f16"),
    "s8": ("s32",),
    "s4": ("s32",),  # int8 storage (one element per byte): tl.dot's int8 product
    "f64": ("f64",),  # tl.dot takes f64 operands (an exact f64 product; DMMA on sm_80+)
}
# operands tl.dot rejects (u8 x u8 -> s32, wmma's integer MMA): a broadcast product summed over K
SUMMED_ONLY = {"u8": ("s32",), "u4": ("s32",)}
MIN_DOT = 16  # tl.dot's smallest extent along M, N and K
REDUCTIONS = {"reduce_max": "max", "reduce_sum": "sum"}


def compute_type(elem: str) -> str:
    """The tile-IR type an accumulator of ``elem`` is kept in."""
    if elem == "f64":
        return "f64"
    return "i32" if elem in ("s32", "u32", "s8", "u8", "s16", "int") else "f32"


@dataclass(eq=False)
class Fragment:
    """An accumulator before anything has given it a shape: its type and the statements that fill
    it, bound to its tile once an MMA or a store shapes it."""

    name: str
    elem: str | None  # the Croqtile type the fill states (None: the operands')
    fills: list[tuple[list[N.Stmt], N.Stmt, E.Expr]] = field(default_factory=list)  # body, placeholder, value
    # ``frag f32 [16, 16] acc`` declared inside a parallel of units: each unit's extents (the tile
    # is the units' tiles together, where the MMAs place them)
    declared: tuple[int, ...] | None = None


class Mmas:
    """MMA statements; the lifter supplies scopes, places, buffers and copies."""

    # supplied by the lifter (lift/kernel.py) and its other mixins
    scopes: list[dict[str, Any]]
    body: list[N.Stmt]
    pred: list[E.Expr]
    lanes: tuple[int, tuple[int, ...]] | None
    level_of: dict[int, str]
    collapsed: list[A.Node]
    lane_summed: set[str]
    apply_scopes: list[int]
    threads: int
    units: dict[str, int]
    unit_depth: int
    pinned: dict[str, int]
    expr: Any
    place: Any
    emit: Any
    fresh: Any
    claim: Any
    new_buffer: Any
    whole_buffer: Any
    tile_value: Any
    part_tile: Any
    set_tile: Any
    fill: Any
    empty: Any
    coords: Any
    scratch_address: Any
    named: Any
    counters: Any
    binding: Any
    names_a_view: Any
    static_shape: Any
    convert: Any
    host: Any
    int_expr: Any
    top: A.Parallel
    src_name: str
    options: Options
    concat_view: Any
    concat_region: Any
    lanes_over: Any
    place_shape: Any
    accumulator_types: dict[TileBuffer, str | None]  # accumulators that fills shaped: the type each declares

    # ================================================================ accumulators
    def mma_fill(self, s: A.MmaFill) -> None:
        if s.result is not None and not self.mma_uses(s.result):
            raise CroqLoweringError(
                f"the shape of the accumulator '{s.result}' is unknown: no 'mma' in this 'parallel' uses it",
                s.span,
                "a 'parallel' without braces holds only the next statement: put the fill and its MMAs in braces",
            )
        self.single_unit(s)
        value = E.fold(self.expr(s.value).expr)
        if value.shape:
            raise NotLifted("an accumulator filled with a value that depends on the thread", s.value)
        if s.result is not None:
            frag = Fragment(s.result, s.elem)
            self.scopes[-1][s.result] = frag
            self.pending_fill(frag, value, s)
            return
        target = self.accumulator(s.target, s)
        if isinstance(target, Fragment):
            self.pending_fill(target, value, s)
        else:
            self.set_tile(target, _filled(target, value), s)

    def pending_fill(self, frag: Fragment, value: E.Expr, node: A.Node) -> None:
        """A placeholder where the fill stands, bound to the tile once its shape is known."""
        placeholder = N.Let(E.Var(self.fresh(f"{frag.name}_unshaped")), E.Const(0))
        self.emit(placeholder, node)
        frag.fills.append((self.body, placeholder, value))

    def accumulator(self, e: A.Expr | None, node: A.Node) -> Fragment | TileBuffer:
        name = unparen(e) if e is not None else None
        if not isinstance(name, A.Name):
            raise NotLifted("an accumulator that is not a name", e or node)
        v = self.binding(name.name)
        if isinstance(v, TileBuffer) and any(p in self.pinned for p in v.placing) and not isinstance(node, A.MmaStore):
            raise NotLifted("an accumulator of several units used but stored under a condition that picks one", node)
        if isinstance(v, (TileBuffer, Fragment)):
            return v  # a buffer of run-time shape too: an MMA's accumulator over run-time tiles
        raise NotLifted(f"'{name.name}' used as an accumulator", name)

    def shaped(
        self, acc: Fragment | TileBuffer, extents: tuple[int, ...] | tuple[E.Expr, ...], elem: str, node: A.Node
    ) -> TileBuffer:
        """The accumulator's tile: a fragment gets ``extents`` (sizes; run-time ones give a tile the
        launcher fixes, of the operands' extents) and its fills are bound here."""
        sizes = tuple(E.Const(n) if isinstance(n, int) else E.fold(n) for n in extents)
        if isinstance(acc, TileBuffer):
            if len(acc.sizes) != len(sizes) or not all(E.same(E.fold(a), b) for a, b in zip(acc.sizes, sizes)):
                mine, product = [const_int(x) for x in acc.sizes], [const_int(x) for x in sizes]
                if None not in mine and None not in product:  # both known: the program's error
                    raise CroqSemanticError(
                        f"the MMA's product is {product}, its accumulator '{acc.name}' {mine}",
                        node.span,
                        "the accumulator is [rows of A, columns of B]: fill it with that shape, or take operands"
                        " of its shape (LANGUAGE.md 7.9)",
                    )
                raise NotLifted("an MMA whose product does not have its accumulator's shape", node)
            self.tile_value(acc, node)  # ``frag f32 [64, 32] acc {0.5f}``: its fill, where nothing wrote it yet
            return acc
        declared = acc.elem or elem  # kept in f32 (s32): what its elements read and the MMAs add
        kept = {"i32": "s32", "f64": "f64"}.get(compute_type(declared), "f32")
        known = tuple(const_int(n) for n in sizes)
        if all(n is not None for n in known):
            buf = self.new_buffer(acc.name, kept, known, 0, node)  # type: ignore[arg-type]
        else:
            buf = self.launch_buffer(acc.name, kept, sizes, node)
        for k, (body, placeholder, value) in enumerate(acc.fills):
            tile = _filled(buf, value)
            stmt = N.Let(buf.var, tile) if k == 0 else N.Assign(buf.var, tile)
            stmt.line = placeholder.line
            i = next(i for i, x in enumerate(body) if x is placeholder)
            body[i] = stmt
        acc.fills.clear()
        buf.defined = True
        self.accumulator_types[buf] = acc.elem  # kept in f32 / s32: what the source declares it (None: the operands')
        for sc in self.scopes:  # from here on the accumulator is its tile
            for k2, v in sc.items():
                if v is acc:
                    sc[k2] = buf
        return buf

    def unit_shape(
        self,
        frag: Fragment,
        declared: tuple[int, ...],
        extents: tuple[int, ...] | tuple[E.Expr, ...],
        placing: tuple[str | None, ...],
        node: A.Node,
    ) -> None:
        """A fragment each unit declares (``frag f32 [16, 16] acc`` in ``parallel g by 4 : group``)
        takes the product of the units' tiles together: each unit's part of it is the declared shape."""
        sizes = [n if isinstance(n, int) else const_int(n) for n in extents]
        mine = [n * (self.units[p] if p is not None else 1) for n, p in zip(declared, placing, strict=False)]
        if len(declared) != len(sizes) or None in sizes:
            raise NotLifted("a fragment a unit declares, shaped by an MMA of run-time extents", node)
        if mine != sizes:
            each = [n // (self.units[p] if p is not None else 1) for n, p in zip(sizes, placing, strict=True)]  # type: ignore[operator]
            raise CroqSemanticError(
                f"each unit's MMA product is {each}, its accumulator '{frag.name}' {list(declared)}",
                node.span,
                "a fragment declared inside a parallel of units is each unit's: declare it [rows of A, columns of B]"
                " of one unit's operands (LANGUAGE.md 7.9)",
            )

    def declared_type(self, buf: TileBuffer) -> str | None:
        """The type the source gives an accumulator (None: its operands')."""
        return self.accumulator_types.get(buf, buf.elem)

    def drop_unshaped(self) -> None:
        """Fills of accumulators nothing used: no statement (called when the kernel is done)."""
        for sc in self.scopes:
            for v in sc.values():
                if isinstance(v, Fragment):
                    for body, placeholder, _ in v.fills:
                        body[:] = [x for x in body if x is not placeholder]
                    v.fills.clear()

    def frag_decl(self, s: A.FragDecl) -> None:
        """``frag f16 [64, 16] a {1.0f}``: a register tile of that fill."""
        if s.elem is None:
            raise NotLifted("a fragment without an element type", s)
        extents = self.static_shape(s.shape, s)
        for d in s.items:
            if d.dims or d.init is not None:
                raise NotLifted("an array of fragments or a fragment with an initialiser", d)
            fill: float | int = 0
            if d.fill is not None:
                v = E.fold(self.expr(d.fill).expr)
                if not isinstance(v, E.Const):
                    raise NotLifted("a fragment filled with a run-time value", d.fill)
                fill = v.value
            if self.unit_depth:  # each unit's own: shaped by the MMAs that place the units' tiles
                frag = Fragment(d.name, s.elem, declared=extents)
                self.scopes[-1][d.name] = frag
                self.pending_fill(frag, E.Const(fill), d)
                continue
            self.scopes[-1][d.name] = self.new_buffer(d.name, s.elem, extents, fill, d)

    # ================================================================ loads and MMAs
    def mma_load(self, s: A.MmaLoad) -> None:
        """``a = mma.load view``: the view as a fragment (a part of a buffer stays a view, which only
        a loop over chunks of K reads, see the module's doc)."""
        if s.result is None:
            self.mma_load_into(s)
            return
        p = self.place(s.src)
        self.check_swizzle(s, p)
        self.scopes[-1][s.result] = self.fragment_of(p, s)

    def mma_load_into(self, s: A.MmaLoad) -> None:
        """``mma.load view, frag``: the view's elements into the declared fragment (WGMMA's "RS"
        mode: the A operand from registers), converted to its element type; the same shape."""
        target = unparen(s.target) if s.target is not None else None
        if not isinstance(target, A.Name):
            raise NotLifted("'mma.load view, frag' into something that is not a fragment's name", s)
        self.single_unit(s)
        p = self.place(s.src)
        self.check_swizzle(s, p)
        dst = self.fragment(target.name, s)
        src = self.fragment_of(p, s)
        placing = src.placing if isinstance(src, TileBuffer) else (None,)
        if isinstance(src, BufferView):  # a part of a buffer: its tile picked out (lift/parts.py)
            whole, placing = self.concat_view(src, s)
            tile, shape, sizes = self.part_tile(whole, s)
            extents = tuple(const_int(n) for n in sizes)
        elif isinstance(src, TileBuffer):
            tile, shape, extents = self.tile_value(src, s), src.tile, tuple(src.extents)
        else:
            raise NotLifted("'mma.load view, frag' of a view of this form", s)
        if any(u is not None for u in placing):  # the units' parts together (lift/units.py)
            raise NotLifted("'mma.load view, frag' of a part each unit picks (a fragment of each unit)", s)
        if extents != tuple(dst.extents) or tuple(shape) != tuple(dst.tile):
            raise CroqLoweringError(
                f"'mma.load' of a {[n for n in extents]} view into the {list(dst.extents)} fragment "
                f"'{target.name}': their shapes differ",
                s.span,
            )
        self.set_tile(dst, E.fold(E.Cast(tile, dst.var.type)), s)

    def check_swizzle(self, s: A.MmaLoad, p: Place) -> None:
        """``mma.load.swiz<N>`` reads a buffer in the layout the copy that wrote it states: the same
        swizzle, or the user's error (a swizzle stated on one side only is the other's too)."""
        if not s.swiz_given or not isinstance(p, BufferView) or p.buffer.swizzle is None:
            return
        want = swizzle_bytes(s.swiz) if s.swiz is not None else None
        have, line = p.buffer.swizzle
        if (want or 0) != have:
            raise CroqSemanticError(
                f"'{p.buffer.name}' is written with .swiz<{have}> at {self.src_name}:{line} but read with"
                f" mma.load.swiz<{want or 0}>",
                s.span,
                "the copy into a buffer and the mma.load from it must use the same swizzle",
            )

    def fragment_of(self, p: Place, node: A.Node) -> Place | TileBuffer:
        if isinstance(p, Region):
            return self.read_region(p, node)
        if not p.buffer.fixed:
            return p  # a buffer of run-time shape: read where the MMA takes it (dot_tile)
        whole, placing = self.concat_view(p, node)
        if self.covers(whole):
            copy = self.new_buffer(self.fresh(f"{p.buffer.name}_frag"), p.buffer.elem, p.buffer.extents, 0, node)
            self.set_tile(copy, self.tile_value(p.buffer, node), node)
            copy.placing = placing
            return copy
        return p

    def read_region(self, p: Region, node: A.Node) -> TileBuffer:
        """A window of a tensor as a fragment (zero where it lies outside the tensor), over all the
        units that place their tiles in it (lift/units.py)."""
        p, placing = self.concat_region(p, node)
        extents = tuple(const_int(x) for x in p.shape)
        if any(n is None or n < 1 for n in extents):
            raise NotLifted("an MMA operand of run-time extent", node)
        elem = self.host.tensors[p.tensor].elem  # type: ignore[attr-defined]
        buf = self.new_buffer(self.fresh(f"{p.tensor}_frag"), elem, extents, 0, node)  # type: ignore[arg-type]
        self.fill(p, self.whole_buffer(buf), True, node, tuple(range(len(extents))))
        buf.placing = placing
        return buf

    def covers(self, p: BufferView) -> bool:
        """Does the view cover its buffer (offsets that can only be 0, the buffer's extents)?"""
        for o, sh, n, keep in zip(p.offsets, p.shape, p.buffer.sizes, p.keep, strict=True):
            if E.bounds(E.fold(o)) != (0, 0) or (keep and not E.same(E.fold(sh), E.fold(n))):
                return False
            if not keep and const_int(n) != 1:
                return False
        return True

    def mma_op(self, s: A.MmaOp) -> None:
        self.single_unit(s)
        if s.variant not in ("", "async", "scale", "sp"):
            raise NotLifted(f"an 'mma.{s.variant}' MMA", s)
        a, b = self.operand(s.a, s), self.operand(s.b, s)
        scales = [self.scale_of(x) for x in s.extra] if s.variant == "scale" else []
        if s.variant == "scale" and len(scales) != 2:
            raise NotLifted("a block-scaled MMA without its two scales", s)
        self.mma(s, a, b, scales, self.sparse_meta(s))

    def sparse_meta(self, s: A.MmaOp) -> Place | TileBuffer | None:
        """The metadata operand of a 2:4 sparse MMA (None for any other MMA)."""
        if s.variant != "sp":
            return None
        if len(s.extra) != 1:
            raise NotLifted("a 2:4 sparse MMA without its metadata operand ('mma.row.row.sp acc, a, b, meta')", s)
        return self.operand(s.extra[0], s)

    def sparse_operand(
        self, s: A.MmaOp, a_k: int, ta: E.Expr, a_ext: tuple[E.Expr, E.Expr], meta: Place | TileBuffer
    ) -> tuple[E.Expr, tuple[E.Expr, E.Expr]]:
        """The dense tile and extents of the compressed A operand of ``s`` (lift/sparse.py)."""
        if a_k != 1:
            raise NotLifted("a 2:4 sparse MMA whose A operand is stored [K, M] ('mma.col.*.sp')", s)
        tm, m_ext, m_elem, m_units = self.dot_tile(meta, 1, s)
        if any(u is not None for u in m_units):
            raise NotLifted("sparse metadata that each unit picks a part of", s)
        meta_text = _spelled(s.extra[0])
        if m_elem not in INDEX_BITS:
            raise CroqSemanticError(
                f"the metadata '{meta_text}' of a 2:4 sparse MMA is {m_elem}: it holds 2-bit indices",
                s.extra[0].span or s.span,
                "give the metadata as an unsigned integer tensor (u8, or u32), as the host encodes it",
            )
        rows, packed_k, meta_k = const_int(a_ext[0]), const_int(a_ext[1]), const_int(m_ext[1])
        if rows is None or packed_k is None or meta_k is None:
            raise NotLifted("a 2:4 sparse MMA on operands of run-time extent", s)
        per = packed_per_element(packed_k, meta_k, m_elem)
        if const_int(m_ext[0]) != rows or per is None:
            raise CroqSemanticError(
                f"2:4 sparse MMA: '{_spelled(s.a)}' is [{rows}, {packed_k}] (kept values of {2 * packed_k}"
                f" K positions), its metadata '{meta_text}' [{size_text(m_ext[0])}, {meta_k}] of {m_elem}"
                " does not index them",
                s.extra[0].span or s.span,
                f"the metadata has A's rows, and a {m_elem} holds the 2-bit positions of 2 to "
                f"{INDEX_BITS[m_elem] // 2} kept values (a power of two): u8 metadata [M, K / 8] for A"
                " [M, K / 2] (docs/mma.md)",
            )
        shapes = (ta.shape, tm.shape)
        if not all(isinstance(n, int) for sh in shapes for n in sh) or ta.shape[1] != per * tm.shape[1]:
            raise NotLifted("a 2:4 sparse MMA whose operand tiles are padded unlike its metadata", s)
        base = _spelled(s.a).split(".")[0]
        dense = dense_tile(ta, tm, per, lambda e, what: self.named(e, f"{base}_{what}", s))
        return dense, (a_ext[0], E.fold(E.Bin("*", a_ext[1], E.Const(2))))

    def operand(self, e: A.Expr, node: A.Node) -> Place | TileBuffer:
        name = unparen(e)
        if isinstance(name, A.Name):
            v = self.binding(name.name)
            if isinstance(v, TileBuffer):
                return v
        return self.place(e)  # type: ignore[no-any-return]

    def mma(
        self,
        s: A.MmaOp,
        a: Place | TileBuffer,
        b: Place | TileBuffer,
        scales: list[Place | Value],
        meta: Place | TileBuffer | None = None,
    ) -> None:
        """``acc += a x b`` (LANGUAGE.md 7.9's table), times the scales of a block-scaled MMA; ``a``
        compressed by ``meta`` where the MMA is 2:4 sparse (lift/sparse.py)."""
        a_k, b_k = (1 if s.layout[0] == "row" else 0), (1 if s.layout[1] == "row" else 0)
        ta, a_ext, a_elem, a_units = self.dot_tile(a, a_k, s)
        if meta is not None:
            ta, a_ext = self.sparse_operand(s, a_k, ta, a_ext, meta)
        tb, b_ext, b_elem, b_units = self.dot_tile(b, b_k, s)
        if a_units[a_k] is not None or b_units[b_k] is not None:
            raise NotLifted("an MMA whose units split K (each unit adds its own part)", s)
        if not E.same(a_ext[a_k], b_ext[b_k]):
            ka, kb = const_int(a_ext[a_k]), const_int(b_ext[b_k])
            error = CroqSemanticError if ka is not None and kb is not None else CroqLoweringError  # both known
            dense = " (twice its kept values: 2:4 sparse)" if meta is not None else ""
            raise error(
                f"MMA operands disagree on K: '{_spelled(s.a)}' has K = {size_text(a_ext[a_k])}{dense}, "
                f"'{_spelled(s.b)}' has K = {size_text(b_ext[b_k])}",
                s.span,
                "K is an operand's last dimension where its layout says 'row', its first where 'col'"
                f" (mma.{s.layout[0]}.{s.layout[1]}: LANGUAGE.md 7.9)",
            )
        target = self.accumulator(s.acc, s)  # the user's errors first: types no MMA takes (lift/checks.py)
        mma_types(a_elem, b_elem, target.elem if isinstance(target, Fragment) else self.declared_type(target), s)
        if a_elem != b_elem or (a_elem not in DOT_ACCUMULATORS and a_elem not in SUMMED_ONLY):
            raise NotLifted(f"an MMA on {a_elem} x {b_elem} operands", s)
        extents = (a_ext[1 - a_k], b_ext[1 - b_k])
        follows = "s32" if a_elem in ("s8", "u8") else "f64" if a_elem == "f64" else "f32"  # an untyped fill
        raw = self.accumulator(s.acc, s)
        placing = (a_units[1 - a_k], b_units[1 - b_k])
        if isinstance(raw, Fragment) and raw.declared is not None:
            self.unit_shape(raw, raw.declared, extents, placing, s)
        acc = self.shaped(raw, extents, follows, s)
        if acc.placing and acc.placing != placing:
            raise NotLifted("MMAs that place the units' tiles of one accumulator differently", s)
        acc.placing = placing
        if acc.elem not in DOT_ACCUMULATORS.get(a_elem, SUMMED_ONLY.get(a_elem, ())):
            raise NotLifted(f"an MMA of {a_elem} operands into a {acc.elem} accumulator", s)
        tiles = (ta.shape[1 - a_k], tb.shape[1 - b_k], ta.shape[a_k])
        min_k = 32 if a_elem in ("s8", "f8_e4m3", "f8_e5m2") else MIN_DOT  # 8-bit operands: K of 32 on the GPU
        for n, least in zip(tiles, (MIN_DOT, MIN_DOT, min_k), strict=True):
            if isinstance(n, E.Extent):  # fixed at launch: the launcher passes at least tl.dot's smallest
                self.at_least(n, least)
        known = [n if isinstance(n, int) else 1 << 30 for n in tiles]
        small = min(known[:2]) < MIN_DOT or known[2] < min_k or a_elem in SUMMED_ONLY
        if small:  # smaller than tl.dot's smallest, or operands it rejects: a broadcast product summed over K
            self.emit_product(acc, s, scales, small_product(ta, tb, a_k, b_k, acc.var.type))
            return
        if a_elem == "bf16":  # Triton's interpreter computes bf16 dots wrongly: f32 there (module helper)
            ta, tb = E.Call("_as_dot_operand", (ta,), "f32"), E.Call("_as_dot_operand", (tb,), "f32")
        precision = self.options.dot_precision(a_elem, b_elem)
        out_dtype = acc.var.type if acc.var.type in ("i32", "f16", "f64") else None  # tl.dot adds in f32 otherwise
        trans_a, trans_b = a_k == 0, b_k == 1
        if not scales and not self.pred:
            self.emit(N.Dot(acc.var, ta, tb, acc.var, precision, out_dtype, trans_a, trans_b), s)
            if s.result is not None:
                self.scopes[-1][s.result] = MmaFuture()
            return
        prod = E.Var(self.fresh(f"{acc.name}_prod"), acc.var.type, dims=acc.tile)
        self.emit(N.Dot(prod, ta, tb, None, precision, out_dtype, trans_a, trans_b), s)
        self.emit_product(acc, s, scales, prod)

    def at_least(self, ext: E.Extent, least: int) -> None:
        """The launcher passes ``ext`` (a tile extent fixed at launch) at least ``least``."""
        arg = self.args[ext.name]
        if isinstance(arg, N.Constexpr) and arg.least < least:
            self.args[ext.name] = dataclasses.replace(arg, least=least)

    def emit_product(self, acc: TileBuffer, s: A.MmaOp, scales: list[Place | Value], prod: E.Expr) -> None:
        """``acc += prod`` times the scales, where the predicate holds."""
        value: E.Expr = prod
        for i, p in enumerate(scales):
            value = E.Bin("*", value, self.scale_tile(p, acc, s, rows=i == 0))
        new = E.fold(E.Bin("+", acc.var, value))
        if self.pred:
            new = E.Where(E.conj(self.pred), new, acc.var)
        self.emit(N.Assign(acc.var, new), s)
        if s.result is not None:
            self.scopes[-1][s.result] = MmaFuture()

    def mma_scale(self, s: A.MmaScale) -> None:
        """``mma.scale acc, sa, sb`` (LANGUAGE.md 7.9, split form): the MMAs into ``acc`` since the
        previous one went into a hidden accumulator (lift/splitscale.py names it ``temp``), which
        is added to ``acc`` times the scales."""
        if s.temp is None:
            raise NotLifted("an mma.scale without the MMAs it scales", s)
        self.single_unit(s)
        product = self.fragment(s.temp, s)
        acc = self.shaped(self.accumulator(s.acc, s), product.extents, "f32", s)  # type: ignore[arg-type]
        if acc.extents != product.extents:
            raise NotLifted("an mma.scale into an accumulator of another shape than its MMAs", s)
        acc.placing = acc.placing or product.placing
        value: E.Expr = E.Cast(self.tile_value(product, s), acc.var.type)
        for i, e in enumerate((s.sa, s.sb)):
            value = E.Bin("*", value, self.scale_tile(self.scale_of(e), acc, s, rows=i == 0))
        new = E.fold(E.Bin("+", self.tile_value(acc, s), value))
        if self.pred:
            new = E.Where(E.conj(self.pred), new, acc.var)
        self.set_tile(acc, new, s)

    def dot_tile(
        self, p: Place | TileBuffer, k: int, node: A.Node
    ) -> tuple[E.Expr, tuple[E.Expr, E.Expr], str, tuple[str | None, ...]]:
        """An operand's tile, its extents, element type and the units it concatenates per
        dimension; its padding along K is zeroed."""
        placing: tuple[str | None, ...] = (None, None)
        if isinstance(p, Region):
            p = self.read_region(p, node)
        elif isinstance(p, BufferView):
            whole, placing = self.concat_view(p, node)
            if not self.covers(whole):  # a part of the buffer: its tile selected (lift/parts.py)
                return self.part_operand(whole, k, placing, node)
            p = p.buffer
        if isinstance(p, TileBuffer) and any(u is not None for u in p.placing):
            placing = p.placing
        if len(p.extents) != 2:
            raise NotLifted("an MMA operand that is not two-dimensional", node)
        sizes = tuple(E.fold(n) for n in p.sizes)
        tile = self.k_zeroed(self.tile_value(p, node), p.tile, sizes, k, node)
        return tile, (sizes[0], sizes[1]), p.elem, placing

    def part_operand(
        self, view: BufferView, k: int, placing: tuple[str | None, ...], node: A.Node
    ) -> tuple[E.Expr, tuple[E.Expr, E.Expr], str, tuple[str | None, ...]]:
        """An MMA operand that is a part of a buffer (``lhs_s.chunkat(g, k)``): its tile picked out."""
        tile, shape, sizes = self.part_tile(view, node)
        if len(shape) != 2:
            raise NotLifted("an MMA operand that is not two-dimensional", node)
        return self.k_zeroed(tile, shape, sizes, k, node), (sizes[0], sizes[1]), view.buffer.elem, placing

    def k_zeroed(
        self, tile: E.Expr, shape: tuple[E.Dim, ...], sizes: tuple[E.Expr, ...], k: int, node: A.Node
    ) -> E.Expr:
        """``tile`` with its padding along K (past ``sizes[k]``) zero: it would add to the sum."""
        if shape[k] == const_int(sizes[k]):
            return tile
        coord = self.coords(shape, node)[k]
        return E.Where(E.Bin("<", coord, sizes[k]), tile, E.Full(shape, 0, tile.dtype))

    def scale_of(self, e: A.Expr) -> Place | Value:
        """A scale of a block-scaled MMA: a view, or one value (``scale_rhs.at(bn, k)``)."""
        name = unparen(e)
        v = self.binding(name.name) if isinstance(name, A.Name) else None
        if isinstance(v, Value) or isinstance(name, (A.At, A.FloatLit, A.IntLit)):
            value = self.expr(e)
            if value.expr.shape:
                raise NotLifted("a scale that depends on the thread", e)
            return value
        return self.place(e)  # type: ignore[no-any-return]

    def scale_tile(self, p: Place | Value, acc: TileBuffer, node: A.Node, rows: bool) -> E.Expr:
        """A scale as a factor of the product (LANGUAGE.md 7.9): the first (``rows``) one value per
        row of the accumulator, a view ``[M, 1]`` or, stored transposed, ``[1, M]``; the second one
        per column, ``[1, N]`` or ``[N, 1]``; either may be a view of one element or one value."""
        if isinstance(p, Value):
            return E.fold(E.Cast(p.expr, acc.var.type))
        if isinstance(p, BufferView):  # staged in a buffer (a ring slot of shared memory, registers)
            return self.buffer_scale(p, acc, node, rows)
        if not isinstance(p, Region):
            raise NotLifted("a scale that is not a view of a tensor or a buffer", node)
        if not p.shape:
            raise NotLifted("a scale of one element named by '.at'", node)
        buf = self.read_region(p, node)  # the units' scales side by side where they place them
        shape = tuple(buf.extents)
        return self.scale_factor(self.tile_value(buf, node), shape, tuple(buf.placing), acc, node, rows)

    def buffer_scale(self, p: BufferView, acc: TileBuffer, node: A.Node, rows: bool) -> E.Expr:
        """A scale that is a view of a buffer: the whole buffer's tile, or the part it names
        (lift/parts.py: ``scale_s.subspan(64, 1).at(stage, 0)``)."""
        whole, placing = self.concat_view(p, node)
        if self.covers(whole):
            buf = whole.buffer
            if len(buf.extents) != 2 or not buf.fixed:
                raise NotLifted("a scale staged in a buffer that is not two-dimensional of known extents", node)
            shape = tuple(int(n) for n in buf.tile)  # type: ignore[call-overload]
            return self.scale_factor(self.tile_value(buf, node), shape, tuple(placing), acc, node, rows)
        tile, shape, _ = self.part_tile(whole, node)
        if len(shape) != 2:
            raise NotLifted("a scale staged in a part of a buffer that is not two-dimensional", node)
        return self.scale_factor(tile, shape, tuple(placing), acc, node, rows)

    def scale_factor(
        self,
        tile: E.Expr,
        shape: tuple[E.Dim, ...],
        placing: tuple[str | None, ...],
        acc: TileBuffer,
        node: A.Node,
        rows: bool,
    ) -> E.Expr:
        """A scale's tile as the factor of the product: one value per row (``rows``) or column of
        the accumulator, either way round, or one value for all."""
        count = acc.extents[0] if rows else acc.extents[1]
        if shape == (1, 1) or shape == ((count, 1) if rows else (1, count)):
            flipped = False
        elif shape == ((1, count) if rows else (count, 1)):
            flipped = True  # stored the other way round: the same values, one a row (column)
        else:
            what = "per row of the accumulator" if rows else "per column of the accumulator"
            raise NotLifted(f"a scale view that is neither {what} nor one value", node)
        placing = tuple(reversed(placing)) if flipped else placing
        if any(u is not None and (i >= len(acc.placing) or acc.placing[i] != u) for i, u in enumerate(placing)):
            raise NotLifted("a scale whose units are not its accumulator's", node)
        if flipped:
            tile = E.Permute(tile, (1, 0))
        return E.Cast(tile, acc.var.type)

    # ================================================================ stores
    def mma_store(self, s: A.MmaStore) -> None:
        self.single_unit(s)
        if s.variant not in ("", "async", "transp", "mask"):
            raise NotLifted(f"an 'mma.store.{s.variant}'", s)
        dst = self.place(s.dst)
        if isinstance(dst, BufferView) and dst.buffer.home is None:
            self.fixed_buffer(dst.buffer, s)
        elif isinstance(dst, BufferView) and not dst.buffer.fixed:  # in scratch memory: stored there whole
            raise NotLifted("an mma.store into a buffer of run-time shape", s)
        shape = tuple(
            const_int(x) for x in (dst.shape if isinstance(dst, Region) else [dst.shape[d] for d in dst.axes])
        )
        rank = len(shape)  # an accumulator's tile, or a fragment reduced along a dimension (LANGUAGE.md 7.9)
        if rank not in (1, 2):
            raise NotLifted(f"an mma.store into a view of {rank} dimensions", s)
        transp = s.variant == "transp"
        if transp and rank == 1:
            raise NotLifted("an mma.store.transp into a one-dimensional view", s)
        acc = self.accumulator(s.acc, s)
        if isinstance(acc, Fragment):
            if None in shape:
                raise NotLifted("an mma.store of an accumulator only its store would shape", s)
            ext = (shape[1], shape[0]) if transp else shape
            acc = self.shaped(acc, ext, "f32", s)  # type: ignore[arg-type]
        if len(acc.extents) != rank:
            raise NotLifted(f"an mma.store of a {len(acc.extents)}-D fragment into a {rank}-D view", s)
        value: E.Expr = self.tile_value(acc, s)
        extents = acc.extents
        placing = acc.placing or (None,) * rank
        value, extents, placing = self.picked_tile(value, extents, placing)
        if transp:
            value, extents, placing = E.Permute(value, (1, 0)), (extents[1], extents[0]), (placing[1], placing[0])
        dst, dst_placing = self.concat_view(dst, s) if isinstance(dst, BufferView) else self.concat_region(dst, s)
        if tuple(dst_placing) != tuple(placing):
            raise NotLifted("an mma.store that places the units' tiles other than its MMAs", s)
        if isinstance(dst, BufferView):  # the accumulator's value is the buffer's tile
            if not (self.covers(dst) and dst.buffer.extents == extents and s.variant != "mask"):
                if s.variant == "mask" or (dst.buffer.home is not None and dst.buffer.home.lane is not None):
                    raise NotLifted("an mma.store into a part of a buffer", s)
                if dst.buffer.home is None:  # a register tile: the part's chunk of it replaced
                    self.store_fits(s, extents, tuple(dst.shape[d] for d in dst.axes))
                    part = self.part_store(dst, E.fold(E.Cast(value, dst.buffer.var.type)), s)
                    self.set_tile(dst.buffer, part, s)
                    return
                self.store_part(dst, E.fold(E.Cast(value, dst.buffer.var.type)), extents, s)
                return
            self.set_tile(dst.buffer, E.fold(E.Cast(value, dst.buffer.var.type)), s)
            return
        if s.variant != "mask":
            self.store_fits(s, extents, dst.shape)
        elem = self.host.tensors[dst.tensor].elem
        if ir_type(elem) == acc.var.type and not transp:  # stored as it is kept
            out = acc
        else:
            out = self.new_buffer(self.fresh(f"{acc.name}_out"), elem, extents, 0, s)
            self.set_tile(out, E.fold(E.Cast(value, out.var.type)), s)
        src = self.whole_buffer(out)
        if s.variant == "mask":  # only the first rows (and columns)
            if not 1 <= len(s.extra) <= rank:
                raise NotLifted("an mma.store.mask of this form", s)
            limits = [self.int_expr(x) for x in s.extra] + [E.Const(n) for n in extents[len(s.extra) :]]
            src = BufferView(out, src.offsets, tuple(limits), src.keep)
        self.empty(src, dst, s, tuple(range(rank)), only_src=s.variant == "mask")

    def picked_tile(
        self, value: E.Expr, extents: tuple[int, ...], placing: tuple[str | None, ...]
    ) -> tuple[E.Expr, tuple[int, ...], tuple[str | None, ...]]:
        """An accumulator of the units under ``inthreads (g == u)`` (lift/units.py): unit ``u``'s
        tile of it, the chunk of the concatenated tile along the dimension ``g`` places."""
        if not any(p in self.pinned for p in placing):
            return value, extents, placing
        shape = list(value.shape)
        ext, plc = list(extents), list(placing)
        for d, p in enumerate(placing):
            if p not in self.pinned:
                continue
            w = extents[d] // self.units[p]
            if w & (w - 1) or shape[d] % w:
                raise NotLifted(f"one unit's tile of an accumulator, {w} wide, picked under a condition", None)
            value = select_chunk(value, shape, d, w, E.Const(self.pinned[p]))
            shape[d], ext[d], plc[d] = w, w, None
        return value, tuple(ext), tuple(plc)

    def store_fits(self, s: A.MmaStore, extents: tuple[int, ...], window: tuple[E.Expr, ...]) -> None:
        """An accumulator larger than the window it is stored into (each extent known when
        translating) is the user's error, as a copy's source larger than its destination is
        (lift/checks.py); a window of run-time extent is the tail of the store."""
        if len(window) != len(extents):
            return
        for d, (a, b) in enumerate(zip(extents, window, strict=True)):
            n = const_int(b)
            if n is not None and a > n:
                acc = source_text(s.acc)
                shown = ", ".join(str(x) for x in extents)
                raise CroqSemanticError(
                    f"mma.store{'.transp' if s.variant == 'transp' else ''} of '{acc}' [{shown}] into"
                    f" '{source_text(s.dst)}' [{', '.join(str(const_int(x)) for x in window)}]: the accumulator"
                    f" is larger along dimension {d} ({a} > {n})",
                    s.span,
                    "store into a window of the accumulator's shape (a smaller one with 'mma.store.mask')",
                )

    def store_part(self, dst: BufferView, value: E.Expr, extents: tuple[int, ...], s: A.MmaStore) -> None:
        """The accumulator's tile stored into a part of a buffer in scratch memory (a unit's rows of
        a block's buffer): at the part's offsets, masked to the part and the tile's extents."""
        if len(dst.axes) != len(extents):
            raise NotLifted("an mma.store into a part of a buffer of another rank", s)
        coords = self.coords(value.shape, s)
        index = list(dst.offsets)
        inside: list[E.Expr] = []
        for k, d in enumerate(dst.axes):
            index[d] = E.fold(E.Bin("+", dst.offsets[d], coords[k]))
            inside += [E.Bin("<", coords[k], E.Const(extents[k])), E.Bin("<", coords[k], dst.shape[d])]
        addr, mask = self.scratch_address(dst.buffer, index, s)
        both = E.fold(E.conj([*inside, *([mask] if mask is not None else [])]))
        self.emit(N.Store(dst.buffer.home.arg, (addr,), value, self.named(both, "mask", s)), s)  # type: ignore[union-attr]

    # ================================================================ fragment element loops
    def apply(self, s: A.Apply) -> None:
        """``apply {i, j} in x.span``: the body for every element of ``x``, as lanes over its tile."""
        self.single_unit(s)
        buf = self.fragment(s.frag, s, fixed=False)  # of run-time extent: lanes the launcher fixes as its tile
        if len(s.vars) != len(buf.extents):  # (LANGUAGE.md 7.4: one name per dimension; sema/fragrules.py)
            raise CroqSemanticError(
                f"'apply {{{', '.join(s.vars)}}}' names {len(s.vars)} ind{'ices' if len(s.vars) != 1 else 'ex'} for"
                f" the {len(buf.extents)}-D fragment '{s.frag}' {list(buf.extents)}",
                s.span,
                "name one index per dimension of the fragment",
            )
        launch = buf.launch or (None,) * len(buf.extents)
        pairs: list[tuple[str | None, int | E.Expr, A.Node]] = [
            (v, n if at is None else at[0], s) for v, n, at in zip(s.vars, buf.extents, launch, strict=True)
        ]
        self.apply_scopes.append(len(self.scopes))  # the scope of its lanes: an element loop's (lift/lanesums.py)
        try:
            if self.lanes is None or all(d == 1 for d in self.lanes[1]):
                self.lanes_over(pairs, [s.body], s)
                return
            # threads that do not tell the elements apart (single_unit): the fragment is theirs together
            saved = self.lanes, self.lane_first, self.padding
            self.lanes, self.lane_first, self.padding = None, 0, [p for p in self.padding if not p.shape]
            try:
                self.lanes_over(pairs, [s.body], s)
            finally:
                self.lanes, self.lane_first, self.padding = saved
        finally:
            self.apply_scopes.pop()

    def frag_op(self, s: A.FragOp) -> None:
        """``copy(d, s)``, ``reduce_max(d, s, axis)`` / ``reduce_sum``, ``all_reduce_sum(x)``:
        whole-tile operations."""
        self.single_unit(s)
        names = [unparen(x) for x in s.args]
        if s.op == "all_reduce_sum" and len(names) == 1 and isinstance(names[0], A.Name):
            # the sum of a 1-D fragment across the threads that own parts of it: the lifted
            # fragment is its owners' together, each element the whole sum already (an ``apply``
            # adds every element's term, lift/lanesums.py): nothing left to add
            frag = self.fragment(names[0].name, s)
            if len(frag.extents) != 1:  # (LANGUAGE.md 7.9: a replicated 1-D fragment; sema/fragrules.py)
                raise CroqSemanticError(
                    f"'all_reduce_sum' sums a 1-D fragment across its owners; '{names[0].name}' is"
                    f" {list(frag.extents)}",
                    s.span,
                    "reduce it to one dimension first: 'reduce_sum(row, acc, 1); all_reduce_sum(row);'",
                )
            if frag.name not in self.lane_summed:
                raise NotLifted("an 'all_reduce_sum' of a fragment that no 'apply' sums into", s)
            return
        if len(names) != 2 or not all(isinstance(x, A.Name) for x in names):
            raise NotLifted(f"a '{s.op}' of this form", s)
        dst = self.fragment(names[0].name, s)  # type: ignore[attr-defined]
        # a reduction of an accumulator of run-time extent along that extent (a row's maximum over all
        # N columns) gives a fragment of constant extents: the tile's positions past the extent take
        # no part; any other use of one stays refused (lift/buffers.py fixed_buffer)
        src = self.fragment(names[1].name, s, fixed=not (s.op in REDUCTIONS and s.axis is not None))  # type: ignore[attr-defined]
        if not src.fixed and any(
            at is not None for d, at in enumerate(src.launch) if d != s.axis
        ):  # only the reduced extent may be known only at launch
            self.fixed_buffer(src, s)
        tile = self.tile_value(src, s)
        if s.op == "copy":
            if dst.extents != src.extents:  # (LANGUAGE.md 7.9; sema/fragrules.py where the declarations show it)
                raise CroqSemanticError(
                    f"'copy' copies a fragment into one of its shape; the destination is {list(dst.extents)} and"
                    f" the source {list(src.extents)}",
                    s.span,
                    "declare the destination with the source's extents",
                )
            self.set_tile(dst, E.fold(E.Cast(tile, dst.var.type)), s)
            return
        if s.op not in REDUCTIONS or s.axis is None:
            raise NotLifted(f"a '{s.op}' of this form", s)
        axis = s.axis
        if not 0 <= axis < len(src.extents):
            raise CroqSemanticError(f"axis {axis} is out of range for a {len(src.extents)}-D fragment", s.span)
        reduced = [n for d, n in enumerate(src.extents) if d != axis]
        if dst.extents != tuple(reduced):
            raise CroqSemanticError(
                f"'{s.op}' of a {list(src.extents)} fragment along axis {axis} gives {reduced}, "
                f"but the destination is {list(dst.extents)}",
                s.span,
            )
        op = REDUCTIONS[s.op]
        n = src.extents[axis]
        size = src.sizes[axis]  # (of run-time extent: as the launcher passes it, its tile a power of two above)
        if src.tile[axis] != n:  # the tile's padding does not take part
            if op == "max" and not src.var.type.startswith("f"):
                raise NotLifted("a reduce_max over integers along a padded dimension", s)
            coord = self.coords(src.tile, s)[axis]
            identity = float("-inf") if op == "max" else 0
            tile = E.Where(E.Bin("<", coord, size), tile, E.Full(src.tile, identity, src.var.type))
        self.set_tile(dst, E.fold(E.Cast(E.Reduce(op, tile, axis), dst.var.type)), s)

    def fragment(self, name: str, node: A.Node, fixed: bool = True) -> TileBuffer:
        """The tile of a fragment or buffer (an accumulator shaped by the first MMA into it);
        ``fixed``: its extents known when translating (else a register tile of extents the launcher
        fixes may do too)."""
        v = self.binding(name)
        if isinstance(v, Fragment):
            v = self.shaped(v, self.first_product(v, node), "f32", node)
        if not isinstance(v, TileBuffer):
            raise NotLifted(f"'{name}' used as a fragment", node)
        if not fixed and not v.fixed and v.home is None:
            return v
        return self.fixed_buffer(v, node)

    def first_product(self, frag: Fragment, node: A.Node) -> tuple[int | E.Expr, int | E.Expr]:
        """The shape of the product of the first MMA into ``frag`` after its fill, read off its
        operands where they stand now, or where the statements that name them define them (a
        run-time extent as its size: the accumulator is then a tile the launcher fixes, as the MMA
        itself would make it, for an 'apply' on it before that MMA in a loop)."""
        fill_line = frag.fills[0][1].line if frag.fills else 0
        for n in self.source_nodes():
            acc = unparen(n.acc) if isinstance(n, A.MmaOp) else None
            if isinstance(acc, A.Name) and acc.name == frag.name and n.span is not None and n.span.line >= fill_line:
                assert isinstance(n, A.MmaOp)
                a, b = self.extents_of(n.a, node, runtime=True), self.extents_of(n.b, node, runtime=True)
                if len(a) != 2 or len(b) != 2:
                    break
                return a[0 if n.layout[0] == "row" else 1], b[0 if n.layout[1] == "row" else 1]
        raise NotLifted(f"an accumulator '{frag.name}' read before any MMA gives it a shape", node)

    def extents_of(self, e: A.Expr, node: A.Node, runtime: bool = False) -> tuple[Any, ...]:
        """The extents of MMA operand ``e`` (ints; ``runtime``: a run-time one as its size, an
        expression, where refused otherwise)."""
        name = unparen(e)
        if isinstance(name, A.Member) and name.member == "data" and isinstance(unparen(name.base), A.Name):
            # a future's buffer (``sa.data``) is the future's destination, shaped where it is defined
            base = unparen(name.base)
            assert isinstance(base, A.Name)
            if self.binding(base.name) is None and base.name not in self.host.tensors:
                return self.declared_extents(base.name, node, runtime)
        if isinstance(name, A.Name) and self.binding(name.name) is None and name.name not in self.host.tensors:
            return self.declared_extents(name.name, node, runtime)
        base = unparen(name.base) if isinstance(name, A.Index) else None
        if isinstance(base, A.Name) and isinstance(self.binding(base.name), TileBuffer):
            # a slot of a ring that collapsed warp roles made one buffer (lift/collapse.py), named as
            # the source wrote it (``vs[j % S]``): one slot's extents, the array's declared shape
            return self.declared_extents(base.name, node, runtime)
        p = self.operand(e, node)
        if isinstance(p, Fragment):
            raise NotLifted("an MMA operand that is an accumulator without a shape", node)
        ext = p.extents if isinstance(p, TileBuffer) else self.place_shape(p)
        if any(x is None for x in ext):
            if runtime:
                sizes = p.sizes if isinstance(p, TileBuffer) else view_shape(p)
                return tuple(E.fold(x) if n is None else n for x, n in zip(sizes, ext))
            raise NotLifted("an MMA operand of run-time extent", node)
        return tuple(x for x in ext if x is not None)

    def declared_extents(self, name: str, node: A.Node, runtime: bool = False) -> tuple[Any, ...]:
        """The extents of what the statement that defines ``name`` (later on) makes of it."""
        for n in self.source_nodes():
            if isinstance(n, A.DmaStmt) and n.result == name and n.dst_storage and n.op in ("copy", "load"):
                return self.extents_in_loops(n, n.src, node, runtime)
            if isinstance(n, A.MmaLoad) and n.result == name:
                return self.extents_in_loops(n, n.src, node, runtime)
            if isinstance(n, (A.SpannedDecl, A.FragDecl)) and any(d.name == name for d in n.items):
                return self.static_shape(n.shape, n)  # type: ignore[no-any-return]
            if isinstance(n, A.Assign) and isinstance(n.target, A.Name) and n.target.name == name:
                return self.extents_of(n.value, node, runtime)
        raise NotLifted(f"the shape of '{name}'", node)

    def extents_in_loops(self, definition: A.Node, e: A.Expr, node: A.Node, runtime: bool = False) -> tuple[Any, ...]:
        """The extents of ``e`` where ``definition`` (a later statement) stands: the counters of the
        loops around it are bound for the while (a view's extents do not depend on their values, its
        origin does: ``a.subspan(16, 16).at(bm, k)`` read before the loop over ``k``)."""
        loops = _loops_around([self.top, *self.collapsed], definition)
        body, lets, depth = self.body, list(self.lets), len(self.scopes)
        try:
            for loop in loops:
                counters, tuples = self.counters(loop)
                scope: dict[str, Any] = dict(tuples)
                for c in counters:
                    if c.name != "_":
                        scope[c.name] = Bounded(E.Var(f"_{c.name.replace('#', '_')}", "i32", lo=0), c.extent)
                self.scopes.append(scope)
            return self.extents_of(e, node, runtime)
        finally:
            del self.scopes[depth:]
            self.body, self.lets = body, lets

    # ================================================================ K split into chunks
    def folded_k_loop(self, s: A.Foreach) -> bool:
        """A loop that only issues MMAs on the same chunk of K of both operands, the chunks
        partitioning K: lifted as the MMAs of the whole tiles (see the module's doc).  False where
        the loop is not one (it is lifted as a loop then)."""
        stmts = _mma_only(s.body, self.level_of)
        if stmts is None or not any(isinstance(x, A.MmaOp) for x in stmts):
            return False
        try:
            counters, tuples = self.counters(s)
        except NotLifted:
            return False
        if tuples or len(counters) != 1 or const_int(counters[0].start) != 0 or const_int(counters[0].stop) is None:
            return False
        c = counters[0]
        trips = const_int(c.stop)
        assert trips is not None
        j = E.Var(self.fresh(f"{c.name}_chunk"), "i32", lo=0, hi=trips - 1)
        self.scopes.append({c.name: Bounded(j, c.extent)} if c.name != "_" else {})
        ops: list[tuple[A.MmaOp, Place | TileBuffer, Place | TileBuffer, list[Place | Value], Place | None]] = []
        try:
            for x in stmts:
                if isinstance(x, A.PBy):  # a single unit inside the loop: its index is 0
                    for v in x.names:
                        self.scopes[-1][v] = Bounded(E.Const(0), E.Const(1))
                    self.threads = max(self.threads, UNIT_THREADS.get(self.level_of.get(id(x), ""), 1))
                elif isinstance(x, A.MmaLoad):
                    if x.result is None or x.is_async:
                        return False
                    p = self.place(x.src)
                    self.check_swizzle(x, p)
                    self.scopes[-1][x.result] = p
                elif isinstance(x, A.Assign):
                    self.scopes[-1][x.target.name] = self.place(x.value)  # type: ignore[attr-defined]
                else:
                    assert isinstance(x, A.MmaOp)
                    if x.variant not in ("", "scale", "sp") or x.result is not None:
                        return False
                    a_k, b_k = (1 if x.layout[0] == "row" else 0), (1 if x.layout[1] == "row" else 0)
                    a, b = self.operand(x.a, x), self.operand(x.b, x)
                    chunk_a, chunk_b = _chunk(a, a_k, j, trips), _chunk(b, b_k, j, trips)
                    scales = [self.scale_of(y) for y in x.extra] if x.variant == "scale" else []
                    meta = self.sparse_meta(x)
                    # (a 2:4 sparse A holds half of its chunk of K; its metadata is chunked with it)
                    chunk_m = _chunk(meta, a_k, j, trips) if meta is not None else None
                    if chunk_a is None or chunk_b is None or chunk_a[1] * (2 if meta else 1) != chunk_b[1]:
                        return False
                    if (meta is not None and chunk_m is None) or any(_depends(p, j) for p in scales):
                        return False
                    ops.append((x, chunk_a[0], chunk_b[0], scales, chunk_m[0] if chunk_m else None))
        except NotLifted:
            return False
        finally:
            self.scopes.pop()
        for x, a, b, scales, meta in ops:
            self.single_unit(x)
            self.mma(x, a, b, scales, meta)
        return True

    def source_nodes(self) -> Iterator[A.Node]:
        """The kernel's statements, and the programs its warp roles collapse to (lift/collapse.py:
        the names each role binds for itself renamed apart)."""
        yield from self.top.walk()  # type: ignore[attr-defined]
        for block in self.collapsed:
            yield from block.walk()

    def mma_uses(self, name: str) -> bool:
        """Does any statement of the kernel read ``name`` (an accumulator a fill declares)?"""
        return any(isinstance(n, A.Name) and n.name == name for n in self.source_nodes())

    def single_unit(self, node: A.Node) -> None:
        """MMA runs on one unit here: no lane tells apart what it computes.  Under lanes that the
        statement does not read (the threads of a warpgroup around its MMAs, a fragment of the
        threads of a block with ``apply`` over it), every lane computes the same: the threads run it
        together (LANGUAGE.md 7.3: collective statements are executed cooperatively), once."""
        if self.lanes is not None and any(d != 1 for d in self.lanes[1]) and self.lane_dependent(node):
            what = "an MMA" if isinstance(node, (A.MmaOp, A.MmaFill, A.MmaLoad, A.MmaStore)) else "a fragment operation"
            raise NotLifted(
                f"{what} in more than one unit or thread (a fragment each: it reads the thread index)", node
            )
        if any(p.shape for p in self.pred):
            raise NotLifted("an MMA under a condition on the thread index", node)

    def lane_dependent(self, node: A.Node) -> bool:
        """Does ``node`` read a value that differs between the lanes in scope?"""
        seen: set[str] = set()
        for n in node.walk():
            if not isinstance(n, A.Name) or n.name in seen:
                continue
            seen.add(n.name)
            if _shaped(self.binding(n.name)):
                return True
        return False


def _shaped(b: object, depth: int = 0) -> bool:
    """Does the binding ``b`` (a value, an index, a view, a buffer) differ between lanes: an
    expression of it with a block shape (a buffer's own tile aside), or a buffer of each thread?"""
    if depth > 4 or b is None:
        return False
    if isinstance(b, E.Expr):
        return bool(b.shape)
    if isinstance(b, TileBuffer):
        return b.home is not None and b.home.lane is not None
    if isinstance(b, (tuple, list)):
        return any(_shaped(x, depth + 1) for x in b)
    if dataclasses.is_dataclass(b):
        return any(
            _shaped(getattr(b, f.name), depth + 1)
            for f in dataclasses.fields(b)
            if f.name not in ("buffer", "var", "fills")
        )
    return False


def _filled(buf: TileBuffer, value: E.Expr) -> E.Expr:
    """The accumulator's tile filled with ``value``."""
    if isinstance(value, E.Const):
        return E.Full(buf.tile, value.value, buf.var.type)
    return spread(E.Cast(value, buf.var.type), buf.tile, buf.var.type)


def _mma_only(s: A.Stmt, level_of: dict[int, str]) -> list[Any] | None:
    """The statements of a loop body that only loads fragments, names views and issues MMAs (a
    single unit's ``parallel by 1`` around them as its :class:`A.PBy` levels), in order; None for
    any other body."""
    out: list[Any] = []

    def visit(x: A.Stmt) -> bool:
        if isinstance(x, A.Block):
            return all(visit(y) for y in x.stmts)
        if isinstance(x, A.Empty):
            return True
        if isinstance(x, A.Parallel):
            if x.is_async or any(ast_int(b) != 1 for lv in x.levels for b in lv.bound):
                return False
            out.extend(x.levels)
            return visit(x.body)
        if isinstance(x, A.AssignStmt):
            for a in x.items:
                if a.op != "=" or not isinstance(a.target, A.Name) or not isinstance(unparen(a.value), A.View):
                    return False
                out.append(a)
            return True
        if isinstance(x, (A.MmaLoad, A.MmaOp)):
            out.append(x)
            return True
        return False

    return out if visit(s) else None


def _chunk(p: Place | TileBuffer, k: int, j: E.Var, trips: int) -> tuple[Place, int] | None:
    """``p`` at chunk ``j`` of K (the kept dimension ``k``): the whole buffer it partitions over the
    ``trips`` chunks and the chunk's width; None where it is not such a chunk."""
    if not isinstance(p, BufferView) or len(p.axes) != 2:
        return None
    d = p.axes[k]
    width = const_int(p.shape[d])
    lin = E.linear(E.fold(p.offsets[d]), [j.name])
    if width is None or lin is None:
        return None
    coeffs, base = lin
    if coeffs.get(j.name) != width or const_int(base) != 0 or width * trips != p.buffer.extents[d]:
        return None
    other = p.axes[1 - k]
    if (
        _uses(p.offsets[other], j)
        or _uses(p.shape[other], j)
        or any(_uses(o, j) for i, o in enumerate(p.offsets) if not p.keep[i])
    ):
        return None
    offsets = tuple(E.Const(0) if i == d else o for i, o in enumerate(p.offsets))
    shape = tuple(E.Const(p.buffer.extents[d]) if i == d else x for i, x in enumerate(p.shape))
    return BufferView(p.buffer, offsets, shape, p.keep), width


def _uses(e: E.Expr, j: E.Var) -> bool:
    return any(v.name == j.name for v in E.free_vars(e))


def _depends(p: Place | Value, j: E.Var) -> bool:
    if isinstance(p, Value):
        return _uses(p.expr, j)
    parts = list(p.offsets) + list(p.shape) if isinstance(p, BufferView) else list(p.origin) + list(p.shape)
    return any(_uses(x, j) for x in parts)


def small_product(ta: E.Expr, tb: E.Expr, a_k: int, b_k: int, acc_type: str) -> E.Expr:
    """``sum over k of a[m, k] * b[k, n]`` as a broadcast product (``a[:, :, None] * b[None, :, :]``)
    in the accumulator's type: an MMA below ``tl.dot``'s smallest shape (``m8n8k4``)."""
    a = ta if a_k == 1 else E.Permute(ta, (1, 0))  # [M, K]
    b = tb if b_k == 0 else E.Permute(tb, (1, 0))  # [K, N]
    lhs = E.Cast(E.Lift(a, 3, (0, 1)), acc_type)
    rhs = E.Cast(E.Lift(b, 3, (1, 2)), acc_type)
    return E.Reduce("sum", E.Bin("*", lhs, rhs), 1)


def _spelled(e: A.Expr) -> str:
    """An MMA operand as the source names it (a name, else its kind)."""
    x = unparen(e)
    return x.name if isinstance(x, A.Name) else Printer().expr(x)


def _loops_around(roots: list[Any], target: A.Node) -> list[A.Foreach]:
    """The ``foreach`` statements around ``target`` under the first of ``roots`` that holds it,
    outermost first (none where it is not under a loop)."""

    def search(n: A.Node, path: list[A.Foreach]) -> list[A.Foreach] | None:
        if n is target:
            return path
        inner = [*path, n] if isinstance(n, A.Foreach) else path
        for k in n.children():
            found = search(k, inner)
            if found is not None:
                return found
        return None

    for root in roots:
        found = search(root, [])
        if found is not None:
            return found
    return []
