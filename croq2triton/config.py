"""A tuning config: what ``croq2triton tune`` found (its ``best.json``), read for ``translate --config``
and ``load(config=...)``.

The file names the function tuned, the schedule mode and f32 precision its points apply to, the
hash of the source it was tuned on, and per tuned size the winning point (``winners``) and the
best few (``top``, for ``--emit-autotune``).  A config may also be given as a dict of that form or
as a bare :class:`~.options.Point` (one point for every function and size).  Whatever is wrong in
it is an error located in the file (its line and column), never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import REGISTRY, CroqError, Diagnostic, Span
from .options import F32_PRECISIONS, SCHEDULES, Point

FORMAT = "croq2triton-tune/1"
HINT = "croq2triton tune writes best.json in this form (format croq2triton-tune/1)"

# what ``--config`` / ``load(config=...)`` take: a best.json's path, a dict of its form, or one point
ConfigLike = str | os.PathLike[str] | Mapping[str, Any] | Point


@dataclass(frozen=True)
class Tuned:
    """One tuned size (values of the function's sizes, by name) and a point timed there."""

    sizes: tuple[tuple[str, int], ...]
    point: Point
    ms: float | None = None
    at: Span | None = None  # where the config gives the point

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(v for _, v in self.sizes)

    def where(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.sizes) or "every size"


@dataclass(frozen=True)
class TuneConfig:
    """A tuning config.  ``func`` None: the points apply to every function (a bare point);
    ``schedule`` / ``f32_precision`` None: the config does not say (the caller's apply)."""

    origin: str  # the file's path, or how the config was given
    func: str | None
    schedule: str | None
    f32_precision: str | None
    source: str | None
    source_sha256: str | None
    winners: tuple[Tuned, ...]
    top: tuple[Tuned, ...] = ()
    text: str | None = None  # the file's text (to locate what is wrong in it)

    @property
    def symbols(self) -> tuple[str, ...]:
        """The names of the tuned sizes, in the config's order."""
        return tuple(k for k, _ in self.winners[0].sizes) if self.winners else ()

    def locate(self, needle: str, after: Span | None = None) -> Span | None:
        """The first place of ``needle`` in the file (from ``after`` on), or None."""
        return _locate(self.text, self.origin, needle, after)

    def source_note(self, text: str, path: str) -> Diagnostic | None:
        """A warning when the config was tuned on another text than ``text`` (the file ``path``)."""
        if self.source_sha256 is None:
            return None
        mine = hashlib.sha256(text.encode()).hexdigest()
        if mine == self.source_sha256.lower():
            return None
        was = f"{self.source} " if self.source else ""
        return Diagnostic(
            "warning",
            f"{self.origin} was tuned on {was}with sha256 {self.source_sha256[:12]}..., but {path} has sha256 "
            f"{mine[:12]}...: its points may not be the best for this text, or may not fit its kernels",
            self.locate('"source_sha256"'),
            f"tune again: croq2triton tune {path}",
        )


def read_config(config: ConfigLike) -> TuneConfig:
    """The tuning config ``config`` names: a path of a best.json, a dict of that form, or a
    :class:`Point`."""
    if isinstance(config, Point):
        return TuneConfig("the tuning point", None, None, None, None, None, (Tuned((), config),))
    if isinstance(config, Mapping):
        return _parse(config, "the tuning config", None)
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise CroqError(f"no tuning config {path}", hint="croq2triton tune writes best.json") from None
        except (OSError, UnicodeDecodeError) as e:
            raise CroqError(f"cannot read the tuning config {path}: {e}") from None
        REGISTRY.add(path, text)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise CroqError(f"the tuning config is not JSON: {e.msg}", Span.at(path, e.lineno, e.colno), HINT) from None
        if not isinstance(data, dict):
            raise CroqError(f"{path} holds a JSON {type(data).__name__}, not an object", Span.at(path, 1, 1), HINT)
        return _parse(data, path, text)
    raise CroqError(
        f"a tuning config is a path of a best.json, a dict of that form or a Point, not {type(config).__name__}"
    )


def _parse(data: Mapping[str, Any], origin: str, text: str | None) -> TuneConfig:
    def fail(message: str, needle: str | None = None, after: Span | None = None) -> CroqError:
        span = _locate(text, origin, needle, after) if needle else None
        if span is None and text is not None:
            span = Span.at(origin, 1, 1)
        return CroqError(f"{origin}: {message}", span, HINT)

    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise fail(f"format {fmt!r} is not {FORMAT!r}", '"format"')
    func = data.get("func")
    if func is not None and (not isinstance(func, str) or not func.isidentifier()):
        raise fail(f"'func' must name a function, not {func!r}", '"func"')
    schedule = data.get("schedule")
    if schedule is not None and schedule not in SCHEDULES:
        raise fail(f"schedule {schedule!r}: one of {', '.join(SCHEDULES)}", '"schedule"')
    precision = data.get("f32_precision")
    if precision is not None and precision not in F32_PRECISIONS:
        raise fail(f"f32_precision {precision!r}: one of {', '.join(F32_PRECISIONS)}", '"f32_precision"')
    sha = data.get("source_sha256")
    if sha is not None and not isinstance(sha, str):
        raise fail("'source_sha256' must be a string", '"source_sha256"')
    source = data.get("source")
    winners = _entries(data, "winners", origin, text, fail)
    if not winners:
        raise fail("'winners' is empty: no tuned point", '"winners"')
    top = _entries(data, "top", origin, text, fail)
    names = [k for k, _ in winners[0].sizes]
    for t in (*winners, *top):
        if [k for k, _ in t.sizes] != names:
            raise fail(
                f"every tuned size must name the same sizes ({', '.join(names) or 'none'}), not {t.where()}",
                '"point"',
                t.at,
            )
    return TuneConfig(
        origin,
        func,
        schedule,
        precision,
        source if isinstance(source, str) else None,
        sha,
        tuple(winners),
        tuple(top),
        text,
    )


def _entries(data: Mapping[str, Any], key: str, origin: str, text: str | None, fail: Any) -> list[Tuned]:
    items = data.get(key, [] if key == "top" else None)
    if not isinstance(items, list):
        raise fail(f"'{key}' must be a list of tuned points", f'"{key}"')
    out: list[Tuned] = []
    anchor = _locate(text, origin, f'"{key}"')
    for i, item in enumerate(items):
        before = anchor  # the entry's text starts after the previous entry's point
        at = _locate(text, origin, '"point"', anchor)
        anchor = at or anchor
        if not isinstance(item, dict):
            raise fail(f"{key}[{i}] must be an object with 'sizes' and 'point'", f'"{key}"')
        sizes = item.get("sizes", {})
        if not isinstance(sizes, dict) or not all(
            isinstance(k, str) and k.isidentifier() and type(v) is int and v > 0 for k, v in sizes.items()
        ):
            raise fail(f"{key}[{i}].sizes must map size names to positive integers, not {sizes!r}", '"sizes"', before)
        point = item.get("point")
        if not isinstance(point, dict):
            raise fail(f"{key}[{i}] has no 'point' object", '"point"', at)
        kernels = point.get("kernels", {})
        defines = point.get("defines", {})
        if not isinstance(kernels, dict) or not all(isinstance(v, dict) for v in kernels.values()):
            raise fail(f"{key}[{i}].point.kernels must map kernel names to their fields", '"kernels"', at)
        if not isinstance(defines, dict):
            raise fail(f"{key}[{i}].point.defines must map names to values", '"defines"', at)
        try:
            p = Point.from_json(point)
        except (ValueError, TypeError) as e:
            raise fail(f"{key}[{i}].point: {e}", '"point"', at) from None
        ms = item.get("ms")
        out.append(Tuned(tuple(sizes.items()), p, float(ms) if isinstance(ms, (int, float)) else None, at))
    return out


def _locate(text: str | None, origin: str, needle: str | None, after: Span | None = None) -> Span | None:
    """The span of the first ``needle`` in ``text`` after the start of ``after``."""
    if text is None or not needle:
        return None
    start = 0
    if after is not None and after.line > 0:
        lines = text.split("\n")
        start = sum(len(x) + 1 for x in lines[: after.line - 1]) + max(0, after.col - 1) + 1
    i = text.find(needle, start)
    if i < 0:
        return None
    line = text.count("\n", 0, i) + 1
    col = i - (text.rfind("\n", 0, i) + 1) + 1
    return Span.at(origin, line, col, line, col + len(needle))
