"""Element accesses of tensors (``x.at(i, j)`` read and written), as a mixin of the kernel lifter
(lift/kernel.py): the tensor's pointer, strides and extents as kernel arguments, the index as
named offsets, one named mask of the bounds, the enclosing conditions and the padding lanes; a
``span_as`` view of a whole tensor is read and written by element through its unravelled index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..sema.types import TYPES
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import shared_element
from .host import ir_type
from .notlifted import NotLifted
from .terms import Region, const_int, unparen


@dataclass(frozen=True)
class ReshapedTensor:
    """``x.span_as([..])`` of a whole tensor inside a kernel: read and written by element, and a
    view of it (``a2.subspan(32, 16).at(m, k)``) is the same view of ``view``, the ``span_as`` as
    written (its extents are shapes: they do not change while the kernel runs)."""

    tensor: str
    dims: tuple[E.Expr, ...]
    view: A.View | None = None


class Elements:
    host: Any
    args: dict[str, N.Arg]
    bound: set[str]
    lets: list[tuple[E.Expr, E.Var]]
    pred: list[E.Expr]
    padding: list[E.Expr]
    binding: Any
    known: Any
    undeclared: Any  # (the kernel lifter's: the user's error, with the visible names closest)
    expr: Any
    span_as_count: Any
    index_args: Any
    emit: Any
    fresh: Any
    claim: Any
    convert: Any
    binary: Any
    buffer_of: Any
    slot_element: Any
    buffer_write: Any
    in_tensor: Any
    mask_of: Any
    grid_of: dict[str, E.Expr]
    check_access: Any
    tensor_index: Any

    def reshaped_tensor(self, e: A.Expr) -> ReshapedTensor | None:
        """``x.span_as([a, b])`` of a whole tensor: its elements in row-major order with that shape
        (read and written by element: the index is unravelled into the tensor's), else None."""
        v = unparen(e)
        if not (isinstance(v, A.View) and len(v.ops) == 1 and v.ops[0].kind == "span_as"):
            return None
        base = unparen(v.base)
        if not (isinstance(base, A.Name) and base.name in self.host.tensors):
            return None
        _, ptr = self.tensor(base)
        return ReshapedTensor(base.name, tuple(self.span_as_count(list(ptr.extents), v.ops[0])), v)

    def tensor(self, base: A.Expr) -> tuple[str, N.Pointer]:
        if isinstance(base, A.Name) and isinstance(self.binding(base.name), (ReshapedTensor, Region)):
            base = A.Name(self.binding(base.name).tensor, span=base.span)
        if isinstance(base, A.Name) and not self.known(base.name):
            raise self.undeclared(base.name, base.span)
        if not isinstance(base, A.Name) or base.name not in self.host.tensors:
            raise NotLifted("an element access of something other than a tensor", base)
        t = self.host.tensors[base.name]
        ptr_name = f"{t.name}_ptr"
        if ptr_name not in self.args:
            if ir_type(t.elem) is None:
                raise NotLifted(f"a tensor of type '{t.elem}'", base)
            extents = tuple(self.size(x) for x in t.extents)
            strides = tuple(f"{t.name}_stride_{d}" for d in range(len(t.extents)))
            self.args[ptr_name] = N.Pointer(ptr_name, t.host, ir_type(t.elem) or "f32", extents, strides)
            for d, st in enumerate(strides):
                self.args[st] = N.Stride(st, t.host, d)
        arg = self.args[ptr_name]
        assert isinstance(arg, N.Pointer)
        return t.elem, arg

    def unravelled(self, at: A.At, r: ReshapedTensor, rank: int) -> tuple[E.Expr, ...]:
        """An element of a span_as view as the tensor's index: row-major position, unravelled."""
        indices = self.index_args(at.indices)
        if len(indices) != len(r.dims):
            raise CroqSemanticError(f"{len(indices)} index(es) for data of rank {len(r.dims)}", at.span)
        flat: E.Expr = E.Const(0)
        for i, n in zip(indices, r.dims, strict=True):
            flat = E.Bin("+", E.Bin("*", flat, n), self.expr(i).expr)
        flat = self.named_offset(E.fold(flat), at)
        _, ptr = self.tensor(at.base)
        out: list[E.Expr] = []
        for d in reversed(range(rank)):
            n = ptr.extents[d]
            out.append(E.fold(E.Bin("%", flat, n)) if d else flat)
            if d:
                flat = E.fold(E.Bin("/", flat, n))
        return tuple(self.named_offset(x, at) for x in reversed(out))

    def size(self, x: str | int) -> E.Expr:
        if isinstance(x, int):
            return E.Const(x)
        return self.scalar_arg(x, x, "int", lo=0)

    def scalar_arg(self, name: str, host: str, ctype: str, lo: int | None = None) -> E.Var:
        if name not in self.args:
            self.args[name] = N.Scalar(name, ir_type(ctype) or "i32", E.Var(host))
            self.bound.add(name)
        return E.Var(name, ir_type(ctype) or "i32", lo=lo)

    def access(self, at: A.At) -> tuple[str, N.Pointer, tuple[E.Expr, ...], list[E.Expr]]:
        """The tensor an element access reaches, the element's index there and the terms that keep
        it inside the tensor and, through a named view (``seg = x.view(rows, D).from(s, 0)``), inside
        the view's windows: outside them a read is zero and a write is dropped (LANGUAGE.md 14.3)."""
        elem, ptr = self.tensor(at.base)
        b = unparen(at.base)
        region = self.binding(b.name) if isinstance(b, A.Name) else None
        if not isinstance(region, Region):
            index = self.index(at, len(ptr.extents))
            return elem, ptr, index, self.in_tensor(list(index), ptr.extents, ())
        if at.through_address and len(at.indices) > 1:
            raise NotLifted(
                f"an element at an offset from the address of an element of the view '{b.name}' of several"
                " dimensions (a view's rows need not lie one after another: pass an element of the tensor)",
                at,
            )
        indices = self.index_args(at.indices)
        if len(indices) != len(region.shape):
            raise CroqSemanticError(f"{len(indices)} index(es) for data of rank {len(region.shape)}", at.span)
        values = [self.integer_index(i) for i in indices]
        self.check_access(b.name, [const_int(n) or 0 for n in region.shape], values, indices, every=True)  # type: ignore[attr-defined]
        place = list(region.origin)
        for c, d in enumerate(region.axes):  # a view with explicit strides: ``steps`` elements a step
            place[d] = E.fold(place[d] + region.at(c, values[c]))
        index, terms = self.tensor_index(region, place, at)
        return elem, ptr, index, terms

    def integer_index(self, i: A.Expr) -> E.Expr:
        v = self.expr(i)
        if v.ctype not in ("int", "bool") and not (v.ctype in TYPES and TYPES[v.ctype].kind in ("int", "uint")):
            raise NotLifted("a non-integer index", i)
        return E.fold(v.expr)

    def index(self, at: A.At, rank: int) -> tuple[E.Expr, ...]:
        b = unparen(at.base)
        reshaped = self.binding(b.name) if isinstance(b, A.Name) else None
        if isinstance(reshaped, ReshapedTensor):
            return self.unravelled(at, reshaped, rank)
        indices = self.index_args(at.indices)
        if len(indices) != rank:
            raise CroqSemanticError(f"{len(indices)} index(es) for data of rank {rank}", at.span)
        out = [self.named_offset(self.integer_index(i), i) for i in indices]
        t = self.host.tensors.get(b.name) if isinstance(b, A.Name) else None
        if t is not None:  # a tensor: only an index outside it for every value (LANGUAGE.md 14.3)
            extents = [n if isinstance(n, int) else 0 for n in t.extents]  # 0: symbolic, not checked
            self.check_access(b.name, extents, out, indices, every=True)
        return tuple(out)

    def named_offset(self, e: E.Expr, node: A.Node) -> E.Expr:
        """An index that depends on lanes and is more than a lane gets a name (``offs``)."""
        e = E.fold(e)
        if not e.shape or isinstance(e, (E.Var, E.Const)) or (isinstance(e, E.Lift) and isinstance(e.value, E.Var)):
            return e
        return self.named(e, "offs", node)

    def forget(self, names: set[str]) -> None:
        """The named offsets and masks computed from the variables ``names``: stale once one of
        them is assigned (a loop's index advanced: ``k := k + 1``), computed again where used."""
        if names:
            self.lets = [(v, var) for v, var in self.lets if not {x.name for x in E.free_vars(v)} & names]

    def named(self, e: E.Expr, base: str, node: A.Node) -> E.Var:
        for value, var in self.lets:
            if E.same(value, e):
                return var
        lo, hi = E.bounds(e)
        var = E.Var(self.fresh(base), e.dtype, lo=lo, hi=hi, dims=e.shape)
        self.emit(N.Let(var, e), node)
        self.lets.append((e, var))
        return var

    def mask_terms(self, terms: list[E.Expr]) -> list[E.Expr]:
        """The terms of a mask, each once, written with the named offsets, without those that
        always hold (a program id below the grid's extent: ``r < M`` under ``parallel r by M``)."""
        out: list[E.Expr] = []
        for t in terms:
            t = E.fold(t)
            for value, var in self.lets:
                if not isinstance(value, (E.Var, E.Const)) and value.shape == var.shape and var.type != "i1":
                    t = E.replace(t, value, var)
            if isinstance(t, E.Const) and t.value or t in out or self.below_grid(t):
                continue
            out.append(t)
        return out

    def below_grid(self, t: E.Expr) -> bool:
        if not (isinstance(t, E.Bin) and t.op == "<" and isinstance(t.lhs, E.Var) and isinstance(t.rhs, E.Var)):
            return False
        arg = self.args.get(t.rhs.name)
        host = self.grid_of.get(t.lhs.name)
        return isinstance(arg, N.Scalar) and host is not None and E.same(arg.host, host)

    def load(self, at: A.At, want: str | None) -> Value:
        elem, ptr, index, inside = self.access(at)
        # a condition that tells lanes apart does not mask an element the same for all of them
        # (idx.at(b, t) under if (c < D)): it is read once for all (a read has no effect, and what
        # the lanes whose condition fails make of it is masked where it is stored); its bounds stay
        where = E.broadcast(*(i.shape for i in index))
        terms = inside + self.pred + self.padding
        kept = E.conj(self.mask_terms([t for t in terms if E.fits_in(t.shape, where)]))
        mask = None if isinstance(kept, E.Const) and kept.value else self.named(kept, "mask", at)
        shape = E.broadcast(*(i.shape for i in index), *(mask.shape,) if mask is not None else ())
        name = self.claim(want) if want is not None else self.fresh(f"{at.base.name}_val")  # type: ignore[attr-defined]
        var = E.Var(name, ptr.dtype, dims=shape)
        zero = 0.0 if TYPES[elem].is_float else 0
        self.emit(N.Load(var, ptr.name, index, mask, zero if mask is not None else None, nan_outside=True), at)
        return Value(var, elem)

    def store(self, at: A.At, a: A.Assign) -> None:
        at = self.slot_element(at)
        buf = self.buffer_of(at.base)
        if buf is not None:
            self.buffer_write(buf, at, a)
            return
        elem, ptr, index, inside = self.access(at)
        mask = self.mask_of(inside, at, self.padding)
        value = self.expr(a.value)
        if a.op != "=":
            value = self.binary(a.op, self.load(at, None), value, a)
        value = self.convert(value, elem)
        wide = E.broadcast(*(i.shape for i in index), value.expr.shape, mask.shape if mask is not None else ())
        index = shared_element(index, wide)
        self.emit(N.Store(ptr.name, index, value.expr, mask), a)
