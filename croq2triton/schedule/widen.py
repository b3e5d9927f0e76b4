"""Widening: one program of a lifted tile kernel runs ``F`` consecutive blocks of a grid axis.

A kernel lifted from ``parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block`` with a thread
level of ``[32, 32]`` reads and writes its tensors at the *global coordinates* ``bm * 32 + i`` and
``bn * 32 + j``: each block index only ever appears together with the lane of its thread level, as
one number.  Then the program order of blocks and the split of a coordinate into (block, lane) do
not matter, and a program may as well own the ``F * 32`` coordinates of ``F`` consecutive blocks:
``bm * (F * 32) + tl.arange(0, F * 32)``.  That is this rewrite; it changes how the kernel runs,
never what it computes (perf/probe_copy_tiles.py: 32 x 32 tiles of f16 run at 0.67 of a device
copy on the H200, 64 x 128 at 0.95).

What it proves on the IR before rewriting (else :class:`NotWidened`, and the kernel is kept):

* every occurrence of a widened program id ``b`` is inside an integer expression affine in it and a
  lane, in which ``b``'s coefficient is ``T`` times its lane's (``T`` the lane axis's extent): the
  expression is a function of the coordinate ``b * T + lane`` alone (a lane on its own is a
  coordinate of its own, which no widening changes);
* every tile axis means one coordinate: each axis of every value is labelled by the program id
  whose coordinate runs along it, and element-wise operations only meet equal labels (a block-local
  transpose added to its untransposed self is refused: it pairs different coordinates); a lane on
  its own is labelled by its extent and axis, so two lanes ``tl.arange(0, 32)`` along one axis agree
  (a window staged at ``p * 16 + idx`` stored at ``out.at(p, k)``) unless one of them also pairs with
  a program id (renamed then to its widened value);
* the last program's extra blocks (``b >= G`` where the grid is ``G``) write nothing and read
  nothing: ``F`` divides a constant ``G``, or every access along ``b`` is masked by
  ``coordinate < X`` where ``X <= G * T`` (``G = cdiv(X, T')`` with ``T' <= T``), the coordinate
  its index or any other ``b * T + lane`` (``x.at(2 * (bl # l) + k - 3)`` under ``(bl # l) < L``);
* a TMA box steps with its block (coordinate ``b * box`` along the box's axis); it grows with the
  tile, and a store's boxes past the tensor's end (the extra blocks') store nothing;
* nothing else holds a shape of its own (dots, scratch areas; a ``tl.full`` tile grows with the
  lanes along its axes), and nothing reads the grid's extent (``tl.num_programs``: ``chunkat``
  tiles are the extent divided by it).

A program id used on its own (a program per row, ``out.at(t, c) = table.at(idx.at(t), c)``, or per
element) widens as a new leading axis of rows instead: ``t`` becomes ``t * F + t_rows`` (``t_rows`` a
lane of ``F``), which every element-wise operation broadcasts; every store, and every load it
indexes, is masked by ``t * F + t_rows < G`` (the last program's rows past the grid).  Refused where
``t`` decides a condition of the program or a loop's bounds, or meets a transpose, a TMA box or an
atomic.  Constant tiles (``tl.full``: accumulators of a loop) take the shape of the lanes along
their axes, and the leading axis of rows.

The factors are a :class:`~.schedule.TileSchedule`; :func:`.policy.tile_auto` picks them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction

from ..tir import expr as E
from ..tir import nodes as N
from .atomicfold import unspread
from .schedule import TileSchedule


class NotWidened(Exception):
    """The proof does not hold (or the kernel has a form this rewrite does not cover)."""


@dataclass(frozen=True)
class LaneAxis:
    var: E.Var
    extent: int  # the arange's length
    axis: int  # the tile axis it runs along
    rank: int


@dataclass
class Facts:
    """What the analysis found: per program id, its lane extent ``T`` and whether its coordinate
    indexes the last (contiguous) dimension of some access; the widest element type accessed."""

    tile: dict[str, int] = field(default_factory=dict)
    inner: set[str] = field(default_factory=set)
    grid: dict[str, E.Expr] = field(default_factory=dict)
    elem_bytes: int = 4
    transposes: bool = False
    tma: bool = False  # descriptor boxes follow the tile (their limits: policy.tile_auto)
    rows: set[str] = field(default_factory=set)  # program ids used on their own that may widen as a new axis
    lanes: dict[str, LaneAxis] = field(default_factory=dict)
    pairs: dict[str, set[str]] = field(default_factory=dict)  # lane -> program ids it pairs with
    alone: set[str] = field(default_factory=set)  # lanes also used on their own (no split may cut them)


BYTES = {"i1": 1, "i8": 1, "u8": 1, "f8_e4m3": 1, "f8_e5m2": 1, "i16": 2, "f16": 2, "bf16": 2}

Labels = tuple[str | None, ...]


def _lane_of(value: E.Expr) -> tuple[int, int, int] | None:
    """(extent, axis, rank) of a lane value ``tl.arange(0, n)`` (lifted onto an axis), else None."""
    if isinstance(value, E.Arange):
        return value.n, 0, 1
    if isinstance(value, E.Lift) and isinstance(value.value, E.Arange) and len(value.dims) == 1:
        return value.value.n, value.dims[0], value.rank
    return None


def pairing(e: E.Expr, lanes: dict[str, LaneAxis], pids: set[str]) -> tuple[dict[str, str], set[str]] | None:
    """Lane -> program id where ``e`` is an integer expression affine in its lanes and program ids
    in which each lane's program id has ``extent`` times the lane's coefficient (``bm * 32 + rows``:
    ``{rows: bm}``; ``2 * (bm * 32 + rows) + 1`` too), and the program ids in it without a lane.
    None where ``e`` is not such an expression."""
    if not E.is_int(e.dtype) or e.dtype == "i1":
        return None
    names = {v.name for v in E.free_vars(e)}
    here = names & (lanes.keys() | pids)
    terms = E.linear(e, here)
    if terms is None:
        return None
    coefs = terms[0]
    out: dict[str, str] = {}
    unpaired = {p for p in pids if p in coefs}
    for lane in sorted(names & lanes.keys()):
        if lane not in coefs:
            continue
        partners = [p for p in unpaired if coefs[p] == lanes[lane].extent * coefs[lane]]
        if len(partners) != 1:
            return None
        out[lane] = partners[0]
        unpaired.discard(partners[0])
    return out, unpaired


class Analysis:
    """The proof obligations of the module docstring, checked over one kernel."""

    def __init__(self, kernel: N.Kernel) -> None:
        self.kernel = kernel
        self.pids = {p.name for p in kernel.program_ids}
        if len(kernel.program_ids) != len(kernel.grid):
            raise NotWidened("a kernel of one program")
        grid = {p.name: g for p, g in zip(kernel.program_ids, kernel.grid, strict=True)}
        self.facts = Facts(grid=grid)
        self.labels: dict[str, Labels] = {}
        self.values: dict[str, E.Expr] = {}  # let-bound values, for the mask proof
        self.accesses: list[tuple[tuple[E.Expr, ...], E.Var | None]] = []
        self.lonely: set[str] = set()  # program ids that occur without a lane
        self.lonely_lanes: set[str] = set()  # lanes that occur without their program id
        self.boxes: dict[str, Labels] = {}  # descriptor -> the program id along each box axis
        self.box_tiles: dict[str, set[int]] = {}  # program id -> the box extents it steps
        self.tma_stores: list[tuple[str, tuple[E.Expr, ...]]] = []  # (descriptor, coordinates)
        self.row_blockers: list[str] = []  # why no program id may become a new axis
        self.lane_classes: dict[str, set[str]] = {}  # a lone lane's label -> the lanes read alone under it

    def run(self) -> Facts:
        for s in N.walk(self.kernel.body):
            if isinstance(s, N.Let):
                lane = _lane_of(s.value)
                if lane is not None:
                    self.facts.lanes[s.var.name] = LaneAxis(s.var, *lane)
        for a in self.kernel.args:
            if isinstance(a, N.Scratch):
                raise NotWidened("a scratch area (sized per program)")
            if isinstance(a, N.Constexpr) and a.size is not None:
                raise NotWidened("tiles whose extents are fixed at launch")
        pointers = [a for a in self.kernel.args if isinstance(a, N.Pointer)]
        self.facts.elem_bytes = max((BYTES.get(a.dtype, 4) for a in pointers), default=4)
        self.stmts(self.kernel.body)
        for lane, pids in self.facts.pairs.items():
            for pid in pids:
                t = self.facts.lanes[lane].extent
                if self.facts.tile.setdefault(pid, t) != t:
                    raise NotWidened(f"program id '{pid}' pairs with lanes of different extents")
        for pid, extents in self.box_tiles.items():
            if len(extents | {self.facts.tile.get(pid, min(extents))}) != 1:
                raise NotWidened(f"program id '{pid}' steps boxes and lanes of different extents")
            self.facts.tile[pid] = min(extents)
        for label, names in self.lane_classes.items():
            if len(names) > 1 and names & self.facts.pairs.keys():
                raise NotWidened(
                    f"lanes {sorted(names)} read alone as one coordinate ({label}), one also with its block"
                )
        paired = set(self.facts.tile)
        for pid in self.lonely:
            self.facts.tile.pop(pid, None)  # seen without its lane: not widened along its lanes
        if not self.row_blockers:
            self.facts.rows = {p for p in self.lonely - paired if _kernel_expr(self.facts.grid[p], self.kernel)}
        return self.facts

    # ------------------------------------------------------------ statements
    def stmts(self, body: list[N.Stmt]) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s: N.Stmt) -> None:
        if isinstance(s, N.Dot):
            raise NotWidened("a dot (its shape is its own)")
        if isinstance(s, N.Barrier):
            raise NotWidened("a store to a tensor the program also reads (fenced by barriers)")
        if any(isinstance(n, E.Reduce) and not n.bound or _gathers(n) for x in N.exprs_of(s) for n in x.walk()):
            raise NotWidened("a reduction or a gather (its axes are its own)")
        if isinstance(s, (N.TmaLoad, N.TmaStore, N.Atomic)):
            self.row_blockers.append(type(s).__name__)
        if isinstance(s, N.If) and {v.name for v in E.free_vars(s.cond)} & self.pids:
            self.row_blockers.append("a condition on the block")
        if isinstance(s, N.TmaLoad):
            if s.reshape is not None:
                raise NotWidened("a TMA box reshaped to the tile")
            where = self.box(s.desc, s.coords)
            self.stmt(s.fallback)
            if not _agree(self.labels[s.var.name], where, exact=True):
                raise NotWidened("a TMA load and its fallback along different coordinates")
            return
        if isinstance(s, N.TmaStore):
            where = self.box(s.desc, s.coords)
            self.stmt(s.fallback)
            if not _agree(_pad(self.expr(s.value), len(where)), where, exact=True):
                raise NotWidened("a stored value whose axes are not the box's")
            self.tma_stores.append((s.desc, s.coords))
            return
        if isinstance(s, N.Let):
            if s.var.name in self.facts.lanes:
                return
            self.labels[s.var.name] = self.expr(s.value)
            self.values[s.var.name] = s.value
        elif isinstance(s, N.Assign):
            got = self.expr(s.value)
            if s.var.name in self.labels and not _agree(self.labels[s.var.name], got):
                raise NotWidened("a variable re-bound to a value along other coordinates")
        elif isinstance(s, N.Load):
            self.labels[s.var.name] = self.access(s.base, s.index, s.mask)
        elif isinstance(s, N.Store):
            where = self.access(s.base, s.index, s.mask)
            if not _agree(_pad(self.expr(s.value), len(where)), where, exact=True):
                raise NotWidened("a stored value whose axes are not the index's")
        elif isinstance(s, N.Atomic):
            where = self.access(s.base, s.index, s.mask)
            self.expr(s.value)
            if s.result is not None:
                self.labels[s.result.name] = where
        elif isinstance(s, N.For):
            for e in (s.start, s.stop, s.step):
                if e.shape or {v.name for v in E.free_vars(e)} & (self.pids | self.facts.lanes.keys()):
                    raise NotWidened("a loop bound that depends on the block or a lane")
            self.stmts(s.body)
        elif isinstance(s, N.If):
            self.expr(s.cond)
            self.stmts(s.then)
            self.stmts(s.orelse)
        else:
            raise NotWidened(f"a {type(s).__name__} statement")

    def box(self, desc: str, coords: tuple[E.Expr, ...]) -> Labels:
        """The program id along each axis of a descriptor box: coordinate ``d`` is ``b * box[d]``
        plus terms free of program ids and lanes, or free of them altogether."""
        arg = self.kernel.arg(desc)
        assert isinstance(arg, N.Descriptor)
        self.facts.tma = True
        out: list[str | None] = []
        for c, n in zip(coords, arg.block, strict=True):
            names = {v.name for v in E.free_vars(c)}
            if names & self.facts.lanes.keys():
                raise NotWidened("a TMA coordinate that depends on a lane")
            here = names & self.pids
            if not here:
                out.append(None)
                continue
            terms = E.linear(c, here)
            if terms is None or len(terms[0]) != 1 or next(iter(terms[0].values())) != n:
                raise NotWidened("a TMA coordinate that is not its block index times the box")
            (pid,) = terms[0]
            self.box_tiles.setdefault(pid, set()).add(n)
            out.append(pid)
        if desc in self.boxes and self.boxes[desc] != tuple(out):
            raise NotWidened(f"the descriptor '{desc}' used along different coordinates")
        self.boxes[desc] = tuple(out)
        if out and out[-1] is not None:
            self.facts.inner.add(out[-1])
        return tuple(out)

    def access(self, base: str, index: tuple[E.Expr, ...], mask: E.Var | None) -> Labels:
        arg = self.kernel.arg(base)
        if not isinstance(arg, N.Pointer):
            raise NotWidened(f"an access of '{base}', which is not a tensor")
        labels = [self.expr(i) for i in index]
        if mask is not None:
            self.expr(mask)
        out = _merge(*labels)
        if labels:
            self.facts.inner.update(x for x in labels[-1] if x is not None)
        self.accesses.append((index, mask))
        return out

    # ------------------------------------------------------------ expressions
    def expr(self, e: E.Expr) -> Labels:
        """The coordinate labels of ``e``'s axes (which program id's coordinate runs along each);
        records how program ids and lanes occur in it."""
        if isinstance(e, E.Full):
            return (None,) * len(e.dims)  # the same everywhere: any coordinate (its shape: the rewrite)
        if isinstance(e, E.Reduce) and e.bound:  # a loop's bound over the program's lanes: one number
            self.expr(e.value)
            return ()
        if isinstance(e, E.Call) and e.fn == "num_programs":
            raise NotWidened("the grid's extent read in the kernel (a chunkat tile: it would change)")
        names = {v.name for v in E.free_vars(e)}
        if names & (self.pids | self.facts.lanes.keys()):
            paired = pairing(e, self.facts.lanes, self.pids)
            if paired is not None:
                return self.coordinate(e, *paired)
            if isinstance(e, E.Var) and e.name in self.pids:
                self.lonely.add(e.name)
                return ()
            if isinstance(e, E.Var) and e.name in self.facts.lanes:
                # a lane on its own: a coordinate of its own, which no widening changes; two lanes of
                # one extent along one axis are one coordinate (``tl.arange(0, 32)`` both: a window
                # staged at ``p * 16 + idx`` and stored at ``out.at(p, k)``), as long as neither widens
                # (checked in run: a lane paired with a program id is renamed to its widened value)
                ax = self.facts.lanes[e.name]
                own: list[str | None] = [None] * ax.rank
                own[ax.axis] = f"lane:{ax.extent}@{ax.axis}/{ax.rank}"
                self.lane_classes.setdefault(own[ax.axis], set()).add(e.name)  # type: ignore[arg-type]
                self.lonely_lanes.add(e.name)
                self.facts.alone.add(e.name)
                return tuple(own)
            if not e.children():
                raise NotWidened(f"'{e}' used other than with its block's index")
        if isinstance(e, E.Var):
            return self.labels.get(e.name, (None,) * len(e.shape))
        if isinstance(e, E.Reshape):
            raise NotWidened("a reshaped tile (its coordinates mix)")
        if isinstance(e, E.Permute):
            self.facts.transposes = True
            self.row_blockers.append("a transpose")
            inner = _pad(self.expr(e.value), len(e.value.shape))
            return tuple(inner[d] for d in e.dims)
        if isinstance(e, E.Lift):
            if {v.name for v in E.free_vars(e.value)} & self.pids:
                self.row_blockers.append("a block index placed on an axis")
            inner = self.expr(e.value)
            out: list[str | None] = [None] * e.rank
            if len(inner) != len(e.dims):  # (an arange that is no lane's: a staged chunk's positions)
                raise NotWidened("a tile placed along an axis of no lane")
            for d, label in zip(e.dims, inner, strict=True):
                out[d] = label
            return tuple(out)
        return _merge(*(self.expr(c) for c in e.children()))

    def coordinate(self, e: E.Expr, pairs: dict[str, str], unpaired: set[str]) -> Labels:
        rank = len(e.shape)
        others = {v.name for v in E.free_vars(e)} - self.pids - self.facts.lanes.keys()
        out = list(_merge(*(_pad(self.labels.get(n, ()), rank) for n in others))) if others else [None] * rank
        out = (out + [None] * rank)[:rank] if len(out) != rank else out
        self.lonely |= unpaired
        for lane, pid in pairs.items():
            ax = self.facts.lanes[lane]
            self.facts.pairs.setdefault(lane, set()).add(pid)
            pos = rank - ax.rank + ax.axis
            if out[pos] not in (None, pid):
                raise NotWidened("two coordinates along one axis")
            out[pos] = pid
        return tuple(out)


def _pad(labels: Labels, rank: int) -> Labels:
    return (None,) * (rank - len(labels)) + tuple(labels)


def _merge(*labels: Labels) -> Labels:
    rank = max((len(x) for x in labels), default=0)
    out: list[str | None] = [None] * rank
    for x in labels:
        for i, v in enumerate(_pad(x, rank)):
            if v is None:
                continue
            if out[i] not in (None, v):
                raise NotWidened("an element-wise operation on tiles along different coordinates")
            out[i] = v
    return tuple(out)


def _agree(a: Labels, b: Labels, exact: bool = False) -> bool:
    rank = max(len(a), len(b))
    for x, y in zip(_pad(a, rank), _pad(b, rank), strict=True):
        if x is not None and y is not None and x != y:
            return False
        if exact and x is not None and y is None:
            return False
    return True


def analyse(kernel: N.Kernel) -> Facts:
    """The facts :func:`.policy.tile_auto` reads (``tile`` holds the program ids that may widen);
    :class:`NotWidened` where the kernel's form is not covered."""
    return Analysis(kernel).run()


