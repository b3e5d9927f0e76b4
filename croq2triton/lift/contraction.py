"""Recognising a GEMM by what it computes: the block-level ``parallel`` -> a :class:`Contraction`.

The kernel is run symbolically, once, with every parallel index, loop counter and fragment
coordinate as a variable.  Data are never values but terms: an element of a global tensor at an
index expression, a product of two of them, an accumulator that is a sum of such products over
named ranges.  Copies into shared or local buffers, futures, views of views, ``mma.load`` and
events only move or name data, so a buffer holds "this region of that tensor" (or, after
``mma.store`` into shared, "this accumulator").  A loop whose counter indexes an accumulator
element is spatial (the element loop of a thread tile); any other loop around an accumulation
is a reduction, and its counter joins the sum.  Warp roles (``inthreads.async``) run in lockstep:
the one main loop of each role is one loop, producer body first, which is what their events
order (a program whose events do not order it so is wrong already).

What comes out is proved on the resulting terms, not matched on source forms:

* each store writes ``out[F_b, F_m, F_n] = acc`` where ``F_m`` and ``F_n`` are bijections (mixed
  radix, checked on their linear forms) from disjoint sets of spatial variables onto ranges that
  cover the tensor's extents, and the guards around it keep at most the tensor's own bounds;
* ``acc`` is zero-initialised and is ``sum over the reduction variables of a[.., F_m, kappa] *
  b[.., F_n, kappa]`` (each operand in either storage order) with one ``kappa``, a bijection onto a
  range covering the contracted extent of both operands.

Elements outside a tensor read as zero (``.zfill``, TMA, the tail rule), so a covering range that
overshoots changes nothing.  Anything else raises :class:`~croq2triton.lift.kernel.NotLifted` and
the kernel is lowered as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import count

from ..frontend import ast as A
from ..sema.levels import chain_levels, chains
from ..tir import expr as E
from ..tir.contract import Contraction, Operand
from .host import HostScope
from .kernel import NotLifted

FLOATS = ("f64", "f32", "tf32", "f16", "bf16", "f8_e4m3", "f8_e5m2")
EVENT_ONLY = (A.Wait, A.Trigger, A.EventDecl, A.Sync, A.MmaCommit, A.Empty, A.PragmaStmt)


# ------------------------------------------------------------------ symbolic values


@dataclass(frozen=True)
class Bounded:
    value: E.Expr
    bound: E.Expr


@dataclass(frozen=True)
class Elem:
    """Element ``index`` of global tensor ``tensor``."""

    tensor: str
    index: tuple[E.Expr, ...]


@dataclass(frozen=True)
class Region:
    """A view of a global tensor: child dimension ``c`` runs along tensor dimension ``axes[c]``
    from ``origin`` (per tensor dimension), with ``shape[c]`` elements."""

    tensor: str
    origin: tuple[E.Expr, ...]
    axes: tuple[int, ...]
    shape: tuple[E.Expr, ...]

    def elem(self, idx: tuple[E.Expr, ...]) -> Elem:
        index = list(self.origin)
        for c, i in enumerate(idx):
            index[self.axes[c]] = E.fold(index[self.axes[c]] + i)
        return Elem(self.tensor, tuple(index))

    def sub(self, offsets: list[E.Expr], shape: list[E.Expr], keep: list[bool]) -> Region:
        origin = list(self.origin)
        for c, off in enumerate(offsets):
            origin[self.axes[c]] = E.fold(origin[self.axes[c]] + off)
        axes = tuple(a for a, k in zip(self.axes, keep, strict=True) if k)
        return Region(self.tensor, tuple(origin), axes, tuple(s for s, k in zip(shape, keep, strict=True) if k))


@dataclass(frozen=True)
class Term:
    """``sum over sums of a * b``, for the accumulator elements whose coordinates equal ``conds``
    (pending element-wise updates; empty once the element loops are closed)."""

    sums: tuple[tuple[E.Var, E.Expr], ...]
    a: Elem
    b: Elem
    conds: tuple[tuple[int, E.Expr], ...] = ()


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


@dataclass(frozen=True)
class AccRead:
    """An accumulator element read (what a store writes)."""

    cells: Cells
    idx: tuple[E.Expr, ...]


@dataclass(frozen=True)
class Prod:
    a: Elem
    b: Elem


@dataclass(frozen=True)
class Placed:
    """An accumulator stored (``mma.store``) into a buffer at an offset."""

    cells: Cells
    offsets: tuple[E.Expr, ...]
    spatial: tuple[tuple[E.Var, E.Expr], ...]  # the parallel indices of the units that stored it


@dataclass
class Buffer:
    """A shared or local buffer (or one slot of an array of them): what was last copied in."""

    elem: str
    shape: tuple[E.Expr, ...]
    content: Region | list[Placed] | None = None
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


@dataclass
class LoopFrame:
    """Buffers written in the current iteration of a loop, and those read before being written."""

    written: set[int] = field(default_factory=set)
    stale: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Store:
    tensor: str
    index: tuple[E.Expr, ...]
    value: AccRead
    guard: tuple[E.Expr, ...]
    spatial: tuple[tuple[E.Var, E.Expr], ...]
    line: int


Value = E.Expr | Bounded | Region | Buffer | BufferArray | Future | View | Cells | Elem | Prod | AccRead


def _const(e: E.Expr) -> int | None:
    f = E.fold(e)
    return int(f.value) if isinstance(f, E.Const) and isinstance(f.value, int) else None


def _lit(e: A.Expr) -> A.Expr:
    while isinstance(e, A.Paren):
        e = e.expr
    return e


# ------------------------------------------------------------------ the interpreter


class Interpreter:
    def __init__(self, top: A.Parallel, host: HostScope) -> None:
        self.top = top
        self.host = host
        self.scopes: list[dict[str, Value]] = [{}]
        self.guard: list[E.Expr] = []
        self.spatial: list[tuple[E.Var, E.Expr]] = []  # enclosing parallel indices and element loops
        self.stores: list[Store] = []
        self.accs: list[Cells] = []
        self.ids = count()
        self.level_of: dict[int, str] = {}
        self.pvars: dict[tuple[str, str, str], E.Var] = {}
        self.red_line = 0
        self.ksteps: list[int] = []
        self.notes: list[str] = []
        self.tensors = {name: t for name, t in host.tensors.items()}
        self.loops: list[LoopFrame] = []
        self.assumptions: list[tuple[E.Expr, int]] = []

    # ---------------------------------------------------------------- scopes
    def fresh(self, base: str, bound: E.Expr | None = None) -> E.Var:
        hi = None
        if bound is not None and _const(bound) is not None:
            hi = int(_const(bound)) - 1  # type: ignore[arg-type]
        return E.Var(f"{base}%{next(self.ids)}", "i32", 0, hi)

    def bind(self, name: str, v: Value) -> None:
        self.scopes[-1][name] = v

    def lookup(self, name: str, node: A.Node) -> Value:
        for s in reversed(self.scopes):
            if name in s:
                return s[name]
        if name in self.tensors:
            t = self.tensors[name]
            ext = tuple(self.size(x) for x in t.extents)
            return Region(name, tuple(E.Const(0) for _ in ext), tuple(range(len(ext))), ext)
        if name in self.host.constants:
            return E.Const(self.host.constants[name])
        if any(name == x for t in self.tensors.values() for x in t.extents):
            return self.size(name)
        if name in self.host.scalars:
            sc = self.host.scalars[name]
            if sc.elem not in ("int", "s32", "u32", "s64", "u64"):
                raise NotLifted(f"the scalar '{name}' in a contraction", node)
            return self.size(sc.host)
        raise NotLifted(f"'{name}' is not known to the contraction analysis", node)

    def size(self, x: str | int) -> E.Expr:
        return E.Const(x) if isinstance(x, int) else E.Var(x, "i32", 0)

    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    # ---------------------------------------------------------------- driver
    def host_prelude(self, stmts: list[A.Stmt]) -> None:
        """Integer declarations of the host code before the kernel (``int tiles_n = cdiv(N, 128);``):
        their values, as expressions of the sizes (a name whose value is not one stays unknown)."""
        for s in stmts:
            if not (isinstance(s, A.ScalarDecl) and s.type in ("int", None)):
                continue
            for d in s.items:
                if d.init is None or d.dims:
                    continue
                try:
                    self.bind(d.name, self.int_expr(d.init))
                except NotLifted:
                    self.scopes[0].pop(d.name, None)

    def run(self) -> None:
        for chain in chains(self.top):
            for b, lvl in zip(chain, chain_levels(chain), strict=True):
                if lvl not in ("block", "group-4", "group", "thread"):
                    raise NotLifted(f"a ': {lvl}' level", b)
                self.level_of[id(b)] = lvl
        if self.level_of.get(id(self.top.levels[0])) != "block":
            raise NotLifted("a kernel without a block level", self.top)
        self.parallel(self.top)

    def parallel(self, p: A.Parallel) -> None:
        if p.is_async or p.attrs:
            raise NotLifted("an attributed or asynchronous parallel", p)
        self.push()
        mark = len(self.spatial)
        for b in p.levels:
            names = list(b.vars) if b.vars is not None else [b.name]
            if len(names) != len(b.bound):
                raise NotLifted("parallel variables that do not match their bounds", b)
            level = self.level_of.get(id(b), "thread")
            for nm, bound_e in zip(names, b.bound, strict=True):
                bound = self.int_expr(bound_e)
                if level != "block" and _const(bound) is None:
                    raise NotLifted("a lane level whose extent is not a constant", b)
                key = (nm or "_", level, repr(E.fold(bound)))
                var = self.pvars.get(key) or self.fresh(nm or "p", bound)
                self.pvars[key] = var
                if nm:
                    self.bind(nm, Bounded(var, bound))
                self.spatial.append((var, bound))
        self.stmt(p.body)
        del self.spatial[mark:]
        self.pop()

    # ---------------------------------------------------------------- statements
    def stmts(self, ss: list[A.Stmt]) -> None:
        i = 0
        while i < len(ss):
            s = ss[i]
            if isinstance(s, A.InThreads):
                group = [s]
                while s.is_async and i + 1 < len(ss) and isinstance(ss[i + 1], (A.InThreads, *EVENT_ONLY)):
                    i += 1
                    if isinstance(ss[i], A.InThreads):
                        group.append(ss[i])  # type: ignore[arg-type]
                self.roles(group)
            else:
                self.stmt(s)
            i += 1

    def stmt(self, s: A.Stmt) -> None:
        if isinstance(s, A.Block):
            self.push()
            self.stmts(s.stmts)
            self.pop()
        elif isinstance(s, EVENT_ONLY):
            return
        elif isinstance(s, A.Parallel):
            self.parallel(s)
        elif isinstance(s, A.ScalarDecl):
            self.scalar_decl(s)
        elif isinstance(s, A.SpannedDecl):
            self.spanned_decl(s)
        elif isinstance(s, A.AssignStmt):
            for a in s.items:
                self.assign(a, s)
        elif isinstance(s, A.Foreach):
            self.foreach(s)
        elif isinstance(s, A.If):
            self.if_stmt(s)
        elif isinstance(s, A.DmaStmt):
            self.dma(s)
        elif isinstance(s, A.MmaFill):
            self.mma_fill(s)
        elif isinstance(s, A.MmaLoad):
            self.mma_load(s)
        elif isinstance(s, A.MmaOp):
            self.mma_op(s)
        elif isinstance(s, A.MmaStore):
            self.mma_store(s)
        elif isinstance(s, A.InThreads):
            self.roles([s])
        else:
            raise NotLifted(f"a {type(s).__name__} statement in a contraction", s)

    def scalar_decl(self, s: A.ScalarDecl) -> None:
        for d in s.items:
            init = d.init if d.init is not None else d.fill
            if init is None:
                raise NotLifted("a declaration without a value", d)
            if s.type in FLOATS:
                if not self.is_zero(init):
                    raise NotLifted("an accumulator that does not start at zero", d)
                cells = Cells(s.type, (), (), zero=True, line=s.span.line if s.span else 0)
                self.accs.append(cells)
                cells.guard = tuple(self.guard)
                self.bind(d.name, cells)
            elif s.type in (None, "int") and not d.dims:
                self.bind(d.name, self.value(init))
            else:
                raise NotLifted(f"a '{s.type}' declaration in a contraction", d)

    def spanned_decl(self, s: A.SpannedDecl) -> None:
        if s.shape is None:
            raise NotLifted("a buffer of inferred shape", s)
        shape = tuple(self.int_expr(x) for x in s.shape)
        for d in s.items:
            if s.storage == "local" or (s.storage is None and d.init is None and d.fill is not None):
                dims = [_const(x) for x in shape]
                if any(x is None for x in dims) or d.dims:
                    raise NotLifted("a local array of run-time shape", d)
                fill = d.fill if d.fill is not None else d.init
                cells = Cells(s.elem, tuple(dims), tuple(self.fresh("i") for _ in dims))  # type: ignore[arg-type]
                cells.zero = fill is not None and self.is_zero(fill)
                cells.line = s.span.line if s.span else 0
                self.accs.append(cells)
                cells.guard = tuple(self.guard)
                self.bind(d.name, cells)
            elif s.storage == "shared":
                if d.init is not None or d.fill is not None:
                    raise NotLifted("an initialised shared buffer", d)
                if d.dims:
                    self.bind(d.name, BufferArray(s.elem, shape))
                else:
                    self.bind(d.name, Buffer(s.elem, shape))
            else:
                raise NotLifted(f"a {s.storage or 'global'} buffer inside a contraction", d)

    def is_zero(self, e: A.Expr) -> bool:
        e = _lit(e)
        return (isinstance(e, (A.IntLit, A.FloatLit)) and e.value == 0) or (
            isinstance(e, A.Cast) and self.is_zero(e.expr)
        )

    def assign(self, a: A.Assign, s: A.Stmt) -> None:
        tgt = _lit(a.target)
        line = s.span.line if s.span else 0
        if isinstance(tgt, A.Name) and a.op == "=" and not self.known(tgt.name):
            v = _lit(a.value)  # declaration by assignment (LANGUAGE.md 4.3): a name for a value or view
            self.bind(tgt.name, self.bounded(v) if isinstance(v, A.Binary) and v.op == "#" else self.value(v))
            return
        if isinstance(tgt, A.Name):
            cur = self.lookup(tgt.name, tgt)
            if isinstance(cur, Cells):
                self.update(cur, (), a, line)
                return
            if isinstance(cur, E.Expr) and a.op == "=":
                self.set(tgt.name, self.value(a.value))
                return
            raise NotLifted(f"an assignment to '{tgt.name}'", a)
        if isinstance(tgt, A.At):
            base = self.value(tgt.base)
            idx = tuple(self.int_expr(i) for i in tgt.indices)
            if isinstance(base, Cells):
                self.update(base, idx, a, line)
                return
            if isinstance(base, Region) and a.op == "=":
                v = self.value(a.value)
                if isinstance(v, Cells):
                    v = AccRead(v, ())
                if not isinstance(v, AccRead):
                    raise NotLifted("a store of something other than an accumulator", a)
                self.store(base.elem(idx), v, line)
                return
        raise NotLifted("an assignment the contraction analysis does not know", a)

    def known(self, name: str) -> bool:
        return any(name in sc for sc in self.scopes) or name in self.tensors

    def set(self, name: str, v: Value) -> None:
        for sc in reversed(self.scopes):
            if name in sc:
                sc[name] = v
                return

    def update(self, cells: Cells, idx: tuple[E.Expr, ...], a: A.Assign, line: int) -> None:
        """``acc[idx] += x * y`` (also ``acc = acc + x * y``), or ``acc[idx] = 0`` over an element loop."""
        value = a.value
        if a.op == "=":
            v = _lit(value)
            if self.is_zero(v):
                if cells.terms or (idx and not self.covers_all(cells, idx)):
                    raise NotLifted("an accumulator reset after it was used", a)
                cells.zero = True
                return
            if not (isinstance(v, A.Binary) and v.op == "+"):
                raise NotLifted("an accumulator update that is not a sum", a)
            lhs = self.value(v.lhs)
            if isinstance(lhs, Cells):
                lhs = AccRead(lhs, ())
            if not (isinstance(lhs, AccRead) and lhs.cells is cells and self.same_idx(lhs.idx, idx)):
                raise NotLifted("an accumulator update that is not a sum", a)
            value = v.rhs
        elif a.op != "+":
            raise NotLifted(f"'{a.op}=' on an accumulator", a)
        prod = self.value(value)
        if not isinstance(prod, Prod):
            raise NotLifted("an accumulation of something other than a product of two tensor elements", a)
        if not cells.zero:
            raise NotLifted("an accumulator that does not start at zero", a)
        if tuple(self.guard) != cells.guard:
            raise NotLifted("an accumulation under a condition", a)
        conds = tuple((d, i) for d, i in enumerate(idx))
        cells.terms.append(Term((), prod.a, prod.b, conds))
        self.red_line = self.red_line or line

    def covers_all(self, cells: Cells, idx: tuple[E.Expr, ...]) -> bool:
        loops = {v.name: ext for v, ext in self.spatial}
        for i, n in zip(idx, cells.shape, strict=True):
            f = E.fold(i)
            if not (isinstance(f, E.Var) and f.name in loops and _const(loops[f.name]) == n):
                return False
        return len({repr(E.fold(i)) for i in idx}) == len(idx)

    def same_idx(self, a: tuple[E.Expr, ...], b: tuple[E.Expr, ...]) -> bool:
        return len(a) == len(b) and all(E.same(x, y) for x, y in zip(a, b, strict=True))

    # ---------------------------------------------------------------- loops and branches
    def loop_items(self, s: A.Foreach) -> list[tuple[str, E.Var, E.Expr]]:
        out: list[tuple[str, E.Var, E.Expr]] = []
        for it in s.items:
            if not isinstance(it, A.Within):
                raise NotLifted("a loop over names bounded elsewhere", it)
            shape = self.value(it.shape) if not isinstance(it.shape, A.MdspanLit) else None
            exts = (
                [self.int_expr(x) for x in it.shape.items]
                if isinstance(it.shape, A.MdspanLit)
                else [shape]
                if isinstance(shape, E.Expr)
                else None
            )
            names = it.vars if it.vars is not None else [it.name]
            if exts is None or len(names) != len(exts):
                raise NotLifted("a loop over a shape the contraction analysis does not know", it)
            for nm, ext in zip(names, exts, strict=True):
                assert isinstance(ext, E.Expr)
                out.append((nm or "_", self.fresh(nm or "k", ext), ext))
        return out

    def foreach(self, s: A.Foreach) -> None:
        loops = self.loop_items(s)
        self.push()
        for nm, var, ext in loops:
            self.bind(nm, Bounded(var, ext))
        marks = {id(c): len(c.terms) for c in self.accs}
        stores = len(self.stores)
        self.loops.append(LoopFrame())
        self.spatial.extend((v, ext) for _, v, ext in loops)
        self.stmt(s.body)
        del self.spatial[len(self.spatial) - len(loops) :]
        self.end_loop(s)
        self.pop()
        for _, var, ext in reversed(loops):  # innermost first
            self.close_loop(var, ext, marks, stores, s)

    def end_loop(self, node: A.Node) -> None:
        frame = self.loops.pop()
        if frame.stale & frame.written:
            raise NotLifted("a buffer read in one loop iteration and written for the next (a prefetch)", node)

    def touch(self, buf: Buffer, write: bool) -> None:
        if write:
            buf.guard = tuple(self.guard)
        elif tuple(self.guard[: len(buf.guard)]) != buf.guard:
            raise NotLifted("a buffer read outside the condition it was written under", None)
        for f in self.loops:
            if write:
                f.written.add(id(buf))
            elif id(buf) not in f.written:
                f.stale.add(id(buf))

    def close_loop(self, var: E.Var, ext: E.Expr, marks: dict[int, int], stores: int, node: A.Node) -> None:
        for c in self.accs:
            if id(c) not in marks:
                continue  # declared inside the loop: one accumulator per iteration
            for t_i in range(marks[id(c)], len(c.terms)):
                t = c.terms[t_i]
                c.terms[t_i] = self.close_term(c, t, var, ext, node)
        for st in self.stores[stores:]:
            if any(var.name == v.name for v in _vars_of_store(st)) and not any(
                v.name == var.name for v, _ in st.spatial
            ):
                raise NotLifted("a store inside a reduction loop", node)

    def close_term(self, c: Cells, t: Term, var: E.Var, ext: E.Expr, node: A.Node) -> Term:
        conds = list(t.conds)
        for j, (d, e) in enumerate(conds):
            f = E.fold(e)
            if isinstance(f, E.Var) and f.name == var.name:
                if _const(ext) != c.shape[d]:
                    raise NotLifted("an element loop that does not cover its array", node)
                env = {var.name: c.coords[d]}
                del conds[j]
                return Term(
                    tuple((v, x) for v, x in t.sums),
                    _subst_elem(t.a, env),
                    _subst_elem(t.b, env),
                    tuple((dd, E.substitute(ee, env)) for dd, ee in conds),
                )
        if any(var.name in {v.name for v in E.free_vars(e)} for _, e in conds):
            raise NotLifted("an accumulator indexed by an expression of a loop counter", node)
        return Term(((var, ext), *t.sums), t.a, t.b, t.conds)

    def if_stmt(self, s: A.If) -> None:
        cond = self.bool_expr(s.cond)
        if s.other is not None and not isinstance(s.other, A.Empty):
            raise NotLifted("an if with an else in a contraction", s)
        self.guard.append(cond)
        self.stmt(s.then)  # accumulations check they add no condition (Cells.guard)
        self.guard.pop()

    # ---------------------------------------------------------------- warp roles
    def role_binding(self, cond: A.Expr) -> tuple[str, Bounded, tuple[E.Var, E.Expr] | None]:
        """``v == c`` (the role runs with v = c) or ``v >= c`` / ``v > c`` / ``v != 0`` (v = c + v')."""
        c = _lit(cond)
        if not (isinstance(c, A.Binary) and isinstance(_lit(c.lhs), A.Name)):
            raise NotLifted("a role condition that is not 'index op constant'", cond)
        name = _lit(c.lhs).name  # type: ignore[attr-defined]
        cur = self.lookup(name, c)
        rhs = _const(self.int_expr(c.rhs))
        if not isinstance(cur, Bounded) or rhs is None or _const(cur.bound) is None:
            raise NotLifted("a role condition on something that is not a parallel index", cond)
        bound = int(_const(cur.bound))  # type: ignore[arg-type]
        if c.op == "==":
            return name, Bounded(E.Const(rhs), cur.bound), None
        if c.op in ("<", "<="):
            hi = rhs + (c.op == "<=")
            if not 0 < hi < bound:
                raise NotLifted("a role condition of this form", cond)
            var = self.fresh(name, E.Const(hi))
            return name, Bounded(var, cur.bound), (var, E.Const(hi))
        lo = {">=": rhs, ">": rhs + 1, "!=": 1 if rhs == 0 else None}.get(c.op)
        if lo is None or not 0 < lo < bound:
            raise NotLifted("a role condition of this form", cond)
        var = self.fresh(name, E.Const(bound - lo))
        return name, Bounded(E.fold(var + lo), cur.bound), (var, E.Const(bound - lo))

    def role_bindings(self, cond: A.Expr) -> list[tuple[str, Bounded, tuple[E.Var, E.Expr] | None]]:
        c = _lit(cond)
        if isinstance(c, A.Binary) and c.op == "&&":
            return self.role_bindings(c.lhs) + self.role_bindings(c.rhs)
        return [self.role_binding(c)]

    def roles(self, parts: list[A.InThreads]) -> None:
        """Warp roles in lockstep: every role's statements before its main loop, then the main
        loops as one (each role's body in turn, producers first as written), then the rest."""
        plans = []
        for p in parts:
            binds = self.role_bindings(p.cond)
            body = _flat(p.body)
            body = [s for s in body if not _event_only(s)]
            loops = [i for i, s in enumerate(body) if isinstance(s, A.Foreach)]
            if len(loops) > 1:
                raise NotLifted("a warp role with two main loops", p)
            cut = loops[0] if loops else len(body)
            plans.append((binds, {}, None, body[:cut], body[cut] if loops else None, body[cut + 1 :]))
        mains = [pl[4] for pl in plans if pl[4] is not None]

        def within(plan: tuple, run) -> None:  # type: ignore[type-arg]
            self.scopes.append(plan[1])  # each role keeps its names from one part to the next
            mark = len(self.spatial)
            for name, value, fresh in plan[0]:
                self.bind(name, value)
                if fresh is not None:
                    self.spatial.append(fresh)
            run()
            del self.spatial[mark:]
            self.pop()

        for pl in plans:
            within(pl, lambda pl=pl: self.stmts(pl[3]))
        if mains:
            first = self.loop_items(mains[0])
            for m in mains[1:]:
                other = self.loop_items(m)
                if len(other) != len(first) or not all(E.same(x[2], y[2]) for x, y in zip(first, other, strict=True)):
                    raise NotLifted("warp roles whose main loops differ in their trip counts", m)
            marks = {id(c): len(c.terms) for c in self.accs}
            stores = len(self.stores)
            self.loops.append(LoopFrame())
            self.spatial.extend((v, ext) for _, v, ext in first)
            for pl in plans:
                if pl[4] is None:
                    continue
                items = self.loop_items(pl[4])

                def body(pl=pl, items=items) -> None:  # type: ignore[no-untyped-def]
                    self.push()
                    for (nm, _, _), (_, var, ext) in zip(items, first, strict=True):
                        self.bind(nm, Bounded(var, ext))
                    self.stmt(pl[4].body)
                    self.pop()

                within(pl, body)
            del self.spatial[len(self.spatial) - len(first) :]
            self.end_loop(mains[0])
            for _, var, ext in reversed(first):
                self.close_loop(var, ext, marks, stores, mains[0])
        for pl in plans:
            within(pl, lambda pl=pl: self.stmts(pl[5]))

    # ---------------------------------------------------------------- data movement
    def dma(self, s: A.DmaStmt) -> None:
        if s.op != "copy" or any(at.name in ("sp", "transp") for at in s.attrs):
            raise NotLifted(f"a {s.engine}.{s.op} with these attributes", s)
        src = self.value(s.src)
        line = s.span.line if s.span else 0
        if isinstance(src, (Buffer, View)):
            content = self.buffer_content(src, s)
            dst = self.value(s.dst) if not s.dst_storage else None
            if isinstance(content, list) and isinstance(src, Buffer) and isinstance(dst, Region):
                for placed in content:
                    shape = [E.Const(n) for n in placed.cells.shape]
                    here = {v.name for v, _ in self.spatial}
                    extra = [(v, x) for v, x in placed.spatial if v.name not in here]
                    self.spatial.extend(extra)  # each unit's part of the buffer, copied out together
                    self.store_tile(placed.cells, dst.sub(list(placed.offsets), shape, [True] * len(shape)), line)
                    del self.spatial[len(self.spatial) - len(extra) :]
                return
            raise NotLifted("a copy out of a buffer that is not an output store", s)
        if not isinstance(src, Region):
            raise NotLifted("a copy whose source is not a global view", s)
        if s.dst_storage:
            buf = Buffer(self.tensors[src.tensor].elem, src.shape, src)
        else:
            dst = self.value(s.dst)
            if not isinstance(dst, Buffer):
                raise NotLifted("a copy into something other than a shared buffer", s)
            if len(dst.shape) != len(src.shape) or not all(
                E.same(x, y) for x, y in zip(dst.shape, src.shape, strict=True)
            ):
                raise NotLifted("a copy whose source and destination shapes differ", s)
            dst.content = src
            self.touch(dst, True)
            buf = dst
        if any(at.name == "swiz" for at in s.attrs):
            self.notes.append("swizzle")
        if _const(src.shape[-1]) is not None:
            self.ksteps.append(int(_const(src.shape[-1])))  # type: ignore[arg-type]
        if s.result:
            self.bind(s.result, Future(buf))

    def buffer_content(self, v: Buffer | View, node: A.Node) -> Region | list[Placed]:
        base = v.base if isinstance(v, View) else v
        self.touch(base, False)
        if base.content is None:
            raise NotLifted("a buffer read before anything was copied into it", node)
        if isinstance(v, View):
            if not isinstance(base.content, Region):
                raise NotLifted("a view of an accumulator buffer", node)
            return base.content.sub(list(v.offsets), list(v.shape), list(v.keep))
        return base.content

    def mma_fill(self, s: A.MmaFill) -> None:
        if not self.is_zero(s.value):
            raise NotLifted("an accumulator that does not start at zero", s)
        cells = Cells(s.elem or "f32", (), (), zero=True, line=s.span.line if s.span else 0)
        cells.shape = ()  # the shape comes with the first MMA
        if s.result:
            self.accs.append(cells)
            cells.guard = tuple(self.guard)
            self.bind(s.result, cells)
            return
        cur = self.value(s.target) if s.target is not None else None
        if not isinstance(cur, Cells) or cur.terms:
            raise NotLifted("an mma.fill that re-initialises a used accumulator", s)

    def mma_load(self, s: A.MmaLoad) -> None:
        v = self.operand(s.src, s)
        if s.result:
            self.bind(s.result, v)
        else:
            raise NotLifted("mma.load into a named fragment", s)

    def operand(self, e: A.Expr, node: A.Node) -> Region:
        v = self.value(e)
        if isinstance(v, Future):
            v = v.buffer
        if isinstance(v, (Buffer, View)):
            v = self.buffer_content(v, node)
        if not isinstance(v, Region) or len(v.shape) != 2 or any(_const(x) is None for x in v.shape):
            raise NotLifted("an MMA operand that is not a 2-D tile of a global tensor", node)
        return v

    def mma_op(self, s: A.MmaOp) -> None:
        if s.variant not in ("", "async") or s.extra:
            raise NotLifted(f"mma.{s.variant}", s)
        acc = self.value(s.acc)
        if not isinstance(acc, Cells) or not acc.zero:
            raise NotLifted("an MMA into something other than a zero-filled accumulator", s)
        a, b = self.operand(s.a, s), self.operand(s.b, s)
        # (rows, k) of A and (columns, k) of B in their stored order (LANGUAGE.md 7.9)
        a_mk = s.layout[0] == "row"
        b_nk = s.layout[1] == "row"
        rows, ka = (a.shape[0], a.shape[1]) if a_mk else (a.shape[1], a.shape[0])
        cols, kb = (b.shape[0], b.shape[1]) if b_nk else (b.shape[1], b.shape[0])
        if _const(ka) != _const(kb):
            raise NotLifted("MMA operands with different K extents", s)
        shape = (int(_const(rows)), int(_const(cols)))  # type: ignore[arg-type]
        if not acc.coords:
            acc.shape, acc.coords = shape, (self.fresh("r"), self.fresh("c"))
        elif acc.shape != shape:
            raise NotLifted("an accumulator used with two tile shapes", s)
        if tuple(self.guard) != acc.guard:
            raise NotLifted("an MMA under a condition", s)
        kk = self.fresh("kk", ka)
        r, c = acc.coords
        ea = a.elem((r, kk) if a_mk else (kk, r))
        eb = b.elem((c, kk) if b_nk else (kk, c))
        acc.terms.append(Term(((kk, ka),), ea, eb))
        self.red_line = self.red_line or (s.span.line if s.span else 0)
        self.ksteps.append(int(_const(ka)))  # type: ignore[arg-type]
        if s.result:
            self.bind(s.result, E.Const(0))  # an operation future: waiting on it does nothing here

    def mma_store(self, s: A.MmaStore) -> None:
        if s.variant not in ("", "async") or s.extra:
            raise NotLifted(f"mma.store.{s.variant}", s)
        acc = self.value(s.acc)
        if not isinstance(acc, Cells) or not acc.coords:
            raise NotLifted("an mma.store of something other than an accumulator", s)
        dst = self.value(s.dst)
        line = s.span.line if s.span else 0
        if isinstance(dst, Future):
            dst = dst.buffer
        if isinstance(dst, Buffer):
            dst = View(dst, tuple(E.Const(0) for _ in dst.shape), dst.shape, tuple(True for _ in dst.shape))
        if isinstance(dst, View):
            if not all(dst.keep) or tuple(_const(x) for x in dst.shape) != acc.shape:
                raise NotLifted("an mma.store into a buffer view of another shape", s)
            old = dst.base.content if isinstance(dst.base.content, list) else []
            dst.base.content = [*old, Placed(acc, dst.offsets, tuple(self.spatial))]
            self.touch(dst.base, True)
            return
        if not isinstance(dst, Region):
            raise NotLifted("an mma.store into something other than a view", s)
        self.store_tile(acc, dst, line)

    def store_tile(self, acc: Cells, dst: Region, line: int) -> None:
        if len(dst.shape) != 2 or tuple(_const(x) for x in dst.shape) != acc.shape:
            raise NotLifted("an accumulator stored into a view of another shape", None)
        r, c = self.fresh("sr", E.Const(acc.shape[0])), self.fresh("sc", E.Const(acc.shape[1]))
        self.spatial.extend([(r, E.Const(acc.shape[0])), (c, E.Const(acc.shape[1]))])
        self.store(dst.elem((r, c)), AccRead(acc, (r, c)), line)
        del self.spatial[-2:]

    def store(self, at: Elem, value: AccRead, line: int) -> None:
        self.stores.append(Store(at.tensor, at.index, value, tuple(self.guard), tuple(self.spatial), line))

    # ---------------------------------------------------------------- expressions
    def value(self, e: A.Expr) -> Value:
        e = _lit(e)
        if isinstance(e, A.Name):
            return self.lookup(e.name, e)
        if isinstance(e, A.Member) and e.member == "data":
            v = self.value(e.base)
            if isinstance(v, Future):
                return v.buffer
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
            if isinstance(x, E.Expr) and isinstance(y, E.Expr):
                return E.fold(x * y)
            raise NotLifted("a product that is not of two tensor elements", e)
        if isinstance(e, A.Cast):
            inner = self.value(e.expr)
            if isinstance(inner, (Elem, Prod)) and e.type in FLOATS:
                return inner  # operand conversions: a tensor-core dot computes exact products
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
            base = self.buffer_content(base, e)
        if isinstance(base, Region) and len(idx) == len(base.shape):
            return base.elem(tuple(idx))
        raise NotLifted("an element access the contraction analysis does not know", e)

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
            offs, shape, keep = self.view_parts(list(v.shape), op)
            return v.sub(offs, shape, keep)
        raise NotLifted(f"'.{op.kind}' of something that is not a view", op)

    def view_parts(self, parent: list[E.Expr], op: A.ViewOp) -> tuple[list[E.Expr], list[E.Expr], list[bool]]:
        rank = len(parent)
        keep = [True] * rank
        if op.kind == "sqz":
            return [E.Const(0)] * rank, parent, [_const(x) != 1 for x in parent]
        if op.strides:
            raise NotLifted("a view with explicit strides", op)
        if op.kind == "chunkat":
            args = self.chunk_args(op.args, op)
            if len(args) != rank:
                raise NotLifted("a chunkat whose arguments do not match the rank", op)
            shape = [self.chunk_extent(p, b) for p, (_, b) in zip(parent, args, strict=True)]
            offs = [E.fold(i * s) for (i, _), s in zip(args, shape, strict=True)]
            return offs, shape, keep
        if op.kind == "subspan":
            if len(op.args) != rank:
                raise NotLifted("a subspan whose extents do not match the rank", op)
            shape = [parent[d] if self.is_blank(x) else self.int_expr(x) for d, x in enumerate(op.args)]
            offs: list[E.Expr] = [E.Const(0)] * rank
            if op.at is not None:
                at = self.at_args(op.at, op)
                if len(at) != rank:
                    raise NotLifted("an .at() that does not match the rank", op)
                steps = [self.int_expr(x) for x in op.step] if op.step else shape
                offs = [E.fold(i * s) for i, s in zip(at, steps, strict=True)]
            return offs, shape, keep
        if op.kind == "view" and op.at is None:
            raise NotLifted("a view without .from()", op)
        raise NotLifted(f"the view operation '.{op.kind}' in a contraction", op)

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

    def is_blank(self, x: A.Expr) -> bool:
        return isinstance(_lit(x), A.Name) and _lit(x).name == "_"  # type: ignore[attr-defined]

    def chunk_args(self, args: list[A.Expr], node: A.Node) -> list[tuple[E.Expr, E.Expr]]:
        out: list[tuple[E.Expr, E.Expr]] = []
        for x in args:
            if self.is_blank(x):
                out.append((E.Const(0), E.Const(1)))
                continue
            v = self.bounded(x)
            out.append((v.value, v.bound))
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
            raise NotLifted(f"'{e.name}' used as an integer", e)
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


def _flat(s: A.Stmt) -> list[A.Stmt]:
    return [x for y in s.stmts for x in _flat(y)] if isinstance(s, A.Block) else [s]


def _event_only(s: A.Stmt) -> bool:
    """Statements that only synchronise (event waits and triggers, barriers), loops of them too."""
    if isinstance(s, EVENT_ONLY):
        return True
    if isinstance(s, A.Foreach):
        return all(_event_only(x) for x in _flat(s.body))
    if isinstance(s, A.Block):
        return all(_event_only(x) for x in s.stmts)
    return False


def _subst_elem(x: Elem, env: dict[str, E.Expr]) -> Elem:
    return Elem(x.tensor, tuple(E.substitute(i, env) for i in x.index))


def _vars_of_store(st: Store) -> list[E.Var]:
    out: list[E.Var] = []
    for i in st.index:
        out.extend(E.free_vars(i))
    return out


__all__ = ["Interpreter", "Contraction", "Operand", "replace"]


# ------------------------------------------------------------------ the proof


def _radix(e: E.Expr, domain: dict[str, E.Expr], node: A.Node) -> tuple[E.Expr, set[str]]:
    """The range ``[0, R)`` that ``e`` maps its variables onto one to one, and those variables:
    ``e`` must be ``sum c_i v_i`` whose coefficients, in order, are 1, ext_0, ext_0 * ext_1 ... (a
    mixed-radix number; the coefficients may be expressions, compared by meaning). A variable of
    extent 1 is always 0 and takes no digit."""
    lin = E.linear_terms(e, domain)
    if lin is None or not (isinstance(lin[1], E.Const) and lin[1].value == 0):
        raise NotLifted("an index that is not a mixed-radix number of its variables", node)
    left = {n: c for n, c in lin[0].items() if _const(domain[n]) != 1}
    expect: E.Expr = E.Const(1)
    while left:
        # the next digit: the variable whose coefficient is the product of the extents so far
        # (on a tie, a constant extent first: it cannot be the outermost digit of a run-time one)
        fits = sorted((n for n, c in left.items() if E.same(c, expect)), key=lambda n: _const(domain[n]) is None)
        if not fits:
            raise NotLifted("an index that maps two variables onto one element", node)
        name = fits[0]
        expect = E.fold(expect * domain[name])
        del left[name]
    return expect, set(lin[0])


def covers(r: E.Expr, extent: E.Expr) -> bool:
    """Whether ``r >= extent`` for every value of the sizes (``64 * cdiv(M, 64) >= M``)."""
    lo = E.bounds(E.fold(r - extent))[0]
    if lo is not None and lo >= 0:
        return True
    f = E.fold(r)
    # c * cdiv(X, d) with c >= d and X covering the extent
    parts = [f] if not (isinstance(f, E.Bin) and f.op == "*") else [f.lhs, f.rhs]
    if len(parts) == 2:
        cd = [p for p in parts if isinstance(p, E.CDiv)]
        k = [p for p in parts if isinstance(p, E.Const)]
        if cd and k and isinstance(cd[0].rhs, E.Const) and int(k[0].value) >= int(cd[0].rhs.value):
            return covers(cd[0].lhs, extent)
    if isinstance(f, E.CDiv) and isinstance(f.rhs, E.Const) and f.rhs.value == 1:
        return covers(f.lhs, extent)
    if len(parts) == 2:  # d * cdiv(X, d) >= X, whatever d is
        for p, q in (parts, parts[::-1]):
            if isinstance(q, E.CDiv) and E.same(q.rhs, p):
                return covers(q.lhs, extent)
    return E.same(f, extent)


def _guard_ok(g: E.Expr, index: list[E.Expr], extents: list[E.Expr]) -> bool:
    """A guard that keeps no more than the output's own bounds: ``F_d < X`` with ``X >= extent_d``."""
    for c in E.conjuncts(E.fold(g)):
        c = E.fold(c)
        if isinstance(c, E.Const) and c.value:
            continue
        if not isinstance(c, E.Bin) or c.op not in ("<", ">", "<=", ">="):
            return False
        lhs, rhs = (c.lhs, c.rhs) if c.op in ("<", "<=") else (c.rhs, c.lhs)
        if c.op in ("<=", ">="):
            rhs = E.fold(rhs + 1)
        if not any(E.same(lhs, i) and covers(rhs, x) for i, x in zip(index, extents, strict=True)):
            return False
    return True


def _atoms(e: E.Expr, op: str) -> list[E.Bin]:
    return [n for n in e.walk() if isinstance(n, E.Bin) and n.op == op and E.is_int(n.dtype)]


def _replace(e: E.Expr, old: E.Expr, new: E.Expr) -> E.Expr:
    if type(e) is type(old) and E.same(e, old):
        return new
    if isinstance(e, E.Bin):
        return E.Bin(e.op, _replace(e.lhs, old, new), _replace(e.rhs, old, new))
    if isinstance(e, E.Un):
        return E.Un(e.op, _replace(e.value, old, new))
    if isinstance(e, E.CDiv):
        return E.CDiv(_replace(e.lhs, old, new), _replace(e.rhs, old, new))
    if isinstance(e, E.Cast):
        return E.Cast(_replace(e.value, old, new), e.type)
    return e


def _split_tile_ids(
    index: list[E.Expr],
    x: Elem,
    y: Elem,
    guards: list[E.Expr],
    spatial: dict[str, E.Expr],
    it: Interpreter,
    node: A.Node,
) -> tuple[list[E.Expr], Elem, Elem, list[E.Expr]]:
    """A linear tile id split as ``(t / D, t % D)`` (a persistent tile loop): when ``t`` is a
    mixed-radix number of its own variables guarded by ``t < Q * D``, the pair runs over
    ``[0, Q) x [0, D)`` one to one; it becomes two variables of those extents."""
    for div in {repr(a): a for i in index for a in _atoms(i, "/")}.values():
        t, d = div.lhs, div.rhs
        mod = E.Bin("%", t, d)
        lim = next((g.rhs for g in guards if isinstance(g, E.Bin) and g.op == "<" and E.same(g.lhs, t)), None)
        if lim is None:
            raise NotLifted("a tile index divided by a run-time extent without a bound", node)
        f = E.fold(lim)
        q = None
        if isinstance(f, E.Bin) and f.op == "*":
            q = f.lhs if E.same(f.rhs, d) else f.rhs if E.same(f.lhs, d) else None
        if q is None:
            raise NotLifted("a tile index bound that is not a multiple of its divisor", node)
        rng, used = _radix(t, spatial, node)
        if not covers(rng, f):
            raise NotLifted("a tile loop that leaves tiles out", node)
        qv, rv = it.fresh("tq", q), it.fresh("tr", d)
        for name in used:
            spatial.pop(name)
        spatial[qv.name], spatial[rv.name] = q, d

        def sub(e: E.Expr, div: E.Expr = div, mod: E.Expr = mod, qv: E.Expr = qv, rv: E.Expr = rv) -> E.Expr:
            return E.fold(_replace(_replace(e, div, qv), mod, rv))

        index = [sub(i) for i in index]
        x, y = Elem(x.tensor, tuple(sub(i) for i in x.index)), Elem(y.tensor, tuple(sub(i) for i in y.index))
        guards = [sub(g) for g in guards if not (isinstance(g, E.Bin) and g.op == "<" and E.same(g.lhs, t))]
        if any(v.name in used for e in [*index, *x.index, *y.index, *guards] for v in E.free_vars(e)):
            raise NotLifted("a tile id used other than through its quotient and remainder", node)
    return index, x, y, guards


def prove(it: Interpreter, node: A.Node) -> Contraction:
    if not it.stores:
        raise NotLifted("a kernel that stores nothing", node)
    if len(it.stores) != 1:
        raise NotLifted("an output written by more than one store", node)
    st = it.stores[0]
    cells = st.value.cells
    if not cells.zero or len(cells.terms) != 1 or cells.terms[0].conds:
        raise NotLifted("an accumulator that is not one zero-initialised sum of products", node)
    env = {v.name: i for v, i in zip(cells.coords, st.value.idx, strict=True)}
    term = cells.terms[0]
    x, y = _subst_elem(term.a, env), _subst_elem(term.b, env)
    out_t = it.tensors[st.tensor]
    if st.tensor in (x.tensor, y.tensor):
        raise NotLifted("an output that is also an operand", node)
    spatial = {v.name: ext for v, ext in st.spatial}
    sums = {v.name: ext for v, ext in term.sums}
    index = [E.fold(i) for i in st.index]
    guards = [E.fold(c) for g in st.guard for c in E.conjuncts(E.fold(g))]
    index, x, y, guards = _split_tile_ids(index, x, y, guards, spatial, it, node)
    out_ext = [it.size(d) for d in out_t.extents]
    kinds: list[str] = []
    for i in index:
        in_x = [d for d, j in enumerate(x.index) if E.same(i, j)]
        in_y = [d for d, j in enumerate(y.index) if E.same(i, j)]
        kinds.append("batch" if in_x and in_y else "x" if in_x else "y" if in_y else "?")
    if "?" in kinds or kinds.count("x") != 1 or kinds.count("y") != 1 or kinds.count("batch") > 1:
        raise NotLifted("a store whose index is not (batch,) row, column of the two operands", node)
    if kinds.index("x") > kinds.index("y"):
        x, y = y, x
        kinds = ["batch" if k == "batch" else "y" if k == "x" else "x" for k in kinds]
    used: set[str] = set()
    for d, i in enumerate(index):
        r, vs = _radix(i, spatial, node)
        if used & vs:
            raise NotLifted("two output dimensions indexed by one variable", node)
        used |= vs
        if not covers(r, out_ext[d]):
            raise NotLifted("a tiling that leaves output elements unwritten", node)
    if not all(_guard_ok(g, index, out_ext) for g in guards):
        raise NotLifted("a store guard that is not the output's own bounds", node)

    def operand(e: Elem, free_kind: str) -> tuple[Operand, E.Expr]:
        t = it.tensors[e.tensor]
        dims: dict[str, int] = {}
        for kind, i in zip(kinds, index, strict=True):
            if kind in ("batch", free_kind):
                dims[kind] = next(d for d, j in enumerate(e.index) if E.same(i, j))
        rest = [d for d in range(len(e.index)) if d not in dims.values()]
        if len(rest) != 1 or len(e.index) != len(t.extents):
            raise NotLifted("an operand with more than one contracted dimension", node)
        return Operand(e.tensor, t.elem, len(e.index), dims[free_kind], rest[0], dims.get("batch")), e.index[rest[0]]

    a, ka = operand(x, "x")
    b, kb = operand(y, "y")
    if not E.same(ka, kb):
        raise NotLifted("operands indexed by two different contraction indices", node)
    kr, kvars = _radix(ka, sums, node)
    if kvars != set(sums):
        raise NotLifted("a reduction over a variable that does not index the operands", node)
    for op in (a, b):
        if not covers(kr, it.size(it.tensors[op.tensor].extents[op.inner])):
            raise NotLifted("a reduction that stops before the end of K", node)
    od = {k: d for d, k in enumerate(kinds)}
    out = Operand(st.tensor, out_t.elem, len(index), od["x"], od["y"], od.get("batch"))
    tile = _source_tile(st, spatial, index, od, it)
    seen: dict[str, tuple[E.Expr, int]] = {}
    for x_, d_ in it.assumptions:
        seen.setdefault(f"{x_!r}%{d_}", (x_, d_))
    return Contraction(
        a,
        b,
        out,
        cells.elem,
        tile,
        it.red_line or cells.line,
        st.line,
        tuple(sorted(set(it.notes))),
        tuple(seen.values()),
    )


def _source_tile(
    st: Store, spatial: dict[str, E.Expr], index: list[E.Expr], od: dict[str, int], it: Interpreter
) -> tuple[int, int, int]:
    """Rows and columns one program writes (the coefficient of the block index in each output
    index), and the K step of the source's loads or MMAs."""

    def per_block(e: E.Expr) -> int:
        lin = E.linear(e, spatial)
        block = [c for name, c in (lin[0].items() if lin else []) if _const(spatial[name]) is None]
        return block[0] if block else 1

    bk = max(it.ksteps) if it.ksteps else 1
    return per_block(index[od["x"]]), per_block(index[od["y"]]), bk


def analyse(top: A.Parallel, host: HostScope, prelude: list[A.Stmt] | None = None) -> Contraction:
    """The contraction ``top`` computes, or :class:`NotLifted`; ``prelude``: the host statements
    of the function before it."""
    it = Interpreter(top, host)
    it.host_prelude(prelude or [])
    it.run()
    return prove(it, top)
