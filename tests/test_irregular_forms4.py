"""Irregular-access kernels in yet other forms (tests/programs/irregular_forms4.co): flat thread indices
over a whole tensor, a thread a row walking its row, block-stride loops over a row, stores at computed
places, shared tiles written by threads and atomics; embedding lookups, index_select along either axis,
index_add / scatter_add, a gather by a permutation, flips, a roll by a run-time amount stored at the
computed place, im2col, strided slices by a run-time step, a ragged transpose from one flat index, a
pad, a concatenation, masked select by prefix offsets, one-hot, repeat_interleave, a linear
interpolation of two neighbours and batched column gathers.  Each runs on ragged sizes with random
inputs (indices with repeats where the kernel allows) and NaN-poisoned outputs in both schedules,
compared with float64 torch; under auto the accesses that run along a contiguous axis are compiled for
sm_90a and counted in the PTX (tests/access_lines.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import access_counts
import pytest
import torch
from kernel_util import DEVICE, load_once

PROGRAM = Path(__file__).parent / "programs" / "irregular_forms4.co"
NAN = float("nan")


def _full(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, NAN, device=DEVICE, dtype=dtype)


def _ints(hi: int, *shape: int) -> torch.Tensor:
    return torch.randint(0, hi, shape, device=DEVICE, dtype=torch.int32)


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE, dtype=torch.float64).to(dtype)


def _same(got: torch.Tensor, want: torch.Tensor, atol: float = 0.0) -> None:
    """``got`` against a float64 (or integer) reference: exact (in ``got``'s dtype) unless a tolerance is given."""
    if atol:
        got, want = got.double(), want.double()
    else:
        got, want = got.double(), want.to(got.dtype).double()
    torch.testing.assert_close(got, want, rtol=1e-5 if atol else 0.0, atol=atol, equal_nan=True)


def _d(t: torch.Tensor) -> torch.Tensor:
    return t.double()


# ---------------------------------------------------------------- lookups and selections


def embed_flat_f16(m: object) -> None:
    t, v, d = 37, 50, 133
    ids, table, out = _ints(v, t), _randn(v, d, dtype=torch.float16), _full(t, d, dtype=torch.float16)
    m.embed_flat_f16(ids, table, out)  # type: ignore[attr-defined]
    _same(out, torch.nn.functional.embedding(ids.long(), _d(table)))


def index_select_rows(m: object) -> None:
    k, mm, n = 70, 23, 45
    idx, x, out = _ints(mm, k), _randn(mm, n), _full(k, n)
    m.index_select_rows(idx, x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).index_select(0, idx.long()))


def index_select_cols_f16(m: object) -> None:
    k, mm, n = 150, 13, 61
    idx, x, out = _ints(n, k), _randn(mm, n, dtype=torch.float16), _full(mm, k, dtype=torch.float16)
    m.index_select_cols_f16(idx, x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).index_select(1, idx.long()))


def permute_rows(m: object) -> None:
    mm, n = 19, 301
    perm = torch.randperm(mm).to(device=DEVICE, dtype=torch.int32)
    x, out = _randn(mm, n), _full(mm, n)
    m.permute_rows(perm, x, out)  # type: ignore[attr-defined]
    _same(out, _d(x)[perm.long()])


def batched_gather_cols_f16(m: object) -> None:
    b, mm, n, k = 3, 13, 40, 70
    idx, x = _ints(n, b, k), _randn(b, mm, n, dtype=torch.float16)
    out = _full(b, mm, k, dtype=torch.float16)
    m.batched_gather_cols_f16(idx, x, out)  # type: ignore[attr-defined]
    _same(out, torch.gather(_d(x), 2, idx.long()[:, None, :].expand(b, mm, k)))


def lerp_rows(m: object) -> None:
    b, s, t, d = 2, 17, 29, 150
    lo, w = _ints(s - 1, t), torch.rand(t, device=DEVICE)
    x, out = _randn(b, s, d), _full(b, t, d)
    m.lerp_rows(lo, w, x, out)  # type: ignore[attr-defined]
    a, c = _d(x)[:, lo.long()], _d(x)[:, lo.long() + 1]
    _same(out, a + _d(w)[None, :, None] * (c - a), atol=1e-5)


# ---------------------------------------------------------------- scatters with atomics


def index_add_scaled(m: object) -> None:
    t, d, v = 41, 300, 7
    idx, x = _ints(v, t), _randn(t, d)
    base = _randn(v, d)
    out = base.clone()
    m.index_add_scaled(0.75, idx, x, out)  # type: ignore[attr-defined]
    _same(out, _d(base).index_add(0, idx.long(), _d(x), alpha=0.75), atol=1e-5)


