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
    """``triton.compile`` of a recorded launch for ``arch``, its arguments specialized as Triton's JIT
    specializes them at a real launch (an integer 1 is a constant, integers and pointers divisible
    by 16 say so): without that the compiler cannot vectorize loads whose stride is 1, and a
    pipelined loop compiled here would not be the loop a GPU runs."""
    import triton
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import mangle_type

    target = GPUTarget("cuda", arch, warp_size)
    backend = make_backend(target)
    fn = launch.kernel
    names = list(fn.arg_names)
    consts = {k: v for k, v in launch.kwargs.items() if k in names}
    options = {k: v for k, v in launch.kwargs.items() if k not in names}
    values = dict(zip([n for n in names if n not in consts], launch.args))
    unspecialized = set(getattr(fn, "do_not_specialize", ()))
    sig: dict[str, str] = {}
    constexprs: dict[tuple[int, ...], Any] = {}
    attrs: dict[tuple[int, ...], Any] = {}
    for i, n in enumerate(names):
        if n in consts:
            sig[n] = "constexpr"
            constexprs[(i,)] = consts[n]
            continue
        v = values[n]
        try:
            kind, attr = native_specialize_impl(type(backend), v, False, i not in unspecialized, True)
        except Exception:  # noqa: BLE001 - a value the JIT's specializer does not know: as mangled
            kind, attr = mangle_type(v), None
        params = getattr(fn, "params", None)  # (an ``f64`` parameter is declared one: emit/triton.py)
        declared = params[i].annotation_type if params is not None and i < len(params) else ""
        if declared and kind != "constexpr":
            kind = declared
        sig[n] = kind
        if kind == "constexpr":
            constexprs[(i,)] = attr if v is not None else None
        elif isinstance(attr, str) and attr:
            attrs[(i,)] = backend.parse_attr(attr)
    src = ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=target, options=options)


def record(launcher: Any, *args: Any) -> list[Launch]:
    rec = Recorder()
    launcher(*args, _launch=rec)
    return rec.launches
