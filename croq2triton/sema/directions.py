"""The directions a copy may take (LANGUAGE.md 7.8): ``dma`` copies global <-> shared <-> local in
any direction, except that an asynchronous copy from global memory to global memory is rejected
on GPU (there is no asynchronous global-to-global path for a kernel's threads: ``cp.async`` and
TMA loads land in shared memory).  The rule binds copies inside a kernel; a copy between launches
is the host's (a device-to-device ``cudaMemcpyAsync``, a torch copy for croq2triton) and may be
asynchronous.  A ``tma.copy`` (and a ``tma.transp`` or ``tma.pad``) inside a kernel moves data
between global and shared memory only: a ``local`` source or destination is an error (7.8, TMA
constraints), so is one between two buffers, one from a tensor in global memory to another (or
``=> global``), and so is an atomic on a ``local`` buffer (7.7: atomics act on shared or global
data).
A buffer is in global memory when it is declared ``global`` (a ``global`` parameter, or a
declaration with ``global`` storage or with no storage outside ``parallel``, LANGUAGE.md 7.5) or
when the copy allocates its destination ``=> global``.  A parameter without storage is host data
the wrapper moves (upstream's "default" storage) and is not counted."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic
from ..frontend import ast as A
from .levels import kernels
from .scopes import Binding, Resolution
from .tiling import source_text


def direction_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    globals_ = _global_declarations(fn)
    params = {p.name for p in fn.params if p.storage == "global" and p.name}
    out: list[Diagnostic] = []

    def is_global(e: A.Expr) -> bool:
        b = _root_binding(e, res)
        if b is None:
            return False
        if b.origin == "parameter":
            return b.name in params
        return b.kind == "spanned" and b.span is not None and (b.span.start, b.name) in globals_

    locals_ = _declarations(fn, "local")

    def is_local(e: A.Expr, storage: bool) -> bool:
        if storage:
            return isinstance(e, A.Name) and e.name == "local"
        b = _root_binding(e, res)
        return b is not None and b.kind == "spanned" and b.span is not None and (b.span.start, b.name) in locals_

    def in_memory(e: A.Expr) -> bool:
        """Is ``e`` a view of a tensor in global memory (a parameter, a global buffer)? Unresolved: yes."""
        b = _root_binding(e, res)
        return b is None or b.origin == "parameter" or is_global(e) or b.kind != "spanned"

    def in_tensor(e: A.Expr) -> bool:
        """Is ``e`` for sure a view of a tensor in device memory (a parameter, a global buffer)?"""
        b = _root_binding(e, res)
        return b is not None and b.kind == "spanned" and (b.origin == "parameter" or is_global(e))

    for k in kernels(fn):
        for n in k.walk():
            if isinstance(n, A.Call) and n.kind == "atomic" and n.args and is_local(n.args[0], False):
                out.append(_atomic_local(n))
            if isinstance(n, A.DmaStmt) and n.engine == "tma" and n.op in TMA_MOVES:
                side = "destination" if is_local(n.dst, n.dst_storage) else "source" if is_local(n.src, False) else None
                if side is not None:
                    out.append(_tma_local(n, side))
                elif not in_memory(n.src) and not (in_memory(n.dst) if not n.dst_storage else _global_kw(n.dst)):
                    out.append(_tma_buffers(n))
            to_tensor = isinstance(n, A.DmaStmt) and (_global_kw(n.dst) if n.dst_storage else in_tensor(n.dst))
            if isinstance(n, A.DmaStmt) and n.engine == "tma" and n.op in TMA_MOVES and in_tensor(n.src) and to_tensor:
                out.append(_tma_global(n))
            if not (isinstance(n, A.DmaStmt) and n.engine == "dma" and n.op == "copy" and n.is_async):
                continue
            to_global = (n.dst_storage and isinstance(n.dst, A.Name) and n.dst.name == "global") or (
                not n.dst_storage and is_global(n.dst)
            )
            if to_global and is_global(n.src):
                out.append(_async_global_copy(n))
    return out


# the TMA copies that take either direction (``tma.load`` goes one way: sema/tmaloads.py)
TMA_MOVES = ("copy", "transp", "pad")


def _declarations(fn: A.CoFunction, storage: str) -> set[tuple[int, str]]:
    """(start of the declared name's span, name) of each buffer declared with ``storage``."""
    return {
        (span.start, d.name)
        for s, _ in _decls(fn.body, False)
        if s.storage == storage
        for d in s.items
        if (span := d.span or s.span) is not None
    }


def _global_kw(e: A.Expr) -> bool:
    return isinstance(e, A.Name) and e.name == "global"


def _tma_only_global_shared(s: A.DmaStmt, what: str, hint: str) -> Diagnostic:
    """A TMA copy ``what`` it may not move (LANGUAGE.md 7.8: TMA copies global <-> shared only)."""
    return Diagnostic(
        "error",
        f"a tma.{s.op} {what} ('{source_text(s.src)}' => '{source_text(s.dst)}'): TMA copies"
        " between global and shared memory only",
        s.span,
        hint,
    )


def _tma_buffers(s: A.DmaStmt) -> Diagnostic:
    return _tma_only_global_shared(s, "between two buffers", f"copy between buffers with 'dma.{s.op}'")


def _tma_global(s: A.DmaStmt) -> Diagnostic:
    return _tma_only_global_shared(
        s,
        "from global memory to global memory",
        f"stage the tile through a 'shared' buffer, or copy with 'dma.{s.op}'",
    )


def _atomic_local(c: A.Call) -> Diagnostic:
    target = source_text(c.args[0])
    return Diagnostic(
        "error",
        f"'{c.name}' on '{target}' of a local buffer: atomics read, modify and write shared or global data"
        " (LANGUAGE.md 7.7), and a local buffer is one thread's own",
        c.span,
        f"a thread's own buffer needs no atomic: write '{target} = {target} + v', or declare the buffer 'shared'",
    )


def _tma_local(s: A.DmaStmt, side: str) -> Diagnostic:
    return _tma_only_global_shared(
        s, f"with a local {side}", f"declare the buffer 'shared', or copy it with 'dma.{s.op}'"
    )


def _global_declarations(fn: A.CoFunction) -> set[tuple[int, str]]:
    """(start of the declared name's span, name) of each buffer declared in global memory."""
    out: set[tuple[int, str]] = set()
    for s, inside in _decls(fn.body, False):
        if s.storage == "global" or (s.storage is None and not inside):
            for d in s.items:
                span = d.span or s.span
                if span is not None:
                    out.add((span.start, d.name))
    return out


def _decls(stmts: list[A.Stmt], inside: bool) -> Iterator[tuple[A.SpannedDecl, bool]]:
    for s in stmts:
        if isinstance(s, A.SpannedDecl):
            yield s, inside
        deeper = inside or isinstance(s, A.Parallel)
        for c in s.children():
            if isinstance(c, A.Block):
                yield from _decls(c.stmts, deeper)
            elif isinstance(c, A.Stmt):
                yield from _decls([c], deeper)


def _root_binding(e: A.Expr, res: Resolution) -> Binding | None:
    while isinstance(e, (A.View, A.Index, A.At, A.Paren)):
        e = e.expr if isinstance(e, A.Paren) else e.base
    return res.binding(e) if isinstance(e, A.Name) else None


def _async_global_copy(s: A.DmaStmt) -> Diagnostic:
    return Diagnostic(
        "error",
        f"an asynchronous copy from global memory to global memory ('{source_text(s.src)}' =>"
        f" '{source_text(s.dst)}'): a GPU has no asynchronous global-to-global copy",
        s.span,
        "copy synchronously (drop '.async'), or stage the data through a 'shared' buffer",
    )
