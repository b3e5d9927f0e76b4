"""What rules a tuning point out, each with its reason.

Before compiling, from the point's translation (its schedules, the proved contractions, the tile-IR
kernels) and the device's limits:

* the translator's own diagnostic where the point does not translate (the sweep records it, never
  crashes on it);
* shared memory: a contraction's pipeline holds ``num_stages`` buffers of its A and B tiles, and a
  TMA-store epilogue a buffer of half the output tile (:func:`contraction_shared`); over the
  device's limit (232,448 B a block on H100 / H200) the launch fails;
* accumulator registers: a contraction's f32 accumulator takes ``block_m * block_n / (32 * num_warps)``
  registers a thread; past ``MAX_ACC_REGISTERS`` too few of the 255 are left and it spills;
* tile extents: the source's MMA tile must be one WGMMA takes (N a multiple of 8, K a multiple of
  32 bytes' worth of elements); a tile kernel's largest tile must fit Triton's 2**20 elements;
* TMA boxes: at most 256 elements a dimension, the inner one at least 16 bytes and a multiple of 16;

and at the sizes swept (:func:`at_sizes`): a split-K count larger than the K steps there are (the
launcher would take fewer: the point of a smaller ``split_k``); and the launcher's own checks (a
divisibility the source asserts, a tile past Triton's limit) when the launch is recorded (the
worker does that: :mod:`.workers`).  After
compiling (on a GPU host): a kernel that spills registers (local memory in its resource usage) or
needs more shared memory than the device has, with the compiled figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import prod
from typing import Any

from ..errors import CroqSemanticError, CroqSyntaxError
from ..frontend import ast as A
from ..schedule.schedule import Schedule, TileSchedule
from ..schedule.shared import SHARED_LIMIT, contraction_shared
from ..tir import nodes as N
from ..tir.contract import Contraction

MAX_REGISTERS = 255
MAX_ACC_REGISTERS = 192  # the accumulator's share of a thread's registers (schedule/policy.py's source rule)
MAX_TMA_BOX = 256
MIN_TMA_INNER_BYTES = 16
MAX_BLOCK_ELEMENTS = 1 << 20  # Triton's largest block (TRITON_MAX_TENSOR_NUMEL)

BYTES = {
    "f8_e4m3": 1, "f8_e5m2": 1, "s8": 1, "u8": 1, "f16": 2, "bf16": 2, "s16": 2, "u16": 2,
    "f32": 4, "tf32": 4, "s32": 4, "u32": 4, "i32": 4, "f64": 8, "s64": 8, "u64": 8, "i64": 8, "i1": 1, "bool": 1,
}  # fmt: skip


@dataclass(frozen=True)
class Limits:
    """The device's limits the static checks use (from the benchmark worker's device when known)."""

    shared: int = SHARED_LIMIT
    registers: int = MAX_REGISTERS


def _bytes(elem: str) -> int:
    return BYTES.get(elem, 2)


def accumulator_registers(s: Schedule) -> int:
    """Registers a thread holds of the f32 (or s32) accumulator."""
    return -(-s.block_m * s.block_n // (32 * s.num_warps))


def _uses_mma(fn: A.CoFunction | None) -> bool:
    if fn is None:
        return False
    return any(isinstance(n, A.MmaOp) for s in fn.body for n in s.walk())


def source_tile_reason(c: Contraction, fn: A.CoFunction | None, block_n: int) -> str | None:
    """The MMA tile the source states (rows, columns, K step) is one WGMMA cannot take."""
    if not _uses_mma(fn):
        return None
    rows, cols, k_step = c.source_tile
    width = max(_bytes(c.a.elem), _bytes(c.b.elem))
    k_unit = 32 // width
    if cols % 8:
        return (
            f"tile extents: the source's MMA tile is {rows} x {cols} x {k_step}; WGMMA takes N in multiples of 8 "
            f"({cols} is not: the tutorial's compile error); the translation would round its block to {block_n} "
            "columns, the kernel of another point"
        )
    if k_step > 1 and k_step % k_unit:
        return (
            f"tile extents: the source's MMA tile is {rows} x {cols} x {k_step}; WGMMA takes K in multiples of "
            f"{k_unit} for {width}-byte operands"
        )
    return None


def contraction_reasons(s: Schedule, c: Contraction, fn: A.CoFunction | None, limits: Limits) -> list[str]:
    out: list[str] = []
    tile = source_tile_reason(c, fn, s.block_n)
    if tile is not None:
        out.append(tile)
    shared = contraction_shared(s, c)
    if shared > limits.shared:
        epi = " + half an output tile" if s.tma_store and s.persistent else ""
        out.append(
            f"shared memory: {shared:,} B ({s.num_stages} stages x ({s.block_m} + {s.block_n}) x {s.block_k} "
            f"tiles{epi}) > {limits.shared:,} B"
        )
    regs = accumulator_registers(s)
    if regs > MAX_ACC_REGISTERS:
        out.append(
            f"registers: the {s.block_m} x {s.block_n} accumulator takes {regs} registers a thread over "
            f"{s.num_warps} warps (> {MAX_ACC_REGISTERS} of {limits.registers}: it would spill)"
        )
    return out


def _dtype_of(kernel: N.Kernel, tensor: str, contraction: Contraction | None) -> str | None:
    for a in kernel.args:
        if isinstance(a, N.Pointer) and a.tensor == tensor:
            return a.dtype
    if contraction is not None:
        for op in (contraction.a, contraction.b, contraction.out):
            if op.tensor == tensor:
                return op.elem
    return None


def tma_reasons(kernel: N.Kernel, contraction: Contraction | None) -> list[str]:
    out: list[str] = []
    for a in kernel.args:
        if not isinstance(a, N.Descriptor):
            continue
        box = list(a.block)
        if any(b > MAX_TMA_BOX for b in box):
            out.append(f"TMA box: {a.name} is {box}, more than {MAX_TMA_BOX} elements in a dimension")
        dtype = _dtype_of(kernel, a.tensor, contraction)
        if dtype is not None and box:
            inner = box[-1] * _bytes(dtype)
            if inner < MIN_TMA_INNER_BYTES or inner % 16:
                out.append(
                    f"TMA box: {a.name}'s inner dimension is {inner} B ({box[-1]} x {dtype}); TMA needs at least "
                    f"{MIN_TMA_INNER_BYTES} B, a multiple of 16"
                )
    return out


def tile_kernel_reasons(kernel: N.Kernel, limits: Limits) -> list[str]:
    out: list[str] = []
    # (tiles with an extent fixed at launch, a row kept whole: the compiled figures judge them)
    tiles = [
        (v.name, prod(v.shape), v.type)
        for s in N.walk(kernel.body)
        for v in N.defines(s)
        if v.shape and all(isinstance(d, int) for d in v.shape)
    ]
    if not tiles:
        return out
    name, elements, dtype = max(tiles, key=lambda t: t[1] * _bytes(t[2]))
    if elements > MAX_BLOCK_ELEMENTS:
        out.append(f"tile extents: '{name}' holds {elements:,} elements, more than Triton's {MAX_BLOCK_ELEMENTS:,}")
    regs = -(-elements * max(1, _bytes(dtype)) // (4 * 32 * kernel.num_warps))
    if regs > limits.registers:
        out.append(
            f"registers: the tile '{name}' ({elements:,} x {dtype}) takes {regs} registers a thread over "
            f"{kernel.num_warps} warps (> {limits.registers})"
        )
    return out


def failure_kind(e: Exception) -> str:
    """Why a point does not translate: the program at this point is not valid Croqtile (an error a
    user would be shown: ``invalid``), or it is and croq2triton refuses it (a form it does not
    translate, a schedule field it cannot take)."""
    return "invalid" if isinstance(e, (CroqSemanticError, CroqSyntaxError)) else "does not translate"


def before_compiling(translation: Any, func: str, fn: A.CoFunction | None, limits: Limits | None = None) -> list[str]:
    """The reasons the point of ``translation`` is ruled out before compiling (empty: kept)."""
    limits = limits or Limits()
    failed = translation.failed.get(func)
    if failed is not None:
        d = failed.diagnostics[0]
        where = f" (line {d.span.line})" if d.span is not None and d.span.line else ""
        return [f"{failure_kind(failed)}: {d.message}{where}"]
    out: list[str] = []
    schedules: dict[str, Schedule | TileSchedule] = translation.schedules.get(func, {})
    contractions: dict[str, Contraction] = translation.contractions.get(func, {})
    for kernel, s in schedules.items():
        c = contractions.get(kernel)
        if isinstance(s, Schedule) and c is not None:
            out += contraction_reasons(s, c, fn, limits)
    for k in translation.ir.get(func, []):
        base = base_kernel(k.name)
        c = contractions.get(base)
        out += tma_reasons(k, c)
        if c is None:
            out += tile_kernel_reasons(k, limits)
    unique: list[str] = []
    for r in out:
        if r not in unique:
            unique.append(r)
    return unique


# the suffixes of the kernels a kernel is emitted as besides itself: a tile kernel's narrow variant
# (emit/kernels.py), the auto policy's tiles at launch and split-K's kernels (schedule/occupancy.py)
_VARIANT = re.compile(r"_(?:narrow|t\d+x\d+|splitk_sum|splitk|sum)(?=(?:__t\d+)?$)")


def base_kernel(name: str) -> str:
    """The kernel (as the schedules name it) that emitted kernel ``name`` is a variant of."""
    return _VARIANT.sub("", name, count=1)


def _k_extent(fn: A.CoFunction | None, tensor: str, dim: int, values: dict[str, Any]) -> int | None:
    """An extent of a parameter tensor at the sizes ``values`` (None: not a parameter, or not known)."""
    for p in fn.params if fn is not None else []:
        shape = p.type.shape
        if p.name != tensor or shape is None or not shape.dims or dim >= len(shape.dims):
            continue
        d = shape.dims[dim]
        if isinstance(d, A.IntLit):
            return d.value
        if isinstance(d, A.Name) and isinstance(values.get(d.name), int):
            return int(values[d.name])
    return None


def at_sizes(translation: Any, func: str, fn: A.CoFunction | None, values: dict[str, Any]) -> list[str]:
    """The reasons a point is out at the sizes ``values``: a split-K count above the K steps there are
    (the launcher takes at most one split a K step, so it is the point of a smaller count)."""
    out: list[str] = []
    schedules: dict[str, Schedule | TileSchedule] = translation.schedules.get(func, {})
    contractions: dict[str, Contraction] = translation.contractions.get(func, {})
    for kernel, s in schedules.items():
        c = contractions.get(kernel)
        if not isinstance(s, Schedule) or c is None or s.split_k <= 1:
            continue
        k = _k_extent(fn, c.a.tensor, c.a.inner, values)
        if k is None:
            continue
        steps = -(-k // s.block_k)
        if s.split_k > steps:
            out.append(
                f"split_k: {s.split_k} splits of K = {k}, which has {steps} K step(s) of {s.block_k}: a split would "
                f"have none (the launcher takes {max(1, steps)}: the point of split_k = {max(1, steps)})"
            )
    return out


def after_compiling(figures: dict[str, dict[str, Any]], limits: Limits | None = None) -> list[str]:
    """Reasons from the compiled kernels' figures (``{kernel: {shared, registers, spills, ...}}``)."""
    limits = limits or Limits()
    out: list[str] = []
    for kernel, f in figures.items():
        spills = f.get("spills") or 0
        if spills:
            regs = f.get("registers")
            out.append(f"compiled: {kernel} spills {spills} B of registers to local memory ({regs} registers)")
        shared = f.get("shared") or 0
        if shared > limits.shared:
            out.append(f"compiled: {kernel} needs {shared:,} B of shared memory > {limits.shared:,} B")
    return out
