"""Host control flow (LANGUAGE.md 9.1) in the host IR, as a mixin of the launcher lifting
(lift/launcher.py): ``if`` / ``while`` / ``foreach`` around host statements and launches, and the
names of a ``with``.

A condition known when translating keeps only the branch it takes; a nested block sees the
names of the enclosing ones, and the names it declares end with it (assignments to enclosing
launcher variables are statements of the block).  A ``foreach`` counter is a fresh launcher
variable (``_i1``); over a multi-dimensional shape one name is an index tuple of counters.
"""

from __future__ import annotations

from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from ..tir import host as H
from .exits import exits_here
from .hostexpr import HostExprs, const
from .hostvalues import Bounded, BoundedTuple, ITuple
from .names import safe
from .terms import where_refusal


class HostFlow(HostExprs):
    """Nested host blocks; the launcher lifting supplies statements and launcher variables."""

    body: list[H.Stmt]
    in_flow: int  # depth of host blocks (control flow, 'with', device regions)
    loops: int  # depth of host loops
    nest_flags: list[str | None]  # per host loop, the flag a 'break' of a foreach nest sets (or None)
    uid: int
    stmt: Any
    variable: Any
    counter_bounds: dict[str, E.Expr]

    def scoped(self, body: A.Stmt) -> tuple[H.Stmt, ...]:
        """The statements of a nested host block: names it declares are not seen after it;
        assignments to the enclosing launcher variables are."""
        saved, outer = dict(self.names), self.body
        self.body = []
        self.in_flow += 1
        try:
            self.stmt(body)
            return tuple(self.body)
        finally:
            self.in_flow -= 1
            self.names = saved
            self.body = outer

    def if_(self, s: A.If) -> None:
        cond = self.evaluate(s.cond)
        if isinstance(cond, E.Const):  # decided when translating: only the branch taken is lifted
            branch = s.then if cond.value else s.other
            if branch is not None:
                self.body.extend(self.scoped(branch))
            return
        then = self.scoped(s.then)
        orelse = self.scoped(s.other) if s.other is not None else ()
        self.body.append(H.If(H.CScalar(cond), then, orelse, line=line_of(s)))

    def while_(self, s: A.While) -> None:
        cond = self.evaluate(s.cond)
        if isinstance(cond, E.Const) and not cond.value:
            return
        self.loops += 1
        self.nest_flags.append(None)
        body = self.scoped(s.body)
        self.nest_flags.pop()
        self.loops -= 1
        self.body.append(H.While(const(True) if isinstance(cond, E.Const) else H.CScalar(cond), body, line=line_of(s)))

    def foreach(self, s: A.Foreach) -> None:
        loops: list[tuple[str, E.Expr, str | None]] = []  # (name, bound, index tuple it belongs to)
        slices: dict[str, tuple[E.Expr, int]] = {}  # a range slice's name -> its first value and step
        slice_bounds: dict[str, E.Expr] = {}  # a range slice's name -> the bound of the name it slices
        for it in s.items:
            if isinstance(it, A.RangeItem):  # over the names of an enclosing 'with'
                target = self.names.get(it.name)
                parts = target.parts if isinstance(target, BoundedTuple) else (target,)
                if (it.sliced or it.alias is not None) and isinstance(target, Bounded):
                    name, trip, first, step = self.range_slice(it, target)
                    loops.append((name, trip, None))
                    slices[name] = (first, step)
                    slice_bounds[name] = target.bound
                    continue
                if it.sliced or it.alias is not None or not all(isinstance(p, Bounded) for p in parts):
                    raise self.error(f"a host-level 'foreach' over '{it.name}' cannot be lowered yet", it)
                tup = it.name if isinstance(target, BoundedTuple) else None
                loops.extend((p.name, p.bound, tup) for p in parts if isinstance(p, Bounded))
                continue
            bounds = self.shape([it.shape])
            if it.vars is not None and len(it.vars) != len(bounds):
                raise self.error(f"{len(it.vars)} name(s) but a shape of rank {len(bounds)}", it)
            if it.vars is not None:
                loops.extend((n or "_", b, None) for n, b in zip(it.vars, bounds, strict=True))
            else:  # one name over a multi-dimensional shape: an index tuple
                tup = it.name if len(bounds) > 1 else None
                loops.extend((f"{it.name}_{k}" if tup else it.name or "_", b, tup) for k, b in enumerate(bounds))
        saved = dict(self.names)
        values: list[H.Stmt] = []  # the values of range slices' names, first in the innermost body
        counters: list[tuple[str, E.Expr]] = []
        tuples: dict[str, list[E.Expr]] = {}
        for name, bound, tup in loops:
            self.uid += 1
            var = f"_{safe(name)}{self.uid}"
            counters.append((var, bound))
            counter = self.variable(var, "int", nonneg=True)
            if isinstance(bound, E.Const):  # its largest value too (tir/hostc.py: no wrap where none is needed)
                counter = E.Var(counter.name, counter.type, lo=0, hi=int(bound.value) - 1)
            self.counter_bounds[var] = bound  # a chunkat of a host-level copy tiles by it (lift/hostcopy.py)
            if tup is not None:
                tuples.setdefault(tup, []).append(counter)
            if name in slices:  # ``c = v(lo:hi:step)``: lo + step * the counter, a variable of its own
                first, step = slices[name]
                self.uid += 1
                value = self.variable(f"_{safe(name)}{self.uid}", "int")
                values.append(H.Let(value.name, H.CScalar(E.fold(E.Bin("+", first, E.Bin("*", counter, const(step)))))))
                self.counter_bounds[value.name] = slice_bounds[name]  # (``#c``: the with's bound)
                self.names[name] = value
            elif tup is None or not name.startswith(f"{tup}_"):
                self.names[name] = counter
        for tup, items in tuples.items():
            self.names[tup] = ITuple(tuple(items))
        # a foreach over several names is one statement of nested loops: a 'break' leaves all of them
        # (LANGUAGE.md 7.4: the innermost foreach), through a flag each outer loop tests after its inner one
        flag: str | None = None
        if len(counters) > 1 and exits_here(s.body, A.Break):
            self.uid += 1
            flag = f"_left{self.uid}"
            self.variable(flag, "bool")
            self.body.append(H.Let(flag, H.CScalar(const(False)), line=line_of(s)))
        self.loops += 1
        self.nest_flags.append(flag)
        body = (*values, *self.scoped(s.body))
        self.nest_flags.pop()
        self.loops -= 1
        self.names = saved
        for k, (var, bound) in enumerate(reversed(counters)):
            if k and flag is not None:
                body = (*body, H.If(H.CScalar(E.Var(flag, "i1")), (H.Break(line=line_of(s)),), line=line_of(s)))
            body = (H.For(var, bound, body, line=line_of(s)),)
        self.body.extend(body)

    def range_slice(self, it: A.RangeItem, target: Bounded) -> tuple[str, E.Expr, E.Expr, int]:
        """``foreach c = v(lo:hi:step)`` over a host-level ``with`` name ``v`` below ``n``
        (LANGUAGE.md 7.4): ``c`` takes ``lo, lo + step, ..`` below ``n + hi``; its name, its trip
        count (none where ``n + hi <= lo``), its first value and its step."""
        first = self.evaluate(it.lo) if it.lo is not None else const(0)
        stop = E.fold(E.Bin("+", target.bound, self.evaluate(it.hi))) if it.hi is not None else target.bound
        step = 1
        if it.has_step and it.step is not None:
            known = E.fold(self.evaluate(it.step))
            if not isinstance(known, E.Const) or not isinstance(known.value, int):
                raise self.error("a loop's step must be an integer literal", it.step)
            if known.value < 1:
                raise self.error(
                    f"a loop step of {known.value} over '{it.name}' (only steps of 1 or more translate)",
                    it.step,
                    "give a step of 1 or more, or leave it out (1)",
                )
            step = int(known.value)
        span = E.Bin("-", stop, first)
        trip = E.fold(E.Bin("max", E.CDiv(span, const(step)) if step > 1 else span, const(0)))
        return it.alias or it.name, trip, first, step

    def with_(self, s: A.With) -> None:
        """Bounded index names (value 0 until a ``foreach`` over them), seen only in the body."""
        refused = where_refusal(s)
        if refused is not None:
            msg, node, hint = refused
            raise self.error(f"croq2triton does not translate {msg}", node, hint)
        saved = dict(self.names)
        try:
            for wi in s.withins:
                bounds = self.shape([wi.shape])
                names = wi.vars if wi.vars is not None else [wi.name] if len(bounds) == 1 else None
                if names is None:  # one name over several dims: a tuple of unnamed parts
                    parts = tuple(Bounded(f"{wi.name}_{k}", const(0), b) for k, b in enumerate(bounds))
                    self.names[wi.name or "_"] = BoundedTuple(wi.name or "_", parts)
                    continue
                if len(names) != len(bounds):
                    raise self.error(f"{len(names)} name(s) but a shape of rank {len(bounds)}", wi)
                parts = tuple(Bounded(n or "_", const(0), b) for n, b in zip(names, bounds, strict=True))
                for part in parts:
                    self.names[part.name] = part
                if wi.vars is not None and wi.name:
                    self.names[wi.name] = BoundedTuple(wi.name, parts)
            self.body.extend(self.scoped(s.body))
        finally:
            self.names = saved


def line_of(node: A.Node) -> int:
    """The .co line of ``node`` (0: none)."""
    return node.span.line if node.span else 0
