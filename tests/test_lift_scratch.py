"""Buffers in per-program scratch memory and atomics on the tile IR (lift/placement.py,
lift/scratch.py, lift/calls.py, lift/hazards.py): a buffer read at other threads' positions, written
at positions other than each thread's own, or the target of an atomic; a thread's own local array;
atomics on tensors; the barriers between the lanes' accesses.  Numerics against torch on ragged
sizes with NaN-poisoned outputs, in both schedules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

import croq2triton
from croq2triton.api import translate_full
from croq2triton.tir.dump import dump

SCHEDULES = ("source", "auto")

SCRATCH = """
__co__ s32 [16] histogram_shared(s32 [256] input) {
  s32 [16] output;
  parallel p by 256 : thread {
    shared s32 [16] counts;
    if (p < 16) {
      counts.at(p) = 0;
    }
    sync.barrier : block;
    mutable s32 bin = input.at(p) % 16;
    __atomic_add(counts.at(bin), 1);
    sync.barrier : block;
    if (p < 16) {
      output.at(p) = counts.at(p);
    }
  }
  return output;
}

__co__ void reverse(global f32 [N] x, global f32 [N] y) {
  parallel b by cdiv(N, 64) : block, t by 64 : thread {
    shared f32 [64] s;
    int i = b # t;
    s.at(t) = (i < N) ? x.at(i) : 0.0f;
    sync.shared;
    int j = b * 64 + 63 - t;
    if (j < N) y.at(j) = s.at(t);
  }
}

__co__ void stencil(global f32 [N] x, global f32 [N] y) {
  parallel b by cdiv(N, 128) : block, t by 128 : thread {
    shared f32 [130] halo;
    int i = b # t;
    halo.at(t + 1) = (i < N) ? x.at(i) : 0.0f;
    if (t == 0) halo.at(0) = (i > 0) ? x.at(i - 1) : 0.0f;
    if (t == 127) halo.at(129) = (i + 1 < N) ? x.at(i + 1) : 0.0f;
    sync.shared;
    if (i < N) y.at(i) = halo.at(t) + 2.0f * halo.at(t + 1) + halo.at(t + 2);
  }
}

__co__ void local_rows(global f32 [N, 4] x, global f32 [N] y) {
  parallel b by cdiv(N, 32) : block, t by 32 : thread {
    local f32 [4] v;
    int r = b # t;
    foreach k in 4 {
      v.at(k) = (r < N) ? x.at(r, k) : 0.0f;
    }
    f32 acc = 0.0f;
    foreach k in 4 {
      acc += v.at(3 - k) * __to<f32>(k + 1);
    }
    if (r < N) y.at(r) = acc;
  }
}

__co__ void block_sums(global f32 [N] x, global f32 [B] sums, global s32 [B] counts) {
  parallel b by B : block, t by 128 : thread {
    shared f32 [1] total {0.0f};
    foreach k in [cdiv(N, B * 128)] {
      int i = (k * B + b) * 128 + t;
      if (i < N) {
        __atomic_add(total.at(0), x.at(i));
        __atomic_add(counts.at(b), 1);
      }
    }
    sync.shared;
    if (t == 0) sums.at(b) = total.at(0);
  }
}

__co__ void tile_rows(global f16 [M, 64] x, global f16 [M, 64] y) {
  parallel m by cdiv(M, 16) : block, t by 64 : thread {
    s = dma.copy.zfill x.subspan(16, 64).at(m, 0) => shared;
    foreach r in 16 {
      s.data.at(r, t) = s.data.at(r, 63 - t) * 2.0f;
    }
    dma.copy s => y.subspan(16, 64).at(m, 0);
  }
}

