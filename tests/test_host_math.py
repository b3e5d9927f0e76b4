"""Host code between launches (LANGUAGE.md 7.5, 7.7): ``++x`` / ``x++`` / ``--x`` of an integer
scalar in an expression update it where the expression stands (C semantics), and math builtins
(``__sqrt``, ``__exp``, ``__pow``, ``__round``, ...) compute in f32 as kernels do (both were
refused: "cannot evaluate ... at host level")."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_util import poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void host_steps(global f32 [N] x, global f32 [N] y, int k) {
  mutable int i = k;
  int a = i++;
  int b = ++i;
  int c = --i;
  int d = i-- * 10;
  y.at(0) = a;
  y.at(1) = b;
  y.at(2) = c;
  y.at(3) = d;
  y.at(4) = i;
  y.at(5) = __sqrt(x.at(5)) + __exp(x.at(6)) * __tanh(x.at(7));
  y.at(6) = __pow(x.at(8), 2.0f) + __round(2.5f) + __round(-3.5f) + __fabs(x.at(9));
  f32 r = __rsqrt(x.at(5)) + __fmaf(x.at(6), x.at(7), x.at(8));
  y.at(7) = r;
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    if (p # t >= 8 && p # t < N) y.at(p # t) = x.at(p # t) + __sqrt(x.at(5));
  }
}
"""


def test_host_increments_and_math() -> None:
    out = translate_full(SOURCE, filename="host.co")
    assert not out.failed, out.failed
    mod = load_source(out.source, "host_math")
    n = 50
    x = randn(n, seed=4).abs() + 0.5
    y = poisoned(n)
    mod.host_steps(x, y, 7)  # type: ignore[attr-defined]
    # a = 7 (i 8), b = 9, c = 8, d = 80 (i 7)
    assert y[:5].tolist() == [7.0, 9.0, 8.0, 80.0, 7.0]
    f = x.cpu().numpy().astype(np.float32)
    f32 = np.float32
    want5 = f32(np.sqrt(f[5])) + f32(np.exp(f[6])) * f32(np.tanh(f[7]))
    want6 = f32(f[8] ** 2) + 3.0 - 4.0 + f32(abs(f[9]))
    want7 = f32(1 / np.sqrt(f[5])) + f32(float(f[6]) * float(f[7]) + float(f[8]))
    got = y.cpu().numpy()
    assert got[5:8] == pytest.approx([want5, want6, want7], rel=1e-6)
    assert torch.allclose(y[8:].cpu(), x[8:].cpu() + float(np.sqrt(f[5])), rtol=1e-6)


def test_an_increment_of_something_other_than_an_integer_scalar_is_an_error() -> None:
    out = translate_full(SOURCE.replace("int a = i++;", "f32 z = 1.0f;\n  int a = z++;"), filename="host.co")
    assert "'++' updates an integer scalar, and 'z' is not one" in str(out.failed.get("host_steps")), out.failed
