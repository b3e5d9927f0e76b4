"""Values that some lanes store into scratch memory and other lanes read back: a tile in registers.

A block reduced in two levels (each warp's total by shuffles, then the warps' totals by warp 0)
passes the partials through shared memory::

    if (t == 0) wsum.at(w) = s;  sync.shared;  if (w == 0) { v = t < 8 ? wsum.at(t) : 0; .. }

Lifted, lane ``(w, 0)`` stores ``s`` at ``w`` and lane ``(0, t)`` loads position ``t``: a store, a
barrier and a load in scratch memory (schedule/forward.py forwards a load of a lane's own element, not
of another lane's).  Where every position is written by exactly one lane, the area is the tile ``T``
of those values along a new axis of positions (``T[a]`` the value of the lane that stores at ``a``),
and each load is ``T`` at the position it reads: both selections made exactly, each a sum of one
element and zeros over ``where(position == address, ..)`` (a layout change in registers, costing the
positions times the lanes; bounded by :data:`MAX_WORK`).

What is proved on the IR (else the area stays in memory):

* the area (a scratch argument, one copy a program, filled by no earlier launch) is written by one
  store of a value of its type (no conversion where it is stored), at the kernel's top level, and read only by loads at the top level after it; nothing else
  touches it, and no statement between the store and a load re-binds a name the stored value reads;
* the store's index and each load's are ``b + o`` with the same terms ``b`` (not computed from the
  lanes: the program's base, equal as expressions) and ``o`` computed exactly from the lanes, as are
  the store's and the loads' masks (``t == 0``, ``(w == 0) & (t < 8)``: lanes, constants);
* each position a lane stores at is stored by that lane alone, inside the area's elements per
  program (a constant), and every lane that loads reads a stored position.

The loads become lets of those values (under their masks, ``other`` where a load has one), the store
and the scratch argument go, and the block's barriers are derived again (lift/hazards.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..lift.hazards import fence_hazards
from ..tir import expr as E
from ..tir import nodes as N
from .treefold import NotTree, evaluate

MAX_WORK = 1 << 14  # positions x lanes of one selection


class NotTile(Exception):
    """What the proof cannot follow."""


def tiles_in_registers(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each scratch area passed between lanes kept as a tile in registers (module
    docstring); the kernel itself where none is."""
    done = []
    out = kernel
    for arg in kernel.args:
        if not (isinstance(arg, N.Scratch) and arg.lanes == 1 and not arg.area and not arg.written):
            continue
        if arg.kept_zero:
            continue
        try:
            out = _relayout(out, arg)
            done.append(arg.name)
        except (NotTile, NotTree, E.ShapeError):
            continue
    if not done:
        return kernel
    body = N.without(out.body, lambda s: isinstance(s, N.Barrier))
    args = [a for a in out.args if a.name not in done]
    said = (
        " Values its lanes pass to other lanes through scratch memory are a tile in registers (schedule/lanetile.py)."
    )
    result = dataclasses.replace(out, body=N.without_dead_lets(body), args=args, doc=out.doc + said)
    fence_hazards(result)
    return result


