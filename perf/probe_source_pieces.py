"""GEMMs whose source tile has a column count that is not a power of two, under the source schedule:
tiled as column pieces of powers of two (schedule/gemm.py, Schedule.pieces_n) with 8 or 4 warps,
against the same kernel as written (CROQ2TRITON_NO_CONTRACTION=1: the older lowering until
2026-12-02, the tile IR's lifting since), each timed right after
cuBLAS (``torch.matmul(a, b.T)``) in the same round; median of the paired ratios.

    python3 perf/probe_source_pieces.py [--shapes 4096,8192] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "perf"))

from bench import median_of_rounds, run_info, smi  # noqa: E402

CASES = [  # label, file, function, defines, output type
    ("v4 (128 x 192)", "examples/gemm_v4.co", "matmul", {}, "f16"),
    ("ntile_f16acc BN192", "tests/programs/gemm_forms/ntile_f16acc.co", "gemm", {"BN": 192}, "f16"),
    ("ntile_shared BN96", "tests/programs/gemm_forms/ntile_shared.co", "gemm", {"BN": 96}, "f16"),
    ("rega_n80_tma", "tests/programs/gemm_forms/rega_n80_tma.co", "gemm", {}, "f16"),
    ("pipe_3c_s1 (192 x 64)", "tests/programs/gemm_forms/pipe_3c_s1.co", "gemm", {}, "f32"),
]


def load(path: Path, fn: str, defines: dict[str, int], older: bool):  # noqa: ANN201
    from croq2triton.api import load_source, translate_full

    if older:
        os.environ["CROQ2TRITON_NO_CONTRACTION"] = "1"
    try:
        tr = translate_full(path.read_text(), filename=path.name, defines=defines)
    finally:
        os.environ.pop("CROQ2TRITON_NO_CONTRACTION", None)
    tag = "older" if older else "tiled"
    return getattr(load_source(tr.source, f"probe_{path.stem}_{tag}", origin=str(path)), fn)


def main() -> int:
    import torch
    import triton

    from croq2triton.runtime.launch import tuned

    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated first words of the labels (v4,pipe_3c_s1,...)")
    args = ap.parse_args()
    info = run_info()
    print(f"# {info['date']} {info['gpu']} torch {info['torch']} triton {info['triton']}")
    print(f"# clocks before: {info['clocks_before']}")
    for n in (int(x) for x in args.shapes.split(",")):
        torch.manual_seed(n)
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        ref = torch.matmul(a.float(), b.float().T)
        only = set(args.only.split(",")) if args.only else None
        for label, rel, fn, defines, out_ty in CASES:
            if only is not None and label.split()[0] not in only:
                continue
            variants = {
                "pieces, the schedule's warps": (load(REPO / rel, fn, defines, False), None),
                "pieces, 4 warps": (load(REPO / rel, fn, defines, False), tuned(num_warps=4)),
                "older lowering": (load(REPO / rel, fn, defines, True), None),
            }
            for name, (f, launch) in variants.items():
                dtype = torch.float16 if out_ty == "f16" else torch.float32
                out = torch.full((n, n), float("nan"), device="cuda", dtype=dtype)
                if launch:
                    f(a, b, out, _launch=launch)
                else:
                    f(a, b, out)
                torch.cuda.synchronize()
                err = (out.float() - ref).abs().max().item()
                if not torch.isfinite(out).all() or err > 2e-3 * ref.abs().max().item() + 0.1:
                    print(f"{label} {name} {n}: WRONG (max err {err:.3g}): not timed")
                    continue
                cs, ts, ratios = [], [], []

                def run(f=f, o=out, la=launch, a=a, b=b) -> None:  # noqa: ANN001
                    f(a, b, o, _launch=la) if la else f(a, b, o)

                for _ in range(args.rounds):
                    c = triton.testing.do_bench(lambda a=a, b=b: torch.matmul(a, b.T), warmup=25, rep=200)
                    t = triton.testing.do_bench(run, warmup=25, rep=200)
                    cs.append(c)
                    ts.append(t)
                    ratios.append(c / t)
                print(
                    f"{label} | {name} | {n}^3 | kernel ms {[round(x, 4) for x in ts]} | cuBLAS ms "
                    f"{[round(x, 4) for x in cs]} | paired {[round(x, 3) for x in ratios]} | median "
                    f"{median_of_rounds(ratios):.3f}"
                )
    print(f"# clocks after: {smi()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
