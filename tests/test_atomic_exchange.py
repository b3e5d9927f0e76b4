"""``__atomic_exch`` of floats (LANGUAGE.md: atomics return the old value).

Triton's interpreter exchanges integers only (``tl.atomic_xchg`` of an f32 pointer raised
``ValueError('Unsupported data type')`` at launch, reported as an internal error); the kernels exchange
a float through its bits (emit/triton.py ``_EXCHANGE_BITS``), which compiled is the same
``atom.exch.b32`` / ``.b64``.  Numerics in both schedules on ragged sizes, outputs poisoned; the sm_90a
PTX of the f32 kernel."""

from __future__ import annotations

from pathlib import Path

import pytest
import sm90
import torch
from kernel_util import DEVICE, poisoned, randn

from croq2triton.api import load_source, translate_full

SCHEDULES = ("source", "auto")

SOURCE = """
__co__ void swap_in(global f32 [N] a, global f32 [N] b, global f32 [N] old) {
  parallel p by cdiv(N, 64) : block, t by 64 : thread {
    if (p # t < N) old.at(p # t) = __atomic_exch(a.at(p # t), b.at(p # t) * 2.0f);
  }
}

__co__ void swap_in_f64(global f64 [N] a, global f64 [N] b, global f64 [N] old) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    if (p # t < N) old.at(p # t) = __atomic_exch(a.at(p # t), b.at(p # t));
  }
}

__co__ void last_writer(global f32 [N] x, global f32 [1] slot) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    if (p # t < N) __atomic_exch(slot.at(0), x.at(p # t));
  }
}
"""


@pytest.fixture(scope="module", params=SCHEDULES)
def mod(request: pytest.FixtureRequest) -> object:
    out = translate_full(SOURCE, filename="xchg.co", schedule=request.param)
    assert not out.failed, out.failed
    return load_source(out.source, f"atomic_exchange_{request.param}", translation=out)


@pytest.mark.parametrize("n", [1, 77, 200])
def test_a_float_exchange_returns_the_old_value_and_stores_the_new(mod: object, n: int) -> None:
    a, b = randn(n, seed=n), randn(n, seed=n + 1)
    a0 = a.clone()
    old = poisoned(n)
    mod.swap_in(a, b, old)  # type: ignore[attr-defined]
    assert torch.equal(old, a0)
    assert torch.equal(a, b * 2.0)


def test_an_f64_exchange_keeps_every_bit(mod: object) -> None:
    n = 45
    a = randn(n, dtype=torch.float64, seed=3)
    b = randn(n, dtype=torch.float64, seed=4) * 1e-300
    a0 = a.clone()
    old = poisoned(n, dtype=torch.float64)
    mod.swap_in_f64(a, b, old)  # type: ignore[attr-defined]
    assert torch.equal(old, a0) and torch.equal(a, b)


def test_every_lane_exchanging_into_one_word_leaves_one_of_their_values(mod: object) -> None:
    x = randn(37, seed=5)
    slot = torch.full((1,), float("nan"), device=DEVICE)
    mod.last_writer(x, slot)  # type: ignore[attr-defined]
    assert bool((x == slot[0]).any())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_compiled_for_sm90_it_is_one_exchange_of_32_bits(schedule: str, tmp_path: Path) -> None:
    src = tmp_path / "xchg.co"
    src.write_text(SOURCE)
    r = sm90.croq("compile", str(src), "--func", "swap_in", "--size", "N=100", "--schedule", schedule, "--emit", "ptx")
    assert r.returncode == 0, r.stderr[-2000:]
    exchanges = [x for x in r.stdout.splitlines() if "atom." in x]
    assert exchanges and all(".exch.b32" in x for x in exchanges), exchanges
