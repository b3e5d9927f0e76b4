"""Syntax errors that say which rule was broken, at the text that broke it (issue 28; the second
diagnostics probe's UNCLEAR cases still unclear on 2026-12-07):

* C's token paste ``a##b`` in a macro a ``__co__`` function expands: the preprocessor has no ``#`` /
  ``##`` operators (LANGUAGE.md 2); the error is at the ``##`` of the ``#define``, a note at the use
  (was "unexpected '#'" at the use); a variadic macro says it is one (was "bad parameter '...'");
* a literal with letters its form does not have (``12ulx``, ``12lu``, ``0x1g``, ``3f``, ``2.5d``):
  the suffixes LANGUAGE.md 3.3 allows (was "unexpected identifier 'x'", hint "is a ';' missing?");
* ``ituple t[2]`` in every form: no array of ituples, the caret on ``[2]`` (was "expecting '='" at
  the ';', or the caret on the name);
* ``assert`` without its message, with a message that is not a string, without the ',' or the
  parentheses: ``assert(condition, "message")`` (was "unexpected ')'" and the like);
* Triton written in a kernel (``tl.program_id(0)``, ``tl.arange``, ``tl.store``, ``triton.cdiv``):
  named as Triton, with the Croqtile form (was "unknown member '.program_id'").

A literal's word used as a name (``inf``, ``true``, ``nullptr``) says it is a literal (was "unexpected
'inf'", with no hint).

Valid programs next to them (a macro with ``##`` that only host code uses, a variable named
``tl``, ``12 * x``) still check."""

from __future__ import annotations

from pathlib import Path

import pytest

from croq2triton.cli import main
from croq2triton.errors import CroqError
from croq2triton.frontend.driver import parse

KERNEL = """__co__ void scale(global f32 [N] x, global f32 [N] y) {
  parallel q by cdiv(N, 64) : block, l by 64 : thread {
    BODY
  }
}
"""


