"""Compile recorded launches ahead of time for a GPU target, without a GPU.

``triton.compile`` with a CUDA 9.0 target produces TTGIR, PTX and a cubin on a
CPU-only machine; the tests use it to check that translated kernels build for
Hopper (sm_90a) and use wgmma / TMA.  Must run in a process where Triton is not
in interpreter mode.
"""

from __future__ import annotations

from typing import Any

from .launch import Launch, Recorder


def compile_launch(launch: Launch, arch: int = 90, warp_size: int = 32) -> Any:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import mangle_type

    fn = launch.kernel
    names = list(fn.arg_names)
    consts = {k: v for k, v in launch.kwargs.items() if k in names}
    options = {k: v for k, v in launch.kwargs.items() if k not in names}
    values = dict(zip([n for n in names if n not in consts], launch.args))
    sig: dict[str, str] = {}
    constexprs: dict[tuple[int, ...], Any] = {}
    for i, n in enumerate(names):
        if n in consts:
            sig[n] = "constexpr"
            constexprs[(i,)] = consts[n]
        else:
            v = values[n]
            if v is None:
                sig[n] = "constexpr"
                constexprs[(i,)] = None
            else:
                sig[n] = mangle_type(v)
    src = ASTSource(fn=fn, signature=sig, constexprs=constexprs)
    return triton.compile(src, target=GPUTarget("cuda", arch, warp_size), options=options)


def record(launcher: Any, *args: Any) -> list[Launch]:
    rec = Recorder()
    launcher(*args, _launch=rec)
    return rec.launches
