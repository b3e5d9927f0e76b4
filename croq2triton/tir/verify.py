"""The tile-IR verifier: what must hold of every kernel before it is emitted.

* every variable is defined before it is read (arguments, program ids, ``Let``, loads, loop
  variables); a variable defined in a loop body is local to it unless the loop carries it, one
  defined in one branch of an ``If`` only where both branches define it;
* every block shape is a power of two in each dimension (Triton's rule for tensors);
* every access stays inside its tensor: for each dimension, the index is provably within
  ``[0, extent)`` from the bounds, or the access's mask contains the term that keeps it there
  (``index < extent``, ``index >= 0``);
* loads, stores and dots name arguments of the right kind.

A failure is an internal error of the translator (the lifting built a bad kernel), reported with
the kernel, the statement and its ``.co`` line.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import expr as E
from . import nodes as N


class VerifyError(Exception):
    """A kernel that breaks an invariant of the IR (a translator bug, not a user error)."""


def verify(kernel: N.Kernel) -> None:
    _Verifier(kernel).run()


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


class _Verifier:
    def __init__(self, kernel: N.Kernel) -> None:
        self.kernel = kernel
        self.args = {a.name: a for a in kernel.args}
        self.lets: dict[str, E.Expr] = {}  # Let-bound names -> their values (themselves expanded)
        self.lanes: dict[str, E.Var] = {}  # Let-bound lane axes (tl.arange)
        self.facts: list[E.Expr] = []  # conditions of the enclosing ifs' then-branches
        self.grid_facts: list[E.Expr] = []  # a program id is below its grid extent: ``pid < M``
        for pid, extent in zip(kernel.program_ids, kernel.grid, strict=False):
            if not isinstance(extent, E.Var):
                continue
            for a in kernel.args:
                if isinstance(a, N.Scalar) and isinstance(a.host, E.Var) and a.host.name == extent.name:
                    self.grid_facts.append(E.Bin("<", pid, E.Var(a.name, a.dtype)))

    def fail(self, msg: str, stmt: N.Stmt | None = None) -> VerifyError:
        where = f" (statement at .co line {stmt.line}: {type(stmt).__name__})" if stmt is not None else ""
        return VerifyError(f"kernel {self.kernel.name}: {msg}{where}")

    def run(self) -> None:
        scope = set(self.args)
        for v in self.kernel.program_ids:
            scope.add(v.name)
        for g in self.kernel.grid:
            self.shapes(g, None)
        self.block(self.kernel.body, scope)

    # -------------------------------------------------------------- definitions
    def block(self, stmts: list[N.Stmt], scope: set[str]) -> set[str]:
        """Check ``stmts`` with ``scope`` defined; returns the names defined after them."""
        scope = set(scope)
        for s in stmts:
            for e in N.exprs_of(s):
                self.reads(e, scope, s)
                self.shapes(e, s)
            self.access(s)
            if isinstance(s, N.Assign) and s.var.name not in scope:
                raise self.fail(f"'{s.var.name}' is assigned before it is defined", s)
            if isinstance(s, (N.For, N.While)):
                # a name the body re-binds holds another value on each trip: its first value says nothing
                self.forget(x.var.name for x in N.walk(s.body) if isinstance(x, N.Assign))
                if isinstance(s, N.While) and (s.cond.name not in scope or s.cond.shape or s.cond.type != "i1"):
                    raise self.fail(f"the condition '{s.cond.name}' of a while loop is not a defined scalar flag", s)
                inner = self.block(s.body, scope | ({s.var.name} if isinstance(s, N.For) else set()))
                # after the loop (of no trip, or of several) a name it re-binds holds either value
                self.forget(x.var.name for x in N.walk(s.body) if isinstance(x, N.Assign))
                for v in s.carried:
                    if v.name not in scope:
                        raise self.fail(f"loop-carried '{v.name}' is not defined before the loop", s)
                del inner
            elif isinstance(s, N.If):
                known = E.conjuncts(self.expand(s.cond))
                self.facts += known
                a = self.block(s.then, scope)
                del self.facts[len(self.facts) - len(known) :]
                b = self.block(s.orelse, scope)
                # a name either branch re-binds holds one branch's value or the other's after the if
                self.forget(x.var.name for x in N.walk([*s.then, *s.orelse]) if isinstance(x, N.Assign))
                self.same_types(s)
                scope |= a & b
            for v in N.defines(s):
                if not isinstance(s, N.For):
                    scope.add(v.name)
                    self.shapes(v, s)
            if isinstance(s, N.Assign):
                value = self.expand(s.value)
                self.forget([s.var.name])
                if self.fixed(value):
                    self.lets[s.var.name] = value
            elif not isinstance(s, N.Let):
                self.forget(v.name for v in N.defines(s))
            if isinstance(s, N.Let):
                value = self.expand(s.value)
                self.forget([s.var.name])
                if E.is_lane(s.value):
                    self.lanes[s.var.name] = s.var
                elif s.var.lo is not None and E.bounds(value)[0] is None:
                    pass  # the builder states the range of this name (a tile index) where its value cannot show it
                else:
                    self.lets[s.var.name] = value
        return scope

    def fixed(self, value: E.Expr) -> bool:
        """Is ``value`` of program ids, arguments and lane axes only (the same wherever it is read,
        so a name assigned it stands for it until it is assigned again)?"""
        fixed = {v.name for v in self.kernel.program_ids} | set(self.args) | set(self.lanes)
        return not E.is_lane(value) and all(v.name in fixed for v in E.free_vars(value))

    def forget(self, names: Iterable[str]) -> None:
        """Names re-bound (a mutable a loop advances, a value loaded again): their Let value no longer
        stands for them, so bounds and masks see the names themselves."""
        for name in names:
            self.lets.pop(name, None)
            self.lanes.pop(name, None)

    def same_types(self, s: N.If) -> None:
        """Triton merges the variables of both branches: one defined in both must have one type."""
        then = {v.name: v for x in N.walk(s.then) for v in N.defines(x)}
        other = {v.name: v for x in N.walk(s.orelse) for v in N.defines(x)}
        for name in then.keys() & other.keys():
            a, b = then[name], other[name]
            if (a.type, a.shape) != (b.type, b.shape):
                raise self.fail(
                    f"'{name}' is {a.type}{list(a.shape)} in one branch and {b.type}{list(b.shape)} in the other", s
                )

    def expand(self, e: E.Expr) -> E.Expr:
        """``e`` with the values of Let-bound names substituted, so bounds see through them."""
        return E.substitute(e, self.lets)

    def reads(self, e: E.Expr, scope: set[str], s: N.Stmt) -> None:
        for v in E.free_vars(e):
            if v.name not in scope:
                raise self.fail(f"'{v.name}' is read before it is defined", s)

    def shapes(self, e: E.Expr, s: N.Stmt | None) -> None:
        for n in e.walk():
            for d in n.shape:
                if isinstance(d, E.Extent):
                    arg = self.args.get(d.name)
                    if not (isinstance(arg, N.Constexpr) and arg.size is not None):
                        raise self.fail(f"block extent '{d.name}' is not a constexpr argument fixed at launch", s)
                elif not _pow2(d):
                    raise self.fail(f"block shape {list(n.shape)} is not a power of two in every dimension", s)

    # -------------------------------------------------------------- accesses
    def access(self, s: N.Stmt) -> None:
        if isinstance(s, (N.Load, N.Store, N.Atomic)):
            self.in_bounds(s, s.base, s.index, s.mask)
        elif isinstance(s, (N.TmaLoad, N.TmaStore)):
            if not isinstance(self.args.get(s.desc), N.Descriptor):
                raise self.fail(f"'{s.desc}' is not a tensor descriptor argument", s)
            if not isinstance(self.args.get(s.flag), N.Constexpr):
                raise self.fail(f"'{s.flag}' is not a constexpr argument", s)
            self.access(s.fallback)

    def in_bounds(self, s: N.Stmt, base: str, index: tuple[E.Expr, ...], mask: E.Var | None) -> None:
        arg = self.args.get(base)
        if isinstance(arg, N.Scratch):
            if len(index) != 1:
                raise self.fail(f"scratch area '{base}' takes one flat index", s)
            return  # sized by the launcher for the program's buffers
        if not isinstance(arg, N.Pointer):
            raise self.fail(f"'{base}' is not a pointer argument", s)
        if len(index) != len(arg.extents):
            raise self.fail(f"{len(index)} index(es) for '{arg.tensor}' of rank {len(arg.extents)}", s)
        # (a constant broadcast to the lanes is the constant in the terms as in the index: ``j < N`` of
        # a counter that starts as ``tl.zeros``)
        terms = [_scalar_consts(t) for t in E.conjuncts(self.expand(mask))] if mask is not None else []
        terms += self.grid_facts
        if any(_never(t) for t in terms):  # a mask that is false everywhere: nothing is accessed
            return
        for d, (i, extent) in enumerate(zip(index, arg.extents, strict=True)):
            i = _unbroadcast(self.expand(i))
            upper = E.fold(E.Bin("<", i, extent))
            lower = E.fold(E.Bin(">=", i, E.Const(0)))
            # an enclosing if may state it for the extreme lanes (schedule/interior.py)
            top, low = E.extreme(i, self.lanes, True), E.extreme(i, self.lanes, False)
            if top is not None and _holds(E.fold(E.Bin("<", top, extent)), self.facts):
                upper = E.Const(True, "i1")
            if low is not None and _holds(E.fold(E.Bin(">=", low, E.Const(0))), self.facts):
                lower = E.Const(True, "i1")
            if not _holds(upper, terms) and not self.kept_below(i, extent, terms):
                raise self.fail(f"index {d} of '{arg.tensor}' may reach its extent and no mask term keeps it inside", s)
            if not _holds(lower, terms) and not self.kept_below(E.Const(-1), i, terms):
                raise self.fail(f"index {d} of '{arg.tensor}' may be negative and no mask term keeps it inside", s)

    def kept_below(self, i: E.Expr, limit: E.Expr, terms: list[E.Expr]) -> bool:
        """``i < limit`` wherever the mask's ``terms`` and the enclosing conditions hold, from the
        bounds the terms give (``4 * e + t + 1 < 9`` under ``e < 2``, ``t`` below 4)."""
        facts = [self.expand(f) for f in self.facts] + terms
        top = E.bounds_under(E.fold(E.Bin("-", i, limit)), facts)[1]
        return top is not None and top < 0


def _scalar_consts(e: E.Expr) -> E.Expr:
    """``e`` with each integer constant broadcast to a shape (``tl.zeros([32], tl.int32)``) the
    constant itself, as :func:`_unbroadcast` writes an index."""
    if isinstance(e, E.Full) and isinstance(e.value, int) and not isinstance(e.value, bool) and e.type != "i1":
        return E.Const(e.value, e.type)
    return E.map_children(e, _scalar_consts)


def _unbroadcast(e: E.Expr) -> E.Expr:
    """``i + tl.zeros(...)`` (an index broadcast to the lanes that store it) as ``i``: the same values;
    also where the broadcast is a term inside a sum (``(2 * b - ty + tl.zeros(..)) + 1``)."""
    if isinstance(e, E.Bin) and e.op == "+":
        for x, y in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(y, E.Full) and y.value == 0:
                return _unbroadcast(x)
    if isinstance(e, E.Full) and isinstance(e.value, int):  # a constant index broadcast: the constant
        return E.Const(e.value, e.type)
    if isinstance(e, E.Bin) and e.op in ("+", "-"):
        lhs, rhs = _unbroadcast(e.lhs), _unbroadcast(e.rhs)
        if lhs is not e.lhs or rhs is not e.rhs:
            return E.Bin(e.op, lhs, rhs)
    return e


def _never(term: E.Expr) -> bool:
    """Is the mask term false for every lane (``False``, or a block of them)?"""
    term = E.fold(term)
    if isinstance(term, E.Const):
        return not term.value
    return isinstance(term, E.Full) and not term.value


def _holds(cond: E.Expr, terms: list[E.Expr]) -> bool:
    if isinstance(cond, E.Const):
        return bool(cond.value)
    return any(E.fold(t) == cond or _same_compare(t, cond) for t in terms)


def _same_compare(term: E.Expr, cond: E.Expr) -> bool:
    if not (isinstance(term, E.Bin) and isinstance(cond, E.Bin) and term.op == cond.op):
        return False
    return E.same(term.lhs, cond.lhs) and E.same(term.rhs, cond.rhs)
