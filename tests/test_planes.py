"""Loop nests over axes that memory holds as one run (tests/programs/planes.co, schedule/planes.py).

Under ``--schedule auto`` a nest whose accesses read a whole axis with the inner counter and the axis
before it with the outer one is one loop over both, launched where the tensor's two axes are one run
(``stride(p) == size(q) * stride(q)``), else the nest as written.  Each function runs in both
schedules in the interpreter against float64 torch, on contiguous tensors (the merged kernel), on
channels-last ones (one run of stride C: merged too) and on views whose rows are not one run (the nest
as written), ragged sizes, outputs poisoned with NaN."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, load_once, poisoned, randn, recording_launch

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "planes.co"
B, C, H, W = 2, 37, 5, 13  # a plane of 65 elements, rows of 13
LONG = (2, 7, 9, 41)  # a plane of 369: past one block of the fold


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _layout(x: torch.Tensor, how: str) -> torch.Tensor:
    """``x`` as a tensor of the same values: contiguous, channels-last (h and w one run of stride C), or
    a view of wider rows (h and w not one run)."""
    if how == "contiguous":
        return x.contiguous()
    if how == "channels_last":
        return x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x.t().contiguous().t()
    wide = torch.full((*x.shape[:-1], x.shape[-1] + 3), float("nan"), dtype=x.dtype, device=x.device)
    wide[..., : x.shape[-1]] = x
    return wide[..., : x.shape[-1]]


# function -> (inputs of (b, c, h, w), outputs' shapes and types, float64 reference, tolerance)
Case = tuple[Callable[..., list], Callable[..., list], Callable[..., list], float]
CASES: dict[str, Case] = {
    "plane_mean": (
        lambda b, c, h, w: [randn(b, c, h, w, seed=1)],
        lambda b, c, h, w: [((b, c), torch.float32)],
        lambda x: [_d(x).mean((2, 3))],
        1e-5,
    ),
    "plane_absmax_f16": (
        lambda b, c, h, w: [randn(b, c, h, w, dtype=torch.float16, seed=2)],
        lambda b, c, h, w: [((b, c), torch.float32)],
        lambda x: [_d(x).abs().amax((2, 3))],
        0.0,
    ),
    "group_sums": (
        lambda b, c, h, w: [randn(b, c, h, w, seed=3), 5],
        lambda b, c, h, w: [((b, 5), torch.float32), ((b, 5), torch.float32)],
        lambda x, g: _group_sums(x, g),
        1e-5,
    ),
    "plane_scale": (
        lambda b, c, h, w: [randn(b, c, h, w, seed=4), randn(c, seed=5)],
        lambda b, c, h, w: [((b, c, h, w), torch.float32)],
        lambda x, f: [_d(x) * _d(f)[:, None, None]],
        1e-6,
    ),
    "plane_tail_sum": (
        lambda b, c, h, w: [randn(b, c, h, w, seed=6)],
        lambda b, c, h, w: [((b, c), torch.float32)],
        lambda x: [_d(x)[:, :, 1:].sum((2, 3))],
        1e-5,
    ),
    "plane_short_rows": (
        lambda b, c, h, w: [randn(b, c, h, w, seed=7)],
        lambda b, c, h, w: [((b, c), torch.float32)],
        lambda x: [_d(x)[..., :-1].sum((2, 3))],
        1e-5,
    ),
    "plane_row_weighted": (
        lambda b, c, h, w: [randn(b, c, h, w, seed=8)],
        lambda b, c, h, w: [((b, c), torch.float32)],
        lambda x: [(_d(x) * torch.arange(x.shape[2], dtype=torch.float64, device=x.device)[:, None]).sum((2, 3))],
        1e-5,
    ),
    "plane_mean_flat": (
        lambda b, c, h, w: [randn(b, c, h, w, seed=11)],
        lambda b, c, h, w: [((b, c), torch.float32)],
        lambda x: [_d(x).mean((2, 3))],
        1e-5,
    ),
    "flat_affine": (
        lambda b, c, h, w: [randn(c, h * w, seed=12)],
        lambda b, c, h, w: [((c, h * w), torch.float32)],
        lambda x: [2 * _d(x) + 1],
        1e-6,
    ),
    "group_norm_apply": (
        lambda b, c, h, w: [
            randn(b, c, h, w, seed=13),
            5,
            randn(b, 5, seed=14),
            randn(b, 5, seed=15).abs() + 0.5,
            randn(c, seed=16),
            randn(c, seed=17),
        ],
        lambda b, c, h, w: [((b, c, h, w), torch.float32)],
        lambda x, g, mu, rs, gamma, beta: [_group_norm_apply(x, g, mu, rs, gamma, beta)],
        1e-5,
    ),
    # (from row -1: a row outside the tensor reads zero, LANGUAGE.md 14.3, in the merged index's bounds too)
    "plane_rows_from": (
        lambda b, c, h, w: [randn(b, c, h, w, seed=19), -1],
        lambda b, c, h, w: [((b, c), torch.float32)],
        lambda x, h0: [_d(x).sum((2, 3))],
        1e-5,
    ),
}
# function -> the counters the merged kernel no longer walks one element a step
MERGED = {
    "plane_mean": ("h", "w_0"),
    "plane_absmax_f16": ("h", "w_0"),
    "group_sums": ("k", "h", "w_0"),
    "plane_scale": ("h", "w_0"),
    "plane_tail_sum": ("h", "w_0"),
    "plane_mean_flat": (),  # (no division an element)
    "flat_affine": (),
    "group_norm_apply": ("h", "w_0"),  # (the channel's weight read by k: the loop over k stays)
    "plane_rows_from": ("h", "w_0"),  # (the row named by a let of the outer body)
}
WRITES = {"plane_scale", "flat_affine", "group_norm_apply"}  # (their outputs laid out as the inputs)
KEPT = {"plane_short_rows": "the inner loop stops short of its axis", "plane_row_weighted": "h read as a value"}


def _group_norm_apply(x: torch.Tensor, g: int, *stats: torch.Tensor) -> torch.Tensor:
    mu, rs, gamma, beta = (_d(t) for t in stats)
    group = torch.arange(x.shape[1], device=x.device) // -(-x.shape[1] // g)
    scale = (rs[:, group] * gamma)[:, :, None, None]
    return (_d(x) - mu[:, group][:, :, None, None]) * scale + beta[:, None, None]


def _group_sums(x: torch.Tensor, g: int) -> list[torch.Tensor]:
    """Sums and sums of squares of each group of ceil(C / G) channels (the last ones short or empty)."""
    cg = -(-x.shape[1] // g)
    out = [torch.zeros(x.shape[0], g, dtype=torch.float64, device=x.device) for _ in range(2)]
    for k in range(g):
        part = _d(x)[:, k * cg : (k + 1) * cg]
        out[0][:, k], out[1][:, k] = part.sum((1, 2, 3)), (part * part).sum((1, 2, 3))
    return out


# the source schedule runs each nest as written, the same code for every layout (only the strides differ):
# its other layouts are in the long tier (conftest.py); auto picks a kernel by the layout, so it runs each
_LAYOUTS = [
    pytest.param(schedule, how, id=f"{schedule}-{how}", marks=[pytest.mark.long] if long else [])
    for schedule in ("source", "auto")
    for how in ("contiguous", "channels_last", "rows_apart")
    for long in [schedule == "source" and how != "contiguous"]
]


@pytest.mark.parametrize(("schedule", "how"), _LAYOUTS)
@pytest.mark.parametrize("fn", sorted(CASES))
def test_each_nest_in_both_schedules(fn: str, schedule: str, how: str) -> None:
    make, outs, ref, tol = CASES[fn]
    sizes = (B, C, H, W) if schedule == "source" or how != "contiguous" else LONG
    ins = make(*sizes)
    ins = [_layout(x, how) if isinstance(x, torch.Tensor) and x.dim() == ins[0].dim() else x for x in ins]
    got = [poisoned(*shape, dtype=dtype) for shape, dtype in outs(*sizes)]
    if fn in WRITES:
        got = [_layout(g, how) for g in got]
    ran, launch = recording_launch()
    getattr(load_once(PROGRAM, schedule), fn)(*ins, *got, _launch=launch)
    for g, r in zip(got, ref(*ins), strict=True):
        assert_near_max(g, r, tol, f"{fn} {how} ({schedule})")
    merged = [k for k in ran if "_planes" in k]  # (the merged kernel, or a variant of it: _planes_narrow)
    # (channels-last: h and w one run, but not the group's channels with them; a matrix stored by columns: its
    # rows not one run)
    one_run = how == "contiguous" or how == "channels_last" and fn not in ("group_sums", "flat_affine")
    expect = schedule == "auto" and fn in MERGED and one_run
    assert bool(merged) == expect, ran


@cache
def _auto() -> str:
    return translate_full(PROGRAM.read_text(), filename="planes.co", schedule="auto").source


@pytest.mark.parametrize("fn", sorted(MERGED))
def test_merged_nests_are_one_folded_loop(fn: str) -> None:
    """The merged kernel walks no counter of the nest; the nest as written stays beside it."""
    code = _auto()
    body = code.split(f"def {fn}_k0_planes(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]
    assert not [c for c in MERGED[fn] if f"for {c} in" in body], body
    code_only = body.split('"""')[2]  # (past the docstring)
    assert " // " not in code_only and " % " not in code_only, body
    assert "tl.sum(" in body or "tl.max(" in body or "tl.store(" in body
    assert f"def {fn}_k0(" in code  # (the nest as written, for tensors whose axes are not one run)


