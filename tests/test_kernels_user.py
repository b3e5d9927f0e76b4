"""Kernels users wrote that the lowering got wrong (issue 10, items 3 and 10), run as users run them:
``croq2triton.load`` / ``translate_full`` on the source, random inputs on ragged sizes, outputs
poisoned with NaN; and a static check that no generated function reads an undefined name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from conftest import EXAMPLES
from kernel_util import assert_close, load_co, poisoned, randn
from names_check import undefined_names

import croq2triton
from croq2triton.api import translate_full

GENERATED = re.compile(r"P_[A-Z0-9_]+|_DATA|\b_[a-z]+_?\d+\b|\btile_\d+|\b\w+_data\b|@LANE|@CONS|\btl\.|_rt\.")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _message(src: str, func: str, name: str = "user.co") -> str:
    out = translate_full(src, filename=name)
    assert func in out.failed, f"{func} was translated"
    d = out.failed[func].diagnostics[0]
    assert d.span is not None, d
    text = d.message + " " + (d.hint or "")
    assert not GENERATED.search(text), f"generated name in: {text}"
    return d.message


# ----------------------------------------------------------------- item 3: chunkat GEMM, run-time K
CHUNKAT_GEMM = """
__co__ void f(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    mc = mma.fill.f32 0.0f;
    foreach {k} in [cdiv(K, 32)] {
      sa = dma.copy a.chunkat(bm, k) => shared;
      sb = dma.copy b.chunkat(bn, k) => shared;
      mma.row.row mc, sa, sb;
    }
    mma.store mc, out.chunkat(bm, bn);
  }
}
"""


def _chunkat_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """LANGUAGE.md 7.6: ``x.chunkat(i, k)`` of ``[E0, E1]`` by ``[n0, n1]`` is the block of
    ``[E0 / n0, E1 / n1]`` (floor) at ``i``: rows / K past ``n * (E / n)`` are never read or written."""
    m, k = a.shape
    n = b.shape[0]
    gm, gn, gk = -(-m // 64), -(-n // 64), -(-k // 32)
    rm, rn, rk = gm * (m // gm), gn * (n // gn), gk * (k // gk)
    ref = torch.full((m, n), float("nan"), dtype=torch.float64)
    ref[:rm, :rn] = a[:rm, :rk].double().cpu() @ b[:rn, :rk].double().cpu().T
    return ref


@pytest.mark.parametrize(
    ("m", "n", "k"),
    [
        (100, 70, 90),  # chunks 50 x 35 x 30: every element covered
        (130, 70, 70),  # chunks 43 (row 129 never written) and 23 (column 69 of K never read)
        (20, 9, 5),  # chunks smaller than Triton's smallest dot: padded to 16
    ],
)
def test_chunkat_gemm_with_run_time_extents(tmp_path: Path, m: int, n: int, k: int) -> None:
    out = translate_full(CHUNKAT_GEMM, filename="chunkat_gemm.co")
    assert not out.failed, {f: str(e) for f, e in out.failed.items()}
    # the K extents of A and B are one extent: one padded size, whatever their spellings
    assert out.source.count("_rt.idiv(K, _rt.cdiv(K, 32))") == 1
    mod = load_co(_write(tmp_path, "chunkat_gemm.co", CHUNKAT_GEMM))
    a, b = randn(m, k, dtype=torch.float16, seed=1), randn(n, k, dtype=torch.float16, seed=2)
    c = poisoned(m, n, dtype=torch.float32)
    mod.f(a, b, c)
    assert_close(c, _chunkat_reference(a, b), atol=1e-3, rtol=1e-3)


def test_mma_k_mismatch_names_the_operands_and_their_extents() -> None:
    src = CHUNKAT_GEMM.replace("a.chunkat(bm, k)", "a.subspan(64, 32).at(bm, k)")
    src = src.replace("b.chunkat(bn, k)", "b.subspan(64, 16).at(bn, k)")
    msg = _message(src, "f")
    assert msg == "MMA operands disagree on K: 'sa' has K = 32, 'sb' has K = 16"
    msg = _message(CHUNKAT_GEMM.replace("b.chunkat(bn, k)", "b.subspan(64, 16).at(bn, k)"), "f")  # run-time K
    assert msg == "MMA operands disagree on K: 'sa' has K = K / cdiv(K, 32), 'sb' has K = 16"
    # through mma.load fragments and inline views the operands are named as written
    src = CHUNKAT_GEMM.replace("mma.row.row mc, sa, sb;", "mma.row.row mc, sa, b.subspan(64, 16).at(bn, k);")
    assert "'b.subspan(64, 16).at(bn, k)' has K = 16" in _message(src, "f")


def test_stage_ring_slot_message_spells_the_source_indices() -> None:
    src = """
