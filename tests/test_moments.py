"""Squared deviations from a value an earlier loop computed, folded in that loop's pass
(schedule/moments.py): a column's mean and variance written the textbook way (two loops), by
Welford's update, with a guard that reads the data, on f16 data, two variances at once, each read
once under ``--schedule auto`` where the loop is split across programs (one launch: each program's
count, mean and m2 by Welford's update a block at a time, Chan's formula across blocks and programs,
schedule/foldloops.py and schedule/splitloop.py); near misses stay two passes.  Every kernel in both
schedules against float64 torch, on ragged sizes, outputs poisoned; data with a large mean and a
first row far from the rest, where a one-pass sum of squares would cancel."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.runtime.launch import Recorder

SRC = (Path(__file__).parent / "programs" / "moments.co").read_text()


@cache
def _module(schedule: str) -> object:
    out = translate_full(SRC, filename="moments.co", schedule=schedule)
    assert not out.failed, out.failed
    return load_source(out.source, f"moments_{schedule}")


def _ran(mod: object, fn: str, *args: torch.Tensor) -> list[str]:
    rec = Recorder()
    getattr(mod, fn)(*args, _launch=rec)
    return [la.kernel.__name__ for la in rec.launches]


def _data(m: int, n: int, seed: int) -> torch.Tensor:
    """A large mean, and a first row 10^4 standard deviations away."""
    x = randn(m, n, seed=seed) + 300.0
    x[0] += 1.0e4
    return x


@pytest.mark.parametrize(
    ("schedule", "m", "n"),
    # (the source schedule walks each row one step at a time in the interpreter: one small size)
    [("source", 301, 77), ("auto", 1300, 200), ("auto", 517, 77)],
)
def test_each_kernel_computes_what_torch_does(schedule: str, m: int, n: int) -> None:
    mod = _module(schedule)
    x = _data(m, n, m + n)
    xd = x.double()
    mean, var = poisoned(n), poisoned(n)
    mod.col_var(x, mean, var)  # type: ignore[attr-defined]
    assert_near_max(mean, xd.mean(0), 2e-5, "col_var mean")  # (3000 f32 terms near 300, summed in turn as written)
    assert_near_max(var, xd.var(0, unbiased=False), 1e-5, "col_var var")
    var = poisoned(n)
    mod.col_welford(x, var)  # type: ignore[attr-defined]
    assert_near_max(var, xd.var(0, unbiased=True), 1e-5, "col_welford")
    z = randn(m, n, seed=m) * 2.0 + 0.5
    zd = z.double()
    var = poisoned(n)
    mod.col_pos_var(z, var)  # type: ignore[attr-defined]
    pos = zd > 0
    count = pos.sum(0).clamp(min=1)
    mu = torch.where(pos, zd, 0.0).sum(0) / count
    ref = torch.where(pos, (zd - mu) ** 2, 0.0).sum(0) / count
    assert_near_max(var, ref, 1e-5, "col_pos_var")
    xh, yh = (randn(m, n, seed=m + k).half() * 3.0 + 20.0 for k in (1, 2))
    sx, vy = poisoned(n, dtype=torch.float16), poisoned(n)
    mod.col_std_f16(xh, yh, sx, vy)  # type: ignore[attr-defined]
    assert_near_max(sx, xh.double().std(0, unbiased=False), 1e-3, "col_std_f16 sx")
    assert_near_max(vy, yh.double().var(0, unbiased=False), 1e-5, "col_std_f16 vy")
    out = poisoned(n)
    mod.col_cross(x, out)  # type: ignore[attr-defined]
    assert_near_max(out, ((xd - xd.mean(0)) * (xd + xd.mean(0))).sum(0), 1e-4, "col_cross")  # (x^2 - mu^2 cancels)


def test_auto_reads_the_columns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter counts 4 SMs: 200 columns are few programs, so the loops split across
    programs; the variances are one launch (their squared deviations folded in the mean's pass), the
    near miss two phases."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "4")  # (the interpreter's count, on a GPU too)
    mod = _module("auto")
    m, n = 1300, 200
    x = _data(m, n, 5)
    assert _ran(mod, "col_var", x, poisoned(n), poisoned(n)) == ["col_var_k0_split"]
    assert _ran(mod, "col_welford", x, poisoned(n)) == ["col_welford_k0_split"]
    assert _ran(mod, "col_pos_var", x, poisoned(n)) == ["col_pos_var_k0_split"]
    xh = x.half()
    assert _ran(mod, "col_std_f16", xh, xh, poisoned(n, dtype=torch.float16), poisoned(n)) == ["col_std_f16_k0_split"]
    assert _ran(mod, "col_cross", x, poisoned(n)) == [f"col_cross_k0_phase{k}_split" for k in range(2)]


def test_the_split_kernel_folds_welford_steps_a_block_at_a_time() -> None:
    """The partial kernel keeps a count, a mean and an m2 a position of its block (element-wise
    tiles) with one ``1 / n`` a block where the guard is the same for every step, a division a
    position where it reads the data; the partials combine by Chan's formula."""
    out = translate_full(SRC, filename="moments.co", schedule="auto")
    src = out.source
    var = src[src.index("def col_var_k0_split(") :]
    var = var[: var.index("\n\n\n")]
    assert "q_mean_tile = q_mean_tile + tl.where(" in var and "welford_inverse" in var
    assert var.count("for ") == 3  # (the partial's blocks; the partials' counts and means, then their m2)
    pos = src[src.index("def col_pos_var_k0_split(") :]
    pos = pos[: pos.index("\n\n\n")]
    assert "welford_inverse" not in pos and "tl.maximum(q_count_tile, 1.0)" in pos


