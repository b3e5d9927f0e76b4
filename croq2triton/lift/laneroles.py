"""``inthreads.async`` among other statements, not the roles of a unit level that lift/collapse.py
folds: roles of the threads of a thread level (``inthreads.async (p < 32)`` under ``parallel p by
64 : thread``), or roles inside a loop (LANGUAGE.md 7.4, 7.10).

A role runs its body on the threads its condition picks, concurrently with the other roles and
without meeting them after; the statements of a list run in their order on each thread.  The
lifted program runs the list in its source order, each role as ``if (cond) body`` over the lanes:
one order the concurrent threads may take, which a race-free program computes the same in,
provided that every ``wait`` of an event comes after the triggers it waits for.  Which threads a
condition picks is not known here, so every statement is taken to share threads with every other
(the order is the source's), and the events must agree with it: the ``k``-th wait of an event in
a statement waits for the ``k``-th trigger (``k - 1``-th where it starts ready) of each statement
that triggers it (lift/sequence.py), which must come earlier in the list.  In a loop, the list
runs again: each statement that waits on an event must wait on it as often as each that triggers
it triggers it (the generations of one trip are that trip's), else refused.
"""

from __future__ import annotations

from ..frontend import ast as A
from .notlifted import NotLifted
from .sequence import Item, event_name, role_item, sequence


def has_lane_roles(stmts: list[A.Stmt]) -> bool:
    return any(isinstance(s, A.InThreads) and s.is_async for s in stmts)


def check_lane_roles(stmts: list[A.Stmt], events: dict[str, bool], node: A.Node) -> None:
    """Refuse the list (with roles in it) where its source order is not one its events allow."""
    items: list[Item] = []
    for s in stmts:
        if isinstance(s, (A.Empty, A.PragmaStmt)):
            continue
        body = s.body if isinstance(s, A.InThreads) and s.is_async else s
        inner = list(body.stmts) if isinstance(body, A.Block) else [body]
        items.append(role_item(inner, None, s, events))  # type: ignore[arg-type]
    _balanced(items)
    try:
        order = sequence(items, events, node)
    except NotLifted as e:
        if "cycle" not in str(e):
            raise
        raise NotLifted(
            "'inthreads.async' with a wait written before the trigger it waits for (lifted in the order written)",
            e.node,
        ) from None
    flat = [x for it in items for seg in it.segments for x in seg]
    if [id(x) for x in order] != [id(x) for x in flat]:
        raise NotLifted("'inthreads.async' whose events order them otherwise than they are written", node)


def _balanced(items: list[Item]) -> None:
    counts: dict[str, set[int]] = {}
    for it in items:
        for table in (it.waits, it.triggers):
            per: dict[str, int] = {}
            for names in table:
                for name in names:
                    per[name] = per.get(name, 0) + 1
            for name, n in per.items():
                counts.setdefault(name, set()).add(n)
    for name, seen in counts.items():
        if len(seen) > 1:
            node = next(
                it.node
                for it in items
                for x in it.node.walk()
                if isinstance(x, (A.Wait, A.Trigger)) and any(event_name(e) == name for e in x.items)
            )
            raise NotLifted(f"'inthreads.async' that wait on the event '{name}' and trigger it unequally often", node)
