"""The element types an MMA takes (LANGUAGE.md 7.9): which operand types make a pair, and the
accumulator types an MMA of each pair gives (upstream's MMA tables: WMMA, mma.sync, WGMMA).
f32 operands are croq2triton's too (a tf32 dot).  The lifting raises the errors these rules find
(lift/checks.py); a valid pair that croq2triton does not translate is not an error here."""

from __future__ import annotations

from itertools import product

_F8 = ("f8_e4m3", "f8_e5m2")
_INT8 = ("s8", "u8")
_INT4 = ("s4", "u4")

# (A's type, B's type) -> the accumulator types
PAIRS: dict[tuple[str, str], tuple[str, ...]] = {
    ("f16", "f16"): ("f16", "f32"),
    ("bf16", "bf16"): ("f32",),
    ("tf32", "tf32"): ("f32",),
    ("f32", "f32"): ("f32",),
    ("f64", "f64"): ("f64",),
    ("bin1", "bin1"): ("s32",),
    **{(a, b): ("f16", "f32") for a, b in product(_F8, _F8)},
    **{(a, b): ("s32",) for a, b in product(_INT8, _INT8)},
    **{(a, b): ("s32",) for a, b in product(_INT4, _INT4)},
}

# what the accumulator's declared type is called where it is kept in another (``int`` is s32)
_SAME = {"int": "s32"}


# the pairs as a hint lists them
SUPPORTED = (
    "f16 -> f16/f32, bf16 -> f32, tf32 -> f32, f32 -> f32, f8_e4m3/f8_e5m2 (mixed too) -> f16/f32,"
    " s8/u8 (mixed too) -> s32, s4/u4 (mixed too) -> s32, bin1 -> s32, f64 -> f64"
)


def operand_error(a: str, b: str) -> tuple[str, str] | None:
    """(message, hint) where operands of types ``a`` and ``b`` make no MMA."""
    if (a, b) in PAIRS:
        return None
    what = "must have the same type" if a != b else "are of a type no MMA takes"
    return (
        f"an MMA of {a} x {b} operands: its operands {what}",
        f"the MMAs of the language (operands -> accumulator): {SUPPORTED}; convert an operand first",
    )


def accumulator_error(a: str, b: str, acc: str) -> tuple[str, str] | None:
    """(message, hint) where no MMA of operands ``a`` x ``b`` accumulates into ``acc``."""
    accs = PAIRS.get((a, b))
    if accs is None or _SAME.get(acc, acc) in accs:
        return None
    operands = a if a == b else f"{a} x {b}"
    return (
        f"an MMA of {operands} operands accumulates into {' or '.join(accs)}, not {acc}",
        f"declare the accumulator '{accs[-1]}' (mma.fill.{accs[-1]}); the MMAs of the language: {SUPPORTED}",
    )
