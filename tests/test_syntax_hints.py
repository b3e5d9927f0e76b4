"""Syntax errors that say which rule was broken, at the text that broke it (issue 28; the second
diagnostics probe's UNCLEAR cases still unclear on 2026-12-07):

* C's token paste ``a##b`` in a macro a ``__co__`` function expands: the preprocessor has no ``#`` /
  ``##`` operators (LANGUAGE.md 2); the error is at the ``##`` of the ``#define``, a note at the use
  (was "unexpected '#'" at the use); a variadic macro says it is one (was "bad parameter '...'").

A macro with ``##`` that only host code uses still checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from croq2triton.cli import main

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
