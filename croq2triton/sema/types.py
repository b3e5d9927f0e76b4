"""Element types (LANGUAGE.md 4.2 and 9.6) and C++-like promotion."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ElemType:
    name: str  # Croqtile spelling
    bits: int
    kind: str  # float | int | uint | bool
    triton: str | None  # tl.<name>, None when Triton has no such type
    torch: str | None  # torch.<name>

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def nbytes(self) -> int:
        return max(1, self.bits // 8)


_T = [
    ElemType("f64", 64, "float", "float64", "float64"),
    ElemType("f32", 32, "float", "float32", "float32"),
    ElemType("tf32", 32, "float", "float32", "float32"),
    ElemType("f16", 16, "float", "float16", "float16"),
    ElemType("bf16", 16, "float", "bfloat16", "bfloat16"),
    ElemType("f8_e4m3", 8, "float", "float8e4nv", "float8_e4m3fn"),
    ElemType("f8_e5m2", 8, "float", "float8e5", "float8_e5m2"),
    ElemType("f8_ue8m0", 8, "uint", None, None),
    ElemType("f8_ue4m3", 8, "uint", None, None),
    ElemType("f6_e3m2", 8, "float", None, None),
    ElemType("f6_e2m3", 8, "float", None, None),
    ElemType("f4_e2m1", 8, "float", None, None),
    ElemType("s64", 64, "int", "int64", "int64"),
    ElemType("s32", 32, "int", "int32", "int32"),
    ElemType("s16", 16, "int", "int16", "int16"),
    ElemType("s8", 8, "int", "int8", "int8"),
    ElemType("u64", 64, "uint", "uint64", "uint64"),
    ElemType("u32", 32, "uint", "uint32", "uint32"),
    ElemType("u16", 16, "uint", "uint16", "uint16"),
    ElemType("u8", 8, "uint", "uint8", "uint8"),
    # sub-byte integers: one element per byte (LANGUAGE.md 4.2), in int8 / uint8 storage (SUB_BYTE)
    ElemType("s6", 8, "int", "int8", "int8"),
    ElemType("u6", 8, "uint", "uint8", "uint8"),
    ElemType("s4", 8, "int", "int8", "int8"),
    ElemType("u4", 8, "uint", "uint8", "uint8"),
    ElemType("s2", 8, "int", "int8", "int8"),
    ElemType("u2", 8, "uint", "uint8", "uint8"),
    ElemType("u1", 8, "uint", "uint8", "uint8"),
    ElemType("bin1", 8, "uint", "uint8", "uint8"),
    ElemType("bool", 8, "bool", "int1", "bool"),
    ElemType("int", 32, "int", "int32", "int32"),
]
TYPES: dict[str, ElemType] = {t.name: t for t in _T}


@dataclass(frozen=True)
class SubByte:
    """A sub-byte integer type: ``width`` value bits held one element per byte (``storage``: s8 or
    u8).  A value converted to it keeps its low ``width`` bits, sign-extended when ``signed`` (C's
    wrapping conversion to a narrower type); arithmetic on it is that of ``int`` (C's integer
    promotions).  ``bin1`` is the 1-bit unsigned type ``u1`` as an element (its MMA is not)."""

    width: int
    signed: bool

    @property
    def storage(self) -> str:
        return "s8" if self.signed else "u8"

    @property
    def lo(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1


SUB_BYTE: dict[str, SubByte] = {
    "s6": SubByte(6, True),
    "u6": SubByte(6, False),
    "s4": SubByte(4, True),
    "u4": SubByte(4, False),
    "s2": SubByte(2, True),
    "u2": SubByte(2, False),
    "u1": SubByte(1, False),
    "bin1": SubByte(1, False),
}


def wrap_sub_byte(value: int, name: str) -> int:
    """``value`` converted to the sub-byte type ``name``: its low bits, sign-extended if signed."""
    sb = SUB_BYTE[name]
    v = value & ((1 << sb.width) - 1)
    return v - (1 << sb.width) if sb.signed and v > sb.hi else v


_FLOAT_RANK = {"f64": 4, "f32": 3, "tf32": 3, "f16": 2, "bf16": 2, "f8_e4m3": 1, "f8_e5m2": 1}


def elem(name: str) -> ElemType:
    return TYPES[name]


def promote(a: str | None, b: str | None) -> str | None:
    """Result type of ``a op b`` following C++ usual arithmetic conversions."""
    if a is None or b is None:
        return a or b
    if a == b:  # integers narrower than int are promoted to it (C's integer promotions)
        return "s32" if a in ("bool", "int", "s8", "s16", "u8", "u16", *SUB_BYTE) else a
    ta, tb = TYPES[a], TYPES[b]
    if ta.is_float or tb.is_float:
        if ta.is_float and tb.is_float:
            ra, rb = _FLOAT_RANK.get(a, 0), _FLOAT_RANK.get(b, 0)
            if ra == rb:  # f16 with bf16, or the two f8s: compute in f32
                return "f32"
            return a if ra > rb else b
        return a if ta.is_float else b
    # integers: wider wins, unsigned wins at equal width
    if ta.bits != tb.bits:
        w = ta if ta.bits > tb.bits else tb
        return "s32" if w.bits < 32 else w.name
    if ta.bits < 32:
        return "s32"
    return a if ta.kind == "uint" else b


def unlowerable_reason(name: str) -> str | None:
    t = TYPES.get(name)
    if t is None:
        return f"unknown element type '{name}'"
    if t.triton is None or t.torch is None:
        return f"element type '{name}' has no Triton/torch equivalent"
    return None
