"""The symbolic values of the contraction analysis (lift/contraction.py): tensor elements, views,
buffers, accumulators as sums of products, stores."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..frontend import ast as A
from ..frontend.ast import unparen as unparen
from ..tir import expr as E
from ..tir.contract import ACC as ACC
from .notlifted import NotLifted


@dataclass(frozen=True)
class Bounded:
    value: E.Expr
    bound: E.Expr


Limits = tuple[tuple[int, E.Expr, E.Expr], ...]  # (tensor dimension, lo, hi): lo <= index < hi


@dataclass(frozen=True)
class Elem:
    """Element ``index`` of global tensor ``tensor``; ``limits``: the run-time extents of the views
    it was read through (``view(rows, K).from(off, 0)``): outside them it reads as zero and a write
    is dropped (LANGUAGE.md 14.3). ``zfill``: the source states that a read outside the tensor is
    zero (a ``.zfill`` copy) or makes none (a guard keeps the read inside); otherwise such a read
    relies on the out-of-bounds fill, and the OOB sanitizer makes it NaN."""

    tensor: str
    index: tuple[E.Expr, ...]
    limits: Limits = ()
    zfill: bool = False

    def mapped(self, f: Callable[[E.Expr], E.Expr]) -> Elem:
        limits = tuple((d, f(lo), f(hi)) for d, lo, hi in self.limits)
        return Elem(self.tensor, tuple(f(i) for i in self.index), limits, self.zfill)


@dataclass(frozen=True)
class Region:
    """A view of a global tensor: child dimension ``c`` runs along tensor dimension ``axes[c]``
    from ``origin`` (per tensor dimension), with ``shape[c]`` elements; ``limits`` and ``zfill`` as
    :class:`Elem`'s.  ``steps`` (a view with explicit strides, LANGUAGE.md 7.6): per child dimension
    the elements of the tensor dimension one step of it moves (None: one each)."""

    tensor: str
    origin: tuple[E.Expr, ...]
    axes: tuple[int, ...]
    shape: tuple[E.Expr, ...]
    limits: Limits = ()
    zfill: bool = False
    # ``.span_as([..])`` of another region (lift/buffers.py): ``origin``, ``axes`` and ``limits`` are
    # then coordinates of its new extents, whose row-major position is that of the parent's elements
    reshaped: Reshaped | None = None
    steps: tuple[E.Expr, ...] | None = None

    def step(self, c: int) -> E.Expr:
        return self.steps[c] if self.steps is not None else E.Const(1)

    def at(self, c: int, i: E.Expr) -> E.Expr:
        """``i`` elements along child dimension ``c``, in elements of its tensor dimension."""
        return i if self.steps is None else E.fold(E.Bin("*", i, self.steps[c]))

    def elem(self, idx: tuple[E.Expr, ...]) -> Elem:
        if self.reshaped is not None:  # only the kernel lifter makes them (it maps the index itself)
            raise NotLifted("an element of a span_as view in a contraction")
        index = list(self.origin)
        for c, i in enumerate(idx):
            index[self.axes[c]] = E.fold(index[self.axes[c]] + self.at(c, i))
        return Elem(self.tensor, tuple(index), self.limits, self.zfill)

    def sub(self, offsets: list[E.Expr], shape: list[E.Expr], keep: list[bool]) -> Region:
        origin = list(self.origin)
        for c, off in enumerate(offsets):
            origin[self.axes[c]] = E.fold(origin[self.axes[c]] + self.at(c, off))
        axes = tuple(a for a, k in zip(self.axes, keep, strict=True) if k)
        shape_kept = tuple(s for s, k in zip(shape, keep, strict=True) if k)
        steps = None if self.steps is None else tuple(s for s, k in zip(self.steps, keep, strict=True) if k)
        return Region(self.tensor, tuple(origin), axes, shape_kept, self.limits, self.zfill, self.reshaped, steps)

    def whole(self) -> Region:
        """The region taken whole (copied, stored, an MMA operand): the elements it moves are exactly
        those of its extents, so a limit that is its own extent along a dimension (the window of
        ``.view(64, 32).from(r, k)`` copied into a 64 x 32 buffer) bounds none of them."""
        if self.reshaped is not None or self.steps is not None:
            return self
        kept = []
        for d, lo, hi in self.limits:
            cs = [c for c, a in enumerate(self.axes) if a == d]
            if (
                len(cs) == 1
                and E.same(E.fold(lo), E.fold(self.origin[d]))
                and E.same(E.fold(hi), E.fold(self.origin[d] + self.shape[cs[0]]))
            ):
                continue
            kept.append((d, lo, hi))
        return Region(self.tensor, self.origin, self.axes, self.shape, tuple(kept), self.zfill)

    def window(self, offsets: list[E.Expr], shape: list[E.Expr]) -> Region:
        """``.view(shape).from(offsets)``: a sub-region whose extents are also limits."""
        if self.steps is not None:
            raise NotLifted("a '.view(..).from(..)' of a view with explicit strides")
        r = self.sub(offsets, shape, [True] * len(shape))
        new = tuple((r.axes[c], r.origin[r.axes[c]], E.fold(r.origin[r.axes[c]] + n)) for c, n in enumerate(shape))
        return Region(r.tensor, r.origin, r.axes, r.shape, self.limits + new, self.zfill, self.reshaped)


@dataclass(frozen=True)
class Reshaped:
    """``parent.span_as([..])``: the elements of ``parent`` in row-major order, as a tensor of
    ``extents`` (LANGUAGE.md 7.6)."""

    parent: Region
    extents: tuple[E.Expr, ...]


@dataclass(frozen=True)
class Term:
    """``sum over sums of a * b``, for the accumulator elements whose coordinates equal ``conds``
    (pending element-wise updates; empty once the element loops are closed)."""

    sums: tuple[tuple[E.Var, E.Expr], ...]
    a: Elem
    b: Elem
    conds: tuple[tuple[int, E.Expr], ...] = ()
    scales: tuple[Elem, ...] = ()  # factors of each product (a block-scaled MMA: ``mma.row.row.scale``)


@dataclass
class Cells:
    """An accumulator: a scalar, a local array or an MMA fragment. Element ``coords`` is the sum
    of ``terms`` (written in the coordinate variables); ``zero``: initialised to 0."""

    elem: str
    shape: tuple[int, ...]
    coords: tuple[E.Var, ...]
    terms: list[Term] = field(default_factory=list)
    zero: bool = False
    line: int = 0
    guard: tuple[E.Expr, ...] = ()  # the conditions it was declared under (its updates may not add any)
    # what an element holds as a function of the sum of its terms (the leaf ``ACC``): a value it
    # started from (``f32 acc = c.at(m, n)``, ``mc = mma.load C..``), operations on it after the sum
    # (``mc += bias``); None: the sum itself
    post: EpiValue | None = None
    transformed: bool = False  # an operation after the sum: no product may be added any more
    depth: int = 0  # how many loops were open where it was declared
    scale_mark: int = 0  # the first term a split ``mma.scale`` would scale


@dataclass(frozen=True)
class AccRead:
    """An accumulator element read (what a store writes)."""

    cells: Cells
    idx: tuple[E.Expr, ...]


@dataclass(frozen=True)
class Prod:
    a: Elem
    b: Elem
    scales: tuple[
        Elem, ...
    ] = ()  # more factors (``a.at(m, k) * rs.at(m) * b.at(n, k)``): lift/proof.py picks the operands


@dataclass(frozen=True)
class Placed:
    """An accumulator stored (``mma.store``) into a buffer at an offset."""

    cells: Cells
    offsets: tuple[E.Expr, ...]
    spatial: tuple[tuple[E.Var, E.Expr], ...]  # the parallel indices of the units that stored it
    transp: bool = False  # stored transposed (``mma.store.transp``)
    pins: tuple[tuple[str, E.Expr], ...] = ()  # the unit indices fixed where it was stored (Store.pins)
    terms: int = -1  # how many terms its sum had when it was stored (later ones are not in the buffer)


@dataclass(frozen=True)
class Written:
    """A value of an accumulator element written into one element of a buffer (``so.at(tm, tn) = s``)
    by the units at ``spatial`` under ``guard``."""

    index: tuple[E.Expr, ...]
    value: AccRead
    epi: EpiValue | None
    spatial: tuple[tuple[E.Var, E.Expr], ...]
    guard: tuple[E.Expr, ...]


@dataclass
class Buffer:
    """A shared or local buffer (or one slot of an array of them): what was last copied in."""

    elem: str
    shape: tuple[E.Expr, ...]
    content: Region | list[Placed | Written] | None = None
    guard: tuple[E.Expr, ...] = ()  # the conditions of its last write: reads must be under them


@dataclass
class BufferArray:
    elem: str
    shape: tuple[E.Expr, ...]
    slots: list[tuple[E.Expr, Buffer]] = field(default_factory=list)

    def slot(self, index: E.Expr) -> Buffer:
        for key, buf in self.slots:
            if E.same(key, index):
                return buf
        buf = Buffer(self.elem, self.shape)
        self.slots.append((index, buf))
        return buf


@dataclass
class Future:
    buffer: Buffer


@dataclass(frozen=True)
class View:
    """A named view of a buffer: ``base`` with an offset and shape in the buffer's coordinates."""

    base: Buffer
    offsets: tuple[E.Expr, ...]
    shape: tuple[E.Expr, ...]
    keep: tuple[bool, ...]


