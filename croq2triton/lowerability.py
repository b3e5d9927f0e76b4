"""``croq2triton check --lowerability PATH...``: what translates, function by function.

One row per ``__co__`` function of each file: ``translated``; ``refused`` (valid Croqtile that
croq2triton does not translate: the message names the construct, at its line); ``invalid`` (the
user's mistake: the diagnostic); ``internal`` (a bug of croq2triton met while translating it).  A
file that does not preprocess or parse is one ``invalid`` row (its function column ``-``), one with
no ``__co__`` function one ``empty`` row.  Each function is judged on its own: a function's static
errors make that function invalid, and its neighbours are still lowered and reported (``translate``
refuses the whole file then, as upstream does).  The counts close the table.

It is a report: the command exits 0 unless a file cannot be read.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .emit.module import emit_module
from .errors import REGISTRY, CroqError, CroqInternalError, CroqLoweringError, Diagnostic
from .frontend import ast as A
from .frontend.driver import check_text, parse, read_source
from .options import Options
from .sema.checks import check_function

STATUSES = ("translated", "refused", "invalid", "internal", "empty")


@dataclass(frozen=True)
class Row:
    file: str
    function: str  # '-' for a row of the whole file
    status: str  # one of STATUSES
    line: int = 0
    col: int = 0
    message: str = ""

    @property
    def where(self) -> str:
        return f"{self.line}:{self.col}" if self.line else ""


class Unreadable(CroqError):
    """A file of the report that cannot be read (the only failure of the command)."""


def file_rows(path: str, defines: Mapping[str, str], dialect: str, options: Options) -> list[Row]:
    """The rows of one file; raises :class:`Unreadable` where it cannot be read."""
    try:
        text = read_source(path)
    except CroqError as e:
        raise Unreadable(e.message, e.span, e.diagnostics[0].hint) from None
    try:
        check_text(text, path)
        REGISTRY.add(path, text)
        tu = parse(text, path, defines=dict(defines), dialect=dialect)
    except CroqError as e:
        return [_row(path, "-", "invalid", e.diagnostics[0])]
    if not tu.functions:
        return [Row(path, "-", "empty", message="no __co__ function")]
    invalid: dict[str, Diagnostic] = {}
    seen: set[str] = set()
    for fn in tu.functions:
        errors, _ = check_function(fn, tu.macro_uses)
        if fn.name in seen:
            errors.insert(0, Diagnostic("error", f"'__co__' function '{fn.name}' is defined twice", fn.span))
        seen.add(fn.name)
        if errors:
            invalid.setdefault(fn.name, errors[0])
    valid = [i for i in tu.items if not (isinstance(i, A.CoFunction) and i.name in invalid)]
    failed: dict[str, CroqError] = {}
    if any(isinstance(i, A.CoFunction) for i in valid):
        out = emit_module(dataclasses.replace(tu, items=valid), os.path.basename(path), options)
        failed = out.failed
    rows = []
    for fn in tu.functions:
        if fn.name in invalid:
            rows.append(_row(path, fn.name, "invalid", invalid[fn.name]))
        elif fn.name in failed:
            e = failed[fn.name]
            rows.append(_row(path, fn.name, _status(e), e.diagnostics[0]))
        else:
            rows.append(Row(path, fn.name, "translated"))
    return rows


def _status(e: CroqError) -> str:
    if isinstance(e, CroqInternalError):
        return "internal"
    return "refused" if isinstance(e, CroqLoweringError) else "invalid"


def _row(path: str, function: str, status: str, d: Diagnostic) -> Row:
    sp = d.span
    line, col = (sp.line, sp.col) if sp is not None and sp.line > 0 else (0, 0)
    message = d.message.splitlines()[0] if d.message else ""
    for prefix in (f"'{function}' is not translated: ", f"in '{function}': "):
        message = message.removeprefix(prefix)
    return Row(path, function, status, line, col, message)


def counts(rows: Iterable[Row]) -> tuple[Counter[str], Counter[str]]:
    """Functions by status, and files by verdict: ``complete`` (every function translates),
    ``partial``, ``none`` (no function translates), ``invalid`` (the file does not parse) and
    ``empty``."""
    by_file: dict[str, list[Row]] = {}
    for r in rows:
        by_file.setdefault(r.file, []).append(r)
    functions: Counter[str] = Counter(r.status for r in rows if r.function != "-")
    files: Counter[str] = Counter()
    for rs in by_file.values():
        if rs[0].function == "-":
            files[rs[0].status] += 1
            continue
        done = sum(r.status == "translated" for r in rs)
        files["complete" if done == len(rs) else "partial" if done else "none"] += 1
    return functions, files


def summary(rows: list[Row]) -> list[str]:
    functions, files = counts(rows)
    total = sum(functions.values())
    nfiles = sum(files.values())
    by_status = ", ".join(f"{functions[s]} {s}" for s in STATUSES[:4] if functions[s] or s != "internal")
    by_file = ", ".join(
        f"{files[k]} {what}"
        for k, what in (
            ("complete", "translate completely"),
            ("partial", "in part"),
            ("none", "translate nothing"),
            ("invalid", "do not parse"),
            ("empty", "have no __co__ function"),
        )
        if files[k] or k in ("complete", "partial", "none")
    )
    return [f"{total} function(s): {by_status}", f"{nfiles} file(s): {by_file}"]


def format_tsv(rows: list[Row]) -> str:
    out = ["file\tfunction\tstatus\twhere\tmessage"]
    out += [f"{r.file}\t{r.function}\t{r.status}\t{r.where}\t{_clean(r.message)}" for r in rows]
    functions, files = counts(rows)
    out += [f"# functions {s}\t{functions[s]}" for s in STATUSES[:4]]
    out += [f"# files {k}\t{files[k]}" for k in ("complete", "partial", "none", "invalid", "empty")]
    return "\n".join(out) + "\n"


def format_text(rows: list[Row]) -> str:
    head = ("FILE", "FUNCTION", "STATUS", "WHERE", "MESSAGE")
    table = [head] + [(r.file, r.function, r.status, r.where, r.message) for r in rows]
    widths = [max(len(t[i]) for t in table) for i in range(4)]
    lines = ["  ".join(t[i].ljust(widths[i]) for i in range(4)) + ("  " + t[4] if t[4] else "") for t in table]
    return "\n".join([ln.rstrip() for ln in lines] + [""] + summary(rows)) + "\n"


def _clean(text: str) -> str:
    return text.replace("\t", " ").replace("\n", " ")
