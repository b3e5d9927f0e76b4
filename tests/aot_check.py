"""Run in a fresh process (no TRITON_INTERPRET): compile translated kernels for sm_90a.

Usage: python aot_check.py FILE.co FUNC SHAPES_JSON [DEFINES_JSON [OVERRIDES_JSON [SCHEDULE [POINT_JSON]]]]
(POINT_JSON: a tuning point's schedule fields per kernel, ``{"f_k0": {"num_stages": 3}}``)
Prints one JSON line per launch with what the PTX contains.
"""

from __future__ import annotations

import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "0"

import torch  # noqa: E402

from croq2triton.api import load  # noqa: E402
from croq2triton.runtime.aot import compile_launch, record  # noqa: E402

PATTERNS = (
    "wgmma.mma_async",
    "mma.sync.aligned",
    "cp.async.bulk.tensor",
    "mbarrier",
    "ttg.warp_specialize",
    "cp.async.cg.shared.global",  # a pipelined loop's loads (schedule/loadstages.py)
    "cp.async.ca.shared.global",
    "ld.global.v",  # several elements a thread at once (schedule/vecmasks.py; v2 or v4 by the tile a thread holds)
    "st.global.v",
)


def store_in_dot_loop(ttgir: str) -> bool:
    """Whether an epilogue's TMA store sits in the same loop as the MMAs (a persistent tile loop fused
    with its K loop: ``flatten``), not after the K loop ends."""
    stack: list[int] = []  # the scf.for each open region belongs to (-1: not a loop)
    loops = 0
    dots: set[int] = set()
    stores: set[int] = set()
    for line in ttgir.splitlines():
        innermost = next((x for x in reversed(stack) if x >= 0), -2)
        if "warp_group_dot " in line:
            dots.add(innermost)
        if "async_tma_copy_local_to_global" in line:
            stores.add(innermost)
        text = line.strip()
        if text.startswith("}") and stack:  # a region ends (``} loc(...)``, ``} else {``)
            stack.pop()
        if text.endswith("{"):  # a region begins (attribute dictionaries close on their own line)
            if "scf.for" in text:
                loops += 1
                stack.append(loops)
            else:
                stack.append(-1)
    return bool(dots & stores - {-2})


def main() -> None:
    path, func = sys.argv[1], sys.argv[2]
    shapes = json.loads(sys.argv[3])
    defines = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    overrides = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    schedule = sys.argv[6] if len(sys.argv) > 6 else "source"
    if len(sys.argv) > 7:  # a tuning point: the module translated under it
        from pathlib import Path

        from croq2triton.api import load_source, translate_full
        from croq2triton.options import Point

        point = Point.of(defines, json.loads(sys.argv[7]))
        out = translate_full(Path(path).read_text(), filename=path, schedule=schedule, point=point)
        mod = load_source(out.source, "aot_point", interpret=False)
    else:
        mod = load(path, defines=defines, interpret=False, schedule=schedule)
    # out of the interpreter the launchers run kernels on the GPU where there is one (and refuse
    # 'global' tensors elsewhere); without one, on the CPU, as compiling needs no GPU
    device = "cuda" if torch.cuda.is_available() else "cpu"
    args = []
    for shape, dtype in shapes:
        args.append(
            torch.empty(*shape, dtype=getattr(torch, dtype), device=device) if isinstance(shape, list) else shape
        )
    for la in record(getattr(mod, func), *args):
        la.kwargs.update({k: v for k, v in overrides.items() if k in la.kwargs or k in ("num_warps",)})
        try:
            k = compile_launch(la)
        except Exception as e:  # noqa: BLE001
            print(
                json.dumps(
                    {
                        "kernel": la.kernel.__name__,
                        "error": f"{type(e).__name__}: {str(e)[:300]}",
                        "kwargs": {x: y for x, y in la.kwargs.items() if isinstance(y, (int, bool, str))},
                    }
                )
            )
            continue
        ptx = k.asm["ptx"]
        ttgir = k.asm["ttgir"]
        found = {p: (p in ptx or p in ttgir) for p in PATTERNS}
        print(
            json.dumps(
                {
                    "kernel": la.kernel.__name__,
                    "found": found,
                    "target": ".target sm_90a" in ptx,
                    "shared": k.metadata.shared,
                    "store_in_dot_loop": store_in_dot_loop(ttgir),
                }
            )
        )


if __name__ == "__main__":
    main()
