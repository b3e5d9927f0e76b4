"""f64 values made only of constants stay doubles in kernels (LANGUAGE.md 3.3, 4.4; tir/pyexpr.py).

Triton makes a Python float an f32 wherever no f64 tensor beside it gives it its type: an f64
constant expression was emitted as one (``tl.store(p, 8.0 / 3.0)``), so a store of
``__to<f64>(8) / 3.0`` wrote 2.6666667461395264, a choice between two constants, ``__max`` of two,
an atomic's operand, a scalar declared from constants and a mutable one's initial value were f32s,
``__to<s32>`` of 16777217.0 went through f32, and a division by a zero constant raised Python's
ZeroDivisionError while interpreting.  Such values are now f64 scalars (``tl.full([], v,
tl.float64)``); beside an f64 tensor a constant stays a Python float (Triton gives it the tensor's
type), and f32 code does not change: a double quotient converted to f32 is rounded once, and a
literal beside an f32 operand takes its type (docs/dialect.md).

An ``f64`` parameter is a double in the interpreter too (runtime/interpreter_args.py); it was the
f32 nearest it wherever nothing f64 gave it its type.

Every result is compared bit for bit with float64 torch (or Python's doubles); the kernels compile
for sm_90a (a mutable f64 started from a constant was an f32 loop variable there, and did not)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import sm90
import torch
from kernel_util import DEVICE

from croq2triton.api import load_source, translate_full

SRC = """
__co__ void consts(global f64 [N] x, global f64 [N] quot, global f64 [N] pick, global f64 [N] top,
                   global f64 [N] bottom, global f64 [N] named, global f64 [N] endless, global f64 [N] rest,
                   global s32 [N] whole, global f32 [N] narrow, global f64 [N] sums) {
  f64 seventh = __to<f64>(1) / 7.0;
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    quot.at(p # t) = __to<f64>(10) / 3.0;
    pick.at(p # t) = (x.at(p # t) > 0.0) ? 0.1 : __to<f64>(2) / 7.0;
    top.at(p # t) = __max(__to<f64>(1) / 3.0, 0.25);
    bottom.at(p # t) = __min(0.7, __to<f64>(5) / 7.0);
    f64 v = __to<f64>(2) / 3.0 + seventh;
    named.at(p # t) = v;
    endless.at(p # t) = __to<f64>(-1) / 0.0;
    rest.at(p # t) = 8.1 % 0.3;
    whole.at(p # t) = __to<s32>(__to<f64>(16777217) / 1.0);
    narrow.at(p # t) = __to<f32>(__to<f64>(1) / 3.0);
    __atomic_add(sums.at(p # t), __to<f64>(1) / 9.0);
  }
}

__co__ void carried(global f64 [N, K] x, global f64 [N] total, global f64 [N] kept) {
  parallel p by N : block {
    mutable f64 a = 0.500000000931322574615478515625;
    foreach k in [K] {
      a = a + x.at(p, k);
    }
    total.at(p) = a;
    mutable f64 b = __to<f64>(1) / 3.0;
    if (x.at(p, 0) > 1000.0) {
      b = x.at(p, 0);
    }
    kept.at(p) = b;
  }
}

__co__ void tenth(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread
    y.at(p # t) = x.at(p # t) * 0.1 + __to<f32>(8.0 / 3.0);
}

__co__ void param(global f64 [N] y, global f64 [N] z, f64 q) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    y.at(p # t) = q;
    z.at(p # t) = q % 0.03;
  }
}
"""

N = 40
_MODS: dict[str, object] = {}


def _mod(schedule: str):  # noqa: ANN202
    if schedule not in _MODS:
        t = translate_full(SRC, filename="f64_constants.co", schedule=schedule)
        _MODS[schedule] = load_source(t.source, f"f64_constants_{schedule}", origin="f64_constants.co")
    return _MODS[schedule]


def _full(value: float, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.full((N,), value, dtype=dtype)


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.cpu().view(torch.int64 if t.element_size() == 8 else torch.int32)


def _same(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype
    bad = _bits(got) != _bits(want)
    assert not bad.any(), f"{name}: got {got.cpu()[bad][:3].tolist()}, want {want[bad][:3].tolist()}"


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_constant_expressions_of_f64_are_doubles(schedule: str) -> None:
    x = torch.randn(N, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    names = ["quot", "pick", "top", "bottom", "named", "endless", "rest"]
    outs = {k: torch.full((N,), -9.0, dtype=torch.float64, device=DEVICE) for k in names}
    whole = torch.zeros(N, dtype=torch.int32, device=DEVICE)
    narrow = torch.zeros(N, device=DEVICE)
    sums = torch.zeros(N, dtype=torch.float64, device=DEVICE)
    _mod(schedule).consts(x.to(DEVICE), *outs.values(), whole, narrow, sums)
    want = {
        "quot": _full(10 / 3),
        "pick": torch.where(x > 0, _full(0.1), _full(2 / 7)),
        "top": _full(1 / 3),
        "bottom": _full(0.7),
        "named": _full(2 / 3 + 1 / 7),
        "endless": _full(-math.inf),
        "rest": _full(math.fmod(8.1, 0.3)),
    }
    for k in names:
        _same(k, outs[k], want[k])
    _same("whole", whole, _full(16777217, torch.int32))
    _same("narrow", narrow, _full(1 / 3, torch.float32))  # the double quotient rounded once to f32
    _same("sums", sums, _full(1 / 9))


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_mutable_f64_starts_as_a_double(schedule: str) -> None:
    # integers: every order of the sum is exact, from 0.5 + 2^-30 (an f32 would start at 0.5)
    x = torch.randint(-50, 50, (N, 5), generator=torch.Generator().manual_seed(4)).double()
    total = torch.full((N,), -9.0, dtype=torch.float64, device=DEVICE)
    kept = torch.full((N,), -9.0, dtype=torch.float64, device=DEVICE)
    _mod(schedule).carried(x.to(DEVICE), total, kept)
    want = _full(0.5 + 2**-30)
    for k in range(5):
        want = want + x[:, k]
    _same("total", total, want)
    _same("kept", kept, _full(1 / 3))


def test_f32_code_computes_in_f32() -> None:
    """A literal beside an f32 takes its type (docs/dialect.md), a quotient of double constants
    converted to f32 is rounded once: nothing of the f32 kernel is an f64."""
    source = translate_full(SRC, filename="f64_constants.co", schedule="source").source
    kernel = source[source.index("def tenth_k0") : source.index("def tenth(")]
    assert "float64" not in kernel
    x = torch.randn(N, generator=torch.Generator().manual_seed(5))
    y = torch.full((N,), -9.0, device=DEVICE)
    _mod("source").tenth(x.to(DEVICE), y)
    _same("y", y, x * torch.tensor(0.1, dtype=torch.float32) + torch.tensor(8 / 3, dtype=torch.float32))


def test_f64_parameter_is_a_double() -> None:
    """An f64 parameter stored as it is, and the dividend of a '%': a double, interpreted or compiled."""
    y = torch.full((N,), -9.0, dtype=torch.float64, device=DEVICE)
    z = torch.full((N,), -9.0, dtype=torch.float64, device=DEVICE)
    q = 0.1 + 2**-40
    _mod("source").param(y, z, q)
    _same("y", y, _full(q))
    _same("z", z, _full(math.fmod(q, 0.03)))


def test_f64_kernels_compile_for_sm90a(tmp_path: Path) -> None:
    path = tmp_path / "f64_constants.co"
    path.write_text(SRC)
    for schedule in ("source", "auto"):
        r = sm90.croq("compile", str(path), "--size", "N=40,K=5", "--schedule", schedule)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
