"""What a ``tma.copy`` that TMA cannot take says (LANGUAGE.md 7.8): the warning of the masked
fallback names the actual reason (a tile that may reach past its view, a view of run-time extent,
a transposing or padding copy); a copy into or out of one whole buffer of an array of buffers
(``ring[k % 2]``, LANGUAGE.md 7.5: one buffer) uses a descriptor as a plain buffer does; and a TMA
copy, transposing or padding copy between two tensors is the user's error, as one between two
buffers is."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE

from croq2triton.api import load, translate_full
from croq2triton.cli import main


def _warnings(src: str) -> list[str]:
    out = translate_full(src, filename="reasons.co")
    assert not out.failed, out.failed
    return [d.message for d in out.diagnostics if d.severity == "warning"]


# ---- the fallback's reasons -------------------------------------------------------------------

TILE_OF_SUBSPAN = """
__co__ void st(global f32 [M, N] x, global f32 [M, N] y) {
  parallel bn by cdiv(N, 32) : block {
    shared f32 [8, 32] s;
    tma.copy x.subspan(8, 32).at(0, bn) => s;
    w = y.subspan(12, 32).at(0, bn);
    tma.copy s => w.subspan(8, 32).at(1, 0);
  }
}
__co__ void ld(global f32 [M, N] x, global f32 [M, N] y) {
  parallel bn by cdiv(N, 32) : block {
    shared f32 [8, 32] s;
    v = x.subspan(12, 32).at(0, bn);
    tma.copy v.subspan(8, 32).at(1, 0) => s;
    tma.copy s => y.subspan(8, 32).at(0, bn);
  }
}
"""

PAST_THE_VIEW = "the window may reach past the view it is a tile of (TMA clips only at the tensor's edges)"


def test_a_tile_of_a_constant_subspan_says_it_may_reach_past_its_view(tmp_path: Path) -> None:
    said = _warnings(TILE_OF_SUBSPAN)
    assert said == [
        f"tma.copy of 'y': {PAST_THE_VIEW}; using masked stores",
        f"tma.copy of 'x': {PAST_THE_VIEW}; using masked loads",
    ]
    # and the fallback is right: rows 8..15 of a view of 12 rows, so 8..11 only
    p = tmp_path / "tiles.co"
    p.write_text(TILE_OF_SUBSPAN)
    mod = load(p)
    x = torch.randn(20, 40, device=DEVICE)
    y = torch.full((20, 40), 123.0, device=DEVICE)
    mod.st(x, y)
    assert torch.equal(y[8:12], x[0:4]) and (y[12:] == 123.0).all() and (y[:8] == 123.0).all()
    y = torch.full((20, 40), 123.0, device=DEVICE)
    mod.ld(x, y)
    assert torch.equal(y[0:4], x[8:12]) and (y[4:8] == 0).all() and (y[8:] == 123.0).all()


def test_a_view_of_run_time_extent_says_so() -> None:
    said = _warnings(
        "__co__ void f(global f32 [16, 32] x, global f32 [M, N] y, int r0, int rows) {\n"
        "  parallel by 1 : block {\n    shared f32 [16, 32] s;\n    tma.copy x => s;\n"
        "    tma.copy s => y.view(rows, 32).from(r0, 0);\n  }\n}\n"
    )
    assert said == [
        "tma.copy of 'y': the view's run-time extent may be less than the box (TMA clips only at the tensor's"
        " edges); using masked stores"
    ]


def test_a_transposing_copy_says_it_transposes() -> None:
    said = _warnings(
        "__co__ void f(global f32 [M, N] x, global f32 [N, M] y) {\n"
        "  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 32)] : block {\n"
        "    t = tma.transp<1, 0> x.subspan(16, 32).at(bm, bn) => shared;\n"
        "    tma.copy t.data => y.subspan(32, 16).at(bn, bm);\n  }\n}\n"
    )
    assert said == ["tma.copy of 'x': the copy transposes the window; using masked loads"]


def test_a_padding_copy_says_it_pads() -> None:
    said = _warnings(
        "__co__ void f(global f32 [M, N] x, global f32 [G, 8, 36] y) {\n"
        "  parallel bm by G : block {\n"
        "    p = tma.pad<{0, 2}, {0, 2}, {0, 0}, 1.0f> x.subspan(8, 32).at(bm, 0) => shared;\n"
        "    dma.copy p.data => y.subspan(1, 8, 36).at(bm, 0, 0).sqz();\n  }\n}\n"
    )
    assert said == ["tma.copy of 'x': the copy pads the window; using masked loads"]


# ---- one whole buffer of an array of buffers: a descriptor, as for a plain buffer ----------------

RINGS = """
__co__ void through(global f32 [M, N] x, global f32 [M, N] y) {
  parallel bm by cdiv(M, 16) : block {
    shared f32 [16, 32] ring[3];
    foreach k in [cdiv(N, 32)] {
      tma.copy x.subspan(16, 32).at(bm, k) => ring[k % 3];
      tma.copy ring[k % 3] => y.subspan(16, 32).at(bm, k);
    }
  }
}
__co__ void diff(global f32 [M, N] x, global f32 [M, N] y, global f32 [M, N] z) {
  parallel bm by cdiv(M, 8) : block {
    shared f32 [8, 32] ring[2];
    shared f32 [8, 32] o;
    tma.copy x.subspan(8, 32).at(bm, 0) => ring[1];
    foreach k in [cdiv(N, 32)] {
      tma.copy x.subspan(8, 32).at(bm, k) => ring[k % 2];
      parallel {i, j} by [8, 32] : thread
        o.at(i, j) = ring[k % 2].at(i, j) - ring[(k + 1) % 2].at(i, j);
      tma.copy o => y.subspan(8, 32).at(bm, k);
      tma.copy ring[(k + 1) % 2] => z.subspan(8, 32).at(bm, k);
    }
  }
}
"""


def test_a_whole_buffer_of_an_array_uses_a_descriptor() -> None:
    out = translate_full(RINGS, filename="rings.co")
    assert not out.failed, out.failed
    assert [d.message for d in out.diagnostics if d.severity == "warning"] == []
    for fn, box in (("through", "16x32"), ("diff", "8x32")):
        code = out.source.split(f"def {fn}_k0(")[1].split("\n@")[0]
        assert f"x_desc_{box}.load(" in code, fn
        assert f"y_desc_{box}.store(" in code, fn


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("fill", ["zero", "nan"])
def test_copies_through_whole_buffers_of_an_array_are_exact(tmp_path: Path, schedule: str, fill: str) -> None:
    p = tmp_path / "rings.co"
    p.write_text(RINGS)
    mod = load(p, oob_fill=fill, schedule=schedule)
    for m, n in ((37, 100), (32, 96), (5, 20)):
        x = torch.randn(m, n, generator=torch.Generator().manual_seed(m), dtype=torch.float32).to(DEVICE)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a launch whose strides TMA cannot take falls back, and says so
            y = torch.full_like(x, 123.0)
            mod.through(x, y)
            assert torch.equal(y, x)
            y, z = torch.full_like(x, 123.0), torch.full_like(x, 123.0)
            mod.diff(x, y, z)
            before = torch.nn.functional.pad(x, (32, 0))[:, :n]  # tile k - 1 of x beside tile k
            before[:, :32] = x[:, :32]  # the first step's other slot holds tile 0
            assert torch.equal(z, before)
            assert torch.equal(y, x - before)


# ---- TMA copies global <-> shared only (LANGUAGE.md 7.8) ----------------------------------------


def _check(capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str) -> str:
    """What ``croq2triton check`` of ``src`` prints; it fails."""
    path = tmp_path / "t.co"
    path.write_text(src)
    assert main(["check", str(path)]) == 1
    out, err = capsys.readouterr()
    text = out + err
    assert "Traceback" not in text and "does not translate" not in text, text
    return text


@pytest.mark.parametrize(
    "op", ["tma.copy", "tma.transp<1, 0>", "tma.pad<{1, 1}, {1, 1}, {0, 0}, 0.0f>"], ids=["copy", "transp", "pad"]
)
@pytest.mark.parametrize("dst", ["y.subspan(8, 32).at(bm, bn)", "global"], ids=["tensor", "fresh"])
def test_a_tma_copy_between_two_tensors_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, op: str, dst: str
) -> None:
    line = f"    f = {op} x.subspan(8, 32).at(bm, bn) => {dst};"
    text = _check(
        capsys,
        tmp_path,
        "__co__ void k(global f32 [M, N] x, global f32 [M, N] y) {\n"
        "  parallel {bm, bn} by [cdiv(M, 8), cdiv(N, 32)] : block {\n"
        f"{line}\n"
        "    y.at(0, 0) = f.data.at(0, 0);\n  }\n}\n",
    )
    name = op.split("<")[0]
    assert (
        f"t.co:3:5: error: a {name} from global memory to global memory ('x.subspan(8, 32).at(bm, bn)' => '{dst}'):"
        " TMA copies between global and shared memory only" in text
    ), text
    assert f" 3 | {line}\n   |     ^~~" in text, text
    assert f"hint: stage the tile through a 'shared' buffer, or copy with 'dma.{name[4:]}'" in text, text


@pytest.mark.parametrize("op", ["tma.transp<1, 0>", "tma.pad<{1, 1}, {1, 1}, {0, 0}, 0.0f>"], ids=["transp", "pad"])
def test_a_transposing_or_padding_tma_copy_between_buffers_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, op: str
) -> None:
    text = _check(
        capsys,
        tmp_path,
        "__co__ void k(global f32 [M, N] y) {\n  parallel by 1 : block {\n"
        "    shared f32 [8, 32] s;\n    shared f32 [64, 64] t;\n"
        f"    {op} s => t;\n    dma.copy t.subspan(8, 32).at(0, 0) => y.subspan(8, 32).at(0, 0);\n  }}\n}}\n",
    )
    name = op.split("<")[0]
    assert (
        f"t.co:5:5: error: a {name} between two buffers ('s' => 't'): TMA copies between global and shared memory only"
        in text
    ), text
    assert f"hint: copy between buffers with 'dma.{name[4:]}'" in text, text


@pytest.mark.parametrize("op", ["tma.transp<1, 0>", "tma.pad<{1, 1}, {1, 1}, {0, 0}, 0.0f>"], ids=["transp", "pad"])
def test_a_transposing_or_padding_tma_copy_into_local_memory_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, op: str
) -> None:
    text = _check(
        capsys,
        tmp_path,
        "__co__ void k(global f32 [M, N] x, global f32 [M, N] y) {\n  parallel by 1 : block {\n"
        f"    f = {op} x.subspan(8, 32).at(0, 0) => local;\n    y.at(0, 0) = f.data.at(0, 0);\n  }}\n}}\n",
    )
    name = op.split("<")[0]
    assert (
        f"t.co:3:5: error: a {name} with a local destination ('x.subspan(8, 32).at(0, 0)' => 'local'): TMA copies"
        " between global and shared memory only" in text
    ), text
    assert f"hint: declare the buffer 'shared', or copy it with 'dma.{name[4:]}'" in text, text
