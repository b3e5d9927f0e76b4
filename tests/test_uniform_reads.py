"""Elements the same for every step of a loop over a row, read inside it (tests/programs/uniform_reads.co):
a row's weight, a bias, a per-row flag, a gathered row's id.  Under ``--schedule auto`` the loop is
folded into a tile axis and such an element is read once for every step (its index does not reach
the new axis, so neither does its mask); that was an internal error ("Mask argument cannot be block
type if pointer argument is not a block") until 2026-12-06.  Each runs under both schedules in the
interpreter against float64 torch on ragged sizes, outputs poisoned with NaN."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, check_forms, form_sizes, randn

PROGRAM = Path(__file__).parent / "programs" / "uniform_reads.co"
F32 = torch.float32


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _ints(n: int, lo: int, hi: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, (n,), generator=g, dtype=torch.int32).to(DEVICE)


def _partials(w: torch.Tensor, x: torch.Tensor) -> list[torch.Tensor]:
    m, n = x.shape
    padded = torch.nn.functional.pad(_d(x), (0, -n % 16))
    return [padded.reshape(m, -1, 16).sum(1) * _d(w)[:, None]]


CASES = {
    "scale_rows": (
        lambda m, n: [randn(m, seed=m + 1), randn(m, n, seed=n + 2)],
        lambda m, n: [((m, n), F32)],
        lambda w, x: [_d(x) * _d(w)[:, None]],
        1e-6,
    ),
    "shift_all": (
        lambda m, n: [randn(m, n, seed=m + 3), randn(2, seed=4)],
        lambda m, n: [((m, n), F32)],
        lambda x, b: [_d(x) - _d(b)[1]],
        1e-6,
    ),
    "rows_where": (
        lambda m, n: [_ints(m, -1, 2, m + 5), randn(m, n, seed=n + 6)],
        lambda m, n: [((m, n), F32)],
        lambda k, x: [torch.where(k[:, None] > 0, _d(x) * 2, -1.0)],
        0.0,
    ),
    "weighted_partials": (
        lambda m, n: [randn(m, seed=m + 7), randn(m, n, seed=n + 8)],
        lambda m, n: [((m, 16), F32)],
        _partials,
        1e-5,
    ),
    "embed_rows": (
        lambda m, n: [_ints(m, 0, 11, m + 9), randn(11, n, seed=n + 10, dtype=torch.float16)],
        lambda m, n: [((m, n), F32)],
        lambda ids, t: [_d(t)[ids.long()]],
        0.0,
    ),
    "scale_row_pairs": (
        lambda m, n: [randn(m, seed=m + 11), randn(m, n, seed=n + 12)],
        lambda m, n: [((m, n), F32)],
        lambda w, x: [_d(x) * _d(w)[:, None] + _d(w)[0]],
        1e-6,
    ),
}
SIZES = [(7, 45), (5, 333)]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n)
