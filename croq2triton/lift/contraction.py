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

import contextlib
import copy
from collections.abc import Callable
from dataclasses import replace
from itertools import count

from ..errors import Diagnostic
from ..frontend import ast as A
from ..frontend.describe import describe
from ..frontend.printer import Printer
from ..sema.levels import chain_levels, chains
from ..tir import expr as E
from ..tir.contract import Contraction
from .epilogue import INT_SCALARS, EpilogueEval, start_value, transformed
from .host import HostScope
from .moves import Moves, as_cells
from .notlifted import NotLifted
from .proof import prove
from .races import pipeline_races
from .roles import EVENT_ONLY, Roles
from .stated import stated
from .terms import (
    AccRead,
    Bounded,
    Buffer,
    BufferArray,
    Cells,
    Elem,
    Future,
    LoopFrame,
    Placed,
    Prod,
    Region,
    Scalar,
    Store,
    Term,
    Value,
    WithName,
)  # fmt: skip
from .terms import (
    const_int as _const,
)
from .terms import (
    subst_elem as _subst_elem,
)
from .terms import (
    unparen as _lit,
)
from .views import FLOATS, Expressions

# ------------------------------------------------------------------ the interpreter


class Interpreter(Moves, Roles, Expressions):
    def __init__(self, top: A.Parallel, host: HostScope) -> None:
        self.top = top
        self.host = host
        self.scopes: list[dict[str, Value]] = [{}]
        self.guard: list[E.Expr] = []
        self.spatial: list[tuple[E.Var, E.Expr]] = []  # enclosing parallel indices and element loops
        self.stores: list[Store] = []
        self.pins: dict[str, E.Expr] = {}  # unit indices an ``inthreads (p == c)`` fixes (lift/roles.py)
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
        self.block_vars: set[str] = set()
        self.data: dict[str, Elem] = {}  # values read from integer tensors (`offsets.at(e)`), by variable
        self.lenient = False  # a trial run that skips the statements it cannot run (carrying_slots)
        self.offsets: dict[str, int] = {}  # loop counters of slices `k(1:)`: where their values start
        self.induced: frozenset[int] = frozenset()  # the next loop's LoopFrame.induced
        self.warnings: list[Diagnostic] = []  # the races of its warp roles (lift/races.py)
        self.raced: set[int] = set()  # the parallels whose roles were checked for races

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

    def data_var(self, el: Elem, node: A.Node) -> E.Var:
        """An element of an integer tensor used as an integer (``expert_offset = offsets.at(e)``): a
        variable standing for the value one program reads (its index may use block indices only)."""
        t = self.tensors[el.tensor]
        if t.elem not in ("s32", "s64", "u32", "int") or el.limits:
            raise NotLifted(f"a '{t.elem}' element used as an integer", node)
        if any(v.name not in self.block_vars for i in el.index for v in E.free_vars(i)):
            raise NotLifted("an integer read from a tensor at an index that is not the block's", node)
        for name, old in self.data.items():
            if old.tensor == el.tensor and self.same_idx(old.index, el.index):
                return E.Var(name, "i32")
        name = f"%d{next(self.ids)}"
        self.data[name] = el
        return E.Var(name, "i32")

    def size(self, x: str | int) -> E.Expr:
        return E.Const(x) if isinstance(x, int) else E.Var(x, "i32", 0)

    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    # ---------------------------------------------------------------- driver
    def host_prelude(self, stmts: list[A.Stmt]) -> None:
        """Integer declarations and assignments of the host code before the kernel (``int tiles_n =
        cdiv(N, 128);``, ``tiles = tm * tn;``): their values, as expressions of the sizes (a name
        whose value is not one stays unknown)."""
        for s in stmts:
            if isinstance(s, A.AssignStmt):  # ``tiles = tm * tn;``: a name an assignment declares
                for a in s.items:
                    if not isinstance(a.target, A.Name):
                        continue
                    try:
                        if a.op != "=":
                            raise NotLifted("a compound assignment")
                        self.bind(a.target.name, self.int_expr(a.value))
                    except NotLifted:
                        self.scopes[0].pop(a.target.name, None)
                continue
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
        if id(p) not in self.raced:  # warp roles run in lockstep: where their events order otherwise, say so
            self.raced.add(id(p))
            self.warnings.extend(pipeline_races(self.top, p))
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
                if level == "block":
                    self.block_vars.add(var.name)
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
        if self.lenient and not isinstance(s, A.Block):  # a trial run (carrying_slots): what it cannot run is skipped
            with contextlib.suppress(NotLifted):
                self.run_stmt(s)
            return
        self.run_stmt(s)

    def run_stmt(self, s: A.Stmt) -> None:
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
        elif isinstance(s, A.FragDecl):
            self.frag_decl(s)
        elif isinstance(s, A.MmaLoad):
            self.mma_load(s)
        elif isinstance(s, A.MmaOp):
            self.mma_op(s)
        elif isinstance(s, A.MmaStore):
            self.mma_store(s)
        elif isinstance(s, A.MmaScale):
            self.mma_scale(s)
        elif isinstance(s, A.InThreads):
            self.roles([s])
        elif isinstance(s, A.Apply):
            self.apply(s)
        elif isinstance(s, A.With):
            self.with_stmt(s)
        elif isinstance(s, A.DmaAny):
            self.dma_any(s)
        elif isinstance(s, A.Swap):
            self.swap(s)
        elif isinstance(s, A.CallStmt) and s.call.kind == "atomic" and s.call.name == "__atomic_add":
            self.atomic_add(s)
        else:
            raise NotLifted(f"{describe(s)} in a contraction", s)

    def atomic_add(self, s: A.CallStmt) -> None:
        """``__atomic_add(out.at(m, n), acc)`` of a sum of products as it is (no start value, no
        operation on it): a store that adds the sum to the element (Store.atomic).  Writers that
        differ only in indices the element's does not use (the K ranges of a split-K written by hand)
        add their sums: lift/proof.py makes those indices part of the sum."""
        if len(s.call.args) != 2:
            raise NotLifted("an atomic of this form", s)
        at = self.value(s.call.args[0])
        if not isinstance(at, Elem) or self.tensors[at.tensor].elem != "f32" or at.limits:
            raise NotLifted("an atomic add into something other than an f32 tensor element", s)
        ev = EpilogueEval(self)
        v = ev.expr(s.call.args[1])
        if ev.acc is None or not ev.result(v).plain:
            raise NotLifted("an atomic add of something other than a sum of products", s)
        self.store(at, ev.acc, self.line(s))
        self.stores[-1] = replace(self.stores[-1], atomic=True)

    def scalar_decl(self, s: A.ScalarDecl) -> None:
        for d in s.items:
            init = d.init if d.init is not None else d.fill
            if init is None:
                raise NotLifted("a declaration without a value", d)
            if s.type in FLOATS and not d.dims and not self.assigned(d.name):
                # `f16 w = __to<f16>(wq.at(n, k)) * scale.at(n);`: a name for a product of elements
                # (an operand's factors), never assigned again: the product wherever it is read
                try:
                    named = self.value(init)
                except NotLifted:
                    named = None
                exact = isinstance(named, Prod) or (
                    isinstance(named, Elem) and _holds(self.tensors[named.tensor].elem, str(s.type))
                )  # (a product's rounding to the type, as a tensor-core dot's exact products ignore it)
                if exact:
                    self.bind(d.name, named)
                    continue
            if (s.type in FLOATS or s.type == "s32") and not self.is_zero(init):
                ev = EpilogueEval(self)
                v = ev.convert(ev.expr(init), s.type)
                if (
                    ev.acc is not None
                ):  # `f32 v = out.at(m, n);` where the sum was stored: a value named for the epilogue
                    self.bind(d.name, Scalar(ev.result(v), ev.acc, tuple(ev.stored)))
                    continue
            if s.type in FLOATS or s.type == "s32":  # s32: the accumulator of integer products
                cells = self.new_acc(Cells(s.type, (), (), zero=True, line=self.line(s)))
                if not self.is_zero(init):  # `f32 acc = c.at(m, n);`: it starts there
                    cells.post = start_value(self, cells, init, d)
                self.bind(d.name, cells)
            elif s.type in (None, "int") and not d.dims:
                self.bind(d.name, self.value(init))
            else:
                raise NotLifted(f"a '{s.type}' declaration in a contraction", d)

    def frag_decl(self, s: A.FragDecl) -> None:
        """``frag f32 [16, 16] acc {0.0f}``: an accumulator, as ``acc = mma.fill.f32 0.0f`` makes one,
        of the declared shape (an MMA of another is no contraction: lift/mma.py says what is wrong),
        started at its fill."""
        if s.elem is None or s.shape is None:
            raise NotLifted("a fragment without an element type or a shape", s)
        dims = [_const(self.int_expr(x)) for x in s.shape]
        if len(dims) != 2 or None in dims:
            raise NotLifted("a fragment whose shape is not two constants", s)
        for d in s.items:
            if d.dims or d.init is not None:
                raise NotLifted("an array of fragments or a fragment with an initialiser", d)
            shape, coords = (int(dims[0]), int(dims[1])), (self.fresh("r"), self.fresh("c"))  # type: ignore[arg-type]
            cells = self.new_acc(Cells(s.elem, shape, coords, zero=d.fill is not None, line=self.line(s)))
            if d.fill is not None and not self.is_zero(d.fill):
                cells.post = start_value(self, cells, d.fill, d)
            self.bind(d.name, cells)

    def assigned(self, name: str) -> bool:
        """Whether the kernel assigns a scalar of this name anywhere (``x += ..``, ``x = ..``, ``x++``)."""
        for n in self.top.walk():
            if isinstance(n, A.Assign) and isinstance(_lit(n.target), A.Name) and _lit(n.target).name == name:  # type: ignore[attr-defined]
                return True
            if isinstance(n, A.IncDec) and n.target == name:
                return True
        return False

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
                cells.line = self.line(s)
                self.bind(d.name, self.new_acc(cells))
            elif s.storage == "shared":
                if d.init is not None or d.fill is not None:
                    raise NotLifted("an initialised shared buffer", d)
                if d.dims:
                    self.bind(d.name, BufferArray(s.elem, shape))
                else:
                    self.bind(d.name, Buffer(s.elem, shape))
            else:
                raise NotLifted(f"a {s.storage or 'global'} buffer inside a contraction", d)

    def new_acc(self, cells: Cells) -> Cells:
        """An accumulator declared here, under the conditions around it (its updates may add none)."""
        cells.guard = tuple(self.guard)
        cells.depth = len(self.loops)
        self.accs.append(cells)
        return cells

    def is_zero(self, e: A.Expr) -> bool:
        e = _lit(e)
        return (isinstance(e, (A.IntLit, A.FloatLit)) and e.value == 0) or (
            isinstance(e, A.Cast) and self.is_zero(e.expr)
        )

    def assign(self, a: A.Assign, s: A.Stmt) -> None:
        tgt = _lit(a.target)
        line = self.line(s)
        if isinstance(tgt, A.Name) and a.op == "=" and not self.known(tgt.name):
            v = _lit(a.value)  # declaration by assignment (LANGUAGE.md 4.3): a name for a value or view
            if isinstance(v, A.Binary) and v.op == "#":
                self.bind(tgt.name, self.bounded(v))
                return
            try:
                self.bind(tgt.name, self.value(v))
            except NotLifted:  # a float value (`g = acc.at(i, j) + bias.at(j);`): named for the epilogue
                ev = EpilogueEval(self)
                self.bind(tgt.name, Scalar(ev.evaluate(v), ev.acc, tuple(ev.stored)))
            return
        if isinstance(tgt, A.Name):
            cur = as_cells(self.lookup(tgt.name, tgt))
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
                if self.register_copy(base, tgt, idx, a):
                    return
                self.update(base, idx, a, line)
                return
            if isinstance(base, Region):
                self.store_value(base.elem(idx), a, line)
                return
            if isinstance(base, Buffer):
                self.buffer_write(base, idx, a)
                return
        raise NotLifted("an assignment the contraction analysis does not know", a)

    def register_copy(self, cells: Cells, tgt: A.At, idx: tuple[E.Expr, ...], a: A.Assign) -> bool:
        """``ra.at(u) = as.at(k, ty * 4 + u)`` over an element loop: a local array that nothing has
        added to, given a tile of a tensor (through a staged buffer, or read straight), is a copy of
        that tile in registers (the SGEMM register fragment): from here on the thread's own buffer
        holding that region, as a staged shared buffer does (:meth:`Moves.staged`)."""
        name = _lit(tgt.base)
        if not isinstance(name, A.Name) or cells.terms or cells.post is not None or a.op != "=":
            return False
        if self.is_zero(_lit(a.value)) or cells.coords and self.same_idx(idx, cells.coords):
            return False
        if self.accumulated(name.name):  # (`acc.at(i, j) = c.at(..)` then `acc.at(i, j) += ..`: a start value)
            return False
        buf = Buffer(cells.elem, tuple(E.Const(n) for n in cells.shape))
        region = self.staged(buf, idx, a)
        if region is None:
            return False
        self.touch(buf, True)
        buf.content = region
        buf.guard = tuple(self.guard)
        self.set(name.name, buf)
        return True

    def accumulated(self, name: str) -> bool:
        """Whether the kernel adds to (or otherwise updates from itself) an element of the array ``name``."""
        for n in self.top.walk():
            if not isinstance(n, A.Assign):
                continue
            tgt = _lit(n.target)
            base = _lit(tgt.base) if isinstance(tgt, A.At) else tgt
            if (
                isinstance(base, A.Name)
                and base.name == name
                and (n.op != "=" or any(x.name == name for x in _names(n.value)))
            ):
                return True
        return False

    def known(self, name: str) -> bool:
        return any(name in sc for sc in self.scopes) or name in self.tensors

    def set(self, name: str, v: Value) -> None:
        for sc in reversed(self.scopes):
            if name in sc:
                sc[name] = v
                return

    def update(self, cells: Cells, idx: tuple[E.Expr, ...], a: A.Assign, line: int) -> None:
        """``acc[idx] += x * y`` (also ``acc = acc + x * y``), or ``acc[idx] = 0`` over an element loop."""
        value: A.Expr | None = a.value
        if not idx and cells.coords:
            idx = cells.coords  # `mc += bias`: every element of a fragment
        if a.op == "=":
            v = _lit(a.value)
            if self.is_zero(v):
                self.reset(cells, idx, a)
                return
            value = None
            if isinstance(v, A.Binary) and v.op == "+":
                for mine, other in ((v.lhs, v.rhs), (v.rhs, v.lhs)):  # acc + x * y, or x * y + acc
                    read = self.value(mine) if not self.is_scalar(mine) else None
                    if isinstance(read, Cells):
                        read = AccRead(read, read.coords)
                    if isinstance(read, AccRead) and read.cells is cells and self.same_idx(read.idx, idx):
                        value = other
                        break
            if value is None:
                self.transform(cells, idx, a, "=", a.value)
                return
        elif a.op != "+":
            self.transform(cells, idx, a, a.op, a.value)
            return
        prods = self.products(value)  # `acc += x0 * y0 + x1 * y1` (unrolled K)
        if prods is None:
            self.transform(cells, idx, a, "+", value)
            return
        if not cells.zero:
            raise NotLifted("an accumulator that does not start at zero", a)
        if cells.transformed:
            raise NotLifted("products added to an accumulator after an operation on its sum", a)
        for prod in prods:
            assert isinstance(prod, Prod)
            x, y, more = prod.a, prod.b, prod.scales
            if tuple(self.guard) != cells.guard:
                if not self.only_in_bounds(cells, prod):
                    raise NotLifted("an accumulation under a condition", a)
                x, y = replace(x, zfill=True), replace(y, zfill=True)  # never read outside their tensors
                more = tuple(replace(f, zfill=True) for f in more)
            conds = tuple((d, i) for d, i in enumerate(idx))
            cells.terms.append(Term((), x, y, conds, more))
        self.red_line = self.red_line or line

    def reset(self, cells: Cells, idx: tuple[E.Expr, ...], node: A.Node) -> None:
        """``acc = 0`` (or ``mma.fill acc, 0``) after the accumulator's declaration. The run sees
        each loop body once, so a reset is the start value only where it runs once per element
        before any product: under the accumulator's own conditions, and inside no loop entered
        since its declaration but the element loops whose counters index the elements it resets.
        A reset inside the loop that sums (``foreach k { acc = 0; acc += .. }``) keeps only the
        last iteration: it is not a contraction (the kernel is lowered as written)."""
        if cells.terms or cells.post is not None:
            raise NotLifted("an accumulator reset after it was used", node)
        if tuple(self.guard) != cells.guard:
            raise NotLifted("an accumulator reset under a condition", node)
        if idx and not self.covers_all(cells, idx):
            raise NotLifted("an accumulator reset of some of its elements", node)
        indexed = {f.name for f in (E.fold(i) for i in idx) if isinstance(f, E.Var)}
        for frame in self.loops[cells.depth :]:
            if not frame.counters <= indexed:
                raise NotLifted("an accumulator reset inside a loop (each iteration starts it again)", node)
        cells.zero = True

    def products(self, value: A.Expr) -> list[Prod] | None:
        """The products of tensor elements ``value`` sums, or None where it is not such a sum."""
        out: list[Prod] = []
        for x in _summands(value):
            if self.is_scalar(x):
                return None
            try:
                p = self.value(x)
            except NotLifted:
                return None
            if not isinstance(p, Prod):
                return None
            out.append(p)
        return out

    def is_scalar(self, e: A.Expr) -> bool:
        """Whether ``e`` reads a float scalar parameter (which only an epilogue may)."""
        return any(
            isinstance(n, A.Name)
            and not self.known(n.name)
            and n.name in self.host.scalars
            and self.host.scalars[n.name].elem not in INT_SCALARS  # (sizes index elements: `K - 1 - k`)
            for n in _names(e)
        )

    def transform(self, cells: Cells, idx: tuple[E.Expr, ...], a: A.Assign, op: str, rhs: A.Expr) -> None:
        """``acc op= x`` or ``acc = f(acc)`` that is not an accumulation: before any product, the
        value the accumulator starts from; after its sum, an operation on it (in the scope it was
        declared in, under its own conditions, on every element at once)."""
        if not cells.terms and op == "=" and cells.post is None and self.element_loop(cells, idx, a):
            # `foreach {i, j} in [2, 2] acc.at(i, j) = c.at(..)`: every element's start value, read
            # at its own position (the loop's counters are the element's coordinates)
            env: dict[str, E.Expr] = {}
            for i, c in zip(idx, cells.coords, strict=True):
                f = E.fold(i)
                assert isinstance(f, E.Var)
                env[f.name] = c
            cells.post = start_value(self, cells, self.in_bounds_read(rhs), a).subst_reads(env)
            cells.zero = True
            return
        if not self.same_idx(idx, cells.coords):
            raise NotLifted("an operation on one element of an accumulator array", a)
        if tuple(self.guard) != cells.guard or len(self.loops) != cells.depth:
            raise NotLifted("an operation on an accumulator inside a loop or a condition", a)
        if not cells.terms:
            if op != "=" or cells.post is not None:
                raise NotLifted("an accumulator update that is not a sum of products", a)
            cells.post = start_value(self, cells, self.in_bounds_read(rhs), a)
            cells.zero = True
            return
        cells.post = transformed(self, cells, op, rhs, a)
        cells.transformed = True

    def element_loop(self, cells: Cells, idx: tuple[E.Expr, ...], node: A.Node) -> bool:
        """Whether ``acc.at(idx)`` names every element once, by counters of element loops entered
        since the accumulator's declaration (and only those), under its own conditions: a value
        assigned there is given to each element (as :meth:`reset` gives zero)."""
        if not idx or cells.coords and self.same_idx(idx, cells.coords):
            return False
        if tuple(self.guard) != cells.guard or not self.covers_all(cells, idx):
            return False
        indexed = {f.name for f in (E.fold(i) for i in idx) if isinstance(f, E.Var)}
        return all(frame.counters <= indexed for frame in self.loops[cells.depth :])

    def in_bounds_read(self, e: A.Expr) -> A.Expr:
        """``cond ? x.at(..) : 0`` whose condition only keeps the element inside its tensor (the
        C idiom that reads no element outside): the element itself, which reads zero outside
        (LANGUAGE.md 7.9); any other expression as it is."""
        v = _lit(e)
        if not isinstance(v, A.Ternary) or not self.is_zero(v.other):
            return e
        try:
            el = self.value(v.then)
            conds = E.conjuncts(self.bool_expr(v.cond))
        except NotLifted:
            return e
        if isinstance(el, Elem) and self.own_bounds(conds, [el]):
            return v.then
        return e

    def summed_accs(self, e: A.Expr) -> Cells | None:
        """``s0 + s1`` (two or more scalar accumulators, each a sum of products started at zero and
        with nothing done to it, declared under the conditions and in the loops where it is read):
        one accumulator of all their products (partial sums of one dot product, ``s0`` over even
        elements of K and ``s1`` over odd ones, say). None for any other expression."""
        parts = _summands(e)
        if len(parts) < 2 or any(self.is_scalar(x) for x in parts):
            return None
        found: list[Cells] = []
        for x in parts:
            try:
                v = self.value(x)
            except NotLifted:
                return None
            if not isinstance(v, Cells) or v.coords or not v.zero or v.post is not None or v.transformed:
                return None
            if v.guard != tuple(self.guard) or v.depth != len(self.loops) or any(v is f for f in found):
                return None
            found.append(v)
        if len({c.elem for c in found}) != 1:
            return None
        first = found[0]
        return replace(first, terms=[t for c in found for t in c.terms], line=min(c.line for c in found))

    def only_in_bounds(self, cells: Cells, prod: Prod) -> bool:
        """The conditions an update adds to its accumulator's say only that the product's elements
        lie inside their tensors (``if (k < K) acc += a.at(m, k) * b.at(n, k)``): a read outside a
        tensor is zero (LANGUAGE.md 7.9), so the sum is the same without them."""
        extra = self.guard[len(cells.guard) :]
        if tuple(self.guard[: len(cells.guard)]) != cells.guard:
            return False
        return self.own_bounds([c for g in extra for c in E.conjuncts(g)], [prod.a, prod.b, *prod.scales])

    def own_bounds(self, conds: list[E.Expr], elems: list[Elem]) -> bool:
        """Each condition is ``i < n`` with ``i`` an index of one of ``elems`` and ``n`` its tensor's
        extent there: it only keeps those elements inside their tensors."""
        facts = []
        for el in elems:
            exts = self.tensors[el.tensor].extents
            facts += [(i, self.size(x)) for i, x in zip(el.index, exts, strict=True)]
        for c in conds:
            if not (isinstance(c, E.Bin) and c.op == "<"):
                return False
            if not any(E.same(c.lhs, i) and E.same(E.fold(c.rhs), E.fold(n)) for i, n in facts):
                return False
        return True

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
            if isinstance(it, A.RangeItem):  # `with k in [..] { foreach k {..} }`
                w = self.lookup(it.name, it)
                if not isinstance(w, WithName) or it.has_step:
                    raise NotLifted("a loop over a slice of a bounded name", it)
                lo = _const(self.int_expr(it.lo)) if it.lo is not None else 0
                hi = _const(self.int_expr(it.hi)) if it.hi is not None else 0
                if lo is None or hi is None or lo < 0 or hi > 0:
                    raise NotLifted("a loop over a slice of a bounded name", it)
                ext = E.fold(w.extent + E.Const(hi - lo))  # `k(1:)`: k = 1 + j, j in [0, #k - 1) (LANGUAGE.md 7.2)
                var = self.fresh(it.name, ext)
                if lo:
                    self.offsets[var.name] = lo
                out.append((it.alias or it.name, var, ext))
                continue
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
        carried = self.carried(s)
        if carried:
            self.carrying(s, loops, carried)
            return
        arrays = self.carried_arrays(s)
        if arrays and not self.runs(s, loops):
            self.carrying_slots(s, loops, arrays)
            return
        self.run_foreach(s, loops)

    def trial(self) -> Interpreter:
        """A copy of the interpreter to try a loop on (the kernel's tree and host shared)."""
        return copy.deepcopy(self, {id(self.top): self.top, id(self.host): self.host})

    def runs(self, s: A.Foreach, loops: list[tuple[str, E.Var, E.Expr]]) -> bool:
        try:
            self.trial().run_foreach(s, loops)
        except NotLifted:
            return False
        return True

    def run_foreach(self, s: A.Foreach, loops: list[tuple[str, E.Var, E.Expr]]) -> None:
        self.push()
        for nm, var, ext in loops:
            off = self.offsets.get(var.name, 0)  # a slice `k(1:)`: its values start there
            self.bind(nm, Bounded(E.fold(var + E.Const(off)), E.fold(ext + E.Const(off))) if off else Bounded(var, ext))
        self.loop(loops, lambda: self.stmt(s.body), s)
        self.pop()

    # ---------------------------------------------------------------- futures a loop carries
    def carried(self, s: A.Foreach) -> list[str]:
        """The futures bound before the loop that its body copies into again or swaps (a prefetch:
        ``nxt = dma.copy .. at(bm, k + 1) => shared; ..; swap(cur, nxt);``)."""
        names: list[str] = []
        for n in s.body.walk():
            got = [n.result] if isinstance(n, A.DmaStmt) and n.result else n.names if isinstance(n, A.Swap) else []
            names += [x for x in got if x not in names and isinstance(self.binding(x), Future)]
        # futures read by 'wait' alone (copies into slots of an array, read there): what the body copies into
        # those slots is the arrays' business (carrying_slots); the names a swap moves are read by nothing
        swaps = [n.names for n in self.top.walk() if isinstance(n, A.Swap)]
        waited = {x for x in names if _only_waited(self.top, x)}
        return [x for x in names if x not in waited or any(x in g and not set(g) <= waited for g in swaps)]

    def carried_arrays(self, s: A.Foreach) -> list[str]:
        """The arrays of buffers the loop's body copies into (``=> sa[(k + 1) % 2]``)."""
        names: list[str] = []
        for n in s.body.walk():
            if isinstance(n, A.DmaStmt) and not n.dst_storage:
                d = _lit(n.dst)
                base = _lit(d.base) if isinstance(d, A.Index) else None
                if isinstance(base, A.Name) and isinstance(self.binding(base.name), BufferArray):
                    names += [] if base.name in names else [base.name]
        return names

    def carrying_slots(self, s: A.Foreach, loops: list[tuple[str, E.Var, E.Expr]], arrays: list[str]) -> None:
        """A loop that copies the next step's tile into another slot of an array of buffers than the
        one it reads (``=> sa[(k + 1) % 2]`` while the MMA reads ``sa[k % 2]``), proved by induction on
        the counter ``k``: what the body copies into slot ``W(k)`` (``D(k)``), found by running it once
        on a copy of the interpreter (statements it cannot run skipped), is what slot ``W(k - 1)``
        holds when iteration ``k`` starts, where at ``k = 0`` that is the slot written before the
        loop and what it holds.  The body then runs from those slots alone (the others hold nothing:
        a read of one is not lifted), may not copy into them before reading them (``W(k) != W(j - 1)``
        for the ``k`` tried), and must leave ``D(k + 1)`` in slot ``W(k + 1)``."""
        if len(loops) != 1:
            raise NotLifted("slots carried by a loop over several counters", s)
        var, ext = loops[0][1], loops[0][2]
        trial = self.trial()
        trial.lenient = True
        with contextlib.suppress(NotLifted):
            trial.run_foreach(s, loops)
        hyps: dict[str, list[tuple[E.Expr, Region]]] = {}
        writes: dict[str, list[E.Expr]] = {}
        for name in arrays:
            arr, done = self.binding(name), trial.binding(name)
            assert isinstance(arr, BufferArray) and isinstance(done, BufferArray)
            hyps[name], writes[name] = [], []
            for key, buf in done.slots:
                if var.name not in {v.name for v in E.free_vars(key)} or not isinstance(buf.content, Region):
                    continue
                writes[name].append(key)
                ring = _ring_key(key, var, 0)
                # the copy of step k - j (j <= the ring's size: a tile copied j steps ahead) into slot W(k - j)
                for j in range(1, ring[1] + 1 if ring is not None else 2):
                    start_key = _ring_key(key, var, -j)
                    start_key = (
                        start_key[0]
                        if start_key is not None
                        else E.fold(E.substitute(key, {var.name: E.fold(var - j)}))
                    )
                    start = _region_at(buf.content, var, E.fold(var - j))
                    first_key = E.fold(E.substitute(start_key, {var.name: E.Const(0)}))
                    first = next((b.content for k, b in arr.slots if E.same(k, first_key)), None)
                    if isinstance(first, Region) and _same_region(_region_at(start, var, E.Const(0)), first):
                        hyps[name].append((start_key, start))
        for name in arrays:
            for w in writes[name]:
                for h, _ in hyps[name]:
                    # the slot a step reads and then refills (a ring as deep as its prefetch distance) is the
                    # one its key names: the symbolic run reads and writes it in the order written
                    if not (E.same(E.fold(w), E.fold(h)) or _never_equal(w, h, var)):
                        raise NotLifted(f"a slot of '{name}' copied into in the step that reads it", s)
            arr = self.binding(name)
            assert isinstance(arr, BufferArray)
            arr.slots = [(k, Buffer(arr.elem, arr.shape, r)) for k, r in hyps[name]]
        self.induced = frozenset(id(b) for name in arrays for _, b in self.binding(name).slots)  # type: ignore[union-attr]
        self.run_foreach(s, loops)
        for name in arrays:
            arr = self.binding(name)
            assert isinstance(arr, BufferArray)
            for h, r in hyps[name]:
                ring = _ring_key(h, var, 1)
                nxt = ring[0] if ring is not None else E.fold(E.substitute(h, {var.name: E.fold(var + 1)}))
                got = next((b.content for k, b in arr.slots if E.same(k, nxt)), None)
                if not isinstance(got, Region) or not _same_region(got, _region_at(r, var, E.fold(var + 1))):
                    raise NotLifted(f"a slot of '{name}' that holds another tile in each step", s)
            arr.slots = [
                (E.fold(E.substitute(h, {var.name: ext})), Buffer(arr.elem, arr.shape, _region_at(r, var, ext)))
                for h, r in hyps[name]
            ]

    def content(self, name: str) -> Region | None:
        v = self.binding(name)
        return v.buffer.content if isinstance(v, Future) and isinstance(v.buffer.content, Region) else None

    def carrying(self, s: A.Foreach, loops: list[tuple[str, E.Var, E.Expr]], carried: list[str]) -> None:
        """A loop whose iterations pass futures on (each copies the tile the next one reads): proved by
        induction on the counter ``k``.  A hypothesis ``H(k)`` for what each carried future holds when
        iteration ``k`` starts is found by running the body on copies of the interpreter (``H(k)``:
        what the previous iteration leaves, where that is, at ``k = 0``, what the future holds before
        the loop; a future whose start is still unknown holds its value before the loop meanwhile);
        the body then runs once from ``H(k)``, and must leave ``H(k + 1)``.  A future whose start no
        hypothesis gives holds nothing: a read of it is not lifted."""
        if len(loops) != 1:
            raise NotLifted("futures carried by a loop over several counters", s)
        var = loops[0][1]
        before = {n: self.binding(n) for n in carried}
        v0 = {n: self.content(n) for n in carried}
        hyp: dict[str, Region | None] = {n: None for n in carried}
        for _ in range(len(carried) + 1):
            trial = copy.deepcopy(self, {id(self.top): self.top, id(self.host): self.host})
            for n in carried:
                trial.set(n, _future(before[n], hyp[n] or v0[n]))
            trial.run_foreach(s, loops)
            new: dict[str, Region | None] = {}
            for n in carried:
                end = trial.content(n)
                prev = _region_at(end, var, E.fold(var - 1)) if end is not None else None
                start = _region_at(prev, var, E.Const(0)) if prev is not None else None
                ok = prev is not None and start is not None and v0[n] is not None and _same_region(start, v0[n])
                new[n] = prev if ok else None
            if new == hyp:
                break
            hyp = new
        for n in carried:
            self.set(n, _future(before[n], hyp[n]))
        self.run_foreach(s, loops)
        for n in carried:
            h = hyp[n]
            if h is None:
                continue
            end = self.content(n)
            if end is None or not _same_region(end, _region_at(h, var, E.fold(var + 1))):
                raise NotLifted(f"the future '{n}', which a loop passes on, holds another tile in each iteration", s)
        for n in carried:  # after the loop: what the iteration past the last one would start from
            h = hyp[n]
            self.set(n, _future(before[n], _region_at(h, var, loops[0][2]) if h is not None else None))

    def loop(self, loops: list[tuple[str, E.Var, E.Expr]], run: Callable[[], None], node: A.Node) -> None:
        """Run a loop body once with its counters as variables, then close the counters: spatial
        where they index an accumulator element, reduction variables of its sums otherwise."""
        marks = {id(c): len(c.terms) for c in self.accs}
        for c in self.accs:
            c.scale_mark = len(c.terms)  # a split mma.scale scales the MMAs of its own loop body
        stores = len(self.stores)
        induced, self.induced = self.induced, frozenset()
        self.loops.append(LoopFrame(counters=frozenset(v.name for _, v, _ in loops), induced=induced))
        self.spatial.extend((v, ext) for _, v, ext in loops)
        run()
        del self.spatial[len(self.spatial) - len(loops) :]
        self.end_loop(node)
        for _, var, ext in reversed(loops):  # innermost first
            self.close_loop(var, ext, marks, stores, node)

    def end_loop(self, node: A.Node) -> None:
        frame = self.loops.pop()
        for buf, placed in frame.kept.values():  # (Moves.kept_acc)
            now = buf.content
            if not (isinstance(now, list) and len(now) == 1 and _same_placed(now[0], placed, set(frame.counters))):
                raise NotLifted(
                    "an accumulator carried through a buffer that holds another value at the step's end", node
                )
            buf.content = [
                replace(placed, terms=len(placed.cells.terms))
            ]  # as stored before the loop, the step's terms in
        if (frame.stale & frame.written) - frame.induced:
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
                    tuple(_subst_elem(x, env) for x in t.scales),
                )
        if any(var.name in {v.name for v in E.free_vars(e)} for _, e in conds):
            raise NotLifted("an accumulator indexed by an expression of a loop counter", node)
        return Term(((var, ext), *t.sums), t.a, t.b, t.conds, t.scales)

    def with_stmt(self, s: A.With) -> None:
        """``with k in [n] body``: ``k`` is a bounded name a ``foreach k`` inside iterates."""
        if s.where:
            raise NotLifted("a with whose names are related by 'where'", s)
        self.push()
        for w in s.withins:
            if isinstance(w.shape, A.MdspanLit):
                exts = [self.int_expr(x) for x in w.shape.items]
            else:
                v = self.value(w.shape)
                exts = [v] if isinstance(v, E.Expr) else []
            names = w.vars if w.vars is not None else [w.name]
            if len(names) != len(exts) or any(n is None for n in names):
                raise NotLifted("a with over a shape the contraction analysis does not know", w)
            for nm, ext in zip(names, exts, strict=True):
                self.bind(nm, WithName(ext))  # type: ignore[arg-type]
        self.stmt(s.body)
        self.pop()

    def apply(self, s: A.Apply) -> None:
        """``apply {i, j} in acc.span body``: the body once, on the accumulator's element (i, j)."""
        cells = as_cells(self.lookup(s.frag, s))
        if not isinstance(cells, Cells) or not cells.coords or len(s.vars) != len(cells.coords):
            raise NotLifted("an apply over something other than an accumulator of known shape", s)
        self.push()
        for nm, v, n in zip(s.vars, cells.coords, cells.shape, strict=True):
            self.bind(nm, Bounded(v, E.Const(n)))
        self.stmt(s.body)
        self.pop()

    def if_stmt(self, s: A.If) -> None:
        if s.other is not None and not isinstance(s.other, A.Empty):
            chosen = _chosen_assign(s)
            if chosen is not None:  # `if (c) x = e; else x = f;` is `x = c ? e : f;`
                self.assign(chosen, s)
                return
            raise NotLifted("an if with an else in a contraction", s)
        cond = self.bool_expr(s.cond)
        kept = [c for c in E.conjuncts(cond) if not self.always(c)]
        if not kept:  # (``if (kt * 64 < K)`` in a loop over ``cdiv(K, 64)`` tiles: no condition)
            self.stmt(s.then)
            return
        self.guard.append(E.conj(kept))
        self.stmt(s.then)  # accumulations check they add no condition (Cells.guard)
        self.guard.pop()

    def always(self, c: E.Expr) -> bool:
        """Whether ``c`` holds in every iteration of the loops and parallels around it: ``v * s < e``
        (``v * s + s <= e``: no) with ``v`` a counter over ``[cdiv(e, s)]``, ``s`` a positive
        constant: ``v * s <= (cdiv(e, s) - 1) * s < e`` (``j0 + k * s`` of a counted ``while`` from 0
        as a ``foreach``, lift/whileloops.py)."""
        if not (isinstance(c, E.Bin) and c.op == "<"):
            return False
        lhs, rhs = E.fold(c.lhs), E.fold(c.rhs)
        for v, ext in self.spatial:
            f = E.fold(ext)
            step = _const(f.rhs) if isinstance(f, E.CDiv) else None
            if step is None or step <= 0 or not E.same(E.fold(f.lhs), rhs):
                continue
            if E.same(lhs, E.fold(E.Bin("*", v, E.Const(step)))):
                return True
        return False


