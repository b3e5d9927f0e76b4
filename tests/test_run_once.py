"""tests/run_once.py: a result shared by a run's processes is computed by one of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import run_once

_CHILD = """
import sys, time
import run_once

def compute():
    with open(sys.argv[1], "a") as f:
        f.write("computed\\n")
    time.sleep(0.3)  # (the other process asks meanwhile: it waits for this one)
    return "the result"

print(run_once.shared("key of tests/test_run_once.py", compute))
"""


def test_two_processes_compute_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "memo"
    folder.mkdir()
    monkeypatch.setenv("CROQ2TRITON_TEST_MEMO_DIR", str(folder))
    log = tmp_path / "log"
    argv = [sys.executable, "-c", _CHILD, str(log)]
    env = {"PYTHONPATH": str(Path(__file__).parent), "CROQ2TRITON_TEST_MEMO_DIR": str(folder), "PATH": ""}
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert outs == ["the result", "the result"]
    assert log.read_text() == "computed\n"
    # this process reads it from the folder too, and then from memory
    assert run_once.shared("key of tests/test_run_once.py", lambda: "computed again") == "the result"


def test_a_failure_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROQ2TRITON_TEST_MEMO_DIR", str(tmp_path))

    def fails() -> str:
        raise AssertionError("no result")

    with pytest.raises(AssertionError, match="no result"):
        run_once.shared("a failing key", fails)
    assert run_once.shared("a failing key", lambda: "computed") == "computed"
