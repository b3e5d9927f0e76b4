"""Speed of row kernels: a gather of table rows by index (an embedding lookup), and a kernel of one
element per program, under both schedules (``auto`` widens them: a program takes several rows,
schedule/widen.py), against torch (``index_select``) and a device copy of the same bytes, measured in
the same process and paired round by round (ratio = reference time / kernel time).

    python3 perf/bench_gather.py [--rounds 3] [--md OUT.md] [--json OUT.json]

Every output is checked equal to torch first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench import run_info, smi  # noqa: E402
from bench_irregular import report, timed  # noqa: E402

PROGRAMS = """
__co__ void gather_rows(global s32 [T] idx, global f16 [V, D] table, global f16 [T, D] out) {
  parallel {t, cb} by [T, cdiv(D, 256)] : block
    parallel c by 256 : thread
      out.at(t, cb # c) = table.at(idx.at(t), cb # c);
}

__co__ void bag_sum(global s32 [T, 4] idx, global f32 [V, D] table, global f32 [T, D] out) {
  parallel {t, cb} by [T, cdiv(D, 64)] : block
    parallel c by 64 : thread {
      f32 acc = 0.0f;
      foreach k in [4]
        acc = acc + table.at(idx.at(t, k), cb # c);
      out.at(t, cb # c) = acc;
    }
}

__co__ void per_element(global f32 [N] a, global f32 [N] b) {
  parallel p by N : block
    b.at(p) = a.at(p) * 2.0f + 1.0f;
}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--schedules", default="source,auto")
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch

    from croq2triton.api import load

    info = run_info()
    path = Path("/tmp/bench_gather.co")
    path.write_text(PROGRAMS)
    mods = {s: load(path, schedule=s) for s in args.schedules.split(",")}
    rows = []
    torch.manual_seed(0)
    for t, v, d in ((65536, 50000, 256), (65536, 50000, 1024), (16384, 50000, 4096)):
        table = torch.randn(v, d, device="cuda").half()
        idx = torch.randint(0, v, (t,), device="cuda", dtype=torch.int32)
        ref = torch.empty(t, d, device="cuda").half()
        src = torch.empty(2 * t * d, device="cuda", dtype=torch.uint8)  # the bytes read (and written)
        dst = torch.empty_like(src)
        for sched, mod in mods.items():
            out = torch.full((t, d), float("nan"), device="cuda").half()
            mod.gather_rows(idx, table, out)
            torch.cuda.synchronize()
            ok = bool(torch.equal(out, table[idx.long()]))
            refs = {
                "torch": lambda tb=table, ix=idx, rf=ref: torch.index_select(tb, 0, ix, out=rf),
                "copy": lambda d=dst, s=src: d.copy_(s),
            }
            r = timed(lambda m=mod, o=out, tb=table, ix=idx: m.gather_rows(ix, tb, o), refs, args.rounds)
            rows.append(
                {"kernel": f"gather_rows T={t} D={d}", "schedule": sched, "check": "ok" if ok else "WRONG", **r}
            )
            print(f"gather_rows T={t} D={d} ({sched}): {r['ms']:.4f} ms, {r['vs_torch']:.3f} of index_select, {r['vs_copy']:.3f} of a copy")  # fmt: skip
    t, v, d = 32768, 50000, 512
    table = torch.randn(v, d, device="cuda")
    bags = torch.randint(0, v, (t, 4), device="cuda", dtype=torch.int32)
    bags_long = bags.long()
    want = torch.nn.functional.embedding_bag(bags_long, table, mode="sum")
    for sched, mod in mods.items():
        out = torch.full((t, d), float("nan"), device="cuda")
        mod.bag_sum(bags, table, out)
        torch.cuda.synchronize()
        ok = bool(torch.allclose(out, want, atol=1e-4))
        refs = {"torch": lambda: torch.nn.functional.embedding_bag(bags_long, table, mode="sum")}
        r = timed(lambda m=mod, o=out: m.bag_sum(bags, table, o), refs, args.rounds)
        rows.append({"kernel": f"bag_sum T={t} x 4 D={d} f32", "schedule": sched, "check": "ok" if ok else "WRONG", "vs_copy": float("nan"), **r})  # fmt: skip
        print(f"bag_sum ({sched}): {r['ms']:.4f} ms, {r['vs_torch']:.3f} of embedding_bag")
    n = 1 << 24
    a = torch.randn(n, device="cuda")
    src = torch.empty(4 * n, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    for sched, mod in mods.items():
        b = torch.full((n,), float("nan"), device="cuda")
        mod.per_element(a, b)
        torch.cuda.synchronize()
        ok = bool(torch.equal(b, a * 2 + 1))
        r = timed(lambda m=mod, b=b: m.per_element(a, b), {"torch": lambda: torch.add(a, a, out=dst.view(torch.float32)), "copy": lambda: dst.copy_(src)}, args.rounds)  # fmt: skip
        rows.append({"kernel": f"per_element N={n}", "schedule": sched, "check": "ok" if ok else "WRONG", **r})
        print(f"per_element N={n} ({sched}): {r['ms']:.4f} ms, {r['vs_torch']:.3f} of torch.add, {r['vs_copy']:.3f} of a copy")  # fmt: skip
    info["clocks_after"] = smi()
    table = ["| kernel | schedule | check | median ms | torch ms | ratio to torch | ratio to a copy |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    table += [f"| {r['kernel']} | {r['schedule']} | {r['check']} | {r['ms']:.4f} | {r['torch_ms']:.4f} | {r['vs_torch']:.3f} | {r['vs_copy']:.3f} |" for r in rows]  # fmt: skip
    raw = [f"{r['kernel']} {r['schedule']}: {r['raw']}" for r in rows]
    return report(f"perf/bench_gather.py (schedules {args.schedules})", info, table, raw, rows, args.md, args.json)


if __name__ == "__main__":
    sys.exit(main())
