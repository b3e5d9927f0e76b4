"""Names used where no enclosing scope declares them, though the function declares them elsewhere
(LANGUAGE.md 6: scopes are lexical).

A name declared inside a ``parallel``, ``foreach``, ``with``, ``if`` ... is known only in that
statement's body; one declared by a statement is known from there on.  The usual slip is a
statement without braces, whose body is the next statement only:
``parallel p by 4  mc = mma.fill 0;  foreach k ... mma.row.col mc, ...`` uses ``p`` and ``mc`` after
the ``parallel``.  (A name the function declares nowhere may be the host program's, or a call
written without ``call``: sema/calls.py.)
"""

from __future__ import annotations

from ..errors import Diagnostic
from .scopes import Binding, Resolution, Scope

_WHAT = {
    "parallel": "'parallel'",
    "foreach": "'foreach'",
    "with": "'with'",
    "if": "'if'",
    "else": "'else'",
    "while": "'while'",
    "inthreads": "'inthreads'",
    "apply": "'apply'",
    "block": "block",
}


def out_of_scope_errors(res: Resolution) -> list[Diagnostic]:
    by_name: dict[str, list[Binding]] = {}
    for b in res.bindings:
        by_name.setdefault(b.name, []).append(b)
    out: list[Diagnostic] = []
    seen: set[str] = set()
    for u in res.unresolved:  # the first use of each name
        found = by_name.get(u.name)
        if not found or u.name in seen:
            continue
        seen.add(u.name)
        b = found[0]
        line = f" at line {b.span.line}" if b.span is not None else ""
        if _encloses(b.scope, u.scope):
            out.append(
                Diagnostic(
                    "error",
                    f"'{u.name}' is used before its declaration{line}",
                    u.node.span,
                    f"declare '{u.name}' before this statement",
                )
            )
            continue
        what = _WHAT.get(b.scope.kind, f"'{b.scope.kind}'")
        hint = (
            f"a {what} without braces holds only the next statement: put the statements that use '{u.name}' in braces"
            if not b.scope.braced
            else f"'{u.name}' is known only inside that {what}; declare it outside to use it here"
        )
        out.append(
            Diagnostic(
                "error", f"'{u.name}' is not declared here (it is declared{line} inside a {what})", u.node.span, hint
            )
        )
    return out


def _encloses(outer: Scope, inner: Scope) -> bool:
    s: Scope | None = inner
    while s is not None:
        if s is outer:
            return True
        s = s.parent
    return False
