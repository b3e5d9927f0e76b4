"""Issue 28 (part I): sizes, chunk indices, f64 MMAs and device prints that kernels bring, refused
or misprinted before (tests/programs/breadth_i.co), each run in both schedules on ragged sizes with
poisoned outputs and compared with float64 torch.

* the extent of an anonymous ``?`` dimension as a grid bound (``x.span(0)``, ``[x.span]``, ``s(0)``
  of ``s : x.span``, an ``mdspan<2>`` parameter): its launcher variable (``x_d0``) is no name of
  the source, so the bound stays ``x.span(k)`` (lift/shapebounds.py); it was "'x_d0' is not declared";
* ``|T|``, a type's byte size, inside a kernel and in thread counts (lift/kernel.py, sema/consteval.py);
* any integer the launcher can compute as a grid bound: ``|x.span|``, ``|s|``, ``|x.span * 2|``,
  ``|f64|``, ``c ? a : b`` of sizes, ``__alignup``, ``__max`` (lift/kernel.py ``launch_value``);
* a ``chunkat`` index that is arithmetic on one bounded index keeps its bound (LANGUAGE.md 7.2):
  ``3 - k``, ``(q + 2) % #q``, ``-q + 2``, ``2 * b / 2`` (lift/buffers.py ``kept_bound``);
* f64 x f64 -> f64 MMAs: ``tl.dot`` on f64 operands into an f64 accumulator, IEEE products, and the
  broadcast product of small tiles in f64 (lift/mma.py);
* a device ``print`` keeps its arguments' order: each run of values prints behind the text before
  it (lift/calls.py); all the text was one prefix before;
* a ``select`` among element values is refused with what a select picks (LANGUAGE.md 7.8).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, diagnostics, load_once, poisoned, randn

PROGRAM = Path(__file__).parent / "programs" / "breadth_i.co"
SCHEDULES = ["source", "auto"]
F64 = torch.float64
F32 = 1e-7  # an f32 result's rounding, relative to the largest element


def _mod(schedule: str) -> Any:
    return load_once(PROGRAM, schedule)


def _cpu(t: torch.Tensor) -> torch.Tensor:
    return t.double().cpu()


# ---------------------------------------------------------------- '?' extents as grid bounds
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("a", "b"), [(3, 5), (1, 7)])
def test_two_anonymous_extents_as_grid_axes(schedule: str, a: int, b: int) -> None:
    x, y = randn(a, b, 8), poisoned(a, b, 8)
    _mod(schedule).anon_planes(x, y)
    assert_near_max(y, _cpu(x) + 1, F32, "anon_planes")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("r", "c"), [(5, 9), (13, 2)])
def test_the_whole_shape_of_anonymous_extents_as_the_grid(schedule: str, r: int, c: int) -> None:
    x, y = randn(r, c), poisoned(r, c)
    _mod(schedule).anon_whole(x, y)
    assert_near_max(y, _cpu(x) * 3, F32, "anon_whole")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("r", "c"), [(7, 3), (2, 11)])
def test_a_named_shape_of_a_rank_parameter_as_the_grid(schedule: str, r: int, c: int) -> None:
    x, y = randn(r, c), poisoned(r, c)
    _mod(schedule).anon_named(x, y)
    assert_near_max(y, _cpu(x) ** 2, F32, "anon_named")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("c", [6, 17])
def test_the_anonymous_dimension_after_a_fixed_one(schedule: str, c: int) -> None:
    x, y = randn(4, c), poisoned(4, c)
    _mod(schedule).anon_second(x, y)
    assert_near_max(y, _cpu(x) + torch.arange(4, dtype=F64)[:, None], F32, "anon_second")


# ---------------------------------------------------------------- byte sizes
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [37, 16])
def test_byte_sizes_inside_a_kernel(schedule: str, n: int) -> None:
    out, d = poisoned(n, dtype=torch.int32), poisoned(n, dtype=F64)
    _mod(schedule).byte_sizes(out, d)
    want = torch.arange(n, dtype=torch.int64) * 8 + 2 - 1 * 2
    assert torch.equal(out.cpu().long(), want)
    assert_near_max(d, 8 / (torch.arange(n, dtype=F64) + 3), 1e-15, "byte_sizes")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [70, 32])
def test_a_byte_size_in_a_thread_count(schedule: str, n: int) -> None:
    x, y = randn(n), poisoned(n)
    _mod(schedule).byte_threads(x, y)
    assert_near_max(y, _cpu(x) * 8, 0.0, "byte_threads")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [45, 16])
def test_a_byte_size_in_a_grid_bound(schedule: str, n: int) -> None:
    x, y = randn(n), poisoned(n)
    _mod(schedule).bytes_grid(x, y)
    assert_near_max(y, -_cpu(x), 0.0, "bytes_grid")


# ---------------------------------------------------------------- sizes as grid bounds
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("r", "c"), [(9, 13), (4, 16)])
def test_an_element_count_as_a_grid_bound(schedule: str, r: int, c: int) -> None:
    x, y = randn(r, c), poisoned(r, c)
    _mod(schedule).count_grid(x, y)
    assert_near_max(y, _cpu(x) + 1, F32, "count_grid")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("r", "c"), [(5, 7), (3, 4)])
def test_the_count_of_a_named_shape_as_a_grid_bound(schedule: str, r: int, c: int) -> None:
    x, y = randn(r, c), poisoned(r, c)
    _mod(schedule).count_shape_grid(x, y)
    assert_near_max(y, _cpu(x) * 0.5, 0.0, "count_shape_grid")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("r", "c"), [(3, 5), (2, 2)])
def test_the_count_of_a_scaled_shape_as_a_grid_bound(schedule: str, r: int, c: int) -> None:
    x, y = randn(r, c), poisoned(r, c)
    _mod(schedule).scaled_count_grid(x, y)
    assert_near_max(y, _cpu(x) - 0.25, F32, "scaled_count_grid")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("a", "b"), [(5, 9), (9, 5)])
def test_a_conditional_expression_of_sizes_as_a_grid_bound(schedule: str, a: int, b: int) -> None:
    x, y = randn(a), poisoned(b)
    _mod(schedule).larger_grid(x, y)
    want = torch.full((b,), 7.0, dtype=F64)
    want[: min(a, b)] = _cpu(x)[: min(a, b)]
    assert_near_max(y, want, 0.0, "larger_grid")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [29, 8])
def test_an_aligned_count_as_a_grid_bound(schedule: str, n: int) -> None:
    x, y = randn(n), poisoned(n)
    _mod(schedule).aligned_grid(x, y)
    assert_near_max(y, _cpu(x) * 4, 0.0, "aligned_grid")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("a", "b"), [(4, 11), (11, 4)])
def test_the_larger_of_two_sizes_as_a_grid_bound(schedule: str, a: int, b: int) -> None:
    x, y = randn(a), poisoned(b)
    _mod(schedule).widest_grid(x, y)
    want = torch.full((b,), -1.0, dtype=F64)
    want[: min(a, b)] = _cpu(x)[: min(a, b)]
    assert_near_max(y, want, 0.0, "widest_grid")


# ---------------------------------------------------------------- chunk indices
def _chunked(y: torch.Tensor, want: torch.Tensor, covered: tuple[slice, ...], what: str) -> None:
    """``covered`` of ``y`` is ``want`` there; the rest (past the chunks' floor division) unwritten."""
    assert_near_max(y[covered], want[covered], 0.0, what)
    rest = torch.ones_like(y, dtype=torch.bool)
    rest[covered] = False
    assert torch.isnan(y[rest]).all(), f"{what}: an element past the chunks was written"


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("r", "c"), [(19, 22), (8, 8)])
def test_chunks_in_reverse_order_by_a_loop_counter(schedule: str, r: int, c: int) -> None:
    x, y = randn(r, c), poisoned(r, c)
    _mod(schedule).reflect_cols(x, y)
    w = c // 4
    want = torch.full((r, c), float("nan"), dtype=F64)
    want[:, : 4 * w] = _cpu(x)[:, : 4 * w].reshape(r, 4, w).flip(1).reshape(r, 4 * w)
    _chunked(y, want, (slice(None), slice(0, 4 * w)), "reflect_cols")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [23, 10])
