"""Integer kernel arguments of 2^31 to 2^32 - 1 in Triton's interpreter hold the value the type says.

Triton's JIT types a Python int of that range ``i64`` (``mangle_type``), and compiled code reads it
as one.  Triton 3.6's interpreter tags it ``i64`` too but stores it as ``numpy.uint32``, so the
kernel's ``tl.cast(w, tl.int64)`` (no change of type: nothing converts) keeps 32-bit data and
``w * w`` of an ``s64`` parameter of 3000000000 wrapped at 2^32 on the CPU where the GPU gives
9000000000000000000 (emit/triton.py converts such parameters to their declared types).  The patch
stores it as ``numpy.int64``; every other argument is converted as before.

A float argument the kernel declares ``tl.float64`` (an ``f64`` parameter) is an f64 when compiled;
the interpreter passes it on as a Python float, which Triton makes an f32 wherever no f64 tensor
gives it its type (``tl.store(p, q)`` stored 0.1 as 0.10000000149011612).  The patch makes such an
argument an f64 scalar, as the JIT does.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def int_args_as_typed() -> bool:
    """Patch the interpreter's argument conversion (idempotent; False where this Triton has none)."""
    try:
        import triton.language as tl
        from triton.runtime import interpreter
        from triton.runtime.jit import mangle_type
    except ImportError:
        return False
    original = getattr(interpreter, "_implicit_cvt", None)
    if original is None or getattr(original, "_croq2triton", False):
        return original is not None

    def convert(arg: Any) -> Any:
        if isinstance(arg, int) and not isinstance(arg, bool) and 2**31 <= arg < 2**32:
            ty = tl.str_to_ty(mangle_type(arg), None)
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.int64), ty), ty)
        if isinstance(arg, _Double):
            return tl.tensor(interpreter.TensorHandle(np.array([float(arg)], dtype=np.float64), tl.float64), tl.float64)
        return original(arg)

    convert._croq2triton = True  # type: ignore[attr-defined]
    interpreter._implicit_cvt = convert
    _mark_doubles(interpreter.GridExecutor)
    return True


class _Double(float):
    """A float argument of a parameter declared ``tl.float64``."""


def _mark_doubles(executor: Any) -> None:
    """Make the grid executor mark the float arguments of ``tl.float64`` parameters (``convert``
    then makes them f64 scalars)."""
    from triton.runtime.jit import _normalize_ty

    original = executor.__call__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        annotations = getattr(self.fn, "__annotations__", {})
        doubles = {name for name, ty in annotations.items() if _normalize_ty(ty) == "fp64"}
        if doubles:
            args = (
                tuple(
                    _Double(a) if name in doubles and type(a) is float else a
                    for name, a in zip(self.arg_names, args, strict=False)
                )
                + args[len(self.arg_names) :]
            )
            kwargs = {k: _Double(v) if k in doubles and type(v) is float else v for k, v in kwargs.items()}
        return original(self, *args, **kwargs)

    executor.__call__ = call
