"""Identical translations translated once per test process.

Many tests translate the same program with the same options (each parametrization of a test, each
helper that reads a kernel's code): ``croq2triton.api.translate_full`` is wrapped so that a call with
the same arguments (defaults filled in, a tuning point by its values) and the same ``CROQ2TRITON_*``
environment returns a copy of the earlier result
(its lists and dicts copied: a test may add to them).  Errors are not kept (the call is made again).
conftest.py installs the wrapper before the test modules import the function, and its ``monkeypatch``
turns it off for the rest of a test that patches an attribute (it may change what translating does:
a policy, a lifting step; environment variables are part of the key); ``CROQ2TRITON_TEST_MEMO=0``
turns it off for the whole run.

Where ``CROQ2TRITON_TEST_MEMO_DIR`` names a folder (conftest.py makes one for each pytest run, which
its xdist workers share), a translation whose arguments are plain values is also kept there, pickled:
the corpus is translated by several test files (goldens, every kernel runs, both schedules agree,
...) whose tests land on different workers, and a process keeps only the last ``_SIZE`` in memory.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import os
import pickle
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import croq2triton.api as api
from croq2triton.options import Point

_MEMO: OrderedDict[object, Any] = OrderedDict()
_SIZE = 96
_STATE = {"on": os.environ.get("CROQ2TRITON_TEST_MEMO", "1") != "0"}
_REAL: Callable[..., Any] = api.translate_full
_SIGNATURE = inspect.signature(_REAL)
# variables the translator does not read, only the runtime at launch (tests/test_translation_memo.py
# checks where they are read): a test that sets them shares the translations made without them
AT_LAUNCH = frozenset({"CROQ2TRITON_NUM_SMS"})


def _arguments(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the defaults of the arguments not given, spelled one way where two spellings
    translate alike (no defines: ``None`` or ``{}``; no schedule: the source schedule): ``load(path)``
    and ``translate_full(text, filename=path, defines={})`` share a translation."""
    bound = _SIGNATURE.bind_partial(**kwargs)
    bound.apply_defaults()
    args = dict(bound.arguments)
    if not args.get("defines"):
        args["defines"] = None
    if args.get("schedule") is None:
        args["schedule"] = "source"
    return args


def _frozen(v: object) -> object:
    if isinstance(v, Point):  # (plain data: the point's translations shared between processes too)
        return ("Point", v.defines, v.kernels)
    if isinstance(v, Mapping):
        return tuple(sorted((str(k), _frozen(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(x) for x in v)
    return v


def _copied(tr: Any) -> Any:
    out = copy.copy(tr)
    for name in ("diagnostics", "lowered", "config_diagnostics"):
        setattr(out, name, list(getattr(tr, name)))
    for name in ("failed", "ir", "launchers", "schedules", "contractions", "tuned"):
        setattr(out, name, dict(getattr(tr, name)))
    return out


def _plain(v: object) -> bool:
    if isinstance(v, tuple):
        return all(_plain(x) for x in v)
    return v is None or isinstance(v, (str, int, float, bool))


def _disk_path(key: tuple[object, ...]) -> str | None:
    """Where the pickled translation of ``key`` is kept (None: no folder, or a key of objects)."""
    folder = os.environ.get("CROQ2TRITON_TEST_MEMO_DIR", "")
    if not folder or not os.path.isdir(folder) or not _plain(key):
        return None
    return os.path.join(folder, hashlib.sha256(repr(key).encode()).hexdigest() + ".pickle")


def _from_disk(path: str | None) -> Any:
    if path is None or not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception:  # noqa: BLE001 - a file another worker is writing, or one that does not load: translate
        return None


def _to_disk(path: str | None, tr: Any) -> None:
    if path is None:
        return
    try:
        data = pickle.dumps(tr)
    except Exception:  # noqa: BLE001 - a translation holding what pickle cannot take: memory only
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)  # (whole or not at all, for the other workers)


def translate_full(source: str, **kwargs: Any) -> Any:
    if not _STATE["on"] or kwargs.get("config") is not None:
        return _REAL(source, **kwargs)
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("CROQ2TRITON_") and k not in AT_LAUNCH))
    key = (source, _frozen(_arguments(kwargs)), env)
    try:
        hash(key)
    except TypeError:
        return _REAL(source, **kwargs)
    hit = _MEMO.get(key)
    if hit is None:
        path = _disk_path(key)
        hit = _from_disk(path)
        if hit is None:
            hit = _REAL(source, **kwargs)
            _to_disk(path, hit)
        else:
            api.REGISTRY.add(kwargs.get("filename") or "<input>", source)  # (as the call would)
        _MEMO[key] = hit
        if len(_MEMO) > _SIZE:
            _MEMO.popitem(last=False)
    else:
        _MEMO.move_to_end(key)
        api.REGISTRY.add(kwargs.get("filename") or "<input>", source)  # (as the call would)
    return _copied(hit)


def install() -> None:
    api.translate_full = translate_full  # type: ignore[assignment]


@contextmanager
def installed() -> Iterator[None]:
    """The memo in place of ``api.translate_full`` for a while: a request of the sm_90a compile worker
    (tests/access_lines.py), whose process serves other requests after it."""
    before = api.translate_full
    api.translate_full = translate_full  # type: ignore[assignment]
    try:
        yield
    finally:
        api.translate_full = before  # type: ignore[assignment]


@contextmanager
def enabled(on: bool) -> Iterator[None]:
    """The memo on (where the run allows it) for one test, unless :func:`off_for_this_test`."""
    before = _STATE["on"]
    _STATE["on"] = before and on
    try:
        yield
    finally:
        _STATE["on"] = before


def off_for_this_test() -> None:
    _STATE["on"] = False