def _holds(elem: str, ctype: str) -> bool:
    """Whether every value of ``elem`` is one of the float type ``ctype`` (s8 in f16, f16 in f32)."""
    wide = {"f32": ("f32", "f16", "bf16", "s8", "u8", "s16", "u16", "f8_e4m3", "f8_e5m2"),
            "f16": ("f16", "s8", "u8", "f8_e4m3", "f8_e5m2"), "bf16": ("bf16", "s8", "u8", "f8_e4m3", "f8_e5m2")}  # fmt: skip
    return elem in wide.get(ctype, ())


def _same_placed(x: object, y: Placed, counters: set[str]) -> bool:
    """``x`` is the accumulator ``y`` stored the same way (the same accumulator, offsets and units,
    the ``counters`` of the loop that stores it aside)."""
    if not isinstance(x, Placed) or x.cells is not y.cells or x.transp != y.transp or x.pins != y.pins:
        return False
    if x.terms != len(x.cells.terms):  # (an MMA into it after it was stored)
        return False
    units = [tuple((v, e) for v, e in p.spatial if v.name not in counters) for p in (x, y)]
    same = all(E.same(E.fold(a), E.fold(b)) for a, b in zip(x.offsets, y.offsets, strict=True))
    return same and units[0] == units[1]


def _ring_key(key: E.Expr, var: E.Expr, shift: int) -> tuple[E.Expr, int] | None:
    """A ring's slot key ``(var + c) % n`` (``n`` a positive constant, ``c`` a constant) of step
    ``var + shift``, with its constant reduced into ``[0, n)`` (the slot the ring's step would
    use: the key modulo ``n`` as arithmetic has it, one expression for each slot), and ``n``;
    None for a key of another form."""
    assert isinstance(var, E.Var)
    k = E.fold(key)
    if not (isinstance(k, E.Bin) and k.op == "%" and isinstance(k.rhs, E.Const) and isinstance(k.rhs.value, int)):
        return None
    n = int(k.rhs.value)
    lin = E.linear(k.lhs, [var.name])
    if n <= 0 or lin is None or lin[0] != {var.name: 1} or not isinstance(E.fold(lin[1]), E.Const):
        return None
    c = (int(E.fold(lin[1]).value) + shift) % n  # type: ignore[attr-defined]
    return E.fold(E.Bin("%", E.fold(var + E.Const(c)), E.Const(n))), n


