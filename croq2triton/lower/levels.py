"""Parallel levels (LANGUAGE.md 7.3): which ``parallel`` indices are blocks and which are lanes."""

from __future__ import annotations

from ..errors import CroqLoweringError
from ..frontend import ast as A
from ..sema.levels import chain_levels, chains


def assign_levels(top: A.Parallel) -> dict[int, str]:
    """Map ``id(pby)`` to its level for every level of a top-level parallel nest."""
    levels: dict[int, str] = {}
    for chain in chains(top):
        for b, lvl in zip(chain, chain_levels(chain), strict=True):
            prev = levels.get(id(b))
            if prev is not None and prev != lvl:
                raise CroqLoweringError(
                    f"cannot decide the level of this parallel index ({prev} or {lvl})",
                    b.span,
                    "annotate it: ': block', ': group-4', ': group' or ': thread'",
                )
            levels[id(b)] = lvl
            if lvl in ("device", "term"):
                raise CroqLoweringError(f"': {lvl}' parallel levels cannot be lowered to Triton", b.span)
    return levels
