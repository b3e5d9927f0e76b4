"""Lifting one top-level ``parallel`` into a Triton kernel.

* Block-level indices become ``tl.program_id``; the grid is computed by the launcher.
* Sub-block indices (warpgroups, warps, threads) become *lane axes*: tensor
  dimensions of the block's values.  Per-thread code is executed for all lanes
  at once; lane-dependent conditions become masks.
* Shared/local buffers are register tiles when the program only moves them as
  whole tiles (DMA, MMA); when it addresses single elements they live in a
  per-program scratch area of global memory (``memory`` mode).  The decision is
  made by running the lowering until it stops changing (at most a few passes).
* A per-thread reduction loop ``acc += a.at(m, k) * b.at(n, k)`` becomes
  ``tl.dot`` over K tiles; MMA statements become ``tl.dot``; a loop that only
  splits an MMA's K extent into pieces (``chunkat(_, k)``) is collapsed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import CroqLoweringError, CroqSemanticError
from ..frontend import ast as A
from ..frontend.printer import Printer
from ..lift.arith import MATH_F32
from ..lift.names import safe
from ..sema.types import TYPES, unlowerable_reason
from . import exprs as X
from .frags import frag_base, frag_element, store_frag_element
from .levels import assign_levels
from .owners import keep_owned
from .pieces import split_spec
from .pipeline import is_pipeline
from .regions import Region
from .values import (
    Bounded,
    BoundedTuple,
    Buffer,
    Collapsed,
    Frag,
    Future,
    Shape,
    Tensor,
    Tile,
    Tuple_,
    Val,
    View,
    ViewDim,
    const,
    host_key,
    pow2,
)
from .viewops import span_as_view, whole_view
from .writer import Writer

if TYPE_CHECKING:
    from .function import LegacyHost

# the math builtins: one table (lift/kernel.py), plus those the tile-IR path types itself
MATH = {name: fn if fn.startswith("_") else f"tl.{fn}" for name, fn in MATH_F32.items()} | {
    "__fabs": "tl.abs",
    "__max": "tl.maximum",
    "__min": "tl.minimum",
}


class LaneAxis:
    def __init__(self, name: str, extent: Val, size: str, size_const: int | None, index: int) -> None:
        self.name = name
        self.extent = extent
        self.size = size
        self.size_const = size_const
        self.index = index
        self.var = f"{name}_l"

    @property
    def padded(self) -> bool:
        return not (self.extent.is_const and self.size_const == self.extent.const)


class KernelLowering:
    def __init__(self, fl: LegacyHost, top: A.Parallel, name: str) -> None:
        self.fl = fl
        self.top = top
        self.coarsened = (1, 1)  # row x column blocks per program (lower/coarsen.py)
        self.k_split: tuple[int, int] | None = None  # (source K tile, step) (lower/ksplit.py)
        self.retile_guard = ""  # launch condition of a re-tiled kernel (chunkat windows)
        self.retiled: tuple[int, int] | None = None  # the source's block tiles when re-tiled (lower/retile.py)
        self.global_reads: set[str] = set()  # global tensors the kernel reads / writes (fenced_store)
        self.global_writes: set[str] = set()
        self.name = name
        self.memory: set[str] = set()  # buffers decided to live in scratch memory
        self.frag_shapes: dict[int, tuple[list[Val], list[str]]] = {}
        self.no_dot: set[int] = set()
        self.any_shapes: dict[str, tuple[str, list[Val], str]] = {}  # dma.any futures: later copies' shape
        self.array_modes: dict[str, str] = {}  # buffer array -> 'ring' | 'merged'
        self.no_split: set[str] = set()  # buffers that must stay padded (used in a way pieces cannot serve)

    # ================================================================ driver
    def lower(self) -> tuple[str, list[tuple[str, Any]]]:
        last: Exception | None = None
        for _ in range(6):
            self.reset()
            try:
                self.gen()
            except (CroqLoweringError, CroqSemanticError) as e:
                # decisions made in this pass (buffer modes, fragment shapes) may remove the problem
                if self.changed:
                    last = e
                    continue
                raise
            if not self.changed:
                break
        else:
            if last is not None:
                raise last
            raise CroqLoweringError("internal error: kernel lowering did not converge", self.top.span)
        self.fl.warnings.extend(self.warnings)
        return self.source(), self.launch_lines()

    def reset(self) -> None:
        self.changed = False
        self.apply_ctx: tuple[list[str], list[str]] | None = None  # index names and extents of the open apply
        self.w = Writer(self.fl.src_name, indent=1)
        self.args: dict[str, tuple[str, str]] = {}  # name -> (kind, host code)
        self.scopes: list[dict[str, Any]] = [{}]
        self.lanes: list[LaneAxis] = []
        self.scope_lanes: list[str] = []
        self.pred: list[Val] = []
        self.grid: list[str] = []
        self.block_vars: list[str] = []
        self.uid = 0
        self.scratch: list[tuple[Buffer, str, str]] = []  # buffer, arg, per-program elems (host)
        self.has_dot = False
        self.threads = 1
        self.decl_types: dict[str, str] = {}
        self.notes: list[str] = []
        self.pipeline: dict[str, int] | None = None
        self.pipelined = False
        self.cons_counts: dict[str, int] = {}
        self.merged: dict[str, Buffer] = {}
        self.var_defs: dict[str, str] = {}
        # per-lane index aliases ``n = bn # tn`` with their definitions: a lifted dot re-evaluates
        # them with the lane laid on the operand's axis (lower/tiles.py)
        self.lane_aliases: list[tuple[str, A.Expr]] = []
        self.loop_depth = 0
        self.current_swizzle: int | None = None
        self.warnings: list[Any] = []

    def fresh(self, base: str) -> str:
        self.uid += 1
        return f"{base}_{self.uid}"

    def warn(self, msg: str, span: Any, severity: str = "warning") -> None:
        from ..errors import Diagnostic

        if not any(d.message == msg and d.span is span for d in self.warnings):
            self.warnings.append(Diagnostic(severity, msg, span))  # type: ignore[arg-type]

    def err(self, msg: str, node: A.Node | None, hint: str | None = None) -> CroqLoweringError:
        return CroqLoweringError(msg, node.span if node is not None else None, hint)

    # ================================================================ arguments
    def arg(self, name: str, kind: str, host: str) -> str:
        prev = self.args.get(name)
        if prev is not None and prev[1] != host:
            return self.arg(name + "_", kind, host)
        self.args[name] = (kind, host)
        return name

    def import_val(self, v: Val, hint: str = "h") -> Val:
        """A host value used inside the kernel: a literal, or a kernel argument."""
        if v.is_const:
            return v
        if v.host is None:
            return v
        host = v.host
        name = host if host.isidentifier() else self.arg_name_for(host, hint)
        self.arg(name, "int", host)
        if v.ty == "bool":  # bool arguments travel as 0/1 (runtime.launch.scalar_arg)
            return Val(f"({name} != 0)", "bool", None, frozenset(), host)
        return Val(name, v.ty, None, frozenset(), host, (), v.nonneg or v.ty == "int")

    def arg_name_for(self, host: str, hint: str) -> str:
        for n, (_, h) in self.args.items():
            if h == host:
                return n
        return self.fresh(f"_{hint}")

    def tensor(self, t: Tensor) -> None:
        self.arg(t.ptr, "tensor", t.host_name)
        for d, s in enumerate(t.strides):
            self.arg(s, "int", f"{t.host_name}.stride({d})")

    def tdims(self, t: Tensor) -> list[Val]:
        return [self.import_val(d, "dim") for d in t.dims]

    def constexpr(self, name: str, host: str) -> str:
        self.args[name] = ("constexpr", host)
        return name

    def pad_constexpr(self, name: str, extent_host: str) -> str:
        """The constexpr padded size of a launch-time tile extent (``runtime.launch.pad_extent``):
        one per extent, so tiles of equal extents get the same padded shape whatever their
        spelling (``host_key``)."""
        host = f"_rt.pad_extent({extent_host})"
        for n, (kind, h) in self.args.items():
            if kind == "constexpr" and host_key(h) == host_key(host):
                return n
        return self.constexpr(name, host)

    # ================================================================ scopes
    def lookup(self, name: str, node: A.Node) -> Any:
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        if name in self.fl.names:
            v = self.fl.names[name]
            if isinstance(v, Val):
                return self.import_val(v, name)
            if isinstance(v, Shape):  # host-level mdspans / ituples: their extents become arguments too
                return Shape([self.import_val(d, name) for d in v.dims])
            if isinstance(v, Tuple_):
                return Tuple_([self.import_val(d, name) for d in v.items])
            return v
        raise CroqSemanticError(f"'{name}' is not declared", node.span)

    def bind(self, name: str, v: Any) -> None:
        self.scopes[-1][name] = v

    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    # ================================================================ kernel structure
    def gen(self) -> None:
        levels = assign_levels(self.top)
        self.levels = levels
        w = self.w
        top = self.top
        if top.stream is not None:
            self.notes.append("stream")
        # a cluster level only groups blocks: lower the block-level parallel inside it
        while all(levels.get(id(b)) == "cluster" for b in top.levels):
            inner = top.body.stmts if isinstance(top.body, A.Block) else [top.body]
            if len(inner) != 1 or not isinstance(inner[0], A.Parallel):
                raise self.err("a cluster level must contain exactly one block-level parallel", top)
            for b in top.levels:
                for nm in b.vars if b.vars is not None else [b.name]:
                    if nm:
                        self.bind(nm, Bounded(nm, Val("@CLUSTER", "int"), const(1), "cluster"))
            self.notes.append("cluster")
            top = inner[0]
        # block-level indices (they must be the outermost levels of the top statement)
        pid = 0
        rest: list[A.PBy] = []
        for b in top.levels:
            lvl = levels[id(b)]
            if lvl == "cluster":
                continue
            if lvl != "block":
                rest.append(b)
                continue
            if rest:
                raise self.err("a block level must come before sub-block levels", b)
            names = b.vars if b.vars is not None else [b.name]
            # programs in L2-friendly groups: the source states no order among its blocks, so this
            # is done in both schedules for MMA kernels (the source schedule leaves kernels with
            # register fragments, e.g. attention, in the plain order)
            grouped = (
                len(names) == 2
                and pid == 0
                and (
                    (self.fl.schedule == "auto" and (_has_mma(top) or self.coarsened != (1, 1)))
                    or (_has_mma(top) and not any(isinstance(n, (A.FragDecl, A.Apply)) for n in top.walk()))
                )
            )
            if grouped:
                self.grouped_order(names, b)
                pid += 2
            for k, nm in enumerate(names if not grouped else []):
                ext = self.fl.host_eval(b.bound[k])
                if pid >= 3:
                    raise self.err("more than three block dimensions cannot be lowered yet", b)
                self.grid.append(ext.host or ext.code)
                var = safe(nm) if nm else f"_pid{pid}"
                w.line(f"{var} = tl.program_id({pid})", b.span)
                v = Val(var, "int", None, frozenset(), None, (), True, self.import_val(ext, "grid"))
                self.block_vars.append(var)
                if nm:
                    self.bind(nm, Bounded(nm, v, self.import_val(ext, "grid"), "block"))
                pid += 1
            if b.vars is not None and b.name:
                self.bind(b.name, BoundedTuple(b.name, [self.lookup(n, b) for n in b.vars]))
        if not self.grid:
            self.grid.append("1")
        self.prescan_lanes()
        if rest and is_pipeline(top.body):
            self.lower_pipeline(rest, top.body, top)
            return
        self.enter_levels(rest, top)
        if self.lanes and _straight_line(top.body):
            self.interior_split(top.body)
        else:
            self.body(top.body)

    def grouped_order(self, names: list[str | None], b: A.PBy) -> None:
        """A 1-D grid walked in groups of GROUP_M block rows, so that
        neighbouring programs share operand tiles in L2 (programs are independent: the order
        does not change results)."""
        exts = [self.fl.host_eval(x) for x in b.bound]
        gm, gn = (self.import_val(e, "grid") for e in exts)
        host = [e.host or e.code for e in exts]
        group = self.constexpr("GROUP_M", "8")
        w = self.w
        if self.retiled is not None and not any(isinstance(n, A.Return) for n in self.top.body.walk()):
            # a persistent grid: one program per SM walks the tiles.  Measured on the H200: it wins
            # for the 128 x 256 tiles of re-tiled kernels (1.009 of cuBLAS at 8192^3 vs 0.999 with
            # one program per tile) and loses elsewhere: gemm_v2's 64 x 128 tiles 0.46 vs 0.76,
            # v4's source 128 x 192 tiles 0.53 vs 0.73, v0's coarsened 128 x 128 dots 0.75 vs 0.90
            sms = self.constexpr("NUM_SMS", "_rt.num_sms(_dev)")
            self.grid.append(f"min(({host[0]}) * ({host[1]}), _{self.name}_NUM_SMS)")
            w.comment("schedule auto: a persistent grid of NUM_SMS programs walks the block grid in groups")
            w.comment("of GROUP_M rows (L2 reuse); blocks are independent, so the order does not change results")
            w.line(f"for _pid in tl.range(tl.program_id(0), ({gm.code}) * ({gn.code}), {sms}):", b.span)
            w.depth += 1
        elif self.coarsened != (1, 1) and _thread_tile(self.top) == (128, 256):
            # a coarsened 128 x 256 lifted dot: Triton 3.6 pipelines it as well as a hand-written
            # kernel only inside a loop (measured for v0 at 8192^3: 0.98 of cuBLAS in a loop of one
            # iteration, 0.82-0.86 without; perf/RESULTS.md 2026-11-30)
            self.grid.append(f"({host[0]}) * ({host[1]})")
            w.comment("programs walk the block grid in groups of GROUP_M rows (L2 reuse); a loop of one")
            w.comment("iteration, because Triton pipelines the 128 x 256 dot better inside a loop")
            w.line("for _pid in tl.range(tl.program_id(0), tl.program_id(0) + 1):", b.span)
            w.depth += 1
        else:
            self.grid.append(f"({host[0]}) * ({host[1]})")
            w.comment("programs walk the block grid in groups of GROUP_M rows (L2 reuse)")
            w.line("_pid = tl.program_id(0)", b.span)
        w.line(f"_group = {group} * {gn.code}")
        w.line(f"_first = (_pid // _group) * {group}")
        w.line(f"_gsize = tl.minimum({gm.code} - _first, {group})")
        vals = ["_first + (_pid % _group) % _gsize", "(_pid % _group) // _gsize"]
        for k, nm in enumerate(names):
            var = safe(nm) if nm else f"_pid{k}"
            w.line(f"{var} = {vals[k]}")
            bound = gm if k == 0 else gn
            v = Val(var, "int", None, frozenset(), None, (), True, bound)
            self.block_vars.append(var)
            if nm:
                self.bind(nm, Bounded(nm, v, bound, "block"))

    def interior_split(self, body: A.Stmt) -> None:
        """Elementwise kernels: programs entirely inside the tensors run without bound masks.

        Triton cannot vectorise loads whose mask depends on a length that is not a multiple of 16
        (a ragged length): the body is emitted twice, unmasked for interior programs (a uniform
        test on the program's largest index) and masked for the edge.
        """
        main = self.w
        self.w = Writer(self.fl.src_name, indent=main.depth + 1)
        self.inside_conds: list[str] | None = []
        self.body(body)
        inside, conds = self.w.lines, self.inside_conds
        self.inside_conds = None
        self.w = Writer(self.fl.src_name, indent=main.depth + 1)
        self.body(body)
        edge = self.w.lines
        self.w = main
        if not conds:
            self.body(body)
            return
        cond = " & ".join(f"({c})" for c in dict.fromkeys(conds))
        main.comment("interior programs: every index is inside the tensors, no bound masks (vectorised loads)")
        main.line(f"if {cond}:")
        main.lines.extend(inside)
        main.line("else:")
        main.lines.extend(edge)

    def bound_term(self, c: Val, rd: Val) -> str | None:
        """The mask term ``c < rd``, or None where the interior version may assume it."""
        if self.known_lt(c, rd):
            return None
        term = f"({c.code} < {rd.code})"
        conds = getattr(self, "inside_conds", None)
        if conds is None or c.uniform:
            return term
        hi = self.lane_max(c)
        if hi is None or not rd.uniform:
            return term
        conds.append(f"{hi} < {rd.code}")
        return None

    def lane_max(self, c: Val) -> str | None:
        """The largest value of an index over the lanes, if it is monotone in them."""
        import re

        code = c.code
        if re.search(r"[-/%<>=&|~^]|\bv_\d+|tile_\d+|\[", code.replace("@LANE[", "@LANE(").replace("]", ")")):
            return None
        if re.search(r"_\d+\b", code):
            return None

        def mx(m: re.Match[str]) -> str:
            a = self.lane_by_key[m.group(1)]
            return f"({a.extent.code} - 1)"

        out = re.sub(r"@LANE\[([^\]]+)\]", mx, code)
        # the test runs before the body: only program-level names (block indices, kernel
        # arguments) may appear, not a variable the body computes (e.g. 's32 idx = p * 1024 + q')
        allowed = {*self.block_vars, *self.args, "tl"}
        if any(name not in allowed for name in re.findall(r"\b[A-Za-z_]\w*", out)):
            return None
        return out

    def merge_level(self, b: A.PBy, body: A.Stmt) -> int:
        """Warps/warpgroups that each own a block of an MMA's rows merge into one tile.

        Returns the number of merged units (0 when the level is not merged): a ``group-4`` or
        ``group`` level whose index components are constants, at least one larger than 1, around
        code that runs or stores MMAs (an accumulator declared outside such a level has one copy per
        unit in every level that uses it, LANGUAGE.md 7.3 and 7.9: each of them merges).
        """
        if self.levels.get(id(b)) not in ("group-4", "group"):
            return 0
        names = b.vars if b.vars is not None else [b.name]
        if any(n is None for n in names):
            return 0
        exts = []
        for x in b.bound:
            try:
                v = self.fl.host_eval(x)
            except (CroqLoweringError, CroqSemanticError):
                return 0
            if not v.is_const:
                return 0
            exts.append(int(v.const))
        big = [e for e in exts if e > 1]
        if not big:
            return 0
        if not any(isinstance(n, (A.MmaOp, A.MmaStore)) for n in body.walk()):
            return 0
        units = 1
        for e in big:
            units *= e
        return units

    def prescan_lanes(self) -> None:
        """Find every sub-block parallel index of the nest up front: the lane layout is fixed."""
        self.lane_of: dict[tuple[int, int], LaneAxis] = {}
        stack: list[A.Node] = [self.top]
        seen: list[A.PBy] = []
        while stack:
            n = stack.pop()
            if isinstance(n, A.Parallel) and not is_pipeline(n.body):
                for b in n.levels:
                    if self.levels.get(id(b)) in ("group-4", "group", "thread") and not self.merge_level(b, n.body):
                        seen.append(b)
            stack.extend(reversed([c for c in n.children() if isinstance(c, A.Stmt)]))
        used: set[str] = set()
        for b in seen:
            names = b.vars if b.vars is not None else [b.name]
            for k, nm in enumerate(names):
                if nm is None:
                    continue
                try:
                    ext = self.fl.host_eval(b.bound[k])
                except (CroqLoweringError, CroqSemanticError):
                    raise self.err(
                        "the extent of a thread-level parallel index must be computable before the launch",
                        b.bound[k],
                    ) from None
                if ext.is_const and ext.const == 1:
                    continue
                if ext.is_const:
                    size_const: int | None = pow2(int(ext.const))
                    size = str(size_const)
                else:
                    size_const = None
                    size = self.constexpr(f"L_{nm.upper()}", f"_rt.pow2({ext.host})")
                axis = LaneAxis(nm, self.import_val(ext, "ext"), size, size_const, len(self.lanes))
                if nm in used:
                    axis.var = f"{nm}_l{len(self.lanes)}"
                used.add(nm)
                self.lanes.append(axis)
                self.lane_of[(id(b), k)] = axis

    def enter_levels(self, pbys: list[A.PBy], node: A.Node) -> list[str]:
        added: list[str] = []
        for b in pbys:
            lvl = self.levels.get(id(b), "thread")
            if lvl == "block":
                raise self.err(
                    "a block-level index cannot be nested inside a kernel", b, "move it to the outermost parallel"
                )
            if lvl == "cluster":
                continue
            names = b.vars if b.vars is not None else [b.name]
            comps: list[Bounded] = []
            merged = self.merge_level(b, node.body) if isinstance(node, A.Parallel) else 0
            if merged:
                if self.cons_counts:
                    raise self.err("nested merged warp levels cannot be lowered", b)
                self.max_consumers = merged
                self.merged_units = merged
                self.w.comment(f"{merged} {lvl} units own blocks of the MMA tiles: merged into one block-level tile")
            for k, nm in enumerate(names):
                ext = self.fl.host_eval(b.bound[k])
                if merged and nm is not None:
                    if ext.is_const and ext.const > 1:
                        self.cons_counts[nm] = int(ext.const)
                        bv = Bounded(nm, X.cons_val(const(0), {nm: 1}), ext, "merged")
                    else:
                        bv = Bounded(nm, const(0), ext, "lane")
                    self.bind(nm, bv)
                    comps.append(bv)
                    continue
                per = 128 if lvl == "group-4" else 32 if lvl == "group" else 1
                self.threads *= (int(ext.const) if ext.is_const else 4) * (per if nm is None or per > 1 else 1)
                if nm is None:
                    continue
                axis = self.lane_of.get((id(b), k))
                if axis is None:
                    bv = Bounded(nm, const(0), const(1), "lane")
                else:
                    self.w.line(f"{axis.var} = tl.arange(0, {axis.size})", b.span)
                    bv = Bounded(nm, self.lane_val(axis), axis.extent, "lane")
                    added.append(axis.name)
                self.bind(nm, bv)
                comps.append(bv)
            if b.vars is not None and b.name:
                self.bind(b.name, BoundedTuple(b.name, comps))
        self.scope_lanes.extend(added)
        return added

    def exit_levels(self, pbys: list[A.PBy]) -> None:
        pass

    def fl_or_kernel_eval(self, e: A.Expr) -> Val:
        v = self.ev(e)
        if isinstance(v, Bounded):
            v = v.value
        if not isinstance(v, Val):
            raise self.err("expected an integer", e)
        return v

    # Lane values are written in a fixed layout: one tensor dim per lane axis of the kernel.
    # Because axes are discovered while generating, lane codes are finalised by
    # ``finish_layout`` (each use is spelled through a placeholder).
    @property
    def lane_by_key(self) -> dict[str, LaneAxis]:
        return {a.var: a for a in self.lanes}

    def lane_val(self, axis: LaneAxis) -> Val:
        code = f"@LANE[{axis.var}]"
        mask = f"@LANEMASK[{axis.var}]" if axis.padded else None
        return Val(code, "int", None, frozenset([axis.name]), None, (mask,) if mask else (), True, axis.extent)

    def layout_suffix(self, axis_index: int, extra: int = 0) -> str:
        n = len(self.lanes)
        if n + extra <= 1:
            return ""
        parts = ["None"] * (n + extra)
        parts[axis_index] = ":"
        return "[" + ", ".join(parts) + "]"

    def lane_shape(self, axes: frozenset[str] | None = None) -> str:
        dims = [a.size if axes is None or a.name in axes else "1" for a in self.lanes]
        return "[" + ", ".join(dims) + "]"

    # ================================================================ statements
    def body(self, s: A.Stmt) -> None:
        self.push()
        try:
            for x in s.stmts if isinstance(s, A.Block) else [s]:
                self.stmt(x)
        finally:
            self.pop()

    def stmt(self, s: A.Stmt) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise self.err(f"cannot lower '{type(s).__name__}' statements to Triton yet", s)
        m(s)

    def s_Empty(self, s: A.Empty) -> None:
        pass

    def s_PragmaStmt(self, s: A.PragmaStmt) -> None:
        pass

    def s_Block(self, s: A.Block) -> None:
        self.body(s)

    def s_Parallel(self, s: A.Parallel) -> None:
        if is_pipeline(s.body):
            self.lower_pipeline(list(s.levels), s.body, s)
            return
        saved = dict(self.cons_counts)
        added = self.enter_levels(list(s.levels), s)
        self.body(s.body)
        self.cons_counts = saved
        for _ in added:
            self.scope_lanes.pop()

    def s_Sync(self, s: A.Sync) -> None:
        if s.kind == "global":
            raise self.err("'sync.global' inside a kernel cannot be lowered", s)
        # Triton inserts the barriers a block-level program needs; scratch writes get their own

    def s_Wait(self, s: A.Wait) -> None:
        for it in s.items:
            v = self.ev_any(it)
            if isinstance(v, Future):
                v.waited = True

    def s_Trigger(self, s: A.Trigger) -> None:
        pass

    def s_MmaCommit(self, s: A.MmaCommit) -> None:
        pass

    def s_Swap(self, s: A.Swap) -> None:
        vals = [self.lookup(n, s) for n in s.names]
        if self.loop_depth:
            self.swap_at_run_time(s, vals)
            return
        if s.kind == "swap":
            vals = [vals[1], vals[0]]
        else:
            vals = vals[1:] + vals[:1]
        for n, v in zip(s.names, vals):
            self.rebind(n, v)

    def swap_at_run_time(self, s: A.Swap, vals: list[Any]) -> None:
        """``swap``/``rotate`` inside a loop: exchange the buffers' contents (tiles or scratch
        addresses) every iteration, so each name keeps its buffer and the buffers ping-pong."""
        bufs: list[Buffer] = []
        for n, v in zip(s.names, vals):
            data = v.data if isinstance(v, Future) else v
            if not isinstance(data, Buffer):
                raise self.err(f"'{n}' has no buffer to {s.kind} inside a loop", s)
            bufs.append(data)
        if any(b.mode == "memory" for b in bufs) and any(b.mode == "tile" for b in bufs):
            for b in bufs:
                if b.mode == "tile":
                    self.need_memory(b)  # buffers that trade places must live the same way
            raise self.err(f"'{s.kind}' of buffers that live differently (retrying)", s)
        first = bufs[0]
        for b in bufs[1:]:
            if (b.mode, b.elem, [d.code for d in b.dims], b.lanes) != (
                first.mode,
                first.elem,
                [d.code for d in first.dims],
                first.lanes,
            ):
                raise self.err(f"'{s.kind}' inside a loop needs buffers of the same type and shape", s)
        order = [bufs[1], bufs[0]] if s.kind == "swap" else bufs[1:] + bufs[:1]
        tmp = self.fresh("swap")
        self.w.line(f"{tmp} = {bufs[0].var}", s.span)
        for dst, src in zip(bufs, order):
            self.w.line(f"{dst.var} = {tmp if src is bufs[0] else src.var}")

    def rebind(self, name: str, v: Any) -> None:
        for sc in reversed(self.scopes):
            if name in sc:
                sc[name] = v
                return
        self.bind(name, v)

    def s_Yield(self, s: A.Yield) -> None:
        if self.pred:
            raise self.err("'yield' under a per-thread condition cannot be lowered", s)
        self.w.line("return", s.span)

    def s_Return(self, s: A.Return) -> None:
        raise self.err("'return' inside 'parallel' is not allowed", s, "use 'yield' to leave the program early")

    def s_CallStmt(self, s: A.CallStmt) -> None:
        c = s.call
        if c.kind in ("print", "println") and c.bang:
            return
        if c.kind in ("print", "println"):
            args: list[Val] = []
            for a in c.args:
                if isinstance(a, A.StringLit):
                    continue
                v = self.ev_any(a)
                if isinstance(v, BoundedTuple):  # an index tuple: its parts
                    args.extend(p.value for p in v.parts)
                elif isinstance(v, Tuple_):
                    args.extend(v.items)
                else:
                    args.append(self.ev(a))
            text = " ".join(a.value for a in c.args if isinstance(a, A.StringLit))
            vals = ", ".join(a.code for a in args if isinstance(a, Val))
            self.w.line(f"tl.device_print({text!r}{', ' + vals if vals else ''})", s.span)
            return
        if c.kind == "assert":
            cond = self.ev(c.args[0])
            msg = c.args[1].value if isinstance(c.args[1], A.StringLit) else "assertion failed"
            self.w.line(f"tl.device_assert({cond.code}, {msg!r})", s.span)
            return
        if c.kind == "atomic":
            self.atomic(c, None)
            return
        raise self.err(
            f"cannot lower to Triton: {'call' if c.kind == 'call' else c.kind + ' call'} '{c.name}'",
            s,
            "calls into C++/CUDA device code, intrinsics and inline asm have no Triton equivalent",
        )

    def s_Asm(self, s: A.Asm) -> None:
        raise self.err("cannot lower to Triton: inline asm", s)

    def s_Cpp(self, s: A.Cpp) -> None:
        raise self.err("cannot lower to Triton: __cpp__ splices C++ text", s)

    # ---------------------------------------------------------------- declarations
    def s_ScalarDecl(self, s: A.ScalarDecl) -> None:
        for d in s.items:
            init_e = d.init if d.init is not None else d.fill
            if isinstance(init_e, A.Call):
                if init_e.kind == "atomic":
                    v = self.atomic(init_e, d.name)
                    self.bind_var(d.name, v, s.type or v.ty, s.span, mutable=True)
                    continue
                raise self.err("calls cannot be lowered to Triton", init_e)
            if init_e is None:
                if s.type is None:
                    raise CroqSemanticError(f"unable to deduce the type of '{d.name}'", d.span)
                v = const(0, s.type)
            else:
                v = self.ev(init_e)
            ty = s.type if s.type not in (None,) else v.ty
            if ty in TYPES and unlowerable_reason(ty):
                raise self.err(f"cannot lower to Triton: {unlowerable_reason(ty)}", s)
            self.bind_var(d.name, v, ty, s.span, mutable=True)

    def bind_var(self, name: str, v: Val, ty: str | None, span: Any, mutable: bool) -> None:
        """Declare a kernel variable that may be reassigned (loop-carried)."""
        ty = ty or "f32"
        # 16-bit float variables are carried in f32 (never less precise than the source asks):
        # a per-thread accumulator then keeps f32 sums across the K loop and rounds once at its store
        ct = "f32" if ty in ("f16", "bf16") else X.compute_type(ty)
        axes = frozenset(self.scope_lanes) if self.scope_lanes else frozenset()
        var = self.fresh(name) if safe(name) in self.decl_types else safe(name)
        if axes:
            shape = self.lane_shape(axes)
            self.w.line(f"{var} = tl.full({shape}, 0, {X.tl_dtype(ct)}) + ({self.cast(v, ct)})", span)
        else:
            self.w.line(
                f"{var} = tl.full([], {self.cast(v, ct)}, {X.tl_dtype(ct)})"
                if v.uniform
                else f"{var} = {self.cast(v, ct)}",
                span,
            )
        self.decl_types[var] = ty
        masks = tuple(self.lane_masks(axes))
        self.bind(name, Val(var, ty, None, axes, None, masks, False))

    def lane_masks(self, axes: frozenset[str]) -> list[str]:
        return [f"@LANEMASK[{a.var}]" for a in self.lanes if a.name in axes and a.padded]

    def store_cast(self, v: Val, elem: str) -> str:
        """``v`` converted to exactly ``elem`` (for values stored in a tile or memory)."""
        if v.is_const:
            return self.cast(v, elem)
        return v.code if v.ty == elem else f"({v.code}).to({X.tl_dtype(elem)})"

    def cast(self, v: Val, ty: str | None) -> str:
        if ty is None or v.ty == ty or (X.compute_type(v.ty) == X.compute_type(ty) and v.ty is not None):
            if v.is_const and isinstance(v.const, float) and X.is_int(ty):
                return str(int(v.const))
            return v.code
        if v.is_const:
            if X.is_int(ty) and not isinstance(v.const, bool):
                return str(int(v.const))
            if X.is_float(ty):
                return const(float(v.const), ty).code
        if v.uniform:
            # scalars may arrive as Python numbers (kernel arguments): tl.cast accepts both
            return f"tl.cast({v.code}, {X.tl_dtype(X.compute_type(ty))})"
        return f"({v.code}).to({X.tl_dtype(X.compute_type(ty))})"

    def s_MdspanDecl(self, s: A.MdspanDecl) -> None:
        v = self.ev_any(s.value)
        if isinstance(v, Val):
            v = Shape([v])
        self.bind(s.name, v)

    def s_ItupleDecl(self, s: A.ItupleDecl) -> None:
        self.bind(s.name, self.ev_any(s.value))

    def s_EventDecl(self, s: A.EventDecl) -> None:
        for e in s.items:
            self.bind(e.name, ("event", e.name))

    def s_SpannedDecl(self, s: A.SpannedDecl) -> None:
        storage = s.storage or "local"
        if storage == "global":
            raise self.err("'global' buffers cannot be declared inside a kernel", s)
        if s.shape is None:
            raise self.err("'[auto]' buffers cannot be lowered yet", s)
        why = unlowerable_reason(s.elem)
        if why:
            raise self.err(f"cannot lower to Triton: {why}", s)
        dims = self.shape_list(s.shape, s)
        for d in s.items:
            count = 1
            for x in d.dims:
                c = self.ev(x)
                if not c.is_const:
                    raise CroqSemanticError("the size of a buffer array must be a constant", x.span)
                count *= int(c.const)
            buf = self.new_buffer(d.name, s.elem, dims, storage, d.span, count)
            if d.fill is not None:
                fv = self.ev(d.fill)
                self.fill_buffer(buf, fv, d.span)
            self.bind(d.name, buf)

    def shape_list(self, items: list[A.Expr], node: A.Node) -> list[Val]:
        dims: list[Val] = []
        for e in items:
            v = self.ev_any(e)
            if isinstance(v, Shape):
                dims.extend(v.dims)
            elif isinstance(v, Tuple_):  # an ituple used as a shape
                dims.extend(v.items)
            elif isinstance(v, Bounded):
                dims.append(v.value)
            elif isinstance(v, Val):
                dims.append(v)
            else:
                raise self.err("a shape extent must be an integer", e)
        for d in dims:
            if not d.uniform:
                raise self.err("buffer extents cannot depend on the thread index", node)
        return dims

    def new_buffer(self, name: str, elem: str, dims: list[Val], storage: str, span: Any, count: int = 1) -> Buffer:
        key = name
        var = self.fresh(name) if any(name in sc for sc in self.scopes) else safe(name)
        pdims: list[str] = []
        for k, d in enumerate(dims):
            if d.is_const:
                pdims.append(str(pow2(int(d.const))))
            elif d.host is not None:
                pdims.append(self.pad_constexpr(f"P_{var.upper()}_{k}", d.host))
            else:
                raise self.err("buffer extents must be computable on the host", None)
        lanes = tuple(self.scope_lanes) if storage == "local" else ()
        mode = "memory" if key in self.memory else "tile"
        array_mode = self.array_modes.get(key, "ring") if count > 1 and mode == "tile" else None
        if array_mode == "merged":
            # one slot per consumer warpgroup, stacked along the rows: one tile for all consumers
            dims = [X.binary("*", dims[0], const(count), False)] + list(dims[1:])
            pdims = [str(pow2(int(dims[0].const)))] + pdims[1:] if dims[0].is_const else pdims
        buf = Buffer(name, elem, dims, pdims, storage, mode, var, lanes, count, span)
        buf.key = key  # type: ignore[attr-defined]
        buf.array_mode = array_mode  # type: ignore[attr-defined]
        buf.slot = None  # type: ignore[attr-defined]
        if mode == "memory":
            self.setup_scratch(buf)
        else:
            ct = elem  # register tiles hold the buffer's element type (what TMA/MMA move)
            note = ""
            if array_mode == "ring":
                note = f"  # stage ring of {count}: one tile per iteration (the loop's num_stages multi-buffers it)"
            splitting = os.environ.get("CROQ2TRITON_SPLIT", "1") not in ("", "0")
            buf.split = split_spec(dims) if splitting and not lanes and key not in self.no_split else None
            if buf.split is not None:
                d, pieces = buf.split
                sizes = " + ".join(str(sz) for _, sz in pieces)
                for k, (_, size) in enumerate(pieces):
                    pd = [str(size) if i == d else pdims[i] for i in range(len(pdims))]
                    self.w.line(f"{var}_{k} = tl.zeros([{', '.join(pd)}], {X.tl_dtype(ct)}){note}", span)
                self.w.comment(f"'{name}' is {dims[d].const} wide along dim {d}: kept as power-of-two pieces {sizes}")
            else:
                self.w.line(f"{var} = tl.zeros([{', '.join(pdims)}], {X.tl_dtype(ct)}){note}", span)
        return buf

    def setup_scratch(self, buf: Buffer) -> None:
        elems_host = " * ".join(["1"] + [d.host or d.code for d in buf.dims])
        lane_total = "1"
        lane_off = None
        if buf.lanes:
            sizes = [a for a in self.lanes if a.name in buf.lanes]
            lane_total = " * ".join(a.size if a.size_const is not None else self.args[a.size][1] for a in sizes)
            parts = []
            stride = "1"
            for a in reversed(sizes):
                parts.append(f"@LANE[{a.var}] * {stride}" if stride != "1" else f"@LANE[{a.var}]")
                stride = f"{stride} * {a.size}" if stride != "1" else a.size
            lane_off = " + ".join(reversed(parts))
        per_prog = f"({lane_total}) * {buf.count} * ({elems_host})"
        arg = self.arg(f"{buf.var}_scratch", "scratch", per_prog + "|" + X.torch_dtype(buf.elem))
        per = self.arg(f"{buf.var}_per_prog", "int", per_prog)
        pid_lin = self.pid_linear()
        self.w.line(f"{buf.var} = {arg} + ({pid_lin}).to(tl.int64) * {per}", buf.span)
        prod: Val = const(1)
        for d in buf.dims:
            prod = X.binary("*", prod, self.import_val(d), False)
        buf.elems = prod.code  # type: ignore[attr-defined]
        buf.lane_off = lane_off  # type: ignore[attr-defined]

    def pid_linear(self) -> str:
        if len(self.grid) == 1:
            return "tl.program_id(0)"
        out = "tl.program_id(0)"
        mult = "tl.num_programs(0)"
        for i in range(1, len(self.grid)):
            out = f"{out} + tl.program_id({i}) * {mult}"
            mult = f"{mult} * tl.num_programs({i})"
        return out

    def fill_buffer(self, buf: Buffer, v: Val, span: Any) -> None:
        if buf.mode == "tile":
            self.w.line(
                f"{buf.var} = tl.full([{', '.join(buf.pdims)}], {self.store_cast(v, buf.elem)}, {X.tl_dtype(buf.elem)})",
                span,
            )
            return
        region = self.region_for(whole_view(buf), whole_view(buf))
        addr, mask = self.address(whole_view(buf), region)
        self.w.line(
            f"tl.store({addr}, tl.full({region.shape}, {self.cast(v, buf.elem)}, {X.tl_dtype(buf.elem)}), mask={mask})",
            span,
        )
        self.w.line("tl.debug_barrier()")

    # ---------------------------------------------------------------- assignment
    def s_AssignStmt(self, s: A.AssignStmt) -> None:
        for a in s.items:
            self.assign(a, s)

    def assign(self, a: A.Assign, s: A.Stmt) -> None:
        if isinstance(a.target, A.At):
            self.store_element(a, s)
            return
        assert isinstance(a.target, A.Name)
        name = a.target.name
        if isinstance(a.value, A.Call):
            if a.value.kind == "atomic":
                v = self.atomic(a.value, name)
                self.bind_var(name, v, v.ty, s.span, True)
                return
            raise self.err("calls cannot be lowered to Triton", a.value)
        cur = None
        for sc in reversed(self.scopes):
            if name in sc:
                cur = sc[name]
                break
        if a.op != "=" and isinstance(cur, Frag):
            # element-wise update of a whole fragment: acc += bias
            v = self.ev(a.value)
            if not v.uniform:
                raise self.err("a fragment can only be combined with a per-block value here", a)
            vars_ = [f"{cur.var}_{k}" for k in range(len(cur.split[1]))] if cur.split else [cur.var]
            for var in vars_:
                self.w.line(f"{var} = {var} {a.op} ({self.cast(v, cur.compute)})", a.span)
            return
        if a.op != "=":
            if not isinstance(cur, Val):
                raise CroqSemanticError(f"'{name}' is not a mutable scalar", a.span)
            rhs = X.binary(a.op, Val(cur.code, cur.ty, None, cur.axes, None, cur.masks), self.ev(a.value), False)
            self.update_var(name, cur, rhs, a)
            return
        if isinstance(cur, Val) and cur.code in self.decl_types:
            self.update_var(name, cur, self.ev(a.value), a)
            return
        v = self.ev_any(a.value)
        if isinstance(v, Bounded):
            v = v.value
        if isinstance(v, Val) and not v.is_const and v.cons is None:
            var = self.fresh(name)
            self.w.line(f"{var} = {v.code}", a.span)
            self.var_defs[var] = self.var_defs.get(v.code, v.code)
            if v.axes and X.is_int(v.ty) and a.op == "=":
                self.lane_aliases.append((name, a.value))
            v = Val(var, v.ty, None, v.axes, None, v.masks, v.nonneg, v.ub)
        elif isinstance(v, Bounded):
            v = v.value
        self.bind(name, v)

    def update_var(self, name: str, cur: Val, v: Val, node: A.Node) -> None:
        ty = self.decl_types.get(cur.code, cur.ty)
        ct = "f32" if ty in ("f16", "bf16") else X.compute_type(ty)
        val = self.cast(v, ct)
        if v.axes - cur.axes:
            raise self.err(
                f"'{name}' is a per-block value but is assigned a per-thread value",
                node,
                "declare it inside the thread-level parallel",
            )
        if self.pred:
            pm = self.pred_code()
            val = f"tl.where({pm}, {val}, {cur.code})"
        self.w.line(f"{cur.code} = {val}", node.span)

    def pred_code(self) -> str:
        return " & ".join(f"({p.code})" for p in self.pred)

    def store_element(self, a: A.Assign, s: A.Stmt) -> None:
        tgt = a.target
        assert isinstance(tgt, A.At)
        f = frag_base(self, tgt.base)
        if f is not None:
            store_frag_element(self, f, a)
            return
        base = self.ev_any(tgt.base)
        view = self.as_view(base, tgt.base)
        idx = self.indices(tgt.indices, view.rank, tgt)
        value = self.ev(a.value)
        if a.op != "=":
            old = self.load_element(view, idx, tgt)
            value = X.binary(a.op, old, value, False)
        self.store_at(view, idx, value, s)

    # ---------------------------------------------------------------- control flow
    def s_If(self, s: A.If) -> None:
        if isinstance(s.cond, A.Call):
            raise self.err("cannot lower to Triton: a call in a condition", s.cond)
        c = self.ev(s.cond)
        if c.is_const:
            if c.const:
                self.body(s.then)
            elif s.other is not None:
                self.body(s.other)
            return
        if c.uniform and not self.pred:
            with self.w.block(f"if {c.code}:", s.span):
                self.body(s.then)
            if s.other is not None:
                with self.w.block("else:"):
                    self.body(s.other)
            return
        # per-thread condition: predicate the branches
        var = self.fresh("cond")
        self.w.line(f"{var} = {c.code}", s.span)
        cv = Val(var, "bool", None, c.axes, None, c.masks)
        self.pred.append(cv)
        self.body(s.then)
        self.pred.pop()
        if s.other is not None:
            nv = Val(f"(~{var})" if not c.uniform else f"(not {var})", "bool", None, c.axes, None, c.masks)
            if c.uniform:
                nv = Val(f"({var} == 0)", "bool", None, c.axes)
            self.pred.append(nv)
            self.body(s.other)
            self.pred.pop()

    def s_InThreads(self, s: A.InThreads) -> None:
        if s.is_async:
            raise self.err(
                "warp-specialised roles ('inthreads.async') are lowered by the pipeline pass, which is not available yet",
                s,
            )
        c = self.ev(s.cond)
        if c.is_const:
            if c.const:
                self.body(s.body)
            return
        self.pred.append(c)
        if c.uniform:
            with self.w.block(f"if {c.code}:", s.span):
                self.pred.pop()
                self.body(s.body)
            return
        self.body(s.body)
        self.pred.pop()

    def s_While(self, s: A.While) -> None:
        c = self.ev(s.cond)
        if not c.uniform:
            raise self.err("a 'while' condition must be the same for all threads of a block", s.cond)
        with self.w.block(f"while {c.code}:", s.span):
            self.body(s.body)

    def s_Break(self, s: A.Break) -> None:
        raise self.err("'break' cannot be compiled by Triton", s, "restructure the loop with a condition")

    def s_Continue(self, s: A.Continue) -> None:
        raise self.err("'continue' cannot be compiled by Triton", s, "restructure the loop body with 'if'")

    def s_With(self, s: A.With) -> None:
        self.push()
        for wi in s.withins:
            self.bind_within(wi, loop=False)
        self.body(s.body)
        self.pop()

    def bind_within(self, wi: A.Within, loop: bool) -> list[Bounded]:
        bounds = self.shape_extents(wi.shape, wi)
        names = wi.vars if wi.vars is not None else [wi.name]
        out: list[Bounded] = []
        if wi.vars is None and len(bounds) > 1:
            parts = [Bounded(f"{wi.name}_{k}", const(0), b, "with") for k, b in enumerate(bounds)]
            self.bind(wi.name or "_", BoundedTuple(wi.name or "_", parts))
            return parts
        if len(names) != len(bounds):
            raise CroqSemanticError(f"{len(names)} name(s) but a shape of rank {len(bounds)}", wi.span)
        for nm, b in zip(names, bounds):
            bv = Bounded(nm or "_", const(0), b, "with")
            if nm:
                self.bind(nm, bv)
            out.append(bv)
        if wi.vars is not None and wi.name:
            self.bind(wi.name, BoundedTuple(wi.name, out))
        return out

    def shape_extents(self, e: A.Expr, node: A.Node) -> list[Val]:
        v = self.ev_any(e)
        if isinstance(v, Shape):
            return list(v.dims)
        if isinstance(v, Tuple_):
            return list(v.items)
        if isinstance(v, Bounded):
            return [v.value]
        if isinstance(v, Val):
            return [v]
        raise self.err("expected a shape", node)

    def s_Foreach(self, s: A.Foreach) -> None:
        if self.try_dot_loop(s) or self.try_collapse(s):
            return
        self.push()
        loops: list[tuple[str, Val, Val]] = []  # var, lo, hi
        for it in s.items:
            if isinstance(it, A.Within):
                for b in self.bind_within(it, loop=True):
                    loops.append((b.name, const(0), b.bound))
            else:
                target = self.lookup(it.name, it)
                parts = target.parts if isinstance(target, BoundedTuple) else [target]
                for b in parts:
                    if not isinstance(b, Bounded):
                        raise self.err(f"'{it.name}' is not a bounded name", it)
                    lo: Val = const(0)
                    hi: Val = b.bound
                    if it.sliced:
                        if it.lo is not None:
                            lo = self.ev(it.lo)
                        if it.hi is not None:
                            hi = X.binary("+", b.bound, self.ev(it.hi), False)
                        if it.step is not None:
                            raise self.err("range slices with a step cannot be lowered yet", it)
                    loops.append((b.name if it.alias is None else it.alias, lo, hi))
                    if it.alias is not None:
                        self.bind(it.alias, Bounded(it.alias, const(0), b.bound, "loop"))
        self.open_loops(loops, s, s.body)
        self.pop()

    def open_loops(self, loops: list[tuple[str, Val, Val]], s: A.Foreach, body: A.Stmt) -> None:
        if not loops:
            self.body(body)
            return
        name, lo, hi = loops[0]
        var = self.fresh(name.replace(".", "_"))
        self.loop_depth += 1
        try:
            self._open_loop(name, lo, hi, var, loops, s, body)
        finally:
            self.loop_depth -= 1

    def _open_loop(
        self, name: str, lo: Val, hi: Val, var: str, loops: list[tuple[str, Val, Val]], s: A.Foreach, body: A.Stmt
    ) -> None:
        for v in (lo, hi):
            if not v.uniform:
                raise self.err("loop bounds must be the same for every thread of a block", s)
        head = f"for {var} in range({lo.code}, {hi.code}):"
        with self.w.block(head, s.span):
            old = None
            for sc in reversed(self.scopes):
                if name in sc:
                    old = sc[name]
                    break
            bound = old.bound if isinstance(old, Bounded) else hi
            self.push()
            lv = Val(var, "int", None, frozenset(), None, (), lo.nonneg or (lo.is_const and lo.const >= 0), hi)
            self.bind(name, Bounded(name, lv, bound, "loop"))
            # a bounded tuple whose part this is must see the new value
            self.rebind_tuple_part(name, var)
            self.open_loops(loops[1:], s, body)
            self.pop()

    def rebind_tuple_part(self, name: str, var: str) -> None:
        for sc in reversed(self.scopes):
            for k, v in list(sc.items()):
                if isinstance(v, BoundedTuple) and any(p.name == name for p in v.parts):
                    cur = self.lookup_opt(name)
                    parts = [
                        cur
                        if p.name == name and isinstance(cur, Bounded)
                        else Bounded(p.name, Val(var, "int", None, frozenset(), None, (), True), p.bound, "loop")
                        if p.name == name
                        else (self.lookup_opt(p.name) or p)
                        for p in v.parts
                    ]
                    self.scopes[-1][k] = BoundedTuple(v.name, parts)

    def lookup_opt(self, name: str) -> Any:
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        return None

    # ================================================================ expressions
    def ev(self, e: A.Expr) -> Val:
        v = self.ev_any(e)
        if isinstance(v, Bounded):
            return v.value
        if isinstance(v, Collapsed):
            raise self.err("this loop index was folded into a whole-tile MMA and has no value", e)
        if not isinstance(v, Val):
            raise self.err(f"expected a scalar value, found {type(v).__name__.lower()}", e)
        return v

    def ev_any(self, e: A.Expr) -> Any:
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            raise self.err(f"cannot lower '{type(e).__name__}' expressions inside a kernel yet", e)
        try:
            return m(e)
        except X.ConsumerIndexError:
            raise self.err(
                "the index of merged warpgroups is used in a way they cannot share",
                e,
                "merged warpgroups (or consumers) may only select consecutive row blocks: '.chunkat(wg, _)'",
            ) from None

    def e_IntLit(self, e: A.IntLit) -> Val:
        return const(e.value, "int" if e.type == "s32" else e.type)

    def e_FloatLit(self, e: A.FloatLit) -> Val:
        return const(e.value, "f64" if e.double else "f32")

    def e_BoolLit(self, e: A.BoolLit) -> Val:
        return const(e.value)

    def e_InfLit(self, e: A.InfLit) -> Val:
        return const(float("inf"), "f32")

    def e_Paren(self, e: A.Paren) -> Any:
        return self.ev_any(e.expr)

    def e_Name(self, e: A.Name) -> Any:
        return self.lookup(e.name, e)

    def e_UBound(self, e: A.UBound) -> Val:
        v = self.lookup(e.name, e)
        if isinstance(v, (Bounded, Collapsed)):
            return v.bound
        raise CroqSemanticError(f"'#{e.name}' needs a bounded variable", e.span)

    def e_Unary(self, e: A.Unary) -> Val:
        if e.op == "&":
            raise self.err("taking an address cannot be lowered", e)
        v = self.ev(e.operand)
        if v.is_const:
            c = v.const
            return const(-c if e.op == "-" else (not c) if e.op == "!" else ~c if e.op == "~" else c, v.ty)
        if e.op == "-":
            code = f"(-{v.code})"
        elif e.op == "!":
            code = f"({v.code} == 0)"
        elif e.op == "~":
            code = f"(~{v.code})"
        else:
            raise self.err("taking an address cannot be lowered", e)
        return Val(code, "bool" if e.op == "!" else v.ty, None, v.axes, None, v.masks)

    def e_Binary(self, e: A.Binary) -> Any:
        if e.op in ("#", "#+", "#-"):
            return self.bounded(e)
        a = self.ev_any(e.lhs)
        b = self.ev_any(e.rhs)
        if isinstance(a, (Shape, Tuple_)) or isinstance(b, (Shape, Tuple_)):
            return self.shape_arith(e.op, a, b, e)
        if isinstance(a, Bounded):
            a = a.value
        if isinstance(b, Bounded):
            b = b.value
        if not isinstance(a, Val) or not isinstance(b, Val):
            raise self.err("operands must be scalars", e)
        return self.arith(e.op, a, b)

    def arith(self, op: str, a: Val, b: Val) -> Val:
        ca, cb = X.compute_type(a.ty), X.compute_type(b.ty)
        if ca != a.ty and not a.is_const:
            a = Val(f"{a.code}.to({X.tl_dtype(ca)})", ca, None, a.axes, None, a.masks, a.nonneg)
        if cb != b.ty and not b.is_const:
            b = Val(f"{b.code}.to({X.tl_dtype(cb)})", cb, None, b.axes, None, b.masks, b.nonneg)
        if op == "/" and X.is_float(a.ty) and X.is_int(b.ty) and not b.is_const:
            b = Val(f"{b.code}.to({X.tl_dtype(a.ty)})", a.ty, None, b.axes, None, b.masks)
        return X.binary(op, a, b, False)

    def shape_arith(self, op: str, a: Any, b: Any, e: A.Node) -> Shape:
        return X.shape_arith(op, a, b, e.span, False)

    def bounded(self, e: A.Expr) -> Bounded:
        """Evaluate an expression that denotes a bounded integer (``p # q``, ``x #- 1``, ``y(-1)``)."""
        if isinstance(e, A.Paren):
            return self.bounded(e.expr)
        if isinstance(e, A.Binary) and e.op == "#":
            a, b = self.bounded(e.lhs), self.bounded(e.rhs)
            val = X.binary("+", X.binary("*", a.value, b.bound, False), b.value, False)
            return Bounded(f"{a.name}#{b.name}", val, X.binary("*", a.bound, b.bound, False), "composed")
        if isinstance(e, A.Binary) and e.op in ("#+", "#-"):
            a = self.bounded(e.lhs)
            c = self.ev(e.rhs)
            return Bounded(a.name, a.value, X.binary(e.op[1], a.bound, c, False), a.kind)
        if isinstance(e, A.Binary) and e.op in ("+", "-") and isinstance(e.rhs, (A.IntLit, A.Paren, A.Name)):
            lhs = self.ev_any(e.lhs)
            if isinstance(lhs, Bounded):
                # 'a + c', 'a - 1': the value moves, the bound stays #a (LANGUAGE.md 7.2)
                return Bounded(lhs.name, X.binary(e.op, lhs.value, self.ev(e.rhs), False), lhs.bound, lhs.kind)
        if isinstance(e, A.GetIth):
            base = self.ev_any(e.base)
            if isinstance(base, Bounded):
                return Bounded(base.name, self.ev(e), base.bound, base.kind)
        v = self.ev_any(e)
        if isinstance(v, Bounded):
            return v
        if isinstance(v, Collapsed):
            return v  # type: ignore[return-value]
        if isinstance(v, Val):
            return Bounded("_", v, v, "value")
        raise self.err("expected a bounded index", e)

    def e_Ternary(self, e: A.Ternary) -> Val:
        c, a, b = self.ev(e.cond), self.ev(e.then), self.ev(e.other)
        if c.is_const:
            return a if c.const else b
        ty = a.ty if a.ty == b.ty else X.promote(a.ty, b.ty)
        code = f"tl.where({c.code}, {a.code}, {b.code})"
        return Val(
            code,
            ty,
            None,
            c.axes | a.axes | b.axes,
            None,
            tuple(dict.fromkeys(c.masks + a.masks + b.masks)),
            a.nonneg and b.nonneg,
        )

    def e_Builtin(self, e: A.Builtin) -> Val:
        if e.name == "cdiv":
            return X.cdiv(self.ev(e.args[0]), self.ev(e.args[1]), False)
        args = [self.ev(a) for a in e.args]
        if e.name in ("__alignup", "__aligndown"):
            x, a = args
            if e.name == "__alignup":
                return X.binary("*", X.cdiv(x, a, False), a, False)
            return X.binary("*", X.binary("/", x, a, False), a, False)
        fn = MATH.get(e.name)
        if fn is None:
            raise self.err(f"the builtin '{e.name}' cannot be lowered yet", e)
        ty = "f32"
        for a in args:
            if X.is_float(a.ty) and a.ty == "f64":
                ty = "f64"
        if e.name in ("__max", "__min"):
            ty = args[0].ty if args[0].ty == args[1].ty else X.promote(args[0].ty, args[1].ty)
        codes = [a.code if (e.name in ("__max", "__min") or a.ty == ty) else f"({self.cast(a, ty)})" for a in args]
        if e.name in ("__max", "__min") and all(a.uniform for a in args) and all(a.is_const for a in args):
            v = max(a.const for a in args) if e.name == "__max" else min(a.const for a in args)
            return const(v, ty)
        axes = frozenset().union(*[a.axes for a in args])
        masks = tuple(dict.fromkeys(m for a in args for m in a.masks))
        return Val(f"{fn}({', '.join(codes)})", ty, None, axes, None, masks)

    def e_Cast(self, e: A.Cast) -> Val:
        v = self.ev(e.expr)
        if e.is_string:
            raise self.err("'__to<\"C type\">' casts cannot be lowered", e)
        if unlowerable_reason(e.type):
            raise self.err(f"cannot lower to Triton: {unlowerable_reason(e.type)}", e)
        if v.is_const:
            return const(int(v.const) if X.is_int(e.type) else float(v.const), e.type)
        return Val(f"({v.code}).to({X.tl_dtype(e.type)})", e.type, None, v.axes, None, v.masks)

    def e_SizeOf(self, e: A.SizeOf) -> Val:
        if e.expr is None:
            return const(TYPES[e.elem or "s32"].nbytes)
        v = self.ev_any(e.expr)
        dims = v.dims if isinstance(v, Shape) else self.dims_of(v, e)
        out: Val = const(1)
        for d in dims:
            out = X.binary("*", out, d, False)
        return out

    def dims_of(self, v: Any, node: A.Node) -> list[Val]:
        if isinstance(v, Future):
            v = v.data
        if isinstance(v, (Tensor, Buffer)):
            return [self.import_val(d) for d in v.dims]
        if isinstance(v, View):
            if v.reshaped is not None:
                return list(v.reshaped)
            return [d.extent for d in v.dims if not d.squeezed]
        if isinstance(v, Tile):
            return list(v.dims)
        if isinstance(v, Shape):
            return list(v.dims)
        raise self.err("this has no shape", node)

    def e_Member(self, e: A.Member) -> Any:
        base = self.ev_any(e.base)
        if e.member == "span":
            return Shape(self.dims_of(base, e))
        if e.member == "data":
            if isinstance(base, Future):
                if base.data is None:
                    raise self.err("this future has no data", e)
                return base.data
            return base
        raise self.err(f"'.{e.member}' cannot be lowered", e)

    def e_GetIth(self, e: A.GetIth) -> Any:
        base = self.ev_any(e.base)
        idx = self.ev(e.index)
        if not idx.is_const:
            raise self.err("a dimension index must be a constant", e.index)
        k = int(idx.const)
        if isinstance(base, Shape):
            return _pick(base.dims, k, e)
        if isinstance(base, Tuple_):
            return _pick(base.items, k, e)
        if isinstance(base, BoundedTuple):
            return _pick([p for p in base.parts], k, e)  # type: ignore[misc]
        if isinstance(base, Bounded):
            if k >= 0:
                return const(k)
            return X.binary("+", base.bound, const(k), False)
        raise self.err("'x(k)' needs a shape, an ituple or a bounded index", e)

    def e_MdspanLit(self, e: A.MdspanLit) -> Shape:
        return Shape(self.shape_list(e.items, e))

    def e_ItupleLit(self, e: A.ItupleLit) -> Tuple_:
        return Tuple_([self.ev(x) for x in e.items])

    def e_Index(self, e: A.Index) -> Any:
        base = self.ev_any(e.base)
        if isinstance(base, tuple) and base and base[0] == "event":
            return base
        if isinstance(base, Buffer):
            if len(e.indices) != 1:
                raise self.err("a buffer array takes one index", e)
            idx = self.ev(e.indices[0])
            key = getattr(base, "key", base.name)
            if idx.cons is not None:
                cb, coefs = idx.cons
                if len(coefs) != 1 or coefs[0][1] != 1 or not (cb.is_const and cb.const == 0):
                    raise self.err("consumer c must use buffer c of this array", e)
                if base.mode != "tile" or base.count != self.cons_counts.get(coefs[0][0]):
                    raise self.err("an array indexed by the consumer index must have one buffer per consumer", e)
                if self.array_modes.get(key) != "merged":
                    self.array_modes[key] = "merged"
                    self.changed = True
                v = whole_view(base)
                v.dims[0].owner = coefs[0][0]  # consumer c's buffer: row block c of the stacked tile
                return v
            v = whole_view(base)
            if base.count == 1:
                if idx.is_const and idx.const != 0:
                    raise CroqSemanticError(f"index {idx.const} is out of range for an array of 1 buffer", e.span)
                return v  # the only element (a stage ring or consumer array of size 1)
            v.index = idx
            base.index_texts[idx.code] = Printer().expr(e.indices[0])  # for diagnostics
            return v
        if isinstance(base, Shape):
            out = []
            for x in e.indices:
                if isinstance(x, A.Paren) and isinstance(x.expr, A.IntLit):
                    out.append(_pick(base.dims, x.expr.value, x))
                else:
                    out.append(self.ev(x))
            return Shape(out)
        raise self.err("indexing with [...] needs a buffer array or a shape", e)

    def e_At(self, e: A.At) -> Any:
        f = frag_base(self, e.base)
        if f is not None:
            return frag_element(self, f, e)
        base = self.ev_any(e.base)
        if isinstance(base, tuple) and base and base[0] == "event":
            return base
        view = self.as_view(base, e.base)
        idx = self.indices(e.indices, view.rank, e)
        return self.load_element(view, idx, e)

    def e_View(self, e: A.View) -> View:
        base = self.ev_any(e.base)
        view = self.as_view(base, e.base)
        for op in e.ops:
            before = list(view.dims)
            view = self.apply_op(view, op)
            keep_owned(self, before, view, op)
            if self.cons_counts:
                view = self.merge_consumers(view, op)
        return view

    def e_Select(self, e: A.Select) -> Any:
        """``select(i, f0, f1, ...)``: future ``f_i`` (zero-based, LANGUAGE.md 7.8). A constant
        index picks the future itself; a run-time one picks between register tiles of the same
        type and shape (out-of-range indices give the last one: the source leaves them undefined)."""
        opts = [self.ev_any(x) for x in e.options]
        idx = self.ev(e.index)
        if idx.is_const:
            k = int(idx.const)
            if not 0 <= k < len(opts):
                raise self.err(f"select index {k} is out of range for {len(opts)} choices", e.index)
            return opts[k]
        bufs: list[Buffer] = []
        for x, v in zip(e.options, opts, strict=True):
            data = v.data if isinstance(v, Future) else v
            if not isinstance(data, Buffer) or data.mode != "tile" or data.split is not None:
                raise self.err("a run-time 'select' needs futures whose data are register tiles", x)
            bufs.append(data)
        first = bufs[0]
        if any(
            (b.elem, [d.code for d in b.dims], b.pdims, b.lanes)
            != (first.elem, [d.code for d in first.dims], first.pdims, first.lanes)
            for b in bufs[1:]
        ):
            raise self.err("'select' needs futures of the same element type and shape", e)
        code = bufs[-1].var
        for k in range(len(bufs) - 2, -1, -1):
            code = f"tl.where({idx.code} == {k}, {bufs[k].var}, {code})"
        var = self.fresh("select")
        self.w.line(f"{var} = {code}", e.span)
        buf = Buffer(var, first.elem, first.dims, first.pdims, first.storage, "tile", var, first.lanes, span=e.span)
        buf.written = True
        return Future(var, buf, any(isinstance(v, Future) and v.is_async for v in opts))

    def e_IncDec(self, e: A.IncDec) -> Val:
        raise self.err("'++'/'--' are lowered by the pipeline pass (event rings), not available yet", e)

    def indices(self, items: list[A.Expr], rank: int, node: A.Node, collapsed: bool = False) -> list[Any]:
        """Index values (a bounded tuple counts as one index per component); ``Collapsed`` kept if asked."""
        out: list[Any] = []
        for x in items:
            v = self.ev_any(x)
            if isinstance(v, Collapsed) and collapsed:
                out.append(v)
            elif isinstance(v, BoundedTuple):
                out.extend(p.value for p in v.parts)
            elif isinstance(v, Tuple_):
                out.extend(v.items)
            elif isinstance(v, Bounded):
                out.append(v.value)
            elif isinstance(v, Val):
                out.append(v)
            else:
                raise self.err("an index must be an integer", x)
        if len(out) != rank:
            raise CroqSemanticError(f"{len(out)} index(es) for data of rank {rank}", node.span)
        return out

    # ================================================================ views
    def as_view(self, base: Any, node: A.Node) -> View:
        if isinstance(base, Future):
            if base.data is None:
                raise self.err("this future has no data", node)
            base = base.data
        if isinstance(base, View):
            return base
        if isinstance(base, Tensor):
            self.tensor(base)
            v = whole_view(base)
            v.dims = [ViewDim(const(0), d, None, []) for d in self.tdims(base)]
            return v
        if isinstance(base, Buffer):
            v = whole_view(base)
            for d, o in zip(v.dims, base.owners):
                d.owner = o  # a buffer copied into by merged units holds their blocks
            return v
        if isinstance(base, Tile):
            return whole_view(base)
        raise self.err("expected a tensor, a buffer or a view", node)

    def apply_op(self, view: View, op: A.ViewOp) -> View:
        k = op.kind
        if k == "zfill":
            view.zfill = True
            return view
        if k == "span_as":
            dims = self.shape_list(op.args, op)
            return span_as_view(view, dims, op, self.fl)
        live = [d for d in view.dims if not d.squeezed]
        new = [ViewDim(d.origin, d.extent, d.step, list(d.limits), d.squeezed, d.owner) for d in view.dims]
        live_new = [d for d in new if not d.squeezed]
        if k == "sqz":
            for d in live_new:
                if d.extent.is_const and d.extent.const == 1:
                    d.squeezed = True
            return View(view.root, new, view.reshaped, view.zfill, view.index)
        if k == "chunkat":
            args = self.chunk_args(op.args, op)
            if len(args) != len(live):
                raise CroqSemanticError(f"chunkat takes {len(live)} indices here, {len(args)} given", op.span)
            for d, a in zip(live_new, args):
                if a is None:
                    continue
                if isinstance(a, Collapsed):
                    continue
                chunk = X.binary("/", d.extent, a.bound, False)
                d.origin = X.binary("+", d.origin, X.binary("*", a.value, chunk, False), False)
                d.extent = chunk
            return View(view.root, new, view.reshaped, view.zfill, view.index)
        if k in ("chunk",):
            facs = [self.ev(x) for x in op.args]
            ats = self.indices(op.at or [], len(facs), op)
            for d, f, i in zip(live_new, facs, ats):
                chunk = X.binary("/", d.extent, f, False)
                d.origin = X.binary("+", d.origin, X.binary("*", i, chunk, False), False)
                d.extent = chunk
            return View(view.root, new, view.reshaped, view.zfill, view.index)
        if k in ("subspan", "view"):
            if op.strides is not None:
                raise self.err(f"'.{k}' with explicit strides cannot be lowered yet", op)
            if len(op.args) != len(live):
                raise self.err(f"'.{k}' that changes the rank cannot be lowered yet", op)
            exts = [d.extent if _is_wild(x) else self.ev(x) for x, d in zip(op.args, live_new)]
            at_items: list[Any] = [None] * len(live)
            if op.at is not None:
                at_items = self.indices(op.at, len(live), op, collapsed=True)
            steps = [self.ev(x) for x in op.step] if op.step is not None else None
            root_dims = view.reshaped if view.reshaped is not None else self.dims_of(view.root, op)
            for j, (d, ext) in enumerate(zip(live_new, exts)):
                whole_parent = _covers_root(d, root_dims[j] if j < len(root_dims) else None)
                parent_end = None if whole_parent else X.binary("+", d.origin, d.extent, False)
                a = at_items[j]
                if isinstance(a, Collapsed):
                    if not (
                        ext.is_const
                        and a.bound.is_const
                        and d.extent.is_const
                        and ext.const * a.bound.const == d.extent.const
                    ):
                        raise self.err("this K loop does not split the tile exactly; it cannot be folded", op)
                    continue
                if a is not None:
                    if k == "view":
                        off = a
                    else:
                        mult = steps[j] if steps is not None else ext
                        off = X.binary("*", a, mult, False)
                    d.origin = X.binary("+", d.origin, off, False)
                if parent_end is not None and not (a is None and k == "subspan"):
                    d.limits.append(parent_end)
                d.extent = ext
            return View(view.root, new, view.reshaped, view.zfill, view.index)
        raise self.err(f"'.{k}' views cannot be lowered yet", op)

    def merge_consumers(self, view: View, node: A.Node) -> View:
        """A window selected by the consumer index: consumer c owns block c; all consumers together own
        ``C`` consecutive blocks, i.e. one window ``C`` times as large."""
        for d in view.dims:
            if d.origin.cons is None:
                continue
            base, coefs = d.origin.cons
            ext = d.extent
            if len(coefs) != 1 or not (ext.is_const and coefs[0][1] == ext.const):
                raise self.err(
                    "merged warpgroups (or consumers) must own consecutive blocks of this view",
                    node,
                    "index the block with the unit's index: '.subspan(M, K).at(cidx, k)' or '.chunkat(m # g, k)'",
                )
            d.origin = base
            d.extent = const(int(ext.const) * self.cons_counts[coefs[0][0]])
            d.owner = coefs[0][0]
        return view

    def chunk_args(self, items: list[A.Expr], node: A.Node) -> list[Any]:
        out: list[Any] = []
        for x in items:
            if _is_wild(x):
                out.append(None)
                continue
            v = self.ev_any(x) if not isinstance(x, (A.Binary, A.GetIth)) else self.bounded(x)
            if isinstance(v, BoundedTuple):
                out.extend(v.parts)
            elif isinstance(v, (Collapsed, Bounded)):
                out.append(v)
            elif isinstance(v, Val):
                raise self.err("chunkat needs bounded indices (parallel or loop variables)", x)
            else:
                raise self.err("chunkat needs bounded indices", x)
        return out

    # ================================================================ element access
    def root_info(self, view: View, lane_t: int = 0) -> tuple[str, list[str], list[Val], str]:
        """(base pointer code, strides, root extents, element type) of a view's storage."""
        root = view.root
        if isinstance(root, Tensor):
            self.tensor(root)
            return root.ptr, list(root.strides), self.tdims(root), root.elem
        if isinstance(root, Buffer):
            if root.mode != "memory":
                self.need_memory(root)
            dims = [self.import_val(d) for d in root.dims]
            strides: list[str] = []
            acc: Val = const(1)
            for d in reversed(dims):
                strides.append(acc.code)
                acc = X.binary("*", acc, d, False)
            strides.reverse()
            base = root.var
            lane_off = getattr(root, "lane_off", None)
            elems = getattr(root, "elems", "1")
            if lane_off:
                if lane_t:
                    lane_off = lane_off.replace("@LANE[", f"@LANE_T{lane_t}[")
                per_lane = X.binary("*", const(root.count), Val(elems, "int"), False).code
                base = f"{base} + ({lane_off}) * {per_lane}"
            if view.index is not None:
                base = f"{base} + ({view.index.code}) * {elems}"
            return base, strides, dims, root.elem
        raise self.err("register tiles cannot be addressed element by element", None)

    def need_padded(self, buf: Buffer) -> None:
        """A tile kept as power-of-two pieces is used whole in a way pieces cannot serve: the
        next pass keeps it as one padded tile."""
        key = getattr(buf, "key", buf.name)
        if key not in self.no_split:
            self.no_split.add(key)
            self.changed = True

    def need_memory(self, buf: Buffer) -> None:
        key = getattr(buf, "key", buf.name)
        if key not in self.memory:
            self.memory.add(key)
            self.changed = True

    @staticmethod
    def known_lt(i: Val, ext: Val) -> bool:
        """Is ``i < ext`` provable at translation time?"""
        if i.is_const and ext.is_const:
            return bool(i.const < ext.const)
        ub = i.ub
        if ub is None:
            return False
        if ub.is_const and ext.is_const:
            return bool(ub.const <= ext.const)
        return ub.code == ext.code

    def coords(self, view: View, idx: list[Val]) -> tuple[list[Val], list[str]]:
        """Root coordinates and mask terms of ``view`` at indices ``idx`` (one per live dim)."""
        masks: list[str] = []
        live = [d for d in view.dims if not d.squeezed]
        if view.reshaped is not None:
            # dense reinterpretation of the whole root: a flat index
            flat: Val = const(0)
            it0 = iter(idx)
            for d, (dim, vd) in enumerate(zip(view.reshaped, view.dims)):
                i = vd.origin if vd.squeezed else next(it0)
                c = i if vd.squeezed else X.binary("+", vd.origin, i, False)
                flat = X.binary("+", X.binary("*", flat, dim, False), c, False) if d else c
                if not vd.squeezed and not self.known_lt(i, vd.extent):
                    masks.append(f"({i.code} < {vd.extent.code})")
                for lim in vd.limits:
                    masks.append(f"({c.code} < {lim.code})")
            return [flat], masks
        out: list[Val] = []
        it = iter(idx)
        for d in view.dims:
            if d.squeezed:
                out.append(d.origin)
                continue
            i = next(it)
            c = X.binary("+", d.origin, X.binary("*", i, d.step, False) if d.step is not None else i, False)
            out.append(c)
            t = self.bound_term(i, d.extent)
            if t:
                masks.append(t)
            for lim in d.limits:
                masks.append(f"({c.code} < {lim.code})")
            if not i.nonneg and not (i.is_const and i.const >= 0):
                masks.append(f"({i.code} >= 0)")
            elif not c.nonneg and not (c.is_const and c.const >= 0):
                masks.append(f"({c.code} >= 0)")  # a window that may start before the tensor (.from(p * 128 - 1))
        _ = live
        return out, masks

    def address(self, view: View, region: Region) -> tuple[str, str]:
        base, strides, rdims, _ = self.root_info(view, region.T if region.L else 0)
        idx = region.index_vals()
        coords, masks = self.coords(view, idx)
        return self.pointer(view, base, strides, rdims, coords, masks + region.masks)

    def pointer(
        self, view: View, base: str, strides: list[str], rdims: list[Val], coords: list[Val], masks: list[str]
    ) -> tuple[str, str]:
        terms: list[str] = []
        allm = list(masks)
        if view.reshaped is not None:
            if isinstance(view.root, Tensor):
                # contiguous (checked by the launcher): flat index is the element offset
                self.contiguous(view.root)
            terms.append(coords[0].code)
            for mm in coords[0].masks:
                allm.append(mm)
        else:
            for c, s, rd in zip(coords, strides, rdims):
                terms.append(f"({c.code}) * {s}" if s != "1" else f"({c.code})")
                t = self.bound_term(c, rd)
                if t:
                    allm.append(t)
                allm.extend(c.masks)
        for p in self.pred:
            allm.append(f"({p.code})")
        addr = base + "".join(f" + {t}" for t in terms)
        mask = " & ".join(dict.fromkeys(allm)) if allm else "None"
        return addr, mask

    def contiguous(self, t: Tensor) -> None:
        self.args.setdefault(
            f"_contig_{t.name}", ("check", f"_rt.require_contiguous(_F, {t.host_name!r}, {t.host_name})")
        )

    def lane_identity(self, view: View, idx: list[Val]) -> Buffer | None:
        """``buf.at(i, j)`` where (i, j) are exactly the kernel's lane indices over a
        register tile of the same shape: the access is the whole tile."""
        root = view.root
        if not isinstance(root, Buffer) or root.mode != "tile" or root.count != 1 or root.lanes:
            return None
        if view.index is not None or not view.whole() or len(idx) != len(self.lanes) or not idx:
            return None
        for d, (i, ax) in enumerate(zip(idx, self.lanes)):
            if i.code != f"@LANE[{ax.var}]" or root.pdims[d] != ax.size:
                return None
            rd = root.dims[d]
            if not (rd.code == ax.extent.code or (rd.is_const and ax.extent.is_const and rd.const == ax.extent.const)):
                return None
        return root

    def load_element(self, view: View, idx: list[Val], node: A.Node) -> Val:
        buf = self.lane_identity(view, idx)
        if buf is not None:
            axes = frozenset(a.name for a in self.lanes)
            return Val(buf.var, buf.elem, None, axes, None, tuple(self.lane_masks(axes)))
        base, strides, rdims, elem = self.root_info(view)
        self.global_read(view.root)
        coords, masks = self.coords(view, idx)
        for i in idx:
            masks.extend(i.masks)
        addr, mask = self.pointer(view, base, strides, rdims, coords, masks)
        axes = frozenset().union(*[i.axes for i in idx]) if idx else frozenset()
        zero = "0.0" if X.is_float(elem) else "0"
        # the OOB sanitizer marks reads outside the tensor, but not in a lifted dot: there masked
        # elements are the K padding of the last step (must be zero) or rows whose results are dropped
        sanitize = not getattr(self, "dot_mode", False)
        sanitized = X.is_float(elem) and isinstance(view.root, Tensor) and not view.zfill and sanitize
        code, span = self.masked_load(addr, mask, zero, sanitized, node.span)
        v = Val(code, elem, None, axes, None, tuple(dict.fromkeys(m for i in idx for m in i.masks)))
        var = self.fresh("v")
        self.w.line(f"{var} = {v.code}", span)
        return Val(var, elem, None, axes, None, v.masks)

    def masked_load(self, addr: str, mask: str, zero: str, sanitized: bool, span: Any) -> tuple[str, Any]:
        """The load of ``addr`` under ``mask`` and the span its line carries. Where the OOB sanitizer
        reads the mask too it is named once first (with the pointers, so the load is one line), and
        that line carries the span."""
        if mask == "None":
            return f"tl.load({addr})", span
        if not sanitized:
            return f"tl.load({addr}, mask={mask}, other={zero})", span
        named, ptrs = self.fresh("mask"), self.fresh("ptrs")
        self.w.line(f"{named} = {mask}", span)
        self.w.line(f"{ptrs} = {addr}")
        return f"_oob_fill(tl.load({ptrs}, mask={named}, other={zero}), {named})", None

    def store_at(self, view: View, idx: list[Val], value: Val, s: A.Stmt) -> None:
        buf = self.lane_identity(view, idx)
        if buf is not None:
            ct = buf.elem
            val = self.store_cast(value, ct)
            if value.uniform:
                val = f"tl.full([{', '.join(buf.pdims)}], {val}, {X.tl_dtype(ct)})"
            if self.pred:
                val = f"tl.where({self.pred_code()}, {val}, {buf.var})"
            self.w.line(f"{buf.var} = {val}", s.span)
            return
        base, strides, rdims, elem = self.root_info(view)
        coords, masks = self.coords(view, idx)
        for i in idx:
            masks.extend(i.masks)
        masks.extend(value.masks)
        addr, mask = self.pointer(view, base, strides, rdims, coords, masks)
        val = self.cast(value, elem)
        if X.compute_type(elem) != elem or not value.is_const:
            val = f"({val}).to({X.tl_dtype(elem)})" if value.ty != elem or X.compute_type(elem) != elem else val
        with self.fenced_store(view.root):
            store = f"tl.store({addr}, {val}, mask={mask})" if mask != "None" else f"tl.store({addr}, {val})"
            self.w.line(store, s.span)

    @contextmanager
    def fenced_store(self, root: Any) -> Iterator[None]:
        """Block barriers around a store the block's threads must see: after every store to a
        scratch buffer; before and after one to a global tensor the program also reads (the
        threads own different elements, and a later read, e.g. the next loop iteration's, must
        see the whole block's writes)."""
        hazard = False
        if isinstance(root, Tensor):
            if root.name not in self.global_writes and root.name in self.global_reads:
                self.changed = True  # reads of it before this store may not use TMA (rerun the pass)
            self.global_writes.add(root.name)
            hazard = root.name in self.global_reads
        if hazard:
            self.w.line("tl.debug_barrier()  # this program also reads the tensor: earlier reads finish first")
        yield
        if isinstance(root, Buffer) or hazard:
            self.w.line("tl.debug_barrier()")

    def global_read(self, root: Any) -> None:
        """Record a read of a global tensor (see ``fenced_store``). The sets persist across the
        fixpoint passes: a read met after a store to the same tensor reruns the pass."""
        if not isinstance(root, Tensor):
            return
        if root.name not in self.global_reads:
            self.global_reads.add(root.name)
            if root.name in self.global_writes:
                self.changed = True

    def atomic(self, c: A.Call, result: str | None) -> Val:
        if not isinstance(c.args[0], A.At):
            raise self.err("an atomic needs an element 'x.at(...)' as its first argument", c)
        tgt = c.args[0]
        view = self.as_view(self.ev_any(tgt.base), tgt.base)
        idx = self.indices(tgt.indices, view.rank, tgt)
        base, strides, rdims, elem = self.root_info(view)
        coords, masks = self.coords(view, idx)
        addr, mask = self.pointer(view, base, strides, rdims, coords, masks)
        op = c.name.replace("__atomic_", "")
        args = [self.ev(a) for a in c.args[1:]]
        fn = {"add": "tl.atomic_add", "sub": "tl.atomic_add", "exch": "tl.atomic_xchg", "min": "tl.atomic_min",
              "max": "tl.atomic_max", "and": "tl.atomic_and", "or": "tl.atomic_or", "xor": "tl.atomic_xor",
              "cas": "tl.atomic_cas"}[op]  # fmt: skip
        vals = [self.cast(a, elem) for a in args]
        if op == "sub":
            vals = [f"-({vals[0]})"]
        var = self.fresh("old")
        axes = frozenset().union(*[i.axes for i in idx], *[a.axes for a in args])
        at_axes = frozenset().union(*[i.axes for i in idx])
        if op != "cas":
            # one element for lanes whose values or conditions differ (sum.at(0) += x.at(p # t)):
            # every lane does its own atomic, so the address is broadcast to them
            if axes - at_axes:
                addr = f"{addr} + tl.zeros_like({vals[0]}).to(tl.int32)"
            if not at_axes and mask != "None":
                addr = f"{addr} + tl.zeros_like({mask}).to(tl.int32)"
        if op == "cas" and (axes or mask != "None"):
            cmp, new = vals
            if mask != "None":
                # lanes outside the data compare-and-swap 0 for 0 at the tensor's first element: no write
                addr, cmp, new = (f"tl.where({mask}, {x}, {y})" for x, y in ((addr, base), (cmp, 0), (new, 0)))
            self.w.line(f"{var} = _atomics.cas({addr}, {cmp}, {new})", c.span)
        elif op == "cas":
            self.w.line(f"{var} = {fn}({addr}, {vals[0]}, {vals[1]})", c.span)
        else:
            self.w.line(f"{var} = {fn}({addr}, {vals[0]}, mask={mask})", c.span)
        return Val(var, elem, None, axes)

    # ================================================================ tiles: DMA / TMA / MMA
    from .frags import s_Apply, s_FragDecl, s_FragOp  # noqa: E402
    from .pipeline import bind_role, lower_pipeline  # noqa: E402
    from .tiles import (  # noqa: E402  (the tile half of the class lives in tiles.py)
        collapse_ok,
        fl_dim,
        lookup_frag,
        read_tile,
        region_for,
        s_DmaAny,
        s_DmaStmt,
        s_FragInit,
        s_MapStmt,
        s_MmaFill,
        s_MmaLoad,
        s_MmaOp,
        s_MmaScale,
        s_MmaStore,
        tile_of,
        tma_plan,
        try_collapse,
        try_dot_loop,
        write_tile,
    )

    # ================================================================ output
    def finish(self, text: str) -> str:
        """Spell lane placeholders in the final layout (one dim per lane axis)."""
        import re

        def lane(m: re.Match[str]) -> str:
            a = self.lane_by_key[m.group(3)]
            extra = int(m.group(2) or 0)
            suffix = self.layout_suffix(a.index, extra)
            if m.group(1) == "LANEMASK":
                return f"({a.var} < {a.extent.code})" + suffix
            return a.var + suffix

        return re.sub(r"@(LANE|LANEMASK)(?:_T(\d+))?\[([^\]]+)\]", lane, text)

    def source(self) -> str:
        params = [n for n, (kind, _) in self.args.items() if kind not in ("check", "constexpr")]
        params += [f"{n}: tl.constexpr" for n, (kind, _) in self.args.items() if kind == "constexpr"]
        body = self.finish(self.w.text())
        if "@CLUSTER" in body:
            raise CroqLoweringError(
                "the cluster index cannot be lowered (Triton programs are not grouped into clusters)", self.top.span
            )
        if "@CONS(" in body:
            raise CroqLoweringError(
                "the consumer warpgroup index is used in a way that several consumers cannot share",
                self.top.span,
                "consumers may only select row blocks of tiles and outputs (e.g. '.subspan(M, K).at(cidx, k)')",
            )
        head = f"@triton.jit\ndef {self.name}({', '.join(params)}):"
        where = f"{self.fl.src_name}:{self.top.span.line if self.top.span else 0}"
        text = f"Program = one block of `parallel` at {where}"
        fm, fn = self.coarsened
        if fm * fn > 1:
            text = (
                f"Program = {fm} x {fn} neighbouring blocks of `parallel` at {where}"
                " (coarsened: a larger lifted dot, for Hopper wgmma and operand reuse)"
            )
        if self.retiled is not None:
            new = " x ".join(_tile_text(x) for x in self.top.levels[0].bound)
            old = " x ".join(str(t) for t in self.retiled)
            text += (
                f", re-tiled by --schedule auto: {new} output tiles instead of {old}"
                " (the same sums per element; lower/retile.py)"
                + (f"; launched when {self.retile_guard}" if self.retile_guard else "")
            )
        if self.k_split:
            tk, step = self.k_split
            text += f"; --schedule auto stages its {tk}-wide K tiles as {tk // step} steps of {step} (lower/ksplit.py)"
        doc = f'    """{text}."""'
        return "\n".join([head, doc, body])

    def num_warps(self) -> int:
        if self.fl.schedule == "auto" and self.has_dot:
            big = any(
                int(p[0]) * int(p[1]) >= 128 * 128
                for _, p, *_ in self.frag_shapes.values()
                if all(x.isdigit() for x in p)
            ) or (self.threads >= 128 * 128)  # a coarsened thread-level dot of 128 x 128
            return 8 if big else 4
        if self.pipelined or getattr(self, "merged_units", 0):
            n = min(8, pow2(4 * max(1, getattr(self, "max_consumers", 1))))
            # one warpgroup per consumer, except where one warpgroup holds the whole merged
            # accumulator in <= 192 f32 registers a thread: measured faster for v4's 2 x 64 rows
            # x 192 columns (0.82 of cuBLAS at 8192^3 with 4 warps, 0.72 with 8; perf/RESULTS.md)
            elems = [
                int(p[0]) * int(p[1])
                for _, p, *_ in self.frag_shapes.values()
                if len(p) == 2 and all(x.isdigit() for x in p)
            ]
            if n == 8 and elems and max(elems) <= 128 * 192 and self.fl.schedule != "auto":
                n = 4
            return n
        t = max(1, self.threads)
        w = pow2(max(1, (t + 31) // 32))
        lo = 4 if self.has_dot else 1
        return max(lo, min(8, w))

    def launch_lines(self) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        call_args: list[str] = []
        kw: list[str] = []
        for name, (kind, host) in self.args.items():
            if kind == "check":
                out.append((host, None))
                continue
            if kind == "scratch":
                per, dtype = host.split("|")
                grid_total = " * ".join(f"({g})" for g in self.grid)
                var = f"_{self.name}_{name}"
                out.append((f"{var} = _rt.scratch(_F, ({grid_total}) * ({per}), {dtype}, _dev)", None))
                call_args.append(var)
            elif kind == "constexpr":
                if host.isdigit():
                    kw.append(f"{name}={host}")
                    continue
                var = f"_{self.name}_{name}"
                out.append((f"{var} = {host}", None))
                kw.append(f"{name}={var}")
            elif kind == "desc":
                for cname, (ck, _) in self.args.items():
                    if ck == "constexpr":
                        host = host.replace(cname, f"_{self.name}_{cname}")
                out.append((f"_{self.name}_{name} = {host}", None))
                call_args.append(f"_{self.name}_{name}")
            else:
                call_args.append(host)
        grid = "(" + ", ".join(self.grid) + ("," if len(self.grid) == 1 else "") + ")"
        kw.append(f"num_warps={self.num_warps()}")
        out.append((f"_launch({self.name}, {grid}, [{', '.join(call_args)}], dict({', '.join(kw)}))", self.top.span))
        return out


def _thread_tile(top: A.Parallel) -> tuple[int | None, ...]:
    """The literal extents of the thread level of ``parallel {..} : block, {..} by [..] : thread``."""
    if len(top.levels) < 2:
        return ()
    return tuple(x.value if isinstance(x, A.IntLit) else None for x in top.levels[1].bound)


def _tile_text(e: A.Expr) -> str:
    return str(e.args[1].value) if isinstance(e, A.Builtin) and isinstance(e.args[1], A.IntLit) else "?"


def _is_wild(x: A.Expr) -> bool:
    return isinstance(x, A.Name) and x.name == "_"


def _has_mma(s: A.Node) -> bool:
    return any(isinstance(n, A.MmaOp) for n in s.walk())


def _straight_line(body: A.Stmt) -> bool:
    """A body of element assignments and scalar declarations only (no loops, branches, copies)."""
    stmts = body.stmts if isinstance(body, A.Block) else [body]
    for s in stmts:
        if isinstance(s, A.Parallel):
            if not _straight_line(s.body):
                return False
        elif not isinstance(s, (A.AssignStmt, A.ScalarDecl, A.Empty, A.MdspanDecl)):
            return False
    return True


def _covers_root(d: ViewDim, root_dim: Val | None) -> bool:
    """Is this dim the whole root extent (so a window inside it needs no extra limit)?"""
    if not (d.origin.is_const and d.origin.const == 0) or d.limits or root_dim is None:
        return False
    return d.extent.code == root_dim.code or (
        d.extent.is_const and root_dim.is_const and d.extent.const == root_dim.const
    )


def _pick(items: list[Any], k: int, node: A.Node) -> Any:
    n = len(items)
    idx = k if k >= 0 else n + k
    if not 0 <= idx < n:
        raise CroqSemanticError(f"index {k} is out of range for rank {n}", node.span)
    return items[idx]
