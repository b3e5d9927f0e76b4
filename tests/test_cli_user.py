"""What a user of the command line saw (issue 10), as the user's commands: exit codes and messages.

Most commands run in this process through ``croq2triton.cli.main`` (kernels in Triton's interpreter);
a few run as ``python -m croq2triton`` with this checkout on PYTHONPATH, as the user typed them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import NUMPY_TOO_NEW, pythonpath
from kernel_util import DEVICE

import croq2triton
from croq2triton import check_run, runner
from croq2triton.cli import main
from croq2triton.errors import CroqError

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, out, err


def subprocess_cli(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=pythonpath(REPO), PYTHONDONTWRITEBYTECODE="1")
    env.pop("CROQ2TRITON_DEBUG", None)
    r = subprocess.run(
        [sys.executable, "-W", "always", "-m", "croq2triton", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-3000:]
    return r


def _where() -> str:
    """Where 'croq2triton run' in this process runs kernels, as it says (the suite's DEVICE)."""
    return "CPU (Triton interpreter)" if DEVICE == "cpu" else f"GPU {torch.cuda.get_device_name()}"


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return str(p)


ELEMENTWISE = """__co__ void f(f32 [M, N] out, f32 [M, N] a) {
  parallel p by M, q by N : block {
    out.at(p, q) = BODY;
  }
}
"""

GOOD_G = """
__co__ void g(f32 [M] out, f32 [M] a) {
  parallel p by M : block {
    out.at(p) = a.at(p) + 1.0f;
  }
}
"""

MMA_K = """__co__ void mm(global f16 [M, K] a, global f16 [N, K] b, global f16 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block, by 1 : group-4 {
    shared f16 [64, 32] sa;
    shared f16 [64, 64] sb;
    shared f16 [64, 64] sc;
    mc = mma.fill.f16 0.0f;
    foreach {k} in [cdiv(K, 64)] {
      dma.copy a.chunkat(bm, k) => sa;
      dma.copy b.chunkat(bn, k) => sb;
      ma = mma.load sa;
      mb = mma.load sb;
      mma.row.row mc, ma, mb;
    }
    mma.store mc, sc;
    dma.copy sc => c.subspan(64, 64).at(bm, bn);
  }
}
"""

CALL = """__co__ void f(f32 [M, N] out, f32 [M, N] a) {
  parallel p by M : block {
    call foo(a);
  }
}
"""

# name: (source, error message, line, col)
UNTRANSLATABLE = {
    "undeclared variable": (
        ELEMENTWISE.replace("BODY", "a.at(p, q) + biass.at(q)"),
        "in 'f': 'biass' is not declared",
        3,
        33,
    ),
    "call": (
        CALL,
        "'f' is not translated: croq2triton does not translate the call of 'foo' (a C++ function: Triton kernels cannot call it)",
        3,
        5,
    ),
    "MMA operands with different K": (
        MMA_K,
        "in 'mm': MMA operands disagree on K: 'ma' has K = 32, 'mb' has K = 64",
        12,
        7,
    ),
}


# ------------------------------------------------------------------ (2) check reports what translate would
@pytest.mark.parametrize("name", sorted(UNTRANSLATABLE))
def test_check_reports_every_function_that_does_not_translate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    src, message, line, col = UNTRANSLATABLE[name]
    path = write(tmp_path, "bad.co", src)
    rc, out, err = cli(capsys, "check", path)
    assert rc == 1 and "ok" not in out, (out, err)
    assert f"{path}:{line}:{col}: error: {message}\n" in err, err
    assert re.search(rf"^ {line} \| .*\n +\| +\^", err, re.M), err  # the source line and the caret
    assert f"{path}: error: no function translates" in err
    # translate reports the same error, exits 1 and writes nothing
    target = tmp_path / "bad.py"
    rc, out, err2 = cli(capsys, "translate", path, "-o", str(target))
    assert rc == 1 and not target.exists()
    assert f"{path}:{line}:{col}: error: {message}\n" in err2, err2
    # both schedules
    rc, out, err3 = cli(capsys, "check", "--schedule", "auto", path)
    assert rc == 1 and f"error: {message}" in err3


def test_call_is_named_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(capsys, "check", write(tmp_path, "c.co", CALL))
    assert "call call" not in err and "croq2triton does not translate the call of 'foo'" in err
    assert "hint: calls into C++/CUDA device code" in err


def test_check_ok_means_it_translates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "g.co", GOOD_G)
    assert cli(capsys, "check", path) == (0, f"{path}: ok (1 function(s))\n", "")
    rc, out, err = cli(capsys, "check", "--schedule", "auto", str(EXAMPLES / "gemm_v3.co"))
    assert rc == 0 and out.endswith("gemm_v3.co: ok (1 function(s))\n"), err


