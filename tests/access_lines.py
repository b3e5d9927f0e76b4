"""Run in a fresh process (no TRITON_INTERPRET; tests/sm90.py's worker): each function of a ``.co``
file compiled for sm_90a under ``--schedule auto``, and every global access of its PTX attributed to
the tensor it reads or writes.

Usage: python access_lines.py FILE.co SIZES_JSON   (``{"function": {"M": 4096, ...}, ...}``)

Prints one JSON line: ``{"function": {"x.ld": {"v4": 8, "x1": 2}, "out.st": {"v4": 4}}}``, widths
as perf/compile_all.py's ``accesses`` counts them (``v4``, ``v2``, ``x1``; ``cp16B``: a pipelined
loop's asynchronous copies; ``tma``: TMA copies, ``cp.async.bulk.tensor``).  The ``.loc`` line
before an instruction is a line of the generated module; the statement there names the tensor's
pointer (``x_ptr``) in its ``tl.load`` / ``tl.store`` (``?`` where none does: scratch memory, a
descriptor).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "perf"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import translation_memo  # noqa: E402
from compile_all import _ACCESS, _ASYNC  # noqa: E402

import croq2triton.api as api  # noqa: E402
from croq2triton.compiler import compile_file  # noqa: E402

_LOC = re.compile(r"\s*\.loc\s+\d+\s+(\d+)")
_TMA = re.compile(r"cp\.async\.bulk\.tensor\.\w+\.(global\.shared|shared::cluster\.global|shared\S*\.global)")


def statements(lines: list[str]) -> list[str]:
    """For each line of the module (0-based), the whole statement it belongs to (a call's arguments
    continue on the lines after its opening parenthesis)."""
    out: list[str] = []
    start, depth = 0, 0
    for n, line in enumerate(lines):
        if depth <= 0:
            start, depth = n, 0
        depth += line.count("(") - line.count(")")
        if depth <= 0:
            text = " ".join(lines[start : n + 1])
            out += [text] * (n + 1 - start)
    out += [" ".join(lines[start:])] * (len(lines) - len(out))
    return out


def attribute(ptx: str, stmts: list[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    at = 0
    for text in ptx.splitlines():
        loc = _LOC.match(text)
        if loc:
            at = int(loc.group(1))
            continue
        if m := _ACCESS.search(text):
            op = m.group(1)
            vector = re.search(r"\.v(\d)\b", m.group(2))
            width = f"v{vector.group(1)}" if vector else "x1"
        elif m := _ASYNC.search(text):
            op, width = "ld", f"cp{int(m.group(1), 0)}B"
        elif m := _TMA.search(text):
            op, width = ("st" if m.group(1).startswith("global") else "ld"), "tma"
        else:
            continue
        text = stmts[at - 1] if 0 < at <= len(stmts) else ""
        if width == "tma":  # a descriptor's copy: ``x_desc_32x256.load(...)`` / ``.store(...)``
            names = re.findall(r"\b(\w+?)_desc\w*\.(?:load|store)\(", text)
        else:
            names = re.findall((r"tl\.store" if op == "st" else r"tl\.load") + r"\(\s*(\w+?)_ptr\b", text)
        for name in sorted(set(names)) or ["?"]:
            counts = out.setdefault(f"{name}.{op}", {})
            counts[width] = counts.get(width, 0) + 1
    return out


def main() -> None:
    path, sizes = sys.argv[1], json.loads(sys.argv[2])
    found: dict[str, dict[str, dict[str, int]]] = {}
    # the worker answers a request a function (tests/access_counts.py): the file is translated once a
    # worker (once a test run where the run shares a memo folder), not twice a request
    with translation_memo.installed():
        stmts = statements(
            api.translate_full(Path(path).read_text(), filename=path, schedule="auto").source.splitlines()
        )
        for fn, values in sizes.items():
            got = found.setdefault(fn, {})
            for _, reports in compile_file(path, sizes=values, functions=[fn], schedule="auto", target="sm_90a"):
                for r in reports:
                    for key, counts in attribute(r.asm["ptx"], stmts).items():
                        mine = got.setdefault(key, {})
                        for w, n in counts.items():
                            mine[w] = mine.get(w, 0) + n
    print(json.dumps(found))


if __name__ == "__main__":
    main()
