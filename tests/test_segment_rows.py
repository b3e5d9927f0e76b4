"""Sums of many short segments (CSR rows, ``foreach k in [hi - lo] { s += vals.at(lo + k); }``, a thread a
row) run R segments a program under ``--schedule auto`` (issue 27: 0.13 of the roofline one a program):
an ``[R, SEGMENT_ROWS_TILE / R]`` tile a step, a loop to the longest of the R, picked at launch from the
mean length (policy.SEGMENT_ROW_FORMS: one a program from SEGMENT_ONE_ELEMS a lane of the grid, 8 from 128,
32 from 16, the block's 128 lanes below).  ``TileSchedule.segment_rows`` holds the choice: 0 the policy's,
-1 the forms before it, a tuning point's R every launch.  Numerics in both schedules against float64 on
ragged CSR data (empty segments, one huge segment among short ones, every segment empty, a first segment
not at 0), outputs poisoned with NaN; which kernel runs; the generated structure (each segment's load
masked at its own end: no values read past it)."""

from __future__ import annotations

from functools import cache

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, poisoned

from croq2triton.api import load_source, translate_full
from croq2triton.errors import CroqError
from croq2triton.options import Point
from croq2triton.runtime.launch import Recorder
from croq2triton.schedule import policy
from croq2triton.schedule.schedule import TileSchedule, with_point

SRC = """
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

// a segment's maximum (-inf where it is empty) of f16 values
__co__ void seg_max_f16(global f16 [E] vals, global s32 [R1] ptr, global f32 [R] out) {
  parallel b by cdiv(R, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < R) {
      int lo = ptr.at(r);
      int hi = ptr.at(r + 1);
      mutable f32 m = -inf;
      foreach k in [hi - lo] { m = __max(m, vals.at(lo + k)); }
      out.at(r) = m;
    }
  }
}
"""


@cache
def _source(schedule: str, point: tuple[tuple[str, object], ...] = ()) -> str:
    kw = {"point": Point.of({}, {"seg_sum_k0": dict(point)})} if point else {}
    out = translate_full(SRC, filename="segment_rows.co", schedule=schedule, **kw)  # type: ignore[arg-type]
    assert not out.failed, out.failed
    return out.source


@cache
def _module(schedule: str, point: tuple[tuple[str, object], ...] = ()) -> object:
    tag = "_".join(f"{k}{v}" for k, v in point).replace("-", "m")
    return load_source(_source(schedule, point), f"segment_rows_{schedule}{tag}")


