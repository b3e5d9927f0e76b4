"""Lane partials read only as totals, folded as totals: the lanes' axis first.

A block striding along its row (``foreach j in [cdiv(N, 256)] { acc += x.at(r, j * 256 + t); }``,
then the 256 partials through shared memory, a tree or a loop over them) is folded by
schedule/foldloops.py into a ``[BLOCK_J, 256]`` tile of the row whose counter axis leads, each
lane's partial ``acc := acc + tl.sum(T, axis=0)``, and the total ``tl.sum(acc, axis=0)``
(schedule/treefold.py, schedule/forward.py).  Folding the leading axis first crosses the warps that
axis lies along; on the H200 a ``[16, 256]`` f16 row so folded took 0.064 / 0.155 / 0.297 ms at 2 / 4
/ 8 warps, and 0.042 ms at any of them folded over the lanes first or all at once, the rate of a
hand-written one-program-a-row kernel (perf/probe_block_rows.py, 2026-12-04).

The rewrite: a group of lane variables (``acc``, and ``part`` where ``part := acc`` copies it) whose
every definition is

* ``V = I`` (a start not reading the group), or
* ``V := op(V, X)`` with one associative and commutative ``op`` (``+``, ``max``, ``min``) for the
  whole group and ``X`` a reduction of a tile with one axis more, not reading the group (a tile
  folded element-wise, a block's accumulator, stays: its one reduction after the loop would move
  into the loop), or
* ``V := W`` with ``W`` in the group (a copy of the same shape),

and that is read nowhere but as ``reduce(op, V, a)`` over one axis ``a`` of the same operator (and
by its own definitions) holds nothing but its totals: ``reduce(op, op(V, X), a)`` is ``op(reduce(op,
V, a), reduce(op, X, a))``.  Each ``V`` becomes ``V_<op>``, its total: ``reduce(op, I, a)``,
``op(V_<op>, total(X))``, ``W_<op>``; each read ``reduce(op, V, a)`` becomes ``V_<op>``.  With ``X``
``reduce(op, T, k)``, ``total(X)`` folds ``T``'s axis of the lanes' ``a`` first and then ``k``.  A float ``+`` sums in another order (within the dtype's rounding,
as every reduction here); the integer operators are exact.  Only statements of the top level and of
``for`` bodies take part (a group touched inside a branch or a ``while`` stays as it is).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from .foldloops import FOLDS, LEAD_PER_THREAD, WHOLE_PER_THREAD


def lanes_first(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each group of lane partials read only as totals kept as its totals (see the
    module docstring); the kernel itself where there is none."""
    groups = _groups(kernel.body)
    if not groups:
        return kernel
    taken = {v.name for s in N.walk(kernel.body) for v in N.defines(s)} | {a.name for a in kernel.args}
    taken |= {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Assign)}
    totals: dict[str, tuple[E.Var, str, int]] = {}  # lane variable -> (its total, reduce op, axis)
    for members, (op, axis) in groups:
        for v in members:
            name, k = f"{v.name}_{op}", 2
            while name in taken:
                name, k = f"{v.name}_{op}_{k}", k + 1
            taken.add(name)
            shape = tuple(d for i, d in enumerate(v.shape) if i != axis)
            totals[v.name] = (E.Var(name, v.dtype, dims=shape), op, axis)
    body = [_rewrite(s, totals) for s in kernel.body]
    doc = kernel.doc + (
        " Its lanes' partials read only as totals are kept as totals, folding the lanes' axis first"
        " (schedule/totals.py)."
    )
    out = dataclasses.replace(kernel, body=body, doc=doc)
    warps = kernel.warps_per
    if warps is not None and warps[2] == LEAD_PER_THREAD and not crosses_lead(out):
        # no reduction crosses the warps of the leading axis now: as many warps as a row's tile wants
        out = dataclasses.replace(out, warps_per=(warps[0], warps[1], WHOLE_PER_THREAD))
    return out


def crosses_lead(kernel: N.Kernel) -> bool:
    """Whether ``kernel`` still folds a tile of two or more axes over its leading axis: the
    reduction that crosses the warps of a folded row (fewer warps run it faster)."""
    for s in N.walk(kernel.body):
        for x in N.exprs_of(s):
            for n in x.walk():
                wide = [d for d in n.value.shape[1:] if d != 1] if isinstance(n, E.Reduce) else []
                if isinstance(n, E.Reduce) and n.axis == 0 and wide:  # (other axes of one element cross nothing)
                    return True
    return False


