"""Irregular-access kernels in still other forms (tests/programs/irregular_forms2.co): paged KV-cache
gathers through a block table (per thread, by ``dma.copy`` and by ``tma.copy`` of whole pages),
rotary embeddings at each token's position (halves and interleaved pairs), varlen packing and
unpacking by ``cu_seqlens``, concatenation and split along the last axis, a 3-D permute staged
through shared memory, pixel shuffle, nearest upsampling, im2col of a signal, overlapping stepped
windows, depthwise 1-D convolutions (guarded per thread, and through a ``.zfill`` halo window),
column gathers, stream compaction by precomputed positions, top-1 with its index, one-hot, a masked
fill, ragged tiles by TMA and by DMA, stepped tiles, tiles of a ``span_as`` reshape, ``chunkat``
tiles.  Each runs on ragged sizes with random inputs (random indices with repeats where the kernel
allows) and NaN-poisoned outputs in both schedules, compared with float64 torch; the kernels whose
data is contiguous along an axis are compiled for sm_90a under auto and their global accesses
counted in the PTX (perf/compile_all.py ``accesses``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import access_counts
import pytest
import torch
from kernel_util import DEVICE, load_once

PROGRAM = Path(__file__).parent / "programs" / "irregular_forms2.co"
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


# ---------------------------------------------------------------- paged KV cache


def _paged(m: object, name: str, dtype: torch.dtype) -> None:
    s, npages, length, pages = 3, 5, 50, 7  # 50 rows: three full pages of 16 and a ragged one
    bt = _ints(pages, s, npages)  # pages repeat across and within sequences
    cache = _randn(pages * 16, 64, dtype=dtype)
    out = _full(s, length, 64, dtype=dtype)
    getattr(m, name)(bt, cache, out)
    p = torch.arange(length, device=DEVICE)
    rows = bt.long()[:, p // 16] * 16 + p % 16
    _same(out, cache[rows])


def paged_threads(m: object) -> None:
    _paged(m, "paged_threads", torch.float16)


def paged_dma(m: object) -> None:
    _paged(m, "paged_dma", torch.float32)


def paged_tma(m: object) -> None:
    _paged(m, "paged_tma", torch.float16)


# ---------------------------------------------------------------- rotary embeddings


def _tables(positions: int) -> tuple[torch.Tensor, torch.Tensor]:
    angle = torch.rand(positions, 32, device=DEVICE, dtype=torch.float64) * 6.3
    return angle.cos().float(), angle.sin().float()


def rope_halves(m: object) -> None:
    t, positions = 37, 50
    pos, (cs, sn), x, out = _ints(positions, t), _tables(positions), _randn(t, 64), _full(t, 64)
    m.rope_halves(pos, cs, sn, x, out)  # type: ignore[attr-defined]
    c, s = _d(cs)[pos.long()], _d(sn)[pos.long()]
    a, b = _d(x)[:, :32], _d(x)[:, 32:]
    _same(out, torch.cat([a * c - b * s, b * c + a * s], 1), atol=1e-5)


def rope_pairs(m: object) -> None:
    t, h, positions = 19, 3, 40
    pos, (cs, sn), x, out = _ints(positions, t), _tables(positions), _randn(t, h, 64), _full(t, h, 64)
    m.rope_pairs(pos, cs, sn, x, out)  # type: ignore[attr-defined]
    c, s = _d(cs)[pos.long()][:, None], _d(sn)[pos.long()][:, None]
    a, b = _d(x)[..., 0::2], _d(x)[..., 1::2]
    _same(out, torch.stack([a * c - b * s, a * s + b * c], -1).reshape(t, h, 64), atol=1e-5)


# ---------------------------------------------------------------- varlen pack / unpack


def _cu(b: int, longest: int) -> tuple[list[int], torch.Tensor]:
    lens = torch.randint(1, longest + 1, (b,)).tolist()
    cu = [0]
    for n in lens:
        cu.append(cu[-1] + n)
    return lens, torch.tensor(cu, device=DEVICE, dtype=torch.int32)


def varlen_pack(m: object) -> None:
    b, length, d = 4, 20, 100
    lens, cu = _cu(b, length)
    padded, packed = _randn(b, length, d), _full(int(cu[-1]), d)
    m.varlen_pack(cu, padded, packed)  # type: ignore[attr-defined]
    _same(packed, torch.cat([_d(padded)[i, :n] for i, n in enumerate(lens)]))


def varlen_unpack(m: object) -> None:
    b, length, d = 4, 21, 100
    lens, cu = _cu(b, length)
    packed, padded = _randn(int(cu[-1]), d), _full(b, length, d)
    m.varlen_unpack(cu, packed, padded)  # type: ignore[attr-defined]
    want = torch.zeros(b, length, d, dtype=torch.float64, device=DEVICE)
    for i, n in enumerate(lens):
        want[i, :n] = _d(packed)[int(cu[i]) : int(cu[i]) + n]
    _same(padded, want)


# ---------------------------------------------------------------- concatenation and split


def concat_last(m: object) -> None:
    a, b, out = _randn(37, 50), _randn(37, 77), _full(37, 127)
    m.concat_last(a, b, out)  # type: ignore[attr-defined]
    _same(out, torch.cat([_d(a), _d(b)], 1))


def split_last(m: object) -> None:
    x, a, b = _randn(37, 127), _full(37, 50), _full(37, 77)
    m.split_last(x, a, b)  # type: ignore[attr-defined]
    _same(a, _d(x)[:, :50])
    _same(b, _d(x)[:, 50:] * 2)


# ---------------------------------------------------------------- index maps


def permute_021(m: object) -> None:
    x, out = _randn(3, 50, 70), _full(3, 70, 50)
    m.permute_021(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).permute(0, 2, 1))


def pixel_shuffle(m: object) -> None:
    x, out = _randn(12, 7, 9), _full(3, 14, 18)
    m.pixel_shuffle(x, out)  # type: ignore[attr-defined]
    _same(out, torch.nn.functional.pixel_shuffle(_d(x)[None], 2)[0])


def upsample2(m: object) -> None:
    x, out = _randn(13, 70), _full(26, 140)
    m.upsample2(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).repeat_interleave(2, 0).repeat_interleave(2, 1))


def im2col(m: object) -> None:
    n, length = 205, 100
    x, out = _randn(n), _full(length, 8)
    m.im2col(x, out)  # type: ignore[attr-defined]
    xp = torch.nn.functional.pad(_d(x), (3, 8))  # x[2l + k - 3], zero outside
    _same(out, torch.stack([xp[2 * i : 2 * i + 8] for i in range(length)]))


def windows_step(m: object) -> None:
    n, p = 300, 19  # windows of 32 every 16: the last reaches past the signal (zero)
    x, out = _randn(n), _full(p, 32)
    m.windows_step(x, out)  # type: ignore[attr-defined]
    xp = torch.nn.functional.pad(_d(x), (0, 16 * p + 16 - n))
    _same(out, xp.unfold(0, 32, 16)[:p] * 0.5)


# ---------------------------------------------------------------- depthwise convolutions


def _dwconv(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x [C, N], w [C, 5]: out[c, n] = sum_k w[c, k] * x[c, n + k - 2], zero outside."""
    xp = torch.nn.functional.pad(x, (2, 2))
    return sum(w[:, k : k + 1] * xp[:, k : k + x.shape[1]] for k in range(5))  # type: ignore[return-value]


