"""A loop that folds the elements of a register tile one a step (``foreach k in [256] { tot +=
part.at(k); }``: the partial sums of a block's threads in a shared buffer; ``foreach j in [64] { acc
+= f.data.at(t, j); }``: each thread folding its row of a staged tile) as one reduction of the tile.

lift/buffers.py (and schedule/forward.py) read the element of a register tile at a position the same
for every lane as the sum of the tile where its coordinate is the position (``tl.sum(tl.where(idx
== k, part, 0))``: Triton has no scalar read of a register tile), so such a loop runs a reduction of
the whole tile per element: 256 of them for a block of 256 threads' partial sums.  The rewrite
replaces the loop by one reduction where the IR shows (else the loop stays as written):

* the loop steps by 1 over ``[a, b)``, bounds the same for every lane (scalars);
* its body is ``let``s and folds (as in schedule/foldloops.py: ``acc := op(acc, f)`` or ``acc :=
  where(g, op(acc, f), acc)``, ``op`` one of ``+``, ``max``, ``min``, ``acc`` read nowhere else in
  the loop), and what the loop defines (its counter too) is not read after it, nor by the statements
  of an enclosing loop's body, which run after it in the next iteration;
* ``f`` is an element-wise function ``G`` of selects ``sum(where(c == k + d, T, 0), axis)`` of tiles
  ``T`` (each up to the conversions lift/buffers.py puts around 16-bit tiles, which keep every
  value; placed back along the axis, ``[:, None]``, or not), all along the same axis of the same
  extent ``n`` at the same ``d``, with ``c`` the arange of that axis and ``d`` free of the counter
  ``k``; the rest of ``f`` (and ``g``) is free of ``k`` and does not vary along that axis, or ``k``
  itself (its value ``c - d`` there).

A select is ``T[k + d]`` where ``0 <= k + d < n`` and ``0`` elsewhere, so over ``k`` in ``[a, b)``
the fold is ``op`` over the positions ``c`` in ``[a + d, b + d)`` of ``G`` applied to the whole tiles
along the axis: ``reduce_op(where(a + d <= c < b + d, G(T..), e), axis)`` with ``e`` the identity
of ``op``.  Where ``f`` is one select and ``op`` is ``+``, a position outside the tile adds the
select's ``0``, the identity; otherwise the range must lie within ``[0, n)`` (proved from the bounds
of ``a + d`` and ``b + d``; else refused).  A float ``+`` fold then sums in another order (16-bit
floats in f32): the result moves within the rounding of its type (a tree of additions, at least as
accurate as the loop's running sum).  ``max`` and ``min`` are exact in any order.

The tile's extent may be fixed at launch (a staged row of run-time length ``N``: a ``[1, F_D1]``
buffer, ``F_D1`` the power of two at or above ``N``, runtime/launch.py ``block_extents``): a loop's
end is within it where the launcher computes the end as that size.  A ``[1, n]`` tile's element is
two sums (the one along the axis of extent 1 its only element): folded along ``n``, then along it.

A loop whose body is ``let``s and one store of a function of selects (``foreach j in [N] { y.at(r,
j) = __exp(f.data.at(0, j) - m) / s; }``) is one store of the whole tile where the store's index,
mask and the values free of the counter are the same for every lane, or vary over the lanes along the
tile's other axes (their shape is the tile's without the selected axis: each lane's own row of the
tile, a chunk a thread staged in its local memory, ``q.at(r, c * 128 + k) = f(f.data.at(0, k))``), one
dimension of the index is ``k`` plus what is free of it and the others free of ``k`` (each step of a
lane writes an element of its own, so their order does not matter; two lanes' stores the language
orders in no way, so one store of all of them is one of the orders the loops allow), and the positions
lie inside the tile (a select outside it would store its ``0``): the index at ``k = c - d``, under the
mask there and ``a + d <= c < b + d``, the lanes' values placed along the tile's other axes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from .foldloops import REDUCES, Block, Fold, NotFolded, _fold, _identity, _reads, fold_loops

WIDER = {"f16": {"f16", "f32", "f64"}, "bf16": {"bf16", "f32", "f64"}, "f32": {"f32", "f64"}, "f64": {"f64"}}


def fold_selects(kernel: N.Kernel) -> tuple[N.Kernel, int]:
    """``kernel`` with every loop (at any depth) that the proof admits replaced by its folds'
    reductions, and how many loops were replaced."""
    lets = {s.var.name: s.value for s in N.walk(kernel.body) if isinstance(s, N.Let)}
    count = [0]
    body = _block(kernel.body, [], lets, count, _Within(kernel))
    if not count[0]:
        return kernel, 0
    return dataclasses.replace(kernel, body=N.without_dead_lets(body)), count[0]


def _block(
    body: list[N.Stmt],
    after: list[N.Stmt],
    lets: dict[str, E.Expr],
    count: list[int],
    within: _Within,
    looped: bool = False,
) -> list[N.Stmt]:
    """``body`` rewritten; ``after``: what runs after it, ``looped``: it is a loop's body (its
    statements before one also run after it, in the next iteration)."""
    out: list[N.Stmt] = []
    for i, s in enumerate(body):
        rest = body[i + 1 :] + (body[:i] if looped else []) + after
        if isinstance(s, N.For):
            try:
                out.extend(_rewrite(s, rest, lets, within))
                count[0] += 1
                continue
            except NotFolded:
                s = dataclasses.replace(s, body=_block(s.body, rest, lets, count, within, looped=True))
        elif isinstance(s, N.If):
            s = dataclasses.replace(
                s, then=_block(s.then, rest, lets, count, within), orelse=_block(s.orelse, rest, lets, count, within)
            )
        out.append(s)
    return out


def _rewrite(loop: N.For, after: list[N.Stmt], lets: dict[str, E.Expr], within: _Within) -> list[N.Stmt]:
    if not (isinstance(loop.step, E.Const) and loop.step.value == 1):
        raise NotFolded("a loop whose step is not 1")
    if loop.start.shape or loop.stop.shape:
        raise NotFolded("a loop whose bounds differ between lanes")
    k = loop.var.name
    values: dict[str, E.Expr] = {}
    folds: list[tuple[N.Assign, Fold]] = []
    stores: list[N.Store] = []
    for s in loop.body:
        if isinstance(s, N.Let):
            values[s.var.name] = s.value
        elif isinstance(s, N.Assign):
            folds.append((s, _fold(s)))
        elif isinstance(s, N.Store) and not stores:
            stores.append(s)
        else:
            raise NotFolded(f"a {type(s).__name__} statement in a loop over a tile's elements")
    if stores and folds:
        raise NotFolded("a loop that stores and folds")
    if stores:
        later = set().union(*(_reads(s) for s in N.walk(after))) if after else set()
        if later & (values.keys() | {k}):
            raise NotFolded("a value of the loop read after it")
        return [*_stored(stores[0], k, loop, values, lets, within)]
    if not folds:
        raise NotFolded("a loop without a fold")
    accs = {s.var.name for s, _ in folds}
    if len(accs) != len(folds):
        raise NotFolded("an accumulator folded twice in one iteration")
    for s in loop.body:
        reads = _reads(s) if not isinstance(s, N.Assign) else set()
        if reads & accs:
            raise NotFolded("an accumulator read inside the loop other than by its fold")
    later = set().union(*(_reads(s) for s in N.walk(after))) if after else set()
    if later & (values.keys() | {k}):
        raise NotFolded("a value of the loop read after it")
    out: list[N.Stmt] = []
    for s, f in folds:
        value = _unbroadcast(E.resolve(f.value, values))
        guard = E.resolve(f.guard, values) if f.guard is not None else None
        if guard is not None and (k in _names(guard) or k in _names(E.resolve(guard, lets))):
            raise NotFolded("a fold whose condition changes with the counter")
        whole = _whole(value, k, loop, f.op, lets, within)
        new: E.Expr = E.Bin(f.op, s.var, whole)
        if guard is not None:
            new = E.Where(guard, new, s.var)
        if k in _names(E.fold(new)):  # a select the reduction did not take in (inside a condition)
            raise NotFolded("a fold whose value reads the counter other than through its selects")
        if E.fold(new).shape != s.var.shape and E.broadcast(E.fold(new).shape, s.var.shape) != s.var.shape:
            raise NotFolded("a fold whose reduction does not keep the accumulator's shape")
        out.append(N.Assign(s.var, E.fold(new), line=s.line))
    return out


def _stored(
    store: N.Store, k: str, loop: N.For, values: dict[str, E.Expr], lets: dict[str, E.Expr], within: _Within
) -> list[N.Stmt]:
    """A loop that stores a function of a tile's elements, one element of a tensor a step (``foreach j
    in [N] { y.at(r, j) = __exp(f.data.at(0, j) - m) / s; }``), as one store of the whole tile: the
    index, the mask and the value free of lanes but for the counter, or varying over them along the
    tile's other axes, one dimension of the index ``k`` plus what is free of it and the others free of
    ``k`` (each step its own element: no order between them), and the positions inside the tile (the
    select's ``0`` outside it would be stored)."""
    value = _unbroadcast(E.resolve(store.value, values))
    index = tuple(E.fold(E.resolve(i, values)) for i in store.index)
    mask = E.resolve(store.mask, values) if store.mask is not None else None
    along = [i for i in index if k in _names(E.resolve(i, lets))]
    if len(along) != 1 or (E.linear(along[0], [k]) or ({}, None))[0] != {k: 1}:
        raise NotFolded("a store whose index is not one element a step")
    spread = _Spread(k, lets)
    found = spread.find(value)
    if not found:
        raise NotFolded("a store of something other than elements of a tile")
    first = found[0][0]
    if first.keep or any(
        (x.axis, x.rank, x.n, x.squeeze) != (first.axis, first.rank, first.n, first.squeeze)
        or not E.same(x.offset, first.offset)
        for x, _ in found
    ):
        raise NotFolded("a store of elements of tiles at different positions")
    tile = spread.expr(value, first)
    lanes = tuple(n for d, n in enumerate(tile.shape) if d != first.axis)
    for part in (value, *index, *([mask] if mask is not None else [])):
        if part.shape and part.shape != lanes:  # (a lane's values: the tile's other axes, as they are)
            raise NotFolded("a store whose lanes are not the tile's other axes")
    lo, hi = E.fold(loop.start + first.offset), E.fold(loop.stop + first.offset)
    (low, _), (_, high) = E.bounds(lo), E.bounds(hi)
    if low is None or low < 0 or not within(hi, high, first.n):
        raise NotFolded("a store of positions that may lie outside the tile")
    coord = E.fold(E.resolve(first.coord, lets))
    terms = [E.Bin(">=", coord, lo), E.Bin("<", coord, hi)]
    if mask is not None:
        terms.append(spread.expr(mask, first))
    cond = E.fold(E.conj(terms))
    var = E.Var(N.fresh_name("mask", within.taken), "i1", dims=cond.shape)
    within.taken.add(var.name)
    new_index = tuple(E.fold(spread.expr(i, first)) for i in index)
    return [N.Let(var, cond, line=store.line), N.Store(store.base, new_index, tile, var, line=store.line)]


def _unbroadcast(e: E.Expr) -> E.Expr:
    """``e`` with each ``where(<a tile of trues>, x, y)`` (schedule/forward.py broadcasts an element read
    from a tile over the load's lanes so) as ``x``: the same values, the tile's shape left to the fold's
    broadcast."""

    def walk(x: E.Expr) -> E.Expr:
        if isinstance(x, E.Where) and isinstance(x.cond, E.Full) and x.cond.value and E.fits_in(x.then.shape, x.shape):
            return walk(x.then)
        return E.map_children(x, walk)

    return walk(e)


class _Within:
    """Whether a loop's end ``hi`` (its upper bound ``high``) is at most a tile's extent ``n``: a
    constant, or an extent fixed at launch (:class:`~..tir.expr.Extent`), which the launcher passes as
    the power of two at or above its size (runtime/launch.py ``block_extents``): at least ``hi`` where
    the launcher computes ``hi`` as that size (``foreach j in [N]`` over a buffer of ``N`` staged)."""

    def __init__(self, kernel: N.Kernel) -> None:
        self.kernel = kernel
        self.sizes = {a.name: a.size for a in kernel.args if isinstance(a, N.Constexpr) and a.size is not None}
        self.taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}

    def __call__(self, hi: E.Expr, high: int | None, n: E.Dim) -> bool:
        if isinstance(n, int):
            return high is not None and high <= n
        size = self.sizes.get(n.name)
        host = self.kernel.on_host(hi)
        return size is not None and host is not None and E.same(E.fold(host), E.fold(size))


