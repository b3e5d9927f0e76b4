"""Croqtile expressions of host code as launcher expressions: tile-IR trees over launcher variables.

Arithmetic has C semantics (integer ``/`` and ``%`` truncate; ``&&`` and ``||`` short-circuit,
:class:`~..tir.host.Logic`).  It folds as the expression is built and no further: constants, and
``x + 0``, ``x * 1``, ``x / 1``, ``x / x`` (sizes are positive); the launcher computes the rest
as written, so what it prints reads like the source.  Shapes, index tuples, views and tensor
elements are evaluated here too (:class:`HostExprs`).
"""

from __future__ import annotations

from ..errors import CroqLoweringError, CroqSemanticError
from ..frontend import ast as A
from ..frontend.builtins import c_scalar
from ..frontend.describe import describe
from ..sema import carith
from ..sema.consteval import fold_binary
from ..sema.types import TYPES
from ..tir import expr as E
from ..tir import host as H
from .hostvalues import Bounded, BoundedTuple, ITuple, Reshaped, Shape, Tensor, Value, ir_of
from .terms import unparen

# math builtins between launches (LANGUAGE.md 7.7) -> (runtime/launch.py ``f32math`` name, arity)
HOST_MATH = {
    "__exp": ("exp", 1), "__exp2f": ("exp2", 1), "__log": ("log", 1), "__sqrt": ("sqrt", 1),
    "__rsqrt": ("rsqrt", 1), "__sin": ("sin", 1), "__cos": ("cos", 1), "__tan": ("tan", 1),
    "__floor": ("floor", 1), "__ceil": ("ceil", 1), "__tanh": ("tanh", 1), "__sigmoid": ("sigmoid", 1),
    "__fabs": ("fabs", 1), "__round": ("round", 1), "__log1p": ("log1p", 1), "__expm1": ("expm1", 1),
    "__asin": ("asin", 1), "__acos": ("acos", 1), "__atan": ("atan", 1), "__sinh": ("sinh", 1),
    "__cosh": ("cosh", 1), "__pow": ("pow", 2), "__atan2": ("atan2", 2), "__fmaf": ("fma", 3),
}  # fmt: skip


def const(value: int | float | bool, dtype: str | None = None) -> E.Const:
    if dtype is None:
        dtype = "i1" if isinstance(value, bool) else "i32" if isinstance(value, int) else "f32"
    return E.Const(value, dtype)


def _is(e: E.Expr, value: int) -> bool:
    return isinstance(e, E.Const) and e.value == value


def _number_type(a: E.Expr, b: E.Expr) -> str:
    """The type of arithmetic on ``a`` and ``b`` (a bool counts as an int)."""
    return E.promote("i32" if a.dtype == "i1" else a.dtype, "i32" if b.dtype == "i1" else b.dtype)


def binary(op: str, a: E.Expr, b: E.Expr, scalar: bool = False) -> E.Expr:
    """``a op b`` with C semantics, folded where both are constants (and by the identities above).
    ``scalar``: a scalar of the host code, whose constants fold as C computes them (types, wrapping
    and rounding: sema/carith.py); extents and sizes fold as Python's integers, as sema's do."""
    if isinstance(a, E.Const) and isinstance(b, E.Const) and scalar:
        try:
            value, dtype = carith.fold(op, a.value, a.dtype, b.value, b.dtype)
        except (ZeroDivisionError, TypeError, ValueError):
            pass
        else:
            return const(value, dtype)
    if isinstance(a, E.Const) and isinstance(b, E.Const):
        try:
            v = fold_binary(op, a.value, b.value)
        except (ZeroDivisionError, TypeError, ValueError):
            v = None
        if isinstance(v, bool):
            return const(v)
        if isinstance(v, (int, float)):
            dtype = _number_type(a, b)
            return const(int(v) if isinstance(v, float) and E.is_int(dtype) else v, dtype)
    if op in ("&&", "||"):
        return H.Logic("and" if op == "&&" else "or", (a, b))
    ints = E.is_int(a.dtype) and E.is_int(b.dtype)
    if ints and op in E.ARITH:
        t = carith.result_type(op, a.dtype, b.dtype)  # an identity keeps the other side's type
        if ((op == "+" and _is(a, 0)) or (op == "*" and _is(a, 1))) and carith.promoted(b.dtype) == t:
            return b
        if ((op in ("+", "-") and _is(b, 0)) or (op in ("*", "/") and _is(b, 1))) and carith.promoted(a.dtype) == t:
            return a
        if op == "/" and a == b:
            return const(1)  # an extent divided by itself (sizes are positive)
    return E.Bin(op, a, b)


