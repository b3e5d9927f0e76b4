"""A kernel's `bool` scalar that folds to a constant, read by `if / else` and `?:` (LANGUAGE.md 3.3,
4.1), in a kernel split into its interior and edge programs (schedule/interior.py): the interior's
masks drop the proven bounds, and a mask that reads the scalar keeps reading what it became (a
`bool k = true;` was taken for a proven bound there: an internal error, 'k' read before it is
defined)."""

from __future__ import annotations

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void branch(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 64) : block, t by 64 : thread {
    bool yes = KVALUE;
    if (yes) y.at(p # t) = x.at(p # t) + 1.0f;
    else y.at(p # t) = x.at(p # t) * 3.0f;
  }
}
__co__ void pick(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    bool yes = KVALUE;
    if (p # t < N) y.at(p # t) = yes ? x.at(p # t) - 2.0f : -x.at(p # t);
  }
}
__co__ void both(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    bool yes = KVALUE;
    bool no = !yes;
    if (no) y.at(p # t) = 0.0f;
    if (yes && p # t < N) y.at(p # t) = x.at(p # t) * 0.5f;
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("value", ["true", "false", "1 > 0", "0 > 1"])
def test_a_constant_bool_picks_the_branch(value: str, schedule: str) -> None:
    text = SOURCE.replace("KVALUE", value)
    out = translate_full(text, filename="bools.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"bools_{schedule}_{abs(hash(value))}")
    on = value in ("true", "1 > 0")
    for n in (37, 200):  # a ragged edge program, and interior ones
        x = randn(n, seed=n)
        y = poisoned(n)
        mod.branch(x, y)
        assert_close(y, x + 1.0 if on else x * 3.0)
        y = poisoned(n)
        mod.pick(x, y)
        assert_close(y, x - 2.0 if on else -x)
        y = poisoned(n)
        mod.both(x, y)
        assert_close(y, x * 0.5 if on else torch.zeros(n, device=DEVICE))
