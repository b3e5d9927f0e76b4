"""Memory-bound kernels in a fourth set of natural forms (tests/programs/membound_forms4.co, issue 27):
Welford's mean and variance, a grid-stride loop, a flat index split by division, a moving average, max
pooling, a histogram, sums of ragged CSR segments (a loop whose extent is each thread's own), a softmax
whose running maximum rescales its sum in a branch, and a gated product over two halves of a row.
Each runs under both schedules in the interpreter against float64 torch on ragged sizes, outputs
poisoned with NaN (integers: a count compared exactly)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernel_util import DEVICE, assert_near_max, check_forms, form_sizes, load_once, poisoned, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms4.co"
H = torch.float16
F32 = torch.float32
I32 = torch.int32


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _moving_avg3(x: torch.Tensor) -> torch.Tensor:
    x = _d(x)
    s = x.clone()
    k = torch.ones_like(x)
    s[:, 1:] += x[:, :-1]
    k[:, 1:] += 1
    s[:, :-1] += x[:, 1:]
    k[:, :-1] += 1
    return s / k


def _swiglu(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[1] // 2
    g, u = _d(x[:, :n]), _d(x[:, n:])
    return g * torch.sigmoid(g) * u


Inputs = Callable[[int, int], list[torch.Tensor]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "welford_rows": (
        lambda m, n: [randn(m, n, seed=m + 1) * 2 + 3],
        lambda m, n: [((m,), F32), ((m,), F32)],
        lambda x: [_d(x).mean(1), _d(x).var(1, unbiased=False)],
        1e-5,
    ),
    "bias_flat_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 2), randn(n, dtype=H, seed=n + 3)],
        lambda m, n: [((m, n), H)],
        lambda x, b: [_d(x) + _d(b)],
        1e-3,  # (one f16 add, rounded: half an ulp of the largest)
    ),
    "moving_avg3": (
        lambda m, n: [randn(m, n, seed=n + 4)],
        lambda m, n: [((m, n), F32)],
        lambda x: [_moving_avg3(x)],
        1e-6,
    ),
    "maxpool2": (
        lambda m, n: [randn(m, n, seed=m + 5)],
        lambda m, n: [((m // 2, n // 2), F32)],
        lambda x: [F.max_pool2d(_d(x)[None], 2)[0]],
        0.0,  # (a maximum: exact)
    ),
    "softmax_rescale_branch": (
        lambda m, n: [randn(m, n, seed=n + 6) * 3],
        lambda m, n: [((m, n), F32)],
        lambda x: [torch.softmax(_d(x), 1)],
        1e-5,
    ),
    "lse_rescale_then_add": (
        lambda m, n: [randn(m, n, seed=m + 8) * 3],
        lambda m, n: [((m,), F32)],
        lambda x: [torch.logsumexp(_d(x), 1)],
        1e-5,
    ),
    "swiglu_halves_f16": (
        lambda m, n: [randn(m, 2 * n, dtype=H, seed=m + 7)],
        lambda m, n: [((m, n), H)],
        lambda x: [_swiglu(x)],
        1e-3,  # (f32 math, the result rounded to f16)
    ),
}
SIZES = [(5, 77), (37, 300)]


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


def _code(schedule: str, kernel: str) -> str:
    code = translate_full(PROGRAM.read_text(), filename="membound_forms4.co", schedule=schedule).source
    return code.split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n, many={"moving_avg3": 33, "maxpool2": 19, "swiglu_halves_f16": 33})


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_welford_with_a_counter_of_its_own_over_the_elements_above_a_floor(schedule: str, m: int, n: int) -> None:
    x = randn(m, n, seed=m * n) * 2 + 1
    x[1, :] = -5.0  # a row with no element above the floor: mean 0 (never updated), variance 0
    mu, var = poisoned(m), poisoned(m)
    _module(schedule).welford_above(x, mu, var, -0.5)
    xd = _d(x)
    keep = xd > -0.5
    cnt = keep.sum(1)
    mean = torch.where(keep, xd, 0.0).sum(1) / cnt.clamp(min=1)
    dev = torch.where(keep, xd - mean[:, None], 0.0)
    assert_near_max(mu, mean, 1e-5, f"mean above a floor ({schedule})")
    assert_near_max(var, (dev * dev).sum(1) / cnt.clamp(min=1), 1e-5, f"variance above a floor ({schedule})")


def test_welford_updates_fold_as_a_sum_then_squared_deviations() -> None:
    """``mean += d / (j + 1); m2 += d * (v - mean)`` (and with a counter of its own under a condition) is
    a chain through ``mean`` as written; under auto it is a sum and then the squared deviations from the
    mean (schedule/welford.py), both folded over the row's tile, the row read once."""
    for kernel in ("welford_rows_k0", "welford_above_k0"):
        body = _code("auto", kernel)
        assert "for j" not in body and body.count("tl.sum(") >= 2 and body.count("tl.load(") == 1, kernel
        assert "for j in" in _code("source", kernel)


