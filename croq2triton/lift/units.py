"""MMAs of several units, each with its own accumulator (LANGUAGE.md 7.9, ownership), as a mixin
of the kernel lifter (lift/kernel.py).

Under ``parallel {g0, g1} by [2, 2] : group`` every warp owns an accumulator tile, and the
block's result is the concatenation of the warps' tiles (``output.chunkat(m # g0, n # g1)``).
Lifted, a unit index is a symbol (a scalar ``0 <= g < n`` that no statement of the kernel may
keep): a view whose origin along a dimension is ``base + g * w`` with ``w`` its extent there is,
over all units, the window ``base .. base + n * w`` (a part ``buf.subspan(64, ..).at(wg, 0)`` of a
buffer, the units' parts tiling it, is the whole buffer).  An MMA whose A rows are concatenated
over some units and whose B columns over others computes, for every pair of units, the product
of their tiles: the tile of the concatenated accumulator at those units' rows and columns, so one
dot over the concatenated operands is every unit's MMA.  Its store must place the units' tiles
the same way.  A symbol left anywhere else (an element access by the unit index, a unit that
appears in K, a unit the MMA does not place) raises :class:`NotLifted`.
"""

from __future__ import annotations

from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from ..tir import nodes as N
from .buffers import BufferView
from .notlifted import NotLifted
from .terms import Bounded, Region, const_int

Placing = tuple[str | None, ...]  # per kept dimension of a view: the unit symbol concatenated along it


