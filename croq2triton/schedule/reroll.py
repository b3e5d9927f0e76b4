"""A loop unrolled by hand as the loop it was: ``foreach j in [N / 4] { s += x.at(r, 4 * j) + x.at(r, 4
* j + 1) + x.at(r, 4 * j + 2) + x.at(r, 4 * j + 3); }`` folds the elements ``0 .. 4 * (N / 4)`` of the
row, four a step (CUDA code does this for wider loads or fewer loop trips).  Folded into a tile as
written, each step's four loads are four tiles strided by 4 elements; as one loop over ``u = 4 * j +
k`` the row is one contiguous tile a block (``--schedule auto``).

What it proves on the IR (else the loop stays as written):

* the loop steps by 1 over bounds the same for every lane, and its body is ``let``s, loads and
  assignments only;
* every load that reads the counter ``j`` reads it in one dimension only, as ``c * j + R + k`` with
  one constant ``c >= 2`` for the loop, ``R`` free of ``j`` and ``k`` a constant; the loads of one
  tensor at the same other indices and ``R`` (a family) have the offsets ``k = 0 .. c - 1``, each
  once, and the same mask and fill but for that index;
* every assignment is a fold ``acc := op(acc, t_0 op .. op t_{c-1})`` (``+``, ``max``, ``min``; under a
  guard free of ``j`` and of the loads, or none) whose ``c`` terms are one expression of the loads
  of offset ``k``, one term each offset, reading ``j`` only through them; a sum's terms are added in
  the accumulator's type (f16 pairs added and rounded in f16 first stay as written);
* the lets that read ``j`` are read only by the loads' indices and masks and by the terms.

Then step ``j`` folds ``t(c j + 0), .., t(c j + c - 1)``, and the loop over ``u`` from ``c * start`` to
``c * stop`` folds ``t(u)`` for the same ``u`` in the same order; ``op`` is associative, so the
value is the same (a float ``+`` up to the order of its rounding, as folding the loop reorders it
anyway: schedule/foldloops.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..tir import expr as E
from ..tir import nodes as N

OPS = ("+", "max", "min")


class _NotRolled(Exception):
    pass


@dataclass
class _Family:
    base: str
    dim: int
    others: tuple[E.Expr, ...]  # the other indices (resolved)
    rest: E.Expr  # R
    mask: E.Expr | None  # the mask with the index of ``dim`` as the placeholder
    load: N.Load  # the load of offset 0
    by_k: dict[int, str]  # offset -> the load's variable


def reroll_loops(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each loop unrolled by hand that the proof admits rolled up again."""
    taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    done = [0]
    body = N.map_loops(kernel.body, lambda s: _loop(s, taken, done))
    if not done[0]:
        return kernel
    doc = kernel.doc + " Its loops unrolled by hand are the loops they were (schedule/reroll.py)."
    return dataclasses.replace(kernel, body=body, doc=doc)


def _loop(s: N.For, taken: set[str], done: list[int]) -> N.For:
    try:
        rolled = _rolled(s, taken)
    except _NotRolled:
        return s
    done[0] += 1
    return rolled


