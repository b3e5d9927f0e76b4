"""Warp roles the merged program cannot order are refused, never translated in another order
(found by a probe of 57 kernels on 2026-12-06): a role whose event loop sits inside its own
thread-level ``parallel`` was placed before the producer's loop (every output 0.0, in both
schedules); waits and triggers there are now a located refusal.  The same ring with the role's loop
at its own level translates (tests/test_pipelines.py)."""

from __future__ import annotations

from croq2triton import translate_full

NESTED_WAIT = """__co__ void ring(global f32 [K, 32] x, global f32 [32] y) {
  parallel p by 1 : block {
    shared event full[1], empty[1] = ready;
    shared f32 [32] buf;
    parallel w by 2 : group {
      inthreads.async (w == 0) {
        foreach k in [K] {
          wait empty.at(k);
          parallel t by 32 : thread
            buf.at(t) = x.at(k, t) * 2.0f;
          trigger full.at(k);
        }
      }
      inthreads.async (w == 1) {
        parallel t by 32 : thread {
          mutable f32 acc = 0.0f;
          foreach k in [K] {
            wait full.at(k);
            acc += buf.at(t);
            trigger empty.at(k);
          }
          y.at(t) = acc;
        }
      }
    }
  }
}
"""


def test_an_event_loop_inside_a_roles_thread_level_is_refused_at_it() -> None:
    for schedule in ("source", "auto"):
        out = translate_full(NESTED_WAIT, filename="ring.co", schedule=schedule)
        assert "ring" in out.failed, f"translated under {schedule}: the consumer would run before the producer"
        d = out.failed["ring"].diagnostics[0]
        assert "a wait or a trigger of an event inside a thread-level parallel of a warp role" in d.message
        assert d.span is not None and d.span.line == 15