def test_a_running_maximum_updated_in_branches_folds_with_its_rescaled_sum() -> None:
    """``if (v > m) { s = s * exp(m - v) + 1; m = v; } else { s += exp(v - m); }`` (and the rescale in
    the branch, the term added after it): each branch is ``s * exp(m - n) + exp(v - n)`` at its ``n =
    max(m, v)`` (schedule/branchmax.py), so the pair folds as an online softmax's (schedule/rescaled.py)."""
    for kernel in ("softmax_rescale_branch_k0", "lse_rescale_then_add_k0"):
        body = _code("auto", kernel)
        assert "for j in" not in body and "tl.max(" in body and "tl.sum(" in body, kernel
        assert "for j in" in _code("source", kernel)


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("length", [1000, 70001])
def test_a_grid_stride_loop(schedule: str, length: int) -> None:
    """132 programs of 256 threads walk the array in strides of 132 x 256: the last stride ragged."""
    x = randn(length, seed=length)
    y = poisoned(length)
    _module(schedule).axpb_relu_gridstride(x, y, 1.5, -0.25)
    assert_near_max(y, (_d(x) * 1.5 - 0.25).clamp(min=0), 1e-7, f"grid stride at {length} ({schedule})")


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_histogram_counts_every_element(schedule: str) -> None:
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 37, (5001,), generator=g, dtype=I32)
    ids[:100] = 11  # a popular bucket: many atomics into one word
    hist = torch.zeros(37, dtype=I32, device=DEVICE)
    _module(schedule).histogram(ids.to(DEVICE), hist)
    assert torch.equal(hist.cpu(), torch.bincount(ids.long(), minlength=37).to(I32))


def _segments(rows: int, seed: int, most: int = 90) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    counts = torch.randint(0, most, (rows,), generator=g)
    counts[::7] = 0  # empty segments
    counts[3] = 700  # one long segment: the others' threads idle while it runs
    ptr = torch.zeros(rows + 1, dtype=torch.long)
    ptr[1:] = counts.cumsum(0)
    vals = torch.randn(int(ptr[-1]) + 5, generator=g)  # (5 values past the last segment: never read)
    return vals, ptr.to(I32)


@pytest.mark.parametrize(
    ("schedule", "rows"),
    [
        # (the source schedule runs the same kernel at both sizes; 300 rows are 3 programs of 128 lanes, the
        # last partial as 9 rows' one: the long tier)
        pytest.param("source", 9, marks=pytest.mark.long),
        ("auto", 9),
        ("source", 300),
        ("auto", 300),
    ],
)
def test_ragged_segments_sum_in_a_loop_of_each_threads_own_extent(schedule: str, rows: int) -> None:
    """``foreach k in [hi - lo]`` with ``lo``, ``hi`` read per thread: each thread loops over its own
    segment (the program over the longest of its threads'), empty segments sum to 0."""
    vals, ptr = _segments(rows, rows)
    out = poisoned(rows)
    _module(schedule).segment_sums(vals.to(DEVICE), ptr.to(DEVICE), out)
    p = ptr.long()
    want = torch.stack([_d(vals[p[r] : p[r + 1]]).sum() for r in range(rows)])
    assert_near_max(out, want, 1e-6, f"segment sums of {rows} rows ({schedule})")


