"""What a column reduction written one thread per column walking every row wants on the H200
(issue 27: ``col_sums_walk`` / ``col_means_f16`` of tests/programs/membound_forms.co under auto ran at
0.30-0.65 of a device copy of the same bytes, perf/RESULTS.md 2026-12-04).

The generated form: programs of ``COLS`` columns, each folding a chunk of the rows in blocks of
``ROWS`` element-wise into a ``[ROWS, COLS]`` tile reduced once, its partial stored; a second kernel
adds the partials.  Hand-written here with every choice a parameter: the columns a program, the rows
a block, the splits of the rows (programs per SM), the warps.  Each configuration is timed with
``do_bench`` (L2 flushed) paired with a device copy of the same bytes; one JSON line each.

    python3 perf/probe_columns.py [--sizes 16384x4096,4096x16384] [--dtypes f32,f16]
"""

from __future__ import annotations

import argparse
import itertools
import json

import torch
import triton
import triton.language as tl


@triton.jit
def _partial(x_ptr, p_ptr, M, N, CHUNK, COLS: tl.constexpr, ROWS: tl.constexpr):
    pc = tl.program_id(0)
    sp = tl.program_id(1)
    c = pc * COLS + tl.arange(0, COLS)[None, :]
    acc = tl.zeros([ROWS, COLS], tl.float32)
    stop = tl.minimum(M, sp * CHUNK + CHUNK)
    for r0 in range(sp * CHUNK, stop, ROWS):
        r = r0 + tl.arange(0, ROWS)[:, None]
        m = (r < stop) & (c < N)
        acc += tl.load(x_ptr + r.to(tl.int64) * N + c, mask=m, other=0.0).to(tl.float32)
    out = tl.sum(acc, axis=0)
    tl.store(p_ptr + sp * N + pc * COLS + tl.arange(0, COLS), out, mask=pc * COLS + tl.arange(0, COLS) < N)


@triton.jit
def _combine(p_ptr, s_ptr, N, SPLITS, BLOCK_S: tl.constexpr, COLS: tl.constexpr):
    pc = tl.program_id(0)
    c = pc * COLS + tl.arange(0, COLS)[None, :]
    k = tl.arange(0, BLOCK_S)[:, None]
    v = tl.load(p_ptr + k * N + c, mask=(k < SPLITS) & (c < N), other=0.0)
    tl.store(s_ptr + pc * COLS + tl.arange(0, COLS), tl.sum(v, axis=0), mask=pc * COLS + tl.arange(0, COLS) < N)


@triton.jit
def _atomic(x_ptr, s_ptr, M, N, COLS: tl.constexpr, ROWS: tl.constexpr, SPAN: tl.constexpr):
    """cols.co's form: a program of SPAN rows and COLS columns adds its partial sums atomically."""
    pr = tl.program_id(0)
    pc = tl.program_id(1)
    c = pc * COLS + tl.arange(0, COLS)[None, :]
    acc = tl.zeros([ROWS, COLS], tl.float32)
    for r0 in range(0, SPAN, ROWS):
        r = pr * SPAN + r0 + tl.arange(0, ROWS)[:, None]
        acc += tl.load(x_ptr + r.to(tl.int64) * N + c, mask=(r < M) & (c < N), other=0.0).to(tl.float32)
    cs = pc * COLS + tl.arange(0, COLS)
    tl.atomic_add(s_ptr + cs, tl.sum(acc, axis=0), mask=cs < N)


def atomics(x: torch.Tensor, copy: float, size: str, dt: str) -> None:
    m, n = x.shape
    ref = x.double().sum(0)
    s = torch.zeros(n, device="cuda")
    for rows_bytes, warps in itertools.product((4096, 8192, 16384, 32768), (4, 8)):
        rows = min(256, max(1, rows_bytes // (128 * x.element_size())))

        def run(rows: int = rows, warps: int = warps) -> None:
            s.zero_()
            _atomic[(triton.cdiv(m, 256), triton.cdiv(n, 128))](x, s, m, n, COLS=128, ROWS=rows, SPAN=256,
                                                                 num_warps=warps)  # fmt: skip

        run()
        torch.cuda.synchronize()
        err = float((s.double() - ref).abs().max() / ref.abs().max())
        t = triton.testing.do_bench(run, warmup=25, rep=100)
        z = triton.testing.do_bench(s.zero_, warmup=25, rep=100)  # the zeroing inside run, taken out
        print(json.dumps({"size": size, "dtype": dt, "form": "atomics", "rows": rows, "warps": warps,
                          "ms": round(t - z, 4), "of_roofline": round(copy / (t - z), 3), "rel_err": err}), flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16384x4096,4096x16384")
    ap.add_argument("--dtypes", default="f32,f16")
    args = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for size, dt in itertools.product(args.sizes.split(","), args.dtypes.split(",")):
        m, n = (int(v) for v in size.split("x"))
        dtype = torch.float16 if dt == "f16" else torch.float32
        x = torch.randn(m, n, device="cuda", dtype=dtype)
        ref = x.double().sum(0)
        src = torch.empty(m * n * x.element_size() // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        copy = triton.testing.do_bench(lambda d=dst, c=src: d.copy_(c), warmup=25, rep=100)
        atomics(x, copy, size, dt)
        for cols, rows_bytes, waves, warps in itertools.product(
            (64, 128, 256), (8192, 16384, 32768), (2, 4, 8), (4, 8)
        ):
            rows = max(1, rows_bytes // (cols * x.element_size()))
            programs = triton.cdiv(n, cols)
            splits = max(1, min(triton.cdiv(waves * sms, programs), triton.cdiv(m, 256)))
            chunk = triton.cdiv(triton.cdiv(m, splits), rows) * rows
            part = torch.empty(splits * n, device="cuda")
            s = torch.full((n,), float("nan"), device="cuda")
            block_s = triton.next_power_of_2(splits)

            def run(x=x, m=m, n=n, cols=cols, rows=rows, splits=splits, chunk=chunk, part=part, s=s, warps=warps,
                    bs=block_s):  # fmt: skip
                _partial[(triton.cdiv(n, cols), splits)](x, part, m, n, chunk, COLS=cols, ROWS=rows, num_warps=warps)
                _combine[(triton.cdiv(n, cols),)](part, s, n, splits, BLOCK_S=bs, COLS=cols, num_warps=4)

            run()
            torch.cuda.synchronize()
            err = float((s.double() - ref).abs().max() / ref.abs().max())
            t = triton.testing.do_bench(run, warmup=25, rep=100)
            print(json.dumps({"size": size, "dtype": dt, "cols": cols, "rows": rows, "waves": waves, "splits": splits,
                              "warps": warps, "ms": round(t, 4), "of_roofline": round(copy / t, 3),
                              "rel_err": err}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
