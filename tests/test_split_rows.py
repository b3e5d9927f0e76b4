"""Folds of a long axis split across programs where the grid is short (issue 27, programs sized for the
device): a thread per group walking its group's contiguous elements (group norm statistics), a thread
per (b, c) folding a plane (a sum and a maximum), a thread per row folding mean and variance in two
passes or by Welford's update, when the grid has fewer programs than the SMs.  Under ``--schedule auto`` each lane's loop is
folded into a tile axis (schedule/foldloops.py) and, where the grid's programs are fewer than the SMs
(``policy.ROW_SPLIT_BELOW`` waves), split into chunks across a new grid axis (schedule/splitloop.py),
the partials combined by the last program of each group (schedule/lastcombine.py), the epilogue (the
mean, the reciprocal standard deviation) after the combine.  Near misses (a loop that stores, a grid of
a wave or more) run as written.  Numerics in both schedules against float64 torch on ragged sizes,
outputs poisoned with NaN; segment sums of run-time length (CSR rows) checked in both schedules too."""

from __future__ import annotations

from functools import cache

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.runtime.launch import Recorder

SRC = """
// group norm statistics: a thread per (b, g), one loop over the group's channels and plane
__co__ void group_stats(global f32 [B, C, H, W] x, int G, global f32 [B, G] mean, global f32 [B, G] rstd) {
  parallel b by B : block, g by G : thread {
    int cg = C / G;
    mutable f32 s = 0.0f;
    mutable f32 sq = 0.0f;
    foreach {k, h, w} in [cg, H, W] {
      f32 v = x.at(b, g * cg + k, h, w);
      s += v;
      sq += v * v;
    }
    f32 n = cg * H * W;
    f32 mu = s / n;
    mean.at(b, g) = mu;
    rstd.at(b, g) = __rsqrt(sq / n - mu * mu + 0.00001f);
  }
}

// the same on f16 data, f32 statistics
__co__ void group_stats_f16(global f16 [B, C, H, W] x, int G, global f32 [B, G] mean, global f32 [B, G] rstd) {
  parallel b by B : block, g by G : thread {
    int cg = C / G;
    mutable f32 s = 0.0f;
    mutable f32 sq = 0.0f;
    foreach {k, h, w} in [cg, H, W] {
      f32 v = x.at(b, g * cg + k, h, w);
      s += v;
      sq += v * v;
    }
    f32 n = cg * H * W;
    f32 mu = s / n;
    mean.at(b, g) = mu;
    rstd.at(b, g) = __rsqrt(sq / n - mu * mu + 0.00001f);
  }
}

// a plane's sum and maximum, a thread per (b, c) of 8 channels a program
__co__ void plane_sum_max(global f32 [B, C, H, W] x, global f32 [B, C] s, global f32 [B, C] m) {
  parallel {b, q} by [B, cdiv(C, 8)] : block, t by 8 : thread {
    int c = q # t;
    if (c < C) {
      mutable f32 acc = 0.0f;
      mutable f32 big = -inf;
      foreach {h, w} in [H, W] {
        f32 v = x.at(b, c, h, w);
        acc += v;
        big = __max(big, v);
      }
      s.at(b, c) = acc;
      m.at(b, c) = big;
    }
  }
}

// a row's mean and variance, two passes, a thread per row, 4 rows a program
__co__ void row_mean_var(global f32 [M, N] x, global f32 [M] mean, global f32 [M] var) {
  parallel b by cdiv(M, 4) : block, t by 4 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      foreach j in [N] { s += x.at(r, j); }
      f32 mu = s / N;
      mutable f32 q = 0.0f;
      foreach j in [N] { f32 d = x.at(r, j) - mu; q += d * d; }
      mean.at(r) = mu;
      var.at(r) = q / N;
    }
  }
}

// a row's mean and variance by Welford's update, a thread per row, 4 rows a program
__co__ void row_welford(global f32 [M, N] x, global f32 [M] mean, global f32 [M] var) {
  parallel b by cdiv(M, 4) : block, t by 4 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 n = 0.0f;
      mutable f32 mu = 0.0f;
      mutable f32 m2 = 0.0f;
      foreach j in [N] {
        f32 v = x.at(r, j);
        n += 1.0f;
        f32 d = v - mu;
        mu += d / n;
        m2 += d * (v - mu);
      }
      mean.at(r) = mu;
      var.at(r) = m2 / n;
    }
  }
}

// near miss: the loop stores (a running sum written out): runs as written
__co__ void row_cumsum(global f32 [M, N] x, global f32 [M, N] y) {
  parallel b by cdiv(M, 4) : block, t by 4 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      foreach j in [N] { s += x.at(r, j); y.at(r, j) = s; }
    }
  }
}

// sums of ragged segments: row r of a CSR matrix holds vals[ptr[r] .. ptr[r + 1])
__co__ void segment_sums(global f32 [E] vals, global s32 [R1] ptr, global f32 [R] out) {
  parallel b by cdiv(R, 128) : block, t by 128 : thread {
    int r = b # t;
    if (r < R) {
      int lo = ptr.at(r);
      int hi = ptr.at(r + 1);
      mutable f32 s = 0.0f;
      foreach k in [hi - lo] { s += vals.at(lo + k); }
      out.at(r) = s;
    }
  }
}
"""


