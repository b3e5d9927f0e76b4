"""Compile-only checks for Hopper (sm_90a) on the CPU: triton.compile with a CUDA 9.0 target.

Each case runs in the compile worker of tests/sm90.py, a process without the interpreter (Triton's
interpreter mode is process-wide and the rest of the suite runs with TRITON_INTERPRET=1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sm90
from conftest import CORPUS, EXAMPLES, REPO

SCRIPT = REPO / "tests" / "aot_check.py"

F16 = "float16"
ATTN3 = json.dumps([[[2, 192, 64], F16]] * 4 + [[True, "bool"]])
ATTN = json.dumps([[[2, 2, 192, 64], F16]] * 3 + [[True, "bool"]])
GEMM = lambda m, n, k: json.dumps([[[m, k], F16], [[n, k], F16], [[m, n], F16]])  # noqa: E731

# v0 and v1 state 32 x 32 blocks, too small for wgmma (64-row instructions): proved contractions,
# they are tiled with at least 64 rows (schedule/gemm.py), so their dots use wgmma too.
CASES = [
    ("examples/gemm_v0.co", "matmul", GEMM(128, 128, 64), {"wgmma.mma_async"}),
    ("examples/gemm_v1.co", "matmul", GEMM(128, 128, 256), {"wgmma.mma_async"}),
    ("examples/gemm_v0.co@auto", "matmul", GEMM(256, 256, 64), {"wgmma.mma_async"}),  # 128 x 128 dots
    ("examples/gemm_v1.co@auto", "matmul", GEMM(256, 256, 256), {"wgmma.mma_async"}),
    ("corpus:tutorial/matmul_f16_v0_naive.co", "matmul", GEMM(128, 128, 64), {"wgmma.mma_async"}),
    ("corpus:tutorial/matmul_f16_v1_shared_memory.co", "matmul", GEMM(128, 128, 256), {"wgmma.mma_async"}),
    ("examples/gemm_v2.co", "matmul", GEMM(128, 256, 128), {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    ("examples/tiled_add.co", "tiled_add", GEMM(64, 128, 128).replace("[[128, 128]", "[[64, 128]"), set()),
    ("corpus:upstream/tests/gpu/end2end/wgmma_ss.co", "matmul_f16", GEMM(128, 128, 128), {"wgmma.mma_async"}),
    ("corpus:tutorial/matmul_f16_v2_hopper_tma_wgmma.co", "matmul", GEMM(128, 256, 128), {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    # fp8 operands through shared tiles: tiles keep their element type across the K loop
    ("corpus:upstream/tests/gpu/end2end/wgmma_ss.co", "matmul_e4m3",
     json.dumps([[[128, 64], "float8_e4m3fn"], [[128, 64], "float8_e4m3fn"], [[128, 128], "float32"]]),
     {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    ("examples/gemm_v4.co", "matmul", GEMM(256, 384, 128), {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    # --schedule auto: tiled 128 x 256, persistent grid, two half-width TMA stores in the epilogue
    ("examples/gemm_v3.co@auto", "matmul", GEMM(256, 512, 128), {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    ("examples/gemm_v4.co@auto", "matmul", GEMM(256, 512, 128), {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    ("examples/tma_pipeline.co@auto", "matmul", GEMM(256, 512, 128), {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    # tiles declared as `int` constants, rhs tiled with chunkat: the tiled kernel (exact tiles)
    ("corpus:upstream/tests/gpu/end2end/wgmma_ss.co@auto", "matmul_f16", GEMM(256, 512, 128), {"wgmma.mma_async"}),
    ("corpus:upstream/tests/gpu/end2end/wgmma_ss.co@auto", "matmul_e4m3",
     json.dumps([[[256, 64], "float8_e4m3fn"], [[512, 64], "float8_e4m3fn"], [[256, 512], "float32"]]),
     {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    # block-scaled fp8 MMA: each K block's product times per-row and per-block scales
    ("corpus:upstream/tests/gpu/end2end/wgmma_ss.co", "blockscale_gemm_e4m3_n48",
     json.dumps([[[128, 256], "float8_e4m3fn"], [[128, 2], "float32"], [[96, 256], "float8_e4m3fn"],
                 [[2, 2], "float32"], [[128, 96], F16]]),
     {"wgmma.mma_async"}),
    # the split form 'mma.scale' in a warp-specialized persistent pipeline
    ("corpus:upstream/tests/gpu/end2end/wgmma_persis.co", "blockscale_gemm_e4m3_ws_persis",
     json.dumps([[[128, 256], "float8_e4m3fn"], [[128, 2], "float32"], [[256, 256], "float8_e4m3fn"],
                 [[2, 2], "float32"], [[128, 256], F16]]),
     {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    # frag / apply / reduce_max: both attention dots (the second with its A operand in registers)
    ("corpus:upstream/tests/gpu/end2end/flash_atten.co", "flash_atten", ATTN, {"wgmma.mma_async"}),
    ("examples/attention.co", "attention", ATTN3, {"wgmma.mma_async"}),
    # warp roles: one elected thread's TMA copies into a ring, a consumer of a unit range (issue 28 R)
    ("tests/programs/breadth_r.co", "elected_producer",
     json.dumps([[[128, 128], F16], [[64, 128], F16], [[128, 64], "float32"]]),
     {"wgmma.mma_async", "cp.async.bulk.tensor"}),
    # scalars declared before the interior split and defined again as lane tiles inside it: compiled
    # Triton takes no new type for a variable in a branch (perf/compile_all.py found it, 2026-12-05)
    ("tests/programs/breadth_g.co", "no_value",
     json.dumps([[[37], "float32"], [[37], "float32"], [[37], "int32"]]), set()),
    ("tests/programs/breadth_g.co@auto", "no_value",
     json.dumps([[[37], "float32"], [[37], "float32"], [[37], "int32"]]), set()),
    # blocks of several independent rows run one row a program past 8 KB rows (lift/narrow.py): a row of
    # 16384 in registers, and past them in blocks
    ("tests/programs/membound_forms.co@auto", "rmsnorm_rows4",
     json.dumps([[[8, 16384], "float32"], [[16384], "float32"], [[8, 16384], "float32"]]), set()),
    ("tests/programs/membound_forms.co@auto", "rmsnorm_warp_f16",
     json.dumps([[[9, 40000], F16], [[40000], F16], [[9, 40000], F16]]), set()),
    # every lane's atomic into one word folded to one atomic a program: its address a [1, 1] tile like its
    # value (a scalar pointer beside a tile value did not compile, 2026-12-05)
    ("tests/programs/membound_forms3.co@auto", "sum_sq_all",
     json.dumps([[[64, 300], "float32"], [[1], "float32"]]), set()),
    # a loop nest over blocks of a row as one loop, folded (schedule/flatnest.py); a row walked four
    # elements a step and its tail, two loops of different extents folded in blocks
    ("tests/programs/membound_forms3.co@auto", "row_sums_nested",
     json.dumps([[[64, 3000], "float32"], [[64], "float32"]]), set()),
    ("tests/programs/membound_forms3.co@auto", "row_sums_unroll4",
     json.dumps([[[64, 3001], "float32"], [[64], "float32"]]), set()),
    # guards on the contiguous axis at a lane's run-time value (a triangle, a row's own length): under
    # auto vector loads and stores, where as written every access is one element (schedule/vecmasks.py;
    # at 4096 x 4096 the element-wise forms run widened for any number of SMs: as written, 4 x 64 tiles
    # of 256 threads hold one element a thread, which no mask makes a vector)
    ("tests/programs/guards.co@auto", "tril", json.dumps([[[4096, 4096], "float32"]] * 2),
     {"ld.global.v", "st.global.v"}),
    ("tests/programs/guards.co@auto", "softmax_len",
     json.dumps([[[64, 4096], "float32"], [[64], "int32"], [[64, 4096], "float32"]]), {"ld.global.v", "st.global.v"}),
    ("tests/programs/guards.co@auto", "triu_scale_f16",
     json.dumps([[[4096, 4096], F16], [1.5, "float32"], [[4096, 4096], F16]]), {"ld.global.v", "st.global.v"}),
    # sums of short CSR segments under auto: 8 segments a program, a [8, 256] tile a step (256 values a
    # lane of the grid: tests/test_segment_rows.py), and 32 a program, [32, 64], at 32 a lane
    ("tests/programs/membound_forms4.co@auto", "segment_sums",
     json.dumps([[[65536], "float32"], [[257], "int32"], [[256], "float32"]]), set()),
    ("tests/programs/membound_forms4.co@auto", "segment_sums",
     json.dumps([[[8192], "float32"], [[257], "int32"], [[256], "float32"]]), set()),
    # a synchronous prefetch into the other slot of two buffers: the slot picked from a [2, 64, 32] tile
    ("tests/programs/buffer_slots.co@auto", "sync_other",
     json.dumps([[[256, 512], F16], [[256, 512], F16], [[256, 256], "float32"]]), {"wgmma.mma_async"}),
    # a math builtin of runtime/libmath.py with a constant operand (__pow(0.5f, p)): a Triton scalar, not a
    # Python float, whose dtype the compiled branch reads (a GPU compile error, 2026-12-07)
    ("tests/programs/probe5/combos.co", "x_rope", json.dumps([[[5, 36], "float32"]] * 2), set()),
    ("tests/programs/probe5/combos.co@auto", "x_rope", json.dumps([[[5, 36], "float32"]] * 2), set()),
    # sub-byte integers: one element per byte, conversions wrap (u4 sums and s4 products); s4 x s4 -> s32 dots
    ("tests/programs/subbyte/subbyte.co", "arith_s4",
     json.dumps([[[1000], "int8"]] * 4 + [[[1000], "int32"]]), set()),
    ("tests/programs/subbyte/gemm4.co@auto", "gemm_s4",
     json.dumps([[[256, 256], "int8"], [[256, 256], "int8"], [[256, 256], "int32"]]), {"wgmma.mma_async"}),
    # WGMMA RS mode: A loaded into a declared fragment each K tile
    ("tests/programs/breadth_r.co", "rs_gemm",
     json.dumps([[[128, 64], F16], [[64, 64], F16], [[128, 64], "float32"]]), {"wgmma.mma_async"}),
]  # fmt: skip


def _path(spec: str) -> Path:
    spec = spec.split("@")[0]
    if spec.startswith("corpus:"):
        p = CORPUS / spec.split(":", 1)[1]
        if not p.exists():
            pytest.skip(f"shared corpus not present at {CORPUS}")
        return p
    return REPO / spec


@pytest.mark.parametrize(
    ("src", "func", "shapes", "expect"), CASES, ids=[f"{c[0].split('/')[-1]}:{c[1]}" for c in CASES]
)
def test_compiles_for_sm90a(src: str, func: str, shapes: str, expect: set[str]) -> None:
    r = sm90.script(SCRIPT, str(_path(src)), func, shapes, "{}", "{}", src.partition("@")[2] or "source")
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines, r.stdout + r.stderr[-2000:]
    for rec in lines:
        assert rec["target"], "PTX is not for sm_90a"
        missing = [p for p in expect if not rec["found"][p]]
        assert not missing, f"{rec['kernel']}: PTX/TTGIR lacks {missing}"


def test_examples_dir_exists() -> None:
    assert EXAMPLES.exists()


SHARED_LIMIT = 232_448  # bytes of shared memory a program may take on an H100 / H200


@pytest.mark.parametrize("n", [8192, 8190])  # TMA stores, and the masked store (rows not 16-byte aligned)
def test_a_one_step_contraction_with_an_f32_output_fits_shared_memory(n: int) -> None:
    # K of one step (a constant 64): Triton drops the K loop and pipelines the persistent loop over
    # tiles; with its default 3 stages beside the masked store's layout conversion of a 128 x 256 f32
    # tile this took 278,552 bytes and failed on the H200 (tests/test_breadth_b.py, 2026-12-03)
    src = REPO / "tests" / "programs" / "breadth_b_roles.co"
    shapes = json.dumps([[[8192, 64], "float16"], [[n, 64], "float16"], [[8192, n], "float32"]])
    r = sm90.script(SCRIPT, str(src), "two_consumers", shapes, "{}", "{}", "auto")
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines and all("shared" in rec for rec in lines), r.stdout + r.stderr[-2000:]
    assert max(rec["shared"] for rec in lines) <= SHARED_LIMIT, lines


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_lane_variable_reset_to_a_constant_compiles(tmp_path: Path, schedule: str) -> None:
    # tests/test_membound_forms.py's reset_partials: `acc = 0.0f` after acc was a 4 x 64 tile, and a
    # loop after it carries acc: the interpreter took the scalar, compiled Triton wants one type for a
    # loop-carried value (failed on the H200, 2026-12-03); the lanes' value is a tile now
    from test_membound_forms import REFUSED

    src = tmp_path / "refused.co"
    src.write_text(REFUSED)
    shapes = json.dumps([[[40, 150], "float32"], [[40], "float32"]])
    r = sm90.script(SCRIPT, str(src), "reset_partials", shapes, "{}", "{}", schedule)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines and not [rec["error"] for rec in lines if "error" in rec], r.stdout + r.stderr[-2000:]


@pytest.mark.parametrize("n", [4000, 40000])  # the whole row in registers, and in blocks
def test_online_softmax_argmax_and_scan_folds_compile(n: int) -> None:
    # schedule/rescaled.py: the running maximum and the rescaled sum folded a tile at a time; the
    # blocked kernel carries both across its loop (one type each for compiled Triton)
    src = REPO / "tests" / "programs" / "online_softmax.co"
    argfold = REPO / "tests" / "programs" / "argfold.co"  # schedule/argfold.py: the best value and its index
    scans = REPO / "tests" / "programs" / "scans.co"  # running sums read each step: tl.cumsum of the block
    for path, func, shapes in (
        (src, "softmax_online", [[[64, n], "float32"], [[64, n], "float32"]]),
        (src, "weighted_lse_f16", [[[64, n], "float16"], [[n], "float16"], [[64], "float32"]]),
        (argfold, "row_argmax", [[[64, n], "float32"], [[64], "int32"]]),
        (argfold, "row_argmin_ids_f16", [[[64, n], "float16"], [[n], "int32"], [[64], "int32"], [[64], "float32"]]),
        (scans, "row_cumsum", [[[64, n], "float32"], [[64, n], "float32"]]),
        (scans, "positive_ranks", [[[64, n], "float32"], [[64, n], "int32"], [[64], "int32"]]),
    ):
        r = sm90.script(SCRIPT, str(path), func, json.dumps(shapes), "{}", "{}", "auto")
        assert r.returncode == 0, r.stderr[-3000:]
        lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        assert lines and not [rec["error"] for rec in lines if "error" in rec], r.stdout + r.stderr[-2000:]
        assert all(rec["target"] for rec in lines), lines


@pytest.mark.parametrize(
    ("path", "func", "shapes", "schedule"),
    [
        # a block's row walk beside a thread-level part: the scalar's fold of a [1, B] tile is a scalar
        # again (schedule/foldloops.py _kept_shapes; failed on the H100, 2026-12-07)
        (
            "probe4/combos.co",
            "x_rownorm",
            [[[8, 3000], "float32"], [[3000], "float32"], [[8, 3000], "float32"]],
            "auto",
        ),
        # an s64 accumulator from 0: tl.full([], 0, tl.int64), not an int32 literal (emit/triton.py)
        ("probe4/more2.co", "z_s64_sum", [[[8, 300], "int32"], [[8], "int64"]], "source"),
        # Welford's tiles and the partials' Chan combine in one split launch (schedule/moments.py)
        ("moments.co", "col_var", [[[3000, 200], "float32"], [[200], "float32"], [[200], "float32"]], "auto"),
        (
            "moments.co",
            "layernorm_rows",
            [[[4, 20000], "float32"], [[20000], "float32"], [[4, 20000], "float32"]],
            "auto",
        ),
        # running maxima and minima: tl.associative_scan with the module's combining function
        ("scans.co", "row_drawdown", [[[64, 40000], "float32"], [[64, 40000], "float32"]], "auto"),
        ("scans.co", "running_min_positive", [[[64, 4000], "int32"], [[64, 4000], "int32"]], "auto"),
    ],
)
def test_loop_carried_values_keep_their_type_and_shape(path: str, func: str, shapes: list, schedule: str) -> None:
    src = REPO / "tests" / "programs" / path
    r = sm90.script(SCRIPT, str(src), func, json.dumps(shapes), "{}", "{}", schedule)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines and not [rec["error"] for rec in lines if "error" in rec], r.stdout + r.stderr[-2000:]
