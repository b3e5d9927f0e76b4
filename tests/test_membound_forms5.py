"""Memory-bound kernels in a fifth set of natural forms (tests/programs/membound_forms5.co, issue 27):
reductions over the middle and the last axis of a 3-D tensor, accumulators kept in memory (a local
one-element buffer, a shared per-thread slot, the output element), a tile copied into each thread's
local buffer, conditional sums and counts, a sum kept by subtraction, dot products by ``__fmaf``,
integer data summed wider, two statistics of one pass, a row through a subspan view, softmax with a
temperature, log-softmax, a softmax normalised in place, bias + GELU + row mean, per-column
statistics, a write walking the row in chunks, min-max scaling, a product and a bitwise or.
Each runs under both schedules in the interpreter against float64 torch on ragged sizes, outputs
poisoned with NaN; what ``--schedule auto`` makes of each loop is checked on the generated code."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernel_util import DEVICE, assert_folded, assert_near_max, check_forms, form_sizes, poisoned, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms5.co"
H = torch.float16
F32 = torch.float32
I32 = torch.int32


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _probs(m: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(m, n, generator=g) * 0.9 + 0.1).to(DEVICE)


def _with_nans(m: int, n: int, seed: int) -> torch.Tensor:
    x = randn(m, n, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    x[torch.rand(m, n, generator=g).to(DEVICE) < 0.2] = float("nan")
    x[1, :] = float("nan")  # a row with no number: 0 / max(0, 1)
    return x


def _nanmean(x: torch.Tensor) -> torch.Tensor:
    xd = _d(x)
    keep = ~torch.isnan(xd)
    return torch.where(keep, xd, 0.0).sum(1) / keep.sum(1).clamp(min=1)


def _bits(m: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (1 << torch.randint(0, 31, (m, n), generator=g)).to(I32).to(DEVICE)


def _or_rows(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(x.shape[0], dtype=torch.int64)
    for j in range(x.shape[1]):
        out |= x[:, j].long().cpu()
    return out


def _minmax(x: torch.Tensor) -> torch.Tensor:
    xd = _d(x)
    lo, hi = xd.min(1, keepdim=True).values, xd.max(1, keepdim=True).values
    return (xd - lo) / (hi - lo)


def _cosine(a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    a, c = _d(a), _d(c)
    return (a * c).sum(1) / torch.sqrt((a * a).sum(1) * (c * c).sum(1))


Inputs = Callable[[int, int], list[object]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "mid_axis_mean": (
        lambda m, n: [randn(3, m, n, seed=m + 1)],
        lambda m, n: [((3, n), F32)],
        lambda x: [_d(x).mean(1)],
        1e-5,
    ),
    "last_axis_max3": (
        lambda m, n: [randn(3, m, n, seed=n + 2)],
        lambda m, n: [((3, m), F32)],
        lambda x: [_d(x).amax(2)],
        0.0,  # (a maximum: exact)
    ),
    "row_sums_local": (
        lambda m, n: [randn(m, n, seed=m + 3)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
    "row_sumsq_slot": (
        lambda m, n: [randn(m, n, seed=n + 4)],
        lambda m, n: [((m,), F32)],
        lambda x: [(_d(x) ** 2).sum(1)],
        1e-5,
    ),
    "row_sums_into_out": (
        lambda m, n: [randn(m, n, seed=m + 5)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
    "row_absmax_local_chunks": (
        lambda m, n: [randn(m, n, seed=n + 6)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).abs().amax(1)],
        0.0,
    ),
    "pos_mean": (
        lambda m, n: [randn(m, n, seed=m + 7)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).clamp(min=0).sum(1) / (x > 0).sum(1).clamp(min=1)],
        1e-5,
    ),
    "nanmean_rows": (
        lambda m, n: [_with_nans(m, n, n + 8)],
        lambda m, n: [((m,), F32)],
        lambda x: [_nanmean(x)],
        1e-5,
    ),
    "nll_rows": (
        lambda m, n: [_probs(m, n, m + 9)],
        lambda m, n: [((m,), F32)],
        lambda p: [-torch.log(_d(p)).mean(1)],
        1e-5,
    ),
    "cosine_rows": (
        lambda m, n: [randn(m, n, seed=m + 10), randn(m, n, seed=n + 11)],
        lambda m, n: [((m,), F32)],
        lambda a, c: [_cosine(a, c)],
        1e-5,
    ),
    "row_sums_s8": (
        lambda m, n: [randn(m, n, dtype=torch.int8, seed=m + 12)],
        lambda m, n: [((m,), I32)],
        lambda x: [x.long().sum(1)],
        0.0,
    ),
    "row_max_sum_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=n + 13)],
        lambda m, n: [((m,), F32), ((m,), F32)],
        lambda x: [_d(x).amax(1), _d(x).sum(1)],
        1e-5,
    ),
    "row_sums_subspan": (
        lambda m, n: [randn(m, n, seed=m + 14)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
    "softmax_temp": (
        lambda m, n: [randn(m, n, seed=n + 15) * 3, 0.7],
        lambda m, n: [((m, n), F32)],
        lambda x, temp: [torch.softmax(_d(x) / temp, 1)],
        1e-5,
    ),
    "log_softmax": (
        lambda m, n: [randn(m, n, seed=m + 16) * 3],
        lambda m, n: [((m, n), F32)],
        lambda x: [torch.log_softmax(_d(x), 1)],
        1e-5,
    ),
    "softmax_in_place": (
        lambda m, n: [randn(m, n, seed=n + 17) * 3],
        lambda m, n: [((m, n), F32)],
        lambda x: [torch.softmax(_d(x), 1)],
        1e-5,
    ),
    "bias_gelu_mean": (
        lambda m, n: [randn(m, n, seed=m + 18), randn(n, seed=n + 19)],
        lambda m, n: [((m, n), F32), ((m,), F32)],
        lambda x, b: [F.gelu(_d(x) + _d(b)), F.gelu(_d(x) + _d(b)).mean(1)],
        1e-5,
    ),
    "bn_stats": (
        lambda m, n: [randn(m, n, seed=n + 20) * 2 + 1],
        lambda m, n: [((n,), F32), ((n,), F32)],
        lambda x: [_d(x).mean(0), _d(x).var(0, unbiased=False)],
        1e-5,
    ),
    "rms_scale_chunks": (
        lambda m, n: [randn(m, n, seed=m + 21)],
        lambda m, n: [((m, n), F32)],
        lambda x: [_d(x) / torch.sqrt((_d(x) ** 2).mean(1, keepdim=True) + 1e-5)],
        1e-5,
    ),
    "minmax_scale": (
        lambda m, n: [randn(m, n, seed=n + 22)],
        lambda m, n: [((m, n), F32)],
        lambda x: [_minmax(x)],
        1e-5,
    ),
    "row_prod": (
        lambda m, n: [1 + 0.01 * randn(m, n, seed=m + 23)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).prod(1)],
        1e-5,
    ),
    "row_sumsq_2d_threads": (
        lambda m, n: [randn(m, n, seed=m + 25)],
        lambda m, n: [((m,), F32)],
        lambda x: [(_d(x) ** 2).sum(1)],
        1e-5,
    ),
    "huber_rows": (
        lambda m, n: [randn(m, n, seed=m + 26), randn(m, n, seed=n + 27), 0.8],
        lambda m, n: [((m,), F32)],
        lambda a, c, delta: [F.huber_loss(_d(a), _d(c), reduction="none", delta=delta).mean(1)],
        1e-5,
    ),
    "row_max_down_while": (
        lambda m, n: [randn(m, n, seed=n + 28)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).amax(1)],
        0.0,
    ),
    "mid_axis_mean_flat": (
        lambda m, n: [randn(3, m, n, seed=m + 29)],
        lambda m, n: [((3, n), F32)],
        lambda x: [_d(x).mean(1)],
        1e-5,
    ),
    "last_axis_max_flat": (
        lambda m, n: [randn(3, m, n, seed=n + 30)],
        lambda m, n: [((3, m), F32)],
        lambda x: [_d(x).amax(2)],
        0.0,
    ),
    "row_or": (
        lambda m, n: [_bits(m, n, n + 24)],
        lambda m, n: [((m,), I32)],
        lambda x: [_or_rows(x)],
        0.0,
    ),
}
SIZES = [(37, 300), (5, 2100)]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n)


@cache
def _source(schedule: str) -> str:
    return translate_full(PROGRAM.read_text(), filename="membound_forms5.co", schedule=schedule).source


def _code(schedule: str, kernel: str) -> str:
    return _source(schedule).split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


# kernel -> (the counters of its loops along the long axis as written, the reductions auto makes of them)
FOLDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mid_axis_mean": (("l",), ("tl.sum(",)),
    "last_axis_max3": (("d",), ("tl.max(",)),
    "row_sumsq_slot": (("j",), ("tl.sum(",)),
    "pos_mean": (("j",), ("tl.sum(",)),
    "nanmean_rows": (("j",), ("tl.sum(",)),
    "row_sums_s8": (("j",), ("tl.sum(",)),
    "row_max_sum_f16": (("j",), ("tl.max(", "tl.sum(")),
    "row_sums_subspan": (("j",), ("tl.sum(",)),
    "softmax_temp": (("j", "j_2", "j_3"), ("tl.max(", "tl.sum(")),
    "log_softmax": (("j", "j_2", "j_3"), ("tl.max(", "tl.sum(")),
    "bias_gelu_mean": (("j",), ("tl.sum(",)),
    "bn_stats": (("i", "i_2"), ("tl.sum(",)),
    "rms_scale_chunks": (("j", "jj"), ("tl.sum(",)),
    "minmax_scale": (("j", "j_2"), ("tl.min(", "tl.max(")),
    # (a sum kept by subtraction, a dot product and norms by fma: sums of -f and of a * b)
    "nll_rows": (("j",), ("tl.sum(",)),
    "cosine_rows": (("j",), ("tl.sum(",)),
    # (y written with the exponentials, read back and scaled: the lifting's barriers left to fenced())
    "softmax_in_place": (("j", "j_2", "j_3"), ("tl.max(", "tl.sum(")),
    # (accumulators in memory held in registers in their loops: schedule/memacc.py)
    "row_sums_local": (("j",), ("tl.sum(",)),
    "row_sums_into_out": (("j",), ("tl.sum(",)),
    # (a product and a bitwise or: tl.reduce with the module's combining function)
    "row_prod": (("j",), ("tl.reduce(", "_fold_prod")),
    "row_or": (("j",), ("tl.reduce(", "_fold_or")),
    # (lanes of two axes, each a row: they stay in one program, a block of each row a step)
    "row_sumsq_2d_threads": (("j",), ("tl.sum(",)),
    # (each thread's chunk copied into its local buffer: the tile stored lanes fastest, read back in
    # registers, schedule/forward.py; then one reduction of the tile a chunk, schedule/selectfold.py)
    "row_absmax_local_chunks": (("j",), ("tl.max(",)),
    # (an if / else adding a term of its own in each branch: one fold of the chosen term)
    "huber_rows": (("j",), ("tl.sum(",)),
    # (a while counting down from a start the same for every thread: the foreach it is, lift/whileloops.py)
    "row_max_down_while": (("j_step",), ("tl.max(",)),
    "mid_axis_mean_flat": (("l",), ("tl.sum(",)),
    "last_axis_max_flat": (("d",), ("tl.max(",)),
}


def _assert_folded(kernel: str, counters: tuple[str, ...], reductions: tuple[str, ...]) -> None:
    assert_folded(_code, kernel, counters, reductions)


@pytest.mark.parametrize("kernel", sorted(FOLDS))
def test_auto_folds_each_loop_along_the_row(kernel: str) -> None:
    """Under auto no loop walks the long axis one element a lane a step; a tile reduction does."""
    _assert_folded(kernel, *FOLDS[kernel])


CHUNKAT = """
__co__ void row_sums_chunkat(global f32 [M, N] x, global f32 [M] y) {
  parallel p by M / 16 : block, t by 16 : thread {
    mutable f32 acc = 0.0f;
    foreach c in [N / 128] {
      f = dma.copy x.chunkat(p, c) => shared;
      foreach j in [128] { acc += f.data.at(t, j); }
    }
    y.at(p # t) = acc;
  }
}
"""


def test_tiles_of_a_chunkat_staged_through_shared(tmp_path: Path) -> None:
    """``x.chunkat(p, c)`` with ``p by M / 16``, ``c in [N / 128]``: tiles of ``M / (M / 16)`` rows by
    ``N / (N / 128)`` columns (LANGUAGE.md 7.6, floor division: 16 x 128 where 16 and 128 divide M and N),
    each thread folding its row of the staged tile; both schedules agree at sizes that divide."""
    from croq2triton.api import load

    path = tmp_path / "chunk.co"
    path.write_text(CHUNKAT)
    x = randn(48, 384, seed=9)
    for s in ("source", "auto"):
        y = poisoned(48)
        load(path, schedule=s).row_sums_chunkat(x, y)
        assert_near_max(y, _d(x).sum(1), 1e-5, f"chunkat rows ({s})")


@pytest.mark.xfail(
    strict=True,
    reason="the chunk's extents are M // (M / 16) and N // (N / 128), known only at launch (F_D0, F_D1): "
    "forward.py forwards tiles of extents known when translating, so each thread reads its row back from "
    "scratch memory one element a step",
)
def test_tiles_of_a_chunkat_fold_under_auto() -> None:
    code = translate_full(CHUNKAT, filename="chunk.co", schedule="auto").source
    body = code.split("def row_sums_chunkat_k0(")[1].split("@_rt.launcher")[0]
    assert not re.search(r"\bfor j in\b", body) and "_scratch" not in body and "tl.sum(" in body


def test_every_kernel_is_checked() -> None:
    functions = set(re.findall(r"__co__ void (\w+)\(", PROGRAM.read_text()))
    assert functions == set(CASES) == set(FOLDS)
    assert DEVICE is not None


NEAR_MISSES = """
__co__ void minus_from(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      foreach j in [N] { s = x.at(r, j) - s; }
      y.at(r) = s;
    }
  }
}
__co__ void fma_scaled(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 1.0f;
      foreach j in [N] { s = __fmaf(s, x.at(r, j), 0.5f); }
      y.at(r) = s;
    }
  }
}
__co__ void shift_or(global s32 [M, N] x, global s32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable s32 f = 0;
      foreach j in [N] { f = (f << 1) | x.at(r, j); }
      y.at(r) = f;
    }
  }
}
__co__ void sum_or_max(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      foreach j in [N] { f32 v = x.at(r, j); if (v > 0.0f) s += v; else s = __max(s, -v); }
      y.at(r) = s;
    }
  }
}
__co__ void cumsum_through_output(global f32 [M, N] x, global f32 [M, N] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      y.at(r, 0) = x.at(r, 0);
      foreach j in [N - 1] { y.at(r, j + 1) = y.at(r, j) + x.at(r, j + 1); }
    }
  }
}
"""


def test_a_recurrence_through_the_output_stays_as_written(tmp_path: Path) -> None:
    """``y.at(r, j + 1) = y.at(r, j) + x.at(r, j + 1)``: each step reads the element the step before
    stored, not the element it stores, so the loop stays a loop per lane under auto, and both
    schedules give the prefix sums."""
    from croq2triton.api import load

    code = translate_full(NEAR_MISSES, filename="near.co", schedule="auto").source
    body = code.split("def cumsum_through_output_k0(")[1].split("@_rt.launcher")[0]
    assert re.search(r"\bfor j in\b", body)
    x = randn(9, 70, seed=5)
    path = tmp_path / "near.co"
    path.write_text(NEAR_MISSES)
    for s in ("source", "auto"):
        y = poisoned(9, 70)
        load(path, schedule=s).cumsum_through_output(x, y)
        assert_near_max(y, _d(x).cumsum(1), 1e-5, f"prefix sums through the output ({s})")


MEMORY = """
__co__ void ema_into_out(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      y.at(r) = x.at(r, 0);
      foreach j in [N] { y.at(r) = y.at(r) * 0.75f + x.at(r, j) * 0.25f; }
    }
  }
}
__co__ void two_slots(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    local f32 [2] acc;
    acc.at(0) = 0.0f;
    acc.at(1) = 0.0f;
    if (r < M) {
      foreach j in [N] { acc.at(j % 2) += x.at(r, j) * (1 + j % 2); }
      y.at(r) = acc.at(0) + acc.at(1);
    }
  }
}
"""


def test_accumulators_in_memory_are_held_in_registers_or_stay(tmp_path: Path) -> None:
    """An exponential moving average kept in the output element (``y.at(r) = y.at(r) * 0.75f + ..``) is
    held in a register through its loop (schedule/memacc.py: no load or store of ``y`` in the loop),
    but is no fold, so the loop stays; two slots of a local buffer picked by the counter
    (``acc.at(j % 2)``) are not one element for the whole loop: read and written in memory as lifted.
    Both schedules agree with float64."""
    from croq2triton.api import load

    code = translate_full(MEMORY, filename="mem.co", schedule="auto").source
    ema = code.split("def ema_into_out_k0(")[1].split("@_rt.launcher")[0]
    loop = ema.split("for j in")[1]
    assert "y_ptr" not in loop.split("tl.store(")[0], "y read in the loop"
    assert "_acc" in ema
    slots = code.split("def two_slots_k0(")[1].split("@_rt.launcher")[0]
    assert re.search(r"\bfor j in\b", slots) and "acc_scratch" in slots.split("for j in")[1]
    x = randn(9, 70, seed=6)
    path = tmp_path / "mem.co"
    path.write_text(MEMORY)
    xd = _d(x).cpu()
    want = xd[:, 0].clone()
    for j in range(70):
        want = want * 0.75 + xd[:, j] * 0.25
    weights = torch.tensor([1.0 + j % 2 for j in range(70)], dtype=torch.float64)
    for s in ("source", "auto"):
        mod = load(path, schedule=s)
        y, z = poisoned(9), poisoned(9)
        mod.ema_into_out(x, y)
        mod.two_slots(x, z)
        assert_near_max(y, want, 1e-6, f"moving average in the output ({s})")
        assert_near_max(z, (xd * weights).sum(1), 1e-5, f"two slots ({s})")


def test_branches_folding_by_different_operators_stay(tmp_path: Path) -> None:
    """``if (v > 0) s += v; else s = __max(s, -v);``: two folds of one accumulator by different operators
    are no one fold (their order matters); the loop stays a loop per lane and both schedules agree."""
    from croq2triton.api import load

    code = translate_full(NEAR_MISSES, filename="near.co", schedule="auto").source
    assert re.search(r"\bfor j in\b", code.split("def sum_or_max_k0(")[1].split("@_rt.launcher")[0])
    x = randn(9, 70, seed=8)
    xd = _d(x).cpu()
    want = torch.zeros(9, dtype=torch.float64)
    for j in range(70):
        v = xd[:, j]
        want = torch.where(v > 0, want + v, torch.maximum(want, -v))
    path = tmp_path / "near.co"
    path.write_text(NEAR_MISSES)
    for s in ("source", "auto"):
        y = poisoned(9)
        load(path, schedule=s).sum_or_max(x, y)
        assert_near_max(y, want, 1e-5, f"sum or max ({s})")


WHILES = """
__co__ void down_from_own_start(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = N - 1 - t;
      while (j > 1) { s += x.at(r, j); j = j - 2; }
      y.at(r) = s;
    }
  }
}
__co__ void down_from_mutable(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int top = N - 1;
      mutable int j = top;
      top = 0;
      while (j > top) { s += x.at(r, j); j -= 1; }
      y.at(r) = s;
    }
  }
}
__co__ void down_above_floor(global f32 [M, N] x, int lo, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = N - 1;
      while (lo < j) { s += x.at(r, j); j = j - 3; }
      y.at(r) = s;
    }
  }
}
"""


def test_while_loops_counting_down(tmp_path: Path) -> None:
    """``while (lo < j) { ..; j = j - 3; }`` from ``N - 1`` is the foreach it is and folds, none of its
    steps when ``lo >= N - 1``; from ``N - 1 - t`` each thread's own number of steps (a foreach of each
    thread's extent); from a start read from a name assigned again (``mutable int top``) it stays a
    while.  Both schedules agree with float64."""
    from croq2triton.api import load

    code = translate_full(WHILES, filename="w.co", schedule="auto").source

    def body(fn: str) -> str:
        return code.split(f"def {fn}_k0(")[1].split("@_rt.launcher")[0]

    assert "while " not in body("down_from_own_start")
    assert "while " in body("down_from_mutable")
    assert "while " not in body("down_above_floor") and "tl.sum(" in body("down_above_floor")
    x = randn(9, 70, seed=10)
    xd = _d(x).cpu()
    path = tmp_path / "w.co"
    path.write_text(WHILES)
    for s in ("source", "auto"):
        mod = load(path, schedule=s)
        y, w = poisoned(9), poisoned(9)
        mod.down_from_own_start(x, y)
        want = torch.stack([xd[i, list(range(69 - (i % 64), 1, -2))].sum() for i in range(9)])
        assert_near_max(y, want, 1e-6, f"down from each thread's start ({s})")
        mod.down_from_mutable(x, w)
        assert_near_max(w, xd[:, 1:].sum(1), 1e-6, f"down to a name assigned again ({s})")
        for lo in (5, 68, 80):
            z = poisoned(9)
            mod.down_above_floor(x, lo, z)
            want = xd[:, list(range(69, lo, -3))].sum(1)
            assert torch.allclose(z.cpu().double(), want, atol=1e-5), (s, lo)


def test_a_shift_register_is_not_an_or_fold(tmp_path: Path) -> None:
    """``f = (f << 1) | x``: the accumulator shifted each step, not ``f | x``; stays a loop per lane and
    both schedules agree with the bits computed in Python."""
    from croq2triton.api import load

    code = translate_full(NEAR_MISSES, filename="near.co", schedule="auto").source
    assert re.search(r"\bfor j in\b", code.split("def shift_or_k0(")[1].split("@_rt.launcher")[0])
    g = torch.Generator().manual_seed(7)
    x = torch.randint(0, 2, (9, 40), generator=g).to(I32)
    want = torch.zeros(9, dtype=torch.int64)
    for j in range(40):
        want = ((want << 1) | x[:, j].long()) & 0xFFFFFFFF
    want = torch.where(want >= 2**31, want - 2**32, want)
    path = tmp_path / "near.co"
    path.write_text(NEAR_MISSES)
    for s in ("source", "auto"):
        y = poisoned(9, dtype=I32)
        load(path, schedule=s).shift_or(x.to(DEVICE), y)
        assert torch.equal(y.cpu().long(), want), s


@pytest.mark.parametrize("kernel", ["minus_from", "fma_scaled"])
def test_near_misses_stay_as_written_and_agree(kernel: str, tmp_path: Path) -> None:
    """``s = x - s`` (an alternating sum) and ``s = fma(s, x, c)`` (a recurrence, ``s`` a factor): not
    the sums of ``s -= x`` and ``s = fma(a, b, s)``, so each stays a loop per lane; both schedules agree
    with float64."""
    from croq2triton.api import load

    code = translate_full(NEAR_MISSES, filename="near.co", schedule="auto").source
    body = code.split(f"def {kernel}_k0(")[1].split("@_rt.launcher")[0]
    assert re.search(r"\bfor j in\b", body)
    x = randn(9, 70, seed=4) * 0.5
    path = tmp_path / "near.co"
    path.write_text(NEAR_MISSES)
    want = torch.zeros(9, dtype=torch.float64) if kernel == "minus_from" else torch.ones(9, dtype=torch.float64)
    for j in range(70):
        xj = _d(x[:, j]).cpu()
        want = xj - want if kernel == "minus_from" else want * xj + 0.5
    for s in ("source", "auto"):
        y = poisoned(9)
        getattr(load(path, schedule=s), kernel)(x, y)
        assert_near_max(y, want, 1e-5, f"{kernel} ({s})")
