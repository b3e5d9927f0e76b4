"""Messages that teach (issue 24): a misspelt reserved word, builtin, element type or member is named
at the word with what it should be."""

from __future__ import annotations

import pytest

from croq2triton.errors import CroqError, Diagnostic
from croq2triton.frontend import suggest
from croq2triton.frontend.driver import parse
from croq2triton.sema.checks import check_unit

HEAD = "__co__ void k(global f32 [N] x, global f32 [N] y) {\n"


def _error(src: str, *, sema: bool = False) -> Diagnostic:
    text = src if src.startswith("__co__") else HEAD + src + "\n}\n"
    with pytest.raises(CroqError) as info:
        tu = parse(text, "m.co")
        if sema:
            check_unit(tu)
    d = info.value.diagnostics[0]
    assert d.span is not None and d.span.file == "m.co"
    return d


def _at(d: Diagnostic) -> tuple[int, int, int]:
    assert d.span is not None
    return (d.span.line, d.span.col, d.span.end_col)


# ---------------------------------------------------------------- reserved words


@pytest.mark.parametrize(
    ("body", "word", "right", "at"),
    [
        ("  paralel p by 4 : block { }", "paralel", "parallel", (2, 3, 10)),
        ("  paralell {p, q} by [4, 4] : block { }", "paralell", "parallel", (2, 3, 11)),
        ("  parallel p by 4 : block {\n    forech {j} in [N / 4] { }\n  }", "forech", "foreach", (3, 5, 11)),
        ("  parallel p by 4 : block {\n    forech j in [N / 4] { }\n  }", "forech", "foreach", (3, 5, 11)),
        ("  parallel p by 4 : blok { }", "blok", "block", (2, 21, 25)),
        ("  parallel p by 4 : block, q by 4 : group4 { }", "group4", "group-4", (2, 37, 43)),
        ("  parallel p by 4 : block {\n    whiel (true) { }\n  }", "whiel", "while", (3, 5, 10)),
        ("  parallel p by 4 : block {\n    sync.shard;\n  }", "shard", "shared", (3, 10, 15)),
        (
            "  parallel p by 4 : block {\n    if (p == 0) { y.at(p) = 1.0f; } esle { y.at(p) = 2.0f; }\n  }",
            "esle",
            "else",
            (3, 37, 41),
        ),
    ],
)
def test_a_misspelt_reserved_word_is_named_at_the_word(body: str, word: str, right: str, at: tuple) -> None:
    d = _error(body)
    assert d.message == f"unknown word '{word}'; did you mean '{right}'?"
    assert _at(d) == at
    assert d.hint is not None and f"write '{right}'" in d.hint


def test_the_caret_is_under_the_misspelt_word() -> None:
    d = _error("  paralel p by 4 : block {\n    y.at(p) = x.at(p);\n  }")
    assert d.format().splitlines()[:3] == [
        "m.co:2:3: error: unknown word 'paralel'; did you mean 'parallel'?",
        " 2 |   paralel p by 4 : block {",
        "   |   ^~~~~~~",
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # a ';' missing: 'width' is near 'with', but 'with' does not parse there either
        ("  width = 4\n  height = 5;", "syntax error, unexpected identifier 'height'"),
        # ': unroll(2)' needs its ':'; 'unrol' is not an unknown function either
        ("  foreach j in [N] unrol(2) { }", "syntax error, unexpected '('"),
    ],
)
def test_other_syntax_errors_keep_their_message(body: str, message: str) -> None:
    d = _error(body)
    assert d.message.startswith(message), d.message


# ---------------------------------------------------------------- builtins

ELEMENTWISE = """  parallel p by cdiv(N, 64) : block, t by 64 : thread {{
    {stmt}
  }}"""


