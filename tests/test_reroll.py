"""Loops unrolled by hand (tests/programs/unrolled.co, schedule/reroll.py): under ``--schedule auto``
the loop each was unrolled from, where the proof holds; the results against float64 torch in both
schedules on ragged sizes (odd extents, so that each tail runs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from kernel_util import check_forms, form_sizes, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "unrolled.co"
F32 = torch.float32


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _pairs(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[1] // 2 * 2
    return _d(x)[:, 0:n:2].sum(1) - _d(x)[:, 1:n:2].sum(1)


Inputs = Callable[[int, int], list[torch.Tensor]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "rows_dot2": (
        lambda m, n: [randn(m, n, seed=1), randn(m, n, seed=2)],
        lambda m, n: [((m,), F32)],
        lambda a, b: [(_d(a) * _d(b)).sum(1)],
        1e-5,
    ),
    "row_max8": (lambda m, n: [randn(m, n, seed=3)], lambda m, n: [((m,), F32)], lambda x: [_d(x).amax(1)], 0.0),
    "weighted_pairs": (lambda m, n: [randn(m, n, seed=4)], lambda m, n: [((m,), F32)], lambda x: [_pairs(x)], 1e-5),
    "col_sums2": (lambda m, n: [randn(m, n, seed=5)], lambda m, n: [((n,), F32)], lambda x: [_d(x).sum(0)], 1e-5),
    "col_sums2_f16": (
        lambda m, n: [randn(m, n, dtype=torch.float16, seed=6)],
        lambda m, n: [((n,), F32)],
        # (each pair added in f16, rounded, then summed in f32)
        lambda x: [_d(x[0 : x.shape[0] // 2 * 2 : 2] + x[1 : x.shape[0] // 2 * 2 : 2]).sum(0)],
        1e-5,
    ),
}


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes([(5, 77), (37, 301)]))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n, many={})


def _code(kernel: str) -> str:
    code = translate_full(PROGRAM.read_text(), filename="unrolled.co", schedule="auto").source
    return code.split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


def test_unrolled_folds_read_one_tile_a_tensor() -> None:
    """Two tensors two a step, a maximum eight a step in another order, a column two rows a step: one
    load of each tensor a step of the loop they were unrolled from."""
    assert "schedule/reroll.py" in _code("rows_dot2_k0") and _code("rows_dot2_k0").count("tl.load(") == 4
    body = _code("row_max8_k0")
    assert "schedule/reroll.py" in body and body.count("tl.load(") == 2
    assert "schedule/reroll.py" in _code("col_sums2_k0_blocked")


def test_terms_that_differ_stay_as_written() -> None:
    """Terms weighted differently are not one loop; f16 pairs summed in f16 first would round
    differently as one loop."""
    assert "schedule/reroll.py" not in _code("weighted_pairs_k0")
    assert "schedule/reroll.py" not in _code("col_sums2_f16_k0_blocked")
