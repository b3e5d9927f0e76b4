"""Warp roles ordered by events or barriers, without a pipeline loop, as one sequential program
(LANGUAGE.md 7.4, 7.10): an AST analysis that lift/collapse.py applies to a unit-level
``parallel`` whose roles have no main loop.

Each unit of the ``parallel`` runs its statements in order: the statements beside the roles (every
unit's), and the roles its index picks.  Roles run concurrently, so the only order between the
statements of two units is what their events state: a ``wait e`` of one role starts after the
``trigger e`` it waits for.  A role is cut into segments at its waits; the ``k``-th wait of ``e`` in
a role waits for the ``k``-th trigger of ``e`` (the ``k - 1``-th where ``e`` is declared ``= ready``:
its first generation is ready).  An event that several roles trigger completes a generation when
each of them has triggered it (every unit of each arrives: the default arrival count is all of
them); one declared with an explicit count (``event<128>``) that several roles trigger is refused.
The sequential program is the segments in an order that keeps every unit's own order and every
trigger before its waits, the source's order where these leave a choice (a race-free program
computes the same in every such order).  A statement beside the roles runs once, where every unit
would have run it: after the roles written before it, before those after.

Refused (:class:`NotLifted`): a wait that no trigger releases (the roles would wait forever), waits
or triggers inside a branch or a block, events that order the roles in a cycle, and a buffer that
one role writes and another uses with no event ordering them (a race: no order is the program's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..frontend import ast as A
from .notlifted import NotLifted, Unordered
from .terms import root, root_name, unparen


@dataclass
class Item:
    """A statement beside the roles (``units`` None: every unit runs it) or a role cut at its waits."""

    segments: list[list[A.Stmt]]
    units: frozenset[int] | None
    node: A.Node
    waits: list[list[str]] = field(default_factory=list)  # per segment: the events its first statement waits on
    triggers: list[list[str]] = field(default_factory=list)  # per segment: the events it triggers


def event_name(e: A.Expr) -> str | None:
    """The event ``e``, ``e[i]`` or ``e.at(k)`` names (an array of events is one event here)."""
    e = unparen(e)
    while isinstance(e, (A.Index, A.At)):
        e = unparen(e.base)
    return e.name if isinstance(e, A.Name) else None


def _waited(s: A.Stmt, events: dict[str, bool]) -> list[str]:
    if isinstance(s, A.Wait):
        return [n for x in s.items if (n := event_name(x)) in events]
    if isinstance(s, A.While):
        names = [event_name(x) for x in _operands(s.cond)]
        return [n for n in names if n in events]
    return []


def _operands(e: A.Expr) -> list[A.Expr]:
    e = unparen(e)
    if isinstance(e, A.Binary) and e.op in ("&&", "||"):
        return _operands(e.lhs) + _operands(e.rhs)
    return [e]


def _triggered(s: A.Stmt, events: dict[str, bool]) -> list[str]:
    if isinstance(s, A.Trigger):
        return [n for x in s.items if (n := event_name(x)) in events]
    return []


def role_item(stmts: list[A.Stmt], units: frozenset[int], node: A.Node, events: dict[str, bool]) -> Item:
    """A role's statements cut into segments at its waits on events."""
    item = Item([[]], units, node, [[]], [[]])
    for s in stmts:
        for n in s.walk():
            if n is not s and isinstance(n, A.Stmt) and (_waited(n, events) or _triggered(n, events)):
                raise NotLifted("a wait or a trigger of an event inside a branch or a block of a warp role", n)
        waited = _waited(s, events)
        if waited and item.segments[-1]:
            item.segments.append([])
            item.waits.append([])
            item.triggers.append([])
        item.waits[-1].extend(waited)
        item.triggers[-1].extend(_triggered(s, events))
        item.segments[-1].append(s)
    return item


def common_item(s: A.Stmt, events: dict[str, bool]) -> Item:
    if _waited(s, events) or _triggered(s, events):
        raise NotLifted("a wait or a trigger of an event beside the warp roles (by every unit)", s)
    return Item([[s]], None, s, [[]], [[]])