def check(capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str) -> tuple[int, str]:
    path = tmp_path / "k.co"
    path.write_text(src)
    rc = main(["check", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out and "internal error" not in err, err
    return rc, err


def caret(err: str) -> str:
    """The text the first caret line underlines."""
    lines = err.splitlines()
    source, marks = lines[1].split(" | ", 1)[1], lines[2].split(" | ", 1)[1]
    start = marks.index("^")
    return source[start : start + len(marks.strip())]


PASTES = [
    ("#define JOIN(a, b) a##b\n", "int JOIN(wi, de) = 2;", "JOIN", "'JOIN' is expanded here"),
    ("#define SIZE HALF##_N\n", "int s = SIZE;", "SIZE", "'SIZE' is expanded here"),
    (
        "#define JOIN(a, b) a ## b\n#define WIDE JOIN(wi, de)\n",
        "int WIDE = 2;",
        "JOIN",
        "'JOIN' is expanded here (through 'WIDE')",
    ),
]


@pytest.mark.parametrize(("defines", "stmt", "macro", "note"), PASTES, ids=[p[1] for p in PASTES])
def test_token_paste_names_the_define(
    defines: str, stmt: str, macro: str, note: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, defines + KERNEL.replace("BODY", stmt))
    assert rc == 1
    first = err.splitlines()[0]
    line = 1 + next(i for i, d in enumerate(defines.splitlines()) if d.startswith(f"#define {macro}"))
    assert first.startswith(f"{tmp_path / 'k.co'}:{line}:"), err
    assert f"macro '{macro}' pastes tokens with '##'" in first and "no '#' or '##' operators" in first, err
    assert caret(err) == "##", err
    used = note.split("'")[-2] if "through" in note else macro  # the name the body writes
    at = f"{len(defines.splitlines()) + 3}:{5 + stmt.index(used)}"  # (the body's line and column)
    assert "hint: " in err and f"{tmp_path / 'k.co'}:{at}: note: {note}" in err, err


def test_token_paste_used_by_host_code_only_is_fine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = "#define JOIN(a, b) a##b\nint JOIN(host_, count) = 0;\n" + KERNEL.replace(
        "BODY", "y.at(q # l) = x.at(q # l) * 2.0f;"
    )
    rc, err = check(capsys, tmp_path, src)
    assert rc == 0, err


def test_variadic_macro_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, err = check(capsys, tmp_path, "#define ALL(...) __VA_ARGS__\n" + KERNEL.replace("BODY", "int k = 1;"))
    assert rc == 1
    assert "macro 'ALL' is variadic" in err.splitlines()[0] and "hint: name each parameter" in err, err


# (statement, the text the caret underlines, message, hint)
MISTAKES = [
    ("int k = 7ulq;", "7ulq", "'7ulq' is not an integer literal: its suffix is 'u', 'l', 'll', 'ul' or 'ull'", "'7u'"),
    ("int k = 7lu;", "7lu", "'7lu' is not an integer literal", "'7ll'"),
    ("int k = 0xffz;", "0xffz", "'0xffz' is not an integer literal", "'0xffu'"),
    ("int k = 3uu;", "3uu", "'3uu' is not an integer literal", "'3u'"),
    ("y.at(q # l) = 3f;", "3f", "'3f' is not a number: a float literal has a point", "'3.0f'"),
    ("y.at(q # l) = 2.5d;", "2.5d", "'2.5d' is not a float literal: the only suffix of a float is 'f'", "'2.5f'"),
    ("ituple pair[2];", "[2]", "no ituple array is allowed", "'ituple<2> t = {a, b};'"),
    ("ituple<3> trio[4][2];", "[4]", "no ituple array is allowed", "'ituple<2> t = {a, b};'"),
    ("ituple pair[2] = {q, l};", "[2]", "no ituple array is allowed", "'ituple<2> t = {a, b};'"),
    ("assert(N % 64 == 0);", ")", "'assert' needs a message", "'assert(N % 64 == 0, \"..\");'"),
    ("assert(N > 4, 7);", "7", "the message of an 'assert' is a string literal", "'assert(N > 4, \"..\");'"),
    ("assert(N > 4, why);", "why", "the message of an 'assert' is a string literal", "'assert(N > 4, \"..\");'"),
    ('assert(N > 4 "big");', '"big"', "a ',' is missing between the condition and the message", "assert(N > 4, "),
    ("assert N > 4;", "N", "'assert' takes its condition and message in parentheses", "assert("),
    ("int b = tl.program_id(0);", "tl.program_id", "'tl.program_id' is Triton, not Croqtile", "'#p'"),
    ("int n = tl.num_programs(0);", "tl.num_programs", "'tl.num_programs' is Triton", "variable of its 'parallel'"),
    ("int o = tl.arange(0, 64);", "tl.arange", "'tl.arange' is Triton", "thread-level 'parallel'"),
    ("tl.store(y, 1.0f);", "tl.store", "'tl.store' is Triton", "'.at'"),
    ("f32 v = tl.load(x);", "tl.load", "'tl.load' is Triton", "'.at'"),
    ("int c = triton.cdiv(N, 64);", "triton.cdiv", "'triton.cdiv' is Triton", "'cdiv(a, b)'"),
    ("f32 inf = 1.0f;", "inf", "'inf' is a float literal (infinity) and cannot be a name", "'inf_'"),
    ("mutable false = 0;", "false", "'false' is a bool literal and cannot be a name", "'false_'"),
    ("f32 v = tl.atomic_xchg(y, 1.0f);", "tl.atomic_xchg", "'tl.atomic_xchg' is Triton", "'__atomic_exch(x.at(i)"),
    ("int k = 007;", "0", "unexpected integer '0'", "a number has no leading 0: write '7'"),
    ("int k = 0012;", "0", "unexpected integer '0'", "a number has no leading 0: write '12'"),
]


@pytest.mark.parametrize(("stmt", "under", "message", "hint"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_syntax_error_names_the_rule(
    stmt: str, under: str, message: str, hint: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, KERNEL.replace("BODY", stmt))
    assert rc == 1
    first = err.splitlines()[0]
    assert first.startswith(f"{tmp_path / 'k.co'}:3:") and message in first, err
    assert caret(err) == under, err
    assert "hint: " in err and hint in err.split("hint: ", 1)[1], err


VALID = [
    "int tl = 4; y.at(q # l) = x.at(q # l) * __to<f32>(tl);",
    "int k = 12 * N; y.at(q # l) = __to<f32>(k);",
    "int k = 7ul > 3u ? 1 : 0; y.at(q # l) = __to<f32>(k);",
    'assert(N > 4, "at least five"); y.at(q # l) = 2.5f;',
    "ituple<2> pair = {3, 4}; int k = pair(0) + pair(1); y.at(q # l) = __to<f32>(k);",
]


@pytest.mark.parametrize("stmt", VALID)
def test_valid_forms_beside_them_check(stmt: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, err = check(capsys, tmp_path, KERNEL.replace("BODY", stmt))
    assert rc == 0, err


def test_a_parameter_named_by_a_literal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, err = check(capsys, tmp_path, KERNEL.replace("global f32 [N] y", "global f32 [N] inf").replace("BODY", ""))
    assert rc == 1
    assert f"{tmp_path / 'k.co'}:1:52: error: syntax error: 'inf' is a float literal" in err.splitlines()[0], err
    assert caret(err) == "inf" and "hint: give it another name" in err, err


@pytest.mark.parametrize(
    ("src", "word", "col"),
    [
        (
            "__co__ void f(global f32 [N] x) {\n  parallel {bx, by} by [2, 2] : block { x.at(bx) = 1.0f; }\n}\n",
            "by",
            17,
        ),
        ("__co__ void f(global f32 [N] x) {\n  parallel block by 2 : block { x.at(block) = 1.0f; }\n}\n", "block", 12),
        (
            "__co__ void f(global f32 [N] x) {\n  parallel p by 2 : block { foreach in in [3] { x.at(p) = 1.0f; } }\n}\n",
            "in",
            37,
        ),
    ],
)
def test_a_reserved_word_as_a_bounded_name_is_named(src: str, word: str, col: int) -> None:
    """A reserved word as a parallel's or a loop's name, or in a tuple of names ('{bx, by}': probe 5,
    a CUDA port's blockIdx names) is said to be one (was a bare "unexpected 'by'")."""
    with pytest.raises(CroqError) as e:
        parse(src, "t.co")
    (d,) = e.value.diagnostics
    assert d.message == f"syntax error: '{word}' is a reserved word of Croqtile and cannot be a name"
    assert d.span is not None and (d.span.line, d.span.col) == (2, col)
