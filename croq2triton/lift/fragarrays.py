"""Fragment arrays: ``frag [.T] mc[2][3] {v}`` as separate accumulators.

An element of a fragment array is an MMA accumulator like one made by ``mma.fill``: its shape
comes from the MMAs that update it.  Every element the block names gets its own accumulator
(``mc[0][1]`` becomes ``mc__0_1``, filled with ``v`` where the array is declared); elements the
block never names are dead and dropped.

An index may also be an expression of scalar parameters of the function (``mc[0][i]``), which
do not change while the kernel runs: every use of the array must then name the same element
(the same index expressions), so the array is one accumulator; the launcher checks that the
index is in range before launching.  Indices that change inside the kernel (loop counters,
parallel indices) would make the element differ between uses and are rejected.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, fields

from ..errors import CroqLoweringError
from ..frontend import ast as A


@dataclass
class RangeCheck:
    """``0 <= index < extent``, checked by the launcher (the index is an expression of parameters)."""

    index: A.Expr
    extent: int
    array: str


def expand_frag_arrays(fn: A.CoFunction, top: A.Parallel) -> tuple[A.Parallel, list[RangeCheck]]:
    """``top`` with its fragment arrays replaced by accumulators (a copy where there were any)."""
    if not any(isinstance(n, A.FragInit) or _declared_array(n) for n in top.walk()):
        return top, []
    top = copy.deepcopy(top)
    arrays = {n.name for n in top.walk() if isinstance(n, A.FragInit)}
    arrays |= {d.name for n in top.walk() if _declared_array(n) for d in n.items if d.dims}  # type: ignore[attr-defined]
    _unroll_element_loops(top, arrays)
    for array in arrays:  # ``acc[2 * 1 - 1]``: an element named by literals
        for use in _element_uses(top, array):
            b: A.Expr = use
            while isinstance(b, A.Index):
                _literal(b, {})
                b = b.base
    checks: list[RangeCheck] = []
    for init in [n for n in top.walk() if isinstance(n, A.FragInit)]:
        fills = lambda name, init=init: A.MmaFill(  # noqa: E731
            copy.deepcopy(init.value), result=name, elem=init.elem, span=init.span
        )
        checks.extend(_expand(fn, top, init, init.name, init.dims, fills))
    for decl in [n for n in top.walk() if _declared_array(n)]:
        checks.extend(_expand_declared(fn, top, decl))  # type: ignore[arg-type]
    return top, checks


MAX_UNROLLED = 16  # copies of a loop body an unrolled loop over fragment array elements may make


def _unroll_element_loops(top: A.Parallel, arrays: set[str]) -> None:
    """``foreach n in [4] { mma.row.row acc[n], .. }``: a loop of constant trip count whose counter
    picks elements of a fragment array, unrolled (each element is an accumulator of its own, named
    when translating); the copies' indices folded to literals (``acc[n + 1]`` of trip 2 is
    ``acc[3]``).  Innermost loops first."""
    while True:
        loop = next((n for n in _post_order(top) if _picks_elements(n, arrays)), None)
        if loop is None:
            return
        assert isinstance(loop, A.Foreach)
        names, extents = _counters(loop)  # type: ignore[misc]
        copies: list[A.Stmt] = []
        counts = dict(zip(names, extents, strict=True))
        for values in itertools.product(*(range(n) for n in extents)):
            body = copy.deepcopy(loop.body)
            for n in list(body.walk()):
                if isinstance(n, A.ViewOp) and n.kind == "chunkat":
                    _as_chunk(n, counts)
            fixed = dict(zip(names, values, strict=True))
            _replace(body, lambda n, fixed=fixed: _literal(n, fixed))
            copies.append(body if isinstance(body, A.Block) else A.Block([body], span=body.span))
        _replace(top, lambda n, loop=loop, copies=copies: A.Block(copies, span=loop.span) if n is loop else None)


def _as_chunk(op: A.ViewOp, counts: dict[str, int]) -> None:
    """``.chunkat(i, _)`` with ``i`` a counter of an unrolled loop as ``.chunk(2, 1).at(i, 0)``
    (LANGUAGE.md 7.6: ``x.chunkat(p, q) == x.chunk({#p, #q}).at({p, q})``): the counter's bound
    is kept where its copies make it a literal.  Left as it is where an argument is of another form."""
    if not any(isinstance(n, A.Name) and n.name in counts for a in op.args for n in a.walk()):
        return
    parts = [_factor_index(a, counts) for a in op.args]
    if any(p is None for p in parts):
        return
    op.kind = "chunk"
    op.args = [p[0] for p in parts]  # type: ignore[index]
    op.at = [p[1] for p in parts]  # type: ignore[index]


def _factor_index(e: A.Expr, counts: dict[str, int]) -> tuple[A.Expr, A.Expr] | None:
    """The tiling factor and the index of a ``chunkat`` argument (None: not of a form known here)."""
    sp = e.span
    if isinstance(e, A.Paren):
        return _factor_index(e.expr, counts)
    if isinstance(e, A.Name):
        if e.name == "_":
            return A.IntLit(1, "1", span=sp), A.IntLit(0, "0", span=sp)
        if e.name in counts:
            return A.IntLit(counts[e.name], str(counts[e.name]), span=sp), e
        return A.UBound(e.name, span=sp), e
    if isinstance(e, A.Binary) and e.op == "#":
        a, b = _factor_index(e.lhs, counts), _factor_index(e.rhs, counts)
        if a is None or b is None:
            return None
        index = A.Binary("+", A.Binary("*", A.Paren(a[1], span=sp), b[0], span=sp), b[1], span=sp)
        return A.Binary("*", a[0], b[0], span=sp), index
    if isinstance(e, A.Binary) and e.op in ("#+", "#-"):
        a = _factor_index(e.lhs, counts)
        return None if a is None else (A.Binary(e.op[1], a[0], e.rhs, span=sp), a[1])
    if isinstance(e, A.Binary) and e.op in ("+", "-") and not isinstance(e.lhs, A.IntLit):
        a = _factor_index(e.lhs, counts)  # ``k - 1``: another chunk of the same tiling
        return None if a is None else (a[0], e)
    return None


def _post_order(n: A.Node) -> list[A.Node]:
    out: list[A.Node] = []
    for c in n.children():
        out.extend(_post_order(c))
    out.append(n)
    return out


def _counters(loop: A.Foreach) -> tuple[list[str], list[int]] | None:
    """The names a ``foreach`` counts and their constant extents (None: not of that form)."""
    names: list[str] = []
    extents: list[int] = []
    for it in loop.items:
        if not isinstance(it, A.Within) or not isinstance(it.shape, A.MdspanLit):
            return None
        items = it.shape.items
        its = it.vars if it.vars is not None else [it.name] * (len(items) == 1)
        if len(its) != len(items) or not all(isinstance(x, A.IntLit) and x.value > 0 for x in items):
            return None
        names.extend(n or "_" for n in its)
        extents.extend(x.value for x in items)  # type: ignore[union-attr]
    return names, extents


def _picks_elements(n: A.Node, arrays: set[str]) -> bool:
    """Is ``n`` a loop of constant trip count (at most :data:`MAX_UNROLLED`) whose counters index
    elements of the fragment ``arrays``?"""
    if not isinstance(n, A.Foreach) or n.suffixes and any(x.kind != "unroll" for x in n.suffixes):
        return False
    counted = _counters(n)
    if counted is None or math.prod(counted[1]) > MAX_UNROLLED:
        return False
    names = set(counted[0])
    for array in arrays:
        for use in _element_uses(n, array):  # type: ignore[arg-type]
            if any(isinstance(x, A.Name) and x.name in names for i in _indices(use) for x in i.walk()):
                return True
    return False


def _literal(n: A.Node, fixed: dict[str, int]) -> A.Node | None:
    """A counter as its value in one copy; an integer expression of literals only as its value."""
    if isinstance(n, A.Name) and n.name in fixed:
        return A.IntLit(fixed[n.name], str(fixed[n.name]), span=n.span)
    if isinstance(n, A.Index):
        for k, i in enumerate(n.indices):
            v = _fold(i, fixed)
            if v is not None:
                n.indices[k] = A.IntLit(v, str(v), span=i.span)
    return None


def _fold(e: A.Expr, fixed: dict[str, int]) -> int | None:
    """``e``'s value where it is integer arithmetic of literals and counters (C's division)."""
    if isinstance(e, A.Paren):
        return _fold(e.expr, fixed)
    if isinstance(e, A.IntLit):
        return e.value
    if isinstance(e, A.Name):
        return fixed.get(e.name)
    if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "%"):
        a, b = _fold(e.lhs, fixed), _fold(e.rhs, fixed)
        if a is None or b is None or (e.op in "/%" and b == 0):
            return None
        if e.op == "/":
            return int(a / b)
        if e.op == "%":
            return a - int(a / b) * b
        return {"+": a + b, "-": a - b, "*": a * b}[e.op]
    return None


def _declared_array(n: A.Node) -> bool:
    """``frag f32 [64, 32] acc[2] {0.0f}``: a fragment array declared with its fragments' shape."""
    return isinstance(n, A.FragDecl) and any(d.dims for d in n.items)


def _expand_declared(fn: A.CoFunction, top: A.Parallel, decl: A.FragDecl) -> list[RangeCheck]:
    """The arrays of ``decl`` as one fragment declaration an element (the same shape and fill)."""
    checks: list[RangeCheck] = []
    plain = [d for d in decl.items if not d.dims]
    out: list[A.Stmt] = [A.FragDecl(decl.elem, decl.shape, plain, span=decl.span)] if plain else []
    for d in decl.items:
        if not d.dims:
            continue
        if d.init is not None:
            raise CroqLoweringError(
                f"the fragment array '{d.name}' has an initialiser: give it a fill ('{{v}}')", d.span
            )

        def element(name: str, d: A.Declarator = d) -> A.Stmt:
            item = A.Declarator(name, fill=copy.deepcopy(d.fill), span=d.span)
            return A.FragDecl(decl.elem, copy.deepcopy(decl.shape), [item], span=decl.span)

        marker = A.Empty(span=d.span)
        out.append(marker)
        checks.extend(_expand(fn, top, marker, d.name, d.dims, element, holder=out))
    _replace(top, lambda n: out if n is decl else None)
    return checks


def _expand(
    fn: A.CoFunction,
    top: A.Parallel,
    init: A.Node,
    array: str,
    extents: list[A.Expr],
    declare: Callable[[str], A.Stmt],
    holder: list[A.Stmt] | None = None,
) -> list[RangeCheck]:
    """Each element of the fragment array ``array`` (of ``extents``) that ``top`` names, declared
    by ``declare(its name)`` in place of ``init`` (in ``holder`` where ``init`` is not yet in
    ``top``)."""
    init_name = array
    dims: list[int] = []
    for d in extents:
        if not isinstance(d, A.IntLit) or d.value <= 0:
            raise CroqLoweringError(
                f"the extents of the fragment array '{init_name}' must be positive integer literals", d.span
            )
        dims.append(d.value)
    uses = _element_uses(top, init_name)
    for n in top.walk():
        if isinstance(n, A.Name) and n.name == init_name and id(n) not in {id(_root(u)) for u in uses}:
            raise CroqLoweringError(
                f"the fragment array '{init_name}' can only be used element by element",
                n.span,
                f"name one accumulator: {init_name}" + "".join("[0]" for _ in dims),
            )
    invariant = _invariant_names(fn, top)
    keys: dict[str, tuple[str, list[A.Expr]]] = {}  # element key -> (accumulator name, indices)
    checks: list[RangeCheck] = []
    dynamic = False
    for use in uses:
        idx = _indices(use)
        if len(idx) != len(dims):
            raise CroqLoweringError(
                f"'{init_name}' has {len(dims)} dimension(s); this names {len(idx)}",
                use.span,
            )
        for k, (e, extent) in enumerate(zip(idx, dims, strict=True)):
            if isinstance(e, A.IntLit):
                if not 0 <= e.value < extent:
                    raise CroqLoweringError(
                        f"index {e.value} is out of range for dimension {k} of '{init_name}' (extent {extent})",
                        e.span,
                    )
                continue
            free = {n.name for n in e.walk() if isinstance(n, A.Name)}
            if not free <= invariant:
                raise CroqLoweringError(
                    f"an index of the fragment array '{init_name}' changes while the kernel runs",
                    e.span,
                    "fragment array indices must be integer literals or expressions of scalar parameters",
                )
            dynamic = True
        key = repr(idx)
        if key not in keys:
            suffix = "_".join(str(e.value) if isinstance(e, A.IntLit) else f"x{len(keys)}" for e in idx)
            keys[key] = (f"{init_name}__{suffix}", idx)
    if dynamic and len(keys) > 1:
        raise CroqLoweringError(
            f"the fragment array '{init_name}' is indexed by a run-time value and also elsewhere",
            uses[0].span,
            "with a run-time index every use must name the same element",
        )
    if dynamic:
        ((_, idx),) = keys.values()
        checks = [
            RangeCheck(e, extent, init_name) for e, extent in zip(idx, dims, strict=True) if not isinstance(e, A.IntLit)
        ]
    by_id = {id(u): keys[repr(_indices(u))][0] for u in uses}
    _replace(top, lambda n: A.Name(by_id[id(n)], span=n.span) if id(n) in by_id else None)
    fills: list[A.Stmt] = [declare(name) for name, _ in keys.values()]
    if holder is not None:
        k = next(i for i, x in enumerate(holder) if x is init)
        holder[k : k + 1] = fills
    else:
        _replace(top, lambda n: fills if n is init else None)  # spliced: a Block would scope them
    return checks


def _element_uses(top: A.Parallel, name: str) -> list[A.Index]:
    """The outermost ``name[..][..]`` chains (each the element it names)."""
    inner: set[int] = set()
    out: list[A.Index] = []
    for n in top.walk():
        if isinstance(n, A.Index) and id(n) not in inner and isinstance(_root(n), A.Name) and _root(n).name == name:  # type: ignore[union-attr]
            out.append(n)
            b = n.base
            while isinstance(b, A.Index):
                inner.add(id(b))
                b = b.base
    return out


def _root(n: A.Index) -> A.Expr:
    b: A.Expr = n
    while isinstance(b, A.Index):
        b = b.base
    return b


def _indices(n: A.Index) -> list[A.Expr]:
    chain: list[list[A.Expr]] = []
    b: A.Expr = n
    while isinstance(b, A.Index):
        chain.append(b.indices)
        b = b.base
    return [e for part in reversed(chain) for e in part]


def _invariant_names(fn: A.CoFunction, top: A.Parallel) -> set[str]:
    """Scalar parameters of ``fn`` that nothing in ``top`` binds or assigns."""
    scalars = {p.name for p in fn.params if p.name and p.type.kind in ("int", "bool", "elem")}
    bound: set[str] = set()
    for n in top.walk():
        if isinstance(n, A.Assign) and isinstance(n.target, A.Name):
            bound.add(n.target.name)
        if isinstance(n, (A.Name, A.Expr)):
            continue
        for f in fields(n):
            if f.name in ("name", "result", "alias"):
                v = getattr(n, f.name)
                if isinstance(v, str):
                    bound.add(v)
            elif f.name == "vars":
                bound.update(x for x in getattr(n, f.name) or [] if isinstance(x, str))
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.Assign) and isinstance(n.target, A.Name):
                bound.add(n.target.name)
    return scalars - bound


def _replace(node: A.Node, fn: Callable[[A.Node], A.Node | list[A.Stmt] | None]) -> None:
    """Replace, below ``node``, every child ``c`` for which ``fn(c)`` is not None by that value (a
    list is spliced into the list holding ``c``; where ``c`` is a single child it becomes a Block)."""
    for f in fields(node):
        if f.name == "span":
            continue
        v = getattr(node, f.name)
        if isinstance(v, A.Node):
            new = fn(v)
            if isinstance(new, list):
                new = A.Block(new, span=v.span)
            if new is not None:
                setattr(node, f.name, new)
            else:
                _replace(v, fn)
        elif isinstance(v, list):
            out: list[object] = []
            for x in v:
                new = fn(x) if isinstance(x, A.Node) else None
                if isinstance(new, list):
                    out.extend(new)
                elif new is not None:
                    out.append(new)
                else:
                    if isinstance(x, A.Node):
                        _replace(x, fn)
                    out.append(x)
            v[:] = out