def dwconv_last(m: object) -> None:
    x, w, out = _randn(50, 200), _randn(5, 200), _full(50, 200)
    m.dwconv_last(x, w, out)  # type: ignore[attr-defined]
    _same(out, _dwconv(_d(x).T, _d(w).T).T, atol=1e-5)


def dwconv_halo(m: object) -> None:
    x, w, out = _randn(5, 300), _randn(5, 5), _full(5, 300)
    m.dwconv_halo(x, w, out)  # type: ignore[attr-defined]
    _same(out, _dwconv(_d(x), _d(w)), atol=1e-5)


# ---------------------------------------------------------------- gathers and scatters


def gather_cols(m: object) -> None:
    idx, x, out = _ints(50, 70), _randn(37, 50), _full(37, 70)
    m.gather_cols(idx, x, out)  # type: ignore[attr-defined]
    _same(out, _d(x)[:, idx.long()])


def compact(m: object) -> None:
    keep = _ints(2, 100)
    pos = (keep.cumsum(0) - 1).clamp(min=0).int()  # where each kept row goes; others point anywhere
    pos[keep == 0] = _ints(100, int((keep == 0).sum()))
    x, out = _randn(100, 150), _full(100, 150)
    m.compact(keep, pos, x, out)  # type: ignore[attr-defined]
    want = torch.full((100, 150), NAN, dtype=torch.float64, device=DEVICE)
    kept = _d(x)[keep != 0]
    want[: kept.shape[0]] = kept
    _same(out, want)


