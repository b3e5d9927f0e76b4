"""Tiles with a non-power-of-two extent (e.g. WARP_N = 192) as power-of-two pieces (128 + 64).

Triton block shapes are powers of two.  Padding 192 to 256 wastes a quarter of the MMA work
and rules out a TMA box; instead a 2-D register tile whose one non-power-of-two extent is a
multiple of 16 is kept as pieces along that dim, each its own Triton tensor.  Copies move
piece by piece (each piece may use its own TMA box), MMAs combine the pieces of their operands,
and accumulators split the same way.  Results are identical to the unsplit tile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CroqLoweringError
from ..schedule.schedule import pieces
from . import exprs as X
from .values import Buffer, Frag, Future, Tile, Val, View, ViewDim, const, same_extent

if TYPE_CHECKING:
    from .kernel import KernelLowering

Pieces = list[tuple[int, int]]


def pow2_pieces(n: int) -> Pieces:
    return list(pieces(n))


def split_spec(dims: list[Val]) -> tuple[int, Pieces] | None:
    """Split a 2-D tile when exactly one extent is a static non-power-of-two multiple of 16."""
    if len(dims) != 2:
        return None
    cand = [d for d, v in enumerate(dims) if v.is_const and int(v.const) & (int(v.const) - 1)]
    if len(cand) != 1:
        return None
    d = cand[0]
    n = int(dims[d].const)
    other = dims[1 - d]
    if n % 16 or not other.is_const:
        return None
    return d, pow2_pieces(n)


def piece_var(var: str, k: int) -> str:
    return f"{var}_{k}"


def piece_tiles(self: KernelLowering, root: Buffer | Frag, elem: str) -> list[tuple[Tile, list[int]]]:
    """The pieces of a split buffer or accumulator, each with its offset along the split dim."""
    assert root.split is not None
    d, pieces = root.split
    dims = root.dims or []
    out = []
    for k, (off, size) in enumerate(pieces):
        pd = [str(size) if i == d else str(root.pdims[i]) for i in range(2)]  # type: ignore[index]
        dv = [const(size) if i == d else dims[i] for i in range(2)]
        offs = [off if i == d else 0 for i in range(2)]
        out.append((Tile(piece_var(root.var, k), elem, dv, pd), offs))
    return out


def whole_split(view: View) -> bool:
    root = view.root
    if not isinstance(root, Buffer) or root.split is None or view.reshaped is not None:
        return False
    return all(d.whole for d in view.dims) and all(same_extent(d.extent, rd) for d, rd in zip(view.dims, root.dims))


def copy_split(self: KernelLowering, src: View, dst: View, engine: str, zfill: bool, span: Any) -> bool:
    """``dma/tma.copy`` where the source or destination is a split tile: piece by piece."""
    from .regions import Region, _ring_slot

    if isinstance(dst.root, Buffer) and dst.root.split is not None and dst.root.mode == "tile":
        if not whole_split(dst):
            self.need_padded(dst.root)  # a window of it: kept as one padded tile next pass
            return False
        if not _ring_slot(self, dst, True, span):
            raise CroqLoweringError("a copy into part of a split tile cannot be lowered", span)
        buf = dst.root
        full = [int(d.const) for d in buf.dims] if all(d.is_const for d in buf.dims) else None
        ct = buf.elem
        sdims = [d.extent for d in src.dims if not d.squeezed] if src.reshaped is None else list(src.reshaped)
        for tile, offs in piece_tiles(self, buf, buf.elem):
            region = Region(self, tile.pdims, sdims, False, offs)
            value = self.read_tile(src, region, span, engine if _is_tensor(src) else "dma", zfill, full)
            code = value.code if value.ty == ct else f"({value.code}).to({X.tl_dtype(ct)})"
            self.w.line(f"{tile.code} = {code}", span)
        buf.written = True
        return True
    if isinstance(src.root, Buffer) and src.root.split is not None and src.root.mode == "tile":
        if not whole_split(src):
            self.need_padded(src.root)  # a window of it: kept as one padded tile next pass
            return False
        if not _ring_slot(self, src, False, span):
            raise CroqLoweringError("a copy from part of a split tile cannot be lowered", span)
        buf = src.root
        full = [int(d.const) for d in buf.dims] if all(d.is_const for d in buf.dims) else None
        ddims = [d.extent for d in dst.dims if not d.squeezed] if dst.reshaped is None else list(dst.reshaped)
        for tile, offs in piece_tiles(self, buf, buf.elem):
            region = Region(self, tile.pdims, ddims, False, offs)
            self.write_tile(dst, region, Val(tile.code, buf.elem), span, engine if _is_tensor(dst) else "dma", full)
        return True
    return False


def _is_tensor(v: View) -> bool:
    from .values import Tensor

    return isinstance(v.root, Tensor)


def operand_pieces(self: KernelLowering, e: Any, span: Any) -> list[tuple[Tile, list[int]]] | None:
    """An MMA operand that is a split tile (or a split accumulator): its pieces."""
    v = self.ev_any(e)
    if isinstance(v, Future):  # a copy's result names its destination
        v = v.data
    if isinstance(v, Frag) and v.split is not None:
        return piece_tiles(self, v, v.compute)
    if isinstance(v, View) and whole_split(v):
        return piece_tiles(self, v.root, v.root.elem)  # type: ignore[arg-type]
    if isinstance(v, Buffer) and v.split is not None and v.mode == "tile":
        return piece_tiles(self, v, v.elem)
    return None


def check_scaled_split(dim: int | None, per_row: bool, per_col: bool, span: Any) -> None:
    """Block scales that vary along the dim an accumulator is split into pieces along (the pieces
    would need their slice of the scales) are not lowered."""
    if (per_row and dim == 0) or (per_col and dim == 1):
        raise CroqLoweringError("scales of an MMA split into pieces along them cannot be lowered yet", span)


def mma_pieces(
    self: KernelLowering,
    acc: Frag,
    a: list[tuple[Tile, list[int]]],
    b: list[tuple[Tile, list[int]]],
    layout: tuple[str, str],
    prec: str,
    span: Any,
    scale: tuple[str, bool, bool] | None = None,
) -> tuple[list[Val], list[str], tuple[int, Pieces] | None]:
    """Emit ``acc += A x B`` over operand pieces; returns the accumulator's dims, pdims and split.

    ``scale``: (factor, varies along M, along N) of a block-scaled MMA (``tiles._scale_factors``)."""
    la, lb = layout
    a_m, a_k = (0, 1) if la == "row" else (1, 0)
    b_n, b_k = (0, 1) if lb == "row" else (1, 0)

    def split_dim(ops: list[tuple[Tile, list[int]]]) -> int | None:
        if len(ops) == 1:
            return None
        return next(i for i in range(2) if any(o[1][i] for o in ops))

    da, db = split_dim(a), split_dim(b)
    same_k = da == a_k and db == b_k and [o[1][a_k] for o in a] == [o[1][b_k] for o in b]
    if (da == a_k or db == b_k) and not same_k:
        raise CroqLoweringError("MMA operands are split differently along K", span)
    m_pieces = [(o[1][a_m], int(o[0].pdims[a_m])) for o in a] if da == a_m else None
    n_pieces = [(o[1][b_n], int(o[0].pdims[b_n])) for o in b] if db == b_n else None
    if m_pieces and n_pieces:
        raise CroqLoweringError("an MMA whose M and N are both split into pieces cannot be lowered yet", span)

    def at(t: Tile, trans: bool) -> str:
        code = t.code
        if t.elem == "bf16":
            code = f"_as_dot_operand({code})"
        return f"tl.trans({code})" if trans else code

    M = sum(s for _, s in m_pieces) if m_pieces else int(a[0][0].pdims[a_m]) if a[0][0].pdims[a_m].isdigit() else None
    N = sum(s for _, s in n_pieces) if n_pieces else int(b[0][0].pdims[b_n]) if b[0][0].pdims[b_n].isdigit() else None
    if M is None or N is None:
        raise CroqLoweringError("split MMA tiles need static extents", span)
    split: tuple[int, Pieces] | None = (0, m_pieces) if m_pieces else (1, n_pieces) if n_pieces else None
    acc_vars = [piece_var(acc.var, k) for k in range(len(split[1]))] if split else [acc.var]
    for k, av in enumerate(acc_vars):
        a_ops = [a[k]] if m_pieces else a
        b_ops = [b[k]] if n_pieces else b
        if da == a_k:  # K split: pair pieces
            pairs = list(zip(a_ops if len(a_ops) > 1 else a, b_ops if len(b_ops) > 1 else b))
        else:
            pairs = [(x, y) for x in a_ops for y in b_ops]
        for x, y in pairs:
            if scale is not None:
                check_scaled_split(0 if m_pieces else 1 if n_pieces else None, scale[1], scale[2], span)
                dot = f"tl.dot({at(x[0], la == 'col')}, {at(y[0], lb == 'row')}{prec})"
                self.w.line(f"{av} = {av} + {dot} * {scale[0]}", span)
                continue
            self.w.line(f"{av} = tl.dot({at(x[0], la == 'col')}, {at(y[0], lb == 'row')}, {av}{prec})", span)
    dims = [const(M), const(N)]
    pdims = [str(M), str(N)]
    return dims, pdims, split


def store_split(self: KernelLowering, acc: Frag, dst: View, span: Any) -> bool:
    """``mma.store`` of a split accumulator."""
    from .regions import Region

    if acc.split is None:
        return False
    tiles = piece_tiles(self, acc, acc.compute)
    root = dst.root
    if isinstance(root, Buffer) and root.mode == "tile":
        if root.split != acc.split or not whole_split(dst):
            raise CroqLoweringError("a split accumulator must be stored into a tile split the same way", span)
        ct = root.elem
        for k, (t, _) in enumerate(tiles):
            self.w.line(f"{piece_var(root.var, k)} = ({t.code}).to({X.tl_dtype(ct)})", span)
        root.written = True
        return True
    ddims = [d.extent for d in dst.dims if not d.squeezed]
    for t, offs in tiles:
        region = Region(self, t.pdims, ddims, False, offs)
        self.write_tile(dst, region, Val(t.code, acc.compute), span)
    _ = ViewDim
    return True
