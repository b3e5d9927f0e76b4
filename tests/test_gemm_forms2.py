"""Issues 25/28: more GEMM and pipeline forms (tests/programs/gemm_forms2/*.co, written for this test).

tests/test_gemm_forms.py holds one GEMM in many forms with ``a`` stored ``[M, K]``; these are forms a
Croqtile user plausibly writes that differ from those in structure: K-major operands (``a [K, M]``,
``mma.col.*``), K loops written as a counted ``while`` over element offsets or with ``.step`` views,
accumulators that start from a value or from the output itself, epilogues written element-wise over
the stored output, s8 -> s32 and bf16, skinny tiles and an N loop inside the block, batches as a
``foreach`` or as the first grid component, pipelines with other ring depths, ``.async`` MMAs and
the producer as the last unit, double buffering by ``swap``ped futures or through the other slot of
two buffers, a K loop walked backwards, a GEMV-like eight columns, ``C += A B`` into the output and a
persistent ``while`` over flat tile ids. Each case:

* computes its function in both schedules in Triton's interpreter: random inputs on ragged sizes,
  outputs poisoned with NaN, against a float64 reference;
* under ``--schedule auto`` is proved a contraction (lift/contraction.py), or, for a near miss (not a
  GEMM over K), is not and still computes what it says;
* (slow) under auto compiles for sm_90a to ``wgmma`` with a block tile of at least 128 x 128 (shared
  with tests/test_gemm_forms.py: ``_compile_auto``), except where the signature fixes a narrow output.

The near misses at the end (inline programs) are what each new rule must not take: a rewrite of only
part of a stored tile, a K condition that is not the loop's range, prefetches of the wrong tile,
an element rewritten twice by a loop its index does not use, K walked backwards in one operand only.

A case marked xfail(strict=True) is a form the translator does not recognise yet, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, flat, poisoned, randn
from test_gemm_forms import Compiled, _compile_auto

from croq2triton.api import load, translate_full

FORMS = Path(__file__).resolve().parent / "programs" / "gemm_forms2"
MARK = "a contraction: croq2triton/lift/contraction.py proves it"
F16, F32, BF16, S8, S32 = torch.float16, torch.float32, torch.bfloat16, torch.int8, torch.int32
D = torch.float64

Args = list[object]


@dataclass(frozen=True)
class Case:
    name: str  # tests/programs/gemm_forms2/NAME.co, function `gemm`
    sizes: tuple[int, ...]  # M, N, K (and BS)
    args: Callable[..., Args]  # sizes -> every argument (the output among them)
    ref: Callable[..., torch.Tensor]  # (the arguments as float64 on the CPU, before the call) -> the output
    out: int = -1  # which argument is the output
    tol: float = 1e-3  # of max |ref| (0: exact)
    gemm: bool = True  # auto proves it a contraction (else a near miss: it must not)
    why: str = ""  # xfail(strict) reason of the contraction check: auto does not recognise it yet
    wide: bool = True  # output extents the sm_90a check's sizes set (else a fixed narrow tile: not checked)


def _r(*shape: int, dtype: torch.dtype = F16, seed: int) -> torch.Tensor:
    return randn(*shape, seed=seed).to(dtype)


def _ints(*shape: int, seed: int, dtype: torch.dtype) -> torch.Tensor:
    """Small integers (exact in bf16, so are their products and the f32 sums of a few hundred)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-8, 8, shape, generator=g).to(dtype).to(DEVICE)


def _silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)


