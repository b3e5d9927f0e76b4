"""``tma.load`` copies one way: from global memory into shared memory (LANGUAGE.md 7.8: "global->shared
(``tma.load``, or legacy ``tma.copy``) and shared->global (``tma.copy``)").  Inside a kernel, a
``tma.load`` whose source is a ``shared`` or ``local`` buffer, or whose destination is a tensor
parameter, a buffer in global memory, a ``local`` buffer or fresh ``global`` / ``local`` memory, is
an error; a store from shared to global memory is written ``tma.copy``.  Which buffers live where
follows sema/directions.py (what it cannot tell apart, a future's ``.data`` say, is left alone)."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .directions import _declarations, _global_declarations, _root_binding
from .levels import kernels
from .scopes import Resolution
from .tiling import source_text


def tma_load_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    on_chip = {"shared": _declarations(fn, "shared"), "local": _declarations(fn, "local")}
    globals_ = _global_declarations(fn)

    def where(e: A.Expr) -> str | None:
        """The memory the view ``e`` lies in: global, shared, local, or None (not known)."""
        b = _root_binding(e, res)
        if b is None or b.kind != "spanned":
            return None
        if b.origin == "parameter":
            return "global"
        key = (b.span.start, b.name) if b.span is not None else None
        for memory, keys in on_chip.items():
            if key in keys:
                return memory
        return "global" if key in globals_ else None

    out: list[Diagnostic] = []
    for k in kernels(fn):
        for n in k.walk():
            if not (isinstance(n, A.DmaStmt) and n.engine == "tma" and n.op == "load"):
                continue
            src = where(n.src)
            if n.dst_storage:
                dst = n.dst.name if isinstance(n.dst, A.Name) else None
            else:
                dst = where(n.dst)
            if src in ("shared", "local"):
                out.append(_wrong_side(n, f"its source '{source_text(n.src)}' is a {src} buffer", dst))
            elif dst in ("global", "local"):
                what = f"fresh {dst} memory" if n.dst_storage else f"'{source_text(n.dst)}', in {dst} memory"
                out.append(_wrong_side(n, f"its destination is {what}", dst))
    return out


def _wrong_side(n: A.DmaStmt, why: str, dst: str | None) -> Diagnostic:
    if dst == "global" and not n.dst_storage:
        hint = f"store shared memory into global memory with 'tma.copy': 'tma.copy {source_text(n.src)} => {source_text(n.dst)};'"
    else:
        hint = "load from a tensor in global memory into a shared buffer ('=> shared'); between buffers use 'dma.copy'"
    return Diagnostic(
        "error",
        f"'tma.load' copies global memory into shared memory; {why}",
        n.span,
        hint,
    )
