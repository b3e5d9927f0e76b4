"""Static checks of what is decidable when translating (issue 24): copy shapes against their
destination, indices against extents, the element types of an MMA, the arity of builtins and the
``return`` statements of a function.  Each error is located at its construct with a hint; valid
programs around each rule (the tail rule, guarded indices, padded lanes, masked tails of global
tensors) still translate."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_close, load_co, poisoned, randn

from croq2triton.api import translate_full
from croq2triton.cli import main
from croq2triton.errors import CroqError, CroqSemanticError
from croq2triton.frontend.builtins import BUILTINS
from croq2triton.runtime.launch import CroqLaunchError


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


# ---- (1) copy shapes against their destination (LANGUAGE.md 7.8) ---------------------------

COPY = """__co__ void f(global f32 [M, N] a, global f32 [M, N] b) {{
  parallel {{bm, bn}} by [cdiv(M, 32), cdiv(N, 32)] : block, {{i, j}} by [32, 32] : thread {{
    shared f32 [32, 32] s;
    dma.copy {src} => s;
    b.at(bm # i, bn # j) = s.at(i, j);
  }}
}}
"""


def test_a_copy_larger_than_its_destination_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = refused(
        capsys,
        tmp_path,
        COPY.format(src="a.subspan(32, 64).at(bm, bn)"),
        "4:5",
        "dma.copy of 'a.subspan(32, 64).at(bm, bn)' [32, 64] into 's' [32, 32]: the source is larger along"
        " dimension 1 (64 > 32)",
    )
    assert " 4 |     dma.copy a.subspan(32, 64).at(bm, bn) => s;" in err
    assert "   |     ^~~~~~~~" in err
    assert "hint: a copy's destination has its source's shape (after .transp / .pad); a smaller source" in err


def test_a_smaller_source_is_the_tail_rule(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "tail.co"
    path.write_text(COPY.format(src="a.subspan(16, 32).at(bm, bn)"))
    accepted(capsys, tmp_path, path.read_text())
    m = load_co(path)
    a, b = randn(37, 45, seed=1), poisoned(37, 45)
    m.f(a, b)
    ref = torch.zeros(37, 45)  # tile bm holds rows 16 bm .. 16 bm + 15 of a, then the tail's zeros
    for bm in range(2):
        for i in range(16):
            if bm * 32 + i < 37:
                ref[bm * 32 + i] = a[bm * 16 + i]
    assert_close(b, ref)


def test_a_transposed_copy_compares_the_transposed_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = """__co__ void f(global f32 [M, N] a, global f32 [N, M] b) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 32)] : block, {i, j} by [32, 16] : thread {
    shared f32 [16, 32] s;
    dma.transp<1, 0> a.subspan(16, 32).at(bm, bn) => s;
    b.at(bn # i, bm # j) = s.at(j, i);
  }
}
"""
    refused(
        capsys,
        tmp_path,
        src,
        "4:5",
        "dma.transp of 'a.subspan(16, 32).at(bm, bn)' [16, 32] (transposed: [32, 16]) into 's' [16, 32]: the source"
        " is larger along dimension 0 (32 > 16)",
    )
    accepted(
        capsys,
        tmp_path,
        src.replace("shared f32 [16, 32] s", "shared f32 [32, 16] s").replace("s.at(j, i)", "s.at(i, j)"),
    )


def test_a_copy_of_another_rank_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = """__co__ void f(global f32 [M, N] a, global f32 [M, N] b) {
  parallel p by M : block, t by 64 : thread {
    shared f32 [64] s;
    dma.copy a.subspan(1, 64).at(p, 0) => s;
    b.at(p, t) = s.at(t);
  }
}
"""
    err = refused(
        capsys,
        tmp_path,
        src,
        "4:5",
        "dma.copy of 'a.subspan(1, 64).at(p, 0)' [1, 64] into 's' [64]: the source has 2 dimension(s), the destination 1",
    )
    assert "'.sqz()' drops a view's dimensions of extent 1" in err
    accepted(capsys, tmp_path, src.replace("at(p, 0) => s", "at(p, 0).sqz() => s"))


def test_a_buffer_stored_into_a_smaller_window_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = """__co__ void f(global f32 [M, N] a, global f32 [M, N] b) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    shared f32 [32, 32] s;
    dma.copy a.subspan(32, 32).at(bm, bn) => s;
    dma.copy s => b.subspan(16, 32).at(bm, bn);
  }
}
"""
    refused(
        capsys,
        tmp_path,
        src,
        "5:5",
        "dma.copy of 's' [32, 32] into 'b.subspan(16, 32).at(bm, bn)' [16, 32]: the source is larger along dimension 0",
    )


def test_a_store_into_a_window_of_run_time_rows_is_the_tail_of_a_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "rows.co"
    path.write_text("""__co__ void f(global f32 [M, 64] a, global f32 [M, 64] b) {
  parallel p by cdiv(M, 16) : block {
    shared f32 [16, 64] s;
    rows = (M - p * 16 < 16) ? M - p * 16 : 16;
    dma.copy a.view(rows, 64).from(p * 16, 0) => s;
    dma.copy s => b.view(rows, 64).from(p * 16, 0);
  }
}
""")
    accepted(capsys, tmp_path, path.read_text())
    a, b = randn(37, 64, seed=2), poisoned(37, 64)
    load_co(path).f(a, b)
    assert_close(b, a)


def test_a_source_extent_known_at_launch_is_checked_by_the_launcher(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "runtime_k.co"
    path.write_text("""__co__ void f(global f32 [M, K] a, global f32 [M, K] b) {
  parallel bm by cdiv(M, 16) : block, {i, j} by [16, 64] : thread {
    shared f32 [16, 64] s;
    dma.copy a.subspan(16, K).at(bm, 0) => s;
    b.at(bm # i, j) = s.at(i, j);
  }
}
""")
    accepted(capsys, tmp_path, path.read_text())
    m = load_co(path)
    a, b = randn(37, 48, seed=3), poisoned(37, 48)
    m.f(a, b)  # K = 48 <= 64: the tail rule
    assert_close(b, a)
    with pytest.raises(CroqLaunchError, match=r"the source is larger along dimension 1 \(K > 64\)") as info:
        m.f(randn(37, 80, seed=4), poisoned(37, 80))
    assert "runtime_k.co:4:" in str(info.value)


# ---- (2) indices against extents (LANGUAGE.md 7.5) ------------------------------------------

LOOP = """__co__ void f(global f32 [32, 32] a, global f32 [32, 32] b) {{
  parallel p by 1 : block, t by 32 : thread {{
    shared f32 [32, 32] s;
    shared f32 [32, 32] d;
    dma.copy a => s;
    foreach {{i, j}} in [32, 16] {{
      {stmt}
    }}
    dma.copy d => b;
  }}
}}
"""


@pytest.mark.parametrize(
    ("stmt", "where", "message"),
    [
        # the example: j < 16, so j + 32 is in [32, 48)
        (
            "d.at(i, j) = s.at(i, j + 32);",
            "7:28",
            "'s' has 32 elements along dimension 1, but its index 'j + 32' there",
        ),
        (
            "d.at(i, j) = s.at(i, j + 20);",
            "7:28",
            "its index 'j + 20' there takes the values 20 to 35: 32 to 35 are outside",
        ),
        ("d.at(i, j) = s.at(i, j - 1);", "7:28", "its index 'j - 1' there takes the values -1 to 14: -1 is outside"),
        (
            "d.at(i, j + 17) = s.at(i, j);",
            "7:15",
            "'d' has 32 elements along dimension 1, but its index 'j + 17' there takes",
        ),
        ("d.at(i, 32) = s.at(i, j);", "7:15", "'d' has 32 elements along dimension 1, but its index '32' there is 32"),
        (
            "d.at(i + 32, j) = s.at(i, j);",
            "7:12",
            "'d' has 32 elements along dimension 0, but its index 'i + 32' there",
        ),
    ],
)
def test_an_index_outside_its_buffer_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stmt: str, where: str, message: str
) -> None:
    err = refused(capsys, tmp_path, LOOP.format(stmt=stmt), where, message)
    assert "hint: the indices of '" in err and "run from 0 to 31" in err


@pytest.mark.parametrize(
    "stmt",
    [
        "d.at(i, j + 16) = s.at(i, j);",  # [16, 32): inside
        "if (j + 20 < 32) d.at(i, j) = s.at(i, j + 20);",  # the guard excludes the values outside
        "if (j > 0) d.at(i, j) = s.at(i, j - 1);",
    ],
)
def test_an_index_inside_its_buffer_or_guarded_translates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stmt: str
) -> None:
    path = tmp_path / "ok.co"
    path.write_text(LOOP.format(stmt=stmt))
    accepted(capsys, tmp_path, path.read_text())
    a, b = randn(32, 32, seed=5), poisoned(32, 32)
    load_co(path).f(a, b)
    ref = torch.zeros(32, 32)  # d is zero where nothing writes it
    for i in range(32):
        for j in range(16):
            if "j + 16" in stmt:
                ref[i, j + 16] = a[i, j]
            elif "j + 20" in stmt and j + 20 < 32:
                ref[i, j] = a[i, j + 20]
            elif "j - 1" in stmt and j > 0:
                ref[i, j] = a[i, j - 1]
    assert_close(b, ref)


LANES = """__co__ void f(global f32 [24] a, global f32 [24] b) {{
  parallel p by 1 : block, t by 24 : thread {{
    shared f32 [24] s;
    dma.copy a => s;
    {stmt}
  }}
}}
"""


def test_lanes_that_pad_a_thread_level_are_not_indices(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # 24 threads are 32 lanes, 8 of them masked off: t takes the values 0 to 23 only
    path = tmp_path / "lanes.co"
    path.write_text(LANES.format(stmt="b.at(t) = s.at(t);"))
    accepted(capsys, tmp_path, path.read_text())
    a, b = randn(24, seed=6), poisoned(24)
    load_co(path).f(a, b)
    assert_close(b, a)
    refused(
        capsys,
        tmp_path,
        LANES.format(stmt="b.at(t) = s.at(t + 1);"),
        "5:20",
        "'s' has 24 elements along dimension 0, but its index 't + 1' there takes the values 1 to 24: 24 is outside",
    )
    refused(capsys, tmp_path, LANES.format(stmt="s.at(t + 1) = 1.0f;"), "5:10", "its index 't + 1' there")


def test_an_index_of_a_fragment_is_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = """__co__ void f(global f32 [64] a) {
  parallel p by 1 : block, by 1 : group-4 {
    frag f32 [64] r {1.0f};
    frag f32 [64] q;
    apply {i} in q.span
      q.at(i) = r.at(i + 1);
  }
}
"""
    refused(capsys, tmp_path, src, "6:22", "'r' has 64 elements along dimension 0, but its index 'i + 1' there")


GLOBAL = """__co__ void f(global f32 [1000] a, global f32 [1000] b) {{
  parallel p by 8 : block, t by 128 : thread {{
    b.at(p # t) = a.at({index});
  }}
}}
"""


def test_a_global_tensor_index_is_an_error_only_where_it_is_always_outside(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 8 x 128 lanes over 1000 elements: the last 24 are the masked tail (reads outside are zero)
    accepted(capsys, tmp_path, GLOBAL.format(index="p # t + 1"))
    refused(capsys, tmp_path, GLOBAL.format(index="p # t + 1000"), "3:24", "'a' has 1000 elements along dimension 0")


# ---- (3) the element types of an MMA (LANGUAGE.md 7.9) --------------------------------------

MMA = """__co__ void f(global {a} [M, K] a, global {b} [N, K] b, global {c} [M, N] c) {{
  parallel {{bm, bn}} by [cdiv(M, 64), cdiv(N, 64)] : block, by 1 : group-4 {{
    acc = mma.fill{acc} 0;
    foreach {{k}} in [cdiv(K, 32)] {{
      sa = dma.copy a.subspan(64, 32).at(bm, k) => shared;
      sb = dma.copy b.subspan(64, 32).at(bn, k) => shared;
      mma.row.row acc, sa, sb;
    }}
    mma.store acc, c.subspan(64, 64).at(bm, bn);
  }}
}}
"""


def test_mma_operands_of_different_types_are_the_users_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    err = refused(
        capsys,
        tmp_path,
        MMA.format(a="f32", b="f16", c="f32", acc=""),
        "7:7",
        "an MMA of f32 x f16 operands: its operands must have the same type",
    )
    assert "hint: the MMAs of the language (operands -> accumulator): f16 -> f16/f32, bf16 -> f32" in err


@pytest.mark.parametrize(
    ("a", "acc", "message"),
    [
        ("f16", ".s32", "an MMA of f16 operands accumulates into f16 or f32, not s32"),
        ("bf16", ".f16", "an MMA of bf16 operands accumulates into f32, not f16"),
        ("s8", ".f32", "an MMA of s8 operands accumulates into s32, not f32"),
    ],
)
def test_an_accumulator_no_mma_of_its_operands_gives_is_the_users_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, a: str, acc: str, message: str
) -> None:
    err = refused(capsys, tmp_path, MMA.format(a=a, b=a, c="f32", acc=acc), "7:7", message)
    assert "hint: declare the accumulator" in err


def test_a_valid_mma_croq2triton_does_not_translate_stays_a_tool_limit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # s8 x u8 into s32 is an MMA of the language (mma.sync); tl.dot takes no mixed signedness
    rc, err = check(capsys, tmp_path, MMA.format(a="s8", b="u8", c="s32", acc=".s32"))
    assert rc == 1 and "croq2triton does not translate an MMA on s8 x u8 operands" in err, err
    accepted(capsys, tmp_path, MMA.format(a="s8", b="s8", c="s32", acc=""))
    accepted(capsys, tmp_path, MMA.format(a="f16", b="f16", c="f32", acc=".f16"))


def test_an_mma_error_fails_only_its_function(tmp_path: Path) -> None:
    bad = MMA.format(a="f32", b="f16", c="f32", acc="")
    good = bad.replace("void f(", "void g(").replace("global f32 [M, K] a", "global f16 [M, K] a")
    out = translate_full(bad + good, filename=str(tmp_path / "t.co"))
    assert out.lowered == ["g"] and list(out.failed) == ["f"]
    assert isinstance(out.failed["f"], CroqSemanticError), out.failed["f"].format()


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
