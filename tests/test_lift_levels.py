"""Thread levels inside warp and warpgroup levels (LANGUAGE.md 7.3: three unannotated levels are
block, group, thread): every level below the block is a lane axis, the axes of the levels nested
inside made when the outermost are, so a warp's values ([W, 1]) meet its threads' ([W, T]).
Numerics against torch on ragged sizes with NaN-poisoned outputs, in both schedules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

import croq2triton
from croq2triton.api import translate_full
from croq2triton.tir.dump import dump

SCHEDULES = ("source", "auto")

LEVELS = """
__co__ void scale3(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 256), w by 8, t by 32 {
    int i = (p # w) # t;
    if (i < N) y.at(i) = x.at(i) * 2.0f + __to<f32>(w);
  }
}

__co__ void per_warp(global f32 [B, 4, 32] x, global f32 [B, 4] wsum, global f32 [B, 4, 32] y) {
  parallel b by B : block {
    parallel w by 4 : group {
      f32 base = __to<f32>(w) * 10.0f;
      wsum.at(b, w) = base + x.at(b, w, 0);
      parallel t by 32 : thread {
        y.at(b, w, t) = x.at(b, w, t) + base;
      }
    }
  }
}

__co__ void warpgroups(global f16 [M, 256] x, global f16 [M, 256] y) {
  parallel r by M : block, g by 2 : group-4, t by 128 : thread {
    y.at(r, g # t) = x.at(r, g # t) * 3.0f;
  }
}

__co__ void tiles2d(global f32 [M, N] x, global f32 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 8), cdiv(N, 16)] : block, {wy, wx} by [2, 2] : group {
    f32 bias = __to<f32>(wy * 2 + wx);
    parallel {ty, tx} by [4, 8] : thread {
      int m = (bm # wy) # ty;
      int n = (bn # wx) # tx;
      if (m < M && n < N) y.at(m, n) = x.at(m, n) - bias;
    }
  }
}

__co__ void warp_loop(global f32 [R, 128] x, global f32 [R, 128] y) {
  parallel r by R : block, w by 2 : group {
    foreach k in 2 {
      parallel t by 32 : thread {
        y.at(r, (w # k) # t) = x.at(r, (w # k) # t) + __to<f32>(k);
      }
    }
  }
}

__co__ void runtime_warps(global f32 [R, W, 32] x, global f32 [R, W, 32] y) {
  parallel r by R : block, w by W : group, t by 32 : thread {
    y.at(r, w, t) = x.at(r, w, t) + __to<f32>(w);
  }
}
"""


def _load(tmp_path: Path, schedule: str) -> object:
    path = tmp_path / "levels.co"
    path.write_text(LEVELS)
    return croq2triton.load(path, schedule=schedule)


def test_thread_levels_inside_group_levels_are_lanes_of_the_tile_ir() -> None:
    out = translate_full(LEVELS, filename="levels.co")
    assert not out.failed, out.failed
    assert not out.failed, out.failed
    text = dump(out.ir["per_warp"][0])  # type: ignore[arg-type]
    for line in [
        "  w: i32[4, 1] = tl.arange(0, 4)[:, None]  @11",
        "  base: f32[4, 1] = w.to(tl.float32) * 10.0  @12",
        "  t: i32[1, 32] = tl.arange(0, 32)[None, :]  @14",
    ]:
        assert line in text, text
    text = dump(out.ir["tiles2d"][0])  # type: ignore[arg-type]
    assert "  tx: i32[1, 1, 1, 8] = tl.arange(0, 8)[None, None, None, :]  @30" in text, text
    text = dump(out.ir["runtime_warps"][0])  # type: ignore[arg-type]
    assert "  arg W_LANES: constexpr = next_power_of_2(W)" in text, text  # a warp count known at launch
    assert "  mask: i1[W_LANES, 1] = w < W  @50" in text, text
    assert dump(out.ir["scale3"][0]).splitlines()[0].endswith("num_warps 8  @3")  # type: ignore[arg-type]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_thread_levels_inside_group_levels_compute(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, schedule)
    x = randn(1000, seed=1)
    y = poisoned(1000)
    mod.scale3(x, y)  # type: ignore[attr-defined]
    w = (torch.arange(1000, device=DEVICE) // 32 % 8).float()
    assert_close(y, x * 2 + w)

    x3 = randn(5, 4, 32, seed=2)
    wsum, y3 = poisoned(5, 4), poisoned(5, 4, 32)
    mod.per_warp(x3, wsum, y3)  # type: ignore[attr-defined]
    base = torch.arange(4, device=DEVICE).float() * 10
    assert_close(wsum, base + x3[:, :, 0])
    assert_close(y3, x3 + base[None, :, None])

    h = randn(7, 256, dtype=torch.float16, seed=3)
    out = poisoned(7, 256, dtype=torch.float16)
    mod.warpgroups(h, out)  # type: ignore[attr-defined]
    assert_close(out, (h.float() * 3).half())

    x2 = randn(21, 37, seed=4)
    y2 = poisoned(21, 37)
    mod.tiles2d(x2, y2)  # type: ignore[attr-defined]
    rows = torch.arange(21, device=DEVICE) // 4 % 2
    cols = torch.arange(37, device=DEVICE) // 8 % 2
    assert_close(y2, x2 - (rows[:, None] * 2 + cols[None, :]).float())

    xl = randn(3, 128, seed=5)
    yl = poisoned(3, 128)
    mod.warp_loop(xl, yl)  # type: ignore[attr-defined]
    k = (torch.arange(128, device=DEVICE) // 32 % 2).float()
    assert_close(yl, xl + k)

    xr = randn(3, 5, 32, seed=6)
    yr = poisoned(3, 5, 32)
    mod.runtime_warps(xr, yr)  # type: ignore[attr-defined]
    assert_close(yr, xr + torch.arange(5, device=DEVICE).float()[None, :, None])


CLUSTERED = """
__co__ void clustered(global f32 [M, N] x, global f32 [M, N] y) {
  parallel {c} by [2] : cluster {
    parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 32)] : block, {i, j} by [16, 32] : thread {
      if ((bm # i) < M && (bn # j) < N) y.at(bm # i, bn # j) = x.at(bm # i, bn # j) * 2.0f;
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_cluster_level_is_the_block_level_parallel_inside_it(tmp_path: Path, schedule: str) -> None:
    out = translate_full(CLUSTERED, filename="clustered.co")
    assert len(out.ir["clustered"]) == 1 and "clustered" not in out.failed
    path = tmp_path / "clustered.co"
    path.write_text(CLUSTERED)
    x, y = randn(37, 70, seed=7), poisoned(37, 70)
    croq2triton.load(path, schedule=schedule).clustered(x, y)  # type: ignore[attr-defined]
    assert_close(y, x * 2)


COOPERATIVE = """
__co__ void shifted(global f32 [N] x, global f32 [N] tmp, global f32 [N] y) {
  parallel b by cdiv(N, 64) : block<cooperative>, t by 64 : thread {
    int i = b # t;
    if (i < N) tmp.at(i) = x.at(i) * 2.0f;
    sync.barrier : block;
    int j = b # t;
    if (j < N) y.at(j) = tmp.at((j + 1) % N);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_grid_barrier_splits_the_kernel_into_launches(tmp_path: Path, schedule: str) -> None:
    out = translate_full(COOPERATIVE, filename="coop.co")
    assert [k.name for k in out.ir["shifted"]] == ["shifted_k0_phase0", "shifted_k0_phase1"]  # type: ignore[attr-defined]
    path = tmp_path / "coop.co"
    path.write_text(COOPERATIVE)
    x, tmp, y = randn(300, seed=8), poisoned(300), poisoned(300)
    croq2triton.load(path, schedule=schedule).shifted(x, tmp, y)  # type: ignore[attr-defined]
    assert_close(y, torch.roll(x * 2, -1))


# a value read from memory before the barrier (a plain index is computed again: tests/test_grid_values.py)
CROSSING = COOPERATIVE.replace("    sync.barrier", "    f32 s = x.at(0);\n    sync.barrier").replace(
    "tmp.at((j + 1) % N);", "tmp.at((j + 1) % N) + s;"
)
NESTED = COOPERATIVE.replace("    sync.barrier : block;\n", "    if (N > 0) { sync.barrier : block; }\n")


@pytest.mark.parametrize(
    ("source", "message"),
    [(CROSSING, "'s' is declared before a grid-wide barrier and used after it"), (NESTED, "not between top-level")],
)
def test_grid_barriers_that_cannot_split_are_refused(source: str, message: str) -> None:
    out = translate_full(source, filename="coop.co")
    d = out.failed["shifted"].diagnostics[0]
    assert message in d.message and d.span is not None, d.message