def scatter_add_last(m: object) -> None:
    mm, n, k = 9, 301, 37
    idx, x = _ints(k, mm, n), _randn(mm, n)
    out = torch.zeros(mm, k, device=DEVICE)
    m.scatter_add_last(idx, x, out)  # type: ignore[attr-defined]
    want = torch.zeros(mm, k, dtype=torch.float64, device=DEVICE).scatter_add_(1, idx.long(), _d(x))
    _same(out, want, atol=1e-5)


# ---------------------------------------------------------------- index maps


def flip_cols(m: object) -> None:
    x, out = _randn(37, 301), _full(37, 301)
    m.flip_cols(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).flip(1))


def flip_cols_smem_f16(m: object) -> None:
    x, out = _randn(21, 200, dtype=torch.float16), _full(21, 200, dtype=torch.float16)
    m.flip_cols_smem_f16(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).flip(1))


def flip_store_f16(m: object) -> None:
    x, out = _randn(13, 333, dtype=torch.float16), _full(13, 333, dtype=torch.float16)
    m.flip_store_f16(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).flip(1) * 2)


def roll_store(m: object) -> None:
    x, out = _randn(9, 301), _full(9, 301)
    m.roll_store(117, x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).roll(117, 1))


def strided_cols_f16(m: object) -> None:
    mm, n, step = 13, 301, 3
    h = (n + step - 1) // step
    x, out = _randn(mm, n, dtype=torch.float16), _full(mm, h, dtype=torch.float16)
    m.strided_cols_f16(step, x, out)  # type: ignore[attr-defined]
    _same(out, _d(x)[:, ::step])


def transpose_flat(m: object) -> None:
    x, out = _randn(45, 77), _full(77, 45)
    m.transpose_flat(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).T)


def im2col3x3(m: object) -> None:
    c, h, w = 3, 7, 13
    x, out = _randn(c, h, w), _full(c * 9, h * w)
    m.im2col3x3(x, out)  # type: ignore[attr-defined]
    want = torch.nn.functional.unfold(_d(x)[:, None], 3, padding=1)  # [C, 9, H * W]
    _same(out, want.reshape(c * 9, h * w))


def pad2d_f16(m: object) -> None:
    mm, n, top, left, bottom, right = 13, 101, 2, 5, 3, 30
    x = _randn(mm, n, dtype=torch.float16)
    out = _full(mm + top + bottom, n + left + right, dtype=torch.float16)
    m.pad2d_f16(top, left, x, out)  # type: ignore[attr-defined]
    _same(out, torch.nn.functional.pad(_d(x), (left, right, top, bottom)))


def concat_cols_loops(m: object) -> None:
    a, b = _randn(11, 150), _randn(11, 77)
    out = _full(11, 227)
    m.concat_cols_loops(a, b, out)  # type: ignore[attr-defined]
    _same(out, torch.cat([_d(a), _d(b)], 1))


# ---------------------------------------------------------------- masked and expanded


def masked_select_flat(m: object) -> None:
    n = 1301
    mask = torch.randint(0, 2, (n,), device=DEVICE, dtype=torch.uint8)
    pre = (mask.int().cumsum(0) - mask.int()).int()
    x, out = _randn(n), _full(int(mask.sum()) + 5)
    m.masked_select_flat(mask, pre, x, out)  # type: ignore[attr-defined]
    want = torch.full((out.shape[0],), NAN, dtype=torch.float64, device=DEVICE)
    want[: int(mask.sum())] = torch.masked_select(_d(x), mask != 0)
    _same(out, want)


def one_hot_flat_f16(m: object) -> None:
    t, v = 37, 133
    ids, out = _ints(v, t), _full(t, v, dtype=torch.float16)
    m.one_hot_flat_f16(ids, out)  # type: ignore[attr-defined]
    _same(out, torch.nn.functional.one_hot(ids.long(), v).double())


def repeat_rows(m: object) -> None:
    mm, d, rep = 7, 150, 3
    x, out = _randn(mm, d), _full(mm * rep, d)
    m.repeat_rows(rep, x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).repeat_interleave(rep, 0))


