"""lift/contraction.py: a kernel is tiled as a GEMM exactly when the analysis proves it computes one.

Forms that compute ``out = a @ b^T`` are recognised whatever their thread tile, staging or roles
(tests/test_gemm_forms.py runs them); these are the near misses that must *not* be: each differs
from a GEMM in one way that changes the result, so tiling it as a contraction would be wrong.
"""

from __future__ import annotations

import pytest
import torch
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.schedule.schedule import Schedule

MARK = "a contraction: croq2triton/lift/contraction.py proves it"

GEMM = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block, {tm, tn} by [16, 16] : thread {
    f32 s = 0.0f;
    foreach {k} in [KLOOP]
      s += a.at(bm # tm, KIDX) * b.at(bn # tn, k);
    if (GUARD)
      out.at(bm # tm, bn # tn) = VALUE;
  }
}
"""
BASE = {"KLOOP": "K", "KIDX": "k", "GUARD": "bm # tm < M && bn # tn < N", "VALUE": "s"}


def _source(**changes: str) -> str:
    text = GEMM
    for key, value in {**BASE, **changes}.items():
        text = text.replace(key, value)
    return text


def _auto(text: str) -> str:
    return translate_full(text, filename="near.co", schedule="auto").source


def _computes_the_gemm(src: str, name: str, seed: int) -> None:
    """``gemm(a, b, out)`` of ``src`` writes a @ b^T on ragged 37 x 45 x 29 f16 inputs (f32 out)."""
    mod = load_source(src, name)
    a, b = randn(37, 29, dtype=torch.float16, seed=seed), randn(45, 29, dtype=torch.float16, seed=seed + 1)
    out = poisoned(37, 45, dtype=torch.float32)
    mod.gemm(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=1e-2, rtol=1e-3)


def test_the_plain_form_is_a_contraction_and_computes_the_gemm() -> None:
    src = _auto(_source())
    assert MARK in src
    _computes_the_gemm(src, "near_plain", seed=1)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"KLOOP": "K - 1"}, "the reduction stops before the end of K"),
        ({"KIDX": "k / 2"}, "a's K index is not b's"),
        ({"VALUE": "s * a.at(bm # tm, 0)"}, "the stored value reads an operand (tests/test_gemm_epilogues.py)"),
        ({"GUARD": "bm # tm < M - 1 && bn # tn < N"}, "the guard drops a row the tensor has"),
        ({"GUARD": "bm # tm < M && bn # tn < N && bn > 0"}, "the guard drops a block"),
    ],
)
def test_a_near_miss_is_lowered_as_written(change: dict[str, str], why: str) -> None:
    assert MARK not in _auto(_source(**change)), why


GUARDED = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block, {tm, tn} by [16, 16] : thread {
    f32 s = 0.0f;
    foreach {ko} in [cdiv(K, 8)]
      foreach {ki} in [8]
        if (KGUARD)
          s = a.at(bm # tm, ko # ki) * b.at(bn # tn, ko # ki) + s;
    if (bm # tm < M && bn # tn < N)
      out.at(bm # tm, bn # tn) = s;
  }
}
"""


@pytest.mark.parametrize(
    ("guard", "tiled"),
    [
        ("ko # ki < K", True),  # keeps the reads inside a and b: outside they are zero anyway
        ("ko # ki < K && bm # tm < M", True),
        ("ko # ki < K - 1", False),  # drops the last k
        ("ko # ki < K / 2", False),
        ("bm # tm < M / 2", False),  # drops rows
        ("ko # ki < N", False),  # another tensor's extent
    ],
)
def test_a_guard_inside_the_reduction_is_a_contraction_only_when_it_keeps_reads_in_bounds(
    guard: str, tiled: bool
) -> None:
    src = _auto(GUARDED.replace("KGUARD", guard))
    assert (MARK in src) == tiled, guard
    if tiled:
        _computes_the_gemm(src, f"near_guard_{len(guard)}", seed=5)


FLAT = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel t by GRID : block, {tm, tn} by [16, 16] : thread {
    int bm = t / cdiv(N, 16);
    int bn = t % cdiv(N, 16);
    f32 s = 0.0f;
    foreach {k} in [K]
      s += a.at(bm * 16 + tm, k) * b.at(bn * 16 + tn, k);
    if (bm * 16 + tm < M && bn * 16 + tn < N)
      out.at(bm * 16 + tm, bn * 16 + tn) = s;
  }
}
"""


@pytest.mark.parametrize(
    ("grid", "tiled"),
    [
        ("cdiv(M, 16) * cdiv(N, 16)", True),
        ("cdiv(N, 16) * cdiv(M, 16)", True),
        ("cdiv(M, 16) * cdiv(N, 16) - 1", False),  # the last tile is left out
        ("cdiv(M, 16) * cdiv(N, 8)", False),  # not a multiple of the divisor: ids past the rows
    ],
)
def test_a_flat_grid_of_tile_ids_is_a_contraction_only_when_it_covers_the_tiles_once(grid: str, tiled: bool) -> None:
    src = _auto(FLAT.replace("GRID", grid))
    assert (MARK in src) == tiled, grid
    if tiled:
        _computes_the_gemm(src, f"near_flat_{len(grid)}", seed=7)


UNROLLED = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block, {tm, tn} by [16, 16] : thread {
    f32 s = 0.0f;
    foreach {k} in [STEPS]
      s += SUM;
    if (bm # tm < M && bn # tn < N)
      out.at(bm # tm, bn # tn) = s;
  }
}
"""