def test_partial_translation_is_an_error_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "two.co", CALL + GOOD_G)
    target = tmp_path / "two.py"
    rc, out, err = cli(capsys, "translate", path, "-o", str(target))
    assert rc == 1 and not target.exists()
    assert f"{path}:3:5: error: 'f' is not translated" in err
    assert "1 of 2 function(s) do not translate (f); --allow-partial accepts the others" in err
    assert f"{target} not written" in err

    rc, out, err = cli(capsys, "translate", "--allow-partial", path, "-o", str(target))
    assert rc == 0 and target.exists()
    assert f"{path}:3:5: warning: 'f' is not translated: croq2triton does not translate the call of 'foo'" in err
    assert "(1 function(s) translated; not translated, raise when called: f)" in err
    mod = croq2triton.load_source(target.read_text(), "partial_two", origin=path)
    x = torch.arange(4.0)
    y = torch.empty(4)
    mod.g(y, x)
    assert torch.equal(y, x + 1)
    with pytest.raises(CroqError, match="'f' is not translated: croq2triton does not translate the call of 'foo'") as e:
        mod.f(torch.empty(2, 2), torch.empty(2, 2))
    # the translator's diagnostic, where it stands in the .co source: the line and a caret under the call
    assert f"{path}:3:5: error: 'f' is not translated" in str(e.value)
    assert "    call foo(a);\n" in str(e.value) and "|     ^" in str(e.value)

    rc, out, err = cli(capsys, "check", path)
    assert rc == 1 and out == ""
    rc, out, err = cli(capsys, "check", "--allow-partial", path)
    assert rc == 0 and out == f"{path}: ok (1 of 2 function(s); not translated: f)\n"
    assert "warning: 'f' is not translated" in err


def test_allow_partial_does_not_accept_a_file_where_nothing_translates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "c.co", CALL)
    target = tmp_path / "c.py"
    rc, out, err = cli(capsys, "translate", "--allow-partial", path, "-o", str(target))
    assert rc == 1 and not target.exists()
    assert f"{path}: error: no function translates (f)" in err
    assert cli(capsys, "check", "--allow-partial", path)[0] == 1


def test_run_skips_untranslated_functions_with_status_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "two.co", CALL + GOOD_G)
    rc, out, err = cli(capsys, "run", path, "--size", "M=8,N=8")
    assert rc == 1
    assert "f: skipped (not translated)" in out and "g(out[8], a[8]): ran on" in out


def test_translate_full_still_returns_everything() -> None:
    from croq2triton.api import translate_full

    out = translate_full(CALL + GOOD_G, filename="two.co")
    assert out.lowered == ["g"] and list(out.failed) == ["f"]
    assert [d.severity for d in out.diagnostics if "not translated" in d.message] == ["error"]
    assert "def f(" in croq2triton.translate(CALL + GOOD_G, filename="two.co")


# ------------------------------------------------------------------ (6) run rejects nonsense
SCALE = """__co__ void scale(f32 [M, N] out, f32 [M, N] x, f32 alpha, int shift, bool neg) {
  parallel p by M, q by N : block {
    out.at(p, q) = x.at(p, q) * alpha + shift;
  }
}
"""


def test_run_rejects_a_negative_repeat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(capsys, "run", write(tmp_path, "s.co", SCALE), "--repeat", "-1")
    assert rc == 1 and "ms per call" not in out
    assert err.startswith("error: --repeat must be a number of calls, not -1\nhint: pass a positive count, or 0")


