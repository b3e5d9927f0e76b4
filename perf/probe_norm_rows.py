"""What a normalisation over long rows wants on the H200 (issue 27: ``rmsnorm_rows4`` and
``rmsnorm_warp_f16`` of tests/programs/membound_forms.co under auto run at 0.58-0.73 of a device copy
of the same bytes at 4096 x 16384, perf/RESULTS.md 2026-12-05; Inductor reaches about 1.0 there).

The generated form holds four (f32) or eight (f16) rows a program and reads them twice, the
statistics then the scaling; at 4096 x 16384 that is 256 KB a program, every program resident at
once, so the second read misses L2.  Hand-written here, ``y = x * rsqrt(mean(x^2) + eps) * w``
(f32 math), every choice a parameter:

* ``two_pass``: ``R`` rows a program, blocks of ``BLOCK`` columns, the second pass last block first;
* ``whole``: one row a program held whole in registers (one read);
* ``persistent``: ``k`` programs a SM, each taking rows ``pid, pid + grid, ...``, two passes a row;
* ``lanes``: the form lift/narrow.py generates (a ``[BJ, 1, LANES]`` tile of one row, or ``[BJ, LANES]``):
  at 4096 x 16384 f32 it ran at 0.878 as generated where ``whole`` ran at 0.984 (2026-12-05, H100).

Each is checked against float64 torch, then timed with ``do_bench`` (L2 flushed) against a device
copy of the same bytes in the same process; one JSON line each.  ``--inductor-code DIR`` also writes
the code ``torch.compile`` generates for the same norm and for a column mean, to see its choices.

    python3 perf/probe_norm_rows.py [--sizes 4096x16384,16384x4096] [--dtypes f32,f16] [--inductor-code DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

EPS = 1e-6


@triton.jit
def _two_pass(x_ptr, w_ptr, y_ptr, M, N, R: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * R + tl.arange(0, R)[:, None]
    base = rows.to(tl.int64) * N
    ss = tl.zeros([R, BLOCK], tl.float32)
    for c0 in range(0, N, BLOCK):
        c = c0 + tl.arange(0, BLOCK)[None, :]
        m = (rows < M) & (c < N)
        v = tl.load(x_ptr + base + c, mask=m, other=0.0).to(tl.float32)
        ss += v * v
    rr = tl.rsqrt(tl.sum(ss, axis=1) / N + 1e-6)[:, None]
    blocks = tl.cdiv(N, BLOCK)
    for b in range(0, blocks):
        c = (blocks - 1 - b) * BLOCK + tl.arange(0, BLOCK)[None, :]
        m = (rows < M) & (c < N)
        v = tl.load(x_ptr + base + c, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=c < N, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + c, (v * rr * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _whole(x_ptr, w_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    c = tl.arange(0, BLOCK)
    m = c < N
    v = tl.load(x_ptr + base + c, mask=m, other=0.0).to(tl.float32)
    rr = tl.rsqrt(tl.sum(v * v, axis=0) / N + 1e-6)
    w = tl.load(w_ptr + c, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + c, (v * rr * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _lanes(x_ptr, w_ptr, y_ptr, M, N, BJ: tl.constexpr, LANES: tl.constexpr, MID: tl.constexpr):
    """The generated form of a narrowed block (rmsnorm_rows4 under auto at one row a program): the row
    as a ``[BJ, MID, LANES]`` tile (element ``j * LANES + t``; ``MID`` 1 is the block's row axis kept at
    one row, 0 drops it: ``[BJ, LANES]``), folded over the lanes first."""
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    if MID == 0:
        c = tl.arange(0, BJ)[:, None] * LANES + tl.arange(0, LANES)[None, :]
        v = tl.load(x_ptr + base + c, mask=c < N, other=0.0).to(tl.float32)
        rr = tl.rsqrt(tl.sum(tl.sum(v * v, axis=1), axis=0) / N + 1e-6)
    else:
        c = (
            tl.arange(0, BJ)[:, None, None] * LANES
            + tl.arange(0, LANES)[None, None, :]
            + tl.zeros([1, MID, 1], tl.int32)
        )
        v = tl.load(x_ptr + base + c, mask=c < N, other=0.0).to(tl.float32)
        rr = tl.rsqrt(tl.sum(tl.sum(v * v, axis=2), axis=0) / N + 1e-6)[None, :, None]
    w = tl.load(w_ptr + c, mask=c < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + c, (v * rr * w).to(y_ptr.dtype.element_ty), mask=c < N)


@triton.jit
def _persistent(x_ptr, w_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        base = tl.cast(row, tl.int64) * N
        ss = tl.zeros([BLOCK], tl.float32)
        for c0 in range(0, N, BLOCK):
            c = c0 + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + base + c, mask=c < N, other=0.0).to(tl.float32)
            ss += v * v
        rr = tl.rsqrt(tl.sum(ss, axis=0) / N + 1e-6)
        blocks = tl.cdiv(N, BLOCK)
        for b in range(0, blocks):
            c = (blocks - 1 - b) * BLOCK + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + base + c, mask=c < N, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + c, mask=c < N, other=0.0).to(tl.float32)
            tl.store(y_ptr + base + c, (v * rr * w).to(y_ptr.dtype.element_ty), mask=c < N)


def variants(m: int, n: int, sms: int):
    """(name, choices, grid, kernel, constexprs, warps) of every configuration tried."""
    for r, block, warps in itertools.product((1, 4), (2048, 4096), (4, 8, 16)):
        if block <= n and r * block // (32 * warps) <= 128:
            yield "two_pass", {"rows": r, "block": block, "warps": warps}, (triton.cdiv(m, r),), _two_pass, {
                "R": r, "BLOCK": block}, warps  # fmt: skip
    whole = triton.next_power_of_2(n)
    for warps in (4, 8, 16, 32):
        if whole // (32 * warps) <= 128:
            yield "whole", {"block": whole, "warps": warps}, (m,), _whole, {"BLOCK": whole}, warps
    for mid, lanes, warps in itertools.product((0, 1), (32, 64), (4, 8, 16)):  # the generated form
        bj = triton.next_power_of_2(triton.cdiv(n, lanes))
        if bj * lanes // (32 * warps) <= 128:
            yield "lanes", {"mid": mid, "lanes": lanes, "warps": warps}, (m,), _lanes, {
                "BJ": bj, "LANES": lanes, "MID": mid}, warps  # fmt: skip
    for k, block, warps in itertools.product((1, 2, 4), (2048, 4096), (8, 16)):
        if block <= n and k * warps <= 64:
            yield "persistent", {"per_sm": k, "block": block, "warps": warps}, (min(m, k * sms),), _persistent, {
                "BLOCK": block}, warps  # fmt: skip


def rms_ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xd = x.double()
    return xd * torch.rsqrt(xd.pow(2).mean(1, keepdim=True) + EPS) * w.double()


def inductor_code(out: Path) -> None:
    """The kernels torch.compile writes for the same norm and for a column mean (its choices)."""
    from torch._inductor.utils import run_and_get_code

    out.mkdir(parents=True, exist_ok=True)
    cases = {
        "rmsnorm_f32_4096x16384": (torch.float32, 4096, 16384, "norm"),
        "rmsnorm_f16_4096x16384": (torch.float16, 4096, 16384, "norm"),
        "colmean_f16_16384x4096": (torch.float16, 16384, 4096, "cols"),
        "colmean_f16_4096x16384": (torch.float16, 4096, 16384, "cols"),
        "colsum_f32_16384x4096": (torch.float32, 16384, 4096, "cols"),
    }
    for name, (dtype, m, n, kind) in cases.items():
        x = torch.randn(m, n, device="cuda", dtype=dtype)
        w = torch.randn(n, device="cuda", dtype=dtype)
        if kind == "norm":

            def f(x, w):
                xf = x.float()
                return (xf * torch.rsqrt(xf.pow(2).mean(1, keepdim=True) + EPS) * w.float()).to(x.dtype)

            fn = torch.compile(f)
            _, codes = run_and_get_code(fn, x, w)
            t = triton.testing.do_bench(lambda fn=fn, x=x, w=w: fn(x, w), warmup=25, rep=100)
        else:
            fn = torch.compile(lambda x: (x.float().sum(0) / x.shape[0]).to(x.dtype))
            _, codes = run_and_get_code(fn, x)
            t = triton.testing.do_bench(lambda fn=fn, x=x: fn(x), warmup=25, rep=100)
        (out / f"{name}.py").write_text("\n\n# ----\n\n".join(codes))
        print(json.dumps({"inductor": name, "ms": round(t, 4)}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096x16384,16384x4096")
    ap.add_argument("--dtypes", default="f32,f16")
    ap.add_argument("--inductor-code", type=Path, default=None)
    args = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for size, dt in itertools.product(args.sizes.split(","), args.dtypes.split(",")):
        m, n = (int(v) for v in size.split("x"))
        dtype = torch.float16 if dt == "f16" else torch.float32
        x = torch.randn(m, n, device="cuda", dtype=dtype)
        w = torch.randn(n, device="cuda", dtype=dtype)
        ref = rms_ref(x, w)
        tol = 2e-5 if dtype == torch.float32 else 4e-3
        src = torch.empty(m * n * x.element_size(), dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        copy = triton.testing.do_bench(lambda d=dst, c=src: d.copy_(c), warmup=25, rep=100)
        eager = triton.testing.do_bench(
            lambda x=x, w=w, n=n: torch.nn.functional.rms_norm(x, (n,), w, EPS), warmup=25, rep=100
        )
        print(json.dumps({"size": size, "dtype": dt, "form": "F.rms_norm", "ms": round(eager, 4),
                          "of_roofline": round(copy / eager, 3)}), flush=True)  # fmt: skip
        for form, choices, grid, kernel, consts, warps in variants(m, n, sms):
            y = torch.full_like(x, float("nan"))

            def run(kernel=kernel, grid=grid, x=x, w=w, y=y, m=m, n=n, consts=consts, warps=warps):
                kernel[grid](x, w, y, m, n, **consts, num_warps=warps)

            try:
                run()
                torch.cuda.synchronize()
            except Exception as exc:  # a configuration Triton refuses: recorded, the sweep goes on
                print(json.dumps({"size": size, "dtype": dt, "form": form, **choices, "error": str(exc)[:200]}))
                continue
            err = float(((y.double() - ref).abs() / (1 + ref.abs())).nan_to_num(float("inf")).max())
            t = triton.testing.do_bench(run, warmup=25, rep=100)
            print(json.dumps({"size": size, "dtype": dt, "form": form, **choices, "ms": round(t, 4),
                              "of_roofline": round(copy / t, 3), "err": err, "ok": err < tol}), flush=True)  # fmt: skip
    if args.inductor_code is not None:
        inductor_code(args.inductor_code)


if __name__ == "__main__":
    main()
