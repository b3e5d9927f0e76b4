"""The tile of a part of a buffer in registers (``buf.subspan(48, 16).at(0, 1)``,
``lhs_s.chunkat(g, k)``), as a mixin of the kernel lifter (lift/kernel.py).

Triton has no slices of a block, so a part is selected: along a dimension whose part has a
power-of-two width ``w`` dividing the tile's extent and starts at a multiple of ``w`` (``j * w``,
``j`` known or not when translating), the tile is reshaped to ``[.., n / w, w, ..]`` and the
``j``-th of those chunks is summed out of the others' zeros (``tl.where`` picks, so no other
element's value, NaN included, reaches the part).  Parts of other forms raise :class:`NotLifted`.
"""

from __future__ import annotations

import math
from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from .buffers import BufferView
from .notlifted import NotLifted
from .terms import const_int


class Parts:
    tile_value: Any

    def part_tile(self, view: BufferView, node: A.Node) -> tuple[E.Expr, tuple[int, ...], tuple[E.Expr, ...]]:
        """The tile of ``view`` over its kept dimensions, its block shape and its sizes."""
        buf = view.buffer
        if not buf.fixed or buf.var.type == "i1":
            raise NotLifted("a part of a buffer of run-time shape or of bools", node)
        value: E.Expr = self.tile_value(buf, node)
        shape = [int(n) for n in buf.tile]  # type: ignore[call-overload]
        sizes: list[E.Expr] = []
        for d in range(len(shape)):
            o = E.fold(view.offsets[d])
            w = const_int(view.shape[d]) if view.keep[d] else 1
            if w is None:
                raise NotLifted("a part of a buffer of run-time extent", node)
            if view.keep[d]:
                sizes.append(E.Const(w))
            if E.bounds(o) == (0, 0) and (w == buf.extents[d] or w == shape[d]):
                continue  # the whole dimension
            if w & (w - 1) or shape[d] % w:
                raise NotLifted(f"a part {w} wide of a buffer dimension of {buf.extents[d]}", node)
            j = chunk_index(o, w)
            if j is None:
                raise NotLifted("a part of a buffer that does not start at a multiple of its width", node)
            parts = shape[d] // w
            if parts > 1:
                value = select_chunk(value, shape, d, w, j)
            shape[d] = w
        kept = tuple(n for n, k in zip(shape, view.keep, strict=True) if k)
        if len(kept) != len(shape):
            value = E.Reshape(value, kept)
        return value, kept, tuple(sizes)

    def part_store(self, view: BufferView, value: E.Expr, node: A.Node) -> E.Expr:
        """The buffer's tile with ``value`` (the part's tile, of the part's kept dimensions) written
        into the part ``view`` of it (a dimension ``.at`` drops: a part one wide), the rest of the
        tile as it was: along each dimension the
        part has a power-of-two width dividing the tile's extent and starts at a multiple of it
        (``j * w``); the tile is reshaped to ``[.., n / w, w, ..]`` and chunk ``j`` replaced
        (``tl.where``), so no element outside the part changes.  A part at offset 0 whose tile is the
        buffer's along a dimension (``[64, 160]`` of ``[64, 176]``: tiles of 256) is its first ``w``
        elements there, of any width."""
        buf = view.buffer
        if not buf.fixed or buf.var.type == "i1":
            raise NotLifted("a write into a part of a buffer of run-time shape or of bools", node)
        old: E.Expr = self.tile_value(buf, node)
        shape = [int(n) for n in buf.tile]  # type: ignore[call-overload]
        split: list[int] = []
        picks: list[E.Expr] = []
        bounded: list[tuple[int, int]] = []  # dimensions whose part is the first w elements
        if len(value.shape) != sum(view.keep):
            raise NotLifted("a write into a part of a buffer of another rank than the part's", node)
        for d in range(len(shape)):
            o = E.fold(view.offsets[d])
            w = const_int(view.shape[d]) if view.keep[d] else 1  # a dropped dimension: a part one wide
            if w is None:
                raise NotLifted("a write into a part of a buffer of run-time extent", node)
            if E.bounds(o) == (0, 0) and (w == buf.extents[d] or w == shape[d]):
                split.append(shape[d])
                continue
            lanes = value.shape[sum(view.keep[:d])] if view.keep[d] else 1
            if E.bounds(o) == (0, 0) and lanes == shape[d]:  # the first w of the tile's elements
                bounded.append((d, w))
                split.append(shape[d])
                continue
            if w & (w - 1) or shape[d] % w:
                raise NotLifted(f"a write into a part {w} wide of a buffer dimension of {buf.extents[d]}", node)
            j = chunk_index(o, w)
            if j is None:
                raise NotLifted("a write into a part of a buffer that does not start at a multiple of its width", node)
            picks.append((d, shape[d] // w, j))  # type: ignore[arg-type]
            split.append(w)
        kept = tuple(n for n, k in zip(split, view.keep, strict=True) if k)
        if tuple(value.shape) != kept:
            raise NotLifted("a write into a part of a buffer of another shape than the part's tile", node)
        if len(kept) != len(split):
            value = E.Reshape(value, tuple(split))
        if not picks and not bounded:
            return value
        # [.., n / w, w, ..] per picked dimension: chunk axes first, then the part's own axes
        counts = [n for _, n, _ in picks]  # type: ignore[misc]
        full = (*counts, *split)
        rank = len(full)
        spread_value = E.Lift(E.fold(value), rank, tuple(range(len(counts), rank)))
        chunked = E.Reshape(old, tuple(_interleaved(shape, picks)))
        order = _chunk_first(shape, picks)
        chunked = E.Permute(chunked, order)
        pick = E.conj(
            [E.Bin("==", E.Lift(E.Arange(n), rank, (k,)), j) for k, (_, n, j) in enumerate(picks)]  # type: ignore[misc]
            + [E.Bin("<", E.Lift(E.Arange(shape[d]), rank, (len(counts) + d,)), E.Const(w)) for d, w in bounded]
        )
        new = E.Where(E.fold(pick), spread_value, chunked)
        back = tuple(order.index(a) for a in range(rank))
        return E.Reshape(E.Permute(new, back), tuple(shape))


def _interleaved(shape: list[int], picks: list) -> list[int]:
    """``shape`` with each picked dimension ``d`` of width ``w`` split into ``[n / w, w]``."""
    out: list[int] = []
    widths = {d: n for d, n, _ in picks}
    for d, n in enumerate(shape):
        out += [widths[d], n // widths[d]] if d in widths else [n]
    return out


def _chunk_first(shape: list[int], picks: list) -> tuple[int, ...]:
    """The permutation of the interleaved axes that puts the chunk axes first, in order."""
    chunk_axes: list[int] = []
    own: list[int] = []
    axis = 0
    picked = {d for d, _, _ in picks}
    for d in range(len(shape)):
        if d in picked:
            chunk_axes.append(axis)
            own.append(axis + 1)
            axis += 2
        else:
            own.append(axis)
            axis += 1
    return (*chunk_axes, *own)


def chunk_index(o: E.Expr, w: int) -> E.Expr | None:
    """``j`` with ``o == j * w`` for every value of its variables (None where that is not shown)."""
    if w == 1 and E.is_int(o.dtype):
        return o  # an index: ``sa[k % 2]`` of an array of buffers
    names = [v.name for v in E.free_vars(o)]
    lin = E.linear(o, names)
    if lin is None:
        return _divided(o, w)  # ``(k % 2) * 64``: a multiple of w whatever ``k % 2`` is
    coefs, rest = lin
    base = E.fold(rest)
    if not isinstance(base, E.Const) or int(base.value) % w or any(c % w for c in coefs.values()):
        return None
    j: E.Expr = E.Const(int(base.value) // w)
    for v in E.free_vars(o):
        if v.name in coefs:
            j = E.Bin("+", j, E.Bin("*", E.Const(coefs.pop(v.name) // w), v))
    return E.fold(j)


def _divided(o: E.Expr, w: int) -> E.Expr | None:
    """``o / w`` where ``o`` is a multiple of ``w`` by its form (sums and differences of multiples,
    an integer expression times a constant multiple of ``w``), None where that is not shown."""
    if isinstance(o, E.Const):
        return E.Const(int(o.value) // w) if isinstance(o.value, int) and o.value % w == 0 else None
    if not isinstance(o, E.Bin) or not E.is_int(o.dtype):
        return None
    if o.op in ("+", "-"):
        a, b = _divided(o.lhs, w), _divided(o.rhs, w)
        return E.fold(E.Bin(o.op, a, b)) if a is not None and b is not None else None
    if o.op == "*":
        for x, c in ((o.lhs, o.rhs), (o.rhs, o.lhs)):
            if isinstance(c, E.Const) and isinstance(c.value, int) and c.value > 0:
                g = math.gcd(c.value, w)
                rest = x if g == w else _divided(x, w // g)
                if rest is not None:
                    return E.fold(E.Bin("*", rest, E.Const(c.value // g)))
    return None


def select_chunk(value: E.Expr, shape: list[int], d: int, w: int, j: E.Expr) -> E.Expr:
    """Chunk ``j`` (``w`` wide) of ``value`` along dimension ``d``."""
    split = (*shape[:d], shape[d] // w, w, *shape[d + 1 :])
    chunks: E.Expr = E.Reshape(value, split)
    kept = value.dtype
    if kept in ("i8", "i16", "u8", "u16"):  # tl.sum widens these to 32 bits: sum there, then narrow
        chunks, kept = E.Cast(chunks, "i32"), "i32"
    pick = E.Bin("==", E.Lift(E.Arange(shape[d] // w), len(split), (d,)), j)
    zero = E.Full(split, 0, kept)
    return E.Cast(E.Reduce("sum", E.Where(pick, chunks, zero), d), value.dtype)
