"""Speed of irregular GEMMs: a grouped (MoE) GEMM whose rows per expert are read from tensors,
and block-scaled fp8 GEMMs (tests/programs/blockscale.co), under a schedule (default auto).

    python3 perf/bench_irregular.py [--size 4096] [--experts 8] [--rounds 3] [--schedule auto] [--md OUT.md]

References measured in the same process, paired round by round: for the grouped GEMM, one
``torch.mm`` with the same number of rows (T x N x K: the same FLOPs, the ideal a grouped GEMM can
reach) and the per-expert loop of ``torch.mm`` a torch user writes; for the block-scaled GEMMs,
``torch._scaled_mm`` with per-tensor scales at the same size (fp8, the same FLOPs). Every kernel is
checked against a float32 torch reference first.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench import median_of_rounds, run_info, smi  # noqa: E402


def timed(run, refs: dict[str, object], rounds: int) -> dict[str, object]:  # noqa: ANN001
    import triton

    mine: list[float] = []
    lib: dict[str, list[float]] = {k: [] for k in refs}
    ratio: dict[str, list[float]] = {k: [] for k in refs}
    for _ in range(rounds):
        ref_t = {k: triton.testing.do_bench(f, warmup=25, rep=200) for k, f in refs.items()}
        t = triton.testing.do_bench(run, warmup=25, rep=200)
        mine.append(t)
        for k, v in ref_t.items():
            lib[k].append(v)
            ratio[k].append(v / t)
    out: dict[str, object] = {"ms": median_of_rounds(mine), "raw": mine}
    for k in refs:
        out[f"{k}_ms"] = median_of_rounds(lib[k])
        out[f"vs_{k}"] = median_of_rounds(ratio[k])
    return out


def report(title: str, info: dict[str, str], table: list[str], raw: list[str], rows: list[dict[str, object]],
           md: str | None, js: str | None) -> int:  # fmt: skip
    """Print (and write to ``md`` / ``js``) a RESULTS.md block: the run's header, ``table`` (its
    markdown rows, header included) and ``raw`` per-round times; 1 where some check failed."""
    cmd = "python3 " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    lines = [
        f"## {info['date']} - {title}",
        "",
        f"* GPU: {info['gpu']}; torch {info['torch']}, Triton {info['triton']}",
    ]
    lines += [f"* clocks before: {info['clocks_before']}; after: {info['clocks_after']}", f"* Command: `{cmd}`", ""]
    lines += [*table, "", "Raw kernel medians per round (ms):", "", "```", *raw, "```", ""]
    text = "\n".join(lines)
    print(text)
    if md:
        Path(md).write_text(text)
    if js:
        Path(js).write_text(json.dumps({"info": info, "rows": rows}, indent=1))
    return 0 if all(r["check"] == "ok" for r in rows) else 1


def bench_moe(n: int, experts: int, rounds: int, schedule: str) -> list[dict[str, object]]:
    import torch

    from croq2triton.api import load

    mod = load(HERE / "programs" / "moe.co", schedule=schedule)
    rows = []
    t = 2 * n
    torch.manual_seed(5)
    for label, counts in (
        ("equal", [t // experts] * experts),
        ("ragged", torch.distributions.Dirichlet(torch.ones(experts)).sample().mul(t).floor().long().tolist()),
    ):
        counts[-1] += t - sum(counts)
        offsets = [sum(counts[:i]) for i in range(experts)]
        lhs = torch.randn(t, n, device="cuda").half()
        rhs = torch.randn(experts, n, n, device="cuda").half()
        off = torch.tensor(offsets, dtype=torch.int32, device="cuda")
        cnt = torch.tensor(counts, dtype=torch.int32, device="cuda")
        out = torch.full((t, n), float("nan"), device="cuda", dtype=torch.float16)

        def run(lhs=lhs, rhs=rhs, off=off, cnt=cnt, out=out) -> None:
            mod.moe(lhs, rhs, off, cnt, out)

        run()
        torch.cuda.synchronize()
        ref = torch.cat([lhs[o : o + c].float() @ rhs[e].float().T for e, (o, c) in enumerate(zip(offsets, counts))])
        err = (out.float() - ref).abs().max().item()
        row: dict[str, object] = {"kernel": f"moe {label} ({experts} experts, T={t})", "shape": f"{t}x{n}x{n}"}
        if not (bool(torch.isfinite(out).all()) and err <= 2e-2 * ref.abs().max().item() + 0.05):
            row["note"] = f"WRONG (max err {err:.3g})"
            rows.append(row)
            continue
        w = rhs[0]

        def one_mm(lhs=lhs, w=w) -> object:
            return torch.mm(lhs, w.T)

        def loop(lhs=lhs, rhs=rhs, offsets=offsets, counts=counts) -> object:
            return [torch.mm(lhs[o : o + c], rhs[e].T) for e, (o, c) in enumerate(zip(offsets, counts))]

        row.update(timed(run, {"mm": one_mm, "loop": loop}, rounds))
        rows.append(row)
    return rows


def bench_blockscale(n: int, rounds: int, schedule: str) -> list[dict[str, object]]:
    import torch

    from croq2triton.api import load

    mod = load(REPO / "tests" / "programs" / "blockscale.co", schedule=schedule)
    rows = []
    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    kb = (n + 63) // 64
    sa = torch.rand(n, kb, device="cuda") + 0.5
    sb = torch.rand((n + 63) // 64, kb, device="cuda") + 0.5
    one = torch.ones((), device="cuda")
    af, bf = a.float(), b.float()
    ref = sum(
        (af[:, k * 64 : (k + 1) * 64] * sa[:, k : k + 1])
        @ (bf[:, k * 64 : (k + 1) * 64] * sb[:, k].repeat_interleave(64)[:n, None]).T
        for k in range(kb)
    )
    for fn, dt in (("scaled_inline", torch.float32), ("scaled_split", torch.float16)):
        out = torch.full((n, n), float("nan"), device="cuda", dtype=dt)

        def run(fn=fn, out=out) -> None:
            getattr(mod, fn)(a, sa, b, sb, out)

        run()
        torch.cuda.synchronize()
        err = (out.float() - ref).abs().max().item()
        row: dict[str, object] = {"kernel": f"blockscale {fn} (f8 -> {str(dt)[6:]})", "shape": f"{n}^3"}
        if not (bool(torch.isfinite(out).all()) and err <= 2e-2 * ref.abs().max().item() + 0.05):
            row["note"] = f"WRONG (max err {err:.3g})"
            rows.append(row)
            continue
        bcol = b.T

        def scaled(dt=dt, bcol=bcol) -> object:
            return torch._scaled_mm(a, bcol, one, one, out_dtype=dt)

        row.update(timed(run, {"scaled_mm": scaled}, rounds))
        rows.append(row)
    return rows


def markdown(info: dict[str, str], rows: list[dict[str, object]], cmd: str) -> str:
    out = [f"## {info['date']} - perf/bench_irregular.py: grouped and block-scaled GEMMs", ""]
    out.append(f"* {info['gpu']}, torch {info['torch']}, Triton {info['triton']}; clocks (SM, mem, power) "
               f"before {info['clocks_before']}, after {info['clocks_after']}.")  # fmt: skip
    out.append(f"* Command: `{cmd}`. Ratios = reference time / kernel time, medians over paired rounds.")
    out += ["", "| kernel | shape | kernel ms | reference ms | ratio | note |", "|---|---|---|---|---|---|"]
    for r in rows:
        refs = [k[3:] for k in r if k.startswith("vs_")] or [""]
        for k in refs:
            ms = f"{r['ms']:.4f}" if "ms" in r else ""
            ref = f"{k}: {r[k + '_ms']:.4f}" if k else ""
            ratio = f"{r['vs_' + k]:.3f}" if k else ""
            out.append(f"| {r['kernel']} | {r['shape']} | {ms} | {ref} | {ratio} | {r.get('note', '')} |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--schedule", default="auto")
    ap.add_argument("--md", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    info = run_info()
    rows = bench_moe(args.size, args.experts, args.rounds, args.schedule)
    rows += bench_blockscale(args.size, args.rounds, args.schedule)
    info["clocks_after"] = smi()
    md = markdown(info, rows, "python3 perf/bench_irregular.py " + " ".join(sys.argv[1:]))
    print(md)
    if args.md:
        Path(args.md).write_text(md)
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "rows": rows}, indent=1))
    return 0 if all("WRONG" not in str(r.get("note", "")) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
