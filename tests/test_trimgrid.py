"""Programs that can do nothing left out of the grid under --schedule auto (schedule/trimgrid.py): a
block split one row a program runs M programs, not cdiv(M, 64) * 64, where every store is guarded
by the row's bound; a grid with a store left unguarded, or of another form, stays.
Each program runs in the interpreter against float64 torch on ragged sizes, outputs poisoned."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, poisoned, randn, recording_launch

from croq2triton.api import load_source, translate_full
from croq2triton.schedule.trimgrid import trim_grid
from croq2triton.tir import expr as E
from croq2triton.tir import nodes as N

PROGRAM = """
__co__ void row_max(global f32 [M, N] x, global f32 [M] out) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 m = -inf;
      foreach j in [N] { m = __max(m, x.at(r, j)); }
      out.at(r) = m;
    }
  }
}
__co__ void row_max_but_last(global f32 [M, N] x, global f32 [M] out) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M - 1) {
      mutable f32 m = -inf;
      foreach j in [N] { m = __max(m, x.at(r, j)); }
      out.at(r) = m;
    }
  }
}
__co__ void row_max_else(global f32 [M, N] x, global f32 [M] out) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r >= M) { } else {
      mutable f32 m = -inf;
      foreach j in [N] { m = __max(m, x.at(r, j)); }
      out.at(r) = m;
    }
  }
}
"""


def _module() -> tuple[str, object]:
    out = translate_full(PROGRAM, filename="trim.co", schedule="auto")
    assert not out.failed, out.failed
    return out.source, load_source(out.source, "trimgrid_test")


def _launcher(source: str, fn: str) -> str:
    return source.split(f"def {fn}(")[1].split("\n\n\n")[0]


def test_a_split_row_kernel_runs_one_program_a_row() -> None:
    """Every store is guarded by ``r < M`` (the ``if``, or the tensor's own bound, which masks every
    store: a row past ``M`` writes nothing), so each launcher runs ``M`` programs of one row."""
    source, _ = _module()
    for fn in ("row_max", "row_max_but_last", "row_max_else"):
        body = _launcher(source, fn)
        assert "(M,)," in body and "_rt.cdiv(M, 64) * 64" not in body, fn


def _rounded_grid(kernel: N.Kernel) -> N.Kernel:
    m = E.Var("M", "i32")
    return dataclasses.replace(kernel, grid=(E.Bin("*", E.CDiv(m, E.Const(64)), E.Const(64)),))


def test_the_proof_on_the_ir() -> None:
    """The rounded-up grid of the split kernel is cut at M; with a store left unguarded, or a grid
    of another form, it stays."""
    out = translate_full(PROGRAM, filename="trim.co", schedule="auto")
    kernel = next(k for k in out.ir["row_max"] if k.name == "row_max_k0")
    rounded = _rounded_grid(kernel)
    assert trim_grid(rounded).grid == (E.Var("M", "i32"),)

    def unguarded(body: list[N.Stmt]) -> list[N.Stmt]:
        out: list[N.Stmt] = []
        for s in body:
            if isinstance(s, N.Store):
                s = dataclasses.replace(s, mask=None)
            elif isinstance(s, N.If):
                s = dataclasses.replace(s, then=unguarded(s.then), orelse=unguarded(s.orelse))
            elif isinstance(s, N.For):
                s = dataclasses.replace(s, body=unguarded(s.body))
            out.append(s)
        return out

    assert trim_grid(dataclasses.replace(rounded, body=unguarded(rounded.body))).grid == rounded.grid
    other = dataclasses.replace(kernel, grid=(E.Bin("+", E.Var("M", "i32"), E.Const(7)),))
    assert trim_grid(other).grid == other.grid


@pytest.mark.parametrize("m", [1, 3, 70])
def test_each_form_computes_the_row_maxima(m: int) -> None:
    _, mod = _module()
    x = randn(m, 37, seed=m)
    want = x.double().amax(1).cpu()
    for fn in ("row_max", "row_max_but_last", "row_max_else"):
        out = poisoned(m)
        ran, launch = recording_launch()
        getattr(mod, fn)(x, out, _launch=launch)
        assert ran, fn
        got = out.cpu()
        if fn == "row_max_but_last":  # the last row is never written: still NaN
            assert torch.isnan(got[-1]) and (m == 1 or not torch.isnan(got[:-1]).any())
            got, ref = got[:-1], want[:-1]
        else:
            ref = want
        if len(ref):
            assert_near_max(got, ref, 0.0, f"{fn} at {m} rows on {DEVICE}")