# ---------------------------------------------------------------- per-row picks and fills


def top1(m: object) -> None:
    x, best, arg = _randn(100, 37), _full(100), torch.full((100,), -7, dtype=torch.int32, device=DEVICE)
    m.top1(x, best, arg)  # type: ignore[attr-defined]
    _same(best, _d(x).max(1).values)
    _same(arg, _d(x).argmax(1).int())


def one_hot(m: object) -> None:
    idx, out = _ints(300, 37), _full(37, 300)
    m.one_hot(idx, out)  # type: ignore[attr-defined]
    _same(out, torch.nn.functional.one_hot(idx.long(), 300).double())


def masked_fill(m: object) -> None:
    x, out = _randn(37, 300), _full(37, 300)
    mask = torch.randint(0, 2, (37, 300), device=DEVICE, dtype=torch.uint8)
    m.masked_fill(x, mask, out)  # type: ignore[attr-defined]
    _same(out, _d(x).masked_fill(mask != 0, -1000.0))


# ---------------------------------------------------------------- ragged, stepped and reshaped tiles


def tma_ragged(m: object) -> None:
    x, out = _randn(50, 136, dtype=torch.float16), _full(50, 136, dtype=torch.float16)
    m.tma_ragged(x, out)  # type: ignore[attr-defined]
    _same(out, (x.float() + 1).half())


def dma_ragged(m: object) -> None:
    x, out = _randn(50, 100, dtype=torch.float16), _full(50, 100, dtype=torch.float16)
    m.dma_ragged(x, out)  # type: ignore[attr-defined]
    _same(out, (x.float() + 1).half())


def odd_tiles(m: object) -> None:
    x, out = _randn(50, 100), _full(50, 100)
    m.odd_tiles(x, out)  # type: ignore[attr-defined]
    want = torch.full((50, 100), NAN, dtype=torch.float64, device=DEVICE)
    for bm in range(4):  # tile 2 * bm + 1 of 8 rows every 16: rows 16-23 and 48-49; the rest stays unwritten
        r0 = (2 * bm + 1) * 16
        want[r0 : r0 + 8] = _d(x)[r0 : r0 + 8]
    _same(out, want)


def flat_tiles(m: object) -> None:
    x, out = _randn(21 * 64), _full(21 * 64)
    m.flat_tiles(x, out)  # type: ignore[attr-defined]
    _same(out, _d(x).reshape(21, 64).flip(1).reshape(-1))


def chunk_rows(m: object) -> None:
    x, out = _randn(102, 71), torch.zeros(102, device=DEVICE)  # chunks of 25 x 35: rows 100, 101, column 70 left
    m.chunk_rows(x, out)  # type: ignore[attr-defined]
    want = torch.zeros(102, dtype=torch.float64, device=DEVICE)
    want[:100] = _d(x)[:100, :70].sum(1)
    _same(out, want, atol=1e-4)


