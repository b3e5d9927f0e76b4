"""The launcher's scope as the older kernel lowering (lower/kernel.py) reads it: the host values of
the host lifting (lift/hostvalues.py) as this lowering's values (values.py), each with its kernel
and launcher spellings.  Transitional: it goes with lower/kernel.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..lift.hostvalues import Bounded as HostBounded
from ..lift.hostvalues import BoundedTuple as HostBoundedTuple
from ..lift.hostvalues import ITuple, Reshaped, Stream, Value, croq_of
from ..lift.hostvalues import Shape as HostShape
from ..lift.hostvalues import Tensor as HostTensor
from ..tir import expr as E
from ..tir import host as H
from . import exprs as X
from .values import Bounded, BoundedTuple, Shape, Tensor, Tuple_, Val, View, ViewDim, const

_UNARY = {"-": "-", "!": "not ", "~": "~"}


def legacy_names(names: Mapping[str, Value], types: Mapping[str, str]) -> dict[str, Any]:
    """Every name of the launcher's scope as this lowering's value; ``types``: the Croqtile type
    of each launcher variable."""
    return {name: value_of(v, types) for name, v in names.items()}


def value_of(v: Value, types: Mapping[str, str]) -> Any:
    if isinstance(v, E.Expr):
        return val_of(v, types)
    if isinstance(v, HostTensor):
        dims = [val_of(d, types) for d in v.dims]
        host_dims = [d.host or d.code for d in dims]
        strides = [f"{v.host}_s{d}" for d in range(len(dims))]
        return Tensor(v.name, v.elem, dims, host_dims, f"{v.host}_ptr", strides, v.host, v.span)
    if isinstance(v, HostShape):
        return Shape([val_of(d, types) for d in v.dims])
    if isinstance(v, ITuple):
        return Tuple_([val_of(d, types) for d in v.items])
    if isinstance(v, HostBounded):
        return Bounded(v.name, val_of(v.value, types), val_of(v.bound, types), "with")
    if isinstance(v, HostBoundedTuple):
        return BoundedTuple(v.name, [value_of(p, types) for p in v.parts])
    if isinstance(v, Reshaped):
        dims = [val_of(d, types) for d in v.dims]
        root = value_of(v.tensor, types)
        return View(root, [ViewDim(const(0), d, None, []) for d in dims], reshaped=dims)
    assert isinstance(v, Stream)
    return ("stream", v.host)


def val_of(e: E.Expr, types: Mapping[str, str]) -> Val:
    """A launcher expression spelled as this lowering spells host values (both spellings the
    launcher's: ``_rt.idiv`` for every integer division, ``(a and b)`` for ``&&``)."""
    if isinstance(e, E.Const):
        return const(e.value, croq_of(e.dtype))
    if isinstance(e, E.Var):
        ty = types.get(e.name) or croq_of(e.dtype)
        return Val(e.name, ty, None, frozenset(), e.name, (), e.lo is not None and e.lo >= 0)
    if isinstance(e, E.Bin) and e.op in ("min", "max"):
        a, b = val_of(e.lhs, types), val_of(e.rhs, types)
        code = f"{e.op}({a.code}, {b.code})"
        return Val(code, a.ty, None, frozenset(), code)
    if isinstance(e, E.Bin):
        return X.binary(e.op, val_of(e.lhs, types), val_of(e.rhs, types), True)
    if isinstance(e, H.Logic):
        out = val_of(e.values[0], types)
        for x in e.values[1:]:
            out = X.binary("&&" if e.op == "and" else "||", out, val_of(x, types), True)
        return out
    if isinstance(e, E.Un):
        v = val_of(e.value, types)
        code = f"({_UNARY[e.op]}{v.code})"
        return Val(code, v.ty, None, frozenset(), code)
    if isinstance(e, E.CDiv):
        return X.cdiv(val_of(e.lhs, types), val_of(e.rhs, types), True)
    if isinstance(e, E.Where):
        c, a, b = (val_of(x, types) for x in (e.cond, e.then, e.other))
        code = f"({a.code} if {c.code} else {b.code})"
        return Val(code, a.ty, None, frozenset(), code)
    if isinstance(e, H.ElemGet):
        index = "(" + ", ".join(val_of(i, types).code for i in e.index) + ",)"
        code = f"_rt.elem_get(_F, {e.tensor!r}, {e.host}, {index}, {e.line})"
        return Val(code, croq_of(e.type), None, frozenset())
    raise TypeError(f"a host expression of kind {type(e).__name__}")
