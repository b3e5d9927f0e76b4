"""Issue 28 (part G): copies, views, buffers, index tuples and host code that valid kernels use and
we refused (tests/programs/breadth_g.co), each run in both schedules on ragged sizes with
NaN-poisoned outputs and compared with float64 torch.

* a ``tma.copy.swiz<N>`` whose box rows are wider than the swizzle span (a hardware box would be
  split; the swizzle never changes what is copied): masked accesses with a warning, not a refusal;
  the same names declared in two warp roles (``row = r`` in each: one name assigned twice in the
  kernel) no longer fail the IR verifier, which now sees through an assignment of program ids.
* host-level conversions to narrow types (``__to<bf16>(f)``, ``__to<u8>(i)``; were refused) round
  or wrap as C does (runtime/hostcast.py), and so does a host scalar's declaration or assignment
  of a value of another type (``f16 h = f``, ``t = f * 3.0f`` into an ``s32``: they kept the value
  unconverted, a float in an integer).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_close, load_once, poisoned, randn

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
    assert_close(y, x.double() - (torch.arange(c) // 2).double(), atol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [11, 4])
def test_index_tuples_as_extents_of_shapes(schedule: str, n: int) -> None:
    x, y = randn(n, 32), poisoned(n, 32)
    _module(schedule).tuple_shapes(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double() * 2 + 4, atol=1e-6)
    x, y = randn(16, 32), poisoned(16, 32)
    _module(schedule).tuple_span(x, y)  # type: ignore[attr-defined]
    assert_close(y, x.double())
