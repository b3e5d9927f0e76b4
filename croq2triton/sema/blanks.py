"""``_`` is no name (LANGUAGE.md 7.6): inside ``chunkat`` it means "no tiling on this dimension",
in ``subspan`` / ``view`` extents "the parent's whole extent".  A ``with`` or ``foreach`` cannot
bind it: such an index could never be used (``x.chunkat(_)`` means the blank, not the index)."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A

HINT = "give the index a name ('with {i} in [4]'); '_' only means 'no tiling' inside chunkat"


def blank_index_errors(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.With):
                out.extend(_within(w, "a 'with' index") for w in n.withins if _blank(w))
            elif isinstance(n, A.Foreach):
                for it in n.items:
                    if isinstance(it, A.Within) and _blank(it):
                        out.append(_within(it, "a 'foreach' index"))
                    elif isinstance(it, A.RangeItem) and "_" in (it.name, it.alias):
                        out.append(
                            Diagnostic("error", "'foreach' cannot iterate over '_': it names no index", it.span, HINT)
                        )
    return out


def _blank(w: A.Within) -> bool:
    return w.name == "_" or "_" in (w.vars or [])


def _within(w: A.Within, what: str) -> Diagnostic:
    return Diagnostic("error", f"'_' cannot be {what}: it names nothing a program could use", w.span, HINT)
