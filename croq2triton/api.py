"""Public API: translate a .co source to Python, or load it as a module of launchers."""

from __future__ import annotations

import hashlib
import os
import sys
import types
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .emit.module import Translation, emit_module
from .errors import REGISTRY, CroqError, CroqWarning, Diagnostic
from .frontend.driver import check_text, parse, read_source
from .options import SCHEDULES, Options, Point, options_of

if TYPE_CHECKING:
    from .config import ConfigLike
from .sema.checks import check_unit


def translate_full(
    source: str,
    *,
    filename: str | None = None,
    defines: Mapping[str, object] | None = None,
    dialect: str = "default",
    schedule: str | None = None,
    allow_tf32: bool = False,
    f32_precision: str | None = None,
    point: Point | None = None,
    options: Options | None = None,
    config: ConfigLike | None = None,
    emit_autotune: int = 0,
) -> Translation:
    """Translate and return the module text with every diagnostic.

    ``schedule="source"`` keeps the tiles, stages and roles the source states; ``"auto"`` lets the
    translator pick stages, warps and program order (same results, different schedule).
    ``allow_tf32``: dots on f32 operands may use TF32 products (10-bit mantissas); without it they
    keep f32-accurate products (``f32_precision`` names one of ``tf32x3``, the default, ``ieee``,
    ``tf32``).
    ``point``: a tuning point (values of the source's ``#define`` parameters, which win over
    ``defines`` and over the file's own unguarded ``#define`` of the name, and of the schedule
    fields of named kernels; ``croq2triton tune`` writes them).
    ``options`` gives all of these as one value (croq2triton/options.py).

    ``config``: what ``croq2triton tune`` found (a best.json's path, a dict of its form, or a
    :class:`Point`): the tuned function runs its winning points, dispatching on the launch's sizes
    where they differ by size, under the schedule mode and precision the config records (a
    ``schedule`` or ``f32_precision`` that contradicts them is an error).  ``emit_autotune=K``: the
    best K points of each size under one ``triton.autotune`` instead (croq2triton/tuned.py).

    Errors of the file as a whole (preprocessing, syntax, static checks) raise :class:`CroqError`.
    A function that cannot be lowered does not: it is in ``failed`` and reported as an error in
    ``diagnostics``, and the module's launcher of that name raises it when called.
    """
    if config is not None:
        return _translate_configured(
            source, filename, defines, dialect, config, schedule, allow_tf32, f32_precision, emit_autotune
        )
    if emit_autotune:
        raise CroqError("--emit-autotune needs a tuning config", hint="give it with --config best.json")
    if options is None:
        options = _options(schedule or "source", allow_tf32, f32_precision, point)
    name = filename or "<input>"
    check_text(source, name)
    REGISTRY.add(name, source)
    defs = {k: str(v) for k, v in (defines or {}).items()}
    # the point's defines win over -D and over the file's own #define of the name (a swept parameter)
    forced = dict(options.point.defines)
    tu = parse(source, name, defines={k: v for k, v in defs.items() if k not in forced}, dialect=dialect, forced=forced)
    warnings = check_unit(tu)
    out = emit_module(tu, os.path.basename(name), options)
    out.diagnostics = list(warnings) + out.diagnostics
    out.unit = tu
    return out


def _translate_configured(
    source: str,
    filename: str | None,
    defines: Mapping[str, object] | None,
    dialect: str,
    config: ConfigLike,
    schedule: str | None,
    allow_tf32: bool,
    f32_precision: str | None,
    emit_autotune: int,
) -> Translation:
    """``translate_full`` with a tuning config (croq2triton/tuned.py)."""
    from .config import read_config
    from .tuned import resolve_options, translate_configured

    cfg = read_config(config)
    if schedule is not None and schedule not in SCHEDULES:
        raise CroqError(f"unknown schedule '{schedule}'", hint="use 'source' or 'auto'")
    precision = f32_precision or ("tf32" if allow_tf32 else None)
    options = resolve_options(cfg, schedule, precision)
    name = filename or "<input>"
    check_text(source, name)
    REGISTRY.add(name, source)
    defs = {k: str(v) for k, v in (defines or {}).items()}
    return translate_configured(source, name, os.path.basename(name), defs, dialect, cfg, options, emit_autotune)


def _options(schedule: str, allow_tf32: bool, f32_precision: str | None, point: Point | None = None) -> Options:
    if schedule not in SCHEDULES:
        raise CroqError(f"unknown schedule '{schedule}'", hint="use 'source' or 'auto'")
    try:
        return options_of(schedule, allow_tf32, f32_precision, point)
    except ValueError as e:
        raise CroqError(str(e), hint="f32_precision is one of 'ieee', 'tf32x3', 'tf32'") from None


def translate(
    source: str,
    *,
    filename: str | None = None,
    defines: Mapping[str, object] | None = None,
    schedule: str | None = None,
    allow_tf32: bool = False,
    config: ConfigLike | None = None,
) -> str:
    """Translate Croqtile source text to the text of a Python module (Triton kernels + launchers).

    Like ``translate_full``, a function that cannot be lowered does not raise here: its launcher in
    the module raises the error when called (``translate_full(...).failed`` lists them).
    """
    out = translate_full(
        source, filename=filename, defines=defines, schedule=schedule, allow_tf32=allow_tf32, config=config
    )
    return out.source


