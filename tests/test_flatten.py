"""The ``flatten`` field of a contraction's schedule (issue 25): a persistent grid's tile loop fused with
its K loop by Triton, one software pipeline across tiles, so the next tile's first loads are in flight
while this tile's epilogue runs.

* the point translates to ``tl.range(pid, num_tiles, NUM_SMS, num_stages=NUM_STAGES, flatten=True)``, and
  is a no-op where the grid is not persistent (the same kernel as without it);
* numerics in the interpreter (which ignores the hint, so this checks the loop nest around it): ragged sizes,
  the output poisoned with NaN, against float64 torch, with more tiles than programs;
* compiled for sm_90a on the CPU: with ``flatten`` the epilogue's TMA store sits in the loop of the MMAs,
  without it after the K loop.
"""

from __future__ import annotations

import json
from typing import Any

import sm90
import torch
from conftest import EXAMPLES, REPO
from kernel_util import poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.options import Point

V4 = EXAMPLES / "gemm_v4.co"
SCRIPT = REPO / "tests" / "aot_check.py"


def _source(**fields: object) -> str:
    point = Point.of(None, {"matmul_k0": fields}) if fields else None
    return translate_full(V4.read_text(), filename=str(V4), schedule="auto", point=point).source


def test_flatten_fuses_the_tile_loop() -> None:
    src = _source(flatten=True)
    assert "for tile_id in tl.range(pid, num_tiles, NUM_SMS, num_stages=NUM_STAGES, flatten=True):" in src
    assert "flatten" not in _source(flatten=False)
    # one program per tile: no tile loop to fuse, the kernel of the point without the field
    assert _source(flatten=True, persistent=False) == _source(persistent=False)


def test_flattened_kernel_matches_float64() -> None:
    src = _source(flatten=True, block_m=64, block_n=64, num_warps=4)
    mod: Any = load_source(src, "flatten_v4", origin=str(V4))
    m, n, k = 201, 333, 136  # 4 x 6 tiles, two K steps and a part: more tiles than the programs below
    a, b = randn(m, k, seed=1).half(), randn(n, k, seed=2).half()
    out = poisoned(m, n, dtype=torch.float16)
    mod.matmul(a, b, out)  # 4 programs in the interpreter (runtime.launch.num_sms)
    ref = a.double() @ b.double().T
    assert not out.isnan().any()
    torch.testing.assert_close(out.double(), ref, rtol=2e-3, atol=2e-3)


def test_flattened_epilogue_overlaps_the_next_tile_on_sm90a() -> None:
    # 2048 x 2048: 128 tiles of 128 x 256, the persistent kernel at 132 SMs too (a compile in this worker
    # may have set CROQ2TRITON_NUM_SMS to the target's count: a 512 x 512 output then takes 64 x 64 tiles)
    shapes = json.dumps([[[2048, 256], "float16"], [[2048, 256], "float16"], [[2048, 2048], "float16"]])
    seen = {}
    for flat in (True, False):
        point = json.dumps({"matmul_k0": {"flatten": flat}})
        r = sm90.script(SCRIPT, str(V4), "matmul", shapes, "{}", "{}", "auto", point)
        assert r.returncode == 0, r.stderr[-3000:]
        (rec,) = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        assert rec["target"] and rec["found"]["wgmma.mma_async"] and rec["found"]["cp.async.bulk.tensor"], rec
        seen[flat] = rec["store_in_dot_loop"]
    assert seen == {True: True, False: False}


def test_auto_fuses_16_bit_contractions_in_the_stages_that_fit() -> None:
    """``--schedule auto`` fuses a persistent 16-bit contraction's loops, with 4 stages where they fit
    beside the epilogue's buffer (an f16 output: 4 x 48 KB + 32 KB) and 3 where they do not (an f32
    output's 64 KB); 8-bit operands as before (measured no faster fused)."""
    from croq2triton.schedule.shared import SHARED_LIMIT, contraction_shared

    def auto(path: str) -> tuple[object, object]:
        f = REPO / path
        tr = translate_full(f.read_text(), filename=str(f), schedule="auto")
        (fn,) = tr.schedules
        (kernel,) = [k for k in tr.schedules[fn] if k in tr.contractions[fn]]
        return tr.schedules[fn][kernel], tr.contractions[fn][kernel]

    s, c = auto("examples/gemm_v4.co")
    assert (s.num_stages, s.flatten, s.persistent) == (4, True, True)
    assert contraction_shared(s, c) <= SHARED_LIMIT
    s, c = auto("tests/programs/gemm_forms/mma_rowrow_global.co")  # f16 operands, an f32 output
    assert (s.num_stages, s.flatten) == (3, True)
    assert contraction_shared(s.with_(num_stages=4), c) > SHARED_LIMIT
    s, _ = auto("tests/programs/gemm_forms/fp8_f16out.co")
    assert (s.num_stages, s.flatten) == (3, False)
