"""Every translated kernel runs (issue 11): every function of examples/ and of the shared corpus, in
both schedules, is translated and launched once on small random inputs in the interpreter.

What may happen to a function: it is translated and runs; or it is refused with a located
diagnostic (when translating, when its inputs cannot be built, or at launch: a ``CroqError``).
What may not: any other exception, i.e. a kernel that fails inside Triton or a launcher that
fails in Python. Results are not compared here (the end-to-end tests do that); every symbolic size
of a tensor's last two dimensions is ``SIZE``, ragged (no multiple of 16), one that names only
leading dimensions (batches, heads) is ``LEADING`` (``SIZE`` there made attention's B x H 1600
programs, two minutes of interpreter time for a path the small batch runs alike); scalar parameters
keep ``croq2triton run``'s defaults.
"""

from __future__ import annotations

import re
import traceback
import warnings
from pathlib import Path

import pytest
from conftest import CORPUS, EXAMPLES, MANIFEST, needs_corpus
from kernel_util import DEVICE, kernel_code

from croq2triton.api import load
from croq2triton.errors import CroqError
from croq2triton.frontend import ast as A
from croq2triton.runinputs import make_inputs
from croq2triton.runsizes import choose

SIZE = 40
LEADING = 3

# functions of fixed extents (#defines) that tests/test_corpus_e2e.py runs under the source schedule
# against a reference, at these very shapes: the source schedule's run here repeats it (25 s for
# mma_m8n8k4_f16_f16 alone); the auto schedule's still runs, unless its kernels are the source
# schedule's (but for loops pipelined, which the interpreter runs as plain loops): _as_written
E2E_RUNS = {
    "upstream/tests/gpu/end2end/wmma.co": {
        "matmul_f16_f32", "matmul_f16_f16", "matmul_bf16_f32", "matmul_tf32_f32", "matmul_s8_s32",
        "matmul_u8_s32", "matmul_rr", "matmul_mc_array",
    },
    "upstream/tests/gpu/end2end/ampere_mma.co": {
        "mma_m8n8k4_f16_f16", "matmul_loadc", "matmul_group_rc", "matmul_fusion_scalar",
    },
}  # fmt: skip


def _leading_sizes(fn: A.CoFunction) -> set[str]:
    """The size names that the tensor parameters of ``fn`` have only in dimensions before their last two."""
    inner: set[str] = set()
    leading: set[str] = set()
    for p in fn.params:
        shape = p.type.shape if p.type.kind == "spanned" else None
        dims = list(shape.dims or []) if shape is not None else []
        for i, d in enumerate(dims):
            names = {n.name for n in d.walk() if isinstance(n, A.Name)}
            (inner if i >= len(dims) - 2 else leading).update(names)
    return leading - inner


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


def run_every_function(path: Path, schedule: str, skip: frozenset[str] = frozenset()) -> list[str]:
    """The functions of ``path`` (but ``skip``) that failed other than with a ``CroqError``, with the error."""
    try:
        mod = load(path, schedule=schedule)
    except CroqError:
        return []  # the file is refused as a whole, with its diagnostic
    tr = mod.__croq_translation__
    failures: list[str] = []
    for fn in tr.unit.functions:
        if fn.name in tr.failed or fn.name in skip:
            continue
        chosen = choose([fn], {})[fn.name]
        leading = _leading_sizes(fn)
        values = {
            k: ((LEADING if k in leading else SIZE) if chosen.kinds.get(k) == "size" else v)
            for k, v in chosen.values.items()
        }
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


def _as_written(path: Path, names: set[str]) -> frozenset[str]:
    """The functions of ``names`` whose kernels and launcher under auto are the source schedule's, but
    for loops pipelined (``tl.range(..., num_stages=S)``, a plain loop in the interpreter): in the
    interpreter their auto run repeats the source schedule's (tests/test_corpus_e2e.py)."""
    if DEVICE != "cpu" or not names:
        return frozenset()
    auto, source = (load(path, schedule=s).__croq_translation__ for s in ("auto", "source"))

    def code(tr: object, name: str) -> list[str]:
        kernels = [k.name for k in tr.ir.get(name, [])]  # type: ignore[attr-defined]
        texts = [kernel_code(tr.source, k) for k in [*kernels, name]]  # type: ignore[attr-defined]
        return [re.sub(r"tl\.range\(([^,()]+),([^,()]+),num_stages=\d+\)", r"range(\1,\2)", t) for t in texts]

    return frozenset(n for n in names if n not in auto.failed and code(auto, n) == code(source, n))


@pytest.mark.parametrize(("path", "schedule"), _params())
def test_every_translated_function_runs(path: Path, schedule: str) -> None:
    rel = path.relative_to(CORPUS).as_posix() if path.is_relative_to(CORPUS) else ""
    e2e = set(E2E_RUNS.get(rel, ()))
    skip = frozenset(e2e) if schedule == "source" else _as_written(path, e2e)
    failures = run_every_function(path, schedule, skip)
    assert not failures, "\n".join(failures)


@needs_corpus
def test_the_functions_left_to_the_end_to_end_tests_are_run_there() -> None:
    e2e = (Path(__file__).parent / "test_corpus_e2e.py").read_text()
    for rel, names in E2E_RUNS.items():
        assert f'"{Path(rel).name}"' in e2e, rel
        missing = [n for n in sorted(names) if f'"{n}"' not in e2e]
        assert not missing, f"tests/test_corpus_e2e.py no longer runs {missing} of {rel}"
