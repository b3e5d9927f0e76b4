"""Interior split: programs whose block lies inside every tensor run without bounds masks.

A bounds mask (``offs < N``) on a load or store stops Triton from vectorising it unless it can
prove the mask uniform over aligned groups of lanes, which it cannot for a size like
``N = 2^28 + 12345``.  This pass puts the kernel body in ``if interior: ... else: ...``: the
first branch is the body with every bounds term the condition proves dropped from the masks
(conditions of ``if`` statements and padding lanes stay), the second the body as it was.

What it proves: ``interior`` is the conjunction, over every access and dimension whose index is
known before the body runs (not an index read from memory, as a gather's), of
``max over lanes(index) < extent`` and ``min over lanes(index) >= 0``, computed exactly because
each index is affine in the lanes with constant coefficients (else the pass does nothing).  In
the first branch each dropped term is implied by ``interior``, so both branches compute the same.

Measured (H200, Triton 3.6, ``perf/bench.py`` elementwise rows, perf/RESULTS.md): ``vadd`` at
2^28 + 12345 elements runs at 0.84 (f32) / 0.66 (f16) of a device copy with masks only and
1.02-1.03 with this split; at 2^28 both run at 1.01-1.02.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from ..tir import expr as E
from ..tir import nodes as N


def interior_split(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with its body split into an unmasked interior and the masked rest, where the
    proof holds and some bounds term would go; else ``kernel`` itself."""
    body = kernel.body
    if any(isinstance(s, (N.For, N.While, N.If, N.TmaLoad, N.TmaStore, N.Atomic)) for s in body):
        return kernel
    pointers = {a.name: a for a in kernel.args if isinstance(a, N.Pointer)}
    lanes = {s.var.name: s.var for s in body if isinstance(s, N.Let) and E.is_lane(s.value)}
    lets: dict[str, E.Expr] = {}
    loaded = {v.name for s in body if not isinstance(s, N.Let) for v in N.defines(s)}  # values of loads
    conds: list[E.Expr] = []
    bounds: list[E.Expr] = []  # the bounds terms the condition proves, as they appear in masks
    for s in body:
        if isinstance(s, N.Let) and s.var.name not in lanes:
            lets[s.var.name] = E.substitute(s.value, lets)
        if not isinstance(s, (N.Load, N.Store)) or s.mask is None or s.base not in pointers:
            continue
        for i, extent in zip(s.index, pointers[s.base].extents, strict=True):
            full = E.substitute(i, lets)
            if {v.name for v in E.free_vars(full)} & loaded:
                continue  # an index read from memory (a gather): known only inside, its mask stays
            top, low = E.extreme(full, lanes, True), E.extreme(full, lanes, False)
            if top is None or low is None:
                return kernel
            conds += [E.Bin("<", top, extent), E.Bin(">=", low, E.Const(0))]
            bounds += [E.fold(E.Bin("<", full, extent)), E.fold(E.Bin(">=", full, E.Const(0)))]
    interior = E.conj(conds)
    if isinstance(interior, E.Const) or interior.shape or not conds:
        return kernel
    taken = {a.name for a in kernel.args} | {v.name for x in N.walk(body) for v in N.defines(x)}
    inner = _without(body, bounds, lets, set(lanes), taken)
    if inner is None:
        return kernel
    # lanes and offsets (no masks, no loads) stay before the branch, up to the first variable the body
    # defines again (``v = 0.0`` then a lane tile ``v = tl.where(..)``: inside a branch, compiled Triton
    # takes no new type for a variable defined before it)
    head = 0
    while (
        head < len(body)
        and isinstance(body[head], N.Let)
        and body[head].var.type != "i1"  # type: ignore[attr-defined]
        and not _defined_again(body, head)
    ):
        head += 1
    split = N.If(interior, inner[head:], body[head:], line=kernel.line)
    out = copy.copy(kernel)
    out.body = body[:head] + [split]
    return out


def _defined_again(body: list[N.Stmt], k: int) -> bool:
    """Whether a statement after ``body[k]`` (a Let) defines its variable again."""
    name = body[k].var.name  # type: ignore[attr-defined]
    return any(v.name == name for s in body[k + 1 :] for x in N.walk([s]) for v in N.defines(x))


def _without(
    body: list[N.Stmt], bounds: list[E.Expr], lets: dict[str, E.Expr], lanes: set[str], taken: set[str]
) -> list[N.Stmt] | None:
    """``body`` with the proven bounds terms dropped from its masks (a mask left empty goes), or
    None when no mask loses a term."""
    out: list[N.Stmt] = []
    renamed: dict[str, E.Var | None] = {}  # a mask that went (None) or equals an earlier one
    masks: list[tuple[E.Expr, E.Var]] = []
    changed = False
    for s in body:
        if isinstance(s, N.Let) and s.var.type == "i1" and s.var.name not in lanes:
            value = s.value
            if renamed and _reads(value, renamed):  # a mask that reads one that went or was renamed
                value = E.fold(E.substitute(value, _values(renamed)))
            # (a constant term is no bound's: `bool k = true;` is a Let of True, not a proven bound)
            kept = [
                t
                for t in E.conjuncts(value)
                if isinstance(t, E.Const) or not any(E.same(E.substitute(t, lets), b) for b in bounds)
            ]
            mask = E.conj(kept)
            if value is not s.value or len(kept) != len(E.conjuncts(value)):
                changed = True
                if isinstance(mask, E.Const) and mask.value:
                    renamed[s.var.name] = None
                    continue
            same = next((v for m, v in masks if E.same(m, mask)), None)
            if same is not None:
                renamed[s.var.name] = same
                continue
            var = s.var
            if mask.shape != s.var.shape:  # Triton merges both branches' variables: one type each
                name, k = f"{s.var.name}_inside", 2
                while name in taken:
                    name, k = f"{s.var.name}_inside_{k}", k + 1
                taken.add(name)
                var = E.Var(name, s.var.type, dims=mask.shape)
                renamed[s.var.name] = var
            masks.append((mask, var))
            s = N.Let(var, mask, line=s.line)
        elif isinstance(s, (N.Load, N.Store)) and s.mask is not None and s.mask.name in renamed:
            s = copy.copy(s)
            s.mask = renamed[s.mask.name]
            if isinstance(s, N.Load) and s.mask is None:
                s.other = None
        elif renamed and not isinstance(s, (N.Load, N.Store)):
            # a mask read as a value (``tl.where(mask, ..)``, schedule/vecmasks.py): what it became
            values = _values(renamed)
            s = N.map_exprs(s, lambda e, v=values: E.fold(E.substitute(e, v)) if _reads(e, v) else e)  # type: ignore[misc]
        out.append(s)
    return out if changed else None


def _values(renamed: dict[str, E.Var | None]) -> dict[str, E.Expr]:
    """What each mask that went (True) or was renamed (its new variable) reads as."""
    return {k: v if v is not None else E.Const(True, "i1") for k, v in renamed.items()}


def _reads(e: E.Expr, names: Mapping[str, object]) -> bool:
    return any(v.name in names for v in E.free_vars(e))
