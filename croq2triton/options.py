"""How a file is translated, as one value passed through the pipeline (api.py): which schedule the
kernels run under, what an f32 product means, and a tuning point (:class:`Point`: values of the
source's own parameters and of the schedule fields of named kernels).

Precision is not a schedule choice: a schedule never changes what a kernel computes, the precision
of f32 products does.  An f32 contraction keeps f32-accurate products unless the user opts in to TF32
(``--allow-tf32``, ``load(..., allow_tf32=True)``) or its operands are declared ``tf32`` (the source
states TF32).  f32-accurate products are ``tf32x3`` by default (Triton's split of each f32 into a
TF32 value and its TF32 remainder, three tensor-core products per f32 product) and IEEE f32 FMAs on
request (``--f32-precision ieee``).  Measured on the H200 (perf/bench_f32.py, perf/RESULTS.md
2026-12-03 12:50; max |error| / max |float64 reference| at 1024^3 and 4096^3): tf32x3 2.8e-7..5.4e-7,
IEEE 1.2e-6..2.9e-6 (cuBLAS in IEEE f32 the same), TF32 7.7e-4..8.0e-4: tf32x3 is within the f32
tolerance, and faster than IEEE in 3 of the 4 cases measured (an MMA on f32 tiles: 1.14-1.48x cuBLAS
IEEE f32 against 0.06-0.39x; a per-thread f32 loop under the source schedule 0.33 against 0.29, under
auto 0.64 against 0.83).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

SCHEDULES = ("source", "auto")
F32_PRECISIONS = ("ieee", "tf32x3", "tf32")

Precision = Literal["ieee", "tf32x3", "tf32"]
DEFAULT_F32: Precision = "tf32x3"  # f32-accurate and faster than IEEE FMAs on the H200 (above)


Value = int | bool | str | tuple[int, ...]


@dataclass(frozen=True)
class Point:
    """A tuning point: ``defines`` (the source's own parameters, as ``-D NAME=VALUE``) and, per kernel
    (``matmul_k0``), values of fields of the :class:`~croq2triton.schedule.schedule.Schedule` (a
    contraction) or :class:`~croq2triton.schedule.schedule.TileSchedule` (a tile kernel) it runs
    under; fields not named keep what the schedule policy picks.  Data, hashable, written to JSON."""

    defines: tuple[tuple[str, str], ...] = ()
    kernels: tuple[tuple[str, tuple[tuple[str, Value], ...]], ...] = ()

    @staticmethod
    def of(
        defines: Mapping[str, object] | None = None, kernels: Mapping[str, Mapping[str, Any]] | None = None
    ) -> Point:
        d = tuple(sorted((k, str(v)) for k, v in (defines or {}).items()))
        ks = tuple(
            sorted(
                (name, tuple(sorted((f, _value(v)) for f, v in fields.items())))
                for name, fields in (kernels or {}).items()
            )
        )
        return Point(d, tuple((n, f) for n, f in ks if f))

    def overrides(self, kernel: str) -> dict[str, Value]:
        """The schedule fields this point sets for ``kernel``."""
        return {f: v for name, fields in self.kernels if name == kernel for f, v in fields}

    def to_json(self) -> dict[str, Any]:
        return {
            "defines": dict(self.defines),
            "kernels": {
                name: {f: list(v) if isinstance(v, tuple) else v for f, v in fields} for name, fields in self.kernels
            },
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Point:
        return Point.of(data.get("defines"), data.get("kernels"))

    def key(self) -> str:
        """A stable text of the point (cache keys, file names)."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    def describe(self) -> str:
        parts = [f"-D{k}={v}" for k, v in self.defines]
        for name, fields in self.kernels:
            parts += [f"{name}.{f}={_show(v)}" for f, v in fields]
        return " ".join(parts) or "(the schedule's own choices)"


def _value(v: Any) -> Value:
    if isinstance(v, list):
        return tuple(int(x) for x in v)
    if isinstance(v, (bool, int, str, tuple)):
        return v
    raise ValueError(f"a schedule value must be an integer, a boolean, a string or a list of integers, not {v!r}")


def _show(v: Value) -> str:
    return "x".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


# kernel -> the launch parameters ``triton.autotune`` chooses among (``--emit-autotune``): each
# config a tuple of (parameter, value), ``num_warps`` among them
LaunchConfigs = tuple[tuple[str, tuple[tuple[tuple[str, int], ...], ...]], ...]


@dataclass(frozen=True)
class Options:
    """``schedule``: ``source`` keeps the tiles, stages and roles the ``.co`` states, ``auto`` lets the
    translator pick them.  ``f32_precision``: the products of tensor-core dots on f32 operands.
    ``autotune``: kernels launched through ``triton.autotune`` over launch parameters only."""

    schedule: Literal["source", "auto"] = "source"
    f32_precision: Precision = DEFAULT_F32
    point: Point = field(default_factory=Point)
    autotune: LaunchConfigs = ()

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule {self.schedule!r}: one of {', '.join(SCHEDULES)}")
        if self.f32_precision not in F32_PRECISIONS:
            raise ValueError(f"f32_precision {self.f32_precision!r}: one of {', '.join(F32_PRECISIONS)}")

    def launch_configs(self, kernel: str) -> tuple[tuple[tuple[str, int], ...], ...]:
        """The configs ``triton.autotune`` chooses among for ``kernel`` (none: it is launched as tiled)."""
        return next((configs for name, configs in self.autotune if name == kernel), ())

    @property
    def allow_tf32(self) -> bool:
        return self.f32_precision == "tf32"

    def dot_precision(self, *elems: str) -> str | None:
        """``tl.dot``'s ``input_precision`` for operands of these element types (None: the dtype's
        own products, for 16- and 8-bit floats and integers)."""
        if "tf32" in elems:  # the source states TF32
            return "tf32"
        if "f32" in elems:
            return self.f32_precision
        if "f64" in elems:  # exact f64 products (the default, TF32, is meant for f32 operands)
            return "ieee"
        return None

    def with_(self, **changes: object) -> Options:
        return replace(self, **changes)  # type: ignore[arg-type]


def options_of(
    schedule: str = "source", allow_tf32: bool = False, f32_precision: str | None = None, point: Point | None = None
) -> Options:
    """The options of the public API's keyword arguments (``f32_precision`` wins over ``allow_tf32``)."""
    precision = f32_precision or ("tf32" if allow_tf32 else DEFAULT_F32)
    return Options(schedule, precision, point or Point())  # type: ignore[arg-type]
