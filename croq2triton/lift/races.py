"""Races in warp-specialised pipelines (LANGUAGE.md 7.10): accesses to a shared buffer by two warp
roles that the roles' events do not order, found on the roles as both lifting paths see them (the
``parallel`` whose body holds the ``inthreads.async`` roles) and reported as warnings.

Both lifting paths (lift/collapse.py, the roles of lift/contraction.py) run a pipeline in its
sequential order: each iteration the writer's copies into a slot, then the reader's uses of it.  A
program whose events do not state that order means something else on the GPU (a reader that sees
the old tile or a half-written one, a writer that overwrites a tile not read yet), so translating it
silently would compute a result the source does not; the warning says so at the racy access.

The rule, from the meaning of events, futures and waits:

* each role (each of its units, where its statements tell them apart) runs its statements in order;
* ``trigger e`` (a slot ``e[i]`` or ``e.at(j)``: slot ``j % S``) completes the next generation of
  that slot; where several roles trigger a slot, a generation completes when each has triggered it
  (the default arrival count is all of them); a slot declared ``= ready`` starts with generation 0
  complete.  ``trigger e after f`` (and a copy bound to the event, ``tma.copy.async<e>``)
  completes it only once the copies of the futures are done;
* ``wait e.at(j)`` returns once generation ``j / S`` of slot ``j % S`` is complete (a monotone
  counter); ``wait e[i]`` / ``wait e`` once the generation after the one the role last waited for
  on that slot is; ``wait f`` once the operation of future ``f`` is done;
* an asynchronous copy writes its destination (an asynchronous MMA reads its operands) from its
  statement until it is done; any other access happens at its statement.

Two accesses of one slot by different roles, one a write, race unless one ends before the other
starts in that order.  Each racy statement gets one warning: a read the writer's copy is meant to
precede (in the pipeline's order) is read before waiting; a write the reader's earlier use is meant
to precede overwrites a slot not released.  The loops are unrolled on concrete counts (a count not
known when translating, as twice the deepest ring and three more iterations); where anything the
ordering depends on is not understood (an event slot, a branch around a wait, an unknown future,
a barrier inside a role, a wait nothing releases, a cycle of waits) nothing is reported: a warning
is always a race of the source.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..errors import Diagnostic
from ..frontend import ast as A
from ..frontend.printer import Printer
from ..sema.consteval import const_int
from .rolepick import comparison, conjuncts, narrowed
from .terms import unparen

MAX_NODES = 20000  # an unrolled pipeline larger than this is not analysed
MAX_AGENTS = 8  # the units of one role told apart at most
SKIP = (A.Empty, A.PragmaStmt, A.EventDecl, A.FragDecl, A.SpannedDecl, A.MmaCommit, A.MmaFill)
BIG = 1 << 30
WHOLE = "whole"  # the part of an access to a whole buffer or slot
_Key = tuple[str, int | None, object]  # buffer, slot of a ring, part


_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


class _GiveUp(Exception):
    """Something the ordering depends on is not understood: no warning."""


@dataclass
class _Access:
    key: _Key
    write: bool
    start: int
    end: int
    role: int
    stmt: A.Stmt
    text: A.Node  # the slot, as written
    at: A.Node  # the access (the slot, a view or an element of it)
    stamp: tuple[int, ...]


@dataclass
class _Future:
    done: int | None  # its operation's completion (None: a placeholder, ``dma.any``)
    key: _Key | None = None  # the slot its copy writes (``f.data``)


@dataclass
class _Agent:
    role: int
    env: dict[str, int | None]
    futures: dict[str, _Future] = field(default_factory=dict)
    waited: dict[tuple[str, int], int] = field(default_factory=dict)  # physical waits per slot so far
    bound: dict[tuple[str, int], list[int]] = field(default_factory=dict)  # copies bound to an event slot
    last: int | None = None  # its last statement's node


def pipeline_races(top: A.Parallel, p: A.Parallel) -> list[Diagnostic]:
    """The warnings for the races between the warp roles of ``p`` (a ``parallel`` in the kernel
    ``top``, whose declarations name the events and shared buffers)."""
    return race_analysis(top, p) or []


def race_analysis(top: A.Parallel, p: A.Parallel) -> list[Diagnostic] | None:
    """:func:`pipeline_races`, None where ``p`` has fewer than two roles or the analysis does not
    understand what orders them (tests/test_race_warnings.py counts those)."""
    roles = [s for s in _flat(p.body) if isinstance(s, A.InThreads) and s.is_async]
    if len(roles) < 2:
        return None
    try:
        return _Races(top, p, roles).run()
    except (_GiveUp, RecursionError):
        return None


class _Races:
    def __init__(self, top: A.Parallel, p: A.Parallel, roles: list[A.InThreads]) -> None:
        self.roles = roles
        self.events: dict[str, tuple[bool, int]] = {}  # name -> (declared ready, slots)
        self.rings: dict[str, int] = {}  # arrays of shared buffers: slots
        self.buffers: set[str] = set()  # single shared buffers
        for n in top.walk():
            if isinstance(n, A.EventDecl):
                for d in n.items:
                    slots = [const_int(x) for x in d.dims]
                    if n.storage == "local" or n.count is not None or len(slots) > 1 or None in slots:
                        raise _GiveUp  # per-thread events, arrival counts, arrays of arrays
                    self.events[d.name] = (d.ready, slots[0] if slots else 1)  # type: ignore[assignment]
            elif isinstance(n, A.SpannedDecl) and n.storage == "shared":
                for d in n.items:
                    if not d.dims:
                        self.buffers.add(d.name)
                    elif len(d.dims) == 1 and (size := const_int(d.dims[0])) is not None:
                        self.rings[d.name] = size
        deepest = max([1, *self.rings.values(), *(s for _, s in self.events.values())])
        self.unknown = 2 * deepest + 3  # the trip count of a loop whose count is not known
        self.units: dict[str, int] = {}  # the indices of ``p`` of constant extents
        for b in p.levels:
            for name, bound in zip(b.names, b.bound, strict=False):
                if (n := const_int(bound)) is not None:
                    self.units[name] = n
        for s in _flat(p.body):
            if not isinstance(s, A.InThreads) and any(isinstance(n, (A.Wait, A.Trigger)) for n in s.walk()):
                raise _GiveUp  # waits or triggers beside the roles
        self.succ: list[list[int]] = []
        self.accesses: list[_Access] = []
        self.triggers: dict[tuple[str, int], dict[int, list[int]]] = {}  # slot -> agent -> releases in order
        self.waits: list[tuple[int, int, str, int, int]] = []  # (agent, node, event, slot, generation)
        self.trigger_of: dict[int, A.Expr] = {}  # a release node -> the event it names, as written
        self.released_by: dict[int, int] = {}  # a copy's completion -> the release it is bound to

    # ------------------------------------------------------------------ the graph
    def node(self) -> int:
        if len(self.succ) >= MAX_NODES:
            raise _GiveUp
        self.succ.append([])
        return len(self.succ) - 1

    def edge(self, a: int, b: int) -> None:
        self.succ[a].append(b)

    def step(self, agent: _Agent) -> int:
        """A statement of ``agent``: a node after its previous one."""
        n = self.node()
        if agent.last is not None:
            self.edge(agent.last, n)
        agent.last = n
        return n

    # ------------------------------------------------------------------ the roles
    def run(self) -> list[Diagnostic]:
        agents: list[_Agent] = []
        for k, r in enumerate(self.roles):
            spans = self.role_units(r.cond)
            used = {n.name for n in r.body.walk() if isinstance(n, A.Name)}
            # the unit indices its statements read, each unit apart (a lane index stays unknown)
            told = [v for v in spans if v in used and spans[v][1] - spans[v][0] <= MAX_AGENTS]
            values = [range(*spans[v]) for v in told]
            if any(len(v) == 0 for v in values):
                continue
            if _product(len(v) for v in values) > MAX_AGENTS:
                raise _GiveUp
            for combo in itertools.product(*values):
                agent = _Agent(k, dict(zip(told, combo, strict=True)))
                agents.append(agent)
                self.stmts(agent, _flat(r.body), ())
        self.resolve(agents)
        return self.report()

    def role_units(self, cond: A.Expr) -> dict[str, tuple[int, int]]:
        """The range of each constant index of the roles' ``parallel`` that ``cond`` picks."""
        spans = {v: (0, n) for v, n in self.units.items()}
        for c in conjuncts(cond):
            cmp = comparison(c)
            value = const_int(cmp[2]) if cmp is not None else None
            if cmp is None or value is None or cmp[0] not in spans:
                raise _GiveUp
            cut = narrowed(*spans[cmp[0]], cmp[1], value)
            if cut is None:
                raise _GiveUp
            spans[cmp[0]] = cut
        return spans

    def value(self, agent: _Agent, e: A.Expr) -> int | None:
        return const_int(e, lambda n: agent.env.get(n.name))

    def stmts(self, agent: _Agent, stmts: list[A.Stmt], stamp: tuple[int, ...]) -> None:
        looped = False
        for s in stmts:
            here = (*stamp, BIG if looped else -1)
            if isinstance(s, A.Foreach):
                self.foreach(agent, s, stamp)
                looped = True
            else:
                self.stmt(agent, s, here)

    def foreach(self, agent: _Agent, s: A.Foreach, stamp: tuple[int, ...]) -> None:
        names: list[str] = []
        counts: list[int] = []
        for item in s.items:
            shape = unparen(item.shape) if isinstance(item, A.Within) else None
            if not isinstance(shape, A.MdspanLit) or len(item.names) != len(shape.items):  # type: ignore[union-attr]
                raise _GiveUp
            for name, bound in zip(item.names, shape.items, strict=True):  # type: ignore[union-attr]
                n = self.value(agent, bound)
                names.append(name)
                counts.append(self.unknown if n is None else n)
        body = _flat(s.body)
        for i, combo in enumerate(itertools.product(*(range(n) for n in counts))):
            agent.env.update(zip(names, combo, strict=True))
            self.stmts(agent, body, (*stamp, i))
        for name in names:
            agent.env.pop(name, None)

    def stmt(self, agent: _Agent, s: A.Stmt, stamp: tuple[int, ...]) -> None:
        if isinstance(s, A.Block):
            self.stmts(agent, s.stmts, stamp[:-1])
        elif isinstance(s, SKIP):
            return
        elif isinstance(s, (A.InThreads, A.Parallel)) and not getattr(s, "is_async", False):
            self.stmts(agent, _flat(s.body), stamp[:-1])
        elif isinstance(s, A.ScalarDecl):
            for d in s.items:
                agent.env[d.name] = self.value(agent, d.init) if d.init is not None else None
        elif isinstance(s, A.AssignStmt) and all(isinstance(unparen(a.target), A.Name) for a in s.items):
            n = self.step(agent)
            for a in s.items:
                self.reads(agent, a.value, n, n, s, stamp)
                name = unparen(a.target).name  # type: ignore[attr-defined]
                value = self.value(agent, a.value)
                if a.op != "=":  # a counter: ``order += 1``
                    old = agent.env.get(name)
                    value = None if old is None or value is None or a.op not in "+-*" else _ARITH[a.op](old, value)
                agent.env[name] = value
                source = unparen(a.value)
                if isinstance(source, A.Name) and source.name in agent.futures and a.op == "=":
                    agent.futures[name] = agent.futures[source.name]  # a future renamed
                else:
                    agent.futures.pop(name, None)
        elif isinstance(s, A.If):
            self.if_stmt(agent, s, stamp)
        elif isinstance(s, A.Wait):
            self.wait(agent, s)
        elif isinstance(s, A.Trigger):
            self.trigger(agent, s)
        elif isinstance(s, A.DmaStmt):
            self.dma(agent, s, stamp)
        elif isinstance(s, A.DmaAny):
            agent.futures[s.result] = _Future(None)
        elif isinstance(s, A.Swap):
            self.swap(agent, s)
        elif isinstance(s, A.MmaOp):
            n = self.step(agent)
            end = n
            if s.variant == "async" and s.result:
                end = self.node()
                self.edge(n, end)
                agent.futures[s.result] = _Future(end)
            for x in (s.a, s.b, *s.extra):
                self.reads(agent, x, n, end, s, stamp)
        elif isinstance(s, A.MmaLoad):
            n = self.step(agent)
            self.reads(agent, s.src, n, n, s, stamp)
            if s.result:
                agent.futures.pop(s.result, None)
        elif isinstance(s, A.MmaStore):
            n = self.step(agent)
            self.writes(agent, s.dst, n, n, s, stamp)
        elif isinstance(s, (A.Sync, A.While, A.Return)) or any(
            isinstance(x, (A.Wait, A.Trigger, A.Sync, A.DmaStmt, A.Swap, A.InThreads)) for x in s.walk()
        ):
            raise _GiveUp  # a barrier inside a role, a loop of unknown trips, events in other statements
        else:  # element accesses: the shared names it reads, the elements it assigns
            n = self.step(agent)
            for x in s.walk():  # counters stepped: ``order++;``
                if isinstance(x, A.IncDec):
                    self.bump(agent, x)
            for x in s.walk():
                if isinstance(x, A.Assign):
                    self.writes(agent, x.target, n, n, s, stamp)
                    self.reads(agent, x.value, n, n, s, stamp)
                    if x.op != "=":
                        self.reads(agent, x.target, n, n, s, stamp)
            if not any(isinstance(x, A.Assign) for x in s.walk()):
                self.reads(agent, s, n, n, s, stamp)

    def if_stmt(self, agent: _Agent, s: A.If, stamp: tuple[int, ...]) -> None:
        cond = _truth(s.cond, lambda e: self.value(agent, e))
        branches = [b for b in (s.then, s.other) if b is not None]
        if cond is not None:
            chosen = s.then if cond else s.other
            if chosen is not None:
                self.stmts(agent, _flat(chosen), stamp[:-1])
            return
        if any(isinstance(x, (A.Wait, A.Trigger, A.Swap, A.DmaAny)) for b in branches for x in b.walk()):
            raise _GiveUp  # ordering under a condition not known when translating
        n = self.step(agent)
        for b in branches:  # the names either may assign: not known after it
            for x in b.walk():
                if isinstance(x, A.Assign) and isinstance(unparen(x.target), A.Name):
                    agent.env[unparen(x.target).name] = None  # type: ignore[attr-defined]
                elif isinstance(x, A.IncDec):
                    agent.env[x.target] = None
                elif isinstance(x, A.ScalarDecl):
                    agent.env.update({d.name: None for d in x.items})
        for b in branches:  # either may run: its accesses, at the branch
            for x in b.walk():
                if isinstance(x, A.Assign):
                    self.writes(agent, x.target, n, n, s, stamp)
                    self.reads(agent, x.value, n, n, s, stamp)
                elif isinstance(x, A.DmaStmt) and not x.is_async:
                    self.writes(agent, x.dst, n, n, x, stamp)
                    self.reads(agent, x.src, n, n, x, stamp)
                elif isinstance(x, A.DmaStmt):
                    raise _GiveUp
                elif isinstance(x, A.MmaOp):
                    for y in (x.a, x.b):
                        self.reads(agent, y, n, n, x, stamp)
                elif isinstance(x, A.MmaLoad):
                    self.reads(agent, x.src, n, n, x, stamp)
                elif isinstance(x, A.MmaStore):
                    self.writes(agent, x.dst, n, n, x, stamp)

    # ------------------------------------------------------------------ events and futures
    def slot(self, agent: _Agent, e: A.Expr) -> tuple[str, int, int | None]:
        """The event ``e`` names: (event, slot, the generation a wait on it waits for, where the
        ring index states it: ``e.at(j)``)."""
        e = unparen(e)
        if isinstance(e, A.Name) and e.name in self.events:
            return e.name, 0, None
        base = unparen(e.base) if isinstance(e, (A.Index, A.At)) else None
        if not isinstance(base, A.Name) or base.name not in self.events or len(e.indices) != 1:  # type: ignore[union-attr]
            raise _GiveUp
        slots = self.events[base.name][1]
        index = unparen(e.indices[0])  # type: ignore[union-attr]
        i = self.bump(agent, index) if isinstance(index, A.IncDec) else self.value(agent, index)
        if i is None or i < 0:
            raise _GiveUp
        if isinstance(e, A.At):
            return base.name, i % slots, i // slots
        if i >= slots:
            raise _GiveUp
        return base.name, i, None

    def bump(self, agent: _Agent, x: A.IncDec) -> int | None:
        """The value of ``order++`` (``++order``, ``--``), its counter stepped."""
        old = agent.env.get(x.target)
        new = None if old is None else old + (1 if x.op == "++" else -1)
        agent.env[x.target] = new
        return new if x.prefix else old

    def wait(self, agent: _Agent, s: A.Wait) -> None:
        n = self.step(agent)
        for x in s.items:
            x = unparen(x)
            if isinstance(x, A.Name) and x.name in agent.futures:
                done = agent.futures[x.name].done
                if done is not None:
                    self.edge(done, n)
                continue
            event, slot, gen = self.slot(agent, x)
            if gen is None:  # physical: the generation after the one this role waited for last
                gen = agent.waited.get((event, slot), 0)
                agent.waited[(event, slot)] = gen + 1
            self.waits.append((id(agent), n, event, slot, gen))

    def trigger(self, agent: _Agent, s: A.Trigger) -> None:
        if s.cluster:
            raise _GiveUp
        n = self.step(agent)
        for x in s.items:
            event, slot, _ = self.slot(agent, x)
            release = self.node()
            self.edge(n, release)
            self.trigger_of[release] = x
            for f in s.after:
                name = unparen(f)
                fut = agent.futures.get(name.name) if isinstance(name, A.Name) else None
                if fut is None or fut.done is None:
                    raise _GiveUp
                self.edge(fut.done, release)
                self.released_by.setdefault(fut.done, release)
            for done in agent.bound.pop((event, slot), []):  # copies bound to the event (tma.copy.async<e>)
                self.edge(done, release)
                self.released_by.setdefault(done, release)
            self.triggers.setdefault((event, slot), {}).setdefault(id(agent), []).append(release)

    def dma(self, agent: _Agent, s: A.DmaStmt, stamp: tuple[int, ...]) -> None:
        n = self.step(agent)
        if s.after is not None:
            fut = agent.futures.get(s.after)
            if fut is None:
                raise _GiveUp
            if fut.done is not None:
                self.edge(fut.done, n)
        end = n
        if s.is_async:
            end = self.node()
            self.edge(n, end)
        self.reads(agent, s.src, n, end, s, stamp)
        dst = unparen(s.dst)
        fresh = isinstance(dst, A.Name) and dst.name in ("shared", "local", "global")
        key = None if fresh else self.writes(agent, s.dst, n, end, s, stamp)
        if s.event is not None:
            event, slot, _ = self.slot(agent, s.event)
            agent.bound.setdefault((event, slot), []).append(end)
        if s.result:
            agent.futures[s.result] = _Future(end if s.is_async else None, key)

    def swap(self, agent: _Agent, s: A.Swap) -> None:
        if not all(name in agent.futures for name in s.names):
            raise _GiveUp
        held = [agent.futures[name] for name in s.names]
        if s.kind == "swap" and len(held) == 2:
            held = held[::-1]
        elif s.kind == "rotate":
            held = held[1:] + held[:1]
        else:
            raise _GiveUp
        agent.futures.update(zip(s.names, held, strict=True))

    def resolve(self, agents: list[_Agent]) -> None:
        """Each wait after the triggers that complete the generation it waits for."""
        for _, node, event, slot, gen in self.waits:
            ready = int(self.events[event][0])
            if gen < ready:
                continue
            by_agent = self.triggers.get((event, slot))
            if not by_agent:
                raise _GiveUp  # a wait nothing releases
            for releases in by_agent.values():
                if gen - ready >= len(releases):
                    raise _GiveUp
                self.edge(releases[gen - ready], node)
        for agent in agents:
            if any(agent.bound.values()):
                raise _GiveUp  # a copy bound to an event no trigger of the role completes

    # ------------------------------------------------------------------ accesses
    def refs(self, agent: _Agent, e: A.Node) -> list[tuple[_Key, A.Node, A.Node]]:
        """The slots of shared buffers ``e`` names, each with the part of it named (views and
        elements, :data:`WHOLE` where none), the expression naming the slot and the access."""
        out: list[tuple[_Key, A.Node, A.Node]] = []
        seen: set[int] = set()
        for x in e.walk():
            if id(x) in seen:
                continue
            layers: list[A.Node] = []
            base: A.Node = x
            while isinstance(base, (A.View, A.At, A.Paren)):
                seen.add(id(base))
                if not isinstance(base, A.Paren):
                    layers.append(base)
                base = base.expr if isinstance(base, A.Paren) else base.base  # type: ignore[attr-defined]
            slot = self.slot_of(agent, base)
            if slot is None:
                continue
            seen.update(id(n) for n in base.walk())
            out.append(((*slot, self.part(agent, layers[::-1])), base, x))
        return out

    def slot_of(self, agent: _Agent, x: A.Node) -> tuple[str, int | None] | None:
        """The buffer (and slot of a ring) ``x`` names: ``buf``, ``ring[i]``, ``f.data``."""
        if isinstance(x, A.Index) and isinstance(unparen(x.base), A.Name):
            name = unparen(x.base).name  # type: ignore[attr-defined]
            if name in self.rings:
                i = self.value(agent, x.indices[0]) if len(x.indices) == 1 else None
                return (name, i % self.rings[name]) if i is not None else None
        elif isinstance(x, A.Member) and x.member == "data" and isinstance(unparen(x.base), A.Name):
            fut = agent.futures.get(unparen(x.base).name)  # type: ignore[attr-defined]
            return fut.key[:2] if fut is not None and fut.key is not None else None
        elif isinstance(x, A.Name) and x.name in self.buffers:
            return x.name, None
        return None

    def part(self, agent: _Agent, layers: list[A.Node]) -> object:
        """The part of a slot views and element indices name: :data:`WHOLE` where none, their values
        where all are known, else a part of its own (it meets only the whole slot)."""
        if not layers:
            return WHOLE
        sig: list[object] = []
        for layer in layers:
            if isinstance(layer, A.At):
                exprs = layer.indices
                sig.append("at")
            else:
                sig.append("view")
                exprs = []
                for op in layer.ops:  # type: ignore[attr-defined]
                    sig.append(op.kind)
                    exprs += [*op.args, *(op.strides or []), *(op.step or []), *(op.at or [])]
                    sig.append(len(exprs))
            for x in exprs:
                v = self.value(agent, x)
                if v is None:
                    return object()
                sig.append(v)
        return tuple(sig)

    def reads(self, agent: _Agent, e: A.Node, start: int, end: int, s: A.Stmt, stamp: tuple[int, ...]) -> None:
        for key, text, at in self.refs(agent, e):
            self.accesses.append(_Access(key, False, start, end, agent.role, s, text, at, stamp))

    def writes(self, agent: _Agent, e: A.Expr, start: int, end: int, s: A.Stmt, stamp: tuple[int, ...]) -> _Key | None:
        """The slot ``e`` writes (its root; the indices of an element are reads)."""
        refs = self.refs(agent, e)
        if not refs:
            return None
        key, text, at = refs[0]
        self.accesses.append(_Access(key, True, start, end, agent.role, s, text, at, stamp))
        for k, t, a in refs[1:]:
            self.accesses.append(_Access(k, False, start, end, agent.role, s, t, a, stamp))
        return key

    # ------------------------------------------------------------------ the races
    def report(self) -> list[Diagnostic]:
        reach = self.reachable()
        by_slot: dict[tuple[str, int | None], list[_Access]] = {}
        for a in self.accesses:
            by_slot.setdefault(a.key[:2], []).append(a)
        found: dict[tuple[int, str], tuple[_Access, _Access]] = {}
        for accs in by_slot.values():
            for x, y in itertools.combinations(accs, 2):
                if x.role == y.role or not (x.write or y.write):
                    continue
                if WHOLE not in (x.key[2], y.key[2]) and x.key[2] != y.key[2]:
                    continue  # two parts of a slot, other or not known to be one
                if reach[x.end] >> y.start & 1 or reach[y.end] >> x.start & 1:
                    continue
                w, r = (x, y) if x.write else (y, x)
                if r.write:  # two writes: at the later in the pipeline's order
                    w, r = sorted((x, y), key=lambda a: (a.stamp, a.role))
                    found.setdefault((id(r.stmt), "both"), (w, r))
                elif w.stamp <= r.stamp:  # the read is meant to see this write (the writer runs first)
                    found.setdefault((id(r.stmt), "early"), (w, r))
                else:  # the write is meant to follow the read
                    found.setdefault((id(w.stmt), "ahead"), (w, r))
        out = []
        for (_, kind), (w, r) in found.items():
            out.append(self.diagnostic(kind, w, r))
        out.sort(key=lambda d: (d.span.line, d.span.col) if d.span is not None else (0, 0))
        return out

    def reachable(self) -> list[int]:
        """For each node, the nodes after it (itself too) as bits; a cycle of waits: give up."""
        count = len(self.succ)
        indegree = [0] * count
        for succ in self.succ:
            for b in succ:
                indegree[b] += 1
        order = [n for n in range(count) if indegree[n] == 0]
        for n in order:
            for b in self.succ[n]:
                indegree[b] -= 1
                if indegree[b] == 0:
                    order.append(b)
        if len(order) != count:
            raise _GiveUp
        reach = [0] * count
        for n in reversed(order):
            bits = 1 << n
            for b in self.succ[n]:
                bits |= reach[b]
            reach[n] = bits
        return reach

    def diagnostic(self, kind: str, w: _Access, r: _Access) -> Diagnostic:
        slot = _text(w.text if kind == "ahead" else r.text)
        order = "croq2triton runs it in the pipeline's order"
        if kind == "both":
            return Diagnostic(
                "warning",
                f"two warp roles write slot '{slot}' (lines {_line(w.stmt)} and {_line(r.stmt)}) with no event "
                f"ordering them; {order}",
                r.at.span or r.stmt.span,
                "order the writes with an event: a trigger after the first, a wait before the second",
            )
        if kind == "early":
            release = self.released_by.get(w.end)
            if release is None:  # a copy done at its statement: the producer's next trigger
                release = next((b for b in self.after_in_role(w.start) if b in self.trigger_of), None)
            if release is not None:
                event = _text(self.trigger_of[release])
                return Diagnostic(
                    "warning",
                    f"the consumer reads slot '{slot}' before waiting for '{event}', which the copy into it "
                    f"(line {_line(w.stmt)}) triggers; {order} (the copy first)",
                    r.at.span or r.stmt.span,
                    f"wait for '{event}' before the first read of the slot",
                )
            return Diagnostic(
                "warning",
                f"the consumer reads slot '{slot}' with no event ordering it after the copy into it "
                f"(line {_line(w.stmt)}); {order} (the copy first)",
                r.at.span or r.stmt.span,
                "trigger an event after the copy and wait for it before the read",
            )
        return Diagnostic(
            "warning",
            f"the producer writes slot '{slot}' before the consumer has released it (its read at line "
            f"{_line(r.stmt)} is not ordered before this write); {order} (the read first)",
            w.at.span or w.stmt.span,
            "before the copy, wait on an event the consumer triggers after its last read of the slot (a ring "
            "of 'shared event empty[S] = ready;', 'wait empty.at(k);' before the copy, 'trigger empty.at(k);' "
            "after the reads)",
        )

    def after_in_role(self, n: int) -> list[int]:
        """The nodes after ``n`` a trigger statement reaches first (its releases), in order."""
        out: list[int] = []
        todo = [n]
        seen = {n}
        while todo:  # breadth first along the role's own statements
            m = todo.pop(0)
            for b in self.succ[m]:
                if b not in seen:
                    seen.add(b)
                    out.append(b)
                    todo.append(b)
        return out


