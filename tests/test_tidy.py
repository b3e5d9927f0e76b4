"""emit/tidy.py: the last step of every generated module keeps each value and its shape, and only
drops what adds nothing (run on hand-written inputs, and each output checked against its input
in Triton's interpreter)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from croq2triton.emit.tidy import Simplify, format_source, simplify_lines, tidy

SCALARS = frozenset({"M", "N"})


def simplified(code: str, scalars: frozenset[str] = SCALARS) -> str:
    return ast.unparse(Simplify(scalars).visit(ast.parse(code)))


@pytest.mark.parametrize(
    ("code", "want"),
    [
        ("(64) * 1 * (1 * 17)", "1088"),
        ("0 * tl.num_programs(0) + tl.program_id(1) * 64", "tl.program_id(1) * 64"),
        ("tl.program_id(0) * 1 + 0", "tl.program_id(0)"),
        ("0 + tl.arange(0, 4)[:, None]", "tl.arange(0, 4)[:, None]"),
        ("x.to(tl.int32) + 0", "x.to(tl.int32)"),
        ("1 * x - 0", "x"),
        ("tl.full([4], 0, tl.float32) - 0.0", "tl.full([4], 0, tl.float32)"),
        ("M // 1", "M"),
        ("[0, 0 + 32]", "[0, 32]"),
        ("tl.full([4], 0, tl.float32) * 1.0", "tl.full([4], 0, tl.float32)"),
        ("(a < M) & (b < N) & (a < M)", "(a < M) & (b < N)"),
        ("(p < 6)[:, None] & (p < 6)[:, None]", "(p < 6)[:, None]"),
    ],
)
def test_what_is_dropped(code: str, want: str) -> None:
    assert simplified(code) == want


@pytest.mark.parametrize(
    "code",
    [
        "0 * tl.arange(0, 4) + 3",  # a block of zeros, not the scalar 0
        "0 * t + 3",  # t is no scalar parameter
        "M * 1.0",  # an integer times 1.0 is a float
        "x + 0.0",  # x may be an integer
        "0.0 * y",  # NaN where y is
        # x, M may be floats: -0.0 + 0 is +0.0; 0 * M is NaN for M = inf or NaN, -0.0 for M < 0
        "x + 0",
        "0 + x",
        "0 * M + 3",
        "tl.full([4], 0, tl.float32) + 0.0",
        "x.to(tl.float32) + 0",
        "f(a) & f(a)",  # a call may differ each time
        "-7 // 2 * 3",  # Python and Triton round negative quotients differently
    ],
)
def test_what_is_kept(code: str) -> None:
    assert simplified(code) == ast.unparse(ast.parse(code))


def test_host_code_folds_every_name() -> None:
    src = "def launch(M):\n    n = ((1)) * ((M) * 1 * (1 * 17 * 32))\n    return n\n"
    assert "n = M * 544" in simplify_lines(src)


KERNEL = textwrap.dedent("""\
    import triton
    import triton.language as tl


    @triton.jit
    def k(x_ptr, out_ptr, M):
        pid = tl.program_id(0)
        stage_1 = pid % 2
        offs = ((0 * tl.num_programs(0)) + (pid * 64)) + tl.arange(0, 64)
        v = tl.load(x_ptr + offs, mask=(offs < ((0 * tl.num_programs(0)) + M)) & (offs < M), other=0.0)  # t.co:3
        # a comment long enough to be wrapped, because it goes on and on about what the next statement does and why
        tl.store(out_ptr + offs * 1, v * 2.0, mask=(offs < M))  # t.co:4
""")


def test_a_kernel_reads_as_written_and_computes_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    out = tidy(KERNEL)
    assert "stage_1" not in out  # a temporary nothing reads
    assert "0 * tl.num_programs" not in out and "offs * 1" not in out
    assert "mask=offs < M," in out or "mask=offs < M)" in out  # the repeated conjunct once
    assert all(len(line) <= 120 for line in out.splitlines())
    assert "# t.co:3" in out and "# t.co:4" in out

    def run(text: str) -> torch.Tensor:
        scope: dict[str, object] = {}
        exec(compile(text, "<tidy>", "exec"), scope)
        x = torch.randn(150, generator=torch.Generator().manual_seed(3))
        y = torch.full((150,), float("nan"))
        scope["k"][(3,)](x, y, 150)  # type: ignore[index]
        return y

    # CPU tensors: the interpreter, for this test only (on a GPU host the tests after it run compiled)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    torch.testing.assert_close(run(out), run(KERNEL), equal_nan=True)


def test_adjacent_strings_and_spelled_numbers_stay_as_written() -> None:
    src = 'raise E(("a long message " "in two parts"), hint=None)\nnan = tl.full([], 0x7FC00000, tl.int32)\n'
    out = simplify_lines(src)
    assert '("a long message " "in two parts")' in out and "0x7FC00000" in out


def test_format_is_ruff_format() -> None:
    pytest.importorskip("ruff", reason="ruff is not installed here (the GPU machine): format_source keeps the text")
    out = format_source("x = [1,\n  2]\ny = {'a':1}\n")
    assert out == 'x = [1, 2]\ny = {"a": 1}\n'


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_the_main_loop_of_the_translated_v4_fits_in_40_lines(schedule: str) -> None:
    from conftest import EXAMPLES

    from croq2triton.api import translate_full

    path = EXAMPLES / "gemm_v4.co"
    tree = ast.parse(translate_full(path.read_text(), filename=str(path), schedule=schedule).source)
    kernel = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "matmul_k0")
    loops = [n for n in ast.walk(kernel) if isinstance(n, ast.For) and "tl.range" in ast.unparse(n.iter)]
    k_loop = next(n for n in loops if "cdiv(K" in ast.unparse(n.iter))
    assert k_loop.end_lineno - k_loop.lineno + 1 <= 40


def test_long_chains_keep_the_parentheses_of_looser_operands() -> None:
    # (a | b) & (c | d) broken over lines: each operand of the & chain keeps its parentheses
    import ast

    from croq2triton.emit.layout import layout

    names = [f"condition_number_{k}" for k in range(8)]
    src = " & ".join(f"({names[2 * k]} | {names[2 * k + 1]})" for k in range(4))
    lines = layout(ast.parse(src, mode="eval").body, 1, "x = ")
    assert len(lines) > 1
    text = "\n".join(line.strip() for line in lines)
    assert ast.dump(ast.parse(text[len("x = ") :], mode="eval")) == ast.dump(ast.parse(src, mode="eval")), text
