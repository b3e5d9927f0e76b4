"""Probe 4 of the language (issue 28): kernels a user might write that combine constructs
(tests/programs/probe4/*.co, grouped by LANGUAGE.md section), each run in both schedules in the
interpreter on ragged sizes with random inputs, outputs poisoned (NaN or a sentinel), compared with a
float64 reference written from the language's meaning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE

import croq2triton

PROGRAMS = Path(__file__).parent / "programs" / "probe4"
SCHEDULES = ["source", "auto"]
_MODULES: dict[tuple[str, str], object] = {}
CASES: dict[str, tuple[str, str, Callable]] = {}
XFAIL: dict[str, str] = {}  # case id -> the precise reason it is expected to fail


def _module(name: str, schedule: str) -> object:
    key = (name, schedule)
    if key not in _MODULES:
        _MODULES[key] = croq2triton.load(PROGRAMS / name, schedule=schedule)
    return _MODULES[key]


def case(file: str) -> Callable[[Callable], Callable]:
    def register(check: Callable) -> Callable:
        fn = check.__name__.removeprefix("check_")
        CASES[f"{file.removesuffix('.co')}-{fn}"] = (file, fn, check)
        return check

    return register


_GEN = torch.Generator().manual_seed(4)


def rnd(*shape: int, dtype: torch.dtype = torch.float32, lo: int = -50, hi: int = 50) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(*shape, generator=_GEN).to(dtype).to(DEVICE)
    return torch.randint(lo, hi, shape, generator=_GEN).to(dtype).to(DEVICE)


def out(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    value = float("nan") if dtype.is_floating_point else (-77 if dtype.is_signed else 77)
    return torch.full(shape, value, device=DEVICE, dtype=dtype)


def same(got: torch.Tensor, want: torch.Tensor, tol: float = 1e-5) -> None:
    got = got.cpu()
    want = want.cpu() if isinstance(want, torch.Tensor) else torch.tensor(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype.is_floating_point:
        assert not torch.isnan(got).any() or torch.isnan(want).any(), "an output element was never written"
        torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol)
    else:
        assert torch.equal(got.long(), want.long()), (got, want)


def d(t: torch.Tensor) -> torch.Tensor:
    return t.double().cpu()


def padded(x: torch.Tensor, rows: int, cols: int, r0: int = 0, c0: int = 0) -> torch.Tensor:
    """x[r0:r0+rows, c0:c0+cols] in float64 with zeros where it reaches past x."""
    o = torch.zeros(rows, cols, dtype=torch.float64)
    xs = d(x)[max(r0, 0) : r0 + rows, max(c0, 0) : c0 + cols]
    o[max(-r0, 0) : max(-r0, 0) + xs.shape[0], max(-c0, 0) : max(-c0, 0) + xs.shape[1]] = xs
    return o


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ============================================================================ views (7.6, 7.8)
V = "views.co"


@case(V)
def check_v_step_rows(f: Callable) -> None:
    x, y = rnd(10, 6), out(9, 6)
    f(x, y)
    want = torch.cat([padded(x, 3, 6, 4 * b) for b in range(3)])
    same(y, want)


@case(V)
def check_v_view_chunk(f: Callable) -> None:
    x, y = rnd(5, 9), out(6, 8)
    f(x, y)
    same(y, padded(x, 6, 8, 1, 2))


@case(V)
def check_v_span_as_transp(f: Callable) -> None:
    x, y = rnd(5, 6), out(3, 10)
    f(x, y)
    same(y, d(x).reshape(10, 3).T)


@case(V)
def check_v_modspan_tail(f: Callable) -> None:
    x, tail, mid = rnd(3, 13), out(3, 3), out(3, 4)
    f(x, tail, mid)
    same(tail, d(x)[:, 10:13] * 3)
    same(mid, d(x)[:, 4:8])


@case(V)
def check_v_pad_block(f: Callable) -> None:
    x, y = rnd(7, 4), out(15, 8)
    f(x, y)
    want = torch.cat([torch.nn.functional.pad(padded(x, 3, 4, 3 * b), (2, 2, 1, 1), value=-1.0) for b in range(3)])
    same(y, want)


@case(V)
def check_v_swiz_transpose(f: Callable) -> None:
    x, y = rnd(19, 21), out(21, 19)
    f(x, y)
    same(y, d(x).T)


@case(V)
def check_v_batch_sqz_transp(f: Callable) -> None:
    x, y = rnd(3, 8, 5), out(3, 5, 8)
    f(x, y)
    same(y, d(x).transpose(1, 2))


@case(V)
def check_v_named_window(f: Callable) -> None:
    x, y = rnd(11, 5), out(11, 5)
    f(x, y, 2)
    want = torch.zeros(11, 5, dtype=torch.float64)
    for p in range(3):
        w = padded(x, 4, 5, p * 4 + 2)
        for i in range(4):
            if p * 4 + i < 11:
                want[p * 4 + i] = w[i] - 1
    same(y, want)


@case(V)
def check_v_sqz_row(f: Callable) -> None:
    x, y = rnd(3, 37), out(3, 37)
    f(x, y)
    same(y, d(x) + d(x)[:, :1])


@case(V)
def check_v_ituple_chunk(f: Callable) -> None:
    x, y = rnd(8, 12), out(8, 12)
    f(x, y)
    same(y, d(x) * 2)


@case(V)
def check_v_last_tiles(f: Callable) -> None:
    x, last, prev = rnd(3, 20), out(3, 5), out(3, 5)
    f(x, last, prev)
    same(last, d(x)[:, 15:20])
    same(prev, d(x)[:, 10:15])


@case(V)
def check_v_future_view(f: Callable) -> None:
    x, y = rnd(9, 8), out(6, 4)
    f(x, y)
    want = torch.cat([padded(x, 2, 4, 4 * b + 2, 4) for b in range(3)])
    same(y, want)


@case(V)
def check_v_strided(f: Callable) -> None:
    x, even, third = rnd(11), out(5), out(4)
    f(x, even, third)
    same(even, d(x)[0:10:2])
    # LANGUAGE.md 7.6: the origin of .view(e : st).from(o) is o * st; the fourth element is past x
    same(third, torch.cat([d(x)[3:11:3], torch.zeros(1, dtype=torch.float64)]))


@case(V)
def check_v_shared_span_as(f: Callable) -> None:
    x, y = rnd(3, 24), out(3, 4, 6)
    f(x, y)
    same(y, d(x).reshape(3, 4, 6) + 0.5)


@case(V)
def check_v_zfill_rows(f: Callable) -> None:
    x, y = rnd(10, 8), out(12, 8)
    f(x, y)
    same(y, padded(x, 12, 8) + 1)


@case(V)
def check_v_tma_roundtrip(f: Callable) -> None:
    x, y = rnd(21, 64, dtype=torch.float16), out(21, 64, dtype=torch.float16)
    f(x, y)
    same(y, d(x) * 2, 1e-3)


@case(V)
def check_v_tma_async_reverse(f: Callable) -> None:
    x, y = rnd(13, 32), out(13, 32)
    f(x, y)
    same(y, d(x).flip(1))


@case(V)
def check_v_shared_transp(f: Callable) -> None:
    x, y = rnd(7, 6), out(12, 4)
    f(x, y)
    same(y, torch.cat([padded(x, 4, 6, 4 * b).T for b in range(2)]))


@case(V)
def check_v_thread_part(f: Callable) -> None:
    x, y = rnd(5, 16), out(5, 4)
    f(x, y)
    same(y, d(x).reshape(5, 4, 4).sum(2))


@case(V)
def check_v_chunk_then_sub(f: Callable) -> None:
    x, y = rnd(6, 12), out(24, 2)
    f(x, y)
    want = torch.zeros(24, 2, dtype=torch.float64)
    for b in range(2):
        for q in range(3):
            want[(b * 3 + q) * 4 : (b * 3 + q) * 4 + 4] = padded(x, 4, 2, 4 * b, 4 * q + 2)
    same(y, want)


@case(V)
def check_v_permute3(f: Callable) -> None:
    x, y = rnd(5, 3, 4), out(4, 5, 3)
    f(x, y)
    same(y, d(x).permute(2, 0, 1))


@case(V)
def check_v_window_of_window(f: Callable) -> None:
    x, y = rnd(7, 10), out(7, 10)
    f(x, y)
    same(y, d(x))


@case(V)
def check_v_named_chunk_reads(f: Callable) -> None:
    x, y = rnd(13, 7), out(13)
    f(x, y)
    same(y, d(x).max(1).values)


# ============================================================================ MMA (7.9)
MM = "mma.co"
H = torch.float16


@case(MM)
def check_m_row_row(f: Callable) -> None:
    a, b, c = rnd(19, 37, dtype=H), rnd(21, 37, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(MM)
def check_m_row_col_chunks(f: Callable) -> None:
    a, b, c = rnd(19, 45, dtype=H), rnd(45, 21, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b), 1e-3)


@case(MM)
def check_m_col_row(f: Callable) -> None:
    a, b, c = rnd(13, 19, dtype=torch.float32), rnd(21, 13), out(19, 21)
    f(a, b, c)
    same(c, d(a).T @ d(b).T, 1e-3)


@case(MM)
def check_m_col_col_transp(f: Callable) -> None:
    a, b, c = rnd(23, 19, dtype=H), rnd(23, 17, dtype=H), out(17, 19)
    f(a, b, c)
    same(c, (d(a).T @ d(b)).T, 1e-3)


@case(MM)
def check_m_bias_relu(f: Callable) -> None:
    a, b, bias, c = rnd(19, 21, dtype=H), rnd(35, 21, dtype=H), rnd(35), out(19, 35, dtype=H)
    f(a, b, bias, c)
    same(c, (d(a) @ d(b).T + d(bias)).clamp(min=0), 1e-2)


@case(MM)
def check_m_transp_b(f: Callable) -> None:
    a, b, c = rnd(19, 37, dtype=H), rnd(21, 37, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(MM)
def check_m_span_as_a(f: Callable) -> None:
    a, b, c = rnd(512, dtype=H), rnd(21, 32, dtype=H), out(16, 21)
    f(a, b, c)
    same(c, d(a).reshape(16, 32) @ d(b).T, 1e-3)


@case(MM)
def check_m_two_groups(f: Callable) -> None:
    a, b, c = rnd(150, 40, dtype=H), rnd(35, 40, dtype=H), out(150, 35)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(MM)
def check_m_loads(f: Callable) -> None:
    a, b, c = rnd(19, 37, dtype=H), rnd(21, 37, dtype=H), out(19, 21)
    f(a, b, c, 0.75)
    same(c, 0.75 * d(a) @ d(b).T, 1e-3)


@case(MM)
def check_m_causal(f: Callable) -> None:
    q, k, s = rnd(19, 21, dtype=H), rnd(19, 21, dtype=H), out(19, 19)
    f(q, k, s)
    want = d(q) @ d(k).T
    want[torch.ones(19, 19, dtype=torch.bool).triu(1)] = -1.0
    same(s, want, 1e-3)


@case(MM)
def check_m_row_stats(f: Callable) -> None:
    a, b, mx, sm = rnd(21, 16, dtype=H), rnd(16, 16, dtype=H), out(21), out(21)
    f(a, b, mx, sm)
    p = d(a) @ d(b).T
    same(mx, p.max(1).values, 1e-3)
    same(sm, p.sum(1), 1e-3)


@case(MM)
def check_m_store_mask(f: Callable) -> None:
    a, b, c = rnd(19, 37, dtype=H), rnd(21, 37, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(MM)
def check_m_async(f: Callable) -> None:
    a, b, c = rnd(70, 37, dtype=H), rnd(21, 37, dtype=H), out(70, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T + 0.5, 1e-3)


@case(MM)
def check_m_batched(f: Callable) -> None:
    a, b, c = rnd(2, 19, 21, dtype=H), rnd(2, 17, 21, dtype=H), out(2, 19, 17)
    f(a, b, c)
    same(c, d(a) @ d(b).transpose(1, 2), 1e-3)


@case(MM)
def check_m_f16_acc(f: Callable) -> None:
    a, b, c = rnd(19, 32, dtype=H), rnd(21, 32, dtype=H), out(19, 21, dtype=H)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 2e-2)


@case(MM)
def check_m_persistent(f: Callable) -> None:
    a, b, c = rnd(35, 21, dtype=H), rnd(37, 21, dtype=H), out(35, 37)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(MM)
def check_m_warps_2x2(f: Callable) -> None:
    a, b, c = rnd(35, 21, dtype=H), rnd(37, 21, dtype=H), out(35, 37)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


# ============================================================================ the test
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("cid", list(CASES))
def test_probe4(cid: str, schedule: str) -> None:
    if cid in XFAIL:
        pytest.xfail(XFAIL[cid])
    file, fn, check = CASES[cid]
    check(getattr(_module(file, schedule), fn))
