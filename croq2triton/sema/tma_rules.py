"""The rules a TMA box must meet that are known when translating (cuTensorMapEncodeTiled, plus
Triton's own): the lifting turns them into warnings with a span, and runtime/tma.py adds the rules
that depend on the launch's tensors."""

from __future__ import annotations

MAX_BOX = 256


def swizzle_bytes(v: int | None) -> int | None:
    """Normalise ``.swiz<N>``: tutorial levels 0..3 (none, 32, 64, 128 B) or bytes (LANGUAGE.md 7.8)."""
    if v is None:
        return None
    return {0: 0, 1: 32, 2: 64, 3: 128}.get(v, v) or None


def static_reasons(rank: int, box: list[int], elem_bytes: int, swizzle: int | None) -> list[str]:
    """Why a copy with this box can never use a TMA descriptor (empty: it can)."""
    out: list[str] = []
    if not 1 <= rank <= 5:
        out.append(f"the tensor has rank {rank} (TMA handles rank 1 to 5)")
    for d, b in enumerate(box):
        if b > MAX_BOX:
            out.append(f"box dim {d} is {b} elements (TMA boxes are at most {MAX_BOX})")
        if b & (b - 1):
            out.append(f"box dim {d} is {b}, not a power of two (Triton block shapes)")
    inner = box[-1] * elem_bytes if box else 0
    if inner % 16:
        out.append(f"the inner box is {inner} B (TMA needs a multiple of 16 B)")
    return out


def swizzle_reason(box: list[int], elem_bytes: int, swizzle: int | None) -> str | None:
    if swizzle and box and box[-1] * elem_bytes > swizzle:
        return f"the inner box is {box[-1] * elem_bytes} B, wider than the {swizzle}-byte swizzle span"
    return None
