"""perf/probe_segments.py (issue 27: sums of many short CSR segments) runs on the CPU under the interpreter
with ``--check-only``: every variant it would time on a GPU (the generated kernel through its launcher,
R segments a program, the merge path with its in-kernel search or its partition kernel, torch's op) agrees
with float64 torch on segments cut at random and on skewed ones (a segment of half the values spanning many
blocks, runs of empty segments, an empty last one), its outputs poisoned with NaN first; and a variant that
computes something else is caught (the probe's check can fail)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import kernel_util  # noqa: F401  (sets TRITON_INTERPRET before Triton is imported)
import pytest

PROBE = Path(__file__).resolve().parent.parent / "perf" / "probe_segments.py"


def _probe() -> Any:
    if "probe_segments" not in sys.modules:
        spec = importlib.util.spec_from_file_location("probe_segments", PROBE)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules["probe_segments"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["probe_segments"]


def _rows(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


@pytest.mark.interpreter
@pytest.mark.parametrize("mean", ["16", "3"])
def test_probe_checks_every_variant(mean: str, capsys: pytest.CaptureFixture[str]) -> None:
    probe = _probe()
    code = probe.main(["--check-only", "--sizes", "37x70", "--means", mean])
    rows = _rows(capsys)
    assert code == 0, [r for r in rows if not r.get("ok")]
    assert {r["form"] for r in rows} == set(probe.FORMS)
    assert {r["dist"] for r in rows} == set(probe.DISTS)
    assert all(r["ok"] and r["err"] <= 1e-4 for r in rows)
    # the merge path at blocks shorter than the long segment (it spans several: partials added)
    assert any(r["form"] == "flat" and r["BLOCK"] < 37 * 70 // 2 for r in rows)


@pytest.mark.interpreter
def test_probe_catches_a_wrong_variant(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _probe()
    real = probe.segments_case

    def wrong(total: int, mean: int, dist: str, dev: str, gen: Any, check: bool) -> Any:
        case = real(total, mean, dist, dev, gen, check)
        vals, ptr = case.inputs
        out = case.outputs[0]
        # every sum 0.1 % off, and nothing written at all
        case.variants.append(
            ("rows", {"R": -1}, lambda: (probe.flat(vals, ptr, out, 64, 8, 4, 1, False), out.mul_(1.001)))
        )
        case.variants.append(("flat", {"BLOCK": -1}, lambda: None))
        return case

    monkeypatch.setattr(probe, "segments_case", wrong)
    assert probe.main(["--check-only", "--sizes", "37x70", "--means", "16", "--dists", "cuts"]) == 1
    bad = {(r["form"], r.get("R", r.get("BLOCK"))) for r in _rows(capsys) if not r["ok"]}
    assert bad == {("rows", -1), ("flat", -1)}
