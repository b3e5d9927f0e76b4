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
    checks: list[RangeCheck] = []
    for init in [n for n in top.walk() if isinstance(n, A.FragInit)]:
        fills = lambda name, init=init: A.MmaFill(  # noqa: E731
            copy.deepcopy(init.value), result=name, elem=init.elem, span=init.span
        )
        checks.extend(_expand(fn, top, init, init.name, init.dims, fills))
    for decl in [n for n in top.walk() if _declared_array(n)]:
        checks.extend(_expand_declared(fn, top, decl))  # type: ignore[arg-type]
    return top, checks


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
