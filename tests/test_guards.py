"""Accesses under guards that compare the contiguous index with a lane's run-time value
(tests/programs/guards.co): a lower and an upper triangle, a row's own length, a band, a row's
tail.  Each runs under both schedules in the interpreter against float64 torch on ragged sizes,
outputs poisoned with NaN, lengths past both ends of the row among them; under auto the guarded
loads read whole 16-byte groups (their values masked again exactly) and if / else stores are one
store (schedule/vecmasks.py), which is checked on the generated code."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, check_forms, form_sizes, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "guards.co"
F32 = torch.float32
H = torch.float16


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _lengths(m: int, n: int, seed: int) -> torch.Tensor:
    """Lengths from below 0 to past the row, the ends among them."""
    g = torch.Generator().manual_seed(seed)
    out = torch.randint(-3, n + 5, (m,), generator=g, dtype=torch.int32)
    out[: min(m, 4)] = torch.tensor([0, n, -2, n + 9], dtype=torch.int32)[: min(m, 4)]
    return out.to(DEVICE)


def _cols(m: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.arange(m, device=DEVICE)[:, None], torch.arange(n, device=DEVICE)[None, :]


def _tril(x: torch.Tensor) -> list[torch.Tensor]:
    r, c = _cols(*x.shape)
    return [torch.where(c <= r, _d(x), 0.0)]


def _softmax_len(x: torch.Tensor, n: torch.Tensor) -> list[torch.Tensor]:
    _, c = _cols(*x.shape)
    keep = c < n.long()[:, None]
    y = torch.softmax(_d(x).masked_fill(~keep, float("-inf")), 1)
    return [torch.where(keep, y, 0.0).nan_to_num(0.0)]  # a row of no values: all zero (0 / 0 stored nowhere)


def _band(x: torch.Tensor) -> list[torch.Tensor]:
    r, c = _cols(*x.shape)
    return [torch.where((c >= r - 3) & (c <= r + 3), _d(x), 0.0).sum(1)]


def _triu_scale(x: torch.Tensor, a: float) -> list[torch.Tensor]:
    r, c = _cols(*x.shape)
    return [torch.where(r < c, _d(x) * a, _d(x))]


def _tail_means(x: torch.Tensor, k: torch.Tensor) -> list[torch.Tensor]:
    _, c = _cols(*x.shape)
    kk = k.long()[:, None]
    s = torch.where(c >= x.shape[1] - kk, _d(x), 0.0).sum(1)
    return [s / k.clamp(min=1).double()]


CASES = {
    "tril": (lambda m, n: [randn(m, n, seed=m + 1)], lambda m, n: [((m, n), F32)], _tril, 0.0),
    "softmax_len": (
        lambda m, n: [randn(m, n, seed=n + 2), _lengths(m, n, m + 3)],
        lambda m, n: [((m, n), F32)],
        _softmax_len,
        1e-5,
    ),
    "band_sums_f16": (
        lambda m, n: [randn(m, n, seed=m + 4, dtype=H)],
        lambda m, n: [((m,), F32)],
        _band,
        1e-5,
    ),
    "triu_scale_f16": (
        lambda m, n: [randn(m, n, seed=n + 5, dtype=H), 1.75],
        lambda m, n: [((m, n), H)],
        _triu_scale,
        1e-3,
    ),
    "tail_means": (
        lambda m, n: [randn(m, n, seed=m + 6), _lengths(m, n, n + 7)],
        lambda m, n: [((m,), F32)],
        _tail_means,
        1e-5,
    ),
}
SIZES = [(37, 101), (70, 300)]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_guarded_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n, many={"tril": 67, "triu_scale_f16": 67})


def _source(schedule: str) -> str:
    return translate_full(PROGRAM.read_text(), filename="guards.co", schedule=schedule).source


def test_auto_rounds_guarded_loads_and_merges_if_else_stores() -> None:
    auto, source = _source("auto"), _source("source")
    # the triangle's guard rounded to 4 f32 (8 f16) elements, the value masked again exactly
    assert "(r + 4) // 4 * 4" in auto and "x_val = _oob_fill(tl.where(mask, x_val_vec, 0.0), mask)" in auto
    assert "c >= (r + 1) // 8 * 8" in auto  # the f16 strict upper triangle (r < c)
    # a loaded length, kept non-negative before rounding; the tail's lower end rounded down
    assert "(tl.maximum(n[:, None], 0) + 3) // 4 * 4" in auto
    assert "tl.maximum(N - k[:, None], 0) // 4 * 4" in auto
    # if / else stores of one element: one store of a select under the bounds alone
    assert "tl.where(c <= r, x_val, 0.0)" in auto
    assert "tl.where(r < c, (x_val.to(tl.float32) * a).to(tl.float16), x_val_2)" in auto
    # the source schedule keeps the accesses as written
    assert "_vec" not in source and "_both" not in source
