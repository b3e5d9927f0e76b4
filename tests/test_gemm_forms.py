"""Issue 11: one GEMM, many equivalent Croqtile forms (tests/programs/gemm_forms/*.co, written for this test).

Each form computes ``out = a @ b^T`` (b stored ``[N, K]``) or ``out = a @ b`` (b stored ``[K, N]``). The
translator's recognition (per-thread reductions lifted to ``tl.dot``, re-tiling, pipelines collapsed)
must work from what the program means, not from the spelling of one source form:

* numerically, in both schedules, in Triton's interpreter: fresh random inputs on ragged sizes (no
  extent a multiple of any tile of the form), outputs poisoned with NaN, compared against a float64
  reference, every output element written. The forms take their global tiles with ``subspan(..).at(..)``
  on cdiv grids (masked at the edges); ``chunkat`` is used only on shared tiles whose extents its bounds
  divide, so floor division never drops elements;
* (slow) under ``--schedule auto`` each kernel must compile for sm_90a to ``wgmma`` with a block tile of at
  least 128 x 128 and TMA loads (every form's layout allows TMA at 4096^3: 2-D/3-D row-major tensors with
  16-byte aligned rows). Built in a fresh process: Triton's interpreter mode is process-wide.

A case marked xfail(strict=True) is a translator bug or a missing optimisation, with the error or the
compile summary as its reason: it must keep failing until the translator is fixed.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sm90
import torch
from kernel_util import DEVICE, poisoned, randn

from croq2triton.api import load

FORMS = Path(__file__).resolve().parent / "programs" / "gemm_forms"
F16, F32, F8 = torch.float16, torch.float32, torch.float8_e4m3fn

try:  # Triton's interpreter wraps kernel exceptions
    from triton.runtime.errors import InterpreterError
except ImportError:  # pragma: no cover
    InterpreterError = RuntimeError  # type: ignore[misc,assignment]


@dataclass(frozen=True)
class Form:
    name: str  # tests/programs/gemm_forms/NAME.co, function `gemm`
    sizes: tuple[int, int, int]  # M, N, K (ragged)
    out: torch.dtype = F32
    inp: torch.dtype = F16
    b_kn: bool = False  # b stored [K, N] (else [N, K])
    acc16: bool = False  # f16 accumulator in the source
    batch: int = 0  # leading batch extent of all three tensors (0: plain GEMM)
    defines: tuple[tuple[str, str], ...] = ()
    num_sms: int | None = None  # value of an `int num_sms` parameter
    tag: str = ""  # tells two cases of one file apart
    # schedule -> (exception type, reason) of a known translator failure
    xfail: dict[str, tuple[type[BaseException], str]] = field(default_factory=dict, hash=False, compare=False)

    @property
    def label(self) -> str:
        return self.name + "".join(f"-{k}{v}" for k, v in self.defines) + (f"-{self.tag}" if self.tag else "")


# sizes: thread-tile forms whose element loops are not lifted to one dot run them step by step in the
# interpreter (thread_4x4, thread_16x16: K x 16 or K x 256 steps per program, 10-20 ms each); they get
# small ragged sizes (K = 19 and 5) that still cover partial blocks in every dimension
RAGGED = (197, 301, 91)  # rows of 182 B / 602 B: not 16-byte aligned, TMA copies fall back to masked loads
ALIGNED = (197, 296, 88)  # ragged, but 16-byte aligned rows (f16): TMA copies use descriptors
PIPE = (197, 296, 200)  # aligned, and more K steps than any ring has slots: the rings wrap

NUMERIC: list[Form] = [
    Form("scalar_1x1", RAGGED),
    Form("thread_4x4", (70, 42, 19)),
    Form("thread_8x32", (37, 100, 11)),
    Form("thread_16x16", (70, 42, 5), out=F16),
    Form("staged_k16", (100, 70, 90)),
    Form("staged_k32_future", (100, 70, 90)),
    Form("staged_k48", (100, 70, 90), out=F16),
    Form("staged_k128_kn", (100, 70, 200), b_kn=True),
    Form("mma_rowrow_global", RAGGED),
    Form("mma_rowcol_dmaout", RAGGED, out=F16, b_kn=True),
    Form("rega_n80_tma", ALIGNED, out=F16),
    Form("rega_n80_tma", RAGGED, out=F16, tag="unaligned"),
    *[
        Form(
            "ntile_f16acc",
            RAGGED,
            out=F16,
            acc16=True,
            defines=(("BN", bn),),
        )
        for bn in ("48", "96", "192")
    ],
    *[Form("ntile_shared", RAGGED, out=F16, acc16=True, defines=(("BN", bn),)) for bn in ("48", "96", "192")],
    Form("batched", (97, 70, 45), batch=3),
    Form("pipe_1c_s4", PIPE),
    Form("pipe_2c_s2", PIPE, out=F16),
    Form("pipe_3c_s1", PIPE),
    Form("pipe_tut_1c_s2", PIPE, out=F16, acc16=True),
    Form("pipe_tut_3c_s3", PIPE),
    Form("pipe_2c_written_out", PIPE),
    Form("pipe_2c_picked_store", PIPE),
    Form("pipe_2c_unit_parts", PIPE),
    Form("pipe_tma_load", PIPE),
    Form("pipe_2c_unit_bound", PIPE),
    # 4 x 3 = 12 output tiles on 5 workers: 3 rounds, the last one partly guarded off
    Form("persistent", ALIGNED, out=F16, defines=(("NUM_SMS", "5"),)),
    Form("persistent_param", RAGGED, num_sms=5),
    Form("fp8_f32out", (197, 296, 208), inp=F8),
    Form("fp8_f16out", (197, 296, 208), inp=F8, out=F16, acc16=True),
    Form("warp_mma", (100, 70, 90), b_kn=True),
    Form("warp_mma_staged", (100, 70, 90), out=F16),
    Form("wg2_split_store", RAGGED),
    Form("sum_commuted_kn", RAGGED, out=F16, b_kn=True),
    Form("thread_4x4_arith", (70, 42, 19)),
    Form("guarded_k_split", (100, 70, 45)),
    Form("flat_tile_ids", RAGGED),
    # per-thread loops (the tile-IR path runs them lane-parallel, one K step at a time in the
    # interpreter): small ragged sizes
    Form("unrolled_k2", (61, 75, 37)),
    Form("thread_store_shared", (61, 75, 37)),
    Form("block_scalar", (21, 19, 13), out=F16),  # one program per element as written: small
    Form("with_foreach", (40, 30, 19)),
    Form("cuda_shared_tiles", (70, 45, 37), b_kn=True),
    Form("cuda_shared_transposed", (70, 45, 37)),
    Form("cuda_shared_ifelse", (70, 45, 37), b_kn=True),
    Form("cuda_register_tiles", (140, 75, 37), inp=F32, b_kn=True),
]


def _numeric_params() -> list[object]:
    out = []
    for f in NUMERIC:
        for s in ("source", "auto"):
            marks = []
            if s in f.xfail:
                exc, reason = f.xfail[s]
                # compiled on a GPU the same bug surfaces as Triton's CompilationError, not the interpreter's
                raises = exc if DEVICE == "cpu" else None
                marks.append(pytest.mark.xfail(strict=True, raises=raises, reason=reason))
            out.append(pytest.param(f, s, id=f"{f.label}-{s}", marks=marks))
    return out


def test_every_form_has_a_file_and_a_header() -> None:
    files = sorted(p.stem for p in FORMS.glob("*.co"))
    assert len(files) >= 16
    assert sorted({f.name for f in NUMERIC}) == files
    assert sorted({c.name for c in COMPILED}) == files
    for p in FORMS.glob("*.co"):
        head = p.read_text().splitlines()[:2]
        assert all(line.startswith("// ") for line in head), p.name


@pytest.mark.filterwarnings("ignore:croq2triton.*not 16-byte aligned:RuntimeWarning")  # the unaligned cases
@pytest.mark.parametrize(("form", "schedule"), _numeric_params())
def test_form_computes_the_gemm(form: Form, schedule: str) -> None:
    mod = load(FORMS / f"{form.name}.co", schedule=schedule, defines=dict(form.defines) or None)
    m, n, k = form.sizes
    lead = (form.batch,) if form.batch else ()
    a = randn(*lead, m, k, seed=11).to(form.inp)
    b = randn(*lead, *((k, n) if form.b_kn else (n, k)), seed=12).to(form.inp)
    out = poisoned(*lead, m, n, dtype=form.out)
    args: list[object] = [a, b, out]
    if form.num_sms is not None:
        args.append(form.num_sms)
    mod.gemm(*args)
    # fp8: the reference is computed from the fp8-rounded inputs themselves
    bd = b.double() if form.b_kn else b.double().transpose(-1, -2)
    ref = (a.double() @ bd).cpu()
    got = out.double().cpu()
    assert not torch.isnan(got).any(), f"{int(torch.isnan(got).sum())} output elements never written"
    # f16 inputs, f32 accumulation and output: 1e-3 of max|ref|; f16 accumulators or outputs: 1e-2
    tol = 1e-2 if (form.out == F16 or form.acc16) else 1e-3
    scale = float(ref.abs().max())
    err = float((got - ref).abs().max())
    assert err <= tol * scale, f"max |out - ref| = {err:.3g} > {tol} * max|ref| = {tol * scale:.3g}"


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_unit_bound_inside_a_role_as_written(monkeypatch: pytest.MonkeyPatch, schedule: str) -> None:
    # `#wg` inside the role of several consumer units, lifted as written (the contraction proof off):
    # the role's own unit index replaces `wg`, and `#wg` stays the level's extent (was "'wg' is not
    # declared", a user's error for a valid program)
    monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    test_form_computes_the_gemm(Form("pipe_2c_unit_bound", PIPE), schedule)


# ---------------------------------------------------------------------------------------------
# --schedule auto on sm_90a: wgmma, a block tile of at least 128 x 128, TMA


@dataclass(frozen=True)
class Compiled:
    name: str
    defines: tuple[tuple[str, str], ...] = ()
    xfail: str | None = None  # the summary line (or error) it gives today
    # the label of an earlier form whose module under auto this one's is, but for docstrings, comments and
    # source positions: compiling it again would compile the same kernels (checked instead: _same_module)
    same_as: str | None = None

    @property
    def label(self) -> str:
        return self.name + "".join(f"-{k}{v}" for k, v in self.defines)


# 4096^3: the policy's own tile (at 1024^3 its 32 tiles of 128 x 256 would leave most of the 132 SMs idle, and
# the launcher takes 64 x 64 tiles there: schedule/occupancy.py, tests/test_splitk.py)
SIZES = {"M": 4096, "N": 4096, "K": 4096, "BS": 4, "num_sms": 132}


def _alike(first: str, *names: str) -> list[Compiled]:
    """``first`` compiled, and ``names``, whose modules are ``first``'s, checked to be."""
    return [Compiled(first), *(Compiled(n, same_as=first) for n in names)]


