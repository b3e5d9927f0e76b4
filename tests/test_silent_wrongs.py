"""Programs that croq2triton once translated into wrong results or broken modules without a word.

Each test runs a small program written for it in both schedules (and under the OOB sanitizer
where reads may leave a tensor) on random data with ragged sizes, outputs poisoned first.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import sm90
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

import croq2triton

SCHEDULES = ["source", "auto"]


def _load(tmp_path: Path, text: str, schedule: str, oob_fill: str = "zero", stem: str = "prog") -> Any:
    path = tmp_path / f"{stem}.co"
    path.write_text(text)
    return croq2triton.load(path, schedule=schedule, oob_fill=oob_fill)


def _compile(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``croq2triton compile`` for sm_90a in a process without the interpreter (tests/sm90.py)."""
    return sm90.croq("compile", str(path), *args)


# ------------------------------------------------------------------ conditions on loop counters

COUNTERS = """
__co__ void on_counter(global f32 [N, 4] x, global f32 [N] out) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    mutable f32 acc = 1.0f;
    foreach k in [4] {
      if (k == 0) acc += x.at(p # t, k);
      else acc = acc * 2.0f;
    }
    if (p # t < N) out.at(p # t) = acc;
  }
}

__co__ void on_either(global f32 [N, 4] x, global f32 [N] out) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    mutable f32 acc = 1.0f;
    foreach k in [4] {
      if (k == 0 || k == 3) acc += x.at(p # t, k);
      else if (!(k < 2)) acc = acc * 3.0f;
      else acc = acc * 2.0f;
    }
    if (p # t < N) out.at(p # t) = acc;
  }
}

__co__ void on_value(global f32 [N] x, global f32 [N] out) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    if (p # t < N) {
      if (!(x.at(p # t) < 0.5f)) out.at(p # t) = x.at(p # t);
      else out.at(p # t) = -1.0f;
    }
  }
}

__co__ void divisions(global s32 [N, 8] out) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    foreach k in [8]
      if (p # t < N) out.at(p # t, k) = (k - 5) / 2 * 10 + (k - 5) % 3;
  }
}
"""