# ---------------------------------------------------------------- the rewrite
def widen(kernel: N.Kernel, schedule: TileSchedule) -> N.Kernel:
    """``kernel`` with program ``p`` of axis ``a`` running blocks ``p * F_a .. p * F_a + F_a - 1``
    (``F = schedule.factors``), or ``1 / S`` of a block where the schedule splits it (``S =
    schedule.splits``: program ``p`` runs lanes ``(p % S) * T / S`` to ``(p % S + 1) * T / S - 1`` of block
    ``p / S``, which needs every lane of the axis paired with its program id, never on its own);
    :class:`NotWidened` where the proof does not hold."""
    analysis = Analysis(kernel)
    facts = analysis.run()
    factors = {
        p.name: Fraction(f, d) for p, f, d in zip(kernel.program_ids, schedule.factors, schedule.splits, strict=True)
    }
    factors = {p: f for p, f in factors.items() if f != 1}
    if not factors:
        return dataclasses.replace(kernel, num_warps=schedule.num_warps)
    rows = {p: int(f) for p, f in factors.items() if p in facts.rows}
    for pid, f in factors.items():
        if f < 1:
            if pid in rows or pid not in facts.tile:
                raise NotWidened(f"program id '{pid}' split, but it is not a coordinate with its lane")
            if facts.tile[pid] % f.denominator:
                raise NotWidened(f"program id '{pid}' split in {f.denominator}, its lanes are {facts.tile[pid]}")
            alone = [x for x, pids in facts.pairs.items() if pid in pids and x in analysis.lonely_lanes]
            if alone:
                raise NotWidened(f"program id '{pid}' split, but its lane '{alone[0]}' is also used on its own")
    for pid in factors:
        if pid not in facts.tile and pid not in rows:
            why = "; ".join(analysis.row_blockers) or "it pairs with a lane elsewhere"
            raise NotWidened(f"program id '{pid}' is used other than as a coordinate with its lane ({why})")
    if len(rows) > 1:
        raise NotWidened("more than one program id used on its own")
    _check_extra_blocks(analysis, facts, {p: int(f) for p, f in factors.items() if p not in rows and f > 1})
    return _Rewrite(analysis, factors, schedule.num_warps, rows).run()


