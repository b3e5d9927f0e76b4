"""A loop whose every iteration loads a tile and folds it, run ``U`` iterations a step: one tile ``U``
times as wide along the axis the counter walks.

Rows staged through shared memory a block of columns at a time (``foreach c in [cdiv(N, 128)] { f =
dma.copy x.subspan(16, 128).at(p, c) => shared; foreach j in [128] { ss += f.data.at(t, j) * ..; }
}``) become, once the staged tile is read in registers (schedule/forward.py) and its loop over the
tile's elements is a reduction (schedule/selectfold.py), a loop that loads a ``[16, 128]`` tile a
step: 4 KB of f16, too little in flight for the bandwidth (on the H100 such a kernel ran at 0.46-0.85
of the roofline, perf/RESULTS.md 2026-12-05; a column fold went from 0.71 to 0.80 when its steps
grew from 4 KB to 8 KB and more, 2026-12-07).  Here the counter ``c`` of such a loop reaches the tile
only as ``c * W + X``, ``X`` the lanes ``tl.arange(0, W)`` along one axis ``a``: ``U`` consecutive
iterations read ``c0 * W + tl.arange(0, U * W)`` along ``a``, one tile, whose reductions along ``a``
are the sum (max, min) of the ``U`` iterations' reductions.

What it proves on the IR (else :class:`NotCoarsened`, and the loop stays):

* the loop steps by 1; its body is lets, loads and folds (no store, atomic, barrier, branch or inner
  loop); every fold is ``acc := acc op reduce_op(v, axis=a)`` with ``op`` the reduction's own
  associative, commutative operator (``+``, ``max``, ``min``): the only dependence between
  iterations, and what a step of ``U`` iterations adds is their ``U`` reductions folded together
  (a float ``+`` in another order: within the rounding of the type, as every fold of
  schedule/foldloops.py);
* the counter appears only as ``c * W + X`` with one ``W`` and one lane axis ``X`` along ``a``, and
  ``X`` nowhere else in the body: every tile of the body widens along ``a`` with it, and shapes are
  checked again (a tile of extent ``W`` along ``a`` that does not move with the counter fails to
  broadcast, and the loop stays);
* the positions of the last step past the loop's ``stop`` (``c0 + U > stop``) are masked out of
  the loads and fold the identity of their reduction (``0``, ``-inf``, ``+inf``): they are not
  iterations of the source.
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from .foldloops import ELEM_BYTES, _identity
from .widen import _lane_of

# bytes of a coarsened step's loads the auto policy aims at (schedule/policy.py coarsen_factor). On the
# H100 (perf/RESULTS.md 2026-12-07 05:04, 16384 x 4096 / 4096 x 16384, split across programs as auto
# runs them), of the roofline: staged f32 row sums, 8 KB steps as written 0.908 / 0.912, 16 KB 0.889 /
# 0.873, 64 KB 0.876 / 0.878; staged f16 mean squares, 4 KB as written 0.831 / 0.841, 8 KB 0.846 / 0.843,
# 16 KB 0.830 / 0.800, 32 KB 0.842 / 0.884: steps of 8 KB, no more
STEP_BYTES = 8 * 1024
MOST_FACTOR = 16
_REDUCE_OF = {"+": "sum", "max": "max", "min": "min"}


class NotCoarsened(Exception):
    """The proof does not hold for the kernel's loop (or it has none to coarsen)."""


@dataclasses.dataclass(frozen=True)
class Walk:
    """How a loop's counter reaches its tiles: ``c * width + lanes``, ``lanes`` along ``axis``."""

    loop: N.For
    width: int
    axis: int
    rank: int
    lanes: str  # the let-bound name of the lanes (``cols``), or "" where they are written inline


