"""Narrowing: a block whose rows are independent runs one row a program (an AST rewrite ``--schedule
auto`` applies before lifting, emit/kernels.py).

A block that owns ``Q`` rows, each lane reading and writing only its row's coordinate ``r # q``::

    parallel r by cdiv(M, 4) : block {
      shared f32 [4, 64] part;
      parallel {q, t} by [4, 64] : thread { .. x.at(r # q, j * 64 + t) .. part.at(q, t) .. }
    }

computes on row ``r * 4 + q`` only with the lanes of the same ``q``: nothing a lane of ``q`` does
reaches another ``q`` (its global accesses are at its own row, its shared memory is its own slice
``part.at(q, ..)``, and a warp never mixes two ``q``).  The blocks can then as well be ``Q`` times
as many with one row each: ``q`` by 1 (``r # q`` is ``r * 1 + 0 = r``), ``r`` by ``cdiv(M, 4) * 4``,
the shared slices ``[1, 64]``; every row ``r`` of ``[0, cdiv(M, 4) * 4)`` is computed by the same
statements on the same data, now with a program of its own.  Two passes over a long row (a norm's
statistics, then the scaling) then keep one row a program, which fits in registers or L2
(perf/probe_norm_rows.py, perf/RESULTS.md 2026-12-05: at 4096 x 16384 one row a program in registers
ran at 0.98 of a device copy on the H100, four rows a program in two passes at 0.65-0.75).

The same holds for ``R`` rows a program (``R`` dividing ``Q``: ``q`` by ``R``, ``r`` by ``cdiv(M, 4) * Q / R``,
slices ``[R, 64]``), the ``rows`` field of the kernel's ``TileSchedule`` a tuning point sets.

What is proved on the AST, else None (the block is kept):

* the block level is one index ``r``, ``r`` occurs only as ``r # q``, and neither ``#r`` nor ``#q``
  is read;
* ``q`` is an index of constant extent ``Q > 1`` of a level inside the block, occurring only as
  the right of ``r # q`` and as an index of a buffer declared in the block, at one dimension of
  extent ``Q`` in every access of that buffer (its slice); any other use of such a buffer (a view,
  a copy, the whole buffer) keeps the block;
* the threads after ``q`` in its level and the levels inside it are a multiple of 32 (a warp never
  holds two rows: warp shuffles stay inside a row);
* the block issues no copies, MMAs, events or warp roles (what holds shared memory or orders
  threads beyond ``sync``), and outside the ``parallel`` that declares ``q`` only declarations and
  ``sync`` (a statement the block runs once would run once a row).
"""

from __future__ import annotations

import copy
from math import prod

from ..frontend import ast as A
from ..sema.consteval import const_int

# the statements a narrowed block may hold (anything else: copies, MMAs, fragments, events, roles,
# swaps, yields, C++ or asm, keeps the block as written)
_PLAIN = (
    A.Block, A.Empty, A.PragmaStmt, A.ScalarDecl, A.SpannedDecl, A.MdspanDecl, A.ItupleDecl, A.AssignStmt,
    A.CallStmt, A.Sync, A.Break, A.Continue, A.Parallel, A.With, A.Foreach, A.While, A.If,
)  # fmt: skip


def narrowed(top: A.Parallel, rows: int = 1) -> tuple[A.Parallel, int] | None:
    """``top`` with ``rows`` rows a block (a copy; ``rows`` divides the block's) and the rows a block
    had, where the proof holds."""
    if len(top.levels) < 1 or top.levels[0].level != "block" or top.is_async:
        return None
    block = top.levels[0]
    names = block.names
    if len(names) != 1 or len(block.bound) != 1 or not _inner_levels_ok(top):
        return None
    r = names[0]
    if any(isinstance(n, A.Stmt) and not isinstance(n, _PLAIN) for n in top.body.walk()):
        return None
    if any(isinstance(n, A.UBound) and n.name == r for n in top.walk()):
        return None
    composed = [n for n in top.body.walk() if isinstance(n, A.Binary) and n.op == "#" and _is(n.lhs, r)]
    if not composed or any(not isinstance(n.rhs, A.Name) for n in composed):
        return None
    qs = {n.rhs.name for n in composed}  # type: ignore[attr-defined]
    if len(qs) != 1:
        return None
    (q,) = qs
    found = _level_of(top, q)
    if found is None:
        return None
    level, pos, extent = found
    if extent < 2 or rows < 1 or extent % rows or rows == extent or _inner_threads(top, level, pos) % 32:
        return None
    if any(isinstance(n, A.UBound) and n.name == q for n in top.walk()) or {r, q} & _rebound(top, level):
        return None
    if not _once_a_row(top, level):
        return None
    slices = _slices(top, q, extent)
    if slices is None:
        return None
    # every occurrence of r and q is one the rewrite keeps
    r_uses = sum(1 for n in top.body.walk() if _is(n, r))
    if r_uses != len(composed):
        return None
    q_uses = sum(1 for n in top.body.walk() if _is(n, q))
    sliced = sum(1 for n in top.body.walk() if isinstance(n, A.At) and _is(n.base, None, slices))
    if q_uses != len(composed) + sliced:
        return None
    return _rewrite(top, level, pos, extent, rows, slices), extent


