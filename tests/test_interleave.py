"""Accesses at a stride along the contiguous axis (tests/programs/interleave.co), which
schedule/interleave.py reads and writes as whole lines under ``--schedule auto``: interleaved pairs
and quads read as one tile and split (a complex multiply, a gate on interleaved halves, groups of
four reversed, pairs swapped by lanes of the row axis), stores joined into one, repeated reads
(upsampling by 4) and planes interleaved by a division.  Each runs on ragged sizes with random
inputs (with -0.0 and NaN where the kernel copies elements: they must come back bit for bit) and
NaN-poisoned outputs in both schedules, compared with float64 torch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import access_counts
import pytest
import torch
from kernel_util import DEVICE, load_once

PROGRAM = Path(__file__).parent / "programs" / "interleave.co"
NAN = float("nan")


def _full(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, NAN, device=DEVICE, dtype=dtype)


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE, dtype=torch.float64).to(dtype)


def _specials(x: torch.Tensor) -> torch.Tensor:
    """``x`` with a few -0.0, +0.0 and NaN elements (copied exactly or not at all)."""
    flat = x.view(-1)
    n = flat.numel()
    picks = torch.randperm(n, device=DEVICE)[: max(3, n // 20)]
    flat[picks[0::3]] = -0.0
    flat[picks[1::3]] = NAN
    flat[picks[2::3]] = 0.0
    return x


def _bits(got: torch.Tensor, want: torch.Tensor) -> None:
    """The same bits (a NaN's payload aside): -0.0 is not +0.0."""
    assert got.dtype == want.dtype and got.shape == want.shape
    same = (got == want) & (torch.signbit(got) == torch.signbit(want))
    assert bool((same | (got.isnan() & want.isnan())).all()), (got, want)


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5, equal_nan=True)


def cmul(m: object) -> None:
    r, n = 5, 77  # 77 complex numbers a row: a ragged last block
    a, b, z = _randn(r, 2 * n), _randn(r, 2 * n), _full(r, 2 * n)
    m.cmul(a, b, z)  # type: ignore[attr-defined]
    ca = torch.view_as_complex(a.double().reshape(r, n, 2).contiguous())
    cb = torch.view_as_complex(b.double().reshape(r, n, 2).contiguous())
    _close(z, torch.view_as_real(ca * cb).reshape(r, 2 * n))


def gate_pairs(m: object) -> None:
    r, d = 7, 100
    x, out = _randn(r, 2 * d), _full(r, d)
    m.gate_pairs(x, out)  # type: ignore[attr-defined]
    xd = x.double()
    _close(out, xd[:, 0::2] * xd[:, 1::2].clamp(min=0))


def reverse_quads(m: object) -> None:
    x, out = _specials(_randn(9, 128)), _full(9, 128)
    m.reverse_quads(x, out)  # type: ignore[attr-defined]
    _bits(out, x.reshape(9, 32, 4).flip(2).reshape(9, 128))


def swap_pairs(m: object) -> None:
    x, out = _specials(_randn(21, 64, dtype=torch.float16)), _full(21, 64, dtype=torch.float16)
    m.swap_pairs(x, out)  # type: ignore[attr-defined]
    _bits(out, x.reshape(21, 32, 2).flip(2).reshape(21, 64))


def upsample4(m: object) -> None:
    x, out = _specials(_randn(6, 75)), _full(6, 300)
    m.upsample4(x, out)  # type: ignore[attr-defined]
    _bits(out, (x.double() * 2).float().repeat_interleave(4, 1))


def interleave_planes(m: object) -> None:
    x, out = _specials(_randn(2, 5, 70)), _full(5, 140)
    m.interleave_planes(x, out)  # type: ignore[attr-defined]
    _bits(out, x.permute(1, 2, 0).reshape(5, 140))


CHECKS: list[Callable[[object], None]] = [cmul, gate_pairs, reverse_quads, swap_pairs, upsample4, interleave_planes]


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
def test_interleaved_form(check: Callable[[object], None], schedule: str) -> None:
    torch.manual_seed(0)
    check(_module(schedule))