@dataclass(frozen=True)
class WithName:
    """A name bounded by ``with k in [n]``: only a ``foreach k`` gives it values."""

    extent: E.Expr


@dataclass(frozen=True)
class ShapeName:
    """A name of a shape (``tiles : [32, b];``, LANGUAGE.md 7.1): its extents."""

    extents: tuple[E.Expr, ...]


@dataclass(frozen=True)
class IndexTuple:
    """One name over a shape of several dimensions (``with index in [3, b]``, ``foreach i in
    a.span``, LANGUAGE.md 7.4): the names of its parts, in order; as an index or a view's argument
    it stands for them (``x.at(i)`` is ``x.at(i_0, i_1)``), ``i(k)`` is part ``k``."""

    parts: tuple[str, ...]


@dataclass(frozen=True)
class Scalar:
    """A named float value (``g = acc.at(i, j) + bias.at(j);``): what it was when named, of at
    most one accumulator element (``acc``); an epilogue may use it."""

    value: EpiValue
    acc: AccRead | None = None
    stored: tuple[tuple[Store, tuple[E.Expr, ...]], ...] = ()  # stores it read back (lift/epilogue.py)


@dataclass(frozen=True)
class Loaded:
    """``x = mma.load`` of a tile of a global tensor: an operand, or an accumulator starting there."""

    tile: Region
    cells: Cells


