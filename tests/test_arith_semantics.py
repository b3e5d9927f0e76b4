"""C / IEEE arithmetic in kernels (tests/programs/arith_semantics.co; LANGUAGE.md 3.3, 4.4, 7.7), each
wrong before (a probe of C arithmetic semantics, 2026-12-06):

* ``-x`` of a float flips the sign bit (Triton's ``-x`` is ``0 - x``: ``-(+0.0)`` was +0.0, and
  ``1 / -x`` +inf, compiled too); a ``-0.0`` constant stays negative when compiled;
* float identities only where IEEE has them: ``x + 0.0f`` was folded to ``x`` (``-0.0`` stayed
  ``-0.0``); float constants fold in f32 (``16777216.0f + 1.0f`` is 16777216);
* ``-`` of u8 / s8 / u16 / s16 / bool is an int after C's promotions (``-u8(67)`` was 189);
* integer literals that do not fit int are long (or unsigned int: a ``u`` suffix, or hexadecimal),
  and folds keep constants in their type's range (``v + 2147483648`` and ``v - 2147483647 - 1`` of
  an s32 ``v`` did not compile: "Scalar 2147483648 is out of range for type int32");
* conversions to bf16 round to nearest even with subnormals in the interpreter (they were cut
  short), from bf16 keep subnormals (runtime/interpreter_bf16.py);
* ``__fmaf`` rounds once in the interpreter (runtime/interpreter_fma.py);
* the libdevice builtins of the interpreter (runtime/libmath.py) give C's values at special inputs;
* f32 ``/`` is correctly rounded when compiled (``div.rn.f32``, not ``div.full.f32``).

Every output is poisoned first; every reference spells the C rule out in NumPy (or exact rationals),
and compares bits (any NaN for NaN) except where a library function's last ulps are the
implementation's. The compiled side is checked by compiling for sm_90a (tests/sm90.py)."""

from __future__ import annotations

import functools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sm90
import torch
from kernel_util import DEVICE, load_once

from croq2triton.tir import expr as E

PROGRAM = Path(__file__).parent / "programs" / "arith_semantics.co"
SCHEDULES = ["source", "auto"]
SENTINEL = -8888.0  # float outputs start as this (a NaN poison could pass for an expected NaN)
ISENTINEL = -777777

F32_EDGES = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.5, -2.75, 1e-45, -3e-39, 3.4e38, -1.0, 7.0]


def _f32(n: int, seed: int, edges: list[float] = F32_EDGES) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.logspace(-40, 38, n)).astype(np.float32)
    x[: len(edges)] = edges
    return x


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(DEVICE)


