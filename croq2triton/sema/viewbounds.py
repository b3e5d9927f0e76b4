"""Views larger than what they view (LANGUAGE.md 7.6, "Static checks: factor 0, factor > extent
... are compile errors when provable"): a ``chunkat``/``chunk`` whose tiling factor exceeds the
extent it tiles makes tiles of extent 0, and a ``subspan`` extent larger than its parent's
reaches past the data it is a part of.  (A ``modspan`` wider than its parent is defined: its piece
is ``P % e``, the whole parent; LANGUAGE.md 7.6.)  Both are checked where the factor and the extent
are compile-time integers, along the chain of operations from a named buffer or parameter."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution
from .tiling import _Tiling, source_text

_ORD = {1: "st", 2: "nd", 3: "rd"}


def view_bound_errors(fn: A.CoFunction, res: Resolution, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    t = _Tiling(res, value)
    out: list[Diagnostic] = []
    seen: set[int] = set()
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.View) and id(n) not in seen:
                seen.add(id(n))
                out.extend(_view_errors(t, n))
    return out


def _view_errors(t: _Tiling, view: A.View) -> Iterator[Diagnostic]:
    _, dims = t.root(view.base)
    sizes = None if dims is None else [t.value(d) for d in dims]
    for op in view.ops:
        if sizes is None:
            return
        if op.kind in ("chunkat", "chunk"):
            factors = _factors(t, op)
            if factors is None or len(factors) != len(sizes):
                return
            for d, (f, e) in enumerate(zip(factors, sizes, strict=True)):
                if f is not None and e is not None and f > e > 0:
                    yield _too_many_tiles(view, op, d, f, e)
                    return
            sizes = [None if f is None or e is None or f <= 0 else e // f for f, e in zip(factors, sizes, strict=True)]
        elif op.kind == "subspan" and op.strides is None and len(op.args) == len(sizes):
            parts = [None if _blank(a) else t.value(a) for a in op.args]
            for d, (p, e) in enumerate(zip(parts, sizes, strict=True)):
                if p is not None and e is not None and p > e:
                    yield _too_large(view, op, d, p, e)
                    return
            sizes = [e if _blank(a) else p for a, p, e in zip(op.args, parts, sizes, strict=True)]
        else:
            return  # view, span_as, sqz, zfill: not followed


def _factors(t: _Tiling, op: A.ViewOp) -> list[int | None] | None:
    if op.kind == "chunk":
        return [t.value(a) for a in op.args]
    out: list[int | None] = []
    for a in op.args:
        b = t.bounds(a)
        if b is None:
            return None
        out.extend(None if x is None else t.value(x) for x in b)
    return out


def _blank(a: A.Expr) -> bool:
    return isinstance(a, A.Name) and a.name == "_"


def _dim(d: int) -> str:
    n = d + 1
    return f"{n}{_ORD.get(n if n < 20 else n % 10, 'th')} dimension"


def _too_many_tiles(view: A.View, op: A.ViewOp, d: int, f: int, e: int) -> Diagnostic:
    return Diagnostic(
        "error",
        f"'.{op.kind}' tiles the {_dim(d)} of '{source_text(view.base)}' (extent {e}) by {f}:"
        f" the tiling factor exceeds the extent, so every tile is empty",
        op.span or view.span,
        f"tile that dimension by a factor of at most {e}, or take parts of a fixed extent with '.subspan(...).at(...)'",
    )


def _too_large(view: A.View, op: A.ViewOp, d: int, p: int, e: int) -> Diagnostic:
    return Diagnostic(
        "error",
        f"'.{op.kind}' takes {p} elements of the {_dim(d)} of '{source_text(view.base)}', whose extent"
        f" is only {e}: a part cannot be larger than what it is a part of",
        op.span or view.span,
        f"make that extent at most {e}",
    )
