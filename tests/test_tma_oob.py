"""TMA descriptor rules, the masked-load fallback, and out-of-bounds semantics (seed 2, part 3)."""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from kernel_util import DEVICE

from croq2triton.api import load, translate_full
from croq2triton.errors import CroqError
from croq2triton.runtime.tma import runtime_reason

PROBE = """
__co__ void probe(global f32 [N] x, global f32 [128] out, int i) {
  parallel by 1 : block {
    shared f32 [128] s;
    tma.copy x.subspan(128).at(i) => s;
    dma.copy s => out;
  }
}
__co__ void probe_zfill(global f32 [N] x, global f32 [128] out, int i) {
  parallel by 1 : block {
    shared f32 [128] s;
    tma.copy.zfill x.subspan(128).at(i) => s;
    dma.copy s => out;
  }
}
__co__ void probe_dma(global f32 [N] x, global f32 [128] out, int i) {
  parallel by 1 : block {
    shared f32 [128] s;
    dma.copy x.subspan(128).at(i) => s;
    dma.copy s => out;
  }
}
"""


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    p = Path(tmp_path_factory.mktemp("oob")) / "probe.co"
    p.write_text(PROBE)
    return {mode: load(p, oob_fill=mode) for mode in ("zero", "nan")}


def _run(mod: object, fn: str, at: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.arange(1000, dtype=torch.float32, device=DEVICE) + 1.0
    out = torch.full((128,), -7.0, device=DEVICE)
    getattr(mod, fn)(x, out, at)
    return x.cpu(), out.cpu()


@pytest.mark.parametrize("fn", ["probe", "probe_zfill", "probe_dma"])
@pytest.mark.parametrize("mode", ["zero", "nan"])
def test_partly_outside_box_896(probes: dict[str, object], fn: str, mode: str) -> None:
    """Extent 1000, box 128 at coordinate 896: 104 real elements, 24 filled."""
    x, out = _run(probes[mode], fn, 7)
    assert torch.equal(out[:104], x[896:1000])
    filled = out[104:]
    if mode == "nan" and fn != "probe_zfill":
        assert torch.isnan(filled).all()
    else:
        assert torch.equal(filled, torch.zeros(24))


@pytest.mark.parametrize("fn", ["probe", "probe_zfill", "probe_dma"])
@pytest.mark.parametrize("mode", ["zero", "nan"])
def test_fully_outside_box_2048(probes: dict[str, object], fn: str, mode: str) -> None:
    _, out = _run(probes[mode], fn, 16)
    if mode == "nan" and fn != "probe_zfill":
        assert torch.isnan(out).all()
    else:
        assert torch.equal(out, torch.zeros(128))


def test_in_bounds_box_is_exact(probes: dict[str, object]) -> None:
    x, out = _run(probes["nan"], "probe", 3)
    assert torch.equal(out, x[384:512])


def test_the_probe_uses_a_descriptor() -> None:
    src = translate_full(PROBE, filename="probe.co").source
    assert "x_desc_128.load(" in src and "x_desc_128_z.load(" in src
    assert "_rt.tma_desc(x, (128,), _probe_k0_TMA_X_128, _OOB_PADDING)" in src


def _warnings_of(body: str, decls: str = "global f16 [M, K] x") -> list[str]:
    src = f"__co__ void f({decls}, global f16 [M, K] y) {{\n  parallel {{bm, bk}} by [1, 1] : block {{\n{body}\n  }}\n}}\n"
    out = translate_full(src, filename="rules.co")
    if out.failed:
        raise out.failed["f"]
    return [d.message for d in out.diagnostics if d.severity == "warning"]


RULES = [
    ("shared f16 [4] s; tma.copy z.subspan(4).at(bm) => s;", "global f16 [N] z",
     "tma.copy of 'z': the inner box is 8 B (TMA needs a multiple of 16 B); using masked loads"),
    ("shared f16 [2, 512] s; tma.copy x.subspan(2, 512).at(bm, bk) => s;", "global f16 [M, K] x",
     "tma.copy of 'x': box dim 1 is 512 elements (TMA boxes are at most 256); using masked loads"),
    ("shared f16 [2, 200] s; tma.copy x.subspan(2, 200).at(bm, bk) => s;", "global f16 [M, K] x",
     "tma.copy of 'x': box dim 1 is 200, not a power of two (Triton block shapes); using masked loads"),
    ("shared f16 [1, 1, 1, 1, 1, 1, 8] s; tma.copy w.subspan(1, 1, 1, 1, 1, 1, 8).at(bm, 0, 0, 0, 0, 0, bk) => s;",
     "global f16 [A, B, C, D, E, F, G] w",
     "tma.copy of 'w': the tensor has rank 7 (TMA handles rank 1 to 5); using masked loads"),
    ("shared f16 [16, 64] s; tma.copy x.view(16, 64).from(bm, bk * 3) => s;", "global f16 [M, K] x",
     "tma.copy of 'x': the innermost offset is not provably a multiple of 16 bytes; using masked loads"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "decls", "message"), RULES, ids=["inner16B", "box256", "pow2", "rank", "offset"])
def test_static_descriptor_rules(body: str, decls: str, message: str) -> None:
    assert message in _warnings_of(body, decls)


def test_inner_box_wider_than_swizzle_span_falls_back_to_masked_loads() -> None:
    warnings = _warnings_of("shared f16 [64, 64] s; tma.copy.swiz<32> x.subspan(64, 64).at(bm, bk) => s;")
    assert (
        "tma.copy of 'x': the inner box is 128 B, wider than the 32-byte swizzle span; using masked loads" in warnings
    )


def test_swizzle_mismatch_names_both_places() -> None:
    body = (
        "shared f16 [64, 64] s;\n"
        "    tma.copy.swiz<128> x.subspan(64, 64).at(bm, bk) => s;\n"
        "    acc = mma.fill.f32 0.0f;\n"
        "    ma = mma.load.swiz<64> s;\n"
        "    mma.row.row acc, ma, ma;"
    )
    with pytest.raises(CroqError) as ei:
        _warnings_of(body)
    d = ei.value.diagnostics[0]
    assert "'s' is written with .swiz<128> at rules.co:4 but read with mma.load.swiz<64>" in d.message
    assert d.span is not None and d.span.line == 6


def test_tutorial_swizzle_levels_normalise_to_bytes() -> None:
    body = (
        "shared f16 [64, 64] s;\n"
        "    tma.copy.swiz<3> x.subspan(64, 64).at(bm, bk) => s;\n"
        "    acc = mma.fill.f32 0.0f;\n"
        "    ma = mma.load.swiz<128> s;\n"
        "    mma.row.row acc, ma, ma;"
    )
    _warnings_of(body)  # level 3 == 128 bytes: no mismatch


def _fake(ptr: int, strides: tuple[int, ...], es: int = 2, shape: tuple[int, ...] = ()) -> SimpleNamespace:
    return SimpleNamespace(element_size=lambda: es, dim=lambda: len(strides), data_ptr=lambda: ptr,
                           stride=lambda i=None: strides if i is None else strides[i],
                           shape=shape or (64,) * len(strides))  # fmt: skip


@pytest.mark.parametrize(("t", "box", "ext", "message"), [
    (_fake(0x1000, (100, 1)), [64, 64], [64, 64], "lhs: row stride 200 B is not 16-byte aligned"),
    (_fake(0x1004, (128, 1)), [64, 64], [64, 64], "lhs: base address 0x1004 is not 16-byte aligned"),
    (_fake(0x1000, (1, 128)), [64, 64], [64, 64], "lhs: innermost stride is 128 elements (TMA needs 1)"),
    (_fake(0x1000, (1 << 40, 1), 1), [64, 64], [64, 64], "lhs: row stride 1099511627776 B is 2^40 B or more"),
    (_fake(0x1000, (128, 1)), [64, 64], [50, 64], "lhs: the copied window is 50 x 64 but the TMA box is 64 x 64"),
    (_fake(0x1000, (128, 1)), [64, 64], [64, 64], None),
    # (a tensor of 2^31 rows or more: Triton 3.6 passes a descriptor's extents as int32, the probe's
    # launch of 2^32 - 16 elements raised OverflowError inside Triton on an H100)
    (_fake(0x1000, (64, 1), 2, (1 << 31, 64)), [64, 64], [64, 64], "lhs: dimension 0 has 2147483648 elements (a descriptor takes fewer than 2^31)"),
    (_fake(0x1000, (64, 1), 2, ((1 << 31) - 1, 64)), [64, 64], [64, 64], None),
])  # fmt: skip
def test_runtime_descriptor_rules(t: object, box: list[int], ext: list[int], message: str | None) -> None:
    assert runtime_reason("lhs", t, box, ext) == message


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_the_nan_fill_keeps_fp8_descriptors_zero_filled(dtype: torch.dtype) -> None:
    # the hardware fills NaN for 16- and 32-bit floats only: an fp8 descriptor asking for it is refused by
    # the driver ('Failed to create tensor map descriptor: invalid argument', H100, the TMA probe)
    from croq2triton.runtime.launch import tma_desc

    assert tma_desc(torch.zeros(32, 64, dtype=dtype), [16, 32], True, "nan").padding == "zero"
    assert tma_desc(torch.zeros(32, 64, dtype=torch.float16), [16, 32], True, "nan").padding == "nan"


def test_misaligned_launch_falls_back_and_says_so_once(tmp_path: Path) -> None:
    p = tmp_path / "mm.co"
    p.write_text(
        "__co__ void copy2(global f16 [M, K] x, global f16 [M, K] y) {\n"
        "  parallel {bm, bk} by [cdiv(M, 16), cdiv(K, 64)] : block {\n"
        "    shared f16 [16, 64] s;\n"
        "    tma.copy x.subspan(16, 64).at(bm, bk) => s;\n"
        "    dma.copy s => y.subspan(16, 64).at(bm, bk);\n  }\n}\n"
    )
    mod = load(p)
    x = torch.randn(40, 100, device=DEVICE).half()  # rows of 200 B
    y = torch.full_like(x, float("nan"))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        mod.copy2(x, y)
        mod.copy2(x, y)
    msgs = [str(w.message) for w in rec if "croq2triton" in str(w.message)]
    assert msgs == ["croq2triton: copy2: x: row stride 200 B is not 16-byte aligned; using masked loads"]
    assert torch.equal(y, x)


# ---- .pad copies under the sanitizer: the border reads the pad value, a read outside the tensor
# NaN (0 under the zero fill); every lowering path of tma.pad and dma.pad -------------------------

PADS = """
__co__ void tma_fresh(global f32 [M, N] x, global f32 [G, 12, 36] y) {
  parallel bm by G : block {
    p = tma.pad<{2, 1}, {2, 3}, {0, 0}, 5.0f> x.subspan(8, 32).at(bm, 0) => shared;
    dma.copy p.data => y.subspan(1, 12, 36).at(bm, 0, 0).sqz();
  }
}
__co__ void tma_declared(global f32 [M, N] x, global f32 [G, 12, 36] y) {
  parallel bm by G : block {
    shared f32 [12, 36] s;
    tma.pad<{2, 1}, {2, 3}, {0, 0}, 5.0f> x.subspan(8, 32).at(bm, 0) => s;
    dma.copy s => y.subspan(1, 12, 36).at(bm, 0, 0).sqz();
  }
}
__co__ void dma_fresh_mid(global f32 [M, N] x, global f32 [G, 17, 34] y) {
  parallel bm by G : block {
    p = dma.pad<{1, 1}, {1, 1}, {1, 0}, -2.0f> x.subspan(8, 32).at(bm, 0) => shared;
    dma.copy p.data => y.subspan(1, 17, 34).at(bm, 0, 0).sqz();
  }
}
__co__ void dma_part(global f32 [M, N] x, global f32 [G, 12, 36] y) {
  parallel bm by G : block {
    shared f32 [24, 36] s;
    dma.pad<{2, 1}, {2, 3}, {0, 0}, 5.0f> x.subspan(8, 32).at(bm, 0) => s.subspan(12, 36).at(1, 0);
    dma.copy s.subspan(12, 36).at(1, 0) => y.subspan(1, 12, 36).at(bm, 0, 0).sqz();
  }
}
__co__ void dma_tensors(global f32 [M, N] x, global f32 [G, 12, 36] y) {
  parallel bm by G : block {
    dma.pad<{2, 1}, {2, 3}, {0, 0}, 5.0f> x.subspan(8, 32).at(bm, 0) => y.subspan(1, 12, 36).at(bm, 0, 0).sqz();
  }
}
__co__ void dma_tensors_mid(global f32 [M, N] x, global f32 [G, 17, 34] y) {
  parallel bm by G : block {
    dma.pad<{1, 1}, {1, 1}, {1, 0}, -2.0f> x.subspan(8, 32).at(bm, 0) => y.subspan(1, 17, 34).at(bm, 0, 0).sqz();
  }
}
__co__ void dma_thread(global f32 [M, N] x, global f32 [G, 8, 35] y) {
  parallel bm by G : block {
    parallel t by 8 : thread {
      l = dma.pad<{1}, {2}, {0}, 3.0f> x.subspan(1, 32).at(bm * 8 + t, 0).sqz() => local;
      dma.copy l.data => y.subspan(1, 1, 35).at(bm, t, 0).sqz().sqz();
    }
  }
}
"""

# function -> (lo, hi, mid, pad value, rows of x per block, output tile)
PAD_FORMS = {
    "tma_fresh": ((2, 1), (2, 3), (0, 0), 5.0, 8, (12, 36)),
    "tma_declared": ((2, 1), (2, 3), (0, 0), 5.0, 8, (12, 36)),
    "dma_fresh_mid": ((1, 1), (1, 1), (1, 0), -2.0, 8, (17, 34)),
    "dma_part": ((2, 1), (2, 3), (0, 0), 5.0, 8, (12, 36)),
    "dma_tensors": ((2, 1), (2, 3), (0, 0), 5.0, 8, (12, 36)),
    "dma_tensors_mid": ((1, 1), (1, 1), (1, 0), -2.0, 8, (17, 34)),
    "dma_thread": ((1,), (2,), (0,), 3.0, 1, (8, 35)),
}


@pytest.fixture(scope="module")
def pads(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], object]:
    p = Path(tmp_path_factory.mktemp("pads")) / "pads.co"
    p.write_text(PADS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the masked-load fallback of the tma.pad copies
        return {(s, f): load(p, oob_fill=f, schedule=s) for s in ("source", "auto") for f in ("zero", "nan")}


def _padded_reference(x: torch.Tensor, fn: str, blocks: int, outside: float) -> torch.Tensor:
    """Each block's tile of x (``outside`` where it lies outside x), padded as LANGUAGE.md 7.8 says, in float64."""
    lo, hi, mid, value, rows, tile = PAD_FORMS[fn]
    m, n = x.shape
    big = torch.full((blocks * 8 + 8, 64), outside, dtype=torch.float64)
    big[:m, :n] = x.double().cpu()
    out = torch.full((blocks, *tile), value, dtype=torch.float64)
    for g in range(blocks):
        if fn == "dma_thread":  # thread t of block g pads row 8 g + t: 32 elements, 1 before, 2 after
            out[g, :, 1:33] = big[g * 8 : g * 8 + 8, :32]
            continue
        src = big[g * rows : (g + 1) * rows, :32]
        for i in range(rows):
            out[g, lo[0] + i * (mid[0] + 1), lo[1] : lo[1] + 32 * (mid[1] + 1) : mid[1] + 1] = src[i]
    return out


@pytest.mark.parametrize("fn", list(PAD_FORMS))
@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("fill", ["zero", "nan"])
@pytest.mark.parametrize("size", [(19, 30), (5, 29), (24, 32)], ids=["ragged", "short", "exact"])
def test_a_pad_copy_reads_outside_the_tensor_as_the_fill_and_its_border_as_the_pad_value(
    pads: dict[tuple[str, str], object], fn: str, schedule: str, fill: str, size: tuple[int, int]
) -> None:
    x = torch.randn(*size, generator=torch.Generator().manual_seed(7)).to(DEVICE)
    blocks = 3
    y = torch.full((blocks, *PAD_FORMS[fn][5]), 12345.0, device=DEVICE)  # poisoned with a number, not NaN
    getattr(pads[(schedule, fill)], fn)(x, y)
    ref = _padded_reference(x, fn, blocks, float("nan") if fill == "nan" else 0.0)
    got = y.double().cpu()
    assert torch.equal(torch.isnan(got), torch.isnan(ref)), "NaN exactly where the tile lies outside x"
    assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(ref))


