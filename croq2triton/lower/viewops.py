"""Views made whole or reshaped (``span_as``): used by the function- and the kernel-level lowering."""

from __future__ import annotations

from typing import Any

from ..errors import CroqSemanticError
from ..frontend import ast as A
from . import exprs as X
from .values import Val, View, ViewDim, const


def whole_view(t: Any) -> View:
    dims = [ViewDim(const(0), d, None, []) for d in t.dims]
    return View(t, dims)


def span_as_view(view: View, dims: list[Val], node: A.Node, fl: Any) -> View:
    if not view.whole() and view.reshaped is None:
        raise fl.error("'.span_as' of a window cannot be lowered yet; apply it to a whole tensor or buffer", node)
    total_old: Val = const(1)
    for d in view.reshaped if view.reshaped is not None else [d.extent for d in view.dims]:
        total_old = X.binary("*", total_old, d, True)
    total_new: Val = const(1)
    for d in dims:
        total_new = X.binary("*", total_new, d, True)
    if total_old.is_const and total_new.is_const and total_old.const != total_new.const:
        raise CroqSemanticError(
            f"span_as: {total_new.const} elements cannot view {total_old.const} elements",
            node.span,
            "the new shape must have the same number of elements",
        )
    new_dims = [ViewDim(const(0), d, None, []) for d in dims]
    return View(view.root, new_dims, reshaped=list(dims))
