"""End-to-end checks of the translated kernels of the shared corpus's GPU tests.

Every function of the files below that croq2triton translates is run under the interpreter on
fresh random data and compared with a float64 (or exact integer) reference that implements
what the source means: the reference follows the `.co` kernel and the host verification code of
the same file (its `main()`), with the view rules of LANGUAGE.md 7.6-7.9 (`chunkat` divides
extents by floor division, `mma.row.row` takes B as [N, K], `mma.row.col` as [K, N], a read
outside a tensor is zero). Symbolic dimensions get ragged sizes where the source still defines
the result for them; otherwise the host test's sizes are used.
"""

from __future__ import annotations

import inspect
import math
import re
from typing import Any

import pytest
import torch
from conftest import CORPUS, needs_corpus
from kernel_util import DEVICE, assert_close, gemm_tol, load_co, poisoned, randn

from croq2triton.errors import CroqError
from croq2triton.runtime import launch as rt

# ragged sizes make row strides that TMA descriptors cannot take; the fallback is what we test
pytestmark = [needs_corpus, pytest.mark.filterwarnings("ignore:croq2triton.*16-byte aligned:RuntimeWarning")]
E2E = CORPUS / "upstream/tests/gpu/end2end"

F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def mod(name: str) -> Any:
    return load_co(E2E / name)


def fn(name: str, func: str) -> Any:
    m = mod(name)
    assert func not in m.__croq_translation__.failed, f"{name}: {func} is no longer translated"
    return getattr(m, func)


def ints(*shape: int, dtype: torch.dtype, lo: int, hi: int, seed: int) -> torch.Tensor:
    """Uniform integers in [lo, hi) of any integer dtype (randn only gives [-50, 50))."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dtype).to(DEVICE)


def uniform(*shape: int, lo: float, hi: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (lo + (hi - lo) * torch.rand(*shape, generator=g)).to(DEVICE)


def f8(*shape: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    return randn(*shape, seed=seed).to(dtype)


def first_programs(n: int) -> Any:
    """A `_launch` hook that runs only programs 0..n-1 of grid axis 0 (the interpreter is slow).

    Only for kernels whose blocks are independent and that do not read the grid size: the
    programs that run compute exactly what they compute in the full launch.
    """

    def launch(kernel: Any, grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any]) -> None:
        rt.launch(kernel, (min(int(grid[0]), n), *grid[1:]), args, kwargs)

    return launch


def imatmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Exact s32 result of an integer `mma.row.col` (int64 on the CPU: CUDA has no integer matmul)."""
    return (a.cpu().long() @ b.cpu().long()).to(torch.int32)


