"""Bounded indices on the right of '#' (LANGUAGE.md 7.2): ``v(k)`` of a bounded name is the index k
among ``#v`` (``v(-1)`` the last, ``#v - 1``), ``idx(k)`` of a bounded index tuple its part k, with
the part's bound; and the bounded names of host-level ``with`` / ``foreach`` read in a kernel (a
``with`` name no host loop iterates is 0, a host loop's counter its value, both among their
bounds). These were refused ('#' of something that is not a bounded index) or, for the host's
names, a false "'t' is not declared". A ``foreach`` over names a ``where a <-> b`` relates is
refused where it stands, naming the clause (LANGUAGE.md gives it no meaning)."""

from __future__ import annotations

import pytest
import torch
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void last(global f32 [N] x, global f32 [M] y) {
  parallel p by M : block {
    with t in [8] {
      y.at(p) = x.at(p # t(-1)) - x.at(p # t(0)) + x.at(p # t(1));
    }
  }
}
__co__ void parts(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block {
    foreach idx = {i, j} in [4, 8] {
      if (p # idx(0) # j < N) y.at(p # idx(0) # idx(-1)) = x.at(p # i # j) * 3.0f;
    }
  }
}
__co__ void threads(global f32 [N] x, global f32 [M] y) {
  parallel p by cdiv(M, 4) : block, q by 4 : thread {
    with t in [5] {
      if (p # q < M) y.at(p # q) = x.at(p # q # t(-1)) + x.at(p # q # t(2));
    }
  }
}
__co__ void hostwith(global f32 [N] x, global f32 [M] y) {
  with t in [6] {
    parallel p by M : block {
      y.at(p) = x.at(p # t(-1)) - x.at(p # t(1)) + x.at(p # t);
    }
  }
}
__co__ void hostloop(global f32 [N] x, global f32 [N] y) {
  with idx = {i, j} in [3, 5] {
    foreach idx {
      parallel p by cdiv(N, 15) : block {
        if (p # idx(0) # idx(-1) < N) y.at(p # idx(0) # idx(-1)) = x.at(p # i # j) + 1.0f;
      }
    }
  }
}
__co__ void kernelloop(global f32 [N] x, global f32 [N] y) {
  with k in [7] {
    parallel p by cdiv(N, 7) : block {
      foreach k {
        if (p # k < N) y.at(p # k) = x.at(p # k) * 2.0f;
      }
    }
  }
}
"""


def _blocks(x: torch.Tensor, m: int, width: int, picks: list[int]) -> list[torch.Tensor]:
    """Element ``p * width + k`` of ``x`` for each program p < m, for each k of ``picks`` (zero past the end)."""
    out = []
    for k in picks:
        idx = torch.arange(m) * width + k
        out.append(torch.where(idx < x.numel(), x[idx.clamp(max=x.numel() - 1)], torch.zeros(())))
    return out


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_parts_of_bounded_names(schedule: str) -> None:
    out = translate_full(SOURCE, filename="parts.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"bounded_parts_{schedule}")
    for n, m in ((45, 6), (101, 13)):  # ragged: the last block reads past the end (zero)
        x = randn(n, seed=n)
        xd = x.double().cpu()
        y = poisoned(m)
        mod.last(x, y)
        a, b, c = _blocks(xd, m, 8, [7, 0, 1])
        assert_close(y, a.float() - b.float() + c.float())  # f32, left to right
        y = poisoned(m)
        mod.hostwith(x, y)
        a, b, c = _blocks(xd, m, 6, [5, 1, 0])
        assert_close(y, a.float() - b.float() + c.float())  # f32, left to right
        y = poisoned(m)
        mod.threads(x, y)
        a, b = _blocks(xd, m, 5, [4, 2])
        assert_close(y, (a + b).float())
        for fn, ref in ((mod.parts, xd * 3), (mod.hostloop, xd + 1), (mod.kernelloop, xd * 2)):
            y = poisoned(n)
            fn(x, y)
            assert_close(y, ref.float())


WHERE_KERNEL = """
__co__ void wh(global f32 [M, N] x, global f32 [N, M] y) {
  parallel {pm, pn} by [cdiv(M, 8), cdiv(N, 8)] : block {
    with {i, j} in [8, 8] where i <-> j {
      foreach i, j {
        if (pm # i < M && pn # j < N) y.at(pn # j, pm # i) = x.at(pm # i, pn # j);
      }
    }
  }
}
"""

WHERE_HOST = """
__co__ void wh(global f32 [M, N] x, global f32 [M, N] y) {
  with a in [4], b in [4] where a <-> b {
    foreach a {
      parallel p by M : block {
        y.at(p, a) = x.at(p, b) + 1.0f;
      }
    }
  }
}
"""


@pytest.mark.parametrize(("text", "at", "name"), [(WHERE_KERNEL, "5:15", "i"), (WHERE_HOST, "4:13", "a")])
def test_a_loop_over_names_where_relates(text: str, at: str, name: str) -> None:
    out = translate_full(text, filename="where.co")
    msg = str(out.failed["wh"])
    assert f"where.co:{at}: error: croq2triton does not translate a 'foreach' over '{name}'" in msg
    assert "LANGUAGE.md gives 'where' a grammar but no meaning" in msg
    assert "^" in msg and "hint: leave out 'where" in msg, msg


def test_where_without_a_loop_over_its_names_translates() -> None:
    text = """
__co__ void wk(global f32 [M, N] x, global f32 [M, N] y) {
  parallel p by M : block {
    with a in [4], b in [4] where a <-> b {
      y.at(p, a) = x.at(p, b) + 1.0f;
    }
  }
}
"""
    out = translate_full(text, filename="where.co")
    assert not out.failed
    mod = load_source(out.source, "where_no_loop")
    x = randn(5, 3)
    y = randn(5, 3, seed=1)
    want = y.clone()
    want[:, 0] = x[:, 0] + 1.0
    mod.wk(x, y)
    assert_close(y, want)
