"""Events and barriers in the tile IR (LANGUAGE.md 7.10), as a mixin of the kernel lifter
(lift/kernel.py).

Events, ``trigger`` / ``wait`` on them, spin loops on them (``while (e);``) and block barriers
(``sync.shared``) order the work of concurrent threads and roles.  The lifted program of one role
is sequential: every copy and MMA is complete where it stands, and a buffer lives in the
program's registers, so these statements constrain nothing in it and lift to no statement.  (A
program whose roles run concurrently, ``inthreads.async``, is not lifted here; a grid-wide
``sync.global`` raises :class:`NotLifted`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..frontend import ast as A
from .notlifted import NotLifted
from .terms import unparen

BLOCK_SYNCS = ("shared", "local", "barrier", "fence")


@dataclass(frozen=True)
class Event:
    """A declared event (or array of events): it only orders threads."""

    name: str


class Events:
    scopes: list[dict[str, Any]]
    binding: Any

    def event_decl(self, s: A.EventDecl) -> None:
        for d in s.items:
            self.scopes[-1][d.name] = Event(d.name)

    def is_event(self, e: A.Expr) -> bool:
        """``e``, ``e[i]``, ``e.at(i)``: an event declared in the kernel."""
        e = unparen(e)
        while isinstance(e, (A.Index, A.At)):
            e = unparen(e.base)
        return isinstance(e, A.Name) and isinstance(self.binding(e.name), Event)

    while_loop: Any

    def trigger(self, s: A.Trigger) -> None:
        if s.cluster or not all(self.is_event(x) for x in s.items):
            raise NotLifted("a trigger of something other than the block's events", s)

    def spin(self, s: A.While) -> None:
        """``while (e);`` on events: a wait; a loop on anything else is a loop (lift/loops.py)."""
        operands = _operands(s.cond)
        if not any(self.is_event(x) for x in operands):
            self.while_loop(s)
            return
        body = s.body
        if not (isinstance(body, A.Empty) or (isinstance(body, A.Block) and not body.stmts)):
            raise NotLifted("a while loop on events with a body", s)
        if not all(self.is_event(x) for x in operands):
            raise NotLifted("a while loop on events and something else", s)

    def sync(self, s: A.Sync) -> None:
        # ``sync.barrier : block`` meets the block's threads (the whole grid's only under a
        # cooperative launch, LANGUAGE.md 7.10, which the lifting refuses)
        if s.kind not in BLOCK_SYNCS or s.level not in (None, "block", "thread", "group", "group-4"):
            raise NotLifted(f"a 'sync.{s.kind}'{f' : {s.level}' if s.level else ''} (across blocks)", s)


def _operands(e: A.Expr) -> list[A.Expr]:
    e = unparen(e)
    if isinstance(e, A.Binary) and e.op in ("&&", "||"):
        return _operands(e.lhs) + _operands(e.rhs)
    return [e]
