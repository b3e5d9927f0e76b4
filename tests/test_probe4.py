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
from probe_util import SCHEDULES, Probe, d, out, padded, same

PROBE = Probe(Path(__file__).parent / "programs" / "probe4", seed=4)
CASES, XFAIL, case, rnd, _GEN = PROBE.cases, PROBE.xfail, PROBE.case, PROBE.rnd, PROBE.gen


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


# ============================================================================ pipelines (7.8, 7.10)
P = "pipes.co"


@case(P)
def check_p_ring2_gemm(f: Callable) -> None:
    a, b, c = rnd(70, 53, dtype=H), rnd(37, 53, dtype=H), out(70, 37)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(P)
def check_p_ring3_rowsum(f: Callable) -> None:
    x, y = rnd(11, 53), out(11)
    f(x, y)
    same(y, d(x).sum(1), 1e-4)


@case(P)
def check_p_ring4_counter(f: Callable) -> None:
    a, b, c = rnd(70, 83, dtype=H), rnd(21, 83, dtype=H), out(70, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(P)
def check_p_prefetch_swap(f: Callable) -> None:
    x, y = rnd(10, 29), out(10)
    f(x, y)
    same(y, d(x).sum(1), 1e-4)


@case(P)
def check_p_rotate3(f: Callable) -> None:
    x, y = rnd(6, 13), out(6, 13)
    f(x, y)
    want = d(x)[:-2] + d(x)[1:-1] + d(x)[2:]
    same(y[1:-1], want)


@case(P)
def check_p_rotate3_runtime(f: Callable) -> None:
    check_p_rotate3(f)


@case(P)
def check_p_diff_swap_runtime(f: Callable) -> None:
    for n in (1, 13, 37):
        x, y = rnd(7, n), out(7, n)
        f(x, y)
        same(y[1:], d(x)[1:] - d(x)[:-1])
        assert torch.isnan(y[0]).all(), "row 0 was written"


@case(P)
def check_p_swap_any_runtime(f: Callable) -> None:
    x, y = rnd(5, 21), out(5, 21)
    f(x, y)
    same(y, d(x) * 2)


@case(P)
def check_p_select_elems_runtime(f: Callable) -> None:
    for which in (0, 1):
        x, y = rnd(2, 19), out(19)
        f(x, y, which)
        same(y, d(x)[which].flip(0) + 1)


@case(P)
def check_p_select(f: Callable) -> None:
    for which in (0, 1):
        x, z, y = rnd(10, 8), rnd(10, 8), out(10, 8)
        f(x, z, y, which)
        same(y, d(z if which else x))


@case(P)
def check_p_after_chain(f: Callable) -> None:
    x, y = rnd(10, 8), out(10, 8)
    f(x, y)
    same(y, d(x))


@case(P)
def check_p_inthreads_warps(f: Callable) -> None:
    x, y = rnd(3, 32), out(3, 32)
    f(x, y)
    want = d(x).clone()
    want[:, :16] *= 2
    want[:, 16:] += 1
    same(y, want)


@case(P)
def check_p_two_consumers(f: Callable) -> None:
    x, y = rnd(10, 29), out(10, 2)
    f(x, y)
    xp = torch.nn.functional.pad(d(x), (0, 3))
    same(y, torch.stack([xp[:, 0::2].sum(1), xp[:, 1::2].sum(1)], 1), 1e-4)


@case(P)
def check_p_handshake(f: Callable) -> None:
    x, y = rnd(13, 16), out(13, 16)
    f(x, y)
    same(y, d(x) * 0.5)


@case(P)
def check_p_event_after(f: Callable) -> None:
    x, y = rnd(13, 16), out(13, 16)
    f(x, y)
    same(y, d(x) - 2)


@case(P)
def check_p_two_futures(f: Callable) -> None:
    a, b, c = rnd(19, 53, dtype=H), rnd(21, 53, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(P)
def check_p_named_slot(f: Callable) -> None:
    x, y = rnd(10, 29), out(10)
    f(x, y)
    w = torch.arange(32, dtype=torch.float64) % 8 + 1
    same(y, (torch.nn.functional.pad(d(x), (0, 3)) * w).sum(1), 1e-4)


# ============================================================================ host code (7.3, 8)
HO = "host.co"


@case(HO)
def check_h_loop_windows(f: Callable) -> None:
    x, y = rnd(10, 8), out(10, 8)
    f(x, y)
    same(y, d(x) * (torch.arange(10) // 4 + 1).double()[:, None])


@case(HO)
def check_h_branch(f: Callable) -> None:
    for mode in (1, 0):
        x, y = rnd(13), out(13)
        f(x, y, mode)
        same(y, d(x) + (1 if mode else -1))


@case(HO)
def check_h_ternary_tile(f: Callable) -> None:
    for n, t in ((13, 4), (23, 8)):
        x, y = rnd(n), out(n)
        f(x, y)
        same(y, d(x) * t)


@case(HO)
def check_h_swap_smooth(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y, 3)
    a = d(x)
    for _ in range(3):
        left = torch.cat([a[:1], a[:-1]])
        right = torch.cat([a[1:], a[-1:]])
        a = (left + a + right) / 3
    same(y, a)


@case(HO)
def check_h_rotate_recurrence(f: Callable) -> None:
    x0, x1, y = rnd(13), rnd(13), out(13)
    f(x0, x1, y, 4)
    a, b = d(x0), d(x1)
    for _ in range(4):
        a, b = b, a + 0.5 * b
    same(y, b)


@case(HO)
def check_h_while_stride(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y)
    want = d(x).clone()
    want[0] = d(x).sum()
    stride = 1
    ref = d(x).clone()
    while stride < 13:
        for i in range(0, 13, 2 * stride):
            if i + stride < 13:
                ref[i] += ref[i + stride]
        stride *= 2
    same(y, ref, 1e-4)
    same(y[0], want[0], 1e-4)


@case(HO)
def check_h_host_scale(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y, 2.25)
    same(y, d(x) * (1.5 + 13 % 3))


@case(HO)
def check_h_returns(f: Callable) -> None:
    x = rnd(7)
    r = f(x)
    same(r, d(x)[:, None] * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))


@case(HO)
def check_h_accumulate(f: Callable) -> None:
    x, y = rnd(3, 13), out(13)
    f(x, y)
    same(y, d(x).sum(0) + 1, 1e-5)


@case(HO)
def check_h_host_copies(f: Callable) -> None:
    x, top, strip = rnd(7, 5), out(4, 5), out(7, 2)
    f(x, top, strip)
    same(top, d(x)[:4])
    same(strip, d(x)[:, 1:3] * 10)


@case(HO)
def check_h_guarded_launches(f: Callable) -> None:
    for reps, mult in ((0, 1), (2, 4), (5, 8)):
        x, y = rnd(19), out(19)
        f(x, y, reps)
        same(y, d(x) * mult)


@case(HO)
def check_h_size_arith(f: Callable) -> None:
    y = out(13, dtype=torch.int32)
    f(y)
    same(y[:6], torch.tensor([16, 8, 2, 5, -2, -1]))


# ============================================================================ arithmetic (4, 5, 7.7)
AR = "arith.co"
I32, I64 = torch.int32, torch.int64


def wrap32(v: torch.Tensor) -> torch.Tensor:
    return ((v.long() + 2**31) % 2**32) - 2**31


def f32(t: torch.Tensor) -> torch.Tensor:
    return t.float().cpu()


@case(AR)
def check_a_div_mod(f: Callable) -> None:
    x, q, r = rnd(13, dtype=I32), out(13, dtype=I32), out(13, dtype=I32)
    f(x, q, r)
    same(q, torch.div(x.long(), 7, rounding_mode="trunc"))
    same(r, torch.fmod(x.long(), 7))


@case(AR)
def check_a_shifts(f: Callable) -> None:
    x = rnd(13, dtype=I32, lo=-100000, hi=100000)
    a, lsr, s = out(13, dtype=I32), out(13, dtype=torch.uint32), out(13, dtype=I32)
    f(x, a, lsr, s)
    same(a, x.long() >> 2)
    same(lsr, (x.long() & 0xFFFFFFFF) >> 28)
    same(s, wrap32(x.long() << 3))


@case(AR)
def check_a_bit_precedence(f: Callable) -> None:
    x, y, z = rnd(13, dtype=I32), out(13, dtype=I32), out(13, dtype=I32)
    x[0] = 5
    f(x, y, z)
    v = x.long().cpu()
    same(y, (v & 12) + 1)
    same(z, torch.where((v ^ 5) == 0, torch.ones_like(v), (v | 3) - (~v & 7)))


@case(AR)
def check_a_u32_hash(f: Callable) -> None:
    x = torch.randint(0, 2**32, (13,), generator=_GEN).to(torch.uint32).to(DEVICE)
    h = out(13, dtype=torch.uint32)
    f(x, h)
    v = x.long().cpu()
    m = 0xFFFFFFFF
    v = ((v ^ (v >> 16)) * 73244475) & m
    v = ((v ^ (v >> 16)) * 73244475) & m
    same(h, v ^ (v >> 16))


@case(AR)
def check_a_casts(f: Callable) -> None:
    x = rnd(13)
    i, b, h, u = out(13, dtype=I32), out(13, dtype=torch.int8), out(13, dtype=torch.float16), out(13, dtype=torch.uint8)
    f(x, i, b, h, u)
    t = (f32(x) * 100).trunc().long()
    same(i, t)
    same(b, ((t + 128) % 256) - 128)
    same(h, (f32(x) * 3).half(), 0)
    same(u, (t + 300) % 256)


@case(AR)
def check_a_promotion(f: Callable) -> None:
    a, b = rnd(13, dtype=torch.uint8, lo=0, hi=256), rnd(13, dtype=torch.uint8, lo=0, hi=256)
    c = rnd(13, dtype=torch.int16, lo=-30000, hi=30000)
    wide, narrow, prod = out(13, dtype=I32), out(13, dtype=torch.uint8), out(13, dtype=I32)
    f(a, b, wide, narrow, c, prod)
    same(wide, a.long() + b.long())
    same(narrow, (a.long() + b.long()) % 256)
    same(prod, c.long() * c.long())


@case(AR)
def check_a_mixed(f: Callable) -> None:
    x, y = rnd(13, dtype=I32), out(13)
    f(x, y)
    v = x.long().cpu()
    same(y, torch.div(v, 4, rounding_mode="trunc").double() * 0.5 + v.double() / 4)


@case(AR)
def check_a_helpers(f: Callable) -> None:
    x, k, y, m = rnd(13), rnd(13, dtype=I32), out(13), out(13, dtype=I32)
    f(x, k, y, m)
    same(y, d(x).clamp(-0.5, 0.5) + d(x) / (1 + d(x).abs()))
    same(m, k.long() % 5)


@case(AR)
def check_a_macros(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y)
    same(y, d(x) * d(x) - 3 + 4)


@case(AR)
def check_a_math(f: Callable) -> None:
    x, y = rnd(9), out(9, 8)
    f(x, y)
    v = d(x)
    want = torch.stack(
        [
            v.exp() - (v.abs() + 1).log(),
            v.abs().sqrt() / (v * v + 1).sqrt(),
            (v * 3).floor() + (v * 2).ceil(),
            (v * 5).round(),
            v * 2 + 1 + v.sign(),
            v.tanh() + v.sigmoid(),
            v.clamp(min=0.25) + v.clamp(max=-0.25),
            v.abs() ** 1.5 + torch.atan2(v, torch.full_like(v, 2.0)),
        ],
        1,
    )
    same(y, want, 1e-4)


@case(AR)
def check_a_ternary_logic(f: Callable) -> None:
    x, y = rnd(23, dtype=I32), out(23, dtype=I32)
    x[1] = 0
    f(x, y)
    want = []
    for v in x.tolist():
        neg, big = v < 0, v > 20 or v < -20
        want.append(2 if big and not neg else -2 if big else -1 if neg else 0 if v == 0 else 1)
    same(y, torch.tensor(want))


@case(AR)
def check_a_ituples(f: Callable) -> None:
    x, y = rnd(5, 7), out(5, 7)
    f(x, y)
    off = torch.arange(35).reshape(5, 7)
    same(y, d(x) * (2 + off % 3))


@case(AR)
def check_a_mdspans(f: Callable) -> None:
    x, y = rnd(7, 5), out(6, dtype=I32)
    f(x, y)
    same(y, torch.tensor([7, 3, 6, 35, 18, 37]))


@case(AR)
def check_a_histogram(f: Callable) -> None:
    x, bins = rnd(29, dtype=I32), torch.zeros(8, dtype=I32, device=DEVICE)
    f(x, bins)
    same(bins, torch.bincount(x.long().cpu() % 8, minlength=8))


@case(AR)
def check_a_atomic_minmax(f: Callable) -> None:
    x, y = rnd(3, 5, dtype=I32), torch.tensor([-1000, 1000], dtype=I32, device=DEVICE)
    f(x, y)
    same(y, torch.tensor([x.max().item(), x.min().item()]))


@case(AR)
def check_a_print_assert(f: Callable) -> None:
    x, y = rnd(5), out(5)
    f(x, y)
    same(y, d(x) + 1)


@case(AR)
def check_a_mutables(f: Callable) -> None:
    x, y = rnd(5, dtype=I32), out(5, dtype=I32)
    f(x, y)
    v = x.long().cpu()
    same(y, ((v - 3) + 10 * v + 100 + 1000 * (v - 3) + 1 + 2 * (v + 1)) * 2)


@case(AR)
def check_a_s64(f: Callable) -> None:
    x, y = rnd(13, dtype=I64), out(13, dtype=I64)
    f(x, y)
    v = x.cpu()
    same(y, v * 3000000000 + (v << 33) - (v >> 1))


@case(AR)
def check_a_int_builtins(f: Callable) -> None:
    x, y = rnd(9, dtype=I32), out(9, 4, dtype=I32)
    f(x, y)
    v = x.long().cpu()
    p = v.clamp(min=0)
    same(y, torch.stack([v.clamp(min=3), v.clamp(max=-3), (v > 0).long(), (p + 15) // 16 * 16 + p // 16 * 16], 1))


@case(AR)
def check_a_f64(f: Callable) -> None:
    x, y = rnd(13, dtype=torch.float64), out(13, dtype=torch.float64)
    f(x, y)
    same(y, d(x) * 0.1 + 1.0 / 3.0, 1e-12)


@case(AR)
def check_a_half_types(f: Callable) -> None:
    a, b, y = rnd(13, dtype=torch.bfloat16), rnd(13, dtype=torch.float16), out(13)
    f(a, b, y)
    same(y, d(a) * d(b) + 1)


@case(AR)
def check_a_c_casts(f: Callable) -> None:
    x, y, z = rnd(13), out(13, dtype=I32), out(13, dtype=I64)
    f(x, y, z)
    same(y, (f32(x) * 50).trunc().long() & 0xFF)
    same(z, (f32(x) * 1000).trunc().long() + 16)


@case(AR)
def check_a_wrap(f: Callable) -> None:
    x, y = rnd(13, dtype=I32, lo=-100000, hi=100000), out(13, dtype=I32)
    f(x, y)
    same(y, wrap32(x.long().cpu() * 1000003 + 2147483647))


# ============================================================================ control (7.2, 7.4)
CT = "control.co"


@case(CT)
def check_c_first_above(f: Callable) -> None:
    x, idx = rnd(6, 9), out(6, dtype=I32)
    f(x, idx, 1.0)
    want = [next((j for j in range(9) if x[r, j] > 1.0), -1) for r in range(6)]
    same(idx, torch.tensor(want))


@case(CT)
def check_c_skip_sum(f: Callable) -> None:
    x, y = rnd(5, 11), out(5)
    f(x, y)
    v = d(x)[:, 0::2]
    same(y, v.clamp(min=0).sum(1))


@case(CT)
def check_c_range_slices(f: Callable) -> None:
    x, y = rnd(5, 11), out(5, 11)
    f(x, y)
    same(y, torch.cat([torch.zeros(5, 1, dtype=torch.float64), d(x)[:, 1:] - d(x)[:, :-1]], 1))


@case(CT)
def check_c_collatz(f: Callable) -> None:
    x, steps = rnd(13, dtype=I32, lo=1, hi=60), out(13, dtype=I32)
    f(x, steps)
    want = []
    for v in x.tolist():
        n = 0
        while v > 1 and n < 200:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            n += 1
        want.append(n)
    same(steps, torch.tensor(want))


@case(CT)
def check_c_nested_names(f: Callable) -> None:
    x, y = rnd(4, 6), out(4, 6)
    f(x, y)
    want = torch.zeros(4, 6, dtype=torch.float64)
    for i in range(4):
        for j in range(6):
            want[i, j] = 1.0 if i == j else x[i, j].item() if i < j else -x[j % 4, i % 6].item()
    same(y, want)


@case(CT)
def check_c_with_bounds(f: Callable) -> None:
    x, first, last, b = rnd(5, 6), out(5), out(5), out(2, dtype=I32)
    f(x, first, last, b)
    same(first, d(x)[:, 0])
    same(last, d(x)[:, 5])
    same(b, torch.tensor([6, 5]))


@case(CT)
def check_c_compose3(f: Callable) -> None:
    x, y = rnd(70), out(70)
    f(x, y)
    same(y, d(x) + 64 + 128)


@case(CT)
def check_c_unrolled(f: Callable) -> None:
    x, y = rnd(5, 12), out(5)
    f(x, y)
    same(y, d(x)[:, 0::3].sum(1))


@case(CT)
def check_c_yield(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y)
    same(y, d(x) * 4)


@case(CT)
def check_c_break_sentinel(f: Callable) -> None:
    x, y = rnd(7, 20), out(7)
    x[0, 0] = 3.0
    f(x, y)
    want = []
    for r in range(7):
        m = float("-inf")
        for v in x[r].tolist():
            if v > 2.0:
                break
            m = max(m, v)
        want.append(m)
    same(y, torch.tensor(want, dtype=torch.float64))


@case(CT)
def check_c_bool_param(f: Callable) -> None:
    for twice in (True, False):
        x, y = rnd(13), out(13)
        f(x, y, twice, 5)
        want = d(x).clone()
        if twice:
            want[:5] *= 2
        same(y, want)


@case(CT)
def check_c_triangle(f: Callable) -> None:
    x, y = rnd(4, 9), out(4, 9)
    f(x, y)
    same(y, d(x).cumsum(1))


@case(CT)
def check_c_jumps(f: Callable) -> None:
    x, hops = rnd(5, 17, dtype=I32), out(5, dtype=I32)
    f(x, hops)
    want = []
    for row in x.tolist():
        i = n = 0
        while i < 17:
            i = i + 1 + (row[i] & 3)
            n += 1
        want.append(n)
    same(hops, torch.tensor(want))


@case(CT)
def check_c_nested_while(f: Callable) -> None:
    x, y = rnd(7, dtype=I32), out(7, dtype=I32)
    f(x, y)
    want = []
    for v in x.tolist():
        t = 0
        for a in range(4):
            for b in range(1, 6):
                # C's % of a negative sum is negative or zero: zero exactly when Python's is
                if (a + b + v) % 3 == 0:
                    continue
                t += a * b
        want.append(t)
    same(y, torch.tensor(want))


@case(CT)
def check_c_grid3(f: Callable) -> None:
    x, y = rnd(2, 3, 4), out(2, 3, 4)
    f(x, y)
    i, j, k = torch.meshgrid(torch.arange(2), torch.arange(3), torch.arange(4), indexing="ij")
    same(y, d(x) + i * 100 + j * 10 + k)


@case(CT)
def check_c_default_levels(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y)
    same(y, d(x) - 0.5)


@case(CT)
def check_c_stepped(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y)
    want = torch.zeros(13, dtype=torch.float64)
    want[0::3] = d(x)[0::3]
    same(y, want)


# ============================================================================ ragged chunkat (7.6)
RG = "ragged.co"


def untouched(t: torch.Tensor) -> None:
    assert torch.isnan(t.cpu()).all(), "a remainder that chunkat leaves alone was written"


@case(RG)
def check_r_floor_tiles(f: Callable) -> None:
    x, y = rnd(3, 11), out(3, 11)
    f(x, y)
    same(y[:, :9], d(x)[:, :9])
    untouched(y[:, 9:])


@case(RG)
def check_r_floor_plus_tail(f: Callable) -> None:
    x, y = rnd(3, 11), out(3, 11)
    f(x, y)
    same(y, d(x))


@case(RG)
def check_r_runtime_factor(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y)
    same(y[:12], d(x)[:12] * 2)
    untouched(y[12:])


@case(RG)
def check_r_chunk_reads(f: Callable) -> None:
    x, y = rnd(13, 5), out(4, 5)
    f(x, y)
    same(y, d(x)[:12].reshape(4, 3, 5).sum(1))


@case(RG)
def check_r_partial_tiles(f: Callable) -> None:
    x, y = rnd(10, 13), out(10, 13)
    f(x, y)
    same(y, d(x) + 1)


@case(RG)
def check_r_composed_chunks(f: Callable) -> None:
    x, y = rnd(20), out(20)
    f(x, y)
    same(y[:18], d(x)[:18])
    untouched(y[18:])


@case(RG)
def check_r_shared_chunks(f: Callable) -> None:
    x, y = rnd(4, 10), out(4, 3)
    f(x, y)
    same(y, d(x)[:, :9].reshape(4, 3, 3).sum(2))


@case(RG)
def check_r_view_tail(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y)
    same(y, d(x) * 3 + 1)


@case(RG)
def check_r_bound_change(f: Callable) -> None:
    x, y = rnd(3, 20), out(3, 4)
    f(x, y)
    v = d(x)[:, :16].reshape(3, 4, 4)
    same(y, v[:, :, :3].sum(2))


@case(RG)
def check_r_tile_sums(f: Callable) -> None:
    x, y = rnd(10, 7), out(3, 2)
    f(x, y)
    same(y, d(x)[:9, :6].reshape(3, 3, 2, 3).sum((1, 3)))


# ============================================================================ combinations
CB = "combos.co"


@case(CB)
def check_x_softmax(f: Callable) -> None:
    x, y = rnd(5, 19), out(5, 19)
    f(x, y)
    same(y, torch.softmax(d(x), 1))


@case(CB)
def check_x_rownorm(f: Callable) -> None:
    x, w, y = rnd(5, 37), rnd(37), out(5, 37)
    f(x, w, y)
    v = d(x)
    mean = v.mean(1, keepdim=True)
    var = ((v - mean) ** 2).mean(1, keepdim=True)
    same(y, (v - mean) / (var + 1e-5).sqrt() * d(w), 1e-4)


@case(CB)
def check_x_gemm_transp_out(f: Callable) -> None:
    a, b, c = rnd(19, 37, dtype=H), rnd(21, 37, dtype=H), out(21, 19)
    f(a, b, c)
    same(c, (d(a) @ d(b).T).T, 1e-3)


@case(CB)
def check_x_pad_k(f: Callable) -> None:
    a, b, c = rnd(19, 12, dtype=H), rnd(21, 12, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(CB)
def check_x_swiz_mma(f: Callable) -> None:
    a, b, c = rnd(19, 64, dtype=H), rnd(21, 64, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(CB)
def check_x_host_split_k(f: Callable) -> None:
    a, b, c = rnd(19, 37, dtype=H), rnd(21, 37, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(CB)
def check_x_select_buffers(f: Callable) -> None:
    x, y = rnd(3, 8), out(3, 16)
    f(x, y)
    same(y, torch.cat([d(x), -d(x)], 1))


@case(CB)
def check_x_buffer_array(f: Callable) -> None:
    x, y = rnd(3, 12), out(3, 12)
    f(x, y)
    v = d(x).reshape(3, 3, 4) + torch.arange(3, dtype=torch.float64)[None, :, None]
    same(y, v.flip(1).reshape(3, 12))


@case(CB)
def check_x_local_init(f: Callable) -> None:
    x, y = rnd(5, 3, 4), out(5, 4)
    f(x, y)
    same(y, d(x).sum(1) + 0.5)


@case(CB)
def check_x_thread0_copy(f: Callable) -> None:
    x, y = rnd(3, 16), out(3, 16)
    f(x, y)
    same(y, d(x).flip(1) + d(x)[:, :1])


@case(CB)
def check_x_tree_sum(f: Callable) -> None:
    x, y = rnd(3, 32), out(3)
    f(x, y)
    same(y, d(x).sum(1), 1e-5)


@case(CB)
def check_x_shared_hist(f: Callable) -> None:
    x, h = rnd(3, 32, dtype=I32), out(3, 4, dtype=I32)
    f(x, h)
    v = x.long().cpu() & 3
    same(h, torch.stack([(v == k).sum(1) for k in range(4)], 1))


@case(CB)
def check_x_atomics_misc(f: Callable) -> None:
    x, old, acc = rnd(13, dtype=I32), out(13, dtype=I32), torch.zeros(3, dtype=I32, device=DEVICE)
    x0 = x.clone()
    f(x, old, acc)
    same(old, x0)
    same(x, torch.arange(13) * 2)
    ors = xors = 0
    for p in range(13):
        ors |= 1 << (p % 8)
        xors ^= p
    same(acc, torch.tensor([ors, xors, 7]))


@case(CB)
def check_x_int8_mma(f: Callable) -> None:
    a, b = rnd(19, 32, dtype=torch.int8, lo=-20, hi=20), rnd(21, 32, dtype=torch.int8, lo=-20, hi=20)
    c = out(19, 21, dtype=I32)
    f(a, b, c)
    same(c, a.long().cpu() @ b.long().cpu().T)


@case(CB)
def check_x_bf16_frag(f: Callable) -> None:
    a, b, c = rnd(19, 32, dtype=torch.bfloat16), rnd(21, 32, dtype=torch.bfloat16), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T + 1, 1e-2)


@case(CB)
def check_x_local_roundtrip(f: Callable) -> None:
    x, y = rnd(24), out(24)
    f(x, y)
    same(y, d(x) ** 2)


@case(CB)
def check_x_macro_views(f: Callable) -> None:
    x, y = rnd(10, 8), out(10, 8)
    f(x, y)
    same(y, d(x) + 1)


@case(CB)
def check_x_tuple_views(f: Callable) -> None:
    x, y = rnd(10, 13), out(10, 13)
    f(x, y)
    same(y, d(x) * 2)


@case(CB)
def check_x_by_reference(f: Callable) -> None:
    x, y = rnd(13), rnd(13)
    y0 = y.clone()
    f(x, y)
    same(y, d(x) + d(y0))


@case(CB)
def check_x_dynamic(f: Callable) -> None:
    x = rnd(7, 4)
    r = f(x)
    same(r, d(x) * torch.arange(4, dtype=torch.float64))


@case(CB)
def check_x_peaks(f: Callable) -> None:
    x, at, val = rnd(5, 9), out(5, dtype=I32), out(5)
    f(x, at, val)
    same(at, d(x).argmax(1))
    same(val, d(x).max(1).values)


@case(CB)
def check_x_column_gather(f: Callable) -> None:
    x, y = rnd(7, 5), out(7)
    f(x, y)
    same(y, d(x)[:, 0])


@case(CB)
def check_x_strided_reshapes(f: Callable) -> None:
    x, y1, y2, y3 = rnd(3, 10), out(3), out(4), out(4, 4)
    f(x, y1, y2, y3)
    flat = d(x).flatten()
    same(y3, flat[torch.arange(4)[:, None] * 8 + torch.arange(4)[None, :]])
    same(y1, flat[12:18:2])
    same(y2, flat[4:16:3])


@case(CB)
def check_x_transpose_local(f: Callable) -> None:
    x, y = rnd(10, 7), out(7, 10)
    f(x, y)
    same(y, d(x).T)


# ============================================================================ C corners (3.3, 4.4, 7.7)
A2 = "arith2.co"


def ctrunc(a: torch.Tensor, b: int) -> torch.Tensor:
    return torch.div(a, b, rounding_mode="trunc")


@case(A2)
def check_b_host_divmod(f: Callable) -> None:
    y = out(13, dtype=I32)
    f(y, 30)
    same(y[:5], torch.tensor([-4, -1, -10, 4, -1]))


@case(A2)
def check_b_neg_divisor(f: Callable) -> None:
    x, y = rnd(11, dtype=I32), out(11, 4, dtype=I32)
    f(x, y)
    v = x.long().cpu()
    same(y, torch.stack([ctrunc(v, -3), torch.fmod(v, -3), ctrunc(-v, 5), torch.fmod(v - 100, 7)], 1))


@case(A2)
def check_b_not_ops(f: Callable) -> None:
    x, y, z = rnd(13, dtype=torch.uint8, lo=0, hi=16), out(13, dtype=I32), out(13, dtype=I32)
    x[0], x[1] = 7, 0
    f(x, y, z)
    v = x.long().cpu()
    same(y, -1 - v)
    same(z, (v == 7).long() + (v != 0).long() * 2)


@case(A2)
def check_b_unsigned(f: Callable) -> None:
    x = torch.randint(0, 200, (13,), generator=_GEN).to(torch.uint32).to(DEVICE)
    dd, lt = out(13, dtype=torch.uint32), out(13, dtype=I32)
    f(x, dd, lt)
    v = x.long().cpu()
    same(dd, (v - 100) % 2**32)
    same(lt, (v < 100).long())


@case(A2)
def check_b_host_bits(f: Callable) -> None:
    y = out(8, dtype=I32)
    a = -37
    f(y, a)
    same(y, torch.tensor([a >> 2, a & 0xF0, a | 3, a ^ -1, ~a, a << 4, a >> 2, ~a & 0xFF]))


@case(A2)
def check_b_host_casts(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y, 300, -2.7)
    same(y, d(x) + 44 + 44 * 1000 - 2 * 1000000 + (-27680) * 0.001)


@case(A2)
def check_b_f32_rounding(f: Callable) -> None:
    x, y = rnd(13) * 3, out(13)
    f(x, y)
    big = torch.tensor(16777216.0, dtype=torch.float32)
    same(y, (x.cpu() + big) - big, 0)


@case(A2)
def check_b_int_float(f: Callable) -> None:
    x = rnd(13, dtype=I32, lo=-(2**30), hi=2**30)
    fl, back = out(13), out(13, dtype=I32)
    f(x, fl, back)
    same(fl, x.cpu().float(), 0)
    same(back, (x.cpu().float() * torch.tensor(-0.7, dtype=torch.float32)).trunc().long())


@case(A2)
def check_b_store_converts(f: Callable) -> None:
    x, i, h = rnd(13), out(13, dtype=I32), out(13, dtype=torch.float16)
    f(x, i, h)
    same(i, (f32(x) * 10).trunc().long())
    same(h, (f32(x) / 3).half(), 0)


@case(A2)
def check_b_widen(f: Callable) -> None:
    x, y = rnd(13, dtype=I32), out(13, dtype=I64)
    f(x, y)
    # x * 65536 * 65536 multiplies ints: it wraps to 0 in 32 bits (C on the GPU)
    same(y, x.long().cpu() * 4000000000)


@case(A2)
def check_b_literals(f: Callable) -> None:
    y = out(6, dtype=I64)
    f(y)
    same(y, torch.tensor([0x7FFFFFFF, 0xFFFFFFFF, 7, 5000000000, 16, 1 << 20]))


@case(A2)
def check_b_compose_prec(f: Callable) -> None:
    y = out(13, dtype=I32)
    f(y)
    same(y, torch.arange(13) + 1 + 40 + 4 * 100)


@case(A2)
def check_b_bits_vs_compare(f: Callable) -> None:
    x, y = rnd(9, dtype=I32), out(9, dtype=I32)
    f(x, y)
    same(y, torch.where(x.long().cpu() % 2 == 0, 10, 20))


@case(A2)
def check_b_host_halvings(f: Callable) -> None:
    y = out(13, dtype=I32)
    f(y)
    same(y[:1], torch.tensor([3]))


@case(A2)
def check_b_div_then_cast(f: Callable) -> None:
    x, y = rnd(9, dtype=I32), out(9, 2)
    f(x, y)
    v = x.long().cpu()
    same(y, torch.stack([ctrunc(v, 4).double(), v.double() / 4], 1))


@case(A2)
def check_b_cdiv(f: Callable) -> None:
    x, y = rnd(13, dtype=I32), out(13, 2, dtype=I32)
    f(x, y)
    v = x.long().cpu()
    same(y, torch.stack([ctrunc(v + 60 + 6, 7), torch.full_like(v, 4)], 1))


# ============================================================================ more combinations
MO = "more.co"


@case(MO)
def check_y_sliding(f: Callable) -> None:
    x, y = rnd(13), out(6)
    f(x, y)
    xp = torch.nn.functional.pad(d(x), (0, 4))
    same(y, torch.stack([sum(xp[2 * i + k] * (k + 1) for k in range(4)) for i in range(6)]))


@case(MO)
def check_y_box(f: Callable) -> None:
    x, y = rnd(5, 7), out(5, 7)
    f(x, y)
    xp = torch.nn.functional.pad(d(x), (0, 2, 0, 2))
    same(y, sum(xp[a : a + 5, b : b + 7] for a in range(3) for b in range(3)))


@case(MO)
def check_y_async_launches(f: Callable) -> None:
    x, y, z = rnd(13), out(13), out(13)
    f(x, y, z)
    same(y, d(x) + 1)
    same(z, d(x) - 1)


@case(MO)
def check_y_float_atomics(f: Callable) -> None:
    x, y = rnd(3, 7), torch.zeros(3, device=DEVICE)
    f(x, y)
    same(y, d(x).sum(1), 1e-5)


@case(MO)
def check_y_degenerate(f: Callable) -> None:
    for m, n in ((1, 1), (1, 6), (5, 1)):
        x, y = rnd(m, n), out(n, m)
        f(x, y)
        same(y, d(x).T)


@case(MO)
def check_y_lane_yield(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y, 9)
    same(y[:9], d(x)[:9] * 5)
    assert torch.isnan(y[9:]).all(), "a thread that left early wrote"


@case(MO)
def check_y_select3(f: Callable) -> None:
    for which in range(3):
        x, y = rnd(3, 11), out(11)
        f(x, y, which)
        same(y, d(x)[which])


@case(MO)
def check_y_select3_const(f: Callable) -> None:
    for which in range(3):
        x, y = rnd(3, 16), out(16)
        f(x, y, which)
        same(y, d(x)[which])


@case(MO)
def check_y_thread_frags(f: Callable) -> None:
    x, y = rnd(3, 32), out(3, 4)
    f(x, y)
    same(y, (d(x) ** 2).reshape(3, 4, 8).sum(2))


@case(MO)
def check_y_span_as_transp_shared(f: Callable) -> None:
    x, y = rnd(3, 12), out(3, 4, 3)
    f(x, y)
    same(y, d(x).reshape(3, 3, 4).transpose(1, 2))


@case(MO)
def check_y_local_tile(f: Callable) -> None:
    x, y = rnd(11, 4), out(11, 4)
    f(x, y)
    same(y, d(x) + torch.arange(4, dtype=torch.float64))


@case(MO)
def check_y_vectorized(f: Callable) -> None:
    x, y = rnd(3, 16), out(3, 16)
    f(x, y)
    same(y, d(x) * 2 - 1)


@case(MO)
def check_y_tma_double(f: Callable) -> None:
    x, y = rnd(10, 32), out(10)
    f(x, y)
    same(y, d(x).sum(1), 1e-5)


@case(MO)
def check_y_gemm_scale_bias(f: Callable) -> None:
    a, b, rs, cb, c = rnd(19, 37, dtype=H), rnd(21, 37, dtype=H), rnd(19), rnd(21), out(19, 21)
    f(a, b, rs, cb, c)
    same(c, (d(a) @ d(b).T) * d(rs)[:, None] + d(cb), 1e-3)


@case(MO)
def check_y_host_with(f: Callable) -> None:
    x, y = rnd(3, 13), out(3, 13)
    f(x, y)
    same(y, d(x) * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)[:, None] + 3)


@case(MO)
def check_y_stream(f: Callable) -> None:
    x, y = rnd(13), out(13)
    f(x, y, None)
    same(y, d(x) + 3)


@case(MO)
def check_y_host_foreach_bound(f: Callable) -> None:
    x, y = rnd(13), out(2, 13)
    f(x, y)
    same(y, torch.stack([d(x) + 200, d(x) + 210]))


# ============================================================================ a last batch
M2 = "more2.co"


@case(M2)
def check_z_tuple_loop(f: Callable) -> None:
    x, y = rnd(3, 5), out(3, 5)
    f(x, y)
    same(y, d(x) * 2 + torch.arange(5, dtype=torch.float64))


@case(M2)
def check_z_interior(f: Callable) -> None:
    x, y = rnd(3, 9), out(3, 9)
    f(x, y)
    v = d(x)
    want = torch.zeros(3, 9, dtype=torch.float64)
    want[:, 1:-1] = v[:, :-2] + v[:, 2:] - 2 * v[:, 1:-1]
    same(y, want)


@case(M2)
def check_z_shape_math(f: Callable) -> None:
    x, y = rnd(3, 5), out(6, dtype=I32)
    f(x, y)
    same(y, torch.tensor([6, 15, 3, 10, 2, 2]))


@case(M2)
def check_z_bound_minus(f: Callable) -> None:
    x, y = rnd(3, 12), out(3, 4)
    f(x, y)
    same(y, d(x)[:, 8:12])


@case(M2)
def check_z_three_roles(f: Callable) -> None:
    x, y = rnd(10, 21), out(10, 21)
    f(x, y)
    same(y, d(x) * 3)


@case(M2)
def check_z_mixed_ternary(f: Callable) -> None:
    x, y = rnd(11, dtype=I32), out(11)
    f(x, y)
    v = x.long().cpu()
    same(y, torch.where(v > 0, v.double() * 0.5, ctrunc(v, 2).double()))


@case(M2)
def check_z_compose_with(f: Callable) -> None:
    x, y = rnd(21), out(21)
    f(x, y)
    same(y, d(x))


@case(M2)
def check_z_s64_sum(f: Callable) -> None:
    x, y = rnd(3, 7, dtype=I32), out(3, dtype=I64)
    f(x, y)
    same(y, x.long().cpu().sum(1) * 10**10)


@case(M2)
def check_z_single_block_gemm(f: Callable) -> None:
    a, b, c = rnd(19, 37, dtype=H), rnd(21, 37, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(M2)
def check_z_transp_into_window(f: Callable) -> None:
    x, y = rnd(10, 3), out(5, 10)
    f(x, y)
    same(y[:3], d(x).T)
    assert torch.isnan(y[3:]).all(), "rows past the window were written"


# ============================================================================ the test
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("cid", PROBE.params())
def test_probe4(cid: str, schedule: str) -> None:
    PROBE.run(cid, schedule)
