"""Memory-bound kernels in a tenth set of natural forms (tests/programs/membound_forms10.co, issue 27): a
softmax by a block per row striding with while loops and shared trees halved by a shift, an online softmax
of f16 rows by a warp merging (maximum, sum) pairs by shuffles, a Welford per thread merged across a block
by Chan's formula, an argmax by a warp merging (value, index) pairs with ties to the first index, a running
sum (a scan) along each row, sums over the middle axis of a 3-D tensor with atomics, an RMSNorm over the
last axis of a 3-D f16 tensor by a warp, a mean squared error over a whole tensor in two kernels
(per-block partials, then their fold), a scale + bias + leaky clamp from f16 to f32, row dot products
through chunkat views, count of positives and maximum of s32 rows, MSE and L1 of f16 rows by a [2, 64]
block and shared trees, the last argmax of s32 columns, an online logsumexp down f16 columns, the range
of each row by a [4, 32] block and shared trees, the maximum over the middle axis of a 3-D f16 tensor and
s8 dequantisation, column sums by a [16, 32] block with a shared tree down the columns and row sums by
a block of 8 warps folded in two levels (shuffles, shared memory, shuffles). Each runs under both schedules in the interpreter against float64 torch on ragged
sizes, outputs poisoned with NaN; what ``--schedule auto`` makes of each loop is checked on the generated
code."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_folded, assert_near_max, form_sizes, load_once, poisoned, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms10.co"
H = torch.float16
F32 = torch.float32
F64 = torch.float64
S32 = torch.int32
S8 = torch.int8

# an output's type that says: f32, zeroed by the caller (the kernel adds into it by atomics), not poisoned
ZERO = torch.float64
# the blocks of mse_total_two_pass (its partials' count)
BLOCKS = 7


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _ints(*shape: int, lo: int, hi: int, seed: int, dtype: torch.dtype = S32) -> torch.Tensor:
    """Integers in [lo, hi) (few values: many ties), as ``dtype``."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).to(dtype).to(DEVICE)


def _welford(x: torch.Tensor) -> list[torch.Tensor]:
    return [_d(x).mean(1), _d(x).var(1, unbiased=False)]


def _argmax_first(x: torch.Tensor) -> list[torch.Tensor]:
    # (torch.argmax gives the first maximal index)
    v = _d(x)
    return [v.argmax(1).double(), v.amax(1)]


def _argmax_last_cols(x: torch.Tensor) -> list[torch.Tensor]:
    m = x.shape[0]
    return [(m - 1 - _d(x).flip(0).argmax(0)).double()]


