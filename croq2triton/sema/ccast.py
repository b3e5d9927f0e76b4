"""C's conversions of a host-level scalar to a narrow type (``__to<T>(v)`` between launches): a
float rounded to the nearest value of ``f16`` / ``bf16`` / ``f32`` (ties to even), an integer
truncated toward zero and wrapped to the type's width.  Pure Python: the translator folds constants
with it, and generated launchers call it as ``_rt.host_cast``."""

from __future__ import annotations

import math
import struct

WIDTHS = {"i8": 8, "u8": 8, "i16": 16, "u16": 16, "u32": 32, "u64": 64}
FLOATS = ("f16", "bf16", "f32")
NARROW = (*WIDTHS, "f16", "bf16")  # f32: Python floats stand for it as they are


def wrap_int(value: int, bits: int, signed: bool) -> int:
    """``value`` wrapped to an integer type of ``bits`` bits, as C converts it."""
    v = value % (1 << bits)
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def host_cast(value: float | int | bool, dtype: str) -> float | int:
    if dtype in WIDTHS:  # int() truncates a float toward zero, as C does
        return wrap_int(int(value), WIDTHS[dtype], dtype.startswith("i"))
    if dtype not in FLOATS:
        raise ValueError(f"no host conversion to '{dtype}'")
    x = float(value)
    if math.isnan(x) or math.isinf(x):
        return x
    if dtype == "f16":
        try:
            return struct.unpack("<e", struct.pack("<e", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    try:
        f = struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)
    if dtype == "f32":
        return f
    b = struct.unpack("<I", struct.pack("<f", f))[0]
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000  # round the low half away, ties to even
    return struct.unpack("<f", struct.pack("<I", b))[0]
