"""Factors and extents of view operations that make no region (LANGUAGE.md 7.6, "Static checks:
factor 0, factor > extent, index >= factor, offset >= extent are compile errors when provable"):

* ``.chunk(f).at(i)`` with a factor ``f`` below 1 (``chunk(0)`` cuts a dimension into no parts: its
  extent ``P / 0`` has no value), and with an index ``i`` at or past ``f`` (there are only ``f``
  parts, numbered 0 to f - 1);
* ``.modspan(e)`` with ``e`` below 1 (its extent is ``P % e``);
* ``.subspan(e)`` / ``.view(e)`` with an extent ``e`` below 1 (a region of no elements; extents are
  >= 1, as a buffer's are).

Each where the value is a compile-time integer.  A factor larger than the extent it tiles, and a
part larger than its whole, are sema/viewbounds.py's.  An offset past the extent (``subspan(16).at(9)``
of 64 elements, ``view(8).from(70)``) is a tile outside its tensor, which croq2triton allows
(LANGUAGE.md 14.3: it reads zeros and writes nothing); a ``chunk`` index past its factor is not a
tile outside, it is a part that does not exist."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Diagnostic
from ..frontend import ast as A
from .tiling import source_text

_EXTENT_OPS = ("subspan", "view")


def view_factor_errors(fn: A.CoFunction, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.ViewOp):
            out.extend(_op_errors(n, value))
    return out


def _items(args: list[A.Expr]) -> list[A.Expr]:
    """The per-dimension arguments (an ituple literal stands for one per component)."""
    out: list[A.Expr] = []
    for a in args:
        a = A.unparen(a)
        out.extend(a.items if isinstance(a, A.ItupleLit) else [a])
    return out


def _blank(a: A.Expr) -> bool:
    return isinstance(a, A.Name) and a.name == "_"


def _op_errors(op: A.ViewOp, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    args = _items(op.args)
    text = f".{op.kind}({', '.join(source_text(a) for a in args)})"
    if op.kind in ("chunk", "modspan"):
        for d, a in enumerate(args):
            v = value(a)
            if v is not None and v < 1:
                if op.kind == "chunk":
                    why = f"the factor {v} along dimension {d} cuts it into no parts"
                    hint = "'.chunk(f).at(i)' cuts a dimension into f parts and takes part i: f is at least 1"
                else:
                    why = f"the extent {v} along dimension {d} is below 1: its piece, P % {v} elements, has no size"
                    hint = "'.modspan(e)' takes the last P % e elements of an extent P: e is at least 1"
                return [Diagnostic("error", f"'{text}': {why}", a.span or op.span, hint)]
    if op.kind == "chunk" and op.at is not None:
        index = _items(op.at)
        if len(index) == len(args):
            for d, (f, i) in enumerate(zip(args, index, strict=True)):
                fv, iv = value(f), value(i)
                if fv is not None and iv is not None and iv >= fv >= 1:
                    return [
                        Diagnostic(
                            "error",
                            f"'{text}.at({', '.join(source_text(x) for x in index)})': the index {iv} along dimension"
                            f" {d} is not below the factor {fv}: there are {fv} parts, 0 to {fv - 1}",
                            i.span or op.span,
                            f"take a part from 0 to {fv - 1}, or cut the dimension into more parts",
                        )
                    ]
    if op.kind in _EXTENT_OPS:
        for d, a in enumerate(args):
            v = None if _blank(a) else value(a)
            if v is not None and v < 1:
                return [
                    Diagnostic(
                        "error",
                        f"'{text}': the extent {v} along dimension {d} makes a region of no elements",
                        a.span or op.span,
                        "extents are >= 1; '_' takes the parent's whole extent",
                    )
                ]
    return []
