"""Lowering of one ``__co__`` function: a torch launcher plus one Triton kernel per top-level ``parallel``.

The launcher (host code) binds symbolic sizes, checks tensors, evaluates
host-level statements, allocates buffers and launches kernels.  Kernels are
produced by :class:`~.kernel.KernelLowering`.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..emit.launcher import statement_lines
from ..errors import CroqError, CroqInternalError, CroqLoweringError, CroqSemanticError, Span
from ..frontend import ast as A
from ..lift.names import safe
from ..sema.checks import DEVICE_TARGETS
from ..sema.types import TYPES, unlowerable_reason
from ..sema.writes import written_params
from ..tir.launch import launch_of
from . import coarsen as coarsen_mod
from . import exprs as X
from .coarsen import WGMMA_ROWS, coarsen
from .fragarrays import expand_frag_arrays
from .ksplit import ksplit
from .retile import AUTO_TILES, Retiled, retile
from .splitscale import split_scales
from .values import Bounded, BoundedTuple, Shape, Tensor, Tuple_, Val, View, const
from .viewops import span_as_view, whole_view
from .writer import Writer


@contextmanager
def internal_errors(path: str, kernel: str, top: A.Parallel) -> Iterator[None]:
    """Inside lift / schedule / emit an exception that is neither a user's error nor "not covered"
    is a bug: reported as a located internal error (CROQ2TRITON_DEBUG=1 re-raises it)."""
    from ..lift.notlifted import NotLifted
    from ..schedule.gemm import NotTiled

    try:
        yield
    except (CroqError, NotLifted, NotTiled):
        raise
    except Exception as e:
        if os.environ.get("CROQ2TRITON_DEBUG"):
            raise
        raise CroqInternalError(f"{type(e).__name__} in {path} of kernel {kernel}: {e}", top.span) from e


class HostScope:
    def __init__(self) -> None:
        self.names: dict[str, Any] = {}


class FunctionLowering:
    """Builds the launcher of one function; kernels are appended to ``self.kernel_sources``."""

    def __init__(self, fn: A.CoFunction, src_name: str, schedule: str = "source") -> None:
        self.fn = fn
        self.src_name = src_name
        self.schedule = schedule
        self.w = Writer(src_name, indent=1)
        self.names: dict[str, Any] = {}
        self.kernel_sources: list[str] = []
        self.ir_kernels: list[Any] = []  # tir.Kernel of the kernels lifted into the tile IR
        self.legacy_kernels: list[str] = []  # names of kernels this older lowering wrote
        self.tensor_params: list[str] = []
        self.kernel_count = 0
        self.uid = 0
        self.allocated: list[str] = []
        self.warnings: list[Any] = []
        self.written = written_params(fn)  # tensor parameters the function writes (sema/writes.py)
        self.copy_backs: list[tuple[str, str]] = []  # (caller's tensor, device tensor)
        self.returns = "none"  # none | tensor | int | float | bool (op_signature)
        self.in_flow = 0  # depth of host-level control flow (host_flow)
        self.host_loops = 0

    # ------------------------------------------------------------ helpers
    def fresh(self, base: str) -> str:
        self.uid += 1
        return f"_{base}{self.uid}"

    def error(self, msg: str, node: A.Node | None, hint: str | None = None) -> CroqLoweringError:
        return CroqLoweringError(msg, node.span if node is not None else None, hint)

    # ------------------------------------------------------------ entry
    def lower(self) -> str:
        fn = self.fn
        for p in fn.params:
            if p.type.kind == "spanned" and p.type.elem:
                why = unlowerable_reason(p.type.elem)
                if why:
                    raise self.error(
                        f"cannot lower to Triton: {why}", p, "fp6/fp4 and sub-byte types have no Triton equivalent"
                    )
            if p.type.kind == "elem" and p.type.elem and unlowerable_reason(p.type.elem):
                raise self.error(f"cannot lower to Triton: {unlowerable_reason(p.type.elem)}", p)
        self.prologue()
        for s in fn.body:
            self.host_stmt(s)
        if not fn.body or not isinstance(fn.body[-1], A.Return):
            self.write_back()
            self.w.line("return None")
        params = ", ".join(self.param_names()) + (", " if fn.params else "") + "*, _launch=None"
        doc = self.docstring()
        head = [f"def {fn.name}({params}):", f'    """{doc}"""']
        return "\n\n\n".join([*self.kernel_sources, "\n".join(head) + "\n" + self.w.text()])

    def param_names(self) -> list[str]:
        out = []
        for i, p in enumerate(self.fn.params):
            out.append(safe(p.name) if p.name else f"_arg{i}")
        return out

    def docstring(self) -> str:
        parts = []
        for p in self.fn.params:
            parts.append(_type_text(p))
        ret = _ret_text(self.fn.ret)
        return f"{self.fn.name}({', '.join(parts)}) -> {ret}; from {self.src_name}:{self.fn.span.line if self.fn.span else 0}."

    # ------------------------------------------------------------ parameters
    def prologue(self) -> None:
        w = self.w
        fn = self.fn
        w.line(f"_F = _rt.Fn({fn.name!r}, {self.src_name!r}, {fn.span.line if fn.span else 0})")
        tensors = [(i, p) for i, p in enumerate(fn.params) if p.type.kind == "spanned"]
        names = self.param_names()
        w.line("_launch = _launch or _rt.launch")
        w.line(f"_dev = _rt.pick_device(_F, {{{', '.join(f'{names[i]!r}: {names[i]}' for i, _ in tensors)}}}, _launch)")
        w.line("_dims = {}")
        for i, p in enumerate(fn.params):
            name = names[i]
            if p.type.kind == "spanned":
                self.tensor_param(p, name, i)
            elif p.type.kind in ("int", "bool", "elem"):
                ty = "int" if p.type.kind == "int" else "bool" if p.type.kind == "bool" else p.type.elem or "f32"
                w.line(f"{name} = _rt.scalar_arg(_F, {p.name!r}, {name}, {_py_kind(p)})", p.span)
                self.names[p.name or name] = Val(name, ty, None, frozenset(), name)
            elif p.type.kind == "stream":
                w.line(f"_rt.stream_arg(_F, {name!r}, {name})", p.span)
                self.names[name] = ("stream", name)
            else:
                raise self.error(f"unsupported parameter type '{p.type.kind}'", p)

    def tensor_param(self, p: A.Param, name: str, index: int) -> None:
        assert p.type.shape is not None and p.type.elem is not None
        shape = p.type.shape
        if shape.dims is None and shape.rank is not None:
            # 'mdspan<R>': R extents taken from the tensor at launch, like '?' dims
            shape = A.ParamShape([A.Unknown("?", span=p.span) for _ in range(shape.rank)], shape.form, shape.rank)
        if shape.dims is None:
            raise self.error(
                "a parameter needs a shape, not only a rank, to be lowered", p, "write the dims: f32 [M, N] x"
            )
        elem = p.type.elem
        rank = len(shape.dims)
        w = self.w
        if p.name in self.written and p.storage != "global":
            # moved to the device when it lives elsewhere: its writes are copied back on return
            w.line(f"{name}_caller = {name}", p.span)
            self.copy_backs.append((f"{name}_caller", name))
        w.line(
            f"{name} = _rt.tensor_arg(_F, {p.name or name!r}, {name}, {X.torch_dtype(elem)}, {rank}, _dev, "
            f"is_global={p.storage == 'global'})",
            p.span,
        )
        host_dims: list[str] = []
        dims: list[Val] = []
        for d, dim in enumerate(shape.dims):
            if isinstance(dim, A.Name):
                sym = dim.name
                var = safe(sym)
                w.line(f"{var} = _rt.bind_dim(_F, _dims, {sym!r}, {p.name or name!r}, {name}, {d})")
                self.names.setdefault(sym, Val(var, "int", None, frozenset(), var, (), True))
                host_dims.append(var)
                dims.append(Val(var, "int", None, frozenset(), var, (), True))
            elif isinstance(dim, A.Unknown):
                v = f"{name}_d{d}"
                w.line(f"{v} = _rt.any_dim(_F, {name!r}, {name}, {d})")
                host_dims.append(v)
                dims.append(Val(v, "int", None, frozenset(), v))
            else:
                val = self.host_eval(dim)
                if not val.is_const:
                    raise self.error("parameter dims must be constants or names", dim)
                w.line(f"_rt.fixed_dim(_F, {name!r}, {name}, {d}, {val.const})")
                host_dims.append(str(val.const))
                dims.append(const(val.const))
        t = Tensor(
            p.name or name, elem, dims, host_dims, f"{name}_ptr", [f"{name}_s{d}" for d in range(rank)], name, p.span
        )
        self.names[p.name or name] = t
        self.tensor_params.append(name)

    def lower_retiled(self, rt: Retiled, orig: A.Parallel, name: str) -> bool:
        """Emit the re-tiled kernel (lower/retile.py); where its windows use ``chunkat`` it is only
        the same computation when the new tiles divide the extents, so the launcher picks it then
        and the source-tiled kernel otherwise."""
        from .kernel import KernelLowering

        conds = []
        for ext, tile in rt.guards:
            v = self.names.get(ext)
            if not isinstance(v, Val) or not v.code:
                return False
            conds.append(f"{v.code} % {tile} == 0")
        kl = KernelLowering(self, rt.top, name + ("_retiled" if conds else ""))
        kl.retiled = rt.old
        kl.retile_guard = " and ".join(conds)
        launch_lines = self.kernel_of(kl)
        if not conds:
            self.write_launch(launch_lines)
            return True
        plain = self.kernel_of(KernelLowering(self, orig, name))
        with self.w.block(f"if {kl.retile_guard}:  # chunkat tiles equal the re-tiled blocks"):
            self.write_launch(launch_lines)
        with self.w.block("else:"):
            self.write_launch(plain)
        return True

    def host_scope(self) -> Any:
        """The tensors, scalars and known integers of the launcher, as the tile-IR lifting sees them."""
        from ..lift.host import HostScalar, HostScope, HostTensor

        scope = HostScope()
        for croq, v in self.names.items():
            if isinstance(v, Tensor):
                extents = tuple(int(d) if d.isdigit() else d for d in v.host_dims)
                scope.tensors[croq] = HostTensor(croq, v.host_name, v.elem, extents)
            elif isinstance(v, Val) and v.host is not None and v.host.isidentifier() and _scalar_type(v.ty):
                scope.scalars[croq] = HostScalar(croq, v.host, v.ty or "int")
            elif isinstance(v, Val) and isinstance(v.const, int) and not isinstance(v.const, bool):
                scope.constants[croq] = v.const
            elif isinstance(v, Val) and isinstance(v.const, float) and v.ty in ("f32", "f64", "f16", "bf16"):
                scope.float_constants[croq] = (v.const, v.ty)
        return scope

    def lift_contraction(self, top: A.Parallel, name: str) -> bool | str:
        """A kernel that computes a GEMM (lift/contraction.py proves it), tiled under the schedule's
        policy (schedule/policy.py, schedule/gemm.py): True; False where the proof or the tiling does
        not cover it (the kernel is lowered as written then); the launcher's condition when the proof
        holds only for sizes that the tiles divide (``chunkat`` on ``cdiv`` grids): the launch is
        written under ``if`` it, and the caller lowers the kernel as written for the ``else``."""
        from ..emit.triton import emit_kernel
        from ..lift.contraction import analyse
        from ..lift.notlifted import NotLifted
        from ..schedule import policy
        from ..schedule.gemm import NotTiled, tile_contraction

        if os.environ.get("CROQ2TRITON_NO_CONTRACTION"):
            return False
        try:
            with internal_errors("the contraction path", name, top):
                scope = self.host_scope()
                prelude = [x for x in self.fn.body if x.span and top.span and x.span.line < top.span.line]
                c = analyse(top, scope, prelude)
                schedule = policy.auto(c) if self.schedule == "auto" else policy.source(c)
                tiled = tile_contraction(c, schedule, scope, name, top.span.line if top.span else 0)
                source = emit_kernel(tiled.kernel, self.src_name)
        except (NotLifted, NotTiled) as e:
            if os.environ.get("CROQ2TRITON_EXPLAIN"):  # why a kernel is not tiled as a GEMM
                span = getattr(e, "span", None) or top.span
                line = span.line if span else 0
                print(f"{self.src_name}:{line}: note: {name} is not tiled as a contraction: {e}", file=sys.stderr)
            return False
        self.kernel_sources.append(source.rstrip("\n"))
        self.ir_kernels.append(tiled.kernel)
        launch = launch_of(tiled.kernel, top.span.line if top.span else 0)
        if not c.assumptions:
            for ln in statement_lines(launch):
                self.w.line(ln, top.span)
            return True
        from ..tir.pyexpr import to_source

        cond = " and ".join(f"{to_source(x, 'host')} % {d} == 0" for x, d in c.assumptions)
        with self.w.block(f"if {cond}:  # the chunkat tiles are exact: the tiled contraction", top.span):
            for ln in statement_lines(launch):
                self.w.line(ln, top.span)
        return cond

    def lift_new_path(self, top: A.Parallel, name: str) -> bool:
        """The tile-IR path (lift -> tir -> emit) for the kernel families it covers; False where
        the lifting does not cover ``top`` yet (this older lowering handles it then)."""
        from ..emit.triton import emit_kernel
        from ..lift.kernel import lift_kernel
        from ..lift.notlifted import NotLifted
        from ..schedule.interior import interior_split

        try:
            with internal_errors("the tile-IR path", name, top):
                lifted = lift_kernel(top, name, self.host_scope(), self.src_name)
                kernel = lifted.kernel
                if self.schedule == "auto":
                    kernel = self.widened(kernel, top) or kernel
                kernel = interior_split(kernel)  # both schedules: measured faster (schedule/interior.py)
                launch = launch_of(kernel, top.span.line if top.span else 0)
                source = emit_kernel(kernel, self.src_name)
        except NotLifted as e:
            if os.environ.get("CROQ2TRITON_EXPLAIN"):  # why a kernel stays on the older lowering
                span = e.span or top.span
                line = span.line if span else 0
                print(f"{self.src_name}:{line}: note: {name} is not lifted to the tile IR: {e}", file=sys.stderr)
            return False
        self.kernel_sources.append(source.rstrip("\n"))
        self.ir_kernels.append(kernel)
        self.warnings.extend(lifted.warnings)
        for ln in statement_lines(launch):
            self.w.line(ln, top.span)
        return True

    def widened(self, kernel: Any, top: A.Parallel) -> Any:
        """``kernel`` under the ``auto`` policy's widening (schedule/widen.py), or None where the
        policy keeps it or the proof does not hold (``CROQ2TRITON_EXPLAIN=1`` says why)."""
        from ..schedule import policy
        from ..schedule.widen import NotWidened, analyse, widen

        try:
            schedule = policy.tile_auto(kernel, analyse(kernel))
            return widen(kernel, schedule) if schedule is not None else None
        except NotWidened as e:
            if os.environ.get("CROQ2TRITON_EXPLAIN"):
                line = top.span.line if top.span else 0
                print(f"{self.src_name}:{line}: note: {kernel.name} is not widened: {e}", file=sys.stderr)
            return None

    def kernel_of(self, kl: Any) -> list[tuple[str, Any]]:
        """Lower one kernel: its source joins the module, its launch lines are returned."""
        src, launch_lines = kl.lower()
        self.kernel_sources.append(src)
        self.legacy_kernels.append(kl.name)
        return launch_lines

    def write_launch(self, lines: list[tuple[str, Any]]) -> None:
        for ln, sp in lines:
            self.w.line(ln, sp)

    # ------------------------------------------------------------ host statements
    def lower_parallel(self, s: A.Parallel, name: str) -> None:
        """A kernel the contraction path did not take: the older rewrites, the elementwise lifting,
        or the older lowering."""
        from .kernel import KernelLowering

        factors = (1, 1)
        if any(isinstance(n, A.MmaOp) for n in s.walk()) and self.lift_new_path(s, name):
            return  # MMA as written (lift/mma.py) before the older rewrites of MMA kernels
        split = ksplit(s) if self.schedule == "auto" else None
        if split is not None:
            s = split[0]  # staged K tiles in 64-wide steps (lower/ksplit.py)
        if self.schedule == "auto":
            targets = coarsen_mod.auto_thread_tiles(s, split[1][1] if split is not None else None)
        else:
            targets = (WGMMA_ROWS, 1)
        co = coarsen(self.fn, s, targets)
        rt = None
        if co is not None:
            s, factors = co
        elif self.schedule == "auto":
            rt = retile(self.fn, s, AUTO_TILES)
        if rt is not None and self.lower_retiled(rt, s, name):
            return
        if co is None and split is None and self.lift_new_path(s, name):
            return
        kl = KernelLowering(self, s, name)
        kl.coarsened = factors
        kl.k_split = split[1] if split is not None and split[1][0] > split[1][1] else None
        self.write_launch(self.kernel_of(kl))

    def host_stmt(self, s: A.Stmt) -> None:
        w = self.w
        if isinstance(s, A.Parallel) and s.levels and s.levels[0].level == "device":
            self.device_region(s)
            return
        if isinstance(s, A.Parallel):
            self.kernel_count += 1
            s = self.expand_shape_bounds(s)
            s, checks = expand_frag_arrays(self.fn, s)
            s = split_scales(s)
            for c in checks:  # run-time indices of fragment arrays (lower/fragarrays.py)
                ix = self.host_eval(c.index)
                line = c.index.span.line if c.index.span else 0
                msg = f"an index of the fragment array '{c.array}' is outside [0, {c.extent})"
                w.line(f"_rt.host_assert(_F, 0 <= {ix.code} < {c.extent}, {msg!r}, {line})", c.index.span)
            name = f"{self.fn.name}_k{self.kernel_count - 1}"
            tiled = self.lift_contraction(s, name)
            if tiled is True:
                return
            if isinstance(tiled, str):  # tiled under a condition on the sizes: the kernel as written otherwise
                with w.block("else:", s.span):
                    self.lower_parallel(s, f"{name}_general")
                return
            self.lower_parallel(s, name)
            return
        if isinstance(s, A.ScalarDecl):
            for d in s.items:
                if d.init is None and d.fill is None:
                    raise self.error(f"'{d.name}' needs an initial value at host level", d)
                init = d.init if d.init is not None else d.fill
                if isinstance(init, A.Call):
                    raise self.error("calls cannot be lowered to Triton", init)
                v = self.host_eval(init)  # type: ignore[arg-type]
                ty = s.type or v.ty
                self.bind_host_scalar(d.name, v, ty, s.mutable, d)
            return
        if isinstance(s, A.AssignStmt):
            for a in s.items:
                self.host_assign(a)
            return
        if isinstance(s, A.MdspanDecl):
            v = self.host_value(s.value)
            if isinstance(v, Val):
                v = Shape([v])
            if not isinstance(v, Shape):
                raise self.error("an mdspan must be initialised with a shape", s.value)
            self.names[s.name] = v
            return
        if isinstance(s, A.ItupleDecl):
            v = self.host_value(s.value)
            if not isinstance(v, Tuple_):
                raise self.error("an ituple must be initialised with {...}", s.value)
            self.names[s.name] = v
            return
        if isinstance(s, A.SpannedDecl):
            self.host_buffer(s)
            return
        if isinstance(s, A.Return):
            self.host_return(s)
            return
        if isinstance(s, A.CallStmt) and s.call.kind == "assert":
            cond = self.host_eval(s.call.args[0])
            msg = s.call.args[1]
            text = msg.value if isinstance(msg, A.StringLit) else "assertion failed"
            w.line(f"_rt.host_assert(_F, {cond.code}, {text!r}, {s.span.line if s.span else 0})", s.span)
            return
        if isinstance(s, A.CallStmt) and s.call.kind in ("print", "println") and s.call.bang:
            return
        if isinstance(s, A.CallStmt) and s.call.kind in ("print", "println"):
            # host printf: the arguments one after another (an index tuple as its items)
            parts: list[str] = []
            for arg in s.call.args:
                if isinstance(arg, A.StringLit):
                    parts.append(repr(arg.value))
                    continue
                v = self.host_value(arg)
                if isinstance(v, BoundedTuple):
                    v = Tuple_([p.value for p in v.parts])
                if isinstance(v, Tuple_):
                    parts.append("'{' + ', '.join(str(x) for x in (" + ", ".join(x.code for x in v.items) + ",)) + '}'")
                elif isinstance(v, (Val, Bounded)):
                    parts.append((v.value if isinstance(v, Bounded) else v).code)
                else:
                    raise self.error("host-level print takes strings and scalar values", arg)
            end = "'\\n'" if s.call.kind == "println" else "''"
            w.line(f"print({', '.join(parts)}, sep='', end={end})", s.span)
            return
        if isinstance(s, (A.Empty, A.PragmaStmt)):
            return
        if isinstance(s, A.Sync) and s.kind == "global":
            w.line("_rt.sync(_dev)", s.span)
            return
        if isinstance(s, A.Block):
            for x in s.stmts:
                self.host_stmt(x)
            return
        if isinstance(s, (A.If, A.While, A.Foreach, A.Break, A.Continue)):
            self.host_flow(s)
            return
        if isinstance(s, A.With):
            # bounded index names (value 0 until a 'foreach' over them), seen only in the body
            saved = dict(self.names)
            for wi in s.withins:
                bounds = self.shape_of_list([wi.shape], wi)
                names = wi.vars if wi.vars is not None else [wi.name] if len(bounds) == 1 else None
                if names is None:  # one name over several dims: a tuple of unnamed parts
                    parts = [Bounded(f"{wi.name}_{k}", const(0), b, "with") for k, b in enumerate(bounds)]
                    self.names[wi.name or "_"] = BoundedTuple(wi.name or "_", parts)
                    continue
                if len(names) != len(bounds):
                    raise self.error(f"{len(names)} name(s) but a shape of rank {len(bounds)}", wi)
                parts = [Bounded(n or "_", const(0), b, "with") for n, b in zip(names, bounds, strict=True)]
                for part in parts:
                    self.names[part.name] = part
                if wi.vars is not None and wi.name:
                    self.names[wi.name] = BoundedTuple(wi.name, parts)
            try:
                self.host_scoped(s.body)
            finally:
                self.names = saved
            return
        raise self.error(
            f"cannot lower this host-level statement ({type(s).__name__}) to Triton yet",
            s,
            "host code between kernels may only declare sizes, buffers and views",
        )

    def expand_shape_bounds(self, top: A.Parallel) -> A.Parallel:
        """``parallel {x, y} by [sh]`` with ``sh`` a shape (an mdspan, an ituple, ``t.span``):
        one bound per extent, ``sh(0), sh(1)``, as the rest of the lowering expects."""
        new: A.Parallel | None = None
        for k, lvl in enumerate(top.levels):
            bounds: list[A.Expr] = []
            for b in lvl.bound:
                try:
                    v = self.host_value(b)
                except CroqError:
                    v = None  # not a host value (computed inside the kernel): left as written
                n = len(v.dims) if isinstance(v, Shape) else len(v.items) if isinstance(v, Tuple_) else 1
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
        is lowered like host code - inner parallels become launches on the kernels' device, loops
        and element accesses become Python - and runs in program order (a valid schedule of the
        source's asynchronous regions, which ``sync.global`` joins). LANGUAGE.md 9.5."""
        lvl = s.levels[0]
        b = self.host_eval(lvl.bound[0]) if len(lvl.bound) == 1 else None
        if len(s.levels) != 1 or lvl.vars or b is None or not (b.is_const and b.const == 1):
            raise self.error(
                "a ': device' level is lowered only as 'parallel by 1 : device(T) { ... }'",
                lvl,
                "one instance per device region; put data parallelism in the parallels inside it",
            )
        if lvl.level_arg is not None and lvl.level_arg not in DEVICE_TARGETS:
            raise self.error(f"unknown device target '{lvl.level_arg}'", lvl)
        if lvl.name:
            self.names[lvl.name] = const(0, "int")
        self.w.comment(
            f"': device({lvl.level_arg})' region (line {s.span.line if s.span else 0}): lowered as host code;"
            " its parallels run on the kernels' device"
        )
        self.host_scoped(s.body)

    # ------------------------------------------------------------ host control flow
    def host_flow(self, s: A.Stmt) -> None:
        """``if`` / ``while`` / ``foreach`` / ``break`` / ``continue`` between launches: Python
        control flow around the host statements (and launches) they hold (LANGUAGE.md 9.1)."""
        w = self.w
        if isinstance(s, (A.Break, A.Continue)):
            if not self.host_loops:
                raise self.error(f"'{type(s).__name__.lower()}' outside a loop", s)
            w.line(type(s).__name__.lower(), s.span)
            return
        if isinstance(s, A.If):
            cond = self.host_eval(s.cond)
            if cond.is_const:  # decided when translating: only the branch taken is emitted
                branch = s.then if cond.const else s.other
                if branch is not None:
                    self.host_scoped(branch)
                return
            with w.block(f"if {cond.code}:", s.span):
                self.host_scoped(s.then)
            if s.other is not None:
                with w.block("else:"):
                    self.host_scoped(s.other)
            return
        if isinstance(s, A.While):
            cond = self.host_eval(s.cond)
            if cond.is_const and not cond.const:
                return
            with w.block(f"while {cond.code if not cond.is_const else 'True'}:", s.span):
                self.host_loops += 1
                self.host_scoped(s.body)
                self.host_loops -= 1
            return
        assert isinstance(s, A.Foreach)
        loops: list[tuple[str, Val, str | None]] = []  # (name, bound, index tuple it belongs to)
        for it in s.items:
            if isinstance(it, A.RangeItem):  # over the names of an enclosing 'with'
                target = self.names.get(it.name)
                parts = target.parts if isinstance(target, BoundedTuple) else [target]
                if it.sliced or it.alias is not None or not all(isinstance(p, Bounded) for p in parts):
                    raise self.error(f"a host-level 'foreach' over '{it.name}' cannot be lowered yet", it)
                tup = it.name if isinstance(target, BoundedTuple) else None
                loops.extend((p.name, p.bound, tup) for p in parts)  # type: ignore[union-attr]
                continue
            bounds = self.shape_of_list([it.shape], it)
            if it.vars is not None and len(it.vars) != len(bounds):
                raise self.error(f"{len(it.vars)} name(s) but a shape of rank {len(bounds)}", it)
            if it.vars is not None:
                loops.extend((n or "_", b, None) for n, b in zip(it.vars, bounds, strict=True))
            else:  # one name over a multi-dimensional shape: an index tuple
                tup = it.name if len(bounds) > 1 else None
                loops.extend((f"{it.name}_{k}" if tup else it.name or "_", b, tup) for k, b in enumerate(bounds))
        saved = dict(self.names)
        depth = w.depth
        tuples: dict[str, list[Val]] = {}
        for name, bound, tup in loops:
            var = self.fresh(safe(name))
            w.line(f"for {var} in range({bound.host or bound.code}):", s.span)
            w.depth += 1
            iv = Val(var, "int", None, frozenset(), var, (), True)
            if tup is not None:
                tuples.setdefault(tup, []).append(iv)
            if tup is None or not name.startswith(f"{tup}_"):
                self.names[name] = iv
        for tup, items in tuples.items():
            self.names[tup] = Tuple_(items)
        self.host_loops += 1
        self.host_scoped(s.body)
        self.host_loops -= 1
        w.depth = depth
        self.names = saved

    def host_scoped(self, body: A.Stmt) -> None:
        """A nested host block: names it declares are not seen after it; assignments to the
        enclosing Python variables are."""
        saved = dict(self.names)
        self.in_flow += 1
        start = len(self.w.lines)
        try:
            self.host_stmt(body)
        finally:
            self.in_flow -= 1
            self.names = saved
        if len(self.w.lines) == start:
            self.w.line("pass")

    def bind_host_scalar(self, name: str, v: Val, ty: str | None, mutable: bool, node: A.Node) -> None:
        if v.is_const and not mutable:
            cv = v.const
            if ty in ("int", "s32", "s64", "u32", "u64", "s16", "s8", "u8", "u16") and isinstance(cv, float):
                cv = int(cv)
            self.names[name] = const(cv, ty)
            return
        var = safe(name)
        self.w.line(f"{var} = {v.code}", node.span)
        self.names[name] = Val(var, ty, None, frozenset(), var)

    def host_element(self, e: A.At) -> tuple[Tensor, str]:
        """``x.at(i, j)`` of a tensor at host level: (tensor, Python index tuple code)."""
        t = self.host_value(e.base)
        if not isinstance(t, Tensor):
            raise self.error("host-level element access needs a tensor (not a view)", e.base)
        idx: list[str] = []
        for ix in e.indices:
            v = self.host_value(ix)
            if isinstance(v, Tuple_):
                idx.extend(x.code for x in v.items)
            else:
                if isinstance(v, Bounded):
                    v = v.value
                if not isinstance(v, Val) or not X.is_int(v.ty or "int"):
                    raise self.error("an element index must be an integer", ix)
                idx.append(v.code)
        if len(idx) != len(t.dims):
            raise self.error(f"'{t.name}' has rank {len(t.dims)}; {len(idx)} index(es) given", e)
        return t, "(" + ", ".join(idx) + ",)"

    def host_assign(self, a: A.Assign) -> None:
        if isinstance(a.target, A.At):
            # host code between launches runs in Python (element by element, as upstream's host code)
            t, idx = self.host_element(a.target)
            line = a.span.line if a.span else 0
            v = self.host_eval(a.value)
            if a.op != "=":
                cur = Val(f"_rt.elem_get(_F, {t.name!r}, {t.host_name}, {idx}, {line})", t.elem, None, frozenset())
                v = X.binary(a.op, cur, v, True)
            self.w.line(f"_rt.elem_set(_F, {t.name!r}, {t.host_name}, {idx}, {v.code}, {line})", a.span)
            return
        if not isinstance(a.target, A.Name):
            raise self.error("this assignment target cannot be lowered at host level", a)
        name = a.target.name
        if a.op != "=":
            old = self.names.get(name)
            if not isinstance(old, Val):
                raise self.error(f"'{name}' is not a scalar", a)
            v = X.binary(a.op, old, self.host_eval(a.value), True)
            self.w.line(f"{old.code} = {v.code}", a.span)
            self.names[name] = Val(old.code, old.ty, None, frozenset(), old.code)
            return
        if isinstance(a.value, A.Call):
            raise self.error("calls cannot be lowered to Triton", a.value)
        v = self.host_value(a.value)
        old = self.names.get(name)
        if self.in_flow and isinstance(v, Val) and isinstance(old, Val) and not old.is_const and old.host == old.code:
            self.w.line(f"{old.code} = {v.code}", a.span)  # a Python variable of an enclosing block
            return
        if isinstance(v, Val):
            self.bind_host_scalar(name, v, v.ty, False, a)
        else:
            self.names[name] = v

    def host_buffer(self, s: A.SpannedDecl) -> None:
        if s.storage in ("shared", "local"):
            raise self.error(f"'{s.storage}' buffers must be declared inside 'parallel'", s)
        why = unlowerable_reason(s.elem)
        if why:
            raise self.error(f"cannot lower to Triton: {why}", s)
        if s.shape is None:
            raise self.error("'[auto]' buffers cannot be lowered yet", s)
        dims = self.shape_of_list(s.shape, s)
        for d in s.items:
            if d.dims:
                raise self.error("arrays of global buffers cannot be lowered yet", d)
            host_dims = [x.host or x.code for x in dims]
            shape = "(" + ", ".join(host_dims) + ("," if len(host_dims) == 1 else "") + ")"
            fill = "None"
            if d.fill is not None:
                fv = self.host_eval(d.fill)
                fill = fv.code
            self.w.line(f"{d.name} = _rt.alloc(_F, {shape}, {X.torch_dtype(s.elem)}, _dev, {fill})", d.span)
            rank = len(dims)
            t = Tensor(
                d.name,
                s.elem,
                dims,
                host_dims,
                f"{d.name}_ptr",
                [f"{d.name}_s{i}" for i in range(rank)],
                d.name,
                d.span,
            )
            self.names[d.name] = t
            self.allocated.append(d.name)

    def write_back(self) -> None:
        for caller, dev in self.copy_backs:
            self.w.line(f"_rt.copy_back({caller}, {dev})")

    def host_return(self, s: A.Return) -> None:
        self.write_back()
        if s.value is None:
            self.w.line("return None", s.span)
            return
        v = self.host_value(s.value)
        if isinstance(v, Tensor):
            self.w.line(f"return {v.host_name}", s.span)
            self.returns = "tensor"
        elif isinstance(v, Val):
            self.w.line(f"return {v.code}", s.span)
            self.returns = "bool" if v.ty == "bool" else "float" if X.is_float(v.ty) else "int"
        elif isinstance(v, View) and isinstance(v.root, Tensor) and v.reshaped is not None:
            dims = ", ".join(d.host or d.code for d in v.reshaped)
            self.w.line(f"return {v.root.host_name}.reshape({dims})", s.span)
            self.returns = "tensor"
        else:
            raise self.error("this return value cannot be lowered", s.value)

    def op_signature(self) -> dict[str, Any]:
        """What a torch op registration needs (croq2triton/torch_ops.py): parameter kinds, the
        tensor parameters the function writes, and what it returns."""
        params = [(name, _py_kind(p)) for name, p in zip(self.param_names(), self.fn.params, strict=True)]
        writes = [n for n, p in zip(self.param_names(), self.fn.params, strict=True) if p.name in self.written]
        return {"params": params, "writes": writes, "returns": self.returns}

    def shape_of_list(self, items: list[A.Expr], node: A.Node) -> list[Val]:
        dims: list[Val] = []
        for e in items:
            v = self.host_value(e)
            if isinstance(v, Shape):
                dims.extend(v.dims)
            elif isinstance(v, Tuple_):  # an ituple used as a shape
                dims.extend(v.items)
            elif isinstance(v, Val):
                dims.append(v)
            else:
                raise self.error("a shape extent must be an integer or a shape", e)
        return dims

    # ------------------------------------------------------------ host expressions
    def host_eval(self, e: A.Expr) -> Val:
        v = self.host_value(e)
        if isinstance(v, Bounded):
            return v.value
        if not isinstance(v, Val):
            raise self.error("expected an integer or scalar value here", e)
        return v

    def host_value(self, e: A.Expr) -> Any:
        """Evaluate a host-level expression: a Val (Python code), Shape, Tuple_, Tensor or View."""
        if isinstance(e, A.IntLit):
            return const(e.value, "int")
        if isinstance(e, A.FloatLit):
            return const(e.value, "f64" if e.double else "f32")
        if isinstance(e, A.BoolLit):
            return const(e.value)
        if isinstance(e, A.Paren):
            return self.host_value(e.expr)
        if isinstance(e, A.Name):
            if e.name not in self.names:
                raise CroqSemanticError(f"'{e.name}' is not declared", e.span)
            return self.names[e.name]
        if isinstance(e, A.Unary):
            if e.op not in ("-", "!", "~", "+"):
                raise self.error(f"the operator '{e.op}' cannot be lowered in host code", e)
            v = self.host_eval(e.operand)
            if e.op == "+":
                return v
            if v.is_const:
                return const(-v.const if e.op == "-" else (not v.const) if e.op == "!" else ~v.const, v.ty)
            op = {"-": "-", "!": "not ", "~": "~"}[e.op]
            return Val(f"({op}{v.code})", v.ty, None, frozenset(), f"({op}{v.code})")
        if isinstance(e, A.Binary):
            a, b = self.host_value(e.lhs), self.host_value(e.rhs)
            if isinstance(a, Shape) or isinstance(b, Shape):
                return self.shape_arith(e.op, a, b, e)
            if isinstance(a, Tuple_) or isinstance(b, Tuple_):
                return self.tuple_arith(e.op, a, b, e)
            if isinstance(a, Bounded):
                a = a.value
            if isinstance(b, Bounded):
                b = b.value
            if not isinstance(a, Val) or not isinstance(b, Val):
                raise self.error("operands must be integers", e)
            return X.binary(e.op, a, b, True)
        if isinstance(e, A.Ternary):
            c, a, b = self.host_eval(e.cond), self.host_eval(e.then), self.host_eval(e.other)
            if c.is_const:
                return a if c.const else b
            code = f"({a.code} if {c.code} else {b.code})"
            return Val(code, a.ty, None, frozenset(), code)
        if isinstance(e, A.Builtin) and e.name == "cdiv":
            return X.cdiv(self.host_eval(e.args[0]), self.host_eval(e.args[1]), True)
        if isinstance(e, A.Select):  # host level: a choice made when translating
            k = self.host_eval(e.index)
            if not k.is_const:
                raise self.error("a host-level 'select' needs a constant index", e.index)
            if not 0 <= int(k.const) < len(e.options):
                raise self.error(f"select index {k.const} is out of range for {len(e.options)} choices", e.index)
            return self.host_value(e.options[int(k.const)])
        if isinstance(e, A.At):
            t, idx = self.host_element(e)
            line = e.span.line if e.span else 0
            return Val(f"_rt.elem_get(_F, {t.name!r}, {t.host_name}, {idx}, {line})", t.elem, None, frozenset())
        if isinstance(e, A.Builtin) and e.name in ("__max", "__min"):
            a, b = self.host_eval(e.args[0]), self.host_eval(e.args[1])
            if a.is_const and b.is_const:
                return const(max(a.const, b.const) if e.name == "__max" else min(a.const, b.const))
            code = f"{'max' if e.name == '__max' else 'min'}({a.code}, {b.code})"
            return Val(code, a.ty, None, frozenset(), code)
        if isinstance(e, A.MdspanLit):
            return Shape(self.shape_of_list(e.items, e))
        if isinstance(e, A.ItupleLit):
            return Tuple_([self.host_eval(x) for x in e.items])
        if isinstance(e, A.Member) and e.member == "span":
            return Shape(self.dims_of(self.host_value(e.base), e))
        if isinstance(e, A.GetIth):
            base = self.host_value(e.base)
            idx = self.host_eval(e.index)
            if not idx.is_const:
                raise self.error("a dimension index must be a constant", e.index)
            if isinstance(base, Shape):
                return _pick(base.dims, idx.const, e)
            if isinstance(base, Tuple_):
                return _pick(base.items, idx.const, e)
            raise self.error("'x(k)' needs a shape or an ituple", e)
        if isinstance(e, A.SizeOf):
            if e.expr is None:
                return const(TYPES[e.elem or "s32"].nbytes)
            v = self.host_value(e.expr)
            dims = v.dims if isinstance(v, Shape) else self.dims_of(v, e)
            out: Val = const(1)
            for d in dims:
                out = X.binary("*", out, d, True)
            return out
        if isinstance(e, A.View):
            return self.host_view(e)
        if isinstance(e, A.Index):
            base = self.host_value(e.base)
            if isinstance(base, Shape):
                return self.derive_shape(base, e.indices)
        if isinstance(e, A.Derive):
            base = self.host_value(e.base)
            if isinstance(base, Tuple_):
                return Tuple_([self.derived_item(base.items, x) for x in e.items])
        raise self.error(f"cannot evaluate this {type(e).__name__} at host level", e)

    def derived_item(self, items: list[Val], x: A.Expr) -> Val:
        if isinstance(x, A.Paren) and isinstance(x.expr, A.IntLit):
            return _pick(items, x.expr.value, x)
        saved = self.names.copy()
        try:
            return self.host_eval(x)
        finally:
            self.names = saved

    def derive_shape(self, base: Shape, items: list[A.Expr]) -> Shape:
        out: list[Val] = []
        for x in items:
            out.append(self._derive_expr(base, x))
        return Shape(out)

    def _derive_expr(self, base: Shape, x: A.Expr) -> Val:
        if isinstance(x, A.Paren) and isinstance(x.expr, A.IntLit):
            return _pick(base.dims, x.expr.value, x)
        if isinstance(x, A.Binary):
            return X.binary(x.op, self._derive_expr(base, x.lhs), self._derive_expr(base, x.rhs), True)
        return self.host_eval(x)

    def dims_of(self, v: Any, node: A.Node) -> list[Val]:
        if isinstance(v, Tensor):
            return list(v.dims)
        if isinstance(v, View):
            return list(v.reshaped) if v.reshaped is not None else [d.extent for d in v.dims]
        if isinstance(v, Shape):
            return list(v.dims)
        raise self.error("this has no shape", node)

    def shape_arith(self, op: str, a: Any, b: Any, node: A.Node) -> Shape:
        return X.shape_arith(op, a, b, node.span, True)

    def tuple_arith(self, op: str, a: Any, b: Any, node: A.Node) -> Tuple_:
        if isinstance(a, Tuple_) and isinstance(b, Tuple_):
            if len(a.items) != len(b.items):
                raise CroqSemanticError("ituple arithmetic needs equal ranks", node.span)
            return Tuple_([X.binary(op, x, y, True) for x, y in zip(a.items, b.items)])
        if isinstance(a, Tuple_):
            return Tuple_([X.binary(op, x, b, True) for x in a.items])
        return Tuple_([X.binary(op, a, y, True) for y in b.items])

    def host_view(self, e: A.View) -> View:
        base = self.host_value(e.base)
        if not isinstance(base, (Tensor, View)):
            raise self.error("views at host level must start from a tensor", e.base)
        view = base if isinstance(base, View) else whole_view(base)
        for op in e.ops:
            if op.kind != "span_as":
                raise self.error(
                    f"host-level '.{op.kind}' views cannot be lowered yet; take the view inside 'parallel'", op
                )
            dims = self.shape_of_list(op.args, op)
            view = span_as_view(view, dims, op, self)
        return view


