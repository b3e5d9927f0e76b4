"""Host code between launches (LANGUAGE.md 9.1: it becomes Python): control flow around launches,
element access on tensors, host prints, and their errors."""

from __future__ import annotations

import pytest
import torch
from conftest import CORPUS, needs_corpus
from kernel_util import DEVICE, randn

from croq2triton.api import load, load_source, translate_full
from croq2triton.errors import CroqError

STEPS = """
__co__ void steps(global f32 [N] x, int n, int mode) {
  mutable k = 0;
  while (k < n) {
    if (mode == 1) {
      parallel p by cdiv(N, 64) : block, t by 64 : thread
        if (p # t < N) x.at(p # t) = x.at(p # t) * 2.0f;
    } else {
      parallel p by cdiv(N, 64) : block, t by 64 : thread
        if (p # t < N) x.at(p # t) = x.at(p # t) + 1.0f;
    }
    k += 1;
  }
  foreach i in [5] {
    if (i == 3) break;
    x.at(i) = x.at(i) + i;
  }
}
"""


def _mod(src: str, name: str):  # noqa: ANN202
    return load_source(translate_full(src, filename=f"{name}.co").source, f"host_{name}", origin=f"{name}.co")


@pytest.mark.parametrize(("n", "mode"), [(3, 1), (2, 0), (0, 1)])
def test_control_flow_around_launches(n: int, mode: int) -> None:
    f = _mod(STEPS, "steps").steps
    x = randn(150, seed=n)
    ref = x.double().cpu() * 2**n if mode == 1 else x.double().cpu() + n
    ref[:3] += torch.arange(3, dtype=torch.float64)
    f(x, n, mode)
    assert torch.allclose(x.double().cpu(), ref, atol=1e-5)


def test_the_generated_host_code_is_python_control_flow() -> None:
    src = translate_full(STEPS, filename="steps.co").source
    assert "    while k < n:  # steps.co:4" in src and "if mode == 1:" in src and "break" in src
    assert '_rt.elem_set(_F, "x", x, (_i' in src


@needs_corpus
def test_upstream_expr_index_2d() -> None:
    # upstream's CPU end-to-end test: host loops fill M, then expression indices read it back
    f = load(CORPUS / "upstream/tests/cpu/end2end/expr_index_2d.co").expr_index_test
    m = torch.zeros(4, 4, dtype=torch.int32)
    out = torch.zeros(4, dtype=torch.int32)
    f(m, out)
    assert out.tolist() == [6, 7, 10, 11]
    assert torch.equal(m, torch.arange(1, 17, dtype=torch.int32).reshape(4, 4))


def test_host_prints(capsys: pytest.CaptureFixture[str]) -> None:
    src = """
__co__ void show(int a) {
  ituple<2> b = {1, a};
  with idx in [b] {
    foreach idx { println("idx ", idx, " a=", a); }
  }
  print("done");
}
"""
    assert not translate_full(src, filename="show.co").failed
    _mod(src, "show").show(2)
    assert capsys.readouterr().out == "idx {0, 0} a=2\nidx {0, 1} a=2\ndone"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("println(&x);", "the operator '&' cannot be lowered in host code"),  # (&x.at(0) is an address)
        ("int k = select(2, 1, 1);", "select index 2 is out of range for 2 choices"),
    ],
)
def test_host_code_errors(body: str, message: str) -> None:
    src = f"__co__ void e(global f32 [N] x) {{\n  {body}\n}}\n"
    err = translate_full(src, filename="e.co").failed["e"]
    assert message in err.format() and err.format().startswith("e.co:2:")


def test_host_element_index_out_of_range_is_a_launch_error() -> None:
    src = """
__co__ void poke(global s32 [N] x, int i) {
  x.at(i) = 7;
}
"""
    f = _mod(src, "poke").poke
    x = torch.zeros(4, dtype=torch.int32, device=DEVICE)
    f(x, 3)
    assert x.tolist()[3] == 7
    with pytest.raises(CroqError, match=r"index \(4,\) is outside 'x' of shape \(4,\)"):
        f(x, 4)


def test_host_code_writes_an_element_of_a_named_window_of_a_tensor() -> None:
    # a window bound to a name between launches is a view of the same memory (since 2026-12-06;
    # before, host code could not index a view): its element 0 is x's element 2
    src = """
__co__ void v(global s32 [N] x) {
  y = x.subspan(2).at(1);
  y.at(0) = 1;
  y.at(1) = y.at(0) + 5;
}
"""
    out = translate_full(src, filename="v.co")
    assert not out.failed, out.failed
    v = load_source(out.source, "host_window_write", origin="v.co").v  # a file: Triton's jit reads it
    x = torch.zeros(5, dtype=torch.int32, device=DEVICE)
    v(x)
    assert x.cpu().tolist() == [0, 0, 1, 6, 0]


