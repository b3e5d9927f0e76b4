"""The index space of one tile operation (:class:`Region`) and the stage-ring slot check: the
pieces of the tile lowering that both ``tiles.py`` and ``pieces.py`` use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CroqLoweringError
from .values import Buffer, Val, View, const

if TYPE_CHECKING:
    from .kernel import KernelLowering


class Region:
    """The index space of one tile operation: padded extents ``pdims`` (constexpr
    spellings) and real extents ``exts``; optionally preceded by all lane axes."""

    def __init__(
        self, k: KernelLowering, pdims: list[str], exts: list[Val], lanes: bool, offsets: list[int] | None = None
    ) -> None:
        self.k = k
        self.pdims = pdims
        self.exts = exts
        self.offsets = offsets or [0] * len(pdims)
        self.L = len(k.lanes) if lanes else 0
        self.T = len(pdims)
        dims = [a.size for a in k.lanes] if lanes else []
        self.shape = "[" + ", ".join(dims + pdims) + "]"
        self.masks: list[str] = []
        for d, (p, e) in enumerate(zip(pdims, exts)):
            off = self.offsets[d]
            if e.is_const and p.isdigit() and off + int(p) <= e.const:
                continue
            if not (e.is_const and str(e.const) == p and off == 0):
                self.masks.append(f"({self.idx_code(d)} < {self.lift(e).code})")
        if lanes:
            for a in k.lanes:
                if a.padded:
                    self.masks.append(f"@LANEMASK_T{self.T}[{a.var}]")

    def r_code(self, d: int) -> str:
        n = self.L + self.T
        base = f"tl.arange(0, {self.pdims[d]})"
        if n == 1:
            return base
        parts = ["None"] * n
        parts[self.L + d] = ":"
        return f"{base}[{', '.join(parts)}]"

    def idx_code(self, d: int) -> str:
        off = self.offsets[d]
        return self.r_code(d) if not off else f"({off} + {self.r_code(d)})"

    def index_vals(self) -> list[Val]:
        out = []
        for d in range(self.T):
            p = self.pdims[d]
            off = self.offsets[d]
            ub = const(int(p) + off) if p.isdigit() else None
            out.append(Val(self.idx_code(d), "int", None, frozenset(), None, (), off >= 0, ub))
        return out

    def lift(self, v: Val) -> Val:
        """A lane-layout value (rank L) spelled in this region's layout (rank L + T)."""
        if v.uniform or self.T == 0:
            return v
        if self.L == 0:
            raise CroqLoweringError("internal error: lane value in a block-level tile region")
        suffix = "[" + ", ".join([":"] * self.L + ["None"] * self.T) + "]"
        masks = tuple(f"({m}){suffix}" for m in v.masks)
        return Val(f"({v.code}){suffix}", v.ty, v.const, v.axes, None, masks, v.nonneg)


def _ring_slot(self: KernelLowering, view: View, write: bool, span: Any) -> bool:
    """Stage-ring element ``buf[s]`` of a register tile: the slot of the current iteration."""
    root = view.root
    if view.index is None or not isinstance(root, Buffer) or getattr(root, "array_mode", None) != "ring":
        return view.index is None
    code = self.var_defs.get(view.index.code, view.index.code)
    text = root.index_texts.get(view.index.code)
    if write:
        root.slot = code  # type: ignore[attr-defined]
        root.slot_text = text  # type: ignore[attr-defined]
        return True
    if root.slot is None:  # type: ignore[attr-defined]
        raise CroqLoweringError(f"'{root.name}[...]' is read before any slot of it is written", span)
    if root.slot != code:  # type: ignore[attr-defined]
        read = f"'{root.name}[{text}]'" if text else "another slot"
        wrote = getattr(root, "slot_text", None)
        written = f"'{root.name}[{wrote}]'" if wrote else "a different slot"
        raise CroqLoweringError(
            f"stage ring '{root.name}' is read at {read} but was written at {written}",
            span,
            "a pipelined loop must consume in iteration k the slot its producer filled in iteration k",
        )
    return True
