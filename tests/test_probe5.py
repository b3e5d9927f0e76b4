"""Probe 5 of the language (issue 28): kernels as users port them from CUDA and combine constructs
(tests/programs/probe5/*.co, grouped by LANGUAGE.md section), each run in both schedules in the
interpreter on ragged sizes with random inputs, outputs poisoned (NaN or a sentinel), compared with a
float64 reference written from the language's meaning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE
from probe_util import SCHEDULES, Probe, d, out, padded, same

PROBE = Probe(Path(__file__).parent / "programs" / "probe5", seed=5)
CASES, XFAIL, case, rnd, _GEN = PROBE.cases, PROBE.xfail, PROBE.case, PROBE.rnd, PROBE.gen


I32, I64, U32, H = torch.int32, torch.int64, torch.uint32, torch.float16


def ctrunc(a: torch.Tensor, b: int) -> torch.Tensor:
    """C's truncating integer division."""
    return torch.div(a, b, rounding_mode="trunc")


# ============================================================================ CUDA ports (7.3, 7.7, 7.10)
CU = "cuda.co"


@case(CU)
def check_c_saxpy_gridstride(f: Callable) -> None:
    x, y, z = rnd(301), rnd(301), out(301)
    f(x, y, z, 1.5)
    same(z, 1.5 * d(x) + d(y))


@case(CU)
def check_c_while_stride(f: Callable) -> None:
    x, y = rnd(277), out(277)
    f(x, y)
    same(y, d(x) ** 2)


@case(CU)
def check_c_stencil_halo(f: Callable) -> None:
    x, y = rnd(75), out(75)
    f(x, y)
    p = torch.nn.functional.pad(d(x), (1, 1))
    same(y, p[:-2] + 2 * p[1:-1] + p[2:])


@case(CU)
def check_c_transpose_tile(f: Callable) -> None:
    x, y = rnd(13, 19), out(19, 13)
    f(x, y)
    same(y, d(x).T)


@case(CU)
def check_c_reverse_block(f: Callable) -> None:
    x, y = rnd(37), out(37)
    f(x, y)
    p = torch.cat([d(x), torch.full((11,), -1.0, dtype=torch.float64)]).reshape(3, 16).flip(1).reshape(-1)
    same(y, p[:37])


@case(CU)
def check_c_block_reduce(f: Callable) -> None:
    x, y = rnd(3, 203), out(3)
    f(x, y)
    same(y, d(x).sum(1), 1e-4)


@case(CU)
def check_c_coarsen_local(f: Callable) -> None:
    x, y = rnd(139), out(139)
    f(x, y)
    same(y, d(x) * 3 + torch.arange(139).double() % 4)


@case(CU)
def check_c_dot_atomic(f: Callable) -> None:
    a, b = rnd(250), rnd(250)
    o = torch.zeros(1, device=DEVICE)
    f(a, b, o)
    same(o, (d(a) * d(b)).sum().reshape(1), 1e-4)


@case(CU)
def check_c_rmsnorm(f: Callable) -> None:
    x, w, y = rnd(3, 45), rnd(45), out(3, 45)
    f(x, w, y)
    inv = 1 / torch.sqrt((d(x) ** 2).mean(1, keepdim=True) + 1e-5)
    same(y, d(x) * inv * d(w), 1e-4)


@case(CU)
def check_c_warp_softmax(f: Callable) -> None:
    x, y = rnd(4, 70), out(4, 70)
    f(x, y)
    same(y, torch.softmax(d(x), 1), 1e-4)


@case(CU)
def check_c_warp_scan(f: Callable) -> None:
    x, y = rnd(3, 32), out(3, 32)
    f(x, y)
    same(y, d(x).cumsum(1), 1e-4)


@case(CU)
def check_c_gemv_warp(f: Callable) -> None:
    a, x, y = rnd(10, 77), rnd(77), out(10)
    f(a, x, y)
    same(y, d(a) @ d(x), 1e-4)


@case(CU)
def check_c_gridstride_2d(f: Callable) -> None:
    x, y = rnd(21, 45), out(21, 45)
    f(x, y)
    i = torch.arange(21).double()[:, None]
    j = torch.arange(45).double()[None, :]
    same(y, d(x) - i + j * 0.5)


@case(CU)
def check_c_count_above(f: Callable) -> None:
    x = rnd(211)
    c = torch.zeros(1, dtype=I32, device=DEVICE)
    f(x, c, 0.25)
    same(c, (d(x) > 0.25).sum().reshape(1))


@case(CU)
def check_c_vec4_relu(f: Callable) -> None:
    x, y = rnd(299), out(299)
    f(x, y)
    same(y, d(x).clamp(0, 1.5))


@case(CU)
def check_c_segment_max(f: Callable) -> None:
    x, seg = rnd(90, dtype=I32), rnd(5, dtype=I32, lo=0, hi=50)
    best = torch.full((5,), -1000, dtype=I32, device=DEVICE)
    f(x, seg, best)
    want = torch.full((5,), -1000, dtype=torch.long)
    xs, sg = x.long().cpu(), seg.long().cpu()
    for i in range(90):
        s = int(sg[i % 5]) % 5
        want[s] = max(want[s], xs[i])
    same(best, want)


@case(CU)
def check_c_absdiff(f: Callable) -> None:
    x, y = rnd(71), out(71)
    f(x, y)
    same(y, torch.cat([(d(x)[1:] - d(x)[:-1]).abs(), torch.zeros(1, dtype=torch.float64)]))


@case(CU)
def check_c_row_meanvar(f: Callable) -> None:
    x, m, v = rnd(3, 57), out(3), out(3)
    f(x, m, v)
    same(m, d(x).mean(1), 1e-4)
    same(v, d(x).var(1, unbiased=False), 1e-4)


@case(CU)
def check_c_register_window(f: Callable) -> None:
    x, y = rnd(9, 21), out(9, 21)
    f(x, y)
    p = torch.nn.functional.pad(d(x), (0, 0, 1, 1))
    same(y, p[:-2] + p[1:-1] + p[2:])


@case(CU)
def check_c_halfwarp_sum(f: Callable) -> None:
    x, y = rnd(5, 16), out(5)
    f(x, y)
    same(y, d(x).sum(1), 1e-4)


@case(CU)
def check_c_half_loads(f: Callable) -> None:
    x, y = rnd(3, 16), out(3, 32)
    f(x, y)
    same(y, torch.cat([d(x), -d(x)], 1))


