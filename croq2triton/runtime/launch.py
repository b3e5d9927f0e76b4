"""Helpers called by generated launchers.

Every check raises :class:`CroqLaunchError` with a message that names the
function, the parameter and the ``.co`` line, never a bare Python error.
"""

from __future__ import annotations

import contextvars
import functools
import math
import os
import re
import sys
import time
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch._subclasses.fake_tensor import is_fake

from ..errors import REGISTRY, CroqError, Diagnostic, Span
from ..sema.carith import bf16 as bf16
from ..sema.carith import cdiv as cdiv
from ..sema.carith import f16 as f16
from ..sema.carith import f32 as f32
from ..sema.carith import fdiv as fdiv
from ..sema.carith import fmod as fmod
from ..sema.carith import idiv as idiv
from ..sema.carith import imod as imod
from ..sema.carith import s8 as s8
from ..sema.carith import s16 as s16
from ..sema.carith import s32 as s32
from ..sema.carith import s64 as s64
from ..sema.carith import u8 as u8
from ..sema.carith import u16 as u16
from ..sema.carith import u32 as u32
from ..sema.carith import u64 as u64
from ..sema.ccast import host_cast as host_cast
from ..sema.ccast import wrap_int
from .interpreter_args import int_args_as_typed
from .interpreter_bf16 import convert_bf16_exactly
from .interpreter_compare import compare_as_bool
from .interpreter_fma import fma_rounds_once
from .interpreter_minmax import match_compiled_minmax
from .interpreter_overflow import skip_unused_overflow_check
from .occupancy import FitWarps, fitted
from .occupancy import warps_for as warps_for
from .tma import runtime_fits, runtime_reason

# the interpreter computes min / max of floats as compiled code does (NaN operands lose)
match_compiled_minmax()
compare_as_bool()
# ... bf16 conversions rounded to nearest even, with subnormals; tl.fma rounded once
convert_bf16_exactly()
fma_rounds_once()
# ... an integer argument of 2^31 to 2^32 - 1 is the i64 the JIT types it
int_args_as_typed()
# ... without the overflow check it computes and drops (no debug: the same results, faster)
skip_unused_overflow_check()


class CroqLaunchError(CroqError):
    """Bad arguments to a translated kernel (dtype, rank, device, sizes, strides)."""


class CroqRuntimeWarning(RuntimeWarning):
    """A launch-time fallback (e.g. masked loads instead of TMA), located at the ``.co`` function."""

    def __init__(self, message: str, src: str, line: int, param: str | None = None) -> None:
        super().__init__(message)
        self.src = src
        self.line = line
        self.param = param  # the parameter it is about, if any


def warn_at(f: Fn, message: str, param: str | None = None) -> None:
    """Warn at the ``.co`` function's line (not at whichever Python frame called the launcher)."""
    import warnings

    w = CroqRuntimeWarning(f"croq2triton: {f.name}: {message}", f.src, f.line, param)
    warnings.warn_explicit(w, CroqRuntimeWarning, f.src, f.line, module="croq2triton")


def co_file(module_file: str | None, name: str) -> str:
    """The ``.co`` file a generated module was translated from, as its launch errors name it:
    ``name`` next to the module when it is there (shown relative to the working directory when
    inside it), else ``name``."""
    if not module_file:
        return name
    path = os.path.join(os.path.dirname(os.path.abspath(module_file)), name)
    if not os.path.isfile(path):
        return name
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


# (line, first column, column after the last) of a parameter's declaration in the signature, 1-based
ParamAt = tuple[int, int, int]


def kernel_device_type() -> str:
    """The type of device kernels run on: ``"cpu"`` in Triton's interpreter (or without a GPU),
    else ``"cuda"``."""
    return "cpu" if interpreting() or not _has_cuda() else "cuda"


@dataclass(frozen=True)
class Fn:
    """What a launcher's messages say where they come from: the ``__co__`` function ``name`` at
    ``line`` of ``src``, and where each of its parameters is declared (by its Croqtile name).

    A generated module builds each once, when it is imported (``_FN``); ``device_type`` is then the
    type of device its kernels run on, which Triton fixed as it decorated them: compiled for the GPU,
    or interpreted on the CPU."""

    name: str
    src: str
    line: int
    params: Mapping[str, ParamAt] = field(default_factory=dict, compare=False)
    device_type: str = field(default_factory=kernel_device_type, compare=False)

    def fail(self, msg: str, hint: str | None = None, param: str | None = None) -> CroqLaunchError:
        """An error of this launcher, located at the declaration of ``param`` when it is given."""
        return CroqLaunchError(f"{self.name}: {msg}", self.at(param), hint)

    def at(self, param: str | None) -> Span:
        """The declaration of ``param`` in the signature; the function's line if it is not known."""
        place = self.params.get(param) if param is not None else None
        if place is None:
            return Span.at(self.src, self.line, 1)
        line, col, end = place
        _read_source(self.src, line, col, end, param)
        return Span.at(self.src, line, col, line, end)


