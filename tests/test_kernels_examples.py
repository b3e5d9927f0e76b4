"""Translated examples computed under TRITON_INTERPRET=1 against float64 references.

Sizes are ragged (not multiples of any tile) and outputs are NaN-poisoned, so an
element that is never written fails the test.  Where a source tiles with
``chunkat`` (floor division, LANGUAGE.md 7.6) the reference is what the source
means, which is a plain GEMM / add only for tile-multiple sizes.
"""

from __future__ import annotations

import pytest
import torch
from conftest import EXAMPLES
from kernel_util import DEVICE, assert_close, gemm_tol, load_co, poisoned, randn

from croq2triton.api import translate_full
from croq2triton.errors import CroqError
from croq2triton.runtime.launch import CroqLaunchError


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def test_vadd_ragged() -> None:
    m = load_co(EXAMPLES / "vadd.co")
    n = 1000 + 37
    a, b = randn(n, seed=1), randn(n, seed=2)
    out = poisoned(n, dtype=torch.float32)
    m.vadd(a, b, out)
    assert_close(out, a.double() + b.double(), atol=1e-6)


def test_package_level_api_as_in_the_readme() -> None:
    import croq2triton

    assert croq2triton.load.__module__ == "croq2triton.api"
    m = croq2triton.load(EXAMPLES / "vadd.co")
    a, b = randn(300, seed=3), randn(300, seed=4)
    out = poisoned(300, dtype=torch.float32)
    m.vadd(a, b, out)
    assert_close(out, a.double() + b.double(), atol=1e-6)
    assert "def vadd(" in croq2triton.translate((EXAMPLES / "vadd.co").read_text(), filename="vadd.co")
    with pytest.raises(AttributeError):
        croq2triton.no_such_function  # noqa: B018


def chunk_add_ref(a: torch.Tensor, b: torch.Tensor, tm: int, tn: int) -> torch.Tensor:
    """tiled_add's meaning: chunk (bm, bn) is rows bm*cm + [0, cm), cm = M // cdiv(M, tm)."""
    a, b = a.cpu(), b.cpu()
    m, n = a.shape
    out = torch.full((m, n), float("nan"), dtype=torch.float64)
    gm, gn = cdiv(m, tm), cdiv(n, tn)
    cm, cn = m // gm, n // gn
    rows, cols = gm * cm, gn * cn
    out[:rows, :cols] = a.double()[:rows, :cols] + b.double()[:rows, :cols]
    return out


@pytest.mark.parametrize(("m", "n"), [(48, 192), (50, 100), (17, 65)])
def test_tiled_add_means_chunkat(m: int, n: int) -> None:
    mod = load_co(EXAMPLES / "tiled_add.co")
    a, b = randn(m, n, dtype=torch.float16, seed=3), randn(m, n, dtype=torch.float16, seed=4)
    out = poisoned(m, n, dtype=torch.float16)
    mod.tiled_add(a, b, out)
    assert_close(out, chunk_add_ref(a, b, 16, 64), atol=2e-3, rtol=1e-3)


@pytest.mark.parametrize("example", ["gemm_v0.co", "gemm_v1.co"])
@pytest.mark.parametrize(("m", "n", "k"), [(100, 72, 40), (33, 65, 129)])
def test_naive_and_shared_gemms_on_ragged_sizes(example: str, m: int, n: int, k: int) -> None:
    mod = load_co(EXAMPLES / example)
    a, b = randn(m, k, dtype=torch.float16, seed=5), randn(n, k, dtype=torch.float16, seed=6)
    out = poisoned(m, n, dtype=torch.float16)
    mod.matmul(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)


