"""Whole-file parsing: preprocess, split, parse every ``__co__`` function."""

from __future__ import annotations

import os

from ..errors import REGISTRY, CroqError, CroqSyntaxError, Diagnostic, Span
from . import ast as A
from .helpers import resolve_helpers
from .parser import DIALECTS, Parser
from .preprocess import MacroUse, preprocess

MAX_BYTES = 64 * 1024 * 1024


def check_text(text: str, filename: str) -> None:
    """Reject text that cannot be source code (NUL bytes), as the command line does for files."""
    if "\x00" in text:
        raise CroqSyntaxError(
            "this is not a text file (it contains NUL bytes)",
            Span.at(filename, 1, 1),
            "pass a Croqtile source file",
        )


def decode_source(data: bytes, filename: str) -> str:
    """Bytes of a .co file to text, rejecting what cannot be source code."""
    if b"\x00" in data:
        check_text("\x00", filename)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        REGISTRY.add(filename, data.decode("utf-8", "replace"))  # for the caret line
        line = data[: e.start].count(b"\n") + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise CroqSyntaxError(
            f"invalid UTF-8 byte 0x{data[e.start]:02x}", Span.at(filename, line, col), "save the file as UTF-8"
        ) from None


def read_source(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise CroqError(f"cannot read '{path}': {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise CroqError(f"'{path}' is larger than {MAX_BYTES // (1024 * 1024)} MiB")
    return decode_source(data, path)


def parse(
    source: str,
    filename: str = "<input>",
    *,
    defines: dict[str, str] | None = None,
    dialect: str = "default",
    forced: dict[str, str] | None = None,
) -> A.TranslationUnit:
    """Parse a whole .co text.  Raises :class:`CroqError` with every function's first error.
    ``forced``: defines that win over the file's own ``#define`` (a tuning point's, see preprocess)."""
    if dialect not in DIALECTS:
        raise CroqError(f"unknown dialect '{dialect}'", hint="use 'default' or 'upstream'")
    try:
        return _parse(source, filename, defines, dialect, forced)
    except RecursionError:
        raise CroqSyntaxError("the program is nested too deeply to process", Span.at(filename, 1, 1)) from None


def _parse(
    source: str, filename: str, defines: dict[str, str] | None, dialect: str, forced: dict[str, str] | None = None
) -> A.TranslationUnit:
    pp = preprocess(source, filename, defines, forced)
    parser = Parser.get()
    items: list[A.TopItem] = []
    errors: list[Diagnostic] = []
    notes: list[Diagnostic] = list(pp.notes)
    for region in pp.regions:
        text = pp.text[region.start : region.end]
        if region.kind == "host":
            items.append(A.HostText(text, span=Span(pp.smap, region.start, region.end)))
        elif region.kind == "device":
            items.append(A.DeviceCode(text, span=Span(pp.smap, region.start, region.end)))
        else:
            prefixes = [(fp.kind, fp.name) for fp in pp.pragmas if fp.offset <= region.start]
            try:
                fn, fnotes = parser.parse_function(pp.text, pp.smap, region.start, region.end, prefixes, dialect)
            except CroqError as e:
                errors.extend(_explain_cmdline_macros(d, pp.cmdline_uses, pp.text) for d in e.diagnostics)
                continue
            fn.notes = fnotes
            notes.extend(fnotes)
            items.append(fn)
    if errors:
        raise CroqError.many(errors)
    resolve_helpers(items)  # calls of __device__ helpers (frontend/helpers.py)
    return A.TranslationUnit(items, filename, notes, pp.warnings, pp.cmdline_uses, span=Span(pp.smap, 0, len(pp.text)))


def _explain_cmdline_macros(d: Diagnostic, uses: list[MacroUse], text: str) -> Diagnostic:
    """A syntax error inside (or just after) the expansion of a ``-D`` macro whose value is not an
    integer says which value it came from."""
    sp = d.span
    if sp is None or not uses or not sp.offsets_known:
        return d
    for u in uses:
        if u.start <= sp.start < u.end or (u.end <= sp.start and not text[u.end : sp.start].strip()):
            d.notes.append(Diagnostic("note", f"this text comes from the command line: -D {u.name}={u.value}"))
            break
    return d


def parse_file(path: str, *, defines: dict[str, str] | None = None, dialect: str = "default") -> A.TranslationUnit:
    text = read_source(path)
    name = os.path.relpath(path) if not os.path.isabs(path) else path
    REGISTRY.add(name, text)
    return parse(text, name, defines=defines, dialect=dialect)
