"""``[[schedule(k_tiles(i, j, ...))]]`` before an MMA permutes the issue order of its K tiles
(LANGUAGE.md 7.9): the list names every tile once, so it is a permutation of ``0 .. n-1`` where
``n`` is its length.  A repeated tile would be issued twice (its product added twice to the
accumulator) and a missing one never; either changes the result, not only the speed."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A


def schedule_errors(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.MmaOp) and n.schedule is not None:
                d = _permutation_error(n)
                if d is not None:
                    out.append(d)
    return out


def _permutation_error(mma: A.MmaOp) -> Diagnostic | None:
    order = mma.schedule or []
    n = len(order)
    if sorted(order) == list(range(n)):
        return None
    repeated = sorted({k for k in order if order.count(k) > 1})
    outside = sorted({k for k in order if not 0 <= k < n})
    why: list[str] = []
    if repeated:
        why.append(f"{_listed(repeated)} {'is' if len(repeated) == 1 else 'are'} listed more than once")
    if outside:
        why.append(f"{_listed(outside)} {'is' if len(outside) == 1 else 'are'} not in [0, {n})")
    written = ", ".join(str(k) for k in order)
    return Diagnostic(
        "error",
        f"k_tiles({written}) is not a permutation of the {n} K tiles [0, {n}): " + "; ".join(why),
        mma.schedule_span or mma.span,
        f"name each K tile 0 .. {n - 1} exactly once, e.g. k_tiles({', '.join(str(k) for k in reversed(range(n)))})",
    )


def _listed(ks: list[int]) -> str:
    return ", ".join(str(k) for k in ks)
