"""Loops that walk a row from its end (schedule/reverse.py, issue 27): tests/programs/reverse.co under
both schedules in the interpreter against float64 torch, ragged sizes (a row in one block, a row of
several blocks), outputs poisoned with NaN; picks with ties drawn from a few integers, infinities
(rows all at the start value) and NaNs; and what ``--schedule auto`` makes of each loop: the rewritten
loops read (and write) the row forwards, the order-dependent ones keep their backward walk."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, form_sizes, kernel_code, load_once, poisoned, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "reverse.co"
SIZES = [(37, 300), (5, 5000)]  # (5000: past the whole-row limit, blocks of 4096)


def _ties(m: int, n: int, seed: int, top: float) -> torch.Tensor:
    """Integers 0 .. 5 (ties everywhere), some NaNs, a few ``top`` (the pick's start value), and one row
    all ``top``, one all NaN."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 6, (m, n), generator=g).float()
    x[torch.rand(m, n, generator=g) < 0.05] = float("nan")
    x[torch.rand(m, n, generator=g) < 0.05] = top
    x[m // 2] = top
    x[m - 1] = float("nan")
    return x.to(DEVICE)


def _pick(x: torch.Tensor, largest: bool, first: bool, start: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The loop's best value and position: NaNs never taken, ties with ``start`` taken only by a
    non-strict comparison (``first``: walking from the end, the last tie walked is the row's first)."""
    xd = x.double().cpu()
    ok = ~torch.isnan(xd)
    if not first:
        ok &= xd != start
    fill = float("-inf") if largest else float("inf")
    clean = torch.where(ok, xd, torch.full_like(xd, fill))
    best = clean.amax(1) if largest else clean.amin(1)
    hit = ok & (clean == best[:, None])
    pos = torch.arange(x.shape[1]).expand_as(hit)
    if first:
        at = torch.where(hit, pos, x.shape[1]).amin(1)
    else:
        at = torch.where(hit, pos, -1).amax(1)
    at = torch.where(hit.any(1), at, -1)
    best = torch.where(hit.any(1), best, start)
    return best, at.double()


def _suffix(x: torch.Tensor) -> torch.Tensor:
    return x.double().cpu().flip(1).cumsum(1).flip(1)


def _check(got: torch.Tensor, ref: torch.Tensor, tol: float, what: str) -> None:
    """Exactly (``tol`` 0: picks, copies, maxima) or within ``tol`` of the reference's largest element."""
    if tol:
        assert_near_max(got, ref, tol, what)
        return
    g, r = got.double().cpu(), ref.double().cpu()
    assert not torch.isnan(g).any(), f"{what}: NaN poison left"
    same = g == r
    assert same.all(), f"{what}: {int((~same).sum())} elements differ, e.g. {g[~same][:4]} vs {r[~same][:4]}"


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_loop_in_both_schedules(schedule: str, m: int, n: int) -> None:
    mod = load_once(PROGRAM, schedule)
    what = f"at {m} x {n} ({schedule})"
    x = randn(m, n, seed=m + n)
    for fn, ref, tol in (
        ("rev_sum", lambda t: 2.0 * t.double().cpu().sum(1), 1e-6),
        ("rev_max", lambda t: t.double().cpu().amax(1), 0.0),
    ):
        y = poisoned(m)
        getattr(mod, fn)(x, y)
        _check(y, ref(x), tol, f"{fn} {what}")
    for fn, ref, tol in (
        ("flip_copy", lambda t: t.double().cpu().flip(1), 0.0),
        ("rev_scale", lambda t: t.double().cpu() * 3.0 + 1.0, 1e-6),
        ("suffix_sum", _suffix, 1e-5),
    ):
        y = poisoned(m, n)
        getattr(mod, fn)(x, y)
        _check(y, ref(x), tol, f"{fn} {what}")
    # (>= from the end: the row's first best position; a row all -inf: its first position)
    t = _ties(m, n, m * 7 + n, float("-inf"))
    idx, val = poisoned(m, dtype=torch.int32), poisoned(m)
    mod.rev_argmax_ge(t, idx, val)
    best, at = _pick(t, largest=True, first=True, start=float("-inf"))
    _check(idx, at, 0.0, f"rev_argmax_ge {what}")
    _check(val, best, 0.0, f"rev_argmax_ge's value {what}")
    # (< from the end: the row's last smallest position; a row all +inf: never taken, -1)
    t = _ties(m, n, m * 11 + n, float("inf"))
    idx = poisoned(m, dtype=torch.int32)
    mod.rev_argmin_gt(t, idx)
    _, at = _pick(t, largest=False, first=False, start=float("inf"))
    _check(idx, at, 0.0, f"rev_argmin_gt {what}")


@pytest.mark.parametrize("n", [300, 5000])
def test_picks_match_the_source_schedule(n: int) -> None:
    """The rewritten picks give the positions the loop as written gives, ties and all."""
    m = 6
    auto, source = load_once(PROGRAM, "auto"), load_once(PROGRAM, "source")
    t = _ties(m, n, n + 5, float("-inf"))
    got = []
    for mod in (auto, source):
        idx, val = poisoned(m, dtype=torch.int32), poisoned(m)
        mod.rev_argmax_ge(t, idx, val)
        got.append((idx.cpu(), val.cpu()))
    assert torch.equal(got[0][0], got[1][0])
    assert torch.equal(got[0][1], got[1][1])


@cache
def _source(schedule: str) -> str:
    return translate_full(PROGRAM.read_text(), filename="reverse.co", schedule=schedule).source


BACKWARDS = re.compile(r"-\s*j\w*\s*\*")  # an address stepping down with the counter


@pytest.mark.parametrize("fn", ["rev_sum", "rev_max", "rev_argmax_ge", "rev_argmin_gt", "rev_scale"])
def test_auto_walks_forwards(fn: str) -> None:
    for name in (f"{fn}_k0", f"{fn}_k0_blocked"):
        code = kernel_code(_source("auto"), name)
        accesses = [ln for ln in code.splitlines() if "tl.load(" in ln or "tl.store(" in ln or "_ptr +" in ln]
        assert accesses, name
        assert not any(BACKWARDS.search(ln) for ln in accesses), f"{name} still walks backwards:\n{code}"
        assert "j_fwd" in code, name
    written = kernel_code(_source("source"), f"{fn}_k0")
    assert BACKWARDS.search(written), f"{fn}: the source schedule reads the row backwards"


@pytest.mark.parametrize("fn", ["suffix_sum", "flip_copy"])
def test_order_or_both_directions_stay(fn: str) -> None:
    """A running sum stored at each step keeps its order; a flipped copy reads one way and writes the
    other (neither direction is forwards for both)."""
    code = kernel_code(_source("auto"), f"{fn}_k0")
    assert "j_fwd" not in code
    assert BACKWARDS.search(code)


_SIZES = {f: {"M": 4096, "N": 16384} for f in ("rev_sum", "rev_argmax_ge", "rev_scale", "suffix_sum", "flip_copy")}
_WIDE = ("cp16B", "v4", "v2")


@pytest.mark.slow
def test_auto_loads_whole_lines_where_rewritten() -> None:
    """Compiled for sm_90a under auto (4096 x 16384): the forward walks' loads are 16-byte copies or
    vectors (walked backwards they were 4-byte copies, one element each); the walks kept stay scalar."""
    import json

    import sm90

    r = sm90.script(Path(__file__).parent / "access_lines.py", str(PROGRAM), json.dumps(_SIZES))
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    for fn in ("rev_sum", "rev_argmax_ge", "rev_scale"):
        widths = got[fn]["x.ld"]
        assert any(w in widths for w in _WIDE) and not set(widths) - set(_WIDE), f"{fn}: {got[fn]}"
    assert got["rev_scale"]["y.st"].keys() <= set(_WIDE), got["rev_scale"]
    for fn in ("suffix_sum", "flip_copy"):
        assert "x1" in got[fn]["x.ld"], f"{fn}: {got[fn]}"
