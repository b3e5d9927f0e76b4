"""A thread per column walking every row, under ``--schedule auto`` with too few programs for the SMs:
the loop is split across programs (schedule/splitloop.py) and the partial kernel's programs take
columns until each reads ``policy.SPLIT_LINE_MIN`` bytes of a row (policy.split_factors, emit/kernels.py
``split_widened``): 256 f16 columns a block are four blocks a program, 1024 columns (on the H100 the
f16 column means ran at 0.76 / 0.78 of the roofline with 512 columns a program and 0.78 / 0.83 with 1024,
perf/RESULTS.md 2026-12-07 07:46); f32 columns stay as the source blocks them (128 a program did best on
the H200, 2026-12-04).  Numerics against float64 on ragged sizes (columns not a multiple of 1024),
outputs poisoned."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, poisoned, randn

from croq2triton.api import load
from croq2triton.runtime.launch import Recorder

PROGRAMS = Path(__file__).resolve().parent / "programs"


@pytest.fixture(scope="module")
def mod() -> object:
    return load(PROGRAMS / "membound_forms.co", schedule="auto")


@pytest.mark.parametrize(("m", "n"), [(3000, 700), (2600, 1025), (1300, 2060)])
def test_f16_column_means_split_in_programs_of_1024_columns(mod: object, m: int, n: int) -> None:
    x = randn(m, n, dtype=torch.float16, seed=m + n)
    rec = Recorder()
    mod.col_means_f16(x, torch.empty(n, dtype=torch.float16, device=DEVICE), _launch=rec)  # type: ignore[attr-defined]
    grids = {la.kernel.__name__: la.grid for la in rec.launches}
    assert grids["col_means_f16_k0_split"][0] == -(-n // 1024), grids  # (split: more than one split)
    assert grids["col_means_f16_k0_split"][1] > 1, grids
    out = poisoned(n, dtype=torch.float16)
    mod.col_means_f16(x, out)  # type: ignore[attr-defined]
    ref = x.double().mean(0)
    assert not torch.isnan(out).any()
    assert float((out.double() - ref).abs().max()) <= 1e-3 * float(ref.abs().max()) + 1e-3


def test_f32_column_sums_keep_the_sources_128_columns_a_program(mod: object) -> None:
    m, n = 3000, 300
    x = randn(m, n, seed=7)
    rec = Recorder()
    mod.col_sums_walk(x, torch.empty(n, device=DEVICE), _launch=rec)  # type: ignore[attr-defined]
    partial = [la for la in rec.launches if la.kernel.__name__.endswith("_split")]
    assert partial and partial[0].grid[0] == -(-n // 128), [(la.kernel.__name__, la.grid) for la in rec.launches]
    out = poisoned(n)
    mod.col_sums_walk(x, out)  # type: ignore[attr-defined]
    ref = x.double().sum(0)
    assert float((out.double() - ref).abs().max()) <= 1e-4 * float(ref.abs().max())


def test_the_last_program_of_a_column_combines_and_leaves_its_counter_zero(mod: object) -> None:
    """One launch (schedule/lastcombine.py): each program of a column block counts itself done and
    the last combines the partials; the counters the runtime keeps are zero after every launch, so
    calls one after the other (other data, other sizes) each combine their own partials."""
    from croq2triton.runtime import launch as rt

    for m, n, seed in ((3000, 300, 1), (2900, 301, 2), (5000, 40, 3)):
        x = randn(m, n, seed=seed)
        rec = Recorder()
        mod.col_sums_walk(x, torch.empty(n, device=DEVICE), _launch=rec)  # type: ignore[attr-defined]
        assert [la.kernel.__name__ for la in rec.launches] == ["col_sums_walk_k0_split"]
        out = poisoned(n)
        mod.col_sums_walk(x, out)  # type: ignore[attr-defined]
        ref = x.double().sum(0)
        assert float((out.double() - ref).abs().max()) <= 1e-4 * float(ref.abs().max())
        assert rt._COUNTERS and all(not c.any() for c in rt._COUNTERS.values())


REVERSED = """
__co__ void col_sums_reversed(global f32 [M, N] x, global f32 [N] s) {
  parallel p by cdiv(N, 128) : block, c by 128 : thread {
    shared f32 [128] buf;
    mutable f32 acc = 0.0f;
    foreach i in [M] { acc += x.at(i, p # c); }
    buf.at(c) = acc;
    sync.shared;
    if (p # c < N) s.at(p # c) = buf.at(127 - c);
  }
}
"""


def test_a_split_whose_threads_exchange_after_the_loop_keeps_its_second_kernel() -> None:
    """After the loop the threads exchange their sums through shared memory: that part keeps the
    barriers of a kernel of its own (the second one), not the last program of a column."""
    from croq2triton.api import load_source, translate_full

    out = translate_full(REVERSED, filename="reversed.co", schedule="auto")
    assert not out.failed, out.failed
    mod = load_source(out.source, "split_reversed")
    m, n = 3000, 256
    x = randn(m, n, seed=11)
    rec = Recorder()
    mod.col_sums_reversed(x, torch.empty(n, device=DEVICE), _launch=rec)  # type: ignore[attr-defined]
    names = [la.kernel.__name__ for la in rec.launches]
    assert names in (["col_sums_reversed_k0_partial", "col_sums_reversed_k0_combine"], ["col_sums_reversed_k0"]), names
    out_t = poisoned(n)
    mod.col_sums_reversed(x, out_t)  # type: ignore[attr-defined]
    ref = x.double().sum(0).reshape(-1, 128).flip(1).reshape(-1)
    assert float((out_t.double() - ref).abs().max()) <= 1e-4 * float(ref.abs().max())