CHECKS: list[Callable[[object], None]] = [
    paged_threads, paged_dma, paged_tma, rope_halves, rope_pairs, varlen_pack, varlen_unpack, concat_last,
    split_last, permute_021, pixel_shuffle, upsample2, im2col, windows_step, dwconv_last, dwconv_halo,
    gather_cols, compact, top1, one_hot, masked_fill, tma_ragged, dma_ragged, odd_tiles, flat_tiles, chunk_rows,
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
    """auto's widened kernels, which its launchers run where the grid keeps a program per SM (4 in the
    interpreter: the ragged sizes above leave some kernels narrow): one SM, so every one runs."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "1")
    torch.manual_seed(0)
    check(_module("auto"))


def test_widened_where_a_mask_bounds_the_block() -> None:
    """schedule/widen.py: a program past the grid reads nothing where its accesses' masks bound the
    block's coordinate (``(pb # i) < L``), whichever index they read (a page table's row, a packed
    row ``cu.at(b) + bl # i``, a signal at ``2 * (bl # l) + k - 3``); these kernels stayed one block a
    program before, 2026-12-08."""
    from croq2triton.api import translate_full

    auto = translate_full(PROGRAM.read_text(), filename=PROGRAM.name, schedule="auto").source
    for name in ("paged_threads", "varlen_unpack", "im2col"):
        kernel = auto.split(f"def {name}_k0(")[1].split('"""')[1]
        assert "(widened)" in kernel, (name, kernel)


def test_every_function_of_the_program_is_checked() -> None:
    text = PROGRAM.read_text()
    names = {line.split("(")[0].split()[-1] for line in text.splitlines() if line.startswith("__co__")}
    assert names == {f.__name__ for f in CHECKS}


# ---------------------------------------------------------------- whole lines under auto (sm_90a)

# sizes at which the launchers pick their widened kernels (a program per SM or more), multiples of 16
# as realistic sizes are (Triton specialises arguments divisible by 16)
SIZES: dict[str, dict[str, int]] = {
    "paged_threads": {"S": 64, "NP": 64, "L": 1024, "C": 4096},
    "paged_dma": {"S": 64, "NP": 64, "L": 1024, "C": 4096},
    "paged_tma": {"S": 64, "NP": 64, "L": 1024, "C": 4096},
    "rope_halves": {"T": 16384, "P": 4096},
    "rope_pairs": {"T": 4096, "H": 8, "P": 4096},
    "varlen_pack": {"B": 16, "B1": 17, "L": 512, "D": 1024, "T": 8192},
    "varlen_unpack": {"B": 16, "B1": 17, "L": 512, "D": 1024, "T": 8192},
    "concat_last": {"M": 4096, "N1": 1024, "N2": 1024, "N3": 2048},
    "split_last": {"M": 4096, "N1": 1024, "N2": 1024, "N3": 2048},
    "permute_021": {"B": 8, "M": 512, "N": 512},
    "pixel_shuffle": {"C": 64, "C4": 256, "H": 64, "W": 64, "H2": 128, "W2": 128},
    "upsample2": {"H": 512, "W": 512, "H2": 1024, "W2": 1024},
    "im2col": {"N": 65536, "L": 32768},
    "windows_step": {"N": 262144, "P": 16383},
    "dwconv_last": {"N": 4096, "C": 1024},
    "dwconv_halo": {"C": 256, "N": 4096},
    "gather_cols": {"K": 1024, "M": 4096, "N": 1024},
    "compact": {"R": 8192, "D": 1024},
    "top1": {"R": 16384, "D": 1024},
    "one_hot": {"T": 4096, "V": 4096},
    "masked_fill": {"M": 4096, "N": 4096},
    "tma_ragged": {"M": 4096, "N": 4096},
    "dma_ragged": {"M": 4096, "N": 4096},
    "odd_tiles": {"M": 4096, "N": 4096},
    "flat_tiles": {"R": 1048576},
    "chunk_rows": {"M": 256, "N": 1024},
}


def _accesses(function: str) -> dict[str, dict[str, int]]:
    """``function``'s accesses compiled for sm_90a at its ``SIZES`` (once per test run)."""
    return access_counts.accesses(PROGRAM, function, SIZES[function])


# (function, "tensor.ld" / "tensor.st", scalar accesses allowed, why not yet): the accesses that run along
# a contiguous axis, which auto must compile to whole lines (vector accesses, pipelined copies or TMA),
# not an element a thread.  Left out: index reads (a value a row: bt, pos, cu, keep, idx), true gathers
# (gather_cols' x), reads whose start is misaligned by construction (im2col's x at 2 l + k - 3), one
# value a row (top1's outputs).
WHOLE: list[tuple[str, str, int, str]] = [
    ("paged_threads", "cache.ld", 0, ""),
    ("paged_threads", "out.st", 0, ""),
    ("paged_dma", "cache.ld", 0, ""),
    ("paged_dma", "out.st", 0, ""),
    ("paged_tma", "cache.ld", 0, ""),
    ("paged_tma", "out.st", 0, ""),
    ("rope_halves", "x.ld", 0, ""),
    ("rope_halves", "cs.ld", 0, ""),
    ("rope_halves", "out.st", 0, ""),
    ("rope_pairs", "x.ld", 0, ""),  # (schedule/interleave.py: one load of the row, tl.split)
    ("rope_pairs", "cs.ld", 0, ""),
    ("rope_pairs", "out.st", 0, ""),
    ("varlen_pack", "padded.ld", 0, ""),
    ("varlen_pack", "packed.st", 0, ""),
    ("varlen_unpack", "packed.ld", 0, ""),
    ("varlen_unpack", "padded.st", 0, ""),
    ("concat_last", "a.ld", 0, ""),
    ("concat_last", "b.ld", 0, ""),
    ("concat_last", "out.st", 0, ""),
    ("split_last", "x.ld", 0, ""),
    ("split_last", "b.st", 0, ""),
    ("permute_021", "x.ld", 0, ""),
    ("permute_021", "out.st", 0, ""),
    ("pixel_shuffle", "x.ld", 0, ""),  # (schedule/interleave.py: both planes' half rows, tl.join)
    ("pixel_shuffle", "out.st", 0, ""),
    ("upsample2", "x.ld", 0, ""),  # (schedule/interleave.py: the half row read once, tl.join(v, v))
    ("upsample2", "out.st", 0, ""),
    (
        "im2col",
        "out.st",
        0,
        "rows of 8 elements: the row stride of out [L, 8] is 8, a run-time argument that Triton specialises only when divisible by 16, so no row is proved 16-byte aligned; the launcher passes strides, never the extents of a contiguous tensor. Not yet: a variant under out.stride(0) == 8 * out.stride(1) reading out as one axis of 8 L at 8 l + k (tried: the indices merge, but tir/verify.py then wants the mask term l < L as 8 l + k < 8 L, a rewrite of the shared mask lets as schedule/planes.py does for its nests)",
    ),
    ("windows_step", "x.ld", 0, ""),  # (schedule/widen.py: windows a program as rows; lone lanes of one extent agree)
    ("windows_step", "out.st", 0, ""),
    ("dwconv_last", "x.ld", 0, ""),
    ("dwconv_last", "out.st", 0, ""),
    # (schedule/unroll.py: the five taps unrolled, each window at a constant offset -2 .. 2 from the aligned
    # one: offset 0 whole lines, +-2 pairs, +-1 an element a thread, misaligned by construction as im2col's x.
    # Before, the taps were a loop pipelined through shared memory whose copies were 4 and 8 bytes each,
    # cp4B / cp8B, which this count did not call scalar)
    ("dwconv_halo", "x.ld", 16, ""),
    ("dwconv_halo", "out.st", 0, ""),  # (schedule/forward.py: the taps read x again, no scratch; widened)
    ("gather_cols", "out.st", 0, ""),
    ("compact", "x.ld", 0, ""),
    ("compact", "out.st", 0, ""),
    ("top1", "x.ld", 1, ""),  # (the row's first element alone: the initial maximum)
    ("one_hot", "out.st", 0, ""),
    ("masked_fill", "x.ld", 0, ""),
    ("masked_fill", "mask.ld", 0, ""),
    ("masked_fill", "out.st", 0, ""),
    ("tma_ragged", "x.ld", 0, ""),
    ("tma_ragged", "out.st", 0, ""),
    ("dma_ragged", "x.ld", 0, ""),
    ("dma_ragged", "out.st", 0, ""),
    ("odd_tiles", "x.ld", 0, ""),
    ("odd_tiles", "out.st", 0, ""),
    ("flat_tiles", "x.ld", 0, ""),
    ("flat_tiles", "out.st", 0, ""),
    ("chunk_rows", "x.ld", 0, ""),
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


def test_a_selects_branch_is_read_whole_under_auto() -> None:
    """masked_fill under auto: the read of ``x`` in the select's branch is masked by the other
    tensor's elements (C evaluates one branch); schedule/vecmasks.py reads the tile whole inside the
    tensor and selects the lanes after, which Triton compiles to vector loads (16 scalar loads a
    thread before, 2026-12-08; test_auto_accesses_whole_lines checks the PTX)."""
    from croq2triton.api import translate_full

    auto = translate_full(PROGRAM.read_text(), filename=PROGRAM.name, schedule="auto").source
    kernel = auto.split("def masked_fill_k0(")[1].split("@triton.jit")[0]
    assert "x_val_vec = tl.load(x_ptr + offs * x_stride_0 + offs_2 * x_stride_1)\n" in kernel, kernel
    assert "x_val = _oob_fill(tl.where(mask_3, x_val_vec, 0.0), mask_3)" in kernel, kernel
