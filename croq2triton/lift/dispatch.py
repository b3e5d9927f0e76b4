"""The launcher of a function tuned at several sizes (``croq2triton translate --config best.json``):
a dispatcher over the launchers of its tuned points (tir/host.py :class:`~..tir.host.CallTuned`).

It binds the parameters as each point's launcher does (the same statements, read from the first
one: tensors checked and their sizes bound, scalars checked), but keeps the caller's tensors, then
calls the launcher tuned at this launch's sizes, or at the nearest tuned ones, with the caller's
arguments.  The tuned sizes are named as the function names them: symbolic dimensions (``M``) or
``int`` parameters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..errors import CroqError, Span
from ..tir import expr as E
from ..tir import host as H

_BINDS = (H.BindTensor, H.BindScalar, H.BindStream)


def lift_dispatcher(
    points: Sequence[tuple[H.Launcher, str, tuple[tuple[int, ...], ...]]],
    symbols: tuple[str, ...],
    origin: str,
    at: Span | None = None,
    doc: str | None = None,
) -> H.Launcher:
    """The dispatcher of one function over ``points``: each the launcher of a tuned point, what the
    point sets (``Point.describe()``) and the sizes it won at (values of ``symbols``, in order).
    ``origin`` names where the points come from, ``at`` where it gives the sizes (for errors);
    ``doc`` is the function's docstring (the first launcher's by default)."""
    first = points[0][0]
    binds = _binds(first)
    for launcher, _, _ in points[1:]:
        if launcher.params != first.params or launcher.signature != first.signature or _binds(launcher) != binds:
            raise CroqError(
                f"the points {origin} gives for '{first.name}' give it different signatures "
                f"({first.python_name} and {launcher.python_name}): one launcher cannot dispatch to both",
                at,
                "a tuning point's defines may change the function's sizes and types only if every point sets them "
                "alike",
            )
    values = tuple(_size(first, binds, s, origin, at) for s in symbols)
    choices = tuple(H.TunedLauncher(launcher.python_name, point, sizes) for launcher, point, sizes in points)
    call = H.CallTuned(symbols, values, choices, first.params, origin, line=first.line)
    checked = tuple(
        dataclasses.replace(b, move=False, keep_caller=False) if isinstance(b, H.BindTensor) else b for b in binds
    )
    shown = ", ".join(symbols)
    doc = (
        f"{doc or first.doc} Tuned at several sizes: runs the launcher of the point tuned at ({shown}), "
        "or at the nearest tuned sizes."
    )
    return dataclasses.replace(first, suffix="", doc=doc, body=(*checked, call))


def _binds(launcher: H.Launcher) -> tuple[H.Stmt, ...]:
    """The statements that bind the launcher's parameters (they come first)."""
    out: list[H.Stmt] = []
    for s in launcher.body:
        if not isinstance(s, _BINDS):
            break
        out.append(s)
    return tuple(out)


def _size(launcher: H.Launcher, binds: tuple[H.Stmt, ...], symbol: str, origin: str, at: Span | None) -> E.Expr:
    """The launcher variable of the size ``symbol``: a symbolic dimension or an ``int`` parameter."""
    known: list[str] = []
    for b in binds:
        if isinstance(b, H.BindTensor):
            for d in b.dims:
                if isinstance(d, H.BindDim):
                    if d.symbol == symbol:
                        return E.Var(d.var, "i32", lo=0)
                    known.append(d.symbol)
        elif isinstance(b, H.BindScalar) and b.kind == "int":
            if b.name == symbol:
                return E.Var(b.var, "i32")
            known.append(b.name)
    names = ", ".join(dict.fromkeys(known)) or "none"
    raise CroqError(
        f"{origin} tunes '{launcher.name}' at sizes of '{symbol}', which is not a size of '{launcher.name}' "
        f"(its sizes: {names})",
        at,
        "the sizes of a tuning config are the function's symbolic dimensions and int parameters",
    )
