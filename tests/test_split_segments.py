"""Folds over segments whose length the kernel reads (CSR rows: ``foreach k in [hi - lo] { s +=
vals.at(lo + k); }``, ``lo`` and ``hi`` loaded from ``ptr``) split across programs where the grid is
short (issue 27: 64 long segments ran one program a segment).  Under ``--schedule auto`` the form of
one lane a program gains a grid axis ``split`` (schedule/splitloop.py): the launcher picks ``S`` from
the grid and the SMs alone, each program computes its chunk of its segment in the kernel
(``cdiv(cdiv(length, S), block) * block``), and the last program of each segment combines the
partials.  Many short segments (a long grid) run unsplit (R segments a program where shorter than
policy.SEGMENT_ONE_ELEMS on average: tests/test_segment_rows.py).  Numerics in both
schedules against float64 torch: few long segments, empty ones, ragged lengths, a first segment that
does not start at 0, sums (f32 and f16 data), maxima and minima, a mean after the fold, a mean and
variance by Welford's update; near misses (a loop that stores, bounds read from a tensor the kernel
writes) run unsplit; outputs poisoned with NaN."""

from __future__ import annotations

from functools import cache

import pytest
import torch
from kernel_util import DEVICE, assert_close, assert_near_max, poisoned

from croq2triton.api import load_source, translate_full
from croq2triton.runtime.launch import Recorder

SRC = """
// sums of ragged segments: row r of a CSR matrix holds vals[ptr[r] .. ptr[r + 1])
__co__ void seg_sum(global f32 [E] vals, global s32 [R1] ptr, global f32 [R] out) {
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

// the same of f16 values, summed in f32
__co__ void seg_sum_f16(global f16 [E] vals, global s32 [R1] ptr, global f32 [R] out) {
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

// a segment's maximum and minimum (-inf and inf where it is empty)
__co__ void seg_max_min(global f32 [E] vals, global s32 [R1] ptr, global f32 [R] mx, global f32 [R] mn) {
  parallel b by cdiv(R, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < R) {
      int lo = ptr.at(r);
      int hi = ptr.at(r + 1);
      mutable f32 big = -inf;
      mutable f32 small = inf;
      foreach k in [hi - lo] {
        f32 v = vals.at(lo + k);
        big = __max(big, v);
        small = __min(small, v);
      }
      mx.at(r) = big;
      mn.at(r) = small;
    }
  }
}

// a segment's mean (0 where it is empty): the division after the fold, of values read before it
__co__ void seg_mean(global f32 [E] vals, global s32 [R1] ptr, global f32 [R] out) {
  parallel b by cdiv(R, 128) : block, t by 128 : thread {
    int r = b # t;
    if (r < R) {
      int lo = ptr.at(r);
      int hi = ptr.at(r + 1);
      mutable f32 s = 0.0f;
      foreach k in [hi - lo] { s += vals.at(lo + k); }
      f32 n = __max(hi - lo, 1);
      out.at(r) = s / n;
    }
  }
}

// a segment's mean and variance by Welford's update (0 where it is empty): partial triples combined
__co__ void seg_var(global f32 [E] vals, global s32 [R1] ptr, global f32 [R] mu, global f32 [R] var) {
  parallel b by cdiv(R, 128) : block, t by 128 : thread {
    int r = b # t;
    if (r < R) {
      int lo = ptr.at(r);
      int hi = ptr.at(r + 1);
      mutable f32 n = 0.0f;
      mutable f32 mean = 0.0f;
      mutable f32 m2 = 0.0f;
      foreach k in [hi - lo] {
        f32 v = vals.at(lo + k);
        n += 1.0f;
        f32 d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
      }
      mu.at(r) = mean;
      var.at(r) = m2 / __max(n, 1.0f);
    }
  }
}

// near miss: the bounds are read from a tensor the kernel writes (each lane its own start, consumed):
// a group's programs could read them at different times, not split
__co__ void seg_consume(global f32 [E] vals, global s32 [R] starts, global s32 [R] ends, global f32 [R] out) {
  parallel b by cdiv(R, 128) : block, t by 128 : thread {
    int r = b # t;
    if (r < R) {
      int lo = starts.at(r);
      int hi = ends.at(r);
      mutable f32 s = 0.0f;
      foreach k in [hi - lo] { s += vals.at(lo + k); }
      out.at(r) = s;
      starts.at(r) = hi;
    }
  }
}

// near miss: the loop stores (each segment's running sum): not split
__co__ void seg_cumsum(global f32 [E] vals, global s32 [R1] ptr, global f32 [E] cum) {
  parallel b by cdiv(R1 - 1, 128) : block, t by 128 : thread {
    int r = b # t;
    if (r < R1 - 1) {
      int lo = ptr.at(r);
      int hi = ptr.at(r + 1);
      mutable f32 s = 0.0f;
      foreach k in [hi - lo] { s += vals.at(lo + k); cum.at(lo + k) = s; }
    }
  }
}
"""


