"""What a Croqtile name means in a launcher: the values the host lifting binds (lift/launcher.py).

A scalar is a tile-IR expression over launcher variables (a size bound from a tensor, a scalar
parameter, a host variable, a loop counter: :class:`~..tir.expr.Var`, with ``lo = 0`` where it is
never negative).  A tensor, a shape (``mdspan``), an index tuple (``ituple``), the bounded names of
a ``with``, a host-level ``span_as`` view and a stream have their own records.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Span
from ..sema.types import SUB_BYTE
from ..tir import expr as E
from .host import IR_TYPES


@dataclass(frozen=True)
class Tensor:
    """A tensor parameter, or a buffer the launcher allocates."""

    name: str  # the Croqtile name
    host: str  # the launcher variable holding the torch tensor
    elem: str  # Croqtile element type
    dtype: str  # its tile-IR type
    dims: tuple[E.Expr, ...]
    span: Span | None


@dataclass(frozen=True)
class Shape:
    """An ``mdspan`` value: its extents."""

    dims: tuple[E.Expr, ...]


@dataclass(frozen=True)
class ITuple:
    """An ``ituple`` value."""

    items: tuple[E.Expr, ...]


@dataclass(frozen=True)
class Bounded:
    """A name of a ``with``: ``value`` (0) until a ``foreach`` over it, below ``bound``."""

    name: str
    value: E.Expr
    bound: E.Expr


@dataclass(frozen=True)
class BoundedTuple:
    """``with idx = {i, j} in [...]`` (or one name over several dimensions): its parts."""

    name: str
    parts: tuple[Bounded, ...]


@dataclass(frozen=True)
class Reshaped:
    """``t.span_as([...])`` of a whole tensor at host level: the tensor with other extents."""

    tensor: Tensor
    dims: tuple[E.Expr, ...]


@dataclass(frozen=True)
class Stream:
    """A stream parameter."""

    host: str


Value = E.Expr | Tensor | Shape | ITuple | Bounded | BoundedTuple | Reshaped | Stream

# tile-IR types back to the Croqtile type they come from (``int`` for i32, not ``s32``)
CROQ_TYPES = {ir: croq for croq, ir in IR_TYPES.items() if croq not in SUB_BYTE} | {"f32": "f32"}


def ir_of(croq: str) -> str | None:
    """The tile-IR type of a Croqtile scalar type (``int``, ``bool`` or an element type); None
    where Triton and torch have none."""
    return IR_TYPES.get(croq)


def croq_of(dtype: str) -> str:
    """The Croqtile type of a tile-IR scalar type."""
    return CROQ_TYPES[dtype]
