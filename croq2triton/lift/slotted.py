"""Buffers used only as equal slots: ``shared f16 [S * 128, 64] ring;`` read and written only as
``ring.subspan(128, 64).at(s, 0)`` is the array ``shared f16 [128, 64] ring[S];`` read and written
as ``ring[s]``.

A part ``b.subspan(w0, w1, ..).at(j0, j1, ..)`` of a buffer of extents ``[E0, E1, ..]`` is the
elements ``[jd * wd, (jd + 1) * wd)`` of each dimension ``d`` (LANGUAGE.md 7.6).  Where every use
of a buffer in a kernel is such a part with the same widths ``w`` (a ``.step`` equal to them
changes nothing), and each ``wd`` divides ``Ed``, the parts never overlap and together cover the
buffer: the buffer is ``Ed / wd`` slots along each dimension with more than one, an element of
those slots is never reached but through its slot, and so it is an array of buffers of extents
``w`` indexed by the slot numbers ``jd`` (LANGUAGE.md 5.3's ``T [shape] name[n]``).  Nothing but
the layout of shared memory changes, which no Croqtile statement besides these parts can observe.

Software pipelines written with one flat buffer for their ring of stages
(``lhs_s.subspan(TILE_M, TILE_K).at(stage, 0)``) so become the ring of slots the warp-role lifting
and the contraction proof know (lift/collapse.py, lift/contraction.py), whatever the width of a
stage.  Parts picked by a parallel index (``sA.subspan(16, 16).at(w, 0)`` of the warps ``w``) are
the units' tiles side by side, which lift/units.py places: such a buffer stays as written, and so
does one with any other use (as a whole, ``.span``, an element, another view, another width, a
name declared twice).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ..frontend import ast as A
from ..sema.consteval import const_int
from .nestedparts import nested_parts


@dataclass
class _Slots:
    widths: list[A.Expr]  # of every dimension (the slot's extents)
    arrayed: list[int]  # the dimensions of more than one slot
    counts: list[int]  # their slot counts


def slotted_buffers(top: A.Parallel) -> A.Parallel:
    """``top`` with every buffer used only as equal slots declared as an array of them (a copy
    where there is one); finer parts inside one slot first spelled as parts of the slot
    (lift/nestedparts.py)."""
    top = nested_parts(top, lambda t, name: name in _found(t))
    found = _found(top)
    if not found:
        return top
    top = copy.deepcopy(top)
    _rewrite_decls(top, found)
    A.rewrite(top, lambda x: _slot_use(x, found))
    return top


def _found(top: A.Parallel) -> dict[str, _Slots]:
    """The buffers of ``top`` used only as equal slots."""
    decls: dict[str, list[A.SpannedDecl]] = {}
    for n in top.walk():
        if isinstance(n, A.SpannedDecl):
            for d in n.items:
                decls.setdefault(d.name, []).append(n)
    units = {v for n in top.walk() if isinstance(n, A.PBy) for v in n.names}
    found: dict[str, _Slots] = {}
    for name, ds in decls.items():
        if len(ds) == 1 and (slots := _slots(top, ds[0], name, units)) is not None:
            found[name] = slots
    return found


def _slots(top: A.Parallel, decl: A.SpannedDecl, name: str, units: set[str]) -> _Slots | None:
    item = next(d for d in decl.items if d.name == name)
    if item.dims or item.init is not None or decl.shape is None:
        return None
    extents = [const_int(e) for e in decl.shape]
    if any(e is None or e < 1 for e in extents):
        return None
    names = sum(1 for n in top.walk() if isinstance(n, A.Name) and n.name == name)
    parts = [v.ops[0] for v in top.walk() if isinstance(v, A.View) and _is(v.base, name)]
    if not parts or len(parts) != names:  # some use is not a view of the buffer
        return None
    first = parts[0]
    for op in parts:
        if op.kind != "subspan" or op.strides or op.at is None or len(op.args) != len(extents):
            return None
        if op.args != first.args or (op.step is not None and op.step != op.args):
            return None
    widths = [const_int(w) for w in first.args]
    if any(w is None or w < 1 for w in widths):
        return None
    arrayed, counts = [], []
    for d, (e, w) in enumerate(zip(extents, widths, strict=True)):
        if e % w:  # type: ignore[operator]
            return None
        if e != w:
            arrayed.append(d)
            counts.append(e // w)  # type: ignore[operator]
    if not arrayed:
        return None
    for op in parts:  # a dimension of one slot: its part starts at 0
        if any(const_int(j) != 0 for d, j in enumerate(op.at or []) if d not in arrayed):
            return None
        # a part a parallel index picks places the units' tiles side by side (lift/units.py)
        if any(isinstance(n, A.Name) and n.name in units for d in arrayed for n in (op.at or [])[d].walk()):
            return None
    return _Slots(list(first.args), arrayed, counts)


def _is(e: A.Expr, name: str) -> bool:
    return isinstance(e, A.Name) and e.name == name


def _rewrite_decls(top: A.Parallel, found: dict[str, _Slots]) -> None:
    """Each slotted buffer's declaration as an array of slots; a declaration of several names is
    split into one a name where it stands in a list of statements (else left whole, and so are its
    buffers: found loses them)."""
    for n in list(top.walk()):
        for f in A.child_fields(n):
            v = getattr(n, f)
            if isinstance(v, list) and any(_declares(s, found) for s in v):
                setattr(n, f, [d for s in v for d in (_split(s, found) if _declares(s, found) else [s])])
            elif isinstance(v, A.SpannedDecl) and _declares(v, found):
                if len(v.items) > 1:
                    for d in v.items:
                        found.pop(d.name, None)
                else:
                    setattr(n, f, _split(v, found)[0])


def _declares(s: object, found: dict[str, _Slots]) -> bool:
    return isinstance(s, A.SpannedDecl) and any(d.name in found for d in s.items)


def _split(s: A.SpannedDecl, found: dict[str, _Slots]) -> list[A.SpannedDecl]:
    out = []
    for d in s.items:
        slots = found.get(d.name)
        if slots is None:
            out.append(A.SpannedDecl(s.elem, copy.deepcopy(s.shape), [d], s.storage, span=s.span))
            continue
        dims = [A.IntLit(n, str(n), span=d.span) for n in slots.counts]
        item = A.Declarator(d.name, fill=d.fill, dims=dims, span=d.span)
        out.append(A.SpannedDecl(s.elem, copy.deepcopy(slots.widths), [item], s.storage, span=s.span))
    return out


def _slot_use(x: object, found: dict[str, _Slots]) -> object | None:
    """``b.subspan(w..).at(j..)...`` of a slotted ``b`` as ``b[j of the arrayed dimensions]...``."""
    if not isinstance(x, A.View) or not isinstance(x.base, A.Name) or x.base.name not in found:
        return None
    slots = found[x.base.name]
    at = x.ops[0].at or []
    slot = A.Index(x.base, [at[d] for d in slots.arrayed], span=x.span)
    rest = [A.rewrite(op, lambda y: _slot_use(y, found)) for op in x.ops[1:]]
    return A.View(slot, rest, span=x.span) if rest else slot
