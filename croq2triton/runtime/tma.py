"""The rules a TMA copy must meet (cuTensorMapEncodeTiled, plus Triton's own).

Shared by the translator (what is known statically becomes a diagnostic with a span)
and the launcher (what depends on run-time tensors is checked at launch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..sema.tma_rules import MAX_BOX, static_reasons, swizzle_reason

__all__ = ["MAX_BOX", "MAX_EXTENT", "MAX_STRIDE", "runtime_fits", "runtime_reason", "static_reasons", "swizzle_reason"]

MAX_EXTENT = 1 << 31
MAX_STRIDE = 1 << 40


def runtime_reason(name: str, t: Any, box: list[int], extents: list[int]) -> str | None:
    """Why this launch's tensor cannot be read through a descriptor with ``box`` (None: it can)."""
    es = t.element_size()
    if list(extents) != list(box):
        win = " x ".join(str(e) for e in extents)
        bx = " x ".join(str(b) for b in box)
        return f"{name}: the copied window is {win} but the TMA box is {bx}"
    if t.dim() != len(box):
        return f"{name}: rank {t.dim()} does not match the box"
    if t.data_ptr() % 16:
        return f"{name}: base address {t.data_ptr():#x} is not 16-byte aligned"
    if t.stride(-1) != 1:
        return f"{name}: innermost stride is {t.stride(-1)} elements (TMA needs 1)"
    for d, n in enumerate(t.shape):
        if n >= MAX_EXTENT:  # (TMA takes up to 2^32; Triton 3.6 passes a descriptor's extents as int32)
            return f"{name}: dimension {d} has {n} elements (a descriptor takes fewer than 2^31)"
    names = ["row", "plane", "dim-3", "dim-4"]
    for k, s in enumerate(reversed(t.stride()[:-1])):
        what = names[k] if k < len(names) else f"dim-{k + 1}"
        if (s * es) % 16:
            return f"{name}: {what} stride {s * es} B is not 16-byte aligned"
        if s * es >= MAX_STRIDE:
            return f"{name}: {what} stride {s * es} B is 2^40 B or more"
    return None


def runtime_fits(t: Any, box: Sequence[int], extents: Sequence[int]) -> bool:
    """``runtime_reason(name, t, box, extents) is None``, told without building a reason: the test a
    launch makes of each tensor it may read or write through a descriptor (the same rules, in the
    order that costs least; where ``box`` and ``extents`` are not both lists or both tuples it says
    no and :func:`runtime_reason` decides)."""
    if extents != box:
        return False
    strides = t.stride()
    if not strides or len(strides) != len(box) or strides[-1] != 1 or t.data_ptr() % 16:
        return False
    if t.numel() >= MAX_EXTENT and max(t.shape) >= MAX_EXTENT:  # (fewer elements: no dimension has as many)
        return False
    es = t.element_size()
    for s in strides[:-1]:  # noqa: SIM110 - (a loop: all() of a generator costs more, and this is per launch)
        if (s * es) % 16 or s * es >= MAX_STRIDE:
            return False
    return True
