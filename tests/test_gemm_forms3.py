"""Issues 25/28: GEMMs in still other forms (tests/programs/gemm_forms3/*.co, written for this test).

tests/test_gemm_forms.py and tests/test_gemm_forms2.py hold ~75 forms; these are others a Croqtile user
plausibly writes: the K loop split into two loops over halves of K (tiles or elements), the accumulator
kept in shared memory (a thread's element of a ``shared f32`` tile, or an MMA fragment loaded from and
stored back to one each step), a two-slot ring refilled two tiles ahead, weight-only quantised GEMMs
(W8A16: ``s8`` weights dequantised with a per-column or per-K-group ``f16`` scale before the product),
A scaled per row inside the sum, the product scaled per row and column after it, a user-written
split-K adding partial tiles into C with ``__atomic_add``, a grouped (mixture-of-experts) GEMM over
prefix offsets at thread level, an output tile transposed through shared memory, a batch reached
through ``view(M, K).from(bi * M, 0)`` of a flat tensor, a run-time K tile with ``#ifndef`` M / N
tiles, and an ``f16`` accumulator at thread level. Each case:

* computes its function in both schedules in Triton's interpreter: random inputs on ragged sizes,
  outputs poisoned with NaN, against a float64 reference;
* under ``--schedule auto`` is proved a contraction (lift/contraction.py), or, for a near miss (not a
  GEMM over K), is not and still computes what it says;
* (slow) under auto compiles for sm_90a to ``wgmma`` with a block tile of at least 128 x 128 (the
  compile script and sizes of tests/test_gemm_forms.py, and the case's own sizes).

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
from kernel_util import DEVICE, flat, poisoned, randn
from test_gemm_forms import _COMPILE_SCRIPT, SIZES

from croq2triton.api import load, translate_full

FORMS = Path(__file__).resolve().parent / "programs" / "gemm_forms3"
MARK = "a contraction: croq2triton/lift/contraction.py proves it"
F16, F32, S8, S32 = torch.float16, torch.float32, torch.int8, torch.int32
D = torch.float64

Args = list[object]


@dataclass(frozen=True)
class Case:
    name: str  # tests/programs/gemm_forms3/NAME.co, function `gemm`
    sizes: tuple[int, ...]  # M, N, K (and a fourth size)
    args: Callable[..., Args]  # sizes -> every argument (the output among them)
    ref: Callable[..., torch.Tensor]  # (the arguments as float64 on the CPU, before the call) -> the output
    out: int = -1  # which argument is the output
    tol: float = 1e-3  # of max |ref|
    gemm: bool = True  # auto proves it a contraction (else a near miss: it must not)
    why: str = ""  # xfail(strict) reason of the contraction check: auto does not recognise it yet
    wide: bool = True  # checked on sm_90a (a GEMM whose output extents the check's sizes set)
    compile_sizes: tuple[tuple[str, int], ...] = ()  # the sm_90a check's sizes besides M, N, K, BS (4096^3)


def _r(*shape: int, dtype: torch.dtype = F16, seed: int) -> torch.Tensor:
    return randn(*shape, seed=seed).to(dtype)


def _small(*shape: int, seed: int) -> torch.Tensor:
    """Quantisation scales: f16 in [0.005, 0.025)."""
    g = torch.Generator().manual_seed(seed)
    return (0.005 + 0.02 * torch.rand(*shape, generator=g)).to(F16).to(DEVICE)


def _ktiles(k: int, width: int, count: Callable[[int], int]) -> torch.Tensor:
    """How many times each element of K is summed: ``count`` of its tile of ``width``."""
    return torch.tensor([float(count(i // width)) for i in range(k)], dtype=D)


def _groups(scale: torch.Tensor, k: int) -> torch.Tensor:
    return scale.repeat_interleave(32, dim=1)[:, :k]


def _moe(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor, out: torch.Tensor, shift: bool = True) -> torch.Tensor:
    res = out.clone()
    for e in range(w.shape[0]):
        lo, hi = int(offs[e]), int(offs[e + 1])
        rows = x[lo:hi] if shift else x[: hi - lo]
        res[lo:hi] = rows @ w[e].T
    return res


OFFS = [0, 61, 61, 140, 200]  # expert 1 owns no rows
RAGGED = (197, 301, 91)

CASES: list[Case] = [
    # the leftovers of issues 25/28
    Case("k_two_halves", (197, 301, 200), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("k_halves_thread", (70, 42, 37), lambda m, n, k: [_r(m, k, seed=1), _r(k, n, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b),
    Case("shared_acc_fma", (70, 42, 37), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("shared_acc_mma", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    Case("ring2_prefetch2", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b.T),
    # new forms
    Case("w8a16_col_scale", (70, 42, 37),
         lambda m, n, k: [_r(m, k, seed=1), randn(n, k, dtype=S8, seed=2), _small(n, seed=3), poisoned(m, n)],
         lambda a, bq, s, o: a @ (bq * s[:, None]).T, tol=1e-2),
    Case("w8a16_group_scale", (70, 42, 77),
         lambda m, n, k: [_r(m, k, seed=1), randn(n, k, dtype=S8, seed=2), _small(n, -(-k // 32), seed=3),
                          poisoned(m, n)],
         lambda a, bq, s, o: a @ (bq * _groups(s, a.shape[1])).T, tol=1e-2,
         why="proved a block-scaled contraction (a scale per K group), which the auto policy runs as written"),
    Case("a_row_scaled", (70, 75, 45),
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(m, seed=3), poisoned(m, n)],
         lambda a, b, rs, o: (a * rs[:, None]) @ b.T),
    Case("rowcol_scaled_after", RAGGED,
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(m, seed=3), randn(n, seed=4),
                          poisoned(m, n, dtype=F16)],
         lambda a, b, rs, cs, o: rs[:, None] * cs[None, :] * (a @ b.T), tol=1e-2),
    Case("splitk_atomic", (70, 45, 150),
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(m, n, seed=3), 3],
         lambda a, b, c, s: c + a @ b.T, out=2),
    Case("moe_thread", (200, 45, 37, 4),
         lambda t, n, k, e: [_r(t, k, seed=1), _r(e, n, k, seed=2), torch.tensor(OFFS, dtype=S32, device=DEVICE),
                             poisoned(t, n)],
         lambda x, w, offs, o: _moe(x, w, offs, o), compile_sizes=(("T", 4096), ("E", 8), ("E1", 9))),
    Case("out_transposed_shared", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(n, m)],
         lambda a, b, o: (a @ b.T).T),
    Case("batched_view_from", (97, 70, 45, 3),
         lambda m, n, k, bs: [_r(bs * m, k, seed=1), _r(bs, n, k, seed=2), poisoned(bs * m, n), m],
         lambda a, b, o, m: (a.view(b.shape[0], m, -1) @ b.transpose(1, 2)).reshape(-1, b.shape[1]), out=2),
    Case("ktile_param", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n), 24],
         lambda a, b, o, kb: a @ b.T, out=2),
    Case("f16acc_thread", (70, 42, 37), lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n, dtype=F16)],
         lambda a, b, o: a @ b.T, tol=2e-2),
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


def _check(got: torch.Tensor, ref: torch.Tensor, tol: float) -> None:
    got = got.double().cpu()
    assert got.shape == ref.shape
    assert not torch.isnan(got).any(), f"{int(torch.isnan(got).sum())} output elements never written"
    scale = float(ref.abs().max())
    err = float((got - ref).abs().max())
    assert err <= tol * scale, f"max |out - ref| = {err:.3g} > {tol} * max|ref| = {tol * scale:.3g}"


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
    _check(out, case.ref(*before), case.tol)


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
    sizes = {**SIZES, **dict(case.compile_sizes)}
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

_HALVES = (FORMS / "k_two_halves.co").read_text()
_RING = (FORMS / "ring2_prefetch2.co").read_text()
_ELEMS = (FORMS / "k_halves_thread.co").read_text()


def _tiles_summed(a: torch.Tensor, b: torch.Tensor, count: Callable[[int, int], int]) -> torch.Tensor:
    """``a @ b^T`` with K tile ``i`` of 32 (of ``t``) summed ``count(i, t)`` times."""
    k = a.shape[1]
    t = -(-k // 32)
    return (a * _ktiles(k, 32, lambda i: count(i, t))) @ b.T


def _ring_refilled_first(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _tiles_summed(a, b, lambda i, t: int(i >= 2))


_OWN = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    shared f32 [32, 32] cs;
    parallel {i, j} by [32, 32] : thread {
      cs.at(i, j) = 0.0f;
      foreach k in [K]
        if (bm # i < M && bn # j < N)
          cs.at(i, j) += a.at(bm # i, k) * b.at(bn # j, k);
      sync.shared;
      if (bm # i < M && bn # j < N)
        out.at(bm # i, bn # j) = cs.at(j, i);
    }
  }
}
"""


