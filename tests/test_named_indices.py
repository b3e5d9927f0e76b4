"""A composed index under a name (``col = g0 # g1 # j``, LANGUAGE.md 7.2) keeps its bound wherever
the name is declared again in another scope (``col = jo # ji`` further on): a name an assignment
declares is immutable in its scope (sema rejects a second assignment there), so each declaration is
its own bounded index. It was refused ("'#' of something that is not a bounded index") when the name
was declared twice in the kernel."""

from __future__ import annotations

import pytest
import torch
from kernel_util import poisoned, randn

from croq2triton.api import load_source, translate_full

SOURCE = """
__co__ void tiles(global f32 [M, 64] x, global f32 [M, 64] y) {
  parallel p by M : block {
    foreach k in [2] {
      parallel {g0, g1} by [2, 2] : group {
        parallel row by 32 : thread {
          foreach j in [8] {
            col = g0 # g1 # j;
            if (row == 0) y.at(p, k # col) = x.at(p, k # col) * 2.0f;
          }
        }
      }
    }
    foreach {jo, ji} in [8, 8] {
      col = jo # ji;
      if (col % 3 == 0) y.at(p, col) = y.at(p, col) + #col;
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_name_declared_again_keeps_each_bound(schedule: str) -> None:
    out = translate_full(SOURCE, filename="named.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"named_indices_{schedule}")
    m = 5
    x = randn(m, 64, seed=3)
    y = poisoned(m, 64)
    mod.tiles(x, y)  # type: ignore[attr-defined]
    want = 2 * x.cpu()
    want[:, ::3] += 64
    torch.testing.assert_close(y.cpu(), want)
