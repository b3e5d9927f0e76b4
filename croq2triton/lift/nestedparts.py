"""Finer parts of a buffer's equal slots, spelled as parts of the slot: a ring kept in one flat
buffer ``shared f16 [S * 192, 64] ring;``, written a stage at a time as
``ring.subspan(192, 64).at(stage, 0)`` and read by consumer ``p`` (of 3) a step of K at a time as
``ring.subspan(64, 16).at(stage * 3 + p - 1, kk)``, reads inside the slot ``stage``: the part is
``ring.subspan(192, 64).at(stage, 0).subspan(64, 16).at(p - 1, kk)``.

A part ``b.subspan(w).at(j)`` is the elements ``[j * w, (j + 1) * w)`` of each dimension
(LANGUAGE.md 7.6).  Let ``W`` be the widest part of a dimension and ``q = W / w`` (``w`` divides
``W``, ``W`` divides the extent ``E``).  Where ``j = q * s + r`` with ``0 <= r < q`` for every
value the program gives it, ``[j * w, (j + 1) * w)`` is ``[s * W + r * w, s * W + (r + 1) * w)``:
the part ``r`` of width ``w`` of the part ``s`` of width ``W``, the same elements.  ``j`` is split
where it is affine in names: the terms whose coefficients ``q`` divides make ``s`` (with the
constant's multiple of ``q``), the rest ``r``, whose range the names' ranges give: a
``parallel`` index lies in ``[0, n)`` and an enclosing ``inthreads`` narrows it (``p > 0``,
``p == 1``, conjunctions of such comparisons with constants); any other name has no range and
the part is left as written.  Along a dimension the buffer holds one part ``W`` of (``W = E``),
``s`` is 0 and ``r = j``, with no condition.

The rewrite only respells parts; it is applied to a buffer where afterwards all its uses are
parts of one width, so that lift/slotted.py makes it an array of slots (else nothing changes).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

from ..frontend import ast as A
from ..sema.consteval import const_int

Range = tuple[int, int]  # inclusive


@dataclass(frozen=True)
class _Linear:
    terms: tuple[tuple[int, A.Expr], ...]  # (coefficient, atom)
    const: int


def nested_parts(top: A.Parallel, accepts: Callable[[A.Parallel, str], bool]) -> A.Parallel:
    """``top`` with the finer parts of each buffer spelled as parts of its widest ones (a copy),
    for the buffers ``accepts(new_top, name)`` then takes; ``top`` itself where there are none."""
    seen = [(v, n) for p in top.walk() if isinstance(p, A.PBy) for v, n in _level_vars(p)]
    bounds = {v: n for v, n in seen if all(m == n for u, m in seen if u == v)}  # ``#v`` where one level names v
    widest = _widest(top, bounds)
    if not widest:
        return top
    new = copy.deepcopy(top)
    repl: dict[int, A.View] = {}
    failed: set[str] = set()
    _visit(new, {}, bounds, widest, repl, failed)
    done = {n for n in widest if n not in failed and any(_base(v) == n for v in repl.values())}
    if not done:
        return top
    keep = {k: v for k, v in repl.items() if _base(v) in done}
    new = A.rewrite(new, lambda x: keep.get(id(x)))
    if not all(accepts(new, n) for n in done):
        return top
    return new


def _base(v: A.View) -> str:
    return v.base.name  # type: ignore[attr-defined,no-any-return]


def _widest(top: A.Parallel, bounds: dict[str, int]) -> dict[str, tuple[list[int], list[int]]]:
    """Buffer -> (its extents, the widest part of each dimension) where its parts differ in width,
    every use is a constant-width part and the widths nest."""
    decls: dict[str, list[A.SpannedDecl]] = {}
    for n in top.walk():
        if isinstance(n, A.SpannedDecl):
            for d in n.items:
                decls.setdefault(d.name, []).append(n)
    out: dict[str, tuple[list[int], list[int]]] = {}
    for name, ds in decls.items():
        item = next(d for d in ds[0].items if d.name == name)
        if len(ds) != 1 or item.dims or item.init is not None or ds[0].shape is None:
            continue
        extents = [const_int(e) for e in ds[0].shape]
        if any(e is None or e < 1 for e in extents):
            continue
        names = sum(1 for n in top.walk() if isinstance(n, A.Name) and n.name == name)
        ops = [
            v.ops[0] for v in top.walk() if isinstance(v, A.View) and isinstance(v.base, A.Name) and v.base.name == name
        ]
        if not ops or len(ops) != names:
            continue
        if any(
            op.kind != "subspan" or op.strides or op.step or op.at is None or len(op.args) != len(extents) for op in ops
        ):
            continue
        widths = [[_const(w, bounds) for w in op.args] for op in ops]
        if any(w is None or w < 1 for ws in widths for w in ws):
            continue
        top_w = [max(ws[d] for ws in widths) for d in range(len(extents))]  # type: ignore[type-var]
        if all(ws == top_w for ws in widths):
            continue
        if any(e % w for e, w in zip(extents, top_w, strict=True)):  # type: ignore[operator]
            continue
        if any(t % w for ws in widths for t, w in zip(top_w, ws, strict=True)):  # type: ignore[operator]
            continue
        out[name] = (extents, top_w)  # type: ignore[assignment]
    return out


def _level_vars(p: A.PBy) -> list[tuple[str, int]]:
    names = p.names
    out = []
    for v, b in zip(names, p.bound, strict=False):
        n = const_int(b)
        if n is not None and n >= 1:
            out.append((v, n))
    return out


def _visit(
    node: object,
    env: dict[str, Range],
    bounds: dict[str, int],
    widest: dict[str, tuple[list[int], list[int]]],
    repl: dict[int, A.View],
    failed: set[str],
) -> None:
    if isinstance(node, list):
        for x in node:
            _visit(x, env, bounds, widest, repl, failed)
        return
    if not isinstance(node, A.Node):
        return
    if isinstance(node, A.Parallel):
        env = {**env, **{v: (0, n - 1) for p in node.levels for v, n in _level_vars(p)}}
    elif isinstance(node, A.InThreads):
        env = _narrowed(env, node.cond, bounds)
    elif isinstance(node, A.View) and isinstance(node.base, A.Name) and node.base.name in widest:
        name = node.base.name
        nested = _nested(node, *widest[name], env, bounds)
        if nested is None:
            failed.add(name)
        elif nested is not node:
            repl[id(node)] = nested
    for f in A.child_fields(node):
        _visit(getattr(node, f), env, bounds, widest, repl, failed)


def _narrowed(env: dict[str, Range], cond: A.Expr, bounds: dict[str, int]) -> dict[str, Range]:
    """``env`` within ``inthreads (cond)``: the conjunction's comparisons of a name with a constant."""
    out = dict(env)
    stack = [cond]
    while stack:
        c = stack.pop()
        while isinstance(c, A.Paren):
            c = c.expr
        if isinstance(c, A.Binary) and c.op == "&&":
            stack += [c.lhs, c.rhs]
            continue
        if not isinstance(c, A.Binary) or c.op not in ("==", ">", ">=", "<", "<="):
            continue
        op, lhs, rhs = c.op, c.lhs, c.rhs
        k = _const(rhs, bounds)
        if not isinstance(lhs, A.Name) or k is None:
            flip = {"==": "==", ">": "<", ">=": "<=", "<": ">", "<=": ">="}
            op, lhs, k = flip[op], rhs, _const(c.lhs, bounds)
        if not isinstance(lhs, A.Name) or k is None or lhs.name not in out:
            continue
        lo, hi = out[lhs.name]
        lo, hi = {
            "==": (max(lo, k), min(hi, k)),
            ">": (max(lo, k + 1), hi),
            ">=": (max(lo, k), hi),
            "<": (lo, min(hi, k - 1)),
            "<=": (lo, min(hi, k)),
        }[op]
        out[lhs.name] = (lo, hi)
    return out


