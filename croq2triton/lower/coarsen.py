"""Block coarsening of thread-level kernels whose lifted dot is too short for Hopper.

A kernel such as the tutorial's naive GEMM states ``{bm, bn} by [cdiv(M, 32), ...] : block,
{tm, tn} by [32, 32] : thread``: lifted to Triton, each program computes a 32-row ``tl.dot``,
too short for Hopper's ``wgmma`` (64-row instructions). Coarsening lets one program own ``f``
consecutive row blocks: the block level becomes ``cdiv(M, f * 32)``, the thread level ``f * 32``.
The source schedule coarsens rows to 64 (results are identical; the source's 32-row block cannot
be a Hopper MMA); ``--schedule auto`` coarsens rows and columns to 128 (a 128 x 128 dot reuses
each operand tile four times as often). Only kernels with a per-thread dot product that the
lowering lifts to ``tl.dot`` are coarsened. Columns follow the same rules as rows below.

The rewrite is only done when it provably keeps the meaning. Every use of ``bm`` and ``tm`` must be
one of
* ``bm # tm`` as an index of a tensor dimension whose extent is exactly the ``M`` of
  ``cdiv(M, 32)`` (``#`` multiplies by the thread extent, so the composed row is unchanged);
* ``T.subspan(32, ...).at(bm, ...)`` of a tensor whose first extent is ``M`` (the window grows
  to the union of the ``f`` windows);
* ``buf.at(tm, ...)`` of a shared/local buffer with ``32`` rows that is only written by copies of
  such windows (it grows to ``f * 32`` rows).
Rows of the last program past ``cdiv(M, 32) * 32`` are at or beyond ``M``: every access to them
is outside the tensor (reads zero, writes dropped), so they have no effect.
"""

from __future__ import annotations

import copy

from ..frontend import ast as A
from .rewrites import NotProven as _No
from .rewrites import int_lit as _int
from .rewrites import name_of as _name

WGMMA_ROWS = 64  # wgmma's M per warpgroup: what both schedules coarsen rows to
# --schedule auto: rows x columns of the coarsened dot.  A kernel that streams K from global memory
# (the lifted loop's K step is 64), or stages it in shared tiles at most 64 wide (after
# lower/ksplit.py), gets 128 x 256 (v0: 0.98-1.01 of cuBLAS at 8192^3, v1 1.01; perf/RESULTS.md
# 2026-11-30; the kernel then runs its body in a loop of one iteration, see kernel.grouped_order);
# one that stages wider K tiles keeps 128 x 128: with 128-wide stages (64 KB at 128 x 128, 96 KB at
# 128 x 256) 128 x 256 leaves room for only two stages (v1 before ksplit: 0.78 vs 0.88)
AUTO_THREAD_TILES = {"streamed": (128, 256), "staged": (128, 128)}
NARROW_STAGE = 64  # widest staged K step that counts as streamed


def auto_thread_tiles(top: A.Parallel, k_step: int | None = None) -> tuple[int, int]:
    """``k_step``: the K width of the block's staged loops (lower/ksplit.py), None when unknown."""
    staged = any(isinstance(n, A.SpannedDecl) and n.storage in ("shared", "local") for n in top.body.walk())
    narrow = k_step is not None and k_step <= NARROW_STAGE
    return AUTO_THREAD_TILES["staged" if staged and not narrow else "streamed"]


def coarsen(fn: A.CoFunction, top: A.Parallel, targets: tuple[int, int]) -> tuple[A.Parallel, tuple[int, int]] | None:
    """The coarsened copy of ``top`` and its (row, column) factors, or None when nothing applies.

    ``targets`` are the block extents to reach along each dim (1 leaves the dim alone)."""
    if len(top.levels) != 2 or not _has_dot_candidate(top.body):
        return None
    factors = [1, 1]
    cur = top
    for d, target in enumerate(targets):
        done = _coarsen_dim(fn, cur, d, target)
        if done is not None:
            cur, factors[d] = done
    return (cur, (factors[0], factors[1])) if factors != [1, 1] else None


def _coarsen_dim(fn: A.CoFunction, top: A.Parallel, d: int, target: int) -> tuple[A.Parallel, int] | None:
    blk, thr = top.levels
    if blk.level != "block" or thr.level != "thread" or not blk.vars or not thr.vars:
        return None
    if len(blk.vars) != 2 or len(thr.vars) != 2 or None in blk.vars or None in thr.vars:
        return None
    rows = _int(thr.bound[d])
    ext = blk.bound[d]
    if rows is None or rows >= target or target % rows:
        return None
    if not (isinstance(ext, A.Builtin) and ext.name == "cdiv" and len(ext.args) == 2 and _int(ext.args[1]) == rows):
        return None
    extent = _name(ext.args[0])
    if extent is None:
        return None
    shapes: dict[str, list[str | None]] = {}
    for p in fn.params:
        shp = getattr(p.type, "shape", None)
        dims = getattr(shp, "dims", None)
        if dims is not None:
            shapes[p.name] = [_name(x) for x in dims]
    f = target // rows
    bm, tm = blk.vars[d], thr.vars[d]
    assert bm is not None and tm is not None
    body = copy.deepcopy(top.body)
    try:
        _Rewrite(bm, tm, rows, f, extent, shapes).run(body)
    except _No:
        return None
    new_blk = copy.deepcopy(blk)
    new_blk.bound[d] = A.Builtin("cdiv", [ext.args[0], A.IntLit(rows * f, str(rows * f))], span=ext.span)
    new_thr = copy.deepcopy(thr)
    new_thr.bound[d] = A.IntLit(rows * f, str(rows * f), span=thr.bound[d].span)
    out = copy.copy(top)
    out.levels = [new_blk, new_thr]
    out.body = body
    return out, f


