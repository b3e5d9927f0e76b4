"""Mistakes users make, each with a located error and a hint that says how Croqtile writes it
(issue 28, diagnostics; found by writing about 190 one-mistake programs on 2026-12-06).

* C, C++ and CUDA written in a ``.co`` file (frontend/cisms.py): ``__syncthreads()``,
  ``threadIdx.x``, a C ``for``, ``x >>= 1``, ``i++;``, ``(float)x``, ``const``, ``unsigned``,
  ``1e-3f``, ``.5f``, ``a-1.5f``, ``->``, ``f32 buf[16]``, ``float*`` / ``shared`` / ``int [N]``
  parameters, ``and``, ``wmma::``, a missing return type, ``007``, ``if (a = b)``, a call inside an
  expression, ``#pragma unroll``.  Before, each was a bare "syntax error, unexpected X".
* Errors that were accepted (sema): a name declared twice in one scope, an integer division by a
  constant 0, ``return 5;`` from a function of spanned data, a ``tma.copy`` into a ``local`` buffer,
  a buffer extent of 0 or less, ``a[i]`` of a tensor, a string used as a value, ``wait`` on an
  index, ``p # 3``, ``chunkat(bm, 2)``, a view's ``.at`` with another number of indices than its
  tensor's rank, a ``__co__`` function calling another (a warning for ``int k = 3.5f;``).
* An error the lifting finds in the program reads "in 'f': ..", not "'f' is not translated".
* The second probe (2026-12-06): the user's errors that were called forms croq2triton does not
  translate (a constant position outside a tuple, a float where an integer goes, a thing of the
  wrong kind where a view, a fragment or a value goes, fragment work between launches, a buffer
  shape of a kernel's index, a returned view, ...) are sema's errors (sema/mistakes.py); valid
  forms next to them translate, or stay refusals that say what they refuse; a reserved word used as
  a name, ``goto``, ``switch``, ``5.``, ``a[0:16]`` and a few more syntax errors say what is wrong.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from croq2triton.cli import main

VADD = """__co__ void vadd(global f32 [N] a, global f32 [N] b, global f32 [N] out) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread {
    BODY
  }
}
"""


def check(capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str) -> tuple[int, str]:
    path = tmp_path / "t.co"
    path.write_text(src)
    rc = main(["check", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out and "internal error" not in err, err
    return rc, err


def body(line: str) -> str:
    return VADD.replace("BODY", line)


# (statement in the body of a vector add, where the error points (line:col), message, hint)
SYNTAX = [
    ("__syncthreads();", "3:5", "'__syncthreads' is CUDA, not Croqtile", "'sync.shared;'"),
    ("out.at(threadIdx.x) = a.at(p # t);", "3:12", "'threadIdx' is CUDA", "'p # t'"),
    ("for (int i = 0; i < 4; i++) { }", "3:5", "a C 'for' loop", "foreach i in [n]"),
    ("mutable int s = 4; s >>= 1;", "3:26", "'>>=' is not Croqtile", "write 's = s >> ..;'"),
    ("mutable int s = 4; s |= 1;", "3:26", "'|=' is not Croqtile", "write 's = s | ..;'"),
    ("mutable int s = 4; s++;", "3:25", "unexpected '++'", "write 's += 1;'"),
    ("out.at(p # t) = (float)a.at(p # t);", "3:21", "unexpected element type", "'__to<f32>(x)'"),
    ("const int k = 4;", "3:5", "'const' is C++", "immutable unless declared 'mutable'"),
    ("unsigned k = 4;", "3:5", "'unsigned' is a C type", "'u32'"),
    ("out.at(p # t) = a.at(p # t) * 1e-3f;", "3:35", "no exponent literals", "'0.001f'"),
    ("out.at(p # t) = a.at(p # t) * .5f;", "3:35", "unexpected '.'", "'0.5'"),
    ("out.at(p # t) = a.at(p # t)-1.5f;", "3:32", "unexpected floating-point literal", "space after '-'"),
    ("f32 buf[16];", "3:12", "unexpected '['", "'f32 [..] buf;'"),
    ("if (t and p) { }", "3:11", "unexpected identifier 'and'", "'&&'"),
    ("wmma::mma_sync(a, b);", "3:5", "'wmma::mma_sync' is CUDA C++", "mma.row.row"),
    ("if (t = 3) { }", "3:11", "unexpected '='", "'=='"),
    ("out.at(p # t) = call f(a.at(p # t)) + 1.0f;", "3:41", "unexpected '+'", "'v = call f(..);'"),
    ("#pragma unroll", "3:6", "unexpected", "'foreach i in [8] : unroll { .. }'"),
    ("auto k = 4;", "3:5", "unexpected 'auto'", "('k = ..;')"),
    ("out.at(p # t = a.at(p # t);", "3:18", "unexpected '='", "')' missing"),
    # reserved words as names, C's control statements, Croqtile forms easy to get wrong (the second probe's UNCLEAR)
    ("int block = 4;", "3:9", "'block' is a reserved word of Croqtile", "another name ('block_'"),
    ("f32 copy = a.at(p # t);", "3:9", "'copy' is a reserved word", "LANGUAGE.md 3.4"),
    ("goto end;", "3:5", "Croqtile has no goto", "'break'"),
    ('asm goto ("jmp %l0" :::: end);', "3:9", "'asm goto' is not supported", "__asm__ volatile"),
    ("out.at(p # t) = a.at(p # t) * 2.;", "3:35", "'2.' is not a float literal", "'2.0f'"),
    ("local f32 [??] w;", "3:16", "a '??' extent of a buffer", "the parameters' sizes"),
    ("shared event e = 0;", "3:22", "an event is initialised with '= ready' only", "= ready;"),
    ("assert(t < 128);", "3:19", "'assert' needs a message", "'assert(t < 128, \"..\");'"),
    ("switch (t) { }", "3:5", "'switch' is C", "'if (..)"),
    ("do { } while (t < 4);", "3:5", "'do .. while' is C", "'while (c)"),
    ("out.at(p # t) = a[0:4];", "3:24", "a slice 'x[a:b]' is Python", ".subspan("),
]


@pytest.mark.parametrize(("stmt", "at", "message", "hint"), SYNTAX, ids=[s[0] for s in SYNTAX])
def test_c_written_in_a_kernel_gets_the_croqtile_form(
    stmt: str, at: str, message: str, hint: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, body(stmt))
    assert rc == 1
    first = err.splitlines()[0]
    assert first.startswith(f"{tmp_path / 't.co'}:{at}: error: ") or first.startswith(f"t.co:{at}"), err
    assert message in first, err
    assert "hint: " in err and hint in err, err


SIGNATURES = [
    ("__co__ vadd(global f32 [N] a) { }", "1:8", "unexpected identifier 'vadd'", "'__co__ void vadd(..)'"),
    ("__co__ void f(shared f32 [N] a) { }", "1:15", "a 'shared' parameter", "'global f32 [N] a'"),
    ("__co__ void f(global int [N] a) { }", "1:22", "unexpected '['", "'s32'"),
    ("__co__ void f(float* a) { }", "1:20", "Croqtile has no pointers", "'global f32 [N] x'"),
    ("__co__ void f(global f32 [N] in) { }", "1:30", "'in' is a reserved word", "another name"),
    ("__co__ void f(global f32 [N + 1] a) { }", "1:29", "a parameter's extent is an integer or one name", "assert("),
]


@pytest.mark.parametrize(("src", "at", "message", "hint"), SIGNATURES, ids=[s[0] for s in SIGNATURES])
def test_c_signatures_get_the_croqtile_form(
    src: str, at: str, message: str, hint: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, src + "\n")
    assert rc == 1
    first = err.splitlines()[0]
    assert f":{at}: error: " in first and message in first, err
    assert hint in err, err


GEMM_TMA_LOCAL = """__co__ void g(global f16 [M, K] a, global f32 [M, 64] c) {
  parallel bm by cdiv(M, 64) : block {
    local f16 [64, 64] s;
    tma.copy a.subspan(64, 64).at(bm, 0) => s;
    dma.copy s => c.subspan(64, 64).at(bm, 0);
  }
}
"""

# (program, where, message, hint or None)
SEMANTIC = [
    (body("int k = 4;\n    int k = 5;"), "4:9", "'k' is declared twice in the same scope", "another name"),
    (
        body("shared f32 [8] s;\n    shared f32 [8] s;"),
        "4:20",
        "'s' is declared twice in the same scope",
        "another name",
    ),
    (VADD.replace("cdiv(N, 128)", "N / 0").replace("BODY", ""), "2:21", "division by zero: 'N / 0'", "by 0"),
    (VADD.replace("cdiv(N, 128)", "cdiv(N, 0)").replace("BODY", ""), "2:25", "'cdiv' by zero", "by 0"),
    (body("int z = t % 0;"), "3:17", "remainder by zero", "by 0"),
    (
        "__co__ f32 [N] f(global f32 [N] a) {\n  return 5;\n}\n",
        "2:10",
        "'f' is declared 'f32 [N]' but returns the number '5'",
        "return spanned data",
    ),
    (GEMM_TMA_LOCAL, "4:5", "a tma.copy with a local destination", "declare the buffer 'shared'"),
    (
        body("shared f32 [8] s;\n    shared f32 [8] u;\n    tma.copy s => u;"),
        "5:5",
        "a tma.copy between two buffers ('s' => 'u')",
        "'dma.copy'",
    ),
    (body("shared f32 [0, 4] s;"), "3:17", "the extent 0 of 's' is invalid", ">= 1"),
    (body("out.at(p # t) = a[p # t];"), "3:21", "'a' is not an array of buffers", "'a.at(p # t)'"),
    (body('out.at(p # t) = a.at(p # t) + "x";'), "3:35", 'the string "x" is used as a value', "print"),
    (body("wait p;"), "3:10", "'wait' takes futures and events; 'p' is a bounded index", None),
    (
        body("int nn = 4;\n    foreach nn { }"),
        "4:13",
        "'foreach nn' loops over a bounded index of 'with'",
        "'with nn in [n]",
    ),
    (body("out.at(p # 3) = a.at(p # t);"), "3:16", "'#' composes two bounded indices", "LANGUAGE.md 7.2"),
    (
        "__co__ void f(global f32 [M, N] a, global f32 [M, N] b) {\n"
        "  parallel bm by 4 : block {\n    s = dma.copy a.chunkat(bm, 2) => shared;\n"
        "    dma.copy s => b.chunkat(bm, 0);\n  }\n}\n",
        "3:32",
        "chunkat takes bounded indices",
        "'.subspan(extents).at(indices)'",
    ),
    (
        "__co__ void f(global f32 [M, N] a, global f32 [M, N] b) {\n"
        "  parallel bm by 4 : block {\n    s = dma.copy a.subspan(8, 8).at(bm) => shared;\n"
        "    dma.copy s => b.subspan(8, 8).at(bm, 0);\n  }\n}\n",
        "3:19",
        "'.at' gives 1 index for the 2 dimensions of 'a'",
        "one index per extent",
    ),
    (
        "__co__ void f(global f32 [M, N] a, global f32 [M, N] b) {\n"
        "  parallel bm by 4 : block {\n    s = dma.copy a.subspan(8).at(bm, 0) => shared;\n"
        "    dma.copy s => b.subspan(8, 8).at(bm, 0);\n  }\n}\n",
        "3:19",
        "'a' has 2 dimensions, but '.subspan' gives 1 extent",
        "one per dimension",
    ),
    (
        VADD.replace("BODY", "out.at(p # t) = a.at(p # t);")
        + "__co__ void twice(global f32 [N] a, global f32 [N] out) {\n  call vadd(a, a, out);\n}\n",
        "7:3",
        "'twice' calls the __co__ function 'vadd': __co__ functions cannot call each other",
        "from the host program",
    ),
]


@pytest.mark.parametrize(("src", "at", "message", "hint"), SEMANTIC, ids=[s[2][:40] for s in SEMANTIC])
def test_errors_that_were_accepted_are_errors(
    src: str, at: str, message: str, hint: str | None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1, err
    line = next((x for x in err.splitlines() if message in x), None)
    assert line is not None and f":{at}: error: " in line, err
    if hint is not None:
        assert hint in err, err


def test_a_float_with_a_fraction_into_an_int_warns(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, err = check(capsys, tmp_path, body("int k = 3.5f;\n    int j = 2.0f;"))
    assert rc == 0
    assert ":3:13: warning: 'k' is int: the float 3.5f converts to 3 (the fraction is dropped)" in err
    assert "'j'" not in err  # 2.0f converts exactly


def test_an_error_the_lifting_finds_is_not_called_a_refusal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = (
        "__co__ void f(global f32 [M, N] a, global f32 [M, N] b) {\n"
        "  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 64)] : block {\n"
        "    shared f32 [1024] flat;\n    dma.copy a.chunkat(bm, bn) => flat;\n"
        "    dma.copy flat => b.chunkat(bm, bn);\n  }\n}\n"
    )
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1
    assert "error: in 'f': dma.copy of 'a.chunkat(bm, bn)'" in err, err
    assert "(the grid's extent 0)" in err and "Call(" not in err, err
    assert "is not translated" not in err


@pytest.mark.parametrize(
    ("src", "first", "hint"),
    [
        (
            "// a CUDA kernel\n__global__ void vadd(float* a, int n) { }\n",
            "t.co:2:1: error: no __co__ function in {path}: '__global__' is a CUDA kernel",
            "'__co__ void f(global f32 [N] x)",
        ),
        (
            "import torch\n\ndef f(x):\n    return x\n",
            "t.co:1:1: error: no __co__ function in {path}: this looks like Python",
            "Croqtile (.co)",
        ),
        ("\n\n", "error: {path} is empty: no __co__ function", "translates its __co__ functions"),
    ],
    ids=["cuda", "python", "empty"],
)
def test_a_file_without_a_co_function_says_what_it_holds(
    src: str, first: str, hint: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, src)
    path = str(tmp_path / "t.co")
    assert rc == 1
    assert first.format(path=path) in err.replace(path + ":", "t.co:", 1) or first.format(path=path) in err, err
    assert hint in err


def test_an_atomic_on_a_local_buffer_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # LANGUAGE.md 7.7: atomics act on shared or global data; it translated as a plain increment
    src = """__co__ void k(global s32 [T] ids, global s32 [T] out) {
  parallel p by cdiv(T, 32) : block, t by 32 : thread {
    local s32 [4] c {0};
    __atomic_add(c.at(ids.at(p # t) % 4), 1);
    out.at(p # t) = c.at(0);
  }
}
"""
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1 and "t.co:4:5: error: '__atomic_add' on 'c.at(ids.at(p # t) % 4)' of a local buffer" in err, err
    assert "declare the buffer 'shared'" in err
    rc, err = check(capsys, tmp_path, src.replace("local s32 [4] c {0};", "shared s32 [4] c {0};"))
    assert rc == 0, err


def test_a_helper_called_with_too_few_arguments_or_an_element_for_a_pointer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # were reported as constructs croq2triton does not translate (the MoE probe's F4, F5)
    few = """__device__ float SILU(float x, float beta) { return x / (1.0f + __expf(-beta * x)); }
__co__ void k(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    f32 v = call SILU(x.at(p # t));
    y.at(p # t) = v;
  }
}
"""
    rc, err = check(capsys, tmp_path, few)
    assert rc == 1 and "t.co:4:13: error: 'SILU' takes 2 arguments, 1 given" in err, err
    assert "'__device__ SILU' at line 1" in err and "not translate" not in err
    value = """__device__ int ATOMIC_ADD(int* p, int v) { return atomicAdd(p, v); }
__co__ void k(global s32 [T] ids, global s32 [E] counts) {
  parallel p by cdiv(T, 32) : block, t by 32 : thread
    if (p # t < T) call ATOMIC_ADD(counts.at(ids.at(p # t)), 1);
}
"""
    rc, err = check(capsys, tmp_path, value)
    assert rc == 1 and "argument 1 of 'ATOMIC_ADD' is passed to the pointer parameter 'p'" in err, err
    assert "'&' before it" in err
    rc, err = check(capsys, tmp_path, value.replace("ATOMIC_ADD(counts", "ATOMIC_ADD(&counts"))
    assert rc == 0, err


def test_the_bound_of_a_declared_int_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # LANGUAGE.md 7.2: '#v' is the bound of a parallel, with or foreach index (was "not translated")
    src = """__co__ void f(global f32 [M, N] x, global f32 [M] s) {
  parallel b by M : block, t by 4 : thread {
    int k = 3;
    s.at(b) = #k;
  }
}
"""
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1 and "t.co:4:15: error: '#k': 'k' is an int, not a bounded index" in err, err
    rc, err = check(capsys, tmp_path, src.replace("int k = 3;", "k = b # t;").replace("#k;", "__to<f32>(#k);"))
    assert rc == 0, err


def test_an_undeclared_name_in_a_grid_bound(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # was "does not translate a grid bound that uses 'R'" (the irregular-access probe)
    src = """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel b by cdiv(R, 16) : block, t by 16 : thread
    y.at(b # t) = x.at(b # t);
}
"""
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1 and "t.co:2:22: error: in 'f': 'R' is not declared" in err, err
    assert "not translate" not in err


# ---- valid forms next to the second diagnostics probe's mistakes: translated, or refused for what they are

MMA = """__co__ void mm(global f16 [M, K] x, global f16 [N, K] y, global f32 [M, N] z) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    parallel g by 1 : group-4 {
      frag f32 [64] row {0.0f};
      acc = mma.fill.f32 0.0f;
      foreach k in [cdiv(K, 64)] {
        xs = dma.copy x.subspan(64, 64).at(bm, k) => shared;
        ys = dma.copy y.subspan(64, 64).at(bn, k) => shared;
        mma.row.row acc, xs, ys;
      }
      reduce_sum(row, acc, 1);
      apply {i, j} in acc.span
        acc.at(i, j) = acc.at(i, j) / row.at(i);
      mma.store acc, z.subspan(64, 64).at(bm, bn);
    }
  }
}
"""

PIPE = """__co__ void pp(global f16 [M, K] x, global f16 [N, K] y, global f16 [M, N] z) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared event ready_[2], free_[2] = ready;
    shared f16 [64, 64] xs[2], ys[2];
    shared f16 [64, 64] zs;
    parallel w by 2 : group-4 {
      inthreads.async (w == 0) {
        foreach k in [cdiv(K, 64)] {
          wait free_.at(k);
          fx = tma.load.async x.subspan(64, 64).at(bm, k) => xs[k % 2];
          fy = tma.load.async y.subspan(64, 64).at(bn, k) => ys[k % 2];
          trigger ready_.at(k) after fx, fy;
        }
      }
      inthreads.async (w == 1) {
        acc = mma.fill.f32 0.0f;
        foreach k in [cdiv(K, 64)] {
          wait ready_.at(k);
          mma.row.row acc, xs[k % 2], ys[k % 2];
          trigger free_.at(k);
        }
        mma.store acc, zs;
        tma.copy zs => z.subspan(64, 64).at(bm, bn);
      }
    }
  }
}
"""

COPY2D = """__co__ void cp(global f32 [M, N] x, global f32 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 32)] : block {
    xs = dma.copy x.subspan(16, 32).at(bm, bn) => shared;
    BODY
    dma.copy xs => y.subspan(16, 32).at(bm, bn);
  }
}
"""


def copy2d(line: str) -> str:
    return COPY2D.replace("BODY", line)


def _fn(text: str) -> str:
    return "__co__ " + text + "\n"


def test_an_element_of_a_shape_named_in_a_kernel_translates(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # 's(k)' of 's : [..]' declared inside 'parallel' was refused as "'s(k)' of something that is not an index tuple"
    src = body("tile : [16, 32];\n    out.at(p # t) = a.at(p # t) * __to<f32>(tile(1) + tile(-2));")
    rc, err = check(capsys, tmp_path, src)
    assert rc == 0, err


def test_data_of_a_buffer_is_the_buffer(tmp_path: Path) -> None:
    # upstream reads 'd.data' of spanned data as the data itself ('dataof', corpus parse/return.co);
    # of a declared buffer it was refused as "'.data' of something that is not a future"
    from croq2triton.api import translate_full

    two = "shared f32 [16, 32] sb;\n    dma.copy xs => sb;\n    dma.copy SB => y.subspan(16, 32).at(bm, bn);"
    plain = translate_full(copy2d(two.replace("SB", "sb")), filename="cp.co")
    data = translate_full(copy2d(two.replace("SB", "sb.data")), filename="cp.co")
    assert not plain.failed and not data.failed, data.failed
    assert data.source == plain.source


@pytest.mark.parametrize(
    ("src", "refusal"),
    [
        # valid Croqtile croq2triton does not lower: the refusal stays, and says what it refuses
        (VADD.replace(": block,", ": block<cooperative>,").replace("BODY", ""), "a cooperative grid"),
        (
            "__device__ void note() { }\n"
            + VADD.replace("  parallel p", "  call note();\n  parallel p").replace("BODY", ""),
            "the call of 'note' between launches",  # (upstream accepts host-level calls: parse/chunkat.co)
        ),
        (
            PIPE.replace("trigger free_.at(k);", "trigger free_.at(k);\n          if (ready_[0]) { }"),
            "an 'if' whose condition tests an event",
        ),
    ],
    ids=["block<cooperative>", "host call", "if on an event"],
)
def test_valid_forms_next_to_the_mistakes_stay_refusals(
    src: str, refusal: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1 and "is not translated" in err and refusal in err, err


# ---- the user's errors the lifting reported as forms it does not translate (the second diagnostics
# probe's MISCLASSIFIED cases): each rule is checked by sema (sema/mistakes.py) in all its positions

# (program, where, message, hint)
WRONG = [
    # positions outside a shape or an int tuple (LANGUAGE.md 7.1)
    (body("ituple o = {4, 5, 6};\n    int z = o(3);"), "4:15", "the ituple 'o' has 3 elements, so 3 is no", "from 0"),
    (body("ituple o = {4, 5, 6};\n    int z = o(-4);"), "4:15", "so -4 is no position", "from 0"),
    (body("tile : [16, 32];\n    int z = tile(2);"), "4:18", "the shape 'tile' has 2 elements", "from 0"),
    (copy2d("int z = x.span(2);"), "4:20", "'x' has 2 dimensions, so 2 is no dimension of it", "counted from 0"),
    # integers given a float (7.1, 7.2, 7.4, 7.5, 7.6, 7.7)
    (
        "__co__ void f(global f32 [N] a, f32 h) {\n  parallel p by 4 : block {\n    foreach j in [h] { }\n  }\n}\n",
        "3:19",
        "the extent of 'j' counts its values, but 'h' is a floating-point value",
        "__to<s32>",
    ),
    (body("out.at(p # t) = a.at(__to<f32>(t));"), "3:26", "an element index is an integer", "__to<s32>"),
    (copy2d("dma.copy xs => y.subspan(16.0f, 32).at(bm, bn);"), "4:30", "the extents of '.subspan' are integers", None),
    (body("out.at(p # t) = a.at(p # t) >> 2;"), "3:21", "the operator '>>' needs integer operands", "power of two"),
    (body("f32 v = 1.5f;\n    int z = ~v;"), "4:13", "the operator '~' needs an integer operand", None),
    # '#', '#+', '#-' compose bounded indices (7.2)
    (body("int r = 2;\n    out.at(r # t) = a.at(p # t);"), "4:12", "'r' is an int, not a bounded index", "7.2"),
    (body("f32 v = 1.0f;\n    int z = v #- 1;"), "4:13", "'#-' changes the bound", "7.2"),
    # a buffer's shape is known at entry (6)
    (
        body("foreach k in [4] {\n      local f32 [k + 1] w;\n    }"),
        "4:18",
        "depends on the index 'k' of a loop",
        "'#p'",
    ),
    (
        body("int r = t * 2;\n    local f32 [r] w;"),
        "4:16",
        "depends on 'r', which uses the index 't' of a 'parallel'",
        None,
    ),
    # a function returns a buffer, an input or a future's data, not a view (6)
    (
        _fn("f32 [8] g(global f32 [16] a) {\n  v = a.subspan(8).at(1);\n  return v;\n}"),
        "3:10",
        "'g' returns the view 'v'",
        "copy the view into a buffer",
    ),
    # '<cooperative>' belongs to a block level (7.3)
    (
        VADD.replace("t by 128 : thread", "t by 128 : group<cooperative>").replace("BODY", ""),
        "2:39",
        "'<cooperative>' on the ': group' level",
        ": block<cooperative>'",
    ),
    # fragments: apply names one index per dimension, all_reduce_sum takes 1-D, copy keeps the shape (7.4, 7.9)
    (MMA.replace("apply {i, j}", "apply {i}"), "12:7", "'apply {i}' names 1 index for the 2 dimensions", "{i0, i1}"),
    (
        MMA.replace("reduce_sum(row, acc, 1);", "reduce_sum(row, acc, 1);\n      all_reduce_sum(acc);"),
        "12:22",
        "'all_reduce_sum' sums a 1-D fragment",
        "reduce_sum(row, acc, 1)",
    ),
    (
        MMA.replace(
            "reduce_sum(row, acc, 1);", "reduce_sum(row, acc, 1);\n      frag f32 [32] part;\n      copy(part, row);"
        ),
        "13:7",
        "'part' is [32] and 'row' is [64]",
        "the source's extents",
    ),
    (MMA.replace("apply {i, j} in acc.span", "apply {i, j} in z.span"), "12:7", "'z' is a tensor or buffer", "foreach"),
    (MMA.replace("reduce_sum(row, acc, 1);", "reduce_sum(row, z, 1);"), "11:23", "'reduce_sum' takes fragments", None),
    # things of the wrong kind where spanned data, a fragment or a value is needed (7.6, 7.8, 7.9)
    (body("f32 v = 2.0f;\n    w = v.subspan(4);"), "4:9", "'v' is a scalar; a view is taken of spanned data", None),
    (copy2d("int n = 3;\n    dma.copy n => xs;"), "5:14", "the source of 'dma.copy'", "copy into or out of"),
    (copy2d("int n = 3;\n    dma.copy xs => n;"), "5:20", "the destination of 'dma.copy'", None),
    (
        copy2d("f = dma.copy x.subspan(16, 32).at(bm, bn) => shared;\n    dma.copy f.mdata => xs;"),
        "5:14",
        "'.sp<2:4>'",
        None,
    ),
    (copy2d("int n = 3;\n    int z = n.span(0);"), "5:13", "'.span' is the shape of spanned data", None),
    (
        MMA.replace("mma.row.row acc, xs, ys;", "int q = 1;\n        mma.row.row acc, xs, q;"),
        "10:30",
        "'q' is an int",
        None,
    ),
    # a stream parameter says where kernels launch (6, 7.3): it is no value ("'s' is not declared" before)
    (
        "__co__ void f(global f32 [N] a, stream s) {\n  parallel<s> p by 4 : block {\n    int z = s + 1;\n  }\n}\n",
        "3:13",
        "'s' is a stream parameter, used here as a value",
        "'parallel<s> p by ..'",
    ),
    # atomics act on one element (7.7)
    (
        body("shared f32 [4] s;\n    __atomic_add(s, 1.0f);"),
        "4:18",
        "'s' is a tensor or buffer",
        "'__atomic_add(s.at(i), v)'",
    ),
    (body("__atomic_max(out.subspan(8).at(p), 1.0f);"), "3:18", "is a view", None),
    # a tma copy goes between global and shared memory (7.8)
    (
        copy2d("tma.copy x.subspan(16, 32).at(bm, bn) => y.subspan(16, 32).at(bm, bn);"),
        "4:5",
        "global memory to",
        "shared",
    ),
    (copy2d("g = tma.copy x.subspan(16, 32).at(bm, bn) => global;"), "4:5", "from global memory to global", None),
    # fragments and named barriers only inside 'parallel' (7.3)
    (
        MMA.replace("  parallel {bm, bn}", "  host = mma.fill.f32 0.0f;\n  parallel {bm, bn}"),
        "2:3",
        "'mma.fill' outside",
        None,
    ),
    (
        VADD.replace("  parallel p", "  __bar_arrive(1, 64);\n  parallel p").replace("BODY", ""),
        "2:3",
        "'__bar_arrive'",
        None,
    ),
    # conditions are numbers or bools (7.4); events are triggered and waited on (7.10)
    (body("sh : [8, 4];\n    if (sh) { }"), "4:9", "the condition of 'if' is an integer or bool expression", None),
    (body("while (out && t > 0) { }"), "3:12", "'out' is a tensor or buffer", None),
    (
        PIPE.replace("trigger free_.at(k);", "trigger free_.at(k);\n          int z = 2 * free_[1];"),
        "21:23",
        "is an event",
        None,
    ),
    (
        PIPE.replace("wait ready_.at(k);", "wait ready_.at(k);\n          int z = xs[0].at(free_[0], 0);"),
        "19:28",
        "is an event",
        None,
    ),
]


@pytest.mark.parametrize(("src", "at", "message", "hint"), WRONG, ids=[w[2][:48] for w in WRONG])
def test_mistakes_are_errors_not_refusals(
    src: str, at: str, message: str, hint: str | None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1, err
    line = next((x for x in err.splitlines() if message in x), None)
    assert line is not None and f":{at}: error: " in line, err
    assert "is not translated" not in err and "does not translate" not in err, err
    assert "hint: " in err, err
    if hint is not None:
        assert hint in err, err


# valid programs next to those mistakes: they must still translate (the checks must not over-reject)
NEAR_MISSES = [
    body("ituple o = {4, 5, 6};\n    out.at(p # t) = a.at(p # t) * __to<f32>(o(2) + o(-3));"),
    copy2d("int z = x.span(1);\n    xs.data.at(0, 0) = __to<f32>(z);"),
    body("out.at(p # t) = a.at(p # t) * __to<f32>((t >> 1) & 3);"),
    body("q = p # t;\n    out.at(q) = a.at(q) + b.at(q #- 0);"),
    VADD.replace("  parallel p", "  int w = 64;\n  parallel p").replace(
        "BODY", "shared f32 [w] s;\n    out.at(p # t) = a.at(p # t);"
    ),
    body("shared f32 [#t] s;\n    out.at(p # t) = a.at(p # t);"),
    body("shared f32 [4] s {0.0f};\n    __atomic_add(s.at(t % 4), 1.0f);\n    out.at(p # t) = a.at(p # t);"),
    body("if (t > 0 && a.at(p # t) > 0.0f) { out.at(p # t) = a.at(p # t); }"),
    MMA,
    PIPE,
]


@pytest.mark.parametrize("src", NEAR_MISSES, ids=range(len(NEAR_MISSES)))
def test_valid_near_misses_still_translate(src: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, err = check(capsys, tmp_path, src)
    assert rc == 0, err


def test_fragment_shapes_only_the_lifting_knows(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # an accumulator's shape comes from its MMA: copy and apply are checked by the lifting, as errors
    src = MMA.replace(
        "reduce_sum(row, acc, 1);", "frag f32 [64, 32] part;\n      copy(part, acc);\n      reduce_sum(row, acc, 1);"
    )
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1 and "t.co:12:7: error: in 'mm': 'copy' copies a fragment into one of its shape" in err, err
    assert "[64, 32]" in err and "[64, 64]" in err and "not translate" not in err


def test_a_reserved_word_used_as_a_value_is_not_called_a_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 'nullptr' is a value of 'call' arguments only: where it is read, it is no declared name
    rc, err = check(capsys, tmp_path, body("int z = nullptr;"))
    assert rc == 1 and "t.co:3:13: error: syntax error, unexpected 'nullptr'" in err, err
    assert "reserved word" not in err


# diagnostics that had no hint (a probe of the upstream negative tests, 2026-12-06): each now says what to write
HINTED = [
    (body("foreach k_idx in [4] { out.at(p # t) = a.at(p # t) + k_ixd; }"), "'k_ixd' is not declared",
     "did you mean 'k_idx'?"),
    (body("u64 x = 18446744073709551619ull;"), "out of range", "a floating literal"),
    (body("swap(a);"), "accept exact two parameters", "swap(a, b) exchanges two buffers"),
    (VADD.replace("t by 128 : thread {\n    BODY", "t by 128 : thread {\n    local f32 [4] s[t];"),
     "must be constant integers, not the index 't'", "an array of buffers has one length"),
]  # fmt: skip


@pytest.mark.parametrize(("src", "message", "hint"), HINTED)
def test_errors_that_had_no_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str, message: str, hint: str
) -> None:
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1 and message in err, err
    assert f"hint: {hint}" in err or hint in err.split("hint:", 1)[-1], err
