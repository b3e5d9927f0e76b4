"""Rewrites of a kernel's statements before it is lifted (croq2triton/emit/kernels.py): rings of
pipeline stages kept in one flat buffer (lift/slotted.py), warp roles whose main loops are nests
(lift/collapse.py), ``yield`` under a condition the block agrees on (lift/yields.py), ``break`` in a
loop over an integer extent (lift/exits.py).  Each program runs under both schedules in the
interpreter against float64 torch on ragged sizes, outputs poisoned with NaN."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from kernel_util import DEVICE, assert_near_max, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.frontend import ast as A
from croq2triton.frontend.driver import parse
from croq2triton.lift.slotted import slotted_buffers

SCHEDULES = ["source", "auto"]
H = torch.float16

# one producer, two consumers; the ring of stages is one flat buffer of STAGES x 48 rows (a stage
# 48 rows wide: no power of two) picked as a part, the consumers' rows a part of the stage
FLAT_RING_ROWS = """
#define STAGES 2
__co__ void mm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 48), cdiv(N, 32)] : block {
    shared event full[STAGES], empty[STAGES];
    shared f16 [STAGES * 48, 16] sa;
    shared f16 [STAGES * 32, 16] sb;
    parallel wg by 3 : group-4 {
      inthreads.async (wg == 0) {
        foreach k in [cdiv(K, 16)] {
          stage = k % STAGES;
          wait empty[stage];
          tma.copy.async<full[stage]> a.subspan(48, 16).at(bm, k) => sa.subspan(48, 16).at(stage, 0);
          tma.copy.async<full[stage]> b.subspan(32, 16).at(bn, k) => sb.subspan(32, 16).at(stage, 0);
          trigger full[stage];
        }
      }
      inthreads.async (wg >= 1) {
        acc = mma.fill.f32 0.0f;
        foreach s in [STAGES] trigger empty[s];
        foreach k in [cdiv(K, 16)] {
          stage = k % STAGES;
          wait full[stage];
          mma.row.row acc, sa.subspan(48, 16).at(stage, 0).subspan(24, 16).at(wg - 1, 0),
                           sb.subspan(32, 16).at(stage, 0);
          trigger empty[stage];
        }
        mma.store acc, c.subspan(24, 32).at(bm * 2 + wg - 1, bn);
      }
    }
  }
}
"""

# the same ring laid out along K: the stages side by side in a [32, STAGES * 16] buffer, three of
# them, copies with dma.copy.async and a wait (no events)
FLAT_RING_COLUMNS = """
#define STAGES 3
__co__ void mm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    shared f16 [32, STAGES * 16] sa;
    shared f16 [32, STAGES * 16] sb;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach k in [cdiv(K, 16)] {
        fa = dma.copy.async.zfill a.subspan(32, 16).at(bm, k) => sa.subspan(32, 16).at(0, k % STAGES);
        fb = dma.copy.async.zfill b.subspan(32, 16).at(bn, k) => sb.subspan(32, 16).at(0, k % STAGES);
        wait fa, fb;
        mma.row.row acc, sa.subspan(32, 16).at(0, k % STAGES), sb.subspan(32, 16).at(0, k % STAGES);
      }
      mma.store acc, c.subspan(32, 32).at(bm, bn);
    }
  }
}
"""

# the roles' K loops written as nests: k1 over pairs of K steps, k2 over the pair
NESTED_ROLES = """
#define S 2
__co__ void mm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    shared event full[S], empty[S] = ready;
    shared f16 [32, 16] sa[S];
    shared f16 [32, 16] sb[S];
    parallel wg by 2 : group-4 {
      inthreads.async (wg == 0) {
        foreach k1 in [cdiv(K, 32)] {
          foreach k2 in [2] {
            order = k1 * 2 + k2;
            wait empty.at(order);
            fa = tma.copy.async a.subspan(32, 16).at(bm, order) => sa[order % S];
            fb = tma.copy.async b.subspan(32, 16).at(bn, order) => sb[order % S];
            trigger full.at(order) after fa, fb;
          }
        }
      }
      inthreads.async (wg == 1) {
        acc = mma.fill.f32 0.0f;
        foreach i in [cdiv(K, 32)] {
          foreach j in [2] {
            order = i * 2 + j;
            wait full.at(order);
            mma.row.row acc, sa[order % S], sb[order % S];
            trigger empty.at(order);
          }
        }
        mma.store acc, c.subspan(32, 32).at(bm, bn);
      }
    }
  }
}
"""

# persistent: each role walks the output tiles with the K loop inside a branch of its tile loop; the
# roles merge through the tile loop and the branch (it was once merged at the tile loop alone: one
# role's whole K loop ran before the other's, wrong results)
PERSISTENT_ROLES = """
#define S 2
__co__ void mm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  int tm = cdiv(M, 32);
  int total = tm * cdiv(N, 32);
  parallel p by 4 : block {
    shared event full[S], empty[S] = ready;
    shared f16 [32, 16] sa[S];
    shared f16 [32, 16] sb[S];
    parallel wg by 2 : group-4 {
      inthreads.async (wg == 0) {
        foreach it in [cdiv(total, 4)] {
          tile = it # p;
          if (tile < total) {
            foreach k in [cdiv(K, 16)] {
              order = it * cdiv(K, 16) + k;
              wait empty.at(order);
              fa = tma.copy.async a.subspan(32, 16).at(tile % tm, k) => sa[order % S];
              fb = tma.copy.async b.subspan(32, 16).at(tile / tm, k) => sb[order % S];
              trigger full.at(order) after fa, fb;
            }
          }
        }
      }
      inthreads.async (wg == 1) {
        foreach it in [cdiv(total, 4)] {
          tile = it # p;
          if (tile < total) {
            acc = mma.fill.f32 0.0f;
            foreach k in [cdiv(K, 16)] {
              order = it * cdiv(K, 16) + k;
              wait full.at(order);
              mma.row.row acc, sa[order % S], sb[order % S];
              trigger empty.at(order);
            }
            mma.store acc, c.subspan(32, 32).at(tile % tm, tile / tm);
          }
        }
      }
    }
  }
}
"""

# ``yield`` of the blocks past a run-time row count: before the MMAs of a warpgroup, at block level
# around an inner parallel, and inside an inner parallel with a block-level statement after it
YIELDS = """
__co__ void in_unit(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c, int rows) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block, by 1 : group-4 {
    if (bm * 32 >= rows) yield;
    acc = mma.fill.f32 0.0f;
    foreach k in [cdiv(K, 16)] {
      sa = dma.copy.zfill a.subspan(32, 16).at(bm, k) => shared;
      sb = dma.copy.zfill b.subspan(32, 16).at(bn, k) => shared;
      mma.row.row acc, sa, sb;
    }
    mma.store acc, c.subspan(32, 32).at(bm, bn);
  }
}

