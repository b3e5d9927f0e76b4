"""A warp's butterfly of shuffles that merges a *pair* of values a lane, folded into reductions.

schedule/shuffles.py folds a butterfly of one accumulator under ``+``, ``max`` or ``min``.  Kernels
that keep two running values a lane merge them the same way, each step combining a lane's own pair
with its partner's::

    foreach q in [5] {                              // an online softmax's (maximum, rescaled sum)
      om = shfl_xor(m, 16 >> q);  os = shfl_xor(s, 16 >> q);
      mn = max(m, om);  s = s * exp(m - mn) + os * exp(om - mn);  m = mn;
    }
    foreach q in [5] {                              // an argmax's (value, index), ties to the first
      ov = shfl_xor(best, 16 >> q);  oi = shfl_xor(bi, 16 >> q);
      if (ov > best || (ov == best && oi < bi)) { best = ov; bi = oi; }
    }

A butterfly is a reduction over the lanes of the axis whenever its combine is associative and
commutative (each lane meets every other lane's pair once, in an order of its own): the pair is then
the same at every lane, the reduction of all lanes' pairs, and is written as one (broadcast back to
every lane) in new variables that every later statement reads:

* **rescaled sums** (schedule/rescaled.py's operator ``(m1, s1) . (m2, s2) = (M, s1 * E(m1 - M) + s2 *
  E(m2 - M))``, ``M = max(m1, m2)``, ``E`` ``exp`` or ``exp2`` of the difference, maybe scaled): associative and
  commutative in exact arithmetic, so ``M = max(m over lanes)``, ``S = sum(s * E(m - M) over lanes)``
  (the scale 1 where ``m == M``: a lane with no element, ``m = M = -inf``, adds its ``s = 0`` rather
  than ``0 * nan``).  The sum adds in another order and ``E`` is taken once a lane rather than once a
  step: within the rounding of the type, as every float fold here (tolerances.py).
* **a lexicographic pick** (keep the partner's pair where its value is strictly better, or equal with
  a strictly smaller -- larger -- index): the least pair of a total order (values by ``max`` or
  ``min``, then indices), associative and commutative exactly: ``B = max(v over lanes)``, ``I =
  min(where(v == B, i, BIG) over lanes)`` (``max`` and ``-BIG`` for the last index).  NaN values
  compare neither better nor equal (the butterfly as written is then not the same at every lane
  either): a NaN loses to any number here.

The proof (else the loop stays as written, by schedule/shuffles.py's rules): constant bounds; a body of
lets, then two assignments ``a := ..``, ``b := ..`` (the second not reading ``a``'s new value, every
let before the first); one let ``oa = gather(a, src, axis)`` and one ``ob = gather(b, src', axis)``
whose source lanes are the same at each step and, run on the positions each lane holds, leave every
lane holding each position of the axis exactly once; the assignments' values (lets inlined) one of
the two combines of ``(a, b)`` with ``(oa, ob)``, each maybe under the same guard ``where(g, .., a)``
that does not differ along the lanes nor read the pair (then the new values are ``where(g, total,
a)``); neither accumulator assigned after the loop.
"""

from __future__ import annotations

from collections import Counter

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names
from . import rescaled
from .treefold import NotTree, extent_along, lane_sources

MAX_STEPS = 64

_FLIP = {">": "<", "<": ">", "==": "=="}
_BIG = {"i32": 2**31 - 1, "i64": 2**63 - 1, "i16": 2**15 - 1, "i8": 2**7 - 1}


class NotPair(Exception):
    """What the proof cannot follow."""