def _read_source(src: str, line: int, col: int, end: int, param: str | None) -> None:
    """Make the text of ``src`` known for caret lines: when the module was imported by itself (not
    through ``croq2triton.load``, which registers the text it translated), the ``.co`` file on disk
    is read, but only if the declaration of ``param`` is still where the module says it is."""
    if REGISTRY.has(src) or not os.path.isfile(src):
        return
    try:
        with open(src, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return
    lines = text.split("\n")
    decl = lines[line - 1][col - 1 : end - 1] if 1 <= line <= len(lines) else ""
    if param is None or param.startswith("_arg") or re.search(rf"\b{re.escape(param)}\s*$", decl):
        REGISTRY.add(src, text)


def _environ_reader() -> Callable[[str], str | None]:
    """``os.environ.get``, read where it costs least.  For a variable that is not set, ``get`` raises
    and catches two KeyErrors (0.7 us, a launch reads one every call); CPython's ``os.environ`` keeps
    the variables in a dict of bytes on POSIX (``_data``), which a read of it as ``get`` decodes
    (and which every change through ``os.environ`` updates).  Where the mapping is not built so (another
    platform or Python), ``os.environ.get`` itself."""
    data = getattr(os.environ, "_data", None)
    if os.name != "posix" or not isinstance(data, dict) or data.get(b"PATH") != os.environb.get(b"PATH"):
        return os.environ.get
    decode = os.fsdecode

    def get(name: str) -> str | None:
        value = data.get(name.encode())
        return None if value is None else decode(value)

    return get


environ_get = _environ_reader()


def interpreting() -> bool:
    return environ_get("TRITON_INTERPRET") not in (None, "", "0")


# the launcher running now (set by pick_device, which every launcher calls first): errors that only
# show when a kernel is launched are located at its `__co__` function
_RUNNING: contextvars.ContextVar[Fn | None] = contextvars.ContextVar("croq2triton_launcher", default=None)
_set_running = _RUNNING.set


@functools.cache
def _has_cuda() -> bool:
    return torch.cuda.is_available()  # (2 us a call: asked once; a process does not gain a GPU)


# the tensors a launcher's one test of its arguments takes as they are (a subclass with a behaviour
# of its own, a fake tensor of torch.compile's tracing, goes through the checks one by one)
PLAIN = (torch.Tensor, torch.nn.Parameter)


def device_of(f: Fn, t: Any) -> torch.device | None:
    """The first part of a launcher's one test of its arguments (emit/launcher.py): the device of
    ``t``, its first tensor parameter, where ``t`` is a plain tensor on the type of device the
    kernels run on (the device :func:`pick_device` picks then); None where it is not (the launcher
    checks its arguments one by one)."""
    _set_running(f)
    if type(t) in PLAIN and (dev := t.device).type == f.device_type:
        return dev
    return None


def pick_device(f: Fn, tensors: dict[str, Any], launch: Any) -> torch.device:
    """The device kernels run on: the GPU (that of the first tensor on one, else the current one)
    when they are compiled, the CPU when interpreted (or without a GPU)."""
    _RUNNING.set(f)
    if f.device_type != "cuda":
        return torch.device("cpu")
    for t in tensors.values():
        if isinstance(t, torch.Tensor) and t.is_cuda:
            return t.device
    return torch.device("cuda", torch.cuda.current_device())


def tensor_arg(
    f: Fn, name: str, t: Any, dtype: torch.dtype, rank: int, dev: torch.device, is_global: bool, move: bool = True
) -> torch.Tensor:
    """``t`` checked as the parameter ``name`` and, unless it is ``global`` (which must already be
    there) or ``move`` is False (a tuned function's dispatcher, which only reads its sizes), moved to
    the kernels' device."""
    if not isinstance(t, torch.Tensor):
        raise f.fail(
            f"parameter '{name}' must be a torch.Tensor, got {type(t).__name__}",
            f"pass a torch.Tensor of rank {rank} and dtype {dtype}",
            name,
        )
    if t.dtype != dtype:
        raise f.fail(
            f"parameter '{name}' has dtype {t.dtype}, expected {dtype}",
            f"convert it first, e.g. {name}.to({dtype})",
            name,
        )
    if t.dim() != rank:
        raise f.fail(
            f"parameter '{name}' has rank {t.dim()} (shape {tuple(t.shape)}), expected rank {rank}",
            f"the signature gives '{name}' {rank} dimension(s): pass a tensor of that rank (reshape or view it)",
            name,
        )
    if t.device.type != dev.type or (dev.index is not None and t.device.index not in (None, dev.index)):
        if is_global:
            where = "on the GPU" if dev.type == "cuda" else "on the CPU (no GPU: kernels run in the Triton interpreter)"
            raise f.fail(
                f"'global' parameter '{name}' is on {t.device}, but kernels run {where}",
                f"move it with {name}.to('{dev.type}')",
                name,
            )
        if move:
            t = t.to(dev)
    if any(s < 0 for s in t.stride()):
        raise f.fail(f"parameter '{name}' has negative strides {t.stride()}", "pass a .contiguous() copy", name)
    return t


def _element(f: Fn, name: str, t: torch.Tensor, idx: tuple[int, ...], line: int) -> tuple[int, ...]:
    for d, (i, n) in enumerate(zip(idx, t.shape, strict=True)):
        if not 0 <= int(i) < n:
            raise CroqLaunchError(
                f"{f.name}: index {tuple(int(x) for x in idx)} is outside '{name}' of shape {tuple(t.shape)}"
                f" (dimension {d})",
                Span.at(f.src, line, 1),
            )
    return tuple(int(i) for i in idx)


def elem_get(f: Fn, name: str, t: torch.Tensor, idx: tuple[int, ...], line: int) -> Any:
    """``x.at(i, j)`` read by host code between launches (a Python scalar)."""
    return t[_element(f, name, t, idx, line)].item()


def elem_address(f: Fn, name: str, t: torch.Tensor, idx: tuple[int, ...], line: int) -> int:
    """``&x.at(i, j)`` in host code between launches: the element's address (in the memory the
    tensor lives in)."""
    at = _element(f, name, t, idx, line)
    offset = sum(int(i) * s for i, s in zip(at, t.stride(), strict=True))
    return int(t.data_ptr()) + offset * t.element_size()


def elem_set(f: Fn, name: str, t: torch.Tensor, idx: tuple[int, ...], v: Any, line: int) -> None:
    """``x.at(i, j) = v`` written by host code between launches (converted to the element type, an
    integer wrapped to its width as C converts it: torch refuses one out of the type's range)."""
    if isinstance(v, int) and not isinstance(v, bool) and not t.dtype.is_floating_point and t.dtype != torch.bool:
        info = torch.iinfo(t.dtype)
        v = wrap_int(v, info.bits, info.min < 0)
    t[_element(f, name, t, idx, line)] = v


def copy_back(caller: torch.Tensor, dev: torch.Tensor) -> None:
    """A written tensor parameter that ``tensor_arg`` moved to the kernels' device: its new values
    go back into the caller's tensor."""
    if caller is not dev:
        caller.copy_(dev)


def scalar_arg(f: Fn, name: str, v: Any, kind: type) -> Any:
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        v = v.item()
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise f.fail(f"parameter '{name}' must be an int, got {type(v).__name__}", "pass a Python int", name)
        return v
    if kind is bool:
        # passed as 0/1: Triton 3.6's interpreter cannot take a Python bool kernel argument
        return int(bool(v))
    if not isinstance(v, (int, float)):
        raise f.fail(f"parameter '{name}' must be a number, got {type(v).__name__}", "pass a Python float or int", name)
    return float(v)


def stream_arg(f: Fn, name: str, s: Any) -> None:
    return None


def bind_dim(f: Fn, dims: dict[str, tuple[int, str, str]], sym: str, pname: str, t: torch.Tensor, d: int) -> int:
    """Dimension ``d`` of parameter ``pname`` is the size ``sym``: the first binds it, the others
    must agree (``dims``: each size bound so far, what bound it and the parameter)."""
    n = int(t.shape[d])
    prev = dims.get(sym)
    if prev is None:
        if n <= 0:
            raise f.fail(
                f"'{sym}' = {pname}.shape[{d}] is {n}; sizes must be positive",
                "pass a tensor without empty dims",
                pname,
            )
        dims[sym] = (n, f"{pname}.shape[{d}]", pname)
        return n
    if prev[0] != n:
        err = f.fail(
            f"inconsistent size '{sym}': {prev[1]} is {prev[0]} but {pname}.shape[{d}] is {n}",
            f"every parameter dimension named '{sym}' must have the same size",
            pname,
        )
        if prev[2] in f.params:  # where the parameter that bound it is declared
            err.diagnostics[0].notes.append(Diagnostic("note", f"'{sym}' is {prev[0]}, from {prev[1]}", f.at(prev[2])))
        raise err
    return n


def nearest_tuned(table: Mapping[tuple[int, ...], Any], sizes: tuple[int, ...]) -> Any:
    """A tuned function's launcher for ``sizes``: the one ``table`` gives for exactly these sizes,
    else the one tuned at the nearest sizes, by the distance of their logarithms (a ratio of 2 in
    one size is as far as a ratio of 2 in another); of two as near, the one tuned at larger sizes
    (by the product of its sizes)."""
    hit = table.get(sizes)
    if hit is not None:
        return hit
    logs = [math.log(max(1, int(n))) for n in sizes]

    def distance(tuned: tuple[int, ...]) -> tuple[float, float]:
        far = math.fsum((math.log(t) - x) ** 2 for t, x in zip(tuned, logs, strict=True))
        return round(far, 9), -math.fsum(math.log(t) for t in tuned)

    return table[min(table, key=distance)]


def any_dim(f: Fn, pname: str, t: torch.Tensor, d: int) -> int:
    n = int(t.shape[d])
    if n <= 0:
        raise f.fail(f"{pname}.shape[{d}] is {n}; sizes must be positive", "pass a tensor without empty dims", pname)
    return n


def fixed_dim(f: Fn, pname: str, t: torch.Tensor, d: int, want: int) -> None:
    if int(t.shape[d]) != want:
        raise f.fail(
            f"{pname}.shape[{d}] is {int(t.shape[d])}, but the function declares {want}",
            f"pass a tensor whose dimension {d} is {want}, or declare it with a name to take any size",
            pname,
        )


def require_contiguous(f: Fn, pname: str, t: torch.Tensor) -> None:
    if not t.is_contiguous():
        raise f.fail(
            f"'{pname}' is reinterpreted with '.span_as', which needs a contiguous tensor (strides {t.stride()})",
            f"pass {pname}.contiguous()",
            pname,
        )


def span_as(f: Fn, pname: str, t: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """``t.span_as(shape)``: the same memory with other extents (a view, so writes reach ``t``)."""
    require_contiguous(f, pname, t)
    count = 1
    for n in shape:
        count *= int(n)
    if count != t.numel():
        raise f.fail(
            f"'{pname}' has {t.numel()} elements ({list(t.shape)}); '.span_as' gives it {list(shape)} ({count})",
            "the new extents must hold exactly the tensor's elements",
            pname,
        )
    return t.view(tuple(int(n) for n in shape))


def window(
    f: Fn,
    pname: str,
    t: torch.Tensor,
    origin: tuple[int, ...],
    shape: tuple[int, ...],
    line: int,
    drop: tuple[int, ...] = (),
    partial: bool = False,
) -> torch.Tensor:
    """The window of ``t`` from ``origin`` with ``shape`` (a view: writes reach ``t``); without the
    dimensions ``drop`` (of extent 1: ``.sqz()``), inside ``t``.  The window of a host-level copy
    (``partial``) may reach past ``t`` (LANGUAGE.md 14.3): its elements outside read zero and writes
    to them are dropped; it is then a copy of the part inside, which ``host_copy`` / ``host_pad``
    write back (``_croq_writeback``)."""
    bounds = [(int(o), int(o) + int(n), int(ext)) for o, n, ext in zip(origin, shape, t.shape, strict=True)]
    for d, (o, end, ext) in enumerate(bounds):
        if end < o or (not partial and (o < 0 or end > ext)):
            raise CroqLaunchError(
                f"{f.name}: the window of '{pname}' ({list(t.shape)}) from {list(origin)} by {list(shape)} "
                f"leaves it along dimension {d}",
                Span.at(f.src, line, 1),
            )
    if all(o >= 0 and end <= ext for o, end, ext in bounds):
        view = t[tuple(slice(o, end) for o, end, _ in bounds)]
        return view.squeeze(drop) if drop else view
    part = torch.zeros(tuple(int(n) for n in shape), dtype=t.dtype, device=t.device)
    inside = tuple(slice(min(max(o, 0), ext), max(min(end, ext), 0)) for o, end, ext in bounds)
    at = tuple(
        slice(s.start - o, s.stop - o) if s.start < s.stop else slice(0, 0) for s, (o, _, _) in zip(inside, bounds)
    )
    part[at] = t[inside]

    def writeback() -> None:
        t[inside] = part[at]

    out = part.squeeze(drop) if drop else part
    out._croq_writeback = writeback  # type: ignore[attr-defined]
    return out


def strided(
    f: Fn,
    pname: str,
    t: torch.Tensor,
    offset: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    line: int,
) -> torch.Tensor:
    """The elements of ``t`` in row-major order from ``offset``, ``shape`` of them ``strides``
    apart (a view with explicit strides, LANGUAGE.md 7.6: writes reach ``t``), inside ``t``."""
    if not t.is_contiguous():
        raise f.fail(
            f"'{pname}' is viewed with explicit strides, which needs a contiguous tensor (strides {t.stride()})",
            f"pass {pname}.contiguous()",
            pname,
        )
    shape, strides, offset = tuple(int(n) for n in shape), tuple(int(s) for s in strides), int(offset)
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if all(shape) else offset
    if offset < 0 or any(s < 0 for s in strides) or any(n < 0 for n in shape) or (all(shape) and last >= t.numel()):
        raise CroqLaunchError(
            f"{f.name}: the view of '{pname}' ({t.numel()} elements) from element {offset} by {list(shape)} "
            f"with strides {list(strides)} leaves it",
            Span.at(f.src, line, 1),
        )
    return t.as_strided(shape, strides, t.storage_offset() + offset)


def host_copy(
    f: Fn,
    dname: str | None,
    dst: torch.Tensor | None,
    sname: str,
    src: torch.Tensor,
    perm: tuple[int, ...] | None,
    line: int,
) -> torch.Tensor:
    """``dma.copy src => dst`` between launches (``dma.transp<perm>``: ``src`` permuted first);
    ``dst`` None: into a fresh tensor (``=> global``), which is returned."""
    value = src.permute(perm) if perm is not None else src
    if dst is None:
        return value.clone(memory_format=torch.contiguous_format)
    if tuple(dst.shape) != tuple(value.shape):
        raise CroqLaunchError(
            f"{f.name}: dma.copy of '{sname}' ({list(value.shape)}) into '{dname}' ({list(dst.shape)}): "
            "the shapes differ",
            Span.at(f.src, line, 1),
        )
    dst.copy_(value)
    _written(dst)
    return dst


def _written(dst: torch.Tensor) -> None:
    """A window partly outside its tensor (``window``) passes what was written inside on to it."""
    writeback = getattr(dst, "_croq_writeback", None)
    if writeback is not None:
        writeback()


def host_pad(
    f: Fn,
    dname: str | None,
    dst: torch.Tensor | None,
    sname: str,
    src: torch.Tensor,
    lo: tuple[int, ...],
    hi: tuple[int, ...],
    mid: tuple[int, ...],
    value: Any,
    line: int,
) -> torch.Tensor:
    """``dma.pad<lo, hi, mid, value> src => dst`` between launches: ``src`` with ``lo`` / ``hi``
    elements of ``value`` before / after each dimension and ``mid`` between two of its elements;
    ``dst`` None: into a fresh tensor, which is returned."""
    shape = tuple(
        int(a) + int(b) + n + max(n - 1, 0) * int(m) for n, a, b, m in zip(src.shape, lo, hi, mid, strict=True)
    )
    if dst is not None and tuple(dst.shape) != shape:
        raise CroqLaunchError(
            f"{f.name}: dma.pad of '{sname}' ({list(src.shape)}) gives {list(shape)}, '{dname}' is {list(dst.shape)}",
            Span.at(f.src, line, 1),
        )
    out = torch.full(shape, value, dtype=src.dtype, device=src.device)
    out[
        tuple(
            slice(int(a), int(a) + max(n - 1, 0) * (int(m) + 1) + 1, int(m) + 1)
            for n, a, m in zip(src.shape, lo, mid, strict=True)
        )
    ] = src
    if dst is None:
        return out
    dst.copy_(out)
    _written(dst)
    return dst


# Buffers a function declares without an initial value are uninitialised in Croqtile. We give
# them zeros; tests (and `croq2triton run`, for buffers the function only writes) set POISON so that
# every element a kernel fails to write shows up (runtime/poison.py).
POISON = os.environ.get("CROQ2TRITON_POISON", "0") not in ("", "0")


def poison_value(dtype: torch.dtype) -> Any:
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).min


def alloc(
    f: Fn, shape: tuple[int, ...], dtype: torch.dtype, dev: torch.device, fill: Any = None, empty: bool = False
) -> torch.Tensor:
    """A buffer of the function: filled with ``fill`` (None: zeros); ``empty``: a workspace the kernels
    write before they read it (split-K's partial sums), not filled (NaN under the tests' poison)."""
    if empty:
        if POISON:
            from .poison import poisoned

            return poisoned(tuple(max(0, n) for n in shape), dtype, dev)
        return torch.empty(tuple(max(0, n) for n in shape), dtype=dtype, device=dev)
    for n in shape:
        if n <= 0:
            raise f.fail(f"buffer shape {shape} has a non-positive extent")
    if fill is None and POISON:
        from .poison import poisoned

        return poisoned(shape, dtype, dev)
    return torch.full(shape, 0 if fill is None else fill, dtype=dtype, device=dev)


def scratch(f: Fn, n: int, dtype: torch.dtype, dev: torch.device, written: bool = False) -> torch.Tensor:
    """A kernel's scratch area of ``n`` elements: zeroed, or where the kernel stores every element
    before any is read (``written``), only allocated (NaN under the tests' poison)."""
    if not written:
        return torch.zeros(max(1, int(n)), dtype=dtype, device=dev)
    if POISON:
        from .poison import poisoned

        return poisoned((max(1, int(n)),), dtype, dev)
    return torch.empty(max(1, int(n)), dtype=dtype, device=dev)


_COUNTERS: dict[tuple[Any, ...], torch.Tensor] = {}


def counters(n: int, dtype: torch.dtype, dev: torch.device) -> torch.Tensor:
    """A zeroed area of at least ``n`` elements for counters that every kernel using them leaves zero
    when it ends (schedule/lastcombine.py): one kept per device and stream, grown where a launch
    needs more (the kernels of one stream run one after the other: they never share it at once)."""
    stream = torch.cuda.current_stream(dev).cuda_stream if dev.type == "cuda" else 0
    key = (dev, stream, dtype)
    area = _COUNTERS.get(key)
    if area is None or area.numel() < n:
        area = _COUNTERS[key] = torch.zeros(max(1024, int(n)), dtype=dtype, device=dev)
    return area


def host_assert(f: Fn, cond: Any, msg: str, line: int) -> None:
    if not cond:
        raise CroqLaunchError(f"{f.name}: assertion failed: {msg}", Span.at(f.src, line, 1))


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _f32(fn: Callable[..., Any]) -> Callable[..., float]:
    def apply(*args: Any) -> float:
        with np.errstate(all="ignore"):  # (C's results: inf, NaN, as the kernels' math gives them)
            return float(np.float32(fn(*(np.float32(a) for a in args))))

    return apply


# Croqtile's math builtins between launches (``__sqrt(x)`` in host code, LANGUAGE.md 7.7): in f32,
# as kernels compute them (``__round`` rounds halves away from zero, as C's roundf)
f32math = types.SimpleNamespace(
    **{
        name: _f32(fn)
        for name, fn in {
            "exp": np.exp, "exp2": np.exp2, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
            "sin": np.sin, "cos": np.cos, "tan": np.tan, "floor": np.floor, "ceil": np.ceil, "tanh": np.tanh,
            "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "fabs": np.abs,
            "round": lambda x: np.copysign(np.floor(np.abs(x) + np.float32(0.5)), x), "log1p": np.log1p,
            "expm1": np.expm1, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
            "cosh": np.cosh, "pow": np.power, "atan2": np.arctan2,
            "fma": lambda a, b, c: np.float64(a) * np.float64(b) + np.float64(c),  # one rounding, as fmaf
        }.items()
    }
)  # fmt: skip


def pow2(n: int) -> int:
    """The least power of two at or above ``n`` (1 for ``n`` <= 1)."""
    n = int(n)
    return 1 << (n - 1).bit_length() if n > 1 else 1


# the elements one program may hold compiled: an SM's 65,536 registers (a dma_3d.co tile of 64^3
# s32 made a 6.5 MB PTX that ptxas compiled for over an hour, 2026-12-03)
MAX_PROGRAM_TILE = 1 << 16
# Triton's largest block (``TRITON_MAX_TENSOR_NUMEL``)
MAX_BLOCK_ELEMENTS = 1 << 20


def block_extents(f: Fn, what: str, sizes: tuple[int, ...], fixed: int = 1, least: int = 1) -> tuple[int, ...]:
    """The block extents of a tile whose sizes are only known at launch (a buffer holding a whole
    run-time window): each the power of two at or above its size and ``least`` (16 for a tile an
    MMA takes: Triton's dot needs 16), the padding masked; ``fixed`` is the product of the tile's
    other extents, known when translating."""
    out = tuple([max(least, pow2(n)) for n in sizes])
    total = fixed
    for n in out:
        total *= n
    if total > MAX_BLOCK_ELEMENTS:
        other = f" times {fixed} for its other extents" if fixed > 1 else ""
        raise f.fail(
            f"{what} has extents {[int(n) for n in sizes]} at this launch: {total} elements as one Triton "
            f"block (padded to {list(out)}{other}); Triton's largest block holds {MAX_BLOCK_ELEMENTS}",
            "copy the data in tiles of a fixed size (chunkat / subspan ... at) inside a loop",
        )
    if total > MAX_PROGRAM_TILE and not interpreting() and _has_cuda():
        raise f.fail(
            f"{what} has extents {[int(n) for n in sizes]} at this launch: one program would hold {total} "
            f"elements (padded to {list(out)}), more than an SM's 256 KB register file holds at 4 bytes each "
            f"({MAX_PROGRAM_TILE}); compiled, the tile spills, and ptxas takes hours on the unrolled copy "
            "(the source's own buffer would not fit the GPU's shared memory either)",
            "copy the data in tiles of a fixed size (chunkat / subspan ... at) inside a loop, or run smaller sizes",
        )
    return out


# -------------------------------------------------------------- TMA descriptors
_SAID: set[tuple[str, str]] = set()
_REASONS: dict[tuple[Any, ...], str | None] = {}  # tma_ok's verdicts by what they depend on
_UNKNOWN = object()


@functools.cache
def _descriptor_type() -> Any:
    """Triton's TensorDescriptor, imported at the first launch that builds one (Triton is not imported
    with this module: generated modules import it once they have set the interpreter switch)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    return TensorDescriptor


def stride(x: torch.Tensor, dim: int) -> int:
    """``x``'s element stride along ``dim`` (a launcher's condition on how memory holds its axes)."""
    return int(x.stride(dim))


def num_sms(dev: torch.device) -> int:
    """Programs of a persistent grid: the GPU's SM count; 4 in the interpreter (the loop over tiles
    still runs several times per program there); ``CROQ2TRITON_NUM_SMS`` overrides both (``compile``
    sets it to the target's count when there is no GPU)."""
    given = environ_get("CROQ2TRITON_NUM_SMS")
    if given and given.isdigit() and int(given) > 0:
        return int(given)
    if dev.type == "cuda":
        return _sms_of(dev.index if dev.index is not None else torch.cuda.current_device())
    return 4


@functools.cache
def _sms_of(index: int) -> int:
    return int(torch.cuda.get_device_properties(index).multi_processor_count)


def _has_no_data(t: torch.Tensor) -> bool:
    """A fake or meta tensor (shapes only: torch.compile tracing)."""
    if type(t) is torch.Tensor:  # (a plain tensor, the common case, without is_fake's walk)
        return t.is_meta
    return t.device.type == "meta" or bool(is_fake(t))


def tma_ok(f: Fn, name: str, t: torch.Tensor, box: Sequence[int], extents: Sequence[int], what: str = "loads") -> bool:
    """May this launch read/write ``t`` through a TensorDescriptor with this box?

    If not, the kernel uses masked pointer loads instead; the reason is reported once.
    """
    if type(t) in PLAIN:
        if t.is_meta:
            return False  # traced by torch.compile (a torch op's fake implementation): no kernel runs
        if runtime_fits(t, box, extents):  # (the common case: no reason to build)
            return True
    elif _has_no_data(t):
        return False
    key = (name, t.data_ptr() % 16, t.element_size(), t.shape, t.stride(), tuple(box), tuple(extents))
    if (reason := _REASONS.get(key, _UNKNOWN)) is _UNKNOWN:
        reason = _REASONS[key] = runtime_reason(name, t, box, extents)
        if len(_REASONS) > 4096:  # (sizes of a long-running process: kept bounded)
            _REASONS.pop(next(iter(_REASONS)))
    if reason is None:
        return True
    key = (f.name, reason)
    if key not in _SAID and not what.endswith("(auto)"):  # (auto): a dma.copy tried as TMA
        _SAID.add(key)
        warn_at(f, f"{reason}; using masked {what}", name)
    return False


def tma_desc(t: torch.Tensor, box: Sequence[int], ok: bool, padding: str = "zero") -> Any:
    """The descriptor of ``t`` for ``box`` where :func:`tma_ok` said yes.  Built without
    ``TensorDescriptor``'s own checks (tma_ok made them: alignment, strides, the box) where every
    extent is positive: a launch spends 3 us, not 9, a descriptor (host time is what a small GEMM
    waits on)."""
    if not ok:
        return None
    TensorDescriptor = _descriptor_type()  # noqa: N806 - the class
    if padding == "nan" and (not t.dtype.is_floating_point or t.element_size() == 1):
        # the hardware fills NaN for 16- and 32-bit floats only (Triton encodes fp8 as bytes: the driver
        # refuses such a descriptor); the OOB sanitizer's NaN does not reach fp8 tiles read through TMA
        padding = "zero"
    shape = t.shape
    if type(t) not in PLAIN or 0 in shape:
        return TensorDescriptor.from_tensor(t, list(box), padding=padding)
    desc = object.__new__(TensorDescriptor)
    desc.base, desc.shape, desc.strides, desc.block_shape, desc.padding = t, shape, t.stride(), list(box), padding
    return desc


# -------------------------------------------------------------- launching
# Pipelined loops can ask Triton for warp specialization (the source's producer/consumer roles).
# Measured on an H200 with Triton 3.6 it made the translated pipelines 1.3-1.8x slower (perf/RESULTS.md),
# so it is off unless CROQ2TRITON_WARP_SPECIALIZE=1.  Where Triton cannot compile it, the launch
# falls back to the plain pipelined loop (once per kernel, with a warning).
WARP_SPECIALIZE = os.environ.get("CROQ2TRITON_WARP_SPECIALIZE", "0") not in ("", "0")
_WS_FAILED: set[int] = set()


def launch(kernel: Any, grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any]) -> None:
    """``kernel[grid](*args, **kwargs)``; nothing where the grid is empty (a size of 0 programs)."""
    g = grid
    for x in grid:
        if type(x) is not int or x <= 0:  # (the common case, positive ints, passes as it is)
            g = tuple(int(x) for x in grid)
            if any(x <= 0 for x in g):
                return
            break
    if type(kwargs.get("num_warps")) is FitWarps and not interpreting():
        kwargs = fitted(kernel, g, args, kwargs)
    if _WS_FAILED and kwargs.get("WARP_SPECIALIZE") and id(kernel) in _WS_FAILED:
        kwargs = dict(kwargs, WARP_SPECIALIZE=False)
    try:
        kernel[g](*args, **kwargs)
    except Exception as e:
        name = getattr(kernel, "__name__", None) or str(kernel)
        _too_large(e, name, kwargs)
        _numpy_too_new(e, name)
        if not kwargs.get("WARP_SPECIALIZE") or interpreting():
            raise
        _WS_FAILED.add(id(kernel))
        import warnings

        warnings.warn(
            f"croq2triton: Triton could not compile '{name}' with warp specialization "
            f"({type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}); using the plain pipelined loop",
            RuntimeWarning,
            stacklevel=2,
        )
        kernel[g](*args, **dict(kwargs, WARP_SPECIALIZE=False))


