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


STORES = """
__co__ void scale_pairs(global f32 [M, N] x, f32 a, global f32 [M, N] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      foreach j in [cdiv(N, 2)] {
        y.at(r, 2 * j) = x.at(r, 2 * j) * a;
        if (2 * j + 1 < N) y.at(r, 2 * j + 1) = x.at(r, 2 * j + 1) * a;
      }
    }
  }
}
__co__ void swap_pairs(global f32 [M, N] x, global f32 [M, N] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      foreach j in [N / 2] {
        y.at(r, 2 * j) = x.at(r, 2 * j + 1);
        y.at(r, 2 * j + 1) = x.at(r, 2 * j);
      }
    }
  }
}
__co__ void shift_in_place(global f32 [M, N] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      foreach j in [(N - 2) / 2] {
        y.at(r, 2 * j + 1) = y.at(r, 2 * j + 2) + 1.0f;
        y.at(r, 2 * j + 2) = y.at(r, 2 * j + 3) + 1.0f;
      }
    }
  }
}
"""


def test_stores_unrolled_by_hand(tmp_path: Path) -> None:
    """``y[2 j] = f(x[2 j]); y[2 j + 1] = f(x[2 j + 1])`` (the second under ``2 j + 1 < N``): one loop
    over ``u = 2 j + k`` writing ``f(x[u])`` under auto, then tiles of the row.  A swap of each pair
    (the store of offset 0 reads the load of offset 1) and a shift in place (the tensor written is
    read by the loop) stay as written.  All three agree with float64 in both schedules."""
    from kernel_util import assert_near_max, load, poisoned

    code = translate_full(STORES, filename="stores.co", schedule="auto").source

    def body(fn: str) -> str:
        return code.split(f"def {fn}_k0(")[1].split("@_rt.launcher")[0].split("@triton.jit")[0]

    assert "schedule/reroll.py" in body("scale_pairs") and "for j in" not in body("scale_pairs")
    assert body("scale_pairs").count("tl.store(") == 1
    assert "schedule/reroll.py" not in body("swap_pairs")
    assert "schedule/reroll.py" not in body("shift_in_place")
    path = tmp_path / "stores.co"
    path.write_text(STORES)
    m = 7
    for n in (77, 300):
        x = randn(m, n, seed=n)
        xd = _d(x).cpu()
        swapped = xd.clone()
        h = n // 2 * 2
        swapped[:, 0:h:2], swapped[:, 1:h:2] = xd[:, 1:h:2], xd[:, 0:h:2]
        shifted = xd.clone()
        for j in range((n - 2) // 2):
            shifted[:, 2 * j + 1] = shifted[:, 2 * j + 2] + 1
            shifted[:, 2 * j + 2] = shifted[:, 2 * j + 3] + 1
        for s in ("source", "auto"):
            mod = load(path, schedule=s)
            y = poisoned(m, n)
            mod.scale_pairs(x, 1.5, y)
            assert_near_max(y, xd * 1.5, 1e-7, f"scale_pairs {n} ({s})")
            y = x.clone()
            if n % 2:
                y[:, n - 1] = float("nan")
            mod.swap_pairs(x, y)
            if n % 2:
                y[:, n - 1] = x[:, n - 1]
            assert_near_max(y, swapped, 0.0, f"swap_pairs {n} ({s})")
            y = x.clone()
            mod.shift_in_place(y)
            assert_near_max(y, shifted, 1e-7, f"shift_in_place {n} ({s})")
