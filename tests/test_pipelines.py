"""Warp-specialised producer/consumer pipelines collapsed into one pipelined loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sm90
import torch
from conftest import CORPUS, EXAMPLES, REPO
from kernel_util import assert_close, gemm_tol, load_co, poisoned, randn

from croq2triton.api import translate_full
from croq2triton.errors import CroqError

PIPELINED = ["tma_pipeline.co", "gemm_v3.co", "gemm_v4.co"]


def _gemm(mod: object, fn: str, m: int, n: int, k: int, seed: int = 0) -> None:
    a, b = randn(m, k, dtype=torch.float16, seed=seed), randn(n, k, dtype=torch.float16, seed=seed + 1)
    out = poisoned(m, n, dtype=torch.float16)
    getattr(mod, fn)(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)


@pytest.mark.parametrize("example", PIPELINED)
@pytest.mark.parametrize(("m", "n", "k"), [(200, 300, 100), (64, 192, 64), (129, 65, 17)])
def test_pipelined_gemms_on_ragged_sizes(example: str, m: int, n: int, k: int) -> None:
    _gemm(load_co(EXAMPLES / example), "matmul", m, n, k)


def test_pipeline_structure_in_generated_code() -> None:
    src = (EXAMPLES / "gemm_v4.py").read_text()
    # the source schedule of a proved contraction: the .co's 128 x 192 tile as 128 + 64 column
    # pieces, its stage ring, its roles as the WS hint
    assert "for k in tl.range(0, tl.cdiv(K, 64), num_stages=NUM_STAGES, warp_specialize=WARP_SPECIALIZE):" in src
    assert "NUM_STAGES=2" in src  # STAGES of the source
    assert "WARP_SPECIALIZE=_rt.WARP_SPECIALIZE" in src
    # two consumer warpgroups, but their 128 x 192 accumulator fits one warpgroup (faster)
    assert "num_warps=4" in src


CORPUS_CASES = [
    ("seed/tma_pipeline_matmul.co", "matmul"),
    ("tutorial/matmul_f16_v3_warpspec.co", "matmul"),
    ("tutorial/matmul_f16_v4_auto_tuned.co", "matmul"),
    ("upstream/tests/gpu/end2end/wgmma_ss.co", "matmul_f16_ws_1p1c"),
]


@pytest.mark.parametrize(("path", "fn"), CORPUS_CASES)
def test_corpus_pipelines_unchanged(path: str, fn: str) -> None:
    p = CORPUS / path
    if not p.exists():
        pytest.skip(f"shared corpus not present at {CORPUS}")
    # ws_1p1c tiles rhs with chunkat: a GEMM for tile-multiple N and K
    m, n, k = (200, 300, 100) if "ws_" not in fn else (256, 256, 128)
    _gemm(load_co(p), fn, m, n, k)


def test_three_consumers_merge_into_one_tile() -> None:
    p = CORPUS / "upstream/tests/gpu/end2end/wgmma_ss.co"
    if not p.exists():
        pytest.skip(f"shared corpus not present at {CORPUS}")
    _gemm(load_co(p), "matmul_f16_ws_1p3c", 384, 256, 128)


# rings without events: roles on different units that share a buffer with nothing ordering them
# race (no order is the program's), so each of these is refused (located) for that before its own
# flaw shows
NO_EVENTS = "warp roles that use 's' with no event ordering them (a race"


BAD = {
    "two consumer roles": (  # each with an accumulator of its own (a role's body is its scope)
        "inthreads.async (wg == 1) { acc = mma.fill.f32 0.0f; foreach {k} in [cdiv(K, 64)] { mma.row.row acc, s[k % 2], s[k % 2]; } }",
        NO_EVENTS,
    ),
    "mismatched loops": (
        "inthreads.async (wg == 1) { acc = mma.fill.f32 0.0f; foreach {k} in [cdiv(K, 32)] { mma.row.row acc, s[k % 2], s[k % 2]; } }",
        NO_EVENTS,
    ),
    "overlapping roles": (
        "inthreads.async (wg >= 0) { acc = mma.fill.f32 0.0f; foreach {k} in [cdiv(K, 64)] { mma.row.row acc, s[k % 2], s[k % 2]; } }",
        NO_EVENTS,
    ),
    "wrong slot": (
        "inthreads.async (wg == 1) { acc = mma.fill.f32 0.0f; foreach {k} in [cdiv(K, 64)] { mma.row.row acc, s[(k + 1) % 2], s[(k + 1) % 2]; } }",
        NO_EVENTS,
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_uncollapsible_pipelines_say_why(case: str) -> None:
    consumer, message = BAD[case]
    extra = ""
    if case == "two consumer roles":
        consumer = consumer.replace("wg == 1", "wg == 2")
        extra = "inthreads.async (wg == 1) { acc = mma.fill.f32 0.0f; foreach {k} in [cdiv(K, 64)] { mma.row.row acc, s[k % 2], s[k % 2]; } }"
    src = f"""__co__ void f(global f16 [M, K] a) {{
  parallel {{bm}} by [cdiv(M, 64)] : block {{
    shared f16 [64, 64] s[2];
    parallel wg by 3 : group-4 {{
      inthreads.async (wg == 0) {{
        foreach {{k}} in [cdiv(K, 64)] {{ tma.copy a.subspan(64, 64).at(bm, k) => s[k % 2]; }}
      }}
      {extra}
      {consumer}
    }}
  }}
}}
"""
    out = translate_full(src, filename="bad.co")
    assert "f" in out.failed
    err = out.failed["f"]
    assert message in err.diagnostics[0].message, err.format()
    assert err.diagnostics[0].span is not None and err.diagnostics[0].span.line > 1


SCRIPT = REPO / "tests" / "aot_check.py"
SHAPES = json.dumps([[[256, 128], "float16"], [[384, 128], "float16"], [[256, 384], "float16"]])
VARIANTS = [{}, {"WARP_SPECIALIZE": False}, {"WARP_SPECIALIZE": False, "NUM_STAGES": 1}]


def _aot(example: str, overrides: dict[str, object]) -> list[dict[str, object]]:
    r = sm90.script(SCRIPT, str(EXAMPLES / example), "matmul", SHAPES, "{}", json.dumps(overrides))
    assert r.returncode == 0, r.stderr[-3000:]
    return [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]


@pytest.mark.parametrize("example", PIPELINED)
def test_every_pipeline_variant_compiles_for_sm90a(example: str) -> None:
    """num_stages = STAGES with and without warp specialization, and num_stages = 1.

    Where Triton 3.6 cannot compile the warp-specialized variant (a TMA-descriptor store
    epilogue), the launcher falls back to the plain pipelined loop; the plain variants must compile.
    """
    for ov in VARIANTS:
        (rec,) = _aot(example, ov)
        if "error" in rec:
            assert ov == {} and rec["kwargs"]["WARP_SPECIALIZE"] is True, rec
            continue
        assert rec["target"] and rec["found"]["wgmma.mma_async"] and rec["found"]["cp.async.bulk.tensor"], rec


def test_launch_falls_back_when_warp_specialization_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from croq2triton.runtime import launch as rt

    calls: list[dict[str, object]] = []

    class FakeKernel:
        __name__ = "fake_kernel"

        def __getitem__(self, grid: object) -> object:
            def run(*args: object, **kw: object) -> None:
                calls.append(kw)
                if kw.get("WARP_SPECIALIZE"):
                    raise RuntimeError("PassManager::run failed")

            return run

    monkeypatch.setattr(rt, "interpreting", lambda: False)
    kernel = FakeKernel()
    with pytest.warns(RuntimeWarning, match="warp specialization"):
        rt.launch(kernel, (1,), [], {"WARP_SPECIALIZE": True})
    rt.launch(kernel, (1,), [], {"WARP_SPECIALIZE": True})
    assert [c["WARP_SPECIALIZE"] for c in calls] == [True, False, False]


def test_pipeline_examples_are_tutorial_dialect() -> None:
    for name in ("gemm_v3.co", "gemm_v4.co", "tma_pipeline.co"):
        with pytest.raises(CroqError):
            translate_full((EXAMPLES / name).read_text(), filename=name, dialect="upstream")


def test_examples_exist() -> None:
    assert all((EXAMPLES / p).exists() for p in PIPELINED)
    assert Path(SCRIPT).exists()


def test_non_power_of_two_tiles_split_into_pieces() -> None:
    """v4's 192-wide tiles: 128 + 64 column pieces of the tiled contraction, each its own
    descriptor load; the result is the GEMM on ragged sizes."""
    from croq2triton.api import load_source

    text = (EXAMPLES / "gemm_v4.co").read_text()
    tiled_src = translate_full(text, filename="gemm_v4.co").source
    assert "rhs_desc_0.load([pid_n * 192, k * 64])" in tiled_src and "rhs_desc_1.load([pid_n * 192 + 128" in tiled_src
    tiled = load_source(tiled_src, "v4_tiled")
    m, n, k = 200, 300, 100
    a, b = randn(m, k, dtype=torch.float16, seed=3), randn(n, k, dtype=torch.float16, seed=4)
    out = poisoned(m, n, dtype=torch.float16)
    tiled.matmul(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_statements_beside_the_loops_run_in_the_order_of_their_events(schedule: str) -> None:
    # tests/programs/pipeline_sides.co: after the loops the producer waits for the consumer's
    # 'trigger done' before copying the tile the consumer stored (it copied zeros before that);
    # before them the consumer waits for the bias the producer staged
    from kernel_util import assert_near_max, load_once

    mod = load_once(REPO / "tests" / "programs" / "pipeline_sides.co", schedule)
    m, n, k = 72, 40, 56  # ragged: two row blocks (the second 8 rows), two column blocks, two K tiles
    a, b = randn(m, k, dtype=torch.float16, seed=1), randn(n, k, dtype=torch.float16, seed=2)
    ref = a.double().cpu() @ b.double().cpu().T
    c = poisoned(m, n)
    mod.done_copyout(a, b, c)
    assert_near_max(c, ref, gemm_tol(k), f"done_copyout ({schedule})")
    bias = randn(n, seed=3)
    c = poisoned(m, n)
    mod.bias_prologue(a, b, bias, c)
    assert_near_max(c, ref + bias.double().cpu(), gemm_tol(k), f"bias_prologue ({schedule})")
