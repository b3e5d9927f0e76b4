"""Issue 28 (part E): what the refusals of the shared corpus asked for, in programs of our own
(tests/programs/breadth_e_*.co) run in both schedules on ragged sizes with NaN-poisoned outputs and
compared with float64 torch; and the programs that are not valid Croqtile, each rejected at the
construct with the rule it breaks.

* names used outside the scope that declares them (a ``parallel`` without braces holds only the
  next statement), or before their declaration; events and fragments outside ``parallel``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, diagnostics

import croq2triton

PROGRAMS = Path(__file__).parent / "programs"
NAN = float("nan")
SCHEDULES = ["source", "auto"]
_MODULES: dict[tuple[str, str], object] = {}


def _module(name: str, schedule: str) -> object:
    key = (name, schedule)
    if key not in _MODULES:
        _MODULES[key] = croq2triton.load(PROGRAMS / name, schedule=schedule)
    return _MODULES[key]


def _full(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    value = NAN if dtype.is_floating_point else -77
    return torch.full(shape, value, device=DEVICE, dtype=dtype)


def _close(got: torch.Tensor, want: torch.Tensor, tol: float = 1e-5) -> None:
    assert not torch.isnan(got).any(), "an output element was never written"
    torch.testing.assert_close(got.double().cpu(), want.double().cpu(), rtol=tol, atol=tol)


def _diagnostics(source: str) -> str:
    return diagnostics(source, "e.co")


# ----------------------------------------------------------------------------- scopes
def test_a_name_of_a_parallel_without_braces_used_after_it() -> None:
    message = _diagnostics(
        """
__co__ void scale(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block
    parallel t by 32 : thread
      i = p * 32 + t;
  if (i < N) y.at(i) = x.at(i) * 2.0f;
}
"""
    )
    assert "e.co:6:7: error: 'i' is not declared here (it is declared at line 5 inside a 'parallel')" in message
    assert "hint: a 'parallel' without braces holds only the next statement" in message


def test_a_loop_index_used_after_its_loop() -> None:
    message = _diagnostics(
        """
__co__ void last(global f32 [8, N] x, global f32 [N] y) {
  parallel p by 1 : block {
    foreach {r} in [8] { y.at(r) = x.at(r, 0); }
    y.at(0) = x.at(r, 1);
  }
}
"""
    )
    assert "e.co:5:20: error: 'r' is not declared here (it is declared at line 4 inside a 'foreach')" in message
    assert "'r' is known only inside that 'foreach'" in message


def test_a_buffer_used_before_its_declaration() -> None:
    message = _diagnostics(
        """
__co__ void early(global f32 [64] x, global f32 [64] y) {
  parallel p by 1 : block {
    dma.copy x => s;
    shared f32 [64] s;
    dma.copy s => y;
  }
}
"""
    )
    assert "e.co:4:19: error: 's' is used before its declaration at line 5" in message


def test_a_name_the_function_never_declares_is_not_an_out_of_scope_error() -> None:
    message = _diagnostics(
        """
__co__ void host_constant(global f32 [N] x) {
  parallel p by 1 : block { x.at(0) = kHostScale; }
}
"""
    )
    assert "not declared here" not in message and "before its declaration" not in message


@pytest.mark.parametrize(
    ("decl", "what"),
    [("event e;", "an 'event'"), ("frag f32 [16, 16] acc;", "a fragment ('frag')")],
)
def test_events_and_fragments_outside_parallel(decl: str, what: str) -> None:
    message = _diagnostics(
        f"""
__co__ void outside(global f32 [N] x) {{
  {decl}
  parallel p by 1 : block {{ x.at(0) = 1.0f; }}
}}
"""
    )
    assert f"e.co:3:3: error: {what} is only allowed inside 'parallel'" in message


# ----------------------------------------------------------------------------- |..| of an index
def test_the_size_of_an_index_is_an_error() -> None:
    message = _diagnostics(
        """