def nt(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`mma.row.row`: B is stored [N, K]."""
    return a.double() @ b.double().T


def nn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`mma.row.col`: B is stored [K, N]."""
    return a.double() @ b.double()


def exact(got: torch.Tensor, ref: torch.Tensor) -> None:
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert torch.equal(got.cpu(), ref.cpu()), f"{int((got.cpu() != ref.cpu()).sum())} elements differ"


# ------------------------------------------------------------------------------------ wmma.co
# M, N, K are fixed by #define (128, 256, 256); B is [K, N] (row.col) except in matmul_rr.

WMMA_FLOAT = [
    # f32 accumulators of exact f16/bf16 products: only the f32 summation order differs
    ("matmul_f16_f32", F16, F32, 1e-3, 1e-4),
    ("matmul_f16_f16", F16, F16, gemm_tol(256), 1e-2),
    ("matmul_bf16_f32", BF16, F32, 1e-3, 1e-4),
    # tf32 operands: 10-bit mantissas, ~2^-11 relative error per operand; 16 = sqrt(K)
    ("matmul_tf32_f32", F32, F32, 4e-3 * 16 + 1e-2, 1e-2),
]


@pytest.mark.parametrize(("func", "dt", "out_dt", "atol", "rtol"), WMMA_FLOAT)
def test_wmma_float(func: str, dt: torch.dtype, out_dt: torch.dtype, atol: float, rtol: float) -> None:
    a, b = randn(128, 256, dtype=dt, seed=101), randn(256, 256, dtype=dt, seed=102)
    got = fn("wmma.co", func)(a, b)
    assert got.dtype == out_dt
    assert_close(got, nn(a, b), atol=atol, rtol=rtol)


@pytest.mark.parametrize(("func", "dt", "lo", "hi"), [
    ("matmul_s8_s32", torch.int8, -128, 128),
    ("matmul_u8_s32", torch.uint8, 0, 256),  # K * 255 * 255 < 2^24: exact even through f32 partial sums
])  # fmt: skip
def test_wmma_integer(func: str, dt: torch.dtype, lo: int, hi: int) -> None:
    a, b = ints(128, 256, dtype=dt, lo=lo, hi=hi, seed=103), ints(256, 256, dtype=dt, lo=lo, hi=hi, seed=104)
    exact(fn("wmma.co", func)(a, b), imatmul(a, b))


def test_wmma_rr() -> None:
    a, b = randn(128, 256, dtype=F16, seed=105), randn(256, 256, dtype=F16, seed=106)
    assert_close(fn("wmma.co", "matmul_rr")(a, b), nt(a, b), atol=gemm_tol(256), rtol=1e-2)


def test_wmma_fragment_array_element() -> None:
    # frag mc[2][3] {0.0}: each group accumulates into element [0][1] (the others are never used)
    a, b = randn(128, 64, dtype=F16, seed=107), randn(64, 256, dtype=F16, seed=108)
    got = fn("wmma.co", "matmul_mc_array")(a, b)
    assert got.dtype == F16
    assert_close(got, nn(a, b), atol=gemm_tol(64), rtol=1e-2)


@pytest.mark.parametrize("i", [0, 1])
def test_wmma_fragment_array_indexed_by_a_parameter(i: int) -> None:
    # frag.s32 mc[1][2] {0}, every use names mc[0][i]: one accumulator, its index checked at launch
    a, b = (
        ints(128, 64, dtype=torch.int8, lo=-128, hi=128, seed=109),
        ints(64, 128, dtype=torch.int8, lo=-128, hi=128, seed=110),
    )
    f = fn("wmma.co", "matmul_cmma")
    exact(f(a, b, i), imatmul(a, b))
    with pytest.raises(CroqError, match=r"index of the fragment array 'mc' is outside \[0, 2\)"):
        f(a, b, 2)


# ------------------------------------------------------------------------------ ampere_mma.co


def test_ampere_group_rc() -> None:
    a, b = randn(128, 256, dtype=F16, seed=111), randn(256, 256, dtype=F16, seed=112)
    assert_close(fn("ampere_mma.co", "matmul_group_rc")(a, b), nn(a, b), atol=gemm_tol(256), rtol=1e-2)


def test_ampere_pipeline() -> None:
    # K = 16 is one MMA step: the `foreach k(1:)` body never runs, only the epilogue with k(-1)
    a, b = randn(64, 16, dtype=F16, seed=113), randn(16, 32, dtype=F16, seed=114)
    assert_close(fn("ampere_mma.co", "matmul_pipeline")(a, b), nn(a, b), atol=gemm_tol(16), rtol=1e-2)


def test_ampere_m8n8k4_fill_1_5() -> None:
    # the warps re-fill the accumulator with 1.5 before the K loop
    a, b = randn(128, 64, dtype=F16, seed=115), randn(64, 256, dtype=F16, seed=116)
    assert_close(fn("ampere_mma.co", "mma_m8n8k4_f16_f16")(a, b), nn(a, b) + 1.5, atol=gemm_tol(64), rtol=1e-2)


def test_ampere_m8n8k16_s8_s32() -> None:
    a, b = (
        ints(128, 64, dtype=torch.int8, lo=-128, hi=128, seed=117),
        ints(64, 128, dtype=torch.int8, lo=-128, hi=128, seed=118),
    )
    exact(fn("ampere_mma.co", "mma_m8n8k16_s8_s32")(a, b), imatmul(a, b))


def test_ampere_m16n8k8_f16_f32() -> None:
    a, b = randn(64, 64, dtype=F16, seed=119), randn(64, 128, dtype=F16, seed=120)
    got = fn("ampere_mma.co", "mma_m16n8k8_f16_f32")(a, b)
    assert got.dtype == F32
    assert_close(got, nn(a, b), atol=1e-3, rtol=1e-4)


# matmul_*_sm86: M, N, K symbolic, 16x16 tiles cut with subspan: any size is a GEMM
SM86_MNK = (40, 24, 40)


def _sm86_inputs(seed: int, m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    return randn(m, k, dtype=F16, seed=seed), randn(n, k, dtype=F16, seed=seed + 1)


def test_ampere_matmul_f16_sm86() -> None:
    m, n, k = SM86_MNK
    a, b = _sm86_inputs(121, m, n, k)
    out = poisoned(m, n, dtype=F16)
    fn("ampere_mma.co", "matmul_f16_sm86")(a, b, out)
    assert_close(out, nt(a, b), atol=gemm_tol(k), rtol=1e-2)


def test_ampere_matmul_trans_sm86() -> None:
    # mma.store.transp into output_s.chunkat(warp_n, warp_m), stored at (block_n, block_m): C^T
    m, n, k = SM86_MNK
    a, b = _sm86_inputs(123, m, n, k)
    out = poisoned(n, m, dtype=F16)
    fn("ampere_mma.co", "matmul_trans_sm86")(a, b, out)
    assert_close(out, nt(a, b).T, atol=gemm_tol(k), rtol=1e-2)


# persistent kernels: 82 blocks walk the tiles `tile_iter # block_id`. 10 x 9 = 90 tiles, so
# blocks 0..7 take a second tile; only blocks 0..3 are run (tiles 0..3 and 82..85): every other
# element must stay unwritten (NaN).
PERSIS_MNK = (150, 140, 20)
PERSIS_TILES = [0, 1, 2, 3, 82, 83, 84, 85]


def _persistent_ref(c: torch.Tensor, tiles: list[tuple[int, int]]) -> torch.Tensor:
    ref = torch.full_like(c, float("nan"))
    for bm, bn in tiles:
        ref[bm * 16 : bm * 16 + 16, bn * 16 : bn * 16 + 16] = c[bm * 16 : bm * 16 + 16, bn * 16 : bn * 16 + 16]
    return ref


@pytest.mark.parametrize("func", ["matmul_persis_sta_sm86", "matmul_persis_colmajor_sm86"])
def test_ampere_persistent(func: str) -> None:
    # a persistent tile loop over 16 x 16 tiles that is a proved contraction: tiled (both schedules)
    # with a persistent grid of its own, so the whole output is written by the full launch
    m, n, k = PERSIS_MNK
    a, b = _sm86_inputs(125, m, n, k)
    out = poisoned(m, n, dtype=F16)
    mod = load_co(CORPUS / "upstream/tests/gpu/end2end/ampere_mma.co")
    assert func not in mod.__croq_translation__.failed and "_rt.num_sms" in mod.__croq_source__
    getattr(mod, func)(a, b, out)
    assert_close(out, nt(a, b), atol=gemm_tol(k), rtol=1e-2)


@pytest.mark.parametrize("func", ["matmul_persis_sta_sm86", "matmul_persis_colmajor_sm86"])
def test_ampere_persistent_as_written(func: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the same kernels as written (CROQ2TRITON_NO_CONTRACTION=1: MMA on the tile-IR path, lift/mma.py):
    # the tiles its first four programs own, in the order the source walks them
    monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    m, n, k = PERSIS_MNK
    tm, tn = math.ceil(m / 16), math.ceil(n / 16)
    a, b = _sm86_inputs(125, m, n, k)
    out = poisoned(m, n, dtype=F16)
    from croq2triton.api import load

    written = load(E2E / "ampere_mma.co")  # not the cached module: this one is translated as written
    assert func not in written.__croq_translation__.failed
    getattr(written, func)(a, b, out, _launch=first_programs(4))
    if func == "matmul_persis_sta_sm86":
        tiles = [(t // tn, t % tn) for t in PERSIS_TILES]
    else:
        tiles = [(t % tm, t // tm) for t in PERSIS_TILES]
    assert_close(out, _persistent_ref(nt(a, b), tiles), atol=gemm_tol(k), rtol=1e-2)


@pytest.mark.parametrize("func", ["matmul_persis_swizzle_sm86", "matmul_persis_hilbert_sm86"])
def test_ampere_persistent_scheduled(func: str) -> None:
    # tile t is (schedule_m[t], schedule_n[t]): here a random permutation of the tiles
    m, n, k = PERSIS_MNK
    tm, tn = math.ceil(m / 16), math.ceil(n / 16)
    a, b = _sm86_inputs(127, m, n, k)
    perm = torch.randperm(tm * tn, generator=torch.Generator().manual_seed(128))
    sm, sn = (perm // tn).to(torch.int32), (perm % tn).to(torch.int32)
    out = poisoned(m, n, dtype=F16)
    fn("ampere_mma.co", func)(a, b, out, sm.to(DEVICE), sn.to(DEVICE), _launch=first_programs(4))
    tiles = [(int(sm[t]), int(sn[t])) for t in PERSIS_TILES]
    assert_close(out, _persistent_ref(nt(a, b), tiles), atol=gemm_tol(k), rtol=1e-2)


# -------------------------------------------------------------------------------- wgmma_ss.co
# (matmul_f16, matmul_f16_ws_1p1c and matmul_f16_ws_1p3c are tested in test_kernels_corpus.py and
# test_pipelines.py.) rhs is tiled with chunkat while lhs/output use subspan: the two agree only
# when N and K are tile multiples (or K fits one tile), so only M is ragged, except in
# matmul_e4m3_ws_tbc which uses subspan everywhere.

F16_ACC_TOL = 0.1  # f16 accumulators (mma.fill.f16): the host test's absolute tolerance

# (The f8 kernels below once failed to build for the GPU: register tiles were declared in f32 and
# re-assigned f8 tiles in the K loop. Tiles now keep their element type; tests/test_compile_sm90.py
# compiles matmul_e4m3 for sm_90a.)


def test_wgmma_e4m3_f32() -> None:
    m, n, k = 100, 128, 64
    a, b = f8(m, k, dtype=E4M3, seed=131), f8(n, k, dtype=E4M3, seed=132)
    out = poisoned(m, n, dtype=F32)
    fn("wgmma_ss.co", "matmul_e4m3")(a, b, out)
    # e4m3 products are exact in f32, but Hopper's fp8 wgmma accumulates with fewer mantissa bits
    # than f32 (measured on the H200: |diff| up to 0.006 at K = 64): loosen on the GPU only
    tol = 1e-3 if DEVICE == "cpu" else 2e-2
    assert_close(out, nt(a, b), atol=tol, rtol=1e-5 if DEVICE == "cpu" else 1e-3)


def blockscaled(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor, bn: int) -> torch.Tensor:
    """C[m][n] = sum over 128-wide K blocks kb of (A B^T)[m][n] (that block) * sa[m][kb] * sb[n / bn][kb]."""
    a64, b64 = a.double().cpu(), b.double().cpu()
    out = torch.zeros(a.shape[0], b.shape[0], dtype=torch.float64)
    rows = torch.arange(b.shape[0]) // bn
    for kb in range(sa.shape[1]):
        ks = slice(kb * 128, kb * 128 + 128)
        out += (a64[:, ks] @ b64[:, ks].T) * sa.double().cpu()[:, kb, None] * sb.double().cpu()[rows, kb][None, :]
    return out


BLOCKSCALED = [
    # mma.row.row.scale: each 128-wide K block's product times a per-row scale of A and a per-48-row
    # block scale of B. B is taken with chunkat (floor division): 48-row / 128-column blocks only
    # when 48 | N and 128 | K; M is ragged
    ("wgmma_ss.co", "blockscale_gemm_e4m3_n48", (100, 96, 256), 48),
    # the split form 'mma.scale mc, sa, sb' in a warp-specialized persistent pipeline: the MMAs since
    # the previous mma.scale go to a hidden accumulator that is scaled and added (ragged M, N, K)
    ("wgmma_persis.co", "blockscale_gemm_e4m3_ws_persis", (100, 200, 200), 128),
]


@pytest.mark.parametrize(("file", "func", "mnk", "bn"), BLOCKSCALED, ids=[f for _, f, _, _ in BLOCKSCALED])
def test_wgmma_blockscaled_e4m3(file: str, func: str, mnk: tuple[int, int, int], bn: int) -> None:
    # scales random, not the host tests' ones (all 1.0)
    m, n, k = mnk
    a, b = f8(m, k, dtype=E4M3, seed=143), f8(n, k, dtype=E4M3, seed=144)
    sa = uniform(m, math.ceil(k / 128), lo=0.5, hi=2.0, seed=145)
    sb = uniform(math.ceil(n / bn), math.ceil(k / 128), lo=0.5, hi=2.0, seed=146)
    out = poisoned(m, n, dtype=F16)
    fn(file, func)(a, sa, b, sb, out)
    tol = 2e-2 if DEVICE == "cpu" else 1e-1
    assert_close(out, blockscaled(a, sa, b, sb, bn), atol=tol, rtol=2e-3)


@pytest.mark.parametrize("func", ["matmul_e4m3_mwg", "matmul_e4m3_mwg_tbc"])
def test_wgmma_e4m3_two_warpgroups(func: str) -> None:
    m, n, k = 200, 128, 256
    a, b = f8(m, k, dtype=E4M3, seed=133), f8(n, k, dtype=E4M3, seed=134)
    out = poisoned(m, n, dtype=F16)
    fn("wgmma_ss.co", func)(a, b, out)
    assert_close(out, nt(a, b), atol=F16_ACC_TOL, rtol=1e-2)


@pytest.mark.parametrize(("func", "mnk"), [
    ("matmul_f16_tbc", (100, 256, 128)),
    # mma.store.mask with the tails M - block_m * 64, N - block_n * 128 as the counts (ragged M, N, K)
    ("matmul_st_masked", (100, 200, 96)),
])  # fmt: skip
def test_wgmma_f16(func: str, mnk: tuple[int, int, int]) -> None:
    m, n, k = mnk
    a, b = randn(m, k, dtype=F16, seed=135), randn(n, k, dtype=F16, seed=136)
    out = poisoned(m, n, dtype=F16)
    fn("wgmma_ss.co", func)(a, b, out)
    assert_close(out, nt(a, b), atol=F16_ACC_TOL, rtol=1e-2)


def test_wgmma_st_trans() -> None:
    m, n, k = 100, 256, 128
    a, b = randn(m, k, dtype=F16, seed=137), randn(n, k, dtype=F16, seed=138)
    out = poisoned(n, m, dtype=F16)
    fn("wgmma_ss.co", "matmul_st_trans")(a, b, out)
    assert_close(out, nt(a, b).T, atol=F16_ACC_TOL, rtol=1e-2)


MASKED = """
__co__ void part(global f16 [M, K] lhs, global f16 [N, K] rhs, global f16 [M, N] output) {
  parallel {block_m, block_n} by [cdiv(M, 64), cdiv(N, 64)] : block {
    acc = mma.fill.f32 0.0f;
    foreach {iv_k} in [cdiv(K, 16)] {
      ma = lhs.subspan(64, 16).at(block_m, iv_k);
      mb = rhs.subspan(64, 16).at(block_n, iv_k);
      mma.row.row acc, ma, mb;
    }
    mma.store.mask acc, output.subspan(64, 64).at(block_m, block_n), ROWS;
  }
}
"""


@pytest.mark.parametrize("counts", ["10", "10, 20"])
def test_mma_store_mask_writes_only_the_first_rows_and_columns(counts: str) -> None:
    from croq2triton.api import load_source, translate_full

    src = translate_full(MASKED.replace("ROWS", counts), filename="masked.co").source
    f = load_source(src, f"masked_{len(counts)}", origin="masked.co").part
    m, n, k = 100, 120, 40
    a, b = randn(m, k, dtype=F16, seed=141), randn(n, k, dtype=F16, seed=142)
    out = poisoned(m, n, dtype=F16)
    f(a, b, out)
    rows, cols = (int(x) for x in (counts + ", 64").split(",")[:2])
    keep = torch.zeros(m, n, dtype=torch.bool)
    for i in range(0, m, 64):
        for j in range(0, n, 64):
            keep[i : i + rows, j : j + cols] = True
    got = out.cpu()
    assert torch.isnan(got[~keep]).all(), "an element past the counts was written"
    ref = nt(a, b).cpu()
    assert_close(got[keep], ref[keep], atol=F16_ACC_TOL, rtol=1e-2)


@pytest.mark.parametrize("mnk", [
    (100, 150, 192),  # rows of K = 192 f8 bytes: 16-byte aligned, loaded through TMA descriptors
    (100, 150, 200),  # unaligned rows: masked loads
])  # fmt: skip
def test_wgmma_e4m3_ws_tbc_ragged(mnk: tuple[int, int, int]) -> None:
    m, n, k = mnk
    a, b = f8(m, k, dtype=E4M3, seed=139), f8(n, k, dtype=E4M3, seed=140)
    out = poisoned(m, n, dtype=F16)
    fn("wgmma_ss.co", "matmul_e4m3_ws_tbc")(a, b, out)
    assert_close(out, nt(a, b), atol=F16_ACC_TOL, rtol=1e-2)


# -------------------------------------------------------------------------------- wgmma_rs.co


def test_wgmma_rs2() -> None:
    a, b = randn(64, 16, dtype=F16, seed=141), randn(64, 16, dtype=F16, seed=142)
    got = fn("wgmma_rs.co", "wgmma_rs2")(a, b)
    assert got.dtype == F32
    assert_close(got, nt(a, b), atol=1e-4, rtol=1e-5)


# ------------------------------------------------------------------------- tma_v2.co, tma_f32.co


# tma_ab_buffer(_fp8): block p adds the column chunks chunkat(_, k, p), k < 8, through a double
# buffer rotated with swap. Only block 0 is run (the element loops are slow in the interpreter).


def test_tma_ab_buffer() -> None:
    a, b = randn(6, 16, 128, seed=151), randn(6, 16, 128, seed=152)
    got = fn("tma_v2.co", "tma_ab_buffer")(a, b, _launch=first_programs(1))
    exact(got[:, :, :4], (a + b)[:, :, :4])  # 128 / 32 columns per block


@pytest.mark.parametrize(
    ("func", "shape"),
    [("tma_copy_async", (6, 16, 64)), ("tma_copy_multi_subspan", (6, 16, 64)), ("tma_copy_tiled", (6, 16, 128))],
)
def test_tma_f32_copies(func: str, shape: tuple[int, ...]) -> None:
    x = randn(*shape, seed=153)
    exact(fn("tma_f32.co", func)(x), x)


def test_tma_ab_buffer_fp8() -> None:
    # f8 arithmetic up-converts to f32; the sum is stored into an f32 buffer: exact
    a, b = f8(16, 16, 128, dtype=E4M3, seed=154), f8(16, 16, 128, dtype=E4M3, seed=155)
    got = fn("tma_f32.co", "tma_ab_buffer_fp8")(a, b, _launch=first_programs(1))
    exact(got[:, :, :16], (a.float() + b.float())[:, :, :16])  # 128 / 8 columns per block


# -------------------------------------------------------------------------- dma_3d.co, dma_4d5d.co
# Every function copies its input through shared memory: the result is the input.

I32 = torch.int32
DMA_COPIES = [
    ("dma_3d.co", "test_flat_s32", (2, 4, 8), I32),
    ("dma_3d.co", "test_flat_f16", (3, 8, 16), F16),
    ("dma_3d.co", "test_flat_async", (2, 8, 32), I32),
    ("dma_3d.co", "test_flat_large", (4, 16, 32), I32),
    ("dma_3d.co", "test_flat_s8", (2, 16, 64), torch.int8),
    ("dma_3d.co", "test_batch_s32", (3, 5, 7), I32),
    ("dma_3d.co", "test_batch_f16", (2, 9, 6), F16),
    ("dma_3d.co", "test_batch_async", (3, 5, 11), I32),
    ("dma_3d.co", "test_mixed_flatten", (5, 4, 8), I32),
    ("dma_3d.co", "test_mixed_flatten_f16", (3, 8, 16), F16),
    ("dma_3d.co", "test_mixed_batch", (2, 5, 9), I32),
    ("dma_3d.co", "test_mixed_batch_inner_static", (3, 5, 8), I32),
    ("dma_4d5d.co", "test_4d_flat_s32", (2, 3, 4, 8), I32),
    ("dma_4d5d.co", "test_4d_flat_f16", (2, 2, 4, 16), F16),
    ("dma_4d5d.co", "test_4d_dyn_s32", (2, 3, 5, 7), I32),
    ("dma_4d5d.co", "test_4d_mixed", (2, 3, 5, 7), I32),
    ("dma_4d5d.co", "test_4d_dyn_outer", (3, 3, 4, 8), I32),
    ("dma_4d5d.co", "test_5d_flat_s32", (2, 2, 3, 4, 8), I32),
    ("dma_4d5d.co", "test_5d_dyn", (2, 3, 2, 5, 3), I32),
    ("dma_4d5d.co", "test_5d_mixed", (2, 3, 3, 4, 8), I32),
]


@pytest.mark.parametrize(("file", "func", "shape", "dt"), DMA_COPIES, ids=[c[1] for c in DMA_COPIES])
def test_dma_nd_copies(file: str, func: str, shape: tuple[int, ...], dt: torch.dtype) -> None:
    x = randn(*shape, dtype=dt, seed=161)
    exact(fn(file, func)(x), x)


# ------------------------------------------------------------------------------- tiled_dma.co


def _head(x: torch.Tensor, *shape: int) -> torch.Tensor:
    """x[:shape[0], :shape[1], ...] enlarged to `shape` with zeros (reads outside x are zero)."""
    out = torch.zeros(shape, dtype=x.dtype, device=x.device)
    idx = tuple(slice(0, min(s, e)) for s, e in zip(shape, x.shape, strict=True))
    out[idx] = x[idx]
    return out


I8 = torch.int8
TILED_SAME = [  # (function, input shape, dtype): output = input
    ("foo1", (32, 32), I32),
    ("foo4", (32, 64), I32),
    ("foo7", (64, 32), I32),
    ("foo8", (16, 48), I32),
    ("foo9", (32, 128), I8),
    ("foo10", (13, 32), I32),
    ("foo11", (13, 64), I32),
    ("foo12", (64, 64), F16),
    ("foo13", (128, 128), F16),
    ("foo14", (4, 128), F16),
    ("foo15", (128, 16), I32),
    ("foo25", (128,), I32),
    ("foo26", (256,), F16),
    ("foo27", (64,), I32),
    ("foo28", (512,), I8),
    ("copy_tail_m", (70, 64), F16),
    ("copy_tail_k", (64, 72), F16),
    ("copy_tail_mk", (70, 72), F16),
]


@pytest.mark.parametrize(("func", "shape", "dt"), TILED_SAME, ids=[c[0] for c in TILED_SAME])
def test_tiled_dma_copies(func: str, shape: tuple[int, ...], dt: torch.dtype) -> None:
    x = randn(*shape, dtype=dt, seed=171)
    exact(fn("tiled_dma.co", func)(x), x)


@pytest.mark.parametrize("func", ["foo2", "foo5"])
def test_tiled_dma_zero_filled_row(func: str) -> None:
    # [31, N] copied into a [32, N] buffer: the uncovered row is zero-filled
    n = 32 if func == "foo2" else 64
    x = randn(31, n, dtype=F16, seed=172)
    exact(fn("tiled_dma.co", func)(x), _head(x, 32, n))


def test_tiled_dma_foo3_top_rows() -> None:
    x = randn(32, 1024, dtype=F16, seed=173)
    exact(fn("tiled_dma.co", "foo3")(x), x[:7, :32])


def test_tiled_dma_foo6_tile_at_1_2() -> None:
    x = randn(128, 128, seed=174)
    exact(fn("tiled_dma.co", "foo6")(x), x[32:64, 64:96])


@pytest.mark.parametrize(("func", "shape", "dt", "out"), [
    ("foo16", (64, 128), I8, (32, 64)),
    ("foo16", (20, 100), I8, (32, 64)),  # ragged: rows 20.. of the tile lie outside the input
    ("foo17", (48, 64), I32, (16, 32)),
    ("foo17", (9, 21), I32, (16, 32)),  # ragged in both dims
    ("foo18", (64, 128), I8, (13, 64)),
    ("foo18", (13, 70), I8, (13, 64)),
])  # fmt: skip
def test_tiled_dma_dynamic_stride(func: str, shape: tuple[int, int], dt: torch.dtype, out: tuple[int, int]) -> None:
    x = randn(*shape, dtype=dt, seed=175)
    exact(fn("tiled_dma.co", func)(x), _head(x, *out))


def test_tiled_dma_foo19_step_at() -> None:
    # subspan(32, 32).step(32, 32).at(1, 2): the tile at rows 32.., cols 64..
    x = randn(100, 110, dtype=I32, seed=176)
    exact(fn("tiled_dma.co", "foo19")(x), x[32:64, 64:96])


# ------------------------------------------------------------------- memreuse(-static).co


@pytest.mark.parametrize(
    ("file", "func", "k"), [("memreuse.co", "mem_reuse_dynamic", 16), ("memreuse-static.co", "mem_reuse_static", 8)]
)
def test_memreuse(file: str, func: str, k: int) -> None:
    # 8 blocks of K / 8 rows; the threads cover columns q and q + 128 of the 256; u8 sums < 256
    a = ints(k, 256, dtype=torch.uint8, lo=0, hi=128, seed=181)
    b = ints(k, 256, dtype=torch.uint8, lo=0, hi=128, seed=182)
    exact(fn(file, func)(a, b), a + b)


# ------------------------------------------------------------------------------- numerics.co


# inputs uniform in [-0.5, 1); the host test's tolerance: |got - ref| <= 2e-4 + 2e-4 * |ref|
# sinh, acos, pow, atan2, ...: libdevice's on a GPU, runtime/libmath.py's formulas in the interpreter
def test_numerics_core6() -> None:
    x = uniform(512, lo=-0.5, hi=1.0, seed=191)
    d = x.double()
    ref = (d + 2).sqrt() + (d + 2).rsqrt() + d.sin() + (d * 0.25).sinh() + d.cos() + (d * 0.25).cosh()
    assert_close(fn("numerics.co", "numerics_core6")(x), ref, atol=2e-4, rtol=2e-4)


def test_numerics_unary_mix() -> None:
    x = uniform(512, lo=-0.5, hi=1.0, seed=192)
    d = x.double()
    ref = (
        (d * 0.5).acos() + (d * 0.5).asin() + d.atan() + d.sin() + d.cos() + (d * 0.25).cosh()
        + (d * 0.25).sinh() + (d * 0.25).exp() + (d + 2.5).log() + (d * 0.25 + 0.5).log1p()
        + (d * 0.25).expm1() + (d + 2.5).sqrt() + (d + 2.5).rsqrt() + (d * 0.25).tan() + d.tanh()
    )  # fmt: skip
    assert_close(fn("numerics.co", "unary_mix")(x), ref, atol=2e-4, rtol=2e-4)


def test_numerics_binary_mix() -> None:
    x, y = uniform(512, lo=-0.5, hi=1.0, seed=193), uniform(512, lo=-0.5, hi=1.0, seed=194)
    dx, dy = x.double(), y.double()
    ref = (dx + 1.5).pow(dy + 1.5) + torch.atan2(dx, dy)
    assert_close(fn("numerics.co", "binary_mix")(x, y), ref, atol=2e-4, rtol=2e-4)


# ------------------------------------------------------------------------- integral_types.co


@pytest.mark.parametrize(("func", "dt", "bits", "signed"), [
    ("ele_add_s32", torch.int32, 31, True),  # s32 overflow is undefined in C++: stay in range
    ("ele_add_u32", torch.uint32, 32, False),
    ("ele_add_s16", torch.int16, 16, True),
    ("ele_add_u16", torch.uint16, 16, False),
    ("ele_add_s8", torch.int8, 8, True),
    ("ele_add_u8", torch.uint8, 8, False),
])  # fmt: skip
def test_integral_adds(func: str, dt: torch.dtype, bits: int, signed: bool) -> None:
    # narrower types: the int sum is converted back to the element type, i.e. wraps modulo 2^bits
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if signed else (0, 2**bits)
    a = ints(6, 64, dtype=torch.int64, lo=lo, hi=hi, seed=201)
    b = ints(6, 64, dtype=torch.int64, lo=lo, hi=hi, seed=202)
    width = 8 * dt.itemsize
    s = (a + b) % 2**width
    if signed:
        s = torch.where(s >= 2 ** (width - 1), s - 2**width, s)
    exact(fn("integral_types.co", func)(a.to(dt), b.to(dt)), s.to(dt))


@pytest.mark.parametrize(("func", "bits", "signed"), [
    ("ele_add_u6", 6, False), ("ele_add_s6", 6, True), ("ele_add_u4", 4, False), ("ele_add_s4", 4, True),
])  # fmt: skip
def test_integral_sub_byte_adds(func: str, bits: int, signed: bool) -> None:
    # one element per byte (uint8 / int8 tensors); the int sum is converted back: its low bits, sign-extended
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if signed else (0, 2**bits)
    dt = torch.int8 if signed else torch.uint8
    a = ints(6, 64, dtype=torch.int64, lo=lo, hi=hi, seed=203)
    b = ints(6, 64, dtype=torch.int64, lo=lo, hi=hi, seed=204)
    s = (a + b) % 2**bits
    if signed:
        s = torch.where(s >= 2 ** (bits - 1), s - 2**bits, s)
    exact(fn("integral_types.co", func)(a.to(dt), b.to(dt)), s.to(dt))


@pytest.mark.parametrize(("func", "lo", "hi", "dt"), [
    ("copy_u2", 0, 4, torch.uint8), ("copy_s2", -2, 2, torch.int8),
    ("copy_u1", 0, 2, torch.uint8), ("copy_bin1", 0, 2, torch.uint8),
])  # fmt: skip
def test_integral_sub_byte_copies(func: str, lo: int, hi: int, dt: torch.dtype) -> None:
    a = ints(6, 64, dtype=dt, lo=lo, hi=hi, seed=205)
    exact(fn("integral_types.co", func)(a), a)


# ----------------------------------------------------------------------------- atomic_add.co


def test_atomic_histogram() -> None:
    x = ints(256, dtype=I32, lo=0, hi=1000, seed=211)  # `input % 16` must be a valid bin
    ref = torch.bincount((x % 16).long().cpu(), minlength=16).to(I32)
    exact(fn("atomic_add.co", "histogram_shared")(x).cpu(), ref)


# --------------------------------------------------------------------------------- stream.co


def test_stream_println(capfd: pytest.CaptureFixture[str]) -> None:
    # each of the 6 blocks prints a + p; the stream only selects where the launch runs
    fn("stream.co", "foo")(100, None)
    if DEVICE == "cuda":
        torch.cuda.synchronize()  # flushes device printf
    out = capfd.readouterr().out  # the interpreter prints "(pid) :  [value]" per program
    printed = sorted(int(v) for v in re.findall(r":\s*\[?(-?\d+)\]?\s*$", out, flags=re.M))
    if DEVICE == "cuda":  # compiled, every thread of a program prints the block's value
        printed = sorted(set(printed))
    assert printed == [100, 101, 102, 103, 104, 105], out


# -------------------------------------------------------------------------------- fp8_ops.co


@pytest.mark.parametrize(("func", "dt"), [("ele_add_fp8_e4m3", E4M3), ("ele_add_fp8_e5m2", E5M2)])
def test_fp8_adds_to_f16(func: str, dt: torch.dtype) -> None:
    # f8 arithmetic is done in f32 (exact for two f8 values), then stored into f16
    a, b = f8(6, 64, dtype=dt, seed=221), f8(6, 64, dtype=dt, seed=222)
    exact(fn("fp8_ops.co", func)(a, b), (a.float() + b.float()).to(F16))


@pytest.mark.parametrize(("func", "shape", "dt"), [
    ("fp8_dma_copy_sync", (6, 17, 64), E4M3),
    ("fp8_dma_copy_async", (6, 17, 64), E5M2),
    ("fp8_dma_copy_group", (5, 17, 32), E5M2),  # M is symbolic
])  # fmt: skip
def test_fp8_copies(func: str, shape: tuple[int, ...], dt: torch.dtype) -> None:
    x = f8(*shape, dtype=dt, seed=223)
    got = fn("fp8_ops.co", func)(x)
    assert got.dtype == dt and torch.equal(got.view(torch.uint8).cpu(), x.view(torch.uint8).cpu())


def test_wgmma_rs1_frag_operand() -> None:
    # a_frag is a register fragment of ones: output[m, n] = sum_k rhs[n, k]
    b = randn(64, 16, dtype=F16, seed=143)
    got = fn("wgmma_rs.co", "wgmma_rs1")(b)
    ones = torch.ones(64, 16, dtype=F16, device=b.device)
    assert_close(got, nt(ones, b), atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("func", ["fp8_dma_add", "fp8_dma_add1"])
def test_fp8_dma_adds(func: str) -> None:
    # one warp per row q0 < N writes out[x, q0, :] for x < 6: the whole output when M = 6, N = 17
    a, b = f8(6, 17, 32, dtype=E5M2, seed=224), f8(6, 17, 32, dtype=E5M2, seed=225)
    exact(fn("fp8_ops.co", func)(a, b), (a.float() + b.float()).to(F16))


# ------------------------------------------------------- functions that are not translated

FILES = [
    "wmma.co", "ampere_mma.co", "hopper_mma.co", "wgmma_ss.co", "wgmma_rs.co", "tma_v2.co", "tma_f32.co",
    "dma_3d.co", "dma_4d5d.co", "tiled_dma.co", "memreuse.co", "memreuse-static.co", "numerics.co",
    "integral_types.co", "atomic_add.co", "stream.co", "fp8_ops.co", "gdn_recurrence.co", "flash_atten.co",
]  # fmt: skip


@pytest.mark.parametrize("name", FILES)
def test_untranslated_functions_say_why(name: str) -> None:
    m = mod(name)
    for func in m.__croq_translation__.failed:
        launcher = getattr(m, func)
        params = inspect.signature(launcher).parameters.values()
        nargs = len([p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD])
        with pytest.raises(CroqError, match="is not translated"):
            launcher(*([None] * nargs))


# ------------------------------------------------------------- tiled_dma.co: transp and pad
def test_tiled_dma_transpose_copies() -> None:
    x = randn(64, 128, dtype=torch.int32, seed=301)
    exact(fn("tiled_dma.co", "foo20")(x), x.T.contiguous())
    x = randn(40, 50, dtype=torch.int32, seed=302)  # M, N symbolic: subspan(16, 32) of a larger input
    exact(fn("tiled_dma.co", "foo21")(x), x[:16, :32].T.contiguous())


@pytest.mark.parametrize(("func", "shape", "lo", "hi", "value"), [
    ("foo22", (32, 64), (2, 4), (2, 4), 99),
    ("foo23", (32, 64), (2, 4), (2, 4), 99),
    ("foo24", (30, 60), (2, 1), (3, 2), -1),
])  # fmt: skip
def test_tiled_dma_pad_copies(
    func: str, shape: tuple[int, int], lo: tuple[int, int], hi: tuple[int, int], value: int
) -> None:
    x = randn(*shape, dtype=torch.int32, seed=303)
    ref = torch.full((shape[0] + lo[0] + hi[0], shape[1] + lo[1] + hi[1]), value, dtype=torch.int32)
    ref[lo[0] : lo[0] + shape[0], lo[1] : lo[1] + shape[1]] = x.cpu()
    exact(fn("tiled_dma.co", func)(x), ref)


# ------------------------------------------------- ampere_mma.co: C loaded as the accumulator, bias
def test_ampere_accumulator_loaded_from_output() -> None:
    a, b = randn(256, 256, dtype=F16, seed=311), randn(256, 256, dtype=F16, seed=312)
    assert_close(fn("ampere_mma.co", "matmul_loadc")(a, b), nn(a, b), atol=0.2, rtol=1e-2)


def test_ampere_fragment_plus_scalar_bias() -> None:
    a, b = randn(128, 256, dtype=F16, seed=313), randn(256, 256, dtype=F16, seed=314)
    got = fn("ampere_mma.co", "matmul_fusion_scalar")(a, b, 0.75)
    assert_close(got, nn(a, b) + 0.75, atol=gemm_tol(256), rtol=1e-2)


SPLIT_SCALE = """
__co__ void f(global f16 [64, 32] lhs, global f16 [64, 32] rhs, global f32 [2] s, global f32 [64, 64] out) {
  parallel p by 1 : block {
    acc = mma.fill.f32 0.0f;
    parallel by 1 : group-4 {
      mma.row.row acc, lhs.subspan(64, 16).at(0, 0), rhs.subspan(64, 16).at(0, 0);
      mma.scale acc, s.at(0), s.at(1);
      mma.row.row acc, lhs.subspan(64, 16).at(0, 1), rhs.subspan(64, 16).at(0, 1);
      mma.row.row acc, lhs.subspan(64, 16).at(0, 1), rhs.subspan(64, 16).at(0, 1);
      mma.scale acc, s.at(1), s.at(1);
      mma.row.row acc, lhs.subspan(64, 16).at(0, 0), rhs.subspan(64, 16).at(0, 0);
      mma.store acc, out;
    }
  }
}
"""


def test_split_scale_segments() -> None:
    # each mma.scale scales exactly the MMAs since the previous one; later MMAs add unscaled
    from croq2triton.api import load_source, translate_full

    f = load_source(translate_full(SPLIT_SCALE, filename="ss.co").source, "split_scale", origin="ss.co").f
    a, b = randn(64, 32, dtype=F16, seed=151), randn(64, 32, dtype=F16, seed=152)
    sc = torch.tensor([1.5, -0.75], dtype=F32, device=DEVICE)
    out = poisoned(64, 64, dtype=F32)
    f(a, b, sc, out)
    p0 = nt(a[:, :16], b[:, :16])
    p1 = nt(a[:, 16:], b[:, 16:])
    ref = p0 * 1.5 * -0.75 + 2 * p1 * 0.75**2 + p0
    assert_close(out, ref, atol=1e-2, rtol=1e-3)


# ------------------------------------------------------------------------------ gdn_recurrence.co
def _bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(BF16).double()


@pytest.mark.skipif(DEVICE == "cpu", reason="bf16 arithmetic is wrong in Triton's interpreter (TRITON.md)")
def test_gdn_chunk_state() -> None:
    # the gated delta-net chunk recurrence: per chunk, V_new = (U - W State^T) * exp(g_last - g),
    # State = V_new^T K + State * exp(g_last); both stored as bf16 (the host passes V_new^T, as
    # upstream's host code does). Sizes of upstream's test, random state instead of zeros.
    bh, seq, dk, dv, c = 2, 128, 64, 64, 64
    k, w = uniform(bh, seq, dk, lo=-0.05, hi=0.05, seed=161), uniform(bh, seq, dk, lo=-0.05, hi=0.05, seed=162)
    u = uniform(bh, seq, dv, lo=-0.05, hi=0.05, seed=163)
    g = uniform(bh, seq, lo=-0.01, hi=0.0, seed=164)
    s0 = uniform(bh, dv, dk, lo=-0.05, hi=0.05, seed=165)
    k, w, u, s0 = (x.to(BF16) for x in (k, w, u, s0))
    state, vnew = s0.double().cpu().clone(), torch.zeros(bh, seq, dv, dtype=torch.float64)
    for b in range(bh):
        for ic in range(seq // c):
            sl = slice(ic * c, ic * c + c)
            gg = g[b, sl].double().cpu()
            v = (u[b, sl].double().cpu() - w[b, sl].double().cpu() @ state[b].T) * torch.exp(gg[-1] - gg)[:, None]
            vnew[b, sl] = _bf16(v)
            state[b] = _bf16(vnew[b, sl].T @ k[b, sl].double().cpu() + state[b] * torch.exp(gg[-1]))
    vnew_t = vnew.transpose(1, 2).contiguous().to(BF16).to(DEVICE)
    s = s0.clone()
    v_out = poisoned(bh, seq, dv, dtype=BF16)
    fn("gdn_recurrence.co", "gdn_chunk_state")(k, w, u, g, s, v_out, vnew_t)
    assert_close(v_out, vnew, atol=5e-3, rtol=1e-2)
    assert_close(s, state, atol=5e-3, rtol=1e-2)


# ------------------------------------------------------------------- heterogeneous ': device' regions
def test_hetero_device_regions() -> None:
    # 'parallel.async by 1 : device(cpu|gpu)' regions run in program order as host code (their
    # parallels as launches); '&' and written by-value tensors get the results (upstream's CPU
    # regions write host memory in place)
    a, b = randn(1024, seed=171).cpu(), randn(1024, seed=172).cpu()
    a0, b0 = a.clone(), b.clone()
    fn("hetero_cpu_gpu.co", "hetero_add")(a, b)
    assert torch.equal(a, a0 + 1.0) and torch.equal(b, b0 + 2.0)

    a, b = randn(128, seed=173).cpu(), randn(128, seed=174).cpu()
    a0, b0 = a.clone(), b.clone()
    fn("hetero_cpu_gpu_dma.co", "hetero_dma_roundtrip")(a, b)
    assert torch.equal(a, a0 * 2.0) and torch.equal(b, b0)

    a, b, c = (randn(256, seed=175 + i).cpu() for i in range(3))
    a0, b0 = a.clone(), b.clone()
    fn("hetero_cpu_gpu_multi.co", "hetero_multi_phase")(a, b, c)
    assert torch.equal(a, a0 + 1.0) and torch.equal(b, b0 * 2.0) and torch.equal(c, (a0 + 1.0) + b0 * 2.0)

    xs = [randn(4096, seed=178 + i).cpu() for i in range(4)]
    x0 = [x.clone() for x in xs]
    fn("hetero_cpu_gpu_scale.co", "hetero_parallel_scale")(*xs)
    assert torch.equal(xs[0], x0[0] + 10.0) and torch.equal(xs[1], x0[1] * 3.0)
    assert torch.equal(xs[2], x0[2] - 5.0) and torch.equal(xs[3], x0[3] + 100.0)


def test_cpu_device_regions_with_block_parallels() -> None:
    m = load_co(CORPUS / "upstream/tests/cpu/end2end/device_target.co")
    a = torch.arange(8, dtype=torch.int32)
    b = torch.arange(8, dtype=torch.int32) * 2
    m.parallel_add(a, b)
    assert a.tolist() == [i + 10 for i in range(8)] and b.tolist() == [2 * i + 20 for i in range(8)]