def test_run_rejects_unknown_size_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(capsys, "run", write(tmp_path, "s.co", SCALE), "--size", "M=4,X=5")
    assert rc == 1 and out == ""
    assert "error: --size X: no size or parameter of that name in scale" in err
    assert (
        "hint: the names --size can set: M (a symbolic size), N (a symbolic size), alpha (a floating-point "
        "parameter), shift (an integer parameter), neg (a bool parameter)"
    ) in err


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("M=0.5", "bad --size value '0.5' for 'M': it must be a positive integer"),
        ("M=0", "bad --size value '0' for 'M': it must be a positive integer"),
        ("shift=1.5", "bad --size value '1.5' for 'shift': it must be an integer"),
        ("alpha=x", "bad --size value 'x' for 'alpha': it must be a number"),
        ("neg=maybe", "bad --size value 'maybe' for 'neg': it must be true or false"),
        ("M", "bad --size item 'M'"),
    ],
)
def test_run_rejects_bad_size_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], item: str, message: str
) -> None:
    rc, out, err = cli(capsys, "run", write(tmp_path, "s.co", SCALE), "--size", item)
    assert rc == 1 and err.startswith(f"error: {message}"), err


def test_run_sets_float_int_and_bool_parameters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(
        capsys, "run", write(tmp_path, "s.co", SCALE), "--size", "M=4,N=8,alpha=0.5,shift=-2", "--size", "neg=false"
    )
    assert rc == 0, err
    where = _where()
    assert out.startswith(f"scale(out[4, 8], x[4, 8], alpha=0.5, shift=-2, neg=false): ran on {where}, ")
    assert f"scale: running on {where} with M=4, N=8, alpha=0.5, shift=-2, neg=false\n" in err


def test_run_of_a_file_without_functions_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "host.co", "int main() { return 0; }\n")
    for cmd in ("run", "check", "translate"):
        rc, out, err = cli(capsys, cmd, path)
        assert rc == 1 and f"error: no __co__ function in {path}" in err, (cmd, err)
    assert not (tmp_path / "host.py").exists()
    assert cli(capsys, "parse", path)[0] == 0  # it parses


@pytest.mark.parametrize("cmd", ["parse", "check"])
def test_directories_without_co_files_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], cmd: str) -> None:
    (tmp_path / "empty").mkdir()
    write(tmp_path, "other/notes.txt", "not Croqtile")
    for d in ("empty", "other"):
        rc, out, err = cli(capsys, cmd, str(tmp_path / d))
        assert rc == 1 and out == ""
        assert err.startswith(f"error: no .co files in {tmp_path / d}\n"), err
    # a directory without .co files among good files: the good ones are still checked
    good = write(tmp_path, "g.co", GOOD_G)
    rc, out, err = cli(capsys, cmd, str(tmp_path / "empty"), good)
    assert rc == 1 and f"no .co files in {tmp_path / 'empty'}" in err
    assert out == (f"{good}: ok (1 function(s))\n" if cmd == "check" else "")


# ------------------------------------------------------------------ (7) progress, no warm-up in the interpreter
@pytest.mark.interpreter
def test_run_says_what_runs_with_which_sizes_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from croq2triton.runtime import launch as rt

    launches: list[str] = []
    real = rt.launch

    def counting(kernel: Any, grid: Any, args: Any, kwargs: Any) -> None:
        launches.append(kernel.__name__)
        real(kernel, grid, args, kwargs)

    monkeypatch.setattr(rt, "launch", counting)
    path = write(tmp_path, "s.co", SCALE)
    rc, out, err = cli(capsys, "run", path, "--size", "N=8,alpha=2")
    assert rc == 0, err
    # one launch: the interpreter compiles nothing, so there is no warm-up call
    assert launches == ["scale_k0"]
    assert err.startswith(
        "scale: running on CPU (Triton interpreter) with M=256 (default), N=8, alpha=2.0, shift=1 (default), "
        "neg=true (default)\n"
        "scale: the interpreter is slow: smaller --size values run faster\n"
    ), err
    launches.clear()
    rc, out, err = cli(capsys, "run", path, "--size", "M=4,N=8", "--repeat", "3")
    assert rc == 0 and launches == ["scale_k0"] * 3
    assert "scale: call 2 of 3 (" in err and "scale: call 3 of 3 (" in err
    assert "ms per call (mean of 3)" in out


