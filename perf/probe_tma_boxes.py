"""Which TMA box a widened copy wants: a hand-written 2x + 1 copy through host TensorDescriptors
(load and store of one box a program) at several boxes, against a device copy of the same bytes,
paired round by round (ratio = copy time / kernel time), 8192 x 8192 f16.

    python3 perf/probe_tma_boxes.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import median_of_rounds, smi  # noqa: E402

BOXES = ((32, 32, 8), (128, 64, 4), (64, 64, 4), (64, 128, 4), (128, 128, 8), (32, 256, 4), (64, 256, 8))


def kernel():  # noqa: ANN201
    import triton
    import triton.language as tl

    @triton.jit
    def scale(x_desc, y_desc, BM: tl.constexpr, BN: tl.constexpr):
        bm = tl.program_id(0)
        bn = tl.program_id(1)
        s = x_desc.load([bm * BM, bn * BN])
        y_desc.store([bm * BM, bn * BN], s * 2.0 + 1.0)

    return scale


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import torch
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    print("# clocks before:", smi())
    scale = kernel()
    n = 8192
    x = torch.randn(n, n, device="cuda").half()
    src = torch.empty(2 * n * n, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    for bm, bn, warps in BOXES:
        y = torch.full((n, n), float("nan"), device="cuda").half()
        xd = TensorDescriptor.from_tensor(x, [bm, bn])
        yd = TensorDescriptor.from_tensor(y, [bm, bn])

        def run(xd=xd, yd=yd, bm=bm, bn=bn, warps=warps) -> None:  # noqa: ANN001
            scale[(triton.cdiv(n, bm), triton.cdiv(n, bn))](xd, yd, BM=bm, BN=bn, num_warps=warps)

        try:
            run()
        except Exception as e:  # noqa: BLE001 - a box Triton refuses: say so, go on
            print(f"box {bm}x{bn} w{warps}: {type(e).__name__}: {str(e)[:160]}")
            continue
        ok = torch.equal(y, x * 2 + 1)
        ratios = []
        for _ in range(args.rounds):
            c = triton.testing.do_bench(lambda: dst.copy_(src), warmup=25, rep=200)
            ratios.append(c / triton.testing.do_bench(run, warmup=25, rep=200))
        print(f"box {bm}x{bn} w{warps}: {'ok' if ok else 'WRONG'} ratio {median_of_rounds(ratios):.3f} {[round(r, 3) for r in ratios]}")  # fmt: skip
    print("# clocks after:", smi())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
