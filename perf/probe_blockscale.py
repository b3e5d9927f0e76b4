"""Probe: block-scaled fp8 GEMM schedules (tests/programs/blockscale.co scaled_inline) at 4096^3 and 8192^3,
each a Schedule the auto policy could pick, against torch._scaled_mm (per-tensor scales) in the same run.

    python3 perf/probe_blockscale.py
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CANDIDATES = [
    (128, 256, 64, 3, 8, True),
    (128, 128, 64, 4, 8, True),
    (128, 128, 64, 4, 4, True),
    (128, 128, 64, 5, 4, False),
    (64, 256, 64, 4, 4, True),
    (128, 64, 64, 5, 4, False),
]


def main() -> int:
    import torch
    import triton

    from croq2triton.api import load_source, translate_full
    from croq2triton.schedule import policy
    from croq2triton.schedule.schedule import Schedule

    orig = policy.auto
    for n in (4096, 8192):
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        kb = n // 64
        sa = torch.rand(n, kb, device="cuda") + 0.5
        sb = torch.rand(n // 64, kb, device="cuda") + 0.5
        one = torch.ones((), device="cuda")
        out = torch.empty(n, n, device="cuda")
        for bm, bn, bk, st, w, pers in CANDIDATES:

            def pick(c, bm=bm, bn=bn, bk=bk, st=st, w=w, pers=pers):  # noqa: ANN001, ANN202
                s = orig(c)
                if not c.scales:
                    return s
                return Schedule(bm, bn, bk, num_stages=st, num_warps=w, persistent=pers)

            policy.auto = pick
            text = (REPO / "tests/programs/blockscale.co").read_text()
            src = translate_full(text, filename="blockscale.co", schedule="auto").source
            mod = load_source(src, f"probe_bs_{bm}_{bn}_{bk}_{st}_{w}_{int(pers)}")
            policy.auto = orig

            def run(mod=mod) -> None:
                mod.scaled_inline(a, sa, b, sb, out)  # noqa: B023

            try:
                run()
                t = triton.testing.do_bench(run, warmup=25, rep=200)
            except Exception as e:  # noqa: BLE001
                print(n, (bm, bn, bk, st, w, pers), "failed", str(e).splitlines()[0][:100])
                continue
            ref = triton.testing.do_bench(lambda: torch._scaled_mm(a, b.T, one, one, out_dtype=torch.float32))  # noqa: B023
            print(n, (bm, bn, bk, st, w, pers), f"{t:.4f} ms", f"scaled_mm {ref:.4f} ms", f"ratio {ref / t:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