def _check_extra_blocks(analysis: Analysis, facts: Facts, factors: dict[str, int]) -> None:
    """Blocks past the grid (the last program's) must neither read nor write."""
    for pid, f in factors.items():
        g = E.fold(facts.grid[pid])
        if isinstance(g, E.Const) and int(g.value) % f == 0:
            continue
        t = facts.tile[pid]
        for index, mask in analysis.accesses:
            coords = [i for i in index if pid in {v.name for v in E.free_vars(E.resolve(i, analysis.values))}]
            if not coords:
                continue
            terms = E.conjuncts(E.resolve(mask, analysis.values)) if mask is not None else []
            # a term bounding the block's coordinate masks the whole access off past the grid, whichever
            # index it reads (``x.at(2 * (bl # l) + k - 3)`` under ``if ((bl # l) < L)``)
            if any(isinstance(term, E.Bin) and _bounds_block(term.lhs, term, pid, t, g, facts) for term in terms):
                continue
            for c in coords:
                c = E.fold(unspread(E.resolve(c, analysis.values)))  # an address broadcast over lanes that share it
                if not any(_bounds_block(c, term, pid, t, g, facts) for term in terms):
                    raise NotWidened(f"an access along '{pid}' not masked within the grid's blocks")
        for desc, coords in analysis.tma_stores:  # a box past the tensor's end stores nothing
            arg = analysis.kernel.arg(desc)
            assert isinstance(arg, N.Descriptor)
            tensor = next(a for a in analysis.kernel.args if isinstance(a, N.Pointer) and a.tensor == arg.tensor)
            for d, c in enumerate(coords):
                if pid not in {v.name for v in E.free_vars(c)}:
                    continue
                terms = E.linear(c, [pid])
                if terms is None or not E.nonneg(terms[1]) or not _within(tensor.extents[d], g, t):
                    raise NotWidened(f"a TMA store along '{pid}' that the grid's blocks do not bound")


