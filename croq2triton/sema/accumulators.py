"""An MMA accumulates into a fragment (LANGUAGE.md 7.9 and 5: ``mma LAYOUT frag, operand, operand``,
``mma.store frag, view``, ``mma.fill frag, v``; ``frag := IDENT``, made by ``acc = mma.fill ..`` or
declared ``frag T [..] acc``): registers the executing unit owns.  A tensor, a buffer (shared, local
or global), a view, a copy's future or a scalar there is an error; ``mma.store acc, buf`` writes a
fragment into a buffer.  Names whose kind the scopes cannot tell (bound by a ``select``, say) are
left alone."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution
from .tiling import source_text

_WHAT = {
    "view": "a view",
    "future": "the future of a copy",
    "int": "an int",
    "bool": "a bool",
    "elem": "a scalar",
    "mdspan": "a shape",
    "ituple": "an ituple",
    "bounded": "a bounded index",
    "event": "an event",
}


def accumulator_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.MmaOp):
            acc, where = n.acc, f"the accumulator of 'mma.{'.'.join(n.layout)}'"
            hint = f"accumulate into a fragment: 'acc = mma.fill.f32 0.0f;' then 'mma.{'.'.join(n.layout)} acc, ..;'"
        elif isinstance(n, A.MmaStore):
            acc, where = n.acc, "what 'mma.store' stores"
            hint = "store a fragment (the accumulator of the MMAs) into the view: 'mma.store acc, view;'"
        elif isinstance(n, A.MmaFill) and n.target is not None:
            acc, where = n.target, "what 'mma.fill x, v' fills"
            hint = "make an accumulator with 'acc = mma.fill.f32 0.0f;'; a buffer's elements are set by copies"
        else:
            continue
        if isinstance(acc, A.Name) and res.binding(acc) is None and not any(b.name == acc.name for b in res.bindings):
            out.append(  # (declared nowhere in the function: no fragment of any scope)
                Diagnostic(
                    "error",
                    f"{where} is a fragment; '{acc.name}' is not declared",
                    acc.span or n.span,
                    "make the accumulator first: 'acc = mma.fill.f32 0.0f;'",
                )
            )
            continue
        what = _kind(acc, res)
        if what is not None:
            out.append(
                Diagnostic(
                    "error",
                    f"{where} is a fragment; '{source_text(acc)}' is {what}",
                    acc.span or n.span,
                    hint,
                )
            )
    return out


def _kind(e: A.Expr, res: Resolution) -> str | None:
    """What ``e`` is, where it is certainly no fragment (None: a fragment, or not known)."""
    if isinstance(e, A.View):
        return "a view"
    while isinstance(e, (A.Paren, A.Index)):
        e = e.expr if isinstance(e, A.Paren) else e.base
    if isinstance(e, A.Member) and e.member == "data":
        return "the data of a future"
    if not isinstance(e, A.Name):
        return None
    b = res.binding(e)
    if b is None:
        return None
    if b.kind == "spanned":
        return "a tensor parameter" if b.origin == "parameter" else "a buffer"
    return _WHAT.get(b.kind)
