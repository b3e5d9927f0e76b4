"""Per-thread copies whose views use a value of the thread bound to a name first
(tests/programs/named_lane_index.co: ``int r = p # t; .. x.subspan(1, 8).at(r, c) => local``).
Until 2026-12-06 the inline form (``.at(p # t, c)``) translated and the named one was refused ("a
view that depends on the thread index"): the placement and the lifting saw only thread indices,
not values computed from them.  Each runs under both schedules in the interpreter on ragged
sizes, outputs poisoned with NaN, against float64 torch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_close, assert_near_max, load_once, poisoned, randn

import croq2triton

PROGRAM = Path(__file__).parent / "programs" / "named_lane_index.co"
SCHEDULES = ["source", "auto"]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_row_sums_through_a_named_row_index(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(45, 37, seed=1)  # the last 8-element piece of each row reaches past column 37: zero
    s = poisoned(45)
    mod.row_sums(x, s)
    assert_near_max(s, x.double().cpu().sum(1), 1e-6, f"row sums ({schedule})")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_window_from_derived_names_in_and_out(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(13, 32, seed=2)  # 52 pieces, blocks of 16 threads: the last block's 12 threads past M
    y = poisoned(13, 32)
    mod.doubled(x, y)
    assert_close(y, 2 * x.double().cpu())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_strided_view_placed_by_each_thread(schedule: str, tmp_path: Path) -> None:
    # (refused until 2026-12-07: each lane reads its own elements, at offsets in strides: 16 * r + 2 * i)
    src = tmp_path / "evens.co"
    src.write_text(
        """__co__ void evens(global f32 [N] x, global f32 [R] s) {
  parallel p by cdiv(R, 8) : block, c by 8 : thread {
    if (p # c < R) {
      w = x.view(4 : 2).from((p # c) * 8);
      f32 a = 0.0f;
      foreach i in [4] a += w.at(i);
      s.at(p # c) = a;
    }
  }
}
"""
    )
    mod = croq2triton.load(src, schedule=schedule)
    x = randn(16 * 12 + 5, seed=3)  # the last thread's last element lies past the tensor: zero
    s = poisoned(13)
    mod.evens(x, s)
    padded = torch.cat([x.double().cpu(), torch.zeros(11, dtype=torch.float64)])
    assert_close(s, padded.view(13, 16)[:, 0:8:2].sum(1), atol=1e-6)
