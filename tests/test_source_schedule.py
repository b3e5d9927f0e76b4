"""The source schedule of proved contractions: the Schedule the .co states (lift/stated.py,
schedule/policy.py ``source``), read off our own GEMM forms; their numerics are checked in both
schedules by tests/test_gemm_forms.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from conftest import EXAMPLES
from kernel_util import assert_close, gemm_tol, load_co, poisoned, randn

from croq2triton.api import translate_full

FORMS = Path(__file__).parent / "programs" / "gemm_forms"


def _translate(path: Path) -> str:
    """The module's text on one line."""
    tr = translate_full(path.read_text(), filename=path.name)
    assert not tr.failed
    return " ".join(tr.source.split())


def _launch(text: str) -> dict[str, str]:
    return dict(re.findall(r"\b(num_warps|NUM_STAGES|GROUP_M)=(\d+)", text))


@pytest.mark.parametrize(
    ("path", "tile", "stages", "warps"),
    [
        # one warpgroup, 64 x 128 tiles through TMA, no ring: Triton's 3 stages
        (EXAMPLES / "gemm_v2.co", "64 x 128 x 64", "3", "4"),
        # a ring of 1 whose slot is freed right after mma.commit: one stage more
        (EXAMPLES / "gemm_v3.co", "64 x 128 x 64", "2", "4"),
        # a ring of 4 events and buffers, one consumer warpgroup
        (FORMS / "pipe_1c_s4.co", "64 x 128 x 32", "4", "4"),
        # two consumer warpgroups (the producer's does not count) whose accumulators fit one's registers
        (FORMS / "pipe_2c_s2.co", "128 x 64 x 64", "2", "4"),
        # a per-element K loop (K steps of 1) is read in steps of 32
        (FORMS / "thread_8x32.co", "64 x 128 x 32", "3", "4"),
        # 32-row blocks take the 64 rows of one warpgroup's MMA; K steps of 48 are rounded up to 64
        (FORMS / "staged_k48.co", "64 x 32 x 64", "3", "8"),
    ],
)
def test_the_source_states_tile_stages_and_warps(path: Path, tile: str, stages: str, warps: str) -> None:
    text = _translate(path)
    assert f"here over {tile} tiles (schedule source;" in text
    got = _launch(text)
    assert (got["NUM_STAGES"], got["num_warps"]) == (stages, warps)


def test_warp_roles_are_kept_as_the_warp_specialize_hint() -> None:
    roles = _translate(FORMS / "pipe_1c_s4.co")
    assert "warp_specialize=WARP_SPECIALIZE" in roles and "WARP_SPECIALIZE=_rt.WARP_SPECIALIZE" in roles
    plain = _translate(EXAMPLES / "gemm_v2.co")
    assert "WARP_SPECIALIZE" not in plain


def test_a_tile_loop_of_its_own_is_a_persistent_grid() -> None:
    text = _translate(FORMS / "persistent.co")
    assert "_rt.num_sms" in text
    plain = _translate(EXAMPLES / "gemm_v2.co")
    assert "_rt.num_sms" not in plain


def test_columns_that_are_not_a_power_of_two_are_pieces() -> None:
    # v4's 128 x 192 tile: a 128- and a 64-column piece, each its own accumulator, B tile, dot and store
    text = _translate(EXAMPLES / "gemm_v4.co")
    assert "here over 128 x 192 x 64 tiles (schedule source;" in text
    assert (
        "offs_n_0 = pid_n * 192 + tl.arange(0, 128)" in text
        and "offs_n_1 = pid_n * 192 + tl.arange(0, 64) + 128" in text
    )
    assert "acc_0 = tl.dot(a, tl.trans(b_0), acc_0)" in text and "acc_1 = tl.dot(a, tl.trans(b_1), acc_1)" in text
    # two consumer warpgroups' 128 x 192 accumulator in one warpgroup: measured faster
    assert _launch(text)["num_warps"] == "4"


def test_rows_that_are_not_a_power_of_two_are_pieces() -> None:
    # three consumer warpgroups' 192 rows: a 128- and a 64-row piece, each its own A tile and dot
    text = _translate(FORMS / "pipe_3c_s1.co")
    assert "here over 192 x 64 x 32 tiles (schedule source;" in text
    assert (
        "offs_m_0 = pid_m * 192 + tl.arange(0, 128)" in text
        and "offs_m_1 = pid_m * 192 + tl.arange(0, 64) + 128" in text
    )
    assert "acc_0 = tl.dot(a_0, tl.trans(b), acc_0)" in text and "acc_1 = tl.dot(a_1, tl.trans(b), acc_1)" in text


WIDE_K = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f16 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 128), cdiv(N, 256)] : block {
    shared f16 [128, 256] lhs_s;
    shared f16 [256, 256] rhs_s;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {k} in [cdiv(K, 256)] {
        dma.copy a.subspan(128, 256).at(bm, k) => lhs_s;
        dma.copy b.subspan(256, 256).at(bn, k) => rhs_s;
        mma.row.row acc, lhs_s, rhs_s;
      }
      mma.store acc, out.subspan(128, 256).at(bm, bn);
    }
  }
}
"""


def test_the_default_depth_fits_shared_memory(tmp_path: Path) -> None:
    # no stated ring: Triton's 3 stages where they fit; 128 x 256 tiles with K steps of 256 take 192 KB
    # a stage, so one; the accumulator of 128 x 256 takes 8 warps at 128 registers a thread
    p = tmp_path / "wide_k.co"
    p.write_text(WIDE_K)
    text = _translate(p)
    assert "here over 128 x 256 x 256 tiles (schedule source;" in text
    assert _launch(text) == {"GROUP_M": "8", "NUM_STAGES": "1", "num_warps": "8"}
    m, n, k = 130, 260, 300
    a, b = randn(m, k, dtype=torch.float16, seed=5), randn(n, k, dtype=torch.float16, seed=6)
    out = poisoned(m, n, dtype=torch.float16)
    load_co(p).gemm(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)


BIAS_PIECES = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [N] acc_0, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 8), cdiv(N, 96)] : block, {tm, tn} by [8, 96] : thread {
    f32 s = 0.0f;
    foreach {k} in [K]
      s += a.at(bm # tm, k) * b.at(bn # tn, k);
    out.at(bm # tm, bn # tn) = s + acc_0.at(bn # tn);
  }
}
"""


def test_an_epilogue_on_pieces_reads_its_tensor_per_piece(tmp_path: Path) -> None:
    # 96 columns as 64 + 32; the bias tensor is named like the first piece's accumulator on purpose
    p = tmp_path / "bias_pieces.co"
    p.write_text(BIAS_PIECES)
    text = _translate(p)
    assert "here over 64 x 96 x 32 tiles (schedule source;" in text
    assert "acc_0_e_0" in text and "acc_0_e_1" in text  # the tensor, loaded once per piece
    m, n, k = 70, 100, 40
    a, b = randn(m, k, dtype=torch.float16, seed=7), randn(n, k, dtype=torch.float16, seed=8)
    bias = randn(n, dtype=torch.float32, seed=9)
    out = poisoned(m, n, dtype=torch.float32)
    load_co(p).gemm(a, b, bias, out)
    assert_close(out, a.double() @ b.double().T + bias.double(), atol=gemm_tol(k), rtol=1e-3)
