"""What ``--schedule auto`` runs a contraction with at launch: a tile that keeps the SMs busy.

The policy's tile (:func:`.policy.auto`: 128 x 256, persistent) is the measured best where the
output has many tiles, but one of them per SM is all a small or skinny output gets: M = 256,
N = K = 8192 has 2 x 32 = 64 tiles of 128 x 256 for the 132 SMs of an H200 (0.59 of cuBLAS,
perf/RESULTS.md), 1024^3 has 32 (0.40).  So the launcher picks among a few compiled kernels by
the launch's sizes and the device's SM count (``_rt.num_sms``: 132 on an H100 / H200), from this
table, the first row that holds:

====  =========================  =========================================================  ========
row   tile, stages, warps        taken where                                                 kernel
====  =========================  =========================================================  ========
A     128 x 256, 4, 8, persist.  its tiles fill at least 9/10 of a wave (tiles >= 0.9 SMs)  ``k``
B     128 x 128, 6, 4            its tiles fill 9/10 of a wave (tiles >= 0.9 SMs)            ``k_t128x128``
C     64 x 128, 4, 4             its tiles fill a wave                                       ``k_t64x128``
D     64 x 64, 4, 4              the split count below is 1 (a wave, or K too short)        ``k_t64x64``
S     64 x 64, K split           otherwise: K divided among ``split_for`` programs a tile   ``k_splitk``
====  =========================  =========================================================  ========

(K steps as :func:`.policy.auto` takes them: 64 for 16-bit operands, 128 for 8-bit, 32 for 32-bit:
the same bytes a stage.)  Why each row:

* A: the measured best at 8192^3 (1.009 of cuBLAS persistent, schedule/policy.py; 1.023 with its tile
  loop fused with the K loop in 4 stages, 16-bit operands); at 2048^3 its 128 tiles on 132 SMs (97% of
  a wave) ran at 0.98 (0.999 fused), so a tile is kept down to 9/10 of a wave;
* B: 128 x 128 x 64, the next best tile at 8192^3 (0.92 of cuBLAS in 4 stages, schedule/policy.py),
  with twice the programs, in the deepest pipeline that fits beside the epilogue up to 6 stages
  (``_deepest``): M = 256, N = K = 8192 (128 tiles for 132 SMs) measured 0.995 of cuBLAS in 6 stages
  and 4 warps, 0.991 in 8 warps, 0.93 in 5, 0.83 in 4, where C's 64 x 128 ran at 0.85 (``croq2triton
  tune`` on the H200, perf/RESULTS.md 2026-12-07 13:10);
* C: one warpgroup's 64 rows: two programs fit an SM (4 stages of 24 KB), so 256 tiles run as one
  wave of two programs per SM;
* D: small outputs (1024^3: 256 programs), three programs an SM (4 stages of 16 KB);
* S: even 64 x 64 tiles leave SMs idle and K is long: ``cdiv(SMs, tiles)`` programs share each
  tile's K loop (each at least ``MIN_SPLIT_STEPS`` K steps, at most ``MAX_SPLIT``), their partial
  sums added by a second kernel (schedule/gemm.py).

Batched, grouped and block-scaled contractions keep :func:`.policy.auto`'s tile (one program per
tile and batch or group; nothing to choose here).  :func:`choose` is the same choice in Python, for
a shape and an SM count (tests and ``explain`` print it without a GPU); the launcher's conditions
are built from the same rows (emit/kernels.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..tir.contract import Contraction
from .policy import auto
from .schedule import Schedule
from .shared import SHARED_LIMIT, contraction_shared

MIN_SPLIT_STEPS = 4  # K steps of each split at least: a shorter loop does not fill the pipeline's stages
MAX_SPLIT = 16  # splits of one tile at most: each adds a tile of f32 partial sums written and read again
DEEPEST = 6  # stages of row B's pipeline at most (as many as fit beside the epilogue's buffer)
H200_SMS = 132


@dataclass(frozen=True)
class Row:
    """One row of the table: the schedule, the suffix of its kernel's name, when it is taken (its tiles
    times ``fill[1]`` at least the SMs times ``fill[0]``; None: by the split count) and why."""

    schedule: Schedule
    tag: str
    fill: tuple[int, int] | None
    reason: str


def table(c: Contraction) -> tuple[Row, ...] | None:
    """The rows for ``c`` (None: the policy's tile at every size: batched, grouped, block-scaled)."""
    if c.scales or c.batched or c.group is not None:
        return None
    a = auto(c)
    bk, store = a.block_k, a.tma_store

    def small(m: int, n: int, stages: int, warps: int, persistent: bool, split: int = 1) -> Schedule:
        return Schedule(m, n, bk, stages, warps, persistent=persistent, tma_store=store, split_k=split)

    return (
        Row(a, "", (9, 10), "128 x 256 tiles fill at least 9/10 of a wave of SMs (the measured best)"),
        Row(
            _deepest(small(128, 128, DEEPEST, 4, False), c),
            "t128x128",
            (9, 10),
            "128 x 256 tiles leave SMs idle; 128 x 128 fill at least 9/10 of a wave",
        ),
        Row(small(64, 128, 4, 4, False), "t64x128", (1, 1), "64 x 128 tiles fill a wave (two programs an SM)"),
        Row(small(64, 64, 4, 4, False), "t64x64", None, "64 x 64 tiles fill a wave, or K is too short to split"),
        Row(small(64, 64, 4, 4, False, 0), "splitk", None, "64 x 64 tiles leave SMs idle: K split among programs"),
    )


def _deepest(s: Schedule, c: Contraction) -> Schedule:
    """``s`` in as many of its stages as fit in shared memory beside the epilogue (at least 3)."""
    while s.num_stages > 3 and contraction_shared(s, c) > SHARED_LIMIT:
        s = s.with_(num_stages=s.num_stages - 1)
    return s


def tiles(s: Schedule, m: int, n: int) -> int:
    return -(-m // s.block_m) * -(-n // s.block_n)


def split_for(tiles: int, k_steps: int, sms: int) -> int:
    """Programs to divide each tile's K loop among: enough for a program per SM, each at least
    ``MIN_SPLIT_STEPS`` K steps, at most ``MAX_SPLIT``; 1 where the tiles fill a wave.  The launcher
    computes the same (emit/kernels.py)."""
    return max(1, min(-(-sms // max(tiles, 1)), k_steps // MIN_SPLIT_STEPS, MAX_SPLIT))


@dataclass(frozen=True)
class Pick:
    row: Row
    schedule: Schedule  # the row's, its split count fixed
    tiles: int
    programs: int  # launched: a persistent grid's at most one per SM

    def describe(self) -> str:
        s = self.schedule
        split = f", K split {s.split_k} ways" if s.split_k > 1 else ""
        order = "persistent" if s.persistent else "one program a tile" if s.split_k == 1 else "one a tile and split"
        kernel = f"kernel _{self.row.tag}" if self.row.tag else "the default kernel"
        return (
            f"{s.block_m} x {s.block_n} x {s.block_k} tiles{split}, {s.num_stages} stages, {s.num_warps} warps, "
            f"{order}: {self.tiles} tiles, {self.programs} programs ({kernel}: {self.row.reason})"
        )


def choose(rows: tuple[Row, ...], m: int, n: int, k: int, sms: int = H200_SMS) -> Pick:
    """The row the launcher takes for an ``m`` x ``n`` output with ``k`` to contract on ``sms`` SMs."""
    for row in rows:
        s = row.schedule
        t = tiles(s, m, n)
        if row.fill is not None:
            if t * row.fill[1] >= sms * row.fill[0]:
                return Pick(row, s, t, min(t, sms) if s.persistent else t)
            continue
        split = split_for(t, -(-k // s.block_k), sms)
        if (split == 1) == (s.split_k == 1):
            fixed = replace(s, split_k=split)
            return Pick(row, fixed, t, t * split)
    raise AssertionError("the table's last row is taken otherwise")