@pytest.mark.parametrize("fn", sorted(KEPT))
def test_near_misses_stay_nests(fn: str) -> None:
    assert f"def {fn}_k0_planes(" not in _auto(), KEPT[fn]


def test_the_merge_condition_reads_every_tensor_merged() -> None:
    """plane_scale reads x and writes y through merged axes: the launcher checks both."""
    code = _auto().split("def plane_scale(")[1]
    assert "_rt.stride(x, 2) == _rt.stride(x, 3) * W" in code
    assert "_rt.stride(y, 2) == _rt.stride(y, 3) * W" in code


@pytest.mark.skipif(DEVICE != "cpu", reason="a layout check of the interpreter run")
def test_one_tensor_not_one_run_keeps_the_nest() -> None:
    """plane_scale with x contiguous and y a view of wider rows: the nest as written, right."""
    mod = load_once(PROGRAM, "auto")
    x, f = randn(B, C, H, W, seed=9), randn(C, seed=10)
    y = _layout(poisoned(B, C, H, W), "rows_apart")
    ran, launch = recording_launch()
    mod.plane_scale(x, f, y, _launch=launch)
    assert_near_max(y, _d(x) * _d(f)[:, None, None], 1e-6, "plane_scale, y rows apart")
    assert not [k for k in ran if "_planes" in k], ran


def test_short_planes_fold_whole_and_long_ones_in_blocks() -> None:
    """A plane whose lanes' rows fit one block at launch folds whole (no loop to pipeline), a longer one in
    blocks; both right."""
    mod = load_once(PROGRAM, "auto")
    for (b, c, h, w), kernel in [((2, 37, 7, 7), "plane_mean_k0_planes_whole"), (LONG, "plane_mean_k0_planes")]:
        x, y = randn(b, c, h, w, seed=18), poisoned(b, c)
        ran, launch = recording_launch()
        mod.plane_mean(x, y, _launch=launch)
        assert_near_max(y, _d(x).mean((2, 3)), 1e-5, f"plane_mean {h} x {w}")
        assert ran == [kernel], ran
