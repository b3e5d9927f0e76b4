"""Statements used where the language does not have them, or on what they do not take
(LANGUAGE.md 7.2, 7.3, 7.4, 7.8, 7.10):

* ``yield`` outside every ``parallel``; ``break`` / ``continue`` outside every loop;
* ``wait`` on something that is no future or event, ``trigger`` on something that is no event;
* ``#x`` of a name that is no bounded index (a tensor, a buffer, a scalar ...);
* ``mdspan<N>`` / ``ituple<N>`` whose value has another rank;
* ``.. after g`` where the function declares no ``g``.

What a name is comes from sema/scopes.py; a name it cannot resolve is left alone (it may be the
host program's).
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Binding, Resolution

# kinds of bindings that are certainly no future, no event and no bounded index
_DATA = {
    "spanned": "a tensor or buffer",
    "int": "an int",
    "bool": "a bool",
    "elem": "a scalar",
    "mdspan": "a shape",
    "ituple": "an ituple",
    "stream": "a stream",
}  # fmt: skip  (an MMA's future is bound as a fragment)


def misuse_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    _statements(fn.body, parallel=False, loop=False, out=out)
    declared = {b.name for b in res.bindings}
    for n in fn.walk():
        if isinstance(n, A.Wait):
            for item in n.items:
                what = _kind(_root(item), res)
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
            if b is not None and b.kind in (*_DATA, "future", "event") and b.kind not in ("int",):
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