# ------------------------------------------------------------------ (8) poisoned outputs, --check
def test_unwritten_elements_are_reported(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "tiled_add.co")
    rc, out, err = cli(capsys, "run", path, "--size", "M=100,N=77")
    assert rc == 0, err  # chunkat's floor division leaves them: a warning
    assert (
        f"{path}:11:1: warning: tiled_add: out: 252 of 7700 elements not written "
        "(still the poison NaN; first: [0, 76], [1, 76], [2, 76], [3, 76], ...)"
    ) in err
    rc, out, err = cli(capsys, "run", path, "--size", "M=100,N=77", "--check")
    assert rc == 1
    assert f"{path}:11:1: error: tiled_add: out: 252 of 7700 elements not written" in err
    # the variants leave the same elements unwritten: the comparison itself agrees
    assert "tiled_add: check: the auto schedule and the source schedule with num_stages=1 agree" in out


def test_check_passes_where_everything_is_written(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(capsys, "run", str(EXAMPLES / "tiled_add.co"), "--size", "M=96,N=128", "--check")
    assert rc == 0, err
    assert "elements not written" not in err  # (check's chunkat warning says what could be left)
    assert (
        "tiled_add: check: the auto schedule and the source schedule with num_stages=1 agree with the source "
        "schedule (out)\n"
    ) in out
    assert "tiled_add: check: running the auto schedule variant" in err


OUTPUTS = """__co__ auto part(f32 [M] x) {
  f32 [M] y;
  parallel p by 3 : block {
    y.at(p) = x.at(p) * 2.0f;
  }
  return y;
}
__co__ auto acc(f32 [M] x) {
  f32 [M] y;
  parallel p by M : block {
    y.at(p) += x.at(p);
  }
  return y;
}
__co__ void inout(f32 [M] out, f32 [M] x) {
  parallel p by 3 : block {
    out.at(p) += x.at(p);
  }
}
__co__ void ints(s32 [M] out) {
  parallel p by 3 : block {
    out.at(p) = p;
  }
}
"""


def test_returned_buffers_and_integer_outputs_are_poisoned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "outs.co", OUTPUTS)
    rc, out, err = cli(capsys, "run", path, "--size", "M=8")
    assert rc == 0, err
    assert (
        f"{path}:1:1: warning: part: return value: 5 of 8 elements not written "
        "(still the poison NaN; first: [3], [4], [5], [6], ...)"
    ) in err
    assert (
        f"{path}:20:1: warning: ints: out: 5 of 8 elements not written (still the poison -2147483648; "
        "first: [3], [4], [5], [6], ...)"
    ) in err
    # a buffer the function accumulates into starts at zero (LANGUAGE.md): not poisoned, all written
    assert "acc: return value" not in err
    # a parameter it reads and writes keeps random values, and the run says so
    assert "inout: note: out: written and also read by the function, so not poisoned" in err
    assert "inout: out:" not in err


def test_poison_is_told_apart_from_a_written_nan() -> None:
    from croq2triton.runtime.poison import poisoned, unwritten

    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        t = poisoned((4,), dtype, "cpu")
        assert bool(torch.isnan(t).all())
        t[1] = float("nan")  # a NaN the kernel wrote
        t[2] = 1.0
        assert unwritten(t).tolist() == [True, False, False, True], dtype
    assert unwritten(poisoned((2,), torch.uint8, "cpu")).tolist() == [True, True]
    assert int(poisoned((1,), torch.uint8, "cpu")) == 255


class Broken:
    """A variant that gets one element wrong (and one NaN where there is none)."""

    name = "broken variant"

    def __init__(self, inner: check_run.Variant) -> None:
        self.inner = inner

    def run(self, fn: Any, args: Sequence[Any]) -> check_run.Outputs:
        outs = self.inner.run(fn, args)
        o = outs["out"]
        o[5, 7] += 1.0
        o[1, 2] = float("nan")
        return outs


