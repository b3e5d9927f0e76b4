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
  composite index under a name (``tile = k # p``: ``#tile``, ``chunkat(tile)``);
* fragments declared with a fill as MMA accumulators, arrays of them (``frag f32 [64, 32] acc[2]
  {0.0f}``), and fragment arrays indexed by the counters of a loop of constant trip count (the
  loop unrolled, its ``chunkat`` by a counter a ``chunk(..).at(..)``; lift/fragarrays.py);
* shapes the launcher computes from expressions of the sizes (``tile : [M / 4, N / 2]``,
  ``rows : whole / {4, 1}``) as a kernel's view extents, buffer shapes, loop extents and ``tile(k)``
  (were "'tile' is not declared"), and index tuples it computes (``o = {M / 2, N - 4}``);
* index tuples in arithmetic as element coordinates (``x.at(c * 2 - {0, 1})``), and named windows
  of a tensor whose origin each thread places, read, written and added to by element.

* ``__device__`` helpers called with template arguments (``call SQ<float>(x)`` of ``template
  <typename T>``, ``call SHIFTED<3>(i)`` of ``template <int S>``; were "a C++ function"), with
  default arguments (``float t = 0.25f``), declared ``__host__ __device__`` after their template.

* ``while`` loops whose condition differs between threads (each thread leaves the loop when its
  condition first fails; the program loops while any thread is in it; lift/loops.py
  ``lanes_while``): a binary search, a loop with a ``break``, a loop on loaded data.

* ``return x`` of a parameter returns a copy of it (LANGUAGE.md 8; it returned the parameter's
  own tensor).

* ``.modspan`` in a kernel where the remainder is known only at launch (a tile the launcher
  sizes, ``max(N % e, 1)`` elements).

* a copy into fresh ``global`` memory inside a kernel (a buffer only that block names).

* a per-thread ``dma.transp`` of a thread's window into its own local buffer.

A mistranslation: an element of a named view with explicit strides (``v = x.view(1, 4 : C, 2)``,
``v.at(0, j)``) was read one element apart, not ``2`` (lift/elements.py).

And programs that are not valid, accepted before: an asynchronous copy whose data is read with no
``wait`` (LANGUAGE.md 7.8), an accumulator stored into a smaller window than its tile.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernel_util import DEVICE, diagnostics

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
    _close(y, x.double().cpu() * 9 + blocks * 8 + t.double())  # #u = 9, #i = blocks * 8, u #- 3 = t
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


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(70, 40), (64, 32)])
def test_fragments_of_an_array_picked_by_a_loop_counter(schedule: str, m: int, n: int) -> None:
    a, b, c0, c1 = _f16(m, 64), _f16(n, 64), _full(m, n), _full(m, n)
    _module(schedule).frag_loop(a, b, c0, c1)  # type: ignore[attr-defined]
    ad, bd = a.double(), b.double()
    _close(c0, ad[:, :32] @ bd[:, :32].T, 2e-2)
    _close(c1, ad[:, 32:] @ bd[:, 32:].T, 2e-2)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(64, 64, 48), (32, 96, 16)])
def test_a_grid_of_fragments_over_chunks_picked_by_loop_counters(schedule: str, m: int, n: int, k: int) -> None:
    a, b, c = _f16(m, k), _f16(n, k), _full(m, n)
    _module(schedule).warp_grid(a, b, c)  # type: ignore[attr-defined]
    _close(c, a.double() @ b.double().T, 2e-2)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(12, 10), (13, 7)])
def test_a_tile_shape_the_launcher_computes(schedule: str, m: int, n: int) -> None:
    x, y = _randn(m, n), _full(m, n)
    _module(schedule).host_tile(x, y)  # type: ignore[attr-defined]
    want = torch.full((m, n), NAN, dtype=F64)
    rows, cols = m // 4 * 4, n // 2 * 2  # four by two tiles of [m / 4, n / 2]: the rest is no tile's
    want[:rows, :cols] = x[:rows, :cols].double().cpu() * 2
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(12, 10), (9, 5)])
def test_shapes_derived_at_host_level_as_view_extents(schedule: str, m: int, n: int) -> None:
    x, y, z = _randn(m, n), _full(m, n), _full(m, n)
    _module(schedule).host_derived(x, y, z)  # type: ignore[attr-defined]
    want_y = torch.full((m, n), NAN, dtype=F64)
    want_y[: m // 4 * 4] = x[: m // 4 * 4].double().cpu()
    _close(y, want_y)
    want_z = torch.full((m, n), NAN, dtype=F64)
    want_z[: m // 4 * 4, : n // 2 * 2] = x[: m // 4 * 4, : n // 2 * 2].double().cpu()
    _close(z, want_z)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(11, 9), (8, 4)])
