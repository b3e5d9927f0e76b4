"""schedule/fliplanes.py: accesses that run backwards along a lane (``x.at(r, N - 1 - j)``) read and
written forwards under auto, the tile flipped in registers with ``tl.flip``; each kernel checked against
float64 torch on ragged sizes with NaN-poisoned outputs in both schedules, and the generated code read:
the flip where the proof holds (a load, a store, a lane on the first axis of the tile), none where the
index also reads a value loaded along the lane."""

from __future__ import annotations

import re
from functools import cache

import pytest
import torch
from kernel_util import DEVICE, kernel_code

from croq2triton.api import load_source, translate_full

SRC = """
__co__ void rev_cols(global f32 [M, N] x, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 4), cdiv(N, 64)] : block
    parallel {i, j} by [4, 64] : thread
      if ((bm # i) < M && (bn # j) < N)
        out.at(bm # i, bn # j) = x.at(bm # i, N - 1 - (bn # j)) + 1.0f;
}

__co__ void rev_store(global f32 [M, N] x, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 4), cdiv(N, 64)] : block
    parallel {i, j} by [4, 64] : thread
      if ((bm # i) < M && (bn # j) < N)
        out.at(bm # i, N - 1 - (bn # j)) = x.at(bm # i, bn # j);
}

// out[i, j] = x[j, M - 1 - i]: the lane that runs backwards is on the tile's first axis
__co__ void rev_t(global f32 [N, M] x, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block
    parallel {i, j} by [32, 32] : thread
      if ((bm # i) < M && (bn # j) < N)
        out.at(bm # i, bn # j) = x.at(bn # j, M - 1 - (bm # i));
}

// a row of 4 f32 reversed: one 16-byte group, no grouping (the whole tile flipped along the lane)
__co__ void rev_narrow(global f32 [M, 4] x, global f32 [M, 4] out) {
  parallel bm by cdiv(M, 32) : block
    parallel {i, j} by [32, 4] : thread
      if ((bm # i) < M)
        out.at(bm # i, j) = x.at(bm # i, 3 - j);
}

// out[i, j] = x[i, s[i, j]] written as x[i, idx[i, j] - j] (idx = s + j): the index reads a value
// loaded along j, so the lane at N - 1 - j is not the same expression at the mirrored lane
__co__ void rev_gathered(global s32 [M, N] idx, global f32 [M, N] x, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 4), cdiv(N, 64)] : block
    parallel {i, j} by [4, 64] : thread
      if ((bm # i) < M && (bn # j) < N)
        out.at(bm # i, bn # j) = x.at(bm # i, idx.at(bm # i, bn # j) - (bn # j));
}
"""

NAN = float("nan")


@cache
def _out(schedule: str) -> tuple[str, object]:
    out = translate_full(SRC, filename="fliplanes.co", schedule=schedule)
    assert not out.failed, out.failed
    return out.source, load_source(out.source, f"fliplanes_{schedule}")


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE, dtype=torch.float64).float()


def _full(*shape: int) -> torch.Tensor:
    return torch.full(shape, NAN, device=DEVICE)


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(("m", "n"), [(7, 130), (37, 300)])
def test_reversed_accesses_are_right(schedule: str, m: int, n: int) -> None:
    torch.manual_seed(m + n)
    _, mod = _out(schedule)
    x, out = _randn(m, n), _full(m, n)
    x[0, 0], x[-1, -1] = NAN, -0.0  # (moved whole: a flip by bit patterns keeps NaN and -0.0)
    mod.rev_cols(x, out)  # type: ignore[attr-defined]
    want = (x.double().flip(1) + 1).float()  # (one f32 add: the float64 sum rounded once)
    torch.testing.assert_close(out, want, rtol=0, atol=0, equal_nan=True)
    out = _full(m, n)
    mod.rev_store(x, out)  # type: ignore[attr-defined]
    assert torch.equal(out.view(torch.int32), x.flip(1).view(torch.int32))  # bit for bit
    xt, out = _randn(n, m), _full(m, n)
    mod.rev_t(xt, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out.double(), xt.double().T.flip(0), rtol=0, atol=0)
    x4, out = _randn(m, 4), _full(m, 4)
    mod.rev_narrow(x4, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, x4.flip(1), rtol=0, atol=0)
    s = torch.randint(0, n, (m, n), device=DEVICE)
    idx = (s + torch.arange(n, device=DEVICE)[None, :]).int()
    out = _full(m, n)
    mod.rev_gathered(idx, x, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out.double(), torch.gather(x.double(), 1, s), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_flips_only_under_auto_and_where_proved(schedule: str) -> None:
    source, _ = _out(schedule)
    names = ("rev_cols", "rev_store", "rev_t", "rev_narrow")
    flips = {fn: kernel_code(source, f"{fn}_k0").count("tl.flip(") for fn in names}
    if schedule == "source":
        assert flips == dict.fromkeys(names, 0)
    else:
        assert all(n >= 1 for n in flips.values()), flips
        # groups of 4 f32 (16 bytes) read forwards, reversed in registers along the axis after the group's
        assert "tl.reshape(tl.flip(x_val_fwd,2),[" in kernel_code(source, "rev_cols_k0")
        assert "tl.reshape(tl.flip(x_val_fwd,1),[" in kernel_code(source, "rev_t_k0")  # the lane of the first axis
        assert "tl.flip(tl.reshape(x_val,[" in kernel_code(source, "rev_store_k0")  # the stored value
        narrow = kernel_code(source, "rev_narrow_k0")  # no groups: the whole tile along the lane
        assert "tl.flip(x_val_fwd,1)" in narrow and "tl.reshape(" not in narrow, narrow
    assert "tl.flip(" not in kernel_code(source, "rev_gathered_k0")


def test_the_forward_index_increases_along_the_lane() -> None:
    """The load of rev_cols under auto: the lane within a group (``j_rev``) with coefficient +1 in its last
    index, ``j`` itself not read."""
    code = kernel_code(_out("auto")[0], "rev_cols_k0")
    loads = re.findall(r"tl\.load\((x_ptr[^,]*),", code)
    assert len(loads) == 2, code  # the interior's and the edge's
    assert all(re.search(r"\+j_rev(_\d)?\*x_stride_1", a) and "-j_rev" not in a for a in loads), loads
    assert not any(re.search(r"\bj\*x_stride_1", a) for a in loads), loads


def test_the_policy_switch_turns_the_flip_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """``policy.FLIP_LANES = 0`` (a bench point, ``--points 'noflip:policy.FLIP_LANES=0'``): auto reads the
    reversed index as written, one element a lane."""
    from croq2triton.schedule import policy

    monkeypatch.setattr(policy, "FLIP_LANES", 0)
    code = kernel_code(translate_full(SRC, filename="flip.co", schedule="auto").source, "rev_cols_k0")
    assert "tl.flip(" not in code and "x_val_fwd" not in code, code