def chunked_gemm_ref(a: torch.Tensor, b: torch.Tensor, wm: int, wn: int, tk: int) -> torch.Tensor:
    """GEMM v2's meaning: lhs.chunkat(block_m, iv_k) => lhs_s [wm, tk] (zero fill), store to subspan(wm, wn)."""
    a, b = a.cpu(), b.cpu()
    m, k = a.shape
    n = b.shape[0]
    gm, gn, gk = cdiv(m, wm), cdiv(n, wn), cdiv(k, tk)
    cm, cn, ck = m // gm, n // gn, k // gk
    out = torch.full((m, n), float("nan"), dtype=torch.float64)
    A, B = a.double(), b.double()
    for bm in range(gm):
        for bn in range(gn):
            acc = torch.zeros(wm, wn, dtype=torch.float64)
            for kk in range(gk):
                ta = torch.zeros(wm, tk, dtype=torch.float64)
                tb = torch.zeros(wn, tk, dtype=torch.float64)
                r = A[bm * cm : bm * cm + min(cm, wm), kk * ck : kk * ck + min(ck, tk)]
                ta[: r.shape[0], : r.shape[1]] = r
                r = B[bn * cn : bn * cn + min(cn, wn), kk * ck : kk * ck + min(ck, tk)]
                tb[: r.shape[0], : r.shape[1]] = r
                acc += ta @ tb.T
            r0, c0 = bm * wm, bn * wn
            r1, c1 = min(m, r0 + wm), min(n, c0 + wn)
            out[r0:r1, c0:c1] = acc[: r1 - r0, : c1 - c0]
    return out


@pytest.mark.parametrize(("m", "n", "k"), [(128, 256, 40), (64, 128, 200), (192, 128, 72)])
def test_gemm_v2_is_a_gemm_for_tile_multiple_m_n(m: int, n: int, k: int) -> None:
    mod = load_co(EXAMPLES / "gemm_v2.co")
    a, b = randn(m, k, dtype=torch.float16, seed=7), randn(n, k, dtype=torch.float16, seed=8)
    out = poisoned(m, n, dtype=torch.float16)
    mod.matmul(a, b, out)
    assert_close(out, a.double() @ b.double().T, atol=gemm_tol(k), rtol=1e-2)


def test_gemm_v2_ragged_m_follows_floor_division() -> None:
    """M=100: cdiv(100, 64) = 2 blocks of 50 rows each read 50 rows and write 64 rows."""
    mod = load_co(EXAMPLES / "gemm_v2.co")
    m, n, k = 100, 130, 130
    a, b = randn(m, k, dtype=torch.float16, seed=9), randn(n, k, dtype=torch.float16, seed=10)
    out = poisoned(m, n, dtype=torch.float16)
    mod.matmul(a, b, out)
    ref = chunked_gemm_ref(a, b, 64, 128, 64)
    assert_close(out, ref, atol=gemm_tol(k), rtol=1e-2)
    plain = a.double().cpu() @ b.double().cpu().T
    assert not torch.allclose(ref, plain, atol=1.0), "the reference must differ from a GEMM here"


def test_launch_errors_are_clear() -> None:
    mod = load_co(EXAMPLES / "gemm_v1.co")
    a = randn(64, 32, dtype=torch.float16)
    b = randn(48, 32, dtype=torch.float16)
    with pytest.raises(CroqLaunchError, match="dtype torch.float32, expected torch.float16"):
        mod.matmul(a.float(), b, poisoned(64, 48, dtype=torch.float16))
    with pytest.raises(CroqLaunchError, match="rank 1"):
        mod.matmul(a[0], b, poisoned(64, 48, dtype=torch.float16))
    with pytest.raises(CroqLaunchError, match="inconsistent size 'K'"):
        mod.matmul(a, randn(48, 31, dtype=torch.float16), poisoned(64, 48, dtype=torch.float16))
    with pytest.raises(CroqLaunchError, match="must be a torch.Tensor"):
        mod.matmul([1, 2], b, poisoned(64, 48, dtype=torch.float16))
    with pytest.raises(CroqLaunchError) as ei:
        mod.matmul(a, b, poisoned(65, 48, dtype=torch.float16))
    text = ei.value.format()
    assert "gemm_v1.co:" in text and "'M'" in text


