"""The best value of a row and where it is (schedule/argfold.py, issue 27): tests/programs/argfold.co
under both schedules in the interpreter against torch on random data with ties and NaNs, outputs
poisoned, ragged sizes (rows shorter and longer than a tile, past the whole-row limit: the blocked
kernel), and what ``--schedule auto`` makes of each form."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import (
    DEVICE,
    form_rows,
    form_sizes,
    kernel_code,
    load_once,
    loop_as_written,
    poisoned,
    recording_launch,
)

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "argfold.co"
FUNCS = ("row_argmax", "row_argmin_ids_f16", "row_argmax_last")


def _data(m: int, n: int, dtype: torch.dtype, seed: int, nans: bool = True) -> torch.Tensor:
    """Small integers (many ties), infinities, and a few NaNs (not where the source folds with
    ``__min``: NaN there is what ``tl.minimum`` makes of it, which differs between the interpreter
    and the GPU)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-20, 20, (m, n), generator=g).to(torch.float32)
    x[(torch.rand(m, n, generator=g) < 0.02) & nans] = float("nan")
    x[torch.rand(m, n, generator=g) < 0.01] = float("inf")
    x[torch.rand(m, n, generator=g) < 0.01] = float("-inf")
    return x.to(dtype).to(DEVICE)


def _first(x: torch.Tensor, largest: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The best value of each row ignoring NaNs and its first position; -1 / the start value where no
    element is better than the start (every element NaN, or all at the start value)."""
    xd = x.double().cpu()
    fill = float("-inf") if largest else float("inf")
    clean = torch.where(torch.isnan(xd), torch.full_like(xd, fill), xd)
    best = clean.max(1).values if largest else clean.min(1).values
    hit = clean == best[:, None]
    pos = torch.where(hit, torch.arange(x.shape[1]).expand_as(hit), torch.full_like(hit, x.shape[1], dtype=torch.long))
    return best, pos.min(1).values


def _run(mod: object, fn: str, m: int, n: int) -> list[str]:
    ran, launch = recording_launch()

    seed = m * 13 + n
    out = poisoned(m, dtype=torch.int32)
    if fn == "row_argmax":
        x = _data(m, n, torch.float32, seed)
        getattr(mod, fn)(x, out, _launch=launch)
        best, pos = _first(x, largest=True)
        want = torch.where(best > float("-inf"), pos, torch.zeros_like(pos))  # nothing better than -inf: 0
    elif fn == "row_argmin_ids_f16":
        x = _data(m, n, torch.float16, seed, nans=False)
        ids = (torch.randperm(n, generator=torch.Generator().manual_seed(n)) * 3 + 7).to(torch.int32).to(DEVICE)
        lo = poisoned(m)
        getattr(mod, fn)(x, ids, out, lo, _launch=launch)
        best, pos = _first(x, largest=False)
        want = torch.where(best < float("inf"), ids.cpu().long()[pos.clamp(max=n - 1)], torch.full_like(pos, -1))
        got_lo = lo.double().cpu()
        assert torch.equal(got_lo[~torch.isnan(got_lo)], best[~torch.isnan(got_lo)]), fn
    else:
        x = _data(m, n, torch.float32, seed)
        getattr(mod, fn)(x, out, _launch=launch)
        xd = x.double().cpu()
        clean = torch.where(torch.isnan(xd), torch.full_like(xd, float("-inf")), xd)
        best = clean.max(1).values
        hit = (clean == best[:, None]) & ~torch.isnan(xd)
        last = (
            torch.where(hit, torch.arange(n).expand_as(hit), torch.full_like(hit, -1, dtype=torch.long)).max(1).values
        )
        want = torch.where(last >= 0, last, torch.zeros_like(last))
    got = out.cpu().long()
    assert torch.equal(got, want.long()), f"{fn} at {m} x {n}: {got.tolist()} != {want.tolist()}"
    return ran


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes([(5, 77), (70, 300)]))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    mod = load_once(PROGRAM, schedule)
    for fn in FUNCS:  # (kernel_util.form_rows: a row a program, each folded)
        _run(mod, fn, form_rows(fn, schedule, m, n, {}), n)


def test_rows_past_the_registers_fold_in_blocks() -> None:
    """Rows longer than the whole-row kernel holds: the blocked kernels; the first best position
    across blocks (ties between blocks keep the earlier block's), the last for ``>=`` (the later's)."""
    mod = load_once(PROGRAM, "auto")
    assert _run(mod, "row_argmax", 3, 17000) == ["row_argmax_k0_blocked"]
    assert _run(mod, "row_argmin_ids_f16", 2, 33000) == ["row_argmin_ids_f16_k0_blocked"]
    assert _run(mod, "row_argmax_last", 3, 17000) == ["row_argmax_last_k0_blocked"]


def test_what_auto_makes_of_each_form() -> None:
    text = translate_full(PROGRAM.read_text(), filename="argfold.co", schedule="auto").source
    for fn in ("row_argmax", "row_argmin_ids_f16"):  # the pair folded: no loop over the row left
        body = kernel_code(text, f"{fn}_k0")
        assert "forjin" not in body and "best_block=tl." in body and "best_better=best_block" in body, fn
    assert "best_better=best_block>best" in kernel_code(text, "row_argmax_k0")
    assert "best_better=best_block<best" in kernel_code(text, "row_argmin_ids_f16_k0")
    # >=: the last position of the maximum, its own fold (the block's last best position; a later block as
    # good as the best so far takes its position)
    last = kernel_code(text, "row_argmax_last_k0")
    assert not loop_as_written(last, "j", "N") and "best_better=(best_block>=best)&(at_block>" in last


def test_an_index_the_counter_itself_is_the_blocks_position() -> None:
    """Where the index kept beside the best value is the counter (or integer arithmetic of it), its value
    at the block's best position is that arithmetic at the position: no second reduction over the block to
    pick it (schedule/foldloops.py ``pick``); an index read from a tensor there is still picked by one."""
    text = translate_full(PROGRAM.read_text(), filename="argfold.co", schedule="auto").source
    for fn in ("row_argmax_k0", "row_argmax_last_k0"):
        body = kernel_code(text, fn)
        assert "at=tl.where(best_better,at_block,at)" in body, fn
    ids = kernel_code(text, "row_argmin_ids_f16_k0")
    assert "tl.sum(tl.where(" in ids  # (ids.at(j): the element at the position, read by a reduction)