__co__ void f(global f16 [M, K] lhs, global f16 [N, K] rhs, global f16 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared event full[2], empty[2] = ready;
    shared f16 [64, 64] s[2];
    parallel wg by 2 : group-4 {
      inthreads.async (wg == 0) {
        foreach {k} in [cdiv(K, 64)] {
          wait empty.at(k);
          fa = tma.copy.async lhs.subspan(64, 64).at(bm, k) => s[k % 2];
          trigger full.at(k) after fa;
        }
      }
      inthreads.async (wg == 1) {
        acc = mma.fill.f32 0.0f;
        foreach {k} in [cdiv(K, 64)] {
          wait full.at(k);
          mma.row.row acc, s[(k + 1) % 2], s[(k + 1) % 2];
          trigger empty.at(k);
        }
        mma.store acc, out.subspan(64, 64).at(bm, bn);
      }
    }
  }
}
"""
    msg = _message(src, "f")
    assert msg == "stage ring 's' is read at 's[(k + 1) % 2]' but was written at 's[k % 2]'"


# ------------------------------------------------------------- item 10a: batched GEMM, N = 48 pieces
BMM_FUTURES = """
__co__ void bmm(global f16 [BS, M, K] lhs, global f16 [BS, N, K] rhs, global f32 [BS, M, N] output) {
  parallel {bm, bn, b} by [cdiv(M, 64), cdiv(N, 48), BS] : block, by 1 : group-4 {
    l2 = lhs.subspan(1, M, K).at(b, 0, 0).sqz();
    r2 = rhs.subspan(1, N, K).at(b, 0, 0).sqz();
    o2 = output.subspan(1, M, N).at(b, 0, 0).sqz();
    mc = mma.fill.f32 0.0f;
    foreach {k} in [cdiv(K, 32)] {
      lhs_s = dma.copy.swiz<64>.zfill l2.subspan(64, 32).at(bm, k) => shared;
      rhs_s = dma.copy.swiz<64>.zfill r2.subspan(48, 32).at(bn, k) => shared;
      mma.row.row mc, lhs_s, rhs_s;
    }
    mma.store mc, o2.subspan(64, 48).at(bm, bn);
  }
}
"""

BMM_BUFFERS = """
__co__ void bmm(global f16 [BS, M, K] lhs, global f16 [BS, N, K] rhs, global f32 [BS, M, N] output) {
  parallel {bm, bn, b} by [cdiv(M, 64), cdiv(N, 48), BS] : block {
    shared f16 [64, 32] lhs_s;
    shared f16 [48, 32] rhs_s;
    shared f32 [64, 48] out_s;
    parallel by 1 : group-4 {
      mc = mma.fill.f32 0.0f;
      foreach {k} in [cdiv(K, 32)] {
        dma.copy.swiz<64>.zfill lhs.subspan(1, M, K).at(b, 0, 0).sqz().subspan(64, 32).at(bm, k) => lhs_s;
        dma.copy.swiz<64>.zfill rhs.subspan(1, N, K).at(b, 0, 0).sqz().subspan(48, 32).at(bn, k) => rhs_s;
        foreach {wk} in [2] {
          ma = mma.load.swiz<64> lhs_s.chunkat(_, wk);
          mb = mma.load.swiz<64> rhs_s.chunkat(_, wk);
          mma.row.row mc, ma, mb;
        }
      }
      mma.store mc, out_s;
      dma.copy out_s => output.subspan(1, M, N).at(b, 0, 0).sqz().subspan(64, 48).at(bm, bn);
    }
  }
}
"""

BMM_LOADS = BMM_FUTURES.replace(
    "      mma.row.row mc, lhs_s, rhs_s;\n",
    "      foreach {wk} in [2] {\n"
    "        ma = mma.load lhs_s.chunkat(_, wk);\n"
    "        mb = mma.load rhs_s.chunkat(_, wk);\n"
    "        mma.row.row mc, ma, mb;\n"
    "      }\n",
)


@pytest.mark.parametrize(
    "src", [BMM_FUTURES, BMM_BUFFERS, BMM_LOADS], ids=["copy-futures", "declared-buffers", "mma-load"]
)
@pytest.mark.parametrize(("bs", "m", "n", "k"), [(2, 100, 70, 90), (3, 70, 50, 40)])
def test_batched_gemm_with_a_48_wide_tile(tmp_path: Path, src: str, bs: int, m: int, n: int, k: int) -> None:
    out = translate_full(src, filename="bmm.co")
    assert not out.failed, {f: str(e) for f, e in out.failed.items()}
    assert undefined_names(out.source) == []
    # a proved contraction: the 48-wide tile is kept as two power-of-two pieces (schedule/gemm.py)
    assert "bmm" not in out.failed, out.failed
    assert "offs_n_0 = pid_n * 48 + tl.arange(0, 32)" in out.source
    assert "offs_n_1 = pid_n * 48 + tl.arange(0, 16) + 32" in out.source
    mod = load_co(_write(tmp_path, "bmm.co", src))
    a, b = randn(bs, m, k, dtype=torch.float16, seed=3), randn(bs, n, k, dtype=torch.float16, seed=4)
    c = poisoned(bs, m, n, dtype=torch.float32)
    mod.bmm(a, b, c)
    ref = torch.bmm(a.double().cpu(), b.double().cpu().transpose(1, 2))
    assert_close(c, ref, atol=1e-3, rtol=1e-3)


def test_window_of_a_split_tile_is_kept_padded(tmp_path: Path) -> None:
    """A tile split into pieces (48 = 32 + 16) that is also read through a window becomes one
    padded tile instead of naming a tile no piece defines."""
    src = """
