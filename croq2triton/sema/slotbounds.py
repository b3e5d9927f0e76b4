"""An element of an array of buffers or events outside the array (LANGUAGE.md 7.5: ``shared f16
[64, 192] out_s[2]`` holds buffers ``out_s[0]`` and ``out_s[1]``), where it is provable when
compiling: the index is ``a * v + b`` of one bounded index ``v`` (a ``parallel`` or ``foreach``
index, or a name given such a value once) whose every value in its range is taken, narrowed by the
conditions it runs under (``inthreads.async (wg >= 1)``, ``if (t < 2)``). The tutorial's GEMM v4
swept with one consumer warpgroup where ``parallel wg by 3`` still starts two: the second wrote
``output_s[1]`` of an array of one, a shared-memory write out of bounds that crashed at run time.

Only what is certain is reported: an index that is not of that form, or runs under a condition on
``v`` this check cannot read, is left alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import Diagnostic
from ..frontend import ast as A
from .tiling import source_text

Range = tuple[int, int]  # inclusive; every value in it is taken


@dataclass(frozen=True)
class _Affine:
    """``a * var + b`` (``var`` None: the constant ``b``)."""

    var: str | None
    a: int
    b: int


def slot_index_errors(fn: A.CoFunction, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    arrays = _arrays(fn, value)
    if not arrays:
        return []
    once = _assigned_once(fn)
    out: list[Diagnostic] = []
    body = fn.body if isinstance(fn.body, A.Stmt) else A.Block(list(fn.body))
    _Walk(arrays, once, value, out).stmt(body, {}, {})
    return out


def _arrays(fn: A.CoFunction, value: Callable[[A.Expr], int | None]) -> dict[str, tuple[int, ...]]:
    """Names declared once as arrays of buffers or events, with extents known when compiling."""
    seen: dict[str, int] = {}
    dims: dict[str, tuple[int, ...]] = {}
    for s in fn.walk():
        items: list[A.Declarator] | list[A.EventDeclarator] = []
        if isinstance(s, (A.SpannedDecl, A.EventDecl, A.FragDecl)):
            items = s.items
        elif isinstance(s, A.ScalarDecl):
            for d in s.items:
                seen[d.name] = seen.get(d.name, 0) + 1
        for d in items:
            seen[d.name] = seen.get(d.name, 0) + 1
            ext = [value(x) for x in d.dims]
            if d.dims and all(_count(n) for n in ext):
                dims[d.name] = tuple(ext)  # type: ignore[arg-type]
    return {k: v for k, v in dims.items() if seen[k] == 1}


def _assigned_once(fn: A.CoFunction) -> set[str]:
    """Names given a value exactly once (a declaration with a value, or one plain ``=``)."""
    count: dict[str, int] = {}
    for n in fn.walk():
        if isinstance(n, A.ScalarDecl):
            for d in n.items:
                count[d.name] = count.get(d.name, 0) + (2 if n.mutable or d.init is None else 1)
        elif isinstance(n, A.Assign) and isinstance(n.target, A.Name):
            count[n.target.name] = count.get(n.target.name, 0) + (1 if n.op == "=" else 2)
        elif isinstance(n, A.IncDec):
            count[n.target] = count.get(n.target, 0) + 2
    return {k for k, v in count.items() if v == 1}


class _Walk:
    def __init__(
        self,
        arrays: dict[str, tuple[int, ...]],
        once: set[str],
        value: Callable[[A.Expr], int | None],
        out: list[Diagnostic],
    ) -> None:
        self.arrays, self.once, self.value, self.out = arrays, once, value, out
        self.reported: set[int] = set()

    # ranges: bounded index -> its values here; lets: name -> its value as _Affine of a bounded index
    def stmt(self, s: A.Stmt | None, ranges: dict[str, Range], lets: dict[str, _Affine]) -> None:
        if s is None:
            return
        if isinstance(s, A.Block):
            for x in s.stmts:
                self.stmt(x, ranges, lets)  # lets grow in place: a block's later statements see them
            return
        if isinstance(s, A.Parallel):
            inner = dict(ranges)
            for level in s.levels:
                names = level.names
                for name, bound in zip(names, level.bound if level.vars else level.bound[:1], strict=False):
                    n = self.value(bound)
                    if _count(n):
                        inner[name] = (0, n - 1)
                    else:
                        inner.pop(name, None)
            self.check(s, ranges, lets, skip=(s.body,))
            self.stmt(s.body, inner, dict(lets))
            return
        if isinstance(s, A.Foreach):
            inner = dict(ranges)
            stops = any(isinstance(n, A.Break) for n in s.body.walk())  # not every value is taken
            for item in s.items:
                names = _bound_names(item)
                for name in names:
                    inner.pop(name, None)
                if stops or not (isinstance(item, A.Within) and isinstance(item.shape, A.MdspanLit)):
                    continue
                if len(names) != len(item.shape.items):
                    continue
                for name, x in zip(names, item.shape.items, strict=True):
                    n = self.value(x)
                    if _count(n):
                        inner[name] = (0, n - 1)
            self.check(s, ranges, lets, skip=(s.body,))
            self.stmt(s.body, inner, dict(lets))
            return
        if isinstance(s, (A.InThreads, A.If)):
            self.check(s.cond, ranges, lets)
            narrowed = self.narrow(s.cond, ranges, lets)
            body = s.body if isinstance(s, A.InThreads) else s.then
            if narrowed is not None:
                self.stmt(body, narrowed, dict(lets))
            if isinstance(s, A.If) and s.other is not None:
                # the else branch runs under the negation: narrow nothing, forget what it names
                self.stmt(s.other, self.forget(s.cond, ranges, lets), dict(lets))
            return
        if isinstance(s, (A.While, A.With, A.Apply)):
            self.check(s, ranges, lets, skip=(s.body,))
            self.stmt(s.body, {}, {})  # (indexes of a with / while: not followed)
            return
        self.check(s, ranges, lets)
        if isinstance(s, A.ScalarDecl):
            for d in s.items:
                if d.name in self.once and d.init is not None:
                    self.let(d.name, d.init, ranges, lets)
        elif isinstance(s, A.AssignStmt):
            for a in s.items:
                if isinstance(a.target, A.Name) and a.op == "=" and a.target.name in self.once:
                    self.let(a.target.name, a.value, ranges, lets)

    def let(self, name: str, e: A.Expr, ranges: dict[str, Range], lets: dict[str, _Affine]) -> None:
        f = self.affine(e, ranges, lets)
        if f is not None and f.var is not None:
            lets[name] = f

    def affine(self, e: A.Expr, ranges: dict[str, Range], lets: dict[str, _Affine]) -> _Affine | None:
        if isinstance(e, A.Paren):
            return self.affine(e.expr, ranges, lets)
        if isinstance(e, A.Name):
            if e.name in ranges:
                return _Affine(e.name, 1, 0)
            if e.name in lets:
                return lets[e.name]
        n = self.value(e)
        if isinstance(n, int) and not isinstance(n, bool):
            return _Affine(None, 0, n)
        if isinstance(e, A.Unary) and e.op == "-":
            f = self.affine(e.operand, ranges, lets)
            return None if f is None else _Affine(f.var, -f.a, -f.b)
        if isinstance(e, A.Binary) and e.op in ("+", "-", "*"):
            x, y = self.affine(e.lhs, ranges, lets), self.affine(e.rhs, ranges, lets)
            if x is None or y is None:
                return None
            if e.op == "*":
                if x.var is not None and y.var is not None:
                    return None
                k, f = (x.b, y) if x.var is None else (y.b, x)
                return _Affine(f.var, f.a * k, f.b * k) if k else _Affine(None, 0, 0)
            sign = 1 if e.op == "+" else -1
            if x.var is not None and y.var is not None and x.var != y.var:
                return None
            a = x.a + sign * y.a
            return _Affine(x.var or y.var if a else None, a, x.b + sign * y.b)
        return None

    def narrow(self, cond: A.Expr, ranges: dict[str, Range], lets: dict[str, _Affine]) -> dict[str, Range] | None:
        """``ranges`` where ``cond`` holds (None: it never does); a term this check cannot read
        forgets the indexes it names."""
        out = dict(ranges)
        for term in _conjuncts(cond):
            got = self.bound_of(term, out, lets)
            if got is None:
                out = self.forget(term, out, lets)
                continue
            var, lo, hi = got
            old = out[var]
            lo, hi = max(old[0], lo), min(old[1], hi)
            if lo > hi:
                return None
            out[var] = (lo, hi)
        return out

    def bound_of(self, term: A.Expr, ranges: dict[str, Range], lets: dict[str, _Affine]) -> tuple[str, int, int] | None:
        """``a * v + b OP c`` as the values of ``v`` it keeps (``(v, lo, hi)``), or None."""
        while isinstance(term, A.Paren):
            term = term.expr
        if not (isinstance(term, A.Binary) and term.op in ("<", "<=", ">", ">=", "==")):
            return None
        x, y = self.affine(term.lhs, ranges, lets), self.affine(term.rhs, ranges, lets)
        if x is None or y is None:
            return None
        op = term.op
        if x.var is None and y.var is not None:
            x, y, op = y, x, {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}[op]
        if x.var is None or y.var is not None or x.var not in ranges:
            return None
        # a * v + b OP c  ->  a * v OP c - b
        a, c = x.a, y.b - x.b
        if a < 0:
            a, c, op = -a, -c, {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}[op]
        lo, hi = ranges[x.var]
        if op == "==":
            if c % a:
                return x.var, 1, 0
            return x.var, c // a, c // a
        if op in ("<", "<="):
            top = c - 1 if op == "<" else c  # a * v <= top
            return x.var, lo, top // a
        least = c + 1 if op == ">" else c  # a * v >= least
        return x.var, -(-least // a), hi

    def forget(self, cond: A.Expr, ranges: dict[str, Range], lets: dict[str, _Affine]) -> dict[str, Range]:
        named = {n.name for n in cond.walk() if isinstance(n, A.Name)}
        named |= {lets[n].var for n in named if n in lets and lets[n].var}  # type: ignore[misc]
        return {k: v for k, v in ranges.items() if k not in named}

    def check(
        self, node: A.Node, ranges: dict[str, Range], lets: dict[str, _Affine], skip: tuple[A.Node, ...] = ()
    ) -> None:
        stack: list[A.Node] = [node]
        while stack:
            n = stack.pop()
            if any(n is k for k in skip):
                continue
            if isinstance(n, A.Index) and isinstance(n.base, A.Name) and n.base.name in self.arrays:
                self.index(n, self.arrays[n.base.name], ranges, lets)
            if isinstance(n, A.Stmt) and n is not node:
                continue  # nested statements are walked with their own ranges
            stack.extend(n.children())

    def index(self, n: A.Index, dims: tuple[int, ...], ranges: dict[str, Range], lets: dict[str, _Affine]) -> None:
        if id(n) in self.reported:
            return
        for k, (x, extent) in enumerate(zip(n.indices, dims, strict=False)):
            f = self.affine(x, ranges, lets)
            if f is None:
                continue
            if f.var is None:
                lo = hi = f.b
            else:
                if f.var not in ranges:
                    continue
                vlo, vhi = ranges[f.var]
                ends = (f.a * vlo + f.b, f.a * vhi + f.b)
                lo, hi = min(ends), max(ends)
            bad = hi if hi >= extent else lo if lo < 0 else None
            if bad is None:
                continue
            self.reported.add(id(n))
            name = source_text(n.base)
            which = f" along dimension {k}" if len(dims) > 1 else ""
            reach = (
                f"'{source_text(x)}' is {bad}"
                if f.var is None
                else f"'{source_text(x)}' reaches {bad} (for {f.var} = {_var_at(f, bad)})"
            )
            self.out.append(
                Diagnostic(
                    "error",
                    f"{reach}: outside the array '{name}' of {extent} element(s){which}",
                    x.span or n.span,
                    f"'{name}' is declared with [{', '.join(str(d) for d in dims)}]: each index from 0 to the"
                    " extent minus 1 (are as many elements declared as the threads or units that use them?)",
                )
            )
            return


def _var_at(f: _Affine, value: int) -> int:
    return (value - f.b) // f.a


def _conjuncts(e: A.Expr) -> list[A.Expr]:
    while isinstance(e, A.Paren):
        e = e.expr
    if isinstance(e, A.Binary) and e.op == "&&":
        return _conjuncts(e.lhs) + _conjuncts(e.rhs)
    return [e]


def _bound_names(item: A.Within | A.RangeItem) -> list[str]:
    if isinstance(item, A.RangeItem):
        return [item.alias or item.name]
    return list(item.vars) if item.vars else [item.name] if item.name else []


def _count(n: object) -> bool:
    """Whether ``n`` is a count known when compiling (a positive integer)."""
    return isinstance(n, int) and not isinstance(n, bool) and n > 0
