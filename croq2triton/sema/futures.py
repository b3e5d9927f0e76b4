"""Futures waited for that never run asynchronously, and asynchronous copies nothing waits for
(LANGUAGE.md 7.8: "Waiting a synchronous future is an error; an async future never waited is an
error").

A future's name may be bound again (``f = dma.copy.async ..`` in a loop), moved (``swap``,
``rotate``, ``select``) or stand for a placeholder (``dma.any``); the checks judge a name by every
statement of the function that binds it, and leave the names that move futures (those of a
``swap``/``rotate``, a ``select`` and what it is assigned to, a ``dma.any``) to the lifting:

* ``wait f`` where every binding of ``f`` is a synchronous ``dma`` / ``tma`` copy: an error at the
  ``wait``;
* ``f = dma.copy.async ..`` whose name no ``wait``, ``trigger .. after`` or ``.. after f`` names (a
  read of ``f.data`` is no wait): an error at the copy;
* ``f = mma.row.row.async acc, a, b`` whose name nothing waits for likewise (LANGUAGE.md 7.9: "``wait
  f`` before reading ``acc``"): an error at the MMA.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .tiling import source_text


def future_errors(fn: A.CoFunction) -> list[Diagnostic]:
    nodes = list(fn.walk())
    moved = _moved(nodes)  # futures that move between names: the lifting follows them
    binders: dict[str, list[A.Node]] = {}
    for n in nodes:
        result = getattr(n, "result", None)
        if isinstance(n, (A.DmaStmt, A.MmaOp, A.MmaLoad, A.MmaFill)) and isinstance(result, str):
            binders.setdefault(result, []).append(n)
        elif isinstance(n, A.AssignStmt):
            for a in n.items:
                if isinstance(a.target, A.Name):
                    binders.setdefault(a.target.name, []).append(a)
    out: list[Diagnostic] = []
    for n in nodes:
        if not isinstance(n, A.Wait):
            continue
        for item in n.items:
            if not isinstance(item, A.Name) or item.name not in binders or item.name in moved:
                continue
            if all(isinstance(b, A.DmaStmt) and not b.is_async for b in binders[item.name]):
                out.append(
                    Diagnostic(
                        "error",
                        f"'wait {item.name}': the copy that gives '{item.name}' is synchronous, there is nothing to wait for",
                        item.span,
                        "write the copy as '.async' to wait for it, or drop the 'wait'",
                    )
                )
    out.extend(_unnamed_async(nodes))
    out.extend(_elements_of_futures(fn, nodes, binders, moved))
    read = _names_read(fn, nodes)
    for name, bs in binders.items():
        if name in read or name in moved:
            continue
        for b in bs:
            if isinstance(b, A.DmaStmt) and b.is_async and b.event is None:
                out.append(
                    Diagnostic(
                        "error",
                        f"the asynchronous copy into '{name}' is never waited for",
                        b.span,
                        f"add 'wait {name};' before the data is used, or drop '.async'",
                    )
                )
                break
            if isinstance(b, A.MmaOp) and b.variant == "async":
                out.append(_unwaited_mma(name, b))
                break
    return out


def _unwaited_mma(name: str, m: A.MmaOp) -> Diagnostic:
    acc = source_text(m.acc)
    return Diagnostic(
        "error",
        f"the asynchronous MMA '{name}' (into '{acc}') is never waited for",
        m.span,
        f"add 'wait {name};' before '{acc}' is read (an mma.store, another MMA), or drop '.async'",
    )


def _elements_of_futures(
    fn: A.CoFunction, nodes: list[A.Node], binders: dict[str, list[A.Node]], moved: set[str]
) -> list[Diagnostic]:
    """``f.at(i, j)`` of a copy's future ``f``: a future is no spanned data; its elements are read
    through its destination, ``f.data.at(i, j)`` (LANGUAGE.md 7.5, 7.6; upstream rejects it: "expect
    'f' a spanned type"). Names that are also declared as buffers, parameters or scalars, or that
    move between futures, are left alone."""
    declared = {p.name for p in fn.params}
    for n in nodes:
        if isinstance(n, (A.SpannedDecl, A.ScalarDecl, A.FragDecl, A.EventDecl)):
            declared.update(d.name for d in n.items)
    out: list[Diagnostic] = []
    for n in nodes:
        if not (isinstance(n, A.At) and isinstance(n.base, A.Name)):
            continue
        name = n.base.name
        bs = binders.get(name)
        if not bs or name in declared or name in moved or not all(isinstance(b, A.DmaStmt) for b in bs):
            continue
        out.append(
            Diagnostic(
                "error",
                f"'{name}' is the future of a copy, not spanned data: its elements are '{name}.data.at(...)'",
                n.base.span or n.span,
                f"read the copy's destination through the future: '{name}.data.at(...)'",
            )
        )
    return out


def _names_read(fn: A.CoFunction, nodes: list[A.Node]) -> set[str]:
    """The futures something waits for: a ``wait``, a ``trigger .. after`` or an ``.. after f``
    names them (reading ``f.data`` or ``f.span`` does not wait for the copy)."""
    out: set[str] = set()
    for n in nodes:
        waited: list[A.Expr] = (
            list(n.items) if isinstance(n, A.Wait) else list(n.after) if isinstance(n, A.Trigger) else []
        )
        out.update(x.name for w in waited for x in w.walk() if isinstance(x, A.Name))
        after = getattr(n, "after", None)
        if isinstance(after, str):
            out.add(after)
    return out


def _moved(nodes: list[A.Node]) -> set[str]:
    """The names a ``swap`` / ``rotate`` exchanges, a ``dma.any`` declares, a ``select`` picks from or
    is assigned to: which copy such a name stands for is decided at run time."""
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, A.Swap):
            out.update(n.names)
        elif isinstance(n, A.DmaAny):
            out.add(n.result)
        elif isinstance(n, A.Select):
            out.update(x.name for o in n.options for x in o.walk() if isinstance(x, A.Name))
        elif isinstance(n, A.AssignStmt):
            for a in n.items:
                if isinstance(a.target, A.Name) and any(isinstance(x, A.Select) for x in a.value.walk()):
                    out.add(a.target.name)
        elif isinstance(n, A.DmaStmt) and n.result and isinstance(n.dst, A.Select):
            out.add(n.result)
    return out


def _unnamed_async(nodes: list[A.Node]) -> list[Diagnostic]:
    """``dma.copy.async a => b;`` with no ``f =``: nothing can wait for it (LANGUAGE.md 7.8: "A
    future named with ``f =`` is needed for async copies"; the tutorial's ``tma.copy.async<ev>``
    names an event instead)."""
    return [
        Diagnostic(
            "error",
            f"an asynchronous {n.engine}.{n.op} with no future: nothing can wait for it",
            n.span,
            f"name its future and wait for it: 'f = {n.engine}.{n.op}.async ...; wait f;', or drop '.async'",
        )
        for n in nodes
        if isinstance(n, A.DmaStmt) and n.is_async and n.result is None and n.event is None
    ]