@cache
def _source(schedule: str, point: tuple[tuple[str, object], ...] = ()) -> str:
    from croq2triton.options import Point

    kw = {"point": Point.of({}, {"seg_sum_k0": dict(point)})} if point else {}
    out = translate_full(SRC, filename="split_segments.co", schedule=schedule, **kw)  # type: ignore[arg-type]
    assert not out.failed, out.failed
    return out.source


@cache
def _module(schedule: str, point: tuple[tuple[str, object], ...] = ()) -> object:
    tag = "_".join(f"{k}{v}" for k, v in point)
    return load_source(_source(schedule, point), f"split_segments_{schedule}{tag}")


def _csr(lens: list[int], start: int = 0, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Values and CSR offsets of segments of ``lens`` values, the first at ``start`` (values before it
    and a tail after the last never read)."""
    ptr = torch.tensor([0, *lens]).cumsum(0).to(torch.int32) + start
    g = torch.Generator().manual_seed(sum(lens) + start)
    vals = (torch.randn(int(ptr[-1]) + 5, generator=g) * 2 + 0.5).to(dtype)
    return vals.to(DEVICE), ptr.to(DEVICE)


def _segments(vals: torch.Tensor, ptr: torch.Tensor) -> list[torch.Tensor]:
    p = ptr.long().cpu()
    v = vals.double().cpu()
    return [v[p[r] : p[r + 1]] for r in range(len(p) - 1)]


def _ran(mod: object, fn: str, *args: object) -> list[tuple[str, tuple[int, ...]]]:
    rec = Recorder()
    getattr(mod, fn)(*args, _launch=rec)
    return [(la.kernel.__name__, tuple(int(g) for g in la.grid)) for la in rec.launches]


# few long segments (the split: S > 1 in the interpreter's 4 SMs), an empty one, ragged lengths not a
# multiple of a block or a chunk, one shorter than a block among them
LONG = [9001, 0, 6143, 517, 12289]
# small ragged segments for the source schedule (each lane's loop element by element in the interpreter)
SMALL = [37, 0, 160, 1, 129, 64]


# many segments of a few hundred values, empty ones among them (not split: 40 programs a segment's grid at
# most; 8 segments a program, tests/test_segment_rows.py)
MEDIUM = [(37 * i * i) % 1300 if i % 6 else 0 for i in range(41)]


@pytest.mark.parametrize(
    ("schedule", "lens", "start"), [("source", SMALL, 3), ("auto", SMALL, 0), ("auto", LONG, 7), ("auto", MEDIUM, 1)]
)
def test_segment_folds(schedule: str, lens: list[int], start: int) -> None:
    mod = _module(schedule)
    vals, ptr = _csr(lens, start)
    if lens is MEDIUM:  # (R a program: every fold of the file runs its [8, 256] form)
        for fn in ("seg_sum", "seg_mean"):
            assert _ran(mod, fn, vals, ptr, poisoned(len(lens))) == [(f"{fn}_k0_rows8", (6,))]
        assert _ran(mod, "seg_var", vals, ptr, poisoned(41), poisoned(41)) == [("seg_var_k0_rows8", (6,))]
    segs = _segments(vals, ptr)
    n = len(lens)
    out = poisoned(n)
    mod.seg_sum(vals, ptr, out)  # type: ignore[attr-defined]
    assert_near_max(out, torch.stack([s.sum() for s in segs]), 1e-6, f"segment sums ({schedule})")
    mx, mn = poisoned(n), poisoned(n)
    mod.seg_max_min(vals, ptr, mx, mn)  # type: ignore[attr-defined]
    inf = torch.tensor(float("inf"), dtype=torch.float64)
    assert_close(mx, torch.stack([s.max() if len(s) else -inf for s in segs]))
    assert_close(mn, torch.stack([s.min() if len(s) else inf for s in segs]))
    out = poisoned(n)
    mod.seg_mean(vals, ptr, out)  # type: ignore[attr-defined]
    want = torch.stack([s.mean() if len(s) else torch.tensor(0.0, dtype=torch.float64) for s in segs])
    assert_near_max(out, want, 1e-6, f"segment means ({schedule})")
    zero = torch.tensor(0.0, dtype=torch.float64)
    mu, var = poisoned(n), poisoned(n)
    mod.seg_var(vals, ptr, mu, var)  # type: ignore[attr-defined]
    assert_near_max(mu, torch.stack([s.mean() if len(s) else zero for s in segs]), 1e-5, f"Welford means ({schedule})")
    want = torch.stack([s.var(unbiased=False) if len(s) else zero for s in segs])
    assert_near_max(var, want, 1e-5, f"Welford variances ({schedule})")
    starts, out = ptr[:-1].clone(), poisoned(n)
    mod.seg_consume(vals, starts, ptr[1:], out)  # type: ignore[attr-defined]
    assert_near_max(out, torch.stack([s.sum() for s in segs]), 1e-6, f"consumed segment sums ({schedule})")
    assert torch.equal(starts, ptr[1:]), "each segment's start consumed"
    cum = poisoned(vals.shape[0])
    mod.seg_cumsum(vals, ptr, cum)  # type: ignore[attr-defined]
    p = ptr.long().cpu()
    got = torch.cat([cum.cpu()[p[r] : p[r + 1]] for r in range(n)])
    assert_near_max(got, torch.cat([s.cumsum(0) for s in segs]), 1e-5, f"segment running sums ({schedule})")


@pytest.mark.parametrize(("schedule", "lens"), [("source", SMALL), ("auto", [8191, 16411, 0, 9000])])
def test_f16_segments_sum_in_f32(schedule: str, lens: list[int]) -> None:
    vals, ptr = _csr(lens, 1, torch.float16)
    out = poisoned(len(lens))
    _module(schedule).seg_sum_f16(vals, ptr, out)  # type: ignore[attr-defined]
    assert_near_max(out, torch.stack([s.sum() for s in _segments(vals, ptr)]), 1e-6, f"f16 segment sums ({schedule})")


def test_few_long_segments_split_with_s_chosen_at_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    """``S`` from the grid and the SMs at launch (``SPLIT_WAVES`` programs a SM, at most one a
    ``SEGMENT_SPLIT_LEAST_BYTES`` of the mean segment): more SMs, more splits; a grid past the waves
    (many segments) and short segments run the kernels of the unsplit schedule, as before."""
    mod = _module("auto")
    vals, ptr = _csr(LONG)
    n = len(LONG)
    # 4 SMs: 32 // 5 = 6 programs a segment by the waves, cdiv(27950 // 5, 2048) = 3 by the mean length
    got = _ran(mod, "seg_sum", vals, ptr, poisoned(n))
    assert got == [("seg_sum_k0_split", (n, 3))], got
    # (8 // 5: 1, not split: 27955 values over the grid's 128 lanes, 218 a lane, below SEGMENT_ONE_ELEMS: 8
    # segments a program, tests/test_segment_rows.py)
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "1")
    assert _ran(mod, "seg_sum", vals, ptr, poisoned(n)) == [("seg_sum_k0_rows8", (1,))]
    # two segments of 40000 (and a tail of 5): cdiv(80005 // 2, 2048) = 20 programs a segment by the
    # length; by the waves 64 // 2 = 32 on 8 SMs, 16 // 2 = 8 on 2
    vals2, ptr2 = _csr([40000, 40000])
    for sms, splits in ((8, 20), (2, 8)):
        monkeypatch.setenv("CROQ2TRITON_NUM_SMS", str(sms))
        assert _ran(mod, "seg_sum", vals2, ptr2, poisoned(2)) == [("seg_sum_k0_split", (2, splits))]
        out = poisoned(2)
        mod.seg_sum(vals2, ptr2, out)  # type: ignore[attr-defined]
        assert_near_max(out, torch.stack([s.sum() for s in _segments(vals2, ptr2)]), 1e-6, f"{splits}-way sums")
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "4")
    # many segments (a grid of more than half the waves: 40 programs, 32 asked for): not split, 8 a program
    # (about 240 values a lane of the grid)
    many = [700 + 37 * (i % 5) for i in range(40)]
    assert _ran(mod, "seg_sum", *_csr(many), poisoned(40)) == [("seg_sum_k0_rows8", (5,))]
    # many short segments: the lanes stay in one program, as before
    short = [i % 9 for i in range(300)]
    assert _ran(mod, "seg_sum", *_csr(short), poisoned(300)) == [("seg_sum_k0_lanes", (3,))]
    # maxima and minima, the mean, f16 data: split too; the loop that stores is not
    assert _ran(mod, "seg_max_min", vals, ptr, poisoned(n), poisoned(n)) == [("seg_max_min_k0_split", (n, 3))]
    assert _ran(mod, "seg_mean", vals, ptr, poisoned(n)) == [("seg_mean_k0_split", (n, 3))]
    h, hp = _csr([8191, 16411, 0, 9000], dtype=torch.float16)  # (f16: cdiv(33602 // 4, 4096) = 3)
    assert _ran(mod, "seg_sum_f16", h, hp, poisoned(4)) == [("seg_sum_f16_k0_split", (4, 3))]
    assert _ran(mod, "seg_var", vals, ptr, poisoned(n), poisoned(n)) == [("seg_var_k0_split", (n, 3))]
    cum = _ran(mod, "seg_cumsum", vals, ptr, poisoned(vals.shape[0]))
    assert all("split" not in k for k, _ in cum), cum
    consume = _ran(mod, "seg_consume", vals, ptr[:-1].clone(), ptr[1:], poisoned(n))
    assert consume == [("seg_consume_k0_rows8", (1,))], consume  # (not split; 218 values a lane: 8 a program)
    from croq2triton.runtime import launch as rt

    assert all(not c.any() for c in rt._COUNTERS.values())  # (every counter left zero)


def test_the_split_computes_each_chunk_in_the_kernel() -> None:
    """The launcher passes ``S`` and no chunk (it does not know a segment's length): each program
    computes its chunk of whole blocks from the segment's bounds; ``S`` is a launch-time value of the
    grid and the SMs."""
    code = _source("auto")
    start = code.index("def seg_sum_k0_split(")
    body = code[start : code.index("\n@", start)]
    assert "CHUNK" not in body and "SPLITS" in body and "tl.program_id(1)" in body, body
    assert "chunk = tl.cdiv(tl.cdiv(tl.maximum(" in body and "split * chunk" in body, body
    launcher = code[code.index("def seg_sum(") :]
    launcher = launcher[: launcher.index("\n@")]
    assert "_seg_sum_k0_splits = max(1, min(_rt.idiv(_rt.num_sms(_dev) * 8, R)" in launcher, launcher
    assert "_chunk" not in launcher, launcher
    assert "seg_sum_k0_split" not in _source("source")


@pytest.mark.parametrize("point", [(("loop_split", 4), ("combine_last", False)), (("loop_split", 1),)])
def test_tuning_points_set_the_segments_split(point: tuple[tuple[str, object], ...]) -> None:
    """``loop_split`` of the segment fold's TileSchedule: 4 programs a segment, combined by a second
    kernel; 1: not split (one lane a program where the segments are long)."""
    mod = _module("auto", point)
    vals, ptr = _csr(LONG, 2)
    n = len(LONG)
    got = _ran(mod, "seg_sum", vals, ptr, poisoned(n))
    if dict(point)["loop_split"] == 1:
        assert got == [("seg_sum_k0", (n,))], got
    else:
        assert got == [("seg_sum_k0_partial", (n, 4)), ("seg_sum_k0_combine", (n,))], got
    out = poisoned(n)
    mod.seg_sum(vals, ptr, out)  # type: ignore[attr-defined]
    assert_near_max(out, torch.stack([s.sum() for s in _segments(vals, ptr)]), 1e-6, f"segment sums {point}")
