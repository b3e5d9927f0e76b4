"""Accesses that run backwards along the lanes (``x.at(r, N - 1 - j)``: a flip, a reversed copy) read
and written forwards, the tile reversed in registers.

A load whose contiguous index is ``c - j`` for a lane ``j`` of a block (``tl.arange(0, B)`` on an
axis of the tile) has contiguity -1 along that axis; Triton vectorises only increasing runs, so each
thread reads its elements one at a time (a flip of the columns written a thread an element compiled
to 64 scalar loads a thread for sm_90a where the forward copy has 16 vector ones).

Under ``--schedule auto``, after the interior split (schedule/interior.py) and the coarsening, when
each block's extents are final: each load (store) whose last index, lets resolved, is affine in a
lane ``j`` of ``B`` with coefficient -1 is made forwards.  Where ``B`` is a multiple of ``V`` (16 bytes
of the element) and above it, in groups: with ``j = V * g + (V - 1 - k)`` (``g`` a lane of ``B / V`` on
``j``'s axis, ``k`` a lane of ``V`` on a new axis after it, the tile one rank higher),

* the load ``v = x[idx(j)]`` under ``mask(j)`` becomes ``w = x[idx(V * g + V - 1 - k)]`` under the mask
  there, and ``v = reshape(flip(w, k's axis), v's shape)``: ``flip(w)[g, k] = w[g, V - 1 - k]``, the
  element of lane ``V * g + k`` of ``v``, and the row-major reshape puts ``[g, k]`` at ``V * g + k``;
  each group of ``V`` reads ``V`` consecutive elements forwards (the last index is ``r - V * g + k``),
  one 16-byte access, and only the ``V`` elements of one group are reversed (Triton keeps them in one
  thread: no shuffles; sm_90a routes the reshape through shared memory, 16 ``st.shared`` and 16
  ``ld.shared`` a thread for a [32, 128] f32 tile where a flip of the whole row took 320 shuffles);
* the store ``x[idx(j)] = v`` under ``mask(j)`` becomes ``x[idx(V * g + V - 1 - k)] = flip(reshape(v,
  [.., B / V, V, ..]), k's axis)`` under the mask there: the element stored at ``[g, k]`` is ``v``'s at
  ``V * g + V - 1 - k``, where the lane ``j = V * g + V - 1 - k`` stored it.

Other lanes and loaded values of the index and mask (constant along ``j``'s axis) are put at the
higher rank (a lane of the same extent on the shifted axis; a value reshaped with a 1 inserted).
Where no grouping applies (``B <= V``, a tile in the index that is no variable), the whole access is
mirrored instead: ``j`` read as ``B - 1 - j`` in the index and mask and the value flipped along ``j``'s
axis (``tl.flip`` of the whole tile: shuffles across lanes).

``tl.flip`` (Triton 3.6) bit-casts to an integer of the element's width and reverses by xor sums: exact
for every value (NaN, -0.0 included).

*Proof obligations* (else the access stays as written): ``j`` is a lane (a lifted ``tl.arange(0,
B)``), ``B`` a power of two above 1; the accessed value has extent ``B`` on ``j``'s axis (or is
broadcast along it, for a store); nothing else in the index or the mask varies along that axis: every
other variable they read (lets resolved: offsets, loaded values, program ids) has extent 1 there or is
a scalar, so that the index and mask at another value of ``j`` are those of the lane there (a stored
value is reversed whole, whatever it reads).  A mask's comparisons that become decreasing in the lane
(``k``, or ``j`` mirrored) are written with it alone on the left (``a - k < b`` as ``k >= a - b + 1``),
the same lanes, so Triton proves them constant over aligned groups where the bounds allow it.
"""

from __future__ import annotations

import dataclasses