__co__ void f(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 48)] : block {
    shared f16 [48, 32] bs;
    mc = mma.fill.f32 0.0f;
    foreach {k} in [cdiv(K, 32)] {
      sa = dma.copy a.subspan(64, 32).at(bm, k) => shared;
      dma.copy b.subspan(48, 32).at(bn, k) => bs;
      sb = dma.copy bs.subspan(48, 16).at(0, 1) => shared;
      sa2 = dma.copy sa.data.subspan(64, 16).at(0, 1) => shared;
      mma.row.row mc, sa2, sb;
    }
    mma.store mc, out.subspan(64, 48).at(bm, bn);
  }
}
"""
    out = translate_full(src, filename="window.co")
    assert not out.failed and undefined_names(out.source) == []
    mod = load_co(_write(tmp_path, "window.co", src))
    m, n, k = 100, 70, 96
    a, b = randn(m, k, dtype=torch.float16, seed=5), randn(n, k, dtype=torch.float16, seed=6)
    c = poisoned(m, n, dtype=torch.float32)
    mod.f(a, b, c)
    cols = torch.cat([torch.arange(32 * t + 16, 32 * t + 32) for t in range(k // 32)])
    ref = a.double().cpu()[:, cols] @ b.double().cpu()[:, cols].T
    assert_close(c, ref, atol=1e-3, rtol=1e-3)


def test_host_mdspan_extents_reach_the_kernel(tmp_path: Path) -> None:
    """A host-level mdspan ``sh : [a, 2]`` read inside the kernel: its run-time extent ``a`` is a
    kernel argument (the kernel read an undefined ``a`` before)."""
    src = """
