"""The preprocessor (LANGUAGE.md section 2) and the file split (section 1)."""

from __future__ import annotations

import pytest

from croq2triton.errors import CroqError
from croq2triton.frontend import ast as A
from croq2triton.frontend.driver import parse
from croq2triton.frontend.preprocess import preprocess


def co_text(src: str, **kw: object) -> str:
    pp = preprocess(src, "t.co", **kw)  # type: ignore[arg-type]
    return "".join(pp.text[r.start : r.end] for r in pp.regions if r.kind == "co")


def test_object_and_function_like_macros_nest() -> None:
    src = """#define N 4
__co__ void f(f32 [N] a) {
  #define ADD(a , b) \\
    (a + b)
  #define SUB(a, b) (a - b)
  #define NESTED(a, b) ADD(ADD(a, b), SUB(a, b))
  x = NESTED(a.at(0), 1.0f);
}
"""
    out = co_text(src)
    assert "f32 [4] a" in out
    assert "x = ((a.at(0) + 1.0f) + (a.at(0) - 1.0f));" in out


def test_host_lines_are_not_expanded_and_function_defines_stay_local() -> None:
    src = """#define ABC 3
__co__ void f() {
#define ABC 30
  int x = ABC;
}
int host = ABC;
__co__ void g() { int y = ABC; }
"""
    pp = preprocess(src, "t.co")
    host = "".join(pp.text[r.start : r.end] for r in pp.regions if r.kind == "host")
    assert "int host = ABC;" in host
    co = co_text(src)
    assert "int x = 30;" in co and "int y = 3;" in co


@pytest.mark.parametrize(
    ("cond", "taken"),
    [
        ("1", True),
        ("0", False),
        ("defined(M)", True),
        ("defined M && M > 2", True),
        ("!defined(Q)", True),
        ("M / 2 == 2 || 0", True),
        ("(M << 1) == 8 ? 1 : 0", True),
        ("UNKNOWN", False),
        ("M - 5 < 0", True),
    ],
)
def test_if_expressions(cond: str, taken: bool) -> None:
    src = f"#define M 4\n__co__ void f() {{\n#if {cond}\n  int yes = 1;\n#else\n  int no = 1;\n#endif\n}}\n"
    out = co_text(src)
    assert ("yes" in out) == taken and ("no" in out) != taken


def test_elif_chain_and_nesting() -> None:
    src = """__co__ void f() {
#if 0
  int a = 1;
#elif 1
#ifdef X
  int b = 1;
#else
  int c = 1;
#endif
#else
  int d = 1;
#endif
}
"""
    out = co_text(src)
    assert "c = 1" in out and "a = 1" not in out and "b = 1" not in out and "d = 1" not in out
    assert "b = 1" in co_text(src, defines={"X": "1"})


def test_self_referential_macro_terminates() -> None:
    assert "int x = R + 1;" in co_text("#define R R + 1\n__co__ void f() { int x = R; }\n")


def test_command_line_defines_seed_the_table() -> None:
    out = co_text("__co__ void f() { int x = TILE; }", defines={"TILE": "128"})
    assert "int x = 128;" in out


def test_hash_line_renumbers_and_renames() -> None:
    src = '__co__ void f() {\n#line 35 "ab.c"\n  invalid;\n}\n'
    with pytest.raises(CroqError) as ei:
        parse(src, "t.co")
    span = ei.value.span
    assert span is not None and (span.file, span.line, span.col) == ("ab.c", 35, 10)


def test_positions_inside_macro_expansions_map_to_the_use() -> None:
    src = "#define BAD 1 2\n__co__ void f() {\n  int x = BAD;\n}\n"
    with pytest.raises(CroqError) as ei:
        parse(src, "t.co")
    span = ei.value.span
    assert span is not None and span.line == 3 and span.col == 11


def test_intrinsic_pragma_scopes() -> None:
    src = """#pragma croq intrinsic prefix file_
__co__ auto f(s32 [4] a) {
  #pragma croq intrinsic namespace lib
  parallel by 1 {
    #pragma croq intrinsic prefix inner_
    inner_go(0);
    lib::flush();
    file_op(1);
  }
  return 0;
}
"""
    tu = parse(src, "t.co")
    calls = [n for n in tu.walk() if isinstance(n, A.Call)]
    assert [c.name for c in calls] == ["inner_go", "lib::flush", "file_op"]
    bad = src.replace("return 0;", "inner_go(1);\n  return 0;")
    with pytest.raises(CroqError):
        parse(bad, "t.co")


def test_comments_and_strings_do_not_confuse_the_split() -> None:
    src = """// __co__ in a comment
const char* s = "__co__ void nope() {";
/* } __co__ */
__co__ void f() { /* } */ int x = 1; // }
}
int main() { return 0; }
"""
    tu = parse(src, "t.co")
    assert [f.name for f in tu.functions] == ["f"]
    host = "".join(i.text for i in tu.items if isinstance(i, A.HostText))
    assert "int main()" in host and "nope" in host


def test_device_code_islands_are_opaque() -> None:
    src = "__cok__ { void k() { junk junk } }\n__device__ int g(int x) { return x }\n__co__ void f() {}\n"
    tu = parse(src, "t.co")
    assert len([i for i in tu.items if isinstance(i, A.DeviceCode)]) == 2
    assert len(tu.functions) == 1


@pytest.mark.parametrize(
    ("src", "message", "line"),
    [
        ("__co__ void f() {\n  int x = 1;\n", "un-terminated '__co__'", 3),
        ("#if 1\n__co__ void f() {}\n", "unterminated conditional", 1),
        ("#endif\n", "#endif without #if", 1),
        ("#define F(a) a\n#define F(b) b\n", "redefined", 2),
        ("#if 1 +\n#endif\n", "invalid #if expression", 1),
        ("#if 1 / 0\n#endif\n", "division by zero", 1),
        ("__cok__ oops { }\n", "unexpected character outside of kernel code", 1),
        ("#define F(a, b) a\n__co__ void f() { int x = F(1); }\n", "takes 2 argument(s), 1 given", 2),
    ],
)
def test_preprocessor_errors(src: str, message: str, line: int) -> None:
    with pytest.raises(CroqError) as ei:
        parse(src, "t.co")
    d = ei.value.diagnostics[0]
    assert message in d.message
    assert d.span is not None and d.span.line == line


def test_forced_defines_win_over_the_files_own_define() -> None:
    """A tuning point's defines (``forced``) replace the file's unguarded ``#define`` and survive its
    ``#undef``, without the redefinition warning ``-D`` gets; ``-D`` alone still loses to the file."""
    src = "#define W 8\n__co__ void f() { x = W; }\n#undef W\n#define W 4\n__co__ void g() { y = W; }\n"
    forced = preprocess(src, "t.co", forced={"W": "16"})
    assert "x = 16;" in forced.text and "y = 16;" in forced.text
    assert not forced.warnings
    plain = preprocess(src, "t.co", defines={"W": "16"})
    assert "x = 8;" in plain.text and "y = 4;" in plain.text
    assert any("redefined" in w.message for w in plain.warnings)
    local = preprocess("__co__ void f() {\n#define W 2\n  x = W;\n}\n", "t.co", forced={"W": "32"})
    assert "x = 32;" in local.text
