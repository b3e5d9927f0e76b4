"""The Schedule: every choice of how a tiled kernel runs, as one value (DESIGN.md).

A schedule never changes what a kernel computes, only how: the block tile, the software
pipeline's depth, the warps per program, the program order (groups of ``group_m`` row tiles
that share B in L2), whether a persistent grid of one program per SM walks the tiles, and
whether operands are read through TMA descriptors (where the launch-time tensors allow it; masked
loads otherwise), and how many programs share the K loop of one output tile (split-K, schedule/gemm.py).  ``origin`` says where it comes from: the ``.co`` itself (``source``), the
``auto`` policy (:mod:`.policy`), or a tuning point.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import Literal

MAX_SPLIT_K = 64  # programs one output tile's K loop may be divided among


@dataclass(frozen=True)
class Schedule:
    block_m: int
    block_n: int
    block_k: int
    num_stages: int = 3
    num_warps: int = 8
    group_m: int = 8
    persistent: bool = True
    tma: bool = True
    tma_store: bool = True  # the epilogue as half-width TMA boxes (else one masked store)
    warp_specialize: bool = False  # ask Triton for warp specialization where the launcher's switch allows it
    # a persistent grid's loop over tiles fused with the K loop by Triton (``tl.range(..., flatten=True)``):
    # one software pipeline across tiles, so the next tile's first loads are in flight during this
    # tile's epilogue (schedule/gemm.py); no effect where the grid is not persistent
    flatten: bool = False
    # programs the K loop of one output tile is divided among (1: none; 0: as many as the policy picks at
    # launch, policy.split_for): partial sums in a workspace, added by a second kernel (schedule/gemm.py)
    split_k: int = 1
    origin: Literal["source", "auto", "tuned"] = "auto"

    def __post_init__(self) -> None:
        if self.block_k < 16 or self.block_k & (self.block_k - 1):
            raise ValueError(f"block_k = {self.block_k}: a power of two of at least 16")
        for name in ("block_m", "block_n"):
            v = getattr(self, name)
            if v < 16 or v % 16:
                raise ValueError(f"{name} = {v}: a multiple of 16 (pieces of powers of two)")
        if self.num_stages < 1 or self.num_warps not in (1, 2, 4, 8, 16) or self.group_m < 1:
            raise ValueError(f"not a valid schedule: {self}")
        if not 0 <= self.split_k <= MAX_SPLIT_K:
            raise ValueError(f"split_k = {self.split_k}: 1 (no split) to {MAX_SPLIT_K}, or 0 (chosen at launch)")

    @property
    def pieces_m(self) -> tuple[tuple[int, int], ...]:
        """The row pieces of a tile (see :func:`pieces`)."""
        return pieces(self.block_m)

    @property
    def pieces_n(self) -> tuple[tuple[int, int], ...]:
        """The column pieces of a tile (see :func:`pieces`)."""
        return pieces(self.block_n)

    def with_(self, **changes: object) -> Schedule:
        return replace(self, **changes)  # type: ignore[arg-type]

    def describe(self) -> str:
        order = f"persistent, groups of {self.group_m}" if self.persistent else f"groups of {self.group_m}"
        loads = "TMA loads" if self.tma else "masked loads"
        split = {1: "", 0: ", K split at launch"}.get(self.split_k, f", K split {self.split_k} ways")
        fused = ", tile and K loops fused" if self.flatten and self.persistent else ""
        return (
            f"{self.block_m} x {self.block_n} x {self.block_k} tiles, {self.num_stages} stages, "
            f"{self.num_warps} warps, {order}{fused}, {loads}{split} ({self.origin})"
        )


def pieces(extent: int) -> tuple[tuple[int, int], ...]:
    """A tile extent as pieces of powers of two: (start, width), widest first (one piece where the
    extent is a power of two; 192 = 128 + 64: Triton's blocks are powers of two)."""
    out: list[tuple[int, int]] = []
    start, rest = 0, extent
    while rest:
        w = 1 << (rest.bit_length() - 1)
        out.append((start, w))
        start, rest = start + w, rest - w
    return tuple(out)


MOST_LOOP_SPLITS = 1024  # programs one loop is split across at most (a tuning point's)
MOST_LOAD_STAGES = 8  # stages of a pipelined loop that only reads memory at most
MOST_SERIAL = 64  # blocks of a grid axis one program runs one after the other at most


@dataclass(frozen=True)
class TileSchedule:
    """How a tile kernel that is not a contraction (copies, element-wise kernels) runs: how many
    consecutive blocks of each grid axis one program owns (schedule/widen.py), and its warps."""

    factors: tuple[int, ...]
    num_warps: int
    origin: Literal["source", "auto", "tuned"] = "auto"
    # a program runs 1 / split of a block along each axis (1: whole blocks); one of factor and split is 1
    splits: tuple[int, ...] = ()
    # each lane's sequential loops folded into a tile axis of this many elements (schedule/foldloops.py):
    # 0 keeps them, -1 folds each loop's whole extent (fixed at launch: the row kept in registers)
    fold: int = 0
    # each lane's folded loop split across programs, their partial folds combined by a second kernel
    # (schedule/splitloop.py): None where the kernel's loop is not one that splits; 0: as many programs
    # as the launcher's policy picks for the SMs (schedule/policy.py ``split_count``); 1: not split;
    # S: S programs a loop (the last ones empty where the loop has fewer blocks)
    loop_split: int | None = None
    # software-pipeline stages of each loop that only reads memory (schedule/loadstages.py): None where
    # the kernel has no such loop; 1: as written (Triton pipelines only the loads of a dot); S: each
    # load issued S - 1 iterations ahead through shared memory
    num_stages: int | None = None
    # rows a program of a block of several independent rows (lift/narrow.py): None where the block is
    # not one; 0: one row a program where a row holds policy.NARROW_ROW_BYTES or more (the launcher
    # decides), else as written; R: R rows a program (a divisor of the block's rows; as many: as written)
    rows: int | None = None
    # consecutive blocks of each grid axis one program runs one after the other (schedule/serial.py),
    # their block-independent atomics added once: None where the kernel has no atomic to add once
    # (not a tuning field there), else a factor per axis
    serial: tuple[int, ...] | None = None
    # a split loop's partial folds combined by the last of each column's programs to finish, in the same
    # launch (schedule/lastcombine.py), or by a second kernel: None where the loop does not split
    combine_last: bool | None = None
    # iterations of a loop that loads a tile and folds it a step (schedule/coarsen.py): None where the
    # kernel has no such loop; 0: as the policy picks (schedule/policy.py coarsen_factor); 1: as written
    coarsen: int | None = None
    # a loop that sums squared deviations from what an earlier loop computed folded in that loop's pass
    # (schedule/moments.py: Welford's update, a read fewer): None where the kernel has no such loop
    deviations: bool | None = None
    # a kernel whose lanes walk segments of their own (CSR rows: ``vals.at(lo + k)`` for k below ``hi - lo``,
    # schedule/foldloops.py ``segment_tensors``): how many segments one program sums, as an ``[R, BK]`` tile a
    # step, a loop to the longest of its R (None where the kernel is not one).  Under auto, 0: the launcher
    # picks from the segments' mean length (policy.SEGMENT_ROW_FORMS: one a program where long, R a program
    # where short, the block's lanes where shorter still); -1 (auto or a tuning point): the forms before R a
    # program was one, picked at launch (one a program from policy.SEGMENT_LANE_ELEMS a lane, else the
    # block's lanes).  A tuning point's R >= 1 (a power of two, at most the block's lanes): R a program at
    # every launch (the split's aside), in steps of ``fold``; its 0: one a program, as tuning points ran before
    segment_rows: int | None = None

    def __post_init__(self) -> None:
        if self.serial is not None and (
            len(self.serial) != len(self.factors) or any(f < 1 or f > MOST_SERIAL for f in self.serial)
        ):
            raise ValueError(f"serial = {self.serial}: one factor per grid axis, 1 to {MOST_SERIAL}")
        if not self.splits:
            object.__setattr__(self, "splits", tuple(1 for _ in self.factors))
        if any(f < 1 or f & (f - 1) for f in (*self.factors, *self.splits)):
            raise ValueError(f"factors = {self.factors}, splits = {self.splits}: powers of two")
        if len(self.splits) != len(self.factors) or any(f > 1 and d > 1 for f, d in zip(self.factors, self.splits)):
            raise ValueError(f"splits = {self.splits}: one per axis, 1 where the axis is widened")
        if self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"num_warps = {self.num_warps}")
        if self.fold < -1 or self.fold > 0 and self.fold & (self.fold - 1):
            raise ValueError(f"fold = {self.fold}: 0, -1 or a power of two")
        if self.num_stages is not None and not 1 <= self.num_stages <= MOST_LOAD_STAGES:
            raise ValueError(f"num_stages = {self.num_stages}: 1 (not pipelined) to {MOST_LOAD_STAGES}")
        if self.loop_split is not None and not 0 <= self.loop_split <= MOST_LOOP_SPLITS:
            raise ValueError(f"loop_split = {self.loop_split}: 0 (the launcher picks) to {MOST_LOOP_SPLITS}")
        if self.coarsen is not None and not (0 <= self.coarsen <= 64 and self.coarsen & (self.coarsen - 1) == 0):
            raise ValueError(f"coarsen = {self.coarsen}: 0 (the policy picks) or a power of two up to 64")
        if self.rows is not None and self.rows < 0:
            raise ValueError(f"rows = {self.rows}: 0 (the launcher picks) or the rows a program")
        r = self.segment_rows
        if r is not None and not (r in (-1, 0) or r > 0 and r & (r - 1) == 0):
            raise ValueError(f"segment_rows = {r}: 0 (the launcher picks), -1 (as before) or a power of two")

    def describe(self) -> str:
        blocks = " x ".join(str(f) if d == 1 else f"1/{d}" for f, d in zip(self.factors, self.splits))
        folds = {0: "", -1: ", loops folded whole"}.get(self.fold, f", loops folded in blocks of {self.fold}")
        split = "" if not self.loop_split else f", its loop split across {self.loop_split} programs"
        if split and self.combine_last is not None:
            split += ", combined by the last" if self.combine_last else ", combined by a second kernel"
        stages = "" if (self.num_stages or 1) == 1 else f", loads pipelined in {self.num_stages} stages"
        rows = "" if not self.rows else f", {self.rows} row(s) of a block a program"
        if self.segment_rows is not None and self.segment_rows > 0:
            rows += f", {self.segment_rows} segment(s) a program"
        if self.coarsen and self.coarsen > 1:
            rows += f", {self.coarsen} iterations a step"
        serial = ""
        if self.serial and any(f > 1 for f in self.serial):
            serial = f", {' x '.join(map(str, self.serial))} blocks one after the other"
        return f"{blocks} blocks a program{folds}{split}{stages}{rows}{serial}, {self.num_warps} warps ({self.origin})"