__co__ void scale(int a, global f32 [N] x, global f32 [N] y) {
  sh : [a, 2];
  parallel p by cdiv(N, 64) : block, t by 64 : thread {
    if (p # t < N) {
      y.at(p # t) = x.at(p # t) * sh(0) + sh(1);
    }
  }
}
"""
    out = translate_full(src, filename="hostshape.co")
    assert not out.failed and undefined_names(out.source) == []
    mod = load_co(_write(tmp_path, "hostshape.co", src))
    x = randn(100, seed=7)
    y = poisoned(100, dtype=torch.float32)
    mod.scale(3, x, y)
    assert_close(y, x * 3 + 2, atol=1e-6, rtol=1e-6)


# ------------------------------------------------------- item 10b: warp-level MMA, accumulator at block
WARP_MMA = """
__co__ void wmma(global f16 [M, K] lhs, global f16 [K, N] rhs, global f32 [M, N] output) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    shared f16 [32, 32] lhs_s;
    shared f16 [32, 32] rhs_s;
    shared f32 [32, 32] out_s;
    mc = mma.fill.f32 0.0f;
    foreach {k} in [cdiv(K, 32)] {
      dma.copy lhs.subspan(32, 32).at(bm, k) => lhs_s;
      dma.copy rhs.subspan(32, 32).at(k, bn) => rhs_s;
      parallel {g0, g1} by [2, 2] : group {
        foreach {wk} in [2] {
          ma = mma.load lhs_s.chunkat(g0, wk);
          mb = mma.load rhs_s.chunkat(wk, g1);
          mma.row.col mc, ma, mb;
        }
      }
    }
    parallel {g0, g1} by [2, 2] : group {
      mma.store mc, out_s.chunkat(g0, g1);
    }
    dma.copy out_s => output.subspan(32, 32).at(bm, bn);
  }
}
"""

# the K loop outside the warps, the operands staged as copy futures
WARP_MMA_OUTER_K = """
__co__ void wmma(global f16 [M, K] lhs, global f16 [K, N] rhs, global f32 [M, N] output) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    mc = mma.fill.f32 0.0f;
    foreach {k} in [cdiv(K, 32)] {
      lhs_s = dma.copy lhs.subspan(32, 32).at(bm, k) => shared;
      rhs_s = dma.copy rhs.subspan(32, 32).at(k, bn) => shared;
      foreach {wk} in [2] {
        parallel {g0, g1} by [2, 2] : group {
          ma = mma.load lhs_s.chunkat(g0, wk);
          mb = mma.load rhs_s.chunkat(wk, g1);
          mma.row.col mc, ma, mb;
        }
      }
    }
    shared f32 [32, 32] out_s;
    parallel {g0, g1} by [2, 2] : group {
      mma.store mc, out_s.chunkat(g0, g1);
    }
    dma.copy out_s => output.subspan(32, 32).at(bm, bn);
  }
}
"""


@pytest.mark.parametrize("src", [WARP_MMA, WARP_MMA_OUTER_K], ids=["k-loop-in-warps", "k-loop-outside"])
@pytest.mark.parametrize(("m", "n", "k"), [(100, 70, 90), (40, 50, 20)])
def test_warp_mma_with_a_block_level_accumulator(tmp_path: Path, src: str, m: int, n: int, k: int) -> None:
    out = translate_full(src, filename="wmma.co")
    assert not out.failed, {f: str(e) for f, e in out.failed.items()}
    assert undefined_names(out.source) == []
    mod = load_co(_write(tmp_path, "wmma.co", src))
    a, b = randn(m, k, dtype=torch.float16, seed=8), randn(k, n, dtype=torch.float16, seed=9)
    c = poisoned(m, n, dtype=torch.float32)
    mod.wmma(a, b, c)
    assert_close(c, a.double().cpu() @ b.double().cpu(), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        # warp (g0, g1) computes block (g0, g1) of the product but stores it at block (g1, g0)
        (
            "mma.store mc, out_s.chunkat(g0, g1);",
            "mma.store mc, out_s.chunkat(g1, g0);",
            "an MMA in more than one unit or thread (a fragment each: it reads the thread index)",
        ),
        # each warp would sum its own half of K into its own copy of mc
        (
            "ma = mma.load lhs_s.chunkat(g0, wk);",
            "ma = mma.load lhs_s.chunkat(wk, g0);",
            "an MMA whose units split K (each unit adds its own part)",
        ),
        # each warp would read the second half of its own block: the halves of all warps are not one window
        (
            "ma = mma.load lhs_s.chunkat(g0, wk);",
            "ma = mma.load lhs_s.chunkat(g0, _).subspan(8, 16).at(1, wk);",
            "a view a unit index moves other than by its own extent",
        ),
    ],
    ids=["transposed-store", "k-divided-among-warps", "window-of-a-warp-block"],
)
def test_warp_blocks_that_change_owner_are_refused(old: str, new: str, expect: str) -> None:
    assert old in WARP_MMA
    assert expect in _message(WARP_MMA.replace(old, new), "wmma")


def test_warp_mma_launcher_reports_why(tmp_path: Path) -> None:
    src = WARP_MMA.replace("out_s.chunkat(g0, g1)", "out_s.chunkat(g1, g0)")
    mod = croq2triton.load(_write(tmp_path, "bad_wmma.co", src))
    a, b = randn(32, 32, dtype=torch.float16, seed=10), randn(32, 32, dtype=torch.float16, seed=11)
    with pytest.raises(croq2triton.CroqError, match="an MMA in more than one unit or thread"):
        mod.wmma(a, b, poisoned(32, 32, dtype=torch.float32))


# ---------------------------------------------------------------- no generated name is undefined
def test_the_verifier_finds_an_undefined_name() -> None:
    src = (
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, N: tl.constexpr):\n"
        "    rhs_s_data_0 = tl.zeros([32, 32], tl.float16)\n    rhs_s_data_1 = tl.zeros([16, 32], tl.float16)\n"
        "    if N > 1:\n        acc = 1\n    y = tl.trans(tl.where(N > 0, rhs_s_data, 0)) + acc\n"
        "    for i in range(N):\n        z = w + i\n        w = z\n"
    )
    assert undefined_names(src) == ["k:10: rhs_s_data", "k:12: w"]


# (every corpus file's module, both schedules: tests/test_golden.py)
EXAMPLE_SOURCES = sorted(EXAMPLES.glob("*.co"))


@pytest.mark.parametrize("src", EXAMPLE_SOURCES, ids=[p.name for p in EXAMPLE_SOURCES])
def test_generated_examples_define_every_name(src: Path) -> None:
    assert undefined_names(src.with_suffix(".py").read_text()) == []
    auto = translate_full(src.read_text(), filename=str(src), schedule="auto")
    assert undefined_names(auto.source) == []
