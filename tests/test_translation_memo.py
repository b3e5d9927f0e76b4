"""The test suite's translation memo (tests/translation_memo.py): what it keys on."""

from __future__ import annotations

import re
from pathlib import Path

import translation_memo

from croq2triton.options import Point

PACKAGE = Path(__file__).resolve().parent.parent / "croq2triton"


def test_the_variables_left_out_of_the_key_are_read_only_at_launch() -> None:
    # the runtime (croq2triton/runtime, through its environ_get), tune's workers and `compile` read them;
    # translating must not
    readers = {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        for name in translation_memo.AT_LAUNCH
        if re.search(rf"""(environ\.get\(|environ\[|getenv\(|environ_get\()\s*["']{name}["']""", p.read_text())
    }
    assert readers and all(r.startswith(("runtime/", "tune/")) or r == "compiler.py" for r in readers), readers


def test_arguments_that_translate_alike_are_one_key() -> None:
    one = translation_memo._arguments({"filename": "a.co", "defines": {}})
    assert one == translation_memo._arguments({"filename": "a.co", "defines": None, "schedule": "source"})
    assert one != translation_memo._arguments({"filename": "a.co", "schedule": "auto"})
    point = Point.of({}, {"f_k0": {"split_k": 2}})
    assert translation_memo._frozen(point) == translation_memo._frozen(Point.of({}, {"f_k0": {"split_k": 2}}))
    assert translation_memo._plain(translation_memo._frozen(point))  # (kept on disk for the other workers)