def test_an_index_tuple_the_launcher_computes(schedule: str, m: int, n: int) -> None:
    x, y, z = _randn(m, n), _full(4, 4), _full(1)
    _module(schedule).host_origin(x, y, z)  # type: ignore[attr-defined]
    r, c = m // 2, n - 4
    xd = F.pad(x.double().cpu(), (0, 4, 0, 4))  # the window may pass the tensor's end: zeros
    _close(y, xd[r : r + 4, c : c + 4])
    _close(z, (xd[r, c] + xd[r + 1, c + 1]).reshape(1))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(20, 12), (9, 7)])
def test_index_tuples_of_thread_levels_as_coordinates_and_origins(schedule: str, m: int, n: int) -> None:
    x, y, z = _randn(m, n), _full(m, n), _full(8, 8, 2, 2)
    _module(schedule).tuple_coords(x, y, z)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    xp = F.pad(xd, (1, 16, 0, 16))  # reads outside the tensor are zero (a column -1 too)
    want = torch.full((m, n), NAN, dtype=F64)
    for i in range(8):
        for j in range(8):
            if i + 1 < m and j < n:
                want[i + 1, j] = xp[2 * i, 2 * j] + xp[i, j + 1]
    _close(y, want)
    xq = F.pad(xd, (0, 16, 0, 16))
    want_z = torch.stack([torch.stack([xq[2 * i : 2 * i + 2, j : j + 2] for j in range(8)]) for i in range(8)])
    _close(z, want_z)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("h", "w"), [(12, 19), (10, 17)])
def test_windows_each_thread_places_written_by_element(schedule: str, h: int, w: int) -> None:
    x, out = _randn(20, 3), torch.zeros(h, w, device=DEVICE)
    _module(schedule).lane_windows(x, out)  # type: ignore[attr-defined]
    want = torch.zeros(h, w, dtype=F64)
    for i in range(4):
        for j in range(5):
            for a in range(2):
                if i * 3 + a < h:
                    want[i * 3 + a, j * 4] = float(x[i * 5 + j, a])
            if i * 3 + 1 < h and j * 4 + 2 < w:
                want[i * 3 + 1, j * 4 + 2] += 1
    _close(out, want)


# ----------------------------------------------------------------------------- invalid programs
def _diagnostics(source: str) -> str:
    return diagnostics(source, "f.co")


def test_an_async_copy_read_without_a_wait_is_an_error() -> None:
    source = """
__co__ void f(global f32 [64] x, global f32 [64] y) {
  parallel p by 1 : block {
    g = dma.copy.async x => shared;
    dma.copy g.data => y;
  }
}
"""
    message = _diagnostics(source)
    assert "f.co:4:5: error: the asynchronous copy into 'g' is never waited for" in message
    assert "hint: add 'wait g;' before the data is used, or drop '.async'" in message
    assert "error" not in _diagnostics(source.replace("    dma.copy g.data", "    wait g;\n    dma.copy g.data"))


@pytest.mark.parametrize(
    ("store", "shown"),
    [
        (
            "mma.store acc, c;",
            "mma.store of 'acc' [64, 64] into 'c' [32, 64]: the accumulator is larger along dimension 0 (64 > 32)",
        ),
        (
            "mma.store.transp acc, c.subspan(32, 16).at(0, 0);",
            "mma.store.transp of 'acc' [64, 64] into 'c.subspan(32, 16).at(0, 0)' [32, 16]: the accumulator is larger"
            " along dimension 0 (64 > 32)",
        ),
    ],
)
def test_an_accumulator_stored_into_a_smaller_window_is_an_error(store: str, shown: str) -> None:
    source = f"""
__co__ void f(global f16 [64, 64] a, global f32 [32, 64] c) {{
  parallel p by 1 : block, by 1 : group-4 {{
    sa = dma.copy a => shared;
    acc = mma.fill.f32 0.0f;
    mma.row.row acc, sa.data, sa.data;
    {store}
  }}
}}
"""
    message = _diagnostics(source)
    assert f"f.co:7:5: error: in 'f': {shown}" in message, message
    assert "hint: store into a window of the accumulator's shape (a smaller one with 'mma.store.mask')" in message
    masked = source.replace(store, "mma.store.mask acc, c.view(64, 64).from(0, 0), 32;")
    assert "error" not in _diagnostics(masked)  # the first 32 rows of a window of the tensor


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("r", "c"), [(5, 9), (3, 12)])
def test_a_named_view_with_explicit_strides_read_by_element(schedule: str, r: int, c: int) -> None:
    flat, y = _randn(r * c), _full(r, 4)
    _module(schedule).strided_named(flat, y, c)  # type: ignore[attr-defined]
    padded = F.pad(flat.double().cpu(), (0, 16))
    want = torch.stack([padded[k * c + 2 + 2 * torch.arange(4)] for k in range(r)])  # from(r, 1): r * C + 1 * 2
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(7, 5), (30, 3)])
def test_columns_as_strided_views_read_and_written_by_element(schedule: str, m: int, n: int) -> None:
    x, xt, twice = _randn(m, n), _full(n, m), _full(m, n)
    _module(schedule).strided_columns(x, xt, twice)  # type: ignore[attr-defined]
    _close(xt, x.double().T)
    _close(twice, x.double() * 2)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [40, 7])