@cache
def _module(schedule: str) -> object:
    out = translate_full(SRC, filename="split_rows.co", schedule=schedule)
    assert not out.failed, out.failed
    return load_source(out.source, f"split_rows_{schedule}")


@cache
def _source(schedule: str) -> str:
    return translate_full(SRC, filename="split_rows.co", schedule=schedule).source


def _ran(mod: object, fn: str, *args: object) -> list[tuple[str, tuple[int, ...]]]:
    rec = Recorder()
    getattr(mod, fn)(*args, _launch=rec)
    return [(la.kernel.__name__, tuple(int(g) for g in la.grid)) for la in rec.launches]


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double().cpu()


def _group_ref(x: torch.Tensor, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    xg = _d(x).reshape(x.shape[0], g, -1)
    mu = xg.mean(2)
    return mu, 1 / torch.sqrt((xg * xg).mean(2) - mu * mu + 1e-5)


# (B, C, H, W, G): ragged planes, a lane's run of 2 x 9 x 263 and of 3 x 7 x 301 elements
GROUPS = [(2, 8, 9, 263, 4), (3, 6, 7, 301, 2)]
# the source schedule runs each lane's loop element by element in the interpreter (minutes at the sizes
# the split needs): it is checked at small ragged sizes, auto (which splits) at both
SMALL_GROUPS = [(2, 4, 3, 37, 2), (3, 6, 5, 29, 3)]


@pytest.mark.parametrize(
    ("schedule", "shape"), [("source", s) for s in SMALL_GROUPS] + [("auto", s) for s in GROUPS + SMALL_GROUPS]
)
def test_group_stats(schedule: str, shape: tuple[int, ...]) -> None:
    b, c, h, w, g = shape
    mod = _module(schedule)
    x = randn(b, c, h, w, seed=b + w) * 2 + 0.5
    mean, rstd = poisoned(b, g), poisoned(b, g)
    mod.group_stats(x, g, mean, rstd)  # type: ignore[attr-defined]
    mu, rs = _group_ref(x, g)
    assert_near_max(mean, mu, 1e-5, f"group_stats mean ({schedule})")
    assert_near_max(rstd, rs, 1e-5, f"group_stats rstd ({schedule})")
    xh = x.half()
    mean, rstd = poisoned(b, g), poisoned(b, g)
    mod.group_stats_f16(xh, g, mean, rstd)  # type: ignore[attr-defined]
    mu, rs = _group_ref(xh, g)
    assert_near_max(mean, mu, 1e-4, f"group_stats_f16 mean ({schedule})")
    assert_near_max(rstd, rs, 1e-4, f"group_stats_f16 rstd ({schedule})")


@pytest.mark.parametrize(
    ("schedule", "b", "c", "h", "w"),
    [("source", 1, 3, 9, 31), ("source", 2, 5, 7, 29), ("auto", 1, 5, 33, 131), ("auto", 2, 11, 17, 129)],
)
def test_plane_sum_and_max(schedule: str, b: int, c: int, h: int, w: int) -> None:
    x = randn(b, c, h, w, seed=c + h)
    s, m = poisoned(b, c), poisoned(b, c)
    _module(schedule).plane_sum_max(x, s, m)  # type: ignore[attr-defined]
    assert_near_max(s, _d(x).sum((2, 3)), 1e-5, f"plane sums ({schedule})")
    assert_near_max(m, _d(x).amax((2, 3)), 0.0, f"plane maxima ({schedule})")


@pytest.mark.parametrize(
    ("schedule", "m", "n"), [("source", 3, 500), ("source", 7, 301), ("auto", 3, 5000), ("auto", 7, 3001)]
)
def test_row_mean_var_and_near_miss(schedule: str, m: int, n: int) -> None:
    mod = _module(schedule)
    x = randn(m, n, seed=m + n) * 3 + 1.5
    mean, var = poisoned(m), poisoned(m)
    mod.row_mean_var(x, mean, var)  # type: ignore[attr-defined]
    assert_near_max(mean, _d(x).mean(1), 1e-5, f"row means ({schedule})")
    assert_near_max(var, _d(x).var(1, unbiased=False), 1e-5, f"row variances ({schedule})")
    mean, var = poisoned(m), poisoned(m)
    mod.row_welford(x, mean, var)  # type: ignore[attr-defined]
    assert_near_max(mean, _d(x).mean(1), 1e-5, f"Welford row means ({schedule})")
    assert_near_max(var, _d(x).var(1, unbiased=False), 1e-5, f"Welford row variances ({schedule})")
    y = poisoned(m, n)
    mod.row_cumsum(x, y)  # type: ignore[attr-defined]
    assert_near_max(y, _d(x).cumsum(1), 1e-5, f"row running sums ({schedule})")


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("rows", "most"), [(5, 3000), (300, 40)])
def test_segment_sums(schedule: str, rows: int, most: int) -> None:
    g = torch.Generator().manual_seed(rows)
    lens = torch.randint(0, most, (rows,), generator=g)
    ptr = torch.zeros(rows + 1, dtype=torch.int32)
    ptr[1:] = lens.cumsum(0).to(torch.int32)
    vals = torch.randn(int(ptr[-1]) + 3, generator=g)  # (a tail past the last row, never read)
    out = poisoned(rows)
    _module(schedule).segment_sums(vals.to(DEVICE), ptr.to(DEVICE), out)  # type: ignore[attr-defined]
    p = ptr.long()
    want = torch.stack([_d(vals[p[r] : p[r + 1]]).sum() for r in range(rows)])
    assert_near_max(out, want, 1e-6, f"segment sums ({schedule})")


