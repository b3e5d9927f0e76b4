"""``croq2triton tune`` sweeps, in Triton's interpreter with interpreter stand-ins for GPUs.

A small element-wise kernel whose ``#define`` parameters are swept: ``BLOCK`` changes only the
schedule (2097152 does not translate: more lanes than a Triton tensor holds), ``SHIFT`` changes the result
(so the default translation disagrees: the point is wrong).  Faults that the interpreter cannot
produce by itself (a compile error, a worker that dies, one that hangs) are injected with
``CROQ2TRITON_TUNE_FAULTS`` (croq2triton/tune/workers.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, pythonpath

from croq2triton.cli import main as cli_main

SCALE = """// y = x * 2 + SHIFT: one program per BLOCK elements
#ifndef BLOCK
#define BLOCK 64
#endif
#ifndef SHIFT
#define SHIFT 0
#endif
__co__ void scale(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, BLOCK) : block, t by BLOCK : thread
    y.at(p # t) = x.at(p # t) * 2.0f + SHIFT;
}
"""


def records(cache: Path) -> list[dict]:
    out = []
    for f in sorted(cache.glob("*.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return [r for r in out if r.get("kind") != "final"]


def by_point(recs: list[dict]) -> dict[str, dict]:
    return {r["describe"]: r for r in recs}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    p = tmp_path / "scale.co"
    p.write_text(SCALE)
    return p


@pytest.mark.interpreter  # the benchmark workers are interpreter stand-ins for two GPUs
def test_sweep_faults_report_cache_and_two_stand_in_gpus(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    faults = "-DBLOCK=64 -DSHIFT=1:compile;-DBLOCK=64 -DSHIFT=2:die;-DBLOCK=128 -DSHIFT=2:hang"
    monkeypatch.setenv("CROQ2TRITON_TUNE_FAULTS", faults)
    argv = [
        "tune",
        str(source),
        "--size",
        "N=300",
        "--jobs",
        "1",
        "--gpus",
        "0,1",
        "--timeout",
        "8s",
        "--out",
        str(out),
    ]
    argv += ["--param", "BLOCK=64,128,2097152", "--param", "SHIFT=0,1,2"]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out
    recs = records(out / "cache")
    assert len(recs) == 9 and len(list((out / "cache").glob("*.jsonl"))) == 1  # one file, both workers' records
    pts = by_point(recs)
    for shift in (0, 1, 2):  # the translator's own diagnostic
        r = pts[f"-DBLOCK=2097152 -DSHIFT={shift}"]
        assert r["status"] == "pruned" and "does not translate a block of 2097152 threads" in r["reason"]
    assert pts["-DBLOCK=64 -DSHIFT=1"]["status"] == "failed" and pts["-DBLOCK=64 -DSHIFT=1"]["stage"] == "compile"
    died = pts["-DBLOCK=64 -DSHIFT=2"]
    assert died["status"] == "failed" and "benchmark worker died (killed by SIGSEGV)" in died["reason"]
    hung = pts["-DBLOCK=128 -DSHIFT=2"]
    assert hung["status"] == "failed" and "did not answer within 8 s (a hang: killed)" in hung["reason"]
    wrong = pts["-DBLOCK=128 -DSHIFT=1"]
    assert wrong["status"] == "wrong" and "differs from the default translation" in wrong["reason"]
    for block in (64, 128):
        ok = pts[f"-DBLOCK={block} -DSHIFT=0"]
        assert ok["status"] == "ok" and ok["ms"] > 0 and ok["checked"] == ["default"] and ok["bytes"] == 2400
    timed = [r for r in recs if "worker" in r]
    assert {r["worker"] for r in timed} == {"bench0", "bench1"}  # the space split between the two workers
    best = json.loads((out / "best.json").read_text())
    assert best["format"] == "croq2triton-tune/1" and best["func"] == "scale" and best["device"]["name"]
    assert len(best["winners"]) == 1 and best["winners"][0]["sizes"] == {"N": 300}
    assert best["winners"][0]["point"]["defines"]["SHIFT"] == "0"
    assert {t["point"]["defines"]["SHIFT"] for t in best["top"]} == {"0"}  # wrong points are never ranked
    assert (out / "tune.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (out / "table.txt").read_text()
    assert table in printed + "\n" and "-DBLOCK=64 -DSHIFT=0" in table and "re-timed" in table
    assert "2 ok" in table and "3 pruned" in table and "3 failed" in table and "1 wrong" in table

    # the sweep again with one more value of a parameter: the points in the cache are neither compiled
    # nor timed again (a sweep whose every point is cached starts none: the same skip, one run less of
    # a minute's test), only the new value's points are evaluated
    files = sorted((out / "cache").glob("*.jsonl"))
    monkeypatch.delenv("CROQ2TRITON_TUNE_FAULTS")
    more = [a if a != "BLOCK=64,128,2097152" else "BLOCK=32,64,128,2097152" for a in argv]
    assert cli_main(more) == 0
    capsys.readouterr()
    new = [f for f in (out / "cache").glob("*.jsonl") if f not in files]
    assert len(new) == 1
    added = [json.loads(line) for line in new[0].read_text().splitlines()]
    assert sorted(r["describe"] for r in added if r.get("kind") != "final") == [
        f"-DBLOCK=32 -DSHIFT={s}" for s in (0, 1, 2)
    ]
    assert len(records(out / "cache")) == 12


def test_a_killed_sweep_resumes_where_it_stopped(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "croq2triton", "tune", str(source), "--size", "N=2000", "--jobs", "1"]
    argv += ["--param", "BLOCK=16,32,64,128,256", "--time-per-point", "1", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=pythonpath(REPO), TRITON_INTERPRET="1")
    env.pop("CROQ2TRITON_TUNE_FAULTS", None)
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if (out / "cache").exists() and len(records(out / "cache")) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    before = {r["describe"] for r in records(out / "cache")}
    assert 2 <= len(before) < 5
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    files = sorted((out / "cache").glob("*.jsonl"), key=lambda f: f.stat().st_mtime)
    assert len(files) == 2
    resumed = {json.loads(line).get("describe") for line in files[1].read_text().splitlines()} - {None}
    assert resumed == {f"-DBLOCK={b}" for b in (16, 32, 64, 128, 256)} - before  # only what was left
    assert json.loads((out / "best.json").read_text())["winners"]


def test_prepare_compiles_for_sm90_and_reports_the_compiled_figures(tmp_path: Path) -> None:
    """A compile worker on a GPU host (Triton out of interpreter mode, no GPU needed): the launch is
    recorded and compiled for sm_90a; shared memory, registers and spills come back."""
    script = """
