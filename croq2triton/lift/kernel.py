"""Lifting one top-level ``parallel`` into a tile-IR kernel: the elementwise family.

A program is one block: block-level indices are program ids; the thread level of the source
becomes lane axes, so one lane per thread turns into one element of a block-level tile
(``parallel t by 1024 : thread`` is ``t = tl.arange(0, 1024)``).  Element reads and writes of
tensors become masked loads and stores; a condition on lanes (``if``, a thread level that is not
a power of two) joins the masks; scalar declarations are lets.

The mixins of this class lift the rest (copies and buffers, loops, MMAs, warp roles and events,
scratch memory, atomics); a form none of them covers raises :class:`NotLifted`, which the kernel
dispatch (emit/kernels.py) reports as a located diagnostic.  Nothing here writes Triton text: the
result is a :class:`~croq2triton.tir.nodes.Kernel`.
"""

from __future__ import annotations

import dataclasses
import difflib
import keyword
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import CroqSemanticError, Diagnostic, Span
from ..frontend import ast as A
from ..frontend import suggest
from ..frontend.describe import describe
from ..options import Options
from ..sema.consteval import const_int
from ..sema.levels import TRITON_MAX_ELEMENTS, UNIT_THREADS, chain_levels, chains
from ..sema.types import SUB_BYTE, TYPES
from ..sema.writes import written_tensors
from ..tir import expr as E
from ..tir import host as H
from ..tir import nodes as N
from .arith import ARITH_OPS, Arith, Value
from .buffers import BufferArray, Buffers, BufferView, Ring, known_elements, pow2, view_shape
from .bufferviews import BufferViews
from .calls import Calls, call_form, call_hint
from .checks import Checked
from .collapse import collapse, floating, has_roles, units_nested
from .copies import Copies
from .elements import Elements
from .events import Events
from .exits import loop_exits
from .futures import Futures
from .hazards import fence_hazards
from .helpers import DeviceCalls
from .host import HostScope, ir_type
from .lanecopies import LaneCopies
from .laneroles import check_lane_roles, has_lane_roles
from .loops import Loops
from .mma import Mmas
from .notlifted import NotInRegisters, NotLifted, Unlowerable, Unordered
from .parts import Parts
from .placement import OwnLanes, is_unit_scope, nested_lane_axes, scratch_buffers, varying_names
from .races import located, pipeline_races
from .scratch import ScratchBuffers
from .terms import Bounded, IndexTuple, Region, WithName, unparen
from .terms import const_int as ir_const_int
from .threadfrags import thread_frags
from .tma import TmaCopies
from .units import Units
from .unroll import NotUnrolled, unroll_units

MAX_GRID_AXES = 3


@dataclass
class Lifted:
    kernel: N.Kernel
    warnings: list[Diagnostic]
    checks: list[H.Assert]  # what the launcher checks before the launch (lift/checks.py)


