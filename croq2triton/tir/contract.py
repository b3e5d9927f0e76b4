"""A contraction: what a GEMM kernel computes, stated by meaning and free of any schedule.

``out[b, m, n] = f(sum over k < K of a[b, m, k] * b[b, n, k])`` with ``f`` an element-wise
epilogue (a start value, a scale, a bias, a conversion; by default the conversion alone), the
storage order of each operand (which dimension is the batch, the row and the contraction one),
the accumulator type and the ``.co`` lines of the reduction and the store.  :mod:`croq2triton.lift.contraction` proves a
kernel computes one; :mod:`croq2triton.schedule.gemm` tiles it under a
:class:`~croq2triton.schedule.schedule.Schedule`.  Elements outside a tensor read as zero (what
``.zfill``, TMA and the tail rule of LANGUAGE.md 7.8 give), so each operand is masked by its own
extents and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .expr import Expr


@dataclass(frozen=True)
class Operand:
    """One tensor of the contraction: its Croqtile name and element type, and which of its
    dimensions is the batch (None: no batch), the free one (rows of ``a`` / columns of ``b`` and,
    for ``out``, the rows) and the contracted one (for ``out``: its columns)."""

    tensor: str
    elem: str
    rank: int
    free: int
    inner: int
    batch: int | None = None


ACC = "%acc"  # the variable of an Epilogue that stands for the accumulated sum


@dataclass(frozen=True)
class EpiRead:
    """A tensor element an epilogue reads at the output element's coordinates: ``dims`` names, per
    dimension of the tensor, the output coordinate that indexes it ("b", "m" or "n")."""

    var: str  # its variable in Epilogue.value
    tensor: str
    elem: str
    dims: tuple[str, ...]


@dataclass(frozen=True)
class Epilogue:
    """What is stored at ``out[b, m, n]``: ``value``, an element-wise function of the accumulated
    sum (the variable :data:`ACC`, f32), of the tensor elements in ``reads`` and of the scalar
    parameters in ``scalars`` (variables named as the parameter, with its element type)."""

    value: Expr
    reads: tuple[EpiRead, ...] = ()
    scalars: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Group:
    """A grouped contraction (a mixture-of-experts GEMM): the block index ``var`` (extent
    ``extent``) picks a group whose output rows start at ``offset`` and number ``count`` (None: no
    limit), both expressions of values read from integer tensors (``data``: variable -> tensor and
    index, in ``var``); ``rows``: the row range the source's tiles cover (``64 * cdiv(T, 64)``).
    ``a`` and ``out`` are indexed ``offset + row``; ``b``'s batch dimension (if any) by ``var``."""

    var: str
    extent: Expr
    offset: Expr
    count: Expr | None
    rows: Expr
    data: tuple[tuple[str, str, tuple[Expr, ...]], ...]


@dataclass(frozen=True)
class Scale:
    """A factor of every product of a block-scaled contraction (``mma.row.row.scale``): an element
    of ``tensor`` whose index, per dimension, is ``m // d``, ``n // d``, ``k // d`` (``kind``, ``d``)
    or 0 (kind "0")."""

    tensor: str
    elem: str
    dims: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Stated:
    """What the source states about how its contraction runs (lift/stated.py reads it): the threads
    that execute the reduction (0: not known), the slots of its stage ring (0: none), whether it
    reads operands and writes the output through TMA, declares warp roles, and walks output tiles
    in a loop of its own.  The source schedule is made of these (schedule/policy.py ``source``)."""

    threads: int = 0
    stages: int = 0
    tma: bool = False
    tma_store: bool = False
    roles: bool = False
    persistent: bool = False


@dataclass(frozen=True)
class Contraction:
    a: Operand  # free = m, inner = k
    b: Operand  # free = n, inner = k
    out: Operand  # free = m, inner = n
    acc: str  # accumulator element type (f32, f16, s32)
    source_tile: tuple[int, int, int]  # the block tile the source states: rows, columns, K step
    line: int  # the .co line of the reduction (the MMA or the += )
    store_line: int  # the .co line of the store
    notes: tuple[str, ...] = ()  # what the source states that the Triton kernel does not keep
    # (size, divisor): the proof holds when each size is a multiple of its divisor (a ``chunkat`` of a
    # ``cdiv`` grid: its tiles have the block's extent only then, LANGUAGE.md 7.6); checked at launch
    assumptions: tuple[tuple[Expr, int], ...] = ()
    epilogue: Epilogue | None = None  # None: the sum itself is stored
    group: Group | None = None
    scales: tuple[Scale, ...] = ()  # out = sum_k a * b * prod(scales): constant over blocks of scale_k of k
    scale_k: int = 0
    stated: Stated = Stated()  # how the source runs it
    # the extent of K the source reads where a read past K relies on the out-of-bounds fill (an
    # operand not copied with .zfill, its reads not kept inside by a guard); None: it reads none.
    # Under the OOB sanitizer (``--oob-fill nan``) the result is NaN where this passes K, as the
    # source as written computes then.
    k_read: Expr | None = None
    # what the translation warns of (lift/races.py: warp roles whose events let them race, which the
    # contraction runs in the pipeline's order)
    warnings: tuple[Any, ...] = field(default=(), compare=False)

    @property
    def batched(self) -> bool:
        return self.out.batch is not None
