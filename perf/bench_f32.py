"""f32 GEMMs: what IEEE f32 products cost next to TF32, and how far each is from float64.

    python3 perf/bench_f32.py [--shapes 1024,4096] [--rounds 3] [--json OUT.json] [--md OUT.md]

The two f32 forms of ``tests/programs/f32_gemms.co`` (a per-thread loop of f32 multiply-adds,
batched; an MMA on f32 tiles staged through shared memory), translated with each f32 precision
(``ieee``: the default; ``tf32x3``; ``tf32``: ``--allow-tf32``) under both schedules, each checked
against float64 on random data (max |error| / max |reference|), then timed in rounds, each kernel
right after cuBLAS in IEEE f32 (``torch.backends.cuda.matmul.allow_tf32 = False``) and right after
cuBLAS in TF32; ``triton.testing.do_bench`` (its L2 flush, 25 ms warm-up, 200 ms of repetitions,
median); the table gives the median over rounds of each time and of each paired ratio
(cuBLAS time / kernel time).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "perf"))

from bench import median_of_rounds, run_info, smi  # noqa: E402

PROGRAM = REPO / "tests" / "programs" / "f32_gemms.co"
PRECISIONS = ("ieee", "tf32x3", "tf32")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="1024,4096")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--schedules", default="source,auto")
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()

    import torch
    import triton

    from croq2triton.api import load

    info = run_info()
    rows: list[dict[str, object]] = []
    mods = {(s, p): load(PROGRAM, schedule=s, f32_precision=p) for s in args.schedules.split(",") for p in PRECISIONS}
    for n in [int(x) for x in args.shapes.split(",")]:
        z = 4 if n <= 1024 else 1
        g = torch.Generator(device="cuda").manual_seed(n)
        a = torch.randn(z, n, n, device="cuda", generator=g)
        b = torch.randn(z, n, n, device="cuda", generator=g)
        lhs, rhs = a[0], b[0]  # mma_f32: lhs [M, K], rhs [N, K]
        ref_bmm = torch.bmm(a.double(), b.double())
        ref_mma = lhs.double() @ rhs.double().T

        def cublas(tf32: bool, form: str, a=a, b=b, lhs=lhs, rhs=rhs):  # noqa: ANN001, ANN202
            def run() -> None:
                torch.backends.cuda.matmul.allow_tf32 = tf32
                if form == "bmm_thread":
                    torch.bmm(a, b)
                else:
                    torch.matmul(lhs, rhs.T)

            return run

        for form, ref in (("bmm_thread", ref_bmm), ("mma_f32", ref_mma)):
            flops = 2.0 * (z if form == "bmm_thread" else 1) * n**3
            errs = {}
            for tf32 in (False, True):
                torch.backends.cuda.matmul.allow_tf32 = tf32
                got = torch.bmm(a, b) if form == "bmm_thread" else torch.matmul(lhs, rhs.T)
                errs[tf32] = float((got.double() - ref).abs().max() / ref.abs().max())
            torch.backends.cuda.matmul.allow_tf32 = False
            live = {}
            for (sched, prec), mod in mods.items():
                out = torch.full(ref.shape, float("nan"), device="cuda")
                f = getattr(mod, form)
                x, y = (a, b) if form == "bmm_thread" else (lhs, rhs)
                call = lambda f=f, out=out, x=x, y=y: f(x, y, out)  # noqa: E731
                call()
                torch.cuda.synchronize()
                err = float((out.double() - ref).abs().max() / ref.abs().max())
                live[(sched, prec)] = (call, err, bool(torch.isnan(out).any()))
            times: dict[object, list[float]] = {"ieee": [], "tf32": []}
            pairs: dict[object, dict[str, list[float]]] = {k: {"ieee": [], "tf32": []} for k in live}
            ktimes: dict[object, list[float]] = {k: [] for k in live}
            for _ in range(args.rounds):
                for key, (call, _err, _nan) in live.items():
                    for which in ("ieee", "tf32"):
                        c = triton.testing.do_bench(cublas(which == "tf32", form), warmup=25, rep=200)
                        torch.backends.cuda.matmul.allow_tf32 = False
                        t = triton.testing.do_bench(call, warmup=25, rep=200)
                        times[which].append(c)
                        ktimes[key].append(t)
                        pairs[key][which].append(c / t)
            for which in ("ieee", "tf32"):
                ms = median_of_rounds(times[which])
                rows.append(
                    {
                        "form": form,
                        "n": n,
                        "batch": z if form == "bmm_thread" else 1,
                        "kernel": f"cuBLAS {'TF32' if which == 'tf32' else 'IEEE f32'}",
                        "ms": ms,
                        "tflops": flops / ms / 1e9,
                        "rel_err": errs[which == "tf32"],
                    }
                )
            for (sched, prec), (_call, err, nan) in live.items():
                ms = median_of_rounds(ktimes[(sched, prec)])
                rows.append(
                    {
                        "form": form,
                        "n": n,
                        "batch": z if form == "bmm_thread" else 1,
                        "kernel": f"{sched} {prec}",
                        "ms": ms,
                        "tflops": flops / ms / 1e9,
                        "rel_err": err,
                        "nan": nan,
                        "vs_cublas_ieee": median_of_rounds(pairs[(sched, prec)]["ieee"]),
                        "vs_cublas_tf32": median_of_rounds(pairs[(sched, prec)]["tf32"]),
                        "raw_ms": ktimes[(sched, prec)],
                    }
                )
            for r in rows[-(2 + len(live)) :]:
                print(json.dumps({k: v for k, v in r.items() if k != "raw_ms"}), flush=True)
    info["clocks_after"] = smi()
    cmd = "python3 perf/bench_f32.py " + " ".join(sys.argv[1:])
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "cmd": cmd, "rows": rows}, indent=1))
    lines = [
        f"{info['date']}, {info['gpu']}, torch {info['torch']}, Triton {info['triton']}; clocks before "
        f"{info['clocks_before']}, after {info['clocks_after']}; `{cmd}`",
        "",
        "| form | n (batch) | kernel | ms | TFLOP/s | max err / max ref | vs cuBLAS IEEE | vs cuBLAS TF32 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        vi = f"{r['vs_cublas_ieee']:.3f}" if "vs_cublas_ieee" in r else ""
        vt = f"{r['vs_cublas_tf32']:.3f}" if "vs_cublas_tf32" in r else ""
        lines.append(
            f"| {r['form']} | {r['n']} ({r['batch']}) | {r['kernel']} | {r['ms']:.3f} | {r['tflops']:.1f} | "
            f"{r['rel_err']:.2e} | {vi} | {vt} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.md:
        Path(args.md).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
