"""Atomics that ``tl`` does not give in the form generated kernels need, called as ``_atomics.NAME``."""

from __future__ import annotations

import os

import triton
import triton.language as tl

_INTERPRET = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"))


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


@triton.jit
def _combined(cur, val, OP: tl.constexpr):
    if OP == "add":
        r = cur + val
    elif OP == "min":
        r = tl.minimum(cur, val)
    elif OP == "max":
        r = tl.maximum(cur, val)
    elif OP == "and":
        r = cur & val
    elif OP == "or":
        r = cur | val
    elif OP == "xor":
        r = cur ^ val
    else:  # xchg
        r = val
    return r


@triton.jit
def rmw16(ptr, val, mask, safe, OP: tl.constexpr):
    """An atomic ``add`` / ``min`` / ``max`` / ``xchg`` (and ``and`` / ``or`` / ``xor`` of integers) of 16-bit elements (f16, bf16, s16, u16), each
    lane's old value returned: Triton's atomics take 16-bit floats for ``add`` only and 16-bit integers
    for nothing, so the element is updated by a compare-and-swap of its 16 bits, tried again where
    another lane changed it first (lanes of one address take turns).  The bits are compared, not the
    values (a NaN never equals itself).  A bf16 add is computed in f32 and rounded to nearest even
    (the interpreter adds bf16 wrongly); compiled, bf16 and f16 adds are Triton's own.  ``safe``: an
    address lanes outside ``mask`` compare-and-swap at without changing it (the tensor's first element)."""
    elem: tl.constexpr = ptr.dtype.element_ty
    if OP == "add" and (elem == tl.float16 or elem == tl.bfloat16) and not _INTERPRET:
        old = tl.atomic_add(ptr, val.to(elem), mask=mask)
    else:
        pending = mask & (tl.zeros(ptr.shape, tl.int1) == 0)
        bits = tl.where(pending, ptr, safe).to(tl.pointer_type(tl.int16), bitcast=True)
        cur = tl.load(ptr, mask=pending, other=0)
        old = cur
        while tl.max(pending.to(tl.int32) + tl.zeros([1], tl.int32)) > 0:  # (a [1] under a lane's scalar)
            if elem == tl.bfloat16:
                new = _combined(cur.to(tl.float32), val.to(tl.float32), OP).to(elem)
            else:
                new = _combined(cur, val.to(elem), OP).to(elem)
            expect = tl.where(pending, cur.to(tl.int16, bitcast=True), 0)
            want = tl.where(pending, new.to(tl.int16, bitcast=True), 0)
            seen = tl.atomic_cas(bits, expect, want)  # (lanes not pending: no change, as cas says)
            done = pending & (seen == expect)
            old = tl.where(done, cur, old)
            pending = pending & (seen != expect)
            cur = seen.to(elem, bitcast=True)
    return old
