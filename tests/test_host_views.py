"""Views of tensors bound to a name between launches (tests/programs/host_views.co): a window
(``xl = x.subspan(M, 16).at(0, 1);``, ``.view(R, C).from(r0, c0)``, ``.sqz()``, a window of a
window) is made by the launcher, a view of the same memory the kernels read and write by its
strides.  Until 2026-12-06 every such view but ``span_as`` was refused.  Each form runs under both
schedules in the interpreter on ragged sizes, outputs poisoned with NaN (or holding values a form
must keep), against float64 torch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, assert_near_max, gemm_tol, load_once, poisoned, randn

from croq2triton.runtime.launch import CroqLaunchError

PROGRAM = Path(__file__).parent / "programs" / "host_views.co"
SCHEDULES = ["source", "auto"]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_named_strip_of_columns_is_read_where_it_lies(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(37, 45, seed=1)
    y = poisoned(37, 16)
    mod.second_strip(x, y)
    assert_close(y, 2 * x[:, 16:32].double().cpu())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_window_from_a_run_time_origin_reads_zero_past_its_edge(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(40, 50, seed=2)
    r, c, r0, c0 = 19, 13, 5, 30  # 8 x 8 tiles: the last of each axis reaches past the window
    out = poisoned(r, c)
    mod.window_tiles(x, out, r0, c0)
    assert_close(out, x[r0 : r0 + r, c0 : c0 + c].double().cpu())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_window_of_the_output_leaves_the_rest_as_it_was(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(7, 11, seed=3)
    out = torch.full((7, 20), 5.0, device=DEVICE)
    mod.into_window(x, out, 6)
    want = torch.full((7, 20), 5.0, dtype=torch.float64)
    want[:, 6:17] = (x + 1).double().cpu()  # one f32 addition, as the kernel does
    assert torch.equal(out.double().cpu(), want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_squeezed_row_and_a_window_of_it(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(9, 70, seed=4)
    k, r = 4, 6
    out = poisoned(k)
    mod.row_runs(x, out, r)
    want = x[r, : k * 16].double().cpu().reshape(k, 16).sum(1)
    assert_near_max(out, want, 1e-6, f"row runs ({schedule})")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_gemm_of_a_named_batch_window(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    m, n, k = 70, 45, 40
    a = randn(2 * m + 3, k, dtype=torch.float16, seed=5)
    b = randn(n, k, dtype=torch.float16, seed=6)
    c = poisoned(m, n)
    mod.second_gemm(a, b, c)
    want = a[m : 2 * m].double().cpu() @ b.double().cpu().T
    assert_near_max(c, want, gemm_tol(k), f"second batch GEMM ({schedule})")


def test_a_window_past_its_tensor_is_a_launch_error() -> None:
    mod = load_once(PROGRAM, "auto")
    x = randn(10, 20, seed=7)
    out = poisoned(8, 8)
    with pytest.raises(CroqLaunchError, match="window of 'x'"):
        mod.window_tiles(x, out, 4, 15)  # columns 15..22 of 20


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("func", ["pairs_parent", "pairs_flat"])
def test_a_view_of_another_rank_from_an_origin_in_either_coordinates(func: str, schedule: str) -> None:
    # '.from(2 * b, 0)' (the parent's coordinates) was an error: "'.from' gives 2 indices for the
    # view's 1 extents"; '.from(2 * b * N)' (the view's) translated
    mod = load_once(Path(__file__).parent / "programs" / "view_ranks.co", schedule)
    m, n = 14, 37  # 7 pairs of rows of 37: lines of 74
    x = randn(m, n, seed=11)
    y = poisoned(m // 2, 2 * n)
    getattr(mod, func)(x, y)
    want = x.double().cpu().reshape(m // 2, 2 * n).flip(1)
    assert torch.equal(y.double().cpu(), want)
