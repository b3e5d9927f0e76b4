"""Futures that move names, not bytes (LANGUAGE.md 7.8), as a mixin of the kernel lifter
(lift/kernel.py): ``f = dma.any`` / ``tma.any`` (a placeholder a later copy rebinds), ``swap(a,
b)`` and ``rotate(a, b, c)`` (the buffers' contents change places: a double buffer's loaded
tile becomes the current one), ``x = select(i, f0, f1)`` with ``i`` known when translating.

In the lifted program a future's buffer is a register tile, so exchanging two futures is an
exchange of two tile variables (through a temporary): inside a loop the tiles it carries
change with it.  A buffer in scratch memory (lift/placement.py) has its tile loaded and the
exchanged tiles stored back (the barriers between are lift/hazards.py's).  Buffers whose extents
are known only at launch (``dma.copy x.subspan(1, N).at(r, 0) => shared``) exchange the same
way: buffers of one run-time size have one constexpr tile extent (lift/buffers.py launch_extent).  ``rotate(a, b, c)`` gives ``a`` what ``b`` had, ``b`` what ``c`` had and ``c``
what ``a`` had.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..tir import expr as E
from ..tir import nodes as N
from .buffers import BufferView, CopyFuture, TileBuffer
from .notlifted import NotLifted
from .terms import const_int, unparen


@dataclass(frozen=True)
class AnyFuture:
    """``f = tma.any``: a future of no copy yet (a later copy into fresh memory rebinds it).
    ``body`` and ``after``: where it was declared in the lifted program (the statement list, and the
    statement it follows there), where a swap that gives it a buffer binds that buffer."""

    body: list[Any] | None = field(default=None, compare=False)
    after: Any = field(default=None, compare=False)


def same_shape(buffers: list[TileBuffer]) -> bool:
    """Do the buffers have one element type, one shape and one tile (extents known only at launch
    compared as the sizes they are computed from: one size, one constexpr extent of the tile)?"""
    first = buffers[0]
    return all(
        b.var.type == first.var.type
        and b.tile == first.tile
        and len(b.sizes) == len(first.sizes)
        and all(E.same(E.fold(x), E.fold(y)) for x, y in zip(b.sizes, first.sizes, strict=True))
        for b in buffers
    )


class Futures:
    scopes: list[dict[str, Any]]
    lookup: Any
    emit: Any
    body: list[N.Stmt]
    fresh: Any
    tile_value: Any
    new_buffer: Any
    launch_buffer: Any
    whole_buffer: Any
    set_tile: Any
    int_expr: Any
    give_home: Any
    scratch_names: set[str]

    def dma_any(self, s: A.DmaAny) -> None:
        self.scopes[-1][s.result] = AnyFuture(self.body, self.body[-1] if self.body else None)

    def bind_placeholders(self, branches: list[dict[str, Any]]) -> None:
        """A copy under a condition into a placeholder (``if (k + 1 < n) nxt = dma.copy .. =>
        shared`` after ``nxt = dma.any``) binds the placeholder (LANGUAGE.md 7.8: a later copy
        rebinds it), not a name of the branch: after the ``if`` the name is the copy's future.
        Where the condition is false the buffer holds what the copy's masked load left (zeros),
        and a placeholder has no contents of its own to keep.  Only one branch may bind it."""
        seen: dict[str, int] = {}
        for scope in branches:
            for name, v in scope.items():
                if isinstance(v, CopyFuture):
                    seen[name] = seen.get(name, 0) + 1
        for scope in branches:
            for name, v in scope.items():
                if seen.get(name) == 1 and isinstance(v, CopyFuture) and self.placeholder(name):
                    self.scopes[-1][name] = v

    def placeholder(self, name: str) -> bool:
        """Is ``name`` bound to a ``dma.any`` / ``tma.any`` placeholder in scope?"""
        for sc in reversed(self.scopes):
            if name in sc:
                return isinstance(sc[name], AnyFuture)
        return False

    def no_copy_read(self, e: A.Member) -> None:
        """``f.data`` of a ``dma.any`` / ``tma.any`` that no statement of the kernel ever gives a copy
        (no copy, swap, rotate or assignment names it): the program reads a future that holds no
        copy (LANGUAGE.md 7.8), the user's error, as between launches (lift/hostcopy.py)."""
        base = unparen(e.base)
        if not isinstance(base, A.Name) or not self.placeholder(base.name):
            return
        name = base.name
        for n in self.source_nodes():
            if isinstance(n, A.DmaStmt) and n.result == name:
                return
            if isinstance(n, A.Swap) and name in n.names:
                return
            if isinstance(n, A.Assign) and isinstance(n.target, A.Name) and n.target.name == name:
                return
        raise CroqSemanticError(
            f"the future '{name}' holds no copy here (it is a 'dma.any' / 'tma.any' placeholder)",
            e.span,
            f"bind a copy to it before reading its buffer ('{name} = dma.copy ... => shared;')",
        )

    def swap(self, s: A.Swap) -> None:
        if all(self.placeholder(n) for n in s.names):
            return  # placeholders of no copy change places: nothing to move (LANGUAGE.md 7.8)
        if all(self.only_waited(n, s) for n in s.names):
            return  # futures read by 'wait' alone (their copies' data read where they were put): no bytes move
        self.bind_swapped_placeholders(s)
        buffers = [self.swapped(n, s) for n in s.names]
        if len(buffers) < 2 or not same_shape(buffers):
            raise NotLifted(f"a '{s.kind}' of buffers of different shapes", s)
        first = self.tile_value(buffers[0], s)
        keep = E.Var(self.fresh(f"{buffers[0].var.name}_was"), first.type, dims=first.shape)
        self.emit(N.Let(keep, first), s)
        for b, nxt in zip(buffers, buffers[1:], strict=False):
            self.set_tile(b, self.tile_value(nxt, s), s)
        self.set_tile(buffers[-1], keep, s)

    def bind_swapped_placeholders(self, s: A.Swap) -> None:
        """The ``dma.any`` / ``tma.any`` placeholders a swap or rotate exchanges with buffers
        (``b = dma.copy ..; swap(a, b);`` after ``a = dma.any``): each becomes a buffer of the
        others' shape, bound where the placeholder was declared (a loop around the swap carries it;
        it holds no copy's data, zeros, until one is swapped or copied into it), so the names
        change places as buffers do."""
        shaped = next((self.swapped(n, s) for n in s.names if not self.placeholder(n)), None)
        if shaped is None:
            return
        for name in s.names:
            if not self.placeholder(name):
                continue
            scope = next(sc for sc in reversed(self.scopes) if name in sc)
            marker: AnyFuture = scope[name]
            if marker.body is None:
                raise NotLifted(f"a '{s.kind}' of the placeholder '{name}' declared outside this kernel", s)
            buf = self.buffer_like(name, shaped, s)
            buf.line = s.span.line if s.span else 0
            if name in self.scratch_names:  # read at other threads' positions: in scratch memory (what it
                here, self.body = self.body, []  # holds before a copy is swapped in is no copy's data)
                try:
                    buf = self.give_home(buf, "shared", s)
                    decl: list[N.Stmt] = self.body
                finally:
                    self.body = here
            else:
                decl = [N.Let(buf.var, E.Full(buf.tile, 0, buf.var.type), line=buf.line)]
            body = marker.body
            at = next((i + 1 for i, x in enumerate(body) if x is marker.after), 0) if marker.after is not None else 0
            body[at:at] = decl
            buf.defined = True
            scope[name] = CopyFuture(self.whole_buffer(buf))

    def only_waited(self, name: str, node: A.Node) -> bool:
        """Is ``name`` a future (of a copy into a slot of an array of buffers, or a placeholder) that
        no statement reads but ``wait``?  Exchanging such names changes which copy a later ``wait``
        waits for, nothing a read sees: in the lifted program a copy is complete where it stands."""
        v = self.lookup(name, node)
        if not (isinstance(v, (CopyFuture, AnyFuture)) or self.placeholder(name)):
            return False
        if isinstance(v, CopyFuture) and isinstance(v.data, BufferView) and v.data.whole:
            return False  # (a future of a fresh buffer: its data are read through its name)
        base = re.sub(r"__[ur]\d+$", "", name)  # (the names lift/unroll.py and lift/collapse.py give a copy)
        waited = {id(x) for n in self.source_nodes() if isinstance(n, A.Wait) for x in n.items}  # type: ignore[attr-defined]
        return not any(
            isinstance(n, A.Name) and re.sub(r"__[ur]\d+$", "", n.name) == base and id(n) not in waited
            for n in self.source_nodes()  # type: ignore[attr-defined]
        )

    def swapped(self, name: str, node: A.Node) -> TileBuffer:
        """The buffer behind a name a swap exchanges: a buffer or a copy's future, a register tile
        or a block's area of scratch memory (whose tiles are loaded and stored back exchanged)."""
        v = self.lookup(name, node)
        if isinstance(v, CopyFuture) and isinstance(v.data, BufferView) and v.data.whole:
            v = v.data.buffer
        if not isinstance(v, TileBuffer) or v.of is not None:
            raise NotLifted(f"a swap of '{name}', which is not a whole buffer", node)
        if v.home is not None and v.home.lane is not None:
            raise NotLifted(f"a swap of '{name}', a thread's own array", node)
        return v

    def select_future(self, e: A.Select, name: str | None = None) -> Any:
        """``select(i, f0, f1, ...)``: with ``i`` known when translating, ``f_i`` itself; else a
        buffer holding the chosen one's tile (``tl.where`` over the choices), read from then on."""
        if not all(isinstance(unparen(x), A.Name) for x in e.options):  # ``select(i, a.at(j), b.at(j))``
            raise NotLifted(
                "a 'select' among values that are not named futures or buffers (LANGUAGE.md 7.8: a select"
                " picks one of several futures or buffers, moving names, not bytes)",
                e,
                "to pick one of several values, write a conditional expression: 'i == 0 ? a.at(j) : b.at(j)'",
            )
        index, k = self.select_index(e)
        if k is not None:
            choice = unparen(e.options[k])
            if not isinstance(choice, A.Name):
                raise NotLifted("a select of something other than names", e)
            return self.lookup(choice.name, choice)
        buffers = self.selected(e)
        out = self.chosen(buffers, e, name)
        value: E.Expr = self.tile_value(buffers[-1], e)
        for j in reversed(range(len(buffers) - 1)):
            value = E.Where(E.Bin("==", index, E.Const(j)), self.tile_value(buffers[j], e), value)
        self.set_tile(out, value, e)
        return CopyFuture(self.whole_buffer(out))

    def select_index(self, e: A.Select) -> tuple[E.Expr, int | None]:
        """The index of ``select(i, ..)`` and its value where known when translating (checked
        to name one of the choices)."""
        index = self.int_expr(e.index)
        k = const_int(index)
        if k is not None and not 0 <= k < len(e.options):
            raise CroqSemanticError(f"select index {k} is out of range for {len(e.options)} choices", e.index.span)
        return index, k

    def selected(self, e: A.Select) -> list[TileBuffer]:
        """The choices of a run-time select: buffers of one shape in registers (or copies' futures
        of them)."""
        out: list[TileBuffer] = []
        for x in e.options:
            name = unparen(x)
            if not isinstance(name, A.Name):
                raise NotLifted("a select at run time of something other than names", e)
            v = self.lookup(name.name, name)
            if isinstance(v, CopyFuture) and isinstance(v.data, BufferView) and v.data.whole:
                v = v.data.buffer
            if not isinstance(v, TileBuffer) or v.of is not None or (v.home and v.home.lane is not None):
                raise NotLifted(
                    f"a select at run time of '{name.name}', which is not a whole buffer the block shares", name
                )
            out.append(v)
        if not same_shape(out):
            raise NotLifted("a select at run time between buffers of different shapes", e)
        return out

    def chosen(self, choices: list[TileBuffer], node: A.Node, name: str | None = None) -> TileBuffer:
        """A fresh buffer of the choices' shape, for the one a run-time select picks (``name``: the
        name it is bound to, in scratch memory where the placement puts it there)."""
        first = choices[0]
        if name is None or name not in self.scratch_names:
            return self.buffer_like(self.fresh(f"{first.name}_chosen"), first, node)
        return self.give_home(self.buffer_like(name, first, node), "shared", node)  # type: ignore[no-any-return]

    def buffer_like(self, name: str, like: TileBuffer, node: A.Node) -> TileBuffer:
        """A fresh buffer named ``name`` of ``like``'s element type and shape (of run-time shape
        where ``like`` is: its tile's extents the same constexpr arguments), filled with zeros."""
        if like.fixed:
            return self.new_buffer(name, like.elem, like.extents, 0, node)  # type: ignore[no-any-return]
        return self.launch_buffer(name, like.elem, like.sizes, node)  # type: ignore[no-any-return]
