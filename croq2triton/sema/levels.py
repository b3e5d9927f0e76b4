"""Parallel levels and the thread count of a block (LANGUAGE.md 7.3)."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Diagnostic
from ..frontend import ast as A
from .tiling import source_text

MAX_THREADS = 1024  # per block, every CUDA architecture since sm_70 (upstream GetMaxThreadsPerBlock)
IMPLICIT_THREADS = {"group": 32, "group-4": 128}  # a group level with no thread level inside it


UNIT_THREADS = {"group": 32, "group-4": 128}  # threads of a warp / warpgroup unit (LANGUAGE.md 7.3)


def chains(top: A.Parallel) -> list[list[A.PBy]]:
    """Every chain of levels of a parallel nest, outermost first (through loops and branches)."""
    out: list[list[A.PBy]] = []

    def inner(s: A.Node) -> list[A.Parallel]:
        found: list[A.Parallel] = []
        stack = list(s.children())
        while stack:
            n = stack.pop()
            if isinstance(n, A.Parallel):
                found.append(n)
            elif isinstance(n, A.Stmt):
                stack.extend(n.children())
        return found

    def walk(p: A.Parallel, prefix: list[A.PBy]) -> None:
        here = prefix + list(p.levels)
        subs = inner(p)
        if not subs:
            out.append(here)
        for q in subs:
            walk(q, here)

    walk(top, [])
    return out


def chain_levels(chain: list[A.PBy]) -> list[str]:
    """The level of each element of ``chain``: the annotation, else the default mapping (pass
    ``pbfill``): one level is ``thread`` of a single block; two are ``block``, ``thread``; three
    or more ``block``, ``group`` ..., ``thread``."""
    annotated = [b.level for b in chain if b.level]
    n = len(chain)
    out: list[str] = []
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
        out.append(lvl)
    return out


def thread_count_errors(top: A.Parallel, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    """A block may hold at most 1024 threads: the product of the levels below ``block``.

    ``value`` evaluates a bound to an integer (None: not known at compile time; then the count
    is not checked).
    """
    errors: list[Diagnostic] = []
    reported: set[int] = set()
    for chain in chains(top):
        levels = chain_levels(chain)
        if any(lv in ("device", "term") for lv in levels):
            continue
        below = [i for i, lv in enumerate(levels) if lv in ("group-4", "group", "thread")]
        first_block = max((i for i, lv in enumerate(levels) if lv in ("block", "cluster")), default=-1)
        below = [i for i in below if i > first_block]
        if not below:
            continue
        factors: list[str] = []
        total = 1
        known = True
        for i in below:
            for b in chain[i].bound:
                v = value(b)
                if v is None:
                    known = False
                    break
                total *= v
                text = source_text(b)
                factors.append(text if text == str(v) else f"{text} = {v}")
            if not known:
                break
        if not known:
            continue
        last = levels[below[-1]]
        if last in IMPLICIT_THREADS:
            total *= IMPLICIT_THREADS[last]
            factors.append(f"{IMPLICIT_THREADS[last]} per '{last}'")
        if total <= MAX_THREADS:
            continue
        how = "" if factors == [str(total)] else f" ({' x '.join(factors)})"
        where = chain[below[0]]
        if id(where) in reported:
            continue
        reported.add(id(where))
        errors.append(
            Diagnostic(
                "error",
                f"this block has {total} threads{how}; at most {MAX_THREADS} fit in one block",
                where.span,
                "use fewer threads per block: move a factor to ': block', or loop over it with 'foreach'",
            )
        )
    return errors