# every form is proved a contraction (lift/contraction.py) and tiled 128 x 256 under the auto policy
# (schedule/policy.py); a form that fails gets xfail(reason=the summary line of `croq2triton compile FILE
# --size M=4096,N=4096,K=4096 --schedule auto` it gives). Forms of one module (f16 a @ b^T into f32, ...) are
# compiled once: the 47 forms make 18 modules
COMPILED: list[Compiled] = [
    *_alike("scalar_1x1", "thread_4x4", "thread_8x32", "staged_k16", "staged_k32_future", "thread_4x4_arith",
            "guarded_k_split", "flat_tile_ids", "thread_store_shared", "with_foreach", "cuda_shared_transposed"),
    *_alike("thread_16x16", "staged_k48", "block_scalar"),
    *_alike("staged_k128_kn", "cuda_shared_tiles", "cuda_shared_ifelse"),
    *_alike("mma_rowrow_global", "pipe_1c_s4", "pipe_3c_s1", "pipe_tut_3c_s3"),
    Compiled("mma_rowcol_dmaout"),
    *_alike("rega_n80_tma", "pipe_2c_s2", "pipe_tut_1c_s2"),
    Compiled("ntile_f16acc", (("BN", "48"),)),
    *[Compiled("ntile_f16acc", (("BN", bn),), same_as="ntile_f16acc-BN48") for bn in ("96", "192")],
    *[Compiled("ntile_shared", (("BN", bn),), same_as="ntile_f16acc-BN48") for bn in ("48", "96", "192")],
    Compiled("warp_mma_staged", same_as="ntile_f16acc-BN48"),
    Compiled("batched"),
    *_alike("pipe_2c_written_out", "pipe_2c_unit_parts", "pipe_tma_load", "pipe_2c_unit_bound", "wg2_split_store"),
    *[Compiled(name) for name in ("pipe_2c_picked_store", "persistent", "persistent_param", "fp8_f32out")],
    *[Compiled(name) for name in ("fp8_f16out", "warp_mma", "sum_commuted_kn", "unrolled_k2", "cuda_register_tiles")],
]  # fmt: skip