__co__ void at_block(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c, int rows) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block {
    if (bm * 32 >= rows) yield;
    parallel by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach k in [cdiv(K, 16)] {
        sa = dma.copy.zfill a.subspan(32, 16).at(bm, k) => shared;
        sb = dma.copy.zfill b.subspan(32, 16).at(bn, k) => shared;
        mma.row.row acc, sa, sb;
      }
      mma.store acc, c.subspan(32, 32).at(bm, bn);
    }
  }
}

__co__ void leaves_program(global f32 [M, N] x, global f32 [M, N] y, global f32 [M] s, int rows) {
  parallel bm by cdiv(M, 16) : block {
    shared f32 [16, N] t;
    parallel r by 16 : thread {
      if (bm * 16 >= rows) yield;
      foreach j in [N] {
        if (bm * 16 + r < M) t.at(r, j) = x.at(bm * 16 + r, j) * 2.0f;
      }
    }
    dma.copy t => y.view(16, N).from(bm * 16, 0);
    parallel r by 16 : thread {
      mutable f32 acc = 0.0f;
      foreach j in [N] { acc += t.at(r, j); }
      if (bm * 16 + r < M) s.at(bm * 16 + r) = acc;
    }
  }
}
"""

# ``break`` in a loop over an integer extent (``foreach i in 8``): each row sums its elements until
# the running sum passes a bound
BREAKS = """
__co__ void until(global f32 [M, 8] x, global f32 [M] s, f32 bound) {
  parallel r by M : thread {
    mutable f32 acc = 0.0f;
    foreach i in 8 {
      acc += x.at(r, i);
      if (acc > bound) break;
    }
    s.at(r) = acc;
  }
}
"""


def _module(src: str, schedule: str) -> object:
    out = translate_full(src, filename="rewrites.co", schedule=schedule)
    assert not out.failed, out.failed
    return load_source(out.source, f"rewrites_{schedule}_{abs(hash(src))}")


def _gemm(src: str, schedule: str, m: int, n: int, k: int) -> None:
    mod: Any = _module(src, schedule)
    a, b = randn(m, k, dtype=H, seed=m + k), randn(n, k, dtype=H, seed=n)
    c = poisoned(m, n)
    mod.mm(a, b, c)
    assert_near_max(c, a.double() @ b.double().T, 2e-3, f"mm under {schedule} at {m} x {n} x {k}")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_flat_ring_of_stages_is_an_array_of_slots(schedule: str) -> None:
    # M a multiple of the 48-row stage (the consumers' stores: c.subspan(24, 32) with rows 2 * bm + u)
    _gemm(FLAT_RING_ROWS, schedule, 96, 45, 100)
    _gemm(FLAT_RING_COLUMNS, schedule, 77, 45, 100)


def test_a_flat_ring_is_a_contraction_under_auto() -> None:
    for src in (FLAT_RING_ROWS, FLAT_RING_COLUMNS):
        out = translate_full(src, filename="ring.co", schedule="auto")
        assert not out.failed, out.failed
        assert "def mm_k0_t128x128(" in out.source  # the GEMM policy's variants (schedule/gemm.py)


def _slotted(src: str) -> dict[str, list[int]]:
    """The buffers of the first kernel of ``src`` after lift/slotted.py: name -> array extents."""
    tu = parse(src, "slots.co")
    top = next(n for n in tu.walk() if isinstance(n, A.Parallel))
    return {
        d.name: [int(x.value) for x in d.dims]
        for n in slotted_buffers(top).walk()
        if isinstance(n, A.SpannedDecl)
        for d in n.items
    }  # type: ignore[attr-defined]


def test_which_buffers_become_slots() -> None:
    assert _slotted(FLAT_RING_ROWS) == {"sa": [2], "sb": [2]}
    assert _slotted(FLAT_RING_COLUMNS) == {"sa": [3], "sb": [3]}
    whole = FLAT_RING_ROWS.replace("trigger full[stage];", "trigger full[stage];\n          dma.copy sb => b;")
    assert _slotted(whole) == {"sa": [2], "sb": []}  # also copied as a whole: left as written
    other = FLAT_RING_ROWS.replace(
        "sb.subspan(32, 16).at(stage, 0);\n          trigger", "sb.subspan(16, 16).at(stage, 0);\n          trigger", 1
    )
    assert _slotted(other) == {"sa": [2], "sb": []}  # parts of two widths
    fixed = FLAT_RING_COLUMNS.replace("at(0, k % STAGES), sb", "at(0, 0), sb")
    assert _slotted(fixed) == {"sa": [3], "sb": [3]}  # slot 0 read each step: still slots
    window = FLAT_RING_COLUMNS.replace("at(0, k % STAGES), sb", "at(0, 0).view(32, 8).from(0, 4), sb")
    assert _slotted(window)["sa"] == [3]  # a view of a slot is a view of the array's element
    offset = FLAT_RING_COLUMNS.replace(
        "mma.row.row acc, sa.subspan(32, 16).at(0, k % STAGES)", "mma.row.row acc, sa.view(32, 16).from(0, 8)"
    )
    assert _slotted(offset)["sa"] == []  # a window across two slots: left as written
    assert (
        _slotted(
            FLAT_RING_ROWS.replace(
                "sa.subspan(48, 16).at(stage, 0).subspan", "sa.subspan(48, 16).at(wg - 1, 0).subspan"
            )
        )["sa"]
        == []
    )


# the consumers' rows read straight from the flat ring as parts of their own width: the part
# `stage * 2 + wg - 1` of 24 rows lies in the slot `stage` of 48 rows (lift/nestedparts.py)
FINE = "sa.subspan(24, 16).at(stage * 2 + wg - 1, 0)"
FLAT_RING_FINE = FLAT_RING_ROWS.replace("sa.subspan(48, 16).at(stage, 0).subspan(24, 16).at(wg - 1, 0)", FINE)


def test_finer_parts_of_a_slot_are_parts_of_the_slot() -> None:
    assert FINE in FLAT_RING_FINE
    assert _slotted(FLAT_RING_FINE) == {"sa": [2], "sb": [2]}
    # the same, spelled through the level's bound and with the constant first
    bound = FLAT_RING_FINE.replace(FINE, "sa.subspan(48 / (#wg - 1), 16).at(-1 + (#wg - 1) * stage + wg, 0)")
    assert _slotted(bound) == {"sa": [2], "sb": [2]}
    # remainders not provably inside a slot: left as written (`wg >= 0` lets `wg - 1` be -1; a
    # third consumer's rows would reach the next slot; `stage + wg` has no multiple of 2 to split)
    for cond, part in [
        ("inthreads.async (wg >= 1)", "sa.subspan(24, 16).at(stage * 2 + wg - 2, 0)"),
        ("inthreads.async (wg >= 1)", "sa.subspan(24, 16).at(stage * 2 + wg, 0)"),
        ("inthreads.async (wg >= 1)", "sa.subspan(24, 16).at(stage + wg - 1, 0)"),
    ]:
        assert _slotted(FLAT_RING_FINE.replace(FINE, part).replace("inthreads.async (wg >= 1)", cond))["sa"] == []


@pytest.mark.parametrize("as_written", [False, True])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_finer_parts_of_a_flat_ring_compute_the_gemm(
    schedule: str, as_written: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if as_written:  # the warp roles collapsed and lifted as they stand (the contraction proof off)
        monkeypatch.setenv("CROQ2TRITON_NO_CONTRACTION", "1")
    _gemm(FLAT_RING_FINE, schedule, 96, 45, 100)


def test_finer_parts_of_a_flat_ring_are_a_contraction_under_auto() -> None:
    out = translate_full(FLAT_RING_FINE, filename="ring.co", schedule="auto")
    assert not out.failed, out.failed
    assert "def mm_k0_t128x128(" in out.source


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_roles_with_nested_main_loops_merge_at_the_innermost(schedule: str) -> None:
    _gemm(NESTED_ROLES, schedule, 77, 45, 100)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_persistent_roles_merge_through_the_branch_of_their_tile_loop(schedule: str) -> None:
    _gemm(PERSISTENT_ROLES, schedule, 77, 45, 100)
    _gemm(PERSISTENT_ROLES, schedule, 150, 130, 40)  # more tiles than the 4 workers


def test_roles_whose_branches_differ_are_refused() -> None:
    # the consumer's branch tests another condition: no one structure to merge through, and the K
    # loops under the branches would run one role's whole loop before the other's
    src = PERSISTENT_ROLES.replace(
        "if (tile < total) {\n            acc", "if (tile <= total - 1) {\n            acc", 1
    )
    # a condition that differs (the consumer skips the last tile: the producer would wait forever)
    differ = PERSISTENT_ROLES.replace(
        "if (tile < total) {\n            acc", "if (tile < total - 1) {\n            acc", 1
    )
    for changed in (src, differ):
        assert changed != PERSISTENT_ROLES
        out = translate_full(changed, filename="persist.co")
        assert "mm" in out.failed
        (d,) = out.failed["mm"].diagnostics
        assert "does not translate" in d.message and "events" in d.message, d.message


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_roles_binding_one_value_otherwise_merge(schedule: str) -> None:
    # the same condition over a name the consumer binds to the same value spelled otherwise: names bound
    # once are compared by value (lift/collapse.py), so the roles merge through the branch
    same_value = PERSISTENT_ROLES.replace(
        "          tile = it # p;\n          if (tile < total) {\n            acc",
        "          tile = (it # p) + 0;\n          if (tile < total) {\n            acc",
        1,
    )
    assert same_value != PERSISTENT_ROLES
    _gemm(same_value, schedule, 150, 130, 40)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_uniform_yield_leaves_every_statement_after_it(schedule: str) -> None:
    mod: Any = _module(YIELDS, schedule)
    m, n, k, rows = 77, 45, 40, 50  # blocks from row 64 on leave
    a, b = randn(m, k, dtype=H, seed=1), randn(n, k, dtype=H, seed=2)
    ref = a.double() @ b.double().T
    for fn in ("in_unit", "at_block"):
        c = poisoned(m, n)
        getattr(mod, fn)(a, b, c, rows)
        assert_near_max(c[:64], ref[:64], 2e-3, fn)
        assert bool(c[64:].isnan().all()), f"{fn}: the blocks that yield wrote their tiles"
    x = randn(m, n, seed=3)
    y, s = poisoned(m, n), poisoned(m)
    mod.leaves_program(x, y, s, rows)
    rows_run = 64  # the blocks of 16 rows that start below 50
    assert_near_max(y[:rows_run], 2 * x[:rows_run].double(), 1e-6, "leaves_program y")
    assert_near_max(s[:rows_run], 2 * x[:rows_run].double().sum(1), 1e-5, "leaves_program s")
    assert bool(y[rows_run:].isnan().all()) and bool(s[rows_run:].isnan().all())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_break_in_a_loop_over_an_integer_extent(schedule: str) -> None:
    mod: Any = _module(BREAKS, schedule)
    m, bound = 37, 0.8
    x = randn(m, 8, seed=4)
    s = poisoned(m)
    mod.until(x, s, bound)
    ref = torch.zeros(m, dtype=torch.float64, device=DEVICE)
    for r in range(m):
        acc = 0.0
        for i in range(8):
            acc += float(x[r, i])
            if acc > bound:
                break
        ref[r] = acc
    assert_near_max(s, ref, 1e-6, f"until under {schedule}")


# one thread of the block builds the offsets of a CSR layout: offsets[e + 1] of an [E + 1] tensor,
# e < E (the verifier once found its index unbounded: a zero broadcast had no bounds)
PREFIX_LAYOUT = """
__co__ void layout(global s32 [64] counts, global s32 [64 + 1] offsets, global s32 [64] starts) {
  parallel tid by 32 : thread {
    inthreads (tid == 0) {
      s32 prefix = 0;
      offsets.at(0) = 0;
      foreach e in [64] {
        s32 count = counts.at(e);
        offsets.at(e + 1) = prefix + count;
        starts.at(e) = prefix;
        prefix = prefix + count;
      }
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_one_thread_writes_the_element_past_each_count(schedule: str) -> None:
    mod: Any = _module(PREFIX_LAYOUT, schedule)
    counts = torch.randint(0, 9, (64,), dtype=torch.int32, generator=torch.Generator().manual_seed(5)).to(DEVICE)
    offsets = torch.full((65,), -1, dtype=torch.int32, device=DEVICE)
    starts = torch.full((64,), -1, dtype=torch.int32, device=DEVICE)
    mod.layout(counts, offsets, starts)
    csum = torch.cumsum(counts.long(), 0)
    assert offsets.tolist() == [0, *csum.tolist()]
    assert starts.tolist() == [0, *csum[:-1].tolist()]


# every thread folds the block's partials from shared memory under a condition on the element (an
# if, and a conditional expression): schedule/selectfold.py leaves the loop as written where a
# select sits in the condition (it once dropped the loop and left its counter read); thread 0 alone
# folding them combines its lane's condition with a folded scalar's (runtime/interpreter_compare.py)
GUARDED_PARTIALS = """
__co__ void pos_if(global f32 [M, N] x, global f32 [M] s) {
  parallel r by M : block {
    shared f32 [32] part;
    parallel t by 32 : thread {
      mutable f32 acc = 0.0f;
      foreach j in [cdiv(N, 32)] {
        if (j * 32 + t < N) acc += x.at(r, j * 32 + t);
      }
      part.at(t) = acc;
      sync.shared;
      mutable f32 tot = 0.0f;
      foreach k in [32] {
        f32 v = part.at(k);
        if (v > 0.0f) tot += v;
      }
      if (t == 0) s.at(r) = tot;
    }
  }
}

__co__ void pos_thread0(global f32 [M, N] x, global f32 [M] s) {
  parallel r by M : block {
    shared f32 [32] part;
    parallel t by 32 : thread {
      mutable f32 acc = 0.0f;
      foreach j in [cdiv(N, 32)] {
        if (j * 32 + t < N) acc += x.at(r, j * 32 + t);
      }
      part.at(t) = acc;
      sync.shared;
      if (t == 0) {
        mutable f32 tot = 0.0f;
        foreach k in [32] {
          f32 v = part.at(k);
          if (v > 0.0f) tot += v;
        }
        s.at(r) = tot;
      }
    }
  }
}

__co__ void pos_ternary(global f32 [M, N] x, global f32 [M] s) {
  parallel r by M : block {
    shared f32 [32] part;
    parallel t by 32 : thread {
      mutable f32 acc = 0.0f;
      foreach j in [cdiv(N, 32)] {
        if (j * 32 + t < N) acc += x.at(r, j * 32 + t);
      }
      part.at(t) = acc;
      sync.shared;
      if (t == 0) {
        mutable f32 tot = 0.0f;
        foreach k in [32] { tot += part.at(k) > 0.0f ? part.at(k) : 0.0f; }
        s.at(r) = tot;
      }
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_partials_folded_under_a_condition_on_each(schedule: str) -> None:
    mod: Any = _module(GUARDED_PARTIALS, schedule)
    m, n = 7, 83
    x = randn(m, n, seed=10)
    part = torch.zeros(m, 32, dtype=torch.float64, device=DEVICE)
    for j in range(n):
        part[:, j % 32] += x[:, j].double()
    for fn in ("pos_if", "pos_thread0", "pos_ternary"):
        s = poisoned(m)
        getattr(mod, fn)(x, s)
        assert_near_max(s, part.clamp(min=0).sum(1), 1e-5, f"{fn} under {schedule}")


# CSR row sums: each block walks its row's nonzeros with a while loop on a condition the block
# shares, each thread accumulating its own column (the accumulator becomes one value a thread)
CSR_WHILE = """
__co__ void csr_rows(global s32 [R1] offs, global s32 [NZ] cols, global f32 [NZ] vals, global f32 [C, 32] x,
                     global f32 [R, 32] out) {
  parallel r by R : block, c by 32 : thread {
    f32 acc = 0.0f;
    s32 j = offs.at(r);
    while (j < offs.at(r + 1)) {
      acc += vals.at(j) * x.at(cols.at(j), c);
      j = j + 1;
    }
    out.at(r, c) = acc;
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_while_loop_accumulates_one_value_a_thread(schedule: str) -> None:
    mod: Any = _module(CSR_WHILE, schedule)
    g = torch.Generator().manual_seed(11)
    rows, ncols = 13, 9
    counts = torch.randint(0, 6, (rows,), generator=g)
    offs = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(counts, 0)]).int().to(DEVICE)
    nz = int(offs[-1])
    cols = torch.randint(0, ncols, (nz,), generator=g).int().to(DEVICE)
    vals, x = randn(nz, seed=12), randn(ncols, 32, seed=13)
    out = poisoned(rows, 32)
    mod.csr_rows(offs, cols, vals, x, out)
    ref = torch.zeros(rows, 32, dtype=torch.float64, device=DEVICE)
    for r in range(rows):
        for j in range(int(offs[r]), int(offs[r + 1])):
            ref[r] += float(vals[j]) * x[int(cols[j])].double()
    assert_near_max(out, ref, 1e-6, f"csr_rows under {schedule}")


# a named span_as of a tensor refined by a view in a copy: a [M, 5, 12] tensor read as [M, 60]
NAMED_SPAN_AS = """
__co__ void mm(global f16 [M, 5, 12] a, global f16 [N, 60] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 32), cdiv(N, 32)] : block, by 1 : group-4 {
    a2 = a.span_as([M, 60]);
    acc = mma.fill.f32 0.0f;
    foreach k in [4] {
      sa = dma.copy.zfill a2.subspan(32, 16).at(bm, k) => shared;
      sb = dma.copy.zfill b.subspan(32, 16).at(bn, k) => shared;
      mma.row.row acc, sa, sb;
    }
    mma.store acc, c.subspan(32, 32).at(bm, bn);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_named_span_as_is_a_view_of_its_tensor(schedule: str) -> None:
    mod: Any = _module(NAMED_SPAN_AS, schedule)
    m, n = 37, 45
    a, b = randn(m, 5, 12, dtype=H, seed=14), randn(n, 60, dtype=H, seed=15)
    c = poisoned(m, n)
    mod.mm(a, b, c)
    assert_near_max(c, a.double().reshape(m, 60) @ b.double().T, 2e-3, f"named span_as under {schedule}")


# a block's loops over a staged row of run-time length (a [1, N] buffer, its extent F_D1 the power of two
# at or above N at launch): schedule/selectfold.py folds them (a max, a sum of exponentials, the stores of
# a function of the elements one tile store); near misses stay loops: one position past the buffer, a
# store of every element into one (the last step's wins), a store in reverse order (coefficient -1)
STAGED_ROWS = """
__co__ void soft(global f32 [M, N] x, global f32 [M, N] y) {
  parallel r by M : block {
    f = dma.copy x.subspan(1, N).at(r, 0) => shared;
    mutable f32 m = -inf;
    foreach j in [N] { m = __max(m, f.data.at(0, j)); }
    mutable f32 s = 0.0f;
    foreach j in [N] { s += __exp(f.data.at(0, j) - m); }
    foreach j in [N] { y.at(r, j) = __exp(f.data.at(0, j) - m) / s; }
  }
}

__co__ void past_end(global f32 [M, N] x, global f32 [M] y) {
  parallel r by M : block {
    f = dma.copy x.subspan(1, N).at(r, 0) => shared;
    mutable f32 m = -inf;
    foreach j in [N + 1] { m = __max(m, f.data.at(0, j)); }
    y.at(r) = m;
  }
}

__co__ void last_wins(global f32 [M, N] x, global f32 [M, 2] y) {
  parallel r by M : block {
    f = dma.copy x.subspan(1, N).at(r, 0) => shared;
    foreach j in [N] { y.at(r, 1) = f.data.at(0, j) * 2.0f; }
  }
}

__co__ void reversed(global f32 [M, N] x, global f32 [M, N] y) {
  parallel r by M : block {
    f = dma.copy x.subspan(1, N).at(r, 0) => shared;
    foreach j in [N] { y.at(r, N - 1 - j) = f.data.at(0, j) + 1.0f; }
  }
}
"""


def test_staged_row_of_runtime_length_folded() -> None:
    auto = translate_full(STAGED_ROWS, filename="rewrites.co", schedule="auto").source
    soft = auto.split("def soft_k0(")[1].split("@triton.jit")[0]
    assert "for j" not in soft and "tl.max(" in soft and "tl.sum(" in soft, soft
    assert "_rt.warps_for(_soft_k0_F_D1, 16)" in auto  # warps for the row's length, at launch
    for name in ("past_end", "last_wins", "reversed"):
        code = auto.split(f"def {name}_k0(")[1].split("@triton.jit")[0]
        assert "for j in range(" in code, code
    for schedule in SCHEDULES:
        mod: Any = _module(STAGED_ROWS, schedule)
        for m, n in ((3, 1), (3, 37), (2, 64), (2, 129)):
            x = randn(m, n, seed=n) * 3
            y = poisoned(m, n)
            mod.soft(x, y)
            assert_near_max(y, torch.softmax(x.double(), 1), 1e-5, f"soft {m}x{n} under {schedule}")
            y1 = poisoned(m)
            mod.past_end(x, y1)  # the position past the buffer reads its padding: 0
            assert_near_max(y1, x.double().amax(1).clamp(min=0), 0.0, f"past_end under {schedule}")
            y2 = poisoned(m, 2)
            mod.last_wins(x, y2)
            assert torch.equal(y2[:, 1], x[:, -1] * 2) and torch.isnan(y2[:, 0]).all()
            y3 = poisoned(m, n)
            mod.reversed(x, y3)
            assert torch.equal(y3, x.flip(1) + 1)
