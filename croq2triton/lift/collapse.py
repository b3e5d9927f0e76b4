"""Warp roles collapsed into one sequential program (LANGUAGE.md 7.10): an AST rewrite the kernel
lifter (lift/kernel.py) applies to a unit-level ``parallel`` whose body is ``inthreads.async``
roles, before lifting what it returns.

The form (the seed chapter's and the tutorial's producer / consumer pipelines)::

    parallel wg by 2 : group-4 [, t by 128 : thread] {
      inthreads.async (wg == 0) { foreach k in [n] { wait empty..; copy .. => ring[k % S]; trigger full..; } }
      inthreads.async (wg == 1) { acc = mma.fill ..; foreach k in [n] { wait full..; mma acc, ring[k % S]..;
                                  trigger empty..; } mma.store acc, .. }
    }

means "for each k: the producer's copies into a slot, then the consumer's MMAs on that slot" —
the events only order the two roles, so that every read of a slot in iteration k sees the write
of iteration k.  Collapsed, each role runs with its unit index fixed (``wg`` is 0 in the first
role, 1 in the second; the units and threads a condition picks: lift/rolepick.py); the statements of the roles before their main loops come first, the
main loops (one iteration domain) become one loop holding the writer's body then the reader's,
the rest follows; loops of event statements only (``foreach s in [4] trigger empty.at(s)``) go;
a ring of buffers indexed by one expression in the loop (``lhs_s[stage]``) is one buffer (each
iteration writes its slot before it reads it, and nothing is carried in a slot from one
iteration to the next).  The loop keeps what the source states: the ring's slots as its stages,
the roles and events (:class:`Stated`).  Anything else (roles of several units each, a thread
index the roles use, rings read at other slots or outside the loop, main loops over different
domains) raises :class:`NotLifted`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CroqLoweringError
from ..frontend import ast as A
from ..frontend.printer import Printer
from ..sema.consteval import const_int
from ..sema.levels import UNIT_THREADS, chain_levels, chains
from .localnames import defined_names, rename
from .notlifted import NotLifted
from .rolepick import role_units, threads_spliced, waits_only
from .roles import event_only
from .sequence import Item, common_item, event_name, role_item, sequence, unordered_roles
from .terms import root_name, unparen


@dataclass(frozen=True)
class Stated:
    """What the source states about the pipeline it collapses."""

    loop: A.Foreach | None  # the merged main loop (None: roles ordered by events alone, lift/sequence.py)
    rings: frozenset[str]  # the rings of buffers it reads and writes at one slot (now single buffers)
    roles: tuple[str, ...]
    events: tuple[str, ...]
    units: A.PBy | None = None  # the unit level the merged program runs on, where a role has several


def has_roles(body: A.Stmt) -> bool:
    return any(isinstance(s, A.InThreads) and s.is_async for s in _stmts(body))


def units_nested(top: A.Parallel) -> A.Parallel:
    """``parallel b by n : block, w by 2 : group-4 { roles }`` as ``parallel b by n : block {
    parallel w by 2 : group-4 { roles } }`` (LANGUAGE.md 7.3: a comma list is nested parallels),
    so that the roles' own ``parallel`` is the one :func:`collapse` folds; ``top`` itself where its
    body has no roles or its levels below the block are not warps or warpgroups."""
    if not has_roles(top.body) or top.is_async:
        return top
    kinds = chain_levels(chains(top)[0])[: len(top.levels)]
    cut = next((i for i, k in enumerate(kinds) if k != "block"), len(kinds))
    if cut == 0 or cut == len(kinds) or kinds[cut] not in UNIT_THREADS:
        return top
    inner = A.Parallel(top.levels[cut:], top.body, span=top.span)
    return dataclasses.replace(top, levels=top.levels[:cut], body=A.Block([inner], span=top.body.span))


def collapse(
    p: A.Parallel,
    rings: set[str],
    events: dict[str, bool] | None = None,
    counted: frozenset[str] = frozenset(),
    outer: frozenset[str] = frozenset(),
) -> tuple[A.Stmt, Stated]:
    """The roles of ``p`` as one sequential block (a copy: ``p`` is not changed), and what the
    source states about them; ``rings``: the names of the arrays of buffers in scope, ``events``:
    the events of the kernel (whether each is declared ready), ``counted``: those declared with an
    arrival count, ``outer``: the names bound around ``p``."""
    events = events or {}
    if len(p.levels) > 2 or p.is_async:
        raise NotLifted("warp roles under a parallel of this form", p)
    unit, *thread = p.levels
    names = unit.names
    if len(names) != 1 or len(unit.bound) != 1 or const_int(unit.bound[0]) is None:
        raise NotLifted("warp roles over units that are not one constant level", unit)
    var = names[0]
    thread_vars = {v for b in thread for v in b.names}
    threads = {  # the thread indices of constant extents: a role may pick some of them
        v: n for b in thread for v, x in zip(b.names, b.bound, strict=False) if (n := const_int(x)) is not None
    }
    items = [s for s in _stmts(p.body) if not isinstance(s, (A.Empty, A.PragmaStmt))]
    # declarations beside the roles declare for every unit: first, in their order
    items = [s for s in items if floating(s)] + [s for s in items if not floating(s)]
    roles = [r for r in items if isinstance(r, A.InThreads) and (r.is_async or _on_units(r.cond, var))]
    commons = [s for s in items if not any(s is r for r in roles)]
    for c in commons:
        _check_common(c, {var} | thread_vars, roles)
    _named_barriers(roles, commons)
    units = const_int(unit.bound[0]) or 0
    parts = []
    bodies: list[A.Stmt] = []
    picked: list[frozenset[int]] = []
    several: tuple[int, int] | None = None  # (first unit, units) of the one role of several units
    inner = f"{var}#"  # that role's own unit index (no name a user can write)
    lanes: list[A.Stmt] = []  # the roles that use their thread index
    for r in roles:
        assert isinstance(r, A.InThreads)
        first, count = role_units(r.cond, var, units, threads, waits_only(r.body))
        if count > 1 and several is not None and several != (first, count):
            raise NotLifted("two warp roles of several units each", r)
        if count > 1:
            several = (first, count)

        def index(span: object, first: int = first, count: int = count) -> A.Expr:
            if count == 1:
                return A.IntLit(first, str(first), span=span)  # type: ignore[arg-type]
            return A.Binary("+", A.Name(inner, span=span), A.IntLit(first, str(first), span=span), span=span)  # type: ignore[arg-type]

        body = threads_spliced(_substitute(copy.deepcopy(r.body), var, index, units), threads)
        if any(isinstance(n, A.Name) and n.name in thread_vars for n in body.walk()):
            lanes.append(r)
        parts.append(_split(body, r))
        bodies.append(body)
        picked.append(frozenset(range(first, first + count)))
    mains = [m for _, m, _ in parts if m is not None]
    level = None
    if several is not None:  # the merged program runs on that role's units (lift/units.py)
        level = A.PBy(
            [A.IntLit(several[1], str(several[1]), span=unit.span)], name=inner, level=unit.level, span=unit.span
        )
    if not mains:  # roles ordered by their events alone (lift/sequence.py)
        _own_names(bodies, roles, outer)
        seq: list[Item] = []
        for s in items:
            k = next((i for i, r in enumerate(roles) if r is s), None)
            if k is None:
                seq.append(common_item(s, events))
            else:
                body = bodies[k]
                seq.append(role_item(_stmts(body), picked[k], roles[k], events))
        block = A.Block(sequence(seq, events, p, counted), span=p.span)
        labels = tuple(_text([r.cond]) for r in roles)  # type: ignore[attr-defined]
        named = tuple(sorted({_text([x]) for n in block.walk() if isinstance(n, (A.Wait, A.Trigger)) for x in n.items}))
        block = _on_lanes(block, thread, lanes, roles, p)
        if level is not None:
            block = A.Block([A.Parallel([level], block, span=p.span)], span=p.span)
        return block, Stated(None, frozenset(), labels, named, level)
    if len(roles) < 2:
        raise NotLifted("one warp role with a pipeline loop (no role to pair it with)", roles[0])
    unordered_roles(roles, picked)  # (before the loops merge: a race has no order to merge them in)
    if not all(r.is_async for r in roles):  # type: ignore[attr-defined]
        sync = next(r for r in roles if not r.is_async)  # type: ignore[attr-defined]
        raise NotLifted("an 'inthreads' beside warp roles that pipeline a loop", sync)
    first, last = _position(items, roles[0]), _position(items, roles[-1])
    before = [c for c in commons if _position(items, c) < first]
    after = [c for c in commons if _position(items, c) > last]
    for c in commons:
        if first < _position(items, c) < last and not isinstance(c, (A.SpannedDecl, A.EventDecl, A.Sync)):
            raise NotLifted("a statement between warp roles that pipeline a loop", c)
    before += [c for c in commons if first < _position(items, c) < last]  # declarations between roles
    _align(mains)
    _own_names(bodies, roles, outer)
    ring_names = {n.base.name for m in mains for n in m.walk() if _ring_access(n, rings)}  # type: ignore[attr-defined]
    # the roles that write a ring go first: each iteration writes its slot before it is read
    order = sorted(range(len(parts)), key=lambda i: not _writes_ring(parts[i][1], rings))
    merged, innermost = _merged([m for i in order if (m := parts[i][1]) is not None])
    # the roles' statements before and after their loops: in the order their own events state
    # (a consumer's 'mma.store acc, so; trigger done;' before the producer's 'wait done; copy so ..')
    loops = [m for _, m, _ in parts if m is not None]
    units, who = [picked[i] for i in order], [roles[i] for i in order]
    firsts, lasts = [parts[i][0] for i in order], [parts[i][2] for i in order]
    heads = _by_events(firsts, units, who, events, counted, p, [*loops, *(s for x in lasts for s in x)])
    tails = _by_events(lasts, units, who, events, counted, p, [*loops, *(s for x in firsts for s in x)])
    stmts = heads + [merged] + tails
    block = A.Block(before + stmts + after, span=p.span)
    _single_buffers(block, merged, ring_names)
    named = tuple(sorted({_text([x]) for n in block.walk() if isinstance(n, (A.Wait, A.Trigger)) for x in n.items}))
    labels = tuple(_text([r.cond]) for r in roles)  # type: ignore[attr-defined]
    block = _on_lanes(block, thread, lanes, roles, p)
    if level is not None:
        block = A.Block([A.Parallel([level], block, span=p.span)], span=p.span)
    return block, Stated(innermost, frozenset(ring_names), labels, named, level)


def _on_lanes(block: A.Block, thread: list[A.PBy], lanes: list[A.Stmt], roles: list[A.Stmt], p: A.Node) -> A.Block:
    """The collapsed program of roles of which some use their thread index (``lanes``: a consumer
    whose threads each sum a row of the slot) run by the threads of the unit: ``parallel t by 128 :
    thread { program }``.  The other roles' statements (copies into the ring, which the threads run
    together, LANGUAGE.md 7.3; their index arithmetic) then run on every thread; one that a thread
    repeating it would change (an atomic, a compound assignment to memory) keeps the refusal."""
    if not lanes:
        return block
    if not thread:
        raise NotLifted("a warp role that uses its thread index", lanes[0])
    for r in roles:
        if any(r is x for x in lanes):
            continue
        for n in r.walk():
            if isinstance(n, A.CallStmt) or (
                isinstance(n, A.Assign) and n.op != "=" and not isinstance(n.target, A.Name)
            ):
                raise NotLifted("a warp role that uses its thread index beside one that updates memory", lanes[0])
    return A.Block([A.Parallel(list(thread), block, span=p.span)], span=p.span)


def _by_events(
    lists: list[list[A.Stmt]],
    units: list[frozenset[int]],
    roles: list[A.Stmt],
    events: dict[str, bool],
    counted: frozenset[str],
    node: A.Node,
    elsewhere: list[A.Stmt],
) -> list[A.Stmt]:
    """The roles' statements on one side of their main loops (``lists``, one per role, writers of the
    ring first) as one sequence: ordered by the events they alone wait on and trigger (neither the
    loops nor the other side touch them: lift/sequence.py), else one role's after the other's."""
    flat = [x for stmts in lists for x in stmts]
    here, there = _event_names(flat), _event_names(elsewhere)
    local = {name: ready for name, ready in events.items() if name in here and name not in there}
    if not local:
        return flat
    items = [role_item(stmts, u, r, local) for stmts, u, r in zip(lists, units, roles, strict=True) if stmts]
    return sequence(items, local, node, counted)


def _event_names(stmts: list[A.Stmt]) -> set[str]:
    """The events the statements wait on or trigger."""
    return {
        name
        for x in stmts
        for n in x.walk()
        if isinstance(n, (A.Wait, A.Trigger))
        for e in n.items
        if (name := event_name(e)) is not None
    }


def _ordering(stmts: list[A.Stmt]) -> tuple[list[A.Stmt], A.Stmt | None, list[A.Stmt]]:
    """A statement list as (before, the one statement that waits on or triggers events, after);
    (stmts, None, []) where none or several do."""
    at = [i for i, x in enumerate(stmts) if _orders(x) and not (isinstance(x, A.Foreach) and event_only(x))]
    if len(at) != 1:
        return stmts, None, []
    i = at[0]
    return stmts[:i], stmts[i], stmts[i + 1 :]


def _alike(mains: list[A.Stmt | None]) -> bool:
    """Are the roles' ordering statements one structure to merge through: loops over one domain
    (their counters named apart or alike) or branches on one condition without ``else``?"""
    if any(m is None for m in mains):
        return False
    if all(isinstance(m, A.Foreach) for m in mains):
        return len({_domain(m) for m in mains}) == 1  # type: ignore[arg-type]
    if all(isinstance(m, A.If) and m.other is None for m in mains):
        return len({_text([m.cond]) for m in mains}) == 1  # type: ignore[union-attr]
    return False


def _align(mains: list[A.Foreach]) -> None:
    """The roles' main loops readied for :func:`_merged`, in place: through loops alike in every
    role (over one domain, a nest ``foreach k1 { foreach k2 { wait ..; } }``) and branches on one
    condition (a persistent tile loop's ``if (tile < total) { foreach k { .. } }``), their counters
    named as the first role's at each depth, so that the values the roles compute from them are
    one (lift/collapse.py ``_own_names``).  Where the structure ends, an iteration of the innermost
    loop is one step of the pipeline; below it no loop may wait on or trigger events: its
    iterations would run one role's whole loop before the other's (refused)."""
    if len({_domain(m) for m in mains}) != 1:
        raise NotLifted("warp roles whose main loops run over different iterations", mains[0])
    for m in mains[1:]:  # one domain under other names (``foreach i in [n]`` and ``foreach j in [n]``)
        _renamed_counters(m, mains[0])
    level: list[A.Stmt] = list(mains)
    while True:
        inner = [_ordering(_stmts(_inside(m)))[1] for m in level]
        if not _alike(inner):
            break
        if isinstance(inner[0], A.Foreach):
            for m in inner[1:]:
                _renamed_counters(m, inner[0])  # type: ignore[arg-type]
        level = inner  # type: ignore[assignment]
    _no_event_loops([_inside(m) for m in level])


def _no_event_loops(stmts: list[A.Stmt]) -> None:
    """Refuses a loop among ``stmts`` (or inside them) that waits on or triggers events."""
    for s in stmts:
        for n in s.walk():
            if isinstance(n, (A.Foreach, A.While)) and _orders(n) and not (isinstance(n, A.Foreach) and event_only(n)):
                raise NotLifted("warp roles that wait on or trigger events in a loop inside their main loop", n)


def _inside(s: A.Stmt) -> A.Stmt:
    return s.then if isinstance(s, A.If) else s.body  # type: ignore[attr-defined,no-any-return]


def _merged(loops: list[A.Foreach]) -> tuple[A.Foreach, A.Foreach]:
    """The roles' main loops (the writer's first) as one loop, merged through the structure
    :func:`_align` found: at each level the roles' statements before the ordering one, the merged
    ordering statement, then their statements after it; where it ends, each role's body in turn.
    The outermost and the innermost merged loops."""
    body, innermost = _merged_lists([_stmts(m.body) for m in loops])
    merged = dataclasses.replace(loops[0], body=A.Block(body, span=loops[0].body.span))
    return merged, innermost or merged


def _merged_lists(lists: list[list[A.Stmt]]) -> tuple[list[A.Stmt], A.Foreach | None]:
    parts = [_ordering(x) for x in lists]
    mains = [m for _, m, _ in parts]
    if not _alike(mains):  # each role's statements in turn: no loop of them may order the roles
        _no_event_loops([x for stmts in lists for x in stmts])
        return [x for stmts in lists for x in stmts], None
    inner, innermost = _merged_lists([_stmts(_inside(m)) for m in mains])  # type: ignore[arg-type]
    first = mains[0]
    merged: A.Stmt
    if isinstance(first, A.Foreach):
        merged = dataclasses.replace(first, body=A.Block(inner, span=first.body.span))
        innermost = innermost or merged  # type: ignore[assignment]
    else:
        assert isinstance(first, A.If)
        merged = A.If(first.cond, A.Block(inner, span=first.then.span), span=first.span)
    before = [x for b, _, _ in parts for x in b]
    after = [x for _, _, a in parts for x in a]
    return [*before, merged, *after], innermost  # type: ignore[return-value]


def _own_names(bodies: list[A.Stmt], roles: list[A.Stmt], outer: frozenset[str]) -> None:
    """The names each role binds for itself (``acc = mma.fill ..`` in two consumer roles: each its
    own accumulator) renamed apart from those of the roles before it, in place.  A name every role
    that binds it binds once to the same value and only reads (``slot = k % S`` in each main loop,
    its counters named alike) is one value: it stays.  One bound around the roles too is the same
    variable in each, which several roles assign: refused."""
    bound: dict[str, str | None] = {}  # the names the roles so far bind (read-only: their value)
    for k, (body, role) in enumerate(zip(bodies, roles, strict=True)):
        renames: dict[str, str] = {}
        for name in defined_names(body):
            value = _read_only_value(body, name)
            if name in bound and (value is None or bound[name] != value):
                if name in outer:
                    raise NotLifted(f"'{name}', bound around warp roles and assigned by several of them", role)
                renames[name] = f"{name}__r{k}"
            else:
                bound[name] = value
        if renames:
            rename(body, renames)


def _read_only_value(body: A.Stmt, name: str) -> str | None:
    """The value ``name`` is bound to where ``body`` binds it once (``x = expr``, or a declaration
    that is not ``mutable``, ``int x = expr``, its type part of the value) and only reads it after
    (None: anything else)."""
    assigns = [n for n in body.walk() if isinstance(n, A.Assign) and _is(n.target, name)]
    decls = [(d, x) for x in body.walk() if isinstance(x, A.ScalarDecl) for d in x.items if d.name == name]
    bind: A.Node
    if not assigns and len(decls) == 1:
        d, x = decls[0]
        if x.mutable or d.init is None or d.dims:
            return None
        bind, value, typed = d, d.init, f"{x.type} "
    elif len(assigns) == 1 and not decls and assigns[0].op == "=" and isinstance(assigns[0].value, A.Expr):
        bind, value, typed = assigns[0], assigns[0].value, ""
    else:
        return None
    for n in body.walk():
        written = (
            (isinstance(n, A.MmaOp) and _is(n.acc, name))
            or (isinstance(n, A.MmaFill) and (n.result == name or _is(n.target, name)))
            or (isinstance(n, A.IncDec) and n.target == name)
            or (isinstance(n, A.FragOp) and bool(n.args) and _is(n.args[0], name))
            or (isinstance(n, A.Declarator) and n.name == name and n is not bind)
            or (getattr(n, "result", None) == name)
            or (isinstance(n, A.DmaStmt) and root_name(n.dst) == name)
            or (isinstance(n, A.Assign) and n is not bind and root_name(n.target) == name)
        )
        if written:
            return None
    return typed + _text([value])


def _is(e: A.Expr | None, name: str) -> bool:
    return e is not None and isinstance(unparen(e), A.Name) and unparen(e).name == name  # type: ignore[attr-defined]


def _named_barriers(roles: list[A.Stmt], commons: list[A.Stmt]) -> None:
    """A named barrier that only one role waits at (``__bar_sync``) orders that role's own threads;
    one that several roles (or every unit) meet, with a ``__bar_sync``, orders the roles: refused,
    the collapsed program keeps no such order.  ``__bar_arrive`` alone orders nothing."""
    meets: dict[int | None, set[int]] = {}
    syncs: dict[int | None, A.Node] = {}
    for k, part in enumerate([*roles, *commons]):
        for n in part.walk():
            if isinstance(n, A.Call) and n.kind == "bar":
                key = const_int(n.args[0]) if n.args else None
                meets.setdefault(key, set()).add(k if k < len(roles) else -1)
                if n.name == "__bar_sync":
                    syncs.setdefault(key, n)
    for key, node in syncs.items():
        if key is None or len(meets[key] | meets.get(None, set())) > 1 or -1 in meets[key]:
            raise NotLifted("a named barrier ('__bar_sync') that several warp roles meet", node)


def _counters(m: A.Foreach) -> list[str]:
    return [v for x in m.items if isinstance(x, A.Within) for v in x.names]


def _domain(m: A.Foreach) -> str:
    """The iterations of a loop, whatever its counters are named."""
    parts = []
    for x in m.items:
        if isinstance(x, A.Within):
            parts.append(f"{len(x.vars or [x.name])} in {_text([x.shape])}")
        else:
            parts.append(_text([x]))
    return "; ".join(parts)


def _renamed_counters(m: A.Foreach, first: A.Foreach) -> None:
    """``m``'s counters named as ``first``'s (the same domain), in place; refused where ``m``'s
    statements name one of ``first``'s counters for something else."""
    names = dict(zip(_counters(m), _counters(first), strict=True))
    if all(a == b for a, b in names.items()):
        return
    clash = {b for a, b in names.items() if a != b}
    if any(isinstance(n, A.Name) and n.name in clash for n in m.body.walk()):
        raise NotLifted("warp roles whose main loops name each other's counters", m)
    for a, b in names.items():
        if a != b:
            m.body = A.rewrite(
                m.body, lambda x, a=a, b=b: A.Name(b, span=x.span) if isinstance(x, A.Name) and x.name == a else None
            )  # type: ignore[assignment,misc]


