"""Online softmax statistics (schedule/rescaled.py, issue 27): tests/programs/online_softmax.co run
under both schedules in the interpreter against float64 torch on random data, outputs poisoned,
ragged sizes (rows shorter and longer than a tile, and past the whole-row limit: the blocked kernel),
and what ``--schedule auto`` makes of each form: the running maximum and the rescaled sum lifted into
one tile fold, the forms that are not that pair kept as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import (
    DEVICE,
    assert_near_max,
    form_rows,
    form_sizes,
    kernel_code,
    load_once,
    loop_as_written,
    poisoned,
    randn,
    recording_launch,
)

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "online_softmax.co"
FUNCS = ("softmax_online", "weighted_lse_f16", "lse_branchy", "late_scale")


def _run(mod: object, fn: str, m: int, n: int) -> list[str]:
    """``fn`` at ``m`` x ``n`` against float64 torch; the kernels it launched."""
    ran, launch = recording_launch()

    seed = m * 17 + n
    x = randn(m, n, dtype=torch.float16 if fn == "weighted_lse_f16" else torch.float32, seed=seed) * 3
    xd = x.double().cpu()
    if fn == "softmax_online":
        y = poisoned(m, n)
        getattr(mod, fn)(x, y, _launch=launch)
        got, ref, tol = y, torch.softmax(xd, 1), 1e-5
    elif fn == "weighted_lse_f16":
        w = (torch.rand(n, generator=torch.Generator().manual_seed(n)) + 0.1).to(torch.float16).to(DEVICE)
        out = poisoned(m)
        getattr(mod, fn)(x, w, out, _launch=launch)
        got, ref, tol = out, torch.logsumexp(xd + w.double().cpu().log(), 1), 1e-5
    elif fn == "lse_branchy":
        out = poisoned(m)
        getattr(mod, fn)(x, out, _launch=launch)
        got, ref, tol = out, torch.logsumexp(xd, 1), 1e-5
    else:  # each step's term against that step's own running maximum
        out = poisoned(m)
        getattr(mod, fn)(x, out, _launch=launch)
        got, ref, tol = out, (xd - xd.cummax(1).values).exp().sum(1), 1e-5
    assert_near_max(got, ref, tol, f"{fn} at {m} x {n}")
    return ran


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes([(5, 77), (70, 300)]))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    mod = load_once(PROGRAM, schedule)
    for fn in FUNCS:  # (kernel_util.form_rows: late_scale takes 64 rows a program)
        _run(mod, fn, form_rows(fn, schedule, m, n, {"late_scale": 67}), n)


def test_rows_past_the_registers_fold_in_blocks() -> None:
    """A row longer than the whole-row kernel holds: the blocked kernel, each block's maximum and
    rescaled sum folded into the running pair."""
    mod = load_once(PROGRAM, "auto")
    assert _run(mod, "softmax_online", 3, 17000) == ["softmax_online_k0_blocked"]
    assert _run(mod, "weighted_lse_f16", 2, 33000) == ["weighted_lse_f16_k0_blocked"]


def test_a_row_of_minus_infinity_and_all_masked_lanes() -> None:
    """Rows past M never see an element (their pair stays at -inf, 0: the scale is 1, no NaN); a
    row of -inf gives what the running form gives (exp(-inf - -inf): NaN in both)."""
    mod = load_once(PROGRAM, "auto")
    x = randn(3, 40, seed=3)
    x[1] = float("-inf")
    y = poisoned(3, 40)
    mod.softmax_online(x, y)
    assert torch.allclose(y[0].double().cpu(), torch.softmax(x[0].double().cpu(), 0), rtol=1e-5, atol=1e-7)
    assert torch.isnan(y[1]).all()
    as_written = poisoned(3, 40)
    load_once(PROGRAM, "source").softmax_online(x, as_written)
    assert torch.isnan(as_written[1]).all()


def test_what_auto_makes_of_each_form() -> None:
    text = translate_full(PROGRAM.read_text(), filename="online_softmax.co", schedule="auto").source
    for fn in ("softmax_online", "weighted_lse_f16"):  # the pair folded: no loop over the row left
        body = kernel_code(text, f"{fn}_k0")
        assert "forjin" not in body and "m_new=tl.maximum(m,tl.max(" in body and "s=s*tl.where(m==m_new,1.0," in body
    body = kernel_code(text, "softmax_online_k0")  # the row read once: the write reuses the statistics' load
    assert body.count("tl.load(x_ptr") == 1
    assert "tl.exp2((m-m_new)*1.44269504)" in kernel_code(text, "weighted_lse_f16_k0")
    # a branch for a new maximum: each branch is the pair's update at its own maximum (schedule/branchmax.py)
    body = kernel_code(text, "lse_branchy_k0")
    assert "forjin" not in body and "tl.max(" in body and "s=s*tl.where(" in body
    # not the pair (each step's own maximum): the loop as written
    assert loop_as_written(kernel_code(text, "late_scale_k0"), "j", "N")
