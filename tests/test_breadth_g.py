"""Issue 28 (part G): copies, views, buffers, index tuples and host code that valid kernels use and
we refused (tests/programs/breadth_g.co), each run in both schedules on ragged sizes with
NaN-poisoned outputs and compared with float64 torch.

* a ``tma.copy.swiz<N>`` whose box rows are wider than the swizzle span (a hardware box would be
  split; the swizzle never changes what is copied): masked accesses with a warning, not a refusal;
  the same names declared in two warp roles (``row = r`` in each: one name assigned twice in the
  kernel) no longer fail the IR verifier, which now sees through an assignment of program ids.
* host-level conversions to narrow types (``__to<bf16>(f)``, ``__to<u8>(i)``; were refused) round
  or wrap as C does (sema/ccast.py), and so does a host scalar's declaration or assignment
  of a value of another type (``f16 h = f``, ``t = f * 3.0f`` into an ``s32``: they kept the value
  unconverted, a float in an integer).
* ``v(k)`` of a bounded variable (``k(1)``: the index 1 among ``#k``); index tuples in shapes
  (``with {a, b} in x.span / {#p, 8}``, ``[[#a, 32] / {1, #b}]``); ``cdiv`` of a shape by an index
  tuple, in kernels and at host level; a grid bound of a tensor's extent (``x.span(0)``); ``|x|``
  of spanned data.
* arrays of buffers: one slot under a name (``v = s[1][0]``), ``span_as`` of a slot or of a part
  that is one run of the buffer (``s[1][0].span_as(8, 8)``: the array then lives in scratch
  memory), arrays of buffers of run-time shape (``shared f32 [1, C] rows[2]``).
* ``x++`` / ``++x`` / ``x--`` / ``--x`` as values; scalars declared without a value (zero until
  assigned); ``println`` of a shape and of an index tuple.
* a ``span_as`` of a tensor to its own shape that several MMA units store through.
* ``dma.pad`` between buffers (borders and interior padding); copies into fresh memory that
  nothing reads, dropped where the lifting does not take their form, the user's errors in them
  still reported.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, diagnostics, load_once, poisoned, randn

PROGRAM = Path(__file__).parent / "programs" / "breadth_g.co"
SCHEDULES = ["source", "auto"]


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("b", "s"), [(2, 37), (3, 5)])
def test_a_box_wider_than_its_swizzle_span(schedule: str, b: int, s: int) -> None:
    x, y = randn(b, s, 64), poisoned(b, s, 64)
    _module(schedule).wide_swizzle(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double() * 2 + 1, atol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("b", "s"), [(2, 19), (1, 8)])
def test_names_declared_in_two_roles(schedule: str, b: int, s: int) -> None:
    x, y = randn(b, s, 32), poisoned(b, s, 32)
    _module(schedule).twice_named(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double())


def _rounded(v: float, dtype: torch.dtype) -> float:
    return float(torch.tensor(v, dtype=torch.float64).to(dtype))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("i", "f"), [(300, 1.2345678), (-129, -7.77), (70000, 0.333)])
def test_host_conversions_to_narrow_types(schedule: str, i: int, f: float) -> None:
    got = _module(schedule).host_narrow(i, f)  # type: ignore[attr-defined]
    f32 = _rounded(f, torch.float32)
    z, h = _rounded(f32, torch.bfloat16), _rounded(f32, torch.float16)
    b = i % 256
    s = (i + 2**15) % 2**16 - 2**15
    t = int(_rounded(f32 * 3.0, torch.float32))
    c = (65530 + 12) % 2**16
    want = z * 1000.0 + h * 100.0 + b + s * 0.5 + t * 0.25 + c
    assert abs(got - want) <= 1e-6 * abs(want), (got, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [45, 7])
def test_a_bf16_host_scalar_passed_to_a_kernel(schedule: str, n: int) -> None:
    x, y = randn(n), poisoned(n)
    _module(schedule).scaled_by_bf16(x, y, 1.2345678)  # type: ignore[attr-defined]
    assert_close(y, x.double() * _rounded(1.2345678, torch.bfloat16), rtol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [13, 6])
def test_getith_of_a_bounded_variable(schedule: str, n: int) -> None:
    x, y = randn(n, 16), poisoned(n, 8)
    _module(schedule).getith_chunks(x, y)  # type: ignore[attr-defined]
    xd = x.double()
    assert_close(y, torch.cat([xd[:, 4:8] + 20, xd[:, 12:16] - 2], 1), atol=1e-5)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [14, 3])
def test_array_slots_and_span_as_of_parts(schedule: str, n: int) -> None:
    x, y = randn(n, 16), poisoned(n, 16)
    _module(schedule).array_views(x, y)  # type: ignore[attr-defined]
    xd = x.double()
    assert_close(y, xd * 1011 + xd.flip(1) * 100, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("n", "c"), [(13, 6), (5, 10)])
def test_a_grid_bound_of_a_tensor_extent(schedule: str, n: int, c: int) -> None:
    x, y = randn(n, c), poisoned(n, c)
    _module(schedule).span_grid(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double().cpu() - (torch.arange(c) // 2).double(), atol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [11, 4])
def test_index_tuples_as_extents_of_shapes(schedule: str, n: int) -> None:
    x, y = randn(n, 32), poisoned(n, 32)
    _module(schedule).tuple_shapes(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double() * 2 + 4, atol=1e-6)
    x, y = randn(16, 32), poisoned(16, 32)
    _module(schedule).tuple_span(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double())


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [9, 4])
def test_increments_as_values(schedule: str, n: int) -> None:
    y, z = poisoned(n), torch.full((n,), -999, dtype=torch.int32, device=DEVICE)
    _module(schedule).inc_dec(y, z)  # type: ignore[attr-defined]
    assert_close(y, torch.full((n,), 133.0, dtype=torch.float64))
    i = torch.arange(n)
    c = i % 4 + i // 4
    assert torch.equal(z.cpu(), (c * 10 + c - 2).to(torch.int32))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("n", "c"), [(13, 19), (4, 8)])
def test_cdiv_of_a_shape(schedule: str, n: int, c: int) -> None:
    x, y = randn(n, c), poisoned(n, c)
    _module(schedule).cdiv_shape(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double() + -(-n // 4) * 100 + -(-c // 8), atol=1e-4)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [10, 3])
def test_element_counts_and_extents_of_spanned_data(schedule: str, n: int) -> None:
    x, y, ii = randn(n), poisoned(n), torch.zeros(16, dtype=torch.uint8)
    _module(schedule).counts(x, y, ii)  # type: ignore[attr-defined]
    # j from 16 / 4 up to 16 + (4 - 8); k from 6 % 5 up to 8 + (6 - 8) (LANGUAGE.md 7.4)
    assert_close(y, x.double() + sum(range(4, 12)) + 100 * sum(range(1, 6)) + n * 1000, atol=1e-3)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "k", "n"), [(45, 20, 19), (16, 16, 16)])
def test_units_storing_through_a_span_as_of_the_same_shape(schedule: str, m: int, k: int, n: int) -> None:
    a, b, out = randn(m, k, dtype=torch.float16), randn(n, k, dtype=torch.float16, seed=1), poisoned(m, n)
    _module(schedule).units_span_as(a, b, out)  # type: ignore[attr-defined]
    assert_close(out, a.double() @ b.double().T, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [10, 3])
def test_a_per_thread_copy_that_nothing_reads(schedule: str, n: int) -> None:
    x, y = randn(n, 8), poisoned(n, 8)
    _module(schedule).unread_copies(x, y, 2)  # type: ignore[attr-defined]
    assert_close(y, x.double() * 3, atol=1e-5)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_println_of_a_shape_and_an_index_tuple(schedule: str, capfd: pytest.CaptureFixture[str]) -> None:
    _module(schedule).print_shapes(5)  # type: ignore[attr-defined]
    if DEVICE == "cuda":
        torch.cuda.synchronize()  # flushes device printf
    out = capfd.readouterr().out
    # the interpreter prints "extents: [7]" once a program; compiled, "extents: (operand 0) 7" once a thread
    printed = re.findall(r"extents:.*?(-?\d+)\]?\s*$", out, flags=re.M)
    if DEVICE == "cuda":
        printed = [v for i, v in enumerate(printed) if i == 0 or printed[i - 1] != v]
    assert printed == ["7", "8", "1", "5"], out


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [10, 4])
def test_dma_pad_between_buffers(schedule: str, n: int) -> None:
    blocks = -(-n // 4)
    x, y = randn(n, 8), poisoned(blocks * 6, 23)
    _module(schedule).pad_buffers(x, y)  # type: ignore[attr-defined]
    a = torch.nn.functional.pad(x.double().cpu(), (0, 0, 0, blocks * 4 - n)).reshape(blocks, 4, 8)
    b = torch.nn.functional.pad(a, (2, 2, 1, 1), value=7.0)
    c = torch.full((blocks, 6, 23), -1.0, dtype=torch.float64)
    c[:, :, ::2] = b
    assert_close(y, c.reshape(blocks * 6, 23))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [9, 4])
def test_scalars_declared_without_a_value(schedule: str, n: int) -> None:
    x, y, z = randn(n), poisoned(n), torch.zeros(n, dtype=torch.int32, device=DEVICE)
    _module(schedule).no_value(x, y, z)  # type: ignore[attr-defined]
    assert_close(y, x.double() * 2)
    assert torch.equal(z.cpu(), torch.where(x.cpu() < 0, -1, 1).to(torch.int32))


def _diagnostics(source: str) -> str:
    return diagnostics(source, "g.co")


def test_an_unread_copy_keeps_the_users_errors() -> None:
    """A copy nothing reads is dropped only where its form is one the lifting does not take: an
    undeclared name or paddings of another rank than the source are still errors."""
    pad = """
