"""Calls of ``__device__`` helpers and warp shuffles in a kernel (a mixin of lift/kernel.py).

A helper that computes a value from its parameters (frontend/device.py, frontend/helpers.py) is a
``@triton.jit`` function of the module (:class:`~croq2triton.tir.nodes.Helper`): its body is lifted
once over placeholder parameters of the types the helper declares (a template's type parameter takes
the argument's type: one helper per type, ``_device_SHFL_XOR_f32``), and the call passes the
arguments converted to those types.

A warp shuffle (``__shfl_xor_sync(mask, v, m, w)`` in a helper's body) gives each thread the value
``v`` of another thread of its warp; the threads are lanes of the block's tile, so it is a gather
along the innermost thread axis (``tl.gather``): thread ``i`` reads lane ``j`` of its segment of
``w`` threads, or keeps its own value where PTX's ``shfl.sync`` does (``j`` past the segment's last
lane for ``xor`` and ``down``, before its first for ``up``).
"""

from __future__ import annotations

import keyword
from typing import Any

from ..frontend import ast as A
from ..frontend.device import SHUFFLE_BUILTINS, DeviceFunction
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import spread
from .calls import call_form, call_hint
from .host import ir_type
from .notlifted import NotLifted

WARP = 32
RESERVED = {"tl", "triton", "math", "torch", "os"}