def _rolled(loop: N.For, taken: set[str]) -> N.For:
    j = loop.var.name
    if not (isinstance(loop.step, E.Const) and loop.step.value == 1) or loop.start.shape or loop.stop.shape:
        raise _NotRolled
    if not all(isinstance(s, (N.Let, N.Load, N.Assign, N.Store)) for s in loop.body):
        raise _NotRolled
    lets = {s.var.name: s.value for s in loop.body if isinstance(s, N.Let)}
    loads = [s for s in loop.body if isinstance(s, N.Load)]
    placeholder = E.Var("__u", loop.var.dtype)
    c, families, offset_of = _families(loads, lets, j, placeholder)
    assigns = [s for s in loop.body if isinstance(s, N.Assign)]
    stores = [s for s in loop.body if isinstance(s, N.Store)]
    if not assigns and not stores:
        raise _NotRolled
    folds = [_fold(s, lets, j, c, offset_of, families) for s in assigns]
    assigned = {s.var.name for s in assigns}
    written = _stores(stores, lets, j, c, placeholder, offset_of, families, assigned)
    for _, template, guard in folds:  # (a fold that reads another's accumulator sees it step by step)
        if any(v.name in assigned for e in (template, guard) if e is not None for v in E.free_vars(E.resolve(e, lets))):
            raise _NotRolled
    # the lets that read j or a load are inlined where the loads and folds are rebuilt: nothing kept
    # may read them
    rebuilt = {n for n, v in lets.items() if _reads(E.resolve(v, lets), {j}, offset_of)}
    kept = [s for s in loop.body if isinstance(s, N.Let) and s.var.name not in rebuilt]
    if any({v.name for v in E.free_vars(s.value)} & (rebuilt | offset_of.keys()) for s in kept):
        raise _NotRolled
    u = E.Var(N.fresh_name(f"{j}_rolled", taken), loop.var.dtype)
    body: list[N.Stmt] = list(kept)
    values: dict[str, E.Expr] = {}
    for f in families.values():
        at = E.fold(E.Bin("+", u, f.rest))
        index = list(f.others)
        index.insert(f.dim, at)
        mask = None
        if f.mask is not None:
            mask = E.Var(N.fresh_name("mask", taken), "i1", dims=f.mask.shape)
            body.append(N.Let(mask, E.fold(E.substitute(f.mask, {placeholder.name: at})), line=f.load.line))
        var = dataclasses.replace(f.load.var, name=N.fresh_name(f.load.var.name, taken))
        body.append(dataclasses.replace(f.load, var=var, index=tuple(index), mask=mask))
        values[f.load.var.name] = var
    for f, template in written:
        at = E.fold(E.Bin("+", u, f.rest))
        index = list(f.others)
        index.insert(f.dim, at)
        mask = None
        if f.mask is not None:
            mask = E.Var(N.fresh_name("mask", taken), "i1", dims=f.mask.shape)
            body.append(N.Let(mask, E.fold(E.substitute(f.mask, {placeholder.name: at})), line=f.load.line))
        body.append(N.Store(f.base, tuple(index), E.substitute(template, values), mask, line=f.load.line))
    for s, (op, template, guard) in zip(assigns, folds, strict=True):
        term = E.substitute(template, values)
        value: E.Expr = E.Bin(op, s.var, term)
        if guard is not None:
            value = E.Where(guard, value, s.var)
        body.append(N.Assign(s.var, E.fold(value), line=s.line))
    start = E.fold(E.Bin("*", E.Const(c), loop.start))
    stop = E.fold(E.Bin("*", E.Const(c), loop.stop))
    return N.For(u, start, stop, E.Const(1), body, pipeline=loop.pipeline, carried=loop.carried, line=loop.line)


