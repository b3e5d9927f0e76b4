"""Calls inside a kernel (LANGUAGE.md 7.7), as a mixin of the kernel lifter (lift/kernel.py):
atomics on elements of tensors and of buffers in scratch memory, ``print`` / ``println`` and
``assert``.

An atomic is one per lane: ``__atomic_add(bins.at(v), 1)`` under ``parallel t by 256`` is 256
atomic adds, each at its lane's address, masked like a store (the enclosing conditions, the lanes
that only pad a level, the tensor's or buffer's bounds); where lanes the value or a condition
tells apart share one element (``sum.at(0)``), the address is broadcast so each lane adds its
own.  It returns the element's old value.  ``__atomic_sub`` adds the negated value;
``__atomic_cas(x, compare, value)`` compares first.  A buffer that is an atomic's target lives in
scratch memory (lift/placement.py).
"""

from __future__ import annotations

from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import shared_element
from .host import ir_type
from .notlifted import NotLifted
from .terms import unparen

ATOMICS = {
    "__atomic_add": "add", "__atomic_sub": "add", "__atomic_exch": "xchg", "__atomic_min": "min",
    "__atomic_max": "max", "__atomic_and": "and", "__atomic_or": "or", "__atomic_xor": "xor", "__atomic_cas": "cas",
}  # fmt: skip


class Calls:
    pred: list[E.Expr]
    padding: list[E.Expr]
    expr: Any
    convert: Any
    truth: Any
    emit: Any
    fresh: Any
    tensor: Any
    index: Any
    mask: Any
    buffer_of: Any
    scratch_index: Any
    scratch_address: Any
    index_args: Any

    def call_stmt(self, s: A.CallStmt) -> None:
        c = s.call
        if c.kind in ("print", "println"):
            if not c.bang:  # ``print!`` prints nothing
                self.device_print(c, s)
        elif c.kind == "assert":
            cond = self.truth(self.expr(c.args[0]))
            message = c.args[1].value if len(c.args) > 1 and isinstance(c.args[1], A.StringLit) else "assertion failed"
            self.emit(N.Assert(cond, message), s)
        elif c.kind == "atomic":
            self.atomic(c, result=False)
        else:
            raise NotLifted(call_form(c), s, CALL_HINT)

    def device_print(self, c: A.Call, s: A.Stmt) -> None:
        text = " ".join(a.value for a in c.args if isinstance(a, A.StringLit))
        values = tuple(self.expr(a).expr for a in self.index_args(c.args) if not isinstance(a, A.StringLit))
        self.emit(N.Print(text, values), s)

    def atomic(self, c: A.Call, result: bool = True) -> Value:
        """The atomic ``c`` for every lane; its value is the element's old value (``result``)."""
        op = ATOMICS.get(c.name)
        if op is None or len(c.args) != (3 if op == "cas" else 2):
            raise NotLifted(f"the atomic '{c.name}'", c)
        target = unparen(c.args[0])
        if not isinstance(target, A.At):
            raise NotLifted("an atomic on something other than an element", c)
        buf = self.buffer_of(target.base)
        if buf is not None:
            if buf.home is None:  # the placement puts every atomic's buffer in scratch memory
                raise NotLifted("an atomic on a buffer in registers", target)
            elem, base = buf.elem, buf.home.arg
            address, mask = self.scratch_address(buf, self.scratch_index(target, buf), target)
            index: tuple[E.Expr, ...] = (address,)
        else:
            elem, ptr = self.tensor(target.base)
            base = ptr.name
            index = self.index(target, len(ptr.extents))
            mask = self.mask(index, ptr, target)
        values = [self.convert(self.expr(a), elem).expr for a in c.args[1:]]
        if c.name == "__atomic_sub":
            values[0] = E.fold(E.Un("-", values[0]))
        wide = E.broadcast(*(i.shape for i in index), *(v.shape for v in values), mask.shape if mask else ())
        index = shared_element(index, wide)
        old = E.Var(self.fresh("old"), ir_type(elem) or "i32", dims=wide)
        compare = values[0] if op == "cas" else None
        self.emit(N.Atomic(op, base, index, values[-1], mask, old if result else None, compare), c)
        return Value(old, elem)


CALL_HINT = "calls into C++/CUDA device code have no Triton form: write the computation in Croqtile"


def call_form(c: A.Call) -> str:
    """What a call that has no Triton form is, for the diagnostic that refuses it."""
    if c.kind == "call":
        return f"the call of '{c.name}' (a C++ function: Triton kernels cannot call it)"
    if c.kind == "intrinsic":
        return f"the intrinsic call '{c.name}' (a C++ library function: Triton kernels cannot call it)"
    return f"a '{c.kind}' call ('{c.name}')"
