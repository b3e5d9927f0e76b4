"""Parameters of a ``__co__`` function (LANGUAGE.md 5 and 6): an unbounded dimension ``??`` is only
for ``global`` parameters -- data in host memory is copied to the device, which needs its size."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A


def unbounded_param_errors(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for p in fn.params:
        dims = p.type.shape.dims if p.type.shape is not None else None
        if p.storage == "global" or not dims:
            continue
        for d in dims:
            if isinstance(d, A.Unknown) and d.text == "??":
                out.append(
                    Diagnostic(
                        "error",
                        f"the parameter '{p.name or '?'}' has an unbounded dimension '??', which only a 'global'"
                        " parameter may have",
                        d.span or p.span,
                        "declare it 'global' (device memory the caller owns), or give the dimension a name",
                    )
                )
                break
    return out
