"""A lane's folded loop split across programs is a field of the tile kernel's schedule
(``TileSchedule.loop_split``, issue 27: the rewrites are fields ``tune`` varies): 0 lets the
launcher pick for the SMs (what ``--schedule auto`` does), 1 keeps the loop in one program, S splits
it across S programs (the last ones empty where the loop has fewer blocks); a tuned ``fold`` sets the
lines the partial kernel folds a step and a tuned ``num_warps`` its warps.  Each point is run on
ragged sizes with NaN-poisoned outputs against float64 torch (tests/programs/membound_forms.co)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from kernel_util import assert_near_max, functions_of, poisoned, randn, recording_launch

from croq2triton.api import load_source, translate_full
from croq2triton.cli import main as cli_main
from croq2triton.options import Point
from croq2triton.schedule.schedule import TileSchedule, with_point
from croq2triton.tune.prune import Limits, before_compiling

PROGRAM = Path(__file__).parent / "programs" / "membound_forms.co"
H = torch.float16

# function -> (input dtype, output of (m, n), reference, tolerance relative to the largest element)
CASES = {
    "col_sums_walk": (torch.float32, lambda m, n: ((n,), torch.float32), lambda x: x.sum(0), 1e-5),
    "col_means_f16": (H, lambda m, n: ((n,), H), lambda x: x.mean(0), 2e-3),
    "row_sums_staged": (torch.float32, lambda m, n: ((m,), torch.float32), lambda x: x.sum(1), 1e-5),
    "row_meansq_staged_f16": (H, lambda m, n: ((m,), torch.float32), lambda x: (x**2).mean(1), 1e-5),
}

POINTS = {  # the fields of each kernel's TileSchedule a tuning point sets
    # (not split, each column walk's rows whole would be one tile of 512 x 256: refused on a GPU)
    "not split, blocks of 32": {"loop_split": 1, "fold": 32},
    "split in 3": {"loop_split": 3},
    "split in 64 (most empty)": {"loop_split": 64},
    "split in 5, blocks of 8, 2 warps": {"loop_split": 5, "fold": 8, "num_warps": 2},
    # (the partials combined by a second kernel rather than by the last program: schedule/lastcombine.py)
    "split in 3, a second kernel combines": {"loop_split": 3, "combine_last": False},
}


def _module(name: str) -> object:
    point = Point.of({}, {f"{fn}_k0": POINTS[name] for fn in CASES})
    # (the program's functions that these points set: translating the others under no point of theirs
    # again at each point tells nothing, and costs most of the test's time)
    out = translate_full(functions_of(PROGRAM, *CASES), filename="membound_forms.co", schedule="auto", point=point)
    assert not out.failed, out.failed
    return load_source(out.source, f"loop_split_{abs(hash(name))}")


@pytest.mark.parametrize("name", POINTS)
def test_each_split_point_computes_what_torch_does(name: str) -> None:
    mod = _module(name)
    split = POINTS[name]["loop_split"] > 1
    for fn, (dtype, out, ref, tol) in CASES.items():
        # a column walk splits its rows, staged rows their blocks of columns: ragged both ways
        m, n = (300, 150) if fn.startswith("col") else (40, 700)
        x = randn(m, n, dtype=dtype, seed=m + n)
        shape, odt = out(m, n)
        y = poisoned(*shape, dtype=odt)
        ran, launch = recording_launch()
        getattr(mod, fn)(x, y, _launch=launch)
        assert_near_max(y, ref(x.double()), tol, f"{fn} at {name}")
        kernels = (
            [f"{fn}_k0_split"] if POINTS[name].get("combine_last", True) else [f"{fn}_k0_partial", f"{fn}_k0_combine"]
        )
        assert ran == (kernels if split else [f"{fn}_k0"]), (fn, ran)


def test_auto_lets_the_launcher_pick_where_the_loop_splits() -> None:
    out = translate_full(PROGRAM.read_text(), filename=str(PROGRAM), schedule="auto")
    for fn in CASES:
        assert out.schedules[fn][f"{fn}_k0"].loop_split == 0, fn  # type: ignore[attr-defined]
    for fn in ("row_sums_warp", "gelu_2d", "softmax_block"):  # loops that do not split (or none)
        assert out.schedules[fn][f"{fn}_k0"].loop_split is None, fn  # type: ignore[attr-defined]
    source = translate_full(PROGRAM.read_text(), filename=str(PROGRAM), schedule="source")
    assert source.schedules["col_sums_walk"]["col_sums_walk_k0"].loop_split is None  # type: ignore[attr-defined]


def test_a_point_that_splits_a_loop_that_does_not_split_is_refused() -> None:
    with pytest.raises(ValueError, match="not one that splits"):
        with_point(TileSchedule((1,), 4), {"loop_split": 4})
    with pytest.raises(ValueError, match="loop_split = 2000"):
        TileSchedule((1,), 4, loop_split=2000)
    point = Point.of({}, {"gelu_2d_k0": {"loop_split": 4}})
    out = translate_full(functions_of(PROGRAM, "gelu_2d"), filename="membound_forms.co", schedule="auto", point=point)
    assert "not one that splits" in str(out.failed["gelu_2d"]), out.failed


def test_tune_lists_the_fold_and_the_split_where_they_apply(capsys: pytest.CaptureFixture[str]) -> None:
    for fn, shown in (("col_sums_walk", True), ("gelu_2d", False)):
        assert cli_main(["tune", str(PROGRAM), "--func", fn, "--schedule", "auto", "--list"]) == 0
        text = capsys.readouterr().out
        split = re.search(rf"{fn}_k0\.loop_split +0 ", text) is not None
        assert split is shown and (f"{fn}_k0.fold" in text) is shown, text
        assert (re.search(rf"{fn}_k0\.combine_last +true +true or false", text) is not None) is shown, text
        if shown:
            assert "1,2,4,8,16,32,64" in text and "space: 2016 points (4 x 3 x 6 x 7 x 2 x 2)" in text, text


@pytest.mark.parametrize("point", [{"fold": -1, "loop_split": 0}, {"fold": 8, "loop_split": 3}])
def test_tune_prunes_points_whose_tiles_are_sized_at_launch(point: dict[str, int]) -> None:
    """A row kept whole (``BLOCK_J``) and the combine kernel's partials (``BLOCK_S``) are tiles whose
    extents the launcher fixes: pruning before compiling leaves them to the compiled figures (it
    raised a TypeError on every such point, so no point of a folded kernel could be tuned)."""
    out = translate_full(
        functions_of(PROGRAM, "col_sums_walk"),
        filename="m.co",
        schedule="auto",
        point=Point.of({}, {"col_sums_walk_k0": point}),
    )
    fn = next(f for f in out.unit.functions if f.name == "col_sums_walk")
    assert before_compiling(out, "col_sums_walk", fn, Limits()) == []
