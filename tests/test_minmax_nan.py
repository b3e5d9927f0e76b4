"""``__min`` / ``__max`` of floats with NaN operands: the NaN loses (CUDA's ``fminf`` / ``fmaxf``,
what compiled Triton computes for ``tl.minimum`` / ``tl.maximum``), in the interpreter as on the GPU
(croq2triton/runtime/interpreter_minmax.py; the interpreter returned the NaN), element-wise and in
a running fold over a row, in both schedules (the auto schedule folds the row into ``tl.max``)."""

from __future__ import annotations

import pytest
import torch
from kernel_util import DEVICE, poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void pick(global f32 [N] a, global f32 [N] b, global f32 [N] lo, global f32 [N] hi) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread {
    if (p # t < N) {
      lo.at(p # t) = __min(a.at(p # t), b.at(p # t));
      hi.at(p # t) = __max(a.at(p # t), b.at(p # t));
    }
  }
}

__co__ void row_range(global f32 [M, N] x, global f32 [M] hi, global f32 [M] lo) {
  parallel p by cdiv(M, 32) : block, t by 32 : thread {
    if (p # t < M) {
      mutable f32 h = -1000000.0f;
      mutable f32 l = 1000000.0f;
      foreach j in [N] {
        h = __max(h, x.at(p # t, j));
        l = __min(x.at(p # t, j), l);
      }
      hi.at(p # t) = h;
      lo.at(p # t) = l;
    }
  }
}
"""


def _with_nans(x: torch.Tensor, every: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    pick = torch.rand(x.shape, generator=g) < 1.0 / every
    return torch.where(pick.to(x.device), torch.full_like(x, float("nan")), x)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_nan_operand_loses(schedule: str) -> None:
    out = translate_full(SOURCE, filename="minmax.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"minmax_{schedule}")
    n = 333
    a, b = _with_nans(randn(n, seed=1), 4, 2), _with_nans(randn(n, seed=3), 4, 4)
    lo, hi = poisoned(n), poisoned(n)
    mod.pick(a, b, lo, hi)  # type: ignore[attr-defined]
    # both NaN: NaN; one NaN: the other operand
    torch.testing.assert_close(lo.cpu(), torch.fmin(a, b).cpu(), equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(hi.cpu(), torch.fmax(a, b).cpu(), equal_nan=True, rtol=0, atol=0)
    m, k = 45, 70
    x = _with_nans(randn(m, k, seed=5), 9, 6)
    x[3] = float("nan")  # a row of NaNs only: the starting values stay
    hi, lo = poisoned(m), poisoned(m)
    mod.row_range(x, hi, lo)  # type: ignore[attr-defined]
    want_hi = torch.where(x.isnan(), torch.tensor(-1.0e6, device=x.device), x).amax(1)
    want_lo = torch.where(x.isnan(), torch.tensor(1.0e6, device=x.device), x).amin(1)
    torch.testing.assert_close(hi.cpu(), want_hi.cpu(), rtol=0, atol=0)
    torch.testing.assert_close(lo.cpu(), want_lo.cpu(), rtol=0, atol=0)
    assert DEVICE in ("cpu", "cuda")
