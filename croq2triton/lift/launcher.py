"""The launcher of one ``__co__`` function in the host IR (tir/host.py): its parameters bound, its
host code between the kernels as host statements, and each kernel's launch.

Host code runs in Python (LANGUAGE.md 8 and 9.1): scalars, buffers, element reads and writes,
checks, prints, and ``if`` / ``while`` / ``foreach`` around launches (lift/hostflow.py).  A ``: device(cpu|gpu)``
region (9.5) is host code too: its parallels are launched on the kernels' device, in program
order.  Each top-level ``parallel`` is a kernel; how it is lowered and launched is the business of
the ``kernels`` callback (the contraction and tile-IR paths, emit/kernels.py), which
returns the host statements that launch it and may read the launcher's scope through
:meth:`LauncherLifting.host_scope` and :meth:`~.hostexpr.HostExprs.evaluate`.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from ..errors import CroqError, internal_errors
from ..frontend import ast as A
from ..frontend.describe import describe
from ..sema.ccast import NARROW, host_cast, wrap_int
from ..sema.checks import DEVICE_TARGETS
from ..sema.types import SUB_BYTE, TYPES, unlowerable_reason, wrap_sub_byte
from ..sema.writes import written_params
from ..tir import expr as E
from ..tir import host as H
from ..tir.pyexpr import host_ast
from .arith import sub_byte_bits
from .events import every_block_triggers
from .host import HostScalar, HostScope, HostTensor
from .hostcopy import HostCopies, copies_as_tensors
from .hostexpr import binary, const
from .hostflow import HostFlow, line_of
from .hostupdates import updated_scalars
from .hostvalues import Bounded, BoundedTuple, ITuple, Reshaped, Shape, Stream, Tensor, croq_of, ir_of
from .names import safe
from .returntypes import return_checks
from .terms import unparen

# lowers one top-level parallel (a kernel) named by the second argument: the statements that launch it
Kernels = Callable[[A.Parallel, str, "LauncherLifting"], list[H.Stmt]]

_INT_TYPES = ("int", "s32", "s64", "u32", "u64", "s16", "s8", "u8", "u16")
_FLOAT_TYPES = ("f64", "f32", "tf32", "f16", "bf16")


def lift_launcher(fn: A.CoFunction, src_name: str, kernels: Kernels) -> H.Launcher:
    """The launcher of ``fn``; ``kernels`` lowers each of its kernels."""
    return LauncherLifting(fn, src_name, kernels).lift()


class LauncherLifting(HostFlow, HostCopies):
    def __init__(self, fn: A.CoFunction, src_name: str, kernels: Kernels) -> None:
        super().__init__()
        self.fn = fn
        self.src_name = src_name
        self.kernels = kernels
        self.declared: dict[str, str] = {}  # launcher variable -> its Croqtile type
        self.body: list[H.Stmt] = []  # where statements go (a block's own list while lifting it)
        self.kernel_count = 0
        self.uid = 0
        self.copies: set[str] = set()  # names of copies made between launches (lift/hostcopy.py)
        self.counter_bounds: dict[str, E.Expr] = {}  # host loop counter -> its bound (lift/hostflow.py)
        self.global_events: set[str] = set()  # ``global event`` names declared here (lift/events.py)
        self.released: dict[str, int] = {}  # those earlier launches triggered, the times every block did
        self.written = written_params(fn)  # tensor parameters the function writes (sema/writes.py)
        self.updated = updated_scalars(fn)  # scalars updated in a loop or branch: variables (lift/hostupdates.py)
        self.copy_backs: list[H.CopyBack] = []
        self.returns = "none"  # none | tensor | int | float | bool (the op signature)
        self.in_flow = 0  # depth of host blocks (control flow, 'with', device regions)
        self.loops = 0  # depth of host loops
        self.nest_flags: list[str | None] = []  # per host loop, the flag a 'break' of a foreach nest sets

    # ------------------------------------------------------------ the launcher
    def lift(self) -> H.Launcher:
        fn = self.fn
        for p in fn.params:
            why = unlowerable_reason(p.type.elem) if p.type.kind in ("spanned", "elem") and p.type.elem else None
            if why and p.type.kind == "spanned":
                raise self.error(
                    f"cannot lower to Triton: {why}",
                    p,
                    "fp6/fp4 and f8_ue4m3 / f8_ue8m0 element types have no Triton equivalent",
                )
            if why:
                raise self.error(f"cannot lower to Triton: {why}", p)
        with internal_errors(f"the launcher of {fn.name}", fn.span):
            self.parameters()
        for s in fn.body:
            with internal_errors(f"the launcher of {fn.name}", s.span):
                self.stmt(s)
        if not fn.body or not isinstance(fn.body[-1], A.Return):
            self.body.extend(self.copy_backs)
            self.body.append(H.Return(None))
        names = self.param_names()
        tensors = tuple(names[i] for i, p in enumerate(fn.params) if p.type.kind == "spanned")
        line = fn.span.line if fn.span else 0
        return H.Launcher(
            fn.name,
            tuple(names),
            self.src_name,
            line,
            self.docstring(),
            tensors,
            tuple(self.body),
            self.signature(),
            self.places(),
        )

    def places(self) -> tuple[H.ParamAt, ...]:
        """Where each parameter is declared in the function's own file: the whole declaration when
        it is on one line, else its name (the declaration's last word)."""
        out: list[H.ParamAt] = []
        home = self.fn.span.file if self.fn.span else None
        for name, p in zip(self.param_names(), self.fn.params, strict=True):
            sp = p.span
            if sp is None or sp.line <= 0 or sp.file != home:
                continue
            if sp.end_line == sp.line:
                out.append(H.ParamAt(self.spelled(p.name or name), sp.line, sp.col, sp.end_col))
            elif p.name:
                spelled = self.spelled(p.name)
                out.append(H.ParamAt(spelled, sp.end_line, sp.end_col - len(spelled), sp.end_col))
        return tuple(out)

    def param_names(self) -> list[str]:
        return [safe(p.name) if p.name else f"_arg{i}" for i, p in enumerate(self.fn.params)]

    def spelled(self, name: str) -> str:
        """``name`` as the source spells it (emit/names.py renames a name Python takes): what
        messages say."""
        return self.fn.spelled.get(name, name)

    def docstring(self) -> str:
        fn = self.fn
        params = ", ".join(_type_text(p, fn.spelled) for p in fn.params)
        line = fn.span.line if fn.span else 0
        return f"{fn.name}({params}) -> {_ret_text(fn.ret)}; from {self.src_name}:{line}."

    def signature(self) -> H.OpSignature:
        names = self.param_names()
        params = tuple((name, _py_kind(p)) for name, p in zip(names, self.fn.params, strict=True))
        writes = tuple(n for n, p in zip(names, self.fn.params, strict=True) if p.name in self.written)
        return H.OpSignature(params, writes, self.returns)

    def host_scope(self) -> HostScope:
        """The tensors, scalars and known numbers of the launcher, as the tile-IR lifting sees them."""
        scope = HostScope(events=set(self.global_events), released=dict(self.released))
        for croq, v in self.names.items():
            if isinstance(v, Tensor):
                scope.tensors[croq] = HostTensor(croq, v.host, v.elem, tuple(_extent(d) for d in v.dims))
            elif isinstance(v, E.Var):
                scope.scalars[croq] = HostScalar(croq, v.name, self.type_of(v))
            elif isinstance(v, E.Const) and isinstance(v.value, bool):
                scope.bool_constants[croq] = v.value
            elif isinstance(v, E.Const) and isinstance(v.value, int):
                scope.constants[croq] = v.value
            elif isinstance(v, E.Const) and isinstance(v.value, float) and v.dtype in ("f32", "f64", "f16", "bf16"):
                scope.float_constants[croq] = (v.value, v.dtype)
            elif isinstance(v, Shape) and all(isinstance(d, (E.Const, E.Var)) for d in v.dims):
                scope.shapes[croq] = tuple(_extent(d) for d in v.dims)
            elif isinstance(v, ITuple) and all(isinstance(d, (E.Const, E.Var)) for d in v.items):
                scope.shapes[croq] = tuple(_extent(d) for d in v.items)  # an ituple as a shape
                scope.ituples.add(croq)
            if isinstance(v, Bounded):  # a name of a host-level 'with' that no 'foreach' iterates
                scope.bounded[croq] = (None, v.bound)
            elif isinstance(v, E.Var) and v.name in self.counter_bounds:  # a host-level loop's counter
                scope.bounded[croq] = (v, self.counter_bounds[v.name])
            parts: list[tuple[E.Expr | None, E.Expr]] | None = None
            if isinstance(v, BoundedTuple):
                parts = [(None, p.bound) for p in v.parts]
            elif isinstance(v, ITuple) and all(isinstance(d, E.Var) and d.name in self.counter_bounds for d in v.items):
                parts = [(d, self.counter_bounds[d.name]) for d in v.items if isinstance(d, E.Var)]
            if parts:
                keys = tuple(f"{croq}#{k}" for k in range(len(parts)))
                scope.bounded.update(zip(keys, parts, strict=True))
                scope.bounded_tuples[croq] = keys
            items = v.dims if isinstance(v, Shape) else v.items if isinstance(v, ITuple) else None
            if items is not None and all(isinstance(d, E.Expr) and E.is_int(d.dtype) for d in items):
                scope.shape_values[croq] = tuple(items)
                if isinstance(v, ITuple):  # ``o = {M / 2, N - 4}``: its parts, as the kernel reads them
                    scope.ituples.add(croq)
        return scope

    def type_of(self, v: E.Var) -> str:
        """The Croqtile type of a launcher variable."""
        return self.declared.get(v.name) or croq_of(v.dtype)

    # ------------------------------------------------------------ parameters
    def parameters(self) -> None:
        for name, p in zip(self.param_names(), self.fn.params, strict=True):
            line = p.span.line if p.span else 0
            if p.type.kind == "spanned":
                self.tensor_param(p, name)
            elif p.type.kind in ("int", "bool", "elem"):
                ty = "int" if p.type.kind == "int" else "bool" if p.type.kind == "bool" else p.type.elem or "f32"
                kind = _py_kind(p)
                assert kind in ("int", "float", "bool")
                self.body.append(H.BindScalar(name, self.spelled(p.name or name), kind, line=line))
                self.names[p.name or name] = self.variable(name, ty)
            elif p.type.kind == "stream":
                self.body.append(H.BindStream(name, line=line))
                self.names[name] = Stream(name)
            else:
                raise self.error(f"unsupported parameter type '{p.type.kind}'", p)

    def tensor_param(self, p: A.Param, name: str) -> None:
        assert p.type.shape is not None and p.type.elem is not None
        shape = p.type.shape
        if shape.dims is None and shape.rank is not None:
            # 'mdspan<R>': R extents taken from the tensor at launch, like '?' dims
            shape = A.ParamShape([A.Unknown("?", span=p.span) for _ in range(shape.rank)], shape.form, shape.rank)
        if shape.dims is None:
            raise self.error(
                "a parameter needs a shape, not only a rank, to be lowered", p, "write the dims: f32 [M, N] x"
            )
        croq = p.name or name
        keep = p.name in self.written and p.storage != "global"
        if keep:  # moved to the device when it lives elsewhere: its writes are copied back on return
            self.copy_backs.append(H.CopyBack(f"{name}_caller", name))
        checks: list[H.DimCheck] = []
        dims: list[E.Expr] = []
        for d, dim in enumerate(shape.dims):
            if isinstance(dim, A.Name):
                var = safe(dim.name)
                checks.append(H.BindDim(d, self.spelled(dim.name), var))
                self.names.setdefault(dim.name, self.variable(var, "int", nonneg=True))
                dims.append(self.variable(var, "int", nonneg=True))
            elif isinstance(dim, A.Unknown):
                checks.append(H.AnyDim(d, f"{name}_d{d}"))
                dims.append(self.variable(f"{name}_d{d}", "int"))
            else:
                val = self.evaluate(dim)
                if not isinstance(val, E.Const):
                    raise self.error("parameter dims must be constants or names", dim)
                checks.append(H.FixedDim(d, int(val.value)))
                dims.append(const(int(val.value)))
        dtype = ir_of(p.type.elem)
        assert dtype is not None  # lowerable (checked in lift())
        line = p.span.line if p.span else 0
        self.body.append(
            H.BindTensor(name, self.spelled(croq), dtype, tuple(checks), p.storage == "global", keep, line=line)
        )
        self.names[croq] = Tensor(croq, name, p.type.elem, dtype, tuple(dims), p.span)

    def variable(self, var: str, croq: str, nonneg: bool = False) -> E.Var:
        """A launcher variable of Croqtile type ``croq`` (``nonneg``: never negative)."""
        dtype = ir_of(croq)
        assert dtype is not None, croq  # parameters and declarations are checked first
        self.declared[var] = croq
        return E.Var(var, dtype, lo=0 if nonneg else None)

    # ------------------------------------------------------------ statements
    def stmt(self, s: A.Stmt) -> None:
        if isinstance(s, A.Parallel) and s.levels and s.levels[0].level == "device":
            self.device_region(s)
        elif isinstance(s, A.Parallel):
            self.kernel_count += 1
            top = copies_as_tensors(self.expand_shape_bounds(s), self.copies)
            name = f"{self.fn.name}_k{self.kernel_count - 1}"
            with internal_errors(f"the lowering of kernel {name}", top.span):
                self.body.extend(self.kernels(top, name, self))
            if not self.in_flow and not s.is_async and s.stream is None:  # complete before the next launch
                for event in self.global_events:
                    self.released[event] = self.released.get(event, 0) + every_block_triggers(s, event)
        elif isinstance(s, A.ScalarDecl):
            self.scalar_decl(s)
        elif isinstance(s, A.EventDecl) and s.storage == "global":
            # a flag the kernels trigger and wait on (lift/events.py): nothing to allocate for Triton
            self.global_events.update(d.name for d in s.items)
        elif isinstance(s, A.AssignStmt):
            for a in s.items:
                self.assign(a)
        elif isinstance(s, A.MdspanDecl):
            v = self.value(s.value)
            if isinstance(v, E.Expr):
                v = Shape((v,))
            if not isinstance(v, Shape):
                raise self.invalid(
                    f"the mdspan '{s.name}' must be initialised with a shape, not {describe(s.value)}", s.value
                )
            self.names[s.name] = v
        elif isinstance(s, A.ItupleDecl):
            v = self.value(s.value)
            if not isinstance(v, ITuple):
                raise self.invalid(
                    f"the ituple '{s.name}' must be initialised with {{...}}, not {describe(s.value)}", s.value
                )
            self.names[s.name] = v
        elif isinstance(s, A.SpannedDecl):
            self.buffer(s)
        elif isinstance(s, A.Return):
            self.return_(s)
        elif isinstance(s, A.CallStmt) and s.call.kind == "assert":
            cond = self.evaluate(s.call.args[0])
            msg = s.call.args[1]
            text = msg.value if isinstance(msg, A.StringLit) else "assertion failed"
            self.body.append(H.Assert(H.CScalar(cond), text, line=line_of(s)))
        elif isinstance(s, A.CallStmt) and s.call.kind in ("print", "println"):
            if not s.call.bang:  # host printf: the arguments one after another
                items = tuple(self.print_item(arg) for arg in s.call.args)
                self.body.append(H.Print(items, s.call.kind == "println", line=line_of(s)))
        elif isinstance(s, (A.Empty, A.PragmaStmt)):
            pass
        elif isinstance(s, A.Sync) and s.kind == "global":
            self.body.append(H.Sync(line=line_of(s)))
        elif isinstance(s, A.Block):
            for x in s.stmts:
                self.stmt(x)
        elif isinstance(s, A.If):
            self.if_(s)
        elif isinstance(s, A.While):
            self.while_(s)
        elif isinstance(s, A.Foreach):
            self.foreach(s)
        elif isinstance(s, (A.Break, A.Continue)):
            if not self.loops:
                raise self.error(f"{describe(s)} outside a loop", s)
            flag = self.nest_flags[-1] if self.nest_flags and isinstance(s, A.Break) else None
            if flag is not None:  # a break of a foreach over several names leaves every loop of it
                self.body.append(H.Assign(flag, H.CScalar(const(True)), line=line_of(s)))
            self.body.append(H.Break(line=line_of(s)) if isinstance(s, A.Break) else H.Continue(line=line_of(s)))
        elif isinstance(s, A.With):
            self.with_(s)
        elif isinstance(s, A.DmaStmt):
            self.host_dma(s)
        elif isinstance(s, A.DmaAny):
            self.host_any(s)
        elif isinstance(s, A.CallStmt) and s.call.kind not in ("assert", "print", "println"):
            raise self.error(host_call(s.call), s)
        elif isinstance(s, A.Swap):
            self.host_swap(s, {p.name for p in self.fn.params})
        elif isinstance(s, A.Cpp):
            raise self.error(
                "croq2triton does not translate '__cpp__(...)' between launches (C++ code in a Python launcher)",
                s,
                "the launcher is Python: do the work in the caller, or in a kernel",
            )
        elif isinstance(s, A.Wait):
            self.host_wait(s)
        else:
            raise self.error(
                f"cannot lower {describe(s)} at host level to Triton yet",
                s,
                "host code between kernels may only declare sizes, buffers and views",
            )

    def scalar_decl(self, s: A.ScalarDecl) -> None:
        for d in s.items:
            if d.init is None and d.fill is None and s.type not in (None, "int", "bool") and ir_of(s.type):
                # an element scalar declared without a value: uninitialised in Croqtile; zero here, as the
                # launcher's buffers (runtime/launch.py alloc)
                zero = const(0.0 if s.type in _FLOAT_TYPES else 0, ir_of(s.type))
                self.bind_scalar(d.name, zero, s.type, True, d)
                continue
            if d.init is None and d.fill is None:
                raise self.error(f"'{d.name}' needs an initial value at host level", d)
            init = d.init if d.init is not None else d.fill
            assert init is not None
            if isinstance(init, A.Call):
                raise self.error(host_call(init), init)
            v = self.evaluate(init)
            mutable = s.mutable or self.updated.declares(d.span or s.span)
            self.bind_scalar(d.name, v, s.type or self.croq_type(v), mutable, d)

    def croq_type(self, v: E.Expr) -> str:
        return self.type_of(v) if isinstance(v, E.Var) else croq_of(v.dtype)

    def bind_scalar(self, name: str, v: E.Expr, ty: str, mutable: bool, node: A.Node) -> None:
        """A host scalar: a constant stays one (unless it is ``mutable``), else a launcher variable."""
        target = ir_of(ty)
        if isinstance(v, E.Const) and not mutable:
            value = v.value
            if ty in _INT_TYPES and isinstance(value, float):
                value = int(value)
            if ty in SUB_BYTE and not isinstance(value, bool):  # its low bits
                value = wrap_sub_byte(int(value), ty)
            elif target in NARROW and not isinstance(value, bool):  # C's implicit conversion: rounded or wrapped
                value = host_cast(value, target)
            elif target in _WIDE and isinstance(value, int) and not isinstance(value, bool):
                value = wrap_int(value, _WIDE[target], True)  # a folded constant past the type's range wraps
            self.names[name] = const(value, target)
            return
        if target is None:
            raise self.error(f"cannot lower to Triton: {unlowerable_reason(ty)}", node)
        var = safe(name)
        new = self.variable(var, ty)
        self.body.append(H.Let(var, H.CScalar(to_sub_byte(v, ty), target), line=line_of(node)))  # C's value
        self.names[name] = new

    def assign(self, a: A.Assign) -> None:
        if isinstance(a.target, A.At):  # element by element, as upstream's host code
            t, index = self.element(a.target)
            v = self.evaluate(a.value)
            line = line_of(a)
            if a.op != "=":
                v = binary(a.op, H.ElemGet(t.name, t.host, index, t.dtype, line), v, scalar=True)
            v = to_sub_byte(v, t.elem)
            index = tuple(H.CScalar(i, store=True) for i in index)
            self.body.append(H.ElemSet(t.name, t.host, index, H.CScalar(v, t.dtype, store=True), line=line))
            return
        if not isinstance(a.target, A.Name):
            raise self.error(f"cannot lower an assignment to {describe(a.target)} at host level to Triton", a)
        name = a.target.name
        old = self.names.get(name)
        if a.op != "=":
            if not isinstance(old, E.Var):
                raise self.invalid(f"'{a.op}=' updates a scalar, and '{name}' is not one", a)
            updated = to_sub_byte(binary(a.op, old, self.evaluate(a.value), scalar=True), self.type_of(old))
            self.body.append(H.Assign(old.name, H.CScalar(updated, old.type), line=line_of(a)))
            self.names[name] = E.Var(old.name, old.type)
            return
        if isinstance(a.value, A.Call):
            raise self.error(host_call(a.value), a.value)
        value = unparen(a.value)
        if isinstance(value, A.View) and any(op.kind != "span_as" for op in value.ops):
            # a window of a tensor bound to a name (``xl = x.subspan(M, 16).at(0, 1);``): the
            # launcher makes it, a view of the same memory the kernels read and write by its strides
            t = self.window(value)
            self.names[name] = Tensor(name, t.host, t.elem, t.dtype, t.dims, a.span)
            return
        v = self.value(a.value)
        if isinstance(v, E.Expr) and isinstance(old, E.Var) and (self.in_flow or id(a.target) in self.updated.targets):
            # of an enclosing block, or of a variable a loop or branch after it updates (a constant stays a variable)
            self.body.append(
                H.Assign(old.name, H.CScalar(to_sub_byte(v, self.type_of(old)), old.type), line=line_of(a))
            )
        elif isinstance(v, E.Expr):  # a scalar assigned again keeps its type (a constant's too)
            ty = self.croq_type(old if isinstance(old, (E.Var, E.Const)) else v)
            self.bind_scalar(name, v, ty, old is None and self.updated.declares(a.target.span), a)
        elif isinstance(v, Reshaped):  # a view the kernels may read and write: the launcher makes it
            self.uid += 1
            var = f"_{safe(name)}{self.uid}"
            self.body.append(H.SpanAs(var, v.tensor.name, v.tensor.host, v.dims, line=line_of(a)))
            t = v.tensor
            self.names[name] = Tensor(name, var, t.elem, t.dtype, self.named_extents(v.dims, var, a), a.span)
        else:
            self.names[name] = v

    def buffer(self, s: A.SpannedDecl) -> None:
        if s.storage in ("shared", "local"):
            raise self.error(f"'{s.storage}' buffers must be declared inside 'parallel'", s)
        why = unlowerable_reason(s.elem)
        if why:
            raise self.error(f"cannot lower to Triton: {why}", s)
        if s.shape is None:
            raise self.error(f"cannot lower the '[auto]' buffer '{s.items[0].name}' at host level to Triton yet", s)
        dims = self.shape(s.shape)
        dtype = ir_of(s.elem)
        assert dtype is not None  # lowerable
        for d in s.items:
            if d.dims and not _only_indexed(self.fn, d.name):
                raise self.error(
                    f"cannot lower the array of global buffers '{d.name}[...]' used other than as"
                    f" '{d.name}[i]' at host level to Triton yet",
                    d,
                )
            # an array of buffers (``f16 [M, N] bufs[3]``): one tensor with the array's extents
            # first; ``bufs[i]`` in a kernel is its part at ``i`` (lift/buffers.py ``place``)
            full = (*(self.evaluate(x) for x in d.dims), *dims)
            fill = self.evaluate(d.fill) if d.fill is not None else None
            self.body.append(H.Alloc(d.name, full, dtype, fill, line=line_of(d)))
            extents = self.named_extents(full, f"_{safe(d.name)}", d)
            self.names[d.name] = Tensor(d.name, d.name, s.elem, dtype, extents, d.span)

    def named_extents(self, dims: tuple[E.Expr, ...], base: str, node: A.Node) -> tuple[E.Expr, ...]:
        """The extents of a tensor the launcher makes (a view, a buffer), each a constant or a
        launcher variable: kernels take a tensor's extents as arguments, so one computed from others
        (``x.span_as([M * 8])``) is computed into ``<base>_extent<axis>`` where the tensor is made
        (a later host statement may read it too: a view of this view in a host loop)."""
        out: list[E.Expr] = []
        for axis, d in enumerate(dims):
            if isinstance(d, E.Var) or isinstance(_extent(d), int):
                out.append(d)
                continue
            var = f"{base}_extent{axis}"
            self.body.append(H.Let(var, d, line=line_of(node)))
            out.append(self.variable(var, "int", nonneg=E.nonneg(d)))
        return tuple(out)

    def return_(self, s: A.Return) -> None:
        self.body.extend(self.copy_backs)
        if s.value is None:
            self.body.append(H.Return(None, line=line_of(s)))
            return
        v = self.value(s.value)
        if isinstance(v, (Tensor, Reshaped)):  # against the declared type (lift/returntypes.py)
            t = v.tensor if isinstance(v, Reshaped) else v
            self.body.extend(return_checks(self.fn, s.value, t.elem, v.dims, self.evaluate, line_of(s)))
        if isinstance(v, Tensor):
            host = v.host
            value = s.value.expr if isinstance(s.value, A.Paren) else s.value
            if isinstance(value, A.Name) and value.name in {p.name for p in self.fn.params}:
                self.uid += 1  # ``return x`` of a parameter returns a copy of it (LANGUAGE.md 8)
                host = f"_{safe(value.name)}_copy{self.uid}"
                self.body.append(H.HostCopy(host, None, v.host, v.name, line=line_of(s)))
            self.body.append(H.Return(H.TensorRef(host), line=line_of(s)))
            self.returns = "tensor"
        elif isinstance(v, E.Expr):
            self.body.append(H.Return(H.CScalar(v), line=line_of(s)))
            self.returns = "bool" if v.dtype == "i1" else "float" if not E.is_int(v.dtype) else "int"
        elif isinstance(v, Reshaped):
            self.body.append(H.Return(H.Reshape(v.tensor.host, v.dims), line=line_of(s)))
            self.returns = "tensor"
        else:
            raise self.error(f"cannot lower the return of {describe(s.value)} to Triton", s.value)

    # ------------------------------------------------------------ kernels and device regions
    def expand_shape_bounds(self, top: A.Parallel) -> A.Parallel:
        """``parallel {x, y} by [sh]`` with ``sh`` a shape (an mdspan, an ituple, ``t.span``):
        one bound per extent, ``sh(0), sh(1)``, as the kernel lowerings expect."""
        new: A.Parallel | None = None
        for k, lvl in enumerate(top.levels):
            bounds: list[A.Expr] = []
            for b in lvl.bound:
                try:
                    v = self.value(b)
                except CroqError:
                    v = None  # not a host value (computed inside the kernel): left as written
                n = len(v.dims) if isinstance(v, Shape) else len(v.items) if isinstance(v, ITuple) else 1
                if n == 1:
                    bounds.append(b)
                    continue
                bounds.extend(A.GetIth(b, A.IntLit(i, str(i), span=b.span), span=b.span) for i in range(n))
            if len(bounds) != len(lvl.bound):
                if new is None:
                    new = copy.copy(top)
                    new.levels = list(top.levels)
                new.levels[k] = copy.copy(lvl)
                new.levels[k].bound = bounds
        return new or top

    def device_region(self, s: A.Parallel) -> None:
        """``parallel[.async] by 1 : device(cpu|gpu) { ... }`` (heterogeneous placement): its body
        is host code - inner parallels become launches on the kernels' device, loops and element
        accesses become Python - and runs in program order (a valid schedule of the source's
        asynchronous regions, which ``sync.global`` joins). LANGUAGE.md 9.5."""
        lvl = s.levels[0]
        b = self.evaluate(lvl.bound[0]) if len(lvl.bound) == 1 else None
        if len(s.levels) != 1 or lvl.vars or not (isinstance(b, E.Const) and b.value == 1):
            raise self.error(
                "a ': device' level is lowered only as 'parallel by 1 : device(T) { ... }'",
                lvl,
                "one instance per device region; put data parallelism in the parallels inside it",
            )
        if lvl.level_arg is not None and lvl.level_arg not in DEVICE_TARGETS:
            raise self.error(f"unknown device target '{lvl.level_arg}'", lvl)
        if lvl.name:
            self.names[lvl.name] = const(0)
        self.body.append(
            H.Comment(
                f"': device({lvl.level_arg})' region (line {line_of(s)}): lowered as host code;"
                " its parallels run on the kernels' device"
            )
        )
        self.body.extend(self.scoped(s.body))


def _extent(d: E.Expr) -> str | int:
    """A tensor extent as the tile-IR lifting takes it: a literal, or the launcher's spelling."""
    if isinstance(d, E.Const) and isinstance(d.value, int) and d.value >= 0:
        return int(d.value)
    return d.name if isinstance(d, E.Var) else _spelled(d)


def _spelled(d: E.Expr) -> str:
    return ast.unparse(host_ast(d))


def _py_kind(p: A.Param) -> str:
    """A parameter as the launcher takes it: 'tensor', or the Python type of a scalar ('int',
    'float', 'bool'); other kinds (stream) by name."""
    k = p.type.kind
    if k == "spanned":
        return "tensor"
    if k == "elem":
        return "float" if TYPES[p.type.elem or "f32"].is_float else "int"
    return k


def _type_text(p: A.Param, spelled: dict[str, str]) -> str:
    """``p`` as the source declares it (its names as the source spells them)."""
    t = p.type
    if t.kind == "spanned":
        dims = ", ".join(_dim_text(d, spelled) for d in (t.shape.dims or []) if t.shape) if t.shape else ""
        s = f"{t.elem} [{dims}]"
    elif t.kind == "elem":
        s = t.elem or ""
    else:
        s = t.kind
    return f"{'global ' if p.storage else ''}{s} {spelled.get(p.name, p.name) if p.name else ''}".strip()


def _dim_text(d: A.Expr, spelled: dict[str, str]) -> str:
    if isinstance(d, A.Name):
        return spelled.get(d.name, d.name)
    if isinstance(d, (A.IntLit, A.Unknown)):
        return d.text
    return "?"


def _ret_text(t: A.TypeRef) -> str:
    if t.kind == "spanned":
        return f"{t.elem} tensor"
    return t.elem or t.kind


def _only_indexed(fn: A.CoFunction, name: str) -> bool:
    """Is every use of ``name`` in ``fn`` an element of it (``name[i]``), the array itself never?"""
    inside = {id(n.base) for n in fn.walk() if isinstance(n, A.Index)}
    return not any(isinstance(n, A.Name) and n.name == name and id(n) not in inside for n in fn.walk())


def host_call(c: A.Call) -> str:
    """Why a call between launches does not translate: the launcher is Python."""
    kind = "a __device__ function" if c.device is not None else "a C++ function"
    if c.kind == "intrinsic":
        kind = "a C++ library function"
    return f"croq2triton does not translate the call of '{c.name}' between launches ({kind}: the launcher is Python)"


_WIDE = {"i32": 32, "i64": 64}  # the integer types sema/ccast.py leaves to Python's ints


def to_sub_byte(v: E.Expr, ty: str) -> E.Expr:
    """``v`` as C converts it to ``ty``, where that is a sub-byte type (its low bits; the conversion
    to their byte, which the caller adds, keeps them); any other type's conversion is the caller's."""
    if ty not in SUB_BYTE:
        return v
    if isinstance(v, E.Const) and not isinstance(v.value, float):
        return E.Const(wrap_sub_byte(int(v.value), ty), "i32")
    return sub_byte_bits(H.CScalar(v, "i32"), ty)
