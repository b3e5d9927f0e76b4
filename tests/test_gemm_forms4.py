"""Issues 25/28: GEMMs in yet more forms (tests/programs/gemm_forms4/*.co, written for this test).

tests/test_gemm_forms.py, test_gemm_forms2.py and test_gemm_forms3.py hold ~90 forms; these are others
a Croqtile user plausibly writes: GEMV (a vector operand, N = 1) and vector-times-matrix (M = 1), a
skinny GEMM whose four rows are fixed in the signature, C += A B^T with the accumulator started from
C's element, alpha A B^T + beta C in the store expression of a thread tile, bias + ReLU written with
``?:`` or ``__max`` and bias + GELU (``__gelu``) before the store, two accumulators over even and odd
elements of K, a thread-level ``while`` over K, classic SGEMM register blocking (f32 operands, A staged
transposed, register fragments copied from shared memory for each k), f16 A with f32 B converted to
f16 while it is staged, A stored K-major and staged by ``dma.transp``, s8 x s8 -> s32 on the tensor
cores, operands declared ``tf32``, ``chunkat`` pieces of a staged K tile walked element by element, a
batch loop inside each thread against one shared weight, an array of warp-level fragments
(``frag f32 [16, 16] acc[2]``), and a warp-specialised pipeline whose consumer is the first role.
Each case:

* computes its function in both schedules in Triton's interpreter: random inputs on ragged sizes,
  outputs poisoned (NaN; a sentinel for integers), against a float64 reference;
* under ``--schedule auto`` is proved a contraction (lift/contraction.py);
* (slow) under auto compiles for sm_90a to ``wgmma`` with a block tile of at least 128 x 128 (the
  compile script and sizes of tests/test_gemm_forms.py), where the output's extents are M and N.

A case marked xfail(strict=True) is a form the translator does not recognise yet, with the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import sm90
import torch
from kernel_util import flat, poisoned, randn
from test_gemm_forms import _COMPILE_SCRIPT, SIZES

from croq2triton.api import load, translate_full

FORMS = Path(__file__).resolve().parent / "programs" / "gemm_forms4"
MARK = "a contraction: croq2triton/lift/contraction.py proves it"
F16, F32, S8, S32 = torch.float16, torch.float32, torch.int8, torch.int32

Args = list[object]


@dataclass(frozen=True)
class Case:
    name: str  # tests/programs/gemm_forms4/NAME.co, function `gemm`
    sizes: tuple[int, ...]  # the sizes ``args`` takes
    args: Callable[..., Args]  # sizes -> every argument (the output among them)
    ref: Callable[..., torch.Tensor]  # (the arguments as float64 on the CPU, before the call) -> the output
    out: int = -1  # which argument is the output
    tol: float = 1e-3  # of max |ref|
    why: str = ""  # xfail(strict) reason of the contraction check: auto does not recognise it yet
    wide: bool = True  # checked on sm_90a (a GEMM whose output extents the check's sizes set)
    refused: str = ""  # xfail(strict) reason of the computing check: the translator refuses the program


def _r(*shape: int, dtype: torch.dtype = F16, seed: int) -> torch.Tensor:
    return randn(*shape, seed=seed).to(dtype)


def _relu(x: torch.Tensor) -> torch.Tensor:
    return x.clamp(min=0)


def _gelu(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x)


RAGGED = (197, 301, 91)
SMALL = (70, 42, 37)  # the thread forms: an element of K a step in the interpreter

CASES: list[Case] = [
    Case("gemv_n1", (197, 91), lambda m, k: [_r(m, k, seed=1), _r(k, seed=2), poisoned(m)],
         lambda a, x, y: a @ x, wide=False,
         why="a matrix-vector product: its store has one free index, and the contraction's model (lift/proof.py) is (batch,) row, column; lowered as written"),
    Case("gevm_kn", (91, 301), lambda k, n: [_r(k, seed=1), _r(k, n, seed=2), poisoned(n)],
         lambda x, b, y: x @ b, wide=False,
         why="a matrix-vector product: its store has one free index, and the contraction's model (lift/proof.py) is (batch,) row, column; lowered as written"),
    Case("skinny_m_fixed4", (301, 91), lambda n, k: [_r(4, k, seed=1), _r(n, k, seed=2), poisoned(4, n)],
         lambda a, b, o: a @ b.T, wide=False),
    Case("c_read_first_thread", SMALL, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(m, n, seed=3)],
         lambda a, b, c: c + a @ b.T),
    Case("alpha_beta_thread", SMALL,
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(m, n, seed=3), 1.5, -0.75, poisoned(m, n)],
         lambda a, b, c, al, be, o: al * (a @ b.T) + be * c),
    Case("relu_ternary_mma", RAGGED,
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(n, seed=3), poisoned(m, n, dtype=F16)],
         lambda a, b, bias, o: _relu(a @ b.T + bias), tol=1e-2),
    Case("max_relu_thread", SMALL,
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(m, seed=3), poisoned(m, n)],
         lambda a, b, bias, o: _relu(a @ b.T + bias[:, None])),
    Case("gelu_bias_mma", RAGGED,
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), _r(n, seed=3), poisoned(m, n, dtype=F16)],
         lambda a, b, bias, o: _gelu(a @ b.T + bias), tol=1e-2),
    Case("two_accs_thread", SMALL, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("k_while_thread", SMALL, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("sgemm_reg_frags", (70, 75, 45),
         lambda m, n, k: [randn(m, k, seed=1), randn(k, n, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b, tol=1e-5),
    Case("mixed_f32b_convert", RAGGED, lambda m, n, k: [_r(m, k, seed=1), randn(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.half().double().T,
         why="B rounded f32 -> f16 while it is staged: a contraction's operand has its tensor's type and no "
             "conversion (lift/terms.py Region, tir/contract.py Operand); lowered as written"),
    Case("a_transp_copy", RAGGED, lambda m, n, k: [_r(k, m, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a.T @ b.T),
    Case("int8_wgmma", (70, 75, 160),
         lambda m, n, k: [randn(m, k, dtype=S8, seed=1), randn(n, k, dtype=S8, seed=2), poisoned(m, n, dtype=S32)],
         lambda a, b, o: a @ b.T, tol=0.0),
    Case("tf32_declared", RAGGED, lambda m, n, k: [randn(m, k, seed=1), randn(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T, tol=1e-2),
    Case("chunk_elems_thread", (70, 75, 45), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("batch_loop_shared_w", (3, 70, 42, 37),
         lambda bs, m, n, k: [_r(bs, m, k, seed=1), _r(n, k, seed=2), poisoned(bs, m, n)],
         lambda x, w, o: x @ w.T),
    Case("warp_frag_array", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("pipe_consumer_first_s3", RAGGED,
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n, dtype=F16)],
         lambda a, b, o: a @ b.T, tol=1e-2),
]  # fmt: skip


def test_every_program_has_a_case() -> None:
    assert sorted(p.stem for p in FORMS.glob("*.co")) == sorted(c.name for c in CASES)
    for p in FORMS.glob("*.co"):
        assert p.read_text().startswith("// "), p.name


def _source(case: Case, schedule: str) -> str:
    path = FORMS / f"{case.name}.co"
    return translate_full(path.read_text(), filename=path.name, schedule=schedule).source


def _marks(c: Case) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(strict=True, reason=c.why)] if c.why else []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=_marks(c)) for c in CASES])
def test_auto_proves_the_gemm(case: Case) -> None:
    assert MARK in flat(_source(case, "auto"))


def _check(got: torch.Tensor, ref: torch.Tensor, tol: float) -> None:
    got = got.double().cpu()
    assert got.shape == ref.shape
    assert not torch.isnan(got).any(), f"{int(torch.isnan(got).sum())} output elements never written"
    scale = float(ref.abs().max())
    err = float((got - ref).abs().max())
    assert err <= tol * scale, f"max |out - ref| = {err:.3g} > {tol} * max|ref| = {tol * scale:.3g}"


def _refused(c: Case) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(strict=True, reason=c.refused)] if c.refused else []


@pytest.mark.filterwarnings("ignore:croq2triton.*not 16-byte aligned:RuntimeWarning")
@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=_refused(c)) for c in CASES])
def test_it_computes_its_function(case: Case, schedule: str) -> None:
    mod = load(FORMS / f"{case.name}.co", schedule=schedule)
    args = case.args(*case.sizes)
    before = [x.double().cpu() if isinstance(x, torch.Tensor) else x for x in args]
    mod.gemm(*args)
    out = args[case.out]
    assert isinstance(out, torch.Tensor)
    _check(out, case.ref(*before), case.tol)


@pytest.mark.slow
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=_marks(c)) for c in CASES if c.wide])
def test_auto_schedule_compiles_to_a_large_wgmma_tile(case: Case) -> None:
    sizes = {**SIZES, "BS": 4}
    r = sm90.code(_COMPILE_SCRIPT, str(FORMS / f"{case.name}.co"), json.dumps(sizes), "{}")
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert "error" not in res, res.get("error")
    lines = res["lines"]
    assert isinstance(lines, list) and len(lines) == 1, lines  # one kernel per form
    line = lines[0]
    tile = re.search(r": dot (\d+)x(\d+)x(\d+),", line)
    assert tile and "wgmma yes" in line, line
    assert int(tile.group(1)) >= 128 and int(tile.group(2)) >= 128, line


# ---------------------------------------------------------------------------------------------
# near misses of what the forms above taught the analysis: each must not be proved a contraction,
# and must compute what it says (as written)


def _text(name: str, old: str, new: str) -> str:
    text = (FORMS / f"{name}.co").read_text()
    assert old in text, (name, old)
    return text.replace(old, new)


def _even_twice(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return 2 * (a[:, ::2] @ b[:, ::2].T)


def _last_k_from_c(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return c + a[:, -1:] @ b[:, -1:].T


def _first_batch(x: torch.Tensor, w: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return (x[0] @ w.T).expand(x.shape[0], -1, -1)


NEAR: list[tuple[str, str, str, Callable[..., torch.Tensor]]] = [
    # both partial sums over the EVEN elements of K: twice their sum, the odd ones never
    ("accs_both_even", "two_accs_thread", _text("two_accs_thread", "s1 += a.at(m, 2 * k2 + 1) * b.at(n, 2 * k2 + 1)",
                                                 "s1 += a.at(m, 2 * k2) * b.at(n, 2 * k2)"), _even_twice),
    # the accumulator started from C inside the K loop: each step starts it again (the last k only)
    ("c_start_inside_k", "c_read_first_thread", _text(
        "c_read_first_thread",
        "    foreach {k, i, j} in [K, 2, 2]\n      acc.at(i, j) += a.at(bm # tm # i, k) * b.at(bn # tn # j, k);\n",
        "    foreach k in [K] {\n      foreach {i, j} in [2, 2]\n        acc.at(i, j) = (bm # tm # i < M && bn # tn # j < N)"
        " ? c.at(bm # tm # i, bn # tn # j) : 0.0f;\n      foreach {i, j} in [2, 2]\n"
        "        acc.at(i, j) += a.at(bm # tm # i, k) * b.at(bn # tn # j, k);\n    }\n"), _last_k_from_c),
    # every batch reads the first batch's rows: not a batch of x
    ("batch_rows_of_first", "batch_loop_shared_w", _text("batch_loop_shared_w", "x.at(bi, bm # tm # i, k)",
                                                          "x.at(0, bm # tm # i, k)"), _first_batch),
]  # fmt: skip


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("name", "form", "text", "ref"), NEAR, ids=[x[0] for x in NEAR])
def test_a_near_miss_is_computed_as_written(
    name: str, form: str, text: str, ref: Callable[..., torch.Tensor], schedule: str, tmp_path: Path
) -> None:
    case = next(c for c in CASES if c.name == form)
    src = translate_full(text, filename=f"{name}.co", schedule=schedule).source
    if schedule == "auto":
        assert MARK not in flat(src)
    path = tmp_path / f"{name}.co"
    path.write_text(text)
    mod = load(path, schedule=schedule)
    args = case.args(*case.sizes)
    before = [x.double().cpu() if isinstance(x, torch.Tensor) else x for x in args]
    mod.gemm(*args)
    out = args[case.out]
    assert isinstance(out, torch.Tensor)
    _check(out, ref(*before), case.tol)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_flat_split_that_leaves_rows_out_is_not_proved(schedule: str, tmp_path: Path) -> None:
    """relu_ternary_mma's epilogue walking half the flat element numbers (``foreach e in [16]``):
    rows 32..63 of each 64-row tile are never stored, so the split ``(e * 128 + t) / 64`` does not
    cover the tile; lowered as written, those rows keep their poison and the others are right."""
    text = _text("relu_ternary_mma", "foreach e in [32]", "foreach e in [16]")
    src = translate_full(text, filename="near.co", schedule=schedule).source
    if schedule == "auto":
        assert MARK not in flat(src)
    path = tmp_path / "near.co"
    path.write_text(text)
    mod = load(path, schedule=schedule)
    m, n, k = 100, 70, 45
    a, b, bias, out = _r(m, k, seed=1), _r(n, k, seed=2), randn(n, seed=3), poisoned(m, n, dtype=F16)
    mod.gemm(a, b, bias, out)
    ref = _relu(a.double().cpu() @ b.double().cpu().T + bias.double().cpu())
    got = out.double().cpu()
    kept = (torch.arange(m) % 64) < 32
    assert torch.isnan(got[~kept]).all()
    _check(got[kept], ref[kept], 1e-2)


def test_a_unit_fragment_of_the_block_shape_is_an_error() -> None:
    """warp_frag_array with each warp's fragment declared [64, 16] (the block's rows, not the warp's
    16): each unit's product is [16, 16]; a located error, in both schedules."""
    text = _text("warp_frag_array", "frag f32 [16, 16] acc[2]", "frag f32 [64, 16] acc[2]")
    for schedule in ("source", "auto"):
        r = translate_full(text, filename="wrong.co", schedule=schedule)
        errors = [d for d in r.diagnostics if d.severity == "error"]
        assert errors and "gemm" in r.failed
        d = errors[0]
        assert "each unit's MMA product is [16, 16]" in d.message and "[64, 16]" in d.message, d.message
        assert d.span is not None and d.span.line == 16 and d.hint
