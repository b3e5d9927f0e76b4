"""Identical translations translated once per test process.

Many tests translate the same program with the same options (each parametrization of a test, each
helper that reads a kernel's code): ``croq2triton.api.translate_full`` is wrapped so that a call with
the same arguments and the same ``CROQ2TRITON_*`` environment returns a copy of the earlier result
(its lists and dicts copied: a test may add to them).  Errors are not kept (the call is made again).
conftest.py installs the wrapper before the test modules import the function, and its ``monkeypatch``
turns it off for the rest of a test that patches an attribute (it may change what translating does:
a policy, a lifting step; environment variables are part of the key); ``CROQ2TRITON_TEST_MEMO=0``
turns it off for the whole run.
"""

from __future__ import annotations

import copy
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import croq2triton.api as api

_MEMO: OrderedDict[object, Any] = OrderedDict()
_SIZE = 96
_STATE = {"on": os.environ.get("CROQ2TRITON_TEST_MEMO", "1") != "0"}
_REAL: Callable[..., Any] = api.translate_full


def _frozen(v: object) -> object:
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


def translate_full(source: str, **kwargs: Any) -> Any:
    if not _STATE["on"] or kwargs.get("config") is not None:
        return _REAL(source, **kwargs)
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("CROQ2TRITON_")))
    key = (source, _frozen(kwargs), env)
    try:
        hash(key)
    except TypeError:
        return _REAL(source, **kwargs)
    hit = _MEMO.get(key)
    if hit is None:
        hit = _MEMO[key] = _REAL(source, **kwargs)
        if len(_MEMO) > _SIZE:
            _MEMO.popitem(last=False)
    else:
        _MEMO.move_to_end(key)
        api.REGISTRY.add(kwargs.get("filename") or "<input>", source)  # (as the call would)
    return _copied(hit)


def install() -> None:
    api.translate_full = translate_full  # type: ignore[assignment]


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
