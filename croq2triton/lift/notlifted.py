"""The exception of every lifting analysis: a form it does not cover (not a user's error)."""

from __future__ import annotations

from ..errors import Span
from ..frontend import ast as A

# reasons that say what kind of construct, not which: the diagnostic adds it as the source spells it
GENERIC = ("of this form", "this kind of", "something other than", "something that is not", "other than a plain")
LONGEST = 72  # characters of the source quoted


class NotLifted(Exception):
    """A form the tile-IR path does not lift: the kernel dispatch (emit/kernels.py) refuses the
    kernel with a diagnostic at ``span``, unless the contraction path has taken it."""

    def __init__(self, reason: str, node: A.Node | None = None, hint: str | None = None) -> None:
        super().__init__(reason)
        self.span: Span | None = node.span if node is not None else None
        self.node = node
        self.hint = hint  # what to do instead, where there is more to say than the README's list

    def described(self) -> str:
        """The reason, with the construct as the source spells it where the reason names only its
        kind (``a grid bound of this form: 'N % 3 + 1'``)."""
        from ..sema.tiling import source_text

        reason = str(self)
        if self.node is None or not any(g in reason for g in GENERIC):
            return reason
        text = " ".join(source_text(self.node).split())
        if not text or text == "?" or f"'{text}'" in reason:
            return reason
        if len(text) > LONGEST:
            text = text[: LONGEST - 3].rstrip() + "..."
        return f"{reason}: '{text}'"


class Unlowerable(NotLifted):
    """A construct with no Triton form whatever the lifting (LANGUAGE.md 9.5: calls into C++ code
    here; C++ and asm statements, 2:4 sparse copies as lift/kernel.py first_unlowerable
    finds them): no other way of lifting the kernel (its units unrolled, its fragments per thread)
    is tried, so that the refusal names this construct rather than why a fallback did not fit."""


class Unordered(NotLifted):
    """Warp roles that share a buffer with no event ordering them (lift/sequence.py): the program
    has no order to translate (a race), however the kernel is lifted, so no other lifting (its units
    unrolled) is tried: one would run the roles in the source's order, which is not the program's."""


class NotInRegisters(NotLifted):
    """A buffer's element access that its register tile does not express, found while lifting
    (the placement pass, lift/placement.py, decides from the source and cannot always know a
    buffer's extents): the kernel is lifted again with ``buffer`` in scratch memory."""

    def __init__(self, reason: str, buffer: str, node: A.Node | None = None) -> None:
        super().__init__(reason, node)
        self.buffer = buffer
