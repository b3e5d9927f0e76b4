"""The options of a ``select`` are alike (LANGUAGE.md 7.6: ``select(i, f0, f1, ...)`` picks one of them
at run time, so whatever uses the result must hold for each): buffers of one storage, element type
and shape. Upstream rejects ``select(q % 2, i_local0, i_shared0)`` with a ``local`` and a ``shared``
buffer ("i_shared0(shared f32 mdspan<2> [4, 2]) vs. i_local0(local ...)"). Compared where the
options are declared buffers whose storage is written and whose shapes are known when compiling."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Diagnostic
from ..frontend import ast as A
from .consteval import static_shapes
from .scopes import Resolution
from .tiling import source_text


def select_option_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    shape = static_shapes(res)
    decls: dict[tuple[int, int], tuple[str, str]] = {}
    for n in fn.walk():
        if isinstance(n, A.SpannedDecl) and n.storage and n.shape is not None:
            for d in n.items:
                if d.span is not None and not d.dims:  # (an array of buffers: its elements are picked by index)
                    decls[(d.span.line, d.span.col)] = (n.storage, n.elem)
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.Select):
            out.extend(_select_errors(n, res, decls, shape))
    return out


def _select_errors(
    n: A.Select,
    res: Resolution,
    decls: dict[tuple[int, int], tuple[str, str]],
    shape: Callable[[A.Expr], list[int] | None],
) -> list[Diagnostic]:
    described: list[tuple[A.Expr, str, str, list[int] | None]] = []
    for o in n.options:
        if not isinstance(o, A.Name):
            return []
        b = res.binding(o)
        if b is None or b.kind != "spanned" or b.span is None or b.dims is None:
            return []
        decl = decls.get((b.span.line, b.span.col))
        if decl is None:
            return []
        storage, elem = decl
        described.append((o, storage, elem, shape(A.MdspanLit(list(b.dims)))))
    if not described:
        return []
    first = described[0]
    for other in described[1:]:
        differ = other[1:3] != first[1:3] or (other[3] is not None and first[3] is not None and other[3] != first[3])
        if differ:
            return [
                Diagnostic(
                    "error",
                    f"the options of a select differ: '{source_text(other[0])}' ({_what(other)}) vs."
                    f" '{source_text(first[0])}' ({_what(first)})",
                    other[0].span or n.span,
                    "a select picks one of its options at run time: give them one storage, element type and shape",
                )
            ]
    return []


def _what(d: tuple[A.Expr, str, str, list[int] | None]) -> str:
    shape = "" if d[3] is None else f" [{', '.join(str(x) for x in d[3])}]"
    return f"{d[1]} {d[2]}{shape}"
