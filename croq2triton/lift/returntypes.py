"""``return x;`` of spanned data against the function's declared type (LANGUAGE.md 6: a function of
``f32 [N]`` returns f32 data of shape ``[N]``).  An element type or a rank other than the
declaration's is the user's error; so is an extent that provably differs (``[16]`` declared, a
buffer of ``[32]`` returned).  An extent that only the launch knows (``[N]`` declared, a buffer of
``[M]`` returned, ``M`` and ``N`` bound by the parameters) is compared by the launcher before it
returns, as the copies' extents are (lift/checks.py): equal sizes run, others raise the error.
Extents written ``?`` / ``??`` and names no parameter binds are not compared."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import CroqError, CroqSemanticError
from ..frontend import ast as A
from ..frontend.printer import Printer
from ..sema.tiling import source_text
from ..tir import expr as E
from ..tir import host as H
from .checks import shape_text, size_text


def return_checks(
    fn: A.CoFunction,
    value: A.Expr,
    elem: str,
    dims: Sequence[E.Expr],
    evaluate: Callable[[A.Expr], E.Expr],
    line: int,
) -> list[H.Assert]:
    """Raise where the returned ``value`` (of ``elem`` elements, extents ``dims``) provably is not of
    ``fn``'s declared type; the launcher's checks of the extents only the launch knows."""
    ret = fn.ret
    if ret.kind != "spanned" or ret.shape is None:
        return []
    declared = f"'{Printer().type(ret)}'"
    what = f"'{source_text(value)}' {shape_text(dims)} of {elem} elements"
    if ret.elem is not None and ret.elem != elem:
        raise CroqSemanticError(
            f"'{fn.name}' is declared {declared} but returns {what}",
            value.span,
            f"return {ret.elem} data (a buffer declared '{ret.elem} [..]', filled with '__to<{ret.elem}>(..)'"
            f" of each element), or declare the function '{elem} [..]'",
        )
    rank = len(ret.shape.dims) if ret.shape.dims is not None else ret.shape.rank
    if rank is not None and rank != len(dims):
        raise CroqSemanticError(
            f"'{fn.name}' is declared {declared} (rank {rank}) but returns {what} (rank {len(dims)})",
            value.span,
            "return data of the declared rank ('.span_as([..])' reshapes a buffer), or declare the function's shape",
        )
    out: list[H.Assert] = []
    for d, (want, got) in enumerate(zip(ret.shape.dims or [], dims, strict=False)):
        if any(isinstance(x, A.Unknown) for x in want.walk()):
            continue
        try:
            w = E.fold(evaluate(want))
        except CroqError:  # a name no parameter binds: not compared
            continue
        g = E.fold(got)
        if E.same(w, g):
            continue
        equal = E.fold(E.Bin("==", w, g))
        if isinstance(equal, E.Const):
            if equal.value:
                continue
            raise CroqSemanticError(
                f"'{fn.name}' is declared {declared} but returns {what}: its extent along dimension {d} is"
                f" {size_text(g)}, not {size_text(w)}",
                value.span,
                "return data of the declared shape, or declare the function's shape as the data's",
            )
        out.append(
            H.Assert(
                equal,
                f"'{fn.name}' is declared {declared} but returns {what}: its extent along dimension {d},"
                f" {size_text(g)}, differs from {size_text(w)}",
                line=line,
            )
        )
    return out
