"""AST of Croqtile programs.

Every node carries a :class:`~croq2triton.errors.Span`; spans never take part in
equality, so ``parse(print(ast)) == ast`` compares structure only.  Node and
field names follow the language (LANGUAGE.md sections 4-7).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from ..errors import Span


@dataclass(eq=True)
class Node:
    span: Span | None = field(default=None, compare=False, repr=False, kw_only=True)

    def children(self) -> Iterator[Node]:
        return iter(_children(self))

    def walk(self) -> Iterator[Node]:
        """This node and every node under it, depth first, children in field order."""
        stack: list[Node] = [self]
        while stack:
            n = stack.pop()
            yield n
            kids = _children(n)
            kids.reverse()
            stack.extend(kids)


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes (all but its span), in declaration order."""
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _CHILD_FIELDS[cls] = tuple(f.name for f in fields(cls) if f.name != "span")
    return names


def child_fields(n: Node) -> tuple[str, ...]:
    """The names of the fields of ``n`` that may hold nodes."""
    return _child_fields(type(n))


def walk_once(*roots: Node) -> Iterator[Node]:
    """Every node under ``roots`` once: a node that several parents share (a helper's named value,
    frontend/device.py) is visited once, not once per path to it."""
    seen: set[int] = set()
    stack: list[Node] = list(reversed(roots))
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        kids = _children(n)
        kids.reverse()
        stack.extend(kids)


def rewrite(node: Any, change: Callable[[Any], Any | None]) -> Any:
    """``node`` with every sub-node that ``change`` replaces (returns other than None) replaced, in
    place; ``change`` sees a node before the nodes under it and a replacement is not looked into."""
    new = change(node)
    if new is not None:
        return new
    if isinstance(node, Node):
        for name in _child_fields(type(node)):
            setattr(node, name, rewrite(getattr(node, name), change))
    elif isinstance(node, list):
        return [rewrite(y, change) for y in node]
    return node


def _children(n: Node) -> list[Node]:
    out: list[Node] = []
    for name in _child_fields(type(n)):
        v = getattr(n, name)
        if isinstance(v, Node):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            _nodes_in(v, out)
    return out


def _nodes_in(v: list[Any] | tuple[Any, ...], out: list[Node]) -> None:
    for x in v:
        if isinstance(x, Node):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            _nodes_in(x, out)


# ---------------------------------------------------------------- expressions
@dataclass
class Expr(Node):
    pass


@dataclass
class IntLit(Expr):
    value: int
    text: str
    type: str = "s32"


@dataclass
class FloatLit(Expr):
    value: float
    text: str
    double: bool = False


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class NullPtr(Expr):
    pass


@dataclass
class InfLit(Expr):
    pass


@dataclass
class StringLit(Expr):
    pieces: list[str]  # each piece is a token as written, quotes included

    @property
    def value(self) -> str:
        return "".join(_unquote(p) for p in self.pieces)


def _unquote(p: str) -> str:
    if p.startswith("R"):
        d = p[2 : p.index("(")]
        return p[3 + len(d) : -(len(d) + 2)]
    body = p[1:-1]
    return body.replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")


@dataclass
class Name(Expr):
    name: str


@dataclass
class Unknown(Expr):
    """``?`` / ``??`` dimension in a parameter shape."""

    text: str


@dataclass
class Unary(Expr):
    op: str  # - ! ~ &
    operand: Expr


@dataclass
class IncDec(Expr):
    op: str  # ++ --
    prefix: bool
    target: str


@dataclass
class Binary(Expr):
    op: str
    lhs: Expr
    rhs: Expr


@dataclass
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass
class Paren(Expr):
    expr: Expr
    # the call of a __device__ helper this is the expanded body of (frontend/helpers.py): what the
    # source wrote, for printing it back
    written: Call | None = field(default=None, compare=False, repr=False)
    # a value the helper's body names (``count_2``, frontend/device_body.py): one node that each of its
    # reads shares, computed once where the expanded body is lifted
    shared: str | None = field(default=None, compare=False, repr=False)
    # the expanded body's effects (atomics, calls of helpers that have them), in the order its
    # statements run them: each runs where the call runs, whether or not ``expr`` reads its value
    effects: list[Expr] = field(default_factory=list, compare=False, repr=False)


@dataclass
class ConvertLike(Expr):
    """``expr`` converted to the type of ``like``, as C converts a value given to a local of that
    type: a ``__device__`` helper's ``auto`` local (``like``: its first value) or a local of its
    template's type parameter (``like``: a parameter of that type), frontend/device_body.py."""

    expr: Expr
    like: Expr