THREAD_ROWS = """
__co__ void rows(global f32 [M, N] x, global f32 [G, 4, 16] y) {
  parallel bm by G : block {
    parallel t by 4 : thread {
      l = dma.copy x.subspan(1, 16).at(bm * 4 + t, 1).sqz() => local;
      dma.copy l.data => y.subspan(1, 1, 16).at(bm, t, 0).sqz().sqz();
    }
  }
}
__co__ void rows_zfill(global f32 [M, N] x, global f32 [G, 4, 16] y) {
  parallel bm by G : block {
    parallel t by 4 : thread {
      l = dma.copy.zfill x.subspan(1, 16).at(bm * 4 + t, 1).sqz() => local;
      dma.copy l.data => y.subspan(1, 1, 16).at(bm, t, 0).sqz().sqz();
    }
  }
}
"""


@pytest.mark.parametrize("fn", ["rows", "rows_zfill"])
def test_a_per_thread_copy_reads_nan_outside_the_tensor_under_the_sanitizer(tmp_path: Path, fn: str) -> None:
    p = tmp_path / "rows.co"
    p.write_text(THREAD_ROWS)
    x = torch.randn(6, 30, device=DEVICE)  # rows 6, 7 and columns 30, 31 of the tiles lie outside
    y = torch.full((2, 4, 16), 12345.0, device=DEVICE)
    getattr(load(p, oob_fill="nan"), fn)(x, y)
    ref = torch.full((8, 32), 0.0 if fn == "rows_zfill" else float("nan"))
    ref[:6, :30] = x.cpu()
    ref = ref[:, 16:32].reshape(2, 4, 16)
    assert torch.equal(torch.isnan(y.cpu()), torch.isnan(ref))
    assert torch.equal(torch.nan_to_num(y.cpu()), torch.nan_to_num(ref))