@dataclass(frozen=True)
class _Select:
    """A select ``T[k + d]`` along ``axis`` of a tile of extent ``n`` there."""

    axis: int
    rank: int
    n: E.Dim
    coord: E.Expr  # the tile's coordinate along the axis (as the IR names it)
    offset: E.Expr  # d
    keep: bool = False  # the selected element placed back along the axis (``[:, None]``): rank kept
    squeeze: int | None = None  # an axis of extent 1 summed away too (a [1, n] tile's element: two sums)


def _whole(f: E.Expr, k: str, loop: N.For, op: str, lets: dict[str, E.Expr], within: _Within) -> E.Expr:
    """The fold of ``f`` over the loop's counter as one reduction of the tile(s) ``f`` selects from."""
    spread = _Spread(k, lets)
    found = spread.find(f)
    if not found:
        raise NotFolded("a fold of something other than elements of a tile")
    first = found[0][0]
    for x, _ in found:
        same = (x.axis, x.rank, x.n, x.keep, x.squeeze) == (first.axis, first.rank, first.n, first.keep, first.squeeze)
        if not same or not E.same(x.offset, first.offset):
            raise NotFolded("a fold of elements of tiles at different positions")
    body = spread.expr(f, first)
    n = first.n
    lo, hi = E.fold(loop.start + first.offset), E.fold(loop.stop + first.offset)
    if not (op == "+" and spread.bare):  # a select outside the tile is 0, which only a bare sum may fold in
        (low, _), (_, high) = E.bounds(lo), E.bounds(hi)
        if low is None or low < 0 or not within(hi, high, n):
            raise NotFolded("a fold over positions that may lie outside the tile")
    dtype = f.dtype
    wide = "f32" if op == "+" and dtype in ("f16", "bf16") else dtype  # 16-bit floats summed in f32
    coord = E.fold(E.resolve(first.coord, lets))  # the arange itself: its bounds decide what they can
    inside = E.conj([E.Bin(">=", coord, lo), E.Bin("<", coord, hi)])
    masked = E.Where(inside, E.fold(E.Cast(body, wide)), _identity(op, wide))
    folded: E.Expr = E.Reduce(REDUCES[op], masked, first.axis)
    if first.squeeze is not None:  # the axis of extent 1 next: its one element
        folded = E.Reduce(REDUCES[op], folded, first.squeeze - (first.squeeze > first.axis))
    out = E.Cast(folded, dtype)
    if first.keep:
        out = E.Lift(out, first.rank, tuple(d for d in range(first.rank) if d != first.axis))
    return E.fold(out)


