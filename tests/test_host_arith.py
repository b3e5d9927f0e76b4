"""Host code between launches computes as C does, the same as a kernel (LANGUAGE.md 7.7, 8):
tests/programs/host_arith.co computes each expression in host code (row 0 of an output) and in a
kernel (row 1); both are checked against the C rule written out here, in both schedules.  Host
``cdiv(-17, 5)`` was -3 (arithmetic probe, F4): ``cdiv(a, b)`` is ``(a + b - 1) / b`` with C's
truncating ``/``, which the kernel gives."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, load_once

PROGRAM = Path(__file__).parent / "programs" / "host_arith.co"
SCHEDULES = ["source", "auto"]


# ---------------------------------------------------------------- C's rules, spelled out


def wrap(v: int, bits: int, signed: bool = True) -> int:
    """Two's complement: ``v`` modulo 2^bits, in the type's range."""
    v %= 1 << bits
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def s32(v: int) -> int:
    return wrap(v, 32)


def u32(v: int) -> int:
    return wrap(v, 32, signed=False)


def c_div(a: int, b: int) -> int:
    """C's '/': the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_mod(a: int, b: int) -> int:
    return a - b * c_div(a, b)


def c_cdiv(a: int, b: int) -> int:
    """LANGUAGE.md 7.7: cdiv(a, b) is (a + b - 1) / b, with C's '/'."""
    return c_div(a + b - 1, b)


def f32(x: float) -> float:
    """The f32 nearest ``x`` (ties to even)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f16(x: float) -> float:
    return struct.unpack("<e", struct.pack("<e", x))[0]


def _rows(o: torch.Tensor) -> tuple[list, list]:
    host, kernel = o.cpu().tolist()
    return host, kernel


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("a", "b"), [(-17, 5), (17, -5), (-20, 5), (-1, 3), (23, 4)])
def test_division_and_cdiv_truncate_as_in_c(schedule: str, a: int, b: int) -> None:
    mod = load_once(PROGRAM, schedule)
    o = torch.full((2, 6), -12345, dtype=torch.int32, device=DEVICE)
    mod.divisions(o, a, b)
    want = [
        c_cdiv(a, b),
        c_div(a, b),
        c_mod(a, b),
        c_cdiv(b, a),
        c_div(a - 3, b) * b + c_mod(a - 3, b),
        c_mod(c_cdiv(3 * a, b), 7),
    ]
    host, kernel = _rows(o)
    assert host == want, (host, want)
    assert kernel == want, (kernel, want)
