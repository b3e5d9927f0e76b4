"""Probe 5 (issue 28): programs that are not valid Croqtile (errors LANGUAGE.md defines, and the
negative tests issue 28 lists: launch bounds, trigger ... after, '_' as a loop variable, swap across
scopes, static assertions, warp thread counts, non-void functions without return, stream bindings,
TMA boxes not computable on the host), each rejected by ``croq2triton check`` with a located
``file:line:col: error:`` at the construct, the rule it breaks, and never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from probe_util import assert_rejected_at

# (name, program, where the error points, a phrase of its message)
INVALID = [
    (
        "atomic_on_local",
        """__co__ void f(global s32 [N] x) {
  parallel p by 1 : block {
    parallel t by 4 : thread {
      local s32 [4] l {0};
      __atomic_add(l.at(0), 1);
      x.at(t) = l.at(0);
    }
  }
}""",
        "5:7",
        "'__atomic_add' on 'l.at(0)' of a local buffer: atomics read, modify and write shared or gl",
    ),
    (
        "bound_div",
        """__co__ void f(global f32 [N] x) {
  parallel p by 4 : block {
    parallel q by 8 : thread { x.at(p #/ 2) = 1.0f; }
  }
}""",
        "3:37",
        "the operator '#/' is not supported",
    ),
    (
        "chunkat_too_few",
        """__co__ void f(global f32 [M, N] x, global f32 [M, N] y) {
  parallel p by 2 : block {
    dma.copy x.chunkat(p) => y.chunkat(p, _);
  }
}""",
        "3:15",
        "'x' has 2 dimensions, but '.chunkat' gives 1 index",
    ),
    (
        "compound_assign_call",
        """__device__ float H(float v) { return v; }
__co__ void f(global f32 [N] x) {
  parallel p by 1 : block {
    mutable f32 v = 0.0f;
    v += call H(x.at(0));
    x.at(0) = v;
  }
}""",
        "5:10",
        "syntax error, unexpected 'call'",
    ),
    (
        "dma_any_data_read",
        """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel p by 1 : block {
    a = dma.any;
    dma.copy a.data => y.subspan(4).at(0);
  }
}""",
        "4:14",
        "the future 'a' holds no copy here (it is a 'dma.any' / 'tma.any' placeholder)",
    ),
    (
        "event_in_host",
        """__co__ void f(global f32 [N] x) {
  shared event e;
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "2:3",
        "'shared' storage is only allowed inside 'parallel'",
    ),
    (
        "exponent_literal",
        """__co__ void f(global f32 [N] x) {
  parallel p by 1 : block { x.at(0) = 1e-3f; }
}""",
        "2:39",
        "syntax error: a float with an exponent: Croqtile has no exponent literals",
    ),
    (
        "group_threads_not_32",
        """__co__ void f(global f32 [N] x) {
  parallel p by 2 : block {
    parallel g by 2 : group {
      parallel t by 20 : thread { x.at(p # g # t) = 1.0f; }
    }
  }
}""",
        "4:16",
        "the threads of a warp ('group') are a multiple of 32, but this thread level has 20",
    ),
    (
        "increment_statement",
        """__co__ void f(global f32 [N] x) {
  parallel p by 1 : block {
    mutable int i = 0;
    i++;
    x.at(i) = 1.0f;
  }
}""",
        "4:6",
        "syntax error, unexpected '++'",
    ),
    (
        "inthreads_async_nested",
        """__co__ void f(global f32 [N] x) {
  parallel p by 1 : block {
    parallel w by 2 : group-4 {
      inthreads (w == 0) {
        inthreads.async (w == 0) { x.at(0) = 1.0f; }
      }
    }
  }
}""",
        "5:9",
        "an 'inthreads.async' inside another 'inthreads': only an outermost 'inthreads' may be '.as",
    ),
    (
        "keyword_as_name",
        """__co__ void f(global f32 [N] x) {
  parallel {bx, by} by [2, 2] : block { x.at(bx) = 1.0f; }
}""",
        "2:17",
        "'by' is a reserved word of Croqtile and cannot be a name",
    ),
    (
        "launch_bounds_too_many",
        """__co__ void f(global f32 [N] x) {
  [[launch_bounds(64, 1)]]
  parallel p by 4 : block {
    parallel t by 128 : thread { x.at(p # t) = 1.0f; }
  }
}""",
        "2:19",
        "'[[launch_bounds]]' allows at most 64 threads a block, but this kernel's blocks have 128",
    ),
    (
        "levels_out_of_order",
        """__co__ void f(global f32 [N] x) {
  parallel t by 32 : thread {
    parallel p by 4 : block { x.at(p) = 1.0f; }
  }
}""",
        "3:14",
        "level ': block' is nested inside the finer level ': thread'",
    ),
    (
        "local_param",
        """__co__ void f(local f32 [N] x) {
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "1:15",
        "syntax error: a 'local' parameter: parameters are in global memory or on the host",
    ),
    (
        "maxnreg_zero",
        """__co__ void f(global f32 [N] x) {
  [[maxnreg(0)]]
  parallel p by 4 : block {
    parallel t by 32 : thread { x.at(p # t) = 1.0f; }
  }
}""",
        "2:13",
        "the register count of '[[maxnreg]]' must be a positive integer, not 0",
    ),
    (
        "minus_float_mislex",
        """__co__ void f(global f32 [N] x) {
  parallel p by 1 : block { x.at(0) = x.at(1)-1.5f; }
}""",
        "2:46",
        "syntax error, unexpected floating-point literal '-1.5f'",
    ),
    (
        "mma_layout_unknown",
        """__co__ void f(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel p by 1 : block {
    acc = mma.fill.f32 0.0f;
    mma.row.diag acc, a, b;
  }
}""",
        "4:12",
        "unknown member '.diag'",
    ),
    (
        "nonvoid_without_return",
        """__co__ f32 [N] f(global f32 [N] x) {
  global f32 [N] y;
  parallel p by 1 : block { y.at(0) = x.at(0); }
}""",
        "1:16",
        "the non-void function 'f' (declared 'f32 [N]') has no 'return'",
    ),
    (
        "reassign_loop_binding",
        """__co__ void f(global f32 [N] x) {
  parallel p by 1 : block {
    foreach k in [4] {
      s = k * 2;
      s = s + 1;
      x.at(k) = 1.0f;
    }
  }
}""",
        "5:7",
        "cannot re-assign 's': it is an immutable int (declared by 's = k * 2;')",
    ),
    (
        "static_assert_false",
        """#define T 8
__co__ void f(global f32 [N] x) {
  assert(T > 16, "tile too small");
  parallel p by 1 : block { x.at(0) = 1.0f; }
}""",
        "3:3",
        "this assertion fails whenever the function runs: 'T > 16' is false when compiling (tile to",
    ),
    (
        "stream_bind_not_stream",
        """__co__ void f(global f32 [N] x, int s) {
  parallel<s> p by 2 : block { x.at(p) = 1.0f; }
}""",
        "2:3",
        "'parallel<s>' binds the launch to a stream parameter, and 's' is an 'int' parameter",
    ),
    (
        "swap_across_scopes",
        """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel p by 1 : block {
    a = dma.copy x.subspan(4).at(0) => shared;
    foreach k in [2] {
      b = dma.copy x.subspan(4).at(k) => shared;
      swap(a, b);
    }
    dma.copy a.data => y.subspan(4).at(0);
  }
}""",
        "6:7",
        "'swap' exchanges values declared in one scope: 'a' is declared in a 'parallel' (line 3), '",
    ),
    (
        "swizzle_48",
        """__co__ void f(global f16 [N, 64] x) {
  parallel p by 1 : block {
    s = dma.copy.swiz<48> x.subspan(64, 64).at(0, 0) => shared;
  }
}""",
        "3:23",
        "swizzle value must be 128, 64, or 32",
    ),
    (
        "tma_box_runtime",
        """__co__ void f(global f32 [N, 8] x, global f32 [N, 8] y) {
  parallel p by 2 : block {
    foreach k in [4] {
      s = tma.copy x.view(k + 1, 8).from(0, 0) => shared;
      tma.copy s => y.view(k + 1, 8).from(0, 0);
    }
  }
}""",
        "4:27",
        "the box of a TMA copy is made on the host before the launch, but its extent 'k + 1' depend",
    ),
    (
        "trigger_after_sync_copy",
        """__co__ void f(global f32 [N, 8] x) {
  parallel p by 2 : block {
    shared event e;
    shared f32 [4, 8] s;
    c = tma.load x.subspan(4, 8).at(p, 0) => s;
    trigger e after c;
    wait e;
  }
}""",
        "6:21",
        "'trigger ... after' binds the completion of asynchronous TMA loads into shared memory; 'c'",
    ),
    (
        "underscore_loop_var",
        """__co__ void f(global f32 [N] x) {
  parallel p by 1 : block {
    foreach _ in [4] { x.at(0) = 1.0f; }
  }
}""",
        "3:13",
        "'_' cannot be a 'foreach' index: it names nothing a program could use",
    ),
    (
        "wait_never_async",
        """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel p by 1 : block {
    a = dma.copy x.subspan(4).at(0) => shared;
    wait a;
    dma.copy a.data => y.subspan(4).at(0);
  }
}""",
        "4:10",
        "'wait a': the copy that gives 'a' is synchronous, there is nothing to wait for",
    ),
]


@pytest.mark.parametrize(("name", "src", "where", "phrase"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_program_is_rejected_at_its_construct(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, src: str, where: str, phrase: str
) -> None:
    err = assert_rejected_at(capsys, tmp_path, name, src, where, phrase)
    assert "\nhint: " in err or "^" in err, err  # the source line with a caret