def _mse_two_pass(a: torch.Tensor, c: torch.Tensor, p: torch.Tensor) -> list[torch.Tensor]:
    # (element i is in block (i / 256) % P: the grid-stride loop's partition)
    d = ((_d(a) - _d(c)) ** 2).reshape(-1)
    blocks = (torch.arange(d.numel(), device=d.device) // 256) % p.shape[0]
    part = torch.zeros(p.shape[0], dtype=F64, device=d.device).index_add_(0, blocks, d)
    return [part, d.mean().reshape(1)]


def _scale_bias_clamp(x: torch.Tensor, rs: torch.Tensor, b: torch.Tensor, lo: float, hi: float) -> list[torch.Tensor]:
    v = _d(x) * _d(rs)[:, None] + _d(b)
    return [torch.where(v < 0, 0.01 * v, v).clamp(lo, hi)]


def _dot_quarters(a: torch.Tensor, c: torch.Tensor) -> list[torch.Tensor]:
    # (chunkat tiles the row by 4 with floor division: the trailing N % 4 columns are not read)
    n = a.shape[1] // 4 * 4
    return [(_d(a)[:, :n] * _d(c)[:, :n]).sum(1)]


def _mse_l1(a: torch.Tensor, c: torch.Tensor) -> list[torch.Tensor]:
    d = _d(a) - _d(c)
    return [(d * d).mean(1), d.abs().mean(1)]


Inputs = Callable[[int, int], list[object]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "softmax_stride_while": (
        lambda m, n: [randn(m, n, seed=m + 1) * 3],
        lambda m, n: [((m, n), F32)],
        lambda x: [torch.softmax(_d(x), 1)],
        1e-5,
    ),
    "online_softmax_warp_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=n + 2) * 2],
        lambda m, n: [((m, n), H)],
        lambda x: [torch.softmax(_d(x), 1)],
        2e-3,
    ),
    "welford_block_merge": (
        lambda m, n: [randn(m, n, seed=m + 3) * 2 + 5],
        lambda m, n: [((m,), F32), ((m,), F32)],
        _welford,
        1e-5,
    ),
    # (integers in [-4, 4) as f16: ties in every row, the first index wins)
    "argmax_warp_pairs_f16": (
        lambda m, n: [_ints(m, n, lo=-4, hi=4, seed=n + 4, dtype=H)],
        lambda m, n: [((m,), S32), ((m,), F32)],
        _argmax_first,
        0.0,
    ),
    "cumsum_rows": (
        lambda m, n: [randn(m, n, seed=m + 5)],
        lambda m, n: [((m, n), F32)],
        lambda x: [_d(x).cumsum(1)],
        1e-5,
    ),
    # (the [2, n, m] tensor summed over its middle axis of n)
    "mid_axis_sum_atomic": (
        lambda m, n: [randn(2, n, m, seed=n + 6)],
        lambda m, n: [((2, m), ZERO)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
    "rmsnorm_3d_warp_f16": (
        lambda m, n: [randn(2, m, n, dtype=H, seed=m + 7), randn(n, dtype=H, seed=8)],
        lambda m, n: [((2, m, n), H)],
        lambda x, w: [_d(x) * torch.rsqrt((_d(x) ** 2).mean(2, keepdim=True) + 1e-6) * _d(w)],
        2e-3,
    ),
    "mse_total_two_pass": (
        lambda m, n: [randn(m, n, seed=n + 9), randn(m, n, seed=m + 10)],
        lambda m, n: [((BLOCKS,), F32), ((1,), F32)],
        lambda a, c, p, o: _mse_two_pass(a, c, p),
        1e-5,
    ),
    "scale_bias_clamp_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 11), randn(m, seed=12), randn(n, dtype=H, seed=n + 13), -0.5, 1.5],
        lambda m, n: [((m, n), F32)],
        _scale_bias_clamp,
        1e-6,
    ),
    "dot_chunkat_quarters_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=n + 14), randn(m, n, dtype=H, seed=m + 15)],
        lambda m, n: [((m,), F32)],
        _dot_quarters,
        1e-5,
    ),
    "count_pos_max_s32": (
        lambda m, n: [_ints(m, n, lo=-1000, hi=1000, seed=m + 16)],
        lambda m, n: [((m,), S32), ((m,), S32)],
        lambda x: [(x > 0).sum(1).double(), _d(x).amax(1)],
        0.0,
    ),
    "mse_l1_rows_block2_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=n + 17), randn(m, n, dtype=H, seed=m + 18)],
        lambda m, n: [((m,), F32), ((m,), F32)],
        _mse_l1,
        1e-5,
    ),
    # (integers in [-5, 5): ties in every column, the last index wins; the column kernels fold [n, m]: the
    # long axis down the columns)
    "col_argmax_last_s32": (
        lambda m, n: [_ints(n, m, lo=-5, hi=5, seed=n + 19)],
        lambda m, n: [((m,), S32)],
        _argmax_last_cols,
        0.0,
    ),
    "col_lse_online_f16": (
        lambda m, n: [randn(n, m, dtype=H, seed=m + 20) * 3],
        lambda m, n: [((m,), F32)],
        lambda x: [torch.logsumexp(_d(x), 0)],
        1e-5,
    ),
    "row_range_block4": (
        lambda m, n: [randn(m, n, seed=n + 21)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).amax(1) - _d(x).amin(1)],
        1e-6,
    ),
    # (the [2, n, m] tensor's maximum over its middle axis of n)
    "mid_axis_max_while_f16": (
        lambda m, n: [randn(2, n, m, dtype=H, seed=m + 22)],
        lambda m, n: [((2, m), H)],
        lambda x: [_d(x).amax(1)],
        0.0,
    ),
    "dequant_s8_rows": (
        lambda m, n: [_ints(m, n, lo=-128, hi=128, seed=n + 23, dtype=S8), randn(m, seed=24), randn(n, seed=m + 25)],
        lambda m, n: [((m, n), H)],
        lambda q, s, z: [(_d(q) - _d(z)) * _d(s)[:, None]],
        1e-3,
    ),
    "col_sums_tree_ty": (
        lambda m, n: [randn(n, m, seed=m + 26)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(0)],
        1e-5,
    ),
    "row_sums_two_level": (
        lambda m, n: [randn(m, n, seed=n + 27)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
}
SIZES = [(37, 300), (5, 4100)]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    mod = load_once(PROGRAM, schedule)
    failed = []
    for fn, (make, outs, ref, tol) in CASES.items():
        ins = make(m, n)
        got = [
            torch.zeros(shape, dtype=F32, device=DEVICE) if dtype is ZERO else poisoned(*shape, dtype=dtype)
            for shape, dtype in outs(m, n)
        ]
        getattr(mod, fn)(*ins, *got)
        refs = ref(*ins, *got) if fn == "mse_total_two_pass" else ref(*ins)
        try:
            for g, r in zip(got, refs, strict=True):
                assert_near_max(g, r, tol, f"{fn} at {m} x {n} ({schedule})")
        except AssertionError as e:
            failed.append(str(e).splitlines()[0])
    assert not failed, "\n".join(failed)


@cache
def _source(schedule: str) -> str:
    return translate_full(PROGRAM.read_text(), filename="membound_forms10.co", schedule=schedule).source


def _code(schedule: str, kernel: str) -> str:
    return _source(schedule).split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


# kernel -> (the counters of its loops along the long axis as written, the reductions auto makes of them)
FOLDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # (``j = t; while (j < N) { ..; j += 128; }`` each a foreach over steps, lift/whileloops.py, the counter
    # reused by the next loop; both shared trees one reduction each, schedule/treefold.py)
    "softmax_stride_while": (("j_step", "j_step_2", "j_step_3"), ("tl.max(", "tl.max(", "tl.sum(")),
    # (the lanes' running pairs one tile fold; the butterfly merging the 32 lanes' pairs a maximum and a
    # rescaled sum over the lanes, schedule/pairshuffles.py)
    "online_softmax_warp_f16": (("k", "k_2", "q"), ("tl.max(", "tl.sum(")),
    # (each lane's Welford a sum then squared deviations, schedule/welford.py; thread 0's merge of the 64
    # lanes' triples by Chan's formula one reduction over the lanes, schedule/lanemerge.py)
    "welford_block_merge": (("k", "u"), ("tl.sum(",)),
    # (the lanes' best pairs one tile fold; the butterfly of (value, index) pairs the lanes' maximum and the
    # least index holding it, schedule/pairshuffles.py)
    "argmax_warp_pairs_f16": (("k", "q"), ("tl.max(", "tl.min(")),
    # (a scan, not a fold: the row one tile, its running sums tl.cumsum)
    "cumsum_rows": (("j",), ("tl.cumsum(",)),
    # (64 rows a thread folded in blocks, one atomic a column)
    "mid_axis_sum_atomic": (("i",), ("tl.sum(", "tl.atomic_add(")),
    "rmsnorm_3d_warp_f16": (("j_step", "j_step_2"), ("tl.sum(",)),
    "dot_chunkat_quarters_f16": (("k",), ("tl.sum(",)),
    "count_pos_max_s32": (("j",), ("tl.sum(", "tl.max(")),
    # (two [2, 64] shared trees, a tree a row of threads: the rows' reductions, schedule/treefold.py)
    "mse_l1_rows_block2_f16": (("k",), ("tl.sum(",)),
    "col_argmax_last_s32": (("i",), ("tl.max(",)),
    "col_lse_online_f16": (("i",), ("tl.max(", "tl.sum(")),
    "row_range_block4": (("k",), ("tl.max(", "tl.min(")),
    "mid_axis_max_while_f16": (("l_step",), ("tl.max(",)),
    # (each thread's rows from ty by 16 a foreach, lift/whileloops.py; the [16, 32] tree down the columns
    # the columns' reductions, schedule/treefold.py)
    "col_sums_tree_ty": (("i_step",), ("tl.sum(",)),
    # (the warps' partials, stored by lane 0 of each warp and read back by the lanes t < 8 of warp 0: a
    # tile of 8 in registers, no scratch memory, schedule/lanetile.py; both butterflies reductions)
    "row_sums_two_level": (("k", "q"), ("tl.sum(",)),
}
# a kernel of two: kernel -> (its launches' counters along the long axis as written, the reductions of each)
TWO: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # (the grid-stride loop over the flat elements folded, the block tree one reduction; then the partials')
    "mse_total_two_pass": (("k",), ("tl.sum(",)),
}
# loops that are not along a long axis: kept as written, each step a [8, 32] tile of the lanes
KEPT: dict[str, str] = {"scale_bias_clamp_f16": "k"}
# no loop as written: a thread an element
ELEMENTWISE = ("dequant_s8_rows",)