def _families(
    loads: list[N.Load], lets: dict[str, E.Expr], j: str, placeholder: E.Var
) -> tuple[int, dict[tuple[str, int], _Family], dict[str, tuple[tuple[str, int], int]]]:
    """The step ``c``, the families of loads that read the counter (keyed by tensor and the first
    load's variable), and each such load's family and offset."""
    c: int | None = None
    found: list[tuple[N.Load, int, tuple[E.Expr, ...], E.Expr, E.Expr | None]] = []
    for ld in loads:
        index = [E.resolve(i, lets) for i in ld.index]
        dims = [d for d, i in enumerate(index) if j in {v.name for v in E.free_vars(i)}]
        if not dims:
            raise _NotRolled  # (a load the same every step: kept simple, the loop stays)
        if len(dims) != 1:
            raise _NotRolled
        d = dims[0]
        lin = E.linear(index[d], [j])
        if lin is None or lin[0].get(j, 0) < 2:
            raise _NotRolled
        if c is None:
            c = lin[0][j]
        elif lin[0][j] != c:
            raise _NotRolled
        mask = None
        if ld.mask is not None:
            mask = E.fold(E.replace(E.resolve(ld.mask, lets), index[d], placeholder))
            if j in {v.name for v in E.free_vars(mask)}:
                raise _NotRolled
        others = tuple(i for x, i in enumerate(index) if x != d)
        found.append((ld, d, others, lin[1], mask))
    if c is None:
        raise _NotRolled
    families: dict[tuple[str, int], _Family] = {}
    offset_of: dict[str, tuple[tuple[str, int], int]] = {}
    for ld, d, others, rest, mask in found:
        key, delta = _member(families, ld, d, others, rest)
        if key is None:
            key = (ld.base, len(families))
            families[key] = _Family(ld.base, d, others, rest, mask, ld, {})
        f = families[key]
        k = delta
        if k in f.by_k or ld.other != f.load.other or ld.nan_outside != f.load.nan_outside:
            raise _NotRolled
        if (mask is None) != (f.mask is None) or (mask is not None and not E.same(mask, f.mask)):  # type: ignore[arg-type]
            raise _NotRolled
        f.by_k[k] = ld.var.name
    for key, f in families.items():  # offsets 0 .. c - 1 from the smallest: its rest is R
        low = min(f.by_k)
        if sorted(f.by_k) != list(range(low, low + c)):
            raise _NotRolled
        first = next(ld for ld, *_ in found if ld.var.name == f.by_k[low])
        f.rest = E.fold(E.Bin("+", f.rest, E.Const(low)))
        f.load = first
        f.by_k = {k - low: v for k, v in f.by_k.items()}
        for k, v in f.by_k.items():
            offset_of[v] = (key, k)
    return c, families, offset_of


def _member(
    families: dict[tuple[str, int], _Family], ld: N.Load, d: int, others: tuple[E.Expr, ...], rest: E.Expr
) -> tuple[tuple[str, int] | None, int]:
    """The family ``ld`` belongs to (the same tensor, dimension and other indices, and a rest that
    differs by a constant) and that constant; (None, 0) where none."""
    for key, f in families.items():
        delta = E.fold(E.Bin("-", rest, f.rest))
        same = f.base == ld.base and f.dim == d and all(E.same(a, b) for a, b in zip(f.others, others, strict=True))
        if same and isinstance(delta, E.Const) and isinstance(delta.value, int):
            return key, delta.value
    return None, 0


def _fold(
    s: N.Assign,
    lets: dict[str, E.Expr],
    j: str,
    c: int,
    offset_of: dict[str, tuple[tuple[str, int], int]],
    families: dict[tuple[str, int], _Family],
) -> tuple[str, E.Expr, E.Expr | None]:
    """``acc := [where(g,] op(acc, t_0 op .. op t_{c-1}) [, acc)]``: (op, the term with the offset-0
    loads' variables, g)."""
    acc, value, guard = s.var, s.value, None
    if isinstance(value, E.Where) and isinstance(value.other, E.Var) and value.other.name == acc.name:
        guard, value = value.cond, value.then
        if _reads(E.resolve(guard, lets), {j, acc.name}, offset_of):
            raise _NotRolled
    if not (isinstance(value, E.Bin) and value.op in OPS):
        raise _NotRolled
    op = value.op
    for mine, other in ((value.lhs, value.rhs), (value.rhs, value.lhs)):
        if isinstance(mine, E.Var) and mine.name == acc.name:
            if op == "+" and other.dtype != acc.dtype:
                raise _NotRolled  # (the terms summed in another type first: f16 pairs rounded before the sum)
            terms = _terms(E.resolve(other, lets), op)
            break
    else:
        raise _NotRolled
    if len(terms) != c:
        raise _NotRolled
    templates: dict[int, E.Expr] = {}
    for t in terms:
        names = {v.name for v in E.free_vars(t)}
        if j in names or acc.name in names:
            raise _NotRolled
        mine = {offset_of[n] for n in names if n in offset_of}
        ks = {k for _, k in mine}
        if len(ks) != 1 or len({fam for fam, _ in mine}) != len(mine):
            raise _NotRolled
        k = ks.pop()
        if k in templates:
            raise _NotRolled
        # the term with each load of offset k as its family's offset-0 load
        templates[k] = E.substitute(t, {n: families[offset_of[n][0]].load.var for n in names if n in offset_of})
    first = templates[0]
    if not all(E.same(x, first) for x in templates.values()):
        raise _NotRolled
    return op, first, guard


