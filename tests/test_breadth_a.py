"""Constructs restored on the tile IR (issue 28, part A; tests/programs/breadth_a.co, one check per
kernel): ``span_as`` inside copies of tensors and their windows (any extents); named views with
run-time origins read, written and added to by element; ``span_as`` of buffers whose extents are
not powers of two; named parts of buffers (a thread's own part too) read and written by element;
``swap`` / ``rotate`` / run-time ``select`` of buffers in scratch memory, ``tma.any`` / ``dma.any``
futures' buffers read at other threads' positions included; ``&`` ``|`` ``^`` ``~``;
``__alignup`` / ``__aligndown`` (in kernels and at host level); ``dma.pad`` between tensors; loops
with a step; index tuples as coordinates (named by ``with`` too, and computed: ``c * 8``,
``at + {0, 1}``); shapes (derived ones too) as view extents; arrays of buffers (shared and global,
their elements by a slot known at run time);
run-time fills and a thread's own array filled (with one value or each thread's own); per-thread
copies between a thread's buffer and its part of a shared one.  Each runs on ragged sizes with
NaN-poisoned outputs in both schedules and is compared with float64 torch; the errors each form
can raise are checked too."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE

import croq2triton
from croq2triton.errors import CroqError, CroqSemanticError

PROGRAM = Path(__file__).parent / "programs" / "breadth_a.co"
NAN = float("nan")
F64 = torch.float64


def _full(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, NAN, device=DEVICE, dtype=dtype)


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE).to(dtype)


def _ints(lo: int, hi: int, *shape: int) -> torch.Tensor:
    return torch.randint(lo, hi, shape, device=DEVICE, dtype=torch.int32)


def _close(got: torch.Tensor, want: torch.Tensor, atol: float = 1e-5) -> None:
    torch.testing.assert_close(got.to(F64), want.to(F64), rtol=1e-5, atol=atol, equal_nan=True)


def sa_chunks(m: object) -> None:
    a, out = _randn(16, 18, 9), _full(8, 9, 36)
    m.sa_chunks(a, out)  # type: ignore[attr-defined]
    _close(out, a.to(F64).reshape(8, 9, 36), 0.0)


def sa_rows(m: object) -> None:
    a, out = _randn(42, 6), _full(42, 6)  # 42 * 6 = 7 rows of 36
    m.sa_rows(a, out)  # type: ignore[attr-defined]
    _close(out, a.to(F64), 0.0)


def sa_window(m: object) -> None:
    x, out = _randn(5, 5, 7, dtype=torch.float16), _full(5, 7, 5, dtype=torch.float16)
    m.sa_window(x, out)  # type: ignore[attr-defined]
    _close(out, x.to(F64).reshape(5, 7, 5), 0.0)


def sa_lanes(m: object) -> None:
    a, out = _randn(10, 7, 9), _full(14, 45)
    m.sa_lanes(a, out)  # type: ignore[attr-defined]
    _close(out, a.to(F64).reshape(14, 45) * 3)


def sa_strip(m: object) -> None:
    a, out = _randn(3, 384), _full(3, 16, 24)
    m.sa_strip(a, out)  # type: ignore[attr-defined]
    v = a.to(F64).reshape(3, 16, 24)
    _close(out, v * 2 + v.flip(1))


def sa_write(m: object) -> None:
    a, out = _randn(5, 6, 10), _full(5, 60)
    m.sa_write(a, out)  # type: ignore[attr-defined]
    _close(out, (a.to(F64) - 1).reshape(5, 60))


def part_read(m: object) -> None:
    x, out = _randn(37, 64), _full(37, 32)
    m.part_read(x, out)  # type: ignore[attr-defined]
    tiles = torch.cat([x.to(F64), torch.zeros(3, 64, dtype=F64, device=DEVICE)]).reshape(10, 4, 64)[:, :, 32:]
    _close(out, (tiles + tiles.flip(1).flip(2)).reshape(40, 32)[:37])


def part_write(m: object) -> None:
    x, out = _randn(37, 48), _full(37, 48)
    m.part_write(x, out)  # type: ignore[attr-defined]
    _close(out, x.to(F64).flip(1), 0.0)


def global_array(m: object) -> None:
    x = _randn(70)
    out = m.global_array(x)  # type: ignore[attr-defined]
    _close(out, torch.stack([x.to(F64) * (s + 1) for s in range(3)]))


def seg_sum(m: object) -> None:
    starts, x, out = (
        torch.tensor([0, 5, 97, 98, 100, 3], dtype=torch.int32, device=DEVICE),
        _randn(100, 37),
        _full(6, 37),
    )
    m.seg_sum(starts, x, out)  # type: ignore[attr-defined]
    padded = torch.cat([x.to(F64), torch.zeros(4, 37, dtype=F64, device=DEVICE)])  # outside the tensor: zero
    _close(out, torch.stack([padded[s : s + 4].sum(0) for s in starts.tolist()]))


def win_write(m: object) -> None:
    starts, x, out = torch.tensor([0, 5, 12, 17], dtype=torch.int32, device=DEVICE), _randn(4, 5), _full(20)
    m.win_write(starts, x, out)  # type: ignore[attr-defined]
    want = _full(20).to(F64)  # lanes 5..7 lie outside the window, 20.. outside the tensor: dropped
    for g, s in enumerate(starts.tolist()):
        n = min(5, 20 - s)
        want[s : s + n] = x[g, :n].to(F64)
    _close(out, want, 0.0)


def win_add(m: object) -> None:
    starts, x = torch.tensor([0, 2, 9, 4, 0], dtype=torch.int32, device=DEVICE), _randn(5, 3, 6)
    out = torch.zeros(11, 13, device=DEVICE)
    m.win_add(starts, x, out)  # type: ignore[attr-defined]
    want = torch.zeros(11 + 3, 13 + 7, dtype=F64, device=DEVICE)
    for g, s in enumerate(starts.tolist()):
        want[s : s + 3, s + 1 : s + 7] += x[g].to(F64)
    _close(out, want[:11, :13])


def pipe_stencil(m: object) -> None:
    x, out = _randn(1000), _full(1000)
    m.pipe_stencil(x, out)  # type: ignore[attr-defined]
    padded = torch.cat([x.to(F64), torch.zeros(600, dtype=F64, device=DEVICE)])
    _close(out, padded[:1000] + padded[1:1001])


def rot3(m: object) -> None:
    x, out = _randn(500), _full(500)
    m.rot3(x, out)  # type: ignore[attr-defined]
    d = torch.cat([x.to(F64), torch.zeros(200, dtype=F64, device=DEVICE)]).diff()
    want = torch.empty(600, dtype=F64, device=DEVICE)
    for p in range(6):  # after the rotation a holds b's window, b c's, c a's
        for dst, src in ((0, 64), (32, 0), (64, 32)):
            want[p * 96 + dst : p * 96 + dst + 32] = d[p * 96 + src : p * 96 + src + 32]
    _close(out, want[:500])


def sel_scratch(m: object) -> None:
    x, which, out = _randn(70), torch.tensor([0, 1, 1, 0, 1], dtype=torch.int32, device=DEVICE), _full(5, 32)
    m.sel_scratch(x, which, out)  # type: ignore[attr-defined]
    d = x.to(F64).diff()
    _close(out, torch.stack([d[32 * w : 32 * w + 32] for w in which.tolist()]))


def bits(m: object) -> None:
    x = torch.randint(0, 2**32 - 1, (300,), device=DEVICE, dtype=torch.int64)
    out = torch.zeros(300, dtype=torch.uint32, device=DEVICE)
    m.bits(x.to(torch.uint32), out)  # type: ignore[attr-defined]
    assert torch.equal(out.to(torch.int64), (x & 255) | ((x ^ 7) & 3840))


def bits_s32(m: object) -> None:
    x, out = _ints(-1000, 1000, 333), torch.zeros(333, dtype=torch.int32, device=DEVICE)
    m.bits_s32(x, out)  # type: ignore[attr-defined]
    i = torch.arange(333, device=DEVICE, dtype=torch.int32)
    assert torch.equal(out, torch.where(i % 2 == 1, x ^ i, x | 16))


def align(m: object) -> None:
    x = _ints(-100, 1000, 300)
    up, down = torch.zeros_like(x), torch.zeros_like(x)
    m.align(x, up, down)  # type: ignore[attr-defined]
    xi = x.to(torch.int64)  # C's truncating division
    assert torch.equal(up.to(torch.int64), torch.div(xi + 15, 16, rounding_mode="trunc") * 16)
    assert torch.equal(down.to(torch.int64), torch.div(xi, 12, rounding_mode="trunc") * 12)


def align_tiles(m: object) -> None:
    x, out = _randn(203), _full(203)
    m.align_tiles(x, out)  # type: ignore[attr-defined]
    i = torch.arange(203, device=DEVICE)
    last = (i + 7) // 8 * 8 - 1  # -1 for i = 0, 203 for the last tile: outside the tensor, zero
    inside = (last >= 0) & (last < 203)
    want = x.to(F64)[i // 8 * 8] + torch.where(inside, x.to(F64)[last.clamp(0, 202)], 0.0)
    _close(out, want)


def pad_whole(m: object) -> None:
    x = _randn(13, 21)
    for rows, cols in ((15, 24), (17, 26)):  # exactly the padded shape, and larger (the tail's zeros)
        out = _full(rows, cols)
        m.pad_whole(x, out)  # type: ignore[attr-defined]
        want = torch.zeros(rows, cols, dtype=F64, device=DEVICE)
        want[:15, :24] = torch.nn.functional.pad(x.to(F64), (2, 1, 1, 1), value=0.5)
        _close(out, want, 0.0)


def pad_rows(m: object) -> None:
    x, out = _randn(9, 30, dtype=torch.float16), _full(9, 35, dtype=torch.float16)
    m.pad_rows(x, out)  # type: ignore[attr-defined]
    _close(out, torch.nn.functional.pad(x.to(F64), (3, 2), value=-1.0), 0.0)


def step_sum(m: object) -> None:
    x, out = _randn(37), _full(64)
    m.step_sum(x, out)  # type: ignore[attr-defined]
    _close(out, x.to(F64)[0::2].sum().expand(64))


def step_slice(m: object) -> None:
    x, out = _randn(23, 64), _full(64)
    m.step_slice(x, out)  # type: ignore[attr-defined]
    _close(out, x.to(F64)[1:22:3].sum(0))


def idx_coord(m: object) -> None:
    x, out = _randn(48, 80), _full(48, 80)
    m.idx_coord(x, out)  # type: ignore[attr-defined]
    _close(out, x.to(F64), 0.0)


def idx_elem(m: object) -> None:
    x, out = _randn(37, 45), _full(45, 37)
    m.idx_elem(x, out)  # type: ignore[attr-defined]
    _close(out, x.to(F64).T + 1)


def idx_assign(m: object) -> None:
    x, out = _randn(36, 60), _full(60, 36)
    m.idx_assign(x, out)  # type: ignore[attr-defined]
    _close(out, x.to(F64).T, 0.0)


def buf_pair(m: object) -> None:
    x, out = _randn(7, 64), _full(7, 64)
    m.buf_pair(x, out)  # type: ignore[attr-defined]
    want = torch.zeros(7, 64, dtype=F64, device=DEVICE)  # row 7 lies outside x: row 6 reads zeros
    want[0:6:2], want[1::2] = x.to(F64)[1::2], x.to(F64)[0:6:2]
    _close(out, want, 0.0)


def buf_grid(m: object) -> None:
    x, pick, out = _randn(5, 20), torch.tensor([0, 2, 1, 2, 0], dtype=torch.int32, device=DEVICE), _full(5, 16)
    m.buf_grid(x, pick, out)  # type: ignore[attr-defined]
    want = torch.stack(
        [x[p, :16].to(F64) if p % 2 == 1 else torch.full((16,), -1.0, dtype=F64, device=DEVICE) for p in pick.tolist()]
    )
    _close(out, want, 0.0)


def fill_runtime(m: object) -> None:
    x, out = _randn(50), _full(9, 48)
    m.fill_runtime(x, out)  # type: ignore[attr-defined]
    want = (x[:9].to(F64) * 3)[:, None].repeat(1, 48)
    want[:, :40] += x[:40].to(F64)
    _close(out, want)


def _padded(x: torch.Tensor, *shape: int) -> torch.Tensor:
    """``x`` in float64, zero-extended to ``shape`` (reads outside a tensor are zero)."""
    out = torch.zeros(shape, dtype=F64, device=DEVICE)
    out[tuple(slice(0, n) for n in x.shape)] = x.to(F64)
    return out


def local_fill(m: object) -> None:
    x, s, out = _randn(37), _randn(3), _full(37)
    m.local_fill(x, s, out)  # type: ignore[attr-defined]
    _close(out, 3 + 4 * x.to(F64) + 2 * s.to(F64).repeat_interleave(16)[:37])


def tma_swap(m: object) -> None:
    x, out = _randn(13, 28), _full(13, 28)  # rows of 112 bytes: the TMA path (16-byte aligned)
    m.tma_swap(x, out)  # type: ignore[attr-defined]
    _close(out, _padded(x, 16, 32).reshape(2, 8, 4, 8).flip(3).reshape(16, 32)[:13, :28], 0.0)


def dma_rot(m: object) -> None:
    x, out = _randn(11, 21), _full(11, 21)
    m.dma_rot(x, out)  # type: ignore[attr-defined]
    _close(out, _padded(x, 12, 24).reshape(3, 4, 3, 8).flip(1).reshape(12, 24)[:11, :21] * 2)


def shp_view(m: object) -> None:
    x, out = _randn(10, 15), _full(10, 15)
    m.shp_view(x, out)  # type: ignore[attr-defined]
    flipped = _padded(x, 12, 18).reshape(3, 4, 18).flip(1).reshape(12, 18)[:10, :15]
    _close(out, x.to(F64) + flipped * 96)


def idx_with(m: object) -> None:
    x, out = _randn(2, 12, 20), _full(2, 12, 20)
    m.idx_with(x, out)  # type: ignore[attr-defined]
    a = torch.arange(12, device=DEVICE).div(4, rounding_mode="floor")[:, None]
    b = torch.arange(20, device=DEVICE).div(5, rounding_mode="floor")[None, :]
    _close(out, x.to(F64) + (a * 10 + b).to(F64))


def seg_rows(m: object) -> None:
    offs, x, out = torch.tensor([0, 3, 3, 10, 17], dtype=torch.int32, device=DEVICE), _randn(17, 21), _full(4, 21)
    m.seg_rows(offs, x, out)  # type: ignore[attr-defined]
    bounds = offs.tolist()
    want = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        weights = torch.arange(b - a, 0, -1, dtype=F64, device=DEVICE)[:, None]  # the loop's count, counted down
        want.append((x[a:b].to(F64) * weights).sum(0))
    _close(out, torch.stack(want))


def bits_not(m: object) -> None:
    x = torch.randint(0, 2**32 - 1, (37,), device=DEVICE, dtype=torch.int64)
    y = _ints(-1000, 1000, 37)
    out, sout = torch.zeros(37, dtype=torch.uint32, device=DEVICE), torch.zeros(37, dtype=torch.int32, device=DEVICE)
    m.bits_not(x.to(torch.uint32), y, out, sout)  # type: ignore[attr-defined]
    assert torch.equal(out.to(torch.int64), (~x & 0xFFFF) ^ (x // 8 * 8))
    assert torch.equal(sout, ~y + 48 * 1000 + 32)  # 37 aligned up and down to 16


def shp_tensor(m: object) -> None:
    x, out = _randn(7, 5), _full(5, 7)
    m.shp_tensor(x, out)  # type: ignore[attr-defined]
    _close(out, x.to(F64).T * 35)


def thr_part(m: object) -> None:
    a, out = _randn(3, 4, 9), _full(3, 36)
    m.thr_part(a, out)  # type: ignore[attr-defined]
    _close(out, a.to(F64).reshape(3, 36), 0.0)


def part_thr(m: object) -> None:
    a, out = _randn(10, 9), _full(10, 9)
    m.part_thr(a, out)  # type: ignore[attr-defined]
    _close(out, a.to(F64).flip(1) * 2)


def arr_slots(m: object) -> None:
    x, pick = _randn(13, 16), torch.tensor([2, 0, 1, 1, 2], dtype=torch.int32, device=DEVICE)
    out, o2 = _full(5, 4, 16), _full(5, 16)
    m.arr_slots(x, pick, out, o2)  # type: ignore[attr-defined]
    tiles, k = x[:12].to(F64).reshape(3, 4, 16), pick.long()
    _close(out, tiles[k], 0.0)
    _close(o2, tiles[k, 3].flip(1) + tiles[2 - k, 0])


def strip_lanes(m: object) -> None:
    a, out = _randn(3, 384), _full(3, 384)
    m.strip_lanes(a, out)  # type: ignore[attr-defined]
    rows = a.to(F64).reshape(3, 16, 24)
    want = torch.cat([rows[:, :, 12:].flip(2) * 2, rows[:, :, 12:]], 2)
    _close(out, want.reshape(3, 384))


def own_fill(m: object) -> None:
    x, out = _randn(10, 8), _full(10, 8)
    m.own_fill(x, out)  # type: ignore[attr-defined]
    _close(out, (x.to(F64) + 2) * (x.to(F64) + 1))


def tup_arith(m: object) -> None:
    x, out, o2 = _randn(13, 11), _full(13, 11), _full(13, 11)
    m.tup_arith(x, out, o2)  # type: ignore[attr-defined]
    _close(out, x.to(F64), 0.0)
    _close(o2, x.to(F64) + torch.cat([x[:, 1:], x[:, -1:]], 1).to(F64))


CHECKS: list[Callable[[object], None]] = [
    sa_chunks, sa_rows, sa_window, sa_lanes, sa_strip, sa_write, seg_sum, win_write, win_add, pipe_stencil, rot3,
    sel_scratch, bits, bits_s32, align, align_tiles, pad_whole, pad_rows, step_sum, step_slice, idx_coord,
    idx_elem, buf_pair, buf_grid, fill_runtime, part_read, part_write, global_array, idx_assign, local_fill,
    tma_swap, dma_rot, shp_view, idx_with, seg_rows, bits_not, shp_tensor, thr_part, part_thr,
    arr_slots, strip_lanes, own_fill, tup_arith,
]  # fmt: skip

_MODULES: dict[str, object] = {}


def _module(schedule: str) -> object:
    if schedule not in _MODULES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the loops' steps (checked below)
            _MODULES[schedule] = croq2triton.load(str(PROGRAM), schedule=schedule)
    return _MODULES[schedule]


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
def test_breadth_form(check: Callable[[object], None], schedule: str) -> None:
    torch.manual_seed(0)
    check(_module(schedule))


def test_every_function_of_the_program_is_checked() -> None:
    text = PROGRAM.read_text()
    names = {line.split("(")[0].split()[-1] for line in text.splitlines() if line.startswith("__co__")}
    assert names == {f.__name__ for f in CHECKS}


def test_a_span_as_of_another_count_is_refused_at_launch() -> None:
    a, out = _randn(43, 6), _full(43, 6)  # 258 elements are not 7 rows of 36
    with pytest.raises(CroqError, match="span_as: the new shape does not have the M \\* 6 elements"):
        _module("source").sa_rows(a, out)  # type: ignore[attr-defined]


def test_a_loop_step_warns_that_upstream_ignores_it() -> None:
    lines, keep = PROGRAM.read_text().splitlines(), False
    for k, line in enumerate(lines):  # the loops' kernels only, on their lines (translating all is slow)
        keep = line.startswith("__co__ void step_") or (keep and not line.startswith("__co__"))
        lines[k] = line if keep else ""
    out = croq2triton.translate_full("\n".join(lines), filename=str(PROGRAM))
    steps = [d for d in out.diagnostics if "upstream's CUDA backend ignores a loop's step" in d.message]
    assert [(d.severity, d.span.line if d.span else 0) for d in steps] == [("warning", 168), ("warning", 179)]
    assert "steps by 2" in steps[0].message and "steps by 3" in steps[1].message


def _diagnose(src: str, tmp_path: Path) -> str:
    """The error that stops function ``f`` of ``src`` (raised when it is called), formatted."""
    path = tmp_path / "k.co"
    path.write_text(src)
    try:
        out = croq2triton.translate_full(src, filename=str(path))
    except CroqSemanticError as e:  # (found by sema/checks.py, before the lifting: the whole file stops)
        return str(e)
    assert set(out.failed) == {"f"}
    return str(out.failed["f"])


def test_bitwise_operators_on_floats_are_the_users_error(tmp_path: Path) -> None:
    msg = _diagnose(
        "__co__ void f(global f32 [N] x, global s32 [N] out) {\n"
        "  parallel t by 64 : thread\n    out.at(t) = x.at(t) & 3;\n}\n",
        tmp_path,
    )
    assert "k.co:3:" in msg and "needs integer operands" in msg


def test_a_zero_step_is_the_users_error(tmp_path: Path) -> None:
    msg = _diagnose(
        "__co__ void f(global f32 [N] x, global f32 [64] out) {\n"
        "  parallel t by 64 : thread {\n    f32 acc = 0.0f;\n    with k in [N]\n"
        "      foreach k(0::0)\n        acc = acc + x.at(k);\n    out.at(t) = acc;\n  }\n}\n",
        tmp_path,
    )
    assert "k.co:5:" in msg and "the loop over 'k' steps by 0: it never advances" in msg


def test_a_derived_shape_naming_no_extent_is_the_users_error(tmp_path: Path) -> None:
    msg = _diagnose(
        "__co__ void f(global f32 [M, N] x, global f32 [M, N] out) {\n  tiles : [8, 12];\n"
        "  parallel {bm, bn} by [cdiv(M, 8), cdiv(N, 12)] : block {\n"
        "    g = dma.copy x.view(tiles[(0), (2)]).from(bm * 8, bn * 12) => shared;\n"
        "    dma.copy g.data => out.view(tiles).from(bm * 8, bn * 12);\n  }\n}\n",
        tmp_path,
    )
    assert "k.co:4:36:" in msg and "the shape has 2 extents: (2) names none of them" in msg


def test_bitwise_not_of_a_float_is_the_users_error(tmp_path: Path) -> None:
    msg = _diagnose(
        "__co__ void f(global f32 [N] x, global f32 [N] out) {\n"
        "  parallel t by 64 : thread\n    out.at(t) = ~x.at(t);\n}\n",
        tmp_path,
    )
    assert "k.co:3:17:" in msg and "'~' needs an integer operand" in msg


def test_arithmetic_of_index_tuples_of_other_lengths_is_the_users_error(tmp_path: Path) -> None:
    msg = _diagnose(
        "__co__ void f(global f32 [M, N] x, global f32 [M, N] out) {\n"
        "  parallel {bm, bn} by [cdiv(M, 8), cdiv(N, 8)] : block {\n"
        "    ituple c = {bm, bn} + {1, 2, 3};\n"
        "    f = dma.copy x.view(8, 8).from(c) => shared;\n    dma.copy f.data => out.view(8, 8).from(c);\n  }\n}\n",
        tmp_path,
    )
    assert "k.co:3:16:" in msg and "'+' of index tuples of 2 and 3 parts" in msg
