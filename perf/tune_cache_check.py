"""Do the kernels ``tune``'s compile workers build ahead of time land where the benchmark process's
JIT launch finds them?  Run on a GPU machine from the repo root:

    python3 perf/tune_cache_check.py [FILE.co] [--schedule auto] [--size M=4096,N=4096,K=4096]

A compile worker (croq2triton/tune/workers.py ``prepare``) runs with Triton out of interpreter mode and
no GPU visible: it records each launch at the sizes and compiles it with ``triton.compile`` for sm_90a,
specialized as the JIT specializes a launch (runtime/aot.py).  Here a subprocess does exactly that for
a few points into a fresh ``TRITON_CACHE_DIR``; then this process (with the GPU) launches each point's
translated module and Triton's compilation listener says whether each launch was a cache hit.  Every
launch must hit: a miss means the AOT compile's cache key differs from the JIT's (options,
specialization, target), and the compile pool would not save the benchmark process any time.
Prints one line per launch and exits 1 on any miss.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

POINTS = [
    {},
    {"matmul_k0": {"block_n": 128, "num_stages": 4}},
    {"matmul_k0": {"persistent": False, "num_warps": 4, "block_n": 128}},
]

PREPARE = """
import json, sys
from croq2triton.options import Point
from croq2triton.tune.workers import prepare
args = json.loads(sys.argv[1])
out = []
for kernels in args["points"]:
    msg = {"op": "prepare", "text": open(args["file"]).read(), "filename": args["file"], "func": args["func"],
           "schedule": args["schedule"], "defines": {}, "point": Point.of(kernels=kernels).to_json(),
           "sizes": {"s": args["sizes"]}, "compile": True, "limits": {}, "faults": ""}
    ans = prepare(msg)
    out.append({"point": kernels, "status": ans.get("status"), "reason": ans.get("reason"),
                "module": ans.get("module"), "size": ans.get("sizes", {}).get("s")})
json.dump(out, open(args["out"], "w"))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(REPO / "examples/gemm_v4.co"))
    ap.add_argument("--func", default="matmul")
    ap.add_argument("--schedule", default="auto")
    ap.add_argument("--size", default="M=4096,N=4096,K=4096")
    args = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="triton-cache-")
    os.environ["TRITON_CACHE_DIR"] = cache
    os.environ.pop("TRITON_INTERPRET", None)
    import torch

    from croq2triton.api import load_source, translate_full
    from croq2triton.runinputs import make_inputs
    from croq2triton.runsizes import choose, parse_sizes

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    text = Path(args.file).read_text()
    unit = translate_full(text, filename=args.file, schedule=args.schedule).unit
    fn = next(f for f in unit.functions if f.name == args.func)
    values = choose([fn], parse_sizes([args.size]))[args.func].values
    out = Path(cache) / "prepared.json"
    env = dict(os.environ, TRITON_INTERPRET="0", CUDA_VISIBLE_DEVICES="", CROQ2TRITON_NUM_SMS=str(sms))
    task = {"points": POINTS, "file": args.file, "func": args.func, "schedule": args.schedule}
    task.update(sizes=values, out=str(out))
    r = subprocess.run([sys.executable, "-c", PREPARE, json.dumps(task)], env=env, capture_output=True, text=True)
    if r.returncode:
        print(r.stderr[-3000:])
        return 2
    prepared = json.loads(out.read_text())
    import triton

    hits: list[bool] = []

    def listener(*, src, metadata, metadata_group, times, cache_hit):  # noqa: ANN001, ANN202, ARG001
        hits.append(bool(cache_hit))

    triton.knobs.compilation.listener = listener
    misses = 0
    for i, p in enumerate(prepared):
        if p["status"] != "ready":
            print(f"point {p['point']}: {p['status']}: {p['reason']}")
            continue
        mod = load_source(p["module"], f"cache_check_{i}", interpret=False, origin=args.file)
        inputs = make_inputs(fn, values, "cuda")
        hits.clear()
        getattr(mod, args.func)(*inputs.args)
        torch.cuda.synchronize()
        compiled = p["size"].get("compiled", {})
        state = "hit" if hits and all(hits) else "MISS"
        misses += state == "MISS"
        print(
            f"point {p['point'] or '(auto)'}: {len(hits)} compile(s) at launch, cache {state}; AOT figures {compiled}"
        )
    print(f"{misses} miss(es)")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
