"""What a read-only fold of 16-bit data wants on a Hopper GPU (issue 27): row sums and column sums of f16
(f32 sums), the two named kernels still below 0.9 of the roofline on the H200 (perf/RESULTS.md 2026-12-07
12:57: row sums f16 0.876 / 0.869, column sums f16 with atomic partial sums 0.783 / 0.778).

Hand-written here, each a choice the generated kernel could make (the translated kernel itself, through its
launcher, is ``auto``):

* row sums: ``whole`` (``R`` rows a program, each row whole in registers, one ``tl.sum``), ``blocks`` (``R`` rows a
  program walking the row in blocks, the fold either element-wise into a tile reduced once after the loop,
  ``acc=tile``, or reduced every block, ``acc=sum`` as generated), ``pers`` (persistent: ``per_sm`` programs a SM,
  each taking rows ``pid, pid + grid, ..`` in a ``tl.range(num_stages=S)`` loop);
* column sums: ``split`` (a ``[BR, BN]`` tile of rows walked down a chunk of the rows, ``S`` chunks a column block
  so that the grid has ``waves`` programs a SM, folded element-wise and reduced once, then one ``tl.atomic_add``
  of the block's partial sums, the source's own meaning).

Every variant is checked against float64 torch on random data (a NaN-poisoned output for row sums, zeros
for the atomics), then timed with ``do_bench`` (L2 flushed) paired round by round with a device copy of the
same bytes (the tensor read, the sums written); one JSON line each, ``of_roofline`` = copy / variant.

    python3 perf/probe_read_rows.py [--sizes 16384x4096,4096x16384] [--kinds rows,cols]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

REPO = Path(__file__).resolve().parent.parent


@triton.jit
def _rows_whole(x_ptr, s_ptr, M, N, R: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * R + tl.arange(0, R)[:, None]
    c = tl.arange(0, BLOCK)[None, :]
    m = (r < M) & (c < N)
    v = tl.load(x_ptr + r.to(tl.int64) * N + c, mask=m, other=0.0).to(tl.float32)
    tl.store(
        s_ptr + tl.program_id(0) * R + tl.arange(0, R),
        tl.sum(v, axis=1),
        mask=tl.program_id(0) * R + tl.arange(0, R) < M,
    )


@triton.jit
def _rows_blocks(x_ptr, s_ptr, M, N, R: tl.constexpr, BLOCK: tl.constexpr, TILE: tl.constexpr, STAGES: tl.constexpr):
    rows = tl.program_id(0) * R + tl.arange(0, R)
    r = rows[:, None]
    base = r.to(tl.int64) * N
    tile = tl.zeros([R, BLOCK], tl.float32)
    acc = tl.zeros([R], tl.float32)
    for c0 in tl.range(0, N, BLOCK, num_stages=STAGES):
        c = c0 + tl.arange(0, BLOCK)[None, :]
        m = (r < M) & (c < N)
        v = tl.load(x_ptr + base + c, mask=m, other=0.0).to(tl.float32)
        if TILE:
            tile += v
        else:
            acc += tl.sum(v, axis=1)
    if TILE:
        acc = tl.sum(tile, axis=1)
    tl.store(s_ptr + rows, acc, mask=rows < M)


@triton.jit
def _rows_pers(x_ptr, s_ptr, M, N, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    c = tl.arange(0, BLOCK)
    m = c < N
    for row in tl.range(tl.program_id(0), M, tl.num_programs(0), num_stages=STAGES):
        v = tl.load(x_ptr + tl.cast(row, tl.int64) * N + c, mask=m, other=0.0).to(tl.float32)
        tl.store(s_ptr + row, tl.sum(v, axis=0))


@triton.jit
def _cols_split(x_ptr, s_ptr, M, N, CHUNK, BR: tl.constexpr, BN: tl.constexpr, STAGES: tl.constexpr):
    c = tl.program_id(0) * BN + tl.arange(0, BN)[None, :]
    start = tl.program_id(1) * CHUNK
    tile = tl.zeros([BR, BN], tl.float32)
    for r0 in tl.range(start, tl.minimum(M, start + CHUNK), BR, num_stages=STAGES):
        r = r0 + tl.arange(0, BR)[:, None]
        m = (r < M) & (r < start + CHUNK) & (c < N)
        tile += tl.load(x_ptr + r.to(tl.int64) * N + c, mask=m, other=0.0).to(tl.float32)
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    tl.atomic_add(s_ptr + cols, tl.sum(tile, axis=0), mask=cols < N)


@triton.jit
def _rows_tma(x_desc, s_ptr, M, N, R: tl.constexpr, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    rows = tl.program_id(0) * R + tl.arange(0, R)
    tile = tl.zeros([R, BLOCK], tl.float32)
    for c0 in tl.range(0, N, BLOCK, num_stages=STAGES):
        tile += x_desc.load([tl.program_id(0) * R, c0]).to(tl.float32)  # (zeros past the tensor)
    tl.store(s_ptr + rows, tl.sum(tile, axis=1), mask=rows < M)


@triton.jit
def _cols_tma(x_desc, s_ptr, M, N, CHUNK, BR: tl.constexpr, BN: tl.constexpr, STAGES: tl.constexpr):
    start = tl.program_id(1) * CHUNK
    tile = tl.zeros([BR, BN], tl.float32)
    for r0 in tl.range(start, tl.minimum(M, start + CHUNK), BR, num_stages=STAGES):
        tile += x_desc.load([r0, tl.program_id(0) * BN]).to(tl.float32)  # (CHUNK a multiple of BR)
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    tl.atomic_add(s_ptr + cols, tl.sum(tile, axis=0), mask=cols < N)


def _generated(name: str) -> Any:
    """``tests/programs/<name>.co`` translated under auto, imported."""
    out = Path(tempfile.mkdtemp()) / f"{name}_auto.py"
    subprocess.run(
        [sys.executable, "-m", "croq2triton", "translate", str(REPO / f"tests/programs/{name}.co"), "--schedule",
         "auto", "-o", str(out)],
        check=True, cwd=REPO,
    )  # fmt: skip
    spec = importlib.util.spec_from_file_location(f"{name}_auto", out)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


Variant = tuple[str, dict[str, int], Callable[[], Any]]


def row_variants(m: int, n: int, sms: int, gen: Any, x: Any, s: Any) -> Iterator[Variant]:
    whole = triton.next_power_of_2(n)
    yield "auto", {}, lambda: gen.row_sums_f16(x, s)
    for rows, warps in itertools.product((1, 2, 4, 8), (2, 4, 8, 16)):
        per_thread = rows * whole // (32 * warps)
        if 8 <= per_thread <= 64:
            yield (
                "whole",
                {"R": rows, "warps": warps},
                lambda r=rows, w=warps: _rows_whole[(triton.cdiv(m, r),)](x, s, m, n, R=r, BLOCK=whole, num_warps=w),
            )
    for rows, block, tile, stages, warps in itertools.product((1, 2), (2048, 4096), (0, 1), (3,), (4, 8)):
        per_thread = rows * block // (32 * warps)
        if block < whole and 8 <= per_thread <= 32:
            yield (
                "blocks",
                {"R": rows, "block": block, "tile": tile, "stages": stages, "warps": warps},
                lambda r=rows, b=block, t=tile, st=stages, w=warps: _rows_blocks[(triton.cdiv(m, r),)](
                    x, s, m, n, R=r, BLOCK=b, TILE=t, STAGES=st, num_warps=w
                ),
            )
    for rows, stages, warps in itertools.product((8, 16, 32), (3, 4), (4, 8)):  # (a box holds 256 a side)
        block = 256
        if 8 <= rows * block // (32 * warps) <= 64:
            desc = TensorDescriptor.from_tensor(x, [rows, block])  # (made once: its host time stays out)
            yield (
                "tma",
                {"R": rows, "block": block, "stages": stages, "warps": warps},
                lambda d=desc, r=rows, b=block, st=stages, w=warps: _rows_tma[(triton.cdiv(m, r),)](
                    d, s, m, n, R=r, BLOCK=b, STAGES=st, num_warps=w
                ),
            )
    for per_sm, stages, warps in itertools.product((2, 4), (3,), (4, 8)):
        if whole // (32 * warps) <= 64 and per_sm * warps <= 64:
            grid = min(m, per_sm * sms)
            yield (
                "pers",
                {"per_sm": per_sm, "stages": stages, "warps": warps},
                lambda g=grid, st=stages, w=warps: _rows_pers[(g,)](x, s, m, n, BLOCK=whole, STAGES=st, num_warps=w),
            )


def col_variants(m: int, n: int, sms: int, gen: Any, x: Any, s: Any) -> Iterator[Variant]:
    yield "auto", {}, lambda: gen.col_sums_f16(x, s)
    for bn, br, waves, stages, warps in itertools.product((256, 512, 1024), (16, 32), (4, 8), (3,), (4,)):
        if not 16 <= br * bn // (32 * warps) <= 64:
            continue
        blocks = triton.cdiv(n, bn)
        splits = max(1, min(triton.cdiv(m, br), waves * sms // blocks))
        chunk = triton.cdiv(triton.cdiv(m, splits), br) * br
        splits = triton.cdiv(m, chunk)
        yield (
            "split",
            {"BN": bn, "BR": br, "waves": waves, "stages": stages, "warps": warps, "splits": splits},
            lambda g=(blocks, splits), ch=chunk, a=br, b=bn, st=stages, w=warps: _cols_split[g](
                x, s, m, n, ch, BR=a, BN=b, STAGES=st, num_warps=w
            ),
        )
    yield from col_tma_variants(m, n, sms, x, s)


def col_tma_variants(m: int, n: int, sms: int, x: Any, s: Any) -> Iterator[Variant]:
    for bn, br, waves, stages, warps in itertools.product((64, 128, 256), (32, 64, 128), (8,), (3, 4), (4,)):
        if not 16 <= br * bn // (32 * warps) <= 64:
            continue
        blocks = triton.cdiv(n, bn)
        splits = max(1, min(triton.cdiv(m, br), waves * sms // blocks))
        chunk = triton.cdiv(triton.cdiv(m, splits), br) * br
        splits = triton.cdiv(m, chunk)
        desc = TensorDescriptor.from_tensor(x, [br, bn])
        yield (
            "tma",
            {"BN": bn, "BR": br, "waves": waves, "stages": stages, "warps": warps, "splits": splits},
            lambda d=desc, g=(blocks, splits), ch=chunk, a=br, b=bn, st=stages, w=warps: _cols_tma[g](
                d, s, m, n, ch, BR=a, BN=b, STAGES=st, num_warps=w
            ),
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16384x4096,4096x16384")
    ap.add_argument("--kinds", default="rows,cols")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    print(json.dumps({"device": props.name, "sms": sms, "triton": triton.__version__}), flush=True)
    gens = {"rows": _generated("rows"), "cols": _generated("cols")}
    for size, kind in itertools.product(args.sizes.split(","), args.kinds.split(",")):
        m, n = (int(v) for v in size.split("x"))
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        ref = x.double().sum(1 if kind == "rows" else 0)
        s = torch.empty(m if kind == "rows" else n, device="cuda", dtype=torch.float32)
        nbytes = x.numel() * 2 + s.numel() * 4
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        make = row_variants if kind == "rows" else col_variants
        for form, choices, run in make(m, n, sms, gens[kind], x, s):
            s.fill_(float("nan") if kind == "rows" else 0.0)
            try:
                run()
                torch.cuda.synchronize()
            except Exception as exc:  # a configuration Triton refuses: recorded, the sweep goes on
                print(json.dumps({"size": size, "kind": kind, "form": form, **choices, "error": str(exc)[:200]}))
                continue
            err = float(((s.double() - ref).abs() / (1 + ref.abs())).nan_to_num(float("inf")).max())
            copies, times = [], []
            for _ in range(args.rounds):  # paired round by round: the copy, then the variant
                copies.append(triton.testing.do_bench(lambda d=dst, c=src: d.copy_(c), warmup=10, rep=40))
                times.append(triton.testing.do_bench(run, warmup=10, rep=40))
            copy, t = sorted(copies)[len(copies) // 2], sorted(times)[len(times) // 2]
            print(json.dumps({"size": size, "kind": kind, "form": form, **choices, "ms": round(t, 4),
                              "copy_ms": round(copy, 4), "of_roofline": round(copy / t, 3), "err": err,
                              "ok": err < 1e-3}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
