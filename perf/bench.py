"""Speed of translated kernels against cuBLAS / a device-to-device copy, measured in one process.

    python3 perf/bench.py [--shapes 4096,8192,4000] [--mnk 256x8192x8192,...] [--dtypes f16,bf16] [--md OUT.md]
                          [--json OUT.json]

GEMMs: the tutorial ladder v0..v4, the seed chapter's pipelined matmul and ``matmul_f16`` of
``wgmma_ss.co`` (translated from ``examples/`` and, when present, the shared corpus) against
``torch.matmul(a, b.T)`` (cuBLAS): random fp16 inputs (never zeros), every kernel checked against
torch before it is timed, then rounds of ``triton.testing.do_bench`` (warm-up 25 ms, 200 ms of
repetitions, median) in which every kernel is timed right after a cuBLAS run; the table shows
the median over rounds of each time and the median over rounds of the paired ratio cuBLAS time /
kernel time.  ``--shapes N`` are square (N^3); ``--mnk MxNxK`` items add shapes that are not
(``a`` is M x K, ``b`` N x K, the output M x N), e.g. the skinny M = 256, N = K = 8192 (the GPU runs these GEMMs at its power limit; its clock follows what ran just before).  Shapes that a source tiles with ``chunkat`` only compute a GEMM when the
sizes are multiples of its tile (v2, ``matmul_f16``): those are skipped at ragged shapes.
The sources hard-code ``f16``; ``--dtypes`` also measures them with every ``f16`` element type written
as ``bf16`` (inputs, outputs and buffers; the f32 accumulation is unchanged).

Elementwise: ``examples/vadd.co`` at 2^28 and 2^28 + 12345 elements (f32 and f16) against
``torch`` device-to-device copy of the same number of bytes moved (read a, read b, write out
vs read + write of one buffer: we compare bytes per second).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

GEMMS = [
    ("examples/gemm_v0.co", "matmul", "v0", False),
    ("examples/gemm_v1.co", "matmul", "v1", False),
    ("examples/gemm_v2.co", "matmul", "v2", True),
    ("examples/gemm_v3.co", "matmul", "v3", False),
    ("examples/gemm_v4.co", "matmul", "v4", False),
    ("examples/tma_pipeline.co", "matmul", "seed", False),
    ("corpus:upstream/tests/gpu/end2end/wgmma_ss.co", "matmul_f16", "wgmma_ss", True),
]
TILE_MULTIPLE = 128  # v2 / wgmma_ss are GEMMs when M, N, K are multiples of their 64/128 tiles


def smi() -> str:
    try:
        q = "clocks.sm,clocks.mem,power.draw"
        r = subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
        return r.stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"n/a ({e})"


def run_info() -> dict[str, str]:
    """The date, GPU, versions and clocks every timing record carries (``clocks_after`` added last)."""
    import torch
    import triton

    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "clocks_before": smi(),
    }


def median_of_rounds(samples: list[float]) -> float:
    return sorted(samples)[len(samples) // 2]


def as_dtype(text: str, dtype: str) -> str:
    """The source with its ``f16`` element types written as ``dtype`` (the sources hard-code f16;
    ``\\bf16\\b`` leaves names such as ``matmul_f16`` alone)."""
    return text if dtype == "f16" else re.sub(r"\bf16\b", dtype, text)


def load_gemm(p: Path, fn: str, dtype: str, schedule: str):  # noqa: ANN201
    from croq2triton.api import load_source, translate_full

    src = translate_full(as_dtype(p.read_text(), dtype), filename=p.name, schedule=schedule).source
    return getattr(load_source(src, f"bench_{p.stem}_{dtype}_{schedule}", origin=str(p)), fn)


def shape_label(m: int, n: int, k: int) -> int | str:
    """A row's shape: N for N^3 (as the tables always showed it), else ``MxNxK``."""
    return m if m == n == k else f"{m}x{n}x{k}"


def parse_mnk(text: str) -> list[tuple[int, int, int]]:
    """``256x8192x8192,1024x1024x1024`` as (M, N, K) triples."""
    out = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        parts = item.lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise SystemExit(f"--mnk: '{item}' is not MxNxK (e.g. 256x8192x8192)")
        m, n, k = (int(p) for p in parts)
        out.append((m, n, k))
    return out


