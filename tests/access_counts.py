"""The global accesses of one function of a ``.co`` file compiled for sm_90a under ``--schedule auto``
(tests/access_lines.py, run in tests/sm90.py's worker), computed once per test run.

Each test of an access check reads one function's counts: asking for that function alone spreads the
compilations over the run's workers, and tests/run_once.py keeps each function's counts for the other
workers (the tests of one function land on several).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import run_once
import sm90

SCRIPT = Path(__file__).parent / "access_lines.py"


def accesses(program: Path, function: str, sizes: dict[str, int]) -> dict[str, dict[str, int]]:
    """``{"x.ld": {"v4": 8, "x1": 2}, ...}`` for ``function`` of ``program`` at ``sizes``
    (tests/access_lines.py's counts)."""
    one = json.dumps({function: sizes}, sort_keys=True)
    text = Path(program).read_text()
    key = json.dumps([str(SCRIPT), str(program), hashlib.sha256(text.encode()).hexdigest(), one])

    def compute() -> str:
        r = sm90.script(SCRIPT, str(program), one)
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stdout.strip().splitlines()[-1]

    return json.loads(run_once.shared(key, compute))[function]
