"""Issue 28 (part R): warp roles, events and MMA forms that kernels bring, refused before
(tests/programs/breadth_r.co), each run in both schedules on ragged sizes with NaN-poisoned outputs
and compared with float64 torch (f16 inputs, f32 accumulation).

* a warp role whose condition picks threads of its units as well as the units (``w == 0 && t ==
  0``: the elected thread that issues the copies; ``g == 1 && t < 8``), units by a range (``w >= 1
  && w < 2``, ``w < 1``, ``g != 0``), and an ``inthreads`` of a sub-warp inside a role's loop: a
  role whose statements do not read the thread index computes the same on each of its threads
  (lift/rolepick.py);
* two consumer roles each with an accumulator of one name (``acc``): each role's own names are
  renamed apart when the roles collapse (lift/collapse.py; they were one variable, a silent
  mistranslation), a ``slot`` of the same value in each stays one;
* an event that several roles trigger: a generation completes when each of them has triggered it
  (lift/sequence.py);
* ``mma.load view, frag``: WGMMA's "RS" mode, the A operand loaded into a declared fragment, from a
  whole shared tile or a part of it, and in two warpgroups each with a fragment of its own (the
  units unrolled, lift/unroll.py; lift/mma.py ``mma_load_into``);
* ``inthreads.async`` among other statements: roles of a thread level, roles in a loop (of a thread
  or a unit level) ordered by an event, each an ``if`` over its lanes in the order written (lift/laneroles.py);
* an element of a fragment that the lanes of an ``apply`` add to (``rs.at(i) = rs.at(i) +
  acc.at(i, j)``, ``+=``): the element loop's sum (lift/lanesums.py); ``all_reduce_sum`` of such a
  fragment, whose lifted elements are the whole sums already;
* units that each issue an asynchronous MMA and wait on its future (a unit's own wait, not an
  event; lift/unroll.py);
* warp roles whose main loops name their counters apart (``foreach {kt}`` and ``foreach {k}`` over
  one domain; lift/collapse.py);
* named barriers (``__bar_sync`` / ``__bar_arrive``) reached by every thread alike, or inside one
  warp role (lift/calls.py, lift/collapse.py);
* a ``wait`` on a ``dma.any`` placeholder no copy has bound yet (nothing to wait for).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_near_max, diagnostics, load_once, poisoned, randn

PROGRAM = Path(__file__).parent / "programs" / "breadth_r.co"
SCHEDULES = ["source", "auto"]
F16 = torch.float16


def _mod(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


def _gemm(schedule: str, fn: str, m: int, n: int, k: int, b_kn: bool = False) -> None:
    a, b = randn(m, k, dtype=F16, seed=1), randn(n, k, dtype=F16, seed=2)
    c = poisoned(m, n)
    bt = b.T.contiguous() if b_kn else b
    getattr(_mod(schedule), fn)(a, bt, c)
    assert_near_max(c, a.double() @ b.double().T, 1e-5, fn)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(100, 70, 80), (64, 32, 32), (17, 45, 9)])
def test_an_elected_thread_producer_and_a_range_of_consumer_units(schedule: str, m: int, n: int, k: int) -> None:
    _gemm(schedule, "elected_producer", m, n, k)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(90, 130, 50), (64, 64, 16), (3, 7, 40)])
def test_a_sub_warp_inthreads_inside_a_producer_loop(schedule: str, m: int, n: int, k: int) -> None:
    _gemm(schedule, "nested_elected", m, n, k, b_kn=True)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("m", [40, 16, 5])
def test_an_event_two_producer_roles_trigger(schedule: str, m: int) -> None:
    x, y = randn(m, 64), poisoned(m, 64)
    _mod(schedule).two_producers(x, y)  # type: ignore[attr-defined]
    want = torch.cat([x[:, 32:], x[:, :32]], 1).double()
    assert_near_max(y, want, 0.0, "two_producers")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("m", [21, 8])
def test_an_event_two_consumer_roles_trigger_back(schedule: str, m: int) -> None:
    x, y = randn(m, 32), poisoned(m, 32)
    _mod(schedule).handshake(x, y)  # type: ignore[attr-defined]
    want = torch.cat([x[:, 16:], x[:, :16]], 1).double()
    assert_near_max(y, want, 0.0, "handshake")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(100, 50, 40), (64, 32, 16), (7, 33, 70)])
def test_rs_mode_a_loaded_into_a_declared_fragment(schedule: str, m: int, n: int, k: int) -> None:
    _gemm(schedule, "rs_gemm", m, n, k)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(70, 100, 72), (64, 64, 32), (9, 5, 20)])
def test_rs_mode_from_parts_of_a_shared_tile(schedule: str, m: int, n: int, k: int) -> None:
    _gemm(schedule, "rs_parts", m, n, k, b_kn=True)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(200, 40), (128, 32), (30, 7)])
def test_units_that_wait_on_their_own_mma_futures(schedule: str, m: int, n: int) -> None:
    _gemm(schedule, "unit_futures", m, n, 32)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [150, 64, 5])
def test_named_barriers_among_a_blocks_threads(schedule: str, n: int) -> None:
    x, y = randn(n), poisoned(n)
    _mod(schedule).bar_reverse(x, y)  # type: ignore[attr-defined]
    pad = -(-n // 64) * 64
    xd = torch.nn.functional.pad(x.double(), (0, pad - n)).reshape(-1, 64)
    want = (xd.flip(1) * 2 + 1).reshape(-1)[:n]
    assert_near_max(y, want, 1e-6, "bar_reverse")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("m", [19, 8])
def test_a_wait_on_a_placeholder_no_copy_bound_yet(schedule: str, m: int) -> None:
    x, y = randn(m, 32), poisoned(m, 32)
    _mod(schedule).wait_placeholder(x, y)  # type: ignore[attr-defined]
    want = torch.cat([x[:, 16:], x[:, :16]], 1).double()
    assert_near_max(y, want, 0.0, "wait_placeholder")


def _diagnostics(source: str) -> str:
    return diagnostics(source, "f.co")


_ROLES = """
__co__ void f(global f32 [64] x, global f32 [64] y, int limit) {{
  parallel p by 1 : block {{
    shared event {decl};
    shared f32 [64] s;
    parallel g by 2 : group-4, t by 128 : thread {{
      inthreads.async ({first}) {{
        {body}
      }}
      inthreads.async (g == 1) {{
        {other}
      }}
    }}
  }}
}}
"""

REFUSED = [
    # threads picked at launch, in a role that does more than wait: it may not run at all
    (dict(decl="e", first="g == 0 && t < limit", body="dma.copy x => s; trigger e;", other="wait e; dma.copy s => y;"),
     "a warp role whose threads are picked by a value known at launch only"),
    # no thread
    (dict(decl="e", first="g == 0 && t > 200", body="dma.copy x => s; trigger e;", other="wait e; dma.copy s => y;"),
     "a warp role whose condition picks no thread"),
    # an explicit arrival count that several roles reach: which arrivals complete it is not known
    (dict(decl="<256> e = ready", first="g == 0", body="wait e; trigger e;", other="trigger e;"),
     "the event 'e' of an explicit arrival count, triggered by several warp roles"),
    # a named barrier two roles meet orders them: not kept
    (dict(decl="e", first="g == 0", body="dma.copy x => s; __bar_arrive(1, 256);",
          other="__bar_sync(1, 256); dma.copy s => y;"),
     "a named barrier ('__bar_sync') that several warp roles meet"),
]  # fmt: skip


@pytest.mark.parametrize(("parts", "message"), REFUSED)
def test_role_forms_that_stay_refused(parts: dict[str, str], message: str) -> None:
    assert message in _diagnostics(_ROLES.format(**parts))


def test_a_named_barrier_under_a_condition_on_the_thread_stays_refused() -> None:
    source = """
