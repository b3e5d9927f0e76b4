"""Regressions for front-end crashes found by fuzzing and hostile inputs.

Every input here used to raise something other than a located CroqError
(RecursionError, ValueError) or was accepted although it is not valid source.
"""

from __future__ import annotations

import pytest

from croq2triton.cli import dump_ast
from croq2triton.errors import CroqError
from croq2triton.frontend.driver import parse
from croq2triton.frontend.parser import MAX_NESTING
from croq2triton.frontend.printer import print_unit


def body(stmts: str) -> str:
    return f"__co__ void f(s32 [4] a) {{\n{stmts}\n}}\n"


def rejects(src: str, message: str, line: int) -> CroqError:
    with pytest.raises(CroqError) as ei:
        parse(src, "r.co")
    d = ei.value.diagnostics[0]
    assert message in d.message, ei.value.format()
    assert d.span is not None and d.span.line == line, ei.value.format()
    assert "r.co:" in ei.value.format()
    return ei.value


NESTED = {
    "parentheses": lambda n: "x = " + "(" * n + "1" + ")" * n + ";",
    "a long operator chain": lambda n: "x = " + " + ".join(["1"] * (n + 1)) + ";",
    "negations": lambda n: "x = " + "!" * n + "1;",
    "if statements": lambda n: "if (1) " * n + "x = 1;",
    "foreach loops": lambda n: "foreach i in 2 " * n + "x = 1;",
}


@pytest.mark.parametrize("kind", sorted(NESTED))
def test_deep_nesting_is_a_diagnostic_not_a_recursion_error(kind: str) -> None:
    # 3000 levels used to parse, then blow Python's stack in the printer
    rejects(body(NESTED[kind](3000)), "nested too deeply", 2)


@pytest.mark.parametrize("kind", sorted(NESTED))
def test_nesting_well_below_the_limit_parses_prints_and_dumps(kind: str) -> None:
    tu = parse(body(NESTED[kind](MAX_NESTING - 20)), "ok.co")
    again = parse(print_unit(tu), "ok.co")
    assert again == tu
    assert dump_ast(tu).count("\n") > MAX_NESTING - 20


def test_decimal_literal_longer_than_pythons_digit_limit() -> None:
    rejects(body("x = " + "9" * 5000 + ";"), "out of range", 2)
    rejects(body("x = " + "9" * 5000 + "u;"), "out of range", 2)
    rejects("__co__ void f(s32 [" + "9" * 5000 + "] a) {}", "out of range", 1)


@pytest.mark.parametrize(
    ("cond", "message"),
    [
        ("08", "invalid digit in octal constant"),
        ("1" * 5000, "too large"),
        ("0x1" + "0" * 16, "too large"),
        ("(" * 3000 + "1" + ")" * 3000, "nested too deeply"),
    ],
)
def test_bad_if_expressions_are_located(cond: str, message: str) -> None:
    rejects(f"int a;\n#if {cond}\n#endif\n", message, 2)


def test_if_arithmetic_is_64_bit() -> None:
    src = "#if (1 << 63) < 0 && 9223372036854775807 + 1 < 0 && 99999999999 * 99999999999 * 99999999999 != 0\nint ok;\n#endif\n"
    tu = parse(src, "w.co")
    assert "int ok;" in tu.items[0].text  # type: ignore[attr-defined]


@pytest.mark.parametrize("number", ["0", "2147483648", "9" * 5000])
def test_line_directive_out_of_range(number: str) -> None:
    rejects(f"int a;\n#line {number}\n" + body("x = ;"), "#line number out of range", 2)


def test_recursive_macro_chain_points_at_the_use() -> None:
    defs = "".join(f"#define A{i} A{i + 1}\n" for i in range(3000))
    rejects(defs + body("x = A0;"), "nested too deeply", 3002)


def test_unterminated_comment_in_host_text() -> None:
    rejects("int a;\nint b; /* never closed\nint c;\n", "unterminated comment", 2)
