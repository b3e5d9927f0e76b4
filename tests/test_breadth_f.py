"""Issue 28 (part F): forms a kernel author writes that probes of our own found refused
(tests/programs/breadth_f.co), each run in both schedules on ragged sizes with NaN-poisoned
outputs and compared with float64 torch.

* buffers whose extents only the launch knows (a copy of a ``view`` of run-time rows, a ``chunkat``
  of a run-time extent) read and written at each thread's own element under a thread level of
  another extent: they live in scratch memory (lift/kernel.py ``_lift``);
* a ``dma.any`` / ``tma.any`` placeholder bound by a copy under a condition (the prefetch of a
  double buffer guarded on the last trip) and swapped after it (lift/futures.py
  ``bind_placeholders``);
* a thread level inside a warp role (``parallel t by 128 : thread`` in the consumer's loop), its
  threads reading the ring's slot at their own elements or at others' (the ring then in scratch
  memory; lift/kernel.py ``copied_levels``);
* bounded indices (LANGUAGE.md 7.2): ``p #+ 1`` / ``q #- 1`` as chunk indices and values, and a
  composite index under a name (``tile = k # p``: ``#tile``, ``chunkat(tile)``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernel_util import DEVICE

import croq2triton

PROGRAM = Path(__file__).parent / "programs" / "breadth_f.co"
NAN = float("nan")
F64 = torch.float64
SCHEDULES = ["source", "auto"]
_MODULES: dict[str, object] = {}


def _module(schedule: str) -> object:
    if schedule not in _MODULES:
        _MODULES[schedule] = croq2triton.load(PROGRAM, schedule=schedule)
    return _MODULES[schedule]


def _full(*shape: int) -> torch.Tensor:
    return torch.full(shape, NAN, device=DEVICE)


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE)


def _close(got: torch.Tensor, want: torch.Tensor, tol: float = 1e-5) -> None:
    torch.testing.assert_close(got.double().cpu(), want.double().cpu(), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "rows"), [(45, 20), (37, 32), (7, 9)])
def test_a_tile_of_run_time_rows_under_a_larger_thread_level(schedule: str, m: int, rows: int) -> None:
    x, y = _randn(m, 16), _full(m, 16)
    _module(schedule).runtime_rows(x, y, rows)  # type: ignore[attr-defined]
    _close(y, x.double() + 1)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [90, 100, 13])
def test_a_chunk_of_run_time_extent_written_in_place(schedule: str, n: int) -> None:
    x, y = _randn(n), _full(n)
    _module(schedule).chunk_write(x, y)  # type: ignore[attr-defined]
    whole = n // 4 * 4  # four chunks of n // 4: the remainder is no chunk's, left as it was
    want = torch.full((n,), NAN, dtype=F64)
    want[:whole] = x[:whole].double().cpu() * 3 - 1
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [29, 64, 50])
def test_a_chunk_of_run_time_extent_read_by_more_threads(schedule: str, n: int) -> None:
    x, y = _randn(n), _full(n)
    _module(schedule).chunk_lanes(x, y)  # type: ignore[attr-defined]
    blocks = -(-n // 8)
    length = n // blocks  # the chunk's extent: at most 8
    want = torch.empty(n, dtype=F64)
    for p in range(blocks):
        for t in range(8):
            if p * 8 + t < n:
                v = float(x[p * length + t]) if t < length else 0.0  # past the chunk: nothing of it
                want[p * 8 + t] = v * blocks + 8
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("k", [90, 32, 150])
def test_a_prefetch_under_a_condition_into_a_placeholder(schedule: str, k: int) -> None:
    rows = 3
    x, out = _randn(rows, k), _full(rows)
    _module(schedule).guarded_prefetch(x, out)  # type: ignore[attr-defined]
    trips = -(-k // 32)
    xd = F.pad(x.double().cpu(), (0, trips * 32 + 1 - k))
    want = torch.zeros(rows, dtype=F64)
    for j in range(trips):
        tile = xd[:, j * 32 : j * 32 + 32]
        valid = (j * 32 + torch.arange(32)) < k
        want += (tile * tile.flip(1) * valid).sum(1)
    _close(out, want, 1e-4)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("k", [100, 32, 64])
def test_a_prefetch_in_the_else_of_a_condition(schedule: str, k: int) -> None:
    rows = 4
    x, out = _randn(rows, k), _full(rows, 32)
    _module(schedule).guarded_else(x, out)  # type: ignore[attr-defined]
    trips = -(-k // 32)
    xd = F.pad(x.double().cpu(), (0, trips * 32 - k))
    want = 1 + sum(xd[:, j * 32 : j * 32 + 32] for j in range(trips))
    _close(out, want, 1e-5)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("rows", [14, 16, 3])
def test_a_thread_level_inside_a_warp_role_reading_other_threads_elements(schedule: str, rows: int) -> None:
    x, y = _randn(rows, 64), _full(rows, 64)
    _module(schedule).role_threads(x, y)  # type: ignore[attr-defined]
    pad = -(-rows // 4) * 4
    xd = F.pad(x.double().cpu(), (0, 0, 0, pad - rows)).reshape(-1, 2, 64)
    want = (xd.flip(1).flip(2) * 2).reshape(-1, 64)[:rows]  # each pair of rows reversed both ways
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("rows", [15, 6])
def test_a_thread_level_inside_a_warp_role_at_its_own_elements(schedule: str, rows: int) -> None:
    x, y = _randn(rows, 64), _full(rows, 64)
    _module(schedule).role_lanes(x, y, 1.5)  # type: ignore[attr-defined]
    _close(y, x.double() * 1.5 + 1)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [23, 40])
def test_a_chunk_index_with_one_chunk_more(schedule: str, n: int) -> None:
    x, y = _randn(n), _full(n)
    _module(schedule).one_more(x, y)  # type: ignore[attr-defined]
    length = n // 5  # five chunks, four blocks: the fifth and the remainder are no block's
    want = torch.full((n,), NAN, dtype=F64)
    want[: 4 * length] = x[: 4 * length].double().cpu()
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_composite_index_under_a_name(schedule: str) -> None:
    x, y = _randn(48), _full(48)
    _module(schedule).persistent_tiles(x, y)  # type: ignore[attr-defined]
    _close(y, x.double() + 6)  # six chunks of 8: '#tile' is 3 * 2


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [30, 21])
def test_bounds_changed_by_hash_plus_and_minus(schedule: str, n: int) -> None:
    x, y, z = _randn(n), _full(n), _full(n)
    _module(schedule).bound_arith(x, y, z)  # type: ignore[attr-defined]
    t = torch.arange(n) % 8
    blocks = -(-n // 8)
    _close(y, x.double() * 9 + blocks * 8 + t.double())  # #u = 9, #i = blocks * 8, u #- 3 = t
    length = n // 5  # six blocks, chunks of n // 5: the sixth's is what of it lies inside
    want = torch.full((n,), NAN, dtype=F64)
    want[: 6 * length] = x[: 6 * length].double().cpu()
    _close(z, want)


def _f16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE).half()


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(70, 40, 80), (64, 32, 32)])
def test_a_declared_fragment_with_a_fill_as_an_accumulator(schedule: str, m: int, n: int, k: int) -> None:
    a, b, c = _f16(m, k), _f16(n, k), _full(m, n)
    _module(schedule).filled_acc(a, b, c)  # type: ignore[attr-defined]
    _close(c, a.double() @ b.double().T + 0.5, 2e-2)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(70, 40), (64, 32)])
def test_an_array_of_declared_fragments(schedule: str, m: int, n: int) -> None:
    a, b, ct, c = _f16(m, 64), _f16(n, 64), _full(n, m), _full(m, n)
    _module(schedule).frag_halves(a, b, ct, c)  # type: ignore[attr-defined]
    ad, bd = a.double(), b.double()
    _close(ct, (ad[:, :32] @ bd[:, :32].T).T, 2e-2)
    _close(c, ad[:, 32:] @ bd[:, 32:].T, 2e-2)