class Units:
    scopes: list[dict[str, Any]]
    body: list[N.Stmt]
    units: dict[str, int]
    unit_depth: int
    pinned: dict[str, int]
    threads: int
    unit_threads: dict[int, int]
    fresh: Any
    stmts: Any
    level_vars: Any
    fixed_bound: Any

    def unit_scope(self, levels: list[A.PBy], body: list[A.Stmt]) -> None:
        """A parallel of units (warps, warpgroups) that each run MMAs on their own tiles."""
        scope: dict[str, Any] = {}
        syms: list[str] = []
        threads = 1
        for var, bound_node in self.level_vars(levels):
            n = self.fixed_bound(bound_node)
            if n is None or n < 1:
                raise NotLifted("a unit level whose extent is not a constant", bound_node)
            sym = E.Var(self.fresh(var or "unit"), "i32", lo=0, hi=n - 1)
            if var:
                scope[var] = Bounded(sym, E.Const(n))
            self.units[sym.name] = n
            syms.append(sym.name)
            threads *= n
        threads *= max((self.unit_threads.get(id(b), 1) for b in levels), default=1)
        self.threads = max(self.threads, threads)
        self.scopes.append(scope)
        start = len(self.body)
        several = int(any(self.units[x] > 1 for x in syms))  # (one unit: its fragments are the block's)
        self.unit_depth += several
        try:
            self.stmts(body)
        finally:
            self.unit_depth -= several
        self.scopes.pop()
        for s in N.walk(self.body[start:]):
            for e in N.exprs_of(s) + [v for v in N.defines(s)]:
                if any(v.name in syms for v in E.free_vars(e)):
                    raise NotLifted("a unit index used other than to place its MMAs' tiles", levels[0])

    def unit_pick(self, s: A.InThreads) -> dict[str, int] | None:
        """``{unit symbol: u}`` where ``s`` is ``inthreads (g == u)`` of one unit of a unit level, or
        a conjunction of such equalities on several unit indices (``g0 == 0 && g1 == 0``: the
        elected unit of a grid of units); each ``g`` affine in the unit index (``inthreads ((p1# +
        1) == 2)`` of a collapsed role); None for any other condition."""
        if not self.units or s.is_async:
            return None
        cond = E.fold(self.expr(s.cond).expr)  # type: ignore[attr-defined]
        terms: list[E.Expr] = []
        stack = [cond]
        while stack:
            t = stack.pop()
            if isinstance(t, E.Bin) and t.op in ("&", "&&", "and") and not t.shape:
                stack += [t.lhs, t.rhs]
            else:
                terms.append(t)
        picked: dict[str, int] = {}
        for t in terms:
            one = self.one_unit(t)
            if one is None or one[0] in picked:
                return None
            picked[one[0]] = one[1]
        return picked

    def one_unit(self, cond: E.Expr) -> tuple[str, int] | None:
        """``(g, u)`` where ``cond`` is ``g == u`` (``u`` -1 where no unit satisfies it)."""
        if not (isinstance(cond, E.Bin) and cond.op == "==" and not cond.shape):
            return None
        syms = [v.name for v in E.free_vars(cond) if v.name in self.units]
        if len(syms) != 1 or len(E.free_vars(cond)) != 1:
            return None
        lin = E.linear(E.fold(E.Bin("-", cond.lhs, cond.rhs)), syms)
        if lin is None or not isinstance(lin[1], E.Const) or set(lin[0]) != set(syms):
            return None
        k, rest = lin[0][syms[0]], int(lin[1].value)
        return (syms[0], -rest // k) if rest % k == 0 else (syms[0], -1)

    def picked_unit(self, s: A.InThreads, picked: dict[str, int]) -> None:
        """The body of ``inthreads (g == u)`` as unit ``u``'s work: the unit index is ``u`` in it and
        an accumulator of the units read there is unit ``u``'s tile of it (lift/mma.py); a unit the
        level does not have runs nothing.  The lifted program does every unit's work, so no branch."""
        if any(not 0 <= u < self.units[sym] for sym, u in picked.items()):
            return
        scope = {
            name: Bounded(E.Const(picked[b.value.name]), b.bound)
            for sc in self.scopes
            for name, b in sc.items()
            if isinstance(b, Bounded) and isinstance(b.value, E.Var) and b.value.name in picked
        }
        self.pinned.update(picked)
        self.scopes.append(scope)
        try:
            self.stmt(s.body)  # type: ignore[attr-defined]
        finally:
            self.scopes.pop()
            for sym in picked:
                del self.pinned[sym]

    def concat_region(self, p: Region, node: A.Node) -> tuple[Region, Placing]:
        """A window over the units that place their tiles along its dimensions (see the module)."""
        if not self.units:
            return p, tuple(None for _ in p.axes)
        if p.reshaped is not None:
            raise NotLifted("a span_as view that several units copy", node)
        if p.steps is not None:
            raise NotLifted("a view with explicit strides in the code of units", node)
        origin = list(p.origin)
        shape = list(p.shape)
        placing: list[str | None] = []
        for c, d in enumerate(p.axes):
            o, sym, n = self.unit_term(origin[d], shape[c], node)
            origin[d] = o
            if sym is not None:
                shape[c] = E.Const(n * const_int(shape[c]))  # type: ignore[operator]
            placing.append(sym)
        kept = set(p.axes)
        if any(self.uses_units(origin[d]) for d in range(len(origin)) if d not in kept) or any(
            self.uses_units(x) for _, lo, hi in p.limits for x in (lo, hi)
        ):
            raise NotLifted("a window that a unit index moves along a dimension it does not keep", node)
        return Region(p.tensor, tuple(origin), p.axes, tuple(shape), p.limits), tuple(placing)

    def concat_view(self, p: BufferView, node: A.Node) -> tuple[BufferView, Placing]:
        """A part of a buffer over the units whose parts tile it along a dimension."""
        if not self.units:
            return p, tuple(None for _ in p.axes)
        offsets, shape = list(p.offsets), list(p.shape)
        placing: list[str | None] = []
        for d in range(len(offsets)):
            o, sym, n = self.unit_term(offsets[d], shape[d], node)
            offsets[d] = o
            if sym is not None:
                if not p.keep[d]:
                    raise NotLifted("a part of a buffer that a unit index picks along a dropped dimension", node)
                shape[d] = E.Const(n * const_int(shape[d]))  # type: ignore[operator]
            if p.keep[d]:
                placing.append(sym)
        return BufferView(p.buffer, tuple(offsets), tuple(shape), p.keep), tuple(placing)

    def unit_term(self, offset: E.Expr, extent: E.Expr, node: A.Node) -> tuple[E.Expr, str | None, int]:
        """``base + g * w`` (``w`` the extent): (base, g, the units of g); (offset, None, 1) without one."""
        names = [v.name for v in E.free_vars(offset) if v.name in self.units]
        if not names:
            return offset, None, 1
        lin = E.linear(E.fold(offset), names)
        w = const_int(extent)
        if lin is None or len(names) != 1 or w is None or lin[0].get(names[0]) != w:
            raise NotLifted("a view a unit index moves other than by its own extent", node)
        return E.substitute(offset, {names[0]: E.Const(0)}), names[0], self.units[names[0]]

    def uses_units(self, e: E.Expr) -> bool:
        return any(v.name in self.units for v in E.free_vars(e))
