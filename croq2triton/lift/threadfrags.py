"""Fragments of each thread (``frag`` declared under a thread level whose operations read the thread
index): each thread's own small array, as a ``local`` buffer of the thread (LANGUAGE.md 7.9,
``frag`` / ``apply``; lift/scratch.py keeps one copy per lane).

Under a thread level, ``frag T [e..] v {x}`` is the thread's array ``local T [e..] v`` filled with
``x``; ``apply {i, j} in v.span body`` runs ``body`` for every element, which is ``foreach {i, j}
in v.span body`` (the elements are independent); ``copy(d, s)`` and ``reduce_max`` / ``reduce_sum
(d, s, axis)`` are the loops over ``d``'s elements that compute them.  A thread level with MMAs,
``all_reduce_sum`` or fragments of other shapes is left as it is (its refusal stands).
"""

from __future__ import annotations

import copy
import dataclasses

from ..frontend import ast as A
from ..sema.levels import chain_levels, chains

MMA_WORK = (A.MmaFill, A.MmaLoad, A.MmaOp, A.MmaStore, A.MmaScale, A.FragInit)


class NotRewritten(Exception):
    pass


def thread_frags(top: A.Parallel) -> A.Parallel | None:
    """``top`` with the fragments of its thread levels made each thread's arrays; None where it has
    none (or one that cannot be)."""
    new = copy.deepcopy(top)
    threads = {
        id(b) for chain in chains(new) for b, lvl in zip(chain, chain_levels(chain), strict=True) if lvl == "thread"
    }
    found = False
    for p in [n for n in new.walk() if isinstance(n, A.Parallel)]:
        if not p.levels or id(p.levels[-1]) not in threads:
            continue
        if not any(isinstance(n, (A.FragDecl, A.Apply, A.FragOp)) for n in p.body.walk()):
            continue
        if any(isinstance(n, MMA_WORK) for n in p.body.walk()):
            return None
        try:
            shapes = {d.name: s.shape for s in p.body.walk() if isinstance(s, A.FragDecl) for d in s.items}
            p.body = A.Block(_stmts(p.body, shapes), span=p.body.span)
        except NotRewritten:
            return None
        found = True
    return new if found else None


def _stmts(s: A.Stmt, shapes: dict[str, list[A.Expr] | None]) -> list[A.Stmt]:
    out: list[A.Stmt] = []
    for x in s.stmts if isinstance(s, A.Block) else [s]:
        out.extend(_stmt(x, shapes))
    return out


def _block(s: A.Stmt, shapes: dict[str, list[A.Expr] | None]) -> A.Block:
    return A.Block(_stmts(s, shapes), span=s.span)


def _stmt(s: A.Stmt, shapes: dict[str, list[A.Expr] | None]) -> list[A.Stmt]:
    sp = s.span
    if isinstance(s, A.FragDecl):
        if s.elem is None or s.shape is None or any(d.dims or d.init is not None for d in s.items):
            raise NotRewritten
        out: list[A.Stmt] = [
            A.SpannedDecl(s.elem, s.shape, [dataclasses.replace(d, fill=None) for d in s.items], "local", span=sp)
        ]
        for d in s.items:
            if d.fill is not None:
                ks = _vars(d.name, len(s.shape))
                fill = A.AssignStmt([A.Assign(_at(d.name, ks, sp), "=", d.fill, span=sp)], span=sp)
                out.append(_foreach(ks, _span(d.name, sp), fill, sp))
        return out
    if isinstance(s, A.Apply):
        if s.frag not in shapes:  # a fragment of the code around: the threads' together
            raise NotRewritten
        return [_foreach(list(s.vars), _span(s.frag, sp), _block(s.body, shapes), sp)]
    if isinstance(s, A.FragOp):
        return [_frag_op(s, shapes)]
    if isinstance(s, A.Block):
        return [A.Block(_stmts(s, shapes), span=sp)]
    if isinstance(s, A.Foreach):
        return [dataclasses.replace(s, body=_block(s.body, shapes))]
    if isinstance(s, A.If):
        other = _block(s.other, shapes) if s.other is not None else None
        return [dataclasses.replace(s, then=_block(s.then, shapes), other=other)]
    return [s]


def _frag_op(s: A.FragOp, shapes: dict[str, list[A.Expr] | None]) -> A.Stmt:
    names = [x.name if isinstance(x, A.Name) else None for x in s.args]
    if len(names) != 2 or None in names or any(n not in shapes for n in names):
        raise NotRewritten
    dst, src = names[0], names[1]
    assert dst is not None and src is not None
    sp = s.span
    src_shape = shapes[src] or []
    if s.op == "copy":
        ks = _vars(dst, len(src_shape))
        body = A.AssignStmt([A.Assign(_at(dst, ks, sp), "=", _at(src, ks, sp), span=sp)], span=sp)
        return _foreach(ks, _span(dst, sp), body, sp)
    if s.op not in ("reduce_max", "reduce_sum") or s.axis is None or not 0 <= s.axis < len(src_shape) < 8:
        raise NotRewritten
    if len(src_shape) < 2:
        raise NotRewritten
    ks = _vars(dst, len(src_shape) - 1)
    m = f"{dst}_m_"
    along = [A.Name(k, span=sp) for k in ks]
    first = along[: s.axis] + [A.IntLit(0, "0", span=sp)] + along[s.axis :]
    each = along[: s.axis] + [A.Name(m, span=sp)] + along[s.axis :]
    here = _at(dst, ks, sp)
    if s.op == "reduce_max":
        start: A.Expr = A.At(A.Name(src, span=sp), first, span=sp)
        step = A.Builtin("__max", [here, A.At(A.Name(src, span=sp), each, span=sp)], span=sp)
        update = A.Assign(_at(dst, ks, sp), "=", step, span=sp)
    else:
        start = A.IntLit(0, "0", span=sp)
        update = A.Assign(_at(dst, ks, sp), "+", A.At(A.Name(src, span=sp), each, span=sp), span=sp)
    extent = src_shape[s.axis]
    inner = A.Foreach([A.Within(A.MdspanLit([extent], span=sp), m, span=sp)], A.AssignStmt([update], span=sp), span=sp)
    init = A.AssignStmt([A.Assign(_at(dst, ks, sp), "=", start, span=sp)], span=sp)
    return _foreach(ks, _span(dst, sp), A.Block([init, inner], span=sp), sp)


def _vars(base: str, n: int) -> list[str]:
    return [f"{base}_k{d}_" for d in range(n)]


def _at(name: str, ks: list[str], sp: object) -> A.At:
    return A.At(A.Name(name, span=sp), [A.Name(k, span=sp) for k in ks], span=sp)  # type: ignore[arg-type]


def _span(name: str, sp: object) -> A.Member:
    return A.Member(A.Name(name, span=sp), "span", span=sp)  # type: ignore[arg-type]


def _foreach(ks: list[str], shape: A.Expr, body: A.Stmt, sp: object) -> A.Foreach:
    return A.Foreach([A.Within(shape, None, list(ks), span=sp)], body, span=sp)  # type: ignore[arg-type]
