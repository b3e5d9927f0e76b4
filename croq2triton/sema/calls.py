"""Calls of builtins with the number of arguments each takes (LANGUAGE.md 7.7; the table is
frontend/builtins.py)."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from ..frontend.builtins import BUILTINS


def arity_errors(fn: A.CoFunction) -> list[Diagnostic]:
    """``__max(x)``: a builtin called with another number of arguments than it takes."""
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.Builtin) or (isinstance(n, A.Call) and n.kind in ("atomic", "bar")):
            b = BUILTINS.get(n.name)
            if b is None or len(n.args) == b.arity:
                continue
            takes = f"{b.arity} argument{'s' if b.arity != 1 else ''}"
            out.append(
                Diagnostic(
                    "error", f"'{b.name}' takes {takes}, {len(n.args)} given", n.span, f"{b.signature}: {b.computes}"
                )
            )
    return out
