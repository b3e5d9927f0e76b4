"""2:4 sparse MMAs (``mma.row.L2.sp acc, A, B, meta``, LANGUAGE.md 7.9): the compressed A operand
expanded to its dense tile in registers, which the MMA then multiplies as any other (Triton has no
sparse dot; the expansion is correct on every target).

The layout is the one upstream's host policies (``Sparse2to4HostPolicyWGMMA::encode`` for u8
metadata, ``Sparse2to4HostPolicy::encode`` for u16 / u32) give users' data, docs/mma.md:

* A is stored ``[M, K / 2]``: for each group of four consecutive K positions of a row, the two values
  it keeps, in increasing position order;
* the metadata is stored ``[M, K / D]`` of an integer type: each element covers ``D`` consecutive
  dense K positions of its row (``D / 4`` groups); group ``g`` of the element is its bits
  ``4g .. 4g + 3``, the low two bits the position (0 to 3) of the group's first kept value, the high
  two that of its second.  ``D`` is what the operands' extents say (``2 x`` A's K over the
  metadata's K): 8 for u8 (two groups a byte), 16 or 32 for u32 (upstream's META_K 16 uses the low
  half of each word).

Values at one position (metadata that names one position twice) read the first value there.
"""

from __future__ import annotations

from collections.abc import Callable

from ..tir import expr as E

INDEX_BITS = {"u8": 8, "s8": 8, "u16": 16, "s16": 16, "u32": 32, "s32": 32, "int": 32}


def packed_per_element(packed_k: int, meta_k: int, meta_elem: str) -> int | None:
    """How many kept values (2-bit indices) one metadata element describes: ``packed_k / meta_k``,
    a power of two that fits the element's bits; None where the extents say no such thing."""
    if meta_k <= 0 or packed_k % meta_k:
        return None
    per = packed_k // meta_k
    bits = INDEX_BITS.get(meta_elem)
    if bits is None or per < 2 or per & (per - 1) or 2 * per > bits:
        return None
    return per


def dense_tile(packed: E.Expr, meta: E.Expr, per: int, name: Callable[[E.Expr, str], E.Expr]) -> E.Expr:
    """The dense ``[M, 2 Kp]`` tile of the compressed ``[M, Kp]`` tile ``packed`` whose kept values'
    positions ``meta`` (``[M, Kp / per]``, ``per`` 2-bit indices an element, the first in its low
    bits) gives; zero at the positions no value is kept.  ``name`` binds a value to a name (the
    index and kept values are read twice: once for the first kept value of each group, once for
    the second)."""
    rows, kp = packed.shape
    assert isinstance(rows, int) and isinstance(kp, int)  # (the caller's: tiles of fixed extents)
    groups = kp // 2
    words = E.Cast(meta, "i32")  # (u32's top bit: its bits as they are, the shifts below mask them)
    shifts = E.Bin("*", E.Arange(per), E.Const(2))
    index = E.Bin("&", E.Bin(">>", E.Lift(words, 3, (0, 1)), E.Lift(shifts, 3, (2,))), E.Const(3))
    index = name(E.Reshape(index, (rows, groups, 2)), "kept_at")  # [row, group, first or second value]
    values = name(E.Reshape(packed, (rows, groups, 2)), "kept")
    position = E.Lift(E.Arange(4), 3, (2,))
    dense: E.Expr = E.Full((rows, groups, 4), 0, packed.dtype)
    for half in (1, 0):  # (the first kept value wins a position named twice)
        at = E.Bin("==", E.Lift(E.Split(index, half), 3, (0, 1)), position)
        dense = E.Where(at, E.Lift(E.Split(values, half), 3, (0, 1)), dense)
    return name(E.Reshape(dense, (rows, 4 * groups)), "dense")
