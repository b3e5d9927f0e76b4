"""One GPU session in one go: correctness of every translated kernel, then GEMM speed vs cuBLAS.

    python3 perf/gpu_check.py [--sizes 4096] [--json OUT.json]

1. runs the interpreter test files compiled on the GPU (CROQ2TRITON_TEST_DEVICE=cuda);
2. times the translated GEMMs against torch.matmul (cuBLAS) in the same process: interleaved,
   random fp16 inputs, warmed up, median of triton.testing.do_bench; every timed kernel is
   checked against torch first;
3. prints a markdown table (for perf/RESULTS.md) with the GPU, versions and SM clocks.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def smi(query: str) -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        ).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"n/a ({e})"


def run_tests(shared: str | None) -> int:
    env = dict(os.environ, CROQ2TRITON_TEST_DEVICE="cuda")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("TRITON_INTERPRET", None)
    if shared:
        env["CROQ2TRITON_SHARED"] = shared
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_kernels_examples.py",
        "tests/test_kernels_corpus.py", "tests/test_pipelines.py", "tests/test_irregular.py", "tests/test_tma_oob.py",
        "tests/test_corpus_e2e.py", "tests/test_schedule.py", "tests/test_frags.py",
        "-k", "not compiles_for_sm90a and not variant_compiles",
    ]  # fmt: skip
    print("$", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=REPO, env=env)
    return r.returncode


GEMMS = [
    ("examples/gemm_v0.co", "matmul", "v0 naive (lifted to tl.dot)"),
    ("examples/gemm_v1.co", "matmul", "v1 shared memory"),
    ("examples/gemm_v2.co", "matmul", "v2 TMA + wgmma"),
    ("examples/gemm_v3.co", "matmul", "v3 warp-specialised, 1 stage"),
    ("examples/gemm_v4.co", "matmul", "v4 2 consumers, 2 stages"),
    ("examples/tma_pipeline.co", "matmul", "seed tma_pipeline_matmul"),
    ("corpus:upstream/tests/gpu/end2end/wgmma_ss.co", "matmul_f16", "wgmma_ss.co matmul_f16"),
]


PIPELINED = ("v3 warp-specialised, 1 stage", "v4 2 consumers, 2 stages", "seed tma_pipeline_matmul")


def _variant(f: object, **over: object) -> object:
    """The launcher with some launch parameters overridden (WARP_SPECIALIZE, NUM_STAGES)."""
    from croq2triton.runtime import launch as rt

    def launch(kernel: object, grid: tuple[int, ...], args: list[object], kwargs: dict[str, object]) -> None:
        kw = dict(kwargs)
        kw.update({k: v for k, v in over.items() if k in kw})
        rt.launch(kernel, grid, args, kw)

    return lambda a, b, out: f(a, b, out, _launch=launch)  # type: ignore[operator]


def check_variants(sizes: list[int], mods: dict[str, object]) -> list[str]:
    """Every emitted num_stages / warp-specialization variant computes exactly what num_stages=1 computes."""
    import torch

    lines = []
    for n in sizes:
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        for label in PIPELINED:
            if label not in mods:
                continue
            outs = {}
            for vname, over in (("default", {}), ("ws", {"WARP_SPECIALIZE": True}), ("stages=1", {"NUM_STAGES": 1})):
                out = torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16)
                _variant(mods[label], **over)(a, b, out)
                torch.cuda.synchronize()
                outs[vname] = out
            same = {k: bool(torch.equal(v, outs["stages=1"])) for k, v in outs.items()}
            lines.append(f"{label} {n}^3: equal to the num_stages=1 result: {same}")
    return lines


def bench_gemms(sizes: list[int], shared: str | None) -> list[dict[str, object]]:
    import torch
    import triton

    from croq2triton.api import load

    rows: list[dict[str, object]] = []
    mods = {}
    for path, fn, label in GEMMS:
        if path.startswith("corpus:"):
            if not shared:
                continue
            p = Path(shared) / "corpus" / path.split(":", 1)[1]
        else:
            p = REPO / path
        mods[label] = getattr(load(p), fn)
    for label in PIPELINED:
        if label in mods:
            mods[label + " +warp_specialize"] = _variant(mods[label], WARP_SPECIALIZE=True)
    global VARIANT_LINES
    VARIANT_LINES = check_variants([1024, 4000], {k: v for k, v in mods.items() if k in PIPELINED})
    for line in VARIANT_LINES:
        print(line, flush=True)
    for n in sizes:
        torch.manual_seed(n)
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        ref = torch.matmul(a, b.T)
        flops = 2.0 * n * n * n
        results: dict[str, list[float]] = {label: [] for label in mods}
        results["cuBLAS"] = []
        outs = {label: torch.empty(n, n, device="cuda", dtype=torch.float16) for label in mods}
        for label, f in mods.items():
            out = outs[label]
            out.fill_(float("nan"))
            f(a, b, out)
            torch.cuda.synchronize()
            err = (out.float() - ref.float()).abs().max().item()
            ok = bool(torch.isfinite(out).all().item()) and err < 0.05 * ref.abs().max().item()
            rows.append({"kernel": label, "size": n, "check": "ok" if ok else f"FAIL err={err:.3g}"})
        for _ in range(3):  # interleave: cuBLAS, then each kernel, three rounds
            results["cuBLAS"].append(
                triton.testing.do_bench(lambda a=a, b=b: torch.matmul(a, b.T), warmup=25, rep=200, return_mode="median")
            )
            for label, f in mods.items():
                out = outs[label]
                results[label].append(
                    triton.testing.do_bench(
                        lambda f=f, out=out, a=a, b=b: f(a, b, out), warmup=25, rep=200, return_mode="median"
                    )
                )
        base = sorted(results["cuBLAS"])[1]
        rows.append(
            {
                "kernel": "cuBLAS (torch.matmul)",
                "size": n,
                "ms": base,
                "tflops": flops / base / 1e9,
                "ratio": 1.0,
                "check": "ref",
            }
        )
        for label in mods:
            ms = sorted(results[label])[1]
            for r in rows:
                if r["kernel"] == label and r["size"] == n and "ms" not in r:
                    r.update(
                        {
                            "ms": ms,
                            "tflops": flops / ms / 1e9,
                            "ratio": base / ms,
                            "raw_ms": results[label],
                            "cublas_raw_ms": results["cuBLAS"],
                        }
                    )
    return rows


VARIANT_LINES: list[str] = []


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096")
    ap.add_argument("--json", default=None)
    ap.add_argument("--skip-tests", action="store_true")
    args = ap.parse_args()
    shared = os.environ.get("CROQ2TRITON_SHARED")
    if not shared and (REPO.parent / "shared").exists():
        shared = str(REPO.parent / "shared")
    import torch
    import triton

    info = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "clocks_before": smi("clocks.sm,clocks.mem,power.draw"),
    }
    status = 0 if args.skip_tests else run_tests(shared)
    rows = bench_gemms([int(x) for x in args.sizes.split(",")], shared)
    info["clocks_after"] = smi("clocks.sm,clocks.mem,power.draw")
    print(f"\n{info['date']}, {info['gpu']}, torch {info['torch']}, triton {info['triton']}")
    print(f"SM/mem clocks, power before: {info['clocks_before']}; after: {info['clocks_after']}")
    print("\n| kernel | size | check | median ms | TFLOP/s | ratio to cuBLAS |\n|---|---|---|---|---|---|")
    for r in rows:
        if "ms" in r:
            print(
                f"| {r['kernel']} | {r['size']}^3 fp16 | {r['check']} | {r['ms']:.3f} | {r['tflops']:.1f} | {r['ratio']:.3f} |"
            )
    for line in VARIANT_LINES:
        print(line)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"info": info, "rows": rows, "tests_status": status, "variants": VARIANT_LINES}, indent=1)
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
