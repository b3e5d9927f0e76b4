"""The tile half of kernel lowering: DMA/TMA copies, MMA, and loops lifted into ``tl.dot``.

These functions are methods of :class:`~.kernel.KernelLowering` (imported into
its class body); they are kept here so each file has one job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CroqLoweringError, CroqSemanticError
from ..frontend import ast as A
from ..frontend.printer import Printer
from ..sema.tma_rules import swizzle_bytes
from ..sema.types import TYPES
from . import exprs as X
from .owners import check_moved, mma_owners, value_owners, view_owners
from .regions import Region, _ring_slot
from .symbolic import shape_text, user_text
from .values import (
    Bounded,
    Buffer,
    Collapsed,
    Frag,
    Future,
    Tensor,
    Tile,
    Val,
    View,
    ViewDim,
    const,
    pow2,
    same_extent,
)

if TYPE_CHECKING:
    from .kernel import KernelLowering


def _lift_view(region: Region, view: View) -> View:
    dims = [
        ViewDim(
            region.lift(d.origin),
            region.lift(d.extent),
            region.lift(d.step) if d.step is not None else None,
            [region.lift(x) for x in d.limits],
            d.squeezed,
        )
        for d in view.dims
    ]
    reshaped = [region.lift(x) for x in view.reshaped] if view.reshaped is not None else None
    idx = region.lift(view.index) if view.index is not None else None
    return View(view.root, dims, reshaped, view.zfill, idx)


def _view_dims(view: View) -> list[Val]:
    if view.reshaped is not None:
        return list(view.reshaped)
    return [d.extent for d in view.dims if not d.squeezed]


def _has_lanes(view: View) -> bool:
    vals: list[Val] = []
    for d in view.dims:
        vals += [d.origin, d.extent] + d.limits + ([d.step] if d.step else [])
    if view.index is not None:
        vals.append(view.index)
    if isinstance(view.root, Buffer) and view.root.lanes:
        return True
    return any(not v.uniform for v in vals)


def _static_pdims(k: KernelLowering, view: View) -> list[str] | None:
    root = view.root
    if isinstance(root, (Buffer, Tile)) and len(root.pdims) == len(_view_dims(view)) and view.reshaped is None:
        return list(root.pdims)
    out: list[str] = []
    for e in _view_dims(view):
        if e.is_const:
            out.append(str(pow2(int(e.const))))
        elif e.host is not None:
            out.append(k.pad_constexpr(k.fresh("P").upper(), e.host))
        else:
            return None
    return out


def region_for(self: KernelLowering, src: View, dst: View) -> Region:
    """The region of a copy ``src => dst``: the destination's extent."""
    sd, dd = _view_dims(src), _view_dims(dst)
    if len(sd) != len(dd):
        raise CroqSemanticError(f"a copy between data of rank {len(sd)} and rank {len(dd)}", None)
    pd = _static_pdims(self, dst) if isinstance(dst.root, (Buffer, Tile)) else None
    if pd is None and isinstance(src.root, (Buffer, Tile)):
        pd = _static_pdims(self, src)
    if pd is None:
        pd = _static_pdims(self, src)
    if pd is None:
        pd = _static_pdims(self, dst)
    if pd is None:
        raise CroqLoweringError(
            "the tile size of this copy depends on values only known inside the kernel",
            None,
            "copy into a buffer of fixed size, or make the extents host-computable",
        )
    lanes = _has_lanes(src) or _has_lanes(dst) or any(not p.uniform for p in self.pred)
    return Region(self, pd, dd, lanes)


def tile_of(self: KernelLowering, view: View) -> Region:
    pd = _static_pdims(self, view)
    if pd is None:
        raise CroqLoweringError("an MMA operand must have a fixed tile size", None)
    return Region(self, pd, _view_dims(view), _has_lanes(view))


def _whole_reshape(view: View, region: Region) -> bool:
    """``tile.span_as([...])`` read whole: a register reshape (all extents static powers of two)."""
    root = view.root
    assert isinstance(root, (Buffer, Tile))
    if region.L or view.index is not None:
        return False
    for d, p in zip(root.dims, root.pdims):
        if not (d.is_const and str(d.const) == p):
            return False
    for d, p in zip(view.dims, region.pdims):
        if (
            d.squeezed
            or not (d.origin.is_const and d.origin.const == 0)
            or not (d.extent.is_const and str(d.extent.const) == p)
        ):
            return False
    return True


def _squeezed_whole(view: View, region: Region) -> bool:
    """A whole register tile read through ``.sqz()`` of its unit dims: a register reshape."""
    root = view.root
    assert isinstance(root, (Buffer, Tile))
    if region.L or any(region.offsets) or view.reshaped is not None or view.index is not None:
        return False
    if len(view.dims) != len(root.pdims) or not any(d.squeezed for d in view.dims):
        return False
    kept: list[str] = []
    for d, p, e in zip(view.dims, root.pdims, root.dims):
        if d.step is not None or not (d.origin.is_const and d.origin.const == 0):
            return False
        if d.squeezed:
            if p != "1":
                return False
        elif not (same_extent(d.extent, e) and e.is_const and str(e.const) == p):
            return False
        else:
            kept.append(p)
    return kept == list(region.pdims)


def _tile_buffer_readable(view: View, region: Region) -> bool:
    root = view.root
    assert isinstance(root, (Buffer, Tile))
    if region.L or any(region.offsets):
        return False
    if list(root.pdims) != list(region.pdims):
        return False
    for d in view.dims:
        if not d.whole:
            return False
    return view.reshaped is None


def read_tile(
    self: KernelLowering,
    view: View,
    region: Region,
    span: Any = None,
    engine: str = "dma",
    zfill: bool = False,
    full: list[int] | None = None,
    other: str | None = None,
) -> Val:
    """The values of ``view`` over ``region``; zero outside the view and outside the data."""
    root = view.root
    elem = root.elem
    if isinstance(root, (Tile,)) or (isinstance(root, Buffer) and root.mode == "tile"):
        if isinstance(root, Buffer) and not _ring_slot(self, view, False, span):
            self.need_memory(root)
            return Val(f"tl.zeros({region.shape}, {X.tl_dtype(elem)})", elem)
        if isinstance(root, Buffer) and root.split is not None:
            self.need_padded(root)  # read whole here: its pieces have no common name
            return Val(f"tl.zeros({region.shape}, {X.tl_dtype(elem)})", elem)
        if (view.reshaped is not None and _whole_reshape(view, region)) or _squeezed_whole(view, region):
            src_code = root.var if isinstance(root, Buffer) else root.code
            return Val(f"tl.reshape({src_code}, [{', '.join(region.pdims)}])", elem)
        if not _tile_buffer_readable(view, region):
            if isinstance(root, Buffer):
                self.need_memory(root)
                return Val(f"tl.zeros({region.shape}, {X.tl_dtype(elem)})", elem)
            raise CroqLoweringError("a window of a register tile cannot be lowered", span)
        code = root.var if isinstance(root, Buffer) else root.code
        masks = []
        for d, (p, e) in enumerate(zip(region.pdims, _view_dims(view))):
            if not (e.is_const and str(e.const) == p):
                masks.append(f"({region.r_code(d)} < {e.code})")
        if masks:
            code = f"tl.where({' & '.join(masks)}, {code}, 0)"
        return Val(code, elem)
    self.global_read(root)
    lv = _lift_view(region, view)
    addr, mask = self.address(lv, region)
    zero = other if other is not None else "0.0" if X.is_float(elem) else "0"
    sanitized = X.is_float(elem) and not (zfill or view.zfill)
    var = self.fresh("tile")

    def load(span: Any = None) -> None:
        code, at = self.masked_load(addr, mask, zero, sanitized, span)
        self.w.line(f"{var} = {code}", at)

    quiet = engine == "tma-auto"
    if quiet and root.name in self.global_writes:
        engine = "dma"  # the program also writes this tensor: keep its reads in the generic proxy
    plan = (
        self.tma_plan(view, region, "load", span, zfill or view.zfill, full, quiet=quiet)
        if engine.startswith("tma")
        else None
    )
    if plan is not None:
        flag, desc, coords = plan
        with self.w.block(f"if {flag}:", span):
            self.w.line(f"{var} = {desc}.load([{', '.join(coords)}])")
        with self.w.block("else:"):
            load()
    else:
        load(span)
    return Val(var, elem)


