"""Speed of the copy kernels the tile IR lifts (lift/copies.py, lift/tma.py): tiles moved through
shared buffers with dma.copy, with tma.copy (tensor descriptors), and a transpose through a shared
tile, each against a device copy of the same bytes measured in the same process, paired round by
round (ratio = copy time / kernel time: 1.0 is the memory bandwidth a plain copy reaches).

    python3 perf/bench_copies.py [--size 8192] [--rounds 5] [--schedules source,auto] [--md OUT.md] [--json OUT.json]

Every kernel is checked against torch first (a NaN-poisoned output, every element compared).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench import run_info, smi  # noqa: E402
from bench_irregular import report, timed  # noqa: E402

PROGRAMS = """
__co__ void dma_tiles(global f16 [M, N] x, global f16 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    s = dma.copy x.subspan(32, 32).at(bm, bn) => shared;
    shared f16 [32, 32] r;
    parallel {i, j} by [32, 32] : thread
      r.at(i, j) = s.data.at(i, j) * 2.0f + 1.0f;
    dma.copy r => y.subspan(32, 32).at(bm, bn);
  }
}

__co__ void tma_tiles(global f16 [M, N] x, global f16 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    shared f16 [32, 32] s, r;
    f = tma.copy.async.swiz<128> x.subspan(32, 32).at(bm, bn) => s;
    wait f;
    parallel {i, j} by [32, 32] : thread
      r.at(i, j) = s.at(i, j) * 2.0f + 1.0f;
    tma.copy r => y.subspan(32, 32).at(bm, bn);
  }
}

__co__ void transpose(global f16 [M, N] x, global f16 [N, M] y) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    s = dma.copy x.subspan(32, 32).at(bm, bn) => shared;
    shared f16 [32, 32] t;
    parallel {i, j} by [32, 32] : thread
      t.at(j, i) = s.data.at(i, j);
    dma.copy t => y.subspan(32, 32).at(bn, bm);
  }
}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--schedules", default="source,auto", help="comma-separated schedules, timed in one run")
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch

    from croq2triton.api import load

    info = run_info()
    path = Path("/tmp/bench_copies.co")
    path.write_text(PROGRAMS)
    schedules = args.schedules.split(",")
    mods = {sched: load(path, schedule=sched) for sched in schedules}
    rows = []
    # a square size, and a ragged one whose rows stay 16-byte aligned (an odd row length cannot be
    # read in vectors by any 2-D tiled kernel; a device copy does not care)
    for m, n in ((args.size, args.size), (args.size - 192, args.size - 56)):
        x = torch.randn(m, n, device="cuda").half()
        src = torch.empty(2 * m * n, device="cuda", dtype=torch.uint8)  # the bytes read (f16, m x n)
        dst = torch.empty_like(src)
        for name, ref in (("dma_tiles", lambda x=x: x * 2 + 1), ("tma_tiles", lambda x=x: x * 2 + 1), ("transpose", lambda x=x: x.T)):  # fmt: skip
            for sched in schedules:
                y = torch.full((n, m) if name == "transpose" else (m, n), float("nan"), device="cuda").half()
                fn = getattr(mods[sched], name)
                fn(x, y)
                torch.cuda.synchronize()
                ok = bool(torch.equal(y, ref()))
                r = timed(lambda f=fn, y=y, x=x: f(x, y), {"copy": lambda s=src, d=dst: d.copy_(s)}, args.rounds)
                rows.append({"kernel": name, "schedule": sched, "shape": f"{m}x{n}", "check": "ok" if ok else "WRONG", **r})  # fmt: skip
                print(f"{name} ({sched}) {m}x{n} f16: {r['ms']:.4f} ms, {r['vs_copy']:.3f} of a device copy ({'ok' if ok else 'WRONG'})")  # fmt: skip
    info["clocks_after"] = smi()
    table = [
        "| kernel | schedule | shape | check | median ms | device copy ms | ratio to the copy (paired) |",
        "|---|---|---|---|---|---|---|",
    ]
    table += [f"| {r['kernel']} | {r['schedule']} | {r['shape']} f16 | {r['check']} | {r['ms']:.4f} | {r['copy_ms']:.4f} | {r['vs_copy']:.3f} |" for r in rows]  # fmt: skip
    raw = [f"{r['kernel']} {r['schedule']} {r['shape']}: {r['raw']}" for r in rows]
    return report(f"perf/bench_copies.py (schedules {args.schedules})", info, table, raw, rows, args.md, args.json)


if __name__ == "__main__":
    sys.exit(main())