def _csr(lens: list[int], start: int = 0, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Values and CSR offsets of segments of ``lens`` values, the first at ``start`` (a head and a tail of
    values never read)."""
    ptr = torch.tensor([0, *lens]).cumsum(0).to(torch.int32) + start
    g = torch.Generator().manual_seed(sum(lens) + len(lens) + start)
    vals = (torch.randn(int(ptr[-1]) + 5, generator=g) * 2 + 0.5).to(dtype)
    return vals.to(DEVICE), ptr.to(DEVICE)


def _sums(vals: torch.Tensor, ptr: torch.Tensor) -> torch.Tensor:
    p, v = ptr.long().cpu(), vals.double().cpu()
    return torch.stack([v[p[r] : p[r + 1]].sum() for r in range(len(p) - 1)])


def _maxima(vals: torch.Tensor, ptr: torch.Tensor) -> torch.Tensor:
    p, v = ptr.long().cpu(), vals.double().cpu()
    inf = torch.tensor(float("-inf"), dtype=torch.float64)
    return torch.stack([v[p[r] : p[r + 1]].max() if p[r + 1] > p[r] else inf for r in range(len(p) - 1)])


def _ran(mod: object, fn: str, *args: object) -> list[tuple[str, tuple[int, ...]]]:
    rec = Recorder()
    getattr(mod, fn)(*args, _launch=rec)
    return [(la.kernel.__name__, tuple(int(g) for g in la.grid)) for la in rec.launches]


def _lens(n: int, most: int, seed: int) -> list[int]:
    """``n`` ragged lengths in ``[0, most]``, zeros among them."""
    g = torch.Generator().manual_seed(seed)
    out = torch.randint(0, most + 1, (n,), generator=g)
    out[:: max(1, n // 7)] = 0
    return [int(x) for x in out]


# (lengths, the start of the first, the kernel auto runs): about 260 values a lane of the grid (8 a
# program), about 60 (32 a program), about 5 (the block's lanes), one huge segment among short empty ones
# (32 a program: a program loops to its one long segment), every segment empty
CASES = {
    "mean 260": (_lens(300, 520, 1), 3, "seg_sum_k0_rows8"),
    "mean 60": (_lens(261, 120, 2), 0, "seg_sum_k0_rows32"),
    "mean 5": (_lens(300, 10, 3), 1, "seg_sum_k0_lanes"),
    "one huge": ([0] * 40 + [9001] + _lens(90, 6, 4), 0, "seg_sum_k0_rows32"),
    "all empty": ([0] * 77, 2, "seg_sum_k0_lanes"),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_segment_sums(schedule: str, name: str) -> None:
    lens, start, kernel = CASES[name]
    if schedule == "source" and sum(lens) > 5000:
        lens = [min(x, 700) for x in lens]  # (element by element in the interpreter: shorter)
    mod = _module(schedule)
    vals, ptr = _csr(lens, start)
    out = poisoned(len(lens))
    mod.seg_sum(vals, ptr, out)  # type: ignore[attr-defined]
    assert_near_max(out, _sums(vals, ptr), 1e-6, f"segment sums, {name} ({schedule})")
    if schedule == "auto":
        got = _ran(mod, "seg_sum", vals, ptr, poisoned(len(lens)))
        assert [k for k, _ in got] == [kernel], got
    if sum(lens) <= 5000:  # (maxima: f16 values, a block of 64 lanes; empty segments -inf)
        h, hp = _csr(lens, start, torch.float16)
        mx = poisoned(len(lens))
        mod.seg_max_f16(h, hp, mx)  # type: ignore[attr-defined]
        want = _maxima(h, hp)
        assert torch.equal(mx.double().cpu(), want), f"segment maxima, {name} ({schedule})"


def test_rows_picked_from_the_mean_at_launch() -> None:
    """The launcher's bands: one a program from SEGMENT_ONE_ELEMS values a lane of the grid (the split
    where the grid is short: tests/test_split_segments.py), then SEGMENT_ROW_FORMS, then the block's lanes;
    the grid of R a program is cdiv(segments, R)."""
    mod = _module("auto")
    assert policy.SEGMENT_ROW_FORMS == ((8, 128), (32, 16)) and policy.SEGMENT_ONE_ELEMS == 1024
    n = 256  # (two blocks of 128 lanes: the bands at 256 * mean values)
    for mean, want in ((1024, ("seg_sum_k0", (n,))), (1023, ("seg_sum_k0_rows8", (32,)))):
        lens = [mean] * n
        assert _ran(mod, "seg_sum", *_csr(lens), poisoned(n)) == [want], mean
    for mean, want in ((128, ("seg_sum_k0_rows8", (32,))), (127, ("seg_sum_k0_rows32", (8,)))):
        assert _ran(mod, "seg_sum", *_csr([mean] * n), poisoned(n)) == [want], mean
    for mean, want in ((16, ("seg_sum_k0_rows32", (8,))), (15, ("seg_sum_k0_lanes", (2,)))):
        assert _ran(mod, "seg_sum", *_csr([mean] * n), poisoned(n)) == [want], mean


def _kernel(code: str, name: str) -> str:
    start = code.index(f"def {name}(")
    return code[start : code.index("\n@", start)]


def test_the_rows_form_is_emitted() -> None:
    """Each R-a-program kernel: R lanes, an ``[R, 2048 / R]`` tile a step, a loop to the longest of the
    R, each segment's load masked at its own end (``k < hi_own``: nothing read past it, the vector masks
    left alone where the address holds a loaded start), the sums stored once; the source schedule has
    none of them."""
    code = _source("auto")
    for rows in (8, 32):
        body = _kernel(code, f"seg_sum_k0_rows{rows}")
        block = policy.SEGMENT_ROWS_TILE // rows
        assert f"t = tl.arange(0, {rows})" in body and f"r = b * {rows} + t" in body, body
        assert f"tl.zeros([{rows}, {block}], tl.float32)" in body, body
        assert f"for k_0 in tl.range(0, hi_2, {block}" in body and "tl.max(" in body, body
        assert "_vec" not in body and "(k < hi_own[:, None])" in body.split("tl.load(vals_ptr")[0], body
        assert body.count("tl.store(") == 1 and "tl.atomic" not in body, body
    assert "_vec" not in _kernel(code, "seg_sum_k0_lanes")  # (the lanes' loads exact too)
    launcher = code[code.index("def seg_sum(") :]
    assert "E >= _rt.cdiv(R, 128) * 131072" in launcher and "E >= _rt.cdiv(R, 128) * 16384" in launcher
    assert "_k0_rows" not in _source("source")


def test_segment_rows_is_a_schedule_field() -> None:
    """``segment_rows`` of the segment kernel's TileSchedule: 0 under auto; a tuning point's R runs R a
    program in steps of its fold at every launch; a schedule without segments has no such field, and R
    past the block's lanes is an error located at the kernel (file:line:col)."""
    out = translate_full(SRC, filename="segment_rows.co", schedule="auto")
    assert out.schedules["seg_sum"]["seg_sum_k0"].segment_rows == 0  # type: ignore[union-attr]
    plain = TileSchedule((1,), 4, origin="auto")
    with pytest.raises(ValueError, match="segment_rows"):
        with_point(plain, {"segment_rows": 8})
    with pytest.raises(ValueError, match="segment_rows = 3"):
        TileSchedule((1,), 4, segment_rows=3)
    lens = _lens(300, 520, 5)
    vals, ptr = _csr(lens, 2)
    tuned = _module("auto", (("segment_rows", 16), ("fold", 128), ("loop_split", 1)))
    assert _ran(tuned, "seg_sum", vals, ptr, poisoned(300)) == [("seg_sum_k0", (19,))]
    body = _kernel(_source("auto", (("segment_rows", 16), ("fold", 128), ("loop_split", 1))), "seg_sum_k0")
    assert "tl.zeros([16, 128], tl.float32)" in body, body
    out = poisoned(300)
    tuned.seg_sum(vals, ptr, out)  # type: ignore[attr-defined]
    assert_near_max(out, _sums(vals, ptr), 1e-6, "16 segments a program")
    point = Point.of({}, {"seg_sum_k0": {"segment_rows": 256}})
    bad = translate_full(SRC, filename="segment_rows.co", schedule="auto", point=point)
    with pytest.raises(CroqError, match="256 segments a program of kernel 'seg_sum_k0', whose block has 128"):
        raise bad.failed["seg_sum"]
    # the source schedule's kernel is not widened: its lanes' segments are no field of its schedule
    bad = translate_full(SRC, filename="segment_rows.co", schedule="source", point=point)
    with pytest.raises(CroqError, match=r"segment_rows\.co:3:3: .*do not walk segments of their own"):
        raise bad.failed["seg_sum"]


