"""An element of a buffer that several lanes add to (LANGUAGE.md 7.9, ``apply``): ``row_sum.at(i) =
row_sum.at(i) + scores.at(i, j)`` under ``apply {i, j} in scores.span`` is the element loop's sum,
``row_sum[i] += sum over j of scores[i, j]`` (the lanes of ``j`` each add their term; the order of
a sum's terms is the one freedom taken).  The added term may not read the buffer itself.  Threads
of a thread level that add to one element (no atomic) race: not lifted as a sum."""

from __future__ import annotations

from ..frontend import ast as A
from ..frontend.printer import Printer
from .terms import unparen


def added_term(name: str, at: A.At, a: A.Assign) -> A.Expr | None:
    """What ``a`` (a write of ``at``, an element of buffer ``name``) adds to it: ``x.at(i) += t``,
    ``x.at(i) = x.at(i) + t`` or ``t + x.at(i)`` (None: another form, or ``t`` reads ``x``)."""
    term: A.Expr | None = None
    if a.op == "+":  # ``x.at(i) += t``
        term = a.value
    elif a.op == "=":
        v = unparen(a.value)
        if isinstance(v, A.Binary) and v.op == "+":
            if _same(v.lhs, at):
                term = v.rhs
            elif _same(v.rhs, at):
                term = v.lhs
    if term is None or any(isinstance(n, A.Name) and n.name == name for n in term.walk()):
        return None
    return term


def _same(e: A.Expr, at: A.At) -> bool:
    e = unparen(e)
    return isinstance(e, A.At) and Printer().expr(e) == Printer().expr(at)
