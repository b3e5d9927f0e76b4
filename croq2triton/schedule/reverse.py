"""A lane's loop that walks its row from the end (``foreach j in [N] { .. x.at(r, N - 1 - j) .. }``) as
the loop over ``k = N - 1 - j`` that walks it forwards, where the order of the steps does not matter
or its tie rule flips exactly.  Folded as written (schedule/foldloops.py), the loads of a block run
backwards along the row (``x_ptr + .. - j * stride``), which Triton does not vectorise (an argmax so
written ran at 0.44 of the bandwidth roofline on the H100, a forward one at 0.90, issue 27).

What it proves on the IR (else the loop stays as written):

* the loop steps by 1 over ``[a, b)``, the same bounds for every lane; its body is ``let``s, loads,
  stores and assignments only, and schedule/foldloops.py admits it (:func:`~.foldloops.loop_folds`:
  every assignment is a fold, stores write distinct elements for distinct counters and a stored
  tensor is read only at the element the same step stores);
* every expression of the body reads the counter ``j`` only through ``c - j`` (an affine expression
  whose coefficient of ``j`` is -1, lets resolved), one ``c`` for every use, the same for every lane
  and read from nothing the body defines.

Then with ``k = c - j`` the steps ``j = a, .., b - 1`` are the steps ``k = c - b + 1, .., c - a`` in
the other order, and each step's statements are the same statements on the same values (``c - j``
is ``k``).  Running them in increasing ``k`` changes only the order of the steps:

* a fold by ``+``, ``*``, ``max``, ``min``, ``|``, ``&``, ``^`` (no running value read in the loop):
  associative and commutative, the same value in any order (a float sum or product up to the order
  of its rounding, which folding the loop reorders anyway: schedule/foldloops.py);
* stores to distinct elements, each read back only by its own step: any order;
* a pick of the best value and its position (schedule/argfold.py: ``at := where(G and f >= best, i,
  at)``, ``best`` a running max of ``f``).  Compared by ``>=`` (``<=``) it keeps the last position of
  the best value in the order the steps run; walking backwards that is the first in ``k``, which a
  strict ``>`` (``<``) keeps walking forwards; by ``>`` the first position in ``j``, the last in ``k``,
  which ``>=`` keeps.  Each comparison with ``best`` flips so.  The one difference is a tie with
  ``best``'s value before the loop ``b0`` (which the comparisons read as the value of a position
  before the first): ``v >= b0`` takes a tie walking backwards, ``v > b0`` never does; ``v > b0`` never,
  ``v >= b0`` does.  So a strict comparison becomes ``f >= best and f != b0`` (no tie with ``b0`` is
  ever taken, the ties between positions are), and a non-strict one ``f > best`` with the first ``k``
  where ``G and f == b0`` kept by a ``min`` fold ``tie`` (order-independent), and after the loop ``at :=
  where(tie found and best == b0, i at k = tie, at)``: where nothing beat ``b0`` the strict loop never
  took a position, and the backward walk's last tie is the forward walk's first.  ``b0`` must be a
  constant (the let or assignment of ``best`` before the loop in the same block), for floats not
  zero (``-0.0 == 0.0``: which tie ``best`` keeps would show in its sign), and ``i`` an expression of
  the counter and of values defined before the loop.  A max or min matched from a comparison with no
  position picked (``if (v >= m) m = v;``) flips the same way (its value's bits: the same tie kept).

What depends on the order stays as written: a running sum read at each step (a suffix sum: its
stored values are sums of the row's ends, not of its starts), a value picked where a condition
last holds (``last``), an online softmax's rescaled sum and Welford's steps (kept, though exact up to
rounding), a counter read as ``j`` as well (``y.at(r, j) = x.at(r, N - 1 - j)``: one of the two runs
backwards either way).
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N
from . import foldloops

ORDERLESS = ("+", "*", "max", "min", "|", "&", "^")
_FLIP = {">": ">=", ">=": ">", "<": "<=", "<=": "<"}
_SWAP = {">": "<", "<": ">", ">=": "<=", "<=": ">="}


class _Kept(Exception):
    pass


def reverse_walks(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each loop the proof admits walking forwards (the kernel itself where none)."""
    taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    done = [0]
    body = _block(kernel.body, taken, done)
    if not done[0]:
        return kernel
    doc = kernel.doc + " Its loops that walk a row from its end walk it forwards (schedule/reverse.py)."
    return dataclasses.replace(kernel, body=body, doc=doc)