from ..sema.types import TYPES
from ..tir import expr as E
from ..tir import nodes as N
from .vecmasks import VECTOR_BYTES

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
        self.pointers = {a.name: a for a in kernel.args if isinstance(a, N.Pointer)}
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
        grouped = self.grouped(s, index, mask, lane, lanes)
        if grouped is not None:
            return grouped
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

    def grouped(
        self, s: N.Load | N.Store, index: list[E.Expr], mask: E.Expr | None, lane: _Lane, lanes: dict[str, _Lane]
    ) -> list[N.Stmt] | None:
        """The access as groups of ``V`` lanes (16 bytes): lane ``j = V * g + (V - 1 - k)`` of a tile one
        rank higher (``g`` of ``B / V`` on ``j``'s axis, ``k`` of ``V`` after it), so that each group reads
        ``V`` consecutive elements forwards along ``k`` and only the ``V`` elements a thread holds are
        reversed (``tl.flip`` over ``k``, in registers); the groups keep their places, each at its
        mirrored address.  None where the index or mask holds a tile that is not a variable, or ``B``
        is not a multiple of ``V``."""
        ptr = self.pointers[s.base]
        width = VECTOR_BYTES // (TYPES[ptr.dtype].nbytes if ptr.dtype in TYPES else 4)
        b, a = lane.extent, lane.axis
        if width < 2 or b % width or b == width:
            return None
        exprs = [*index, *([mask] if mask is not None else [])]
        if any(not n.children() and n.shape and not isinstance(n, E.Var) for e in exprs for n in e.walk()):
            return None
        rank = len(lane.var.shape)
        line = s.line
        g = E.Var(
            N.fresh_name(f"{lane.var.name}_grp", self.taken),
            "i32",
            lo=0,
            hi=b // width - 1,
            dims=_up(lane.var.shape, a, b // width, 1),
        )
        k = E.Var(
            N.fresh_name(f"{lane.var.name}_rev", self.taken),
            "i32",
            lo=0,
            hi=width - 1,
            dims=_up(lane.var.shape, a, 1, width),
        )
        head: list[N.Stmt] = [
            N.Let(g, E.Lift(E.Arange(b // width), rank + 1, (a,)), line=line),
            N.Let(k, E.Lift(E.Arange(width), rank + 1, (a + 1,)), line=line),
        ]
        at_j = E.Bin("+", E.Bin("*", E.Const(width), g), E.Bin("-", E.Const(width - 1), k))
        k_lane = _Lane(k, a + 1, width)
        env: dict[str, E.Expr] = {lane.var.name: at_j}
        for v in {v.name: v for e in exprs for v in E.free_vars(e)}.values():
            if v.name == lane.var.name or not v.shape:
                continue
            other = lanes.get(v.name)
            if other is not None:  # another lane: a lane of the higher rank (bounds read it as one)
                up_lane = E.Var(
                    N.fresh_name(f"{v.name}_up", self.taken),
                    "i32",
                    lo=0,
                    hi=other.extent - 1,
                    dims=_up(v.shape, a, v.shape[a], 1),
                )
                d = other.axis if other.axis < a else other.axis + 1
                head.append(N.Let(up_lane, E.Lift(E.Arange(other.extent), rank + 1, (d,)), line=line))
                env[v.name] = up_lane
            else:  # a loaded value, constant along j's axis
                env[v.name] = E.Reshape(v, _up(v.shape, a, v.shape[a], 1))

        def up(e: E.Expr) -> E.Expr:
            return _regrouped(e, lane.var.name, g, k, width, env)

        new_index = tuple(up(i) for i in index)
        new_mask: E.Var | None = None
        if mask is not None and s.mask is not None:
            new_mask = E.Var(
                N.fresh_name(f"{s.mask.name}_fwd", self.taken), "i1", dims=_up(s.mask.shape, a, b // width, width)
            )
            head.append(N.Let(new_mask, E.conj(_increasing(up(t), k_lane) for t in E.conjuncts(mask)), line=line))
        inner = E.Const(a + 1)
        if isinstance(s, N.Load):
            shape3 = _up(s.var.shape, a, b // width, width)
            fwd = E.Var(N.fresh_name(f"{s.var.name}_fwd", self.taken), s.var.type, dims=shape3)
            value = E.Reshape(E.Call("flip", (fwd, inner), s.var.type), s.var.shape)
            return [
                *head,
                dataclasses.replace(s, var=fwd, index=new_index, mask=new_mask),
                N.Let(s.var, value, line=line),
            ]
        shape = s.value.shape
        stored: E.Expr
        if shape[a] == b:
            stored = E.Call("flip", (E.Reshape(s.value, _up(shape, a, b // width, width)), inner), s.value.dtype)
        else:
            stored = E.Reshape(s.value, _up(shape, a, 1, 1))
        return [*head, dataclasses.replace(s, index=new_index, mask=new_mask, value=stored)]


def _linear(e: E.Expr, names: list[str]) -> tuple[dict[str, int], E.Expr] | None:
    """:func:`~..tir.expr.linear`, reading a negated variable (``-j + 3``, which folding spells so) as
    coefficient -1 of it: each ``-v`` of a named ``v`` is a variable of its own for ``linear``."""
    negs = {f"__neg_{v}": v for v in names}

    def unneg(x: E.Expr) -> E.Expr:
        if isinstance(x, E.Un) and x.op == "-" and isinstance(x.value, E.Var) and x.value.name in names:
            return dataclasses.replace(x.value, name=f"__neg_{x.value.name}")
        return E.map_children(x, unneg)

    lin = E.linear(unneg(e), [*names, *negs])
    if lin is None:
        return None
    coefs: dict[str, int] = {}
    for name, c in lin[0].items():
        v = negs.get(name, name)
        coefs[v] = coefs.get(v, 0) + (-c if name in negs else c)
    return {v: c for v, c in coefs.items() if c}, lin[1]


def _up(shape: E.Shape, axis: int, outer: E.Dim, inner: E.Dim) -> E.Shape:
    """``shape`` with its dimension ``axis`` as the two ``outer``, ``inner``."""
    return (*shape[:axis], outer, inner, *shape[axis + 1 :])


def _regrouped(e: E.Expr, j: str, g: E.Var, k: E.Var, width: int, env: dict[str, E.Expr]) -> E.Expr:
    """``e`` at ``j = width * g + (width - 1 - k)``, the other variables as ``env`` has them: an affine
    integer ``c * j + r`` spelled ``r' + c * (width - 1) + c * width * g - c * k`` with ``g`` and ``k`` as
    themselves (the form bounds and Triton's contiguity read), a comparison side by side."""
    if j not in E.names(e):
        return E.substitute(e, env)
    lin = _linear(e, [j]) if E.is_int(e.dtype) and e.dtype != "i1" else None
    if lin is None:
        if isinstance(e, E.Bin) and e.op in _SWAPPED:
            return E.Bin(e.op, _regrouped(e.lhs, j, g, k, width, env), _regrouped(e.rhs, j, g, k, width, env))
        return E.substitute(e, {**env, j: E.Bin("+", E.Bin("*", E.Const(width), g), E.Bin("-", E.Const(width - 1), k))})
    c = lin[0].get(j, 0)
    out: E.Expr = E.fold(E.Bin("+", E.substitute(lin[1], env), E.Const(c * (width - 1))))
    if c == 0:
        return out
    out = E.Bin("+" if c > 0 else "-", out, E.Bin("*", g, E.Const(abs(c) * width)))
    term: E.Expr = k if abs(c) == 1 else E.Bin("*", E.Const(abs(c)), k)
    return E.Bin("-" if c > 0 else "+", out, term)


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
    lin = _linear(last, [u.var.name for u in used])
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
    lin = _linear(e, [j]) if E.is_int(e.dtype) and e.dtype != "i1" else None
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
    lin = _linear(E.Bin("-", t.lhs, t.rhs), [j])
    if lin is None or lin[0].get(j, 0) != -1:
        return t
    rest = lin[1]  # t: rest - j op 0, i.e. j op' rest
    op = _SWAPPED[t.op]
    if op == ">":  # j > r as j >= r + 1
        return E.Bin(">=", lane.var, E.fold(E.Bin("+", rest, E.Const(1))))
    if op == "<=":  # j <= r as j < r + 1
        return E.Bin("<", lane.var, E.fold(E.Bin("+", rest, E.Const(1))))
    return E.Bin(op, lane.var, rest)
