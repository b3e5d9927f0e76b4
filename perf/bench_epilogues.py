"""Speed of the GEMMs with epilogues (tests/programs/gemm_epilogues) under ``--schedule auto``.

    python3 perf/bench_epilogues.py [--shapes 4096,8192] [--rounds 3] [--md OUT.md] [--json OUT.json]

Each program computes ``f(a @ b^T)`` for an element-wise ``f`` (a scale, biases, ``beta * c``, a start
value, a ReLU, a transposed or masked store).  Measured in one process against two references with
the same inputs and output type: the library GEMM alone (``torch.mm``, cuBLAS, f32 outputs through
``out_dtype``) and what a torch user writes for the same result (the GEMM, then the epilogue as torch
operations).  Every kernel is checked against float32 torch before it is timed; then rounds of
``triton.testing.do_bench`` (warm-up 25 ms, 200 ms of repetitions), each kernel right after both
references; the table shows medians over rounds of the times and of the paired ratios.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench import median_of_rounds, run_info, smi  # noqa: E402

PROGRAMS = REPO / "tests" / "programs" / "gemm_epilogues"


def cases(n: int):  # noqa: ANN201
    """name -> (output dtype, the arguments after a and b, output last; the torch epilogue of p = a @ b^T)."""
    import torch

    f16, f32 = torch.float16, torch.float32
    dev = "cuda"
    c = torch.randn(n, n, device=dev)
    col = torch.randn(n, device=dev)

    def out(dt: torch.dtype) -> torch.Tensor:
        poison = float("nan") if dt.is_floating_point else -(2**31)
        return torch.full((n, n), poison, device=dev, dtype=dt)

    return {
        "alpha_beta_bias": (f32, [c, col, 1.5, -0.5, out(f32)], lambda p: 1.5 * p - 0.5 * c + col),
        "start_from_c": (f16, [c, col, out(f16)], lambda p: torch.relu(p + c + col[:, None])),
        "wgmma_scale_transp": (f16, [0.75, out(f16)], lambda p: (0.75 * p).T),
        "wgmma_loadc_mask": (f32, [c, 0.25, out(f32)], lambda p: c + p + 0.25),
        "shared_epilogue": (f32, [col, out(f32)], lambda p: torch.relu(p * col)),
        "apply_gelu_bias": (f16, [col, out(f16)], lambda p: (p + col) * (1 + torch.tanh(p + col))),
        "int8_thread": (f32, [col, col, out(f32)], lambda p: p * col[:, None] * col),
        "int8_wgmma": (torch.int32, [out(torch.int32)], lambda p: p),
    }


def references(a, b, dt, epi) -> tuple[Callable[[], object], Callable[[], object]]:  # noqa: ANN001
    """The cuBLAS GEMM alone with the output type (f16 out where torch has no ``out_dtype``), and
    the GEMM followed by the epilogue in torch."""
    import torch

    def mm() -> object:
        if a.dtype == torch.int8:  # cuBLAS's int8 GEMM (s32 out)
            return torch._int_mm(a, b.T)
        return torch.mm(a, b.T, out_dtype=dt) if dt == torch.float32 else torch.mm(a, b.T)

    try:
        mm()
    except TypeError:

        def mm() -> object:
            return torch.mm(a, b.T)

    def composite() -> object:
        p = torch._int_mm(a, b.T) if a.dtype == torch.int8 else torch.mm(a, b.T)
        return epi(p.float()).to(dt)

    return mm, composite


def bench(shapes: list[int], rounds: int) -> list[dict[str, object]]:
    import torch
    import triton

    from croq2triton.api import load

    rows: list[dict[str, object]] = []
    for n in shapes:
        torch.manual_seed(n)
        halves = torch.randn(n, n, device="cuda").half(), torch.randn(n, n, device="cuda").half()
        ints = tuple(torch.randint(-50, 50, (n, n), device="cuda", dtype=torch.int8) for _ in range(2))
        for name, (dt, args, epi) in cases(n).items():
            a, b = ints if name.startswith("int8") else halves
            row: dict[str, object] = {"kernel": name, "shape": n, "dtype": f"{str(a.dtype)[6:]}->{str(dt)[6:]}"}
            rows.append(row)
            mod = load(PROGRAMS / f"{name}.co", schedule="auto")
            outv = args[-1]
            gemm_only, composite = references(a, b, dt, epi)

            def run(mod=mod, a=a, b=b, args=args) -> None:
                mod.gemm(a, b, *args)

            run()
            torch.cuda.synchronize()
            ref = epi(a.double() @ b.double().T)  # float64: exact for the int8 products too
            err = (outv.double() - ref.double()).abs().max().item()  # type: ignore[union-attr]
            tol = (2e-2 if dt == torch.float16 else 2e-3) * ref.abs().max().item() + 0.05
            if not (bool(torch.isfinite(outv).all()) and err <= tol):  # type: ignore[arg-type]
                row["note"] = f"WRONG (max err {err:.3g}): not timed"
                continue
            libs, comps, mine, r_lib, r_comp = [], [], [], [], []
            for _ in range(rounds):
                lt = triton.testing.do_bench(gemm_only, warmup=25, rep=200)
                ct = triton.testing.do_bench(composite, warmup=25, rep=200)
                t = triton.testing.do_bench(run, warmup=25, rep=200)
                libs.append(lt)
                comps.append(ct)
                mine.append(t)
                r_lib.append(lt / t)
                r_comp.append(ct / t)
            row.update(ms=median_of_rounds(mine), lib_ms=median_of_rounds(libs), torch_ms=median_of_rounds(comps),
                       ratio=median_of_rounds(r_lib), ratio_torch=median_of_rounds(r_comp),
                       raw=mine, lib_raw=libs, torch_raw=comps)  # fmt: skip
    return rows


def markdown(info: dict[str, str], rows: list[dict[str, object]], cmd: str) -> str:
    out = [f"## {info['date']} - perf/bench_epilogues.py: GEMMs with epilogues under --schedule auto", ""]
    out.append(f"* {info['gpu']}, torch {info['torch']}, Triton {info['triton']}; clocks (SM, mem, power) "
               f"before {info['clocks_before']}, after {info['clocks_after']}.")  # fmt: skip
    out.append(f"* Command: `{cmd}`. Ratios = reference time / kernel time, medians over paired rounds; "
               "`vs mm`: cuBLAS GEMM alone (no epilogue), `vs torch`: the GEMM then the epilogue in torch.")  # fmt: skip
    out += ["", "| program | shape | types | kernel ms | mm ms | torch ms | vs mm | vs torch | note |"]
    out.append("|---|---|---|---|---|---|---|---|---|")
    for r in rows:

        def f(k: str, fmt: str = ".4f", r: dict[str, object] = r) -> str:
            return format(r[k], fmt) if k in r else ""

        out.append(
            f"| {r['kernel']} | {r['shape']} | {r['dtype']} | {f('ms')} | {f('lib_ms')} | {f('torch_ms')} "
            f"| {f('ratio', '.3f')} | {f('ratio_torch', '.3f')} | {r.get('note', '')} |"
        )
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--md", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    info = run_info()
    rows = bench([int(x) for x in args.shapes.split(",")], args.rounds)
    info["clocks_after"] = smi()
    md = markdown(info, rows, "python3 perf/bench_epilogues.py " + " ".join(sys.argv[1:]))
    print(md)
    if args.md:
        Path(args.md).write_text(md)
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "rows": rows}, indent=1))
    return 0 if all("WRONG" not in str(r.get("note", "")) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
