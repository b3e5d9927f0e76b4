"""``check`` tells the truth: over every file of the shared corpus (and every example), its verdict
is whether ``translate`` writes a module with every function.  The differences are listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS, EXAMPLES, needs_corpus

from croq2triton.cli import main


def _verdicts(paths: list[Path], tmp: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    differ = []
    for p in paths:
        checked = main(["check", str(p)])
        translated = main(["translate", str(p), "-o", str(tmp / "out.py")])
        capsys.readouterr()
        if (checked == 0) != (translated == 0):
            differ.append(f"{p}: check exits {checked}, translate exits {translated}")
    return differ


def test_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = sorted(EXAMPLES.glob("*.co"))
    assert not _verdicts(paths, tmp_path, capsys)
    assert all(main(["check", str(p)]) == 0 for p in paths)


@needs_corpus
def test_every_corpus_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = sorted(CORPUS.rglob("*.co"))
    assert len(paths) > 100
    differ = _verdicts(paths, tmp_path, capsys)
    assert not differ, "check and translate disagree:\n" + "\n".join(differ)