@case(CU)
def check_c_tiled_sgemm(f: Callable) -> None:
    a, b, c = rnd(19, 21), rnd(21, 13), out(19, 13)
    f(a, b, c)
    same(c, d(a) @ d(b), 1e-4)


@case(CU)
def check_c_register_block(f: Callable) -> None:
    a, b, c = rnd(19, 11), rnd(11, 13), out(19, 13)
    f(a, b, c)
    same(c, d(a) @ d(b), 1e-4)


# ============================================================================ views (7.6, 7.8)
V = "views.co"


@case(V)
def check_w_named_origin(f: Callable) -> None:
    x, y = rnd(9, 8), out(7, 6)
    f(x, y, 3, 3)
    same(y, padded(x, 7, 6, 3, 3) * 2)


@case(V)
def check_w_named_out(f: Callable) -> None:
    x, y = rnd(8, 13), out(8, 13)
    f(x, y)
    same(y, d(x) + (torch.arange(13) // 5).double()[None, :])


@case(V)
def check_w_span_as_odd(f: Callable) -> None:
    x, y = rnd(6, 35), out(14, 15)
    f(x, y)
    same(y, d(x).reshape(14, 15))


@case(V)
def check_w_span_as_shared_elems(f: Callable) -> None:
    x, y = rnd(3, 45), out(3, 9)
    f(x, y)
    same(y, d(x).reshape(3, 5, 9).sum(1), 1e-4)


@case(V)
def check_w_step_transp(f: Callable) -> None:
    x, y = rnd(10, 5), out(4, 5, 2)
    f(x, y)
    p = padded(x, 12, 5)
    same(y, torch.stack([p[3 * b : 3 * b + 2].T for b in range(4)]))


@case(V)
def check_w_view_pad(f: Callable) -> None:
    x, y = rnd(9, 8), out(6, 7)
    f(x, y, 6, 1)
    want = torch.full((6, 7), 9.0, dtype=torch.float64)
    want[1:5, 2:6] = padded(x, 4, 4, 6, 1)
    same(y, want)


@case(V)
def check_w_ragged_chunk_window(f: Callable) -> None:
    x, y = rnd(12, 10), out(10, 11)
    f(x, y)
    same(y[:9, :10], padded(x, 9, 10, 1, 1))
    assert torch.isnan(y[9]).all() and torch.isnan(y[:, 10]).all(), "the remainder of the chunk tiling was written"


@case(V)
def check_w_tma_swiz_bias(f: Callable) -> None:
    x, b, y = rnd(19, 35), rnd(19), out(19, 35)
    f(x, b, y)
    same(y, d(x) + d(b)[:, None])


@case(V)
def check_w_modspan_pair(f: Callable) -> None:
    x, t, h = rnd(3, 7), out(3), out(3, 6)
    f(x, t, h)
    same(t, d(x)[:, 6])
    same(h, d(x)[:, :6])


@case(V)
def check_w_span_as_3d(f: Callable) -> None:
    x, y = rnd(5, 3, 5), out(5, 15)
    f(x, y)
    same(y, d(x).reshape(15, 5).T)


@case(V)
def check_w_chunk_then_subspan(f: Callable) -> None:
    x, y = rnd(7, 12), out(7, 4)
    f(x, y)
    same(y, torch.cat([d(x)[:, 2:4], d(x)[:, 8:10]], 1))


@case(V)
def check_w_future_window(f: Callable) -> None:
    x, y = rnd(8, 10), out(8, 10)
    f(x, y)
    p = torch.nn.functional.pad(d(x), (1, 1, 1, 1))
    same(y, p[:-2, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] + p[2:, 1:-1] - 4 * d(x), 1e-4)


@case(V)
def check_w_strided_local(f: Callable) -> None:
    x, y = rnd(20), out(5, 4)
    f(x, y)
    p = torch.cat([d(x), torch.zeros(20, dtype=torch.float64)])
    same(y, torch.stack([p[3 * q : 3 * q + 12 : 3] for q in range(5)]))


@case(V)
def check_w_tuple_view(f: Callable) -> None:
    x, y = rnd(6, 7), out(6, 4)
    f(x, y)
    same(y, padded(x, 6, 4, 1, 2))


@case(V)
def check_w_copy_into_part(f: Callable) -> None:
    a, b, y = rnd(3, 4), rnd(3, 4), out(3, 8)
    f(a, b, y)
    same(y, torch.cat([d(a), d(b)], 1))


@case(V)
def check_w_flat_transp(f: Callable) -> None:
    x, y = rnd(42), out(6, 8)
    f(x, y)
    same(y, padded(x.reshape(7, 6), 8, 6).T)


@case(V)
def check_w_sqz_named(f: Callable) -> None:
    x, y = rnd(3, 4, 11), out(4, 11)
    f(x, y, 2)
    same(y, d(x)[2] * d(x)[2, 0, 0])


@case(V)
def check_w_local_transp(f: Callable) -> None:
    x, y = rnd(13, 4), out(4, 13)
    f(x, y)
    same(y, d(x).T)


@case(V)
def check_w_chunk_pad(f: Callable) -> None:
    x, y = rnd(3, 12), out(3, 15)
    f(x, y)
    want = torch.full((3, 3, 5), 0.5, dtype=torch.float64)
    want[:, :, 1:] = d(x).reshape(3, 3, 4)
    same(y, want.reshape(3, 15))


# ============================================================================ integers, bits, casts (4, 5, 7.7)
IN = "ints.co"


def u32(*shape: int) -> torch.Tensor:
    return torch.randint(0, 2**32, shape, generator=_GEN, dtype=torch.int64).to(U32).to(DEVICE)


def lng(t: torch.Tensor) -> torch.Tensor:
    return t.cpu().to(torch.int64)


def uout(*shape: int) -> torch.Tensor:
    return torch.full(shape, 77, device=DEVICE, dtype=U32)


@case(IN)
def check_i_bitfields(f: Callable) -> None:
    x, hi, lo, sw = u32(45), uout(45), uout(45), uout(45)
    f(x, hi, lo, sw)
    v = lng(x)
    same(lng(hi), (v >> 8) & 0xFF)
    same(lng(lo), v & 7)
    same(lng(sw), ((v & 0xFF) << 8) | ((v >> 8) & 0xFF))


@case(IN)
def check_i_hash_bucket(f: Callable) -> None:
    x, h, bk = u32(37), uout(37), out(37, dtype=I32)
    f(x, h, bk)
    v = lng(x)
    hv = ((v ^ (v >> 16)) * 73244475) % 2**32
    same(lng(h), hv)
    same(bk, hv & 15)


@case(IN)
def check_i_fixed_point(f: Callable) -> None:
    x = rnd(70, dtype=I32, lo=-1000, hi=1000)
    q, r, sh = out(70, dtype=I32), out(70, dtype=I32), out(70, dtype=I32)
    f(x, q, r, sh)
    v = lng(x)
    same(q, ctrunc(v, 8))
    same(r, v - ctrunc(v, 8) * 8)
    same(sh, v >> 3)


@case(IN)
def check_i_align(f: Callable) -> None:
    x = rnd(37, dtype=I32, lo=0, hi=100)
    up, down = out(37, dtype=I32), out(37, dtype=I32)
    f(x, up, down)
    v = lng(x)
    same(up, (v + 7) // 8 * 8)
    same(down, v // 8 * 8 + 16)


@case(IN)
def check_i_casts(f: Callable) -> None:
    x = rnd(50)
    tr, wrap, hr = out(50, dtype=I32), out(50, dtype=torch.uint8), out(50)
    f(x, tr, wrap, hr)
    v = (x.cpu() * 100.0).trunc().long()
    same(tr, v)
    same(wrap, (v + 256) % 256)
    same(hr, x.cpu().half().double())


@case(IN)
def check_i_halvings(f: Callable) -> None:
    x, y = rnd(40, dtype=I32, lo=-100, hi=300), out(40, dtype=I32)
    f(x, y)
    want = [min(int(v).bit_length(), 6) if v > 0 else 0 for v in lng(x).tolist()]
    same(y, torch.tensor(want))


@case(IN)
def check_i_continue_sum(f: Callable) -> None:
    x, y = rnd(3, 17), out(3)
    f(x, y)
    keep = (torch.arange(17) % 3 != 0).double()
    same(y, (d(x) * keep).sum(1), 1e-4)


@case(IN)
def check_i_macro_index(f: Callable) -> None:
    x, y = rnd(5, 8), out(5, 4)
    f(x, y)
    a, b = d(x)[:, 0::2], d(x)[:, 1::2]
    even = (torch.arange(5)[:, None] * 4 + torch.arange(4)[None, :]) % 2 == 0
    same(y, torch.where(even, torch.maximum(a, b), torch.minimum(a, b)))


@case(IN)
def check_i_tuple_tiles(f: Callable) -> None:
    x, y = rnd(10, 11), out(10, 11)
    f(x, y)
    w = (torch.arange(10)[:, None] % 3) * 4 + torch.arange(11)[None, :] % 4
    same(y, d(x) * w.double())


@case(IN)
def check_i_counters(f: Callable) -> None:
    x, y = rnd(45, dtype=I32), out(45, dtype=I32)
    f(x, y)
    want = []
    for v in lng(x).tolist():
        up = sum(1 for k in range(4) if v > k * 10)
        down = 10 - (4 - up)
        want.append(up if v < -20 else (down if v < 20 else up * 100 + down))
    same(y, torch.tensor(want))


@case(IN)
def check_i_unsigned_cmp(f: Callable) -> None:
    a = torch.randint(0, 300, (33,), generator=_GEN).to(U32).to(DEVICE)
    b = torch.randint(0, 300, (33,), generator=_GEN).to(U32).to(DEVICE)
    dd, gt = uout(33), out(33, dtype=I32)
    f(a, b, dd, gt)
    diff = (lng(a) - lng(b)) % 2**32
    same(lng(dd), diff)
    same(gt, (diff > 100).long())


@case(IN)
def check_i_wide(f: Callable) -> None:
    x, y, z = rnd(35, dtype=I32), out(35, dtype=I64), out(35, dtype=I64)
    f(x, y, z)
    same(y, lng(x) * 3000000000)
    same(z, lng(x) << 31)


@case(IN)
def check_i_promote(f: Callable) -> None:
    a = rnd(40, dtype=torch.uint8, lo=0, hi=256)
    b = rnd(40, dtype=torch.uint8, lo=0, hi=256)
    w, n = out(40, dtype=I32), out(40, dtype=torch.uint8)
    f(a, b, w, n)
    same(w, lng(a) + lng(b))
    same(n, (lng(a) + lng(b)) % 256)


@case(IN)
def check_i_bools(f: Callable) -> None:
    x, y = rnd(50, dtype=I32, lo=-20, hi=20), out(50, dtype=I32)
    f(x, y)
    v = lng(x)
    even, big = v % 2 == 0, v.abs() > 10
    same(y, torch.where(even & ~big, 1, 2))


@case(IN)
def check_i_precedence(f: Callable) -> None:
    a = rnd(40, dtype=I32)
    b = torch.where(torch.arange(40, device=DEVICE) % 2 == 0, a, rnd(40, dtype=I32))
    y, z = out(40, dtype=I32), out(40, dtype=I32)
    f(a, b, y, z)
    same(y, (lng(a) & 7) + 1)
    same(z, ((lng(a) ^ lng(b)) == 0).long())


@case(IN)
def check_i_not_swap(f: Callable) -> None:
    x, u = rnd(36, dtype=I32), u32(36)
    y, z = out(36, dtype=I32), uout(36)
    f(x, u, y, z)
    same(y, -1 - torch.arange(36) + lng(x) * 1000)
    same(lng(z), 2**32 - 1 - lng(u))


@case(IN)
def check_i_define_grid(f: Callable) -> None:
    x, y = rnd(53), out(53)
    f(x, y)
    same(y, d(x) + 4)


@case(IN)
def check_i_mixed(f: Callable) -> None:
    x, y = rnd(44, dtype=I32), out(44)
    f(x, y)
    v = lng(x)
    same(y, torch.where(v % 2 != 0, v.double() * 0.25 + ctrunc(v, 4).double(), ctrunc(v, 3).double()))


# ============================================================================ host code (7.3, 8)
HO = "host.co"


@case(HO)
def check_h_block_scan(f: Callable) -> None:
    x, y = rnd(45), out(45)
    f(x, y)
    same(y, d(x).cumsum(0), 1e-4)


@case(HO)
def check_h_window_roundtrip(f: Callable) -> None:
    x, y = rnd(7, 11), out(7, 11)
    f(x, y, 3)
    # LANGUAGE.md 14.3: the source window (rows 4..7 of 7) is partly outside x: its row 7 reads zero
    want = d(x).clone()
    want[3:7] = padded(x, 4, 11, 4) * 10
    same(y, want)


@case(HO)
def check_h_pingpong_copies(f: Callable) -> None:
    x, y = rnd(37), out(37)
    f(x, y, 3)
    same(y, d(x) * 18)


@case(HO)
def check_h_while_alternate(f: Callable) -> None:
    x, y = rnd(19), out(19)
    f(x, y, 3)
    same(y, -2 * (d(x) + 1) + 1)


@case(HO)
def check_h_int_args(f: Callable) -> None:
    y = out(8, dtype=I32)
    f(y, -17, 5)
    same(y, torch.tensor([-3, -2, -5, 95, -22, -5, 8, 22]))


@case(HO)
def check_h_return_two_pass(f: Callable) -> None:
    x = rnd(5, 9)
    t = f(x)
    same(t, d(x) - d(x).max(1, keepdim=True).values)


@case(HO)
def check_h_by_reference(f: Callable) -> None:
    x, acc = torch.randn(21, generator=_GEN), torch.randn(21, generator=_GEN)
    want = acc.double() + x.double() * 6
    f(x, acc, 3)
    same(acc, want)


@case(HO)
def check_h_filled_buffer(f: Callable) -> None:
    x, y = rnd(29), out(29)
    f(x, y)
    same(y, torch.where(d(x) > 0, d(x), -3.0))


@case(HO)
def check_h_column_tiles(f: Callable) -> None:
    x, y = rnd(4, 13), out(4, 13)
    f(x, y)
    same(y, d(x) + 100.0 * (torch.arange(13) // 5).double())


@case(HO)
def check_h_rotate_break(f: Callable) -> None:
    x, y = rnd(19), out(19)
    f(x, y, 4)
    a, b, c = d(x), torch.ones(19, dtype=torch.float64), torch.zeros(19, dtype=torch.float64)
    for _ in range(4):
        c = a * b + 0.5
        a, b, c = b, c, a
    same(y, a)


@case(HO)
def check_h_host_transp(f: Callable) -> None:
    x, y = rnd(7, 10), out(10, 7)
    f(x, y)
    same(y, d(x).T + 1)


# ============================================================================ buffers, loops, bounds (7.2, 7.4, 7.5)
BU = "bufs.co"


@case(BU)
def check_b_array_pick(f: Callable) -> None:
    a, b = rnd(3, 8), rnd(3, 8)
    for which in (0, 1):
        y = out(3, 8)
        f(a, b, y, which)
        s, o = (d(a), d(b)) if which == 0 else (d(b), d(a))
        same(y, s - o.flip(1))


@case(BU)
def check_b_quadrants(f: Callable) -> None:
    x, y = rnd(13, 11), out(13, 11)
    f(x, y)
    w = 1 + (torch.arange(13)[:, None] % 8 // 4) * 2 + torch.arange(11)[None, :] % 8 // 4
    same(y, d(x) * w.double())


@case(BU)
def check_b_init_partial(f: Callable) -> None:
    x, y = rnd(3, 5), out(3, 9)
    f(x, y)
    want = torch.full((3, 9), 7.5, dtype=torch.float64)
    want[:, 0::2] = d(x)
    same(y, want)


@case(BU)
def check_b_local_counts(f: Callable) -> None:
    x, y = rnd(11, 24, dtype=I32), out(11, 4, dtype=I32)
    f(x, y)
    v = lng(x) & 3
    same(y, torch.stack([(v == k).sum(1) for k in range(4)], 1))


@case(BU)
def check_b_step_loops(f: Callable) -> None:
    x, e, i = rnd(3, 14), out(3), out(3)
    f(x, e, i)
    same(e, d(x)[:, 0::3].sum(1), 1e-4)
    same(i, d(x)[:, 1:13].sum(1), 1e-4)


@case(BU)
def check_b_step_bound(f: Callable) -> None:
    x, y = rnd(3, 11), out(3)
    f(x, y)
    same(y, d(x)[:, 2::2].sum(1) * 11, 1e-4)


@case(BU)
def check_b_getith(f: Callable) -> None:
    x, y = rnd(4, 7), out(4, 3)
    f(x, y)
    same(y, torch.stack([d(x)[:, 6], d(x)[:, 0], torch.full((4,), 7.0, dtype=torch.float64)], 1))


@case(BU)
def check_b_shapes(f: Callable) -> None:
    x, y = rnd(3, 9), out(3, 9)
    f(x, y)
    v = d(x)
    want = torch.empty(3, 9, dtype=torch.float64)
    for c in range(4):
        want[:, c] = v[:, c] + v[:, 8 - c]
        want[:, 8 - c] = v[:, c] - v[:, 8 - c]
    want[:, 4] = v[:, 4] * 27
    same(y, want)


@case(BU)
def check_b_local_array_pingpong(f: Callable) -> None:
    x, y = rnd(7, 4), out(7, 4)
    f(x, y, 3)
    v = d(x)
    for _ in range(3):
        v = v + v.roll(-1, 1)
    same(y, v, 1e-4)


@case(BU)
def check_b_with_tuple(f: Callable) -> None:
    x, y = rnd(3, 5), out(3, 5)
    f(x, y)
    same(y, d(x).reshape(-1).cumsum(0).reshape(3, 5), 1e-4)


@case(BU)
def check_b_compose_with(f: Callable) -> None:
    x, y = rnd(20), out(20)
    f(x, y)
    same(y, d(x) * (torch.arange(20) // 7 + 1).double())


@case(BU)
def check_b_counts(f: Callable) -> None:
    x, y = rnd(3, 7), out(3)
    f(x, y)
    same(y, d(x).sum(1) / 21 + 4, 1e-4)


@case(BU)
def check_b_slot_events(f: Callable) -> None:
    x, y = rnd(3, 16), out(3, 16)
    f(x, y)
    same(y, torch.cat([d(x)[:, 8:], d(x)[:, :8]], 1))


@case(BU)
def check_b_flags(f: Callable) -> None:
    x, fl = rnd(21), out(21, dtype=I32)
    f(x, fl)
    same(fl, torch.where(d(x) > 0, 1, -1))


# ============================================================================ pipelines (7.8, 7.10)
PI = "pipes.co"


@case(PI)
def check_q_ring2_rows(f: Callable) -> None:
    x, y = rnd(14, 8), out(14, 8)
    f(x, y)
    same(y, d(x))


@case(PI)
def check_q_ring3_gemm(f: Callable) -> None:
    a, b, c = rnd(70, 53, dtype=H), rnd(21, 53, dtype=H), out(70, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-3)


@case(PI)
def check_q_ring4_scale(f: Callable) -> None:
    x, s, y = rnd(11, 45), rnd(45), out(11)
    f(x, s, y)
    same(y, (d(x) * d(s)).sum(1), 1e-4)


@case(PI)
def check_q_async_transp_gemm(f: Callable) -> None:
    a, b, c = rnd(19, 37, dtype=H), rnd(37, 21, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b), 1e-3)


@case(PI)
def check_q_single_slot(f: Callable) -> None:
    x, y = rnd(3, 21), out(3, 21)
    f(x, y)
    same(y, d(x) * (torch.arange(21) // 8 + 1).double())


@case(PI)
def check_q_tma_event_transp(f: Callable) -> None:
    x, y = rnd(13, 10), out(10, 13)
    f(x, y)
    same(y, d(x).T)


@case(PI)
def check_q_ring_order_max(f: Callable) -> None:
    x, y = rnd(9, 30), out(9)
    f(x, y)
    same(y, d(x).max(1).values)


@case(PI)
def check_q_after_chain(f: Callable) -> None:
    x, y = rnd(10, 8), out(10, 8)
    f(x, y)
    same(y, d(x))


# ============================================================================ MMA (7.9)
MM = "mma.co"


def hmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return d(a) @ d(b).T


@case(MM)
def check_m_chunk_k(f: Callable) -> None:
    a, b, c = rnd(19, 45, dtype=H), rnd(21, 45, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, hmm(a, b), 1e-3)


@case(MM)
def check_m_warp_quadrants(f: Callable) -> None:
    a, b, c = rnd(37, 21, dtype=H), rnd(35, 21, dtype=H), out(37, 35)
    f(a, b, c)
    same(c, hmm(a, b), 1e-3)


@case(MM)
def check_m_store_transp(f: Callable) -> None:
    a, b, c = rnd(19, 20, dtype=H), rnd(13, 20, dtype=H), out(13, 19)
    f(a, b, c)
    same(c, hmm(a, b).T, 1e-3)


@case(MM)
def check_m_span_as_operand(f: Callable) -> None:
    flat, b, c = rnd(19 * 21, dtype=H), rnd(20, 30, dtype=H), out(19, 20)
    f(flat, b, c, 21, 12)
    same(c, d(flat).reshape(19, 21) @ padded(b, 20, 21, 0, 12).T, 1e-3)


@case(MM)
def check_m_rowmax_epilogue(f: Callable) -> None:
    a, b, c = rnd(19, 20, dtype=H), rnd(13, 20, dtype=H), out(19, 13)
    f(a, b, c)
    p = hmm(a, b)
    # the fragment is 16 columns wide: its 3 columns past N hold zero products, part of the row maximum
    same(c, p - p.max(1, keepdim=True).values.clamp(min=0), 1e-3)


@case(MM)
def check_m_pad_k(f: Callable) -> None:
    a, b, c = rnd(19, 11, dtype=H), rnd(21, 11, dtype=H), out(19, 21)
    f(a, b, c)
    same(c, hmm(a, b), 1e-3)


@case(MM)
def check_m_colrow_alpha(f: Callable) -> None:
    at, b, c = rnd(21, 19, dtype=H), rnd(13, 21, dtype=H), out(19, 13)
    f(at, b, c, 0.5)
    same(c, 0.5 * d(at).T @ d(b).T, 1e-3)


@case(MM)
def check_m_batched_chunk(f: Callable) -> None:
    a, b, c = rnd(3, 32, 21, dtype=H), rnd(3, 16, 21, dtype=H), out(3, 32, 16)
    f(a, b, c)
    same(c, d(a) @ d(b).transpose(1, 2), 1e-3)


@case(MM)
def check_m_bias_f16(f: Callable) -> None:
    a, b, bias, c = rnd(19, 20, dtype=H), rnd(21, 20, dtype=H), rnd(21), out(19, 21, dtype=H)
    f(a, b, bias, c)
    same(c, (hmm(a, b) + d(bias)).half(), 2e-3)


# ============================================================================ whole kernels (combinations)
CO = "combos.co"


@case(CO)
def check_x_embedding(f: Callable) -> None:
    t, idx, y = rnd(11, 21), rnd(6, dtype=I32, lo=0, hi=11), out(6, 21)
    f(t, idx, y)
    same(y, d(t)[lng(idx)])


@case(CO)
def check_x_scatter_add(f: Callable) -> None:
    g, idx = rnd(9, 13), rnd(9, dtype=I32, lo=0, hi=4)
    acc = torch.zeros(4, 13, device=DEVICE)
    f(g, idx, acc)
    same(acc, torch.zeros(4, 13, dtype=torch.float64).index_add_(0, lng(idx), d(g)), 1e-4)


@case(CO)
def check_x_quantize(f: Callable) -> None:
    x, q, sc = rnd(3, 45), out(3, 45, dtype=torch.int8), out(3)
    f(x, q, sc)
    xf = x.cpu()
    s = xf.abs().max(1).values / 127.0
    v = xf / s[:, None]
    same(sc, s)
    same(q, torch.where(v >= 0, torch.floor(v + 0.5), torch.ceil(v - 0.5)).long())


@case(CO)
def check_x_dequant(f: Callable) -> None:
    q = rnd(3, 21, dtype=torch.int8, lo=-128, hi=128)
    s, z, y = rnd(3), rnd(21, dtype=I32, lo=-5, hi=5), out(3, 21, dtype=H)
    f(q, s, z, y)
    same(y, ((lng(q) - lng(z)).float() * s.cpu()[:, None]).half(), 1e-3)


@case(CO)
def check_x_rope(f: Callable) -> None:
    x, y = rnd(5, 22), out(5, 22)
    f(x, y)
    ang = torch.arange(5).double()[:, None] * 0.5 ** torch.arange(11).double()[None, :]
    a, b = d(x)[:, 0::2], d(x)[:, 1::2]
    want = torch.empty(5, 22, dtype=torch.float64)
    want[:, 0::2] = a * ang.cos() - b * ang.sin()
    want[:, 1::2] = a * ang.sin() + b * ang.cos()
    same(y, want, 1e-4)


@case(CO)
def check_x_top1(f: Callable) -> None:
    x, best = rnd(7, 75), out(7, dtype=I32)
    ev = torch.zeros(1, dtype=I32, device=DEVICE)
    f(x, best, ev)
    am = d(x).argmax(1)
    same(best, am)
    same(ev, (am % 2 == 0).sum().reshape(1))


@case(CO)
def check_x_conv1d(f: Callable) -> None:
    x, w, y = rnd(45), rnd(5), out(45)
    f(x, w, y)
    p = torch.nn.functional.pad(d(x), (2, 2))
    same(y, sum(p[k : k + 45] * d(w)[k] for k in range(5)), 1e-4)


@case(CO)
def check_x_layernorm(f: Callable) -> None:
    x, g, b, y = rnd(3, 77), rnd(77), rnd(77), out(3, 77)
    f(x, g, b, y)
    same(y, torch.nn.functional.layer_norm(d(x), (77,), d(g), d(b), 1e-5), 1e-4)


@case(CO)
def check_x_colsum(f: Callable) -> None:
    x, y = rnd(9, 37), out(37)
    f(x, y)
    same(y, d(x).sum(0), 1e-4)


@case(CO)
def check_x_gelu(f: Callable) -> None:
    x, b, y, z = rnd(45), rnd(45), out(45), out(45)
    f(x, b, y, z)
    v = d(x) + d(b)
    same(y, torch.nn.functional.gelu(v, approximate="tanh"), 1e-4)
    same(z, torch.sigmoid(v) * v, 1e-4)


@case(CO)
def check_x_causal_mask(f: Callable) -> None:
    s, y = rnd(13, 13), out(13, 13)
    f(s, y, 0.25)
    same(y, (d(s) * 0.25).masked_fill(torch.ones(13, 13).triu(1).bool(), float("-inf")))


@case(CO)
def check_x_histogram(f: Callable) -> None:
    x = rnd(150)
    h = torch.zeros(8, dtype=I32, device=DEVICE)
    f(x, h, -2.0, 2.0)
    b = ((x.cpu() + 2.0) / 4.0 * 8.0).trunc().long().clamp(0, 7)
    same(h, torch.bincount(b, minlength=8))


@case(CO)
def check_x_select_blend(f: Callable) -> None:
    a, b, c, y = rnd(14, 8), rnd(14, 8), rnd(14, 8), out(14, 8)
    f(a, b, c, y)
    src = [d(a), d(b), d(c)]
    want = torch.cat([src[p % 3][4 * p : 4 * p + 4] for p in range(4)]) + d(a)
    same(y, want)


@case(CO)
def check_x_block_skip(f: Callable) -> None:
    x, mask, y = rnd(14, 8), torch.tensor([1, 0, 1, 1], dtype=I32, device=DEVICE), out(14, 8)
    f(x, mask, y)
    rows = torch.tensor([bool(mask[r // 4]) for r in range(14)])
    same(y[rows], d(x)[rows] * 2)
    assert torch.isnan(y[~rows]).all(), "a skipped block wrote"


# ============================================================================ more CUDA-style forms
MO = "more.co"


@case(MO)
def check_n_popcount(f: Callable) -> None:
    x, y = u32(45), out(45, dtype=I32)
    f(x, y)
    same(y, torch.tensor([bin(v).count("1") for v in lng(x).tolist()]))


@case(MO)
def check_n_lowbit_rev(f: Callable) -> None:
    x, low, rev = u32(33), uout(33), uout(33)
    f(x, low, rev)
    v = lng(x)
    same(lng(low), v & ((2**32 - v) % 2**32))
    same(lng(rev), torch.tensor([int(f"{int(a) & 255:08b}"[::-1], 2) for a in v.tolist()]))


@case(MO)
def check_n_cas_claim(f: Callable) -> None:
    key = rnd(40, dtype=I32, lo=0, hi=6)
    owner = torch.full((8,), -1, dtype=I32, device=DEVICE)
    won, last = out(40, dtype=I32), out(1, dtype=I32)
    f(key, owner, won, last)
    k, w, o = lng(key), lng(won), lng(owner)
    for s in range(8):
        users = (k == s).nonzero().flatten().tolist()
        winners = [i for i in users if w[i] == 1]
        assert len(winners) == (1 if users else 0), (s, users, winners)
        assert int(o[s]) == (winners[0] if users else -1)
    assert set(w.tolist()) <= {0, 1}


@case(MO)
def check_n_atomic_min(f: Callable) -> None:
    x = rnd(9, 21, dtype=I32)
    lo = torch.full((4,), 1000, dtype=I32, device=DEVICE)
    f(x, lo)
    v = lng(x)
    same(lo, torch.stack([v[b::4].min() for b in range(4)]))


@case(MO)
def check_n_helpers_math(f: Callable) -> None:
    a, b = rnd(45), rnd(45)
    b[3] = 0.0001
    q, m, sp = out(45), out(45), out(45)
    f(a, b, q, m, sp)
    ad, bd = d(a), d(b)
    same(q, torch.where(bd.abs() > 1e-3, ad / bd, 0.0), 1e-4)
    same(m, torch.maximum(ad, torch.maximum(bd, torch.tensor(0.25, dtype=torch.float64))))
    xs = ad * 8
    same(sp, torch.where(xs > 20, xs, torch.log1p(torch.exp(xs))), 1e-4)


@case(MO)
def check_n_float_while(f: Callable) -> None:
    x, steps = rnd(37), out(37, dtype=I32)
    f(x, steps)
    want = []
    for v in (x.cpu() * 10.0).tolist():
        v, n = torch.tensor(v, dtype=torch.float32), 0
        while abs(float(v)) >= 0.1 and n < 20:
            v, n = v / 2.0, n + 1
        want.append(n)
    same(steps, torch.tensor(want))


@case(MO)
def check_n_row_until(f: Callable) -> None:
    x, y = rnd(5, 13), out(5)
    f(x, y, 1.0)
    want = []
    for row in d(x).tolist():
        s = 0.0
        for v in row:
            if v < 0:
                continue
            if v > 1.0:
                break
            s += v
        want.append(s)
    same(y, torch.tensor(want, dtype=torch.float64), 1e-5)


@case(MO)
def check_n_assert_print(f: Callable) -> None:
    x, y = rnd(29), out(29)
    f(x, y, 3)
    same(y, d(x) * 3)


@case(MO)
def check_n_named_loop_windows(f: Callable) -> None:
    x, y = rnd(3, 14), out(3, 14)
    f(x, y)
    same(y, d(x) - torch.nn.functional.pad(d(x), (4, 0))[:, :14])


@case(MO)
def check_n_span_as_elements(f: Callable) -> None:
    x, y = rnd(3, 20), out(5)
    f(x, y)
    same(y, (d(x).reshape(5, 12) * torch.arange(12).double()).sum(1), 1e-4)


@case(MO)
def check_n_register_reverse(f: Callable) -> None:
    x, y = rnd(7, 6), out(7, 6)
    f(x, y, 4)
    regs = torch.cat([d(x)[:, :4], torch.zeros(7, 2, dtype=torch.float64)], 1)
    same(y, regs.flip(1))


@case(MO)
def check_n_flat_split(f: Callable) -> None:
    x, y = rnd(5, 7), out(5, 7)
    f(x, y)
    same(y, d(x) + (torch.arange(5)[:, None] * 100 + torch.arange(7)[None, :]).double())


@case(MO)
def check_n_flag_chain(f: Callable) -> None:
    x, y = rnd(37), out(37)
    f(x, y)
    same(y, d(x).sign() * d(x).abs().sqrt())


@case(MO)
def check_n_exchange(f: Callable) -> None:
    slots, old = rnd(6, dtype=I32), out(6, dtype=I32)
    before = lng(slots).clone()
    f(slots, old)
    same(old, before)
    same(slots, torch.arange(6) * 10)


# ============================================================================ warp roles (7.4, 7.10)
RO = "roles.co"


@case(RO)
def check_r_beside(f: Callable) -> None:
    x, y, s = rnd(3, 16), out(3, 16), out(3)
    f(x, y, s)
    same(y, torch.cat([d(x)[:, 8:], d(x)[:, :8]], 1))
    same(s, d(x).sum(1), 1e-4)


@case(RO)
def check_r_no_events(f: Callable) -> None:
    x, a, b = rnd(10, 8), out(10, 8), out(10, 8)
    f(x, a, b)
    same(a, d(x) * 2)
    same(b, -d(x))


@case(RO)
def check_r_elected(f: Callable) -> None:
    x, y = rnd(3, 32), out(3, 32)
    f(x, y)
    same(y, d(x).flip(1) + d(x))


@case(RO)
def check_r_tma_halves(f: Callable) -> None:
    x, y = rnd(13, 16), out(13, 2)
    f(x, y)
    same(y, d(x).reshape(13, 2, 8).sum(2), 1e-4)


@case(RO)
def check_r_ranges(f: Callable) -> None:
    x, h, t = rnd(3, 32), out(3, 8), out(3, 24)
    f(x, h, t)
    same(h, d(x)[:, :8] + 1)
    same(t, d(x)[:, 8:] - 1)


@case(RO)
def check_r_two_consumers(f: Callable) -> None:
    x, lo, hi = rnd(9, 21), out(9), out(9)
    f(x, lo, hi)
    p = torch.nn.functional.pad(d(x), (0, 3)).reshape(9, 3, 8)
    same(lo, p[:, :, :4].sum((1, 2)), 1e-4)
    same(hi, p[:, :, 4:].sum((1, 2)), 1e-4)


# ============================================================================ more views (7.6)
V2 = "views2.co"


@case(V2)
def check_v2_chunk_at(f: Callable) -> None:
    x, y = rnd(10, 9), out(10, 9)
    f(x, y)
    same(y[:9, :8], d(x)[:9, :8])
    assert torch.isnan(y[9]).all() and torch.isnan(y[:, 8]).all(), "the remainder of the chunks was written"


@case(V2)
def check_v2_step2d(f: Callable) -> None:
    x, y = rnd(8, 10), out(6, 9)
    f(x, y)
    p = padded(x, 9, 12)
    want = torch.empty(6, 9, dtype=torch.float64)
    for i in range(3):
        for j in range(3):
            want[2 * i : 2 * i + 2, 3 * j : 3 * j + 3] = p[3 * i : 3 * i + 2, 4 * j : 4 * j + 3]
    same(y, want)


@case(V2)
def check_v2_explicit_strides(f: Callable) -> None:
    x, y = rnd(16, 12), out(4, 3)
    f(x, y)
    flat = d(x).reshape(-1)
    same(y, torch.stack([torch.stack([flat[27 + 24 * i + 3 * j] for j in range(3)]) for i in range(4)]))


@case(V2)
def check_v2_view_of_view(f: Callable) -> None:
    x, y = rnd(6, 7), out(4, 3)
    f(x, y, 3)
    same(y, padded(x, 4, 3, 3, 2))


@case(V2)
def check_v2_span_as_mma(f: Callable) -> None:
    flat, b, c = rnd(24 * 32, dtype=H), rnd(16, 32, dtype=H), out(24, 16)
    f(flat, b, c)
    same(c, d(flat).reshape(24, 32) @ d(b).T, 1e-3)


@case(V2)
def check_v2_tma_store_window(f: Callable) -> None:
    x, y = rnd(7, 8), out(12, 11)
    f(x, y, 3, 5)
    assert torch.isnan(y[:3]).all() and torch.isnan(y[10:]).all() and torch.isnan(y[:, :5]).all()
    same(y[3:10, 5:11], d(x)[:, :6])


@case(V2)
def check_v2_modspan_at(f: Callable) -> None:
    x, y = rnd(10, 7), out(2, 1)
    f(x, y)
    same(y, d(x)[8:10, 6:7])


@case(V2)
def check_v2_compose_chunk(f: Callable) -> None:
    x, y = rnd(72), out(8)
    f(x, y)
    same(y, d(x).reshape(8, 9).sum(1), 1e-4)


@case(V2)
def check_v2_span_as_window(f: Callable) -> None:
    x, y = rnd(30), out(6, 4)
    f(x, y)
    same(y, padded(x.reshape(6, 5), 6, 4, 1, 1))


@case(V2)
def check_v2_global_transp(f: Callable) -> None:
    x, y = rnd(10, 7), out(7, 10)
    f(x, y)
    same(y, d(x).T)


# ============================================================================ C conversions (4.4, 7.7)
AR = "arith.co"


@case(AR)
def check_a_signed_vs_unsigned(f: Callable) -> None:
    a, b, y = rnd(40, dtype=I32), u32(40), out(40, dtype=I32)
    b[:5] = torch.tensor([1, 0, 5, 2**31, 7], dtype=torch.int64).to(U32)
    f(a, b, y)
    same(y, ((lng(a) % 2**32) < lng(b)).long())


@case(AR)
def check_a_u8_shift(f: Callable) -> None:
    x = rnd(40, dtype=torch.uint8, lo=0, hi=256)
    w, n = out(40, dtype=torch.uint16), out(40, dtype=torch.uint8)
    f(x, w, n)
    same(lng(w), lng(x) * 16)
    same(n, (lng(x) * 16) % 256)


@case(AR)
def check_a_s16_products(f: Callable) -> None:
    a = rnd(40, dtype=torch.int16, lo=-300, hi=300)
    b = rnd(40, dtype=torch.int16, lo=-300, hi=300)
    nr, wd = out(40, dtype=torch.int16), out(40, dtype=I32)
    f(a, b, nr, wd)
    p = lng(a) * lng(b)
    same(wd, p)
    same(nr, (p + 2**15) % 2**16 - 2**15)


@case(AR)
def check_a_s64_div(f: Callable) -> None:
    x = rnd(30, dtype=I64, lo=-(10**6), hi=10**6) * 10**6
    u = u32(30)
    q, r, top = out(30, dtype=I64), out(30, dtype=I64), uout(30)
    f(x, q, r, u, top)
    v = lng(x)
    same(q, ctrunc(v, 7))
    same(r, v - ctrunc(v, 7) * 7)
    same(lng(top), lng(u) >> 31)


@case(AR)
def check_a_to_u16(f: Callable) -> None:
    x, y = rnd(30, dtype=I32, lo=-70000, hi=70000), out(30, dtype=torch.uint16)
    x[0], x[1] = -1, 70000
    f(x, y)
    same(lng(y), lng(x) % 65536)


@case(AR)
def check_a_f16_sum(f: Callable) -> None:
    a, b, y, z = rnd(40, dtype=H), rnd(40, dtype=H), out(40, dtype=H), out(40)
    f(a, b, y, z)
    same(y, (a.cpu().float() + b.cpu().float()).half(), 0)
    # f16 arithmetic stays f16 (docs/precision.md, as CUDA's __half operators): the product is rounded
    same(z, (a.cpu().float() * b.cpu().float()).half(), 0)


@case(AR)
def check_a_bf16_axpy(f: Callable) -> None:
    bf = torch.bfloat16
    x, y, z = rnd(40, dtype=bf), rnd(40, dtype=bf), out(40, dtype=bf)
    f(x, y, z, 0.75)
    same(z, (0.75 * x.cpu().float() + y.cpu().float()).to(bf), 1e-2)


@case(AR)
def check_a_runtime_mod(f: Callable) -> None:
    x = rnd(40, dtype=I32)
    for m in (5, -7):
        y = out(40, dtype=I32)
        f(x, y, m)
        v = lng(x)
        same(y, v - ctrunc(v, m) * m + (1000 if m < 0 else 0))


@case(AR)
def check_a_float_u8(f: Callable) -> None:
    x, y, back = rnd(40), out(40, dtype=torch.uint8), out(40)
    f(x, y, back)
    v = (x.cpu().abs() * 50.0).trunc().long()
    same(y, v)
    same(back, v.double() / 2)


@case(AR)
def check_a_int_mean(f: Callable) -> None:
    x, y = rnd(4, 9, dtype=I32), out(4, dtype=I32)
    f(x, y)
    same(y, ctrunc(lng(x).sum(1), 9))


# ============================================================================ futures between launches (7.8, 8)
H2 = "host2.co"


@case(H2)
def check_h2_future_buffer(f: Callable) -> None:
    x, y = rnd(3, 19), out(3, 19)
    f(x, y)
    same(y, d(x) * 3)


@case(H2)
def check_h2_any_swap(f: Callable) -> None:
    x, y = rnd(21), out(21)
    f(x, y, 3)
    same(y, d(x) + 3)


@case(H2)
def check_h2_span_as_host(f: Callable) -> None:
    x, y = rnd(24), out(24)
    f(x, y)
    same(y, d(x).reshape(6, 4).T.reshape(-1))


@case(H2)
def check_h2_return_window(f: Callable) -> None:
    x = rnd(5, 7)
    r = f(x, 4)
    same(r, padded(x, 2, 7, 4))


@case(H2)
def check_h2_chain(f: Callable) -> None:
    x, y = rnd(4, 21), out(4, 21)
    f(x, y)
    same(y, d(x).cumsum(0), 1e-5)


# ============================================================================ pipelines with combinations (7.10)
Q2 = "pipes2.co"


@case(Q2)
def check_q2_flat_rows(f: Callable) -> None:
    x, y = rnd(7 * 12), out(7)
    f(x, y)
    same(y, d(x).reshape(7, 12).sum(1), 1e-4)


@case(Q2)
def check_q2_gemm_scale(f: Callable) -> None:
    a, b, s, c = rnd(70, 37, dtype=H), rnd(21, 37, dtype=H), rnd(70), out(70, 21, dtype=H)
    f(a, b, s, c)
    same(c, ((d(a) @ d(b).T) * d(s)[:, None]).half(), 5e-3)


@case(Q2)
def check_q2_column_strips(f: Callable) -> None:
    x, y = rnd(11, 17), out(11)
    f(x, y, 7)
    same(y, padded(x, 11, 12, 0, 7).sum(1), 1e-4)


# ============================================================================ small forms combined
MI = "misc.co"


@case(MI)
def check_z_bounds(f: Callable) -> None:
    x, y = rnd(5, 19), out(5, 19)
    f(x, y)
    same(y, d(x) + 50 + (torch.arange(5) == 4).double()[:, None])


@case(MI)
def check_z_c_cast(f: Callable) -> None:
    x, y = rnd(37, dtype=I32), uout(37)
    f(x, y)
    same(lng(y), (lng(x) % 2**32) >> 1)


@case(MI)
def check_z_select_buffers(f: Callable) -> None:
    a, b, y = rnd(5, 8), rnd(5, 8), out(5, 8)
    f(a, b, y)
    same(y, torch.where((torch.arange(5) % 2 == 0)[:, None], d(a), d(b)))


@case(MI)
def check_z_tuple_index(f: Callable) -> None:
    x, y = rnd(10, 13), out(10, 13)
    f(x, y)
    same(y, padded(x, 10, 13, 4, 4))


@case(MI)
def check_z_macro_extents(f: Callable) -> None:
    x, y = rnd(13, 10), out(13, 10)
    f(x, y)
    same(y, d(x))


# ============================================================================ the test
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("cid", PROBE.params())
def test_probe5(cid: str, schedule: str) -> None:
    PROBE.run(cid, schedule)