def bench_gemms(
    shapes: list[tuple[int, int, int]],
    shared: str | None,
    rounds: int,
    only: set[str] | None = None,
    dtype: str = "f16",
    with_auto: bool = True,
    timer: str = "do_bench",
) -> list[dict[str, object]]:
    import torch
    import triton

    from croq2triton.tune.timing import Timer

    tune_timer = Timer("cuda") if timer == "tune" else None

    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    funcs = {}
    for path, fn, label, chunked in GEMMS:
        if only is not None and label not in only:
            continue
        if path.startswith("corpus:"):
            if not shared:
                continue
            p = Path(shared) / "corpus" / path.split(":", 1)[1]
        else:
            p = REPO / path
        funcs[label] = (load_gemm(p, fn, dtype, "source"), chunked)
        if with_auto:
            funcs[label + " auto"] = (load_gemm(p, fn, dtype, "auto"), chunked)
    rows: list[dict[str, object]] = []
    for m, n, k in shapes:
        shape = shape_label(m, n, k)
        torch.manual_seed(m * 7 + n * 3 + k)
        a = torch.randn(m, k, device="cuda", dtype=tdt)
        b = torch.randn(n, k, device="cuda", dtype=tdt)
        ref = torch.matmul(a, b.T).float()
        # both sides round the f32 sum to the output type once (bf16: 8 bits of mantissa)
        rel = 2e-3 if dtype == "f16" else 1e-2
        flops = 2.0 * m * n * k
        live = {}
        for label, (f, chunked) in funcs.items():
            if chunked and (m % TILE_MULTIPLE or n % TILE_MULTIPLE or k % TILE_MULTIPLE):
                rows.append(
                    {
                        "kernel": label,
                        "shape": shape,
                        "dtype": dtype,
                        "note": "skipped: chunkat tiling is a GEMM only for tile multiples",
                    }
                )
                continue
            out = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
            f(a, b, out)
            torch.cuda.synchronize()
            err = (out.float() - ref).abs().max().item()
            ok = bool(torch.isfinite(out).all()) and err <= rel * ref.abs().max().item() + 0.05
            if not ok:
                rows.append(
                    {"kernel": label, "shape": shape, "dtype": dtype, "note": f"WRONG (max err {err:.3g}): not timed"}
                )
                continue
            live[label] = (f, out)
        # each kernel is timed right after a cuBLAS run: the GPU sits at its power limit during these
        # GEMMs and its clock follows what ran just before, so a ratio is taken within each pair
        times: dict[str, list[float]] = {k: [] for k in ["cuBLAS", *live]}
        pairs: dict[str, list[float]] = {k: [] for k in live}
        for _ in range(rounds):
            for label, (f, out) in live.items():
                if tune_timer is not None:  # croq2triton's own method (tune/timing.py): graphs, interleaved, paired
                    timed = tune_timer.measure(
                        {
                            "cuBLAS": lambda a=a, b=b: torch.matmul(a, b.T),
                            label: lambda f=f, o=out, a=a, b=b: f(a, b, o),
                        },
                        budget_s=0.4,
                    )
                    c, t = timed.ms("cuBLAS"), timed.ms(label)
                    pairs[label].append(timed.ratio("cuBLAS", label))
                else:
                    c = triton.testing.do_bench(lambda a=a, b=b: torch.matmul(a, b.T), warmup=25, rep=200)
                    t = triton.testing.do_bench(lambda f=f, o=out, a=a, b=b: f(a, b, o), warmup=25, rep=200)
                    pairs[label].append(c / t)
                times["cuBLAS"].append(c)
                times[label].append(t)
        base = median_of_rounds(times["cuBLAS"])
        rows.append(
            {
                "kernel": "cuBLAS",
                "shape": shape,
                "dtype": dtype,
                "ms": base,
                "tflops": flops / base / 1e9,
                "ratio": 1.0,
                "raw": times["cuBLAS"],
            }
        )
        for label in live:
            ms = median_of_rounds(times[label])
            rows.append(
                {
                    "kernel": label,
                    "shape": shape,
                    "dtype": dtype,
                    "ms": ms,
                    "tflops": flops / ms / 1e9,
                    "ratio": median_of_rounds(pairs[label]),
                    "raw": times[label],
                    "pairs": pairs[label],
                }
            )
    return rows