def find_walk(kernel: N.Kernel) -> Walk:
    """The kernel's one top-level loop that coarsens, and how its counter reaches its tiles."""
    loops = [s for s in kernel.body if isinstance(s, N.For)]
    if len(loops) != 1:
        raise NotCoarsened("a kernel whose top level has other than one loop")
    loop = loops[0]
    if not (isinstance(loop.step, E.Const) and loop.step.value == 1):
        raise NotCoarsened("a loop whose step is not 1")
    if loop.start.shape or loop.stop.shape:
        raise NotCoarsened("a loop whose bounds differ between lanes")
    if any(not isinstance(s, (N.Let, N.Load, N.Assign)) for s in loop.body):
        raise NotCoarsened("a loop body with other than lets, loads and folds")
    if not any(isinstance(s, N.Load) for s in loop.body):
        raise NotCoarsened("a loop that loads nothing")
    lets = {s.var.name: s.value for s in kernel.body if isinstance(s, N.Let)}
    found: set[tuple[int, int, int, str]] = set()

    def visit(e: E.Expr) -> None:
        got = _walk_of(e, loop.var.name, lets)
        if got is not None:
            found.add(got)
            return
        if isinstance(e, E.Var) and e.name == loop.var.name:
            raise NotCoarsened("the counter read other than as counter * width + lanes")
        for c in e.children():
            visit(c)

    for s in loop.body:
        for e in N.exprs_of(s):
            visit(e)
    if len(found) != 1:
        raise NotCoarsened("the counter reaches the tiles along other than one axis of one width")
    width, axis, rank, lanes = found.pop()
    if lanes:  # the lanes' name nowhere but in the walk (else a tile that does not move with c)
        for s in loop.body:
            for e in N.exprs_of(s):
                if _reads_outside_walk(e, lanes, loop.var.name, lets):
                    raise NotCoarsened("the lanes of the walk read apart from the counter")
    for s in loop.body:
        if isinstance(s, N.Assign):
            _fold_of(s, axis)
    return Walk(loop, width, axis, rank, lanes)


def coarsen(kernel: N.Kernel, factor: int) -> N.Kernel:
    """``kernel`` with its loop run ``factor`` iterations a step (module docstring); ``factor`` 1: as
    it is."""
    if factor <= 1:
        return kernel
    walk = find_walk(kernel)
    loop, w, a, rank = walk.loop, walk.width, walk.axis, walk.rank
    taken = {v.name for s in N.walk(kernel.body) for v in N.defines(s)} | {x.name for x in kernel.args}
    taken |= {p.name for p in kernel.program_ids}
    c0 = E.Var(N.fresh_name(f"{loop.var.name}_0", taken), "i32", lo=loop.var.lo)
    wide = E.Arange(w * factor) if rank == 1 else E.Lift(E.Arange(w * factor), rank, (a,))
    lets = {s.var.name: s.value for s in kernel.body if isinstance(s, N.Let)}
    position = E.fold(E.Bin("+", E.Bin("*", c0, E.Const(w)), wide))  # the widened walk
    inside = E.fold(E.Bin("<", position, E.fold(E.Bin("*", loop.stop, E.Const(w)))))  # (not past stop)
    bound = E.Var(N.fresh_name("in_loop", taken), "i1", dims=inside.shape)

    def widen(e: E.Expr) -> E.Expr:
        if _walk_of(e, loop.var.name, lets) is not None:
            return position
        return E.map_children(e, widen)

    body: list[N.Stmt] = [N.Let(bound, inside, line=loop.line)]
    shapes: dict[str, E.Shape] = {}

    def retyped(e: E.Expr) -> E.Expr:
        def go(x: E.Expr) -> E.Expr:
            if isinstance(x, E.Var) and x.name in shapes:
                return dataclasses.replace(x, dims=shapes[x.name])
            return E.map_children(x, go)

        return go(e)

    try:
        for s in loop.body:
            if isinstance(s, N.Let):
                value = E.fold(retyped(widen(s.value)))
                var = dataclasses.replace(s.var, dims=value.shape)
                shapes[var.name] = var.shape
                body.append(dataclasses.replace(s, var=var, value=value))
            elif isinstance(s, N.Load):
                index = tuple(E.fold(retyped(widen(i))) for i in s.index)
                mask_var = E.Var(N.fresh_name(f"{s.var.name}_mask", taken), "i1")
                given = retyped(s.mask) if s.mask is not None else None
                mask = E.fold(E.Bin("&", given, bound)) if given is not None else bound
                mask_var = dataclasses.replace(mask_var, dims=mask.shape)
                body.append(N.Let(mask_var, mask, line=s.line))
                var = dataclasses.replace(s.var, dims=E.broadcast(*(i.shape for i in index), mask.shape))
                shapes[var.name] = var.shape
                body.append(dataclasses.replace(s, var=var, index=index, mask=mask_var))
            else:
                assert isinstance(s, N.Assign)
                op, reduce = _fold_of(s, a)
                inner = E.fold(retyped(widen(reduce.value)))
                ident = _identity(op, inner.dtype)
                guarded = E.Where(bound, inner, ident)
                value = E.fold(E.Bin(op, s.var, dataclasses.replace(reduce, value=guarded)))
                if value.shape != s.var.shape:
                    raise NotCoarsened("a fold whose value keeps the walked axis")
                body.append(dataclasses.replace(s, value=value))
    except E.ShapeError as e:
        raise NotCoarsened(f"a tile that does not widen with the walk ({e})") from None
    new = dataclasses.replace(loop, var=c0, step=E.Const(factor), body=body)
    out = [new if s is loop else s for s in kernel.body]
    note = f" Its loop runs {factor} iterations a step, one tile {factor} times as wide (schedule/coarsen.py)."
    return dataclasses.replace(kernel, body=out, doc=kernel.doc + note)


