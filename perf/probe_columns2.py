"""Which tile shape lets a column reduction (``x.sum(0)`` of a row-major ``[M, N]`` tensor) reach 0.9 of a
device copy of the same bytes: the "split" form of perf/probe_columns.py, swept wider.

The form: a 2-D grid, column blocks by splits of the rows.  Program ``(pc, ps)`` folds rows
``[ps*CHUNK, min(M, ps*CHUNK + CHUNK))`` of columns ``[pc*BC, pc*BC + BC)`` in blocks of ``BR`` rows into an
f32 ``[BR, BC]`` tile (a masked load converted to f32, in a ``tl.range(..., num_stages=STAGES)`` loop),
reduces it once after the loop and stores it as a partial into an f32 scratch ``[splits, N]``; a second
small kernel adds the partials over the splits and writes the output (f32 for f32 input, f16 for f16,
as ``x.sum(0)``).  Both kernels are timed together, one Python function launching both.  The splits:
``max(1, min(SMs * WAVES // cdiv(N, BC), cdiv(M, 256)))``, then as many as the chunk (a whole number of
``BR`` blocks) needs.

Swept, for f16 and f32 at each size: BC in 128, 256, 512, 1024, 2048; a block (``BR * BC * element``)
of 8 KB or 16 KB (a tile over 16384 f32 accumulators, 64 KB, skipped: none of these is); WAVES 4 and 8;
num_warps 4 and 8; STAGES 1 and 3, but with 8 warps only STAGES 3 (the limit that keeps the full sweep,
compiles included, within about 4 minutes on an H100; ``--all`` adds STAGES 1 with 8 warps back).  That
is 60 configurations a (dtype, size) (80 with ``--all``), plus a variant of the default-looking one
(BC 512, 8 KB, waves 8, warps 4, stages 3) whose load is ``eviction_policy="evict_first"``, plus
torch's ``x.sum(0)``: 248 rows at the two default sizes (328 with ``--all``).  ``--quick``: six
configurations and torch a (dtype, size).

Every configuration is checked against float64 torch before it is timed (output and scratch poisoned
with NaN first; max |out - ref| / max |ref| below 1e-3 for f16 output, 1e-4 for f32); one that fails
to compile or to verify is reported as such and skipped.  Timing as the earlier probes: ``do_bench``
(L2 flushed; warm-up 25 ms, 100 ms) returning the median; the roofline a device-to-device copy of the
bytes the kernel moves (``M * N * element``: half read, half written), timed the same way in the same
process, the median of three.  ``of_roofline`` = copy ms / ms; ``vs_torch`` = torch ms / ms (above 1:
faster than torch).  One table row a configuration, the best five a (dtype, size), everything as JSON
(with the torch and Triton versions and the GPU) to ``--out``.

    python3 perf/probe_columns2.py [--sizes 16384x4096,4096x16384] [--dtypes f16,f32] [--quick] [--all]
                                   [--out PATH] [--device cuda]
    TRITON_INTERPRET=1 python3 perf/probe_columns2.py --quick --sizes 40x300 --device cpu  # verify only
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import triton
import triton.language as tl

CPU_SMS = 132  # on --device cpu: the splits an H100 would get
COMBINE_COLS = 64  # the combining kernel's columns a program
COMBINE_SPLITS = 16  # ... and splits a step
TOL = {torch.float16: 1e-3, torch.float32: 1e-4}
DTYPES = {"f16": torch.float16, "f32": torch.float32}


@triton.jit
def _partial(
    x_ptr,
    p_ptr,
    M,
    N,
    CHUNK,
    BC: tl.constexpr,
    BR: tl.constexpr,
    STAGES: tl.constexpr,
    EVICT_FIRST: tl.constexpr,
    EVEN: tl.constexpr,
):
    pc = tl.program_id(0)
    ps = tl.program_id(1)
    cols = pc * BC + tl.arange(0, BC)
    c = cols[None, :]
    start = ps * CHUNK
    stop = tl.minimum(M, start + CHUNK)
    acc = tl.zeros([BR, BC], tl.float32)
    if EVEN:  # whole blocks without masks (N a multiple of BC), then the last partial block masked
        full = start + (stop - start) // BR * BR
        for r0 in tl.range(start, full, BR, num_stages=STAGES):
            r = r0 + tl.arange(0, BR)[:, None]
            acc += tl.load(x_ptr + r.to(tl.int64) * N + c).to(tl.float32)
        start = full
    for r0 in tl.range(start, stop, BR, num_stages=STAGES):
        r = r0 + tl.arange(0, BR)[:, None]
        m = (r < stop) & (c < N)
        ptrs = x_ptr + r.to(tl.int64) * N + c
        if EVICT_FIRST:
            v = tl.load(ptrs, mask=m, other=0.0, eviction_policy="evict_first")
        else:
            v = tl.load(ptrs, mask=m, other=0.0)
        acc += v.to(tl.float32)
    tl.store(p_ptr + ps * N + cols, tl.sum(acc, axis=0), mask=cols < N)


@triton.jit
def _combine(p_ptr, y_ptr, N, SPLITS, SB: tl.constexpr, CC: tl.constexpr):
    cols = tl.program_id(0) * CC + tl.arange(0, CC)
    c = cols[None, :]
    acc = tl.zeros([SB, CC], tl.float32)
    for s0 in range(0, SPLITS, SB):
        s = s0 + tl.arange(0, SB)[:, None]
        acc += tl.load(p_ptr + s * N + c, mask=(s < SPLITS) & (c < N), other=0.0)
    tl.store(y_ptr + cols, tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty), mask=cols < N)


@dataclass(frozen=True)
class Config:
    bc: int
    block_bytes: int
    waves: int
    warps: int
    stages: int
    evict_first: bool = False
    even: bool = False  # whole blocks unmasked (only where N is a multiple of bc)

    @property
    def form(self) -> str:
        return "split" + ("+evict_first" if self.evict_first else "") + ("+even" if self.even else "")


DEFAULT = Config(bc=512, block_bytes=8192, waves=8, warps=4, stages=3)
QUICK = [
    DEFAULT,
    Config(512, 8192, 8, 4, 3, evict_first=True),
    Config(256, 16384, 8, 8, 3),
    Config(1024, 8192, 4, 4, 1),
    Config(128, 16384, 4, 8, 3),
    Config(2048, 16384, 8, 4, 3),
    Config(512, 8192, 8, 4, 3, even=True),
    Config(256, 8192, 8, 4, 3),  # the tile --schedule auto gives a source of 256 columns a block
    Config(512, 8192, 8, 4, 4),
    Config(512, 8192, 8, 4, 5),
    Config(512, 16384, 8, 4, 4),
]


def sweep(elem: int, quick: bool, everything: bool) -> list[Config]:
    """The configurations for an element of ``elem`` bytes (tiles over 16384 f32 accumulators left out)."""
    if quick:
        return QUICK
    out = []
    for bc, block_bytes, waves, warps, stages in itertools.product(
        (128, 256, 512, 1024, 2048), (8192, 16384), (4, 8), (4, 8), (1, 3)
    ):
        if warps == 8 and stages == 1 and not everything:
            continue
        if max(1, block_bytes // (bc * elem)) * bc > 16384:
            continue
        out.append(Config(bc, block_bytes, waves, warps, stages))
    even = [Config(bc, bb, 8, 4, st, even=True) for bc in (256, 512, 1024) for bb in (8192, 16384) for st in (1, 3)]
    return out + [Config(512, 8192, 8, 4, 3, evict_first=True)] + even


@dataclass
class Launches:
    run: Callable[[], None]
    y: torch.Tensor
    part: torch.Tensor
    br: int
    splits: int
    chunk: int


def launches(x: torch.Tensor, cfg: Config, sms: int) -> Launches:
    """The two kernels of ``cfg`` over ``x`` as one call, with their scratch and output."""
    m, n = x.shape
    br = max(1, cfg.block_bytes // (cfg.bc * x.element_size()))
    col_blocks = triton.cdiv(n, cfg.bc)
    splits = max(1, min(sms * cfg.waves // col_blocks, triton.cdiv(m, 256)))
    chunk = triton.cdiv(triton.cdiv(m, splits), br) * br
    splits = triton.cdiv(m, chunk)  # no program left with no rows
    part = torch.empty(splits, n, device=x.device, dtype=torch.float32)
    y = torch.empty(n, device=x.device, dtype=x.dtype)
    sb = min(COMBINE_SPLITS, triton.next_power_of_2(splits))

    def run() -> None:
        _partial[(col_blocks, splits)](
            x, part, m, n, chunk, BC=cfg.bc, BR=br, STAGES=cfg.stages, EVICT_FIRST=cfg.evict_first,
            EVEN=cfg.even and n % cfg.bc == 0, num_warps=cfg.warps,
        )  # fmt: skip
        _combine[(triton.cdiv(n, COMBINE_COLS),)](part, y, n, splits, SB=sb, CC=COMBINE_COLS, num_warps=4)

    return Launches(run, y, part, br, splits, chunk)


def rel_err(y: torch.Tensor, ref: torch.Tensor) -> float:
    """max |y - ref| / max |ref|, NaN (an element never written) counted as infinite."""
    return float(((y.double() - ref).abs().nan_to_num(float("inf")).max() / ref.abs().max()).item())


def bench(fn: Callable[[], object]) -> float:
    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))


def copy_ms(nbytes: int, device: str) -> float:
    """The roofline: a device-to-device copy of ``nbytes`` in all (half read, half written), median of three."""
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    return sorted(bench(lambda: dst.copy_(src)) for _ in range(3))[1]


HEADER = (
    f"{'dtype':5} {'size':>11} {'form':17} {'BC':>5} {'BR':>4} {'waves':>5} {'warps':>5} {'stages':>6} "
    f"{'splits':>6} {'ms':>8} {'of_roof':>7} {'vs_torch':>8}  status"
)


def row_text(r: dict) -> str:
    def num(key: str, fmt: str) -> str:
        v = r.get(key)
        return format(v, fmt) if isinstance(v, int | float) else "-"

    return (
        f"{r['dtype']:5} {r['size']:>11} {r['form']:17} {num('bc', 'd'):>5} {num('br', 'd'):>4} "
        f"{num('waves', 'd'):>5} {num('warps', 'd'):>5} {num('stages', 'd'):>6} {num('splits', 'd'):>6} "
        f"{num('ms', '.4f'):>8} {num('of_roofline', '.3f'):>7} {num('vs_torch', '.3f'):>8}  {r['status']}"
        + (f" ({r['error']})" if "error" in r else "")
    )


def probe(x: torch.Tensor, cfg: Config, sms: int, ref: torch.Tensor, timed: bool) -> dict:
    """One configuration: checked against ``ref``, then (``timed``) timed; never raises."""
    rec: dict = {"form": cfg.form, **{k: v for k, v in asdict(cfg).items() if k not in ("evict_first", "even")}}
    try:
        la = launches(x, cfg, sms)
        rec.update(br=la.br, splits=la.splits, chunk=la.chunk)
        la.y.fill_(float("nan"))
        la.part.fill_(float("nan"))
        la.run()
        if x.is_cuda:
            torch.cuda.synchronize()
    except Exception as exc:  # a configuration Triton refuses: reported, the sweep goes on
        return {**rec, "status": "compile_error", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    err = rel_err(la.y, ref)
    rec["rel_err"] = err
    if not err <= TOL[x.dtype]:
        return {**rec, "status": "wrong"}
    if not timed:
        return {**rec, "status": "verified"}
    try:
        rec["ms"] = bench(la.run)
    except Exception as exc:
        return {**rec, "status": "error", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return {**rec, "status": "ok"}


def torch_row(x: torch.Tensor, ref: torch.Tensor, timed: bool) -> dict:
    """torch's ``x.sum(0)``, checked and timed as a configuration."""
    rec: dict = {"form": "torch x.sum(0)", "rel_err": rel_err(x.sum(0), ref)}
    if not rec["rel_err"] <= TOL[x.dtype]:
        return {**rec, "status": "wrong"}
    if not timed:
        return {**rec, "status": "verified"}
    return {**rec, "ms": bench(lambda: x.sum(0)), "status": "ok"}


