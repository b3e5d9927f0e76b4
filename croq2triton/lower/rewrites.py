"""Shared pieces of the schedule rewrites that prove a program keeps its meaning
(lower/coarsen.py, lower/ksplit.py): literal and name tests on AST nodes, and the exception a
proof raises where it cannot follow the program."""

from __future__ import annotations

from ..frontend import ast as A


class NotProven(Exception):
    """A use the rewrite cannot account for: the program is left as the source states it."""


def int_lit(e: A.Expr | None) -> int | None:
    """The value of an integer literal (not looking through parentheses)."""
    return e.value if isinstance(e, A.IntLit) else None


def name_of(e: A.Expr | None) -> str | None:
    """The name of a plain name expression."""
    return e.name if isinstance(e, A.Name) else None
