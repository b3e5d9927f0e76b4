"""Messages that teach (issue 24): a misspelt reserved word, builtin, element type or member is named
at the word with what it should be, and a launch error points at the parameter it is about."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import pythonpath
from kernel_util import DEVICE

import croq2triton
from croq2triton.api import translate_full
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


# ---------------------------------------------------------------- launch errors

SCALE = """// scales x into out
__co__ void scale(global f32 [N, 4] x,
                  global f32 [N, 4] out, f32 alpha) {
  parallel p by N : block
    foreach j in [4]
      out.at(p, j) = x.at(p, j) * alpha;
}
"""

FLAT = """__co__ void flat(global f32 [4, 8] x, global f32 [4] out) {
  xf = x.span_as([32]);
  parallel p by 4 : block {
    mutable f32 s = 0.0f;
    foreach j in [8]
      s += xf.at(p * 8 + j);
    out.at(p) = s;
  }
}
"""


@pytest.fixture
def scale(tmp_path: Path):  # noqa: ANN201
    path = tmp_path / "scale.co"
    path.write_text(SCALE)
    return croq2triton.load(path), str(path)


def _launch_error(f, *args) -> CroqError:  # noqa: ANN001
    with pytest.raises(CroqError) as info:
        f(*args)
    return info.value


def test_a_wrong_dtype_points_at_the_parameter(scale) -> None:  # noqa: ANN001
    mod, path = scale
    e = _launch_error(mod.scale, torch.randn(5, 4, device=DEVICE), torch.randn(5, 4, device=DEVICE).double(), 2.0)
    assert e.format().splitlines() == [
        f"{path}:3:19: error: scale: parameter 'out' has dtype torch.float64, expected torch.float32",
        " 3 |                   global f32 [N, 4] out, f32 alpha) {",
        "   |                   ^~~~~~~~~~~~~~~~~~~~~",
        "hint: convert it first, e.g. out.to(torch.float32)",
    ]


def test_a_wrong_rank_a_fixed_extent_and_a_scalar_point_at_their_parameters(scale) -> None:  # noqa: ANN001
    mod, _ = scale
    e = _launch_error(mod.scale, torch.randn(5, device=DEVICE), torch.randn(5, 4, device=DEVICE), 2.0)
    assert "has rank 1" in e.message and _at(e.diagnostics[0]) == (2, 19, 38) and e.diagnostics[0].hint
    e = _launch_error(mod.scale, torch.randn(5, 3, device=DEVICE), torch.randn(5, 4, device=DEVICE), 2.0)
    assert "x.shape[1] is 3, but the function declares 4" in e.message and _at(e.diagnostics[0]) == (2, 19, 38)
    e = _launch_error(mod.scale, torch.randn(5, 4, device=DEVICE), torch.randn(5, 4, device=DEVICE), "two")
    assert "'alpha' must be a number" in e.message and _at(e.diagnostics[0]) == (3, 42, 51)


def test_a_tensor_on_another_device_points_at_the_parameter(scale) -> None:  # noqa: ANN001
    mod, _ = scale
    e = _launch_error(mod.scale, torch.randn(5, 4, device="meta"), torch.randn(5, 4, device=DEVICE), 2.0)
    assert "'global' parameter 'x' is on meta" in e.message
    assert _at(e.diagnostics[0]) == (2, 19, 38)


def test_an_inconsistent_size_points_at_both_parameters(scale) -> None:  # noqa: ANN001
    mod, path = scale
    e = _launch_error(mod.scale, torch.randn(5, 4, device=DEVICE), torch.randn(6, 4, device=DEVICE), 2.0)
    d = e.diagnostics[0]
    assert d.message == "scale: inconsistent size 'N': x.shape[0] is 5 but out.shape[0] is 6"
    assert _at(d) == (3, 19, 40)
    assert [(n.message, _at(n)) for n in d.notes] == [("'N' is 5, from x.shape[0]", (2, 19, 38))]
    assert f"{path}:2:19: note: 'N' is 5, from x.shape[0]" in e.format()


def test_a_non_contiguous_tensor_that_span_as_needs_points_at_the_parameter(tmp_path: Path) -> None:
    path = tmp_path / "flat.co"
    path.write_text(FLAT)
    mod = croq2triton.load(path)
    x = torch.randn(8, 4, device=DEVICE).t()  # 4 x 8, not contiguous
    e = _launch_error(mod.flat, x, torch.empty(4, device=DEVICE))
    assert "needs a contiguous tensor" in e.message
    assert e.format().splitlines()[1:3] == [
        " 1 | __co__ void flat(global f32 [4, 8] x, global f32 [4] out) {",
        "   |                  ^~~~~~~~~~~~~~~~~~~",
    ]


# A generated module imported by itself (not through croq2triton.load, which registers the text it
# translated): in a fresh process, as a user's script would.
IMPORT = """
import importlib, sys, torch
from croq2triton.errors import CroqError
for name in sys.argv[1:]:
    try:
        importlib.import_module(name).scale(torch.randn(5, 4).half(), torch.randn(5, 4), 2.0)
    except CroqError as e:
        print(e.format())
    print("====")
