"""Widening (schedule/widen.py): under ``--schedule auto`` one program of a tile kernel runs several
consecutive blocks of the source when every block index appears only with its lane, as one
coordinate.  Numerics against torch on ragged sizes with NaN-poisoned outputs in both schedules;
the proof's refusals (a block index on its own, a block-local transpose mixed with its source, a
grid that covers less than the tensor) keep the kernel as written, which still computes the same."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, poisoned

import croq2triton
from croq2triton.api import translate_full
from croq2triton.schedule.policy import tile_auto
from croq2triton.schedule.schedule import TileSchedule
from croq2triton.schedule.widen import NotWidened, analyse, widen
from croq2triton.tir import expr as E
from croq2triton.tir import nodes as N

SCHEDULES = ("source", "auto")

TILES = """
__co__ void scale(global f16 [M, N] x, global f16 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    s = dma.copy x.subspan(32, 32).at(bm, bn) => shared;
    shared f16 [32, 32] r;
    parallel {i, j} by [32, 32] : thread
      r.at(i, j) = s.data.at(i, j) * 2.0f + 1.0f;
    dma.copy r => y.subspan(32, 32).at(bm, bn);
  }
}

__co__ void transpose(global f32 [M, N] x, global f32 [N, M] y) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 32)] : block {
    s = dma.copy x.subspan(16, 32).at(bm, bn) => shared;
    shared f32 [32, 16] t;
    parallel {i, j} by [16, 32] : thread
      t.at(j, i) = s.data.at(i, j);
    dma.copy t => y.subspan(32, 16).at(bn, bm);
  }
}

__co__ void tma_scale(global f16 [M, N] x, global f16 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    shared f16 [32, 32] s, r;
    f = tma.copy.async.swiz<64> x.subspan(32, 32).at(bm, bn) => s;
    wait f;
    parallel {i, j} by [32, 32] : thread
      r.at(i, j) = s.at(i, j) * 2.0f + 1.0f;
    tma.copy r => y.subspan(32, 32).at(bm, bn);
  }
}

