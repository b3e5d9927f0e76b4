"""The memory-bound forms furthest below the roofline under auto (issue 27; H200, perf/RESULTS.md 2026-12-07
12:57, of the roofline at 16384x4096): depthwise convolution 0.31, gather along the first axis 0.32, columns
selected into rows 0.46, the global average pool of 7 x 7 planes 0.52, swiglu over two halves f16 0.73, the
multi-class hinge loss 0.74.  For each, the translated kernel (``auto``: through its launcher, as
perf/bench_membound.py runs it) beside hand-written Triton of the same work, each a structure the generated
kernel could take.

Compiled for sm_90a on the CPU (registers a thread, shared memory; ``croq2triton compile --schedule auto``),
what each generated kernel is, and the cause read from it:

* ``dwconv`` (``dwconv_halo``, irregular_forms2.co; x [m, n], w [m, 5]).  Before f41b082 auto wrote the five
  taps as a run-time loop pipelined through shared memory, ``tl.range(0, 5, num_stages=3)`` (the tap's offset
  unknown when compiling: every window copied 4 or 8 bytes at a time by ``cp.async``, 8 KB of shared, one tap
  after the other); since, ``tl.static_range(0, 5)`` (schedule/unroll.py: the five windows plain loads issued
  together, v4 / v2 / scalar by their offsets, the four past the first served by L1).  Forms: ``unrolled``
  (``[BC, BN]`` a program, the taps ``tl.static_range``: what auto now writes at ``[8, 128]``) and ``looped``
  (the same taps a ``tl.range(0, 5, num_stages=S)`` loop: auto's old structure at S = 3);
* ``gather`` (``gather_first``, irregular_forms3.co; x [m, n], idx [m, n] in [0, m)).  Auto's ``[32, 128]`` at 4
  warps (93 registers, 32 KB of shared for the layout conversions between the index's vector layout and the
  gather's scalar one) is what a hand-written gather is: each element reads its own 32-byte sector of a random
  row, 8 times the bytes the copy counts, from L2 at best.  The cause is the access, not the schedule: no form
  reads fewer sectors.  Forms: ``tile`` ``[BK, BN]`` with or without eviction hints (``hint``: index and output
  streamed ``evict_first``, the gathered rows ``evict_last``, so that L2 keeps the rows' sectors that programs of
  the same columns read), to see what tile and L2 policy get from that ceiling;
* ``select`` (``select_cols_t``, irregular_forms3.co; cols [n / 4], x [m, n], out [n / 4, m]).  Auto's ``[16,
  256]`` (48 registers, 16 KB of shared: the transposition) reads each element alone, a column at a time: a
  32-byte sector of x holds about two selected columns, read by two programs; the copy reads x once.  Forms:
  ``tile`` ``[BK, BM]``, ``order`` 0 the selected columns fastest across programs (programs in flight share x's
  rows, as auto's grid), 1 the rows fastest (to tell L2 reuse from the rest).  (Rows read whole and the
  columns picked by ``tl.gather`` would read x once, but ``[8, 4096]`` tiles of f32 did not compile in 7
  minutes for sm_90a: left out.);
* ``mean`` (``spatial_mean4``, membound_forms7.co, 7 x 7 planes of 2048 channels; x [m n / 100352, 2048, 7,
  7]).  Auto's ``planes_whole``, ``[32, 64]`` a program at 4 warps (40 registers, 12 programs a SM), 42,752
  programs of 6 KB each: a load, a reduction across warps and a store, latency after latency, 27 waves.
  Forms: ``tile`` ``[BC, 64]`` (BC 32 as auto, 64, 128), ``loop`` (``G`` such tiles a program in a
  ``tl.range(num_stages=3)`` loop: the next tile's loads in flight while one is reduced), ``flat`` (``BC``
  channels' ``49 BC`` floats one contiguous 1-D load, vectorised, summed by a running sum, ``tl.cumsum``,
  picked at the channels' ends, ``tl.gather``);
* ``swiglu`` (``swiglu_halves_f16``, membound_forms4.co; x [m, 2n] f16, y [m, n] f16).  Auto widens to ``[32,
  256]`` at 4 warps (schedule/policy.py: 16 KB of the widest element): 64 elements of each half a thread, in
  f32, 192 registers, two programs (8 warps) a SM; the exp and the IEEE division of 64 elements a thread do
  not overlap the loads.  Forms: ``tile`` ``[R, BN]`` from 64 down to 8 elements a thread (``[16, 256]`` 153
  registers, ``[8, 256]`` 78, ``[4, 256]`` 40 by hand), ``div`` 0 ``div_rn`` as generated, 1 ``/`` (two ulp,
  156 registers at ``[32, 256]``), to tell the compute and registers of a big tile from the memory;
* ``hinge`` (``multi_margin``, membound_forms8.co; x [m, n], tgt [m]).  Auto's row a program (``[1, 4096]``, 8
  warps, 48 registers) loads ``tgt[r]``, then ``x[r, tgt[r]]`` at an address that needs it, then the row:
  two memory latencies one after the other before the fold, in a short program.  Forms: ``row`` (``R`` rows a
  program, whole; ``pick`` 0 as generated, 1 the row loaded first and ``x[r, tgt[r]]`` taken from it in
  registers, one latency), ``blocks`` (the row in blocks of 4096, pipelined; rows past 8192).

Each variant is checked against float64 torch on random data (outputs poisoned with NaN), then timed with
``do_bench`` (L2 flushed) paired round by round with a device copy of the same bytes (every tensor read and
written once); medians, one JSON line each, ``of_roofline`` = copy / variant.

    python3 perf/probe_lowforms.py [--sizes 16384x4096,4096x16384] [--only dwconv,gather,...] [--rounds 2]
    TRITON_INTERPRET=1 python3 perf/probe_lowforms.py --check-only [--sizes 40x72]   # the CPU: correctness only
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

REPO = Path(__file__).resolve().parent.parent
KERNELS = ("dwconv", "gather", "select", "mean", "swiglu", "hinge")


# ---------------------------------------------------------------- depthwise convolution, five taps


@triton.jit
def _dw(x_ptr, w_ptr, o_ptr, C, N, BC: tl.constexpr, BN: tl.constexpr, UNROLL: tl.constexpr, STAGES: tl.constexpr):
    c = tl.program_id(0) * BC + tl.arange(0, BC)[:, None]
    n = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    cm = c < C
    base = c.to(tl.int64) * N
    acc = tl.zeros([BC, BN], tl.float32)
    if UNROLL:
        for k in tl.static_range(5):
            src = n + (k - 2)
            w = tl.load(w_ptr + c * 5 + k, mask=cm, other=0.0)
            acc += w * tl.load(x_ptr + base + src, mask=cm & (src >= 0) & (src < N), other=0.0)
    else:
        for k in tl.range(0, 5, num_stages=STAGES):
            src = n + (k - 2)
            w = tl.load(w_ptr + c * 5 + k, mask=cm, other=0.0)
            acc += w * tl.load(x_ptr + base + src, mask=cm & (src >= 0) & (src < N), other=0.0)
    tl.store(o_ptr + base + n, acc, mask=cm & (n < N))


# ---------------------------------------------------------------- gather along the first axis


@triton.jit
def _gather(x_ptr, i_ptr, o_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr, HINT: tl.constexpr):
    r = tl.program_id(0) * BK + tl.arange(0, BK)[:, None]
    c = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    m = (r < K) & (c < N)
    off = r.to(tl.int64) * N + c
    if HINT:
        idx = tl.load(i_ptr + off, mask=m, other=0, eviction_policy="evict_first")
        v = tl.load(x_ptr + idx.to(tl.int64) * N + c, mask=m, other=0.0, eviction_policy="evict_last")
        tl.store(o_ptr + off, v, mask=m, eviction_policy="evict_first")
    else:
        idx = tl.load(i_ptr + off, mask=m, other=0)
        v = tl.load(x_ptr + idx.to(tl.int64) * N + c, mask=m, other=0.0)
        tl.store(o_ptr + off, v, mask=m)


# ---------------------------------------------------------------- columns selected into rows


@triton.jit
def _select(c_ptr, x_ptr, o_ptr, M, N, K, BK: tl.constexpr, BM: tl.constexpr, ORDER: tl.constexpr):
    nk = tl.cdiv(K, BK)
    nm = tl.cdiv(M, BM)
    pid = tl.program_id(0)
    if ORDER == 0:  # the selected columns fastest: programs in flight read the same rows of x
        pk, pm = pid % nk, pid // nk
    else:
        pk, pm = pid // nm, pid % nm
    kk = pk * BK + tl.arange(0, BK)[:, None]
    i = pm * BM + tl.arange(0, BM)[None, :]
    km = kk < K
    col = tl.load(c_ptr + kk, mask=km, other=0)
    m = km & (i < M)
    v = tl.load(x_ptr + i.to(tl.int64) * N + col, mask=m, other=0.0)
    tl.store(o_ptr + kk.to(tl.int64) * M + i, v, mask=m)


# ---------------------------------------------------------------- the mean of 7 x 7 planes


@triton.jit
def _mean_tile(x_ptr, y_ptr, CH, HW, BC: tl.constexpr, BJ: tl.constexpr, G: tl.constexpr, STAGES: tl.constexpr):
    j = tl.arange(0, BJ)[None, :]
    blocks = tl.cdiv(CH, BC)
    for q in tl.range(tl.program_id(0) * G, tl.minimum(blocks, tl.program_id(0) * G + G), num_stages=STAGES):
        c = q * BC + tl.arange(0, BC)
        v = tl.load(x_ptr + c[:, None].to(tl.int64) * HW + j, mask=(c[:, None] < CH) & (j < HW), other=0.0)
        tl.store(y_ptr + c, tl.sum(v, axis=1) / HW, mask=c < CH)


@triton.jit
def _mean_flat(x_ptr, y_ptr, CH, HW: tl.constexpr, BC: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * (BC * HW)
    f = tl.arange(0, BLOCK)
    total = CH * HW
    v = tl.load(x_ptr + start + f, mask=(f < BC * HW) & (start + f < total), other=0.0)
    run = tl.cumsum(v, axis=0)
    ch = tl.arange(0, BC)
    last = tl.gather(run, ch * HW + HW - 1, axis=0)
    before = tl.gather(run, tl.maximum(ch * HW - 1, 0), axis=0)
    s = tl.where(ch == 0, last, last - before)
    c = tl.program_id(0) * BC + ch
    tl.store(y_ptr + c, s / HW, mask=c < CH)


# ---------------------------------------------------------------- swiglu over two halves, f16


@triton.jit
def _swiglu(x_ptr, y_ptr, M, N, R: tl.constexpr, BN: tl.constexpr, FAST: tl.constexpr):
    r = tl.program_id(0) * R + tl.arange(0, R)[:, None]
    c = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    m = (r < M) & (c < N)
    row = r.to(tl.int64) * (2 * N)
    g = tl.load(x_ptr + row + c, mask=m, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row + N + c, mask=m, other=0.0).to(tl.float32)
    if FAST:
        s = g / (1.0 + tl.exp(-g))
    else:
        s = tl.math.div_rn(g, 1.0 + tl.exp(-g))
    tl.store(y_ptr + r.to(tl.int64) * N + c, (s * u).to(tl.float16), mask=m)


# ---------------------------------------------------------------- multi-class hinge loss


@triton.jit
def _hinge_row(x_ptr, t_ptr, l_ptr, M, N, R: tl.constexpr, BLOCK: tl.constexpr, PICK: tl.constexpr):
    rr = tl.program_id(0) * R + tl.arange(0, R)
    r = rr[:, None]
    j = tl.arange(0, BLOCK)[None, :]
    base = r.to(tl.int64) * N
    if PICK:  # the row first, x[r, k] taken from it
        v = tl.load(x_ptr + base + j, mask=(r < M) & (j < N), other=0.0)
        k = tl.load(t_ptr + r, mask=r < M, other=0)
        xt = tl.sum(tl.where(j == k, v, 0.0), axis=1)[:, None]
    else:  # as generated: the target, then x[r, k], then the row
        k = tl.load(t_ptr + r, mask=r < M, other=0)
        xt = tl.load(x_ptr + base + k, mask=r < M, other=0.0)
        v = tl.load(x_ptr + base + j, mask=(r < M) & (j < N), other=0.0)
    h = tl.where((j < N) & (j != k), tl.maximum(0.0, 1.0 - xt + v), 0.0)
    tl.store(l_ptr + rr, tl.sum(h, axis=1) / N, mask=rr < M)


@triton.jit
def _hinge_blocks(x_ptr, t_ptr, l_ptr, M, N, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    r = tl.program_id(0)
    base = r.to(tl.int64) * N
    k = tl.load(t_ptr + r)
    xt = tl.load(x_ptr + base + k)
    acc = tl.zeros([BLOCK], tl.float32)
    for j0 in tl.range(0, N, BLOCK, num_stages=STAGES):
        j = j0 + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + base + j, mask=j < N, other=0.0)
        acc += tl.where((j < N) & (j != k), tl.maximum(0.0, 1.0 - xt + v), 0.0)
    tl.store(l_ptr + r, tl.sum(acc, axis=0) / N)


# ---------------------------------------------------------------- cases


Variant = tuple[str, dict[str, int], Callable[[], Any]]


@dataclass
class Case:
    kernel: str
    inputs: list[Any]  # tensors, all read once
    outputs: list[Any]  # tensors, all written once (NaN-poisoned before each check)
    expected: list[Any]  # float64
    tol: float
    variants: list[Variant]


def _pow2(n: int) -> int:
    return int(triton.next_power_of_2(n))


def dwconv_case(m: int, n: int, dev: str, gen: Any, sms: int) -> Case:
    x, w = torch.randn(m, n, device=dev), torch.randn(m, 5, device=dev)
    out = torch.empty(m, n, device=dev)
    ref = torch.nn.functional.conv1d(x.double()[None], w.double()[:, None, :], padding=2, groups=m)[0]
    vs: list[Variant] = [("auto", {}, lambda: gen.dwconv_halo(x, w, out))]
    for bc, bn, warps in ((8, 128, 4), (4, 256, 4), (8, 256, 4), (2, 1024, 4), (8, 512, 8)):
        g = (triton.cdiv(m, bc), triton.cdiv(n, bn))
        vs.append(
            (
                "unrolled",
                {"BC": bc, "BN": bn, "warps": warps},
                lambda g=g, a=bc, b=bn, wp=warps: _dw[g](x, w, out, m, n, BC=a, BN=b, UNROLL=1, STAGES=1, num_warps=wp),
            )
        )
    for stages in (1, 3):  # auto's structure, its pipelining on and off
        g = (triton.cdiv(m, 8), triton.cdiv(n, 128))
        vs.append(
            (
                "looped",
                {"BC": 8, "BN": 128, "stages": stages, "warps": 4},
                lambda g=g, s=stages: _dw[g](x, w, out, m, n, BC=8, BN=128, UNROLL=0, STAGES=s, num_warps=4),
            )
        )
    return Case("dwconv", [x, w], [out], [ref], 1e-4, vs)


def gather_case(m: int, n: int, dev: str, gen: Any, sms: int) -> Case:
    x = torch.randn(m, n, device=dev)
    idx = torch.randint(0, m, (m, n), device=dev, dtype=torch.int32)
    out = torch.empty(m, n, device=dev)
    ref = torch.gather(x.double(), 0, idx.long())
    vs: list[Variant] = [("auto", {}, lambda: gen.gather_first(x, idx, out))]
    for bk, bn, hint in itertools.product((8, 32), (32, 128), (0, 1)):
        g = (triton.cdiv(m, bk), triton.cdiv(n, bn))
        vs.append(
            (
                "tile",
                {"BK": bk, "BN": bn, "hint": hint, "warps": 4},
                lambda g=g, a=bk, b=bn, h=hint: _gather[g](x, idx, out, m, n, BK=a, BN=b, HINT=h, num_warps=4),
            )
        )
    return Case("gather", [x, idx], [out], [ref], 0.0, vs)


def select_case(m: int, n: int, dev: str, gen: Any, sms: int) -> Case:
    k = max(1, n // 4)
    cols = torch.randint(0, n, (k,), device=dev, dtype=torch.int32)
    x = torch.randn(m, n, device=dev)
    out = torch.empty(k, m, device=dev)
    ref = x.double().index_select(1, cols.long()).T
    vs: list[Variant] = [("auto", {}, lambda: gen.select_cols_t(cols, x, out))]
    for bk, bm, order in ((16, 256, 0), (16, 256, 1), (64, 64, 0), (4, 1024, 0), (32, 128, 0)):
        g = (triton.cdiv(k, bk) * triton.cdiv(m, bm),)
        vs.append(
            (
                "tile",
                {"BK": bk, "BM": bm, "order": order, "warps": 4},
                lambda g=g, a=bk, b=bm, o=order: _select[g](cols, x, out, m, n, k, BK=a, BM=b, ORDER=o, num_warps=4),
            )
        )
    return Case("select", [cols, x], [out], [ref], 0.0, vs)


def mean_case(m: int, n: int, dev: str, gen: Any, sms: int) -> Case:
    ch = 2048 if m * n >= 2048 * 49 else max(3, n // 2 + 3)  # (tiny sizes: a ragged channel count)
    b = max(1, m * n // (ch * 49))
    x = torch.randn(b, ch, 7, 7, device=dev)
    y = torch.empty(b, ch, device=dev)
    ref = x.double().mean((2, 3))
    rows = b * ch
    vs: list[Variant] = [("auto", {}, lambda: gen.spatial_mean4(x, y))]
    for bc, g_, stages, warps in ((32, 1, 1, 4), (64, 1, 1, 4), (128, 1, 1, 8), (32, 8, 3, 4), (64, 8, 3, 4)):
        grid = (triton.cdiv(triton.cdiv(rows, bc), g_),)
        vs.append(
            (
                "tile" if g_ == 1 else "loop",
                {"BC": bc, "G": g_, "stages": stages, "warps": warps},
                lambda grid=grid, a=bc, gg=g_, s=stages, w=warps: _mean_tile[grid](
                    x, y, rows, 49, BC=a, BJ=64, G=gg, STAGES=s, num_warps=w
                ),
            )
        )
    for bc, warps in ((32, 4), (64, 8)):
        vs.append(
            (
                "flat",
                {"BC": bc, "warps": warps},
                lambda a=bc, w=warps: _mean_flat[(triton.cdiv(rows, a),)](
                    x, y, rows, HW=49, BC=a, BLOCK=_pow2(a * 49), num_warps=w
                ),
            )
        )
    return Case("mean", [x], [y], [ref], 1e-5, vs)


def swiglu_case(m: int, n: int, dev: str, gen: Any, sms: int) -> Case:
    x = torch.randn(m, 2 * n, device=dev).half()
    y = torch.empty(m, n, device=dev, dtype=torch.float16)
    g, u = x.double().chunk(2, 1)
    ref = g / (1 + torch.exp(-g)) * u
    vs: list[Variant] = [("auto", {}, lambda: gen.swiglu_halves_f16(x, y))]
    # (R, BN, warps, fast): auto's [32, 256] at 4 warps is 64 elements of each half a thread (192 registers,
    # two programs a SM compiled for sm_90a); the others 32, 16 and 8 a thread
    shapes = ((32, 256, 4, 0), (32, 256, 4, 1), (16, 256, 4, 0), (32, 256, 8, 0), (8, 256, 4, 0), (4, 256, 4, 0))
    for rows, bn, warps, fast in (*shapes, (2, 1024, 4, 0), (8, 512, 8, 0), (4, 1024, 8, 0), (8, 256, 4, 1)):
        grid = (triton.cdiv(m, rows), triton.cdiv(n, bn))
        vs.append(
            (
                "tile",
                {"R": rows, "BN": bn, "div": fast, "warps": warps},
                lambda grid=grid, r=rows, b=bn, f=fast, w=warps: _swiglu[grid](
                    x, y, m, n, R=r, BN=b, FAST=f, num_warps=w
                ),
            )
        )
    return Case("swiglu", [x], [y], [ref], 1e-2, vs)


def hinge_case(m: int, n: int, dev: str, gen: Any, sms: int) -> Case:
    x = torch.randn(m, n, device=dev)
    t = torch.randint(0, n, (m,), device=dev, dtype=torch.int32)
    loss = torch.empty(m, device=dev)
    ref = torch.nn.functional.multi_margin_loss(x.double(), t.long(), reduction="none")
    vs: list[Variant] = [("auto", {}, lambda: gen.multi_margin(x, t, loss))]
    whole = _pow2(n)
    for rows, warps, pick in itertools.product((1, 2), (4, 8, 16), (0, 1)):
        if 8 <= rows * whole // (32 * warps) <= 64 or (dev == "cpu" and warps == 4):
            vs.append(
                (
                    "row",
                    {"R": rows, "pick": pick, "warps": warps},
                    lambda r=rows, w=warps, p=pick: _hinge_row[(triton.cdiv(m, r),)](
                        x, t, loss, m, n, R=r, BLOCK=whole, PICK=p, num_warps=w
                    ),
                )
            )
    if whole > 8192 or dev == "cpu":
        block = 4096 if dev != "cpu" else 32  # (the CPU: blocks that the loop steps through)
        for stages, warps in ((3, 8), (3, 16)):
            vs.append(
                (
                    "blocks",
                    {"block": block, "stages": stages, "warps": warps},
                    lambda s=stages, w=warps: _hinge_blocks[(m,)](x, t, loss, m, n, BLOCK=block, STAGES=s, num_warps=w),
                )
            )
    return Case("hinge", [x, t], [loss], [ref], 1e-4, vs)


MAKERS: dict[str, tuple[str, Callable[[int, int, str, Any, int], Case]]] = {
    "dwconv": ("irregular_forms2", dwconv_case),
    "gather": ("irregular_forms3", gather_case),
    "select": ("irregular_forms3", select_case),
    "mean": ("membound_forms7", mean_case),
    "swiglu": ("membound_forms4", swiglu_case),
    "hinge": ("membound_forms8", hinge_case),
}


def _generated(name: str, cache: dict[str, Any]) -> Any:
    """``tests/programs/<name>.co`` translated under auto and imported (once)."""
    if name not in cache:
        sys.path.insert(0, str(REPO))
        from croq2triton.api import load

        cache[name] = load(REPO / f"tests/programs/{name}.co", schedule="auto")
    return cache[name]


def _error(got: Any, want: Any) -> float:
    return float(((got.double() - want.double()).abs() / (1 + want.double().abs())).nan_to_num(float("inf")).max())


def run(kernels: list[str], sizes: list[tuple[int, int]], check_only: bool, rounds: int) -> bool:
    dev = "cpu" if check_only else "cuda"
    sms = 132 if check_only else torch.cuda.get_device_properties(0).multi_processor_count
    if not check_only:
        props = torch.cuda.get_device_properties(0)
        print(json.dumps({"device": props.name, "sms": sms, "triton": triton.__version__}), flush=True)
    cache: dict[str, Any] = {}
    all_ok = True
    for (m, n), kernel in itertools.product(sizes, kernels):
        program, make = MAKERS[kernel]
        torch.manual_seed(0)
        case = make(m, n, dev, _generated(program, cache), sms)
        nbytes = sum(t.numel() * t.element_size() for t in (*case.inputs, *case.outputs))
        src = torch.empty(max(1, nbytes // 2), dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        seen: set[tuple[Any, ...]] = set()
        for form, choices, go in case.variants:
            row = {"size": f"{m}x{n}", "kernel": kernel, "form": form, **choices}
            same = (form, *sorted((k, v) for k, v in choices.items() if k != "warps"))
            if check_only and same in seen:
                continue  # (the interpreter has no warps: the same computation again)
            seen.add(same)
            for o in case.outputs:
                o.fill_(float("nan"))
            try:
                go()
                if not check_only:
                    torch.cuda.synchronize()
            except Exception as exc:  # a configuration Triton refuses: recorded, the sweep goes on
                print(json.dumps({**row, "error": str(exc)[:300]}), flush=True)
                all_ok = False
                continue
            err = max(_error(o, r) for o, r in zip(case.outputs, case.expected, strict=True))
            ok = err <= case.tol
            all_ok &= ok
            row.update(err=err, ok=ok)
            if not check_only:
                copies, times = [], []
                for _ in range(rounds):  # paired round by round: the copy, then the variant
                    copies.append(triton.testing.do_bench(lambda d=dst, c=src: d.copy_(c), warmup=5, rep=25))
                    times.append(triton.testing.do_bench(go, warmup=5, rep=25))
                copy, t = sorted(copies)[len(copies) // 2], sorted(times)[len(times) // 2]
                row.update(ms=round(t, 4), copy_ms=round(copy, 4), of_roofline=round(copy / t, 3))
            print(json.dumps(row), flush=True)
    return all_ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument(
        "--sizes", default=None, help="m x n, comma-separated (default 16384x4096,4096x16384; 40x72 checking)"
    )
    ap.add_argument("--only", default=",".join(KERNELS), help=f"kernels among {','.join(KERNELS)}")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--check-only", action="store_true", help="correctness only (the CPU under TRITON_INTERPRET=1)")
    args = ap.parse_args(argv)
    if args.check_only and os.environ.get("TRITON_INTERPRET") != "1":
        ap.error("--check-only runs under TRITON_INTERPRET=1 (set it before Python imports Triton)")
    kernels = [k for k in args.only.split(",") if k]
    unknown = [k for k in kernels if k not in MAKERS]
    if unknown:
        ap.error(f"unknown kernels {unknown}: choose among {','.join(KERNELS)}")
    sizes_text = args.sizes or ("40x72" if args.check_only else "16384x4096,4096x16384")
    sizes = [(int(a), int(b)) for a, b in (s.split("x") for s in sizes_text.split(","))]
    return 0 if run(kernels, sizes, args.check_only, args.rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
