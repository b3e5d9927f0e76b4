"""Index and value expressions of the tile IR: immutable trees with shapes, folding and bounds.

An expression is a tree of small frozen dataclasses.  Every node knows its element type
(``dtype``: ``"i32"``, ``"i64"``, ``"f32"``, ``"f16"``, ``"bool"`` ...) and its block shape
(``shape``: ``()`` for a scalar, ``(64,)`` for ``tl.arange(0, 64)``, ``(64, 1)`` once lifted to
the rows of a 2-D tile).  Shapes broadcast as in Triton: each dimension is equal or 1.

Integer arithmetic has C semantics (``Bin("/")`` truncates towards zero, like Croqtile's ``/``
and Triton's integer ``//``); ``CDiv`` is ceiling division of non-negative operands.

:func:`fold` rewrites a tree into a canonical form: constants folded (in their type: an integer
wrapped to its width, a float rounded as its type's arithmetic rounds), ``x * 1`` / ``x + 0`` /
``0 * x`` of integers gone (of floats only the IEEE identities: ``x * 1``, ``x - 0.0``,
``x + -0.0``), sums of integer products collected into one polynomial (so ``a * 64 + b - b`` is
``a * 64``, in the order the terms were first written), comparisons decided where the bounds of
both sides decide them.  :func:`same` compares two expressions by meaning: equal canonical forms.
:func:`bounds` gives an interval (``None`` where unbounded) from the ranges of the variables.
Two extents are never compared by their spelling.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from dataclasses import replace as _rebuild
from typing import TypeVar

from ..sema.carith import cdiv
from ..sema.ccast import host_cast, wrap_int

Number = int | float | bool


@dataclass(frozen=True, repr=False)
class Extent:
    """A block extent fixed at launch, not when translating: the ``tl.constexpr`` kernel argument
    ``name`` (a :class:`~.nodes.Constexpr` with a ``size``: the launcher passes the power of two at
    or above that run-time size).  Shapes compare it by name."""

    name: str

    def __repr__(self) -> str:
        return self.name


Dim = int | Extent
Shape = tuple[Dim, ...]

INT_TYPES = ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
ARITH = ("+", "-", "*", "/", "%")
COMPARE = ("<", "<=", ">", ">=", "==", "!=")
LOGIC = ("&", "|")
BITS = ("<<", ">>", "^")  # shifts and exclusive or of integers
BINARY = ARITH + COMPARE + LOGIC + BITS + ("min", "max")


class ShapeError(ValueError):
    """Operands whose block shapes do not broadcast (an internal error of the lifting)."""


def broadcast(*shapes: Shape) -> Shape:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        padded = (1,) * (rank - len(s)) + tuple(s)
        for i, d in enumerate(padded):
            if d != 1 and out[i] not in (1, d):
                raise ShapeError(f"shapes {list(shapes)} do not broadcast")
            if d != 1:
                out[i] = d
    return tuple(out)


def fits_in(shape: Shape, within: Shape) -> bool:
    """Does a tile of ``shape`` broadcast to ``within`` without adding to it?"""
    try:
        return broadcast(within, shape) == within
    except ShapeError:
        return False


def is_int(dtype: str) -> bool:
    return dtype in INT_TYPES


@dataclass(frozen=True)
class Expr:
    """Base class; use the subclasses."""

    @property
    def dtype(self) -> str:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    @property
    def shape(self) -> Shape:  # pragma: no cover
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        return ()

    # builders: fold as they go, so trees built from them are canonical
    def __add__(self, other: Expr | int) -> Expr:
        return fold(Bin("+", self, wrap(other)))

    def __radd__(self, other: int) -> Expr:
        return fold(Bin("+", wrap(other), self))

    def __sub__(self, other: Expr | int) -> Expr:
        return fold(Bin("-", self, wrap(other)))

    def __rsub__(self, other: int) -> Expr:
        return fold(Bin("-", wrap(other), self))

    def __mul__(self, other: Expr | int) -> Expr:
        return fold(Bin("*", self, wrap(other)))

    def __rmul__(self, other: int) -> Expr:
        return fold(Bin("*", wrap(other), self))

    def lt(self, other: Expr | int) -> Expr:
        return fold(Bin("<", self, wrap(other)))

    def walk(self) -> Iterable[Expr]:
        yield self
        for c in self.children():
            yield from c.walk()


@dataclass(frozen=True)
class Const(Expr):
    """A literal of ``type``. Two float constants are equal only with the same sign: ``-0.0`` is
    not ``0.0`` (``x + -0.0`` is ``x``, ``x + 0.0`` is not, for ``x = -0.0``); NaN equals NaN."""

    value: Number
    type: str = "i32"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Const):
            return NotImplemented
        return self.type == other.type and _same_number(self.value, other.value)

    def __hash__(self) -> int:
        return hash((self.type, "nan" if self.value != self.value else self.value))

    @property
    def dtype(self) -> str:
        return self.type

    @property
    def shape(self) -> Shape:
        return ()


@dataclass(frozen=True)
class Var(Expr):
    """A named scalar or tile: a kernel argument, a program id, a loop counter, a let-bound value.

    ``lo`` / ``hi`` are inclusive bounds where known (a program id of a grid of 8: 0 and 7): what
    is known of the variable, not part of its identity (two uses of ``M`` are the same variable
    whether or not one of them carries ``lo = 0``)."""

    name: str
    type: str = "i32"
    lo: int | None = field(default=None, compare=False)
    hi: int | None = field(default=None, compare=False)
    dims: Shape = ()

    @property
    def dtype(self) -> str:
        return self.type

    @property
    def shape(self) -> Shape:
        return self.dims


@dataclass(frozen=True)
class Arange(Expr):
    """``tl.arange(0, n)``: a lane axis of ``n`` (a power of two, or one fixed at launch) elements."""

    n: Dim

    @property
    def dtype(self) -> str:
        return "i32"

    @property
    def shape(self) -> Shape:
        return (self.n,)


@dataclass(frozen=True)
class Lift(Expr):
    """``x[:, None]``-style placement of the dims of ``value`` at ``dims`` of a rank-``rank`` block."""

    value: Expr
    rank: int
    dims: tuple[int, ...]

    @property
    def dtype(self) -> str:
        return self.value.dtype

    @property
    def shape(self) -> Shape:
        out = [1] * self.rank
        for d, n in zip(self.dims, self.value.shape, strict=True):
            out[d] = n
        return tuple(out)

    def children(self) -> tuple[Expr, ...]:
        return (self.value,)


@dataclass(frozen=True)
class Permute(Expr):
    """``tl.permute(value, dims)``: dimension ``k`` of the result is dimension ``dims[k]`` of ``value``."""

    value: Expr
    dims: tuple[int, ...]

    @property
    def dtype(self) -> str:
        return self.value.dtype

    @property
    def shape(self) -> Shape:
        return tuple(self.value.shape[d] for d in self.dims)

    def children(self) -> tuple[Expr, ...]:
        return (self.value,)


@dataclass(frozen=True)
class Reshape(Expr):
    """``tl.reshape(value, dims)``: the same elements in row-major order, of another shape."""

    value: Expr
    dims: Shape

    @property
    def dtype(self) -> str:
        return self.value.dtype

    @property
    def shape(self) -> Shape:
        return self.dims

    def children(self) -> tuple[Expr, ...]:
        return (self.value,)


@dataclass(frozen=True)
class Join(Expr):
    """``tl.join(lhs, rhs)``: the two operands, broadcast to one shape, side by side along a new last
    axis of 2 (element ``[.., 0]`` is ``lhs``'s, ``[.., 1]`` ``rhs``'s); of one type."""

    lhs: Expr
    rhs: Expr

    @property
    def dtype(self) -> str:
        return promote(self.lhs.dtype, self.rhs.dtype)

    @property
    def shape(self) -> Shape:
        return (*broadcast(self.lhs.shape, self.rhs.shape), 2)

    def children(self) -> tuple[Expr, ...]:
        return (self.lhs, self.rhs)


@dataclass(frozen=True)
class Split(Expr):
    """``tl.split(value)[half]``: the elements of ``value`` at ``half`` (0 or 1) of its last axis, of 2
    (the inverse of :class:`Join`)."""

    value: Expr
    half: int

    @property
    def dtype(self) -> str:
        return self.value.dtype

    @property
    def shape(self) -> Shape:
        return tuple(self.value.shape[:-1])

    def children(self) -> tuple[Expr, ...]:
        return (self.value,)


@dataclass(frozen=True)
class Bin(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    def __post_init__(self) -> None:
        if self.op not in BINARY:
            raise ValueError(f"unknown binary operator {self.op!r}")
        # raises ShapeError; kept (not a field: equality and printing ignore it)
        object.__setattr__(self, "_shape", broadcast(self.lhs.shape, self.rhs.shape))

    @property
    def dtype(self) -> str:
        if self.op in COMPARE:
            return "i1"
        return promote(self.lhs.dtype, self.rhs.dtype)

    @property
    def shape(self) -> Shape:
        return self._shape  # type: ignore[attr-defined, no-any-return]

    def children(self) -> tuple[Expr, ...]:
        return (self.lhs, self.rhs)


@dataclass(frozen=True)
class Un(Expr):
    op: str  # "-", "~", "!"
    value: Expr

    @property
    def dtype(self) -> str:
        return "i1" if self.op == "!" else self.value.dtype

    @property
    def shape(self) -> Shape:
        return self.value.shape

    def children(self) -> tuple[Expr, ...]:
        return (self.value,)


@dataclass(frozen=True)
class CDiv(Expr):
    """Ceiling division of non-negative integers (Croqtile's ``cdiv``)."""

    lhs: Expr
    rhs: Expr

    @property
    def dtype(self) -> str:
        return promote(self.lhs.dtype, self.rhs.dtype)

    @property
    def shape(self) -> Shape:
        return broadcast(self.lhs.shape, self.rhs.shape)

    def children(self) -> tuple[Expr, ...]:
        return (self.lhs, self.rhs)


@dataclass(frozen=True)
class Cast(Expr):
    value: Expr
    type: str

    @property
    def dtype(self) -> str:
        return self.type

    @property
    def shape(self) -> Shape:
        return self.value.shape

    def children(self) -> tuple[Expr, ...]:
        return (self.value,)


@dataclass(frozen=True)
class Where(Expr):
    cond: Expr
    then: Expr
    other: Expr

    def __post_init__(self) -> None:
        object.__setattr__(self, "_shape", broadcast(self.cond.shape, self.then.shape, self.other.shape))

    @property
    def dtype(self) -> str:
        return promote(self.then.dtype, self.other.dtype)

    @property
    def shape(self) -> Shape:
        return self._shape  # type: ignore[attr-defined, no-any-return]

    def children(self) -> tuple[Expr, ...]:
        return (self.cond, self.then, self.other)


@dataclass(frozen=True)
class Full(Expr):
    """``tl.full(shape, value, dtype)`` (``tl.zeros`` when the value is 0)."""

    dims: Shape
    value: Number
    type: str

    @property
    def dtype(self) -> str:
        return self.type

    @property
    def shape(self) -> Shape:
        return self.dims


@dataclass(frozen=True)
class Call(Expr):
    """An elementwise math function (``exp``, ``sqrt``, ``maximum`` ...) of its arguments."""

    fn: str
    args: tuple[Expr, ...]
    type: str

    @property
    def dtype(self) -> str:
        return self.type

    @property
    def shape(self) -> Shape:
        return broadcast(*(a.shape for a in self.args))

    def children(self) -> tuple[Expr, ...]:
        return self.args


@dataclass(frozen=True)
class Reduce(Expr):
    """``tl.max(value, axis)`` / ``tl.min`` / ``tl.sum``: ``value`` reduced along ``axis``."""

    op: str  # max, min, sum
    value: Expr
    axis: int
    # a loop's bound over the lanes of a program (lift/loops.py ``lane_range``: the least start or the
    # largest stop of its threads, each thread masked to its own range): any set of lanes gives each
    # lane the same work, so a schedule may widen or split the lanes it reduces
    bound: bool = False

    @property
    def dtype(self) -> str:
        return self.value.dtype

    @property
    def shape(self) -> Shape:
        return tuple(n for d, n in enumerate(self.value.shape) if d != self.axis)

    def children(self) -> tuple[Expr, ...]:
        return (self.value,)


def promote(a: str, b: str) -> str:
    """The type of ``a op b``: floats win over integers, wider over narrower."""
    order = ["i1", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f8e4", "f8e5", "f16", "bf16", "f32", "f64"]
    if a == b:
        return a
    ia = order.index(a) if a in order else len(order)
    ib = order.index(b) if b in order else len(order)
    return a if ia >= ib else b


def _same_number(a: Number, b: Number) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a != a or b != b:  # NaN
            return a != a and b != b
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


# widths of the integer types: constants are kept in their type's range (C's conversions, and the
# two's-complement wrap of an overflow), so a folded constant is always a literal of its type
WIDTHS = {"i8": 8, "u8": 8, "i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64, "u64": 64}


def typed(value: Number, dtype: str) -> Number:
    """``value`` as a constant of ``dtype`` holds it: an integer wrapped to the type's width, a float
    rounded to nearest even in ``f32`` / ``f16`` / ``bf16`` (what C's conversion, or an operation of
    that type, gives)."""
    if isinstance(value, bool):
        return value
    if dtype in WIDTHS and isinstance(value, int):
        return wrap_int(value, WIDTHS[dtype], dtype.startswith("i"))
    if dtype in ("f32", "f16", "bf16"):
        return host_cast(float(value), dtype)
    return value


def wrap(x: Expr | int | float | bool) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Const(x, "i1")
    if isinstance(x, int):
        return Const(x, "i32")
    return Const(float(x), "f32")


# ------------------------------------------------------------------ bounds

Interval = tuple[int | None, int | None]


def bounds(e: Expr) -> Interval:
    """Inclusive integer bounds of ``e`` over every lane and every value of its variables."""
    if isinstance(e, Const):
        return (int(e.value), int(e.value)) if isinstance(e.value, (int, bool)) else (None, None)
    if isinstance(e, Var):
        return (e.lo, e.hi)
    if isinstance(e, Arange):
        return (0, e.n - 1) if isinstance(e.n, int) else (0, None)  # an extent fixed at launch: >= 1
    if isinstance(e, Full) and is_int(e.dtype) and isinstance(e.value, (int, bool)):
        return (int(e.value), int(e.value))
    if isinstance(e, (Lift, Cast, Permute, Reshape, Split)) and is_int(e.dtype):
        return bounds(e.value)
    if isinstance(e, Join) and is_int(e.dtype):
        a, b = bounds(e.lhs), bounds(e.rhs)
        return (_min(a[0], b[0]), _max(a[1], b[1]))
    if isinstance(e, Where):
        a, b = bounds(e.then), bounds(e.other)
        return (_min(a[0], b[0]), _max(a[1], b[1]))
    if isinstance(e, CDiv):
        (alo, ahi), (blo, bhi) = bounds(e.lhs), bounds(e.rhs)
        if alo is not None and alo >= 0 and blo is not None and blo > 0:
            lo = -(-alo // bhi) if bhi is not None else 0
            return (lo, -(-ahi // blo) if ahi is not None else None)
        return (None, None)
    if isinstance(e, Bin) and e.op in COMPARE + LOGIC and e.dtype == "i1":
        return (0, 1)
    if isinstance(e, Un) and e.op == "-" and is_int(e.dtype):
        lo, hi = bounds(e.value)
        return (_neg(hi), _neg(lo))
    if isinstance(e, Bin):
        a, b = bounds(e.lhs), bounds(e.rhs)
        if e.op == "+":
            return (_add(a[0], b[0]), _add(a[1], b[1]))
        if e.op == "-":
            return (_add(a[0], _neg(b[1])), _add(a[1], _neg(b[0])))
        if e.op == "*":
            return _mul(a, b)
        if e.op == "/" and b[0] is not None and b[0] > 0 and a[0] is not None and a[0] >= 0:
            return (a[0] // b[1] if b[1] is not None else 0, a[1] // b[0] if a[1] is not None else None)
        if e.op == "%" and b[1] is not None and b[0] is not None and b[0] > 0 and a[0] is not None and a[0] >= 0:
            return (0, b[1] - 1 if a[1] is None or a[1] >= b[1] - 1 else a[1])
        if e.op == "min":
            return (_min(a[0], b[0]), _min2(a[1], b[1]))
        if e.op == "max":
            return (_max2(a[0], b[0]), _max(a[1], b[1]))
    return (None, None)


def bounds_under(e: Expr, facts: Iterable[Expr]) -> Interval:
    """Bounds of the integer ``e`` where every one of ``facts`` holds (the terms of a mask, the
    conditions of enclosing branches): a fact ``L < R`` (or ``L <= R``, ``L >= R``, ``L > R``) with
    ``e = k * L + rest`` for a positive integer ``k`` bounds ``e`` by ``k`` times the bound of ``L``
    plus the bounds of ``rest``.  ``e = 4 * e0 + 4 * arange + t + 1`` under ``e0 + arange < 2``, ``t``
    in ``[0, 3]``, is at most ``4 * 1 + 3 + 1 = 8``, which :func:`bounds` alone cannot see."""
    lo, hi = bounds(e)
    facts = list(facts)
    for f in facts:
        f = fold(f)
        if not (isinstance(f, Bin) and f.op in ("<", "<=", ">", ">=")):
            continue
        small, large = (f.lhs, f.rhs) if f.op in ("<", "<=") else (f.rhs, f.lhs)
        strict = f.op in ("<", ">")
        for side, top in ((small, True), (large, False)):  # side <= other (- 1) / side >= other (+ 1)
            other = large if top else small
            split = _proportional(e, side)
            if split is None:
                continue
            k, rest = split
            r_lo, r_hi = bounds(rest)
            if top:  # side <= hi(other) - strict
                o_hi = bounds(other)[1]
                if o_hi is not None and r_hi is not None:
                    hi = _min2(hi, k * (o_hi - strict) + r_hi)
            else:  # side >= lo(other) + strict
                o_lo = bounds(other)[0]
                if o_lo is not None and r_lo is not None:
                    lo = _max2(lo, k * (o_lo + strict) + r_lo)
    return lo, hi


def _proportional(e: Expr, part: Expr) -> tuple[int, Expr] | None:
    """``(k, rest)`` with ``e = k * part + rest`` exactly and ``k`` a positive integer chosen so
    that ``rest`` no longer holds ``part``'s first term; None where ``part`` is constant or no such
    ``k`` exists."""
    pe, pp = _poly(fold(e)), _poly(fold(part))
    if pe is None or pp is None:
        return None
    lead = next(((m, c) for m, c in pp.coef.items() if m != () and c != 0), None)
    if lead is None:
        return None
    m, c = lead
    ce = pe.coef.get(m, 0)
    if ce == 0 or ce % c != 0 or ce // c <= 0:
        return None
    k = ce // c
    return k, fold(Bin("-", e, Bin("*", Const(k, part.dtype), part)))


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _neg(a: int | None) -> int | None:
    return None if a is None else -a


def _min(a: int | None, b: int | None) -> int | None:
    """The smaller lower bound (unbounded if either is)."""
    return None if a is None or b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


def _min2(a: int | None, b: int | None) -> int | None:
    """Upper bound of ``min``: either bound holds."""
    if a is None:
        return b
    return a if b is None else min(a, b)


def _max2(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


def _mul(a: Interval, b: Interval) -> Interval:
    if None in a or None in b:
        nonneg = a[0] is not None and a[0] >= 0 and b[0] is not None and b[0] >= 0
        return (a[0] * b[0] if nonneg else None, None)  # type: ignore[operator]
    corners = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]  # type: ignore[operator]
    return (min(corners), max(corners))


def nonneg(e: Expr) -> bool:
    lo = bounds(e)[0]
    return lo is not None and lo >= 0


# ------------------------------------------------------------------ folding


_FOLDED_MAX = 200_000  # entries of each memo below (fold's, _poly's) before it starts afresh


# A polynomial over atoms (expressions that are not + - * of integers: variables, aranges,
# divisions, calls ...): canonical monomials (sorted factor tuples) with integer coefficients, and
# each monomial's factors in the order the user first wrote them (how it is printed back).
class _Poly:
    def __init__(self, coef: dict[tuple[Expr, ...], int] | None = None) -> None:
        self.coef: dict[tuple[Expr, ...], int] = coef or {}
        self.spell: dict[tuple[Expr, ...], tuple[Expr, ...]] = {}

    def add(self, factors: tuple[Expr, ...], c: int) -> None:
        key = _monomial(factors)
        self.coef[key] = self.coef.get(key, 0) + c
        self.spell.setdefault(key, factors)

    def scaled(self, f: Callable[[int], int]) -> _Poly:
        out = _Poly({m: f(c) for m, c in self.coef.items()})
        out.spell = dict(self.spell)
        return out

    def values(self) -> Iterable[int]:
        return self.coef.values()


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_T = TypeVar("_T")
_POLYS: dict[int, tuple[Expr, _Poly | None]] = {}


def _memoised(table: dict[int, tuple[Expr, _T]], e: Expr, make: Callable[[Expr], _T]) -> _T:
    """``make(e)``, remembered for this very tree (by identity: a tree is rebuilt whole, rarely
    edited, and compared structurally only at a price); the table starts afresh when full."""
    hit = table.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    out = make(e)
    if len(table) >= _FOLDED_MAX:
        table.clear()
    table[id(e)] = (e, out)
    return out


def _poly(e: Expr) -> _Poly | None:
    """``e`` as a polynomial over its atoms, or None when it is not an integer expression (the
    result is shared: callers only read it)."""
    return _memoised(_POLYS, e, _make_poly)


def _make_poly(e: Expr) -> _Poly | None:
    if not is_int(e.dtype) or e.dtype == "i1":
        return None
    out = _Poly()
    if isinstance(e, Const):
        out.add((), int(e.value))
        return out
    if isinstance(e, Bin) and e.op in ("+", "-", "*"):
        a, b = _poly(e.lhs), _poly(e.rhs)
        if a is None or b is None:
            return None
        if e.op == "*":
            for ma, ca in a.coef.items():
                for mb, cb in b.coef.items():
                    out.add(a.spell.get(ma, ma) + b.spell.get(mb, mb), ca * cb)
            return out
        sign = 1 if e.op == "+" else -1
        for m, c in a.coef.items():
            out.add(a.spell.get(m, m), c)
        for m, c in b.coef.items():
            out.add(b.spell.get(m, m), sign * c)
        return out
    out.add((e,), 1)
    return out


def _monomial(factors: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """Factors in a canonical order so ``a * b`` and ``b * a`` meet (only to compare)."""
    return tuple(sorted(factors, key=repr))


def _coefficient(c: int, dtype: str) -> int:
    """``c`` as a coefficient of an expression of ``dtype``: unchanged where its magnitude is a
    literal of the type, else reduced modulo 2^bits (the same value in the type's wrapping
    arithmetic: ``v - 2147483647 - 1`` of an s32 ``v`` is ``v + -2147483648``, never a subtraction
    of 2147483648, which is no s32 literal)."""
    bits = WIDTHS.get(dtype)
    if bits is None:
        return c
    signed = dtype.startswith("i")
    top = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    return c if abs(c) <= top else wrap_int(c, bits, signed)


def _from_poly(p: _Poly, dtype: str) -> Expr:
    terms = [(p.spell.get(m, m), _coefficient(c, dtype)) for m, c in p.coef.items() if m != ()]
    const = _coefficient(p.coef.get((), 0), dtype)
    least = -(1 << (WIDTHS[dtype] - 1)) if dtype in WIDTHS and dtype.startswith("i") else None
    out: Expr | None = None
    for m, c in terms:
        if c == 0:
            continue
        term: Expr = m[0]
        for f in m[1:]:
            term = Bin("*", term, f)
        if c == least:  # the type's least value has no positive literal: written as it is, added
            term, c = Bin("*", term, Const(c, dtype)), 1
        mag = abs(c)
        if mag != 1:
            term = Bin("*", term, Const(mag, dtype))
        if out is None:
            out = term if c > 0 else Un("-", term)
        else:
            out = Bin("+" if c > 0 else "-", out, term)
    if out is None:
        return Const(const, dtype)
    if const > 0 or (const < 0 and const == least):
        out = Bin("+", out, Const(const, dtype))
    elif const < 0:
        out = Bin("-", out, Const(-const, dtype))
    return out


# fold is a pure function of its (immutable) argument: its results are remembered by the identity of
# the tree folded, which the memo keeps alive so that an id is never reused while remembered; a
# result is remembered as its own canonical form.  The
# lifting folds the same subtrees again and again (a mask's conjunction is re-folded at every term
# it gains); without the memo that is quadratic in the length of the conjunction.
_FOLDED: dict[int, tuple[Expr, Expr]] = {}


def literal_only(e: Expr) -> bool:
    """Is ``e`` a constant, or arithmetic of constants only?"""
    if isinstance(e, Const):
        return True
    return isinstance(e, (Bin, Un)) and all(literal_only(x) for x in e.children())


def fold(e: Expr) -> Expr:
    """The canonical form of ``e`` (see the module docstring)."""
    if isinstance(e, (Const, Var, Arange, Full)):
        return e
    out = _memoised(_FOLDED, e, _fold)
    _FOLDED.setdefault(id(out), (out, out))  # the canonical form is its own (fold is idempotent)
    return out


def _fold(e: Expr) -> Expr:
    if isinstance(e, Lift):
        return _fold_lift(fold(e.value), e.rank, e.dims)
    if isinstance(e, Permute):
        v = fold(e.value)
        if isinstance(v, Permute):  # composed
            return fold(Permute(v.value, tuple(v.dims[d] for d in e.dims)))
        return v if e.dims == tuple(range(len(e.dims))) else Permute(v, e.dims)
    if isinstance(e, Reshape):
        v = fold(e.value)
        return v if v.shape == e.dims else Reshape(v, e.dims)
    if isinstance(e, Join):
        return Join(fold(e.lhs), fold(e.rhs))
    if isinstance(e, Split):
        v = fold(e.value)
        if isinstance(v, Join) and broadcast(v.lhs.shape, v.rhs.shape) == v.lhs.shape == v.rhs.shape:
            return v.lhs if e.half == 0 else v.rhs  # (a half of a join of one shape: that operand)
        return Split(v, e.half)
    if isinstance(e, Cast):
        v = fold(e.value)
        if v.dtype == e.type:
            return v
        if isinstance(v, Const) and is_int(e.type) and e.type != "i1" and isinstance(v.value, (int, bool)):
            return Const(typed(int(v.value), e.type), e.type)
        return Cast(v, e.type)
    if isinstance(e, Un):
        v = fold(e.value)
        if isinstance(v, Const) and e.op == "-" and not isinstance(v.value, bool):
            return Const(typed(-v.value, v.type), v.type)  # a float's sign flipped: -(0.0) is -0.0
        if isinstance(v, Const) and e.op == "!":
            return Const(not v.value, "i1")
        if e.op == "-" and isinstance(v, Un) and v.op == "-":  # -(-x) is x, a float's sign bit too
            return v.value
        if e.op == "-" and is_int(v.dtype):
            p = _poly(v)
            if p is not None:
                return _from_poly(p.scaled(lambda c: -c), v.dtype)
        return Un(e.op, v)
    if isinstance(e, Where):
        c, a, b = fold(e.cond), fold(e.then), fold(e.other)
        # (a branch taken for all is the value only where it has the select's shape: ``where(hit, 0, 0)``
        # of a tile ``hit`` is a tile of zeros, not the scalar 0)
        full = broadcast(c.shape, a.shape, b.shape)
        if isinstance(c, Const) and (a if c.value else b).shape == full:
            return a if c.value else b
        if same(a, b) and a.shape == full:
            return a
        return Where(c, a, b)
    if isinstance(e, CDiv):
        return _fold_cdiv(fold(e.lhs), fold(e.rhs))
    if isinstance(e, Call):
        return Call(e.fn, tuple(fold(a) for a in e.args), e.type)
    if isinstance(e, Reduce):
        return Reduce(e.op, fold(e.value), e.axis, e.bound)
    assert isinstance(e, Bin), e
    a, b = fold(e.lhs), fold(e.rhs)
    if e.op in ("+", "-", "*") and is_int(a.dtype) and is_int(b.dtype) and "i1" not in (a.dtype, b.dtype):
        p = _poly(Bin(e.op, a, b))
        assert p is not None
        return _from_poly(p, promote(a.dtype, b.dtype))
    if e.op in ("+", "-", "*"):
        return _fold_float(e.op, a, b)
    if e.op in ("/", "%"):
        return _fold_div(e.op, a, b)
    if e.op in COMPARE:
        return _fold_compare(e.op, a, b)
    if e.op in LOGIC and not _integers(a, b):
        return _fold_logic(e.op, a, b)
    if e.op in BITS + LOGIC:
        return _fold_bits(e.op, a, b)
    return _fold_minmax(e.op, a, b)


def _fold_lift(v: Expr, rank: int, dims: tuple[int, ...]) -> Expr:
    """Lifts sit on the leaves (aranges, named tiles), so ``(p * 64 + arange)[:, None]`` and
    ``p * 64 + arange[:, None]`` have one canonical form; scalars need no lift."""
    if v.shape == ():
        return v
    if dims == tuple(range(rank)):
        return v
    if isinstance(v, Lift):  # a lift of a lift: compose the placements
        return _fold_lift(v.value, rank, tuple(dims[d] for d in v.dims))
    if isinstance(v, Bin):
        return fold(Bin(v.op, _lift_operand(v.lhs, v.shape, rank, dims), _lift_operand(v.rhs, v.shape, rank, dims)))
    if isinstance(v, Un):
        return fold(Un(v.op, _fold_lift(v.value, rank, dims)))
    if isinstance(v, Cast):
        return fold(Cast(_fold_lift(v.value, rank, dims), v.type))
    return Lift(v, rank, dims)


def _lift_operand(x: Expr, full: Shape, rank: int, dims: tuple[int, ...]) -> Expr:
    if x.shape == ():
        return x
    if len(x.shape) != len(full):
        raise ShapeError(f"cannot lift an operand of shape {x.shape} within {full}")
    return _fold_lift(x, rank, dims)


def _fold_float(op: str, a: Expr, b: Expr) -> Expr:
    """``+ - *`` where an operand is a float: constants computed in the result's type (f32
    arithmetic rounds each step: ``16777216.0f + 1.0f`` is 16777216), and the identities IEEE
    arithmetic has: ``x * 1``, ``1 * x``, ``x - 0.0`` and ``x + -0.0`` are ``x``.  ``x + 0.0`` is
    not (``-0.0 + 0.0`` is ``+0.0``), nor is ``0 * x`` (NaN, an infinity, or ``-0.0``)."""
    t = promote(a.dtype, b.dtype)
    if isinstance(a, Const) and isinstance(b, Const):
        x, y = typed(a.value, t), typed(b.value, t)
        value = {"+": x + y, "-": x - y, "*": x * y}[op]
        return Const(typed(value, t), t)
    keep = None
    if op == "*" and isinstance(b, Const) and b.value == 1:
        keep = a
    elif op == "*" and isinstance(a, Const) and a.value == 1:
        keep = b
    elif isinstance(b, Const) and op in ("+", "-") and _zero(b, negative=op == "+"):
        keep = a
    elif op == "+" and isinstance(a, Const) and _zero(a, negative=True):
        keep = b
    if keep is not None and keep.dtype == t:  # (an integer plus 0.0 is a float)
        return keep
    return Bin(op, a, b)


def _zero(c: Const, negative: bool) -> bool:
    """Is ``c`` ``-0.0`` (``negative``: the zero that leaves every float unchanged when added), or
    ``+0.0`` (the one that does when subtracted)? An integer 0 is ``+0.0`` in float arithmetic."""
    return c.value == 0 and (math.copysign(1.0, float(c.value)) < 0) == negative


def _fold_div(op: str, a: Expr, b: Expr) -> Expr:
    if isinstance(b, Const) and isinstance(b.value, int) and b.value != 0 and is_int(a.dtype):
        d = b.value
        if isinstance(a, Const) and isinstance(a.value, int):
            q = _c_div(a.value, d)
            t = promote(a.type, b.type)
            return Const(typed(q if op == "/" else a.value - d * q, t), t)
        if op == "/" and d == 1:
            return a
        if op == "%" and abs(d) == 1:
            return Const(0, a.dtype)
        p = _poly(a)
        if p is not None and d > 0 and nonneg(a) and all(c % d == 0 for c in p.values()):
            # (64 * x + 128) / 64 == x + 2 and (64 * x) % 64 == 0 for non-negative terms
            if op == "%":
                return Const(0, a.dtype)
            return _from_poly(p.scaled(lambda c: c // d), a.dtype)
        lo, hi = bounds(a)
        if lo is not None and hi is not None and d > 0 and lo >= 0 and hi < d:
            return Const(0, a.dtype) if op == "/" else a
    return Bin(op, a, b)


def _fold_cdiv(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and isinstance(b, Const):
        t = promote(a.type, b.type)
        return Const(typed(cdiv(int(a.value), int(b.value)), t), t)  # C's (a + b - 1) / b
    if isinstance(b, Const) and b.value == 1:
        return a
    p = _poly(a)
    divisible = isinstance(b, Const) and isinstance(b.value, int) and b.value > 0 and p is not None and nonneg(a)
    if divisible and all(c % b.value == 0 for c in p.values()):  # type: ignore[union-attr, operator]
        return _from_poly(p.scaled(lambda c: c // b.value), a.dtype)  # type: ignore[union-attr, operator]
    return CDiv(a, b)


def _fold_compare(op: str, a: Expr, b: Expr) -> Expr:
    if is_int(a.dtype) and is_int(b.dtype):
        diff = fold(Bin("-", a, b)) if "i1" not in (a.dtype, b.dtype) else None
        if diff is not None:
            lo, hi = bounds(diff)
            verdict = _decide(op, lo, hi)
            if verdict is not None:
                return Const(verdict, "i1")
    elif isinstance(a, Const) and isinstance(b, Const):
        return Const(_compare(op, a.value, b.value), "i1")
    return Bin(op, a, b)


def _compare(op: str, a: Number, b: Number) -> bool:
    table: dict[str, Callable[[Number, Number], bool]] = {
        "<": lambda x, y: x < y,
        "<=": lambda x, y: x <= y,
        ">": lambda x, y: x > y,
        ">=": lambda x, y: x >= y,
        "==": lambda x, y: x == y,
        "!=": lambda x, y: x != y,
    }
    return table[op](a, b)


def _decide(op: str, lo: int | None, hi: int | None) -> bool | None:
    """The truth of ``d op 0`` for every ``d`` in [lo, hi], where the interval decides it."""
    if op == "<":
        return True if hi is not None and hi < 0 else False if lo is not None and lo >= 0 else None
    if op == "<=":
        return True if hi is not None and hi <= 0 else False if lo is not None and lo > 0 else None
    if op == ">":
        return True if lo is not None and lo > 0 else False if hi is not None and hi <= 0 else None
    if op == ">=":
        return True if lo is not None and lo >= 0 else False if hi is not None and hi < 0 else None
    if op == "==":
        if lo is not None and lo == hi == 0:
            return True
        return False if (lo is not None and lo > 0) or (hi is not None and hi < 0) else None
    if lo is not None and lo == hi == 0:
        return False
    return True if (lo is not None and lo > 0) or (hi is not None and hi < 0) else None


def _fold_logic(op: str, a: Expr, b: Expr) -> Expr:
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Const):
            if op == "&":
                return _broadcast_const(y, x) if not x.value else y
            return _broadcast_const(y, x) if x.value else y
    if same(a, b):
        return a
    return Bin(op, a, b)


def _integers(a: Expr, b: Expr) -> bool:
    """Are ``a`` and ``b`` integers, not conditions (``x & 255`` is bitwise; ``c & (i < n)`` logic)?"""
    if any(isinstance(x, Const) and isinstance(x.value, bool) for x in (a, b)):
        return False
    return is_int(a.dtype) and is_int(b.dtype) and "i1" not in (a.dtype, b.dtype)


def _fold_bits(op: str, a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and isinstance(b, Const) and isinstance(a.value, int) and isinstance(b.value, int):
        x, y = int(a.value), int(b.value)
        if op in ("^", "&", "|") or y >= 0:
            ops = {"^": x ^ y, "&": x & y, "|": x | y}
            value = ops[op] if op in ops else x << y if op == "<<" else x >> y
            t = promote(a.type, b.type)
            return Const(typed(value, t), t)
    return Bin(op, a, b)


def _broadcast_const(other: Expr, c: Const) -> Expr:
    # ``False & mask`` is False for every lane: keep the mask's shape so a load still gets a block
    return c if other.shape == () else Full(other.shape, bool(c.value), "i1")


def _fold_minmax(op: str, a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and isinstance(b, Const):
        if a.value != a.value or b.value != b.value:  # fminf / fmaxf: a NaN operand loses
            return Const(b.value if a.value != a.value else a.value, promote(a.type, b.type))
        return Const(min(a.value, b.value) if op == "min" else max(a.value, b.value), promote(a.type, b.type))
    if same(a, b):
        return a
    if is_int(a.dtype) and is_int(b.dtype):
        lo, hi = bounds(fold(Bin("-", a, b)))
        if hi is not None and hi <= 0:
            return a if op == "min" else b
        if lo is not None and lo >= 0:
            return b if op == "min" else a
    return Bin(op, a, b)


def same(a: Expr, b: Expr) -> bool:
    """Whether two expressions have the same value for every value of their variables (as far as
    the canonical form shows: ``same`` never says True wrongly; it may miss an identity)."""
    fa, fb = fold(a), fold(b)
    if fa == fb:
        return True
    if fa.shape != fb.shape:  # tiles of different shapes (a scalar equal to a tile's elements is not the tile)
        return False
    if is_int(fa.dtype) and is_int(fb.dtype) and "i1" not in (fa.dtype, fb.dtype):
        diff = fold(Bin("-", fa, fb))
        return isinstance(diff, Const) and diff.value == 0
    return False


def replace(e: Expr, old: Expr, new: Expr) -> Expr:
    """``e`` with every subtree equal to ``old`` (the same tree) replaced by ``new``."""
    if e == old:
        return new
    changes: dict[str, object] = {}
    for f in fields(e):  # type: ignore[arg-type]
        v = getattr(e, f.name)
        if isinstance(v, Expr):
            nv = replace(v, old, new)
            if nv is not v:
                changes[f.name] = nv
        elif isinstance(v, tuple) and v and all(isinstance(x, Expr) for x in v):
            nt = tuple(replace(x, old, new) for x in v)
            if any(a is not b for a, b in zip(nt, v, strict=True)):
                changes[f.name] = nt
    return _rebuild(e, **changes) if changes else e  # type: ignore[type-var]


def replace_same(e: Expr, old: Expr, new: Expr) -> Expr:
    """``e`` with each subexpression of ``old``'s kind that computes the same value (``same``) replaced by
    ``new``, through sums, unary operators, ``cdiv`` and casts (``replace`` matches the same tree only)."""
    if type(e) is type(old) and same(e, old):
        return new
    if isinstance(e, Bin):
        return Bin(e.op, replace_same(e.lhs, old, new), replace_same(e.rhs, old, new))
    if isinstance(e, Un):
        return Un(e.op, replace_same(e.value, old, new))
    if isinstance(e, CDiv):
        return CDiv(replace_same(e.lhs, old, new), replace_same(e.rhs, old, new))
    if isinstance(e, Cast):
        return Cast(replace_same(e.value, old, new), e.type)
    return e


def extreme(e: Expr, lanes: dict[str, Var], largest: bool) -> Expr | None:
    """The largest (or smallest) value of ``e`` over the lanes named in ``lanes``, as an expression
    of the other variables; None unless ``e`` is affine in each lane with a constant coefficient
    (``p * 1024 + t`` is largest at ``t = 1023``)."""
    p = _poly(e)
    if p is None:
        return None
    env: dict[str, Expr] = {}
    for m, c in p.coef.items():
        in_lanes = [f for f in m if isinstance(f, Var) and f.name in lanes]
        if not in_lanes:
            if any(f.shape for f in m):
                return None  # a tile that is no lane
            continue
        if len(m) != 1:
            return None  # a lane times something else: not affine with a constant coefficient
        lane = lanes[in_lanes[0].name]
        if lane.lo is None or lane.hi is None:
            return None
        env[lane.name] = Const(lane.hi if (c > 0) == largest else lane.lo)
    return substitute(e, env)


def conjuncts(e: Expr) -> list[Expr]:
    """The terms of ``a & b & ...`` (a mask), in order."""
    if isinstance(e, Bin) and e.op == "&":
        return conjuncts(e.lhs) + conjuncts(e.rhs)
    return [e]


def is_lane(e: Expr) -> bool:
    """``tl.arange(0, n)``, alone or lifted onto an axis of a block: the value of a lane axis."""
    return isinstance(e, Arange) or (isinstance(e, Lift) and isinstance(e.value, Arange))


def free_vars(e: Expr) -> list[Var]:
    """The variables of ``e``, each once, in first-seen order."""
    seen: dict[str, Var] = {}
    for n in e.walk():
        if isinstance(n, Var) and n.name not in seen:
            seen[n.name] = n
    return list(seen.values())


def names(e: Expr | None) -> set[str]:
    """The names of the variables ``e`` reads (none where ``e`` is None)."""
    return {v.name for v in free_vars(e)} if e is not None else set()


def substitute(e: Expr, env: dict[str, Expr]) -> Expr:
    """``e`` with the named variables replaced (and folded)."""
    return fold(_subst(e, env))


def resolve(e: Expr, values: dict[str, Expr], rounds: int = 16) -> Expr:
    """``e`` with the names ``values`` defines put in, and the names their values read, up to
    ``rounds`` deep (the lets of a kernel: ``offs = b * 32 + t`` read through ``offs``)."""
    for _ in range(rounds):
        names = {v.name for v in free_vars(e)} & values.keys()
        if not names:
            return e
        e = substitute(e, {n: values[n] for n in names})
    return e


def _subst(e: Expr, env: dict[str, Expr]) -> Expr:
    if isinstance(e, Var):
        return env.get(e.name, e)
    if isinstance(e, Lift):
        return Lift(_subst(e.value, env), e.rank, e.dims)
    if isinstance(e, Permute):
        return Permute(_subst(e.value, env), e.dims)
    if isinstance(e, Reshape):
        return Reshape(_subst(e.value, env), e.dims)
    if isinstance(e, Join):
        return Join(_subst(e.lhs, env), _subst(e.rhs, env))
    if isinstance(e, Split):
        return Split(_subst(e.value, env), e.half)
    if isinstance(e, Bin):
        return Bin(e.op, _subst(e.lhs, env), _subst(e.rhs, env))
    if isinstance(e, Un):
        return Un(e.op, _subst(e.value, env))
    if isinstance(e, CDiv):
        return CDiv(_subst(e.lhs, env), _subst(e.rhs, env))
    if isinstance(e, Cast):
        return Cast(_subst(e.value, env), e.type)
    if isinstance(e, Where):
        return Where(_subst(e.cond, env), _subst(e.then, env), _subst(e.other, env))
    if isinstance(e, Call):
        return Call(e.fn, tuple(_subst(a, env) for a in e.args), e.type)
    if isinstance(e, Reduce):
        return Reduce(e.op, _subst(e.value, env), e.axis, e.bound)
    return e


def map_children(e: Expr, f: Callable[[Expr], Expr]) -> Expr:
    """``e`` with ``f`` applied to each of its operands (a leaf: ``e`` itself), not folded."""
    if isinstance(e, Lift):
        return Lift(f(e.value), e.rank, e.dims)
    if isinstance(e, Permute):
        return Permute(f(e.value), e.dims)
    if isinstance(e, Reshape):
        return Reshape(f(e.value), e.dims)
    if isinstance(e, Join):
        return Join(f(e.lhs), f(e.rhs))
    if isinstance(e, Split):
        return Split(f(e.value), e.half)
    if isinstance(e, Bin):
        return Bin(e.op, f(e.lhs), f(e.rhs))
    if isinstance(e, Un):
        return Un(e.op, f(e.value))
    if isinstance(e, CDiv):
        return CDiv(f(e.lhs), f(e.rhs))
    if isinstance(e, Cast):
        return Cast(f(e.value), e.type)
    if isinstance(e, Where):
        return Where(f(e.cond), f(e.then), f(e.other))
    if isinstance(e, Call):
        return Call(e.fn, tuple(f(a) for a in e.args), e.type)
    if isinstance(e, Reduce):
        return Reduce(e.op, f(e.value), e.axis, e.bound)
    return e


def conj(parts: Iterable[Expr]) -> Expr:
    """``p0 & p1 & ...`` folded: terms that always hold are gone, a repeated term appears once."""
    out: Expr = Const(True, "i1")
    kept: list[Expr] = []
    for p in parts:
        p = fold(p)
        if any(same(p, k) for k in kept):
            continue
        kept.append(p)
        out = fold(Bin("&", out, p))
    return out


def linear(e: Expr, names: Iterable[str]) -> tuple[dict[str, int], Expr] | None:
    """``e`` as ``sum(c_v * v) + rest`` over the named variables, with integer coefficients and
    ``rest`` free of them; None when ``e`` is not affine in them (``v * w``, ``v / 4``, a float)."""
    terms = linear_terms(e, names)
    if terms is None:
        return None
    coefs: dict[str, int] = {}
    for name, c in terms[0].items():
        if not (isinstance(c, Const) and isinstance(c.value, int)):
            return None  # a coefficient that is an expression of the other variables
        if c.value:
            coefs[name] = int(c.value)
    return coefs, terms[1]


def linear_terms(e: Expr, names: Iterable[str]) -> tuple[dict[str, Expr], Expr] | None:
    """Like :func:`linear`, with coefficients that may be expressions of the other variables
    (``w + it * num_sms``: ``{w: 1, it: num_sms}``); None when a named variable appears other
    than as one factor of a term."""
    wanted = set(names)
    p = _poly(fold(e))
    if p is None:
        return None
    coefs: dict[str, Expr] = {}
    rest = _Poly()
    for m, c in p.coef.items():
        spelled = p.spell.get(m, m)
        hits = [f for f in spelled if isinstance(f, Var) and f.name in wanted]
        others = [f for f in spelled if not (isinstance(f, Var) and f.name in wanted)]
        if any(v.name in wanted for f in others for v in free_vars(f)) or len(hits) > 1:
            return None
        if not hits:
            rest.add(spelled, c)
            continue
        coef: Expr = Const(c, e.dtype)
        for f in others:
            coef = Bin("*", coef, f)
        name = hits[0].name
        coefs[name] = fold(Bin("+", coefs[name], coef)) if name in coefs else fold(coef)
    return coefs, _from_poly(rest, e.dtype)
