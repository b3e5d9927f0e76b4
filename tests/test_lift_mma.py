"""MMA as written on the tile-IR path (lift/mma.py): the kernels of tests/programs/mma_forms.co,
lifted as they stand (the contraction proof switched off, ``CROQ2TRITON_NO_CONTRACTION=1``) and as
the translator takes them by default, in both schedules, against torch on ragged sizes with
NaN-poisoned outputs; the IR of a folded loop over chunks of K; what is refused, where it stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from kernel_util import DEVICE, assert_close, gemm_tol, poisoned, randn

import croq2triton
from croq2triton.api import translate_full
from croq2triton.tir.dump import dump

PROGRAM = Path(__file__).parent / "programs" / "mma_forms.co"
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32
M, N, K = 100, 90, 75  # multiples of no tile
CASES = [(s, c) for s in ("source", "auto") for c in (True, False)]


@pytest.fixture(params=CASES, ids=[f"{s}-{'as_written' if c else 'default'}" for s, c in CASES])
def mod(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    schedule, as_written = request.param
    if as_written:
        monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    return croq2triton.load(PROGRAM, schedule=schedule)


def nt(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.double() @ b.double().T


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_every_kernel_takes_the_tile_ir_path(monkeypatch: pytest.MonkeyPatch, schedule: str) -> None:
    monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    out = translate_full(PROGRAM.read_text(), filename="mma_forms.co", schedule=schedule)
    assert not out.failed, out.failed
    assert not out.failed, out.failed


def test_chunked_k_loop(mod: Any) -> None:
    a, b = randn(M, K, dtype=F16, seed=1), randn(N, K, dtype=F16, seed=2)
    out = poisoned(M, N, dtype=F16)
    mod.chunked(a, b, out)
    assert_close(out, nt(a, b), atol=gemm_tol(K), rtol=1e-2)


def test_row_col_bf16_into_f32(mod: Any) -> None:
    a, b = randn(M, K, dtype=BF16, seed=3), randn(K, N, dtype=BF16, seed=4)
    out = poisoned(M, N)
    mod.row_col(a, b, out)
    assert_close(out, a.double() @ b.double(), atol=1e-3, rtol=1e-3)


def test_col_row_stored_transposed(mod: Any) -> None:
    a, b = randn(K, M, dtype=F16, seed=5), randn(N, K, dtype=F16, seed=6)
    out = poisoned(N, M, dtype=F16)
    mod.col_row_transposed(a, b, out)
    assert_close(out, (a.double().T @ b.double().T).T, atol=gemm_tol(K), rtol=1e-2)


def test_register_a_and_a_filled_accumulator(mod: Any) -> None:
    b = randn(N, 16, dtype=F16, seed=7)
    out = poisoned(64, N)
    mod.register_a(b, out)
    ref = 1.0 + torch.full((64, 16), 0.5, dtype=torch.float64) @ b.double().cpu().T
    assert_close(out, ref, atol=1e-3, rtol=1e-3)


def test_k_tiles_of_48_and_n_tiles_of_80(mod: Any) -> None:
    # the tiles' padding along K (48 -> 64) holds the next tile's data: it must not reach the sum
    a, b = randn(M, K, dtype=F16, seed=8), randn(N, K, dtype=F16, seed=9)
    out = poisoned(M, N)
    mod.k48_n80(a, b, out)
    assert_close(out, nt(a, b), atol=1e-2, rtol=1e-3)


def test_int8_into_s32_is_exact(mod: Any) -> None:
    g = torch.Generator().manual_seed(10)
    a = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8).to(DEVICE)
    b = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8).to(DEVICE)
    out = torch.full((M, N), -(2**31), dtype=torch.int32, device=DEVICE)
    mod.int8(a, b, out)
    ref = a.cpu().long() @ b.cpu().long().T
    assert torch.equal(out.cpu().long(), ref)


@pytest.mark.parametrize("rows", [10, 64])
def test_async_mma_and_masked_store(mod: Any, rows: int) -> None:
    a, b = randn(M, K, dtype=F16, seed=11), randn(N, K, dtype=F16, seed=12)
    out = poisoned(M, N, dtype=F16)
    mod.async_masked(a, b, out, rows)
    keep = torch.zeros(M, N, dtype=torch.bool)
    for i in range(0, M, 64):
        keep[i : i + rows, :] = True
    got = out.cpu()
    assert torch.isnan(got[~keep]).all(), "an element past the first rows was written"
    assert_close(got[keep], nt(a, b).cpu()[keep], atol=gemm_tol(K), rtol=1e-2)


@pytest.mark.parametrize("form", ["scaled", "split_scaled"])
def test_block_scaled(mod: Any, form: str) -> None:
    kb, nb = -(-K // 32), -(-N // 64)
    a, b = randn(M, K, dtype=F16, seed=13), randn(N, K, dtype=F16, seed=14)
    sa, sb = randn(M, kb, seed=15), randn(nb, kb, seed=16)
    out = poisoned(M, N)
    getattr(mod, form)(a, sa, b, sb, out)
    ad, bd, sad, sbd = (x.double().cpu() for x in (a, b, sa, sb))
    ref = torch.zeros(M, N, dtype=torch.float64)
    for k in range(kb):
        ks = slice(32 * k, 32 * k + 32)
        ref += (ad[:, ks] @ bd[:, ks].T) * sad[:, k : k + 1] * sbd[:, k].repeat_interleave(64)[:N]
    assert_close(out, ref, atol=5e-2, rtol=1e-2)


def test_refilled_for_every_tile_of_a_persistent_loop(mod: Any) -> None:
    a, b = randn(M, K, dtype=F16, seed=17), randn(N, K, dtype=F16, seed=18)
    out = poisoned(M, N)
    mod.refilled(a, b, out)
    assert_close(out, nt(a, b), atol=1e-2, rtol=1e-3)


def test_the_folded_chunk_loop_is_one_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    out = translate_full(PROGRAM.read_text(), filename="mma_forms.co", schedule="source")
    (kernel,) = out.ir["chunked"]
    text = dump(kernel)  # type: ignore[arg-type]
    assert "  acc: f32[64, 64] = tl.zeros([64, 64], tl.float32)  @10" in text, text
    assert "    acc = dot(lhs_s, trans(rhs_s)) + acc  @17" in text, text
    assert text.count("for ") == 1, text  # the loop over chunks of K is gone


MULTI_UNIT = """
__co__ void two_units(global f16 [M, K] lhs, global f16 [N, K] rhs, global f32 [M, N] output) {
  parallel {bm, bn} by [cdiv(M, 128), cdiv(N, 64)] : block {
    parallel wg by 2 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {k} in [cdiv(K, 16)] {
        a_s = dma.copy.zfill lhs.subspan(64, 16).at(bm # wg, k) => shared;
        b_s = dma.copy.zfill rhs.subspan(64, 16).at(bn, k) => shared;
        mma.row.row acc, a_s, b_s;
      }
      mma.store acc, output.subspan(64, 64).at(bm # wg, bn);
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_an_accumulator_per_unit_is_their_concatenation(monkeypatch: pytest.MonkeyPatch, schedule: str) -> None:
    # two warpgroups, each with its own 64-row accumulator: one 128-row dot (lift/units.py)
    monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    out = translate_full(MULTI_UNIT, filename="t.co", schedule=schedule)
    assert "two_units" not in out.failed, out.failed
    assert "acc = dot(a_s, trans(b_s)) + acc" in dump(out.ir["two_units"][0])  # type: ignore[arg-type]
    from croq2triton.api import load_source

    mod = load_source(out.source, f"two_units_{schedule}", origin="t.co")
    a, b = randn(M, K, dtype=F16, seed=22), randn(N, K, dtype=F16, seed=23)
    o = poisoned(M, N)
    mod.two_units(a, b, o)
    assert_close(o, nt(a, b), atol=1e-2, rtol=1e-3)


def test_a_unit_index_used_elsewhere_unrolls_the_units(monkeypatch: pytest.MonkeyPatch) -> None:
    # the tiles do not concatenate: one copy of the unit's code per unit (lift/unroll.py); a barrier
    # under a condition on the unit is refused with a located diagnostic
    monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    odd = MULTI_UNIT.replace("mma.store acc, output", "output.at(0, wg) = 1.0f;\n      mma.store acc, output")
    out = translate_full(odd, filename="t.co")
    assert "two_units" not in out.failed, out.failed
    assert dump(out.ir["two_units"][0]).count("dot(") == 2  # type: ignore[arg-type]
    branch = odd.replace("mma.store acc, output", "if (wg == 0) { sync.shared; }\n      mma.store acc, output")
    out = translate_full(branch, filename="t.co")
    assert not out.ir.get("two_units"), out.ir
    (d,) = out.failed["two_units"].diagnostics
    assert d.span is not None and "a barrier under a condition" in d.message


def test_fragments_apply_and_reductions(mod: Any) -> None:
    m, n = 37, 90  # rows of 96 in the source, 128 in the tiles
    x = randn(m, n, seed=19) * 4
    y = poisoned(m, n)
    mod.softmax_rows(x, y)
    ref = torch.softmax(x.double().cpu() * torch.log(torch.tensor(2.0, dtype=torch.float64)), dim=1)
    assert_close(y, ref, atol=1e-5, rtol=1e-4)


def test_warp_roles_collapse_into_one_pipelined_loop(mod: Any) -> None:
    a, b = randn(M, K, dtype=F16, seed=20), randn(N, K, dtype=F16, seed=21)
    out = poisoned(M, N, dtype=F16)
    mod.roles(a, b, out)
    assert_close(out, nt(a, b), atol=gemm_tol(K), rtol=1e-2)


def test_the_collapsed_roles_keep_their_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    out = translate_full(PROGRAM.read_text(), filename="mma_forms.co", schedule="source")
    (kernel,) = out.ir["roles"]
    assert kernel.num_warps == 8  # type: ignore[attr-defined]  # both warpgroups' threads
    text = dump(kernel)  # type: ignore[arg-type]
    loops = [line for line in text.splitlines() if line.lstrip().startswith("for ")]
    assert len(loops) == 1 and "pipeline(stages=3, ring=3" in loops[0], text
    assert "acc = dot(lhs_s, trans(rhs_s)) + acc" in text, text
    assert "lhs_s: f16[64, 32] = tl.zeros([64, 32], tl.float16)" in text, text  # the ring as one buffer


_ROLES = PROGRAM.read_text().index("__co__ void roles(")  # the ring of 'roles' only: elsewhere lhs_s is one buffer
RING_ELSEWHERE = PROGRAM.read_text()[:_ROLES] + PROGRAM.read_text()[_ROLES:].replace(
    "mma.store acc, out_s;", "mma.store acc, out_s;\n        dma.copy lhs_s[0] => output.subspan(64, 32).at(bm, 0);"
)


def test_a_ring_read_outside_its_loop_is_not_collapsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    out = translate_full(RING_ELSEWHERE, filename="mma_forms.co", schedule="source")
    assert "roles" in out.failed and out.failed["roles"].diagnostics[0].span is not None


def test_roles_of_two_consumer_units(mod: Any) -> None:
    a, b = randn(M, K, dtype=F16, seed=24), randn(N, K, dtype=F16, seed=25)
    out = poisoned(M, N, dtype=F16)
    mod.roles_two_consumers(a, b, out)
    assert_close(out, nt(a, b), atol=gemm_tol(K), rtol=1e-2)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_an_apply_over_an_accumulator_of_run_time_extent(schedule: str) -> None:
    # one block row-strip over all N columns: the accumulator's extent is known only at launch; the
    # MMA and an 'apply' over it translate (its lanes are the tile the launcher fixes), a reduction
    # along its other axis (a fragment of run-time extent) is refused naming the buffer and what to do
    from croq2triton.api import load_source, translate_full

    src = """__co__ void k(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel bm by cdiv(M, 64) : block, by 1 : group-4 {
    acc = mma.fill.f32 0.0f;
    foreach kt in [cdiv(K, 32)] {
      sa = dma.copy a.subspan(64, 32).at(bm, kt) => shared;
      sb = dma.copy b.subspan(N, 32).at(0, kt) => shared;
      mma.row.row acc, sa, sb;
    }
    APPLY
    mma.store acc, c.subspan(64, N).at(bm, 0);
  }
}
"""
    apply = "apply {i, j} in acc.span acc.at(i, j) = acc.at(i, j) * 2.0f + __to<f32>(i * 1000 + j);"
    out = translate_full(src.replace("APPLY", apply), schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"apply_run_time_{schedule}")
    for m, n, k in ((70, 24, 40), (33, 50, 64)):
        a, b = randn(m, k, dtype=F16, seed=m), randn(n, k, dtype=F16, seed=n)
        c = poisoned(m, n)
        mod.k(a, b, c)
        rows = (torch.arange(m) % 64)[:, None] * 1000 + torch.arange(n)[None, :]
        assert_close(c, 2 * nt(a, b).double().cpu() + rows.double(), atol=2 * gemm_tol(k), rtol=1e-2)
    reduce = "frag f32 [32] cs;\n    reduce_sum(cs, acc, 0);"  # the sums of its columns: of run-time extent
    err = translate_full(src.replace("APPLY", reduce), schedule=schedule).failed["k"]
    assert "'acc', a buffer of run-time shape" in str(err) and "a tile of constant extents" in (
        err.diagnostics[0].hint or ""
    ), str(err)
    assert not translate_full(src.replace("APPLY", ""), schedule=schedule).failed


SOFTMAX = """
__co__ void row_softmax(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel bm by cdiv(M, 64) : block, by 1 : group-4 {
    frag f32 [64] mx;
    frag f32 [64] sm;
    s = mma.fill.f32 0.0f;
    foreach kt in [cdiv(K, 32)] {
      sa = dma.copy a.subspan(64, 32).at(bm, kt) => shared;
      sb = dma.copy b.subspan(N, 32).at(0, kt) => shared;
      mma.row.row s, sa, sb;
    }
    reduce_max(mx, s, 1);
    apply {i, j} in s.span
      s.at(i, j) = __exp(s.at(i, j) - mx.at(i));
    reduce_sum(sm, s, 1);
    apply {i, j} in s.span
      s.at(i, j) = s.at(i, j) / sm.at(i);
    mma.store s, c.subspan(64, N).at(bm, 0);
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_softmax_over_all_columns_of_run_time_extent(schedule: str) -> None:
    # each row's maximum and sum over its N columns (the accumulator's run-time extent): the tile's
    # positions past N take no part in either reduction
    from croq2triton.api import load_source

    out = translate_full(SOFTMAX, filename="softmax.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"softmax_run_time_{schedule}")
    for m, n, k in ((70, 24, 40), (33, 50, 64)):
        a, b = randn(m, k, dtype=F16, seed=m) / 3, randn(n, k, dtype=F16, seed=n) / 3
        c = poisoned(m, n)
        mod.row_softmax(a, b, c)
        assert_close(c, torch.softmax(nt(a, b), 1), atol=1e-4, rtol=1e-3)
