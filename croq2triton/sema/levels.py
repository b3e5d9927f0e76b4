"""Parallel levels and the thread count of a block (LANGUAGE.md 7.3)."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Diagnostic
from ..frontend import ast as A
from .tiling import source_text

MAX_THREADS = 1024  # per block, every CUDA architecture since sm_70 (upstream GetMaxThreadsPerBlock)
TRITON_MAX_ELEMENTS = 2**20  # elements of one Triton tensor (triton.language.TRITON_MAX_TENSOR_NUMEL)
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


def block_threads(chain: list[A.PBy], value: Callable[[A.Expr], int | None]) -> tuple[int, list[str]] | None:
    """The threads of one block along ``chain`` (the product of the levels below ``block``, a
    ``group`` / ``group-4`` with no thread level inside counting 32 / 128) and its factors as the
    source spells them; None where a bound is not known at compile time or the chain has no block."""
    levels = chain_levels(chain)
    if any(lv in ("device", "term") for lv in levels):
        return None
    first_block = max((i for i, lv in enumerate(levels) if lv in ("block", "cluster")), default=-1)
    below = [i for i, lv in enumerate(levels) if lv in ("group-4", "group", "thread") and i > first_block]
    if not below:
        return None
    factors: list[str] = []
    total = 1
    for i in below:
        for b in chain[i].bound:
            v = value(b)
            if v is None:
                return None
            total *= v
            text = source_text(b)
            factors.append(text if text == str(v) else f"{text} = {v}")
    last = levels[below[-1]]
    if last in IMPLICIT_THREADS:
        total *= IMPLICIT_THREADS[last]
        factors.append(f"{IMPLICIT_THREADS[last]} per '{last}'")
    return total, factors


def thread_count_warnings(top: A.Parallel, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    """A CUDA block holds at most 1024 threads (upstream rejects more); croq2triton makes a block's
    threads the lanes of its tensors (LANGUAGE.md 9.1), where Triton's limit is 2**20 elements, so
    more is a warning (the lifting refuses a block of more than 2**20 threads).

    ``value`` evaluates a bound to an integer (None: not known at compile time; then the count
    is not checked).
    """
    out: list[Diagnostic] = []
    reported: set[int] = set()
    for chain in chains(top):
        counted = block_threads(chain, value)
        if counted is None or not MAX_THREADS < counted[0] <= TRITON_MAX_ELEMENTS:
            continue  # more than Triton allows: the lifting refuses the function
        total, factors = counted
        levels = chain_levels(chain)
        first = next(
            i for i, lv in enumerate(levels) if lv in ("group-4", "group", "thread") and i > _last_block(levels)
        )
        where = chain[first]
        if id(where) in reported:
            continue
        reported.add(id(where))
        how = "" if factors == [str(total)] else f" ({' x '.join(factors)})"
        out.append(
            Diagnostic(
                "warning",
                f"this block has {total} threads{how}, more than the {MAX_THREADS} of a CUDA block (upstream"
                " croqtile rejects it); croq2triton runs a block's threads as the lanes of its tensors, and a"
                f" Triton tensor holds up to {TRITON_MAX_ELEMENTS} elements",
                where.span,
                "to keep the source valid for upstream croqtile, move a factor to ': block' or loop over it with"
                " 'foreach'",
            )
        )
    return out


def sibling_thread_errors(top: A.Parallel, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    """A block has one number of threads, so the parallels inside one block start as many threads
    each (LANGUAGE.md 7.3; upstream: "multiple inner parallel-bys must have compatible block
    dimension"): ``parallel by 1 : group-4`` (128) beside ``parallel by 4 : group`` (4 x 32) is one
    block of 128 threads, ``parallel by 3 : group-4`` (384) beside ``parallel by 3 : group`` (96)
    is no block at all: an error where either parallel starts warps or warpgroups (units whose
    number is the block's shape). Thread-level parallels of different counts (a histogram's
    ``parallel i by 128 : thread`` then ``parallel j by 16 : thread``, or ``parallel t by 1 :
    thread`` for a block's last sum) are a warning: upstream rejects them too, croq2triton runs
    each as the first threads of the block. Counts not known when compiling are not compared."""
    out: list[Diagnostic] = []
    first: dict[int, tuple[int, A.PBy, bool]] = {}  # the block's level -> its first count, where, units

    def at(chain: list[A.PBy]) -> tuple[int, int]:
        return max(((b.span.line, b.span.col) for b in chain if b.span is not None), default=(0, 0))

    for chain in sorted(chains(top), key=at):
        counted = block_threads(chain, value)
        if counted is None:
            continue
        levels = chain_levels(chain)
        block = _last_block(levels)
        if block < 0:
            continue
        where = chain[block + 1]
        units = levels[block + 1] in UNIT_THREADS  # warps or warpgroups
        seen = first.setdefault(id(chain[block]), (counted[0], where, units))
        if seen[0] == counted[0] or seen[1] is where:
            continue
        line = seen[1].span.line if seen[1].span else 0
        single = not (units or seen[2])  # (threads beside threads: the first threads of the block)
        out.append(
            Diagnostic(
                "warning" if single else "error",
                f"the parallels inside one block start different numbers of threads: {counted[0]} here,"
                f" {seen[0]} at line {line}"
                + (
                    " (upstream croqtile rejects it; croq2triton runs each as the first threads of the block)"
                    if single
                    else ""
                ),
                where.span,
                "a block has one number of threads: give each inner 'parallel' as many (threads, or warps"
                " x 32, or warpgroups x 128)"
                + (", and single out threads with a condition ('if (t < 16)')" if single else ""),
            )
        )
        if not single:
            first[id(chain[block])] = (seen[0], where, seen[2])  # one error per differing parallel
    return out


def _last_block(levels: list[str]) -> int:
    return max((i for i, lv in enumerate(levels) if lv in ("block", "cluster")), default=-1)


def unit_thread_errors(top: A.Parallel, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    """The threads of a warp (``group``) are a multiple of 32, those of a warpgroup (``group-4``)
    a multiple of 128 (LANGUAGE.md 7.3): the thread levels inside the innermost unit of a chain
    must hold a multiple of that many (a unit with no thread level inside has them implicitly).
    As upstream (``IsEnforced``), the rule binds units the source annotates: a middle level the
    default mapping makes a ``group`` (``parallel by 2 parallel by 4 parallel by 6``) only orders
    the threads, whose lanes croq2triton's tiles hold at any count."""
    out: list[Diagnostic] = []
    reported: set[int] = set()
    for chain in chains(top):
        levels = chain_levels(chain)
        units = [i for i, lv in enumerate(levels) if lv in UNIT_THREADS and chain[i].level]
        if not units:
            continue
        unit = units[-1]
        inner = [i for i in range(unit + 1, len(chain)) if levels[i] == "thread"]
        if not inner or id(chain[inner[0]]) in reported:
            continue
        values = [value(b) for i in inner for b in chain[i].bound]
        if None in values:
            continue
        count = 1
        for v in values:
            count *= v  # type: ignore[operator]
        need = UNIT_THREADS[levels[unit]]
        if count % need == 0:
            continue
        reported.add(id(chain[inner[0]]))
        what = "warp ('group')" if levels[unit] == "group" else "warpgroup ('group-4')"
        texts = [source_text(b) for i in inner for b in chain[i].bound]
        how = "" if len(texts) == 1 and texts[0] == str(count) else f" ({' x '.join(texts)})"
        out.append(
            Diagnostic(
                "error",
                f"the threads of a {what} are a multiple of {need}, but this thread level has {count}{how}",
                chain[inner[0]].span,
                f"a '{levels[unit]}' unit runs {need} threads (or a multiple): give its thread level {need}",
            )
        )
    return out


def kernels(fn: A.CoFunction) -> list[A.Parallel]:
    """The outermost ``parallel`` statements of ``fn`` (each a kernel launch), through host loops and
    branches."""
    out: list[A.Parallel] = []
    stack: list[A.Node] = list(fn.body)
    while stack:
        n = stack.pop(0)
        if isinstance(n, A.Parallel):
            out.append(n)
        elif isinstance(n, A.Stmt):
            stack[:0] = [c for c in n.children() if isinstance(c, A.Stmt)]
    return out


def pby_levels(fn: A.CoFunction) -> dict[int, str]:
    """The level of every ``parallel`` level of ``fn`` (by ``id`` of its :class:`~A.PBy`): the
    annotation, else the default mapping of its chain."""
    out: dict[int, str] = {}
    for top in kernels(fn):
        for chain in chains(top):
            for b, lvl in zip(chain, chain_levels(chain), strict=True):
                out.setdefault(id(b), lvl)
    return out


def nested_parallels(top: A.Parallel) -> list[A.Parallel]:
    """``top`` and every ``parallel`` inside it."""
    return [n for n in top.walk() if isinstance(n, A.Parallel)]
