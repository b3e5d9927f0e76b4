"""A tile staged through scratch memory and read back by element, forwarded in registers.

A buffer that threads read at positions other than their own (``f = dma.copy x.subspan(32, 64).at(p,
c) => shared; foreach j in [64] { acc += f.data.at(t, j); }``: each thread folds its row of the tile)
lives in scratch memory (lift/scratch.py): the program stores the copied tile there and every step
loads one element a lane back, with barriers between.  Where the program still holds the stored
tile, each such load is an element of that tile: this rewrite replaces the load by the element
taken from the tile in registers (a select along each axis the load fixes,
``tl.sum(tl.where(cols == j, f, 0), axis=1)``: lift/buffers.py reads a buffer's element so), which
schedule/selectfold.py then folds into one reduction of the tile where a loop folds them.

What it proves on the IR (else the load stays):

* the store is at ``b + sum_d s_d * A_d`` with ``A_d`` the arange of axis ``d`` of the
  stored tile (extent ``n_d``) and strides that make the positions distinct (``s_last = 1``,
  ``s_d >= s_{d+1} * n_{d+1}``: dense, or rows padded as in CUDA's ``[32][33]`` transpose tile,
  whose extra column no access reaches): element ``(a_0, ..)`` of the tile is at ``b + sum s_d *
  a_d``;
* where the store is masked, the load's mask holds every term of the store's at the element each
  lane reads (the lanes of the store put as the load's: a transpose written under ``r < M && c <
  N`` and read under ``c < N && r < M``), so every element read was written; a load may be
  masked where the store is not;
* the load comes after the store in the same body or in loops nested in it, and no
  store, atomic or other write to the area comes between them (none in the loops around the load
  that are inside that body, and none after the store in that body before the load), nor any
  re-binding of a name the stored value reads (an accumulator stored, then advanced);
* its index is ``b + sum_d s_d * u_d`` with the same ``b`` (equal as expressions), each ``u_d``
  either a scalar whose bounds lie in ``[0, n_d)`` (a loop counter) or the arange of extent
  ``n_d`` that the load's own tile runs along (a lane): then its element is the tile's at
  ``(u_0, ..)``, taken exactly (a sum of one element and zeros).

A load at a lane shifted by a counter (``s.data.at(0, n + k)``: a depthwise convolution's taps over a
halo window) is no element of a tile in registers; where the staged tile is the load of a tensor the
kernel never writes, nothing wrote memory between that load and this one, and the position read lies
in the tile and was stored (the lanes' and counters' bounds, or the load's mask), it is that tensor's
load at the element the position came from: the tile's index and mask with its lanes put as the
position (:meth:`_Forward.reload`; the staging load is dropped once nothing reads it).  A store whose
mask bounds a lane (``cols < 34`` of a tile of 64) stores only those positions along its axis.

Where no load of the area is left, its stores and its scratch argument are gone, and the block
barriers are derived again from the accesses that remain (lift/hazards.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..lift.buffers import SUM_TYPES
from ..lift.hazards import fence_hazards
from ..tir import expr as E
from ..tir import nodes as N


class NotForwarded(Exception):
    """A load the proof does not cover."""


@dataclass(frozen=True)
class Staged:
    """A tile stored into a scratch area: its value, the base and each axis's stride."""

    value: E.Expr
    base: E.Expr
    axes: tuple[tuple[E.Expr, int, int], ...]  # (the arange's value, stride, extent) per axis of the tile
    mask: E.Expr | None = None  # the store's mask, its lets put in (but the lanes'): the elements written
    source: N.Load | None = None  # the load of a tensor the stored value is, where nothing wrote memory since


