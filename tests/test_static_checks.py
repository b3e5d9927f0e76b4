"""Static checks of what is decidable when translating (issue 24): the arity of builtins and the
``return`` statements of a function.  Each error is located at its construct with a hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from croq2triton.cli import main
from croq2triton.errors import CroqError
from croq2triton.frontend.builtins import BUILTINS


def check(capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str) -> tuple[int, str]:
    """``croq2triton check`` of ``src``: its exit status and what it printed on stderr."""
    path = tmp_path / "t.co"
    path.write_text(src)
    rc = main(["check", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, out + err


def refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str, where: str, message: str) -> str:
    """``src`` fails ``check`` with the user's error ``message`` at ``where`` (``line:col``)."""
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1, err
    assert f"t.co:{where}: error: " in err and message in err, err
    assert f"t.co:{where}: error: " in next(ln for ln in err.splitlines() if message in ln), err
    assert "does not translate" not in err, err  # the user's error, not a form croq2triton refuses
    return err


def accepted(capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str) -> None:
    rc, err = check(capsys, tmp_path, src)
    assert rc == 0, err


# ---- (4) builtins' arity (LANGUAGE.md 7.7) --------------------------------------------------

ARITY = """__co__ void f(global f32 [64] a, global f32 [64] b) {{
  parallel p by 1 : block, t by 64 : thread {{
    {stmt}
  }}
}}
"""


def test_a_builtin_with_a_wrong_number_of_arguments_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    err = refused(
        capsys, tmp_path, ARITY.format(stmt="b.at(t) = __max(a.at(t));"), "3:15", "'__max' takes 2 arguments, 1 given"
    )
    assert " 3 |     b.at(t) = __max(a.at(t));" in err and "   |               ^~~~~~~~~~~~~~\n" in err
    assert "hint: __max(a, b): the larger of a and b" in err


def _call(name: str, count: int) -> str:
    """A statement calling the builtin ``name`` with ``count`` arguments."""
    b = BUILTINS[name]
    args = ["a.at(t)" if b.kind == "atomic" else "1.0f"] + ["1.0f"] * (count - 1)
    if b.kind == "math":
        return f"b.at(t) = {name}({', '.join(args)});"
    if b.kind == "barrier":
        return f"{name}({', '.join(['1'] * count)});"
    return f"{name}({', '.join(args)});"


CALLED = [b.name for b in BUILTINS.values() if b.kind != "keyword"]


@pytest.mark.parametrize("name", CALLED)
def test_every_builtin_takes_its_number_of_arguments(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    n = BUILTINS[name].arity
    plural = "s" if n != 1 else ""
    refused(
        capsys,
        tmp_path,
        ARITY.format(stmt=_call(name, n + 1)),
        "3:15" if BUILTINS[name].kind == "math" else "3:5",
        f"'{name}' takes {n} argument{plural}, {n + 1} given",
    )
    rc, err = check(capsys, tmp_path, ARITY.format(stmt=_call(name, n)))
    assert "argument" not in err, err  # the right number: no arity error (it may not translate)


def test_the_table_of_builtins_has_the_arity_of_the_language_reference() -> None:
    spelled = {b.signature for b in BUILTINS.values()}
    assert {"__fmaf(a, b, c)", "__alignup(x, a)", "__aligndown(x, a)", "cdiv(a, b)", "__to<T>(e)"} <= spelled
    assert "__atomic_cas(x.at(..), cmp, v)" in spelled and "__atomic_add(x.at(..), v)" in spelled


# ---- (5) return statements against the declared type (LANGUAGE.md 6) ------------------------


@pytest.mark.parametrize(
    ("src", "where", "message"),
    [
        (
            "__co__ int f(global f32 [N] a) {\n  int x = 3;\n}\n",
            "1:12",
            "the non-void function 'f' (declared 'int') has no 'return'",
        ),
        (
            "__co__ f32 [N] f(global f32 [N] a, bool c) {\n  if (c) return a;\n}\n",
            "1:16",
            "the non-void function 'f' (declared 'f32 [N]') can reach the end of its body without 'return'",
        ),
        (
            "__co__ auto f(global f32 [N] a, bool c) {\n  if (c) return a;\n}\n",
            "1:13",
            "the non-void function 'f' (declared 'auto' with a 'return' of a value) can reach the end",
        ),
        (
            "__co__ int f(global f32 [N] a) {\n  return;\n}\n",
            "2:3",
            "'f' is declared 'int' but this 'return' gives no value",
        ),
        ("__co__ void f(global f32 [N] a) {\n  return a;\n}\n", "2:3", "the void function 'f' returns a value"),
    ],
)
def test_a_function_returns_what_it_declares(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str, where: str, message: str
) -> None:
    err = refused(capsys, tmp_path, src, where, message)
    assert "hint: " in err


def test_missing_return_hint_says_how_to_fix_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = refused(capsys, tmp_path, "__co__ int f(global f32 [N] a) {\n  int x = 3;\n}\n", "1:12", "has no 'return'")
    assert "hint: end every path with 'return x;', or declare the function 'void'" in err
    assert " 1 | __co__ int f(global f32 [N] a) {" in err and "   |            ^" in err


@pytest.mark.parametrize(
    "src",
    [
        "__co__ auto f(global f32 [N] a) {\n  f32 [a.span] b;\n}\n",  # no return: void
        "__co__ void f(global f32 [N] a) {\n  return;\n}\n",
        "__co__ auto f(global f32 [N] a, bool c) {\n  if (c) return a; else return a;\n}\n",
        "__co__ auto f(global f32 [N] a, bool c) {\n  if (c) { return a; }\n  return a;\n}\n",
    ],
)
def test_functions_that_return_what_they_declare_pass(src: str) -> None:
    from croq2triton.frontend.driver import parse
    from croq2triton.sema.checks import check_unit

    try:
        check_unit(parse(src, "t.co"))
    except CroqError as e:  # pragma: no cover - the failure message
        pytest.fail(e.format())
