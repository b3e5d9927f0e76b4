"""The sweep's records: one JSON line appended (and flushed) after every evaluated point.

A record's ``key`` is the hash of everything that decides its result: the source text's hash, the
function, the schedule mode and precision, the ``-D`` defines and the element-type rewrite, the
point, the sizes, the device's name and driver, and the croq2triton, Triton and torch versions.  A
sweep skips every point whose key is in the cache, so a second identical run does no work, a killed
run resumes where it stopped and adding one value to a parameter evaluates only the new points.

A cache directory may be shared between processes and machines (a network file system, or copied
around): each process appends to a file of its own (``records-HOST-PID-TIME-N.jsonl``), so no two
writers share a file and no locking is needed; reading merges every ``*.jsonl`` file of the
directory, the latest record of a key winning.  A line cut short by a killed process is skipped.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_WRITERS = itertools.count()

FORMAT = "croq2triton-tune-record/1"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_key(context: Mapping[str, Any], point_key: str, sizes: Mapping[str, Any]) -> str:
    """The key of one (point, sizes) evaluation in ``context`` (source, device, versions, ...)."""
    data = {"context": dict(context), "point": point_key, "sizes": dict(sizes)}
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


def size_key(sizes: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())


class Cache:
    """The records of a cache directory (read once, merged), and the file this process appends to."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        host = socket.gethostname().replace(os.sep, "_") or "host"
        # the time and a process-wide count: two writers one process opens in the same millisecond
        # still get files of their own
        self.path = self.dir / f"records-{host}-{os.getpid()}-{int(time.time() * 1000)}-{next(_WRITERS)}.jsonl"
        self._file: Any = None
        self.records: dict[str, dict[str, Any]] = self.read()

    def files(self) -> list[Path]:
        return sorted(self.dir.glob("*.jsonl"))

    def read(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for f in self.files():
            for rec in _lines(f):
                key = rec.get("key")
                if not isinstance(key, str):
                    continue
                old = out.get(key)
                if old is None or rec.get("time", 0) >= old.get("time", 0):
                    out[key] = rec
        return out

    def get(self, key: str) -> dict[str, Any] | None:
        return self.records.get(key)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record (a line, flushed to the file system) and remember it."""
        record = {"format": FORMAT, "time": time.time(), **record}
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the sweep
        self._file.write(json.dumps(record, sort_keys=True, default=str) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.records[record["key"]] = record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _lines(path: Path) -> Iterable[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a killed writer
            continue
        if isinstance(rec, dict):
            yield rec
