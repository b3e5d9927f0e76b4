"""Poison values: what an output holds before a kernel writes it, so unwritten elements can be found.

Floating-point outputs are filled with a NaN that carries a payload of its own (the bits below), so an
element a kernel never wrote is told apart from one it wrote as NaN (arithmetic and the OOB
sanitizer produce the canonical NaN).  The fp8 types have no spare NaN bits: there, every NaN counts
as unwritten.  Integer outputs are filled with a sentinel: the type's minimum (maximum for unsigned
types, whose minimum is 0); an element written with exactly that value counts as unwritten.  Bool
outputs cannot be poisoned.
"""

from __future__ import annotations

import torch

# (bit pattern, integer dtype of the same width) of the poison NaN of each float dtype
_NAN_BITS: dict[torch.dtype, tuple[int, torch.dtype]] = {
    torch.float64: (0x7FF80000DEADBEEF, torch.int64),
    torch.float32: (0x7FC0DEAD, torch.int32),
    torch.float16: (0x7E5A, torch.int16),
    torch.bfloat16: (0x7FDA, torch.int16),
}


def can_poison(dtype: torch.dtype) -> bool:
    return dtype != torch.bool and not dtype.is_complex


def sentinel(dtype: torch.dtype) -> float | int:
    """The value unwritten elements hold (as a Python number; NaN for floats)."""
    if dtype.is_floating_point:
        return float("nan")
    info = torch.iinfo(dtype)
    return info.max if info.min == 0 else info.min


def describe(dtype: torch.dtype) -> str:
    """How the poison of ``dtype`` reads in a report."""
    if dtype.is_floating_point:
        return "NaN"
    return str(sentinel(dtype))


def poisoned(shape: tuple[int, ...] | torch.Size, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """A tensor whose every element is the poison of ``dtype``."""
    bits = _NAN_BITS.get(dtype)
    if bits is not None:
        return torch.full(tuple(shape), bits[0], dtype=bits[1], device=device).view(dtype)
    if dtype == torch.bool:
        return torch.ones(tuple(shape), dtype=dtype, device=device)
    return torch.full(tuple(shape), sentinel(dtype), dtype=dtype, device=device)


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Overwrite ``t`` with poison, in place."""
    t.copy_(poisoned(t.shape, t.dtype, t.device))
    return t


def unwritten(t: torch.Tensor) -> torch.Tensor:
    """A bool tensor: where ``t`` still holds the poison."""
    bits = _NAN_BITS.get(t.dtype)
    if bits is not None:
        return t.view(bits[1]) == bits[0]
    if t.dtype.is_floating_point:
        return torch.isnan(t)
    if not can_poison(t.dtype):
        return torch.zeros(t.shape, dtype=torch.bool, device=t.device)
    return t == sentinel(t.dtype)
