"""Comparisons in Triton's interpreter give booleans, as compiled code does.

Triton 3.6's interpreter builds ``a > b`` with its generic binary operation, which tags the result
with the operands' type (``fp32``) instead of ``int1``.  A comparison of tensors keeps numpy's
boolean data and works, but one of two scalars (a value folded by ``tl.sum``) is broadcast by the
tag: into a float32 array, which ``&`` / ``|`` with a boolean tensor then reject
(``ufunc 'bitwise_and' not supported``) where the compiled kernel runs: ``(t == 0) & (total > 0.0)``.
The patch tags every comparison's result ``int1`` with boolean data.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def compare_as_bool() -> bool:
    """Patch the interpreter's builder (idempotent; False where this Triton has no such builder)."""
    try:
        import triton.language as tl
        from triton.runtime.interpreter import InterpreterBuilder, TensorHandle
    except ImportError:
        return False
    names = [n for n in dir(InterpreterBuilder) if n.startswith(("create_fcmp", "create_icmp"))]
    if not names or getattr(InterpreterBuilder, "_croq2triton_bool_compares", False):
        return bool(names)
    for name in names:
        original = getattr(InterpreterBuilder, name)

        def compare(self: Any, lhs: Any, rhs: Any, original: Any = original) -> Any:
            out = original(self, lhs, rhs)
            return TensorHandle(np.asarray(out.data, dtype=np.bool_), tl.int1)

        setattr(InterpreterBuilder, name, compare)
    InterpreterBuilder._croq2triton_bool_compares = True  # type: ignore[attr-defined]
    return True
