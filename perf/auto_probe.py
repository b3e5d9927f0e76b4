"""Experiment: schedule choices for the translated GEMMs, one variant at a time.

    python3 perf/auto_probe.py [--shapes 8192,4096]

Translates examples with a schedule, a coarsening target for thread-level dots
(``croq2triton.lower.coarsen.AUTO_THREAD_TILES``) and text replacements in the generated module
(e.g. another ``NUM_STAGES``; ``("@kstep", "0")`` turns off K-step splitting, lower/ksplit.py), checks each
against torch, and times it against ``torch.matmul`` (cuBLAS) in the same process (median of
``triton.testing.do_bench`` over three interleaved rounds).  Prints one line per variant.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "perf"))

# (example, schedule, coarsening target, text replacements in the generated module)
T256 = (128, 256)
VARIANTS = [
    ("gemm_v3", "auto", T256, []),  # GROUP_M=8: what auto emits
    ("gemm_v3", "auto", T256, [("GROUP_M=8,", "GROUP_M=4,")]),
    ("gemm_v3", "auto", T256, [("GROUP_M=8,", "GROUP_M=16,")]),
    ("gemm_v3", "auto", T256, [("GROUP_M=8,", "GROUP_M=32,")]),
    ("gemm_v4", "auto", T256, []),
    ("gemm_v4", "auto", T256, [("GROUP_M=8,", "GROUP_M=16,")]),
]
# hand-written perf/gemm_probe.py kernels timed in the same rounds (gemm_probe.VARIANTS keys)
HAND = ["P 128x256x64 s3 w8 sub"]


def build(label: str, schedule: str, tiles: tuple[int, int], patch: list[tuple[str, str]]):  # noqa: ANN201
    import croq2triton.lower.coarsen as coarsen_mod
    import croq2triton.lower.ksplit as ksplit_mod
    from croq2triton.api import load_source, translate_full

    coarsen_mod.AUTO_THREAD_TILES = {"streamed": tiles, "staged": tiles}
    name = f"probe_{label}_{schedule}_{tiles[0]}x{tiles[1]}_{abs(hash(str(patch)))}"
    ksplit_mod.AUTO_K_STEP = int(dict(patch).get("@kstep", 64))
    patch = [(o, n) for o, n in patch if o != "@kstep"]
    path = REPO / "examples" / f"{label}.co"
    src = translate_full(path.read_text(), filename=path.name, schedule=schedule).source
    for old, new in patch:
        if old == "@one-iteration-loop":  # the program body inside `for _pid in tl.range(pid, pid + 1)`
            head = "    _pid = tl.program_id(0)"
            i = src.index(head)
            j = src.index("\n\n\ndef ", i)
            body = src[i + len(head) : j].replace("\n", "\n    ")
            src = src[:i] + "    for _pid in tl.range(tl.program_id(0), tl.program_id(0) + 1):" + body + src[j:]
            continue
        assert old in src, old
        src = src.replace(old, new)
    return load_source(src, name, origin=str(path)).matmul


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192,4096")
    args = ap.parse_args()
    fns = {
        f"{lb} {sc} {t[0]}x{t[1]} {';'.join(n or o for o, n in p)}": build(lb, sc, t, p) for lb, sc, t, p in VARIANTS
    }
    import gemm_probe

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for h in HAND:
        fns[f"hand-written {h}"] = lambda a, b, c, cfg=gemm_probe.VARIANTS[h]: gemm_probe.run(a, b, c, cfg, sms)
    gemm_probe.compare(fns, [int(x) for x in args.shapes.split(",")])


if __name__ == "__main__":
    main()
