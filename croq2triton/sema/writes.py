"""Which tensor parameters a ``__co__`` function writes.

Used by the launcher (a by-value parameter the function writes is copied first, so the caller's
tensor keeps its values as with upstream's host-to-device copy; a ``&`` parameter on another
device is copied back) and by the torch op registration (``mutates_args``).

The analysis is syntactic and errs on the side of "written": every store target (element
assignment, ``dma``/``tma`` copy destination, ``mma.store`` destination, ``atomic`` target) is
followed through views and names bound to views back to its root.
"""

from __future__ import annotations

from ..frontend import ast as A


def root_name(e: A.Expr | None) -> A.Name | None:
    """The name at the root of an element access or view (``out`` of ``out.subspan(..).at(..)``)."""
    while e is not None:
        if isinstance(e, A.Name):
            return e
        if isinstance(e, (A.At, A.Index, A.View)):
            e = e.base
        elif isinstance(e, A.Paren):
            e = e.expr
        else:
            return None
    return None


def _root(e: A.Expr | None, alias: dict[str, str]) -> str | None:
    n = root_name(e)
    return alias.get(n.name, n.name) if n is not None else None


def written_params(fn: A.CoFunction) -> set[str]:
    params = {p.name for p in fn.params if p.name and p.type.kind == "spanned"}
    return written_tensors(fn.body, params)


def written_tensors(stmts: list[A.Stmt], params: set[str]) -> set[str]:
    """Which of the tensors ``params`` the statements write (through views and names of views)."""
    nodes = [n for s in stmts for n in s.walk()]
    alias: dict[str, str] = {}
    changed = True
    while changed:  # names bound to views of parameters (``v = out.subspan(..)``), transitively
        changed = False
        for n in nodes:
            if isinstance(n, A.Assign) and n.op == "=" and isinstance(n.target, A.Name):
                r = _root(n.value, alias) if isinstance(n.value, (A.View, A.Name, A.Paren)) else None
                if r in params and alias.get(n.target.name) != r:
                    alias[n.target.name] = r
                    changed = True
    out: set[str] = set()
    for n in nodes:
        targets: list[A.Expr | None] = []
        if isinstance(n, A.Assign) and not isinstance(n.target, A.Name):
            targets.append(n.target)
        elif isinstance(n, A.DmaStmt) and not n.dst_storage:
            targets.append(n.dst)
            if isinstance(n.dst, A.Select):
                targets.extend(n.dst.options)
        elif isinstance(n, A.MmaStore):
            targets.append(n.dst)
        elif isinstance(n, A.Call) and n.kind == "atomic" and n.args:
            targets.append(n.args[0])
        for t in targets:
            r = _root(t, alias)
            if r in params:
                out.add(r)  # type: ignore[arg-type]
    return out