@pytest.mark.parametrize(
    ("call", "word", "right"),
    [
        ("__expf(x.at(p # t))", "__expf", "__exp"),
        ("__sqrtf(x.at(p # t) + 1.0f)", "__sqrtf", "__sqrt"),
        ("__maxf(x.at(p # t), 0.0f)", "__maxf", "__max"),
        ("exp(x.at(p # t))", "exp", "__exp"),
        ("expf(x.at(p # t))", "expf", "__exp"),
        ("max(x.at(p # t), 0.0f)", "max", "__max"),
        ("fmaxf(x.at(p # t), 0.0f)", "fmaxf", "__max"),
        ("tanhf(x.at(p # t))", "tanhf", "__tanh"),
    ],
)
def test_a_call_of_a_misspelt_builtin_names_the_builtin(call: str, word: str, right: str) -> None:
    d = _error(ELEMENTWISE.format(stmt=f"y.at(p # t) = {call};"))
    assert d.message == f"'{word}' is not a builtin; did you mean '{right}'?"
    assert _at(d) == (3, 19, 19 + len(word))
    assert d.hint is not None and f"'call {word}(...)'" in d.hint


def test_a_misspelt_atomic_statement_names_the_atomic() -> None:
    d = _error(ELEMENTWISE.format(stmt="__atomicAdd(y.at(p # t), x.at(p # t));"))
    assert d.message == "'__atomicAdd' is not a builtin; did you mean '__atomic_add'?"
    assert _at(d) == (3, 5, 16)


@pytest.mark.parametrize("stmt", ["y.at(p # t) = myfun(x.at(p # t), 2);", "myfun(x.at(p # t), 2);"])
def test_a_call_of_an_unknown_function_says_how_to_call_device_functions(stmt: str) -> None:
    d = _error(ELEMENTWISE.format(stmt=stmt))
    assert d.message == "'myfun' is not a builtin function"
    assert d.span is not None and d.span.col == stmt.index("myfun") + 5
    assert d.hint is not None and "write 'call myfun(...)'" in d.hint and "__exp" in d.hint


@pytest.mark.parametrize(("call", "word", "right"), [("__expf(v)", "__expf", "__exp"), ("exp(t)", "exp", "__exp")])
def test_a_builtin_misspelt_as_a_tuple_component_is_named(call: str, word: str, right: str) -> None:
    # 'name(i)' parses as component i of a tuple: with no tuple of that name, it was a call
    stmt = f"f32 v = x.at(p # t);\n    y.at(p # t) = {call};"
    d = _error(ELEMENTWISE.format(stmt=stmt), sema=True)
    assert d.message == f"'{word}' is not a builtin; did you mean '{right}'?"
    assert _at(d) == (4, 19, 19 + len(word))
    assert d.hint is not None and f"'call {word}(...)'" in d.hint


def test_an_undeclared_tuple_component_says_how_to_call() -> None:
    d = _error(ELEMENTWISE.format(stmt="y.at(p # t) = foo(t);"), sema=True)
    assert d.message == "'foo' is not declared"
    assert d.hint is not None and "'call foo(...)'" in d.hint


def test_tuple_components_and_device_calls_stay_valid() -> None:
    src = HEAD + "  sz = {4, 64};\n" + ELEMENTWISE.format(stmt="y.at(p # t) = x.at(p # t) + sz(0);") + "\n}\n"
    check_unit(parse(src, "m.co"))
    call = HEAD + ELEMENTWISE.format(stmt="call helper(x, p # t);") + "\n}\n"
    check_unit(parse(call, "m.co"))


# ---------------------------------------------------------------- element types


@pytest.mark.parametrize(
    ("text", "word", "right"),
    [
        ("__co__ void k(global i32 [N] x) { }", "i32", "s32"),
        ("__co__ void k(global int32 [N] x) { }", "int32", "s32"),
        ("__co__ void k(global uint8 [N] x) { }", "uint8", "u8"),
        ("__co__ void k(global float32 [N] x) { }", "float32", "f32"),
        ("__co__ void k(global fp16 [N] x) { }", "fp16", "f16"),
        ("__co__ void k(float16 [N] x) { }", "float16", "f16"),
        ("__co__ void k(global bfloat16 [N] x) { }", "bfloat16", "bf16"),
        ("__co__ void k(global fp8 [N] x) { }", "fp8", "f8_e4m3"),
        ("__co__ void k(global i8 [N] x) { }", "i8", "s8"),
        ("__co__ void k(global f33 [N] x) { }", "f33", "f32"),
    ],
)
def test_an_unknown_element_type_in_a_signature(text: str, word: str, right: str) -> None:
    d = _error(text)
    assert d.message == f"unknown element type '{word}'; did you mean '{right}'?"
    col = text.index(word) + 1
    assert _at(d) == (1, col, col + len(word))
    assert d.hint is not None and "the element types are f64 tf32 f32" in d.hint


