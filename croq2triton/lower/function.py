"""The kernels of one ``__co__`` function: each top-level ``parallel`` lowered by the first path that
covers it, as host-IR statements that launch it (tir/host.py).

The paths, in order: a contraction (lift/contraction.py proves it; schedule/gemm.py tiles it), the
tile IR (lift/kernel.py), and else the older rewrites and kernel lowering of this package
(:class:`~.kernel.KernelLowering`, whose launch stays text: :class:`~..tir.host.LegacyLaunch`).
The launcher's host code is lifted by lift/launcher.py, which calls :class:`KernelDispatch` for
each kernel.  Transitional: this dispatch moves out of ``lower/`` when the older lowering goes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import CroqLoweringError, Diagnostic, internal_errors
from ..frontend import ast as A
from ..lift.clusters import multicast_notes, without_clusters
from ..lift.gridsync import grid_phases
from ..lift.launcher import LauncherLifting
from ..tir import expr as E
from ..tir import host as H
from ..tir import nodes as N
from ..tir.launch import launch_of
from . import coarsen as coarsen_mod
from .coarsen import WGMMA_ROWS, coarsen
from .fragarrays import expand_frag_arrays
from .hostnames import legacy_names, val_of
from .ksplit import ksplit
from .retile import AUTO_TILES, Retiled, retile
from .splitscale import split_scales


@contextmanager
def kernel_errors(path: str, kernel: str, top: A.Parallel) -> Iterator[None]:
    """Inside lift / schedule / emit an exception that is neither a user's error nor "not covered"
    is a bug: reported as a located internal error (CROQ2TRITON_DEBUG=1 re-raises it)."""
    from ..lift.notlifted import NotLifted
    from ..schedule.gemm import NotTiled

    with internal_errors(f"{path} of kernel {kernel}", top.span, NotLifted, NotTiled):
        yield


class LegacyHost:
    """The launcher as the older kernel lowering reads it (``KernelLowering.fl``): its names as
    this package's values, host expressions evaluated to them, the schedule, where warnings go."""

    def __init__(self, host: LauncherLifting, schedule: str, warnings: list[Diagnostic]) -> None:
        self.host = host
        self.names = legacy_names(host.names, host.declared)
        self.schedule = schedule
        self.src_name = host.src_name
        self.warnings = warnings

    def host_eval(self, e: A.Expr) -> Any:
        return val_of(self.host.evaluate(e), self.host.declared)

    def error(self, msg: str, node: A.Node | None, hint: str | None = None) -> CroqLoweringError:
        return CroqLoweringError(msg, node.span if node is not None else None, hint)


