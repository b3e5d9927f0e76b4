"""What ``--schedule auto`` picks for a contraction, and the measurements behind it.

H200, Triton 3.6.0, ``perf/gemm_probe.py --shapes 8192,4096,4000`` (perf/RESULTS.md 2026-11-30
00:12), hand-written kernels of the structure :mod:`.gemm` emits (host TensorDescriptors,
``tl.dot``, f32 accumulator), ratio = cuBLAS time / kernel time at 8192^3 / 4096^3 / 4000^3:

    128 x 128 x 64, 4 stages, 8 warps              0.922  0.865  0.855
    128 x 256 x 64, 3 stages, 8 warps              0.999  0.932  0.974
    128 x 256 x 64, 4 stages                       out of shared memory (262 KB > 227 KB)
    256 x 128 x 64, 3 stages, 8 warps              0.956  0.919  0.911
    persistent 128 x 256 x 64, 3 stages, 8 warps   1.009  0.968  0.959

so 16-bit operands take 128 x 256 x 64, 3 stages, 8 warps, a persistent grid in groups of 8 row
tiles.  8-bit operands take the same tile with K steps of 128 (the same bytes per stage: 48 KB).
32-bit operands (tf32 dots) take K steps of 32 (again 48 KB a stage).  Batched contractions run
one program per (tile, batch), reading ``[1, BM, BK]`` descriptor boxes.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from math import prod

from ..lift.buffers import pow2
from ..tir import expr as E
from ..tir import nodes as N
from ..tir.contract import Contraction
from ..tir.expr import names as _names
from .atomicfold import unspread
from .foldloops import (
    WHOLE_PER_THREAD,
    Fold,
    NotFolded,
    foldable,
    lane_run,
    lane_shape,
    loop_folds,
    segment_tensors,
    tile_rank,
    walks_rows,
)
from .gemm import NotTiled
from .moments import NotMerged, merge_deviations
from .schedule import Schedule, TileSchedule
from .selectfold import fold_selects
from .serial import merging_axes
from .shared import SHARED_LIMIT, contraction_shared
from .splitloop import loop_extent
from .widen import BYTES as WIDEN_BYTES
from .widen import Facts

BYTES = {"f8_e4m3": 1, "f8_e5m2": 1, "s8": 1, "f16": 2, "bf16": 2, "f32": 4, "tf32": 4}


def auto(c: Contraction) -> Schedule:
    width = max(BYTES.get(c.a.elem, 2), BYTES.get(c.b.elem, 2))
    block_k = {1: 128, 2: 64, 4: 32}[width]
    if c.scales:
        # Block-scaled contractions keep the kernel as written: tiled (perf/probe_blockscale.py, H200,
        # 2026-12-01 16:57, tests/programs/blockscale.co scaled_inline, fp8, scale blocks of 64) the best
        # of 128x256 / 128x128 / 64x256 / 128x64 tiles, 3-5 stages, 4-8 warps, persistent or not ran at
        # 0.31 / 0.32 of torch._scaled_mm at 4096^3 / 8192^3 (128x256: 0.22; each K tile's product and
        # the accumulator are live together), the source's 64x64 kernel as written at 0.43 / 0.42.
        raise NotTiled("a block-scaled contraction (the kernel as written is faster: schedule/policy.py)")
    if c.scales and c.scale_k % block_k:  # block-scaled: a K step inside one block of the scales
        block_k = next((b for b in (128, 64, 32, 16) if b <= block_k and c.scale_k % b == 0), block_k)
    if c.batched or c.group is not None:  # one program per (tile, batch or group)
        return Schedule(128, 256, block_k, persistent=False)
    # fp8 operands with an f32 output: the half-width TMA epilogue measured 0.815 / 0.874 of
    # torch._scaled_mm at 4096^3 (two runs), the masked store 1.030 (perf/RESULTS.md 2026-12-01)
    wide_out = BYTES.get(c.out.elem, 2) == 4
    s = Schedule(128, 256, block_k, tma_store=not (width == 1 and wide_out))
    if width == 2:
        # 16-bit operands: the tile loop fused with the K loop (Schedule.flatten) in 4 stages where they
        # fit beside the epilogue's buffer, else 3. Measured (H100, tune at six shapes of
        # examples/gemm_v4.co, perf/RESULTS.md 2026-12-06 22:39): of cuBLAS, as before / fused in 4
        # stages: 8192^3 1.001 / 1.023, 4096^3 0.973 / 1.003, 2048^3 0.963 / 0.999, 4000^3 0.926 / 0.963,
        # 8192 x 8192 x 1024 0.867 / 0.975 (fused in 3 stages 0.957); fp8 gained nothing (0.947 / 0.925)
        deep = s.with_(num_stages=4, flatten=True)
        s = deep if contraction_shared(deep, c) <= SHARED_LIMIT else s.with_(flatten=True)
    return s


# ---------------------------------------------------------------- the source schedule
SOURCE_K_STEP = 32  # a per-element K loop states no K tile: read K in steps of 32 (as the older lowering did)
DEFAULT_STAGES = 3  # a loop the source does not pipeline: what Triton gives a loop without num_stages
RING_BUDGET = 160 * 1024  # shared memory bytes those default stages may take (the epilogue needs some too)
MAX_ACC_REGISTERS = 128  # f32 accumulator registers a thread may hold before warps are added


def _extent(n: int, least: int) -> int:
    """A stated tile extent as a Schedule's: a power of two of at least ``least``, or, where it is
    larger and not a power of two, the multiple of 16 that holds it (pieces of powers of two)."""
    return max(least, pow2(n)) if n <= least or not n & (n - 1) else -(-n // 16) * 16


def source(c: Contraction) -> Schedule:
    """The schedule the ``.co`` states: its block tile (rows at least one warpgroup's 64, columns and
    K steps at least the 16 a tensor-core dot needs, 32 for 8-bit operands; a K step rounded up to a
    power of two; rows and columns that are not a power of two as pieces of powers of two, a multiple
    of 16), its stage ring's depth, the warps of the
    units that execute its MMA (at least one warpgroup), TMA where it uses ``tma.copy``, and a persistent grid where it walks
    output tiles in a loop of its own.  Where the accumulator would take more than
    ``MAX_ACC_REGISTERS`` registers a thread, warps are added (the source's warpgroups hold it in
    registers of their own; Triton spills instead); where two consumer warpgroups' accumulators fit
    one warpgroup's registers, it is one warpgroup (measured faster).  The program order is groups of 8 row tiles
    (it does not change results; the older lowering's choice, kept)."""
    if c.scales:
        raise NotTiled("a block-scaled contraction (the kernel as written: schedule/policy.py auto)")
    st = c.stated
    width = max(BYTES.get(c.a.elem, 2), BYTES.get(c.b.elem, 2))
    rows, cols, k_step = c.source_tile
    block_m = _extent(rows, 64)
    # columns that are not a power of two are kept, as pieces of powers of two (Schedule.pieces_n):
    # rounded up instead, tutorial v4's 128 x 192 tile ran at 0.53 of cuBLAS at 8192^3 (as 128 x 256,
    # 2 stages, 8 warps; perf/RESULTS.md 2026-12-01 23:13), as 128 + 64 pieces at 0.83 (2026-11-30 02:44)
    block_n = _extent(cols, 16)
    block_k = max(32 if width == 1 else 16, pow2(k_step) if k_step > 1 else SOURCE_K_STEP)
    warps = min(8, max(4, pow2(-(-st.threads // 32)))) if st.threads else 4
    while block_m * block_n > MAX_ACC_REGISTERS * 32 * warps and warps < 16:
        warps *= 2
    if st.roles and warps == 8 and block_m * block_n <= 128 * 192:
        # two consumer warpgroups' accumulators held by one warpgroup (at most 192 f32 registers a
        # thread): v4's 128 x 192 pieces ran at 0.775 / 0.827 of cuBLAS at 4096^3 / 8192^3 with 4 warps,
        # 0.744 / 0.811 with 8 (perf/RESULTS.md 2026-12-01 23:49; the older lowering's rule, 0.82 vs 0.72)
        warps = 4
    # a ring the source states is its own (its buffers take that shared memory on any target); the
    # default depth is only as deep as fits
    per_stage = (block_m + block_n) * block_k * width
    stages = st.stages or max(1, min(DEFAULT_STAGES, RING_BUDGET // per_stage))
    return Schedule(
        block_m,
        block_n,
        block_k,
        num_stages=stages,
        num_warps=warps,
        group_m=8,
        persistent=st.persistent and not (c.batched or c.group is not None),
        tma=st.tma,
        tma_store=st.tma_store,
        warp_specialize=st.roles,
        origin="source",
    )


# ---------------------------------------------------------------- tile kernels (copies, element-wise)
# H200, Triton 3.6.0, perf/probe_copy_tiles.py (perf/RESULTS.md 2026-12-02 01:48), an 8192 x 8192 f16
# tile kernel (interior branch unmasked) against a device copy of the same bytes, ratio copy / kernel:
#     2x + 1:    32 x 32 8 warps 0.672, 4 warps 0.765; 32 x 64 0.872; 64 x 64 0.868; 128 x 64 0.869;
#                32 x 128 0.938; 64 x 128 4 warps 0.951, 8 warps 0.947; 128 x 128 0.951; 32 x 256 0.951
#     transpose: 32 x 32 8 warps 0.643, 4 warps 0.852; 64 x 64 4 warps 0.933, 8 warps 0.944;
#                64 x 128 8 warps 0.965; 128 x 128 8 warps 0.972
# so a tile grows until it holds 16 KB, rows first to 256 bytes (the contiguous dimension), and runs
# with 4 warps, 8 where it transposes.  A tile whose rows are 256 bytes long and that has no other
# axis stays (vadd's 1024 f32 lanes: 1.023 of a device copy as written, 1.012 widened to 4096;
# perf/RESULTS.md 2026-12-02 02:03).
TILE_BYTES = 16 * 1024
INNER_BYTES = 256
LINE_BYTES = 2048  # a tile of one axis (and one grid axis) grows to this many bytes, 16 a thread of 4 warps: a
# thread per element of f16 data in blocks of 256 threads moves 512 bytes a program, 2 bytes a thread (vadd's 1024
# f32 lanes, 4 KB, ran at 1.023 of a device copy, and stay)
TMA_ROW_BYTES = 512  # TMA boxes: rows first to 512 bytes (perf/probe_tma_boxes.py, 2026-12-02 02:45, 8192^2
# f16 through descriptors: 128 x 64 boxes 0.857 of a device copy, 64 x 64 0.874, 64 x 128 0.898,
# 128 x 128 0.895, 32 x 256 0.917, 64 x 256 0.893)
MAX_ROWS = 64  # rows a program takes of a grid axis whose index is used on its own,
ROW_ELEMENTS = 1024  # or as many as make this many elements (a program of one element: 1024 of them)
MIN_PROGRAMS = 264  # a grid of constant extents is not widened below two programs per SM of an H100 / H200
# (a grid known only at launch is widened only where it keeps a program per SM: emit/kernels.py)
SERIAL_BLOCKS = 4  # blocks a program runs one after the other where their atomic adds once for them
# (schedule/serial.py): H100, perf/RESULTS.md 2026-12-06 14:15, column sums with atomic partial sums
# at 16384x4096 / 4096x16384, of the roofline: f32 0.885 / 0.891 one block a program, 0.918 / 0.924 at
# 4 row blocks, 0.915 / 0.901 at 8; f16 0.769 / 0.787, 0.807 / 0.816 at 4
SERIAL_PROGRAMS_PER_SM = 2  # ... as long as the grid keeps this many programs a SM (decided at launch)
LOOP_LANES = 8  # lanes a thread may hold in a kernel whose loops carry tiles from one iteration to the
# next (a row softmax's running max and sum, an RMSNorm's sum of squares): each lane keeps its
# carried values, the loop's loads and what follows the loop in registers. Widened 32x to 4096 lanes
# on 4 warps (32 a thread) they took 254 registers a thread (issue 24); 1024 lanes (8 a thread) 56-72


def _carries(kernel: N.Kernel) -> bool:
    """Whether a loop of ``kernel`` carries a tile from one iteration to the next (assigns a tile
    variable it does not define)."""
    for loop in (s for s in N.walk(kernel.body) if isinstance(s, N.For)):
        if any(isinstance(a, N.Assign) and a.var.shape for a in N.walk(loop.body)):
            return True
    return False


# Loops of each lane over its row (a row softmax, a norm, row sums written one thread per row): folded
# into a tile axis (schedule/foldloops.py), one row a program where the lanes may be split, the whole
# row in registers (its loads read once) up to FOLD_WHOLE_BYTES, in blocks of FOLD_BLOCK_BYTES past it
FOLD_WHOLE_BYTES = 64 * 1024
FOLD_BLOCK_BYTES = 16 * 1024
FOLD_WARPS = 8


def whole_row_bytes(passes: int, lanes: int) -> int:
    """The most bytes of its rows a kernel folding ``passes`` loops over them with ``lanes`` lanes keeps
    in registers: several passes read a row once and keep it (FOLD_WHOLE_BYTES); one pass over one row a
    program keeps nothing, and past one block it runs in pipelined blocks (FOLD_BLOCK_BYTES; lanes
    walking lines of their own keep the measured rule of FOLD_WHOLE_BYTES). H100, perf/RESULTS.md 2026-12-07 10:20: a KL divergence
    (one pass over two rows) at 4096 x 16384 ran at 0.645 of the roofline with each row in registers (16
    warps, one program an SM), 0.972 in blocks; at 16384 x 4096, 0.950 and 0.953."""
    return FOLD_WHOLE_BYTES if passes > 1 or lanes > 1 else FOLD_BLOCK_BYTES


# a block of several independent rows whose lanes fold over them (a norm of four rows a block, a warp a
# row): one row a program where a row holds at least this many bytes (lift/narrow.py). H100, Triton
# 3.6, perf/probe_norm_rows.py (perf/RESULTS.md 2026-12-05): an RMSNorm at 4096 x 16384 ran at 0.98 of a
# device copy with one row a program in registers (f32 and f16), 0.65-0.75 with four rows a program
# read twice in blocks; at 16384 x 4096, 0.99 against 0.73-0.94
NARROW_ROW_BYTES = 8 * 1024
# a loop whose lanes read along lines (a thread per column walking the rows) reads this much of the
# tensor it loads a block: on the H200 column sums ran at 0.81 of a device copy (mean of f32 / f16, two
# shapes) with 8 KB blocks, 0.79 with 16 KB, split 8 programs a SM (0.64 at 2: perf/probe_columns.py,
# perf/RESULTS.md 2026-12-04)
LINES_BLOCK_BYTES = 8 * 1024
# warps of such a kernel's programs
LINES_WARPS = 4


def fold_auto(kernel: N.Kernel, facts: Facts | None) -> TileSchedule | None:
    """The folding ``--schedule auto`` picks for a kernel whose lanes loop over rows (None: none);
    ``facts`` None where the widening analysis refused the kernel (its lanes are then never split).
    Loops over a register tile's elements (schedule/selectfold.py) are folded first."""
    kernel, selects = fold_selects(kernel)
    loops = foldable(kernel)
    if not loops:
        if selects:  # only loops over a tile's elements: one reduction each
            return TileSchedule(tuple(1 for _ in kernel.program_ids), tile_warps(kernel), origin="auto", fold=-1)
        return None
    elem = facts.elem_bytes if facts is not None else _elem_bytes(kernel)
    lanes = lane_count(kernel)
    if not walks_rows(kernel):
        # the lanes read along lines already (a thread per column, a loop down the rows; a block's threads
        # striding along its row): each iteration reads one line of the lanes; folded, a block of lines
        # (FOLD_BLOCK_BYTES an iteration), or every line at once where they fit in registers (fixed at
        # launch: kernels.py runs the blocks where they do not)
        # LINES_BLOCK_BYTES of the tensors the loops read a block
        block = lines_block(_loaded_bytes(kernel, loops) or elem, lanes, LINES_BLOCK_BYTES)
        extents = [E.fold(loop.stop - loop.start) for loop in loops]
        if all(isinstance(x, E.Const) for x in extents):
            if lane_runs(kernel, loops):  # each lane's run of elements: folded whole, the runs one tile
                return TileSchedule(tuple(1 for _ in kernel.program_ids), tile_warps(kernel), origin="auto", fold=-1)
            if all(int(x.value) < 2 * block for x in extents):  # type: ignore[union-attr]
                return None  # a short loop (an embedding bag's few rows): widening the lanes is the policy there
            return TileSchedule(tuple(1 for _ in kernel.program_ids), LINES_WARPS, origin="auto", fold=block)
        sized = any(isinstance(a, N.Constexpr) and a.size is not None for a in kernel.args)
        if _known_extents(kernel, loops) and not sized:  # (tiles fixed at launch already: their warps stand)
            return TileSchedule(tuple(1 for _ in kernel.program_ids), LINES_WARPS, origin="auto", fold=-1)
        return TileSchedule(tuple(1 for _ in kernel.program_ids), LINES_WARPS, origin="auto", fold=block)
    if tile_rank(kernel) != 1:
        accs = [s.var for loop in loops for s in N.walk(loop.body) if isinstance(s, N.Assign)]
        if any(len(a.shape) != tile_rank(kernel) for a in accs):
            return None  # (tiles of more axes than the lanes': a thread's copy of a buffer, say)
        # lanes of two or three axes, each walking a row (a thread per row in a [4, 8] block): they stay in
        # one program, each iteration a tile of them and a block of the rows (FOLD_BLOCK_BYTES of the tile)
        block = max(16, pow2(FOLD_BLOCK_BYTES // _elem_bytes(kernel) // max(1, lane_count(kernel, LAUNCH_LANES))))
        return TileSchedule(tuple(1 for _ in kernel.program_ids), FOLD_WARPS, origin="auto", fold=block)
    splits = _row_splits(kernel, facts)
    if all(s == 1 for s in splits):  # the lanes stay: each iteration a tile of them and a block of the row
        return lanes_fold(kernel, facts)
    if segment_tensors(kernel):  # segments of their own, one a program: blocks of SEGMENT_BLOCK_BYTES
        block = pow2(SEGMENT_BLOCK_BYTES // elem)  # (R a program where shorter: SEGMENT_ROW_FORMS, at launch)
        ones = tuple(1 for _ in splits)
        return TileSchedule(ones, SEGMENT_WARPS, origin="auto", splits=tuple(splits), fold=block, segment_rows=0)
    return TileSchedule(tuple(1 for _ in splits), FOLD_WARPS, origin="auto", splits=tuple(splits), fold=-1)


def lane_runs(kernel: N.Kernel, loops: list[N.For]) -> bool:
    """Whether every one of ``loops`` (of extents fixed when translating) walks a run of elements of
    each lane (schedule/foldloops.py ``lane_run``: ``x.at(t * 8 + k)``, ``k`` in ``[8]``), every
    access that reads the counter so.  As written each step reads one element of each run, lanes a
    run apart; folded, the counter's axis is the tile's fast one and the runs one contiguous tile."""
    scratch = {a.name for a in kernel.args if isinstance(a, N.Scratch)}  # (a thread's own array: not memory)
    for loop in loops:
        extent = E.fold(loop.stop - loop.start)
        if not isinstance(extent, E.Const):
            return False
        values = {s.var.name: s.value for s in loop.body if isinstance(s, N.Let)}
        found = False
        for s in loop.body:
            if not isinstance(s, (N.Load, N.Store)) or not s.index or s.base in scratch:
                continue
            index = [E.resolve(x, values) for x in s.index]
            if lane_run(index, loop.var.name, extent):
                found = True
            elif loop.var.name in {v.name for x in index for v in E.free_vars(x)}:
                return False
        if not found:
            return False
    return True


# Lanes reading along lines (a thread per column walking the rows) whose loops do not split across
# programs (they store: a softmax over columns): where the grid has fewer programs than SMs, the
# launcher runs each block's lanes split across programs, each at least SPLIT_LINE_BYTES of every line it
# reads (a whole 128-byte line: still coalesced); H100, perf/RESULTS.md 2026-12-06: a column softmax
# of 4096 columns ran 32 programs of 128 columns
SPLIT_LINE_BYTES = 128


def lines_split(kernel: N.Kernel, facts: Facts | None, schedule: TileSchedule) -> TileSchedule | None:
    """The schedule of the split form of a kernel whose lanes read along lines and whose loops stay in
    one program (None: not such a kernel, or its lines too short to split)."""
    if facts is None or schedule.origin != "auto" or schedule.fold == 0 or schedule.loop_split is not None:
        return None
    if any(f != 1 for f in (*schedule.factors, *schedule.splits)) or walks_rows(kernel):
        return None
    elem = _loaded_bytes(kernel, foldable(kernel)) or facts.elem_bytes
    least = max(1, SPLIT_LINE_BYTES // elem)
    lines = _along_lines(kernel)
    splits = []
    for p in kernel.program_ids:
        t = facts.tile.get(p.name, 1)
        lane_ids = {x for x, pids in facts.pairs.items() if p.name in pids}
        ok = p.name in lines and lane_ids and not lane_ids & facts.alone and t >= 2 * least
        splits.append(t // least if ok else 1)
    if all(s == 1 for s in splits):
        return None
    block = lines_block(elem, max(1, lane_count(kernel) // prod(splits)), LINES_BLOCK_BYTES)
    return TileSchedule(
        tuple(1 for _ in splits),
        LINES_WARPS,
        origin="auto",
        splits=tuple(splits),
        fold=block,
        num_stages=schedule.num_stages,
    )


def lanes_fold(kernel: N.Kernel, facts: Facts | None) -> TileSchedule:
    """The fold of a kernel whose lanes stay in one program: each iteration a tile of them and a block
    of their rows (FOLD_BLOCK_BYTES of them)."""
    elem = facts.elem_bytes if facts is not None else _elem_bytes(kernel)
    tile = max(max(facts.tile.values(), default=1) if facts is not None else 1, lane_count(kernel, LAUNCH_LANES))
    block = max(16, pow2(FOLD_BLOCK_BYTES // elem // max(1, tile)))
    return TileSchedule(tuple(1 for _ in kernel.program_ids), FOLD_WARPS, origin="auto", fold=block)


# A loop over each lane's own segment, from where a value the lane read says (CSR rows: ``vals.at(lo +
# k)`` for k below ``hi - lo``): split one lane a program (its segment read in coalesced blocks) where the
# segments hold at least SEGMENT_LANE_ELEMS elements on average, taken at launch as the elements of the
# tensor they index over the lanes of the grid; shorter ones keep a block's lanes in one program, each
# iteration a block of every lane's segment (one program a segment would be mostly masked and idle)
SEGMENT_LANE_ELEMS = 128
# a segment a program reads it in blocks of SEGMENT_BLOCK_BYTES with SEGMENT_WARPS warps (H100, perf/RESULTS.md
# 2026-12-06 04:26: segments of 4096 and 16384 values on average, 0.53-0.54 of the roofline in blocks of
# 2 KB and 4 warps, 0.43-0.50 in 4 KB, 0.33-0.46 in 8 KB, 0.23-0.40 in 16 KB and 8 warps)
SEGMENT_BLOCK_BYTES = 2 * 1024
SEGMENT_WARPS = 4
# shorter segments, the block's lanes in one program: SEGMENT_LANES_BLOCK elements of each a step (H100,
# 2 million segments of 0 to 63 values: 0.111 of the roofline at 16 with 8 warps, 0.055 at 32, 0.044 at 64)
SEGMENT_LANES_BLOCK = 16


# R segments a program (TileSchedule.segment_rows): the lanes of an ``[R, SEGMENT_ROWS_TILE // R]`` tile a
# step, a loop to the longest of the R.  What bounds short segments is the bytes in flight: a segment of 256
# f32 values is 1 KB, read after the two offsets that say where it is (two latencies one after the other);
# the H100 needs about 25 KB in flight an SM at its roofline.  One a program (``[1, 512]``, 4 warps, 31
# registers compiled for sm_90a: 16 programs an SM by threads) keeps about 16 segments' 14 KB in flight at
# 256 values on average and starts a program a segment (its offsets, a reduction across warps, a store);
# ``[8, 256]`` at 4 warps, its loop in 3 stages (48 registers and 16 KB of shared: 10 programs an SM, the
# next step's 8 KB in flight during this one; ``[32, 64]`` 96 registers, 5 programs) keeps 8 segments a
# program, some 60 KB an SM in its first steps, and a masked lane costs an issue slot and registers, not
# bytes (each segment's load masked at its own end: schedule/vecmasks.py leaves loads at a loaded start).
# Every form's tile holds SEGMENT_ROWS_TILE elements, 16 a thread at 4 warps (the block's lanes, 128 x 16,
# 8 a thread at 8 warps).  perf/RESULTS.md has no measurement of it yet: perf/probe_segments.py times the alternatives (R, the step, the merge path)
# on a GPU; the constants are first principles until then.  The merge path (a block of values a program,
# its rows found by a search of the offsets, perfectly coalesced whatever the lengths) is not generated: it
# holds only where the offsets are sorted (CSR), which the source does not say and a launch could only
# check with a host synchronisation, and adds atomics (the order of a segment's sum that spans blocks) and
# a memset; R a program computes what the source does for any offsets, deterministically, in one launch.
SEGMENT_ROWS_TILE = 2048
SEGMENT_ROWS_WARPS = 4
# (R, the least mean segment length it runs at) under auto: one a program from SEGMENT_ONE_ELEMS, R = 8
# (steps of 256) from 128, R = 32 (steps of 64) from 16, the block's lanes below (steps of
# SEGMENT_LANES_BLOCK, as measured: 0.111 of the roofline)
SEGMENT_ONE_ELEMS = 1024
SEGMENT_ROW_FORMS = ((8, 128), (32, 16))


def segments_at_least(kernel: N.Kernel, elems: int) -> E.Expr | None:
    """The launcher's condition that the segments of a kernel whose lanes walk segments of their own hold
    at least ``elems`` elements on average (the elements of the tensor they index over the lanes of the
    grid); None where the launcher does not know that tensor's size."""
    size = _segment_values(kernel)
    if size is None:
        return None
    return E.Bin(">=", size, E.fold(prod(kernel.grid, start=E.Const(lane_count(kernel) * elems))))


def segment_rows_schedule(schedule: TileSchedule, rows: int, block: int, warps: int) -> TileSchedule:
    """``schedule`` (one segment a program: its lanes' axis split as many ways as the block has lanes) with
    ``rows`` segments a program instead, each step ``block`` elements of each, at ``warps``."""
    splits = tuple(max(1, d // rows) if d > 1 else 1 for d in schedule.splits)
    return replace(schedule, splits=splits, fold=block, num_warps=warps)


# Few long segments, one lane a program, are too few programs for the SMs (64 CSR rows of about a million
# values each: 64 programs, 0.04 of the roofline on the H200, issue 27): the launcher splits each lane's
# loop across programs as a column fold's (schedule/splitloop.py, SPLIT_WAVES programs a SM), each
# program computing its chunk of the segment in the kernel (the launcher does not know a segment's
# length), at most one split per SEGMENT_SPLIT_LEAST_BYTES of the segments' mean length (the elements
# of the tensor they index over the lanes of the grid): S > 1 only where that mean is past the least, long
# segments, so the split form replaces the one lane a program (segments_split) and never the lanes kept
# in one program.  The constant is not yet measured.
SEGMENT_SPLIT_LEAST_BYTES = 8 * 1024


def segment_loop(kernel: N.Kernel) -> bool:
    """Whether ``kernel``'s one top-level loop folds each lane's own segment (schedule/foldloops.py
    ``segment_tensors``: ``vals.at(lo + k)``, ``lo`` read from a tensor), a loop whose extent the
    kernel reads."""
    return sum(isinstance(s, N.For) for s in kernel.body) == 1 and bool(segment_tensors(kernel))


def segment_mean(kernel: N.Kernel) -> E.Expr | None:
    """The launcher's estimate of the extent of a segment loop's lanes (``segment_loop``): the
    elements of the tensor the segments index over the lanes of the grid (a host expression; None
    where the launcher does not know that tensor's size)."""
    size = _segment_values(kernel)
    if size is None:
        return None
    lanes = E.fold(prod(kernel.grid, start=E.Const(lane_count(kernel))))
    return E.Bin("/", size, lanes)


def _segment_values(kernel: N.Kernel) -> E.Expr | None:
    """The elements of the tensor a segment kernel's lanes index (the first such tensor: the segments'
    values), a host expression (None: not a segment kernel, or a size the launcher does not know)."""
    names = segment_tensors(kernel)
    if not names:
        return None
    arg = kernel.arg(names[0])
    assert isinstance(arg, N.Pointer)
    return kernel.on_host(E.fold(prod(arg.extents, start=E.Const(1))))


def segments_stay(kernel: N.Kernel) -> TileSchedule:
    """The fold of a kernel whose lanes walk segments of their own, its lanes kept in one program."""
    return TileSchedule(tuple(1 for _ in kernel.program_ids), FOLD_WARPS, origin="auto", fold=SEGMENT_LANES_BLOCK)


def segments_split(kernel: N.Kernel, schedule: TileSchedule) -> E.Expr | None:
    """The launcher's condition for the split form of a kernel whose lanes walk segments of their own
    (None: not such a kernel, or ``schedule`` does not split it): the tensor they index holds at least
    SEGMENT_LANE_ELEMS elements a lane of the grid as lifted."""
    if all(s == 1 for s in schedule.splits) or schedule.origin != "auto" and schedule.segment_rows != -1:
        return None  # (a tuning point's -1: the forms before R a program was one, picked at launch)
    size = _segment_values(kernel)
    if size is None:
        return None
    lanes = E.fold(prod(kernel.grid, start=E.Const(lane_count(kernel) * SEGMENT_LANE_ELEMS)))
    return E.Bin(">=", size, lanes)


def _row_splits(kernel: N.Kernel, facts: Facts | None) -> tuple[int, ...]:
    """Per grid axis, the programs a block's lanes are split into for one row a program: the
    extent of the lanes that pair with the program id and index rows (not the contiguous dimension),
    where they are only ever a coordinate with it; 1 elsewhere."""
    if facts is None:
        return tuple(1 for _ in kernel.program_ids)
    splits = []
    lines = _along_lines(kernel)
    for p in kernel.program_ids:
        lane_ids = [x for x, pids in facts.pairs.items() if p.name in pids]
        t = facts.tile.get(p.name, 1)
        splittable = t > 1 and lane_ids and not (set(lane_ids) & facts.alone) and p.name not in lines
        splits.append(t if splittable else 1)
    return tuple(splits)


def tile_warps(kernel: N.Kernel) -> int:
    """Warps for a kernel whose widest tile is its own (not widened): about WHOLE_PER_THREAD
    elements a thread, at least the source's warps, at most 8."""
    widest = max(
        (prod(d for d in v.shape if isinstance(d, int)) for s in N.walk(kernel.body) for v in N.defines(s)), default=1
    )
    return max(kernel.num_warps, min(8, pow2(-(-widest // (32 * WHOLE_PER_THREAD)))))


# A kernel whose lanes read along lines (a thread per column walking the rows) has as many programs as
# blocks of columns: where that is fewer than SPLIT_WAVES programs a SM, the launcher splits its loop
# across programs (schedule/splitloop.py), each at least SPLIT_LEAST iterations, into partial folds a
# second kernel combines
SPLIT_WAVES = 8
SPLIT_LEAST = 256
SPLIT_MOST = 64  # partials a lane (the second kernel folds them in registers: 64 x 256 lanes = 64 KB of f32)
SPLIT_WARPS = 4
# the values a thread holds of the partial kernel's tiles (its folds' tiles of the block and the block it
# loads): beyond them its block of lines halves (two column variances of f16 at 512 columns and 8 rows
# a step held 6 x 32 in 255 registers and spilled, sm_90a)
SPLIT_TILE_VALUES = 96


def coarsen_factor(kernel: N.Kernel) -> int:
    """The iterations a step of a loop that loads a tile and folds it (schedule/coarsen.py) under
    auto: the least power of two whose step loads ``coarsen.STEP_BYTES`` (1: as written)."""
    from .coarsen import MOST_FACTOR, STEP_BYTES, NotCoarsened, step_bytes

    try:
        got = step_bytes(kernel)
    except NotCoarsened:
        return 1
    factor = 1
    while got and got * factor < STEP_BYTES and factor < MOST_FACTOR:
        factor *= 2
    return factor


# the partials the last program of a split loop's group folds a step, combining them in the same launch
# (schedule/lastcombine.py): 8 x 512 f32 lanes over the partial kernel's 4 warps, 32 registers a thread
COMBINE_BLOCK = 8

# stages of the software pipeline of a tile kernel's loops that only read memory under auto
# (schedule/loadstages.py; 1: as Triton runs a plain loop)
LOAD_STAGES = 3

# Accesses that run backwards along a lane (``x.at(r, N - 1 - j)``: a flip) made forwards in groups of 16
# bytes, each group reversed in registers (schedule/fliplanes.py).  Compiled for sm_90a this turns 64 scalar
# loads a thread into 16 ``v4`` ones, at the cost of a layout conversion through shared memory; not yet timed
# on a GPU against the scalar (still coalesced) accesses as written: ``policy.FLIP_LANES=0`` turns it off for
# a bench point (perf/bench_membound.py ``--points``).
FLIP_LANES = 1


# A split loop's partial kernel whose lanes read along lines of 16-bit or narrower elements (a thread
# per column walking the rows): its programs take columns until each reads SPLIT_LINE_MIN bytes of a row
# (widened: four blocks of 256 f16 columns a program, 1024); hand-written on the H100 the f16 column sums ran at 0.714 / 0.724
# of the roofline with 256 columns a program and 0.795 / 0.808 with 512 (16384 x 4096 / 4096 x 16384,
# perf/probe_columns2.py, perf/RESULTS.md 2026-12-07); generated, the f16 column means at 1 / 2 / 4 / 8 KB
# a row ran at 0.756 / 0.778 / 0.625 / 0.541 and 0.783 / 0.827 / 0.699 / 0.614 (H100, perf/RESULTS.md
# 2026-12-07 07:47); f32 column sums 0.90 at each
SPLIT_LINE_MIN = 2048


def split_factors(kernel: N.Kernel, facts: Facts | None) -> tuple[int, ...] | None:
    """The widening of a split loop's kernel whose lanes read along lines: each program id along
    lines takes blocks until its lanes read ``SPLIT_LINE_MIN`` bytes of a row (None: nothing to widen)."""
    if facts is None or walks_rows(kernel) or tiled_fold(kernel):
        return None
    elem = _loaded_bytes(kernel, foldable(kernel)) or facts.elem_bytes
    if elem >= 4:  # (f32 columns: 128 a program did best of the widths tried, perf/RESULTS.md 2026-12-04 17:56)
        return None
    lines = _along_lines(kernel)
    # (each fold's tile of at least two lines and the loaded block fit SPLIT_TILE_VALUES a thread: two
    # column variances of f16 take 512 columns, not 1024)
    budget = SPLIT_TILE_VALUES * 32 * SPLIT_WARPS // (2 * fold_tiles(kernel))
    factors = []
    for p in kernel.program_ids:
        f = 1
        t = facts.tile.get(p.name, 0)
        if p.name in lines and t and p.name not in facts.rows:
            while t * f * elem < SPLIT_LINE_MIN and t * f * 2 <= budget:
                f *= 2
        factors.append(f)
    return tuple(factors) if any(f > 1 for f in factors) else None


def fold_tiles(kernel: N.Kernel) -> int:
    """The tiles a program of the kernel's split loop keeps along the lines it reads: the block it
    loads, and one a fold of its loops (Welford's update two, its means and m2: schedule/foldloops.py;
    squared deviations from an earlier loop's result count as that update, schedule/moments.py)."""
    with contextlib.suppress(NotMerged):
        kernel = merge_deviations(kernel)
    tiles = 1
    for at, loop in enumerate(kernel.body):
        if isinstance(loop, N.For):
            with contextlib.suppress(NotFolded):
                folds = loop_folds(loop, kernel.body[at + 1 :], tiled=True)
                tiles += sum(1 for f in folds.values() if f.welford is None or f.acc != f.welford.count)
    return tiles


def split_count(
    programs: E.Expr,
    extent: E.Expr,
    least: int = SPLIT_LEAST,
    phases: int = 1,
    below: int | None = None,
    unsplit: E.Expr | None = None,
) -> E.Expr:
    """How many programs the launcher splits a loop of ``extent`` iterations across (a segment's
    length the kernel reads: ``segment_mean``), each of the ``programs`` of the grid (host
    expressions; 1: not split), at least ``least`` iterations each;
    loops one after the other (``phases`` > 1, schedule/splitphases.py) only where the programs are
    at most half the SMs; with ``below``, only where the programs the kernel runs unsplit (``unsplit``,
    else ``programs``: its variants may split its lanes one row a program) are fewer than ``below``
    waves of the SMs (lanes walking their rows: ``ROW_SPLIT_BELOW``)."""
    sms = E.Call("_rt.num_sms", (E.Var("_dev"),), "i32")
    # (floor: a grid of more than half the programs SPLIT_WAVES asks for is not split)
    waves = E.Bin("/", E.fold(E.Bin("*", E.Const(SPLIT_WAVES), sms)), programs)
    most = E.Bin("min", E.Const(SPLIT_MOST), E.CDiv(extent, E.Const(least)))
    count: E.Expr = E.Bin("max", E.Const(1), E.Bin("min", waves, most))
    if phases > 1:
        # one launch a loop gives up the second pass's L2 hits of a kernel that reads its blocks last
        # first (policy.fold_block_of): on the H100 a column's mean and variance at 4096 x 16384 (128
        # programs of 128 columns) ran at 0.52 of the roofline as written, 0.46 in phases; at 16384 x
        # 4096 (32 programs) 0.41 as written, 0.47 in phases (perf/RESULTS.md 2026-12-07 05:56): 1 + (S
        # - 1) * [programs <= SMs / 2]
        few = E.Bin("min", E.Const(1), E.Bin("/", E.Bin("/", sms, E.Const(2)), programs))
        count = E.Bin("+", E.Const(1), E.Bin("*", E.Bin("-", count, E.Const(1)), few))
    if below is not None:  # 1 + (S - 1) * [programs < below * SMs]
        # (and only where the split runs more programs than the kernel unsplit: its lanes one row a program
        # may run as many)
        ran = programs if unsplit is None else unsplit
        under = E.Bin("/", E.fold(E.Bin("-", E.Bin("*", E.Const(below), sms), E.Const(1))), ran)
        if unsplit is not None:
            more = E.Bin("/", E.Bin("*", programs, count), E.fold(E.Bin("+", ran, E.Const(1))))
            under = E.Bin("min", under, more)
        count = E.Bin("+", E.Const(1), E.Bin("*", E.Bin("-", count, E.Const(1)), E.Bin("min", E.Const(1), under)))
    return count


# Lanes that walk their own rows (a thread per group of a group norm reading the group's contiguous
# elements, a thread per row), folded into a tile axis a block of the row a step (schedule/foldloops.py):
# where the grid has fewer programs than ROW_SPLIT_BELOW waves of the SMs, the launcher splits the fold
# across programs as a column fold's (schedule/splitloop.py), each chunk at least ROW_SPLIT_LEAST_BYTES
# of each lane's row, up to SPLIT_WAVES programs a SM.  A grid of a wave or more stays as it runs now
# (row sums of 16384 rows, 256 programs of 64 rows); group statistics at B = 128 ran at 0.35 of the
# roofline on the H100, one program (32 groups) an SM (issue 27).  The constants are not yet measured.
ROW_SPLIT_BELOW = 1
ROW_SPLIT_LEAST_BYTES = 8 * 1024


def row_split(kernel: N.Kernel) -> bool:
    """Whether ``kernel``'s one folding loop, its lanes walking their rows, is one the launcher may split
    across programs: its extent a host expression (of the kernel's scalar arguments: not a segment's
    length read from a tensor)."""
    loops = [s for s in kernel.body if isinstance(s, N.For)]
    if len(loops) != 1 or not walks_rows(kernel) or segment_tensors(kernel):
        return False
    scalars = {a.name for a in kernel.args if isinstance(a, N.Scalar)}
    at = next(i for i, s in enumerate(kernel.body) if isinstance(s, N.For))
    loop = kernel.body[at]
    assert isinstance(loop, N.For)
    extent = loop_extent(kernel.body[:at], loop)
    return not loop.start.shape and not loop.stop.shape and _names(extent) <= scalars


def splits_loop(kernel: N.Kernel) -> bool:
    """Whether ``--schedule auto`` tries splitting ``kernel``'s loop across programs (its loops over
    a register tile's elements folded first; loops one after the other: each phase's): its one loop folds (schedule/foldloops.py) and its lanes
    read along lines (each iteration a line of them), or each iteration folds a tile of its own (a
    block of rows staged through shared memory, reduced: the loop walks blocks of rows already)."""
    kernel, _ = fold_selects(kernel)
    loops = [s for s in kernel.body if isinstance(s, N.For)]
    if len(loops) > 1:  # loops one after the other: one phase a loop, each split (schedule/splitphases.py)
        from .splitphases import NotPhased, phases_of

        try:
            return all(splits_loop(phase) for phase in phases_of(kernel))
        except NotPhased:
            return False
    if len(loops) != 1:
        return False
    if foldable(kernel) == loops and segment_loop(kernel):  # (its one-lane-a-program form: segment_mean)
        return True
    if foldable(kernel) == loops:
        if walks_rows(kernel) and not row_split(kernel):
            return False
    elif not tiled_fold(kernel):
        return False
    extent = E.fold(loops[0].stop - loops[0].start)
    # a short loop: never split
    return not isinstance(extent, E.Const) or int(extent.value) >= 2 * split_least(kernel)


def tiled_fold(kernel: N.Kernel) -> bool:
    """Whether ``kernel``'s one top-level loop folds a reduced tile an iteration (its loops over a
    register tile's elements folded first): the proof of schedule/foldloops.py with the tiles'
    reductions admitted, and a load and a reduction in its body."""
    found = _tiled_loop(kernel)
    if found is None:
        return False
    loop, _ = found
    loads = any(isinstance(s, N.Load) for s in N.walk(loop.body))  # (a loop over registers: nothing to split)
    return loads and any(isinstance(n, E.Reduce) for s in N.walk(loop.body) for e in N.exprs_of(s) for n in e.walk())


def _tiled_loop(kernel: N.Kernel) -> tuple[N.For, dict[str, Fold]] | None:
    """``kernel``'s one top-level loop and its folds where schedule/foldloops.py's proof admits it
    with the tiles' reductions (else None)."""
    at = [i for i, s in enumerate(kernel.body) if isinstance(s, N.For)]
    if len(at) != 1:
        return None
    loop = kernel.body[at[0]]
    assert isinstance(loop, N.For)
    try:
        return loop, loop_folds(loop, kernel.body[at[0] + 1 :], tiled=True)
    except NotFolded:
        return None


def split_least(kernel: N.Kernel) -> int:
    """The iterations each program of a split loop takes at least: ``SPLIT_LEAST`` elements of the
    tiles the loop loads an element of its folds' accumulators (an iteration of a thread per column
    loads one element a column; a block of 32 rows of 64 staged, 64 a row's sum)."""
    if row_split(kernel):  # (a lane's row: ROW_SPLIT_LEAST_BYTES of it)
        loops = [s for s in kernel.body if isinstance(s, N.For)]
        return max(1, ROW_SPLIT_LEAST_BYTES // (_loaded_bytes(kernel, loops) or _elem_bytes(kernel)))
    if segment_loop(kernel):  # (a lane's segment: SEGMENT_SPLIT_LEAST_BYTES of its mean length)
        loops = [s for s in kernel.body if isinstance(s, N.For)]
        return max(1, SEGMENT_SPLIT_LEAST_BYTES // (_loaded_bytes(kernel, loops) or _elem_bytes(kernel)))
    found = _tiled_loop(kernel)
    if found is None:
        return SPLIT_LEAST
    loop, folds = found
    lanes = max((prod(d for d in f.acc.shape if isinstance(d, int)) for f in folds.values()), default=1)
    loaded = [prod(d for d in s.var.shape if isinstance(d, int)) for s in N.walk(loop.body) if isinstance(s, N.Load)]
    return max(1, SPLIT_LEAST // max(1, max(loaded, default=1) // lanes))


def split_block(kernel: N.Kernel) -> int:
    """The block of lines the partial kernel of a split loop folds an iteration (1: its iterations
    fold tiles of their own already, and stay)."""
    if tiled_fold(kernel):  # (its loops over a register tile's elements folded already)
        return 1
    loops = [s for s in kernel.body if isinstance(s, N.For)]
    if segment_loop(kernel):  # a lane's segment: SEGMENT_BLOCK_BYTES a step, as unsplit one lane a program
        return pow2(SEGMENT_BLOCK_BYTES // (_loaded_bytes(kernel, loops) or _elem_bytes(kernel)))
    if row_split(kernel):  # lanes along their rows: FOLD_BLOCK_BYTES of the lanes' tile a step, as unsplit
        elem = _loaded_bytes(kernel, loops) or _elem_bytes(kernel)
        return max(16, pow2(FOLD_BLOCK_BYTES // elem // max(1, lane_count(kernel, LAUNCH_LANES))))
    lanes = lane_count(kernel)
    block = lines_block(_loaded_bytes(kernel, loops) or _elem_bytes(kernel), lanes, LINES_BLOCK_BYTES)
    # each fold keeps a tile of the block in registers along a leading axis, the loaded block one more:
    # halved until they fit
    tiles = fold_tiles(kernel)
    while block > 2 and tiles * block * lanes > SPLIT_TILE_VALUES * 32 * SPLIT_WARPS:
        block //= 2
    return block


def combine_block(combine: N.Kernel) -> int:
    """The partials a step of the loop that combines them, in the last program of a split
    (schedule/lastcombine.py): ``COMBINE_BLOCK``, halved while its loaded partials and the tiles of
    its folds would hold more than ``SPLIT_TILE_VALUES`` values a thread (two column variances of f16
    combine six partials a lane, 512 lanes a program)."""
    lanes = lane_count(combine)
    block = COMBINE_BLOCK
    for loop in (s for s in combine.body if isinstance(s, N.For)):
        tiles = sum(isinstance(x, (N.Load, N.Assign)) for x in loop.body)
        while block > 1 and tiles * block * lanes > SPLIT_TILE_VALUES * 32 * SPLIT_WARPS:
            block //= 2
    return block


def lines_block(elem_bytes: int, lanes: int, budget: int = FOLD_BLOCK_BYTES) -> int:
    """The block of lines a folded loop reads an iteration where its lanes read along lines."""
    return pow2(max(2, budget // (lanes * elem_bytes)))


# lanes an extent fixed at launch is taken to hold where a fold's block is sized for the registers (a thread
# level of G threads, G a parameter: a group norm's groups; a block of 4096 f32 for each of 32 groups spilled
# the registers of every thread)
LAUNCH_LANES = 32


def lane_count(kernel: N.Kernel, at_launch: int = 1) -> int:
    """The lanes of a kernel's tiles: the product of the extents known when translating, each extent fixed
    at launch counted as ``at_launch`` (LAUNCH_LANES where a fold's block is sized for the registers)."""
    return prod(d if isinstance(d, int) else at_launch for d in lane_shape(kernel))


def _known_extents(kernel: N.Kernel, loops: list[N.For]) -> bool:
    """Whether every loop's extent is one expression of the kernel's scalar arguments (the launcher
    can fix a block that holds it)."""
    scalars = {a.name for a in kernel.args if isinstance(a, N.Scalar)}
    extents = [E.fold(loop.stop - loop.start) for loop in loops]
    return all({v.name for v in E.free_vars(x)} <= scalars for x in extents) and all(
        E.same(x, extents[0]) for x in extents
    )


def _loaded_bytes(kernel: N.Kernel, loops: list[N.For]) -> int | None:
    """The widest element of the tensors ``loops`` load (None: they load none)."""
    read = {s.base for loop in loops for s in N.walk(loop.body) if isinstance(s, N.Load)}
    sizes = [WIDEN_BYTES.get(a.dtype, 4) for a in kernel.args if isinstance(a, N.Pointer) and a.name in read]
    return max(sizes, default=None)


def _elem_bytes(kernel: N.Kernel) -> int:
    return max((WIDEN_BYTES.get(a.dtype, 4) for a in kernel.args if isinstance(a, N.Pointer)), default=4)


def _along_lines(kernel: N.Kernel) -> set[str]:
    """Program ids whose coordinate indexes the contiguous (last) dimension of a tensor of rank 2 or
    more: their lanes read along lines already, and stay."""
    out: set[str] = set()
    values = {s.var.name: s.value for s in N.walk(kernel.body) if isinstance(s, N.Let)}
    pids = {p.name for p in kernel.program_ids}
    for s in N.walk(kernel.body):
        if isinstance(s, (N.Load, N.Store)) and len(s.index) >= 2:
            last = s.index[-1]
            for _ in range(8):
                names = {v.name for v in E.free_vars(last)} & values.keys()
                if not names:
                    break
                last = E.substitute(last, {n: values[n] for n in names})
            out |= {v.name for v in E.free_vars(last)} & pids
    return out


def fold_block_of(elem_bytes: int, lanes: int = 1) -> int:
    """The block of a row too long to keep in registers (one row a program), or of lines where
    ``lanes`` lanes read along them."""
    return pow2(FOLD_BLOCK_BYTES // elem_bytes) if lanes == 1 else lines_block(elem_bytes, lanes)


def tile_auto(kernel: N.Kernel, facts: Facts | None) -> TileSchedule | None:
    """The widening ``--schedule auto`` picks for a tile kernel (None: the kernel as lifted);
    ``facts`` None where the widening analysis refused the kernel (only its loops may fold)."""
    folded = fold_auto(kernel, facts)
    if folded is not None or facts is None:
        return folded
    width = facts.elem_bytes
    elements = max((prod(v.shape) for s in N.walk(kernel.body) for v in N.defines(s)), default=1)
    first = elements
    factors = {p.name: 1 for p in kernel.program_ids}
    order = {p.name: i for i, p in enumerate(kernel.program_ids)}
    grids = {p.name: E.fold(g) for p, g in zip(kernel.program_ids, kernel.grid, strict=True)}

    constant = all(isinstance(g, E.Const) for g in grids.values())
    programs = prod(int(g.value) for g in grids.values() if isinstance(g, E.Const))

    def room(pid: str) -> bool:
        g = grids[pid]
        if constant and programs // prod(factors.values()) < 2 * MIN_PROGRAMS:
            return False  # a grid of constant extents keeps its programs for the SMs
        if pid in facts.rows:  # a new axis of rows: one such program id, at most MAX_ROWS rows
            others = [p for p in facts.rows if p != pid and factors[p] > 1]
            # (a grid of constant extent, the only axis of rows: rows that divide it, no program's past it;
            # a bit plane a program, ``x >> b`` for b of 32, takes 16 u8 a thread so)
            divides = not isinstance(g, E.Const) or (len(facts.rows) == 1 and int(g.value) % (factors[pid] * 2) == 0)
            return not others and factors[pid] < max(MAX_ROWS, ROW_ELEMENTS // first) and divides
        return pid in facts.tile and (not isinstance(g, E.Const) or int(g.value) % (factors[pid] * 2) == 0)

    shared = _atomic_axes(kernel, facts)
    warps = 8 if facts.transposes else 4
    most = LOOP_LANES * 32 * warps if _carries(kernel) else 1 << 30  # lanes of a program
    while elements * width < TILE_BYTES and elements * 2 <= most:
        span = {p: facts.tile.get(p, 1) * factors[p] for p in factors if room(p)}
        if facts.tma:  # descriptor boxes: at most 256 elements an axis
            span = {p: n for p, n in span.items() if n < 256}
        row_bytes = TMA_ROW_BYTES if facts.tma else INNER_BYTES
        if tile_rank(kernel) == 1 and not facts.rows and not facts.tma:
            # one axis of lanes and no rows to add: the line is the whole tile, which grows to LINE_BYTES
            row_bytes = LINE_BYTES
        short_rows = [p for p in span if p in facts.inner and span[p] * width < row_bytes]
        others = [p for p in span if p not in facts.inner]
        # the axes an atomic's address does not change along first: their lanes fold into one atomic
        # (schedule/atomicfold.py), so the wider, the fewer atomics on one word
        pick = [p for p in span if p in shared] or short_rows or others
        # (rows already 256 bytes long and nothing else: as fast as it gets)
        if not pick:
            break
        pid = min(pick, key=lambda p: (span[p], -order[p]))  # ties: the later axis (the columns)
        factors[pid] *= 2
        elements *= 2
    if all(f == 1 for f in factors.values()):
        return None
    return TileSchedule(tuple(factors[p.name] for p in kernel.program_ids), warps, origin="auto")


def _atomic_axes(kernel: N.Kernel, facts: Facts) -> set[str]:
    """Program ids whose lanes run along an axis that the address of an atomic (add, max, min, its
    old value unread) does not change along: schedule/atomicfold.py folds those lanes first."""
    out: set[str] = set()
    for s in N.walk(kernel.body):
        if not (isinstance(s, N.Atomic) and s.op in ("add", "max", "min") and s.result is None):
            continue
        index = [E.fold(unspread(i)) for i in s.index]
        rank = len(E.broadcast(s.value.shape, *(i.shape for i in s.index)))
        at = E.broadcast(*(i.shape for i in index)) if index else ()
        at = (1,) * (rank - len(at)) + tuple(at)
        for lane, pids in facts.pairs.items():
            ax = facts.lanes[lane]
            pos = rank - ax.rank + ax.axis
            if 0 <= pos < rank and at[pos] == 1:
                out |= pids
    return out


def serial_auto(kernel: N.Kernel) -> tuple[int, ...] | None:
    """The ``serial`` factors ``--schedule auto`` gives a tile kernel whose atomic adds once for the
    blocks of an axis run one after the other (schedule/serial.py): SERIAL_BLOCKS blocks of the first
    such axis; None where there is none.  The launcher runs that form only where the grid keeps
    SERIAL_PROGRAMS_PER_SM programs a SM (emit/kernels.py)."""
    axes = merging_axes(kernel)
    if not axes:
        return None
    return tuple(SERIAL_BLOCKS if a == axes[0] else 1 for a in range(len(kernel.program_ids)))
