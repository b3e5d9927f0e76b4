"""Futures that move names, not bytes (LANGUAGE.md 7.8), as a mixin of the kernel lifter
(lift/kernel.py): ``f = dma.any`` / ``tma.any`` (a placeholder a later copy rebinds), ``swap(a,
b)`` and ``rotate(a, b, c)`` (the buffers' contents change places: a double buffer's loaded
tile becomes the current one), ``x = select(i, f0, f1)`` with ``i`` known when translating.

In the lifted program a future's buffer is a register tile, so exchanging two futures is an
exchange of two tile variables (through a temporary): inside a loop the tiles it carries
change with it.  ``rotate(a, b, c)`` gives ``a`` what ``b`` had, ``b`` what ``c`` had and ``c``
what ``a`` had.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from ..tir import nodes as N
from .buffers import BufferView, CopyFuture, TileBuffer
from .notlifted import NotLifted
from .terms import const_int


@dataclass(frozen=True)
class AnyFuture:
    """``f = tma.any``: a future of no copy yet (a later copy into fresh memory rebinds it)."""


class Futures:
    scopes: list[dict[str, Any]]
    lookup: Any
    emit: Any
    fresh: Any
    tile_value: Any
    set_tile: Any
    int_expr: Any

    def dma_any(self, s: A.DmaAny) -> None:
        self.scopes[-1][s.result] = AnyFuture()

    def swap(self, s: A.Swap) -> None:
        buffers = [self.swapped(n, s) for n in s.names]
        if len(buffers) < 2 or len({(b.tile, b.var.type) for b in buffers}) != 1:
            raise NotLifted(f"a '{s.kind}' of buffers of different shapes", s)
        first = self.tile_value(buffers[0], s)
        keep = E.Var(self.fresh(f"{buffers[0].var.name}_was"), first.type, dims=first.shape)
        self.emit(N.Let(keep, first), s)
        for b, nxt in zip(buffers, buffers[1:], strict=False):
            self.set_tile(b, self.tile_value(nxt, s), s)
        self.set_tile(buffers[-1], keep, s)

    def swapped(self, name: str, node: A.Node) -> TileBuffer:
        """The register tile behind a name a swap exchanges: a buffer or a copy's future."""
        v = self.lookup(name, node)
        if isinstance(v, CopyFuture) and isinstance(v.data, BufferView) and v.data.whole:
            v = v.data.buffer
        if not isinstance(v, TileBuffer) or v.home is not None or not v.fixed:
            raise NotLifted(f"a swap of '{name}', which is not a buffer in registers", node)
        return v

    def select_future(self, e: A.Select) -> Any:
        """``select(i, f0, f1, ...)`` with ``i`` known when translating: ``f_i`` itself."""
        k = const_int(self.int_expr(e.index))
        if k is None or not 0 <= k < len(e.options):
            raise NotLifted("a select whose index is not a constant within its choices", e.index)
        choice = e.options[k]
        while isinstance(choice, A.Paren):
            choice = choice.expr
        if not isinstance(choice, A.Name):
            raise NotLifted("a select of something other than names", choice)
        return self.lookup(choice.name, choice)