def floating(s: A.Stmt) -> bool:
    """A declaration of what every unit shares (shared buffers, events)."""
    if isinstance(s, A.SpannedDecl):
        return s.storage != "local"
    return isinstance(s, A.EventDecl)


def _on_units(cond: A.Expr, var: str) -> bool:
    """Does ``cond`` pick units (``q > 0``): an ``inthreads`` beside roles that is one more?"""
    return any(isinstance(n, A.Name) and n.name == var for n in cond.walk())


def _position(items: list[A.Stmt], s: A.Stmt) -> int:
    return next(i for i, x in enumerate(items) if x is s)


PER_UNIT = (A.MmaFill, A.FragDecl, A.MmaLoad, A.MmaOp, A.MmaStore, A.Apply, A.FragOp)


def _check_common(s: A.Stmt, unit_vars: set[str], roles: list[A.Stmt]) -> None:
    """A statement beside warp roles runs once in the merged program: it may not tell units apart,
    nor declare what each unit has its own of (fragments, local buffers, names a role changes)."""
    if any(isinstance(n, A.Name) and n.name in unit_vars for n in s.walk()):
        raise NotLifted("a statement beside warp roles that uses the unit or thread index", s)
    if any(isinstance(n, PER_UNIT) for n in s.walk()) or (isinstance(s, A.SpannedDecl) and s.storage == "local"):
        raise NotLifted("a statement beside warp roles that each unit runs on its own fragment or buffer", s)
    declared = set()
    if isinstance(s, (A.ScalarDecl, A.SpannedDecl)):
        declared = {d.name for d in s.items}
    elif isinstance(s, A.AssignStmt):
        declared = {a.target.name for a in s.items if isinstance(a.target, A.Name)}
    for r in roles:
        for n in r.walk():
            if isinstance(n, A.Assign) and isinstance(n.target, A.Name) and n.target.name in declared:
                raise NotLifted(f"'{n.target.name}', declared beside warp roles and changed by a role", n)