def load(
    path: str | os.PathLike[str],
    *,
    defines: Mapping[str, object] | None = None,
    interpret: bool | None = None,
    oob_fill: str = "zero",
    schedule: str | None = None,
    allow_tf32: bool = False,
    f32_precision: str | None = None,
    config: ConfigLike | None = None,
    emit_autotune: int = 0,
) -> types.ModuleType:
    """Translate ``path`` and import the result; its attributes are the launchers.

    ``interpret``: run kernels in Triton's CPU interpreter (default: when no GPU is available).
    ``oob_fill="nan"``: loads not marked ``.zfill`` read NaN outside their tensor (the OOB
    sanitizer), so a kernel that silently relies on out-of-bounds values shows NaN.
    ``schedule``, ``allow_tf32``, ``f32_precision``, ``config`` (a tuned module: what
    ``croq2triton tune`` found, e.g. ``config="best.json"``), ``emit_autotune``: as for
    :func:`translate_full`.
    """
    if oob_fill not in ("zero", "nan"):
        raise CroqError(f"oob_fill must be 'zero' or 'nan', not {oob_fill!r}")
    path = os.fspath(path)
    text = read_source(path)
    out = translate_full(
        text,
        filename=path,
        defines=defines,
        schedule=schedule,
        allow_tf32=allow_tf32,
        f32_precision=f32_precision,
        config=config,
        emit_autotune=emit_autotune,
    )
    for d in out.config_diagnostics:  # a config tuned on another text
        warnings.warn(CroqWarning(d), stacklevel=2)
    for d in out.diagnostics:  # a function that does not translate: its launcher raises this when called
        if d.severity == "error":
            warnings.warn(CroqWarning(Diagnostic("warning", d.message, d.span, d.hint)), stacklevel=2)
    digest = hashlib.sha1((out.source + oob_fill).encode()).hexdigest()[:12]
    modname = f"croq2triton_gen_{os.path.splitext(os.path.basename(path))[0]}_{digest}"
    return load_source(out.source, modname, interpret=interpret, origin=path, translation=out, oob_fill=oob_fill)


# the runtime modules whose @triton.jit helpers generated kernels call: Triton builds each for the
# mode (interpreter or compiled) in force when the module is first imported, once per process
JIT_HELPERS = ("croq2triton.runtime.libmath", "croq2triton.runtime.atomics")


def _compiled_helpers() -> list[str]:
    """The helper modules already imported with compiled (not interpreted) @triton.jit functions.
    Imports nothing: importing Triton here, before the interpreter switch is set, would build
    triton.language's own @triton.jit functions (tl.cdiv, ...) compiled for the whole process."""
    jit = sys.modules.get("triton.runtime.jit")
    if jit is None:
        return []
    JITFunction = jit.JITFunction  # noqa: N806 - the class
    out = []
    for name in JIT_HELPERS:
        m = sys.modules.get(name)
        if m is not None and any(isinstance(v, JITFunction) for v in vars(m).values()):
            out.append(name.rsplit(".", 1)[1])
    return out


def load_source(
    source: str,
    modname: str,
    *,
    interpret: bool | None = None,
    origin: str = "<generated>",
    translation: Translation | None = None,
    oob_fill: str = "zero",
) -> types.ModuleType:
    import torch

    if interpret is None:
        interpret = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0") or not torch.cuda.is_available()
    # Triton's interpreter is a process-wide switch (triton.language objects are built for one mode)
    if interpret:
        compiled = _compiled_helpers()
        if compiled:
            raise CroqError(
                "this process runs Triton's compiled kernels (croq2triton's runtime helpers "
                f"{', '.join(compiled)} were loaded compiled); kernels in the interpreter need a fresh process",
                hint="set TRITON_INTERPRET=1 before anything loads a translated module",
            )
        os.environ["TRITON_INTERPRET"] = "1"
    elif os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise CroqError(
            "this process runs Triton in interpreter mode (TRITON_INTERPRET=1); compiled kernels need a fresh process"
        )
    mod = types.ModuleType(modname)
    mod.__file__ = f"<croq2triton:{origin}>"
    mod.__croq_source__ = source  # type: ignore[attr-defined]
    mod.__croq_translation__ = translation  # type: ignore[attr-defined]
    mod._OOB_FILL = oob_fill  # type: ignore[attr-defined]
    if origin != "<generated>":
        mod._CO_FILE = origin  # type: ignore[attr-defined]  # launch errors name it (REGISTRY has its text)
    # triton.jit reads kernel sources with inspect: register the text with linecache
    import linecache

    fname = f"<croq2triton-{modname}>"
    linecache.cache[fname] = (len(source), None, source.splitlines(True), fname)
    code = compile(source, fname, "exec")
    sys.modules[modname] = mod
    exec(code, mod.__dict__)
    return mod
