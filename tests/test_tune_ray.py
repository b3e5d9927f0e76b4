"""``croq2triton tune --ray``: the sweep as Ray tasks on a local Ray instance, in Triton's interpreter.

Ray is the optional extra ``croq2triton[ray]`` (also in ``[dev]``); without it this test is skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from croq2triton.cli import main as cli_main

ray = pytest.importorskip(
    "ray", reason="Ray is not installed (pip install 'croq2triton[ray]'): the --ray path is untested"
)

SCALE = """#ifndef BLOCK
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


def test_ray_local_cluster_streams_records_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "scale.co"
    src.write_text(SCALE)
    out = tmp_path / "out"
    monkeypatch.setenv("CROQ2TRITON_TUNE_FAULTS", "-DBLOCK=32 -DSHIFT=0:die")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    argv = ["tune", str(src), "--size", "N=300", "--param", "BLOCK=32,64,2097152", "--param", "SHIFT=0,1"]
    argv += ["--ray", "local", "--jobs", "2", "--out", str(out), "--top", "1"]
    assert cli_main(argv) == 0
    capsys.readouterr()
    recs = [json.loads(x) for f in (out / "cache").glob("*.jsonl") for x in f.read_text().splitlines()]
    pts = {r["describe"]: r for r in recs if r.get("kind") != "final"}
    assert len(pts) == 6
    assert pts["-DBLOCK=64 -DSHIFT=0"]["status"] == "ok" and pts["-DBLOCK=64 -DSHIFT=0"]["worker"] == "ray"
    assert pts["-DBLOCK=64 -DSHIFT=1"]["status"] == "wrong"
    assert pts["-DBLOCK=2097152 -DSHIFT=0"]["status"] == "pruned"
    died = pts["-DBLOCK=32 -DSHIFT=0"]
    assert died["status"] == "failed" and "the Ray task's worker died" in died["reason"]
    best = json.loads((out / "best.json").read_text())
    assert best["winners"][0]["point"]["defines"] == {"BLOCK": "64", "SHIFT": "0"}
