"""What the probes of the language share (tests/test_probe4.py, tests/test_probe5.py): a registry of
cases (a ``.co`` file, a function of it, and a check that runs it against a float64 reference), the
translated modules of each file once per schedule, random inputs, poisoned outputs and comparisons."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE

import croq2triton

SCHEDULES = ["source", "auto"]


class Probe:
    """The cases of one probe (the programs under ``programs``), their inputs drawn from ``seed``."""

    def __init__(self, programs: Path, seed: int) -> None:
        self.programs = programs
        self.cases: dict[str, tuple[str, str, Callable]] = {}
        self.xfail: dict[str, str] = {}  # case id -> the precise reason it is expected to fail
        self._modules: dict[tuple[str, str], object] = {}
        self.gen = torch.Generator().manual_seed(seed)

    def module(self, name: str, schedule: str) -> object:
        key = (name, schedule)
        if key not in self._modules:
            self._modules[key] = croq2triton.load(self.programs / name, schedule=schedule)
        return self._modules[key]

    def case(self, file: str) -> Callable[[Callable], Callable]:
        """Registers ``check_<fn>`` as the case of ``fn`` in ``file``."""

        def register(check: Callable) -> Callable:
            fn = check.__name__.removeprefix("check_")
            self.cases[f"{file.removesuffix('.co')}-{fn}"] = (file, fn, check)
            return check

        return register

    def rnd(self, *shape: int, dtype: torch.dtype = torch.float32, lo: int = -50, hi: int = 50) -> torch.Tensor:
        if dtype.is_floating_point:
            return torch.randn(*shape, generator=self.gen).to(dtype).to(DEVICE)
        return torch.randint(lo, hi, shape, generator=self.gen).to(dtype).to(DEVICE)

    def params(self) -> list[object]:
        """The cases as pytest parameters, those expected to fail marked strictly."""
        return [
            pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=self.xfail[c])) if c in self.xfail else c
            for c in self.cases
        ]

    def run(self, cid: str, schedule: str) -> None:
        file, fn, check = self.cases[cid]
        check(getattr(self.module(file, schedule), fn))


def out(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """An output poisoned: NaN, or -77 / 77 for integers."""
    value = float("nan") if dtype.is_floating_point else (-77 if dtype.is_signed else 77)
    return torch.full(shape, value, device=DEVICE, dtype=dtype)


def same(got: torch.Tensor, want: torch.Tensor, tol: float = 1e-5) -> None:
    got = got.cpu()
    want = want.cpu() if isinstance(want, torch.Tensor) else torch.tensor(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.is_floating_point:
        assert not torch.isnan(got).any() or torch.isnan(want).any(), "an output element was never written"
        torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol)
    else:
        assert torch.equal(got.long(), want.long()), (got, want)


def d(t: torch.Tensor) -> torch.Tensor:
    return t.double().cpu()


def padded(x: torch.Tensor, rows: int, cols: int, r0: int = 0, c0: int = 0) -> torch.Tensor:
    """x[r0:r0+rows, c0:c0+cols] in float64 with zeros where it reaches past x."""
    o = torch.zeros(rows, cols, dtype=torch.float64)
    xs = d(x)[max(r0, 0) : r0 + rows, max(c0, 0) : c0 + cols]
    o[max(-r0, 0) : max(-r0, 0) + xs.shape[0], max(-c0, 0) : max(-c0, 0) + xs.shape[1]] = xs
    return o


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def assert_rejected_at(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, src: str, where: str, phrase: str
) -> str:
    """``croq2triton check`` of ``src`` fails with its first error at ``where`` (``line:col``) saying
    ``phrase``, and no traceback; returns what it wrote to stderr."""
    from croq2triton.cli import main

    path = tmp_path / f"{name}.co"
    path.write_text(src + "\n")
    rc = main(["check", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out and "internal error" not in err, err
    assert rc != 0, err
    first = next(line for line in err.splitlines() if ": error: " in line)
    assert first.startswith(f"{path}:{where}: error: ") or first.startswith(f"{name}.co:{where}: error: "), err
    assert phrase in first, err
    return err
