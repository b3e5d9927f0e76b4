"""Symbolic values of the lowering: what a Croqtile name means on the host and in a kernel.

A value knows how to spell itself as Python/Triton code (``code``), its
Croqtile type, and when it is known at translation time (``const``).  Kernel
values additionally record the lane axes they depend on: every sub-block
parallel index (warpgroup, warp, thread) becomes one axis of the block's
tensors, and a value that depends on it is a tensor broadcast over those axes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..frontend import ast as A
from .symbolic import host_key


def pow2(n: int) -> int:
    """The smallest power of two >= n (Triton tile extents); ``runtime.launch.pow2`` at launch."""
    p = 1
    while p < n:
        p *= 2
    return p


def same_extent(a: Val, b: Val) -> bool:
    """Provably equal extents: the same constant, or the same meaning of their spellings.

    Kernel spellings of one extent differ with where it was computed (``M // _grid_1`` beside
    ``M // tl.cdiv(M, 64)``), so host-computable extents are compared by their launcher
    expressions in a normalised form (``host_key``)."""
    if a.is_const and b.is_const:
        return bool(a.const == b.const)
    if a.code == b.code:
        return True
    return a.host is not None and b.host is not None and host_key(a.host) == host_key(b.host)


@dataclass
class Val:
    code: str
    ty: str | None = None  # element type, 'int', 'bool' (None = unknown/non-scalar)
    const: Any = None  # Python int/float/bool known at translate time
    axes: frozenset[str] = frozenset()  # lane axes the value depends on
    host: str | None = None  # spelling in the launcher, when host-computable
    masks: tuple[str, ...] = ()  # validity masks of padded lane/loop axes used by the value
    nonneg: bool = False  # provably >= 0
    ub: Any = None  # a Val known to be an exclusive upper bound
    # consumer-merged value (several consumer warpgroups folded into one tile):
    # value = base + coef * c for consumer c; ``code`` is then not a usable spelling
    cons: tuple[Any, int] | None = None

    @property
    def is_const(self) -> bool:
        return self.const is not None

    @property
    def uniform(self) -> bool:
        return not self.axes


def const(v: int | float | bool, ty: str | None = None) -> Val:
    if ty is None:
        ty = "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "f32"
    code = repr(v) if not isinstance(v, bool) else ("True" if v else "False")
    host = code
    if isinstance(v, float) and math.isinf(v):
        # the generated module defines ``_INF = tl.constexpr(float("inf"))`` for kernels
        code = "_INF" if v > 0 else "(-_INF)"
        host = "float('inf')" if v > 0 else "float('-inf')"
    return Val(code, ty, v, frozenset(), host, (), isinstance(v, (int, float)) and v >= 0)


@dataclass
class Bounded:
    """A bounded integer: a parallel index, a loop counter, a ``with`` variable."""

    name: str
    value: Val  # current value
    bound: Val  # upper bound (#x)
    kind: str  # block | lane | loop | with
    span: A.Span | None = None  # type: ignore[name-defined]


@dataclass
class BoundedTuple:
    """``{x, y} by [...]`` / ``with index = {x, y} in [...]``: a tuple of bounded ints."""

    name: str
    parts: list[Bounded]


@dataclass
class Shape:
    """An mdspan value: a list of extents."""

    dims: list[Val]


@dataclass
class Tuple_:
    """An ituple value."""

    items: list[Val]


@dataclass
class Tensor:
    """A global tensor: a launcher parameter or a buffer the launcher allocates."""

    name: str  # Croqtile name
    elem: str
    dims: list[Val]  # kernel-side extents
    host_dims: list[str]  # launcher spellings of the extents
    ptr: str  # kernel argument name of the base pointer
    strides: list[str]  # kernel argument names of the strides
    host_name: str  # launcher variable holding the torch tensor
    span: Any = None


@dataclass
class Buffer:
    """A shared / local buffer declared in a kernel.

    ``mode`` is 'tile' (a register tensor) or 'memory' (a per-program scratch
    region in global memory, used when the program addresses single elements).
    """

    name: str
    elem: str
    dims: list[Val]  # real extents
    pdims: list[str]  # padded power-of-two extents (constexpr spellings)
    storage: str  # shared | local
    mode: str = "tile"
    var: str = ""  # kernel variable of the tile, or of the scratch base pointer
    lanes: tuple[str, ...] = ()  # per-lane buffer (local inside a lane scope)
    count: int = 1  # array of buffers (``buf[2]``)
    span: Any = None
    written: bool = False
    swizzle: int | None = None
    split: tuple[int, list[tuple[int, int]]] | None = None  # (dim, [(offset, size)]): power-of-two pieces
    index_texts: dict[str, str] = field(default_factory=dict)  # index code -> source text (``buf[k % 2]``)
    owners: tuple[str | None, ...] = ()  # filled in merged units from their blocks (``owners.py``)


@dataclass
class ViewDim:
    origin: Val  # root coordinate of element 0 of this dim
    extent: Val  # number of elements
    step: Val | None = None  # root elements between consecutive indices (None = 1)
    # upper limits in root coordinates (coord < hi) from enclosing windows
    limits: list[Val] = field(default_factory=list)
    squeezed: bool = False  # removed by .sqz(): fixed at ``origin``
    owner: str | None = None  # the merged unit whose index selected this dim's block (``owners.py``)

    @property
    def whole(self) -> bool:
        """A plain dim of its root: starts at element 0, unit step, not squeezed."""
        return not self.squeezed and self.step is None and self.origin.is_const and self.origin.const == 0


@dataclass
class View:
    """A (possibly windowed) view of a tensor or buffer (LANGUAGE.md 7.6)."""

    root: Tensor | Buffer | Tile
    dims: list[ViewDim]
    reshaped: list[Val] | None = None  # span_as: dims of a dense reinterpretation of ``root``
    zfill: bool = False
    index: Val | None = None  # array-of-buffers element

    @property
    def rank(self) -> int:
        return len(self.dims)

    def whole(self) -> bool:
        """Does the view cover its root exactly (no window)?"""
        if self.reshaped is not None:
            return False
        root_dims = self.root.dims if not isinstance(self.root, Tile) else self.root.dims
        if len(root_dims) != len(self.dims):
            return False
        for d, rd in zip(self.dims, root_dims):
            if not (d.origin.is_const and d.origin.const == 0):
                return False
            if d.step is not None:
                return False
            if d.extent.code != rd.code and not (d.extent.is_const and rd.is_const and d.extent.const == rd.const):
                return False
        return True


@dataclass
class Tile:
    """A register tile (the data of a future, an MMA fragment, a loaded view)."""

    code: str
    elem: str
    dims: list[Val]  # real extents
    pdims: list[str]  # padded extents
    lanes: tuple[str, ...] = ()
    acc_f32: bool = False  # accumulator computed in f32 while its type is narrower
    owners: tuple[str | None, ...] = ()  # merged units owning the blocks of each dim (``owners.py``)


@dataclass
class Future:
    """The result of a DMA/TMA statement (its destination) or an MMA operation."""

    name: str
    data: Buffer | Tile | View | None
    is_async: bool = False
    waited: bool = False


@dataclass
class Frag:
    """An MMA accumulator / operand fragment."""

    name: str
    var: str
    elem: str  # declared type
    compute: str  # type it is computed in
    dims: list[Val] | None = None
    pdims: list[str] | None = None
    split: tuple[int, list[tuple[int, int]]] | None = None  # (dim, [(offset, size)]): power-of-two pieces
    owners: tuple[str | None, ...] | None = None  # merged units owning its row / column blocks (set by MMAs)


class Collapsed:
    """A loop index whose loop was folded into one whole-extent MMA (K split collapse)."""

    def __init__(self, bound: Val) -> None:
        self.bound = bound