def _block(stmts: list[N.Stmt], taken: set[str], done: list[int]) -> list[N.Stmt]:
    out: list[N.Stmt] = []
    for s in stmts:
        if isinstance(s, N.For):
            s = dataclasses.replace(s, body=_block(s.body, taken, done))
            try:
                made = _reversed(s, out, taken)
            # (an expression the rewrite does not take -- a shape, an index it cannot read -- leaves the loop
            # as written too: the rewrite only changes the order a walk runs in)
            except (_Kept, foldloops.NotFolded, ValueError, KeyError, TypeError, AssertionError):
                out.append(s)
                continue
            done[0] += 1
            out.extend(made)
            continue
        if isinstance(s, N.While):
            s = dataclasses.replace(s, body=_block(s.body, taken, done))
        elif isinstance(s, N.If):
            s = dataclasses.replace(s, then=_block(s.then, taken, done), orelse=_block(s.orelse, taken, done))
        out.append(s)
    return out


def _uses(e: E.Expr, j: str, found: list[E.Expr]) -> None:
    """Each ``c - j`` of ``e`` (its ``c`` into ``found``); :class:`_Kept` where ``j`` appears otherwise."""
    if j not in E.names(e):
        return
    lin = E.linear(e, [j])
    if lin is not None:
        coefs, rest = lin
        if coefs.get(j, 0) != -1:
            raise _Kept
        found.append(rest)
        return
    if isinstance(e, E.Var):
        raise _Kept
    E.map_children(e, lambda x: (_uses(x, j, found), x)[1])


def _sub(e: E.Expr, j: str, c: E.Expr, to: E.Expr) -> E.Expr:
    """``e`` with ``j`` as ``c - to``: each ``c - j`` in it as ``to``, any other affine use of ``j``
    rewritten and folded (the same value)."""
    if j not in E.names(e):
        return e
    lin = E.linear(e, [j])
    if lin is not None:
        coefs, rest = lin
        if coefs.get(j, 0) == -1 and E.same(rest, c):
            return to
        return E.fold(E.substitute(e, {j: E.Bin("-", c, to)}))
    if isinstance(e, E.Var):
        return E.Bin("-", c, to)
    return E.map_children(e, lambda x: _sub(x, j, c, to))


def _init(before: list[N.Stmt], name: str) -> E.Const | None:
    """The constant ``name`` holds where the loop starts: its last let or assignment in ``before``, a
    constant, with nothing after it assigning ``name``."""
    for i in range(len(before) - 1, -1, -1):
        s = before[i]
        if isinstance(s, (N.Let, N.Assign)) and s.var.name == name:
            later = [x for t in before[i + 1 :] for x in N.walk([t])]
            if any(isinstance(x, (N.Let, N.Assign)) and x.var.name == name for x in later):
                return None
            v = E.fold(s.value)
            if isinstance(v, E.Full):
                return E.Const(v.value, v.type)
            if isinstance(v, E.Const):
                return E.Const(v.value, s.var.dtype)
            return None
    return None


def _flipped(e: E.Expr, peer: str, b0: E.Const) -> E.Expr:
    """``e`` with each comparison of a value ``f`` with ``peer`` flipped (module docstring)."""

    def go(x: E.Expr) -> E.Expr:
        x = E.map_children(x, go)
        if not (isinstance(x, E.Bin) and x.op in _FLIP):
            return x
        if isinstance(x.rhs, E.Var) and x.rhs.name == peer:
            op, f, best = x.op, x.lhs, x.rhs
        elif isinstance(x.lhs, E.Var) and x.lhs.name == peer:
            op, f, best = _SWAP[x.op], x.rhs, x.lhs
        else:
            return x
        if peer in E.names(f):
            raise _Kept
        flipped = E.Bin(_FLIP[op], f, best)
        if op in (">", "<"):  # (a strict comparison: no tie with b0 taken)
            return E.Bin("&", flipped, E.Bin("!=", f, b0))
        return flipped

    return go(e)


