"""Memory-bound kernels in a ninth set of natural forms (tests/programs/membound_forms9.co, issue 27): a
softmax by a block per row with named columns and two shared trees, a grid-stride loop over rows, a
LayerNorm over a flat 1-D view, column sums by a block of threads walking down with an atomic a column,
a scaled masked softmax walked by while loops, int8 quantisation through chunks staged in local memory,
a residual add + LayerNorm of f16 rows with a warp per row and two outputs, bias + GELU four elements a
thread, an f16 column maximum walked by a while loop, a transpose through a tile staged by dma.copy, row
L2 norms by a warp walking with a while loop and shuffles down, an RMSNorm from partials added by
atomics, row sums through a shared accumulator and atomics, two rows a thread in one loop and column
means over a flat view. Each runs under both schedules in the interpreter against float64 torch on
ragged sizes, outputs poisoned with NaN; what ``--schedule auto`` makes of each loop is checked on the
generated code."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernel_util import DEVICE, assert_folded, assert_near_max, form_sizes, load_once, poisoned, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms9.co"
H = torch.float16
F32 = torch.float32
F64 = torch.float64
S8 = torch.int8
U8 = torch.uint8


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


# an output's type that says: f32, zeroed by the caller (the kernel adds into it by atomics), not poisoned
ZERO = torch.float64
# the row length of the current run (a flat tensor's reference cannot see it)
_N = [0]


def _mask(m: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(m, n, generator=g) < 0.3).to(U8).to(DEVICE)


def _rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return _d(x) * torch.rsqrt((_d(x) ** 2).mean(1, keepdim=True) + 1e-6) * _d(w)


def _ln(x: torch.Tensor, g: torch.Tensor, bb: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(_d(x), (x.shape[-1],), _d(g), _d(bb), 1e-5)


def _scaled_masked(x: torch.Tensor, mask: torch.Tensor, scale: float) -> list[torch.Tensor]:
    v = torch.where(mask != 0, -10000.0, _d(x) * scale)
    return [torch.softmax(v, 1)]


def _quant(x: torch.Tensor) -> list[torch.Tensor]:
    a = x.float().abs().amax(1, keepdim=True)
    inv = torch.full_like(a, 127.0) / a  # (f32, as the kernel computes it)
    return [torch.round(x.float() * inv).double(), _d(a)[:, 0] / 127]


def _add_ln(x: torch.Tensor, res: torch.Tensor, g: torch.Tensor, bb: torch.Tensor) -> list[torch.Tensor]:
    h = (x.float() + res.float()).half()
    return [_d(h), _ln(h, g, bb)]


def _flat_ln(x: torch.Tensor, g: torch.Tensor, bb: torch.Tensor) -> list[torch.Tensor]:
    n = g.shape[0]
    return [_ln(x.view(-1, n), g, bb).reshape(-1)]


Inputs = Callable[[int, int], list[object]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "softmax_tree256": (
        lambda m, n: [randn(m, n, seed=m + 1) * 3],
        lambda m, n: [((m, n), F32)],
        lambda x: [torch.softmax(_d(x), 1)],
        1e-5,
    ),
    "rmsnorm_gridstride_rows": (
        # (one block of 32 threads: 37 rows are two steps of the grid-stride loop)
        lambda m, n: [randn(m, n, seed=n + 2), randn(n, seed=m + 3), 1],
        lambda m, n: [((m, n), F32)],
        lambda x, w, g: [_rms(x, w)],
        1e-5,
    ),
    "layernorm_flat": (
        lambda m, n: [randn(m * n, seed=m + 4) + 0.5, randn(n, seed=5), randn(n, seed=6)],
        lambda m, n: [((m * n,), F32)],
        _flat_ln,
        1e-5,
    ),
    # (s zeroed by the caller: the atomics add into it)
    "col_sums_atomic_strip": (
        lambda m, n: [randn(m, n, seed=n + 7)],
        lambda m, n: [((n,), ZERO)],
        lambda x: [_d(x).sum(0)],
        1e-5,
    ),
    "scaled_masked_softmax_while": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 8) * 2, _mask(m, n, n + 9), 0.75],
        lambda m, n: [((m, n), H)],
        _scaled_masked,
        2e-3,
    ),
    "quant_s8_local_chunks": (
        lambda m, n: [randn(m, n, seed=n + 10)],
        lambda m, n: [((m, n), S8), ((m,), F32)],
        _quant,
        1e-6,
    ),
    "add_layernorm_warp_f16": (
        lambda m, n: [
            randn(m, n, dtype=H, seed=m + 11) + 1,
            randn(m, n, dtype=H, seed=n + 12),
            randn(n, dtype=H, seed=13),
            randn(n, dtype=H, seed=14),
        ],
        lambda m, n: [((m, n), H), ((m, n), H)],
        _add_ln,
        4e-3,
    ),
    "bias_gelu_vec4_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=n + 15), randn(n, dtype=H, seed=m + 16)],
        lambda m, n: [((m, n), H)],
        lambda x, b: [F.gelu(_d(x) + _d(b))],
        2e-3,
    ),
    "col_max_while_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 17)],
        lambda m, n: [((n,), H)],
        lambda x: [_d(x).amax(0)],
        0.0,
    ),
    "transpose_dma_tile": (
        lambda m, n: [randn(m, n, seed=n + 18)],
        lambda m, n: [((n, m), F32)],
        lambda x: [_d(x).t()],
        0.0,
    ),
    "row_l2_warp_while": (
        lambda m, n: [randn(m, n, seed=m + 19)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).norm(dim=1)],
        1e-5,
    ),
    "rmsnorm_atomic_partials": (
        lambda m, n: [randn(m, n, seed=n + 20), randn(n, seed=m + 21)],
        lambda m, n: [((m,), ZERO), ((m, n), F32)],
        lambda x, w: [(_d(x) ** 2).sum(1), _rms(x, w)],
        1e-5,
    ),
    "row_sums_shared_atomic": (
        lambda m, n: [randn(m, n, seed=m + 22)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
    "l2_two_rows_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=n + 23)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).norm(dim=1)],
        1e-5,
    ),
    "col_mean_flat": (
        lambda m, n: [randn(m * n, seed=m + 24)],
        lambda m, n: [((n,), F32)],
        lambda x: [_d(x).view(-1, 0 + _N[0]).mean(0)],
        1e-5,
    ),
}
SIZES = [(37, 300), (5, 5000)]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    mod = load_once(PROGRAM, schedule)
    _N[0] = n
    for fn, (make, outs, ref, tol) in CASES.items():
        ins = make(m, n)
        got = [
            torch.zeros(shape, dtype=F32, device=DEVICE) if dtype is ZERO else poisoned(*shape, dtype=dtype)
            for shape, dtype in outs(m, n)
        ]
        getattr(mod, fn)(*ins, *got)
        for g, r in zip(got, ref(*ins), strict=True):
            assert_near_max(g, r, tol, f"{fn} at {m} x {n} ({schedule})")


@cache
def _source(schedule: str) -> str:
    return translate_full(PROGRAM.read_text(), filename="membound_forms9.co", schedule=schedule).source


def _code(schedule: str, kernel: str) -> str:
    return _source(schedule).split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


# kernel -> (the counters of its loops along the long axis as written, the reductions auto makes of them)
FOLDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # (the columns named j = k * 256 + t: [k, t] tiles with t fastest; both shared trees one reduction each,
    # schedule/treefold.py)
    "softmax_tree256": (("k", "k_2", "k_3", "s", "s_2"), ("tl.max(", "tl.sum(")),
    # (the grid-stride loop over rows stays: each step a row a program, a program a thread of the grid)
    "rmsnorm_gridstride_rows": (("j", "j_2"), ("tl.sum(",)),
    "layernorm_flat": (("j", "j_2", "j_3"), ("tl.sum(",)),
    # (each thread's 64 rows folded in blocks, the [4, 64] threads' partials of a column one atomic)
    "col_sums_atomic_strip": (("i",), ("tl.sum(",)),
    # (``while (j < N) { ..; j += 1; }`` from 0: the foreach it is, lift/whileloops.py)
    "scaled_masked_softmax_while": (("j_step", "k_step", "c_step"), ("tl.max(", "tl.sum(")),
    # (each chunk staged in the lane's local memory a [32, 128] tile: the absolute maximum one reduction of
    # it, the quantised chunk one store of it, schedule/selectfold.py; the loops over the chunks stay)
    "quant_s8_local_chunks": (("k", "k_2"), ("tl.max(",)),
    # (the butterflies written out step by step: one reduction across the warp, schedule/shuffles.py)
    "add_layernorm_warp_f16": (("k", "k_2"), ("tl.sum(",)),
    # (four consecutive columns a thread: [128, 4] tiles, the four fastest)
    "bias_gelu_vec4_f16": (("v",), ()),
    "col_max_while_f16": (("i_step",), ("tl.max(",)),
    # (the staged tile in registers, stored transposed: tl.trans)
    "transpose_dma_tile": (("k",), ("tl.trans(",)),
    "row_l2_warp_while": (("j_step", "k"), ("tl.sum(",)),
    "l2_two_rows_f16": (("j",), ("tl.sum(",)),
    "col_mean_flat": (("i",), ("tl.sum(",)),
}
# kernels folded whose auto code keeps a round trip through scratch memory: kernel -> (counters, reductions)
SCRATCH: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # (the shared accumulator the lanes add to by atomics: one element a program in scratch memory, one
    # atomic of the program's folded partials into it, schedule/atomicfold.py)
    "row_sums_shared_atomic": (("k",), ("tl.sum(", "tl.atomic_add(")),
}

# loops that are not along a long axis: kept as written, each step a contiguous tile of the lanes
KEPT: dict[str, str] = {
    # (4 steps of 256 columns, a program's 1024 columns of a row; the partials one atomic a program)
    "rmsnorm_atomic_partials": "k",
}


@pytest.mark.parametrize("kernel", sorted(FOLDS))
def test_auto_folds_each_loop_along_the_row(kernel: str) -> None:
    """Under auto no loop walks the long axis one element a lane a step; a tile reduction does."""
    assert_folded(_code, kernel, *FOLDS[kernel])


@pytest.mark.parametrize("kernel", sorted(SCRATCH))
def test_auto_folds_through_a_scratch_element(kernel: str) -> None:
    body = _code("auto", f"{kernel}_k0")
    counters, reductions = SCRATCH[kernel]
    assert not [c for c in counters if re.search(rf"\bfor {c} in\b", body)], body
    assert all(r in body for r in reductions), body
    assert body.count("tl.atomic_add(") == 1, body


@pytest.mark.parametrize("kernel", sorted(KEPT))
def test_short_windows_stay_loops(kernel: str) -> None:
    body = _code("auto", f"{kernel}_k0")
    assert re.search(rf"\bfor {KEPT[kernel]} in\b", body) and "tl.arange(0, 256)" in body, body
    assert body.count("tl.atomic_add(") == 1 and "tl.sum(acc, axis=0)" in body, body


def test_every_kernel_is_checked() -> None:
    functions = set(re.findall(r"__co__ void (\w+)\(", PROGRAM.read_text()))
    assert functions == set(CASES)
    assert functions == set(FOLDS) | set(SCRATCH) | set(KEPT)
    assert DEVICE is not None


# stores of a lane's staged chunk, element by element (schedule/selectfold.py): to the transposed position
# (each lane a column of y: one tile store), and near misses that stay loops: every second column (not one
# element a step) and the chunk's elements reversed within the row plus a lane's own offset read from a tensor
CHUNKS = """
__co__ void chunk_transposed(global f32 [M, N] x, global f32 [N, M] y) {
  parallel b by cdiv(M, 8) : block, t by 8 : thread {
    int r = b # t;
    if (r < M) {
      foreach c in [cdiv(N, 64)] {
        f = dma.copy x.subspan(1, 64).at(r, c) => local;
        foreach k in [64] {
          if (c * 64 + k < N) y.at(c * 64 + k, r) = f.data.at(0, k) * 2.0f;
        }
      }
    }
  }
}
__co__ void chunk_every_second(global f32 [M, N] x, global f32 [M, N2] y) {
  parallel b by cdiv(M, 8) : block, t by 8 : thread {
    int r = b # t;
    if (r < M) {
      foreach c in [cdiv(N, 64)] {
        f = dma.copy x.subspan(1, 64).at(r, c) => local;
        foreach k in [64] {
          if (c * 64 + k < N) y.at(r, 2 * (c * 64 + k)) = f.data.at(0, k);
        }
      }
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_lanes_staged_chunk_stored_whole(schedule: str, tmp_path: Path) -> None:
    """A loop storing a function of each element of a lane's staged chunk is one store of the [lanes,
    chunk] tile under auto (the lanes' values along the tile's other axis); a store of every second
    column stays a loop; both right in both schedules."""
    path = tmp_path / "chunks.co"
    path.write_text(CHUNKS)
    mod = load_once(path, schedule)
    m, n = 13, 150
    x = randn(m, n, seed=m + n)
    y = poisoned(n, m)
    mod.chunk_transposed(x, y)
    assert_near_max(y, 2 * _d(x).t(), 0.0, f"chunk_transposed ({schedule})")
    z = poisoned(m, 2 * n)
    mod.chunk_every_second(x, z)
    assert_near_max(z[:, ::2], _d(x), 0.0, f"chunk_every_second ({schedule})")
    if schedule == "auto":
        source = translate_full(CHUNKS, filename="chunks.co", schedule="auto").source
        body = source.split("def chunk_transposed_k0(")[1].split("@triton.jit")[0]
        assert not re.search(r"\bfor k in\b", body) and "tl.store(" in body, body
        near = source.split("def chunk_every_second_k0(")[1].split("@triton.jit")[0]
        assert re.search(r"\bfor k in\b", near), near
