"""Each lane's loop over its row folded into a tile axis (schedule/foldloops.py), with the lanes split
so that a program takes one row (schedule/widen.py splits): row kernels written one thread per row,
checked against float64 torch on ragged sizes with NaN-poisoned outputs, in both schedules and at
the tuning points that take each path (blocks of the row, the whole row in registers, the row longer
than the registers hold); and the proof's refusals, which keep the loop as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, poisoned, randn

from croq2triton.api import load, load_source, translate_full
from croq2triton.errors import CroqError
from croq2triton.options import Point
from croq2triton.schedule.foldloops import NotFolded, fold_loops
from croq2triton.tir import expr as E
from croq2triton.tir import nodes as N

PROGRAM = Path(__file__).parent / "programs" / "rows.co"
KERNELS = (
    "softmax",
    "rmsnorm",
    "row_sums",
    "layernorm",
    "row_range",
    "softmax_f16",
    "rmsnorm_f32",
    "row_sums_f16",
    "layernorm_f32",
)
PROGRAMS = Path(__file__).parent / "programs"


def _run(mod: object, m: int, n: int) -> dict[str, float]:
    """Each function of rows.co on random data: the max |error| against float64 torch."""
    x = randn(m, n, seed=m + n)
    xh = randn(m, n, dtype=torch.float16, seed=3)
    w, b = randn(n, dtype=torch.float16, seed=4), randn(n, dtype=torch.float16, seed=5)
    errs: dict[str, float] = {}

    def err(got: torch.Tensor, ref: torch.Tensor) -> float:
        g = got.double().cpu()
        assert not torch.isnan(g).any(), "some elements were never written (NaN poison left)"
        return float((g - ref.cpu()).abs().max())

    y = poisoned(m, n)
    mod.softmax(x, y)  # type: ignore[attr-defined]
    errs["softmax"] = err(y, torch.softmax(x.double(), 1))
    y = poisoned(m, n, dtype=torch.float16)
    mod.rmsnorm(xh, w, y)  # type: ignore[attr-defined]
    xd = xh.double()
    errs["rmsnorm"] = err(y, xd * torch.rsqrt((xd**2).mean(1, keepdim=True) + 1e-6) * w.double()) / 30
    s = poisoned(m)
    mod.row_sums(x, s)  # type: ignore[attr-defined]
    errs["row_sums"] = err(s, x.double().sum(1)) / n**0.5
    y = poisoned(m, n, dtype=torch.float16)
    mod.layernorm(xh, w, b, y)  # type: ignore[attr-defined]
    ref = torch.nn.functional.layer_norm(xd, (n,), w.double(), b.double(), eps=1e-5)
    errs["layernorm"] = err(y, ref) / 30
    hi, lo = poisoned(m), poisoned(m)
    mod.row_range(x, hi, lo)  # type: ignore[attr-defined]
    errs["row_range"] = max(err(hi, x.double().amax(1)), err(lo, x.double().amin(1)))
    # the other element types: f16 data with f32 math, f32 data
    y = poisoned(m, n, dtype=torch.float16)
    mod.softmax_f16(xh, y)  # type: ignore[attr-defined]
    errs["softmax_f16"] = err(y, torch.softmax(xd, 1))
    x32, w32, b32 = x, w.float(), b.float()
    y = poisoned(m, n)
    mod.rmsnorm_f32(x32, w32, y)  # type: ignore[attr-defined]
    xf = x32.double()
    errs["rmsnorm_f32"] = err(y, xf * torch.rsqrt((xf**2).mean(1, keepdim=True) + 1e-6) * w32.double())
    s = poisoned(m)
    mod.row_sums_f16(xh, s)  # type: ignore[attr-defined]
    errs["row_sums_f16"] = err(s, xd.sum(1)) / n**0.5
    y = poisoned(m, n)
    mod.layernorm_f32(x32, w32, b32, y)  # type: ignore[attr-defined]
    errs["layernorm_f32"] = err(y, torch.nn.functional.layer_norm(xf, (n,), w32.double(), b32.double(), eps=1e-5))
    return errs


TOL = {
    "softmax": 1e-6,
    "rmsnorm": 1e-3,
    "row_sums": 1e-5,
    "layernorm": 1e-3,
    "row_range": 0.0,
    "softmax_f16": 1e-3,  # one f16 rounding of values below 1
    "rmsnorm_f32": 1e-5,
    "row_sums_f16": 1e-5,
    "layernorm_f32": 1e-5,
}


LONG = pytest.mark.long


@pytest.mark.parametrize(
    ("schedule", "m", "n"),
    [
        pytest.param("source", 37, 100, marks=LONG),
        ("auto", 37, 100),
        ("source", 5, 17),
        ("auto", 5, 17),
        ("source", 130, 1),
        pytest.param("auto", 130, 1, marks=LONG),  # (130 one-element rows, a program each)
    ],
)
def test_row_kernels_as_written_and_folded(schedule: str, m: int, n: int) -> None:
    errs = _run(load(PROGRAM, schedule=schedule), m, n)
    assert all(errs[k] <= TOL[k] for k in KERNELS), errs


@pytest.mark.parametrize(
    ("schedule", "m", "n"),
    [pytest.param("source", 300, 150, marks=LONG), ("auto", 300, 150), ("source", 7, 131), ("auto", 7, 131)],
)
def test_column_sums_and_transposes_in_both_element_types(schedule: str, m: int, n: int) -> None:
    """cols.co (a thread per column, atomic partial sums over blocks of 256 rows) and transpose.co
    (staged through shared memory), f32 and f16 data, against float64 torch."""
    cols = load(PROGRAMS / "cols.co", schedule=schedule)
    x, xh = randn(m, n, seed=m), randn(m, n, dtype=torch.float16, seed=n)
    for fn, data in (("col_sums", x), ("col_sums_f16", xh)):
        s = torch.zeros(n, device=DEVICE)  # the kernel adds its partial sums into s
        getattr(cols, fn)(data, s)
        assert torch.allclose(s.double().cpu(), data.double().sum(0).cpu(), atol=1e-4, rtol=1e-5), fn
    tr = load(PROGRAMS / "transpose.co", schedule=schedule)
    for fn, data in (("transpose", x), ("transpose_f16", xh)):
        y = poisoned(n, m, dtype=data.dtype)
        getattr(tr, fn)(data, y)
        assert torch.equal(y.cpu(), data.t().cpu()), fn


def test_auto_folds_each_row_into_one_program() -> None:
    out = translate_full(PROGRAM.read_text(), filename="rows.co", schedule="auto")
    for fn in KERNELS:
        sched = out.schedules[fn][f"{fn}_k0"]
        assert sched.fold == -1 and sched.splits[0] > 1, (fn, sched)  # type: ignore[attr-defined]
    text = out.source
    # the whole row in registers where it fits, in blocks past it; its passes read it once
    assert "if N <= 16384:" in text and "def softmax_k0_blocked(" in text
    body = text[text.index("def softmax_k0(") : text.index("def softmax_k0_blocked(")]
    assert body.count("tl.load(") == 1 and "tl.max(" in body and "tl.sum(" in body and "for " not in body


POINTS = {  # fields of every kernel's TileSchedule: blocks of the row, the row in registers, both widened
    "blocks of 16": {"factors": [1], "splits": [1], "fold": 16},
    "whole, 4 rows a program": {"factors": [1], "splits": [16], "fold": -1},
    "blocks of 64, 1 row": {"factors": [1], "splits": [32], "fold": 64},
    "widened 2x, blocks of 8": {"factors": [2], "splits": [1], "fold": 8},
}


@pytest.mark.parametrize("name", POINTS)
def test_tuning_points_take_each_path(name: str) -> None:
    point = Point.of({}, {f"{fn}_k0": POINTS[name] for fn in KERNELS})
    out = translate_full(PROGRAM.read_text(), filename="rows.co", point=point)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"fold_{abs(hash(name))}")
    errs = _run(mod, 9, 100)  # (9 rows: a ragged last program of 2 or 4 rows, and of widened pairs)
    assert all(errs[k] <= TOL[k] for k in KERNELS), errs


@pytest.mark.skipif(DEVICE == "cpu", reason="a row longer than 16384 elements takes minutes in the interpreter")
def test_rows_longer_than_the_registers_hold_are_read_in_blocks() -> None:
    errs = _run(load(PROGRAM, schedule="auto"), 3, 20000)
    assert all(errs[k] <= 10 * TOL[k] for k in KERNELS), errs


# the accumulator read by the loop's stores after its step: a running sum, folded as a prefix sum of
# each tile (tests/test_scans.py has the other forms)
PREFIX = """
__co__ void prefix(global f32 [M, N] x, global f32 [M, N] y) {
  parallel p by cdiv(M, 32) : block, t by 32 : thread {
    mutable f32 s = 0.0f;
    foreach j in [N] { s += x.at(p # t, j); y.at(p # t, j) = s; }
  }
}
"""

REFUSED = {
    # stores one element for every value of the counter
    "last": """
__co__ void last(global f32 [M, N] x, global f32 [M] y) {
  parallel p by cdiv(M, 32) : block, t by 32 : thread {
    foreach j in [N] { y.at(p # t) = x.at(p # t, j); }
  }
}
""",
    # two stores whose elements overlap between iterations: the later iteration's first store wins
    "pairs": """
__co__ void pairs(global f32 [M, N] x, global f32 [M, N] y) {
  parallel p by cdiv(M, 32) : block, t by 32 : thread {
    foreach j in [N] { y.at(p # t, j) = x.at(p # t, j); y.at(p # t, j + 1) = 0.0f; }
  }
}
""",
    # reads the elements a later iteration stores
    "shift": """
__co__ void shift(global f32 [M, N] x) {
  parallel p by cdiv(M, 32) : block, t by 32 : thread {
    foreach j in [N] { x.at(p # t, j) = x.at(p # t, j + 1) * 2.0f; }
  }
}
""",
}


@pytest.mark.parametrize("name", REFUSED)
def test_loops_the_proof_refuses_run_as_written(name: str) -> None:
    src = REFUSED[name]
    out = translate_full(src, filename="t.co", schedule="source")
    (kernel,) = out.ir[name]
    with pytest.raises(NotFolded):
        fold_loops(kernel, 16)  # type: ignore[arg-type]
    with pytest.raises(CroqError, match="folds the loops"):  # a tuning point that asks for it: an error
        bad = translate_full(src, filename="t.co", point=Point.of({}, {f"{name}_k0": {"fold": 16}}))
        raise bad.failed[name]
    auto = translate_full(src, filename="t.co", schedule="auto")  # auto keeps the loop
    assert any(isinstance(s, N.For) for k in auto.ir[name] for s in N.walk(k.body))  # type: ignore[attr-defined]


def test_a_prefix_sum_keeps_its_order() -> None:
    text = translate_full(PREFIX, filename="t.co", schedule="auto").source
    assert "tl.cumsum(" in text
    mod = load_source(text, "prefix_auto")
    x = randn(40, 33)
    y = poisoned(40, 33)
    mod.prefix(x, y)
    assert torch.allclose(y.double().cpu(), x.double().cpu().cumsum(1), atol=1e-4)


def test_fold_identities() -> None:
    from croq2triton.schedule.foldloops import _identity

    assert _identity("max", "f32").value == float("-inf") and _identity("min", "i32").value == 2**31 - 1
    assert _identity("+", "f16") == E.Const(0.0, "f16")
