"""A value a lane stores into a tensor in one loop and reads back in a later loop is computed again
there, and the first store dropped where the later loop overwrites it (schedule/storefwd.py): a
softmax written in place (the exponentials into ``y``, then ``y`` scaled) is the three-pass softmax,
one read of the row and one write under ``--schedule auto``.  Near misses stay as written: a running
sum stored each step (the value is an accumulator), a read back at another element, a value read from
a tensor the kernel writes, a later loop over another range; a later loop that only reads keeps the
first store.  Every kernel in both schedules against float64 torch, ragged sizes, outputs poisoned."""

from __future__ import annotations

import re
from functools import cache

import pytest
import torch
from kernel_util import assert_near_max, poisoned, randn

from croq2triton.api import load_source, translate_full

SRC = """
// softmax in place: the exponentials stored, then scaled where they lie
__co__ void softmax_in_place(global f32 [M, N] x, global f32 [M, N] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 m = -inf;
      foreach j in [N] { m = __max(m, x.at(r, j)); }
      mutable f32 s = 0.0f;
      foreach j in [N] { f32 e = __exp(x.at(r, j) - m); y.at(r, j) = e; s += e; }
      f32 inv = 1.0f / s;
      foreach j in [N] { y.at(r, j) = y.at(r, j) * inv; }
    }
  }
}

// the same with f16 output: the value read back is the stored one, rounded to f16
__co__ void softmax_in_place_f16(global f32 [M, N] x, global f16 [M, N] y) {
  parallel b by cdiv(M, 32) : block, t by 32 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 m = -inf;
      foreach j in [N] { m = __max(m, x.at(r, j)); }
      mutable f32 s = 0.0f;
      foreach j in [N] { y.at(r, j) = __exp(x.at(r, j) - m); s += __exp(x.at(r, j) - m); }
      foreach j in [N] { f32 v = y.at(r, j); y.at(r, j) = v / s; }
    }
  }
}

// a centred copy stored, then scaled by its norm in place (layer-norm-like)
__co__ void center_scale(global f32 [M, N] x, global f32 [N] w, global f32 [M, N] y) {
  parallel r by M : block {
    mutable f32 mu = 0.0f;
    foreach j in [N] { mu += x.at(r, j); }
    mu = mu / N;
    mutable f32 ss = 0.0f;
    foreach j in [N] { f32 d = x.at(r, j) - mu; y.at(r, j) = d; ss += d * d; }
    f32 rs = __rsqrt(ss / N + 0.00001f);
    foreach j in [N] { y.at(r, j) = y.at(r, j) * rs * w.at(j); }
  }
}

// the later loop only reads y (into z): the first store stays
__co__ void exp_then_scale_out(global f32 [M, N] x, global f32 [M, N] y, global f32 [M, N] z) {
  parallel r by M : block {
    mutable f32 s = 0.0f;
    foreach j in [N] { y.at(r, j) = __exp(x.at(r, j)); s += x.at(r, j); }
    foreach j in [N] { z.at(r, j) = y.at(r, j) * s; }
  }
}

// near miss: a running sum stored each step (the stored value is an accumulator)
__co__ void running_then_scale(global f32 [M, N] x, global f32 [M, N] y) {
  parallel r by M : block {
    mutable f32 acc = 0.0f;
    foreach j in [N] { acc += x.at(r, j); y.at(r, j) = acc; }
    foreach j in [N] { y.at(r, j) = y.at(r, j) / acc; }
  }
}

// near miss: read back at the mirrored element
__co__ void mirrored(global f32 [M, N] x, global f32 [M, N] y) {
  parallel r by M : block {
    foreach j in [N] { y.at(r, j) = x.at(r, j) * 2.0f; }
    foreach j in [N] { y.at(r, j) = y.at(r, N - 1 - j) + 1.0f; }
  }
}

// near miss: the stored value reads a tensor the kernel writes (x scaled in place between the loops)
__co__ void value_of_written(global f32 [M, N] x, global f32 [M, N] y) {
  parallel r by M : block {
    foreach j in [N] { y.at(r, j) = x.at(r, j) + 1.0f; }
    foreach j in [N] { x.at(r, j) = x.at(r, j) * 3.0f; }
    foreach j in [N] { y.at(r, j) = y.at(r, j) * 2.0f; }
  }
}
"""

FORWARDED = ("softmax_in_place", "softmax_in_place_f16", "center_scale", "exp_then_scale_out")


@cache
def _out(schedule: str) -> tuple[str, object]:
    out = translate_full(SRC, filename="storefwd.co", schedule=schedule)
    assert not out.failed, out.failed
    return out.source, load_source(out.source, f"storefwd_{schedule}")


