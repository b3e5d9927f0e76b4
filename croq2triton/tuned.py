"""A file translated with a tuning config (``translate --config best.json``, ``load(config=...)``).

The pass list is api.py's (parse -> check -> lift -> schedule(point) -> emit) run with the tuned
function's points:

* one point (one tuned size, or several sizes that share a winner): the function runs it;
* several: each distinct winning point is translated (the file parsed with the point's defines,
  its kernel fields applied to the schedules), its launcher and kernels suffixed ``__t0``,
  ``__t1`` ..., and the function's launcher dispatches on the launch's sizes to the point tuned
  there, else to the one tuned at the nearest sizes (lift/dispatch.py);
* ``emit_autotune=K``: the best K points of each size as one kernel under ``triton.autotune``,
  where they differ in launch parameters only (schedule/autotune.py); else an error that says why
  and offers the per-size dispatch.

Functions the config does not name are translated as without it (under its schedule mode).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

from .config import TuneConfig, Tuned
from .emit.module import Translation, Tuning, Variant, emit_module, lower_function
from .errors import CroqError, Diagnostic
from .frontend import ast as A
from .frontend.driver import parse
from .options import DEFAULT_F32, Options, Point
from .schedule.autotune import LAUNCH_FIELDS, NotAutotunable, launch_configs
from .sema.checks import check_unit


def resolve_options(config: TuneConfig, schedule: str | None, f32_precision: str | None) -> Options:
    """The options the config's points apply under; a schedule or precision the caller gives that
    contradicts the config's is an error (a point is only the best under the mode it was timed in)."""
    for what, given, recorded in (
        ("schedule", schedule, config.schedule),
        ("f32_precision", f32_precision, config.f32_precision),
    ):
        if given is not None and recorded is not None and given != recorded:
            flag = "--schedule" if what == "schedule" else "--f32-precision"
            raise CroqError(
                f"{flag} {given} contradicts {config.origin}, whose points were tuned under {flag} {recorded}",
                config.locate(f'"{what}"'),
                f"leave {flag} out (the config sets it), or tune again under {flag} {given}",
            )
    return Options(config.schedule or schedule or "source", config.f32_precision or f32_precision or DEFAULT_F32)  # type: ignore[arg-type]


def translate_configured(
    source: str,
    name: str,
    base: str,
    defines: Mapping[str, str],
    dialect: str,
    config: TuneConfig,
    options: Options,
    emit_autotune: int = 0,
) -> Translation:
    """``source`` (the file ``name``, written into the module as ``base``) translated with the
    points of ``config`` under ``options`` (:func:`resolve_options`)."""
    tu = parse(source, name, defines=dict(defines), dialect=dialect)
    diagnostics = list(check_unit(tu))
    shown = _shown(config, name)
    # the regeneration command: a config given as a dict has no file to name
    flags = [f"--config {shown}" if config.text is not None else f"--config <{shown}>"] if config.func else None
    if flags is not None and emit_autotune:
        flags.append(f"--emit-autotune {emit_autotune}")
    env = _Env(source, name, dict(defines), dialect, config, shown, {(): tu}, diagnostics)
    if config.func is None and emit_autotune:
        raise CroqError(
            f"--emit-autotune needs the best points of a tuned function; {config.origin} is one point",
            hint="give the best.json croq2triton tune wrote",
        )
    if config.func is None:  # a bare point: every function runs it
        point = config.winners[0].point
        out = emit_module(env.unit(point), base, options.with_(point=point), flags=flags)
    else:
        fn = _function(tu, config)
        if emit_autotune:
            tuning = _autotuned(fn.name, base, options, emit_autotune, env)
        else:
            tuning = _dispatched(fn.name, options, env)
        out = emit_module(tu, base, options, {fn.name: tuning}, flags)
        if fn.name in out.failed:  # the tuned function must translate: its points are the config's
            raise out.failed[fn.name]
    out.diagnostics = diagnostics + out.diagnostics
    out.unit = tu
    note = config.source_note(source, name)
    if note is not None:
        out.config_diagnostics.append(note)
        out.diagnostics.insert(0, note)
    return out


@dataclass
class _Env:
    """The file, parsed once per set of defines the points give, and what the checks said."""

    source: str
    name: str
    defines: dict[str, str]
    dialect: str
    config: TuneConfig
    shown: str  # the config as the generated module names it
    units: dict[tuple[tuple[str, str], ...], A.TranslationUnit]
    diagnostics: list[Diagnostic]

    def unit(self, point: Point) -> A.TranslationUnit:
        """The file as ``point``'s defines make it (they win over -D)."""
        if point.defines not in self.units:
            defs = {**self.defines, **dict(point.defines)}
            tu = parse(self.source, self.name, defines=defs, dialect=self.dialect)
            seen = {(d.message, repr(d.span)) for d in self.diagnostics}
            self.diagnostics.extend(d for d in check_unit(tu) if (d.message, repr(d.span)) not in seen)
            self.units[point.defines] = tu
        return self.units[point.defines]


