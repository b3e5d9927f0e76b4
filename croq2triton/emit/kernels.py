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

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import CroqLoweringError, Diagnostic, internal_errors
from ..frontend import ast as A
from ..lift.clusters import multicast_notes, without_clusters
from ..lift.contraction import analyse as analyse_contraction
from ..lift.fragarrays import expand_frag_arrays
from ..lift.gridsync import grid_phases
from ..lift.kernel import lift_kernel
from ..lift.launcher import LauncherLifting
from ..lift.notlifted import NotLifted
from ..lift.shapebounds import expand_shape_bounds
from ..lift.splitscale import split_scales
from ..schedule import policy
from ..schedule.gemm import NotTiled, tile_contraction
from ..schedule.interior import interior_split
from ..schedule.widen import NotWidened, widen
from ..schedule.widen import analyse as analyse_widening
from ..tir import expr as E
from ..tir import host as H
from ..tir import nodes as N
from ..tir.launch import launch_of
from .triton import emit_kernel

HINT = "the README's 'What does not translate' lists the forms croq2triton refuses"


@contextmanager
def kernel_errors(path: str, kernel: str, top: A.Parallel) -> Iterator[None]:
    """Inside lift / schedule / emit an exception that is neither a user's error nor "not covered"
    is a bug: reported as a located internal error (CROQ2TRITON_DEBUG=1 re-raises it)."""
    with internal_errors(f"{path} of kernel {kernel}", top.span, NotLifted, NotTiled):
        yield


class KernelDispatch:
    """Lowers the kernels of ``fn`` (called by lift/launcher.py once per top-level ``parallel``);
    their sources, in order, are ``kernel_sources``."""

    def __init__(self, fn: A.CoFunction, src_name: str, schedule: str = "source") -> None:
        self.fn = fn
        self.src_name = src_name
        self.schedule = schedule
        self.kernel_sources: list[str] = []
        self.ir_kernels: list[N.Kernel] = []  # the kernels lifted into the tile IR
        self.warnings: list[Diagnostic] = []

    def __call__(self, top: A.Parallel, name: str, host: LauncherLifting) -> list[H.Stmt]:
        phases = grid_phases(top)  # a grid-wide barrier: one launch a phase (lift/gridsync.py)
        if len(phases) == 1:
            return self.kernel(top, name, host)
        return [s for k, phase in enumerate(phases) for s in self.kernel(phase, f"{name}_phase{k}", host)]

    def kernel(self, top: A.Parallel, name: str, host: LauncherLifting) -> list[H.Stmt]:
        top = expand_shape_bounds(top, host.host_scope())
        top, checks = expand_frag_arrays(self.fn, top)
        top = split_scales(top)
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
        if tiled is None:
            return [*out, *self.lift_as_written(top, name, host)]
        launch, cond = tiled
        if cond is None:
            return [*out, launch]
        # tiled under a condition on the sizes: the kernel as written otherwise
        try:
            general = self.lift_as_written(top, f"{name}_general", host)
        except CroqLoweringError as e:  # only the tiled contraction: other sizes are a launch error
            d = e.diagnostics[0]
            only = f"'{name}' runs only where its chunkat tiles are exact: the kernel as written is not translated"
            self.warnings.append(Diagnostic("warning", f"{only}: {d.message}", d.span, d.hint))
            msg = f"{name}: the sizes are not multiples of the chunkat tiles (see 'croq2triton check')"
            return [*out, H.Assert(cond, msg, line=line), launch]
        note = "the chunkat tiles are exact: the tiled contraction"
        return [*out, H.If(cond, (launch,), tuple(general), note, line, line=line)]

    def lift_contraction(
        self, top: A.Parallel, name: str, host: LauncherLifting
    ) -> tuple[H.Launch, E.Expr | None] | None:
        """A kernel that computes a GEMM (lift/contraction.py proves it), tiled under the schedule's
        policy (schedule/policy.py, schedule/gemm.py): its launch, with the launcher's condition
        when the proof holds only for sizes that the tiles divide (``chunkat`` on ``cdiv`` grids:
        the caller lifts the kernel as written for the ``else``); None where the proof or the
        tiling does not cover it (the kernel is lifted as written then)."""
        if os.environ.get("CROQ2TRITON_NO_CONTRACTION"):
            return None
        try:
            with kernel_errors("the contraction path", name, top):
                scope = host.host_scope()
                prelude = [x for x in self.fn.body if x.span and top.span and x.span.line < top.span.line]
                c = analyse_contraction(top, scope, prelude)
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

    def lift_as_written(self, top: A.Parallel, name: str, host: LauncherLifting) -> list[H.Stmt]:
        """The kernel as written, lifted into the tile IR (lift/kernel.py), under ``--schedule auto``
        widened where the policy and the proof allow, after the checks the launcher makes for it;
        a form the lifting does not cover is refused with a diagnostic at the construct that stops it."""
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
            raise CroqLoweringError(f"croq2triton does not translate {e}", e.span or top.span, e.hint or HINT) from e
        self.kernel_sources.append(source.rstrip("\n"))
        self.ir_kernels.append(kernel)
        self.warnings.extend(lifted.warnings)
        return [*lifted.checks, launch]

    def widened(self, kernel: N.Kernel, top: A.Parallel) -> N.Kernel | None:
        """``kernel`` under the ``auto`` policy's widening (schedule/widen.py), or None where the
        policy keeps it or the proof does not hold (``CROQ2TRITON_EXPLAIN=1`` says why)."""
        try:
            schedule = policy.tile_auto(kernel, analyse_widening(kernel))
            return widen(kernel, schedule) if schedule is not None else None
        except NotWidened as e:
            if os.environ.get("CROQ2TRITON_EXPLAIN"):
                line = top.span.line if top.span else 0
                print(f"{self.src_name}:{line}: note: {kernel.name} is not widened: {e}", file=sys.stderr)
            return None


def _divides(x: E.Expr, d: int) -> E.Expr:
    """``x % d == 0``."""
    return E.Bin("==", E.Bin("%", x, E.Const(d)), E.Const(0))


def _all(conds: list[E.Expr]) -> E.Expr | None:
    """``a and b and ...`` (None for no condition)."""
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else H.Logic("and", tuple(conds))