@pytest.mark.parametrize(("schedule", "m", "n"), [("source", 3, 301), ("auto", 5, 16500), ("auto", 6, 700)])
def test_layernorm_rows_in_blocks(schedule: str, m: int, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows longer than the registers hold (16500 f32) run in blocks: two passes (the statistics, the
    write) where there were three; shorter rows stay whole in registers."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "4")  # (the interpreter's count, on a GPU too)
    mod = _module(schedule)
    x = randn(m, n, seed=n) * 2.0 + 50.0
    x[:, 0] += 1.0e3
    g = randn(n, seed=1)
    y = poisoned(m, n)
    mod.layernorm_rows(x, g, y)  # type: ignore[attr-defined]
    xd = x.double()
    ref = (xd - xd.mean(1, keepdim=True)) * torch.rsqrt(xd.var(1, unbiased=False, keepdim=True) + 1e-5) * g.double()
    assert_near_max(y, ref, 1e-4, "layernorm_rows")
    if schedule == "auto":
        ran = _ran(mod, "layernorm_rows", x, g, poisoned(m, n))
        assert ran == (["layernorm_rows_k0_blocked"] if n > 16384 else ["layernorm_rows_k0"]), ran
        src = translate_full(SRC, filename="moments.co", schedule="auto").source
        blocked = src[src.index("def layernorm_rows_k0_blocked(") :]
        blocked = blocked[: blocked.index("\n\n\n")]
        assert blocked.count("for ") == 2 and "q_m2_tile" in blocked


def test_many_columns_fold_their_variance_in_one_pass_unsplit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Enough programs for the SMs (no split): each program walks its columns in blocks of rows, the
    squared deviations folded in the mean's pass (one loop over the rows, not two)."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "4")  # (the interpreter's count, on a GPU too)
    mod = _module("auto")
    m, n = 300, 2100  # (17 programs of 128 columns, more than the interpreter's 4 SMs; 300 rows in blocks)
    x = _data(m, n, 9)
    assert _ran(mod, "col_var", x, poisoned(n), poisoned(n)) == ["col_var_k0_blocked"]
    mean, var = poisoned(n), poisoned(n)
    mod.col_var(x, mean, var)  # type: ignore[attr-defined]
    assert_near_max(var, x.double().var(0, unbiased=False), 1e-5, "col_var unsplit")
    src = translate_full(SRC, filename="moments.co", schedule="auto").source
    body = src[src.index("def col_var_k0_blocked(") :]
    body = body[: body.index("\n\n\n")]
    assert body.count("for ") == 1 and "q_m2_tile" in body


def test_tune_may_keep_the_second_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """``deviations`` is a field of the kernel's schedule: false keeps the squared deviations a pass of
    their own (one launch a loop where the loop splits), and the result is the same."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "4")  # (the interpreter's count, on a GPU too)
    from croq2triton.options import Point

    point = Point.of({}, {"col_var_k0": {"deviations": False}})
    out = translate_full(SRC, filename="moments.co", schedule="auto", point=point)
    assert not out.failed, out.failed
    mod = load_source(out.source, "moments_two_passes")
    m, n = 1300, 200
    x = _data(m, n, 11)
    assert _ran(mod, "col_var", x, poisoned(n), poisoned(n)) == [f"col_var_k0_phase{k}_split" for k in range(2)]
    mean, var = poisoned(n), poisoned(n)
    mod.col_var(x, mean, var)  # type: ignore[attr-defined]
    assert_near_max(var, x.double().var(0, unbiased=False), 1e-5, "col_var two passes")
    assert out.schedules["col_var"]["col_var_k0"].deviations is False  # type: ignore[attr-defined]