def test_unlowerable_functions_explain_themselves(tmp_path: object) -> None:
    import pathlib

    p = pathlib.Path(str(tmp_path)) / "f6.co"
    p.write_text(
        "__co__ auto copy6(f6_e3m2 [4, 64] x) {\n  f6_e3m2 [x.span] y;\n"
        "  parallel p by 4, q by 64 y.at(p, q) = x.at(p, q);\n  return y;\n}\n"
    )
    mod = load_co(p)
    tr = mod.__croq_translation__
    assert "copy6" in tr.failed
    assert any("f6_e3m2" in d.message for d in tr.diagnostics)
    with pytest.raises(CroqError, match="is not translated"):
        mod.copy6(torch.zeros(4, 64, dtype=torch.uint8))


def test_accumulator_without_an_mma_in_its_parallel_is_a_clear_error() -> None:
    # upstream's parse/mma.co: a 'parallel' without braces holds only the fill; the MMAs that would
    # give the accumulator its shape are outside it (was an internal "did not converge" error)
    src = """
__co__ s32 [128, 256] matmul(s32 [128, 256] lhs, s32 [256, 256] rhs) {
  s32[lhs.span(0), rhs.span(1)] output;
  parallel p by 1, q by 16
    mc = mma.fill 0;
  return output;
}
"""
    out = translate_full(src, filename="mma.co")
    err = out.failed["matmul"]
    text = err.format()
    assert "mma.co:5:5: error: the shape of the accumulator 'mc' is unknown" in text
    assert "without braces holds only the next statement" in text


BY_VALUE = """
__co__ void ele_add(s32 [64] a, s32 [64] b, s32 [64] c, global s32 [64] d) {
  parallel p by 64 {
    c.at(p) = a.at(p) + b.at(p);
    d.at(p) = a.at(p) - b.at(p);
  }
}
"""


def test_written_non_global_parameters_are_copied_back() -> None:
    # a non-global parameter lives in the caller's memory: when the launcher moves it to the
    # kernels' device, what the function writes into it is copied back before returning
    from croq2triton.api import load_source
    from croq2triton.runtime import launch as rt

    src = translate_full(BY_VALUE, filename="byvalue.co").source
    assert "c_caller = c" in src and "_rt.copy_back(c_caller, c)" in src
    assert "a_caller" not in src and "d_caller" not in src  # read-only / global: used in place
    f = load_source(src, "byvalue", origin="byvalue.co").ele_add
    a, b = torch.arange(64, dtype=torch.int32), torch.full((64,), 5, dtype=torch.int32)
    c, d = torch.zeros(64, dtype=torch.int32), torch.zeros(64, dtype=torch.int32)
    d = d.to(DEVICE)  # 'global': must already be where the kernels run; a, b, c may be anywhere
    f(a, b, c, d)
    assert torch.equal(c, a + b) and torch.equal(d.cpu(), a - b)
    # the helper itself: a moved tensor's values return to the caller's
    caller, moved = torch.zeros(3), torch.ones(3)
    rt.copy_back(caller, moved)
    assert torch.equal(caller, moved)


def test_interior_split_never_tests_a_variable_the_body_computes() -> None:
    # elementwise kernels test 'is this program inside the tensors' before the body; an index held
    # in a local variable (s32 idx = ...) cannot be part of that test (was: 'idx' used unbound)
    src = """
__co__ void scale(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 128) : block {
    parallel q by 128 : thread {
      s32 idx = p * 128 + q;
      y.at(idx) = x.at(idx) * 3.0f;
    }
  }
}
"""
    from croq2triton.api import load_source

    f = load_source(translate_full(src, filename="idx.co").source, "idx_local", origin="idx.co").scale
    x = randn(1000, seed=21)
    y = poisoned(1000, dtype=torch.float32)
    f(x, y)
    assert torch.equal(y, x * 3.0)