@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__)
def test_interleaved_form_widened(check: Callable[[object], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """auto's widened kernels (one SM: the launchers pick them whatever the grid)."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "1")
    torch.manual_seed(0)
    check(_module("auto"))


def test_every_function_of_the_program_is_checked() -> None:
    text = PROGRAM.read_text()
    names = {line.split("(")[0].split()[-1] for line in text.splitlines() if line.startswith("__co__")}
    assert names == {f.__name__ for f in CHECKS}


def test_auto_reads_the_groups_as_one_tile() -> None:
    """schedule/interleave.py under auto: a group's accesses are one access of the whole line at a
    lane of ``c * L`` (``q_x4``), split and joined in registers; the source schedule keeps them as
    written."""
    from croq2triton.api import translate_full

    text = PROGRAM.read_text()
    auto = translate_full(text, filename=PROGRAM.name, schedule="auto").source
    source = translate_full(text, filename=PROGRAM.name, schedule="source").source
    quads = auto.split("def reverse_quads_k0(")[1].split("@triton.jit")[0]
    assert "q * 4" not in quads and "q_x4 * x_stride_1" in quads and "q_x4_2 * out_stride_1" in quads, quads
    assert "tl.split(tl.split(tl.reshape(" in quads and "tl.join(tl.join(" in quads, quads
    up = auto.split("def upsample4_k0(")[1].split("@triton.jit")[0]
    assert "tl.join(tl.join(x_val_by4, x_val_by4), tl.join(x_val_by4, x_val_by4))" in up, up
    assert "tl.split(" not in source and "tl.join(" not in source


# sizes at which the launchers pick the widened kernels, multiples of 16
SIZES: dict[str, dict[str, int]] = {
    "cmul": {"R": 4096, "N2": 2048},
    "gate_pairs": {"R": 16384, "D2": 256, "D": 128},
    "reverse_quads": {"R": 16384},
    "swap_pairs": {"R": 16384},
    "upsample4": {"H": 4096, "W": 512, "W4": 2048},
    "interleave_planes": {"R": 4096, "W": 512, "W2": 1024},
}
_ROWS = (
    "the pair lane on the tile's row axis: one load of the whole line and a permute before the split, but"
    " Triton compiles it to 32-bit accesses (a pair of f16) a thread, not 16 bytes"
)
# (function, access, why it is not whole lines yet)
WHOLE: list[tuple[str, str, str]] = [
    ("cmul", "a.ld", ""),
    ("cmul", "b.ld", ""),
    ("cmul", "z.st", ""),
    ("gate_pairs", "x.ld", ""),
    ("gate_pairs", "out.st", ""),
    ("reverse_quads", "x.ld", ""),
    ("reverse_quads", "out.st", ""),
    ("swap_pairs", "x.ld", _ROWS),
    ("swap_pairs", "out.st", _ROWS),
    ("upsample4", "x.ld", ""),
    ("upsample4", "out.st", ""),
    ("interleave_planes", "x.ld", ""),
    ("interleave_planes", "out.st", ""),
]


def _accesses(function: str) -> dict[str, dict[str, int]]:
    """``function``'s accesses compiled for sm_90a at its ``SIZES`` (once per test run)."""
    return access_counts.accesses(PROGRAM, function, SIZES[function])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("function", "access"),
    [
        pytest.param(f, a, id=f"{f}-{a}", marks=[pytest.mark.xfail(strict=True, reason=why)] if why else [])
        for f, a, why in WHOLE
    ],
)
def test_auto_accesses_whole_lines(function: str, access: str) -> None:
    """Compiled for sm_90a under auto: vector accesses (v2 / v4), not an element a thread."""
    got = _accesses(function)
    assert access in got, f"no access of {access} in {function}: {got}"
    assert got[access].get("x1", 0) == 0, f"{function}: {access} is {got[access]}; {got}"


def test_every_function_has_sizes_for_the_compile_check() -> None:
    assert set(SIZES) == {f.__name__ for f in CHECKS}


# ---------------------------------------------------------------- a lone stride (schedule/interleave.py lone)

LONE = """
// out = x[:, off::C] for a lane of 128 a row, the odd columns too where off = 1
__co__ void pick(global T [M, N] x, global T [M, H] out) {
  parallel {bm, bh} by [cdiv(M, 2), cdiv(H, 128)] : block
    parallel {i, j} by [2, 128] : thread
      if ((bm # i) < M && (bh # j) < H)
        out.at(bm # i, bh # j) = x.at(bm # i, C * (bh # j) + OFF);
}
"""


@pytest.mark.parametrize(
    ("dtype", "c", "off", "whole"),
    [
        ("f32", 2, 0, True),
        ("f32", 2, 1, True),  # the line starts at the odd column: its last element past N is masked off
        ("f16", 8, 3, True),  # 16 bytes a kept element
        ("f32", 8, 0, True),  # 32 bytes: one DRAM sector a kept element
        ("f64", 8, 0, False),  # 64 bytes: the line would read sectors the source does not
        ("f32", 3, 0, False),  # not a power of two
    ],
)
def test_lone_stride_read_as_whole_line(dtype: str, c: int, off: int, whole: bool, tmp_path: Path) -> None:
    """A lone read at a stride along the contiguous axis: under auto, the whole line read under its
    bounds and one part of it kept, masked again with the read's own mask (each element as loaded:
    -0.0 and NaN stay); where the line would read more DRAM sectors than the source, as written."""
    from croq2triton.api import load, translate_full

    src = LONE.replace("T [", f"{dtype} [").replace("C *", f"{c} *").replace("+ OFF", f"+ {off}")
    path = tmp_path / "lone.co"
    path.write_text(src)
    auto = translate_full(src, filename=path.name, schedule="auto").source
    assert ("tl.split(" in auto) is whole, auto
    torch_dtype = {"f16": torch.float16, "f32": torch.float32, "f64": torch.float64}[dtype]
    for h, n in ((131, c * 131 + off), (131, c * 130 + off + 1), (5, c * 5 + off)):  # the last kept at N - 1
        for schedule in ("source", "auto"):
            torch.manual_seed(0)
            x, out = _specials(_randn(7, n, dtype=torch_dtype)), _full(7, h, dtype=torch_dtype)
            load(path, schedule=schedule).pick(x, out)
            _bits(out, x[:, off::c][:, :h])


# ---------------------------------------------------------------- an index chosen by a select (interleave.py chosen)

CHOSEN = """
// out = x rolled right by shift along the last axis (torch.roll)
__co__ void roll(int shift, global f32 [M, N] x, global f32 [M, N] out) {
  parallel {r, bn} by [M, cdiv(N, 64)] : block
    parallel j by 64 : thread
      if ((bn # j) < N) {
        int src = (bn # j) - shift;
        out.at(r, bn # j) = x.at(r, src < 0 ? src + N : src);
      }
}

// each row rolled left by its own amount (0 <= sh < N), the select written the other way round
__co__ void roll_rows(global s32 [M] sh, global f32 [M, N] x, global f32 [M, N] out) {
  parallel {r, bn} by [M, cdiv(N, 64)] : block
    parallel j by 64 : thread
      if ((bn # j) < N) {
        int s = sh.at(r);
        out.at(r, bn # j) = x.at(r, (bn # j) >= N - s ? (bn # j) + s - N : (bn # j) + s);
      }
}

// near misses, as written: a clamp (one branch the same for every lane), a select on a loaded value
__co__ void clamp_cols(int k, global f32 [M, N] x, global f32 [M, N] out) {
  parallel {r, bn} by [M, cdiv(N, 64)] : block
    parallel j by 64 : thread
      if ((bn # j) < N)
        out.at(r, bn # j) = x.at(r, (bn # j) < k ? (bn # j) : k);
}

// a stencil's clamped left neighbour: one branch a constant element off any 16-byte group, scalar reads either way
__co__ void left_neighbour(global f32 [M, N] x, global f32 [M, N] out) {
  parallel {r, bn} by [M, cdiv(N, 64)] : block
    parallel j by 64 : thread
      if ((bn # j) < N)
        out.at(r, bn # j) = x.at(r, (bn # j) > 0 ? (bn # j) - 1 : (bn # j));
}

__co__ void pick_by_sign(global f32 [M, N] g, global f32 [M, N] x, global f32 [M, N] out) {
  parallel {r, bn} by [M, cdiv(N, 64)] : block
    parallel j by 64 : thread
      if ((bn # j) + 1 < N)
        out.at(r, bn # j) = x.at(r, g.at(r, bn # j) < 0.0f ? (bn # j) : (bn # j) + 1);
}
"""


def test_index_chosen_by_a_select(tmp_path: Path) -> None:
    """A read whose contiguous index is ``c ? a : b`` with ``c`` a threshold on the lane and ``a``, ``b``
    contiguous (a roll's wrap-around): under auto two loads, of ``a`` where ``c`` holds and ``b``
    elsewhere, chosen by ``tl.where``; a clamp, a stencil's clamped neighbour (off every 16-byte
    group: no vectors to gain) and a select on a loaded value stay as written.  Every
    element as loaded (-0.0 and NaN bit for bit), shifts past the row's end read nothing (NaN-poisoned
    out keeps the other value: 0)."""
    from croq2triton.api import load, translate_full

    path = tmp_path / "chosen.co"
    path.write_text(CHOSEN)
    auto = translate_full(CHOSEN, filename=path.name, schedule="auto").source
    for name, split in (
        ("roll", True),
        ("roll_rows", True),
        ("clamp_cols", False),
        ("left_neighbour", False),
        ("pick_by_sign", False),
    ):
        code = auto.split(f"def {name}_k0(")[1].split("@triton.jit")[0]
        assert ("x_val_a = " in code) is split, code
    mods = {schedule: load(path, schedule=schedule) for schedule in ("source", "auto")}
    m, n = 5, 301
    torch.manual_seed(0)
    x = _specials(_randn(m, n))
    for shift in (0, 1, 16, 117, 300, 301, 400):
        for mod in mods.values():
            out = _full(m, n)
            mod.roll(shift, x, out)
            want = (
                x.roll(shift, 1)
                if shift <= n
                else torch.cat([torch.zeros(m, shift - n, device=x.device), x[:, : 2 * n - shift]], 1)
            )
            _bits(out, want)
    sh = torch.randint(0, n, (m,), device=DEVICE, dtype=torch.int32)
    want = torch.stack([x[r].roll(-int(sh[r])) for r in range(m)])
    for mod in mods.values():
        out = _full(m, n)
        mod.roll_rows(sh, x, out)
        _bits(out, want)
        out = _full(m, n)
        mod.clamp_cols(200, x, out)
        _bits(out, x[:, torch.arange(n, device=x.device).clamp(max=200)])
        out = _full(m, n)
        mod.left_neighbour(x, out)
        _bits(out, x[:, (torch.arange(n, device=x.device) - 1).clamp(min=0)])
        g, out = _randn(m, n), _full(m, n)
        mod.pick_by_sign(g, x, out)
        idx = torch.arange(n - 1, device=x.device) + (g[:, : n - 1] >= 0).long()
        _bits(out[:, : n - 1], torch.gather(x, 1, idx))