def _out(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    fill = SENTINEL if dtype.is_floating_point else ISENTINEL
    return torch.full(shape, fill, dtype=dtype, device=DEVICE)


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _same(got: torch.Tensor | np.ndarray, want: np.ndarray, what: str) -> None:
    """Bit for bit (any NaN for a NaN)."""
    g = got.cpu().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    want = np.asarray(want, dtype=g.dtype)
    if g.dtype.kind == "f":
        nan = np.isnan(g) & np.isnan(want)
        bad = (_bits(g) != _bits(want)) & ~nan
    else:
        bad = g != want
    assert not bad.any(), (
        f"{what}: {int(bad.sum())} differ, first at {np.argwhere(bad)[0]}: got {g[bad][:4]}, want {want[bad][:4]}"
    )


def _negated(a: np.ndarray) -> np.ndarray:
    """C's negation of a float: its sign bit flipped."""
    b = _bits(a)
    return (b ^ np.array(1 << (8 * a.dtype.itemsize - 1), dtype=b.dtype)).view(a.dtype)


# the functions compiled for sm_90a (in a process without the interpreter, tests/sm90.py): their
# arguments as (shape, torch dtype); each section adds its own
COMPILED: dict[str, list[tuple[list[int], str]]] = {}
_COMPILE = """
import json, os, re, sys
os.environ["TRITON_INTERPRET"] = "0"
import torch
from croq2triton.api import load
from croq2triton.runtime.aot import compile_launch, record
mod = load(sys.argv[1], interpret=False, schedule=sys.argv[2])
out = {}
for fn, args in json.loads(sys.argv[3]).items():
    lines = []
    # (on a GPU machine the launcher takes only tensors on the GPU; compiling needs none)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tensors = [torch.empty(*shape, dtype=getattr(torch, dtype), device=device) for shape, dtype in args]
    for la in record(getattr(mod, fn), *tensors):
        try:
            ptx = compile_launch(la).asm["ptx"]
        except Exception as e:
            lines.append("error: " + type(e).__name__ + ": " + str(e)[:300])
            continue
        ops = r"\\s*(@%p\\d+ )?(sub|neg|xor|mul|add|div|fma|cvt)\\."
        lines += [" ".join(line.split()) for line in ptx.splitlines() if re.match(ops, line)]
    out[fn] = lines
print(json.dumps(out))
"""


@functools.cache
def _ptx(schedule: str) -> dict[str, list[str]]:
    """The arithmetic instructions of each function of COMPILED compiled for sm_90a, one line each."""
    r = sm90.code(_COMPILE, str(PROGRAM), schedule, json.dumps(COMPILED))
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _compiled(fn: str, schedule: str) -> list[str]:
    lines = _ptx(schedule)[fn]
    assert lines and not any(x.startswith("error") for x in lines), (fn, lines[:3])
    return lines


N_AOT = 100


# ------------------------------------------------------------------ negation, identities


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_float_negation_flips_the_sign_bit(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    n = 45
    x = _f32(n, 1)
    h = _f32(n, 2, [0.0, -0.0, float("inf"), 65504.0, 6e-8, -1.0]).astype(np.float16)
    d = np.concatenate([[0.0, -0.0, float("inf"), 5e-324], np.random.default_rng(3).standard_normal(n - 4)])
    o, ho, dout = _out(n, 5), _out(n, dtype=torch.float16), _out(n, dtype=torch.float64)
    mod.negations(_t(x), _t(h), _t(d), o, ho, dout)
    with np.errstate(all="ignore"):
        _same(o[:, 0], _negated(x), f"-v ({schedule})")
        _same(o[:, 1], _negated(x * np.float32(3.0)), f"-(v * 3) ({schedule})")
        _same(o[:, 2], np.float32(2.0) / _negated(x - x), f"2 / -(v - v) ({schedule})")
        _same(o[:, 3], x * np.float32(-0.0), f"v * -(0.0f) ({schedule})")
        _same(o[:, 4], x, f"-(-v) ({schedule})")
        _same(ho, _negated(h), f"-h of f16 ({schedule})")
        _same(dout, 1.0 / _negated(d), f"1 / -d of f64 ({schedule})")
    assert str(o[0, 0].item()) == "-0.0" and o[0, 2].item() == -float("inf")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_float_identities_are_only_the_ieee_ones(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    n = 70
    x = _f32(n, 4)
    k = np.random.default_rng(5).integers(-(2**31), 2**31, n).astype(np.int32)
    o, ko = _out(n, 8), _out(n, 2, dtype=torch.int32)
    mod.identities(_t(x), _t(k), o, ko)
    zero = np.float32(0.0)
    with np.errstate(all="ignore"):
        _same(o[:, 0], x + zero, f"x + 0.0f ({schedule})")  # -0.0 + 0.0 is +0.0
        _same(o[:, 1], zero + x, f"0.0f + x ({schedule})")
        _same(o[:, 2], x + zero, f"x + 0 ({schedule})")
        _same(o[:, 3], zero * x, f"0.0f * x ({schedule})")  # NaN for infinities, -0.0 for negatives
        _same(o[:, 4], x - np.float32(-0.0), f"x - -0.0f ({schedule})")
        _same(o[:, 5], x, f"(x - 0.0f) * 1.0f + -0.0f ({schedule})")
        folded = (np.float32(16777216.0) + np.float32(1.0)) - np.float32(16777216.0)  # 0 in f32
        _same(o[:, 6], x + folded, f"x + (2^24 + 1 - 2^24 in f32) ({schedule})")
        _same(o[:, 7], np.float32(2.5) + x * zero, f"__max(NaN, 2.5f) + x * 0 ({schedule})")
    _same(ko[:, 0], k, f"k * 1 + 0 - 0 * k ({schedule})")
    _same(ko[:, 1], np.zeros(n, np.int32), f"0 + k * 0 ({schedule})")
    assert str(o[1, 0].item()) == "0.0"  # -0.0 + 0.0f


COMPILED["negations"] = [([N_AOT], "float32"), ([N_AOT], "float16"), ([N_AOT], "float64")]
COMPILED["negations"] += [([N_AOT, 5], "float32"), ([N_AOT], "float16"), ([N_AOT], "float64")]
COMPILED["identities"] = [([N_AOT], "float32"), ([N_AOT], "int32"), ([N_AOT, 8], "float32"), ([N_AOT, 2], "int32")]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_negation_compiled_for_sm90(schedule: str) -> None:
    neg = _compiled("negations", schedule)
    # a sign flip (neg / xor of the sign bit), not a subtraction from zero: the only subtraction
    # left is v - v; a -0.0 constant stays negative (Triton writes a constant 0 as +0.0)
    subs = [x for x in neg if x.startswith(("sub.f", "@"))]
    assert all(x.startswith("sub.f32") and x.split()[-1].rstrip(";") == x.split()[-2].rstrip(",;") for x in subs), subs
    assert any(x.startswith("mul.f32") and x.endswith("0f80000000;") for x in neg), neg
    assert any(x.startswith("xor.b16") for x in neg) and any(x.startswith("xor.b64") for x in neg), neg
    # x + 0.0f is an addition (of +0.0)
    ident = _compiled("identities", schedule)
    assert any(x.startswith("add.f32") and x.endswith("0f00000000;") for x in ident), ident


def test_folding_keeps_float_semantics() -> None:
    x = E.Var("x", "f32")
    assert E.fold(E.Bin("+", x, E.Const(0.0, "f32"))) != x
    assert E.fold(E.Bin("+", E.Const(0.0, "f32"), x)) != x
    assert E.fold(E.Bin("+", x, E.Const(-0.0, "f32"))) == x
    assert E.fold(E.Bin("-", x, E.Const(0.0, "f32"))) == x
    assert E.fold(E.Bin("-", x, E.Const(-0.0, "f32"))) != x
    assert E.fold(E.Bin("*", E.Const(0.0, "f32"), x)) != E.Const(0.0, "f32")
    assert E.Const(0.0, "f32") != E.Const(-0.0, "f32")
    assert E.fold(E.Un("-", E.Const(0.0, "f32"))) == E.Const(-0.0, "f32")
    # a choice between +0.0 and -0.0 is no constant
    c = E.Var("c", "i1")
    assert isinstance(E.fold(E.Where(c, E.Const(0.0, "f32"), E.Const(-0.0, "f32"))), E.Where)
    # integers: the identities hold, constants stay in range
    k = E.Var("k", "i32")
    assert E.fold(E.Bin("+", E.Bin("*", E.Const(0), k), k)) == k
    assert E.fold(E.Un("-", E.Const(-(2**31)))) == E.Const(-(2**31))
    folded = E.fold(E.Bin("-", E.Bin("-", k, E.Const(2**31 - 1)), E.Const(1)))
    assert all(-(2**31) <= n.value < 2**31 for n in folded.walk() if isinstance(n, E.Const))


# ------------------------------------------------------------------ integers


def _wrap(v: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    v = np.asarray(v, dtype=object) % (1 << bits)
    if signed:
        v = np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
    return v.astype(np.int64)


def _c_div(a: np.ndarray, b: int) -> np.ndarray:
    """C's truncating division."""
    return np.sign(a) * (np.abs(a) // abs(b)) * (1 if b > 0 else -1)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_unary_minus_promotes_narrow_integers(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    n = 77
    rng = np.random.default_rng(6)
    b = rng.integers(0, 256, n).astype(np.uint8)
    c = rng.integers(-128, 128, n).astype(np.int8)
    h = rng.integers(0, 65536, n).astype(np.uint16)
    s = rng.integers(-32768, 32768, n).astype(np.int16)
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b[:4], c[:4], h[:4], s[:4], u[:4] = (
        [0, 255, 67, 100],
        [-128, 127, 0, -1],
        [65535, 1000, 0, 1],
        [-32768, 32767, -7, 6],
        [0, 1, 2**31, 2**32 - 1],
    )
    o = _out(n, 7, dtype=torch.int32)
    uo = torch.zeros(n, dtype=torch.uint32, device=DEVICE)
    mod.narrow_minus(_t(b), _t(c), _t(h), _t(s), _t(u), o, uo)
    w, ci, hi, si = (a.astype(np.int64) for a in (b, c, h, s))  # C's integer promotions: int
    want = np.stack(
        [
            -w,
            -ci * 3,
            np.fmod(-hi, 1000),
            _c_div(-si, 7),
            -(w > 99).astype(np.int64) + 10,
            (-w) >> 2,
            (-w - ci) * 100000,
        ],
        axis=1,
    )
    _same(o, _wrap(want, 32, True).astype(np.int32), f"narrow_minus ({schedule})")
    got_u = uo.cpu().view(torch.int32).numpy().view(np.uint32)
    _same(got_u, ((-u.astype(np.int64)) % 2**32 // 2).astype(np.uint32), f"-u / 2 of u32 ({schedule})")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_literals_wider_than_int(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    n = 37
    x = np.random.default_rng(7).integers(-(2**31), 2**31, n).astype(np.int32)
    x[:5] = [-(2**31), 2**31 - 1, -1, 0, 12]
    wide, w, o = (
        _out(n, 3, dtype=torch.int64),
        torch.zeros(n, 3, dtype=torch.uint32, device=DEVICE),
        _out(n, 4, dtype=torch.int32),
    )
    mod.wide_literals(_t(x), wide, w, o)
    v = x.astype(np.int64)
    # 2147483648, 4000000000 and 10000000000 are long: the sums and the product are long ones
    _same(wide, np.stack([v + 2147483648, v * 4000000000, 10000000000 - v], axis=1), f"long literals ({schedule})")
    # 4294967290u is unsigned int, 0xFFFF0000 and 0x80000000 too (hexadecimal): v converts to unsigned
    uv = v % 2**32
    want_u = np.stack([(uv + 4294967290) % 2**32, uv & 0xFFFF0000, (uv | 0x80000000) // 2], axis=1)
    _same(
        w.cpu().view(torch.int32).numpy().view(np.uint32), want_u.astype(np.uint32), f"unsigned literals ({schedule})"
    )
    # int arithmetic wraps at 32 bits (CUDA's two's complement); __to<u8>(300) is 44, __to<s8>(200) -56
    want = np.stack([v - 2147483647 - 1, v + 2147483647 + 2, np.full(n, 7), v + 44 - 56], axis=1)
    _same(o, _wrap(want, 32, True).astype(np.int32), f"int folds ({schedule})")


COMPILED["wide_literals"] = [([N_AOT], "int32"), ([N_AOT, 3], "int64"), ([N_AOT, 3], "uint32"), ([N_AOT, 4], "int32")]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_wide_literals_compiled_for_sm90(schedule: str) -> None:
    lines = _compiled("wide_literals", schedule)  # was "Scalar 2147483648 is out of range for type int32"
    assert any(x.startswith(("add.s64", "sub.s64")) for x in lines), lines


# ------------------------------------------------------------------ conversions, fmaf


def _bf16_of_f32(x: np.ndarray) -> np.ndarray:
    """f32 -> bf16 codes, rounded to nearest even on the f32 bits (the carry into the exponent
    rounds the largest values to infinity, subnormals are f32 bits too); NaN stays NaN."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r)


def _bf16_of_int(k: np.ndarray) -> np.ndarray:
    """int -> bf16 codes, the integer rounded once to 8 significant bits, ties to even."""
    out = []
    for v in k.tolist():
        a = abs(v)
        shift = max(a.bit_length() - 8, 0)
        q, r = divmod(a, 1 << shift)
        half = 1 << shift >> 1
        if shift and (r > half or (r == half and q & 1)):
            q += 1
        out.append(float(q << shift) * (-1 if v < 0 else 1))
    return _bf16_of_f32(np.array(out, dtype=np.float32))


def _bf16_values(codes: np.ndarray) -> np.ndarray:
    return (codes.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_bf16_conversions_round_to_nearest_even(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    n = 150
    edges = [1.01171875, 1.00390625, 1.0 + 3 * 2.0**-9, -159.6, 1e-40, 9.2e-41, 3.3961e38, 3.4e38, -0.0, 1e-45]
    x = _f32(n, 8, edges + F32_EDGES)
    rng = np.random.default_rng(9)
    bi = rng.integers(0, 2**16, n).astype(np.uint16)
    bi[:6] = [0x0001, 0x007F, 0x8003, 0x0080, 0x7F7F, 0x8000]  # subnormals, the least normal, the largest
    k = rng.integers(-(2**31), 2**31, n).astype(np.int32)
    k[:6] = [16842753, -16842753, 257, 259, 2**31 - 1, -(2**31)]  # 2^24 + 2^16 + 1: once rounded, up
    bo = _out(n, 3, dtype=torch.bfloat16)
    back, ho = _out(n), _out(n, dtype=torch.float16)
    bi_t = _t(bi.view(np.int16)).view(torch.bfloat16)
    mod.bf16_conversions(_t(x), bi_t, _t(k), bo, back, ho)
    got = bo.cpu().view(torch.int16).numpy().view(np.uint16)
    _same(_bf16_values(got[:, 0]), _bf16_values(_bf16_of_f32(x)), f"f32 stored to bf16 ({schedule})")
    with np.errstate(all="ignore"):
        _same(_bf16_values(got[:, 1]), _bf16_values(_bf16_of_f32(x * np.float32(0.5))), f"__to<bf16> ({schedule})")
    _same(_bf16_values(got[:, 2]), _bf16_values(_bf16_of_int(k)), f"__to<bf16>(s32) ({schedule})")
    _same(back, _bf16_values(bi), f"bf16 read as f32 ({schedule})")
    _same(ho, x.astype(np.float16), f"f32 stored to f16 ({schedule})")


def _f32_of(q: Fraction) -> np.float32:
    """The f32 nearest to the rational ``q``, ties to even."""
    f = np.float32(float(q))
    best = None
    for c in (np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))):
        key = (abs(Fraction(float(c)) - q), int(np.array(c).view(np.uint32)) & 1)
        if best is None or key < best[0]:
            best = (key, c)
    assert best is not None
    return best[1]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_fmaf_rounds_once(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    n = 65
    rng = np.random.default_rng(10)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(n) * 2.0**-20)).astype(np.float32)
    hard = [
        (1 + 2**-12, 1 + 2**-12, -(1 + 2**-11)),  # 2^-24, 0 rounded twice in f32
        (1 + 2**-23, (1 - 2**-23) * 2**-24, 1 + 2**-23),  # rounded twice through f64: a tie, the wrong way
        (3.0, 1 / 3, -1.0),
        (1e-30, 1e-30, 0.0),  # the product is below f32's range, the sum too
    ]
    for i, (p, q, r) in enumerate(hard):
        a[i], b[i], c[i] = p, q, r
    o = _out(n)
    mod.fused(_t(a), _t(b), _t(c), o)
    want = np.array([_f32_of(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r))) for p, q, r in zip(a, b, c)])
    _same(o, want, f"__fmaf ({schedule})")
    assert o[0].item() == 2.0**-24


COMPILED["fused"] = [([N_AOT], "float32")] * 4
COMPILED["bf16_conversions"] = [([N_AOT], "float32"), ([N_AOT], "bfloat16"), ([N_AOT], "int32")]
COMPILED["bf16_conversions"] += [([N_AOT, 3], "bfloat16"), ([N_AOT], "float32"), ([N_AOT], "float16")]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_conversions_and_fma_compiled_for_sm90(schedule: str) -> None:
    # the interpreter is patched (runtime/interpreter_bf16.py, interpreter_fma.py); compiled code
    # keeps Triton's conversion and its one-rounding fma
    assert any(x.startswith("cvt.rn.bf16.f32") for x in _compiled("bf16_conversions", schedule))
    assert any(x.startswith("fma.rn.f32") for x in _compiled("fused", schedule))


# ------------------------------------------------------------------ the libdevice builtins

XS = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.0, -1.0, 0.5, -0.5, 0.49999997, -0.49999997]
XS += [2.5, -2.5, 88.5, -89.2, 100.0, 1e-30, -1e-30, 3.0, -3.0, 2.0, 1e-45]
YS = [0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, float("inf"), -float("inf"), float("nan"), 2.5]


def _c_math(v: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """C99's functions (Annex F: NumPy's float64 ones follow it), roundf spelled out."""
    with np.errstate(all="ignore"):
        t = np.trunc(v)
        roundf = t + np.where(np.abs(v - t) >= 0.5, np.copysign(1.0, v), 0.0)
        roundf = np.where(np.isfinite(v), np.copysign(roundf, v), v)
        return [
            np.sinh(v), np.cosh(v), np.tanh(v), np.log1p(v), np.expm1(v), roundf,
            np.arctan(v), np.arcsin(v), np.power(v, y), np.arctan2(v, y),
        ]  # fmt: skip


def _same_bits(g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Elements of ``g`` with the bits of ``w`` (any NaN for a NaN)."""
    return (_bits(g) == _bits(w)) | (np.isnan(g) & np.isnan(w))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_math_builtins_at_special_values(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = np.array([a for a in XS for _ in YS], dtype=np.float32)
    y = np.array([b for _ in XS for b in YS], dtype=np.float32)
    o = _out(len(x), 10)
    mod.special_math(_t(x), _t(y), o)
    got = o.cpu().numpy()
    names = ["sinh", "cosh", "tanh", "log1p", "expm1", "round", "atan", "asin", "pow", "atan2"]
    tiny = np.finfo(np.float32).tiny
    sub_x = (np.abs(x) < tiny) & (x != 0)
    # compiled, libdevice runs with denormals flushed (Triton links it with nvvm-reflect-ftz): a
    # subnormal argument may be read as a zero of its sign
    flushed = np.where(sub_x, np.copysign(0.0, x), x).astype(np.float64)
    c_flushed = _c_math(flushed, y.astype(np.float64))
    for j, want64 in enumerate(_c_math(x.astype(np.float64), y.astype(np.float64))):
        with np.errstate(all="ignore"):
            want = want64.astype(np.float32)
            want_ftz = c_flushed[j].astype(np.float32)
        g = got[:, j]
        exact = ~np.isfinite(want) | (want == 0) | (names[j] == "round")

        ok = _same_bits(g, want) | ((DEVICE == "cuda") & sub_x & _same_bits(g, want_ftz))
        where = [f"({x[i]}, {y[i]}): {g[i]!r}, C {want[i]!r}" for i in np.flatnonzero(exact & ~ok)]
        assert not where, f"__{names[j]} ({schedule}): not C's value at {where[:6]}"
        close = ~exact
        if DEVICE == "cuda":
            # compiled, libdevice runs with denormals flushed (Triton links it with nvvm-reflect-ftz):
            # a subnormal argument or value may come out as a zero of its sign
            subnormal = sub_x | ((np.abs(want) < tiny) & (want != 0))
            close &= ~(subnormal & ((g == 0) | _same_bits(g, want_ftz)))
        np.testing.assert_allclose(g[close], want[close], rtol=2e-5, err_msg=f"__{names[j]} ({schedule})")


# ------------------------------------------------------------------ division


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_division_is_correctly_rounded(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    n = 130
    a, b = _f32(n, 11), _f32(n, 12, [1.0, -0.0, 3.0, float("inf"), 1e-45, 7.0, 0.0, 2.0**-126])
    with np.errstate(over="ignore"):
        ha = _f32(n, 13, [1.0, 65504.0, 6e-8]).astype(np.float16)
        hb = _f32(n, 14, [3.0, 0.5, 3.0]).astype(np.float16)
    q, hq = _out(n, 2), _out(n, dtype=torch.float16)
    mod.quotients(_t(a), _t(b), _t(ha), _t(hb), q, hq)
    with np.errstate(all="ignore"):
        _same(q[:, 0], a / b, f"a / b ({schedule})")  # NumPy's f32 division is IEEE's
        _same(q[:, 1], np.float32(1.0) / b, f"__frcp_rn ({schedule})")
        # the exact quotient rounded once to f16 (f64's 53 bits are more than 2 * 11 + 2)
        _same(hq, (ha.astype(np.float64) / hb.astype(np.float64)).astype(np.float16), f"f16 / ({schedule})")


COMPILED["quotients"] = [([N_AOT], "float32")] * 2 + [([N_AOT], "float16")] * 2
COMPILED["quotients"] += [([N_AOT, 2], "float32"), ([N_AOT], "float16")]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_division_compiled_for_sm90(schedule: str) -> None:
    quot = _compiled("quotients", schedule)
    assert any(x.startswith("div.rn.f32") for x in quot), quot
    # no approximate division anywhere (Triton's '/' of f32 is div.full.f32)
    assert not any(x.startswith(("div.full", "div.approx")) for fn in COMPILED for x in _compiled(fn, schedule))