MAX_NUMEL = 1 << 20  # Triton's limit on the elements of one block (TRITON_MAX_TENSOR_NUMEL)


def _numpy_too_new(e: Exception, kernel: str) -> None:
    """Triton 3.6's interpreter turns 1-element arrays into Python scalars, which numpy 2.4 refuses
    (the package pins numpy<2.4 for that): say so, instead of an internal error."""
    import numpy as np

    if not interpreting() or "only 0-dimensional arrays can be converted" not in str(e):
        return
    if tuple(int(x) for x in re.findall(r"\d+", np.__version__)[:2]) < (2, 4):
        return
    import triton

    message = (
        f"Triton {triton.__version__}'s interpreter cannot run '{kernel}' with numpy {np.__version__} "
        "(it converts 1-element arrays to scalars, which numpy 2.4 refuses)"
    )
    hint = "install what croq2triton pins: pip install 'numpy<2.4'"
    f = _RUNNING.get()
    raise (f.fail(message, hint) if f is not None else CroqLaunchError(message, hint=hint)) from e


def _too_large(e: Exception, kernel: str, kwargs: dict[str, Any]) -> None:
    """Triton refuses a block of more than 2**20 elements: a tile whose extents are sizes known only
    at launch (``P_*``) grew past it with these sizes. Say so, instead of Triton's traceback."""
    chain: list[BaseException] = []
    x: BaseException | None = e
    while x is not None and len(chain) < 8:  # compiled, Triton wraps the ValueError in a CompilationError
        chain.append(x)
        x = x.__cause__ or x.__context__
    if not any("exceeds triton maximum tensor numel" in str(c) for c in chain):
        return
    padded = {k: v for k, v in kwargs.items() if k.startswith("P_")}
    shown = ", ".join(f"{k}={v}" for k, v in padded.items())
    message = (
        f"a tile of kernel '{kernel}' would hold more than {MAX_NUMEL} elements (2**20, Triton's limit for "
        "one block) at these sizes" + (f" (tile extents padded to powers of two: {shown})" if shown else "")
    )
    hint = "tile the copy (subspan / chunkat) so each block moves a bounded tile, or run smaller sizes"
    f = _RUNNING.get()
    raise (f.fail(message, hint) if f is not None else CroqLaunchError(message, hint=hint)) from e


