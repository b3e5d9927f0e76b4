"""Issue 28 (part G): copies, views, buffers, index tuples and host code that valid kernels use and
we refused (tests/programs/breadth_g.co), each run in both schedules on ragged sizes with
NaN-poisoned outputs and compared with float64 torch.

* a ``tma.copy.swiz<N>`` whose box rows are wider than the swizzle span (a hardware box would be
  split; the swizzle never changes what is copied): masked accesses with a warning, not a refusal;
  the same names declared in two warp roles (``row = r`` in each: one name assigned twice in the
  kernel) no longer fail the IR verifier, which now sees through an assignment of program ids.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_close, load_once, poisoned, randn

PROGRAM = Path(__file__).parent / "programs" / "breadth_g.co"
SCHEDULES = ["source", "auto"]


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("b", "s"), [(2, 37), (3, 5)])
def test_a_box_wider_than_its_swizzle_span(schedule: str, b: int, s: int) -> None:
    x, y = randn(b, s, 64), poisoned(b, s, 64)
    _module(schedule).wide_swizzle(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double() * 2 + 1, atol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("b", "s"), [(2, 19), (1, 8)])
def test_names_declared_in_two_roles(schedule: str, b: int, s: int) -> None:
    x, y = randn(b, s, 32), poisoned(b, s, 32)
    _module(schedule).twice_named(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double())