def _reversed(loop: N.For, before: list[N.Stmt], taken: set[str]) -> list[N.Stmt]:
    j = loop.var.name
    if not (isinstance(loop.step, E.Const) and loop.step.value == 1) or loop.start.shape or loop.stop.shape:
        raise _Kept
    if not all(isinstance(s, (N.Let, N.Load, N.Assign, N.Store)) for s in loop.body):
        raise _Kept
    found: list[E.Expr] = []
    for s in loop.body:
        for e in N.exprs_of(s):
            _uses(e, j, found)
    loaded = [s for s in loop.body if isinstance(s, N.Load) and any(j in E.names(x) for x in s.index)]
    if not found or not loaded:
        raise _Kept
    c = found[0]
    if not all(E.same(x, c) for x in found) or c.shape:
        raise _Kept
    inner = {v.name for s in loop.body for v in N.defines(s)} | {
        s.var.name for s in loop.body if isinstance(s, N.Assign)
    }
    if E.names(c) & (inner | {j}):
        raise _Kept
    folds = foldloops.loop_folds(loop, [])
    body = list(loop.body)
    after: list[N.Stmt] = []
    lead: list[N.Stmt] = []
    carried = list(loop.carried)
    lets = {s.var.name: s.value for s in loop.body if isinstance(s, N.Let)}
    for f in folds.values():
        if f.pick is not None or f.of is not None:
            continue  # (below: a pick and its best value)
        if f.op not in ORDERLESS or f.running or f.rescaled is not None or f.welford is not None:
            raise _Kept
    start = E.fold(E.Bin("+", E.Bin("-", c, loop.stop), E.Const(1, c.dtype)))
    stop = E.fold(E.Bin("+", E.Bin("-", c, loop.start), E.Const(1, c.dtype)))
    lo = int(start.value) if isinstance(start, E.Const) and isinstance(start.value, int) else None
    k = E.Var(N.fresh_name(f"{j}_fwd", taken), loop.var.dtype, lo=lo)
    for name, f in folds.items():
        if f.of is not None and not any(g.pick is not None and g.pick.peer == name for g in folds.values()):
            # a max / min matched from a comparison (``if (v >= m) m = v;``): its value only
            b0 = _init(before, name)
            if b0 is None or (not E.is_int(b0.type) and b0.value == 0):
                raise _Kept
            body = [N.map_exprs(s, lambda e, p=name, b=b0: _flipped(e, p, b)) for s in body]
            continue
        p = f.pick
        if p is None:
            continue
        b0 = _init(before, p.peer)
        if b0 is None or (not E.is_int(b0.type) and b0.value == 0):
            raise _Kept
        body = [N.map_exprs(s, lambda e, q=p.peer, b=b0: _flipped(e, q, b)) for s in body]
        if not p.last:
            continue
        # (compared by >= / <=: the first k of a tie with b0, for after the loop)
        index = E.resolve(f.value, lets)
        if E.names(index) & inner:
            raise _Kept
        at = f.acc
        big = E.Const(2**31 - 1 if loop.var.dtype == "i32" else 2**63 - 1, loop.var.dtype)
        tie = E.Var(N.fresh_name(f"{at.name}_tie", taken), loop.var.dtype, dims=at.shape)
        lead.append(N.Let(tie, E.Full(at.shape, big.value, loop.var.dtype), line=loop.line))
        cond = E.Bin("==", p.of, b0)
        if f.guard is not None:
            cond = E.Bin("&", f.guard, cond)
        body.append(N.Assign(tie, E.Where(cond, E.Bin("min", tie, E.Bin("-", c, loop.var)), tie), line=loop.line))
        carried.append(tie)
        best = folds[p.peer].acc
        taken_tie = E.Bin("&", E.Bin("!=", tie, big), E.Bin("==", best, b0))
        after.append(N.Assign(at, E.Where(taken_tie, _sub(index, j, c, tie), at), line=loop.line))
    body = [N.map_exprs(s, lambda e: E.fold(_sub(e, j, c, k))) for s in body]
    new = dataclasses.replace(loop, var=k, start=start, stop=stop, body=body, carried=tuple(carried))
    return [*lead, new, *after]