__co__ void sizes(global f32 [N, 8] x, global f32 [N] y) {
  parallel {r, c} by [N, 1] : block {
    with k in [8] {
      foreach k { y.at(r) = x.at(r, k) * |k + 1|; }
    }
    y.at(r) = y.at(r) + |x.span| + |r|;
  }
}
"""
    )
    assert "e.co:5:43: error: '|k|': 'k' is an index, not a shape; '|..|' counts the elements of a shape" in message
    assert "hint: write '#k' for its bound, 'k' for its value" in message
    assert "e.co:7:37: error: '|r|': 'r' is a parallel index, not a shape" in message
    assert message.count(": error: ") == 2, message  # '|x.span|' counts the elements of a shape


# ----------------------------------------------------------------------------- windows between launches
HOST = "breadth_e_host.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_remainder_of_a_tiling_and_a_squeezed_row_between_launches(schedule: str) -> None:
    m = _module(HOST, schedule)
    rows = 5
    x = torch.randn(rows, 21, device=DEVICE)
    tail, row, twice = _full(rows, 5), _full(21), _full(21)
    m.tails(x, tail, row, twice, 3)  # type: ignore[attr-defined]
    _close(tail, x[:, 16:])  # 21 % 8 = 5 columns from 2 * 8
    _close(row, x[3])
    _close(twice, 2.0 * x[3].double())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_views_with_explicit_strides_between_launches(schedule: str) -> None:
    m = _module(HOST, schedule)
    v = torch.randn(29, device=DEVICE)
    mat = torch.randn(7, 6, device=DEVICE)
    grid, cols = _full(4, 2), _full(6, 3)
    m.strides(v, grid, mat, cols)  # type: ignore[attr-defined]
    want = torch.stack([torch.stack([v[6 + 6 * i + 3 * j] for j in range(2)]) for i in range(4)])
    _close(grid, want)
    _close(cols, mat[3:6].T)
    with pytest.raises(croq2triton.CroqError, match=r"the view of 'v' \(27 elements\) from element 6 .* leaves it"):
        m.strides(v[:27], grid, mat, cols)  # type: ignore[attr-defined]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_padding_with_elements_between_between_launches(schedule: str) -> None:
    m = _module(HOST, schedule)
    x = torch.randint(-50, 50, (4, 3), dtype=torch.int32, device=DEVICE)
    y, z = _full(2, 7, dtype=torch.int32), _full(4, 5, dtype=torch.int32)
    m.spread(x, y, z)  # type: ignore[attr-defined]
    want_y = torch.full((2, 7), -7, dtype=torch.int32)
    want_y[:, 1:5:3] = x[0:2, 0:2].cpu()  # one border column, two between, two after
    assert torch.equal(y.cpu(), want_y)
    want_z = torch.full((4, 5), 5, dtype=torch.int32)
    want_z[1:3, 0::2] = x[2:4].cpu()  # the second [2, 3] block of rows
    assert torch.equal(z.cpu(), want_z)


# ----------------------------------------------------------------------------- view operations in kernels
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("rows", [7, 9])
def test_modspan_and_chunk_in_a_kernel(schedule: str, rows: int) -> None:
    m = _module("breadth_e_views.co", schedule)
    x = torch.randn(rows, 13, device=DEVICE)
    last, third, odd = _full(rows, 3), _full(rows, 4), _full(rows, 1)
    m.pieces(x, last, third, odd)  # type: ignore[attr-defined]
    _close(last, 2.0 * x[:, 10:].double())  # 13 % 5 = 3 columns from 2 * 5
    _close(third, x[:, 4:8])  # the second of three chunks of 13 // 3 = 4 columns
    _close(odd, x[:, 12:])  # 13 % 6 = 1 column from 2 * 6


def test_a_modspan_whose_remainder_only_the_launch_knows_translates() -> None:
    # a piece of N % 64 elements: a tile the launcher sizes (tests/test_breadth_f.py runs it)
    message = _diagnostics(
        """
