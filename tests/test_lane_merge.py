"""One lane merging the block's lanes' Welford states one by one by Chan's formula (schedule/lanemerge.py,
issue 27): under auto the loop is one reduction over the lanes. Forms: 128 threads with a filter of empty
states (rows shorter than the block: lanes with no element), the mean merged as a weighted average and no
filter, the states merged in a different order of statements. Near misses stay as written: a merge that
drops Chan's correction (only the sums of squares added), and a count that does not start at 0. All run in
both schedules against float64 torch on ragged sizes, outputs poisoned with NaN."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load, translate_full

F64 = torch.float64

_HEAD = """
__co__ void NAME(global f32 [M, N] x, global f32 [M] mu, global f32 [M] var) {
  parallel r by M : block {
    shared f32 [T] cn;
    shared f32 [T] mn;
    shared f32 [T] sq;
    parallel t by T : thread {
      mutable f32 n = 0.0f;
      mutable f32 mean = 0.0f;
      mutable f32 m2 = 0.0f;
      foreach k in [cdiv(N, T)] {
        int j = k * T + t;
        if (j < N) {
          f32 v = x.at(r, j);
          n += 1.0f;
          f32 d = v - mean;
          mean += d / n;
          m2 += d * (v - mean);
        }
      }
      cn.at(t) = n;
      mn.at(t) = mean;
      sq.at(t) = m2;
      sync.shared;
      if (t == 0) {
        MERGE
        mu.at(r) = ma;
        var.at(r) = qa / na;
      }
    }
  }
}
"""

MERGES = {
    # (lanes with no element skipped: rows shorter than the block)
    "filtered_128": (
        128,
        """mutable f32 na = 0.0f;
        mutable f32 ma = 0.0f;
        mutable f32 qa = 0.0f;
        foreach u in [128] {
          f32 nb = cn.at(u);
          if (nb > 0.0f) {
            f32 nt = na + nb;
            f32 d = mn.at(u) - ma;
            ma += d * nb / nt;
            qa += sq.at(u) + d * d * na * nb / nt;
            na = nt;
          }
        }""",
    ),
    # (the mean a weighted average, the sums of squares first, no filter: every lane has elements)
    "weighted_32": (
        32,
        """mutable f32 na = 0.0f;
        mutable f32 ma = 0.0f;
        mutable f32 qa = 0.0f;
        foreach u in [32] {
          f32 nb = cn.at(u);
          f32 mb = mn.at(u);
          f32 nt = na + nb;
          qa = qa + sq.at(u) + (mb - ma) * (mb - ma) * (na * nb / nt);
          ma = (na * ma + nb * mb) / nt;
          na = nt;
        }""",
    ),
    # (near miss: Chan's correction dropped, the sums of squares only added: not Chan's combine)
    "uncorrected_32": (
        32,
        """mutable f32 na = 0.0f;
        mutable f32 ma = 0.0f;
        mutable f32 qa = 0.0f;
        foreach u in [32] {
          f32 nb = cn.at(u);
          f32 nt = na + nb;
          ma += (mn.at(u) - ma) * nb / nt;
          qa += sq.at(u);
          na = nt;
        }""",
    ),
    # (near miss: the count starts at 1, not the identity)
    "count_from_one_32": (
        32,
        """mutable f32 na = 1.0f;
        mutable f32 ma = 0.0f;
        mutable f32 qa = 0.0f;
        foreach u in [32] {
          f32 nb = cn.at(u);
          f32 nt = na + nb;
          f32 d = mn.at(u) - ma;
          ma += d * nb / nt;
          qa += sq.at(u) + d * d * na * nb / nt;
          na = nt;
        }""",
    ),
}
FOLDED = ("filtered_128", "weighted_32")
PROGRAM = "\n".join(
    _HEAD.replace("NAME", name)
    .replace("[T]", f"[{t}]")
    .replace("by T", f"by {t}")
    .replace("T + t", f"{t} + t")
    .replace("cdiv(N, T)", f"cdiv(N, {t})")
    .replace("MERGE", merge)
    for name, (t, merge) in MERGES.items()
)


def _lanes(x: torch.Tensor, t: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each lane's (count, mean, m2) over its columns j = k * t + lane, in float64."""
    m, n = x.shape
    xs = x.to(F64).cpu()
    cnt, mean, m2 = (torch.zeros(m, t, dtype=F64) for _ in range(3))
    for lane in range(t):
        cols = xs[:, lane::t]
        if cols.shape[1]:
            cnt[:, lane] = cols.shape[1]
            mean[:, lane] = cols.mean(1)
            m2[:, lane] = ((cols - cols.mean(1, keepdim=True)) ** 2).sum(1)
    return cnt, mean, m2


def _reference(name: str, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    t = MERGES[name][0]
    xd = x.to(F64).cpu()
    if name in FOLDED:
        return xd.mean(1), xd.var(1, unbiased=False)
    cnt, mean, m2 = _lanes(x, t)
    na = torch.full((x.shape[0],), 1.0 if name == "count_from_one_32" else 0.0, dtype=F64)
    ma, qa = torch.zeros_like(na), torch.zeros_like(na)
    for u in range(t):
        nb = cnt[:, u]
        nt = na + nb
        d = mean[:, u] - ma
        ma = ma + d * nb / nt
        qa = qa + m2[:, u] + (0.0 if name == "uncorrected_32" else d * d * na * nb / nt)
        na = nt
    return ma, qa / na


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_lane_merges_in_both_schedules(schedule: str, tmp_path: Path) -> None:
    path = tmp_path / "merge.co"
    path.write_text(PROGRAM)
    mod = load(path, schedule=schedule)
    for m, n in ((7, 300), (3, 77), (5, 45)):
        x = randn(m, n, seed=m * n + 5) * 3 + 2
        for name in MERGES:
            if MERGES[name][0] > n and name != "filtered_128":
                continue  # (lanes without elements: 0 / 0 in the merge as written)
            mu, var = poisoned(m), poisoned(m)
            getattr(mod, name)(x, mu, var)
            ref_mu, ref_var = _reference(name, x)
            assert_near_max(mu, ref_mu.to(mu.device), 1e-5, f"{name} mean at {m} x {n} ({schedule})")
            assert_near_max(var, ref_var.to(var.device), 1e-5, f"{name} var at {m} x {n} ({schedule})")


def _kernel(source: str, name: str) -> str:
    return source.split(f"def {name}_k0(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


def test_chan_merges_fold_and_near_misses_stay() -> None:
    auto = translate_full(PROGRAM, filename="merge.co", schedule="auto").source
    written = translate_full(PROGRAM, filename="merge.co", schedule="source").source
    for name in MERGES:
        assert "for u in" in _kernel(written, name), name
        body = _kernel(auto, name)
        if name in FOLDED:
            assert "for u in" not in body and "_scratch" not in body and "tl.sum(" in body, body
        else:
            assert "for u in" in body, body
