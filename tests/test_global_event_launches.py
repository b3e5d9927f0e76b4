"""A wait on a ``global event`` in a launch after one whose every block triggered it (LANGUAGE.md
7.3: top-level parallels launch in program order, each followed by a device synchronisation; 7.10:
a trigger publishes a generation, a wait waits for it).  The earlier launch has ended, so the
generations its blocks triggered are ready: the wait releases at once and lifts to nothing.  It was
refused as a wait "before this block triggers it", which a launch that never triggers it does not
fit.  Where nothing before the wait surely triggered it, the refusal now says so."""

from __future__ import annotations

import pytest
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full

# the first launch triggers inside its thread level; two later launches wait once each
STAGED = """
__co__ void staged(global f32 [N] x, global f32 [N] y, global f32 [N] z) {
  global event ready;
  parallel p by cdiv(N, 64) : block {
    parallel t by 64 : thread {
      if (p # t < N) x.at(p # t) = x.at(p # t) * 3.0f;
      trigger ready;
    }
  }
  parallel q by cdiv(N, 32) : block, u by 32 : thread {
    wait ready;
    if (q # u < N) y.at(q # u) = x.at(q # u) - 1.0f;
  }
  parallel q by cdiv(N, 32) : block, u by 32 : thread {
    wait ready;
    if (q # u < N) z.at(q # u) = y.at(q # u) + x.at(q # u);
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_wait_in_a_launch_after_the_one_that_triggered_it_translates(schedule: str) -> None:
    out = translate_full(STAGED, filename="staged.co", schedule=schedule)
    assert not out.failed, {k: str(v) for k, v in out.failed.items()}
    mod = load_source(out.source, f"global_event_launches_{schedule}")
    x = randn(150, seed=21)
    x0 = x.clone()
    y, z = poisoned(150), poisoned(150)
    mod.staged(x, y, z)  # type: ignore[attr-defined]
    assert_close(x, x0 * 3)
    assert_close(y, x0 * 3 - 1)
    assert_close(z, (x0 * 3 - 1) + x0 * 3)


SOME_BLOCKS = STAGED.replace("      trigger ready;\n", "      if (p == 0) trigger ready;\n")
TWICE = STAGED.replace(
    "    wait ready;\n    if (q # u < N) y", "    wait ready;\n    wait ready;\n    if (q # u < N) y"
)
ASYNC = STAGED.replace("  parallel p by cdiv(N, 64) : block {", "  parallel.async p by cdiv(N, 64) : block {")


@pytest.mark.parametrize(
    ("source", "line", "message"),
    [
        (SOME_BLOCKS, 11, "a wait on the global event 'ready' that nothing before it triggers"),
        (ASYNC, 11, "a wait on the global event 'ready' that nothing before it triggers"),
        (TWICE, 12, "a wait on the global event 'ready' more often than the earlier launches trigger it (1)"),
    ],
)
def test_waits_no_earlier_launch_surely_released_are_refused_saying_so(source: str, line: int, message: str) -> None:
    out = translate_full(source, filename="staged.co")
    d = out.failed["staged"].diagnostics[0]
    assert message in d.message and "before this block triggers it (blocks" not in d.message, d.message
    assert d.span is not None and d.span.line == line, d.span
