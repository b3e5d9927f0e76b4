"""Calls the language does not have or that it has with another number of arguments (LANGUAGE.md 7.7).

``__expf(x)`` or ``exp(j)`` parses: ``name(i)`` is component ``i`` of the tuple ``name``
(``x(k)``, LANGUAGE.md 7.2).  When no tuple of that name is declared anywhere in the function, it
was meant as a call: of a builtin misspelt (``__expf`` for ``__exp``) or of a C++/CUDA device
function without ``call``.  (A call the grammar cannot read as a component, ``__expf(x.at(i))``, is
a syntax error explained by frontend/repair.py.)  ``__max(x)`` calls a builtin with another number
of arguments than it takes (the table is frontend/builtins.py).
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from ..frontend import suggest
from ..frontend.builtins import BUILTINS
from .scopes import Resolution


def unknown_calls(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    declared = {b.name for b in res.bindings}
    out: list[Diagnostic] = []
    for s in fn.body:
        for n in s.walk():
            if not isinstance(n, A.GetIth) or not isinstance(n.base, A.Name):
                continue
            name = n.base.name
            if res.binding(n.base) is not None or name in declared:
                continue
            near = suggest.builtin(name)
            if near:
                out.append(
                    Diagnostic(
                        "error",
                        f"'{name}' is not a builtin; {suggest.did_you_mean(near[:1])}",
                        n.base.span,
                        suggest.call_hint(name),
                    )
                )
            else:
                out.append(
                    Diagnostic(
                        "error",
                        f"'{name}' is not declared",
                        n.base.span,
                        f"'{name}(...)' reads as a component of the tuple '{name}'; " + suggest.call_hint(name),
                    )
                )
    return out


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


def helper_call_errors(fn: A.CoFunction) -> list[Diagnostic]:
    """Calls of a ``__device__`` helper with another number of arguments than it takes (its defaults
    counted), or a value where it takes a pointer (``call ATOMIC_ADD(t.at(i), 1)`` for ``int* p``)."""
    out: list[Diagnostic] = []
    for n in fn.walk():
        if not (isinstance(n, A.Call) and n.kind == "call" and n.device is not None):
            continue
        df = n.device
        if not getattr(df, "signature_read", True):  # (its parameters unknown: the call reports its refusal)
            continue
        params = list(getattr(df, "params", []))
        least = sum(1 for p in params if p.default is None)
        where = f"'__device__ {df.name}' at line {df.span.line}" if df.span is not None else f"'{df.name}'"
        if not least <= len(n.args) <= len(params):
            takes = f"{least} to {len(params)}" if least != len(params) else str(len(params))
            out.append(
                Diagnostic(
                    "error",
                    f"'{n.name}' takes {takes} argument{'s' if len(params) != 1 else ''}, {len(n.args)} given",
                    n.span,
                    f"see {where}",
                )
            )
            continue
        for k, (p, a) in enumerate(zip(params, n.args, strict=False)):
            if p.pointer and isinstance(A.unparen(a), A.At):  # an element where its address is meant
                out.append(
                    Diagnostic(
                        "error",
                        f"argument {k + 1} of '{n.name}' is passed to the pointer parameter '{p.name}' of {where},"
                        " but it is an element's value",
                        a.span or n.span,
                        "pass the element's address: '&' before it (call F(&t.at(i), ..))",
                    )
                )
    return out
