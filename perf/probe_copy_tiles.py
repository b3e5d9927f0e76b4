"""Which block tile a tiled copy kernel wants on Hopper: hand-written Triton kernels of the
structure the tile IR emits for perf/bench_copies.py's kernels (an interior branch without masks,
the masked rest), at several block tiles and warp counts, against a device copy of the same bytes
measured in the same process, paired round by round (ratio = copy time / kernel time).

    python3 perf/probe_copy_tiles.py [--size 8192] [--rounds 3]

Variants: a 2-D tile BM x BN (the source's 32 x 32 and larger ones), and the source's 32 x 32 tile
repeated F times along the columns as a third axis ([F, 32, 32]: what a coarsening that turns the
block index into a lane axis gives).  Every output is checked against torch first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import median_of_rounds, run_info, smi  # noqa: E402


def kernels():  # noqa: ANN201
    import triton
    import triton.language as tl

    @triton.jit
    def scale2d(x, y, M, N, sx0, sy0, BM: tl.constexpr, BN: tl.constexpr):
        bm = tl.program_id(0)
        bn = tl.program_id(1)
        offs_m = bm * BM + tl.arange(0, BM)[:, None]
        offs_n = bn * BN + tl.arange(0, BN)[None, :]
        if (bm * BM + BM - 1 < M) & (bn * BN + BN - 1 < N):
            s = tl.load(x + offs_m * sx0 + offs_n)
            tl.store(y + offs_m * sy0 + offs_n, s * 2.0 + 1.0)
        else:
            mask = (offs_m < M) & (offs_n < N)
            s = tl.load(x + offs_m * sx0 + offs_n, mask=mask, other=0.0)
            tl.store(y + offs_m * sy0 + offs_n, s * 2.0 + 1.0, mask=mask)

    @triton.jit
    def scale3d(x, y, M, N, sx0, sy0, F: tl.constexpr):
        bm = tl.program_id(0)
        p = tl.program_id(1)
        f = tl.arange(0, F)[:, None, None]
        offs_m = bm * 32 + tl.arange(0, 32)[None, :, None]
        offs_n = (p * F + f) * 32 + tl.arange(0, 32)[None, None, :]
        if (bm * 32 + 31 < M) & ((p * F + F - 1) * 32 + 31 < N):
            s = tl.load(x + offs_m * sx0 + offs_n)
            tl.store(y + offs_m * sy0 + offs_n, s * 2.0 + 1.0)
        else:
            mask = (offs_m < M) & (offs_n < N)
            s = tl.load(x + offs_m * sx0 + offs_n, mask=mask, other=0.0)
            tl.store(y + offs_m * sy0 + offs_n, s * 2.0 + 1.0, mask=mask)

    @triton.jit
    def trans2d(x, y, M, N, sx0, sy0, BM: tl.constexpr, BN: tl.constexpr):
        bm = tl.program_id(0)
        bn = tl.program_id(1)
        offs_m = bm * BM + tl.arange(0, BM)[:, None]
        offs_n = bn * BN + tl.arange(0, BN)[None, :]
        out_r = bn * BN + tl.arange(0, BN)[:, None]
        out_c = bm * BM + tl.arange(0, BM)[None, :]
        if (bm * BM + BM - 1 < M) & (bn * BN + BN - 1 < N):
            s = tl.load(x + offs_m * sx0 + offs_n)
            tl.store(y + out_r * sy0 + out_c, tl.trans(s))
        else:
            s = tl.load(x + offs_m * sx0 + offs_n, mask=(offs_m < M) & (offs_n < N), other=0.0)
            tl.store(y + out_r * sy0 + out_c, tl.trans(s), mask=(out_r < N) & (out_c < M))

    return scale2d, scale3d, trans2d


def probe(m: int, n: int, rounds: int) -> None:
    import torch
    import triton

    scale2d, scale3d, trans2d = kernels()
    x = torch.randn(m, n, device="cuda").half()
    src = torch.empty(2 * m * n, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    want = x * 2.0 + 1.0
    cases = []
    for bm, bn, w in ((32, 32, 8), (32, 32, 4), (32, 64, 4), (32, 128, 4), (64, 64, 4), (64, 128, 4),
                      (64, 128, 8), (128, 128, 8), (64, 256, 8), (32, 256, 4), (128, 64, 4), (16, 256, 4)):  # fmt: skip
        cases.append((f"scale {bm}x{bn} w{w}", "scale", lambda y, bm=bm, bn=bn, w=w: scale2d[(triton.cdiv(m, bm), triton.cdiv(n, bn))](x, y, m, n, x.stride(0), y.stride(0), BM=bm, BN=bn, num_warps=w)))  # fmt: skip
    for f, w in ((2, 4), (4, 4), (4, 8), (8, 8)):
        cases.append((f"scale [{f},32,32] w{w}", "scale", lambda y, f=f, w=w: scale3d[(triton.cdiv(m, 32), triton.cdiv(triton.cdiv(n, 32), f))](x, y, m, n, x.stride(0), y.stride(0), F=f, num_warps=w)))  # fmt: skip
    for bm, bn, w in ((32, 32, 8), (32, 32, 4), (64, 64, 4), (64, 64, 8), (128, 64, 8), (64, 128, 8), (128, 128, 8)):  # fmt: skip
        cases.append((f"trans {bm}x{bn} w{w}", "trans", lambda y, bm=bm, bn=bn, w=w: trans2d[(triton.cdiv(m, bm), triton.cdiv(n, bn))](x, y, m, n, x.stride(0), y.stride(0), BM=bm, BN=bn, num_warps=w)))  # fmt: skip
    for label, kind, run in cases:
        y = torch.full((n, m) if kind == "trans" else (m, n), float("nan"), device="cuda").half()
        run(y)
        ok = torch.equal(y, x.t() if kind == "trans" else want)
        kt: list[float] = []
        rt: list[float] = []
        for _ in range(rounds):
            c = triton.testing.do_bench(lambda: dst.copy_(src), warmup=25, rep=200)
            k = triton.testing.do_bench(lambda y=y, run=run: run(y), warmup=25, rep=200)
            kt.append(k)
            rt.append(c / k)
        print(f"{m}x{n} {label:24s} {'ok' if ok else 'WRONG'} {median_of_rounds(kt):.4f} ms ratio {median_of_rounds(rt):.3f} raw {[round(v, 5) for v in kt]}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    info = run_info()
    print("#", info)
    for m, n in ((args.size, args.size), (args.size - 192 + 7, args.size - 64 + 5)):
        probe(m, n, args.rounds)
    print("# clocks after:", smi(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
