"""Concatenation of index tuples (LANGUAGE.md 7.1: ``{t, 4}`` is the items of ``t``, then 4) at host
level and in a kernel, element-wise arithmetic of a concatenated tuple used as a shape, positions
counted from either end; and a position past the end of a concatenated tuple, the user's mistake.
Host-level ``c = {a, 8}`` of an ituple ``a`` was refused ('cannot use the name 'a' as an integer or
scalar value at host level'), and ``s : [b * 8]`` of an ituple ``b`` counted one extent."""

from __future__ import annotations

import pytest
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.errors import CroqError

SOURCE = """
__co__ void cat(global f32 [M, N] x, global f32 [M, N] y) {
  a = {4};
  ituple<2> c = {a, 8};
  d = {1, c, a};
  parallel {pm, pn} by [cdiv(M, c(0)), cdiv(N, c(-1))] : block {
    foreach i in [c(0)], j in [d(2)] {
      r = pm * c(0) + i;
      s = pn * d(2) + j;
      if (r < M && s < N) y.at(r, s) = x.at(r, s) * 2.0f + __to<f32>(d(3) + d(0));
    }
  }
}
__co__ void tiles(global f32 [M, N] x, global f32 [M, N] y) {
  a = {2};
  b = {a, 3};
  s : [b * 8];
  parallel {pm, pn} by [cdiv(M, s(0)), cdiv(N, s(1))] : block {
    t = dma.copy x.subspan(s).at(pm, pn) => shared;
    foreach {i, j} in s {
      if (pm * s(0) + i < M && pn * s(1) + j < N)
        y.at(pm * s(0) + i, pn * s(1) + j) = t.data.at(i, j) - 1.0f;
    }
  }
}
__co__ void dev(global f32 [M, N] x, global f32 [M, N] y) {
  a = {4};
  parallel {pm, pn} by [cdiv(M, 4), cdiv(N, 8)] : block {
    c = {a, 8};
    e = {pm, pn};
    g = {e, 1};
    foreach i in [c(0)], j in [c(1)] {
      r = g(0) * c(0) + i;
      s = g(1) * c(1) + j;
      if (r < M && s < N) y.at(r, s) = x.at(r, s) + __to<f32>(g(2) + g(-1));
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_concatenated_tuples(schedule: str) -> None:
    out = translate_full(SOURCE, filename="concat.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"concat_{schedule}")
    for m, n in ((13, 29), (5, 7)):  # ragged: no multiple of any tile
        x = randn(m, n, seed=m)
        ref = x.double()
        y = poisoned(m, n)
        mod.cat(x, y)
        assert_close(y, (ref * 2 + 5).float())
        y = poisoned(m, n)
        mod.tiles(x, y)
        assert_close(y, (ref - 1).float())
        y = poisoned(m, n)
        mod.dev(x, y)
        assert_close(y, (ref + 2).float())


def test_a_position_past_a_concatenation() -> None:
    text = """
__co__ void bad(global f32 [M] x) {
  a = {4, 2};
  c = {a, 8};
  parallel p by c(3) : block { x.at(p) = 1.0f; }
}
"""
    with pytest.raises(CroqError) as err:
        translate_full(text, filename="bad.co")
    msg = str(err.value)
    assert "bad.co:5:19: error: 'c(3)': the ituple 'c' has 3 elements" in msg, msg
    assert "^" in msg and "hint:" in msg
