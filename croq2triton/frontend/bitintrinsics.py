"""CUDA's bit intrinsics and warp votes in ``__device__`` helpers (frontend/device.py), written as
the Croqtile expressions that compute them, so that a helper calling them translates.

* ``__popc`` / ``__popcll``: the population count by the SWAR sums of bit pairs, nibbles and bytes.
* ``__clz`` / ``__clzll``: the leading zeros, the number of shifts ``j`` in ``[0, w)`` that leave
  nothing (``(u >> j) == 0``); 32 (64) for zero.
* ``__ffs`` / ``__ffsll``: the 1-based position of the lowest set bit, ``popc(u ^ (u - 1))``; 0 for zero.
* ``__brev`` / ``__brevll``: the bits reversed, each bit ``j`` moved to ``w - 1 - j``.
* ``__any_sync`` / ``__all_sync``: a butterfly of ``__shfl_xor_sync`` taking the maximum (minimum)
  of the predicates of the 32 threads of the warp; ``__ballot_sync``: the predicate of lane ``j``
  (``__shfl_sync`` from lane ``j``) as bit ``j``.
* ``__activemask()``: the ballot of the threads of the warp that run the call: those the helper's
  own ``if``s and earlier ``return``s leave on its path (the reader's ``path``) and, where the
  helper is expanded at its call, those the kernel's conditions around the call and the lanes
  that exist (not the padding of a level) leave (``__lanes_active()``, lift/helpers.py). A warp's
  threads run converged in the tile IR, so this is the mask CUDA reports for a converged warp.

Each value read more than once is named once by ``name`` (the helper reader's named values,
frontend/device_body.py), so that the expression stays linear in size (a ballot's 32 shuffles of
one named predicate, a popcount's three SWAR steps each computed once).
Arguments are converted as CUDA's prototypes convert them (``__popc(unsigned int)``,
``__clz(int)``: the bits of the value as unsigned); the results are ``int`` (``unsigned`` for
``__brev``, ``unsigned int`` for ``__ballot_sync``).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Span
from . import ast as A

# name -> (width in bits, what it computes)
BITS = {
    "__popc": (32, "popc"), "__popcll": (64, "popc"), "__clz": (32, "clz"), "__clzll": (64, "clz"),
    "__ffs": (32, "ffs"), "__ffsll": (64, "ffs"), "__brev": (32, "brev"), "__brevll": (64, "brev"),
}  # fmt: skip
# name -> whether the first argument is the mask of participating threads
VOTES = {
    "__any_sync": True,
    "__all_sync": True,
    "__ballot_sync": True,
    "__any": False,
    "__all": False,
    "__ballot": False,
}


Namer = Callable[[A.Expr, str], A.Expr]


class _Build:
    def __init__(self, sp: Span | None, name: Namer, width: int = 32) -> None:
        self.sp = sp
        self.name = name
        self.w = width
        self.ut = "u64" if width == 64 else "u32"

    def int(self, v: int, t: str = "s32") -> A.Expr:
        suffix = {"u32": "u", "u64": "ull", "s64": "ll"}.get(t, "")
        text = (hex(v) if v > 9 else str(v)) + suffix
        return A.IntLit(v, text, t, span=self.sp)

    def u(self, v: int) -> A.Expr:
        return self.int(v, self.ut)

    def mask(self, byte: int) -> A.Expr:
        """``byte`` repeated over the width (0x55 -> 0x5555...)."""
        return self.u(int.from_bytes(bytes([byte]) * (self.w // 8), "little"))

    def bin(self, op: str, a: A.Expr, b: A.Expr) -> A.Expr:
        return A.Paren(A.Binary(op, a, b, span=self.sp), span=self.sp)

    def cast(self, t: str, e: A.Expr) -> A.Expr:
        return A.Cast(t, False, e, span=self.sp)

    def popc(self, u: A.Expr) -> A.Expr:
        u = self.name(u, "popc")
        v1 = self.bin("-", u, self.bin("&", self.bin(">>", u, self.int(1)), self.mask(0x55)))
        v1 = self.name(v1, "popc")
        v2 = self.bin(
            "+",
            self.bin("&", v1, self.mask(0x33)),
            self.bin("&", self.bin(">>", v1, self.int(2)), self.mask(0x33)),
        )
        v2 = self.name(v2, "popc")
        v3 = self.bin("&", self.bin("+", v2, self.bin(">>", v2, self.int(4))), self.mask(0x0F))
        return self.cast("s32", self.bin(">>", self.bin("*", v3, self.mask(0x01)), self.int(self.w - 8)))

    def clz(self, u: A.Expr) -> A.Expr:
        u = self.name(u, "clz")
        terms = [
            A.Paren(A.Ternary(self.bin("==", self.bin(">>", u, self.int(j)), self.u(0)), self.int(1), self.int(0), span=self.sp), span=self.sp)
            for j in range(self.w)
        ]  # fmt: skip
        return self._fold("+", terms)

    def ffs(self, u: A.Expr) -> A.Expr:
        u = self.name(u, "ffs")
        low = self.popc(self.bin("^", u, self.bin("-", u, self.u(1))))
        return A.Paren(A.Ternary(self.bin("==", u, self.u(0)), self.int(0), low, span=self.sp), span=self.sp)

    def brev(self, u: A.Expr) -> A.Expr:
        u = self.name(u, "brev")
        terms = [
            self.bin("<<", self.bin("&", self.bin(">>", u, self.int(j)), self.u(1)), self.int(self.w - 1 - j))
            for j in range(self.w)
        ]
        return self._fold("|", terms)

    def _fold(self, op: str, terms: list[A.Expr]) -> A.Expr:
        acc = terms[0]
        for t in terms[1:]:
            acc = self.bin(op, acc, t)
        return acc


def bit_intrinsic(name: str, arg: A.Expr, sp: Span | None, namer: Namer) -> A.Expr:
    """The expression of bit intrinsic ``name`` (a key of BITS) of ``arg``."""
    width, what = BITS[name]
    b = _Build(sp, namer, width)
    u = b.cast(b.ut, arg)
    return getattr(b, what)(u)


def vote(name: str, pred: A.Expr, sp: Span | None, namer: Namer) -> A.Expr:
    """The warp vote ``name`` (a key of VOTES) of ``pred`` over the 32 threads of a warp."""
    b = _Build(sp, namer)
    one = namer(A.Paren(A.Ternary(pred, b.int(1), b.int(0), span=sp), span=sp), "vote")
    if name.startswith("__ballot"):
        bit = namer(b.cast("u32", one), "vote")
        lanes = [
            b.bin("<<", A.Builtin("__shfl_sync", [bit, b.int(j), b.int(32)], span=sp), b.int(j)) for j in range(32)
        ]
        return b._fold("|", lanes)
    pick = "__max" if name.startswith("__any") else "__min"
    v: A.Expr = one
    for m in (16, 8, 4, 2, 1):
        v = namer(
            A.Builtin(pick, [v, A.Builtin("__shfl_xor_sync", [v, b.int(m), b.int(32)], span=sp)], span=sp), "vote"
        )
    return b.cast("s32", v)


# the warp reductions of sm_80 (``__reduce_add_sync(mask, v)``): name -> the operator or builtin
REDUCES = {
    "__reduce_add_sync": "+", "__reduce_min_sync": "__min", "__reduce_max_sync": "__max",
    "__reduce_and_sync": "&", "__reduce_or_sync": "|", "__reduce_xor_sync": "^",
}  # fmt: skip


def warp_reduce(name: str, value: A.Expr, sp: Span | None, namer: Namer) -> A.Expr:
    """The warp reduction ``name`` (a key of REDUCES) of ``value`` over the 32 threads of a warp: a
    butterfly of ``__shfl_xor_sync`` (every lane ends with the whole warp's result, in the type of
    ``value``: an int's sum wraps as CUDA's does)."""
    b = _Build(sp, namer)
    op = REDUCES[name]
    v: A.Expr = namer(A.Paren(value, span=sp), "red")
    for m in (16, 8, 4, 2, 1):
        other = A.Builtin("__shfl_xor_sync", [v, b.int(m), b.int(32)], span=sp)
        both = A.Builtin(op, [v, other], span=sp) if op.startswith("__") else b.bin(op, v, other)
        v = namer(both, "red")
    return v


LANES_ACTIVE = "__lanes_active"  # the threads that run where the call is (lift/helpers.py)


def active_mask(path: list[A.Expr], sp: Span | None, namer: Namer) -> A.Expr:
    """``__activemask()`` read under the helper's conditions ``path``: the ballot of the threads
    that run it (the kernel's part of it, :data:`LANES_ACTIVE`, lifted at the call)."""
    pred: A.Expr = A.Builtin(LANES_ACTIVE, [], span=sp)
    for c in path:
        pred = A.Paren(A.Binary("&&", pred, A.Paren(c, span=sp), span=sp), span=sp)
    return vote("__ballot", pred, sp, namer)
