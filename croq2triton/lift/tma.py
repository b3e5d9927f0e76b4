"""``tma.copy`` in the tile IR: a copy between a tensor window and a whole shared buffer becomes a
tensor-descriptor load or store (LANGUAGE.md 7.8, 9.2), with the masked access of the same copy as
its fallback, as a mixin of the kernel lifter (lift/kernel.py).

The descriptor's box is the window: every extent a constant, equal to the buffer's, a power of two
of at most 256, the inner one at least 16 bytes (runtime/tma.py ``static_reasons``), its innermost
origin a provable multiple of 16 bytes.  The launcher checks what depends on the tensor (a 16-byte
aligned base and strides, a unit inner stride) and sets the kernel's flag; where it is not set the
kernel runs the fallback.  Outside the tensor a load reads zero (``.zfill``) or what the OOB
sanitizer asks for (``_OOB_PADDING``); a store writes nothing there.  A window that TMA cannot take
(run-time extents, a tile that may reach past its view, a part of a buffer other than one whole
buffer of an array, a transposing or padding copy, a condition around the copy) is copied with
masked accesses, with a warning that says why, as is a box whose rows are wider than its swizzle
span (the swizzle never changes what is copied).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import Diagnostic
from ..frontend import ast as A
from ..sema.tma_rules import static_reasons, swizzle_bytes, swizzle_reason
from ..sema.types import TYPES
from ..tir import expr as E
from ..tir import nodes as N
from .terms import Region, const_int


@dataclass(frozen=True)
class Box:
    """A descriptor's box, and the launcher's expressions of the copied window where its extents
    are known only at launch (empty: the box is the window)."""

    block: tuple[int, ...]
    launch: tuple[E.Expr, ...] = ()


class TmaCopies:
    """Descriptor loads and stores; the lifter supplies arguments, host tensors and warnings."""

    args: dict[str, N.Arg]
    host: Any
    pred: list[E.Expr]
    warnings: list[Diagnostic]
    host_of: Any
    written: set[str]

    def swizzle(self, s: A.DmaStmt) -> int | None:
        for a in s.attrs:
            if a.name == "swiz":
                return swizzle_bytes(a.args[0] if a.args else 0)
        return None

    def tma_box(self, window: Region, extents: tuple[int, ...], s: A.DmaStmt) -> Box | str:
        """The box of a descriptor over ``window`` copied to or from a whole buffer of ``extents``,
        with the launcher's expressions of a window whose extents are known only at launch (the
        launcher uses the descriptor where they equal the box); or why there is none."""
        if any(p.shape for p in self.pred):
            return "the copy is under a condition on the thread index"
        if window.steps is not None:
            return "the view has explicit strides"
        t = self.host.tensors[window.tensor]
        box = [1] * len(t.extents)
        launch: list[E.Expr] = []
        origin = window.origin[-1]
        for c, d in enumerate(window.axes):
            n = const_int(window.shape[c])
            if n is None:
                host = self.host_of(window.shape[c])
                if host is None:
                    return "the box size is only known at launch"
                n = extents[c]
                origin = E.replace(origin, window.shape[c], E.Const(n))  # where the launcher uses the box
            elif n != extents[c]:
                return f"the window extent {n} differs from the buffer's {extents[c]}"
            box[d] = n
            launch.append(host if const_int(window.shape[c]) is None else E.Const(n))
        for d, lo, hi in window.limits:  # the bounds of a view (lift/views.py): TMA clips only at the tensor
            if E.same(lo, window.origin[d]) and E.same(hi, window.origin[d] + box[d]):
                continue
            if d in window.axes and E.same(hi, E.fold(window.origin[d] + window.shape[window.axes.index(d)])):
                return "the view's run-time extent may be less than the box (TMA clips only at the tensor's edges)"
            return "the window may reach past the view it is a tile of (TMA clips only at the tensor's edges)"
        elem_bytes = TYPES[t.elem].nbytes
        swiz = self.swizzle(s)
        reason = swizzle_reason(box, elem_bytes, swiz)
        if reason is not None:  # the hardware box would have to be split; a masked copy reads the same
            return reason
        reasons = static_reasons(len(box), box, elem_bytes, swiz)
        if reasons:
            return reasons[0]
        if not _aligned(origin, max(1, 16 // elem_bytes)):
            return "the innermost offset is not provably a multiple of 16 bytes"
        dynamic = any(const_int(x) is None for x in window.shape)
        return Box(tuple(box), tuple(launch) if dynamic else ())

    def tma_load(self, load: N.Load, window: Region, extents: tuple[int, ...], zfill: bool, s: A.DmaStmt) -> N.Stmt:
        """A descriptor load (under a block-level condition too: it reads what the masked load
        would, and the caller keeps the buffer where the condition fails)."""
        if window.tensor in self.written:  # a TMA load does not see the block's own stores
            return self.masked(load, window, "the program also writes the tensor", "loads", s)
        box = self.tma_box(window, extents, s)
        if isinstance(box, str):
            return self.masked(load, window, box, "loads", s)
        padding: Literal["zero", "sanitizer"] = "zero" if zfill else "sanitizer"
        desc, flag = self.descriptor(window, box, "loads", padding, "_z" if zfill else "")
        reshape = extents if len(extents) != len(box.block) else None
        return N.TmaLoad(load.var, desc, window.origin, load, flag, reshape, line=load.line)

    def tma_store(self, store: N.Store, window: Region, extents: tuple[int, ...], s: A.DmaStmt) -> N.Stmt:
        """A descriptor store; under a block-level condition, inside an ``if`` of it."""
        box = self.tma_box(window, extents, s)
        if isinstance(box, str):
            return self.masked(store, window, box, "stores", s)
        if len(extents) != len(box.block):
            return self.masked(store, window, "the window drops dimensions of the tensor", "stores", s)
        desc, flag = self.descriptor(window, box, "stores", "zero", "")
        tma = N.TmaStore(desc, window.origin, store.value, store, flag, line=store.line)
        return N.If(E.conj(self.pred), [tma], line=store.line) if self.pred else tma

    def masked(self, access: N.Stmt, window: Region, reason: str, what: str, s: A.DmaStmt) -> N.Stmt:
        msg = f"tma.copy of '{window.tensor}': {reason}; using masked {what}"
        if not any(d.message == msg and d.span is s.span for d in self.warnings):
            self.warnings.append(Diagnostic("warning", msg, s.span))
        return access

    def descriptor(
        self, window: Region, box: Box, what: str, padding: Literal["zero", "sanitizer"], suffix: str
    ) -> tuple[str, str]:
        t = self.host.tensors[window.tensor]
        shape = "x".join(map(str, box.block))
        flag = f"TMA_{t.name.upper()}_{shape.upper()}"
        desc = f"{t.name}_desc_{shape}{suffix}"
        self.args[desc] = N.Descriptor(
            desc, t.host, box.block, "zero", flag=flag, what=what, source=t.name, fill=padding, window=box.launch
        )
        self.args[flag] = N.Constexpr(flag, True)
        return desc, flag


def _aligned(origin: E.Expr, unit: int) -> bool:
    """Is ``origin`` a multiple of ``unit`` for every value of its variables?"""
    e = E.fold(origin)
    names = [v.name for v in E.free_vars(e)]
    lin = E.linear(e, names)
    if lin is None:
        return False
    coefs, rest = lin
    c = const_int(rest)
    return c is not None and c % unit == 0 and all(k % unit == 0 for k in coefs.values())
