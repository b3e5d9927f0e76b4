"""Immutable scalars get their value where they are declared (LANGUAGE.md 4.3: "Scalars of type
``int``/``bool``, mdspans and ituples must be initialised at declaration and cannot be re-assigned,
unless declared ``mutable``"): ``int n;`` declares a name that could never get a value.  ``mutable
int n;`` is the form for a value given later, and element scalars (``f32 x;``) are mutable anyway.
(An mdspan or ituple without a value is a syntax error, LANGUAGE.md 5.)"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A


def uninitialised_errors(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if not (isinstance(n, A.ScalarDecl) and n.type in ("int", "bool") and not n.mutable and n.storage is None):
            continue
        for d in n.items:
            if d.init is None and d.fill is None:
                value = "0" if n.type == "int" else "false"
                out.append(
                    Diagnostic(
                        "error",
                        f"the immutable {n.type} '{d.name}' is declared without a value",
                        d.span or n.span,
                        f"give it its value here ('{n.type} {d.name} = {value};'), or declare it"
                        f" 'mutable {n.type} {d.name};' to assign it later",
                    )
                )
    return out