def test_auto_splits_a_short_grids_fold_across_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 SMs (``CROQ2TRITON_NUM_SMS``): 2 programs of 4 groups, each lane 2 x 9 x 263 elements: the
    fold split across a new grid axis, one launch whose last program of each (b) combines; the
    epilogue (mean, rsqrt) in that program only.  8 programs (two waves) run as written."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "4")
    mod = _module("auto")
    b, c, h, w, g = GROUPS[0]
    x = randn(b, c, h, w, seed=3)
    got = _ran(mod, "group_stats", x, g, poisoned(b, g), poisoned(b, g))
    assert len(got) == 1 and got[0][0].endswith("_split"), got
    assert got[0][1][0] == b and got[0][1][-1] > 1, got
    mean, rstd = poisoned(b, g), poisoned(b, g)
    mod.group_stats(x, g, mean, rstd)  # type: ignore[attr-defined]
    mu, rs = _group_ref(x, g)
    assert_near_max(mean, mu, 1e-5, "split group_stats mean")
    assert_near_max(rstd, rs, 1e-5, "split group_stats rstd")
    got = _ran(mod, "group_stats_f16", x.half(), g, poisoned(b, g), poisoned(b, g))
    assert len(got) == 1 and got[0][0].endswith("_split"), got
    many = randn(8, c, h, w, seed=4)  # (8 programs: two waves of 4 SMs)
    got = _ran(mod, "group_stats", many, g, poisoned(8, g), poisoned(8, g))
    assert all("split" not in k for k, _ in got), got
    # a plane's sum and maximum: 1 x 1 programs of 8 channels
    xs = randn(1, 5, 33, 131, seed=5)
    got = _ran(mod, "plane_sum_max", xs, poisoned(1, 5), poisoned(1, 5))
    assert len(got) == 1 and got[0][0].endswith("_split") and got[0][1][-1] > 1, got
    # a row's mean then variance, 1 program of 3 rows: one launch a pass, each split (schedule/splitphases.py),
    # where the split runs more programs than the rows one a program (3 of 5000: as written)
    got = _ran(mod, "row_mean_var", randn(3, 5000, seed=7), poisoned(3), poisoned(3))
    assert all("split" not in k for k, _ in got), got
    got = _ran(mod, "row_mean_var", randn(3, 20000, seed=7), poisoned(3), poisoned(3))
    assert [k for k, _ in got] == [f"row_mean_var_k0_phase{n}_split" for n in range(2)], got
    assert all(grid[-1] > 1 for _, grid in got), got
    mean, var = poisoned(3), poisoned(3)
    xr = randn(3, 20000, seed=8) * 3 + 1.5
    mod.row_mean_var(xr, mean, var)  # type: ignore[attr-defined]
    assert_near_max(mean, _d(xr).mean(1), 1e-5, "split row means")
    assert_near_max(var, _d(xr).var(1, unbiased=False), 1e-5, "split row variances")
    got = _ran(mod, "row_welford", xr, poisoned(3), poisoned(3))  # (Welford's update: the same passes)
    assert [k for k, _ in got] == [f"row_welford_k0_phase{n}_split" for n in range(2)], got
    mean, var = poisoned(3), poisoned(3)
    mod.row_welford(xr, mean, var)  # type: ignore[attr-defined]
    assert_near_max(mean, _d(xr).mean(1), 1e-5, "split Welford row means")
    assert_near_max(var, _d(xr).var(1, unbiased=False), 1e-5, "split Welford row variances")
    # the loop that stores: as written
    got = _ran(mod, "row_cumsum", randn(3, 5000, seed=6), poisoned(3, 5000))
    assert all("split" not in k for k, _ in got), got
    from croq2triton.runtime import launch as rt

    assert all(not c.any() for c in rt._COUNTERS.values())  # (every counter left zero)


