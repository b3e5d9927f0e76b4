"""Probe 4 (issue 28): programs that are not valid Croqtile (errors LANGUAGE.md defines), each
rejected by ``croq2triton check`` with a located ``file:line:col: error:`` at the construct, the
rule it breaks, and never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from probe_util import assert_rejected_at

from croq2triton.cli import main

# (name, program, where the error points, a phrase of its message)
INVALID = [
    (
        "reassign_immutable",
        """__co__ void f(global f32 [N] x) {
  int a = 1;
  a = 2;
  parallel p by 1 : block { x.at(0) = a; }
}""",
        "3:3",
        "cannot re-assign 'a': it is an immutable int",
    ),
    (
        "bracket_list_as_tuple",
        """__co__ void f(global f32 [N] x) {
  t = [1, 2];
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "2:7",
        "a bracket list is a shape, declared with ':'",
    ),
    (
        "mdspan_with_equals",
        """__co__ void f(global f32 [N] x) {
  mdspan s = [4, 8];
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "2:12",
        "must use ':' to initialize a mdspan",
    ),
    (
        "ituple_no_init",
        """__co__ void f(global f32 [N] x) {
  ituple t;
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "2:10",
        "an ituple must be initialized",
    ),
    (
        "bound_times",
        """__co__ void f(global f32 [N] x) {
  parallel p by 4 : block {
    parallel q by 8 : thread { x.at(p #* 2) = 1.0f; }
  }
}""",
        "3:37",
        "the operator '#*' is not supported",
    ),
    (
        "return_in_parallel",
        """__co__ void f(global f32 [N] x) {
  parallel p by 4 : block {
    x.at(p) = 1.0f;
    return;
  }
}""",
        "4:5",
        "'return' inside 'parallel'",
    ),
    (
        "shared_param",
        """__co__ void f(shared f32 [N] x) {
  parallel p by 4 : block { x.at(p) = 1.0f; }
}""",
        "1:15",
        "a 'shared' parameter: parameters are in global memory or on the host",
    ),
    (
        "scalar_by_reference",
        """__co__ void f(global f32 [N] x, int& n) {
  parallel p by 4 : block { x.at(p) = 1.0f; }
}""",
        "1:33",
        "scalar parameter 'n' cannot be passed by reference",
    ),
    (
        "shape_parameter",
        """__co__ void f(global f32 [N] x, mdspan s) {
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "1:33",
        "an 'mdspan' parameter: shapes and index tuples cannot be parameters",
    ),
    (
        "chunkat_rank",
        """__co__ void f(global f32 [M, N] x, global f32 [M, N] y) {
  parallel p by 4 : block {
    dma.copy x.chunkat(p) => y.chunkat(p, _);
  }
}""",
        "3:15",
        "'x' has 2 dimensions, but '.chunkat' gives 1 index",
    ),
    (
        "swizzle_value",
        """__co__ void f(global f16 [M, 64] x, global f16 [M, 64] y) {
  parallel p by cdiv(M, 16) : block {
    shared f16 [16, 64] s;
    dma.copy.swiz<48> x.subspan(16, 64).at(p, 0) => s;
    dma.copy s => y.subspan(16, 64).at(p, 0);
  }
}""",
        "4:19",
        "swizzle value must be 128, 64, or 32",
    ),
    (
        "wait_sync_future",
        """__co__ void f(global f32 [M, 8] x, global f32 [M, 8] y) {
  parallel p by cdiv(M, 4) : block {
    g = dma.copy x.subspan(4, 8).at(p, 0) => shared;
    wait g;
    dma.copy g.data => y.subspan(4, 8).at(p, 0);
  }
}""",
        "4:10",
        "the copy that gives 'g' is synchronous, there is nothing to wait for",
    ),
    (
        "async_never_waited",
        """__co__ void f(global f32 [M, 8] x, global f32 [M, 8] y) {
  parallel p by cdiv(M, 4) : block {
    g = dma.copy.async x.subspan(4, 8).at(p, 0) => shared;
    dma.copy g.data => y.subspan(4, 8).at(p, 0);
  }
}""",
        "3:5",
        "the asynchronous copy into 'g' is never waited for",
    ),
    (
        "copy_too_large",
        """__co__ void f(global f32 [M, 8] x, global f32 [M, 8] y) {
  parallel p by cdiv(M, 4) : block {
    shared f32 [2, 8] s;
    dma.copy x.subspan(4, 8).at(p, 0) => s;
    dma.copy s => y.subspan(2, 8).at(p, 0);
  }
}""",
        "4:5",
        "the source is larger along dimension 0 (4 > 2)",
    ),
    (
        "mma_shapes",
        """__co__ void f(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block {
    acc = mma.fill.f32 0.0f;
    fa = dma.copy a.subspan(16, 32).at(bm, 0) => shared;
    fb = dma.copy b.subspan(16, 16).at(bn, 0) => shared;
    mma.row.row acc, fa.data, fb.data;
    mma.store acc, c.subspan(16, 16).at(bm, bn);
  }
}""",
        "6:5",
        "MMA operands disagree on K: 'fa.data' has K = 32, 'fb.data' has K = 16",
    ),
    (
        "mma_store_shape",
        """__co__ void f(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block {
    acc = mma.fill.f32 0.0f;
    fa = dma.copy a.subspan(16, 16).at(bm, 0) => shared;
    fb = dma.copy b.subspan(16, 16).at(bn, 0) => shared;
    mma.row.row acc, fa.data, fb.data;
    mma.store acc, c.subspan(16, 8).at(bm, bn);
  }
}""",
        "7:5",
        "the accumulator is larger along dimension 1 (16 > 8)",
    ),
    (
        "foreach_general_expr",
        """__co__ void f(global f32 [K] x) {
  parallel p by 1 : block {
    foreach k in cdiv(K, 64) { x.at(k) = 1.0f; }
  }
}""",
        "3:18",
        "unexpected 'cdiv'",
    ),
    (
        "bare_else",
        """__co__ void f(global f32 [N] x) {
  parallel p by N : block {
    x.at(p) = 1.0f;
    else x.at(p) = 2.0f;
  }
}""",
        "4:5",
        "unexpected 'else'",
    ),
    (
        "shape_rank_mismatch",
        """__co__ void f(global f32 [N] x) {
  s : [4, 8];
  t : s + {1, 2, 3};
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "3:7",
        "shape arithmetic needs equal ranks",
    ),
    (
        "shared_outside_parallel",
        """__co__ void f(global f32 [N] x) {
  shared f32 [8] s;
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "2:3",
        "'shared' storage is only allowed inside 'parallel'",
    ),
    (
        "yield_outside_parallel",
        """__co__ void f(global f32 [N] x) {
  yield;
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "2:3",
        "'yield' outside 'parallel'",
    ),
    (
        "trigger_after_dma",
        """__co__ void f(global f32 [M, 8] x, global f32 [M, 8] y) {
  parallel p by cdiv(M, 4) : block {
    shared event e;
    g = dma.copy.async x.subspan(4, 8).at(p, 0) => shared;
    trigger e after g;
    wait e;
    dma.copy g.data => y.subspan(4, 8).at(p, 0);
  }
}""",
        "5:21",
        "'g' is the future of a 'dma.copy.async'",
    ),
    (
        "chunk_index_past_factor",
        """__co__ void f(global f32 [16] x, global f32 [8] y) {
  parallel p by 1 : block {
    dma.copy x.chunk(2).at(3) => y;
  }
}""",
        "3:28",
        "the index 3 along dimension 0 is not below the factor 2",
    ),
    (
        "array_element_written_directly",
        """__co__ void f(global f32 [M, 8] x, global f32 [M, 8] y) {
  parallel b by cdiv(M, 4) : block {
    shared f32 [4, 8] ring[2];
    foreach k in [2] {
      parallel {i, j} by [4, 8] : thread
        ring[k].at(i, j) += x.at(b * 4 + i, j);
    }
  }
}""",
        "6:9",
        "an element of one buffer of an array of buffers is written through a name",
    ),
    (
        "macro_redefined",
        """#define F(a) ((a) + 1)
#define F(a) ((a) + 2)
__co__ void f(global f32 [N] x) {
  parallel p by 1 : block { x.at(0) = F(1); }
}""",
        "2:2",
        "function-like macro 'F' is redefined",
    ),
    (
        "literal_out_of_range",
        """__co__ void f(global s64 [N] x) {
  parallel p by 1 : block { x.at(0) = 99999999999999999999999; }
}""",
        "2:39",
        "out of range",
    ),
    (
        "sqz_without_view",
        """__co__ void f(global f32 [1, N] x, global f32 [N] y) {
  parallel p by 1 : block { dma.copy x.sqz() => y; }
}""",
        "2:39",
        "'.sqz()' drops the extents of 1 that a '.subspan', '.view' or '.span_as' before it wrote",
    ),
    (
        "co_calls_co",
        """__co__ void g(global f32 [N] x) {
  parallel p by 1 : block { x.at(0) = 1.0f; }
}
__co__ void f(global f32 [N] x) {
  call g(x);
  parallel p by 1 : block { x.at(0) = 2.0f; }
}""",
        "5:3",
        "__co__ functions cannot call each other",
    ),
    (
        "transp_not_permutation",
        """__co__ void f(global f32 [M, 8] x, global f32 [8, M] y) {
  parallel p by cdiv(M, 4) : block {
    shared f32 [8, 4] s;
    dma.transp<0, 0> x.subspan(4, 8).at(p, 0) => s;
    dma.copy s => y.subspan(8, 4).at(0, p);
  }
}""",
        "4:5",
        "is not a permutation of 0 .. 1",
    ),
    (
        "element_types_of_a_copy",
        """__co__ void f(global f32 [M, 8] x, global f16 [M, 8] y) {
  parallel p by cdiv(M, 4) : block {
    dma.copy x.subspan(4, 8).at(p, 0) => y.subspan(4, 8).at(p, 0);
  }
}""",
        "3:5",
        "a copy's destination must have the element type of its source",
    ),
]


@pytest.mark.parametrize(("name", "src", "where", "phrase"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_program_is_rejected_at_its_construct(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, src: str, where: str, phrase: str
) -> None:
    assert_rejected_at(capsys, tmp_path, name, src, where, phrase)


def test_a_tile_past_the_end_is_legal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """LANGUAGE.md 14.3: a tile partly or wholly past the end is legal (it reads zero), its origin
    computed by the kernel or constant (7.6 calls a provable offset past the extent an error; 14.3, the
    project's decision, and tests/test_breadth_e.py keep it legal)."""
    path = tmp_path / "ok.co"
    path.write_text(
        """__co__ void f(global f32 [10, 8] x, global f32 [4, 8] y, int k) {
  parallel p by 1 : block {
    dma.copy x.subspan(4, 8).at(k + 3, 0) => y;
    dma.copy x.view(4, 8).from(k * 20, 0) => y;
    dma.copy x.subspan(4, 8).at(3, 0) => y;
  }
}
"""
    )
    assert main(["check", str(path)]) == 0, capsys.readouterr().err
