"""The proof that a symbolically run kernel computes a contraction (lift/contraction.py): mixed-radix
bijections onto covering ranges, guards, one sum of products over a covering contraction index."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from ..tir.contract import Contraction, Epilogue, EpiRead, Group, Operand, Scale
from .notlifted import NotLifted
from .terms import ACC, AccRead, Cells, Elem, EpiValue, Limits, Store, Term
from .terms import const_int as _const
from .terms import subst_elem as _subst_elem


def _radix(e: E.Expr, domain: dict[str, E.Expr], node: A.Node) -> tuple[E.Expr, set[str]]:
    """The range ``[0, R)`` that ``e`` maps its variables onto one to one, and those variables:
    ``e`` must be ``sum c_i v_i`` whose coefficients, in order, are 1, ext_0, ext_0 * ext_1 ... (a
    mixed-radix number; the coefficients may be expressions, compared by meaning). A variable of
    extent 1 is always 0 and takes no digit."""
    lin = E.linear_terms(e, domain)
    if lin is None or not (isinstance(lin[1], E.Const) and lin[1].value == 0):
        raise NotLifted("an index that is not a mixed-radix number of its variables", node)
    left = {n: c for n, c in lin[0].items() if _const(domain[n]) != 1}
    expect: E.Expr = E.Const(1)
    while left:
        # the next digit: the variable whose coefficient is the product of the extents so far
        # (on a tie, a constant extent first: it cannot be the outermost digit of a run-time one)
        fits = sorted((n for n, c in left.items() if E.same(c, expect)), key=lambda n: _const(domain[n]) is None)
        if not fits:
            raise NotLifted("an index that maps two variables onto one element", node)
        name = fits[0]
        expect = E.fold(expect * domain[name])
        del left[name]
    return expect, set(lin[0])


def _reflected(k: E.Expr, sums: dict[str, E.Expr]) -> E.Expr:
    """The contraction index ``k`` with each reduction variable ``v`` it takes with coefficient -1
    (``K - 1 - k``: the sum walks K backwards) replaced by ``n - 1 - v``, ``n`` its extent: a sum over
    all of ``[0, n)`` is the same in either order."""
    lin = E.linear_terms(k, sums)
    if lin is None:
        return k
    flip = {v.name: v for v in E.free_vars(k) if v.name in lin[0] and _const(E.fold(lin[0][v.name])) == -1}
    if not flip:
        return k
    env = {n: E.fold(sums[n] - E.Const(1) - v) for n, v in flip.items()}
    return E.fold(E.substitute(k, env))


def covers(r: E.Expr, extent: E.Expr) -> bool:
    """Whether ``r >= extent`` for every value of the sizes (``64 * cdiv(M, 64) >= M``)."""
    lo = E.bounds(E.fold(r - extent))[0]
    if lo is not None and lo >= 0:
        return True
    f = E.fold(r)
    # c * cdiv(X, d) with c >= d and X covering the extent
    parts = [f] if not (isinstance(f, E.Bin) and f.op == "*") else [f.lhs, f.rhs]
    if len(parts) == 2:
        cd = [p for p in parts if isinstance(p, E.CDiv)]
        k = [p for p in parts if isinstance(p, E.Const)]
        if cd and k and isinstance(cd[0].rhs, E.Const) and int(k[0].value) >= int(cd[0].rhs.value):
            return covers(cd[0].lhs, extent)
    if isinstance(f, E.CDiv) and isinstance(f.rhs, E.Const) and f.rhs.value == 1:
        return covers(f.lhs, extent)
    if len(parts) == 2:  # d * cdiv(X, d) >= X, whatever d is
        for p, q in (parts, parts[::-1]):
            if isinstance(q, E.CDiv) and E.same(q.rhs, p):
                return covers(q.lhs, extent)
    factors = _factors(f)
    if len(factors) > 2:  # ... among more factors (16 * S * cdiv(cdiv(K, 16), S)): the pair becomes X
        for i, q in enumerate(factors):
            if not isinstance(q, E.CDiv):
                continue
            for j, p in enumerate(factors):
                if j != i and E.same(p, q.rhs):
                    rest = [x for n, x in enumerate(factors) if n not in (i, j)]
                    new = q.lhs
                    for x in rest:
                        new = E.Bin("*", x, new)
                    return covers(E.fold(new), extent)
    return E.same(f, extent)


def _factors(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.Bin) and e.op == "*":
        return [*_factors(e.lhs), *_factors(e.rhs)]
    return [e]


def _guard_ok(g: E.Expr, index: list[E.Expr], extents: list[E.Expr]) -> bool:
    """A guard that keeps no more than the output's own bounds: ``F_d < X`` with ``X >= extent_d``."""
    for c in E.conjuncts(E.fold(g)):
        c = E.fold(c)
        if isinstance(c, E.Const) and c.value:
            continue
        if not isinstance(c, E.Bin) or c.op not in ("<", ">", "<=", ">="):
            return False
        lhs, rhs = (c.lhs, c.rhs) if c.op in ("<", "<=") else (c.rhs, c.lhs)
        if c.op in ("<=", ">="):
            rhs = E.fold(rhs + 1)
        if not any(E.same(lhs, i) and covers(rhs, x) for i, x in zip(index, extents, strict=True)):
            return False
    return True


def _atoms(e: E.Expr, op: str) -> list[E.Bin]:
    return [n for n in e.walk() if isinstance(n, E.Bin) and n.op == op and E.is_int(n.dtype)]


