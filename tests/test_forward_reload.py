"""A staged tile read at a lane shifted by a loop counter (a depthwise convolution's taps,
``s.data.at(0, n + k)``), which schedule/forward.py cannot take from the tile in registers: under
``--schedule auto`` the read is a load of the tensor the tile was copied from, at the element the
tile's position came from (no scratch area, no barriers; the kernel then widens).  Refused where
memory is written between the copy and the read, which then keeps the scratch area.  Both schedules
on ragged sizes, NaN-poisoned outputs, against float64 torch."""

from __future__ import annotations

import pytest
import torch
from kernel_util import DEVICE, poisoned

from croq2triton.api import load_source, translate_full
from croq2triton.tir import nodes as N

SOURCE = """
__co__ void halo7(global f32 [C, N] x, global f32 [7] w, global f32 [C, N] out) {
  parallel {c, nb} by [C, cdiv(N, 64)] : block {
    s = dma.copy.zfill x.view(1, 70).from(c, nb * 64 - 3) => shared;
    parallel n by 64 : thread {
      f32 acc = 0.0f;
      foreach k in [7]
        acc = acc + w.at(k) * s.data.at(0, n + k);
      if ((nb # n) < N)
        out.at(c, nb # n) = acc;
    }
  }
}

__co__ void halo_rows(global f16 [M, N] x, global f32 [M, N] out) {
  parallel {bm, nb} by [cdiv(M, 4), cdiv(N, 32)] : block {
    s = dma.copy.zfill x.view(4, 34).from(bm * 4, nb * 32 - 1) => shared;
    parallel {i, n} by [4, 32] : thread {
      f32 acc = 0.0f;
      foreach k in [3]
        acc = acc + s.data.at(i, n + k);
      if ((bm # i) < M && (nb # n) < N)
        out.at(bm # i, nb # n) = acc / 3.0f;
    }
  }
}

__co__ void halo_written(global f32 [C, N] x, global f32 [C, N] out) {
  parallel {c, nb} by [C, cdiv(N, 64)] : block {
    s = dma.copy.zfill x.view(1, 66).from(c, nb * 64 - 1) => shared;
    parallel n by 64 : thread {
      if ((nb # n) < N)
        out.at(c, nb # n) = 0.0f;
      f32 acc = 0.0f;
      foreach k in [3]
        acc = acc + s.data.at(0, n + k);
      if ((nb # n) < N)
        out.at(c, nb # n) = out.at(c, nb # n) + acc;
    }
  }
}
"""


def _module(schedule: str) -> object:
    out = translate_full(SOURCE, filename="t.co", schedule=schedule)
    assert not out.failed, out.failed
    return load_source(out.source, f"forward_reload_{schedule}")


def _taps(x: torch.Tensor, w: torch.Tensor, pad: int) -> torch.Tensor:
    """out[.., n] = sum_k w[k] * x[.., n + k - pad], zero outside."""
    xp = torch.nn.functional.pad(x, (pad, pad))
    n = x.shape[-1]
    return sum(w[k] * xp[..., k : k + n] for k in range(w.shape[0]))  # type: ignore[return-value]


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_shifted_reads_of_a_staged_window(schedule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "1")  # the widened kernels run at these sizes
    mod = _module(schedule)
    torch.manual_seed(0)
    x = torch.randn(5, 301, device=DEVICE, dtype=torch.float64)
    w = torch.randn(7, device=DEVICE, dtype=torch.float64)
    out = poisoned(5, 301)
    mod.halo7(x.float(), w.float(), out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out.double(), _taps(x.float().double(), w.float().double(), 3), rtol=1e-5, atol=1e-5)
    xh = torch.randn(11, 77, device=DEVICE, dtype=torch.float64).half()
    out = poisoned(11, 77)
    mod.halo_rows(xh, out)  # type: ignore[attr-defined]
    want = _taps(xh.double(), torch.ones(3, device=DEVICE, dtype=torch.float64), 1) / 3
    torch.testing.assert_close(out.double(), want, rtol=1e-5, atol=1e-5)
    out = poisoned(5, 301)
    x = x.float()
    mod.halo_written(x, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(
        out.double(), _taps(x.double(), torch.ones(3, dtype=torch.float64), 1), rtol=1e-5, atol=1e-5
    )


def test_auto_reads_the_taps_from_the_tensor() -> None:
    ir = translate_full(SOURCE, filename="t.co", schedule="auto").ir
    for name in ("halo7", "halo_rows"):  # (halo_rows: 34 columns stored of a tile of 64, cols < 34)
        kernel = ir[name][0]
        assert not [a for a in kernel.args if isinstance(a, N.Scratch)], (name, kernel)
    assert "(widened)" in ir["halo7"][0].doc, ir["halo7"][0].doc
    # memory written between the copy and the taps: the staged tile stays in its scratch area
    written = ir["halo_written"][0]
    assert [a for a in written.args if isinstance(a, N.Scratch)], written
