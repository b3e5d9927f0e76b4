"""The split form of block-scaled MMA: ``mma.scale acc, sa, sb;`` (LANGUAGE.md 7.9).

Every MMA issued into ``acc`` since the previous ``mma.scale acc`` of the same statement list
(the enclosing loop body) accumulates into a hidden temporary, which the ``mma.scale`` then
multiplies by the scales and adds to ``acc``.  This pass makes the temporary explicit: it is
filled with zero where the segment starts (an f32 accumulator), the segment's MMAs into ``acc``
are redirected to it, and the ``mma.scale`` records its name (``MmaScale.temp``); lowering emits
``acc += temp * sa * sb``.
"""

from __future__ import annotations

import copy
from dataclasses import fields

from ..frontend import ast as A


def split_scales(top: A.Parallel) -> A.Parallel:
    """``top`` with the hidden accumulators of its ``mma.scale`` statements made explicit."""
    if not any(isinstance(n, A.MmaScale) for n in top.walk()):
        return top
    top = copy.deepcopy(top)
    count = [0]
    for n in list(top.walk()):
        for f in fields(n):
            v = getattr(n, f.name)
            if isinstance(v, list) and any(isinstance(x, A.MmaScale) for x in v):
                v[:] = _segment(v, count)
    return top


def _acc_name(e: A.Expr) -> str | None:
    return e.name if isinstance(e, A.Name) else None


def _segment(stmts: list[A.Stmt], count: list[int]) -> list[A.Stmt]:
    out: list[A.Stmt] = []
    start: dict[str, int] = {}  # acc -> index in `out` where its current segment starts
    for s in stmts:
        if isinstance(s, A.MmaScale) and _acc_name(s.acc) is not None:
            acc = _acc_name(s.acc)
            assert acc is not None
            first = start.get(acc, 0)
            temp = f"{acc}__scaled{count[0]}"
            count[0] += 1
            for x in out[first:]:
                for m in x.walk():
                    if isinstance(m, A.MmaOp) and _acc_name(m.acc) == acc and m.variant != "scale":
                        m.acc = A.Name(temp, span=m.acc.span)
            fill = A.MmaFill(A.FloatLit(0.0, "0.0f", False), result=temp, elem="f32", span=s.span)
            out.insert(first, fill)
            out.append(A.MmaScale(s.acc, s.sa, s.sb, temp=temp, span=s.span))
            start[acc] = len(out)
            continue
        out.append(s)
    return out