def test_the_forms_before_stay_selectable() -> None:
    """A tuning point's ``segment_rows = -1``: one lane a program from SEGMENT_LANE_ELEMS values a lane of
    the grid, else the block's 128 lanes, picked at launch as before R a program was a form."""
    point = (("segment_rows", -1),)
    code = _source("auto", point)
    assert "seg_sum_k0_rows" not in code and "E >= _rt.cdiv(R, 128) * 16384" in code
    mod = _module("auto", point)
    for lens, kernel in ((_lens(300, 520, 6), "seg_sum_k0"), (_lens(300, 60, 7), "seg_sum_k0_lanes")):
        vals, ptr = _csr(lens)
        assert [k for k, _ in _ran(mod, "seg_sum", vals, ptr, poisoned(300))] == [kernel]
        got = poisoned(300)
        mod.seg_sum(vals, ptr, got)  # type: ignore[attr-defined]
        assert_near_max(got, _sums(vals, ptr), 1e-6, f"as before ({kernel})")


GATHERS = """
__co__ void gather_scaled(global f32 [E] x, global s32 [R] at, global s32 [R] len, global f32 [R, 64] y) {
  parallel b by cdiv(R, 4) : block, {i, j} by [4, 64] : thread {
    int r = b # i;
    if (r < R && j < len.at(r)) y.at(r, j) = x.at(at.at(r) * 64 + j);
  }
}

__co__ void gather_offset(global f32 [E] x, global s32 [R] at, global s32 [R] len, global f32 [R, 64] y) {
  parallel b by cdiv(R, 4) : block, {i, j} by [4, 64] : thread {
    int r = b # i;
    if (r < R && j < len.at(r)) y.at(r, j) = x.at(at.at(r) + j);
  }
}
"""


def test_vector_masks_only_where_the_address_can_be_aligned() -> None:
    """schedule/vecmasks.py leaves a load alone where its contiguous index adds a loaded value (``at.at(r)
    + j``: no alignment Triton could prove, the guard ``j < len.at(r)`` stays on the load) and still rounds
    the guard out where the loaded value is scaled (``at.at(r) * 64 + j``: aligned groups of 16 bytes);
    both read what the source does (rows past their length poisoned, as never written)."""
    code = translate_full(GATHERS, filename="gathers.co", schedule="auto").source
    assert "_vec" in _kernel(code, "gather_scaled_k0") and "_vec" not in _kernel(code, "gather_offset_k0")
    mod = load_source(code, "segment_rows_gathers")
    g = torch.Generator().manual_seed(11)
    r = 13
    x = torch.randn(64 * 20, generator=g).to(DEVICE)
    lens = torch.randint(0, 65, (r,), generator=g).to(torch.int32).to(DEVICE)
    for fn, at, row in (
        ("gather_scaled", torch.randint(0, 20, (r,), generator=g), lambda a: a * 64),
        ("gather_offset", torch.randint(0, 64 * 19, (r,), generator=g), lambda a: a),
    ):
        y = poisoned(r, 64)
        getattr(mod, fn)(x, at.to(torch.int32).to(DEVICE), lens, y)
        want = torch.full((r, 64), float("nan"), dtype=torch.float64)
        for i in range(r):
            n, s = int(lens[i]), int(row(at[i]))
            want[i, :n] = x.double().cpu()[s : s + n]
        got = y.double().cpu()
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(), want.nan_to_num()), fn
