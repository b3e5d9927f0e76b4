"""Futures that move names, not bytes, and early exits on the tile IR (lift/futures.py): a double
buffer through ``dma.any`` and ``swap``, ``select`` with a constant index, ``inthreads``, ``yield``,
chunk indices ``k - 1`` and ``k(-1)``.  Numerics against torch, both schedules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, randn

import croq2triton
from croq2triton.api import translate_full

SCHEDULES = ("source", "auto")

FUTURES = """
__co__ void double_buffer(global f32 [R, 64] x, global f32 [R, 64] y) {
  parallel p by cdiv(R, 4) : block {
    with k in [16] {
      a = dma.copy.async x.subspan(4, 64).at(p, 0).chunkat(_, k) => shared;
      b = dma.any;
      foreach k(1:) {
        b = dma.copy.async x.subspan(4, 64).at(p, 0).chunkat(_, k) => shared;
        wait a;
        dma.copy a => y.subspan(4, 64).at(p, 0).chunkat(_, k - 1);
        swap(a, b);
      }
      wait a;
      dma.copy a => y.subspan(4, 64).at(p, 0).chunkat(_, k(-1));
    }
  }
}

__co__ void pick(global f32 [64] x, global f32 [64] y) {
  parallel p by 1 : block {
    f0 = dma.copy x => shared;
    f1 = dma.copy y => shared;
    f = select(1, f0, f1);
    dma.copy f => x;
  }
}

__co__ void halves(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 64) : block, t by 64 : thread {
    int i = p # t;
    inthreads (t < 32) { if (i < N) y.at(i) = x.at(i) * 2.0f; }
    inthreads (t >= 32) { if (i < N) y.at(i) = -x.at(i); }
  }
}

__co__ void early(global f32 [N] x, global f32 [N] y, int stop) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread {
    int i = p # t;
    if (i >= stop) yield;
    if (i < N) y.at(i) = x.at(i) + 1.0f;
  }
}
"""


def test_futures_and_exits_take_the_tile_ir() -> None:
    out = translate_full(FUTURES, filename="futures.co")
    assert not out.failed, out.failed
    assert not out.failed, out.failed


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_futures_and_exits_compute(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "futures.co"
    path.write_text(FUTURES)
    mod = croq2triton.load(path, schedule=schedule)
    x = randn(10, 64, seed=1)
    y = torch.full((10, 64), float("nan"), device=DEVICE)
    mod.double_buffer(x, y)  # type: ignore[attr-defined]
    assert_close(y, x)

    a, b = randn(64, seed=2), randn(64, seed=3)
    want = b.clone()
    mod.pick(a, b)  # type: ignore[attr-defined]
    assert_close(a, want)

    x = randn(100, seed=4)
    y = torch.full((100,), float("nan"), device=DEVICE)
    mod.halves(x, y)  # type: ignore[attr-defined]
    first = (torch.arange(100, device=DEVICE) % 64) < 32
    assert_close(y, torch.where(first, x * 2, -x))

    x = randn(300, seed=5)
    y = torch.full((300,), -7.0, device=DEVICE)
    mod.early(x, y, 201)  # type: ignore[attr-defined]
    assert_close(y, torch.where(torch.arange(300, device=DEVICE) < 201, x + 1, torch.full_like(x, -7.0)))
