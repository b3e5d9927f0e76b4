"""A TMA copy's box is part of its descriptor, which the host makes before the launch (LANGUAGE.md
7.6 and 7.8: "TMA requires host-computable extents"): the extents of its views (``.subspan(e)``,
``.view(e).from(o)``, ``.span_as(n)``, ``.modspan(e)``) are constants or computed from the
function's parameters and host code, never from values of the kernel (block or thread indices, loop
counters, names computed inside a ``parallel``).  Their origins (``.at``, ``.from``) may be."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Diagnostic
from ..frontend import ast as A
from .consteval import constant_values
from .scopes import Binding, Resolution, Scope, resolve
from .tiling import source_text
from .writes import root_name

EXTENT_OPS = ("subspan", "view", "span_as", "modspan")


def tma_box_errors(fn: A.CoFunction) -> list[Diagnostic]:
    copies = [n for s in fn.body for n in s.walk() if isinstance(n, A.DmaStmt) and n.engine == "tma"]
    if not copies:
        return []
    res = resolve(fn)
    value = constant_values(res)
    out: list[Diagnostic] = []
    for c in copies:
        for side in (c.src, c.dst):
            for view in _views(side, res):
                for op in view.ops:
                    if op.kind not in EXTENT_OPS:
                        continue
                    for arg in op.args:
                        d = _device_name(arg, res, value)
                        if d is None:
                            continue
                        name, b = d
                        out.append(
                            Diagnostic(
                                "error",
                                f"the box of a TMA copy is made on the host before the launch, but its extent"
                                f" '{source_text(arg)}' depends on '{name}', {_what(b)}",
                                arg.span,
                                "give the box a constant or host-computed extent (tiles of the kernel's own"
                                " extent: 'chunkat' or 'subspan(..).at(..)'), or copy with 'dma.copy'",
                            )
                        )
                        break
    return out


def _views(e: A.Expr, res: Resolution) -> list[A.View]:
    """``e`` and the views bound to the name at its root (``v = x.view(TM, 64).from(..)``)."""
    out: list[A.View] = []
    seen: set[int] = set()
    cur: A.Expr | None = e
    while cur is not None and id(cur) not in seen:
        e = cur
        seen.add(id(e))
        if isinstance(e, A.Paren):
            cur = e.expr
            continue
        if isinstance(e, A.View):
            out.append(e)
        root = root_name(e)
        b = res.binding(root) if root is not None else None
        cur = b.value if b is not None and b.kind == "view" else None
    return out


def _device_name(arg: A.Expr, res: Resolution, value: Callable[[A.Expr], int | None]) -> tuple[str, Binding] | None:
    if value(arg) is not None:
        return None
    for n in arg.walk():
        if isinstance(n, A.Name):
            b = res.binding(n)
            if b is not None and b.kind != "dim" and _in_kernel(b.scope):
                return n.name, b
    return None


def _in_kernel(scope: Scope | None) -> bool:
    while scope is not None:
        if scope.kind == "parallel":
            return True
        scope = scope.parent
    return False


def _what(b: Binding) -> str:
    if b.kind == "bounded" and b.origin == "parallel":
        return "an index of the kernel's 'parallel'"
    if b.kind == "bounded":
        return "a loop index of the kernel"
    return "a value the kernel computes"
