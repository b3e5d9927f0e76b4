"""Running sums read after each step: prefix sums (schedule/foldloops.py, issue 27).
tests/programs/scans.co under both schedules in the interpreter against float64 torch, outputs
poisoned, ragged sizes (rows shorter and longer than a tile, and past the whole-row limit: the blocked
kernel carries the sum across blocks), and what ``--schedule auto`` makes of each form."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import (
    assert_near_max,
    form_rows,
    form_sizes,
    kernel_code,
    load_once,
    poisoned,
    randn,
    recording_launch,
)

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "scans.co"
FUNCS = (
    "row_cumsum",
    "running_mean_f16",
    "positive_ranks",
    "row_cumsum_exclusive",
    "row_drawdown",
    "running_min_positive",
)


def _run(mod: object, fn: str, m: int, n: int) -> list[str]:
    ran, launch = recording_launch()

    seed = m * 7 + n
    if fn == "positive_ranks":
        x = randn(m, n, seed=seed)
        rank, total = poisoned(m, n, dtype=torch.int32), poisoned(m, dtype=torch.int32)
        getattr(mod, fn)(x, rank, total, _launch=launch)
        want = (x.cpu() > 0).long().cumsum(1)
        assert torch.equal(rank.cpu().long(), want) and torch.equal(total.cpu().long(), want[:, -1]), fn
        return ran
    if fn == "running_min_positive":
        x = randn(m, n, dtype=torch.int32, seed=seed)
        y = poisoned(m, n, dtype=torch.int32)
        getattr(mod, fn)(x, y, _launch=launch)
        pos = torch.where(x.cpu() > 0, x.cpu(), 1000000)
        assert torch.equal(y.cpu(), torch.cummin(pos, 1).values), fn
        return ran
    dtype = torch.float16 if fn == "running_mean_f16" else torch.float32
    x = randn(m, n, dtype=dtype, seed=seed)
    y = poisoned(m, n, dtype=dtype)
    getattr(mod, fn)(x, y, _launch=launch)
    xd = x.double().cpu()
    ref = {
        "row_cumsum": xd.cumsum(1),
        "running_mean_f16": xd.cumsum(1) / torch.arange(1, n + 1, dtype=torch.float64),
        "row_cumsum_exclusive": xd.cumsum(1) - xd,
        "row_drawdown": torch.cummax(xd, 1).values - xd,
    }[fn]
    assert_near_max(y, ref, 2e-3 if dtype == torch.float16 else 1e-5, f"{fn} at {m} x {n}")
    return ran


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes([(5, 77), (70, 300)]))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    mod = load_once(PROGRAM, schedule)
    for fn in FUNCS:  # (kernel_util.form_rows: row_cumsum_exclusive takes 64 rows a program)
        _run(mod, fn, form_rows(fn, schedule, m, n, {"row_cumsum_exclusive": 67}), n)


def test_rows_past_the_registers_carry_the_sum_across_blocks() -> None:
    mod = load_once(PROGRAM, "auto")
    assert _run(mod, "row_cumsum", 2, 17000) == ["row_cumsum_k0_blocked"]
    assert _run(mod, "positive_ranks", 2, 17000) == ["positive_ranks_k0_blocked"]
    assert _run(mod, "row_drawdown", 2, 17000) == ["row_drawdown_k0_blocked"]


def test_what_auto_makes_of_each_form() -> None:
    text = translate_full(PROGRAM.read_text(), filename="scans.co", schedule="auto").source
    for fn, acc in (("row_cumsum", "acc"), ("running_mean_f16", "acc"), ("positive_ranks", "cnt")):
        body = kernel_code(text, f"{fn}_k0")  # no loop over the row: a prefix sum of the tile
        assert "forjin" not in body and f"{acc}_run={acc}[:,None]+tl.cumsum({acc}_terms,1)" in body, fn
    assert "forjinrange(0,N):" in kernel_code(text, "row_cumsum_exclusive_k0")  # stored before: as written
    # a running maximum and minimum: tl.associative_scan of the tile with the module's tl.maximum / minimum
    for fn, acc, op in (("row_drawdown", "peak", "max"), ("running_min_positive", "low", "min")):
        body = kernel_code(text, f"{fn}_k0")
        assert "forjin" not in body and f"{acc}_run=tl.{op}imum({acc}[:,None],_scan_{op}({acc}_terms,1))" in body, fn
    assert "tl.associative_scan(x,axis,_pick_max)" in text.replace(" ", "")
