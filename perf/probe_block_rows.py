"""Why a block-per-row reduction under ``--schedule auto`` runs far below the roofline on the H200
(perf/RESULTS.md 2026-12-03 20:16: row mean of squares, a block per row with a tree in shared
memory, 0.13 of a device copy, where the same sums written one thread per row reach 0.89).

Times, at 16384 x 4096 f16, paired with a device copy of the same bytes in the same process:
the generated launcher; its kernel launched directly (the recorded launch, no launcher) at 2, 4, 8
and 16 warps; rows.co's thread-per-row kernel; a hand-written Triton kernel (a row a program, one
``tl.sum``).  Prints one JSON line per row.

    python3 perf/probe_block_rows.py [--rows 16384 --cols 4096]
    python3 perf/probe_block_rows.py --gemm 1024,2048   # the same split for small GEMMs (issue 25):
        cuBLAS, examples/gemm_v4.co under auto through its launcher, its kernel launched directly,
        and the launcher replayed from a CUDA graph (no host time): how much is the launcher
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl
from probe_launcher import graphed, replayer  # (perf/, the script's folder)

from croq2triton.api import load
from croq2triton.runtime.aot import record

REPO = Path(__file__).resolve().parent.parent


@triton.jit
def _hand(x_ptr, s_ptr, N, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    j = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + r * N + j, mask=j < N, other=0.0).to(tl.float32)
    tl.store(s_ptr + r, tl.sum(v * v, axis=0) / N)


@triton.jit
def _tile2d(x_ptr, s_ptr, N, ROWS: tl.constexpr, LANES: tl.constexpr, HOW: tl.constexpr):
    """The generated kernel's [ROWS, LANES] tile of one row (element j * LANES + t), folded three ways:
    HOW 0 over the rows then the lanes (as generated before schedule/totals.py), 1 over the lanes then the
    rows (as generated now), 2 all at once, 3 over the rows of the transposed tile then the lanes."""
    r = tl.program_id(0)
    j = tl.arange(0, ROWS)[:, None]
    t = tl.arange(0, LANES)[None, :]
    offs = j * LANES + t
    v = tl.load(x_ptr + r * N + offs, mask=offs < N, other=0.0).to(tl.float32)
    if HOW == 0:
        tot = tl.sum(tl.sum(v * v, axis=0), axis=0)
    elif HOW == 1:
        tot = tl.sum(tl.sum(v * v, axis=1), axis=0)
    elif HOW == 2:
        tot = tl.sum(v * v)
    else:  # the lanes' partials through a transposed tile (a layout conversion), then their total
        tot = tl.sum(tl.sum(tl.trans(v * v), axis=1), axis=0)
    tl.store(s_ptr + r, tot / N)


def gemm(sizes: list[int]) -> None:
    """Host time in the small GEMMs: each way timed paired with cuBLAS in the same process."""
    mod = load(REPO / "examples" / "gemm_v4.co", schedule="auto")
    for n in sizes:
        _gemm_one(mod, n)


def _gemm_one(mod: Any, n: int) -> None:
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    mod.matmul(a, b, c)
    torch.cuda.synchronize()
    err = float((c.double() - a.double() @ b.double().T).abs().max())
    launches = record(mod.matmul, a, b, c)
    direct = replayer(launches)
    replay = graphed(lambda: mod.matmul(a, b, c))
    ways = {
        "launcher": lambda: mod.matmul(a, b, c),
        "kernel launched directly": direct,
        "launcher replayed from a CUDA graph": replay,
    }
    for label, fn in ways.items():
        ratios, times = [], []
        for _ in range(3):
            cub = triton.testing.do_bench(lambda: torch.matmul(a, b.T, out=c), warmup=25, rep=100)
            t = triton.testing.do_bench(fn, warmup=25, rep=100)
            times.append(t)
            ratios.append(cub / t)
        kernels = [la.kernel.__name__ for la in launches]
        print(json.dumps({"gemm": n, "way": label, "ms": sorted(times)[1], "vs_cublas": sorted(ratios)[1],
                          "kernels": kernels, "max_abs_err": err}))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--gemm", help="comma-separated N: the host-time split of N^3 GEMMs instead")
    args = ap.parse_args()
    if args.gemm:
        gemm([int(v) for v in args.gemm.split(",")])
        return
    m, n = args.rows, args.cols
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    s = torch.empty(m, device="cuda")
    src = torch.empty(m * n * 2 // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ref = (x.double() ** 2).mean(1)

    def timed(label: str, fn: object, check: bool = True) -> None:
        s.fill_(float("nan"))
        fn()  # type: ignore[operator]
        torch.cuda.synchronize()
        err = float(((s.double() - ref).abs().max() / ref.abs().max()).item()) if check else 0.0
        ratios, times = [], []
        for _ in range(3):
            t = triton.testing.do_bench(fn, warmup=25, rep=200)  # type: ignore[arg-type]
            c = triton.testing.do_bench(lambda: dst.copy_(src), warmup=25, rep=200)
            times.append(t)
            ratios.append(c / t)
        print(json.dumps({"case": label, "ms": sorted(times)[1], "of_roofline": sorted(ratios)[1], "rel_err": err}))

    forms = load(REPO / "tests" / "programs" / "membound_forms.co", schedule="auto")
    rows = load(REPO / "tests" / "programs" / "rows.co", schedule="auto")
    timed("launcher: row_meansq_tree_f16 (auto)", lambda: forms.row_meansq_tree_f16(x, s))
    (la,) = record(forms.row_meansq_tree_f16, x, s)
    print(json.dumps({"kernel": la.kernel.__name__, "grid": la.grid, "kwargs": la.kwargs}))
    for warps in (1, 2, 4, 8, 16):
        kw = dict(la.kwargs, num_warps=warps)
        timed(f"kernel alone, {warps} warps", lambda kw=kw: la.kernel[la.grid](*la.args, **kw))
    timed("rows.co row_sums_f16 (auto, sums not means)", lambda: rows.row_sums_f16(x, s), check=False)
    block = triton.next_power_of_2(n)
    timed("hand-written: a row a program", lambda: _hand[(m,)](x, s, n, BLOCK=block, num_warps=8))
    rows_of = max(1, block // 256)
    ways = ((0, "rows then lanes"), (1, "lanes then rows"), (2, "all at once"), (3, "rows of its transpose"))
    for how, what in ways:
        for warps in (2, 4, 8):
            timed(f"hand [{rows_of}, 256] tile folded {what}, {warps} warps",
                  lambda how=how, warps=warps: _tile2d[(m,)](x, s, n, ROWS=rows_of, LANES=256, HOW=how,
                                                             num_warps=warps))  # fmt: skip
    for warps in (2, 4, 8):
        timed(f"hand-written 1-D row, {warps} warps", lambda warps=warps: _hand[(m,)](x, s, n, BLOCK=block,
                                                                                     num_warps=warps))  # fmt: skip


if __name__ == "__main__":
    main()