class DeviceCalls:
    scopes: list[dict[str, Any]]
    body: list[N.Stmt]
    lanes: tuple[int, tuple[int, ...]] | None
    lane_first: int
    lane_threads: int
    helpers: dict[str, N.Helper]
    expr: Any
    convert: Any
    ctype_of: Any
    fresh: Any
    emit: Any
    lane_axis: dict[str, int]

    # a helper expanded at its call: the values it names, and how many conditions held at the call
    shared_values: tuple[dict[int, Value], int] | None = None
    pred: list[E.Expr]

    def expr(self, e: A.Expr, want: str | None = None) -> Value:
        """A helper's body expanded at its call (frontend/helpers.py) computes each value it names
        and each argument once, a ``let`` of the kernel before the statement, as C evaluates the
        arguments: where the call runs, whatever branch of the body reads them (their element
        reads masked by the conditions of the call, not of a ``?:`` inside the body).  Its effects
        (``Paren.effects``: atomics, each a ``?:`` of the conditions it runs under) run first, in
        their order, whether or not the value reads them."""
        if isinstance(e, A.Paren) and e.written is not None:
            saved, self.shared_values = self.shared_values, ({}, len(self.pred))
            try:
                for effect in e.effects:  # its atomics, in the order its statements run them
                    self.expr(effect)
                return super().expr(e, want)  # type: ignore[misc]
            finally:
                self.shared_values = saved
        if isinstance(e, A.Paren) and e.shared is not None and self.shared_values is not None:
            memo, depth = self.shared_values
            known = memo.get(id(e))
            if known is None:
                inside, self.pred = self.pred, self.pred[:depth]
                try:
                    v = super().expr(e, want)  # type: ignore[misc]
                finally:
                    self.pred = inside
                if not isinstance(v.expr, (E.Var, E.Const)):
                    var = E.Var(self.fresh(e.shared), v.expr.dtype, dims=v.expr.shape)
                    self.emit(N.Let(var, v.expr), e)
                    v = Value(var, v.ctype)
                known = memo[id(e)] = v
            return known
        return super().expr(e, want)  # type: ignore[misc]

    def builtin(self, e: A.Builtin) -> Value:
        if e.name in SHUFFLE_BUILTINS:
            return self.shuffle(e)
        return super().builtin(e)  # type: ignore[misc]

    # ------------------------------------------------------------ helpers
    def device_call(self, c: A.Call) -> Value:
        """``F(args)`` of a helper that computes a value: a call of its ``@triton.jit`` function."""
        df: DeviceFunction = c.device
        if df.body is None:
            raise NotLifted(call_form(c), c, call_hint(c))
        if df.returns == "void":
            raise NotLifted(f"the value of the call of '{c.name}', a __device__ function that returns nothing", c)
        if len(c.args) != len(df.params):
            raise NotLifted(f"the call of '{c.name}' with {len(c.args)} argument(s) (it takes {len(df.params)})", c)
        args: list[E.Expr] = []
        params: list[E.Var] = []
        scope: dict[str, Value] = {}
        deduced: dict[str, str] = {}  # a template's type parameter -> the type of its first argument
        for p, a in zip(df.params, c.args, strict=True):
            v = self.expr(a)
            ctype = p.ctype or deduced.setdefault(p.template or "", self.ctype_of(v))
            if ir_type(ctype) is None:
                raise NotLifted(f"an argument of type '{ctype}' of the helper '{c.name}'", a)
            v = self.convert(v, ctype)
            arg = v.expr
            if isinstance(arg, E.Const) and not arg.shape:  # a Triton scalar, not a Python number
                arg = E.Cast(arg, ir_type(ctype) or "i32")
            var = E.Var(_param_name(p.name), ir_type(ctype) or "i32")
            params.append(var)
            args.append(arg)
            scope[p.name] = Value(var, ctype)
        name = "_device_" + "_".join([df.name.replace("::", "_"), *deduced.values(), *filter(None, [df.instance])])
        helper = self.helpers.get(name)
        if helper is None:
            helper = self.helper_body(name, df, params, scope, c)
            self.helpers[name] = helper
        return Value(E.Call(name, tuple(args), helper.body.dtype), helper.ctype)

    def helper_body(
        self, name: str, df: DeviceFunction, params: list[E.Var], scope: dict[str, Value], c: A.Call
    ) -> N.Helper:
        assert df.body is not None
        saved_body, saved_scopes = self.body, self.scopes
        self.body, self.scopes = [], [scope]  # the helper sees its parameters only
        lets: list[tuple[E.Var, E.Expr]] = []
        try:
            for let_name, e in df.lets:  # its named values (frontend/device_body.py), each a line
                v = self.expr(e)
                ctype = self.ctype_of(v)
                var = E.Var(_param_name(let_name), ir_type(ctype) or "i32")
                lets.append((var, self.convert(v, ctype).expr))
                scope[let_name] = Value(var, ctype)
            value = self.expr(df.body)
            if df.returns not in (None, "void"):
                value = self.convert(value, df.returns)
            emitted = self.body
        finally:
            self.body, self.scopes = saved_body, saved_scopes
        if emitted:
            raise NotLifted(f"the helper '{c.name}', whose body needs statements in Triton", c)
        known = {p.name for p in params} | {v.name for v, _ in lets}
        unknown = {v.name for e in (*(e for _, e in lets), value.expr) for v in E.free_vars(e)} - known
        if unknown:
            raise NotLifted(f"the helper '{c.name}', whose body reads {sorted(unknown)}", c)
        where = df.span.line if df.span is not None else 0
        doc = f"__device__ {df.name}"
        return N.Helper(name, tuple(params), value.expr, value.ctype, doc, where, tuple(lets))

    # ------------------------------------------------------------ shuffles
    def shuffle(self, e: A.Builtin) -> Value:
        """A warp shuffle (see the module's docstring)."""
        value, offset, width = (self.expr(a) for a in e.args)
        w = E.fold(width.expr)
        if not (isinstance(w, E.Const) and isinstance(w.value, int) and 1 <= w.value <= WARP):
            raise NotLifted("a warp shuffle whose width is not a constant of at most 32", e)
        if w.value & (w.value - 1):
            raise NotLifted("a warp shuffle whose width is not a power of two", e)
        shape = self.lanes[1] if self.lanes is not None else ()
        if not shape or all(n == 1 for n in shape) or not value.expr.shape:
            return value  # one thread, or the same value in every thread
        if any(not isinstance(n, int) for n in shape):
            raise NotLifted("a warp shuffle among threads counted at launch", e)
        axis = self.lane_first - 1
        n = int(shape[axis])
        lanes = 1
        for k in shape:
            lanes *= int(k)
        if self.lane_threads > lanes:
            raise NotLifted("a warp shuffle among the threads of a unit that runs as one lane", e)
        if any(int(k) > 1 for d, k in enumerate(shape) if d != axis) and n % WARP and n % w.value:
            # (segments of a width that divides the innermost extent stay in one row of it: thread
            # (q, l) is lane (q * n + l) % 32 of its warp, and w divides both n and 32)
            raise NotLifted("a warp shuffle whose segments span several rows of a thread level", e)
        try:
            full = E.broadcast(value.expr.shape, shape)
        except E.ShapeError:
            full = ()
        if full != tuple(shape):
            raise NotLifted("a warp shuffle of a value that is not one per thread", e)
        rank = len(shape)
        i = self.lane_var(axis, n, rank)
        lane = E.Bin("%", i, E.Const(WARP)) if n > WARP else i
        segment = E.Bin("-", lane, E.Bin("%", lane, E.Const(w.value)))  # its first lane
        last = E.Bin("+", segment, E.Const(w.value - 1))
        b = self.convert(offset, "s32").expr
        if e.name == "__shfl_xor_sync":
            j: E.Expr = E.Bin("^", lane, b)
            valid: E.Expr = E.Bin("<=", j, last)
        elif e.name == "__shfl_down_sync":
            j = E.Bin("+", lane, b)
            valid = E.Bin("<=", j, last)
        elif e.name == "__shfl_up_sync":
            j = E.Bin("-", lane, b)
            valid = E.Bin(">=", j, segment)
        else:  # __shfl_sync: lane b of the segment
            j = E.Bin(
                "+",
                segment,
                E.Bin("%", E.Bin("+", E.Bin("%", b, E.Const(w.value)), E.Const(w.value)), E.Const(w.value)),
            )
            valid = E.Const(True, "i1")
        source = E.Where(valid, E.Bin("+", E.Bin("-", i, lane), j), i)
        index = spread(E.fold(source), tuple(int(k) for k in shape), "i32")
        if not isinstance(index, E.Var):  # the thread each thread reads, named
            var = E.Var(self.fresh("source_lane"), "i32", dims=index.shape, lo=0, hi=n - 1)
            self.emit(N.Let(var, index), e)
            index = var
        tile = spread(value.expr, tuple(int(k) for k in shape), value.expr.dtype)
        return Value(E.Call("gather", (tile, index, E.Const(axis)), value.expr.dtype), value.ctype)

    def lane_var(self, axis: int, n: int, rank: int) -> E.Expr:
        """The index of the threads along ``axis``: the thread level's variable where it is in
        scope, else a new ``tl.arange``."""
        want = E.Arange(n) if rank == 1 else E.Lift(E.Arange(n), rank, (axis,))
        for sc in reversed(self.scopes):
            for b in sc.values():
                v = getattr(b, "value", None)
                if isinstance(v, E.Var) and self.lane_axis.get(v.name) == axis and v.shape == want.shape:
                    return v
        return want


def _param_name(name: str) -> str:
    """A parameter's name in the helper: the C name unless Python or the module owns it."""
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in RESERVED or name.startswith("_"):
        return f"{name}_"
    return name
