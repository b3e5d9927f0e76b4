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
from ..frontend.bitintrinsics import LANES_ACTIVE
from ..frontend.device import SHUFFLE_BUILTINS, DeviceFunction
from ..tir import expr as E
from ..tir import nodes as N
from .arith import Value
from .buffers import spread
from .calls import call_form, call_hint
from .host import ir_type
from .loops import any_lane
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

    # a helper expanded at its call: the values it names (and its loops' values), and how many
    # conditions held at the call
    shared_values: tuple[dict[int, Any], int] | None = None
    pred: list[E.Expr]
    loop_depth: int

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
        if isinstance(e, A.LoopOut):
            values = self.device_loop(e.loop)
            return values[e.index] if e.index >= 0 else Value(E.Const(0), "s32")  # (-1: run for its effects)
        return super().expr(e, want)  # type: ignore[misc]

    def device_loop(self, loop: A.DeviceLoop) -> list[Value]:
        """A loop of a helper's body whose trip count is known at run time (A.DeviceLoop), where
        the helper is expanded: its state a variable per local it changes, its values from outside
        computed before it.  A condition the threads share is Triton's ``while`` on it; one that
        differs between them gives each thread a flag (``active``) that holds until its condition
        first fails, the program looping while any holds and each thread's state changing only
        while its own does (SIMT).  The state's shapes: those the body gives it (a value of one
        thread where the initial one is the program's)."""
        if self.shared_values is None:
            raise NotLifted("a loop of a run-time trip count outside its helper", loop)
        memo = self.shared_values[0]
        if id(loop) in memo:
            return memo[id(loop)]  # type: ignore[no-any-return]
        parts = (*loop.inits, loop.cond, *loop.let_values, *loop.updates)
        for x in _outside(parts):  # (computed once, before the loop)
            self.expr(x)
        inits = [self.expr(x) for x in loop.inits]
        ctypes = [self.ctype_of(v) for v in inits]
        types = [ir_type(c) or "i32" for c in ctypes]
        shapes = [v.expr.shape for v in inits]
        for _ in range(len(shapes) + 2):  # the shapes the state takes: until the body keeps them
            trial = [E.Var(self.fresh(n), t, dims=sh) for n, t, sh in zip(loop.names, types, shapes, strict=True)]
            outer, saved_lets, known = self.body, list(self.lets), set(memo)
            self.body = []  # (what the trial emits is dropped)
            self.scopes.append({n: Value(v, c) for n, v, c in zip(loop.names, trial, ctypes, strict=True)})
            try:
                cond = self.truth(self.expr(loop.cond))
                for name, value in zip(loop.let_names, loop.let_values, strict=True):
                    self.scopes[-1][name] = self.expr(value)
                ups = [self.convert(self.expr(u), c).expr for u, c in zip(loop.updates, ctypes, strict=True)]
            finally:
                self.scopes.pop()
                self.body, self.lets = outer, saved_lets
                _forget(memo, known)
            try:
                wide = [E.broadcast(sh, u.shape, cond.shape) for sh, u in zip(shapes, ups, strict=True)]
            except E.ShapeError:
                raise NotLifted("a loop whose values change shape", loop) from None
            if wide == shapes:
                break
            shapes = wide
        else:
            raise NotLifted("a loop whose values change shape", loop)
        state = [E.Var(self.fresh(n), t, dims=sh) for n, t, sh in zip(loop.names, types, shapes, strict=True)]
        for var, v, c, t in zip(state, inits, ctypes, types, strict=True):
            first = self.convert(v, c).expr
            if isinstance(first, E.Const) and not first.shape:  # a Triton scalar, not a Python number
                first = E.Cast(first, t)
            self.emit(N.Let(var, spread(first, tuple(var.shape), t)), loop)  # type: ignore[arg-type]
        scope: dict[str, Any] = {n: Value(v, c) for n, v, c in zip(loop.names, state, ctypes, strict=True)}
        self.scopes.append(scope)
        cond = self.truth(self.expr(loop.cond))
        flag = E.Var(self.fresh("go"), "i1")
        active: E.Var | None = None
        if cond.shape:  # each thread its own condition
            whole = E.broadcast(cond.shape, *shapes)
            live = E.conj(self.pred) if self.pred else None  # (threads the call's conditions leave out)
            start = cond if live is None else E.Bin("&", live, cond)
            active = E.Var(self.fresh("active"), "i1", dims=whole)
            self.emit(N.Let(active, E.fold(E.Bin("|", start, E.Full(whole, False, "i1")))), loop)
            self.emit(N.Let(flag, any_lane(active)), loop)
        else:
            self.emit(N.Let(flag, cond), loop)
        outer, saved_lets, known = self.body, list(self.lets), set(memo)
        self.body = []
        self.loop_depth += 1
        if active is not None:
            self.pred.append(active)
        try:
            for name, value in zip(loop.let_names, loop.let_values, strict=True):
                v = self.expr(value)
                var = E.Var(self.fresh(name), v.expr.dtype, dims=v.expr.shape)
                self.emit(N.Let(var, v.expr), loop)
                scope[name] = Value(var, v.ctype)
            nexts = []
            for var, u, c, t in zip(state, loop.updates, ctypes, types, strict=True):
                new = spread(self.convert(self.expr(u), c).expr, tuple(var.shape), t)  # type: ignore[arg-type]
                if active is not None:
                    new = E.fold(E.Where(active, new, var))
                nxt = E.Var(self.fresh(f"{var.name}_next"), t, dims=var.shape)
                self.emit(N.Let(nxt, new), loop)
                nexts.append(nxt)
            for var, nxt in zip(state, nexts, strict=True):
                self.emit(N.Assign(var, nxt), loop)
            again = self.truth(self.expr(loop.cond))
            if active is not None:
                self.emit(N.Assign(active, E.fold(E.Bin("&", active, again))), loop)
                self.emit(N.Assign(flag, any_lane(active)), loop)
            elif again.shape:
                raise NotLifted("a loop whose condition comes to differ between threads", loop)
            else:
                self.emit(N.Assign(flag, again), loop)
        finally:
            if active is not None:
                self.pred.pop()
            self.loop_depth -= 1
            self.scopes.pop()
            inner, self.body, self.lets = self.body, outer, saved_lets
            _forget(memo, known)  # (a loop inside it: lifted again where it is read again)
        self.emit(N.While(flag, inner, tuple([*state, *([active] if active is not None else [])])), loop)
        values = [Value(v, c) for v, c in zip(state, ctypes, strict=True)]
        memo[id(loop)] = values
        return values

    def builtin(self, e: A.Builtin) -> Value:
        if e.name in SHUFFLE_BUILTINS:
            return self.shuffle(e)
        if e.name == LANES_ACTIVE:  # (``__activemask()``): the threads the call's conditions leave on
            if self.shared_values is None:
                raise NotLifted("'__activemask()' outside a helper expanded at its call", e)
            return Value(E.fold(E.conj([*self.pred, *self.padding])), "bool")
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


def _forget(memo: dict[int, Any], known: set[int]) -> None:
    """``memo`` without what was added to it since it held ``known`` (the loops and values lifted
    inside a loop's body, whose variables are the body's)."""
    for key in [k for k in memo if k not in known]:
        del memo[key]


def _outside(parts: tuple[A.Expr, ...]) -> list[A.Expr]:
    """The values a loop's parts read from outside it (its helper's named values and arguments):
    the outermost shared ``Paren`` of each path, not inside a helper expanded in the loop."""
    out: list[A.Expr] = []
    stack: list[A.Node] = list(reversed(parts))
    while stack:
        n = stack.pop()
        if isinstance(n, A.Paren) and n.shared is not None:
            out.append(n)
            continue
        if isinstance(n, A.Paren) and n.written is not None:
            continue
        stack.extend(reversed(list(n.children())))
    return out


def _param_name(name: str) -> str:
    """A parameter's name in the helper: the C name unless Python or the module owns it."""
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in RESERVED or name.startswith("_"):
        return f"{name}_"
    return name
