"""Views of ``shared`` / ``local`` buffers that re-window their elements (LANGUAGE.md 7.6), as a
mixin of the kernel lifter (lift/kernel.py): ``.view(e..).from(o..)`` of the buffer's rank (a window
at any origin, known at run time), ``.view(e.. : st..).from(o..)`` / ``.subspan(e.. : st..)`` with
explicit strides, and ``.view(..)`` of another rank (dense, in row-major order).

A view is index arithmetic over the buffer's elements: element ``i`` of a strided or rank-changing
view is the element at the flat position ``origin + sum i_d * st_d`` of the buffer's row-major
order (``origin``: the parent's own position plus ``sum o_d * st_d``).  A window of the buffer's
rank stays a :class:`BufferView` (per dimension an offset and an extent: its reads outside the
window or the buffer read zero, LANGUAGE.md 14.3); a strided or rank-changing view is a
:class:`TileBuffer` over the buffer's scratch area with ``steps``.  Such views address elements at
run-time positions, which a register tile cannot: the buffer moves to scratch memory
(:class:`NotInRegisters`), where each element is a load or store at its address (lift/scratch.py).
"""

from __future__ import annotations

from typing import Any

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..tir import expr as E
from .buffers import BufferView, TileBuffer, dense_steps, known_elements, pow2, strided_parts
from .notlifted import NotInRegisters, NotLifted
from .terms import const_int


def flat_position(buf: TileBuffer, index: tuple[E.Expr, ...] | list[E.Expr]) -> E.Expr:
    """Where element ``index`` of ``buf`` lies in its scratch area's row-major order (lanes' copies
    apart): along its steps from its origin for a strided view, else row-major by its sizes."""
    flat: E.Expr = buf.origin if buf.origin is not None else E.Const(0)
    if buf.steps is not None:
        for i, st in zip(index, buf.steps, strict=True):
            flat = E.Bin("+", flat, E.Bin("*", i, st))
        return E.fold(flat)
    rows: E.Expr = E.Const(0)
    for i, n in zip(index, buf.sizes, strict=True):
        rows = E.Bin("+", E.Bin("*", rows, n), i)
    return E.fold(E.Bin("+", flat, rows))


def fits_buffer(view: BufferView) -> bool:
    """Does ``view`` lie inside its buffer for every value of its origin's variables, along each
    dimension of a constant extent (one of run-time extent, ``mma.store.mask``'s rows, is bounded
    by the copy itself)?"""
    for o, n, size, k in zip(view.offsets, view.shape, view.buffer.sizes, view.keep, strict=True):
        width, room = const_int(n) if k else 1, const_int(size)
        if width is None or room is None:
            continue
        lo, hi = E.bounds(E.fold(o))
        if lo is None or lo < 0 or hi is None or hi + width > room:
            return False
    return True


def element_count(buf: TileBuffer) -> E.Expr:
    """The elements of ``buf``'s scratch area a view of it may reach."""
    if buf.room is not None:
        return buf.room
    count: E.Expr = E.Const(1)
    for n in buf.sizes:
        count = E.fold(E.Bin("*", count, n))
    return count


