"""Memory-bound kernels in a seventh set of natural forms (tests/programs/membound_forms7.co, issue 27):
4-D tensors reduced over their trailing axes (a loop over two or three names, two nested loops),
two tensors walked together (KL divergence, soft-target cross entropy, a weighted mean, a softmax with
an additive mask tensor), base-2 logsumexp and softmax (a temperature read from a tensor), an L1
normalisation writing two elements a step, integer rows (a count, an argmin, a parity, a constant-row
test), four rows a thread, two columns a thread, a loop whose extent is read from a tensor, an f16 mean
over a prefix, a row staged in shared memory chunk by chunk by ``dma.copy``, and a 3 x 3 average pool.
Each runs under both schedules in the interpreter against float64 torch on ragged sizes, outputs
poisoned with NaN; what ``--schedule auto`` makes of each loop is checked on the generated code."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, reduce
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_folded, check_forms, form_sizes, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms7.co"
H = torch.float16
F32 = torch.float32
F64 = torch.float64
I32 = torch.int32


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _ints(shape: tuple[int, ...], lo: int, hi: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).to(I32).to(DEVICE)


def _probs(m: int, n: int, seed: int) -> torch.Tensor:
    return torch.softmax(randn(m, n, seed=seed) * 2, 1)


def _img(m: int, n: int, seed: int) -> torch.Tensor:
    """A [B, C, H, W] tensor of about m x n elements a batch: C = m channels, H = 12 rows of n // 12 + 1."""
    return randn(2, m, 12, n // 12 + 1, seed=seed)


def _group_stats(x: torch.Tensor, g: int) -> list[torch.Tensor]:
    xg = _d(x).reshape(x.shape[0], g, -1)
    mu = xg.mean(2)
    return [mu, 1 / torch.sqrt((xg * xg).mean(2) - mu * mu + 1e-5)]


def _soft_xent(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    x, t = _d(x), _d(t)
    return (t * (torch.logsumexp(x, 1, keepdim=True) - x)).sum(1)


def _mask(m: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    keep = torch.rand(m, n, generator=g) > 0.3
    keep[:, 0] = True  # (no row masked whole)
    return torch.where(keep, torch.randn(m, n, generator=g) * 0.5, float("-inf")).to(DEVICE)


def _argmin(x: torch.Tensor) -> list[torch.Tensor]:
    return [x.long().argmin(1).double(), _d(x).amin(1)]


def _parity(x: torch.Tensor) -> torch.Tensor:
    cols = [x[:, j].long() for j in range(x.shape[1])]
    return _d(reduce(torch.bitwise_xor, cols) & 1)


def _constant_rows(m: int, n: int, seed: int) -> torch.Tensor:
    x = _ints((m, n), 0, 3, seed)
    x[::2] = x[::2, :1]  # every other row constant
    x[1, n - 1] = x[1, 0]
    return x


def _max_len(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    keep = torch.arange(x.shape[1], device=x.device)[None, :] < n[:, None]
    return torch.where(keep, _d(x), float("-inf")).amax(1)


Inputs = Callable[[int, int], list[object]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "spatial_mean4": (
        lambda m, n: [_img(m, n, m + 1)],
        lambda m, n: [((2, m), F32)],
        lambda x: [_d(x).mean((2, 3))],
        1e-5,
    ),
    "spatial_max4": (
        lambda m, n: [_img(m, n, n + 2)],
        lambda m, n: [((2, m), F32)],
        lambda x: [_d(x).amax((2, 3))],
        0.0,
    ),
    # (a program per batch walking its groups' 2 x 12 x (n / 12) values: more than 7 batches only run
    # more programs of the same kind, seconds of interpreter time under the source schedule)
    "group_stats4": (
        lambda m, n: [randn(min(m, 7), 8, 12, n // 12 + 1, seed=m + 3) * 2 + 0.5, 4],
        lambda m, n: [((min(m, 7), 4), F32), ((min(m, 7), 4), F32)],
        lambda x, g: _group_stats(x, g),
        1e-4,
    ),
    "kl_div_rows": (
        lambda m, n: [_probs(m, n, m + 4), _probs(m, n, n + 5)],
        lambda m, n: [((m,), F32)],
        lambda p, q: [(_d(p) * (_d(p).log() - _d(q).log())).sum(1)],
        1e-5,
    ),
    "soft_xent": (
        lambda m, n: [randn(m, n, seed=m + 6) * 3, _probs(m, n, n + 7)],
        lambda m, n: [((m,), F32)],
        lambda x, t: [_soft_xent(x, t)],
        1e-5,
    ),
    "weighted_mean": (
        lambda m, n: [randn(m, n, seed=m + 8), randn(m, n, seed=n + 9).abs() + 0.1],
        lambda m, n: [((m,), F32)],
        lambda x, w: [(_d(x) * _d(w)).sum(1) / _d(w).sum(1)],
        1e-5,
    ),
    "masked_softmax_add": (
        lambda m, n: [randn(m, n, seed=m + 10) * 2, _mask(m, n, n + 11)],
        lambda m, n: [((m, n), F32)],
        lambda x, k: [torch.softmax(_d(x) + _d(k), 1)],
        1e-5,
    ),
    "lse_exp2": (
        lambda m, n: [randn(m, n, seed=m + 12) * 3],
        lambda m, n: [((m,), F32)],
        lambda x: [torch.logsumexp(_d(x), 1)],
        1e-5,
    ),
    "softmax_temp_exp2": (
        lambda m, n: [randn(m, n, seed=n + 13) * 2, torch.tensor([0.7], device=DEVICE)],
        lambda m, n: [((m, n), F32)],
        lambda x, tau: [torch.softmax(_d(x) / _d(tau), 1)],
        1e-5,
    ),
    "l1_normalize_pairs": (
        lambda m, n: [randn(m, n, seed=m + 14)],
        lambda m, n: [((m, n), F32)],
        lambda x: [_d(x) / _d(x).abs().sum(1, keepdim=True)],
        1e-6,
    ),
    "count_value_s32": (
        lambda m, n: [_ints((m, n), 0, 5, n + 15), 3],
        lambda m, n: [((m,), I32)],
        lambda x, v: [_d(x == v).sum(1)],
        0.0,
    ),
    "argmin_s32": (
        lambda m, n: [_ints((m, n), -50, 50, m + 16)],
        lambda m, n: [((m,), I32), ((m,), I32)],
        _argmin,
        0.0,
    ),
    "xor_parity": (
        lambda m, n: [_ints((m, n), 0, 1 << 20, n + 17)],
        lambda m, n: [((m,), I32)],
        lambda x: [_parity(x)],
        0.0,
    ),
    "row_constant": (
        lambda m, n: [_constant_rows(m, n, m + 18)],
        lambda m, n: [((m,), I32)],
        lambda x: [_d((x == x[:, :1]).all(1))],
        0.0,
    ),
    "sumsq_rows4": (
        lambda m, n: [randn(m, n, seed=n + 19)],
        lambda m, n: [((m,), F32)],
        lambda x: [(_d(x) ** 2).sum(1)],
        1e-5,
    ),
    "col_max_pairs": (
        lambda m, n: [randn(m, n, seed=m + 20)],
        lambda m, n: [((n,), F32)],
        lambda x: [_d(x).amax(0)],
        0.0,
    ),
    "max_len_bound": (
        lambda m, n: [randn(m, n, seed=n + 21), _ints((m,), 1, n + 1, m + 22)],
        lambda m, n: [((m,), F32)],
        lambda x, k: [_max_len(x, k)],
        0.0,
    ),
    "prefix_mean_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 23) + 0.5, n - 13],
        lambda m, n: [((m,), H)],
        lambda x, k: [_d(x)[:, :k].mean(1)],
        1e-3,
    ),
    "l2_staged_block": (
        lambda m, n: [randn(m, n, seed=n + 24)],
        lambda m, n: [((m,), F32)],
        lambda x: [torch.sqrt((_d(x) ** 2).sum(1))],
        1e-5,
    ),
    "avgpool3": (
        lambda m, n: [randn(m + 2, n + 2, seed=m + 25)],
        lambda m, n: [((m, n), F32)],
        lambda x: [torch.nn.functional.avg_pool2d(_d(x)[None, None], 3, stride=1)[0, 0]],
        1e-6,
    ),
}
SIZES = [(37, 300), (5, 2101)]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n)


@cache
def _source(schedule: str) -> str:
    return translate_full(PROGRAM.read_text(), filename="membound_forms7.co", schedule=schedule).source


def _code(schedule: str, kernel: str) -> str:
    return _source(schedule).split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


# kernel -> (the counters of its loops along the long axis as written, the reductions auto makes of them)
FOLDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kl_div_rows": (("j",), ("tl.sum(",)),
    "soft_xent": (("j", "j_2"), ("tl.max(", "tl.sum(")),
    "weighted_mean": (("j",), ("tl.sum(",)),
    "masked_softmax_add": (("j", "j_2", "j_3"), ("tl.max(", "tl.sum(")),
    "lse_exp2": (("j", "j_2"), ("tl.max(", "tl.sum(")),
    "softmax_temp_exp2": (("j", "j_2", "j_3"), ("tl.max(", "tl.sum(")),
    "count_value_s32": (("j",), ("tl.sum(",)),
    # (the first position of the smallest value: the minimum, then the least position holding it)
    "argmin_s32": (("j",), ("tl.min(",)),
    "xor_parity": (("j",), ("tl.reduce(",)),
    # (``if (x != first) same = 0;``: the value the last position where the condition holds assigns)
    "row_constant": (("j",), ("tl.max(",)),
    # (the loop over the thread's four rows stays: each row folded inside it)
    "sumsq_rows4": (("j",), ("tl.sum(",)),
    # (the column's two partial maxima: the counter's axis leads the tile)
    "col_max_pairs": (("i",), ("tl.max(",)),
    # (the extent read from the tensor: the row's blocks up to the largest of the program's lanes, each
    # lane masked at its own)
    "max_len_bound": (("j",), ("tl.max(",)),
    "prefix_mean_f16": (("j",), ("tl.sum(",)),
    # (the write loop over cdiv(N, 2) storing 2 j and 2 j + 1 a step: one loop over u = 2 j + k again,
    # schedule/reroll.py, then tiles of the row)
    "l1_normalize_pairs": (("j", "j_2"), ("tl.sum(",)),
}
NOT_YET: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "l2_staged_block": (
        ("c", "k"),
        ("tl.sum(",),
        "the [1, 128] chunk staged by dma.copy is read back as f.data.at(0, k * 32 + t) for k in [4]: four "
        "elements a lane inside a loop, which schedule/forward.py does not forward, so the chunk goes "
        "through scratch and the loops over c and k stay",
    ),
}
# nests over the trailing axes (two nested loops, or one loop over two or three names): one loop over the
# run memory holds them as, where the launcher sees them so (schedule/planes.py): the kernel "<name>_k0_planes"
PLANES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "spatial_mean4": (("h", "w"), ("tl.sum(",)),
    "spatial_max4": (("h", "w"), ("tl.max(",)),
    "group_stats4": (("k", "h", "w"), ("tl.sum(",)),
}
# loops that are not along a long axis: kept as written, correct (checked with the other forms)
KEPT: dict[str, str] = {
    # (the lanes already read along the rows: a window of 9 a lane)
    "avgpool3": "kh",
}


def _assert_folded(kernel: str, counters: tuple[str, ...], reductions: tuple[str, ...]) -> None:
    assert_folded(_code, kernel, counters, reductions)


@pytest.mark.parametrize("kernel", sorted(FOLDS))
def test_auto_folds_each_loop_along_the_row(kernel: str) -> None:
    """Under auto no loop walks the long axis one element a lane a step; a tile reduction does."""
    _assert_folded(kernel, *FOLDS[kernel])


@pytest.mark.parametrize(
    "kernel",
    [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=v[2])) for k, v in sorted(NOT_YET.items())],
)
def test_auto_does_not_fold_yet(kernel: str) -> None:
    _assert_folded(kernel, *NOT_YET[kernel][:2])


@pytest.mark.parametrize("kernel", sorted(PLANES))
def test_auto_folds_each_nest_as_one_run(kernel: str) -> None:
    counters, reductions = PLANES[kernel]
    body = _code("auto", f"{kernel}_k0_planes")
    assert not [c for c in counters if re.search(rf"\bfor {c} in\b", body)], body
    assert all(r in body for r in reductions), body


@pytest.mark.parametrize("kernel", sorted(KEPT))
def test_short_windows_stay_loops(kernel: str) -> None:
    assert re.search(rf"\bfor {KEPT[kernel]} in\b", _code("auto", f"{kernel}_k0"))


def test_every_kernel_is_checked() -> None:
    functions = set(re.findall(r"__co__ void (\w+)\(", PROGRAM.read_text()))
    assert functions == set(CASES)
    assert functions == set(FOLDS) | set(NOT_YET) | set(KEPT) | set(PLANES)
    assert DEVICE is not None