def test_rank_only_parameters_take_their_extents_from_the_tensor() -> None:
    # 'f32 mdspan<2> d': a rank-2 tensor of any extents (bound at launch like '?' dims)
    src = """
__co__ auto twice(f32 mdspan<2> d) {
  f32 [d.span] out;
  parallel p by 1 : block
    foreach {i, j} in d.span
      out.at(i, j) = d.at(i, j) * 2.0f;
  return out;
}
"""
    f = _mod(src, "twice").twice
    x = randn(3, 5, seed=7)
    assert torch.equal(f(x), x * 2)
    with pytest.raises(CroqError, match="has rank 1 .* expected rank 2"):
        f(randn(3, seed=8))


@needs_corpus
def test_upstream_debug_print_of_index_tuples(capsys: pytest.CaptureFixture[str]) -> None:
    # host and device println of an ituple-bounded 'with' index (debug_rtti_GDB_types.co)
    m = load(CORPUS / "upstream/tests/gpu/end2end/debug_rtti_GDB_types.co")
    m.debug_builtin_non_scalar_types(torch.zeros(32, 64, dtype=torch.int32, device=DEVICE), 1)
    assert capsys.readouterr().out.startswith("111{0, 0, 0}\n")


PICK = """
__co__ void pick(global f32 [64] a, global f32 [64] b, global f32 [64] out, int i) {
  parallel p by 1 : block {
    fa = dma.copy a => shared;
    fb = dma.copy b => shared;
    f = select(i, fa, fb);
    dma.copy f.data => out;
  }
}
"""


@pytest.mark.parametrize("i", [0, 1])
def test_select_of_futures_at_run_time(i: int) -> None:
    f = _mod(PICK, "pick").pick
    a, b = randn(64, seed=9), randn(64, seed=10)
    out = torch.full((64,), float("nan"), device=DEVICE)
    f(a, b, out, i)
    assert torch.equal(out, (a, b)[i])


def test_select_with_a_constant_index_picks_when_translating() -> None:
    src = PICK.replace("select(i, fa, fb)", "select(1, fa, fb)")
    assert "tl.where(i == 0, fa, fb)" not in translate_full(src, filename="pick.co").source
    assert "tl.where(i == 0, fa, fb)" in translate_full(PICK, filename="pick.co").source
    bad = translate_full(PICK.replace("select(i, fa, fb)", "select(2, fa, fb)"), filename="pick.co")
    assert "select index 2 is out of range for 2 choices" in bad.failed["pick"].format()


SHAPE_BOUND = """
__co__ void f(global f32 [4, 8] d) {
  sh : [4, 8];
  ituple<2> t = {4, 8};
  parallel {x, y} by BOUND : block
    d.at(x, y) = x * 10 + y;
}
"""


@pytest.mark.parametrize("bound", ["[sh]", "[d.span]", "[t]", "[sh(0), 8]"])
def test_a_shape_as_the_bounds_of_a_parallel(bound: str) -> None:
    # a bound that is a shape gives one bound per extent (upstream counts them the same way)
    src = SHAPE_BOUND.replace("BOUND", bound)
    f = load_source(translate_full(src, filename="sb.co").source, f"sb_{abs(hash(bound))}", origin="sb.co").f
    d = torch.zeros(4, 8, device=DEVICE)
    f(d)
    assert torch.equal(d.cpu(), (torch.arange(4)[:, None] * 10 + torch.arange(8)[None, :]).float())
    one = SHAPE_BOUND.replace("{x, y} by BOUND", f"{{x}} by {bound}").replace("d.at(x, y)", "d.at(x, 0)")
    with pytest.raises(CroqError, match=r"1 parallel variable\(s\) but 2 bound\(s\)"):
        translate_full(one.replace("x * 10 + y", "x"), filename="sb.co")


def test_a_launch_inside_a_host_loop_sees_the_loop_index() -> None:
    src = """
__co__ void rows(global f32 [R, 64] x) {
  foreach r in [R] {
    parallel p by 1 : block, t by 64 : thread
      x.at(r, t) = x.at(r, t) + r;
  }
}
"""
    f = _mod(src, "rows").rows
    x = randn(5, 64, seed=11)
    ref = x.double().cpu() + torch.arange(5, dtype=torch.float64)[:, None]
    f(x)
    assert torch.allclose(x.double().cpu(), ref, atol=1e-6)


FLAGS = """
__co__ void flags(global f32 [N] x, global f32 [N] y) {
  bool SQUARE = true;
  bool SHIFT = false;
  f32 scale = 0.5f;
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    if (p # t < N) {
      mutable f32 v = x.at(p # t);
      if (SQUARE) v = v * v;
      if (SHIFT || !SQUARE) v = v + 1.0f;
      y.at(p # t) = v * scale;
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_host_bool_constants_are_known_inside_the_kernel(schedule: str) -> None:
    # ``bool NAME = false;`` at host level is a constant the kernel reads (was "'SHIFT' is not declared")
    src = translate_full(FLAGS, filename="flags.co", schedule=schedule).source
    f = load_source(src, f"host_flags_{schedule}", origin="flags.co").flags
    x = randn(77, seed=3)
    y = torch.full_like(x, float("nan"))
    f(x, y)
    torch.testing.assert_close(y.double().cpu(), x.double().cpu() ** 2 * 0.5)