def test_check_reports_the_worst_element_of_a_variant_that_differs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = runner.variants

    def with_broken(modules: runner.Modules, ran: str, outputs: Any) -> list[check_run.Variant]:
        vs = real(modules, ran, outputs)
        return [*vs, Broken(vs[1])]

    monkeypatch.setattr(runner, "variants", with_broken)
    path = str(EXAMPLES / "tiled_add.co")
    rc, out, err = cli(capsys, "run", path, "--size", "M=32,N=64", "--check")
    assert rc == 1
    m = re.search(
        r"error: tiled_add: check: the broken variant differs from the source schedule: out: 2 of 2048 elements "
        r"differ \(float16, rtol 0.005\); worst at \[1, 2\]: source schedule (\S+), broken variant nan",
        err,
    )
    assert m is not None, err
    assert "the auto schedule and the source schedule with num_stages=1 agree" in out


def test_compare_uses_the_dtype_tolerance_and_nan_positions() -> None:
    ref = torch.tensor([[1.0, 2.0], [3.0, float("nan")]])
    same = ref.clone()
    same[0, 0] += 5e-5  # within f32's 1e-4
    assert check_run.compare({"o": ref}, {"o": same}) == []
    off = ref.clone()
    off[1, 0] = 3.01
    (d,) = check_run.compare({"o": ref}, {"o": off})
    assert (d.count, d.index, d.ref, d.got, d.rtol) == (1, (1, 0), 3.0, pytest.approx(3.01), 1e-4)
    nan_moved = ref.clone()
    nan_moved[1, 1] = 4.0
    (d,) = check_run.compare({"o": ref}, {"o": nan_moved})
    assert d.index == (1, 1)
    ints = torch.tensor([1, 2, 3])
    (d,) = check_run.compare({"i": ints}, {"i": torch.tensor([1, 2, 4])})
    assert (d.index, d.rtol) == ((2,), None)
    half = torch.tensor([100.0]).half()
    assert check_run.compare({"h": half}, {"h": half + 0.25}) == []  # f16: 5e-3


def test_check_help_names_the_tolerances(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "f32 1e-4" in out and "bf16 3e-2" in out and "|x - ref| > rtol * (|ref| + mean |ref|)" in out


# ------------------------------------------------------------------ (9) CLI and API edges
def test_translate_to_a_missing_directory_or_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = str(EXAMPLES / "vadd.co")
    rc, out, err = cli(capsys, "translate", src, "-o", "/nonexistent/dir/x.py")
    assert rc == 1
    assert err.startswith("error: cannot write '/nonexistent/dir/x.py': directory '/nonexistent/dir' does not exist")
    rc, out, err = cli(capsys, "translate", src, "-o", str(tmp_path))
    assert rc == 1 and err.startswith(f"error: cannot write '{tmp_path}': it is a directory\nhint: name the file")


def test_api_rejects_nul_bytes_like_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(croq2triton.CroqError, match="not a text file") as ei:
        croq2triton.translate("\x00\x01")
    assert ei.value.diagnostics[0].format().startswith("<input>:1:1: error: this is not a text file")
    path = tmp_path / "bin.co"
    path.write_bytes(b"\x00\x01")
    rc, out, err = cli(capsys, "translate", str(path))
    assert rc == 1 and "error: this is not a text file (it contains NUL bytes)" in err


def test_second_registration_is_a_no_op_and_a_clash_hints_the_public_name() -> None:
    mod = croq2triton.load_source(croq2triton.translate(GOOD_G, filename="g.co"), "twice_g", origin="g.co")
    ops = croq2triton.register_ops(mod, "issue10")
    assert croq2triton.register_ops(mod, "issue10").g is ops.g  # a notebook cell run twice
    one_param = "__co__ void g(f32 [M] out) {\n  parallel p by M : block {\n    out.at(p) = 1.0f;\n  }\n}\n"
    other = croq2triton.load_source(croq2triton.translate(one_param, filename="h.co"), "other_g")
    with pytest.raises(CroqError, match="already registered with another signature") as ei:
        croq2triton.register_ops(other, "issue10")
    assert "croq2triton.register_ops(mod, 'other')" in (ei.value.diagnostics[0].hint or "")


def test_tuned_names_a_parameter_the_kernel_does_not_have() -> None:
    from croq2triton.runtime.launch import CroqLaunchError, tuned

    vadd = croq2triton.load(EXAMPLES / "vadd.co")  # an elementwise kernel: no pipeline, no program order
    x, y = torch.randn(100, device=DEVICE), torch.randn(100, device=DEVICE)
    with pytest.raises(CroqLaunchError) as ei:
        vadd.vadd(x, y, torch.empty(100, device=DEVICE), _launch=tuned(NUM_STAGES=2))
    assert ei.value.format() == (
        "error: tuned(NUM_STAGES=2): kernel 'vadd_k0' has no parameter NUM_STAGES\n"
        "hint: its tunable parameters are num_warps, num_stages"
    )
    mod = croq2triton.load(EXAMPLES / "gemm_v2.co")  # a tiled contraction: both of these it has
    a, b = torch.randn(64, 64, device=DEVICE).half(), torch.randn(128, 64, device=DEVICE).half()
    c = torch.empty(64, 128, device=DEVICE).half()
    mod.matmul(a, b, c, _launch=tuned(GROUP_M=2, NUM_STAGES=2, num_stages=1))
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, atol=2e-2, rtol=1e-2)


