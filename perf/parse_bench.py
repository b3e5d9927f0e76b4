#!/usr/bin/env python3
"""Front-end speed, in one process.

(a) importing croq2triton and getting the parser (``Parser.get()``: lexer plus
    LALR tables loaded from the shipped ``_parsetab.py``);
(b) building the LALR tables from scratch in memory (the shipped tables ignored);
(c) parsing every ``.co`` file of the corpus (upstream/ files in the upstream
    dialect, the rest in the default dialect; accepted and rejected files both count).

Usage: ``python perf/parse_bench.py [--corpus PATH] [--repeat N] [--profile]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path(os.environ.get("CROQ2TRITON_SHARED", REPO.parent / "shared")) / "corpus"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help=f"corpus folder (default {DEFAULT_CORPUS})")
    ap.add_argument("--repeat", type=int, default=3, help="parse the corpus this many times; report first and best")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one corpus pass")
    args = ap.parse_args(argv)

    if "croq2triton" in sys.modules:
        print("warning: croq2triton is already imported; the import time is not cold", file=sys.stderr)
    sys.path.insert(0, str(REPO))

    # (a) import + parser
    t0 = time.perf_counter()
    import croq2triton.frontend.driver as driver
    from croq2triton.frontend.parser import Parser

    t1 = time.perf_counter()
    Parser.get()
    t2 = time.perf_counter()

    # (b) LALR tables from scratch, in memory
    import ply.yacc as yacc

    from croq2triton.frontend.parser import _Rules

    t3 = time.perf_counter()
    built = yacc.yacc(
        module=_Rules(),
        start="function",
        debug=False,
        write_tables=False,
        tabmodule="croq2triton.frontend._no_such_parsetab",  # never found: forces a fresh build
        errorlog=yacc.NullLogger(),
    )
    t4 = time.perf_counter()
    n_states = len(built.action)

    # (c) the corpus
    from croq2triton.errors import CroqError

    files = sorted(p for p in args.corpus.rglob("*.co") if p.is_file()) if args.corpus.is_dir() else []
    if not files:
        print(f"error: no .co files under {args.corpus}", file=sys.stderr)
        return 1
    inputs: list[tuple[str, str | None, str]] = []
    lines = 0
    for p in files:
        rel = p.relative_to(args.corpus).as_posix()
        dialect = "upstream" if rel.startswith("upstream/") else "default"
        try:
            text: str | None = driver.read_source(str(p))
        except CroqError:
            text = None  # unreadable / not UTF-8: a reject, counted with zero parse time
        if text is not None:
            lines += text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        inputs.append((str(p), text, dialect))

    def corpus_pass() -> tuple[float, int, int]:
        ok = bad = 0
        start = time.perf_counter()
        for name, text, dialect in inputs:
            if text is None:
                bad += 1
                continue
            try:
                driver.parse(text, name, dialect=dialect)
                ok += 1
            except CroqError:
                bad += 1
        return time.perf_counter() - start, ok, bad

    times = []
    accepted = rejected = 0
    for _ in range(max(1, args.repeat)):
        secs, accepted, rejected = corpus_pass()
        times.append(secs)
    first, best = times[0], min(times)

    rows = [
        ("import croq2triton", f"{t1 - t0:.3f} s", ""),
        ("Parser.get() (lexer + shipped tables)", f"{t2 - t1:.3f} s", ""),
        ("LALR tables from scratch (in memory)", f"{t4 - t3:.3f} s", f"{n_states} states"),
        (
            "parse corpus, first pass",
            f"{first:.3f} s",
            f"{len(files)} files ({accepted} accepted, {rejected} rejected), {lines} lines, {lines / first:,.0f} lines/s",
        ),
        (f"parse corpus, best of {len(times)}", f"{best:.3f} s", f"{lines / best:,.0f} lines/s"),
    ]
    w = max(len(r[0]) for r in rows)
    print(f"corpus: {args.corpus}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    for what, secs_s, extra in rows:
        print(f"  {what:<{w}}  {secs_s:>8}  {extra}")
    goal = 2.0
    print(f"goal: whole corpus < {goal:.1f} s -> {'met' if first < goal else 'NOT met'}")

    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        corpus_pass()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    return 0 if first < goal else 1


if __name__ == "__main__":
    sys.exit(main())