def _const(e: A.Expr, bounds: dict[str, int]) -> int | None:
    lin = _linear(e, bounds)
    return lin.const if lin is not None and not lin.terms else None


def _linear(e: A.Expr, bounds: dict[str, int]) -> _Linear | None:
    """``e`` as a sum of coefficients times atoms plus a constant (None: not affine)."""
    while isinstance(e, A.Paren):
        e = e.expr
    if isinstance(e, A.IntLit):
        return _Linear((), e.value)
    if isinstance(e, A.UBound) and e.name in bounds:
        return _Linear((), bounds[e.name])
    if isinstance(e, A.Unary) and e.op == "-":
        x = _linear(e.operand, bounds)
        return None if x is None else _scaled(x, -1)
    if isinstance(e, A.Binary) and e.op in ("+", "-"):
        a, b = _linear(e.lhs, bounds), _linear(e.rhs, bounds)
        if a is None or b is None:
            return None
        if e.op == "-":
            b = _scaled(b, -1)
        return _Linear(a.terms + b.terms, a.const + b.const)
    if isinstance(e, A.Binary) and e.op == "*":
        a, b = _linear(e.lhs, bounds), _linear(e.rhs, bounds)
        if a is not None and not a.terms and b is not None:
            return _scaled(b, a.const)
        if b is not None and not b.terms and a is not None:
            return _scaled(a, b.const)
    if isinstance(e, A.Binary) and e.op in ("/", "%"):  # of constants only (C's truncation)
        a, b = _linear(e.lhs, bounds), _linear(e.rhs, bounds)
        if a is not None and b is not None and not a.terms and not b.terms and b.const:
            quot = abs(a.const) // abs(b.const) * (1 if (a.const < 0) == (b.const < 0) else -1)
            return _Linear((), quot if e.op == "/" else a.const - quot * b.const)
    if isinstance(e, A.Name):
        return _Linear(((1, e),), 0)
    return None  # anything else: not split (the part stays as written)


