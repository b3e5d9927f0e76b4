"""Where a kernel's buffers live, decided before lifting (LANGUAGE.md 7.5): in registers, or in a
per-program scratch area of global memory.

A buffer is a register tile of the program (lift/buffers.py) where every element access names
each thread's own element (``s.at(i, j)`` under ``parallel {i, j}``) or one element the same for
the whole block: the tile then holds all the threads' elements at once.  A buffer that a thread
reads or writes at another thread's position (``s.at(15 - t)``, ``counts.at(bin)`` with ``bin``
computed from the thread's data) or that is the target of an atomic has no such tile: Triton
cannot gather from or scatter into a register tile.  Those buffers live in scratch memory,
addressed element by element (lift/scratch.py).

The analysis reads the AST: the names that vary between threads are the thread-level parallel
indices and every local computed from one of them (to a fixed point); an index is the thread's
own when it is one such parallel index as it stands, and uniform when it names no varying name.
"""

from __future__ import annotations

from ..frontend import ast as A
from .terms import unparen


def scratch_buffers(top: A.Parallel, lanes: set[str]) -> set[str]:
    """The names of the buffers of ``top`` (declared in it, or results of copies into fresh
    memory) that live in scratch memory; ``lanes`` are the thread-level parallel indices."""
    varying = _varying(top, lanes)
    out: set[str] = set()
    for n in top.walk():
        if isinstance(n, A.Call) and n.kind == "atomic" and n.args:
            target = _buffer_name(unparen(n.args[0]).base) if isinstance(unparen(n.args[0]), A.At) else None  # type: ignore[attr-defined]
            if target is not None:
                out.add(target)
        if isinstance(n, A.At):
            name = _buffer_name(n.base)
            if name is not None and any(_elsewhere(i, lanes, varying) for i in n.indices):
                out.add(name)
    return out


def _buffer_name(base: A.Expr) -> str | None:
    """The buffer an element access names: ``s`` in ``s.at(..)`` and ``s.data.at(..)``."""
    b = unparen(base)
    if isinstance(b, A.Member) and b.member == "data":
        b = unparen(b.base)
    return b.name if isinstance(b, A.Name) else None


def _elsewhere(index: A.Expr, lanes: set[str], varying: set[str]) -> bool:
    """Does ``index`` vary between threads other than as a thread's own parallel index?"""
    i = unparen(index)
    if isinstance(i, A.Name) and i.name in lanes:
        return False
    return bool(_names(i) & varying)


def _names(e: A.Node) -> set[str]:
    return {n.name for n in e.walk() if isinstance(n, A.Name)}


def _varying(top: A.Parallel, lanes: set[str]) -> set[str]:
    """The names whose values differ between the threads of a block: a local is, where its value
    or the condition of an ``if`` around its assignment names one that is."""
    varying = set(lanes)
    defs: list[tuple[str, set[str]]] = []  # a local and the names its value depends on
    _definitions(top.body, set(), defs)
    changed = True
    while changed:
        changed = False
        for name, uses in defs:
            if name not in varying and uses & varying:
                varying.add(name)
                changed = True
    return varying


def _definitions(n: A.Node, conds: set[str], out: list[tuple[str, set[str]]]) -> None:
    if isinstance(n, A.If):
        inner = conds | _names(n.cond)
        for branch in (n.then, n.other):
            if branch is not None:
                _definitions(branch, inner, out)
        return
    if isinstance(n, A.ScalarDecl):
        for d in n.items:
            uses = set(conds)
            for x in (d.init, d.fill):
                if x is not None:
                    uses |= _names(x)
            out.append((d.name, uses))
    elif isinstance(n, A.Assign) and isinstance(unparen(n.target), A.Name):
        out.append((unparen(n.target).name, conds | _names(n.value)))  # type: ignore[attr-defined]
    for c in n.children():
        _definitions(c, conds, out)
