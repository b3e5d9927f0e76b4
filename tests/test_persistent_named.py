"""Persistent loops with a named tile index and a launch-time trip count
(tests/programs/persistent_named.co).  Until 2026-12-06 ``--schedule auto`` failed on them with an
internal error: folding the loop into a tile axis dropped the bounds of ``tile = it # p``, and the
verifier could not show the index non-negative.  Both schedules, ragged sizes, poisoned outputs,
against float64 torch."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_util import assert_close, assert_near_max, load_once, poisoned, randn

PROGRAM = Path(__file__).parent / "programs" / "persistent_named.co"
SCHEDULES = ["source", "auto"]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_tiles_walked_by_three_programs(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(301, seed=1)
    y = poisoned(301)
    mod.tripled(x, y)
    assert_close(y, (x * 3).double().cpu())  # one f32 product, as the kernel computes


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_row_sums_of_tiles_walked_by_five_programs(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(45, 13, seed=2)
    s = poisoned(45)
    mod.tile_row_sums(x, s)
    assert_near_max(s, x.double().cpu().sum(1), 1e-6, f"tile row sums ({schedule})")
