"""The sm_90a compile checks' process (not a test module): one worker per test process.

Compiling for Hopper needs a process without Triton's interpreter (process-wide; the suite runs
kernels in it). ``croq(...)``, ``script(...)`` and ``code(...)`` send the request to a worker
(tests/sm90_server.py) started on first use and kept for the session, and return what a fresh
process would: a ``subprocess.CompletedProcess`` with the exit status, standard output and error.
A worker that dies (a crash inside the compiler) is reported as the request's failure and
replaced for the next request.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SERVER = REPO / "tests" / "sm90_server.py"
MARK = "\x1ecroq-sm90-reply "
TIMEOUT_S = 900

_worker: subprocess.Popen[str] | None = None


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "CROQ2TRITON_NUM_SMS")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + str(REPO / "tests") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _start() -> subprocess.Popen[str]:
    global _worker
    if _worker is None or _worker.poll() is not None:
        _worker = subprocess.Popen(
            [sys.executable, str(SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=_env(),
            cwd=str(REPO),
        )
    return _worker


def _stop() -> None:
    global _worker
    if _worker is not None:
        _worker.kill()
        _worker.wait()
        _worker = None


atexit.register(_stop)


def _ask(req: dict[str, object]) -> subprocess.CompletedProcess[str]:
    args = list(req.get("argv") or [])  # type: ignore[arg-type]
    w = _start()
    assert w.stdin is not None and w.stdout is not None
    w.stdin.write(json.dumps(req) + "\n")
    w.stdin.flush()
    sel = selectors.DefaultSelector()
    sel.register(w.stdout, selectors.EVENT_READ)
    while True:
        if not sel.select(TIMEOUT_S):
            _stop()
            return subprocess.CompletedProcess(args, -9, "", f"the compile worker took over {TIMEOUT_S} s")
        line = w.stdout.readline()
        if not line:
            code = w.wait()
            _stop()
            return subprocess.CompletedProcess(args, code or -1, "", f"the compile worker died (exit {code})")
        if line.startswith(MARK):
            r = json.loads(line[len(MARK) :])
            return subprocess.CompletedProcess(args, r["returncode"], r["stdout"], r["stderr"])


def croq(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``croq2triton ARGV...`` (the compile command) as a fresh process without the interpreter."""
    return _ask({"argv": list(argv), "env": env or {}})


def script(path: Path | str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python PATH ARGV...`` in the worker (the script's ``if __name__ == "__main__"`` part)."""
    return _ask({"script": str(path), "argv": list(argv)})


def code(text: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -c TEXT ARGV...`` in the worker."""
    return _ask({"code": text, "argv": list(argv)})
