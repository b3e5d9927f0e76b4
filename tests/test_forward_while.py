"""A tile staged in a buffer and read back after a ``while`` loop that rewrites it: under auto the
read was forwarded from the value stored before the loop (schedule/forward.py), so the loop's
stores were lost (y = x where y = 8x; an in-place scan with 242 of 250 outputs wrong; found by the
irregular-access probe, 2026-12-06). Both schedules, a local and a shared buffer, against torch."""

from __future__ import annotations

import pytest
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

LOCAL = """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    local f32 [1] s;
    s.at(0) = x.at(p # t);
    mutable int d = 1;
    while (d < 8) {
      s.at(0) = s.at(0) * 2.0f;
      d = d * 2;
    }
    y.at(p # t) = s.at(0);
  }
}
"""
SHARED = """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block {
    shared f32 [32] s;
    parallel t by 32 : thread {
      s.at(t) = x.at(p # t);
      sync.shared;
      mutable int d = 1;
      while (d < 8) {
        f32 v = s.at(t) + s.at(t ^ 1) - s.at(t ^ 1);
        sync.shared;
        s.at(t) = v * 2.0f;
        sync.shared;
        d = d * 2;
      }
      y.at(p # t) = s.at(t);
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("storage", ["local", "shared"])
def test_a_while_loop_that_rewrites_a_staged_buffer(storage: str, schedule: str) -> None:
    out = translate_full(LOCAL if storage == "local" else SHARED, filename="t.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"fwd_while_{storage}_{schedule}")
    x = randn(70, seed=1)
    y = poisoned(70)
    mod.f(x, y)
    assert_close(y, x.double().cpu() * 8.0, atol=1e-5, rtol=1e-6)
