"""Public API: translate a .co source to Python, or load it as a module of launchers."""

from __future__ import annotations

import hashlib
import os
import sys
import types
from collections.abc import Mapping

from .emit.module import Translation, emit_module
from .errors import REGISTRY, CroqError
from .frontend.driver import check_text, parse, read_source
from .sema.checks import check_unit

SCHEDULES = ("source", "auto")


def translate_full(
    source: str,
    *,
    filename: str | None = None,
    defines: Mapping[str, object] | None = None,
    dialect: str = "default",
    schedule: str = "source",
) -> Translation:
    """Translate and return the module text with every diagnostic.

    ``schedule="source"`` keeps the tiles, stages and roles the source states; ``"auto"`` lets the
    translator pick stages, warps and program order (same results, different schedule).

    Errors of the file as a whole (preprocessing, syntax, static checks) raise :class:`CroqError`.
    A function that cannot be lowered does not: it is in ``failed`` and reported as an error in
    ``diagnostics``, and the module's launcher of that name raises it when called.
    """
    if schedule not in SCHEDULES:
        raise CroqError(f"unknown schedule '{schedule}'", hint="use 'source' or 'auto'")
    name = filename or "<input>"
    check_text(source, name)
    REGISTRY.add(name, source)
    defs = {k: str(v) for k, v in (defines or {}).items()}
    tu = parse(source, name, defines=defs, dialect=dialect)
    warnings = check_unit(tu)
    out = emit_module(tu, os.path.basename(name), schedule)
    out.diagnostics = list(warnings) + out.diagnostics
    out.unit = tu
    return out


def translate(
    source: str, *, filename: str | None = None, defines: Mapping[str, object] | None = None, schedule: str = "source"
) -> str:
    """Translate Croqtile source text to the text of a Python module (Triton kernels + launchers).

    Like ``translate_full``, a function that cannot be lowered does not raise here: its launcher in
    the module raises the error when called (``translate_full(...).failed`` lists them).
    """
    return translate_full(source, filename=filename, defines=defines, schedule=schedule).source


def load(
    path: str | os.PathLike[str],
    *,
    defines: Mapping[str, object] | None = None,
    interpret: bool | None = None,
    oob_fill: str = "zero",
    schedule: str = "source",
) -> types.ModuleType:
    """Translate ``path`` and import the result; its attributes are the launchers.

    ``interpret``: run kernels in Triton's CPU interpreter (default: when no GPU is available).
    ``oob_fill="nan"``: loads not marked ``.zfill`` read NaN outside their tensor (the OOB
    sanitizer), so a kernel that silently relies on out-of-bounds values shows NaN.
    """
    if oob_fill not in ("zero", "nan"):
        raise CroqError(f"oob_fill must be 'zero' or 'nan', not {oob_fill!r}")
    path = os.fspath(path)
    text = read_source(path)
    out = translate_full(text, filename=path, defines=defines, schedule=schedule)
    digest = hashlib.sha1((out.source + oob_fill).encode()).hexdigest()[:12]
    modname = f"croq2triton_gen_{os.path.splitext(os.path.basename(path))[0]}_{digest}"
    return load_source(out.source, modname, interpret=interpret, origin=path, translation=out, oob_fill=oob_fill)


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