@dataclass
class Launch:
    kernel: Any
    grid: tuple[int, ...]
    args: list[Any]
    kwargs: dict[str, Any]


class Recorder:
    """Pass as ``_launch=`` to a launcher to record launches instead of running them."""

    def __init__(self) -> None:
        self.launches: list[Launch] = []

    def __call__(self, kernel: Any, grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any]) -> None:
        self.launches.append(Launch(kernel, tuple(int(g) for g in grid), list(args), dict(kwargs)))


def autotune_bench(kernel_call: Any, quantiles: Any = None) -> Any:
    """The timer of the ``triton.autotune`` decorators croq2triton writes (``--emit-autotune``):
    Triton's ``do_bench`` on a GPU; in the interpreter, which has no driver to time with, the
    wall time of one call (so the autotuner still chooses, by what it measures there)."""
    if not interpreting():
        from triton.testing import do_bench

        return do_bench(kernel_call, quantiles=quantiles)
    start = time.perf_counter()
    kernel_call()
    ms = (time.perf_counter() - start) * 1e3
    return [ms for _ in quantiles] if quantiles else ms


# Schedule choices the translator makes but cannot decide statically stay named kernel parameters;
# these may be varied by a tuning sweep without changing results (NUM_SMS is not among them: the
# launcher sizes the persistent grid with it).
TUNABLE = ("GROUP_M", "NUM_STAGES", "num_warps", "num_stages")