def _shown(config: TuneConfig, name: str) -> str:
    """The config file as the module names it: relative to the ``.co`` file's folder (the module's
    regeneration command runs there)."""
    if config.text is None:
        return config.origin
    rel = os.path.relpath(os.path.abspath(config.origin), os.path.dirname(os.path.abspath(name)))
    return rel if not rel.startswith("..") else os.path.abspath(config.origin)


def _function(tu: A.TranslationUnit, config: TuneConfig) -> A.CoFunction:
    for fn in tu.functions:
        if fn.name == config.func:
            return fn
    known = ", ".join(f.name for f in tu.functions) or "none"
    raise CroqError(
        f"{config.origin} tunes '{config.func}', which this file does not define (its functions: {known})",
        config.locate('"func"'),
        "a tuning config applies to the file it was tuned on",
    )


def _variant(fn_name: str, t: Tuned, sizes: tuple[tuple[int, ...], ...], options: Options, env: _Env) -> Variant:
    """The function ``fn_name`` as ``t``'s point makes it, with the sizes it runs at."""
    fn = next(f for f in env.unit(t.point).functions if f.name == fn_name)
    spans = tuple((k, s) for k, _ in t.point.kernels if (s := env.config.locate(f'"{k}"', t.at)) is not None)
    return Variant(fn, options.with_(point=t.point), t.point.describe(), sizes, t.at, spans)


def _dispatched(fn_name: str, options: Options, env: _Env) -> Tuning:
    """The function's distinct winning points, each with the sizes it won at (the first winner of
    a size counts: best first)."""
    order: list[Point] = []
    won: dict[Point, list[tuple[int, ...]]] = {}
    first: dict[Point, Tuned] = {}
    seen: set[tuple[int, ...]] = set()
    config = env.config
    for w in config.winners:
        if w.values in seen:
            continue
        seen.add(w.values)
        if w.point not in won:
            order.append(w.point)
            won[w.point] = []
            first[w.point] = w
        won[w.point].append(w.values)
    variants = tuple(_variant(fn_name, first[p], tuple(won[p]), options, env) for p in order)
    return Tuning(variants, config.symbols, env.shown, config.locate('"winners"'))


def _autotuned(fn_name: str, base: str, options: Options, k: int, env: _Env) -> Tuning:
    """One variant, the best winner's point, whose kernels ``triton.autotune`` launches over the
    launch parameters of the best ``k`` points of each size (``top``; ``winners`` where there is none)."""
    if k < 1:
        raise CroqError(f"--emit-autotune {k}: the number of configs must be at least 1")
    config = env.config
    entries = config.top or config.winners
    per_size: dict[tuple[int, ...], list[Tuned]] = {}
    for t in entries:
        per_size.setdefault(t.values, []).append(t)
    chosen: dict[Point, Tuned] = {}
    for w in config.winners[:1]:
        chosen[w.point] = w
    for ts in per_size.values():
        for t in ts[:k]:
            chosen.setdefault(t.point, t)
    tuned = list(chosen.values())
    lowered: list[list[object]] = []
    schedules: list[dict[str, object]] = []
    for t in tuned:
        v = _variant(fn_name, t, (t.values,), options, env)
        try:
            kernels, sched = lower_function(v.fn, base, v.options)
        except CroqError as e:
            if t.at is not None:
                e.diagnostics[0].notes.append(Diagnostic("note", f"the point {t.point.describe()}", t.at))
            raise
        lowered.append(kernels)
        schedules.append(sched)
    try:
        configs = launch_configs(lowered)  # type: ignore[arg-type]
    except NotAutotunable as e:
        raise CroqError(
            f"--emit-autotune {k}: the best points of {config.origin} for '{fn_name}' are not one kernel: kernel "
            f"'{e.kernel}' differs between {tuned[0].point.describe()} and {tuned[e.index].point.describe()} "
            f"{_differs(tuned[0], tuned[e.index], schedules, e)}; Triton's autotune chooses among the launch "
            "parameters of one kernel (num_warps, num_stages, constexpr arguments such as GROUP_M and NUM_STAGES), "
            "not among tile shapes or other code",
            tuned[e.index].at,
            f"translate with --config {config.origin} alone: the module then dispatches on the launch's sizes to "
            "each size's winner",
        ) from None
    best = tuned[0]
    sources = f"the best {k} point(s) of each size in {env.shown}"
    variant = _variant(fn_name, best, (best.values,), options.with_(autotune=tuple(configs.items())), env)
    return Tuning((variant,), config.symbols, sources, config.locate('"top"'))


def _differs(a: Tuned, b: Tuned, schedules: list[dict[str, object]], e: NotAutotunable) -> str:
    """What makes ``b``'s kernel another kernel than ``a``'s, as the points say it."""
    fields: list[str] = []
    if a.point.defines != b.point.defines:
        fields.append("its defines")
    sa, sb = schedules[0].get(e.kernel), schedules[e.index].get(e.kernel)
    if dataclasses.is_dataclass(sa) and type(sa) is type(sb):
        for f in dataclasses.fields(sa):
            x, y = getattr(sa, f.name), getattr(sb, f.name)
            if f.name != "origin" and f.name not in LAUNCH_FIELDS and x != y:
                fields.append(f"{f.name} ({x} vs {y})")
    if not fields:
        return f"({e})"
    return "in " + ", ".join(fields)
