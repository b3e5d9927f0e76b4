"""A row written in guarded chunks (``foreach c in [cdiv(N, 128)] { foreach jj in [128] { j = c * 128 + jj;
if (j < N) ... } }``) beside a loop over ``[0, N)`` runs to ``N`` under auto (schedule/flatnest.py
_trimmed), so both fold into tiles of the row's extent: one kernel holding the row whole. A chunk loop
whose iterations past the row's end do something (count themselves) keeps its extent."""

from __future__ import annotations

import pytest
import torch
from conftest import REPO
from kernel_util import DEVICE, assert_close, load_once, poisoned, randn

from croq2triton.api import translate_full

PROGRAM = REPO / "tests" / "programs" / "chunk_trim.co"


def _kernel(src: str, name: str) -> str:
    start = src.index(f"def {name}(")
    return src[start : src.index("\n\n\n", start)]


def test_the_guarded_chunks_fold_with_the_row() -> None:
    src = translate_full(PROGRAM.read_text(), filename=str(PROGRAM), schedule="auto").source
    whole = _kernel(src, "scale_chunks_k0")
    assert "BLOCK_J: tl.constexpr" in whole and "for " not in whole  # the row whole, no loop
    assert "cdiv(N, 128) * 128" not in src.split("def scale_chunks_counted")[0].split("def scale_chunks_k0")[1]
    # the near miss keeps the chunks' own extent
    assert "tl.cdiv(N, 128) * 128" in src[src.index("def scale_chunks_counted_k0") :]


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("m,n", [(5, 300), (70, 129), (3, 1000)])
def test_chunks_match_float64(schedule: str, m: int, n: int) -> None:
    mod = load_once(PROGRAM, schedule)
    x = randn(m, n, seed=m + n)
    y = poisoned(m, n)
    mod.scale_chunks(x, y)
    xd = x.double()
    assert_close(y, xd * torch.rsqrt((xd * xd).mean(1, keepdim=True) + 1e-5), atol=1e-5, rtol=1e-5)
    y2, cnt = poisoned(m, n), poisoned(m)
    mod.scale_chunks_counted(x, y2, cnt)
    assert_close(y2, xd - xd.mean(1, keepdim=True), atol=1e-5, rtol=1e-5)
    assert_close(cnt, torch.full((m,), float(-(-n // 128) * 128), dtype=torch.float64, device=DEVICE))