# Triton's launch options: every kernel takes them
LAUNCH_OPTIONS = ("num_warps", "num_stages")


def kernel_params(kernel: Any, kwargs: dict[str, Any]) -> list[str]:
    """The parameter names of a kernel (a ``triton.jit`` function; else the keywords it is launched with)."""
    names = getattr(kernel, "arg_names", None)
    return list(names) if names is not None else list(kwargs)


def tuned(**params: int) -> Any:
    """A ``_launch=`` for tuning sweeps: ``mod.matmul(a, b, c, _launch=tuned(GROUP_M=4, NUM_STAGES=2))``.

    Each parameter replaces the translator's choice (``GROUP_M``: program groups of the L2-friendly
    order; ``NUM_STAGES``: depth of a pipelined loop; ``num_warps`` / ``num_stages``: Triton's launch
    options, which every kernel takes).  ``GROUP_M`` and ``NUM_STAGES`` must be parameters of every
    kernel launched with them: a launch of a kernel without one is a :class:`CroqLaunchError` naming
    the kernel and the tunable parameters it has."""
    bad = [k for k in params if k not in TUNABLE]
    if bad:
        raise CroqLaunchError(
            f"not a tunable launch parameter: {', '.join(bad)}", None, f"tunable: {', '.join(TUNABLE)}"
        )
    for k, v in params.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise CroqLaunchError(f"{k} must be a positive integer, not {v!r}")

    def run(kernel: Any, grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any]) -> None:
        names = kernel_params(kernel, kwargs)
        missing = [k for k in params if k not in LAUNCH_OPTIONS and k not in names]
        if missing:
            kname = getattr(kernel, "__name__", None) or type(kernel).__name__
            has = [k for k in TUNABLE if k in names or k in LAUNCH_OPTIONS]
            raise CroqLaunchError(
                f"tuned({', '.join(f'{k}={params[k]}' for k in missing)}): kernel '{kname}' has no parameter "
                f"{' or '.join(missing)}",
                None,
                f"its tunable parameters are {', '.join(has)}",
            )
        kw = dict(kwargs)
        kw.update(params)
        launch(kernel, grid, args, kw)

    return run


