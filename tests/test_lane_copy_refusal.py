"""A per-thread copy of a window whose extent is known only at launch into the thread's own buffer
(``t = dma.copy x.chunkat(p # q) => local;`` with ``N`` a tensor's size: each thread's window is
``N / 32`` elements) translates: each thread's buffer is a tile the launcher fixes, in scratch
memory (lift/lanecopies.py ``lane_copy_of_launch_extent``); it runs right, the floor rule of
``chunkat`` leaving the last ``N % 32`` elements alone.  The form with constant extents (the hint
the refusal used to give) runs right too; a per-thread copy into fresh ``global`` memory is still
refused where it stands."""

from __future__ import annotations

import pytest
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

RUN_TIME = """
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


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_per_thread_copy_of_run_time_extent(schedule: str) -> None:
    out = translate_full(RUN_TIME, filename="lanes.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"lane_copy_run_time_{schedule}")
    for n in (300, 77):
        x = randn(n, seed=n)
        y = poisoned(n)
        mod.tc(x, y)
        k = 32 * (n // 32)  # 32 threads of n // 32 elements each (chunkat's floor division)
        assert_close(y[:k], x[:k] * 2)
        assert y[k:].isnan().all()  # the remainder is no thread's


def test_a_per_thread_copy_into_fresh_global_memory_is_refused() -> None:
    out = translate_full(RUN_TIME.replace("=> local", "=> global"), filename="lanes.co")
    msg = str(out.failed["tc"])
    assert "lanes.co:4:5: error: croq2triton does not translate a per-thread copy into fresh 'global' memory" in msg, (
        msg
    )


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