def _has_dot_candidate(body: A.Stmt) -> bool:
    """A per-thread ``acc += x * y`` inside a loop: what the lowering lifts to ``tl.dot``."""
    for n in body.walk():
        if isinstance(n, A.Foreach):
            for a in n.body.walk():
                if isinstance(a, A.Assign) and a.op == "+" and isinstance(a.value, A.Binary) and a.value.op == "*":
                    return True
    return False


class _Rewrite:
    def __init__(self, bm: str, tm: str, rows: int, f: int, extent: str, shapes: dict[str, list[str | None]]) -> None:
        self.bm, self.tm, self.rows, self.f, self.extent, self.shapes = bm, tm, rows, f, extent, shapes
        self.allowed: set[int] = set()  # ids of Name nodes whose use is checked
        self.buffers: dict[str, A.SpannedDecl] = {}
        self.windows: dict[int, A.ViewOp] = {}  # id(view) -> its subspan, grown at the end

    def run(self, body: A.Stmt) -> None:
        nodes = list(body.walk())
        rows_bufs: dict[str, A.SpannedDecl] = {}  # buffers with `rows` rows declared in the kernel
        for n in nodes:
            if (
                isinstance(n, A.SpannedDecl)
                and n.storage in ("shared", "local")
                and n.shape
                and _int(n.shape[0]) == self.rows
                and len(n.items) == 1
                and not n.items[0].dims
            ):
                rows_bufs[n.items[0].name] = n
        # a buffer grows with the block when a copy of a row window of bm fills it
        fixed: set[str] = set()
        for n in nodes:
            if isinstance(n, A.DmaStmt) and _name(n.dst) in rows_bufs:
                name = _name(n.dst)
                assert name is not None
                if n.op == "copy" and isinstance(n.src, A.View) and self.window(n.src):
                    self.buffers[name] = rows_bufs[name]
                    self.allowed.add(id(n.dst))
                else:
                    fixed.add(name)
        if fixed & set(self.buffers):
            raise _No  # filled from a bm window and from something else
        for n in nodes:
            if isinstance(n, A.At):
                self.at(n)
            elif isinstance(n, A.View):
                self.window(n)
        for n in nodes:
            if isinstance(n, A.Name) and n.name in (self.bm, self.tm, *self.buffers) and id(n) not in self.allowed:
                raise _No  # another use of the row index, or of a buffer that grows
        for decl in self.buffers.values():
            decl.shape = [self.grown(decl.shape[0]), *decl.shape[1:]]
        for op in self.windows.values():
            op.args = [self.grown(op.args[0]), *op.args[1:]]

    def grown(self, old: A.Expr) -> A.IntLit:
        return A.IntLit(self.rows * self.f, str(self.rows * self.f), span=old.span)

    def at(self, n: A.At) -> None:
        base = _name(n.base)
        if not n.indices:
            return
        first = n.indices[0]
        if base in self.buffers and _name(first) == self.tm:
            self.allowed.update({id(n.base), id(first)})
            return
        for k, ix in enumerate(n.indices):
            if isinstance(ix, A.Binary) and ix.op == "#" and _name(ix.lhs) == self.bm and _name(ix.rhs) == self.tm:
                dims = self.shapes.get(base or "")
                if dims is None or k >= len(dims) or dims[k] != self.extent:
                    raise _No
                self.allowed.update({id(ix.lhs), id(ix.rhs)})

    def window(self, n: A.View) -> bool:
        """``T.subspan(rows, ...).at(bm, ...)`` of a tensor whose first extent is the coarsened one
        (recorded, to grow to ``f * rows`` once every use is checked)."""
        if id(n) in self.windows:
            return True
        if len(n.ops) != 1:
            return False
        op = n.ops[0]
        if op.kind != "subspan" or not op.at or op.step or op.strides:
            return False
        if _name(op.at[0]) != self.bm or not op.args or _int(op.args[0]) != self.rows:
            return False
        dims = self.shapes.get(_name(n.base) or "")
        if dims is None or dims[0] != self.extent:
            raise _No
        self.allowed.add(id(op.at[0]))
        self.windows[id(n)] = op
        return True
