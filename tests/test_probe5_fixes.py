"""Fixes found by probe 5 (issue 28, tests/test_probe5.py), each with a program of its own: ragged
sizes, random inputs, outputs poisoned with NaN, both schedules, compared with float64 torch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE

import croq2triton
from croq2triton.cli import main

SCHEDULES = ["source", "auto"]


def _load(tmp_path: Path, src: str, schedule: str) -> object:
    path = tmp_path / "p.co"
    path.write_text(src)
    return croq2triton.load(path, schedule=schedule)


def _rnd(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype).to(DEVICE)


def _nan(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, float("nan"), device=DEVICE, dtype=dtype)


def _close(got: torch.Tensor, want: torch.Tensor, tol: float = 0.0) -> None:
    torch.testing.assert_close(got.cpu().double(), want.cpu().double(), rtol=tol, atol=tol)


# ---- an accumulator read by 'apply' before the loop whose copies define its operands -------------
# LANGUAGE.md 7.9: the accumulator's shape is the product of its first MMA; the operands of that MMA
# are futures (or their '.data') defined inside the K loop, after the apply: their extents are read
# where they are defined (the loop's counter bound there), not "'sa' is not declared".
ACC_BEFORE_LOOP = """
__co__ void f(global f16 [M, K] a, global f16 [N, K] b, global f32 [N] bias, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block {
    acc = mma.fill.f32 0.0f;
    apply {i, j} in acc.span
      acc.at(i, j) = (bn * 16 + j < N) ? bias.at(bn * 16 + j) : 0.0f;
    foreach k in [cdiv(K, 16)] {
      sa = dma.copy.zfill a.subspan(16, 16).at(bm, k) => shared;
      sb = dma.copy.zfill b.subspan(16, 16).at(bn, k) => shared;
      mma.row.row acc, OPS;
    }
    mma.store acc, c.subspan(16, 16).at(bm, bn);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("ops", ["sa.data, sb.data", "sa, sb"])
def test_an_accumulator_shaped_by_futures_defined_later_in_a_loop(tmp_path: Path, schedule: str, ops: str) -> None:
    mod = _load(tmp_path, ACC_BEFORE_LOOP.replace("OPS", ops), schedule)
    a, b, bias, c = _rnd(19, 37, dtype=torch.float16), _rnd(21, 37, dtype=torch.float16, seed=1), _rnd(21), _nan(19, 21)
    mod.f(a, b, bias, c)
    _close(c, a.double().cpu() @ b.double().cpu().T + bias.double().cpu(), 1e-3)


# ---- host-level copies of windows partly outside their tensor (LANGUAGE.md 14.3) -----------------
# A copy between launches is a torch copy; a window that reaches past its tensor reads zero there
# and drops the writes there, as every copy in a kernel does (was: an error at launch).
HOST_WINDOWS = """
__co__ void f(global f32 [M, N] x, global f32 [M, N] y, global f32 [R] row, int r0) {
  global f32 [4, N] w;
  dma.copy x.subspan(4, N).at(1, 0) => w;
  dma.copy w => y.view(4, N).from(r0, 0);
  dma.copy x.subspan(1, N).at(r0, 0).sqz() => row.view(N).from(2);
  dma.pad<{1}, {0}, {0}, 5.0f> x.subspan(1, 2).at(0, 0).sqz() => row.view(3).from(R - 2);
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_host_copies_of_windows_partly_outside(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, HOST_WINDOWS, schedule)
    x, y, row = _rnd(7, 5), _nan(7, 5), _nan(9)
    mod.f(x, y, row, 5)
    xd = x.double().cpu()
    w = torch.cat([xd[4:7], torch.zeros(1, 5, dtype=torch.float64)])  # rows 4..7: row 7 reads zero
    assert torch.isnan(y[:5]).all(), "rows before the window were written"
    _close(y[5:7], w[:2])  # rows 7 and 8 of the window fall past y: dropped
    _close(row[2:7], xd[5])
    assert torch.isnan(row[:2]).all(), "the row's window starts at 2"
    _close(row[7:9], torch.tensor([5.0, xd[0, 0].item()], dtype=torch.float64))  # [5, x00, x01]: x01 past row


# ---- dma.pad with borders known only at launch (LANGUAGE.md 7.8) ---------------------------------
# A border is an extent like any other: a tile of K columns padded up to 16 ('16 - K'), a border
# before the elements from a scalar parameter. (Was refused: "a dma.pad with a run-time border".)
RUNTIME_PAD = """
__co__ void gemm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block {
    shared f16 [16, 16] sa;
    shared f16 [16, 16] sb;
    dma.pad<{0, 0}, {0, 16 - K}, {0, 0}, 0.0f> a.view(16, K).from(bm * 16, 0) => sa;
    dma.pad<{0, 0}, {0, 16 - K}, {0, 0}, 0.0f> b.view(16, K).from(bn * 16, 0) => sb;
    acc = mma.fill.f32 0.0f;
    mma.row.row acc, sa, sb;
    mma.store acc, c.subspan(16, 16).at(bm, bn);
  }
}
__co__ void shifted(global f32 [R, C] x, global f32 [R, 12] y, int lo) {
  parallel r by R : block {
    shared f32 [1, 12] s;
    dma.pad<{0, lo}, {0, 12 - C - lo}, {0, 0}, -1.0f> x.subspan(1, C).at(r, 0) => s;
    dma.copy s => y.subspan(1, 12).at(r, 0);
  }
}
__co__ void between(global f32 [R, C] x, global f32 [R, 12] y, int lo) {
  parallel r by R : block
    dma.pad<{0, lo}, {0, 12 - C - lo}, {0, 0}, 2.5f> x.subspan(1, C).at(r, 0) => y.subspan(1, 12).at(r, 0);
}
__co__ void out_of_buffer(global f32 [R, C] x, global f32 [R, 12] y, int lo) {
  parallel r by R : block {
    s = dma.copy x.subspan(1, C).at(r, 0) => shared;
    dma.pad<{0, lo}, {0, 12 - C - lo}, {0, 0}, 4.0f> s.data => y.subspan(1, 12).at(r, 0);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_pad_with_borders_known_at_launch(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, RUNTIME_PAD, schedule)
    a, b, c = _rnd(19, 11, dtype=torch.float16), _rnd(21, 11, dtype=torch.float16, seed=1), _nan(19, 21)
    mod.gemm(a, b, c)
    _close(c, a.double().cpu() @ b.double().cpu().T, 1e-3)
    x = _rnd(3, 7, seed=2)
    for fn, fill in (("shifted", -1.0), ("between", 2.5), ("out_of_buffer", 4.0)):
        y = _nan(3, 12)
        getattr(mod, fn)(x, y, 2)
        want = torch.full((3, 12), fill, dtype=torch.float64)
        want[:, 2:9] = x.double().cpu()
        _close(y, want)


# ---- the buffer of a placeholder no copy ever binds (LANGUAGE.md 7.8) -----------------------------
def _check(tmp_path: Path, src: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "t.co"
    path.write_text(src)
    rc = main(["check", str(path)])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("engine", ["dma", "tma"])
def test_reading_a_placeholder_that_holds_no_copy_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    """'a = dma.any;' then 'a.data' read with no copy, swap or rotate ever giving 'a' one: the
    user's error, located (it was refused as "'.data' of something that is not a future")."""
    src = f"""__co__ void f(global f32 [N] x, global f32 [N] y) {{
  parallel p by 1 : block {{
    a = {engine}.any;
    dma.copy a.data => y.subspan(4).at(0);
  }}
}}
"""
    rc, err = _check(tmp_path, src, capsys)
    assert rc != 0
    assert err.startswith(
        f"{tmp_path / 't.co'}:4:14: error: in 'f': the future 'a' holds no copy here (it is a 'dma.any' / 'tma.any'"
    ), err


def test_a_placeholder_a_copy_binds_later_is_not_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel p by 1 : block {
    cur = dma.copy x.subspan(4).at(0) => shared;
    nxt = dma.any;
    foreach k in [cdiv(N, 4)] {
      if (k + 1 < cdiv(N, 4)) nxt = dma.copy x.subspan(4).at(k + 1) => shared;
      dma.copy cur.data => y.subspan(4).at(k);
      swap(cur, nxt);
    }
  }
}
"""
    rc, err = _check(tmp_path, src, capsys)
    assert rc == 0, err


# ---- warp roles that only write into one tensor (LANGUAGE.md 7.10) --------------------------------
# Two roles each storing its own half of the output, no event between them: no role reads what the
# other writes, so any order of the writes is the program's (was refused as a race on 'y').
DISJOINT_ROLES = """
__co__ void f(global f32 [R, 16] x, global f32 [R, 16] y) {
  parallel r by R : block {
    t = dma.copy x.subspan(1, 16).at(r, 0) => shared;
    parallel w by 2 : group {
      inthreads.async (w == 0) {
        dma.copy t.data.subspan(1, 8).at(0, 0) => y.subspan(1, 8).at(r, 1);
      }
      inthreads.async (w == 1) {
        parallel j by 32 : thread
          if (j < 8) y.at(r, j) = t.data.at(0, j + 8) * 2.0f;
      }
    }
  }
}
"""
RACING_ROLES = """
__co__ void f(global f32 [R, 16] x, global f32 [R, 16] y) {
  parallel r by R : block {
    parallel w by 2 : group {
      inthreads.async (w == 0) {
        dma.copy x.subspan(1, 16).at(r, 0) => y.subspan(1, 16).at(r, 0);
      }
      inthreads.async (w == 1) {
        parallel j by 32 : thread
          if (j < 16) y.at(r, j) += 1.0f;
      }
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_roles_that_only_write_one_tensor_do_not_race(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, DISJOINT_ROLES, schedule)
    x, y = _rnd(3, 16), _nan(3, 16)
    mod.f(x, y)
    xd = x.double().cpu()
    _close(y, torch.cat([xd[:, 8:] * 2, xd[:, :8]], 1))


def test_a_role_reading_what_another_writes_still_races(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = _check(tmp_path, RACING_ROLES, capsys)
    assert rc != 0 and "warp roles that use 'y' with no event ordering them" in err, err


# ---- a unit's own copy into fresh shared memory (LANGUAGE.md 7.8) --------------------------------
# 'piece = dma.copy x.chunkat(p # w) => shared;' under a warp level: each warp copies its own window
# into a fresh buffer only its future names, as into '=> local' (was refused: "a per-thread copy
# into a buffer the threads share").
UNIT_FRESH_SHARED = """
__co__ void warps(global f32 [72] x, global f32 [8] y) {
  parallel p by 4 : block {
    parallel w by 2 : group {
      piece = dma.copy x.chunkat(p # w) => shared;
      mutable f32 s = 0.0f;
      foreach k in [9] s += piece.data.at(k);
      y.at(p # w) = s;
    }
  }
}
__co__ void threads(global f32 [M, 4] x, global f32 [4, M] y) {
  parallel b by cdiv(M, 8) : block {
    parallel t by 2 : thread {
      s = dma.transp<1, 0> x.subspan(4, 4).at(b # t, 0) => shared;
      dma.copy s => y.subspan(4, 4).at(0, b # t);
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_units_own_copy_into_fresh_shared_memory(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, UNIT_FRESH_SHARED, schedule)
    x, y = _rnd(72), _nan(8)
    mod.warps(x, y)
    _close(y, x.double().cpu().reshape(8, 9).sum(1), 1e-5)
    x2, y2 = _rnd(13, 4, seed=3), _nan(4, 13)
    mod.threads(x2, y2)
    _close(y2, x2.double().cpu().T)


# ---- a unit's window into or out of its part of a shared buffer (LANGUAGE.md 7.5, 7.8) ------------
# Each warp copies its rows into its own slot of an array of shared buffers ('quad[qi][qj]') or its
# chunk of a shared tile, then everyone reads all of it; and back out of another warp's chunk. Made
# of two copies that translated (window -> own buffer -> part); was refused as 'a per-thread copy of
# this form'.
UNIT_PARTS = """
__co__ void slots(global f32 [M, N] x, global f32 [M, N] y) {
  parallel {p, q} by [cdiv(M, 8), cdiv(N, 8)] : block {
    shared f32 [4, 4] quad[2][2];
    parallel {qi, qj} by [2, 2] : group {
      dma.copy x.subspan(4, 4).at(p * 2 + qi, q * 2 + qj) => quad[qi][qj];
    }
    parallel {i, j} by [8, 16] : thread {
      r = p * 8 + i;
      c = q * 8 + j;
      if (j < 8 && r < M && c < N) y.at(r, c) = quad[1 - i / 4][j / 4].at(i % 4, j % 4);
    }
  }
}
__co__ void chunks(global f32 [M, 8] x, global f32 [M, 8] y) {
  parallel b by cdiv(M, 8) : block {
    shared f32 [8, 8] tile;
    parallel w by 4 : group
      dma.copy x.subspan(2, 8).at(b # w, 0) => tile.chunkat(w, _);
    parallel w by 4 : group
      dma.copy tile.chunkat(3 - w, _) => y.subspan(2, 8).at(b # w, 0);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_units_window_into_and_out_of_its_part_of_a_shared_buffer(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, UNIT_PARTS, schedule)
    x, y = _rnd(13, 11), _nan(13, 11)
    mod.slots(x, y)
    xp = torch.zeros(16, 16, dtype=torch.float64)
    xp[:13, :11] = x.double().cpu()
    want = xp.reshape(2, 2, 4, 16).flip(1).reshape(16, 16)  # the other quadrant row of each 8 x 8 tile
    _close(y, want[:13, :11])
    x2, y2 = _rnd(13, 8, seed=4), _nan(13, 8)
    mod.chunks(x2, y2)
    xp2 = torch.zeros(16, 8, dtype=torch.float64)
    xp2[:13] = x2.double().cpu()
    _close(y2, xp2.reshape(2, 4, 2, 8).flip(1).reshape(16, 8)[:13])


# ---- a name assigned index-tuple arithmetic in a kernel (LANGUAGE.md 7.1) -------------------------
# 'nb = t + {1, 1};' of a parallel's tuple 't' names an index tuple, as 'c = {p, q};' does (was
# refused: "'t' used as a value"); so does another name of the tuple ('u = t;').
TUPLE_NAMES = """
__co__ void f(global f32 [M, N] x, global f32 [M, N] y, global f32 [M, N] z) {
  parallel t = {p, q} by [cdiv(M, 4), cdiv(N, 4)] : block {
    nb = t + {1, 1};
    u = t;
    s = dma.copy x.subspan(4, 4).at(nb) => shared;
    dma.copy s => y.subspan(4, 4).at(u);
    back = nb * 2 - {2, 2} - t;
    dma.copy x.subspan(4, 4).at(back) => z.subspan(4, 4).at(t);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_name_assigned_index_tuple_arithmetic(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, TUPLE_NAMES, schedule)
    x, y, z = _rnd(10, 13), _nan(10, 13), _nan(10, 13)
    mod.f(x, y, z)
    xp = torch.zeros(20, 20, dtype=torch.float64)
    xp[:10, :13] = x.double().cpu()
    _close(y, xp[4:14, 4:17])
    _close(z, x.double().cpu())  # (2 (t + 1) - 2) - t is t


def test_a_units_window_through_its_own_copy_meets_between_the_two_copies() -> None:
    """The lanes' own copies are stored as one tile and read back as one tile of the same shape, yet
    Triton lays the two out apart (an element on two threads): a barrier between them, or the part of
    the shared buffer reads another thread's element before it is written (wrong on an H100, 2026-12-07:
    probe 5's b_quadrants, 3-4 of 143 elements)."""
    src = (Path(__file__).parent / "programs" / "probe5" / "bufs.co").read_text()
    for schedule in ("source", "auto"):
        code = croq2triton.translate(src, filename="bufs.co", schedule=schedule)
        body = code[code.index("def b_quadrants_k0") :]
        body = body[: body.index("\ndef ")]
        store = body.index("tl.store(_quad_own_scratch")
        load = body.index("tl.load(_quad_own_scratch")
        assert store < body.index("tl.debug_barrier()", store) < load, schedule
