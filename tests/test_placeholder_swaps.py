"""``swap`` / ``rotate`` of ``dma.any`` placeholders (LANGUAGE.md 7.8: they move names, not bytes):
a placeholder exchanged with a copy's buffer becomes a buffer of that shape, declared where the
placeholder is, so a loop carries it (a double buffer whose first half is a placeholder; a ring of
three with two placeholders); a swap of placeholders only changes nothing. At host level the names
change places in straight-line code; in a host loop the refusal says why. These were refused ('a
swap of 'a', which is not a whole buffer of known extents'; host level: 'something other than a
buffer or a copy')."""

from __future__ import annotations

import pytest
import torch
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void ring3(global f32 [M, K] x, global f32 [M, K] y) {
  parallel p by cdiv(M, 8) : block {
    with k in [cdiv(K, 16)] {
      f0 = dma.copy.async x.subspan(8, 16).at(p, 0) => shared;
      f1 = dma.copy.async x.subspan(8, 16).at(p, 1) => shared;
      f2 = dma.any;
      foreach k(2:) {
        f2 = dma.copy.async x.subspan(8, 16).at(p, k) => shared;
        wait f0;
        dma.copy f0.data => y.subspan(8, 16).at(p, k - 2);
        rotate(f0, f1, f2);
      }
      wait f0, f1;
      dma.copy f0.data => y.subspan(8, 16).at(p, k(-2));
      dma.copy f1.data => y.subspan(8, 16).at(p, k(-1));
    }
  }
}
__co__ void swapany(global f32 [M, K] x, global f32 [M, K] y, global f32 [M, K] z) {
  parallel p by cdiv(M, 8) : block {
    with k in [cdiv(K, 16)] {
      a = dma.any;
      b = dma.any;
      foreach k {
        b = dma.copy.async x.subspan(8, 16).at(p, k) => shared;
        swap(a, b);
        wait a;
        dma.copy a.data => y.subspan(8, 16).at(p, k);
        if (k > 0) dma.copy b.data => z.subspan(8, 16).at(p, k);
      }
    }
  }
}
__co__ void rotany(global f32 [M, K] x, global f32 [M, K] y, global f32 [M, K] z) {
  parallel p by cdiv(M, 8) : block {
    with k in [cdiv(K, 16)] {
      a = dma.any;
      b = dma.any;
      c = dma.any;
      swap(a, c);
      foreach k {
        c = dma.copy.async x.subspan(8, 16).at(p, k) => shared;
        rotate(a, b, c);
        wait b;
        dma.copy b.data => y.subspan(8, 16).at(p, k);
        if (k > 0) dma.copy a.data => z.subspan(8, 16).at(p, k);
      }
    }
  }
}
__co__ void hostswap(global f32 [M] x, global f32 [M] y) {
  a = dma.any;
  b = dma.copy x => global;
  swap(a, b);
  parallel p by M : block { y.at(p) = a.data.at(p) * 2.0f; }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_placeholders_exchanged_with_buffers(schedule: str) -> None:
    out = translate_full(SOURCE, filename="anys.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"placeholder_swaps_{schedule}")
    for m, k in ((19, 70), (5, 33)):  # ragged rows and columns: the last tiles reach past both
        x = randn(m, k, seed=m)
        y = poisoned(m, k)
        mod.ring3(x, y)
        assert_close(y, x)
        earlier = torch.full_like(x, float("nan"))  # tile k holds tile k - 1; tile 0 is never written
        earlier[:, 16:] = x[:, : k - 16]
        for fn in (mod.swapany, mod.rotany):
            y, z = poisoned(m, k), poisoned(m, k)
            fn(x, y, z)
            assert_close(y, x)
            assert_close(z, earlier)
        y = poisoned(m)
        mod.hostswap(x[:, 0].contiguous(), y)
        assert_close(y, x[:, 0] * 2)


def test_a_host_loop_swapping_a_placeholder() -> None:
    text = """
__co__ void hl(global f32 [M] x, global f32 [M] y) {
  a = dma.any;
  b = dma.any;
  with k in [3] {
    foreach k {
      b = dma.copy x => global;
      swap(a, b);
    }
  }
  parallel p by M : block { y.at(p) = a.data.at(p); }
}
"""
    out = translate_full(text, filename="hl.co")
    msg = str(out.failed["hl"])
    assert "hl.co:8:7: error: a host-level 'swap' of a dma.any placeholder in a host loop" in msg, msg
    assert "^" in msg and "hint: bind a copy to the placeholder before the loop" in msg