def _scaled(x: _Linear, k: int) -> _Linear:
    return _Linear(tuple((c * k, t) for c, t in x.terms if c * k), x.const * k)


def _nested(
    v: A.View, extents: list[int], top_w: list[int], env: dict[str, Range], bounds: dict[str, int]
) -> A.View | None:
    """``v`` (a part of a buffer whose widest parts are ``top_w``) as a part of a widest part; ``v``
    itself where it is one; None where its index does not split."""
    op = v.ops[0]
    widths = [_const(w, bounds) for w in op.args]
    if widths == top_w:
        return v
    outer: list[A.Expr] = []
    inner: list[A.Expr] = []
    sp = op.span
    for d, (j, w) in enumerate(zip(op.at or [], widths, strict=True)):
        q = top_w[d] // w  # type: ignore[operator]
        if q == 1:
            outer.append(copy.deepcopy(j))
            inner.append(A.IntLit(0, "0", span=j.span))
        elif extents[d] == top_w[d]:  # one part W wide along d
            outer.append(A.IntLit(0, "0", span=j.span))
            inner.append(copy.deepcopy(j))
        else:
            split = _split(j, q, env, bounds)
            if split is None:
                return None
            outer.append(split[0])
            inner.append(split[1])
    wide = A.ViewOp("subspan", [A.IntLit(w, str(w), span=sp) for w in top_w], at=outer, span=sp)
    part = A.ViewOp("subspan", copy.deepcopy(op.args), at=inner, span=sp)
    return A.View(v.base, [wide, part, *v.ops[1:]], span=v.span)


def _split(j: A.Expr, q: int, env: dict[str, Range], bounds: dict[str, int]) -> tuple[A.Expr, A.Expr] | None:
    """``(s, r)`` with ``j = q * s + r`` and ``0 <= r < q`` wherever ``env`` holds."""
    lin = _linear(j, bounds)
    if lin is None:
        return None
    s_terms = [(c // q, t) for c, t in lin.terms if c % q == 0]
    r_terms = [(c, t) for c, t in lin.terms if c % q]
    lo = hi = 0
    for c, t in r_terms:
        if not isinstance(t, A.Name) or t.name not in env:
            return None
        a, b = env[t.name]
        lo += min(c * a, c * b)
        hi += max(c * a, c * b)
    cr = -lo + (lin.const + lo) % q  # the least constant >= -lo congruent to the constant
    if hi + cr > q - 1:
        return None
    cs = (lin.const - cr) // q
    return _sum(s_terms, cs, j.span), _sum(r_terms, cr, j.span)


def _sum(terms: list[tuple[int, A.Expr]], const: int, span: A.Span | None) -> A.Expr:
    out: A.Expr | None = None
    for c, t in terms:
        x = copy.deepcopy(t)
        if abs(c) != 1:
            x = A.Binary("*", A.IntLit(abs(c), str(abs(c)), span=span), x, span=span)
        if out is None:
            out = x if c > 0 else A.Unary("-", x, span=span)
        else:
            out = A.Binary("+" if c > 0 else "-", out, x, span=span)
    if out is None:
        return A.IntLit(const, str(const), span=span)
    if const:
        out = A.Binary("+" if const > 0 else "-", out, A.IntLit(abs(const), str(abs(const)), span=span), span=span)
    return out
