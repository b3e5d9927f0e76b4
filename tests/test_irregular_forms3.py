"""Irregular-access kernels in still other forms (tests/programs/irregular_forms3.co): an embedding bag
by offsets, a scatter-add of rows with their counts (atomics), a gather along the first axis, columns
selected into rows, an f16 transpose through a [64, 64] shared tile written by threads, a 3-D permute a
thread an element, NCHW -> NHWC, a roll with wrap-around, a flip of the rows, a strided slice of
columns, a block-sparse copy, a masked scatter of rows by a prefix count, a bit-unpack into u8 rows.
Each runs on ragged sizes with random inputs (indices with repeats where the kernel allows) and
NaN-poisoned outputs in both schedules, compared with float64 torch; under auto the accesses that run
along a contiguous axis are compiled for sm_90a and counted in the PTX (tests/access_lines.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import access_counts
import pytest
import torch
from kernel_util import DEVICE, load_once

PROGRAM = Path(__file__).parent / "programs" / "irregular_forms3.co"
NAN = float("nan")


def _full(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, NAN, device=DEVICE, dtype=dtype)


def _ints(hi: int, *shape: int, lo: int = 0) -> torch.Tensor:
    return torch.randint(lo, hi, shape, device=DEVICE, dtype=torch.int32)


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE, dtype=torch.float64).to(dtype)


def _same(got: torch.Tensor, want: torch.Tensor, atol: float = 0.0) -> None:
    """``got`` against a float64 (or integer) reference: exact unless a tolerance is given."""
    if got.dtype.is_floating_point:
        got, want = got.double(), want.to(got.dtype).double() if not atol else want.double()
    else:
        want = want.to(got.dtype)
    torch.testing.assert_close(got, want, rtol=1e-5 if atol else 0.0, atol=atol, equal_nan=True)


def _d(t: torch.Tensor) -> torch.Tensor:
    return t.double()


# ---------------------------------------------------------------- gathered and scattered rows


def embedding_bag(m: object) -> None:
    b, v, d = 7, 40, 150
    lens = torch.randint(0, 6, (b,)).tolist()  # empty bags too
    off = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], device=DEVICE, dtype=torch.int32)
    idx = _ints(v, int(off[-1]))
    table, out = _randn(v, d), _full(b, d)
    m.embedding_bag(off, idx, table, out)  # type: ignore[attr-defined]
    want = torch.nn.functional.embedding_bag(idx.long(), _d(table), off[:-1].long(), mode="sum")
    _same(out, want, atol=1e-5)


def scatter_add_count(m: object) -> None:
    t, d, k = 45, 77, 9
    key, x = _ints(k, t), _randn(t, d)
    sums, counts = torch.zeros(k, d, device=DEVICE), torch.zeros(k, device=DEVICE, dtype=torch.int32)
    m.scatter_add_count(key, x, sums, counts)  # type: ignore[attr-defined]
    want = torch.zeros(k, d, dtype=torch.float64, device=DEVICE).index_add_(0, key.long(), _d(x))
    _same(sums, want, atol=1e-5)
    _same(counts, torch.bincount(key.long(), minlength=k))


def gather_first(m: object) -> None:
    mm, n, k = 30, 300, 11
    x, idx, out = _randn(mm, n), _ints(mm, k, n), _full(k, n)
    m.gather_first(x, idx, out)  # type: ignore[attr-defined]
    _same(out, torch.gather(_d(x), 0, idx.long()))


def select_cols_t(m: object) -> None:
    cols, x, out = _ints(50, 13), _randn(301, 50), _full(13, 301)
    m.select_cols_t(cols, x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).index_select(1, cols.long()).T)


# ---------------------------------------------------------------- index maps


def transpose_smem_f16(m: object) -> None:
    x, out = _randn(75, 133, dtype=torch.float16), _full(133, 75, dtype=torch.float16)
    m.transpose_smem_f16(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).T)


def permute_bdn(m: object) -> None:
    x, out = _randn(3, 45, 70), _full(3, 70, 45)
    m.permute_bdn(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).permute(0, 2, 1))


def nchw_to_nhwc(m: object) -> None:
    x, out = _randn(2, 37, 5, 45), _full(2, 5, 45, 37)
    m.nchw_to_nhwc(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).permute(0, 2, 3, 1))


def roll_last(m: object) -> None:
    x, out = _randn(9, 301), _full(9, 301)
    m.roll_last(117, x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).roll(117, 1))


def flip_rows(m: object) -> None:
    x, out = _randn(37, 300, dtype=torch.float16), _full(37, 300, dtype=torch.float16)
    m.flip_rows(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).flip(0))


def every_other_col(m: object) -> None:
    x, out = _randn(37, 301), _full(37, 151)
    m.every_other_col(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x)[:, ::2])


# ---------------------------------------------------------------- sparse and masked


def block_sparse_copy(m: object) -> None:
    mm, n = 100, 140  # 4 x 5 blocks of 32, the last row and column of blocks ragged
    picked = torch.randperm(20)[:7]
    blk = torch.stack([picked // 5, picked % 5], 1).to(device=DEVICE, dtype=torch.int32)
    x, out = _randn(mm, n), _full(mm, n)
    m.block_sparse_copy(blk, x, out)  # type: ignore[attr-defined]
    want = torch.full((mm, n), NAN, dtype=torch.float64, device=DEVICE)
    for r, c in blk.tolist():
        want[r * 32 : r * 32 + 32, c * 32 : c * 32 + 32] = _d(x)[r * 32 : r * 32 + 32, c * 32 : c * 32 + 32] * 2
    _same(out, want)


def masked_scatter_rows(m: object) -> None:
    r, d = 57, 150
    mask = torch.randint(0, 2, (r,), device=DEVICE, dtype=torch.uint8)
    pre = (mask.int().cumsum(0) - mask.int()).int()
    src, x, out = _randn(int(mask.sum()) + 3, d), _randn(r, d), _full(r, d)
    m.masked_scatter_rows(mask, pre, src, x, out)  # type: ignore[attr-defined]
    rows = (mask != 0)[:, None].expand(r, d)
    _same(out, _d(x).masked_scatter(rows, _d(src)))


def bit_unpack(m: object) -> None:
    n = 1001
    x = torch.randint(-(2**31), 2**31 - 1, (n,), device=DEVICE, dtype=torch.int64).to(torch.int32)
    out = torch.full((32, n), 7, device=DEVICE, dtype=torch.uint8)
    m.bit_unpack(x, out)  # type: ignore[attr-defined]
    bits = torch.arange(32, device=DEVICE)[:, None]
    _same(out, ((x.long()[None, :] >> bits) & 1).to(torch.uint8))


CHECKS: list[Callable[[object], None]] = [
    embedding_bag, scatter_add_count, gather_first, select_cols_t, transpose_smem_f16, permute_bdn,
    nchw_to_nhwc, roll_last, flip_rows, every_other_col, block_sparse_copy, masked_scatter_rows, bit_unpack,
]  # fmt: skip


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
def test_irregular_form(check: Callable[[object], None], schedule: str) -> None:
    torch.manual_seed(0)
    check(_module(schedule))


@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
def test_irregular_form_widened(check: Callable[[object], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """auto's widened kernels, which its launchers run where the grid keeps a program per SM: one SM."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "1")
    torch.manual_seed(0)
    check(_module("auto"))