def _only_waited(top: A.Node, name: str) -> bool:
    """Is every read of the future ``name`` in ``top`` a ``wait`` on it (its data read elsewhere)?"""
    waited = {id(x) for n in top.walk() if isinstance(n, A.Wait) for x in n.items}
    return not any(isinstance(n, A.Name) and n.name == name and id(n) not in waited for n in top.walk())


def _never_equal(a: E.Expr, b: E.Expr, var: E.Var, tries: int = 256) -> bool:
    """Whether the slot keys ``a`` and ``b``, expressions of the counter ``var`` alone, differ at each of
    its first ``tries`` values (keys modulo a ring's size repeat within them)."""
    if any(v.name != var.name for v in [*E.free_vars(a), *E.free_vars(b)]):
        return False
    for k in range(tries):
        x, y = (E.fold(E.substitute(e, {var.name: E.Const(k)})) for e in (a, b))
        if not (isinstance(x, E.Const) and isinstance(y, E.Const)) or x.value == y.value:
            return False
    return True


def _future(like: Value | None, content: Region | None) -> Future:
    """A future like ``like`` (its buffer's type and shape) holding ``content``."""
    buf = like.buffer if isinstance(like, Future) else Buffer("", ())
    shape = content.shape if content is not None and not buf.shape else buf.shape
    return Future(Buffer(buf.elem, shape, content))


