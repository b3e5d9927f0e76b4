"""The interpreter's unused integer-overflow check is off (croq2triton/runtime/interpreter_overflow.py):
what a kernel computes is unchanged (integers past their range wrap, as compiled code's do), and the
check, which never reported anything without ``debug``, no longer runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_util import DEVICE, load_co, poisoned

pytestmark = pytest.mark.skipif(DEVICE != "cpu", reason="about Triton's interpreter (the CPU run)")

SOURCE = """
__co__ void mix(global s32 [N] x, global u32 [N] u, global s32 [N] y, global u32 [N] v) {
  parallel b by cdiv(N, 32) : block, t by 32 : thread {
    int i = b # t;
    if (i < N) {
      y.at(i) = x.at(i) * 1000003 + 2147480000;
      mutable u32 h = 2166136261u;
      foreach k in [4] { h = (h ^ ((u.at(i) >> (8 * k)) & 255u)) * 16777619u; }
      v.at(i) = h - 7u;
    }
  }
}
"""


def test_the_check_is_off_and_integers_still_wrap(tmp_path: object) -> None:
    from triton.runtime import interpreter

    path = tmp_path / "mix.co"  # type: ignore[operator]
    path.write_text(SOURCE)
    mod = load_co(path)
    assert interpreter.interpreter_builder.options.sanitize_overflow is False
    assert interpreter.InterpreterBuilder().options.sanitize_overflow is False
    n = 77
    g = torch.Generator().manual_seed(7)
    x = torch.randint(-(2**31), 2**31 - 1, (n,), generator=g, dtype=torch.int64).to(torch.int32)
    u = torch.randint(0, 2**32 - 1, (n,), generator=g, dtype=torch.int64).to(torch.uint32)
    y, v = poisoned(n, dtype=torch.int32), poisoned(n, dtype=torch.uint32)
    mod.mix(x, u, y, v)
    want_y = (x.numpy().astype(np.int64) * 1000003 + 2147480000 + 2**31) % 2**32 - 2**31
    h = np.full(n, 2166136261, np.uint64)
    for k in range(4):
        h = ((h ^ ((u.numpy().astype(np.uint64) >> (8 * k)) & 255)) * 16777619) % 2**32
    assert (y.numpy().astype(np.int64) == want_y).all()
    assert (v.numpy().astype(np.uint64) == (h - 7) % 2**32).all()