class _Spread:
    """A fold's value with each select of the counter replaced by its whole tile (the selected axis
    kept), the values free of the counter placed along the tile's other axes, and the counter by
    the coordinate it selects at."""

    def __init__(self, k: str, lets: dict[str, E.Expr]) -> None:
        self.k, self.lets = k, lets
        self.bare = True  # the value is one select (up to conversions)

    def expr(self, e: E.Expr, sel: _Select) -> E.Expr:
        got = self.match(e)
        if got is not None:
            return got[1]
        if self.k not in _names(E.resolve(e, self.lets)):
            return self.place(e, sel)
        if isinstance(e, E.Cast):
            return E.Cast(self.expr(e.value, sel), e.type)
        self.bare = False
        if isinstance(e, E.Var) and e.name == self.k:
            return E.fold(E.Bin("-", E.resolve(sel.coord, self.lets), sel.offset))
        if isinstance(e, (E.Bin, E.Un, E.Call, E.Where)):
            changes: dict[str, object] = {}
            for fld in dataclasses.fields(e):
                v = getattr(e, fld.name)
                if isinstance(v, E.Expr):
                    changes[fld.name] = self.expr(v, sel)
                elif isinstance(v, tuple) and v and all(isinstance(x, E.Expr) for x in v):
                    changes[fld.name] = tuple(self.expr(x, sel) for x in v)
            return dataclasses.replace(e, **changes)  # type: ignore[arg-type]
        raise NotFolded(f"a {type(e).__name__} of the counter")

    def place(self, e: E.Expr, sel: _Select) -> E.Expr:
        """A value free of the counter along the tile's axes but the selected one."""
        if not e.shape:
            return e
        self.bare = False
        if sel.squeeze is not None:
            raise NotFolded("a tile beside the elements of a tile with an axis of extent 1")
        if sel.keep:  # the same rank as the tile: it must not vary along the selected axis
            if len(e.shape) != sel.rank or e.shape[sel.axis] != 1:
                raise NotFolded("a value that varies along the selected axis")
            return e
        if len(e.shape) != sel.rank - 1:
            raise NotFolded("a value of another rank than the selected elements")
        return E.Lift(e, sel.rank, tuple(d for d in range(sel.rank) if d != sel.axis))

    def find(self, e: E.Expr) -> list[tuple[_Select, E.Expr]]:
        """The selects of the counter in ``e`` (not looking inside one)."""
        got = self.match(e)
        if got is not None:
            return [got]
        return [x for c in e.children() for x in self.find(c)]

    def match(self, e: E.Expr) -> tuple[_Select, E.Expr] | None:
        """A select ``sum(where(c == k + d, T, 0), axis)`` (with the conversions lift/buffers.py puts
        around a 16-bit tile's) and the whole tile whose elements it selects, else None."""
        keep: tuple[int, ...] | None = None
        if isinstance(e, E.Lift) and isinstance(e.value, (E.Reduce, E.Cast)):
            keep, e = e.dims, e.value
        outer: E.Cast | None = None
        if isinstance(e, E.Cast) and isinstance(e.value, E.Reduce):
            outer, e = e, e.value
        squeeze: int | None = None
        if (
            keep is None
            and isinstance(e, E.Reduce)
            and e.op == "sum"
            and isinstance(e.value, E.Reduce)
            and e.value.op == "sum"
            and isinstance(e.value.value, E.Where)
            and len(e.value.value.shape) == 2
            and e.value.value.shape[e.value.axis] == 1
        ):  # a [1, n] (or [n, 1]) tile's element: the sum along the axis of extent 1 its only element
            squeeze = e.value.axis
            e = E.Reduce("sum", e.value.value, 1 - squeeze)
        if not (isinstance(e, E.Reduce) and e.op == "sum" and isinstance(e.value, E.Where)):
            return None
        pick, tile, zero = e.value.cond, e.value.then, e.value.other
        if not (isinstance(zero, E.Full) and zero.value == 0) or not isinstance(pick, E.Bin) or pick.op != "==":
            return None
        if self.k in _names(E.resolve(tile, self.lets)):
            return None
        rank, axis = len(e.value.shape), e.axis
        n = e.value.shape[axis]
        if keep is not None and keep != tuple(d for d in range(rank) if d != axis):
            return None
        along = E.Arange(n) if rank == 1 else E.Lift(E.Arange(n), rank, (axis,))
        for c, x in ((pick.lhs, pick.rhs), (pick.rhs, pick.lhs)):
            if E.fold(E.resolve(c, self.lets)) != E.fold(along):
                continue
            terms = E.linear(x, [self.k])
            if terms is None or terms[0] != {self.k: 1} or terms[1].shape:
                continue
            if self.k in _names(E.resolve(terms[1], self.lets)):
                continue
            whole = tile
            if outer is not None:  # widened to be summed: the element converted back
                inner = tile.value if isinstance(tile, E.Cast) else tile
                kept = inner.dtype in WIDER and tile.dtype in WIDER[inner.dtype]
                whole = inner if outer.type == inner.dtype and kept else E.Cast(tile, outer.type)
            return _Select(axis, rank, n, c, terms[1], keep is not None, squeeze), whole
        return None


def fold_all(kernel: N.Kernel, block: Block, whole: bool = False) -> N.Kernel:
    """:func:`fold_selects`, then :func:`~.foldloops.fold_loops` of what is left: loops over a register
    tile's elements are one reduction each first; then the tiles the folded loops store into a scratch
    area and read back (a thread's local array written a step at a time, now a tile) forwarded in
    registers (schedule/forward.py)."""
    from .forward import forward_scratch

    kernel, selects = fold_selects(kernel)
    return forward_scratch(fold_loops(kernel, block, whole, selects=selects))