__co__ void axpy(f32 alpha, global f32 [N] x, global f32 [N] y, global f32 [N] out) {
  parallel p by cdiv(N, 256) : block
    parallel t by 256 : thread {
      out.at(p # t) = alpha * x.at(p # t) + y.at(p # t);
    }
}
"""

# a block-local transpose added to the tile it came from: the axes pair different coordinates
MIXED = """
__co__ void mixed(global f32 [M, M] x, global f32 [M, M] y) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(M, 16)] : block {
    s = dma.copy x.subspan(16, 16).at(bm, bn) => shared;
    shared f32 [16, 16] t;
    parallel {i, j} by [16, 16] : thread
      t.at(j, i) = s.data.at(i, j) + s.data.at(j, i);
    dma.copy t => y.subspan(16, 16).at(bm, bn);
  }
}
"""

# the block index on its own, as a value
BLOCK_VALUE = """
__co__ void block_id(global f32 [N] x, global f32 [N] out) {
  parallel p by cdiv(N, 64) : block
    parallel t by 64 : thread
      out.at(p # t) = x.at(p # t) + p;
}
"""

# a grid of half the blocks the tensor needs: the second half stays unwritten
HALF_GRID = """
__co__ void half_grid(global f32 [N] x, global f32 [N] out) {
  parallel p by cdiv(N, 128) : block
    parallel t by 64 : thread
      out.at(p # t) = x.at(p # t) * 3.0f;
}
"""


# the same with a TMA store: the last program's extra boxes would land inside the tensor
TMA_HALF_GRID = """
__co__ void tma_half(global f16 [M, N] x, global f16 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 64)] : block {
    shared f16 [32, 32] s, r;
    f = tma.copy.async x.subspan(32, 32).at(bm, bn) => s;
    wait f;
    parallel {i, j} by [32, 32] : thread
      r.at(i, j) = s.at(i, j) * 2.0f;
    tma.copy r => y.subspan(32, 32).at(bm, bn);
  }
}
"""


# a program per row: the row index used on its own becomes a new axis of rows
ROWS = """
__co__ void gather_rows(global s32 [T] idx, global f16 [V, D] table, global f16 [T, D] out) {
  parallel {t, cb} by [T, cdiv(D, 256)] : block
    parallel c by 256 : thread
      out.at(t, cb # c) = table.at(idx.at(t), cb # c);
}

__co__ void scatter_rows(global s32 [T] idx, global f32 [T, D] x, global f32 [V, D] out) {
  parallel {t, cb} by [T, cdiv(D, 128)] : block
    parallel c by 128 : thread
      out.at(idx.at(t), cb # c) = x.at(t, cb # c);
}

__co__ void bag_sum(global s32 [T, 4] idx, global f32 [V, D] table, global f32 [T, D] out) {
  parallel {t, cb} by [T, cdiv(D, 64)] : block
    parallel c by 64 : thread {
      f32 acc = 0.0f;
      foreach k in [4]
        acc = acc + table.at(idx.at(t, k), cb # c);
      out.at(t, cb # c) = acc;
    }
}

__co__ void row_scale(global f32 [M, 64] x, global f32 [M, 64] out) {
  parallel r by M : block
    parallel c by 64 : thread
      out.at(r, c) = x.at(r, c) * 2.0f;
}

__co__ void block_count(global f32 [N] x, global f32 [N] out) {
  parallel p by cdiv(N, 64) : block
    parallel t by 64 : thread
      out.at(p # t) = x.at(p # t) * #p;
}

__co__ void row_guard(global f32 [M, 64] x, global f32 [M, 64] out) {
  parallel r by M : block
    parallel c by 64 : thread
      if (r > 2)
        out.at(r, c) = x.at(r, c) + 1.0f;
}
"""


def _load(tmp_path: Path, name: str, source: str, schedule: str) -> object:
    path = tmp_path / f"{name}.co"
    path.write_text(source)
    return croq2triton.load(path, schedule=schedule)


def _kernel(source: str, fn: str, schedule: str = "auto") -> N.Kernel:
    out = translate_full(source, filename="t.co", schedule=schedule)
    assert not out.failed, out.failed
    kernel, *narrow = out.ir[fn]  # a widened kernel comes with the kernel as written, for small grids
    assert [k.name for k in narrow] == ([f"{kernel.name}_narrow"] if "(widened)" in kernel.doc else [])  # type: ignore[attr-defined]
    return kernel  # type: ignore[no-any-return]


def _as_lifted(kernel: N.Kernel) -> N.Kernel:
    """The kernel before schedule/interior.py split it: its masked branch is the body as lifted."""
    *head, last = kernel.body
    if not (isinstance(last, N.If) and last.orelse):
        return kernel  # not split (TMA accesses)
    return dataclasses.replace(kernel, body=[*head, *last.orelse])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_widened_kernels_compute_the_same(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "tiles", TILES, schedule)
    x = torch.randn(75, 301, device=DEVICE).half()
    y = poisoned(75, 301, dtype=torch.float16)
    mod.scale(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, x * 2 + 1, rtol=0, atol=0)
    x = torch.randn(75, 296, device=DEVICE).half()  # rows of 16-byte multiples: TMA descriptors
    y = poisoned(75, 296, dtype=torch.float16)
    mod.tma_scale(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, x * 2 + 1, rtol=0, atol=0)
    x = torch.randn(53, 97, device=DEVICE)
    y = poisoned(97, 53)
    mod.transpose(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, x.T, rtol=0, atol=0)
    x, yv = torch.randn(5000, device=DEVICE), torch.randn(5000, device=DEVICE)
    out = poisoned(5000)
    mod.axpy(0.5, x, yv, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, 0.5 * x + yv)


def test_auto_widens_rows_to_256_bytes_then_the_tile_to_16_kb() -> None:
    scale = _kernel(TILES, "scale")
    assert [E.fold(g) for g in scale.grid] == [E.CDiv(E.Var("M"), E.Const(64)), E.CDiv(E.Var("N"), E.Const(128))]
    assert scale.num_warps == 4
    assert "one program per 2 x 4 blocks (widened)" in scale.doc
    transpose = _kernel(TILES, "transpose")  # f32: 64 columns are 256 bytes; 8 warps for a transpose
    assert [E.fold(g) for g in transpose.grid] == [E.CDiv(E.Var("M"), E.Const(64)), E.CDiv(E.Var("N"), E.Const(64))]
    assert transpose.num_warps == 8
    source = _kernel(TILES, "scale", "source")
    assert [E.fold(g) for g in source.grid] == [E.CDiv(E.Var("M"), E.Const(32)), E.CDiv(E.Var("N"), E.Const(32))]


def test_tma_boxes_grow_with_the_tile() -> None:
    kernel = _kernel(TILES, "tma_scale")
    boxes = {a.name: a.block for a in kernel.args if isinstance(a, N.Descriptor)}
    assert boxes == {"x_desc_32x256": (32, 256), "y_desc_32x256": (32, 256)}  # rows of 512 bytes, 16 KB
    assert {a.name for a in kernel.args if isinstance(a, N.Constexpr)} >= {"TMA_X_32X256", "TMA_Y_32X256"}
    loads = [s for s in N.walk(kernel.body) if isinstance(s, N.TmaLoad)]
    assert [E.fold(c) for c in loads[0].coords] == [E.Var("bm") * 32, E.Var("bn") * 256]


def test_the_analysis_labels_coordinates() -> None:
    kernel = _as_lifted(_kernel(TILES, "transpose", "source"))
    facts = analyse(kernel)
    assert facts.tile == {"bm": 16, "bn": 32}
    assert facts.inner == {"bm", "bn"}  # bn runs along x's rows, bm along y's
    assert facts.transposes and facts.elem_bytes == 4
    assert tile_auto(kernel, facts) == TileSchedule((4, 2), 8)


@pytest.mark.parametrize(
    ("source", "fn", "why"),
    [
        (MIXED, "mixed", "different coordinates"),
        (BLOCK_VALUE, "block_id", "other than as a coordinate"),
        (HALF_GRID, "half_grid", "not masked within the grid"),
        (TMA_HALF_GRID, "tma_half", "along 'bn'"),
    ],
)
def test_refusals(source: str, fn: str, why: str) -> None:
    kernel = _kernel(source, fn, "source")
    factors = tuple(2 for _ in kernel.program_ids)
    with pytest.raises(NotWidened, match=why):
        widen(_as_lifted(kernel), TileSchedule(factors, 4))
    assert _kernel(source, fn, "auto").grid == kernel.grid


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_refused_kernels_still_compute_the_same(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "mixed", MIXED + BLOCK_VALUE + HALF_GRID, schedule)
    x = torch.randn(40, 40, device=DEVICE)
    y = poisoned(40, 40)
    mod.mixed(x, y)  # type: ignore[attr-defined]
    want = torch.empty_like(x)
    for bm in range(0, 40, 16):  # t(j, i) = s(i, j) + s(j, i): the tile's symmetric part, per tile
        for bn in range(0, 40, 16):
            s = torch.zeros(16, 16, device=DEVICE)
            blk = x[bm : bm + 16, bn : bn + 16]
            s[: blk.shape[0], : blk.shape[1]] = blk
            t = s + s.T
            want[bm : bm + 16, bn : bn + 16] = t[: blk.shape[0], : blk.shape[1]]
    torch.testing.assert_close(y, want)
    x = torch.randn(300, device=DEVICE)
    out = poisoned(300)
    mod.block_id(x, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, x + torch.arange(300, device=DEVICE).div(64, rounding_mode="floor").float())
    out = poisoned(300)
    mod.half_grid(x, out)  # type: ignore[attr-defined]
    blocks = -(-300 // 128)
    torch.testing.assert_close(out[: blocks * 64], x[: blocks * 64] * 3)
    assert torch.isnan(out[blocks * 64 :]).all()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_rows_widen_as_a_new_axis(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "rows", ROWS, schedule)
    table = torch.randn(50, 300, device=DEVICE).half()
    idx = torch.tensor([3, 49, 0, 7, 50, -1, 12, 5, 5, 1, 2, 3, 4, 6, 8, 9, 10, 11, 13], device=DEVICE).int()
    out = poisoned(19, 300, dtype=torch.float16)
    mod.gather_rows(idx, table, out)  # type: ignore[attr-defined]
    inside = (idx >= 0) & (idx < 50)
    want = torch.zeros(19, 300, device=DEVICE).half()
    want[inside] = table[idx[inside].long()]
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    perm = torch.randperm(60, device=DEVICE)[:37].int()
    x = torch.randn(37, 200, device=DEVICE)
    dst = poisoned(60, 200)
    mod.scatter_rows(perm, x, dst)  # type: ignore[attr-defined]
    torch.testing.assert_close(dst[perm.long()], x, rtol=0, atol=0)
    untouched = torch.ones(60, dtype=torch.bool, device=DEVICE)
    untouched[perm.long()] = False
    assert torch.isnan(dst[untouched]).all()  # the last program's extra rows wrote nothing
    bags = torch.randint(0, 40, (19, 4), device=DEVICE).int()
    table = torch.randn(40, 100, device=DEVICE)
    out = poisoned(19, 100)
    mod.bag_sum(bags, table, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, table[bags.long()].sum(1))
    x = torch.randn(45, 64, device=DEVICE)
    out = poisoned(45, 64)
    mod.row_scale(x, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, x * 2, rtol=0, atol=0)
    x = torch.randn(300, device=DEVICE)
    out = poisoned(300)
    mod.block_count(x, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, x * 5)  # cdiv(300, 64) blocks, whatever the schedule
    x = torch.randn(45, 64, device=DEVICE)
    out = poisoned(45, 64)
    mod.row_guard(x, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out[3:], x[3:] + 1)
    assert torch.isnan(out[:3]).all()


def test_rows_widen_where_the_row_index_is_only_an_index() -> None:
    gather = _kernel(ROWS, "gather_rows")
    assert [E.fold(g) for g in gather.grid] == [E.CDiv(E.Var("T"), E.Const(16)), E.CDiv(E.Var("D"), E.Const(256))]
    assert "one program per 16 x 1 blocks (widened)" in gather.doc
    bag = _kernel(ROWS, "bag_sum")  # the loop's accumulator takes the rows' axis too, as far as
    (acc,) = [s for s in N.walk(bag.body) if isinstance(s, N.Let) and s.var.name == "acc"]
    assert acc.value == E.Full((16, 64), 0.0, "f32")  # 8 lanes a thread of 4 warps (policy.LOOP_LANES)
    rows = _kernel(ROWS, "row_scale")  # its lane is a coordinate of its own: rows widen around it
    assert [E.fold(g) for g in rows.grid] == [E.CDiv(E.Var("M"), E.Const(64))]
    count = _kernel(ROWS, "block_count")  # reads the grid's extent: a wider program would change it
    assert count.grid == _kernel(ROWS, "block_count", "source").grid
    guard = _kernel(ROWS, "row_guard")  # a condition on the row joins the masks: it holds per row
    assert [E.fold(g) for g in guard.grid] == [E.CDiv(E.Var("M"), E.Const(64))]


# a window staged at ``p * 24 + idx`` (the copy's lane) and stored at ``out.at(p, k)`` (the thread's): two
# lanes of one extent along one axis, each on its own, are one coordinate, so windows widen as rows; a lane
# read alone that also pairs with its block (``y.at(p # k)``) would be renamed to its widened value: refused
WINDOWS = """
__co__ void windows(global f32 [N] x, global f32 [P, 64] out) {
  parallel p by P : block {
    w = dma.copy.zfill x.subspan(64).step(24).at(p) => shared;
    parallel k by 64 : thread
      out.at(p, k) = w.data.at(k) * 0.5f;
  }
}

__co__ void windows_paired(global f32 [N] x, global f32 [P, 64] out, global f32 [N] y) {
  parallel p by P : block {
    w = dma.copy.zfill x.subspan(64).step(24).at(p) => shared;
    parallel k by 64 : thread {
      out.at(p, k) = w.data.at(k) * 0.5f;
      if ((p # k) < N)
        y.at(p # k) = x.at(p # k);
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_windows_of_lone_lanes_widen_as_rows(tmp_path: Path, schedule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "1")  # the widened kernel runs at these sizes
    mod = _load(tmp_path, "windows", WINDOWS, schedule)
    p, n = 37, 901  # the last windows reach past the signal (zero there)
    x = torch.randn(n, device=DEVICE, dtype=torch.float64).float()
    out = poisoned(p, 64)
    mod.windows(x, out)  # type: ignore[attr-defined]
    xp = torch.nn.functional.pad(x.double(), (0, 24 * p + 64 - n))
    torch.testing.assert_close(out.double(), xp.unfold(0, 64, 24)[:p] * 0.5, rtol=0, atol=0)
    out, y = poisoned(p, 64), poisoned(n)
    mod.windows_paired(x, out, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(out.double(), xp.unfold(0, 64, 24)[:p] * 0.5, rtol=0, atol=0)
    torch.testing.assert_close(y, x, rtol=0, atol=0)


def test_windows_of_lone_lanes_widen_unless_one_pairs() -> None:
    kernel = _kernel(WINDOWS, "windows")
    assert "(widened)" in kernel.doc and len(kernel.grid) == 1
    assert isinstance(E.fold(kernel.grid[0]), E.CDiv)
    paired = _kernel(WINDOWS, "windows_paired", "source")
    with pytest.raises(NotWidened, match="read alone as one coordinate"):
        widen(_as_lifted(paired), TileSchedule((2,), 4))


# a program id of a constant grid used on its own (a bit plane a program): rows of it, where the rows
# divide the grid and it is the only such axis; 24 planes take 8 rows (not 16: no rows past the grid);
# 3 planes (odd) and a second axis used on its own stay as written
PLANES = """
__co__ void planes(global s32 [N] x, global u8 [24, N] out) {
  parallel {b, bn} by [24, cdiv(N, 512)] : block
    parallel i by 512 : thread
      if ((bn # i) < N)
        out.at(b, bn # i) = (x.at(bn # i) >> b) & 1;
}

__co__ void odd_planes(global s32 [N] x, global u8 [3, N] out) {
  parallel {b, bn} by [3, cdiv(N, 512)] : block
    parallel i by 512 : thread
      if ((bn # i) < N)
        out.at(b, bn # i) = (x.at(bn # i) >> b) & 1;
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_rows_of_a_constant_grid(tmp_path: Path, schedule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "1")  # the widened kernel however few its programs
    if schedule == "auto":
        assert "one program per 8 x 1 blocks (widened)" in _kernel(PLANES, "planes").doc
        assert "(widened)" not in _kernel(PLANES, "odd_planes").doc
    mod = _load(tmp_path, "planes", PLANES, schedule)
    for n in (1, 700):
        x = torch.randint(-(2**31), 2**31 - 1, (n,), device=DEVICE, dtype=torch.int64).to(torch.int32)
        for fn, planes in (("planes", 24), ("odd_planes", 3)):
            out = torch.full((planes, n), 7, device=DEVICE, dtype=torch.uint8)
            getattr(mod, fn)(x, out)
            bits = torch.arange(planes, device=DEVICE)[:, None]
            assert torch.equal(out, ((x.long()[None, :] >> bits) & 1).to(torch.uint8)), fn
