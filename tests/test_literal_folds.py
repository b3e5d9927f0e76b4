"""Arithmetic of float literals only is typed as one literal (docs/types.md: an unsuffixed literal
takes the type of the other operand, as Triton's literals do; LANGUAGE.md 4.4 promotes like C
otherwise): ``x * (1.0 / 3.0)`` with ``x`` an f32 is an f32 product by f32(1/3), as ``x * (2.0 * 3.0)``
is ``x * 6.0`` and ``x * 0.3333333333333333`` is. Before, the quotient (which folding keeps as an
operation) made the product an f64 one while the folded product stayed f32."""

from __future__ import annotations

import pytest
import torch
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void lit(global f32 [N] x, global f32 [N] a, global f32 [N] b, global f32 [N] c, global f32 [N] d) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    if (p # t < N) {
      a.at(p # t) = x.at(p # t) * (1.0 / 3.0);
      b.at(p # t) = x.at(p # t) * 0.3333333333333333;
      c.at(p # t) = x.at(p # t) * (2.0 * 3.0);
      d.at(p # t) = (1.0 - 2.0 / 3.0) * x.at(p # t);
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_literal_arithmetic_is_one_literal(schedule: str) -> None:
    out = translate_full(SOURCE, filename="lit.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    assert "float64" not in out.source  # no product is carried out in f64
    mod = load_source(out.source, f"literal_folds_{schedule}")
    n = 77
    x = randn(n, seed=3)
    a, b, c, d = (poisoned(n) for _ in range(4))
    mod.lit(x, a, b, c, d)
    third = torch.tensor(1.0 / 3.0, dtype=torch.float32)  # the literal rounded to f32 once
    assert_close(a, x.cpu() * third)
    assert_close(b, a)
    assert_close(c, x * 6.0)
    assert_close(d, torch.tensor(1.0 - 2.0 / 3.0, dtype=torch.float32) * x.cpu())