@pytest.mark.parametrize("kernel", sorted(FOLDS))
def test_auto_folds_each_loop_along_the_row(kernel: str) -> None:
    """Under auto no loop walks the long axis one element a lane a step; a tile reduction does."""
    assert_folded(_code, kernel, *FOLDS[kernel])


@pytest.mark.parametrize("kernel", ["online_softmax_warp_f16", "argmax_warp_pairs_f16"])
def test_pair_butterflies_are_reductions(kernel: str) -> None:
    """The lanes' pairs merged by an xor butterfly: reductions over the lanes, no gather left."""
    assert "tl.gather(" in _code("source", f"{kernel}_k0")
    assert "tl.gather(" not in _code("auto", f"{kernel}_k0")


@pytest.mark.parametrize("kernel", sorted(TWO))
def test_both_kernels_fold(kernel: str) -> None:
    counters, reductions = TWO[kernel]
    for k in ("_k0", "_k1"):
        body = _code("auto", kernel + k)
        assert not [c for c in counters if re.search(rf"\bfor {c} in\b", body)], body
        assert "_scratch" not in body and all(r in body for r in reductions), body
        assert "_scratch" in _code("source", kernel + k)


def test_shared_trees_of_several_rows_fold() -> None:
    """A [R, C] block whose rows of threads each fold a tree of their own in one shared buffer: under auto
    each buffer is the rows' reductions (no scratch memory, no halving loop left); a tree down its columns,
    the columns' reductions."""
    for kernel, axis in (
        ("mse_l1_rows_block2_f16", "_rows"),
        ("row_range_block4", "_rows"),
        ("col_sums_tree_ty", "_cols"),
    ):
        body = _code("auto", f"{kernel}_k0")
        assert axis in body and "while " not in body and "_scratch" not in body, body
        assert "_scratch" in _code("source", f"{kernel}_k0")


