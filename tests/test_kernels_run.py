"""Kernels that once failed inside Triton instead of running or being refused: atomics at thread
level over ragged sizes (every lane inside the data updates its element once, lanes outside it
write nothing; tl.atomic_cas has no mask), and tiles that outgrow Triton's block limit."""

from __future__ import annotations

import torch
from kernel_util import DEVICE

from croq2triton.api import load_source, translate

CAS = """
__co__ void cas(s32 [N] x, s32 [N] seen, s32 [N] y) {
  parallel p by cdiv(N, 64) : block, t by 64 : thread {
    mutable s32 o = __atomic_cas(x.at(p # t), 1, 7);
    seen.at(p # t) = o;
    __atomic_add(y.at(p # t), 3);
  }
}
"""


def test_compare_and_swap_and_add_on_a_ragged_vector() -> None:
    mod = load_source(translate(CAS, filename="cas.co"), "cas_atomics")
    g = torch.Generator().manual_seed(11)
    n = 150  # not a multiple of 64: the last block's lanes 22..63 are outside the data
    x0 = torch.randint(0, 3, (n + 64,), generator=g, dtype=torch.int32)
    x = x0.clone().to(DEVICE)[:n]  # a view: elements past n exist in memory and must stay as they are
    y0 = torch.randint(-5, 5, (n,), generator=g, dtype=torch.int32)
    y = y0.clone().to(DEVICE)
    seen = torch.full((n,), -99, dtype=torch.int32, device=DEVICE)
    mod.cas(x, seen, y)
    want = torch.where(x0[:n] == 1, 7, x0[:n])
    assert torch.equal(x.cpu(), want)
    assert torch.equal(seen.cpu(), x0[:n])
    assert torch.equal(y.cpu(), y0 + 3)
    whole = x._base if x._base is not None else x
    assert torch.equal(whole.cpu()[n:], x0[n:])  # nothing written past the end


WHOLE = """
__co__ auto whole(s32 [M, N] input) {
  s32 [M, N] output;
  parallel p by 1 : block {
    tile = dma.copy input.subspan(M, N) => shared;
    dma.copy tile => output;
  }
  return output;
}
"""


def test_a_tile_past_tritons_block_limit_is_a_launch_error() -> None:
    from croq2triton.runtime.launch import CroqLaunchError

    mod = load_source(translate(WHOLE, filename="whole.co"), "whole_tile")
    small = torch.arange(40 * 30, dtype=torch.int32).reshape(40, 30).to(DEVICE)
    assert torch.equal(mod.whole(small).cpu(), small.cpu())  # 64 x 32 padded: fine
    big = torch.zeros(1100, 1000, dtype=torch.int32, device=DEVICE)  # 2048 x 1024 padded: 2**21
    try:
        mod.whole(big)
    except CroqLaunchError as e:
        text = e.format()
        assert "the buffer 'tile' (whole.co:5) has extents [1100, 1000] at this launch" in text, text
        assert "padded to [2048, 1024]" in text and "largest block holds 1048576" in text, text
        assert text.startswith("whole.co:2:1: error: whole: "), text
        assert "hint: copy the data in tiles of a fixed size" in text, text
    else:
        raise AssertionError("a 2048 x 1024 block launched")
