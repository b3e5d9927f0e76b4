"""``while`` loops whose body steps the counter first (lift/whileloops.py, issue 27): ``j = -1; while (j <
N - 1) { j += 1; .. }`` reads ``j = 0, 1, .., N - 1``; a lane's stride from ``t - 32`` by 32 (the body reading
``t, t + 32, ..``); walking down from ``N`` (``while (j > 0) { j -= 1; .. }`` reads ``N - 1, .., 0``).
Under auto each is the ``foreach`` it is and folds (no ``while`` left); a counter whose final value is
kept, and one the body assigns again, stay as written. Each runs in both schedules against float64 torch
on ragged sizes, outputs poisoned with NaN."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load, translate_full

F64 = torch.float64
S32 = torch.int32

PROGRAM = """
__co__ void from_minus_one(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 32), t by 32 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = -1;
      while (j < N - 1) {
        j += 1;
        s += x.at(r, j) * x.at(r, j);
      }
      y.at(r) = s;
    }
  }
}
__co__ void stride_first(global f32 [M, N] x, global f32 [M] y) {
  parallel r by M : block {
    shared f32 [32] red;
    parallel t by 32 : thread {
      mutable f32 m = -inf;
      mutable int j = t - 32;
      while (j < N - 32) {
        j = j + 32;
        m = __max(m, x.at(r, j));
      }
      red.at(t) = m;
      sync.shared;
      if (t == 0) {
        mutable f32 b = -inf;
        foreach u in [32] { b = __max(b, red.at(u)); }
        y.at(r) = b;
      }
    }
  }
}
__co__ void down_first(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 32), t by 32 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = N;
      while (j > 0) {
        j -= 1;
        s += x.at(r, j);
      }
      y.at(r) = s;
    }
  }
}
__co__ void kept_first(global f32 [M, N] x, global f32 [M] y, global s32 [M] last) {
  parallel b by cdiv(M, 32), t by 32 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = -1;
      while (j < N - 1) {
        j += 1;
        s += x.at(r, j);
      }
      y.at(r) = s;
      last.at(r) = j;
    }
  }
}
__co__ void skips_first(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 32), t by 32 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = -1;
      while (j < N - 1) {
        j += 1;
        s += x.at(r, j);
        if (s > 1.0f) j += 1;
      }
      y.at(r) = s;
    }
  }
}
"""


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.to(F64)


def _skips(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(x.shape[0], dtype=F64)
    for r in range(x.shape[0]):
        s, j = 0.0, -1
        n = x.shape[1]
        while j < n - 1:
            j += 1
            s += float(x[r, j])
            if s > 1.0:
                j += 1
        out[r] = s
    return out


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_step_first_whiles_in_both_schedules(schedule: str, tmp_path: Path) -> None:
    path = tmp_path / "first.co"
    path.write_text(PROGRAM)
    mod = load(path, schedule=schedule)
    for m, n in ((37, 300), (5, 77), (3, 1)):
        x = randn(m, n, seed=m * n + 1)
        for fn, ref in (
            ("from_minus_one", (_d(x) ** 2).sum(1)),
            ("stride_first", _d(x).amax(1)),
            ("down_first", _d(x).sum(1)),
            ("skips_first", _skips(x)),
        ):
            y = poisoned(m)
            getattr(mod, fn)(x, y)
            assert_near_max(y, ref.to(y.device), 1e-5, f"{fn} at {m} x {n} ({schedule})")
        y, last = poisoned(m), poisoned(m, dtype=S32)
        mod.kept_first(x, y, last)
        assert_near_max(y, _d(x).sum(1).to(y.device), 1e-5, f"kept_first at {m} x {n} ({schedule})")
        assert (last == n - 1).all(), last


def _kernel(source: str, name: str) -> str:
    return source.split(f"def {name}_k0(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


def test_auto_folds_the_step_first_loops() -> None:
    auto = translate_full(PROGRAM, filename="first.co", schedule="auto").source
    written = translate_full(PROGRAM, filename="first.co", schedule="source").source
    for fn, fold in (("from_minus_one", "tl.sum("), ("stride_first", "tl.max("), ("down_first", "tl.sum(")):
        assert "while " in _kernel(written, fn), fn
        body = _kernel(auto, fn)
        assert "while " not in body and fold in body, body
    # (the final value kept; the counter assigned again in the body: as written)
    for fn in ("kept_first", "skips_first"):
        assert "while " in _kernel(auto, fn), fn