def _region_at(r: Region, var: E.Var, value: E.Expr) -> Region:
    """``r`` with ``value`` for the variable ``var``."""

    def f(e: E.Expr) -> E.Expr:
        return E.fold(E.substitute(e, {var.name: value}))

    steps = None if r.steps is None else tuple(f(x) for x in r.steps)
    limits = tuple((d, f(lo), f(hi)) for d, lo, hi in r.limits)
    return Region(r.tensor, tuple(f(x) for x in r.origin), r.axes, tuple(f(x) for x in r.shape), limits, r.zfill,
                  r.reshaped, steps)  # fmt: skip


def _same_region(a: Region, b: Region) -> bool:
    def same(xs: tuple[E.Expr, ...], ys: tuple[E.Expr, ...]) -> bool:
        return len(xs) == len(ys) and all(E.same(E.fold(x), E.fold(y)) for x, y in zip(xs, ys, strict=True))

    return (
        a.tensor == b.tensor
        and a.axes == b.axes
        and a.zfill == b.zfill
        and a.reshaped is None
        and b.reshaped is None
        and same(a.origin, b.origin)
        and same(a.shape, b.shape)
        and (a.steps is None) == (b.steps is None)
        and (a.steps is None or b.steps is None or same(a.steps, b.steps))
        and len(a.limits) == len(b.limits)
        and all(
            d1 == d2 and same((lo1, hi1), (lo2, hi2))
            for (d1, lo1, hi1), (d2, lo2, hi2) in zip(a.limits, b.limits, strict=True)
        )
    )


