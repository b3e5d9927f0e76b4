"""Scalar parameters of types Triton's JIT does not give a Python number reach a kernel as their
declared type (LANGUAGE.md 4.2, 4.4, 7.7; emit/triton.py): the JIT makes a Python int an ``i32``
below 2^31 and an ``i64`` from there, so a ``u32`` of 2^31 or more computed in 64 bits (no wrap at
2^32) and one below it in signed 32 bits (``u + v`` overflowed as an ``int``, ``u > v`` compared
signed), and an ``s64`` below 2^31 multiplied in 32 bits; it makes a Python float an ``fp32``, so
an ``f64`` parameter is declared ``tl.float64`` in the kernel's signature (compiled, ``c`` was the
f32 nearest it: 0.1 * 1e10 was 1000000014).  Each row 0 is host code, row 1 the
kernel's, both checked against C's rule."""

from __future__ import annotations

import pytest
import torch
from kernel_util import DEVICE

from croq2triton.api import load_source, translate_full

SRC = """
__co__ void args(global s64 [2, 9] o, u32 u, u32 v, s64 w, u64 z, f64 c) {
  o.at(0, 0) = u + v;
  o.at(0, 1) = u > v ? 1 : 0;
  o.at(0, 2) = u / 3u;
  o.at(0, 3) = u >> 4;
  o.at(0, 4) = u * v;
  o.at(0, 5) = w * w;
  o.at(0, 6) = __to<s64>(z >> 1);
  o.at(0, 7) = __to<s64>(z % 1000);
  o.at(0, 8) = __to<s64>(c * 10000000000.0);
  parallel by 1 : block, t by 1 : thread {
    o.at(1, 0) = u + v;
    o.at(1, 1) = u > v ? 1 : 0;
    o.at(1, 2) = u / 3u;
    o.at(1, 3) = u >> 4;
    o.at(1, 4) = u * v;
    o.at(1, 5) = w * w;
    o.at(1, 6) = __to<s64>(z >> 1);
    o.at(1, 7) = __to<s64>(z % 1000);
    o.at(1, 8) = __to<s64>(c * 10000000000.0);
  }
}
"""

_MOD = None


def _args():  # noqa: ANN202
    global _MOD
    if _MOD is None:
        _MOD = load_source(translate_full(SRC, filename="args.co").source, "kernel_args", origin="args.co")
    return _MOD.args


def s64(x: int) -> int:
    x %= 1 << 64
    return x - (1 << 64) if x >= 1 << 63 else x


@pytest.mark.parametrize(
    ("u", "v", "w", "z"),
    [
        (3000000000, 4000000000, 1 << 20, (1 << 63) + 7),
        (2147483647, 2147483647, -3, 10),
        (5, 2147483649, 3000000000, (1 << 64) - 1),
        (4294967295, 1, 46341, 1 << 40),
    ],
)
def test_wide_and_unsigned_arguments_compute_as_their_types(u: int, v: int, w: int, z: int) -> None:
    o = torch.full((2, 9), -12345, dtype=torch.int64, device=DEVICE)
    _args()(o, u, v, w, z, 0.1)
    m32 = (1 << 32) - 1
    want = [(u + v) & m32, int(u > v), u // 3, u >> 4, (u * v) & m32, s64(w * w), z >> 1, z % 1000, 1000000000]
    host, kernel = o.cpu().tolist()
    assert host == want, (host, want)
    assert kernel == want, (kernel, want)


def test_the_kernel_converts_them_where_it_begins() -> None:
    src = translate_full(SRC, filename="args.co").source
    kernel = src[src.index("def args_k0(") : src.index("@_rt.launcher")]
    for line in ("u = tl.cast(u, tl.uint32)", "v = tl.cast(v, tl.uint32)", "w = tl.cast(w, tl.int64)"):
        assert line in kernel, kernel
    assert kernel.startswith("def args_k0(o_ptr, o_stride_0, o_stride_1, u, v, w, z, c: tl.float64):"), kernel
