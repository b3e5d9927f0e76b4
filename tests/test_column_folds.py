"""Online softmax, argmax and prefix sums written one thread per column (tests/programs/column_folds.co):
the counter's axis leads the tile; folded whole where the column fits the registers, kept as written in
blocks (the pairs and running sums are not folded element-wise along a leading axis). Both schedules in
the interpreter against float64 torch, outputs poisoned, ragged sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, load_once, loop_as_written, poisoned, recording_launch

PROGRAM = Path(__file__).parent / "programs" / "column_folds.co"


def _check(mod: object, m: int, n: int) -> list[str]:
    ran, launch = recording_launch()

    g = torch.Generator().manual_seed(m * 5 + n)
    x = torch.randint(-9, 9, (m, n), generator=g).float().to(DEVICE)  # ties for the argmax
    xd = x.double().cpu()
    y = poisoned(m, n)
    mod.col_softmax_online(x, y, _launch=launch)
    assert float((y.double().cpu() - torch.softmax(xd, 0)).abs().max()) <= 1e-6
    at = poisoned(n, dtype=torch.int32)
    mod.col_argmax(x, at, _launch=launch)
    assert torch.equal(at.cpu().long(), torch.argmax(xd, 0))  # the first maximum of each column
    y = poisoned(m, n)
    mod.col_cumsum(x, y, _launch=launch)
    assert float((y.double().cpu() - xd.cumsum(0)).abs().max()) <= 1e-4
    return ran


@pytest.mark.parametrize(
    ("schedule", "m", "n"),
    [
        ("source", 37, 70),
        ("auto", 37, 70),
        # (the source schedule runs the same kernel at both sizes, its loop 300 steps long: the long tier)
        pytest.param("source", 300, 20, marks=pytest.mark.long),
        ("auto", 300, 20),  # columns longer than the registers hold: in blocks
    ],
)
def test_column_forms_in_both_schedules(schedule: str, m: int, n: int) -> None:
    ran = _check(load_once(PROGRAM, schedule), m, n)
    if schedule == "auto" and m * 64 <= 16384:  # the whole column in registers: folded
        assert ran == ["col_softmax_online_k0", "col_argmax_k0", "col_cumsum_k0"]


def test_what_auto_makes_of_the_whole_columns() -> None:
    from kernel_util import kernel_code

    from croq2triton.api import translate_full

    text = translate_full(PROGRAM.read_text(), filename="column_folds.co", schedule="auto").source
    assert "m_new=tl.maximum(m,tl.max(" in kernel_code(text, "col_softmax_online_k0")
    assert "best_better=best_block>best" in kernel_code(text, "col_argmax_k0")
    assert "tl.cumsum(acc_terms,0)" in kernel_code(text, "col_cumsum_k0")
    for fn in ("col_softmax_online", "col_argmax", "col_cumsum"):  # in blocks: the loop as written
        assert loop_as_written(kernel_code(text, f"{fn}_k0_blocked"), "i", "M"), fn
