"""Sums of many short CSR segments (issue 27): ``segment_sums`` of tests/programs/membound_forms4.co, a
thread per CSR row walking ``vals[ptr[r] .. ptr[r + 1])``.  perf/bench_membound.py ``segment_sums_many_short``
(``m n / 256`` segments cut at random, 256 values on average) ran under auto at 0.13 of the copy roofline
and 0.48x ``torch.segment_reduce`` on the H100.  This probe times, beside the generated kernel, hand-written
Triton of the same work in the structures the generated code could take, to pick the one to generate.

What bounds the work is the bytes in flight: a segment of 256 f32 values is 1 KB, eight 128-byte lines,
read after the two offsets that say where it is (a dependent load: two latencies a segment before any
value arrives).  The H100 needs about 3.35 TB/s x 1 us, some 25 KB in flight an SM, to run at the roofline.

* ``auto``: the generated kernel through its launcher (as the bench runs it: since R a program is a form
  of the translator, ``[8, 256]`` at 256 values on average, ``[32, 64]`` at 32);
* ``rows`` (a, b): ``R`` segments a program as an ``[R, BK]`` tile, a loop in steps of ``BK`` to the longest
  of the ``R`` (``tl.range(num_stages=S)``), each row's step contiguous lines.  ``R = 1, BK = 512, S = 3``
  at 4 warps is what auto emitted for segments of 128 values or more (``segment_sums_k0``, now from 1024): 16
  programs of 128 threads an SM, about 1 KB of loads in flight each (16 KB an SM, half the roofline's need) and
  each a new program after two latencies.  ``R`` rows a program put ``R`` times the bytes in flight per
  program and amortise its start, the offsets, the reduction across warps and the store; the cost is the
  lanes of the shorter rows masked while the longest runs (issue slots and registers, not bytes: a masked
  lane reads nothing; ``over`` 1 reads every step whole inside the tensor and masks after, as the
  generated block's lanes did before 0674188) -- at random cuts the longest of 8 segments of mean 256 is about 700 values
  (``256 H_8``), so a step of ``BK = 256`` to 512 reads most segments whole in one or two steps.  The
  generalisation of ``_k0_lanes`` (128 rows, ``BK = 16``) and of ``_k0`` (1 row, ``BK = 512``);
* ``flat`` (c, merge path): each program takes ``BLOCK`` consecutive values (one contiguous, perfectly
  coalesced load whatever the segments' lengths: the bytes in flight are ``4 BLOCK`` a program, every
  program the same work), finds the rows that end in its block by a ``SEARCH``-ary search of ``ptr`` (a
  handful of dependent loads from L2, ``log_SEARCH R`` steps, both ends of the block at once), sums them as
  differences of a float64 running sum of the block (``tl.cumsum``, picked at each row's ends by
  ``tl.gather``: float64, so that the difference of two prefix sums loses nothing a float32 sum in order
  keeps), stores the rows wholly inside the block and atomically adds the partial of a row that began in an
  earlier block and the partial of the row that goes on past the block's end (``out`` zeroed first: a
  memset of ``4 R`` bytes).  ``K`` rows a step of the loop over the block's rows (many empty segments: more
  steps).  The order of a row's sum is the float64 prefix's, not the source's (well within f32's);
* ``part`` (d): ``flat`` with the rows of every block found first by a small kernel of its own (the
  partition step of merge-path SpMV), so that the block's loads issue with no search before them; one
  more launch and ``4 P`` bytes (``P`` blocks);
* ``torch``: ``torch.segment_reduce(vals, "sum", offsets=ptr)``, the op the issue compares against.

Compiled for sm_90a on the CPU (Triton 3.6, ``triton.compile`` with a CUDA 9.0 target, registers from
``cuobjdump --dump-resource-usage``): ``rows`` ``[1, 512]`` 4 warps 31 registers (16 programs an SM by
threads), ``[4, 256]`` 4 warps 40, ``[8, 256]`` 4 warps 70 (7 programs, 56 KB of tile an SM), ``[8, 512]`` 8
warps 64 (4 programs), ``[16, 256]`` 8 warps 96, ``[32, 128]`` 8 warps 102; ``flat`` ``BLOCK`` 2048 at 4 warps 80
registers and 16 KB of shared (the gather), 4096 at 8 warps 80 and 32 KB (3 programs an SM, 48 KB of values in
flight), 8192 at 8 warps 184 and 64 KB (one program an SM: too big); ``part``'s search kernel 93 at 4 warps.

Each variant is checked against float64 torch on random CSR data (segments cut at random, empty ones among
them; ``--dists skew`` as well: one segment of half the values, runs of empty segments, a last empty
one), the outputs poisoned with NaN first, then timed with ``do_bench`` (L2 flushed) paired round by round
with a device copy of the same bytes (values, offsets and sums read or written once) and with
``torch.segment_reduce``; medians, one JSON line each: ``of_roofline`` = copy / variant, ``x_torch`` = torch
/ variant.

    python3 perf/probe_segments.py [--sizes 16384x4096,4096x16384] [--means 256,32] [--only rows,flat] [--rounds 3]
    TRITON_INTERPRET=1 python3 perf/probe_segments.py --check-only   # the CPU: correctness only, small sizes
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
FORMS = ("auto", "rows", "flat", "part", "torch")
DISTS = ("cuts", "skew")


# ---------------------------------------------------------------- R rows a program, [R, BK] steps


@triton.jit
def _rows(v_ptr, p_ptr, o_ptr, R, E, RB: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr, OVER: tl.constexpr):
    r = tl.program_id(0) * RB + tl.arange(0, RB)
    rm = r < R
    lo = tl.load(p_ptr + r, mask=rm, other=0)
    n = tl.load(p_ptr + r + 1, mask=rm, other=0) - lo
    longest = tl.max(n, axis=0)
    acc = tl.zeros([RB, BK], tl.float32)
    for k0 in tl.range(0, longest, BK, num_stages=STAGES):
        k = k0 + tl.arange(0, BK)[None, :]
        at = lo[:, None].to(tl.int64) + k
        if OVER:  # every step whole inside the tensor, masked after (the mask vecmasks.py wrote before 0674188)
            v = tl.load(v_ptr + at, mask=rm[:, None] & (at < E), other=0.0)
            acc += tl.where(k < n[:, None], v, 0.0)
        else:
            acc += tl.load(v_ptr + at, mask=k < n[:, None], other=0.0)
    tl.store(o_ptr + r, tl.sum(acc, axis=1), mask=rm)


# ---------------------------------------------------------------- merge path: a block of values a program


@triton.jit
def _ended_by(p_ptr, t, R, SEARCH: tl.constexpr):
    """For each target ``t`` (a vector), the rows that end at or before it: ``#{r < R: ptr[r + 1] <= t}``,
    by a SEARCH-ary search (each step one vector of SEARCH probes, ``log_SEARCH R`` steps)."""
    lo = tl.zeros_like(t)
    hi = tl.zeros_like(t) + R
    while tl.max(hi - lo, axis=0) > 0:
        step = tl.maximum(tl.cdiv(hi - lo, SEARCH), 1)
        q = lo[:, None] + step[:, None] * tl.arange(0, SEARCH)[None, :]
        valid = q < hi[:, None]
        below = valid & (tl.load(p_ptr + q + 1, mask=valid, other=0) <= t[:, None])
        c = tl.sum(below.to(tl.int32), axis=1)  # probes past which the first row ending after t lies
        new_lo = tl.where(c > 0, lo + (c - 1) * step + 1, lo)
        hi = tl.minimum(hi, lo + c * step)
        lo = new_lo
    return lo


@triton.jit
def _part(p_ptr, part_ptr, E, R, P, BLOCK: tl.constexpr, NB: tl.constexpr, SEARCH: tl.constexpr):
    """``part[i]`` for the block boundaries ``i`` in ``[0, P]``: the first row the block ``i`` owns (a row is
    owned by the block its end falls in); 0 at the first, R at the last."""
    i = tl.program_id(0) * NB + tl.arange(0, NB)
    t = tl.minimum(i * BLOCK, E)
    first = _ended_by(p_ptr, t, R, SEARCH)
    first = tl.where(i == 0, 0, tl.where(i >= P, R, first))
    tl.store(part_ptr + i, first, mask=i <= P)


@triton.jit
def _flat(
    v_ptr,
    p_ptr,
    o_ptr,
    part_ptr,
    E,
    R,
    P,
    BLOCK: tl.constexpr,
    K: tl.constexpr,
    SEARCH: tl.constexpr,
    PART: tl.constexpr,
):
    pid = tl.program_id(0)
    s = pid * BLOCK
    e = tl.minimum(s + BLOCK, E)
    f = tl.arange(0, BLOCK)
    x = tl.load(v_ptr + s.to(tl.int64) + f, mask=s + f < E, other=0.0)  # issued before the search's loads
    if PART:
        rlo = tl.load(part_ptr + pid)
        rhi = tl.load(part_ptr + pid + 1)
    else:
        ends = _ended_by(p_ptr, tl.where(tl.arange(0, 2) == 0, s, e), R, SEARCH)
        rlo = tl.where(pid == 0, 0, tl.sum(tl.where(tl.arange(0, 2) == 0, ends, 0), axis=0))
        rhi = tl.where(pid == P - 1, R, tl.sum(tl.where(tl.arange(0, 2) == 1, ends, 0), axis=0))
    run = tl.cumsum(x.to(tl.float64), axis=0)
    # the rows that end in the block: stored where they begin in it, added where an earlier block holds
    # their beginning (its partial added there too)
    for r0 in range(rlo, rhi, K):
        r = r0 + tl.arange(0, K)
        rm = r < rhi
        a = tl.load(p_ptr + r, mask=rm, other=0)
        b = tl.load(p_ptr + r + 1, mask=rm, other=0)
        la = tl.minimum(tl.maximum(a - s, 0), BLOCK)
        lb = tl.minimum(tl.maximum(b - s, 0), BLOCK)
        upto_b = tl.where(lb > 0, tl.gather(run, tl.maximum(lb - 1, 0), axis=0), 0.0)
        upto_a = tl.where(la > 0, tl.gather(run, tl.maximum(la - 1, 0), axis=0), 0.0)
        total = (upto_b - upto_a).to(tl.float32)
        tl.store(o_ptr + r, total, mask=rm & (a >= s))
        tl.atomic_add(o_ptr + r, total, mask=rm & (a < s), sem="relaxed")
    # the row that goes on past the block's end: its part in the block added
    if rhi < R:
        a = tl.load(p_ptr + rhi)
        if a < e:
            la = tl.maximum(a - s, 0)
            last = tl.sum(tl.where(f == e - s - 1, run, 0.0), axis=0)
            first = tl.sum(tl.where(f == la - 1, run, 0.0), axis=0)
            tl.atomic_add(o_ptr + rhi, (last - first).to(tl.float32), sem="relaxed")


def flat(vals: Any, ptr: Any, out: Any, block: int, k: int, search: int, warps: int, part: bool) -> None:
    """``out`` (zeroed here) the sums of the CSR segments by the merge-path kernel."""
    e, r = vals.numel(), out.numel()
    p = triton.cdiv(e, block)
    out.zero_()
    bounds = ptr  # (unused by the searching form)
    if part:
        bounds = torch.empty(p + 1, dtype=torch.int32, device=vals.device)
        nb = 128
        _part[(triton.cdiv(p + 1, nb),)](ptr, bounds, e, r, p, BLOCK=block, NB=nb, SEARCH=search, num_warps=4)
    _flat[(p,)](vals, ptr, out, bounds, e, r, p, BLOCK=block, K=k, SEARCH=search, PART=part, num_warps=warps)


# ---------------------------------------------------------------- cases


Variant = tuple[str, dict[str, int], Callable[[], Any]]


@dataclass
class Case:
    inputs: list[Any]  # tensors, all read once
    outputs: list[Any]  # tensors, all written once (NaN-poisoned before each check)
    expected: list[Any]  # float64
    tol: float
    variants: list[Variant]
    op: Callable[[], Any]  # torch's op of the same work


def csr(count: int, total: int, dist: str, dev: str) -> tuple[Any, Any]:
    """Values and int32 offsets of ``count`` segments of ``total`` values: ``cuts`` at random (as
    perf/bench_membound.py: empty segments among them where cuts coincide), or ``skew``: the first segment
    half the values, runs of empty segments, the last one empty."""
    vals = torch.randn(total, device=dev)
    if dist == "cuts":
        cuts = torch.sort(torch.randint(0, total, (count - 1,), device=dev)).values
    else:
        half = total // 2
        cuts = torch.sort(torch.randint(half, total, (count - 2,), device=dev)).values
        cuts[: max(1, (count - 2) // 8)] = half  # a run of empty segments after the long one
        cuts = torch.cat([torch.full((1,), half, device=dev), cuts])
        cuts[-1] = total  # the last segment empty
    zero = torch.zeros(1, dtype=torch.int64, device=dev)
    ptr = torch.cat([zero, cuts.long(), torch.full((1,), total, device=dev, dtype=torch.int64)])
    return vals, ptr.to(torch.int32)


def segments_case(total: int, mean: int, dist: str, dev: str, gen: Any, check: bool) -> Case:
    count = max(2, total // mean)
    vals, ptr = csr(count, total, dist, dev)
    out = torch.empty(count, device=dev)
    c = torch.cat([torch.zeros(1, dtype=torch.float64, device=dev), vals.double().cumsum(0)])
    ref = c[ptr.long()[1:]] - c[ptr.long()[:-1]]
    vs: list[Variant] = [("auto", {}, lambda: gen.segment_sums(vals, ptr, out))]
    # (R, BK, stages, warps): R = 1, BK = 512, 3 stages, 4 warps is auto's one a program (from 1024 values
    # a segment), [128, 16] at 8 warps the block's lanes (below 16; before R a program was a form, below
    # 128), [8, 256] and [32, 64] at 4 warps its R a program (policy.SEGMENT_ROW_FORMS)
    # ``over`` 1: each step's load masked only inside the tensor (the segment's end applied after), as the
    # block's lanes were generated before 0674188 (schedule/vecmasks.py)
    shapes = [(1, 512, 3, 4, 0), (128, 16, 3, 8, 0), (128, 16, 3, 8, 1), (8, 256, 3, 4, 1)]
    for rb, bk in itertools.product((2, 4, 8, 16, 32), (64, 128, 256, 512)):
        per_thread = rb * bk // 32
        warps = min(8, max(1, per_thread // 16))  # about 16 values a thread at a step
        if rb * bk <= 8192:
            shapes.append((rb, bk, 1, warps, 0))
            if rb * bk <= 2048:
                shapes.append((rb, bk, 3, warps, 0))
    if check:  # steps shorter than the segments, so that the loop runs several (one a program: seconds a
        # thousand segments in the interpreter, checked where they are fewer)
        shapes = [(4, 16, 1, 1, 0), (8, 32, 3, 2, 0), (32, 64, 1, 4, 0), (8, 32, 1, 2, 1)]
        shapes += [(1, 512, 3, 4, 0)] if count <= 256 else []
    for rb, bk, stages, warps, over in shapes:
        vs.append(
            (
                "rows",
                {"R": rb, "BK": bk, "stages": stages, "warps": warps, "over": over},
                lambda rb=rb, bk=bk, st=stages, w=warps, o=over: _rows[(triton.cdiv(count, rb),)](
                    vals, ptr, out, count, total, RB=rb, BK=bk, STAGES=st, OVER=o, num_warps=w
                ),
            )
        )
    blocks = ((64, 8, 4, 1), (128, 16, 8, 1), (256, 64, 64, 2)) if check else ()
    if not check:
        blocks = tuple((b, 64, 64, w) for b in (1024, 2048, 4096, 8192) for w in (4, 8) if b // (32 * w) <= 64)
    for (block, k, search, warps), part in itertools.product(blocks, (False, True)):
        vs.append(
            (
                "part" if part else "flat",
                {"BLOCK": block, "K": k, "SEARCH": search, "warps": warps},
                lambda b=block, k=k, s=search, w=warps, p=part: flat(vals, ptr, out, b, k, s, w, p),
            )
        )
    vs.append(("torch", {}, lambda: out.copy_(torch.segment_reduce(vals, "sum", offsets=ptr.long()))))
    return Case([vals, ptr], [out], [ref], 1e-4, vs, lambda: torch.segment_reduce(vals, "sum", offsets=ptr.long()))


_GENERATED: dict[str, Any] = {}


def _generated() -> Any:
    """``segment_sums`` of tests/programs/membound_forms4.co (the function alone) translated under auto and
    imported, once a process."""
    if "gen" not in _GENERATED:
        sys.path.insert(0, str(REPO))
        from croq2triton.api import load_source, translate_full

        text = (REPO / "tests/programs/membound_forms4.co").read_text()
        start = text.index("__co__ void segment_sums(")
        func = text[start : text.index("\n}\n", start) + 3]
        out = translate_full(func, filename="membound_forms4.co", schedule="auto")
        if out.failed:
            raise RuntimeError(f"segment_sums did not translate: {out.failed}")
        _GENERATED["gen"] = load_source(out.source, "probe_segments_auto")
    return _GENERATED["gen"]


def _error(got: Any, want: Any) -> float:
    """The largest error relative to the largest sum (a sum near zero is the difference of larger ones)."""
    scale = float(want.double().abs().max().clamp(min=1.0))
    return float(((got.double() - want.double()).abs() / scale).nan_to_num(float("inf")).max())


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def run(
    forms: list[str], sizes: list[tuple[int, int]], means: list[int], dists: list[str], check_only: bool, rounds: int
) -> bool:
    dev = "cpu" if check_only else "cuda"
    if not check_only:
        props = torch.cuda.get_device_properties(0)
        print(json.dumps({"device": props.name, "sms": props.multi_processor_count, "triton": triton.__version__}))
    all_ok = True
    for (m, n), mean, dist in itertools.product(sizes, means, dists):
        torch.manual_seed(0)
        case = segments_case(m * n, mean, dist, dev, _generated(), check_only)
        nbytes = sum(t.numel() * t.element_size() for t in (*case.inputs, *case.outputs))
        src = torch.empty(max(1, nbytes // 2), dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        seen: set[tuple[Any, ...]] = set()
        for form, choices, go in case.variants:
            if form not in forms:
                continue
            row = {"size": f"{m}x{n}", "mean": mean, "dist": dist, "form": form, **choices}
            same = (form, *sorted((k, v) for k, v in choices.items() if k not in ("warps", "stages")))
            if check_only and same in seen:
                continue  # (the interpreter has no warps or stages: the same computation again)
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
                copies, ops, times = [], [], []
                for _ in range(rounds):  # paired round by round: the copy, torch's op, then the variant
                    copies.append(triton.testing.do_bench(lambda d=dst, c=src: d.copy_(c), warmup=5, rep=25))
                    ops.append(triton.testing.do_bench(case.op, warmup=5, rep=25))
                    times.append(triton.testing.do_bench(go, warmup=5, rep=25))
                copy, op, t = _median(copies), _median(ops), _median(times)
                row.update(
                    ms=round(t, 4),
                    copy_ms=round(copy, 4),
                    torch_ms=round(op, 4),
                    of_roofline=round(copy / t, 3),
                    x_torch=round(op / t, 3),
                )
            print(json.dumps(row), flush=True)
    return all_ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--sizes", default=None, help="m x n values, comma-separated (default 16384x4096; 37x70 checking)")
    ap.add_argument("--means", default=None, help="mean segment lengths (default 256,32; 16,3 checking)")
    ap.add_argument("--dists", default=None, help=f"among {','.join(DISTS)} (default cuts; both checking)")
    ap.add_argument("--only", default=",".join(FORMS), help=f"forms among {','.join(FORMS)}")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--check-only", action="store_true", help="correctness only (the CPU under TRITON_INTERPRET=1)")
    args = ap.parse_args(argv)
    if args.check_only and os.environ.get("TRITON_INTERPRET") != "1":
        ap.error("--check-only runs under TRITON_INTERPRET=1 (set it before Python imports Triton)")
    forms = [f for f in args.only.split(",") if f]
    dists = [d for d in (args.dists or ("cuts,skew" if args.check_only else "cuts")).split(",") if d]
    unknown = [f for f in forms if f not in FORMS] + [d for d in dists if d not in DISTS]
    if unknown:
        ap.error(f"unknown {unknown}: forms among {','.join(FORMS)}, dists among {','.join(DISTS)}")
    sizes_text = args.sizes or ("37x70" if args.check_only else "16384x4096")
    sizes = [(int(a), int(b)) for a, b in (s.split("x") for s in sizes_text.split(","))]
    means = [int(x) for x in (args.means or ("16,3" if args.check_only else "256,32")).split(",")]
    return 0 if run(forms, sizes, means, dists, args.check_only, args.rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