def prove_pair(loop: N.For, before: list[N.Stmt], after: list[N.Stmt], taken: set[str]) -> list[tuple[E.Var, N.Let]]:
    """Each accumulator of the pair butterfly ``loop`` and the let of its new value (module docstring),
    in order; NotPair where the proof does not hold."""
    start, stop = E.fold(loop.start), E.fold(loop.stop)
    if not (isinstance(start, E.Const) and isinstance(stop, E.Const) and E.same(loop.step, E.Const(1))):
        raise NotPair("bounds not known when translating")
    steps = range(int(start.value), int(stop.value))
    if not steps or len(steps) > MAX_STEPS:
        raise NotPair("too many steps")
    body = loop.body
    if len(body) < 4 or not all(isinstance(s, N.Let) for s in body[:-2]):
        raise NotPair("not lets and then two assignments")
    first, second = body[-2], body[-1]
    if not (isinstance(first, N.Assign) and isinstance(second, N.Assign)) or first.var.name == second.var.name:
        raise NotPair("not two assignments")
    if first.var.name in _names(second.value):
        raise NotPair("the second assignment reads the first's new value")
    a, b = first.var, second.var
    if a.shape != b.shape:
        raise NotPair("accumulators of different shapes")
    lets = {s.var.name: s.value for s in body if isinstance(s, N.Let)}
    gathers = {k: v for k, v in lets.items() if isinstance(v, E.Call) and v.fn == "gather" and len(v.args) == 3}
    of: dict[str, str] = {}  # accumulator -> the let of its gather
    for k, g in gathers.items():
        src, _, axis_c = g.args
        if not (isinstance(src, E.Var) and src.name in (a.name, b.name) and isinstance(axis_c, E.Const)):
            raise NotPair("a gather of another value")
        if src.name in of:
            raise NotPair("two gathers of one accumulator")
        of[src.name] = k
    if set(of) != {a.name, b.name}:
        raise NotPair("not a gather of each accumulator")
    axes = {int(gathers[k].args[2].value) for k in of.values()}  # type: ignore[union-attr]
    if len(axes) != 1:
        raise NotPair("gathers along different axes")
    axis = axes.pop()
    n = a.shape[axis]
    if not isinstance(n, int):
        raise NotPair("lanes fixed at launch")
    plain = {k: v for k, v in lets.items() if k not in gathers}
    top = {s.var.name: s.value for s in before if isinstance(s, N.Let)}
    sources = []
    for acc in (a, b):
        index = gathers[of[acc.name]].args[1]
        if {a.name, b.name} & _names(E.resolve(index, plain)):
            raise NotPair("the accumulator read by the index")
        try:
            sources.append([lane_sources(E.resolve(index, {**top, **plain}), loop.var.name, k, axis, n) for k in steps])
        except NotTree as e:
            raise NotPair(str(e)) from e
    if sources[0] != sources[1]:
        raise NotPair("the two gathers read different lanes")
    parts = [Counter({i: 1}) for i in range(n)]
    for src in sources[0]:
        parts = [parts[i] + parts[j] for i, j in enumerate(src)]
    if not all(set(p) == set(range(n)) and all(c == 1 for c in p.values()) for p in parts):
        raise NotPair("a lane that does not meet every lane once")
    for s in N.walk(after):
        if isinstance(s, N.Assign) and s.var.name in (a.name, b.name):
            raise NotPair("an accumulator assigned after the loop")
    pair = {a.name, b.name} | set(of.values())
    guard_a, va = _guarded(first, plain, pair)
    guard_b, vb = _guarded(second, plain, pair)
    if (guard_a is None) != (guard_b is None) or (
        guard_a is not None and guard_b is not None and not E.same(guard_a, guard_b)
    ):
        raise NotPair("the two assignments under different guards")
    guard = guard_a
    if guard is not None and (loop.var.name in _names(guard) or extent_along(guard, axis, len(a.shape)) != 1):
        raise NotPair("a guard that changes with the steps or along the lanes")
    oa, ob = (E.Var(of[x.name], x.type, dims=x.shape) for x in (a, b))
    totals = _rescaled(a, b, oa, ob, va, vb, axis, taken) or _rescaled(b, a, ob, oa, vb, va, axis, taken)
    totals = totals or _pick(a, b, oa, ob, va, vb, axis, taken)
    if totals is None:
        raise NotPair("a combine that is neither a rescaled sum nor a lexicographic pick")
    out = []
    for acc, let in totals:
        value = let.value if guard is None else E.Where(guard, let.value, acc)
        out.append((acc, N.Let(let.var, value, line=loop.line)))
    return out


def _guarded(s: N.Assign, lets: dict[str, E.Expr], pair: set[str]) -> tuple[E.Expr | None, E.Expr]:
    """``acc := where(G, x, acc)`` split: (the conjuncts of ``G`` that read neither the pair nor its gathers,
    as one guard (None: none), the value with the others kept as ``where(c, x, acc)``); lets inlined
    but the gathers'."""
    value = E.resolve(s.value, lets)
    if not (isinstance(value, E.Where) and isinstance(value.other, E.Var) and value.other.name == s.var.name):
        return None, value
    terms = E.conjuncts(value.cond)
    outer = [t for t in terms if not (_names(t) & pair)]
    inner = [t for t in terms if _names(t) & pair]
    guard = _all(outer)
    if not inner:
        return guard, value.then
    cond = _all(inner)
    assert cond is not None
    return guard, E.Where(cond, value.then, value.other)


def _all(terms: list[E.Expr]) -> E.Expr | None:
    out: E.Expr | None = None
    for t in terms:
        out = t if out is None else E.Bin("&", out, t)
    return out


def _is(e: E.Expr, v: E.Var) -> bool:
    return isinstance(e, E.Var) and e.name == v.name


