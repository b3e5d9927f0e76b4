"""Views of views and views of run-time extent (issue 28; tests/programs/views_loops2.co): views
with explicit strides of strided views and of ``span_as`` views of part of a tensor, read and
written, a dense view of another rank of a strided view, strided views of a shared buffer whose
extent is an argument or a loop counter's, a view of such a view, and a dense view of a buffer of
run-time shape; in both schedules, on ragged sizes, with NaN-poisoned outputs, against float64
references that address the root's elements as LANGUAGE.md 7.6 says (offsets and strides of a
view with explicit strides count the root's elements; a view of another rank is dense)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, diagnostics

import croq2triton

PROGRAM = Path(__file__).parent / "programs" / "views_loops2.co"
SCHEDULES = ["source", "auto"]
_MODULES: dict[str, object] = {}


def _module(schedule: str) -> object:
    if schedule not in _MODULES:
        _MODULES[schedule] = croq2triton.load(PROGRAM, schedule=schedule)
    return _MODULES[schedule]


def _nan(*shape: int) -> torch.Tensor:
    return torch.full(shape, float("nan"), device=DEVICE)


def _rand(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).float().to(DEVICE)


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert not torch.isnan(got).any(), "an output element was never written"
    torch.testing.assert_close(got.double().cpu(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_strided_view_of_a_strided_view(schedule: str) -> None:
    N, B = 150, 3  # the last block's elements past 150 read zero
    x = _rand(N)
    y = _nan(B, 8)
    _module(schedule).every_fourth(x, y)  # type: ignore[attr-defined]
    xd, want = x.double().cpu(), torch.zeros(B, 8, dtype=torch.float64)
    for p in range(B):
        for j in range(8):
            k = 64 * p + 4 + 4 * j  # a from 32 p * 2, then 1 * 4 past it, 4 apart
            if k < N:
                want[p, j] = xd[k]
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_strided_view_of_a_strided_row_read_by_threads(schedule: str) -> None:
    M, N = 7, 13
    x = _rand(M, N, seed=1)
    y = _nan(M, 4)
    _module(schedule).row_steps(x, y)  # type: ignore[attr-defined]
    flat, want = x.double().cpu().flatten(), torch.zeros(M, 4, dtype=torch.float64)
    for r in range(M):
        for j in range(4):
            k = r * N + 4 + 4 * j  # root elements: past the row's end the next row's, past the tensor zero
            if k < M * N:
                want[r, j] = 2 * flat[k]
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_strided_view_of_a_span_as_of_part_of_a_tensor(schedule: str) -> None:
    M, N, P, K = 7, 13, 4, 9  # 3 K = 27 > 2 N = 26: the last element is outside the line; rows 8, 9 outside x
    x = _rand(M, N, seed=2)
    y = _nan(P, K)
    _module(schedule).pair_thirds(x, y)  # type: ignore[attr-defined]
    xd, want = x.double().cpu(), torch.zeros(P, K, dtype=torch.float64)
    for p in range(P):
        for j in range(K):
            f = 3 * j
            if f < 2 * N and 2 * p + f // N < M:
                want[p, j] = xd[2 * p + f // N, f % N]
    _close(y, want)

    y = _nan(4, 4)
    _module(schedule).of_a_row_pair(x, y)  # type: ignore[attr-defined]
    want = torch.zeros(4, 4, dtype=torch.float64)
    for i in range(4):
        for j in range(4):
            f = 8 * i + j
            if f < 2 * N:  # rows 2 and 3 (subspan 2 at 1)
                want[i, j] = xd[2 + f // N, f % N]
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_strided_view_of_a_span_as_of_part_of_a_tensor_written(schedule: str) -> None:
    M, N, P, K = 7, 13, 4, 9
    x = _rand(P, K, seed=3)
    y0 = _rand(M, N, seed=4)
    y = y0.clone()
    _module(schedule).pair_thirds_store(x, y)  # type: ignore[attr-defined]
    want = y0.double().cpu().clone()
    for p in range(P):
        for j in range(K):
            f = 3 + 3 * j
            if f < 2 * N and 2 * p + f // N < M:  # past the line or the tensor: not written
                want[2 * p + f // N, f % N] = float(x[p, j])
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_view_of_another_rank_of_a_strided_view_is_dense(schedule: str) -> None:
    N, B = 50, 2
    x = _rand(N, seed=5)
    y = _nan(B, 4, 4)
    _module(schedule).strided_square(x, y)  # type: ignore[attr-defined]
    xd, want = x.double().cpu(), torch.zeros(B, 4, 4, dtype=torch.float64)
    for p in range(B):
        for i in range(4):
            for j in range(4):
                k = 32 * p + 1 + 4 * i + j
                if k < N:
                    want[p, i, j] = xd[k]
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("h", [3, 20, 32])
def test_a_strided_view_of_a_buffer_of_an_argument_s_extent(schedule: str, h: int) -> None:
    M = 5
    x = _rand(M, 64, seed=6)
    y, z0 = _nan(M, 32), _rand(M, 32, seed=7)
    z = z0.clone()
    _module(schedule).first_evens(x, y, z, h)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    want = torch.ones(M, 32, dtype=torch.float64)  # past the view's h elements: zero, plus one
    want[:, :h] = xd[:, 0 : 2 * h : 2] + 1
    _close(y, want)
    want = z0.double().cpu().clone()  # a copy into a tensor's window writes the source's h elements
    want[:, :h] = xd[:, 0 : 2 * h : 2]
    _close(z, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_strided_view_of_a_buffer_whose_extent_a_loop_bounds(schedule: str) -> None:
    M = 5
    x = _rand(M, 64, seed=8)
    y = _nan(M, 32)
    _module(schedule).growing(x, y)  # type: ignore[attr-defined]
    xd, want = x.double().cpu(), torch.zeros(M, 32, dtype=torch.float64)
    for k in range(4):
        for t in range(k + 1):
            want[:, 8 * k + t] = xd[:, 2 * t]
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("h", [3, 40])
def test_a_strided_view_of_a_strided_view_of_a_buffer(schedule: str, h: int) -> None:
    M = 6
    x = _rand(M, 64, seed=9)
    y = _nan(M, 8)
    _module(schedule).nines(x, y, h)  # type: ignore[attr-defined]
    xd, want = x.double().cpu(), torch.ones(M, 8, dtype=torch.float64)
    for t in range(8):
        k = 11 + 9 * t  # a from 1 * 2, b 1 * 9 past it, 9 apart: the buffer's elements (not bounded by a's h)
        if k < 64:
            want[:, t] += xd[:, k]
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_dense_view_of_a_buffer_of_run_time_shape(schedule: str) -> None:
    M, N = 7, 11
    x = _rand(M, N, seed=10)
    y = _nan(M, N)
    _module(schedule).row_pairs(x, y)  # type: ignore[attr-defined]
    _close(y, x.double().cpu())


def test_a_strided_view_of_a_buffer_of_an_unbounded_extent_is_refused_at_the_view() -> None:
    message = diagnostics(
        """__co__ void part(global f32 [R, 16] x, global s32 [B] n, global f32 [R, 8] y) {
  parallel b by cdiv(R, 4) : block {
    shared f32 [4, 16] s;
    dma.copy.zfill x.subspan(4, 16).at(b, 0) => s;
    dma.copy s.view(4, n.at(b) : 16, 2).from(0, 0) => y.subspan(4, 8).at(b, 0);
  }
}
""",
        "v.co",
    )
    assert "v.co:5:15: error: 'part' is not translated: croq2triton does not translate a strided or" in message, message
    assert "whose extent the kernel computes without a bound" in message, message


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [1, 5, 8])
def test_a_two_dimensional_strided_view_of_a_buffer_of_an_argument_s_extent(schedule: str, n: int) -> None:
    R = 10
    x = _rand(R, 16, seed=11)
    y = _nan(R, 8)
    _module(schedule).even_cols(x, y, n)  # type: ignore[attr-defined]
    want = torch.zeros(R, 8, dtype=torch.float64)
    want[:, :n] = x.double().cpu()[:, 0 : 2 * n : 2]
    _close(y, want)


# ----------------------------------------------------------------------------- loops


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_break_leaves_every_loop_of_a_foreach_over_several_names(schedule: str) -> None:
    R, thr = 21, 1.2
    x = _rand(R, 32, seed=12)
    y, n = _nan(R), torch.full((R,), -7, dtype=torch.int32, device=DEVICE)
    _module(schedule).sum_until(x, y, n, thr)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    want_y, want_n = torch.zeros(R, dtype=torch.float64), []
    for r in range(R):
        row = xd[r].tolist()
        stop = next((k for k, v in enumerate(row) if v > thr), 32)  # row-major order of [4, 8]
        want_y[r] = sum(row[:stop])
        want_n.append(stop)
    assert any(8 < c < 32 and c % 8 for c in want_n)  # a break in a later row of the nest, mid-row
    _close(y, want_y)
    assert n.cpu().tolist() == want_n


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_continue_and_break_in_nests_of_names_and_of_an_index_tuple(schedule: str) -> None:
    B = 7
    x = _rand(B, 6, 6, seed=13)
    y = _nan(B)
    _module(schedule).off_diag(x, y)  # type: ignore[attr-defined]
    m = x.double().cpu().clone()
    m[:, range(6), range(6)] = 0
    _close(y, m.clamp(min=0).sum((1, 2)))

    x = _rand(B, 3, 5, seed=14) + 1.3
    x[2] = x[2].abs()  # no negative element: -1
    pos = torch.full((B,), -7, dtype=torch.int32, device=DEVICE)
    _module(schedule).first_neg(x, pos)  # type: ignore[attr-defined]
    want = []
    for b in range(B):
        f = (x[b].cpu().flatten() < 0).nonzero()
        want.append(int(f[0]) if len(f) else -1)
    assert -1 in want and any(w >= 5 for w in want)  # a tile without one, and one found past the first row
    assert pos.cpu().tolist() == want


@pytest.mark.parametrize("seed", range(4))
def test_break_and_continue_of_a_host_level_nest(seed: int) -> None:
    mod = _module("source")
    x = _rand(3, 5, seed=20 + seed) + 1.0
    pos = torch.full((2,), -7, dtype=torch.int32, device=DEVICE)
    mod.host_first(x, pos)  # type: ignore[attr-defined]
    f = (x.cpu().flatten() < 0).nonzero()
    assert pos.cpu().tolist() == ([int(f[0]) // 5, int(f[0]) % 5] if len(f) else [-1, -1])
    x = _rand(4, 4, seed=30 + seed)
    n = torch.full((1,), -7, dtype=torch.int32, device=DEVICE)
    mod.host_count(x, n)  # type: ignore[attr-defined]
    m = x.cpu().clone()
    m[range(4), range(4)] = -1
    assert int(n[0]) == int((m > 0).sum())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_thread_s_yield_inside_a_loop(schedule: str) -> None:
    R = 29
    x = _rand(R, 12, seed=15) + 1.6
    y, z = _nan(R), _nan(R)
    _module(schedule).until_negative(x, y, z)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    want_y = torch.full((R,), float("nan"), dtype=torch.float64)
    want_z = want_y.clone()
    for r in range(R):
        acc, left = 0.0, False
        for k in range(12):
            if xd[r, k] < 0:
                left = True
                break
            acc += float(xd[r, k])
            want_z[r] = acc
        if not left:
            want_y[r] = acc
    assert want_y.isnan().any() and not want_y.isnan().all()  # threads that leave and threads that stay
    assert want_z.isnan().any()  # a thread that leaves before its first element
    torch.testing.assert_close(y.double().cpu(), want_y, equal_nan=True, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(z.double().cpu(), want_z, equal_nan=True, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_block_s_yield_inside_a_nest_and_a_thread_s_inside_a_while(schedule: str) -> None:
    B = 6
    flags = torch.zeros(B, 3, 4, dtype=torch.int32, device=DEVICE)
    flags[1, 2, 3] = 1
    flags[4, 0, 0] = 5
    x = _rand(B, 16, seed=16)
    y = _nan(B, 16)
    _module(schedule).blocks_without_flags(flags, x, y)  # type: ignore[attr-defined]
    want = 2 * x.double().cpu()
    want[1] = want[4] = float("nan")  # the blocks that left wrote nothing
    torch.testing.assert_close(y.double().cpu(), want, equal_nan=True)

    N = 37
    x = (torch.rand(N, generator=torch.Generator().manual_seed(17)) * 100).to(DEVICE)
    steps = torch.full((N,), -7, dtype=torch.int32, device=DEVICE)
    _module(schedule).halve(x, steps)  # type: ignore[attr-defined]
    want_steps = []
    for v in x.cpu().tolist():
        v32, n, left = torch.tensor(v, dtype=torch.float32), 0, False
        while float(v32) >= 1.0:
            v32, n = v32 / 2, n + 1
            if n > 3 and float(v32) > 2.0:
                left = True
                break
        want_steps.append(-7 if left else n)
    assert -7 in want_steps and any(s >= 0 for s in want_steps)
    assert steps.cpu().tolist() == want_steps


INNER_YIELD = """__co__ void inner_yield(global f32 [B, 8] x, global f32 [B, 8] y) {
  parallel b by B : block {
    foreach k in [2] {
      parallel t by 8 : thread {
        if (x.at(b, t) < 0.0f) yield;
        y.at(b, t) = x.at(b, t) + __to<f32>(k);
      }
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_yield_in_an_inner_parallel_inside_a_loop_leaves_those_threads(tmp_path: Path, schedule: str) -> None:
    """The threads that leave run no later iteration (lift/yields.py inner_yields): y keeps its
    poison where x < 0, else the last iteration's x + 1."""
    path = tmp_path / "y.co"
    path.write_text(INNER_YIELD)
    x, y = _rand(5, 8), _nan(5, 8)
    croq2triton.load(path, schedule=schedule).inner_yield(x, y)
    neg = (x < 0).cpu()
    assert torch.isnan(y.cpu()[neg]).all() and neg.any()
    _close(y.cpu()[~neg], x.cpu()[~neg].double() + 1)


def test_a_yield_in_an_inner_parallel_before_a_block_copy_is_refused_at_the_yield() -> None:
    message = diagnostics(
        """__co__ void inner_yield(global f32 [B, 8] x, global f32 [B, 8] y) {
  parallel b by B : block {
    shared f32 [8] s;
    foreach k in [2] {
      parallel t by 8 : thread {
        if (x.at(b, t) < 0.0f) yield;
        s.at(t) = x.at(b, t) + 1.0f;
      }
    }
    dma.copy s => y.subspan(1, 8).at(b, 0).sqz();
  }
}
""",
        "y.co",
    )
    assert "y.co:6:32: error: 'inner_yield' is not translated: croq2triton does not translate a 'yield' inside a" in (
        message
    ), message
    assert "in an inner 'parallel' or 'inthreads' of its body" in message, message


# ----------------------------------------------------------------------------- per-thread copies


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("M", "N"), [(10, 13), (7, 40)])
def test_a_per_thread_copy_of_run_time_extent_into_local(schedule: str, M: int, N: int) -> None:
    x = _rand(M, N, seed=40 + N)
    y, z = _nan(M), _nan(M, N)
    _module(schedule).own_rows(x, y, z)  # type: ignore[attr-defined]
    _close(y, x.double().cpu().sum(1))
    _close(z, x.double().cpu())

    z = _nan(M, N)
    _module(schedule).own_pairs(x, z, 0.5)  # type: ignore[attr-defined]
    i = torch.arange(M) % 2
    want = x.double().cpu() * 0.5 + (i[:, None] * 100 + torch.arange(N)[None, :]).double()
    _close(z, want)  # M odd: the last thread's second row is past the tensor, neither read nor written
