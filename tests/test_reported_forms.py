"""Valid forms reported refused (issue 28): a thread-level mutable that a loop advances and uses as
an index (the verifier read it as its first value; reads past the tensor are zero, LANGUAGE.md
14.3).  Each runs and is checked against torch in float64 on ragged sizes, outputs poisoned with
NaN first."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

from croq2triton.api import load, translate_full
from croq2triton.errors import CroqError, CroqSemanticError

WALK = """
__co__ void walk(global s32 [G] offs, global f32 [S, D] x, global f32 [G, D] out) {
  parallel g by G : block
    parallel d by 32 : thread {
      mutable int s = offs.at(g);
      f32 acc = 0.0f;
      foreach r in [4] {
        if (d < D) acc = acc + x.at(s, d);
        s = s + 1;
      }
      if (d < D) out.at(g, d) = acc;
    }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_mutable_index_a_loop_advances_reads_zero_past_the_tensor(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "walk.co"
    path.write_text(WALK)
    m = load(path, schedule=schedule)
    s_rows, d, offs = 11, 19, [0, 3, 7, 9, 10, 2, 8]  # rows 11.. are past x: they read zero
    x = randn(s_rows, d, seed=5)
    out = poisoned(len(offs), d)
    m.walk(torch.tensor(offs, dtype=torch.int32, device=DEVICE), x, out)
    xd = x.double()
    want = torch.stack(
        [
            sum((xd[r] if r < s_rows else torch.zeros(d, dtype=torch.float64, device=DEVICE)) for r in range(o, o + 4))
            for o in offs
        ]
    )
    assert_close(out, want, rtol=1e-5)


# ---- a negative loop step: the grammar takes it, LANGUAGE.md gives it no meaning ----------------

NEGATIVE_STEP = """
__co__ void rev(global f32 [N] a, global f32 [N] out) {
  parallel t by 1 : thread {
    with k in [N] {
      foreach k(::-1)
        out.at(k) = a.at(k);
    }
  }
}
"""


def test_a_negative_loop_step_is_refused_precisely(tmp_path: Path) -> None:
    path = tmp_path / "rev.co"
    path.write_text(NEGATIVE_STEP)
    out = translate_full(NEGATIVE_STEP, filename=str(path))
    assert set(out.failed) == {"rev"}
    err = out.failed["rev"]
    assert not isinstance(err, CroqSemanticError)  # valid Croqtile, not the user's mistake
    (d,) = err.diagnostics
    assert d.span is not None and (d.span.line, d.span.col) == (5, 19)
    assert "a loop step of -1 over 'k' (only steps of 1 or more translate" in d.message
    assert d.hint is not None and "n - 1 - k" in d.hint


# ---- a named shape as the bounds of a multi-dimensional parallel --------------------------------

NAMED_BOUNDS = """
__co__ void tup(global f32 [M, N] a, global f32 [M, N] out) {
  ituple tiles = {cdiv(M, 4), cdiv(N, 8)};
  parallel {i, j} by [tiles] : block
    parallel {r, c} by [4, 8] : thread
      out.at(i # r, j # c) = a.at(i # r, j # c) * 3.0f - 1.0f;
}
__co__ void span(global f32 [M, N] a, global f32 [M, N] out) {
  tiles : [cdiv(N, 16), (M + 1) / 2];
  parallel {j, i} by [tiles] : block
    parallel {c, r} by [16, 2] : thread
      out.at(i # r, j # c) = a.at(i # r, j # c) + 2.0f;
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_named_shape_in_brackets_bounds_a_parallel(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "named.co"
    path.write_text(NAMED_BOUNDS)
    m = load(path, schedule=schedule)
    a = randn(13, 21, seed=7)
    out = poisoned(13, 21)
    m.tup(a, out)
    assert_close(out, a.double() * 3 - 1, atol=1e-6, rtol=1e-6)
    out = poisoned(13, 21)
    m.span(a, out)
    assert_close(out, a.double() + 2, atol=1e-6, rtol=1e-6)


def test_a_named_shape_without_brackets_is_a_syntax_error_with_a_hint() -> None:
    src = NAMED_BOUNDS.replace("by [tiles]", "by tiles")
    with pytest.raises(CroqError) as err:
        translate_full(src, filename="named.co")
    (d, *_) = err.value.diagnostics
    assert d.span is not None and (d.span.line, d.span.col) == (4, 22)
    assert d.message == "syntax error, unexpected identifier 'tiles', expecting '['"
    assert d.hint is not None and "write 'by [tiles]'" in d.hint
