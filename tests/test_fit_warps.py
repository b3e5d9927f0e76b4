"""The launcher's warps for a tile fixed at launch, checked against the compiled kernel's registers
(croq2triton/runtime/occupancy.py): a guess that keeps one program a SM moves by a factor of two
where that keeps two; warps given by a user or a tuning point, and grids of one wave, stay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

from croq2triton.runtime import occupancy as occ


class FakeKernel:
    """A kernel whose compiled register count at each warps is given (what ``warmup`` would report)."""

    def __init__(self, regs: dict[int, int], spills: dict[int, int] | None = None, fails: tuple[int, ...] = ()):
        self.regs, self.spills, self.fails = regs, spills or {}, fails
        self.compiled: list[int] = []

    def warmup(self, *args: Any, grid: tuple[int, ...], num_warps: int, **kwargs: Any) -> Any:
        self.compiled.append(num_warps)
        if num_warps in self.fails:
            raise RuntimeError("out of resources")
        return SimpleNamespace(
            n_regs=self.regs[num_warps],
            n_spills=self.spills.get(num_warps, 0),
            metadata=SimpleNamespace(shared=1024),
            _init_handles=lambda: None,
        )


@pytest.fixture
def h100(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    props = SimpleNamespace(
        multi_processor_count=132,
        regs_per_multiprocessor=65536,
        max_threads_per_multi_processor=2048,
        shared_memory_per_multiprocessor=233472,
    )
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _d: props)
    occ._CHOSEN.clear()
    occ._sm.cache_clear()
    yield
    occ._CHOSEN.clear()  # (the fake device's figures stay out of later tests of the process)
    occ._sm.cache_clear()


def test_one_program_a_sm_moves_to_the_warps_that_keep_two(h100: None) -> None:
    # the LayerNorm over rows of 16384 f16 compiled for sm_90a: 16 warps take 70 registers (72 x 512:
    # one program a SM), 8 warps 115 (120 x 256: two), 32 warps 42 (48 x 1024: one)
    k = FakeKernel({8: 115, 16: 70, 32: 42})
    guess = occ.warps_for(16384, 16)
    assert type(guess) is occ.FitWarps and guess == 16
    out = occ.fitted(k, (4096,), [], {"BLOCK_J": 16384, "num_warps": guess})
    assert out == {"BLOCK_J": 16384, "num_warps": 8} and type(out["num_warps"]) is int
    assert sorted(k.compiled) == [8, 16, 32]
    occ.fitted(k, (4096,), [], {"BLOCK_J": 16384, "num_warps": guess})
    assert len(k.compiled) == 3  # the choice is kept for the kernel and its constants


def test_two_programs_a_sm_keep_the_guess(h100: None) -> None:
    k = FakeKernel({16: 63})  # the softmax over the same rows: 64 x 512, two programs a SM
    assert occ.fitted(k, (4096,), [], {"BLOCK_J": 16384, "num_warps": occ.warps_for(16384, 16)})["num_warps"] == 16
    assert k.compiled == [16]


def test_a_tie_keeps_the_guess_and_spills_or_failures_are_not_chosen(h100: None) -> None:
    k = FakeKernel({8: 200, 16: 70, 32: 60}, spills={8: 64}, fails=(32,))
    assert occ.fitted(k, (4096,), [], {"num_warps": occ.FitWarps(16)})["num_warps"] == 16
    k = FakeKernel({8: 130, 16: 70, 32: 42})  # 8 warps: 136 x 256, one program a SM too
    assert occ.fitted(k, (4096,), [], {"num_warps": occ.FitWarps(16)})["num_warps"] == 16


def test_given_warps_and_one_wave_are_left_alone(h100: None) -> None:
    k = FakeKernel({8: 115, 16: 70, 32: 42})
    assert occ.fitted(k, (4096,), [], {"num_warps": 16}) == {"num_warps": 16}  # a user's or a point's
    assert occ.fitted(k, (100,), [], {"num_warps": occ.FitWarps(16)})["num_warps"] == 16
    assert k.compiled == []


def test_the_row_kernels_compute_the_same_under_the_fitted_warps() -> None:
    """On a GPU the fit compiles and launches other warps; in the interpreter it is not consulted.
    Either way the LayerNorm over long rows (tests/programs/rows.co under auto) is right."""
    from croq2triton.api import load

    mod = load(Path(__file__).parent / "programs" / "rows.co", schedule="auto")
    m, n = (300, 16384) if DEVICE != "cpu" else (3, 2500)
    x, w, b = randn(m, n, dtype=torch.float16), randn(n, dtype=torch.float16, seed=1), randn(n, seed=2).half()
    y = poisoned(m, n, dtype=torch.float16)
    mod.layernorm(x, w, b, y)
    ref = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
    assert_close(y, ref, atol=2e-2, rtol=1e-2)
    if DEVICE != "cpu":
        chosen = [v for key, v in occ._CHOSEN.items() if key[2] == 16]
        assert chosen, "the launcher's guess of 16 warps was checked against the compiled kernel"
