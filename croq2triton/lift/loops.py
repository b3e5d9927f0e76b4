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

from ..errors import CroqSemanticError, Diagnostic
from ..frontend import ast as A
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import BufferArray, TileBuffer, view_shape
from .maps import map_counters
from .notlifted import NotLifted
from .terms import Bounded, IndexTuple, ShapeName, WithName, const_int, unparen, where_refusal


@dataclass(frozen=True)
class Counter:
    name: str  # the name the body sees
    start: E.Expr
    stop: E.Expr
    extent: E.Expr  # its bound (``#name``)
    step: int = 1  # ``v(lo:hi:step)``: every step-th value from lo (LANGUAGE.md 7.4)


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
    loop_depth: int
    lanes_over: Any
    touches_owned: Any
    binding: Any
    place: Any
    size: Any
    args: Any
    fresh: Any
    host: Any
    int_expr: Any
    name_value: Any
    exact: dict[str, tuple[int, int]]
    pred: list[E.Expr]
    forget: Any
    varying: Any
    warnings: list[Diagnostic]

    def with_stmt(self, s: A.With) -> None:
        refused = where_refusal(s)
        if refused is not None:
            raise NotLifted(*refused)
        scope: dict[str, Any] = {}
        for w in s.withins:
            pairs, tuples = self.named_extents(w)
            for nm, ext in pairs:
                scope[nm] = WithName(ext)
            scope.update(tuples)
        self.scopes.append(scope)
        self.stmt(s.body)
        self.scopes.pop()

    def named_extents(self, w: A.Within) -> tuple[list[tuple[str, E.Expr]], dict[str, IndexTuple]]:
        """``i in n`` / ``{a, b} in [n, m]`` / ``t = {a, b} in [n, m]`` / ``i in [n, m]`` (``i`` an
        index tuple of unnamed parts): each name with its extent, and the index tuples named."""
        extents = self.extents(w.shape, lanes=True)
        if w.vars is not None:
            names = [v or "_" for v in w.vars]
        elif len(extents) == 1:
            names = [w.name or "_"]
        else:  # one name over several dimensions: parts the user cannot name
            names = [f"{w.name}#{k}" for k in range(len(extents))]
        if len(names) != len(extents):
            raise NotLifted(f"{len(names)} names over a shape of rank {len(extents)}", w)
        tuples = {w.name: IndexTuple(tuple(names))} if w.name is not None and len(extents) > 1 else {}
        if w.vars is not None and w.name is not None and len(extents) == 1:
            tuples = {w.name: IndexTuple(tuple(names))}
        return list(zip(names, extents, strict=True)), tuples

    def extents(self, shape: A.Expr, lanes: bool = False) -> list[E.Expr]:
        """The extents of a shape: ``[n, m]``, ``x.span``, a shape's name, or one extent (``lanes``:
        an extent may be each thread's own, a tile over the lanes: a loop's, see :meth:`lane_range`)."""
        items = shape.items if isinstance(shape, A.MdspanLit) else [shape]
        out = []
        for x in items:
            x = unparen(x)
            if isinstance(x, A.ItupleLit):  # ``a.span / {#p, 8}``: an index tuple's values as extents
                for item in x.items:
                    out.extend(self.extents(item, lanes))
                continue
            if isinstance(x, A.Builtin) and x.name == "cdiv" and len(x.args) == 2 and self.is_shape(x):
                out.extend(self.shape_arith(A.Binary("cdiv", x.args[0], x.args[1], span=x.span)))
                continue
            if isinstance(x, A.Binary) and x.op in ("+", "-", "*", "/", "%") and self.is_shape(x):
                out.extend(self.shape_arith(x))  # ``a.span / tiles``: element by element
                continue
            if isinstance(x, A.Member) and x.member == "span":
                out.extend(E.fold(n) for n in view_shape(self.place(x.base)))
                continue
            if isinstance(x, A.Index) and self.is_shape(x.base):  # ``s[(0) / 2, (1)]``: ``(k)`` is extent k of s
                base = self.extents(x.base)
                out.extend(E.fold(self.derived_extent(base, i)) for i in x.indices)
                continue
            named = self.binding(x.name) if isinstance(x, A.Name) else None
            if isinstance(named, ShapeName):
                out.extend(named.extents)
                continue
            host = self.host_shape(x.name) if isinstance(x, A.Name) and named is None else None
            if host is not None:  # a shape the launcher computes (``tile : [M / 4, N]``)
                out.extend(host)
                continue
            v = self.expr(x)
            if (v.expr.shape and not lanes) or v.ctype not in ("int", "s32", "s64", "u32", "u64"):
                raise NotLifted("a loop extent that is not a block-level integer", x)
            out.append(E.fold(v.expr))
        return out

    def extent_items(self, args: list[A.Expr]) -> list[E.Expr | None]:
        """A view operation's extents, shapes among its arguments spelled out (``x.view(tiles).from(..)``,
        ``x.subspan(s[(0) / 2, (1)])``), None for ``_``."""
        out: list[E.Expr | None] = []
        for x in self.extent_args(args):  # literal and named shapes spelled out (lift/views.py)
            if isinstance(x, E.Expr):
                out.append(x)
            elif self.is_blank(x):
                out.append(None)
            elif self.is_shape(x):
                out.extend(self.extents(x))
            else:
                out.append(self.int_expr(x))
        return out

    def host_shape(self, name: str) -> list[E.Expr] | None:
        """The extents of a shape the launcher computes (None: no such shape), as the kernel reads
        them: a size or a constant itself, an expression of them (``tile : [M / 4, N]``) an argument
        the launcher computes."""
        if name in self.host.shapes:
            return [self.size(n) for n in self.host.shapes[name]]
        items = self.host.shape_values.get(name)
        if items is None:
            return None
        return [self.launch_arg(f"{name}_{k}", item) for k, item in enumerate(items)]

    def launch_arg(self, hint: str, item: E.Expr) -> E.Expr:
        """An integer the launcher computes, as the kernel reads it: a constant itself, else an
        argument (one per value, named after ``hint``)."""
        item = E.fold(item)
        if isinstance(item, E.Const):
            return item
        known = next((a for a in self.args.values() if isinstance(a, N.Scalar) and E.same(a.host, item)), None)
        arg = known.name if known is not None else self.fresh(hint)
        if known is None:
            self.args[arg] = N.Scalar(arg, "i32", item)
        return E.Var(arg, "i32", lo=0 if isinstance(item, E.Var) and item.lo == 0 else None)

    def host_bounded(self, name: str) -> Bounded | WithName | IndexTuple | None:
        """A bounded name of a host-level ``with`` or ``foreach`` (LANGUAGE.md 7.2) as the kernel sees
        it: a ``with`` name no host loop iterates is the kernel's to iterate (0 until then), a host
        loop's counter is its value among its bound, a bounded index tuple its parts (None: no such
        name).  Iterated names the user spells are read as scalars (:meth:`host_bound_of`)."""
        h = self.host
        if name in h.bounded_tuples:
            found: Bounded | WithName | IndexTuple = IndexTuple(h.bounded_tuples[name])
        elif name in h.bounded and (h.bounded[name][0] is None or "#" in name):
            value, bound = h.bounded[name]
            hint = name.replace("#", "_")
            extent = self.launch_arg(f"{hint}_bound", bound)
            spelled = next(
                (c for c, sc in h.scalars.items() if isinstance(value, E.Var) and sc.host == value.name), None
            )  # a part the user names (``with idx = {i, j}``): the argument that name reads
            current = self.scalar_arg(spelled, value.name, "int", lo=0) if spelled is not None else None
            if value is None:
                found = WithName(extent)
            else:
                found = Bounded(current if current is not None else self.launch_arg(hint, value), extent)
        else:
            return None
        self.scopes[0][name] = found
        return found

    def host_bound_of(self, name: str) -> E.Expr | None:
        """The bound of a host loop's counter ``name`` (None: not one)."""
        entry = self.host.bounded.get(name)
        if entry is None or entry[0] is None or self.binding(name) is not None:
            return None
        return self.launch_arg(f"{name}_bound", entry[1])

    def is_shape(self, x: A.Expr) -> bool:
        """Does ``x`` denote a shape (of several extents, or a span) rather than one integer?"""
        x = unparen(x)
        if isinstance(x, (A.MdspanLit,)) or (isinstance(x, A.Member) and x.member == "span"):
            return True
        if isinstance(x, A.Name):
            return isinstance(self.binding(x.name), ShapeName) or (
                self.binding(x.name) is None and (x.name in self.host.shapes or x.name in self.host.shape_values)
            )
        if isinstance(x, A.Index):  # ``s[(0) / 2, (1)]``: a shape derived from a shape
            return self.is_shape(x.base)
        if isinstance(x, A.Builtin) and x.name == "cdiv" and len(x.args) == 2:  # ``cdiv(x.span, {4, 8})``
            return any(self.is_shape(a) for a in x.args)
        return isinstance(x, A.Binary) and (self.is_shape(x.lhs) or self.is_shape(x.rhs))

    def derived_extent(self, base: list[E.Expr], x: A.Expr) -> E.Expr:
        """An extent of a derived shape: ``(k)`` is extent k of the base, the rest integers."""
        if isinstance(x, A.Paren) and isinstance(x.expr, A.IntLit):
            k = x.expr.value
            if not -len(base) <= k < len(base):
                raise CroqSemanticError(f"the shape has {len(base)} extents: ({k}) names none of them", x.span)
            return base[k]
        if isinstance(x, A.Binary) and x.op in ("+", "-", "*", "/", "%"):
            return E.Bin(x.op, self.derived_extent(base, x.lhs), self.derived_extent(base, x.rhs))
        return self.int_expr(x)

    def shape_arith(self, x: A.Binary) -> list[E.Expr]:
        """``a.span / [1, 4]``: the operation on each extent (one integer applies to every one)."""
        a, b = self.extents(x.lhs), self.extents(x.rhs)
        if len(a) == 1 and len(b) > 1:
            a = a * len(b)
        if len(b) == 1 and len(a) > 1:
            b = b * len(a)
        if len(a) != len(b):
            raise CroqSemanticError(f"'{x.op}' of shapes of {len(a)} and {len(b)} extents", x.span)
        return [E.fold(E.CDiv(p, q) if x.op == "cdiv" else E.Bin(x.op, p, q)) for p, q in zip(a, b, strict=True)]

    def shape_decl(self, s: A.MdspanDecl) -> None:
        """``tiles : [32, b];`` inside a kernel: a name of the shape."""
        self.scopes[-1][s.name] = ShapeName(tuple(self.extents(s.value)))

    def ituple_decl(self, s: A.ItupleDecl) -> None:
        """``ituple t = {a, b, ..}``: an index tuple whose parts are the items (LANGUAGE.md 7.1); a
        part that names a bounded variable keeps its bound (``x.chunkat(t)`` tiles by it)."""
        value = unparen(s.value)
        if isinstance(value, A.Name) and isinstance(self.binding(value.name), IndexTuple):
            self.scopes[-1][s.name] = self.binding(value.name)  # another name of the same tuple
            return
        if not isinstance(value, A.ItupleLit):
            spelled = self.tuple_items(value)  # ``c * 8``, ``at + {0, 1}``: part by part (LANGUAGE.md 7.1)
            if spelled is None:
                raise NotLifted("an 'ituple' declared other than by '{..}'", s.value)
            value = A.ItupleLit(spelled, span=value.span)
        items = self.index_args(value.items)
        if s.rank is not None and s.rank != len(items):
            raise CroqSemanticError(f"ituple<{s.rank}> '{s.name}' is given {len(items)} values", s.span)
        parts: list[str] = []
        for k, item in enumerate(items):
            part = f"{s.name}#{k}"  # a name the user cannot spell
            x = unparen(item)
            named = self.binding(x.name) if isinstance(x, A.Name) else None
            if isinstance(named, (Bounded, WithName)):
                self.scopes[-1][part] = named
            else:
                v = self.expr(item)
                if v.ctype not in ("int", "bool", "s32", "s64", "u32", "u64", "s16", "u16", "s8", "u8"):
                    raise NotLifted("an 'ituple' part that is not an integer", item)
                self.scopes[-1][part] = Value(E.fold(v.expr), v.ctype)
            parts.append(part)
        self.scopes[-1][s.name] = IndexTuple(tuple(parts))

    def is_tuple_value(self, e: A.Expr) -> bool:
        """Is ``e`` an index tuple (``{a, b}``, a tuple's name, element-wise arithmetic of tuples and
        integers: LANGUAGE.md 7.1), which a name assigned it names?"""
        x = unparen(e)
        if isinstance(x, A.ItupleLit):
            return True
        if isinstance(x, A.Name):
            return isinstance(self.binding(x.name), IndexTuple)
        return isinstance(x, A.Binary) and self.tuple_items(x) is not None

    def tuple_items(self, e: A.Expr) -> list[A.Expr] | None:
        """The parts of an index tuple expression (``{a, b}``, a tuple's name, element-wise
        arithmetic of tuples and integers), None where ``e`` is not a tuple."""
        e = unparen(e)
        if isinstance(e, A.ItupleLit):
            return self.index_args(e.items)
        if isinstance(e, A.Name) and isinstance(self.binding(e.name), IndexTuple):
            return self.index_args([e])
        if isinstance(e, A.Name) and self.binding(e.name) is None and e.name in self.host.ituples:
            return self.index_args([e])  # an index tuple the launcher computes
        if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "%"):
            a, b = self.tuple_items(e.lhs), self.tuple_items(e.rhs)
            if a is None and b is None:
                return None
            if a is not None and b is not None and len(a) != len(b):
                raise CroqSemanticError(f"'{e.op}' of index tuples of {len(a)} and {len(b)} parts", e.span)
            n = len(a if a is not None else b)  # type: ignore[arg-type]
            lhs, rhs = a or [e.lhs] * n, b or [e.rhs] * n
            return [A.Binary(e.op, x, y, span=e.span) for x, y in zip(lhs, rhs, strict=True)]
        return None

    def index_args(self, args: list[A.Expr]) -> list[A.Expr]:
        """``args`` with each index tuple spelled out as its parts (``chunkat(p, index)`` is
        ``chunkat(p, index_0, index_1)``)."""
        out: list[A.Expr] = []
        for a in args:
            x = unparen(a)
            if isinstance(x, A.ItupleLit):  # ``x.at({i, j})``: its items (LANGUAGE.md 7.5)
                out.extend(self.index_args(list(x.items)))
                continue
            spelled = self.tuple_items(x) if isinstance(x, A.Binary) else None
            if spelled is not None:  # ``x.at(o + {1, 1})``: part by part (LANGUAGE.md 7.1)
                out.extend(spelled)
                continue
            t = self.binding(x.name) if isinstance(x, A.Name) else None
            if isinstance(t, IndexTuple):
                out.extend(A.Name(p, span=x.span) for p in t.parts)
            elif isinstance(x, A.Name) and t is None and x.name in self.host.ituples:  # the host's (``with idx``)
                rank = len(self.host.shapes.get(x.name) or self.host.shape_values[x.name])
                out.extend(A.GetIth(x, A.IntLit(k, str(k), span=x.span), span=x.span) for k in range(rank))
            else:
                out.append(a)
        return out

    def tuple_part(self, name: str, e: A.GetIth) -> Value:
        """``index(k)``: part ``k`` of an index tuple; of a bounded name, ``x(k)`` is ``k`` and
        ``x(-k)`` is ``#x - k`` (LANGUAGE.md 7.2: the index ``k`` among the same ``#x``, as a
        pipeline's prologue names its first chunks ``x(0)``, ``x(1)``; upstream's getith gives the
        index, not the current value: ``x(0)`` is 0 inside a loop over ``x`` too)."""
        t = self.binding(name)
        k = const_int(self.int_expr(e.index))
        if isinstance(t, (Bounded, WithName)) and k is not None and k >= 0:
            return Value(E.Const(k), "int")
        if isinstance(t, (Bounded, WithName)) and k is not None:
            return Value(E.fold(E.Bin("+", t.bound if isinstance(t, Bounded) else t.extent, E.Const(k))), "int")
        shape = self.host_shape(name) if t is None else list(t.extents) if isinstance(t, ShapeName) else None
        if shape is not None and k is not None and -len(shape) <= k < len(shape):
            return Value(shape[k], "int")  # an extent of a shape the launcher or the kernel names (``sh : [a, 2]``)
        if not isinstance(t, IndexTuple):
            raise NotLifted(f"'{name}(k)' of something that is not an index tuple", e)
        if k is None or not -len(t.parts) <= k < len(t.parts):
            raise NotLifted("a part of an index tuple that is not a constant within its rank", e.index)
        return self.name_value(A.Name(t.parts[k], span=e.span))

    def counters(self, s: A.Foreach) -> tuple[list[Counter], dict[str, IndexTuple]]:
        out: list[Counter] = []
        tuples: dict[str, IndexTuple] = {}
        for it in s.items:
            if isinstance(it, A.RangeItem):
                named = self.lookup(it.name, it)
                parts = named.parts if isinstance(named, IndexTuple) else (it.name,)
                if isinstance(named, IndexTuple) and (it.sliced or it.alias is not None):
                    raise NotLifted("a slice of a loop over an index tuple", it)
                step = self.loop_step(it)
                for part in parts:
                    w = self.lookup(part, it)
                    if not isinstance(w, WithName):
                        raise NotLifted("a loop over a name not bounded by 'with'", it)
                    start = self.extents(it.lo, lanes=True)[0] if it.lo is not None else E.Const(0)
                    stop = E.fold(w.extent + self.extents(it.hi, lanes=True)[0]) if it.hi is not None else w.extent
                    out.append(Counter(it.alias or part, start, stop, w.extent, step))
                continue
            pairs, named_tuples = self.named_extents(it)
            tuples.update(named_tuples)
            for nm, ext in pairs:
                out.append(Counter(nm, E.Const(0), ext, ext))
        return out, tuples

    def loop_step(self, it: A.RangeItem) -> int:
        """The step of ``v(lo:hi:step)`` (1 without one), honoured as documented; upstream's CUDA
        backend ignores it (LANGUAGE.md 12 item 9), which the warning says."""
        if not it.has_step or it.step is None:
            return 1
        step = const_int(self.int_expr(it.step))
        if step is None:
            raise CroqSemanticError("a loop's step must be an integer literal", it.step.span)
        if step == 0:
            raise CroqSemanticError(
                f"the loop over '{it.name}' steps by 0: it never advances",
                it.step.span,
                hint="give a step of 1 or more, or leave it out (1)",
            )
        if step < 0:  # the grammar takes '-' NUM; LANGUAGE.md (7.4, 12 item 9) gives it no meaning
            raise NotLifted(
                f"a loop step of {step} over '{it.name}' (only steps of 1 or more translate:"
                " LANGUAGE.md gives a negative step no meaning)",
                it.step,
                hint=f"to take the values in reverse, loop with a positive step and index with the mirrored value"
                f" (for '{it.name}' over [n]: n - 1 - {it.name})",
            )
        if step != 1:
            self.warnings.append(
                Diagnostic(
                    "warning",
                    f"the loop over '{it.name}' steps by {step}; upstream's CUDA backend ignores a loop's step"
                    " (it takes every value)",
                    it.span,
                )
            )
        return step

    def foreach(self, s: A.Foreach) -> None:
        if self.folded_k_loop(s):  # MMAs on chunks of K (lift/mma.py)
            return
        if self.element_map(s):
            return
        counters, tuples = self.counters(s)
        self.scopes.append(dict(tuples))
        self.loop_nest(counters, s.body, s)
        self.scopes.pop()

    def element_map(self, s: A.Foreach) -> bool:
        """A loop whose iterations touch only their own elements (lift/maps.py): its counters are
        lanes of one tile statement, as ``apply``'s are (not inside lanes of several threads)."""
        if map_counters(s) is None or (self.lanes is not None and any(n != 1 for n in self.lanes[1])):
            return False
        if self.touches_owned(s):  # each thread's own copies (lift/scratch.py): a loop of every thread
            return False
        counters, tuples = self.counters(s)
        pairs: list[tuple[str | None, int | E.Expr, A.Node]] = []
        for c in counters:
            n = const_int(c.stop)
            if c.stop.shape or c.start.shape:  # each thread's own range: a loop (lane_range)
                return False
            if const_int(c.start) != 0 or not E.same(c.stop, c.extent) or (n is not None and n < 1) or c.step != 1:
                return False
            pairs.append((c.name, n if n is not None else c.stop, s))
        self.scopes.append(dict(tuples))
        self.lanes_over(pairs, [s.body], s)
        self.scopes.pop()
        return True

    def loop_nest(self, counters: list[Counter], body: A.Stmt, node: A.Node) -> None:
        if not counters:
            self.stmt(body)
            return
        c = counters[0]
        for b in self.buffers():  # buffers are carried by the loop: bound before it
            self.tile_value(b, node)
        assigned = assigned_names(body)
        start, stop = (self.loop_bound(x, assigned, node) for x in (c.start, c.stop))
        own = self.lane_range(start, stop, c.step, node) if start.shape or stop.shape else None
        if own is not None:
            start, stop = own[0], own[1]
        self.per_thread(node, assigned)
        self.loosen(assigned)
        lo, hi = const_int(start), const_int(stop)
        user = c.name.replace("#", "_")  # a part of an index tuple: its tuple's name and position
        var = E.Var(self.claim(user), "i32", lo=lo if lo is not None else 0, hi=hi - 1 if hi is not None else None)
        if lo is not None and hi is not None and lo < hi and c.step == 1:  # every value between is taken
            self.exact[var.name] = (lo, hi - 1)
        before = self.values()
        outer, saved_lets = self.body, list(self.lets)
        self.forget(self.assigned_vars(assigned))
        self.body = []
        # ``#name`` (``p # name`` is ``p * #name + name``, LANGUAGE.md 7.2): a thread's own bound
        # where the threads' ranges differ, not the program's loop over all of them
        extent = c.extent if not c.extent.shape else E.fold(own[3] - own[2] if own is not None else stop - start)
        self.scopes.append({c.name: Bounded(var, extent)} if c.name != "_" else {})
        self.loop_depth += 1
        if own is not None:  # each thread works only inside its own range
            self.pred.append(E.fold(E.Bin("&", E.Bin(">=", var, own[2]), E.Bin("<", var, own[3]))))
        self.loop_nest(counters[1:], body, node)
        if own is not None:
            self.pred.pop()
        self.loop_depth -= 1
        self.scopes.pop()
        inner, self.body, self.lets = self.body, outer, saved_lets
        carried = [b.var for b in self.buffers()] + self.rebound(before, "a loop", node)
        pipeline = self.stated_pipelines.get(id(node)) if len(counters) == 1 else None  # the innermost loop
        self.emit(N.For(var, start, stop, E.Const(c.step), inner, pipeline, tuple(carried)), node)

    def lane_range(self, start: E.Expr, stop: E.Expr, step: int, node: A.Node) -> tuple[E.Expr, E.Expr, E.Expr, E.Expr]:
        """A loop whose bounds are each thread's own (``foreach k in [hi - lo]`` over a segment of
        its own, LANGUAGE.md 7.4 puts no condition on an extent): the program loops from the least
        start to the largest stop of the threads that run it, each thread's work masked to its own
        range (SIMT: a thread whose range is done idles until the others' are). Returns the
        program's (start, stop) and each thread's (start, stop) as named tiles."""
        if step != 1 and start.shape:
            raise NotLifted(f"a loop with a step of {step} from a start that differs between threads", node)
        live = E.conj(self.pred) if self.pred else None
        own: list[E.Expr] = []
        whole: list[E.Expr] = []
        for x, op, idle, base in ((start, "min", 2**31 - 1, "lo"), (stop, "max", -(2**31), "hi")):
            if not x.shape:
                own.append(x)
                whole.append(x)
                continue
            mine = self.named(E.fold(x), f"{base}_own", node)
            v: E.Expr = mine if live is None else E.Where(live, mine, E.Full(mine.shape, idle, mine.type))
            for _ in mine.shape:
                v = E.Reduce(op, v, 0, bound=True)
            own.append(mine)
            whole.append(self.named(E.fold(v), base, node))
        return whole[0], whole[1], own[0], own[1]

    def while_loop(self, s: A.While) -> None:
        """``while (c) body`` (LANGUAGE.md 7.4) on a condition the whole block shares: a flag taken
        before the loop and again at the end of each trip (Triton's ``while`` on a scalar)."""
        for b in self.buffers():  # buffers are carried by the loop: bound before it
            self.tile_value(b, s)
        if self.own_counters(s):
            self.lanes_while(s)
            return
        # the values the loop changes but its condition does not read: one per thread from the
        # start, as in a 'foreach' (an accumulator of each thread's elements); those the condition
        # reads keep their shape (a tree's halving step), and one that comes to differ between
        # threads is refused where the loop re-binds it
        assigned = assigned_names(s.body)
        self.per_thread(s, assigned - {n.name for n in s.cond.walk() if isinstance(n, A.Name)})
        self.loosen(assigned)
        cond = self.truth(self.expr(s.cond))
        if cond.shape:
            self.lanes_while(s)
            return
        flag = E.Var(self.fresh("go"), "i1")
        self.emit(N.Let(flag, cond), s)
        before = self.values()
        outer, saved_lets = self.body, list(self.lets)
        self.forget(self.assigned_vars(assigned_names(s.body)))
        self.body = []
        self.scopes.append({})
        self.loop_depth += 1
        self.stmt(s.body)
        self.scopes.pop()  # the condition reads the names around the loop
        again = self.truth(self.expr(s.cond))
        self.loop_depth -= 1
        if again.shape:
            raise NotLifted("a while loop whose condition differs between threads", s.cond)
        self.emit(N.Assign(flag, again), s)
        inner, self.body, self.lets = self.body, outer, saved_lets
        carried = [b.var for b in self.buffers()] + self.rebound(before, "a loop", s)
        self.emit(N.While(flag, inner, tuple(carried)), s)

    def assigned_vars(self, names: set[str]) -> set[str]:
        """The variables of the values in scope under ``names``."""
        return {
            v.expr.name
            for sc in self.scopes
            for n, v in sc.items()
            if n in names and isinstance(v, Value) and isinstance(v.expr, E.Var)
        }

    def own_counters(self, s: A.While) -> bool:
        """Does the condition of ``s`` read a thread's own value that the loop changes and that may
        differ between threads (``while (lo < hi)`` of a binary search in each thread, not ``while (h
        > 0)`` of a tree's halving steps): a condition that may come to differ between them."""
        if self.lanes is None or all(n == 1 for n in self.lanes[1]):
            return False
        read = {n.name for n in s.cond.walk() if isinstance(n, A.Name)} & assigned_names(s.body)
        own = {name for sc in self.scopes[self.lanes[0] :] for name, v in sc.items() if isinstance(v, Value)}
        return bool(read & own & self.varying())

    def lanes_while(self, s: A.While) -> None:
        """``while (c) body`` on a condition that differs between threads: each thread runs the body
        while its condition holds and leaves the loop for good when it first fails (SIMT); the
        program loops while any thread is still in it, the body's work masked to those that are
        (its assignments and accesses under the condition, as in an ``if``)."""
        assigned = assigned_names(s.body)
        self.per_thread(s, assigned)  # the values the loop changes: one per thread from the start
        self.loosen(assigned)
        cond = self.truth(self.expr(s.cond))
        if self.pred:  # the threads the enclosing conditions leave out do not run the loop
            cond = E.fold(E.Bin("&", E.conj(self.pred), cond))
        shape = tuple(self.lanes[1]) if self.lanes is not None else cond.shape
        active = E.Var(self.fresh("active"), "i1", dims=shape)
        self.emit(N.Let(active, E.fold(E.Bin("|", cond, E.Full(shape, False, "i1")))), s)
        flag = E.Var(self.fresh("go"), "i1")
        self.emit(N.Let(flag, any_lane(active)), s)
        before = self.values()
        outer, saved_lets = self.body, list(self.lets)
        self.forget(self.assigned_vars(assigned) | {active.name})
        self.body = []
        self.scopes.append({})
        self.loop_depth += 1
        self.pred.append(active)
        self.stmt(s.body)
        self.pred.pop()
        self.scopes.pop()  # the condition reads the names around the loop
        again = self.truth(self.expr(s.cond))
        self.loop_depth -= 1
        self.emit(N.Assign(active, E.fold(E.Bin("&", active, again))), s)
        self.emit(N.Assign(flag, any_lane(active)), s)
        inner, self.body, self.lets = self.body, outer, saved_lets
        carried = [b.var for b in self.buffers()] + self.rebound(before, "a loop", s) + [active]
        self.emit(N.While(flag, inner, tuple(carried)), s)

    def loop_bound(self, x: E.Expr, assigned: set[str], node: A.Node) -> E.Expr:
        """A loop's start or stop computed from a thread's values that the loop assigns, under a
        name of its own: ``per_thread`` makes those values tiles over the lanes, and a loop's bounds
        are one integer, taken before the first iteration."""
        x = E.fold(x)
        if self.lanes is None or x.shape:
            return x
        depth = self.lanes[0]
        mine = {
            v.expr.name
            for sc in self.scopes[depth:]
            for n, v in sc.items()
            if n in assigned and isinstance(v, Value) and isinstance(v.expr, E.Var)
        }
        if not mine & {v.name for v in E.free_vars(x)}:
            return x
        return self.named(x, "bound", node)  # type: ignore[no-any-return]

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

    def loosen(self, assigned: set[str]) -> None:
        """The values a loop assigns, without the bounds of their value before it: on a later trip
        they hold what the earlier trips made of them (``k = 0`` before ``x.at(p, k); k = k + 1``
        is not 0 on every trip, and the read needs the mask that keeps it inside ``x``)."""
        for sc in reversed(self.scopes):
            for name in list(sc):
                v = sc[name]
                if name not in assigned or not (isinstance(v, Value) and isinstance(v.expr, E.Var)):
                    continue
                old = v.expr
                if old.lo is not None or old.hi is not None:
                    sc[name] = Value(E.Var(old.name, old.type, dims=old.shape), v.ctype)
                self.exact.pop(old.name, None)

    def per_thread(self, node: A.Node, assigned: set[str] | None = None) -> None:
        """Each thread's own values (declared inside a thread level) as tiles over all its lanes,
        so that a loop may make them vary by lane (``acc += x.at(r, k # t)``) with one shape
        (``assigned``: only the names the loop assigns; the others keep their shape)."""
        if self.lanes is None:
            return
        depth, shape = self.lanes
        if all(n == 1 for n in shape):  # one lane: its values are the block's
            return
        changed = assigned if assigned is not None else assigned_names(node)  # type: ignore[arg-type]
        for sc in self.scopes[depth:]:
            for name, v in list(sc.items()):
                if not (isinstance(v, Value) and isinstance(v.expr, E.Var)) or v.expr.shape == shape:
                    continue
                if name not in changed:  # the same in every iteration or branch: kept as it is
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
        found = [v.buffer if isinstance(v, BufferArray) else v for sc in self.scopes for v in sc.values()]
        return [v for v in found if isinstance(v, TileBuffer) and v.home is None]

    def values(self) -> dict[str, Value]:
        """The scalar and tile values in scope, by name (the innermost binding of each)."""
        out: dict[str, Value] = {}
        for sc in self.scopes:
            for name, v in sc.items():
                if isinstance(v, Value):
                    out[name] = v
        return out


def assigned_names(body: A.Stmt) -> set[str]:
    """The names ``body`` assigns (``x = ..``, ``x += ..``, ``x++``)."""
    out: set[str] = set()
    for n in body.walk():
        if isinstance(n, A.Assign) and isinstance(unparen(n.target), A.Name):
            out.add(unparen(n.target).name)  # type: ignore[attr-defined]
        elif isinstance(n, A.IncDec):
            out.add(n.target)
    return out


def any_lane(mask: E.Expr) -> E.Expr:
    """Does ``mask`` (one flag per thread) hold anywhere: the largest of its values, axis by axis."""
    value: E.Expr = E.Cast(mask, "i32")
    for _ in mask.shape:
        value = E.Reduce("max", value, 0)
    return E.Bin("!=", value, E.Const(0))
