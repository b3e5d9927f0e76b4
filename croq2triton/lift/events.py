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
    host: Any  # the launcher's names (lift/host.py ``HostScope``): its ``global event``\ s
    triggered: set[str]  # the global events this program has triggered so far
    early_waits: dict[str, int]  # the waits on global events that earlier launches released, so far
    loop_depth: int
    top: A.Parallel

    def event_decl(self, s: A.EventDecl) -> None:
        for d in s.items:
            self.scopes[-1][d.name] = Event(d.name)

    def is_event(self, e: A.Expr) -> bool:
        """``e``, ``e[i]``, ``e.at(i)``: an event declared in the kernel, or a ``global event`` of the
        function."""
        name = _event_name(e)
        return name is not None and (
            isinstance(self.binding(name), Event) or (self.binding(name) is None and name in self.host.events)
        )

    def tests_event(self, cond: A.Expr) -> bool:
        """Does the condition ``cond`` test an event (an event predicate, LANGUAGE.md 7.4)?"""
        return any(self.is_event(x) for x in _operands(cond))

    def global_event(self, e: A.Expr) -> str | None:
        """The name of the function's ``global event`` ``e`` names (None: another thing)."""
        name = _event_name(e)
        return name if name is not None and self.binding(name) is None and name in self.host.events else None

    def waited(self, e: A.Expr, node: A.Node) -> None:
        """A wait on ``e``: on a global event, one this program triggered before (a program that
        waits for another block's trigger would need blocks that wait for each other), or one an
        earlier launch triggered: a launch ends after all its blocks, so each trigger every block
        of it made has released a generation (LANGUAGE.md 7.3, 7.10); the waits of this program
        before its own trigger, each outside a loop, may use that many."""
        name = self.global_event(e)
        if name is None or name in self.triggered:
            return
        released = self.host.released.get(name, 0)
        used = self.early_waits.get(name, 0)
        if released and isinstance(unparen(e), A.Name) and not self.loop_depth and used < released:
            self.early_waits[name] = used + 1
            return
        if released and isinstance(unparen(e), A.Name):
            many = "in a loop" if self.loop_depth else f"more often than the earlier launches trigger it ({released})"
            raise NotLifted(f"a wait on the global event '{name}' {many}, before this block triggers it", node)
        if any(isinstance(n, A.Trigger) and name in map(_event_name, n.items) for n in self.top.walk()):
            raise NotLifted(
                f"a wait on the global event '{name}' before this block triggers it (blocks waiting for each"
                " other's triggers)",
                node,
            )
        raise NotLifted(
            f"a wait on the global event '{name}' that nothing before it triggers (neither every block of an"
            " earlier launch nor this block)",
            node,
        )

    while_loop: Any

    def trigger(self, s: A.Trigger) -> None:
        if s.cluster or not all(self.is_event(x) for x in s.items):
            raise NotLifted("a trigger of something other than the block's events", s)
        self.triggered.update(n for n in map(self.global_event, s.items) if n is not None)

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
        for x in operands:
            self.waited(x, s)

    def sync(self, s: A.Sync) -> None:
        # ``sync.barrier : block`` meets the block's threads (the whole grid's only under a
        # cooperative launch, LANGUAGE.md 7.10, which the lifting refuses)
        if s.kind not in BLOCK_SYNCS or s.level not in (None, "block", "thread", "group", "group-4"):
            raise NotLifted(f"a 'sync.{s.kind}'{f' : {s.level}' if s.level else ''} (across blocks)", s)


def _event_name(e: A.Expr) -> str | None:
    e = unparen(e)
    while isinstance(e, (A.Index, A.At)):
        e = unparen(e.base)
    return e.name if isinstance(e, A.Name) else None


def _operands(e: A.Expr) -> list[A.Expr]:
    e = unparen(e)
    if isinstance(e, A.Binary) and e.op in ("&&", "||"):
        return _operands(e.lhs) + _operands(e.rhs)
    return [e]


def every_block_triggers(top: A.Parallel, name: str) -> int:
    """How many times every block of the launch ``top`` triggers the global event ``name`` (a
    ``trigger name`` among the statements every thread runs, not under a branch, a loop or a
    role; the elements of an array of events are not counted)."""
    count = 0
    todo: list[A.Stmt] = [top.body]
    while todo:
        s = todo.pop()
        if isinstance(s, A.Block):
            todo.extend(s.stmts)
        elif isinstance(s, A.Parallel) and not s.is_async:
            todo.append(s.body)
        elif isinstance(s, A.Trigger) and not s.cluster:
            count += sum(1 for x in s.items if isinstance(unparen(x), A.Name) and unparen(x).name == name)  # type: ignore[attr-defined]
    return count
