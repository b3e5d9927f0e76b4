"""Triton's interpreter without its per-call re-patching of ``triton.language`` (test speed only).

Triton 3.6's interpreter patches ``triton.language`` (each builtin replaced by one bound to the
interpreter's builder: ``inspect.getmembers`` over the modules, about 1 ms) when a kernel starts,
and restores it when the grid is done.  A call of a ``@triton.jit`` function from a kernel (the
generated ``_oob_fill`` around every load, ``_as_dot_operand``, ...) patches the same modules again,
each call: a kernel that loads in a loop spent a tenth of its interpreter time there (12012 calls,
11 s of 94 s in a test of tests/test_gemm_forms3.py).  Those patches are never restored (the
kernel's own restore puts the originals back), and they set what the kernel's patch set already, so
:func:`install` skips a device call's patch of modules that the running kernel has patched; a call
that sees another module (``triton.language.core`` where the kernel saw only ``triton.language``) is
patched as before, as is every call outside a kernel's grid.  Nothing a kernel computes changes.
conftest.py installs it once Triton has been imported (by a generated module, after it set
``TRITON_INTERPRET``: importing Triton earlier would make its own ``@jit`` functions compiled ones).
"""

from __future__ import annotations

import inspect
from typing import Any

_PATCHED: list[set[int]] = []  # the language modules patched by each running grid (innermost last)


def _langs(fn: Any) -> set[int]:
    import triton.language as tl

    mods = (tl, tl.core)
    return {id(v) for v in fn.__globals__.values() if inspect.ismodule(v) and any(v is m for m in mods)}


def install() -> bool:
    """Install the skip (idempotent); False where this Triton's interpreter is not the one described."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    real = getattr(interpreter, "_patch_lang", None)
    executor = getattr(interpreter, "GridExecutor", None)
    scope = getattr(interpreter, "_LangPatchScope", None)
    if real is None or executor is None or scope is None:
        return False
    if getattr(real, "_croq2triton", False):
        return True

    def patch_lang(fn: Any) -> Any:
        if _PATCHED:
            langs = _langs(fn)
            if langs <= _PATCHED[-1]:
                return scope()  # (nothing to restore: the grid's own scope restores the modules)
            out = real(fn)
            _PATCHED[-1].update(langs)
            return out
        return real(fn)

    patch_lang._croq2triton = True  # type: ignore[attr-defined]
    grid_call = executor.__call__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        _PATCHED.append(set())  # (the grid's own patch fills it: the first call above)
        try:
            return grid_call(self, *args, **kwargs)
        finally:
            _PATCHED.pop()

    interpreter._patch_lang = patch_lang
    executor.__call__ = call
    return True