def _chosen_assign(s: A.If) -> A.Assign | None:
    """``if (c) x = e; else x = f;`` (one plain assignment to the same target in each branch, braces
    or not) as the assignment ``x = c ? e : f`` (each branch's value evaluated only where chosen);
    None for any other ``if``."""

    def one(b: A.Stmt | None) -> A.Assign | None:
        while isinstance(b, A.Block) and len(b.stmts) == 1:
            b = b.stmts[0]
        if isinstance(b, A.AssignStmt) and len(b.items) == 1 and b.items[0].op == "=":
            return b.items[0]
        return None

    then, other = one(s.then), one(s.other)
    if then is None or other is None:
        return None
    try:
        if Printer().expr(then.target) != Printer().expr(other.target):
            return None
    except NotImplementedError:
        return None
    return A.Assign(then.target, "=", A.Ternary(s.cond, then.value, other.value, span=s.span), span=s.span)


def _names(e: A.Expr) -> list[A.Name]:
    return [n for n in e.walk() if isinstance(n, A.Name)]


def _vars_of_store(st: Store) -> list[E.Var]:
    out: list[E.Var] = []
    for i in st.index:
        out.extend(E.free_vars(i))
    return out


def analyse(top: A.Parallel, host: HostScope, prelude: list[A.Stmt] | None = None) -> Contraction:
    """The contraction ``top`` computes, or :class:`NotLifted`; ``prelude``: the host statements
    of the function before it."""
    it = Interpreter(top, host)
    it.host_prelude(prelude or [])
    it.run()
    c = prove(it, top)
    return replace(c, stated=stated(top, host.constants, set(host.tensors), c.line), warnings=tuple(it.warnings))


def _summands(e: A.Expr) -> list[A.Expr]:
    e = _lit(e)
    if isinstance(e, A.Binary) and e.op == "+":
        return _summands(e.lhs) + _summands(e.rhs)
    return [e]