@dataclass
class DeviceLoop(Expr):
    """A loop of a ``__device__`` helper's body whose trip count is known only at run time
    (frontend/device_body.py): the locals it changes (``names``, their values before it ``inits``)
    are its state; while ``cond`` (over the state) holds, ``lets`` are computed in order and the
    state becomes ``updates``.  Each thread runs it while its own condition holds (SIMT).  Read
    through :class:`LoopOut` (one node that every ``LoopOut`` of it shares: it runs once)."""

    names: list[str]
    inits: list[Expr]
    cond: Expr
    let_names: list[str]
    let_values: list[Expr]
    updates: list[Expr]


@dataclass
class LoopOut(Expr):
    """The value of the local ``loop.names[index]`` after ``loop``."""

    loop: DeviceLoop
    index: int


@dataclass
class UBound(Expr):
    """``#x``: the upper bound of a bounded variable."""

    name: str


@dataclass
class Member(Expr):
    """``x.span``, ``x.data``, ``x.mdata``."""

    base: Expr
    member: str


@dataclass
class At(Expr):
    """Element access ``x.at(i, j)`` (or event generation ``e.at(k)``)."""

    base: Expr
    indices: list[Expr]
    # an element reached through its address and an offset (``p[k]`` of ``p = &t.at(i, j)`` in a
    # __device__ helper, frontend/helpers.py): its indices unravel a row-major position, which holds
    # of a tensor or buffer (its rows one after another), not of a view of part of one
    through_address: bool = field(default=False, compare=False, repr=False)


@dataclass
class Index(Expr):
    """``x[i]``, ``x[i][j]`` (array of buffers/events) or a shape derivation ``s[(1), (0)]``."""

    base: Expr
    indices: list[Expr]


@dataclass
class GetIth(Expr):
    """``x(k)``: dimension k of a shape/tuple, or ``#x + k`` for negative k on a bounded int."""

    base: Expr
    index: Expr


@dataclass
class MdspanLit(Expr):
    items: list[Expr]


@dataclass
class ItupleLit(Expr):
    items: list[Expr]


@dataclass
class Derive(Expr):
    """``t {(0), (1), 2}``: ituple derivation."""

    base: Expr
    items: list[Expr]


@dataclass
class Builtin(Expr):
    """Math builtins ``__exp(x)``, ``__max(a, b)``, ``__alignup(x, a)``, ``cdiv(a, b)``."""

    name: str
    args: list[Expr]


@dataclass
class Cast(Expr):
    """``__to<T>(e)`` (``type`` is an element type) or ``__to<"C type">(e)``."""

    type: str
    is_string: bool
    expr: Expr


@dataclass
class SizeOf(Expr):
    """``|x.span|``, ``|s|``, ``|f32|`` (``expr`` is None and ``elem`` set for a type)."""

    expr: Expr | None
    elem: str | None = None


@dataclass
class Select(Expr):
    index: Expr
    options: list[Expr]


@dataclass
class ViewOp(Node):
    """One spanned operation of a view.

    kind: chunkat, chunk, subspan, modspan, view, span_as, sqz, zfill.
    ``args`` are the extents / factors / indices; ``strides`` the ``: st``
    part of subspan/view; ``step`` the ``.step(...)``; ``at`` the ``.at(...)``
    (``.from(...)`` for ``view``).
    """

    kind: str
    args: list[Expr]
    strides: list[Expr] | None = None
    step: list[Expr] | None = None
    at: list[Expr] | None = None


@dataclass
class View(Expr):
    base: Expr
    ops: list[ViewOp]


@dataclass
class Call(Expr):
    """Call-like forms.

    kind: call (``call f<...>(...)``), intrinsic, assert, print, println, lib, atomic, bar.
    """

    kind: str
    name: str
    args: list[Expr]
    targs: list[Expr] | None = None
    bang: bool = False
    # the ``__device__`` helper a ``call`` names (frontend/helpers.py): a DeviceFunction
    device: Any = field(default=None, compare=False, repr=False)
    # ``call F(..);`` of a helper with effects: its expanded body (a Paren with ``effects``), which
    # the statement runs (frontend/helpers.py)
    expanded: Expr | None = field(default=None, compare=False, repr=False)


@dataclass
class TypeArg(Expr):
    """A scalar type used as a template argument of ``call``."""

    name: str


# ----------------------------------------------------------------- types
@dataclass
class ParamShape(Node):
    """``[d0, d1]`` / ``mdspan[d0, d1]`` / ``mdspan<R>``."""

    dims: list[Expr] | None
    form: str = "brackets"  # brackets | mdspan | rank
    rank: int | None = None


