"""Loops of a few constant steps whose loads shift along the contiguous axis with the step, unrolled
under auto (schedule/unroll.py): a filter's taps ``foreach k in [5] acc += w.at(c, k) * x.at(c, p + k -
2)`` become ``tl.static_range(0, 5)`` (each window's offset a constant: the windows vectorised and issued
together, no ``cp.async`` pipeline of 4-byte copies through shared memory; compiled for sm_90a), while
a loop whose loads do not shift along the contiguous axis, a loop of run-time extent, one of more than
MOST_STEPS steps and the source schedule keep their loops.  Numerics in both schedules on ragged sizes,
outputs poisoned, against float64 torch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sm90
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

from croq2triton.api import load_source, translate
from croq2triton.schedule.unroll import MOST_STEPS

SCHEDULES = ("source", "auto")

SOURCE = """
__co__ void taps5(global f32 [C, N] x, global f32 [C, 5] w, global f32 [C, N] out) {
  parallel {c, nb} by [C, cdiv(N, 128)] : block, n by 128 : thread {
    int p = nb # n;
    if (p < N) {
      mutable f32 acc = 0.0f;
      foreach k in [5] {
        int src = p + k - 2;
        if (src >= 0 && src < N) acc += w.at(c, k) * x.at(c, src);
      }
      out.at(c, p) = acc;
    }
  }
}

__co__ void taps_long(global f32 [C, N] x, global f32 [C, N] out) {
  parallel {c, nb} by [C, cdiv(N, 128)] : block, n by 128 : thread {
    int p = nb # n;
    if (p < N) {
      mutable f32 acc = 0.0f;
      foreach k in [12] { if (p + k < N) acc += x.at(c, p + k); }
      out.at(c, p) = acc;
    }
  }
}

__co__ void rows3(global f32 [K, N] x, global f32 [N] out) {
  parallel nb by cdiv(N, 128) : block, n by 128 : thread {
    int p = nb # n;
    if (p < N) {
      mutable f32 s = 0.0f;
      foreach k in [3] { s += x.at(k, p); }
      out.at(p) = s;
    }
  }
}

__co__ void taps_runtime(global f32 [C, N] x, global s32 [1] taps, global f32 [C, N] out) {
  parallel {c, nb} by [C, cdiv(N, 128)] : block, n by 128 : thread {
    int p = nb # n;
    if (p < N) {
      int t = taps.at(0);
      mutable f32 acc = 0.0f;
      foreach k in [t] { if (p + k < N) acc += x.at(c, p + k); }
      out.at(c, p) = acc;
    }
  }
}
"""


def _kernels(py: str, name: str) -> list[str]:
    """The source of each Triton kernel of launcher ``name`` (``name_k0``, ``name_k0_narrow``, ..)."""
    return re.findall(rf"\ndef {name}_k\d\w*\(.*?(?=\n@|\n_FN)", py, re.S)


@pytest.fixture(scope="module")
def py() -> dict[str, str]:
    return {s: translate(SOURCE, filename="taps.co", schedule=s) for s in SCHEDULES}


def test_taps_unrolled_under_auto_only(py: dict[str, str]) -> None:
    auto = _kernels(py["auto"], "taps5")
    assert auto and all("tl.static_range(0, 5)" in k for k in auto)
    assert not any("tl.range(0, 5" in k or "in range(0, 5)" in k for k in auto)
    assert all("tl.static_range" not in k for k in _kernels(py["source"], "taps5"))


@pytest.mark.parametrize("name", ["taps_long", "rows3", "taps_runtime"])
def test_other_loops_stay_loops(py: dict[str, str], name: str) -> None:
    kernels = _kernels(py["auto"], name)
    assert kernels and all("tl.static_range" not in k for k in kernels)
    assert MOST_STEPS < 12  # (taps_long: more steps than unrolled)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_numerics(py: dict[str, str], schedule: str) -> None:
    mod = load_source(py[schedule], f"taps_{schedule}")
    c, n = 3, 173  # (ragged: neither a multiple of the 128 lanes nor of the widened rows)
    x, w = randn(c, n, seed=1), randn(c, 5, seed=2)
    out = poisoned(c, n)
    mod.taps5(x, w, out)
    want = torch.nn.functional.conv1d(x.double().cpu()[None], w.double().cpu()[:, None, :], padding=2, groups=c)[0]
    assert_close(out, want, atol=1e-5, rtol=1e-5)

    out = poisoned(c, n)
    mod.taps_long(x, out)
    xp = torch.nn.functional.pad(x.double().cpu(), (0, 12))
    assert_close(out, sum(xp[:, k : k + n] for k in range(12)), atol=1e-5, rtol=1e-5)

    x3 = randn(3, n, seed=3)
    s = poisoned(n)
    mod.rows3(x3, s)
    assert_close(s, x3.double().cpu().sum(0), atol=1e-5, rtol=1e-5)

    out = poisoned(c, n)
    mod.taps_runtime(x, torch.tensor([4], dtype=torch.int32, device=DEVICE), out)
    xp = torch.nn.functional.pad(x.double().cpu(), (0, 4))
    assert_close(out, sum(xp[:, k : k + n] for k in range(4)), atol=1e-5, rtol=1e-5)


def test_taps_compile_to_vector_loads_without_a_shared_pipeline(tmp_path: Path) -> None:
    src = tmp_path / "taps.co"
    src.write_text(SOURCE)
    r = sm90.croq("compile", str(src), "--size", "C=4096", "--size", "N=1024", "--schedule", "auto", "--emit",
                  "ptx", "--func", "taps5")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ld.global.v" in r.stdout  # the aligned window (and its neighbours as far as their offsets allow)
    assert "cp.async" not in r.stdout  # (a run-time tap loop: tl.range pipelined through shared memory)