def _kernel_expr(host: E.Expr, kernel: N.Kernel) -> E.Expr | None:
    """A grid extent as an expression of the kernel's own arguments (None where it is not one)."""
    scalars = {a.name for a in kernel.args if isinstance(a, N.Scalar)}
    g = E.fold(host)
    return g if all(v.name in scalars for v in E.free_vars(g)) else None


def _bounds_block(coord: E.Expr, term: E.Expr, pid: str, t: int, grid: E.Expr, facts: Facts) -> bool:
    """``term`` is ``coord < X`` with ``X <= grid * t``, and ``coord`` is ``pid * t + lane + r``
    with ``r >= 0``: the term is false on every block ``pid >= grid``."""
    if not (isinstance(term, E.Bin) and term.op == "<" and E.same(term.lhs, coord)):
        return False
    lanes = [n for n, pids in facts.pairs.items() if n and pid in pids]
    terms = E.linear(coord, [pid, *lanes])
    if terms is None or terms[0].get(pid) != t or any(terms[0].get(x, 0) not in (0, 1) for x in lanes):
        return False
    if not E.nonneg(terms[1]):
        return False
    return _within(term.rhs, grid, t)


def _within(bound: E.Expr, grid: E.Expr, t: int) -> bool:
    """``bound <= grid * t`` for every value of the sizes (``grid = cdiv(bound, t')``, ``t' <= t``)."""
    if isinstance(grid, E.Const) and isinstance(bound, E.Const):
        return int(bound.value) <= int(grid.value) * t
    return (
        isinstance(grid, E.CDiv)
        and isinstance(grid.rhs, E.Const)
        and int(grid.rhs.value) <= t
        and E.same(grid.lhs, bound)
    )


