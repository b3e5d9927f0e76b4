"""Memory-bound kernels in other natural forms (tests/programs/membound_forms.co, issue 27): a block
or a warp per row with threads striding along it and partial sums through shared memory or shuffles,
column sums walking every row, atomic row sums, element-wise chains, rows staged through shared
memory.  Each function runs under both schedules in the interpreter against float64 torch on random
data, outputs poisoned with NaN (zeroed where the kernel adds into them), on ragged sizes: rows
shorter and longer than one tile of the threads, rows past the whole-row-in-registers limit (the
blocked kernels), columns fewer and more than one program's.  What ``--schedule auto`` makes of
each form is checked on the generated code."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernel_util import (
    DEVICE,
    assert_near_max,
    canonical,
    form_sizes,
    functions_of,
    poisoned,
    randn,
    recording_launch,
)

from croq2triton.api import load, load_source, translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms.co"
H = torch.float16


def _rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    x = x.double()
    return x * torch.rsqrt((x**2).mean(1, keepdim=True) + 1e-6) * w.double()


def _gelu(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x.double(), approximate="tanh")


# function -> (inputs of (m, n), outputs of (m, n) (None: zeros the kernel adds into), reference, tolerance
# relative to the reference's largest element)
Case = tuple[
    Callable[[int, int], list[torch.Tensor]],
    Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype, bool]]],
    Callable[..., list[torch.Tensor]],
    float,
]


def _x(dtype: torch.dtype = torch.float32) -> Callable[[int, int], list[torch.Tensor]]:
    return lambda m, n: [randn(m, n, dtype=dtype, seed=m * 7 + n)]


def _xw(dtype: torch.dtype) -> Callable[[int, int], list[torch.Tensor]]:
    return lambda m, n: [randn(m, n, dtype=dtype, seed=m + n), randn(n, dtype=dtype, seed=n)]


def _ab(dtype: torch.dtype) -> Callable[[int, int], list[torch.Tensor]]:
    return lambda m, n: [randn(m * n, dtype=dtype, seed=m), randn(m * n, dtype=dtype, seed=n + 1)]


def _out(*shape: str, dtype: torch.dtype = torch.float32, zero: bool = False) -> Callable[[int, int], list]:
    def make(m: int, n: int) -> list[tuple[tuple[int, ...], torch.dtype, bool]]:
        sizes = {"m": m, "n": n, "mn": m * n}
        return [(tuple(sizes[d] for d in shape), dtype, zero)]

    return make


CASES: dict[str, Case] = {
    "row_sums_block": (_x(), _out("m"), lambda x: [x.double().sum(1)], 1e-5),
    "softmax_block": (_x(H), _out("m", "n", dtype=H), lambda x: [torch.softmax(x.double(), 1)], 2e-3),
    "rmsnorm_rows4": (_xw(torch.float32), _out("m", "n"), lambda x, w: [_rms(x, w)], 1e-5),
    "col_sums_walk": (_x(), _out("n"), lambda x: [x.double().sum(0)], 1e-5),
    "col_means_f16": (_x(H), _out("n", dtype=H), lambda x: [x.double().mean(0)], 2e-3),
    "row_sums_atomic": (_x(), _out("m", zero=True), lambda x: [x.double().sum(1)], 1e-5),
    "row_sums_atomic_f16": (_x(H), _out("m", zero=True), lambda x: [x.double().sum(1)], 1e-5),
    "silu_mul_f16": (_ab(H), _out("mn", dtype=H), lambda a, b: [F.silu(a.double()) * b.double()], 2e-3),
    "silu_mul_f32": (_ab(torch.float32), _out("mn"), lambda a, b: [F.silu(a.double()) * b.double()], 1e-6),
    "gelu_2d": (_x(), _out("m", "n"), lambda x: [_gelu(x)], 1e-6),
    "gelu_2d_f16": (_x(H), _out("m", "n", dtype=H), lambda x: [_gelu(x)], 2e-3),
    "row_sums_staged": (_x(), _out("m"), lambda x: [x.double().sum(1)], 1e-5),
    "row_meansq_staged_f16": (_x(H), _out("m"), lambda x: [(x.double() ** 2).mean(1)], 1e-5),
    "row_sums_warp": (_x(), _out("m"), lambda x: [x.double().sum(1)], 1e-5),
    "rmsnorm_warp_f16": (_xw(H), _out("m", "n", dtype=H), lambda x, w: [_rms(x, w)], 2e-3),
    "row_sums_tree": (_x(), _out("m"), lambda x: [x.double().sum(1)], 1e-5),
    "row_meansq_tree_f16": (_x(H), _out("m"), lambda x: [(x.double() ** 2).mean(1)], 1e-5),
    "rmsnorm_tree_f16": (_xw(H), _out("m", "n", dtype=H), lambda x, w: [_rms(x, w)], 2e-3),
}
# sizes: rows shorter than one tile of the threads and longer than several; columns fewer than one
# program's and more; all ragged
SIZES = [(5, 77), (11, 530)]
# a block per row under the source schedule folds its partials one reduction of the whole tile per
# element (256 of them a row): a few rows are enough there (the interpreter takes 0.7 s a row of 530)
SLOW_AS_WRITTEN = {"row_sums_block": 2, "softmax_block": 2}


_MODULES: dict[str, object] = {}


def _module(schedule: str) -> object:
    """The program translated under ``schedule`` (once per test process)."""
    if schedule not in _MODULES:
        _MODULES[schedule] = load(PROGRAM, schedule=schedule)
    return _MODULES[schedule]


def _check(mod: object, fn: str, m: int, n: int) -> list[str]:
    """Runs ``fn`` of ``mod`` at ``m`` x ``n`` against float64 torch; the kernels it launched."""
    make, outs, ref, tol = CASES[fn]
    ins = make(m, n)
    got = [torch.zeros(s, dtype=d, device=DEVICE) if zero else poisoned(*s, dtype=d) for s, d, zero in outs(m, n)]
    ran, launch = recording_launch()

    getattr(mod, fn)(*ins, *got, _launch=launch)
    for g, r in zip(got, ref(*ins), strict=True):
        assert_near_max(g, r, tol, f"{fn} at {m} x {n}")
    return ran


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    mod = _module(schedule)
    for fn in CASES:
        rows = min(m, SLOW_AS_WRITTEN[fn]) if schedule == "source" and fn in SLOW_AS_WRITTEN else m
        _check(mod, fn, rows, n)


ROW_KERNELS = ("row_sums_block", "softmax_block", "rmsnorm_rows4", "row_sums_warp", "rmsnorm_warp_f16")


# blocks of several independent rows: one row a program where a row holds 8 KB or more (lift/narrow.py)
NARROWED = {"rmsnorm_rows4": 4, "row_sums_warp": 4, "rmsnorm_warp_f16": 8}


def test_rows_past_the_registers_run_in_blocks() -> None:
    """Rows longer than the whole-row kernels hold (64 KB) run the blocked kernels (of one row a
    program, where the block's rows are independent)."""
    mod = _module("auto")
    for fn in ROW_KERNELS:
        ran = _check(mod, fn, 1, 33000 if fn in ("softmax_block", "rmsnorm_warp_f16") else 16500)  # 2-byte elements
        assert ran == [f"{fn}_k0_rows_blocked" if fn in NARROWED else f"{fn}_k0_blocked"], (fn, ran)
        assert _check(mod, fn, 1, 1000) == [f"{fn}_k0"], fn  # and the row in registers below it


@pytest.mark.parametrize("fn", sorted(NARROWED))
def test_long_rows_run_one_row_a_program(fn: str) -> None:
    """A block of Q independent rows (lanes of one row folding it) runs one row a program once a row
    holds 8 KB: Q + 3 rows, the last block's extra rows masked, every row checked."""
    rows = NARROWED[fn]
    n = 4200 if fn.endswith("_f16") else 2100
    assert _check(_module("auto"), fn, rows + 3, n) == [f"{fn}_k0_rows"], fn
    assert _check(_module("source"), fn, rows + 3, n) == [f"{fn}_k0"], fn  # as written under source


def test_narrowing_keeps_blocks_whose_rows_meet() -> None:
    """Rows that meet through shared memory the block shares, or warps that hold two rows, or a
    block index used on its own, keep the block (lift/narrow.py)."""
    from croq2triton.frontend import ast as A
    from croq2triton.frontend.driver import parse
    from croq2triton.lift.narrow import narrowed

    def narrows(body: str, threads: str = "{q, t} by [4, 64] : thread") -> int | None:
        src = (
            "__co__ void f(global f32 [M, N] x, global f32 [M, N] y) {\n"
            f"  parallel r by cdiv(M, 4) : block {{\n    shared f32 [4, 64] part;\n    shared f32 [64] common;\n"
            f"    parallel {threads} {{\n{body}\n    }}\n  }}\n}}\n"
        )
        top = next(n for n in parse(src, "n.co").walk() if isinstance(n, A.Parallel))
        found = narrowed(top)
        return None if found is None else found[1]

    own = "      part.at(q, t) = x.at(r # q, t);\n      sync.shared;\n      y.at(r # q, t) = part.at(q, 63 - t);"
    assert narrows(own) == 4
    shared = "      common.at(t) = x.at(r # q, t);\n      sync.shared;\n      y.at(r # q, t) = common.at(63 - t);"
    assert narrows(shared) is None  # the rows of a block share 'common'
    across = "      part.at(q, t) = x.at(r # q, t);\n      sync.shared;\n      y.at(r # q, t) = part.at(3 - q, t);"
    assert narrows(across) is None  # a row reads another row's slice
    assert narrows(own, "{q, t} by [4, 16] : thread") is None  # a warp holds two rows
    alone = "      y.at(r # q, t) = x.at(r, t);"
    assert narrows(alone) is None  # the block index on its own
    shadow = "      foreach q in [4] { part.at(q, t) = x.at(r # q, t); }\n      sync.shared;\n      y.at(r # q, t) = part.at(q, t);"
    assert narrows(shadow) is None  # a loop's own q reaches every row's slice
    once = (
        "__co__ void f(global f32 [M, N] x, global f32 [M, N] y, global f32 [1] blocks) {\n"
        "  parallel r by cdiv(M, 4) : block {\n    blocks.at(0) = blocks.at(0) + 1.0f;\n"
        "    parallel {q, t} by [4, 64] : thread {\n      y.at(r # q, t) = x.at(r # q, t);\n    }\n  }\n}\n"
    )
    top = next(n for n in parse(once, "n.co").walk() if isinstance(n, A.Parallel))
    assert narrowed(top) is None  # a statement the block runs once would run once a row
    plain = once.replace("    blocks.at(0) = blocks.at(0) + 1.0f;\n", "")
    top = next(n for n in parse(plain, "n.co").walk() if isinstance(n, A.Parallel))
    found = narrowed(top)
    assert found is not None and found[1] == 4  # without it: one row a program


@pytest.mark.parametrize(("m", "n"), [(700, 77), (100, 300)])
def test_column_sums_split_the_rows_where_programs_are_few(m: int, n: int) -> None:
    """A thread per column walking every row: where its programs are fewer than two per SM (the
    interpreter counts 4 SMs) and the rows are many, the rows are split across programs and the
    partial sums combined by a second kernel; with few rows, the kernel as written, folded."""
    mod = _module("auto")
    for fn in ("col_sums_walk", "col_means_f16"):
        ran = _check(mod, fn, m, n)
        split = [f"{fn}_k0_split"]  # (the last of a column's programs combines: schedule/lastcombine.py)
        assert ran == (split if m > 256 else [f"{fn}_k0"]), (fn, ran)


@pytest.mark.parametrize(("m", "n"), [(40, 700), (70, 100)])
def test_staged_rows_split_the_row_where_programs_are_few(m: int, n: int) -> None:
    """Rows staged through shared memory a block of columns a step: where the programs (blocks of
    rows) are fewer than the interpreter's 4 SMs hold and the steps are many (at least 256 elements
    of a row each split), the steps are split across programs and the partial sums combined."""
    mod = _module("auto")
    for fn, cols in (("row_sums_staged", 64), ("row_meansq_staged_f16", 128)):
        ran = _check(mod, fn, m, n)
        split = -(-n // cols) >= 2 * (256 // cols)
        assert ran == ([f"{fn}_k0_split"] if split else [f"{fn}_k0"]), (fn, ran)


def _kernel(source: str, name: str) -> str:
    """The text of the ``@triton.jit`` function ``name`` in a generated module."""
    start = source.index(f"def {name}(")
    end = source.find("\n@", start)
    return source[start : end if end > 0 else None]


def test_what_auto_makes_of_each_form() -> None:
    """The generated code under ``--schedule auto``: folds are tile reductions (no loop over a
    tile's elements left), staged tiles stay in registers, atomics add one fold a row, element-wise
    programs move 2 KB of each tensor or more, the loads read the contiguous dimension along a tile
    axis of their own."""
    out = translate_full(PROGRAM.read_text(), filename=str(PROGRAM), schedule="auto")
    assert not out.failed, out.failed
    text = out.source
    for fn in ("row_sums_block", "softmax_block", "rmsnorm_rows4", "row_sums_warp", "rmsnorm_warp_f16"):
        body = _kernel(text, f"{fn}_k0")  # the whole row in registers: no loop over it, one load of x
        assert "BLOCK_J: tl.constexpr" in body and "for j" not in body, fn
        assert body.count("tl.load(x_ptr") == 1, fn
        assert "for k in range(0, 256)" not in body and "for k in range(0, 128)" not in body, fn
        assert "for k in range(0, 64)" not in body, fn
    # the lanes' partials read only as totals: totals, the lanes' axis folded first (schedule/totals.py)
    body = canonical(_kernel(text, "row_sums_block_k0"))
    assert "tot+part_sum" in body and "acc_sum=acc_sum+tl.sum(tl.sum(" in body and ",axis=1),axis=0)" in body
    body = canonical(_kernel(text, "softmax_block_k0"))
    assert "tl.maximum(rm,pm_max)" in body and "rs+ps_sum" in body and "tl.max(tl.max(" in body
    body = canonical(_kernel(text, "rmsnorm_rows4_k0"))
    assert "tot+ss_sum[:,None]" in body and ",axis=2),axis=0)" in body
    for fn in ("row_sums_staged", "row_meansq_staged_f16"):  # the staged tile folded in registers
        body = _kernel(text, f"{fn}_k0")
        assert "_scratch" not in body and "debug_barrier" not in body and "for j" not in body, fn
        assert ", axis=1)" in body, fn
    for fn in ("row_sums_atomic", "row_sums_atomic_f16"):  # one atomic of a fold per row of a program
        body = _kernel(text, f"{fn}_k0")
        # (the address not spread over the lanes: at most a [1] tile beside the folded value, compiled
        # Triton takes no scalar pointer beside a tile value)
        spread = body.replace("tl.zeros([1], tl.int32)", "")
        assert "tl.atomic_add(" in body and "tl.sum(tl.where(mask" in body and "tl.zeros([" not in spread, fn
    assert "tl.arange(0, 1024)" in _kernel(text, "row_sums_atomic_k0")
    for fn, lanes in (("silu_mul_f16", 1024), ("silu_mul_f32", 512)):  # 2 KB of each tensor a program
        assert f"t = tl.arange(0, {lanes})" in _kernel(text, f"{fn}_k0"), fn
    for fn in ("col_sums_walk", "col_means_f16"):  # partial folds of blocks of rows, then their sum
        fused = _kernel(text, f"{fn}_k0_split")  # (by the last of a column's programs: one launch)
        assert "split = tl.program_id(1)" in fused and "tl.sum(" in fused, fn
        assert "arrived = tl.atomic_add(arrivals + p, 1)" in fused and "if arrived == SPLITS - 1:" in fused, fn
        assert "tl.store(arrivals + p, 0)" in fused and "_k0_combine(" not in text, fn
    # past the registers, a pass over a row read before runs its blocks last first (L2 still holds them)
    for fn in ("rmsnorm_rows4", "rmsnorm_warp_f16", "softmax_block"):
        blocked = canonical(_kernel(text, f"{fn}_k0_blocked"))
        # (a loop that only reads is pipelined: tl.range, schedule/loadstages.py)
        backward = re.findall(r"_backin(?:tl\.)?range\(0,", blocked)
        assert len(backward) == (2 if fn == "softmax_block" else 1), fn
    # the shuffles' butterfly is one reduction across the lanes, a total a row (schedule/shuffles.py)
    for fn, acc in (("row_sums_warp", "acc"), ("rmsnorm_warp_f16", "ss")):
        body = canonical(_kernel(text, f"{fn}_k0"))
        assert "tl.gather(" not in body and f"{acc}_all=" in body and f"{acc}_sum[:,None]" in body, fn


def test_source_schedule_keeps_each_form_as_written() -> None:
    out = translate_full(PROGRAM.read_text(), filename=str(PROGRAM), schedule="source")
    assert not out.failed, out.failed
    text = out.source
    assert "for k in range(0, 256)" in _kernel(text, "row_sums_block_k0")
    assert "_scratch" in _kernel(text, "row_sums_staged_k0")
    assert "_partial" not in text and "BLOCK_J" not in text


REFUSED = """
// a max over positions the tile may not have (K past 64 reads zeros): the loop stays
__co__ void max_past(global f32 [M, 64] x, global f32 [M] s, int K) {
  parallel r by M : block {
    shared f32 [64] pm;
    parallel t by 64 : thread {
      pm.at(t) = x.at(r, t);
      sync.shared;
      if (t == 0) {
        mutable f32 m = -inf;
        foreach k in [K] { m = __max(m, pm.at(k)); }
        s.at(r) = m;
      }
    }
  }
}

// atomics whose old values are read: each lane's own, in the order they run
__co__ void old_values(global f32 [M, N] x, global f32 [M] s, global f32 [M, N] o) {
  parallel {bm, bn} by [cdiv(M, 4), cdiv(N, 64)] : block, {i, j} by [4, 64] : thread {
    if (bm # i < M && bn # j < N) o.at(bm # i, bn # j) = __atomic_add(s.at(bm # i), x.at(bm # i, bn # j));
  }
}

// two loops (the second reads the first's fold): not split across programs
__co__ void col_var(global f32 [M, N] x, global f32 [N] v) {
  parallel p by cdiv(N, 128) : block, c by 128 : thread {
    if (p # c < N) {
      mutable f32 acc = 0.0f;
      foreach i in [M] { acc += x.at(i, p # c); }
      f32 mean = acc / M;
      mutable f32 sq = 0.0f;
      foreach i in [M] {
        f32 d = x.at(i, p # c) - mean;
        sq += d * d;
      }
      v.at(p # c) = sq / M;
    }
  }
}

// the partials stored, then the accumulator that held them reset: the reads stay in scratch memory
__co__ void reset_partials(global f32 [M, N] x, global f32 [M] s) {
  parallel r by cdiv(M, 4) : block {
    shared f32 [4, 64] part;
    parallel {q, t} by [4, 64] : thread {
      mutable f32 acc = 0.0f;
      foreach j in [cdiv(N, 64)] {
        if (r # q < M && j * 64 + t < N) acc += x.at(r # q, j * 64 + t);
      }
      part.at(q, t) = acc;
      acc = 0.0f;
      sync.shared;
      foreach k in [64] { acc += part.at(q, k); }
      if (r # q < M && t == 0) s.at(r # q) = acc;
    }
  }
}

// the staged tile written between the copy and the reads: the reads stay in scratch memory
__co__ void restaged(global f32 [M, N] x, global f32 [M] s) {
  parallel p by cdiv(M, 32) : block, t by 32 : thread {
    mutable f32 acc = 0.0f;
    foreach c in [cdiv(N, 64)] {
      f = dma.copy x.subspan(32, 64).at(p, c) => shared;
      f.data.at(t, c % 64) = 1.0f;
      sync.shared;
      foreach j in [64] { acc += f.data.at(t, j); }
    }
    if (p # t < M) s.at(p # t) = acc;
  }
}
"""


def test_forms_the_proofs_refuse_run_as_written() -> None:
    """A max fold over positions past the tile, atomics whose old values are read, a column
    variance (two loops), partials stored from an accumulator later reset, a staged tile written
    before it is read back: under ``auto`` each keeps
    the loop or the atomics as written (schedule/selectfold.py, atomicfold.py, splitloop.py,
    forward.py refuse them), and computes what they mean."""
    out = translate_full(REFUSED, filename="refused.co", schedule="auto")
    assert not out.failed, out.failed
    text = out.source
    assert "for k in range(0, K)" in _kernel(text, "max_past_k0")
    assert "old = tl.atomic_add(" in text and "_k0_partial(" not in text
    assert "_scratch" in _kernel(text, "restaged_k0") and "for j in range(0, 64)" in _kernel(text, "restaged_k0")
    mod = load_source(text, "membound_refused")
    x = randn(9, 64, seed=1)
    s = poisoned(9)
    mod.max_past(x, s, 40)
    assert torch.equal(s.cpu(), x[:, :40].amax(1).cpu())
    x = randn(9, 130, seed=2)
    s, o = torch.zeros(9, device=DEVICE), poisoned(9, 130)
    mod.old_values(x, s, o)
    assert torch.allclose(s.double().cpu(), x.double().sum(1).cpu(), atol=1e-4)
    assert not torch.isnan(o).any()
    x = randn(300, 77, seed=3)
    v = poisoned(77)
    mod.col_var(x, v)
    assert torch.allclose(v.double().cpu(), x.double().var(0, unbiased=False).cpu(), rtol=1e-5)
    assert "_scratch" in _kernel(text, "reset_partials_k0")
    x = randn(10, 150, seed=6)
    s = poisoned(10)
    mod.reset_partials(x, s)
    assert torch.allclose(s.double().cpu(), x.double().sum(1).cpu(), atol=1e-4)
    m, n = 40, 150
    x = randn(m, n, seed=4)
    s = poisoned(m)
    mod.restaged(x, s)
    chunks = -(-n // 64)
    padded = torch.zeros(m, chunks * 64, dtype=torch.float64)
    padded[:, :n] = x.double().cpu()
    for c in range(chunks):
        padded[:, c * 64 + c % 64] = 1.0
    assert torch.allclose(s.double().cpu(), padded.sum(1), atol=1e-4)


SPLIT = """
// folds that start from values other than their identity, two in one loop, one guarded per row
__co__ void col_stats(global f32 [M, N] x, global f32 [N] hi, global f32 [N] tot) {
  parallel p by cdiv(N, 64) : block, c by 64 : thread {
    if (p # c < N) {
      mutable f32 m = 0.5f;
      mutable f32 s = 1.0f;
      foreach i in [M] {
        m = __max(m, x.at(i, p # c));
        if (i % 3 == 0) s += x.at(i, p # c);
      }
      hi.at(p # c) = m;
      tot.at(p # c) = s * 2.0f;
    }
  }
}
"""


def test_split_folds_start_from_the_identity() -> None:
    """Each split program folds from the identity of its fold (-inf for a max, 0 for a sum), the
    combining kernel from the value the source starts from: 0.5 and 1 here."""
    out = translate_full(SPLIT, filename="split.co", schedule="auto")
    assert not out.failed, out.failed
    assert "def col_stats_k0_split(" in out.source
    mod = load_source(out.source, "membound_split")
    x = randn(700, 77, seed=5) - 3.0  # most columns' maxima below 0.5
    hi, tot = poisoned(77), poisoned(77)
    ran, launch = recording_launch()

    mod.col_stats(x, hi, tot, _launch=launch)
    assert ran == ["col_stats_k0_split"], ran
    xd = x.double().cpu()
    assert torch.equal(hi.double().cpu(), xd.amax(0).clamp(min=0.5))
    want = (1.0 + xd[::3].sum(0)) * 2.0
    assert torch.allclose(tot.double().cpu(), want, atol=1e-3)


@pytest.mark.parametrize("rows", [1, 2, 4])
def test_rows_a_program_is_a_tuning_field(rows: int) -> None:
    """``TileSchedule.rows`` (issue 27: the rewrites are fields ``tune`` varies): R rows of the block a
    program, whatever the row's length (4: the block's own, as written); each checked on ragged sizes."""
    from croq2triton.api import load_source, translate_full
    from croq2triton.options import Point

    point = Point.of({}, {"rmsnorm_rows4_k0": {"rows": rows}, "rmsnorm_warp_f16_k0": {"rows": rows}})
    text = functions_of(PROGRAM, "rmsnorm_rows4", "rmsnorm_warp_f16")  # (the functions the point sets)
    out = translate_full(text, filename="membound_forms.co", schedule="auto", point=point)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"membound_rows_{rows}")
    for fn, block in (("rmsnorm_rows4", 4), ("rmsnorm_warp_f16", 8)):
        ran = _check(mod, fn, 11, 300)  # short rows: a point's rows stand at any length
        assert ran == ([f"{fn}_k0"] if rows == block else [f"{fn}_k0_rows"]), (fn, ran)
    kernel = out.source.split("def rmsnorm_rows4_k0_rows(")[-1].split("@triton.jit")[0] if rows < 4 else ""
    if rows < 4:
        assert f"tl.arange(0, {rows})" in kernel  # the block's rows a program


def test_rows_is_refused_where_the_block_is_one_row() -> None:
    from croq2triton.api import translate_full
    from croq2triton.errors import CroqError
    from croq2triton.options import Point

    point = Point.of({}, {"row_sums_block_k0": {"rows": 1}})
    text = functions_of(PROGRAM, "row_sums_block")
    out = translate_full(text, filename="membound_forms.co", schedule="auto", point=point)
    failed = out.failed["row_sums_block"]
    assert isinstance(failed, CroqError) and "rows: the kernel's block is not several independent rows" in str(failed)


TWO_ROWS = """
// softmax of two rows a block: 128 threads a row striding along it, a tree in shared memory for the
// row's max and sum
__co__ void softmax2(global f32 [M, N] x, global f32 [M, N] y) {
  parallel r by cdiv(M, 2) : block {
    shared f32 [2, 128] red;
    parallel {q, t} by [2, 128] : thread {
      mutable f32 m = -100000000.0f;
      foreach j in [cdiv(N, 128)] {
        if (r # q < M && j * 128 + t < N) m = __max(m, x.at(r # q, j * 128 + t));
      }
      red.at(q, t) = m;
      sync.shared;
      foreach k in [7] {
        h = 64 >> k;
        if (t < h) red.at(q, t) = __max(red.at(q, t), red.at(q, t + h));
        sync.shared;
      }
      f32 mx = red.at(q, 0);
      sync.shared;
      mutable f32 s = 0.0f;
      foreach j in [cdiv(N, 128)] {
        if (r # q < M && j * 128 + t < N) s += __exp(x.at(r # q, j * 128 + t) - mx);
      }
      red.at(q, t) = s;
      sync.shared;
      foreach k in [7] {
        h = 64 >> k;
        if (t < h) red.at(q, t) += red.at(q, t + h);
        sync.shared;
      }
      f32 tot = red.at(q, 0);
      foreach j in [cdiv(N, 128)] {
        if (r # q < M && j * 128 + t < N) y.at(r # q, j * 128 + t) = __exp(x.at(r # q, j * 128 + t) - mx) / tot;
      }
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_tree_over_two_rows_a_block_runs_one_row_a_program(schedule: str) -> None:
    """A softmax of two rows a block, each row's max and sum a tree of halving steps through its slice
    of a shared [2, 128] buffer: under auto one row a program once a row holds 8 KB (4100 f32)."""
    from croq2triton.api import load_source, translate_full

    out = translate_full(TWO_ROWS, filename="two.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"two_rows_{schedule}")
    for m, n in ((5, 300), (5, 4100)):
        x = randn(m, n, seed=m + n)
        y = poisoned(m, n)
        ran, launch = recording_launch()
        mod.softmax2(x, y, _launch=launch)
        assert_near_max(y, torch.softmax(x.double().cpu(), 1), 1e-5, f"softmax2 at {m} x {n}")
        rows = schedule == "auto" and n == 4100
        assert ran == ["softmax2_k0_rows" if rows else "softmax2_k0"], ran