def test_helpers_with_template_and_default_arguments(schedule: str, n: int) -> None:
    x, y, z, w, v = _randn(n), _full(n), torch.full((n,), -77, dtype=torch.int32, device=DEVICE), _full(n), _full(n)
    _module(schedule).templated(x, y, z, w, v)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    s = xd * xd
    i = torch.arange(n)
    _close(y, s)
    assert torch.equal(z.cpu().long(), i * 8 + (i - 3) ** 2)
    lerp, lerp2 = xd + (s - xd) * 0.25, xd + (s - xd) * 0.75
    _close(w, torch.maximum(lerp.abs(), lerp2.abs()))
    _close(v, xd * 3)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("b", "n"), [(13, 100), (1, 9)])
def test_a_binary_search_in_each_thread(schedule: str, b: int, n: int) -> None:
    bounds = torch.sort(_randn(b)).values
    x, idx = _randn(n) * 1.5, torch.full((n,), -77, dtype=torch.int32, device=DEVICE)
    _module(schedule).bucketize(bounds, x, idx)  # type: ignore[attr-defined]
    assert torch.equal(idx.cpu().long(), torch.searchsorted(bounds.cpu(), x.cpu()))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_while_loop_with_a_break_in_each_thread(schedule: str) -> None:
    x = torch.randint(1, 40, (45,), dtype=torch.int32, device=DEVICE)
    steps = torch.full((45,), -77, dtype=torch.int32, device=DEVICE)
    _module(schedule).collatz(x, steps)  # type: ignore[attr-defined]
    want = []
    for v in x.tolist():
        k = 0
        while v > 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            k += 1
            if k >= 50:
                break
        want.append(k)
    assert steps.cpu().tolist() == want


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("rows", [10, 4])
def test_a_while_loop_on_each_threads_loaded_data(schedule: str, rows: int) -> None:
    x = _randn(rows, 8)
    x[0] = x[0].abs() + 0.1  # all positive: the loop runs past the row, where reads are zero
    y = _full(rows)
    _module(schedule).leading(x, y)  # type: ignore[attr-defined]
    want = [next((k for k in range(8) if x[r, k] <= 0), 8) for r in range(rows)]
    _close(y, torch.tensor(want, dtype=F64))
    y = _full(rows)
    _module(schedule).leading_block(x, y)  # type: ignore[attr-defined]
    _close(y, torch.tensor(want, dtype=F64))  # was an internal error: the mask taken before the loop


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_returning_a_parameter_returns_a_copy(schedule: str) -> None:
    x = _randn(20)
    before = x.clone()
    got = _module(schedule).doubled_copy(x)  # type: ignore[attr-defined]
    _close(got, before.double() * 2)
    _close(x, before.double() * 2)  # the kernel wrote the parameter
    got.fill_(0.0)
    _close(x, before.double() * 2)  # the result is not the parameter's storage


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [100, 128, 70])
def test_the_tail_piece_of_a_modspan_known_at_launch(schedule: str, n: int) -> None:
    x, y = _randn(n), _full(64)
    _module(schedule).tail64(x, y)  # type: ignore[attr-defined]
    rest = n % 64
    want = torch.zeros(64, dtype=F64)
    if rest:
        want[:rest] = x[n - rest :].double().cpu()  # 64 divides n: one element past the end, read as zero
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("r", "n"), [(3, 21), (2, 16), (4, 13)])
def test_row_tails_of_a_modspan_through_a_buffer_sized_at_launch(schedule: str, r: int, n: int) -> None:
    x, y = _randn(r, n), _full(r, n)
    _module(schedule).row_tails(x, y)  # type: ignore[attr-defined]
    want = torch.full((r, n), NAN, dtype=F64)
    start = n // 8 * 8
    want[:, start:] = x[:, start:].double().cpu()  # nothing where 8 divides n (the piece lies past the row)
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [40, 32])
def test_a_copy_into_fresh_global_memory_in_a_kernel(schedule: str, n: int) -> None:
    x, y = _randn(n), _full(n)
    _module(schedule).fresh_global(x, y)  # type: ignore[attr-defined]
    tiles = F.pad(x.double().cpu(), (0, -n % 16)).reshape(-1, 16)
    _close(y, (tiles.flip(1) + tiles).reshape(-1)[:n])


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [16, 13])
def test_each_thread_transposes_its_own_window(schedule: str, n: int) -> None:
    x, y = _randn(n, 3), _full(8, 3, 2)
    _module(schedule).lane_transp(x, y)  # type: ignore[attr-defined]
    xd = F.pad(x.double().cpu(), (0, 0, 0, 16 - n))  # rows past the tensor read zero
    _close(y, xd.reshape(8, 2, 3).transpose(1, 2))