def with_point(schedule: Schedule | TileSchedule, fields: dict[str, object]) -> Schedule | TileSchedule:
    """``schedule`` with the fields a tuning point sets (croq2triton/options.py ``Point``), its origin
    ``tuned``; ValueError names a field the schedule does not have or a value it cannot take."""
    if not fields:
        return schedule
    known = {f.name for f in dataclasses.fields(schedule)} - {"origin"}
    unknown = sorted(set(fields) - known)
    if unknown:
        kind = type(schedule).__name__
        raise ValueError(f"{', '.join(unknown)}: not a field of a {kind} (its fields: {', '.join(sorted(known))})")
    changes = dict(fields)
    if isinstance(schedule, TileSchedule) and "loop_split" in changes and schedule.loop_split is None:
        raise ValueError("loop_split: the kernel's loop is not one that splits across programs")
    if isinstance(schedule, TileSchedule) and "combine_last" in changes and schedule.combine_last is None:
        raise ValueError("combine_last: the kernel's loop is not one that splits across programs")
    if isinstance(schedule, TileSchedule) and "deviations" in changes and schedule.deviations is None:
        raise ValueError("deviations: the kernel has no loop of squared deviations from an earlier loop's result")
    if isinstance(schedule, TileSchedule) and "coarsen" in changes and schedule.coarsen is None:
        raise ValueError("coarsen: the kernel has no loop that loads a tile and folds it (schedule/coarsen.py)")
    if isinstance(schedule, TileSchedule) and "num_stages" in changes and schedule.num_stages is None:
        raise ValueError("num_stages: the kernel has no loop that only reads memory")
    if isinstance(schedule, TileSchedule) and "rows" in changes and schedule.rows is None:
        raise ValueError("rows: the kernel's block is not several independent rows (lift/narrow.py)")
    if isinstance(schedule, TileSchedule) and "segment_rows" in changes and schedule.segment_rows is None:
        raise ValueError("segment_rows: the kernel's lanes do not walk segments of their own (CSR rows)")
    for name in ("factors", "splits", "serial"):
        if isinstance(schedule, TileSchedule) and name in changes:
            given = changes[name]
            # (one number: the one grid axis of a kernel that has one)
            values = (given,) if isinstance(given, int) else tuple(given)  # type: ignore[call-overload]
            if len(values) != len(schedule.factors):
                raise ValueError(f"{name} {values}: one per grid axis ({len(schedule.factors)})")
            changes[name] = values
    return dataclasses.replace(schedule, origin="tuned", **changes)  # type: ignore[arg-type]