import json, os
os.environ["TRITON_INTERPRET"] = "0"
os.environ["CROQ2TRITON_NUM_SMS"] = "132"
from croq2triton.options import Point
from croq2triton.tune.workers import prepare
from croq2triton.tune.prune import after_compiling
text = open("examples/gemm_v4.co").read()
msg = {"op": "prepare", "text": text, "filename": "examples/gemm_v4.co", "func": "matmul", "schedule": "auto",
       "defines": {}, "point": Point.of(kernels={"matmul_k0": {"num_stages": 2}}).to_json(),
       "sizes": {"s": {"M": 256, "N": 256, "K": 200}}, "compile": True, "limits": {}, "faults": ""}
ans = prepare(msg)
fig = ans["sizes"]["s"]["compiled"]["matmul_k0"]
print(json.dumps({"status": ans["sizes"]["s"]["status"], "fig": fig,
                  "pruned": after_compiling({"k": {**fig, "spills": 64}}, None)}))
"""
    # as the sweep starts its compile workers on a GPU host (tune/sweep.py compile_env): no GPU in sight
    env = dict(os.environ, PYTHONPATH=pythonpath(REPO), CUDA_VISIBLE_DEVICES="")
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["status"] == "ready"
    fig = got["fig"]
    assert 2 * (128 + 256) * 64 * 2 <= fig["shared"] < 232_448 and fig["spills"] == 0 and fig["stages"] == 2
    assert fig["registers"] is None or 0 < fig["registers"] <= 255
    assert got["pruned"] == [
        "compiled: k spills 64 B of registers to local memory (" + f"{fig['registers']} registers)"
    ]


def test_the_table_shows_each_point_whole() -> None:
    """A point is what the table is read for: never cut, the kernel name its fields share said once."""
    from croq2triton.tune.report import table

    fields = " ".join(f"matmul_k0.{k}={v}" for k, v in (("block_k", 64), ("block_m", 128), ("block_n", 128),
                                                          ("num_stages", 5), ("num_warps", 8), ("persistent", "true")))  # fmt: skip
    other = fields.replace("block_m=128", "block_m=64")
    text = table([{"describe": fields, "ms": 0.0573, "ratio": 0.92, "status": "ok"},
                  {"describe": other, "ms": 0.0618, "ratio": 0.85, "status": "ok", "untuned": True}])  # fmt: skip
    lines = text.splitlines()
    assert lines[0].endswith("point (matmul_k0.)") and "..." not in text
    assert lines[1].endswith("block_k=64 block_m=128 block_n=128 num_stages=5 num_warps=8 persistent=true")
    assert "untuned" in lines[2] and lines[2].endswith(
        "block_m=64 block_n=128 num_stages=5 num_warps=8 persistent=true"
    )
    # points of two kernels keep their names
    two = table([{"describe": "a_k0.block_m=64 b_k0.block_m=128", "ms": 1.0, "status": "ok"}])
    assert two.splitlines()[1].endswith("a_k0.block_m=64 b_k0.block_m=128")


FLAG = """// y = +-x * k: a bool and a float parameter beside the size N
#ifndef BLOCK
#define BLOCK 64
#endif
__co__ void flag(global f32 [N] x, global f32 [N] y, bool neg, f32 k) {
  parallel p by cdiv(N, BLOCK) : block, t by BLOCK : thread
    if (p # t < N) y.at(p # t) = neg ? -x.at(p # t) * k : x.at(p # t) * k;
}
"""


@pytest.mark.interpreter
def test_best_json_of_a_function_with_bool_and_float_parameters_is_a_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the sweep runs with neg and k set, but a tuned module dispatches on sizes only: best.json names N
    # alone, and translate --config takes it (it refused `sizes: {'N': 300, 'k': 1.0, 'neg': True}`)
    src = tmp_path / "flag.co"
    src.write_text(FLAG)
    out = tmp_path / "out"
    argv = ["tune", str(src), "--size", "N=300", "--param", "BLOCK=32,64", "--jobs", "1", "--out", str(out)]
    assert cli_main(argv) == 0
    best = json.loads((out / "best.json").read_text())
    assert [w["sizes"] for w in best["winners"]] == [{"N": 300}]
    assert cli_main(["translate", str(src), "--config", str(out / "best.json"), "-o", str(tmp_path / "flag.py")]) == 0
    capsys.readouterr()
    import torch
    from kernel_util import DEVICE

    import croq2triton

    mod = croq2triton.load(src, config=str(out / "best.json"))
    x = torch.randn(300, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    mod.flag(x, y, True, 1.5)
    torch.testing.assert_close(y.cpu(), -x.cpu() * 1.5)
