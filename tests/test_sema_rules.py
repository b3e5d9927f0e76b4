"""Rules of the language reference that ``check`` enforces (issue 10: items 4, 5 and the chunkat
warning of 9): re-assigned immutables, the thread count of a block, unroll factors, ``-D`` values
overridden by the file or not integers, and chunkat tilings that leave elements out."""

from __future__ import annotations

from pathlib import Path

import pytest

from croq2triton.cli import main
from croq2triton.errors import CroqError, Diagnostic
from croq2triton.frontend import ast as A
from croq2triton.frontend.driver import parse
from croq2triton.sema.checks import check_unit

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def check(src: str, **defines: str) -> list[Diagnostic]:
    """``croq2triton check`` through the API: the warnings, or raises with the errors."""
    return check_unit(parse(src, "t.co", defines=defines or None))


def errors(src: str, **defines: str) -> list[Diagnostic]:
    with pytest.raises(CroqError) as info:
        check(src, **defines)
    return info.value.diagnostics


def cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str, *argv: str) -> tuple[int, str]:
    path = tmp_path / "t.co"
    path.write_text(src)
    rc = main(["check", *argv, str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, err


def fn(body: str, params: str = "f32 [16] a") -> str:
    return f"__co__ void f({params}) {{\n{body}\n}}\n"


# ---- (4) re-assigning an immutable (LANGUAGE.md 4.3) ---------------------------


def test_assigning_an_int_constant_is_an_error_at_the_assignment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = cli(capsys, tmp_path, fn("  int n = 4;\n  n = 5;"))
    assert rc == 1
    assert "t.co:3:3: error: cannot re-assign 'n': it is an immutable int (declared without 'mutable')" in err
    assert "hint: declare it 'mutable int n = 4;'" in err
    assert "t.co:2:7: note: 'n' is declared here" in err
    assert " 3 |   n = 5;" in err and "   |   ^~~~~" in err


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        ("  int n = 4;\n  n += 1;", "cannot update 'n' with '+=': it is an immutable int", 3),
        ("  bool b = true;\n  b = false;", "cannot re-assign 'b': it is an immutable bool", 3),
        ("  n = 4;\n  n = 5;", "cannot re-assign 'n': it is an immutable int (declared by 'n = 4;')", 3),
        ("  s : [4, 4];\n  t = {1, 2};\n  t = {3, 4};", "cannot re-assign 't': an ituple is immutable", 4),
        ("  ituple t = {1, 2};\n  t = {3, 4};", "cannot re-assign 't': an ituple is immutable", 3),
        ("  parallel p by 4 { p = 2; }", "cannot re-assign 'p': 'p' is a parallel index", 2),
        ("  foreach i in [4] { i = 2; }", "cannot re-assign 'i': 'i' is a loop index", 2),
        # an outer immutable: '=' in a loop shadows it, '+=' would silently leave it unchanged
        ("  int n = 0;\n  foreach i in [4] { n += i; }", "cannot update 'n' with '+='", 3),
        ("  foreach i in [4] { s = i; s = s + 1; }", "cannot re-assign 's'", 2),
    ],
)
def test_re_assigned_immutables(body: str, message: str, line: int) -> None:
    d = errors(fn(body))[0]
    assert message in d.message
    assert d.span is not None and d.span.line == line


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("  int n = 0;\n  foreach i in [4] { n = n + i; }", 3),  # a count, as a mutable would hold it
        ("  bool b = true;\n  if (b) { b = false; }", 3),
    ],
)
def test_an_immutable_assigned_in_an_inner_scope_is_accepted_with_a_warning(body: str, line: int) -> None:
    # accepted as upstream accepts it (its parse tests do it), but not silently: LANGUAGE.md 4.3 calls it
    # an error, and croq2triton updates the outer name
    ws = [w for w in check(fn(body)) if "of an enclosing scope" in w.message]
    assert len(ws) == 1 and ws[0].severity == "warning" and ws[0].span is not None and ws[0].span.line == line
    assert "updates" in ws[0].message and "mutable" in (ws[0].hint or "")