@NUMPY_TOO_NEW
def test_launch_time_warnings_point_at_the_co_line(capsys: pytest.CaptureFixture[str]) -> None:
    # the user's command (the README's first, smaller; tests/test_cli.py runs another example so): K=72
    # makes 36-wide K windows, narrower than the 64-wide TMA box
    r = subprocess_cli("run", "examples/gemm_v2.co", "--size", "M=128,N=128,K=72")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "runner.py" not in r.stderr and "RuntimeWarning" not in r.stderr, r.stderr
    assert (
        "examples/gemm_v2.co:17:7: warning: matmul: lhs: the copied window is 64 x 36 but the TMA box is 64 x 64; "
        "using masked loads\n 17 |       tma.copy.swiz<SWIZ> lhs.chunkat(block_m, iv_k) => lhs_s;\n"
    ) in r.stderr
    assert "matmul: running on CPU (Triton interpreter) with M=128, K=72, N=128\n" in r.stderr
    assert "ms per call (mean of 1)" in r.stdout
    # through the API, the warning is located at the .co function, not at the caller's Python line
    mod = croq2triton.load(EXAMPLES / "gemm_v2.co")
    from croq2triton.runtime import launch as rt

    rt._SAID.clear()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        a, b = torch.randn(64, 72, device=DEVICE).half(), torch.randn(128, 72, device=DEVICE).half()
        mod.matmul(a, b, torch.empty(64, 128, device=DEVICE).half())
    located = [(w.filename, w.lineno) for w in rec if "croq2triton" in str(w.message)]
    assert located and set(located) == {(str(EXAMPLES / "gemm_v2.co"), 9)}, located  # the file load() was given


def test_check_compares_the_first_call_of_a_repeated_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `out += x` changes its output on every call: the timed run's first call is what is compared
    path = write(tmp_path, "outs.co", OUTPUTS)
    rc, out, err = cli(capsys, "run", path, "--func", "inout", "--size", "M=8", "--repeat", "3", "--check")
    assert rc == 0, err
    assert "inout: check: the auto schedule and the source schedule with num_stages=1 agree" in out


def test_load_warns_for_every_function_that_does_not_translate(tmp_path: Path) -> None:
    path = write(tmp_path, "two.co", CALL + GOOD_G)
    with pytest.warns(croq2triton.CroqWarning) as caught:
        mod = croq2triton.load(path)
    (w,) = [c.message for c in caught if isinstance(c.message, croq2triton.CroqWarning)]
    text = str(w)
    assert text.startswith(f"{path}:3:5: warning: 'f' is not translated: croq2triton does not translate the call")
    assert "    call foo(a);" in text and "|     ^" in text  # the caret layout
    x = torch.arange(4.0)
    y = torch.empty(4)
    mod.g(y, x)  # the function that translated runs
    assert torch.equal(y, x + 1)
