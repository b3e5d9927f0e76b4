"""``v(k)`` of a bounded variable is the index ``k`` (``k < 0``: ``#v + k``), LANGUAGE.md 7.2 and
upstream's getith, not the current value: inside a loop over ``k``, ``k(0)`` is 0 and ``k(1)`` is 1
(it was the loop's counter for ``k(0)``, a silent difference). An index tuple's ``t(0)`` stays its
first component's current value."""

from __future__ import annotations

import pytest
import torch
from kernel_util import poisoned

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void picks(global s32 [N, 4] y) {
  parallel p by N : block {
    foreach k in [5] {
      if (k == 3) {
        y.at(p, 0) = k(0);
        y.at(p, 1) = k(1);
        y.at(p, 2) = k(-1);
        y.at(p, 3) = p(0) + p(-1) * 10;
      }
    }
  }
}

__co__ void parts(global s32 [N, 2] y) {
  parallel p by N : block {
    with idx = {a, b} in [3, 4] {
      foreach idx {
        if (a == 2 && b == 1) {
          y.at(p, 0) = idx(0);
          y.at(p, 1) = idx(1);
        }
      }
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_getith_of_a_bounded_variable_is_the_index(schedule: str) -> None:
    out = translate_full(SOURCE, filename="getith.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"getith_{schedule}")
    n = 3
    y = poisoned(n, 4, dtype=torch.int32)
    mod.picks(y)  # type: ignore[attr-defined]
    assert y.tolist() == [[0, 1, 4, (n - 1) * 10]] * n
    z = poisoned(n, 2, dtype=torch.int32)
    mod.parts(z)  # type: ignore[attr-defined]
    assert z.tolist() == [[2, 1]] * n