def located(d: Diagnostic) -> tuple[object, ...]:
    """What tells two diagnostics apart (spans never compare: :class:`~croq2triton.errors.Span`)."""
    where = (d.span.file, d.span.line, d.span.col) if d.span is not None else None
    return d.severity, d.message, where, d.hint


def _flat(s: A.Stmt) -> list[A.Stmt]:
    return [x for y in s.stmts for x in _flat(y)] if isinstance(s, A.Block) else [s]


def _truth(e: A.Expr, value: Any) -> bool | None:
    """The value of a comparison of integers known here (None: not known)."""
    e = unparen(e)
    if isinstance(e, A.Binary) and e.op in ("&&", "||"):
        a, b = _truth(e.lhs, value), _truth(e.rhs, value)
        if e.op == "&&":
            return False if a is False or b is False else (None if a is None or b is None else True)
        return True if a is True or b is True else (None if a is None or b is None else False)
    if isinstance(e, A.Binary) and e.op in ("<", "<=", ">", ">=", "==", "!="):
        a, b = value(e.lhs), value(e.rhs)
        if a is None or b is None:
            return None
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[e.op]
    return None


def _product(xs: Any) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _text(e: A.Node) -> str:
    return Printer().expr(e) if isinstance(e, A.Expr) else repr(e)  # type: ignore[arg-type]


def _line(s: A.Node) -> int:
    return s.span.line if s.span is not None else 0
