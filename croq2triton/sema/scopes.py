"""Name resolution of one ``__co__`` function (LANGUAGE.md 4.3 and 6).

Scopes are lexical (upstream ``visitor.hpp``): the function (its parameters and top-level
statements), every ``parallel``, ``with``, ``foreach``, ``apply``, ``inthreads``, ``while`` and
each branch of an ``if``.  The braces that form the body of one of those statements are that
statement's scope, not another one inside it (``foreach i in [4] { i = 2; }`` re-assigns the loop
index).

``name = expr`` follows upstream's early semantics (``earlysema.cpp``, ``Visit(Assignment)``):

* ``name`` not in scope: a declaration, its kind inferred from ``expr``;
* ``name`` mutable (``mutable int``, element scalars, buffers, futures, fragments ...): an
  assignment;
* ``name`` immutable (``int``/``bool`` without ``mutable``, mdspans, ituples, bounded indices,
  symbolic dimensions) and declared in *this* scope: an error, re-assigning an immutable;
* ``name`` immutable and declared in an *outer* scope: a new declaration that shadows it for the
  rest of this scope (so ``stage = k % 2;`` in a loop body is a fresh binding per iteration).

A compound assignment ``n += 1`` (and ``n++``) of an immutable is always an error: upstream would
turn it into a shadowing ``n = n + 1`` in an inner scope, which silently leaves the outer ``n``
unchanged -- never what ``+=`` means (croq2triton's decision; LANGUAGE.md 4.3 calls it a
re-assignment).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import Span
from ..frontend import ast as A

# what a binding of each kind is, in messages ("'x' is a shape")
KIND_WORDS = {
    "spanned": "a tensor or buffer",
    "int": "an int",
    "bool": "a bool",
    "elem": "a scalar",
    "mdspan": "a shape",
    "ituple": "an ituple",
    "stream": "a stream",
    "bounded": "a bounded index",
    "dim": "a symbolic size",
    "event": "an event",
    "frag": "a fragment",
    "future": "a future",
    "view": "a view",
}

# kinds whose bindings cannot be re-assigned unless declared 'mutable'
IMMUTABLE_KINDS = frozenset({"int", "bool", "mdspan", "ituple", "bounded", "dim"})


@dataclass(eq=False)
class Binding:
    """What a name stands for in one scope.

    kind: int, bool, elem (element scalar), mdspan, ituple, bounded (parallel / with / foreach
    index, or a bounded ituple), dim (symbolic extent of a parameter shape), spanned (buffer or
    parameter), view (a named view), future, event, frag, stream, unknown.
    """

    name: str
    kind: str
    span: Span | None
    origin: str  # how it was declared: declaration, assignment, parameter, parallel, loop, shape
    scope: Scope
    mutable: bool = False
    value: A.Expr | None = None  # initialiser (scalars), value (mdspan, ituple, view)
    bounds: list[A.Expr | None] | None = None  # bounded: the bound of each component
    dims: list[A.Expr] | None = None  # spanned: the written shape (items may be mdspans)


@dataclass(eq=False)
class Scope:
    kind: str
    parent: Scope | None
    names: dict[str, Binding] = field(default_factory=dict)
    braced: bool = True  # the body of its statement is in braces (without, it is the next statement only)


@dataclass
class Unresolved:
    """A use of a name no enclosing scope declares at that point."""

    node: A.Node
    name: str
    scope: Scope  # where it is used


@dataclass
class Reassignment:
    node: A.Node  # the Assign or IncDec
    binding: Binding
    op: str  # '=', '+', ..., '++', '--'


@dataclass
class Update:
    """An assignment, compound assignment or ``++`` / ``--`` of a name already bound (not one that
    declares a new binding, nor an error), and the scope it is in (lift/hostupdates.py)."""

    node: A.Node  # the Assign or IncDec
    binding: Binding
    op: str  # '=', '+', ..., '++', '--'
    scope: Scope


@dataclass
class Resolution:
    refs: dict[int, Binding] = field(default_factory=dict)  # id(Name | UBound node) -> its binding
    bindings: list[Binding] = field(default_factory=list)  # every binding, in declaration order
    reassigned: list[Reassignment] = field(default_factory=list)
    # 'x = e' in an inner scope of an immutable int / bool 'x' of an outer one: accepted as upstream
    # accepts it, with a warning (sema/checks.py)
    nested: list[Reassignment] = field(default_factory=list)
    # every update of a binding: the assignments of a mutable name, the 'nested' ones, '++' / '--'
    updates: list[Update] = field(default_factory=list)
    # a name declared twice in one scope (the new binding, the first)
    redeclared: list[tuple[Binding, Binding]] = field(default_factory=list)
    swaps: dict[int, list[Binding | None]] = field(default_factory=dict)  # id(Swap) -> each name's binding
    unresolved: list[Unresolved] = field(default_factory=list)
    # keeps the resolved nodes alive so that their ids stay unique
    _nodes: list[A.Node] = field(default_factory=list, repr=False)

    def binding(self, node: A.Node) -> Binding | None:
        return self.refs.get(id(node))


_CMP = ("==", "!=", "<", ">", "<=", ">=", "&&", "||")


class _Resolver:
    def __init__(self) -> None:
        self.scope = Scope("function", None)
        self.res = Resolution()

    # ---- scopes -------------------------------------------------------------
    def push(self, kind: str) -> None:
        self.scope = Scope(kind, self.scope)

    def pop(self) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent

    def lookup(self, name: str) -> Binding | None:
        s: Scope | None = self.scope
        while s is not None:
            b = s.names.get(name)
            if b is not None:
                return b
            s = s.parent
        return None

    def declare(self, name: str, kind: str, span: Span | None, origin: str, **kw: object) -> Binding:
        b = Binding(name, kind, span, origin, self.scope, **kw)  # type: ignore[arg-type]
        old = self.scope.names.get(name)
        if origin == "declaration" and old is not None and old.origin in ("declaration", "parameter"):
            self.res.redeclared.append((b, old))  # ``int k = 4; int k = 5;`` in one scope
        self.scope.names[name] = b
        self.res.bindings.append(b)
        return b

    def ref(self, node: A.Node, name: str) -> None:
        b = self.lookup(name)
        if b is not None:
            self.res.refs[id(node)] = b
            self.res._nodes.append(node)
        else:
            self.res.unresolved.append(Unresolved(node, name, self.scope))

    # ---- expressions --------------------------------------------------------
    def expr(self, e: A.Node | list[A.Expr] | None) -> None:
        if e is None:
            return
        if isinstance(e, list):
            for x in e:
                self.expr(x)
            return
        for n in e.walk():
            if isinstance(n, (A.Name, A.UBound)):
                self.ref(n, n.name)
            elif isinstance(n, A.IncDec):
                self.ref(n, n.target)
                b = self.lookup(n.target)
                if b is not None and not b.mutable and b.kind in IMMUTABLE_KINDS:
                    self.res.reassigned.append(Reassignment(n, b, n.op))
                elif b is not None:
                    self.res.updates.append(Update(n, b, n.op, self.scope))

    def kind_of(self, e: A.Expr | None) -> str:
        """The kind a declaration by assignment gets from its value (best effort)."""
        if e is None:
            return "unknown"
        if isinstance(e, A.Paren):
            return self.kind_of(e.expr)
        if isinstance(e, (A.IntLit, A.UBound, A.SizeOf)):
            return "int"
        if isinstance(e, A.BoolLit):
            return "bool"
        if isinstance(e, (A.ItupleLit, A.Derive)):
            return "ituple"
        if isinstance(e, (A.FloatLit, A.At, A.Cast)):
            return "elem"
        if isinstance(e, A.View):
            return "view"
        if isinstance(e, A.Member) and e.member == "span":
            return "mdspan"
        if isinstance(e, A.Name):
            b = self.lookup(e.name)
            if b is None:
                return "unknown"
            if b.kind in ("dim", "bounded"):
                return "int" if b.bounds is None or len(b.bounds) == 1 else "ituple"
            return b.kind if b.kind in ("int", "bool", "elem", "ituple", "mdspan") else "unknown"
        if isinstance(e, A.Unary):
            if e.op == "!":
                return "bool"
            k = self.kind_of(e.operand)
            return k if k in ("int", "elem") else "unknown"
        if isinstance(e, A.Binary):
            if e.op in _CMP:
                return "bool"
            kinds = {self.kind_of(e.lhs), self.kind_of(e.rhs)}
            if kinds == {"int"}:
                return "int"
            if "elem" in kinds and kinds <= {"int", "elem"}:
                return "elem"
            return "unknown"
        if isinstance(e, A.GetIth):
            k = self.kind_of(e.base)
            return "int" if k in ("ituple", "mdspan", "int") else "unknown"
        if isinstance(e, A.Builtin) and e.name in ("cdiv", "__alignup", "__aligndown"):
            return "int"
        return "unknown"

    # ---- statements ---------------------------------------------------------
    def body(self, s: A.Stmt | None) -> None:
        """The body of a scoped statement: its braces are that statement's scope."""
        if s is None:
            return
        self.scope.braced = isinstance(s, A.Block)
        if isinstance(s, A.Block):
            for x in s.stmts:
                self.stmt(x)
        else:
            self.stmt(s)

    def scoped(self, kind: str, s: A.Stmt | None) -> None:
        self.push(kind)
        self.body(s)
        self.pop()

    def function(self, fn: A.CoFunction) -> Resolution:
        for p in fn.params:
            shape = p.type.shape
            for d in (shape.dims if shape is not None else None) or []:
                for n in d.walk():
                    if isinstance(n, A.Name):
                        if self.lookup(n.name) is None:
                            self.declare(n.name, "dim", n.span, "shape")
                        self.ref(n, n.name)
            if p.name is None:
                continue
            k = p.type.kind
            if k == "spanned":
                self.declare(p.name, "spanned", p.span, "parameter", mutable=True, dims=shape.dims if shape else None)
            elif k in ("int", "bool"):
                self.declare(p.name, k, p.span, "parameter")
            elif k == "elem":
                self.declare(p.name, "elem", p.span, "parameter", mutable=True)
            else:
                self.declare(p.name, k, p.span, "parameter")
        for s in fn.body:
            self.stmt(s)
        return self.res

    def stmt(self, s: A.Stmt) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is not None:
            m(s)
            return
        for c in s.children():  # statements without a body or declarations of their own
            if not isinstance(c, A.Stmt):
                self.expr(c)
        result = getattr(s, "result", None)
        if isinstance(result, str):
            self.rebind(result, s, "future" if isinstance(s, (A.DmaStmt, A.DmaAny)) else "frag")
        if isinstance(s, A.MapStmt):
            self.rebind(s.result, s, "spanned")

    def rebind(self, name: str, s: A.Stmt, kind: str) -> None:
        """``f = dma.copy ...`` / ``acc = mma.fill ...``: these may be bound again, in this scope or
        an outer one (an assignment of the mutable name, as upstream's early semantics has it)."""
        b = self.lookup(name)
        if b is None or b.kind != kind:
            self.declare(name, kind, s.span, "assignment", mutable=True)

    def s_Swap(self, s: A.Swap) -> None:
        self.res.swaps[id(s)] = [self.lookup(n) for n in s.names]
        self.res._nodes.append(s)

    def s_Block(self, s: A.Block) -> None:  # not produced by the grammar today outside bodies
        self.scoped("block", s)

    def s_ScalarDecl(self, s: A.ScalarDecl) -> None:
        for d in s.items:
            self.expr(d.init)
            self.expr(d.fill)
            self.expr(d.dims)
            if s.type is None:
                kind = self.kind_of(d.init)
            else:
                kind = s.type if s.type in ("int", "bool") else "elem"
            mutable = s.mutable or kind not in ("int", "bool")  # element scalars are mutable
            self.declare(d.name, kind, d.span or s.span, "declaration", mutable=mutable, value=d.init)

    def s_SpannedDecl(self, s: A.SpannedDecl) -> None:
        self.expr(s.shape)
        for d in s.items:
            self.expr(d.dims)
            self.expr(d.fill)
            self.declare(d.name, "spanned", d.span or s.span, "declaration", mutable=True, dims=s.shape)

    def s_FragDecl(self, s: A.FragDecl) -> None:
        self.expr(s.shape)
        for d in s.items:
            self.expr(d.dims)
            self.expr(d.fill)
            self.declare(d.name, "frag", d.span or s.span, "declaration", mutable=True)

    def s_FragInit(self, s: A.FragInit) -> None:
        self.expr(s.dims)
        self.expr(s.value)
        self.declare(s.name, "frag", s.span, "declaration", mutable=True)

    def s_EventDecl(self, s: A.EventDecl) -> None:
        for d in s.items:
            self.expr(d.dims)
            self.declare(d.name, "event", d.span or s.span, "declaration", mutable=True)

    def s_MdspanDecl(self, s: A.MdspanDecl) -> None:
        self.expr(s.value)
        self.declare(s.name, "mdspan", s.span, "declaration", value=s.value)

    def s_ItupleDecl(self, s: A.ItupleDecl) -> None:
        self.expr(s.value)
        self.declare(s.name, "ituple", s.span, "declaration", value=s.value)

    def s_AssignStmt(self, s: A.AssignStmt) -> None:
        for a in s.items:
            self.expr(a.value)
            if not isinstance(a.target, A.Name):
                self.expr(a.target)
                continue
            name = a.target.name
            b = self.lookup(name)
            if b is not None:
                self.ref(a.target, name)
            frozen = b is not None and not b.mutable and b.kind in IMMUTABLE_KINDS
            # a spanned parameter as a whole is changed only by copies, element writes, MMA stores and
            # atomics (LANGUAGE.md 4.3): 'y = x;' of two tensors is an error, not a no-op
            whole = b is not None and b.kind == "spanned" and b.origin == "parameter"
            if b is not None and (whole or frozen and (a.op != "=" or b.scope is self.scope)):
                self.res.reassigned.append(Reassignment(a, b, a.op))
            elif b is None or (frozen and a.op == "="):
                if b is not None and b.kind in ("int", "bool"):
                    self.res.nested.append(Reassignment(a, b, a.op))
                    self.res.updates.append(Update(a, b, a.op, self.scope))
                kind = self.kind_of(a.value)
                nb = self.declare(
                    name, kind, a.target.span, "assignment", mutable=kind not in IMMUTABLE_KINDS, value=a.value
                )
                self.res.refs[id(a.target)] = nb
            elif b is not None:
                self.res.updates.append(Update(a, b, a.op, self.scope))

    def s_Parallel(self, s: A.Parallel) -> None:
        for at in s.attrs:
            self.expr(at.args)
        self.push("parallel")
        for lvl in s.levels:
            self.expr(lvl.bound)
            self.bounded(lvl.name, lvl.vars, lvl.bound, lvl.span, "parallel")
        self.body(s.body)
        self.pop()

    def bounded(
        self, name: str | None, vars: list[str] | None, bound: list[A.Expr], span: Span | None, origin: str
    ) -> None:
        items: list[A.Expr | None] = list(bound)
        if vars:
            per: list[A.Expr | None] = items if len(items) == len(vars) else [None] * len(vars)
            for v, b in zip(vars, per, strict=True):
                self.declare(v, "bounded", span, origin, bounds=[b])
            if name:
                self.declare(name, "bounded", span, origin, bounds=per)
        elif name:
            self.declare(name, "bounded", span, origin, bounds=items if len(items) == 1 else [None])

    def within(self, w: A.Within, origin: str) -> None:
        self.expr(w.shape)
        self.bounded(w.name, w.vars, self.extents(w.shape) or [], w.span, origin)

    def extents(self, e: A.Expr) -> list[A.Expr] | None:
        return shape_extents(e, lambda n: self.lookup(n.name))

    def s_With(self, s: A.With) -> None:
        self.push("with")
        for w in s.withins:
            self.within(w, "with")
        self.body(s.body)
        self.pop()

    def s_Foreach(self, s: A.Foreach) -> None:
        self.push("foreach")
        for it in s.items:
            if isinstance(it, A.Within):
                self.within(it, "loop")
                continue
            self.ref(it, it.name)
            self.expr([x for x in (it.lo, it.hi, it.step) if x is not None])
            if it.alias:
                self.declare(it.alias, "bounded", it.span, "loop", bounds=[None])
        for suf in s.suffixes:
            self.expr(suf.args)
        self.body(s.body)
        self.pop()

    def s_Apply(self, s: A.Apply) -> None:
        self.ref(s, s.frag)
        self.push("apply")
        for v in s.vars:
            self.declare(v, "int", s.span, "loop")
        self.body(s.body)
        self.pop()

    def s_InThreads(self, s: A.InThreads) -> None:
        self.expr(s.cond)
        self.scoped("inthreads", s.body)

    def s_While(self, s: A.While) -> None:
        self.expr(s.cond)
        self.scoped("while", s.body)

    def s_If(self, s: A.If) -> None:
        self.expr(s.cond)
        self.scoped("if", s.then)
        if s.other is not None:
            self.scoped("else", s.other)


