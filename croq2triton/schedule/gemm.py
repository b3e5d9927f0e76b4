"""A contraction tiled under a Schedule: the tile-IR kernel and its launch.

The kernel reads like Triton's tutorials 03 and 09: a (persistent) loop over output tiles in
groups of ``GROUP_M`` row tiles, named offsets and masks, a pipelined K loop of TMA loads (masked
loads where the launch-time tensors break TMA's rules) feeding ``tl.dot``, one masked store.  Each
operand is masked by its own extents, which is what the source's zero fill means (see
:mod:`croq2triton.tir.contract`); the proof that this computes what the ``.co`` computes is
:func:`croq2triton.lift.contraction.prove`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..lift.host import HostScope, ir_type
from ..tir import expr as E
from ..tir import nodes as N
from ..tir.contract import ACC, Contraction, Epilogue, Group, Operand, Scale
from .schedule import Schedule

DOT_TYPES = ("f16", "bf16", "f8_e4m3", "f8_e5m2", "f32", "tf32", "s8")  # s8: integer dots into s32
# the names a tiled kernel gives its own values (an epilogue's tensors and scalars take others)
RESERVED = frozenset(
    [
        "pid",
        "pid_b",
        "num_pid_m",
        "num_pid_n",
        "num_tiles",
        "tile_id",
        "GROUP_M",
        "num_pid_in_group",
        "first_pid_m",
        "group_size_m",
        "pid_m",
        "pid_n",
        "offs_m",
        "offs_n",
        "offs_k",
        "acc",
        "k",
        "a",
        "b",
        "c",
        "mask_a",
        "mask_b",
        "mask_c",
        "NUM_STAGES",
        "NUM_SMS",
        "SPLIT_K",
        "work_id",
        "pid_k",
        "k_tiles",
        "k_lo",
        "k_hi",
        "mask_p",
        "split",
        "part",
        "pid_e",
        "p",
        "rows",
        "row_start",
        "row_count",
        "WARP_SPECIALIZE",
        "tl",
        "triton",
    ]
)


# the names of a piece's values (a reserved name and the piece's indices) and of the subexpressions
# an epilogue names (x0, x1_0, ...)
PIECE_NAME = re.compile(r"(?:(?:" + "|".join(sorted(RESERVED)) + r")(?:_\d+)+|x\d+(?:_\d+)*)")


SUM_TILE = (64, 128)  # split-K's sum kernel: 32 KB of f32 partial sums a split and program, rows of 512 B
SUM_WARPS = 4


class NotTiled(Exception):
    """A contraction this tiling does not cover (the kernel is lowered as written)."""


@dataclass
class Tiled:
    kernel: N.Kernel  # its grid and arguments say how it is launched (tir/launch.py)
    # split-K: the kernel that adds the partial sums (launched after ``kernel``) and the workspace the
    # launcher allocates before both: (its launcher variable, its shape as host expressions, its type)
    sum: N.Kernel | None = None
    workspace: tuple[str, tuple[E.Expr, ...], str] | None = None


def _var(name: str, dims: tuple[int, ...] = (), dtype: str = "i32") -> E.Var:
    return E.Var(name, dtype, dims=dims)


class GemmBuilder:
    def __init__(
        self,
        c: Contraction,
        s: Schedule,
        host: HostScope,
        name: str,
        line: int,
        precision: str | None = None,
        split: str | None = None,
    ) -> None:
        self.c, self.s, self.host, self.name, self.line = c, s, host, name, line
        self.precision = precision  # tl.dot's input_precision (croq2triton/options.py)
        self.split = split  # split-K: the launcher's variable holding the number of splits
        self.sum_name = f"{name}_sum"  # split-K: the kernel that adds the partial sums
        self.args: dict[str, N.Arg] = {}
        self.size_args: dict[str, str] = {}  # a size (the launcher's variable) -> its argument (``local``)
        self.lets: dict[str, E.Expr] = {}  # the value of each named let
        self.scalar_args: dict[str, str] = {}  # a scalar parameter an epilogue reads -> its argument

    # ---------------------------------------------------------------- arguments
    def size(self, x: str | int) -> E.Expr:
        """A size of the launcher as the kernel's argument, named apart from the kernel's own names
        (a size named ``k`` or ``pid`` is ``k_e``, ``pid_e``)."""
        if isinstance(x, int):
            return E.Const(x)
        arg = self.size_args.get(x)
        if arg is None:
            arg = self.size_args[x] = self.local(x)
            self.args[arg] = N.Scalar(arg, "i32", E.Var(x))
        return E.Var(arg, "i32", 0)

    def sized(self, e: E.Expr) -> E.Expr:
        """An expression of the contraction over the launcher's sizes, over their arguments."""
        env: dict[str, E.Expr] = {x: E.Var(a, "i32", 0) for x, a in self.size_args.items() if a != x}
        return E.fold(E.substitute(e, env)) if env else e

    def hosted(self, e: E.Expr) -> E.Expr:
        """An expression of the kernel over the sizes' arguments, over the launcher's sizes (a grid)."""
        env: dict[str, E.Expr] = {a: E.Var(x, "i32", 0) for x, a in self.size_args.items() if a != x}
        return E.fold(E.substitute(e, env)) if env else e

    def tensor(self, op: Operand) -> tuple[N.Pointer, tuple[E.Expr, ...]]:
        t = self.host.tensors[op.tensor]
        ptr_name = f"{op.tensor}_ptr"
        extents = tuple(self.size(x) for x in t.extents)
        if ptr_name not in self.args:
            strides = tuple(f"stride_{op.tensor}{d}" for d in range(op.rank))
            ty = ir_type(t.elem)
            if ty is None:
                raise NotTiled(f"element type {t.elem}")
            self.args[ptr_name] = N.Pointer(ptr_name, t.host, ty, extents, strides)
            for d, st in enumerate(strides):
                self.args[st] = N.Stride(st, t.host, d)
        arg = self.args[ptr_name]
        assert isinstance(arg, N.Pointer)
        return arg, extents

    def descriptor(self, op: Operand, box: tuple[int, ...], what: str, tag: str = "") -> tuple[str, str]:
        """A host TensorDescriptor of ``op``'s tensor and the constexpr flag saying it may be used
        (``tag``: of one column piece, whose box is its own). Its boxes read zero outside the tensor:
        the tiles are the schedule's, not the source's, so what they read past the tensor is this
        kernel's padding (the OOB sanitizer is applied to the accumulators: ``Contraction.k_read``)."""
        desc, flag = f"{op.tensor}_desc{tag}", f"TMA_{op.tensor.upper()}{tag}"
        host = self.host.tensors[op.tensor].host
        self.args[desc] = N.Descriptor(desc, host, box, flag=flag, what=what, source=host, fill="zero")
        self.args[flag] = N.Constexpr(flag, True)
        return desc, flag

    def constexpr(
        self,
        name: str,
        value: int | bool,
        tunable: bool = False,
        launch: Literal["value", "sms", "warp_specialize"] = "value",
    ) -> E.Var:
        self.args[name] = N.Constexpr(name, value, tunable, launch=launch)
        return E.Var(name)

    # ---------------------------------------------------------------- the kernel
    def build(self) -> Tiled:
        c, s = self.c, self.s
        for op in (c.a, c.b):
            if op.elem not in DOT_TYPES:
                raise NotTiled(f"{op.elem} operands")
        integer = c.a.elem == "s8" and c.b.elem == "s8"
        # an s8 operand beside a 16-bit float one (weights quantised to 8 bits, W8A16): its tiles are
        # converted to the other's type before the dot (exact: every s8 value is an f16 and a bf16)
        mixed = c.a.elem != c.b.elem and sorted((c.a.elem, c.b.elem)) in (["f16", "s8"], ["bf16", "s8"])
        if (c.a.elem != c.b.elem and not mixed) or c.acc not in (("s32",) if integer else ("f32", "f16")):
            raise NotTiled("these element types")
        dot_elem = c.b.elem if c.a.elem == "s8" else c.a.elem
        if ir_type(c.out.elem) is None:
            raise NotTiled(f"a '{c.out.elem}' output")
        a_ptr, a_ext = self.tensor(c.a)
        b_ptr, b_ext = self.tensor(c.b)
        o_ptr, o_ext = self.tensor(c.out)
        m_ext, n_ext, k_ext = o_ext[c.out.free], o_ext[c.out.inner], a_ext[c.a.inner]
        body: list[N.Stmt] = []
        line = self.line

        def let(name: str, value: E.Expr, into: list[N.Stmt], at: int = line, lo: int | None = None) -> E.Var:
            v = E.Var(name, value.dtype, lo, None, value.shape)
            self.lets[name] = value
            into.append(N.Let(v, value, line=at))
            return v

        pid = E.Var("pid", "i32", 0)
        pids = [pid]
        batch: E.Expr | None = None
        if c.batched:
            batch = E.Var("pid_b", "i32", 0)
            pids.append(batch)  # type: ignore[arg-type]
        grp = c.group
        row_start: E.Expr | None = None
        row_count: E.Expr | None = None
        if grp is not None:  # one program per (tile, group): the group's rows start at a value read
            if c.batched or s.persistent or c.out.free != 0 or c.a.batch is not None:
                raise NotTiled("this grouped contraction")
            batch = E.Var("pid_e", "i32", 0)
            pids.append(batch)  # type: ignore[arg-type]
            env = self.group_values(grp, batch, body)
            env[grp.var] = batch  # (an origin the group index sets: `view(M, K).from(bi * M, 0)`)
            row_start = self.sized(E.fold(E.substitute(grp.offset, env)))
            if not isinstance(row_start, E.Var):
                row_start = let("row_start", row_start, body, c.line)
            if grp.count is not None:
                row_count = self.sized(E.fold(E.substitute(grp.count, env)))
                if not isinstance(row_count, E.Var):
                    row_count = let("row_count", row_count, body, c.line)
            for v in E.free_vars(grp.rows):
                self.size(v.name)
            m_ext = self.sized(grp.rows)  # the rows the source's tiles cover
        splitting = s.split_k != 1
        split_k: E.Var | None = None
        if splitting:  # split-K: see split_kernels
            if c.batched or grp is not None or c.scales:
                raise NotTiled("split-K of a batched, grouped or block-scaled contraction")
            assert self.split is not None, "split-K needs the launcher's variable of the split count"
            split_k = E.Var("SPLIT_K", "i32", 1)
            self.args["SPLIT_K"] = N.Scalar("SPLIT_K", "i32", E.Var(self.split))
        tiles_m = let("num_pid_m", E.CDiv(m_ext, E.Const(s.block_m)), body)
        tiles_n = let("num_pid_n", E.CDiv(n_ext, E.Const(s.block_n)), body)
        num_tiles = let("num_tiles", tiles_m * tiles_n, body) if s.persistent or splitting else None
        tile_body: list[N.Stmt] = []
        tile = E.Var("tile_id", "i32", 0) if s.persistent else pid
        pid_k: E.Var | None = None
        if split_k is not None:  # work item = split * num_tiles + tile: neighbours share a split's K range
            assert num_tiles is not None
            work = E.Var("work_id", "i32", 0) if s.persistent else pid
            pid_k = let("pid_k", E.Bin("/", work, num_tiles), tile_body, lo=0)
            tile = let("tile_id", E.Bin("%", work, num_tiles), tile_body, lo=0)
        group_m = self.constexpr("GROUP_M", s.group_m, True)
        if s.group_m > 1:
            in_group = let("num_pid_in_group", group_m * tiles_n, tile_body)
            first = let("first_pid_m", E.Bin("/", tile, in_group) * group_m, tile_body)
            size_m = let("group_size_m", E.Bin("min", tiles_m - first, group_m), tile_body)
            pid_m = let("pid_m", first + E.Bin("%", E.Bin("%", tile, in_group), size_m), tile_body, lo=0)
            pid_n = let("pid_n", E.Bin("/", E.Bin("%", tile, in_group), size_m), tile_body, lo=0)
        else:
            pid_m = let("pid_m", E.Bin("/", tile, tiles_n), tile_body, lo=0)
            pid_n = let("pid_n", E.Bin("%", tile, tiles_n), tile_body, lo=0)
        split = len(tile_body)  # what follows runs only for tiles holding rows of the group
        # a tile whose rows or columns are not a power of two is pieces of powers of two
        # (Schedule.pieces_m / pieces_n): an A tile per row piece, a B tile per column piece, an
        # accumulator, dot and store per pair
        pieces_m, pieces_n = s.pieces_m, s.pieces_n
        if (len(pieces_m) > 1 or len(pieces_n) > 1) and (c.scales or grp is not None):
            raise NotTiled("pieces of a block-scaled or grouped contraction")
        tags_m = [""] if len(pieces_m) == 1 else [f"_{i}" for i in range(len(pieces_m))]
        tags_n = [""] if len(pieces_n) == 1 else [f"_{j}" for j in range(len(pieces_n))]

        def offsets(name: str, pid_: E.Expr, step: int, start: int, w: int) -> E.Var:
            return let(name, E.fold(pid_ * step + E.Const(start)) + E.Arange(w), tile_body)

        offs_ms = [offsets(f"offs_m{t}", pid_m, s.block_m, a, w) for t, (a, w) in zip(tags_m, pieces_m)]
        offs_m = offs_ms[0]
        rows_of = offs_ms if row_start is None else [let("rows", row_start + offs_m, tile_body)]
        offs_ns = [offsets(f"offs_n{t}", pid_n, s.block_n, a, w) for t, (a, w) in zip(tags_n, pieces_n)]
        pairs = [(tm + tn, i, j) for i, tm in enumerate(tags_m) for j, tn in enumerate(tags_n)]
        # f16 accumulators are kept in f32 and rounded once at the store (LANGUAGE.md 9.3: at least as
        # accurate). Measured (perf/acc16_probe.py, H200, 2026-12-01): tl.dot with out_dtype f16 at
        # 128 x 256 x 64 runs 0.864 / 0.833 of cuBLAS at 8192^3 / 4096^3, the f32 accumulator 0.977 / 0.953
        accs = {
            (i, j): _var(f"acc{t}", (pieces_m[i][1], pieces_n[j][1]), "i32" if integer else "f32") for t, i, j in pairs
        }
        for acc in accs.values():
            tile_body.append(N.Let(acc, E.Full(acc.shape, 0, acc.type), line=c.line))
        if c.k_read is not None and not integer:
            # the OOB sanitizer (--oob-fill nan): the source reads K past its end without .zfill, so as
            # written it sums NaN into every element where its K steps overshoot K; _oob_fill starts the
            # accumulators at NaN there (a no-op without the sanitizer)
            for v in E.free_vars(c.k_read):
                self.size(v.name)
            k_size = self.size(self.host.tensors[c.a.tensor].extents[c.a.inner])
            inside = E.Bin("<=", self.sized(c.k_read), k_size)
            for acc in accs.values():
                tile_body.append(N.Let(acc, E.Call("_oob_fill", (acc, inside), acc.type), line=c.line))

        # the K loop: one tile of each operand (piece), one dot per accumulator
        kt = E.Var("k", "i32", 0)
        loop: list[N.Stmt] = []
        offs_k = let("offs_k", kt * s.block_k + E.Arange(s.block_k), loop, c.line)
        a_batch = batch if c.a.batch is not None else None
        precision = self.precision
        out_dtype = "i32" if integer else None

        def operand(tile: tuple[E.Var, bool], elem: str) -> tuple[E.Expr, bool]:
            value: E.Expr = tile[0]
            if elem != dot_elem:  # (W8A16: the s8 tile as the other operand's type)
                value = E.Cast(value, ir_type(dot_elem) or "f16")
            if dot_elem == "bf16":  # Triton's interpreter computes bf16 dots wrongly: f32 there (module helper)
                return E.Call("_as_dot_operand", (value,), "f32"), tile[1]
            return value, tile[1]

        a_ops = [
            operand(self.operand_tile(
                c.a, a_ptr, a_ext, rows_of[i], offs_k, pid_m, kt, a_batch, "a" + tm, loop,
                row_start=row_start, piece=pieces_m[i], step=s.block_m,
            ), c.a.elem)
            for i, tm in enumerate(tags_m)
        ]  # fmt: skip
        b_ops = [
            operand(self.operand_tile(
                c.b, b_ptr, b_ext, offs_ns[j], offs_k, pid_n, kt, batch, "b" + tn, loop,
                piece=pieces_n[j], step=s.block_n,
            ), c.b.elem)
            for j, tn in enumerate(tags_n)
        ]  # fmt: skip
        for _, i, j in pairs:
            (a_op, a_k_first), (b_op, b_k_first), acc = a_ops[i], b_ops[j], accs[i, j]
            # tl.dot takes [M, K] x [K, N]: A loaded [K, M] and B loaded [N, K] are transposed
            if c.scales:  # each K tile's product times its scales: k // scale_k is one value per tile
                if integer or c.scale_k % s.block_k:
                    raise NotTiled("scales over blocks of K that the K step does not divide")
                prod = _var("p", (s.block_m, s.block_n), "f32")
                loop.append(N.Dot(prod, a_op, b_op, None, precision, None, a_k_first, not b_k_first, line=c.line))
                value: E.Expr = prod
                for f in c.scales:
                    value = value * self.scale_tile(f, offs_m, offs_ns[0], kt, batch, loop)
                loop.append(N.Let(acc, acc + value, line=c.line))
            else:
                loop.append(N.Dot(acc, a_op, b_op, acc, precision, out_dtype, a_k_first, not b_k_first, line=c.line))
        # a tuning sweep may vary the pipeline's depth; a K loop of a known count of steps takes no more
        # stages than it has steps: a ring deeper than the loop stays allocated beside the epilogue's
        # layout conversion (a 128 x 256 f32 tile stored with a mask after one K step of 64 took
        # 278,552 bytes of shared memory with 3 stages, over the H200's 232,448: tests/test_breadth_b.py)
        steps = E.fold(E.CDiv(k_ext, E.Const(s.block_k)))
        stages = min(s.num_stages, max(1, steps.value)) if isinstance(steps, E.Const) else s.num_stages
        self.constexpr("NUM_STAGES", int(stages), True)
        # one K step: Triton drops the K loop, and the persistent loop over tiles becomes the innermost,
        # pipelined with the kernel's default 3 stages unless told (see outer_pipe below)
        one_step = isinstance(steps, E.Const) and steps.value <= 1
        ws: bool | str = False
        if s.warp_specialize:  # the source's warp roles: the launcher passes the runtime's switch
            self.constexpr("WARP_SPECIALIZE", False, launch="warp_specialize")
            ws = "WARP_SPECIALIZE"
        pipe = N.Pipeline("NUM_STAGES", warp_specialize=ws)
        k_steps = E.CDiv(k_ext, E.Const(s.block_k))
        carried = tuple(accs.values())
        k_start: E.Expr = E.Const(0)
        if split_k is not None and pid_k is not None:  # split p takes K steps [p * T // S, (p + 1) * T // S)
            k_tiles = let("k_tiles", k_steps, body, c.line, lo=0)
            k_start = let("k_lo", E.Bin("/", pid_k * k_tiles, split_k), tile_body, c.line, lo=0)
            k_steps = let("k_hi", E.Bin("/", (pid_k + 1) * k_tiles, split_k), tile_body, c.line, lo=0)
        tile_body.append(N.For(kt, k_start, k_steps, E.Const(1), loop, pipe, carried, line=c.line))

        # the store, of each piece
        out_ty = ir_type(c.out.elem) or "f32"
        if split_k is not None and pid_k is not None:  # the partial sums, to the workspace (not the output)
            for unused in (o_ptr.name, *o_ptr.strides):
                del self.args[unused]
            part = self.workspace(split_k, m_ext, n_ext, "i32" if integer else "f32", self.name)
            for t, i, j in pairs:
                rows, cols = E.Lift(rows_of[i], 2, (0,)), E.Lift(offs_ns[j], 2, (1,))
                inside = [E.Bin("<", pid_k, split_k), E.Bin("<", rows, m_ext), E.Bin("<", cols, n_ext)]
                mask = let("mask_p" + t, E.conj(inside), tile_body, c.store_line)
                tile_body.append(N.Store(part.name, (pid_k, rows, cols), accs[i, j], mask, line=c.store_line))
        for t, i, j in pairs if split_k is None else []:
            rows, offs_n, acc = rows_of[i], offs_ns[j], accs[i, j]
            index = _index(c.out, E.Lift(rows, 2, (0,)), E.Lift(offs_n, 2, (1,)), batch if c.batched else None)
            bounds = _in_bounds(c.out, index, o_ext)
            if grp is not None:  # rows of the group only, inside the tensor, and those the source's tiles cover
                local = E.Lift(offs_m, 2, (0,))
                extra = [E.Bin(">=", E.Lift(rows, 2, (0,)), E.Const(0)), E.Bin("<", local, self.sized(grp.rows))]
                if row_count is not None:
                    extra.append(E.Bin("<", local, row_count))
                bounds = E.conj([bounds, *extra])
            mask = let("mask_c" + t, bounds, tile_body, c.store_line)
            value = acc
            if c.epilogue is not None:
                value = self.epilogue(c.epilogue, acc, offs_ms[i], offs_n, batch, tile_body, mask, t)
            value = value if out_ty == value.dtype else E.Cast(value, out_ty)
            if not (s.tma and s.tma_store) or c.batched or grp is not None:
                tile_body.append(N.Store(o_ptr.name, index, value, mask, line=c.store_line))
                continue
            out_tile = let("c" + t, value, tile_body, c.store_line)
            fallback = N.Store(o_ptr.name, index, out_tile, mask, line=c.store_line)
            (m0, hm), (n0, w) = pieces_m[i], pieces_n[j]
            halves = 2 if w >= 32 else 1  # half-width boxes: measured faster (schedule/policy.py)
            desc, flag = self.descriptor(c.out, (hm, w // halves), "stores (auto)", t)
            coords = (E.fold(pid_m * s.block_m + E.Const(m0)), E.fold(pid_n * s.block_n + E.Const(n0)))
            tile_body.append(N.TmaStore(desc, coords, out_tile, fallback, flag, halves, line=c.store_line))

        if grp is not None and row_count is not None:  # a tile past the group's rows does nothing
            tile_body[split:] = [N.If(E.Bin("<", pid_m * s.block_m, row_count), tile_body[split:], line=c.line)]
        if s.persistent:
            num_sms = self.constexpr("NUM_SMS", 132, launch="sms")
            assert num_tiles is not None
            if split_k is not None:
                work = E.Var("work_id", "i32", 0)
                body.append(N.For(work, pid, num_tiles * split_k, num_sms, tile_body, line=line))
            else:
                outer_pipe = N.Pipeline("NUM_STAGES") if one_step else None
                if s.flatten and not one_step:  # one pipeline across tiles: the K loop fused into this one
                    outer_pipe = N.Pipeline("NUM_STAGES", flatten=True)
                body.append(N.For(tile, pid, num_tiles, num_sms, tile_body, outer_pipe, line=line))
        else:
            body.extend(tile_body)
        return self.finish(body, tuple(pids), m_ext, n_ext)

    def epilogue(
        self,
        epi: Epilogue,
        acc: E.Var,
        offs_m: E.Var,
        offs_n: E.Var,
        batch: E.Expr | None,
        into: list[N.Stmt],
        out_mask: E.Var,
        tag: str = "",
    ) -> E.Expr:
        """The stored value: the epilogue over the accumulator tile, each tensor it reads loaded at
        the tile's coordinates (masked by its own extents), scalar parameters as arguments; ``tag``
        names the column piece (its values' names end with it)."""
        line = self.c.store_line
        coord = {"m": E.Lift(offs_m, 2, (0,)), "n": E.Lift(offs_n, 2, (1,))}
        env: dict[str, E.Expr] = {ACC: acc}
        masks = [(out_mask, self.lets[out_mask.name])]
        for r in epi.reads:
            index = tuple(batch if d == "b" and batch is not None else coord.get(d, E.Const(0)) for d in r.dims)
            keep = tuple(d != "b" for d in r.dims)  # the grid keeps the batch index inside
            env[r.var] = self.load_at(r.tensor, index, self.local(r.tensor) + tag, into, line, masks, keep)
        for name, elem in epi.scalars:
            ty = ir_type(elem) or "f32"
            if name not in self.scalar_args:  # one argument for every piece
                arg = self.scalar_args[name] = self.local(name)
                self.args[arg] = N.Scalar(arg, ty, E.Var(self.host.scalars[name].host))
            env[name] = E.Var(self.scalar_args[name], ty)
        return self.name_repeats(E.fold(E.substitute(epi.value, env)), into, line, tag)

    def name_repeats(self, value: E.Expr, into: list[N.Stmt], line: int, tag: str = "") -> E.Expr:
        """A subexpression the value computes more than once (``relu(x) = x > 0 ? x : 0``) is
        computed once and named, largest first."""
        for i in range(8):
            seen: dict[E.Expr, int] = {}
            for n in value.walk():
                if isinstance(n, (E.Bin, E.Un, E.Call, E.Where, E.Cast)) and n.shape:
                    seen[n] = seen.get(n, 0) + 1
            repeats = [n for n, c in seen.items() if c > 1]
            if not repeats:
                break
            big = max(repeats, key=lambda n: sum(1 for _ in n.walk()))
            v = _var(f"x{i}{tag}", big.shape, big.dtype)
            into.append(N.Let(v, big, line=line))
            value = E.replace(value, big, v)
        return value

    def scale_tile(
        self, f: Scale, offs_m: E.Var, offs_n: E.Var, kt: E.Var, batch: E.Expr | None, into: list[N.Stmt]
    ) -> E.Var:
        """The factors of one scale for the tile: a vector over rows or columns, or a scalar."""
        index: list[E.Expr] = []
        for kind, d in f.dims:
            if kind == "0":
                index.append(E.Const(0))
            elif kind == "k":
                index.append(E.fold(E.Bin("/", kt * self.s.block_k, E.Const(d))))
            else:
                lane = E.Lift(offs_m, 2, (0,)) if kind == "m" else E.Lift(offs_n, 2, (1,))
                index.append(lane if d == 1 else E.Bin("/", lane, E.Const(d)))
        return self.load_at(f.tensor, tuple(index), self.local(f"{f.tensor}_s"), into, self.c.line, [])

    def group_values(self, grp: Group, pid: E.Var, into: list[N.Stmt]) -> dict[str, E.Expr]:
        """The values a group's rows are placed by, each read once by the program."""
        env: dict[str, E.Expr] = {}
        taken: set[str] = set()
        masks: list[tuple[E.Var, E.Expr]] = []
        for name, tensor, idx in grp.data:
            index = tuple(self.sized(E.fold(E.substitute(i, {grp.var: pid}))) for i in idx)
            base = self.local(tensor)
            var_name = base if base not in taken else f"{base}_{len(taken)}"
            taken.add(var_name)
            # the grid keeps the group index below its extent, which the verifier cannot see: masked
            env[name] = self.load_at(tensor, index, var_name, into, self.line, masks)
        return env

    def load_at(
        self,
        tensor: str,
        index: tuple[E.Expr, ...],
        name: str,
        into: list[N.Stmt],
        line: int,
        masks: list[tuple[E.Var, E.Expr]],
        keep: tuple[bool, ...] | None = None,
    ) -> E.Var:
        """``name = tensor[index]``, zero outside the tensor (its dimensions where ``keep``); a mask
        equal to one in ``masks`` (defined where this load is) is reused, a new one joins them."""
        t = self.host.tensors[tensor]
        ptr, ext = self.tensor(Operand(tensor, t.elem, len(t.extents), 0, 0))
        keep = keep or tuple(True for _ in index)
        shape = E.broadcast(*(i.shape for i in index))
        cond = E.conj(E.Bin("<", i, x) for i, x, k in zip(index, ext, keep, strict=True) if k)
        mask = next((m for m, c in masks if E.same(c, cond)), None)
        if mask is None:
            mask = _var(f"mask_{name}", shape, "i1")
            into.append(N.Let(mask, cond, line=line))
            masks.append((mask, cond))
        tile = _var(name, shape, ptr.dtype)
        into.append(N.Load(tile, ptr.name, index, mask, 0 if E.is_int(ptr.dtype) else 0.0, line=line))
        return tile

    def local(self, name: str) -> str:
        """A kernel name for a user's tensor or scalar that none of this kernel's own names takes
        (nor those of its pieces: ``acc_0``, ``offs_n_1``, ``mask_c_0_1``, ...)."""
        own = name in RESERVED or name in self.args or PIECE_NAME.fullmatch(name) is not None
        while own:  # ``k_e``, unless an argument is named so already (a size ``k_e``): ``k_e_e``
            name += "_e"
            own = name in self.args
        return name

    def operand_tile(
        self,
        op: Operand,
        ptr: N.Pointer,
        ext: tuple[E.Expr, ...],
        offs_free: E.Var,
        offs_k: E.Var,
        pid_free: E.Expr,
        kt: E.Var,
        batch: E.Expr | None,
        tag: str,
        into: list[N.Stmt],
        row_start: E.Expr | None = None,
        piece: tuple[int, int] = (0, 0),
        step: int = 0,
    ) -> tuple[E.Var, bool]:
        """The [free, K] tile of an operand (``[K, free]`` when it is stored that way: the bool):
        ``piece`` (start, width) of a tile whose free extent per program is ``step``."""
        s = self.s
        start, block_free = piece
        k_first = op.inner < op.free  # stored [.., K, free]
        shape = (s.block_k, block_free) if k_first else (block_free, s.block_k)
        free_dim, k_dim = (1, 0) if k_first else (0, 1)
        index = _index(op, E.Lift(offs_free, 2, (free_dim,)), E.Lift(offs_k, 2, (k_dim,)), batch)
        mask = _var(f"mask_{tag}", shape, "i1")
        bounds = _in_bounds(op, index, ext)
        if row_start is not None:  # rows placed by a value read: negative ones are outside too
            bounds = E.conj([bounds, E.Bin(">=", index[op.free], E.Const(0))])
        into.append(N.Let(mask, bounds, line=self.c.line))
        tile = _var(tag, shape, ptr.dtype)
        load = N.Load(tile, ptr.name, index, mask, 0 if E.is_int(ptr.dtype) else 0.0, line=self.c.line)
        if not s.tma:
            into.append(load)
            return tile, k_first
        # one box per tile: 2-D, or [1, rows, K] of one batch (reshaped to the 2-D tile)
        box = [1] * op.rank
        box[op.free], box[op.inner] = block_free, s.block_k
        first = E.fold(pid_free * step + E.Const(start))
        if row_start is not None:
            first = E.fold(row_start + first)
        coord = _index(op, first, E.fold(kt * s.block_k), batch)
        desc, flag = self.descriptor(op, tuple(box), "loads (auto)", tag[1:])
        reshape = shape if op.rank > 2 else None
        into.append(N.TmaLoad(tile, desc, coord, load, flag, reshape, line=self.c.line))
        return tile, k_first

    # ---------------------------------------------------------------- the kernel's grid and arguments
    def finish(self, body: list[N.Stmt], pids: tuple[E.Var, ...], m_ext: E.Expr, n_ext: E.Expr) -> Tiled:
        s, c = self.s, self.c
        tiles = self.hosted(E.fold(E.CDiv(m_ext, E.Const(s.block_m)) * E.CDiv(n_ext, E.Const(s.block_n))))
        if s.split_k != 1 and self.split is not None:  # a program per (tile, split)
            tiles = E.fold(tiles * E.Var(self.split))
        k = self.name
        order: list[N.Arg] = [a for a in self.args.values() if not isinstance(a, N.Constexpr)]
        order += [a for a in self.args.values() if isinstance(a, N.Constexpr)]
        grid: tuple[E.Expr, ...] = (tiles,)
        if s.persistent:  # one program per SM: the launcher's variable of NUM_SMS (tir/launch.py)
            grid = (E.Bin("min", tiles, E.Var(f"_{k}_NUM_SMS")),)
        elif c.batched:
            assert c.out.batch is not None
            batches = self.host.tensors[c.out.tensor].extents[c.out.batch]
            grid = (tiles, E.Const(batches) if isinstance(batches, int) else E.Var(batches, "i32", 0))
        elif c.group is not None:
            grid = (tiles, c.group.extent)
        tile = f"{s.block_m} x {s.block_n} x {s.block_k}"
        src = f"{c.source_tile[0]} x {c.source_tile[1]} output tiles, K steps of {c.source_tile[2]}"
        product = f"a @ b{'^T' if c.b.free < c.b.inner else ''}"
        if c.epilogue is not None:
            product = f"f({product}), f element-wise (line {c.store_line})"
        if c.group is not None:
            product += " for each group of rows (their start and number read from tensors)"
        doc = (
            f"The .co computes out = {product} (a contraction: croq2triton/lift/contraction.py proves it), "
            f"here over {tile} tiles (schedule {s.origin}; the source: {src}); the schedule only changes how it runs."
        )
        if s.split_k != 1:
            doc += (
                f" Split-K: SPLIT_K programs a tile, each a range of its K steps, write partial sums that "
                f"{self.sum_name} adds (schedule/gemm.py split_kernels)."
            )
        kernel = N.Kernel(k, grid, pids, list(order), body, num_warps=s.num_warps, doc=doc, line=self.line)
        return Tiled(kernel)

    # ---------------------------------------------------------------- split-K
    def workspace(self, split_k: E.Var, m_ext: E.Expr, n_ext: E.Expr, dtype: str, owner: str) -> N.Pointer:
        """The ``[SPLIT_K, M, N]`` tensor of partial sums of kernel ``owner`` (the launcher allocates it,
        unfilled: every element inside the output is written by the split kernel before the sum kernel
        reads it)."""
        base = "partials"
        while base in self.host.tensors or f"{base}_ptr" in self.args:  # a user's tensor of that name
            base += "_ws"
        strides = tuple(f"stride_{base}{d}" for d in range(3))
        tensor = f"_{owner}_{base}"
        ptr = N.Pointer(f"{base}_ptr", tensor, dtype, (split_k, m_ext, n_ext), strides)
        self.args[ptr.name] = ptr
        for d, st in enumerate(strides):
            self.args[st] = N.Stride(st, tensor, d)
        return ptr

    def build_sum(self, kernel: str) -> Tiled:
        """The second kernel of split-K: each program adds the ``SPLIT_K`` partial sums of one
        ``SUM_TILE`` of the output in the order of the splits, then applies the epilogue and the
        conversion to the output's type, and stores (masked by the output's extents)."""
        c = self.c
        line, store = c.line, c.store_line
        integer = c.a.elem == "s8" and c.b.elem == "s8"
        acc_ty = "i32" if integer else "f32"
        o_ptr, o_ext = self.tensor(c.out)
        m_ext, n_ext = o_ext[c.out.free], o_ext[c.out.inner]
        assert self.split is not None
        split_k = E.Var("SPLIT_K", "i32", 1)
        self.args["SPLIT_K"] = N.Scalar("SPLIT_K", "i32", E.Var(self.split))
        part = self.workspace(split_k, m_ext, n_ext, acc_ty, kernel)
        bm, bn = SUM_TILE
        body: list[N.Stmt] = []

        def let(name: str, value: E.Expr, into: list[N.Stmt], at: int = line, lo: int | None = None) -> E.Var:
            v = E.Var(name, value.dtype, lo, None, value.shape)
            self.lets[name] = value
            into.append(N.Let(v, value, line=at))
            return v

        pid = E.Var("pid", "i32", 0)
        tiles_n = let("num_pid_n", E.CDiv(n_ext, E.Const(bn)), body)
        pid_m = let("pid_m", E.Bin("/", pid, tiles_n), body, lo=0)
        pid_n = let("pid_n", E.Bin("%", pid, tiles_n), body, lo=0)
        offs_m = let("offs_m", E.fold(pid_m * bm) + E.Arange(bm), body)
        offs_n = let("offs_n", E.fold(pid_n * bn) + E.Arange(bn), body)
        rows, cols = E.Lift(offs_m, 2, (0,)), E.Lift(offs_n, 2, (1,))
        index = _index(c.out, rows, cols, None)
        mask = let("mask_c", _in_bounds(c.out, index, o_ext), body, store)
        acc = _var("acc", (bm, bn), acc_ty)
        body.append(N.Let(acc, E.Full(acc.shape, 0, acc_ty), line=line))
        sp = E.Var("split", "i32", 0)
        loop: list[N.Stmt] = []
        inside = [E.Bin("<", sp, split_k), E.Bin("<", rows, m_ext), E.Bin("<", cols, n_ext)]
        mask_p = let("mask_p", E.conj(inside), loop)
        p = _var("p", (bm, bn), acc_ty)
        loop.append(N.Load(p, part.name, (sp, rows, cols), mask_p, 0 if integer else 0.0, line=line))
        loop.append(N.Assign(acc, acc + p, line=line))
        body.append(N.For(sp, E.Const(0), split_k, E.Const(1), loop, None, (acc,), line=line))
        value: E.Expr = acc
        if c.epilogue is not None:
            value = self.epilogue(c.epilogue, acc, offs_m, offs_n, None, body, mask)
        out_ty = ir_type(c.out.elem) or "f32"
        value = value if out_ty == value.dtype else E.Cast(value, out_ty)
        body.append(N.Store(o_ptr.name, index, value, mask, line=store))
        order: list[N.Arg] = list(self.args.values())
        grid = (self.hosted(E.fold(E.CDiv(m_ext, E.Const(bm)) * E.CDiv(n_ext, E.Const(bn)))),)
        what = "the epilogue, " if c.epilogue is not None else ""
        doc = (
            f"Split-K's second kernel: out = the sum of the SPLIT_K partial sums {kernel} wrote, added in the order "
            f"of the splits over {bm} x {bn} tiles, then {what}the conversion and the store (schedule/gemm.py)."
        )
        k = N.Kernel(self.name, grid, (pid,), order, body, num_warps=SUM_WARPS, doc=doc, line=self.line)
        return Tiled(k)


def _index(op: Operand, free: E.Expr, inner: E.Expr, batch: E.Expr | None) -> tuple[E.Expr, ...]:
    """One index per dimension of ``op``'s tensor: its free, contracted and batch dimensions."""
    index: list[E.Expr] = [E.Const(0)] * op.rank
    index[op.free], index[op.inner] = free, inner
    if op.batch is not None and batch is not None:
        index[op.batch] = batch
    return tuple(index)


def _in_bounds(op: Operand, index: tuple[E.Expr, ...], ext: tuple[E.Expr, ...]) -> E.Expr:
    """The mask keeping ``index`` inside the tensor: its tile dimensions in order, then the batch
    (the grid's batch axis is its extent, which the verifier cannot see)."""
    dims = sorted((op.free, op.inner)) + ([op.batch] if op.batch is not None else [])
    return E.conj(E.Bin("<", index[d], ext[d]) for d in dims)


def tile_contraction(
    c: Contraction,
    s: Schedule,
    host: HostScope,
    name: str,
    line: int,
    precision: str | None = None,
    split: str | None = None,
    sum_name: str | None = None,
) -> Tiled:
    """``c`` tiled under ``s``; ``precision``: the dots' ``input_precision`` (None: the operands' own).
    Under split-K (``s.split_k`` other than 1) ``split`` names the launcher's variable holding the
    number of splits, and the result has the sum kernel (``sum_name``, by default ``{name}_sum``) and
    the workspace too (:func:`split_kernels`)."""
    if s.split_k == 1:
        return GemmBuilder(c, s, host, name, line, precision).build()
    return split_kernels(c, s, host, name, line, precision, split or f"_{name}_split_k", sum_name or f"{name}_sum")


def split_kernels(
    c: Contraction,
    s: Schedule,
    host: HostScope,
    name: str,
    line: int,
    precision: str | None,
    split: str,
    sum_name: str,
) -> Tiled:
    """Split-K: the K loop of each output tile divided among ``split`` programs (the launcher's
    variable, at least 1), and a second kernel that adds their partial sums.

    The choice: partial sums in a workspace ``[SPLIT_K, M, N]`` of the accumulator's type (f32; s32
    for 8-bit integer operands) and a second kernel (``{name}_sum``) that adds them, applies the
    epilogue and converts to the output's type, rather than atomic adds into the output.  Atomic adds
    would need an output the launcher zeroes, an f32 (or s32) output and an epilogue that is linear
    in the sum and applied once (a bias added by one split only); a conversion to f16 or an
    activation must follow the whole sum, and the order of float atomics changes from run to run.
    The second kernel takes any epilogue and output type, and adds the splits in one order, so a
    launch gives the same bits every time.

    What must hold (and does, by construction): split ``p`` of ``S`` takes K steps ``[p * T // S,
    (p + 1) * T // S)`` of the ``T = cdiv(K, block_k)``: consecutive, disjoint, their union all of
    ``[0, T)`` (each non-empty where ``S <= T``, which the launcher's count keeps); work item ``w``
    is (tile ``w % tiles``, split ``w // tiles``), one program each (``tiles * S`` items, grid or
    persistent loop); every element of the workspace inside ``[S, M, N]`` is written by the split
    kernel before the sum kernel (the next launch on the stream) reads it; the epilogue reads the
    full sum, as it does unsplit.  Each operand is masked by its own extents as unsplit, so
    K steps past K add zeros.

    It changes the order of a float sum: within each split as before, then the splits' partial sums
    added in order, so results move within the rounding of the f32 accumulator (integer sums are
    exact: the same bits).  Batched, grouped and block-scaled contractions are refused (NotTiled;
    a tuning point that asks for it is an error: emit/kernels.py)."""
    builder = GemmBuilder(c, s, host, name, line, precision, split)
    builder.sum_name = sum_name
    main = builder.build()
    total = GemmBuilder(c, s, host, sum_name, line, precision, split).build_sum(name)
    ws = next(a for a in main.kernel.args if isinstance(a, N.Pointer) and a.name.startswith("partials"))
    shape = tuple(E.Var(split) if i == 0 else x for i, x in enumerate(ws.extents))
    return Tiled(main.kernel, total.kernel, (ws.tensor, shape, ws.dtype))
