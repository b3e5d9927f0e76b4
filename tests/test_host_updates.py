"""Host scalars given a constant and updated in a loop or a branch of host code (LANGUAGE.md 4.1,
4.3, 7.4; lift/hostupdates.py): the loop's next iteration, the code after it and the kernels
launched in and after it read the updated value (tests/programs/host_updates.co).  Before, the
launcher folded the scalar to its constant: ``f32 acc = 0.0f; foreach i in [8] acc = acc + x.at(i);``
read 0 after the loop, a ``while`` on such an int never ended, and ``acc += y;`` was refused."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, load_once

PROGRAM = Path(__file__).parent / "programs" / "host_updates.co"
SCHEDULES = ["source", "auto"]


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_scalars_updated_in_loops_and_branches(schedule: str, sign: float) -> None:
    mod = load_once(PROGRAM, schedule)
    xs = [sign * 0.75, 0.1, 2.5, -1.25, 3.0, 0.3, -0.7, 1.0]
    x = torch.tensor(xs, dtype=torch.float32, device=DEVICE)
    o = torch.full((12,), float("nan"), device=DEVICE)
    mod.sums(x, o)
    fx = [f32(v) for v in xs]
    acc, sums = 0.0, []
    for v in fx:
        acc = f32(acc + v)
        sums.append(acc)
    pick = 11 if sign > 0 else -11
    want = [
        acc,  # the last write inside the loop
        f32(sums[3] + 7),  # a kernel inside the loop (i == 3): acc and count of that iteration
        acc,  # after the loop
        29,  # 1 + 0 + 1 + ... + 7
        f32(acc * 2),  # a kernel after the loop
        87,
        243.0,  # while (d < 100) d = d * 3: 3^5
        5,
        pick,
        1.0 if sign > 0 else 0.0,
        0.75,  # assigned in a 'with' block
        pick + 0.75,
    ]
    assert o.cpu().tolist() == want


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [0, 1, 4])
def test_compound_increment_and_nested_updates(schedule: str, n: int) -> None:
    mod = load_once(PROGRAM, schedule)
    o = torch.full((6,), -12345, dtype=torch.int32, device=DEVICE)
    mod.counters(o, n)
    total = sum(sum(c + i for c in range(3)) for i in range(n))
    assert o.cpu().tolist() == [7, 11, total, 8, total + 8, 1]
