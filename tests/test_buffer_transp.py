"""Transposing copies between buffers (tests/programs/buffer_transp.co): ``dma.transp<1, 0> s.data
=> local`` permutes the source tile's axes into the new buffer (LANGUAGE.md 7.8).  Until 2026-12-06
refused ("a transposing copy between buffers").  Both schedules, ragged sizes, poisoned outputs,
against torch."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_util import assert_close, load_once, poisoned, randn

PROGRAM = Path(__file__).parent / "programs" / "buffer_transp.co"
SCHEDULES = ["source", "auto"]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_2d_tile_transposed_between_buffers(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(21, 10, seed=1)
    y = poisoned(10, 21)
    mod.transposed(x, y)
    assert_close(y, x.double().cpu().T)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_3d_tile_with_its_axes_moved(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(5, 7, 4, seed=2)
    y = poisoned(4, 5, 7)
    mod.rolled(x, y)
    assert_close(y, x.double().cpu().permute(2, 0, 1))
