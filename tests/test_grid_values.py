"""Plain values across a cooperative grid barrier (LANGUAGE.md 7.3: under ``block<cooperative>``,
``sync.barrier : block`` waits for every block of the grid; lift/gridsync.py splits the kernel into
one launch a phase).  A value a thread computed before the barrier from its indices and the
parameters is its value after it too: the later phase computes it again (it was refused with
"recompute it").  A value read from memory, or assigned again, is still refused, saying why."""

from __future__ import annotations

import pytest
import torch
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

# a declared index and a value derived from it and from a scalar parameter, used after each of
# two barriers (the second phase uses 'i', the third 'j', which reads 'i')
TWO_BARRIERS = """
__co__ void mirror(global f32 [N] x, global f32 [N] tmp, global f32 [N] y, int shift) {
  parallel b by cdiv(N, 32) : block<cooperative>, t by 32 : thread {
    int i = b # t;
    j = (i + shift) % N;
    if (i < N) tmp.at(i) = x.at(i) + 1.0f;
    sync.barrier : block;
    if (i < N) y.at(i) = tmp.at(N - 1 - i);
    sync.barrier : block;
    if (i < N) tmp.at(j) = y.at(i) * 2.0f;
  }
}
"""


def _ref_mirror(x: torch.Tensor, shift: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = x.numel()
    tmp = x.float() + 1  # (as f32: the kernel's sum)
    y = torch.flip(tmp, [0])
    tmp2 = torch.empty_like(tmp)
    idx = (torch.arange(n) + shift) % n
    tmp2[idx] = y * 2
    return y, tmp2


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_values_computed_before_grid_barriers_are_used_after_them(schedule: str) -> None:
    out = translate_full(TWO_BARRIERS, filename="mirror.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    names = {k.name for k in out.ir["mirror"]}  # type: ignore[attr-defined]
    assert {f"mirror_k0_phase{k}" for k in range(3)} <= names, names  # one launch a phase
    mod = load_source(out.source, f"grid_values_{schedule}")
    x, tmp, y = randn(77, seed=11), poisoned(77), poisoned(77)
    mod.mirror(x, tmp, y, 5)  # type: ignore[attr-defined]
    want_y, want_tmp = _ref_mirror(x.cpu(), 5)
    assert_close(y, want_y)
    assert_close(tmp, want_tmp)


READ = """
__co__ void read(global f32 [N] x, global f32 [N] y) {
  parallel b by cdiv(N, 32) : block<cooperative>, t by 32 : thread {
    f32 v = x.at(0);
    if (b # t < N) x.at(b # t) = 0.0f;
    sync.barrier : block;
    if (b # t < N) y.at(b # t) = v;
  }
}
"""

ASSIGNED = """
__co__ void bumped(global f32 [N] x, global f32 [N] y) {
  parallel b by cdiv(N, 32) : block<cooperative>, t by 32 : thread {
    mutable int i = b # t;
    if (i < N) y.at(i) = x.at(i);
    sync.barrier : block;
    i = i + 1;
    if (i < N) y.at(i) = y.at(i) + 1.0f;
  }
}
"""


@pytest.mark.parametrize(
    ("source", "fn", "name", "why"),
    [
        (READ, "read", "v", "only a value computed from parameters, indices and other such values"),
        (ASSIGNED, "bumped", "i", "it is assigned more than once"),
    ],
)
def test_values_that_cannot_be_computed_again_are_refused_saying_why(source: str, fn: str, name: str, why: str) -> None:
    out = translate_full(source, filename="coop.co")
    d = out.failed[fn].diagnostics[0]
    assert f"'{name}' is declared before a grid-wide barrier and used after it" in d.message, d.message
    assert why in d.message and d.span is not None and d.span.line in (7, 8), d.message