__co__ void tail(global f32 [N] x, global f32 [64] y) {
  parallel p by 1 : block {
    dma.copy.zfill x.modspan(64) => y;
  }
}
"""
    )
    assert "error" not in message, message


# ----------------------------------------------------------------------------- dma.pad with interior padding
PAD = "breadth_e_pad.co"


def _padded(a: torch.Tensor, lo: list[int], hi: list[int], mid: list[int], value: float) -> torch.Tensor:
    """float64 reference of dma.pad (LANGUAGE.md 7.8)."""
    a = a.double().cpu()
    shape = [n + x + y + max(n - 1, 0) * m for n, x, y, m in zip(a.shape, lo, hi, mid)]
    out = torch.full(shape, value, dtype=torch.float64)
    out[tuple(slice(x, x + (n - 1) * (m + 1) + 1, m + 1) for n, x, m in zip(a.shape, lo, mid))] = a
    return out


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_interior_padding_into_a_fresh_buffer(schedule: str) -> None:
    m = _module(PAD, schedule)
    rows = 7
    x = torch.randn(rows, 3, device=DEVICE)
    y = _full(rows, 9)
    m.spread(x, y)  # type: ignore[attr-defined]
    xz = torch.cat([x.cpu(), torch.zeros(2, 3)])  # the last block reads past x: zeros
    want = torch.cat([_padded(xz[2 * b : 2 * b + 2], [0, 1], [1, 1], [0, 2], 0.5) for b in range(3)])
    _close(y, want[:rows])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_padded_tile_past_its_tensor_reads_zero_inside_its_borders(schedule: str) -> None:
    # the pad value was read past x as well until 2026-12-06
    m = _module(PAD, schedule)
    x = torch.randn(13, device=DEVICE)
    y = _full(20)
    m.tail_tiles(x, y)  # type: ignore[attr-defined]
    xz = torch.cat([x.cpu(), torch.zeros(3)])
    want = torch.cat([_padded(xz[8 * b : 8 * b + 8], [1], [1], [0], -1.0) for b in range(2)])
    _close(y, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_interior_padding_between_tensors(schedule: str) -> None:
    m = _module(PAD, schedule)
    rows = 5
    x = torch.randn(rows, 3, device=DEVICE)
    z = _full(9, 9)
    m.between(x, z)  # type: ignore[attr-defined]
    xz = torch.cat([x.cpu(), torch.zeros(1, 3)])
    want = torch.cat([_padded(xz[2 * b : 2 * b + 2], [0, 1], [0, 1], [1, 2], -2.0) for b in range(3)])
    _close(z, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_interior_padding_out_of_a_buffer(schedule: str) -> None:
    m = _module(PAD, schedule)
    rows = 6
    x = torch.randn(rows, 4, device=DEVICE)
    y = _full(rows, 9)
    m.out_of_buffer(x, y)  # type: ignore[attr-defined]
    _close(y, torch.cat([_padded(x[b : b + 1] ** 2, [0, 1], [0, 1], [0, 1], 9.0) for b in range(rows)]))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_interior_padding_of_each_threads_window(schedule: str) -> None:
    m = _module(PAD, schedule)
    rows = 11
    x = torch.randn(rows, 5, device=DEVICE)
    y = _full(rows, 12)
    m.per_thread(x, y)  # type: ignore[attr-defined]
    want = torch.cat([_padded(x[r : r + 1], [0, 2], [0, 1], [0, 1], -1.0) for r in range(rows)])
    _close(y, 2.0 * want.flip(1))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_threads_window_whose_bounds_follow_the_thread(schedule: str) -> None:
    # the window's bounds were compared lane against column (a silent wrong result before part E)
    m = _module("breadth_e_views.co", schedule)
    rows = 7
    x = torch.randn(rows, 6, device=DEVICE)
    y = _full(rows, 6)
    m.own_rows(x, y)  # type: ignore[attr-defined]
    _close(y, x.flip(1).double() - 1.0)


# ----------------------------------------------------------------------------- strided views of matrices
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("rows", "cols"), [(7, 6), (4, 9)])
def test_views_with_explicit_strides_of_windows_of_a_matrix(schedule: str, rows: int, cols: int) -> None:
    m = _module("breadth_e_strided.co", schedule)
    x = torch.randn(rows, cols, device=DEVICE)
    diag, cl, corner = _full(rows, 3), _full(4, rows), _full(2, 2)
    m.walks(x, diag, cl, corner)  # type: ignore[attr-defined]
    xz = torch.cat([x.cpu(), torch.zeros(3, cols)])  # the row-major elements past x read zero (.zfill)
    want = torch.stack([torch.stack([xz[r + j, j] for j in range(3)]) for r in range(rows)])
    _close(diag, want)
    _close(cl, x[:, 1:5].T)
    _close(corner, x[0:2, 2:5:2])


# ----------------------------------------------------------------------------- addresses in host code
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_address_of_an_element_in_host_code(schedule: str, capfd: pytest.CaptureFixture[str]) -> None:
    m = _module("breadth_e_address.co", schedule)
    x = torch.randint(-9, 9, (5, 3), dtype=torch.int32, device=DEVICE)
    m.addresses(x)  # type: ignore[attr-defined]
    lines = [line for line in capfd.readouterr().out.splitlines() if " @ " in line]
    assert len(lines) == 5
    for r, line in enumerate(lines):
        head, address = line.split(" @ ")
        assert head == f"{r}: {int(x[r, 2])}"
        assert int(address) == x.data_ptr() + (r * 3 + 2) * 4


# ----------------------------------------------------------------------------- C casts, dense views
CASTS = "breadth_e_casts.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_c_casts_and_a_dense_view_in_kernels(schedule: str) -> None:
    m = _module(CASTS, schedule)
    rows = 5
    x = torch.randn(rows, 4, device=DEVICE) * 4
    t, d, v = _full(rows, 4, dtype=torch.int32), _full(rows, 4, dtype=torch.float64), _full(10)
    m.truncs(x, t, d, v)  # type: ignore[attr-defined]
    assert torch.equal(t.cpu(), (x.cpu() * 3.0).trunc().to(torch.int32))
    wrapped = (torch.arange(4) + 250) % 256  # unsigned char: 250..253 (no wrap) stays as it is
    _close(d, x.double().cpu() + wrapped.double())
    _close(v, x.reshape(-1)[2:12])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_c_casts_and_a_dense_view_in_host_code(schedule: str) -> None:
    m = _module(CASTS, schedule)
    n = 37
    x = torch.randn(n, device=DEVICE)
    y, w = _full(n), _full(3, 2)
    m.scaled(x, y, w, 3, -1.3)  # type: ignore[attr-defined]
    _close(y, x.double() * (3.0 + int(-1.3 * 2.5)))
    _close(w, x[2:8].reshape(3, 2))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_element_scalar_declared_without_a_value_in_host_code(schedule: str) -> None:
    m = _module(HOST, schedule)
    x = torch.randn(13, dtype=torch.float64, device=DEVICE)
    y = _full(13, dtype=torch.float64)
    total = m.row_sum(x, y)  # type: ignore[attr-defined]
    _close(y, 3.0 * x)
    assert abs(total - 3.0 * float(x.sum())) < 1e-9


# ----------------------------------------------------------------------------- more invalid programs
@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        # one index per dimension (LANGUAGE.md 7.5): was an internal error
        ("parallel p by 4 : block { x.at(p, 0) = 1.0f; }", "2:29", "'x' has 1 dimension, but '.at' gives 2 indices"),
        (
            "parallel {p, q} by [4, 2] : block { x.at({p, q}) = 1.0f; }",
            "2:39",
            "'x' has 1 dimension, but '.at' gives 2",
        ),
        # waiting a synchronous future; an asynchronous copy never waited for (LANGUAGE.md 7.8)
        (
            "parallel p by 1 : block { f = dma.copy x => shared; wait f; }",
            "2:60",
            "'wait f': the copy that gives 'f' is synchronous",
        ),
        (
            "parallel p by 1 : block { g = dma.copy.async x.subspan(8).at(p) => shared; }",
            "2:29",
            "the asynchronous copy into 'g' is never waited for",
        ),
        # a bracket list is a shape: declared with ':' (LANGUAGE.md 5)
        ("t = [1, 2]; parallel p by 4 : block { x.at(p) = 1.0f; }", "2:7", "'t = [..]': a bracket list is a shape"),
        # statements where the language does not have them, or on what they do not take
        ("yield; parallel p by 4 : block { x.at(p) = 1.0f; }", "2:3", "'yield' outside 'parallel'"),
        ("parallel p by 4 : block { if (p == 1) break; x.at(p) = 1.0f; }", "2:41", "'break' outside a loop"),
        ("parallel p by 4 : block { wait x; }", "2:34", "'wait' takes futures and events; 'x' is a tensor or buffer"),
        (
            "parallel p by 4 : block { shared f32 [4] s; trigger s; }",
            "2:55",
            "'trigger' takes events; 's' is a tensor or buffer",
        ),
        ("parallel p by 4 : block { x.at(p) = #x; }", "2:39", "'#x': 'x' is a tensor or buffer, not a bounded index"),
        ("mdspan<3> s : [4, 4]; parallel p by 4 : block { x.at(p) = 1.0f; }", "2:17", "'mdspan<3> s' is given 2"),
        (
            "parallel p by 4 : block { dma.copy x.chunkat(p) => x.chunkat(p) after g; }",
            "2:29",
            "'after g': 'g' is not declared",
        ),
        # levels of nested statements go from coarse to fine (LANGUAGE.md 7.3)
        (
            "parallel p by 4 : thread { parallel q by 4 : block { x.at(p) = 1.0f; } }",
            "2:39",
            "level ': block' is nested inside the finer level ': thread'",
        ),
    ],
)
def test_more_invalid_programs_name_their_rule(body: str, where: str, message: str) -> None:
    found = _diagnostics(f"__co__ void f(global f32 [64] x) {{\n  {body}\n}}\n")
    assert f"e.co:{where}: error: {message}" in found, found


def test_an_async_copy_waited_in_a_pipeline_is_no_error() -> None:
    found = _diagnostics(
        """
