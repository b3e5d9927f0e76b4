"""A compile worker for the sm_90a checks (tests/sm90.py starts it; not a test).

The suite runs generated kernels in Triton's interpreter, which is process-wide, so the checks
that compile for Hopper need a process without it. Starting Python, torch and Triton for each
check costs seconds; this worker starts once per test process and answers requests, one JSON line
each on stdin:

    {"argv": ["compile", FILE, ...]}           croq2triton's command line (croq2triton.cli.main)
    {"script": PATH, "argv": [...]}             a script's main() (tests/aot_check.py)
    {"code": TEXT, "argv": [...]}               a snippet run as __main__ with sys.argv = argv

with the request's ``env`` (a dict) set for its duration. The reply is one line on the original
standard output, after ``MARK``: ``{"returncode", "stdout", "stderr"}`` of the request.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import sys
import traceback

MARK = "\x1ecroq-sm90-reply "


def _run(req: dict[str, object]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    # the whole environment, not only the request's: a request may set variables of its own
    # (``compile`` sets CROQ2TRITON_NUM_SMS to the target's count), which the next must not see
    saved_env = dict(os.environ)
    saved_argv = sys.argv
    try:
        os.environ.update({k: str(v) for k, v in dict(req.get("env") or {}).items()})
        argv = [str(a) for a in list(req.get("argv") or [])]  # type: ignore[arg-type]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if "script" in req:
                    sys.argv = [str(req["script"]), *argv]
                    runpy.run_path(str(req["script"]), run_name="__main__")
                elif "code" in req:
                    sys.argv = ["-c", *argv]
                    exec(compile(str(req["code"]), "<request>", "exec"), {"__name__": "__main__"})  # noqa: S102
                else:
                    from croq2triton.cli import main

                    sys.argv = ["croq2triton", *argv]
                    code = main(argv) or 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, int | None):
                    print(e.code, file=sys.stderr)
            except BaseException:  # noqa: BLE001 - reported as a failed process would report it
                traceback.print_exc()
                code = 1
    finally:
        sys.argv = saved_argv
        if dict(os.environ) != saved_env:
            os.environ.clear()
            os.environ.update(saved_env)
    return code, out.getvalue(), err.getvalue()


def main() -> None:
    reply = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    for line in sys.stdin:
        if not line.strip():
            continue
        code, out, err = _run(json.loads(line))
        reply.write(MARK + json.dumps({"returncode": code, "stdout": out, "stderr": err}) + "\n")
        reply.flush()


if __name__ == "__main__":
    main()
