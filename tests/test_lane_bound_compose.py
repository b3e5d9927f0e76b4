"""``p # k`` where ``k`` counts a range each thread bounds itself (``foreach k in [t + 1]``,
``foreach k in [cnt.at(i)]``): LANGUAGE.md 7.2 ``p # k = p * #k + k`` with ``#k`` the thread's own
bound.  The program loops to the largest bound of its threads (lift/loops.py ``lane_range``), and
``#k`` was that loop's bound instead of the thread's: wrong elements read, or an internal
VerifyError (the irregular-access probe, F3).  Both schedules, ragged sizes, outputs poisoned,
against float64 torch."""

from __future__ import annotations

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
// y[p # t] = the sum of x[p * (t + 1) + k] over k < t + 1 (past N: zero, LANGUAGE.md 14.3)
__co__ void triangle(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    mutable f32 s = 0.0f;
    foreach k in [t + 1] s += x.at(p # k);
    y.at(p # t) = s;
  }
}

// each thread's bound read from a tensor, and a composed index stored into: y[i] = 2 * the sum of
// x[p * c + k] over k < c, c = cnt[i]; block 1 stores z[p * c + c - 1] = c (the last of each range)
__co__ void counted(global s32 [N] cnt, global f32 [M] x, global f32 [N] y, global f32 [M] z) {
  parallel p by cdiv(N, 8) : block, t by 8 : thread {
    int c = cnt.at(p # t);
    mutable f32 s = 0.0f;
    foreach k in [c] {
      s += x.at(p # k) * 2.0f;
      if (k == c - 1 && p == 1) z.at(p # k) = __to<f32>(c);
    }
    y.at(p # t) = s;
  }
}

// the same in an index of two dimensions: y[p # t] = the sum of x[r, p * t + k] over k < t
__co__ void rows(global f32 [R, D] x, global f32 [R, N] y) {
  parallel {r, p} by [R, cdiv(N, 8)] : block, t by 8 : thread {
    mutable f32 s = 0.0f;
    foreach k in [t] s += x.at(r, p # k);
    y.at(r, p # t) = s;
  }
}
"""
_MODS: dict[str, object] = {}


def _module(schedule: str) -> object:
    if schedule not in _MODS:
        out = translate_full(SOURCE, filename="lane_bound_compose.co", schedule=schedule)
        assert not out.failed, {k: str(v) for k, v in out.failed.items()}
        _MODS[schedule] = load_source(out.source, f"lane_bound_compose_{schedule}")
    return _MODS[schedule]


def _at(x: torch.Tensor, i: int) -> float:
    return float(x[i]) if i < x.numel() else 0.0


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_bound_of_the_thread_index(schedule: str) -> None:
    mod = _module(schedule)
    n = 37
    x, y = randn(n, seed=1), poisoned(n)
    mod.triangle(x, y)  # type: ignore[attr-defined]
    xs = x.double().cpu()
    ref = [sum(_at(xs, i // 16 * (i % 16 + 1) + k) for k in range(i % 16 + 1)) for i in range(n)]
    assert_close(y, torch.tensor(ref, dtype=torch.float64), atol=1e-5, rtol=1e-6)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_bound_read_by_each_thread_and_a_composed_store(schedule: str) -> None:
    mod = _module(schedule)
    n, m = 29, 45
    g = torch.Generator().manual_seed(2)
    cnt = torch.randint(0, 9, (n,), generator=g, dtype=torch.int32)
    cnt[8:16] = torch.arange(8, dtype=torch.int32) % 3 + 1  # block 1: c of 1, 2 or 3, z[2c - 1] = c
    x, y = randn(m, seed=3), poisoned(n)
    z = torch.zeros(m, device=DEVICE)
    mod.counted(cnt.to(DEVICE), x, y, z)  # type: ignore[attr-defined]
    xs = x.double().cpu()
    ref = [2 * sum(_at(xs, i // 8 * int(cnt[i]) + k) for k in range(int(cnt[i]))) for i in range(n)]
    assert_close(y, torch.tensor(ref, dtype=torch.float64), atol=1e-5, rtol=1e-6)
    want = torch.zeros(m, dtype=torch.float64)
    for c in (1, 2, 3):
        want[2 * c - 1] = c
    assert_close(z, want)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_bound_of_the_thread_index_in_a_second_dimension(schedule: str) -> None:
    mod = _module(schedule)
    r, n, d = 3, 21, 40
    x, y = randn(r, d, seed=4), poisoned(r, n)
    mod.rows(x, y)  # type: ignore[attr-defined]
    xs = x.double().cpu()
    ref = torch.zeros(r, n, dtype=torch.float64)
    for row in range(r):
        for i in range(n):
            p, t = divmod(i, 8)
            ref[row, i] = sum(_at(xs[row], p * t + k) for k in range(t))
    assert_close(y, ref, atol=1e-5, rtol=1e-6)
