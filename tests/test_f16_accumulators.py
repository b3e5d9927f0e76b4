"""Loops summing into a 16-bit float scalar round every step to its type, in both schedules
(tests/programs/f16_accumulators.co; docs/precision.md).  Until 2026-12-06 ``--schedule auto``
folded such a loop into one ``tl.sum`` added to the scalar once: an f16 sum from 2048 of 37 ones
gave 2085 where every step as written gives 2048, and a bf16 running sum moved by up to 1.5.  The
references step in torch's f16 / bf16 arithmetic (each addition rounded), and the results must be
equal, not close.  bf16 arithmetic is wrong in Triton 3.6's interpreter (TRITON.md), so the bf16
form checks on a GPU only, and its fold is checked on the IR here."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, load_once, poisoned, randn

from croq2triton import translate

PROGRAM = Path(__file__).parent / "programs" / "f16_accumulators.co"
SCHEDULES = ["source", "auto"]


def stepped(x: torch.Tensor, start: float) -> torch.Tensor:
    """The running sums of the rows of ``x`` from ``start``, each addition rounded to x's type."""
    acc = torch.full((x.shape[0],), start, dtype=x.dtype)
    out = torch.empty_like(x, device="cpu")
    for j in range(x.shape[1]):
        acc = acc + x[:, j].cpu()
        out[:, j] = acc
    return out


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_f16_sum_rounds_every_step(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = torch.ones(37, 53, dtype=torch.float16, device=DEVICE)
    out = poisoned(37)
    mod.f16_sum(x, out, 2048.0)
    assert torch.equal(out.cpu(), torch.full((37,), 2048.0)), "2048 + 1 is 2048 in f16 at every step"
    x = randn(37, 53, dtype=torch.float16, seed=1) * 8
    mod.f16_sum(x, out, 300.0)
    assert torch.equal(out.cpu(), stepped(x, 300.0)[:, -1].float())


@pytest.mark.skipif(DEVICE == "cpu", reason="bf16 arithmetic is wrong in Triton 3.6's interpreter (TRITON.md)")
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_bf16_running_sum_rounds_every_step(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(37, 20, dtype=torch.bfloat16, seed=2)
    y = poisoned(37, 20, dtype=torch.bfloat16)
    mod.bf16_running(x, y, 1000.0)
    assert torch.equal(y.cpu(), stepped(x, 1000.0))


def test_the_auto_schedule_leaves_16_bit_sums_as_written_and_folds_their_maxima() -> None:
    code = translate(PROGRAM.read_text(), filename="f16_accumulators.co", schedule="auto")
    kernels = {
        name: code.split(f"def {name}_k0(")[1].split("\ndef ")[0] for name in ("f16_sum", "bf16_running", "f16_max")
    }
    assert "tl.sum" not in kernels["f16_sum"] and "tl.cumsum" not in kernels["bf16_running"]
    assert "tl.max" in kernels["f16_max"], kernels["f16_max"]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_f16_maximum(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(45, 31, dtype=torch.float16, seed=3)
    out = poisoned(45, dtype=torch.float16)
    mod.f16_max(x, out)
    assert torch.equal(out.cpu(), x.cpu().max(1).values)
