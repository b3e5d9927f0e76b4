"""Fragment element loops and utilities against the fragment's rank and shape (LANGUAGE.md 7.4,
7.9), where the declaration shows them:

* ``apply {i, j} in x.span`` names one index per dimension of ``x``: ``apply {i}`` over a 2-D
  accumulator is an error;
* ``all_reduce_sum(x)`` sums a replicated 1-D fragment: of a 2-D one it is an error;
* ``copy(dst, src)`` copies a fragment into one of its shape: other extents are an error.

A fragment's rank is written by ``frag T [shape] x`` and is 2 for an accumulator made by
``x = mma.fill ..``; its extents are known where the
declaration's are constants.  The shapes only the lifting knows (an accumulator's, from its MMA)
are checked there (lift/mma.py).
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .consteval import constant_values
from .scopes import Binding, Resolution, shape_extents
from .tiling import source_text


def fragment_shape_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    value = constant_values(res)
    shapes: dict[tuple[int, str], list[int | None]] = {}  # (start of the declaration, name) -> extents
    for n in fn.walk():
        if isinstance(n, A.FragDecl) and n.shape is not None:
            extents = shape_extents(A.MdspanLit(list(n.shape)), res.binding)
            for d in n.items:
                sp = d.span or n.span
                if extents is not None and sp is not None and not d.dims:
                    shapes[(sp.start, d.name)] = [value(x) for x in extents]
        elif isinstance(n, A.MmaFill) and n.result and n.span is not None:
            shapes[(n.span.start, n.result)] = [None, None]

    def shape(b: Binding | None) -> list[int | None] | None:
        return shapes.get((b.span.start, b.name)) if b is not None and b.kind == "frag" and b.span else None

    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.Apply):
            ext = shape(res.binding(n))
            if ext is not None and len(ext) != len(n.vars):
                names = ", ".join(f"i{k}" for k in range(len(ext)))
                out.append(
                    Diagnostic(
                        "error",
                        f"'apply {{{', '.join(n.vars)}}}' names {len(n.vars)} ind{'ices' if len(n.vars) != 1 else 'ex'}"
                        f" for the {len(ext)} dimension{'s' if len(ext) != 1 else ''} of '{n.frag}'",
                        n.span,
                        f"name one index per dimension: 'apply {{{names}}} in {n.frag}.span'",
                    )
                )
        elif isinstance(n, A.FragOp) and n.op == "all_reduce_sum" and len(n.args) == 1:
            x = A.unparen(n.args[0])
            ext = shape(res.binding(x)) if isinstance(x, A.Name) else None
            if ext is not None and len(ext) != 1:
                out.append(
                    Diagnostic(
                        "error",
                        f"'all_reduce_sum' sums a 1-D fragment across its owners; '{source_text(x)}' has"
                        f" {len(ext)} dimensions",
                        x.span,
                        "reduce it to one dimension first: 'reduce_sum(row, acc, 1); all_reduce_sum(row);'",
                    )
                )
        elif isinstance(n, A.FragOp) and n.op == "copy" and len(n.args) == 2:
            dst, src = (A.unparen(a) for a in n.args)
            a = shape(res.binding(dst)) if isinstance(dst, A.Name) else None
            b = shape(res.binding(src)) if isinstance(src, A.Name) else None
            if a is None or b is None:
                continue
            differ = len(a) != len(b) or any(p is not None and q is not None and p != q for p, q in zip(a, b))
            if differ:
                out.append(
                    Diagnostic(
                        "error",
                        f"'copy({source_text(dst)}, {source_text(src)})' copies a fragment into one of its shape;"
                        f" '{source_text(dst)}' is {_text(a)} and '{source_text(src)}' is {_text(b)}",
                        n.span,
                        "declare the destination with the source's extents",
                    )
                )
    return out


def _text(ext: list[int | None]) -> str:
    return "[" + ", ".join("?" if x is None else str(x) for x in ext) + "]"
