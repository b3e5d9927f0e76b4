"""Host code between launches computes as C does, the same as a kernel (LANGUAGE.md 4.1, 4.4, 7.7,
8): tests/programs/host_arith.co computes each expression in host code (row 0 of an output) and in a
kernel (row 1); both are checked against the C rule written out here, in both schedules.  Each was
wrong on the host before (arithmetic probe, F4 to F9): ``cdiv(-17, 5)`` was -3, ``int`` did not wrap
at 32 bits (and reached a kernel as a 64-bit argument), ``-1 < 1u`` was true, ``__to<f32>`` and f32
scalars and parameters were doubles."""

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


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("a", "b"), [(40000, 65536), (-70001, 40009), (1 << 30, 3), (123, -7)])
def test_int_wraps_at_32_bits(schedule: str, a: int, b: int) -> None:
    mod = load_once(PROGRAM, schedule)
    o = torch.full((2, 7), -12345, dtype=torch.int32, device=DEVICE)
    w = torch.full((2, 2), -12345, dtype=torch.int64, device=DEVICE)
    mod.wraps(o, w, a, b)
    p = s32(a * b)
    u = u32(u32(a) * 3 + u32(b))  # u32 u = a; u = u * 3u + b: unsigned, modulo 2^32
    n = wrap(wrap(a, 8) + 100, 8)  # s8 n = a; n += 100: wrapped to 8 bits at each store
    want = [
        c_div(p, 1024),
        c_mod(s32(a + b + b), 100000),
        p >> 7,  # >> of a negative int: arithmetic
        c_div(s32(a << 5), 32),
        int(p > 0),
        s32(c_div(u, 7)),
        n * 2,  # promoted to int: no wrap at 8 bits
    ]
    host, kernel = _rows(o)
    assert host == want, (host, want)
    assert kernel == want, (kernel, want)
    wide = [p, wrap(a * b, 64)]  # s64 = a * b wraps at 32 bits first; __to<s64>(a) * b does not
    assert w.cpu().tolist() == [wide, wide]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_wrapped_host_int_reaches_the_kernel_as_an_int(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    a, b = 40000, 65536  # 40000 * 65536 = 2621440000: wraps to -1673527296
    o = torch.full((37,), -12345, dtype=torch.int32, device=DEVICE)
    mod.wrapped_args(o, a, b)
    p, q = s32(a * b), s32(a * b + 7)
    want = c_div(p, 1000) + c_mod(q, 1000)
    assert want == -1673527 - 289  # not 2621440 + 7: the kernel reads C's int, not a 64-bit value
    assert o.cpu().tolist() == [want] * 37


def _mixed_signs(schedule: str, a: int, u: int) -> tuple[list, list, list]:
    mod = load_once(PROGRAM, schedule)
    o = torch.full((2, 6), -12345, dtype=torch.int32, device=DEVICE)
    mod.mixed_signs(o, a, u)
    ua = u32(a)  # C converts the int to unsigned
    want = [
        int(ua < u),
        int(u >= ua),
        int(ua == u),
        s32(u32(ua + u) // 2),  # an unsigned sum, modulo 2^32
        int(a < u),  # s64 with u32: the u32 converts to s64, the comparison is signed
        int(max(ua, u) == u),
    ]
    host, kernel = _rows(o)
    return host, kernel, want


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("a", "u"), [(-1, 1), (-1, 4294967295), (5, 3000000000), (-7, 2)])
def test_int_and_u32_compare_unsigned(schedule: str, a: int, u: int) -> None:
    host, kernel, want = _mixed_signs(schedule, a, u)
    assert host == want, (host, want)
    assert kernel == want, (kernel, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_unsigned_sum_past_2_32_in_a_kernel(schedule: str) -> None:
    # a u32 argument of 2^31 or more reaches the kernel as a u32 (Triton's JIT makes it an i64; the
    # kernel converts it, emit/triton.py), so (u32)a + u wraps at 2^32
    host, kernel, want = _mixed_signs(schedule, -1, 4294967295)
    assert host == want
    assert kernel == want, (kernel, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_f32_scalars_and_parameters_are_f32(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    a, x, y = 16777217, 16777216.0, 0.1  # 2^24 + 1 is no f32: it rounds to 2^24
    o = torch.full((2, 6), float("nan"), device=DEVICE)
    mod.f32_values(o, a, x, y)
    fy = f32(y)  # the parameter holds 0.1f
    acc = 0.0
    for _ in range(10):
        acc = f32(acc + fy)
    want = [
        f32(a) - 16777216.0,
        f32(x + 1.0) - x,
        f16(fy) - fy,
        f32(f32(f32(a) + 0.5) - 16777216.0),
        f32(f32(fy * 3.0) - f32(0.3)),
        f32(acc - 1.0),
    ]
    assert want[:2] == [0.0, 0.0] and want[3] == 0.0 and want[2] == f32(-2.4415552616119385e-05)
    host, kernel = _rows(o)
    assert host == want, (host, want)
    if DEVICE == "cuda":
        # compiled, Triton fuses y * 3 - 0.3 into one FMA (as nvcc does by default: -fmad=true): the
        # product is not rounded, one rounding of the exact y * 3 - f32(0.3) (exact in float64)
        fused = f32(fy * 3.0 - f32(0.3))
        assert fused != want[4] and kernel[4] in (want[4], fused), (kernel, want, fused)
        kernel[4] = want[4]
    assert kernel == want, (kernel, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_returned_int_is_wrapped(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    assert mod.wrapped_result(40000, 65536) == s32(40000 * 65536 + 1) == -1673527295
    assert mod.wrapped_result(-3, 5) == -14


def _folded(schedule: str) -> tuple[list, list, list, list, list]:
    mod = load_once(PROGRAM, schedule)
    o = torch.full((2, 5), -12345, dtype=torch.int32, device=DEVICE)
    f = torch.full((2, 2), float("nan"), device=DEVICE)
    mod.folded(o, f)
    want = [c_div(s32(40000 * 65536), 65536), c_cdiv(-17, 5), int(u32(-1) < 1), c_div(s32(2**31), 2), -4]
    fwant = [f32(16777217.0) - 16777216.0, f32(f32(16777216.0 + 1.0) - 16777216.0)]
    host, kernel = _rows(o)
    fhost, fkernel = _rows(f)
    return host, kernel, want, fhost + fkernel, fwant * 2


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_constants_fold_as_c_computes(schedule: str) -> None:
    host, kernel, want, floats, fwant = _folded(schedule)
    assert want == [-25536, -2, 0, -(2**30), -4] and fwant == [0.0, 0.0] * 2
    assert host == want, (host, want)
    assert floats[:2] == fwant[:2], floats
    assert [kernel[1], kernel[4]] == [want[1], want[4]], kernel  # cdiv folds as C's in kernels too


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_constants_fold_as_c_computes_in_a_kernel(schedule: str) -> None:
    _, kernel, want, floats, fwant = _folded(schedule)
    assert kernel == want and floats == fwant, (kernel, want, floats)
