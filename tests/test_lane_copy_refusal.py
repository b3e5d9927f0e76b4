"""A per-thread copy of a window whose extent is known only at launch into the thread's own buffer
(``t = dma.copy x.chunkat(p # q) => local;`` with ``N`` a tensor's size: each thread's window is
``N / 32`` elements) is refused where it stands, saying why (croq2triton keeps each thread's buffer
in constant extents) with a hint whose form translates; that form runs right."""

from __future__ import annotations

import pytest
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

REFUSED = """
__co__ void tc(global f32 [N] x, global f32 [N] y) {
  parallel p by 4 : block, q by 8 : thread {
    t = dma.copy x.chunkat(p # q) => local;
    foreach i in t.span {
      t.data.at(i) = t.data.at(i) * 2.0f;
    }
    dma.copy t.data => y.chunkat(p # q);
  }
}
"""

HINTED = """
__co__ void tc(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 128) : block, q by 8 : thread {
    t = dma.copy x.subspan(16).at(p # q) => local;
    foreach i in t.span {
      t.data.at(i) = t.data.at(i) * 2.0f;
    }
    dma.copy t.data => y.subspan(16).at(p # q);
  }
}
"""


def test_a_per_thread_copy_of_run_time_extent() -> None:
    out = translate_full(REFUSED, filename="lanes.co")
    msg = str(out.failed["tc"])
    assert "lanes.co:4:5: error: croq2triton does not translate a per-thread copy of a window whose extents" in msg
    assert "^~~" in msg and "hint: give each thread's window constant extents (x.subspan(16).at(p # q)" in msg, msg


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_the_hinted_form(schedule: str) -> None:
    out = translate_full(HINTED, filename="lanes.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"lane_copy_hinted_{schedule}")
    for n in (300, 77):
        x = randn(n, seed=n)
        y = poisoned(n)
        mod.tc(x, y)
        assert_close(y, x * 2)