__co__ void f(global f32 [64] x, global f32 [64] y) {
  parallel p by 1 : block {
    shared f32 [64] s;
    parallel t by 64 : thread {
      if (t < 32) {
        s.at(t) = x.at(t);
        __bar_arrive(1, 64);
      } else {
        __bar_sync(1, 64);
        y.at(t) = s.at(t - 32);
      }
    }
  }
}
"""
    assert "a named barrier ('__bar_arrive') under a condition on the thread index" in _diagnostics(source)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("n", [100, 64, 7])
def test_roles_of_a_thread_level(schedule: str, n: int) -> None:
    x, y = randn(n), poisoned(n)
    _mod(schedule).thread_roles(x, y)  # type: ignore[attr-defined]
    first = (torch.arange(n) % 64) < 32
    want = torch.where(first, x.double().cpu() * 2, -x.double().cpu())
    assert_near_max(y, want, 0.0, "thread_roles")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("m", [10, 4, 1])
def test_roles_of_a_thread_level_ordered_by_an_event_in_a_loop(schedule: str, m: int) -> None:
    x, y = randn(m, 64), poisoned(m, 64)
    _mod(schedule).thread_handoff(x, y)  # type: ignore[attr-defined]
    assert_near_max(y, x.double().flip(1), 0.0, "thread_handoff")


_LANE_ROLES = """
__co__ void f(global f32 [64] x, global f32 [64] y) {{
  parallel p by 1 : block {{
    shared f32 [64] s;
    shared event ready;
    parallel t by 64 : thread {{
      foreach r in [2] {{
        inthreads.async (t < 32) {{
          {first}
        }}
        inthreads.async (t >= 32) {{
          {second}
        }}
      }}
    }}
  }}
}}
"""

LANE_REFUSED = [
    # the wait is written before the trigger it waits for: the source's order is not the events'
    (dict(first="wait ready; y.at(t) = s.at(t + 32);", second="s.at(t) = x.at(t); trigger ready;"),
     "'inthreads.async' with a wait written before the trigger it waits for"),
    # waited twice a trip, triggered once: a trip's waits are not that trip's triggers
    (dict(first="s.at(t) = x.at(t); trigger ready;", second="wait ready; wait ready; y.at(t) = s.at(t - 32);"),
     "'inthreads.async' that wait on the event 'ready' and trigger it unequally often"),
]  # fmt: skip


@pytest.mark.parametrize(("parts", "message"), LANE_REFUSED)
def test_thread_level_role_forms_that_stay_refused(parts: dict[str, str], message: str) -> None:
    assert message in _diagnostics(_LANE_ROLES.format(**parts))


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(200, 50, 40), (128, 32, 16), (70, 9, 23)])
def test_rs_mode_a_fragment_of_each_warpgroup(schedule: str, m: int, n: int, k: int) -> None:
    _gemm(schedule, "rs_units", m, n, k)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(200, 70, 96), (128, 64, 32), (33, 5, 50)])
def test_two_consumer_roles_with_an_accumulator_each_of_one_name(schedule: str, m: int, n: int, k: int) -> None:
    _gemm(schedule, "gemm_two_roles", m, n, k)


def test_a_name_bound_around_roles_that_several_roles_assign_stays_refused() -> None:
    source = """