# ---------------------------------------------------------------- the proof
def _groups(body: list[N.Stmt]) -> list[tuple[list[E.Var], tuple[str, int]]]:
    """The groups of lane variables the rewrite takes, each with its reduce operator and axis."""
    lets: dict[str, E.Var] = {}
    nested: set[str] = set()  # defined or assigned inside a branch or a while
    for s in N.walk(body):
        if isinstance(s, N.Let) and s.var.shape:
            lets[s.var.name] = s.var
    for s in N.walk(body):
        if isinstance(s, (N.If, N.While)):
            inner = N.walk(s.then + s.orelse) if isinstance(s, N.If) else N.walk(s.body)
            for x in inner:
                nested |= {v.name for v in N.defines(x)}
                if isinstance(x, N.Assign):
                    nested.add(x.var.name)
                nested |= {v.name for e in N.exprs_of(x) for v in E.free_vars(e)}
            nested |= {v.name for e in N.exprs_of(s) for v in E.free_vars(e)}
    parent = {n: n for n in lets}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    ops: dict[str, set[str]] = {n: set() for n in lets}  # the fold operators of each variable
    bad: set[str] = set(nested)
    for s in N.walk(body):
        if not isinstance(s, N.Assign) or s.var.name not in lets:
            continue
        v = s.var.name
        if isinstance(s.value, E.Var) and s.value.name in lets and s.value.shape == s.var.shape:
            parent[find(v)] = find(s.value.name)
            continue
        fold = _update(s)
        if fold is None or not _reduces_more(fold[1], s.var):
            bad.add(v)  # (an element-wise fold of a tile, a block's accumulator: kept, reduced once after)
        else:
            ops[v].add(fold[0])
    members: dict[str, list[str]] = {}
    for n in lets:
        members.setdefault(find(n), []).append(n)
    out: list[tuple[list[E.Var], tuple[str, int]]] = []
    for names in members.values():
        group = set(names)
        if group & bad:
            continue
        folds = set().union(*(ops[n] for n in names))
        if len(folds) != 1 or not any(ops[n] for n in names):
            continue  # nothing folded into the group, or two operators
        (op,) = folds
        reads = _reads(body, group, op)
        if reads is None or len(reads) != 1:
            continue
        if any(not _starts_clear(s, group) for s in N.walk(body)):
            continue
        out.append(([lets[n] for n in names], (FOLDS[op], next(iter(reads)))))
    return out


def _update(s: N.Assign) -> tuple[str, E.Expr] | None:
    """``V := op(V, X)`` (or ``op(X, V)``) with ``X`` not reading ``V``: (op, X)."""
    v, value = s.var.name, s.value
    if not (isinstance(value, E.Bin) and value.op in FOLDS):
        return None
    for mine, other in ((value.lhs, value.rhs), (value.rhs, value.lhs)):
        if isinstance(mine, E.Var) and mine.name == v and v not in _names(other):
            return value.op, other
    return None


def _reduces_more(x: E.Expr, v: E.Var) -> bool:
    """``x`` is a reduction of a tile of one axis more than ``v``."""
    return isinstance(x, E.Reduce) and len(x.value.shape) == len(v.shape) + 1


def _reads(body: list[N.Stmt], group: set[str], op: str) -> set[int] | None:
    """The axes the group is read over, every read being ``reduce(op, V, axis)``; None where a
    variable of the group is read otherwise (a store of it, an element-wise use, a fold's value)."""
    axes: set[int] = set()
    for s in N.walk(body):
        if isinstance(s, N.Assign) and s.var.name in group:
            if isinstance(s.value, E.Var):
                continue  # a copy within the group
            fold = _update(s)
            assert fold is not None
            if _names(fold[1]) & group:
                return None
            continue
        for x in N.exprs_of(s):
            if not _only_reduced(x, group, FOLDS[op], axes):
                return None
    return axes


