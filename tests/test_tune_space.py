"""croq2triton tune without a sweep: the space (parameters, values, points), the static pruning, the
cache's merge, the search, the timing helpers, ``--list`` and ``--dry-run`` on the tutorial's v4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLES

from croq2triton.api import translate_full
from croq2triton.cli import main as cli_main
from croq2triton.errors import CroqError
from croq2triton.options import Point
from croq2triton.tune.cache import Cache, record_key
from croq2triton.tune.prune import before_compiling, contraction_shared
from croq2triton.tune.search import Search
from croq2triton.tune.space import build_space, file_defines, parameters, parse_values
from croq2triton.tune.timing import Timer, median, spread

V4 = EXAMPLES / "gemm_v4.co"


def v4(schedule: str = "source", point: Point | None = None):  # noqa: ANN201
    return translate_full(V4.read_text(), filename=str(V4), schedule=schedule, point=point)


def test_values_syntax() -> None:
    assert parse_values("64,128,256", "int", "x") == (64, 128, 256)
    assert parse_values("64..96:8", "int", "x") == (64, 72, 80, 88, 96)
    assert parse_values("1..4", "int", "x") == (1, 2, 3, 4)
    assert parse_values("16..256:*2", "int", "x") == (16, 32, 64, 128, 256)
    assert parse_values("true,false", "bool", "x") == (True, False)
    assert parse_values("1x2,2x2", "factors", "x") == ((1, 2), (2, 2))
    for bad in ("", "64..", "4..1", "a,b", "1..8:*1"):
        with pytest.raises(CroqError):
            parse_values(bad, "int", "x")


def test_defines_the_function_uses_and_the_schedule_fields() -> None:
    tr = v4()
    fn = tr.unit.functions[0]
    params = {p.name: p for p in parameters(V4.read_text(), fn, tr.schedules["matmul"], tr.contractions["matmul"])}
    for name in ("WARP_N", "STAGES", "CONSUMERS", "TILE_K"):
        assert params[name].kind == "define"
    assert params["WARP_N"].current == 192 and params["STAGES"].current == 2
    assert params["matmul_k0.block_n"].current == 192 and params["matmul_k0.num_stages"].current == 2
    defs = file_defines("#ifndef A\n#define A 4\n#endif\n#define B 8 // eight\n#define F(x) x\n")
    assert defs["A"].guarded and not defs["B"].guarded and defs["B"].value == "8" and "F" not in defs


def test_space_points_and_short_field_names() -> None:
    tr = v4("auto")
    fn = tr.unit.functions[0]
    params = parameters(V4.read_text(), fn, tr.schedules["matmul"], tr.contractions["matmul"])
    space = build_space("matmul", params, ["block_n=64,128", "WARP_N=128,192", "persistent=true,false"])
    points = list(space.points())
    assert space.size() == len(points) == 8 and len({p.key() for p in points}) == 8
    p = points[0]
    assert dict(p.defines) == {"WARP_N": "128"} and p.overrides("matmul_k0") == {"block_n": 64, "persistent": True}
    assert space.values_of(p) == {"matmul_k0.block_n": 64, "WARP_N": 128, "matmul_k0.persistent": True}
    default = build_space("matmul", params, None)  # the default space of a contraction
    assert {q.field for q in default.swept} == {
        "block_m",
        "block_n",
        "block_k",
        "num_stages",
        "num_warps",
        "persistent",
        "split_k",
    }
    assert default.size() == 1296
    with pytest.raises(CroqError, match="no such parameter"):
        build_space("matmul", params, ["WARP_Q=1"])


def test_point_defines_win_over_unguarded_defines() -> None:
    tr = v4(point=Point.of({"WARP_N": 128}))
    assert tr.schedules["matmul"]["matmul_k0"].block_n == 128
    assert not [d for d in tr.diagnostics if "redefined" in d.message]


def test_static_pruning_reasons() -> None:
    fn = v4().unit.functions[0]
    tr = v4(point=Point.of({"WARP_N": 180}))
    reasons = before_compiling(tr, "matmul", fn)
    assert reasons and "WGMMA takes N in multiples of 8" in reasons[0] and "180" in reasons[0]
    big = v4("auto", Point.of(kernels={"matmul_k0": {"block_m": 256, "block_n": 256, "num_stages": 4}}))
    reasons = before_compiling(big, "matmul", fn)
    assert any(r.startswith("shared memory: ") and "> 232,448 B" for r in reasons)
    assert any(r.startswith("registers: the 256 x 256 accumulator takes 256 registers") for r in reasons)
    bad = v4("auto", Point.of(kernels={"matmul_k0": {"block_k": 48}}))
    assert before_compiling(bad, "matmul", fn)[0].startswith("does not translate: the tuning point's schedule")
    auto = v4("auto")
    s, c = auto.schedules["matmul"]["matmul_k0"], auto.contractions["matmul"]["matmul_k0"]
    # 229,408 B compiled for sm_90a (the 32 B past this are the pipeline's barriers)
    assert s.num_stages == 4 and s.flatten and contraction_shared(s, c) == 4 * (128 + 256) * 64 * 2 + 128 * 128 * 2
    assert before_compiling(auto, "matmul", fn) == []


def test_cache_merges_every_writer_and_skips_cut_lines(tmp_path: Path) -> None:
    key = record_key({"a": 1}, "p", {"M": 8})
    one = Cache(tmp_path)
    one.append({"key": key, "status": "failed"})
    two = Cache(tmp_path)
    assert two.path != one.path and two.get(key)["status"] == "failed"
    two.append({"key": key, "status": "ok"})
    (tmp_path / "records-other-host.jsonl").write_text('{"key": "x", "status": "ok"}\n{"key": "y", "sta')
    merged = Cache(tmp_path).records
    assert merged[key]["status"] == "ok" and "x" in merged and "y" not in merged
    assert record_key({"a": 1}, "p", {"M": 8}) == key != record_key({"a": 2}, "p", {"M": 8})
    one.close()
    two.close()


def test_searches_cover_the_space_once() -> None:
    tr = v4("auto")
    fn = tr.unit.functions[0]
    params = parameters(V4.read_text(), fn, tr.schedules["matmul"], tr.contractions["matmul"])
    space = build_space("matmul", params, ["block_n=64,128,256", "num_stages=3,4", "num_warps=4,8"])
    for kind in ("exhaustive", "random", "guided"):
        search = Search(space, kind, seeds=[space.seed()], rng=1)
        seen = []
        while (p := search.ask()) is not None:
            seen.append(p.key())
            search.tell(p, float(space.values_of(p)["matmul_k0.block_n"]))
        assert len(seen) == len(set(seen)) == space.size() == 12, kind
        assert seen[0] == space.seed().key()


def test_cpu_timer_rounds_and_statistics() -> None:
    timed = Timer("cpu").measure({"a": lambda: sum(range(1000)), "b": lambda: sum(range(2000))}, budget_s=0.01)
    assert len(timed.samples["a"]) == len(timed.samples["b"]) >= 3
    assert timed.ratio("b", "a") > 0 and timed.how == {"a": "cpu", "b": "cpu"}
    assert median([3.0, 1.0, 2.0]) == 2.0 and spread([1.0, 2.0, 3.0, 4.0, 5.0]) == 2.0


def test_list_names_the_tutorials_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["tune", str(V4), "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("WARP_N", "STAGES", "CONSUMERS", "TILE_K", "matmul_k0.block_m", "matmul_k0.num_stages"):
        assert f"\n{name} " in out, name
    assert "matmul_k0.warp_specialize" in out and "192" in out


def test_dry_run_prunes_warp_n_180_with_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["tune", str(V4), "--dry-run", "--jobs", "1", "--size", "M=256,N=256,K=256"]
    assert cli_main([*argv, "--param", "WARP_N=176,180,192"]) == 0
    out = capsys.readouterr().out
    lines = {ln.split()[1].rstrip(":"): ln for ln in out.splitlines() if ln.startswith(("kept", "pruned"))}
    assert lines["-DWARP_N=180"].startswith("pruned") and "WGMMA takes N in multiples of 8" in lines["-DWARP_N=180"]
    assert lines["-DWARP_N=176"].startswith("kept") and lines["-DWARP_N=192"].startswith("kept")
    assert "3 points: 2 kept, 1 pruned" in out


def test_best_json_format(tmp_path: Path) -> None:
    from croq2triton.tune.report import best_json

    recs = [
        {"status": "ok", "ms": 2.0, "point": {"defines": {"A": "1"}, "kernels": {}}, "sizes": {"M": 8}, "dtypes": {}},
        {"status": "ok", "ms": 1.0, "final_ms": 1.1, "ratio": 0.9, "point": {"defines": {"A": "2"}, "kernels": {}}},
        {"status": "wrong", "ms": 0.5, "point": {"defines": {"A": "3"}, "kernels": {}}},
    ]
    data = best_json(
        source="x.co", source_sha256="h", func="f", schedule="auto", f32_precision="ieee",
        device={"name": "d", "driver": "1"}, versions={"triton": "3.6.0"}, per_size={"M=8": recs},
    )  # fmt: skip
    assert data["format"] == "croq2triton-tune/1" and len(data["winners"]) == 1 and len(data["top"]) == 2
    assert data["winners"][0]["point"]["defines"] == {"A": "2"} and data["winners"][0]["ms"] == 1.1
    assert Point.from_json(data["winners"][0]["point"]) == Point.of({"A": 2})
    json.dumps(data)


@pytest.mark.interpreter  # prepare without compiling, as the dry run's workers do: in the interpreter
def test_a_divisibility_the_source_asserts_prunes_the_point_at_those_sizes() -> None:
    from croq2triton.tune.workers import prepare

    text = """#ifndef BLOCK
#define BLOCK 64
#endif
__co__ void twice(global f32 [N] x, global f32 [N] y) {
  assert(N % BLOCK == 0, "N must be a multiple of BLOCK");
  parallel p by N / BLOCK : block, t by BLOCK : thread
    y.at(p # t) = 2.0f * x.at(p # t);
}
"""
    sizes = {"N=1000": {"N": 1000}, "N=1024": {"N": 1024}}
    msg = {"op": "prepare", "text": text, "filename": "asrt.co", "func": "twice", "schedule": "source"}
    msg.update(point=Point.of({"BLOCK": 64}).to_json(), sizes=sizes, compile=False)
    ans = prepare(msg)
    assert ans["status"] == "ready" and ans["sizes"]["N=1024"]["status"] == "ready"
    refused = ans["sizes"]["N=1000"]
    assert refused["status"] == "pruned" and refused["stage"] == "launch"
    assert (
        refused["reason"]
        == "the launcher refuses these sizes: twice: assertion failed: N must be a multiple of BLOCK (line 5)"
    )