def _tiles(k: int, width: int, keep: Callable[[int], bool]) -> torch.Tensor:
    """A 0/1 mask over K: the K tiles of ``width`` whose index ``keep`` accepts."""
    return torch.tensor([1.0 if keep(i // width) else 0.0 for i in range(k)], dtype=D)


RAGGED = (197, 301, 91)
PIPE = (197, 296, 200)

CASES: list[Case] = [
    Case("at_thread_km", (70, 42, 19), lambda m, n, k: [_r(k, m, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a.T @ b.T),
    Case("both_t_staged", (70, 45, 37), lambda m, n, k: [_r(k, m, seed=1), _r(k, n, seed=2), poisoned(m, n)],
         lambda a, b, o: a.T @ b),
    Case("colcol_tma_f16", PIPE, lambda m, n, k: [_r(k, m, seed=1), _r(k, n, seed=2), poisoned(m, n, dtype=F16)],
         lambda a, b, o: a.T @ b, tol=1e-2),
    Case("k_while_view", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("k_step_elems", (197, 301, 300), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("fill_start", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: 0.5 + a @ b.T),
    Case("c_inplace", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(m, n, seed=3)],
         lambda a, b, c: c + a @ b.T),
    Case("alpha_beta_after_store", (70, 75, 45),
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(m, n, seed=3), 1.5, -0.5, poisoned(m, n)],
         lambda a, b, c, al, be, o: al * (a @ b.T) + be * c),
    Case("silu_bias_thread", (40, 45, 19),
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(n, seed=3), poisoned(m, n, dtype=F16)],
         lambda a, b, bias, o: _silu(a @ b.T + bias), tol=1e-2),
    Case("int8_thread_s32", (70, 45, 37),
         lambda m, n, k: [randn(m, k, dtype=S8, seed=1), randn(k, n, dtype=S8, seed=2), poisoned(m, n, dtype=S32)],
         lambda a, b, o: a @ b, tol=0),
    # bf16: integer inputs, every product and f32 sum exact; the output is rounded to bf16 (8 bits)
    Case("bf16_wgmma", PIPE,
         lambda m, n, k: [_ints(m, k, seed=1, dtype=BF16), _ints(k, n, seed=2, dtype=BF16), poisoned(m, n, dtype=BF16)],
         lambda a, b, o: a @ b, tol=1e-2),
    Case("skinny_n16", (197, 9, 200), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("rows_loop_n", (197, 150, 91), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("batched_foreach", (97, 70, 45, 3),
         lambda m, n, k, bs: [_r(bs, m, k, seed=1), _r(bs, n, k, seed=2), poisoned(bs, m, n)],
         lambda a, b, o: a @ b.transpose(1, 2)),
    Case("batched_thread_first", (37, 20, 13, 3),
         lambda m, n, k, bs: [_r(bs, m, k, seed=1), _r(bs, k, n, seed=2), poisoned(bs, m, n)],
         lambda a, b, o: a @ b),
    Case("pipe_s4_async_mma", PIPE, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("pipe_2c_s3_kpieces", PIPE, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("reverse_k", (40, 45, 19), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("gemv_n8", (300, 8, 37), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T, wide=False),
    Case("c_plus_thread", (40, 45, 19), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(m, n, seed=3)],
         lambda a, b, c: c + a @ b.T),
    Case("bf16_thread_cast", (40, 45, 19),
         lambda m, n, k: [_ints(m, k, seed=1, dtype=BF16), _ints(k, n, seed=2, dtype=BF16), poisoned(m, n)],
         lambda a, b, o: a @ b, tol=0),
    # 4 x 5 = 20 output tiles on 3 persistent blocks
    Case("persistent_while", (197, 301, 91),
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n), 3], lambda a, b, o, s: a @ b.T, out=2),
    Case("peeled_first", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("transp_copy_b", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(k, n, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b),
    Case("local_tile_dma_out", (70, 42, 19), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("slots_prefetch", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("dma_async_swap", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    # near misses: not a GEMM over K, computed as written
    Case("near_reset_inside", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: (a * _tiles(a.shape[1], 32, lambda t: t == (a.shape[1] - 1) // 32)) @ b.T, gemm=False),
    Case("near_while_skip", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: (a * _tiles(a.shape[1], 32, lambda t: t % 2 == 0)) @ b.T, gemm=False),
]  # fmt: skip


def test_every_program_has_a_case() -> None:
    assert sorted(p.stem for p in FORMS.glob("*.co")) == sorted(c.name for c in CASES)
    for p in FORMS.glob("*.co"):
        assert p.read_text().startswith("// "), p.name


def _source(case: Case, schedule: str) -> str:
    path = FORMS / f"{case.name}.co"
    return translate_full(path.read_text(), filename=path.name, schedule=schedule).source


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=c.why)] if c.why else []) for c in CASES],
)
def test_auto_proves_the_gemm(case: Case) -> None:
    assert (MARK in flat(_source(case, "auto"))) == case.gemm


@pytest.mark.filterwarnings("ignore:croq2triton.*not 16-byte aligned:RuntimeWarning")
@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_it_computes_its_function(case: Case, schedule: str) -> None:
    mod = load(FORMS / f"{case.name}.co", schedule=schedule)
    args = case.args(*case.sizes)
    before = [x.double().cpu() if isinstance(x, torch.Tensor) else x for x in args]
    mod.gemm(*args)
    out = args[case.out]
    assert isinstance(out, torch.Tensor)
    ref = case.ref(*before)
    got = out.double().cpu()
    assert got.shape == ref.shape
    if case.tol == 0:
        assert torch.equal(got, ref), "an integer GEMM is exact (poison left or a wrong sum)"
        return
    assert not torch.isnan(got).any(), f"{int(torch.isnan(got).sum())} output elements never written"
    scale = float(ref.abs().max())
    err = float((got - ref).abs().max())
    assert err <= case.tol * scale, f"max |out - ref| = {err:.3g} > {case.tol} * max|ref| = {case.tol * scale:.3g}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=c.why)] if c.why else [])
        for c in CASES
        if c.gemm and c.wide
    ],
)
def test_auto_schedule_compiles_to_a_large_wgmma_tile(case: Case) -> None:
    res = _compile_auto(Compiled(case.name), FORMS)
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

_TILE = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared f16 [64, 32] sa;
    shared f16 [64, 32] sb;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach {kt} in [cdiv(K, 32)] {
        dma.copy a.subspan(64, 32).at(bm, kt) => sa;
        dma.copy b.subspan(64, 32).at(bn, kt) => sb;
        GUARD mma.row.row acc, sa, sb;
      }
      mma.store acc, out.subspan(64, 64).at(bm, bn);
    }
    parallel {i, j} by [2, 64] : thread {
      foreach {r} in [ROWS] {
        m = bm * 64 + r * 2 + i;
        n = bn # j;
        if (m < M && n < N COND)
          out.at(m, n) = 2.0f * out.at(m, n);
      }
    }
  }
}
"""


def _prog(rows: str = "32", cond: str = "", guard: str = "") -> str:
    return _TILE.replace("ROWS", rows).replace("COND", cond).replace("GUARD", guard)


def _where_rows(p: torch.Tensor, keep: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    m, n = p.shape
    r, c = torch.arange(m)[:, None].expand(m, n), torch.arange(n)[None, :].expand(m, n)
    return torch.where(keep(r, c), 2 * p, p)


def _ktiles(a: torch.Tensor, b: torch.Tensor, keep: Callable[[int], bool]) -> torch.Tensor:
    return (a * _tiles(a.shape[1], 32, keep)) @ b.T


_SWAP = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block, by 1 : group-4 {
    acc = mma.fill.f32 0.0f;
    ca = dma.copy.async a.subspan(64, 32).at(bm, 0) => shared;
    cb = dma.copy.async b.subspan(64, 32).at(bn, 0) => shared;
    na = dma.any;
    nb = dma.any;
    foreach k in [cdiv(K, 32)] {
      na = dma.copy.async a.subspan(64, 32).at(bm, k + 2) => shared;
      nb = dma.copy.async b.subspan(64, 32).at(bn, k + 2) => shared;
      wait ca, cb;
      mma.row.row acc, ca.data, cb.data;
      swap(ca, na);
      swap(cb, nb);
    }
    wait ca, cb;
    mma.store acc, out.subspan(64, 64).at(bm, bn);
  }
}
"""

_SLOTS = (FORMS / "slots_prefetch.co").read_text().replace("at(bm, k + 1)", "at(bm, k + 2)")


_TWICE = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block, {tm, tn} by [16, 16] : thread {
    f32 s = 0.0f;
    foreach k in [K]
      s += a.at(bm # tm, k) * b.at(bn # tn, k);
    if (bm # tm < M && bn # tn < N) {
      STORE
      foreach t in [2]
        out.at(bm # tm, bn # tn) UPDATE;
    }
  }
}
"""


def _slots_skip(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Step k multiplies A's tile k + 1 (tile 0 at step 0) by B's tile k: A's and B's tiles 0, then
    A's tile k + 1 with B's tile k."""
    k = a.shape[1]
    t = -(-k // 32)
    ap = torch.nn.functional.pad(a, (0, 32 * (t + 2) - k))
    bp = torch.nn.functional.pad(b, (0, 32 * (t + 2) - k))
    out = ap[:, :32] @ bp[:, :32].T
    for s in range(1, t):
        out += ap[:, 32 * (s + 1) : 32 * (s + 2)] @ bp[:, 32 * s : 32 * (s + 1)].T
    return out


NEAR: list[tuple[str, str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]]] = [
    # the element loop rewrites half of each stored tile's rows: the other half keeps the sum
    ("half_rows", _prog(rows="16"), lambda a, b, p: _where_rows(p, lambda r, c: r % 64 < 32)),
    # ... or the columns its condition keeps
    ("some_columns", _prog(cond="&& j < 32"), lambda a, b, p: _where_rows(p, lambda r, c: c % 64 < 32)),
    # a condition on the K tile that is not its range: only the tiles with kt * 64 < K are summed
    ("k_condition", _prog(rows="32", guard="if (kt * 64 < K)").replace("2.0f * out", "out"),
     lambda a, b, p: _ktiles(a, b, lambda t: t * 64 < a.shape[1])),
    # a prefetch two tiles ahead: the steps read tiles 0, 2, 3, ... (tile 1 never)
    ("prefetch_skips", _SWAP, lambda a, b, p: _ktiles(a, b, lambda t: t != 1)),
    # ... and through the other slot of two (A's tiles only: B's are the step's own)
    ("slots_skip", _SLOTS, lambda a, b, p: _slots_skip(a, b)),
    # the first K tile peeled off a loop that starts at 2: tile 1 is never summed
    ("peeled_skips", (FORMS / "peeled_first.co").read_text().replace("foreach k(1:)", "foreach k(2:)"),
     lambda a, b, p: _ktiles(a, b, lambda t: t != 1)),
    # A's K walked backwards, B's forwards: not a product over one K index
    # an element loop that rewrites each stored element twice (reading what the pass before wrote)
    ("twice_after_store", _TWICE.replace("STORE", "out.at(bm # tm, bn # tn) = s;").replace("UPDATE", "= 2.0f * out.at(bm # tm, bn # tn)"),
     lambda a, b, p: 4 * p),
    # ... and C += A B^T twice into the output as it was (its start: 1.0 everywhere)
    ("twice_into_c", _TWICE.replace("STORE", "").replace("UPDATE", "+= s"), lambda a, b, p: 1.0 + 2 * p),
    ("reverse_a_only", (FORMS / "reverse_k.co").read_text().replace("b.at(bn # tn, K - 1 - k)", "b.at(bn # tn, k)"),
     lambda a, b, p: a.flip(1) @ b.T),
]  # fmt: skip


# the forms of a thread an element run their K loop an element a step (in the interpreter, a step
# each): a shorter K takes the same paths (25 programs, ragged M and N); the tile forms above need
# K tiles of 32 and 64 (a ragged last one)
_NEAR_K = {"twice_after_store": 37, "twice_into_c": 37, "reverse_a_only": 37}


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("name", "text", "ref"), NEAR, ids=[x[0] for x in NEAR])
def test_a_near_miss_is_computed_as_written(
    name: str,
    text: str,
    ref: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
    schedule: str,
    tmp_path: Path,
) -> None:
    src = translate_full(text, filename=f"{name}.co", schedule=schedule).source
    if schedule == "auto":
        assert MARK not in flat(src)
    path = tmp_path / f"{name}.co"
    path.write_text(text)
    mod = load(path, schedule=schedule)
    m, n, k = 70, 75, _NEAR_K.get(name, 100)
    a, b, out = _r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)
    if name == "twice_into_c":  # (reads the output as it was)
        out.fill_(1.0)
    mod.gemm(a, b, out)
    a64, b64 = a.double().cpu(), b.double().cpu()
    want = ref(a64, b64, a64 @ b64.T)
    got = out.double().cpu()
    assert not torch.isnan(got).any()
    assert float((got - want).abs().max()) <= 1e-3 * float(want.abs().max())