def forward_scratch(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with the loads of staged tiles forwarded (see the module docstring); the kernel
    itself where none is."""
    scratch = {a.name for a in kernel.args if isinstance(a, N.Scratch)}
    if not scratch:
        return kernel
    lets = {s.var.name: s.value for s in N.walk(kernel.body) if isinstance(s, N.Let)}
    walker = _Forward(scratch, lets, kernel)
    body = walker.block(kernel.body, {}, {})
    if not walker.forwarded:
        return kernel
    loaded = {s.base for s in N.walk(body) if isinstance(s, (N.Load, N.Atomic))}
    dead = scratch - loaded
    body = N.without(body, lambda s: isinstance(s, N.Store) and s.base in dead)
    body = N.without(body, lambda s: isinstance(s, N.Barrier))
    if walker.reloaded:  # the staged loads of tensors nothing reads any more (their taps read the tensor)
        read = {v.name for x in N.walk(body) for e in N.exprs_of(x) for v in E.free_vars(e)}
        body = N.without(body, lambda s: isinstance(s, N.Load) and s.var.name in walker.reloaded - read)
    args = [a for a in kernel.args if a.name not in dead]
    doc = kernel.doc + " Tiles it stages through scratch memory are read in registers (schedule/forward.py)."
    out = dataclasses.replace(kernel, body=N.without_dead_lets(body), args=args, doc=doc)
    fence_hazards(out)
    return out


class _Forward:
    def __init__(self, scratch: set[str], lets: dict[str, E.Expr], kernel: N.Kernel | None = None) -> None:
        self.scratch = scratch
        self.lets = lets
        self.values = {n: v for n, v in lets.items() if not E.is_lane(v)}  # what resolve puts in
        self.forwarded = 0
        self.lifted: dict[str, tuple[E.Expr, E.Expr]] = {}  # lift_lanes's names
        body = kernel.body if kernel is not None else []
        self.vars = {s.var.name: s.var for s in N.walk(body) if isinstance(s, (N.Let, N.For))}
        self.assigned = {s.var.name for s in N.walk(body) if isinstance(s, N.Assign)}
        self.pointers = {a.name: a for a in kernel.args if isinstance(a, N.Pointer)} if kernel is not None else {}
        written = {b for b in _written(body)} - scratch
        self.written_tensors = {self.pointers[b].tensor for b in written if b in self.pointers}
        self.taken = {v.name for x in N.walk(body) for v in N.defines(x)}
        self.taken |= {a.name for a in kernel.args} if kernel is not None else set()
        self.sources: dict[str, N.Load] = {}  # loads of tensors since the last write to memory
        self.reloaded: set[str] = set()  # staged loads whose taps read their tensor again

    def block(
        self, body: list[N.Stmt], staged: dict[str, Staged], ranges: dict[str, tuple[E.Expr, E.Expr]]
    ) -> list[N.Stmt]:
        """``body`` with its loads forwarded from ``staged`` (the areas' tiles at its start);
        ``ranges``: the loop counters around it and their bounds."""
        staged = dict(staged)
        out: list[N.Stmt] = []
        for s in body:
            if isinstance(s, N.Load) and s.base in staged:
                try:
                    out.append(N.Let(s.var, self.element(s, staged[s.base], ranges), line=s.line))
                    self.forwarded += 1
                    continue
                except NotForwarded:
                    pass
                try:
                    out.extend(self.reload(s, staged[s.base], ranges))
                    self.forwarded += 1
                    continue
                except NotForwarded:
                    pass
            if isinstance(s, N.Load) and s.base in self.pointers:
                self.sources[s.var.name] = s
            if _writes_memory(s, self.scratch):  # a tensor's staged value may no longer be what it holds
                self.sources.clear()
                staged = {k: dataclasses.replace(v, source=None) for k, v in staged.items()}
            if isinstance(s, N.For):
                written, bound = _written(s.body) & self.scratch, _rebound(s)
                inner = {k: v for k, v in staged.items() if k not in written and not (_uses(v) & bound)}
                inner_ranges = {**ranges, s.var.name: (s.start, s.stop)}
                if isinstance(s.step, E.Const) and int(s.step.value) > 0:
                    s = dataclasses.replace(s, body=self.block(s.body, inner, inner_ranges))
                staged = {k: v for k, v in staged.items() if k not in written and not (_uses(v) & bound)}
            elif isinstance(s, N.While):  # (not forwarded inside; what it writes or re-binds no longer staged)
                written, bound = _written(s.body) & self.scratch, _rebound(s)
                staged = {k: v for k, v in staged.items() if k not in written and not (_uses(v) & bound)}
            elif isinstance(s, N.If):
                written, bound = (_written(s.then) | _written(s.orelse)) & self.scratch, _rebound(s)
                s = dataclasses.replace(
                    s, then=self.block(s.then, staged, ranges), orelse=self.block(s.orelse, staged, ranges)
                )
                staged = {k: v for k, v in staged.items() if k not in written and not (_uses(v) & bound)}
            elif isinstance(s, N.Assign):  # the stored tile's value no longer what a name holds
                staged = {k: v for k, v in staged.items() if s.var.name not in _uses(v)}
            elif isinstance(s, N.Store) and s.base in self.scratch:
                staged.pop(s.base, None)
                got = self.staging(s)
                if got is not None:
                    source = self.sources.get(s.value.name) if isinstance(s.value, E.Var) else None
                    staged[s.base] = dataclasses.replace(got, source=source)
            elif isinstance(s, (N.Atomic, N.TmaStore)):
                base = s.base if isinstance(s, N.Atomic) else s.fallback.base
                staged.pop(base, None)
            out.append(s)
        return out

    def resolve(self, e: E.Expr) -> E.Expr:
        """``e`` with its lets substituted, but for the names of lanes (aranges)."""
        return E.resolve(e, self.values)

    def lane(self, v: E.Var) -> E.Expr | None:
        if v.name in self.lifted:
            return self.lifted[v.name][1]
        value = self.lets.get(v.name)
        return value if value is not None and E.is_lane(value) else None

    def lift_lanes(self, index: E.Expr, rank: int) -> E.Expr:
        """``index`` with each lane of fewer axes than ``rank`` placed onto an axis (``lane_id[:, None,
        None]``: a thread's copies, lanes fastest) as a name of its own, whose lane value is the arange so
        placed (``self.lifted``: that name -> (the placement as written, its lane value))."""

        def walk(e: E.Expr) -> E.Expr:
            if isinstance(e, E.Lift) and e.rank == rank and isinstance(e.value, E.Var):
                value = self.lets.get(e.value.name)
                if value is not None and isinstance(value, E.Arange):
                    name = f"{e.value.name}@{'_'.join(map(str, e.dims))}"
                    self.lifted[name] = (e, E.Lift(value, rank, e.dims))
                    return E.Var(name, "i32", dims=e.shape)
            return E.map_children(e, walk)

        return walk(index)

    def staging(self, s: N.Store) -> Staged | None:
        """The staged tile of a store at ``b + sum s_d * A_d`` (distinct positions), with its mask."""
        if len(s.index) != 1 or (s.mask is not None and s.mask.name not in self.lets):
            return None
        index = self.resolve(s.index[0])
        shape = index.shape
        if not shape or s.value.shape != shape or any(not isinstance(n, int) for n in shape):
            return None
        index = self.lift_lanes(index, len(shape))
        names = [v.name for v in E.free_vars(index) if self.lane(v) is not None]
        terms = E.linear(index, names)
        if terms is None or terms[1].shape:
            return None
        axes: list[tuple[E.Expr, int, int] | None] = [None] * len(shape)
        for name, stride in terms[0].items():
            lane = self.lane(E.Var(name))
            assert lane is not None
            if len(lane.shape) != len(shape):
                return None
            d = _axis(lane)
            if axes[d] is not None or lane.shape[d] != shape[d]:
                return None
            placed = self.lifted[name][0] if name in self.lifted else E.Var(name, "i32", dims=lane.shape)
            axes[d] = (placed, stride, int(shape[d]))  # type: ignore[arg-type]
        if any(a is None for a in axes):
            return None
        mask = self.resolve(self.lets[s.mask.name]) if s.mask is not None else None
        # the elements stored along each axis: its extent, or fewer where the mask bounds its lane (a
        # halo window of 34 columns in a tile of 64, ``cols < 34``: reads are proven within it)
        stored = {id(a): a[2] for a in axes if a is not None}
        for term in E.conjuncts(mask) if mask is not None else []:
            if isinstance(term, E.Bin) and term.op == "<" and isinstance(term.rhs, E.Const):
                for a in axes:
                    if a is not None and isinstance(a[0], E.Var) and E.same(term.lhs, a[0]):
                        stored[id(a)] = max(1, min(stored[id(a)], int(term.rhs.value)))
        # the axes of more than one element, by stride: the least has stride 1, each other one at least the
        # span of those before it (the positions distinct), in any order of the tile's axes (a thread's
        # copies of a local buffer are stored lanes fastest: lift/lanecopies.py)
        least = 1
        for i, a in enumerate(sorted((a for a in axes if a is not None and a[2] > 1), key=lambda a: a[1])):
            if a[1] < least or (i == 0 and a[1] != 1):
                return None
            least = a[1] * stored[id(a)]
        return Staged(s.value, terms[1], tuple(a for a in axes if a is not None), mask)

    def element(self, s: N.Load, staged: Staged, ranges: dict[str, tuple[E.Expr, E.Expr]]) -> E.Expr:
        """The element of the staged tile the load reads (NotForwarded where the proof fails)."""
        if len(s.index) != 1 or (s.mask is not None and s.mask.name not in self.lets):
            raise NotForwarded("a load under a mask of unknown value")
        if staged.mask is not None and s.mask is None:
            raise NotForwarded("an unmasked load of a tile stored under a mask")
        # (a tile of zeros added to broadcast the index over the load's lanes: the element the same)
        index = _without_zero_tiles(self.resolve(s.index[0]))
        if s.var.shape:  # (lanes placed onto an axis, ``lane_id[:, None]``: the names staging gave them)
            index = self.lift_lanes(index, len(s.var.shape))
        coefs, strides = self.position(index, staged, ranges)
        picks: dict[int, E.Expr] = {}
        kept: dict[int, E.Expr] = {}  # tile axis -> the load's lane along it
        for name, coef in coefs.items():
            d = strides.get(coef)
            if d is None or d in picks or d in kept:
                raise NotForwarded("a position that is not one element of the tile")
            n = staged.axes[d][2]
            lane = self.lane(E.Var(name))
            if lane is not None:
                if (lane.value if isinstance(lane, E.Lift) else lane) != E.Arange(n):
                    raise NotForwarded("a lane of another extent")
                kept[d] = E.Var(name, "i32", dims=lane.shape)
            else:
                lo, hi = ranges[name]
                (low, _), (_, high) = E.bounds(lo), E.bounds(hi)
                if low is None or high is None or low < 0 or high > n:
                    raise NotForwarded("a counter that may leave the tile")
                picks[d] = E.Var(name, "i32")
        # axes of one element the load does not place (a thread's copy of one row: [lanes, 1, n]): their
        # only element, the axis squeezed out of the tile (the selects then along the tile's own axes)
        drop = [d for d, a in enumerate(staged.axes) if a[2] == 1 and d not in kept and d not in picks]
        order = sorted(kept)
        rank = len(s.var.shape)
        places = [_axis(self.lane(kept[d]) or kept[d]) + rank - len(kept[d].shape) for d in order]  # type: ignore[arg-type]
        if staged.mask is not None:
            zeros = {d: E.Const(0) for d in drop}
            self.written(s, staged, kept, {**picks, **zeros}, dict(zip(order, places, strict=True)))
        value: E.Expr = staged.value
        along = {d: a[0] for d, a in enumerate(staged.axes)}
        if drop:
            stay = [d for d in range(len(staged.axes)) if d not in drop]
            new = {d: i for i, d in enumerate(stay)}
            value = E.Reshape(value, tuple(staged.value.shape[d] for d in stay))
            along = {
                new[d]: E.Arange(staged.axes[d][2])
                if len(stay) == 1
                else E.Lift(E.Arange(staged.axes[d][2]), len(stay), (new[d],))
                for d in stay
            }
            picks = {new[d]: v for d, v in picks.items()}
            kept = {new[d]: v for d, v in kept.items()}
            order = sorted(kept)
        wide = SUM_TYPES.get(value.dtype)
        if picks:
            hit = E.conj(E.Bin("==", along[d], picks[d]) for d in sorted(picks))
            tile = E.Cast(value, wide) if wide else value
            value = E.Where(hit, tile, E.Full(value.shape, 0, wide or value.dtype))
            for d in sorted(picks, reverse=True):
                value = E.Reduce("sum", value, d)
            if wide:
                value = E.Cast(value, staged.value.dtype)
        # the kept axes, in the tile's order, must be the load's lanes in its order
        if len(set(places)) != len(places):
            raise NotForwarded("two axes of the tile along one axis of the load")
        perm = sorted(range(len(order)), key=lambda i: places[i])
        if perm != list(range(len(order))):
            value = E.Permute(value, tuple(perm))
        if order and len(places) != rank:
            value = E.Lift(value, rank, tuple(sorted(places)))
        value = E.fold(value)
        if value.shape != s.var.shape and value.dtype == s.var.type and E.fits_in(value.shape, s.var.shape):
            # the same element for every lane of an axis the load's index broadcast over: the value put
            # there as it is (a select of a tile of trues, no arithmetic on it)
            value = E.Where(E.Full(s.var.shape, 1, "i1"), value, E.Full(s.var.shape, 0, value.dtype))
        if value.shape != s.var.shape or value.dtype != s.var.type:
            raise NotForwarded("an element of another shape or type")
        if s.mask is not None and s.other is not None:  # what the load gives where its mask is off
            value = E.Where(s.mask, value, E.Full(s.var.shape, s.other, s.var.type))
        return value

    def position(
        self, index: E.Expr, staged: Staged, ranges: dict[str, tuple[E.Expr, E.Expr]]
    ) -> tuple[dict[str, int], dict[int, int]]:
        """A load's flat ``index`` into the staged tile as the coefficients of its lanes and counters over
        the tile's base, and the tile's axes of more than one element by their strides (NotForwarded
        where the index is not so)."""
        names = [v.name for v in E.free_vars(index) if self.lane(v) is not None or v.name in ranges]
        terms = E.linear(index, names)
        if terms is None or not E.same(terms[1], staged.base):
            raise NotForwarded("a load at another base")
        return terms[0], {a[1]: d for d, a in enumerate(staged.axes) if a[2] > 1}

    def reload(self, s: N.Load, staged: Staged, ranges: dict[str, tuple[E.Expr, E.Expr]]) -> list[N.Stmt]:
        """The load of a staged tile's element that :meth:`element` cannot take from registers (a lane
        shifted by a counter, ``s.data.at(0, n + k)``: a depthwise convolution's taps), as a load of the
        tensor the tile was copied from, at the element the tile's position came from: where the tile
        is that tensor's load (its index and mask over the tile's lanes), nothing wrote memory since and
        the kernel never writes that tensor, every position read lies within the tile and was stored
        (the store's mask holds there, by the bounds of the lanes and counters or by the load's mask).
        The statements replacing the load; NotForwarded where the proof fails."""
        src = staged.source
        if src is None or self.pointers[src.base].tensor in self.written_tensors:
            raise NotForwarded("a staged tile that is not a load of a tensor the kernel only reads")
        if len(s.index) != 1 or (s.mask is not None and s.mask.name not in self.lets):
            raise NotForwarded("a load under a mask of unknown value")
        if src.mask is not None and src.mask.name not in self.lets:
            raise NotForwarded("a tensor's load under a mask of unknown value")
        index = _without_zero_tiles(self.resolve(s.index[0]))
        coefs, strides = self.position(index, staged, ranges)
        at: dict[int, E.Expr] = {}
        for name, coef in coefs.items():
            d = strides.get(coef)
            if d is None:
                raise NotForwarded("a position that is not one element of the tile")
            v = self.bounded(name, ranges)
            at[d] = E.Bin("+", at[d], v) if d in at else v
        env: dict[str, E.Expr] = {}
        for d, (lane, _, n) in enumerate(staged.axes):
            u = at.get(d, E.Const(0))
            lo, hi = E.bounds(E.fold(u))
            if lo is None or hi is None or lo < 0 or hi >= n:
                raise NotForwarded("a position that may leave the tile")
            if not isinstance(lane, E.Var):
                raise NotForwarded("a tile stored along lanes placed onto its axes")
            env[lane.name] = u
        reads = E.conjuncts(E.fold(self.resolve(self.lets[s.mask.name]))) if s.mask is not None else []
        if staged.mask is not None:  # every position read was stored
            for term in E.conjuncts(E.fold(E.substitute(staged.mask, env))):
                if not (isinstance(term, E.Const) and term.value) and not any(_same_test(term, t) for t in reads):
                    raise NotForwarded("a load that may read an element the masked store did not write")
        parts = [self.resolve(i) for i in src.index]
        if src.mask is not None:
            parts.append(self.resolve(self.lets[src.mask.name]))
        free = {v.name for e in parts for v in E.free_vars(e)}
        lanes = {n for n in free if self.lane(E.Var(n)) is not None}
        if lanes - env.keys() or free & self.assigned:
            raise NotForwarded("a tensor's load along other lanes, or at a re-bound name")
        index_at = tuple(E.fold(E.substitute(e, env)) for e in parts[: len(src.index)])
        terms_at = E.conjuncts(E.fold(E.substitute(parts[-1], env))) if src.mask is not None else []
        mask_terms = [t for t in [*terms_at, *reads] if not (isinstance(t, E.Const) and t.value)]
        other = src.other if src.mask is not None else s.other
        if s.mask is not None and src.mask is not None and s.other is not None and s.other != src.other:
            raise NotForwarded("a load whose fill is not the tensor's")
        mask = E.fold(E.conj(mask_terms)) if mask_terms else None
        shape = E.broadcast(*(i.shape for i in index_at), *([mask.shape] if mask is not None else []))
        if shape != s.var.shape or src.var.type != s.var.type:
            raise NotForwarded("an element of another shape or type")
        out: list[N.Stmt] = []
        mask_var = None
        if mask is not None:
            mask_var = E.Var(self.fresh(f"{s.var.name}_mask"), "i1", dims=mask.shape)
            out.append(N.Let(mask_var, mask, line=s.line))
        out.append(
            N.Load(
                s.var,
                src.base,
                index_at,
                mask_var,
                other if mask_var is not None else None,
                src.nan_outside and mask_var is not None,
                line=s.line,
            )
        )
        self.reloaded.add(src.var.name)
        return out

    def fresh(self, name: str) -> str:
        return N.fresh_name(name, self.taken)

    def bounded(self, name: str, ranges: dict[str, tuple[E.Expr, E.Expr]]) -> E.Expr:
        """A lane or loop counter of a load's index as a variable with its bounds."""
        lane = self.lane(E.Var(name))
        if lane is not None:
            lo, hi = E.bounds(lane)
            return E.Var(name, "i32", lo=lo, hi=hi, dims=lane.shape)
        start, stop = ranges[name]
        (lo, _), (_, hi) = E.bounds(start), E.bounds(stop)
        return E.Var(name, "i32", lo=lo, hi=hi - 1 if hi is not None else None)

    def written(
        self,
        s: N.Load,
        staged: Staged,
        kept: dict[int, E.Expr],
        picks: dict[int, E.Expr],
        places: dict[int, int],
    ) -> None:
        """Every element the load reads was written: its mask holds each term of the store's mask
        at the element it reads (the store's lanes put as the load's lanes and counters; the store's
        other values placed on its kept axes, ``r[:, None, None]``, put on the load's axes)."""
        assert staged.mask is not None and s.mask is not None
        env = {}
        placed: list[tuple[E.Expr, E.Expr]] = []  # a lane placed onto an axis as written -> what replaces it
        for d, (lane, _, _) in enumerate(staged.axes):
            got = kept.get(d, picks.get(d))
            if got is None:
                raise NotForwarded("an axis of the masked tile the load does not place")
            if isinstance(lane, E.Var):
                env[lane.name] = got
            else:
                placed.append((lane, got))
        mask = _replaced(staged.mask, placed) if placed else staged.mask
        mapped = E.fold(E.substitute(mask, env))  # type: ignore[arg-type]
        if len(mapped.shape) != len(s.var.shape):
            mapped = E.fold(_placed(mapped, places, len(s.var.shape)))
        reads = E.conjuncts(E.fold(self.resolve(self.lets[s.mask.name])))
        for term in E.conjuncts(mapped):
            if not any(_same_test(term, t) for t in reads):
                raise NotForwarded("a load that may read an element the masked store did not write")


def _without_zero_tiles(e: E.Expr) -> E.Expr:
    """``e`` with the integer tiles of zeros it adds (``.. + tl.zeros([8, 32], tl.int64)``: a broadcast)
    left out."""
    if isinstance(e, E.Bin) and e.op == "+":
        for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(b, E.Full) and E.is_int(b.dtype) and b.value == 0:
                return _without_zero_tiles(a)
        return E.Bin("+", _without_zero_tiles(e.lhs), _without_zero_tiles(e.rhs))
    return e


def _replaced(e: E.Expr, pairs: list[tuple[E.Expr, E.Expr]]) -> E.Expr:
    """``e`` with each node equal to the first of a pair replaced by its second."""
    for old, new in pairs:
        if E.same(e, old):
            return new
    return E.map_children(e, lambda c: _replaced(c, pairs))


def _placed(e: E.Expr, places: dict[int, int], rank: int) -> E.Expr:
    """``e``, a value over the stored tile's axes that varies only along the axes the load keeps,
    as a value over the load's ``rank`` axes (each kept axis at its place): its placements
    (``r[:, None, None]``) moved; NotForwarded where it has another value of the tile's rank."""

    def walk(x: E.Expr) -> E.Expr:
        if isinstance(x, E.Lift):
            dims = [places.get(d) for d, n in zip(x.dims, x.value.shape, strict=True)]
            if any(d is None for d in dims) or dims != sorted(dims):  # type: ignore[type-var]
                raise NotForwarded("a masked store's condition along an axis the load does not keep")
            if len(dims) == rank and dims == list(range(rank)):
                return x.value
            return E.Lift(x.value, rank, tuple(dims))  # type: ignore[arg-type]
        if isinstance(x, E.Var) and x.shape and len(x.shape) != rank:
            raise NotForwarded("a masked store's condition over the tile's axes")
        return E.map_children(x, walk)

    return walk(e)


def _same_test(a: E.Expr, b: E.Expr) -> bool:
    """Whether two terms of a mask test the same thing: equal, or one comparison of operands whose
    differences fold to 0 (``r + 32 * p < M`` and ``32 * p + r < M``)."""
    if E.same(a, b):
        return True
    if not (isinstance(a, E.Bin) and isinstance(b, E.Bin) and a.op == b.op and a.op in ("<", "<=", ">", ">=", "==")):
        return False
    if not all(E.is_int(x.dtype) for x in (a.lhs, a.rhs, b.lhs, b.rhs)):
        return False
    zero = E.Const(0)
    return all(E.same(E.fold(E.Bin("-", x, y)), zero) for x, y in ((a.lhs, b.lhs), (a.rhs, b.rhs)))


def _axis(lane: E.Expr) -> int:
    """The axis a lane value (an arange, lifted) runs along."""
    if isinstance(lane, E.Lift):
        return lane.dims[0]
    return 0


def _uses(staged: Staged) -> set[str]:
    """The names the staged tile's value, base and mask read."""
    parts = (staged.value, staged.base) if staged.mask is None else (staged.value, staged.base, staged.mask)
    return {v.name for e in parts for v in E.free_vars(e)}


def _rebound(s: N.Stmt) -> set[str]:
    """The names a statement (a loop, a branch) re-binds or defines anew inside."""
    out: set[str] = set()
    for x in N.walk([s]):
        if isinstance(x, N.Assign):
            out.add(x.var.name)
        if x is not s:
            out |= {v.name for v in N.defines(x)}
    if isinstance(s, N.For):
        out.add(s.var.name)
    return out


def _writes_memory(s: N.Stmt, scratch: set[str]) -> bool:
    """Whether a statement (or one nested in it) writes a tensor (not a scratch area)."""
    return bool(_written([s]) - scratch)


def _written(body: list[N.Stmt]) -> set[str]:
    out: set[str] = set()
    for s in N.walk(body):
        if isinstance(s, (N.Store, N.Atomic)):
            out.add(s.base)
        elif isinstance(s, N.TmaStore):
            out.add(s.fallback.base)
    return out
