"""``croq2triton run``: translate a file and run its kernels on random inputs."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

from .errors import CroqError
from .frontend import ast as A

DEFAULT_SIZE = 256


def parse_sizes(items: Sequence[str] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items or []:
        for part in item.split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip().isidentifier():
                raise CroqError(f"bad --size item '{part}'", hint="write --size M=128,N=64")
            try:
                out[name.strip()] = int(value)
            except ValueError:
                raise CroqError(f"bad --size value '{value}' for '{name}'", hint="sizes are integers") from None
            if out[name.strip()] <= 0:
                raise CroqError(f"--size {name} must be positive")
    return out


def _make_inputs(fn: A.CoFunction, sizes: dict[str, int], device: str) -> list[object]:
    import torch

    from .sema.types import TYPES

    args: list[object] = []
    for p in fn.params:
        t = p.type
        if t.kind == "spanned":
            dims: list[int] = []
            for d in t.shape.dims if t.shape and t.shape.dims else []:
                if isinstance(d, A.Name):
                    dims.append(sizes.get(d.name, DEFAULT_SIZE))
                elif isinstance(d, A.IntLit):
                    dims.append(d.value)
                elif isinstance(d, A.Unknown):
                    dims.append(sizes.get(p.name or "", 64))
                else:
                    raise CroqError(f"cannot build a random input for parameter '{p.name}'", p.span)
            et = TYPES[t.elem or "f32"]
            if et.torch is None:
                raise CroqError(f"no torch type for '{t.elem}'", p.span)
            dtype = getattr(torch, et.torch)
            if et.is_float:
                x = torch.randn(*dims, device=device).to(dtype)
            elif et.kind == "bool":
                x = torch.rand(*dims, device=device) > 0.5
            else:
                x = torch.randint(0, 8, tuple(dims), device=device).to(dtype)
            args.append(x)
        elif t.kind in ("int", "elem", "bool"):
            args.append(sizes.get(p.name or "", 1))
        else:
            args.append(None)
    return args


def run_file(
    path: str,
    *,
    defines: dict[str, str] | None = None,
    sizes: Sequence[str] | None = None,
    functions: Sequence[str] | None = None,
    repeat: int = 0,
    oob_fill: str = "zero",
    schedule: str = "source",
) -> int:
    import torch

    from .api import load
    from .frontend.driver import parse_file

    size_map = parse_sizes(sizes)
    gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") in ("", "0")
    mod = load(path, defines=defines, oob_fill=oob_fill, schedule=schedule)
    tu = parse_file(path, defines=defines)
    tr = mod.__croq_translation__
    for d in tr.diagnostics:
        print(d.format(), file=sys.stderr)
    where = f"GPU {torch.cuda.get_device_name()}" if gpu else "CPU (Triton interpreter)"
    device = "cuda" if gpu else "cpu"
    status = 0
    todo = [f for f in tu.functions if not functions or f.name in functions]
    if functions:
        missing = set(functions) - {f.name for f in tu.functions}
        if missing:
            raise CroqError(f"no __co__ function named {', '.join(sorted(missing))} in {path}")
    for fn in todo:
        if fn.name in tr.failed:
            print(f"{fn.name}: skipped (not translated)")
            status = 1
            continue
        launcher = getattr(mod, fn.name)
        args = _make_inputs(fn, size_map, device)
        reps = repeat or (10 if gpu else 1)
        try:
            launcher(*args)  # warm-up / compile
            if gpu:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                launcher(*args)
            if gpu:
                torch.cuda.synchronize()
            dt = (time.perf_counter() - t0) / reps
        except CroqError as e:
            print(e.format(), file=sys.stderr)
            status = 1
            continue
        shapes = ", ".join(
            f"{p.name}{list(a.shape)}" if isinstance(a, torch.Tensor) else f"{p.name}={a}"
            for p, a in zip(fn.params, args)
        )
        print(f"{fn.name}({shapes}): ran on {where}, {dt * 1e3:.3f} ms per call (mean of {reps})")
    return status