def _spread(acc: E.Var, op: str, value: E.Expr, axis: int) -> E.Expr:
    """``op`` of ``value`` along ``axis``, spread back to every lane (``acc``'s shape and type)."""
    rank = len(acc.shape)
    total = E.Lift(E.Reduce(op, value, axis), rank, tuple(d for d in range(rank) if d != axis))
    return E.Bin("+", E.Full(acc.shape, 0, acc.type), total)


def _fresh(acc: E.Var, taken: set[str]) -> E.Var:
    name, k = f"{acc.name}_all", 2
    while name in taken:
        name, k = f"{acc.name}_all_{k}", k + 1
    taken.add(name)
    return E.Var(name, acc.type, dims=acc.shape)


def _rescaled(
    m: E.Var, s: E.Var, om: E.Var, os_: E.Var, vm: E.Expr, vs: E.Expr, axis: int, taken: set[str]
) -> list[tuple[E.Var, N.Let]] | None:
    """``m := max(m, om)``, ``s := s * E(m - n) + os * E(om - n)`` (``n`` that maximum): the totals."""
    if not (isinstance(vm, E.Bin) and vm.op == "max"):
        return None
    if not ((_is(vm.lhs, m) and _is(vm.rhs, om)) or (_is(vm.lhs, om) and _is(vm.rhs, m))):
        return None
    got = rescaled.match(s, vs)
    if got is None or got.peer != m.name or not _is(got.of, om) or got.weight is None or not _is(got.weight, os_):
        return None
    m_all, s_all = _fresh(m, taken), _fresh(s, taken)
    scaled = E.Where(E.Bin("==", m, m_all), s, E.Bin("*", s, got.apply(m, m_all, s.type)))
    return [(m, N.Let(m_all, _spread(m, "max", m, axis))), (s, N.Let(s_all, _spread(s, "sum", scaled, axis)))]


def _pick(
    a: E.Var, b: E.Var, oa: E.Var, ob: E.Var, va: E.Expr, vb: E.Expr, axis: int, taken: set[str]
) -> list[tuple[E.Var, N.Let]] | None:
    """``a := where(c, oa, a)``, ``b := where(c, ob, b)`` with ``c`` a lexicographic comparison of
    ``(oa, ob)`` against ``(a, b)`` (either accumulator the value): the totals."""
    if not (isinstance(va, E.Where) and isinstance(vb, E.Where) and E.same(va.cond, vb.cond)):
        return None
    if not (_is(va.then, oa) and _is(va.other, a) and _is(vb.then, ob) and _is(vb.other, b)):
        return None
    for v, i, ov, oi in ((a, b, oa, ob), (b, a, ob, oa)):
        got = _lexicographic(va.cond, v, i, ov, oi)
        if got is None or i.type not in _BIG:
            continue
        value_op, index_op = got
        v_all, i_all = _fresh(v, taken), _fresh(i, taken)
        big = _BIG[i.type] if index_op == "min" else -_BIG[i.type] - 1
        at = E.Where(E.Bin("==", v, v_all), i, E.Full(i.shape, big, i.type))
        return [(v, N.Let(v_all, _spread(v, value_op, v, axis))), (i, N.Let(i_all, _spread(i, index_op, at, axis)))]
    return None


def _lexicographic(c: E.Expr, v: E.Var, i: E.Var, ov: E.Var, oi: E.Var) -> tuple[str, str] | None:
    """``ov > v || (ov == v && oi < i)`` (comparisons either way round, ``<`` for a minimum, ``>`` for the
    last index): (max or min, min or max of the index)."""
    if not (isinstance(c, E.Bin) and c.op in ("|", "||")):
        return None
    for strict, tie in ((c.lhs, c.rhs), (c.rhs, c.lhs)):
        s = _compare(strict, ov, v)
        if s not in (">", "<") or not (isinstance(tie, E.Bin) and tie.op in ("&", "&&")):
            continue
        for eq, idx in ((tie.lhs, tie.rhs), (tie.rhs, tie.lhs)):
            if _compare(eq, ov, v) == "==" and (ix := _compare(idx, oi, i)) in (">", "<"):
                return ("max" if s == ">" else "min"), ("min" if ix == "<" else "max")
    return None


def _compare(e: E.Expr, x: E.Var, y: E.Var) -> str | None:
    """The comparison ``e`` read as ``x op y``, or None."""
    if not (isinstance(e, E.Bin) and e.op in _FLIP):
        return None
    if _is(e.lhs, x) and _is(e.rhs, y):
        return e.op
    if _is(e.lhs, y) and _is(e.rhs, x):
        return _FLIP[e.op]
    return None
