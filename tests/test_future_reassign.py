"""A future bound before a loop and assigned a new copy inside it (tests/programs/future_reassign.co):
the name is assigned, not declared anew (LANGUAGE.md 4.3), so the loop's next step, and what follows
the loop, read the new copy.  Until 2026-12-06 the copy in the loop went into a buffer of its own
that nothing read (silently wrong in both schedules: a prefetching GEMM multiplied the first K tile
every step).  Now the copy lands in the buffer the name holds; where another name views that buffer
the form is refused, never wrong.  Both schedules, in the interpreter, ragged sizes, outputs
poisoned with NaN, against float64 torch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_near_max, gemm_tol, load_once, poisoned, randn

from croq2triton import translate_full

PROGRAM = Path(__file__).parent / "programs" / "future_reassign.co"
SCHEDULES = ["source", "auto"]


def pieces(x: torch.Tensor, count: int) -> torch.Tensor:
    """The 16-wide pieces of each row of x (zero past its end): [rows, count, 16]."""
    r, n = x.shape
    padded = torch.zeros(r, count * 16, dtype=torch.float64)
    padded[:, : min(n, count * 16)] = x.double().cpu()[:, : count * 16]
    return padded.reshape(r, count, 16)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_each_step_reads_the_copy_the_step_before_made(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(5, 70, seed=1)
    y = poisoned(5, 16)
    mod.piece_sums(x, y)
    assert_near_max(y, pieces(x, 5).sum(1), 1e-6, f"piece sums ({schedule})")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_copy_under_a_condition_in_the_loop(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(3, 150, seed=2)
    y = poisoned(3, 16)
    mod.even_pieces(x, y)
    p = pieces(x, 10)
    want, held = torch.zeros(3, 16, dtype=torch.float64), 0
    for k in range(5):  # cdiv(150, 32) steps
        want += p[:, held]
        if k % 2 == 0:
            held = k + 1
    assert_near_max(y, want, 1e-6, f"even pieces ({schedule})")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("func", ["prefetch_gemm", "rotated_gemm"])
def test_gemms_that_prefetch_into_their_futures_names(func: str, schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    m, n, k = 70, 45, 100
    a = randn(m, k, dtype=torch.float16, seed=3)
    b = randn(n, k, dtype=torch.float16, seed=4)
    c = poisoned(m, n)
    getattr(mod, func)(a, b, c)
    assert_near_max(c, a.double().cpu() @ b.double().cpu().T, gemm_tol(k), f"{func} ({schedule})")


def test_a_new_copy_while_another_name_views_the_old_one_is_refused() -> None:
    src = """__co__ void f(global f32 [R, L] x, global f32 [R, 16] y) {
  parallel r by R : block {
    f = dma.copy x.subspan(1, 16).at(r, 0) => shared;
    old = f.data;
    foreach k in [4] {
      f = dma.copy x.subspan(1, 16).at(r, k + 1) => shared;
      dma.copy old => y.subspan(1, 16).at(r, 0);
    }
  }
}
"""
    out = translate_full(src, filename="t.co")
    assert "f" in out.failed, "translated: the copy in the loop would overwrite what 'old' views"
    assert "'f' assigned a new copy while 'old' views the one it holds" in out.failed["f"].diagnostics[0].message
