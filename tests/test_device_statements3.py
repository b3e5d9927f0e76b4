"""``__device__`` helpers, third part (frontend/device_body.py, lift/helpers.py): the kernels of
tests/programs/device_statements3.co in both schedules on ragged sizes, outputs poisoned (NaN, -77),
against float64 / exact integer references -- atomics inside loops of a run-time trip count (each
thread's own once per iteration it runs, under the body's conditions), such loops inside one another
(a 2-D walk with run-time bounds), ``do`` loops, ``break`` / ``continue`` (unrolled loops and loops
of the program), ``return`` inside run-time loops (a linear search); the bounds the same in every
thread (a kernel parameter) or each thread's own; and what stays refused, named at its line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from kernel_util import DEVICE

import croq2triton
from croq2triton.api import translate_full

PROGRAMS = Path(__file__).parent / "programs"
PROGRAM = "device_statements3.co"
SCHEDULES = ["source", "auto"]
_MODULES: dict[str, object] = {}
_TEXT: dict[str, str] = {}


def _module(schedule: str) -> object:
    if schedule not in _MODULES:
        _MODULES[schedule] = croq2triton.load(PROGRAMS / PROGRAM, schedule=schedule)
    return _MODULES[schedule]


def _source() -> str:
    if "source" not in _TEXT:
        _TEXT["source"] = croq2triton.translate((PROGRAMS / PROGRAM).read_text(), filename=PROGRAM)
    return _TEXT["source"]


def _full(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, float("nan") if dtype.is_floating_point else -77, device=DEVICE, dtype=dtype)


def _close(got: torch.Tensor, want: np.ndarray, tol: float = 1e-5) -> None:
    g = got.double().cpu().numpy()
    assert not np.isnan(g).any(), "an output element was never written"
    np.testing.assert_allclose(g, want, rtol=tol, atol=tol)


def _ints(t: torch.Tensor) -> list[int]:
    return [int(v) for v in t.cpu().numpy().astype(np.int64)]


def _randint(g: torch.Generator, lo: int, hi: int, n: int) -> torch.Tensor:
    return torch.randint(lo, hi, (n,), generator=g, dtype=torch.int32)


# ----------------------------------------------------------------------------- atomics in loops
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("reps", [0, 4])
def test_atomics_in_loops_run_once_per_thread_and_iteration(schedule: str, reps: int) -> None:
    m = _module(schedule)
    n = 45  # two blocks of 32 threads, the second ragged
    g = torch.Generator().manual_seed(31 + reps)
    a = _randint(g, -2, 9, n)
    a[:2] = torch.tensor([0, 8], dtype=torch.int32)
    x = torch.randn(n, generator=g) * 2.0
    x[0] = 3.0  # ADD_EVEN returns before its loop
    a, x = a.to(DEVICE), x.to(DEVICE)
    counts = torch.zeros(4, dtype=torch.int32, device=DEVICE)
    counts[3] = 60  # the pool TAKE draws from
    total = torch.zeros(1, dtype=torch.float32, device=DEVICE)
    got, bumped = _full(n, dtype=torch.int32), _full(n, dtype=torch.int32)
    m.loop_atomics(a, x, counts, total, got, bumped, reps)  # type: ignore[attr-defined]
    a64, x64 = a.cpu().numpy().astype(np.int64), x.double().cpu().numpy()
    c = _ints(counts)
    assert c[0] == sum(k * (k - 1) // 2 for k in a64 if k > 0)  # each thread's own bound
    tri = reps * (reps - 1) // 2
    assert c[1] == n * tri + n * (reps * (reps + 1) // 2)  # ADD_UPTO(reps) and BUMPS(reps) in every thread
    runs = (x64 <= 2.0) & (a64 > 0)  # ADD_EVEN: not after its return
    assert c[2] == sum((k + 1) // 2 for k in a64[runs])  # the even k of 0..a-1
    np.testing.assert_allclose(float(total[0]), float((x64[runs] * a64[runs]).sum()), rtol=1e-4, atol=1e-4)
    asked = int(np.clip(a64, 0, None).sum())
    assert c[3] == 60 - asked  # one atomicSub per iteration of each thread
    g64 = np.array(_ints(got))
    assert (g64 >= 0).all() and (g64 <= np.clip(a64, 0, None)).all() and g64.sum() == min(60, asked)
    assert _ints(bumped) == [reps * (reps + 1) // 2] * n


# ----------------------------------------------------------------------------- nested loops
def _pairs(rows: int, cols: int) -> int:
    return sum(1 for r in range(rows) for c in range(cols) if (r + c) % 3 == 0)


def _halvings(v: int) -> int:
    k = 0
    if v > 0:
        while v != 1:
            v //= 2
            k += 1
    return k


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_run_time_loops_inside_one_another(schedule: str) -> None:
    m = _module(schedule)
    n, reps = 37, 3
    g = torch.Generator().manual_seed(41)
    a, b = _randint(g, -1, 7, n), _randint(g, -6, 40, n)
    a[:3] = torch.tensor([0, 6, -1], dtype=torch.int32)
    b[:3] = torch.tensor([5, 0, 3], dtype=torch.int32)  # HALVINGS_POS(b - 3): 2, -3 (no loop), 0 (no loop)
    x = torch.randn(n, generator=g)
    a, b, x = a.to(DEVICE), b.to(DEVICE), x.to(DEVICE)
    tri, pairs, pairs_u, halvings = (
        _full(n),
        _full(n, dtype=torch.int32),
        _full(n, dtype=torch.int32),
        _full(n, dtype=torch.int32),
    )
    total = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    m.nested(a, b, x, tri, pairs, pairs_u, total, halvings, reps)  # type: ignore[attr-defined]
    a64, b64 = (t.cpu().numpy().astype(np.int64) for t in (a, b))
    x64 = x.double().cpu().numpy()
    _close(tri, x64 * np.array([k * (k + 1) // 2 if k > 0 else 0 for k in a64]), tol=1e-4)
    assert _ints(pairs) == [_pairs(int(r), int(c)) for r, c in zip(a64, b64, strict=True)]
    assert _ints(pairs_u) == [_pairs(reps, int(c)) for c in a64]
    want = sum(r * int(c) + q for r_n, c in zip(a64, b64, strict=True) for r in range(int(r_n)) for q in range(int(c)))
    assert int(total[0]) == want
    assert _ints(halvings) == [_halvings(int(v) - 3) for v in b64]


# ----------------------------------------------------------------------------- do loops
def _halve(x: float) -> float:
    x *= 0.5
    while x > 1.0:
        x *= 0.5
    return x


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_do_loops_run_their_body_before_the_test(schedule: str) -> None:
    m = _module(schedule)
    n = 41
    g = torch.Generator().manual_seed(43)
    x = torch.randn(n, generator=g) * 20.0
    x[:2] = torch.tensor([0.5, 1.5])
    a = _randint(g, 0, 2_000_000, n)
    a[:3] = torch.tensor([0, 9, 10], dtype=torch.int32)  # 0 has one digit
    x, a = x.to(DEVICE), a.to(DEVICE)
    halved, digits, thrice = _full(n), _full(n, dtype=torch.int32), _full(n)
    once, halvings = _full(n, dtype=torch.int32), _full(n, dtype=torch.int32)
    m.do_loops(x, a, halved, digits, thrice, once, halvings)  # type: ignore[attr-defined]
    x64, a64 = x.double().cpu().numpy(), a.cpu().numpy().astype(np.int64)
    _close(halved, np.array([_halve(float(v)) for v in x64]))
    assert _ints(digits) == [len(str(int(v))) for v in a64]
    _close(thrice, 6.0 * x64, tol=1e-4)
    assert _ints(once) == [v % 8 if v % 8 > 3 else v % 8 + 100 for v in a64]  # (a >= 0: C's % is Python's)
    assert _ints(halvings) == [max(int(v), 1).bit_length() - 1 for v in a64]  # halved while above 1


# ----------------------------------------------------------------------------- break / continue
def _sum_skip(v: int, n: int) -> int:
    s = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        if s > v:
            break
        s += i
    return s


def _log2(v: int) -> int:
    k = 0
    while v > 1:
        v >>= 1
        k += 1
    return k


def _inner_break(x: float, n: int) -> float:
    s = 0.0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            s += x
        s += 1.0
    return s


def _even_sum(n: int) -> int:
    i = s = 0
    while True:
        i += 1
        if i % 2 == 0:
            s += i
        if not i < n:
            return s


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_break_and_continue(schedule: str) -> None:
    m = _module(schedule)
    n, reps = 50, 9
    g = torch.Generator().manual_seed(47)
    a = _randint(g, -3, 40, n)
    a[:4] = torch.tensor([0, 1, 2, 37], dtype=torch.int32)
    x = torch.randn(n, generator=g)
    a, x = a.to(DEVICE), x.to(DEVICE)
    skip, skip8, log2, even = (_full(n, dtype=torch.int32) for _ in range(4))
    inner = _full(n)
    capped = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    half_sum = _full(n, dtype=torch.int32)
    m.jumps(a, x, skip, skip8, log2, inner, even, capped, half_sum, reps)  # type: ignore[attr-defined]
    a64, x64 = a.cpu().numpy().astype(np.int64), x.double().cpu().numpy()
    assert _ints(skip) == [_sum_skip(int(v), reps) for v in a64]
    assert _ints(skip8) == [_sum_skip(int(v), 8) for v in a64]
    assert _ints(log2) == [_log2(int(v)) for v in a64]
    c_mod = [int(np.fmod(v, 7)) for v in a64]  # C's % (truncating)
    _close(inner, np.array([_inner_break(float(xv), k) for xv, k in zip(x64, c_mod, strict=True)]), tol=1e-4)
    assert _ints(even) == [_even_sum(int(np.fmod(v, 13))) for v in a64]
    assert int(capped[0]) == int(np.clip(np.minimum(a64, reps), 0, None).sum())
    assert _ints(half_sum) == [sum(i for i in range(reps) if 2 * i < reps)] * n


def test_a_known_trip_loop_with_break_stays_unrolled() -> None:
    source = _source()
    assert "def _device_ONCE(v):" in source  # 'do .. while (0)': one iteration, no loop
    assert source.split("def do_loops_k0(")[1].split("_FN[")[0].count("while go") == 3  # HALVE, DIGITS, HALVINGS_DO
    assert "def _device_SUM_SKIP8(v):" in source  # no loop of the program: a jit helper
    kernel = source.split("def jumps_k0(")[1].split("_FN[")[0]
    assert "_device_SUM_SKIP8(" in kernel
    # SUM_SKIP, LOG2, INNER_BREAK's two, EVEN_SUM, ADD_CAPPED, HALF_SUM: loops of the program; HALF_SUM's
    # break the same in every thread: the program's while on one flag, no flag per thread
    assert kernel.count("while go") == 7
    half_sum = kernel.split("while go_9:")[1].split("tl.store(")[0]
    assert "active" not in half_sum and "go_9 = (broke_loop" in half_sum


# ----------------------------------------------------------------------------- return in run-time loops
def _find(v: int, n: int) -> int:
    return next((i for i in range(n) if i * i >= v), -1)


def _first_over(x: float, n: int) -> float:
    s = x
    for _ in range(n):
        s = np.float32(s) * np.float32(1.5)
        if s > 10.0:
            return float(s)
    return -float(s)


def _find_pair(v: int, n: int) -> int:
    return next((i * 100 + j for i in range(n) for j in range(n) if i * j == v), -1)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("reps", [0, 6])
def test_return_inside_run_time_loops(schedule: str, reps: int) -> None:
    m = _module(schedule)
    n = 39
    g = torch.Generator().manual_seed(53 + reps)
    a = _randint(g, -5, 70, n)
    a[:3] = torch.tensor([0, 64, -5], dtype=torch.int32)
    x = torch.randn(n, generator=g) * 3.0
    a, x = a.to(DEVICE), x.to(DEVICE)
    found, found_u, pair, until = (_full(n, dtype=torch.int32) for _ in range(4))
    over = _full(n)
    counts = torch.zeros(2, dtype=torch.int32, device=DEVICE)
    m.searches(a, x, found, found_u, over, pair, until, counts, reps)  # type: ignore[attr-defined]
    a64, x32 = a.cpu().numpy().astype(np.int64), x.cpu().numpy()
    assert _ints(found) == [_find(int(v), int(np.fmod(v, 11))) for v in a64]
    assert _ints(found_u) == [_find(int(v), reps) for v in a64]
    _close(over, np.array([_first_over(float(v), reps) for v in x32]), tol=1e-5)
    assert _ints(pair) == [_find_pair(int(v), 9) for v in a64]
    want_until = [_find(int(v), reps) for v in a64]
    assert _ints(until) == want_until
    assert int(counts[0]) == sum(reps if w < 0 else w + 1 for w in want_until)  # one add per iteration run
    marks = [int(np.fmod(v, 9)) - 1 for v in a64]
    assert int(counts[1]) == sum(reps if not 0 <= k < reps else k for k in marks)


def test_a_return_in_a_loop_is_a_flag_of_each_thread() -> None:
    source = _source()
    kernel = source.split("def searches_k0(")[1].split("_FN[")[0]
    assert "returned_loop" in kernel and "result_loop" in kernel
    # FIND's bound shared by every thread: still a flag per thread (where each returns differs)
    assert kernel.count("while go") == 7  # FIND twice, FIRST_OVER, FIND_PAIR's two, COUNT_UNTIL, MARK


# ----------------------------------------------------------------------------- pointers walked in loops
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_pointers_walked_in_loops(schedule: str) -> None:
    m = _module(schedule)
    n, ld = 43, 9
    g = torch.Generator().manual_seed(59)
    a = _randint(g, 0, 40, n).to(DEVICE)
    mat = torch.randn(n + 3 * ld, generator=g).to(DEVICE)
    hist = torch.zeros(10, dtype=torch.int32, device=DEVICE)
    sums, first = _full(n), _full(n, dtype=torch.int32)
    m.pointers(a, hist, mat, sums, first, ld)  # type: ignore[attr-defined]
    a64, m64 = a.cpu().numpy().astype(np.int64), mat.double().cpu().numpy()
    want = np.zeros(10, dtype=np.int64)
    for i in range(n):
        want[i % 5 : i % 5 + i % 4] += a64[i]  # atomicAdd(hist + k, v) for k < i % 4
    assert _ints(hist) == want.tolist()
    want_sums = [sum(m64[i + r * ld + c] for r in range(i % 3 + 1) for c in range(int(a64[i]) % 4)) for i in range(n)]
    _close(sums, np.array(want_sums), tol=1e-4)
    want_first = [next((k for k in range(n - i) if a64[i + k] > a64[i] + 10), -1) for i in range(n)]
    assert _ints(first) == want_first


# ----------------------------------------------------------------------------- refusals
REFUSED = """
__device__ float FOREVER(float x) {
  while (true) x += 1.0f;
  return x;
}
__device__ void EFFECT_TEST(int* c, int n) {
  while (atomicAdd(c, 1) < n) {
    n -= 1;
  }
}
__device__ float STRAY(float x) {
  if (x > 0.0f) break;
  return x;
}
__device__ int CASES(int v) {
  switch (v) { case 0: return 1; }
  return 0;
}
__device__ int JUMP(int v, int n) {
  for (int i = 0; i < n; ++i) {
    if (i == v) goto out;
  }
  out:
  return v;
}
__device__ float NEXT(const float* p) {
  return p[1];
}
__device__ float TWICE(const float* p) {
  return p[1][2];
}
__device__ int MERGES(int v, int n) {
  int s = 0, t = 1;
  int i = 0;
  do {
    i++;
    int j = 0;
    do { j++; s += v + s; if (n + v != s) break; s += j + s; } while (j < n);
    t = 0;
    if (s + s > v) { if (i * v == n) continue; } else { t = n + 5; }
  } while (i < 6);
  return s + t;
}
__co__ void uses_FOREVER(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call FOREVER(a.at(p)); }
}
__co__ void uses_EFFECT_TEST(global s32 [N] a) {
  parallel p by N : block { call EFFECT_TEST(&a.at(0), N); }
}
__co__ void uses_STRAY(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call STRAY(a.at(p)); }
}
__co__ void uses_CASES(global s32 [N] a) {
  parallel p by N : block { a.at(p) = call CASES(a.at(p)); }
}
__co__ void uses_JUMP(global s32 [N] a) {
  parallel p by N : block { a.at(p) = call JUMP(a.at(p), N); }
}
__co__ void uses_NEXT(global f32 [M, N] a) {
  parallel p by cdiv(M, 2) : block {
    v = a.subspan(2, 3).at(p, 0);
    a.at(p, 0) = call NEXT(&v.at(0, 0));
  }
}
__co__ void uses_TWICE(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call TWICE(&a.at(p)); }
}
__co__ void uses_MERGES(global s32 [N] a) {
  parallel p by N : block { a.at(p) = call MERGES(a.at(p), N); }
}
"""


def test_what_stays_refused_is_named_at_its_line() -> None:
    out = translate_full(REFUSED, filename="refused3.co")
    message = "\n".join(d.format() for d in out.diagnostics)
    lines = message.splitlines()

    def refusal(fn: str) -> str:
        found = [x for x in lines if f"'{fn}' is not translated" in x]
        assert len(found) == 1, message
        return found[0]

    assert (
        "a 'while' loop of more than 64 iterations at line 3 without a way to end (no condition, 'break' or"
        " 'return')" in refusal("uses_FOREVER")
    )
    assert (
        "an atomic or a call of a helper with atomics in the condition of a 'while' loop of a run-time trip"
        " count at line 7" in refusal("uses_EFFECT_TEST")
    )
    assert "a 'break' outside a loop at line 12" in refusal("uses_STRAY")
    assert "a 'switch' at line 16" in refusal("uses_CASES")
    assert "a 'goto' at line 21" in refusal("uses_JUMP")
    # (of a tensor it is the element that many places further in row-major order: tests/test_probe8.py)
    assert "an element at an offset from the address of an element of the view 'v' of several dimensions" in refusal(
        "uses_NEXT"
    )
    assert "indexing of an element of 'p' at line 30" in refusal("uses_TWICE")
    # (a loop unrolled around a loop of a run-time trip count: each trip's values read the last's)
    assert "a body whose values read one another along more than 200000 paths" in refusal("uses_MERGES")


# ----------------------------------------------------------------------------- sm_90a
F32, S32 = [[1000], "float32"], [[1000], "int32"]
REPS = [5, "int32"]


@pytest.mark.parametrize(
    ("func", "schedule", "shapes"),
    [
        ("loop_atomics", "source", [S32, F32, [[4], "int32"], [[1], "float32"], S32, S32, REPS]),
        ("nested", "auto", [S32, S32, F32, F32, S32, S32, [[1], "int32"], S32, REPS]),
        ("do_loops", "source", [F32, S32, F32, S32, F32, S32, S32]),
        ("jumps", "auto", [S32, F32, S32, S32, S32, F32, S32, [[1], "int32"], S32, REPS]),
        ("searches", "source", [S32, F32, S32, S32, F32, S32, S32, [[2], "int32"], REPS]),
        ("pointers", "auto", [S32, [[10], "int32"], [[1100], "float32"], F32, S32, [9, "int32"]]),
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


CACHED = """
__device__ float SCALED(const float* p, float s) { return __ldg(p) * s; }
__device__ float PAIR(const float* p) { return __ldca(p) + __ldcs(p + 1); }
__device__ int LAST_USE(const int* p, int k) { return __ldlu(p + k) - __ldcv(p); }
__co__ void cached(global f32 [N] x, global s32 [N] a, global f32 [N] y, global f32 [N] z, global s32 [N] w) {
  parallel b by cdiv(N, 32) : block, t by 32 : thread {
    int i = b # t;
    if (i < N) {
      y.at(i) = call SCALED(&x.at(i), 3.0f);
      if (i + 1 < N) z.at(i) = call PAIR(&x.at(i));
      w.at(i) = call LAST_USE(&a.at(i), (N - 1 - i) % 3);
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_loads_with_a_cache_hint_read_through_the_pointer(schedule: str, tmp_path: Path) -> None:
    """``__ldg`` and the other cache-hinted loads (``__ldca``, ``__ldcs``, ``__ldlu``, ``__ldcv``) return the
    value their pointer addresses (Triton's loads choose their own caching)."""
    path = tmp_path / "cached.co"
    path.write_text(CACHED)
    mod = croq2triton.load(path, schedule=schedule)
    n = 77
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=g).to(DEVICE)
    a = torch.randint(-100, 100, (n,), generator=g, dtype=torch.int32).to(DEVICE)
    y, z = _full(n), _full(n)
    w = torch.full((n,), -(2**31), dtype=torch.int32, device=DEVICE)
    mod.cached(x, a, y, z, w)  # type: ignore[attr-defined]
    xd, ad = x.double().cpu(), a.long().cpu()
    assert torch.allclose(y.double().cpu(), 3 * xd)
    assert torch.allclose(z.double().cpu()[:-1], xd[:-1] + xd[1:]) and torch.isnan(z[-1].cpu())
    k = (n - 1 - torch.arange(n)) % 3
    assert torch.equal(w.long().cpu(), ad[torch.arange(n) + k] - ad)