def bench_elementwise(rounds: int, schedules: tuple[str, ...] = ("source", "auto")) -> list[dict[str, object]]:
    import torch
    import triton

    from croq2triton.api import load

    kernels = []
    for sched in schedules:
        tag = "" if sched == "source" else f" ({sched})"
        kernels += [
            (f"vadd f32{tag}", load(REPO / "examples/vadd.co", schedule=sched).vadd, torch.float32),
            (f"vadd f16{tag}", load(REPO / "examples/vadd_f16.co", schedule=sched).vadd_f16, torch.float16),
        ]
    rows: list[dict[str, object]] = []
    for label, vadd, dt in kernels:
        for n in (1 << 28, (1 << 28) + 12345):
            x = torch.randn(n, device="cuda").to(dt)
            y = torch.randn(n, device="cuda").to(dt)
            out = torch.full_like(x, float("nan"))
            vadd(x, y, out)
            torch.cuda.synchronize()
            ok = bool(torch.equal(out, x + y))
            es = x.element_size()
            src = torch.empty(n * 3 * es // 2, device="cuda", dtype=torch.uint8)  # the same bytes moved as the add
            dst = torch.empty_like(src)
            times: dict[str, list[float]] = {"copy": [], "vadd": []}
            for _ in range(rounds):
                times["copy"].append(triton.testing.do_bench(lambda s=src, d=dst: d.copy_(s), warmup=25, rep=200))
                times["vadd"].append(
                    triton.testing.do_bench(lambda x=x, y=y, o=out, f=vadd: f(x, y, o), warmup=25, rep=200)
                )
            bytes_moved = 3 * es * n
            c, v = median_of_rounds(times["copy"]), median_of_rounds(times["vadd"])
            rows.append({"kernel": label, "n": n, "check": "ok" if ok else "WRONG", "ms": v, "tbps": bytes_moved / v / 1e9,
                         "copy_tbps": bytes_moved / c / 1e9, "ratio": c / v, "raw": times})  # fmt: skip
    return rows


def markdown(info: dict[str, str], gemm: list[dict[str, object]], elem: list[dict[str, object]], cmd: str) -> str:
    out = [f"## {info['date']} - perf/bench.py (source schedules, and `auto` rows: --schedule auto)", ""]
    out.append(f"* GPU: {info['gpu']}; torch {info['torch']}, Triton {info['triton']}")
    out.append(f"* SM / memory clock, power: before {info['clocks_before']}; after {info['clocks_after']}")
    out.append(f"* Command: `{cmd}`")
    out += [
        "",
        "| kernel | shape | dtype | median ms | TFLOP/s | ratio to cuBLAS (paired) |",
        "|---|---|---|---|---|---|",
    ]
    for r in gemm:
        dims = f"{r['shape']}^3" if isinstance(r["shape"], int) else r["shape"]
        head = f"| {r['kernel']} | {dims} | {r['dtype']} |"
        if "ms" in r:
            out.append(f"{head} {r['ms']:.3f} | {r['tflops']:.1f} | {r['ratio']:.3f} |")
        else:
            out.append(f"{head} - | - | {r['note']} |")
    out += [
        "",
        "| kernel | elements | check | median ms | TB/s | copy TB/s | ratio to copy |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in elem:
        out.append(
            f"| {r['kernel']} | {r['n']} | {r['check']} | {r['ms']:.3f} | {r['tbps']:.2f} | {r['copy_tbps']:.2f} | {r['ratio']:.3f} |"
        )
    out += ["", "Raw medians per round (ms):", "", "```"]
    for r in gemm:
        if "raw" in r:
            line = f"{r['kernel']} {r['shape']} {r['dtype']}: {[round(x, 4) for x in r['raw']]}"  # type: ignore[union-attr]
            if "pairs" in r:
                line += f" paired ratios {[round(x, 3) for x in r['pairs']]}"  # type: ignore[union-attr]
            out.append(line)  # type: ignore[union-attr]
    for r in elem:
        out.append(f"{r['kernel']} {r['n']}: {json.dumps({k: [round(x, 4) for x in v] for k, v in r['raw'].items()})}")  # type: ignore[union-attr]
    out.append("```")
    return "\n".join(out) + "\n"


# tests/programs/gemm_forms: (file, defines, output dtype, input dtype, b stored [K, N], batch, num_sms argument)
FORMS = [
    ("scalar_1x1", {}, "f32", "f16", False, 0, None),
    ("thread_4x4", {}, "f32", "f16", False, 0, None),
    ("thread_8x32", {}, "f32", "f16", False, 0, None),
    ("thread_16x16", {}, "f16", "f16", False, 0, None),
    ("staged_k16", {}, "f32", "f16", False, 0, None),
    ("staged_k32_future", {}, "f32", "f16", False, 0, None),
    ("staged_k48", {}, "f16", "f16", False, 0, None),
    ("staged_k128_kn", {}, "f32", "f16", True, 0, None),
    ("mma_rowrow_global", {}, "f32", "f16", False, 0, None),
    ("mma_rowcol_dmaout", {}, "f16", "f16", True, 0, None),
    ("rega_n80_tma", {}, "f16", "f16", False, 0, None),
    ("ntile_f16acc", {"BN": "48"}, "f16", "f16", False, 0, None),
    ("ntile_f16acc", {"BN": "192"}, "f16", "f16", False, 0, None),
    ("ntile_shared", {"BN": "96"}, "f16", "f16", False, 0, None),
    ("batched", {}, "f32", "f16", False, 4, None),
    ("pipe_1c_s4", {}, "f32", "f16", False, 0, None),
    ("pipe_2c_s2", {}, "f16", "f16", False, 0, None),
    ("pipe_3c_s1", {}, "f32", "f16", False, 0, None),
    ("pipe_tut_1c_s2", {}, "f16", "f16", False, 0, None),
    ("pipe_tut_3c_s3", {}, "f32", "f16", False, 0, None),
    ("persistent", {}, "f16", "f16", False, 0, None),
    ("persistent_param", {}, "f32", "f16", False, 0, 132),
    ("fp8_f32out", {}, "f32", "f8", False, 0, None),
    ("fp8_f16out", {}, "f16", "f8", False, 0, None),
    ("warp_mma", {}, "f32", "f16", True, 0, None),
    ("warp_mma_staged", {}, "f16", "f16", False, 0, None),
    ("wg2_split_store", {}, "f32", "f16", False, 0, None),
    ("sum_commuted_kn", {}, "f16", "f16", True, 0, None),
    ("thread_4x4_arith", {}, "f32", "f16", False, 0, None),
    ("guarded_k_split", {}, "f32", "f16", False, 0, None),
    ("flat_tile_ids", {}, "f32", "f16", False, 0, None),
    ("unrolled_k2", {}, "f32", "f16", False, 0, None),
    ("thread_store_shared", {}, "f32", "f16", False, 0, None),
    ("block_scalar", {}, "f16", "f16", False, 0, None),
    ("with_foreach", {}, "f32", "f16", False, 0, None),
    # tests/programs/gemm_forms4 (FORM_DIRS): forms of the same signature, gemm(a, b, out)
    ("two_accs_thread", {}, "f32", "f16", False, 0, None),
    ("k_while_thread", {}, "f32", "f16", False, 0, None),
    ("chunk_elems_thread", {}, "f32", "f16", False, 0, None),
    ("sgemm_reg_frags", {}, "f32", "f32", True, 0, None),
    ("pipe_consumer_first_s3", {}, "f16", "f16", False, 0, None),
    ("warp_frag_array", {}, "f32", "f16", False, 0, None),
]
# the forms of FORMS kept in another directory of tests/programs than gemm_forms
FORM_DIRS = {
    name: "gemm_forms4"
    for name in (
        "two_accs_thread",
        "k_while_thread",
        "chunk_elems_thread",
        "sgemm_reg_frags",
        "pipe_consumer_first_s3",
        "warp_frag_array",
    )
}


def bench_forms(
    shapes: list[int], rounds: int, schedules: list[str], only: set[str] | None = None
) -> list[dict[str, object]]:
    """Every GEMM form of tests/programs/gemm_forms (and those of FORM_DIRS), against the library GEMM with the same
    inputs and output type in the same process (cuBLAS ``torch.mm``, f32 outputs through
    ``out_dtype``; fp8: ``torch._scaled_mm``), paired round by round."""
    import torch
    import triton

    from croq2triton.api import load

    dts = {"f16": torch.float16, "f32": torch.float32, "f8": torch.float8_e4m3fn}
    rows: list[dict[str, object]] = []
    one = torch.ones((), device="cuda")
    for n in shapes:
        for name, defines, out_t, in_t, b_kn, batch, num_sms in FORMS:
            label = name + "".join(f"-{k}{v}" for k, v in defines.items())
            if only is not None and label not in only:
                continue
            torch.manual_seed(n)
            lead = (batch,) if batch else ()
            a = torch.randn(*lead, n, n, device="cuda").to(dts[in_t])
            b = torch.randn(*lead, n, n, device="cuda").to(dts[in_t])
            bt = b if b_kn else b.transpose(-1, -2)
            if in_t == "f8":
                bcol = b.T if not b_kn else b.T.contiguous().T

                def lib(a=a, bcol=bcol, out_t=out_t):  # noqa: ANN202
                    return torch._scaled_mm(a, bcol, one, one, out_dtype=dts[out_t])
            elif batch:

                def lib(a=a, bt=bt, out_t=out_t):  # noqa: ANN202
                    return torch.bmm(a, bt, out_dtype=dts[out_t]) if out_t == "f32" else torch.bmm(a, bt)
            else:

                def lib(a=a, bt=bt, out_t=out_t):  # noqa: ANN202
                    return torch.mm(a, bt, out_dtype=dts[out_t]) if out_t == "f32" else torch.mm(a, bt)

            lib_note = ""
            try:
                ref = lib().float()
            except TypeError:  # a torch without out_dtype: cuBLAS with f16 output, and said so
                lib_note = "library: f16 output"

                def lib(a=a, bt=bt):  # noqa: ANN202
                    return torch.matmul(a, bt)

                ref = torch.matmul(a.float(), bt.float())
            for sched in schedules:
                row: dict[str, object] = {"kernel": f"{label} {sched}", "shape": n, "dtype": f"{in_t}->{out_t}"}
                if lib_note:
                    row["note"] = lib_note
                rows.append(row)
                try:
                    folder = REPO / "tests/programs" / FORM_DIRS.get(name, "gemm_forms")
                    mod = load(folder / f"{name}.co", schedule=sched, defines=defines or None)
                except Exception as e:  # noqa: BLE001
                    row["note"] = f"not translated: {str(e).splitlines()[0][:120]}"
                    continue
                out = torch.full((*lead, n, n), float("nan"), device="cuda", dtype=dts[out_t])
                extra = [num_sms] if num_sms is not None else []

                def run(mod=mod, a=a, b=b, out=out, extra=extra) -> None:
                    mod.gemm(a, b, out, *extra)

                run()
                torch.cuda.synchronize()
                err = (out.float() - ref).abs().max().item()
                tol = (2e-2 if out_t == "f16" else 2e-3) * ref.abs().max().item() + 0.05
                if in_t == "f8":  # Hopper fp8 dots (cuBLAS and Triton alike) accumulate in about 22 bits
                    tol = 1e-2 * ref.abs().max().item() + 0.05
                if not (bool(torch.isfinite(out).all()) and err <= tol):
                    row["note"] = f"WRONG (max err {err:.3g}): not timed {lib_note}"
                    continue
                t0 = triton.testing.do_bench(run, warmup=10, rep=50)
                if t0 > 200:  # a form still lowered element by element: one timing says enough
                    row.update(ms=t0, note="slow: timed once")
                    continue
                libs, mine, pairs = [], [], []
                for _ in range(rounds):
                    c = triton.testing.do_bench(lib, warmup=25, rep=200)
                    t = triton.testing.do_bench(run, warmup=25, rep=200)
                    libs.append(c)
                    mine.append(t)
                    pairs.append(c / t)
                row.update(ms=median_of_rounds(mine), lib_ms=median_of_rounds(libs),
                           ratio=median_of_rounds(pairs), raw=mine, lib_raw=libs)  # fmt: skip
    return rows


def forms_markdown(info: dict[str, str], rows: list[dict[str, object]], cmd: str) -> str:
    out = [f"## {info['date']} - perf/bench.py --forms: every GEMM form against the library GEMM", ""]
    out.append(f"* {info['gpu']}, torch {info['torch']}, Triton {info['triton']}; clocks (SM, mem, power) "
               f"before {info['clocks_before']}, after {info['clocks_after']}.")  # fmt: skip
    out.append(f"* Command: `{cmd}`. Ratio = library time / kernel time, median over paired rounds.")
    out += ["", "| form | shape | types | kernel ms | library ms | ratio | note |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        ms = f"{r['ms']:.4f}" if "ms" in r else ""
        lib = f"{r['lib_ms']:.4f}" if "lib_ms" in r else ""
        ratio = f"{r['ratio']:.3f}" if "ratio" in r else ""
        out.append(f"| {r['kernel']} | {r['shape']} | {r['dtype']} | {ms} | {lib} | {ratio} | {r.get('note', '')} |")
    return "\n".join(out) + "\n"


def main() -> int:
    if "--membound" in sys.argv[1:]:
        # the memory-bound kernels (perf/bench_membound.py: its own options follow --membound)
        import bench_membound

        sys.argv = ["perf/bench_membound.py", *[a for a in sys.argv[1:] if a != "--membound"]]
        return bench_membound.main()
    ap = argparse.ArgumentParser(
        epilog="--membound [--sizes ...]: the memory-bound kernels of examples/ and tests/programs/ instead "
        "(perf/bench_membound.py)"
    )
    ap.add_argument("--shapes", default="4096,8192,4000", help="square GEMMs N^3 (comma-separated N; '' for none)")
    ap.add_argument(
        "--mnk",
        default="",
        help="GEMMs that are not square, MxNxK each (a: M x K, b: N x K), e.g. 256x8192x8192,8192x8192x1024",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--timer",
        choices=("do_bench", "tune"),
        default="do_bench",
        help="GEMM timing: triton.testing.do_bench pairs (default), or croq2triton tune's method "
        "(croq2triton/tune/timing.py: L2 flushed, CUDA graphs, interleaved rounds, paired ratios)",
    )
    ap.add_argument("--dtypes", default="f16,bf16", help="GEMM element types (bf16: the sources' f16 rewritten)")
    ap.add_argument("--only", default=None, help="comma-separated GEMM labels (v0,v1,...); default all")
    ap.add_argument("--no-gemm", action="store_true", help="only the elementwise kernels against a device copy")
    ap.add_argument("--md", default=None, help="write the markdown block here (to append to perf/RESULTS.md)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--forms", action="store_true", help="time every GEMM form of tests/programs/gemm_forms")
    ap.add_argument("--schedules", default="auto", help="with --forms: comma-separated schedules")
    ap.add_argument("--source-only", action="store_true", help="the ladder's source-schedule rows only")
    args = ap.parse_args()

    shared = os.environ.get("CROQ2TRITON_SHARED") or (
        str(REPO.parent / "shared") if (REPO.parent / "shared").exists() else None
    )
    info = run_info()
    cmd = "python3 perf/bench.py " + " ".join(sys.argv[1:])
    if args.forms:
        only_forms = set(args.only.split(",")) if args.only else None
        rows = bench_forms([int(x) for x in args.shapes.split(",")], args.rounds, args.schedules.split(","), only_forms)
        info["clocks_after"] = smi()
        md = forms_markdown(info, rows, cmd)
        print(md)
        if args.md:
            Path(args.md).write_text(md)
        if args.json:
            Path(args.json).write_text(json.dumps({"info": info, "forms": rows}, indent=1))
        return 0
    only = set(args.only.split(",")) if args.only else None
    shapes = [(int(s), int(s), int(s)) for s in args.shapes.split(",") if s.strip()] + parse_mnk(args.mnk)
    gemm = [
        row
        for dt in ([] if args.no_gemm else args.dtypes.split(","))
        for row in bench_gemms(shapes, shared, args.rounds, only, dt, not args.source_only, args.timer)
    ]
    elem = bench_elementwise(args.rounds) if only is None else []
    info["clocks_after"] = smi()
    cmd = "python3 perf/bench.py " + " ".join(sys.argv[1:])
    md = markdown(info, gemm, elem, cmd)
    print(md)
    if args.md:
        Path(args.md).write_text(md)
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "gemm": gemm, "elementwise": elem}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
