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