__co__ void f(global f32 [2, 4] x) {
  parallel p by 1 : block {
    dma.pad<{1, 0}, {1, 0, 3}, {0, 0}, 4.0f> x => shared;
  }
}
"""
    # (sema reports it first: LANGUAGE.md 7.8, one value per dimension in each padding)
    assert "dma.pad pads each dimension of its source, but its low, high and interior paddings have 2, 3, 2" in (
        _diagnostics(pad)
    )
    undeclared = """
__co__ void f(global f32 [8, 4] x) {
  parallel p by 2 : block {
    dma.copy x.chunkat(q, _) => shared;
  }
}
"""
    assert "'q' is not declared" in _diagnostics(undeclared)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [10, 4])
def test_an_unread_copy_dropped_before_a_branch(schedule: str, n: int) -> None:
    x, y = randn(n, 8), poisoned(n, 8)
    _module(schedule).unread_then_branch(x, y, 3)  # type: ignore[attr-defined]
    assert_close(y, x.double())


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("n", "c"), [(7, 13), (4, 40)])
def test_an_array_of_buffers_of_run_time_shape(schedule: str, n: int, c: int) -> None:
    x, y = randn(n, c), poisoned(n, c)
    _module(schedule).dyn_array(x, y)  # type: ignore[attr-defined]
    want = torch.where((torch.arange(n) % 2 == 0)[:, None], x.cpu(), x.cpu().flip(0))
    assert_close(y, want.double())
