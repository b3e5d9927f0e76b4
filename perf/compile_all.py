"""Compile every translated kernel for sm_90a without a GPU: what the interpreter accepts but Hopper's
compiler refuses (a scalar where a tensor is needed, a non-power-of-two range, ...) shows here.

    python3 perf/compile_all.py [PATH ...] [--schedules source,auto] [--jobs N] [--size 40]

Each function of each ``.co`` file (default: examples/, tests/programs/ and the shared corpus) is
translated, its launches are recorded on CPU tensors built as ``croq2triton run`` builds them (every
symbolic size ``--size``), and each recorded launch is compiled for sm_90a (``runtime/aot.py``).
Prints one line per failure and a count; exits 1 when a kernel fails to compile.  A launch that
cannot be recorded on CPU tensors (host code reading tensor values, say) is counted, not failed.

``--accesses`` also prints, for each compiled launch, its global loads and stores in the PTX by
width (``ld v4:4 x1:2``: four 16-byte vector loads, two of one element; ``cp16B``: a pipelined
loop's asynchronous copies of 16 bytes into shared memory): a memory-bound kernel
whose accesses along a row stay one element a thread is far from the bandwidth roofline (the
causal softmax before schedule/vecmasks.py).  Sizes divisible by 16 (``--size 512``) show what
Triton vectorises at realistic sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


_ACCESS = re.compile(r"\b(ld|st)\.global((?:\.[A-Za-z0-9_:]+)*)")
_ASYNC = re.compile(r"cp\.async\.c[ag]\.shared\.global[\w.:]*\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)")


def accesses(ptx: str) -> dict[str, dict[str, int]]:
    """Global loads and stores of ``ptx`` counted by vector width: ``{"ld": {"v4": 4, "x1": 2}}``."""
    out: dict[str, dict[str, int]] = {"ld": {}, "st": {}}
    for m in _ACCESS.finditer(ptx):
        vector = re.search(r"\.v(\d)\b", m.group(2))
        width = f"v{vector.group(1)}" if vector else "x1"
        out[m.group(1)][width] = out[m.group(1)].get(width, 0) + 1
    for m in _ASYNC.finditer(ptx):  # a pipelined loop's loads, into shared memory: by bytes
        key = f"cp{int(m.group(1), 0)}B"
        out["ld"][key] = out["ld"].get(key, 0) + 1
    return out


def _one(job: tuple[str, str, int]) -> dict[str, object]:
    os.environ["TRITON_INTERPRET"] = "0"
    sys.path.insert(0, str(REPO))
    from croq2triton.api import load
    from croq2triton.errors import CroqError
    from croq2triton.runinputs import make_inputs
    from croq2triton.runsizes import choose
    from croq2triton.runtime.aot import compile_launch, record

    path, schedule, size = job
    out: dict[str, object] = {"path": path, "schedule": schedule, "compiled": 0, "unrecorded": [], "failed": []}
    out["accesses"] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod = load(path, schedule=schedule, interpret=False)
    except CroqError:
        return out
    except Exception as e:  # noqa: BLE001 - reported
        out["failed"] = [f"<load>: {type(e).__name__}: {str(e)[:300]}"]
        return out
    tr = mod.__croq_translation__
    for fn in tr.unit.functions:
        if fn.name in tr.failed:
            continue
        chosen = choose([fn], {})[fn.name]
        values = {k: (size if chosen.kinds.get(k) == "size" else v) for k, v in chosen.values.items()}
        try:
            inputs = make_inputs(fn, values, "cpu", seed=len(fn.name))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                launches = record(getattr(mod, fn.name), *inputs.args)
        except Exception as e:  # noqa: BLE001 - counted
            out["unrecorded"].append(f"{fn.name}: {type(e).__name__}: {str(e)[:120]}")  # type: ignore[union-attr]
            continue
        for la in launches:
            try:
                k = compile_launch(la)
                out["compiled"] = int(out["compiled"]) + 1  # type: ignore[call-overload]
                out["accesses"].append([fn.name, la.kernel.__name__, accesses(k.asm["ptx"])])  # type: ignore[union-attr]
            except Exception as e:  # noqa: BLE001 - what this looks for
                msg = " ".join(str(e).split())[:400]
                out["failed"].append(f"{fn.name}/{la.kernel.__name__}: {type(e).__name__}: {msg}")  # type: ignore[union-attr]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--schedules", default="source,auto")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--size", type=int, default=40)
    ap.add_argument("--timeout", type=int, default=300, help="seconds for one file in one schedule")
    ap.add_argument("--json")
    ap.add_argument("--accesses", action="store_true", help="print each launch's global loads / stores by width")
    ap.add_argument("--one", nargs=2, metavar=("FILE", "SCHEDULE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(_one((args.one[0], args.one[1], args.size))))
        return 0
    roots = [Path(p) for p in args.paths] or [REPO / "examples", REPO / "tests" / "programs"]
    if not args.paths:
        shared = Path(os.environ.get("CROQ2TRITON_SHARED", REPO.parent / "shared")) / "corpus"
        if shared.exists():
            roots.append(shared)
    files = sorted(str(f) for r in roots for f in ([r] if r.is_file() else r.rglob("*.co")))
    jobs = [(f, s, args.size) for f in files for s in args.schedules.split(",")]
    results = []

    def isolated(job: tuple[str, str, int]) -> dict[str, object]:
        # a process per file: a compiler crash or hang costs that file only
        cmd = [sys.executable, __file__, "--one", job[0], job[1], "--size", str(job[2])]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return {"path": job[0], "schedule": job[1], "compiled": 0, "unrecorded": [], "failed": ["<timeout>"]}
        last = (p.stdout.strip().splitlines() or [""])[-1]
        try:
            return json.loads(last)
        except json.JSONDecodeError:
            why = f"<process exited {p.returncode}>: {' '.join(p.stderr.split())[-300:]}"
            return {"path": job[0], "schedule": job[1], "compiled": 0, "unrecorded": [], "failed": [why]}

    with ThreadPoolExecutor(args.jobs) as pool:
        for r in pool.map(isolated, jobs):
            results.append(r)
            for f in r["failed"]:  # type: ignore[attr-defined]
                print(f"FAIL {r['path']} [{r['schedule']}] {f}", flush=True)
            if args.accesses:
                for fn, kernel, acc in r.get("accesses", []):  # type: ignore[attr-defined]
                    cells = "  ".join(
                        f"{op} " + " ".join(f"{w}:{n}" for w, n in sorted(c.items())) for op, c in acc.items()
                    )
                    print(f"{Path(str(r['path'])).name} [{r['schedule']}] {fn}/{kernel}: {cells}", flush=True)
    compiled = sum(int(r["compiled"]) for r in results)  # type: ignore[call-overload]
    failed = sum(len(r["failed"]) for r in results)  # type: ignore[arg-type]
    unrec = sum(len(r["unrecorded"]) for r in results)  # type: ignore[arg-type]
    print(
        f"{len(files)} files, {compiled} launches compiled for sm_90a, {failed} failed, {unrec} functions not recorded"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
