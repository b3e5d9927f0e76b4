"""Atomics that ``tl`` does not give in the form generated kernels need, called as ``_atomics.NAME``."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def cas(ptr, cmp, val):
    """``tl.atomic_cas`` on blocks of one shape: it takes no mask, and neither the interpreter nor
    every compiler version broadcasts scalar ``cmp`` / ``val`` to the block of pointers. (Lanes that
    must not write are given by the caller a valid address and ``cmp == val``: no change.)"""
    zero = tl.zeros(ptr.shape, ptr.dtype.element_ty)
    ptr, c = tl.broadcast(ptr, cmp + zero)
    ptr, v = tl.broadcast(ptr, val + zero)
    c, v = tl.broadcast(c, v)
    ptr, c = tl.broadcast(ptr, c)
    return tl.atomic_cas(ptr, c, v)