def test_every_function_of_the_program_is_checked() -> None:
    text = PROGRAM.read_text()
    names = {line.split("(")[0].split()[-1] for line in text.splitlines() if line.startswith("__co__")}
    assert names == {f.__name__ for f in CHECKS}


# ---------------------------------------------------------------- whole lines under auto (sm_90a)

# sizes at which the launchers pick their widened kernels (a program per SM or more), multiples of 16
SIZES: dict[str, dict[str, int]] = {
    "embedding_bag": {"B1": 4097, "B": 4096, "T": 65536, "V": 65536, "D": 512},
    "scatter_add_count": {"T": 16384, "D": 512, "K": 1024},
    "gather_first": {"M": 4096, "K": 4096, "N": 1024},
    "select_cols_t": {"K": 1024, "M": 4096, "N": 4096},
    "transpose_smem_f16": {"M": 4096, "N": 4096},
    "permute_bdn": {"B": 8, "N": 1024, "D": 512},
    "nchw_to_nhwc": {"S": 16, "C": 256, "H": 32, "W": 32},
    # (a scalar left out runs at 1: a roll by one f32 reads 4 bytes off every 16-byte group, which no
    # translation reads as vectors; a shift that is a multiple of 16 is one Triton specialises as such)
    "roll_last": {"M": 4096, "N": 4096, "shift": 256},
    "flip_rows": {"M": 4096, "N": 4096},
    "every_other_col": {"M": 4096, "N": 4096, "H": 2048},
    "block_sparse_copy": {"NB": 4096, "M": 4096, "N": 4096},
    "masked_scatter_rows": {"R": 16384, "S": 16384, "D": 1024},
    "bit_unpack": {"N": 1048576},
}


