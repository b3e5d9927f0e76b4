"""Which tile an f16-accumulator contraction wants under ``--schedule auto`` (schedule/policy.py).

    python3 perf/acc16_probe.py [--shapes 8192,4096] [--rounds 3]

Translates ``tests/programs/gemm_forms/pipe_tut_1c_s2.co`` (f16 inputs, ``mma.fill.f16``, f16 out)
with the auto policy replaced by each candidate Schedule, checks it against torch, and times it
against cuBLAS (``torch.matmul``, f16 out) paired round by round; prints medians.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CANDIDATES = {
    "128x256x64 s3 w8": dict(block_m=128, block_n=256, block_k=64, num_stages=3, num_warps=8),
    "128x128x64 s4 w4": dict(block_m=128, block_n=128, block_k=64, num_stages=4, num_warps=4),
    "128x128x64 s4 w8": dict(block_m=128, block_n=128, block_k=64, num_stages=4, num_warps=8),
    "128x256x64 s3 w8, f32 accumulator": dict(block_m=128, block_n=256, block_k=64, num_stages=3, num_warps=8),
    "256x128x64 s3 w8": dict(block_m=256, block_n=128, block_k=64, num_stages=3, num_warps=8),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192,4096")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import dataclasses

    import torch
    import triton

    from croq2triton.api import load
    from croq2triton.schedule import policy
    from croq2triton.schedule.schedule import Schedule

    src = REPO / "tests/programs/gemm_forms/pipe_tut_1c_s2.co"
    import croq2triton.schedule.gemm as gemm

    mods = {}
    real_auto, real_tile = policy.auto, gemm.tile_contraction
    for label, kw in CANDIDATES.items():
        policy.auto = lambda c, kw=kw: Schedule(**kw)  # type: ignore[assignment]
        if "f32 accumulator" in label:  # the same kernel with the sums kept in f32, rounded once
            gemm.tile_contraction = lambda c, *rest: real_tile(dataclasses.replace(c, acc="f32"), *rest)
        mods[label] = load(src, schedule="auto")
        gemm.tile_contraction = real_tile
    policy.auto = real_auto
    for n in (int(x) for x in args.shapes.split(",")):
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        ref = torch.matmul(a, b.T)
        for label, mod in mods.items():
            out = torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16)
            mod.gemm(a, b, out)
            err = (out.float() - ref.float()).abs().max().item()
            pairs, ts = [], []
            for _ in range(args.rounds):
                c = triton.testing.do_bench(lambda a=a, b=b: torch.matmul(a, b.T), warmup=25, rep=200)
                t = triton.testing.do_bench(lambda mod=mod, out=out, a=a, b=b: mod.gemm(a, b, out), warmup=25, rep=200)
                pairs.append(c / t)
                ts.append(t)
            print(
                f"{n} | {label} | {sorted(ts)[len(ts) // 2]:.4f} ms | ratio {sorted(pairs)[len(pairs) // 2]:.3f} | max err {err:.3g} | raw {[round(x, 4) for x in ts]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
