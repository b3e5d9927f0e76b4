"""Arrays of buffers picked by a run-time slot (tests/programs/buffer_slots.co): hand-written
prefetch into the other of two buffers (``sa[(k + 1) % 2]`` while the MMA reads ``sa[k % 2]``),
synchronous or with futures, a ring of three buffers two tiles ahead, a slot picked per thread
(``rows[(t + 1) % 4].at(j)``) and one picked by a run-time value.  Until 2026-12-06 the first four
were refused ("a part of a buffer that does not start at a multiple of its width", "a view that
depends on the thread index").  Each runs under both schedules in the interpreter on ragged
sizes, outputs poisoned with NaN, against float64 torch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_close, assert_near_max, gemm_tol, load_once, poisoned, randn

PROGRAM = Path(__file__).parent / "programs" / "buffer_slots.co"
SCHEDULES = ["source", "auto"]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("func", ["prefetch_async", "sync_other", "ring3"])
def test_a_gemm_prefetching_into_a_slot_of_an_array(func: str, schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    m, n, k = 70, 45, 100  # four K tiles, the last partly past K: every slot is filled and reused
    a = randn(m, k, dtype=torch.float16, seed=1)
    b = randn(n, k, dtype=torch.float16, seed=2)
    c = poisoned(m, n)
    getattr(mod, func)(a, b, c)
    assert_near_max(c, a.double().cpu() @ b.double().cpu().T, gemm_tol(k), f"{func} ({schedule})")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_gemm_of_one_k_tile_reads_the_first_slot_only(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    a = randn(64, 20, dtype=torch.float16, seed=3)
    b = randn(33, 20, dtype=torch.float16, seed=4)
    c = poisoned(64, 33)
    mod.ring3(a, b, c)
    assert_near_max(c, a.double().cpu() @ b.double().cpu().T, gemm_tol(20), f"ring3, one tile ({schedule})")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_slot_picked_per_thread(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    blocks = 3
    x = randn(blocks * 4 + 1, 16, seed=5)
    out = poisoned(blocks, 4)
    mod.slot_sums(x, out)
    sums = x[: blocks * 4].double().cpu().reshape(blocks, 4, 16).sum(2)
    assert_near_max(out, sums.roll(-1, 1), 1e-6, f"slot sums ({schedule})")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("s", [0, 3])
def test_a_slot_picked_by_a_run_time_value(schedule: str, s: int) -> None:
    mod = load_once(PROGRAM, schedule)
    blocks = 5
    x = randn(2 * blocks, 16, seed=6)
    out = poisoned(blocks, 16)
    mod.pick_row(x, out, s)
    rows = x.double().cpu().reshape(blocks, 2, 16)
    assert_close(out, rows[:, s % 2] + rows[:, (s + 1) % 2].flip(1), atol=1e-6)