def _accesses(function: str) -> dict[str, dict[str, int]]:
    """``function``'s accesses compiled for sm_90a at its ``SIZES`` (once per test run)."""
    return access_counts.accesses(PROGRAM, function, SIZES[function])


# (function, "tensor.ld" / "tensor.st", scalar accesses allowed, why not yet): the accesses that run along a
# contiguous axis, which auto must compile to whole lines.  Left out: index reads (off, idx, key, cols, blk,
# mask, pre: a value a row or a program), true gathers (gather_first's and select_cols_t's x), atomics.
WHOLE: list[tuple[str, str, int, str]] = [
    (
        "embedding_bag",
        "table.ld",
        0,
        "the bag's while loop over run-time bounds keeps the kernel as lifted (schedule/widen.py: a reduction or a gather, the loop's bound over the lanes): 128 lanes of a column block on 4 warps, an element a thread",
    ),
    (
        "embedding_bag",
        "out.st",
        0,
        "the bag's while loop over run-time bounds keeps the kernel as lifted (schedule/widen.py: a reduction or a gather, the loop's bound over the lanes): 128 lanes of a column block on 4 warps, an element a thread",
    ),
    (
        "scatter_add_count",
        "x.ld",
        0,
        "a program a row with atomics: 64 lanes on 2 warps, an element a thread; schedule/widen.py widens neither axis: the row index t is used on its own but beside an atomic and under a condition on the block (row_blockers: Atomic, cb == 0 && c == 0, the count once a row), and the column block cb is no coordinate alone (that condition reads it); the serial form runs column blocks one after the other",
    ),
    ("gather_first", "idx.ld", 0, ""),
    ("gather_first", "out.st", 0, ""),
    ("select_cols_t", "out.st", 0, ""),
    ("transpose_smem_f16", "x.ld", 0, ""),
    ("transpose_smem_f16", "out.st", 0, ""),
    ("permute_bdn", "x.ld", 0, ""),
    ("permute_bdn", "out.st", 0, ""),
    ("nchw_to_nhwc", "x.ld", 0, ""),
    ("nchw_to_nhwc", "out.st", 0, ""),
    ("roll_last", "x.ld", 0, ""),
    ("roll_last", "out.st", 0, ""),
    ("flip_rows", "x.ld", 0, ""),
    ("flip_rows", "out.st", 0, ""),
    ("every_other_col", "x.ld", 0, ""),
    ("every_other_col", "out.st", 0, ""),
    ("block_sparse_copy", "x.ld", 0, ""),
    ("block_sparse_copy", "out.st", 0, ""),
    ("masked_scatter_rows", "src.ld", 0, ""),
    ("masked_scatter_rows", "x.ld", 0, ""),
    ("masked_scatter_rows", "out.st", 0, ""),
    ("bit_unpack", "x.ld", 0, ""),
    ("bit_unpack", "out.st", 0, ""),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("function", "access", "scalars"),
    [
        pytest.param(f, a, n, id=f"{f}-{a}", marks=[pytest.mark.xfail(strict=True, reason=why)] if why else [])
        for f, a, n, why in WHOLE
    ],
)
def test_auto_accesses_whole_lines(function: str, access: str, scalars: int) -> None:
    got = _accesses(function)
    assert access in got, f"no access of {access} in {function}: {got}"
    assert got[access].get("x1", 0) <= scalars, (
        f"{function}: {access} is {got[access]} (x1: an element a thread); {got}"
    )


def test_every_function_has_sizes_for_the_compile_check() -> None:
    assert set(SIZES) == {f.__name__ for f in CHECKS}
