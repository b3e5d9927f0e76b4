"""Expressions of the contraction analysis: integer index expressions, conditions, element reads,
views of tensors and buffers (LANGUAGE.md 7.6), as a mixin of its interpreter."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..sema.tiling import source_text
from ..sema.types import TYPES
from ..tir import expr as E
from .checks import check_indices
from .notlifted import NotLifted
from .terms import (
    AccRead,
    Bounded,
    Buffer,
    BufferArray,
    Cells,
    Elem,
    Future,
    Placed,
    Prod,
    Region,
    ShapeName,
    Value,
    View,
    Written,
)  # fmt: skip
from .terms import (
    const_int as _const,
)
from .terms import (
    unparen as _lit,
)


def _inside(off: E.Expr, ext: E.Expr, room: E.Expr) -> bool:
    """Does a tile of ``ext`` elements from ``off`` lie inside ``room`` elements for every value of
    its variables: by their ranges, or as a tile of ``room / k`` at an index below ``k``?"""
    lo, hi = E.bounds(off)[0], E.bounds(E.fold(E.Bin("+", off, ext)))[1]
    r = _const(room)
    if lo is not None and lo >= 0 and hi is not None and r is not None and hi <= r:
        return True
    if isinstance(ext, E.Bin) and ext.op == "/" and E.same(ext.lhs, room) and isinstance(ext.rhs, E.Const):
        k = int(ext.rhs.value)
        for v in E.free_vars(off):
            if v.lo is not None and v.lo >= 0 and v.hi is not None and v.hi < k and E.same(off, E.Bin("*", v, ext)):
                return True
    return False


FLOATS = ("f64", "f32", "tf32", "f16", "bf16", "f8_e4m3", "f8_e5m2")


def _widens(src: str, dst: str | None) -> bool:
    """Whether converting an integer of type ``src`` to ``dst`` keeps every value (s8 -> s32, u8 ->
    s16, s32 -> int): an integer of at least as many bits, signed where ``src`` is or wider."""
    if dst is None or src not in TYPES or dst not in TYPES:
        return False
    s, d = TYPES[src], TYPES[dst]
    if s.kind not in ("int", "uint") or d.kind not in ("int", "uint") or s.bits < 8:
        return False
    if s.kind == d.kind:
        return d.bits >= s.bits
    return s.kind == "uint" and d.bits > s.bits


class ViewAlgebra:
    """The extents and origins view operations give (LANGUAGE.md 7.6), for any interpreter that
    evaluates integer expressions (``int_expr``), bounded indices (``bounded``), ``.at`` arguments
    (``at_args``) and ``chunkat`` extents (``chunk_extent``)."""

    int_expr: Any
    bounded: Any
    at_args: Any
    chunk_extent: Any
    scopes: list[dict[str, Any]]
    host: Any
    size: Any

    def index_args(self, args: list[A.Expr]) -> list[A.Expr]:
        """``args`` with index tuples spelled out (lift/loops.py; the contraction analysis has none)."""
        return args

    def extent_items(self, args: list[A.Expr]) -> list[E.Expr | None]:
        """The extents a view operation's arguments give, None for ``_`` (the parent's); the
        kernel lifter spells out the shapes it knows among them too (lift/loops.py)."""
        return [None if self.is_blank(x) else self.extent_value(x) for x in self.extent_args(args)]

    def view_parts(self, parent: list[E.Expr], op: A.ViewOp) -> tuple[list[E.Expr], list[E.Expr], list[bool]]:
        rank = len(parent)
        keep = [True] * rank
        if op.kind == "sqz":
            return [E.Const(0)] * rank, parent, [_const(x) != 1 for x in parent]
        if op.strides:
            raise NotLifted("a view with explicit strides", op)
        if op.kind == "chunkat":
            args = self.chunk_args(self.index_args(op.args), op)
            if len(args) != rank:
                raise CroqSemanticError(f"chunkat takes {rank} indices here, {len(args)} given", op.span)
            shape = [self.chunk_extent(p, b) for p, (_, b) in zip(parent, args, strict=True)]
            offs = [E.fold(i * s) for (i, _), s in zip(args, shape, strict=True)]
            return offs, shape, keep
        if op.kind == "subspan":
            items = self.extent_items(op.args)
            if len(items) != rank:
                raise CroqSemanticError(f"subspan takes {rank} extents here, {len(items)} given", op.span)
            shape = [parent[d] if x is None else x for d, x in enumerate(items)]
            offs: list[E.Expr] = [E.Const(0)] * rank
            if op.at is not None:
                at = self.at_args(self.index_args(op.at), op)
                if len(at) != rank:
                    raise NotLifted("an .at() that does not match the rank", op)
                steps = [self.extent_value(x) for x in self.extent_args(op.step)] if op.step else shape
                if len(steps) != rank:
                    raise CroqSemanticError(
                        f"step takes {rank} values here (one per dimension of the subspan), {len(steps)} given",
                        op.span,
                        "give one step per extent of the subspan",
                    )
                offs = [E.fold(i * s) for i, s in zip(at, steps, strict=True)]
            return offs, shape, keep
        if op.kind == "modspan":
            return self.modspan_parts(parent, op)
        if op.kind == "chunk":  # ``.chunk(f..).at(i..)`` is ``chunkat`` with the factors written out
            factors = [self.extent_value(x) for x in self.extent_args(op.args)]
            at = self.at_args(self.index_args(op.at or []), op)
            if len(factors) != rank or len(at) != rank:
                raise CroqSemanticError(
                    f"chunk takes {rank} factors and {rank} indices here, {len(factors)} and {len(at)} given", op.span
                )
            shape = [self.chunk_extent(p, f) for p, f in zip(parent, factors, strict=True)]
            return [E.fold(i * n) for i, n in zip(at, shape, strict=True)], shape, keep
        if op.kind == "view" and op.at is None:
            raise NotLifted("a view without .from()", op)
        raise NotLifted(f"the view operation '.{op.kind}'", op)

    def modspan_parts(self, parent: list[E.Expr], op: A.ViewOp) -> tuple[list[E.Expr], list[E.Expr], list[bool]]:
        """``.modspan(e..)[.at(i..)]`` (LANGUAGE.md 7.6): the remainder of tiling each dimension by
        ``e``, ``P % e`` elements (1 where ``e`` divides ``P``) from ``i * e``; without ``.at`` the
        tail piece, ``i = P / e``."""
        items = self.extent_items(op.args)
        rank = len(parent)
        if len(items) != rank:
            raise CroqSemanticError(f"modspan takes {rank} extents here, {len(items)} given", op.span)
        if op.step:
            raise NotLifted("a '.modspan(..).step(..)'", op)
        extents = [parent[d] if x is None else x for d, x in enumerate(items)]
        shape: list[E.Expr] = []
        for p, e in zip(parent, extents, strict=True):
            remainder = E.fold(E.Bin("%", p, e))
            rest = _const(remainder)
            if rest is None:  # known at launch: a tile whose extent the launcher fixes (1 where e divides P)
                shape.append(E.fold(E.Bin("max", remainder, E.Const(1))))
                continue
            shape.append(E.Const(rest if rest else 1))
        if op.at is not None:
            at = self.at_args(self.index_args(op.at), op)
            if len(at) != rank:
                raise NotLifted("an .at() that does not match the rank", op)
        else:
            at = [E.fold(E.Bin("/", p, e)) for p, e in zip(parent, extents, strict=True)]
        offs = [E.fold(i * e) for i, e in zip(at, extents, strict=True)]
        return offs, shape, [True] * rank

    def region_op(self, v: Region, op: A.ViewOp) -> Region:
        """A view operation on a region of a tensor."""
        if op.kind == "view" and op.at is not None and not op.strides:
            # `.view(e...).from(o...)` (LANGUAGE.md 7.6): a window whose extents bound it too
            origin = self.index_args(op.at)
            items = self.extent_items(op.args)
            if len(items) != len(v.shape) or len(origin) != len(v.shape):
                raise NotLifted("a view that changes the rank", op)
            shape = [v.shape[d] if x is None else x for d, x in enumerate(items)]
            return v.window([self.int_expr(x) for x in origin], shape)
        offs, shape, keep = self.view_parts(list(v.shape), op)
        child = v.sub(offs, shape, keep)
        if op.kind in ("subspan", "modspan") and v.steps is None and v.reshaped is None:
            child = self.clipped(v, child, offs, shape)
        return child

    def clipped(self, v: Region, child: Region, offs: list[E.Expr], shape: list[E.Expr]) -> Region:
        """``child``, a tile of the window ``v`` (``.subspan(e..).at(i..)``), bounded by ``v`` where ``v``
        is less than its tensor along a dimension and the tile may reach past it: a tile of a window
        reads zero and drops writes outside the window as a tile of a tensor does outside the tensor
        (LANGUAGE.md 14.3; a batch's rows ``x.subspan(M, K).at(b, 0)`` tiled by 16 read no row of the
        next batch)."""
        tensor = self.host.tensors.get(v.tensor)
        if tensor is None:
            return child
        new: list[tuple[int, E.Expr, E.Expr]] = []
        for c, axis in enumerate(v.axes):
            root = tensor.extents[axis]
            whole = E.Const(root) if isinstance(root, int) else E.Var(str(root), "i32", 0)
            lo, n = v.origin[axis], v.shape[c]
            if _const(lo) == 0 and E.same(n, whole):
                continue  # the whole dimension: the tensor's own bounds hold
            if _inside(offs[c], shape[c], n):
                continue  # inside the window for every index (an extent-1 dimension kept by .sqz)
            hi = E.fold(E.Bin("+", lo, n))
            if any(d == axis and E.same(a, lo) and E.same(b, hi) for d, a, b in v.limits):
                continue  # a '.view(..).from(..)' window bounds its tiles already
            new.append((axis, lo, hi))
        if not new:
            return child
        return dataclasses.replace(child, limits=child.limits + tuple(new))

    def is_blank(self, x: A.Expr | E.Expr) -> bool:
        return isinstance(x, A.Node) and isinstance(_lit(x), A.Name) and _lit(x).name == "_"  # type: ignore[attr-defined]

    def extent_args(self, args: list[A.Expr]) -> list[A.Expr | E.Expr]:
        """The extents a view operation's arguments stand for: a shape (an ituple or mdspan, named
        or written out) gives each of its extents (``subspan(7, b)`` with ``b = {6, 8}`` is
        ``subspan(7, 6, 8)``, LANGUAGE.md 7.1), any other argument one."""
        out: list[A.Expr | E.Expr] = []
        for a in args:
            x = _lit(a)
            if isinstance(x, (A.ItupleLit, A.MdspanLit)):
                out.extend(self.extent_args(list(x.items)))
                continue
            named = self.named_shape(x.name) if isinstance(x, A.Name) else None
            out.extend(named if named is not None else [a])
        return out

    def named_shape(self, name: str) -> list[E.Expr] | None:
        """The extents of the shape ``name`` names (a ``tiles : [32, b]`` of the kernel, an ituple or
        mdspan of the host code), None where it names no shape."""
        for scope in reversed(self.scopes):
            if name in scope:
                v = scope[name]
                return list(v.extents) if isinstance(v, ShapeName) else None
        shape = self.host.shapes.get(name)
        return None if shape is None else [self.size(n) for n in shape]

    def extent_value(self, x: A.Expr | E.Expr) -> E.Expr:
        return x if isinstance(x, E.Expr) else self.int_expr(x)

    def chunk_args(self, args: list[A.Expr], node: A.Node) -> list[tuple[E.Expr, E.Expr]]:
        out: list[tuple[E.Expr, E.Expr]] = []
        for x in args:
            if self.is_blank(x):
                out.append((E.Const(0), E.Const(1)))
                continue
            v = self.bounded(x)
            out.append((v.value, v.bound))
        return out


class Expressions(ViewAlgebra):
    """What expressions and views evaluate to (the interpreter supplies scopes and lookups)."""

    assumptions: list[tuple[E.Expr, int]]
    lookup: Any
    data_var: Any
    touch: Any
    buffer_content: Any
    guard: list[E.Expr]

    def value(self, e: A.Expr) -> Value:
        e = _lit(e)
        if isinstance(e, A.Name):
            return self.lookup(e.name, e)
        if isinstance(e, A.Member) and e.member == "data":
            v = self.value(e.base)
            if isinstance(v, Future):
                return v.buffer
            if isinstance(v, (Buffer, View, Region)):
                return v  # spanned data's '.data' is itself (upstream's 'dataof')
            check = getattr(self, "no_copy_read", None)  # (a placeholder's: the user's error, lift/futures.py)
            if check is not None:
                check(e)
            raise NotLifted("'.data' of something that is not a future", e)
        if isinstance(e, A.Index):
            base = self.value(e.base)
            if isinstance(base, BufferArray) and len(e.indices) == 1:
                return base.slot(self.int_expr(e.indices[0]))
            raise NotLifted("an index the contraction analysis does not know", e)
        if isinstance(e, A.At):
            return self.at(e)
        if isinstance(e, A.View):
            return self.view(e)
        if isinstance(e, A.Binary) and e.op == "*":
            x, y = self.value(e.lhs), self.value(e.rhs)
            if isinstance(x, Elem) and isinstance(y, Elem):
                return Prod(x, y)
            if isinstance(x, Prod) and isinstance(y, Elem) and len(x.scales) < 2:
                return Prod(x.a, x.b, (*x.scales, y))
            if isinstance(x, Elem) and isinstance(y, Prod) and len(y.scales) < 2:
                return Prod(y.a, y.b, (*y.scales, x))
            x, y = (v.value if isinstance(v, Bounded) else v for v in (x, y))  # `2 * k`: a loop counter's value
            if isinstance(x, E.Expr) and isinstance(y, E.Expr):
                return E.fold(x * y)
            raise NotLifted("a product that is not of two tensor elements", e)
        if isinstance(e, A.Cast):
            inner = self.value(e.expr)
            if isinstance(inner, (Elem, Prod)) and e.type in FLOATS:
                return inner  # operand conversions: a tensor-core dot computes exact products
            if isinstance(inner, Elem) and _widens(self.host.tensors[inner.tensor].elem, e.type):
                return inner  # ``__to<s32>(a.at(m, k))`` of an s8 element: the same integer
            if isinstance(inner, E.Expr) and e.type in ("int", "s32"):
                return inner
            raise NotLifted("a conversion in a contraction", e)
        return self.int_expr(e)

    def at(self, e: A.At) -> Value:
        base = self.value(e.base)
        idx: list[E.Expr] = []
        for i in e.indices:
            v = self.value(i)
            if isinstance(v, Bounded):
                idx.append(v.value)
            elif isinstance(v, E.Expr):
                idx.append(v)
            else:
                raise NotLifted("an element index that is not an integer", i)
        if isinstance(base, Future):
            base = base.buffer
        if isinstance(base, Cells):
            if any(t.conds for t in base.terms):
                raise NotLifted("an accumulator read inside its element loop", e)
            return AccRead(base, tuple(idx))
        if isinstance(base, (Buffer, View)):
            if not self.guard:  # an index outside the buffer for every value: the user's error (lift/checks.py)
                kept = base.shape if isinstance(base, Buffer) else [n for n, k in zip(base.shape, base.keep) if k]
                check_indices(source_text(e.base), kept, idx, e.indices, {}, every=True)
            buf = base
            base = self.buffer_content(base, e)
            if isinstance(base, list):
                return self.placed_read(buf, base, tuple(idx), e)
        if isinstance(base, Region) and len(idx) == len(base.shape):
            return base.elem(tuple(idx))
        raise NotLifted("an element access the contraction analysis does not know", e)

    def placed_read(
        self, buf: Buffer | View, content: list[Placed | Written], idx: tuple[E.Expr, ...], e: A.Node
    ) -> AccRead:
        """An element of a buffer one accumulator was stored over whole (``mma.store mc, out_s``)."""
        if len(content) != 1 or not isinstance(buf, Buffer) or not isinstance(content[0], Placed):
            raise NotLifted("an element of a buffer several accumulators were stored into", e)
        placed = content[0]
        shape = placed.cells.shape[::-1] if placed.transp else placed.cells.shape
        if any(_const(o) != 0 for o in placed.offsets) or tuple(_const(x) for x in buf.shape) != shape:
            raise NotLifted("an element of a buffer an accumulator covers in part", e)
        return AccRead(placed.cells, idx[::-1] if placed.transp else idx)

    def view(self, e: A.View) -> Value:
        v = self.value(e.base)
        if isinstance(v, Future):
            v = v.buffer
        for op in e.ops:
            v = self.view_op(v, op)
        return v

    def view_op(self, v: Value, op: A.ViewOp) -> Value:
        if isinstance(v, Buffer):
            v = View(v, tuple(E.Const(0) for _ in v.shape), v.shape, tuple(True for _ in v.shape))
        if isinstance(v, View):
            offs, shape, keep = self.view_parts(list(v.shape), op)
            keep_all = list(v.keep)
            # offsets and extents of the kept dimensions, in the buffer's coordinates
            kept = [i for i, k in enumerate(keep_all) if k]
            new_offs, new_shape = list(v.offsets), list(v.shape)
            for j, d in enumerate(kept):
                new_offs[d] = E.fold(new_offs[d] + offs[j])
                new_shape[d] = shape[j]
            for j, d in enumerate(kept):
                keep_all[d] = keep[j]
            return View(v.base, tuple(new_offs), tuple(new_shape), tuple(keep_all))
        if isinstance(v, Region):
            return self.region_op(v, op)
        raise NotLifted(f"'.{op.kind}' of something that is not a view", op)

    def chunk_extent(self, parent: E.Expr, factor: E.Expr) -> E.Expr:
        """``parent / factor`` (LANGUAGE.md 7.6). With ``factor = cdiv(parent, c)`` (or ``parent / c``)
        it is ``c`` exactly when ``c`` divides ``parent``: assumed, and checked by the launcher."""
        out = E.fold(E.Bin("/", parent, factor))
        if _const(out) is not None:
            return out
        f = E.fold(factor)
        if isinstance(f, E.CDiv) or (isinstance(f, E.Bin) and f.op == "/"):
            c = _const(f.rhs)
            if c is not None and c > 0 and E.same(f.lhs, parent) and isinstance(E.fold(parent), E.Var):
                self.assumptions.append((E.fold(parent), c))
                return E.Const(c)
        return out

    def at_args(self, args: list[A.Expr], node: A.Node) -> list[E.Expr]:
        out: list[E.Expr] = []
        for x in args:
            v = self.value(x)
            out.append(v.value if isinstance(v, Bounded) else self.int_expr(x))
        return out

    def bounded(self, e: A.Expr) -> Bounded:
        e = _lit(e)
        if isinstance(e, A.Binary) and e.op == "#":
            a, b = self.bounded(e.lhs), self.bounded(e.rhs)
            return Bounded(E.fold(a.value * b.bound + b.value), E.fold(a.bound * b.bound))
        v = self.value(e)
        if isinstance(v, Bounded):
            return v
        raise NotLifted("a tiling index that is not a bounded variable", e)

    def int_expr(self, e: A.Expr) -> E.Expr:
        e = _lit(e)
        if isinstance(e, A.IntLit):
            return E.Const(e.value)
        if isinstance(e, A.Name):
            v = self.lookup(e.name, e)
            if isinstance(v, Bounded):
                return v.value
            if isinstance(v, E.Expr):
                return v
            if isinstance(v, Elem):
                return self.data_var(v, e)
            raise NotLifted(f"'{e.name}' used as an integer", e)
        if isinstance(e, A.At):
            v = self.at(e)
            if isinstance(v, Elem):
                return self.data_var(v, e)
            raise NotLifted("an element used as an integer", e)
        if isinstance(e, A.UBound):
            v = self.lookup(e.name, e)
            if isinstance(v, Bounded):
                return v.bound
            raise NotLifted(f"'#{e.name}' of something that is not bounded", e)
        if isinstance(e, A.Binary) and e.op == "#":
            return self.bounded(e).value
        if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "%"):
            a, b = self.int_expr(e.lhs), self.int_expr(e.rhs)
            return E.fold(E.Bin(e.op, a, b))
        if isinstance(e, A.Builtin) and e.name == "cdiv" and len(e.args) == 2:
            return E.fold(E.CDiv(self.int_expr(e.args[0]), self.int_expr(e.args[1])))
        if isinstance(e, A.Unary) and e.op == "-":
            return E.fold(E.Un("-", self.int_expr(e.operand)))
        raise NotLifted("an integer expression the contraction analysis does not know", e)

    def bool_expr(self, e: A.Expr) -> E.Expr:
        e = _lit(e)
        if isinstance(e, A.Binary) and e.op == "&&":
            return E.Bin("&", self.bool_expr(e.lhs), self.bool_expr(e.rhs))
        if isinstance(e, A.Binary) and e.op in ("<", "<=", ">", ">=", "==", "!="):
            return E.Bin(e.op, self.int_expr(e.lhs), self.int_expr(e.rhs))
        raise NotLifted("a condition the contraction analysis does not know", e)
