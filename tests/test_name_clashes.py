"""Croqtile names that the generated Python takes for itself (the irregular-access probe, F2): a
local, parameter or size named after a tensor's pointer or stride (``x_ptr``, ``x_stride_0``) read
the wrong memory; ``tl``, ``_oob_fill`` or ``range`` as a local, a block index, a loop index or a
future shadowed the module's; a Python keyword as a parameter (``lambda``) made a module that does
not parse; a function named ``torch`` or ``tl`` broke every launcher of its file.  Each name is
renamed once, before the lifting (emit/names.py); every function of tests/programs/name_clashes.co
runs in the interpreter on ragged sizes, outputs poisoned, against float64 torch, under both
schedules."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.errors import CroqError
from croq2triton.frontend.driver import parse

PROGRAM = Path(__file__).parent / "programs" / "name_clashes.co"
SCHEDULES = ["source", "auto"]
_MODS: dict[str, Any] = {}


def _module(schedule: str) -> Any:
    if schedule not in _MODS:
        out = translate_full(PROGRAM.read_text(), filename="name_clashes.co", schedule=schedule)
        assert not out.failed, {k: str(v) for k, v in out.failed.items()}
        _MODS[schedule] = load_source(out.source, f"name_clashes_{schedule}")
    return _MODS[schedule]


def _d(t: torch.Tensor) -> torch.Tensor:
    return t.double().cpu()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_names_of_pointers_and_strides_as_a_parameter_a_size_and_locals(schedule: str) -> None:
    mod = _module(schedule)
    a, x = randn(21, 37, seed=1), randn(21, seed=2)
    out = poisoned(21, 37)
    mod.derived(a, out, 3.0, x, 0.5)
    assert_close(out, _d(a) * 3.0 + _d(x)[:, None] + 0.5, atol=1e-5, rtol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_modules_names_as_locals_a_block_index_a_loop_index_and_a_future(schedule: str) -> None:
    mod = _module(schedule)
    x = randn(70, seed=3)
    y = poisoned(70)
    mod.modules(x, y)
    blocks = torch.nn.functional.pad(_d(x), (0, 26)).view(3, 32).sum(1)  # the last block reads zero past 70
    assert_close(y, _d(x) * 2.0 + 1.0 + blocks.repeat_interleave(32)[:70], atol=1e-5, rtol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_tile_future_named_tl(schedule: str) -> None:
    mod = _module(schedule)
    x = randn(22, 7, seed=4)  # 6 tiles of 4 rows, the last of 2
    idx = torch.tensor([5, 0, 3, 5, 1], dtype=torch.int32, device=DEVICE)
    out = poisoned(5, 4)
    mod.gather(idx, x, out)
    rows = torch.nn.functional.pad(_d(x), (0, 0, 0, 2)).view(6, 4, 7).sum(2)
    assert_close(out, rows[idx.cpu().long()], atol=1e-5, rtol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_python_keywords_as_parameters_a_size_a_host_scalar_and_locals(schedule: str) -> None:
    mod = _module(schedule)
    x = randn(70, seed=5)
    want = _d(x) * 2.0 + 0.5 - 0.25 + 3.0 * 2
    y = poisoned(70)
    mod.keywords(x, y, 2.0, 0.5, 0.25, 3.0, 2)
    assert_close(y, want, atol=1e-5, rtol=1e-6)
    # by keyword: a parameter Python takes has an underscore appended (docs/usage.md)
    assert list(inspect.signature(mod.keywords).parameters) == [
        "x",
        "y",
        "lambda_",
        "None_",
        "True_",
        "pass_",
        "def_",
        "_launch",
    ]
    y = poisoned(70)
    mod.keywords(x=x, y=y, lambda_=2.0, None_=0.5, True_=0.25, pass_=3.0, def_=2)
    assert_close(y, want, atol=1e-5, rtol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_launchers_and_tritons_names_as_parameters_and_a_size(schedule: str) -> None:
    mod = _module(schedule)
    x, w = randn(70, seed=6), randn(5, seed=7)
    y = poisoned(70)
    mod.launcher_names(x, y, 1.5, 0.5, 2.0, 3, w, 0.25)
    assert_close(y, (_d(x) + 1.5) * 2.0 + 3 + 0.5 * float(w[0]) + 0.25, atol=1e-5, rtol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_size_named_as_its_tensors_pointer(schedule: str) -> None:
    mod = _module(schedule)
    x = randn(70, seed=8)
    y = poisoned(70)
    mod.dim_ptr(x, y, 0.75)
    assert_close(y, _d(x) + 0.75, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_tiled_gemm_whose_sizes_are_named_as_its_own_values(schedule: str) -> None:
    mod = _module(schedule)
    lhs, rhs = randn(37, 19, seed=9), randn(45, 19, seed=10)
    out = poisoned(37, 45)
    mod.tiled(lhs, rhs, out)
    ref = _d(lhs) @ _d(rhs).T
    assert_close(out, ref, atol=1e-4 * float(ref.abs().max()), rtol=0.0)  # f32 products (tf32x3)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_functions_named_as_the_modules_names_builtins_keywords_and_kernels(schedule: str) -> None:
    mod = _module(schedule)
    x = randn(70, seed=11)
    for name, plus in [("torch", 1), ("tl", 2), ("_oob_fill", 3), ("range", 4), ("lambda", 5), ("plus_k0", 6)]:
        y = poisoned(70)
        getattr(mod, name)(x, y)
        assert_close(y, _d(x) + plus, atol=1e-6, rtol=1e-6)
        assert name in dir(mod)
    y = poisoned(70)
    mod.plus(x, y)  # its kernel is plus_k0, the name of another function's launcher
    assert_close(y, _d(x) + 7, atol=1e-6, rtol=1e-6)
    # the module's own names are still its own: the kernels and launchers read them
    assert vars(mod)["torch"] is torch
    assert vars(mod)["tl"].__name__ == "triton.language"


def test_messages_spell_the_names_as_the_source_does() -> None:
    mod = _module("source")
    x = randn(70, seed=12)
    with pytest.raises(CroqError) as e:
        mod.keywords(x, poisoned(70), "two", 0.5, 0.25, 3.0, 2)
    assert "parameter 'lambda' must be a number" in str(e.value)
    with pytest.raises(CroqError) as e:
        mod.derived(randn(21, 37), poisoned(21, 36), 3.0, randn(21), 0.5)
    assert "a_stride_1" in str(e.value) and "a_stride_1_" not in str(e.value)
    assert "f32 lambda, f32 None" in (mod.keywords.__doc__ or "")


def test_a_keyword_parameter_gives_a_module_that_parses_and_its_kernel_takes_it() -> None:
    src = """__co__ void f(global f32 [N] x, global f32 [N] y, f32 lambda, f32 x_stride_0) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread
    y.at(p # t) = x.at(p # t) * lambda + x_stride_0;
}
"""
    out = translate_full(src, filename="kw.co")
    assert not out.failed
    tree = ast.parse(out.source)
    kernel = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f_k0")
    args = [a.arg for a in kernel.args.args]
    assert "lambda_" in args and "x_stride_0_" in args and "x_stride_0" in args


def test_a_function_that_does_not_translate_takes_its_parameters_under_the_same_names() -> None:
    src = """__co__ void lambda(global f6_e3m2 [N] x, global f32 [N] y, f32 None) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread
    y.at(p # t) = None;
}
"""
    out = translate_full(src, filename="stub.co")
    assert list(out.failed) == ["lambda"]
    mod = load_source(out.source, "name_clashes_stub")
    assert list(inspect.signature(mod.__dict__["lambda_"]).parameters) == ["x", "y", "None_", "_launch"]
    with pytest.raises(CroqError, match="'lambda' is not translated"):
        getattr(mod, "lambda")(randn(4), poisoned(4), None_=1.0)


def test_names_that_clash_with_nothing_keep_their_spelling() -> None:
    src = """__co__ void f(global f32 [N] x, global f32 [N] y, f32 sum, f32 x_ptr0) {
  int input = 3;
  parallel p by cdiv(N, input) : block, t by 3 : thread {
    f32 min = x.at(p # t) + sum;
    f32 z_ptr = min * x_ptr0;
    f32 _tmp = z_ptr;
    y.at(p # t) = _tmp;
  }
}
"""
    from croq2triton.emit.names import python_names

    (fn,) = parse(src, "keep.co").functions
    # a local named as a builtin the kernels call, a launcher's sum, a host int named input
    assert python_names(fn) == {"min": "min_", "sum": "sum_"}
    assert python_names(fn) == python_names(parse(src, "keep.co").functions[0])  # deterministic
    out = translate_full(src, filename="keep.co")
    assert not out.failed
    kernel = next(n for n in ast.parse(out.source).body if isinstance(n, ast.FunctionDef) and n.name == "f_k0")
    assert {"sum_", "x_ptr0", "x_ptr"} <= {a.arg for a in kernel.args.args}
    mod = load_source(out.source, "name_clashes_keep")
    x, y = randn(70, seed=13), poisoned(70)
    mod.f(x, y, 0.5, 2.0)
    assert_close(y, (_d(x) + 0.5) * 2.0, atol=1e-6, rtol=1e-6)
