"""A TMA store reads a dense part of shared memory (LANGUAGE.md 7.8, TMA constraints: "shared source
of a store must be dense"): one run of consecutive elements of the buffer, so a part that keeps the
buffer's whole extent along every dimension inside the first it cuts, and takes one element along
every dimension outside it.  ``s.subspan(64, 32).at(0, 1)`` of ``shared f16 [64, 64] s`` takes 32 of
each row's 64 elements, for 64 rows: rows of a buffer with gaps between them, which no TMA store
reads.  Where the extents are compile-time integers that is the user's error; a part whose extents
the launch decides is left to the copy's own lowering."""

from __future__ import annotations

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..sema.tiling import source_text
from ..tir import expr as E
from .buffers import BufferView
from .checks import shape_text
from .terms import const_int


def dense_store_source(src: BufferView, s: A.DmaStmt) -> None:
    """Raise where ``src``, the shared source of the TMA store ``s``, is provably not dense."""
    sizes = src.buffer.sizes
    shape = tuple(E.fold(n) for n in src.shape)
    for i, outer in enumerate(shape):
        n = const_int(outer)
        if n is None or n <= 1:
            continue
        for j in range(i + 1, len(shape)):
            part, whole = const_int(shape[j]), const_int(sizes[j])
            if part is not None and whole is not None and part < whole:
                raise CroqSemanticError(
                    f"{s.engine}.{s.op} of '{source_text(s.src)}' {shape_text(shape)}, a part of the buffer"
                    f" {shape_text(sizes)}: a TMA store reads a dense part of shared memory, and this one takes"
                    f" {part} of {whole} elements along dimension {j} for each of {n} along dimension {i}",
                    s.src.span or s.span,
                    "store the whole buffer, or a part of whole inner rows ('s.subspan(R, N).at(i, 0)' of"
                    " 'shared T [M, N] s'); copy other parts with 'dma.copy'",
                )
