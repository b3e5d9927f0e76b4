"""The kernels of one ``__co__`` function: each top-level ``parallel`` translated by the first path
that covers it, as host-IR statements that launch it (tir/host.py).

The paths, in order: a contraction (lift/contraction.py proves it; schedule/gemm.py tiles it under
the schedule's policy) and the tile IR (lift/kernel.py; under ``--schedule auto`` widened by
schedule/widen.py).  A kernel neither covers is refused with a located diagnostic naming the form
(``CROQ2TRITON_EXPLAIN=1`` also says why a kernel is not tiled as a contraction or not widened).
The launcher's host code is lifted by lift/launcher.py, which calls :class:`KernelDispatch` for
each kernel.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from ..errors import CroqError, CroqLoweringError, Diagnostic, internal_errors
from ..frontend import ast as A
from ..lift.clusters import multicast_notes, without_clusters
from ..lift.contraction import analyse as analyse_contraction
from ..lift.fragarrays import expand_frag_arrays
from ..lift.gridsync import grid_phases
from ..lift.hazards import fenced
from ..lift.host import HostScope
from ..lift.kernel import lift_kernel
from ..lift.launcher import LauncherLifting
from ..lift.narrow import narrowed
from ..lift.notlifted import NotLifted
from ..lift.owncells import own_cells
from ..lift.races import located
from ..lift.shapebounds import expand_shape_bounds
from ..lift.slotted import slotted_buffers
from ..lift.splitscale import split_scales
from ..lift.steplanes import lanes_from_steps
from ..lift.whileloops import counted_whiles
from ..lift.yields import early_exits
from ..options import Options
from ..schedule import occupancy, policy
from ..schedule.atomicfold import fold_atomics
from ..schedule.autotune import autotuned
from ..schedule.branchmax import merge_branches
from ..schedule.coarsen import NotCoarsened, coarsen, find_walk
from ..schedule.flatnest import flatten_nests
from ..schedule.fliplanes import forward_lanes
from ..schedule.foldloops import Block, NotFolded, foldable, segment_tensors
from ..schedule.forward import forward_scratch
from ..schedule.gemm import NotTiled, tile_contraction
from ..schedule.interior import interior_split
from ..schedule.interleave import interleave
from ..schedule.lanemerge import fold_lane_merges
from ..schedule.lanetile import tiles_in_registers
from ..schedule.lastcombine import NotCombined, combined_by_last
from ..schedule.loadstages import has_read_loops, pipeline_loads
from ..schedule.memacc import promote_accumulators
from ..schedule.moments import NotMerged, merge_deviations
from ..schedule.planes import merge_planes
from ..schedule.reroll import reroll_loops
from ..schedule.reverse import reverse_walks
from ..schedule.sameloads import share_loads
from ..schedule.schedule import Schedule, TileSchedule, with_point
from ..schedule.selectfold import fold_all, fold_selects
from ..schedule.serial import NotSerial, merges_atomics, serialize
from ..schedule.shuffles import fold_butterflies
from ..schedule.splitloop import NotSplit, Split, chunk_of, split_loop
from ..schedule.splitphases import NotPhased, phases_of
from ..schedule.storefwd import forward_stores
from ..schedule.totals import lanes_first
from ..schedule.treefold import fold_trees
from ..schedule.trimgrid import trim_grid
from ..schedule.unroll import unroll_short_loops
from ..schedule.vecmasks import vector_masks
from ..schedule.welford import split_welford
from ..schedule.widen import BYTES as WIDEN_BYTES
from ..schedule.widen import NotWidened, widen
from ..schedule.widen import analyse as analyse_widening
from ..tir import expr as E
from ..tir import host as H
from ..tir import nodes as N
from ..tir.contract import Contraction
from ..tir.launch import launch_of
from .triton import emit_kernel

HINT = "the README's 'What does not translate' lists the forms croq2triton refuses"


@contextmanager
def kernel_errors(path: str, kernel: str, top: A.Parallel) -> Iterator[None]:
    """Inside lift / schedule / emit an exception that is neither a user's error nor "not covered"
    is a bug: reported as a located internal error (CROQ2TRITON_DEBUG=1 re-raises it)."""
    with internal_errors(f"{path} of kernel {kernel}", top.span, NotLifted, NotTiled):
        yield


def _across_lanes(kernel: N.Kernel) -> N.Kernel:
    """Under auto, ``kernel``'s work passed between lanes read as tile operations: atomics into one address
    with the lanes folded first; warp shuffles in halving steps as one reduction across lanes; a lane merging
    the lanes' Welford states as one reduction; values lanes pass to other lanes through scratch as a tile in
    registers; lane partials read only as totals as the totals, lanes first."""
    return lanes_first(tiles_in_registers(fold_lane_merges(fold_butterflies(fold_atomics(kernel)))))


class KernelDispatch:
    """Lowers the kernels of ``fn`` (called by lift/launcher.py once per top-level ``parallel``);
    their sources, in order, are ``kernel_sources``."""

    def __init__(self, fn: A.CoFunction, src_name: str, options: Options | None = None, suffix: str = "") -> None:
        self.fn = fn
        self.src_name = src_name
        self.options = options or Options()
        self.suffix = suffix  # of every kernel's name (a tuned point's kernels: matmul_k0__t1)
        self.schedule = self.options.schedule
        self.kernel_sources: list[str] = []
        self.ir_kernels: list[N.Kernel] = []  # the kernels lifted into the tile IR
        self.schedules: dict[str, Schedule | TileSchedule] = {}  # kernel -> the schedule it runs under
        self.contractions: dict[str, Contraction] = {}  # kernel -> what it computes, where proved
        self.warnings: list[Diagnostic] = []

    def warn(self, warnings: Iterable[Diagnostic]) -> None:
        """Each of ``warnings`` once (a kernel both tiled as a contraction and lifted as written for
        other sizes warns of its races on both paths)."""
        seen = {located(d) for d in self.warnings}
        self.warnings.extend(d for d in warnings if located(d) not in seen)

    def __call__(self, top: A.Parallel, name: str, host: LauncherLifting) -> list[H.Stmt]:
        phases = grid_phases(top)  # a grid-wide barrier: one launch a phase (lift/gridsync.py)
        if len(phases) == 1:
            return self.kernel(top, name, host)
        return [s for k, phase in enumerate(phases) for s in self.kernel(phase, f"{name}_phase{k}", host)]

    def kernel(self, top: A.Parallel, name: str, host: LauncherLifting) -> list[H.Stmt]:
        top = expand_shape_bounds(top, host.host_scope())
        top, checks = expand_frag_arrays(self.fn, top)
        top = split_scales(top)
        top = slotted_buffers(top)
        top = early_exits(top)
        top = without_clusters(top)
        self.warnings.extend(multicast_notes(top))
        out: list[H.Stmt] = []
        for c in checks:  # run-time indices of fragment arrays (lift/fragarrays.py)
            ix = host.evaluate(c.index)
            inside = H.Logic("and", (E.Bin("<=", E.Const(0), ix), E.Bin("<", ix, E.Const(c.extent))))
            msg = f"an index of the fragment array '{c.array}' is outside [0, {c.extent})"
            out.append(H.Assert(inside, msg, line=c.index.span.line if c.index.span else 0))
        line = top.span.line if top.span else 0
        tiled = self.lift_contraction(top, name, host)
        if tiled is None and self.schedule == "auto":  # a K loop written as a counted while (lift/whileloops.py)
            counted = counted_whiles(top)
            if counted is not None:
                tiled = self.lift_contraction(counted, name, host)
        if tiled is None and self.schedule == "auto":  # threads' own shared elements as scalars (lift/owncells.py)
            owned = own_cells(top)
            if owned is not None:
                tiled = self.lift_contraction(owned, name, host)
        if tiled is None:
            return [*out, *self.lift_as_written(top, name, host)]
        launch, cond = tiled
        if cond is None:
            return [*out, *launch]
        # tiled under a condition on the sizes: the kernel as written otherwise
        try:
            general = self.lift_as_written(top, f"{name}_general", host)
        except CroqLoweringError as e:  # only the tiled contraction: other sizes are a launch error
            d = e.diagnostics[0]
            only = f"'{name}' runs only where its chunkat tiles are exact: the kernel as written is not translated"
            self.warnings.append(Diagnostic("warning", f"{only}: {d.message}", d.span, d.hint))
            msg = f"{name}: the sizes are not multiples of the chunkat tiles (see 'croq2triton check')"
            return [*out, H.Assert(cond, msg, line=line), *launch]
        note = "the chunkat tiles are exact: the tiled contraction"
        return [*out, H.If(cond, tuple(launch), tuple(general), note, line, line=line)]

    def lift_contraction(
        self, top: A.Parallel, name: str, host: LauncherLifting
    ) -> tuple[list[H.Stmt], E.Expr | None] | None:
        """A kernel that computes a GEMM (lift/contraction.py proves it), tiled under the schedule's
        policy (schedule/policy.py, schedule/gemm.py): the statements that launch it, with the
        launcher's condition when the proof holds only for sizes that the tiles divide (``chunkat``
        on ``cdiv`` grids: the caller lifts the kernel as written for the ``else``); None where the
        proof or the tiling does not cover it (the kernel is lifted as written then).  Under
        ``--schedule auto`` with no tuning point that changes its fields, the launcher picks the
        tile by the launch's sizes and SM count (schedule/occupancy.py)."""
        if os.environ.get("CROQ2TRITON_NO_CONTRACTION"):
            return None
        try:
            with kernel_errors("the contraction path", name, top):
                scope = host.host_scope()
                prelude = [x for x in self.fn.body if x.span and top.span and x.span.line < top.span.line]
                c = analyse_contraction(top, scope, prelude)
                picked = policy.auto(c) if self.schedule == "auto" else policy.source(c)
                schedule = self.tuned(picked, name, top)
                line = top.span.line if top.span else 0
                rows = None
                if self.schedule == "auto" and _same(schedule, picked) and not self.options.launch_configs(name):
                    rows = occupancy.table(c)
                if rows is not None:
                    stmts, kernels = self.at_launch(c, rows, scope, name, line)
                    if os.environ.get("CROQ2TRITON_EXPLAIN"):  # the table the launcher picks from
                        for row in rows:
                            what = f"{name}_{row.tag}" if row.tag else name
                            print(f"{self.src_name}:{line}: note: {what}: {row.schedule.describe()}: {row.reason}",
                                  file=sys.stderr)  # fmt: skip
                else:
                    stmts, kernels = self.tiled(c, schedule, scope, name, line, top)
                sources = [emit_kernel(k, self.src_name) for k in kernels]
        except (NotLifted, NotTiled) as e:
            if os.environ.get("CROQ2TRITON_EXPLAIN"):  # why a kernel is not tiled as a GEMM
                span = getattr(e, "span", None) or top.span
                line = span.line if span else 0
                print(f"{self.src_name}:{line}: note: {name} is not tiled as a contraction: {e}", file=sys.stderr)
            return None
        self.kernel_sources.extend(source.rstrip("\n") for source in sources)
        self.ir_kernels.extend(kernels)
        self.schedules[name] = schedule
        self.contractions[name] = c
        self.warn(c.warnings)
        return stmts, _all([_divides(E.fold(x), d) for x, d in c.assumptions])

    def tiled(
        self, c: Contraction, schedule: Schedule, scope: HostScope, name: str, line: int, top: A.Parallel
    ) -> tuple[list[H.Stmt], list[N.Kernel]]:
        """The statements launching ``c`` tiled under ``schedule``, and its kernels (two under split-K,
        whose count the launcher fixes first: the schedule's, at most the K steps there are)."""
        if schedule.split_k != 1 and schedule.origin == "tuned" and (c.batched or c.group is not None or c.scales):
            raise CroqError(
                f"the tuning point splits the K loop of kernel '{name}' ({schedule.describe()}), but it is a "
                "batched, grouped or block-scaled contraction, which split-K does not cover",
                top.span,
                "keep its split_k at 1",
            )
        prelude: list[H.Stmt] = []
        split = None
        if schedule.split_k != 1:
            split = f"_{name}{self.suffix}_split_k"
            steps = E.CDiv(_k_extent(c, scope), E.Const(schedule.block_k))
            count = E.Bin("max", E.Const(1), E.Bin("min", E.Const(schedule.split_k), steps))
            if schedule.split_k == 0:  # as many as fill the SMs (schedule/occupancy.py)
                count = _split_for(_tiles(c, scope, schedule), steps, _num_sms())
            prelude.append(H.Let(split, E.fold(count), line=line))
        stmts, kernels = self.launches(c, schedule, scope, name + self.suffix, line, split)
        return [*prelude, *stmts], kernels

    def launches(
        self, c: Contraction, s: Schedule, scope: HostScope, kname: str, line: int, split: str | None = None
    ) -> tuple[list[H.Stmt], list[N.Kernel]]:
        """``c`` tiled under ``s`` as kernel ``kname``: its launches (under split-K the workspace, the
        split kernel and the sum kernel) and its kernels."""
        precision = self.options.dot_precision(c.a.elem, c.b.elem)
        # named as emitted: its grid names the launcher's variables after it (NUM_SMS)
        base = kname.removesuffix(self.suffix) if self.suffix else kname
        tiled = tile_contraction(c, s, scope, kname, line, precision, split, f"{base}_sum{self.suffix}")
        kernels = [self.finished(tiled.kernel, base)]
        stmts: list[H.Stmt] = []
        if tiled.workspace is not None:
            var, shape, dtype = tiled.workspace
            stmts.append(H.Alloc(var, shape, dtype, None, empty=True, line=line))
        stmts.append(launch_of(kernels[0], line))
        if tiled.sum is not None:
            kernels.append(tiled.sum)
            stmts.append(launch_of(tiled.sum, line))
        return stmts, kernels

    def at_launch(
        self, c: Contraction, rows: tuple[occupancy.Row, ...], scope: HostScope, name: str, line: int
    ) -> tuple[list[H.Stmt], list[N.Kernel]]:
        """The kernels of every row of the occupancy table (schedule/occupancy.py) and the launcher's
        choice among them: the first row whose condition holds at the launch's sizes and SM count."""
        k = name + self.suffix
        sms, split = E.Var(f"_{k}_sms"), f"_{k}_split_k"
        kernels: list[N.Kernel] = []
        built: list[tuple[occupancy.Row, list[H.Stmt]]] = []
        for row in rows:
            kname = f"{name}_{row.tag}{self.suffix}" if row.tag else k
            stmts, ks = self.launches(c, row.schedule, scope, kname, line, split if row.schedule.split_k != 1 else None)
            kernels += ks
            built.append((row, stmts))
        tail: list[H.Stmt] = []
        for row, stmts in reversed(built):  # the last row (split-K) is the innermost else
            s = row.schedule
            if row.fill is not None:
                cond = E.Bin(">=", E.fold(_tiles(c, scope, s) * E.Const(row.fill[1])), E.fold(sms * row.fill[0]))
                tail = [H.If(cond, tuple(stmts), tuple(tail), row.reason)]
            elif s.split_k == 1:  # the split count decides between this row and the split row after it
                steps = E.CDiv(_k_extent(c, scope), E.Const(s.block_k))
                count = H.Let(split, E.fold(_split_for(_tiles(c, scope, s), steps, sms)))
                one = E.Bin("==", E.Var(split, "i32", 1), E.Const(1))
                tail = [count, H.If(one, tuple(stmts), tuple(tail), row.reason)]
            else:
                tail = stmts
        return [H.Let(sms.name, _num_sms(), line=line), *tail], kernels

    def lift_as_written(self, top: A.Parallel, name: str, host: LauncherLifting, narrow: bool = True) -> list[H.Stmt]:
        """The kernel as written, lifted into the tile IR (lift/kernel.py), under ``--schedule auto``
        widened or folded where the policy and the proof allow, after the checks the launcher makes
        for it; a form the lifting does not cover is refused with a diagnostic at the construct that
        stops it.

        A widened kernel runs only where it keeps at least one program per SM; at sizes where it
        would not (a grid known only at launch), the launcher runs the kernel as lifted, whose
        programs are the source's (a row softmax of 4096 rows widened to one program ran 60x slower
        than as written on the H200, issue 24)."""
        line = top.span.line if top.span else 0
        if self.schedule == "auto":  # a counted while loop as a foreach (lift/whileloops.py)
            counted = counted_whiles(top)
            if counted is not None:
                with contextlib.suppress(CroqError):  # any error of the rewritten form: as written
                    return self.lift_as_written(counted, name, host, narrow)
        if self.schedule == "auto":  # a thread's loop over independent steps as more lanes (lift/steplanes.py)
            merged = lanes_from_steps(top)
            if merged is not None:
                with contextlib.suppress(CroqError):  # any error of the merged form: as written
                    return self.lift_as_written(merged, name, host, narrow)
        try:
            with kernel_errors("the tile-IR path", name, top):
                lifted = lift_kernel(top, name, host.host_scope(), self.src_name, self.options)
                # under auto, block reductions through scratch memory in halving steps are tile
                # reductions (schedule/treefold.py), tiles staged there are read in registers
                # (schedule/forward.py)
                written = lifted.kernel
                if (
                    self.schedule == "auto"
                ):  # (loop nests over one range and loops unrolled by hand as one loop, an element read twice once)
                    written = share_loads(
                        forward_stores(
                            reverse_walks(
                                reroll_loops(flatten_nests(forward_scratch(promote_accumulators(fold_trees(written)))))
                            )
                        )
                    )
                    written = split_welford(merge_branches(written))
                # a block of several independent rows, at one row a program (lift/narrow.py)
                one_row = narrowed(top) if narrow and self.schedule == "auto" else None
                schedule = self.tile_schedule(written, top, one_row is not None)
                self.schedules[name] = schedule
                if schedule.rows:  # the tuning point's rows a program: that kernel alone
                    found = one_row if schedule.rows == 1 else narrowed(top, schedule.rows)
                    if found is not None:
                        return self.lift_as_written(found[0], f"{name}_rows", host, narrow=False)
                launches = self.written_launches(written, schedule, top, name, host, one_row)
                # loop nests over two axes memory holds as one run: one loop where the launcher sees them so
                # (schedule/planes.py)
                merged = merge_planes(written) if self.schedule == "auto" else None
                if merged is not None:
                    plane, cond = merged
                    plane = dataclasses.replace(plane, name=f"{written.name}_planes")
                    plane_name = f"{name}_planes"
                    plane_schedule = self.tile_schedule(plane, top)
                    self.schedules[plane_name] = plane_schedule
                    planes = self.written_launches(plane, plane_schedule, top, plane_name, host, None)
                    note = "the nest's axes are one run in memory: one loop over them (schedule/planes.py)"
                    launches = [H.If(cond, tuple(planes), tuple(launches), note, line, line=line)]
        except NotLifted as e:
            raise CroqLoweringError(
                f"croq2triton does not translate {e.described()}", e.span or top.span, e.hint or HINT
            ) from e
        self.warn(lifted.warnings)
        return [*lifted.checks, *launches]

    def written_launches(
        self,
        written: N.Kernel,
        schedule: TileSchedule,
        top: A.Parallel,
        name: str,
        host: LauncherLifting,
        one_row: tuple[A.Parallel, int] | None,
    ) -> list[H.Stmt]:
        """The launcher's statements that run the lifted kernel ``written`` under ``schedule``: its
        variants (widened, folded whole or in blocks, split across programs ...) and the conditions
        that pick one at launch."""
        line = top.span.line if top.span else 0
        # (kernel, the launcher's condition to run it): the last one runs otherwise
        variants: list[tuple[N.Kernel, E.Expr | None, str]] = []
        wide = self.widened(written, schedule, top)
        base = wide or dataclasses.replace(written, num_warps=schedule.num_warps)
        folded = self.folded(base, schedule, top)
        sized = _block_extent(folded)
        if folded is not base and schedule.fold < 0 and schedule.origin == "auto" and sized is not None:
            # the row in registers where it fits, else in blocks (read again by each pass)
            lanes = sized.fixed
            most = policy.whole_row_bytes(len(foldable(base)), lanes) // _elem_bytes(folded)
            blocked = self.blocked(base, policy.fold_block_of(_elem_bytes(folded), lanes), schedule)
            blocked = dataclasses.replace(blocked, name=f"{name}_blocked")
            note = f"each row in registers where it holds at most {most} elements (else in blocks)"
            variants += [(folded, _fits(sized, most), note), (blocked, None, "")]
        elif wide is not None and (segments := policy.segments_split(written, schedule)) is not None:
            # lanes walking segments of their own: one lane a program where the segments are
            # long on average, R a program where shorter (schedule.segment_rows), else the lanes stay in
            # one program, a block of each segment a step
            stay = policy.segments_stay(written)
            whole = dataclasses.replace(written, name=f"{name}_lanes", num_warps=stay.num_warps)
            long = policy.segments_at_least(written, policy.SEGMENT_ONE_ELEMS)
            if schedule.segment_rows == 0 and schedule.origin == "auto" and long is not None:
                note = f"segments of {policy.SEGMENT_ONE_ELEMS} elements a lane or more: one lane a program"
                variants.append((folded, long, note))
                for rows, least in policy.SEGMENT_ROW_FORMS:
                    block = policy.SEGMENT_ROWS_TILE // rows
                    form = self.segment_rows(written, schedule, top, f"{name}_rows{rows}", rows, block)
                    at_least = policy.segments_at_least(written, least)
                    if form is not None and at_least is not None:
                        note = f"segments of {least} elements a lane or more: {rows} a program, {block} a step"
                        variants.append((form, at_least, note))
            else:
                note = f"segments of {policy.SEGMENT_LANE_ELEMS} elements a lane or more: one lane a program"
                variants.append((folded, segments, note))
            variants.append((self.folded(whole, stay, top), None, ""))
        elif wide is not None and schedule.origin == "tuned" and (schedule.segment_rows or 0) > 0:
            # a tuning point's R segments a program, in steps of its fold, at every launch
            rows = schedule.segment_rows or 1
            form = self.segment_rows(written, schedule, top, name, rows, schedule.fold, schedule.num_warps)
            variants.append((form or folded, None, ""))
        elif wide is not None and any(f > 1 for f in schedule.factors):
            # fewer programs: where too few for the SMs, the source's
            programs = _product(tuple(wide.grid))
            enough = E.Bin(">=", programs, E.Call("_rt.num_sms", (E.Var("_dev"),), "i32"))
            note = "widened: as long as it keeps a program per SM (else the kernel as written)"
            narrow = self.folded(dataclasses.replace(written, name=f"{name}_narrow"), schedule, top)
            variants += [(folded, enough, note), (narrow, None, "")]
        else:
            variants += self.short_rows(base, folded, schedule) or [(folded, None, "")]
        # both schedules: measured faster (schedule/interior.py)
        if self.schedule == "auto":
            variants = [(_across_lanes(k), cond, note) for k, cond, note in variants]
        split = self.split(written, schedule, top)
        rows = None
        # (a row fold split only below a wave of programs keeps it where it is not split)
        unsplit = split is None or all(x.below is not None for x in split)
        if one_row is not None and schedule.rows == 0 and unsplit and len(variants) == 2 and sized is not None:
            # folded whole or in blocks: one row a program past NARROW_ROW_BYTES rows
            rows = self.one_row_a_program(one_row, name, host, sized, _elem_bytes(folded))
        if self.schedule == "auto" and split is None:
            variants = self.lines_split(written, schedule, top, variants)
        stages = schedule.num_stages or 1
        if self.schedule == "auto":  # programs past every effect's guard left out (schedule/trimgrid.py)
            variants = [(trim_grid(k), cond, note) for k, cond, note in variants]
            # guards on the contiguous axis rounded out on loads, if / else stores merged: accesses
            # Triton vectorises (schedule/vecmasks.py)
            # accesses at a stride along the contiguous axis read and written as whole lines: interleaved
            # groups split from one tile, lanes split by a division joined (schedule/interleave.py)
            variants = [(vector_masks(interleave(k)), cond, note) for k, cond, note in variants]
            # loops of a few constant steps whose loads shift with the step (a filter's taps): unrolled,
            # each window's offset a constant, the windows loaded together (schedule/unroll.py)
            variants = [(unroll_short_loops(k), cond, note) for k, cond, note in variants]
        kernels = [
            self.finished(
                pipeline_loads(
                    self.serial(self.forwards(interior_split(self.coarsened(self.named(k), schedule))), schedule, top),
                    stages,
                ),
                name,
            )
            for k, _, _ in variants
        ]
        if self.schedule == "auto" and schedule.origin == "auto":
            # blocks one after the other where their atomic adds once for them (schedule/serial.py)
            variants, kernels = self.serial_auto(written, variants, kernels, top, name, stages)
        launches = [launch_of(k, line) for k in kernels]
        # the programs the kernel runs unsplit (its variants' most): a row fold splits below a wave of them
        ran = functools.reduce(lambda a, b: E.Bin("max", a, b), [_product(tuple(k.grid)) for k in kernels])
        for x in split or []:
            kernels += [x.fused] if x.fused is not None else [x.partial, x.combine]
        sources = [emit_kernel(k, self.src_name) for k in kernels]
        self.kernel_sources.extend(source.rstrip("\n") for source in sources)
        self.ir_kernels.extend(kernels)
        out: H.Stmt = launches[-1]
        for launch, (_, cond, note) in reversed(list(zip(launches[:-1], variants[:-1], strict=True))):
            assert cond is not None
            out = H.If(cond, (launch,), (out,), note, line, line=line)
        # long rows: one a program (lift/narrow.py), before a row fold's split (which runs fewer programs)
        narrow: tuple[E.Expr, tuple[H.Stmt, ...], str] | None = None
        if rows is not None:
            note = f"rows of at least {policy.NARROW_ROW_BYTES} bytes: one row a program (lift/narrow.py)"
            narrow = (rows[0], tuple(rows[1]), note)
        if split is None:
            return [out if narrow is None else H.If(narrow[0], narrow[1], (out,), narrow[2], line, line=line)]
        # too few programs for the SMs: the loop split across programs, its partial folds combined after
        # (the partial kernel's programs: its grid but the split axis); phases one after the other
        first = split[0]
        programs = _product(tuple(first.partial.grid[:-1]))
        assert first.extent is not None  # (split_one: the extent or the policy's estimate of it)
        count: E.Expr = (
            E.Const(schedule.loop_split)
            if schedule.loop_split
            else policy.split_count(programs, first.extent, first.least, len(split), first.below, E.fold(ran))
        )
        lets: list[H.Stmt] = [H.Let(first.splits_var, count, line=line)]
        lets += [H.Let(x.splits_var, E.Var(first.splits_var), line=line) for x in split[1:]]
        parts: list[H.Stmt] = []
        for x in split:
            if x.chunk_var is not None and x.extent is not None:  # (else each program computes its chunk)
                chunk = chunk_of(x.extent, E.Var(x.splits_var), E.Const(x.block))
                parts.append(H.Let(x.chunk_var, chunk, line=line))
            if x.fused is not None:  # the last program of each group combines (schedule/lastcombine.py)
                parts.append(launch_of(x.fused, line))
            else:
                parts += [launch_of(x.partial, line), launch_of(x.combine, line)]
        note = "too few programs for the SMs: the loop split across programs (schedule/splitloop.py)"
        choose = H.If(E.Bin(">", E.Var(first.splits_var), E.Const(1)), tuple(parts), (out,), note, line, line=line)
        if narrow is not None:
            return [H.If(narrow[0], narrow[1], (*lets, choose), narrow[2], line, line=line)]
        return [*lets, choose]

    def one_row_a_program(
        self, found: tuple[A.Parallel, int], name: str, host: LauncherLifting, sized: N.Constexpr, elem: int
    ) -> tuple[E.Expr, list[H.Stmt]] | None:
        """A block of several independent rows (``found``: lift/narrow.py's block of one row a program
        and the rows the block had) whose lanes' loops fold over the row (``sized``: the folded axis,
        fixed at launch): the launcher's condition for long rows and the statements launching the
        block of one row a program for them; None where that block does not lift.  Several long rows
        a program either hold too many registers or, read in blocks, miss L2 on their second pass
        (perf/RESULTS.md 2026-12-05)."""
        assert sized.size is not None
        new_top, rows = found
        try:
            statements = self.lift_as_written(new_top, f"{name}_rows", host, narrow=False)
        except CroqLoweringError:
            return None
        row = E.Bin("*", sized.size, E.Const(sized.fixed // rows * elem))
        return E.Bin(">=", E.fold(row), E.Const(policy.NARROW_ROW_BYTES)), statements

    def split(self, kernel: N.Kernel, schedule: TileSchedule, top: A.Parallel) -> list[Split] | None:
        """Under ``--schedule auto``, ``kernel``'s loop split across programs where the policy asks
        for it and the proof holds (schedule/splitloop.py): the partial kernel folded in blocks, the
        combine kernel's loop over the partials whole; loops one after the other, one phase a loop,
        each split so (schedule/splitphases.py: each phase's partials combined by its last program,
        which carries what the later phases read); None otherwise."""
        if self.schedule != "auto" or schedule.loop_split in (None, 1):
            return None
        if segment_tensors(kernel):
            # lanes walking segments of their own (a loop or passes of them): the split of their form of
            # one lane a program (the form that runs where the segments are long: policy.segments_split),
            # where the schedule has it
            wide = self.widened(kernel, schedule, top) if any(d > 1 for d in schedule.splits) else None
            if wide is None:
                self.explain(kernel, top, NotSplit("segments whose lanes stay in one program"))
                return None
            kernel = trim_grid(wide)  # (one program a segment: the programs past the last left out)
        kernel, _ = fold_selects(kernel)  # loops over a register tile's elements: one reduction each
        kernel = self.split_widened(kernel)  # lanes along lines: at least policy.SPLIT_LINE_MIN bytes of a row
        if schedule.deviations:  # squared deviations from what a loop before computed, folded in its pass
            with contextlib.suppress(NotMerged):  # (schedule/moments.py)
                merged = merge_deviations(kernel)
                with contextlib.suppress(NotSplit, NotFolded):
                    return [self.split_one(self.named(merged), kernel.name, schedule)]
                with contextlib.suppress(NotPhased, NotSplit, NotFolded):
                    return self.phases(merged, kernel.name, schedule)
        try:
            return [self.split_one(self.named(kernel), kernel.name, schedule)]
        except (NotSplit, NotFolded) as e:
            if not schedule.combine_last or sum(isinstance(x, N.For) for x in kernel.body) < 2:
                self.explain(kernel, top, e)
                return None
        try:
            return self.phases(kernel, kernel.name, schedule)
        except (NotPhased, NotSplit, NotFolded) as e:
            self.explain(kernel, top, e)
            return None

    def phases(self, kernel: N.Kernel, base: str, schedule: TileSchedule) -> list[Split]:
        """``kernel``'s loops one after the other, one phase a loop, each split (schedule/splitphases.py)."""
        out = [self.split_one(phase, base, schedule) for phase in phases_of(self.named(kernel))]
        if any(x.fused is None for x in out):  # (the carry is written by the program that combines)
            raise NotPhased("a phase whose partials are not combined by its last program")
        return out

    def split_one(self, kernel: N.Kernel, base: str, schedule: TileSchedule) -> Split:
        """``kernel`` (named as emitted) with its one loop split across programs (schedule/splitloop.py);
        ``base``: the kernel's name to a tuning point."""
        tuned = schedule.origin == "tuned"
        block = policy.split_block(kernel)
        if tuned and schedule.fold > 0 and block > 1:  # (1: its iterations fold tiles of their own)
            block = schedule.fold
        least = policy.split_least(kernel)
        rows = policy.row_split(kernel)  # lanes along their rows: split below ROW_SPLIT_BELOW waves only
        segments = policy.segment_loop(kernel)  # each lane's own segment: its length read in the kernel
        if segments and schedule.fold > 0:  # (in the blocks of the segments unsplit, one lane a program)
            block = schedule.fold
        if rows:
            # folded first, as unsplit (the lanes' rows on the tile's fast axis), then split in chunks of
            # whole blocks (the launcher rounds CHUNK up to one): a block never crosses a chunk's end
            kernel = fold_all(kernel, block)
        split = split_loop(kernel, kernel.name, block if rows else 1, align=block)
        if split.extent is None:  # (the kernel reads its extent: S from the launcher's estimate of it)
            estimate = policy.segment_mean(kernel) if segments else None
            if estimate is None:
                raise NotSplit("a loop whose extent the launcher neither knows nor estimates")
            split = dataclasses.replace(split, extent=estimate)
        warps = policy.FOLD_WARPS if rows else policy.SEGMENT_WARPS if segments else policy.SPLIT_WARPS
        warps = schedule.num_warps if tuned else warps
        partial = dataclasses.replace(split.partial, num_warps=warps)
        if block > 1 and not rows:  # (1: a loop over blocks of rows already, which stays)
            partial = fold_all(partial, block)
        partial = self.coarsened(partial, schedule)  # (its stop the split's: a step never crosses it)
        combine = lanes_first(fold_all(split.combine, E.Extent("BLOCK_S"), whole=True))
        stages = schedule.num_stages or 1
        finished = [self.finished(pipeline_loads(k, stages), base) for k in (partial, combine)]
        fused = None
        if schedule.combine_last and finished[0].autotune is None:
            # the partials combined by the last program of each group: one launch (schedule/lastcombine.py);
            # its loop over the partials in blocks, so that the partial kernel's warps hold one block at a time
            blocked = lanes_first(fold_all(split.combine, policy.combine_block(split.combine)))
            with contextlib.suppress(NotCombined):
                fused = combined_by_last(finished[0], pipeline_loads(blocked, stages), split.splits_arg)
        return dataclasses.replace(
            split,
            partial=finished[0],
            combine=finished[1],
            block=block,
            least=least,
            fused=fused,
            below=policy.ROW_SPLIT_BELOW if rows else None,
        )

    def forwards(self, kernel: N.Kernel) -> N.Kernel:
        """Under auto, ``kernel``'s accesses that run backwards along a lane run forwards, the tile
        flipped in registers (schedule/fliplanes.py), once each block's extents are final."""
        return forward_lanes(kernel) if self.schedule == "auto" and policy.FLIP_LANES else kernel

    def coarsened(self, kernel: N.Kernel, schedule: TileSchedule) -> N.Kernel:
        """``kernel``'s loop that loads a tile and folds it, several iterations a step where the schedule
        asks for it (schedule/coarsen.py), else ``kernel`` as it is."""
        if schedule.coarsen is None or schedule.coarsen == 1:
            return kernel
        factor = schedule.coarsen or policy.coarsen_factor(kernel)
        try:
            return coarsen(kernel, factor)
        except NotCoarsened:  # (a variant the widening or folding changed past the proof: as it is)
            return kernel

    def split_widened(self, kernel: N.Kernel) -> N.Kernel:
        """``kernel`` widened for its split form where its lanes read short lines (policy.split_factors),
        else as it is (a kernel the widening proof refuses too)."""
        try:
            factors = policy.split_factors(kernel, analyse_widening(kernel))
            if factors is None:
                return kernel
            return widen(kernel, TileSchedule(factors, kernel.num_warps, origin="auto"))
        except NotWidened:
            return kernel

    def named(self, kernel: N.Kernel) -> N.Kernel:
        """``kernel`` under the name it is emitted with (a tuning point names it without the suffix)."""
        return dataclasses.replace(kernel, name=kernel.name + self.suffix) if self.suffix else kernel

    def finished(self, kernel: N.Kernel, name: str) -> N.Kernel:
        """``kernel`` (``name`` to a tuning point) launched through ``triton.autotune`` where the
        options ask for it (schedule/autotune.py).  Its barriers are placed again first: folding a
        lane's loop into a tile axis changes which thread stores an element of a scratch buffer
        that other statements read (lift/hazards.py)."""
        kernel = fenced(kernel)
        configs = self.options.launch_configs(name)
        if not configs:
            return kernel
        return autotuned(kernel, configs, "the launch parameters of the best points croq2triton tune found")

    def tuned(self, schedule: Schedule, name: str, top: A.Parallel) -> Schedule:
        """``schedule`` with the fields the tuning point sets for kernel ``name``."""
        out = self._with_point(schedule, name, top)
        assert isinstance(out, Schedule)
        return out

    def _with_point(self, schedule: Schedule | TileSchedule, name: str, top: A.Parallel) -> Schedule | TileSchedule:
        fields = self.options.point.overrides(name)
        try:
            return with_point(schedule, fields)
        except ValueError as e:
            raise CroqError(
                f"the tuning point's schedule of kernel '{name}': {e}",
                top.span,
                "croq2triton tune --list names the parameters of each kernel and the values they take",
            ) from None

    def tile_schedule(self, kernel: N.Kernel, top: A.Parallel, rows: bool = False) -> TileSchedule:
        """How the tile kernel ``kernel`` runs: as lifted (one block a program, its warps), under
        ``--schedule auto`` widened where the policy picks it (schedule/policy.py), and with the
        fields the tuning point sets; ``rows``: its block is several independent rows (lift/narrow.py)."""
        schedule = TileSchedule(tuple(1 for _ in kernel.program_ids), kernel.num_warps, origin="source")
        if self.schedule == "auto":
            try:
                facts = analyse_widening(kernel)
            except NotWidened as e:
                self.explain(kernel, top, e)
                facts = None  # not widened; its loops may still fold
            picked = policy.tile_auto(kernel, facts)
            schedule = picked or dataclasses.replace(schedule, origin="auto")
            if policy.splits_loop(kernel):  # its loop split across programs where they are too few
                schedule = dataclasses.replace(schedule, loop_split=0, combine_last=True)
            with contextlib.suppress(NotCoarsened):  # a loop that loads a tile and folds it: steps of several
                find_walk(fold_selects(kernel)[0])  # (its loops over a tile's elements reductions first)
                schedule = dataclasses.replace(schedule, coarsen=0)
            with contextlib.suppress(NotMerged):  # squared deviations folded in an earlier pass: a tuning field
                merge_deviations(kernel)
                schedule = dataclasses.replace(schedule, deviations=True)
            if merges_atomics(kernel):  # blocks one after the other add their atomics once: a tuning field
                schedule = dataclasses.replace(schedule, serial=tuple(1 for _ in kernel.program_ids))
        if has_read_loops(kernel) or schedule.fold != 0 or schedule.loop_split is not None:
            # loops that only read memory (or will, once its lanes' loops fold in blocks): pipelined
            stages = policy.LOAD_STAGES if self.schedule == "auto" else 1
            schedule = dataclasses.replace(schedule, num_stages=stages)
        if rows:  # one row a program past policy.NARROW_ROW_BYTES rows, decided at launch
            schedule = dataclasses.replace(schedule, rows=0)
        out = self._with_point(schedule, kernel.name, top)
        assert isinstance(out, TileSchedule)
        return out

    def widened(self, kernel: N.Kernel, schedule: TileSchedule, top: A.Parallel) -> N.Kernel | None:
        """``kernel`` widened under ``schedule`` (schedule/widen.py), or None where the schedule keeps one
        block a program or the proof does not hold (a tuning point that widens a kernel the proof
        refuses is an error; ``CROQ2TRITON_EXPLAIN=1`` says why the policy's choice was dropped)."""
        if all(f == 1 for f in schedule.factors) and all(d == 1 for d in schedule.splits):
            return None
        try:
            return widen(kernel, schedule)
        except NotWidened as e:
            what = f"widens kernel '{kernel.name}' by {schedule.describe()}"
            self.dropped(kernel, schedule, top, e, what, "keep its factors at 1: the kernel cannot be widened")
            return None

    def serial(self, kernel: N.Kernel, schedule: TileSchedule, top: A.Parallel) -> N.Kernel:
        """``kernel`` with the blocks the schedule's ``serial`` factors name run one after the other by
        one program (schedule/serial.py); a tuning point whose proof fails is an error, the policy's
        choice is dropped (``CROQ2TRITON_EXPLAIN=1`` says why)."""
        if not schedule.serial or all(f == 1 for f in schedule.serial):
            return kernel
        try:
            return serialize(kernel, schedule.serial)
        except NotSerial as e:
            what = f"runs blocks of kernel '{kernel.name}' one after the other ({schedule.describe()})"
            self.dropped(kernel, schedule, top, e, what, "keep its serial factors at 1")
            return kernel

    def serial_auto(
        self,
        written: N.Kernel,
        variants: list[tuple[N.Kernel, E.Expr | None, str]],
        kernels: list[N.Kernel],
        top: A.Parallel,
        name: str,
        stages: int,
    ) -> tuple[list[tuple[N.Kernel, E.Expr | None, str]], list[N.Kernel]]:
        """``variants`` and their ``kernels`` with, before the last one, its form whose blocks of an axis
        run one after the other where the kernel's atomic adds once for them (policy.serial_auto), run
        where the grid keeps policy.SERIAL_PROGRAMS_PER_SM programs a SM; as they are where the policy
        picks none or the proof fails (``CROQ2TRITON_EXPLAIN=1`` says why)."""
        factors = policy.serial_auto(written)
        if factors is None:
            return variants, kernels
        last = variants[-1][0]
        try:
            serial = serialize(
                interior_split(self.named(dataclasses.replace(last, name=f"{last.name}_serial"))), factors
            )
        except NotSerial as e:
            self.explain(last, top, e)
            return variants, kernels
        programs = _product(tuple(serial.grid))
        most = E.Bin("*", E.Call("_rt.num_sms", (E.Var("_dev"),), "i32"), E.Const(policy.SERIAL_PROGRAMS_PER_SM))
        enough = E.Bin(">=", programs, most)
        blocks = ", ".join(f"{f} blocks of axis {a}" for a, f in enumerate(factors) if f > 1)
        note = (
            f"{blocks} a program one after the other, their atomics added once, as long as the grid keeps "
            f"{policy.SERIAL_PROGRAMS_PER_SM} programs a SM (schedule/serial.py)"
        )
        kernel = self.finished(pipeline_loads(serial, stages), name)
        return [*variants[:-1], (last, enough, note), variants[-1]], [*kernels[:-1], kernel, kernels[-1]]

    def dropped(
        self, kernel: N.Kernel, schedule: TileSchedule, top: A.Parallel, e: Exception, what: str, hint: str
    ) -> None:
        """A rewrite the schedule asks for whose proof fails (``e``): an error where a tuning point
        asked (``what`` it does), else the policy's choice is dropped (``CROQ2TRITON_EXPLAIN=1``)."""
        if schedule.origin == "tuned":
            raise CroqError(f"the tuning point {what}, but {e}", top.span, hint) from None
        self.explain(kernel, top, e)

    def lines_split(
        self,
        written: N.Kernel,
        schedule: TileSchedule,
        top: A.Parallel,
        variants: list[tuple[N.Kernel, E.Expr | None, str]],
    ) -> list[tuple[N.Kernel, E.Expr | None, str]]:
        """``variants`` with the form whose lanes split across programs (policy.lines_split) before the
        last one, where the grid has fewer programs than SMs; as they are where it does not apply."""
        try:
            facts = analyse_widening(written)
        except NotWidened:
            return variants
        picked = policy.lines_split(written, facts, schedule)
        if picked is None:
            return variants
        try:
            split = widen(written, picked)
        except NotWidened as e:
            self.explain(written, top, e)
            return variants
        split = self.folded(dataclasses.replace(split, name=f"{written.name}_lines"), picked, top)
        split = _across_lanes(split)  # (as the others)
        few = E.Bin("<", _product(tuple(written.grid)), E.Call("_rt.num_sms", (E.Var("_dev"),), "i32"))
        note = f"fewer programs than SMs: each block's lines split across programs ({policy.SPLIT_LINE_BYTES} bytes or more)"
        return [*variants[:-1], (split, few, note), variants[-1]]

    def segment_rows(
        self,
        written: N.Kernel,
        schedule: TileSchedule,
        top: A.Parallel,
        name: str,
        rows: int,
        block: int,
        warps: int = policy.SEGMENT_ROWS_WARPS,
    ) -> N.Kernel | None:
        """``written``, a kernel whose lanes walk segments of their own, with ``rows`` of them a program (its
        block's lanes split, schedule/widen.py), each step an ``[rows, block]`` tile (schedule/foldloops.py),
        named ``name``; None where the proof of either does not hold (a tuning point's: an error)."""
        lanes = policy.lane_count(written)
        if rows > lanes:
            if schedule.origin == "tuned":
                raise CroqError(
                    f"the tuning point runs {rows} segments a program of kernel '{written.name}', whose block "
                    f"has {lanes} lanes",
                    top.span,
                    f"a power of two segment_rows of at most {lanes}",
                )
            return None
        sched = policy.segment_rows_schedule(schedule, rows, block, warps)
        wide = self.widened(written, sched, top) if any(d > 1 for d in sched.splits) else written
        if wide is None:
            return None
        return self.folded(dataclasses.replace(wide, name=name, num_warps=warps), sched, top)

    def folded(self, kernel: N.Kernel, schedule: TileSchedule, top: A.Parallel) -> N.Kernel:
        """``kernel`` with each lane's loops folded into a tile axis where the schedule asks for it
        (schedule/foldloops.py): blocks of ``schedule.fold`` elements, or (-1) each loop's whole
        extent, fixed at launch."""
        if schedule.fold == 0:
            return kernel
        block: Block = schedule.fold if schedule.fold > 0 else E.Extent("BLOCK_J")
        try:
            try:
                return fold_all(kernel, block, whole=schedule.fold < 0)
            except NotFolded:
                if schedule.fold > 0 or schedule.origin == "tuned":
                    raise
                # (each loop's whole extent cannot be one size fixed at launch, loops of different
                # extents: blocks then, rather than lanes already split one row a program left unfolded)
                return fold_all(kernel, policy.fold_block_of(_elem_bytes(kernel), policy.lane_count(kernel)))
        except NotFolded as e:
            if schedule.origin == "tuned":
                raise CroqError(
                    f"the tuning point folds the loops of kernel '{kernel.name}', but {e}",
                    top.span,
                    "keep its fold at 0: the kernel's loops cannot be folded",
                ) from None
            self.explain(kernel, top, e)
            return kernel

    def short_rows(
        self, base: N.Kernel, folded: N.Kernel, schedule: TileSchedule
    ) -> list[tuple[N.Kernel, E.Expr | None, str]] | None:
        """A kernel whose lanes' loops auto folds in blocks (``folded``), with the loops folded whole
        (no loop: nothing to pipeline) where the launch's extent fits one block: a loop of one block
        pipelined in three stages ran 15x slower than folded whole (H100, perf/RESULTS.md 2026-12-07
        10:31: the mean of 7 x 7 planes, 0.032 of the roofline in blocks of 128, 0.705 whole).  None
        where the loops have no one extent the launcher sizes, or the lanes' count is fixed at launch."""
        if self.schedule != "auto" or schedule.origin != "auto" or schedule.fold <= 0 or folded is base:
            return None
        if policy.lane_count(base, policy.LAUNCH_LANES) != policy.lane_count(base):  # (lanes fixed at launch)
            return None
        if not any(isinstance(x, N.Load) for s in base.body if isinstance(s, N.For) for x in N.walk(s.body)):
            return None  # (loops that read nothing: nothing to pipeline either)
        try:
            whole = fold_all(base, E.Extent("BLOCK_J"), whole=True)
        except NotFolded:
            return None
        sized = _block_extent(whole)
        if sized is None:
            return None
        most = policy.FOLD_BLOCK_BYTES // _elem_bytes(folded)
        note = f"each lane's row whole where the lanes' rows hold at most {most} elements (else in blocks)"
        return [(dataclasses.replace(whole, name=f"{base.name}_whole"), _fits(sized, most), note), (folded, None, "")]

    def blocked(self, kernel: N.Kernel, block: int, schedule: TileSchedule) -> N.Kernel:
        """``kernel``'s loops folded in blocks of ``block`` (rows too long for the registers, read again by
        each pass), the squared deviations from what a loop before computed folded in its pass where they
        are (schedule/moments.py: a pass fewer)."""
        if schedule.deviations:
            with contextlib.suppress(NotMerged, NotFolded):
                return fold_all(merge_deviations(kernel), block)
        return fold_all(kernel, block)

    def explain(self, kernel: N.Kernel, top: A.Parallel, e: Exception) -> None:
        if os.environ.get("CROQ2TRITON_EXPLAIN"):
            line = top.span.line if top.span else 0
            print(f"{self.src_name}:{line}: note: {kernel.name} is not widened: {e}", file=sys.stderr)


def _same(tuned: Schedule, picked: Schedule) -> bool:
    """Whether a tuning point leaves the policy's schedule as it is (sets no field, or each to the value
    the policy picks): the policy's choice at launch stands then."""
    return dataclasses.replace(tuned, origin=picked.origin) == picked


def _host_size(x: str | int) -> E.Expr:
    return E.Const(x) if isinstance(x, int) else E.Var(x, "i32", 0)


def _k_extent(c: Contraction, scope: HostScope) -> E.Expr:
    """K as the launcher has it (the extent of ``a``'s contracted dimension)."""
    return _host_size(scope.tensors[c.a.tensor].extents[c.a.inner])


def _tiles(c: Contraction, scope: HostScope, s: Schedule) -> E.Expr:
    """The output tiles of ``s`` as the launcher computes them."""
    ext = scope.tensors[c.out.tensor].extents
    rows, cols = _host_size(ext[c.out.free]), _host_size(ext[c.out.inner])
    return E.fold(E.CDiv(rows, E.Const(s.block_m)) * E.CDiv(cols, E.Const(s.block_n)))


def _num_sms() -> E.Expr:
    return E.Call("_rt.num_sms", (E.Var("_dev"),), "i32")


def _split_for(tiles: E.Expr, steps: E.Expr, sms: E.Expr) -> E.Expr:
    """schedule/occupancy.py ``split_for`` as a launcher expression."""
    wave = E.CDiv(sms, E.Bin("max", tiles, E.Const(1)))
    longest = E.Bin("/", steps, E.Const(occupancy.MIN_SPLIT_STEPS))
    most = E.Bin("min", E.Bin("min", wave, longest), E.Const(occupancy.MAX_SPLIT))
    return E.Bin("max", E.Const(1), most)


def _block_extent(kernel: N.Kernel) -> N.Constexpr | None:
    """The block extent ``BLOCK_J`` of loops folded whole, fixed at launch (None: none)."""
    return next(
        (a for a in kernel.args if isinstance(a, N.Constexpr) and a.name == "BLOCK_J" and a.size is not None), None
    )


def _fits(extent: N.Constexpr, most: int) -> E.Expr:
    """The launcher's condition that the rows folded whole in ``extent`` hold at most ``most`` elements
    with the lanes beside them."""
    assert extent.size is not None
    return E.Bin("<=", E.fold(E.Bin("*", extent.size, E.Const(extent.fixed))), E.Const(most))


def _elem_bytes(kernel: N.Kernel) -> int:
    """The widest element a kernel's tensors hold, in bytes."""
    return max((WIDEN_BYTES.get(a.dtype, 4) for a in kernel.args if isinstance(a, N.Pointer)), default=4)


def _divides(x: E.Expr, d: int) -> E.Expr:
    """``x % d == 0``."""
    return E.Bin("==", E.Bin("%", x, E.Const(d)), E.Const(0))


def _product(values: tuple[E.Expr, ...]) -> E.Expr:
    out: E.Expr = E.Const(1)
    for v in values:
        out = E.fold(E.Bin("*", out, v))
    return out


def _all(conds: list[E.Expr]) -> E.Expr | None:
    """``a and b and ...`` (None for no condition)."""
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else H.Logic("and", tuple(conds))