def _p(k: str) -> str:
    return f"a.at(bm # tm, {k}) * b.at(bn # tn, {k})"


@pytest.mark.parametrize(
    ("steps", "products", "tiled"),
    [
        ("cdiv(K, 3)", [_p("3 * k"), _p("3 * k + 1"), _p("3 * k + 2")], True),
        ("cdiv(K, 2)", [_p("2 * k + 1"), _p("2 * k")], False),  # not listed from offset 0 (refused, not wrong)
        ("cdiv(K, 2)", [_p("2 * k")], False),  # the odd k are left out
        ("cdiv(K, 2)", [_p("2 * k"), _p("2 * k")], False),  # every even k twice
        ("cdiv(K, 3)", [_p("3 * k"), _p("3 * k + 2")], False),  # a gap
        ("cdiv(K, 2)", [_p("2 * k"), "a.at(bm # tm, 2 * k + 1) * b.at(bn # tn, 2 * k)"], False),  # b's k not a's
    ],
)
def test_a_hand_unrolled_k_loop_is_a_contraction_only_when_its_products_tile_k(
    steps: str, products: list[str], tiled: bool
) -> None:
    src = _auto(UNROLLED.replace("STEPS", steps).replace("SUM", " + ".join(products)))
    assert (MARK in src) == tiled, products
    if tiled:
        _computes_the_gemm(src, "near_unrolled", seed=9)


def test_partial_sums_stored_inside_the_k_loop_are_the_last_write() -> None:
    # the store inside the loop writes every partial sum; the last one, the whole sum, stays
    text = _source().replace(
        "foreach {k} in [K]\n      s += a.at(bm # tm, k) * b.at(bn # tn, k);",
        "foreach {k} in [K] {\n      s += a.at(bm # tm, k) * b.at(bn # tn, k);\n"
        "      if (bm # tm < M && bn # tn < N) out.at(bm # tm, bn # tn) = s;\n    }",
    )
    assert "foreach {k} in [K] {" in text
    src = _auto(text)
    mod = load_source(src, "near_partial")
    a, b = randn(20, 21, dtype=torch.float16, seed=3), randn(18, 21, dtype=torch.float16, seed=4)
    out = poisoned(20, 18, dtype=torch.float32)
    mod.gemm(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=1e-2, rtol=1e-3)


def test_schedules_reject_blocks_triton_cannot_tile() -> None:
    assert Schedule(128, 256, 64).describe().startswith("128 x 256 x 64 tiles")
    # rows and columns that are multiples of 16 are pieces of powers of two; K steps are powers of two
    assert Schedule(96, 192, 64).pieces_m == ((0, 64), (64, 32))
    assert Schedule(96, 192, 64).pieces_n == ((0, 128), (128, 64))
    assert Schedule(128, 256, 64).pieces_n == ((0, 256),)
    for bad in ((100, 128, 64), (128, 40, 64), (128, 128, 8), (128, 128, 48)):
        with pytest.raises(ValueError):
            Schedule(*bad)


