"""Speed of the translated attention kernels against torch's scaled_dot_product_attention.

    python3 perf/attention_bench.py [--seqs 1024,4096] [--bh 32] [--md OUT.md]

``examples/attention.co`` (and upstream's ``flash_atten.co`` when the shared corpus is present)
against ``torch.nn.functional.scaled_dot_product_attention`` (its FlashAttention backend, forced)
in the same process: fp16, head dim 64, random inputs; every kernel is checked against torch first
(max |diff| printed), then interleaved rounds of ``triton.testing.do_bench`` (median; the middle of
three rounds is reported). TFLOP/s count 4 * BH * Sq * Sk * D (halved when causal).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", default="1024,4096")
    ap.add_argument("--bh", type=int, default=32)
    ap.add_argument("--md", default=None)
    ap.add_argument(
        "--also",
        action="append",
        default=[],
        help="a generated module of the same kernels to time beside them (an earlier translation: OLD.py)",
    )
    args = ap.parse_args()

    import torch
    import triton
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    from croq2triton.api import load, load_source

    shared = Path(os.environ.get("CROQ2TRITON_SHARED", REPO.parent / "shared"))
    ours = load(REPO / "examples/attention.co")
    flash_path = shared / "corpus/upstream/tests/gpu/end2end/flash_atten.co"
    flash = load(flash_path) if flash_path.exists() else None
    others = {
        f"{Path(p).stem} ({Path(p).parent.name})": load_source(Path(p).read_text(), f"also_{i}", origin=p)
        for i, p in enumerate(args.also)
    }
    sdpa = torch.nn.functional.scaled_dot_product_attention
    gpu = torch.cuda.get_device_name()
    clocks = subprocess.run(
        ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw", "--format=csv,noheader"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    lines = [
        f"* GPU: {gpu}; torch {torch.__version__}, Triton {triton.__version__}; clocks before: {clocks}",
        "",
        "| kernel | BH | seq | causal | max abs diff | median ms | TFLOP/s | ratio to SDPA |",
        "|---|---|---|---|---|---|---|---|",
    ]
    bh = args.bh
    for seq in (int(s) for s in args.seqs.split(",")):
        for causal in (False, True):
            g = torch.Generator(device="cuda").manual_seed(seq)
            q, k, v = (torch.randn(bh, seq, 64, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))
            o = torch.full_like(q, float("nan"))
            # 4-D [1, BH, S, D] views: SDPA's fused (flash) kernels take 4-D inputs only
            q4, k4, v4 = (x.view(1, bh, seq, 64) for x in (q, k, v))
            ref = sdpa(q4.float(), k4.float(), v4.float(), is_causal=causal).view_as(q)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # fails rather than fall back to the math path
                diffs = {"sdpa": float((sdpa(q4, k4, v4, is_causal=causal).float().view_as(q) - ref).abs().max())}

            def run_sdpa() -> None:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    sdpa(q4, k4, v4, is_causal=causal)  # noqa: B023

            runs = {"sdpa (flash)": run_sdpa}
            diffs["sdpa (flash)"] = diffs.pop("sdpa")
            ours.attention(q, k, v, o, causal)
            assert not o.isnan().any(), "attention left NaN-poisoned elements"
            diffs["attention.co"] = float((o.float() - ref).abs().max())
            runs["attention.co"] = lambda: ours.attention(q, k, v, o, causal)  # noqa: B023
            if flash is not None:
                diffs["flash_atten.co"] = float(
                    (flash.flash_atten(q4, k4, v4, causal).float().view_as(ref) - ref).abs().max()
                )
                runs["flash_atten.co"] = lambda: flash.flash_atten(q4, k4, v4, causal)  # noqa: B023
            for label, m in others.items():
                if hasattr(m, "attention"):
                    o2 = torch.full_like(q, float("nan"))
                    m.attention(q, k, v, o2, causal)
                    diffs[label] = float((o2.float() - ref).abs().max())
                    runs[label] = lambda m=m, o2=o2: m.attention(q, k, v, o2, causal)  # noqa: B023
                if hasattr(m, "flash_atten"):
                    diffs[label] = float((m.flash_atten(q4, k4, v4, causal).float().view_as(ref) - ref).abs().max())
                    runs[label] = lambda m=m: m.flash_atten(q4, k4, v4, causal)  # noqa: B023
            for name, d in diffs.items():
                assert d < 2e-2, f"{name}: max |diff| {d} at seq {seq}, causal {causal}"
            times: dict[str, list[float]] = {n: [] for n in runs}
            for _ in range(3):
                for n, fn in runs.items():
                    times[n].append(do_bench(fn, warmup=25, rep=200, return_mode="median"))
            med = {n: sorted(t)[1] for n, t in times.items()}
            flops = 4 * bh * seq * seq * 64 / (2 if causal else 1)
            for n in runs:
                lines.append(
                    f"| {n} | {bh} | {seq} | {causal} | {diffs[n]:.2e} | {med[n]:.3f} | "
                    f"{flops / med[n] / 1e9:.1f} | {med['sdpa (flash)'] / med[n]:.3f} |"
                )
    clocks = subprocess.run(
        ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw", "--format=csv,noheader"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    lines.append("")
    lines.append(f"* clocks after: {clocks}")
    text = "\n".join(lines)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")


if __name__ == "__main__":
    main()
