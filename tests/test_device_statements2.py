"""``__device__`` helpers, second part (frontend/device_body.py, frontend/helpers.py): the kernels of
tests/programs/device_statements2.co in both schedules on ragged sizes, outputs poisoned (NaN, -77),
against float64 / exact integer references -- C's conversions on assignment to ``auto`` locals and
locals of a template's type, helpers that call helpers (template ones, statement bodies, four levels),
void and value helpers with several atomics, atomics under conditions and kept old values (every lane
runs its own, the same address and value in all lanes included); and what stays refused, named at
its line (recursion, a loop without a way to end)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from kernel_util import DEVICE

import croq2triton
from croq2triton.api import translate_full

PROGRAMS = Path(__file__).parent / "programs"
PROGRAM = "device_statements2.co"
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


def _trunc_i32(x: np.ndarray) -> np.ndarray:
    """float -> int as C converts (toward zero)."""
    return np.trunc(x).astype(np.int64)


def _wrap(v: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    v = v.astype(np.int64) & ((1 << bits) - 1)
    return np.where(v >= 1 << (bits - 1), v - (1 << bits), v) if signed else v


# ----------------------------------------------------------------------------- references
def _scale_i(a: np.ndarray) -> np.ndarray:  # SCALE<int>: each assignment truncates (f32 products)
    r = _trunc_i32((a.astype(np.float32) * np.float32(2.5)).astype(np.float64))
    return _trunc_i32((r.astype(np.float32) + np.float32(1.5)).astype(np.float64))


def _level1(x: np.ndarray) -> np.ndarray:
    return np.abs(x)


def _level2(x: np.ndarray) -> np.ndarray:
    return (_level1(x) + 1.0) ** 2


def _level4(x: np.ndarray) -> np.ndarray:
    level3 = _level2(x) + _level2(x - 1.0) + _level2(x - 2.0)
    scale_twice = (x * 2.5 + 1.5) * 2.5 + 1.5
    return np.where(x > 2.0, _level1(x), level3 - scale_twice)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_conversions_on_assignment_and_helpers_of_helpers(schedule: str) -> None:
    m = _module(schedule)
    n = 203
    g = torch.Generator().manual_seed(11)
    x = (torch.randn(n, generator=g) * 3.0).to(DEVICE)
    x[:4] = torch.tensor([-2.6, 2.6, 0.3, -0.3])  # truncation toward zero, both signs
    v = torch.randint(-100000, 100000, (n,), generator=g, dtype=torch.int32)
    v[:3] = torch.tensor([127, 128, -129], dtype=torch.int32)  # narrowing wraps
    v = v.to(DEVICE)
    to_int, wrap8, scale_i, twice_i = (_full(n, dtype=torch.int32) for _ in range(4))
    scale_f, mixed, deep = _full(n), _full(n), _full(n)
    m.conversions(x, v, to_int, wrap8, scale_i, scale_f, mixed, twice_i, deep)  # type: ignore[attr-defined]
    x32, x64 = x.cpu().numpy(), x.double().cpu().numpy()
    v64 = v.cpu().numpy().astype(np.int64)
    # TO_INT: auto k = 0 is an int; k = x * 2.5f truncates; m += 0.75f truncates the sum
    k = _trunc_i32((x32 * np.float32(2.5)).astype(np.float64))
    assert to_int.cpu().numpy().tolist() == _trunc_i32(k.astype(np.float32) + np.float32(0.75)).tolist()
    # WRAP8: signed char / unsigned char of v, an auto of the signed char stays one (s * 3 wraps)
    c, u = _wrap(v64, 8, True), _wrap(v64, 8, False)
    assert wrap8.cpu().numpy().tolist() == (_wrap(c * 3, 8, True) + u).tolist()
    assert scale_i.cpu().numpy().tolist() == _scale_i(v64).tolist()
    _close(scale_f, x64 * 2.5 + 1.5)
    half = _trunc_i32(_trunc_i32(x32).astype(np.float32) * np.float32(0.5))  # HALF_OF<int>((int)x)
    _close(mixed, 2 * (x64 * 2.5 + 1.5) + half + x64**2 + x64**3, tol=1e-4)
    assert twice_i.cpu().numpy().tolist() == _scale_i(_scale_i(v64)).tolist()
    _close(deep, _level4(x64), tol=1e-4)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_several_atomics_conditions_and_kept_old_values(schedule: str) -> None:
    m = _module(schedule)
    n = 77  # three blocks of 32 threads, the last one ragged
    g = torch.Generator().manual_seed(12)
    a = torch.randint(-20, 40, (n,), generator=g, dtype=torch.int32).to(DEVICE)
    x = torch.randn(n, generator=g).to(DEVICE)
    counts = torch.zeros(8, dtype=torch.int32, device=DEVICE)
    counts[1] = -1000
    sums = torch.zeros(2, dtype=torch.float32, device=DEVICE)
    tickets, claims = _full(n, dtype=torch.int32), _full(n, dtype=torch.int32)
    m.atomics(a, x, counts, tickets, sums, claims)  # type: ignore[attr-defined]
    a64, x64 = a.cpu().numpy().astype(np.int64), x.double().cpu().numpy()
    got = counts.cpu().numpy().tolist()
    blocks = -(-n // 32)
    assert got[6] == 32 * blocks and got[7] == 5  # every lane of every block: its own atomic
    assert got[0] == n  # TALLY's two atomics
    assert got[1] == max(int(a64.max()), int((2 * a64).max()))  # TALLY's and TALLY_TWICE's atomicMax
    assert sorted(tickets.cpu().numpy().tolist()) == list(range(n))  # each lane its own old value
    assert got[2] == n
    np.testing.assert_allclose(sums.double().cpu().numpy(), [x64[x64 > 0].sum(), x64[x64 <= 0].sum()], rtol=1e-5)
    assert got[3] == int((a64 >= 10).sum())  # after a return under a condition
    positive = a64 > 0
    assert got[4] == int(a64[positive].sum())
    cl = claims.cpu().numpy().astype(np.int64)
    assert (cl[~positive] == -1).all()
    # each claim is the running total after its own add: the intervals [claim - v, claim) tile [0, total)
    starts = cl[positive] - a64[positive]
    order = np.argsort(starts)
    assert starts[order][0] == 0 and (starts[order][1:] == cl[positive][order][:-1]).all()
    assert got[5] == 2 * n  # TALLY_TWICE: two calls of TALLY


def _collatz(v: int) -> int:
    steps = 0
    while v > 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


def _shrink(x: float, n: int) -> float:
    s = abs(x) + 1.0
    while s > 1.5:
        s *= 0.75
    return s + 0.375 * n


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("reps", [0, 5])
def test_loops_of_a_run_time_trip_count(schedule: str, reps: int) -> None:
    m = _module(schedule)
    n = 90
    g = torch.Generator().manual_seed(13 + reps)
    x = (torch.randn(n, generator=g) * 4.0).to(DEVICE)
    v = torch.randint(-3, 60, (n,), generator=g, dtype=torch.int32)
    v[:3] = torch.tensor([27, 1, 0], dtype=torch.int32)  # a long orbit, none, a bound below the start
    v = v.to(DEVICE)
    halved, odd, long_sum, shrunk = _full(n), _full(n), _full(n), _full(n)
    steps = _full(n, dtype=torch.int32)
    m.loops(x, v, halved, steps, odd, long_sum, shrunk, reps)  # type: ignore[attr-defined]
    x64, v64 = x.double().cpu().numpy(), v.cpu().numpy().astype(np.int64)
    _close(halved, x64 * 0.5**reps)  # the same trip count in every thread (a kernel parameter)
    assert steps.cpu().numpy().tolist() == [_collatz(int(k)) for k in v64]  # each thread its own
    odd_sums = np.array([sum(range(1, int(k) + 1, 2)) for k in v64], dtype=np.float64)
    _close(odd, x64 * odd_sums, tol=1e-4)
    _close(long_sum, x64, tol=1e-4)  # 100 times x / 100: a loop, not unrolled
    _close(shrunk, np.array([_shrink(float(a), reps) for a in x64]), tol=1e-5)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_template_loop_converts_its_locals_each_trip(schedule: str) -> None:
    m = _module(schedule)
    n, reps = 45, 4
    g = torch.Generator().manual_seed(17)
    a = torch.randn(n, generator=g).to(DEVICE)
    b = torch.randint(-1000, 1000, (n,), generator=g, dtype=torch.int32).to(DEVICE)
    fa, fb = _full(n), _full(n, dtype=torch.int32)
    m.template_loops(a, b, fa, fb, reps)  # type: ignore[attr-defined]
    a64 = a.double().cpu().numpy()
    _close(fa, a64 * (reps + 1) + a64 * 0.5**reps)
    c = b.cpu().numpy().astype(np.int64)
    for _ in range(reps):  # int c *= 0.5f: truncated each trip
        c = _trunc_i32((c.astype(np.float32) * np.float32(0.5)).astype(np.float64))
    assert fb.cpu().numpy().tolist() == (b.cpu().numpy().astype(np.int64) * (reps + 1) + c).tolist()
    kernel = croq2triton.translate((PROGRAMS / PROGRAM).read_text(), filename=PROGRAM)
    assert kernel.split("def template_loops_k0(")[1].split("_FN[")[0].count("while go") == 2  # one loop a call


def test_a_run_time_loop_is_a_while_of_the_kernel() -> None:
    source = croq2triton.translate((PROGRAMS / PROGRAM).read_text(), filename=PROGRAM)
    kernel = source.split("def loops_k0(")[1].split("_FN[")[0]
    assert kernel.count("while go") == 6
    # a shared trip count: the program's while on a scalar; a thread's own: a flag per thread
    halvings = kernel.split("while go:")[1].split("tl.store(")[0]
    assert "tl.where(" not in halvings and "go = i_loop1_3 < reps" in halvings
    assert kernel.count("active = active & (") == 1 and "go_2 = tl.max(active.to(tl.int32), axis=0) != 0" in kernel


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_atomics_in_a_conditional_and_a_short_circuit(schedule: str) -> None:
    m = _module(schedule)
    n = 70
    g = torch.Generator().manual_seed(19)
    a = torch.randint(-6, 9, (n,), generator=g, dtype=torch.int32).to(DEVICE)
    counts = torch.zeros(2, dtype=torch.int32, device=DEVICE)
    guarded, added = _full(n, dtype=torch.int32), _full(n, dtype=torch.int32)
    m.short_circuit(a, counts, guarded, added)  # type: ignore[attr-defined]
    a64 = a.cpu().numpy().astype(np.int64)
    got = guarded.cpu().numpy().astype(np.int64)
    assert (got[a64 <= 3] == -1).all() and sorted(got[a64 > 3].tolist()) == list(range(int((a64 > 3).sum())))
    assert int(counts[0]) == int((a64 > 3).sum())
    assert int(counts[1]) == int(a64[a64 > 0].sum())  # the add only where v > 0
    assert added.cpu().numpy().tolist() == (a64 > 0).astype(np.int64).tolist()


def test_the_old_value_and_the_effects_run_in_order() -> None:
    source = croq2triton.translate((PROGRAMS / PROGRAM).read_text(), filename=PROGRAM)
    kernel = source.split("def atomics_k0(")[1].split("_FN[")[0]
    # TALLY (twice, and twice more in TALLY_TWICE): an add then a max; TICKET, SPLIT's two, AT_LEAST, CLAIM
    assert kernel.count("tl.atomic_add(") == 9 and kernel.count("tl.atomic_max(") == 4
    assert "mask=" in kernel.split("tl.atomic_max(")[2]
    # the conversions of template-typed locals: one helper per type, int assignments truncate
    scale_i = source.split("def _device_SCALE_s32(a):")[1].split("@triton.jit")[0]
    assert scale_i.count("tl.cast(") >= 4 and "tl.int32)" in scale_i
    assert "def _device_SCALE_f32(a):" in source and "def _device_HALF_OF_s32(a):" in source
    assert "_device_POWK_2(x) + _device_POWK_3(x)" in source


# ----------------------------------------------------------------------------- refusals
REFUSED = """
__device__ float REC(float x) {
  if (x > 1.0f) return REC(x * 0.5f);
  return x;
}
__device__ float PING(float x);
__device__ float PONG(float x) { return PING(x) + 1.0f; }
__device__ float PING(float x) { return PONG(x) * 0.5f; }
__device__ float HALVINGS(float x, int n) {
  int k = 0;
  while (k < n) { x *= 0.5f; k++; }
  return x;
}
template <typename T>
__device__ T NO_PARAM(float x) {
  T r = x;
  return r;
}
__device__ float LATE(float x) {
  auto s;
  return x;
}
__device__ float NESTED_RUNTIME(float x, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j) x += 1.0f;
  return x;
}
__device__ float RETURN_IN_LOOP(float x, int n) {
  for (int i = 0; i < n; ++i)
    if (x > 4.0f) return x;
  return 0.0f;
}
__device__ void ATOMIC_IN_LOOP(int* c, int n) {
  for (int i = 0; i < n; ++i) atomicAdd(c, 1);
}
__device__ float FOREVER(float x) {
  for (;;) x += 1.0f;
  return x;
}
__device__ float DO_LOOP(float x) {
  do { x *= 0.5f; } while (x > 1.0f);
  return x;
}
__co__ void uses_REC(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call REC(a.at(p)); }
}
__co__ void uses_PING(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call PING(a.at(p)); }
}
__co__ void uses_HALVINGS(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call HALVINGS(a.at(p), N); }
}
__co__ void uses_NO_PARAM(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call NO_PARAM<float>(a.at(p)); }
}
__co__ void uses_LATE(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call LATE(a.at(p)); }
}
__co__ void uses_NESTED_RUNTIME(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call NESTED_RUNTIME(a.at(p), N); }
}
__co__ void uses_RETURN_IN_LOOP(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call RETURN_IN_LOOP(a.at(p), N); }
}
__co__ void uses_ATOMIC_IN_LOOP(global s32 [N] a) {
  parallel p by N : block { call ATOMIC_IN_LOOP(&a.at(0), N); }
}
__co__ void uses_FOREVER(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call FOREVER(a.at(p)); }
}
__co__ void uses_DO_LOOP(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call DO_LOOP(a.at(p)); }
}
"""


def test_recursion_and_what_stays_refused_are_named_at_their_line() -> None:
    out = translate_full(REFUSED, filename="refused2.co")
    message = "\n".join(d.format() for d in out.diagnostics)
    lines = message.splitlines()

    def refusal(fn: str) -> str:
        found = [x for x in lines if f"'{fn}' is not translated" in x]
        assert len(found) == 1, message
        return found[0]

    assert "refused2.co:45:" in refusal("uses_REC")  # at the call
    assert "a recursive call of 'REC' at line 3 (REC -> REC)" in refusal("uses_REC")
    assert "a recursive call of 'PING' at line 7 (PING -> PONG -> PING)" in refusal("uses_PING")
    assert "uses_HALVINGS" not in message  # a 'while' of the kernel (the same condition in every thread)
    assert "a value of the template's type 'T', which no parameter has at line 15" in refusal("uses_NO_PARAM")
    assert "an 'auto' local without a value at line 20" in refusal("uses_LATE")
    # (refused until tests/test_device_statements3.py: a run-time loop inside another, with a 'return' or an
    # atomic in it, 'do' loops)
    for fn in ("uses_NESTED_RUNTIME", "uses_RETURN_IN_LOOP", "uses_ATOMIC_IN_LOOP", "uses_DO_LOOP"):
        assert fn not in message
    assert "a 'for' loop of more than 64 iterations at line 37 without a way to end" in refusal("uses_FOREVER")


# ----------------------------------------------------------------------------- sm_90a
F32, S32 = [[1000], "float32"], [[1000], "int32"]


@pytest.mark.parametrize(
    ("func", "schedule", "shapes"),
    [
        ("loops", "source", [F32, S32, F32, S32, F32, F32, F32, [5, "int32"]]),
        ("loops", "auto", [F32, S32, F32, S32, F32, F32, F32, [5, "int32"]]),
        ("atomics", "auto", [S32, F32, [[8], "int32"], S32, [[2], "float32"], S32]),
        ("conversions", "source", [F32, S32, S32, S32, S32, F32, F32, S32, F32]),
    ],
)
def test_helpers_compile_for_sm90a(func: str, schedule: str, shapes: list[object]) -> None:
    import json

    import sm90

    script = Path(__file__).parent / "aot_check.py"
    r = sm90.script(script, str(PROGRAMS / PROGRAM), func, json.dumps(shapes), "{}", "{}", schedule)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines and all(rec["target"] for rec in lines), r.stdout + r.stderr[-2000:]
    assert not [rec["error"] for rec in lines if "error" in rec], lines
