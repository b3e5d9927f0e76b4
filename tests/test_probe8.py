"""Probe 8 of the language (issue 28): kernels in forms the earlier probes did not write
(tests/programs/probe8/*.co): ``__activemask()`` in converged and divergent code, row pointers of
tensors and buffers of several dimensions in ``__device__`` helpers, host-level views of views,
copies of ``span_as`` views of extents that are not powers of two, zero-filled swizzled TMA into
pipelines of three stages, futures of ``dma.any`` swapped and rotated, MMAs of several warpgroups,
host copies between launches, unsigned bit fields. Each runs in both schedules in the interpreter
on ragged sizes with random inputs, outputs poisoned, compared with a float64 (or exact integer)
reference written from the language's meaning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from kernel_util import DEVICE
from probe_util import SCHEDULES, Probe, d, out, same

from croq2triton.api import translate_full

PROBE = Probe(Path(__file__).parent / "programs" / "probe8", seed=8)
case, rnd = PROBE.case, PROBE.rnd
I32, U32, F16 = torch.int32, torch.uint32, torch.float16


def h(*shape: int) -> torch.Tensor:
    return rnd(*shape).to(F16)


def u32(v: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(v.astype(np.int64)).to(U32).to(DEVICE)


def as_np(t: torch.Tensor) -> np.ndarray:
    return t.cpu().to(torch.int64).numpy() & 0xFFFFFFFF


def warp_bits(pos: torch.Tensor) -> list[int]:
    """The ballot of each row of 32 booleans: bit j is lane j."""
    return [sum(int(b) << j for j, b in enumerate(row.tolist())) for row in pos]


C = "cuda.co"


@case(C)
def check_c_active_count(f: Callable) -> None:
    n = 150
    x, cnt = rnd(n), out(n, dtype=I32)
    f(x, cnt)
    pos = torch.nn.functional.pad(x.cpu() > 0, (0, 160 - n)).reshape(5, 32)
    per_warp = pos.sum(1).repeat_interleave(32)[:n]
    want = torch.where(x.cpu() > 0, per_warp, torch.full_like(per_warp, -1))
    same(cnt, want)


@case(C)
def check_c_leader_writes(f: Callable) -> None:
    n = 77
    x = rnd(n)
    x[64:] = -x[64:].abs()  # the third warp has none positive: its outputs stay as they were
    lead, num = out(3, dtype=I32), out(3, dtype=I32)
    f(x, lead, num)
    pos = torch.nn.functional.pad(x.cpu() > 0, (0, 96 - n)).reshape(3, 32)
    want_lead = [int(r.nonzero()[0]) if r.any() else -77 for r in pos]
    want_num = [int(r.sum()) if r.any() else -77 for r in pos]
    assert lead.cpu().tolist() == want_lead and num.cpu().tolist() == want_num, (lead, num)


@case(C)
def check_c_compact_rank(f: Callable) -> None:
    x = rnd(5, 32)
    votes, packed = out(5, dtype=U32), out(5, 32)
    f(x, votes, packed)
    xs = x.cpu()
    assert as_np(votes).tolist() == warp_bits(xs > 0)
    for r in range(5):
        k = int((xs[r] > 0).sum())
        same(packed[r, :k], d(xs[r][xs[r] > 0]))
        assert torch.isnan(packed[r, k:].cpu()).all()


@case(C)
def check_c_inner_mask(f: Callable) -> None:
    x, m = rnd(4, 32), out(4, 32, dtype=U32)
    f(x, m)
    xs = x.cpu()
    lanes = torch.arange(32)
    want = []
    for r in range(4):
        inner = warp_bits(((xs[r] > 0) & (lanes % 3 == 0))[None])[0]
        want.append(
            [inner if (v > 0 and lane % 3 == 0) else (0xDEAD if v > 0 else 0) for lane, v in enumerate(xs[r].tolist())]
        )
    assert as_np(m).tolist() == want


@case(C)
def check_c_row_pointers(f: Callable) -> None:
    r, c = 7, 21
    x, v, y, dd = rnd(r, c), rnd(c), out(r, c), out(r)
    f(x, v, y, dd)
    flat = d(x).reshape(-1)
    k = torch.arange(r * c - 2)
    same(y.reshape(-1)[: r * c - 2], flat[k] + 2 * flat[k + 1] + flat[k + 2], 1e-5)
    assert torch.isnan(y.reshape(-1)[r * c - 2 :].cpu()).all()  # (the taps would reach past the tensor)
    same(dd, d(x) @ d(v), 1e-5)


@case(C)
def check_c_shared_row_step(f: Callable) -> None:
    x, y = rnd(10, 20), out(10)
    z, dz = rnd(3, 5, 6), out(3, 5, 6)
    f(x, y, z, dz)
    same(y, d(x)[:, 1::3].sum(1), 1e-5)
    flat = d(z).reshape(-1)
    same(dz.reshape(-1)[1:89], flat[:88] - 2 * flat[1:89] + flat[2:], 1e-5)
    assert torch.isnan(dz.reshape(-1)[[0, 89]].cpu()).all()


@case(C)
def check_c_bit_fields(f: Callable) -> None:
    n = 45
    v = np.random.default_rng(81).integers(0, 2**32, n, dtype=np.uint64)
    v[:2] = [0, 0xFFFFFFFF]
    lens = rnd(n, dtype=I32, lo=-40, hi=200)
    fld, rot, al = out(n, 3, dtype=U32), out(n, dtype=U32), out(n, dtype=I32)
    f(u32(v), fld, rot, lens, al)
    w = [int(a) for a in v]
    assert as_np(fld).tolist() == [[a & 31, (a >> 11) & 127, (a >> 24) & 0xF0] for a in w]
    assert as_np(rot).tolist() == [((a << 7) | (a >> 25)) & 0xFFFFFFFF for a in w]

    def c_div(a: int, b: int) -> int:  # C's integer division truncates
        q = abs(a) // b
        return q if a >= 0 else -q

    want = [c_div(n_ + 15, 16) * 16 - c_div(n_, 8) * 8 for n_ in lens.cpu().tolist()]
    assert al.cpu().tolist() == want


V = "views.co"


@case(V)
def check_v_host_view_of_view(f: Callable) -> None:
    x, y = rnd(13, 21), out(3, 5)
    f(x, y, 4, 7)
    same(y, 2 * d(x)[4 + 3 : 4 + 6, 7 + 5 : 7 + 10])


@case(V)
def check_v_host_strided_of_window(f: Callable) -> None:
    x, y = rnd(7, 9), out(5, 4)
    f(x, y)
    same(y, d(x)[2:7, 0:8:2] + 1)


@case(V)
def check_v_runtime_origin_rows(f: Callable) -> None:
    x = rnd(11, 13)
    row0 = torch.tensor([0, 7, 9, 3, 10], dtype=I32, device=DEVICE)
    y = out(5, 4)
    f(x, row0, y, 6)
    want = torch.zeros(5, 4, dtype=torch.float64)
    for b, r0 in enumerate(row0.tolist()):
        for i in range(4):
            if r0 + i < 11:
                want[b, i] = d(x)[r0 + i, 6:14].sum()
    same(y, want, 1e-5)


@case(V)
def check_v_span_as_np2(f: Callable) -> None:
    x, cs, yt = rnd(4, 15), out(4, 5), out(4, 15)
    f(x, cs, yt)
    planes = d(x).reshape(4, 3, 5)
    same(cs, planes.sum(1), 1e-5)
    same(yt, planes.transpose(1, 2).reshape(4, 15))


@case(V)
def check_v_shape_bars(f: Callable) -> None:
    x, m, counts = rnd(13, 23), out(3, 3), out(2, dtype=I32)
    f(x, m, counts)
    padded = torch.zeros(18, 30, dtype=torch.float64)
    padded[:13, :23] = d(x)
    same(m, padded.reshape(3, 6, 3, 10).sum((1, 3)) / 60, 1e-5)
    assert counts.cpu().tolist() == [21, 13 * 23 % 1000]


@case(V)
def check_v_thread_cond_copies(f: Callable) -> None:
    x, y = rnd(10, 12), out(10, 12)
    f(x, y)
    keep = (torch.arange(10) % 4 < 2)[:, None]
    same(y, torch.where(keep, 3 * d(x), -d(x)))


@case(V)
def check_v_chunk_of_chunk(f: Callable) -> None:
    x, y = rnd(7, 14), out(7, 14)
    f(x, y)
    same(y[:6], d(x)[:6])
    assert torch.isnan(y[6].cpu()).all()  # (chunkat floors: 7 rows among 3 blocks are chunks of 2)


H = "host.co"


@case(H)
def check_h_copy_between(f: Callable) -> None:
    x, y = rnd(45), out(45)
    f(x, y)
    same(y, 2 * d(x) + 1)


@case(H)
def check_h_window_copy(f: Callable) -> None:
    x, y = rnd(5, 16), out(5, 16)
    f(x, y)
    same(y, torch.cat([d(x).flip(1)[:, :8], d(x)[:, :8]], 1))


@case(H)
def check_h_step_launches(f: Callable) -> None:
    x = rnd(77, dtype=I32)
    want = x.cpu().long().clone()
    f(x, 11)
    for k in range(1, 11, 3):
        want[torch.arange(77) % k == 0] += k
    same(x, want)


@case(H)
def check_h_device_step(f: Callable) -> None:
    x, y = rnd(6, 11), out(6)
    f(x, y)
    same(y, d(x)[:, 1::2].sum(1), 1e-5)


@case(H)
def check_h_slice_bound(f: Callable) -> None:
    for k_count in (0, 3, 7):
        x = rnd(45, dtype=I32)
        want = x.cpu().long() + sum(k * k_count for k in range(2, k_count - 1))
        f(x, k_count)
        same(x, want)


P = "pipes.co"


@case(P)
def check_p_ring3_tma_rowsum(f: Callable) -> None:
    x, y = h(21, 75), out(21)
    f(x, y)
    same(y, d(x).sum(1), 1e-4)


@case(P)
def check_p_chain3(f: Callable) -> None:
    x, y = rnd(29, 16), out(16)
    f(x, y)
    same(y, (d(x) ** 2).sum(0), 1e-5)


@case(P)
def check_p_1p2c_gemm(f: Callable) -> None:
    a, b, c = h(141, 75), h(45, 75), out(141, 45)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-4)


@case(P)
def check_p_rotate_any_data(f: Callable) -> None:
    x, y = rnd(23, 8), out(8)
    f(x, y)
    same(y, d(x).sum(0), 1e-5)


@case(P)
def check_p_swap_two_streams(f: Callable) -> None:
    x, w, y = rnd(10, 29), rnd(10, 29), out(10)
    f(x, w, y)
    same(y, (d(x) * d(w)).sum(1), 1e-5)


X = "more.co"


@case(X)
def check_m_active_partial(f: Callable) -> None:
    a, b = out(3, 20, dtype=I32), out(3, 48, dtype=I32)
    f(a, b)
    same(a, torch.full((3, 20), 20))
    same(b, torch.tensor([32] * 32 + [16] * 16).repeat(3, 1))


@case(X)
def check_m_active_loop(f: Callable) -> None:
    n, y = rnd(32, dtype=I32, lo=0, hi=10), out(32, dtype=I32)
    f(n, y)
    ns = n.cpu().tolist()
    same(y, torch.tensor([sum(sum(m > k for m in ns) for k in range(v)) for v in ns]))


@case(X)
def check_m_row_histogram(f: Callable) -> None:
    v = rnd(5, 45, dtype=I32, lo=-100, hi=100)
    hist = torch.zeros(5, 8, dtype=I32, device=DEVICE)
    f(v, hist)
    bins = v.cpu().long() & 7
    same(hist, torch.stack([torch.bincount(row, minlength=8) for row in bins]))


@case(X)
def check_m_int_corners(f: Callable) -> None:
    x = rnd(45, dtype=I32, lo=-(2**31), hi=2**31 - 1)
    x[:4] = torch.tensor([0, -1, -(2**31), 2**31 - 1], dtype=I32)
    y = out(45, 5, dtype=I32)
    f(x, y)
    want = []
    for v in x.cpu().tolist():
        u = v & 0xFFFFFFFF
        rem = abs(v) % 7 * (1 if v >= 0 else -1)  # C's % takes the dividend's sign
        want.append([v >> 3, u >> 28, ((u - 0x80000000) & 0xFFFFFFFF) >> 31, rem, int(u > 0x7FFFFFFF)])
    same(y, torch.tensor(want))


@case(X)
def check_m_tma_span_as(f: Callable) -> None:
    x, sc, y = rnd(3, 60), rnd(3), out(3, 60)
    f(x, sc, y)
    same(y, d(x) * d(sc)[:, None])


@case(X)
def check_m_copy_host_view_of_view(f: Callable) -> None:
    x, y = rnd(13, 21), out(9, 14)
    f(x, y)
    same(y, 2 * d(x)[2:11, 3:17])


@case(X)
def check_m_group_copy_cond(f: Callable) -> None:
    x, y = rnd(3, 64), out(3, 64)
    f(x, y)
    same(y, d(x).flip(1))


@case(X)
def check_m_shape_counts(f: Callable) -> None:
    x, y = rnd(7, 11, dtype=I32), out(3, dtype=I32)
    f(x, y)
    assert y.cpu().tolist() == [3 * 5, 8 * 12, 6 * 10]


@case(X)
def check_m_data_of_buffer(f: Callable) -> None:
    x, y, z = rnd(8), out(8), out(1)
    f(x, y, z)
    same(y, 2 * d(x).flip(0))
    same(z, torch.ones(1))


E = "exits.co"


@case(E)
def check_e_yield_inner_loop(f: Callable) -> None:
    x, y, done = rnd(3, 7, 20), out(3, 7, 20), out(3, 20, dtype=I32)
    f(x, y, done)
    left = (x.cpu() < -1).int().cumsum(1) > 0  # from the step it meets one on
    got = y.cpu().double()
    assert torch.isnan(got[left]).all()
    same(got[~left], 2 * d(x)[~left])
    same(done, torch.where(left.any(1), -77, 1))


@case(E)
def check_e_yield_while_chunks(f: Callable) -> None:
    r, c, limit = 19, 22, 1.5
    x, total, chunks = rnd(r, c), out(r), out(r, dtype=I32)
    f(x, total, chunks, limit)
    want_t, want_c = [], []
    for row in d(x):
        acc, done = 0.0, 0
        for k in range(c):
            acc += float(row[k])
            if acc > limit:
                break
            if k % 4 == 3 or k == c - 1:
                done += 1
        want_t.append(acc)
        want_c.append(done)
    same(total, torch.tensor(want_t, dtype=torch.float64), 1e-5)
    same(chunks, torch.tensor(want_c))


X2 = "more2.co"


@case(X2)
def check_x_four_groups(f: Callable) -> None:
    a, b, c = h(141, 45), h(37, 45), out(141, 37)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-4)


@case(X2)
def check_x_active_while(f: Callable) -> None:
    n, y = rnd(2, 32, dtype=I32, lo=0, hi=7), out(2, 32, dtype=I32)
    f(n, y)
    want = [[sum(sum(m > k for m in row) for k in range(v)) for v in row] for row in n.cpu().tolist()]
    same(y, torch.tensor(want))


@case(X2)
def check_x_host_copy_view_of_view(f: Callable) -> None:
    x, keep = rnd(8, 11), out(4, 6)
    x0 = d(x)
    f(x, keep)
    want = -x0
    want[2:6, 3:9] = x0[2:6, 3:9]
    same(x, want)
    same(keep, x0[2:6, 3:9])


@case(X2)
def check_x_slice_start_end_step(f: Callable) -> None:
    x, y = rnd(5, 17), out(5, 4)
    f(x, y)
    s = d(x)[:, 1 : 17 - 2 : 3].sum(1)
    same(y, s[:, None] * torch.arange(1, 5, dtype=torch.float64)[None, :], 1e-5)


@case(X2)
def check_x_grid_bits(f: Callable) -> None:
    n = 150
    v = np.random.default_rng(82).integers(0, 2**32, n, dtype=np.uint64)
    y = out(n, dtype=U32)
    f(u32(v), y)
    assert as_np(y).tolist() == [(int(a) >> 3) ^ (int(a) & 7) for a in v]


X3 = "more3.co"


@case(X3)
def check_y_active_break(f: Callable) -> None:
    x, y = rnd(32, 8), out(32, 8, dtype=I32)
    f(x, y)
    stopped = (x.cpu() < -1).int().cumsum(1) > 0
    walking = (~stopped).sum(0, keepdim=True).expand(32, 8)
    same(y, torch.where(stopped, torch.full_like(walking, -77), walking))


@case(X3)
def check_y_local_rows(f: Callable) -> None:
    x, y = rnd(37, 8), out(37, 2)
    f(x, y)
    same(y, d(x).reshape(37, 2, 4).sum(2), 1e-5)


@case(X3)
def check_y_host_chunks(f: Callable) -> None:
    x, y = rnd(9, 6), out(9, 6)
    f(x, y)
    same(y[:4], d(x)[5:9])  # (8 rows in chunks of 4: the second chunk is rows 5..8 of x)
    assert torch.isnan(y[4:].cpu()).all()


T = "threads.co"


@case(T)
def check_t_local_sort(f: Callable) -> None:
    for threads in (5, 16):
        x, y = rnd(37, 5), out(37, 5)
        f(x, y, threads)
        same(y, d(x).sort(1).values)


@case(T)
def check_t_local_bins(f: Callable) -> None:
    for threads in (3, 32):
        x, hist = rnd(29, 12, dtype=I32, lo=-50, hi=50), out(29, 4, dtype=I32)
        f(x, hist, threads)
        bins = x.cpu().long() & 3
        same(hist, torch.stack([torch.bincount(row, minlength=4) for row in bins]))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("cid", PROBE.params())
def test_probe8(cid: str, schedule: str) -> None:
    PROBE.run(cid, schedule)


REFUSED = """__device__ float NEXT(const float* p) { return p[1]; }
__co__ void row_of_view(global f32 [M, N] a) {
  parallel p by cdiv(M, 2) : block {
    v = a.subspan(2, 3).at(p, 0);
    a.at(p, 0) = call NEXT(&v.at(0, 0));
  }
}
__co__ void yield_then_copy(global f32 [B, K, 32] x, global f32 [B, 32] y) {
  parallel b by B : block {
    shared f32 [32] s;
    foreach k in [K] {
      parallel t by 32 : thread {
        if (x.at(b, k, t) < -1.0f) yield;
        s.at(t) = x.at(b, k, t);
      }
    }
    dma.copy s => y.subspan(1, 32).at(b, 0).sqz();
  }
}
__co__ void yield_in_inthreads(global f32 [B, K, 32] x, global f32 [B, K, 32] y) {
  parallel b by B : block {
    foreach k in [K] {
      parallel t by 32 : thread {
        inthreads (t < 16) {
          if (x.at(b, k, t) < -1.0f) yield;
        }
        y.at(b, k, t) = x.at(b, k, t) * 2.0f;
      }
    }
  }
}
"""


def test_what_stays_refused_is_named_at_its_construct() -> None:
    """An offset from an element of a view (its rows need not lie one after another), a yield of
    inner threads in a loop followed by a copy of the whole block (which the threads that left no
    longer take part in) and one inside an inthreads of those threads stay refused, each at its
    construct."""
    diags = translate_full(REFUSED, filename="refused8.co").diagnostics
    found = {d.message.split("'")[1]: d for d in diags if "is not translated" in d.message}
    row = found["row_of_view"]
    assert row.span is not None and (row.span.line, row.span.col) == (5, 29), row.format()
    assert "the address of an element of the view 'v' of several dimensions" in row.message
    yld = found["yield_then_copy"]
    assert yld.span is not None and (yld.span.line, yld.span.col) == (13, 36), yld.format()
    assert "a 'yield' inside a loop, in an inner 'parallel' or 'inthreads' of its body" in yld.message
    inner = found["yield_in_inthreads"]
    assert inner.span is not None and (inner.span.line, inner.span.col) == (25, 38), inner.format()
    assert "a 'yield' inside a loop, in an inner 'parallel' or 'inthreads' of its body" in inner.message