def test_long_segments_run_one_lane_a_program_under_auto() -> None:
    """Segments of 128 elements a lane or more on average (the tensor they index over the grid's
    lanes, at launch): under auto one program a segment, its loop in coalesced blocks; shorter ones
    (the test above) keep the block's lanes in one program. Both agree with float64 torch."""
    body = _code("auto", "segment_sums")
    assert "if E >= _rt.cdiv(R, 128) * 16384:" in body and "segment_sums_k0_lanes," in body
    split = _code("auto", "segment_sums_k0")
    assert "t = tl.arange(0, 1)" in split and "tl.range(0, hi_2, 512" in split
    rows = 9  # one block of 128 lanes: at least 128 * 128 values make the split form run
    vals, ptr = _segments(rows, 11, most=6000)
    assert vals.numel() >= 128 * 128
    out = poisoned(rows)
    _module("auto").segment_sums(vals.to(DEVICE), ptr.to(DEVICE), out)
    p = ptr.long()
    want = torch.stack([_d(vals[p[r] : p[r + 1]]).sum() for r in range(rows)])
    assert_near_max(out, want, 1e-6, "long segment sums (auto)")


def test_a_loop_of_each_threads_own_extent_runs_to_the_longest_masked() -> None:
    """As written: one loop to the largest extent of the program's live threads, each thread's
    accumulation and loads masked to its own range."""
    body = _code("source", "segment_sums_k0")
    assert "tl.max(tl.where(r < R, hi_own" in body and "(k < hi_own)" in body


NEAR_MISSES = """
__co__ void not_a_mean(global f32 [M, N] x, global f32 [M] mu, global f32 [M] var) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 mean = 0.0f;
      mutable f32 m2 = 0.0f;
      foreach j in [N] { f32 d = x.at(r, j) - mean; mean += d / (j + 2); m2 += d * (x.at(r, j) - mean); }
      mu.at(r) = mean;
      var.at(r) = m2;
    }
  }
}
__co__ void old_mean_twice(global f32 [M, N] x, global f32 [M] mu, global f32 [M] var) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 mean = 0.0f;
      mutable f32 m2 = 0.0f;
      foreach j in [N] { f32 d = x.at(r, j) - mean; mean += d / (j + 1); m2 += d * d; }
      mu.at(r) = mean;
      var.at(r) = m2;
    }
  }
}
__co__ void not_a_rescale(global f32 [M, N] x, global f32 [M] out) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 m = -inf;
      mutable f32 s = 0.0f;
      foreach j in [N] {
        f32 v = x.at(r, j);
        if (v > m) { s = s * __exp(m - v) + 2.0f; m = v; } else { s += __exp(v - m); }
      }
      out.at(r) = s;
    }
  }
}
"""


@pytest.mark.parametrize("kernel", ["not_a_mean_k0", "old_mean_twice_k0", "not_a_rescale_k0"])
def test_near_misses_stay_as_written_and_agree(kernel: str, tmp_path: Path) -> None:
    """A divisor of ``j + 2``, a square of the deviation from the old mean, a branch that adds 2: none is
    the update the proofs state (schedule/welford.py, schedule/branchmax.py), so each stays a loop per
    lane; both schedules agree."""
    from croq2triton.api import load

    code = translate_full(NEAR_MISSES, filename="near.co", schedule="auto").source
    body = code.split(f"def {kernel}(")[1].split("@_rt.launcher")[0]
    assert "for j in" in body
    x = randn(9, 70, seed=4)
    fn = kernel.removesuffix("_k0")
    outs = {s: [poisoned(9) for _ in range(1 if fn == "not_a_rescale" else 2)] for s in ("source", "auto")}
    path = tmp_path / "near.co"
    path.write_text(NEAR_MISSES)
    for s, o in outs.items():
        getattr(load(path, schedule=s), fn)(x, *o)
    for a, b in zip(outs["source"], outs["auto"], strict=True):
        assert_near_max(a, b, 1e-6, kernel)
