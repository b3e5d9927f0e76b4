"""perf/probe_lowforms.py (issue 27) runs on the CPU under the interpreter with ``--check-only``: every
variant it would time on a GPU (the generated kernel through its launcher and the hand-written Triton
beside it) agrees with float64 torch on ragged sizes, its outputs poisoned with NaN first; and a variant
that computes something else is caught (the probe's check can fail)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import kernel_util  # noqa: F401  (sets TRITON_INTERPRET before Triton is imported)
import pytest

PROBE = Path(__file__).resolve().parent.parent / "perf" / "probe_lowforms.py"


def _probe() -> Any:
    if "probe_lowforms" not in sys.modules:
        spec = importlib.util.spec_from_file_location("probe_lowforms", PROBE)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules["probe_lowforms"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["probe_lowforms"]


def _rows(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


@pytest.mark.interpreter
@pytest.mark.parametrize("kernels", ["dwconv", "gather", "select", "mean", "swiglu", "hinge"])
def test_probe_checks_every_variant(kernels: str, capsys: pytest.CaptureFixture[str]) -> None:
    probe = _probe()
    code = probe.main(["--check-only", "--only", kernels, "--sizes", "37x70"])
    rows = _rows(capsys)
    assert code == 0, [r for r in rows if not r.get("ok")]
    for kernel in kernels.split(","):
        mine = [r for r in rows if r["kernel"] == kernel]
        forms = {r["form"] for r in mine}
        assert "auto" in forms and len(forms) >= 2, forms  # the generated kernel and hand-written ones
        assert all(r["ok"] and r["err"] <= 1e-2 for r in mine)


@pytest.mark.interpreter
def test_probe_catches_a_wrong_variant(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _probe()
    real = probe.MAKERS["gather"]

    def wrong(m: int, n: int, dev: str, gen: Any, sms: int) -> Any:
        case = real[1](m, n, dev, gen, sms)
        x, idx = case.inputs
        out = case.outputs[0]
        case.variants.append(("wrong", {}, lambda: out.copy_(x)))  # x itself, not its gather
        case.variants.append(("silent", {}, lambda: None))  # writes nothing: the NaN poison stays
        return case

    monkeypatch.setitem(probe.MAKERS, "gather", (real[0], wrong))
    assert probe.main(["--check-only", "--only", "gather", "--sizes", "37x70"]) == 1
    bad = {r["form"]: r for r in _rows(capsys) if not r["ok"]}
    assert set(bad) == {"wrong", "silent"}
