"""Which Triton 3.6 GEMM structure is fastest on this GPU: the experiment behind ``--schedule auto``.

    python3 perf/gemm_probe.py [--shapes 8192,4096,4000] [--only NAME,...]

Hand-written kernels in exactly the form the translator emits for ``C[M, N] = A[M, K] @ B[N, K]^T``
(host tensor descriptors, zero padding, ``tl.dot(a, b.T)`` with an f32 accumulator), varied one
choice at a time: tile sizes, stages, warps, a persistent grid (one program per SM, grouped tile
order, ``flatten=True``), epilogue subtiling, warp specialisation.  Each variant is checked against
torch, then timed against ``torch.matmul`` (cuBLAS) interleaved in the same process (median of
``triton.testing.do_bench`` over three rounds).  Prints one line per variant and shape.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _tile_of(t, num_m, num_n, GROUP_M: tl.constexpr):
    group = GROUP_M * num_n
    first = (t // group) * GROUP_M
    gsize = tl.minimum(num_m - first, GROUP_M)
    return first + (t % group) % gsize, (t % group) // gsize


@triton.jit
def gemm_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    STAGES: tl.constexpr,
    PERSISTENT: tl.constexpr,
    FLATTEN: tl.constexpr,
    SUBTILE: tl.constexpr,
    WS: tl.constexpr,
    NUM_SMS: tl.constexpr,
    c_ptr=None,
    MASKED: tl.constexpr = False,
):
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    if PERSISTENT:
        start = tl.program_id(0)
        step = NUM_SMS
        total = num_m * num_n
    else:
        start = tl.program_id(0)
        step = 1
        total = start + 1
    for t in tl.range(start, total, step, flatten=FLATTEN, warp_specialize=WS):
        pm, pn = _tile_of(t, num_m, num_n, GROUP_M)
        acc = tl.zeros([BM, BN], tl.float32)
        for k in tl.range(0, k_tiles, num_stages=STAGES):
            a = a_desc.load([pm * BM, k * BK])
            b = b_desc.load([pn * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        if MASKED:  # a masked pointer store of the f32 tile (what lifted thread-level kernels emit)
            rows = pm * BM + tl.arange(0, BM)[:, None]
            cols = pn * BN + tl.arange(0, BN)[None, :]
            tl.store(c_ptr + rows * N + cols, acc, mask=(rows < M) & (cols < N))
        elif SUBTILE:
            acc2 = tl.reshape(acc, (BM, 2, BN // 2))
            acc2 = tl.permute(acc2, (0, 2, 1))
            c0, c1 = tl.split(acc2)
            c_desc.store([pm * BM, pn * BN], c0.to(tl.float16))
            c_desc.store([pm * BM, pn * BN + BN // 2], c1.to(tl.float16))
        else:
            c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


def run(a, b, c, cfg, sms):
    BM, BN, BK, stages, warps, persistent, flatten, subtile, ws, *masked = cfg
    M, K = a.shape
    N = b.shape[0]
    ad = TensorDescriptor.from_tensor(a, [BM, BK])
    bd = TensorDescriptor.from_tensor(b, [BN, BK])
    cd = TensorDescriptor.from_tensor(c, [BM, BN // 2 if subtile else BN])
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = (min(sms, tiles),) if persistent else (tiles,)
    gemm_kernel[grid](
        ad,
        bd,
        cd,
        M,
        N,
        K,
        BM,
        BN,
        BK,
        8,
        stages,
        persistent,
        flatten,
        subtile,
        ws,
        sms,
        c,
        bool(masked),
        num_warps=warps,
    )


VARIANTS = {
    # name: (BM, BN, BK, stages, warps, persistent, flatten, subtile, ws)
    "128x128x64 s4 w8": (128, 128, 64, 4, 8, False, False, False, False),
    "128x256x64 s3 w8": (128, 256, 64, 3, 8, False, False, False, False),
    "128x256x64 s4 w8": (128, 256, 64, 4, 8, False, False, False, False),
    "256x128x64 s3 w8": (256, 128, 64, 3, 8, False, False, False, False),
    "P 128x256x64 s3 w8": (128, 256, 64, 3, 8, True, False, False, False),
    "P 128x256x64 s3 w8 sub": (128, 256, 64, 3, 8, True, False, True, False),
    "PF 128x256x64 s3 w8": (128, 256, 64, 3, 8, True, True, False, False),
    "PF 128x256x64 s3 w8 sub": (128, 256, 64, 3, 8, True, True, True, False),
    "PF 128x256x64 s4 w8 sub": (128, 256, 64, 4, 8, True, True, True, False),
    "PF 128x128x64 s4 w8 sub": (128, 128, 64, 4, 8, True, True, True, False),
    "PF 128x128x64 s4 w4": (128, 128, 64, 4, 4, True, True, False, False),
    "PW 128x128x64 s4 w4": (128, 128, 64, 4, 4, True, True, False, True),
    "PW 128x256x64 s3 w8": (128, 256, 64, 3, 8, True, True, False, True),
    "128x256x64 s3 w8 masked": (128, 256, 64, 3, 8, False, False, False, False, True),
    "128x128x64 s4 w8 masked": (128, 128, 64, 4, 8, False, False, False, False, True),
}


def compare(fns: dict[str, Callable[..., None]], shapes: list[int], rounds: int = 3) -> None:
    """Check each ``fn(a, b, c)`` (c = a @ b.T) against torch on random fp16 inputs, then time them
    and ``torch.matmul`` interleaved (median of ``do_bench`` over ``rounds``) and print the ratios."""
    for n in shapes:
        torch.manual_seed(n)
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        ref = torch.matmul(a, b.T)
        ok = {}
        for name, fn in fns.items():
            c = torch.full_like(ref, float("nan"))
            try:
                fn(a, b, c)
                torch.cuda.synchronize()
                err = (c.float() - ref.float()).abs().max().item()
                ok[name] = err < 0.5
                if not ok[name]:
                    print(f"{n} {name}: WRONG max err {err}")
            except Exception as e:  # noqa: BLE001
                print(f"{n} {name}: FAILED {type(e).__name__}: {str(e)[:200]}")
        times: dict[str, list[float]] = {"cuBLAS": []}
        for _ in range(rounds):
            times["cuBLAS"].append(triton.testing.do_bench(lambda a=a, b=b: torch.matmul(a, b.T), warmup=25, rep=200))
            for name, fn in fns.items():
                if ok.get(name):
                    c = torch.empty_like(ref)
                    ms = triton.testing.do_bench(lambda a=a, b=b, c=c, fn=fn: fn(a, b, c), warmup=25, rep=200)
                    times.setdefault(name, []).append(ms)
        base = sorted(times["cuBLAS"])[len(times["cuBLAS"]) // 2]
        for name, ts in times.items():
            med = sorted(ts)[len(ts) // 2]
            tf = 2 * n**3 / med / 1e9
            print(
                f"{n:5d} {name:36s} {med:8.4f} ms {tf:7.1f} TFLOP/s ratio {base / med:.3f} raw {[round(t, 4) for t in ts]}"
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192,4096,4000")
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    names = [n for n in VARIANTS if not args.only or any(o in n for o in args.only.split(","))]
    fns = {name: (lambda a, b, c, cfg=VARIANTS[name]: run(a, b, c, cfg, sms)) for name in names}
    compare(fns, [int(s) for s in args.shapes.split(",")], args.rounds)


if __name__ == "__main__":
    main()
