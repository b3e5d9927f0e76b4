"""Loops that only read memory, software-pipelined: ``TileSchedule.num_stages`` (schedule/loadstages.py,
issue 27). Triton pipelines a plain loop's loads only where they feed a dot; a loop that folds a
lane's row in blocks, walks a column in blocks of rows or stages a row block by block waited for
each block. ``num_stages = S`` runs such a loop as ``tl.range(..., num_stages=S)``: its loads are
issued ``S - 1`` iterations ahead. The points are checked on ragged sizes with NaN-poisoned outputs
against float64 torch in the interpreter, loops that write memory are never pipelined, and the
compiled sm_90a kernel issues its loads with ``cp.async``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sm90
from kernel_util import assert_near_max, functions_of, poisoned, randn
from test_loop_split_points import CASES as SPLIT_CASES

from croq2triton.api import load_source, translate_full
from croq2triton.cli import main as cli_main
from croq2triton.options import Point
from croq2triton.schedule.loadstages import has_read_loops, pipeline_loads
from croq2triton.schedule.schedule import TileSchedule, with_point
from croq2triton.tir import expr as E
from croq2triton.tir import nodes as N

REPO = Path(__file__).resolve().parent.parent
PROGRAM = REPO / "tests" / "programs" / "membound_forms.co"

# the column walks and staged rows, their references and tolerances (as tests/test_loop_split_points.py)
CASES = SPLIT_CASES
POINTS = {
    "3 stages": {"num_stages": 3},
    "2 stages, not split, blocks of 8": {"num_stages": 2, "loop_split": 1, "fold": 8},
    "4 stages, split in 3": {"num_stages": 4, "loop_split": 3},
}


def _translate(fields: dict[str, object]) -> str:
    point = Point.of({}, {f"{fn}_k0": fields for fn in CASES})
    # (only the functions the point sets: tests/test_loop_split_points.py says why)
    out = translate_full(functions_of(PROGRAM, *CASES), filename="membound_forms.co", schedule="auto", point=point)
    assert not out.failed, out.failed
    return out.source


@pytest.mark.parametrize("name", POINTS)
def test_each_point_computes_what_torch_does(name: str) -> None:
    source = _translate(POINTS[name])
    stages = POINTS[name]["num_stages"]
    assert source.count(f"num_stages={stages})") >= len(CASES), "each kernel's read-only loop is pipelined"
    mod = load_source(source, f"load_stages_{abs(hash(name))}")
    for fn, (dtype, out, ref, tol) in CASES.items():
        m, n = (300, 150) if fn.startswith("col") else (40, 700)  # ragged: no tile divides them
        x = randn(m, n, dtype=dtype, seed=m + n)
        shape, odt = out(m, n)
        y = poisoned(*shape, dtype=odt)
        getattr(mod, fn)(x, y)
        assert_near_max(y, ref(x.double()), tol, f"{fn} at {name}")


def test_the_auto_policy_and_the_source_schedule_keep_plain_loops_unless_asked() -> None:
    # the field's value where nothing sets it: 1 in the source schedule; the policy's under auto
    from croq2triton.schedule import policy

    out = translate_full(PROGRAM.read_text(), filename=str(PROGRAM), schedule="source")
    assert "num_stages=" not in out.source.split("def col_means_f16_k0")[1].split("@_rt.launcher")[0]
    auto = translate_full(PROGRAM.read_text(), filename=str(PROGRAM), schedule="auto").source
    pipelined = "tl.range(" in auto.split("def col_means_f16_k0_split")[1].split("@triton.jit")[0]
    assert pipelined == (policy.LOAD_STAGES > 1)


def _loop(body: list[N.Stmt]) -> N.For:
    return N.For(E.Var("i", "i32"), E.Const(0), E.Var("n", "i32"), E.Const(1), body)


def _kernel(body: list[N.Stmt]) -> N.Kernel:
    return N.Kernel(
        "k",
        (E.Const(1),),
        (E.Var("pid", "i32"),),
        [N.Pointer("x_ptr", "x", "f32", (E.Var("n", "i32"),), ("x_stride_0",))],
        body,
    )


def _load(shape: tuple[int | E.Extent, ...]) -> N.Load:
    return N.Load(E.Var("v", "f32", dims=shape), "x_ptr", (E.Var("i", "i32"),))


def test_only_loops_that_read_memory_are_pipelined() -> None:
    acc = E.Var("acc", "f32", dims=(64,))
    reads = _loop([_load((64,)), N.Assign(acc, acc)])
    writes = _loop([_load((64,)), N.Store("x_ptr", (E.Var("i", "i32"),), acc)])
    fenced = _loop([_load((64,)), N.Barrier()])
    launch_sized = _loop([_load((E.Extent("BLOCK_J"),))])
    scalar = _loop([_load(())])
    nested = _loop([reads])
    for loop, expect in (
        (reads, True),
        (writes, False),  # a store another iteration's load could read
        (fenced, False),  # threads meet: the order of memory accesses is the point
        (launch_sized, False),  # its buffers' size is not known here
        (scalar, False),
    ):
        out = pipeline_loads(_kernel([loop]), 3)
        assert isinstance(out.body[0], N.For)
        assert (out.body[0].pipeline is not None) == expect, loop
        assert pipeline_loads(_kernel([loop]), 1).body[0].pipeline is None  # 1: as written
    inner = pipeline_loads(_kernel([nested]), 3).body[0]
    assert isinstance(inner, N.For) and inner.pipeline is None  # the innermost loop only
    assert isinstance(inner.body[0], N.For) and inner.body[0].pipeline is not None
    assert has_read_loops(_kernel([launch_sized])) and not has_read_loops(_kernel([writes]))


def test_the_buffers_must_fit_shared_memory() -> None:
    big = _loop([_load((128, 128))])  # 64 KB a stage
    assert pipeline_loads(_kernel([big]), 3).body[0].pipeline is not None  # type: ignore[attr-defined]
    assert pipeline_loads(_kernel([big]), 4).body[0].pipeline is None  # type: ignore[attr-defined]


def test_the_field_is_checked_and_only_where_it_applies() -> None:
    s = TileSchedule((1,), 4, num_stages=1)
    assert with_point(s, {"num_stages": 3}).describe().endswith("loads pipelined in 3 stages, 4 warps (tuned)")
    with pytest.raises(ValueError, match="num_stages = 9"):
        with_point(s, {"num_stages": 9})
    with pytest.raises(ValueError, match="no loop that only reads memory"):
        with_point(TileSchedule((1,), 4), {"num_stages": 3})


def test_tune_lists_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["tune", str(PROGRAM), "--func", "col_means_f16", "--schedule", "auto", "--size", "M=300,N=150"]
    assert cli_main([*args, "--list"]) == 0
    listed = capsys.readouterr().out
    assert "col_means_f16_k0.num_stages" in listed and " 1,3 " in listed
    assert (
        cli_main(["tune", str(PROGRAM), "--func", "silu_mul_f32", "--schedule", "auto", "--size", "N=300", "--list"])
        == 0
    )
    assert "num_stages" not in capsys.readouterr().out  # no loop: not a parameter of it


def test_a_pipelined_loop_compiles_for_sm90a_with_asynchronous_copies(tmp_path: Path) -> None:
    script = REPO / "tests" / "aot_check.py"
    program = tmp_path / "membound_forms.co"  # the two functions compiled (translated under the point)
    program.write_text(functions_of(PROGRAM, "col_means_f16", "row_sums_staged"))
    for fn, shapes in (
        # (rows of 16-byte multiples: Triton pipelines only the loads it can issue 16 bytes at a time)
        ("col_means_f16", [[[4000, 1024], "float16"], [[1024], "float16"]]),
        ("row_sums_staged", [[[1000, 4096], "float32"], [[1000], "float32"]]),
    ):
        point = json.dumps({f"{fn}_k0": {"num_stages": 3}})
        r = sm90.script(script, str(program), fn, json.dumps(shapes), "{}", "{}", "auto", point)
        assert r.returncode == 0, r.stderr[-3000:]
        lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        assert lines and not [rec["error"] for rec in lines if "error" in rec], r.stdout + r.stderr[-2000:]
        # the kernel with the loop (split across programs or not; the combine kernel has none)
        looped = [rec for rec in lines if not rec["kernel"].endswith("_combine")]
        assert looped, lines
        found = looped[0]["found"]
        assert found["cp.async.cg.shared.global"] or found["cp.async.ca.shared.global"], lines
