"""``global event`` declared between launches (LANGUAGE.md 7.3: ``shared`` / ``local`` events live
inside a ``parallel``; a global one belongs to the function, its kernels trigger and wait on it).
Triggered and then waited on by a block, it only orders that block's threads: it lifts to nothing,
as the block's own events do (lift/events.py). A wait on it before the block triggers it would wait
for another block's trigger: refused at the wait. Declared ``shared`` or ``local`` between launches,
still an error."""

from __future__ import annotations

import pytest
import torch
from kernel_util import poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.errors import CroqError

PROGRAM = """
__co__ void bump(global f32 [N] x, global f32 [N] y) {
  global event done;
  global event steps[2];
  parallel p by cdiv(N, 64) : block, t by 64 : thread {
    if (p # t < N) y.at(p # t) = x.at(p # t) + 1.0f;
    trigger done;
    wait done;
    trigger steps[1];
    wait steps[1];
    if (p # t < N) y.at(p # t) = y.at(p # t) * 2.0f;
  }
}
"""

WAITS_FIRST = """
__co__ void waits(global f32 [N] x, global f32 [N] y) {
  global event ready;
  parallel p by cdiv(N, 64) : block, t by 64 : thread {
    wait ready;
    if (p # t < N) y.at(p # t) = x.at(p # t);
    trigger ready;
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_global_event_a_block_triggers_then_waits_on_orders_its_threads(schedule: str) -> None:
    out = translate_full(PROGRAM, filename="events.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"global_events_{schedule}")
    x = randn(201, seed=2)
    y = poisoned(201)
    mod.bump(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y.double().cpu(), (x.double().cpu() + 1) * 2)


def test_a_wait_before_the_block_triggers_it_is_refused_at_the_wait() -> None:
    out = translate_full(WAITS_FIRST, filename="events.co")
    err = str(out.failed["waits"])
    assert "events.co:5:5" in err and "wait on the global event 'ready' before this block triggers it" in err, err


@pytest.mark.parametrize("storage", ["shared", "local"])
def test_block_storage_between_launches_is_still_an_error(storage: str) -> None:
    with pytest.raises(CroqError, match=f"events.co:3:3: error: '{storage}' storage is only allowed inside"):
        translate_full(PROGRAM.replace("global event done", f"{storage} event done"), filename="events.co")
