"""Why rows of 16384 f16 held whole over two folds run at 0.60-0.76 of the roofline on the H200 (issue 27;
perf/RESULTS.md 2026-12-07 12:57: layernorm f16 0.600, softmax f16 0.760 at 4096 x 16384 under auto, where
the H100 measured 0.964 / 0.978 and RMSNorm, one fold, runs at 0.949 on the same H200).

The generated kernel holds a row a program in registers (``BLOCK_J`` = 16384, 16 warps): compiled for
sm_90a it takes 128 registers a thread, the whole register file of a SM for one program, so a SM runs one
row at a time and its loads, two dependent reductions and stores do not overlap.  Hand-written here, each
a choice that changes that (``KIND`` 0: LayerNorm ``(x - mean) * rstd * w + b``, 1: softmax; f32 math):

* ``gen``: the translated kernel itself (tests/programs/rows.co under auto), at its own and other warps,
  and through its launcher (``auto``: what users get);
* ``whole``: a row a program in registers, ``warps`` 8 / 16 / 32;
* ``pers``: persistent, ``per_sm`` programs a SM, each walking rows ``pid, pid + grid, ...`` in a
  ``tl.range(num_stages=S)`` loop so the next row's load may overlap this row's folds;
* ``blocks``: one pass over the row in blocks for both statistics (sum and sum of squares; running max
  and rescaled sum), then the write pass re-reading the row last block first (from L2).

Every variant is checked against float64 torch on random data with a NaN-poisoned output, then timed with
``do_bench`` (L2 flushed) paired with a device copy of the same bytes (``x`` in, ``y`` out) timed just
before it; one JSON line each, with ``of_roofline`` = copy / variant.

    python3 perf/probe_long_rows.py [--sizes 4096x16384,16384x4096] [--kinds layernorm,softmax]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

EPS = 1e-5
REPO = Path(__file__).resolve().parent.parent


@triton.jit
def _fold_write(v, c, m, base, w_ptr, b_ptr, y_ptr, N, KIND: tl.constexpr):
    """Both folds of a row ``v`` held whole (``c`` its columns, ``m`` their mask), then its write."""
    if KIND == 0:
        mean = tl.sum(v, axis=0) / N
        d = tl.where(m, v - mean, 0.0)
        rstd = tl.rsqrt(tl.sum(d * d, axis=0) / N + 1e-5)
        w = tl.load(w_ptr + c, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=m, other=0.0).to(tl.float32)
        out = d * rstd * w + b
    else:
        mx = tl.max(tl.where(m, v, float("-inf")), axis=0)
        e = tl.exp(v - mx)
        out = e / tl.sum(tl.where(m, e, 0.0), axis=0)
    tl.store(y_ptr + base + c, out.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _whole(x_ptr, w_ptr, b_ptr, y_ptr, M, N, BLOCK: tl.constexpr, KIND: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    c = tl.arange(0, BLOCK)
    m = c < N
    v = tl.load(x_ptr + base + c, mask=m, other=0.0).to(tl.float32)
    _fold_write(v, c, m, base, w_ptr, b_ptr, y_ptr, N, KIND)


@triton.jit
def _pers(x_ptr, w_ptr, b_ptr, y_ptr, M, N, BLOCK: tl.constexpr, KIND: tl.constexpr, STAGES: tl.constexpr):
    c = tl.arange(0, BLOCK)
    m = c < N
    for row in tl.range(tl.program_id(0), M, tl.num_programs(0), num_stages=STAGES):
        base = tl.cast(row, tl.int64) * N
        v = tl.load(x_ptr + base + c, mask=m, other=0.0).to(tl.float32)
        _fold_write(v, c, m, base, w_ptr, b_ptr, y_ptr, N, KIND)


@triton.jit
def _blocks(x_ptr, w_ptr, b_ptr, y_ptr, M, N, BLOCK: tl.constexpr, KIND: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * N
    a = tl.zeros([BLOCK], tl.float32)  # sum, or the running maximum
    q = tl.zeros([BLOCK], tl.float32)  # sum of squares, or the rescaled sum
    if KIND == 1:
        a = tl.full([BLOCK], float("-inf"), tl.float32)
    for c0 in tl.range(0, N, BLOCK, num_stages=3):
        c = c0 + tl.arange(0, BLOCK)
        m = c < N
        v = tl.load(x_ptr + base + c, mask=m, other=0.0).to(tl.float32)
        if KIND == 0:
            a += v
            q += v * v
        else:
            v = tl.where(m, v, float("-inf"))
            na = tl.maximum(a, v)
            q = q * tl.exp(a - na) + tl.where(m, tl.exp(v - na), 0.0)
            a = na
    if KIND == 0:
        mean = tl.sum(a, axis=0) / N
        rstd = tl.rsqrt(tl.maximum(tl.sum(q, axis=0) / N - mean * mean, 0.0) + 1e-5)
    else:
        mx = tl.max(a, axis=0)
        s = tl.sum(q * tl.exp(a - mx), axis=0)
    blocks = tl.cdiv(N, BLOCK)
    for i in tl.range(0, blocks, num_stages=3):
        c = (blocks - 1 - i) * BLOCK + tl.arange(0, BLOCK)
        m = c < N
        v = tl.load(x_ptr + base + c, mask=m, other=0.0).to(tl.float32)
        if KIND == 0:
            w = tl.load(w_ptr + c, mask=m, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + c, mask=m, other=0.0).to(tl.float32)
            out = (v - mean) * rstd * w + b
        else:
            out = tl.exp(v - mx) / s
        tl.store(y_ptr + base + c, out.to(y_ptr.dtype.element_ty), mask=m)


def _generated() -> Any:
    """tests/programs/rows.co translated under auto, imported (the kernels ``gen`` times)."""
    out = Path(tempfile.mkdtemp()) / "rows_auto.py"
    subprocess.run(
        [sys.executable, "-m", "croq2triton", "translate", str(REPO / "tests/programs/rows.co"), "--schedule", "auto",
         "-o", str(out)],
        check=True, cwd=REPO,
    )  # fmt: skip
    spec = importlib.util.spec_from_file_location("rows_auto", out)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def variants(kind: int, m: int, n: int, sms: int, gen: Any, x: Any, w: Any, b: Any, y: Any):
    """(name, choices, run) of every configuration tried; ``run()`` launches it once."""
    whole = triton.next_power_of_2(n)
    name = "layernorm" if kind == 0 else "softmax_f16" if x.dtype == torch.float16 else "softmax"
    launcher = getattr(gen, name)
    if kind == 0:
        yield "auto", {}, lambda: launcher(x, w, b, y)
        k0 = gen.layernorm_k0
        args = (m, n, x, n, 1, y, n, 1, w, 1, b, 1)
    else:
        yield "auto", {}, lambda: launcher(x, y)
        k0 = getattr(gen, f"{name}_k0")
        args = (m, n, x, n, 1, y, n, 1)
    for warps in (8, 16, 32):
        yield "gen", {"warps": warps}, lambda warps=warps: k0[(m,)](*args, BLOCK_J=whole, num_warps=warps)
    for warps in (8, 16, 32):
        if whole // (32 * warps) <= 128:
            yield (
                "whole",
                {"warps": warps},
                lambda warps=warps: _whole[(m,)](x, w, b, y, m, n, BLOCK=whole, KIND=kind, num_warps=warps),
            )
    for per_sm, stages, warps in itertools.product((1, 2), (1, 2, 3), (8, 16)):
        if per_sm * warps > 32 or whole // (32 * warps) > 128:
            continue
        grid = (min(m, per_sm * sms),)
        yield (
            "pers",
            {"per_sm": per_sm, "stages": stages, "warps": warps},
            lambda g=grid, s=stages, wp=warps: _pers[g](
                x, w, b, y, m, n, BLOCK=whole, KIND=kind, STAGES=s, num_warps=wp
            ),
        )
    for block, warps in itertools.product((2048, 4096, 8192), (4, 8, 16)):
        if block <= whole and block // (32 * warps) <= 64:
            yield (
                "blocks",
                {"block": block, "warps": warps},
                lambda bl=block, wp=warps: _blocks[(m,)](x, w, b, y, m, n, BLOCK=bl, KIND=kind, num_warps=wp),
            )


def reference(kind: int, x: Any, w: Any, b: Any) -> Any:
    xd = x.double()
    if kind == 0:
        return torch.nn.functional.layer_norm(xd, (x.shape[1],), w.double(), b.double(), EPS)
    return torch.softmax(xd, dim=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096x16384,16384x4096")
    ap.add_argument("--kinds", default="layernorm,softmax")
    ap.add_argument("--dtypes", default="f16")
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    print(json.dumps({"device": props.name, "sms": sms, "triton": triton.__version__}), flush=True)
    gen = _generated()
    for size, kname, dt in itertools.product(args.sizes.split(","), args.kinds.split(","), args.dtypes.split(",")):
        m, n = (int(v) for v in size.split("x"))
        kind = 0 if kname == "layernorm" else 1
        dtype = torch.float16 if dt == "f16" else torch.float32
        x = torch.randn(m, n, device="cuda", dtype=dtype)
        w = torch.randn(n, device="cuda", dtype=dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        ref = reference(kind, x, w, b)
        tol = 2e-5 if dtype == torch.float32 else 8e-3
        src = torch.empty(m * n * x.element_size(), dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        for form, choices, run in variants(kind, m, n, sms, gen, x, w, b, y):
            y.fill_(float("nan"))
            try:
                run()
                torch.cuda.synchronize()
            except Exception as exc:  # a configuration Triton refuses: recorded, the sweep goes on
                print(json.dumps({"size": size, "kind": kname, "form": form, **choices, "error": str(exc)[:200]}))
                continue
            err = float(((y.double() - ref).abs() / (1 + ref.abs())).nan_to_num(float("inf")).max())
            copies, times = [], []
            for _ in range(3):  # paired round by round: the copy, then the variant
                copies.append(triton.testing.do_bench(lambda d=dst, c=src: d.copy_(c), warmup=10, rep=40))
                times.append(triton.testing.do_bench(run, warmup=10, rep=40))
            copy, t = sorted(copies)[1], sorted(times)[1]
            print(json.dumps({"size": size, "kind": kname, "dtype": dt, "form": form, **choices, "ms": round(t, 4),
                              "copy_ms": round(copy, 4), "of_roofline": round(copy / t, 3), "err": err,
                              "ok": err < tol}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
