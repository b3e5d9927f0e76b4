"""Operators that group otherwise than in C (LANGUAGE.md 5, sema/bitgroups.py): ``& ^ |`` bind tighter
than ``+``, ``<<`` and ``==`` and share one level; unary ``!`` and ``-`` apply to a whole ``&``. The
program is valid and computes the Croqtile grouping; ``check`` warns where C would have grouped the
same text otherwise, and stays quiet where the groupings agree or parentheses say which is meant."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.cli import main

KERNEL = """__co__ void f(global s32 [N] x, global s32 [N] y) {{
  parallel p by cdiv(N, 64) : block, t by 64 : thread {{
    if (p # t < N) {{
      int v = x.at(p # t);
      y.at(p # t) = {expr};
    }}
  }}
}}
"""


def _check(capsys: pytest.CaptureFixture[str], tmp_path: Path, expr: str) -> str:
    path = tmp_path / "t.co"
    path.write_text(KERNEL.format(expr=expr))
    rc = main(["check", str(path)])
    out, err = capsys.readouterr()
    assert rc == 0 and "Traceback" not in err, err
    return out + err


@pytest.mark.parametrize(
    ("expr", "reads"),
    [
        ("v ^ v >> 16", "'(v ^ v) >> 16'"),
        ("v & 6 == 6", "'(v & 6) == 6'"),
        ("v + v & 3", "'v + (v & 3)'"),
        ("v << 1 | 1", "'v << (1 | 1)'"),
        ("v | v & 3", "'(v | v) & 3'"),
        ("!v & 1", "'!(v & 1)'"),
        ("v * 3 ^ 5", "'v * (3 ^ 5)'"),
    ],
)
def test_a_grouping_c_reads_otherwise_warns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, expr: str, reads: str
) -> None:
    out = _check(capsys, tmp_path, expr)
    assert "t.co:5:21: warning: " in out and f"this reads as {reads}" in out and "LANGUAGE.md 5" in out, out
    assert "hint: add parentheses" in out


@pytest.mark.parametrize(
    "expr", ["(v ^ v) >> 16", "v ^ (v >> 16)", "(v & 6) == 6", "v & 3 & 5", "v + v * 3 << 2 == 4", "!(v & 1)", "~v & 3"]
)
def test_groupings_c_reads_alike_do_not_warn(capsys: pytest.CaptureFixture[str], tmp_path: Path, expr: str) -> None:
    assert "warning" not in _check(capsys, tmp_path, expr)


def test_the_kernel_computes_the_croqtile_grouping() -> None:
    src = KERNEL.format(expr="(v ^ v >> 2) + (v & 6 == 6) * 1000 + (v + v & 3) * 7")
    out = translate_full(src, filename="t.co", schedule="auto")
    mod = load_source(out.source, "bit_groups")
    x = randn(301, dtype=torch.int32, seed=3)
    y = poisoned(301, dtype=torch.int32)
    mod.f(x, y)
    v = x.cpu().long()
    want = ((v ^ v) >> 2) + ((v & 6) == 6).long() * 1000 + (v + (v & 3)) * 7
    assert torch.equal(y.cpu().long(), want)
