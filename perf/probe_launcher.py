"""How much of a memory-bound kernel's time under ``do_bench`` is its launcher (host time) on the GPU:
each function of tests/programs/membound_forms.co named on the command line, under auto, timed three
ways, each paired with a device copy of the same bytes in the same process (L2 flushed by
``do_bench``): the generated launcher; its recorded launches replayed straight through Triton (no
launcher); the launcher replayed from a CUDA graph (no host time at all).  One JSON line each.

    python3 perf/probe_launcher.py col_sums_walk col_means_f16 [--rows 16384 --cols 4096]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import torch
import triton

from croq2triton.api import load
from croq2triton.runtime.aot import record
from croq2triton.runtime.launch import Launch

REPO = Path(__file__).resolve().parent.parent
F16 = {"col_means_f16", "softmax_block", "rmsnorm_warp_f16", "rmsnorm_tree_f16", "row_meansq_tree_f16"}
OUTS = {"col_sums_walk": "n", "col_means_f16": "n", "row_sums_block": "m", "row_sums_warp": "m", "row_sums_staged": "m"}


def replayer(launches: list[Launch]) -> Callable[[], None]:
    """The recorded launches run straight through Triton (no launcher)."""

    def run() -> None:
        for la in launches:
            la.kernel[la.grid](*la.args, **la.kwargs)

    return run


def graphed(call: Callable[[], object]) -> Callable[[], None]:
    """``call`` captured into a CUDA graph (warmed up on a side stream first): its replay, no host time."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    return graph.replay


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("funcs", nargs="+")
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=4096)
    args = ap.parse_args()
    m, n = args.rows, args.cols
    mod = load(REPO / "tests" / "programs" / "membound_forms.co", schedule="auto")
    for fn in args.funcs:
        dtype = torch.float16 if fn in F16 else torch.float32
        x = torch.randn(m, n, device="cuda", dtype=dtype)
        out_dtype = dtype if fn == "col_means_f16" else torch.float32
        out = torch.empty(n if OUTS.get(fn) == "n" else m, device="cuda", dtype=out_dtype)
        f = getattr(mod, fn)
        nbytes = x.numel() * x.element_size()
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        launches = record(f, x, out)
        call = lambda f=f, x=x, o=out: f(x, o)  # noqa: E731
        ways = {"launcher": call, "launches direct": replayer(launches), "graph": graphed(call)}
        for way, call in ways.items():
            times, ratios = [], []
            for _ in range(3):
                c = triton.testing.do_bench(lambda d=dst, s=src: d.copy_(s), warmup=25, rep=100)
                t = triton.testing.do_bench(call, warmup=25, rep=100)
                times.append(t)
                ratios.append(c / t)
            print(json.dumps({"fn": fn, "size": f"{m}x{n}", "way": way, "ms": round(sorted(times)[1], 4),
                              "of_roofline": round(sorted(ratios)[1], 3),
                              "kernels": [la.kernel.__name__ for la in launches]}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