def _split_tile_ids(
    index: list[E.Expr],
    x: Elem,
    y: Elem,
    guards: list[E.Expr],
    spatial: dict[str, E.Expr],
    it: Any,
    node: A.Node,
    extra: list[Elem],
) -> tuple[list[E.Expr], Elem, Elem, list[E.Expr], list[Elem]]:
    """A linear tile id split as ``(t / D, t % D)`` (a persistent tile loop): when ``t`` is a
    mixed-radix number of its own variables guarded by ``t < Q * D``, the pair runs over
    ``[0, Q) x [0, D)`` one to one; it becomes two variables of those extents."""
    for div in {repr(a): a for i in index for a in _atoms(i, "/")}.values():
        t, d = div.lhs, div.rhs
        mod = E.Bin("%", t, d)
        lim = next((g.rhs for g in guards if isinstance(g, E.Bin) and g.op == "<" and E.same(g.lhs, t)), None)
        if lim is None and isinstance(t, E.Var) and t.name in spatial:
            lim = spatial[t.name]  # a parallel index is below its extent: `parallel t by Q * D`
        if lim is None:  # a flat element number (`(e * 128 + t) / 64`) below its variables' range
            lim = _radix_bound(t, d, spatial)
        if lim is None:
            raise NotLifted("a tile index divided by a run-time extent without a bound", node)
        f = E.fold(lim)
        q = None
        if isinstance(f, E.Bin) and f.op == "*":
            q = f.lhs if E.same(f.rhs, d) else f.rhs if E.same(f.lhs, d) else None
        fc, dc = _const(f), _const(d)
        if q is None and fc is not None and dc is not None and dc > 0 and fc % dc == 0:
            q = E.Const(fc // dc)  # (a constant bound: 4096 = 64 * 64)
        if q is None:
            raise NotLifted("a tile index bound that is not a multiple of its divisor", node)
        rng, used = _radix(t, spatial, node)
        if not covers(rng, f):
            raise NotLifted("a tile loop that leaves tiles out", node)
        qv, rv = it.fresh("tq", q), it.fresh("tr", d)
        for name in used:
            spatial.pop(name)
        spatial[qv.name], spatial[rv.name] = q, d

        def sub(e: E.Expr, div: E.Expr = div, mod: E.Expr = mod, qv: E.Expr = qv, rv: E.Expr = rv) -> E.Expr:
            return E.fold(E.replace_same(E.replace_same(e, div, qv), mod, rv))

        index = [sub(i) for i in index]
        x, y = x.mapped(sub), y.mapped(sub)
        extra = [r.mapped(sub) for r in extra]
        guards = [sub(g) for g in guards if not (isinstance(g, E.Bin) and g.op == "<" and E.same(g.lhs, t))]
        rest = [i for r in extra for i in r.index]
        if any(v.name in used for e in [*index, *x.index, *y.index, *guards, *rest] for v in E.free_vars(e)):
            raise NotLifted("a tile id used other than through its quotient and remainder", node)
    return index, x, y, guards, extra


def _radix_bound(t: E.Expr, d: E.Expr, spatial: dict[str, E.Expr]) -> E.Expr | None:
    """``R`` where ``t`` is a mixed-radix number of its variables (:func:`_radix`) whose range
    ``[0, R)`` is a known multiple of the constant divisor ``d``; None otherwise."""
    try:
        rng, _ = _radix(t, spatial, A.Empty())
    except NotLifted:
        return None
    r, dv = _const(rng), _const(d)
    if r is None or dv is None or dv <= 0 or r % dv:
        return None
    return rng


def _even_shifts(rows: list[list[E.Expr]], ordered: bool) -> tuple[int, tuple[bool, ...]] | None:
    """``(d, where)`` where each row of index expressions is the first one with ``i * d`` added at
    the positions ``where`` (row ``i`` of ``rows``, or in any order unless ``ordered``: the rows
    are then ``0, d, .., (n - 1) d`` apart); None for anything else."""
    base = rows[0]
    offsets: list[int] = []
    where: tuple[bool, ...] | None = None
    for k, row in enumerate(rows):
        deltas = [_const(E.fold(E.Bin("-", i, i0))) for i, i0 in zip(row, base, strict=True)]
        if any(d is None for d in deltas):
            return None
        moved = {int(d) for d in deltas if d}  # type: ignore[arg-type]
        if len(moved) > 1:
            return None
        offsets.append(moved.pop() if moved else 0)
        if k:
            positions = tuple(bool(d) for d in deltas)
            if where is not None and positions != where:
                return None
            where = positions
    step = min((o for o in offsets if o > 0), default=0)
    expect = [j * step for j in range(len(rows))]
    if step <= 0 or where is None or (offsets if ordered else sorted(offsets)) != expect:
        return None
    return step, where


def _shifted(base: list[E.Expr], where: tuple[bool, ...], j: E.Var, step: int) -> list[E.Expr]:
    """``base`` with ``j * step`` added at the positions ``where``."""
    return [E.fold(E.Bin("+", i, E.Bin("*", j, E.Const(step)))) if w else i for i, w in zip(base, where, strict=True)]


def _same_elem(x: Elem, y: Elem) -> bool:
    return (
        x.tensor == y.tensor
        and x.limits == y.limits
        and len(x.index) == len(y.index)
        and all(E.same(E.fold(i), E.fold(j)) for i, j in zip(x.index, y.index, strict=True))
    )


def _peeled(terms: list[Term], it: Any) -> list[Term]:
    """A K step written before or after the loop over the others (``mma`` on tile 0, then ``foreach
    k(1:)``): a term that is another's outermost sum at one past either end of its range, with its
    own sums renamed to the other's, joins it, one step longer. Repeated while any does."""
    terms = list(terms)
    merged = True
    while merged and len(terms) > 1:
        merged = False
        for ia, ta in enumerate(terms):
            for ib, tb in enumerate(terms):
                if ia == ib or ta.conds or tb.conds or ta.scales or tb.scales or len(tb.sums) != len(ta.sums) + 1:
                    continue
                (v, e), rest = tb.sums[0], tb.sums[1:]
                if not all(E.same(E.fold(x), E.fold(y)) for (_, x), (_, y) in zip(ta.sums, rest, strict=True)):
                    continue
                env = {w.name: r for (w, _), (r, _) in zip(ta.sums, rest, strict=True)}
                a, b = _subst_elem(ta.a, env), _subst_elem(ta.b, env)
                for at, shift in ((E.Const(-1), -1), (e, 0)):  # the step before the first, or after the last
                    here = {v.name: E.fold(at)}
                    if _same_elem(_subst_elem(tb.a, here), a) and _same_elem(_subst_elem(tb.b, here), b):
                        n = E.fold(e + E.Const(1))
                        j = it.fresh("j", n)
                        to = {v.name: E.fold(j + E.Const(shift))}
                        za, zb = ta.a.zfill and tb.a.zfill, ta.b.zfill and tb.b.zfill
                        na = replace(_subst_elem(tb.a, to), zfill=za)
                        nb = replace(_subst_elem(tb.b, to), zfill=zb)
                        terms = [t for k, t in enumerate(terms) if k not in (ia, ib)] + [Term(((j, n), *rest), na, nb)]
                        merged = True
                        break
                if merged:
                    break
            if merged:
                break
    return terms


def _at_least_zero(e: E.Expr) -> bool:
    """``e`` is never negative: by its bounds, or as ``x - x / c`` (``x >= 0``, ``c >= 1``) plus
    something that is not (``t - t / 2``: the tiles a second half of a K loop counts)."""
    e = E.fold(e)
    if E.nonneg(e):
        return True
    for q in e.walk():
        divides = isinstance(q, E.Bin) and q.op == "/" and isinstance(q.rhs, E.Const) and int(q.rhs.value) >= 1
        if divides and E.nonneg(q.lhs) and E.nonneg(E.fold(e - (q.lhs - q))):  # type: ignore[attr-defined]
            return True
    return False


def _concatenated(terms: list[Term], it: Any) -> list[Term]:
    """A K loop written as two loops over consecutive ranges into one accumulator (``foreach k in
    [h]``, then ``foreach k in [t - h]`` at ``h + k``): a term that is another's with one sum's
    variable ``v`` (range ``[0, e1)``) replaced by ``e1 + w`` (``w`` its own sum's, range ``[0,
    e2)``), its other sums renamed to the other's, joins it: one sum over ``[0, e1 + e2)``, each
    step the same product.  Both ranges must be provably non-negative (a loop over a negative count
    runs no step, which the joined range would not say).  Repeated while any does."""
    terms = list(terms)
    merged = True
    while merged and len(terms) > 1:
        merged = False
        for ia, ta in enumerate(terms):
            for ib, tb in enumerate(terms):
                if ia == ib or ta.conds or tb.conds or ta.scales or tb.scales or len(tb.sums) != len(ta.sums):
                    continue
                if (ta.a.tensor, ta.b.tensor) != (tb.a.tensor, tb.b.tensor):
                    continue
                for p, ((v, e1), (w, e2)) in enumerate(zip(ta.sums, tb.sums, strict=True)):
                    others = [(x, y) for q, (x, y) in enumerate(zip(ta.sums, tb.sums, strict=True)) if q != p]
                    if not all(E.same(E.fold(x[1]), E.fold(y[1])) for x, y in others):
                        continue
                    if not (_at_least_zero(e1) and _at_least_zero(e2)):
                        continue
                    env = {x[0].name: y[0] for x, y in others}
                    env[v.name] = E.fold(e1 + w)
                    if not (_same_elem(_subst_elem(ta.a, env), tb.a) and _same_elem(_subst_elem(ta.b, env), tb.b)):
                        continue
                    n = E.fold(e1 + e2)
                    j = it.fresh("j", n)
                    to = {v.name: j}
                    za, zb = ta.a.zfill and tb.a.zfill, ta.b.zfill and tb.b.zfill
                    na = replace(_subst_elem(ta.a, to), zfill=za)
                    nb = replace(_subst_elem(ta.b, to), zfill=zb)
                    sums = tuple((j, n) if q == p else s for q, s in enumerate(ta.sums))
                    terms = [t for k, t in enumerate(terms) if k not in (ia, ib)] + [Term(sums, na, nb)]
                    merged = True
                    break
                if merged:
                    break
            if merged:
                break
    return terms


def _unrolled(terms: list[Term], it: Any) -> list[Term]:
    """Terms that differ only by constant offsets ``0, d, .., (n - 1) d`` added to the same index
    positions (a K loop unrolled by hand: ``a.at(m, 2k) * b.at(n, 2k) + a.at(m, 2k + 1) * ...``) are
    one term with one more summation variable ``j`` in ``[0, n)`` adding ``j * d`` there: the same
    sum, term by term. Anything else is returned as it is (and refused by the caller)."""
    if len(terms) < 2:
        return terms
    t0 = terms[0]
    if any(
        t.conds or t.scales or t.sums != t0.sums or (t.a.tensor, t.b.tensor) != (t0.a.tensor, t0.b.tensor)
        for t in terms
    ):
        return terms
    shifts = _even_shifts([[*t.a.index, *t.b.index] for t in terms], ordered=True)
    if shifts is None or t0.a.limits or t0.b.limits:
        return terms
    step, where = shifts
    n = len(terms)
    j = it.fresh("j", E.Const(n))
    shifted = _shifted([*t0.a.index, *t0.b.index], where, j, step)
    na = len(t0.a.index)
    za, zb = all(t.a.zfill for t in terms), all(t.b.zfill for t in terms)
    a, b = Elem(t0.a.tensor, tuple(shifted[:na]), zfill=za), Elem(t0.b.tensor, tuple(shifted[na:]), zfill=zb)
    return [Term((*t0.sums, (j, E.Const(n))), a, b)]


def _factored(term: Term, st: Store, cells: Cells, env: dict[str, E.Expr], it: Any, node: A.Node) -> tuple[Term, Store]:
    """A product of more than two tensor elements (``a.at(m, k) * rs.at(m) * b.at(n, k)``) whose
    factors but two read no element that varies with the sum's variables: those two are the
    operands, and the others, the same for every term of the sum, multiply the sum instead, in the
    epilogue (``sum_k a * s * b = s * sum_k a * b``).  Factors of another form (a block scale,
    ``sa[m][k / 128]``) are left to the proof's scales."""
    if not term.scales:
        return term, st
    sums = {v.name for v, _ in term.sums}
    pool = [term.a, term.b, *term.scales]

    def in_k(el: Elem) -> set[str]:
        return {v.name for i in el.index for v in E.free_vars(i) if v.name in sums}

    full = set().union(*(in_k(f) for f in pool))
    ops = [j for j, f in enumerate(pool) if full and in_k(f) == full]  # the factors indexed by all of K
    if len(ops) != 2:
        return term, st
    ks = [pool[j] for j in ops]
    by_k = tuple(f for j, f in enumerate(pool) if j not in ops and in_k(f))  # per block of K: the proof's scales
    rest = [f for f in pool if not in_k(f)]
    if not rest:
        return Term(term.sums, ks[0], ks[1], term.conds, by_k), st
    from .arith import Value
    from .epilogue import EpilogueEval, acc_ctype

    if acc_ctype(cells) != "f32":
        raise NotLifted("an integer sum of products of more than two elements", node)
    ev = EpilogueEval(it)
    v = Value(E.Var(ACC, "f32"), "f32")
    for f in rest:
        v = ev.binary("*", v, ev.read(_subst_elem(f, env), node), node)
    v = ev.convert(v, "f32")
    old = st.epi
    if old is None:
        epi = EpiValue(v.expr, "f32", tuple(ev.reads.items()))
    else:
        scaled = E.substitute(old.expr, {ACC: v.expr})
        epi = EpiValue(scaled, old.ctype, (*old.reads, *ev.reads.items()), old.scalars)
    return Term(term.sums, ks[0], ks[1], term.conds, by_k), replace(st, epi=epi)


def _added(term: Term, st: Store, count: int, it: Any, node: A.Node) -> tuple[Term, Store]:
    """``__atomic_add(out.at(m, n), sum)`` (Store.atomic): each writer adds its sum to the element as it
    was, so the writers that differ only in indices the element's does not use (a split-K's K ranges,
    blocks of a grid component) add their sums: those indices join the sum's variables (the proof
    then needs the products of all of them to be one sum over K, each step once), and the element
    stored is ``out + sum`` (out read as it was before the kernel)."""
    if count != 1 or st.epi is not None or st.pins:
        raise NotLifted("an atomic add of this form", node)
    used = {v.name for i in st.index for v in E.free_vars(i)}
    split = [(v, x) for v, x in st.spatial if v.name not in used and _const(x) != 1]
    if any(v.name in {w.name for g in st.guard for w in E.free_vars(g)} for v, _ in split):
        raise NotLifted("an atomic add under a condition on its split", node)
    spatial = tuple((v, x) for v, x in st.spatial if (v, x) not in split)
    name = f"%r{next(it.ids)}"
    epi = EpiValue(E.Var(name, "f32") + E.Var(ACC, "f32"), "f32", ((name, Elem(st.tensor, st.index)),))
    term = Term((*split, *term.sums), term.a, term.b, term.conds, term.scales)
    return term, replace(st, spatial=spatial, epi=epi, atomic=False)


def _pieces(stores: list[Store], it: Any, node: A.Node) -> Store:
    """Several stores that are pieces of one (warp roles written out one by one, each storing its
    rows of the block's tile: ``output.subspan(64, N).at(bm * 2 + 1, bn)`` with A's rows ``64 *
    1`` further on) as one store with one more spatial variable ``j`` in ``[0, n)``: store ``i``
    is store 0 with ``i * d`` added at the same index positions of the output and the operands
    (its guards alike), its own variables renamed to store 0's position by position.  The merged
    store is then proved as any other, so the pieces must still write every output element once
    with its sum of products.  NotLifted where the stores are not such pieces."""
    refuse = NotLifted("an output written by more than one store", node)
    flat: list[tuple[list[E.Expr], Elem, Elem, list[E.Expr], Store, Term]] = []
    for st in stores:
        cells = st.value.cells
        terms = _unrolled(cells.terms, it)
        if not cells.zero or len(terms) != 1 or terms[0].conds or terms[0].scales or st.epi is not None:
            raise refuse
        env = {v.name: i for v, i in zip(cells.coords, st.value.idx, strict=True)}
        t = terms[0]
        x, y = _subst_elem(t.a, env), _subst_elem(t.b, env)
        flat.append(([E.fold(i) for i in st.index], x, y, [E.fold(g) for g in st.guard], st, t))
    idx0, x0, y0, g0, st0, t0 = flat[0]
    base = [*idx0, *x0.index, *y0.index]
    rows: list[list[E.Expr]] = []
    renamed_guards: list[list[E.Expr]] = []
    for idx, x, y, g, st, t in flat:
        if (
            st.tensor != st0.tensor
            or (x.tensor, y.tensor) != (x0.tensor, y0.tensor)
            or (x.limits, y.limits, st.limits) != (x0.limits, y0.limits, st0.limits)
            or [e for _, e in t.sums] != [e for _, e in t0.sums]
            or [e for _, e in st.spatial] != [e for _, e in st0.spatial]
            or len(g) != len(g0)
            or st.value.cells.elem != st0.value.cells.elem
        ):
            raise refuse
        rename = {v.name: v0 for (v, _), (v0, _) in zip((*t.sums, *st.spatial), (*t0.sums, *st0.spatial), strict=True)}
        rows.append([E.fold(E.substitute(e, rename)) for e in (*idx, *x.index, *y.index)])
        renamed_guards.append([E.fold(E.substitute(e, rename)) for e in g])
    shifts = _even_shifts(rows, ordered=False)
    if shifts is None:
        raise refuse
    step, where = shifts

    def moved(g: E.Expr, row: list[E.Expr]) -> E.Expr:  # a guard of store 0 where the indices are ``row``
        for e0, e, w in zip(base, row, where, strict=True):
            if w:
                g = E.replace_same(g, e0, e)
        return g

    for row, guards in zip(rows, renamed_guards, strict=True):  # the guards shifted as the indices are
        if not all(E.same(E.fold(moved(gb, row)), gi) for gi, gb in zip(guards, g0, strict=True)):
            raise refuse
    n = len(flat)
    j = it.fresh("piece", E.Const(n))
    moved_e = _shifted(base, where, j, step)
    guards = [moved(g, moved_e) for g in g0]
    ni, nx = len(idx0), len(x0.index)
    x = Elem(x0.tensor, tuple(moved_e[ni : ni + nx]), x0.limits, all(f[1].zfill for f in flat))
    y = Elem(y0.tensor, tuple(moved_e[ni + nx :]), y0.limits, all(f[2].zfill for f in flat))
    cells = Cells(st0.value.cells.elem, (), (), [Term(t0.sums, x, y)], zero=True, line=st0.value.cells.line)
    return Store(
        st0.tensor,
        tuple(moved_e[:ni]),
        AccRead(cells, ()),
        tuple(guards),
        (*st0.spatial, (j, E.Const(n))),
        st0.line,
        None,
        st0.limits,
    )


def _pinned(st: Store) -> Store:
    """``st`` with the unit indices an enclosing ``inthreads (p == c)`` fixed (Store.pins) put in
    its index, guards, epilogue and the terms of its accumulator, and out of its spatial variables."""
    if not st.pins:
        return st
    env = dict(st.pins)

    def f(e: E.Expr) -> E.Expr:
        return E.fold(E.substitute(e, env))

    cells = st.value.cells
    terms = [
        Term(t.sums, t.a.mapped(f), t.b.mapped(f), t.conds, tuple(x.mapped(f) for x in t.scales)) for t in cells.terms
    ]
    epi = st.epi
    if epi is not None:
        epi = replace(epi, expr=f(epi.expr), reads=tuple((n, el.mapped(f)) for n, el in epi.reads))
    return Store(
        st.tensor,
        tuple(f(i) for i in st.index),
        AccRead(replace(cells, terms=terms), tuple(f(i) for i in st.value.idx)),
        tuple(f(g) for g in st.guard),
        tuple((v, x) for v, x in st.spatial if v.name not in env),
        st.line,
        epi,
        tuple((d, f(lo), f(hi)) for d, lo, hi in st.limits),
    )


def prove(it: Any, node: A.Node) -> Contraction:
    if not it.stores:
        raise NotLifted("a kernel that stores nothing", node)
    stores = [_pinned(x) for x in it.stores]
    st = stores[0] if len(stores) == 1 else _pieces(stores, it, node)
    cells = st.value.cells
    terms = _unrolled(_concatenated(_peeled(cells.terms, it), it), it)
    if not cells.zero or len(terms) != 1 or terms[0].conds:
        raise NotLifted("an accumulator that is not one zero-initialised sum of products", node)
    env = {v.name: i for v, i in zip(cells.coords, st.value.idx, strict=True)}
    term, st = _factored(terms[0], st, cells, env, it, node)
    if st.atomic:
        term, st = _added(term, st, len(stores), it, node)
    x, y = _subst_elem(term.a, env), _subst_elem(term.b, env)
    out_t = it.tensors[st.tensor]
    if st.tensor in (x.tensor, y.tensor):
        raise NotLifted("an output that is also an operand", node)
    spatial = {v.name: ext for v, ext in st.spatial}
    sums = {v.name: ext for v, ext in term.sums}
    index = [E.fold(i) for i in st.index]
    guards = [E.fold(c) for g in st.guard for c in E.conjuncts(E.fold(g))]
    reads = [el for _, el in st.epi.reads] if st.epi is not None else []
    scales = [_subst_elem(f, env) for f in term.scales]
    index, x, y, guards, both = _split_tile_ids(index, x, y, guards, spatial, it, node, reads + scales)
    reads, scales = both[: len(reads)], both[len(reads) :]
    out_ext = [it.size(d) for d in out_t.extents]
    group, index, x, y = _grouping(it, st, index, x, y, reads + scales, spatial, node)
    if group is not None:  # (the guards on read values are the group's count: _grouping)
        guards = [g for g in guards if not any(v.name in it.data for v in E.free_vars(g))]
    if group is not None and scales:
        raise NotLifted("a grouped block-scaled contraction", node)
    kinds: list[str] = []
    for i in index:
        in_x = [d for d, j in enumerate(x.index) if E.same(i, j)]
        in_y = [d for d, j in enumerate(y.index) if E.same(i, j)]
        kinds.append("batch" if in_x and in_y else "x" if in_x else "y" if in_y else "?")
    for one in ("x", "y"):  # out[bi, m, n] = sum_k x[bi, m, k] * w[n, k]: a batch of one operand, the other shared
        if kinds.count(one) == 2 and "batch" not in kinds and kinds.count("y" if one == "x" else "x") == 1:
            kinds[kinds.index(one)] = "batch"
    if "?" in kinds or kinds.count("x") != 1 or kinds.count("y") != 1 or kinds.count("batch") > 1:
        raise NotLifted("a store whose index is not (batch,) row, column of the two operands", node)
    if kinds.index("x") > kinds.index("y"):
        x, y = y, x
        kinds = ["batch" if k == "batch" else "y" if k == "x" else "x" for k in kinds]
    used: set[str] = set()
    for d, i in enumerate(index):
        r, vs = _radix(i, spatial, node)
        if used & vs:
            raise NotLifted("two output dimensions indexed by one variable", node)
        used |= vs
        # (a group's rows: each group's count of them, where the group states one)
        in_group = group is not None and kinds[d] == "x" and group.count is not None and covers(r, group.count)
        if not covers(r, out_ext[d]) and not in_group:
            raise NotLifted("a tiling that leaves output elements unwritten", node)
    if any(r.tensor == st.tensor for r in reads) and any(n not in used and _const(x) != 1 for n, x in spatial.items()):
        # (``foreach t in [2] out.at(m, n) += s;``: each pass reads what the previous one wrote)
        raise NotLifted("an output element read and written again by several iterations", node)
    if not all(_guard_ok(g, index, out_ext) for g in guards):
        raise NotLifted("a store guard that is not the output's own bounds", node)

    if group is not None and "batch" in kinds:
        raise NotLifted("a grouped contraction with a batch dimension", node)

    def operand(e: Elem, free_kind: str) -> tuple[Operand, E.Expr]:
        t = it.tensors[e.tensor]
        dims: dict[str, int] = {}
        for kind, i in zip(kinds, index, strict=True):
            if kind in ("batch", free_kind):
                found = [d for d, j in enumerate(e.index) if E.same(i, j)]
                if found:  # (a batch the other operand alone has: this one is shared by every batch)
                    dims[kind] = found[0]
        if group is not None:  # the operand's dimension the group index selects
            gd = [d for d, j in enumerate(e.index) if isinstance(j, E.Var) and j.name == group.var]
            if gd:
                dims["batch"] = gd[0]
        rest = [d for d in range(len(e.index)) if d not in dims.values()]
        if len(rest) != 1 or len(e.index) != len(t.extents):
            raise NotLifted("an operand with more than one contracted dimension", node)
        return Operand(e.tensor, t.elem, len(e.index), dims[free_kind], rest[0], dims.get("batch")), e.index[rest[0]]

    a, ka = operand(x, "x")
    b, kb = operand(y, "y")
    if not E.same(ka, kb):
        raise NotLifted("operands indexed by two different contraction indices", node)
    ka = _reflected(ka, sums)
    kr, kvars = _radix(ka, sums, node)
    if kvars != set(sums):
        raise NotLifted("a reduction over a variable that does not index the operands", node)
    for op in (a, b):
        if not covers(kr, it.size(it.tensors[op.tensor].extents[op.inner])):
            raise NotLifted("a reduction that stops before the end of K", node)
    k_ext = it.size(it.tensors[a.tensor].extents[a.inner])
    # reads past K that rely on the out-of-bounds fill (the OOB sanitizer's NaN): an operand the source
    # neither copies with .zfill nor guards, where its K range overshoots K
    k_read = None if (x.zfill and y.zfill) or E.same(E.fold(kr), E.fold(k_ext)) else E.fold(kr)
    od = {k: d for d, k in enumerate(kinds)}
    out = Operand(st.tensor, out_t.elem, len(index), od["x"], od["y"], od.get("batch"))
    factors, scale_k = _scale_factors(scales, index[od["x"]], index[od["y"]], ka, spatial, sums, it, node)
    epilogue = _epilogue(st, reads, index, kinds, (a.tensor, b.tensor), it, node)
    tile = _source_tile(st, spatial, index, od, it)
    seen: dict[str, tuple[E.Expr, int]] = {}
    for x_, d_ in it.assumptions:
        seen.setdefault(f"{x_!r}%{d_}", (x_, d_))
    return Contraction(
        a,
        b,
        out,
        cells.elem,
        tile,
        it.red_line or cells.line,
        st.line,
        tuple(sorted(set(it.notes))),
        tuple(seen.values()),
        epilogue,
        group,
        factors,
        scale_k,
        k_read=k_read,
    )


def _block(j: E.Expr, target: E.Expr, domain: dict[str, E.Expr]) -> int | None:
    """``d`` with ``j == target // d`` for every value of the variables: ``target`` is a mixed-radix
    number whose digits of weight below ``d`` range over exactly ``[0, d)`` and ``j`` is the rest over ``d``."""
    lin = E.linear(target, domain)
    if lin is None or _const(lin[1]) != 0:
        return None
    coefs = lin[0]
    var = {v.name: v for v in E.free_vars(target)}
    for d in sorted({c for c in coefs.values() if c > 1}):
        low = {v: c for v, c in coefs.items() if c < d}
        high = {v: c for v, c in coefs.items() if c >= d}
        if any(c % d for c in high.values()):
            continue
        low_e: E.Expr = E.Const(0)
        for v, c in low.items():
            low_e = low_e + E.Const(c) * var[v]
        try:
            rng, _ = _radix(E.fold(low_e), domain, None)  # type: ignore[arg-type]
        except NotLifted:
            continue
        if _const(rng) != d:
            continue
        high_e: E.Expr = E.Const(0)
        for v, c in high.items():
            high_e = high_e + E.Const(c // d) * var[v]
        if E.same(j, E.fold(high_e)):
            return d
    return None


def _scale_factors(
    scales: list[Elem],
    row: E.Expr,
    col: E.Expr,
    k: E.Expr,
    spatial: dict[str, E.Expr],
    sums: dict[str, E.Expr],
    it: Any,
    node: A.Node,
) -> tuple[tuple[Scale, ...], int]:
    """Each factor's index as output coordinates or K over block sizes (``sa[m][k / 128]``,
    ``sb[n / 128][k / 128]``); one block size of K for all."""
    out: list[Scale] = []
    ks: set[int] = set()
    for f in scales:
        if f.limits and not _trivial(f.limits, f.tensor, it):
            raise NotLifted("a scale read through a view smaller than its tensor", node)
        dims: list[tuple[str, int]] = []
        for j in f.index:
            j = E.fold(j)
            if _const(j) == 0:
                dims.append(("0", 0))
                continue
            found = None
            for kind, target, domain in (("m", row, spatial), ("n", col, spatial), ("k", k, sums)):
                if E.same(j, target):
                    found = (kind, 1)
                    break
                d = _block(j, target, domain)
                if d is not None:
                    found = (kind, d)
                    break
            if found is None:
                raise NotLifted("a scale indexed other than by output coordinates and blocks of K", node)
            if found[0] == "k":
                ks.add(found[1])
            dims.append(found)
        out.append(Scale(f.tensor, it.tensors[f.tensor].elem, tuple(dims)))
    if len(ks) > 1 or (out and not ks):
        raise NotLifted("scales over different blocks of K (or none)", node)
    return tuple(out), (ks.pop() if ks else 0)


def _trivial(limits: Limits, tensor: str, it: Any) -> bool:
    """Whether every limit is implied by the tensor's own bounds (a view as large as it)."""
    ext = it.tensors[tensor].extents
    return all(_const(lo) == 0 and covers(hi, it.size(ext[d])) for d, lo, hi in limits)


def _grouping(
    it: Any,
    st: Store,
    index: list[E.Expr],
    x: Elem,
    y: Elem,
    reads: list[Elem],
    spatial: dict[str, E.Expr],
    node: A.Node,
) -> tuple[Group | None, list[E.Expr], Elem, Elem]:
    """Rows that start at a value read from a tensor (``out.view(cnt, N).from(offsets.at(e), 0)``): a
    grouped contraction. The output's and one operand's row index are ``D + F`` with ``D`` the same
    expression of read values and ``F`` a mixed-radix index; their views limit ``F`` to the same
    ``count``; the block index ``e`` the read values depend on picks the group and, in the other
    operand, at most a dimension of its own. Returned with ``D`` taken out of the indices. Without
    read values, every view must be as large as its tensor (else its limits would be lost)."""
    dv = set(it.data)

    def strip(e: E.Expr) -> E.Expr:
        return E.fold(E.substitute(e, {n: E.Const(0) for n in dv}))

    def reads_data(e: E.Expr) -> bool:
        return any(v.name in dv for v in E.free_vars(e))

    if not any(reads_data(i) for i in [*index, *x.index, *y.index]):
        placed = _block_placed(it, st, index, x, y, reads, spatial, node)
        if placed is not None:
            return placed
        for tensor, lims in ((st.tensor, st.limits), (x.tensor, x.limits), (y.tensor, y.limits)):
            if not _trivial(lims, tensor, it):
                raise NotLifted("a view whose run-time extent is smaller than its tensor", node)
        if any(not _trivial(r.limits, r.tensor, it) for r in reads):
            raise NotLifted("an epilogue reading a view smaller than its tensor", node)
        return None, index, x, y
    rows = [d for d, i in enumerate(index) if reads_data(i)]
    if len(rows) != 1:
        raise NotLifted("an output whose rows are not the only dimension placed by read values", node)
    dr = rows[0]
    offset = E.fold(index[dr] - strip(index[dr]))
    if any(v.name not in dv for v in E.free_vars(offset)):
        raise NotLifted("a row origin that mixes read values and indices", node)
    row = strip(index[dr])

    def count_of(lims: Limits, tensor: str, d: int) -> E.Expr | None:
        """The limit on dimension ``d`` starting at the offset, as a count (the others must be trivial)."""
        here = [(lo, hi) for dd, lo, hi in lims if dd == d and E.same(lo, offset)]
        rest = tuple(lim for lim in lims if not (lim[0] == d and E.same(lim[1], offset)))
        if len(here) > 1 or not _trivial(rest, tensor, it):
            raise NotLifted("a grouped view with other run-time extents", node)
        return E.fold(here[0][1] - here[0][0]) if here else None

    count = count_of(st.limits, st.tensor, dr)
    for c in (E.fold(c) for g_ in st.guard for c in E.conjuncts(E.fold(g_))):
        if not reads_data(c):
            continue
        # ``if (lo + row < hi) out.at(lo + row, n) = ..``: the group's rows end at a read value (lo, hi
        # read from tensors at the group index): a count, as a view's extent would give it
        if not (isinstance(c, E.Bin) and c.op == "<" and E.same(E.fold(c.lhs), index[dr])):
            raise NotLifted("a store guard on read values", node)
        bound = E.fold(c.rhs - offset)
        if count is not None and not E.same(bound, count):
            raise NotLifted("a store guard on read values", node)
        count = bound
    if count is not None and any(v.name not in dv for v in E.free_vars(count)):
        raise NotLifted("a group size that depends on indices", node)
    ops: list[Elem] = []
    placed = 0
    for el in (x, y):
        dims = [d for d, j in enumerate(el.index) if reads_data(j)]
        if dims:
            placed += 1
            j = el.index[dims[0]]
            if len(dims) != 1 or not E.same(E.fold(j - strip(j)), offset) or not E.same(strip(j), row):
                raise NotLifted("an operand placed by read values other than at the output's rows", node)
            c = count_of(el.limits, el.tensor, dims[0])
            # (an operand read past its group's rows only where no output element is written: those
            # reads are not in any stored sum)
            if (c is not None and count is None) or (c is not None and count is not None and not E.same(c, count)):
                raise NotLifted("an operand whose group size is not the output's", node)
        elif not _trivial(el.limits, el.tensor, it):
            raise NotLifted("an operand view smaller than its tensor", node)
        ops.append(el.mapped(strip))
    if placed != 1:
        raise NotLifted("a grouped contraction whose operands both take rows from read values", node)
    names = {v.name for e_ in ([offset] + ([count] if count is not None else [])) for v in E.free_vars(e_)}
    gvars = {v.name for n in names for i in it.data[n].index for v in E.free_vars(i)}
    if len(gvars) != 1:
        raise NotLifted("a group chosen by other than one block index", node)
    g = gvars.pop()
    stripped = [strip(i) for i in index]
    if any(v.name == g for i in stripped for v in E.free_vars(i)):
        raise NotLifted("an output indexed by its group index", node)
    for el in ops:
        for j in el.index:
            if any(v.name == g for v in E.free_vars(j)) and not (isinstance(j, E.Var) and j.name == g):
                raise NotLifted("an operand indexed by an expression of the group index", node)
    if any(reads_data(j) or any(v.name == g for v in E.free_vars(j)) for r in reads for j in r.index):
        raise NotLifted("an epilogue reading a grouped tensor", node)
    rng, _ = _radix(row, spatial, node)
    data = tuple((n, it.data[n].tensor, it.data[n].index) for n in sorted(names))
    return Group(g, spatial[g], offset, count, rng, data), stripped, ops[0], ops[1]


def _block_placed(
    it: Any,
    st: Store,
    index: list[E.Expr],
    x: Elem,
    y: Elem,
    reads: list[Elem],
    spatial: dict[str, E.Expr],
    node: A.Node,
) -> tuple[Group | None, list[E.Expr], Elem, Elem] | None:
    """Rows placed at an origin that a block index sets (``a.view(M, K).from(bi * M, 0)``, ``out.view(M,
    N).from(bi * M, 0)``: the batches of a tensor of all batches' rows): a grouped contraction whose
    group ``bi`` starts at ``bi * M`` with ``M`` rows (no value read).  The output's rows are a view
    of run-time extent ``count`` at ``offset`` (an expression of one block index ``g`` and sizes),
    indexed ``offset + F``; one operand's rows are ``offset + F`` too, through a view of that extent
    or none; the other operand reads ``g`` at most as a dimension of its own.  None where the
    output's views are as large as its tensor (no such grouping)."""
    lims = [(d, lo, hi) for d, lo, hi in st.limits if not _trivial(((d, lo, hi),), st.tensor, it)]
    if not lims:
        return None
    refuse = NotLifted("a view whose run-time extent is smaller than its tensor", node)
    if len(lims) != 1 or not _trivial(tuple(x for x in st.limits if x not in lims), st.tensor, it):
        raise refuse
    dr, lo, hi = lims[0]
    offset, count = E.fold(lo), E.fold(hi - lo)
    gs = [v.name for v in E.free_vars(offset) if v.name in spatial]
    if len(set(gs)) != 1 or any(v.name in spatial for v in E.free_vars(count)):
        raise refuse
    g = gs[0]
    if g not in it.block_vars:
        raise refuse
    row = E.fold(index[dr] - offset)
    if any(v.name == g for v in E.free_vars(row)):
        raise refuse
    if any(v.name == g for d, i in enumerate(index) if d != dr for v in E.free_vars(i)):
        raise NotLifted("an output indexed by its group index", node)
    ops: list[Elem] = []
    placed = 0
    for el in (x, y):
        dims = [d for d, j in enumerate(el.index) if any(v.name == g for v in E.free_vars(j))]
        mine = [(d, a, b) for d, a, b in el.limits if not _trivial(((d, a, b),), el.tensor, it)]
        moved = [d for d in dims if E.same(E.fold(el.index[d] - offset), row)]
        if moved:
            placed += 1
            d0 = moved[0]
            if len(dims) != 1 or len(mine) > 1:
                raise refuse
            if mine and not (mine[0][0] == d0 and E.same(E.fold(mine[0][1]), offset)
                             and E.same(E.fold(mine[0][2] - mine[0][1]), count)):  # fmt: skip
                raise NotLifted("an operand whose group size is not the output's", node)
            idx = list(el.index)
            idx[d0] = row
            ops.append(Elem(el.tensor, tuple(idx), (), el.zfill))
            continue
        if mine or any(not (isinstance(el.index[d], E.Var) and el.index[d].name == g) for d in dims):
            raise NotLifted("an operand indexed by an expression of the group index", node)
        ops.append(el)
    if placed != 1:
        raise refuse
    if any(v.name == g for r in reads for j in r.index for v in E.free_vars(j)) or any(
        not _trivial(r.limits, r.tensor, it) for r in reads
    ):
        raise NotLifted("an epilogue reading a grouped tensor", node)
    if any(v.name == g for c in st.guard for v in E.free_vars(c)):
        raise NotLifted("a store guard on the group index", node)
    stripped = list(index)
    stripped[dr] = row
    rng, _ = _radix(row, spatial, node)
    return Group(g, spatial[g], offset, count, rng, ()), stripped, ops[0], ops[1]


def _epilogue(
    st: Store,
    reads: list[Elem],
    index: list[E.Expr],
    kinds: list[str],
    operands: tuple[str, str],
    it: Any,
    node: A.Node,
) -> Epilogue | None:
    """The stored value as a function of the output element's coordinates: each tensor it reads
    is indexed by output coordinates (a bias by ``n``, ``c`` by ``(m, n)``); the output itself only
    at the element being written (``c = alpha * acc + beta * c``)."""
    if st.epi is None:
        return None
    names = {"batch": "b", "x": "m", "y": "n"}
    out: list[EpiRead] = []
    for (var, _), el in zip(st.epi.reads, reads, strict=True):
        if el.tensor in operands:
            raise NotLifted("an epilogue that reads an operand of the contraction", node)
        dims: list[str] = []
        for j in el.index:
            d = next((d for d, i in enumerate(index) if E.same(E.fold(j), i)), None)
            if d is None:
                raise NotLifted("an epilogue reading a tensor elsewhere than at the output's coordinates", node)
            dims.append(names[kinds[d]])
        if el.tensor == st.tensor and not all(E.same(E.fold(j), i) for j, i in zip(el.index, index, strict=True)):
            raise NotLifted("an epilogue reading the output elsewhere than the element it writes", node)
        if len(set(dims)) != len(dims) or len(dims) != len(it.tensors[el.tensor].extents):
            raise NotLifted("an epilogue reading a tensor along a diagonal", node)
        out.append(EpiRead(var, el.tensor, it.tensors[el.tensor].elem, tuple(dims)))
    return Epilogue(st.epi.expr, tuple(out), st.epi.scalars)


def _source_tile(
    st: Store, spatial: dict[str, E.Expr], index: list[E.Expr], od: dict[str, int], it: Any
) -> tuple[int, int, int]:
    """Rows and columns one program writes (the coefficient of the block index in each output
    index), and the K step of the source's loads or MMAs."""

    def per_block(e: E.Expr) -> int:
        lin = E.linear(e, spatial)
        if lin is None:
            return 1
        coef = lin[0]
        # the step of a block index (a parallel index of the block level, or a tile index of run-time extent)
        block = [c for name, c in coef.items() if name in it.block_vars or _const(spatial[name]) is None]
        if block:
            return min(block)
        # one program writes it all: the span of the lane and element indices
        return 1 + sum(c * (int(_const(spatial[name])) - 1) for name, c in coef.items())  # type: ignore[arg-type]

    bk = max(it.ksteps) if it.ksteps else 1
    return per_block(index[od["x"]]), per_block(index[od["y"]]), bk