def test_chunks_rotated_through_the_bound(schedule: str, n: int) -> None:
    x, y = randn(n), poisoned(n)
    _mod(schedule).rotate_blocks(x, y)
    w = n // 5
    want = torch.full((n,), float("nan"), dtype=F64)
    want[: 5 * w] = _cpu(x)[: 5 * w].reshape(5, w).roll(-2, 0).reshape(-1)
    _chunked(y, want, (slice(0, 5 * w),), "rotate_blocks")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [50, 9])
def test_a_negated_chunk_index_read_by_element(schedule: str, n: int) -> None:
    x, y = randn(n), poisoned(n)
    _mod(schedule).negated_index(x, y)
    w = n // 3
    want = torch.full((n,), float("nan"), dtype=F64)
    want[: 3 * w] = (_cpu(x)[: 3 * w].reshape(3, w).flip(0) * 2).reshape(-1)
    _chunked(y, want, (slice(0, 3 * w),), "negated_index")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(9, 14), (4, 3)])
def test_chunk_indices_of_two_dimensions(schedule: str, m: int, n: int) -> None:
    x, y = randn(m, n), poisoned(m, n)
    _mod(schedule).scaled_index(x, y)
    h, w = m // 2, n // 3
    want = torch.full((m, n), float("nan"), dtype=F64)
    want[: 2 * h, : 3 * w] = _cpu(x)[: 2 * h, : 3 * w].reshape(2, h, 3 * w).flip(0).reshape(2 * h, 3 * w)
    _chunked(y, want, (slice(0, 2 * h), slice(0, 3 * w)), "scaled_index")