def _stmts(s: A.Stmt) -> list[A.Stmt]:
    return list(s.stmts) if isinstance(s, A.Block) else [s]


def _text(xs: list[A.Node]) -> str:
    return ", ".join(Printer().expr(x) if isinstance(x, A.Expr) else repr(x) for x in xs)  # type: ignore[arg-type]


def _substitute(node: A.Stmt, var: str, value: Callable[[object], A.Expr], units: int) -> A.Stmt:
    """``node`` with every read of ``var`` the expression ``value`` makes (given its span), and
    its upper bound ``#var`` the level's extent ``units`` (the same in every role)."""

    def sub(x: A.Node) -> A.Expr | None:
        if isinstance(x, A.Name) and x.name == var:
            return A.Paren(value(x.span), span=x.span)
        if isinstance(x, A.UBound) and x.name == var:
            return A.IntLit(units, str(units), span=x.span)
        return None

    return A.rewrite(node, sub)  # type: ignore[return-value]


def _split(body: A.Stmt, role: A.Node) -> tuple[list[A.Stmt], A.Foreach | None, list[A.Stmt]]:
    """A role's statements before its main loop (the loop that waits on or triggers events and
    does other work), the loop, and the statements after it; loops of events only go."""
    stmts = [s for s in _stmts(body) if not (isinstance(s, A.Foreach) and event_only(s))]
    mains = [i for i, s in enumerate(stmts) if isinstance(s, A.Foreach) and _orders(s)]
    if len(mains) > 1:
        raise NotLifted("a warp role with more than one main loop", role)
    for x in stmts:  # waits and triggers inside a thread level of the role: no merged loop orders them
        inner = [n for n in x.walk() if isinstance(n, A.Parallel)]
        if any(_orders(n) for n in inner):
            raise NotLifted("a wait or a trigger of an event inside a thread-level parallel of a warp role", x)
    if not mains:
        return stmts, None, []
    i = mains[0]
    main = stmts[i]
    assert isinstance(main, A.Foreach)
    return stmts[:i], main, stmts[i + 1 :]