class BufferViews:
    """``.view`` and explicit strides of views of buffers; the lifter supplies the rest."""

    int_expr: Any
    extent_items: Any
    claim: Any
    whole_buffer: Any
    part_of: Any
    launch_extent: Any
    host_of: Any

    def copied_window(self, view: BufferView, node: A.Node) -> BufferView:
        """``view`` as a copy reads it: a window that may reach past its buffer (at a run-time
        origin) reads zero there, so its elements are read at their addresses in scratch memory
        (the buffer moves there), zero outside; any other view as it is."""
        if view.whole or fits_buffer(view):
            return view
        if view.buffer.home is None:
            raise NotInRegisters("a copy out of a window that may reach past its buffer", view.buffer.name, node)
        if view.buffer.part is not None or view.buffer.of is not None:
            raise NotLifted("a copy out of a window of a part of a buffer that may reach past it", node)
        return self.whole_buffer(self.part_of(view, node))

    def buffer_window(self, p: BufferView, op: A.ViewOp) -> BufferView | TileBuffer:
        """``p.view(e..).from(o..)`` without strides: a window of ``p``'s rank at ``o`` in ``p``'s
        coordinates, whose extents bound it; of another rank, the dense view of ``e`` from the element
        ``o`` (one offset per dimension of ``p``) or from ``sum o_d * st_d`` (one per extent of the
        view, ``st`` the dense strides of ``e``)."""
        items = self.extent_items(op.args)
        origin = list(op.at or [])
        kept = list(p.axes)
        if len(items) == len(kept) and len(origin) == len(kept):
            offs, shape = list(p.offsets), list(p.shape)
            for j, d in enumerate(kept):
                offs[d] = E.fold(E.Bin("+", offs[d], self.int_expr(origin[j])))
                shape[d] = p.shape[d] if items[j] is None else items[j]
            return BufferView(p.buffer, tuple(offs), tuple(shape), p.keep)
        if any(x is None for x in items):
            raise CroqSemanticError(
                "a '.view' that changes the rank takes its extents without '_'", op.span, "spell out each extent"
            )
        shape = tuple(x for x in items if x is not None)
        steps = dense_steps(shape)
        if len(origin) == len(kept):  # the origin in the parent's coordinates
            offs = list(p.offsets)
            for j, d in enumerate(kept):
                offs[d] = E.fold(E.Bin("+", offs[d], self.int_expr(origin[j])))
            return self.strided_buffer(BufferView(p.buffer, tuple(offs), p.shape, p.keep), shape, steps, E.Const(0), op)
        if len(origin) != len(shape):
            raise CroqSemanticError(
                f"a '.view' of {len(shape)} extent(s) that changes the rank takes {len(shape)} offset(s) (or one per"
                f" dimension of its parent, {len(kept)}), {len(origin)} given",
                op.span,
                "give one offset per extent of the view",
            )
        flat: E.Expr = E.Const(0)
        for o, st in zip(origin, steps, strict=True):
            flat = E.Bin("+", flat, E.Bin("*", self.int_expr(o), st))
        return self.strided_buffer(p, shape, steps, flat, op)

    def buffer_strided(self, p: BufferView, op: A.ViewOp) -> TileBuffer:
        """``p.view(e.. : st..).from(o..)`` / ``p.subspan(e.. : st..)[.at(i..)]`` (LANGUAGE.md 7.6):
        element ``i`` is the element ``sum o_d * st_d + sum i_d * st_d`` past ``p``'s origin in the
        buffer's row-major order (``.at(i)`` moves the origin by ``i * e`` in ``p``'s coordinates)."""
        if op.kind not in ("view", "subspan") or op.step or (op.kind == "view" and op.at is None):
            raise NotLifted(f"a '.{op.kind}' with explicit strides and this form", op)
        steps, shape, flat, at = strided_parts(op, len(p.axes), self.int_expr)
        if at is not None:
            offs = list(p.offsets)
            for j, d in enumerate(p.axes):
                offs[d] = E.fold(E.Bin("+", offs[d], E.Bin("*", self.int_expr(at[j]), shape[j])))
            p = BufferView(p.buffer, tuple(offs), p.shape, p.keep)
        return self.strided_buffer(p, shape, steps, flat, op)

    def strided_buffer(
        self, p: BufferView, shape: tuple[E.Expr, ...], steps: tuple[E.Expr, ...], flat: E.Expr, op: A.ViewOp
    ) -> TileBuffer:
        """``shape`` elements ``steps`` apart from ``flat`` past the first element of ``p``, in its
        buffer's scratch area (the buffer moves there where it is a register tile).

        An extent known only at launch (``s.view(h : 2).from(0)`` with ``h`` an argument, a dense view of
        a buffer of run-time shape) is a tile extent the launcher fixes (a constexpr argument, the power of
        two at or above it, lift/buffers.py ``launch_extent``); the view's elements past its extent are
        outside it, those past the buffer's area outside the buffer (lift/scratch.py bounds each
        address by ``room``).  An extent the launcher cannot compute (one that varies in the kernel)
        stays refused at the view."""
        buf = p.buffer
        dims = [const_int(n) for n in shape]
        if any(n is not None and n < 1 for n in dims):
            raise CroqSemanticError("a view of no elements", op.span, "give each extent of the view at least one")
        if buf.home is None:
            raise NotInRegisters("a strided or rank-changing view of a buffer", buf.name, op)
        if buf.part is not None:
            raise NotLifted("a strided or rank-changing view of a part of a buffer read by element", op)
        origin = E.fold(E.Bin("+", flat_position(buf, p.offsets), flat))
        name = self.claim(f"{buf.name}_view")
        launch: tuple[tuple[E.Expr, E.Dim] | None, ...] = ()
        if any(n is None for n in dims):
            fixed = known_elements(dims)
            what = f"a view of the buffer '{buf.name}'"
            launch = tuple(
                None if n is not None else (x, self.view_tile(x, f"{name.upper()}_D{d}", what, op, fixed))
                for d, (n, x) in enumerate(zip(dims, shape, strict=True))
            )
        view = TileBuffer(
            buf.name,
            buf.elem,
            tuple(n or 0 for n in dims),
            E.Var(name, buf.var.type),
            buf.fill,
            buf.line,
            True,
            launch=launch,
            home=buf.home,
            origin=origin,
            steps=steps,
            room=element_count(buf),
        )
        view.var = E.Var(name, buf.var.type, dims=view.tile)
        return view

    def view_tile(self, size: E.Expr, name: str, what: str, op: A.ViewOp, fixed: int) -> E.Dim:
        """The tile extent of a view's run-time extent ``size``: the power of two at or above its
        largest value where the kernel bounds it and the launcher cannot compute it (``k + 1`` of a
        loop counter ``k``), else one the launcher fixes from the arguments (``h``)."""
        _, hi = E.bounds(E.fold(size))
        if self.host_of(size) is not None:
            return self.launch_extent(size, name, what, op, fixed)  # type: ignore[no-any-return]
        if hi is None:
            raise NotLifted(
                "a strided or rank-changing view of a buffer whose extent the kernel computes without a bound",
                op,
                "give the view an extent the launcher can compute from the arguments, or one with a constant"
                " largest value (a loop counter's)",
            )
        if hi < 1:
            raise CroqSemanticError("a view of no elements", op.span, "give each extent of the view at least one")
        return pow2(hi)