def shape_extents(e: A.Expr, binding: Callable[[A.Name], Binding | None]) -> list[A.Expr] | None:
    """The extents a shape expression stands for, mdspans and ``x.span`` expanded: with
    ``s : [4, 4]``, ``[M, s, 8]`` gives ``[M, 4, 4, 8]``.  None: not known statically."""
    if isinstance(e, A.MdspanLit):
        out: list[A.Expr] = []
        for x in e.items:
            sub = shape_extents(x, binding) if _shape_like(x, binding) else [x]
            if sub is None:
                return None
            out.extend(sub)
        return out
    if isinstance(e, A.Name):
        b = binding(e)
        if b is not None and b.kind == "mdspan":
            return shape_extents(b.value, binding) if b.value is not None else None
        return [e]
    if isinstance(e, A.Member) and e.member == "span" and isinstance(e.base, A.Name):
        b = binding(e.base)
        if b is not None and b.kind == "spanned" and b.dims is not None:
            return shape_extents(A.MdspanLit(list(b.dims)), binding)
        return None
    if isinstance(e, (A.IntLit, A.Builtin, A.Binary, A.Paren, A.UBound, A.GetIth, A.SizeOf, A.Unknown)):
        return None if _shape_like(e, binding) else [e]
    return None


def _shape_like(e: A.Expr, binding: Callable[[A.Name], Binding | None]) -> bool:
    """Does ``e`` denote a shape (several extents) rather than one extent?"""
    if isinstance(e, A.MdspanLit):
        return True
    if isinstance(e, A.Member):
        return e.member == "span"
    if isinstance(e, A.Name):
        b = binding(e)
        return b is not None and b.kind == "mdspan"
    if isinstance(e, A.Paren):
        return _shape_like(e.expr, binding)
    if isinstance(e, A.Binary):
        return _shape_like(e.lhs, binding) or _shape_like(e.rhs, binding)
    return False


def resolve(fn: A.CoFunction) -> Resolution:
    """Resolve every name of ``fn`` to its binding and find re-assigned immutables."""
    return _Resolver().function(fn)