__co__ void piped(global f32 [64] x, global f32 [64] y) {
  parallel p by 1 : block {
    foreach k in [4] {
      f = dma.copy.async x.subspan(16).at(k) => shared;
      wait f;
      dma.copy f.data => y.subspan(16).at(k);
    }
  }
}
"""
    )
    assert "error" not in found, found


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_window_wholly_outside_its_tensor_reads_zero(schedule: str, tmp_path: Path) -> None:
    # LANGUAGE.md 14.3; its mask is false everywhere (was an internal error of the verifier)
    src = """
__co__ void outside(global f32 [64] x, global f32 [16] y) {
  parallel p by 1 : block {
    g = dma.copy.zfill x.subspan(16).at(4) => shared;
    dma.copy g.data => y;
  }
}
"""
    (tmp_path / "outside.co").write_text(src)
    m = croq2triton.load(tmp_path / "outside.co", schedule=schedule)
    y = _full(16)
    m.outside(torch.randn(64, device=DEVICE), y)  # type: ignore[attr-defined]
    assert torch.equal(y.cpu(), torch.zeros(16))


# ----------------------------------------------------------------------------- builtins, parallel tuples
MATH = "breadth_e_math.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_activation_builtins_and_a_parallel_tuple(schedule: str) -> None:
    m = _module(MATH, schedule)
    rows, cols = 5, 7
    x = torch.randn(rows, cols, device=DEVICE) * 4
    x[1, 2], x[2, 3], x[3, 4] = 0.0, float("inf"), float("nan")
    g, sp, flags = _full(rows, cols), _full(rows, cols), _full(rows, cols, dtype=torch.int32)
    m.acts(x, g, sp, flags)  # type: ignore[attr-defined]
    xd = x.double().cpu()
    finite = torch.isfinite(xd)
    want_g = 0.5 * xd * (1.0 + torch.erf(xd / math.sqrt(2.0)))
    _close(g[finite], want_g[finite])
    want_sp = torch.nn.functional.softplus(xd) * torch.sign(xd)
    _close(sp[finite], want_sp[finite])
    assert torch.isnan(sp[3, 4]) and torch.isnan(g[3, 4])  # NaN in, NaN out
    want_flags = torch.isfinite(xd).int() * 10 + torch.sign(torch.arange(cols) - 2).int()
    assert torch.equal(flags.cpu(), want_flags)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_tuple_of_thread_indices(schedule: str) -> None:
    m = _module(MATH, schedule)
    n = 13
    x = torch.randn(n, 4, device=DEVICE)
    y = _full(4, n)
    m.transposed(x, y)  # type: ignore[attr-defined]
    _close(y, (x.double() - torch.arange(4, dtype=torch.float64, device=DEVICE)).T)


# ----------------------------------------------------------------------------- index tuples
INDEX = "breadth_e_index.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_index_tuples_as_element_indices(schedule: str) -> None:
    m = _module(INDEX, schedule)
    rows, cols = 5, 7
    x = torch.randn(rows, cols, device=DEVICE)
    y = _full(rows, cols)
    m.coords(x, y)  # type: ignore[attr-defined]
    grid = torch.arange(rows).view(-1, 1) * 100 + torch.arange(cols).view(1, -1)
    _close(y, x.double().cpu() + grid.double())
    y = _full(rows, cols)
    m.counted(x, y)  # type: ignore[attr-defined]
    _close(y, 2.0 * x.double() + rows * cols)
    y = _full(3, 4)
    m.per_element(x[:3, :4].contiguous(), y)  # type: ignore[attr-defined]
    _close(y, x[:3, :4].double() - 1.0)


# ----------------------------------------------------------------------------- break and continue
EXITS = "breadth_e_exits.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_break_and_continue_in_a_blocks_loop(schedule: str) -> None:
    m = _module(EXITS, schedule)
    rows, cols, step = 7, 11, 3
    x = torch.randn(rows, cols, device=DEVICE)
    stop = torch.tensor([0, 1, 4, 11, 6, 9, 20], dtype=torch.int32, device=DEVICE)
    out = _full(rows)
    m.until(x, stop, out, step)  # type: ignore[attr-defined]
    want = []
    for r in range(rows):
        s = 0.0
        for k in range(cols):
            if k == int(stop[r]):
                break
            if k % step == 0:
                s -= 1.0
                continue
            s += float(x[r, k])
        want.append(s)
    _close(out, torch.tensor(want, dtype=torch.float64))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_break_of_each_thread(schedule: str) -> None:
    m = _module(EXITS, schedule)
    rows, cols = 13, 9
    x = torch.randn(rows, cols, device=DEVICE)
    at = _full(rows, dtype=torch.int32)
    m.first_above(x, at, 1.0)  # type: ignore[attr-defined]
    above = x.cpu() > 1.0
    want = torch.where(above.any(1), above.int().argmax(1), torch.tensor(-1)).to(torch.int32)
    assert torch.equal(at.cpu(), want)


# ----------------------------------------------------------------------------- while loops
WHILE = "breadth_e_while.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_while_loop_on_loaded_data(schedule: str) -> None:
    m = _module(WHILE, schedule)
    rows = 7
    x = torch.randn(rows, 4, device=DEVICE)
    small, count = _full(rows), _full(rows, dtype=torch.int32)
    m.halve(x, small, count, 0.75)  # type: ignore[attr-defined]
    want_v, want_n = [], []
    for r in range(rows):
        v, n = abs(float(x[r, 0].float())) * 64.0, 0
        while v >= 0.75:
            v, n = v * 0.5, n + 1
        want_v.append(v)
        want_n.append(n)
    _close(small, torch.tensor(want_v, dtype=torch.float64))
    assert count.cpu().tolist() == want_n


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_while_loop_with_a_break(schedule: str) -> None:
    m = _module(WHILE, schedule)
    rows, cols = 9, 5
    x = torch.randn(rows, cols, device=DEVICE)
    at = _full(rows, dtype=torch.int32)
    m.search(x, at, 0.8)  # type: ignore[attr-defined]
    above = x.cpu() > 0.8
    assert torch.equal(at.cpu(), torch.where(above.any(1), above.int().argmax(1), torch.tensor(-1)).int())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_index_a_loop_advances_is_masked(schedule: str) -> None:
    # k = 0 before the loop bounded k to 0 inside it: x.at(r, k) was read without a mask, past the
    # row into the next one (a silent wrong result before part E)
    m = _module(WHILE, schedule)
    rows = 5
    x = torch.randn(rows, 6, device=DEVICE)
    out = _full(rows)
    m.advance(x, out)  # type: ignore[attr-defined]
    _close(out, x.double().sum(1))


def test_a_while_loop_whose_condition_differs_between_threads_translates() -> None:
    # each thread leaves the loop when its own condition fails (tests/test_breadth_f.py runs it)
    message = _diagnostics(
        """
__co__ void lanes(global f32 [R, 8] x, global f32 [R] y) {
  parallel r by cdiv(R, 4) : block, t by 4 : thread {
    mutable int k = 0;
    while (x.at(r # t, k) > 0.0f) { k = k + 1; }
    y.at(r # t) = __to<f32>(k);
  }
}
"""
    )
    assert "error" not in message, message