__co__ void claims(global s32 [N] keys, global s32 [K] owner, global s32 [N] won) {
  parallel p by cdiv(N, 64) : block, t by 64 : thread {
    int i = p # t;
    if (i < N) {
      mutable s32 old = __atomic_cas(owner.at(keys.at(i)), -1, i);
      won.at(i) = (old == -1) ? 1 : 0;
      __atomic_max(owner.at(keys.at(i)), -2);
    }
  }
}
"""


def _load(tmp_path: Path, schedule: str) -> object:
    path = tmp_path / "scratch.co"
    path.write_text(SCRATCH)
    return croq2triton.load(path, schedule=schedule)


def test_buffers_in_scratch_memory_are_lifted() -> None:
    out = translate_full(SCRATCH, filename="scratch.co")
    assert not out.failed, out.failed
    assert not out.failed, out.failed
    text = dump(out.ir["histogram_shared"][0])  # type: ignore[arg-type]
    for line in [
        "  arg counts_scratch: scratch<i32> 16 per program",
        "  barrier  @11",
        "  atomic add counts_scratch[counts_base + bin] mask mask_2, 1  @11",
    ]:
        assert line in text, text
    text = dump(out.ir["local_rows"][0])  # type: ignore[arg-type]
    assert "  arg v_scratch: scratch<f32> 128 per program (a copy for each of 32 lanes)" in text, text
    # a thread's own array: no lane shares its elements, but Triton may lay out the store and the load of
    # one shape on different threads (lift/hazards.py), so the load waits for the store
    assert "barrier" in text, text
    text = dump(out.ir["stencil"][0])  # type: ignore[arg-type]
    assert text.count("barrier") == 2 * 3, text  # two writes at other lanes' positions, then the reads


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_buffers_in_scratch_memory_compute(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, schedule)
    data = torch.randint(-1000, 1000, (256,), dtype=torch.int32, device=DEVICE)
    data = data.abs()
    got = mod.histogram_shared(data)  # type: ignore[attr-defined]
    assert torch.equal(got.cpu(), torch.bincount((data % 16).cpu(), minlength=16).int())

    x = randn(300, seed=1)
    y = poisoned(300)
    mod.reverse(x, y)  # type: ignore[attr-defined]
    ref = torch.full((320,), float("nan"), device=DEVICE)
    padded = torch.cat([x, torch.zeros(20, device=DEVICE)])
    for b in range(5):
        ref[b * 64 : b * 64 + 64] = padded[b * 64 : b * 64 + 64].flip(0)
    assert_close(y, ref[:300])

    x = randn(301, seed=2)
    y = poisoned(301)
    mod.stencil(x, y)  # type: ignore[attr-defined]
    xp = torch.nn.functional.pad(x, (1, 1))
    assert_close(y, xp[:-2] + 2 * xp[1:-1] + xp[2:], atol=1e-5, rtol=1e-5)

    x = randn(70, 4, seed=3)
    y = poisoned(70)
    mod.local_rows(x, y)  # type: ignore[attr-defined]
    assert_close(y, (x.flip(1) * torch.arange(1, 5, device=DEVICE).float()).sum(1), atol=1e-5, rtol=1e-5)

    x = randn(1000, seed=4)
    sums, counts = poisoned(3), torch.zeros(3, dtype=torch.int32, device=DEVICE)
    mod.block_sums(x, sums, counts)  # type: ignore[attr-defined]
    idx = torch.arange(1000, device=DEVICE)
    owner = (idx // 128) % 3
    assert_close(sums, torch.stack([x[owner == b].sum() for b in range(3)]), atol=1e-4, rtol=1e-4)
    assert torch.equal(counts.cpu(), torch.bincount(owner.cpu(), minlength=3).int())

    h = randn(37, 64, dtype=torch.float16, seed=5)
    out = poisoned(37, 64, dtype=torch.float16)
    mod.tile_rows(h, out)  # type: ignore[attr-defined]
    assert_close(out, (h.float().flip(1) * 2).half())  # every lane reads its row before any writes

    keys = torch.randint(0, 8, (200,), dtype=torch.int32, device=DEVICE)
    owner = torch.full((8,), -1, dtype=torch.int32, device=DEVICE)
    won = torch.full((200,), 7, dtype=torch.int32, device=DEVICE)
    mod.claims(keys, owner, won)  # type: ignore[attr-defined]
    present = torch.unique(keys.cpu())
    assert int(won.sum()) == len(present)  # one winner for each key present
    assert bool((owner.cpu()[present] >= 0).all()) and bool(
        (owner.cpu()[~torch.isin(torch.arange(8), present)] == -1).all()
    )


REFILLED = """
__co__ void chunk_hist(global s32 [N] x, global s32 [B, 8] out) {
  parallel b by B : block, t by 64 : thread {
    foreach r in [2] {
      shared s32 [8] counts {0};
      int i = (b * 2 + r) * 64 + t;
      if (i < N) __atomic_add(counts.at(x.at(i) % 8), 1);
      sync.shared;
      if (t < 8) out.at(b, t) = counts.at(t);
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_buffer_filled_where_declared_is_filled_again_each_iteration(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "refilled.co"
    path.write_text(REFILLED)
    x = torch.randint(0, 1000, (300,), dtype=torch.int32, device=DEVICE)
    out = torch.full((3, 8), -1, dtype=torch.int32, device=DEVICE)
    croq2triton.load(path, schedule=schedule).chunk_hist(x, out)  # type: ignore[attr-defined]
    padded = torch.cat([x.cpu(), torch.full((84,), -1, dtype=torch.int32)]).view(3, 2, 64)[:, 1]
    want = torch.stack([torch.bincount(row[row >= 0] % 8, minlength=8) for row in padded]).int()
    assert torch.equal(out.cpu(), want)  # the second chunk's counts only: the {0} fill starts each one
