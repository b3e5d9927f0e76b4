"""Every translated kernel runs (issue 11): every function of examples/ and of the shared corpus, in
both schedules, is translated and launched once on small random inputs in the interpreter.

What may happen to a function: it is translated and runs; or it is refused with a located
diagnostic (when translating, when its inputs cannot be built, or at launch: a ``CroqError``).
What may not: any other exception, i.e. a kernel that fails inside Triton or a launcher that
fails in Python. Results are not compared here (the end-to-end tests do that); every symbolic size
is ``SIZE``, ragged (no multiple of 16), scalar parameters keep ``croq2triton run``'s defaults.
"""

from __future__ import annotations

import traceback
import warnings
from pathlib import Path

import pytest
from conftest import CORPUS, EXAMPLES, MANIFEST, needs_corpus
from kernel_util import DEVICE

from croq2triton.api import load
from croq2triton.errors import CroqError
from croq2triton.runinputs import make_inputs
from croq2triton.runsizes import choose

SIZE = 40


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.co")) if root.exists() else []


def _params() -> list[object]:
    out: list[object] = []
    for group, root, marks in (("examples", EXAMPLES, []), ("corpus", CORPUS, [needs_corpus])):
        files = _files(root) if group == "examples" or MANIFEST.exists() else [Path("corpus-absent.co")]
        for path in files:
            name = path.relative_to(root).as_posix() if path.is_absolute() else path.name
            for schedule in ("source", "auto"):
                out.append(
                    pytest.param(path, schedule, id=f"{group}/{name}:{schedule}", marks=[pytest.mark.slow, *marks])
                )
    return out


def run_every_function(path: Path, schedule: str) -> list[str]:
    """The functions of ``path`` that failed other than with a ``CroqError``, with the error."""
    try:
        mod = load(path, schedule=schedule)
    except CroqError:
        return []  # the file is refused as a whole, with its diagnostic
    tr = mod.__croq_translation__
    failures: list[str] = []
    for fn in tr.unit.functions:
        if fn.name in tr.failed:
            continue
        chosen = choose([fn], {})[fn.name]
        values = {k: (SIZE if chosen.kinds.get(k) == "size" else v) for k, v in chosen.values.items()}
        try:
            inputs = make_inputs(fn, values, DEVICE, seed=len(fn.name))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                getattr(mod, fn.name)(*inputs.args)
        except CroqError:
            continue
        except Exception as e:  # noqa: BLE001 - what this test looks for
            where = traceback.extract_tb(e.__traceback__)[-1]
            failures.append(f"{fn.name}: {type(e).__name__}: {str(e)[:300]} (at {where.filename}:{where.lineno})")
    return failures


@pytest.mark.parametrize(("path", "schedule"), _params())
def test_every_translated_function_runs(path: Path, schedule: str) -> None:
    failures = run_every_function(path, schedule)
    assert not failures, "\n".join(failures)