__co__ void f(global f32 [64] x, global f32 [64] y) {
  parallel p by 1 : block {
    shared event e;
    shared f32 [64] s;
    mutable int n = 0;
    parallel g by 2 : group-4 {
      inthreads.async (g == 0) {
        n = 1;
        dma.copy x => s;
        trigger e;
      }
      inthreads.async (g == 1) {
        n = 2;
        wait e;
        dma.copy s => y;
      }
    }
  }
}
"""
    assert "'n', bound around warp roles and assigned by several of them" in _diagnostics(source)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n", "k"), [(200, 70, 96), (128, 64, 32), (40, 9, 20)])
def test_an_elected_producer_and_a_consumer_role_of_two_units(schedule: str, m: int, n: int, k: int) -> None:
    _gemm(schedule, "consumer_range", m, n, k)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("m", "n"), [(150, 70), (64, 32), (5, 3)])
def test_roles_inside_a_loop_of_a_unit_level(schedule: str, m: int, n: int) -> None:
    _gemm(schedule, "loop_roles", m, n, 32)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("m", [100, 64, 9])
def test_sums_of_an_mma_tile_by_apply_and_all_reduce_sum(schedule: str, m: int) -> None:
    a, b = randn(m, 32, dtype=F16, seed=3), randn(48, 32, dtype=F16, seed=4)
    rows, squares, cols = poisoned(m), poisoned(m), poisoned(m, 48)
    _mod(schedule).tile_sums(a, b, rows, squares, cols)  # type: ignore[attr-defined]
    c = a.double() @ b.double().T
    assert_near_max(rows, c.sum(1), 1e-5, "row sums")
    assert_near_max(squares, 1 + (c * c).sum(1), 1e-5, "row sums of squares")
    pad = -(-m // 64) * 64
    blocks = torch.nn.functional.pad(c, (0, 0, 0, pad - m)).reshape(-1, 64, 48).sum(1)  # each block's columns
    want = blocks.repeat_interleave(64, 0)[:m]
    assert_near_max(cols, want, 1e-5, "column sums")


_APPLY = """
__co__ void f(global f16 [64, 32] a, global f16 [64, 32] b, global f32 [64] y) {{
  parallel p by 1 : block {{
    a_s = dma.copy a => shared;
    b_s = dma.copy b => shared;
    parallel g by 1 : group-4 {{
      acc = mma.fill.f32 0.0f;
      mma.row.row acc, a_s, b_s;
      frag f32 [64] rs {{1.0f}};
      {body}
      apply {{i}} in rs.span
        y.at(i) = rs.at(i);
    }}
  }}
}}
"""

APPLY_REFUSED = [
    # a fragment no apply sums into: its owners' layout is not one that all_reduce_sum sums over
    ("all_reduce_sum(rs);", "an 'all_reduce_sum' of a fragment that no 'apply' sums into"),
    # the added term reads the sum itself: not a sum of the elements' terms
    ("apply {i, j} in acc.span rs.at(i) = rs.at(i) + rs.at(i) * acc.at(i, j);",
     "a buffer element that several threads write"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "message"), APPLY_REFUSED)
def test_apply_sum_forms_that_stay_refused(body: str, message: str) -> None:
    assert message in _diagnostics(_APPLY.format(body=body))
