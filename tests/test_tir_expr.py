"""Tile-IR expressions: canonical folding, comparison by meaning, bounds, and their Python text."""

from __future__ import annotations

import pytest

from croq2triton.tir import expr as E
from croq2triton.tir.pyexpr import to_source

pid = E.Var("pid_m", lo=0, hi=None)
M = E.Var("M", lo=1)
K = E.Var("K", lo=1)
rows = E.Arange(64)


def src(e: E.Expr, where: str = "kernel") -> str:
    return to_source(e, where)  # type: ignore[arg-type]


def test_identities_fold_away() -> None:
    assert src(pid * 1 + 0) == "pid_m"
    assert src(E.Const(0) * M + pid) == "pid_m"
    assert src(E.Bin("/", M, E.Const(1))) == "M"
    assert src((pid * 64 + rows) - rows) == "pid_m * 64"


def test_terms_keep_the_order_they_were_written_in_and_collect() -> None:
    e = pid * 64 + rows + pid * 64
    assert src(e) == "pid_m * 128 + tl.arange(0, 64)"
    assert src(M - 1 + 1) == "M"
    assert src(E.Const(2) * (M + 3)) == "M * 2 + 6"


def test_lifts_move_to_the_leaves() -> None:
    offs = pid * 64 + rows
    lifted = E.Lift(offs, 2, (0,))
    assert src(lifted) == "pid_m * 64 + tl.arange(0, 64)[:, None]"
    assert lifted.shape == (64, 1)
    assert E.same(lifted, pid * 64 + E.Lift(rows, 2, (0,)))
    assert src(E.Lift(E.Lift(rows, 2, (1,)), 3, (0, 2))) == "tl.arange(0, 64)[None, None, :]"


def test_same_is_by_meaning_not_spelling() -> None:
    chunk = E.Bin("/", K, E.CDiv(K, E.Const(32)))
    again = E.Bin("/", K + 0, E.CDiv(K * 1, E.Const(32)))
    assert E.same(chunk, again)
    assert E.same(M * 2 + 4, E.Const(2) * (M + 2))
    assert not E.same(M * 2, M * 3)
    assert not E.same(E.Bin("/", K, E.Const(2)), E.Bin("/", K, E.Const(3)))


def test_comparisons_decided_by_bounds() -> None:
    assert E.fold(rows.lt(64)) == E.Const(True, "i1")
    assert E.fold(rows.lt(100)) == E.Const(True, "i1")
    assert E.fold(E.Bin(">=", rows, E.Const(64))) == E.Const(False, "i1")
    assert src(rows.lt(M)) == "tl.arange(0, 64) < M"  # M is unknown: a real mask


def test_masks_drop_what_always_holds_and_repeats() -> None:
    offs = pid * 64 + rows
    mask = E.conj([rows.lt(64), offs.lt(M), (pid * 64 + rows).lt(M)])
    assert src(mask) == "pid_m * 64 + tl.arange(0, 64) < M"
    never = E.conj([offs.lt(M), E.Bin(">=", rows, E.Const(64))])
    assert never == E.Full((64,), False, "i1")


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (E.Bin("/", pid * 64 + 128, E.Const(64)), "pid_m + 2"),
        (E.Bin("%", pid * 64, E.Const(64)), "0"),
        (E.Bin("/", rows, E.Const(64)), "0"),
        (E.Bin("%", rows, E.Const(64)), "tl.arange(0, 64)"),
        (E.CDiv(E.Const(100), E.Const(64)), "2"),
        (E.CDiv(M * 64, E.Const(64)), "M"),
        (E.Bin("/", E.Const(-7), E.Const(2)), "-3"),  # C division truncates
        (E.Bin("%", E.Const(-7), E.Const(2)), "-1"),
    ],
)
def test_division(expr: E.Expr, text: str) -> None:
    assert src(expr) == text


def test_bounds() -> None:
    assert E.bounds(pid * 64 + rows) == (0, None)
    assert E.bounds(E.Var("i", lo=0, hi=3) * 16 + E.Arange(16)) == (0, 63)
    assert E.bounds(E.Bin("%", M, E.Const(8))) == (0, 7)
    assert E.bounds(E.Bin("min", M, E.Const(8))) == (1, 8)
    assert E.bounds(E.Bin("min", E.Var("x"), E.Const(8))) == (None, 8)


def test_host_division_keeps_c_semantics_unless_operands_are_non_negative() -> None:
    x = E.Var("x")  # unknown sign
    assert src(E.Bin("/", x, E.Const(4)), "host") == "_rt.idiv(x, 4)"
    assert src(E.Bin("/", M, E.Const(4)), "host") == "M // 4"
    assert src(E.CDiv(M, E.Const(64)), "host") == "_rt.cdiv(M, 64)"
    assert src(E.CDiv(M, E.Const(64))) == "tl.cdiv(M, 64)"


def test_where_casts_and_constants() -> None:
    x = E.Var("x", "f32", dims=(64,))
    assert src(E.Where(E.Const(True, "i1"), x, E.Const(0.0, "f32"))) == "x"
    assert src(E.Cast(x, "f16")) == "x.to(tl.float16)"
    assert src(E.Cast(E.Cast(x, "f32"), "f32")) == "x"
    assert src(E.Full((16, 32), 0.0, "f32")) == "tl.zeros([16, 32], tl.float32)"
    assert src(E.Full((8,), float("-inf"), "f32")) == "tl.full([8], float('-inf'), tl.float32)"
    assert src(E.Bin("max", x, E.Const(0.0, "f32"))) == "tl.maximum(x, 0.0)"


def test_shapes_broadcast_or_fail() -> None:
    a = E.Lift(E.Arange(16), 2, (0,))
    b = E.Lift(E.Arange(32), 2, (1,))
    assert (a + b).shape == (16, 32)
    with pytest.raises(E.ShapeError):
        _ = E.Arange(16) + E.Arange(32)


def test_a_select_folds_to_a_branch_only_with_its_shape() -> None:
    """``where(hit, 0, 0)`` of a tile ``hit`` is a tile of zeros: folded to the scalar 0 it lost its axes
    (a value picked under a condition reduced ``tl.sum(0, axis=1)``, helper X, 2026-12-07)."""
    hit = E.Var("hit", "i1", dims=(8, 16))
    zero = E.Const(0.0, "f32")
    kept = E.fold(E.Where(hit, zero, zero))
    assert kept.shape == (8, 16)
    tile = E.Var("t", "f32", dims=(8, 16))
    assert E.fold(E.Where(E.Const(True, "i1"), zero, tile)).shape == (8, 16)
    assert E.fold(E.Where(E.Const(False, "i1"), zero, tile)) == tile  # (the branch has the shape: taken)
    assert E.fold(E.Where(E.Var("c", "i1"), zero, zero)) == zero  # (a scalar select of one value: the value)
