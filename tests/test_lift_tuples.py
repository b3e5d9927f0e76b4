"""Index tuples and named shapes on the tile IR (LANGUAGE.md 7.1, 7.4, lift/loops.py): one name over
a shape of several dimensions (``foreach i in a.span``, ``with idx in [n, m]``), its parts as
indices and view arguments (``x.at(i)``, ``chunkat(p, idx)``), ``idx(k)``, shapes named at host
level and in the kernel, ``|x.span|``.  Numerics against torch, both schedules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

import croq2triton
from croq2triton.api import translate_full
from croq2triton.tir.dump import dump

SCHEDULES = ("source", "auto")

TUPLES = """
__co__ void bump(global s32 [4, 8] a) {
  parallel by 1 {
    l = dma.copy a => local;
    foreach idx in [4, 8] {
      l.data.at(idx) += 256 + idx(0) * 10 + idx(1);
    }
    dma.copy l => a;
  }
}

__co__ void tiles(global f32 [R, 48] x, global f32 [R, 48] y) {
  tiling : [4, 3];
  parallel p by cdiv(R, 8) : block {
    with t in tiling {
      foreach t {
        s = dma.copy.zfill x.subspan(8, 48).at(p, 0).chunkat(t) => shared;
        dma.copy s => y.subspan(8, 48).at(p, 0).chunkat(t);
      }
    }
  }
}

__co__ void scaled(global f32 [6, 5] x, global f32 [6, 5] y) {
  parallel p by 1 : block {
    int n = |x.span|;
    foreach i in x.span {
      y.at(i) = x.at(i) * __to<f32>(n) + __to<f32>(i(1));
    }
  }
}

__co__ void named(global f32 [6, 8] x, global f32 [6, 8] y) {
  parallel p by 1 : block {
    whole : [6, 8];
    with c = {r, k} in whole {
      foreach c {
        y.at(c) = x.at(r, k) + 1.0f;
      }
    }
  }
}
"""


def test_index_tuples_take_the_tile_ir() -> None:
    out = translate_full(TUPLES, filename="tuples.co")
    assert not out.failed, out.failed
    assert not out.failed, out.failed
    assert all(len(v) == 1 for v in out.ir.values()), out.ir


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_index_tuples_compute(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "tuples.co"
    path.write_text(TUPLES)
    mod = croq2triton.load(path, schedule=schedule)
    a = torch.randint(-100, 100, (4, 8), dtype=torch.int32, device=DEVICE)
    want = a.cpu() + 256 + torch.arange(4)[:, None] * 10 + torch.arange(8)[None, :]
    mod.bump(a)  # type: ignore[attr-defined]
    assert torch.equal(a.cpu(), want.int())

    x, y = randn(21, 48, seed=1), poisoned(21, 48)
    mod.tiles(x, y)  # type: ignore[attr-defined]
    assert_close(y, x)

    x, y = randn(6, 5, seed=2), poisoned(6, 5)
    mod.scaled(x, y)  # type: ignore[attr-defined]
    assert_close(y, x * 30 + torch.arange(5, device=DEVICE).float(), atol=1e-5, rtol=1e-5)

    x, y = randn(6, 8, seed=3), poisoned(6, 8)
    mod.named(x, y)  # type: ignore[attr-defined]
    assert_close(y, x + 1)


SPAN_AS = """
__co__ s32 [6, 64] flat_add(s32 [2, 3, 64] lhs, s32 [2, 3, 64] rhs) {
  l = lhs.span_as(6, 64);
  r = rhs.span_as(6, 64);
  s32 [l.span] output;
  parallel p by 6, q by 64
    output.at(p, q) = l.at(p, q) + r.at(p, q);
  return output;
}
"""


def test_a_host_span_as_view_is_a_tensor_of_the_kernels(tmp_path: Path) -> None:
    from croq2triton.runtime.launch import CroqLaunchError

    out = translate_full(SPAN_AS, filename="span_as.co")
    assert len(out.ir["flat_add"]) == 1 and "_rt.span_as(_F, " in out.source
    path = tmp_path / "span_as.co"
    path.write_text(SPAN_AS)
    mod = croq2triton.load(path)
    a = torch.randint(-9, 9, (2, 3, 64), dtype=torch.int32, device=DEVICE)
    b = torch.randint(-9, 9, (2, 3, 64), dtype=torch.int32, device=DEVICE)
    assert torch.equal(mod.flat_add(a, b).cpu(), (a + b).reshape(6, 64).cpu())  # type: ignore[attr-defined]
    with pytest.raises(CroqLaunchError, match="reinterpreted with '.span_as', which needs a contiguous tensor"):
        mod.flat_add(a.transpose(0, 1).contiguous().transpose(0, 1), b)  # type: ignore[attr-defined]


MAPS = """
__co__ void halves(global f32 [R, 32] x, global f32 [R, 32] y) {
  parallel p by cdiv(R, 4) : block {
    a = dma.copy.zfill x.subspan(4, 32).at(p, 0) => shared;
    shared f32 [a.span] out;
    foreach index in [a.span] {
      f32 v = a.data.at(index);
      out.at(index) = (v > 0.0f) ? v : 0.5f * v;
    }
    dma.copy out => y.subspan(4, 32).at(p, 0);
  }
}

__co__ void running(global f32 [8] x, global f32 [8] y) {
  parallel p by 1 : block {
    a = dma.copy x => shared;
    shared f32 [8] out;
    f32 total = 0.0f;
    foreach i in [8] {
      total += a.data.at(i);
      out.at(i) = total;
    }
    dma.copy out => y;
  }
}
"""


def test_a_loop_over_every_element_is_one_tile_statement() -> None:
    out = translate_full(MAPS, filename="maps.co")
    text = dump(out.ir["halves"][0])  # type: ignore[arg-type]
    assert "for " not in text.split("# halves: the launcher")[0], text  # a map: lanes, not a loop
    assert "out: f32[4, 32] = tl.where(v > 0.0, v, 0.5 * v)  @8" in text, text
    assert "for i in [0, 8)" in dump(out.ir["running"][0])  # type: ignore[arg-type]  # carried: a loop


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_maps_and_loops_over_elements_compute(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "maps.co"
    path.write_text(MAPS)
    mod = croq2triton.load(path, schedule=schedule)
    x, y = randn(10, 32, seed=6), poisoned(10, 32)
    mod.halves(x, y)  # type: ignore[attr-defined]
    assert_close(y, torch.where(x > 0, x, 0.5 * x))
    x, y = randn(8, seed=7), poisoned(8)
    mod.running(x, y)  # type: ignore[attr-defined]
    assert_close(y, torch.cumsum(x, 0), atol=1e-5, rtol=1e-5)
