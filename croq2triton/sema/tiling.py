"""``chunkat`` tilings that can leave elements out (LANGUAGE.md 7.6).

``x.chunkat(i, j)`` cuts dimension d into ``#i_d`` chunks of ``P[d] / #i_d`` elements, floor
division: when the bound does not divide the extent, the last ``P[d] % #i_d`` elements belong to
no chunk.  That is the language (and upstream) semantics, but with a ``cdiv(M, T)`` grid it
quietly leaves the tail of a ragged size out, so ``check`` warns wherever a chunkat can drop
elements: the extent is not provably a multiple of the bound (a literal extent and bound warn
only when they really do not divide).

Destinations always warn (outputs left unwritten).  Sources warn too -- a K loop
``foreach k in cdiv(K, T)`` reading ``a.chunkat(m, k)`` ignores the K tail and computes a wrong
product -- except along a dimension whose factor already warned for a destination of the same
function: ``dma.copy a.chunkat(bm, bn) => s; ... => out.chunkat(bm, bn)`` drops the same rows on
both sides, one warning says it.  On the corpus: 1 file warns for a destination, 3 more for a
source (every one can really drop elements at ragged sizes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..errors import REGISTRY, Diagnostic, Span
from ..frontend import ast as A
from ..frontend.printer import Printer
from .scopes import Binding, Resolution, shape_extents


def span_text(sp: Span | None) -> str | None:
    """The source text ``sp`` covers where it lies on one line of a registered file (None otherwise)."""
    if sp is None or sp.line <= 0 or sp.end_line != sp.line:
        return None
    line = REGISTRY.line(sp.file, sp.line)
    return None if line is None else line[sp.col - 1 : sp.end_col - 1]


def source_text(node: A.Node) -> str:
    """``node`` as the user wrote it (macro names kept), else printed from the AST."""
    text = (span_text(node.span) or "").strip()
    if text:
        return text
    try:
        return Printer().expr(node)
    except NotImplementedError:
        return "?"


def _span_text(a: Span | None, b: Span | None) -> str | None:
    if a is None or b is None or a.line != b.end_line or a.file != b.file:
        return None
    line = REGISTRY.line(a.file, a.line)
    if line is None or b.end_col <= a.col:
        return None
    return line[a.col - 1 : b.end_col - 1].strip() or None


@dataclass
class _Factor:
    """A product ``const * atoms`` (atoms: printed sub-expressions), for divisibility."""

    const: int
    atoms: list[str]


def _factors(e: A.Expr, value: Callable[[A.Expr], int | None]) -> _Factor:
    v = value(e)
    if v is not None:
        return _Factor(v, [])
    if isinstance(e, A.Paren):
        return _factors(e.expr, value)
    if isinstance(e, A.Binary) and e.op == "*":
        a, b = _factors(e.lhs, value), _factors(e.rhs, value)
        return _Factor(a.const * b.const, a.atoms + b.atoms)
    return _Factor(1, [_key(e)])


def _key(e: A.Expr) -> str:
    try:
        return Printer().expr(e)
    except NotImplementedError:
        return f"<{id(e)}>"


def divides(bound: A.Expr, extent: A.Expr, value: Callable[[A.Expr], int | None]) -> bool:
    """Is ``extent`` provably a multiple of ``bound``?"""
    b, e = _factors(bound, value), _factors(extent, value)
    if b.const == 0 or e.const % b.const:
        return False
    rest = list(e.atoms)
    for a in b.atoms:
        if a not in rest:
            return False
        rest.remove(a)
    return True


class _Tiling:
    def __init__(self, res: Resolution, value: Callable[[A.Expr], int | None]) -> None:
        self.res = res
        self.value = value
        self.written: set[str] = set()  # the factors (printed) that already warned for a destination

    # ---- bounds of chunkat arguments -------------------------------------------
    def bounds(self, arg: A.Expr) -> list[A.Expr | None] | None:
        """The tiling factor of each dimension ``arg`` covers (None: unknown); ``_`` is 1."""
        if isinstance(arg, A.Name):
            if arg.name == "_":
                return [A.IntLit(1, "1")]
            b = self.res.binding(arg)
            if b is None or b.kind != "bounded" or b.bounds is None:
                return None
            return list(b.bounds)
        if isinstance(arg, A.Paren):
            return self.bounds(arg.expr)
        if isinstance(arg, A.GetIth):  # x(-1): same bound as x; t(1): component 1 of an ituple
            whole = self.bounds(arg.base)
            if whole is None or len(whole) == 1:
                return whole
            k = self.value(arg.index)
            return [whole[k]] if k is not None and 0 <= k < len(whole) else None
        if isinstance(arg, A.Binary):
            if arg.op in ("+", "-"):  # 'y - 1' keeps the bound of y
                return self.bounds(arg.lhs)
            lhs = self.bounds(arg.lhs)
            if lhs is None or len(lhs) != 1 or lhs[0] is None:
                return None
            if arg.op == "#":  # composition: #(p # q) = #p * #q
                rhs = self.bounds(arg.rhs)
                if rhs is None or len(rhs) != 1 or rhs[0] is None:
                    return None
                return [A.Binary("*", lhs[0], rhs[0])]
            if arg.op in ("#+", "#-"):
                return [A.Binary(arg.op[1], lhs[0], arg.rhs)]
        return None

    # ---- extents of the tiled view --------------------------------------------
    def dims_of(self, b: Binding | None) -> list[A.Expr] | None:
        if b is None or b.kind != "spanned" or b.dims is None:
            return None
        return shape_extents(A.MdspanLit(list(b.dims)), self.res.binding)

    def root(self, base: A.Expr) -> tuple[str, list[A.Expr] | None]:
        if isinstance(base, A.Index):  # one buffer of an array of buffers
            base = base.base
        if isinstance(base, A.Name):
            return base.name, self.dims_of(self.res.binding(base))
        return source_text(base), None

    # ---- the check ----------------------------------------------------------
    def check(self, view: A.View, role: str) -> Iterator[Diagnostic]:
        name, dims = self.root(view.base)
        for op in view.ops:
            if op.kind == "chunkat" and dims is not None:
                d = self.chunkat(view, op, name, dims, role)
                if d is not None:
                    yield d
            dims = self.after(op, dims)

    def after(self, op: A.ViewOp, dims: list[A.Expr] | None) -> list[A.Expr] | None:
        if dims is None or op.kind == "zfill":
            return dims
        if op.kind == "subspan" and len(op.args) == len(dims) and op.strides is None:
            return [p if isinstance(a, A.Name) and a.name == "_" else a for a, p in zip(op.args, dims, strict=True)]
        return None  # chunkat, modspan, view, span_as, sqz: not followed further

    def chunkat(self, view: A.View, op: A.ViewOp, name: str, dims: list[A.Expr], role: str) -> Diagnostic | None:
        factors: list[A.Expr | None] = []
        for a in op.args:
            b = self.bounds(a)
            if b is None:
                return None
            factors.extend(b)
        if len(factors) != len(dims) or None in factors:
            return None
        rank = len(dims)
        gone = "written" if role == "write" else "read"
        tiled: list[str] = []  # 'M by cdiv(M, TILE_M)' for each dimension that can drop
        lost: list[str] = []  # what it drops
        tiles: list[str] = []  # the extent of a masked tile covering each dimension, for the hint
        for d, (extent, bound) in enumerate(zip(dims, factors, strict=True)):
            assert bound is not None
            cb, ce = self.value(bound), self.value(extent)
            if cb == 1:
                tiles.append("_")
                continue
            if role == "read" and _key(bound) in self.written:
                tiles.append(f"cdiv({source_text(extent)}, {_bound_text(bound)})")
                continue
            if cb is not None and cb <= 0:
                return None  # a factor <= 0 is an error of its own
            units = f"{_units(rank, d)} of '{name}'"
            et, bt = _shown(extent, ce) if ce is None else f"the extent {_shown(extent, ce)}", _bound_text(bound)
            tile = _cdiv_tile(bound, extent)
            if ce is not None and cb is not None:
                q, r = divmod(ce, cb)
                tiles.append(str(-(-ce // cb)))
                if r:
                    self.note(role, bound)
                    tiled.append(f"{et} by {bt}")
                    lost.append(f"{ce} = {cb} x {q} + {r}, so the last {r} {units} are not {gone}")
                continue
            if divides(bound, extent, self.value):
                tiles.append(f"{source_text(extent)} / {bt}")
                continue
            self.note(role, bound)
            tiled.append(f"{et} by {bt}")
            if tile is not None:
                tiles.append(source_text(tile))
                lost.append(
                    f"when {et} is not a multiple of {_shown(tile, self.value(tile))},"
                    f" up to {bt} - 1 trailing {units} are not {gone}"
                )
            else:
                tiles.append(f"cdiv({et}, {bt})")
                upto = str(cb - 1) if cb is not None else f"{bt} - 1"
                lost.append(f"when {et} is not a multiple of {bt}, up to {upto} trailing {units} are not {gone}")
        if not lost:
            return None
        head = _span_text(view.base.span, op.span) or f"{name}.chunkat(...)"
        if len(op.args) != rank:  # a bounded ituple argument: no 1:1 '.at' to suggest
            hint = (
                "make each extent a multiple of its tiling factor, or tile with"
                f" {name}.subspan(...).at(...) over cdiv grids: subspan tiles are masked at the edges"
            )
        else:
            args = ", ".join("0" if isinstance(a, A.Name) and a.name == "_" else source_text(a) for a in op.args)
            hint = (
                f"use {name}.subspan({', '.join(tiles)}).at({args}) with cdiv grids;"
                " subspan tiles are masked at the edges"
            )
        return Diagnostic(
            "warning",
            f"{head} tiles {' and '.join(tiled)} with floor division: " + "; ".join(lost),
            op.span if view.base.span is None else view.base.span.to(op.span),
            hint,
        )

    def note(self, role: str, bound: A.Expr) -> None:
        if role == "write":
            self.written.add(_key(bound))


def _shown(e: A.Expr, v: int | None) -> str:
    """``TILE_M (16)`` for a macro, ``16`` for a literal, ``M`` for a name."""
    t = source_text(e)
    return t if v is None or t == str(v) else f"{t} ({v})"


def _units(rank: int, d: int) -> str:
    if rank == 1:
        return "elements"
    if rank == 2:
        return ("rows", "columns")[d]
    return f"indices of dimension {d}"


def _bound_text(b: A.Expr) -> str:
    if isinstance(b, A.Binary) and b.span is None:  # a product/offset built from the arguments
        return f"{_bound_text(b.lhs)} {b.op} {_bound_text(b.rhs)}"
    return source_text(b)


def _cdiv_tile(bound: A.Expr, extent: A.Expr) -> A.Expr | None:
    """``T`` when ``bound`` is ``cdiv(extent, T)``."""
    if not (isinstance(bound, A.Builtin) and bound.name == "cdiv" and len(bound.args) == 2):
        return None
    return bound.args[1] if _key(bound.args[0]) == _key(extent) else None


def _views(e: A.Node | None) -> Iterator[A.View]:
    if e is None:
        return
    for n in e.walk():
        if isinstance(n, A.View) and any(op.kind == "chunkat" for op in n.ops):
            yield n


def chunkat_warnings(fn: A.CoFunction, res: Resolution, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    """Warnings for chunkat destinations and sources that can drop elements."""
    t = _Tiling(res, value)
    # 'v = x.chunkat(...)': writing to v writes the view
    aliases = {id(b): b.value for b in res.bindings if b.kind == "view" and isinstance(b.value, A.View)}
    written: list[A.View] = []
    seen: set[int] = set()
    for s in fn.body:
        for n in s.walk():
            dst = n.dst if isinstance(n, (A.DmaStmt, A.MmaStore)) else None
            if dst is None:
                continue
            if isinstance(dst, A.Name):
                b = res.binding(dst)
                v = aliases.get(id(b)) if b is not None else None
                if v is not None and id(v) not in seen:
                    written.append(v)
                    seen.add(id(v))
            for v in _views(dst):
                if id(v) not in seen:
                    written.append(v)
                    seen.add(id(v))
    out: list[Diagnostic] = []
    for v in written:
        out.extend(t.check(v, "write"))
    for s in fn.body:
        for v in _views(s):
            if id(v) not in seen:
                seen.add(id(v))
                out.extend(t.check(v, "read"))
    return out
