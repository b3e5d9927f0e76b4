"""Arrays of buffers and events (LANGUAGE.md 7.5: ``shared f16 [64, 64] buf[2];``, ``shared event
full[2];``) hold a number of buffers along each array dimension, so each array extent that is a
compile-time integer must be positive."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Diagnostic
from ..frontend import ast as A
from .tiling import source_text


def array_dim_errors(fn: A.CoFunction, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for s in fn.walk():
        if not isinstance(s, (A.SpannedDecl, A.EventDecl)):
            continue
        for d in s.items:
            for e in d.dims:
                v = value(e)
                if v is not None and v <= 0:
                    shown = source_text(e)
                    out.append(
                        Diagnostic(
                            "error",
                            f"the array '{d.name}' has {shown if shown == str(v) else f'{shown} = {v}'}"
                            " elements along one of its dimensions: an array holds at least one along each",
                            e.span or d.span or s.span,
                            "give each array dimension a positive extent",
                        )
                    )
    return out
