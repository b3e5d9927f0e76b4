"""The configuration of ``dma.transp`` and ``dma.pad`` (LANGUAGE.md 7.8): ``.transp<p0, p1, ...>``
permutes the source's dimensions, so its list is a permutation of ``0 .. r-1`` for a source of rank
``r``; ``.pad<{lo...}, {hi...}, {mid...}, value>`` pads each dimension, so its three lists have one
value per dimension of the source.  The source's rank is known where it is a parameter or a buffer
declared with its extents, through operations that keep the rank (chunkat, chunk, subspan, modspan)."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution, shape_extents
from .tiling import source_text

_SAME_RANK = ("chunkat", "chunk", "subspan", "modspan", "zfill")


def dma_cfg_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.DmaStmt) and n.cfg is not None:
            d = _transp_error(n, res) if n.op == "transp" else _pad_error(n, res) if n.op == "pad" else None
            if d is not None:
                out.append(d)
    return out


def source_rank(e: A.Expr, res: Resolution) -> int | None:
    while isinstance(e, A.View):
        if any(op.kind not in _SAME_RANK for op in e.ops):
            return None
        e = e.base
    if isinstance(e, A.Index):  # one buffer of an array of buffers
        e = e.base
    if not isinstance(e, A.Name):
        return None
    b = res.binding(e)
    if b is None or b.kind != "spanned" or not b.dims:
        return None
    extents = shape_extents(A.MdspanLit(list(b.dims)), lambda x: res.binding(x))
    return None if extents is None else len(extents)


def _transp_error(s: A.DmaStmt, res: Resolution) -> Diagnostic | None:
    order = [c.value if isinstance(c, A.IntLit) else None for c in s.cfg or []]
    if None in order:
        return None
    n = len(order)
    written = ", ".join(str(k) for k in order)
    rank = source_rank(s.src, res)
    if sorted(k for k in order if k is not None) != list(range(n)):
        why = f"it is not a permutation of 0 .. {n - 1}"
    elif rank is not None and rank != n:
        why = f"'{source_text(s.src)}' has {rank} dimension{'s' if rank != 1 else ''}"
    else:
        return None
    r = rank if rank is not None else n
    return Diagnostic(
        "error",
        f"dma.transp<{written}> names the source's dimensions in a new order, but {why}",
        s.span,
        f"list each dimension of the source once: dma.transp<{', '.join(str(k) for k in reversed(range(r)))}>"
        " reverses them",
    )


def _pad_error(s: A.DmaStmt, res: Resolution) -> Diagnostic | None:
    cfg = s.cfg or []
    lists = [x.items for x in cfg[:3] if isinstance(x, A.ItupleLit)]
    if len(lists) != 3:
        return None
    sizes = [len(x) for x in lists]
    rank = source_rank(s.src, res)
    shown = ", ".join(str(k) for k in sizes)
    if len(set(sizes)) != 1:
        why = f"its low, high and interior paddings have {shown} values"
    elif rank is not None and rank != sizes[0]:
        why = f"it gives {sizes[0]} values per padding for '{source_text(s.src)}' of {rank} dimensions"
    else:
        return None
    return Diagnostic(
        "error",
        f"dma.pad pads each dimension of its source, but {why}",
        s.span,
        "give each of the three paddings {lo...}, {hi...}, {mid...} one value per dimension of the source",
    )
