"""Valid programs croq2triton refused or broke on (issue 28, false refusals): a block of more than
1024 threads (a warning now; the file's other functions were refused with it), ``subspan`` extents
given by a shape of several extents, an index the verifier could not see inside its tensor after
the loops were folded, and ``run`` of a function with an unnamed scalar parameter.  Each runs and is
checked against torch in float64, on ragged sizes, outputs poisoned with NaN first."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

from croq2triton.api import load, translate_full
from croq2triton.cli import main
from croq2triton.errors import CroqSemanticError, CroqWarning
from croq2triton.tir import expr as E

# ---- more than 1024 threads in a block: the lanes of a tensor, a warning -------------------------

THREADS = """
__co__ void wide(global f32 [N] a, global f32 [N] out) {
  parallel p by cdiv(N, 2048) : block, t by 2048 : thread
    out.at(p # t) = a.at(p # t) * 2.0f - 1.0f;
}
__co__ void tile(global f32 [M, K] a, global f32 [M, K] out) {
  parallel {bm, bk} by [cdiv(M, 32), cdiv(K, 48)] : block, {i, j} by [32, 48] : thread
    out.at(bm # i, bk # j) = a.at(bm # i, bk # j) + 3.0f;
}
__co__ void narrow(global f32 [N] a, global f32 [N] out) {
  parallel p by cdiv(N, 8) : block, t by 8 : thread
    out.at(p # t) = a.at(p # t) + 1.0f;
}
"""


def test_a_block_of_more_than_1024_threads_translates_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "threads.co"
    path.write_text(THREADS)
    assert main(["check", str(path)]) == 0
    err = capsys.readouterr().err
    assert "threads.co:3:40: warning: this block has 2048 threads, more than the 1024 of a CUDA block" in err
    assert "threads.co:7:60: warning: this block has 1536 threads (32 x 48)" in err
    assert "error" not in err
    with warnings.catch_warnings():
        warnings.simplefilter("error", CroqWarning)  # no function is refused
        m = load(path)
    for n in (5000, 2049, 77):
        a, out = randn(n, seed=n, dtype=torch.float64).float(), poisoned(n)
        m.wide(a, out)
        assert_close(out, a.double() * 2 - 1, rtol=1e-6)
        out = poisoned(n)
        m.narrow(a, out)
        assert_close(out, a.double() + 1, rtol=1e-6)
    a, out = randn(70, 101, seed=3), poisoned(70, 101)
    m.tile(a, out)
    assert_close(out, a.double() + 3, rtol=1e-6)


def test_a_block_beyond_triton_refuses_that_function_only(tmp_path: Path) -> None:
    src = THREADS.replace("2048", str(2**21))
    out = translate_full(src, filename="big.co")
    assert set(out.failed) == {"wide"} and set(out.lowered) == {"tile", "narrow"}
    msg = out.failed["wide"].diagnostics[0]
    assert msg.message == (
        f"croq2triton does not translate a block of {2**21} threads: its threads are the lanes of tensors of"
        f" {2**21} elements, and a Triton tensor holds at most {2**20}"
    )
    assert msg.span is not None and (msg.span.line, msg.span.col) == (3, 43)
    # no warning that Triton allows it: the refusal says why not
    assert not any("more than the 1024" in d.message and "wide" in d.message for d in out.diagnostics)


# ---- subspan extents given by a shape: an ituple expands to its extents (LANGUAGE.md 7.1) ---------

SUBSPAN = """
__co__ void host_tuple(global f32 [M, 6, 8] a, global f32 [M, 6, 8] out) {
  b = {6, 8};
  parallel p by cdiv(M, 7) : block {
    shared f32 [7, 6, 8] s;
    dma.copy a.subspan(7, b).at(p, 0, 0) => s;
    dma.copy s => out.subspan(7, b).at(p, 0, 0);
  }
}
__co__ void leading_tuple(global f32 [M, 6, 8] a, global f32 [M, 6, 8] out) {
  tile = {3, 6};
  parallel p by cdiv(M, 3) : block {
    shared f32 [3, 6, 8] s;
    dma.copy a.subspan(tile, 8).at(p, 0, 0) => s;
    dma.copy s => out.subspan(tile, 8).at(p, 0, 0);
  }
}
__co__ void kernel_shape(global f32 [M, 6, 8] a, global f32 [M, 6, 8] out) {
  parallel p by cdiv(M, 5) : block {
    rows : [5, 6];
    shared f32 [5, 6, 8] s;
    dma.copy a.subspan(rows, 8).at(p, 0, 0) => s;
    dma.copy s => out.subspan([5, 6], 8).at(p, 0, 0);
  }
}
__co__ void literal_tuple(global f32 [M, 6, 8] a, global f32 [M, 6, 8] out) {
  parallel p by cdiv(M, 4) : block {
    shared f32 [4, 6, 8] s;
    dma.copy a.subspan({4, 6}, 8).at(p, 0, 0) => s;
    dma.copy s => out.subspan(4, {6, 8}).at(p, 0, 0);
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_subspan_extents_given_by_a_shape(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "subspan.co"
    path.write_text(SUBSPAN)
    m = load(path, schedule=schedule)
    assert not m.__croq_translation__.failed, m.__croq_translation__.failed
    for name in ("host_tuple", "leading_tuple", "kernel_shape", "literal_tuple"):
        a, out = randn(23, 6, 8, seed=len(name)), poisoned(23, 6, 8)
        getattr(m, name)(a, out)
        assert_close(out, a.double())


def test_a_subspan_of_too_few_extents_still_says_so() -> None:
    src = SUBSPAN.replace("a.subspan(7, b)", "a.subspan(b)")
    d = translate_full(src, filename="s.co").failed["host_tuple"].diagnostics[0]
    assert "subspan takes 3 extents here, 2 given" in d.message


def test_a_step_of_too_few_values_says_so() -> None:
    # was an internal error of the contraction path (zip of unequal lengths), its caret at the parallel
    src = SUBSPAN.replace("a.subspan({4, 6}, 8).at(p, 0, 0)", "a.subspan({4, 6}, 8).step(4, 6).at(p, 0, 0)")
    d = translate_full(src, filename="s.co").failed["literal_tuple"].diagnostics[0]
    assert "step takes 3 values here (one per dimension of the subspan), 2 given" in d.message
    assert d.severity == "error" and d.span is not None and d.span.line == 29  # the copy, not the parallel


# ---- the verifier sees an index kept inside its tensor by the mask of a folded loop ---------------

OFFSETS = """
#define E 8
__co__ void shifted(global s32 [E + 1] offsets, global f32 [E] out) {
  parallel p by 1 : block, t by 4 : thread {
    foreach e in [E / 4] {
      out.at(e # t) = offsets.at(e # t + 1) - offsets.at(e # t);
    }
  }
}
__co__ void counts(global s32 [E + 1] offsets, global f32 [E, T] x, global f32 [E] out) {
  parallel p by 1 : block, t by 1 : thread {
    foreach e in [E] {
      out.at(e) = x.at(e, offsets.at(e + 1) - 1) + x.at(e, offsets.at(e));
    }
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_an_index_inside_an_e_plus_1_tensor_translates(tmp_path: Path, schedule: str) -> None:
    path = tmp_path / "offsets.co"
    path.write_text(OFFSETS)
    m = load(path, schedule=schedule)
    assert not m.__croq_translation__.failed, m.__croq_translation__.failed
    g = torch.Generator().manual_seed(1)
    offsets = torch.cumsum(torch.randint(1, 5, (9,), generator=g), 0).to(DEVICE, torch.int32)
    out = poisoned(8)
    m.shifted(offsets, out)
    assert_close(out, (offsets[1:] - offsets[:-1]).double())
    x, out = randn(8, 40, seed=2), poisoned(8)
    m.counts(offsets, x, out)
    rows = torch.arange(8, device=DEVICE)
    ref = x.double()[rows, offsets[1:].long() - 1] + x.double()[rows, offsets[:-1].long()]
    assert_close(out, ref, rtol=1e-6)


def test_bounds_under_a_mask() -> None:
    e0 = E.Var("e0", lo=0, hi=0)
    lanes = E.Arange(4096)
    t = E.Var("t", lo=0, hi=3)
    e = E.Bin("+", e0, lanes)
    index = E.fold(E.Bin("+", E.Bin("+", E.Bin("*", e, E.Const(4)), t), E.Const(1)))
    assert E.bounds(index)[1] == 4 * 4095 + 4  # the lanes alone: far outside
    assert E.bounds_under(index, [E.Bin("<", e, E.Const(2))]) == (1, 8)
    assert E.bounds_under(index, [E.Bin(">=", e, E.Const(1))])[0] == 5
    assert E.bounds_under(index, [E.Bin("<", t, E.Const(2))]) == (1, 4 * 4095 + 2)
    # a fact of a variable the index does not hold says nothing
    assert E.bounds_under(index, [E.Bin("<", E.Var("u", lo=0), E.Const(2))]) == E.bounds(index)


# ---- run a function with an unnamed scalar parameter -------------------------------------------


def test_run_gives_an_unnamed_scalar_parameter_its_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "unnamed.co"
    path.write_text(
        """__co__ void f(int, global f32 [N] x, f32, global f32 [N] y) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread
    y.at(p # t) = x.at(p # t) + 1.0f;
}
"""
    )
    assert main(["run", str(path), "--size", "N=300"]) == 0
    out = capsys.readouterr()
    assert "internal error" not in out.err
    assert "f(_arg0=1, x[300], _arg2=1.0, y[300]): ran on" in out.out


# ---- a refusal names its construct as the source spells it, and refuses that function alone -------

REFUSED = """__co__ void float_grid(global f32 [N] a, global f32 [N] out, f32 s) {
  parallel p by __to<s32>(s * 2.0f) : block, t by 64 : thread
    out.at(p # t) = a.at(p # t);
}
__co__ void inline_ptx(global f32 [N] a) {
  parallel p by 1 : block {
    asm volatile("nop;");
  }
}
__co__ void host_array(global f32 [N] a) {
  global f32 [N] parts[2];
  parallel p by 1 : block { a.at(p) = parts.at(p); }
}
__co__ void fine(global f32 [N] a, global f32 [N] out) {
  parallel p by cdiv(N, 64) : block, t by 64 : thread
    out.at(p # t) = a.at(p # t) + 1.0f;
}
"""


def test_refusals_name_the_construct_as_written() -> None:
    out = translate_full(REFUSED, filename="refused.co")
    assert out.lowered == ["fine"]
    said = {name: (e.diagnostics[0].message, e.diagnostics[0].span) for name, e in out.failed.items()}
    message, span = said["float_grid"]
    assert message == "croq2triton does not translate a grid bound of this form: '__to<s32>(s * 2.0f)'"
    assert span is not None and (span.line, span.col) == (2, 17)
    message, span = said["inline_ptx"]
    assert message.startswith("croq2triton does not translate inline 'asm(...)'")  # as written, not '__asm__'
    assert span is not None and (span.line, span.col) == (7, 5)
    message, _ = said["host_array"]
    assert message == (
        "cannot lower the array of global buffers 'parts[...]' used other than as 'parts[i]' at host level to Triton yet"
    )


def test_host_level_mistakes_are_the_users_not_refusals() -> None:
    src = """__co__ void f(global f32 [N] a) {
  mdspan s : a;
  parallel p by 1 : block { a.at(p) = 1.0f; }
}
__co__ void g(global f32 [N] a, global f32 [N] b) {
  c = select(3, a, b);
  parallel p by 1 : block { a.at(p) = 1.0f; }
}
"""
    failed = translate_full(src, filename="m.co").failed
    assert isinstance(failed["f"], CroqSemanticError)
    assert failed["f"].message == "the mdspan 's' must be initialised with a shape, not the name 'a'"
    assert isinstance(failed["g"], CroqSemanticError)
    assert failed["g"].message == "select index 3 is out of range for 2 choices"
