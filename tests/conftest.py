from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import interpreter_calls
import pytest
import translation_memo

translation_memo.install()  # before the test modules import translate_full

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


@pytest.fixture(autouse=True)
def _interpreter_device_calls() -> None:
    """tests/interpreter_calls.py, installed once Triton is imported (not before: Triton's own
    ``@jit`` functions must be made after the generated modules set ``TRITON_INTERPRET``)."""
    if "triton.runtime.interpreter" in sys.modules:
        interpreter_calls.install()


@pytest.fixture(autouse=True)
def _translations_memoised() -> Iterator[None]:
    """Identical translations are made once a process (tests/translation_memo.py); a test that
    patches an attribute (a policy, a lifting step) turns that off for itself (below)."""
    with translation_memo.enabled(True):
        yield


class _MonkeyPatch(pytest.MonkeyPatch):
    """pytest's ``monkeypatch``; patching an attribute or an item turns off the translation memo for
    the rest of the test (environment variables are part of the memo's key)."""

    def setattr(self, *args: Any, **kwargs: Any) -> None:
        translation_memo.off_for_this_test()
        super().setattr(*args, **kwargs)

    def delattr(self, *args: Any, **kwargs: Any) -> None:
        translation_memo.off_for_this_test()
        super().delattr(*args, **kwargs)

    def setitem(self, dic: Any, name: Any, value: Any) -> None:
        if dic is not os.environ:  # (setenv sets an item of os.environ)
            translation_memo.off_for_this_test()
        super().setitem(dic, name, value)

    def delitem(self, dic: Any, name: Any, raising: bool = True) -> None:
        if dic is not os.environ:
            translation_memo.off_for_this_test()
        super().delitem(dic, name, raising=raising)


@pytest.fixture
def monkeypatch() -> Iterator[pytest.MonkeyPatch]:
    mp = _MonkeyPatch()
    yield mp
    mp.undo()


# tests/golden holds generated modules (compared by test_golden.py), not tests
collect_ignore = ["golden"]

# CROQ2TRITON_TEST_DEVICE (tests/kernel_util.py): "cpu" runs kernels in Triton's interpreter;
# otherwise (cuda) the process runs them compiled, and Triton's interpreter is process-wide
TEST_DEVICE = os.environ.get("CROQ2TRITON_TEST_DEVICE", "cpu")


def _numpy_too_new() -> bool:
    import numpy as np

    return tuple(int(x) for x in np.__version__.split(".")[:2]) >= (2, 4)


# Triton 3.6's interpreter needs numpy<2.4 (pyproject pins it); a machine that has another numpy (the
# GPU machine's own environment) cannot run some kernels in it: those tests are skipped there
NUMPY_TOO_NEW = pytest.mark.skipif(
    _numpy_too_new(), reason="Triton 3.6's interpreter needs numpy<2.4 (pinned by pyproject); this numpy is newer"
)


def pythonpath(*first: str | Path) -> str:
    """PYTHONPATH for a child process: ``first`` (the checkout, ...), then what this process was given
    (on the GPU machine ply and pytest-xdist come from there)."""
    return os.pathsep.join([*map(str, first), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])


# the long tier (tests marked ``long``): runs where CROQ2TRITON_LONG=1, as the GPU pass does
# (perf/device_pass.sh); without it the default run covers each path at a shorter size
LONG = os.environ.get("CROQ2TRITON_LONG") == "1"
LONG_SKIP = (
    "a long interpreter run of a path a shorter test covers (another size, rows past the registers, more "
    "fuzz cases): CROQ2TRITON_LONG=1 runs it"
)