"""


def _imported(folder: Path, *names: str) -> list[list[str]]:
    repo = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=pythonpath(repo, folder), TRITON_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, "-c", IMPORT, *names], cwd=folder, env=env, capture_output=True, text=True, check=True
    )
    return [part.strip("\n").splitlines() for part in done.stdout.split("====")[:-1]]


def test_an_imported_module_reads_the_co_file_beside_it_if_it_is_the_same(tmp_path: Path) -> None:
    for name in ("beside", "alone", "stale"):
        (tmp_path / f"{name}.py").write_text(translate_full(SCALE, filename=f"{name}.co").source)
    (tmp_path / "beside.co").write_text(SCALE)
    (tmp_path / "stale.co").write_text(SCALE.replace("global f32 [N, 4] x,", "global f32 [N, 4] input,"))
    beside, alone, stale = _imported(tmp_path, "beside", "alone", "stale")
    message = "scale: parameter 'x' has dtype torch.float16, expected torch.float32"
    hint = "hint: convert it first, e.g. x.to(torch.float32)"
    assert beside == [
        f"beside.co:2:19: error: {message}",
        " 2 | __co__ void scale(global f32 [N, 4] x,",
        "   |                   ^~~~~~~~~~~~~~~~~~~",
        hint,
    ]
    assert alone == [f"alone.co:2:19: error: {message}", hint]  # no .co beside it: still located
    assert stale == [f"stale.co:2:19: error: {message}", hint]  # edited since: no stale source line


def test_a_tile_too_large_for_one_program_is_refused_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """dma_3d.co's test_batch_s32 copies the whole [M, N, K] input into one buffer: at 40^3 one
    program would hold a 64^3 tile, which ptxas compiled for over an hour (2026-12-03). Compiled, the
    launcher refuses it with the sizes; the interpreter runs it."""
    from croq2triton.runtime import launch as rt

    f = rt.Fn("test_batch_s32", "dma_3d.co", 84)
    monkeypatch.setattr(rt, "interpreting", lambda: True)
    assert rt.block_extents(f, "the buffer 'tile' (dma_3d.co:89)", (40, 40, 40)) == (64, 64, 64)
    monkeypatch.setattr(rt, "interpreting", lambda: False)
    monkeypatch.setattr(rt, "_has_cuda", lambda: True)
    assert rt.block_extents(f, "the buffer 'tile' (dma_3d.co:89)", (3, 8, 16)) == (4, 8, 16)
    with pytest.raises(rt.CroqLaunchError) as e:
        rt.block_extents(f, "the buffer 'tile' (dma_3d.co:89)", (40, 40, 40))
    text = str(e.value)
    assert "dma_3d.co:84" in text and "extents [40, 40, 40]" in text and "262144 elements" in text
    assert "chunkat / subspan" in text
