"""Loops and conditions written as CUDA code is (tests/programs/loop_forms.co, issues 27 and 28): each
function under both schedules in the interpreter against float64 torch on ragged sizes, outputs
poisoned first; what ``--schedule auto`` makes of counted ``while`` loops is checked on the code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, check_forms, form_sizes, load_once, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "loop_forms.co"
H = torch.float16
F32 = torch.float32
I32 = torch.int32


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _ints(m: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-1000, 1000, (m, n), generator=g, dtype=I32).to(DEVICE)


def _below(x: torch.Tensor, limit: float) -> torch.Tensor:
    """Per row, the index of the first element not below ``limit`` (the row's length if none)."""
    stop = ~(x < limit)
    first = torch.where(stop.any(1), stop.int().argmax(1), torch.tensor(x.shape[1]))
    return first.to(I32)


def _index_add(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return torch.zeros(7, x.shape[1], dtype=torch.float64, device=x.device).index_add_(0, idx.long(), _d(x))


Inputs = Callable[[int, int], list[torch.Tensor]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "row_sums_view": (lambda m, n: [randn(m, n, seed=1)], lambda m, n: [((m,), F32)], lambda x: [_d(x).sum(1)], 1e-5),
    "permute021": (
        lambda m, n: [randn(3, m, n, seed=2)],
        lambda m, n: [((3, n, m), F32)],
        lambda x: [_d(x).permute(0, 2, 1)],
        0.0,
    ),
    "softmax_exp2": (
        lambda m, n: [randn(m, n, seed=3)],
        lambda m, n: [((m, n), F32)],
        lambda x: [torch.softmax(_d(x), 1)],
        1e-5,
    ),
    "row_sums_while": (lambda m, n: [randn(m, n, seed=4)], lambda m, n: [((m,), F32)], lambda x: [_d(x).sum(1)], 1e-5),
    "row_max_i32": (lambda m, n: [_ints(m, n, 5)], lambda m, n: [((m,), I32)], lambda x: [_d(x).amax(1)], 0.0),
    "row_means_scaled": (
        lambda m, n: [randn(m, n, dtype=H, seed=6)],
        lambda m, n: [((m,), H)],
        lambda x: [_d(x).mean(1)],
        2e-3,  # (an f16 output)
    ),
    "col_cumsum": (lambda m, n: [randn(m, n, seed=9)], lambda m, n: [((m, n), F32)], lambda x: [_d(x).cumsum(0)], 1e-5),
    "gemv_rows": (
        lambda m, n: [randn(m, n, seed=10), randn(n, seed=11)],
        lambda m, n: [((m,), F32)],
        lambda a, x: [_d(a) @ _d(x)],
        1e-5,
    ),
    "row_sums_ilp": (lambda m, n: [randn(m, n, seed=12)], lambda m, n: [((m,), F32)], lambda x: [_d(x).sum(1)], 1e-5),
    "row_sums_stride_while": (
        lambda m, n: [randn(m, n, seed=13)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
    "count_below": (lambda m, n: [randn(m, n, seed=14)], lambda m, n: [((m,), I32)], lambda x: [_below(x, 1.0)], 0.0),
    "sum_then_count": (
        lambda m, n: [randn(m, n, seed=15)],
        lambda m, n: [((m,), F32), ((m,), I32)],
        lambda x: [_d(x)[:, ::2].sum(1), torch.full((x.shape[0],), x.shape[1] + x.shape[1] % 2, dtype=I32)],
        1e-5,
    ),
}
CASES["row_sums_step"] = (
    lambda m, n: [randn(m, n, seed=18)],
    lambda m, n: [((m,), F32)],
    lambda x: [_d(x)[:, 1::2].sum(1)],
    1e-5,
)
SIZES = [(5, 77), (37, 302)]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n, many={"count_below": 33, "sum_then_count": 33})


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_masked_scale(schedule: str) -> None:
    n = 37 * 301
    x = randn(n, dtype=H, seed=16)
    keep = (torch.rand(n, generator=torch.Generator().manual_seed(17)) > 0.5).to(torch.uint8).to(DEVICE)
    got = torch.full((n,), float("nan"), dtype=H, device=DEVICE)
    load_once(PROGRAM, schedule).masked_scale(x, keep, got)
    assert torch.equal(got.double().cpu(), (_d(x) * keep.double() * 2).cpu())


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_scatter_add_of_rows(schedule: str, m: int, n: int) -> None:
    x = randn(m, n, seed=8)
    idx = torch.randint(0, 7, (m,), dtype=I32, generator=torch.Generator().manual_seed(m)).to(DEVICE)
    got = torch.zeros(7, n, device=DEVICE)  # (atomic adds into it)
    load_once(PROGRAM, schedule).index_add_rows(x, idx, got)
    assert_near_max(got, _index_add(x, idx), 1e-5, f"index_add_rows at {m} x {n} ({schedule})")


def _code(schedule: str, kernel: str) -> str:
    code = translate_full(PROGRAM.read_text(), filename="loop_forms.co", schedule=schedule).source
    return code.split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


def test_a_counted_while_is_a_foreach_that_folds() -> None:
    """``mutable int j = t; while (j < N) { ..; j += 128; }`` runs the iterations of a ``foreach`` with
    a guard (lift/whileloops.py): under auto it folds like one, the shared tree after it too; as
    written it stays a while loop over the lanes."""
    for kernel in ("row_sums_while_k0", "row_sums_stride_while_k0"):
        body = _code("auto", kernel)
        assert "while " not in body and "tl.sum(" in body, kernel
        assert "while go" in _code("source", kernel)


def test_a_loop_with_a_step_folds() -> None:
    """``foreach c = j(1::2)`` runs by unit steps over ``k`` with ``c = 1 + 2 k`` (schedule/flatnest.py)
    and folds; as written it is a loop by 2."""
    body = _code("auto", "row_sums_step_k0")
    assert "for c in" not in body and "tl.sum(" in body
    assert "for c in range(1, N, 2)" in _code("source", "row_sums_step_k0")


def test_a_while_whose_counter_is_read_after_it_stays() -> None:
    """The counter's final value is read after the loop (and a condition that reads elements): not
    counted, the while loop stays, and its element reads past the row are masked by the left operand
    of ``&&`` (C reads the right one only where the left holds)."""
    assert "while go" in _code("auto", "sum_then_count_k0")
    body = _code("auto", "count_below_k0")
    assert "while go" in body


GRID_STRIDE = """
__co__ void scale(global f32 [N] x, global f32 [N] y, int nb, int step) {
  parallel b by nb : block, t by 128 : thread {
    mutable int i = b # t;
    while (i < N) {
      y.at(i) = 2.0f * x.at(i);
      i += STEP;
    }
  }
}
"""


@pytest.mark.parametrize(("step", "counted"), [("#b * #t", True), ("nb * 128", True), ("step", False)])
@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_grid_stride_while_is_counted(tmp_path: Path, step: str, counted: bool, schedule: str) -> None:
    """A while whose step is positive wherever it runs, not only a constant: a grid stride ``#b * #t``,
    or the product of the block level's extent ``nb`` and 128, is a foreach under auto
    (lift/whileloops.py); a step that is only a parameter (``step``: its sign unknown) stays a while."""
    text = GRID_STRIDE.replace("STEP", step)
    code = translate_full(text, filename="stride.co", schedule=schedule).source
    body = code.split("def scale_k0(")[1].split("@_rt.launcher")[0]
    assert ("while go" not in body) == (counted and schedule == "auto")
    path = tmp_path / "stride.co"
    path.write_text(text)
    mod = load_once(path, schedule)
    x = randn(1000, seed=1)
    y = torch.full((1000,), float("nan"), device=DEVICE)
    mod.scale(x, y, 3, 384)  # type: ignore[attr-defined]
    assert torch.equal(y, 2 * x)
