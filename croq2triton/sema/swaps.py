"""``swap(a, b)`` and ``rotate(a, b, c ...)`` exchange the values of names (futures, buffers of a
pipeline: LANGUAGE.md 9.2): the names are of one kind and declared in one scope -- a value swapped
into a name of an inner scope would leave with that scope while the outer name still held it."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Binding, resolve

SCOPES = {
    "function": "the function",
    "parallel": "a 'parallel'",
    "with": "a 'with'",
    "foreach": "a 'foreach'",
    "apply": "an 'apply'",
    "inthreads": "an 'inthreads'",
    "while": "a 'while'",
    "if": "an 'if'",
    "else": "an 'else'",
    "block": "a block",
}


def swap_errors(fn: A.CoFunction) -> list[Diagnostic]:
    res = resolve(fn)
    out: list[Diagnostic] = []
    for s in fn.body:
        for n in s.walk():
            if not isinstance(n, A.Swap):
                continue
            bindings = res.swaps.get(id(n), [])
            for a, b in zip(bindings, bindings[1:], strict=False):
                if a is None or b is None:
                    continue  # an undeclared name is an error of its own
                if a.kind != b.kind and "unknown" not in (a.kind, b.kind):
                    out.append(
                        Diagnostic(
                            "error",
                            f"'{n.kind}' exchanges values of one kind: '{a.name}' is {_kind(a)}, '{b.name}' {_kind(b)}",
                            n.span,
                        )
                    )
                elif a.scope is not b.scope:
                    out.append(
                        Diagnostic(
                            "error",
                            f"'{n.kind}' exchanges values declared in one scope: '{a.name}' is declared in"
                            f" {SCOPES.get(a.scope.kind, 'a scope')}{_line(a)}, '{b.name}' in"
                            f" {SCOPES.get(b.scope.kind, 'a scope')}{_line(b)}",
                            n.span,
                            f"declare '{a.name}' and '{b.name}' side by side (a 'dma.any' placeholder declares a future"
                            " to be bound later)",
                            [Diagnostic("note", f"'{x.name}' is declared here", x.span) for x in (a, b) if x.span],
                        )
                    )
    return out


def _line(b: Binding) -> str:
    return f" (line {b.span.line})" if b.span is not None and b.span.line > 0 else ""


def _kind(b: Binding) -> str:
    return {"future": "a future", "spanned": "spanned data", "frag": "a fragment", "event": "an event"}.get(
        b.kind, f"a{'n' if b.kind[:1] in 'aeiou' else ''} {b.kind}"
    )
