"""``|..|`` of what is not a shape (LANGUAGE.md 7.1 and 7.7).

``|s|`` is the number of elements of the shape ``s`` (an mdspan, an ituple, ``x.span``, an integer
extent or shape arithmetic on them) and ``|T|`` the byte size of an element type.  A parallel,
``foreach`` or ``with`` index is no shape: the language gives ``|i|`` no meaning (its value ``i``
and its bound ``#i`` are what a program means by it).
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution


def size_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if not isinstance(n, A.SizeOf) or n.expr is None:
            continue
        for term in _terms(n.expr):
            b = res.binding(term)
            if b is None or b.kind != "bounded":
                continue
            what = (
                "a parallel index" if b.origin == "parallel" else "a loop index" if b.origin == "loop" else "an index"
            )
            out.append(
                Diagnostic(
                    "error",
                    f"'|{term.name}|': '{term.name}' is {what}, not a shape; '|..|' counts the elements of a shape",
                    term.span,
                    f"write '#{term.name}' for its bound, '{term.name}' for its value, or '|s|' of a shape s",
                )
            )
    return out


def _terms(e: A.Expr) -> list[A.Name]:
    """The names ``e`` counts the elements of (not those under ``.span``: ``|x.span|``)."""
    if isinstance(e, A.Name):
        return [e]
    if isinstance(e, A.Paren):
        return _terms(e.expr)
    if isinstance(e, A.Binary):
        return _terms(e.lhs) + _terms(e.rhs)
    if isinstance(e, A.Builtin):
        return [t for a in e.args for t in _terms(a)]
    return []
