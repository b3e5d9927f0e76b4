"""The shapes of a copy outside ``parallel`` (LANGUAGE.md 7.8, DST: "must have ... after
transp/pad, the same shape as the source unless the tail rule applies"): a host-level copy between
whole buffers of compile-time shapes must fit its destination.  A smaller source is the tail rule
(the rest is filled with zeros); a larger one, or one of another rank, does not fit.  Copies inside
a kernel are checked by the lifting, which knows the shapes of views (lift/checks.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution
from .tiling import _Tiling, source_text

HINT = (
    "a copy's destination has its source's shape (after .transp / .pad); a smaller source fills the"
    " rest with zeros (the tail rule), a larger one does not fit"
)


def host_copy_errors(fn: A.CoFunction, res: Resolution, value: Callable[[A.Expr], int | None]) -> list[Diagnostic]:
    t = _Tiling(res, value)
    out: list[Diagnostic] = []
    for s in _host_copies(fn.body):
        d = _fit_error(t, s)
        if d is not None:
            out.append(d)
    return out


def _host_copies(stmts: list[A.Stmt]) -> Iterator[A.DmaStmt]:
    for s in stmts:
        if isinstance(s, A.Parallel):
            continue
        if isinstance(s, A.DmaStmt) and s.engine == "dma" and s.op in ("copy", "transp"):
            yield s
        for c in s.children():
            if isinstance(c, A.Block):
                yield from _host_copies(c.stmts)
            elif isinstance(c, A.Stmt):
                yield from _host_copies([c])


def _shape(t: _Tiling, e: A.Expr) -> list[int] | None:
    if not isinstance(e, A.Name):
        return None
    _, dims = t.root(e)
    if dims is None:
        return None
    sizes = [t.value(d) for d in dims]
    return None if any(v is None for v in sizes) else [v for v in sizes if v is not None]


def _fit_error(t: _Tiling, s: A.DmaStmt) -> Diagnostic | None:
    if s.dst_storage:
        return None
    src, dst = _shape(t, s.src), _shape(t, s.dst)
    if src is None or dst is None:
        return None
    moved = src
    if s.op == "transp":
        order = [t.value(c) for c in s.cfg or []]
        if sorted(o for o in order if o is not None) != list(range(len(src))) or len(order) != len(src):
            return None  # not a permutation: an error of its own
        moved = [src[o] for o in order if o is not None]
    if len(moved) == len(dst):
        larger = [(d, a, b) for d, (a, b) in enumerate(zip(moved, dst, strict=True)) if a > b]
        if not larger:
            return None
        d, a, b = larger[0]
        why = f"the source is larger along dimension {d} ({a} > {b})"
    else:
        why = f"the source has {len(moved)} dimension(s), the destination {len(dst)}"
    source = f"'{source_text(s.src)}' {_text(src)}"
    if moved != src:
        source += f" (transposed: {_text(moved)})"
    return Diagnostic(
        "error",
        f"{s.engine}.{s.op} of {source} into '{source_text(s.dst)}' {_text(dst)}: {why}",
        s.span,
        HINT,
    )


def _text(shape: list[int]) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"