class KernelDispatch:
    """Lowers the kernels of ``fn`` (called by lift/launcher.py once per top-level ``parallel``);
    their sources, in order, are ``kernel_sources``."""

    def __init__(self, fn: A.CoFunction, src_name: str, schedule: str = "source") -> None:
        self.fn = fn
        self.src_name = src_name
        self.schedule = schedule
        self.kernel_sources: list[str] = []
        self.ir_kernels: list[N.Kernel] = []  # the kernels lifted into the tile IR
        self.legacy_kernels: list[str] = []  # names of kernels the older lowering wrote
        self.warnings: list[Diagnostic] = []

    def __call__(self, top: A.Parallel, name: str, host: LauncherLifting) -> list[H.Stmt]:
        phases = grid_phases(top)  # a grid-wide barrier: one launch a phase (lift/gridsync.py)
        if len(phases) == 1:
            return self.kernel(top, name, host)
        return [s for k, phase in enumerate(phases) for s in self.kernel(phase, f"{name}_phase{k}", host)]

    def kernel(self, top: A.Parallel, name: str, host: LauncherLifting) -> list[H.Stmt]:
        top, checks = expand_frag_arrays(self.fn, top)
        top = split_scales(top)
        top = without_clusters(top)
        self.warnings.extend(multicast_notes(top))
        out: list[H.Stmt] = []
        for c in checks:  # run-time indices of fragment arrays (lower/fragarrays.py)
            ix = host.evaluate(c.index)
            inside = H.Logic("and", (E.Bin("<=", E.Const(0), ix), E.Bin("<", ix, E.Const(c.extent))))
            msg = f"an index of the fragment array '{c.array}' is outside [0, {c.extent})"
            out.append(H.Assert(inside, msg, line=c.index.span.line if c.index.span else 0))
        line = top.span.line if top.span else 0
        tiled = self.lift_contraction(top, name, host)
        if tiled is None:
            return out + self.lower_parallel(top, name, host)
        launch, cond = tiled
        if cond is None:
            return [*out, launch]
        # tiled under a condition on the sizes: the kernel as written otherwise
        general = tuple(self.lower_parallel(top, f"{name}_general", host))
        note = "the chunkat tiles are exact: the tiled contraction"
        return [*out, H.If(cond, (launch,), general, note, line, line=line)]

    def lift_contraction(
        self, top: A.Parallel, name: str, host: LauncherLifting
    ) -> tuple[H.Launch, E.Expr | None] | None:
        """A kernel that computes a GEMM (lift/contraction.py proves it), tiled under the schedule's
        policy (schedule/policy.py, schedule/gemm.py): its launch, with the launcher's condition
        when the proof holds only for sizes that the tiles divide (``chunkat`` on ``cdiv`` grids:
        the caller lowers the kernel as written for the ``else``); None where the proof or the
        tiling does not cover it (the kernel is lowered as written then)."""
        from ..emit.triton import emit_kernel
        from ..lift.contraction import analyse
        from ..lift.notlifted import NotLifted
        from ..schedule import policy
        from ..schedule.gemm import NotTiled, tile_contraction

        if os.environ.get("CROQ2TRITON_NO_CONTRACTION"):
            return None
        try:
            with kernel_errors("the contraction path", name, top):
                scope = host.host_scope()
                prelude = [x for x in self.fn.body if x.span and top.span and x.span.line < top.span.line]
                c = analyse(top, scope, prelude)
                schedule = policy.auto(c) if self.schedule == "auto" else policy.source(c)
                tiled = tile_contraction(c, schedule, scope, name, top.span.line if top.span else 0)
                source = emit_kernel(tiled.kernel, self.src_name)
        except (NotLifted, NotTiled) as e:
            if os.environ.get("CROQ2TRITON_EXPLAIN"):  # why a kernel is not tiled as a GEMM
                span = getattr(e, "span", None) or top.span
                line = span.line if span else 0
                print(f"{self.src_name}:{line}: note: {name} is not tiled as a contraction: {e}", file=sys.stderr)
            return None
        self.kernel_sources.append(source.rstrip("\n"))
        self.ir_kernels.append(tiled.kernel)
        launch = launch_of(tiled.kernel, top.span.line if top.span else 0)
        return launch, _all([_divides(E.fold(x), d) for x, d in c.assumptions])

    def lift_new_path(self, top: A.Parallel, name: str, host: LauncherLifting) -> H.Launch | None:
        """The tile-IR path (lift -> tir -> emit) for the kernel families it covers; None where
        the lifting does not cover ``top`` yet (the older lowering handles it then)."""
        from ..emit.triton import emit_kernel
        from ..lift.kernel import lift_kernel
        from ..lift.notlifted import NotLifted
        from ..schedule.interior import interior_split

        try:
            with kernel_errors("the tile-IR path", name, top):
                lifted = lift_kernel(top, name, host.host_scope(), self.src_name)
                kernel = lifted.kernel
                if self.schedule == "auto":
                    kernel = self.widened(kernel, top) or kernel
                kernel = interior_split(kernel)  # both schedules: measured faster (schedule/interior.py)
                launch = launch_of(kernel, top.span.line if top.span else 0)
                source = emit_kernel(kernel, self.src_name)
        except NotLifted as e:
            if os.environ.get("CROQ2TRITON_EXPLAIN"):  # why a kernel stays on the older lowering
                span = e.span or top.span
                line = span.line if span else 0
                print(f"{self.src_name}:{line}: note: {name} is not lifted to the tile IR: {e}", file=sys.stderr)
            return None
        self.kernel_sources.append(source.rstrip("\n"))
        self.ir_kernels.append(kernel)
        self.warnings.extend(lifted.warnings)
        return launch

    def widened(self, kernel: N.Kernel, top: A.Parallel) -> N.Kernel | None:
        """``kernel`` under the ``auto`` policy's widening (schedule/widen.py), or None where the
        policy keeps it or the proof does not hold (``CROQ2TRITON_EXPLAIN=1`` says why)."""
        from ..schedule import policy
        from ..schedule.widen import NotWidened, analyse, widen

        try:
            schedule = policy.tile_auto(kernel, analyse(kernel))
            return widen(kernel, schedule) if schedule is not None else None
        except NotWidened as e:
            if os.environ.get("CROQ2TRITON_EXPLAIN"):
                line = top.span.line if top.span else 0
                print(f"{self.src_name}:{line}: note: {kernel.name} is not widened: {e}", file=sys.stderr)
            return None

    def lower_parallel(self, s: A.Parallel, name: str, host: LauncherLifting) -> list[H.Stmt]:
        """A kernel the contraction path did not take: the older rewrites, the elementwise lifting,
        or the older lowering."""
        from .kernel import KernelLowering

        factors = (1, 1)
        if any(isinstance(n, A.MmaOp) for n in s.walk()) and (launch := self.lift_new_path(s, name, host)):
            return [launch]  # MMA as written (lift/mma.py) before the older rewrites of MMA kernels
        split = ksplit(s) if self.schedule == "auto" else None
        if split is not None:
            s = split[0]  # staged K tiles in 64-wide steps (lower/ksplit.py)
        if self.schedule == "auto":
            targets = coarsen_mod.auto_thread_tiles(s, split[1][1] if split is not None else None)
        else:
            targets = (WGMMA_ROWS, 1)
        co = coarsen(self.fn, s, targets)
        rt = None
        if co is not None:
            s, factors = co
        elif self.schedule == "auto":
            rt = retile(self.fn, s, AUTO_TILES)
        if rt is not None and (retiled := self.lower_retiled(rt, s, name, host)):
            return retiled
        if co is None and split is None and (launch := self.lift_new_path(s, name, host)):
            return [launch]
        kl = KernelLowering(self.legacy(host), s, name)
        kl.coarsened = factors
        kl.k_split = split[1] if split is not None and split[1][0] > split[1][1] else None
        return [self.kernel_of(kl)]

    def lower_retiled(self, rt: Retiled, orig: A.Parallel, name: str, host: LauncherLifting) -> list[H.Stmt]:
        """The re-tiled kernel (lower/retile.py); where its windows use ``chunkat`` it is only
        the same computation when the new tiles divide the extents, so the launcher picks it then
        and the source-tiled kernel otherwise ([] where an extent is not a launcher value)."""
        from .kernel import KernelLowering

        guards: list[tuple[E.Expr, int]] = []
        for ext, tile in rt.guards:
            v = host.names.get(ext)
            if not isinstance(v, E.Expr):
                return []
            guards.append((v, tile))
        legacy = self.legacy(host)
        kl = KernelLowering(legacy, rt.top, name + ("_retiled" if guards else ""))
        kl.retiled = rt.old
        kl.retile_guard = " and ".join(f"{val_of(v, host.declared).code} % {tile} == 0" for v, tile in guards)
        launch = self.kernel_of(kl)
        cond = _all([_divides(v, tile) for v, tile in guards])
        if cond is None:
            return [launch]
        plain = self.kernel_of(KernelLowering(legacy, orig, name))
        return [H.If(cond, (launch,), (plain,), "chunkat tiles equal the re-tiled blocks")]

    def legacy(self, host: LauncherLifting) -> LegacyHost:
        return LegacyHost(host, self.schedule, self.warnings)

    def kernel_of(self, kl: Any) -> H.LegacyLaunch:
        """Lower one kernel with the older lowering: its source joins the module.
        ``CROQ2TRITON_NO_OLDER=1`` refuses it instead (what deleting the older lowering would
        leave: the kernels, tests and diagnostics that still need it)."""
        if os.environ.get("CROQ2TRITON_NO_OLDER"):
            raise CroqLoweringError(f"{kl.name} would be lowered by the older path (CROQ2TRITON_NO_OLDER)", kl.top.span)
        src, launch_lines = kl.lower()
        self.kernel_sources.append(src)
        self.legacy_kernels.append(kl.name)
        return H.LegacyLaunch(tuple((text, span.line if span else 0) for text, span in launch_lines))


def _divides(x: E.Expr, d: int) -> E.Expr:
    """``x % d == 0``."""
    return E.Bin("==", E.Bin("%", x, E.Const(d)), E.Const(0))


def _all(conds: list[E.Expr]) -> E.Expr | None:
    """``a and b and ...`` (None for no condition)."""
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else H.Logic("and", tuple(conds))