@dataclass
class TypeRef(Node):
    """kind: void, auto, stream, int, bool, elem (scalar), spanned."""

    kind: str
    elem: str | None = None
    shape: ParamShape | None = None


@dataclass
class Param(Node):
    type: TypeRef
    name: str | None
    storage: str | None = None
    ref: bool = False


# ------------------------------------------------------------ statements
@dataclass
class Stmt(Node):
    pass


@dataclass
class Block(Stmt):
    stmts: list[Stmt]


@dataclass
class Empty(Stmt):
    pass


@dataclass
class PragmaStmt(Stmt):
    kind: str
    name: str


@dataclass
class MdspanDecl(Stmt):
    name: str
    value: Expr
    keyword: bool = False
    rank: int | None = None


@dataclass
class ItupleDecl(Stmt):
    name: str
    value: Expr
    rank: int | None = None


@dataclass
class Declarator(Node):
    name: str
    init: Expr | None = None
    fill: Expr | None = None
    dims: list[Expr] = field(default_factory=list)


@dataclass
class ScalarDecl(Stmt):
    type: str | None  # int, bool, an element type, or None (``mutable x = ...``)
    items: list[Declarator]
    mutable: bool = False
    storage: str | None = None


@dataclass
class SpannedDecl(Stmt):
    elem: str
    shape: list[Expr] | None  # None = [auto]
    items: list[Declarator]
    storage: str | None = None


@dataclass
class FragDecl(Stmt):
    elem: str | None
    shape: list[Expr] | None
    items: list[Declarator]


@dataclass
class EventDeclarator(Node):
    name: str
    dims: list[Expr]
    ready: bool = False


@dataclass
class EventDecl(Stmt):
    items: list[EventDeclarator]
    storage: str | None = None
    count: int | None = None


@dataclass
class Assign(Node):
    target: Expr
    op: str  # '=' or one of + - * / %
    value: Expr


@dataclass
class AssignStmt(Stmt):
    items: list[Assign]


@dataclass
class DmaAttr(Node):
    name: str  # swiz, zfill, multicast, sp, promote, evict_first, evict_last
    args: list[int] | None = None


@dataclass
class DmaStmt(Stmt):
    engine: str  # dma | tma
    op: str  # copy | load | pad | transp
    src: Expr
    dst: Expr  # a view, Name('shared'|'local'|'global') for storage, or Select
    result: str | None = None
    cfg: list[Expr] | None = None
    is_async: bool = False
    attrs: list[DmaAttr] = field(default_factory=list)
    after: str | None = None
    event: Expr | None = None  # tutorial dialect: tma.copy.async<ev>
    dst_storage: bool = False


@dataclass
class DmaAny(Stmt):
    result: str
    engine: str


@dataclass
class MapStmt(Stmt):
    result: str
    src: Expr
    kind: str
    storage: str
    offset: Expr
    size: Expr


@dataclass
class MmaFill(Stmt):
    value: Expr
    result: str | None = None  # ``acc = mma.fill ...``
    target: Expr | None = None  # ``mma.fill acc, v``
    elem: str | None = None


@dataclass
class FragInit(Stmt):
    """``frag [.T] acc[2][3] {v}``."""

    name: str
    dims: list[Expr]
    value: Expr
    elem: str | None = None


@dataclass
class MmaLoad(Stmt):
    src: Expr
    result: str | None = None
    target: Expr | None = None  # ``mma.load view, frag``
    frag: bool = False
    swiz: int | None = None
    swiz_given: bool = False
    is_async: bool = False


@dataclass
class MmaOp(Stmt):
    layout: tuple[str, str]
    acc: Expr
    a: Expr
    b: Expr
    variant: str = ""  # '', async, scale, sp
    result: str | None = None
    extra: list[Expr] = field(default_factory=list)
    schedule: list[int] | None = None
    schedule_span: Span | None = field(default=None, compare=False, repr=False)  # of the k_tiles list


@dataclass
class MmaStore(Stmt):
    acc: Expr
    dst: Expr
    variant: str = ""  # '', async, transp, mask
    extra: list[Expr] = field(default_factory=list)


@dataclass
class MmaScale(Stmt):
    acc: Expr
    sa: Expr
    sb: Expr
    temp: str | None = None  # the hidden accumulator of the MMAs it scales (lift/splitscale.py)


@dataclass
class MmaCommit(Stmt):
    """Tutorial dialect ``mma.commit;`` (upstream infers it)."""


@dataclass
class FragOp(Stmt):
    op: str  # reduce_max reduce_sum all_reduce_sum copy
    args: list[Expr]
    axis: int | None = None


