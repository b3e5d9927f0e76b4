"""Host time a call of a generated launcher costs, next to the torch op doing the same work: the
regime of small tensors, where a kernel is a few microseconds and the host decides the rate at which
calls run (a model's many small element-wise ops and norms, called as drop-in torch ops).

Each case is timed as calls back to back (no L2 flush, no sync between calls; one sync at the end),
median of rounds, per call:

* ``torch``: the torch op;
* ``launcher``: the generated function as a user calls it (checks, sizes, launch through Triton);
* ``triton``: the same launches replayed straight through Triton's ``kernel[grid](...)`` (what the
  launcher adds is the difference);
* ``wrapped``: the same launches replayed through ``runtime.launch.launch`` (the wrapper every
  launcher calls: what it adds over ``triton``);
* ``checks``: the launcher with a launch that does nothing (its own Python alone).

    python3 perf/launch_overhead.py [--sizes 4096,65536] [--calls 2000] [--rounds 5] [--profile]

One JSON line per case and size; ``--profile``: cProfile's top functions of the launcher's calls
(launches included) after each line.  Without a GPU the kernels do not run (the interpreter would
time itself): only ``checks`` is measured, in this thread's CPU time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from croq2triton.api import load
from croq2triton.runtime import launch as rt
from croq2triton.runtime.aot import record

REPO = Path(__file__).resolve().parent.parent


def per_call(
    fn: Callable[[], Any],
    calls: int,
    rounds: int,
    sync: Callable[[], None],
    clock: Callable[[], int] = time.perf_counter_ns,
) -> float:
    """Median over ``rounds`` of the microseconds a call of ``fn`` takes, ``calls`` back to back
    (``clock``: wall time, or without a GPU this thread's CPU time, which other processes on a
    shared machine do not inflate)."""
    for _ in range(min(calls, 200)):
        fn()
    sync()
    out = []
    for _ in range(rounds):
        t = clock()
        for _ in range(calls):
            fn()
        sync()
        out.append((clock() - t) / calls / 1e3)
    return statistics.median(out)


def cases(n: int, dev: torch.device) -> list[tuple[str, Callable[..., Any], Callable[[], Any], tuple[Any, ...]]]:
    """(label, generated function, the torch op, the function's arguments) at about ``n`` elements."""
    vadd = load(REPO / "examples" / "vadd.co", schedule="auto").vadd
    forms = load(REPO / "tests" / "programs" / "membound_forms.co", schedule="auto")
    gemm = load(REPO / "examples" / "gemm_v4.co").matmul
    x, y, o = (torch.randn(n, device=dev) for _ in range(3))
    rows = max(1, n // 1024)
    a = torch.randn(rows, 1024, device=dev)
    s = torch.empty(rows, device=dev)
    # columns means of f16 (a partial kernel and a combine where the rows are many)
    xh = torch.randn(max(1, n // 256), 256, device=dev, dtype=torch.float16)
    mh = torch.empty(256, device=dev, dtype=torch.float16)
    # a small f16 GEMM read and written through TMA descriptors (M x N x K ~ n)
    side = max(64, int(round(n ** (1 / 3) / 16)) * 16)
    ga, gb = (torch.randn(side, side, device=dev, dtype=torch.float16) for _ in range(2))
    gc = torch.empty(side, side, device=dev, dtype=torch.float16)
    return [
        ("vadd f32", vadd, lambda: torch.add(x, y, out=o), (x, y, o)),
        ("row sums f32 (warp per row)", forms.row_sums_warp, lambda: torch.sum(a, 1, out=s), (a, s)),
        (
            "col means f16",
            forms.col_means_f16,
            lambda: torch.mean(xh, 0, out=mh),
            (xh, mh),
        ),
        (f"gemm_v4 f16 {side}^3 (TMA)", gemm, lambda: torch.matmul(ga, gb.T, out=gc), (ga, gb, gc)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="4096,65536")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="cProfile's top functions of the launcher's calls")
    args = ap.parse_args()
    gpu = torch.cuda.is_available()
    dev = torch.device("cuda" if gpu else "cpu")
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    for n in (int(v) for v in args.sizes.split(",")):
        for label, fn, op, fargs in cases(n, dev):
            launches = record(fn, *fargs)

            def replay(launches: list[Any] = launches) -> None:
                for la in launches:
                    la.kernel[la.grid](*la.args, **la.kwargs)

            def wrapped(launches: list[Any] = launches) -> None:
                for la in launches:
                    rt.launch(la.kernel, la.grid, la.args, la.kwargs)

            row: dict[str, Any] = {
                "case": label,
                "elements": n,
                "launches": len(launches),
                "device": torch.cuda.get_device_name() if gpu else "cpu",
            }
            if gpu:
                row["torch_us"] = per_call(op, args.calls, args.rounds, sync)
                row["launcher_us"] = per_call(lambda fn=fn, fargs=fargs: fn(*fargs), args.calls, args.rounds, sync)
                row["triton_us"] = per_call(replay, args.calls, args.rounds, sync)
                row["wrapped_us"] = per_call(wrapped, args.calls, args.rounds, sync)
            row["checks_us"] = per_call(
                lambda fn=fn, fargs=fargs: fn(*fargs, _launch=lambda *a: None),
                args.calls,
                args.rounds,
                sync,
                time.perf_counter_ns if gpu else time.thread_time_ns,
            )
            print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
            if args.profile and gpu:
                prof = cProfile.Profile()
                prof.enable()
                for _ in range(args.calls):
                    fn(*fargs)
                sync()
                prof.disable()
                pstats.Stats(prof).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