def sequence(
    items: list[Item], events: dict[str, bool], node: A.Node, counted: frozenset[str] = frozenset()
) -> list[A.Stmt]:
    """The statements of ``items`` (in source order) as one sequential program; ``counted``: the
    events declared with an arrival count (``event<128>``)."""
    nodes = [(i, k) for i, it in enumerate(items) for k in range(len(it.segments))]
    after: dict[tuple[int, int], set[tuple[int, int]]] = {n: set() for n in nodes}  # n -> what must precede it
    ordered: dict[tuple[int, int], set[tuple[int, int]]] = {n: set() for n in nodes}  # what precedes n on every unit
    for i, it in enumerate(items):
        for k in range(1, len(it.segments)):
            after[(i, k)].add((i, k - 1))
            ordered[(i, k)].add((i, k - 1))
        for j in range(i):  # an item after another that shares a unit with it
            other = items[j]
            if it.units is None or other.units is None or it.units & other.units:
                after[(i, 0)].add((j, len(other.segments) - 1))
            if it.units is None or other.units is None or it.units == other.units:
                ordered[(i, 0)].add((j, len(other.segments) - 1))
    # the k-th wait of an event in a role, after its k-th trigger (k - 1-th where it starts ready)
    producers: dict[str, list[tuple[int, int]]] = {}
    for i, it in enumerate(items):
        for k, names in enumerate(it.triggers):
            for name in names:
                producers.setdefault(name, []).append((i, k))
    for name, where in producers.items():
        if name in counted and len({i for i, _ in where}) > 1:
            raise NotLifted(
                f"the event '{name}' of an explicit arrival count, triggered by several warp roles",
                items[where[1][0]].node,
            )
    by_role = {name: _by_role(where) for name, where in producers.items()}
    for i, it in enumerate(items):
        seen: dict[str, int] = {}
        for k, names in enumerate(it.waits):
            for name in names:
                count = seen.get(name, 0)
                seen[name] = count + 1
                needed = count - 1 if events.get(name) else count
                if needed < 0:
                    continue
                for triggers in by_role.get(name, {None: []}).values():  # a generation: every role's trigger
                    if needed >= len(triggers):
                        raise NotLifted(
                            f"a wait on the event '{name}' that no trigger releases (the roles would wait forever)",
                            it.segments[k][0],
                        )
                    after[(i, k)].add(triggers[needed])
                    ordered[(i, k)].add(triggers[needed])
    order: list[tuple[int, int]] = []
    done: set[tuple[int, int]] = set()
    while len(order) < len(nodes):
        ready = [n for n in nodes if n not in done and after[n] <= done]
        if not ready:
            raise NotLifted("warp roles whose events order them in a cycle", node)
        first = min(ready)  # the source's order where the events leave a choice
        order.append(first)
        done.add(first)
    _races(items, nodes, ordered)  # (acyclic, as the order shows)
    return [s for i, k in order for s in items[i].segments[k]]


def _by_role(where: list[tuple[int, int]]) -> dict[int | None, list[tuple[int, int]]]:
    """The triggers of an event (item, segment) by the role that makes them, each in its order."""
    out: dict[int | None, list[tuple[int, int]]] = {}
    for i, k in where:
        out.setdefault(i, []).append((i, k))
    return out


def _races(items: list[Item], nodes: list[tuple[int, int]], after: dict[tuple[int, int], set[tuple[int, int]]]) -> None:
    """Refuse two segments of roles on different units that nothing orders (no event, no barrier
    between them) where one writes what the other uses."""
    before: dict[tuple[int, int], set[tuple[int, int]]] = {}

    def preceding(n: tuple[int, int]) -> set[tuple[int, int]]:
        if n not in before:
            out: set[tuple[int, int]] = set()
            for m in after[n]:
                out |= {m} | preceding(m)
            before[n] = out
        return before[n]

    uses = {n: _uses(items[n[0]].segments[n[1]]) for n in nodes}
    for x in nodes:
        for y in nodes:
            ux_, uy_ = items[x[0]].units, items[y[0]].units
            if ux_ is None or uy_ is None or ux_ == uy_:  # the same units: each its own data, in its order
                continue
            if x >= y or x in preceding(y) or y in preceding(x):
                continue
            _race(uses[x], uses[y], items[y[0]].node)


def unordered_roles(roles: list[A.Stmt], units: list[frozenset[int]]) -> None:
    """Roles that pipeline a loop (lift/collapse.py): NotLifted where two of them on different units
    share a buffer one writes and neither waits on nor triggers an event (no order is the program's,
    so merging their loops in the source's order would pick one)."""
    uses = [_uses([r]) for r in roles]
    ordered = [any(_orders_events(n) for n in r.walk()) for r in roles]
    for j in range(len(roles)):
        for i in range(j):
            if units[i] == units[j] or (ordered[i] and ordered[j]):
                continue
            _race(uses[i], uses[j], roles[j])


def _race(a: tuple[set[str], set[str]], b: tuple[set[str], set[str]], node: A.Node) -> None:
    """Unordered where one of two unordered pieces writes what the other uses ((written, read) each)."""
    (wa, ua), (wb, ub) = a, b
    shared = (wa & ub) | (wb & ua)
    if shared:
        name = sorted(shared)[0]
        raise Unordered(
            f"warp roles that use '{name}' with no event ordering them (a race: no order is the program's)", node
        )


def _orders_events(n: A.Node) -> bool:
    return isinstance(n, (A.Wait, A.Trigger)) or (isinstance(n, A.DmaStmt) and n.event is not None)


def _uses(stmts: list[A.Stmt]) -> tuple[set[str], set[str]]:
    """The names the statements write into (copy and store destinations, elements) and every name they
    read.  The name a plain write stands on is not read by it: two roles that only write into one
    tensor (each its own rows) do not race on it; whichever order the writes take is one the program
    may take (where they overlap, the program itself leaves the result to chance)."""
    written: set[str] = set()
    read: set[str] = set()
    stores: set[int] = set()  # the Name nodes a plain write stands on
    for s in stmts:
        for n in s.walk():
            target = None
            if (
                isinstance(n, A.DmaStmt)
                and not (isinstance(n.dst, A.Name) and n.dst.name in ("shared", "local", "global"))
                or isinstance(n, A.MmaStore)
            ):
                target = n.dst
            elif isinstance(n, A.Assign) and isinstance(n.target, A.At):
                target = n.target
            if target is not None and (name := root_name(target)) is not None:
                written.add(name)
                if not (isinstance(n, A.Assign) and n.op != "="):  # 'x.at(i) += v' reads x
                    stores.add(id(root(target)))
            if isinstance(n, A.Name) and id(n) not in stores:
                read.add(n.name)
    return written, read
