"""Tiles of windows smaller than their tensor (tests/programs/nested_windows.co): a tile that
reaches past its window reads zero there and its writes there are dropped, as past the tensor
(LANGUAGE.md 14.3, lift/views.py ``clipped``).  Until 2026-12-06 such a tile was bounded only by its
tensor: a store wrote past the window, a load read the data beside it, and a batched GEMM over
batches stacked in one tensor overwrote the next batch's rows.  Each form runs under both schedules
in the interpreter on ragged sizes, outputs poisoned with NaN (or a sentinel where the form must
leave them), against float64 torch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, load_once, poisoned, randn

PROGRAM = Path(__file__).parent / "programs" / "nested_windows.co"
SCHEDULES = ["source", "auto"]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_tile_of_a_window_drops_writes_past_it(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    m, n, w = 21, 19, 40
    x = randn(m, n, seed=1)
    out = torch.full((m, w), 7.0, device=DEVICE)
    mod.into_left(x, out)
    want = torch.full((m, w), 7.0, dtype=torch.float64)
    want[:, :n] = x.double().cpu()
    assert torch.equal(out.double().cpu(), want), "writes past the window's 19 columns"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_tile_of_a_window_reads_zero_past_it(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    m, w, k = 13, 30, 11  # tiles of 8 columns: the second reaches columns 11..15 of x's 30
    x = randn(m, w, seed=2)
    out = poisoned(m, w)
    mod.from_left(x, out, k)
    want = torch.zeros(m, 16, dtype=torch.float64)
    want[:, :k] = x[:, :k].double().cpu()
    assert torch.equal(out[:, :16].double().cpu(), want)
    assert out[:, 16:].isnan().all(), "no tile covers columns past 16"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_per_batch_tiles_read_their_batch_only(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    b, m, n = 3, 21, 10  # two 16-row tiles a batch: the second holds 5 of the batch's rows
    x = randn(b * m, n, seed=3)
    out = poisoned(b, 16, 16)
    mod.batch_tile_sums(x, out, m)
    rows = torch.nn.functional.pad(x.double().cpu().reshape(b, m, n).sum(2), (0, 32 - m))  # zero past the batch
    want = rows.reshape(b, 2, 16)
    assert_near_max(out[:, :2], want, 1e-6, f"batch tile sums ({schedule})")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_gemm_over_stacked_batches_writes_each_batch_once(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    bt, m, n, k = 3, 70, 72, 40  # 70 rows a batch: the second 64-row tile of each batch is ragged
    a = randn(bt * m, k, seed=4, dtype=torch.float16)
    b = randn(bt, n, k, seed=5, dtype=torch.float16)
    c = poisoned(bt * m, n)
    mod.stacked_gemm(a, b, c, m)
    ad, bd = a.double().cpu(), b.double().cpu()
    want = torch.cat([ad[i * m : (i + 1) * m] @ bd[i].T for i in range(bt)])
    assert_near_max(c, want, 2e-3, f"stacked GEMM ({schedule})")
