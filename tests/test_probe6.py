"""Probe 6 of the language (issue 28): kernels as users port them from CUDA (tests/programs/probe6/*.co):
shared-memory atomics, block scans, bitonic steps, top-k by repeated max, halos, batched GEMV, int8
GEMM with s32 sums, f32/bf16/f16/f8 conversions, bit manipulation, run-time while loops, inthreads
roles. Each runs in both schedules in the interpreter on ragged sizes with random inputs, outputs
poisoned, compared with a float64 (or exact integer) reference written from the language's meaning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from kernel_util import DEVICE
from probe_util import SCHEDULES, Probe, d, out, same

PROBE = Probe(Path(__file__).parent / "programs" / "probe6", seed=6)
case, rnd = PROBE.case, PROBE.rnd
I32, I8 = torch.int32, torch.int8
P = "ports.co"


@case(P)
def check_h_histogram(f: Callable) -> None:
    x = rnd(203, dtype=I32, lo=-1000, hi=1000)
    hist = torch.zeros(16, dtype=I32, device=DEVICE)  # the atomics add to it
    f(x, hist)
    same(hist, torch.bincount((x.cpu() & 15).long(), minlength=16))


@case(P)
def check_h_scan(f: Callable) -> None:
    x, y = rnd(5, 32), out(5, 32)
    f(x, y)
    same(y, d(x).cumsum(1), 1e-4)


@case(P)
def check_h_bitonic_step(f: Callable) -> None:
    for j, k in [(1, 2), (2, 8), (8, 16)]:
        x, y = rnd(3, 16), out(3, 16)
        f(x, y, j, k)
        t = torch.arange(16)
        q = t ^ j
        a, b = d(x), d(x)[:, q]
        lo = (t < q) == ((t & k) == 0)
        same(y, torch.where(lo, torch.minimum(a, b), torch.maximum(a, b)))


@case(P)
def check_h_stencil_halo(f: Callable) -> None:
    x, y = rnd(45), out(45)
    f(x, y)
    p = torch.nn.functional.pad(d(x), (1, 1))
    same(y, 0.25 * p[:-2] + 0.5 * p[1:-1] + 0.25 * p[2:])


@case(P)
def check_h_batched_gemv(f: Callable) -> None:
    a, x, y = rnd(3, 21, 13), rnd(3, 13), out(3, 21)
    f(a, x, y)
    same(y, torch.einsum("bmk,bk->bm", d(a), d(x)), 1e-4)


@case(P)
def check_h_int8_gemm(f: Callable) -> None:
    a, b, c = rnd(19, 37, dtype=I8, lo=-128, hi=128), rnd(37, 11, dtype=I8, lo=-128, hi=128), out(19, 11, dtype=I32)
    f(a, b, c)
    same(c, a.cpu().long() @ b.cpu().long())


@case(P)
def check_h_conversions(f: Callable) -> None:
    n = 77
    x = rnd(n) * 4
    b, h = out(n, dtype=torch.bfloat16), out(n, dtype=torch.float16)
    e, back = torch.zeros(n, dtype=torch.float8_e4m3fn, device=DEVICE), out(n)
    f(x, b, h, e, back)
    rb = x.cpu().to(torch.bfloat16)
    rh = rb.to(torch.float16)
    re = rh.to(torch.float8_e4m3fn)
    assert torch.equal(b.cpu().view(torch.int16), rb.view(torch.int16))
    assert torch.equal(h.cpu().view(torch.int16), rh.view(torch.int16))
    assert torch.equal(e.cpu().view(torch.uint8), re.view(torch.uint8))
    same(back, re.double())


@case(P)
def check_h_bits(f: Callable) -> None:
    n = 53
    g = np.random.default_rng(61)
    v = g.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x = torch.from_numpy(v.astype(np.int64)).to(torch.uint32).to(DEVICE)
    rot, sw, pop = out(n, dtype=torch.uint32), out(n, dtype=torch.uint32), out(n, dtype=I32)
    f(x, rot, sw, pop)
    w = v.astype(np.uint64)
    want_rot = ((w << 7) | (w >> 25)) & 0xFFFFFFFF
    want_sw = ((w & 0x00FF00FF) << 8 | (w >> 8) & 0x00FF00FF) & 0xFFFFFFFF
    want_pop = np.array([bin(int(u)).count("1") for u in v])
    got = [t.cpu().to(torch.int64).numpy() & 0xFFFFFFFF for t in (rot, sw)]
    assert np.array_equal(got[0], want_rot.astype(np.int64)) and np.array_equal(got[1], want_sw.astype(np.int64))
    assert np.array_equal(pop.cpu().numpy(), want_pop)


def collatz(v: int, cap: int) -> int:
    n = 0
    while v != 1 and n < cap:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        n += 1
    return n


@case(P)
def check_h_collatz(f: Callable) -> None:
    x, steps = rnd(71, dtype=I32, lo=1, hi=300), out(71, dtype=I32)
    f(x, steps, 40)
    same(steps, torch.tensor([collatz(int(v), 40) for v in x.cpu()]))


@case(P)
def check_h_top2(f: Callable) -> None:
    x, v, idx = rnd(5, 37), out(5, 2), out(5, 2, dtype=I32)
    f(x, v, idx)
    top = d(x).topk(2, dim=1)
    same(v, top.values)
    same(idx, top.indices)


@case(P)
def check_h_inthreads_roles(f: Callable) -> None:
    x, y = rnd(7, 32), out(7, 32)
    f(x, y)
    want = d(x).clone()
    want[0::2] = want[0::2] * 2
    want[1::2] = want[1::2] + 1
    same(y, want)


M = "more.co"


@case(M)
def check_m_ring_events(f: Callable) -> None:
    x, y = rnd(3, 5, 8), out(3, 8)
    f(x, y)
    same(y, d(x).sum(1), 1e-5)


@case(M)
def check_m_dequant_u4(f: Callable) -> None:
    g = torch.Generator().manual_seed(62)
    q = torch.randint(0, 16, (3, 45), generator=g).to(torch.uint8).to(DEVICE)
    scale, w = rnd(3, dtype=torch.float16), out(3, 45)
    f(q, scale, w)
    same(w, (q.cpu().double() - 8) * d(scale)[:, None])


@case(M)
def check_m_softmax_rows(f: Callable) -> None:
    x, y = rnd(9, 23), out(9, 23)
    f(x, y)
    same(y, torch.softmax(d(x), 1), 1e-5)


P2 = "ports2.co"


@case(P2)
def check_q_spmv_csr(f: Callable) -> None:
    r, c = 23, 17
    dense = torch.randn(r, c, generator=PROBE.gen) * (torch.rand(r, c, generator=PROBE.gen) < 0.3)
    dense[5] = 0  # an empty row
    rows, cols = dense.nonzero(as_tuple=True)
    rp = torch.zeros(r + 1, dtype=torch.int64)
    rp[1:] = torch.bincount(rows, minlength=r).cumsum(0)
    vals = dense[rows, cols]
    x, y = rnd(c), out(r)
    f(rp.to(I32).to(DEVICE), cols.to(I32).to(DEVICE), vals.to(DEVICE), x, y)
    same(y, dense.double() @ d(x))


@case(P2)
def check_q_gather(f: Callable) -> None:
    ids, table, y = rnd(9, dtype=I32, lo=0, hi=13), rnd(13, 45), out(9, 45)
    f(ids, table, y)
    same(y, d(table)[ids.cpu().long()] * 2)


@case(P2)
def check_q_tiled_mm(f: Callable) -> None:
    a, b, c = rnd(37, 29), rnd(29, 21), out(37, 21)
    f(a, b, c)
    same(c, d(a) @ d(b), 1e-4)


@case(P2)
def check_q_transpose_pad(f: Callable) -> None:
    x, y = rnd(19, 35), out(35, 19)
    f(x, y)
    same(y, d(x).T)


@case(P2)
def check_q_block_argmax(f: Callable) -> None:
    x = rnd(6, 64, dtype=I32, lo=-20, hi=20)  # repeated values: the lowest index of the maximum
    mx, arg = out(6, dtype=I32), out(6, dtype=I32)
    f(x, mx, arg)
    xs = x.cpu()
    same(mx, xs.max(1).values)
    same(arg, (xs == xs.max(1, keepdim=True).values).int().argmax(1))


@case(P2)
def check_q_f16_atomic(f: Callable) -> None:
    x = rnd(29, 45, dtype=torch.float16)
    s = torch.zeros(45, device=DEVICE)
    f(x, s)
    same(s, d(x).sum(0), 1e-4)


@case(P2)
def check_q_s64_dot(f: Callable) -> None:
    a, b = rnd(4, 33, dtype=I32, lo=-(2**30), hi=2**30), rnd(4, 33, dtype=I32, lo=-(2**30), hi=2**30)
    y = out(4, dtype=torch.int64)
    f(a, b, y)
    same(y, (a.cpu().long() * b.cpu().long()).sum(1))


@case(P2)
def check_q_runtime_div(f: Callable) -> None:
    n = 61
    x, lut = rnd(n, dtype=I32, lo=-100, hi=100), rnd(7)
    q, r, z = out(n, dtype=I32), out(n, dtype=I32), out(n)
    f(x, q, r, lut, z, -6)
    xs = x.cpu().long()
    same(q, torch.div(xs, -6, rounding_mode="trunc"))
    same(r, xs - torch.div(xs, -6, rounding_mode="trunc") * -6)
    same(z, d(lut)[xs % 7])


# ============================================================================ the test
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("cid", PROBE.params())
def test_probe6(cid: str, schedule: str) -> None:
    PROBE.run(cid, schedule)