# ---------------------------------------------------------------- f64 MMAs
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(70, 45, 37), (32, 16, 16)])
def test_an_f64_gemm_by_tl_dot(schedule: str, m: int, n: int, k: int) -> None:
    a, b, c = randn(m, k, dtype=F64, seed=1), randn(n, k, dtype=F64, seed=2), poisoned(m, n, dtype=F64)
    _mod(schedule).f64_gemm(a, b, c)
    assert c.dtype == F64
    assert_near_max(c, _cpu(a) @ _cpu(b).T, 1e-13, "f64_gemm")  # f32 products would be off by ~1e-7


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(20, 35, 13), (16, 16, 8)])
def test_an_f64_mma_of_small_tiles(schedule: str, m: int, n: int, k: int) -> None:
    a, b, c = randn(k, m, dtype=F64, seed=3), randn(k, n, dtype=F64, seed=4), poisoned(m, n, dtype=F64)
    _mod(schedule).f64_colcol(a, b, c)
    assert_near_max(c, _cpu(a).T @ _cpu(b) + 1.5, 1e-13, "f64_colcol")


# ---------------------------------------------------------------- device prints
def _printed(capfd: pytest.CaptureFixture[str], run: Any) -> str:
    capfd.readouterr()
    run()
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    return capfd.readouterr().out


def _labelled(out: str, labels: tuple[str, ...]) -> list[tuple[str, list[int]]]:
    """The printed values in order, each under the label its line prints (one line per value in
    Triton's interpreter, which repeats the text; lines without a value print nothing there)."""
    runs: list[tuple[str, list[int]]] = []
    for line in out.splitlines():
        label = next((x for x in labels if x in line), None)
        if label is None:
            continue
        values = [int(v) for v in re.findall(r"-?\d+", line.split(label, 1)[1])]
        if runs and runs[-1][0] == label:
            runs[-1][1].extend(values)
        else:
            runs.append((label, values))
    return runs


@pytest.mark.interpreter  # what the interpreter prints (a GPU's device printf prints per thread, its own format)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_device_print_keeps_its_arguments_order(schedule: str, capfd: pytest.CaptureFixture[str]) -> None:
    x, y = torch.arange(8, dtype=torch.int32, device=DEVICE) * 7, poisoned(8, dtype=torch.int32)
    out = _printed(capfd, lambda: _mod(schedule).print_lane(x, y))
    assert torch.equal(y.cpu(), x.cpu() - 1)
    # each run of values behind the text written before it; the text after the last value on its
    # own (the GPU prints it, the interpreter prints no line without a value)
    runs = _labelled(out, ("first", "then", ", pair", "end"))
    want = [("first", [21]), ("then", [121]), (", pair", [3, 6])]
    assert runs in (want, [*want, ("end", [])]), out
    assert all("then" not in line for line in out.splitlines() if "first" in line), out


@pytest.mark.interpreter  # what the interpreter prints (a GPU's device printf prints per thread, its own format)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_device_print_under_a_block_condition(schedule: str, capfd: pytest.CaptureFixture[str]) -> None:
    x = torch.zeros(4, dtype=torch.int32, device=DEVICE)
    out = _printed(capfd, lambda: _mod(schedule).print_block(x))
    assert _labelled(out, ("block=",)) == [("block=", [2])], out


# ---------------------------------------------------------------- select
def test_a_select_among_element_values_says_what_a_select_picks() -> None:
    source = """
__co__ void f(global f32 [N] a, global f32 [N] b, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    if (p # t < N) {
      v = select((p # t) % 2, a.at(p # t), b.at(p # t) + 1.0f);
      y.at(p # t) = v;
    }
  }
}
"""
    text = diagnostics(source, "f.co")
    assert "a 'select' among values that are not named futures or buffers" in text
    assert "depends on the thread index" not in text
