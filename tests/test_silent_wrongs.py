"""Programs that croq2triton once translated into wrong results or broken modules without a word.

Each test runs a small program written for it in both schedules (and under the OOB sanitizer
where reads may leave a tensor) on random data with ragged sizes, outputs poisoned first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import REPO
from kernel_util import assert_close, poisoned, randn

import croq2triton

SCHEDULES = ["source", "auto"]


def _load(tmp_path: Path, text: str, schedule: str, oob_fill: str = "zero", stem: str = "prog") -> Any:
    path = tmp_path / f"{stem}.co"
    path.write_text(text)
    return croq2triton.load(path, schedule=schedule, oob_fill=oob_fill)


def _compile(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``croq2triton compile`` for sm_90a in a fresh process (no interpreter)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "CROQ2TRITON_NUM_SMS")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "croq2triton", "compile", str(path), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


# ------------------------------------------------------------------ conditions on loop counters

COUNTERS = """
__co__ void on_counter(global f32 [N, 4] x, global f32 [N] out) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    mutable f32 acc = 1.0f;
    foreach k in [4] {
      if (k == 0) acc += x.at(p # t, k);
      else acc = acc * 2.0f;
    }
    if (p # t < N) out.at(p # t) = acc;
  }
}

__co__ void on_either(global f32 [N, 4] x, global f32 [N] out) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    mutable f32 acc = 1.0f;
    foreach k in [4] {
      if (k == 0 || k == 3) acc += x.at(p # t, k);
      else if (!(k < 2)) acc = acc * 3.0f;
      else acc = acc * 2.0f;
    }
    if (p # t < N) out.at(p # t) = acc;
  }
}

__co__ void on_value(global f32 [N] x, global f32 [N] out) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    if (p # t < N) {
      if (!(x.at(p # t) < 0.5f)) out.at(p # t) = x.at(p # t);
      else out.at(p # t) = -1.0f;
    }
  }
}

__co__ void divisions(global s32 [N, 8] out) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    foreach k in [8]
      if (p # t < N) out.at(p # t, k) = (k - 5) / 2 * 10 + (k - 5) % 3;
  }
}
"""


@pytest.mark.parametrize("oob_fill", ["zero", "nan"])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_condition_on_a_loop_counter_takes_one_branch(tmp_path: Path, schedule: str, oob_fill: str) -> None:
    # in the interpreter a loop counter is a Python int: `~(k == 0)` was -2 (true), both branches ran
    mod = _load(tmp_path, COUNTERS, schedule, oob_fill)
    n = 37
    x, out = randn(n, 4, seed=21), poisoned(n)
    mod.on_counter(x, out)
    assert_close(out, (1 + x[:, 0].double()) * 8, atol=1e-5, rtol=1e-5)
    out = poisoned(n)
    mod.on_either(x, out)
    assert_close(out, (1 + x[:, 0].double()) * 2 * 3 + x[:, 3].double(), atol=1e-5, rtol=1e-5)
    v, out = randn(n, seed=22), poisoned(n)
    mod.on_value(v, out)
    assert_close(out, torch.where(v >= 0.5, v, -1.0), atol=0, rtol=0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_integer_division_of_loop_counters_truncates(tmp_path: Path, schedule: str) -> None:
    # `(k - 5) / 2` of a Python int floors in the interpreter; Croqtile's `/` and `%` truncate (as C)
    mod = _load(tmp_path, COUNTERS, schedule)
    out = torch.full((37, 8), -999, dtype=torch.int32)
    mod.divisions(out)
    k = torch.arange(8) - 5
    want = torch.div(k, 2, rounding_mode="trunc") * 10 + torch.fmod(k, 3)
    assert torch.equal(out, want.to(torch.int32).expand(37, 8))


@pytest.mark.slow
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_negations_and_divisions_compile_for_sm90(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "counters.co"
    path.write_text(COUNTERS)
    r = _compile(path, "--size", "N=37", "--schedule", schedule)
    assert r.returncode == 0, r.stderr
    assert all(f"{f}_k0" in r.stdout for f in ("on_counter", "on_either", "on_value", "divisions")), r.stdout