def step_bytes(kernel: N.Kernel) -> int:
    """The bytes the loop's loads read an iteration (0: unknown)."""
    walk = find_walk(kernel)
    total = 0
    for s in walk.loop.body:
        if isinstance(s, N.Load):
            arg = next((x for x in kernel.args if x.name == s.base), None)
            if not isinstance(arg, N.Pointer):
                return 0
            count = 1
            for d in s.var.shape:
                if not isinstance(d, int):
                    return 0
                count *= d
            total += count * ELEM_BYTES.get(arg.dtype, 4)
    return total


def _walk_of(e: E.Expr, counter: str, lets: dict[str, E.Expr]) -> tuple[int, int, int, str] | None:
    """``(width, axis, rank, lanes)`` where ``e`` is ``counter * width + lanes``."""
    if not (isinstance(e, E.Bin) and e.op == "+"):
        return None
    for scaled, lanes in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        width = _scaled(scaled, counter)
        if width is None:
            continue
        name = lanes.name if isinstance(lanes, E.Var) else ""
        value = lets.get(name, lanes) if name else lanes
        lane = _lane_of(value)  # (extent, axis, rank) of tl.arange(0, width) placed along one axis
        if lane is not None and lane[0] == width:
            return width, lane[1], lane[2], name
    return None


def _scaled(e: E.Expr, counter: str) -> int | None:
    if isinstance(e, E.Bin) and e.op == "*":
        for v, k in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(v, E.Var) and v.name == counter and isinstance(k, E.Const) and isinstance(k.value, int):
                return int(k.value) if k.value > 0 else None
    return None


def _reads_outside_walk(e: E.Expr, lanes: str, counter: str, lets: dict[str, E.Expr]) -> bool:
    if _walk_of(e, counter, lets) is not None:
        return False
    if isinstance(e, E.Var) and e.name == lanes:
        return True
    return any(_reads_outside_walk(c, lanes, counter, lets) for c in e.children())


def _fold_of(s: N.Assign, axis: int) -> tuple[str, E.Reduce]:
    """``(op, reduction)`` of a fold ``acc := acc op reduce_op(v, axis)``."""
    v = s.value
    if isinstance(v, E.Bin) and v.op in _REDUCE_OF:
        for acc, other in ((v.lhs, v.rhs), (v.rhs, v.lhs)):
            mine = isinstance(acc, E.Var) and acc.name == s.var.name and isinstance(other, E.Reduce)
            if mine and other.op == _REDUCE_OF[v.op] and other.axis == axis and s.var.name not in _names(other):
                return v.op, other
    raise NotCoarsened("a loop-carried value other than a fold of a reduction along the walked axis")
