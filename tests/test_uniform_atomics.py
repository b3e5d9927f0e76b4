"""An atomic whose address and value are the same for every thread of the thread levels around it runs
once per thread (every thread runs the statement), not once per program (lift/calls.py ``atomic``:
broadcast to the lanes' shape, padding lanes masked); at block level, once per block."""

from __future__ import annotations

import pytest
import torch
from conftest import REPO
from kernel_util import DEVICE, load_once, randn

PROGRAM = REPO / "tests" / "programs" / "uniform_atomics.co"


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("m", [1, 3, 7])
def test_each_thread_adds_its_own(schedule: str, m: int) -> None:
    mod = load_once(PROGRAM, schedule)
    c = torch.zeros(3, dtype=torch.int32, device=DEVICE)
    mod.uniform(randn(m, 32), c)
    assert c.tolist() == [m * 32 * 10, m * sum(range(32)), m * 5]
    x = randn(m, seed=m)
    s = torch.zeros(2, device=DEVICE)
    n = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    mod.uniform2(x, s, n)
    assert n.tolist() == [m * 4 * 24]
    want = float(x.double().sum()) * 96
    assert abs(float(s[0]) - want) <= 1e-4 * (1 + abs(want)) and float(s[1]) == m
