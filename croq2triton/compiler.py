"""``croq2triton compile``: build a translation for a GPU target without a GPU and summarise it.

The file is translated, each launcher runs once on empty tensors of the given sizes with a
recorder instead of a launch (runtime/launch.py ``Recorder``), and every recorded launch is
compiled with ``triton.compile`` for the target (runtime/aot.py).  One line per kernel says what
a kernel engineer looks at first: the block tile of its dots, ``num_warps`` / ``num_stages``,
shared memory, registers, and whether the PTX uses ``wgmma`` and TMA (``cp.async.bulk.tensor``).

Triton's interpreter mode is process-wide: this must run before anything imported Triton in
interpreter mode (the CLI command does; the tests run it in a fresh process).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import CroqError, CroqWarning

TARGETS = {"sm_80": 80, "sm_86": 86, "sm_89": 89, "sm_90": 90, "sm_90a": 90}
# SMs of the target's usual data-centre part (A100, -, L40S, H100/H200): the persistent grid's size
# when compiling without a GPU
TARGET_SMS = {80: 108, 86: 84, 89: 142, 90: 132}
EMITS = ("ttir", "ttgir", "llir", "ptx")

# a dot in TTGIR: operands are tensors or shared-memory descriptors with their shapes
_DOT = re.compile(
    r"= (?:ttng\.warp_group_dot|tt\.dot)\b[^\n]*?:\s*(?:!ttg\.memdesc|tensor)<(\d+)x(\d+)x[^\n]*?\*\s*(?:!ttg\.memdesc|tensor)<(\d+)x(\d+)x"
)
_TENSOR = re.compile(r"tensor<((?:\d+x)+)[a-z!]")
# a buffer of a multi-buffered shared allocation (a pipelined loop's stages): memdesc<N x ...>
_STAGED = re.compile(r"ttg\.memdesc_index [^\n]*?: !ttg\.memdesc<(\d+)x")


@dataclass
class KernelReport:
    kernel: str
    grid: tuple[int, ...]
    tile: str
    num_warps: int
    num_stages: int
    shared: int
    registers: int | None
    wgmma: bool
    tma: bool
    asm: dict[str, Any]

    asked_stages: int = 0  # what the launch asked for (0: the same as num_stages)

    def line(self) -> str:
        regs = f"{self.registers} registers" if self.registers is not None else "registers unknown"
        yes = {True: "yes", False: "no"}
        stages = f"num_stages {self.num_stages}"
        if self.asked_stages > self.num_stages:  # the compiler did not pipeline what was asked
            stages += f" ({self.asked_stages} asked)"
        return (
            f"{self.kernel}: {self.tile}, num_warps {self.num_warps}, {stages}, "
            f"shared {self.shared} B, {regs}, wgmma {yes[self.wgmma]}, TMA {yes[self.tma]}, grid {list(self.grid)}"
        )


def target_arch(name: str) -> int:
    arch = TARGETS.get(name)
    if arch is None:
        raise CroqError(f"unknown target '{name}'", hint=f"targets: {', '.join(TARGETS)}")
    return arch


def block_tile(ttgir: str) -> str:
    """The largest dot of a kernel as ``dot MxNxK`` (column pieces of one tile, dots of the same
    rows and K: ``dot 128x(128+64)x64``), else its largest register tile."""
    dots = [(int(m), int(n2), int(k)) for m, k, k2, n2 in _DOT.findall(ttgir) if k == k2]
    shapes = sorted(set(dots), key=lambda d: -d[1])
    if len(shapes) > 1 and len({(m, k) for m, _, k in shapes}) == 1:
        m, _, k = shapes[0]
        return f"dot {m}x({'+'.join(str(n) for _, n, _ in shapes)})x{k}"
    if dots:
        m, n, k = max(dots, key=lambda d: d[0] * d[1])
        return f"dot {m}x{n}x{k}"
    shapes = [[int(x) for x in s.rstrip("x").split("x")] for s in _TENSOR.findall(ttgir)]
    if not shapes:
        return "scalar"
    best = max(shapes, key=lambda s: (_product(s), len(s)))
    return "tile " + "x".join(map(str, best))


def pipelined_stages(ttgir: str) -> int:
    """The stages of the kernel's software pipeline as compiled: the buffers of its multi-buffered
    shared allocations (``memdesc<3x64x128xf16>``: 3), 1 where no loop was pipelined."""
    return max((int(n) for n in _STAGED.findall(ttgir)), default=1)


def has_loop(ttgir: str) -> bool:
    return "scf.for" in ttgir


def _product(dims: Sequence[int]) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def registers(cubin: bytes) -> int | None:
    """Registers per thread, from ``cuobjdump --dump-resource-usage`` (shipped in Triton's wheel)."""
    return resource_usage(cubin).get("registers")


_USAGE = {
    "registers": re.compile(r"REG:(\d+)"),
    "stack": re.compile(r"STACK:(\d+)"),
    "local": re.compile(r"LOCAL:(\d+)"),
}


def resource_usage(cubin: bytes) -> dict[str, int]:
    """Registers per thread and the bytes of stack and local memory (spilled registers) a thread
    uses, from ``cuobjdump --dump-resource-usage`` (shipped in Triton's wheel); empty where the tool
    or the cubin is missing."""
    out = _dump_resource_usage(cubin)
    if out is None:
        return {}
    found = {k: r.search(out) for k, r in _USAGE.items()}
    return {k: int(m.group(1)) for k, m in found.items() if m}


def _dump_resource_usage(cubin: bytes) -> str | None:
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not tool.exists() or not cubin:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        try:
            out = subprocess.run(
                [str(tool), "--dump-resource-usage", f.name], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.SubprocessError):
            return None
    return out.stdout


def _configured(launches: list[Any]) -> list[tuple[Any, str]]:
    """Each recorded launch with the kernel's name; a kernel under ``triton.autotune``
    (``--emit-autotune``) once per config, its launch parameters added and named."""
    from .runtime.launch import Launch

    out: list[tuple[Any, str]] = []
    for launch in launches:
        configs = getattr(launch.kernel, "configs", None)
        if configs is None:
            out.append((launch, launch.kernel.__name__))
            continue
        fn = launch.kernel.fn
        for i, c in enumerate(configs):
            kwargs = {k: v for k, v in c.all_kwargs().items() if v is not None}
            shown = " ".join(f"{k}={v}" for k, v in kwargs.items() if k not in ("num_ctas", "num_stages"))
            name = f"{fn.__name__} [config {i + 1}/{len(configs)}: {shown}]"
            out.append((Launch(fn, launch.grid, launch.args, {**launch.kwargs, **kwargs}), name))
    return out


def compile_file(
    path: str,
    *,
    sizes: dict[str, str] | dict[str, int],
    functions: Sequence[str] | None = None,
    defines: dict[str, str] | None = None,
    schedule: str | None = None,
    f32_precision: str | None = None,
    config: str | None = None,
    emit_autotune: int = 0,
    target: str = "sm_90a",
    progress: Callable[[str], None] | None = None,
) -> list[tuple[str, list[KernelReport]]]:
    """Compile every kernel of the chosen functions for ``target``: (function, reports) pairs.
    ``sizes`` are ``--size`` items as written (``{"M": "4096"}``)."""
    arch = target_arch(target)
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise CroqError(
            "compiling for a GPU target needs Triton out of interpreter mode",
            hint="unset TRITON_INTERPRET for this command",
        )
    os.environ["TRITON_INTERPRET"] = "0"
    import torch

    from .api import load
    from .frontend.driver import parse_file
    from .runinputs import make_inputs
    from .runsizes import choose
    from .runtime.aot import compile_launch, record

    if not torch.cuda.is_available():
        os.environ.setdefault("CROQ2TRITON_NUM_SMS", str(TARGET_SMS[arch]))
    with warnings.catch_warnings():  # a function that does not translate is an error below, when asked for
        warnings.simplefilter("ignore", CroqWarning)
        mod = load(
            path,
            defines=defines,
            interpret=False,
            schedule=schedule,
            f32_precision=f32_precision,
            config=config,
            emit_autotune=emit_autotune,
        )
    tu = parse_file(path, defines=defines)
    translation = mod.__croq_translation__
    known = [f.name for f in tu.functions]
    if not known:
        raise CroqError(f"no __co__ function in {path}")
    missing = [f for f in functions or [] if f not in known]
    if missing:
        raise CroqError(
            f"no __co__ function named {', '.join(missing)} in {path}", hint=f"functions: {', '.join(known)}"
        )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    todo = [fn for fn in tu.functions if not functions or fn.name in functions]
    # --size as for 'run': checked against the functions' sizes (numbers are taken as written)
    chosen = choose(todo, {k: str(v) for k, v in sizes.items()})
    out: list[tuple[str, list[KernelReport]]] = []
    for fn in todo:
        if fn.name in translation.failed:
            raise translation.failed[fn.name]
        args = make_inputs(fn, chosen[fn.name].values, device).args
        reports = []
        for launch, name in _configured(record(getattr(mod, fn.name), *args)):
            if progress is not None:
                progress(f"{fn.name}: compiling {name} for {target}")
            try:
                kernel = compile_launch(launch, arch=arch)
            except Exception as e:  # noqa: BLE001 - Triton's own compile errors, reported per kernel
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise CroqError(
                    f"{fn.name}: kernel {name} does not compile for {target}: {type(e).__name__}: {first[:400]}",
                    fn.span,
                    "this is a translator bug unless the source asks for something the target lacks; "
                    "rerun with --debug for the whole message",
                ) from e
            ptx, ttgir = kernel.asm["ptx"], kernel.asm["ttgir"]
            reports.append(
                KernelReport(
                    kernel=name,
                    grid=launch.grid,
                    tile=block_tile(ttgir),
                    num_warps=kernel.metadata.num_warps,
                    # what the compiled kernel does, not what was asked: the buffers of its pipelined
                    # loop, next to the depth asked (tl.range(num_stages=NUM_STAGES), else the kernel's)
                    num_stages=pipelined_stages(ttgir),
                    asked_stages=int(launch.kwargs.get("NUM_STAGES", kernel.metadata.num_stages))
                    if has_loop(ttgir)
                    else 0,
                    shared=kernel.metadata.shared,
                    registers=registers(kernel.asm.get("cubin", b"")),
                    wgmma="wgmma.mma_async" in ptx,
                    tma="cp.async.bulk.tensor" in ptx,
                    asm={k: kernel.asm[k] for k in EMITS if k in kernel.asm},
                )
            )
        out.append((fn.name, reports))
    return out