class _Rewrite:
    def __init__(self, analysis: Analysis, factors: dict[str, int], num_warps: int, rows: dict[str, int]) -> None:
        kernel, facts, boxes = analysis.kernel, analysis.facts, analysis.boxes
        self.kernel = kernel
        self.analysis = analysis
        self.renamed: dict[str, str] = {}  # descriptors and their flags whose box grows
        self.args = [self.descriptor(a, boxes[a.name], factors) if a.name in boxes else a for a in kernel.args]
        self.args = [dataclasses.replace(a, name=self.renamed[a.name]) if isinstance(a, N.Constexpr) and a.name in self.renamed else a for a in self.args]  # fmt: skip
        self.facts = facts
        self.factors = factors
        self.num_warps = num_warps
        self.env: dict[str, E.Expr] = {}  # old variable name -> its new value (a var of a new shape)
        self.variants: dict[tuple[str, Fraction], E.Var] = {}  # (lane, factor) -> the widened lane
        self.taken = {v.name for s in N.walk(kernel.body) for v in N.defines(s)} | {a.name for a in kernel.args}
        self.pids: dict[str, E.Var] = {}
        self.grid: list[E.Expr] = []
        for p, g in zip(kernel.program_ids, kernel.grid, strict=True):
            f = factors.get(p.name, 1)
            new_g = _cdiv(g, f)
            hi = int(new_g.value) - 1 if isinstance(new_g, E.Const) else None
            self.pids[p.name] = dataclasses.replace(p, hi=hi if f != 1 else p.hi)
            self.grid.append(new_g)
        self.prelude: list[N.Stmt] = []
        self.row: tuple[str, E.Expr, E.Var, E.Expr] | None = None  # (program id, its value, the rows' mask, its value)
        self.let_values: dict[str, E.Expr] = {}  # the rewritten values of lets
        self.row_masks: dict[str, E.Var] = {}
        for pid, f in rows.items():  # one at most: a new leading axis of f rows
            rank = 1 + max((len(v.shape) for st in N.walk(kernel.body) for v in N.defines(st)), default=0)
            lanes = _lane_value(f, 0, rank)
            lane = E.Var(self.fresh(f"{pid}_rows"), "i32", lo=0, hi=f - 1, dims=lanes.shape)
            value = self.pids[pid] * f + lane
            extent = _kernel_expr(facts.grid[pid], kernel)
            assert extent is not None
            ok = E.Var(self.fresh(f"{pid}_ok"), "i1", dims=lane.shape)
            below = E.Bin("<", value, extent)
            self.prelude += [N.Let(lane, lanes, line=kernel.line), N.Let(ok, below, line=kernel.line)]
            self.row = (pid, value, ok, below)

    def fresh(self, name: str) -> str:
        return N.fresh_name(name, self.taken)

    def row_mask(self, mask: E.Var | None) -> tuple[list[N.Stmt], E.Var]:
        """The mask of an access with the rows past the grid's last block masked off too."""
        assert self.row is not None
        ok = self.row[2]
        if mask is None:
            return [], ok
        if mask.name not in self.row_masks:
            # the terms written out, not the masks' names: schedule/interior.py drops implied terms
            # from mask lets, and a let that named another mask would lose it
            value = E.conj([*E.conjuncts(self.let_values[mask.name]), self.row[3]])
            var = E.Var(self.fresh(f"{mask.name}_{self.row[0]}"), "i1", dims=value.shape)
            self.row_masks[mask.name] = var
            return [N.Let(var, value)], var
        return [], self.row_masks[mask.name]

    def uses_row(self, index: tuple[E.Expr, ...]) -> bool:
        assert self.row is not None
        return any(self.row[0] in {v.name for v in E.free_vars(E.resolve(i, self.analysis.values))} for i in index)

    def descriptor(self, a: N.Arg, labels: Labels, factors: dict[str, int]) -> N.Arg:
        """A descriptor whose box grows along the widened axes, renamed for its box (and its flag)."""
        assert isinstance(a, N.Descriptor)
        block = tuple(int(n * factors.get(p, 1)) if p else n for n, p in zip(a.block, labels, strict=True))
        if any(n < 1 or n & (n - 1) for n in block):
            raise NotWidened(f"the descriptor '{a.name}' would take a box of {list(block)}")
        if block == a.block:
            return a
        old, new = "x".join(map(str, a.block)), "x".join(map(str, block))
        name = a.name.replace(f"_desc_{old}", f"_desc_{new}")
        flag = a.flag.replace(old.upper(), new.upper())
        if name == a.name or name in self.renamed.values() and self.renamed.get(a.name) != name:
            raise NotWidened(f"the descriptor '{a.name}' cannot be renamed for its new box")
        self.renamed[a.name] = name
        self.renamed[a.flag] = flag
        return dataclasses.replace(a, name=name, block=block, flag=flag)

    def run(self) -> N.Kernel:
        body = N.without_dead_lets(self.prelude + self.stmts(self.kernel.body))
        tile = " x ".join(str(self.factors.get(p.name, 1)) for p in self.kernel.program_ids)
        what = f"one program per {tile} blocks (widened)"
        if any(f < 1 for f in self.factors.values()):
            what = f"one program per {tile} of a block (split)"
        doc = self.kernel.doc.replace("one program per block", what)
        return dataclasses.replace(
            self.kernel,
            grid=tuple(self.grid),
            program_ids=tuple(self.pids.values()),
            args=self.args,
            body=body,
            num_warps=self.num_warps,
            doc=doc,
        )

    def lane_variant(self, lane: str, factor: Fraction | int) -> E.Var:
        """The lane ``lane`` widened ``factor`` times: the lane itself at 1; its own name where
        every program id it pairs with widens by ``factor``; else ``rows_64``."""
        ax = self.facts.lanes[lane]
        if factor == 1:
            return ax.var
        key = (lane, factor)
        if key not in self.variants:
            n = int(ax.extent * factor)
            uses = {self.factors.get(p, 1) for p in self.facts.pairs.get(lane, set())}
            name = lane if uses == {factor} else self.fresh(f"{lane}_{n}")
            self.variants[key] = E.Var(name, "i32", lo=0, hi=n - 1, dims=_lane_value(n, ax.axis, ax.rank).shape)
        return self.variants[key]

    def stmts(self, body: list[N.Stmt]) -> list[N.Stmt]:
        out: list[N.Stmt] = []
        for s in body:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: N.Stmt) -> list[N.Stmt]:
        line = s.line
        if isinstance(s, N.Let) and s.var.name in self.facts.lanes:
            lane = self.facts.lanes[s.var.name]
            factors = sorted({self.factors.get(p, 1) for p in self.facts.pairs.get(lane.var.name, set())}) or [1]
            out: list[N.Stmt] = []
            for f in factors:
                v = self.lane_variant(lane.var.name, f)
                out.append(s if f == 1 else N.Let(v, _lane_value(v.shape[lane.axis], lane.axis, lane.rank), line=line))
            return out
        if isinstance(s, N.Let):
            value = self.expr(s.value)
            var = dataclasses.replace(s.var, dims=value.shape)
            self.env[s.var.name] = var
            self.let_values[s.var.name] = value
            return [N.Let(var, value, line=line)]
        if isinstance(s, N.Assign):
            value = self.expr(s.value)
            var = self.env.get(s.var.name, s.var)
            assert isinstance(var, E.Var)
            if var.shape != value.shape and value.shape:
                raise NotWidened("a re-bound variable whose shape changes")
            return [N.Assign(var, value, line=line)]
        if isinstance(s, N.Load):
            index = tuple(self.expr(i) for i in s.index)
            mask, other, before, nan = self.mask(s.mask), s.other, [], s.nan_outside
            if self.row is not None and self.uses_row(s.index):
                nan = nan and mask is not None  # rows past the grid are no data outside a tensor
                before, mask = self.row_mask(mask)
                other = other if other is not None else (0 if E.is_int(self.pointer(s.base).dtype) else 0.0)
            var = dataclasses.replace(s.var, dims=E.broadcast(mask.shape if mask is not None else (), *(i.shape for i in index)))  # fmt: skip
            self.env[s.var.name] = var
            return [*before, dataclasses.replace(s, var=var, index=index, mask=mask, other=other, nan_outside=nan)]
        if isinstance(s, N.Store):
            index = tuple(self.expr(i) for i in s.index)
            value = self.expr(s.value)
            mask, before = self.mask(s.mask), []
            if self.row is not None:
                before, mask = self.row_mask(mask)
            where = E.broadcast(*(i.shape for i in index), mask.shape if mask is not None else ())
            if E.broadcast(value.shape, where) != where:
                raise NotWidened("a stored value wider than its index")
            if self.row is not None and where != E.broadcast(*(i.shape for i in index)):
                raise NotWidened("a store whose index does not run along the widened rows")
            return [*before, dataclasses.replace(s, index=index, value=value, mask=mask)]
        if isinstance(s, N.Atomic):
            index = tuple(self.expr(i) for i in s.index)
            result = s.result
            if result is not None:
                result = dataclasses.replace(result, dims=E.broadcast(*(i.shape for i in index)))
                self.env[s.result.name] = result  # type: ignore[union-attr]
            return [
                dataclasses.replace(s, index=index, value=self.expr(s.value), mask=self.mask(s.mask), result=result)
            ]
        if isinstance(s, N.For):
            body = self.stmts(s.body)
            carried = tuple(self.env.get(v.name, v) for v in s.carried)
            return [dataclasses.replace(s, start=self.expr(s.start), stop=self.expr(s.stop), step=self.expr(s.step), body=body, carried=carried)]  # type: ignore[arg-type]  # fmt: skip
        if isinstance(s, N.If):
            return [N.If(self.expr(s.cond), self.stmts(s.then), self.stmts(s.orelse), line=line)]
        if isinstance(s, N.TmaLoad):
            (fallback,) = self.stmt(s.fallback)
            assert isinstance(fallback, N.Load)
            coords = tuple(self.expr(c) for c in s.coords)
            desc, flag = self.renamed.get(s.desc, s.desc), self.renamed.get(s.flag, s.flag)
            return [dataclasses.replace(s, var=fallback.var, desc=desc, coords=coords, fallback=fallback, flag=flag)]
        if isinstance(s, N.TmaStore):
            (fallback,) = self.stmt(s.fallback)
            assert isinstance(fallback, N.Store)
            coords = tuple(self.expr(c) for c in s.coords)
            desc, flag = self.renamed.get(s.desc, s.desc), self.renamed.get(s.flag, s.flag)
            value = self.expr(s.value)
            return [dataclasses.replace(s, desc=desc, coords=coords, value=value, fallback=fallback, flag=flag)]
        raise NotWidened(f"a {type(s).__name__} statement")

    def pointer(self, base: str) -> N.Pointer:
        arg = self.kernel.arg(base)
        assert isinstance(arg, N.Pointer)
        return arg

    def mask(self, m: E.Var | None) -> E.Var | None:
        if m is None:
            return None
        new = self.env.get(m.name, m)
        assert isinstance(new, E.Var)
        return new

    def expr(self, e: E.Expr) -> E.Expr:
        """``e`` rewritten the way :meth:`Analysis.expr` read it: each affine coordinate with its
        program id times the factor and its lane widened; other variables at their new shapes."""
        try:
            return self.rewrite(e)
        except (E.ShapeError, ValueError) as err:  # ValueError: a lifted value of another rank
            raise NotWidened(f"tiles that no longer broadcast ({err})") from err

    def rewrite(self, e: E.Expr) -> E.Expr:
        if isinstance(e, E.Reduce) and e.bound:
            # a loop's bound over the lanes (lift/loops.py lane_range): over the program's new lanes,
            # every axis of them (a new leading axis of rows too)
            inner: E.Expr = e
            while isinstance(inner, E.Reduce) and inner.bound:
                inner = inner.value
            value = self.rewrite(inner)
            for _ in value.shape:
                value = E.Reduce(e.op, value, 0, bound=True)
            return value
        if isinstance(e, E.Full):
            return self.full(e)
        if e.children() and any(isinstance(x, E.Full) for x in e.walk()):
            return dataclasses.replace(e, **self.children(e))  # type: ignore[type-var]
        names = {v.name for v in E.free_vars(e)}
        env: dict[str, E.Expr] = {n: self.env[n] for n in names if n in self.env}
        leaves = names & (self.pids.keys() | self.facts.lanes.keys())
        if leaves:
            paired = pairing(e, self.facts.lanes, set(self.pids))
            if paired is None and e.children():
                return dataclasses.replace(e, **self.children(e))  # type: ignore[type-var]
            if paired is not None and any(self.factors.get(p, 1) < 1 for p in paired[0].values()):
                return self.split(e, paired[0], env)
            for lane, pid in (paired[0] if paired is not None else {}).items():
                env[lane] = self.lane_variant(lane, self.factors.get(pid, 1))
            for pid in leaves & self.pids.keys():
                f = self.factors.get(pid, 1)
                if self.row is not None and pid == self.row[0]:
                    env[pid] = self.row[1]
                else:
                    env[pid] = self.pids[pid] * int(f) if f > 1 else self.pids[pid]
        return E.substitute(e, env) if env else e

    def split(self, e: E.Expr, pairs: dict[str, str], env: dict[str, E.Expr]) -> E.Expr:
        """An affine coordinate ``c * (b * T + lane) + rest`` of a split axis, rewritten as ``c * (b' *
        T' + lane') + rest`` (``T' = T * f``): ``b * T + lane`` is one number, whichever program and
        lane hold it."""
        names = [*pairs, *self.pids]
        terms = E.linear_terms(e, names)
        assert terms is not None  # pairing() read it as affine in them
        coefs, rest = terms
        out = E.substitute(rest, env) if env else rest
        for name, c in coefs.items():
            if name in pairs:
                term: E.Expr = c * self.lane_variant(name, self.factors.get(pairs[name], 1))
            else:
                f = self.factors.get(name, 1)
                scaled = E.fold(c * E.Const(f.numerator)) if f != 1 else c
                if f != 1 and f.denominator != 1:
                    coef = E.fold(c)
                    if not (isinstance(coef, E.Const) and int(coef.value) % f.denominator == 0):
                        raise NotWidened(f"a coordinate whose program id's coefficient {coef} does not split")
                    scaled = E.Const(int(coef.value) * f.numerator // f.denominator)
                term = scaled * self.pids[name]
            out = E.fold(out + term)
        return out

    def full(self, e: E.Full) -> E.Expr:
        """A constant tile at its new shape: each axis grows with the lanes along it (the factor of
        the program ids they pair with), and a new axis of rows leads where rows widen."""
        dims = list(e.dims)
        for d, n in enumerate(e.dims):
            if n == 1:
                continue
            lanes = [x for x in self.facts.lanes.values() if x.extent == n and len(dims) - x.rank + x.axis == d]
            grow = {self.factors.get(p, 1) for x in lanes for p in self.facts.pairs.get(x.var.name, set()) or {""}}
            if not lanes or len(grow) != 1:
                raise NotWidened(f"a tl.full tile whose axis {d} follows no one lane")
            dims[d] = int(n * grow.pop())
        if self.row is not None:
            rank = len(self.row[2].shape)
            if len(dims) >= rank:
                raise NotWidened("a tl.full tile of the rows' rank")
            dims = [self.row[2].shape[0], *([1] * (rank - 1 - len(dims))), *dims]
        return dataclasses.replace(e, dims=tuple(dims))

    def children(self, e: E.Expr) -> dict[str, object]:
        out: dict[str, object] = {}
        for f in dataclasses.fields(e):  # type: ignore[arg-type]
            v = getattr(e, f.name)
            if isinstance(v, E.Expr):
                out[f.name] = self.rewrite(v)
            elif isinstance(v, tuple) and v and all(isinstance(x, E.Expr) for x in v):
                out[f.name] = tuple(self.rewrite(x) for x in v)
        return out


def _lane_value(n: int, axis: int, rank: int) -> E.Expr:
    """``tl.arange(0, n)`` along ``axis`` of a rank-``rank`` tile."""
    return E.Arange(n) if rank == 1 else E.Lift(E.Arange(n), rank, (axis,))


def _cdiv(g: E.Expr, f: Fraction | int) -> E.Expr:
    if f == 1:
        return g
    if f < 1:  # split: every block becomes 1 / f programs
        return E.fold(g * E.Const(int(1 / f)))
    f = int(f)
    if isinstance(g, E.CDiv) and isinstance(g.rhs, E.Const):
        return E.fold(E.CDiv(g.lhs, E.Const(int(g.rhs.value) * f)))
    return E.fold(E.CDiv(g, E.Const(f)))


def _gathers(e: E.Expr) -> bool:
    """A gather along an axis of its own (a warp shuffle, lift/helpers.py)."""
    return isinstance(e, E.Call) and e.fn == "gather"
