"""runtime/libmath.py: the libdevice builtins in Triton's interpreter (portable formulas) and on a GPU
(libdevice itself), against float64 NumPy on fresh random inputs over each function's domain."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from kernel_util import DEVICE

if DEVICE == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from croq2triton.runtime import libmath as _libm  # noqa: E402

N = 4099  # ragged: not a multiple of the block


@triton.jit
def _unary(x_ptr, out_ptr, n, WHICH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.5)
    if WHICH == "atan":
        y = _libm.atan(x)
    elif WHICH == "asin":
        y = _libm.asin(x)
    elif WHICH == "acos":
        y = _libm.acos(x)
    elif WHICH == "tan":
        y = _libm.tan(x)
    elif WHICH == "expm1":
        y = _libm.expm1(x)
    elif WHICH == "log1p":
        y = _libm.log1p(x)
    elif WHICH == "sinh":
        y = _libm.sinh(x)
    elif WHICH == "cosh":
        y = _libm.cosh(x)
    elif WHICH == "tanh":
        y = _libm.tanh(x)
    elif WHICH == "trunc":
        y = _libm.trunc(x)
    elif WHICH == "rint":
        y = _libm.rint(x)
    elif WHICH == "log10":
        y = _libm.log10(x)
    elif WHICH == "exp10":
        y = _libm.exp10(x)
    elif WHICH == "cbrt":
        y = _libm.cbrt(x)
    else:
        y = _libm.round(x)
    tl.store(out_ptr + offs, y, mask=mask)


@triton.jit
def _binary(x_ptr, y_ptr, out_ptr, n, WHICH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    if WHICH == "atan2":
        r = _libm.atan2(x, y)
    elif WHICH == "hypot":
        r = _libm.hypot(x, y)
    elif WHICH == "copysign":
        r = _libm.copysign(x, y)
    else:
        r = _libm.pow(x, y)
    tl.store(out_ptr + offs, r, mask=mask)


def _inputs(lo: float, hi: float, seed: int, special: list[float]) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.uniform(lo, hi, N).astype(np.float32)
    x[: len(special)] = special
    return x


def _run(kernel, *arrays: np.ndarray, which: str) -> np.ndarray:
    ts = [torch.from_numpy(a).to(DEVICE) for a in arrays]
    out = torch.full((N,), float("nan"), device=DEVICE)
    kernel[(triton.cdiv(N, 1024),)](*ts, out, N, WHICH=which, BLOCK=1024)
    return out.cpu().numpy()


UNARY = [
    ("atan", np.arctan, -40.0, 40.0, [0.0, -0.0, 1.0, -1.0, 0.2679, 1e-8, 1e6]),
    ("asin", np.arcsin, -1.0, 1.0, [0.0, 1.0, -1.0, 0.5, 1e-7]),
    ("acos", np.arccos, -1.0, 1.0, [0.0, 1.0, -1.0, -0.5]),
    ("tan", np.tan, -1.5, 1.5, [0.0, 1e-6, 0.785398]),
    ("expm1", np.expm1, -10.0, 10.0, [0.0, 1e-7, -1e-7, 0.5, -0.5, 1e-3]),
    ("log1p", np.log1p, -0.99, 10.0, [0.0, 1e-7, -1e-7, 1e-3]),
    ("sinh", np.sinh, -10.0, 10.0, [0.0, 1e-7, -1e-5, 1e-2]),
    ("cosh", np.cosh, -10.0, 10.0, [0.0, 1e-7]),
    ("tanh", np.tanh, -12.0, 12.0, [0.0, 1e-7, -1e-7, 30.0, -30.0]),
    ("round", None, -100.0, 100.0, [0.5, -0.5, 1.5, -2.5, 2.49, 0.0]),
    ("trunc", np.trunc, -100.0, 100.0, [0.5, -0.5, 1.99, -1.99, 0.0, 1e9]),
    ("rint", np.rint, -100.0, 100.0, [0.5, -0.5, 1.5, -2.5, 2.5, 3.5, 0.49999997, 1e9]),
    ("log10", np.log10, 1e-3, 1e6, [1.0, 10.0, 1000.0, 1e-3]),
    ("exp10", lambda v: 10.0**v, -10.0, 10.0, [0.0, 1.0, -1.0, 3.0]),
    ("cbrt", np.cbrt, -1000.0, 1000.0, [0.0, 8.0, -27.0, 1e-6, 1000.0]),
]


@pytest.mark.parametrize(("which", "ref", "lo", "hi", "special"), UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_float64(which, ref, lo, hi, special) -> None:
    x = _inputs(lo, hi, 100 + [u[0] for u in UNARY].index(which), special)
    got = _run(_unary, x, which=which).astype(np.float64)
    d = x.astype(np.float64)
    want = np.where(d < 0, -np.floor(-d + 0.5), np.floor(d + 0.5)) if ref is None else ref(d)
    assert not np.isnan(got).any(), f"{which}: NaN where float64 has {want[np.isnan(got)][:4]}"
    # a few f32 ulps of the result, and of the input's own rounding where the function amplifies it
    np.testing.assert_allclose(got, want, rtol=4e-6, atol=2e-7 if which != "tan" else 1e-6)


def test_atan2_every_quadrant() -> None:
    y = _inputs(-5.0, 5.0, 7, [0.0, 1.0, -1.0, 0.0, 2.0, -2.0])
    x = _inputs(-5.0, 5.0, 8, [1.0, 0.0, 0.0, -1.0, -3.0, -3.0])
    got = _run(_binary, y, x, which="atan2").astype(np.float64)
    np.testing.assert_allclose(got, np.arctan2(y.astype(np.float64), x.astype(np.float64)), rtol=4e-6, atol=2e-7)


def test_hypot_and_copysign() -> None:
    a = _inputs(-1e20, 1e20, 11, [3.0, 0.0, np.inf, -np.inf, 1e-30, np.nan])
    b = _inputs(-1e20, 1e20, 12, [4.0, 0.0, np.nan, 2.0, 1e-30, np.inf])
    got = _run(_binary, a, b, which="hypot").astype(np.float64)
    np.testing.assert_allclose(got, np.hypot(a.astype(np.float64), b.astype(np.float64)), rtol=4e-7)
    s = _inputs(-5.0, 5.0, 13, [-0.0, 0.0, -np.inf])
    m = _inputs(-5.0, 5.0, 14, [1.0, -1.0, 2.0])
    got = _run(_binary, m, s, which="copysign")
    np.testing.assert_array_equal(got, np.copysign(m, s))


def test_pow_signs_and_integers() -> None:
    base = _inputs(0.01, 8.0, 9, [-2.0, -2.0, -3.0, 0.0, 5.0, -1.5])
    expo = _inputs(-3.0, 3.0, 10, [3.0, 2.0, -1.0, 2.0, 0.0, 0.5])
    got = _run(_binary, base, expo, which="pow").astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = np.power(base.astype(np.float64), expo.astype(np.float64))
    assert np.isnan(got[5]) and np.isnan(want[5])  # a negative base to a fractional power
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-7)
