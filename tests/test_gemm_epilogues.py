"""Contractions with more than the sum: start values, operations after it, element-wise stores, s8.

Each program of tests/programs/gemm_epilogues (written for this test) computes ``f(a @ b^T)`` for an
element-wise ``f``: a scale, a bias per row or column, ``beta * c``, a start value ``c``, a ReLU,
``mma.store.transp`` / ``.mask``, ``apply`` over a fragment's elements; and integer GEMMs (s8 operands, s32 accumulators).  The contraction analysis must prove it (lift/epilogue.py) and tile
it as a GEMM under ``--schedule auto``; both schedules must compute it, in the interpreter, on
ragged sizes with NaN-poisoned outputs, against a float64 reference.  Under auto each compiles for
sm_90a to a large ``wgmma`` tile (slow).  Near misses (an epilogue that is not element-wise over the
output, or that reads an operand) are lowered as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from kernel_util import flat, poisoned, randn
from test_gemm_forms import Compiled, _compile_auto

from croq2triton.api import load, translate_full

PROGRAMS = Path(__file__).resolve().parent / "programs" / "gemm_epilogues"
MARK = "a contraction: croq2triton/lift/contraction.py proves it"
F16, F32, S8, S32 = torch.float16, torch.float32, torch.int8, torch.int32


@dataclass(frozen=True)
class Case:
    name: str
    out: torch.dtype
    # (m, n, k) -> the arguments after a and b, the output last
    args: Callable[[int, int, int], list[object]]
    # (a @ b^T in float64, the arguments) -> the expected output
    ref: Callable[[torch.Tensor, list[object]], torch.Tensor]
    sizes: tuple[int, int, int] = (197, 296, 91)
    inp: torch.dtype = torch.float16
    epilogue: bool = True  # something besides the conversion is applied to the sum


def _relu(x: torch.Tensor) -> torch.Tensor:
    return torch.clamp(x, min=0.0)


CASES = [
    Case(
        "alpha_beta_bias",
        F32,
        lambda m, n, k: [randn(m, n, seed=3), randn(n, seed=4), 1.5, -0.5, poisoned(m, n, dtype=F32)],
        lambda p, x: 1.5 * p - 0.5 * x[0].double() + x[1].double(),
        sizes=(37, 45, 29),
    ),
    Case(
        "start_from_c",
        F16,
        lambda m, n, k: [randn(m, n, seed=3), randn(m, seed=4), poisoned(m, n, dtype=F16)],
        lambda p, x: _relu(p + x[0].double() + x[1].double()[:, None]),
        sizes=(37, 45, 13),
    ),
    Case(
        "wgmma_scale_transp",
        F16,
        lambda m, n, k: [0.75, poisoned(n, m, dtype=F16)],
        lambda p, x: 0.75 * p.T,
        sizes=(197, 296, 200),
    ),
    Case(
        "wgmma_loadc_mask",
        F32,
        lambda m, n, k: [randn(m, n, seed=3), 0.25, poisoned(m, n, dtype=F32)],
        lambda p, x: x[0].double() + p + 0.25,
    ),
    Case(
        "apply_gelu_bias",
        F16,
        lambda m, n, k: [randn(n, seed=3), poisoned(m, n, dtype=F16)],
        lambda p, x: (p + x[0].double()) * (1 + torch.tanh(p + x[0].double())),
    ),
    Case(
        "int8_thread",
        F32,
        lambda m, n, k: [randn(m, seed=3), randn(n, seed=4), poisoned(m, n, dtype=F32)],
        lambda p, x: p * x[0].double()[:, None] * x[1].double(),
        sizes=(37, 45, 29),
        inp=S8,
    ),
    Case("int8_wgmma", S32, lambda m, n, k: [poisoned(m, n, dtype=S32)], lambda p, x: p, inp=S8, epilogue=False),
    Case(
        "shared_epilogue",
        F32,
        lambda m, n, k: [randn(n, seed=3), poisoned(m, n, dtype=F32)],
        lambda p, x: _relu(p * x[0].double()),
        # as written its element loop runs 64 x 64 steps per program in the interpreter: 2 programs
        sizes=(70, 60, 45),
    ),
]


def test_every_program_has_a_case() -> None:
    assert sorted(p.stem for p in PROGRAMS.glob("*.co")) == sorted(c.name for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_auto_tiles_it_as_a_contraction(case: Case) -> None:
    src = translate_full((PROGRAMS / f"{case.name}.co").read_text(), filename=f"{case.name}.co", schedule="auto")
    text = flat(src.source)
    assert MARK in text
    assert ("f element-wise" in text) == case.epilogue


@pytest.mark.filterwarnings("ignore:croq2triton.*not 16-byte aligned:RuntimeWarning")
@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_it_computes_the_epilogue(case: Case, schedule: str) -> None:
    mod = load(PROGRAMS / f"{case.name}.co", schedule=schedule)
    m, n, k = case.sizes
    # s8: integers in [-50, 50), every product and sum exact in s32 and float64
    a, b = randn(m, k, seed=1, dtype=case.inp), randn(n, k, seed=2, dtype=case.inp)
    rest = case.args(m, n, k)
    mod.gemm(a, b, *rest)
    out = rest[-1]
    assert isinstance(out, torch.Tensor)
    ref = case.ref((a.double() @ b.double().T).cpu(), [x.cpu() if isinstance(x, torch.Tensor) else x for x in rest])
    if case.out == S32:
        assert torch.equal(out.cpu().long(), ref.long()), "an integer GEMM is exact (poison left or a wrong sum)"
        return
    got = out.double().cpu()
    assert not torch.isnan(got).any(), f"{int(torch.isnan(got).sum())} output elements never written"
    tol = 1e-2 if case.out == F16 else 1e-3
    scale = float(ref.abs().max())
    err = float((got - ref).abs().max())
    assert err <= tol * scale, f"max |out - ref| = {err:.3g} > {tol} * max|ref| = {tol * scale:.3g}"


NEAR = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block, {tm, tn} by [16, 16] : thread {
    f32 s = 0.0f;
    foreach {k} in [K]
      s += a.at(bm # tm, k) * b.at(bn # tn, k);
    if (bm # tm < M && bn # tn < N)
      out.at(bm # tm, bn # tn) = VALUE;
  }
}
"""


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("s + c.at(bm # tm, bn # tn + 1)", "c read next to the element written"),
        ("s + c.at(0, bn # tn)", "c read at one row for every row"),
        ("s * a.at(bm # tm, 0)", "an operand read in the epilogue"),
        ("s + out.at(bm # tm, 0)", "the output read elsewhere than the element written"),
        ("s + (bm # tm)", "a value that depends on the element's position"),
    ],
)
def test_an_epilogue_that_is_not_elementwise_is_lowered_as_written(value: str, why: str) -> None:
    src = translate_full(NEAR.replace("VALUE", value), filename="near.co", schedule="auto").source
    assert MARK not in flat(src), why


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_auto_schedule_compiles_to_a_large_wgmma_tile(case: Case) -> None:
    res = _compile_auto(Compiled(case.name), PROGRAMS)
    assert "error" not in res, res.get("error")
    lines = res["lines"]
    assert isinstance(lines, list) and len(lines) == 1, lines
    tile = re.search(r": dot (\d+)x(\d+)x(\d+),", lines[0])
    assert tile and "wgmma yes" in lines[0], lines[0]
    assert int(tile.group(1)) >= 128 and int(tile.group(2)) >= 128, lines[0]