def write_tile(
    self: KernelLowering,
    view: View,
    region: Region,
    value: Val,
    span: Any = None,
    engine: str = "dma",
    full: list[int] | None = None,
    keep: list[str] | None = None,
) -> None:
    """Store ``value`` (a tile over ``region``) into ``view``; ``keep``: extra conditions on the
    region's element indices (``region.r_code``): elements where one fails are not written."""
    root = view.root
    elem = root.elem
    ct = elem
    if isinstance(root, Buffer) and root.mode == "tile":
        if not _ring_slot(self, view, True, span):
            self.need_memory(root)
            return
        if root.split is not None:
            self.need_padded(root)  # written whole here: its pieces have no common name
            return
        if region.L or list(root.pdims) != list(region.pdims) or view.reshaped is not None:
            self.need_memory(root)
            return
        for d in view.dims:
            if not d.whole:
                self.need_memory(root)
                return
        code = value.code if value.ty == ct else f"({value.code}).to({X.tl_dtype(ct)})"
        partial = [
            f"({region.r_code(d)} < {e.code})"
            for d, (p, e, rd) in enumerate(zip(region.pdims, _view_dims(view), root.dims))
            # rows past the buffer's own extent are padding: nobody reads them, keep no old values there
            if not (e.is_const and str(e.const) == p) and not same_extent(e, rd)
        ]
        if self.pred:
            raise CroqLoweringError("a conditional copy into a register tile cannot be lowered", span)
        partial += keep or []
        if partial:
            code = f"tl.where({' & '.join(partial)}, {code}, {root.var})"
        self.w.line(f"{root.var} = {code}", span)
        root.written = True
        return
    if isinstance(root, Tile):
        raise CroqLoweringError("cannot copy into a future's data", span)
    lv = _lift_view(region, view)
    addr, mask = self.address(lv, region)
    if region.L and not _has_lanes(view):
        # every lane stores to the same place (the source has lanes, the destination none): Triton
        # broadcasts a value to its pointers, never pointers to a value, so give them the lanes
        addr = f"{addr} + tl.zeros({region.shape}, tl.int32)"
    if keep:
        mask = " & ".join(([mask] if mask != "None" else []) + keep)
    val = value.code if value.ty == elem else f"({value.code}).to({X.tl_dtype(elem)})"
    store = f"tl.store({addr}, {val}, mask={mask})" if mask != "None" else f"tl.store({addr}, {val})"
    with self.fenced_store(root):
        if engine == "tma-auto" and root.name in self.global_reads:
            engine = "dma"  # the program also reads this tensor: keep the store in the generic proxy
        halves = _half_store(self, region)
        plan = (
            self.tma_plan(view, region, "store", span, False, full, halves, quiet=engine == "tma-auto")
            if engine.startswith("tma") and not self.pred and not keep
            else None
        )
        if plan is not None:
            flag, desc, coords = plan
            with self.w.block(f"if {flag}:", span):
                if halves:
                    # epilogue subtiling (--schedule auto): two half-width TMA stores need half the
                    # staging shared memory of one (perf/gemm_probe.py: 1.018 vs 1.009 of cuBLAS at 8192^3)
                    rows, cols = (int(p) for p in region.pdims)
                    h = self.fresh("_half")
                    self.w.line(
                        f"{h}0, {h}1 = tl.split(tl.permute(tl.reshape({val}, ({rows}, 2, {cols // 2})), (0, 2, 1)))"
                    )
                    self.w.line(f"{desc}.store([{', '.join(coords)}], {h}0)")
                    self.w.line(f"{desc}.store([{coords[0]}, {coords[1]} + {cols // 2}], {h}1)")
                else:
                    self.w.line(f"{desc}.store([{', '.join(coords)}], {val})")
            with self.w.block("else:"):
                self.w.line(store)
        else:
            self.w.line(store, span)


