"""Register fragments: ``frag`` declarations, ``apply`` element loops, ``reduce_max`` /
``reduce_sum`` / ``copy`` (LANGUAGE.md §7.4, §8), checked on attention kernels against a float64
softmax reference (ragged sequence lengths, NaN-poisoned outputs) and on their diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import CORPUS, EXAMPLES
from kernel_util import DEVICE, assert_close, load_co, poisoned, randn

from croq2triton.api import translate_full
from croq2triton.errors import CroqError


def attention_ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, past: int = 0) -> torch.Tensor:
    qd, kd, vd = (x.double().cpu() for x in (q, k, v))
    s = qd @ kd.transpose(-1, -2) / 8.0  # head dim 64
    if causal:
        i = torch.arange(q.shape[-2])[:, None]
        j = torch.arange(k.shape[-2])[None, :]
        s = s.masked_fill(j > i + past, float("-inf"))
    return torch.softmax(s, -1) @ vd


@pytest.mark.parametrize(
    ("bh", "sq", "sk", "causal"), [(3, 100, 100, True), (2, 70, 150, False), (1, 130, 77, False), (2, 150, 200, True)]
)
def test_attention_example(bh: int, sq: int, sk: int, causal: bool) -> None:
    mod = load_co(EXAMPLES / "attention.co")
    q, k, v = (randn(bh, n, 64, dtype=torch.float16, seed=s) for s, n in ((1, sq), (2, sk), (3, sk)))
    o = poisoned(bh, sq, 64, dtype=torch.float16)
    mod.attention(q, k, v, o, causal)
    assert_close(o, attention_ref(q, k, v, causal), atol=3e-3, rtol=1e-2)


def test_attention_is_whole_tile_code() -> None:
    src = load_co(EXAMPLES / "attention.co").__croq_source__
    assert "tl.max(" in src and "tl.sum(" in src and "tl.where(" in src
    assert "scratch" not in src and src.count("tl.dot(") == 2


FLASH = CORPUS / "upstream/tests/gpu/end2end/flash_atten.co"


@pytest.mark.parametrize(("sq", "sk", "causal"), [(100, 100, True), (100, 150, True), (70, 128, False)])
def test_upstream_flash_attention(sq: int, sk: int, causal: bool) -> None:
    if not FLASH.exists():
        pytest.skip(f"shared corpus not present at {CORPUS}")
    mod = load_co(FLASH)
    # non-causal: KV_SEQ a multiple of BLOCK_N, as the source zero-fills key tiles without masking them
    q, k, v = (randn(2, 2, n, 64, dtype=torch.float16, seed=s) for s, n in ((4, sq), (5, sk), (6, sk)))
    o = mod.flash_atten(q, k, v, causal)
    assert o.device.type == DEVICE.split(":")[0]
    assert_close(o, attention_ref(q, k, v, causal, past=sk - sq), atol=3e-3, rtol=1e-2)


BASE = """
__co__ void rowmax(global f16 [M, 64] a, global f16 [64, 64] b, global f32 [M] out) {
  parallel bm by cdiv(M, 64) : block {
    a_s = dma.copy a.subspan(64, 64).at(bm, 0) => shared;
    b_s = dma.copy b => shared;
    parallel p by 1 : group-4 {
      frag f32 [64] mx {-inf};
      acc = mma.fill.f32 0.0f;
      mma.row.row acc, a_s, b_s;
      apply {i, j} in acc.span
        acc.at(i, j) = acc.at(i, j) * 2.0f;
      reduce_max(mx, acc, 1);
      frag f32 [64, 64] t;
      apply {i, j} in t.span
        t.at(i, j) = acc.at(i, j);
    }
  }
}
"""


def _fails(src: str, func: str = "rowmax") -> CroqError:
    out = translate_full(src, filename="frag.co")
    assert func in out.failed, "expected a translation error"
    return out.failed[func]


@pytest.mark.parametrize(
    ("old", "new", "message", "line"),
    [
        ("frag f32 [64] mx {-inf};", "frag f32 [48] mx {-inf};", "gives [64], but the destination is [48]", 12),
        (
            "acc.at(i, j) * 2.0f",
            "acc.at(i, i) * 2.0f",
            "a buffer element whose indices are not one thread lane each",
            11,
        ),
        ("reduce_max(mx, acc, 1);", "reduce_max(mx, acc, 2);", "axis 2 is out of range for a 2-D fragment", 12),
        ("frag f32 [64] mx {-inf};", "frag f32 [32] mx {-inf};", "gives [64], but the destination is [32]", 12),
        ("t.at(i, j) = acc.at(i, j);", "mx.at(i) = acc.at(i, j);", "a buffer element that several threads write", 15),
        (
            "frag f32 [64, 64] t;",
            "frag f32 [64, 64] t; t.at(0, 0) = 1.0f;",
            "a buffer element at a position other than the thread's own",
            13,
        ),
    ],
)
def test_fragment_diagnostics(old: str, new: str, message: str, line: int) -> None:
    assert old in BASE
    err = _fails(BASE.replace(old, new))
    d = err.diagnostics[0]
    assert message in d.message, d.message
    assert d.span is not None and d.span.line == line
    assert d.hint or "not lowered" not in d.message


def test_fragment_base_translates() -> None:
    stored = "      apply {i} in mx.span\n        out.at(bm # i) = mx.at(i);\n    }\n"  # the row maxima are used
    out = translate_full(BASE.replace("    }\n", stored, 1), filename="frag.co")
    assert not out.failed, out.failed
    assert "tl.max(" in out.source


INPLACE = """
__co__ void bump(global f32 [N] x, global f32 [N] y) {
  parallel p by 1 : block {
    foreach {t} in [3] {
      parallel i by N : thread
        x.at(i) = x.at(i) + y.at(i);
    }
  }
}
"""


def test_store_to_a_tensor_the_program_reads_at_the_same_index_needs_no_fence(tmp_path: Path) -> None:
    out = translate_full(INPLACE, filename="bump.co")
    assert not out.failed and len(out.ir["bump"]) == 1  # a thread count known at launch: lanes fixed then
    assert "tl.debug_barrier" not in out.source  # each element read and written by one thread
    (tmp_path / "bump.co").write_text(INPLACE)
    mod = load_co(tmp_path / "bump.co")
    x, y = randn(100, seed=7), randn(100, seed=8)
    want = x.double().cpu() + 3 * y.double().cpu()
    mod.bump(x, y)
    assert_close(x, want, atol=1e-5)


FRAG_ARRAY = """
__co__ void two(global s8 [64, 64] lhs, global s8 [64, 32] rhs, global s32 [64, 32] once,
                global s32 [64, 32] twice, int i) {
  parallel {m, n} by [4, 2] : block {
    frag.s32 mc[2] {0};
    parallel {g0, g1} by [1, 1]: group {
      foreach k in 4 {
        ma = mma.load lhs.chunkat(m#g0, k);
        mb = mma.load rhs.chunkat(k, n#g1);
        mma.row.col mc[0], ma, mb;
        mma.row.col mc[1], ma, mb;
        mma.row.col mc[1], ma, mb;
      }
      mma.store mc[0], once.chunkat(m#g0, n#g1);
      mma.store mc[1], twice.chunkat(m#g0, n#g1);
    }
  }
}
"""


def test_fragment_array_elements_are_separate_accumulators() -> None:
    from croq2triton.api import load_source

    mod = load_source(translate_full(FRAG_ARRAY, filename="fa.co").source, "frag_array_two", origin="fa.co")
    g = torch.Generator().manual_seed(11)
    a = torch.randint(-100, 100, (64, 64), generator=g).to(torch.int8)
    b = torch.randint(-100, 100, (64, 32), generator=g).to(torch.int8)
    once = torch.full((64, 32), -1, dtype=torch.int32, device=DEVICE)
    twice = torch.full((64, 32), -1, dtype=torch.int32, device=DEVICE)
    mod.two(a.to(DEVICE), b.to(DEVICE), once, twice, 0)
    ref = (a.long() @ b.long()).to(torch.int32)
    assert torch.equal(once.cpu(), ref) and torch.equal(twice.cpu(), 2 * ref)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("mma.row.col mc[0], ma, mb;", "mma.row.col mc[k], ma, mb;", "changes while the kernel runs"),
        ("mma.store mc[0], once", "mma.store mc[2], once", "index 2 is out of range for dimension 0 of 'mc'"),
        ("mma.row.col mc[0], ma, mb;", "mma.row.col mc[i], ma, mb;", "indexed by a run-time value and also elsewhere"),
        ("mma.store mc[0], once", "mma.store mc, once", "can only be used element by element"),
        ("mma.store mc[0], once", "mma.store mc[0][0], once", "'mc' has 1 dimension(s); this names 2"),
    ],
)
def test_fragment_array_diagnostics(old: str, new: str, message: str) -> None:
    assert old in FRAG_ARRAY
    err = _fails(FRAG_ARRAY.replace(old, new), "two")
    text = err.format()
    assert message in text and text.startswith("frag.co:") and ": error: " in text
