"""``__device__`` helpers whose bodies are statements (frontend/device_body.py): the kernels of
tests/programs/device_statements.co in both schedules on ragged sizes, outputs poisoned with NaN
(integers with -77), against float64 / integer references; and the constructs that stay refused,
each named at its line."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from kernel_util import DEVICE

import croq2triton
from croq2triton.api import translate_full

PROGRAMS = Path(__file__).parent / "programs"
PROGRAM = "device_statements.co"
SCHEDULES = ["source", "auto"]
_MODULES: dict[str, object] = {}


def _module(schedule: str) -> object:
    if schedule not in _MODULES:
        _MODULES[schedule] = croq2triton.load(PROGRAMS / PROGRAM, schedule=schedule)
    return _MODULES[schedule]


def _full(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, float("nan") if dtype.is_floating_point else -77, device=DEVICE, dtype=dtype)


def _close(got: torch.Tensor, want: np.ndarray, tol: float = 1e-5) -> None:
    g = got.double().cpu().numpy()
    assert not np.isnan(g).any(), "an output element was never written"
    np.testing.assert_allclose(g, want, rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- references (float64)
def _clamp(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.where(x < lo, lo, np.where(x > hi, hi, x))


def _poly(x: np.ndarray) -> np.ndarray:
    return sum((k + 1) * x**k for k in range(6))


def _swish(x: np.ndarray, beta: float) -> np.ndarray:
    return x / (1.0 + np.exp(-beta * x))


def _soft(x: np.ndarray, bound: float) -> np.ndarray:
    y = _clamp(x, -bound, bound)
    t = np.where(x > 0, y + 0.25 * (x - bound), y - 0.25 * (-bound - x))
    return np.where(y == x, _swish(x, 1.0), t)


def _first_above(x: np.ndarray) -> np.ndarray:
    out = np.full(x.shape, 8, dtype=np.int64)
    for i in range(7, -1, -1):
        out = np.where(x < i, i, out)
    return out


def _hash(h: np.ndarray) -> np.ndarray:
    h = h.astype(np.uint64)
    m = np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & m
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & m
    h ^= h >> np.uint64(16)
    return h


def _low_bits(v: np.ndarray) -> np.ndarray:
    return sum(((v >> i) & 1) for i in range(12))  # (>> of a negative: arithmetic, as in C)


# ----------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_values_of_helpers_with_statements_per_element(schedule: str) -> None:
    m = _module(schedule)
    n = 301
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(n, generator=g) * 1.5).to(DEVICE)
    x[:4] = torch.tensor([-0.5, 0.75, 1.0, -1.0])  # the bounds themselves
    clamp, poly, swish, soft, tri = (_full(n) for _ in range(5))
    first = _full(n, dtype=torch.int32)
    m.per_element(x, clamp, poly, swish, soft, first, tri)  # type: ignore[attr-defined]
    x64 = x.double().cpu().numpy()
    _close(clamp, _clamp(x64, -0.5, 0.75))
    _close(poly, _poly(x64), tol=1e-4)
    _close(swish, _swish(x64, 1.5))
    _close(soft, _soft(x64, 1.0))
    x32 = x.cpu().numpy()  # FIRST_ABOVE(v * 3.0f): the comparisons of the f32 product
    assert first.cpu().numpy().tolist() == _first_above((x32 * np.float32(3.0)).astype(np.float64)).tolist()
    _close(tri, x64 * 10.0)  # 1 + 2 + 3 + 4 times x (the inner loop only adds 0 * s)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_integer_helpers_and_a_void_helper_with_locals(schedule: str) -> None:
    m = _module(schedule)
    n = 157
    g = torch.Generator().manual_seed(2)
    a = torch.randint(-5000, 5000, (n,), generator=g, dtype=torch.int32)
    a[:3] = torch.tensor([-(2**31), 2**31 - 1, -1], dtype=torch.int32)
    b = torch.randint(1, 9, (n,), generator=g, dtype=torch.int32) * torch.where(
        torch.rand(n, generator=g) < 0.5, -1, 1
    ).to(torch.int32)
    a, b = a.to(DEVICE), b.to(DEVICE)
    hashed, bits, fdiv = _full(n, dtype=torch.uint32), _full(n, dtype=torch.int32), _full(n, dtype=torch.int32)
    total = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    m.integers(a, b, hashed, bits, fdiv, total)  # type: ignore[attr-defined]
    a64, b64 = a.cpu().numpy().astype(np.int64), b.cpu().numpy().astype(np.int64)
    assert hashed.cpu().numpy().astype(np.uint64).tolist() == _hash(a64 & 0xFFFFFFFF).tolist()
    assert bits.cpu().numpy().tolist() == _low_bits(a64).tolist()
    assert fdiv.cpu().numpy().tolist() == (a64 // b64).tolist()  # floor division from C's truncating / and %
    want = int(((a64 * 2 + 1) & 0xFFFFFFFF).sum()) & 0xFFFFFFFF  # int arithmetic wraps
    assert int(total[0]) & 0xFFFFFFFF == want


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_helpers_on_a_block_tile(schedule: str) -> None:
    m = _module(schedule)
    rows, cols = 19, 37
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(rows, cols, generator=g) * 1.5).to(DEVICE)
    y, z = _full(rows, cols), _full(rows, cols, dtype=torch.int32)
    m.tiles(x, y, z)  # type: ignore[attr-defined]
    x64 = x.double().cpu().numpy()
    _close(y, _soft(x64, 0.5) + _poly(x64), tol=1e-4)
    x32 = x.cpu().numpy()
    assert z.cpu().numpy().tolist() == _first_above((x32 * np.float32(2.0)).astype(np.float64)).tolist()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_shuffles_in_a_loop_template_types_and_template_loop_bounds(schedule: str) -> None:
    m = _module(schedule)
    rows = 7
    g = torch.Generator().manual_seed(4)
    x = torch.randn(rows, 32, generator=g).to(DEVICE)
    sums, twice, twice_f = _full(rows), _full(rows, 32, dtype=torch.int32), _full(rows, 32)
    p3, p4 = _full(rows, 32), _full(rows, 32)
    m.warps(x, sums, twice, twice_f, p3, p4)  # type: ignore[attr-defined]
    x64 = x.double().cpu().numpy()
    _close(sums, x64.sum(1), tol=1e-5)
    assert twice.cpu().numpy().tolist() == [[2 * t + 3 for t in range(32)]] * rows
    _close(twice_f, 2 * x64 + 0.5)
    _close(p3, x64**3)
    _close(p4, x64**4)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_template_values_reach_helper_calls_and_shuffle_segments(schedule: str) -> None:
    m = _module(schedule)
    rows = 5
    g = torch.Generator().manual_seed(5)
    x = torch.randn(rows, 32, generator=g).to(DEVICE)
    sq, seg, pick = _full(rows, 32), _full(rows, 32), _full(rows, 32)
    m.segments(x, sq, seg, pick)  # type: ignore[attr-defined]
    x64 = x.double().cpu().numpy()
    want_sq = x64**2 + (x64 + 1) ** 2 + (x64 + 2) ** 2
    _close(sq, want_sq, tol=1e-4)
    _close(seg, np.repeat(x64.reshape(rows, 4, 8).sum(2), 8, axis=1))
    neighbour = x64.reshape(rows, 16, 2)[:, :, ::-1].reshape(rows, 32)  # lane l ^ 1
    sq64 = sq.double().cpu().numpy()  # (what the kernel stored: read back in the same launch)
    _close(pick, np.where(x64 > 0, sq64 + 1.0, sq64 * 2.0 + neighbour), tol=1e-4)


def test_a_value_read_twice_is_computed_once() -> None:
    source = croq2triton.translate((PROGRAMS / PROGRAM).read_text(), filename=PROGRAM)
    low_bits = source.split("def _device_LOW_BITS(v):")[1].split("@triton.jit")[0]
    # each iteration's count is a line of its own, read by the next: the body grows linearly
    assert low_bits.count("tl.where(") == 12 and len(re.findall(r"^    \w+ = ", low_bits, re.M)) == 33
    assert "return tl.where(w_11 & 1 != 0, count_22, count_21)" in low_bits  # the last value, not a name of it
    swish = source.split("def _device_SWISH(x, beta):")[1].split("@triton.jit")[0]
    assert "z_1 = beta * x" in swish and "return x * s_1" in swish
    # a helper expanded at its call (shuffles): each named value a line of the kernel, shuffled once
    warps = source.split("def warps_k0(")[1].split("@triton.jit")[0].split("_FN[")[0]
    assert warps.count("tl.gather(") == 5 and warps.count("tl.load(") <= 4
    # a template's values: one helper for each
    assert "def _device_POWK_3(x):" in source and "def _device_POWK_4(x):" in source
    # helpers that call helpers stay calls of their @triton.jit functions
    assert "_device_CLAMP_RET(x, " in source.split("def _device_SOFT_CLAMP")[1]


# ----------------------------------------------------------------------------- refusals
REFUSED = """
__device__ float WHILE_LOOP(float x) {
  float s = x;
  while (s > 1.0f) s *= 0.5f;
  return s;
}
__device__ float RUNTIME_BOUND(float x, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += x;
  return s;
}
__device__ float ARRAY_LOCAL(float x) {
  float v[4];
  return x;
}
__device__ float TOO_MANY(float x) {
  float s = 0.0f;
  for (int i = 0; i < 100; ++i) s += x;
  return s;
}
__device__ float ADDRESS(float x) {
  float s = x;
  float* p = &s;
  return s;
}
__device__ void COND_ATOMIC(int* c, int v) {
  if (v > 0) atomicAdd(c, v);
}
__device__ void STORE(float* p, float v) {
  float w = v * 2.0f;
  *p = w;
}
__device__ float NO_RETURN(float x) {
  if (x > 0.0f) return x;
}
__device__ float ADDRESS_OF(float x) {
  float s = x;
  return OTHER(&s);
}
__device__ float NESTED(float x) {
  float s = x;
  for (int i = 0; i < 20; ++i)
    for (int j = 0; j < 20; ++j) s += x;
  return s;
}
__device__ float VECTOR(float x) {
  float4 v = make_float4(x, x, x, x);
  return x;
}

