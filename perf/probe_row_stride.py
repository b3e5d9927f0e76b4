"""Does a tiled copy care about its row stride?  A hand-written 64 x 128 f16 tile kernel (the
structure of a widened copy: unmasked interior, masked rest), with and without
``tl.multiple_of(stride, 8)`` hints on the row strides, over tensors whose row strides are, in
bytes, 16 mod 128 (8136, 8200 elements), a multiple of 128 (8064, 8192), and an 8136-wide view of
8192-wide rows; against a device copy of the same bytes, paired round by round.

    python3 perf/probe_row_stride.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import median_of_rounds, smi  # noqa: E402

SHAPES = {"8000x8136": (8192 - 192, 8136, 8136), "8000x8192 viewed 8136 wide": (8000, 8192, 8136),
          "8000x8192": (8000, 8192, 8192), "8000x8200": (8000, 8200, 8200), "8000x8064": (8000, 8064, 8064)}  # fmt: skip


def kernel():  # noqa: ANN201
    import triton
    import triton.language as tl

    @triton.jit
    def scale(x, y, M, N, sx, sy, BM: tl.constexpr, BN: tl.constexpr, HINT: tl.constexpr):
        if HINT:
            sx = tl.multiple_of(sx, 8)
            sy = tl.multiple_of(sy, 8)
        bm = tl.program_id(0)
        bn = tl.program_id(1)
        om = bm * BM + tl.arange(0, BM)[:, None]
        on = bn * BN + tl.arange(0, BN)[None, :]
        if (bm * BM + BM - 1 < M) & (bn * BN + BN - 1 < N):
            tl.store(y + om * sy + on, tl.load(x + om * sx + on) * 2.0 + 1.0)
        else:
            m = (om < M) & (on < N)
            tl.store(y + om * sy + on, tl.load(x + om * sx + on, mask=m) * 2.0 + 1.0, mask=m)

    return scale


def probe(label: str, m: int, n: int, width: int, hint: bool, rounds: int) -> None:
    import torch
    import triton

    scale = kernel()
    x = torch.randn(m, n, device="cuda").half()[:, :width]
    y = torch.empty(m, n, device="cuda").half()[:, :width]
    src = torch.empty(2 * m * width, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)

    def run() -> None:
        grid = (triton.cdiv(m, 64), triton.cdiv(width, 128))
        scale[grid](x, y, m, width, x.stride(0), y.stride(0), BM=64, BN=128, HINT=hint, num_warps=4)

    run()
    ok = torch.equal(y, x * 2 + 1)
    ratios = []
    for _ in range(rounds):
        c = triton.testing.do_bench(lambda: dst.copy_(src), warmup=25, rep=200)
        ratios.append(c / triton.testing.do_bench(run, warmup=25, rep=200))
    print(f"{label:28s} hint={hint!s:5s} {'ok' if ok else 'WRONG'} ratio {median_of_rounds(ratios):.3f} {[round(r, 3) for r in ratios]}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print("# clocks before:", smi())
    for label, (m, n, width) in SHAPES.items():
        for hint in (False, True):
            probe(label, m, n, width, hint, args.rounds)
    print("# clocks after:", smi())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