def test_assigning_one_tensor_parameter_to_another_is_an_error() -> None:
    # it passed, and the kernel did nothing (LANGUAGE.md 4.3: spanned data changes only by copies, element
    # writes, MMA stores and atomics)
    d = errors(fn("  parallel p by 4 { b = a; }", "f32 [16] a, f32 [16] b"))[0]
    assert d.message.startswith("cannot re-assign 'b': 'b' is spanned data")
    assert d.span is not None and d.span.line == 2 and "dma.copy SOURCE => b;" in (d.hint or "")


def test_int_parameters_and_symbolic_dimensions_are_immutable() -> None:
    d = errors(fn("  k = 3;", "f32 [M] a, int k"))[0]
    assert d.message == "cannot re-assign 'k': the int parameter 'k' is immutable"
    assert d.hint == "copy it into a mutable: 'mutable int v = k;'"
    d = errors(fn("  M = 3;", "f32 [M] a"))[0]
    assert d.message == "cannot re-assign 'M': 'M' is a symbolic dimension of a parameter shape"


@pytest.mark.parametrize(
    "body",
    [
        "  mutable int n = 4;\n  n = 5;\n  n += 1;",  # mutable
        "  f32 x = 0.0f;\n  x = 1.0f;\n  x += 2.0f;",  # element scalars are mutable by default
        "  int n = 4;\n  foreach i in [4] { n = i; }",  # a new binding of the loop body
        "  foreach k in [4] { stage = k % 2; a.at(stage) = 1.0f; }",  # fresh per iteration
        "  int n = 4;\n  if (n > 2) { n = 1; } else { n = 2; }",  # each branch is a scope
        "  parallel p by 4 {\n    f = dma.copy a => local;\n    f = dma.copy a => local;\n  }",  # futures
    ],
)
def test_what_may_be_assigned(body: str) -> None:
    check(fn(body))


# ---- (4) the thread count of a block (LANGUAGE.md 7.3) ---------------------------


def test_a_block_of_4096_threads_is_a_warning_of_what_triton_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a block's threads are the lanes of its tensors (LANGUAGE.md 9.1): Triton takes up to 2**20
    src = fn("  parallel p by 2 : block {\n    parallel {x, y} by [64, 64] : thread { a.at(x) = 1.0f; }\n  }")
    rc, err = cli(capsys, tmp_path, src)
    assert rc == 0, err
    assert (
        "t.co:3:14: warning: this block has 4096 threads (64 x 64), more than the 1024 of a CUDA block (upstream"
        " croqtile rejects it); croq2triton runs a block's threads as the lanes of its tensors, and a Triton"
        " tensor holds up to 1048576 elements" in err
    )
    assert "hint: to keep the source valid for upstream croqtile, move a factor to ': block'" in err


@pytest.mark.parametrize(
    ("body", "count"),
    [
        ("  parallel {x, y} by [64, 64] { a.at(x) = 1.0f; }", "4096 threads (64 x 64)"),  # one level: threads
        ("  parallel p by 4, q by 32, r by 64 { a.at(r) = 1.0f; }", "2048 threads (32 x 64)"),  # block, group, thread
        ("  parallel p by 4 : block { parallel g by 9 : group-4 { a.at(g) = 1.0f; } }", "1152 threads (9 x 128 per"),
        ("  parallel p by 4 : block { parallel g by 33 : group { a.at(g) = 1.0f; } }", "1056 threads (33 x 32 per"),
        ("  int T = 2048;\n  parallel p by 4 : block { parallel t by T : thread {} }", "2048 threads (T = 2048)"),
        (
            "  parallel p by 4 : block { foreach i in [2] { parallel t by 2048 : thread {} } }",
            "2048 threads,",
        ),
    ],
)
def test_thread_counts(body: str, count: str) -> None:
    warned = [d for d in check(fn(body)) if "more than the 1024 of a CUDA block" in d.message]
    assert len(warned) == 1 and count in warned[0].message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "  parallel p by 4 : block, q by 32 : group, r by 33 : thread { a.at(r) = 1.0f; }",
            "a warp ('group') are a multiple of 32, but this thread level has 33",
        ),
        (
            "  parallel p by 4, q by 32 : group, r by 33 { a.at(r) = 1.0f; }",
            "a warp ('group') are a multiple of 32, but this thread level has 33",
        ),
        (
            "  parallel p by 1 : block { parallel g by 2 : group { parallel {x, y} by [8, 3] : thread {} } }",
            "has 24 (8 x 3)",
        ),
        (
            "  parallel p by 1 : block { parallel g by 2 : group-4 { parallel t by 32 : thread {} } }",
            "a warpgroup ('group-4') are a multiple of 128, but this thread level has 32",
        ),
    ],
)
def test_the_threads_of_a_unit_are_a_multiple_of_its_size(body: str, message: str) -> None:
    assert message in errors(fn(body))[0].message


