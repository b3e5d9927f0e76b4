"""Atomic adds of a tile's elements into one address folded first: one atomic per address a program.

A thread per element adding its element into its row's sum (``__atomic_add(s.at(bm # i), x.at(bm #
i, bn # j))``) is lifted as one atomic per lane whose address is the same along the lanes that share
it (lift/buffers.py ``shared_element``: the row's address broadcast over the columns,
``s_ptr + offs * s_stride_0 + tl.zeros([4, 64])``); on the GPU every lane's atomic then queues on
that one word.  The kernel's meaning is the sum: where the IR shows it, the lanes of an axis along
which the address does not change are folded first and one lane a row adds the fold.

What it proves on the IR (else the atomic stays as written):

* the atomic is ``add`` (on a float or an integer), ``max`` or ``min``, and its result (the old
  value) is not read;
* its index is, up to a broadcast of zeros (``i + tl.zeros(shape)``), constant along some axes of
  the tile its value and mask run along: the lanes of those axes add into the same address;
* then ``atomic(addr, v_0, m_0); ..; atomic(addr, v_k, m_k)`` is ``atomic(addr, op(v_i where m_i),
  any(m_i))``: ``op`` is associative and commutative, the atomics of one statement are unordered
  among themselves anyway, and an address no lane's mask lets through is not touched.  A float add
  then sums the lanes in another order first (within the rounding of its type, as atomics in another
  order would).
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N
from .foldloops import INT_LIMITS

FOLDS = {"add": ("sum", "+"), "max": ("max", "max"), "min": ("min", "min")}


def fold_atomics(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with the atomics the proof admits folded along the axes their address does not
    change along (see the module docstring); the kernel itself where none is."""
    lets = {s.var.name: s.value for s in N.walk(kernel.body) if isinstance(s, N.Let)}
    taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    done = [0]
    body = _block(kernel.body, lets, taken, done)
    if not done[0]:
        return kernel
    doc = kernel.doc + " Its atomics add one fold of the lanes that share an address (schedule/atomicfold.py)."
    return dataclasses.replace(kernel, body=body, doc=doc)


def _block(body: list[N.Stmt], lets: dict[str, E.Expr], taken: set[str], done: list[int]) -> list[N.Stmt]:
    out: list[N.Stmt] = []
    for s in body:
        if isinstance(s, N.Atomic):
            out.extend(_fold(s, lets, taken, done))
            continue
        if isinstance(s, N.For):
            s = dataclasses.replace(s, body=_block(s.body, lets, taken, done))
        elif isinstance(s, N.If):
            s = dataclasses.replace(
                s, then=_block(s.then, lets, taken, done), orelse=_block(s.orelse, lets, taken, done)
            )
        out.append(s)
    return out


def unspread(e: E.Expr) -> E.Expr:
    """``e`` without the zeros added to broadcast it (``i + tl.zeros(shape)``): the same value at
    each position of the shape it keeps."""
    if isinstance(e, E.Full):  # one value broadcast over a shape (an address every lane shares)
        return E.Const(e.value, e.type)
    if isinstance(e, E.Bin) and e.op == "+":
        for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(b, E.Full) and b.value == 0:
                return unspread(a)
        return E.Bin("+", unspread(e.lhs), unspread(e.rhs))
    if isinstance(e, E.Bin) and e.op == "*":
        if any(isinstance(x, E.Full) and x.value == 0 for x in (e.lhs, e.rhs)):
            return E.Const(0, e.dtype)
        return E.Bin("*", unspread(e.lhs), unspread(e.rhs))
    return e


def _fold(s: N.Atomic, lets: dict[str, E.Expr], taken: set[str], done: list[int]) -> list[N.Stmt]:
    if s.op not in FOLDS or s.result is not None or s.compare is not None:
        return [s]
    index = tuple(E.fold(unspread(i)) for i in s.index)
    mask_shape = s.mask.shape if s.mask is not None else ()
    shape = E.broadcast(s.value.shape, mask_shape, *(i.shape for i in s.index))
    rank = len(shape)
    at = E.broadcast(*(i.shape for i in index)) if index else ()
    at = (1,) * (rank - len(at)) + tuple(at)
    axes = [d for d in range(rank) if at[d] == 1 and shape[d] != 1]
    dtype = s.value.dtype
    if not axes or (s.op != "add" and E.is_int(dtype) and dtype not in INT_LIMITS):
        return [s]
    reduce_op, op = FOLDS[s.op]
    value: E.Expr = s.value
    if value.shape != shape:  # at the whole tile's shape: each lane's value folds in
        value = E.fold(E.Bin("+", value, E.Full(shape, 0, dtype)))
    if s.mask is not None:
        value = E.Where(s.mask, value, identity(op, dtype))
    # the mask's terms that do not change along the folded axes stay as they are (the verifier sees
    # them keep the address inside); the others let the fold through where any lane's do
    terms = E.conjuncts(lets.get(s.mask.name, s.mask)) if s.mask is not None else []
    kept = [t for t in terms if all(_pad(t.shape, rank)[d] == 1 for d in axes)]
    varying = [t for t in terms if not any(t is k for k in kept)]
    any_lane: E.Expr | None = None
    if varying:
        any_lane = E.Cast(E.conj(varying), "i32")  # (an axis of 1 reduces to itself: no broadcast needed)
    for d in reversed(axes):  # folded one axis at a time, kept as an axis of 1
        keep = tuple(x for x in range(rank) if x != d)
        value = E.Lift(E.Reduce(reduce_op, _squeezed(value, rank), d), rank, keep)
        if any_lane is not None:
            any_lane = E.Lift(E.Reduce("max", _squeezed(any_lane, rank), d), rank, keep)
    value = E.fold(value)
    out: list[N.Stmt] = []
    mask = None
    if terms:
        parts = kept + ([E.Bin("!=", any_lane, E.Const(0, "i32"))] if any_lane is not None else [])
        cond = E.conj(parts)
        name = N.fresh_name(f"{s.mask.name}_any" if s.mask is not None else "mask_any", taken)
        mask = E.Var(name, "i1", dims=cond.shape)
        out.append(N.Let(mask, cond, line=s.line))
    if index and not any(i.shape for i in index):
        # every axis folded into one word: the address a tile of ones like the value (compiled Triton
        # takes no scalar pointer beside a tile value)
        index = (E.Bin("+", index[0], E.Full((1,) * rank, 0, index[0].dtype)), *index[1:])
    done[0] += 1
    return [*out, dataclasses.replace(s, index=index, value=value, mask=mask)]


def _pad(shape: E.Shape, rank: int) -> E.Shape:
    return (1,) * (rank - len(shape)) + tuple(shape)


def _squeezed(e: E.Expr, rank: int) -> E.Expr:
    """``e`` at rank ``rank`` (leading axes of 1 added where it has fewer)."""
    if len(e.shape) == rank:
        return e
    return E.Lift(e, rank, tuple(range(rank - len(e.shape), rank)))


def identity(op: str, dtype: str) -> E.Const:
    if E.is_int(dtype):
        lo, hi = INT_LIMITS.get(dtype, (0, 0))
        return E.Const({"+": 0, "max": lo, "min": hi}[op], dtype)
    return E.Const({"+": 0.0, "max": float("-inf"), "min": float("inf")}[op], dtype)
