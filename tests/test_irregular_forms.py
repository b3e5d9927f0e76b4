"""Irregular-access kernels in many forms (tests/programs/irregular_forms.co, 34 kernels): row
gathers and scatters by index, gathers along a dimension, index-add and scatter-max atomics, a
histogram, a total by atomics, embedding bags, ELL sparse matrix-vector products, stencils, strided
windows, reshaped views, transposing copies and reads, halo windows with run-time origins (1-D and
a 2-D stencil), row biases, selects, ragged segments read from offsets, flat indices unflattened,
3-D grids, a loop over row tiles, per-thread local arrays and loops; each run on ragged sizes
with NaN-poisoned outputs in both schedules and compared with torch.  (Several of these forms were
Triton errors, internal errors or out-of-bounds reads until 2026-12-02.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, load_once

import croq2triton

PROGRAM = Path(__file__).parent / "programs" / "irregular_forms.co"
NAN = float("nan")


def _full(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, NAN, device=DEVICE, dtype=dtype)


def _ints(hi: int, *shape: int, lo: int = 0) -> torch.Tensor:
    return torch.randint(lo, hi, shape, device=DEVICE, dtype=torch.int32)


def _same(got: torch.Tensor, want: torch.Tensor, atol: float = 0.0) -> None:
    torch.testing.assert_close(got, want, rtol=1e-5 if atol else 0.0, atol=atol, equal_nan=True)


def scatter_rows(m: object) -> None:
    idx = torch.randperm(60, device=DEVICE)[:37].int()
    x, out = torch.randn(37, 300, device=DEVICE), _full(60, 300)
    m.scatter_rows(idx, x, out)  # type: ignore[attr-defined]
    want = _full(60, 300)
    want[idx.long()] = x
    _same(out, want)


def take_along(m: object) -> None:
    x, idx, out = torch.randn(37, 50, device=DEVICE), _ints(50, 37, 70), _full(37, 70)
    m.take_along(x, idx, out)  # type: ignore[attr-defined]
    _same(out, torch.gather(x, 1, idx.long()))


def reverse(m: object) -> None:
    x, out = torch.randn(1000, device=DEVICE), _full(1000)
    m.reverse(x, out)  # type: ignore[attr-defined]
    _same(out, x.flip(0))


def strided(m: object) -> None:
    x, out = torch.randn(3 * 333 + 1, device=DEVICE), _full(333)
    m.strided(x, out)  # type: ignore[attr-defined]
    _same(out, x[1::3][:333])


def bag_sum(m: object) -> None:
    idx, table, out = _ints(40, 19, 4), torch.randn(40, 100, device=DEVICE), _full(19, 100)
    m.bag_sum(idx, table, out)  # type: ignore[attr-defined]
    _same(out, table[idx.long()].sum(1), atol=1e-5)


def histogram(m: object) -> None:
    x, bins = _ints(17, 3000), torch.zeros(17, dtype=torch.int32, device=DEVICE)
    m.histogram(x, bins)  # type: ignore[attr-defined]
    _same(bins, torch.bincount(x.long(), minlength=17).int())


def window_gather(m: object) -> None:
    starts, x, out = _ints(92, 9), torch.randn(100, 64, device=DEVICE).half(), _full(9, 8, 64, dtype=torch.float16)
    m.window_gather(starts, x, out)  # type: ignore[attr-defined]
    _same(out, torch.stack([x[s : s + 8] for s in starts.tolist()]))


def index_add(m: object) -> None:
    idx, x, out = _ints(13, 50), torch.randn(50, 100, device=DEVICE), torch.zeros(13, 100, device=DEVICE)
    m.index_add(idx, x, out)  # type: ignore[attr-defined]
    _same(out, torch.zeros(13, 100, device=DEVICE).index_add_(0, idx.long(), x), atol=1e-5)


def ell_spmv(m: object) -> None:
    vals, cols, x, y = torch.randn(300, 8, device=DEVICE), _ints(77, 300, 8), torch.randn(77, device=DEVICE), _full(300)
    m.ell_spmv(vals, cols, x, y)  # type: ignore[attr-defined]
    _same(y, (vals * x[cols.long()]).sum(1), atol=1e-5)


def trans_gather(m: object) -> None:
    idx, x, out = _ints(30, 45), torch.randn(30, 70, device=DEVICE), _full(70, 45)
    m.trans_gather(idx, x, out)  # type: ignore[attr-defined]
    _same(out, x[idx.long()].T)


def batch_gather(m: object) -> None:
    idx, x, out = (
        _ints(20, 3, 11),
        torch.randn(3, 20, 100, device=DEVICE).half(),
        _full(3, 11, 100, dtype=torch.float16),
    )
    m.batch_gather(idx, x, out)  # type: ignore[attr-defined]
    _same(out, torch.gather(x, 1, idx.long()[:, :, None].expand(3, 11, 100)))


def padded_rows(m: object) -> None:
    x, out = torch.randn(77, 100, device=DEVICE), _full(77, 100)
    m.padded_rows(x, out)  # type: ignore[attr-defined]
    _same(out, x - 1)


def first_col(m: object) -> None:
    x, out = torch.randn(37, 64, device=DEVICE), _full(37)
    m.first_col(x, out)  # type: ignore[attr-defined]
    _same(out, x[:, 0] * 2)


def total(m: object) -> None:
    x, s = torch.randn(1000, device=DEVICE), torch.zeros(1, device=DEVICE)
    m.total(x, s)  # type: ignore[attr-defined]
    _same(s, x.sum().reshape(1), atol=1e-3)


def row_max(m: object) -> None:
    x, out = torch.randn(100, 37, device=DEVICE), _full(100)
    m.row_max(x, out)  # type: ignore[attr-defined]
    _same(out, x.max(1).values)


def clamped(m: object) -> None:
    idx, x, out = _ints(60, 23), torch.randn(40, 32, device=DEVICE), _full(23, 32)
    m.clamped(idx, x, out)  # type: ignore[attr-defined]
    _same(out, x[idx.clamp(max=39).long()])


def stencil(m: object) -> None:
    x, out = torch.randn(1000, device=DEVICE), _full(1000)
    m.stencil(x, out)  # type: ignore[attr-defined]
    xp = torch.nn.functional.pad(x, (1, 1))
    _same(out, xp[:-2] + xp[2:] - 2 * x, atol=1e-5)


def decay(m: object) -> None:
    x, out = torch.randn(300, 16, device=DEVICE), _full(300)
    m.decay(x, out)  # type: ignore[attr-defined]
    acc = torch.zeros(300, device=DEVICE)
    for k in range(16):
        acc = acc * 0.5 + x[:, k]
    _same(out, acc, atol=1e-5)


def scatter_max(m: object) -> None:
    keys, vals = _ints(9, 500), _ints(100, 500, lo=-100)
    best = torch.full((9,), -1000, dtype=torch.int32, device=DEVICE)
    m.scatter_max(keys, vals, best)  # type: ignore[attr-defined]
    want = torch.full((9,), -1000, dtype=torch.int32, device=DEVICE).scatter_reduce(0, keys.long(), vals, "amax")
    _same(best, want)


def hashed(m: object) -> None:
    idx, x, out = _ints(1000, 23), torch.randn(41, 64, device=DEVICE), _full(23, 64)
    m.hashed(idx, x, out)  # type: ignore[attr-defined]
    _same(out, x[((idx * 7 + 3) % 41).long()])


def strided_tiles(m: object) -> None:
    x, out = torch.randn(100, 130, device=DEVICE), _full(100, 130)
    m.strided_tiles(x, out)  # type: ignore[attr-defined]
    want = _full(100, 130)
    for r0 in range(0, 100, 32):  # tiles of 16 rows every 32: the rows between stay unwritten
        want[r0 : r0 + 16] = x[r0 : r0 + 16] + 1
    _same(out, want)


def reshape_sum(m: object) -> None:
    x, out = torch.randn(300, 64, device=DEVICE), _full(300)
    m.reshape_sum(x, out)  # type: ignore[attr-defined]
    _same(out, x.sum(1), atol=1e-4)


def transp_copy(m: object) -> None:
    x, out = torch.randn(100, 70, device=DEVICE).half(), _full(70, 100, dtype=torch.float16)
    m.transp_copy(x, out)  # type: ignore[attr-defined]
    _same(out, x.T)


def local_regs(m: object) -> None:
    x, out = torch.randn(200, 4, device=DEVICE), _full(200)
    m.local_regs(x, out)  # type: ignore[attr-defined]
    _same(out, (x * 2).sum(1), atol=1e-5)


def halo(m: object) -> None:
    x, out = torch.randn(1000, device=DEVICE), _full(1000)
    m.halo(x, out)  # type: ignore[attr-defined]
    xp = torch.nn.functional.pad(x, (1, 1))
    _same(out, xp[:-2] + xp[2:], atol=1e-6)


def gather_rows(m: object) -> None:
    table, idx, out = torch.randn(50, 300, device=DEVICE).half(), _ints(50, 19), _full(19, 300, dtype=torch.float16)
    m.gather_rows(idx, table, out)  # type: ignore[attr-defined]
    _same(out, table[idx.long()])


def read_transposed(m: object) -> None:
    x, out = torch.randn(70, 70, device=DEVICE), _full(70, 70)
    m.read_transposed(x, out)  # type: ignore[attr-defined]
    _same(out, x.T)


def stencil2d(m: object) -> None:
    x, out = torch.randn(37, 50, device=DEVICE), _full(37, 50)
    m.stencil2d(x, out)  # type: ignore[attr-defined]
    xp = torch.nn.functional.pad(x, (1, 1, 1, 1))
    _same(out, xp[:-2, 1:-1] + xp[2:, 1:-1] + xp[1:-1, :-2] + xp[1:-1, 2:] - 4 * x, atol=1e-5)


def bias_rows(m: object) -> None:
    x, b, out = torch.randn(37, 300, device=DEVICE), torch.randn(300, device=DEVICE), _full(37, 300)
    m.bias_rows(x, b, out)  # type: ignore[attr-defined]
    _same(out, x + b)


def where_select(m: object) -> None:
    x, y, c, out = torch.randn(1000, device=DEVICE), torch.randn(1000, device=DEVICE), _ints(2, 1000), _full(1000)
    m.where_select(x, y, c, out)  # type: ignore[attr-defined]
    _same(out, torch.where(c != 0, x, y))


def unflatten(m: object) -> None:
    x, out = torch.randn(13, 17, device=DEVICE), _full(200)
    m.unflatten(x, out)  # type: ignore[attr-defined]
    _same(out, x.reshape(-1)[:200])


def grid3d(m: object) -> None:
    x, out = torch.randn(3, 19, 70, device=DEVICE), _full(3, 19, 70)
    m.grid3d(x, out)  # type: ignore[attr-defined]
    _same(out, x * 3)


def col_tiles(m: object) -> None:
    x, out = torch.randn(50, 130, device=DEVICE), _full(50, 130)
    m.col_tiles(x, out)  # type: ignore[attr-defined]
    _same(out, x * x)


def offsets_gather(m: object) -> None:
    starts, lens, x, out = _ints(60, 9), _ints(33, 9), torch.randn(100, device=DEVICE), _full(9, 32)
    m.offsets_gather(starts, lens, x, out)  # type: ignore[attr-defined]
    want = torch.zeros(9, 32, device=DEVICE)
    for g in range(9):
        n, s0 = int(lens[g]), int(starts[g])
        want[g, :n] = x[s0 : s0 + n]
    _same(out, want)


CHECKS: list[Callable[[object], None]] = [
    gather_rows, scatter_rows, take_along, reverse, strided, bag_sum, histogram, window_gather, index_add,
    ell_spmv, trans_gather, batch_gather, padded_rows, first_col, total, row_max, clamped, stencil, decay,
    scatter_max, hashed, strided_tiles, reshape_sum, transp_copy, local_regs, halo, read_transposed, stencil2d,
    bias_rows, where_select, unflatten, grid3d, col_tiles, offsets_gather,
]  # fmt: skip


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
def test_irregular_form(check: Callable[[object], None], schedule: str) -> None:
    torch.manual_seed(0)
    check(_module(schedule))


def test_every_function_of_the_program_is_checked() -> None:
    text = PROGRAM.read_text()
    names = {line.split("(")[0].split()[-1] for line in text.splitlines() if line.startswith("__co__")}
    assert names == {f.__name__ for f in CHECKS}


def test_a_folded_lane_array_is_read_after_a_barrier() -> None:
    """local_regs under auto: the loop filling each lane's `local f32 [4] r` is folded into a 64 x 64
    tile, whose store spreads over the threads otherwise than the per-lane reads after it; without a
    barrier between them the GPU read stale scratch memory (wrong sums on the H200, 2026-12-03; the
    interpreter runs statements in order and cannot show it)."""
    out = croq2triton.translate(PROGRAM.read_text(), filename=PROGRAM.name, schedule="auto")
    kernel = out.split("def local_regs_k0(")[1].split("@_rt.launcher")[0]
    stored = kernel.index("tl.store(r_scratch")
    read = kernel.index("tl.load(r_scratch")
    assert "tl.debug_barrier()" in kernel[stored:read], kernel
