"""Accesses that run backwards along the lanes (``x.at(r, N - 1 - j)``: a flip, a reversed copy) read
and written forwards, the tile reversed in registers.

A load whose contiguous index is ``c - j`` for a lane ``j`` of a block (``tl.arange(0, B)`` on an
axis of the tile) has contiguity -1 along that axis; Triton vectorises only increasing runs, so each
thread reads its elements one at a time (a flip of the columns written a thread an element compiled
to 64 scalar loads a thread for sm_90a where the forward copy has 16 vector ones).

Under ``--schedule auto``, after the interior split (schedule/interior.py) and the coarsening, when
each block's extents are final: each load (store) whose last index, lets resolved, is affine in a
lane ``j`` with coefficient -1, is read (written) at ``j' = B - 1 - j`` instead and its value reversed
along ``j``'s axis with ``tl.flip``:

* the load ``v = x[idx(j)]`` under ``mask(j)`` becomes ``w = x[idx(B - 1 - j)]`` under ``mask(B - 1 -
  j)`` and ``v = flip(w, axis)``: ``flip(w)[j] = w[B - 1 - j] = x[idx(j)]`` where ``mask(j)`` holds, and
  the load's ``other`` (or the sanitizer's NaN) where it does not, exactly as before; the last index
  becomes ``c - B + 1 + j``, increasing along the lanes;
* the store ``x[idx(j)] = v`` under ``mask(j)`` becomes ``x[idx(B - 1 - j)] = flip(v, axis)`` under
  ``mask(B - 1 - j)``: the lane at ``j`` writes what the lane at ``B - 1 - j`` wrote, to the element
  that lane wrote, under that lane's guard: the same elements get the same values.

``tl.flip`` (Triton 3.6) bit-casts to an integer of the element's width and reverses by xor sums: exact
for every value (NaN, -0.0 included); within a thread it is a register permutation, across lanes and
warps Triton exchanges through shuffles and shared memory.

*Proof obligations* (else the access stays as written): ``j`` is a lane (a lifted ``tl.arange(0,
B)``), ``B`` a power of two above 1; the accessed value has extent ``B`` on ``j``'s axis (or is
broadcast along it, for a store); nothing else in the index, the mask or the stored value varies along
that axis: every other variable they read (lets resolved: offsets, loaded values, program ids) has
extent 1 there or is a scalar, so that substituting ``B - 1 - j`` for ``j`` is the value of the lane
at ``B - 1 - j``.  A mask's comparisons that become decreasing in ``j`` are written with ``j`` alone
on the left (``a - j < b`` as ``j >= a - b + 1``), the same lanes, so Triton proves them constant over
aligned groups where the bounds allow it.
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N

_SWAPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def forward_lanes(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with its backward accesses along a lane read and written forwards and flipped in
    registers (module doc); ``kernel`` itself where none is."""
    rewrite = _Rewrite(kernel)
    body = rewrite.stmts(kernel.body, {}, {})
    if not rewrite.changed:
        return kernel
    doc = (
        kernel.doc
        + " Its accesses that run backwards along a lane run forwards, flipped in registers (schedule/fliplanes.py)."
    )
    return dataclasses.replace(kernel, body=body, doc=doc)


@dataclasses.dataclass(frozen=True)
class _Lane:
    var: E.Var
    axis: int
    extent: int


class _Rewrite:
    def __init__(self, kernel: N.Kernel) -> None:
        self.pointers = {a.name for a in kernel.args if isinstance(a, N.Pointer)}
        self.taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
        self.taken |= {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Assign)}
        self.changed = False

    def stmts(self, body: list[N.Stmt], lets: dict[str, E.Expr], lanes: dict[str, _Lane]) -> list[N.Stmt]:
        lets, lanes = dict(lets), dict(lanes)
        out: list[N.Stmt] = []
        for s in body:
            if isinstance(s, N.Let):
                lane = _lane(s)
                if lane is not None:
                    lanes[s.var.name] = lane
                    lets.pop(s.var.name, None)
                else:
                    lanes.pop(s.var.name, None)
                    lets[s.var.name] = E.substitute(s.value, lets)
            elif isinstance(s, N.Assign):
                lets.pop(s.var.name, None)
                lanes.pop(s.var.name, None)
            if isinstance(s, (N.For, N.While)):
                s = dataclasses.replace(s, body=self.stmts(s.body, lets, lanes))
            elif isinstance(s, N.If):
                s = dataclasses.replace(
                    s, then=self.stmts(s.then, lets, lanes), orelse=self.stmts(s.orelse, lets, lanes)
                )
            elif isinstance(s, (N.Load, N.Store)) and s.base in self.pointers:
                made = self.access(s, lets, lanes)
                if made is not None:
                    out += made
                    self.changed = True
                    continue
            out.append(s)
        return out

    def access(self, s: N.Load | N.Store, lets: dict[str, E.Expr], lanes: dict[str, _Lane]) -> list[N.Stmt] | None:
        if not s.index:
            return None
        index = [E.substitute(i, lets) for i in s.index]
        lane = _backward(index[-1], lanes)
        if lane is None:
            return None
        rank = len(lane.var.shape)
        value_shape = s.var.shape if isinstance(s, N.Load) else s.value.shape
        if len(value_shape) != rank or value_shape[lane.axis] not in (1, lane.extent):
            return None
        if isinstance(s, N.Load) and value_shape[lane.axis] != lane.extent:
            return None
        mask = None
        if s.mask is not None:
            if s.mask.name not in lets:
                return None
            mask = lets[s.mask.name]
        # (a stored value is reversed whole, not substituted: it may vary along the lane as it likes)
        for e in [*index, *([mask] if mask is not None else [])]:
            if not _only_along(e, lane):
                return None
        new_index = tuple(_mirrored(i, lane) for i in index)
        head: list[N.Stmt] = []
        new_mask: E.Var | None = None
        if mask is not None:
            new_mask = E.Var(N.fresh_name(f"{s.mask.name}_fwd", self.taken), "i1", dims=s.mask.dims)
            terms = [_increasing(_mirrored(t, lane), lane) for t in E.conjuncts(mask)]
            head.append(N.Let(new_mask, E.conj(terms), line=s.line))
        axis = E.Const(lane.axis)
        if isinstance(s, N.Load):
            fwd = E.Var(N.fresh_name(f"{s.var.name}_fwd", self.taken), s.var.type, dims=s.var.dims)
            return [
                *head,
                dataclasses.replace(s, var=fwd, index=new_index, mask=new_mask),
                N.Let(s.var, E.Call("flip", (fwd, axis), s.var.type), line=s.line),
            ]
        stored: E.Expr = s.value
        if value_shape[lane.axis] == lane.extent:
            stored = E.Call("flip", (s.value, axis), s.value.dtype)
        return [*head, dataclasses.replace(s, index=new_index, mask=new_mask, value=stored)]