def _relayout(kernel: N.Kernel, area: N.Scratch) -> N.Kernel:
    body = kernel.body
    name = area.name
    touching = [s for s in N.walk(body) if _touches(s, name)]
    top = [s for s in body if _touches(s, name)]
    if len(touching) != len(top):
        raise NotTile("an access inside a loop or a branch")
    stores = [i for i, s in enumerate(body) if isinstance(s, N.Store) and s.base == name]
    loads = [i for i, s in enumerate(body) if isinstance(s, N.Load) and s.base == name]
    if len(stores) != 1 or not loads or len(stores) + len(loads) != len(top) or min(loads) < stores[0]:
        raise NotTile("not one store and then loads")
    k_c = E.fold(area.elements)
    if not isinstance(k_c, E.Const):
        raise NotTile("elements not known when translating")
    k = int(k_c.value)
    k2 = 1 << max(k - 1, 0).bit_length()  # (the positions a power of two: those past k match no address)
    store = body[stores[0]]
    assert isinstance(store, N.Store)
    lets = {s.var.name: s.value for s in N.walk(body) if isinstance(s, N.Let)}
    if len(store.index) != 1:
        raise NotTile("not a flat area")
    if store.value.dtype != area.dtype:
        raise NotTile("a value converted where it is stored")
    base_s, off_s = _split(E.resolve(store.index[0], lets))
    shape = _ints(E.broadcast(store.value.shape, off_s.shape))
    if k2 * int(np.prod(shape)) > MAX_WORK:
        raise NotTile("too much work to select")
    addr = np.broadcast_to(np.asarray(evaluate(off_s, {})), shape)
    written = np.broadcast_to(_mask(store.mask, lets, shape), shape)
    taken = addr[written]
    if len(set(taken.tolist())) != len(taken) or (taken < 0).any() or (taken >= k).any():
        raise NotTile("a position stored by two lanes, or outside the area")
    stored = set(taken.tolist())
    reads = {v.name for v in E.free_vars(store.value)}
    rank = len(shape)
    positions = E.Lift(E.Arange(k2), rank + 1, (0,))
    a_s = _lifted(off_s, shape, "i32")
    on: E.Expr = E.Bin("==", positions, a_s)
    if store.mask is not None:
        on = E.Bin("&", on, _lifted(store.mask, shape, "i1"))
    value = _lifted(store.value, shape, store.value.dtype)
    picked: E.Expr = E.Where(on, value, E.Full((k2, *shape), 0, store.value.dtype))
    for axis in range(rank, 0, -1):
        picked = E.Reduce("sum", picked, axis)
    taken_names = {v.name for x in N.walk(body) for v in N.defines(x)} | {a.name for a in kernel.args}
    tile_name, n = f"{name.removesuffix('_scratch')}_tile", 2
    while tile_name in taken_names:
        tile_name, n = f"{name.removesuffix('_scratch')}_tile_{n}", n + 1
    tile = E.Var(tile_name, store.value.dtype, dims=(k2,))
    new = list(body)
    for i in loads:
        load = body[i]
        assert isinstance(load, N.Load)
        between = body[stores[0] + 1 : i]
        if any(isinstance(s, N.Assign) and s.var.name in reads for s in N.walk(between)):
            raise NotTile("a name the stored value reads re-bound before the load")
        if len(load.index) != 1 or load.var.type != area.dtype:
            raise NotTile("not a flat area of the loaded type")
        base_l, off_l = _split(E.resolve(load.index[0], lets))
        if sorted(map(repr, base_l)) != sorted(map(repr, base_s)):
            raise NotTile("the load and the store at different bases")
        lshape = _ints(E.broadcast(load.var.shape, off_l.shape))
        if k2 * int(np.prod(lshape)) > MAX_WORK:
            raise NotTile("too much work to select")
        at = np.broadcast_to(np.asarray(evaluate(off_l, {})), lshape)
        reading = np.broadcast_to(_mask(load.mask, lets, lshape), lshape)
        if not set(at[reading].tolist()) <= stored:
            raise NotTile("a lane reads a position no lane stored")
        lrank = len(lshape)
        pos = E.Lift(E.Arange(k2), lrank + 1, (0,))
        hit = E.Bin("==", pos, _lifted(off_l, lshape, "i32"))
        got: E.Expr = E.Reduce(
            "sum",
            E.Where(hit, E.Lift(tile, lrank + 1, (0,)), E.Full((k2, *lshape), 0, load.var.type)),
            0,
        )
        if load.mask is not None and load.other is not None:
            got = E.Where(load.mask, got, E.Const(load.other, load.var.type))
        new[i] = N.Let(load.var, got, line=load.line)
    new[stores[0]] = N.Let(tile, picked, line=store.line)
    return dataclasses.replace(kernel, body=new)


def _touches(s: N.Stmt, name: str) -> bool:
    return isinstance(s, (N.Store, N.Load, N.Atomic)) and s.base == name


def _ints(shape: tuple[Any, ...]) -> tuple[int, ...]:
    if not all(isinstance(d, int) for d in shape):
        raise NotTile("lanes fixed at launch")
    return tuple(int(d) for d in shape)


def _terms(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.Bin) and e.op == "+":
        return [*_terms(e.lhs), *_terms(e.rhs)]
    return [e]


def _split(index: E.Expr) -> tuple[list[E.Expr], E.Expr]:
    """``b + o``: (the terms not computed from the lanes alone, the sum of those that are)."""
    base, off = [], []
    for t in _terms(index):
        try:
            evaluate(t, {})
            off.append(t)
        except NotTree:
            base.append(t)
    if not off:  # (every lane at the base: position 0)
        return base, E.Const(0, "i32")
    total = off[0]
    for t in off[1:]:
        total = E.Bin("+", total, t)
    return base, total


def _mask(mask: E.Var | None, lets: dict[str, E.Expr], shape: tuple[int, ...]) -> Any:
    if mask is None:
        return np.ones(shape, dtype=bool)
    return np.asarray(evaluate(E.resolve(mask, lets), {}), dtype=bool)


def _lifted(e: E.Expr, shape: tuple[int, ...], dtype: str) -> E.Expr:
    """``e`` broadcast to ``shape`` and placed on the axes after a new first one."""
    rank = len(shape)
    if dtype == "i1":
        full: E.Expr = E.Bin("&", E.Full(shape, True, "i1"), e)
    else:
        full = E.Bin("+", E.Full(shape, 0, dtype if dtype != "i32" else e.dtype), e)
    return E.Lift(full, rank + 1, tuple(range(1, rank + 1)))