def cdiv(a: E.Expr, b: E.Expr) -> E.Expr:
    if isinstance(a, E.Const) and isinstance(b, E.Const) and b.value:
        return const(carith.cdiv(int(a.value), int(b.value)))  # C's (a + b - 1) / b
    return E.CDiv(a, b)


def _apply(op: str, a: E.Expr, b: E.Expr) -> E.Expr:
    """``a op b`` of two extents (``cdiv`` too)."""
    return cdiv(a, b) if op == "cdiv" else binary(op, a, b)


def unary(op: str, v: E.Expr) -> E.Expr:
    """``-v``, ``!v``, ``~v`` (``+v`` is ``v``)."""
    if op == "+":
        return v
    if isinstance(v, E.Const):
        try:
            value, dtype = carith.unary(op, v.value, v.type)
        except TypeError:  # ``~`` of a float: the operation stays, for its message
            return E.Un(op, v)
        return const(value, dtype)
    return E.Un(op, v)


def pick(items: tuple[E.Expr, ...], k: int, node: A.Node) -> E.Expr:
    n = len(items)
    idx = k if k >= 0 else n + k
    if not 0 <= idx < n:
        raise CroqSemanticError(f"index {k} is out of range for rank {n}", node.span)
    return items[idx]


def product(dims: tuple[E.Expr, ...]) -> E.Expr:
    out: E.Expr = const(1)
    for d in dims:
        out = binary("*", out, d)
    return out


