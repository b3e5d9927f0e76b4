"""The tile-IR path for elementwise kernels: which kernels it lifts, the IR it builds (dumps as
text), and numerics against torch on ragged sizes with NaN-poisoned outputs, in both schedules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE

import croq2triton
from croq2triton.api import translate_full
from croq2triton.tir.dump import dump

SCHEDULES = ("source", "auto")


def _load(tmp_path: object, name: str, source: str, schedule: str = "source") -> object:
    from pathlib import Path

    path = Path(str(tmp_path)) / f"{name}.co"
    path.write_text(source)
    return croq2triton.load(path, schedule=schedule)


def _lifted(source: str) -> dict[str, list[object]]:
    out = translate_full(source, filename="t.co")
    assert not out.failed, out.failed
    return out.ir


BIAS_RELU = """
__co__ void bias_relu(global f16 [M, N] x, global f32 [N] bias, global f16 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 48)] : block, {i, j} by [16, 48] : thread {
    m = bm # i;
    n = bn # j;
    f32 v = x.at(m, n) + bias.at(n);
    if (v < 0.0f) {
      v = 0.0f;
    }
    out.at(m, n) = v;
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_2d_thread_tile_with_a_guard_and_a_padded_level(tmp_path: object, schedule: str) -> None:
    # 48 threads a row: lanes padded to 64 with a mask; the if becomes a select, not a branch
    mod = _load(tmp_path, "bias_relu", BIAS_RELU, schedule)
    x = torch.randn(37, 101).half().to(DEVICE)
    bias = torch.randn(101).to(DEVICE)
    out = torch.full((37, 101), float("nan")).half().to(DEVICE)
    mod.bias_relu(x, bias, out)  # type: ignore[attr-defined]
    ref = torch.relu(x.float() + bias).half()
    torch.testing.assert_close(out.cpu(), ref.cpu())


def test_the_ir_of_an_elementwise_kernel() -> None:
    (kernel,) = _lifted(BIAS_RELU)["bias_relu"]
    text = dump(kernel)  # type: ignore[arg-type]
    assert text.splitlines()[0] == "kernel bias_relu_k0 grid (_rt.cdiv(M, 16), _rt.cdiv(N, 48)) num_warps 8  @3"
    for line in [
        "  i: i32[16, 1] = tl.arange(0, 16)[:, None]  @3",
        "  j: i32[1, 64] = tl.arange(0, 64)[None, :]  @3",
        "  m: i32[16, 1] = bm * 16 + i  @4",
        "  mask: i1[16, 64] = (m < M) & (n < N) & (j < 48)  @6",  # the padding lanes are masked off
        "  v := tl.where(v < 0.0, 0.0, v)  @8",
    ]:
        assert line in text, text


INT_MATH = """
__co__ void int_math(global s32 [N] a, global s32 [N] q, global s32 [N] r, global f32 [N] h) {
  parallel p by cdiv(N, 100) : block, t by 100 : thread {
    int k = p # t;
    if (k < N) {
      q.at(k) = a.at(k) / 7;
      r.at(k) %= 5;
      h.at(k) = (a.at(k) > 0) ? __sqrt(__to<f32>(a.at(k))) : -1.0f;
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_c_division_compound_assignment_ternary_and_math(tmp_path: object, schedule: str) -> None:
    mod = _load(tmp_path, "int_math", INT_MATH, schedule)
    n = 333
    a = torch.randint(-50, 50, (n,), dtype=torch.int32)
    r0 = torch.randint(-20, 20, (n,), dtype=torch.int32)
    q, r, h = torch.full((n,), -999, dtype=torch.int32), r0.clone(), torch.full((n,), float("nan"))
    on = [t.to(DEVICE) for t in (a, q, r, h)]
    mod.int_math(*on)  # type: ignore[attr-defined]
    q, r, h = (t.cpu() for t in on[1:])
    assert torch.equal(q, torch.trunc(a.double() / 7).int())  # C: towards zero
    assert torch.equal(r, torch.fmod(r0, 5))
    torch.testing.assert_close(h, torch.where(a > 0, a.float().sqrt(), torch.tensor(-1.0)))


ONE_BLOCK = """
__co__ f32 [300] scale(f32 [300] x, f32 alpha) {
  f32 [x.span] y;
  parallel t by 300 {
    y.at(t) = x.at(t) * alpha + __to<f32>(#t);
  }
  return y;
}
"""


def test_a_single_level_is_the_threads_of_one_block(tmp_path: object) -> None:
    ir = _lifted(ONE_BLOCK)
    assert len(ir["scale"]) == 1
    mod = _load(tmp_path, "scale", ONE_BLOCK)
    x = torch.randn(300)
    torch.testing.assert_close(mod.scale(x, 0.5).cpu(), x * 0.5 + 300.0)  # type: ignore[attr-defined]


def test_forms_the_lifting_does_not_cover_are_refused_where_they_stand() -> None:
    out = translate_full(
        "__co__ void f(global f32 [6, 17, 64] a, global f32 [6, 17, 64] b) {\n"
        "  parallel p by 6, q by 64 { l = dma.copy.sp a.chunkat(p, _, q) => local;"
        " dma.copy l => b.chunkat(p, _, q); }\n}\n",
        filename="t.co",
    )
    d = out.failed["f"].diagnostics[0]  # a 2:4 sparse copy: no Triton form
    assert out.ir.get("f") is None and d.span is not None and d.span.line == 2
    assert "croq2triton does not translate" in d.message and d.hint


def test_each_thread_copies_its_own_window(tmp_path: Path) -> None:
    src = (
        "__co__ void f(global f32 [6, 17, 64] a, global f32 [6, 17, 64] b) {\n"
        "  parallel p by 6, q by 64 { l = dma.copy a.chunkat(p, _, q) => local;"
        " dma.copy l => b.chunkat(p, _, q); }\n}\n"
    )
    (tmp_path / "own.co").write_text(src)
    mod = croq2triton.load(tmp_path / "own.co")
    a = torch.randn(6, 17, 64, device=DEVICE)
    b = torch.full((6, 17, 64), float("nan"), device=DEVICE)
    mod.f(a, b)
    torch.testing.assert_close(b, a)


def test_examples_on_the_new_path() -> None:
    from conftest import EXAMPLES

    for name in ("vadd", "vadd_f16"):
        path = EXAMPLES / f"{name}.co"
        out = translate_full(path.read_text(), filename=str(path))
        assert [k.name for k in out.ir[name]] == [f"{name}_k0"]  # type: ignore[attr-defined]


def test_interior_programs_run_without_bounds_masks() -> None:
    # schedule/interior.py: blocks inside every tensor skip the bounds terms (padding lanes and
    # the program's own conditions stay); the rest keep them
    (kernel,) = _lifted(BIAS_RELU)["bias_relu"]
    text = dump(kernel)  # type: ignore[arg-type]
    assert "  if (bm * 16 + 15 < M) & (bn * 48 + 63 < N)  @3" in text
    then, other = text.split("  else")
    # a mask of another shape gets another name: Triton gives a variable one type in both branches
    assert "    mask_inside: i1[1, 64] = j < 48  @6" in then and "(m < M)" not in then
    assert "    mask: i1[16, 64] = (m < M) & (n < N) & (j < 48)  @6" in other
    assert "tl.where(v < 0.0, 0.0, v)" in then and "tl.where(v < 0.0, 0.0, v)" in other


def test_the_verifier_requires_one_type_per_variable_across_branches() -> None:
    from croq2triton.tir import expr as E
    from croq2triton.tir import nodes as N
    from croq2triton.tir.verify import VerifyError, verify

    c = E.Var("c", "i1")
    a, b = E.Var("mask", "i1", dims=(1, 64)), E.Var("mask", "i1", dims=(16, 64))
    full = N.Let(b, E.Full((16, 64), True, "i1"))
    k = N.Kernel(
        "k", (E.Const(1),), (), [N.Scalar("c", "i1", c)], [N.If(c, [N.Let(a, E.Full((1, 64), True, "i1"))], [full])]
    )
    with pytest.raises(VerifyError, match=r"'mask' is i1\[1, 64\] in one branch and i1\[16, 64\] in the other"):
        verify(k)


def test_a_bug_in_the_tile_ir_path_is_a_located_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import croq2triton.emit.kernels as lift

    def broken(*args: object) -> object:
        raise KeyError("a translator bug")

    monkeypatch.setattr(lift, "lift_kernel", broken)
    monkeypatch.delenv("CROQ2TRITON_DEBUG", raising=False)
    out = translate_full(BIAS_RELU, filename="t.co")
    err = out.failed["bias_relu"].format()
    assert err.startswith("t.co:3:3: error: internal error: KeyError in the tile-IR path of kernel bias_relu_k0")
    assert "a bug in croq2triton, not in your program" in err


GATHER = """
__co__ void gather_rows(global s32 [T] idx, global f16 [V, D] table, global f16 [T, D] out) {
  parallel {t, cb} by [T, cdiv(D, 256)] : block
    parallel c by 256 : thread
      out.at(t, cb # c) = table.at(idx.at(t), cb # c);
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_gather_splits_only_on_indices_known_before_its_loads(tmp_path: object, schedule: str) -> None:
    """The interior condition cannot read the gathered row index (it is loaded inside the branch):
    its mask stays, the other accesses drop theirs; indices outside the table read zero."""
    mod = _load(tmp_path, "gather", GATHER, schedule)
    table = torch.randn(50, 300, device=DEVICE).half()
    idx = torch.tensor([3, 49, 0, 7, 50, -1, 12], device=DEVICE, dtype=torch.int32)  # two outside the table
    out = torch.full((7, 300), float("nan"), device=DEVICE).half()
    mod.gather_rows(idx, table, out)  # type: ignore[attr-defined]
    want = torch.zeros(7, 300, device=DEVICE).half()
    inside = (idx >= 0) & (idx < 50)
    want[inside] = table[idx[inside].long()]
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    kernel, *_ = translate_full(GATHER, filename="t.co", schedule=schedule).ir["gather_rows"]  # widened: + narrow
    assert "idx_val" not in dump(kernel).split("if ", 1)[1].split("\n", 1)[0]  # type: ignore[arg-type]


BATCH_GATHER = """
__co__ void batch_gather(global s32 [B, T] idx, global f16 [B, S, D] x, global f16 [B, T, D] out) {
  parallel {b, t} by [B, T] : block
    parallel c by 128 : thread
      if (c < D)
        out.at(b, t, c) = x.at(b, idx.at(b, t), c);
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_an_element_the_same_for_all_lanes_is_read_unmasked_by_their_condition(tmp_path: object, schedule: str) -> None:
    """``idx.at(b, t)`` under ``if (c < D)``: one element for every lane c, read once (a scalar
    load cannot take a mask of lanes); the stores keep the condition."""
    mod = _load(tmp_path, "batch_gather", BATCH_GATHER, schedule)
    idx = torch.randint(0, 20, (3, 11), device=DEVICE).int()
    x = torch.randn(3, 20, 100, device=DEVICE).half()
    out = torch.full((3, 11, 100), float("nan"), device=DEVICE).half()
    mod.batch_gather(idx, x, out)  # type: ignore[attr-defined]
    want = torch.gather(x, 1, idx.long()[:, :, None].expand(3, 11, 100))
    torch.testing.assert_close(out, want, rtol=0, atol=0)


ONE_ELEMENT_MANY_LANES = """
__co__ void first_col(global f32 [T, 64] x, global f32 [T] out) {
  parallel t by T : block
    parallel c by 64 : thread
      if (c == 0)
        out.at(t) = x.at(t, 0) * 2.0f;
}

__co__ void total(global f32 [N] x, global f32 [1] sum) {
  parallel p by cdiv(N, 256) : block
    parallel t by 256 : thread
      if ((p # t) < N)
        __atomic_add(sum.at(0), x.at(p # t));
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_one_element_written_by_lanes_a_condition_or_value_tells_apart(tmp_path: object, schedule: str) -> None:
    """A store or atomic of one element under a condition of the lanes (``out.at(t)`` where
    ``c == 0``; ``sum.at(0) += x.at(p # t)``): the address is broadcast to the lanes, each lane
    whose condition holds writes (Triton takes no mask of lanes on a scalar address)."""
    mod = _load(tmp_path, "one_element", ONE_ELEMENT_MANY_LANES, schedule)
    x = torch.randn(37, 64, device=DEVICE)
    out = torch.full((37,), float("nan"), device=DEVICE)
    mod.first_col(x, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, x[:, 0] * 2, rtol=0, atol=0)
    v = torch.randn(1000, device=DEVICE)
    total = torch.zeros(1, device=DEVICE)
    mod.total(v, total)  # type: ignore[attr-defined]
    torch.testing.assert_close(total, v.sum().reshape(1), rtol=1e-4, atol=1e-3)