def _orders(s: A.Stmt) -> bool:
    return any(isinstance(n, (A.Wait, A.Trigger)) for n in s.walk())


def _ring_access(n: A.Node, rings: set[str]) -> bool:
    return isinstance(n, A.Index) and isinstance(unparen(n.base), A.Name) and unparen(n.base).name in rings  # type: ignore[attr-defined]


def _writes_ring(main: A.Foreach | None, rings: set[str]) -> bool:
    if main is None:
        return False
    for n in main.walk():
        if isinstance(n, A.DmaStmt) and not n.dst_storage and any(_ring_access(x, rings) for x in n.dst.walk()):
            return True
    return False


def _written(block: A.Block, u: A.Index) -> bool:
    """Is ``u`` (a ring access) the destination of a copy?"""
    return any(isinstance(n, A.DmaStmt) and any(x is u for x in n.dst.walk()) for n in block.walk())


def _fixed_values(block: A.Block) -> dict[str, A.Expr]:
    """The names of ``block`` bound once by ``name = expr`` (LANGUAGE.md 4.3: an immutable binding,
    fresh in each iteration of a loop) to a value that reads only such names and others that are
    never assigned (loop indices, parameters): a ring slot ``s = k % 4`` is ``k % 4`` wherever it is
    read in the iteration."""
    values: dict[str, list[A.Expr]] = {}
    changed: set[str] = set()
    for n in block.walk():
        if isinstance(n, A.Assign) and isinstance(n.target, A.Name):
            if n.op == "=":
                values.setdefault(n.target.name, []).append(n.value)
            else:
                changed.add(n.target.name)
        elif isinstance(n, A.ScalarDecl):
            for item in n.items:
                changed.add(item.name)  # (typed and 'mutable' declarations: not followed)
        elif isinstance(n, A.IncDec):
            changed.add(n.target)
    single = {k: v[0] for k, v in values.items() if k not in changed and len({_text([x]) for x in v}) == 1}
    assigned = set(values) | changed

    def fixed(x: A.Expr, seen: frozenset[str]) -> bool:
        return not any(
            isinstance(m, A.Name)
            and m.name in assigned
            and (m.name not in single or m.name in seen or not fixed(single[m.name], seen | {m.name}))
            for m in x.walk()
        )

    return {k: v for k, v in single.items() if fixed(v, frozenset({k}))}