@dataclass
class _Stored:
    base: str
    dim: int
    others: tuple[E.Expr, ...]
    rest: E.Expr  # R: the store of offset k writes ``c * j + R + k``
    mask: E.Expr | None  # the mask with the index of ``dim`` as the placeholder
    load: N.Store  # the store of offset 0 (its line)
    by_k: dict[int, E.Expr]  # offset -> the value with the offset-0 loads' variables


def _stores(
    stores: list[N.Store],
    lets: dict[str, E.Expr],
    j: str,
    c: int,
    placeholder: E.Var,
    offset_of: dict[str, tuple[tuple[str, int], int]],
    families: dict[tuple[str, int], _Family],
    assigned: set[str],
) -> list[tuple[_Stored, E.Expr]]:
    """The stores of the body as families (each ``c * j + R + k`` for ``k = 0 .. c - 1``, once each, the
    same mask but for that index) whose store of offset ``k`` writes one expression of the loads of
    offset ``k``: (family, that expression with the offset-0 loads).  The loop over ``u`` then writes
    ``u + R`` from the loads at ``u``, each element once in the same order; a tensor the loop reads is
    not written (else the order of a step's reads and writes could matter)."""
    read = {f.base for f in families.values()}
    found: list[_Stored] = []
    for st in stores:
        if st.base in read:
            raise _NotRolled
        index = [E.resolve(i, lets) for i in st.index]
        dims = [d for d, i in enumerate(index) if j in {v.name for v in E.free_vars(i)}]
        if len(dims) != 1:
            raise _NotRolled
        d = dims[0]
        lin = E.linear(index[d], [j])
        if lin is None or lin[0].get(j, 0) != c:
            raise _NotRolled
        mask = None
        if st.mask is not None:
            mask = E.fold(E.replace(E.resolve(st.mask, lets), index[d], placeholder))
            if j in {v.name for v in E.free_vars(mask)}:
                raise _NotRolled
        value = E.resolve(st.value, lets)
        names = {v.name for v in E.free_vars(value)}
        if j in names or names & assigned:
            raise _NotRolled
        mine = {offset_of[n] for n in names if n in offset_of}
        ks = {k for _, k in mine}
        if len(ks) != 1 or len({fam for fam, _ in mine}) != len(mine):
            raise _NotRolled
        k = ks.pop()
        template = E.substitute(value, {n: families[offset_of[n][0]].load.var for n in names if n in offset_of})
        others = tuple(i for x, i in enumerate(index) if x != d)
        rest = E.fold(E.Bin("-", lin[1], E.Const(k)))  # (R of the family: the offset-0 store's)
        for f in found:
            same = f.base == st.base and f.dim == d and all(E.same(a, b) for a, b in zip(f.others, others, strict=True))
            if same and E.same(E.fold(E.Bin("-", rest, f.rest)), E.Const(0)):
                break
        else:
            f = _Stored(st.base, d, others, rest, mask, st, {})
            found.append(f)
        if k in f.by_k or (mask is None) != (f.mask is None) or (mask is not None and not E.same(mask, f.mask)):  # type: ignore[arg-type]
            raise _NotRolled
        f.by_k[k] = template
    out = []
    for f in found:
        if sorted(f.by_k) != list(range(c)) or not all(E.same(t, f.by_k[0]) for t in f.by_k.values()):
            raise _NotRolled
        out.append((f, f.by_k[0]))
    return out


def _terms(e: E.Expr, op: str) -> list[E.Expr]:
    if isinstance(e, E.Bin) and e.op == op:
        return _terms(e.lhs, op) + _terms(e.rhs, op)
    return [e]


def _reads(e: E.Expr, names: set[str], loads: dict[str, object]) -> bool:
    free = {v.name for v in E.free_vars(e)}
    return bool(free & names) or bool(free & loads.keys())
