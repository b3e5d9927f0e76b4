"""Several tuning points as one kernel under ``triton.autotune`` (``translate --emit-autotune K``).

Triton's autotuner chooses among launch parameters of one compiled function: ``num_warps``,
``num_stages`` and constexpr arguments.  Points can share one kernel only where their kernels are
the same but for those: here that is checked on the tile IR (each point's kernels with their
tunable constexprs - ``GROUP_M``, ``NUM_STAGES``, schedule/gemm.py - and warps set aside must be
equal), not assumed from the names of the fields the points set.  Points that differ in a tile
shape, the persistent order, TMA or a define are different kernels: they need the per-size
dispatch of ``translate --config`` instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..tir import expr as E
from ..tir import nodes as N

# Schedule / TileSchedule fields that reach a kernel only as launch parameters (for messages: the
# check itself is on the IR)
LAUNCH_FIELDS = frozenset({"num_warps", "num_stages", "group_m"})

Config = tuple[tuple[str, int], ...]


class NotAutotunable(Exception):
    """The points' kernels differ in more than launch parameters; ``kernel`` is the first that
    does, ``index`` the first point whose kernel differs from the first point's."""

    def __init__(self, kernel: str, index: int, why: str) -> None:
        super().__init__(why)
        self.kernel = kernel
        self.index = index


def knobs(kernel: N.Kernel) -> Config:
    """The launch parameters of ``kernel`` ``triton.autotune`` may choose: its tunable constexprs
    (plain values, not extents fixed at launch) and ``num_warps``."""
    out = [(a.name, int(a.value)) for a in kernel.args if _is_knob(a)]
    return (*out, ("num_warps", kernel.num_warps))


def _is_knob(a: N.Arg) -> bool:
    return isinstance(a, N.Constexpr) and a.tunable and a.size is None and a.launch == "value"


def _code(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with its launch parameters and docstring set aside: what the compiler sees."""
    args = [dataclasses.replace(a, value=0) if _is_knob(a) else a for a in kernel.args]
    return dataclasses.replace(kernel, args=args, num_warps=0, doc="")


def launch_configs(points: Sequence[Sequence[N.Kernel]]) -> dict[str, tuple[Config, ...]]:
    """Per kernel, the distinct launch parameters of ``points`` (each point's kernels, in launch
    order), in the points' order: for the kernels whose parameters vary between points.  Raises
    :class:`NotAutotunable` where the points' kernels differ in anything else."""
    first = points[0]
    for i, kernels in enumerate(points[1:], start=1):
        names = [k.name for k in kernels]
        if names != [k.name for k in first]:
            raise NotAutotunable(first[0].name if first else "?", i, f"they launch other kernels ({', '.join(names)})")
        for a, b in zip(first, kernels, strict=True):
            if _code(a) != _code(b):
                raise NotAutotunable(a.name, i, "its code differs, not only its launch parameters")
    out: dict[str, tuple[Config, ...]] = {}
    for j, kernel in enumerate(first):
        configs = tuple(dict.fromkeys(knobs(p[j]) for p in points))
        if len(configs) > 1:
            out[kernel.name] = configs
    return out


def autotuned(kernel: N.Kernel, configs: tuple[Config, ...], note: str = "") -> N.Kernel:
    """``kernel`` launched through ``triton.autotune`` over ``configs``: keyed on its integer scalar
    arguments (the sizes), restoring the tensors it writes after each timed config."""
    allowed = {k for k, _ in knobs(kernel)}
    for c in configs:
        bad = [k for k, _ in c if k not in allowed]
        if bad:
            raise ValueError(f"{', '.join(bad)}: not a launch parameter of kernel {kernel.name}")
    key = tuple(a.name for a in kernel.args if isinstance(a, N.Scalar) and E.is_int(a.dtype))
    tensors = {a.name for a in kernel.args if isinstance(a, (N.Pointer, N.Scratch))}
    written: list[str] = []
    for s in N.walk(kernel.body):
        base = s.fallback.base if isinstance(s, N.TmaStore) else s.base if isinstance(s, (N.Store, N.Atomic)) else None
        if base in tensors and base not in written:
            written.append(base)
    return dataclasses.replace(kernel, autotune=N.Autotune(configs, key, tuple(written), note))
