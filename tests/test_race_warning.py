"""Threads that write one element of a buffer in scratch memory with values that differ between
them, none singled out by a condition, race (CUDA keeps one thread's value, and a read-modify-write
loses the others' updates): the translation keeps one value as a GPU does, and says so with a
warning at the statement (it was silent). One thread writing, every thread writing the same value,
or an atomic: no warning."""

from __future__ import annotations

import pytest

from croq2triton.api import translate_full

PROGRAM = """
__co__ void f(global f32 [64] x, global f32 [1] y) {
  parallel p by 1 : block {
    shared f32 [1] s;
    parallel t by 64 : thread {
      WRITE
    }
    y.at(0) = s.at(0);
  }
}
"""


def _warnings(write: str) -> list[str]:
    out = translate_full(PROGRAM.replace("WRITE", write), filename="race.co")
    assert not out.failed, out.failed
    return [d.format() for d in out.diagnostics if d.severity == "warning" and "a race" in d.message]


@pytest.mark.parametrize("write", ["s.at(0) = s.at(0) + x.at(t);", "s.at(0) = x.at(t) * 2.0f;"])
def test_threads_writing_one_element_with_their_own_values_race(write: str) -> None:
    (shown,) = _warnings(write)
    assert shown.startswith("race.co:6:7: warning: threads write one element of 's' with values that differ")
    assert "hint: add with '__atomic_add', or let one thread write" in shown


@pytest.mark.parametrize(
    "write",
    [
        "if (t == 0) s.at(0) = x.at(t);",
        "s.at(0) = x.at(0) + 1.0f;",
        "__atomic_add(s.at(0), x.at(t));",
    ],
)
def test_one_writer_one_value_or_an_atomic_does_not_race(write: str) -> None:
    assert _warnings(write) == []
