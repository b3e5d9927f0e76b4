"""The exception of every lifting analysis: a form it does not cover (not a user's error)."""

from __future__ import annotations

from ..errors import Span
from ..frontend import ast as A


class NotLifted(Exception):
    """A form the tile-IR path does not lift: the kernel dispatch (emit/kernels.py) refuses the
    kernel with a diagnostic at ``span``, unless the contraction path has taken it."""

    def __init__(self, reason: str, node: A.Node | None = None, hint: str | None = None) -> None:
        super().__init__(reason)
        self.span: Span | None = node.span if node is not None else None
        self.hint = hint  # what to do instead, where there is more to say than the README's list
