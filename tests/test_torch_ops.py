"""Translated functions as torch custom ops (croq2triton/torch_ops.py), eager and under torch.compile."""

from __future__ import annotations

import pytest
import torch
from conftest import CORPUS, EXAMPLES, needs_corpus
from kernel_util import DEVICE, assert_close, gemm_tol, poisoned, randn

import croq2triton
from croq2triton.api import load, load_source, translate_full
from croq2triton.errors import CroqError

# inductor generates C++ on the CPU (a compiler this suite does not assume); on a GPU it is tested too
BACKENDS = ["aot_eager"] + (["inductor"] if DEVICE != "cpu" else [])


@pytest.mark.parametrize("backend", BACKENDS)
def test_gemm_as_a_mutating_op_eager_and_compiled(backend: str) -> None:
    mod = load(EXAMPLES / "gemm_v3.co")
    ns = f"croq_t1_{backend}"
    ops = croq2triton.register_ops(mod, ns)
    assert mod.ops is ops
    # the written parameter is declared as mutated, the inputs are not
    op = getattr(torch.ops, ns).matmul
    assert str(op.default._schema) == f"{ns}::matmul(Tensor lhs, Tensor rhs, Tensor(a2!) output) -> ()"
    a, b = randn(100, 72, dtype=torch.float16, seed=1), randn(130, 72, dtype=torch.float16, seed=2)
    out = poisoned(100, 130, dtype=torch.float16)
    op(a, b, out)
    ref = a.double() @ b.double().T
    assert_close(out, ref, atol=gemm_tol(72), rtol=1e-2)

    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.empty(a.shape[0], b.shape[0], dtype=torch.float16, device=a.device)
        op(a, b, c)  # declared as mutating c: the graph keeps the order
        return c * 2

    got = torch.compile(f, backend=backend, fullgraph=True)(a, b)
    assert_close(got, 2 * ref, atol=2 * gemm_tol(72), rtol=1e-2)


@needs_corpus
def test_returning_function_traces_with_its_real_shapes() -> None:
    # the fake implementation runs the launcher on fake tensors with a launch that does nothing
    mod = load(CORPUS / "upstream/tests/gpu/end2end/add.co")
    croq2triton.register_ops(mod, "croq_t2")
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-9, 9, (2, 3, 64), generator=g, dtype=torch.int32).to(DEVICE)
    y = torch.randint(-9, 9, (2, 3, 64), generator=g, dtype=torch.int32).to(DEVICE)
    ref = (x + y).reshape(6, 64)
    assert torch.equal(torch.ops.croq_t2.ele_add_span_as(x, y), ref)
    fn = torch.compile(lambda x, y: torch.ops.croq_t2.ele_add_span_as(x, y) + 1, backend="aot_eager", fullgraph=True)
    assert torch.equal(fn(x, y), ref + 1)


def test_scalar_parameters_and_launch_errors_pass_through() -> None:
    src = """
__co__ void scale(global f32 [N] x, global f32 [N] y, f32 a, int n) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread
    if (p # t < n) y.at(p # t) = x.at(p # t) * a;
}
"""
    mod = load_source(translate_full(src, filename="scale.co").source, "ops_scale", origin="scale.co")
    croq2triton.register_ops(mod, "croq_t3")
    x = randn(300, seed=4)
    y = torch.zeros(300, device=DEVICE)
    torch.ops.croq_t3.scale(x, y, 2.5, 200)
    assert torch.equal(y[:200].cpu(), (x[:200] * 2.5).cpu()) and bool((y[200:] == 0).all())
    with pytest.raises(CroqError, match="dtype"):
        torch.ops.croq_t3.scale(x.double(), y, 2.5, 200)


def test_registration_errors_are_clear() -> None:
    mod = load(EXAMPLES / "vadd.co")
    croq2triton.register_ops(mod, "croq_t4")
    other = load_source(translate_full("__co__ void vadd(global f32 [N] a) {}\n").source, "vadd_other")
    with pytest.raises(CroqError, match="already registered with another signature"):
        croq2triton.register_ops(other, "croq_t4")  # torch ops cannot be unregistered
    with pytest.raises(CroqError, match="not a croq2triton module"):
        croq2triton.register_ops(torch, "croq_t5")
    with pytest.raises(CroqError, match="must be a Python identifier"):
        croq2triton.register_ops(mod, "no-dash")


def test_a_written_module_imported_as_python_registers_too() -> None:
    # 'croq2triton translate' writes the same signature table into the .py file
    import importlib.util

    spec = importlib.util.spec_from_file_location("vadd_written", EXAMPLES / "vadd.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    croq2triton.register_ops(mod, "croq_t6")
    x, y = randn(1000, seed=5), randn(1000, seed=6)
    out = poisoned(1000, dtype=torch.float32)
    torch.ops.croq_t6.vadd(x, y, out)
    assert torch.equal(out, x + y)


def test_registering_a_module_again_is_a_no_op_that_follows_the_new_launchers() -> None:
    # a notebook cell run twice: the same module, then the file loaded anew (a new module object)
    mod = load(EXAMPLES / "vadd.co")
    first = croq2triton.register_ops(mod, "croq_t7")
    assert croq2triton.register_ops(mod, "croq_t7").vadd is first.vadd
    again = load_source(mod.__croq_source__, "vadd_again")
    calls: list[str] = []
    launcher = again.vadd
    again.vadd = lambda *a, **k: (calls.append("new"), launcher(*a, **k))[1]
    croq2triton.register_ops(again, "croq_t7")
    x, y = randn(300, seed=7), randn(300, seed=8)
    out = poisoned(300)
    torch.ops.croq_t7.vadd(x, y, out)
    assert calls == ["new"] and torch.equal(out, x + y)


def test_an_unregistered_launcher_under_torch_compile_says_how_to_register_it() -> None:
    mod = load(EXAMPLES / "vadd.co")

    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        mod.vadd(a, b, out)
        return out * 2

    torch._dynamo.reset()
    x, y = randn(300, seed=9), randn(300, seed=10)
    explained = torch._dynamo.explain(f)(x, y)  # the launcher runs outside the graph: one graph break
    reasons = " ".join(str(r.reason) for r in explained.break_reasons)
    assert "croq2triton.register_ops(module, 'mylib')" in reasons and "torch.ops.mylib.vadd" in reasons
    torch._dynamo.reset()
    assert torch.equal(torch.compile(f, backend="aot_eager")(x, y), (x + y) * 2)
