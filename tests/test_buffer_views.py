"""Views of shared / local buffers (issue 28; tests/programs/buffer_views.co): a window of a shared
tile at a run-time origin, every other column of one, a thread's local array viewed as a matrix, a
window in a loop, and a tensor view with explicit strides whose origin follows the thread; read
and written through the views, in both schedules, on ragged sizes with NaN-poisoned outputs,
against float64 references."""

from __future__ import annotations

from pathlib import Path

import pytest
import sm90
import torch
from kernel_util import DEVICE

import croq2triton

PROGRAM = Path(__file__).parent / "programs" / "buffer_views.co"
SCHEDULES = ["source", "auto"]
_MODULES: dict[str, object] = {}


def _module(schedule: str) -> object:
    if schedule not in _MODULES:
        _MODULES[schedule] = croq2triton.load(PROGRAM, schedule=schedule)
    return _MODULES[schedule]


def _nan(*shape: int) -> torch.Tensor:
    return torch.full(shape, float("nan"), device=DEVICE)


def _rand(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64).float().to(DEVICE)


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert not torch.isnan(got).any(), "an output element was never written"
    torch.testing.assert_close(got.double().cpu(), want.cpu(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_window_at_a_run_time_origin(schedule: str) -> None:
    R = 23
    blocks = -(-R // 4)
    x = _rand(R, 40)
    offs = torch.tensor([0, 37, -3, 13, 32, 5][:blocks], dtype=torch.int32, device=DEVICE)
    y, z = _nan(R, 8), _nan(R, 40)
    _module(schedule).shifted(x, offs, y, z)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    want_y = torch.zeros(R, 8, dtype=torch.float64)
    want_z = xd.clone()
    for r in range(R):
        o = int(offs[r // 4])
        for j in range(8):
            if 0 <= o + j < 40:  # past the buffer's columns: zero, and no write
                want_y[r, j] = 2 * xd[r, o + j]
                want_z[r, o + j] = -xd[r, o + j]
    _close(y, want_y)
    _close(z, want_z)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_every_other_column_of_a_shared_tile(schedule: str) -> None:
    R = 19
    x = _rand(R, 16)
    y, yy, z = _nan(R, 8), _nan(R, 8), _nan(R, 16)
    _module(schedule).odd_cols(x, y, yy, z)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    _close(y, xd[:, 1::2])
    _close(yy, xd[:, 1::2] - xd[:, 0::2])
    want = xd.clone()
    want[:, 0::2] *= 3
    _close(z, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_local_array_viewed_as_a_matrix(schedule: str) -> None:
    N = 45
    x = _rand(N, 12)
    y, z = _nan(N, 4), _nan(N, 12)
    _module(schedule).matrix(x, y, z)  # type: ignore[attr-defined]
    a = x.double().cpu()
    m = a.view(N, 3, 4)
    lo = a[:, 4:12].reshape(N, 2, 4)
    g1 = a[:, 8:12]  # row 1 of the view from element 4; its row 2 lies past the array: zero
    _close(y, m[:, 0] + m[:, 1] * m[:, 2] + lo[:, 1] - g1)
    want = a.clone()
    want[:, 4:8] = 7 * a[:, 4:8]
    _close(z, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_windows_of_a_shared_tile_in_a_loop(schedule: str) -> None:
    R = 21
    x = _rand(R, 32)
    y, z = _nan(R, 8), _nan(R, 32)
    _module(schedule).blocks(x, y, z)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    _close(y, xd.view(R, 4, 8).sum(1))
    _close(z, xd)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_strided_tensor_view_at_each_threads_origin(schedule: str) -> None:
    M = 45
    N = 16 * M - 5  # the last thread's last elements lie past the tensor: zero, and no write
    x = _rand(N)
    y, z = _nan(M), _nan(N)
    _module(schedule).lanes(x, y, z)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    want = torch.zeros(M, dtype=torch.float64)
    written = torch.zeros(N, dtype=torch.bool)
    for i in range(M):
        for k in range(4):
            e = 16 * i + 2 * k
            if e < N:
                want[i] += xd[e]
                written[e] = True
    _close(y, want)
    _close(z[written], 2 * xd[written])
    assert torch.isnan(z[~written.to(z.device)]).all(), "an element outside every thread's view was written"


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("func", "sizes"), [("shifted", ["R=23", "B=6"]), ("odd_cols", ["R=19"])])
def test_compiled_for_sm90(func: str, sizes: list[str], schedule: str) -> None:
    args = ["compile", str(PROGRAM), "--func", func, "--schedule", schedule, "--emit", "ptx"]
    for s in sizes:
        args += ["--size", s]
    r = sm90.croq(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ld.global" in r.stdout and "st.global" in r.stdout  # the buffer's scratch area, read and written


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_shared_line_viewed_as_rows_apart(schedule: str) -> None:
    N = 64 * 2 + 30
    x = _rand(N)
    y = _nan(3, 4, 5)
    _module(schedule).rows_apart(x, y)  # type: ignore[attr-defined]
    line = torch.cat([x.double().cpu(), torch.zeros(64 * 3 - N, dtype=torch.float64)]).view(3, 64)
    want = torch.stack([line[:, 1 + 9 * i : 1 + 9 * i + 5] for i in range(4)], 1)  # from(0, 1): element 1 * 1
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_windows_at_a_run_time_origin_copied_out(schedule: str) -> None:
    R = 23
    x = _rand(R, 40)
    offs = torch.tensor([0, 37, -3, 13, 32, 5], dtype=torch.int32, device=DEVICE)
    y, y2 = _nan(R, 8), _nan(R, 8)
    _module(schedule).copied(x, offs, y, y2)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    want, want2 = torch.zeros(R, 8, dtype=torch.float64), torch.zeros(R, 8, dtype=torch.float64)
    for r in range(R):
        o = int(offs[r // 4])
        for j in range(8):
            if 0 <= o + j < 40:  # outside the buffer: zero
                want[r, j] = xd[r, o + j]
                if r % 4 < 3 and r + 1 < R:  # the window's row past the buffer: zero
                    want2[r, j] = xd[r + 1, o + j]
    _close(y, want)
    _close(y2, want2)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_each_threads_window_of_a_shared_tile(schedule: str) -> None:
    R = 23
    x = _rand(R, 16)
    y, z = _nan(R, 4), _nan(R, 16)
    _module(schedule).own_windows(x, y, z)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    _close(y, xd.view(R, 4, 4).sum(2))
    want = xd.clone()
    want[:, 0::4] = 0
    _close(z, want)
