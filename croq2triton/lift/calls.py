"""Calls inside a kernel (LANGUAGE.md 7.7), as a mixin of the kernel lifter (lift/kernel.py):
atomics on elements of tensors and of buffers in scratch memory, ``print`` / ``println``,
``assert`` and named barriers (``__bar_sync``).

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

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..sema.types import SUB_BYTE
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import shared_element
from .host import ir_type
from .notlifted import NotLifted, Unlowerable
from .terms import unparen

ATOMICS = {
    "__atomic_add": "add", "__atomic_sub": "add", "__atomic_exch": "xchg", "__atomic_min": "min",
    "__atomic_max": "max", "__atomic_and": "and", "__atomic_or": "or", "__atomic_xor": "xor", "__atomic_cas": "cas",
}  # fmt: skip


# element types with no atomics (sub-byte integers: a byte each)
EIGHT_BITS = ("s8", "u8", "f8_e4m3", "f8_e5m2", "f8_ue8m0", "bool", *SUB_BYTE)

# builtins that only move registers between warpgroups (LANGUAGE.md 7.7)
REGISTER_HINTS = ("croq::cuda::setreg_inc", "croq::cuda::setreg_dec")


class Calls:
    pred: list[E.Expr]
    lanes: tuple[int, tuple[int, ...]] | None
    padding: list[E.Expr]
    expr: Any
    convert: Any
    truth: Any
    is_shape: Any
    extents: Any
    emit: Any
    fresh: Any
    tensor: Any
    access: Any
    mask_of: Any
    buffer_of: Any
    slot_element: Any
    scratch_index: Any
    scratch_address: Any
    index_args: Any

    def call_stmt(self, s: A.CallStmt) -> None:
        c = s.call
        if c.expanded is not None:  # ``call F(..);`` of a helper with effects (frontend/helpers.py)
            self.expr(c.expanded)
        elif c.kind in ("print", "println"):
            if not c.bang:  # ``print!`` prints nothing
                self.device_print(c, s)
        elif c.kind == "assert":
            cond = self.truth(self.expr(c.args[0]))
            runs = E.fold(E.conj([*self.pred, *self.padding]))  # the lanes that reach the assert
            if not (isinstance(runs, E.Const) and runs.value):
                cond = E.fold(E.Bin("|", E.Un("!", runs), cond))
            message = c.args[1].value if len(c.args) > 1 and isinstance(c.args[1], A.StringLit) else "assertion failed"
            self.emit(N.Assert(cond, message), s)
        elif c.kind == "atomic":
            self.atomic(c, result=False)
        elif c.kind == "bar":
            self.named_barrier(c, s)
        elif c.device is not None and c.device.body is not None:
            return  # a __device__ helper's value nobody reads (its arguments change nothing)
        elif c.kind == "call" and c.name in REGISTER_HINTS:
            # warpgroup register reallocation (LANGUAGE.md 7.7): Triton allocates a program's
            # registers itself (its warp-specialized partitions included); it changes no value
            self.register_hint(c, s)
        else:
            raise Unlowerable(call_form(c), s, call_hint(c))

    def register_hint(self, c: A.Call, s: A.Stmt) -> None:
        """``croq::cuda::setreg_inc(n)`` / ``setreg_dec(n)``: ``n`` a constant the register file
        takes (``setmaxnreg``: a multiple of 8 from 24 to 256); it lifts to no statement."""
        value = self.expr(c.args[0]).expr if len(c.args) == 1 else None
        n = value.value if isinstance(value, E.Const) else None
        if not isinstance(n, int) or isinstance(n, bool) or n % 8 or not 24 <= n <= 256:
            given = "this count" if len(c.args) == 1 else f"{len(c.args)} arguments"
            raise CroqSemanticError(
                f"'{c.name}' of {given}: it takes one constant register count, a multiple of 8 from 24 to 256",
                s.span,
                "the count each thread of the warpgroup keeps (PTX setmaxnreg), e.g. 240 for consumers, 40 for"
                " a producer",
            )

    def named_barrier(self, c: A.Call, s: A.Stmt) -> None:
        """``__bar_sync(id, n)`` / ``__bar_arrive(id, n)``: a barrier of ``n`` threads (LANGUAGE.md
        14.4: barriers are the translator's job).  Reached by every lane alike, it orders nothing
        the lifted program does not: each statement is complete for all lanes before the next.
        Under a condition that tells lanes apart, threads of another branch could be what it waits
        for (an order between branches that program order does not keep): refused.  (Across warp
        roles: lift/collapse.py.)"""
        if any(p.shape for p in self.pred):
            raise NotLifted(f"a named barrier ('{c.name}') under a condition on the thread index", s)

    def device_print(self, c: A.Call, s: A.Stmt) -> None:
        """``print`` / ``println``: each lane where the enclosing conditions hold prints its values.
        A condition of the program alone (its block, loop counters) is an ``if`` around the print;
        one that tells lanes apart visits the lanes in turn, and a lane where it holds prints the
        values it sees (Triton's ``device_print`` has no mask).  The arguments keep their order:
        each run of values prints behind the text written before it (one ``device_print`` each,
        as Triton prints every value on a line of its own); text after the last value prints on
        its own, unless it only ends the line."""
        segments: list[tuple[str, tuple[E.Expr, ...]]] = []
        text = ""
        values: tuple[E.Expr, ...] = ()
        for a in c.args:
            if isinstance(a, A.StringLit):
                if values:
                    segments.append((text, values))
                    text, values = "", ()
                text += a.value
            elif self.is_shape(a):  # a shape or an index tuple of the launcher: its extents, in order
                values += tuple(self.extents(a))
            else:
                values += tuple(self.expr(x).expr for x in self.index_args([a]))
        if values or not segments or text.strip():
            segments.append((text, values))
        cond = E.fold(E.conj([*self.pred, *self.padding]))
        prints: list[N.Stmt] = [_at_line(N.Print(t, v), s) for t, v in segments]
        if isinstance(cond, E.Const):
            if cond.value:
                for p in prints:
                    self.emit(p, s)
            return
        if not cond.shape:
            self.emit(N.If(cond, prints), s)
            return
        self.emit(self.print_lanes(segments, cond, s), s)

    def print_lanes(self, segments: list[tuple[str, tuple[E.Expr, ...]]], cond: E.Expr, s: A.Stmt) -> N.Stmt:
        """``for lane in range(n): if cond at lane: print the values at lane`` over the lanes of
        ``cond`` and ``values``: a lane is picked out of each by a reduction."""
        values = tuple(v for _, vs in segments for v in vs)
        shape = E.broadcast(cond.shape, *(v.shape for v in values))
        if not all(isinstance(n, int) for n in shape):
            raise NotLifted("a print under a condition that tells threads apart, in a tile sized at launch", s)
        sizes = [int(n) for n in shape]  # type: ignore[call-overload]
        total = 1
        for n in sizes:
            total *= n
        lane = E.Var(self.fresh("lane"), "i32", lo=0, hi=total - 1)
        picked: E.Expr = cond
        stride = total
        for axis, n in enumerate(sizes):
            stride //= n
            if n == 1:
                continue
            coordinate = E.Bin("%", E.Bin("/", lane, E.Const(stride)), E.Const(n))
            here = E.Lift(E.Arange(n), len(sizes), (axis,)) if len(sizes) > 1 else E.Arange(n)
            picked = E.Bin("&", picked, E.Bin("==", here, E.fold(coordinate)))
        flag = E.Var(self.fresh("printing"), "i1", dims=shape)
        prints: list[N.Stmt] = []
        for text, vs in segments:
            at_lane = []
            for v in vs:
                v = E.Cast(v, "i32") if v.dtype == "i1" else v
                at_lane.append(_one(E.Where(flag, v, E.Const(0, v.dtype)), "sum"))
            prints.append(_at_line(N.Print(text, tuple(at_lane)), s))
        hit = _one(E.Cast(flag, "i32"), "max")
        body: list[N.Stmt] = [
            _at_line(N.Let(flag, E.fold(picked)), s),
            _at_line(N.If(E.Bin(">", hit, E.Const(0)), prints), s),
        ]
        return N.For(lane, E.Const(0), E.Const(total), E.Const(1), body)

    def atomic(self, c: A.Call, result: bool = True) -> Value:
        """The atomic ``c`` for every lane; its value is the element's old value (``result``)."""
        op = ATOMICS.get(c.name)
        if op is None or len(c.args) != (3 if op == "cas" else 2):
            raise NotLifted(f"the atomic '{c.name}'", c)
        target = unparen(c.args[0])
        if not isinstance(target, A.At):
            raise NotLifted("an atomic on something other than an element", c)
        target = self.slot_element(target)
        buf = self.buffer_of(target.base)
        if buf is not None:
            if buf.home is None:  # the placement puts every atomic's buffer in scratch memory
                raise NotLifted("an atomic on a buffer in registers", target)
            elem, base = buf.elem, buf.home.arg
            address, mask = self.scratch_address(buf, self.scratch_index(target, buf), target)
            index: tuple[E.Expr, ...] = (address,)
        else:
            elem, ptr, index, inside = self.access(target)  # of a tensor, or of a named view of one
            base = ptr.name
            mask = self.mask_of(inside, target, self.padding)
        if elem in EIGHT_BITS:
            raise NotLifted(
                f"'{c.name}' on {elem} elements (Triton has no atomics on 8-bit elements)",
                c,
                "keep what the atomics gather in a buffer of 32-bit elements (s32, f32) and convert it after",
            )
        values = [self.convert(self.expr(a), elem).expr for a in c.args[1:]]
        if c.name == "__atomic_sub":
            values[0] = E.fold(E.Un("-", values[0]))
        # every lane of the thread levels around it runs the atomic, its own once (an address and value
        # the same for all of them too: ``__atomic_add(c.at(0), 10)`` under ``parallel l by 32 : thread``
        # adds 320 a block)
        lanes = tuple(self.lanes[1]) if self.lanes is not None else ()
        wide = E.broadcast(*(i.shape for i in index), *(v.shape for v in values), mask.shape if mask else (), lanes)
        index = shared_element(index, wide)
        old = E.Var(self.fresh("old"), ir_type(elem) or "i32", dims=wide)
        compare = values[0] if op == "cas" else None
        self.emit(N.Atomic(op, base, index, values[-1], mask, old if result else None, compare), c)
        return Value(old, elem)


def _one(value: E.Expr, op: str) -> E.Expr:
    """``value`` reduced over every axis to a scalar."""
    while value.shape:
        value = E.Reduce(op, value, len(value.shape) - 1)
    return value


def _at_line(stmt: N.Stmt, node: A.Node) -> N.Stmt:
    if node.span is not None:
        stmt.line = node.span.line
    return stmt


CALL_HINT = "calls into C++/CUDA device code have no Triton form: write the computation in Croqtile"


DEVICE_HINT = (
    "a __device__ helper translates when its body computes a value from its parameters (locals, assignments, "
    "'if', 'for' / 'while' / 'do' loops, 'break' / 'continue', 'return's, atomics through pointer parameters)"
    " with the CUDA intrinsics the README lists"
)


def call_hint(c: A.Call) -> str:
    return DEVICE_HINT if c.device is not None else CALL_HINT


def call_form(c: A.Call) -> str:
    """What a call that has no Triton form is, for the diagnostic that refuses it."""
    if c.device is not None and c.device.refusal:
        return f"the call of '{c.name}', a __device__ function Triton cannot express: {c.device.refusal}"
    if c.kind == "call":
        return f"the call of '{c.name}' (a C++ function: Triton kernels cannot call it)"
    if c.kind == "intrinsic":
        return f"the intrinsic call '{c.name}' (a C++ library function: Triton kernels cannot call it)"
    return f"a '{c.kind}' call ('{c.name}')"
