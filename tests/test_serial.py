"""Blocks one after the other: ``TileSchedule.serial`` (schedule/serial.py, issue 27). A program runs
``F`` consecutive blocks of a grid axis in a loop; an atomic whose address does not change from
block to block adds once for them (a column sum's partial sums: one atomic a program instead of one
a block). Each point runs tests/programs/serial_blocks.co in the interpreter on ragged sizes (the
last program's extra blocks past the grid), outputs poisoned with NaN, against float64 torch; a
kernel whose blocks count each other (an atomic's old value read) is refused at the point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from kernel_util import DEVICE, assert_close, assert_near_max, functions_of, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.options import Point
from croq2triton.schedule.schedule import TileSchedule

PROGRAM = Path(__file__).parent / "programs" / "serial_blocks.co"
POINTS = [(1, 1), (3, 1), (4, 2), (1, 4), (16, 1)]
_MODS: dict[tuple[int, ...], Any] = {}


def _module(point: tuple[int, ...]) -> Any:
    if point not in _MODS:
        fields = {f"{fn}_k0": {"serial": point} for fn in ("col_sums", "col_extremes", "row_sums", "scale_rows")}
        out = translate_full(
            PROGRAM.read_text(), filename="serial_blocks.co", schedule="auto", point=Point.of({}, fields)
        )
        assert not {"col_sums", "col_extremes", "row_sums", "scale_rows"} & set(out.failed), out.failed
        if point != (1, 1):
            assert "one after the other (schedule/serial.py)" in out.source
        _MODS[point] = load_source(out.source, f"serial_{'x'.join(map(str, point))}")
    return _MODS[point]


@pytest.mark.parametrize("point", POINTS, ids=lambda p: "x".join(map(str, p)))
def test_column_sums_add_once_a_program(point: tuple[int, ...]) -> None:
    mod = _module(point)
    x = randn(301, 75, seed=1)  # 5 row blocks of 64 (the last of 45 rows), 3 column blocks of 32
    s = torch.zeros(75, device=DEVICE)
    mod.col_sums(x, s)
    assert_near_max(s, x.double().cpu().sum(0), 1e-6, f"column sums at serial {point}")


@pytest.mark.parametrize("point", POINTS, ids=lambda p: "x".join(map(str, p)))
def test_integer_maxima_and_f16_minima(point: tuple[int, ...]) -> None:
    mod = _module(point)
    k = randn(37, 21, dtype=torch.int32, seed=2)
    h = randn(37, 21, dtype=torch.float16, seed=3)
    hi = torch.full((21,), -(2**31), dtype=torch.int32, device=DEVICE)
    lo = torch.full((21,), float("inf"), device=DEVICE)
    mod.col_extremes(k, h, hi, lo)
    assert torch.equal(hi.cpu(), k.cpu().max(0).values)
    assert torch.equal(lo.cpu(), h.cpu().float().min(0).values)


@pytest.mark.parametrize("point", POINTS, ids=lambda p: "x".join(map(str, p)))
def test_row_sums_whose_mask_changes_from_block_to_block(point: tuple[int, ...]) -> None:
    # the address is the row's (the same for every column block), the mask `bn # c < N` is not
    mod = _module(point)
    x = randn(19, 53, seed=4)
    s = torch.zeros(19, device=DEVICE)
    mod.row_sums(x, s)
    assert_near_max(s, x.double().cpu().sum(1), 1e-6, f"row sums at serial {point}")


@pytest.mark.parametrize("point", POINTS, ids=lambda p: "x".join(map(str, p)))
def test_a_kernel_of_stores_only(point: tuple[int, ...]) -> None:
    mod = _module(point)
    x, w = randn(13, 70, seed=5), randn(13, seed=6)
    y = poisoned(13, 70)
    mod.scale_rows(x, w, y)
    assert_close(y, x.double().cpu() * w.double().cpu()[:, None] + 1.0, atol=1e-6, rtol=1e-6)


def test_a_merged_atomic_is_one_a_program_and_the_policy_offers_the_field() -> None:
    fields = {"col_sums_k0": {"serial": (4, 1)}}
    out = translate_full(PROGRAM.read_text(), filename="serial_blocks.co", schedule="auto", point=Point.of({}, fields))
    code = out.source.split("def col_sums_k0")[1].split("@_rt.launcher")[0]
    loop = code.split("for bm_step in range(0, 4)")[1]
    # the atomic under the condition of the program's last block, the running sum added every block
    assert "if (bm_step == 3) | (bm == bm_blocks - 1):" in loop and loop.count("tl.atomic_add(") == 1
    assert "s_serial_add = s_serial_add + " in loop
    # the launcher passes the grid's extent and launches a quarter of the row blocks
    assert "_rt.cdiv(_rt.cdiv(M, 64), 4)" in out.source.replace(" ", "").replace(",", ", ")
    schedules = translate_full(PROGRAM.read_text(), filename="serial_blocks.co", schedule="auto").schedules
    assert schedules["col_sums"]["col_sums_k0"].serial == (1, 1)  # the field tuning varies (the policy: a variant)
    assert schedules["scale_rows"]["scale_rows_k0"].serial is None  # no atomic to add once


def test_blocks_that_count_each_other_are_refused_at_the_point() -> None:
    fields = {"tickets_k0": {"serial": 4}}
    out = translate_full(PROGRAM.read_text(), filename="serial_blocks.co", schedule="auto", point=Point.of({}, fields))
    message = str(out.failed["tickets"])
    assert "one after the other" in message and "old value is read" in message


def test_the_field_takes_one_factor_per_axis() -> None:
    with pytest.raises(ValueError, match="one factor per grid axis"):
        TileSchedule((1, 1), 4, serial=(2,))
    with pytest.raises(ValueError, match="1 to 64"):
        TileSchedule((1,), 4, serial=(0,))


@pytest.mark.parametrize("point", [(4, 1), (3, 2)], ids=["4x1", "3x2"])
def test_a_program_per_row_run_one_after_the_other(point: tuple[int, ...]) -> None:
    # a program id used on its own over a grid of M (a row a program): the guard is 'r < M' itself,
    # so each access of the row is seen inside x (this point was an internal error, a VerifyError)
    program = Path(__file__).parent / "programs" / "membound_forms.co"
    fields = {"row_sums_atomic_f16_k0": {"serial": point}}
    text = functions_of(program, "row_sums_atomic_f16")  # (the function the point sets)
    out = translate_full(text, filename="membound_forms.co", schedule="auto", point=Point.of({}, fields))
    assert "row_sums_atomic_f16" not in out.failed, out.failed["row_sums_atomic_f16"]
    mod = load_source(out.source, f"serial_rows_{'x'.join(map(str, point))}")
    x = randn(7, 300, dtype=torch.float16, seed=7)
    s = torch.zeros(7, device=DEVICE)
    mod.row_sums_atomic_f16(x, s)
    assert_near_max(s, x.double().cpu().sum(1), 1e-5, f"row sums f16 at serial {point}")


@pytest.mark.parametrize(
    ("sms", "ran"),
    [(2, "col_sums_k0"), (3, "col_sums_k0_narrow_serial"), (4, "col_sums_k0_narrow")],
    ids=["widened", "serial", "one"],
)
def test_auto_runs_four_row_blocks_a_program_where_the_grid_keeps_two_a_sm(
    sms: int, ran: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 100 rows, 170 columns: 2 row blocks of 64 (the last of 36 rows). Widened to 512 columns a
    # program the grid is 2 x 1 = 2 programs, run where that is a program a SM; else the blocks of 32
    # columns (the last of 10), 4 row blocks a program: 1 x 6 = 6 programs, run where that is 2 a SM;
    # else one block a program (12)
    from croq2triton.runtime import launch as rt_launch

    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", str(sms))
    out = translate_full(PROGRAM.read_text(), filename="serial_blocks.co", schedule="auto")
    assert "programs a SM (schedule/serial.py)" in out.source
    mod = load_source(out.source, f"serial_auto_{sms}")
    names: list[str] = []

    def launch(kernel: Any, *rest: Any) -> Any:
        names.append(getattr(kernel, "__name__", "") or kernel.fn.__name__)
        return rt_launch.launch(kernel, *rest)

    x = randn(100, 170, seed=8)
    s = torch.zeros(170, device=DEVICE)
    mod.col_sums(x, s, _launch=launch)
    assert names == [ran]
    assert_near_max(s, x.double().cpu().sum(0), 1e-6, f"column sums, auto, {sms} SMs")
