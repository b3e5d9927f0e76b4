"""The index ranges of ``parallel``, ``with`` and ``foreach`` (LANGUAGE.md 7.2 to 7.4): a bounded
index takes the values ``[0, #v)``, so a bound known when compiling is at least 1 -- a ``parallel``
of no instances, or a ``with`` over a shape with an extent of 0 (``input.span / tile`` with a tile
larger than the input), is an error where the bound is written."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .consteval import static_shapes, static_values
from .scopes import resolve
from .tiling import source_text


def range_errors(fn: A.CoFunction) -> list[Diagnostic]:
    res = resolve(fn)
    value = static_values(res)
    shape = static_shapes(res)
    out: list[Diagnostic] = []
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.PBy):
                for b in n.bound:
                    v = value(b)
                    if isinstance(v, int) and not isinstance(v, bool) and v < 1:
                        out.append(
                            Diagnostic(
                                "error",
                                f"a parallel bound is at least 1; '{source_text(b)}' is {v}",
                                b.span,
                                "a 'parallel ... by N' runs N instances: give it N >= 1",
                            )
                        )
            elif isinstance(n, A.Within):
                extents = shape(n.shape)
                if extents is None and isinstance(value(n.shape), int):
                    extents = [value(n.shape)]  # type: ignore[list-item]
                if extents is not None and any(x < 1 for x in extents):
                    out.append(
                        Diagnostic(
                            "error",
                            f"'{source_text(n.shape)}' is the shape {extents}: an extent below 1 gives no index",
                            n.shape.span or n.span,
                            "every extent of the shape a 'with' or 'foreach' ranges over is at least 1",
                        )
                    )
    return out