@dataclass
class LoopFrame:
    """Buffers written in the current iteration of a loop, and those read before being written;
    ``counters``: the names of the loop's counter variables."""

    written: set[int] = field(default_factory=set)
    stale: set[int] = field(default_factory=set)
    counters: frozenset[str] = frozenset()
    # buffers that carry a value from one iteration into the next, which an induction over the
    # counter proves (slots of a ring refilled as deep as it is: Interpreter.carrying_slots)
    induced: frozenset[int] = frozenset()
    # buffers read as an accumulator before being written (Moves.kept_acc): the buffer and what it
    # held then, which it must hold again when the iteration ends
    kept: dict[int, tuple[Buffer, Placed]] = field(default_factory=dict)


@dataclass(frozen=True)
class EpiValue:
    """An element-wise function of one accumulator element (the leaf variable ``ACC``, the sum of
    its products), of tensor elements (leaf variables named in ``reads``) and of scalar parameters
    (variables named as the parameter; ``scalars``: their element types)."""

    expr: E.Expr
    ctype: str
    reads: tuple[tuple[str, Elem], ...] = ()
    scalars: tuple[tuple[str, str], ...] = ()

    @property
    def plain(self) -> bool:
        """The sum itself (no epilogue)."""
        return isinstance(self.expr, E.Var) and self.expr.name == ACC and not self.reads

    def subst_reads(self, env: dict[str, E.Expr]) -> EpiValue:
        reads = tuple((n, subst_elem(x, env)) for n, x in self.reads)
        return EpiValue(self.expr, self.ctype, reads, self.scalars)


