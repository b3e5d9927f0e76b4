"""Probe 7 of the language (issue 28): kernels in forms the earlier probes did not write
(tests/programs/probe7/*.co): GEMM epilogues reading tensors, odd warp layouts, two accumulators,
chained GEMMs, grouped and split-K GEMMs on tensor cores, pipelines of several roles and events,
swizzled / zero-filled TMA, views of data-dependent origin, copies into `select`ed buffers, host
code between launches, `__device__` helpers of CUDA intrinsics. Each runs in both schedules in the
interpreter on ragged sizes with random inputs, outputs poisoned, compared with a float64 (or exact
integer) reference written from the language's meaning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from kernel_util import DEVICE
from probe_util import SCHEDULES, Probe, d, out, same

from croq2triton.api import translate_full

PROBE = Probe(Path(__file__).parent / "programs" / "probe7", seed=7)
case, rnd = PROBE.case, PROBE.rnd
I32, I8, F16, BF16 = torch.int32, torch.int8, torch.float16, torch.bfloat16
G = "gemms.co"


def h(*shape: int) -> torch.Tensor:
    return rnd(*shape).to(F16)


@case(G)
def check_g_bias_relu_residual(f: Callable) -> None:
    a, b, bias, res, c = h(37, 29), h(21, 29), rnd(21), rnd(37, 21), out(37, 21, dtype=F16)
    f(a, b, bias, res, c)
    want = torch.relu(d(a) @ d(b).T + d(bias)) + d(res)
    same(c, want.half().double(), 2e-2)


@case(G)
def check_g_int8_scaled_transposed(f: Callable) -> None:
    a, b = rnd(19, 45, dtype=I8, lo=-128, hi=128), rnd(23, 45, dtype=I8, lo=-128, hi=128)
    sa, sb, ct = rnd(19), rnd(23), out(23, 19)
    f(a, b, sa, sb, ct)
    want = (a.cpu().long() @ b.cpu().long().T).double() * d(sa)[:, None] * d(sb)[None, :]
    same(ct, want.T, 1e-4)


@case(G)
def check_g_warps_3x2(f: Callable) -> None:
    a, b, c = h(53, 21), h(37, 21), out(53, 37)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-4)


@case(G)
def check_g_swiglu(f: Callable) -> None:
    a, wg, wu, y = rnd(19, 27).to(BF16), rnd(21, 27).to(BF16), rnd(21, 27).to(BF16), out(19, 21)
    f(a, wg, wu, y)
    g, u = d(a) @ d(wg).T, d(a) @ d(wu).T
    same(y, g * torch.sigmoid(g) * u, 1e-3)


@case(G)
def check_g_fused_mlp(f: Callable) -> None:
    x, w1, w2, y = h(21, 37), h(29, 37) * 0.25, h(19, 29), out(21, 19)
    f(x, w1, w2, y)
    hid = torch.nn.functional.gelu(d(x) @ d(w1).T).half().double()
    same(y, hid @ d(w2).T, 1e-3)


@case(G)
def check_g_grouped_mma(f: Callable) -> None:
    sizes = [7, 0, 19, 3]
    offs = torch.tensor([0, *torch.tensor(sizes).cumsum(0).tolist()], dtype=I32, device=DEVICE)
    t = sum(sizes)
    x, w, y = h(t, 21), h(4, 13, 21), out(t, 13)
    f(x, w, offs, y)
    want = torch.cat([d(x)[offs[e] : offs[e + 1]] @ d(w)[e].T for e in range(4)])
    same(y, want, 1e-4)


@case(G)
def check_g_splitk_frag_atomic(f: Callable) -> None:
    a, b = h(19, 75), h(23, 75)
    c = torch.zeros(19, 23, device=DEVICE)
    f(a, b, c, 3)
    same(c, d(a) @ d(b).T, 1e-4)


@case(G)
def check_g_colrow_alpha_beta(f: Callable) -> None:
    at, b, rs, cs, c = rnd(19, 21), rnd(27, 19), rnd(21), rnd(27), rnd(21, 27)
    c0 = d(c)
    f(at, b, rs, cs, c, 0.5, -2.0)
    want = 0.5 * d(rs)[:, None] * d(cs)[None, :] * (d(at).T @ d(b).T) - 2.0 * c0
    same(c, want, 2e-2)


P = "pipes.co"


@case(P)
def check_p_two_producers(f: Callable) -> None:
    a, b, c = h(70, 53), h(19, 53), out(70, 19)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-4)


@case(P)
def check_p_evict_swiz_rowmax(f: Callable) -> None:
    x, y = h(21, 75), out(21)
    f(x, y)
    same(y, d(x).max(1).values)


@case(P)
def check_p_select_dst(f: Callable) -> None:
    x, y = rnd(5, 8), out(5, 16)
    f(x, y)
    same(y, torch.cat([d(x) * 2, d(x) + 1], 1))


@case(P)
def check_p_rotate_prefetch2(f: Callable) -> None:
    x, y = rnd(29, 8), out(8)
    f(x, y)
    same(y, d(x).sum(0), 1e-5)


@case(P)
def check_p_thread_producer_transpose(f: Callable) -> None:
    x, y = rnd(19, 8), out(8, 19)
    f(x, y)
    same(y, d(x).T)


@case(P)
def check_p_ring_slot_views(f: Callable) -> None:
    x, y = rnd(19, 53), out(19)
    f(x, y)
    same(y, d(x).sum(1), 1e-5)


V = "views.co"


@case(V)
def check_v_data_origin(f: Callable) -> None:
    x = rnd(45)
    start = torch.tensor([0, 40, 13, 7, 44], dtype=I32, device=DEVICE)
    ln = torch.tensor([8, 5, 0, 3, 1], dtype=I32, device=DEVICE)
    y = out(5, 8)
    f(x, start, ln, y)
    want = torch.zeros(5, 8, dtype=torch.float64)
    for b in range(5):
        seg = d(x)[start[b] : start[b] + ln[b]]
        want[b, : seg.numel()] = seg
    same(y, want)


@case(V)
def check_v_span_as_transp3(f: Callable) -> None:
    x, y = rnd(5, 12), out(5, 4, 3)
    f(x, y)
    same(y, d(x).reshape(5, 3, 4).transpose(1, 2))


@case(V)
def check_v_chunkat_floor3(f: Callable) -> None:
    x = rnd(7, 10, 9)
    y = torch.full((7, 10, 9), -5.0, device=DEVICE)
    f(x, y)
    want = torch.full((7, 10, 9), -5.0, dtype=torch.float64)
    want[:6, :9, :] = d(x)[:6, :9, :] * -3
    same(y, want)


@case(V)
def check_v_strided_downsample(f: Callable) -> None:
    x, y = rnd(16, 24), out(8, 12)
    f(x, y)
    same(y, d(x)[::2, ::2])


@case(V)
def check_v_rank_change(f: Callable) -> None:
    x, y = rnd(80), out(4, 4, 6)
    f(x, y, 9)
    want = torch.zeros(96, dtype=torch.float64)
    want[: 80 - 9] = d(x)[9:]
    same(y, want.reshape(4, 4, 6))


@case(V)
def check_v_sqz_4d(f: Callable) -> None:
    q, y = rnd(2, 3, 13, 5), out(2, 3, 13)
    f(q, y)
    same(y, d(q).sum(3), 1e-5)


@case(V)
def check_v_swap_shared(f: Callable) -> None:
    x, y = rnd(3, 16), out(3, 16)
    f(x, y, 3)
    v = d(x)
    for _ in range(3):
        p = torch.nn.functional.pad(v, (1, 1))
        v = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / 3
    same(y, v)


@case(V)
def check_v_whole_width(f: Callable) -> None:
    x, s, y = rnd(7, 45), rnd(7), out(7, 45)
    f(x, s, y)
    same(y, d(x) * d(s)[:, None])


C = "cuda.co"


def u32(v: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(v.astype(np.int64)).to(torch.uint32).to(DEVICE)


def as_np(t: torch.Tensor) -> np.ndarray:
    return t.cpu().to(torch.int64).numpy() & 0xFFFFFFFF


@case(C)
def check_c_bit_intrinsics(f: Callable) -> None:
    n = 45
    v = np.random.default_rng(71).integers(0, 2**32, n, dtype=np.uint64)
    v[:3] = [0, 1, 0x80000000]
    x = u32(v)
    pc, lz, fs, rv = out(n, dtype=I32), out(n, dtype=I32), out(n, dtype=I32), out(n, dtype=torch.uint32)
    f(x, pc, lz, fs, rv)
    w = [int(a) for a in v]
    assert pc.cpu().tolist() == [bin(a).count("1") for a in w]
    assert lz.cpu().tolist() == [32 - a.bit_length() for a in w]
    assert fs.cpu().tolist() == [(a & -a).bit_length() for a in w]
    assert as_np(rv).tolist() == [int(f"{a:032b}"[::-1], 2) for a in w]


@case(C)
def check_c_ballot_count(f: Callable) -> None:
    x, cnt = rnd(77), out(3, dtype=I32)
    f(x, cnt)
    p = torch.nn.functional.pad((x.cpu() > 0).int(), (0, 19))
    same(cnt, p.reshape(3, 32).sum(1))


@case(C)
def check_c_bcast_sat(f: Callable) -> None:
    x, y = rnd(5, 32), out(5, 32)
    f(x, y)
    same(y, (d(x) - d(x)[:, :1]).clamp(0, 1))


@case(C)
def check_c_cross_entropy(f: Callable) -> None:
    x, lab, loss = rnd(6, 45), rnd(6, dtype=I32, lo=0, hi=45), out(6)
    f(x, lab, loss)
    same(loss, torch.nn.functional.cross_entropy(d(x), lab.cpu().long(), reduction="none"), 1e-5)


@case(C)
def check_c_morton_parity(f: Callable) -> None:
    n = 77
    g = np.random.default_rng(72)
    xv, yv = g.integers(0, 2**32, n, dtype=np.uint64), g.integers(0, 2**32, n, dtype=np.uint64)
    z, par, gray = out(n, dtype=torch.uint32), out(n, dtype=torch.uint32), out(n, dtype=torch.uint32)
    f(u32(xv), u32(yv), z, par, gray)
    xs, ys = [int(a) for a in xv], [int(a) for a in yv]
    want_z = [sum(((a >> k) & 1) << (2 * k) | ((b >> k) & 1) << (2 * k + 1) for k in range(8)) for a, b in zip(xs, ys)]
    assert as_np(z).tolist() == want_z
    assert as_np(par).tolist() == [bin(a).count("1") & 1 for a in xs]
    assert as_np(gray).tolist() == [a ^ (a >> 1) for a in xs]


@case(C)
def check_c_cluster_multicast(f: Callable) -> None:
    a, b, c = h(70, 37), h(45, 37), out(70, 45)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-4)


H = "host.co"


@case(H)
def check_h_sgd_decay(f: Callable) -> None:
    w, t = rnd(45), rnd(45)
    want, lr = d(w), 0.5
    f(w, t, 4, 0.5, 0.75)
    for _ in range(4):
        want = want - lr * (want - d(t))
        lr *= 0.75
    same(w, want, 1e-5)


@case(H)
def check_h_tree_passes(f: Callable) -> None:
    x = rnd(77)
    x0 = d(x)
    tmp, total = out(77), out(1)
    f(x, tmp, total)
    same(total, x0.sum().reshape(1), 1e-4)


@case(H)
def check_h_chunked_launches(f: Callable) -> None:
    x, y = rnd(23, 8), out(23, 8)
    f(x, y, 5)
    same(y, 2 * d(x) + (torch.arange(23) // 5).double()[:, None])


@case(H)
def check_h_return_tiles(f: Callable) -> None:
    x, y = rnd(37), out(37)
    r = f(x, y)
    assert int(r) == 48 - 37, r
    same(y, d(x).abs())


X = "more.co"


@case(X)
def check_x_causal_flash(f: Callable) -> None:
    s, dim = 37, 20
    q, k, v, o = h(s, dim), h(s, dim), h(s, dim), out(s, dim)
    f(q, k, v, o, 0.25)
    sc = d(q) @ d(k).T * 0.25
    sc = sc.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    same(o, torch.softmax(sc, 1) @ d(v), 2e-2)


@case(X)
def check_x_bmm_shared_w(f: Callable) -> None:
    a, w, c = h(3, 19, 21), h(23, 21), out(3, 19, 23)
    f(a, w, c)
    same(c, d(a) @ d(w).T, 1e-4)


@case(X)
def check_x_pad_conv3(f: Callable) -> None:
    x, wt, y = rnd(3, 8, 8), rnd(3, 3), out(3, 8, 8)
    f(x, wt, y)
    want = torch.nn.functional.conv2d(d(x)[:, None], d(wt)[None, None], padding=1)[:, 0]
    same(y, want, 1e-5)


@case(X)
def check_x_work_queue(f: Callable) -> None:
    x, y = rnd(29, 16), out(29, 16)
    counter = torch.zeros(1, dtype=I32, device=DEVICE)
    f(x, y, counter)
    same(y, d(x) ** 2)
    assert int(counter.item()) == 8 + 3  # every program takes one past the end


@case(X)
def check_x_segmented_scan(f: Callable) -> None:
    x = rnd(4, 32)
    hd = (torch.rand(4, 32, generator=PROBE.gen) < 0.2).int()
    hd[1, 0] = 0
    y = out(4, 32)
    f(x, hd.to(DEVICE), y)
    want = d(x).clone()
    for r in range(4):
        for c in range(1, 32):
            if not hd[r, c]:
                want[r, c] += want[r, c - 1]
    same(y, want, 1e-5)


@case(X)
def check_x_warp_bitonic(f: Callable) -> None:
    x, y = rnd(3, 32), out(3, 32)
    f(x, y)
    same(y, d(x).sort(1).values)


@case(X)
def check_x_votes_ll(f: Callable) -> None:
    x = rnd(5, 32)
    x[0] = -x[0].abs() - 0.1  # none positive
    x[1] = x[1].abs() + 0.1  # all positive
    votes = out(5, 2, dtype=I32)
    n = 37
    v = np.random.default_rng(73).integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1)
    v >>= np.random.default_rng(74).integers(0, 64, n).astype(np.uint64)
    v[:2] = [0, 2**63]
    u = torch.from_numpy(v.view(np.int64)).to(torch.uint64).to(DEVICE)
    bits, rv = out(n, 3, dtype=I32), out(n, dtype=torch.uint64)
    f(x, votes, u, bits, rv)
    xs = x.cpu()
    same(votes, torch.stack([(xs > 0).any(1), (xs > -2).all(1)], 1).int())
    w = [int(a) for a in v]
    want = [[bin(a).count("1"), 64 - a.bit_length(), (a & -a).bit_length()] for a in w]
    assert bits.cpu().tolist() == want
    got = rv.cpu().view(torch.int64).numpy().view(np.uint64)
    assert [int(a) for a in got] == [int(f"{a:064b}"[::-1], 2) for a in w]


E = "edge.co"


@case(E)
def check_e_swiz_level_bytes(f: Callable) -> None:
    a, b, c = h(19, 45), h(21, 45), out(19, 21)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-4)


@case(E)
def check_e_frag_array(f: Callable) -> None:
    a, b, c = h(19, 37), h(45, 37), out(19, 45)
    f(a, b, c)
    same(c, d(a) @ d(b).T, 1e-4)


@case(E)
def check_e_tf32(f: Callable) -> None:
    a, b, c = rnd(19, 21), rnd(21, 23), out(19, 23)
    f(a, b, c)
    same(c, d(a) @ d(b), 2e-2)


@case(E)
def check_e_tuple_index(f: Callable) -> None:
    x, y = rnd(9, 11), out(11, 9)
    f(x, y)
    same(y, d(x).T + 1)


@case(E)
def check_e_f16_acc_shift(f: Callable) -> None:
    a, b, shift, c = h(19, 29) * 0.5, h(21, 29) * 0.5, h(21), out(19, 21, dtype=F16)
    f(a, b, shift, c)
    same(c, (d(a) @ d(b).T).half().double() - d(shift), 2e-2)


@case(X)
def check_x_decayed_runtime_n(f: Callable) -> None:
    a, b, c = h(19, 45), h(45, 21), out(19, 21)
    f(a, b, c, 0.5)
    ap, bp = torch.nn.functional.pad(d(a), (0, 3)), torch.nn.functional.pad(d(b), (0, 0, 0, 3))
    want = torch.zeros(19, 21, dtype=torch.float64)
    for k in range(3):
        want = 0.5 * want + ap[:, 16 * k : 16 * k + 16] @ bp[16 * k : 16 * k + 16]
    same(c, want, 1e-4)


@case(C)
def check_c_conversions(f: Callable) -> None:
    n = 77
    x = rnd(n) * 40
    x[:6] = torch.tensor([2.5, 3.5, -2.5, -0.5, 0.5, 1000.0])  # ties to even; one clamped
    scale = torch.ones(1, device=DEVICE)
    q, hr, fc, back = out(n, dtype=I8), out(n), out(n, dtype=I32), out(n)
    f(x, scale, q, hr, fc, back)
    xs = x.cpu()
    same(q, torch.round(xs.double()).clamp(-127, 127))  # torch.round: half to even
    same(hr, xs.half().double(), 0)
    same(fc, torch.floor(xs).long() * 1000 + torch.ceil(xs).long())
    same(back, (torch.arange(n) - 20).double() * 0.5)


@case(C)
def check_c_rotate_first(f: Callable) -> None:
    x, y, first = rnd(5, 32), out(5, 32), out(5, dtype=I32)
    x[3] = -5.0  # no lane above 1
    x[4, :31] = 0.0
    x[4, 31] = 2.0  # only the last
    f(x, y, first)
    xs = x.cpu()
    same(y, d(x).roll(-1, 1))
    same(first, torch.tensor([int((r > 1).nonzero()[0]) if (r > 1).any() else -1 for r in xs]))


def bytes_pop(v: int) -> int:
    c = 0
    while v:
        c += bin(v & 0xFF).count("1") * 2 - (32 - v.bit_length()) // 8
        v >>= 8
    return c


@case(C)
def check_c_loop_popc(f: Callable) -> None:
    v = np.random.default_rng(75).integers(0, 2**32, 45, dtype=np.uint64)
    v[:3] = [0, 0xFF000000, 1]
    y = out(45, dtype=I32)
    f(u32(v), y)
    assert y.cpu().tolist() == [bytes_pop(int(a)) for a in v]


@case(C)
def check_c_float_bits(f: Callable) -> None:
    x = rnd(45)
    x[0] = -0.0
    ab, key = out(45), out(45, dtype=torch.uint32)
    f(x, ab, key)
    assert torch.equal(ab.cpu().view(I32), x.cpu().abs().view(I32))  # -0.0 becomes +0.0
    bits = x.cpu().numpy().view(np.uint32).astype(np.int64)
    want = np.where(bits & 0x80000000, ~bits & 0xFFFFFFFF, bits | 0x80000000)
    got = as_np(key)
    assert got.tolist() == want.tolist()
    assert np.array_equal(np.argsort(got, kind="stable"), np.argsort(x.cpu().numpy(), kind="stable"))


# ============================================================================ the test
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("cid", PROBE.params())
def test_probe7(cid: str, schedule: str) -> None:
    PROBE.run(cid, schedule)


# ============================================================================ what stays refused
def _refusals(source: str) -> str:
    """The diagnostics of translating ``source`` (functions that do not translate are errors)."""
    return "\n".join(x.format() for x in translate_full(source, filename="refused.co").diagnostics)


def test_a_wait_inside_the_thread_level_of_a_warp_role_is_refused() -> None:
    """The consumer's loop of waits written inside its thread level (each thread waits): the roles
    collapse into one loop ordered by the events, and the producer's block-wide copies cannot join a
    loop that runs per thread; the same kernel with the waits at the role's level translates
    (pipes.co, p_evict_swiz_rowmax)."""
    message = _refusals(
        """
__co__ void rowmax(global f16 [M, K] x, global f32 [M] y) {
  parallel bm by cdiv(M, 16) : block {
    shared event full[2], empty[2] = ready;
    shared f16 [16, 32] ring[2];
    parallel role by 2 : group-4 {
      inthreads.async (role == 0) {
        foreach k in [cdiv(K, 32)] {
          wait empty.at(k);
          f = tma.load.async x.subspan(16, 32).at(bm, k) => ring[k % 2];
          trigger full.at(k) after f;
        }
      }
      inthreads.async (role == 1) {
        parallel t by 128 : thread {
          mutable f32 m = -inf;
          foreach k in [cdiv(K, 32)] {
            wait full.at(k);
            if (t < 16) {
              foreach j in [32] m = __max(m, __to<f32>(ring[k % 2].at(t, j)));
            }
            trigger empty.at(k);
          }
          if (t < 16 && bm * 16 + t < M) y.at(bm * 16 + t) = m;
        }
      }
    }
  }
}
"""
    )
    assert "refused.co:15:9: error: 'rowmax' is not translated" in message, message
    assert "a wait or a trigger of an event inside a thread-level parallel of a warp role" in message