_COMPILE_SCRIPT = """
import json, sys
from croq2triton.compiler import compile_file
from croq2triton.errors import CroqError
from croq2triton.frontend.driver import parse_file
from croq2triton.runsizes import knobs
path, sizes, defines = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
try:
    names = {k for fn in parse_file(path, defines=defines or None).functions for k in knobs(fn)}
    sizes = {k: v for k, v in sizes.items() if k in names}  # compile, like run, refuses unknown names
    res = compile_file(path, sizes=sizes, defines=defines or None, schedule="auto", target="sm_90a")
except CroqError as e:
    print(json.dumps({"error": str(e).strip().splitlines()[0]}))
    sys.exit(0)
print(json.dumps({"lines": [f"{fn}: {r.line()}" for fn, reps in res for r in reps]}))
"""


def _compile_auto(form: Compiled, folder: Path = FORMS) -> dict[str, object]:
    r = sm90.code(_COMPILE_SCRIPT, str(folder / f"{form.name}.co"), json.dumps(SIZES), json.dumps(dict(form.defines)))
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _compile_params() -> list[object]:
    return [
        pytest.param(
            c,
            id=c.label,
            marks=[pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else [],
        )
        for c in COMPILED
    ]


def _module_text(form: Compiled) -> str:
    """The form's module under auto without what does not reach the compiler: docstrings, comments, its
    file's name and the source positions its launcher's errors point at."""
    path = FORMS / f"{form.name}.co"
    from croq2triton.api import translate_full

    defines = dict(form.defines) or None  # (as test_form_computes_the_gemm loads it: the memo's translation)
    source = translate_full(path.read_text(), filename=str(path), schedule="auto", defines=defines).source
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        head = body[0] if isinstance(node, (ast.Module, ast.FunctionDef)) and body else None
        if isinstance(head, ast.Expr) and isinstance(head.value, ast.Constant) and isinstance(head.value.value, str):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[union-attr]
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "_rt.Fn":
            node.args = node.args[:1]  # (the function's name; its line and its parameters' columns dropped)
        if isinstance(node, ast.Constant) and node.value == path.name:
            node.value = "form.co"
    return ast.unparse(tree)


@pytest.mark.slow
@pytest.mark.parametrize("form", _compile_params())
def test_auto_schedule_compiles_to_a_large_wgmma_tile(form: Compiled) -> None:
    if form.same_as is not None:
        first = next(c for c in COMPILED if c.label == form.same_as)
        assert first.same_as is None and COMPILED.index(first) < COMPILED.index(form)
        assert _module_text(form) == _module_text(first), (
            f"{form.label}'s module under auto is no longer {first.label}'s: compile it (drop its same_as)"
        )
        return
    res = _compile_auto(form)
    assert "error" not in res, res.get("error")
    lines = res["lines"]
    assert isinstance(lines, list) and len(lines) == 1, lines  # one kernel per form
    line = lines[0]
    print(line)
    tile = re.search(r": dot (\d+)x(\d+)x(\d+),", line)
    assert tile, f"no dot: {line}"
    assert "wgmma yes" in line, line
    assert int(tile.group(1)) >= 128 and int(tile.group(2)) >= 128, line
    assert "TMA yes" in line, line


NOT_GEMM = FORMS.parent / "staged_not_gemm.co"


def _positive_parts(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.double().clamp(min=0) @ b.double()


def _even_columns(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    out = torch.zeros(m, n, dtype=torch.float64, device=a.device)  # (cuda where the suite runs on a GPU)
    for kt in range((k + 31) // 32):
        for kk in range(16):
            src = kt * 32 + 2 * kk  # the column of a staged at position kk
            row = kt * 16 + kk  # the row of b staged at position kk
            if src < k and row < k:
                out += a.double()[:, src : src + 1] * b.double()[row : row + 1, :]
    return out


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("func", "ref"), [("positive_parts", _positive_parts), ("even_columns", _even_columns)])
def test_staged_tiles_that_are_not_a_region_run_as_written(schedule: str, func: str, ref: object) -> None:
    """A staged element under a condition on its value, or at a stride: the buffer does not hold a
    region of the tensor (lift/moves.py ``staged``), so the kernel is not tiled as a GEMM, and it
    computes what it says."""
    from croq2triton.api import translate_full

    code = translate_full(NOT_GEMM.read_text(), filename="staged_not_gemm.co", schedule=schedule).source
    assert f"def {func}_k0(" in code and "tl.dot(" not in code.split(f"def {func}_k0(")[1].split("@_rt.launcher")[0]
    mod = load(NOT_GEMM, schedule=schedule)
    # 2 x 2 programs of 16 x 16 (the last rows and columns partial), staged steps of K (3 of 16, 2 of 32; the
    # last partial):
    # each thread's loop runs step by step in the interpreter
    a, b = randn(20, 37, seed=1), randn(37, 19, seed=2)
    got = poisoned(20, 19)
    getattr(mod, func)(a, b, got)
    want = ref(a, b)  # type: ignore[operator]
    assert not torch.isnan(got).any()
    assert float((got.double() - want).abs().max() / want.abs().max()) < 1e-5
