"""Three unannotated levels are ``block``, ``group``, ``thread`` (LANGUAGE.md 7.3, ``pbfill``); a
``group`` the default mapping infers binds no thread count (upstream checks only units the source
annotates, ``IsEnforced``): ``parallel p by .., q by 4, r by 6`` runs its 24 threads a block as the
lanes of its tiles. An annotated ``group`` with 6 threads is still an error."""

from __future__ import annotations

import pytest
import torch
from kernel_util import poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.errors import CroqError

SOURCE = """
__co__ void scale3(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 24), q by 4, r by 6 {
    int i = p * 24 + q * 6 + r;
    if (i < N) y.at(i) = 3.0f * x.at(i) + q;
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_an_inferred_group_of_six_threads_runs(schedule: str) -> None:
    out = translate_full(SOURCE, filename="groups.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"inferred_groups_{schedule}")
    n = 101
    x = randn(n, seed=9)
    y = poisoned(n)
    mod.scale3(x, y)  # type: ignore[attr-defined]
    q = (torch.arange(n) % 24) // 6
    torch.testing.assert_close(y.cpu(), 3 * x.cpu() + q.float())


def test_an_annotated_group_of_six_threads_is_an_error() -> None:
    with pytest.raises(CroqError, match="a warp \\('group'\\) are a multiple of 32, but this thread level has 6"):
        translate_full(SOURCE.replace("q by 4, r by 6", "q by 4 : group, r by 6"), filename="groups.co")
