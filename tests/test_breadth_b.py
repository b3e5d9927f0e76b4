"""Constructs that never translated before issue 28 (part B), each in programs of our own
(tests/programs/breadth_b_*.co) run in both schedules on ragged sizes with NaN-poisoned outputs and
compared with float64 torch; and the refusals that remain, each naming its construct.

* ``__device__`` helpers: value helpers as ``@triton.jit`` functions (templates instantiated per
  type, helpers of helpers), atomics through a pointer parameter, warp shuffles (xor, from a lane,
  up, down, segments narrower than the warp); ``<<`` and ``>>``.
* warp roles beside other statements of their ``parallel`` and without an event loop.
* MMAs and fragments under thread levels they do not read (the threads run them together); units
  that each issue MMAs with an accumulator of their own, unrolled (lift/unroll.py).
* ``dma.copy`` / ``dma.transp`` / ``dma.any`` / ``wait`` / ``swap`` / ``rotate`` between launches
  (torch copies), of whole tensors and of their windows (``chunkat``, ``subspan``, ``view``).
* copies under a condition on the thread index (run where some thread of the block meets it).
* views with explicit strides (``.view(e : st).from(o)``, ``.subspan(e : st)``) of 1-D windows.
* fragments of each thread (``frag`` + ``apply`` reading the thread index): the threads' arrays.
* ``__cpp__`` statements refused as themselves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE

import croq2triton
from croq2triton.api import translate_full

PROGRAMS = Path(__file__).parent / "programs"
NAN = float("nan")
SCHEDULES = ["source", "auto"]
_MODULES: dict[tuple[str, str], object] = {}


def _module(name: str, schedule: str) -> object:
    key = (name, schedule)
    if key not in _MODULES:
        _MODULES[key] = croq2triton.load(PROGRAMS / name, schedule=schedule)
    return _MODULES[key]


def _full(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    value = NAN if dtype.is_floating_point else -77
    return torch.full(shape, value, device=DEVICE, dtype=dtype)


def _close(got: torch.Tensor, want: torch.Tensor, tol: float = 1e-5) -> None:
    assert not torch.isnan(got).any(), "an output element was never written"
    torch.testing.assert_close(got.double().cpu(), want.double().cpu(), rtol=tol, atol=tol)


def _refusals(source: str) -> str:
    """The diagnostics of translating ``source`` (functions that do not translate are errors)."""
    out = translate_full(source, filename="refused.co")
    return "\n".join(d.format() for d in out.diagnostics)


# ----------------------------------------------------------------------------- __device__ helpers
HELPERS = "breadth_b_helpers.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_value_helpers_and_atomics_through_a_pointer(schedule: str) -> None:
    m = _module(HELPERS, schedule)
    n = 203
    a, b = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    diff, soft = _full(n), _full(n)
    counts = torch.zeros(7, dtype=torch.int32, device=DEVICE)
    m.abs_soft(a, b, diff, soft, counts)  # type: ignore[attr-defined]
    a64, b64 = a.double(), b.double()
    _close(diff, (a64 - b64).abs())
    want = torch.exp(-a64.abs() * 0.5) * (a64 > 0).double() + a64.clamp(-1.0, 1.0)
    _close(soft, want, tol=1e-5)
    assert counts.tolist() == torch.bincount(torch.arange(n) % 7, minlength=7).tolist()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_integer_helpers_shifts_and_an_atomic_max(schedule: str) -> None:
    m = _module(HELPERS, schedule)
    n = 77
    x = torch.randint(-60, 60, (n,), dtype=torch.int32, device=DEVICE)
    y, z = _full(n, dtype=torch.int32), _full(n, dtype=torch.int32)
    top = torch.zeros(5, dtype=torch.uint32, device=DEVICE)
    old = _full(n, dtype=torch.uint32)
    positive = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    m.int_helpers(x, y, z, top, old, positive)  # type: ignore[attr-defined]
    assert int(positive[0]) == int((x > 0).sum())
    v = x.long()
    assert y.long().tolist() == ((v << 3) + (v >> 1) - (v >> 2)).tolist()  # >> of negatives: arithmetic
    assert z.long().tolist() == (v.clamp(-20, 17) << 1).tolist()
    want = torch.zeros(5, dtype=torch.long).scatter_reduce(0, torch.arange(n) % 5, v.cpu() + 64, "amax")
    assert top.long().tolist() == want.tolist()
    # each atomic returned an old value: 0 or one of the values before it in its bin
    for i in range(n):
        assert int(old[i]) == 0 or int(old[i]) in (v[torch.arange(n) % 5 == i % 5] + 64).tolist()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_butterfly_reduction_by_shuffles(schedule: str) -> None:
    m = _module(HELPERS, schedule)
    rows = 13
    x = torch.randn(rows, 32, device=DEVICE)
    x[3, 7] = x[3, 20] = x[3].max() + 1.0  # a tie: the lower index wins
    sums, best, normed = _full(rows), _full(rows, dtype=torch.int32), _full(rows, 32)
    m.row_argmax(x, sums, best, normed)  # type: ignore[attr-defined]
    x64 = x.double()
    total = x64.sum(1)
    _close(sums, total)
    assert best.tolist() == x64.argmax(1).tolist() and int(best[3]) == 7
    _close(normed, x64 / (total * total).clamp_min(1e-6).sqrt()[:, None], tol=1e-4)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_shuffles_from_a_lane_up_and_down(schedule: str) -> None:
    m = _module(HELPERS, schedule)
    rows = 6
    x = torch.randn(rows, 64, device=DEVICE)
    from3, up, down = _full(rows, 64), _full(rows, 64), _full(rows, 64)
    m.lane_moves(x, from3, up, down)  # type: ignore[attr-defined]
    t = torch.arange(64)
    lane = t % 32
    src_from3 = t - lane % 8 + 3  # lane 3 of each segment of 8
    src_up = torch.where(lane >= 5, t - 5, t)  # width 32: before the warp's first lane keeps its own
    src_down = torch.where(lane % 16 + 6 < 16, t + 6, t)  # width 16: past the segment keeps its own
    _close(from3, x[:, src_from3])
    _close(up, x[:, src_up])
    _close(down, x[:, src_down])


def test_value_helpers_are_jit_functions_of_the_module() -> None:
    source = croq2triton.translate((PROGRAMS / HELPERS).read_text(), filename=HELPERS)
    # one function per helper and per type a template is used at; calls between helpers stay calls
    for name in ("_device_ABS_F32(value)", "_device_CLAMP_f32(x, lo, hi)", "_device_CLAMP_s32(x, lo, hi)"):
        assert f"def {name}:" in source
    assert source.count("def _device_ABS_F32") == 1
    assert "_device_ABS_F32(x) * -1.0 * scale" in source  # -ABS_F32(x): a sign flip (Triton's -x is 0 - x)
    # helpers that go through an address or exchange values between threads are their body at the call
    assert "ATOMIC_ADD" not in source.split("__croq_ops__")[0].replace("ATOMIC_ADD(", "")
    assert "tl.gather(" in source and "tl.atomic_max(" in source


REFUSED_HELPERS = """
__device__ float LOOPS(float x) {
  float s = 0.0f;
  for (int i = 0; i < (int)x; ++i) s += x;
  return s;
}
__device__ float GLOBAL_READ(float x) { return x * kScale; }
__device__ float UNKNOWN_CALL(float x) { return __my_intrinsic(x); }
__device__ void NOTHING(float* x) { *x = 0.0f; }
__device__ float BROKEN(float x) { return OTHER(x) + 1.0f; }