@pytest.mark.parametrize("kernel", sorted(KEPT))
def test_short_windows_stay_loops(kernel: str) -> None:
    body = _code("auto", f"{kernel}_k0")
    assert re.search(rf"\bfor {KEPT[kernel]} in\b", body), body


@pytest.mark.parametrize("kernel", ELEMENTWISE)
def test_elementwise_is_one_store(kernel: str) -> None:
    # (one store of the tile, or two: the interior's unmasked and the edges' masked, schedule/interior.py)
    body = _code("auto", f"{kernel}_k0")
    assert not re.search(r"\bfor \w+ in\b", body) and body.count("tl.store(") in (1, 2), body


def test_every_kernel_is_checked() -> None:
    functions = set(re.findall(r"__co__ void (\w+)\(", PROGRAM.read_text()))
    assert functions == set(CASES)
    assert functions == set(FOLDS) | set(TWO) | set(KEPT) | set(ELEMENTWISE)
    assert DEVICE is not None


# kernels written with while loops (the row walked, the trees halved): no while left under auto
WHILES = (
    "softmax_stride_while",
    "rmsnorm_3d_warp_f16",
    "mse_total_two_pass",
    "mse_l1_rows_block2_f16",
    "row_range_block4",
    "mid_axis_max_while_f16",
    "col_sums_tree_ty",
)


