"""Float ``/`` and ``%`` in host code are C's, as in a kernel (LANGUAGE.md 4.4, 7.7, 8): ``/`` is
IEEE 754's, by a zero an infinity whose sign is the product of the operands' signs, NaN for
``0 / 0`` (``_rt.fdiv``); ``%`` is C's ``fmod`` (and Triton's ``%`` of float tensors), the
remainder of the quotient truncated toward zero, of the dividend's sign, NaN by a zero
(``_rt.fmod``); constants fold the same way.  Before, the launcher raised Python's
ZeroDivisionError and floored ``%`` (``-7.5 % 2.0`` was 0.5, not -1.5), and so did a kernel's
``%`` of two constants (and of two parameters in Triton's interpreter)."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
import torch
from kernel_util import DEVICE

from croq2triton.api import load_source, translate_full

SRC = """
__co__ void divs(global f32 [2, 6] o, f32 a, f32 b, f64 c) {
  o.at(0, 0) = a / b;
  f32 q = a;
  q /= b;
  o.at(0, 1) = q;
  o.at(0, 2) = 1.0f / (b - b);
  o.at(0, 3) = (a - a) / b;
  o.at(0, 4) = a / -0.0f + 1.0f / 0.0f * 0.0f;
  o.at(0, 5) = __to<f32>(c / __to<f64>(b));
  parallel by 1 : block, t by 1 : thread {
    o.at(1, 0) = a / b;
    f32 q2 = a;
    q2 /= b;
    o.at(1, 1) = q2;
    o.at(1, 2) = 1.0f / (b - b);
    o.at(1, 3) = (a - a) / b;
    o.at(1, 4) = a / -0.0f + 1.0f / 0.0f * 0.0f;
    o.at(1, 5) = __to<f32>(c / __to<f64>(b));
  }
}

__co__ void mods(global f32 [2, 5] o, f32 a, f32 b, f64 c) {
  o.at(0, 0) = a % b;
  f32 r = a;
  r %= b;
  o.at(0, 1) = r;
  o.at(0, 2) = -7.5f % 2.0f + 7.5f % -2.0f * 10.0f;
  o.at(0, 3) = a % (b - b);
  o.at(0, 4) = __to<f32>(c % __to<f64>(a));
  parallel by 1 : block, t by 1 : thread {
    o.at(1, 0) = a % b;
    f32 r2 = a;
    r2 %= b;
    o.at(1, 1) = r2;
    o.at(1, 2) = -7.5f % 2.0f + 7.5f % -2.0f * 10.0f;
    o.at(1, 3) = a % (b - b);
    o.at(1, 4) = __to<f32>(c % __to<f64>(a));
  }
}

__co__ void counters(global f32 [2, 8] o) {
  foreach i in [4] {
    o.at(0, i) = __to<f32>(i) / __to<f32>(i + 2);
    o.at(0, i + 4) = __to<f32>(i - 3) % __to<f32>(i + 1);
  }
  parallel by 1 : block, t by 1 : thread {
    foreach k in [4] {
      o.at(1, k) = __to<f32>(k) / __to<f32>(k + 2);
      o.at(1, k + 4) = __to<f32>(k - 3) % __to<f32>(k + 1);
    }
  }
}
"""

_MOD = None


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _mod():  # noqa: ANN202
    global _MOD
    if _MOD is None:
        _MOD = load_source(translate_full(SRC, filename="divs.co").source, "host_divs", origin="divs.co")
    return _MOD


def _want(a: float, b: float, c: float) -> list[float]:
    """IEEE's quotients, in f32 (and one in f64), as C computes them."""
    f = np.float32
    with np.errstate(divide="ignore", invalid="ignore"):
        return [
            float(f(a) / f(b)),
            float(f(a) / f(b)),
            float(f(1) / (f(b) - f(b))),
            float((f(a) - f(a)) / f(b)),
            float(f(a) / f(-0.0) + f(math.nan)),  # inf * 0 is NaN
            float(f(np.float64(c) / np.float64(f(b)))),
        ]


def _same(got: list[float], want: list[float]) -> bool:
    """Equal, NaN where NaN, and the sign of each infinity and zero too."""
    return all(
        (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w))
        for g, w in zip(got, want, strict=True)
    )


@pytest.mark.parametrize(
    ("a", "b", "c"), [(3.0, 0.0, 2.0), (-3.0, 0.0, 1.0), (0.0, 0.0, 0.0), (2.5, -0.0, -4.0), (1.0, 3.0, 0.1)]
)
def test_float_division_by_zero_is_ieee_on_the_host(a: float, b: float, c: float) -> None:
    o = torch.zeros(2, 6, device=DEVICE)
    _mod().divs(o, a, b, c)  # no ZeroDivisionError
    want = _want(a, b, c)
    assert want[4] != want[4]
    host, kernel = o.cpu().tolist()
    assert _same(host, want), (host, want)
    if math.copysign(1, b) > 0:  # (Triton's interpreter passes a -0.0 argument as +0.0)
        assert _same(kernel, want), (kernel, want)


@pytest.mark.parametrize(
    ("a", "b", "c"), [(-7.5, 2.0, 10.0), (7.5, -2.0, -10.0), (5.0, 0.0, 3.0), (1.0, math.inf, -1e300), (-4.0, 4.0, 1.5)]
)
def test_float_remainder_is_c_fmod(a: float, b: float, c: float) -> None:
    o = torch.zeros(2, 5, device=DEVICE)
    _mod().mods(o, a, b, c)
    f = np.float32
    with np.errstate(divide="ignore", invalid="ignore"):
        want = [
            float(np.fmod(f(a), f(b))),
            float(np.fmod(f(a), f(b))),
            -1.5 + 1.5 * 10,  # C: fmod(-7.5, 2) = -1.5, fmod(7.5, -2) = 1.5 (Python: 0.5 and -0.5)
            float(np.fmod(f(a), f(b) - f(b))),
            float(f(np.fmod(np.float64(c), np.float64(f(a))))),
        ]
    host, kernel = o.cpu().tolist()
    assert _same(host, want), (host, want)
    assert _same(kernel, want), (kernel, want)


def test_floats_of_loop_counters_divide_as_floats() -> None:
    # the counters' floats are exact, so the launcher computes with the integers; their '/' was
    # Python's '//' (0 / 2, 1 / 3 ... all 0) and their '%' floored (-3 % 1 ... of the other sign)
    o = torch.zeros(2, 8, device=DEVICE)
    _mod().counters(o)
    want = [f32(i / (i + 2)) for i in range(4)] + [math.fmod(i - 3, i + 1) for i in range(4)]
    host, kernel = o.cpu().tolist()
    assert _same(host, want), (host, want)
    assert _same(kernel, want), (kernel, want)


def test_the_launcher_divides_floats_through_fdiv() -> None:
    launcher = translate_full(SRC, filename="divs.co").source.split("def divs(")[1]
    assert '_rt.elem_set(_F, "o", o, (0, 0), _rt.fdiv(a, b), 3)' in launcher, launcher
    assert 'float("nan")' in launcher  # a / -0.0f + 1.0f / 0.0f * 0.0f: the constant part folds to NaN
    assert '_rt.elem_set(_F, "o", o, (0, 0), _rt.fmod(a, b), 24)' in launcher, launcher
    assert '_rt.elem_set(_F, "o", o, (0, 2), 13.5, 28)' in launcher, launcher  # folded as C's fmod
