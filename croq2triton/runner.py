"""``croq2triton run``: translate a file and run its kernels on random inputs.

For each function: say on stderr what runs where with which sizes, run it once on random inputs with
its outputs poisoned (``runinputs.py``), report elements it left unwritten, time it, and with
``check`` compare its outputs with other variants (``check_run.py``).
"""

from __future__ import annotations

import os
import sys
import time
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .check_run import LauncherVariant, Precomputed, Variant, check, clone_args, fp8_mma, outputs_of
from .errors import CroqError, CroqWarning, Diagnostic, Span
from .frontend import ast as A
from .runinputs import RETURNED, find_out_of_bounds, find_unwritten, make_inputs
from .runsizes import Chosen, choose, parse_sizes, show
from .tolerances import FP8_MMA_RTOL


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Modules:
    """The file translated and loaded once per (schedule)."""

    def __init__(
        self, path: str, defines: dict[str, str] | None, oob_fill: str, f32_precision: str | None = None
    ) -> None:
        self.path, self.defines, self.oob_fill = path, defines, oob_fill
        self.f32_precision = f32_precision
        self._mods: dict[str, types.ModuleType] = {}

    def get(self, schedule: str) -> types.ModuleType:
        if schedule not in self._mods:
            from .api import load

            with warnings.catch_warnings():  # run reports the translation's diagnostics itself
                warnings.simplefilter("ignore", CroqWarning)
                self._mods[schedule] = load(
                    self.path,
                    defines=self.defines,
                    oob_fill=self.oob_fill,
                    schedule=schedule,
                    f32_precision=self.f32_precision,
                )
        return self._mods[schedule]


def variants(modules: Modules, ran: str, ran_outputs: dict[str, Any]) -> list[Variant]:
    """The variants ``--check`` compares: the source schedule (the reference), ``--schedule auto`` and the
    source schedule with Triton's ``num_stages=1``; the timed run stands for the one it was."""
    from .runtime.launch import tuned

    out: list[Variant] = []
    for schedule, launch, name in (
        ("source", None, "source schedule"),
        ("auto", None, "auto schedule"),
        ("source", tuned(num_stages=1), "source schedule with num_stages=1"),
    ):
        if schedule == ran and launch is None:
            out.append(Precomputed(name, ran_outputs))
        else:
            out.append(LauncherVariant(name, lambda s=schedule: modules.get(s), launch))
    return out


@contextmanager
def _poisoned_allocations(on: bool) -> Iterator[None]:
    """Buffers the launcher allocates without a value are poisoned instead of zeroed (``on``)."""
    from .runtime import launch as rt

    old = rt.POISON
    rt.POISON = old or on
    try:
        yield
    finally:
        rt.POISON = old


@contextmanager
def _located_warnings(path: str, fn: A.CoFunction) -> Iterator[None]:
    """Launch-time warnings of croq2triton printed as diagnostics at their ``.co`` line (when the block
    ends); other warnings are passed on."""
    rec: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as rec:  # type: ignore[assignment]
            yield
    finally:
        _report(path, fn, rec)


def _copy_of(fn: A.CoFunction, param: str) -> A.DmaStmt | None:
    """The first ``tma`` copy (else any copy) of ``fn`` that reads or writes ``param``."""
    from .runinputs import root_name

    copies = [n for s in fn.body for n in s.walk() if isinstance(n, A.DmaStmt)]
    for want_tma in (True, False):
        for c in copies:
            if want_tma and c.engine != "tma":
                continue
            roots = {r.name for r in (root_name(c.src), root_name(c.dst)) if r is not None}
            if param in roots:
                return c
    return None


def _report(path: str, fn: A.CoFunction, rec: list[warnings.WarningMessage]) -> None:
    from .runtime.launch import CroqRuntimeWarning

    for w in rec:
        m = w.message
        if isinstance(m, CroqRuntimeWarning):
            copy = _copy_of(fn, m.param) if m.param else None
            if copy is not None and copy.span is not None:
                span = copy.span
            else:
                span = Span.at(path if os.path.basename(path) == m.src else m.src, m.line, 1)
            text = str(m).removeprefix("croq2triton: ")
            print(Diagnostic("warning", text, span).format(), file=sys.stderr)
        else:
            warnings.warn_explicit(m, w.category, w.filename, w.lineno, source=w.source)