@pytest.mark.parametrize(
    "body",
    [
        "  parallel p by 4, q by 32, r by 32 { a.at(r) = 1.0f; }",  # 1024
        # a group the default mapping infers (not annotated) binds no count, as upstream's IsEnforced
        "  parallel p by 4, q by 32, r by 33 { a.at(r) = 1.0f; }",
        "  parallel p by 2 { parallel q by 3 { parallel r by 5 { a.at(r) = 1.0f; } } }",
        "  parallel p by 64, q by 64 { a.at(q) = 1.0f; }",  # block x thread
        "  parallel p by 4 : block { parallel g by 8 : group-4 {} }",  # 1024
        "  parallel p by 4096 : block { parallel t by 256 : thread {} }",
        "  parallel p by 4 : block { parallel t by N : thread {} }",  # not known: not checked
        "  parallel p by 1 : block { parallel g by 2 : group { parallel {x, y} by [8, 4] : thread {} } }",
        "  parallel p by 1 : block { parallel g by 2 : group-4 { parallel t by 256 : thread {} } }",
    ],
)
def test_thread_counts_that_fit(body: str) -> None:
    check(fn(body, "f32 [N] a"))


# ---- (4) unroll factors (upstream's parser) ---------------------------------------


def test_unroll_zero_is_rejected_like_upstream() -> None:
    with pytest.raises(CroqError) as info:
        parse(fn("  foreach {i} in [4] : unroll(0) { a.at(i) = 1.0f; }"), "t.co")
    d = info.value.diagnostics[0]
    assert d.message == "unroll factor must be a positive integer"
    assert d.span is not None and (d.span.line, d.span.col) == (2, 31)


@pytest.mark.parametrize("factor", ["-1", "N", "2 + 2"])
def test_unroll_factor_must_be_a_literal(factor: str) -> None:
    with pytest.raises(CroqError, match="syntax error"):
        parse(fn(f"  foreach i in [4] : unroll({factor}) {{ a.at(i) = 1.0f; }}"), "t.co")


def test_unroll_by_a_macro_is_a_literal() -> None:
    check("#define U 4\n" + fn("  foreach i in [4] : unroll(U) { a.at(i) = 1.0f; }"))


# ---- (5) -D and #define (LANGUAGE.md 2) ---------------------------------------------

REDEF = "#define WARP_M 64\n" + fn("  parallel p by WARP_M { a.at(p) = 1.0f; }", "f32 [WARP_M] a")


