"""``tl.minimum`` / ``tl.maximum`` of floats in Triton's interpreter as compiled code computes them.

By default (``propagate_nan=tl.PropagateNan.NONE``) Triton lowers them to ``minnum`` / ``maxnum``
(PTX ``min.f32`` / ``max.f32``): a NaN operand loses to the other one, as CUDA's ``fminf`` /
``fmaxf`` (and Croqtile's ``__min`` / ``__max``) do.  Triton 3.6's interpreter computes both with
``numpy.minimum`` / ``numpy.maximum``, which return the NaN, so a kernel's results on NaN inputs
differed between the CPU and the GPU.  ``numpy.fmin`` / ``numpy.fmax`` are ``minnum`` / ``maxnum``;
the propagating variants (``PropagateNan.ALL``: ``minimumf`` / ``maximumf``) keep ``numpy.minimum``.
Its reductions (``tl.min`` / ``tl.max``) use ``numpy.nanmin`` / ``nanmax`` already, as compiled.
"""

from __future__ import annotations

import numpy as np


def match_compiled_minmax() -> bool:
    """Patch the interpreter's builder (idempotent; False where this Triton has no such builder)."""
    try:
        from triton.runtime.interpreter import InterpreterBuilder
    except ImportError:
        return False
    if not hasattr(InterpreterBuilder, "create_minnumf") or not hasattr(InterpreterBuilder, "binary_op"):
        return False
    InterpreterBuilder.create_minnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmin)  # type: ignore[attr-defined]
    InterpreterBuilder.create_maxnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmax)  # type: ignore[attr-defined]
    return True