@dataclass(frozen=True)
class Store:
    tensor: str
    index: tuple[E.Expr, ...]
    value: AccRead
    guard: tuple[E.Expr, ...]
    spatial: tuple[tuple[E.Var, E.Expr], ...]
    line: int
    epi: EpiValue | None = None  # what is stored, as a function of the accumulator element (None: itself)
    limits: Limits = ()  # the run-time extents of the views written through (writes outside are dropped)
    # unit indices an enclosing ``inthreads (p == c)`` fixes (lift/roles.py): the store is that
    # unit's, its accumulator's terms (built for every unit) read at that value
    pins: tuple[tuple[str, E.Expr], ...] = ()
    atomic: bool = False  # ``__atomic_add(out.at(..), acc)``: the element gets the value added, by each writer


Value = (
    E.Expr
    | Bounded
    | Region
    | Buffer
    | BufferArray
    | Future
    | View
    | Cells
    | Elem
    | Prod
    | AccRead
    | Loaded
    | Scalar
    | WithName
)


def const_int(e: E.Expr) -> int | None:
    f = E.fold(e)
    return int(f.value) if isinstance(f, E.Const) and isinstance(f.value, int) else None


def element_base(base: A.Expr) -> str | None:
    """The name an element access reads or writes: ``s`` in ``s.at(..)`` and ``s.data.at(..)``."""
    b = unparen(base)
    if isinstance(b, A.Member) and b.member == "data":
        b = unparen(b.base)
    return b.name if isinstance(b, A.Name) else None


def root(e: A.Expr) -> A.Expr:
    """The name node a view or an element of it stands on (``b`` of ``b.data.subspan(..).at(i)``), or
    the innermost node with no base where it stands on none."""
    e = unparen(e)
    while not isinstance(e, A.Name):
        base = getattr(e, "base", None) or getattr(e, "expr", None)
        if not isinstance(base, A.Expr):
            return e
        e = unparen(base)
    return e


def root_name(e: A.Expr) -> str | None:
    """The name a view or an element of it stands on (``b`` of ``b.data.subspan(..).at(i)``)."""
    r = root(e)
    return r.name if isinstance(r, A.Name) else None


def subst_elem(x: Elem, env: dict[str, E.Expr]) -> Elem:
    return x.mapped(lambda i: E.substitute(i, env))


def where_refusal(s: A.With) -> tuple[str, A.Node, str] | None:
    """What croq2triton says of a ``foreach`` over a name that ``with .. where a <-> b`` relates
    (LANGUAGE.md 5 gives the clause its grammar but no meaning, and upstream's GPU backend aborts on
    it, "where bind is yet to support"): the refusal's text, where it stands, and its hint.  None
    where no loop iterates a related name (the clause then changes nothing: no name takes another
    value than 0)."""
    pairs = {n: (a, b) for a, b in s.where for n in (a, b)}
    tuples = {w.name: [v for v in w.vars or [] if v] for w in s.withins if w.name}
    for n in s.body.walk():
        if not isinstance(n, A.Foreach):
            continue
        for it in n.items:
            if not isinstance(it, A.RangeItem):
                continue
            name = next((v for v in [it.name, *tuples.get(it.name, [])] if v in pairs), None)
            if name is None:
                continue
            a, b = pairs[name]
            other = b if name == a else a
            return (
                f"a 'foreach' over '{it.name}' inside 'with .. where {a} <-> {b}' (LANGUAGE.md gives 'where' a"
                " grammar but no meaning, and upstream's GPU backend does not translate it either)",
                it,
                f"leave out 'where {a} <-> {b}'; if it means that '{name}' and '{other}' are one index, loop over"
                f" '{name}' and write '{name}' where '{other}' stands",
            )
    return None
