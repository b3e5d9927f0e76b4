"""Statements used where the language does not have them, or on what they do not take
(LANGUAGE.md 7.2, 7.3, 7.4, 7.8, 7.10):

* ``yield`` outside every ``parallel``; ``break`` / ``continue`` outside every loop;
* ``wait`` on something that is no future or event, ``trigger`` on something that is no event;
* ``#x`` of a name that is no bounded index (a tensor, a buffer, a scalar ...);
* ``mdspan<N>`` / ``ituple<N>`` whose value has another rank;
* ``.. after g`` where the function declares no ``g``;
* an integer division or remainder by a constant 0 (``N / 0``, ``cdiv(N, TILE)`` with ``TILE`` 0).

What a name is comes from sema/scopes.py; a name it cannot resolve is left alone (it may be the
host program's).
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .consteval import constant_values
from .scopes import KIND_WORDS, Binding, Resolution

_ZERO_HINT = "integer division by 0 has no result: check the constant, #define or -D value that gives 0"
_DIVIDING = ("cdiv", "__alignup", "__aligndown")  # builtins that divide by their second argument

# kinds of bindings that are certainly no future, no event and no bounded index
_DATA = {k: KIND_WORDS[k] for k in ("spanned", "int", "bool", "elem", "mdspan", "ituple", "stream")}
# (an MMA's future is bound as a fragment)


# kinds of bindings that are no future and no event: what 'wait' cannot take
_NOT_AWAITABLE = _DATA | {"bounded": "a bounded index", "dim": "a symbolic size"}
_STRING_HINT = "strings appear only in print, println and assert"


def misuse_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    _statements(fn.body, parallel=False, loop=False, out=out)
    declared = {b.name for b in res.bindings}
    value = constant_values(res)
    plain = _plain_buffers(fn, res)
    for n in fn.walk():
        for x in _value_operands(n):
            if isinstance(x, A.StringLit):
                out.append(_error(f"the string {_text(x)} is used as a value", x, _STRING_HINT))
        if isinstance(n, A.Wait):
            for item in n.items:
                b = _binding(_root(item), res)
                what = _NOT_AWAITABLE.get(b.kind) if b is not None else None
                if what is not None:
                    out.append(_error(f"'wait' takes futures and events; '{_text(item)}' is {what}", item))
        elif isinstance(n, A.Trigger):
            for item in n.items:
                b = _binding(_root(item), res)
                if b is not None and b.kind in (*_DATA, "future"):
                    what = _DATA.get(b.kind, "a future")
                    out.append(_error(f"'trigger' takes events; '{_text(item)}' is {what}", item))
        elif isinstance(n, A.UBound):
            b = res.binding(n)
            # (a name assigned a composed index, ``tile = k # p``, keeps its bound: an 'int' declared
            # with its type, ``int k = 3;``, or an 'int' parameter has none)
            unbounded = b is not None and (b.kind != "int" or b.origin in ("declaration", "parameter"))
            if b is not None and b.kind in (*_DATA, "future", "event") and unbounded:
                what = _DATA.get(b.kind, f"a {b.kind}")
                out.append(
                    _error(
                        f"'#{n.name}': '{n.name}' is {what}, not a bounded index",
                        n,
                        "'#' gives the bound of a parallel, with or foreach index",
                    )
                )
        elif isinstance(n, (A.MdspanDecl, A.ItupleDecl)) and n.rank is not None:
            items = n.value.items if isinstance(n.value, (A.MdspanLit, A.ItupleLit)) else None
            plain = items is not None and not any(isinstance(x, (A.Name, A.Member, A.MdspanLit)) for x in items)
            if plain and len(items) != n.rank:  # type: ignore[arg-type]
                kw = "mdspan" if isinstance(n, A.MdspanDecl) else "ituple"
                given = f"'{kw}<{n.rank}> {n.name}' is given {len(items)} value(s)"  # type: ignore[arg-type]
                out.append(_error(given, n.value, f"give {n.rank}"))
        elif isinstance(n, A.Binary) and n.op in ("/", "%") and value(n.rhs) == 0:
            what = "division" if n.op == "/" else "remainder"
            out.append(_error(f"{what} by zero: '{_text(n)}'", n.rhs, _ZERO_HINT))
        elif isinstance(n, A.Builtin) and n.name in _DIVIDING and len(n.args) == 2 and value(n.args[1]) == 0:
            out.append(_error(f"'{n.name}' by zero: '{_text(n)}'", n.args[1], _ZERO_HINT))
        elif isinstance(n, A.Foreach):
            for it in n.items:
                b = res.binding(it) if isinstance(it, A.RangeItem) else None
                if b is not None and b.kind in _DATA:
                    out.append(
                        _error(
                            f"'foreach {it.name}' loops over a bounded index of 'with'; '{it.name}' is {_DATA[b.kind]}",
                            it,
                            f"write 'foreach {it.name} in [n] {{ .. }}', or bound it first: 'with {it.name} in [n]"
                            f" {{ foreach {it.name} {{ .. }} }}'",
                        )
                    )
        elif isinstance(n, A.Binary) and n.op == "#":
            for x in (n.lhs, n.rhs):
                if isinstance(A.unparen(x), (A.IntLit, A.FloatLit)):
                    out.append(
                        _error(
                            f"'{_text(n)}': '#' composes two bounded indices; '{_text(x)}' is a number",
                            x,
                            "'a # b' is a * #b + b for indices a and b of parallel, with or foreach"
                            " (LANGUAGE.md 7.2); write the arithmetic out for a number",
                        )
                    )
        elif isinstance(n, A.ViewOp) and n.kind == "chunkat":
            for x in n.args:
                if isinstance(A.unparen(x), (A.IntLit, A.FloatLit)):
                    out.append(
                        _error(
                            f"chunkat takes bounded indices (of parallel, with or foreach) or '_', not the number"
                            f" '{_text(x)}'",
                            x,
                            "take a fixed tile with '.subspan(extents).at(indices)'",
                        )
                    )
        elif (
            isinstance(n, A.Index)
            and isinstance(A.unparen(n.base), A.Name)
            and not any(isinstance(i, A.Paren) for i in n.indices)  # ``x[(1), (0)]``: a shape derivation
        ):
            b = res.binding(A.unparen(n.base))
            if b is not None and b.kind == "spanned" and (b.origin == "parameter" or id(b) in plain):
                name = b.name
                out.append(
                    _error(
                        f"'{_text(n)}': '{name}' is not an array of buffers",
                        n,
                        f"an element of '{name}' is '{name}.at({', '.join(_text(i) for i in n.indices)})'",
                    )
                )
        elif isinstance(n, A.DmaStmt) and n.after is not None and n.after not in declared:
            out.append(_error(f"'after {n.after}': '{n.after}' is not declared", n, "name a copy's future"))
    return out


def _statements(stmts: list[A.Stmt] | A.Stmt | None, parallel: bool, loop: bool, out: list[Diagnostic]) -> None:
    if stmts is None:
        return
    for s in stmts if isinstance(stmts, list) else [stmts]:
        if isinstance(s, A.Yield) and not parallel:
            out.append(_error("'yield' outside 'parallel'", s, "'yield' leaves a kernel; in host code use 'return'"))
        if isinstance(s, (A.Break, A.Continue)) and not loop:
            word = "break" if isinstance(s, A.Break) else "continue"
            out.append(_error(f"'{word}' outside a loop", s))
        inner_parallel = parallel or isinstance(s, A.Parallel)
        # a loop of the program around a kernel does not reach inside it
        inner_loop = (loop and not isinstance(s, A.Parallel)) or isinstance(s, (A.Foreach, A.While))
        for name in ("body", "then", "other"):
            child = getattr(s, name, None)
            if isinstance(child, A.Stmt):
                _statements(child, inner_parallel, inner_loop, out)
        if isinstance(s, A.Block):
            _statements(list(s.stmts), parallel, loop, out)


def _plain_buffers(fn: A.CoFunction, res: Resolution) -> set[int]:
    """The ids of the bindings of buffers declared without array extents (``shared f32 [64] s;``)."""
    starts = {
        (d.span or n.span).start  # type: ignore[union-attr]
        for n in fn.walk()
        if isinstance(n, A.SpannedDecl)
        for d in n.items
        if not d.dims and (d.span or n.span) is not None
    }
    return {
        id(b)
        for b in res.bindings
        if b.kind == "spanned" and b.origin == "declaration" and b.span is not None and b.span.start in starts
    }


def _value_operands(n: A.Node) -> list[A.Node]:
    """The expressions ``n`` uses as values: operands, assigned values, initialisers, indices."""
    if isinstance(n, A.Binary):
        return [A.unparen(n.lhs), A.unparen(n.rhs)]
    if isinstance(n, A.Unary):
        return [A.unparen(n.operand)]
    if isinstance(n, A.Assign):
        return [A.unparen(n.value)]
    if isinstance(n, A.At):
        return [A.unparen(i) for i in n.indices]
    if isinstance(n, A.ScalarDecl):
        return [A.unparen(d.init) for d in n.items if d.init is not None]
    return []


def _root(e: A.Expr) -> A.Expr:
    while isinstance(e, (A.Paren, A.Index, A.At)):
        e = e.expr if isinstance(e, A.Paren) else e.base
    return e


def _binding(e: A.Expr, res: Resolution) -> Binding | None:
    return res.binding(e) if isinstance(e, A.Name) else None


def _kind(e: A.Expr, res: Resolution) -> str | None:
    b = _binding(e, res)
    return _DATA.get(b.kind) if b is not None else None


def _text(e: A.Expr) -> str:
    from .tiling import source_text

    return source_text(e)


def _error(message: str, node: A.Node, hint: str | None = None) -> Diagnostic:
    return Diagnostic("error", message, node.span, hint)