def _once_a_row(top: A.Parallel, level: A.PBy) -> bool:
    """Whether every statement with an effect runs for each row (inside the ``parallel`` that declares
    ``q``): a statement a block runs once (a count of blocks, an atomic outside the rows' level) would
    run once a row after narrowing.  Declarations and ``sync`` may stand outside it."""
    if level in top.levels:
        return True
    holder = next(n for n in top.body.walk() if isinstance(n, A.Parallel) and level in n.levels)
    todo: list[A.Node] = [top.body]
    while todo:
        n = todo.pop()
        if n is holder:
            continue
        if isinstance(n, A.Block):
            todo.extend(n.stmts)
        elif not isinstance(n, (A.Empty, A.PragmaStmt, A.SpannedDecl, A.ScalarDecl, A.Sync)):
            return False
    return True


def _rebound(top: A.Parallel, level: A.PBy) -> set[str]:
    """Names the block's body binds again (a loop's or a ``with``'s index, a declaration, an
    assignment to a name, another level's index): a shadowed ``r`` or ``q`` is another variable."""
    out: set[str] = set()
    for n in top.body.walk():
        if isinstance(n, A.Within):
            out |= set(n.names)
        elif isinstance(n, A.RangeItem):
            out |= {n.name, n.alias or n.name}
        elif isinstance(n, A.Declarator):
            out.add(n.name)
        elif isinstance(n, A.Assign) and isinstance(n.target, A.Name):
            out.add(n.target.name)
        elif isinstance(n, A.PBy) and n is not level:
            out |= set(n.names)
    return out


def _is(e: object, name: str | None, among: dict[str, int] | None = None) -> bool:
    if not isinstance(e, A.Name):
        return False
    return e.name == name if among is None else e.name in among


def _levels(top: A.Parallel) -> list[A.PBy]:
    """The block's levels and those of every ``parallel`` in its body, in walk order."""
    return [*top.levels, *(lv for n in top.body.walk() if isinstance(n, A.Parallel) for lv in n.levels)]


def _inner_levels_ok(top: A.Parallel) -> bool:
    return all(p.level != "block" for p in top.levels[1:])


def _level_of(top: A.Parallel, q: str) -> tuple[A.PBy, int, int] | None:
    """The level that declares ``q``, its position in the level and its constant extent."""
    out = None
    for p in _levels(top)[1:]:
        names = p.names
        if q in names:
            if out is not None:
                return None  # declared twice
            i = names.index(q)
            if i >= len(p.bound):
                return None
            n = const_int(p.bound[i])
            if n is None:
                return None
            out = (p, i, n)
    return out


def _inner_threads(top: A.Parallel, level: A.PBy, pos: int) -> int:
    """Threads a value of ``q`` holds: the extents after it in its level times those of the levels
    inside it (each ``parallel`` nested in the block, or later in the same ``parallel``); 0 where
    one is not a constant."""
    levels = _levels(top)
    after = levels[levels.index(level) + 1 :]
    extents = [const_int(b) for b in level.bound[pos + 1 :]] + [const_int(b) for p in after for b in p.bound]
    if any(x is None for x in extents):
        return 0
    return prod(extents)  # type: ignore[arg-type]


def _slices(top: A.Parallel, q: str, extent: int) -> dict[str, int] | None:
    """Buffer declared in the block -> the dimension every access indexes with ``q`` (its extent
    ``Q``); None where ``q`` indexes something else or a buffer is used otherwise."""
    decls: dict[str, A.SpannedDecl] = {}
    for n in top.body.walk():
        if isinstance(n, A.SpannedDecl):
            for d in n.items:
                if d.name in decls or d.dims or d.init is not None:
                    return None
                decls[d.name] = n
    out: dict[str, int] = {}
    for n in top.body.walk():
        if isinstance(n, A.At) and any(_is(i, q) for i in n.indices):
            if not isinstance(n.base, A.Name) or n.base.name not in decls:
                return None
            dims = [d for d, i in enumerate(n.indices) if _is(i, q)]
            shape = decls[n.base.name].shape
            if len(dims) != 1 or shape is None or len(shape) != len(n.indices):
                return None
            if const_int(shape[dims[0]]) != extent or out.setdefault(n.base.name, dims[0]) != dims[0]:
                return None
    for name, decl in decls.items():  # a buffer the rows share (not a thread's own): the block stays
        used = any(_is(n, name) for n in top.body.walk())
        if decl.storage != "local" and used and (name not in out or len(decl.items) > 1):
            return None
    for name in out:  # every use of a sliced buffer is an access at its slice
        uses = sum(1 for n in top.body.walk() if _is(n, name))
        at = sum(
            1 for n in top.body.walk() if isinstance(n, A.At) and _is(n.base, name) and _is(n.indices[out[name]], q)
        )
        if uses != at:
            return None
    return out


def _rewrite(top: A.Parallel, level: A.PBy, pos: int, extent: int, rows: int, slices: dict[str, int]) -> A.Parallel:
    new = copy.deepcopy(top)
    block = new.levels[0]
    sp = block.bound[0].span
    more = extent // rows  # blocks a block becomes
    block.bound = [A.Binary("*", A.Paren(block.bound[0], span=sp), A.IntLit(more, str(more), span=sp), span=sp)]
    # the level of q in the copy: the same position among the levels, in walk order
    lv = _levels(new)[_levels(top).index(level)]
    lv.bound = [*lv.bound[:pos], A.IntLit(rows, str(rows), span=lv.bound[pos].span), *lv.bound[pos + 1 :]]
    for n in new.body.walk():
        if isinstance(n, A.SpannedDecl) and n.shape is not None:
            for d in n.items:
                if d.name in slices:
                    dim = slices[d.name]
                    n.shape = [*n.shape[:dim], A.IntLit(rows, str(rows), span=n.shape[dim].span), *n.shape[dim + 1 :]]
    return new