@pytest.mark.parametrize("kernel", WHILES)
def test_no_while_left(kernel: str) -> None:
    assert "while " in _code("source", f"{kernel}_k0")
    ks = ("_k0", "_k1") if kernel in TWO else ("_k0",)
    for k in ks:
        body = _code("auto", kernel + k)
        assert "while " not in body, body


# near misses that stay as written, right in both schedules: each row's tree read by the other row's
# lanes (lane i reads row 1 - i: not lane i's own row), and a counter started by a plain assignment
# whose final value is kept after its loop
NEAR = """
__co__ void swapped_rows(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 2) : block {
    shared f32 [2, 32] red;
    parallel {ty, tx} by [2, 32] : thread {
      int r = b # ty;
      mutable f32 s = 0.0f;
      if (r < M) {
        foreach k in [cdiv(N, 32)] {
          int j = k * 32 + tx;
          if (j < N) s += x.at(r, j);
        }
      }
      red.at(ty, tx) = s;
      sync.shared;
      mutable int h = 16;
      while (h > 0) {
        if (tx < h) red.at(ty, tx) += red.at(ty, tx + h);
        sync.shared;
        h = h >> 1;
      }
      int o = b * 2 + 1 - ty;
      if (tx == 0 && o < M) y.at(o) = red.at(1 - ty, 0);
    }
  }
}
__co__ void counter_kept(global f32 [M, N] x, global f32 [M] y, global s32 [M] last) {
  parallel b by cdiv(M, 32) : block, t by 32 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = 0;
      j = 1;
      while (j < N) {
        s += x.at(r, j);
        j += 2;
      }
      y.at(r) = s;
      last.at(r) = j;
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_near_misses_stay_as_written(schedule: str, tmp_path: Path) -> None:
    path = tmp_path / "near.co"
    path.write_text(NEAR)
    mod = load_once(path, schedule)
    for m, n in ((7, 130), (4, 77)):
        x = randn(m, n, seed=m * n)
        y = poisoned(m)
        mod.swapped_rows(x, y)
        assert_near_max(y, _d(x).sum(1), 1e-5, f"swapped_rows at {m} x {n} ({schedule})")
        z, last = poisoned(m), poisoned(m, dtype=S32)
        mod.counter_kept(x, z, last)
        assert_near_max(z, _d(x)[:, 1::2].sum(1), 1e-5, f"counter_kept at {m} x {n} ({schedule})")
        assert (last == (n if n % 2 else n + 1)).all(), last
    if schedule == "auto":
        source = translate_full(NEAR, filename="near.co", schedule="auto").source
        swapped = source.split("def swapped_rows_k0(")[1].split("@triton.jit")[0]
        assert "_scratch" in swapped, swapped
        kept = source.split("def counter_kept_k0(")[1].split("@triton.jit")[0]
        assert "while " in kept, kept
