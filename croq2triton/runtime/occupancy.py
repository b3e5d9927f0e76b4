"""Warps of a program whose tile is fixed at launch, and their check against the compiled kernel.

``warps_for`` picks the warps of a row-sized tile from its element count (the launcher's first
guess).  What it cannot see is the register count Triton's compiler gives the kernel: a program of
16 warps that takes 70 registers a thread leaves room for one program a SM (72 x 512 x 2 > 65,536),
and a kernel whose program loads a row, folds it twice and writes it (a LayerNorm over rows of
16,384 f16) then never overlaps one row's folds with the next row's loads.  On the H100 that ran at
0.75 of a device copy, and at 0.97 with 8 warps (115 registers, two programs a SM;
perf/probe_long_rows.py, perf/RESULTS.md 2026-12-07 16:50).

So ``warps_for`` returns a :class:`FitWarps`, and :func:`fitted` (called by ``launch``) compiles the
kernel at those warps once per kernel and launch constants; where it keeps fewer than two programs a
SM and the grid has more programs than SMs, the warps halved and doubled are compiled too and the one
keeping the most programs resident (up to two) is launched, the first guess on a tie.  The choice is
cached; the interpreter, and warps a user or a tuning point gave, are left alone.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import torch

REGISTERS_PER_SM = 65536
THREADS_PER_SM = 2048
ENOUGH = 2  # programs a SM that let one program's loads overlap another's folds


class Sm(NamedTuple):
    """What a SM of a device holds: its count, registers, threads and shared memory."""

    count: int
    registers: int
    threads: int
    shared: int


@functools.cache
def _sm(device: int) -> Sm:
    props = torch.cuda.get_device_properties(device)
    return Sm(
        props.multi_processor_count,
        getattr(props, "regs_per_multiprocessor", REGISTERS_PER_SM) or REGISTERS_PER_SM,
        getattr(props, "max_threads_per_multi_processor", THREADS_PER_SM) or THREADS_PER_SM,
        getattr(props, "shared_memory_per_multiprocessor", 0) or 233472,
    )


class FitWarps(int):
    """Warps the launcher guessed from a tile's size (``warps_for``); ``launch`` may move them."""


def warps_for(elements: int, per_thread: int, least: int = 4) -> int:
    """The warps of a program whose tile of ``elements`` is fixed at launch: the power of two that
    gives each thread about ``per_thread`` elements, from ``least`` to 16."""
    warps = least
    while warps < 16 and elements > warps * 32 * per_thread:
        warps *= 2
    return FitWarps(warps)


_CHOSEN: dict[tuple[Any, ...], int] = {}


def fitted(kernel: Any, grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``num_warps`` moved where a :class:`FitWarps` guess keeps fewer than
    :data:`ENOUGH` programs a SM (module docstring); plain warps pass as they are."""
    warps = kwargs.get("num_warps")
    if type(warps) is not FitWarps:
        return kwargs
    programs = 1
    for g in grid:
        programs *= g
    device = torch.cuda.current_device()
    if programs <= _sm(device).count:  # one wave: programs a SM do not matter
        return {**kwargs, "num_warps": int(warps)}
    key = (id(kernel), device, int(warps), tuple(sorted((k, v) for k, v in kwargs.items() if k != "num_warps")))
    if key not in _CHOSEN:
        _CHOSEN[key] = _choose(kernel, grid, args, kwargs, int(warps), device)
    return {**kwargs, "num_warps": _CHOSEN[key]}


def _choose(
    kernel: Any, grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any], warps: int, device: int
) -> int:
    resident = {warps: _resident(kernel, grid, args, kwargs, warps, device)}
    if resident[warps] is None or resident[warps] >= ENOUGH:
        return warps
    for other in (warps // 2, warps * 2):
        if 1 <= other <= 32:
            resident[other] = _resident(kernel, grid, args, kwargs, other, device)
    best = warps
    for w, r in resident.items():
        if r is not None and min(r, ENOUGH) > min(resident[best] or 0, ENOUGH):
            best = w
    return best


def _resident(
    kernel: Any, grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any], warps: int, device: int
) -> int | None:
    """Programs of ``kernel`` compiled at ``warps`` that a SM holds at once (None: unknown)."""
    try:
        compiled = kernel.warmup(*args, grid=grid, **{**kwargs, "num_warps": warps})
        compiled._init_handles()
        regs, spills = int(compiled.n_regs), int(compiled.n_spills)
        shared = int(compiled.metadata.shared)
    except Exception:  # noqa: BLE001 - a variant that does not compile is not chosen
        return None
    if spills:
        return 0
    sm = _sm(device)
    threads = 32 * warps
    by_regs = sm.registers // max(1, ((regs + 7) // 8) * 8 * threads)
    by_threads = sm.threads // threads
    by_shared = sm.shared // shared if shared else by_threads
    return min(by_regs, by_threads, by_shared)