# the tests that take longest (seconds each, most of them waiting on processes of their own: tune's
# workers, a fresh interpreter, a Ray cluster), longest first. They run first: pytest-xdist hands
# out tests in the order collected, and one of them started last would run on while the other
# workers have nothing left (a name matches its parametrizations too)
SLOW_FIRST = (
    "test_tune.py::test_sweep_faults_report_cache_and_two_stand_in_gpus",
    "test_tune.py::test_a_killed_sweep_resumes_where_it_stopped",
    "test_fuzz.py::test_mutated_sources_translate_or_fail_with_diagnostics",
    "test_tune_ray.py::test_ray_local_cluster_streams_records_into_the_cache",
    "test_check_verdicts.py::test_every_corpus_file",
    "test_tune.py::test_best_json_of_a_function_with_bool_and_float_parameters_is_a_config",
    "test_cli.py::test_the_readme_main_command_runs_in_a_fresh_process_as_written",
    "test_kernels_corpus.py::test_every_corpus_file_translates_or_explains",
    "test_cli_user.py::test_launch_time_warnings_point_at_the_co_line",
    "test_docs.py::test_example[tune.md:13]",
    "test_splitk.py::test_tune_dry_run_prunes_a_split_k_past_the_k_steps",
    "test_totals.py::test_rows_past_the_registers_fold_blocks_then_the_total",
    "test_tune_config.py::test_emit_autotune_compiles_each_config_for_sm90",
    "test_cli.py::test_run_subcommand",
    "test_tune_space.py::test_dry_run_prunes_warp_n_180_with_its_reason",
    "test_tune.py::test_prepare_compiles_for_sm90_and_reports_the_compiled_figures",
    "test_lowerability.py::test_the_corpus",
    "test_corpus_e2e.py::test_ampere_m8n8k4_fill_1_5",
)


def _slow_rank(item: pytest.Item) -> int:
    path, _, test = item.nodeid.partition("::")
    name = f"{path.split('/')[-1]}::{test}"
    for i, slow in enumerate(SLOW_FIRST):
        if name == slow or name.split("[")[0] == slow:
            return i
    return len(SLOW_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_slow_rank)  # (stable: the others keep their order)
    if LONG:
        return
    skip = pytest.mark.skip(reason=LONG_SKIP)
    for item in items:
        if item.get_closest_marker("long") is not None:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist's load scheduling (-n N) hands a worker a quarter of its share of the tests at
    # once unless told otherwise: a few at a time instead, so that the workers finish together
    # (the tests take from milliseconds to a minute each)
    if getattr(config.option, "maxschedchunk", False) is None:
        config.option.maxschedchunk = 1
    # the folder the translation memo of this run's processes share (tests/translation_memo.py): made
    # by the run's first process, before it starts any xdist worker, which inherit the variable
    if not hasattr(config, "workerinput") and "CROQ2TRITON_TEST_MEMO_DIR" not in os.environ:
        folder = tempfile.mkdtemp(prefix="croq2triton-test-memo-")
        os.environ["CROQ2TRITON_TEST_MEMO_DIR"] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    config.addinivalue_line(
        "markers",
        "interpreter: checks behaviour of Triton's interpreter; where the suite runs kernels compiled "
        "(CROQ2TRITON_TEST_DEVICE=cuda) the test runs in a fresh process with TRITON_INTERPRET=1",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A test marked ``interpreter`` in a process that runs kernels compiled: the same test, run by
    pytest in a fresh process on the CPU interpreter, must pass there (its skip is this test's skip)."""
    if pyfuncitem.get_closest_marker("interpreter") is None or TEST_DEVICE == "cpu":
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CROQ2TRITON_FAILLOG"))}
    env.update(CROQ2TRITON_TEST_DEVICE="cpu", TRITON_INTERPRET="1", PYTHONPATH=pythonpath(REPO))
    with tempfile.TemporaryDirectory(prefix="croq-interpreter-") as tmp:
        argv = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", f"--basetemp={tmp}/t"]
        r = subprocess.run(
            [*argv, "--rootdir", str(REPO), pyfuncitem.nodeid],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
    lines = r.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    if r.returncode == 0 and " passed" in last and "failed" not in last:
        return True
    if r.returncode == 0 and " skipped" in last:
        pytest.skip("in a fresh interpreter process: " + " ".join(x for x in lines if x.startswith("SKIPPED")))
    raise AssertionError(
        f"in a fresh process with TRITON_INTERPRET=1 (exit {r.returncode}):\n{(r.stdout + r.stderr)[-6000:]}"
    )


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
    with open(log + ".full", "a") as f:  # the whole report's end, captured output included
        captured = "".join(f"\n--- {name}\n{content[-3000:]}" for name, content in report.sections)
        f.write(f"==== {report.nodeid} [{report.when}]\n{text[-6000:]}{captured}\n")
