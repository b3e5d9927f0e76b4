"""The tile-IR path for copies (lift/copies.py): shared and local buffers as register tiles,
``dma.copy`` in every direction with tails, windows, parts of buffers and futures; numerics against
torch on ragged sizes with NaN-poisoned outputs in both schedules; per-thread windows copied into
each thread's own buffer (lift/lanecopies.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, poisoned

import croq2triton
from croq2triton.api import translate_full
from croq2triton.tir.dump import dump

SCHEDULES = ("source", "auto")


def _load(tmp_path: Path, name: str, source: str, schedule: str) -> object:
    path = tmp_path / f"{name}.co"
    path.write_text(source)
    return croq2triton.load(path, schedule=schedule)


def _paths(source: str) -> dict[str, list[object]]:
    """The tile-IR kernels of each function (every function translates)."""
    out = translate_full(source, filename="t.co")
    assert not out.failed, out.failed
    return out.ir


SHARED_TILES = """
__co__ void scale_add(global f32 [M, N] a, global f32 [M, N] b, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 32)] : block {
    shared f32 [16, 32] sa;
    fa = dma.copy.async a.subspan(16, 32).at(bm, bn) => sa;
    fb = dma.copy b.subspan(16, 32).at(bm, bn) => shared;
    wait fa;
    shared f32 [16, 32] r;
    parallel {i, j} by [16, 32] : thread
      r.at(i, j) = 2.0f * sa.at(i, j) + fb.data.at(i, j);
    dma.copy r => out.subspan(16, 32).at(bm, bn);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_tiles_through_shared_buffers(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "scale_add", SHARED_TILES, schedule)
    a, b = torch.randn(37, 45, device=DEVICE), torch.randn(37, 45, device=DEVICE)
    out = poisoned(37, 45)
    mod.scale_add(a, b, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, 2 * a + b)


def test_the_ir_of_a_copy_kernel() -> None:
    ir = _paths(SHARED_TILES)
    (kernel,) = ir["scale_add"]
    text = dump(kernel)  # type: ignore[arg-type]
    for line in [
        "  rows: i32[16, 1] = tl.arange(0, 16)[:, None]  @5",
        "  offs: i32[16, 1] = bm * 16 + rows  @5",
        # blocks inside both tensors copy without masks (schedule/interior.py)
        "  if (bm * 16 + 15 < M) & (bn * 32 + 31 < N)  @3",
        "    sa = load a_ptr[offs, offs_2] (nan outside when sanitizing)  @5",
        "    mask: i1[16, 32] = (offs < M) & (offs_2 < N)  @5",
        "    sa = load a_ptr[offs, offs_2] mask mask other 0.0 (nan outside when sanitizing)  @5",
        "    fb = load b_ptr[offs, offs_2] mask mask other 0.0 (nan outside when sanitizing)  @6",
        "    r: f32[16, 32] = 2.0 * sa + fb  @10",
        "    store out_ptr[offs, offs_2] mask mask = r  @11",
    ]:
        assert line in text, text


TAIL = """
__co__ void pad_rows(global s32 [R, 24] x, global s32 [G, 8, 24] out) {
  parallel g by G : block {
    shared s32 [8, 24] buf;
    dma.copy x.view(6, 24).from(g * 6, 0) => buf;
    dma.copy buf => out.subspan(1, 8, 24).at(g, 0, 0).sqz();
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_window_smaller_than_its_buffer_fills_the_rest_with_zeros(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "pad_rows", TAIL, schedule)
    rows, groups = 17, 3  # the last window has 5 rows of x
    x = torch.randint(1, 100, (rows, 24), dtype=torch.int32, device=DEVICE)
    out = torch.full((groups, 8, 24), -7, dtype=torch.int32, device=DEVICE)
    mod.pad_rows(x, out)  # type: ignore[attr-defined]
    ref = torch.zeros(groups, 8, 24, dtype=torch.int32, device=DEVICE)
    for g in range(groups):
        n = min(6, rows - 6 * g)
        ref[g, :n] = x[6 * g : 6 * g + n]
    torch.testing.assert_close(out, ref)


HALVES = """
__co__ void side_by_side(global f16 [M, 16] x, global f16 [M, 16] y, global f16 [M, 32] out) {
  parallel p by cdiv(M, 4) : block {
    shared f16 [4, 32] buf;
    dma.copy x.subspan(4, 16).at(p, 0) => buf.subspan(4, 16).at(0, 0);
    dma.copy y.subspan(4, 16).at(p, 0) => buf.subspan(4, 16).at(0, 1);
    dma.copy buf => out.subspan(4, 32).at(p, 0);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_copies_into_parts_of_a_buffer_keep_the_rest(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "side_by_side", HALVES, schedule)
    x, y = torch.randn(10, 16, device=DEVICE).half(), torch.randn(10, 16, device=DEVICE).half()
    out = poisoned(10, 32, dtype=torch.float16)
    mod.side_by_side(x, y, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, torch.cat([x, y], dim=1))


LOCAL_AND_GLOBAL = """
__co__ void clamp_copy(global s32 [N] x, global s32 [N] y, global s32 [N] z) {
  parallel p by cdiv(N, 128) : block {
    l = dma.copy x.subspan(128).at(p) => local;
    parallel t by 128 : thread {
      if (l.data.at(t) < 0)
        l.data.at(t) = 0;
    }
    dma.copy l => y.subspan(128).at(p);
    window = x.subspan(128).at(p);
    dma.copy window => z.subspan(128).at(p);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_local_buffer_written_under_a_condition_and_a_copy_between_tensors(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "clamp_copy", LOCAL_AND_GLOBAL, schedule)
    x = torch.randint(-50, 50, (300,), dtype=torch.int32, device=DEVICE)
    y = torch.full((300,), 9999, dtype=torch.int32, device=DEVICE)
    z = torch.full((300,), 9999, dtype=torch.int32, device=DEVICE)
    mod.clamp_copy(x, y, z)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, torch.clamp(x, min=0))
    torch.testing.assert_close(z, x)
    ir = _paths(LOCAL_AND_GLOBAL)
    assert len(ir["clamp_copy"]) == 1


# a thread reading another thread's element (the copy's buffer in scratch memory, lift/scratch.py),
# and a near miss: a copy whose view depends on the thread
REVERSED = """
__co__ void reverse16(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 16) : block {
    s = dma.copy.zfill x.subspan(16).at(p) => shared;
    shared f32 [16] r;
    parallel t by 16 : thread
      r.at(t) = s.data.at(15 - t);
    dma.copy r => y.subspan(16).at(p);
  }
}
"""

PER_THREAD = """
__co__ void per_thread(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block, t by 8 : thread {
    l = dma.copy x.subspan(4).at(p # t) => local;
    dma.copy l => y.subspan(4).at(p # t);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_other_threads_elements_and_a_near_miss(tmp_path: Path, schedule: str) -> None:
    ir = _paths(REVERSED)
    assert len(ir["reverse16"]) == 1
    ir = _paths(PER_THREAD)  # per-thread views copied into each thread's own buffer (lift/lanecopies.py)
    assert len(ir["per_thread"]) == 1
    x = torch.randn(64, device=DEVICE)
    y = poisoned(64)
    _load(tmp_path, "reverse16", REVERSED, schedule).reverse16(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, x.view(4, 16).flip(1).reshape(64))
    y = poisoned(64)
    _load(tmp_path, "per_thread", PER_THREAD, schedule).per_thread(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, x)


LOOPS = """
__co__ void chunks(global f32 [R, 64] x, global f32 [R, 64] y, global f32 [R, 16] sums) {
  parallel p by cdiv(R, 4) : block {
    local f32 [4, 16] total {0.0f};
    with {c} in [4] {
      foreach c {
        s = dma.copy x.subspan(4, 16).at(p, c) => shared;
        parallel {i, j} by [4, 16] : thread {
          total.at(i, j) += s.data.at(i, j);
          s.data.at(i, j) = s.data.at(i, j) * 3.0f;
        }
        dma.copy s => y.subspan(4, 16).at(p, c);
      }
    }
    foreach k in 1 {
      dma.copy total => sums.subspan(4, 16).at(p, k);
    }
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_loops_carry_buffers(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "chunks", LOOPS, schedule)
    x = torch.randn(9, 64, device=DEVICE)
    y, sums = poisoned(9, 64), poisoned(9, 16)
    mod.chunks(x, y, sums)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, 3 * x)
    torch.testing.assert_close(sums, x.view(9, 4, 16).sum(1))
    ir = _paths(LOOPS)
    assert len(ir["chunks"]) == 1
    text = dump(ir["chunks"][0])  # type: ignore[arg-type]
    # the coordinates are bound once, above the loops; the accumulating buffer before them
    assert text.index("rows: i32[4, 1]") < text.index("total: f32[4, 16] = tl.zeros([4, 16], tl.float32)  @4")
    assert "  for c in [0, 4) step 1  @6" in text, text


TMA = """
__co__ void tma_tiles(global f16 [M, N] x, global f16 [M, N] y) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 64)] : block {
    shared f16 [16, 64] s, r;
    f = tma.copy.async.swiz<128> x.subspan(16, 64).at(bm, bn) => s;
    wait f;
    parallel {i, j} by [16, 64] : thread
      r.at(i, j) = s.at(i, j) * 2.0f + 1.0f;
    tma.copy r => y.subspan(16, 64).at(bm, bn);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("cols", [136, 100])  # rows of 272 B: descriptors; of 200 B: the masked fallback
def test_tma_copies_are_descriptor_accesses_with_a_masked_fallback(tmp_path: Path, schedule: str, cols: int) -> None:
    from croq2triton.tir import nodes as N

    mod = _load(tmp_path, "tma_tiles", TMA, schedule)
    x = torch.randn(37, cols, device=DEVICE).half()
    y = poisoned(37, cols, dtype=torch.float16)
    mod.tma_tiles(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, (x.float() * 2 + 1).half())
    ir = _paths(TMA)
    kinds = {type(s) for s in N.walk(ir["tma_tiles"][0].body)}  # type: ignore[attr-defined]
    assert {N.TmaLoad, N.TmaStore} <= kinds


@pytest.mark.slow
def test_tma_copies_compile_to_bulk_tensor_copies_for_sm90a(tmp_path: Path) -> None:
    import sm90

    path = tmp_path / "tma_tiles.co"
    path.write_text(TMA)
    r = sm90.croq("compile", str(path), "--size", "M=4096,N=4096")
    assert r.returncode == 0, r.stderr
    assert "tma_tiles_k0: tile 16x64, num_warps 8" in r.stdout and "TMA yes" in r.stdout, r.stdout


THREAD_LAYOUTS = """
__co__ void transpose(global f32 [M, N] x, global f32 [N, M] y) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 16)] : block {
    s = dma.copy x.subspan(16, 16).at(bm, bn) => shared;
    shared f32 [16, 16] t;
    parallel {i, j} by [16, 16] : thread
      t.at(j, i) = s.data.at(i, j);
    dma.copy t => y.subspan(16, 16).at(bn, bm);
  }
}

__co__ void row_partial(global f32 [M, K] x, global f32 [M, 32] out) {
  parallel r by M : block, t by 32 : thread {
    f32 acc = 0.0f;
    foreach k in [cdiv(K, 32)] {
      if (k # t < K) acc += x.at(r, k # t);
    }
    out.at(r, t) = acc;
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_transpose_through_shared_and_a_per_thread_accumulator(tmp_path: Path, schedule: str) -> None:
    # t.at(j, i) = s.at(i, j): the threads' lanes index the buffer in another order (tl.trans); a
    # thread's scalar accumulated in a loop becomes a tile over the lanes before the loop
    mod = _load(tmp_path, "layouts", THREAD_LAYOUTS, schedule)
    x = torch.randn(37, 45, device=DEVICE)
    y = poisoned(45, 37)
    mod.transpose(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, x.T)
    x = torch.randn(5, 100, device=DEVICE)
    out = poisoned(5, 32)
    mod.row_partial(x, out)  # type: ignore[attr-defined]
    ref = torch.nn.functional.pad(x, (0, 28)).view(5, 4, 32).sum(1)
    torch.testing.assert_close(out, ref)
    ir = _paths(THREAD_LAYOUTS)
    assert len(ir["transpose"]) == 1 and len(ir["row_partial"]) == 1
    text = dump(ir["transpose"][0])  # type: ignore[arg-type]
    assert "t: f32[16, 16] = tl.trans(s)  @7" in text, text
    text = dump(ir["row_partial"][0])  # type: ignore[arg-type]
    assert "acc: f32[32] = tl.zeros([32], tl.float32)  @14" in text and "mask: i1[32] = offs < K" in text, text


TRANSP = """
__co__ void transp_tiles(global f32 [M, N] x, global f32 [N, M] y) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 32)] : block {
    t = dma.transp<1, 0> x.subspan(16, 32).at(bm, bn) => shared;
    dma.copy t => y.subspan(32, 16).at(bn, bm);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_transposing_copy(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "transp_tiles", TRANSP, schedule)
    x = torch.randn(37, 45, device=DEVICE)
    y = poisoned(45, 37)
    mod.transp_tiles(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, x.T)
    ir = _paths(TRANSP)
    assert len(ir["transp_tiles"]) == 1


PAD = """
__co__ void pad_both(global f32 [M, 32] x, global f32 [G, 20, 40] y, global f32 [G, 24, 48] z) {
  parallel g by G : block {
    p = dma.pad<{2, 4}, {2, 4}, {0, 0}, -1.0f> x.subspan(16, 32).at(g, 0) => shared;
    dma.copy p => y.subspan(1, 20, 40).at(g, 0, 0).sqz();
    shared f32 [16, 32] b;
    dma.copy x.subspan(16, 32).at(g, 0) => b;
    dma.pad<{4, 8}, {4, 8}, {0, 0}, 7.0f> b => z.subspan(1, 24, 48).at(g, 0, 0).sqz();
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_padding_copies_into_and_out_of_a_buffer(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "pad_both", PAD, schedule)
    x = torch.randn(48, 32, device=DEVICE)
    y, z = poisoned(3, 20, 40), poisoned(3, 24, 48)
    mod.pad_both(x, y, z)  # type: ignore[attr-defined]
    tiles = x.view(3, 16, 32)
    torch.testing.assert_close(y, torch.nn.functional.pad(tiles, (4, 4, 2, 2), value=-1.0))
    torch.testing.assert_close(z, torch.nn.functional.pad(tiles, (8, 8, 4, 4), value=7.0))
    ir = _paths(PAD)
    assert len(ir["pad_both"]) == 1


EVENTS = """
__co__ void staged(global f32 [M, N] a, global f32 [M, N] out) {
  parallel {bm, bn} by [cdiv(M, 16), cdiv(N, 32)] : block {
    shared event ready[2];
    shared f32 [16, 32] s;
    f = dma.copy.async a.subspan(16, 32).at(bm, bn) => s;
    wait f;
    trigger ready[0];
    wait ready[0];
    while (ready[1]);
    sync.shared;
    dma.copy s => out.subspan(16, 32).at(bm, bn);
  }
}
"""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_events_and_block_barriers_only_order(tmp_path: Path, schedule: str) -> None:
    # the lifted program is sequential: events, waits on them and block barriers are no statements
    ir = _paths(EVENTS)
    assert "barrier" not in dump(ir["staged"][0])  # type: ignore[arg-type]
    mod = _load(tmp_path, "staged", EVENTS, schedule)
    a = torch.randn(37, 45, device=DEVICE)
    out = poisoned(37, 45)
    mod.staged(a, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, a)


def test_a_grid_wide_barrier_splits_the_kernel() -> None:
    src = """
__co__ s32[2] coop() {
  s32[2] a;
  s32[2] b;
  parallel bx by 2 : block<cooperative> {
    a.at(bx) = bx + 1;
    sync.barrier : block;
    b.at(bx) = a.at(1 - bx);
  }
  return b;
}
"""
    ir = _paths(src)  # one launch a phase (lift/gridsync.py; test_lift_levels runs one)
    assert [k.name for k in ir["coop"]] == ["coop_k0_phase0", "coop_k0_phase1"]  # type: ignore[attr-defined]


# tiles whose extents are only known at launch: a whole run-time window through a fresh buffer, a
# declared buffer of run-time shape, a copy between tensors of run-time extent (LANGUAGE.md 7.8)
RUN_TIME_SHAPES = """
__co__ auto through_shared(s32 [M, N, K] input) {
  s32 [M, N, K] output;
  parallel p by 1 : block
    parallel q by 32 : thread {
      tile = dma.copy input.subspan(M, N, K) => shared;
      dma.copy tile => output;
    }
  return output;
}

__co__ void declared(global f32 [R, 24] x, global f32 [R, 24] y) {
  parallel p by 1 : block {
    shared f32 [R, 24] buf;
    f = dma.copy.async x => buf;
    wait f;
    dma.copy buf => y;
  }
}

__co__ void rows_of_blocks(global f16 [G, W] x, global f16 [G, W] y) {
  parallel g by G : block
    dma.copy x.subspan(1, W).at(g, 0) => y.subspan(1, W).at(g, 0);
}
"""


def test_tiles_of_run_time_shape_are_fixed_at_launch() -> None:
    ir = _paths(RUN_TIME_SHAPES)
    text = dump(ir["through_shared"][0])  # type: ignore[arg-type]
    assert "arg TILE_D0: constexpr = next_power_of_2(M)" in text, text
    assert "dim0: i32[TILE_D0, 1, 1] = tl.arange(0, TILE_D0)[:, None, None]" in text, text
    assert "mask: i1[TILE_D0, TILE_D1, TILE_D2] = (dim0 < M) & (dim1 < N) & (dim2 < K)" in text, text
    assert "arg BUF_D0: constexpr = next_power_of_2(R)" in dump(ir["declared"][0])  # type: ignore[arg-type]
    assert "arg COPY_D1: constexpr = next_power_of_2(W)" in dump(ir["rows_of_blocks"][0])  # type: ignore[arg-type]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_tiles_of_run_time_shape_compute(tmp_path: Path, schedule: str) -> None:
    mod = _load(tmp_path, "run_time_shapes", RUN_TIME_SHAPES, schedule)
    x3 = torch.randint(-1000, 1000, (3, 5, 7), dtype=torch.int32, device=DEVICE)
    torch.testing.assert_close(mod.through_shared(x3), x3)  # type: ignore[attr-defined]
    x = torch.randn(13, 24, device=DEVICE)
    y = poisoned(13, 24)
    mod.declared(x, y)  # type: ignore[attr-defined]
    torch.testing.assert_close(y, x)
    h = torch.randn(6, 37, device=DEVICE).half()
    out = poisoned(6, 37, dtype=torch.float16)
    mod.rows_of_blocks(h, out)  # type: ignore[attr-defined]
    torch.testing.assert_close(out, h)


def test_a_run_time_tile_larger_than_triton_allows_is_a_launch_error(tmp_path: Path) -> None:
    mod = _load(tmp_path, "run_time_big", RUN_TIME_SHAPES, "source")
    x = torch.randn(40000, 24, device=DEVICE)  # 65536 x 32 elements as one block
    with pytest.raises(croq2triton.runtime.launch.CroqLaunchError) as e:
        mod.declared(x, torch.empty_like(x))  # type: ignore[attr-defined]
    msg = str(e.value)
    assert "the buffer 'buf' (run_time_big.co:14) has extents [40000] at this launch" in msg, msg
    assert "2097152 elements as one Triton block (padded to [65536] times 32" in msg, msg
    assert "largest block holds 1048576" in msg, msg