def _lane(s: N.Let) -> _Lane | None:
    """The lane ``s`` defines (a lifted ``tl.arange(0, B)``, ``B`` a power of two above 1), if any."""
    if not E.is_lane(s.value):
        return None
    shape = s.var.shape
    axes = [a for a, n in enumerate(shape) if n != 1]
    if len(axes) != 1:
        return None
    n = shape[axes[0]]
    if not isinstance(n, int) or n < 2 or n & (n - 1):
        return None
    return _Lane(s.var, axes[0], n)


def _backward(last: E.Expr, lanes: dict[str, _Lane]) -> _Lane | None:
    """The lane ``last`` decreases along (coefficient -1), the only lane it reads on that axis."""
    used = [lanes[v.name] for v in E.free_vars(last) if v.name in lanes]
    if not used:
        return None
    lin = E.linear(last, [u.var.name for u in used])
    if lin is None:
        return None
    coefs, _ = lin
    back = [u for u in used if coefs.get(u.var.name, 0) == -1]
    if len(back) != 1:
        return None
    return back[0]


def _only_along(e: E.Expr, lane: _Lane) -> bool:
    """Whether ``lane`` is the only thing ``e`` reads that varies along its axis."""
    rank = len(lane.var.shape)
    for n in e.walk():
        if isinstance(n, E.Var) and n.name == lane.var.name:
            continue
        if isinstance(n, (E.Var, E.Arange, E.Lift)):
            shape = n.shape
            if not shape:
                continue
            if len(shape) != rank or shape[lane.axis] != 1:
                return False
    return True


def _mirrored(e: E.Expr, lane: _Lane) -> E.Expr:
    """``e`` at the lane ``B - 1 - j`` for ``j``: an affine integer expression ``k * j + r`` as ``r + k * (B -
    1) - k * j`` spelled with ``j`` itself (bounds see through it), any other one substituted."""
    j = lane.var.name
    if j not in E.names(e):
        return e
    lin = E.linear(e, [j]) if E.is_int(e.dtype) and e.dtype != "i1" else None
    if lin is None:
        if isinstance(e, E.Bin) and e.op in _SWAPPED:  # a comparison: each side at the mirrored lane
            return E.Bin(e.op, _mirrored(e.lhs, lane), _mirrored(e.rhs, lane))
        return E.substitute(e, {j: E.Bin("-", E.Const(lane.extent - 1), lane.var)})
    coefs, rest = lin
    k = coefs.get(j, 0)
    base = E.fold(E.Bin("+", rest, E.Const(k * (lane.extent - 1))))
    if k == 0:
        return base
    term: E.Expr = lane.var if abs(k) == 1 else E.Bin("*", E.Const(abs(k)), lane.var)
    return E.Bin("-" if k > 0 else "+", base, term)


def _increasing(t: E.Expr, lane: _Lane) -> E.Expr:
    """Mask term ``t``, where it compares an expression decreasing in ``lane`` (coefficient -1), as the
    same comparison with ``lane`` alone on the left: ``a - j < b`` as ``j >= a - b + 1``."""
    if not (isinstance(t, E.Bin) and t.op in _SWAPPED):
        return t
    j = lane.var.name
    if j not in E.names(t) or not E.is_int(t.lhs.dtype) or not E.is_int(t.rhs.dtype):
        return t
    lin = E.linear(E.Bin("-", t.lhs, t.rhs), [j])
    if lin is None or lin[0].get(j, 0) != -1:
        return t
    rest = lin[1]  # t: rest - j op 0, i.e. j op' rest
    op = _SWAPPED[t.op]
    if op == ">":  # j > r as j >= r + 1
        return E.Bin(">=", lane.var, E.fold(E.Bin("+", rest, E.Const(1))))
    if op == "<=":  # j <= r as j < r + 1
        return E.Bin("<", lane.var, E.fold(E.Bin("+", rest, E.Const(1))))
    return E.Bin(op, lane.var, rest)