__co__ void uses_LOOPS(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call LOOPS(a.at(p)); }
}
__co__ void uses_GLOBAL_READ(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call GLOBAL_READ(a.at(p)); }
}
__co__ void uses_UNKNOWN_CALL(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call UNKNOWN_CALL(a.at(p)); }
}
__co__ void uses_NOTHING(global f32 [N] a) {
  parallel p by N : block { call NOTHING(&a.at(p)); }
}
__co__ void uses_BROKEN(global f32 [N] a) {
  parallel p by N : block { a.at(p) = call BROKEN(a.at(p)); }
}
__co__ void uses_UNDEFINED(global f32 [N] a) {
  parallel p by N : block { call undefined_kernel(a); }
}
"""


def test_helpers_that_do_not_translate_are_refused_at_the_call() -> None:
    message = _refusals(REFUSED_HELPERS)
    lines = message.splitlines()

    def refusal(fn: str) -> str:
        found = [x for x in lines if f"'{fn}' is not translated" in x]
        assert len(found) == 1, message
        return found[0]

    assert "uses_LOOPS" not in message  # a loop to each thread's own bound (tests/test_device_statements2.py)
    assert "refused.co:16:" in refusal("uses_GLOBAL_READ")  # at the call
    assert "the call of 'GLOBAL_READ', a __device__ function" in refusal("uses_GLOBAL_READ")
    assert "it reads 'kScale', which is not one of its parameters at line 7" in refusal("uses_GLOBAL_READ")
    assert "it calls '__my_intrinsic' at line 8, which has no Triton counterpart" in refusal("uses_UNKNOWN_CALL")
    assert "a store through the pointer 'x' at line 9" in refusal("uses_NOTHING")
    assert "it calls 'OTHER' at line 10, which has no Triton counterpart" in refusal("uses_BROKEN")
    assert "the call of 'undefined_kernel' (a C++ function" in refusal("uses_UNDEFINED")


# ----------------------------------------------------------------------------- warp roles
ROLES = "breadth_b_roles.co"


def _f16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE).to(torch.float16)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_roles_beside_declarations_a_barrier_and_an_epilogue(schedule: str) -> None:
    m = _module(ROLES, schedule)
    lhs, rhs, out = _f16(70, 64), _f16(45, 64), _full(70, 45)
    m.tile_gemm(lhs, rhs, out)  # type: ignore[attr-defined]
    _close(out, lhs.double() @ rhs.double().T, tol=1e-3)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_roles_ordered_by_events_both_ways(schedule: str) -> None:
    m = _module(ROLES, schedule)
    a, b, c = _f16(100, 32), _f16(50, 32), _full(100, 50, dtype=torch.float16)
    m.ping_pong(a, b, c)  # type: ignore[attr-defined]
    _close(c, (a.double() @ b.double().T).half(), tol=2e-3)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_producer_and_two_consumers_without_a_loop(schedule: str) -> None:
    m = _module(ROLES, schedule)
    lhs, rhs, out = _f16(150, 64), _f16(70, 64), _full(150, 70)
    m.two_consumers(lhs, rhs, out)  # type: ignore[attr-defined]
    _close(out, lhs.double() @ rhs.double().T, tol=1e-3)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_events_not_the_source_order_decide(schedule: str) -> None:
    m = _module(ROLES, schedule)
    a, b, c = _f16(90, 32), _f16(40, 32), _full(90, 40)
    m.consumer_first(a, b, c)  # type: ignore[attr-defined]
    _close(c, a.double() @ b.double().T, tol=1e-3)


REFUSED_ROLES = """
__co__ void never_released(global f32 [64] x) {
  parallel b by 1 : block {
    shared event e;
    parallel g by 2 : group-4 {
      inthreads.async (g == 0) { wait e; }
      inthreads.async (g == 1) { dma.copy x => shared; }
    }
  }
}
__co__ void cycle(global f32 [64] x) {
  parallel b by 1 : block {
    shared event e1, e2;
    parallel g by 2 : group-4 {
      inthreads.async (g == 0) { wait e1; trigger e2; }
      inthreads.async (g == 1) { wait e2; trigger e1; }
    }
  }
}
__co__ void two_producers(global f32 [64] x) {
  parallel b by 1 : block {
    shared event e;
    parallel g by 3 : group-4 {
      inthreads.async (g == 0) { trigger e; }
      inthreads.async (g == 1) { trigger e; }
      inthreads.async (g == 2) { wait e; wait e; }
    }
  }
}
__co__ void racing(global f32 [64] x, global f32 [64] y) {
  parallel b by 1 : block {
    shared f32 [64] s;
    parallel g by 2 : group-4 {
      inthreads.async (g == 0) { dma.copy x => s; }
      inthreads.async (g == 1) { dma.copy s => y; }
    }
  }
}
__co__ void unit_beside(global f32 [64] x) {
  parallel b by 1 : block {
    shared event e;
    parallel g by 2 : group-4 {
      h = g + 1;
      inthreads.async (g == 0) { trigger e; }
      inthreads.async (g == 1) { wait e; }
    }
  }
}
"""


def test_roles_that_do_not_translate_name_why() -> None:
    message = _refusals(REFUSED_ROLES)
    lines = message.splitlines()

    def refusal(fn: str) -> str:
        found = [x for x in lines if f"'{fn}' is not translated" in x]
        assert len(found) == 1, message
        return found[0]

    assert "refused.co:6:34: " in refusal("never_released")  # at the wait
    assert "a wait on the event 'e' that no trigger releases" in refusal("never_released")
    assert "warp roles whose events order them in a cycle" in refusal("cycle")
    # a generation of an event several roles trigger completes when each has triggered it (every
    # unit arrives: lift/sequence.py): one generation here, so the second wait is never released
    assert "a wait on the event 'e' that no trigger releases" in refusal("two_producers")
    assert "refused.co:35:7: " in refusal("racing")  # at the second role
    assert "warp roles that use 's' with no event ordering them (a race" in refusal("racing")
    assert "refused.co:43:7: " in refusal("unit_beside")
    assert "a statement beside warp roles that uses the unit or thread index" in refusal("unit_beside")


# ----------------------------------------------------------------------------- MMAs and fragments of threads together
UNITS = "breadth_b_units.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_mma_issued_by_the_threads_of_a_warpgroup_together(schedule: str) -> None:
    m = _module(UNITS, schedule)
    k, n, rows = 40, 130, 84
    offsets = torch.tensor([0, 70, 70, 75, 84], dtype=torch.int32, device=DEVICE)  # an empty segment
    groups = len(offsets) - 1
    lhs, rhs = _f16(rows, k), _f16(groups, n, k)
    out = _full(rows, n)
    m.grouped_rows(lhs, rhs, offsets, out)  # type: ignore[attr-defined]
    want = torch.empty(rows, n, dtype=torch.float64)
    for g in range(groups):
        lo, hi = int(offsets[g]), int(offsets[g + 1])
        want[lo:hi] = 2.0 * (lhs[lo:hi].double() @ rhs[g].double().T)
    _close(out, want, tol=1e-3)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_fragments_of_the_threads_of_a_block(schedule: str) -> None:
    m = _module(UNITS, schedule)
    rows = 9
    x = torch.randn(rows, 48, device=DEVICE)
    y, top = _full(rows, 48), _full(rows, 4)
    m.frag_rows(x, y, top)  # type: ignore[attr-defined]
    v = (x.double() * 2.0 + 0.5).reshape(rows, 4, 12)
    best = v.amax(2)
    _close(top, best)
    _close(y, (v - best[:, :, None]).reshape(rows, 48))


# ----------------------------------------------------------------------------- copies between launches
HOST = "breadth_b_host.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_copies_between_launches(schedule: str) -> None:
    m = _module(HOST, schedule)
    n = 11
    x = torch.randn(n, 6, device=DEVICE)
    t, y = _full(6, n), _full(n, 6)
    got = m.doubled(x, t, y)  # type: ignore[attr-defined]
    x64 = x.double()
    _close(got, 2.0 * x64)
    _close(t, 2.0 * x64.T)
    _close(y, 4.0 * x64)
    assert got.data_ptr() not in (x.data_ptr(), t.data_ptr())  # a buffer of its own, not an alias


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_kernel_iterated_on_its_copied_output(schedule: str) -> None:
    m = _module(HOST, schedule)
    x, out = torch.randn(37, device=DEVICE), _full(37)
    m.iterate(x, out, 3)  # type: ignore[attr-defined]
    want = x.double()
    for _ in range(3):
        want = want * 0.5 + 1.0
    _close(out, want)
    m.iterate(x, out, 0)  # type: ignore[attr-defined]  # no launch: out keeps its values
    _close(out, want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_buffers_swapped_between_launches(schedule: str) -> None:
    m = _module(HOST, schedule)
    x, out = torch.randn(37, device=DEVICE), _full(37)
    for steps in (3, 0):
        m.pingpong(x, out, steps)  # type: ignore[attr-defined]
        want = x.double()
        for _ in range(steps):
            want = want * 0.5 + 1.0
        _close(out, want)  # rotate(a, b, c): c names what a named


def test_a_host_copy_between_tensors_of_other_shapes_fails_at_launch() -> None:
    m = _module(HOST, "source")
    x, y = torch.randn(5, 4, device=DEVICE), _full(5, 4)
    m.moved(x, y)  # type: ignore[attr-defined]
    _close(y, x)
    with pytest.raises(
        croq2triton.CroqError,
        match=r"breadth_b_host.co:39:.*dma.copy of 'x' \(\[5, 4\]\) into 'y' \(\[6, 4\]\): the shapes differ",
    ):
        m.moved(x, _full(6, 4))  # type: ignore[attr-defined]


REFUSED_HOST = """
__co__ void part(global f32 [N, 8] x, global f32 [N, 8] y) {
  dma.copy x.span_as([N * 8]).subspan(16) => global;
}
__co__ void pending(global f32 [N] x, global f32 [N] y) {
  f = dma.any;
  dma.copy f.data => y;
}
__co__ void retyped(global f32 [N] x, global s32 [N] y) {
  dma.copy x => y;
}
__co__ void swapped_parameter(global f32 [N] x, global f32 [N] y) {
  global f32 [N] t;
  swap(x, t);
}
__co__ void padded(global f32 [N] x, global f32 [N] y) {
  tma.copy x => y;
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_copies_of_windows_between_launches(schedule: str) -> None:
    m = _module(HOST, schedule)
    x, y, z = torch.randn(9, 10, device=DEVICE), _full(9, 10), _full(8, 4)
    m.windows(x, y, z)  # type: ignore[attr-defined]
    _close(y[:8, :9], x[:8, :9])  # chunks of floor(9 / 2) rows and floor(10 / 3) columns
    assert torch.isnan(y[8]).all() and torch.isnan(y[:, 9]).all()  # the remainder is not copied
    _close(z[0:3, 2:4], x[3:6, 2:4])
    _close(z[6:8, :], x[0:2, 0:4])
    assert torch.isnan(z[0:6, 0:2]).all() and torch.isnan(z[3:6]).all()
    # windows partly or wholly outside their tensor (LANGUAGE.md 14.3): read zero outside, as in kernels
    x2, y2, z2 = torch.randn(2, 3, device=DEVICE), _full(2, 3), _full(8, 4)
    m.windows(x2, y2, z2)  # type: ignore[attr-defined]
    _close(y2, x2)
    _close(z2[0:3, 2:4], torch.zeros(3, 2, device=DEVICE))  # rows 3..5 of a 2-row tensor
    _close(z2[6:8, :], torch.nn.functional.pad(x2, (0, 1)))  # column 3 of 3 columns reads zero


def test_host_copies_that_do_not_translate_name_why() -> None:
    message = _refusals(REFUSED_HOST)
    lines = message.splitlines()

    def refusal(fn: str) -> str:
        found = [x for x in lines if f"'{fn}' is not translated" in x]
        assert len(found) == 1, message
        return found[0]

    assert "refused.co:3:13: " in refusal("part")  # at the view
    assert "host-level '.span_as' views cannot be lowered yet" in refusal("part")
    assert "the future 'f' holds no copy here (it is a dma.any)" in refusal("pending")
    assert "the element types differ" in refusal("retyped")
    assert "a host-level 'tma.copy'" in refusal("padded")  # dma.pad between launches: tests/test_breadth_e.py
    assert "a host-level 'swap' of 'x', a parameter" in refusal("swapped_parameter")


# ----------------------------------------------------------------------------- copies under a condition on the thread
CONDITIONAL = "breadth_b_conditional.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_copies_issued_by_some_threads(schedule: str) -> None:
    m = _module(CONDITIONAL, schedule)
    x = torch.randn(5, 20, device=DEVICE)
    y, z = _full(5, 20), _full(5, 20)
    m.one_loads(x, y, z)  # type: ignore[attr-defined]
    _close(y, 3.0 * x.double())
    _close(z, x.double() + 1.0)
    x = torch.randn(11, 8, device=DEVICE)
    y = _full(11, 8)
    m.warp_fetch(x, y)  # type: ignore[attr-defined]
    _close(y, x.double() - 2.0)


def test_a_conditional_copy_runs_where_some_thread_of_the_block_meets_the_condition() -> None:
    source = croq2triton.translate((PROGRAMS / CONDITIONAL).read_text(), filename=CONDITIONAL)
    assert "tl.max((t == 0).to(tl.int32), axis=0) > 0" in source  # the threads' condition, reduced once
    assert "tl.max(tl.max(((w == 1) & (t == 5)).to(tl.int32), axis=0), axis=0) > 0" in source


def test_a_conditional_copy_whose_window_differs_between_threads_is_refused() -> None:
    message = _refusals(
        """
__co__ void differ(global f32 [N, 20] x, global f32 [N, 20] y) {
  parallel p by N : block
  parallel t by 32 : thread {
    shared f32 [1, 20] row;
    if (t < 3) dma.copy x.view(1, 20).from(p + t / 2, 0) => row;
    sync.shared;
    if (t < 20) y.at(p, t) = row.at(0, t);
  }
}
"""
    )
    assert "refused.co:6:16: error: 'differ' is not translated" in message
    assert "a per-thread copy of this form" in message


# ----------------------------------------------------------------------------- units unrolled
UNROLL = "breadth_b_unroll.co"


@pytest.mark.parametrize("schedule", ["auto"])  # its translation is the file's slowest: one schedule
@pytest.mark.parametrize(
    ("fn", "m", "n", "k", "plus"),
    [
        ("two_groups", 70, 20, 24, 0.0),
        ("warp_epilogue", 45, 37, 40, 1.0),
        ("shared_halves", 45, 37, 40, 0.0),
        ("unannotated", 45, 37, 40, 1.0),
    ],
)
def test_units_each_with_an_accumulator_unrolled(schedule: str, fn: str, m: int, n: int, k: int, plus: float) -> None:
    mod = _module(UNROLL, schedule)
    lhs, rhs, out = _f16(m, k), _f16(n, k), _full(m, n)
    getattr(mod, fn)(lhs, rhs, out)
    _close(out, lhs.double() @ rhs.double().T + plus, tol=1e-3)


REFUSED_UNITS = """
__co__ void barrier_in_branch(global f16 [M, 16] lhs, global f16 [16, 16] rhs, global f32 [M, 16] out) {
  parallel bm by cdiv(M, 32) : block {
    shared f16 [32, 16] sA;
    shared f16 [16, 16] sB;
    parallel w by 2 : group {
      mc = mma.fill.f32 0.0f;
      dma.copy.zfill lhs.view(16, 16).from(bm * 32 + w * 16, 0) => sA.subspan(16, 16).at(w, 0);
      if (w == 0) {
        dma.copy rhs => sB;
        sync.shared;
      }
      mma.row.row mc, sA.subspan(16, 16).at(w, 0), sB;
      mma.store mc, out.view(16, 16).from(bm * 32 + w * 16, 0);
    }
  }
}
"""


OUTER_ACCUMULATOR = """
__co__ void outer_acc(global f16 [M, 16] lhs, global f16 [16, 16] rhs, global f32 [M, 16] out) {
  parallel bm by cdiv(M, 32) : block {
    shared f16 [32, 16] sA;
    shared f16 [16, 16] sB;
    mc = mma.fill.f32 0.0f;
    parallel w by 2 : group {
      dma.copy.zfill lhs.view(16, 16).from(bm * 32 + w * 16, 0) => sA.subspan(16, 16).at(w, 0);
      dma.copy rhs => sB;
      mma.row.row mc, sA.subspan(16, 16).at(w, 0), sB;
      mma.store mc, out.view(16, 16).from(bm * 32 + w * 16, 0);
    }
  }
}
"""


def test_units_into_an_accumulator_of_the_block_are_not_unrolled() -> None:
    # the units own parts of the block's accumulator: copies of the units' code would each add into
    # all of it, so they are not unrolled (lift/units.py places such parts where it can; here the
    # view leaves the rows, and the refusal stands)
    out = translate_full(OUTER_ACCUMULATOR, filename="refused.co")
    assert "outer_acc" in out.failed
    (d,) = out.failed["outer_acc"].diagnostics
    assert d.span is not None and d.span.line == 11  # the store of the units' parts


def test_units_with_a_barrier_under_a_condition_are_refused() -> None:
    message = _refusals(REFUSED_UNITS)
    assert "refused.co:9:7: error: 'barrier_in_branch' is not translated" in message, message  # at the if
    assert "units that each issue MMAs, with a barrier under a condition" in message


def test_cpp_statements_are_refused_naming_them() -> None:
    message = _refusals(
        """
__co__ void in_kernel(global f32 [N] x) {
  parallel p by N : block {
    __cpp__("printf(\\"hi\\");");
    x.at(p) = 1.0f;
  }
}
__co__ void between_launches(global f32 [N] x) {
  __cpp__("int z = 0;");
  parallel p by N : block { x.at(p) = 1.0f; }
}
__co__ void host_call(global f32 [N] x) {
  int k = call get_k();
  parallel p by N : block { x.at(p) = 1.0f; }
}
__co__ void neighbour(global f32 [N] x) {
  parallel p by N : block { x.at(p) = 2.0f; }
}
"""
    )
    assert (
        "refused.co:4:5: error: 'in_kernel' is not translated: croq2triton does not translate '__cpp__(...)'" in message
    )
    assert (
        "refused.co:9:3: error: 'between_launches' is not translated: croq2triton does not translate '__cpp__(...)' between launches"
        in message
    )
    assert (
        "refused.co:13:11: error: 'host_call' is not translated: croq2triton does not translate the call of 'get_k'"
        in message
    )
    assert "between launches (a C++ function: the launcher is Python)" in message
    assert "'neighbour'" not in message  # a function's refusal does not refuse its neighbours


# ----------------------------------------------------------------------------- views with explicit strides
STRIDED = "breadth_b_strided.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_views_with_explicit_strides(schedule: str) -> None:
    m = _module(STRIDED, schedule)
    rows, stride = 7, 9
    x = torch.randn(rows * stride - 4, device=DEVICE)  # the last row is cut short: read as zeros
    y, yt, z, w = _full(rows, 6), _full(6, rows), _full(rows * 8 - 3), _full(5)
    m.strided(x, y, yt, z, w, stride)  # type: ignore[attr-defined]
    matrix = torch.cat([x.cpu(), torch.zeros(4)]).view(rows, stride)[:, :6].double()
    _close(y, matrix)
    _close(yt, matrix.T)
    _close(w, x.cpu()[0:15:3].double())
    gaps = torch.arange(rows * 8 - 3) % 8 >= 6  # a stride of 8 leaves two elements of each row alone
    assert torch.isnan(z.cpu()[gaps]).all()
    _close(z.cpu()[~gaps], matrix.reshape(-1)[: int((~gaps).sum())])


def test_strided_views_that_do_not_translate_name_why() -> None:
    message = _refusals(
        """
__co__ void miscounted(global f32 [64] x, global f32 [4, 4] y) {
  parallel p by 1 : block {
    dma.copy x.view(4, 4 : 8).from(0, 0) => y;
  }
}
"""
    )
    # (views with explicit strides of a span_as of part of a tensor and of strided views translate:
    # tests/test_views_loops2.py; of a buffer: tests/test_buffer_views.py)
    assert "refused.co:4:15: error: in 'miscounted': '.view' with 2 extent(s), 1 stride(s)" in message


# ----------------------------------------------------------------------------- fragments of each thread
THREADFRAGS = "breadth_b_threadfrags.co"


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_fragments_of_each_thread(schedule: str) -> None:
    m = _module(THREADFRAGS, schedule)
    rows = 3
    x = torch.randn(rows, 64, device=DEVICE)
    y, top, colsum = _full(rows, 64), _full(rows, 16, 2), _full(rows, 16, 4)
    m.per_thread(x, y, top, colsum)  # type: ignore[attr-defined]
    v = 0.5 + x.double().view(rows, 16, 1, 4) * (
        torch.arange(2, dtype=torch.float64, device=DEVICE).view(1, 1, 2, 1) + 1.0
    )
    best = v.amax(3)
    _close(top, best)
    _close(y, (v[:, :, 1, :] - best[:, :, 1:2]).reshape(rows, 64))
    _close(colsum, v.sum(2))


def test_fragments_of_each_thread_with_what_has_no_loop_form_are_refused() -> None:
    message = _refusals(
        """
__co__ void all_reduced(global f32 [R, 64] x, global f32 [R, 16] y) {
  parallel r by R : block
  parallel t by 16 : thread {
    frag f32 [4] v;
    apply {j} in v.span { v.at(j) = x.at(r, t * 4 + j); }
    all_reduce_sum(v);
    y.at(r, t) = v.at(0);
  }
}
"""
    )
    assert "refused.co:6:5: error: 'all_reduced' is not translated" in message, message
    assert "a fragment operation in more than one unit or thread" in message


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_compare_and_swap_and_exchange_in_helpers(schedule: str) -> None:
    m = _module("breadth_b_atomics.co", schedule)
    n = 45
    ids = torch.randperm(n, device=DEVICE).to(torch.int32) + 1  # distinct, never 0
    slots, cell = torch.zeros(4, dtype=torch.int32, device=DEVICE), torch.zeros(1, dtype=torch.int32, device=DEVICE)
    won, prev = _full(n, dtype=torch.int32), _full(n, dtype=torch.int32)
    m.claims(ids, slots, won, prev, cell)  # type: ignore[attr-defined]
    slot_of = torch.arange(n) % 4
    for s in range(4):
        mine = ids.cpu()[slot_of == s].tolist()
        assert int(slots[s]) in mine  # one element of the slot claimed it
        olds = won.cpu()[slot_of == s].tolist()
        assert olds.count(0) == 1 and all(o in (0, int(slots[s])) for o in olds)  # the others saw the winner
    # the exchanges form one chain: each old value is 0 or another id, each id seen at most once
    olds = prev.cpu().tolist()
    assert olds.count(0) == 1 and len(set(olds)) == n and set(olds) - {0} <= set(ids.cpu().tolist())
    assert int(cell[0]) in ids.cpu().tolist() and int(cell[0]) not in olds
