"""A loop whose every iteration loads a tile and folds it runs several iterations a step, one tile as
many times as wide along the axis its counter walks (schedule/coarsen.py; ``TileSchedule.coarsen``,
under ``--schedule auto`` enough iterations that a step loads 8 KB).  Rows staged through shared
memory a block of columns at a time, columns staged a block of rows at a time, a max of negative
data (the positions past the loop fold the identity, not the zeros a masked load reads), two folds
of one tile; a near miss (a per-column weight read apart from the walk) stays as written.  Each in
both schedules against float64 torch on ragged sizes (not multiples of the tile, nor of the step),
outputs poisoned; tuning points 1, 2 and 8 give the same results."""

from __future__ import annotations

from functools import cache

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.options import Point

SRC = """
// row sums, rows staged a block of 64 columns at a time (8 KB steps: as written)
__co__ void row_sums_staged(global f32 [M, N] x, global f32 [M] s) {
  parallel p by cdiv(M, 32) : block, t by 32 : thread {
    mutable f32 acc = 0.0f;
    foreach c in [cdiv(N, 64)] {
      f = dma.copy x.subspan(32, 64).at(p, c) => shared;
      foreach j in [64] { acc += f.data.at(t, j); }
    }
    if (p # t < M) s.at(p # t) = acc;
  }
}

// the row max and the sum of squares of f16 data, one staged tile of 16 x 128 a step
__co__ void row_max_sumsq_f16(global f16 [M, N] x, global f32 [M] mx, global f32 [M] ss) {
  parallel p by cdiv(M, 16) : block, t by 16 : thread {
    mutable f32 m = -inf;
    mutable f32 q = 0.0f;
    foreach c in [cdiv(N, 128)] {
      f = dma.copy x.subspan(16, 128).at(p, c) => shared;
      foreach j in [128] {
        f32 v = f.data.at(t, j);
        m = __max(m, v);
        q += v * v;
      }
    }
    if (p # t < M) { mx.at(p # t) = m; ss.at(p # t) = q; }
  }
}

// column sums, columns staged a block of 16 rows at a time (the walk along the tile's rows)
__co__ void col_sums_staged(global f32 [M, N] x, global f32 [N] s) {
  parallel p by cdiv(N, 64) : block, t by 64 : thread {
    mutable f32 acc = 0.0f;
    foreach rb in [cdiv(M, 16)] {
      f = dma.copy x.subspan(16, 64).at(rb, p) => shared;
      foreach i in [16] { acc += f.data.at(i, t); }
    }
    if (p # t < N) s.at(p # t) = acc;
  }
}

// near miss: each column's weight read apart from the walk (w.at(j), the same for every step)
__co__ void weighted_staged(global f32 [M, N] x, global f32 [64] w, global f32 [M] s) {
  parallel p by cdiv(M, 32) : block, t by 32 : thread {
    mutable f32 acc = 0.0f;
    foreach c in [cdiv(N, 64)] {
      f = dma.copy x.subspan(32, 64).at(p, c) => shared;
      foreach j in [64] { acc += f.data.at(t, j) * w.at(j); }
    }
    if (p # t < M) s.at(p # t) = acc;
  }
}
"""

COARSENED = ("row_sums_staged", "row_max_sumsq_f16", "col_sums_staged")


@cache
def _module(schedule: str, factor: int | None = None) -> tuple[str, object]:
    point = None
    if factor is not None:
        point = Point.of({}, {f"{fn}_k0": {"coarsen": factor, "loop_split": 1} for fn in COARSENED})
    out = translate_full(SRC, filename="coarsen.co", schedule=schedule, point=point)
    assert not out.failed, out.failed
    return out.source, load_source(out.source, f"coarsen_{schedule}_{factor}")


def _run(mod: object, m: int, n: int) -> None:
    x = randn(m, n, seed=m * 7 + n)
    s = poisoned(m)
    mod.row_sums_staged(x, s)  # type: ignore[attr-defined]
    assert_near_max(s, x.double().sum(1), 1e-5, "row_sums_staged")
    xh = (x.abs() + 0.5).neg().half()  # all negative: a zero folded into the max would show
    mx, ss = poisoned(m), poisoned(m)
    mod.row_max_sumsq_f16(xh, mx, ss)  # type: ignore[attr-defined]
    # (the source's own last tile reads zeros past N into its max: the DMA's zero fill)
    pad = (-n) % 128
    want = xh.double().amax(1).clamp(min=0.0) if pad else xh.double().amax(1)
    assert_near_max(mx, want, 1e-6, "row_max_sumsq_f16 max")
    assert_near_max(ss, (xh.double() ** 2).sum(1), 1e-5, "row_max_sumsq_f16 sumsq")
    c = poisoned(n)
    mod.col_sums_staged(x, c)  # type: ignore[attr-defined]
    assert_near_max(c, x.double().sum(0), 1e-5, "col_sums_staged")
    w = randn(64, seed=5)
    s = poisoned(m)
    mod.weighted_staged(x, w, s)  # type: ignore[attr-defined]
    cols = torch.arange(n) % 64
    assert_near_max(s, (x.double() * w.double().cpu()[cols].to(x.device)).sum(1), 1e-5, "weighted_staged")


# auto at each size (its steps of several tiles meet N's tail differently); the source schedule runs its
# kernels as written, a tile a step: 37 x 300 (ragged rows and columns, several programs) and 33 x 640
# (no partial tile along N: the max without the zeros of the last tile's fill)
@pytest.mark.parametrize(
    ("m", "n", "schedule"),
    [(37, 300, "source"), (37, 300, "auto"), (70, 1300, "auto"), (33, 640, "source"), (33, 640, "auto")],
    ids=lambda v: str(v),
)
def test_each_kernel_computes_what_torch_does(schedule: str, m: int, n: int) -> None:
    _run(_module(schedule)[1], m, n)


@pytest.mark.parametrize("factor", [1, 2, 8])
def test_each_coarsening_point_computes_the_same(factor: int) -> None:
    _run(_module("auto", factor)[1], 70, 1300)


def test_auto_steps_load_8_kb() -> None:
    source, _ = _module("auto")
    for fn, wide in (
        ("row_max_sumsq_f16", "tl.arange(0, 256)[None, :]"),
        ("col_sums_staged", "tl.arange(0, 32)[:, None]"),
    ):
        body = source.split(f"def {fn}_k0(")[1].split("@triton.jit")[0]
        assert "schedule/coarsen.py" in body and wide in body, (fn, body)
    for fn in ("row_sums_staged", "weighted_staged"):  # 8 KB a step as written; a near miss
        body = source.split(f"def {fn}_k0(")[1].split("@triton.jit")[0]
        assert "schedule/coarsen.py" not in body, fn
