"""What a function of spanned data returns (LANGUAGE.md 6): "``return x;`` of spanned data must name
a buffer declared (default/global storage) in the function, an input, or a future's ``.data``".  A
view (``return a.subspan(32).at(1);``, or a name bound to one) names none of them: an error.  The
value's kind against the declared type is sema/returns.py's.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution
from .tiling import source_text


def returned_view_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    if fn.ret.kind not in ("spanned", "auto"):
        return []
    out: list[Diagnostic] = []
    for s in _host_returns(fn.body):
        value = A.unparen(s.value) if s.value is not None else None
        b = res.binding(value) if isinstance(value, A.Name) else None
        if not isinstance(value, A.View) and (b is None or b.kind != "view"):
            continue
        text = source_text(value)
        out.append(
            Diagnostic(
                "error",
                f"'{fn.name}' returns the view '{text}': a function returns a buffer declared in it, an input or a"
                " future's '.data', not a view",
                value.span,
                "copy the view into a buffer and return the buffer: 'f32 [n] r; dma.copy VIEW => r; return r;'",
            )
        )
    return out


def _host_returns(stmts: list[A.Stmt]) -> list[A.Return]:
    out: list[A.Return] = []
    for s in stmts:
        if isinstance(s, A.Parallel):
            continue
        if isinstance(s, A.Return):
            out.append(s)
        for c in s.children():
            if isinstance(c, A.Block):
                out.extend(_host_returns(c.stmts))
            elif isinstance(c, A.Stmt):
                out.extend(_host_returns([c]))
    return out
