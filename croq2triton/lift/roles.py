"""Warp roles of the contraction analysis (``inthreads.async``): each role's statements before
its main loop, the main loops in lockstep as one, then the rest (a mixin of its interpreter)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from .notlifted import NotLifted
from .terms import Bounded, LoopFrame
from .terms import const_int as _const
from .terms import unparen as _lit

EVENT_ONLY = (A.Wait, A.Trigger, A.EventDecl, A.Sync, A.MmaCommit, A.Empty, A.PragmaStmt)


@dataclass
class _Role:
    """One ``inthreads.async`` role: the index bindings its condition states, its names, and its
    statements before, in and after its main loop."""

    binds: list[tuple[str, Bounded, tuple[E.Var, E.Expr] | None]]
    pins: dict[str, E.Expr]
    scope: dict[str, Any]
    before: list[A.Stmt]
    main: A.Foreach | None
    after: list[A.Stmt]


class Roles:
    scopes: list[dict[str, Any]]
    spatial: list[tuple[E.Var, E.Expr]]
    accs: list[Any]
    stores: list[Any]
    loops: list[LoopFrame]
    lookup: Any
    int_expr: Any
    fresh: Any
    bind: Any
    stmts: Any
    stmt: Any
    loop_items: Any
    offsets: dict[str, int]
    loop: Any
    pins: dict[str, E.Expr]
    bool_expr: Any
    always: Any
    guard: list[E.Expr]

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

    def role_pins(self, cond: A.Expr) -> dict[str, E.Expr]:
        """The unit variables a condition fixes: ``p == c`` where ``p`` is, in the enclosing role,
        ``v + lo`` of a variable ``v`` that ranges over its units (``inthreads.async (p > 0)``
        makes ``p = v + 1``): inside, ``v`` is ``c - lo``. A store there is that unit's, and the
        terms of an accumulator built for every unit are read at that value."""
        c = _lit(cond)
        if isinstance(c, A.Binary) and c.op == "&&":
            return {**self.role_pins(c.lhs), **self.role_pins(c.rhs)}
        if not (isinstance(c, A.Binary) and c.op == "==" and isinstance(_lit(c.lhs), A.Name)):
            return {}
        cur = self.lookup(_lit(c.lhs).name, c)  # type: ignore[attr-defined]
        rhs = _const(self.int_expr(c.rhs))
        if not isinstance(cur, Bounded) or rhs is None:
            return {}
        units = {v.name for v, _ in self.spatial}
        free = [v for v in E.free_vars(cur.value) if v.name in units]
        if len(free) != 1:
            return {}
        lin = E.linear(E.fold(cur.value), [free[0].name])
        if lin is None or lin[0].get(free[0].name) != 1 or _const(lin[1]) is None:
            return {}
        return {free[0].name: E.Const(rhs - int(_const(lin[1])))}  # type: ignore[arg-type]

    def roles(self, parts: list[A.InThreads]) -> None:
        """Warp roles in lockstep: every role's statements before its main loop, then the main
        loops as one (each role's body in turn, producers first as written), then the rest."""
        plans = []
        for p in parts:
            pins = self.role_pins(p.cond)
            binds = self.role_bindings(p.cond)
            body = flat(p.body)
            body = [s for s in body if not event_only(s)]
            loops = [i for i, s in enumerate(body) if isinstance(s, A.Foreach)]
            if len(loops) > 1:
                raise NotLifted("a warp role with two main loops", p)
            cut = loops[0] if loops else len(body)
            plans.append(_Role(binds, pins, {}, body[:cut], body[cut] if loops else None, body[cut + 1 :]))
        plans = _producers_first(plans)
        mains = [pl.main for pl in plans if pl.main is not None]

        def within(plan: _Role, run: Callable[[], None], levels: list[dict[str, Any]] | None = None) -> None:
            self.scopes.append(plan.scope)  # each role keeps its names from one part to the next
            self.scopes.extend(levels or [])  # ... and those of the loop bodies it is inside
            mark = len(self.spatial)
            pins = dict(self.pins)
            self.pins.update(plan.pins)
            for name, value, fresh in plan.binds:
                plan.scope[name] = value
                if fresh is not None:
                    self.spatial.append(fresh)
            run()
            del self.spatial[mark:]
            self.pins = pins
            del self.scopes[len(self.scopes) - len(levels or []) :]
            self.pop()

        for pl in plans:
            within(pl, lambda pl=pl: self.stmts(pl.before))
        if mains:
            first = self.loop_items(mains[0])
            if any(var.name in self.offsets for _, var, _ in first):
                raise NotLifted("a warp role's main loop over a slice", mains[0])
            for m in mains[1:]:
                other = self.loop_items(m)
                if len(other) != len(first) or not all(E.same(x[2], y[2]) for x, y in zip(first, other, strict=True)):
                    raise NotLifted("warp roles whose main loops differ in their trip counts", m)
            parts = [(pl, [], [pl.main]) for pl in plans if pl.main is not None]
            self.lockstep(parts, within)  # type: ignore[arg-type]
        for pl in plans:
            within(pl, lambda pl=pl: self.stmts(pl.after))

    def lockstep(
        self,
        parts: list[tuple[_Role, list[dict[str, Any]], list[A.Stmt]]],
        within: Callable[..., None],
    ) -> None:
        """Roles' statements in lockstep: where each role's statements hold one loop (or one ``if``
        around one) with the same trip count (the same condition), the statements before it role by
        role, then the loops as one, each iteration every role's body in turn, producers first as
        written (and so on inside: a persistent kernel's tile loop around its K loop), then the
        statements after it; anywhere else each role's statements in turn (what its events order)."""
        splits = [_split(stmts) for _, _, stmts in parts]
        mains = [sp[1] for sp in splits]
        kind = type(mains[0]) if mains[0] is not None else None
        if kind is None or any(type(m) is not kind for m in mains):
            for pl, levels, stmts in parts:
                within(pl, lambda stmts=stmts: self.stmts(stmts), levels)
            return
        for (pl, levels, _), (before, _, _) in zip(parts, splits, strict=True):
            within(pl, lambda before=before: self.stmts(before), levels)
        found: list[list[tuple[str, E.Var, E.Expr]]] = []
        conds: list[E.Expr] = []
        for (pl, levels, _), m in zip(parts, mains, strict=True):
            if isinstance(m, A.Foreach):
                within(pl, lambda m=m: found.append(self.loop_items(m)), levels)
            else:
                within(pl, lambda m=m: conds.append(E.fold(self.bool_expr(m.cond))), levels)  # type: ignore[attr-defined]
        first = found[0] if found else []
        same = all(
            len(o) == len(first) and all(E.same(x[2], y[2]) for x, y in zip(first, o, strict=True)) for o in found
        ) and all(E.same(c, conds[0]) for c in conds)
        if not same:  # each role's loop and what follows it in turn
            for (pl, levels, _), (_, m, after) in zip(parts, splits, strict=True):
                within(pl, lambda m=m, after=after: self.stmts([m, *after]), levels)
            return
        if found:
            if any(var.name in self.offsets for items in found for _, var, _ in items):
                raise NotLifted("a warp role's loop over a slice", mains[0])

            def bodies() -> None:  # each role's loop body in turn, on the shared counters
                inner = []
                for (pl, levels, _), m, items in zip(parts, mains, found, strict=True):
                    scope = {nm: Bounded(var, ext) for (nm, _, _), (_, var, ext) in zip(items, first, strict=True)}
                    inner.append((pl, [*levels, scope], flat(m.body)))  # type: ignore[union-attr]
                self.lockstep(inner, within)

            self.loop(first, bodies, mains[0])
        else:
            kept = [c for c in E.conjuncts(conds[0]) if not self.always(c)]
            self.guard.extend([E.conj(kept)] if kept else [])
            self.lockstep([(pl, [*lv, {}], flat(m.then)) for (pl, lv, _), m in zip(parts, mains, strict=True)], within)  # type: ignore[union-attr]
            del self.guard[len(self.guard) - bool(kept) :]
        for (pl, levels, _), (_, _, after) in zip(parts, splits, strict=True):
            within(pl, lambda after=after: self.stmts(after), levels)


def _producers_first(plans: list[_Role]) -> list[_Role]:
    """The roles in an order where one whose main loop copies into a buffer that another's main
    loop reads runs first (what the events order: a consumer written before its producer,
    ``inthreads.async (wg == 0)`` the MMAs and ``(wg == 1)`` the copies); otherwise as written."""

    def copied(pl: _Role) -> set[str]:
        out: set[str] = set()
        for n in pl.main.walk() if pl.main is not None else []:
            if isinstance(n, A.DmaStmt) and not n.dst_storage:
                out |= {x.name for x in n.dst.walk() if isinstance(x, A.Name)}
                if n.result:
                    out.add(n.result)
        return out

    def read(pl: _Role) -> set[str]:
        names: set[str] = set()
        for n in pl.main.walk() if pl.main is not None else []:
            if isinstance(n, (A.MmaOp, A.MmaLoad, A.At)):
                names |= {x.name for x in n.walk() if isinstance(x, A.Name)}
        return names

    writes = [copied(pl) for pl in plans]
    reads = [read(pl) for pl in plans]
    out: list[_Role] = []
    left = list(range(len(plans)))
    while left:
        # the first role (as written) that reads nothing another role left to run copies
        ready = [i for i in left if not any(j != i and writes[j] & reads[i] - writes[i] for j in left)]
        pick = ready[0] if ready else left[0]
        out.append(plans[pick])
        left.remove(pick)
    return out


def _holds_loop(s: A.Stmt) -> bool:
    if isinstance(s, A.Foreach):
        return True
    if isinstance(s, A.If) and (s.other is None or isinstance(s.other, A.Empty)):
        return any(_holds_loop(x) for x in flat(s.then))
    return False


def _split(stmts: list[A.Stmt]) -> tuple[list[A.Stmt], A.Stmt | None, list[A.Stmt]]:
    """A role's statements around its one loop (or one ``if`` holding loops): before, it, after."""
    body = [s for s in stmts if not event_only(s)]
    at = [i for i, s in enumerate(body) if _holds_loop(s)]
    if len(at) != 1:
        return stmts, None, []
    return body[: at[0]], body[at[0]], body[at[0] + 1 :]


def flat(s: A.Stmt) -> list[A.Stmt]:
    return [x for y in s.stmts for x in flat(y)] if isinstance(s, A.Block) else [s]


def event_only(s: A.Stmt) -> bool:
    """Statements that only synchronise (event waits and triggers, barriers), loops of them too."""
    if isinstance(s, EVENT_ONLY):
        return True
    if isinstance(s, A.Foreach):
        return all(event_only(x) for x in flat(s.body))
    if isinstance(s, A.Block):
        return all(event_only(x) for x in s.stmts)
    return False
