"""Swizzle pairing (LANGUAGE.md 7.8): ``mma.load.swiz<N>`` reads a shared buffer in the layout that
the copies into it state.

A copy ``dma.copy.swiz<128> src => s`` (or ``tma.copy``, or ``f = ... => shared``) writes ``s`` (or
the future ``f``) in the 128-byte swizzled layout; a later ``mma.load.swiz<64> s`` reads another
layout, which on the GPU reads the wrong elements.  Checked here, before a kernel is lifted, so the
mistake is reported whichever way the kernel is translated (as written or tiled as a GEMM).

Per kernel (one top-level ``parallel``) and per buffer name: where every copy into the name states
the same swizzle, every ``mma.load`` of it that states one must state that one.  A swizzle stated
on one side only is the other's too, and a name written with several swizzles (or exchanged by
``swap`` / ``rotate`` with one that is) is not checked here (the lifting follows the buffers).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import Diagnostic, Span
from ..frontend import ast as A
from .tma_rules import swizzle_bytes

HINT = "the copy into a buffer and the mma.load from it must use the same swizzle"


@dataclass(frozen=True)
class _Write:
    swizzle: int | None  # bytes; None: the copy states no swizzle
    span: Span | None


def swizzle_errors(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for s in fn.body:
        for kernel in _kernels(s):
            out.extend(_kernel(kernel))
    return out


def _kernels(node: A.Node) -> Iterator[A.Parallel]:
    """The outermost ``parallel`` statements in ``node`` (a kernel each)."""
    if isinstance(node, A.Parallel):
        yield node
        return
    for child in node.children():
        if isinstance(child, A.Node):
            yield from _kernels(child)


def _kernel(top: A.Parallel) -> Iterator[Diagnostic]:
    writes: dict[str, list[_Write]] = {}
    groups: list[list[str]] = []
    loads: list[A.MmaLoad] = []
    for node in top.walk():
        if isinstance(node, A.DmaStmt):
            w = _Write(_copy_swizzle(node), node.span)
            names = [node.result] if node.result else []
            if not node.dst_storage:
                names += _buffer_names(node.dst)
            for name in names:
                writes.setdefault(name, []).append(w)
        elif isinstance(node, A.Swap):
            groups.append(list(node.names))
        elif isinstance(node, A.MmaLoad) and node.swiz_given:
            loads.append(node)
    for group in groups:  # exchanged names hold each other's buffers
        merged = [w for name in group for w in writes.get(name, [])]
        for name in group:
            writes[name] = merged
    for load in loads:
        names = _buffer_names(load.src)
        if len(names) != 1 or not writes.get(names[0]):
            continue
        name = names[0]
        stated = {w.swizzle for w in writes[name]}
        if len(stated) != 1 or None in stated:
            continue
        have = stated.pop()
        want = swizzle_bytes(load.swiz) if load.swiz is not None else None
        if (want or 0) != have:
            first = writes[name][0].span
            where = f" at {Path(first.file).name}:{first.line}" if first is not None else ""
            message = f"'{name}' is written with .swiz<{have}>{where} but read with mma.load.swiz<{want or 0}>"
            yield Diagnostic("error", message, load.span, HINT)


def _copy_swizzle(s: A.DmaStmt) -> int | None:
    for a in s.attrs:
        if a.name == "swiz":
            return swizzle_bytes(a.args[0] if a.args else 0)
    return None


def _buffer_names(e: A.Expr) -> list[str]:
    """The buffers (or futures) a copy destination or an ``mma.load`` source names: the base of a
    view, ``f.data``, an element of an array of buffers, each option of a ``select``."""
    while True:
        if isinstance(e, A.Name):
            return [e.name]
        if isinstance(e, A.Select):
            return [n for o in e.options for n in _buffer_names(o)]
        if isinstance(e, (A.View, A.Member, A.Index)):
            e = e.base
        elif isinstance(e, A.Paren):
            e = e.expr
        else:
            return []
