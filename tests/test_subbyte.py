"""Sub-byte integer element types (u6 s6 u4 s4 u2 s2 u1 bin1): one element per byte (LANGUAGE.md
4.2), uint8 / int8 tensors holding the type's values.  Arithmetic is C's on ``int``; a value stored
into or converted to a sub-byte type keeps its low bits, sign-extended when signed.  Every function
of tests/programs/subbyte/subbyte.co runs in both schedules in the interpreter on ragged sizes with
random values of the whole range, outputs poisoned, against an int64 NumPy reference that wraps
explicitly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from kernel_util import DEVICE, load_once
from probe_util import SCHEDULES, out

from croq2triton.sema.types import SUB_BYTE, wrap_sub_byte

CO = Path(__file__).parent / "programs" / "subbyte" / "subbyte.co"
TYPES = ["u6", "s6", "u4", "s4", "u2", "s2", "u1", "bin1"]
I32 = torch.int32


def wrap(x: np.ndarray, name: str) -> np.ndarray:
    """``x`` (int64) converted to the sub-byte type ``name``, written from its definition: the low
    ``width`` bits, minus 2^width where the type is signed and the top one of them is set."""
    sb = SUB_BYTE[name]
    low = np.bitwise_and(x, (1 << sb.width) - 1)
    return np.where(sb.signed & (low >= 1 << (sb.width - 1)), low - (1 << sb.width), low)


def storage(name: str) -> torch.dtype:
    return torch.int8 if SUB_BYTE[name].signed else torch.uint8


def values(name: str, *shape: int, seed: int) -> torch.Tensor:
    """Random values covering the whole range of ``name``, in its storage dtype."""
    sb = SUB_BYTE[name]
    g = torch.Generator().manual_seed(seed)
    return torch.randint(sb.lo, sb.hi + 1, shape, generator=g).to(storage(name)).to(DEVICE)


def np64(t: torch.Tensor) -> np.ndarray:
    return t.cpu().to(torch.int64).numpy()


def same(got: torch.Tensor, want: np.ndarray) -> None:
    assert np.array_equal(np64(got), want), (np64(got), want)


def fn(name: str, schedule: str) -> object:
    return getattr(load_once(CO, schedule), name)


def test_wrap_reference_agrees_with_the_translator_constant_folding() -> None:
    xs = np.arange(-300, 300)
    for name in TYPES:
        assert list(wrap(xs, name)) == [wrap_sub_byte(int(x), name) for x in xs]
        sb = SUB_BYTE[name]
        assert set(wrap(xs, name)) == set(range(sb.lo, sb.hi + 1))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("t", TYPES)
def test_arith(t: str, schedule: str) -> None:
    n = 77
    a, b = values(t, n, seed=1), values(t, n, seed=2)
    y, z, w = out(n, dtype=storage(t)), out(n, dtype=storage(t)), out(n, dtype=I32)
    fn(f"arith_{t}", schedule)(a, b, y, z, w)
    ra, rb = np64(a), np64(b)
    same(y, wrap(ra + rb, t))
    same(z, wrap(ra * rb - 3, t))
    same(w, ra * rb - 3)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("t", TYPES)
def test_through_shared(t: str, schedule: str) -> None:
    n = 45
    a, y = values(t, n, seed=3), out(n, dtype=storage(t))
    fn(f"shared_{t}", schedule)(a, y)
    same(y, wrap(wrap(np64(a) + 1, t) * 2, t))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("t", TYPES)
def test_rowsum_into_wider(t: str, schedule: str) -> None:
    r, c = 5, 37
    x = values(t, r, c, seed=4)
    wide, narrow = out(r, dtype=I32), out(r, dtype=storage(t))
    fn(f"rowsum_{t}", schedule)(x, wide, narrow)
    s = np64(x).sum(1)
    same(wide, s)
    same(narrow, wrap(s, t))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("t", TYPES)
def test_casts(t: str, schedule: str) -> None:
    n = 51
    g = torch.Generator().manual_seed(5)
    x = torch.randint(-1000, 1000, (n,), generator=g).to(I32).to(DEVICE)
    y, back, f = out(n, dtype=storage(t)), out(n, dtype=I32), out(n)
    fn(f"casts_{t}", schedule)(x, y, back, f)
    rx = np64(x)
    same(y, wrap(rx, t))
    same(back, wrap(rx * 3, t) * 100)
    assert np.array_equal(f.cpu().double().numpy(), wrap(rx, t) * 0.5)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_dma_copy(schedule: str) -> None:
    r = 3
    x, y = values("s4", r, 16, seed=6), out(r, 16, dtype=torch.int8)
    fn("dma_s4", schedule)(x, y)
    same(y, np64(x)[:, ::-1] * 9)  # -72..63: every product fits s8


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_mixed_types(schedule: str) -> None:
    n = 70
    a, b = values("u4", n, seed=7), values("s4", n, seed=8)
    y, z, k = out(n, dtype=torch.int8), out(n, dtype=torch.uint8), out(n, dtype=torch.uint8)
    fn("mixed", schedule)(a, b, y, z, k)
    ra, rb = np64(a), np64(b)
    same(y, wrap(ra * rb + ra, "s6"))
    same(z, wrap(ra - rb, "u2"))
    same(k, wrap(ra, "bin1"))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_local_counter_wraps(schedule: str) -> None:
    n = 40
    g = torch.Generator().manual_seed(9)
    steps = torch.randint(0, 21, (n,), generator=g).to(I32).to(DEVICE)
    y = out(n, dtype=torch.uint8)
    fn("counter_u4", schedule)(steps, y)
    same(y, (3 * np64(steps)) % 16)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("n", "v"), [(0, 5), (3, -8), (7, 13)])  # 13: passed to an s4 parameter, it is -3
def test_host_code(n: int, v: int, schedule: str) -> None:
    size = 37
    a = values("s4", size, seed=10 + n)
    wide = out(size, dtype=I32)
    got = fn("host_s4", schedule)(a, n, v, wide)
    m = 3
    for _ in range(n):
        m = int(wrap(np.array(m + 5), "s4"))
    sv = int(wrap(np.array(v), "s4"))
    ra = np64(a)
    want = wrap(ra + m - sv, "s4")
    want[1] = wrap(want[1] + 7, "s4")
    want[0] = wrap(ra[2] * sv, "s4")
    assert got.dtype == torch.int8
    same(got, want)
    same(wide, ra * sv + m * 100)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("t", ["s4", "u4"])
def test_gemm(t: str, schedule: str) -> None:
    m, n, k = 70, 45, 83
    a, b = values(t, m, k, seed=11), values(t, n, k, seed=12)
    c = out(m, n, dtype=I32)
    getattr(load_once(CO.parent / "gemm4.co", schedule), f"gemm_{t}")(a, b, c)
    same(c, np64(a) @ np64(b).T)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_corners(schedule: str) -> None:
    n = 77
    a, b = values("s4", n, seed=13), values("u4", n, seed=14)
    q, r, sh = out(n, dtype=torch.int8), out(n, dtype=torch.int8), out(n, dtype=I32)
    nb, lt, cmp = out(n, dtype=torch.uint8), out(n, dtype=torch.uint8), out(n, dtype=I32)
    fn("corners", schedule)(a, b, q, r, sh, nb, lt, cmp)
    ra, rb = np64(a), np64(b)
    quot = np.trunc(ra / 3).astype(np.int64)  # C truncates toward zero
    same(q, wrap(quot, "s4"))
    same(r, wrap(ra - quot * 3, "s4"))
    same(sh, (ra >> 1) + (rb << 5))
    same(nb, wrap(~rb, "u4"))
    same(lt, (ra < rb).astype(np.int64))
    same(cmp, np.where(ra == -1, np.maximum(ra, rb), np.minimum(ra, rb)))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_zero_filled_tile(schedule: str) -> None:
    x, y = values("u4", 21, 16, seed=15), out(21, dtype=I32)
    fn("fill_zfill", schedule)(x, y)
    same(y, np64(x).sum(1))
