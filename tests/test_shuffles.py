"""Warp shuffles in halving steps (schedule/shuffles.py, issue 27): tests/programs/shuffles.co under
both schedules in the interpreter against float64 torch on random data, outputs poisoned, ragged
sizes (rows fewer than a program's warps, rows shorter and longer than a warp, past the whole-row
limit), and what ``--schedule auto`` makes of each form: a butterfly that reaches every lane is one
reduction, one that does not (half a warp, a shuffle down) stays as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import kernel_code, load_once, poisoned, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "shuffles.co"


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


def _close(got: torch.Tensor, ref: torch.Tensor, what: str) -> None:
    g = got.double().cpu()
    assert not torch.isnan(g).any(), f"{what}: elements never written"
    assert float((g - ref).abs().max()) <= 1e-5 * float(ref.abs().max().clamp(min=1.0)), what


def _run_all(mod: object, m: int, n: int) -> None:
    x = randn(m, n, seed=m * 13 + n)
    xd = x.double().cpu()
    s = poisoned(m)
    mod.row_max_warp(x, s)  # type: ignore[attr-defined]
    _close(s, xd.max(1).values, "row_max_warp")
    xh = randn(m, n, dtype=torch.float16, seed=n)
    y = poisoned(m, 32)
    mod.row_means_lanes(xh, y)  # type: ignore[attr-defined]
    _close(y, xh.double().cpu().mean(1, keepdim=True) * torch.arange(32).double(), "row_means_lanes")
    h = poisoned(m, 2)
    mod.half_sums(x, h)  # type: ignore[attr-defined]
    cols = torch.arange(n)
    halves = torch.stack([xd[:, (cols % 32) // 16 == k].sum(1) for k in (0, 1)], 1)
    _close(h, halves, "half_sums")
    s = poisoned(m)
    mod.row_sums_down(x, s)  # type: ignore[attr-defined]
    _close(s, xd.sum(1), "row_sums_down")


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("m", "n"), [(3, 20), (5, 301)])
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    _run_all(_module(schedule), m, n)


def test_rows_past_the_registers() -> None:
    """The blocked kernels (rows past 64 KB) keep the guard of the rows past M: still one reduction."""
    _run_all(_module("auto"), 3, 16500)


def test_what_auto_makes_of_each_form() -> None:
    text = translate_full(PROGRAM.read_text(), filename="shuffles.co", schedule="auto").source
    body = kernel_code(text, "row_max_warp_k0")  # no gather left; the lanes' folds are totals, one a row
    assert "tl.gather(" not in body and "m_all=tl.zeros([2,32],tl.float32)+m_max[:,None]" in body
    body = kernel_code(text, "row_means_lanes_k0")  # every lane reads the total
    assert "tl.gather(" not in body and "tl.math.div_rn(acc_all,tl.cast(N,tl.float32))" in body and "acc_sum" in body
    blocked = kernel_code(text, "row_means_lanes_k0_blocked")  # the rows past M keep their own values there
    assert "tl.gather(" not in blocked and "acc_all=tl.where(p*4+w<M," in blocked
    # not every lane holds every lane: the shuffles stay (a half warp's); a tree down read only by lane 0
    # (the store under t == 0) is one reduction
    assert kernel_code(text, "half_sums_k0").count("tl.gather(") == 1
    assert kernel_code(text, "row_sums_down_k0").count("tl.gather(") == 0
    source = translate_full(PROGRAM.read_text(), filename="shuffles.co", schedule="source").source
    assert "shuffles.py" not in source and kernel_code(source, "row_max_warp_k0").count("tl.gather(") == 1


DOWN = Path(__file__).parent / "programs" / "shuffles_down.co"


def _lane_parts(x: torch.Tensor) -> torch.Tensor:
    """What each lane holds after shuffles down by 16, 8, 4, 2, 1 (a lane past the warp keeps its own)."""
    s = x.double().clone()
    for off in (16, 8, 4, 2, 1):
        src = torch.arange(32) + off
        src = torch.where(src <= 31, src, torch.arange(32))
        s = s + s[:, src]
    return s


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("m", "n"), [(5, 77), (9, 300)])
def test_shuffles_down_in_both_schedules(schedule: str, m: int, n: int) -> None:
    from kernel_util import check_forms

    h = torch.float16
    cases = {
        "row_sums_down": (
            lambda m, n: [randn(m, n, seed=m)],
            lambda m, n: [((m,), torch.float32)],
            lambda x: [x.double().sum(1)],
            1e-5,
        ),
        "row_max_down_f16": (
            lambda m, n: [randn(m, n, dtype=h, seed=n)],
            lambda m, n: [((m,), torch.float32)],
            lambda x: [x.double().amax(1)],
            0.0,
        ),
        "center_rows": (
            lambda m, n: [randn(m, n, seed=n + 3)],
            lambda m, n: [((m, n), torch.float32)],
            lambda x: [x.double() - x.double().mean(1, keepdim=True)],
            1e-5,
        ),
        "lane_parts": (
            lambda m, n: [randn(m, 32, seed=7)],
            lambda m, n: [((m, 32), torch.float32)],
            lambda x: [_lane_parts(x)],
            1e-5,
        ),
    }
    check_forms(DOWN, schedule, cases, m, n)


def test_a_tree_down_read_only_at_lane_0_is_one_reduction() -> None:
    """Shuffles down leave lane 0 with the total; a store under ``t == 0`` reads only it, so the tree
    is one reduction; where every lane stores its part, the shuffles stay."""
    code = translate_full(DOWN.read_text(), filename="shuffles_down.co", schedule="auto").source
    for kernel in ("row_sums_down_k0", "row_max_down_f16_k0", "center_rows_k0"):
        body = code.split(f"def {kernel}(")[1].split("@triton.jit")[0]
        assert "tl.gather(" not in body, kernel
    parts = code.split("def lane_parts_k0(")[1].split("@triton.jit")[0]
    assert "tl.gather(" in parts


ROWS8 = """__device__ float SHF8(float v, int m) { return __shfl_xor_sync(0xffffffff, v, m, WIDTH); }
__co__ void rows8(global f32 [M, 8] x, global f32 [M] s) {
  parallel p by cdiv(M, 4) : block, {q, l} by [4, 8] : thread {
    mutable f32 a = x.at(p # q, l);
    foreach k in [3] { f32 o = call SHF8(a, 1 << k); a += o; }
    if (l == 0 && p # q < M) s.at(p # q) = a;
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_segments_of_a_row_of_a_two_level_thread_block(schedule: str) -> None:
    # a width-8 butterfly over the rows of 8 threads of {q, l} by [4, 8]: each segment of 8 lanes is
    # one row (was refused as "a warp spans several thread levels"; found by the MoE probe)
    from croq2triton.api import load_source

    out = translate_full(ROWS8.replace("WIDTH", "8"), filename="rows8.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"rows8_{schedule}")
    x = randn(37, 8, seed=3)
    s = poisoned(37)
    mod.rows8(x, s)
    assert torch.allclose(s.double().cpu(), x.double().cpu().sum(1), atol=1e-5)
    wide = translate_full(ROWS8.replace("WIDTH", "16"), filename="rows8.co", schedule=schedule)
    assert "segments span several rows of a thread level" in str(wide.failed["rows8"])
