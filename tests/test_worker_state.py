"""The suite runs under ``pytest -n 8`` (pytest-xdist) on the GPU machine: one worker process runs
many tests in an order of its own, so no test may leave process-wide state behind for the next
one, and what a worker sends back must be rebuilt by the controller."""

from __future__ import annotations

import ast
import pickle
import sys
import types
from pathlib import Path

import pytest

from croq2triton.errors import REGISTRY, CroqError, CroqWarning, Diagnostic, Span

TESTS = Path(__file__).resolve().parent


def test_a_warning_is_rebuilt_from_its_args() -> None:
    # xdist's controller rebuilds a worker's warning as cls(*args): the formatted text, which
    # holds the source line ('{' of a Croqtile tuple included)
    REGISTRY.add("t.co", "__co__ void f(f32 [N] x) { g({1, 2}); }")
    d = Diagnostic("warning", "'f' is not translated: a {1, 2} view", Span.at("t.co", 1, 5), "see the README")
    w = CroqWarning(d)
    again = CroqWarning(*w.args)
    assert "{1, 2}" in str(w) and "^" in str(w)
    assert str(again) == str(w) and again.diagnostic.message == str(w)
    assert str(pickle.loads(pickle.dumps(w))) == str(w)


def _sets_environ(node: ast.AST) -> bool:
    for n in ast.walk(node):
        call = isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        if call and n.func.attr in ("setdefault", "update", "pop") and "environ" in ast.unparse(n.func.value):
            return True
        if isinstance(n, (ast.Assign, ast.Delete)):
            targets = n.targets
            if any(isinstance(t, ast.Subscript) and "environ" in ast.unparse(t.value) for t in targets):
                return True
    return False


@pytest.mark.parametrize("path", sorted(TESTS.glob("test_*.py")), ids=lambda p: p.name)
def test_no_test_module_changes_the_environment_when_imported(path: Path) -> None:
    # every worker imports every module when it collects: an environment variable set then (say
    # TRITON_INTERPRET=1) holds for all the tests of the process.  Set it inside the test, with
    # monkeypatch; kernel_util's choice of the CPU interpreter (under DEVICE == "cpu") is the exception
    tree = ast.parse(path.read_text())
    top = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.If))]
    assert not [ast.unparse(s) for s in top if _sets_environ(s)]


def _helper(x):  # noqa: ANN001, ANN202 - a stand-in for a runtime helper's @triton.jit function
    return x + 1


def test_the_interpreter_after_compiled_helpers_is_refused_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    # libmath / atomics are built for the mode in force at their first import: interpreted kernels
    # calling their compiled helpers would fail inside Triton ("Cannot call @triton.jit'd outside ...")
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    from croq2triton.api import load_source

    helpers = types.ModuleType("croq2triton.runtime.libmath")
    helpers.h = JITFunction(_helper)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "croq2triton.runtime.libmath", helpers)
    # the other helper module as the interpreter builds it (a process running compiled kernels, as the
    # suite does on a GPU, has loaded the real one compiled: the reason would name it too)
    atomics = types.ModuleType("croq2triton.runtime.atomics")
    atomics.h = InterpretedFunction(_helper)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "croq2triton.runtime.atomics", atomics)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(CroqError, match=r"runtime helpers libmath were loaded compiled\); kernels in the interpreter"):
        load_source("x = 1\n", "croq2triton_gen_worker_state_a", interpret=True)
    helpers.h = InterpretedFunction(_helper)  # type: ignore[attr-defined]
    assert load_source("x = 1\n", "croq2triton_gen_worker_state_b", interpret=True).x == 1
    monkeypatch.delitem(sys.modules, "croq2triton_gen_worker_state_b")