def test_an_accumulation_under_a_condition_is_not_a_contraction() -> None:
    text = _source().replace("      s += a.at", "      if (k < K / 2) s += a.at")
    assert "if (k < K / 2)" in text
    assert MARK not in _auto(text)


PERSISTENT = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  int tiles_n = cdiv(N, 32);
  int total = cdiv(M, 16) * tiles_n;
  parallel w by 3 : block {
    foreach {it} in [ITERS] {
      tile = it # w;
      if (tile < LIMIT) {
        parallel {tm, tn} by [16, 32] : thread {
          f32 s = 0.0f;
          foreach {k} in [K]
            s += a.at((tile / tiles_n) * 16 + tm, k) * b.at((tile % tiles_n) * 32 + tn, k);
          if ((tile / tiles_n) * 16 + tm < M && (tile % tiles_n) * 32 + tn < N)
            out.at((tile / tiles_n) * 16 + tm, (tile % tiles_n) * 32 + tn) = s;
        }
      }
    }
  }
}
"""


def test_a_persistent_tile_loop_is_a_contraction_when_it_visits_every_tile() -> None:
    good = PERSISTENT.replace("ITERS", "cdiv(total, 3)").replace("LIMIT", "total")
    src = _auto(good)
    assert MARK in src
    mod = load_source(src, "near_persistent")
    a, b = randn(50, 23, dtype=torch.float16, seed=5), randn(70, 23, dtype=torch.float16, seed=6)
    out = poisoned(50, 70, dtype=torch.float32)
    mod.gemm(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=1e-2, rtol=1e-3)
    for iters, limit in (("cdiv(total, 3) - 1", "total"), ("cdiv(total, 3)", "total - 1")):
        assert MARK not in _auto(PERSISTENT.replace("ITERS", iters).replace("LIMIT", limit)), (iters, limit)


def test_chunkat_tiles_of_cdiv_grids_are_tiled_when_the_sizes_divide() -> None:
    # gemm_v2.co tiles with chunkat on cdiv grids: its tiles have the block's extent only when the tiles
    # divide the sizes (LANGUAGE.md 7.6), so the launcher checks that and runs the kernel as written otherwise
    from conftest import EXAMPLES

    src = translate_full((EXAMPLES / "gemm_v2.co").read_text(), filename="gemm_v2.co", schedule="auto").source
    assert "if M % 64 == 0 and K % 64 == 0 and N % 128 == 0:" in src
    assert "def matmul_k0_general" in src
    mod = load_source(src, "v2_chunked")
    a, b = randn(128, 128, dtype=torch.float16, seed=7), randn(256, 128, dtype=torch.float16, seed=8)
    out = poisoned(128, 256, dtype=torch.float16)
    mod.matmul(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=2e-2, rtol=1e-2)
    # sizes the tiles do not divide: the kernel as written (what the source schedule computes too)
    source = load_source(translate_full((EXAMPLES / "gemm_v2.co").read_text(), filename="gemm_v2.co").source, "v2_src")
    a, b = randn(100, 70, dtype=torch.float16, seed=9), randn(130, 70, dtype=torch.float16, seed=10)
    o1, o2 = poisoned(100, 130, dtype=torch.float16), poisoned(100, 130, dtype=torch.float16)
    mod.matmul(a, b, o1)
    source.matmul(a, b, o2)
    assert_close(o1, o2, atol=1e-3, rtol=2e-3)


def test_bf16_operands_are_tiled_and_compute_the_gemm_in_the_interpreter() -> None:
    # Triton's interpreter computes bf16 dots wrongly: the kernel converts the operand tiles to f32 there
    text = _source().replace("global f16 [M, K] a, global f16 [N, K] b", "global bf16 [M, K] a, global bf16 [N, K] b")
    src = _auto(text)
    assert MARK in src and "_as_dot_operand(a)" in src
    mod = load_source(src, "near_bf16")
    a, b = randn(33, 40, dtype=torch.bfloat16, seed=11), randn(47, 40, dtype=torch.bfloat16, seed=12)
    out = poisoned(33, 47, dtype=torch.float32)
    mod.gemm(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=1e-2, rtol=1e-3)


STAGED_OUT = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block {
    shared f32 [16, 16] so;
    parallel {tm, tn} by [TM, 16] : thread {
      f32 s = 0.0f;
      foreach {k} in [K]
        s += a.at(bm # tm, k) * b.at(bn # tn, k);
      so.at(ROW, tn) = s;
    }
    dma.copy so => out.subspan(16, 16).at(bm, bn);
  }
}
"""