def _only_reduced(e: E.Expr, group: set[str], op: str, axes: set[int]) -> bool:
    if isinstance(e, E.Reduce) and isinstance(e.value, E.Var) and e.value.name in group:
        if e.op != op:
            return False
        axes.add(e.axis)
        return True
    flat = _flat_read(e, group)
    if flat is not None:
        if e.op != op:  # (``_flat_read`` answers only for a Reduce)
            return False
        axes.add(flat[1])
        return True
    if isinstance(e, E.Var):
        return e.name not in group
    return all(_only_reduced(c, group, op, axes) for c in e.children())


def _starts_clear(s: N.Stmt, group: set[str]) -> bool:
    """A start of the group does not read it."""
    return not (isinstance(s, N.Let) and s.var.name in group and _names(s.value) & group)


# ---------------------------------------------------------------- the rewrite
def _rewrite(s: N.Stmt, totals: dict[str, tuple[E.Var, str, int]]) -> N.Stmt:
    if isinstance(s, N.Let) and s.var.name in totals:
        tot, op, axis = totals[s.var.name]
        return N.Let(tot, _total_of(s.value, op, axis), line=s.line)
    if isinstance(s, N.Assign) and s.var.name in totals:
        tot, op, axis = totals[s.var.name]
        if isinstance(s.value, E.Var):
            return N.Assign(tot, totals[s.value.name][0], line=s.line)
        fold = _update(s)
        assert fold is not None
        binop, x = fold
        return N.Assign(tot, E.Bin(binop, tot, _total_of(_reads_totals(x, totals), op, axis)), line=s.line)
    if isinstance(s, N.For):
        body = [_rewrite(x, totals) for x in s.body]
        carried = tuple(totals[v.name][0] if v.name in totals else v for v in s.carried)
        return dataclasses.replace(s, body=body, carried=carried)
    return N.map_exprs(s, lambda e: _reads_totals(e, totals))


def _total_of(x: E.Expr, op: str, axis: int) -> E.Expr:
    """``reduce(op, x, axis)``, a start of zeros (or of one value, for max / min) folded, a
    reduction of a tile with one axis more folded over the lanes' axis first."""
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    if isinstance(x, E.Full) and (op != "sum" or x.value == 0):
        return E.Full(shape, x.value, x.type)  # (a 0-d tile where ``shape`` is (): typed, carried by loops)
    if isinstance(x, E.Reduce) and x.op == op and len(x.value.shape) == len(x.shape) + 1:
        k = x.axis
        lanes = axis if axis < k else axis + 1  # the tile's axis of the lanes' axis
        inner = E.Reduce(op, x.value, lanes)
        return E.Reduce(op, inner, k if k < lanes else k - 1)
    return E.Reduce(op, x, axis)


def _reads_totals(e: E.Expr, totals: dict[str, tuple[E.Var, str, int]]) -> E.Expr:
    """``e`` with each ``reduce(op, V, axis)`` of a lane variable ``V`` kept as totals read as the total
    (and each read of ``V`` flattened, :func:`_flat_read`, as the total's one element)."""
    for n in list(e.walk()):
        if isinstance(n, E.Reduce) and isinstance(n.value, E.Var) and n.value.name in totals:
            e = E.replace(e, n, totals[n.value.name][0])
            continue
        flat = _flat_read(n, totals.keys())
        if flat is not None:
            assert isinstance(n, E.Reduce)
            tot = totals[flat[0].name][0]
            one: E.Expr = tot if len(tot.shape) <= 1 else E.Reshape(tot, (1,))
            e = E.replace(e, n, one if not one.shape else E.Reduce(n.op, one, 0))
    return e


def _flat_read(e: E.Expr, group: Container[str]) -> tuple[E.Var, int] | None:
    """``reduce(op, reshape(V, [n]), 0)`` of ``V`` in ``group`` whose one axis ``k`` of more than one
    element holds ``n`` (a tree's total of lanes laid out ``[1, n]``): ``(V, k)``; it reads what
    ``reduce(op, V, k)`` reads, every other axis of ``V`` one element (so the total holds one element)."""
    if not (isinstance(e, E.Reduce) and e.axis == 0 and isinstance(e.value, E.Reshape)):
        return None
    v = e.value.value
    if not (isinstance(v, E.Var) and v.name in group and len(e.value.shape) == 1):
        return None
    wide = [i for i, d in enumerate(v.shape) if d != 1]
    if len(wide) != 1 or v.shape[wide[0]] != e.value.shape[0] or len(v.shape) < 2:
        return None
    return v, wide[0]