def _expanded(xs: list[A.Expr], defs: dict[str, A.Expr]) -> list[A.Expr]:
    """``xs`` with every name of ``defs`` replaced by its value (recursively)."""

    def sub(x: A.Node) -> A.Expr | None:
        if isinstance(x, A.Name) and x.name in defs:
            return A.Paren(_expanded([copy.deepcopy(defs[x.name])], defs)[0], span=x.span)
        return None

    return [A.rewrite(copy.deepcopy(x), sub) for x in xs]  # type: ignore[misc]


def _shape_of(x: object) -> object:
    """``x`` as a value that compares equal for the same expression tree (spans and parentheses aside)."""
    if isinstance(x, A.Paren):
        return _shape_of(x.expr)
    if isinstance(x, A.Node):
        fields = [f.name for f in dataclasses.fields(x) if f.name != "span"]
        return (type(x).__name__, *(_shape_of(getattr(x, f)) for f in fields))
    if isinstance(x, (list, tuple)):
        return tuple(_shape_of(y) for y in x)
    return x


def _single_buffers(block: A.Block, loop: A.Foreach, names: set[str]) -> None:
    """Every ring ``name[i]`` of the loop, read and written at one index expression and in the
    loop only, as the one buffer ``name`` (in ``block``, a copy of the roles)."""
    inside = {id(n) for n in loop.walk()}
    defs = _fixed_values(block)
    for name in names:
        uses = [n for n in block.walk() if isinstance(n, A.Index) and _ring_access(n, {name})]
        bare = [n for n in block.walk() if isinstance(n, A.Name) and n.name == name]
        if any(id(u) not in inside for u in uses):
            raise NotLifted(f"a ring of buffers '{name}' used outside the pipeline's loop", loop)
        written = [u for u in uses if _written(block, u)]
        spelled = {f"{name}[{_text(u.indices)}]": u for u in uses}
        if len({_shape_of(_expanded(u.indices, defs)) for u in uses}) == 1:
            spelled = {next(iter(spelled)): uses[0]}  # one slot spelled two ways (`s = k % 4; r[s]`, `r[k % 4]`)
        if len(spelled) != 1:
            w = f"{name}[{_text(written[0].indices)}]" if written else next(iter(spelled))
            r = next(s for s in spelled if s != w)
            raise CroqLoweringError(
                f"stage ring '{name}' is read at '{r}' but was written at '{w}'",
                spelled[r].span,
                "each iteration of a pipeline reads the slot its producer wrote in the same iteration",
            )
        if len(bare) != len(uses):
            raise NotLifted(f"a ring of buffers '{name}' used as a whole", loop)
        for u in uses:  # ring[i] -> the buffer
            A.rewrite(block, lambda x, u=u: x.base if x is u else None)  # type: ignore[attr-defined]
