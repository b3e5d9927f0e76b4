"""Probe 9 of the language (issue 28): kernels in forms the earlier probes wrote least
(tests/programs/probe9/*.co): gathers and scatters by index tensors, atomics into shared memory then
global memory, a thread per row keeping its top two, CSR rows read by a warp, a bitonic sort in shared
memory, compaction by a ballot and offsets of a first launch, embedding bags, MoE routing and block
alignment (counts, padded offsets, slots claimed by atomics), a grouped GEMM of f8_e4m3 operands with
scales, per-row and per-group quantisation and dequantisation; host loops of launches, copies between
them and host reads of what they wrote; pipelines of two producers, alternate consumers, rings in
nested loops and persistent tile loops; C's integer and float corners; CUDA intrinsics called
directly, helpers returning ``auto``, CUDA's float math (truncf, log2f, erff, hypotf, ...), integer
intrinsics (__umulhi, __funnelshift_l, __byte_perm, ...) and warp reductions. Each runs in both
schedules in the interpreter on ragged sizes with random inputs, outputs poisoned, compared with a
float64 (or exact integer) reference written from the language's meaning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from kernel_util import DEVICE
from probe_util import SCHEDULES, Probe, cdiv, d, out, same

PROBE = Probe(Path(__file__).parent / "programs" / "probe9", seed=9)
case, rnd = PROBE.case, PROBE.rnd
I32, U32, U8, I16, F16 = torch.int32, torch.uint32, torch.uint8, torch.int16, torch.float16
F8 = torch.float8_e4m3fn
RNG = np.random.default_rng(90)


def dev(t: torch.Tensor) -> torch.Tensor:
    return t.to(DEVICE)


def u32(v: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(v.astype(np.int64)).to(U32).to(DEVICE)


def as_u32(t: torch.Tensor) -> list:
    return (t.cpu().to(torch.int64).numpy() & 0xFFFFFFFF).tolist()


def ints(lo: int, hi: int, *shape: int, dtype: torch.dtype = I32) -> torch.Tensor:
    return dev(torch.from_numpy(RNG.integers(lo, hi, shape)).to(dtype))


def f8(*shape: int) -> torch.Tensor:
    return (rnd(*shape) * 4).to(F8)


G = "irregular.co"


@case(G)
def check_g_embed(f: Callable) -> None:
    v, dim, t = 11, 45, 13
    table, ids, y = rnd(v, dim), ints(0, v, t), out(t, dim)
    f(ids, table, y)
    same(y, d(table)[ids.cpu().long()])


@case(G)
def check_g_index_cols(f: Callable) -> None:
    x, cols, y = rnd(9, 23), ints(0, 23, 35), out(9, 35)
    f(x, cols, y, 1.5)
    same(y, 1.5 * d(x)[:, cols.cpu().long()])


@case(G)
def check_g_scatter_add(f: Callable) -> None:
    n, m, dim = 29, 6, 50
    x, dst, y = rnd(n, dim), ints(0, m, n), rnd(m, dim)
    want = d(y).index_add(0, dst.cpu().long(), d(x))
    f(x, dst, y)
    same(y, want, 1e-4)


@case(G)
def check_g_histogram(f: Callable) -> None:
    n, b = 333, 37
    x, h = ints(0, 1000, n), dev(torch.zeros(b, dtype=I32))
    h[3] = 5  # the histogram adds to what it holds
    want = torch.bincount(x.cpu().long() % b, minlength=b)
    want[3] += 5
    f(x, h)
    same(h, want)


@case(G)
def check_g_top2(f: Callable) -> None:
    x, v, ix = rnd(37, 19), out(37, 2), out(37, 2, dtype=I32)
    f(x, v, ix)
    top = d(x).topk(2, dim=1)
    same(v, top.values)
    same(ix, top.indices)


@case(G)
def check_g_masked_fill(f: Callable) -> None:
    x, m, y = rnd(7, 45), ints(0, 2, 7, 45, dtype=U8), out(7, 45)
    f(x, m, y, -3.25)
    same(y, torch.where(m.cpu().bool(), torch.tensor(-3.25, dtype=torch.float64), d(x)))


@case(G)
def check_g_csr_spmv(f: Callable) -> None:
    r, c = 13, 40
    dense = torch.randn(r, c, generator=PROBE.gen, dtype=torch.float64)
    dense[torch.rand(r, c, generator=PROBE.gen) < 0.6] = 0
    dense[4] = 0  # an empty row
    dense[7, :] = torch.randn(c, generator=PROBE.gen, dtype=torch.float64)  # a row longer than a warp
    nz = dense.nonzero()
    rowptr = torch.zeros(r + 1, dtype=torch.int64)
    rowptr[1:] = torch.bincount(nz[:, 0], minlength=r).cumsum(0)
    val = dense[nz[:, 0], nz[:, 1]].float()
    x, y = rnd(c), out(r)
    f(dev(rowptr.to(I32)), dev(nz[:, 1].to(I32)), dev(val), x, y)
    same(y, dense @ d(x), 1e-4)


@case(G)
def check_g_bitonic(f: Callable) -> None:
    x, y = rnd(5, 53), out(5, 53)
    f(x, y)
    same(y, d(x).sort(1).values)


@case(G)
def check_g_compact(f: Callable) -> None:
    n = 150
    nb = cdiv(n, 32)
    x, cnt, y = rnd(n), out(nb, dtype=I32), out(n)
    f(x, cnt, y)
    xs = x.cpu()
    pos = xs[xs > 0]
    same(cnt, torch.nn.functional.pad(xs > 0, (0, nb * 32 - n)).reshape(nb, 32).sum(1))
    same(y[: len(pos)], d(pos))
    assert torch.isnan(y[len(pos) :].cpu()).all()


M = "moe.co"


def routed(eid: torch.Tensor, e: int) -> tuple[torch.Tensor, torch.Tensor]:
    cnt = torch.bincount(eid.cpu().long(), minlength=e)
    off = torch.zeros(e + 1, dtype=torch.int64)
    off[1:] = cnt.cumsum(0)
    return cnt, off


@case(M)
def check_m_route(f: Callable) -> None:
    t, e = 141, 7
    eid = ints(0, e, t)
    eid[eid == 5] = 2  # an expert with no tokens
    cnt, fill, order = dev(torch.zeros(e, dtype=I32)), out(e, dtype=I32), out(t, dtype=I32)
    off = out(e + 1, dtype=I32)
    f(eid, cnt, off, fill, order)
    want_cnt, want_off = routed(eid, e)
    same(cnt, want_cnt)
    same(off, want_off)
    same(fill, want_cnt)
    o, ids = order.cpu().long(), eid.cpu().long()
    for x in range(e):
        got = sorted(o[want_off[x] : want_off[x + 1]].tolist())
        assert got == (ids == x).nonzero().flatten().tolist(), (x, got)


@case(M)
def check_m_grouped_fp8(f: Callable) -> None:
    t, k, n, e = 21, 19, 35, 4
    eid = ints(0, e, t)
    cnt, off = routed(eid, e)
    order = torch.argsort(eid.cpu().long(), stable=True)
    a, w = f8(t, k), f8(e, n, k)
    sa, sw = rnd(t).abs() + 0.1, rnd(e).abs() + 0.1
    y = out(t, n)
    f(a, sa, w, sw, dev(order.to(I32)), dev(off.to(I32)), y)
    ex = eid.cpu().long()[order]
    want = torch.stack([d(a)[order[j]] @ d(w)[ex[j]].T * d(sa)[order[j]] * d(sw)[ex[j]] for j in range(t)])
    same(y, want, 1e-4)


@case(M)
def check_m_quant_rows(f: Callable) -> None:
    x = rnd(6, 77)
    x[2] = 0  # an all-zero row keeps scale 1
    q, s = dev(torch.full((6, 77), float("nan")).to(F8)), out(6)
    f(x, q, s)
    amax = d(x).abs().amax(1)
    want_s = torch.where(amax > 0, amax.float() / 448.0, torch.ones(6)).double()
    same(s, want_s)
    want_q = (x.cpu() / s.cpu()[:, None]).to(F8)
    same(q.float(), want_q.double())


@case(M)
def check_m_dequant_blocks(f: Callable) -> None:
    r, c = 5, 37
    cb = cdiv(c, 16)
    q, s, y = f8(r, c), rnd(r, cb), out(r, c, dtype=F16)
    f(q, s, y)
    want = (d(q) * d(s).repeat_interleave(16, 1)[:, :c]).float().half()
    same(y, want.double(), 1e-3)


@case(M)
def check_m_combine(f: Callable) -> None:
    t, dim, s = 17, 41, 40
    eo, slot, gate, y = rnd(s, dim), ints(0, s, t, 2), rnd(t, 2), out(t, dim)
    f(eo, slot, gate, y)
    sl = slot.cpu().long()
    same(y, d(gate)[:, :1] * d(eo)[sl[:, 0]] + d(gate)[:, 1:] * d(eo)[sl[:, 1]], 1e-5)


@case(M)
def check_m_silu_mul_fp8(f: Callable) -> None:
    r, dim = 5, 70
    x, s, y = f8(r, 2 * dim), rnd(r).abs() * 0.3, out(r, dim, dtype=F16)
    f(x, s, y)
    v = d(x) * d(s)[:, None]
    g, u = v[:, :dim], v[:, dim:]
    same(y, g * torch.sigmoid(g) * u, 2e-3)


H = "host.co"


@case(H)
def check_h_smooth_steps(f: Callable) -> None:
    n, k = 37, 4
    x, y = rnd(n), out(n)
    f(x, y, k)
    a = d(x)
    for _ in range(k):
        left = torch.cat([a[:1], a[:-1]])
        right = torch.cat([a[1:], a[-1:]])
        a = 0.25 * left + 0.5 * a + 0.25 * right
    same(y, a, 1e-5)


@case(H)
def check_h_row_blocks(f: Callable) -> None:
    x, y = rnd(14, 37), out(14, 37)
    f(x, y, 0.5)
    scale = (torch.arange(14) // 4).double() + 0.5
    same(y, d(x) * scale[:, None])


@case(H)
def check_h_column_out(f: Callable) -> None:
    x, y = rnd(9, 40), out(9, 40)
    f(x, y, 7)
    same(y, d(x) - d(x)[:, 7:8])


@case(H)
def check_h_scan_steps(f: Callable) -> None:
    n = 300
    x, y = ints(-50, 50, n), out(n, dtype=I32)
    f(x, y)
    same(y, x.cpu().long().cumsum(0))


@case(H)
def check_h_tile_roundtrip(f: Callable) -> None:
    x, y = rnd(11, 19), out(11, 19)
    f(x, y)
    want = d(x).clone()
    want[0:4, 0:8] = -d(x)[4:8, 8:16]
    same(y, want)


@case(H)
def check_h_scalars(f: Callable) -> None:
    n, k = 47, 5
    x, y = rnd(n), out(n)
    f(x, y, 2.5, k)
    m = n // k
    want = torch.where(torch.arange(n) < m, 2.5 * d(x), d(x))
    want[::k] += m
    same(y, want, 1e-5)


Q = "pipes.co"


@case(Q)
def check_q_two_producers(f: Callable) -> None:
    x, w, y = rnd(19, 53), rnd(19, 53), out(19)
    f(x, w, y)
    same(y, (d(x) * d(w)).sum(1), 1e-4)


@case(Q)
def check_q_nested_ring(f: Callable) -> None:
    for ob in (1, 3):
        x, y = rnd(27, 21), out(27)
        f(x, y, ob)
        same(y, d(x).sum(1), 1e-4)


@case(Q)
def check_q_persistent_rowmax(f: Callable) -> None:
    x, y = rnd(75, 37), out(75)
    f(x, y)
    same(y, d(x).amax(1))


@case(Q)
def check_q_persistent_reverse(f: Callable) -> None:
    x, y = rnd(333), out(333)
    f(x, y)
    same(y, d(x).flip(0))


CI = "cints.co"
MASK = 0xFFFFFFFF


@case(CI)
def check_i_u32_wrap(f: Callable) -> None:
    n = 45
    a, b = RNG.integers(0, 2**32, n, dtype=np.uint64), RNG.integers(0, 2**32, n, dtype=np.uint64)
    a[:3], b[:3] = [0, 1, MASK], [1, MASK, MASK]
    y = out(n, 4, dtype=U32)
    f(u32(a), u32(b), y)
    aa, bb = [int(v) for v in a], [int(v) for v in b]
    want = [[(p - q) & MASK, (p * q) & MASK, (p + q) & MASK, (-p) & MASK] for p, q in zip(aa, bb, strict=True)]
    assert as_u32(y) == want


@case(CI)
def check_i_runtime_shifts(f: Callable) -> None:
    n = 45
    u = RNG.integers(0, 2**32, n, dtype=np.uint64)
    s, k = ints(-(2**31), 2**31 - 1, n), ints(0, 32, n)
    yu, ys = out(n, 2, dtype=U32), out(n, 2, dtype=I32)
    f(u32(u), s, k, yu, ys)
    ks, ss = k.cpu().tolist(), s.cpu().tolist()
    assert as_u32(yu) == [[int(a) >> sh, (int(a) << sh) & MASK] for a, sh in zip(u, ks, strict=True)]
    assert ys.cpu().tolist() == [[a >> sh, (a & 255) << (sh % 16)] for a, sh in zip(ss, ks, strict=True)]


@case(CI)
def check_i_mixed_compare(f: Callable) -> None:
    n = 40
    s = ints(-(2**31), 2**31 - 1, n)
    u = RNG.integers(0, 2**32, n, dtype=np.uint64)
    s[:4] = torch.tensor([-1, 5, -7, 0])
    u[:4] = [1, 3, 0xFFFFFFF0, 0]
    y = out(n, 2, dtype=I32)
    f(s, u32(u), y)
    want = [[int((a & MASK) < int(b)), int(a < int(b))] for a, b in zip(s.cpu().tolist(), u, strict=True)]
    assert y.cpu().tolist() == want


@case(CI)
def check_i_div_mod(f: Callable) -> None:
    n = 50
    a, b = ints(-1000, 1000, n), ints(-9, 10, n)
    b[b == 0] = 3
    y = out(n, 4, dtype=I32)
    f(a, b, y)

    def cdv(p: int, q: int) -> int:
        r = abs(p) // abs(q)
        return r if (p >= 0) == (q > 0) else -r

    want = [
        [cdv(p, q), p - cdv(p, q) * q, cdv(p, 7), p - cdv(p, -7) * -7]
        for p, q in zip(a.cpu().tolist(), b.cpu().tolist(), strict=True)
    ]
    assert y.cpu().tolist() == want


@case(CI)
def check_i_float_to_int(f: Callable) -> None:
    n = 45
    x = rnd(n) * 40
    x[:6] = torch.tensor([-2.5, 2.5, -0.5, 0.5, -3.7, 3.7])
    y, b = out(n, 3, dtype=I32), out(n, dtype=U8)
    f(x, y, b)
    xs = x.cpu().double()
    # __round is C's roundf: halves away from zero
    rounded = torch.sign(xs) * torch.floor(xs.abs() + 0.5)
    want = torch.stack([torch.trunc(xs), torch.floor(xs), rounded], 1).long()
    same(y, want)
    same(b, torch.trunc(xs.abs()).long())


@case(CI)
def check_i_nan_compare(f: Callable) -> None:
    n, r = 40, 5
    x = rnd(n)
    x[[1, 8, 9, 30]] = float("nan")
    x[16:24] = float("nan")  # a whole group of NaN: its max stays -inf
    y, m = out(n, 3, dtype=I32), out(r)
    f(x, y, m)
    xs = x.cpu()
    nan = torch.isnan(xs)
    same(y, torch.stack([(xs < 0).long(), nan.long(), (xs >= 0).long()], 1))
    g = xs.reshape(r, 8)
    want = torch.where(torch.isnan(g), torch.tensor(float("-inf")), g).amax(1)
    same(m, want.double())


@case(CI)
def check_i_hash_bucket(f: Callable) -> None:
    r, c, b = 37, 11, 13
    x = ints(0, 256, r, c, dtype=U8)
    h, bucket = out(r, dtype=U32), out(r, dtype=I32)
    f(x, h, bucket, b)
    want = []
    for row in x.cpu().tolist():
        a = 2166136261
        for v in row:
            a = ((a ^ v) * 16777619) & MASK
        want.append(a)
    assert as_u32(h) == want
    assert bucket.cpu().tolist() == [a % b for a in want]


@case(CI)
def check_i_short_promote(f: Callable) -> None:
    n = 45
    a, b = ints(-(2**15), 2**15, n, dtype=I16), ints(-(2**15), 2**15, n, dtype=I16)
    a[0], b[0] = 32767, 32767
    w, nn = out(n, dtype=I32), out(n, dtype=I16)
    f(a, b, w, nn)
    s = a.cpu().long() + b.cpu().long()
    same(w, s)
    same(nn, ((s + 2**15) % 2**16) - 2**15)


D = "cuda.co"


def brev32(a: int) -> int:
    return int(f"{a:032b}"[::-1], 2)


@case(D)
def check_d_bits_direct(f: Callable) -> None:
    n = 45
    v = RNG.integers(0, 2**32, n, dtype=np.uint64)
    v[:4] = [0, 1, MASK, 0x80000000]
    y, r = out(n, 3, dtype=I32), out(n, dtype=U32)
    f(u32(v), y, r)
    w = [int(a) for a in v]
    assert y.cpu().tolist() == [[bin(a).count("1"), 32 - a.bit_length(), (a & -a).bit_length()] for a in w]
    assert as_u32(r) == [brev32(a) for a in w]


@case(D)
def check_d_shfl_down_direct(f: Callable) -> None:
    x, y = rnd(6, 77), out(6)
    f(x, y)
    same(y, d(x).sum(1), 1e-4)


@case(D)
def check_d_convert_direct(f: Callable) -> None:
    n = 40
    x = rnd(n) * 10
    x[:4] = torch.tensor([2.5, 3.5, -2.5, -0.5])
    rn, bits, q = out(n, dtype=I32), out(n, dtype=U32), out(n)
    f(x, rn, bits, q)
    xs = x.cpu()
    same(rn, torch.round(xs.double()).long())  # (torch rounds half to even, as __float2int_rn)
    assert as_u32(bits) == (xs.view(torch.int32).long() & MASK).tolist()
    same(q, d(x).clamp(min=0))


@case(D)
def check_d_auto_helpers(f: Callable) -> None:
    n = 37
    a, b = ints(-1000, 1000, n), rnd(n)
    sa, m = out(n, dtype=I32), out(n)
    f(a, b, sa, m)
    same(sa, a.cpu().long() ** 2)
    same(m, 0.5 * (d(b) ** 2 + d(b)), 1e-5)


@case(D)
def check_d_cas_multiply(f: Callable) -> None:
    n, b = 150, 7
    x = RNG.integers(0, 2**32, n, dtype=np.uint64) | 1
    bkt = ints(0, b, n)
    prod = u32(RNG.integers(1, 2**32, b, dtype=np.uint64))
    want = [int(v) for v in prod.cpu().to(torch.int64)]
    for v, k in zip(x, bkt.cpu().tolist(), strict=True):
        want[k] = (want[k] * int(v)) & MASK
    f(u32(x), bkt, prod)
    assert as_u32(prod) == want


@case(D)
def check_d_vote_direct(f: Callable) -> None:
    x = rnd(5, 32)
    x[3] = -x[3].abs()  # a row with no positive value
    rank, cnt = out(5, 32, dtype=I32), out(5, dtype=I32)
    f(x, rank, cnt)
    pos = x.cpu() > 0
    want = torch.where(pos, pos.long().cumsum(1) - 1, torch.full((5, 32), -1))
    same(rank, want)
    same(cnt, pos.sum(1))


F = "cmath.co"


def rint(v: torch.Tensor) -> torch.Tensor:
    return torch.round(v)  # (half to even, as C's rintf)


@case(F)
def check_f_roundings(f: Callable) -> None:
    n = 45
    x = rnd(n) * 8
    x[:8] = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.7, 3.2, -0.4])
    y = out(n, 3)
    f(x, y)
    xs = x.cpu().double()
    same(y, torch.stack([torch.trunc(xs), rint(xs), rint(xs) - torch.trunc(xs)], 1))
    assert torch.signbit(y[7, 0].cpu()) and torch.signbit(y[7, 1].cpu())  # -0.4: -0.0 both ways


@case(F)
def check_f_transcendentals(f: Callable) -> None:
    n = 70
    x, z = rnd(n) * 2, rnd(n) * 3
    z[z.abs() < 0.05] = 0.5
    y = out(n, 7)
    f(x, z, y)
    v, w = d(x), d(z)
    a = v.abs() + torch.tensor(0.01, dtype=torch.float32).double()
    want = torch.stack(
        [
            torch.log2(a) + 10 * torch.log10(a),
            10**v,
            0.5 * v * (1 + torch.erf(v * 0.70710678)),
            torch.hypot(v, w),
            torch.fmod(d(7 * x), w),
            torch.copysign(torch.sign(v) * v.abs() ** (1 / 3), w),
            (v - w).clamp(min=0),
        ],
        1,
    )
    same(y, want, 2e-5)


@case(F)
def check_f_classify(f: Callable) -> None:
    n = 40
    x = rnd(n)
    x[:5] = torch.tensor([float("nan"), float("-inf"), float("inf"), -0.0, -1e30])
    c = out(n, dtype=I32)
    f(x, c)
    xs = x.cpu()
    want = torch.full((n,), 3)
    want[torch.isnan(xs)] = 0
    want[xs == float("-inf")] = 1
    want[xs == float("inf")] = 2
    same(c, want)


@case(F)
def check_f_haxpy(f: Callable) -> None:
    n = 45
    x, y, z = rnd(n).half(), rnd(n).half(), out(n, dtype=F16)
    f(x, y, z, 1.7)
    a = torch.tensor(1.7).half()
    want = ((a.float() * x.cpu().float()).half().float() + y.cpu().float()).half()
    same(z, want.double())


R2 = "irregular2.co"


@case(R2)
def check_r_argmax_warp(f: Callable) -> None:
    x = rnd(9, 77)
    x[3, 40] = x[3, 10] = x[3].max() + 1  # a tie: the smaller index
    am, mx = out(9, dtype=I32), out(9)
    f(x, am, mx)
    same(mx, d(x).amax(1))
    want = [int((row == row.max()).nonzero()[0]) for row in x.cpu()]
    assert am.cpu().tolist() == want


@case(R2)
def check_r_embedding_bag(f: Callable) -> None:
    v, dim, bags = 13, 45, 6
    lens = [3, 0, 5, 1, 7, 2]
    off = torch.tensor([0, *np.cumsum(lens)], dtype=torch.int64)
    n = int(off[-1])
    table, ids, w, y = rnd(v, dim), ints(0, v, n), rnd(n), out(bags, dim)
    f(table, ids, w, dev(off.to(I32)), y)
    want = torch.zeros(bags, dim, dtype=torch.float64)
    for b in range(bags):
        for k in range(int(off[b]), int(off[b + 1])):
            want[b] += d(w)[k] * d(table)[int(ids[k])]
    same(y, want, 1e-5)


@case(R2)
def check_r_gather3(f: Callable) -> None:
    x, idx, y = rnd(3, 4, 11), ints(0, 11, 3, 4, 21, dtype=torch.int64), out(3, 4, 21)
    f(x, idx, y)
    same(y, torch.gather(d(x), 2, idx.cpu()))


@case(R2)
def check_r_moe_align(f: Callable) -> None:
    t, e, bs = 77, 5, 8
    eid = ints(0, e, t)
    eid[eid == 3] = 1  # an expert with no tokens
    counts = torch.bincount(eid.cpu().long(), minlength=e)
    padded = (counts + bs - 1) // bs * bs
    p_max = t + e * (bs - 1)
    pb = cdiv(p_max, bs)
    cnt, poff, total = dev(torch.zeros(e, dtype=I32)), out(e + 1, dtype=I32), out(1, dtype=I32)
    sorted_ids, bexp = out(p_max, dtype=I32), out(pb, dtype=I32)
    f(eid, cnt, poff, sorted_ids, bexp, total, bs)
    want_off = torch.zeros(e + 1, dtype=torch.int64)
    want_off[1:] = padded.cumsum(0)
    same(poff, want_off)
    same(total, want_off[-1:])
    same(cnt, counts)
    srt = sorted_ids.cpu().long()
    for x in range(e):
        lo, hi = int(want_off[x]), int(want_off[x + 1])
        got = srt[lo:hi]
        real = sorted(got[got < t].tolist())
        assert real == (eid.cpu() == x).nonzero().flatten().tolist(), x
        assert (got[int(counts[x]) :] == t).all()  # the padding holds the sentinel
    assert (srt[int(want_off[-1]) :] == t).all()
    blocks = torch.arange(pb) * bs
    want_b = [int((want_off[1:] <= b).sum()) if b < int(want_off[-1]) else -1 for b in blocks.tolist()]
    assert bexp.cpu().tolist() == want_b


@case(R2)
def check_r_group_quant(f: Callable) -> None:
    r, c = 5, 45
    g = cdiv(c, 16)
    x = rnd(r, c) * 3
    x[1, 16:32] = 0  # a zero group: the floor of the scale
    q, s = dev(torch.full((r, c), float("nan")).to(F8)), out(r, g)
    f(x, q, s)
    xs = x.cpu()
    pad = torch.nn.functional.pad(xs.abs(), (0, g * 16 - c)).reshape(r, g, 16).amax(2)
    want_s = torch.clamp(pad, min=torch.tensor(0.0001, dtype=torch.float32)) / 448.0
    same(s, want_s.double())
    sc = s.cpu().repeat_interleave(16, 1)[:, :c]
    want_q = torch.clamp(xs / sc, -448.0, 448.0).to(F8)
    same(q.float(), want_q.double())


@case(R2)
def check_r_digit_scan(f: Callable) -> None:
    n, shift = 300, 8
    nb = cdiv(n, 128)
    keys = RNG.integers(0, 2**32, n, dtype=np.uint64)
    counts, starts = out(nb, 16, dtype=I32), out(nb, 16, dtype=I32)
    f(u32(keys), counts, starts, shift)
    dig = torch.from_numpy(((keys >> shift) & 15).astype(np.int64))
    dig = torch.nn.functional.pad(dig, (0, nb * 128 - n), value=-1).reshape(nb, 128)
    want = torch.stack([torch.bincount(row[row >= 0], minlength=16) for row in dig])
    same(counts, want)
    same(starts, want.cumsum(1) - want)


@case(R2)
def check_r_wide_narrow(f: Callable) -> None:
    n = 45
    a, b = ints(-(2**31), 2**31 - 1, n), ints(-(2**31), 2**31 - 1, n)
    p, q = ints(0, 256, n, dtype=U8), ints(0, 256, n, dtype=U8)
    c = ints(-128, 128, n, dtype=torch.int8)
    w, u, nn = out(n, 3, dtype=torch.int64), out(n, dtype=torch.uint64), out(n, 3, dtype=I32)
    f(a, b, w, u, p, q, c, nn)
    al, bl = a.cpu().tolist(), b.cpu().tolist()

    def tdiv(x: int, y: int) -> int:
        r = abs(x) // abs(y)
        return r if (x >= 0) == (y > 0) else -r

    def s64(v: int) -> int:
        v &= 2**64 - 1
        return v - 2**64 if v >= 2**63 else v

    assert w.cpu().tolist() == [[x * y, x << 20, tdiv(s64(x * 3000000000), 7)] for x, y in zip(al, bl, strict=True)]
    m64 = 2**64 - 1
    want_u = [((x & m64) * 6364136223846793005 + 1442695040888963407) & m64 for x in al]
    assert [v & m64 for v in u.cpu().view(torch.int64).tolist()] == want_u
    pl, ql, cl = p.cpu().tolist(), q.cpu().tolist(), c.cpu().tolist()
    assert nn.cpu().tolist() == [[x - y, z * z, ~x] for x, y, z in zip(pl, ql, cl, strict=True)]


S2 = "pipes2.co"


@case(S2)
def check_s_alternate_consumers(f: Callable) -> None:
    m = 37
    x, y = rnd(m, 16), out(2, 16)
    f(x, y)
    tiles = torch.nn.functional.pad(d(x), (0, 0, 0, cdiv(m, 4) * 4 - m)).reshape(-1, 4, 16).sum(1)
    same(y, torch.stack([tiles[0::2].sum(0), tiles[1::2].sum(0)]), 1e-5)


@case(S2)
def check_s_element_producer(f: Callable) -> None:
    m = 75
    x, y = rnd(m, 8), out(m)
    f(x, y)
    same(y, torch.logsumexp(d(x), 1), 1e-5)


K = "idioms.co"


@case(K)
def check_k_grid_stride(f: Callable) -> None:
    n = 333
    x, y = rnd(n), rnd(n)
    want = 1.5 * d(x) + d(y)
    f(x, y, 1.5, 3)
    same(y, want, 1e-5)


@case(K)
def check_k_early_yield(f: Callable) -> None:
    x, y = rnd(150), out(150)
    f(x, y)
    same(y, d(x) ** 2, 1e-5)


@case(K)
def check_k_tree_sum(f: Callable) -> None:
    n = 300
    nb = cdiv(n, 128)
    x, y = rnd(n), out(nb)
    f(x, y)
    same(y, torch.nn.functional.pad(d(x), (0, nb * 128 - n)).reshape(nb, 128).sum(1), 1e-4)


@case(K)
def check_k_tiled_transpose(f: Callable) -> None:
    x, y = rnd(37, 21), out(21, 37)
    f(x, y)
    same(y, d(x).T)


@case(K)
def check_k_blelloch(f: Callable) -> None:
    n = 150
    x, y = ints(-50, 50, n), out(n, dtype=I32)
    f(x, y)
    blocks = torch.nn.functional.pad(x.cpu().long(), (0, cdiv(n, 64) * 64 - n)).reshape(-1, 64)
    same(y, (blocks.cumsum(1) - blocks).reshape(-1)[:n])


@case(K)
def check_k_shared_queue(f: Callable) -> None:
    n = 150
    nb = cdiv(n, 64)
    x, q, ln = rnd(n), out(nb, 64, dtype=I32), out(nb, dtype=I32)
    f(x, q, ln)
    xs = x.cpu()
    for b in range(nb):
        idx = [i for i in range(b * 64, min(n, b * 64 + 64)) if xs[i] > 0]
        assert int(ln[b]) == len(idx)
        assert q[b, : len(idx)].cpu().tolist() == idx
        assert (q[b, len(idx) :].cpu() == -77).all()


J = "cintr.co"


def funnel_l(lo: int, hi: int, sh: int) -> int:
    return ((((hi << 32) | lo) << sh) >> 32) & MASK


def byte_perm(x: int, y: int, s: int) -> int:
    w = (y << 32) | x
    return sum(((w >> (((s >> (4 * i)) & 7) * 8)) & 0xFF) << (8 * i) for i in range(4))


def s24(v: int) -> int:
    v &= 0xFFFFFF
    return v - (1 << 24) if v >= 1 << 23 else v


def s32(v: int) -> int:
    v &= MASK
    return v - (1 << 32) if v >= 1 << 31 else v


@case(J)
def check_j_unsigned(f: Callable) -> None:
    n = 45
    a, b = RNG.integers(0, 2**32, n, dtype=np.uint64), RNG.integers(0, 2**32, n, dtype=np.uint64)
    a[:2], b[:2] = [MASK, 0], [MASK, 5]
    y = out(n, 9, dtype=U32)
    f(u32(a), u32(b), y)
    want = []
    for x, z in zip((int(v) for v in a), (int(v) for v in b), strict=True):
        want.append(
            [
                ((x * z) >> 32) ^ funnel_l(x, z, z & 31),
                ((x & 0xFFFFFF) * (z & 0xFFFFFF)) & MASK,
                (abs(x - z) + 7) & MASK,
                (x + z) >> 1,
                (x + z + 1) >> 1,
                (((z << 32) | x) >> (z & 31)) & MASK,
                (((z << 32) | x) >> min(z & 63, 32)) & MASK,
                byte_perm(x, z, z),
                funnel_l(x, z, min((x ^ z) & 63, 32)),
            ]
        )
    assert as_u32(y) == want


@case(J)
def check_j_signed(f: Callable) -> None:
    n = 45
    a, b = ints(-(2**31), 2**31 - 1, n), ints(-(2**31), 2**31 - 1, n)
    a[0], b[0] = -(2**31), -(2**31)
    h = rnd(n).half()
    y, g = out(n, 4, dtype=I32), out(n, dtype=F16)
    f(a, b, y, h, g)
    want = [
        [s32(((x * z) >> 32) + s24(x) * s24(z)), s32(abs(x - z) + 5), (x + z + 1) >> 1, (x + z) >> 1]
        for x, z in zip(a.cpu().tolist(), b.cpu().tolist(), strict=True)
    ]
    assert y.cpu().tolist() == want
    same(g, (h.cpu().float() * 2).half().double())


@case(F)
def check_f_overloads(f: Callable) -> None:
    n = 37
    x = rnd(n).abs() * 5 + 0.1
    a = dev(torch.rand(n, generator=PROBE.gen, dtype=torch.float64) * 5 + 0.1)
    y, b = out(n), out(n, dtype=torch.float64)
    f(x, y, a, b)
    v, w = d(x), a.cpu()
    same(y, v.sqrt() + (v * 0.1).exp() + v.log() + v.floor() + v.log2(), 1e-5)
    same(b, w.sqrt() + (w * 0.1).exp() + w.log() + w.ceil() + torch.exp2(w * 0.25), 1e-12)


@case(D)
def check_d_warp_reduce(f: Callable) -> None:
    r = 5
    x = ints(-(2**31), 2**31 - 1, r, 32)
    y, z = out(r, 3, dtype=I32), out(r, 2, dtype=U32)
    f(x, y, z)
    rows = x.cpu().tolist()
    want_y = [[s32(sum(row)), min(row), max(row)] for row in rows]
    assert y.cpu().tolist() == want_y
    want_z = []
    for row in rows:
        xr, o = 0, 0
        for v in row:
            xr ^= v & MASK
            o |= v & 0xFF00
        want_z.append([xr, o])
    assert as_u32(z) == want_z


@case(F)
def check_f_typed_minmax(f: Callable) -> None:
    n = 45
    h = rnd(n).half()
    u = RNG.integers(0, 2**32, n, dtype=np.uint64)
    u[:2] = [3, MASK]
    lv = dev(torch.from_numpy(RNG.integers(-(2**40), 2**40, n)))
    hc, uc, lc = out(n, dtype=F16), out(n, dtype=U32), out(n, dtype=torch.int64)
    f(h, hc, u32(u), uc, lv, lc)
    same(hc, h.cpu().double().clamp(-0.5, 0.75))
    assert as_u32(uc) == [min(max(int(v), 10), 4000000000) for v in u]
    same(lc, lv.cpu().clamp(-5, 5000000000))


H2 = "host2.co"


@case(H2)
def check_h_power_iter(f: Callable) -> None:
    n, k = 21, 6
    a, v, nrm = rnd(n, n), rnd(n), out(1)
    want = d(v)
    for _ in range(k):
        w = d(a) @ want
        last = (w * w).sum()
        want = w / last.sqrt()
    f(a, v, nrm, k)
    same(v, want, 1e-4)
    same(nrm, last.reshape(1), 1e-4)


@case(H2)
def check_h_relax(f: Callable) -> None:
    n, tol = 37, 0.01
    b, x = rnd(n), dev(torch.zeros(n))
    delta, steps = out(1), out(1, dtype=I32)
    f(b, x, delta, steps, tol)
    want, it, dl = torch.zeros(n, dtype=torch.float32), 0, 1000.0
    bb = b.cpu()
    while it < 200 and dl > tol:
        left = torch.cat([torch.zeros(1), want[:-1]])
        right = torch.cat([want[1:], torch.zeros(1)])
        nx = (left + right + bb) * 0.25
        dl = float((nx - want).abs().max())
        want, it = nx, it + 1
    assert int(steps[0]) == it, (int(steps[0]), it)
    same(x, want.double(), 1e-5)
    same(delta, torch.tensor([dl], dtype=torch.float64), 1e-5)


@case(K)
def check_k_direct_barrier(f: Callable) -> None:
    n = 75
    x, y = rnd(n), out(n)
    f(x, y)
    same(y, torch.nn.functional.pad(d(x), (0, 96 - n)).reshape(3, 32).flip(1).reshape(-1)[:n])


@case(D)
def check_d_cas_wrapping_inc(f: Callable) -> None:
    n, b = 100, 4
    bkt = ints(0, b, n)
    ctr, seen = dev(torch.zeros(b, dtype=U32)), out(n, dtype=U32)
    f(bkt, ctr, seen)
    counts = torch.bincount(bkt.cpu().long(), minlength=b).tolist()
    assert as_u32(ctr) == [c % 5 for c in counts]
    got = as_u32(seen)
    for k in range(b):
        mine = sorted(v for v, x in zip(got, bkt.cpu().tolist(), strict=True) if x == k)
        assert mine == sorted(j % 5 for j in range(counts[k])), k


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("cid", PROBE.params())
def test_probe9(cid: str, schedule: str) -> None:
    PROBE.run(cid, schedule)
