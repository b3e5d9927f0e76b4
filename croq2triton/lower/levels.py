"""Parallel levels (LANGUAGE.md 7.3): which ``parallel`` indices are blocks and which are lanes."""

from __future__ import annotations

from ..errors import CroqLoweringError
from ..frontend import ast as A

SUB_BLOCK = ("group-4", "group", "thread")


def _nests(stmt: A.Stmt) -> list[list[A.PBy]]:
    """Every chain of parallel levels reachable from ``stmt`` (outermost first)."""
    chains: list[list[A.PBy]] = []

    def inner_parallels(s: A.Stmt) -> list[A.Parallel]:
        found: list[A.Parallel] = []
        stack: list[A.Node] = [s]
        while stack:
            n = stack.pop()
            if isinstance(n, A.Parallel) and n is not s:
                found.append(n)
                continue
            for c in n.children():
                if isinstance(c, A.Stmt):
                    stack.append(c)
        return found

    def walk(p: A.Parallel, prefix: list[A.PBy]) -> None:
        here = prefix + list(p.levels)
        subs = inner_parallels(p.body if not isinstance(p.body, A.Parallel) else A.Block([p.body]))
        if not subs:
            chains.append(here)
        for q in subs:
            walk(q, here)

    if isinstance(stmt, A.Parallel):
        walk(stmt, [])
    return chains


def assign_levels(top: A.Parallel) -> dict[int, str]:
    """Map ``id(pby)`` to its level for every level of a top-level parallel nest."""
    chains = _nests(top)
    levels: dict[int, str] = {}
    for chain in chains:
        annotated = [b.level for b in chain if b.level]
        n = len(chain)
        for i, b in enumerate(chain):
            if b.level:
                lvl = b.level
            elif not annotated:
                if n == 1:
                    lvl = "thread"
                elif n == 2:
                    lvl = ("block", "thread")[i]
                else:
                    lvl = "block" if i == 0 else ("thread" if i == n - 1 else "group")
            else:
                seen_block = any(c.level in ("block", "cluster") for c in chain[:i])
                if not seen_block and not any(c.level == "block" for c in chain):
                    lvl = "block" if i == 0 else "thread"
                elif not seen_block:
                    lvl = "block"
                else:
                    lvl = "thread" if i == n - 1 else "group"
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