def test_split_is_a_tile_schedule_field_and_the_epilogue_follows_the_combine() -> None:
    """The split's kernel: a grid axis of splits, each a chunk of the folded loop, the partial folds
    stored to scratch; the mean and rsqrt computed only in the combining program (after the count)."""
    code = _source("auto")
    start = code.index("def group_stats_k0_planes_split(")
    body = code[start : code.index("\n@", start)]
    assert "tl.program_id(1)" in body and "tl.atomic_add(" in body, body
    assert body.index("tl.atomic_add(") < body.index("tl.rsqrt("), body


@pytest.mark.parametrize(
    "point",
    [{"loop_split": 3, "combine_last": False}, {"loop_split": 5, "fold": 32, "num_warps": 2}, {"loop_split": 1}],
)
def test_tuning_points_set_the_split(point: dict[str, object]) -> None:
    """``loop_split`` is a field of the kernel's TileSchedule: a tuning point fixes the split count (a
    second kernel combining where ``combine_last`` is false, a tuned fold the partial's block), 1 not split."""
    from croq2triton.options import Point

    out = translate_full(
        SRC, filename="split_rows.co", schedule="auto", point=Point.of({}, {"group_stats_k0_planes": point})
    )
    assert not out.failed, out.failed
    mod = load_source(out.source, f"split_rows_point_{len(point)}_{point['loop_split']}")
    b, c, h, w, g = GROUPS[0]
    x = randn(b, c, h, w, seed=9) * 2 + 0.5
    got = _ran(mod, "group_stats", x, g, poisoned(b, g), poisoned(b, g))
    splits = int(point["loop_split"])  # type: ignore[call-overload]
    if splits == 1:
        assert [k for k, _ in got] == ["group_stats_k0_planes"], got
    elif point.get("combine_last") is False:
        assert got == [("group_stats_k0_planes_partial", (b, splits)), ("group_stats_k0_planes_combine", (b,))], got
    else:
        assert got == [("group_stats_k0_planes_split", (b, splits))], got
    mean, rstd = poisoned(b, g), poisoned(b, g)
    mod.group_stats(x, g, mean, rstd)  # type: ignore[attr-defined]
    mu, rs = _group_ref(x, g)
    assert_near_max(mean, mu, 1e-5, f"group_stats mean at {point}")
    assert_near_max(rstd, rs, 1e-5, f"group_stats rstd at {point}")