def test_a_define_over_a_command_line_value_warns_and_wins(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, err = cli(capsys, tmp_path, REDEF, "-D", "WARP_M=32")
    assert rc == 0
    assert "t.co:1:9: warning: 'WARP_M' redefined: this #define's value 64 is used, not -D WARP_M=32" in err
    assert "note: previous definition: command line -D WARP_M=32" in err
    assert "hint: to let -D choose the value, guard the #define with '#ifndef WARP_M' ... '#endif'" in err
    shape = parse(REDEF, "t.co", defines={"WARP_M": "32"}).functions[0].params[0].type.shape
    assert shape is not None and shape.dims == [A.IntLit(64, "64")]  # the #define's value is used


def test_redefinitions_between_defines() -> None:
    warns = check("#define T 16\n#define T 16\n#define T 32\n" + fn("  a.at(0) = 1.0f;"))
    assert len(warns) == 1
    w = warns[0]
    assert w.message == "'T' redefined: the new value 32 is used from here on (it was 16)"
    assert w.span is not None and (w.span.line, w.span.col) == (3, 9)
    assert w.notes[0].message == "previous definition is here"
    assert w.notes[0].span is not None and w.notes[0].span.line == 1


@pytest.mark.parametrize(
    ("src", "defines"),
    [
        ("#define T 16\n#define T  16 \n" + fn("  a.at(T) = 1.0f;"), {}),  # the same value: silent, as in C
        ("#define T 16\n" + fn("  a.at(T) = 1.0f;"), {"T": "16"}),
        ("#ifndef T\n#define T 16\n#endif\n" + fn("  a.at(T) = 1.0f;"), {"T": "8"}),  # guarded: -D chooses
        ("#define T 16\n" + fn("#define T 8\n  a.at(T) = 1.0f;"), {}),  # a function's #define is scoped
        ("#define T 16\n#undef T\n#define T 8\n" + fn("  a.at(T) = 1.0f;"), {}),
    ],
)
def test_silent_definitions(src: str, defines: dict[str, str]) -> None:
    assert check(src, **defines) == []


def test_a_function_define_over_a_command_line_value_warns() -> None:
    warns = check(fn("#define T 8\n  a.at(T) = 1.0f;"), T="4")
    assert [w.message for w in warns] == ["'T' redefined: this #define's value 8 is used in this function, not -D T=4"]


def test_translate_prints_preprocessor_warnings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "t.co"
    path.write_text(REDEF)
    assert main(["translate", "-D", "WARP_M=32", str(path), "-o", "-"]) == 0
    assert "warning: 'WARP_M' redefined" in capsys.readouterr().err


def test_a_non_integer_command_line_size_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = fn("  parallel p by WARP_M { a.at(p) = 1.0f; }")
    rc, err = cli(capsys, tmp_path, src, "-D", "WARP_M=abc")
    assert rc == 1
    assert "t.co:2:17: error: -D WARP_M=abc is not an integer, but 'WARP_M' is used as a size here" in err
    assert "hint: pass an integer: -D WARP_M=<N>" in err
    assert cli(capsys, tmp_path, src, "-D", "WARP_M=4 * 8")[0] == 0


@pytest.mark.parametrize(
    ("src", "where"),
    [
        (fn("  a.at(0) = 1.0f;", "f32 [WARP_M] a"), (1, 20)),  # a parameter shape (would be a symbolic dim)
        (fn("  parallel p by 4 { shared f32 [WARP_M] s; }"), (2, 33)),
        (fn("  foreach i in [WARP_M] { a.at(i) = 1.0f; }"), (2, 17)),
        (fn("  dma.copy a.subspan(WARP_M).at(0) => global;"), (2, 22)),
        ("#define TILE WARP_M * 2\n" + fn("  parallel p by TILE { a.at(p) = 1.0f; }"), (3, 17)),
    ],
)
def test_non_integer_command_line_sizes(src: str, where: tuple[int, int]) -> None:
    d = errors(src, WARP_M="abc")[0]
    assert d.message.startswith("-D WARP_M=abc is not an integer, but 'WARP_M' is used as a size here")
    assert d.span is not None and (d.span.line, d.span.col) == where


def test_non_integer_command_line_values_elsewhere_are_fine() -> None:
    check(fn("  a.at(0) = ALPHA;"), ALPHA="0.5f")  # not a size
    check("#define WARP_M 16\n" + fn("  parallel p by WARP_M { a.at(p) = 1.0f; }"), WARP_M="abc")  # overridden


@pytest.mark.parametrize(
    ("value", "src"),
    [
        ("a b", fn("  parallel p by WARP_M { a.at(p) = 1.0f; }")),
        ("3.5", fn("  a.at(0) = 1.0f;", "f32 [WARP_M] a")),
    ],
)
def test_a_syntax_error_in_a_command_line_value_says_where_it_came_from(value: str, src: str) -> None:
    with pytest.raises(CroqError) as info:
        parse(src, "t.co", defines={"WARP_M": value})
    d = info.value.diagnostics[0]
    assert [n.message for n in d.notes] == [f"this text comes from the command line: -D WARP_M={value}"]


# ---- (9) chunkat tilings that drop elements (LANGUAGE.md 7.6) ---------------------------


def test_tiled_add_warns_that_ragged_outputs_are_not_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = cli(capsys, tmp_path, (EXAMPLES / "tiled_add.co").read_text())
    assert rc == 0 and err.count("warning:") == 1  # the reads of the same grid say nothing more
    assert (
        "t.co:18:21: warning: out.chunkat(bm, bn) tiles M by cdiv(M, TILE_M) and N by cdiv(N, TILE_N) with floor"
        " division: when M is not a multiple of TILE_M (16), up to cdiv(M, TILE_M) - 1 trailing rows of 'out'"
        " are not written; when N is not a multiple of TILE_N (64), up to cdiv(N, TILE_N) - 1 trailing columns"
        " of 'out' are not written"
    ) in err
    assert (
        "hint: use out.subspan(TILE_M, TILE_N).at(bm, bn) with cdiv grids; subspan tiles are masked at the edges"
    ) in err


TILED = """__co__ void f(global f32 [N] a) {{
  f32 [{ext}] out;
  parallel p by {bound} : block {{
    shared f32 [16] s;
    dma.copy a.subspan(16).at(p) => s;
    dma.copy s => {dst};
  }}
}}
"""


@pytest.mark.parametrize(
    ("ext", "bound", "message"),
    [
        (
            "100",
            "8",
            "out.chunkat(p) tiles the extent 100 by 8 with floor division: 100 = 8 x 12 + 4, so the last"
            " 4 elements of 'out' are not written",
        ),  # fmt: skip
        (
            "N",
            "4",
            "out.chunkat(p) tiles N by 4 with floor division: when N is not a multiple of 4, up to 3"
            " trailing elements of 'out' are not written",
        ),  # fmt: skip
        (
            "N",
            "N / 16",
            "tiles N by N / 16 with floor division: when N is not a multiple of N / 16, up to"
            " N / 16 - 1 trailing elements",
        ),  # fmt: skip
    ],
)
def test_chunkat_destinations_that_can_drop(ext: str, bound: str, message: str) -> None:
    warns = check(TILED.format(ext=ext, bound=bound, dst="out.chunkat(p)"))
    assert len(warns) == 1 and message in warns[0].message


def test_a_named_chunkat_view_that_is_written_warns() -> None:
    src = TILED.format(ext="N", bound="4", dst="o").replace(
        "    dma.copy s => o;", "    o = out.chunkat(p);\n    dma.copy s => o;"
    )
    warns = check(src)
    assert len(warns) == 1 and "trailing elements of 'out' are not written" in warns[0].message


@pytest.mark.parametrize(
    ("ext", "bound"),
    [("128", "4"), ("N", "N"), ("N * 4", "4"), ("4 * N", "N"), ("N", "1")],
)
def test_chunkat_that_cannot_drop_is_silent(ext: str, bound: str) -> None:
    assert check(TILED.format(ext=ext, bound=bound, dst="out.chunkat(p)")) == []


def test_a_chunkat_source_on_its_own_grid_warns_as_a_read() -> None:
    src = """__co__ void f(global f32 [M, K] a, global f32 [M] out) {
  parallel m by cdiv(M, 64) : block {
    shared f32 [64, 32] s;
    foreach k in [cdiv(K, 32)] {
      dma.copy a.chunkat(m, k) => s;
    }
    dma.copy s.subspan(64, 1).at(0, 0) => out.subspan(64).at(m);
  }
}
"""
    warns = check(src)
    assert len(warns) == 1
    assert warns[0].message.startswith("a.chunkat(m, k) tiles M by cdiv(M, 64) and K by cdiv(K, 32)")
    assert "up to cdiv(K, 32) - 1 trailing columns of 'a' are not read" in warns[0].message


def test_subspan_tiles_do_not_warn() -> None:
    assert check(TILED.format(ext="N", bound="cdiv(N, 16)", dst="out.subspan(16).at(p)")) == []
