"""Triton's interpreter without its unused integer-overflow check (the same results, a third less time).

Triton 3.6's interpreter runs with ``sanitize_overflow`` on (``InterpreterOptions``): every ``+``,
``-`` and ``*`` of integers narrower than 64 bits is computed a second time in ``int64``, compared
with the type's range, and the comparison handed to ``device_assert``, which does nothing unless
``debug`` is on (``TritonSemantic.device_assert``).  So the check never reports anything, and the
interpreter computes what it would without it (numpy's fixed-width integers wrap, as the GPU's
registers do); it only costs time: three more array operations for each index product, a third of
the interpreter's time in kernels that index by lanes (20 s of 55 s in one test of
tests/test_membound_forms9.py).  The patch turns it off in the interpreter's builders, the one it
keeps and those it makes for descriptors.  With ``debug`` on the check stays (the patch keeps it).
"""

from __future__ import annotations

import dataclasses
from typing import Any


def skip_unused_overflow_check() -> bool:
    """Patch the interpreter's builders (idempotent; False where this Triton has no such option)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    options = getattr(interpreter, "InterpreterOptions", None)
    if builder is None or options is None or "sanitize_overflow" not in {f.name for f in dataclasses.fields(options)}:
        return False
    if getattr(builder, "_croq2triton_no_overflow_check", False):
        return True
    init = builder.__init__

    def wrapping_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if not self.options.debug:
            self.options = dataclasses.replace(self.options, sanitize_overflow=False)

    builder.__init__ = wrapping_init
    builder._croq2triton_no_overflow_check = True
    kept = getattr(interpreter, "interpreter_builder", None)
    if kept is not None and not kept.options.debug:
        kept.options = dataclasses.replace(kept.options, sanitize_overflow=False)
    return True
