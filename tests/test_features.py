"""Features the README claims, checked on programs written for this project (tests/programs/*.co
and inline sources), so that a clone without ``../shared`` tests them too.  The corpus-wide tests
add to these where the shared corpus is present.

Every numeric check uses fresh random data on ragged sizes, outputs poisoned with NaN before the
run, and a float64 reference; both schedules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE

import croq2triton
from croq2triton.errors import CroqError
from croq2triton.frontend.driver import parse
from croq2triton.sema.checks import check_unit

PROGRAMS = Path(__file__).resolve().parent / "programs"
SCHEDULES = ("source", "auto")


def _load(name: str, schedule: str) -> object:
    return croq2triton.load(PROGRAMS / name, schedule=schedule)


def _poisoned(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device=DEVICE)


def _close(out: torch.Tensor, ref: torch.Tensor, rtol: float) -> None:
    assert not out.isnan().any(), f"{int(out.isnan().sum())} elements not written"
    err = (out.double().cpu() - ref).abs().max().item()
    assert err <= rtol * ref.abs().max().item(), err


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_one_producer_two_consumers_event_pipeline(schedule: str) -> None:
    # events with generations, a 3-slot ring, bootstrap triggers, two consumer warpgroups owning
    # 64 rows each of a 128-row tile: collapsed into one pipelined loop over one merged tile
    mod = _load("pipeline_1p2c.co", schedule)
    m, n, k = 200, 100, 72
    a = torch.randn(m, k, device=DEVICE).half()
    b = torch.randn(n, k, device=DEVICE).half()
    out = _poisoned((m, n), torch.float32)
    mod.gemm_1p2c(a, b, out)
    _close(out, a.double().cpu() @ b.double().cpu().T, 1e-3)
    assert "tl.range(" in mod.__croq_source__ and "num_stages=" in mod.__croq_source__


def _blockscaled_reference(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor) -> torch.Tensor:
    n = b.shape[0]
    out = torch.zeros(a.shape[0], n, dtype=torch.float64)
    for kb in range(sa.shape[1]):
        cols = slice(kb * 64, (kb + 1) * 64)
        block = a[:, cols].double().cpu() @ b[:, cols].double().cpu().T
        out += block * sa[:, kb : kb + 1].double().cpu() * sb[torch.arange(n) // 64, kb][None, :].double().cpu()
    return out


# Hopper's fp8 MMA accumulates with fewer mantissa bits than f32: 2e-3 there, 1e-5 in the interpreter
FP8_F32_RTOL = 1e-5 if DEVICE == "cpu" else 2e-3


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(
    ("func", "out_dtype", "rtol"),
    [("scaled_inline", torch.float32, FP8_F32_RTOL), ("scaled_split", torch.float16, 2e-3)],
)
def test_block_scaled_fp8_mma_in_both_forms(schedule: str, func: str, out_dtype: torch.dtype, rtol: float) -> None:
    # 'mma.row.row.scale acc, A, B, sa, sb' and the split form 'mma.scale acc, sa, sb'
    mod = _load("blockscale.co", schedule)
    m, n, k = 100, 90, 160
    kb, nb = -(-k // 64), -(-n // 64)
    a = torch.randn(m, k, device=DEVICE).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device=DEVICE).to(torch.float8_e4m3fn)
    sa = torch.rand(m, kb, device=DEVICE) + 0.5
    sb = torch.rand(nb, kb, device=DEVICE) + 0.5
    out = _poisoned((m, n), out_dtype)
    getattr(mod, func)(a, sa, b, sb, out)
    _close(out, _blockscaled_reference(a, sa, b, sb), rtol)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_mma_store_mask_keeps_only_the_first_rows_and_columns(schedule: str) -> None:
    mod = _load("store_mask.co", schedule)
    m, n, k, rows, cols = 100, 90, 70, 40, 50
    a = torch.randn(m, k, device=DEVICE).half()
    b = torch.randn(n, k, device=DEVICE).half()
    out = _poisoned((m, n), torch.float32)
    mod.masked_tiles(a, b, out, rows, cols)
    ref = a.double().cpu() @ b.double().cpu().T
    keep = (torch.arange(m)[:, None] % 64 < rows) & (torch.arange(n)[None, :] % 64 < cols)
    got = out.cpu()
    assert got[~keep].isnan().all(), "stored outside the mask"
    assert not got[keep].isnan().any()
    assert (got.double() - ref)[keep].abs().max().item() <= 1e-3 * ref.abs().max().item()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_heterogeneous_cpu_and_gpu_regions(schedule: str) -> None:
    # ': device(cpu)' runs as host Python, ': device(gpu)' as a kernel, in program order; the
    # reference parameter y is written back; the host reads an element for the return value
    mod = _load("hetero.co", schedule)
    x, y = torch.randn(300), torch.randn(300)
    x0, y0 = x.clone(), y.clone()
    got = mod.hetero_axpy(x, y, 2.5)
    torch.testing.assert_close(x, x0 * 2.5)
    torch.testing.assert_close(y, y0 + x0 * 2.5)
    assert got == pytest.approx(y[0].item())


CHECK_ERRORS = [
    # what upstream's own negative tests expect, in programs of our own
    ("__co__ void f(f32 [4 - 8, 2] a) {}", "the extent -4 of parameter 'a' is invalid"),
    ("__co__ void f(f32 [3 / 4] a) {}", "the extent 0 of parameter 'a' is invalid"),
    (
        "__co__ void f() { parallel.async by 1 : device(tpu) { parallel by 1 : block parallel by 1 : thread {} } }",
        "unknown device target 'tpu'",
    ),
    ("__co__ void f() { parallel {x} by [4, 32] { int a = 1; } }", "1 parallel variable(s) but 2 bound(s)"),
    ("__co__ void f() { parallel {x, y, z} by [4, 8] { int a = 1; } }", "3 parallel variable(s) but 2 bound(s)"),
    ("__co__ void f() { s : [2, 3]; parallel {x} by [s]; }", "1 parallel variable(s) but 2 bound(s)"),
    (
        "__co__ void f(f32 [8, 8] a) { parallel p by 1 { with {x, y} in [1, 1] { g = dma.copy.sp<3:4> a.chunkat(x, y) => local; } } }",
        "only 2:4 structured sparsity is supported; got 3:4",
    ),
    (
        "__co__ void f() { parallel p by 2 : block { local f32 [8] t[p]; } }",
        "the dimensions of the buffer array 't' must be constant integers, not the index 'p'",
    ),
    ("__co__ void f() { mutable q; }", "unable to deduce the type of 'q'"),
    ("__co__ void f(f32 [4] a) {}\n__co__ void f(f32 [4] b) {}", "'__co__' function 'f' is defined twice"),
]


@pytest.mark.parametrize(("source", "message"), CHECK_ERRORS)
def test_check_reports_the_errors_upstream_reports(source: str, message: str) -> None:
    with pytest.raises(CroqError) as info:
        check_unit(parse(source, "bad.co"))
    text = info.value.format()
    assert message in text and "bad.co:" in text


def test_block_scaled_fp8_tiled_as_a_contraction_under_an_explicit_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    # the auto policy keeps block-scaled kernels as written (faster today, schedule/policy.py); a schedule
    # given explicitly (what a tuning sweep does) tiles the proved contraction: it must compute the same
    from croq2triton.api import load_source, translate_full
    from croq2triton.schedule import policy
    from croq2triton.schedule.schedule import Schedule

    monkeypatch.setattr(policy, "auto", lambda c: Schedule(128, 64, 64, num_stages=4, num_warps=4, persistent=False))
    src = translate_full((PROGRAMS / "blockscale.co").read_text(), filename="blockscale.co", schedule="auto").source
    assert src.count("(a contraction:") == 2 and "sa_s = tl.load(" in src
    mod = load_source(src, "blockscale_tiled")
    m, n, k = 100, 90, 160
    kb, nb = -(-k // 64), -(-n // 64)
    a = torch.randn(m, k, device=DEVICE).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device=DEVICE).to(torch.float8_e4m3fn)
    sa = torch.rand(m, kb, device=DEVICE) + 0.5
    sb = torch.rand(nb, kb, device=DEVICE) + 0.5
    for func, dt, rtol in (("scaled_inline", torch.float32, FP8_F32_RTOL), ("scaled_split", torch.float16, 2e-3)):
        out = _poisoned((m, n), dt)
        getattr(mod, func)(a, sa, b, sb, out)
        _close(out, _blockscaled_reference(a, sa, b, sb), rtol)
