"""A result computed once per test run, shared by the run's processes (pytest-xdist workers).

Some checks compute one expensive result that several tests read (the sm_90a access counts of a
function, tests/access_counts.py): each worker of ``pytest -n N`` would compute it again.
``shared(key, compute)`` keeps ``compute()``'s text in the folder the run's processes share
(``CROQ2TRITON_TEST_MEMO_DIR``, made by conftest.py for the run, as tests/translation_memo.py's
translations are), under a lock: the first process to ask computes it, the others wait for it and read
it. A failure (an exception) is not kept: the next process to ask computes it again. Without the
folder (a test run outside conftest.py) each process keeps its results in memory only.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Callable

_MEMORY: dict[str, str] = {}


def _folder() -> str | None:
    folder = os.environ.get("CROQ2TRITON_TEST_MEMO_DIR", "")
    return folder if folder and os.path.isdir(folder) else None


def shared(key: str, compute: Callable[[], str]) -> str:
    """``compute()`` for ``key`` (its inputs, spelled out: two keys alike must mean one result),
    computed once per test run."""
    if key in _MEMORY:
        return _MEMORY[key]
    folder = _folder()
    if folder is None:
        _MEMORY[key] = compute()
        return _MEMORY[key]
    name = os.path.join(folder, "once-" + hashlib.sha256(key.encode()).hexdigest())
    with open(name + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes: a process that dies frees it)
        if os.path.exists(name):
            with open(name) as f:
                text = f.read()
        else:
            text = compute()
            tmp = f"{name}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, name)
    _MEMORY[key] = text
    return text
