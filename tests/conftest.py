from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CROQ2TRITON_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
MANIFEST = CORPUS / "MANIFEST.tsv"
EXAMPLES = REPO / "examples"


def corpus_rows() -> list[dict[str, str]]:
    if not MANIFEST.exists():
        return []
    with open(MANIFEST, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


needs_corpus = pytest.mark.skipif(
    not MANIFEST.exists(),
    reason=f"the shared corpus is not present at {CORPUS} (set CROQ2TRITON_SHARED to its parent folder)",
)


@pytest.fixture(autouse=True)
def _torch_seeded() -> None:
    """Each test starts torch's global generator from one seed: a test that draws from it (torch.randn
    without a generator) gets the same numbers whichever tests its process ran before (pytest -n 8)."""
    torch = sys.modules.get("torch")  # imported by the tests that draw: no import for the others
    if torch is not None:
        torch.manual_seed(0)


# tests/golden holds generated modules (compared by test_golden.py), not tests
collect_ignore = ["golden"]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """CROQ2TRITON_FAILLOG=FILE: each failure's id and last error line appended as it happens (under
    pytest-xdist the summary comes only at the end, and a device run cut by its time limit has none)."""
    log = os.environ.get("CROQ2TRITON_FAILLOG")
    if not log or not report.failed or os.environ.get("PYTEST_XDIST_WORKER"):
        return  # (the controller writes each report once)
    text = str(report.longrepr)
    lines = [ln for ln in text.splitlines() if ln.startswith("E ")] or text.splitlines()[-1:]
    with open(log, "a") as f:
        f.write(f"{report.nodeid} [{report.when}] {' | '.join(ln[2:].strip() for ln in lines[:3])[:600]}\n")