CHECKS: list[Callable[[object], None]] = [
    embed_flat_f16, index_select_rows, index_select_cols_f16, permute_rows, batched_gather_cols_f16,
    lerp_rows, index_add_scaled, scatter_add_last, flip_cols, flip_cols_smem_f16, flip_store_f16,
    roll_store,
    strided_cols_f16, transpose_flat, im2col3x3, pad2d_f16, concat_cols_loops, masked_select_flat,
    one_hot_flat_f16, repeat_rows,
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
    "embed_flat_f16": {"T": 16384, "V": 32768, "D": 1024},
    "index_select_rows": {"K": 4096, "M": 4096, "N": 4096},
    "index_select_cols_f16": {"K": 2048, "M": 4096, "N": 4096},
    "permute_rows": {"M": 4096, "N": 4096},
    "batched_gather_cols_f16": {"B": 8, "K": 1024, "M": 512, "N": 2048},
    "lerp_rows": {"B": 8, "T": 1024, "S": 1024, "D": 1024},
    "index_add_scaled": {"T": 16384, "D": 1024, "V": 1024},
    "scatter_add_last": {"M": 4096, "N": 4096, "K": 1024},
    "flip_cols": {"M": 4096, "N": 4096},
    "flip_cols_smem_f16": {"M": 4096, "N": 4096},
    "flip_store_f16": {"M": 4096, "N": 4096},
    "roll_store": {"M": 4096, "N": 4096, "shift": 256},
    "strided_cols_f16": {"M": 4096, "N": 4096, "H": 2048, "step": 2},
    "transpose_flat": {"M": 4096, "N": 4096},
    "im2col3x3": {"C": 64, "H": 64, "W": 64, "C9": 576, "HW": 4096},
    "pad2d_f16": {"M": 4096, "N": 4096, "P": 4112, "Q": 4160, "top": 8, "left": 32},
    "concat_cols_loops": {"M": 4096, "N1": 2048, "N2": 2048, "N3": 4096},
    "masked_select_flat": {"N": 16777216, "S": 16777216},
    "one_hot_flat_f16": {"T": 16384, "V": 4096},
    "repeat_rows": {"M": 4096, "D": 4096, "R": 16384, "rep": 4},
}


def _accesses(function: str) -> dict[str, dict[str, int]]:
    """``function``'s accesses compiled for sm_90a at its ``SIZES`` (once per test run)."""
    return access_counts.accesses(PROGRAM, function, SIZES[function])


_FLAT_T = (
    "a flat thread index whose store index is swapped (out.at(f % N, f / N)) stays a 1-D tile: the store runs "
    "down a column of out, an element a thread; it should be a [BM, BN] tile of x, stored through tl.trans"
)

# (function, "tensor.ld" / "tensor.st", scalar accesses allowed, why not yet): the accesses that run along a
# contiguous axis, which auto must compile to whole lines.  Left out: index reads (ids, idx, perm, lo, w,
# mask: a value a row or a program), true gathers (index_select_cols' and batched_gather_cols' x, im2col's
# shifted reads: x[.., w + kw - 1] is a line at an offset of one element, no 16-byte group aligned),
# x[:, ::step] at a run-time step, the compacted store of masked_select, atomics.
WHOLE: list[tuple[str, str, int, str]] = [
    ("embed_flat_f16", "table.ld", 0, ""),
    ("embed_flat_f16", "out_1d.st", 0, ""),
    ("index_select_rows", "x.ld", 0, ""),
    ("index_select_rows", "out.st", 0, ""),
    ("index_select_cols_f16", "out.st", 0, ""),
    ("permute_rows", "x.ld", 0, ""),
    ("permute_rows", "out.st", 0, ""),
    ("batched_gather_cols_f16", "idx.ld", 0, ""),
    ("batched_gather_cols_f16", "out.st", 0, ""),
    ("lerp_rows", "x.ld", 0, ""),
    ("lerp_rows", "out.st", 0, ""),
    (
        "index_add_scaled",
        "x.ld",
        0,
        "a block a row with atomics, a block-stride loop: 128 lanes of the row on 4 warps, an element a thread",
    ),
    ("scatter_add_last", "idx.ld", 0, ""),
    ("scatter_add_last", "x.ld", 0, ""),
    ("flip_cols", "x.ld", 0, ""),
    ("flip_cols", "out.st", 0, ""),
    ("flip_cols_smem_f16", "x.ld", 0, ""),
    ("flip_cols_smem_f16", "out.st", 0, ""),
    ("flip_store_f16", "x.ld", 0, ""),
    ("flip_store_f16", "out.st", 0, ""),
    ("roll_store", "x.ld", 0, ""),
    ("roll_store", "out.st", 0, ""),
    (
        "strided_cols_f16",
        "out.st",
        0,
        "the [4, 128] tile of a program keeps the strided load's layout (an f16 a thread): the contiguous store "
        "of out is compiled element by element",
    ),
    ("transpose_flat", "x.ld", 0, ""),
    ("transpose_flat", "out.st", 0, _FLAT_T),
    ("im2col3x3", "out.st", 0, ""),
    ("pad2d_f16", "x.ld", 0, ""),
    ("pad2d_f16", "out.st", 0, ""),
    ("concat_cols_loops", "a.ld", 0, ""),
    ("concat_cols_loops", "b.ld", 0, ""),
    ("concat_cols_loops", "out.st", 0, ""),
    ("masked_select_flat", "pre.ld", 0, ""),
    ("masked_select_flat", "x.ld", 0, ""),
    ("one_hot_flat_f16", "out_1d.st", 0, ""),
    ("repeat_rows", "x.ld", 0, ""),
    ("repeat_rows", "out.st", 0, ""),
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