@dataclass
class Wait(Stmt):
    items: list[Expr]


@dataclass
class Trigger(Stmt):
    items: list[Expr]
    after: list[Expr] = field(default_factory=list)
    cluster: bool = False


@dataclass
class CallStmt(Stmt):
    call: Call


@dataclass
class Swap(Stmt):
    kind: str  # swap | rotate
    names: list[str]
    parens: bool = False


@dataclass
class Return(Stmt):
    value: Expr | None = None


@dataclass
class Sync(Stmt):
    kind: str  # shared global local barrier fence
    level: str | None = None
    storage: str | None = None


@dataclass
class Cpp(Stmt):
    text: StringLit


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Yield(Stmt):
    pass


@dataclass
class AsmOperand(Node):
    constraint: StringLit
    expr: Expr
    name: str | None = None


@dataclass
class Asm(Stmt):
    template: StringLit
    outputs: list[AsmOperand] | None = None
    inputs: list[AsmOperand] | None = None
    clobbers: list[StringLit] | None = None
    volatile: bool = False
    keyword: str = "__asm__"


@dataclass
class PbAttr(Node):
    name: str  # launch_bounds | maxnreg
    args: list[Expr]


@dataclass
class PBy(Node):
    """One level of ``parallel``: ``p by N : block`` or ``t = {x, y} by [A, B] : block``."""

    bound: list[Expr]
    name: str | None = None
    vars: list[str] | None = None  # multi-dimensional form
    level: str | None = None
    level_arg: str | None = None
    cooperative: bool = False
    bracketed: bool = False  # ``p by [N]``

    @property
    def names(self) -> list[str]:
        """The indices the level binds (``p``; ``x, y`` of ``{x, y}``)."""
        return self.vars or ([self.name] if self.name else [])


@dataclass
class Parallel(Stmt):
    levels: list[PBy]
    body: Stmt
    attrs: list[PbAttr] = field(default_factory=list)
    is_async: bool = False
    stream: str | None = None


@dataclass
class Within(Node):
    """``i in S`` / ``t = {a, b} in S``."""

    shape: Expr
    name: str | None = None
    vars: list[str] | None = None

    @property
    def names(self) -> list[str]:
        """The indices it binds (``i``; ``a, b`` of ``{a, b}``)."""
        return self.vars or ([self.name] if self.name else [])


@dataclass
class RangeItem(Node):
    """``foreach`` over an existing bounded name: ``c = v(lo:hi:step)``."""

    name: str
    alias: str | None = None
    lo: Expr | None = None
    hi: Expr | None = None
    step: Expr | None = None
    sliced: bool = False
    has_step: bool = False


@dataclass
class LoopSuffix(Node):
    kind: str  # unroll | vectorize
    args: list[Expr] = field(default_factory=list)


@dataclass
class With(Stmt):
    withins: list[Within]
    body: Stmt
    where: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Foreach(Stmt):
    items: list[Within | RangeItem]
    body: Stmt
    suffixes: list[LoopSuffix] = field(default_factory=list)


@dataclass
class Apply(Stmt):
    vars: list[str]
    frag: str
    body: Stmt


@dataclass
class InThreads(Stmt):
    cond: Expr
    body: Stmt
    is_async: bool = False


@dataclass
class While(Stmt):
    cond: Expr
    body: Stmt


@dataclass
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None = None


# ------------------------------------------------------------- top level
@dataclass
class CoFunction(Node):
    ret: TypeRef
    name: str
    params: list[Param]
    body: list[Stmt]
    notes: list[Any] = field(default_factory=list, compare=False, repr=False)
    name_span: Span | None = field(default=None, compare=False, repr=False)  # of its name, for diagnostics
    # a name renamed for the generated Python (emit/names.py) -> the name as the source spells it
    spelled: dict[str, str] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class HostText(Node):
    text: str


@dataclass
class DeviceCode(Node):
    text: str


TopItem = CoFunction | HostText | DeviceCode


@dataclass
class TranslationUnit(Node):
    items: list[TopItem]
    filename: str = field(default="<input>", compare=False)
    notes: list[Any] = field(default_factory=list, compare=False, repr=False)
    warnings: list[Any] = field(default_factory=list, compare=False, repr=False)  # preprocessor warnings
    macro_uses: list[Any] = field(default_factory=list, compare=False, repr=False)  # preprocess.MacroUse

    @property
    def functions(self) -> list[CoFunction]:
        return [i for i in self.items if isinstance(i, CoFunction)]


def unparen(e: Expr) -> Expr:
    """``e`` without the parentheses around it."""
    while isinstance(e, Paren):
        e = e.expr
    return e