def tma_plan(
    self: KernelLowering,
    view: View,
    region: Region,
    direction: str,
    span: Any = None,
    zfill: bool = False,
    full: list[int] | None = None,
    halves: bool = False,
    quiet: bool = False,
) -> tuple[str, str, list[str]] | None:
    """Use a host TensorDescriptor for this ``tma.copy`` when its box can be decided statically.

    Returns (constexpr flag, descriptor argument, box coordinates), or None after a warning
    that says why the copy uses masked pointer loads.  At launch the flag is set only when the
    tensor meets TMA's run-time rules (16-byte aligned base and strides, extents equal to the box).
    """
    from ..sema.tma_rules import static_reasons, swizzle_reason

    root = view.root
    if not isinstance(root, Tensor):
        return None
    tname = root.name

    what = "loads" if direction == "load" else "stores"

    def no(reason: str) -> None:
        if not quiet:  # a dma.copy that --schedule auto tried as TMA: masked loads are what it asked for
            self.warn(f"tma.copy of '{tname}': {reason}; using masked {what}", span)

    if region.L:
        no("the copied window depends on the thread index")
        return None
    if view.reshaped is not None or view.index is not None or len(view.dims) != len(root.dims):
        no("the window is a reshaped view of the tensor")
        return None
    if any(d.squeezed or d.step is not None or d.limits for d in view.dims):
        no("the window is strided or nested inside another window")
        return None
    box: list[int] = []
    for p, d in zip(region.pdims, view.dims):
        if not p.isdigit():
            no("the box size is only known at launch")
            return None
        # the box is the window's static extent when it has one (Triton pads others to a power of two);
        # a piece of a split tile is its own box
        box.append(int(p) if full is not None else int(d.extent.const) if d.extent.is_const else int(p))
    elem_bytes = TYPES[root.elem].nbytes
    swz = self.current_swizzle
    sw_reason = swizzle_reason(box, elem_bytes, swz)
    if sw_reason is not None and quiet:
        return None
    if sw_reason is not None:
        raise CroqLoweringError(
            f"tma.copy of '{tname}': {sw_reason}",
            span,
            "use a wider swizzle (.swiz<128>) or a narrower tile",
        )
    reasons = static_reasons(len(root.dims), box, elem_bytes, swz)
    if reasons:
        no(reasons[0])
        return None
    host_exts: list[str] = []
    for k, (d, b) in enumerate(zip(view.dims, box)):
        e = d.extent
        want = full[k] if full is not None else b
        if e.is_const:
            if e.const != want:
                no(f"the window extent {e.const} differs from the box {b}")
                return None
            host_exts.append(str(b))
        elif e.host is not None:
            host_exts.append(e.host)
        else:
            no("the window extent changes inside the kernel")
            return None
        if not d.origin.uniform:
            no("the window origin depends on the thread index")
            return None
    inner = view.dims[-1]
    if not _aligned16(inner.origin, inner.extent, elem_bytes, box[-1]) or (region.offsets[-1] * elem_bytes) % 16:
        no("the innermost offset is not provably a multiple of 16 bytes")
        return None
    self.tensor(root)
    if [str(b) for b in box] != list(region.pdims):
        no("the box differs from the tile")
        return None
    dbox = [box[0], box[1] // 2] if halves else box  # a half-width store box (epilogue subtiling)
    flag, desc = _desc_arg(
        self,
        root,
        box,
        host_exts,
        what + (" (auto)" if quiet else ""),
        dbox,
        "_z" if zfill and direction == "load" else "",
        '"zero"' if (zfill or direction == "store") else "_OOB_PADDING",
    )
    coords = [d.origin.code if not off else f"{d.origin.code} + {off}" for d, off in zip(view.dims, region.offsets)]
    return flag, desc, coords


def _desc_arg(
    self: KernelLowering,
    root: Tensor,
    box: list[int],
    host_exts: list[str],
    what: str,
    dbox: list[int],
    suffix: str,
    padding: str,
) -> tuple[str, str]:
    """Kernel arguments of a TensorDescriptor: the constexpr flag the launcher sets when the tensor
    meets TMA's run-time rules for ``box`` over a window of ``host_exts``, and the descriptor of
    ``dbox`` (``padding``: the fill outside the tensor).  Returns (flag, descriptor argument)."""
    key = f"{root.name}_{'x'.join(map(str, box))}"
    flag = self.constexpr(
        f"TMA_{key.upper()}",
        f"_rt.tma_ok(_F, {root.name!r}, {root.host_name}, {box}, [{', '.join(host_exts)}], {what!r})",
    )
    desc = f"{root.name}_desc_{'x'.join(map(str, dbox))}{suffix}"
    self.args[desc] = ("desc", f"_rt.tma_desc({root.host_name}, {dbox}, {flag}, {padding})")
    return flag, desc


def _half_store(self: KernelLowering, region: Region) -> bool:
    """``--schedule auto`` stores 2-D tiles of 256 or more columns as two half-width TMA boxes."""
    p = region.pdims
    return (
        self.fl.schedule == "auto"
        and not region.L
        and len(p) == 2
        and all(x.isdigit() for x in p)
        and int(p[1]) >= 256
        and int(p[1]) % 32 == 0
    )


def _aligned16(origin: Val, extent: Val, elem_bytes: int, box: int) -> bool:
    """Is ``origin`` (elements) a multiple of 16 bytes whenever the descriptor is used?

    True for constants that are, and for ``index * extent``: the launcher only enables the
    descriptor when the extent equals the box, whose inner size is a multiple of 16 bytes.
    """
    unit = 16 // elem_bytes if elem_bytes <= 16 else 1
    if unit <= 1:
        return True
    if origin.is_const:
        return int(origin.const) % unit == 0
    ext = f"{extent.const})" if extent.is_const else f"{extent.code})"
    return box % unit == 0 and origin.code.endswith(f" * {ext}")


# ---------------------------------------------------------------- DMA statements
def s_DmaStmt(self: KernelLowering, s: A.DmaStmt) -> None:
    if s.op in ("transp", "pad"):
        _reshaping_copy(self, s)
        return
    if s.op not in ("copy", "load"):
        raise CroqLoweringError(f"'{s.engine}.{s.op}' copies are not lowered yet", s.span)
    for at in s.attrs:
        if at.name == "sp":
            raise CroqLoweringError("cannot lower to Triton: 2:4 sparse copies", at.span)
    src = self.as_view(self.ev_any(s.src), s.src)
    if s.dst_storage:
        assert isinstance(s.dst, A.Name)
        dims = _view_dims(src)
        for d in dims:
            if not d.uniform:
                raise CroqLoweringError("the shape of this copy depends on the thread index", s.span)
        name = f"{s.result}_data" if s.result else self.fresh("copy")
        dims_h = [self.fl_dim(d) for d in dims]
        prev = self.lookup_opt(s.result) if s.result else None
        old = prev.data if isinstance(prev, Future) else None
        if (
            isinstance(old, Buffer)
            and old.storage == s.dst.name
            and old.elem == src.root.elem
            and [d.code for d in old.dims] == [d.code for d in dims_h]
        ):
            # a future copied into again keeps its buffer (double buffering with swap/rotate)
            buf = old
        else:
            buf = self.new_buffer(name, src.root.elem, dims_h, s.dst.name, s.span)
            if isinstance(prev, Future) and prev.data is None and s.result not in self.any_shapes:
                self.any_shapes[s.result] = (src.root.elem, dims_h, s.dst.name)
                self.changed = True
        buf.owners = view_owners(src) if self.cons_counts else ()  # each merged unit copies its block
        dst = self.as_view(buf, s.dst)
    else:
        dst = self.as_view(self.ev_any(s.dst), s.dst)
        check_moved(self, view_owners(src), view_owners(dst), f"'{s.engine}.{s.op}'", s.span)
    region = self.region_for(src, dst)
    engine = s.engine
    if engine == "dma" and self.fl.schedule == "auto" and isinstance(src.root, Tensor) != isinstance(dst.root, Tensor):
        # --schedule auto: a dma.copy between a tensor window and a tile may be done by TMA (same
        # values: reads outside the tensor are zero, writes there dropped) where its box allows;
        # quietly masked loads / stores where not
        engine = "tma-auto"
    swz = _swizzle_bytes(s.attrs)
    zfill = any(a.name == "zfill" for a in s.attrs)
    self.current_swizzle = swz
    if swz:
        self.w.comment(f".swiz<{swz}>: {swz}-byte XOR swizzle in shared memory (Triton chooses its own shared layouts)")
    from .pieces import copy_split

    if not copy_split(self, src, dst, engine, zfill, s.span):
        value = self.read_tile(src, region, s.span, engine if isinstance(src.root, Tensor) else "dma", zfill)
        self.write_tile(dst, region, value, s.span, engine if isinstance(dst.root, Tensor) else "dma")
    self.current_swizzle = None
    if isinstance(dst.root, Buffer) and swz is not None:
        dst.root.swizzle = swz
        dst.root.swizzle_span = s.span  # type: ignore[attr-defined]
    if s.result:
        data: Any = dst.root if (isinstance(dst.root, Buffer) and dst.whole()) else dst
        self.rebind(s.result, Future(s.result, data, s.is_async))


def _swizzle_bytes(attrs: list[A.DmaAttr]) -> int | None:
    for a in attrs:
        if a.name == "swiz":
            return swizzle_bytes(a.args[0] if a.args else 0)
    return None


def _reshaping_copy(self: KernelLowering, s: A.DmaStmt) -> None:
    """``dma.transp<p...>`` (permute the dims) and ``dma.pad<{lo}, {hi}, {mid}, v>`` (border of v)."""
    src = self.as_view(self.ev_any(s.src), s.src)
    sdims = _view_dims(src)
    rank = len(sdims)
    cfg = s.cfg or []
    if s.op == "transp":
        perm = [int(c.value) for c in cfg if isinstance(c, A.IntLit)]
        if sorted(perm) != list(range(rank)):
            raise CroqSemanticError(f"transp<{', '.join(map(str, perm))}> is not a permutation of {rank} dims", s.span)
        ddims = [sdims[p] for p in perm]
        region_s = self.tile_of(src)
        if region_s.L:
            raise CroqLoweringError("a transposing copy that depends on the thread index cannot be lowered", s.span)
        value = self.read_tile(src, region_s, s.span)
        code = f"tl.trans({value.code})" if rank == 2 else f"tl.permute({value.code}, {perm})"
        value = Val(code, value.ty)
        pd = [region_s.pdims[p] for p in perm]
        offsets = None
        other = None
    else:
        lo, hi, mid = ([int(x.value) for x in t.items] for t in cfg[:3])  # type: ignore[attr-defined]
        if any(mid):
            raise CroqLoweringError("interior padding (the third list of dma.pad) is not supported", s.span)
        if not (len(lo) == len(hi) == rank):
            raise CroqSemanticError(f"dma.pad needs {rank} values per border list", s.span)
        ddims = [X.binary("+", d, const(a + b), False) for d, a, b in zip(sdims, lo, hi)]
        pv = self.ev(cfg[3])
        pd = []
        for d in ddims:
            if not d.is_const:
                raise CroqLoweringError("a padding copy needs a fixed size", s.span)
            pd.append(str(pow2(int(d.const))))
        offsets = [-a for a in lo]
        other = self.cast(pv, src.root.elem)
        value = None
    if s.dst_storage:
        assert isinstance(s.dst, A.Name)
        name = f"{s.result}_data" if s.result else self.fresh("copy")
        buf = self.new_buffer(name, src.root.elem, ddims, s.dst.name, s.span)
        dst = View(buf, [ViewDim(const(0), d, None, []) for d in ddims])
    else:
        dst = self.as_view(self.ev_any(s.dst), s.dst)
    if s.op == "pad":
        region_src = Region(self, pd, ddims, False, offsets)
        value = self.read_tile(src, region_src, s.span, zfill=True, other=other)
    region_d = Region(self, pd, _view_dims(dst), False)
    self.write_tile(dst, region_d, value, s.span)  # type: ignore[arg-type]
    if s.result:
        self.rebind(s.result, Future(s.result, dst.root if isinstance(dst.root, Buffer) else dst, s.is_async))


def fl_dim(self: KernelLowering, v: Val) -> Val:
    return v


def s_DmaAny(self: KernelLowering, s: A.DmaAny) -> None:
    """``f = dma.any``: a placeholder future.  Its buffer is allocated here, with the shape of the
    first copy later bound to ``f`` (learnt in an earlier pass), so that it outlives loops."""
    shape = self.any_shapes.get(s.result)
    if shape is None:
        self.rebind(s.result, Future(s.result, None, True))
        return
    elem, dims, storage = shape
    buf = self.new_buffer(f"{s.result}_data", elem, dims, storage, s.span)
    self.rebind(s.result, Future(s.result, buf, True))


def s_MapStmt(self: KernelLowering, s: A.MapStmt) -> None:
    raise CroqLoweringError("cannot lower to Triton: buffer mapping ('.map'/'.remap')", s.span)


# ---------------------------------------------------------------- MMA
def _frag_tile(f: Frag) -> Tile:
    return Tile(f.var, f.compute, f.dims or [], f.pdims or [])


def s_MmaFill(self: KernelLowering, s: A.MmaFill) -> None:
    value = self.ev(s.value)
    if s.result is None:
        f = self.lookup_frag(s.target)
        self.w.line(
            f"{f.var} = tl.full([{', '.join(f.pdims or [])}], {self.cast(value, f.compute)}, {X.tl_dtype(f.compute)})",
            s.span,
        )
        return
    elem = s.elem or (
        "s32" if X.is_int(value.ty) and value.ty not in (None,) and not isinstance(value.const, float) else "f32"
    )
    compute = "s32" if X.is_int(elem) else ("f64" if elem == "f64" else "f32")
    shape = self.frag_shapes.get(id(s))
    split = None
    if shape is None:
        if not any(
            isinstance(n, (A.MmaOp, A.MmaScale))
            and any(isinstance(x, A.Name) and x.name == s.result for x in n.acc.walk())
            for n in self.top.walk()
        ):
            raise CroqLoweringError(
                f"the shape of the accumulator '{s.result}' is unknown: no 'mma' in this 'parallel' uses it",
                s.span,
                "an accumulator takes its shape from the MMAs that update it; put them in the same 'parallel'"
                " (a 'parallel' without braces holds only the next statement)",
            )
        dims, pdims = [const(16), const(16)], ["16", "16"]
        self.changed = True  # the shape comes from the first MMA that uses it
    else:
        dims, pdims = shape[0], shape[1]
        split = shape[2] if len(shape) > 2 else None
    var = self.fresh(s.result)
    if split is not None:
        d, pieces = split
        for k, (_, size) in enumerate(pieces):
            pd = [str(size) if i == d else pdims[i] for i in range(2)]
            self.w.line(
                f"{var}_{k} = tl.full([{', '.join(pd)}], {self.cast(value, compute)}, {X.tl_dtype(compute)})", s.span
            )
    else:
        self.w.line(
            f"{var} = tl.full([{', '.join(pdims)}], {self.cast(value, compute)}, {X.tl_dtype(compute)})", s.span
        )
    f = Frag(s.result, var, elem, compute, dims, pdims, split)
    f.fill_id = id(s)  # type: ignore[attr-defined]
    self.bind(s.result, f)


def s_FragInit(self: KernelLowering, s: A.FragInit) -> None:
    raise CroqLoweringError("'frag' declarations are not lowered yet", s.span)


def s_MmaScale(self: KernelLowering, s: A.MmaScale) -> None:
    """``mma.scale acc, sa, sb``: the MMAs issued into ``acc`` since the previous one went to the
    hidden accumulator ``s.temp`` (lower/splitscale.py); ``acc += temp * sa * sb``."""
    if s.temp is None:
        raise CroqLoweringError("'mma.scale' needs a named accumulator", s.acc.span)
    acc, temp = self.lookup_frag(s.acc), self.lookup_frag(A.Name(s.temp, span=s.span))
    fid = getattr(acc, "fill_id", None)
    shape = (temp.dims, temp.pdims, temp.split)
    if fid is not None and self.frag_shapes.get(fid) != shape:
        self.frag_shapes[fid] = shape  # type: ignore[assignment]  # acc has the shape of what it adds
        self.changed = True
    factor, per_row, per_col = _scale_factors(self, [s.sa, s.sb], s.span)
    if acc.compute == "s32":
        raise CroqLoweringError("a block-scaled MMA needs a floating-point accumulator", s.span)
    if acc.split != temp.split or acc.pdims != temp.pdims:
        raise CroqLoweringError("the MMAs scaled by this 'mma.scale' do not have the accumulator's shape", s.span)
    if acc.split is None:
        self.w.line(f"{acc.var} = {acc.var} + {temp.var} * {factor}", s.span)
        return
    from .pieces import check_scaled_split, piece_var

    d, pieces = acc.split
    check_scaled_split(d, per_row, per_col, s.span)
    for k in range(len(pieces)):
        a, t = piece_var(acc.var, k), piece_var(temp.var, k)
        self.w.line(f"{a} = {a} + {t} * {factor}", s.span)


def lookup_frag(self: KernelLowering, e: A.Expr | None) -> Frag:
    if not isinstance(e, A.Name):
        raise CroqLoweringError("arrays of fragments are not lowered yet", e.span if e is not None else None)
    f = self.lookup(e.name, e)
    if isinstance(f, Tile) and len(f.pdims) == 2:
        # an accumulator loaded with mma.load (C += A x B): carry it in f32 from here on
        compute = "s32" if X.is_int(f.elem) else "f32"
        var = self.fresh(e.name)
        self.w.line(f"{var} = ({f.code}).to({X.tl_dtype(compute)})", e.span)
        f = Frag(e.name, var, f.elem, compute, list(f.dims), list(f.pdims))
        self.rebind(e.name, f)
        return f
    if not isinstance(f, Frag):
        raise CroqSemanticError(f"'{e.name}' is not an MMA accumulator", e.span)
    return f


def _operand(self: KernelLowering, e: A.Expr, span: Any) -> Tile:
    v = self.ev_any(e)
    if isinstance(v, Tile):
        return v
    if isinstance(v, Frag):
        return _frag_tile(v)
    view = self.as_view(v, e)
    region = self.tile_of(view)
    if region.L:
        raise CroqLoweringError("an MMA operand that depends on the thread index cannot be lowered", span)
    val = self.read_tile(view, region, span)
    return Tile(val.code, view.root.elem, _view_dims(view), list(region.pdims), owners=view_owners(view))


def s_MmaLoad(self: KernelLowering, s: A.MmaLoad) -> None:
    if s.result is not None:
        self.mma_load_src = getattr(self, "mma_load_src", {})
        self.mma_load_src[s.result] = s.src
    if s.swiz_given:
        _check_swizzle(self, s)
    from .pieces import operand_pieces

    if s.result is not None and operand_pieces(self, s.src, s.span) is not None:
        self.bind(s.result, self.ev_any(s.src))  # a split tile: its pieces are the operand
        return
    t = _operand(self, s.src, s.span)
    if s.swiz is not None or s.swiz_given:
        t = Tile(t.code, t.elem, t.dims, t.pdims, owners=t.owners)
    if s.result is None:
        raise CroqLoweringError("'mma.load view, frag' is not lowered yet", s.span)
    self.bind(s.result, t)
    if len(t.pdims) == 2 and any(
        isinstance(n, A.MmaOp) and isinstance(n.acc, A.Name) and n.acc.name == s.result for n in self.top.walk()
    ):
        # an accumulator starting from the loaded tile (C += A x B): converted here, where it is
        # loaded, not at its first MMA (which may sit in the K loop and would restart it each step)
        lookup_frag(self, A.Name(s.result, span=s.span))


def _check_swizzle(self: KernelLowering, s: A.MmaLoad) -> None:
    want = swizzle_bytes(s.swiz) if s.swiz is not None else None
    src = self.ev_any(s.src)
    root = src.root if isinstance(src, View) else src
    if not isinstance(root, Buffer) or root.swizzle is None:
        return  # a swizzle given on one side only is propagated, not checked
    if (want or 0) != (root.swizzle or 0):
        wsp = getattr(root, "swizzle_span", None)
        where = f" at {wsp.file}:{wsp.line}" if wsp is not None else ""
        raise CroqLoweringError(
            f"'{root.name}' is written with .swiz<{root.swizzle}>{where} but read with mma.load.swiz<{want or 0}>",
            s.span,
            "the copy into a buffer and the mma.load from it must use the same swizzle",
        )


def _scale_factors(self: KernelLowering, extra: list[A.Expr], span: Any) -> tuple[str, bool, bool]:
    """``mma.L1.L2.scale acc, A, B, sa, sb``: the factor this MMA's product is multiplied by
    before it is added to ``acc`` (LANGUAGE.md 7.9): ``sa`` a scalar or one value per row of A
    ([M, 1] or [M]), ``sb`` a scalar or one value per column of the result ([1, N] or [N]).
    Returns (code, whether it varies along M, whether it varies along N)."""
    if len(extra) != 2:
        raise CroqLoweringError("'mma.*.scale' takes two scale operands (sa, sb)", span)
    name = getattr(self, "collapsing", None)
    if name is not None and any(isinstance(n, A.Name) and n.name == name for e in extra for n in e.walk()):
        raise CroqLoweringError(
            f"the scales change with '{name}': the loop cannot be folded into one MMA", extra[0].span
        )
    parts: list[str] = []
    per_row = per_col = False
    for k, e in enumerate(extra):
        v = self.ev_any(e)
        if isinstance(v, Val) and not v.axes:
            parts.append(f"({v.code})")
            continue
        t = _operand(self, e, span)
        pd = list(t.pdims)
        if k == 0 and pd in ([pd[0]], [pd[0], "1"]) and pd[0] != "1":
            parts.append(f"({t.code}).to(tl.float32)" + ("[:, None]" if len(pd) == 1 else ""))
            per_row = True
        elif k == 1 and pd in ([pd[-1]], ["1", pd[-1]]) and pd[-1] != "1":
            parts.append(f"({t.code}).to(tl.float32)" + ("[None, :]" if len(pd) == 1 else ""))
            per_col = True
        elif pd in (["1"], ["1", "1"]):
            parts.append(f"tl.reshape(({t.code}).to(tl.float32), [1, 1])")
        else:
            what = "one value per row of A" if k == 0 else "one value per column of the result"
            raise CroqLoweringError(
                f"a scale of shape {shape_text(t.dims, t.pdims)} cannot scale this MMA",
                e.span,
                f"give a scalar or {what}",
            )
    return " * ".join(parts), per_row, per_col


def check_mma_k(s: A.MmaOp, a: Tile, a_k: int, b: Tile, b_k: int) -> None:
    """A and B of ``mma`` must have the same K extent (provably: equal spellings of one meaning);
    the message names the operands and their extents as the source writes them."""
    ea, eb = a.dims[a_k], b.dims[b_k]
    if a.pdims[a_k] == b.pdims[b_k] or same_extent(ea, eb):
        return
    pr = Printer()
    ta = user_text(ea) or "a value computed in the kernel"
    tb = user_text(eb) or "a value computed in the kernel"
    raise CroqSemanticError(
        f"MMA operands disagree on K: '{pr.expr(s.a)}' has K = {ta}, '{pr.expr(s.b)}' has K = {tb}",
        s.span,
        f"'mma.{s.layout[0]}.{s.layout[1]}' reads K along dim {a_k} of A and dim {b_k} of B; the two extents must be equal",
    )


def s_MmaOp(self: KernelLowering, s: A.MmaOp) -> None:
    if s.variant == "sp":
        raise CroqLoweringError(f"'mma.*.{s.variant}' is not lowered yet", s.span)
    scale = _scale_factors(self, s.extra, s.span) if s.variant == "scale" else None
    acc = self.lookup_frag(s.acc)
    from .pieces import mma_pieces, operand_pieces

    mma_owners(self, s, acc)
    pa = operand_pieces(self, s.a, s.span)
    pb = operand_pieces(self, s.b, s.span)
    if pa is not None or pb is not None or acc.split is not None:
        if getattr(self, "collapsing", None) is not None:
            self.collapse_ok(s, 1 if s.layout[0] == "row" else 0, 1 if s.layout[1] == "row" else 0)
        a_ops = pa if pa is not None else [(_operand(self, s.a, s.span), [0, 0])]
        b_ops = pb if pb is not None else [(_operand(self, s.b, s.span), [0, 0])]
        a_k, b_k = (1 if s.layout[0] == "row" else 0), (1 if s.layout[1] == "row" else 0)
        if not any(o[1][a_k] for o in a_ops) and not any(o[1][b_k] for o in b_ops):
            check_mma_k(s, a_ops[0][0], a_k, b_ops[0][0], b_k)  # (pieces along K are paired by mma_pieces)
        prec = ', input_precision="tf32"' if a_ops[0][0].elem in ("f32", "tf32") else ""
        dims, pdims, split = mma_pieces(self, acc, a_ops, b_ops, s.layout, prec, s.span, scale)
        self.has_dot = True
        fid = getattr(acc, "fill_id", None)
        if fid is not None and (self.frag_shapes.get(fid) or (None, None, None))[1:] != (pdims, split):
            self.frag_shapes[fid] = (dims, pdims, split)  # type: ignore[assignment]
            self.changed = True
        return
    a = _operand(self, s.a, s.span)
    b = _operand(self, s.b, s.span)
    la, lb = s.layout
    if len(a.pdims) != 2 or len(b.pdims) != 2:
        raise CroqLoweringError("MMA operands must be 2-D tiles", s.span)
    ac, bc = a.code, b.code
    a_m, a_k = (0, 1) if la == "row" else (1, 0)
    b_n, b_k = (0, 1) if lb == "row" else (1, 0)
    if la == "col":
        ac = f"tl.trans({ac})"
    if lb == "row":
        bc = f"tl.trans({bc})"
    if getattr(self, "collapsing", None) is not None:
        self.collapse_ok(s, a_k, b_k)
    check_mma_k(s, a, a_k, b, b_k)
    dims = [a.dims[a_m], b.dims[b_n]]
    pdims = [a.pdims[a_m], b.pdims[b_n]]
    fid = getattr(acc, "fill_id", None)
    if fid is not None:
        old = self.frag_shapes.get(fid)
        if old is None or old[1] != pdims or (len(old) > 2 and old[2] is not None):
            self.frag_shapes[fid] = (dims, pdims, None)  # type: ignore[assignment]
            self.changed = True
    if X.is_float(a.elem) and a.elem in ("bf16",):
        ac = f"_as_dot_operand({ac})"
        bc = f"_as_dot_operand({bc})"
    prec = ""
    if a.elem in ("f32", "tf32") or b.elem in ("f32", "tf32"):
        prec = ', input_precision="tf32"'
    self.has_dot = True
    code = f"tl.dot({ac}, {bc}, {acc.var}{prec})"
    if scale is not None:
        if acc.compute == "s32":
            raise CroqLoweringError("a block-scaled MMA needs a floating-point accumulator", s.span)
        code = f"{acc.var} + tl.dot({ac}, {bc}{prec}) * {scale[0]}"
    elif acc.compute == "s32":
        if a.elem == "u8" or b.elem == "u8":
            # Triton's integer dot takes int8 only: u8 products summed exactly in f32 per K tile
            code = f"{acc.var} + tl.dot({ac}.to(tl.float16), {bc}.to(tl.float16), out_dtype=tl.float32).to(tl.int32)"
        else:
            code = f"tl.dot({ac}, {bc}, {acc.var}, out_dtype=tl.int32)"
    if s.result is not None:
        self.rebind(s.result, Future(s.result, None, True))
    self.w.line(f"{acc.var} = {code}", s.span)


def s_MmaStore(self: KernelLowering, s: A.MmaStore) -> None:
    acc = self.lookup_frag(s.acc)
    if acc.owners is not None:
        mine = tuple(reversed(acc.owners)) if s.variant == "transp" else tuple(acc.owners)
        check_moved(self, mine, value_owners(self.ev_any(s.dst)), f"'mma.store' of '{acc.name}'", s.span)
    if acc.split is not None:
        from .pieces import store_split

        if s.variant in ("transp", "mask"):
            raise CroqLoweringError(f"'mma.store.{s.variant}' of a split accumulator is not lowered yet", s.span)
        store_split(self, acc, self.as_view(self.ev_any(s.dst), s.dst), s.span)
        return
    t = _frag_tile(acc)
    code = acc.var
    if s.variant == "transp":
        code = f"tl.trans({code})"
        t = Tile(code, t.elem, list(reversed(t.dims)), list(reversed(t.pdims)))
    dst = self.as_view(self.ev_any(s.dst), s.dst)
    src = View(Tile(code, acc.compute, t.dims, t.pdims), [ViewDim(const(0), d, None, []) for d in t.dims])
    region = self.region_for(src, dst)
    keep = _store_mask(self, s, region) if s.variant == "mask" else None
    value = self.read_tile(src, region, s.span)
    self.write_tile(dst, region, value, s.span, keep=keep)


def _store_mask(self: KernelLowering, s: A.MmaStore, region: Region) -> list[str]:
    """``mma.store.mask acc, VIEW, rows[, cols]``: only the first ``rows`` rows (and ``cols``
    columns) of the accumulator are stored (LANGUAGE.md 7.9; the tails of ragged tiles)."""
    if len(region.pdims) != 2 or not 1 <= len(s.extra) <= 2:
        raise CroqLoweringError("'mma.store.mask' takes a 2-D accumulator and one or two counts", s.span)
    keep = []
    for d, e in enumerate(s.extra):
        v = self.ev(e)
        if not X.is_int(v.ty):
            raise CroqLoweringError("the counts of 'mma.store.mask' must be integers", e.span)
        keep.append(f"({region.r_code(d)} < {v.code})")
    return keep


# ---------------------------------------------------------------- loop lifting
def _single_within(s: A.Foreach) -> A.Within | None:
    """The loop's only iteration item when it binds exactly one named counter."""
    if len(s.items) != 1 or not isinstance(s.items[0], A.Within):
        return None
    wi = s.items[0]
    names = wi.vars if wi.vars is not None else [wi.name]
    return wi if len(names) == 1 and names[0] is not None else None


def try_collapse(self: KernelLowering, s: A.Foreach) -> bool:
    """``foreach k in [n] { a = mma.load x.chunkat(_, k); ...; mma acc, a, b; }`` -> one whole-K MMA."""
    wi = _single_within(s)
    if wi is None:
        return False
    kname = wi.name if wi.vars is None else wi.vars[0]
    assert kname is not None
    stmts = _flatten_unit_parallels(s.body.stmts if isinstance(s.body, A.Block) else [s.body])
    if stmts is None or not stmts or not all(_collapsible(x) for x in stmts):
        return False
    if not any(isinstance(x, A.MmaOp) for x in stmts):
        return False
    bounds = self.shape_extents(wi.shape, wi)
    if len(bounds) != 1 or not bounds[0].is_const:
        return False

    self.push()
    self.bind(kname, Collapsed(bounds[0]))
    self.collapsing = kname
    self.mma_load_src = getattr(self, "mma_load_src", {})
    try:
        for x in stmts:
            if isinstance(x, A.AssignStmt):
                for a in x.items:
                    self.mma_load_src[a.target.name] = a.value  # type: ignore[union-attr]
            self.stmt(x)
    finally:
        self.collapsing = None
        self.pop()
    self.w.comment(f"the loop over '{kname}' splits K into {bounds[0].const} pieces: folded into the dot above")
    return True


def _flatten_unit_parallels(stmts: list[A.Stmt]) -> list[A.Stmt] | None:
    """Inline ``parallel by 1 : group-4 { ... }`` (one warpgroup: no new lanes)."""
    out: list[A.Stmt] = []
    for x in stmts:
        if isinstance(x, A.Parallel):
            if any(
                b.vars is not None or not (isinstance(b.bound[0], A.IntLit) and b.bound[0].value == 1) for b in x.levels
            ):
                return None
            inner = _flatten_unit_parallels(x.body.stmts if isinstance(x.body, A.Block) else [x.body])
            if inner is None:
                return None
            out.extend(inner)
        else:
            out.append(x)
    return out


def _collapsible(x: A.Stmt) -> bool:
    if isinstance(x, (A.MmaLoad, A.MmaOp, A.Empty, A.MmaCommit)):
        return True
    # operand views bound to names: ``ma = lhs_s.chunkat(_, k)``
    return isinstance(x, A.AssignStmt) and all(
        isinstance(a.target, A.Name) and a.op == "=" and isinstance(a.value, A.View) for a in x.items
    )


def collapse_ok(self: KernelLowering, s: A.MmaOp, a_k: int, b_k: int) -> None:
    """A folded K loop must only split the contraction dims of the MMA operands."""
    name = self.collapsing
    for operand, kdim in ((s.a, a_k), (s.b, b_k)):
        used = _collapsed_dims(self, operand, name)
        if used and used != {kdim}:
            raise CroqLoweringError(
                f"the loop over '{name}' splits a non-K dimension of an MMA operand; it cannot be folded",
                operand.span,
            )


def _collapsed_dims(self: KernelLowering, e: A.Expr, name: str) -> set[int]:
    src = e
    if isinstance(e, A.Name):
        defs = getattr(self, "mma_load_src", {})
        src = defs.get(e.name, e)
    out: set[int] = set()
    if isinstance(src, A.View):
        for op in src.ops:
            items = op.args if op.kind == "chunkat" else (op.at or [])
            for d, x in enumerate(items):
                if isinstance(x, A.Name) and x.name == name:
                    out.add(d)
    return out


def try_dot_loop(self: KernelLowering, s: A.Foreach) -> bool:
    """``foreach k in [K] acc += a.at(i(m), k) * b.at(j(n), k)`` with per-thread ``acc`` -> ``tl.dot``."""
    if id(s) in self.no_dot or len(self.lanes) != 2:
        return False
    wi = _single_within(s)
    if wi is None:
        return False
    kname = wi.name if wi.vars is None else wi.vars[0]
    assert kname is not None
    stmts = s.body.stmts if isinstance(s.body, A.Block) else [s.body]
    if len(stmts) != 1 or not isinstance(stmts[0], A.AssignStmt) or len(stmts[0].items) != 1:
        return False
    asg = stmts[0].items[0]
    if not isinstance(asg.target, A.Name) or asg.op != "+":
        return False
    prod = asg.value
    while isinstance(prod, A.Paren):
        prod = prod.expr
    if not (isinstance(prod, A.Binary) and prod.op == "*"):
        return False
    xa, xb = prod.lhs, prod.rhs
    while isinstance(xa, A.Paren):
        xa = xa.expr
    while isinstance(xb, A.Paren):
        xb = xb.expr
    if not (isinstance(xa, A.At) and isinstance(xb, A.At)):
        return False
    acc = self.lookup(asg.target.name, asg.target)
    if not isinstance(acc, Val) or acc.code not in self.decl_types or len(acc.axes) != 2 or self.pred:
        return False
    bounds = self.shape_extents(wi.shape, wi)
    if len(bounds) != 1 or not bounds[0].uniform:
        return False
    kbound = bounds[0]
    lane_a, lane_b = [ax for ax in self.lanes if ax.name in acc.axes]
    ident = [_identity_tile(self, x, kname, kbound) for x in (xa, xb)]
    if ident[0] is not None and ident[1] is not None:
        (ta, la_name), (tb, lb_name) = ident  # type: ignore[misc]
        if {la_name, lb_name} == {lane_a.name, lane_b.name}:
            if la_name != lane_a.name:
                ta, tb = tb, ta
            self.has_dot = True
            acc_ty = self.decl_types[acc.code]
            ops = (ta.var, tb.var)
            if "bf16" in (ta.elem, tb.elem):
                ops = (f"_as_dot_operand({ta.var})", f"_as_dot_operand({tb.var})")
            order = [ax.name for ax in self.lanes if ax.name in acc.axes]
            res = f"tl.dot({ops[0]}, tl.trans({ops[1]}))"
            if order != [lane_a.name, lane_b.name]:
                res = f"tl.trans({res})"
            ct = "f32" if acc_ty in ("f16", "bf16") else X.compute_type(acc_ty)
            if ct == "f32" and res.startswith("tl.dot("):  # accumulate in the MMA itself
                self.w.line(f"{acc.code} = {res[:-1]}, {acc.code})", s.span)
            else:
                self.w.line(f"{acc.code} = ({acc.code}.to(tl.float32) + {res}).to({X.tl_dtype(ct)})", s.span)
            self.w.comment("per-thread dot product over a whole shared tile lifted to tl.dot")
            return True
    probe = Val("__k__", "int", None, frozenset(["__k__"]), None, (), True)
    deps = []
    for x in (xa, xb):
        self.push()
        self.bind(kname, Bounded(kname, probe, kbound, "loop"))
        saved = (self.w, self.uid, self.changed)
        self.w = type(self.w)(self.fl.src_name)
        try:
            v = self.ev(x)
        except CroqLoweringError:
            self.w, self.uid = saved[0], saved[1]
            self.pop()
            return False
        self.w, self.uid = saved[0], saved[1]
        self.pop()
        if X.is_int(v.ty) or not X.is_float(v.ty):
            return False
        deps.append(v.axes)
    da, db = deps
    if "__k__" not in da or "__k__" not in db:
        return False
    if da - {"__k__"} == {lane_a.name} and db - {"__k__"} == {lane_b.name}:
        pass
    elif da - {"__k__"} == {lane_b.name} and db - {"__k__"} == {lane_a.name}:
        xa, xb = xb, xa
    else:
        return False
    # emit the K-tiled dot (auto: the 128 x 128 coarsened dots want a deeper K step)
    bk = 64 if self.fl.schedule == "auto" else 32
    acc_ty = self.decl_types[acc.code]
    k0 = self.fresh("k0")
    kk = self.fresh("kk")
    dacc = self.fresh("dot_acc")
    sa, sb = lane_a.size, lane_b.size
    self.has_dot = True
    order = [ax.name for ax in self.lanes if ax.name in acc.axes]
    init = (
        f"{acc.code}.to(tl.float32)" if order == [lane_a.name, lane_b.name] else f"tl.trans({acc.code}.to(tl.float32))"
    )
    # the dot accumulates onto the accumulator's value (one live [sa, sb] accumulator, not two)
    self.w.line(f"{dacc} = tl.zeros([{sa}, {sb}], tl.float32) + {init}", s.span)
    kcode = kbound.code
    with self.w.block(f"for {k0} in range(0, {kcode}, {bk}):", s.span):
        self.w.line(f"{kk} = {k0} + tl.arange(0, {bk})")
        tiles = []
        for x, lane, first in ((xa, lane_a, True), (xb, lane_b, False)):
            self.push()
            # operand layout [lane, k]: the lane index on dim 0, k on dim 1
            lane_code = f"{lane.var}[:, None]"
            lane_mask = (f"({lane.var} < {lane.extent.code})[:, None]",) if lane.padded else ()
            kval = Val(f"{kk}[None, :]", "int", None, frozenset(["__k__"]), None, (f"({kk} < {kcode})[None, :]",), True)
            self.bind(kname, Bounded(kname, kval, kbound, "loop"))
            self.bind(
                lane.name,
                Bounded(
                    lane.name,
                    Val(lane_code, "int", None, frozenset([lane.name]), None, lane_mask, True),
                    lane.extent,
                    "lane",
                ),
            )
            _rebind_lane_aliases(self, lane.name)
            t = self.fresh("opA" if first else "opB")
            tma = _lifted_tma(self, x, lane, kname, k0, bk) if self.fl.schedule == "auto" else None
            if tma is not None:
                flag, load = tma
                with self.w.block(f"if {flag}:"):
                    self.w.line(f"{t} = {load}")
                self.w.line("else:")
                self.w.depth += 1
            self.dot_mode = True
            try:
                v = self.ev(x)
            finally:
                self.dot_mode = False
                self.pop()
            self.w.line(f"{t} = {v.code}")
            if tma is not None:
                self.w.depth -= 1
            tiles.append((t, v.ty))
        (ta, tya), (tb, tyb) = tiles
        if "bf16" in (tya, tyb):
            ta, tb = f"_as_dot_operand({ta})", f"_as_dot_operand({tb})"
        if tya != tyb:
            ct = X.promote(tya, tyb)
            ta, tb = f"{ta}.to({X.tl_dtype(ct)})", f"{tb}.to({X.tl_dtype(ct)})"
        self.w.line(f"{dacc} = tl.dot({ta}, tl.trans({tb}), {dacc})")
    res = dacc if order == [lane_a.name, lane_b.name] else f"tl.trans({dacc})"
    ct = "f32" if acc_ty in ("f16", "bf16") else X.compute_type(acc_ty)
    self.w.line(f"{acc.code} = ({res}).to({X.tl_dtype(ct)})", s.span)
    self.w.comment("per-thread dot product over K lifted to tl.dot")
    return True


def _rebind_lane_aliases(self: KernelLowering, lane: str) -> None:
    """Index aliases of the lane (``n = bn # tn``) evaluated again in the operand's scope, where the
    lane lies on dim 0 of the [lane, k] tile; their kernel variables keep the accumulator's layout
    (a [1, N] row for a column lane) and would put N on the wrong axis of the operand."""
    depends = {lane}  # the lane, and aliases of aliases (``n2 = n + 1``)
    for name, definition in self.lane_aliases:
        if not depends & {n.name for n in definition.walk() if isinstance(n, A.Name)}:
            continue
        try:
            v = self.ev(definition)
        except CroqLoweringError:
            continue
        self.bind(name, v)
        depends.add(name)


def _lifted_tma(self: KernelLowering, x: A.Expr, lane: Any, kname: str, k0: str, bk: int) -> tuple[str, str] | None:
    """``--schedule auto``: the operand tile of a lifted dot read by TMA where it is a box.

    ``T.at(b # t, k)`` (or ``T.at(k, b # t)``) of a 2-D tensor with ``t`` the lane and ``k`` the
    loop index reads rows ``[b * #t, b * #t + #t)`` and columns ``[k0, k0 + bk)`` of ``T``: a TMA box
    whose out-of-bounds part (the last program's phantom rows, the K tail) reads zero, as the
    masked loads do.  Returns (launch-time flag, load expression of the [lane, k] tile)."""
    if not isinstance(x, A.At) or not isinstance(x.base, A.Name) or len(x.indices) != 2:
        return None
    root = self.lookup_opt(x.base.name) or self.fl.names.get(x.base.name)
    if (
        not isinstance(root, Tensor)
        or root.name in self.global_writes
        or len(root.dims) != 2
        or root.elem not in ("f16", "bf16", "f8e4m3", "f8e5m2")
    ):
        return None
    ks = [k for k, ix in enumerate(x.indices) if isinstance(ix, A.Name) and ix.name == kname]
    if len(ks) != 1:
        return None
    ix = x.indices[1 - ks[0]]
    if isinstance(ix, A.Name) and ix.name == lane.name:
        origin = "0"
    elif (
        isinstance(ix, A.Binary)
        and ix.op == "#"
        and isinstance(ix.rhs, A.Name)
        and ix.rhs.name == lane.name
        and isinstance(ix.lhs, A.Name)
    ):
        b = self.lookup_opt(ix.lhs.name)
        if not isinstance(b, Bounded) or b.kind != "block" or not b.value.uniform or lane.padded:
            return None
        origin = f"({b.value.code} * {lane.size})"
    else:
        return None
    box = [int(lane.size), bk] if ks[0] == 1 else [bk, int(lane.size)]
    if any(n not in (16, 32, 64, 128, 256) for n in box):
        return None
    coords = [origin, k0] if ks[0] == 1 else [k0, origin]
    self.global_read(root)
    self.tensor(root)
    flag, desc = _desc_arg(self, root, box, [str(n) for n in box], "loads (auto)", box, "_z", '"zero"')
    load = f"{desc}.load([{', '.join(coords)}])"
    return flag, load if ks[0] == 1 else f"tl.trans({load})"


def _identity_tile(self: KernelLowering, x: A.At, kname: str, kbound: Val) -> tuple[Buffer, str] | None:
    """``buf.at(lane, k)`` on a register tile whose dims are exactly (lane extent, K): the tile itself."""
    if not isinstance(x.base, A.Name) or len(x.indices) != 2:
        return None
    buf = self.lookup_opt(x.base.name)
    if not isinstance(buf, Buffer) or buf.mode != "tile" or buf.count != 1 or len(buf.dims) != 2:
        return None
    i0, i1 = x.indices
    if not (isinstance(i0, A.Name) and isinstance(i1, A.Name) and i1.name == kname):
        return None
    lane = next((a for a in self.lanes if a.name == i0.name), None)
    if lane is None or self.lookup_opt(i0.name) is None:
        return None
    d0, d1 = buf.dims
    if not (d0.is_const and d1.is_const and lane.extent.is_const and kbound.is_const):
        return None
    if (
        d0.const != lane.extent.const
        or d1.const != kbound.const
        or str(d0.const) != lane.size
        or buf.pdims[1] != str(d1.const)
    ):
        return None
    return buf, lane.name