__co__ void uses_WHILE_LOOP(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call WHILE_LOOP(a.at(p)); }
}
__co__ void uses_RUNTIME_BOUND(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call RUNTIME_BOUND(a.at(p), 3); }
}
__co__ void uses_ARRAY_LOCAL(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call ARRAY_LOCAL(a.at(p)); }
}
__co__ void uses_TOO_MANY(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call TOO_MANY(a.at(p)); }
}
__co__ void uses_ADDRESS(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call ADDRESS(a.at(p)); }
}
__co__ void uses_COND_ATOMIC(global s32 [N] a) {
  parallel p by N : block { call COND_ATOMIC(&a.at(0), a.at(p)); }
}
__co__ void uses_STORE(global f32 [N] a) {
  parallel p by N : block { call STORE(&a.at(p), 1.0f); }
}
__co__ void uses_NO_RETURN(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call NO_RETURN(a.at(p)); }
}
__co__ void uses_ADDRESS_OF(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call ADDRESS_OF(a.at(p)); }
}
__co__ void uses_NESTED(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call NESTED(a.at(p)); }
}
__co__ void uses_VECTOR(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call VECTOR(a.at(p)); }
}
"""


def test_constructs_that_stay_refused_are_named_at_their_line() -> None:
    out = translate_full(REFUSED, filename="refused.co")
    message = "\n".join(d.format() for d in out.diagnostics)
    lines = message.splitlines()

    def refusal(fn: str) -> str:
        found = [x for x in lines if f"'{fn}' is not translated" in x]
        assert len(found) == 1, message
        return found[0]

    # loops of a run-time trip count or too long to unroll: loops of their own now (test_device_statements2.py)
    for translated in ("uses_WHILE_LOOP", "uses_RUNTIME_BOUND", "uses_TOO_MANY", "uses_NESTED"):
        assert translated not in message
    assert "refused.co:58:" in refusal("uses_ARRAY_LOCAL")  # at the call
    assert "an array 'v' at line 13" in refusal("uses_ARRAY_LOCAL")
    assert "a pointer local at line 23" in refusal("uses_ADDRESS")
    assert "uses_COND_ATOMIC" not in message  # a masked atomic now (tests/test_device_statements2.py)
    assert "a store through the pointer 'p' at line 31" in refusal("uses_STORE")
    assert "a path to the end of its body without a 'return' at line 35" in refusal("uses_NO_RETURN")
    assert "the address of the local 's' at line 38" in refusal("uses_ADDRESS_OF")
    assert "a local of type 'float4' at line 47" in refusal("uses_VECTOR")


# ----------------------------------------------------------------------------- sm_90a
@pytest.mark.parametrize(
    ("func", "schedule", "shapes"),
    [
        (
            "integers",
            "source",
            [[[1000], "int32"]] * 2 + [[[1000], "uint32"]] + [[[1000], "int32"]] * 2 + [[[1], "int32"]],
        ),
        ("per_element", "auto", [[[1000], "float32"]] * 5 + [[[1000], "int32"], [[1000], "float32"]]),
    ],
)
def test_helpers_with_statements_compile_for_sm90a(func: str, schedule: str, shapes: list[object]) -> None:
    import json

    import sm90

    script = Path(__file__).parent / "aot_check.py"
    r = sm90.script(script, str(PROGRAMS / PROGRAM), func, json.dumps(shapes), "{}", "{}", schedule)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines and all(rec["target"] for rec in lines), r.stdout + r.stderr[-2000:]
    assert not [rec["error"] for rec in lines if "error" in rec], lines