@pytest.mark.parametrize(
    ("body", "word", "right"),
    [
        ("  parallel p by 4 : block {\n    shared i32 [16] b;\n  }", "i32", "s32"),
        ("  parallel p by 4 : block {\n    i32 [16] b;\n  }", "i32", "s32"),
        ("  parallel p by 4 : block {\n    int32 v = 0;\n  }", "int32", "s32"),
        ("  parallel p by 4 : block {\n    fp16 v = 0.0f;\n  }", "fp16", "f16"),
    ],
)
def test_an_unknown_element_type_in_a_declaration(body: str, word: str, right: str) -> None:
    d = _error(body)
    assert d.message == f"unknown element type '{word}'; did you mean '{right}'?"
    assert d.span is not None and (d.span.line, d.span.end_col - d.span.col) == (3, len(word))


def test_f64_and_the_aliases_of_the_language_stay_valid() -> None:
    parse("__co__ void k(global f64 [N] x, half [N] y, bfp16 [N] z, double [N] w, float [N] v) { }", "m.co")


# ---------------------------------------------------------------- members


@pytest.mark.parametrize(
    ("stmt", "word", "right"),
    [
        ("dma.copy x.chunk_at(p) => shared;", ".chunk_at", ".chunkat"),
        ("dma.copy x.sub_span(16).at(p) => shared;", ".sub_span", ".subspan"),
        ("dma.copy x.spanas([N]).chunkat(p) => shared;", ".spanas", ".span_as"),
        ("dma.copy.zfil x.chunkat(p) => shared;", ".zfil", ".zfill"),
        ("dma.copy x.chunkat(p).zfil => shared;", ".zfil", ".zfill"),
        ("dma.copy x.chunkat(p).swizle<128> => shared;", ".swizle", ".swizzle' or '.swiz"),
    ],
)
def test_an_unknown_member_names_the_member(stmt: str, word: str, right: str) -> None:
    d = _error(f"  parallel p by 4 : block {{\n    {stmt}\n  }}")
    assert d.message == f"unknown member '{word}'; did you mean '{right}'?"
    col = stmt.index(word) + 5
    assert _at(d) == (3, col, col + len(word))
    assert d.hint is not None and ".chunkat" in d.hint


def test_an_unknown_member_without_a_near_one() -> None:
    d = _error("  parallel p by 4 : block {\n    dma.copy x.foo(p) => shared;\n  }")
    assert d.message == "unknown member '.foo'"
    assert _at(d) == (3, 15, 19)


def test_a_misspelt_mma_operation() -> None:
    d = _error("  parallel p by 4 : block {\n    mma.flil.f32 acc, 0.0f;\n  }")
    assert d.message == "unknown member '.flil' of 'mma'; did you mean '.fill'?"
    assert _at(d) == (3, 8, 13)
    assert d.hint is not None and "'.fill'" in d.hint


# ---------------------------------------------------------------- suggestions


def test_the_edit_distance_counts_a_swap_once() -> None:
    assert suggest.distance("whiel", "while") == 1
    assert suggest.distance("paralel", "parallel") == 1
    assert suggest.distance("abc", "xyz") == 3
    assert suggest.keyword("by") == ()  # too short to guess
    assert suggest.builtin("atomicAdd")[0] == "__atomic_add"
    assert suggest.elem_type("int64_t")[0] == "s64"
    assert suggest.member("chunk_at")[0] == "chunkat"