class Lifter(
    Checked,
    Mmas,
    Units,
    Events,
    Loops,
    Futures,
    TmaCopies,
    LaneCopies,
    Copies,
    Parts,
    Elements,
    Calls,
    DeviceCalls,
    ScratchBuffers,
    BufferViews,
    Buffers,
    Arith,
):
    def __init__(self, top: A.Parallel, name: str, host: HostScope, src_name: str, options: Options) -> None:
        self.top = top
        self.options = options  # what f32 products mean (croq2triton/options.py)
        self.name = name
        self.host = host
        self.triggered: set[str] = set()  # the global events triggered so far (lift/events.py)
        self.early_waits: dict[str, int] = {}  # waits on global events earlier launches released
        self.src_name = src_name
        self.args: dict[str, N.Arg] = {}
        self.scopes: list[dict[str, Any]] = [{}]
        self.body: list[N.Stmt] = []
        self.root = self.body  # the kernel's own body (loops swap self.body for theirs)
        self.coordinates: list[tuple[E.Expr, E.Var]] = []  # block coordinates, bound at the top
        self.pred: list[E.Expr] = []  # conditions of the enclosing ifs
        self.padding: list[E.Expr] = []  # lanes that exist only to make a level a power of two
        self.lane_counts: dict[str, E.Expr] = {}  # a thread level's lanes fixed at launch: its count
        self.taken: set[str] = set()  # every name the user wrote, and Python's own
        self.bound: set[str] = set()  # names bound in the kernel so far
        self.lets: list[tuple[E.Expr, E.Var]] = []  # named offsets and masks, reused while in scope
        self.threads = 1
        self.line = top.span.line if top.span else 0
        self.level_of: dict[int, str] = {}  # id(PBy) -> its level (LANGUAGE.md 7.3), set by lift()
        self.warnings: list[Diagnostic] = []
        self.lane_extents: dict[str, int] = {}
        self.lane_axis: dict[str, int] = {}  # lane variable -> its axis in the thread level's tile
        self.grid_of: dict[str, E.Expr] = {}  # program id -> the grid extent along it (host)
        self.grid_hosts: list[E.Expr] = []  # the grid's extents (host), by axis
        self.lanes: tuple[int, tuple[int, ...]] | None = None  # the lane scope: its index in scopes, its shape
        self.lane_first = 0  # the first lane axis a thread level nested in the lanes takes
        self.lane_threads = 1  # threads of a block the enclosing thread levels make
        self.unit_threads: dict[int, int] = {}  # id(PBy) of a group / group-4 level -> threads per unit
        self.written = written_tensors([top], set(host.tensors))  # the tensors this kernel stores into
        self.units: dict[str, int] = {}  # unit symbols (lift/units.py) -> their extents
        self.unit_depth = 0  # how many parallels of several units (lift/units.py) the statements lifted are inside
        self.derived_bounds: dict[str, E.Expr] = {}  # lifted names of tile indices derived by % or / (derived_index)
        self.pinned: dict[str, int] = {}  # unit symbols an ``inthreads (g == u)`` picks one unit of
        self.stated_pipelines: dict[int, N.Pipeline] = {}  # id(Foreach) -> the pipeline collapsed roles state
        self.collapsed: list[A.Node] = []  # the roles' collapsed programs (their own names renamed apart)
        self.lane_summed: set[str] = set()  # buffers that lanes add to (lift/lanesums.py)
        self.apply_scopes: list[int] = []  # the scopes of the lanes of the apply loops being lifted
        self.program_ids: tuple[E.Var, ...] = ()
        self.loop_depth = 0  # loops of the program around the statement being lifted
        self.scratch_names: set[str] = set()  # buffers that live in scratch memory (lift/placement.py)
        self.also_scratch: set[str] = set()  # buffers a first lifting found no register form for
        self.own_lanes: dict[str, list[OwnLanes]] = {}  # local buffers deeper threads write (lift/placement.py)
        self._varying: set[str] | None = None  # names whose values may differ between threads
        self.accumulator_types: dict[Any, str | None] = {}  # lift/mma.py: the type each accumulator declares
        self.exact: dict[str, tuple[int, int]] = {}  # lanes, counters, program ids: the values each takes
        self.branches = 0  # block-level branches around the statement being lifted
        self.launch_checks: list[H.Assert] = []  # the copies' extents only the launch knows
        self.helpers: dict[str, N.Helper] = {}  # the @triton.jit helpers its calls need (lift/helpers.py)

    # ================================================================ driver
    def lift(self) -> Lifted:
        top = self.top
        levels = self.level_of = self.levels()
        if any(b.cooperative for b in top.levels):
            raise NotLifted("a cooperative grid (its blocks synchronise with each other)", top)
        block = [b for b in top.levels if levels[id(b)] == "block"]
        lanes = [b for b in top.levels if levels[id(b)] == "thread"]
        if len(block) + len(lanes) != len(top.levels) or top.levels[: len(block)] != block:
            raise NotLifted("a parallel whose levels are not block then thread", top)
        self.reserve_user_names()
        placed = scratch_buffers(top, levels, const_int, set(self.unit_threads))
        self.scratch_names = placed.scratch | self.also_scratch
        self.own_lanes = placed.own_lanes
        # only thread levels: one block (LANGUAGE.md 7.3, the default mapping of one level)
        grid, pids = self.grid(block) if block else ((E.Const(1),), ())
        self.program_ids = pids
        if lanes:
            self.lane_scope(lanes, [top.body])
        else:
            self.stmts([top.body])
        self.drop_unshaped()
        args = [a for a in self.args.values() if not isinstance(a, N.Constexpr)]
        args += [a for a in self.args.values() if isinstance(a, N.Constexpr)]  # passed by keyword
        warps = max(1, min(8, pow2(-(-self.threads // 32))))
        doc = f"The block-level parallel at {self.src_name}:{self.line}: one program per block, one lane per thread."
        body = N.without_dead_lets(self.body)  # lane coordinates of element maps nothing reads, ...
        kernel = N.Kernel(
            self.name,
            grid,
            pids,
            args,
            body,
            num_warps=warps,
            doc=doc,
            line=self.line,
            helpers=tuple(self.helpers.values()),
        )
        fence_hazards(kernel)
        return Lifted(kernel, self.warnings, self.launch_checks)

    def levels(self) -> dict[int, str]:
        out: dict[int, str] = {}
        # the levels of warp roles' parallels: collapsed (lift/collapse.py), their threads unused
        roles = {id(b) for p in self.top.walk() if isinstance(p, A.Parallel) and has_roles(p.body) for b in p.levels}
        for chain in chains(self.top):
            kinds = chain_levels(chain)
            for b, lvl in zip(chain, kinds, strict=True):
                if lvl in UNIT_THREADS:
                    # a warp or warpgroup with a thread level inside: a lane axis of its own, the
                    # threads of each unit those of the levels inside; without one, one lane per
                    # unit (its threads all run the unit's code, LANGUAGE.md 7.3; the lifted code
                    # has no atomics)
                    if "thread" not in kinds or id(b) in roles:
                        self.unit_threads[id(b)] = UNIT_THREADS[lvl]
                    lvl = "thread"
                elif lvl not in ("block", "thread"):
                    raise NotLifted(f"a ': {lvl}' level", b)
                out[id(b)] = lvl
        return out

    def reserve_user_names(self) -> None:
        for n in self.top.walk():
            if isinstance(n, A.Name):
                self.taken.add(n.name)
            elif isinstance(n, A.PBy):
                self.taken.update(n.names)
            elif isinstance(n, A.Declarator):
                self.taken.add(n.name)
        self.taken.update({"tl", "triton", "range", "min", "max"})

    def fresh(self, base: str) -> str:
        """A generated name: never one the user wrote, never one bound already."""
        name, k = base, 2
        while name in self.taken or name in self.bound:
            name, k = f"{base}_{k}", k + 1
        self.bound.add(name)
        return name

    def claim(self, user: str) -> str:
        """The kernel variable of the user's name ``user``: the name itself the first time."""
        if user in self.bound or keyword.iskeyword(user) or keyword.issoftkeyword(user):  # ``as``: Python's own
            name, k = f"{user}_{2}", 3
            while name in self.taken or name in self.bound:
                name, k = f"{user}_{k}", k + 1
        else:
            name = user
        self.bound.add(name)
        return name

    def emit(self, s: N.Stmt, node: A.Node | None) -> None:
        if node is not None and node.span is not None:
            s.line = node.span.line
        self.body.append(s)

    # ================================================================ grid and lanes
    def grid(self, block: list[A.PBy]) -> tuple[tuple[E.Expr, ...], tuple[E.Var, ...]]:
        pairs = self.level_vars(block)
        if len(pairs) > MAX_GRID_AXES:
            raise NotLifted("a grid of more than three axes", block[0])
        grid, pids = [], []
        for axis, (var, bound_node) in enumerate(pairs):
            host = self.host_expr(bound_node)
            lit = self.fixed_bound(bound_node)
            pid = E.Var(self.claim(var) if var else self.fresh("pid"), lo=0, hi=lit - 1 if lit is not None else None)
            bound = E.Const(lit) if lit is not None else E.Call("num_programs", (E.Const(axis),), "i32")
            if var:
                self.scopes[-1][var] = Bounded(pid, bound)
            self.grid_of[pid.name] = host
            if lit is not None:
                self.exact[pid.name] = (0, lit - 1)
            self.grid_hosts.append(host)
            grid.append(host)
            pids.append(pid)
        self.scopes[-1].update(level_tuples(block))
        return tuple(grid), tuple(pids)

    def fixed_bound(self, bound: A.Expr) -> int | None:
        """A level's bound known when translating: a literal, or what the launcher's constants fix
        (``M / MMA_M / 4`` with ``int MMA_M = 16``); None where it is known only at launch."""
        lit = const_int(bound)
        if lit is None and isinstance(folded := E.fold(self.host_expr(bound)), E.Const):
            return int(folded.value) if isinstance(folded.value, int) else None
        return lit

    def level_vars(self, levels: list[A.PBy]) -> list[tuple[str | None, A.Expr]]:
        out: list[tuple[str | None, A.Expr]] = []
        for b in levels:
            names: list[str | None] = list(b.vars) if b.vars is not None else [b.name]
            if len(names) != len(b.bound):
                raise NotLifted("parallel variables that do not match their bounds", b)
            out.extend(zip(names, b.bound, strict=True))
        return out

    def lane_scope(self, levels: list[A.PBy], body: list[A.Stmt]) -> None:
        if is_unit_scope(levels, body, self.unit_threads):
            self.unit_scope(levels, body)  # units that each run MMAs on their own tiles (lift/units.py)
            return
        pairs: list[tuple[str | None, int | E.Expr, A.Node]] = []
        threads = self.lane_threads
        for var, bound_node in self.level_vars(levels):
            count = self.int_expr(bound_node)  # a constant, or a count known at launch
            n = count.value if isinstance(count, E.Const) else None
            if n is not None and n < 1:
                raise NotLifted("a thread level of no threads", bound_node)
            pairs.append((var, n if n is not None else count, bound_node))
            threads *= n or 4  # a count known only at launch: num_warps as for four (it only tunes)
        threads *= max((self.unit_threads.get(id(b), 1) for b in levels), default=1)
        lanes = pow2(self.lane_threads) * max((self.unit_threads.get(id(b), 1) for b in levels), default=1)
        for _, n, _ in pairs:
            lanes *= pow2(n) if isinstance(n, int) else 1  # a count known at launch: checked there
        if lanes > TRITON_MAX_ELEMENTS:
            raise NotLifted(
                f"a block of {threads} threads: its threads are the lanes of tensors of {lanes} elements, and a"
                f" Triton tensor holds at most {TRITON_MAX_ELEMENTS}",
                levels[0],
            )
        self.threads = max(self.threads, threads)
        saved, self.lane_threads = self.lane_threads, threads
        try:
            inner = nested_lane_axes(body, self.level_of)
            self.lanes_over(pairs, body, levels[0], inner=inner, tuples=level_tuples(levels))
        finally:
            self.lane_threads = saved

    def lanes_over(
        self,
        pairs: list[tuple[str | None, int | E.Expr, A.Node]],
        body: list[A.Stmt],
        node: A.Node,
        inner: int = 0,
        tuples: dict[str, IndexTuple] | None = None,
    ) -> None:
        """``body`` with one lane axis per (name, extent): a thread level's threads, or the
        elements of a fragment under ``apply``.  Lanes nest in lanes: the axes of the levels inside
        (``inner`` of them) are made when the outermost lanes of more than one element are, so
        every value of the enclosing lanes keeps its shape inside (a warp's value is ``[W, 1]``
        beside its threads' ``[W, 32]``); lanes of one element each (a unit's ``parallel by 1``)
        are the block's, and the levels inside them start afresh."""
        outer = self.lanes
        if outer is not None and any(n != 1 for n in outer[1]):
            first, rank = self.lane_first, len(outer[1])
            if first + len(pairs) > rank:
                raise NotLifted("lanes nested deeper than the enclosing thread levels allow", node)
        else:
            first, rank = 0, len(pairs) + (inner if any(n != 1 for _, n, _ in pairs) else 0)
        self.scopes.append({})
        saved_pad, saved_lets, saved_lanes, saved_first = (
            list(self.padding),
            list(self.lets),
            self.lanes,
            self.lane_first,
        )
        self.lanes = (len(self.scopes) - 1, outer[1] if first else ())
        self.lane_first = first + len(pairs)
        fixed = known_elements(n if isinstance(n, int) else None for _, n, _ in pairs)
        for k, (var, n, bound_node) in enumerate(pairs):
            axis = first + k
            bound = E.Const(n) if isinstance(n, int) else n
            size: E.Dim = pow2(n) if isinstance(n, int) else self.lane_extent(n, var, bound_node, fixed)
            if isinstance(size, E.Extent):
                self.lane_counts[size.name] = bound
            lane: E.Expr = E.Arange(size) if rank == 1 else E.Lift(E.Arange(size), rank, (axis,))
            hi = size - 1 if isinstance(size, int) else None
            user = var.replace("#", "_") if var else None  # a part of an index tuple: its name and position
            v = E.Var(self.claim(user) if user else self.fresh("lane"), lo=0, hi=hi, dims=lane.shape)
            self.emit(N.Let(v, lane), bound_node)
            self.lane_extents[v.name] = n if isinstance(n, int) else 0
            self.lane_axis[v.name] = axis
            if isinstance(n, int):
                self.exact[v.name] = (0, n - 1)
            if var:
                self.scopes[-1][var] = Bounded(v, bound)
            self.lanes = (self.lanes[0], E.broadcast(self.lanes[1], lane.shape))
            if size != n:
                self.padding.append(E.fold(E.Bin("<", v, bound)))  # lanes past the level's count
        self.scopes[-1].update(tuples or {})  # ``t`` of ``parallel t = {x, y} by ..``: its parts
        self.stmts(body)
        self.scopes.pop()
        self.padding, self.lets, self.lanes, self.lane_first = saved_pad, saved_lets, saved_lanes, saved_first

    def lane_extent(self, count: E.Expr, var: str | None, node: A.Node, fixed: int) -> E.Extent:
        """The lanes of a thread level whose count is known only at launch (``parallel q by
        x.span(1) : group``): a tile extent the launcher fixes, the lanes past the count masked."""
        what = f"the thread level '{var}'" if var else "a thread level"
        name = (var or "lane").replace("#", "_").upper()  # a part of an index tuple: its name and position
        return self.launch_extent(count, f"{name}_LANES", what, node, fixed)

    # ================================================================ statements
    def stmts(self, stmts: list[A.Stmt]) -> None:
        if has_lane_roles(stmts):  # roles of a thread level or in a loop: in their order (lift/laneroles.py)
            check_lane_roles(stmts, self.declared_events(), stmts[0])
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: A.Stmt) -> None:
        if isinstance(s, A.Block):
            self.scopes.append({})
            self.stmts(s.stmts)
            self.scopes.pop()
        elif isinstance(s, (A.Empty, A.PragmaStmt)):
            return
        elif isinstance(s, A.Parallel) and has_roles(s.body):
            self.roles(s)
        elif isinstance(s, A.Parallel):
            if not all(self.level_of.get(id(b)) == "thread" for b in s.levels) or s.is_async:
                raise NotLifted("an inner parallel that is not a thread level", s)
            self.lane_scope(s.levels, [s.body])
        elif isinstance(s, A.AssignStmt):
            for a in s.items:
                self.assign(a)
        elif isinstance(s, A.ScalarDecl):
            self.scalar_decl(s)
        elif isinstance(s, A.If):
            self.if_stmt(s)
        elif isinstance(s, A.SpannedDecl):
            self.buffer_decl(s)
        elif isinstance(s, A.DmaStmt):
            self.dma(s)
        elif isinstance(s, A.Wait):
            self.wait(s)
        elif isinstance(s, A.Foreach):
            self.foreach(s)
        elif isinstance(s, A.With):
            self.with_stmt(s)
        elif isinstance(s, A.MmaFill):
            self.mma_fill(s)
        elif isinstance(s, A.MmaLoad):
            self.mma_load(s)
        elif isinstance(s, A.MmaOp):
            self.mma_op(s)
        elif isinstance(s, A.MmaStore):
            self.mma_store(s)
        elif isinstance(s, A.FragDecl):
            self.frag_decl(s)
        elif isinstance(s, A.MmaCommit):
            return  # the lifted MMAs are complete where they stand
        elif isinstance(s, A.EventDecl):
            self.event_decl(s)
        elif isinstance(s, A.Trigger):
            self.trigger(s)
        elif isinstance(s, A.While):
            self.spin(s)
        elif isinstance(s, A.Sync):
            self.sync(s)
        elif isinstance(s, A.Apply):
            self.apply(s)
        elif isinstance(s, A.FragOp):
            self.frag_op(s)
        elif isinstance(s, A.CallStmt):
            self.call_stmt(s)
        elif isinstance(s, A.MdspanDecl):
            self.shape_decl(s)
        elif isinstance(s, A.ItupleDecl):
            self.ituple_decl(s)
        elif isinstance(s, A.MmaScale):
            self.mma_scale(s)
        elif isinstance(s, A.DmaAny):
            self.dma_any(s)
        elif isinstance(s, A.Swap):
            self.swap(s)
        elif isinstance(s, A.InThreads) and (pick := self.unit_pick(s)) is not None:
            self.picked_unit(s, pick)  # one unit's work (lift/units.py)
        elif isinstance(s, A.InThreads):  # the lanes the condition picks (all meet after, or, async, in
            self.if_stmt(A.If(s.cond, s.body, None, span=s.span))  # an order their events allow: stmts)
        elif isinstance(s, A.Yield):
            self.yield_stmt(s)
        else:
            raise NotLifted(STATEMENTS.get(type(s).__name__, "{}").format(describe(s)), s)

    def roles(self, s: A.Parallel) -> None:
        """Warp roles as one sequential program (lift/collapse.py); its rings become buffers and
        its main loop keeps the pipeline the source states.

        The shared buffers and events declared in the units' own body (LANGUAGE.md 7.3, 7.5: a
        ``shared`` buffer is the block's, one that every role sees) are declared first, in a scope
        of their own around the roles: a ring among them is a ring of the pipeline as one declared
        around the ``parallel`` is."""
        stmts = list(s.body.stmts) if isinstance(s.body, A.Block) else [s.body]
        shared = [x for x in stmts if floating(x)]
        if not shared:
            self.collapsed_roles(s, self.scopes[-1])
            return
        around = self.scopes[-1]
        self.scopes.append({})
        for d in shared:
            self.stmt(d)
        rest = [x for x in stmts if not any(x is d for d in shared)]
        self.collapsed_roles(dataclasses.replace(s, body=A.Block(rest, span=s.body.span)), around)
        self.scopes.pop()

    def collapsed_roles(self, s: A.Parallel, around: dict[str, Any]) -> None:
        """:meth:`roles` once their shared declarations are in scope; ``around``: the scope of the
        statements beside the ``parallel`` (where a ring declared outside it becomes a buffer)."""
        rings = {name: v for sc in self.scopes for name, v in sc.items() if isinstance(v, Ring)}
        events = self.declared_events()
        decls = [n for n in self.top.walk() if isinstance(n, A.EventDecl) and n.count is not None]
        try:
            counted = frozenset(d.name for n in decls for d in n.items)
            outer = frozenset(name for sc in self.scopes for name in sc)
            block, stated = collapse(s, set(rings), events, counted, outer)
        except NotLifted:
            if id(s.levels[0]) in self.unit_threads or not all(self.level_of.get(id(b)) == "thread" for b in s.levels):
                raise
            self.lane_scope(s.levels, [s.body])  # roles of a thread level: in their order (lift/laneroles.py)
            return
        # the roles run merged in the pipeline's order: where their events order otherwise, say so
        seen = {located(d) for d in self.warnings}
        self.warnings.extend(d for d in pipeline_races(self.top, s) if located(d) not in seen)
        for name, r in rings.items():  # the ring's slot of the merged program: a buffer of this scope
            if name in stated.rings:
                scope = self.scopes[-1] if name in self.scopes[-1] else around
                scope[name] = self.new_buffer(name, r.elem, r.extents, 0, r.node)
        slots = max((rings[n].slots for n in stated.rings), default=0)
        if slots >= 2:
            self.stated_pipelines[id(stated.loop)] = N.Pipeline(
                slots, roles=stated.roles, events=stated.events, ring=slots
            )
        units = const_int(s.levels[0].bound[0]) or 1
        per_unit = self.unit_threads.get(id(s.levels[0]), 32)
        self.threads = max(self.threads, units * per_unit)
        if stated.units is not None:  # a role of several units: the merged program runs on them
            self.unit_threads[id(stated.units)] = per_unit
            self.level_of[id(stated.units)] = "thread"
        self.copied_levels(s, block)
        self.collapsed.append(block)
        self.stmt(block)

    def declared_events(self) -> dict[str, bool]:
        """The kernel's events, whether each is declared ready."""
        return {d.name: d.ready for n in self.top.walk() if isinstance(n, A.EventDecl) for d in n.items}

    def copied_levels(self, original: A.Node, copy: A.Node) -> None:
        """The levels of the parallels of ``copy`` (the roles' bodies collapsed, copied from
        ``original``: a thread level inside a role) as the original's (the same source spans)."""

        def key(b: A.PBy) -> tuple[object, ...]:
            return (b.span.line, b.span.col, b.name, tuple(b.vars or ())) if b.span else (id(b),)

        known = {
            key(b): self.level_of[id(b)] for b in original.walk() if isinstance(b, A.PBy) and id(b) in self.level_of
        }
        for b in copy.walk():
            if isinstance(b, A.PBy) and id(b) not in self.level_of and key(b) in known:
                self.level_of[id(b)] = known[key(b)]

    def scalar_decl(self, s: A.ScalarDecl) -> None:
        if s.storage is not None:
            raise NotLifted("a scalar with a storage class", s)
        for d in s.items:
            init = d.init if d.init is not None else d.fill
            if d.dims or (init is None and s.type is None):
                raise NotLifted("a scalar declared without a value", d)
            if s.type is not None and s.type not in ("int", "bool") and ir_type(s.type) is None:
                raise NotLifted(f"a scalar of type '{s.type}'", d)
            if init is None:  # uninitialised in Croqtile: zero here, as the launcher's scalars and buffers
                assert s.type is not None
                zero = False if s.type == "bool" else 0 if s.type == "int" or not TYPES[s.type].is_float else 0.0
                self.define(d.name, Value(E.Const(zero, ir_type(s.type) or "i32"), s.type), d)
                continue
            value = self.expr(init, want=d.name)
            ctype = s.type or value.ctype
            self.define(d.name, self.convert(value, ctype), d)

    def yield_stmt(self, s: A.Yield) -> None:
        """``yield``: the lanes where the enclosing conditions hold leave the program; every later
        access of this lane scope is masked off for them (a loop would bring them back: refused; a
        ``yield`` in a loop's own statements is a flag by now, lift/yields.py ``loop_yields``)."""
        if self.loop_depth:
            raise NotLifted("a 'yield' inside a loop, in an inner 'parallel' or 'inthreads' of its body", s)
        self.padding.append(E.fold(E.Un("!", E.conj(self.pred))) if self.pred else E.Const(False, "i1"))

    def define(self, name: str, value: Value, node: A.Node) -> None:
        """A new local: the value under the user's name (a load lands in it directly)."""
        e = value.expr
        if isinstance(e, E.Var) and e.name == name:
            self.scopes[-1][name] = value
            return
        lo, hi = E.bounds(e)
        var = E.Var(self.claim(name), ir_type(value.ctype) or "i32", dims=e.shape, lo=lo, hi=hi)
        self.emit(N.Let(var, e), node)
        self.scopes[-1][name] = Value(var, value.ctype)

    def assign(self, a: A.Assign) -> None:
        target = a.target
        if isinstance(target, A.At):
            self.store(target, a)
            return
        if not isinstance(target, A.Name):
            raise NotLifted("an assignment to this kind of target", target)
        if a.op == "=" and self.is_tuple_value(a.value):  # ``c = {bm, bn}``, ``nb = t + {1, 1}``: an index tuple
            if not isinstance(unparen(a.value), A.ItupleLit) and self.binding(target.name) is not None:
                raise NotLifted("an index tuple assigned again", a)  # (a mutable one updated in a loop)
            self.ituple_decl(A.ItupleDecl(target.name, a.value, span=a.span))
            return
        if a.op == "=" and (reshaped := self.reshaped_tensor(a.value)) is not None:  # ``xf = x.span_as([..])``
            self.scopes[-1][target.name] = reshaped
            return
        if a.op == "=" and self.names_a_view(a.value):  # a named view (``q = x.subspan(..).at(..)``)
            self.scopes[-1][target.name] = self.named_view(a.value)
            return
        if a.op == "=" and isinstance(unparen(a.value), A.Select):  # a choice known when translating
            self.scopes[-1][target.name] = self.select_future(unparen(a.value), target.name)  # type: ignore[arg-type]
            return
        old = self.lookup_local(target.name)
        if old is None:
            if a.op != "=":
                raise NotLifted("a compound assignment to an undeclared name", a)
            self.define(target.name, self.expr(a.value, want=target.name), a)
            if _bounded_form(a.value):  # (a name an assignment declares is immutable: sema checks it)
                # ``tile = k # p``, ``u = t #+ 1``: a bounded index under a name (``#tile``, ``chunkat(tile)``)
                value = self.scopes[-1][target.name]
                self.scopes[-1][target.name] = Bounded(value.expr, self.index_bound(a.value).bound)
            elif (derived := self.derived_index(a.value)) is not None:
                # ``bn = idx % num_n``, ``bm = idx / num_n``: a tile index of a linear one, a plain
                # value everywhere but where a bounded index is asked for (``chunkat(bn, ..)``, ``#bn``)
                value = self.scopes[-1][target.name]
                if isinstance(value, Value) and isinstance(value.expr, E.Var) and not value.expr.shape:
                    self.derived_bounds[value.expr.name] = derived.bound
            return
        value = self.expr(a.value)
        if a.op != "=":
            value = self.binary(a.op, old, value, a)
        value = self.convert(value, old.ctype)
        new = value.expr
        if self.pred:
            new = E.Where(E.conj(self.pred), new, old.expr)
        assert isinstance(old.expr, E.Var)
        var = E.Var(old.expr.name, old.expr.type, dims=E.broadcast(old.expr.shape, new.shape))
        if new.shape != var.shape:  # ``acc = 0.0f`` of a lane variable: every lane's value (a loop
            # carries it: compiled Triton needs one type for it before and inside the loop)
            if isinstance(new, E.Const):
                new = E.Full(var.shape, new.value, new.dtype)
            else:
                new = E.Bin("+", new, E.Full(var.shape, 0, new.dtype))
        self.emit(N.Assign(var, new) if var.shape == old.expr.shape else N.Let(var, new), a)
        self.forget({var.name})
        self.bind_local(target.name, Value(var, old.ctype))

    def inc_dec(self, e: A.IncDec) -> Value:
        """``x++`` / ``++x`` (``--``) of a scalar: ``x`` updated by one, and the value before the
        update (postfix) or after it (prefix), as in C."""
        old = self.lookup_local(e.target)
        if old is None or not isinstance(old.expr, E.Var):
            raise NotLifted(f"{describe(e)} of something that is not a scalar variable", e)
        before = old
        if not e.prefix:  # the value before: kept under its own name, the variable is rebound
            var = E.Var(self.fresh(f"{e.target}_was"), old.expr.type, dims=old.expr.shape)
            self.emit(N.Let(var, old.expr), e)
            before = Value(var, old.ctype)
        self.assign(A.Assign(A.Name(e.target, span=e.span), e.op[0], A.IntLit(1, "1", span=e.span), span=e.span))
        return before if not e.prefix else self.name_value(A.Name(e.target, span=e.span))

    def named_view(self, e: A.Expr) -> Any:
        """What ``q = <view>`` names; a thread's own part of a buffer in scratch memory
        (``g = f.data.span_as([16, 24]).chunkat(t, _)``) too: its elements are addresses there."""
        try:
            return self.place(e)
        except NotLifted:
            if self.lanes is None:
                raise
            self.lane_views = True
            try:
                p = self.place(e)
            except NotLifted:
                p = None
            finally:
                self.lane_views = False
            if isinstance(p, BufferView) and p.buffer.home is not None and p.buffer.home.lane is None:
                return p
            if isinstance(p, Region) and p.reshaped is None:
                # a window of a tensor each thread places (``w = x.view(2, 2).from(c * 2)``), with explicit
                # strides too (``x.view(4 : 2).from(c * 8)``): read by element, each lane at its own addresses
                return p
            if isinstance(p, Region):
                raise NotLifted(
                    "a view of another shape than its tensor's whose origin depends on the thread index", e
                ) from None
            raise

    def names_a_view(self, e: A.Expr) -> bool:
        while isinstance(e, A.Paren):
            e = e.expr
        if isinstance(e, (A.View, A.Member)):
            return True
        if isinstance(e, A.Name):  # a tensor, a buffer, a future or a named view
            return e.name in self.host.tensors or not isinstance(self.binding(e.name), (Value, Bounded, type(None)))
        if isinstance(e, A.Index):  # ``s[1][0]``: one buffer of an array of buffers
            while isinstance(e, A.Index):
                e = unparen(e.base)
            if isinstance(e, A.Name):
                return isinstance(self.binding(e.name), (BufferArray, Ring)) or (
                    e.name in self.host.tensors and self.binding(e.name) is None
                )
        return False

    def varying(self) -> set[str]:
        """The names whose values may differ between the threads of a block (lift/placement.py)."""
        if self._varying is None:
            self._varying = varying_names(self.top, self.level_of, const_int)
        return self._varying

    def lookup_local(self, name: str) -> Value | None:
        v = self.binding(name)
        return v if isinstance(v, Value) and isinstance(v.expr, E.Var) else None

    def bind_local(self, name: str, value: Value) -> None:
        for sc in reversed(self.scopes):
            if name in sc:
                sc[name] = value
                return

    def if_stmt(self, s: A.If) -> None:
        if self.tests_event(s.cond):  # (valid as ``while (e);`` is: a predicate on events)
            raise NotLifted("an 'if' whose condition tests an event", s.cond)
        cond = self.truth(self.expr(s.cond))
        if not cond.shape and _tile_work(s):
            self.branch(cond, s)
            return
        if not isinstance(cond, (E.Var, E.Const)) and _assigns_what_it_reads(s):
            # the condition as it was before the branch assigns what it reads (``if (o > v) { v = o;
            # at = o_at; }``: ``at`` is chosen by the old ``v``)
            var = E.Var(self.fresh("cond"), "i1", dims=cond.shape)
            self.emit(N.Let(var, cond), s)
            cond = var
        self.pred.append(cond)
        self.scopes.append({})
        self.branch_body(s.then)
        bound = [self.scopes.pop()]
        self.pred.pop()
        if s.other is not None:
            self.pred.append(E.fold(E.Un("!", cond)))
            self.scopes.append({})
            self.branch_body(s.other)
            bound.append(self.scopes.pop())
            self.pred.pop()
        self.bind_placeholders(bound)

    @contextmanager
    def guarded(self, cond: E.Expr) -> Iterator[None]:
        """Element reads inside are masked by ``cond`` too (a lane whose condition fails reads nothing)."""
        if isinstance(cond, E.Const) and cond.value:
            yield
            return
        self.pred.append(cond)
        try:
            yield
        finally:
            self.pred.pop()

    def branch_body(self, s: A.Stmt) -> None:
        """A branch of an ``if`` in the scope the caller opened for it (its braces open no other)."""
        self.stmts(s.stmts) if isinstance(s, A.Block) else self.stmt(s)

    def branch(self, cond: E.Expr, s: A.If) -> None:
        """A block-level condition around whole-tile work (MMAs, ``apply``, fragment operations):
        a branch of the program, not a ``where`` over each tile it computes (element accesses
        join their masks instead, which the schedule passes can widen)."""
        for b in self.buffers():  # buffers are assigned in the branches: bound before them
            self.tile_value(b, s)
        self.per_thread(s)
        before = self.values()
        outer, saved_lets = self.body, list(self.lets)
        bodies: list[list[N.Stmt]] = []
        self.branches += 1
        for part in (s.then, s.other):
            self.body, self.lets = [], list(saved_lets)
            if part is not None:
                self.scopes.append({})
                self.stmt(part)
                self.scopes.pop()
            bodies.append(self.body)
        self.branches -= 1
        self.body, self.lets = outer, saved_lets
        self.rebound(before, "a branch", s)
        self.emit(N.If(cond, bodies[0], bodies[1]), s)

    # ================================================================ expressions
    def leaf(self, e: A.Expr, want: str | None) -> Value:
        """Names, parallel indices and element reads (the rest of :meth:`Arith.expr`)."""
        if isinstance(e, A.Name):
            return self.name_value(e)
        if isinstance(e, A.IncDec):
            return self.inc_dec(e)
        if isinstance(e, A.UBound):
            b = self.lookup(e.name, e)
            if isinstance(b, WithName):  # ``#k`` of ``with k in [n]`` outside a loop over it: n
                return Value(b.extent, "int")
            d = b if isinstance(b, Bounded) else self.derived_bound(b)  # ``#bn`` of ``bn = idx % nn``
            if d is None and (host := self.host_bound_of(e.name)) is not None:
                return Value(host, "int")  # ``#r`` of a host loop's counter ``r`` (``with r in [3] { foreach r ..``)
            if d is None:
                raise NotLifted("'#' of something that is not a parallel index", e)
            return Value(d.bound, "int")
        if isinstance(e, A.At):
            e = self.slot_element(e)
            buf = self.buffer_of(e.base)
            if buf is not None:
                if e.through_address and len(e.indices) > 1:
                    view = self.place(unparen(e.base))
                    if isinstance(view, BufferView) and not view.whole:
                        raise NotLifted(
                            "an element at an offset from the address of an element of a part of a buffer of"
                            " several dimensions (its rows need not lie one after another: pass an element of"
                            " the whole buffer)",
                            e,
                        )
                return self.buffer_read(buf, e)
            return self.load(e, want)
        if isinstance(e, A.Binary) and e.op == "#":
            return self.compose(e)
        if isinstance(e, A.Binary) and e.op in ("#+", "#-"):  # the value of the left side, its bound changed
            self.int_expr(e.rhs)
            return Value(self.index_bound(e).value, "int")
        if isinstance(e, A.Call) and e.kind == "atomic":
            return self.atomic(e)
        if isinstance(e, A.SizeOf) and e.expr is not None:  # ``|x.span|``: the number of elements
            count: E.Expr = E.Const(1)
            whole = isinstance(unparen(e.expr), A.Name) and self.names_a_view(e.expr)  # ``|x|`` of spanned data
            for n in view_shape(self.place(e.expr)) if whole else self.extents(e.expr):
                count = E.fold(E.Bin("*", count, n))
            return Value(count, "int")
        if isinstance(e, A.SizeOf) and e.elem is not None:  # ``|f32|``: the type's byte size (LANGUAGE.md 4.2)
            return Value(E.Const(TYPES[e.elem].nbytes), "int")
        if isinstance(e, A.GetIth) and isinstance(e.base, A.Member) and e.base.member == "span":
            return Value(self.extent_of(e.base.base, e.index), "int")
        if isinstance(e, A.GetIth) and isinstance(unparen(e.base), A.Name):
            return self.tuple_part(unparen(e.base).name, e)  # type: ignore[attr-defined]
        if isinstance(e, A.Call) and e.device is not None:  # a __device__ helper (lift/helpers.py)
            return self.device_call(e)
        if isinstance(e, A.Call):
            raise NotLifted(call_form(e), e, call_hint(e))
        raise NotLifted(describe(e), e)

    def lookup(self, name: str, node: A.Node) -> Value | Bounded:
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        hb = self.host_bounded(name)  # a name of a host-level 'with' (lift/loops.py)
        if hb is not None and not isinstance(hb, IndexTuple):
            return hb
        s = self.host.scalars.get(name)
        if s is not None:
            if s.elem not in ("int", "bool") and ir_type(s.elem) is None:
                raise NotLifted(f"a scalar of type '{s.elem}'", node)
            counter = self.host.bounded.get(name, (None, None))[0] is not None  # a host loop's counter
            lo = 0 if counter or name in self.sizes() else None
            if s.elem == "bool":  # Triton may pass True as the integer 1 (it specializes 1): compare it
                return Value(E.Bin("!=", self.scalar_arg(name, s.host, "int"), E.Const(0)), "bool")
            if s.elem in SUB_BYTE:  # passed as an int: C's conversion to the parameter's type
                return self.convert(Value(self.scalar_arg(name, s.host, "s32", lo=lo), "s32"), s.elem)
            return Value(self.scalar_arg(name, s.host, s.elem, lo=lo), s.elem)
        if name in self.host.constants:  # an integer the function knows when translating
            return Value(E.Const(self.host.constants[name]), "int")
        if name in self.host.float_constants:
            value, ctype = self.host.float_constants[name]
            return Value(E.Const(value, ir_type(ctype) or "f32"), ctype)
        if name in self.host.bool_constants:
            return Value(E.Const(self.host.bool_constants[name], "i1"), "bool")
        if not self.known(name):
            raise self.undeclared(name, node.span)
        raise NotLifted(f"the name '{name}' used as a value", node)

    def declared(self, e: A.Expr) -> None:
        """Every name ``e`` reads is declared (else the user's error, where it stands)."""
        for n in e.walk():
            if isinstance(n, A.Name) and not self.known(n.name):
                raise self.undeclared(n.name, n.span)

    def undeclared(self, name: str, span: Span | None) -> CroqSemanticError:
        """The user's error: ``name`` is read where nothing of that name is visible, with the visible
        names closest to it."""
        h = self.host
        visible = {n for sc in self.scopes for n in sc}
        for d in (h.tensors, h.scalars, h.constants, h.float_constants, h.bool_constants, h.shapes, h.bounded):
            visible.update(d)
        near = difflib.get_close_matches(name, sorted(visible), n=3, cutoff=0.6)
        hint = suggest.did_you_mean(near) or (
            "declare it before this line: a name is visible from its declaration to the end of its block, "
            "a loop's or a parallel's index inside it only"
        )
        return CroqSemanticError(f"'{name}' is not declared", span, hint)

    def known(self, name: str) -> bool:
        """Is ``name`` declared anywhere the kernel can see (its scopes, the launcher's names)?"""
        h = self.host
        return any(name in sc for sc in self.scopes) or any(
            name in d
            for d in (
                h.tensors, h.scalars, h.constants, h.float_constants, h.bool_constants, h.shapes, h.bounded,
                h.bounded_tuples,
            )
        )  # fmt: skip

    def sizes(self) -> set[str]:
        return {x for t in self.host.tensors.values() for x in t.extents if isinstance(x, str)}

    def name_value(self, e: A.Name) -> Value:
        v = self.lookup(e.name, e)
        if isinstance(v, Bounded):
            return Value(v.value, "int")
        if isinstance(v, WithName):  # named by 'with', no 'foreach' over it: 0 (LANGUAGE.md 7.4)
            return Value(E.Const(0), "int")
        if not isinstance(v, Value):
            raise NotLifted(f"'{e.name}' used as a value", e)
        return v

    def compose(self, e: A.Binary) -> Value:
        """``a # b`` = ``a * #b + b`` (LANGUAGE.md 7.2)."""
        self.declared(e)
        b = self.index_bound(e.rhs)
        a = self.expr(e.lhs)
        return Value(E.fold(E.Bin("+", E.Bin("*", a.expr, b.bound), b.value)), "int")

    def derived_index(self, e: A.Expr) -> Bounded | None:
        """``a % n`` / ``a / n`` of a bounded index ``a`` (``n`` a positive integer): the index
        among ``n`` / among ``cdiv(#a, n)`` chunks (a linear tile index split into its row and
        column, ``bn = idx % num_n; bm = idx / num_n``, then ``chunkat(bm, ..)``); the value
        stays the plain quotient or remainder.  None for anything else."""
        e = unparen(e)
        if not (isinstance(e, A.Binary) and e.op in ("%", "/")):
            return None
        try:
            a = self.index_bound(e.lhs)
            n = self.int_expr(e.rhs)
        except (NotLifted, CroqSemanticError):
            return None
        hi = E.bounds(n)[1]
        if n.shape or (hi is not None and hi < 1):  # (a divisor of run-time value is a positive count)
            return None
        if e.op == "%":
            return Bounded(E.fold(E.Bin("%", a.value, n)), n)
        return Bounded(E.fold(E.Bin("/", a.value, n)), E.fold(E.CDiv(a.bound, n)))

    def index_bound(self, e: A.Expr) -> Bounded:
        """The value and bound of a bounded index (LANGUAGE.md 7.2): a parallel or loop index, a
        name bound to one, ``a # b``, ``a #+ c``, ``a #- c``."""
        e = unparen(e)
        if isinstance(e, A.Binary) and e.op == "#":
            a, b = self.index_bound(e.lhs), self.index_bound(e.rhs)
            return Bounded(
                E.fold(E.Bin("+", E.Bin("*", a.value, b.bound), b.value)), E.fold(E.Bin("*", a.bound, b.bound))
            )
        if isinstance(e, A.Binary) and e.op in ("#+", "#-"):
            a = self.index_bound(e.lhs)
            return Bounded(a.value, E.fold(E.Bin(e.op[1], a.bound, self.int_expr(e.rhs))))
        if isinstance(e, A.Name):
            b = self.lookup(e.name, e)
            if isinstance(b, Bounded):
                return b
            if isinstance(b, WithName):  # named by 'with', no 'foreach' over it: 0 (LANGUAGE.md 7.4)
                return Bounded(E.Const(0), b.extent)
            if isinstance(b, Value) and (hb := self.host_bound_of(e.name)) is not None:  # a host loop's counter
                return Bounded(b.expr, hb)
            if (d := self.derived_bound(b)) is not None:
                return d
        if isinstance(e, A.GetIth) and isinstance(unparen(e.base), A.Name):
            name = unparen(e.base).name  # type: ignore[attr-defined]
            t = self.binding(name)
            if isinstance(t, IndexTuple):  # ``idx(1)``: a part of a bounded index tuple
                k = ir_const_int(self.int_expr(e.index))
                if k is not None and -len(t.parts) <= k < len(t.parts):
                    return self.index_bound(A.Name(t.parts[k], span=e.span))
            elif isinstance(t, (Bounded, WithName)):  # ``y(-1)``: the index #y - 1 among #y (LANGUAGE.md 7.2)
                return Bounded(self.tuple_part(name, e).expr, self.index_bound(e.base).bound)
        raise NotLifted("'#' of something that is not a bounded index", e)

    def derived_bound(self, b: Any) -> Bounded | None:
        """A name's value that :meth:`derived_index` bounded (``bn = idx % num_n``), as a bounded index."""
        if isinstance(b, Value) and isinstance(b.expr, E.Var) and b.expr.name in self.derived_bounds:
            return Bounded(b.expr, self.derived_bounds[b.expr.name])
        return None

    def host_expr(self, e: A.Expr) -> E.Expr:
        """A grid bound as the launcher computes it (sizes and scalar parameters, literals, cdiv)."""
        if isinstance(e, A.Paren):
            return self.host_expr(e.expr)
        if isinstance(e, A.IntLit):
            return E.Const(e.value)
        if isinstance(e, A.Name):
            if e.name in self.host.constants:
                return E.Const(self.host.constants[e.name])
            s = self.host.scalars.get(e.name)
            if s is None or s.elem != "int":
                if s is None and e.name not in self.host.tensors:
                    self.lookup(e.name, e)  # (a name declared nowhere: the user's error, not a refusal)
                raise NotLifted(f"a grid bound that uses '{e.name}'", e)
            return E.Var(s.host, lo=0 if e.name in self.sizes() else None)
        if isinstance(e, A.GetIth) and isinstance(e.base, A.Member) and e.base.member == "span":
            t = self.host.tensors.get(unparen(e.base.base).name) if isinstance(unparen(e.base.base), A.Name) else None  # type: ignore[attr-defined]
            k = unparen(e.index).value if isinstance(unparen(e.index), A.IntLit) else None  # type: ignore[attr-defined]
            if t is not None and k is not None and -len(t.extents) <= k < len(t.extents):  # ``lhs.span(0)``
                n = t.extents[k]
                return E.Const(n) if isinstance(n, int) else E.Var(n, lo=0)
        if isinstance(e, A.GetIth) and isinstance(e.base, A.Name) and isinstance(unparen(e.index), A.IntLit):
            items = self.host.shape_values.get(e.base.name)  # ``t(k)`` of a shape or ituple the launcher computes
            k = unparen(e.index).value  # type: ignore[attr-defined]
            if items is not None and 0 <= k < len(items):
                return items[k]
        if isinstance(e, A.Builtin) and e.name == "cdiv" and len(e.args) == 2:
            return E.fold(E.CDiv(self.host_expr(e.args[0]), self.host_expr(e.args[1])))
        if isinstance(e, A.Binary) and e.op in ARITH_OPS:
            return E.fold(E.Bin(e.op, self.host_expr(e.lhs), self.host_expr(e.rhs)))
        host = self.launch_value(e)
        if host is not None:
            return host
        raise NotLifted("a grid bound of this form", e)

    def launch_value(self, e: A.Expr) -> E.Expr | None:
        """Any other integer the launcher can compute (``|x.span|``, ``|s / 2|``, ``|f32|``,
        ``x.span(-1)``, ``-n``, ``c ? a : b`` of sizes): its value as the kernel would compute it,
        spelled in the launcher's terms (None where it reads anything the launcher does not know)."""
        args, bound = dict(self.args), set(self.bound)
        try:
            v = self.expr(e)
            if v.ctype not in ("int", "s32", "s64", "u32", "u64", "s16", "u16", "s8", "u8") or v.expr.shape:
                return None
            if any(isinstance(x, E.Cast) or x.dtype.startswith(("f", "bf")) for x in v.expr.walk()):
                return None  # a conversion (of a float scalar): the launcher computes integers only
            return self.host_of(v.expr)
        except NotLifted:
            return None
        finally:  # the kernel reads none of it: no parameter for it
            self.args.clear()
            self.args.update(args)
            self.bound.intersection_update(bound)

    def host_of(self, e: E.Expr) -> E.Expr | None:
        """``e`` as the launcher computes it: scalar arguments by their launcher expressions, the
        grid's extents by the grid's (None where ``e`` depends on anything else)."""
        env: dict[str, E.Expr] = {}
        for v in E.free_vars(e):
            a = self.args.get(v.name)
            if not isinstance(a, N.Scalar):
                return None
            env[v.name] = a.host
        out = E.substitute(e, env)
        for axis, g in enumerate(self.grid_hosts):
            out = E.replace(out, E.Call("num_programs", (E.Const(axis),), "i32"), g)
        return None if _calls(out, "num_programs") else E.fold(out)


# statements with no Triton form: why, after the construct as the source spells it ('{}')
STATEMENTS = {
    "Asm": "{} (Triton kernels take no PTX or C++ asm statements)",
}

TILE_WORK = (A.Apply, A.MmaOp, A.MmaFill, A.MmaStore, A.FragOp)


def _bounded_form(e: A.Expr) -> bool:
    """Is ``e`` an index whose bound the language defines (``a # b``, ``a #+ c``, ``a #- c``)?"""
    e = unparen(e)
    return isinstance(e, A.Binary) and e.op in ("#", "#+", "#-")


def _tile_work(s: A.If) -> bool:
    """Does a branch hold whole-tile work (see :meth:`Lifter.branch`)?"""
    return any(isinstance(n, TILE_WORK) for n in s.walk())


def _assigns_what_it_reads(s: A.If) -> bool:
    """Does a branch of ``s`` assign a name its condition reads, with anything after it (in the
    branch, or in the other branch)?"""
    read = {n.name for n in s.cond.walk() if isinstance(n, A.Name)}
    order = [n for p in (s.then, s.other) if p is not None for n in p.walk() if isinstance(n, (A.Stmt, A.Assign))]
    for k, n in enumerate(order):
        if isinstance(n, A.Assign) and isinstance(n.target, A.Name) and n.target.name in read:
            return k < len(order) - 1
    return False


def _calls(e: E.Expr, fn: str) -> bool:
    return (isinstance(e, E.Call) and e.fn == fn) or any(_calls(c, fn) for c in e.children())


def lift_kernel(top: A.Parallel, name: str, host: HostScope, src_name: str, options: Options | None = None) -> Lifted:
    """The tile-IR kernel of ``top``, or :class:`NotLifted` where this path does not cover it yet.
    Units whose MMAs lift/units.py does not place are tried again unrolled (lift/unroll.py), and
    fragments of each thread as the threads' arrays (lift/threadfrags.py); a construct with no
    Triton form (:class:`Unlowerable`) is refused as it is met."""
    opts = options or Options()
    top = loop_exits(top) or top  # ``break`` / ``continue`` as flags (lift/exits.py)
    top = units_nested(top)  # ``: block, w by 2 : group-4 { roles }``: the roles' parallel apart
    try:
        return _lift(top, name, host, src_name, opts)
    except (Unlowerable, Unordered):
        raise  # no other lifting takes it: the refusal names the construct (or the race)
    except NotLifted as first:
        # (a user's error met while lifting stays an error: only a refusal looks further)
        first_unlowerable(top)  # a construct no lifting takes is the refusal, wherever it is
        if str(first).startswith("a fragment operation in more than one unit or thread"):
            rewritten = thread_frags(top)
            if rewritten is None:
                raise
            try:
                return _lift(rewritten, name, host, src_name, opts)
            except NotLifted:
                raise first from None
        try:
            unrolled = unroll_units(top)
        except NotUnrolled as why:
            if why.reason is None:
                raise first from None
            raise NotLifted(why.reason, why.node) from None
        if unrolled is None:
            raise
        new_top, fixed = unrolled
        try:
            return _lift(new_top, name, host, src_name, opts, fixed)
        except NotLifted:
            raise first from None


def first_unlowerable(top: A.Parallel) -> None:
    """:class:`Unlowerable` at the first construct of ``top`` that no lifting translates (LANGUAGE.md
    9.5: C++ and asm statements, 2:4 sparse copies), before any other lifting is tried: the
    refusal names it, not a form met earlier that the kernel's lifting would otherwise have had to
    take."""
    for n in top.walk():
        if isinstance(n, (A.Cpp, A.Asm)):
            raise Unlowerable(STATEMENTS.get(type(n).__name__, "{}").format(describe(n)), n)
        if isinstance(n, A.DmaStmt) and any(a.name == "sp" for a in n.attrs):
            raise Unlowerable("2:4 sparse copies ('.sp')", n)


def _lift(
    top: A.Parallel, name: str, host: HostScope, src_name: str, opts: Options, fixed: dict[str, Any] | None = None
) -> Lifted:
    """``top`` lifted; where a buffer the placement pass kept in registers turns out to be read or
    written at other than each thread's own element (its extents known only while lifting: a copy
    of a chunk of run-time extent read under a thread level of its own extent), lifted again with
    that buffer in scratch memory."""
    also: set[str] = set()
    while True:
        lifter = Lifter(top, name, host, src_name, opts)
        lifter.also_scratch = set(also)
        if fixed:
            lifter.scopes[0].update(fixed)
        try:
            return lifter.lift()
        except NotInRegisters as e:
            if e.buffer in also or e.buffer in lifter.scratch_names:
                raise
            also.add(e.buffer)


def level_tuples(levels: list[A.PBy]) -> dict[str, IndexTuple]:
    """The names of parallel tuples (``t`` of ``parallel t = {x, y} by [..]``, LANGUAGE.md 7.3): each
    stands for its parts as an index or a view's argument, ``t(k)`` is part ``k``."""
    return {b.name: IndexTuple(tuple(b.vars)) for b in levels if b.name and b.vars}