def _kernels(source: str, fn: str) -> str:
    """The text of every ``@triton.jit`` function of ``fn``."""
    found = re.findall(rf"\ndef {fn}_k0\w*\(.*?(?=\n@|\n_FN)", source, flags=re.S)
    assert found, fn
    return re.sub(r"\(\s+", "(", "\n".join(found))  # (a call the formatter wrapped: on one line)


def _softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.double(), 1)


def _center_scale(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xd = x.double()
    d = xd - xd.mean(1, keepdim=True)
    return d * torch.rsqrt((d * d).mean(1, keepdim=True) + 1e-5) * w.double()


# auto at both sizes (a row of 700 past its first block); the source schedule has one kernel a function
# whatever the size, a loop along the row an element a step: the first size only
@pytest.mark.parametrize(
    ("schedule", "m", "n"), [("source", 9, 130), ("auto", 9, 130), ("auto", 3, 700)], ids=lambda v: str(v)
)
def test_each_kernel_computes_what_torch_does(schedule: str, m: int, n: int) -> None:
    _, mod = _out(schedule)
    x = randn(m, n, seed=m + n)
    y = poisoned(m, n)
    mod.softmax_in_place(x, y)  # type: ignore[attr-defined]
    assert_near_max(y, _softmax(x), 1e-5, "softmax_in_place")
    y16 = poisoned(m, n, dtype=torch.float16)
    mod.softmax_in_place_f16(x, y16)  # type: ignore[attr-defined]
    xd = x.double()
    e16 = torch.exp(xd - xd.amax(1, keepdim=True)).half().float()  # the stored f16 exponentials
    want = (e16.double() / torch.exp(xd - xd.amax(1, keepdim=True)).sum(1, keepdim=True)).half()
    assert_near_max(y16, want.double(), 2e-3, "softmax_in_place_f16")
    w = randn(n, seed=3)
    y = poisoned(m, n)
    mod.center_scale(x, w, y)  # type: ignore[attr-defined]
    assert_near_max(y, _center_scale(x, w), 1e-4, "center_scale")
    y, z = poisoned(m, n), poisoned(m, n)
    xs = x * 0.1
    mod.exp_then_scale_out(xs, y, z)  # type: ignore[attr-defined]
    assert_near_max(y, torch.exp(xs.double()), 1e-5, "exp_then_scale_out y")
    assert_near_max(z, torch.exp(xs.double()) * xs.double().sum(1, keepdim=True), 1e-4, "exp_then_scale_out z")
    y = poisoned(m, n)
    mod.running_then_scale(x, y)  # type: ignore[attr-defined]
    cs = x.double().cumsum(1)
    assert_near_max(y, cs / cs[:, -1:], 1e-3, "running_then_scale")
    y = poisoned(m, n)
    mod.mirrored(x, y)  # type: ignore[attr-defined]
    # (in place: past the middle the mirrored element is one this loop wrote already)
    j = torch.arange(n, device=x.device)
    first = (j < n - 1 - j)[None, :]
    assert_near_max(
        y,
        torch.where(
            first,
            x.double().flip(1) * 2 + 1,
            x.double() * 2 + 1 + (~first).double() * (j > n - 1 - j).double()[None, :],
        ),
        1e-6,
        "mirrored",
    )
    x2, y = x.clone(), poisoned(m, n)
    mod.value_of_written(x2, y)  # type: ignore[attr-defined]
    assert_near_max(y, (x.double() + 1) * 2, 1e-6, "value_of_written")
    assert_near_max(x2, x.double() * 3, 1e-6, "value_of_written x")


def test_auto_reads_the_row_once_and_writes_it_once() -> None:
    source, _ = _out("auto")
    for fn in ("softmax_in_place", "softmax_in_place_f16", "center_scale"):
        text = _kernels(source, fn)
        whole = text.split("\ndef ")[1]  # the row in registers: the first variant
        assert "BLOCK_J: tl.constexpr" in whole and "for " not in whole, fn
        assert whole.count("tl.load(x_ptr") == 1 and whole.count("tl.store(y_ptr") == 1, fn
        assert "tl.load(y_ptr" not in text and "debug_barrier" not in text, fn
    text = _kernels(source, "exp_then_scale_out")  # y read again from registers, its store kept
    assert "tl.load(y_ptr" not in text and "tl.store(y_ptr" in text and "tl.store(z_ptr" in text


@pytest.mark.parametrize("fn", ["running_then_scale", "mirrored", "value_of_written"])
def test_near_misses_read_back_what_they_stored(fn: str) -> None:
    source, _ = _out("auto")
    assert "tl.load(y_ptr" in _kernels(source, fn), fn
