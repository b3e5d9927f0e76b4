"""Probe 9 (issue 28): programs that are not valid Croqtile, each breaking a static rule of
LANGUAGE.md that the earlier probes' invalid sets did not write: '#' of an int parameter (7.2: '#'
is the bound of a bounded variable), an MMA store of an accumulator never made, 'foreach i in x' of a
tensor (7.4: 'in' takes a shape), asynchronous global-to-global copies (7.8), '#*' (7.2), ituple
arrays and ranks (4.1, 7.1), literals with leading zeros (3.3), a range step that is not a literal
(7.4), '.stride' (3.5), '.load' of dma, sparsity other than 2:4, eviction hints off tma.load, a
trigger after a waited future (7.10), ... each rejected by ``croq2triton check`` with a located
``file:line:col: error:`` at the construct and never a traceback.  The first three passed through or
were reported as refusals (not translated) before this probe."""

from __future__ import annotations

from pathlib import Path

import pytest
from probe_util import assert_rejected_at

# (name, program, where the error points, a phrase of its message)
INVALID = [
    (
        "hash_of_int_parameter",
        """__co__ void f(global f32 [N] x, int k) {
  parallel p by 4 : block {
    x.at(p) = #k;
  }
}""",
        "3:15",
        "'#k': 'k' is an int, not a bounded index",
    ),
    (
        "mma_store_undeclared",
        """__co__ void f(global f16 [64, 16] a, global f16 [64, 16] b, global f32 [64, 64] c) {
  parallel p by 1 : block {
    mma.store acc, c;
  }
}""",
        "3:15",
        "'acc' is not declared",
    ),
    (
        "foreach_in_tensor",
        """__co__ void f(global f32 [64] x) {
  parallel p by 1 : block {
    foreach i in x x.at(i) = 1.0f;
  }
}""",
        "3:18",
        "'x' is spanned data (a tensor or buffer), not a shape",
    ),
    (
        "async_global_to_global",
        """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel p by 1 : block {
    c = dma.copy.async x => y;
    wait c;
  }
}""",
        "3:5",
        "a GPU has no asynchronous global-to-global copy",
    ),
    (
        "break_outside_loop",
        """__co__ void f(global f32 [N] x) {
  parallel p by N : block {
    if (p > 3) break;
    x.at(p) = 1.0f;
  }
}""",
        "3:16",
        "'break' outside a loop",
    ),
    (
        "hash_times_rejected",
        """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel p by 4 : block {
    dma.copy x.chunkat(p #* 2) => y.chunkat(p #* 2);
  }
}""",
        "3:24",
        "'#*' is not supported",
    ),
    (
        "ituple_array",
        """__co__ void f(global f32 [N] x) {
  ituple t[2];
  parallel p by N : block x.at(p) = 1.0f;
}""",
        "2:11",
        "no ituple array",
    ),
    (
        "shape_plus_longer_ituple",
        """__co__ void f(global f32 [N] x) {
  s : [4, 8];
  t = s + {1, 2, 3};
  parallel p by 1 : block x.at(p) = 1.0f;
}""",
        "3:7",
        "shape arithmetic needs equal ranks",
    ),
    (
        "leading_zero_literal",
        """__co__ void f(global f32 [N] x) {
  parallel p by N : block x.at(p) = 007;
}""",
        "2:37",
        "syntax error",
    ),
    (
        "span_as_other_count",
        """__co__ void f(global f32 [4, 4] x, global f32 [3, 5] y) {
  parallel p by 1 : block {
    dma.copy x.span_as([3, 5]) => y;
  }
}""",
        "3:15",
        "15 elements cannot view 16 elements",
    ),
    (
        "range_step_not_literal",
        """__co__ void f(global f32 [R, C] x, global f32 [R] y, int k) {
  parallel r by R : block {
    with j in [C] {
      mutable f32 s = 0.0f;
      foreach c = j(1::k) s += x.at(r, c);
      y.at(r) = s;
    }
  }
}""",
        "5:24",
        "unexpected identifier 'k'",
    ),
    (
        "stride_member",
        """__co__ void f(global f32 [N] x) {
  n = x.stride;
  parallel p by N : block x.at(p) = 1.0f;
}""",
        "2:8",
        "unexpected '.stride'",
    ),
    (
        "parameter_twice",
        """__co__ void f(global f32 [N] x, global f32 [N] x) {
  parallel p by N : block x.at(p) = 1.0f;
}""",
        "1:33",
        "parameter 'x' is declared twice",
    ),
    (
        "at_fewer_indices",
        """__co__ void f(global f32 [R, C] x) {
  parallel p by R : block x.at(p) = 1.0f;
}""",
        "2:27",
        "'x' has 2 dimensions, but '.at' gives 1 index",
    ),
    (
        "trigger_after_waited_future",
        """__co__ void f(global f16 [M, 64] x, global f16 [M, 64] y) {
  parallel p by cdiv(M, 64) : block {
    shared event e;
    g = tma.copy.async x.subspan(64, 64).at(p, 0) => shared;
    wait g;
    trigger e after g;
    wait e;
    dma.copy g.data => y.subspan(64, 64).at(p, 0);
  }
}""",
        "6:21",
        "the future 'g' was waited already",
    ),
    (
        "dma_load",
        """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel p by 1 : block {
    s = dma.load x => shared;
    dma.copy s.data => y;
  }
}""",
        "3:12",
        "'.load' is a TMA-only operation",
    ),
    (
        "sparse_3_of_4",
        """__co__ void f(global f16 [16, 32] x, global f16 [16, 16] y) {
  parallel p by 1 : block {
    s = dma.copy.sp<3:4> x => shared;
  }
}""",
        "3:17",
        "only 2:4 structured sparsity",
    ),
    (
        "evict_on_dma",
        """__co__ void f(global f32 [64] x, global f32 [64] y) {
  parallel p by 1 : block {
    g = dma.copy.async.evict_first x => shared;
    wait g;
    dma.copy g.data => y;
  }
}""",
        "3:12",
        "only valid on 'tma.load'",
    ),
    (
        "transp_of_other_rank",
        """__co__ void f(global f32 [8, 4] x, global f32 [4, 8] y) {
  parallel p by 1 : block {
    dma.transp<1, 0, 2> x => y;
  }
}""",
        "3:5",
        "but 'x' has 2 dimensions",
    ),
    (
        "swap_future_with_buffer",
        """__co__ void f(global f32 [64] x, global f32 [64] y) {
  parallel p by 1 : block {
    shared f32 [64] s;
    g = dma.copy.async x => shared;
    swap(g, s);
    wait g;
    dma.copy g.data => y;
  }
}""",
        "5:5",
        "'g' is a future, 's' spanned data",
    ),
    (
        "tma_global_to_global",
        """__co__ void f(global f32 [64] x, global f32 [64] y) {
  parallel p by 1 : block {
    tma.copy x => y;
  }
}""",
        "3:5",
        "TMA copies between global and shared memory only",
    ),
]


@pytest.mark.parametrize(("name", "src", "where", "phrase"), INVALID, ids=[c[0] for c in INVALID])
def test_probe9_invalid_is_located(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, src: str, where: str, phrase: str
) -> None:
    err = assert_rejected_at(capsys, tmp_path, name, src, where, phrase)
    assert "is not translated" not in err.splitlines()[0], err  # an invalid program, not a refusal