def _pick(items: list[Val], k: int, node: A.Node) -> Val:
    n = len(items)
    idx = k if k >= 0 else n + k
    if not 0 <= idx < n:
        raise CroqSemanticError(f"index {k} is out of range for rank {n}", node.span)
    return items[idx]


def _py_kind(p: A.Param) -> str:
    """A parameter as the launcher takes it: 'tensor', or the Python type of a scalar ('int',
    'float', 'bool'); other kinds (stream) by name."""
    k = p.type.kind
    if k == "spanned":
        return "tensor"
    if k == "elem":
        return "float" if X.is_float(p.type.elem or "f32") else "int"
    return k


def _type_text(p: A.Param) -> str:
    t = p.type
    if t.kind == "spanned":
        dims = ", ".join(_dim_text(d) for d in (t.shape.dims or []) if t.shape) if t.shape else ""
        s = f"{t.elem} [{dims}]"
    elif t.kind == "elem":
        s = t.elem or ""
    else:
        s = t.kind
    return f"{'global ' if p.storage else ''}{s} {p.name or ''}".strip()


def _dim_text(d: A.Expr) -> str:
    if isinstance(d, A.Name):
        return d.name
    if isinstance(d, A.IntLit):
        return d.text
    if isinstance(d, A.Unknown):
        return d.text
    return "?"


def _ret_text(t: A.TypeRef) -> str:
    if t.kind == "spanned":
        return f"{t.elem} tensor"
    return t.elem or t.kind


def span_of(node: A.Node | None) -> Span | None:
    return node.span if node is not None else None


def _scalar_type(ty: str | None) -> bool:
    return ty is not None and (ty in ("int", "bool") or ty in TYPES)