def emit(rec: dict, copy: float | None, torch_ms: float | None, results: list[dict]) -> None:
    """``rec`` with its ratios to the copy and to torch: kept and printed."""
    if "ms" in rec and copy is not None:
        rec.update(of_roofline=copy / rec["ms"], copy_ms=copy)
        if torch_ms is not None:
            rec["vs_torch"] = torch_ms / rec["ms"]
    results.append(rec)
    print(row_text(rec), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="16384x4096,4096x16384", help="MxN,... (default: %(default)s)")
    ap.add_argument("--dtypes", default="f16,f32", help="f16,f32 or either (default: %(default)s)")
    ap.add_argument("--quick", action="store_true", help="six configurations a (dtype, size)")
    ap.add_argument("--all", action="store_true", help="also STAGES 1 with 8 warps (about 1/3 more configurations)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cpu: verify only (TRITON_INTERPRET=1)")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default: $OUT/probe_columns2.json or ./)")
    args = ap.parse_args()
    if args.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        ap.error("--device cpu needs TRITON_INTERPRET=1")
    out = args.out or Path(os.environ.get("OUT") or ".") / "probe_columns2.json"
    timed = args.device == "cuda"
    sms = torch.cuda.get_device_properties(0).multi_processor_count if timed else CPU_SMS
    t0 = time.perf_counter()
    meta = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "gpu": torch.cuda.get_device_name(0) if timed else f"cpu ({platform.machine()}, TRITON_INTERPRET=1)",
        "sms": sms,
        "device": args.device,
        "quick": args.quick,
        "all": args.all,
        "timing": "do_bench(warmup=25, rep=100, return_mode='median'), L2 flushed" if timed else "none (verify only)",
    }
    results: list[dict] = []
    rooflines: dict[str, float] = {}
    print(json.dumps(meta), flush=True)
    print(HEADER, flush=True)
    for size, dt in itertools.product(args.sizes.split(","), args.dtypes.split(",")):
        m, n = (int(v) for v in size.split("x"))
        dtype = DTYPES[dt]
        torch.manual_seed(0)
        x = torch.randn(m, n, device=args.device, dtype=dtype)
        ref = x.double().sum(0)
        base = {"dtype": dt, "size": size}
        copy = copy_ms(m * n * x.element_size(), args.device) if timed else None
        if copy is not None:
            rooflines[f"{dt} {size}"] = copy
        rec = {**base, **torch_row(x, ref, timed)}
        torch_ms = rec.get("ms")
        emit(rec, copy, torch_ms, results)
        for cfg in sweep(x.element_size(), args.quick, args.all):
            emit({**base, **probe(x, cfg, sms, ref, timed)}, copy, torch_ms, results)
        del x, ref
    best = {}
    for size, dt in itertools.product(args.sizes.split(","), args.dtypes.split(",")):
        ok = [r for r in results if (r["dtype"], r["size"]) == (dt, size) and r["status"] == "ok"]
        ok = sorted((r for r in ok if r["form"].startswith("split")), key=lambda r: r["ms"])[:5]
        best[f"{dt} {size}"] = ok
        if timed:
            print(f"\nbest 5, {dt} {size} (copy {rooflines[f'{dt} {size}']:.4f} ms):\n{HEADER}", flush=True)
            for r in ok:
                print(row_text(r), flush=True)
    counts = {s: sum(r["status"] == s for r in results) for s in ("ok", "verified", "wrong", "compile_error", "error")}
    meta["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"\n{len(results)} rows {json.dumps(counts)} in {meta['seconds']} s; JSON: {out}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "rooflines_ms": rooflines, "results": results, "best": best}, indent=1))


if __name__ == "__main__":
    main()