@pytest.mark.parametrize(
    ("tm", "row", "why"),
    [
        ("8", "tm", "the threads write half the shared tile the block copies out"),
        ("16", "15 - tm", "each sum lands in another row than the one it belongs to"),
    ],
)
def test_a_shared_tile_written_by_threads_must_be_the_output_tile(tm: str, row: str, why: str) -> None:
    assert MARK in _auto(STAGED_OUT.replace("TM", "16").replace("ROW", "tm"))  # the form itself is tiled
    assert MARK not in _auto(STAGED_OUT.replace("TM", tm).replace("ROW", row)), why


RESETS = """
__co__ void mma_reset(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 32)] : block, by 1 : group-4 {
    acc = mma.fill.f32 0.0f;
    foreach k in [cdiv(K, 32)] {
      mma.fill acc, 0.0f;
      sa = dma.copy.zfill a.subspan(64, 32).at(bm, k) => shared;
      sb = dma.copy.zfill b.subspan(32, 32).at(bn, k) => shared;
      mma.row.row acc, sa.data, sb.data;
    }
    mma.store acc, c.subspan(64, 32).at(bm, bn);
  }
}

__co__ void thread_reset(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block, {i, j} by [16, 16] : thread {
    mutable f32 acc = 0.0f;
    foreach k in [K] {
      acc = 0.0f;
      acc += a.at(bm # i, k) * b.at(bn # j, k);
    }
    if (bm # i < M && bn # j < N)
      c.at(bm # i, bn # j) = acc;
  }
}

__co__ void guarded_reset(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block, {i, j} by [16, 16] : thread {
    mutable f32 acc = 0.0f;
    foreach k in [K] {
      if (k == 7) acc = 0.0f;
      acc += a.at(bm # i, k) * b.at(bn # j, k);
    }
    if (bm # i < M && bn # j < N)
      c.at(bm # i, bn # j) = acc;
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("name", "first_k"), [("mma_reset", 32), ("thread_reset", 44), ("guarded_reset", 7)])
def test_an_accumulator_reset_inside_the_k_loop_keeps_only_what_follows_it(
    schedule: str, name: str, first_k: int
) -> None:
    # a reset inside the loop that sums is not a zero start: the kernel is lowered as written, which
    # sums only the iterations after the last reset (K = 45: the last K tile of 32, the last k, k >= 7)
    src = translate_full(RESETS, filename="resets.co", schedule=schedule).source
    kernel = src[src.index(f"def {name}_k0") :].split("\n\n\n")[0]
    assert MARK not in kernel
    mod = load_source(src, f"near_reset_{schedule}")
    # 2 x 2 blocks, the last ones partial (of 64 x 32 for the MMA; of 16 x 16 threads, each looping over K
    # one element a step in the interpreter, for the others)
    m, n = (70, 50) if name == "mma_reset" else (20, 19)
    a, b = randn(m, 45, dtype=torch.float16, seed=13), randn(n, 45, dtype=torch.float16, seed=14)
    out = poisoned(m, n, dtype=torch.float32)
    getattr(mod, name)(a, b, out)
    # f16 products rounded to f16 where one thread multiplies two f16 elements (LANGUAGE.md: no promotion)
    assert_close(out, a[:, first_k:].double() @ b[:, first_k:].double().T, atol=1e-2, rtol=2e-3)