def launcher(fn: Any) -> Any:
    """A generated launcher, as ``torch.compile`` should see it: outside the graph (the kernels it
    launches are not torch ops), with the hint how to keep it inside one in the graph break's reason."""
    name = fn.__name__
    disabled = torch.compiler.disable(
        fn,
        reason=f"croq2triton: '{name}' launches Triton kernels outside the compiled graph; to call it inside "
        f"one, register it as a torch op: ops = croq2triton.register_ops(module, 'mylib'), then call "
        f"torch.ops.mylib.{name}(...) (or ops.{name})",
    )

    # dynamo's wrapper costs about 30 us a call even outside torch.compile (the host time a small
    # GEMM waits on): it is taken only while compiling (where this test reads true as dynamo traces)
    compiling = torch.compiler.is_compiling

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        if compiling():
            return disabled(*args, **kwargs)
        return fn(*args, **kwargs)

    return run


def expose(module: str, launchers: dict[str, Any]) -> None:
    """Make each launcher of ``launchers`` the attribute of the module ``module`` under the
    function's name, a name its own code reads as something else (``tl``, ``torch``, a builtin, a
    kernel) or Python's keyword (``lambda``): the launcher is defined under another name (emit/names.py)
    and the module's class gives it under the function's, while the module's globals, which its
    kernels and launchers read, keep theirs."""
    mod = sys.modules[module]
    attrs: dict[str, Any] = {name: property(lambda _self, f=f: f) for name, f in launchers.items()}
    names = sorted(launchers)
    attrs["__dir__"] = lambda self: sorted({*self.__dict__, *names})
    for name, f in launchers.items():
        f.__name__ = f.__qualname__ = name
    mod.__class__ = type("CroqModule", (type(mod),), attrs)


def not_translated(
    name: str, src: str, line: int, col: int, end_col: int, message: str, hint: str | None
) -> CroqLaunchError:
    """The error a function that did not translate raises when called: the translator's diagnostic,
    at its place in the ``.co`` source."""
    return CroqLaunchError(f"'{name}' is not translated: {message}", Span.at(src, line, col, line, end_col), hint)
