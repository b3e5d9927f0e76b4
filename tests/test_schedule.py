"""``--schedule auto``: the translator may pick stages, warps and program order; results must not change."""

from __future__ import annotations

import pytest
import torch
from conftest import CORPUS, EXAMPLES, needs_corpus
from kernel_util import assert_close, gemm_tol, poisoned, randn

from croq2triton.api import load, translate_full
from croq2triton.errors import CroqError

GEMMS = ["gemm_v2.co", "gemm_v3.co", "gemm_v4.co", "tma_pipeline.co"]


def _same_gemm(src_fn, auto_fn, m: int, n: int, k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:  # noqa: ANN001
    """Both schedules on fresh ragged f16 inputs (NaN-poisoned outputs): equal, and a GEMM."""
    a, b = randn(m, k, dtype=torch.float16, seed=seed), randn(n, k, dtype=torch.float16, seed=seed + 1)
    o1, o2 = poisoned(m, n, dtype=torch.float16), poisoned(m, n, dtype=torch.float16)
    src_fn(a, b, o1)
    auto_fn(a, b, o2)
    # the auto schedule sums K in other steps (64 instead of the source's): the f32 sums differ in their
    # last bits, so the f16 outputs may round one ulp apart (2^-10 relative, 2^-11 at the low end)
    assert_close(o2, o1, atol=1e-3, rtol=2e-3)
    assert_close(o2, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)
    return a, b


@pytest.mark.parametrize("example", GEMMS)
def test_auto_schedule_gives_the_same_results(example: str) -> None:
    src = load(EXAMPLES / example)
    auto = load(EXAMPLES / example, schedule="auto")
    # ragged, and more 128 x 256 tiles (3 x 3) than the interpreter's 4 persistent programs
    m, n, k = (300, 600, 200) if example != "gemm_v2.co" else (256, 512, 128)
    _same_gemm(src.matmul, auto.matmul, m, n, k, seed=1)


def test_auto_schedule_deepens_pipelines_and_groups_programs() -> None:
    text = (EXAMPLES / "gemm_v3.co").read_text()
    src = translate_full(text, filename="gemm_v3.co").source
    auto = translate_full(text, filename="gemm_v3.co", schedule="auto").source
    # source: STAGES = 1, and the consumer frees its slot right after mma.commit (its MMAs still
    # read it while the next copy lands): one more buffer in Triton; auto: 4 x 48 KB stages, the
    # persistent tile loop fused with the K loop (Schedule.flatten), beside the epilogue's 32 KB
    assert "NUM_STAGES=2" in src and "NUM_STAGES=4" in auto
    assert "in tl.range(pid, num_tiles, NUM_SMS, num_stages=NUM_STAGES, flatten=True):" in auto
    waited = text.replace("          mma.commit;\n", "")
    assert waited != text
    assert "NUM_STAGES=1" in translate_full(waited, filename="gemm_v3.co").source
    # both schedules walk MMA kernels' blocks in L2-friendly groups (the source states no order)
    assert "group_size_m = tl.minimum(" in src and "group_size_m = tl.minimum(" in auto
    assert "croq2triton translate --schedule auto gemm_v3.co" in auto


def test_unknown_schedule_is_an_error() -> None:
    with pytest.raises(CroqError, match="unknown schedule"):
        translate_full("", filename="x.co", schedule="fast")


def test_a_row_index_used_on_its_own_keeps_one_program_per_block() -> None:
    text = (EXAMPLES / "gemm_v0.co").read_text()
    # block_m also used on its own: the rows of a program's second block would change meaning
    changed = text.replace(
        "output.at(block_m#thr_m, block_n#thr_n) = acc;", "output.at(block_m#thr_m, block_n#thr_n) = acc + block_m;"
    )
    assert changed != text
    auto = translate_full(changed, filename="v0.co").source
    # one program per block (the tile-IR path lifts the per-thread loop as written), never coarsened
    assert ("Program = one block" in auto or "one program per block" in auto) and "neighbouring blocks" not in auto
    # a row index composed into a tensor whose rows are not the extent that was tiled
    other = text.replace("global f16 [M, N] output", "global f16 [P, N] output")
    assert other != text
    auto = translate_full(other, filename="v0.co").source
    assert "neighbouring blocks" not in auto
    # no dot product to lift: nothing to gain, the stated blocks stay
    add = """
__co__ void add(global f32 [M, N] x, global f32 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block, {tm, tn} by [32, 32] : thread
    y.at(bm#tm, bn#tn) = x.at(bm#tm, bn#tn) + 1.0f;
}
"""
    assert "neighbouring blocks" not in translate_full(add, filename="add.co").source


# (the seed, tma_pipeline.co, is one producer and one consumer warpgroup: without the contraction path
# its roles are collapsed and lifted as written, lift/collapse.py)


def test_chunkat_kernels_are_retiled_only_where_the_tiles_divide_the_extents() -> None:
    # v2 tiles with chunkat (floor division by the grid): the tiled contraction is the same GEMM only
    # when the source's tiles divide the extents; the launcher runs the kernel as written otherwise
    # (MMA as written on the tile-IR path, lift/mma.py)
    auto = load(EXAMPLES / "gemm_v2.co", schedule="auto")
    assert "if M % 64 == 0 and K % 64 == 0 and N % 128 == 0:" in auto.__croq_source__
    assert "matmul" not in auto.__croq_translation__.failed
    src = load(EXAMPLES / "gemm_v2.co")
    for m, n, k in ((256, 512, 128), (192, 384, 128)):
        _same_gemm(src.matmul, auto.matmul, m, n, k, seed=7)


def test_the_seeds_dma_copy_epilogue_is_a_tma_store_under_auto() -> None:
    seed = translate_full((EXAMPLES / "tma_pipeline.co").read_text(), filename="s.co", schedule="auto").source
    assert "output_desc.store(" in seed and '"stores (auto)"' in seed


@needs_corpus
def test_tiles_declared_as_int_constants_are_retiled() -> None:
    # wgmma_ss.co declares `int WARP_M = 64, WARP_N = 64, ...` in the function: read as literals,
    # by the tiled contraction and by the kernel as written (its grid, on the tile-IR path)
    path = CORPUS / "upstream/tests/gpu/end2end/wgmma_ss.co"
    auto = load(path, schedule="auto")
    for func in ("matmul_e4m3", "matmul_f16"):
        assert func not in auto.__croq_translation__.failed, auto.__croq_translation__.failed
    assert auto.__croq_source__.count("# the chunkat tiles are exact: the tiled contraction") >= 2
    src = load(path)
    # rhs is tiled with chunkat (a GEMM for tile-multiple N and K): 512 takes the tiled kernel, 384 not
    for m, n, k in ((300, 512, 128), (100, 384, 128)):
        a, b = _same_gemm(src.matmul_f16, auto.matmul_f16, m, n, k, seed=9)
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        o3 = poisoned(m, n, dtype=torch.float32)
        auto.matmul_e4m3(a8[:, :64].contiguous(), b8[:, :64].contiguous(), o3)
        ref = a8[:, :64].double() @ b8[:, :64].double().T
        assert_close(o3, ref, atol=2e-2, rtol=1e-3)


def test_named_schedule_parameters_can_be_swept() -> None:
    from croq2triton.runtime.launch import CroqLaunchError, tuned

    src = load(EXAMPLES / "gemm_v3.co")
    auto = load(EXAMPLES / "gemm_v3.co", schedule="auto")
    for params in ({"GROUP_M": 3}, {"NUM_STAGES": 2, "num_warps": 4}):
        run = tuned(**params)
        _same_gemm(src.matmul, lambda a, b, o, run=run: auto.matmul(a, b, o, _launch=run), 300, 600, 136, seed=11)
    seen: dict[str, object] = {}

    class Kernel:  # records what the launch passes on
        def __getitem__(self, grid: tuple[int, ...]) -> object:
            return lambda *args, **kw: seen.update(kw)

    tuned(GROUP_M=3, num_stages=2)(Kernel(), (1,), [], {"GROUP_M": 8, "NUM_SMS": 132, "num_warps": 8})
    assert seen == {"GROUP_M": 3, "NUM_SMS": 132, "num_warps": 8, "num_stages": 2}
    with pytest.raises(CroqLaunchError, match="not a tunable launch parameter: NUM_SMS"):
        tuned(NUM_SMS=8)
    with pytest.raises(CroqLaunchError, match="GROUP_M must be a positive integer"):
        tuned(GROUP_M=0)


CORPUS_GEMMS = [
    ("tutorial/matmul_f16_v0_naive.co", (300, 600, 136)),
    ("tutorial/matmul_f16_v1_shared_memory.co", (300, 600, 136)),
    ("tutorial/matmul_f16_v2_hopper_tma_wgmma.co", (256, 512, 128)),  # chunkat: tile multiples
    ("tutorial/matmul_f16_v3_warpspec.co", (300, 600, 136)),
    ("tutorial/matmul_f16_v4_auto_tuned.co", (300, 600, 136)),
    ("seed/tma_pipeline_matmul.co", (300, 600, 136)),
]


@needs_corpus
@pytest.mark.parametrize(("path", "size"), CORPUS_GEMMS, ids=[p.split("/")[-1] for p, _ in CORPUS_GEMMS])
def test_upstream_gemms_give_the_same_results_under_auto(path: str, size: tuple[int, int, int]) -> None:
    # the upstream originals (not our examples/ copies): auto tiles them all as contractions
    src = load(CORPUS / path)
    auto = load(CORPUS / path, schedule="auto")
    text = auto.__croq_source__
    # tiled as a proved contraction (schedule/gemm.py)
    assert "a contraction: croq2triton/lift/contraction.py proves it" in text
    _same_gemm(src.matmul, auto.matmul, *size, seed=13)


V1_LOOP = """      foreach {ik} in [TILE_K]
        acc += lhs_s.at(thr_m, ik) * rhs_s.at(thr_n, ik);"""


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        # the staged tile is also read after the loop: its last contents are the source's 128 columns
        (
            "    output.at(block_m#thr_m, block_n#thr_n) = acc;",
            "    output.at(block_m#thr_m, block_n#thr_n) = acc + lhs_s.at(thr_m, 0);",
            "buffer read elsewhere",
        ),
        # the counter is used for something other than the K window
        (
            "acc += lhs_s.at(thr_m, ik) * rhs_s.at(thr_n, ik);",
            "acc += lhs_s.at(thr_m, ik) * rhs_s.at(thr_n, ik) * iv_k;",
            "counter used",
        ),
        # the inner loop does not run over the whole staged tile
        ("foreach {ik} in [TILE_K]", "foreach {ik} in [64]", "partial reduction"),
        # a swizzled copy fixes the tile's layout
        ("dma.copy lhs.subspan", "tma.copy.swiz<128> lhs.subspan", "swizzle"),
    ],
)
def test_near_misses_of_a_staged_gemm_still_translate(old: str, new: str, why: str) -> None:
    text = (EXAMPLES / "gemm_v1.co").read_text()
    changed = text.replace(old, new)
    assert changed != text, why
    try:
        auto = translate_full(changed, filename="v1.co", schedule="auto").source
    except CroqError:
        pytest.fail(f"{why}: should still translate")
    assert "def matmul(" in auto and "not translated" not in auto, why


KT_GEMM = """
__co__ void matmul(global f16 [K, M] lhs, global f16 [N, K] rhs, global f32 [M, N] output) {
  parallel {block_m, block_n} by [cdiv(M, 32), cdiv(N, 32)] : block,
           {thr_m, thr_n} by [32, 32] : thread {
    shared f16 [128, 32] lhs_s;
    shared f16 [32, 128] rhs_s;
    f32 acc = 0.0f;
    foreach {iv_k} in [cdiv(K, 128)] {
      dma.copy lhs.subspan(128, 32).at(iv_k, block_m) => lhs_s;
      dma.copy rhs.subspan(32, 128).at(block_n, iv_k) => rhs_s;
      foreach {ik} in [128]
        acc += lhs_s.at(ik, thr_m) * rhs_s.at(thr_n, ik);
    }
    output.at(block_m#thr_m, block_n#thr_n) = acc;
  }
}
"""