class HostExprs:
    """Evaluates host expressions in the scope ``names`` (Croqtile name -> value)."""

    body: list[H.Stmt]  # the launcher's statements (an expression's update, ``++x``, goes there)
    uid: int

    def __init__(self) -> None:
        self.names: dict[str, Value] = {}

    def error(self, msg: str, node: A.Node | None, hint: str | None = None) -> CroqLoweringError:
        """Valid Croqtile the host lifting does not translate: a refusal."""
        return CroqLoweringError(msg, node.span if node is not None else None, hint)

    def invalid(self, msg: str, node: A.Node | None, hint: str | None = None) -> CroqSemanticError:
        """The user's mistake, found while lifting the host code."""
        return CroqSemanticError(msg, node.span if node is not None else None, hint)

    def evaluate(self, e: A.Expr) -> E.Expr:
        """A scalar host expression."""
        v = self.value(e)
        if isinstance(v, Bounded):
            return v.value
        if not isinstance(v, E.Expr):
            raise self.error(f"cannot use {describe(e)} as an integer or scalar value at host level", e)
        return v

    def value(self, e: A.Expr) -> Value:
        """A host expression: a scalar, a shape, an index tuple, a tensor or a view of one."""
        if isinstance(e, A.IntLit):  # its type from its value and suffix (LANGUAGE.md 3.3)
            return const(e.value, ir_of(e.type) or "i32")
        if isinstance(e, A.FloatLit):
            return const(e.value, "f64" if e.double else "f32")
        if isinstance(e, A.BoolLit):
            return const(e.value)
        if isinstance(e, A.Paren):
            return self.value(e.expr)
        if isinstance(e, A.Name):
            if e.name not in self.names:
                raise CroqSemanticError(f"'{e.name}' is not declared", e.span)
            return self.names[e.name]
        if isinstance(e, A.Unary) and e.op == "&" and isinstance(unparen(e.operand), A.At):  # an element's address
            t, index = self.element(unparen(e.operand))  # type: ignore[arg-type]
            return H.ElemGet(t.name, t.host, index, "i64", e.span.line if e.span else 0, address=True)
        if isinstance(e, A.IncDec):
            return self.incdec(e)
        if isinstance(e, A.Builtin) and e.name in HOST_MATH:
            return self.host_math(e)
        if isinstance(e, A.Unary):
            if e.op not in ("-", "!", "~", "+"):
                raise self.error(f"the operator '{e.op}' cannot be lowered in host code", e)
            return unary(e.op, self.evaluate(e.operand))
        if isinstance(e, A.Binary):
            return self.binary_value(e)
        if isinstance(e, A.Ternary):
            c, a, b = self.evaluate(e.cond), self.evaluate(e.then), self.evaluate(e.other)
            if isinstance(c, E.Const):
                return a if c.value else b
            return E.Where(c, a, b)
        if isinstance(e, A.Builtin) and e.name == "cdiv":
            a, b = self.value(e.args[0]), self.value(e.args[1])
            if isinstance(a, (Shape, ITuple)) or isinstance(b, (Shape, ITuple)):  # ``cdiv(d.span, {9, 7})``
                return self.elementwise("cdiv", a, b, e)
            return cdiv(self.evaluate(e.args[0]), self.evaluate(e.args[1]))
        if isinstance(e, A.Builtin) and e.name in ("__alignup", "__aligndown") and len(e.args) == 2:
            x, a = self.evaluate(e.args[0]), self.evaluate(e.args[1])  # to a multiple of the second
            up = binary("-", binary("+", x, a, True), const(1), True)  # C's truncating division, as in kernels
            return binary("*", binary("/", up if e.name == "__alignup" else x, a, True), a, True)
        if isinstance(e, A.Select):  # host level: a choice made when translating
            k = self.evaluate(e.index)
            if not isinstance(k, E.Const):
                raise self.error("a host-level 'select' needs a constant index", e.index)
            if not 0 <= int(k.value) < len(e.options):
                raise self.invalid(f"select index {k.value} is out of range for {len(e.options)} choices", e.index)
            return self.value(e.options[int(k.value)])
        if isinstance(e, A.Cast):  # ``__to<T>(e)`` between launches: Python's int / float / bool
            to = c_scalar(e.type) if e.is_string else e.type
            if to not in HOST_CASTS:
                raise self.error(
                    f"a host-level conversion to '{e.type}' (host code converts to integers, floats and bool)", e
                )
            v = self.evaluate(e.expr)
            dtype = (
                "i1" if to == "bool" else "i64" if to == "s64" else "i32" if to in ("int", "s32") else HOST_CASTS[to]
            )
            if isinstance(v, E.Const):  # a constant: converted here, as C converts it
                return E.Const(carith.convert(v.value, dtype), dtype)
            return E.Cast(v, dtype)
        if isinstance(e, A.At):
            t, index = self.element(e)
            return H.ElemGet(t.name, t.host, index, t.dtype, e.span.line if e.span else 0)
        if isinstance(e, A.Builtin) and e.name in ("__max", "__min"):
            a, b = self.evaluate(e.args[0]), self.evaluate(e.args[1])
            if isinstance(a, E.Const) and isinstance(b, E.Const):
                return const(max(a.value, b.value) if e.name == "__max" else min(a.value, b.value))
            return E.Bin("max" if e.name == "__max" else "min", a, b)
        if isinstance(e, A.MdspanLit):
            return Shape(self.shape(e.items))
        if isinstance(e, A.ItupleLit):  # ``{a, 5}``: an index tuple's items spliced in (LANGUAGE.md 7.1)
            items: list[E.Expr] = []
            for x in e.items:
                v = self.value(x)
                if isinstance(v, ITuple):
                    items.extend(v.items)
                elif isinstance(v, BoundedTuple):
                    items.extend(p.value for p in v.parts)
                else:
                    items.append(self.evaluate(x))
            return ITuple(tuple(items))
        if isinstance(e, A.Member) and e.member == "data":  # a host-level copy's destination
            base = self.value(e.base)
            if isinstance(base, Tensor):
                return base
        if isinstance(e, A.Member) and e.member == "span":
            return Shape(self.dims_of(self.value(e.base), e))
        if isinstance(e, A.GetIth):
            return self.get_ith(e)
        if isinstance(e, A.SizeOf):
            if e.expr is None:
                return const(TYPES[e.elem or "s32"].nbytes)
            v = self.value(e.expr)
            return product(v.dims if isinstance(v, Shape) else self.dims_of(v, e))
        if isinstance(e, A.View):
            return self.view(e)
        if isinstance(e, A.Index):
            base = self.value(e.base)
            if isinstance(base, (Tensor, Reshaped)):  # ``x[(1), (0)]``: derived from the span of x
                base = Shape(self.dims_of(base, e))
            if isinstance(base, Shape):
                return Shape(tuple(self.derived(base.dims, x) for x in e.indices))
        if isinstance(e, A.Derive):
            base = self.value(e.base)
            if isinstance(base, ITuple):
                return ITuple(tuple(self.derived_item(base.items, x) for x in e.items))
        raise self.error(f"cannot evaluate {describe(e)} at host level", e)

    def incdec(self, e: A.IncDec) -> E.Expr:
        """``++x`` / ``x++`` (``--``) of a host scalar (LANGUAGE.md 7.5, C semantics): the launcher
        updates ``x`` where the expression stands; the value is ``x`` after (prefix) or before it."""
        old = self.names.get(e.target)
        if not isinstance(old, E.Var) or not E.is_int(old.type):
            raise self.invalid(f"'{e.op}' updates an integer scalar, and '{e.target}' is not one", e)
        line = e.span.line if e.span else 0
        before: E.Expr = old
        if not e.prefix:  # the value before the update
            self.uid += 1
            before = E.Var(f"_{e.target}_was{self.uid}", old.type)
            self.body.append(H.Let(before.name, old, line=line))
        updated = binary("+" if e.op == "++" else "-", old, const(1), scalar=True)
        self.body.append(H.Assign(old.name, H.CScalar(updated, old.type), line=line))
        return old if e.prefix else before

    def host_math(self, e: A.Builtin) -> E.Expr:
        """A math builtin between launches (``__sqrt(x)``): computed in f32 as in kernels, by the
        launcher (runtime/launch.py ``f32math``)."""
        name, arity = HOST_MATH[e.name]
        if len(e.args) != arity:
            raise self.invalid(f"'{e.name}' takes {arity} argument{'s' if arity > 1 else ''}", e)
        args = tuple(self.evaluate(a) for a in e.args)
        return E.Call(f"_rt.f32math.{name}", args, "f32")

    def binary_value(self, e: A.Binary) -> Value:
        a, b = self.value(e.lhs), self.value(e.rhs)
        if isinstance(a, (Shape, ITuple)) or isinstance(b, (Shape, ITuple)):
            return self.elementwise(e.op, a, b, e)
        a = a.value if isinstance(a, Bounded) else a
        b = b.value if isinstance(b, Bounded) else b
        if not isinstance(a, E.Expr) or not isinstance(b, E.Expr):
            raise self.error("operands must be integers", e)
        return binary(e.op, a, b, scalar=True)

    def elementwise(self, op: str, a: Value, b: Value, node: A.Node) -> Shape | ITuple:
        """Arithmetic of a shape (or an index tuple) with another, or with an integer."""
        if not isinstance(a, Shape) and not isinstance(b, Shape):
            return ITuple(self.pairs(op, a, b, node, "ituple arithmetic needs equal ranks", False))
        return Shape(self.pairs(op, a, b, node, "shape arithmetic needs equal ranks", True))

    def pairs(self, op: str, a: Value, b: Value, node: A.Node, unequal: str, shape: bool) -> tuple[E.Expr, ...]:
        ia, ib = _items(a), _items(b)
        if ia is not None and ib is not None:
            if len(ia) != len(ib):
                raise CroqSemanticError(unequal, node.span)
            return tuple(_apply(op, x, y) for x, y in zip(ia, ib, strict=True))
        if ia is not None:
            bv = _scalar(b, node, shape)
            return tuple(_apply(op, x, bv) for x in ia)
        av = _scalar(a, node, shape)
        return tuple(_apply(op, av, y) for y in ib or ())

    def get_ith(self, e: A.GetIth) -> E.Expr:
        base = self.value(e.base)
        idx = self.evaluate(e.index)
        if not isinstance(idx, E.Const):
            raise self.error("a dimension index must be a constant", e.index)
        if isinstance(base, Shape):
            return pick(base.dims, int(idx.value), e)
        if isinstance(base, ITuple):
            return pick(base.items, int(idx.value), e)
        raise self.error("'x(k)' needs a shape or an ituple", e)

    def derived(self, dims: tuple[E.Expr, ...], x: A.Expr) -> E.Expr:
        """An extent of ``sh[(0), (1) * 2]``: ``(k)`` is extent k of ``sh``."""
        if isinstance(x, A.Paren) and isinstance(x.expr, A.IntLit):
            return pick(dims, x.expr.value, x)
        if isinstance(x, A.Binary):
            return binary(x.op, self.derived(dims, x.lhs), self.derived(dims, x.rhs))
        return self.evaluate(x)

    def derived_item(self, items: tuple[E.Expr, ...], x: A.Expr) -> E.Expr:
        if isinstance(x, A.Paren) and isinstance(x.expr, A.IntLit):
            return pick(items, x.expr.value, x)
        return self.evaluate(x)

    def shape(self, items: list[A.Expr]) -> tuple[E.Expr, ...]:
        """The extents of a shape written as a list of integers, shapes and index tuples."""
        dims: list[E.Expr] = []
        for e in items:
            v = self.value(e)
            if isinstance(v, Shape):
                dims.extend(v.dims)
            elif isinstance(v, ITuple):  # an ituple used as a shape
                dims.extend(v.items)
            elif isinstance(v, E.Expr):
                dims.append(v)
            else:
                raise self.error("a shape extent must be an integer or a shape", e)
        return tuple(dims)

    def dims_of(self, v: Value, node: A.Node) -> tuple[E.Expr, ...]:
        if isinstance(v, (Tensor, Reshaped, Shape)):
            return v.dims
        raise self.invalid(f"{describe(node)} has no shape", node)

    def view(self, e: A.View) -> Reshaped:
        """``t.span_as([...])`` (of a whole tensor, or of such a view) at host level."""
        base = self.value(e.base)
        if not isinstance(base, (Tensor, Reshaped)):
            raise self.error("views at host level must start from a tensor", e.base)
        view = base if isinstance(base, Reshaped) else Reshaped(base, base.dims)
        for op in e.ops:
            if op.kind != "span_as":
                raise self.error(
                    f"host-level '.{op.kind}' views cannot be lowered yet; take the view inside 'parallel'", op
                )
            dims = self.shape(op.args)
            old, new = product(view.dims), product(dims)
            if isinstance(old, E.Const) and isinstance(new, E.Const) and old.value != new.value:
                raise CroqSemanticError(
                    f"span_as: {new.value} elements cannot view {old.value} elements",
                    op.span,
                    "the new shape must have the same number of elements",
                )
            view = Reshaped(view.tensor, dims)
        return view

    def element(self, e: A.At) -> tuple[Tensor, tuple[E.Expr, ...]]:
        """``x.at(i, j)`` of a tensor at host level: the tensor and the index."""
        t = self.value(e.base)
        if not isinstance(t, Tensor):
            raise self.error("host-level element access needs a tensor (not a view)", e.base)
        index: list[E.Expr] = []
        for ix in e.indices:
            v = self.value(ix)
            if isinstance(v, ITuple):
                index.extend(v.items)
                continue
            v = v.value if isinstance(v, Bounded) else v
            if not isinstance(v, E.Expr) or not E.is_int(v.dtype):
                raise self.error("an element index must be an integer", ix)
            index.append(v)
        if len(index) != len(t.dims):
            raise self.invalid(f"'{t.name}' has rank {len(t.dims)}; {len(index)} index(es) given", e)
        return t, tuple(index)

    def print_item(self, arg: A.Expr) -> H.PrintItem:
        """An argument of a host ``print``: a string, a scalar, or an index tuple (``{a, b}``)."""
        if isinstance(arg, A.StringLit):
            return arg.value
        v = self.value(arg)
        if isinstance(v, BoundedTuple):
            v = ITuple(tuple(p.value for p in v.parts))
        if isinstance(v, ITuple):
            return H.Braced(tuple(H.CScalar(x) for x in v.items))
        if isinstance(v, Bounded):
            return H.CScalar(v.value)
        if isinstance(v, E.Expr):
            return H.CScalar(v)
        raise self.error("host-level print takes strings and scalar values", arg)


# the conversions host code makes (Python's int, float, bool): the tile-IR type of each
HOST_CASTS = {
    "int": "i32",
    "s32": "i32",
    "s64": "i64",
    "f32": "f32",
    "f64": "f64",
    "bool": "i1",
    # C's conversions to narrower types: rounded or wrapped (sema/ccast.py)
    "s8": "i8",
    "u8": "u8",
    "s16": "i16",
    "u16": "u16",
    "u32": "u32",
    "u64": "u64",
    "f16": "f16",
    "bf16": "bf16",
}


def _items(v: Value) -> tuple[E.Expr, ...] | None:
    if isinstance(v, Shape):
        return v.dims
    if isinstance(v, ITuple):
        return v.items
    return None


def _scalar(v: Value, node: A.Node, shape: bool) -> E.Expr:
    v = v.value if isinstance(v, Bounded) else v
    if not isinstance(v, E.Expr):
        if shape:
            raise CroqSemanticError(
                "shape arithmetic takes shapes, ituples and integers",
                node.span,
                "for the shape of a tensor or view write 'x.span'",
            )
        raise CroqSemanticError("ituple arithmetic takes ituples and integers", node.span)
    return v
