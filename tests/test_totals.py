"""Lane partials read only as totals (schedule/totals.py, issue 27): tests/programs/totals.co run
under both schedules in the interpreter against float64 torch on random data, outputs poisoned,
ragged sizes (rows shorter than the threads, longer, past the whole-row limit: the blocked kernels),
and what ``--schedule auto`` makes of each form."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, form_sizes, kernel_code, load_once, poisoned, randn, recording_launch

from croq2triton.api import translate_full
from croq2triton.runtime import launch as rt

PROGRAM = Path(__file__).parent / "programs" / "totals.co"


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


def _run(mod: object, fn: str, m: int, n: int) -> list[str]:
    """``fn`` at ``m`` x ``n`` checked against float64 torch; the kernels it launched."""
    ran, launch = recording_launch()

    seed = m * 31 + n
    if fn == "row_sums_i32":
        x = randn(m, n, dtype=torch.int32, seed=seed)
        s = poisoned(m, dtype=torch.int32)
        getattr(mod, fn)(x, s, _launch=launch)
        assert torch.equal(s.cpu().long(), x.cpu().long().sum(1)), fn  # integer sums are exact
        return ran
    x = randn(m, n, dtype=torch.float16 if fn == "row_min_f16" else torch.float32, seed=seed)
    s = poisoned(m)
    outs = [s]
    if fn == "row_sums_and_partials":
        outs = [poisoned(m, 32), s]
    getattr(mod, fn)(x, *outs, _launch=launch)
    xd = x.double().cpu()
    chunks = torch.stack([c.sum(1) for c in xd.split(32, dim=1)], 1)  # 32-column chunks of each row
    ref = {
        "row_min_f16": xd.min(1).values,
        "row_sums_and_partials": xd.sum(1),
        "row_absmax_rows2": xd.abs().max(1).values,
        "row_absmax_staged": xd.abs().max(1).values,
        "row_prefix_totals": chunks.cumsum(1).sum(1),
    }[fn]
    got = s.double().cpu()
    assert not torch.isnan(got).any(), f"{fn}: elements never written"
    assert float((got - ref).abs().max()) <= 1e-5 * float(ref.abs().max()), fn
    if fn == "row_sums_and_partials":  # each thread's partial, written per thread
        cols = torch.arange(n)
        parts = torch.stack([xd[:, cols % 32 == t].sum(1) for t in range(32)], 1)
        p = outs[0].double().cpu()
        assert not torch.isnan(p).any() and float((p - parts).abs().max()) <= 1e-5 * float(parts.abs().max() + 1)
    return ran


FUNCS = ("row_sums_i32", "row_min_f16", "row_sums_and_partials", "row_absmax_rows2")
STAGED = ("row_absmax_staged", "row_prefix_totals")


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes([(3, 29), (5, 700)]))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    mod = _module(schedule)
    for fn in FUNCS:
        _run(mod, fn, m if schedule == "auto" else min(m, 2), n)
    for fn in STAGED:  # rows fewer and more than a program's 16
        _run(mod, fn, m * 6, n)


def test_rows_past_the_registers_fold_blocks_then_the_total(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the whole-row limit the blocked kernels fold each block element-wise into a tile and
    reduce it once after the loop, the lanes' axis first."""
    mod = _module("auto")
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "1")  # (8 rows of 17000 elements, not 32, fill its SM)
    sms = rt.num_sms(torch.device(DEVICE))  # rows enough for the SMs: not split
    for fn in FUNCS:
        rows = 8 * sms * (2 if fn == "row_absmax_rows2" else 1)
        assert _run(mod, fn, rows, 17000) == [f"{fn}_k0_blocked"], fn


def test_few_long_rows_split_across_programs() -> None:
    """Two rows of 17000: too few programs for the SMs, each row's loop is split across programs
    (schedule/splitloop.py), the partial folds combined by a second kernel that then does what the
    kernel does after the loop (the partials through shared memory, a total, an output of partials)."""
    mod = _module("auto")
    for fn in ("row_min_f16", "row_sums_and_partials", "row_absmax_rows2"):
        assert _run(mod, fn, 2, 17000) == [f"{fn}_k0_split"], fn
    assert _run(mod, "row_sums_i32", 2, 17000) == ["row_sums_i32_k0_blocked"]  # 133 steps: too few to split


def test_what_auto_makes_of_each_form() -> None:
    text = translate_full(PROGRAM.read_text(), filename="totals.co", schedule="auto").source
    body = kernel_code(text, "row_sums_i32_k0")
    assert "acc_sum=acc_sum+tl.sum(tl.sum(" in body and ",axis=1),axis=0)" in body and "tot=tot+part_sum" in body
    body = kernel_code(text, "row_min_f16_k0")  # a start that is not the identity: its own total first
    assert "lo_2_min=tl.min(lo.to(tl.float32),axis=0)" in body and "tl.minimum(m,part_min)" in body
    body = kernel_code(text, "row_absmax_rows2_k0")  # two rows a block: a total per row
    assert "m_max=tl.zeros([2],tl.float32)" in body and ",axis=2),axis=0)" in body
    body = kernel_code(text, "row_sums_and_partials_k0")  # the partials are an output: they stay per lane
    assert "acc_sum" not in body and "part_sum" not in body and "tl.sum(part,axis=0)" in body
    blocked = kernel_code(text, "row_sums_i32_k0_blocked")  # blocks: element-wise into a tile, one reduction after
    assert "acc_tile=acc_tile+tl.where(" in blocked and "tl.sum(tl.sum(acc_tile,axis=1),axis=0)" in blocked
    # the source schedule keeps the partials as written
    source = translate_full(PROGRAM.read_text(), filename="totals.co", schedule="source").source
    assert "totals.py" not in source