def run_file(
    path: str,
    *,
    defines: dict[str, str] | None = None,
    sizes: Sequence[str] | None = None,
    functions: Sequence[str] | None = None,
    repeat: int = 0,
    oob_fill: str = "zero",
    schedule: str = "source",
    f32_precision: str | None = None,
    check: bool = False,
) -> int:
    """Run every (or every named) function of ``path``; 0 when all ran (and, with ``check``, agreed)."""
    import torch

    if repeat < 0:
        raise CroqError(
            f"--repeat must be a number of calls, not {repeat}",
            hint="pass a positive count, or 0 for the default (10 on a GPU, 1 in the interpreter)",
        )
    raw = parse_sizes(sizes)
    gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") in ("", "0")
    modules = Modules(path, defines, oob_fill, f32_precision)
    mod = modules.get(schedule)
    tr = mod.__croq_translation__
    for d in tr.diagnostics:
        print(d.format(), file=sys.stderr)
    fns = tr.unit.functions
    if not fns:
        raise CroqError(f"no __co__ function in {path}", hint="'croq2triton run' runs the __co__ functions of a file")
    if functions:
        missing = set(functions) - {f.name for f in fns}
        if missing:
            raise CroqError(
                f"no __co__ function named {', '.join(sorted(missing))} in {path}",
                hint=f"its functions: {', '.join(f.name for f in fns)}",
            )
    todo = [f for f in fns if not functions or f.name in functions]
    chosen = choose(todo, raw)
    where = f"GPU {torch.cuda.get_device_name()}" if gpu else "CPU (Triton interpreter)"
    run = Run(path, mod, modules, schedule, gpu, where, repeat or (10 if gpu else 1), check)
    status = 0
    for fn in todo:
        if fn.name in tr.failed:
            print(f"{fn.name}: skipped (not translated)")
            status = 1
            continue
        status |= run.one(fn, chosen[fn.name])
    return status


