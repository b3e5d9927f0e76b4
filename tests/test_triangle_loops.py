"""Loops whose extent depends on an enclosing loop's index with a constant bound
(tests/programs/triangle_loops.co: ``foreach p in [7] { foreach i in [7 - p] .. }``, a bubble sort
of each thread's 8 values in a local array).  Until 2026-12-06 ``check`` refused them: it evaluated
``p`` as its bound 7 and called the extent ``7 - p`` 0.  Both schedules, in the interpreter, on
ragged row counts, against torch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_close, assert_near_max, load_once, poisoned, randn

PROGRAM = Path(__file__).parent / "programs" / "triangle_loops.co"
SCHEDULES = ["source", "auto"]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_bubble_sort_in_a_local_array(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(37, 8, seed=1)
    y = poisoned(37, 8)
    mod.sort8(x, y)
    assert_close(y, x.double().cpu().sort(1).values)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_triangle_of_each_row(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(21, 8, seed=2)
    y = poisoned(21)
    mod.tri(x, y)
    weights = torch.tensor([7 - i for i in range(7)] + [0], dtype=torch.float64)
    assert_near_max(y, x.double().cpu() @ weights, 1e-6, f"triangle sums ({schedule})")