@pytest.mark.parametrize("oob_fill", ["zero", "nan"])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_condition_on_a_loop_counter_takes_one_branch(tmp_path: Path, schedule: str, oob_fill: str) -> None:
    # in the interpreter a loop counter is a Python int: `~(k == 0)` was -2 (true), both branches ran
    mod = _load(tmp_path, COUNTERS, schedule, oob_fill)
    n = 37
    x, out = randn(n, 4, seed=21), poisoned(n)
    mod.on_counter(x, out)
    assert_close(out, (1 + x[:, 0].double()) * 8, atol=1e-5, rtol=1e-5)
    out = poisoned(n)
    mod.on_either(x, out)
    assert_close(out, (1 + x[:, 0].double()) * 2 * 3 + x[:, 3].double(), atol=1e-5, rtol=1e-5)
    v, out = randn(n, seed=22), poisoned(n)
    mod.on_value(v, out)
    assert_close(out, torch.where(v >= 0.5, v, -1.0), atol=0, rtol=0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_integer_division_of_loop_counters_truncates(tmp_path: Path, schedule: str) -> None:
    # `(k - 5) / 2` of a Python int floors in the interpreter; Croqtile's `/` and `%` truncate (as C)
    mod = _load(tmp_path, COUNTERS, schedule)
    out = torch.full((37, 8), -999, dtype=torch.int32, device=DEVICE)
    mod.divisions(out)
    k = torch.arange(8) - 5
    want = torch.div(k, 2, rounding_mode="trunc") * 10 + torch.fmod(k, 3)
    assert torch.equal(out.cpu(), want.to(torch.int32).expand(37, 8))


@pytest.mark.slow
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_negations_and_divisions_compile_for_sm90(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "counters.co"
    path.write_text(COUNTERS)
    r = _compile(path, "--size", "N=37", "--schedule", schedule)
    assert r.returncode == 0, r.stderr
    assert all(f"{f}_k0" in r.stdout for f in ("on_counter", "on_either", "on_value", "divisions")), r.stdout


# ------------------------------------------------------------------ print and assert under a condition

PRINTS = """
__co__ void first(global f32 [N] x) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    if (p # t == 0) println("x0 ", x.at(0));
  }
}

__co__ void large(global f32 [N] x) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    if (p # t < N && x.at(p # t) > 1.0f) println("large ", p # t, x.at(p # t));
  }
}

__co__ void second_block(global f32 [N] x) {
  parallel p by cdiv(N, 16) : block, {i, j} by [4, 4] : thread {
    if (p == 1) println("second ", x.at(p * 16 + i * 4 + j));
  }
}

__co__ void corner(global f32 [N, N] x) {
  parallel p by cdiv(N, 8) : block, {i, j} by [8, 4] : thread {
    if (i == 7 && j == 2) println("corner ", p, x.at(p # i, j));
  }
}

__co__ void checked(global f32 [N] x) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    if (p # t < N) assert(p # t < N, "inside");
  }
}

__co__ void failing(global f32 [N] x) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    if (p # t < N) assert(p # t < N - 1, "the last element");
  }
}
"""


def _printed(text: str, label: str) -> list[list[float]]:
    """The values of each ``label`` line the interpreter printed (``(pid)  label:  [v]``, one line per value)."""
    lines = [line.split(f"{label}:", 1)[1].strip().strip("[]") for line in text.splitlines() if f"{label}:" in line]
    return [[float(v) for v in line.split()] for line in lines]


@pytest.mark.interpreter  # what the interpreter prints (a GPU's device printf prints per thread, to the C stdout)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_print_under_a_condition_prints_only_where_it_holds(
    tmp_path: Path, schedule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _load(tmp_path, PRINTS, schedule)
    n = 37
    x = randn(n, seed=23)
    capsys.readouterr()
    mod.first(x)
    assert _printed(capsys.readouterr().out, "x0") == [[pytest.approx(float(x[0]))]]
    mod.large(x)
    got = _printed(capsys.readouterr().out, "large")  # the index, then the value, of each lane that prints
    want = [(i, float(v)) for i, v in enumerate(x.tolist()) if v > 1.0]
    assert want and [(int(a[0]), pytest.approx(b[0])) for a, b in zip(got[::2], got[1::2], strict=True)] == want
    mod.second_block(x)
    out = capsys.readouterr().out  # program 1 prints its 4 x 4 values at once (over several lines)
    assert out.count("second:") == 1 and "(1, 0, 0)" in out
    values = [float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]\d+)?", out.split("second:", 1)[1])]
    assert values == pytest.approx(x[16:32].tolist())
    square = randn(n, n, seed=24)
    mod.corner(square)
    got = _printed(capsys.readouterr().out, "corner")  # lane (7, 2) of each program: rows 7, 15, ..., 39
    rows = [float(square[p * 8 + 7, 2]) if p * 8 + 7 < n else 0.0 for p in range(5)]  # past N: zero
    assert [(int(a[0]), b[0]) for a, b in zip(got[::2], got[1::2], strict=True)] == [
        (p, pytest.approx(v)) for p, v in enumerate(rows)
    ]


@pytest.mark.interpreter  # the interpreter's debug option turns device asserts on (a GPU needs TRITON_DEBUG)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_assert_under_a_condition_checks_only_where_it_holds(tmp_path: Path, schedule: str) -> None:
    from triton.runtime import interpreter

    mod = _load(tmp_path, PRINTS, schedule)
    saved = interpreter.interpreter_builder.options
    interpreter.interpreter_builder.options = dataclasses.replace(saved, debug=True)  # asserts on
    try:
        x = randn(37, seed=25)
        mod.checked(x)  # the lanes past N (p # t >= N) do not reach the assert
        with pytest.raises(Exception, match="the last element"):
            mod.failing(x)
    finally:
        interpreter.interpreter_builder.options = saved


@pytest.mark.slow
def test_prints_and_asserts_under_conditions_compile_for_sm90(tmp_path: Path) -> None:
    path = tmp_path / "prints.co"
    path.write_text(PRINTS)
    r = _compile(path, "--size", "N=37")
    assert r.returncode == 0, r.stderr
    assert all(f"{f}_k0" in r.stdout for f in ("first", "large", "second_block", "corner", "checked")), r.stdout


# ------------------------------------------------------------------ extents computed at host level

COMPUTED_EXTENTS = """
__co__ void flat(global f32 [M, 8] x, global f32 [M, 8] y) {
  xf = x.span_as([M * 8]);
  parallel p by cdiv(M * 8, 64) : block, t by 64 : thread {
    if (p # t < M * 8) y.at((p # t) / 8, (p # t) % 8) = xf.at(p # t) * 2.0f;
  }
}

__co__ void pairs(global f32 [M] x, global f32 [M] y) {
  global f32 [M * 2 + 1] tmp {0.5f};
  parallel p by cdiv(M, 64) : block, t by 64 : thread {
    if (p # t < M) { tmp.at(2 * (p # t)) = x.at(p # t); tmp.at(2 * (p # t) + 1) = 3.0f * x.at(p # t); }
  }
  parallel p by cdiv(M, 64) : block, t by 64 : thread {
    if (p # t < M) y.at(p # t) = tmp.at(2 * (p # t)) + tmp.at(2 * (p # t) + 1) + tmp.at(2 * M);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_view_or_buffer_whose_extent_is_an_expression_is_a_kernel_argument(tmp_path: Path, schedule: str) -> None:
    # `M * 8` was written into the kernel's signature as a parameter name (a module that does not import)
    mod = _load(tmp_path, COMPUTED_EXTENTS, schedule)
    x, y = randn(37, 8, seed=26), poisoned(37, 8)
    mod.flat(x, y)
    assert_close(y, x.double() * 2)
    x, y = randn(45, seed=27), poisoned(45)
    mod.pairs(x, y)  # the kernels write all of tmp but its last element, 0.5
    assert_close(y, x.double() * 4 + 0.5, atol=1e-6, rtol=1e-6)


def test_generated_code_that_does_not_parse_is_an_internal_error_at_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from croq2triton.api import translate_full
    from croq2triton.emit import module

    real = module.emit_launcher

    def broken(launcher: Any) -> str:
        text = real(launcher)
        return text.replace("_launch(", "_launch((", 1) if "flat" in text else text  # an unclosed parenthesis

    monkeypatch.setattr(module, "emit_launcher", broken)
    out = translate_full(COMPUTED_EXTENTS, filename="extents.co")
    assert out.lowered == ["pairs"]
    (d,) = [d for d in out.diagnostics if d.severity == "error"]
    assert d.message.startswith("'flat' is not translated: internal error: the code generated for 'flat' is not valid")
    assert d.span is not None and d.span.line == 4  # the launch of the kernel at extents.co:4
    compile(out.source, "extents.py", "exec")  # the module still imports; calling flat raises the diagnostic


# ------------------------------------------------------------------ swizzle pairing on every path

SWIZZLED = """
__co__ void swz(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block, by 1 : group-4 {
    acc = mma.fill.f32 0.0f;
    foreach k in [cdiv(K, 64)] {
      sa = dma.copy.swiz<128>.zfill a.subspan(64, 64).at(bm, k) => shared;
      sb = dma.copy.swiz<3>.zfill b.subspan(64, 64).at(bn, k) => shared;
      ma = mma.load.swiz<READ> sa.data;
      mb = mma.load.swiz<128> sb.data;
      mma.row.row acc, ma, mb;
    }
    mma.store acc, c.subspan(64, 64).at(bm, bn);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_swizzle_mismatch_is_an_error_also_when_the_kernel_is_tiled_as_a_gemm(tmp_path: Path, schedule: str) -> None:
    from croq2triton.api import translate_full
    from croq2triton.errors import CroqSemanticError

    with pytest.raises(CroqSemanticError) as info:
        translate_full(SWIZZLED.replace("READ", "64"), filename="swz.co", schedule=schedule)
    (d,) = info.value.diagnostics
    assert d.message == "'sa' is written with .swiz<128> at swz.co:6 but read with mma.load.swiz<64>"
    assert d.span is not None and d.span.line == 8
    # the same swizzle on both sides (level 3 is 128 bytes): a GEMM, tiled as one in both schedules
    src = translate_full(SWIZZLED.replace("READ", "128"), filename="swz.co", schedule=schedule).source
    assert "a contraction: croq2triton/lift/contraction.py proves it" in src
    mod = _load(tmp_path, SWIZZLED.replace("READ", "128"), schedule)
    a, b = randn(70, 100, dtype=torch.float16, seed=28), randn(50, 100, dtype=torch.float16, seed=29)
    c = poisoned(70, 50)
    mod.swz(a, b, c)
    assert_close(c, a.double() @ b.double().T, atol=1e-2, rtol=1e-3)


def test_a_buffer_written_with_two_swizzles_is_left_to_the_lifting() -> None:
    from croq2triton.frontend.driver import parse
    from croq2triton.sema.swizzle import swizzle_errors

    text = SWIZZLED.replace("READ", "64").replace(
        "      sb = dma.copy.swiz<3>",
        "      dma.copy.swiz<64>.zfill a.subspan(64, 64).at(bm, k) => sa;\n      sb = dma.copy.swiz<3>",
    )
    (fn,) = parse(text, "swz.co").functions
    assert swizzle_errors(fn) == []  # 'sa' holds both layouts in turn: which one mma.load reads is the lifting's


# ------------------------------------------------------------------ the tutorial's `.zfill` on the source view

ZFILL = """
__co__ void head(global f32 [M, 64] x, global f32 [M, 64] y, int rows) {
  parallel bm by cdiv(M, 16) : block {
    shared f32 [16, 64] s;
    dma.copy COPY => s;
    dma.copy s => y.subspan(16, 64).at(bm, 0);
  }
}
"""
TUTORIAL_ZFILL = ZFILL.replace("COPY", "x.view(rows, 64).from(bm * 16, 0).zfill")
MODERN_ZFILL = ZFILL.replace("dma.copy COPY", "dma.copy.zfill x.view(rows, 64).from(bm * 16, 0)")


def test_zfill_on_the_source_view_is_the_copy_modifier() -> None:
    from croq2triton.frontend.driver import parse
    from croq2triton.frontend.printer import Printer

    tutorial, modern = parse(TUTORIAL_ZFILL, "z.co"), parse(MODERN_ZFILL, "z.co")
    assert any("'.zfill' on the source view" in n.message for n in tutorial.functions[0].notes)  # noted
    printed = Printer().function(tutorial.functions[0])
    assert printed == Printer().function(modern.functions[0])
    assert "dma.copy.zfill x.view(rows, 64).from(bm * 16, 0) => s;" in printed


@pytest.mark.parametrize("oob_fill", ["zero", "nan"])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_zfill_on_the_source_view_translates_and_reads_zeros_past_the_view(
    tmp_path: Path, schedule: str, oob_fill: str
) -> None:
    mod = _load(tmp_path, TUTORIAL_ZFILL, schedule, oob_fill)  # `.zfill`: zeros even under the sanitizer
    x, y = randn(37, 64, seed=30), poisoned(37, 64)
    mod.head(x, y, 5)  # each block copies its first 5 rows; the other 11 rows of s are zero
    assert_close(y, torch.where((torch.arange(37, device=DEVICE) % 16 < 5)[:, None], x, 0.0))


# ------------------------------------------------------------------ copies between element types

MIXED_COPIES = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block, by 1 : group-4 {
    shared f32 [64, 64] sa;
    acc = mma.fill.f32 0.0f;
    foreach k in [cdiv(K, 64)] {
      dma.copy.zfill a.subspan(64, 64).at(bm, k) => sa;
      sb = dma.copy.zfill b.subspan(64, 64).at(bn, k) => shared;
      mma.row.row acc, sa, sb.data;
    }
    mma.store acc, c.subspan(64, 64).at(bm, bn);
  }
}

__co__ void out_tile(global f16 [M, 64] x, global f32 [M, 64] y) {
  parallel bm by cdiv(M, 16) : block {
    shared f16 [16, 64] s;
    dma.copy x.subspan(16, 64).at(bm, 0) => s;
    dma.copy s => y.subspan(16, 64).at(bm, 0);
  }
}

__co__ void tma_tile(global f32 [M, 64] x, global f32 [M, 64] y) {
  parallel bm by cdiv(M, 16) : block {
    shared s32 [16, 64] s;
    tma.copy x.subspan(16, 64).at(bm, 0) => s;
    tma.copy s => y.subspan(16, 64).at(bm, 0);
  }
}

__co__ void lanes(global f16 [N, 4] x, global f32 [N, 4] y) {
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    l = dma.copy x.subspan(1, 4).at(p # t, 0) => local;
    dma.copy l.data => y.subspan(1, 4).at(p # t, 0);
  }
}
"""


def _line_of(text: str, program: str) -> int:
    return program.split("\n").index(next(x for x in program.split("\n") if text in x)) + 1


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_copy_between_element_types_is_the_users_error_at_the_copy(schedule: str) -> None:
    # the GEMM was tiled as a contraction without a word (its f16 tile copied into an f32 buffer)
    from croq2triton.api import translate_full
    from croq2triton.errors import CroqSemanticError

    out = translate_full(MIXED_COPIES, filename="mixed.co", schedule=schedule)
    assert out.lowered == []
    want = {  # each at its first copy between types
        "gemm": ("dma.copy from f16 to f32", "=> sa;"),
        "out_tile": ("dma.copy from f16 to f32", "dma.copy s => y"),
        "tma_tile": ("tma.copy from f32 to s32", "tma.copy x"),
        "lanes": ("dma.copy from f16 to f32", "dma.copy l.data"),  # out of each thread's local buffer
    }
    for name, (what, text) in want.items():
        line = _line_of(text, MIXED_COPIES)
        error = out.failed[name]
        assert isinstance(error, CroqSemanticError), (name, error)
        (d,) = error.diagnostics
        assert d.message == f"{what}: a copy's destination must have the element type of its source", name
        assert d.span is not None and d.span.line == line, name