def _tile_transposed(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Each 32 x 32 tile of ``a @ b^T`` (zero past M and N) transposed in place, cut to M x N."""
    m, n = a.shape[0], b.shape[0]
    tm, tn = -(-m // 32), -(-n // 32)
    ap = torch.nn.functional.pad(a, (0, 0, 0, 32 * tm - m))
    bp = torch.nn.functional.pad(b, (0, 0, 0, 32 * tn - n))
    c = (ap @ bp.T).reshape(tm, 32, tn, 32).transpose(1, 3).reshape(32 * tm, 32 * tn)
    return c[:m, :n]


NEAR: list[tuple[str, str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]] = [
    # the second half starts one tile early: tile h - 1 is summed twice
    ("halves_overlap", _HALVES.replace("h + kt", "h - 1 + kt").replace("[t - h]", "[t - h + 1]"),
     lambda a, b: _tiles_summed(a, b, lambda i, t: 2 if i == t // 2 - 1 else 1)),
    # ... or one tile late: tile h is never summed
    ("halves_gap", _HALVES.replace("h + kt", "h + 1 + kt").replace("[t - h]", "[t - h - 1]"),
     lambda a, b: _tiles_summed(a, b, lambda i, t: int(i != t // 2))),
    # the second element loop restarts at 0 for A only: not one index of K in both operands
    ("halves_a_restarts", _ELEMS.replace("a.at(bm # tm, K / 2 + k)", "a.at(bm # tm, k)"),
     lambda a, b: a[:, : a.shape[1] // 2] @ b[: a.shape[1] // 2] + a[:, : -(-a.shape[1] // 2)] @ b[a.shape[1] // 2 :]),
    # the ring's slot refilled before it is read: the steps read tiles 2, 3, ... (0 and 1 never)
    ("ring_refilled_first", _RING.replace(
        "        mma.row.row acc, sa[k % 2], sb[k % 2];\n", "").replace(
        "=> sb[k % 2];\n", "=> sb[k % 2];\n        mma.row.row acc, sa[k % 2], sb[k % 2];\n"), _ring_refilled_first),
    # ... or refilled into the other slot: tile 1 is overwritten before it is read
    ("ring_wrong_slot", _RING.replace("=> sa[k % 2]", "=> sa[(k + 1) % 2]").replace("=> sb[k % 2]", "=> sb[(k + 1) % 2]"),
     lambda a, b: _tiles_summed(a, b, lambda i, t: int(i != 1))),
    # each thread reads another's element of the shared tile (after a barrier): each tile transposed
    ("shared_other_element", _OWN, _tile_transposed),
    # the accumulator loaded from shared memory each step but never stored back: the tile stays zero
    ("shared_not_stored_back", (FORMS / "shared_acc_mma.co").read_text().replace("        mma.store acc, cs;\n", ""),
     lambda a, b: torch.zeros(a.shape[0], b.shape[0], dtype=D)),
    # the fill's own name stored after the loop: the fragment it names was never added to (zeros)
    ("shared_fill_stored", (FORMS / "shared_acc_mma.co").read_text().replace(
        "      }\n    }\n    dma.copy cs => out.subspan(64, 64).at(bm, bn);\n",
        "      }\n      mma.store z, out.subspan(64, 64).at(bm, bn);\n    }\n"),
     lambda a, b: torch.zeros(a.shape[0], b.shape[0], dtype=D)),
]  # fmt: skip


# the forms of a thread an element run their K loop an element a step (in the interpreter, a step
# each): a shorter K takes the same paths (several programs, ragged M and N, both halves; odd: the two
# halves differ in length); the tile forms above need 7 K tiles of 32
_NEAR_K = {"halves_a_restarts": 33, "shared_other_element": 37}


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("name", "text", "ref"), NEAR, ids=[x[0] for x in NEAR])
def test_a_near_miss_is_computed_as_written(
    name: str, text: str, ref: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], schedule: str, tmp_path: Path
) -> None:
    assert text not in (_HALVES, _RING, _ELEMS, _OWN.replace("cs.at(j, i)", "cs.at(i, j)"))
    src = translate_full(text, filename=f"{name}.co", schedule=schedule).source
    if schedule == "auto":
        assert MARK not in flat(src)
    path = tmp_path / f"{name}.co"
    path.write_text(text)
    mod = load(path, schedule=schedule)
    m, n, k = 70, 75, _NEAR_K.get(name, 200)  # 7 K tiles of 32 (h = 3)
    a = _r(m, k, seed=1)
    b = _r(k, n, seed=2) if "restarts" in name else _r(n, k, seed=2)
    out = poisoned(m, n)
    mod.gemm(a, b, out)
    _check(out, ref(a.double().cpu(), b.double().cpu()), 1e-3)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_factor_that_varies_along_k_is_not_an_epilogue(schedule: str, tmp_path: Path) -> None:
    """A third factor read at an index that moves with K (``rs.at(k % 4)``) is not the same for every
    product: it cannot leave the sum; the kernel is lowered as written and computes what it says."""
    text = (FORMS / "a_row_scaled.co").read_text().replace("rs.at(bm # tm # i)", "rs.at(k % 4)")
    assert "rs.at(k % 4)" in text
    src = translate_full(text, filename="near.co", schedule=schedule).source
    if schedule == "auto":
        assert MARK not in flat(src)
    path = tmp_path / "near.co"
    path.write_text(text)
    mod = load(path, schedule=schedule)
    m, n, k = 70, 75, 9  # (k % 4 takes each value, some twice; 4 programs of 64 x 64, ragged)
    a, b, rs, out = _r(m, k, seed=1), _r(n, k, seed=2), randn(m, seed=3), poisoned(m, n)
    mod.gemm(a, b, rs, out)
    a64, b64, rs64 = a.double().cpu(), b.double().cpu(), rs.double().cpu()
    _check(out, (a64 * rs64[torch.arange(k) % 4]) @ b64.T, 1e-3)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_experts_reading_the_first_rows_are_not_grouped(schedule: str, tmp_path: Path) -> None:
    """The grouped form with A's rows not moved to the expert's (``x.at(bm # tm, k)``): each expert
    multiplies the first rows of x; not a grouped contraction, lowered as written."""
    text = (FORMS / "moe_thread.co").read_text().replace("x.at(r, k)", "x.at(bm # tm, k)")
    assert "x.at(bm # tm, k)" in text
    src = translate_full(text, filename="near.co", schedule=schedule).source
    if schedule == "auto":
        assert MARK not in flat(src)
    path = tmp_path / "near.co"
    path.write_text(text)
    mod = load(path, schedule=schedule)
    # (fewer rows than OFFS's: the grid is E x cdiv(T, 16) x cdiv(N, 16) programs, a K step each an
    # element; still two row tiles for two experts, a ragged tile, an expert with no rows)
    t, n, k, e = 50, 45, 13, 4
    x, w, out = _r(t, k, seed=1), _r(e, n, k, seed=2), poisoned(t, n)
    offs = torch.tensor([0, 21, 21, 38, 50], dtype=S32, device=DEVICE)
    mod.gemm(x, w, offs, out)
    _check(out, _moe(x.double().cpu(), w.double().cpu(), offs.cpu(), out.double().cpu(), shift=False), 1e-3)


_SPLIT = (FORMS / "splitk_atomic.co").read_text()


def _split_parts(a: torch.Tensor, b: torch.Tensor, splits: int, extra: int) -> list[torch.Tensor]:
    """The partial sums of the split-K form whose blocks each sum ``per + extra`` K tiles of 16 from
    ``ks * per`` (``extra`` tiles past their own range)."""
    k = a.shape[1]
    tiles = -(-k // 16)
    per = -(-tiles // splits)
    parts = []
    for ks in range(splits):
        lo, hi = ks * per * 16, min(k, (ks * per + per + extra) * 16)
        parts.append(a[:, lo:hi] @ b[:, lo:hi].T)
    return parts


SPLIT_NEAR: list[tuple[str, str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]]] = [
    # each block sums one K tile of the next block's range too: those tiles are added twice
    ("split_overlap", _SPLIT.replace("[per, 16]", "[per + 1, 16]"),
     lambda a, b, c, s: c + sum(_split_parts(a, b, s, 1))),
    # the partial sums squared before they are added: not the square of the sum
    ("split_squared", _SPLIT.replace("__atomic_add(c.at(bm # tm, bn # tn), s)", "__atomic_add(c.at(bm # tm, bn # tn), s * s)"),
     lambda a, b, c, s: c + sum(x * x for x in _split_parts(a, b, s, 0))),
    # every block sums all of K: the sum is added once per block
    ("split_every_block", _SPLIT.replace("k = (ks * per + kt) * 16 + ki;", "k = kt * 16 + ki;").replace(
        "int per = cdiv(cdiv(K, 16), S);", "int per = cdiv(K, 16);"),
     lambda a, b, c, s: c + s * (a @ b.T)),
]  # fmt: skip


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("name", "text", "ref"), SPLIT_NEAR, ids=[x[0] for x in SPLIT_NEAR])
def test_a_split_k_near_miss_is_computed_as_written(
    name: str,
    text: str,
    ref: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
    schedule: str,
    tmp_path: Path,
) -> None:
    assert text != _SPLIT
    src = translate_full(text, filename=f"{name}.co", schedule=schedule).source
    if schedule == "auto":
        assert MARK not in flat(src)
    path = tmp_path / f"{name}.co"
    path.write_text(text)
    mod = load(path, schedule=schedule)
    m, n, k, splits = 40, 45, 70, 3  # 5 K tiles of 16 (the last ragged) in 3 ranges of 2 (the last short)
    a, b, c = _r(m, k, seed=1), _r(n, k, seed=2), randn(m, n, seed=3)
    before = c.double().cpu()
    mod.gemm(a, b, c, splits)
    _check(c, ref(a.double().cpu(), b.double().cpu(), before, splits), 1e-3)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_batch_view_one_row_off_is_not_grouped(schedule: str, tmp_path: Path) -> None:
    """A's batch view one row further on than the output's (``from(bi * M + 1, 0)``): batch ``bi``'s
    row ``m`` multiplies A's row ``bi * M + m + 1`` (zero past the tensor's end); not one group's
    rows in both: lowered as written."""
    text = (
        (FORMS / "batched_view_from.co")
        .read_text()
        .replace("a.view(M, K).from(bi * M, 0)", "a.view(M, K).from(bi * M + 1, 0)")
    )
    assert "bi * M + 1" in text
    src = translate_full(text, filename="near.co", schedule=schedule).source
    if schedule == "auto":
        assert MARK not in flat(src)
    path = tmp_path / "near.co"
    path.write_text(text)
    mod = load(path, schedule=schedule)
    m, n, k, bs = 97, 70, 45, 3
    a, b, out = _r(bs * m, k, seed=1), _r(bs, n, k, seed=2), poisoned(bs * m, n)
    mod.gemm(a, b, out, m)
    a64 = torch.nn.functional.pad(a.double().cpu(), (0, 0, 0, 1))[1:]
    _check(out, (a64.view(bs, m, k) @ b.double().cpu().transpose(1, 2)).reshape(bs * m, n), 1e-3)
