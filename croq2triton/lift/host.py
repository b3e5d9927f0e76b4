"""What a kernel's lifting needs to know of its launcher: the tensors and scalars in scope.

The launcher binds every tensor parameter (and every buffer it allocates) to a launcher variable,
every symbolic size to a launcher variable, every scalar parameter likewise.  The lifting sees
them through these small records, so it does not depend on how the launcher is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..sema.types import SUB_BYTE, TYPES
from ..tir import expr as E

# Croqtile element types -> tile-IR types
IR_TYPES = {
    "f64": "f64",
    "f32": "f32",
    "tf32": "f32",
    "f16": "f16",
    "bf16": "bf16",
    "f8_e4m3": "f8e4",
    "f8_e5m2": "f8e5",
    "s64": "i64",
    "s32": "i32",
    "s16": "i16",
    "s8": "i8",
    "u64": "u64",
    "u32": "u32",
    "u16": "u16",
    "u8": "u8",
    "bool": "i1",
    "int": "i32",
    # sub-byte integers: their byte's type (one element per byte; conversions to them wrap, lift/arith.py)
    **{name: "i8" if sb.signed else "u8" for name, sb in SUB_BYTE.items()},
}


def ir_type(elem: str) -> str | None:
    """The tile-IR type of a Croqtile element type (None: Triton has none)."""
    return IR_TYPES.get(elem) if elem in TYPES else None


@dataclass(frozen=True)
class HostTensor:
    name: str  # the Croqtile name
    host: str  # the launcher variable holding the torch tensor
    elem: str  # Croqtile element type
    extents: tuple[str | int, ...]  # launcher variables (or constants) of its sizes


@dataclass(frozen=True)
class HostScalar:
    name: str  # the Croqtile name
    host: str  # the launcher variable
    elem: str  # Croqtile type: int, bool, or an element type


@dataclass
class HostScope:
    tensors: dict[str, HostTensor] = field(default_factory=dict)
    scalars: dict[str, HostScalar] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)  # integers the host knows when translating
    float_constants: dict[str, tuple[float, str]] = field(default_factory=dict)  # floats likewise, with their types
    bool_constants: dict[str, bool] = field(default_factory=dict)  # ``bool IS_VARLEN = false;`` likewise
    shapes: dict[str, tuple[str | int, ...]] = field(default_factory=dict)  # named shapes (``ndims : [3, b];``)
    # named shapes and ituples of integers the launcher computes (``t = {cdiv(M, 4), N}``): their
    # extents as launcher expressions, for grid bounds ``by [t]`` (spelled ``t(0), t(1)``)
    shape_values: dict[str, tuple[E.Expr, ...]] = field(default_factory=dict)
    ituples: set[str] = field(default_factory=set)  # those of ``shapes`` that are ituples (indices)
    events: set[str] = field(default_factory=set)  # ``global event`` declared between launches
    # bounded names of host-level ``with`` / ``foreach`` (LANGUAGE.md 7.2): (current value, bound) as
    # launcher expressions, the value None where no ``foreach`` iterates the name (a kernel may);
    # a bounded index tuple's parts are ``name#k``, names the user cannot spell
    bounded: dict[str, tuple[E.Expr | None, E.Expr]] = field(default_factory=dict)
    bounded_tuples: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # those that earlier launches triggered: how many times every block of them did (lift/events.py)
    released: dict[str, int] = field(default_factory=dict)
