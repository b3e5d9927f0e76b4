"""Which merged warp / warpgroup owns which blocks of a tile.

Sub-block units that own blocks of MMA tiles (``parallel {g0, g1} by [2, 2] : group``, consumer
warpgroups) are merged into one block-level tile (``KernelLowering.merge_level``): unit ``g``'s
window ``x.chunkat(g, _)`` becomes all of the units' windows together.  That is only the same
program when every statement of the merged units moves block ``g`` of one tile to block ``g`` of
the next: a dim of a view, an operand or an accumulator records the unit whose index selected its
block (``ViewDim.owner``, ``Tile.owners``, ``Frag.owners``), and the statements that combine
them check that the owners agree.  An accumulator declared outside the units (LANGUAGE.md 7.3,
7.9: one copy per unit in every level that uses it) keeps its owners from one merged level to
the next, so its store in a second ``parallel ... : group`` is checked against its MMAs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CroqLoweringError
from ..frontend import ast as A
from ..frontend.printer import Printer
from .values import Buffer, Frag, Future, Tile, View, ViewDim

if TYPE_CHECKING:
    from .kernel import KernelLowering

Owners = tuple[str | None, ...]
_HINT = "take the other windows first and each unit's block last, e.g. 'x.chunkat(_, k).chunkat(g0, _)'"


def unit_text(name: str | None) -> str:
    if name is None:
        return "no unit"
    return "the consumer index" if name.startswith("@") else f"'{name}'"


def _blocks(owners: Owners) -> str:
    """``(g0, g1)``: the unit index picking each dim's block (``_`` for none)."""
    return "(" + ", ".join("_" if o is None else "consumer" if o.startswith("@") else o for o in owners) + ")"


def view_owners(view: View) -> Owners:
    if view.reshaped is not None:
        return ()
    return tuple(d.owner for d in view.dims if not d.squeezed)


def value_owners(v: Any) -> Owners:
    """The owners of what an operand, source or destination names."""
    if isinstance(v, Future):
        v = v.data
    if isinstance(v, View):
        return view_owners(v)
    if isinstance(v, (Tile, Frag)):
        return tuple(v.owners or ())
    if isinstance(v, Buffer):
        return tuple(v.owners)
    return ()


def owned(o: Owners) -> bool:
    return any(x is not None for x in o)


def keep_owned(self: KernelLowering, before: list[ViewDim], after: View, op: A.ViewOp) -> None:
    """A view op after a merged unit selected its block: allowed where it leaves that dim alone."""
    if not any(d.owner for d in before):
        return
    if after.reshaped is not None or len(after.dims) != len(before):
        raise CroqLoweringError(f"'.{op.kind}' of a block owned by merged units cannot be lowered", op.span, _HINT)
    for b, a in zip(before, after.dims):
        if b.owner is None:
            continue
        if a.origin.code != b.origin.code or a.extent.code != b.extent.code or a.squeezed != b.squeezed:
            raise CroqLoweringError(
                f"'.{op.kind}' takes a window of the block that {unit_text(b.owner)} selected: merged units"
                " cannot share it",
                op.span,
                _HINT,
            )
        a.owner = b.owner


def mma_owners(self: KernelLowering, s: A.MmaOp, acc: Frag) -> None:
    """``mma acc, A, B`` in merged units: unit (i, j) must accumulate A's row block i times B's
    column block j into its own block (i, j) of ``acc``; K must not be divided among units."""
    la, lb = s.layout
    a_m, a_k = (0, 1) if la == "row" else (1, 0)
    b_n, b_k = (0, 1) if lb == "row" else (1, 0)
    oa, ob = value_owners(self.ev_any(s.a)), value_owners(self.ev_any(s.b))

    def at(o: Owners, i: int) -> str | None:
        return o[i] if len(o) == 2 else None

    pr = Printer()
    for e, o, k in ((s.a, oa, a_k), (s.b, ob, b_k)):
        if at(o, k) is not None:
            raise CroqLoweringError(
                f"the K dimension of '{pr.expr(e)}' is divided among the merged units of {unit_text(at(o, k))}:"
                " each would sum a different part of K",
                s.span,
                "divide K with a loop ('foreach'), and the rows / columns of the result among the units",
            )
    mine = (at(oa, a_m), at(ob, b_n))
    if acc.owners is None:
        acc.owners = mine
    elif tuple(acc.owners) != mine:
        raise CroqLoweringError(
            f"'{acc.name}' is accumulated as blocks {_blocks(mine)} here but as blocks {_blocks(acc.owners)} by an"
            " earlier MMA: each unit must update its own block",
            s.span,
        )


def check_moved(self: KernelLowering, src: Owners, dst: Owners, what: str, span: Any) -> None:
    """A store or copy inside merged units keeps each unit's block where it is (outside them, a
    tile that merged units filled is read whole: all their blocks together)."""
    if not owned(dst) and (not owned(src) or not self.cons_counts):
        return
    if len(src) == len(dst) and tuple(src) == tuple(dst):
        return
    raise CroqLoweringError(
        f"{what} moves the block each merged unit owns: blocks {_blocks(src)} of the source go to blocks"
        f" {_blocks(dst)} of the destination",
        span,
        "index the destination with the units' indices in the same dims as the source",
    )
