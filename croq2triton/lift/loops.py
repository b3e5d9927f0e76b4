"""Lifting ``foreach`` and ``with`` (LANGUAGE.md 7.4) into tile-IR loops, as a mixin of the kernel
lifter (lift/kernel.py).

``foreach x in n`` (and ``foreach {a, b} in [n, m]``, nested left to right) is a loop of the program
over ``0 .. n``; ``with {k} in [n] { .. foreach k { .. } }`` names ``k`` first and iterates it
later; a slice ``foreach c = k(lo:hi)`` runs from ``lo`` to ``n + hi``.  Inside the loop the counter
is a bounded variable (``#x`` is ``n``, it may tile a ``chunkat``).  Unroll and vectorise suffixes
are hints and change nothing.

Triton carries the variables a loop assigns from one iteration to the next, each with one type and
shape: every buffer in scope is bound before the loop, and a value whose shape or type would change
inside it (a scalar that becomes a tile) raises :class:`NotLifted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import TileBuffer
from .notlifted import NotLifted
from .terms import Bounded, WithName, const_int


@dataclass(frozen=True)
class Counter:
    name: str  # the name the body sees
    start: E.Expr
    stop: E.Expr
    extent: E.Expr  # its bound (``#name``)


class Loops:
    """``foreach`` / ``with``; the lifter supplies scopes, statements and expressions."""

    scopes: list[dict[str, Any]]
    body: list[N.Stmt]
    lets: list[tuple[E.Expr, E.Var]]
    expr: Any
    stmt: Any
    lookup: Any
    claim: Any
    emit: Any
    tile_value: Any
    lanes: tuple[int, tuple[int, ...]] | None
    folded_k_loop: Any
    stated_pipelines: dict[int, N.Pipeline]

    def with_stmt(self, s: A.With) -> None:
        if s.where:
            raise NotLifted("a with whose names are related by 'where'", s)
        scope: dict[str, Any] = {}
        for w in s.withins:
            for nm, ext in self.named_extents(w):
                if nm is not None:
                    scope[nm] = WithName(ext)
        self.scopes.append(scope)
        self.stmt(s.body)
        self.scopes.pop()

    def named_extents(self, w: A.Within) -> list[tuple[str | None, E.Expr]]:
        """``i in n`` / ``{a, b} in [n, m]``: each name with its extent."""
        names = w.vars if w.vars is not None else [w.name]
        extents = self.extents(w.shape)
        if w.vars is not None and w.name is not None or len(names) != len(extents):
            raise NotLifted("a loop or with over a shape of this form", w)
        return list(zip(names, extents, strict=True))

    def extents(self, shape: A.Expr) -> list[E.Expr]:
        items = shape.items if isinstance(shape, A.MdspanLit) else [shape]
        out = []
        for x in items:
            v = self.expr(x)
            if v.expr.shape or v.ctype not in ("int", "s32", "s64", "u32", "u64"):
                raise NotLifted("a loop extent that is not a block-level integer", x)
            out.append(E.fold(v.expr))
        return out

    def counters(self, s: A.Foreach) -> list[Counter]:
        out: list[Counter] = []
        for it in s.items:
            if isinstance(it, A.RangeItem):
                w = self.lookup(it.name, it)
                if not isinstance(w, WithName) or it.has_step:
                    raise NotLifted("a loop over a name not bounded by 'with', or with a step", it)
                start = self.extents(it.lo)[0] if it.lo is not None else E.Const(0)
                stop = E.fold(w.extent + self.extents(it.hi)[0]) if it.hi is not None else w.extent
                out.append(Counter(it.alias or it.name, start, stop, w.extent))
                continue
            for nm, ext in self.named_extents(it):
                out.append(Counter(nm or "_", E.Const(0), ext, ext))
        return out

    def foreach(self, s: A.Foreach) -> None:
        if self.folded_k_loop(s):  # MMAs on chunks of K (lift/mma.py)
            return
        self.loop_nest(self.counters(s), s.body, s)

    def loop_nest(self, counters: list[Counter], body: A.Stmt, node: A.Node) -> None:
        if not counters:
            self.stmt(body)
            return
        c = counters[0]
        for b in self.buffers():  # buffers are carried by the loop: bound before it
            self.tile_value(b, node)
        self.per_thread(node)
        lo, hi = const_int(c.start), const_int(c.stop)
        var = E.Var(self.claim(c.name), "i32", lo=lo if lo is not None else 0, hi=hi - 1 if hi is not None else None)
        before = self.values()
        outer, saved_lets = self.body, list(self.lets)
        self.body = []
        self.scopes.append({c.name: Bounded(var, c.extent)} if c.name != "_" else {})
        self.loop_nest(counters[1:], body, node)
        self.scopes.pop()
        inner, self.body, self.lets = self.body, outer, saved_lets
        carried = [b.var for b in self.buffers()] + self.rebound(before, "a loop", node)
        pipeline = self.stated_pipelines.get(id(node)) if len(counters) == 1 else None  # the innermost loop
        self.emit(N.For(var, c.start, c.stop, E.Const(1), inner, pipeline, tuple(carried)), node)

    def rebound(self, before: dict[str, Value], region: str, node: A.Node) -> list[E.Var]:
        """The variables of the values in scope ``before`` a loop or branch that it re-binds, each
        with its variable, type and shape (Triton carries them so), else :class:`NotLifted`."""
        out: list[E.Var] = []
        for name, old in before.items():
            new = self.values().get(name)
            if new is None or new is old:
                continue
            if not (isinstance(new.expr, E.Var) and isinstance(old.expr, E.Var)) or (
                (new.expr.name, new.expr.type, new.expr.shape) != (old.expr.name, old.expr.type, old.expr.shape)
            ):
                raise NotLifted(f"'{name}' changes its type or shape inside {region}", node)
            out.append(new.expr)
        return out

    def per_thread(self, node: A.Node) -> None:
        """Each thread's own values (declared inside a thread level) as tiles over all its lanes,
        so that a loop may make them vary by lane (``acc += x.at(r, k # t)``) with one shape."""
        if self.lanes is None:
            return
        depth, shape = self.lanes
        if all(n == 1 for n in shape):  # one lane: its values are the block's
            return
        for sc in self.scopes[depth:]:
            for name, v in list(sc.items()):
                if not (isinstance(v, Value) and isinstance(v.expr, E.Var)) or v.expr.shape == shape:
                    continue
                old = v.expr
                wide = E.Var(old.name, old.type, dims=shape)
                sc[name] = Value(wide, v.ctype)
                last = next((x for x in reversed(self.body) if old.name in (d.name for d in N.defines(x))), None)
                if isinstance(last, N.Let) and isinstance(last.value, E.Const):  # ``f32 acc = 0.0f``
                    last.var, last.value = wide, E.Full(shape, last.value.value, old.type)
                    continue
                zero = E.Full(shape, False if old.type == "i1" else 0, old.type)
                self.emit(N.Let(wide, E.Bin("|" if old.type == "i1" else "+", old, zero)), node)

    def buffers(self) -> list[TileBuffer]:
        """The register tiles of the buffers in scope (those in scratch memory carry nothing)."""
        return [v for sc in self.scopes for v in sc.values() if isinstance(v, TileBuffer) and v.home is None]

    def values(self) -> dict[str, Value]:
        """The scalar and tile values in scope, by name (the innermost binding of each)."""
        out: dict[str, Value] = {}
        for sc in self.scopes:
            for name, v in sc.items():
                if isinstance(v, Value):
                    out[name] = v
        return out