class Run:
    def __init__(
        self,
        path: str,
        mod: types.ModuleType,
        modules: Modules,
        schedule: str,
        gpu: bool,
        where: str,
        reps: int,
        check: bool,
    ) -> None:
        self.path, self.mod, self.modules, self.schedule = path, mod, modules, schedule
        self.gpu, self.where, self.reps, self.check = gpu, where, reps, check

    def one(self, fn: A.CoFunction, chosen: Chosen) -> int:
        import torch

        device = "cuda" if self.gpu else "cpu"
        try:
            inputs = make_inputs(fn, chosen.values, device)
        except CroqError as e:
            print(e.format(), file=sys.stderr)
            print(f"{fn.name}: skipped (no inputs)")
            return 1
        _say(f"{fn.name}: running on {self.where} with {chosen.describe()}")
        if not self.gpu and chosen.defaults_used():
            _say(f"{fn.name}: the interpreter is slow: smaller --size values run faster")
        if inputs.kept:
            names = ", ".join(inputs.kept)
            _say(
                f"{fn.name}: note: {names}: written and also read by the function, so not poisoned "
                "(random values); elements left unwritten there are not found"
            )
        pristine = clone_args(inputs.args) if self.check or self.modules.oob_fill == "nan" else []
        launcher: Callable[..., Any] = getattr(self.mod, fn.name)
        status = 0
        with _poisoned_allocations(inputs.poison_returned):
            outs: dict[str, Any] = {}
            try:
                with _located_warnings(self.path, fn):
                    dt = self._time(
                        fn.name, launcher, inputs.args, lambda r: outs.update(outputs_of(fn, inputs.args, r))
                    )
            except CroqError as e:
                print(e.format(), file=sys.stderr)
                return 1
            poisoned = {n: outs[n] for n in inputs.poisoned if n in outs}
            if inputs.poison_returned and RETURNED in outs:
                poisoned[RETURNED] = outs[RETURNED]
            shapes = ", ".join(
                f"{p.name or f'_arg{i}'}{list(a.shape)}"
                if isinstance(a, torch.Tensor)
                else f"{p.name or f'_arg{i}'}={show(a)}"
                for i, (p, a) in enumerate(zip(fn.params, inputs.args))
            )
            print(f"{fn.name}({shapes}): ran on {self.where}, {dt * 1e3:.3f} ms per call (mean of {self.reps})")
            for u in find_unwritten(poisoned):
                sev = "error" if self.check else "warning"
                print(Diagnostic(sev, f"{fn.name}: {u.format()}", fn.span).format(), file=sys.stderr)
                status = 1 if self.check else status
            if self.modules.oob_fill == "nan":
                status |= self._out_of_bounds(fn, pristine, outs)
            if self.check:
                with _located_warnings(self.path, fn):
                    status |= self._check(fn, pristine, outs)
        return status

    def _out_of_bounds(self, fn: A.CoFunction, pristine: list[Any], outs: dict[str, Any]) -> int:
        """Under ``--oob-fill nan``: outputs the sanitizer's NaN reached are errors (the kernel relies on
        reads outside a tensor being zero); a NaN that the same call also computes with the zero fill is
        the computation's own and is not counted."""
        if not find_out_of_bounds(outs):
            return 0
        zero = Modules(self.modules.path, self.modules.defines, "zero", self.modules.f32_precision)
        _say(f"{fn.name}: NaN in the outputs: running again with the zero fill to tell the sanitizer's apart")
        try:
            with _located_warnings(self.path, fn):
                reference = LauncherVariant("zero fill", lambda: zero.get(self.schedule)).run(fn, clone_args(pristine))
        except CroqError as e:
            print(e.format(), file=sys.stderr)
            reference = None
        found = find_out_of_bounds(outs, reference)
        for f in found:
            message = f"{fn.name}: {f.format()}"
            hint = "the result depends on elements outside a tensor, which read zero without the sanitizer: "
            hint += "if the kernel means those zeros, mark its copies '.zfill'"
            print(Diagnostic("error", message, fn.span, hint).format(), file=sys.stderr)
        return 1 if found else 0

    def _time(self, name: str, launcher: Callable[..., Any], args: list[Any], first: Callable[[Any], None]) -> float:
        """Mean seconds per call; ``first`` sees the first call's result (before later calls change the
        outputs).  On a GPU the first call compiles and is not timed; in the interpreter there is
        nothing to compile, so every call counts."""
        import torch

        if self.gpu:
            _say(f"{name}: compiling (first call, not timed)")
            first(launcher(*args))
            torch.cuda.synchronize()
            _say(f"{name}: timing {self.reps} call(s)")
            t0 = time.perf_counter()
            for _ in range(self.reps):
                launcher(*args)
            torch.cuda.synchronize()
            return (time.perf_counter() - t0) / self.reps
        spent = 0.0
        for i in range(self.reps):
            if i:
                _say(f"{name}: call {i + 1} of {self.reps} ({spent:.1f} s so far)")
            t0 = time.perf_counter()
            result = launcher(*args)
            spent += time.perf_counter() - t0
            if i == 0:
                first(result)
        return spent / self.reps

    def _check(self, fn: A.CoFunction, pristine: list[Any], outs: dict[str, Any]) -> int:
        vs = variants(self.modules, self.schedule, outs)
        on_gpu = any(getattr(a, "is_cuda", False) for a in pristine)
        least = FP8_MMA_RTOL if on_gpu and fp8_mma(fn) else None  # fp8 MMAs: the accumulator's rounding
        ref, verdicts = check(fn, pristine, vs, _say, least)
        status = 0
        if ref is None:
            e = verdicts[0].error
            print(f"{fn.name}: check: the {vs[0].name} (the reference) could not run:", file=sys.stderr)
            if e is not None:
                print(e.format(), file=sys.stderr)
            return 1
        agreed: list[str] = []
        for v in verdicts:
            if v.error is not None:
                print(f"{fn.name}: check: the {v.name} could not run:", file=sys.stderr)
                print(v.error.format(), file=sys.stderr)
                status = 1
            elif v.differences:
                for d in v.differences:
                    msg = (
                        f"{fn.name}: check: the {v.name} differs from the {vs[0].name}: {d.format(vs[0].name, v.name)}"
                    )
                    print(Diagnostic("error", msg, fn.span).format(), file=sys.stderr)
                status = 1
            else:
                agreed.append(v.name)
        if agreed:
            outputs = ", ".join(ref) or "no outputs"
            print(f"{fn.name}: check: the {' and the '.join(agreed)} agree with the {vs[0].name} ({outputs})")
        return status
