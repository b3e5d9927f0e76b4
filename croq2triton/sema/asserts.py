"""``assert(cond, "message")`` (LANGUAGE.md 9.3): where ``cond`` is known when compiling -- sizes of
spanned data of constant shape, bounds of parallel indices, constant integers -- and is false, the
program can never run past it: a static assertion that fails is an error at the ``assert``, with its
message.  A condition known only at run time is checked there (a host ``assert`` or a device one)."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .consteval import static_values
from .scopes import resolve
from .tiling import source_text


def static_assert_errors(fn: A.CoFunction) -> list[Diagnostic]:
    asserts = [n for s in fn.body for n in s.walk() if isinstance(n, A.Call) and n.kind == "assert" and n.args]
    if not asserts:
        return []
    value = static_values(resolve(fn))
    out: list[Diagnostic] = []
    for a in asserts:
        if value(a.args[0]) is not False and value(a.args[0]) != 0:
            continue
        msg = a.args[1].value if len(a.args) > 1 and isinstance(a.args[1], A.StringLit) else ""
        out.append(
            Diagnostic(
                "error",
                f"this assertion fails whenever the function runs: '{source_text(a.args[0])}' is false when"
                f" compiling" + (f" ({msg})" if msg else ""),
                a.span,
                "the condition depends only on constants and constant shapes: fix the sizes, or the condition",
            )
        )
    return out
