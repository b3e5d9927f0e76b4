"""How a file is translated, as one value passed through the pipeline (api.py): which schedule the
kernels run under and what an f32 product means.

Precision is not a schedule choice: a schedule never changes what a kernel computes, the precision
of f32 products does.  An f32 contraction keeps IEEE f32 products unless the user opts in to TF32
(``--allow-tf32``, ``load(..., allow_tf32=True)``) or its operands are declared ``tf32`` (the source
states TF32).  ``tf32x3`` (three TF32 products per f32 product, Triton's ``input_precision``) is
offered as its own choice; the measurements that decide the default are in perf/RESULTS.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

SCHEDULES = ("source", "auto")
F32_PRECISIONS = ("ieee", "tf32x3", "tf32")

Precision = Literal["ieee", "tf32x3", "tf32"]


@dataclass(frozen=True)
class Options:
    """``schedule``: ``source`` keeps the tiles, stages and roles the ``.co`` states, ``auto`` lets the
    translator pick them.  ``f32_precision``: the products of tensor-core dots on f32 operands."""

    schedule: Literal["source", "auto"] = "source"
    f32_precision: Precision = "ieee"

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule {self.schedule!r}: one of {', '.join(SCHEDULES)}")
        if self.f32_precision not in F32_PRECISIONS:
            raise ValueError(f"f32_precision {self.f32_precision!r}: one of {', '.join(F32_PRECISIONS)}")

    @property
    def allow_tf32(self) -> bool:
        return self.f32_precision == "tf32"

    def dot_precision(self, *elems: str) -> str | None:
        """``tl.dot``'s ``input_precision`` for operands of these element types (None: the dtype's
        own products, for 16- and 8-bit floats and integers)."""
        if "tf32" in elems:  # the source states TF32
            return "tf32"
        if "f32" in elems:
            return self.f32_precision
        return None

    def with_(self, **changes: object) -> Options:
        return replace(self, **changes)  # type: ignore[arg-type]


def options_of(schedule: str = "source", allow_tf32: bool = False, f32_precision: str | None = None) -> Options:
    """The options of the public API's keyword arguments (``f32_precision`` wins over ``allow_tf32``)."""
    precision = f32_precision or ("tf32" if allow_tf32 else "ieee")
    return Options(schedule, precision)  # type: ignore[arg-type]
