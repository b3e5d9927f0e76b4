"""Memory-bound kernels in still other natural forms (tests/programs/membound_forms3.co, issue 27): an
argmax, cross entropy, a sum of squares with one atomic an element, a softmax over columns, row dot
products, an absolute maximum, mean and variance in one pass, a row walked four elements a step by
hand, a causal softmax, group statistics over a 3-D tensor, an embedding gather, a row walked in
blocks by hand and a 3-D slice sum.  Each runs under both schedules in the interpreter against
float64 torch on ragged sizes, outputs poisoned with NaN; what ``--schedule auto`` makes of the
loop nests, the atomics and the repeated loads is checked on the generated code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernel_util import DEVICE, assert_near_max, check_forms, form_sizes, load_once, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms3.co"
H = torch.float16
F32 = torch.float32
I32 = torch.int32


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _ids(n: int, hi: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, hi, (n,), generator=g, dtype=I32).to(DEVICE)


def _causal(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    hidden = torch.arange(n, device=x.device)[None, :] > torch.arange(m, device=x.device)[:, None]
    return torch.softmax(_d(x).masked_fill(hidden, float("-inf")), 1)


def _groups(x: torch.Tensor) -> list[torch.Tensor]:
    g = _d(x).reshape(x.shape[0], 8, -1)
    return [g.mean(2), 1 / torch.sqrt(g.var(2, unbiased=False) + 1e-5)]


Inputs = Callable[[int, int], list[torch.Tensor]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "xent": (
        lambda m, n: [randn(m, n, seed=m + 1), _ids(m, n, m)],
        lambda m, n: [((m,), F32)],
        lambda x, t: [F.cross_entropy(_d(x), t.long(), reduction="none")],
        1e-5,
    ),
    "col_softmax": (
        lambda m, n: [randn(m, n, seed=n + 2)],
        lambda m, n: [((m, n), F32)],
        lambda x: [torch.softmax(_d(x), 0)],
        1e-5,
    ),
    "rows_dot_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 3), randn(m, n, dtype=H, seed=n + 4)],
        lambda m, n: [((m,), F32)],
        # (the products are f16 products, as the source's f16 operands multiply: rounded before the sum)
        lambda a, c: [_d(a * c).sum(1)],
        1e-5,
    ),
    "row_absmax_scale": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 5)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).abs().amax(1) / 448],
        1e-7,  # (the maximum exact, the division rounded to f32)
    ),
    "mean_var_rows": (
        lambda m, n: [randn(m, n, seed=m + 6) + 0.5],
        lambda m, n: [((m,), F32), ((m,), F32)],
        lambda x: [_d(x).mean(1), _d(x).var(1, unbiased=False)],
        1e-5,
    ),
    "row_sums_unroll4": (
        lambda m, n: [randn(m, n, seed=m + 7)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
    "causal_softmax": (
        lambda m, n: [randn(m, n, seed=n + 8)],
        lambda m, n: [((m, n), F32)],
        lambda x: [_causal(x)],
        1e-5,
    ),
    "group_stats": (
        lambda m, n: [randn(m // 5 + 1, 16, n // 7 + 1, seed=m + 9)],
        lambda m, n: [((m // 5 + 1, 8), F32), ((m // 5 + 1, 8), F32)],
        _groups,
        1e-5,
    ),
    "embed_pos": (
        lambda m, n: [randn(50, n, seed=10), _ids(m, 50, m + 11), randn(3, n, seed=12)],
        lambda m, n: [((m, n), F32)],
        lambda e, ids, p: [_d(e)[ids.long()] + _d(p)[torch.arange(ids.shape[0]) % 3]],
        1e-7,  # (one f32 add)
    ),
    "row_sums_nested": (
        lambda m, n: [randn(m, n, seed=m + 13)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
    "slice_sums": (
        lambda m, n: [randn(m // 4 + 1, 3, n, seed=n + 14)],
        lambda m, n: [((m // 4 + 1,), F32)],
        lambda x: [_d(x).sum((1, 2))],
        1e-5,
    ),
}
SIZES = [(5, 77), (37, 300)]


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


def _code(schedule: str, kernel: str) -> str:
    code = translate_full(PROGRAM.read_text(), filename="membound_forms3.co", schedule=schedule).source
    return code.split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n, many={})


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_argmax_takes_the_first_best(schedule: str, m: int, n: int) -> None:
    x = randn(m, n, seed=m * n)
    x[:, n // 2] = x.max(1).values  # a tie: the first index wins, as the loop's strict > keeps it
    x[0, 3] = float("nan")  # NaN never compares greater: skipped
    got = torch.full((m,), -1, dtype=I32, device=DEVICE)
    _module(schedule).row_argmax(x, got)
    want = torch.where(torch.isnan(x), float("-inf"), x).argmax(1)
    assert torch.equal(got.long(), want)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_one_atomic_total(schedule: str) -> None:
    x = randn(37, 300, seed=5)
    out = torch.zeros(1, device=DEVICE)
    _module(schedule).sum_sq_all(x, out)
    assert_near_max(out, (_d(x) ** 2).sum().reshape(1), 1e-5, f"sum_sq_all ({schedule})")


def test_a_nest_over_blocks_of_a_row_folds_as_one_loop() -> None:
    """``foreach jb { foreach jj in [64] { .. jb * 64 + jj .. } }`` is one loop over the row
    (schedule/flatnest.py), which folds into tiles (schedule/foldloops.py); as written it stays a nest."""
    body = _code("auto", "row_sums_nested_k0")
    assert "for jb" not in body and "for jj" not in body and "tl.sum(" in body
    assert "for jj in" in _code("source", "row_sums_nested_k0")


def test_one_atomic_a_program_and_each_element_read_once() -> None:
    """Every lane adds into the same word: the lanes fold first, one atomic a program
    (schedule/atomicfold.py); ``x.at(i, j) * x.at(i, j)`` reads the element once
    (schedule/sameloads.py)."""
    body = _code("auto", "sum_sq_all_k0")
    assert body.count("tl.load(") == 1 and "tl.sum(" in body and body.count("tl.atomic_add(") == 1
    assert _code("source", "sum_sq_all_k0").count("tl.load(") == 2


def test_loops_of_different_extents_fold_in_blocks() -> None:
    """A row walked four elements a step and then its tail: the first loop is the loop over the row it
    was unrolled from (schedule/reroll.py: one contiguous load a block, not four strided by 4); two
    loops of different extents cannot share one whole-row block fixed at launch, so they fold in
    blocks instead of staying scalar loops in programs of one lane."""
    body = _code("auto", "row_sums_unroll4_k0")
    assert "for j in range(" not in body and body.count("tl.sum(") == 2
    assert body.count("tl.load(") == 2 and "x_stride_1 * 4 + x_stride_1" not in body
    assert _code("source", "row_sums_unroll4_k0").count("tl.load(") == 5


def test_an_argmax_written_with_a_branch_folds() -> None:
    """``if (x.at(r, j) > best) { best = x.at(r, j); idx = j; }``: the load inside the branch reads
    what the comparison read (schedule/sameloads.py), so the pair reads as the best value and its first
    index (schedule/argfold.py) and folds over the row's tile."""
    body = _code("auto", "row_argmax_k0")
    assert "for j in" not in body and "tl.max(" in body and body.count("tl.load(") == 1


def test_a_loop_along_each_row_of_a_slice_folds_inside_the_loop_over_its_rows() -> None:
    """``foreach m in [M] { foreach n in [N] { s += x.at(b, m, n); } }``: the outer loop reads no
    combination of the counters (not one range), so it stays; the inner loop along the contiguous
    axis folds into tiles inside it (schedule/foldloops.py); as written both stay scalar loops."""
    body = _code("auto", "slice_sums_k0")
    assert "for m in range(0, M)" in body and "for n in" not in body and "tl.sum(" in body
    assert "for n in range(0, N)" in _code("source", "slice_sums_k0")
    groups = _code("auto", "group_stats_k0")
    assert "for c in range(0, cpg)" in groups and "for l in" not in groups and "tl.sum(" in groups
