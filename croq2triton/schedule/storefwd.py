"""A value a lane stores into a tensor in one loop and loads back in a later loop over the same range,
computed again where it is loaded rather than read back from memory; the first store dropped where the
later loop overwrites every element it wrote.

A softmax written the way a CUDA programmer writes it in place (the exponentials into ``y``, then
``y`` scaled by ``1 / s``)::

    foreach j in [N] { f32 e = __exp(x.at(r, j) - m); y.at(r, j) = e; s += e; }
    foreach j in [N] { y.at(r, j) = y.at(r, j) * inv; }

reads ``x`` twice, writes ``y`` twice and reads it once: five passes over a row where a softmax needs
two.  Here the second loop's ``y.at(r, j)`` is ``__exp(x.at(r, j) - m)`` again, and the first loop's
store is dead (the second loop stores the same element before anything reads it), so the kernel is
the three-pass softmax, whose loops fold into one read of the row (schedule/foldloops.py).

What it proves on the IR (a pair of top-level loops ``A`` before ``B``, else nothing changes):

* ``A`` and ``B`` run the same range (start, stop, step), and ``A`` stores into tensor ``T`` once, at
  its top level, at ``index(j)`` under mask ``g(j)``;
* a load of ``T`` at the top level of ``B``'s body reads ``index(k)`` under ``g(k)`` (the same
  expressions of its own counter, the masks' definitions compared), before any store into ``T`` in
  ``B``: it reads what iteration ``k`` of ``A`` stored, in the same lane;
* the stored value is an expression of ``A``'s counter, of values defined before ``A`` that nothing
  assigns from ``A`` on, and of loads from tensors the kernel never stores into: computed again in
  ``B`` it is the same value (cast to ``T``'s type, as the store rounds it; the load's ``other``
  where the mask is off);
* nothing between ``A`` and ``B`` stores into ``T`` or adds into it.

``A``'s store is dropped where ``B`` stores into ``T`` at the same index under the same mask at its
top level, and no other load of ``T`` is left from ``A``'s store up to that store.  The barriers of
``A`` and ``B`` go where the kernel has no scratch area (they fenced its tensors only: the barriers
the result needs are placed again after scheduling, lift/hazards.py).

Distinct tensor parameters are taken not to share memory, as every rewrite of ``--schedule auto``
takes them (C's ``restrict``): with ``y`` the same memory as ``x`` the first loop would change the
``x`` the value is computed again from.
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N


def forward_stores(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each value a later loop reads back computed again there (module docstring)."""
    body = list(kernel.body)
    changed: set[int] = set()
    for b in range(len(body)):
        for a in range(b):
            got = _forwarded(kernel, body, a, b)
            if got is not None:
                body[a], body[b] = got
                changed |= {a, b}
    if not changed:
        return kernel
    if not any(isinstance(x, N.Scratch) for x in kernel.args):  # (their barriers fenced tensors only)
        body = [_without_barriers(s) if i in changed else s for i, s in enumerate(body)]
    return dataclasses.replace(kernel, body=body)


def _forwarded(kernel: N.Kernel, body: list[N.Stmt], a: int, b: int) -> tuple[N.For, N.For] | None:
    first, then = body[a], body[b]
    if not (isinstance(first, N.For) and isinstance(then, N.For)):
        return None
    if not (E.same(first.start, then.start) and E.same(first.stop, then.stop) and E.same(first.step, then.step)):
        return None
    stores = [s for s in N.walk(first.body) if isinstance(s, (N.Store, N.Atomic, N.TmaStore))]
    if len(stores) != 1 or not isinstance(stores[0], N.Store) or stores[0] not in first.body:
        return None
    store = stores[0]
    tensor = store.base
    if not isinstance(_arg(kernel, tensor), N.Pointer):
        return None
    written = {s.base for s in N.walk(kernel.body) if isinstance(s, (N.Store, N.Atomic))}
    written |= {s.desc for s in N.walk(kernel.body) if isinstance(s, N.TmaStore)}
    for s in body[a + 1 : b]:  # (a TMA store names its descriptor, not the tensor: any stops it)
        if any(
            isinstance(x, (N.Store, N.Atomic)) and x.base == tensor or isinstance(x, N.TmaStore) for x in N.walk([s])
        ):
            return None
    j, k = first.var, then.var
    swap = {j.name: k}
    defs_a = {s.var.name: s for s in first.body if isinstance(s, (N.Let, N.Load))}
    # the values defined before A that A, B and what lies between assign: not invariant
    assigned = {s.var.name for s in N.walk(body[a : b + 1]) if isinstance(s, N.Assign)}
    assigned |= {v.name for s in N.walk(body[a : b + 1]) if isinstance(s, N.Atomic) and s.result for v in [s.result]}
    needed = _closure(store.value, defs_a, j.name)
    for name in needed.free:
        if name in assigned or name in {s.var.name for s in N.walk(first.body) if isinstance(s, N.Assign)}:
            return None
    for s in needed.stmts:
        if isinstance(s, N.Load) and (s.base in written or not isinstance(_arg(kernel, s.base), N.Pointer)):
            return None
    index_k = tuple(E.fold(E.substitute(_inlined(i, defs_a), swap)) for i in store.index)
    mask_k = _mask_value(store.mask, defs_a, swap)
    defs_b = {s.var.name: s for s in then.body if isinstance(s, (N.Let, N.Load))}
    taken = {v.name for s in N.walk(kernel.body) for v in N.defines(s)} | {x.name for x in kernel.args}
    taken |= {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Assign)}
    out: list[N.Stmt] = []
    replaced = 0
    stored = False
    for s in then.body:
        if isinstance(s, (N.Store, N.Atomic)) and s.base == tensor:
            stored = True
        if isinstance(s, N.Load) and s.base == tensor and not stored and _reads(s, index_k, mask_k, defs_b):
            out.extend(_recomputed(s, store, needed.stmts, swap, tensor, kernel, taken))
            replaced += 1
            continue
        out.append(s)
    if not replaced:
        return None
    then = dataclasses.replace(then, body=out)
    read_later = _reads_tensor(first.body, tensor, after=store) or any(
        isinstance(s, N.Load) and s.base == tensor for s in N.walk([*body[a + 1 : b], then])
    )
    if _overwrites(then, tensor, index_k, mask_k, defs_b) and not read_later:
        first = dataclasses.replace(first, body=[s for s in first.body if s is not store])
    return first, then


class _Needed:
    def __init__(self) -> None:
        self.stmts: list[N.Stmt] = []  # A's lets and loads the value reads, in A's order
        self.free: set[str] = set()  # the names it reads from before A (not A's counter)


def _closure(value: E.Expr, defs: dict[str, N.Stmt], counter: str) -> _Needed:
    """What ``value`` reads of the loop's body: its lets and loads, in order."""
    out = _Needed()
    seen: set[str] = set()
    todo = [v.name for v in E.free_vars(value)]
    while todo:
        name = todo.pop()
        if name in seen or name == counter:
            continue
        seen.add(name)
        s = defs.get(name)
        if s is None:
            out.free.add(name)
            continue
        if isinstance(s, N.Let):
            todo += [v.name for v in E.free_vars(s.value)]
        else:
            assert isinstance(s, N.Load)
            todo += [v.name for x in s.index for v in E.free_vars(x)]
            if s.mask is not None:
                todo.append(s.mask.name)
    out.stmts = [s for s in defs.values() if s.var.name in seen]  # type: ignore[attr-defined]
    return out


def _inlined(e: E.Expr, defs: dict[str, N.Stmt]) -> E.Expr:
    """``e`` with the loop body's lets substituted (loads stay as their variables)."""
    for _ in range(16):
        lets = {n: s.value for n, s in defs.items() if isinstance(s, N.Let) and n in {v.name for v in E.free_vars(e)}}
        if not lets:
            return e
        e = E.substitute(e, lets)
    return e


def _mask_value(mask: E.Var | None, defs: dict[str, N.Stmt], swap: dict[str, E.Expr]) -> E.Expr | None:
    if mask is None:
        return None
    return E.fold(E.substitute(_inlined(mask, defs), swap))


def _reads(load: N.Load, index: tuple[E.Expr, ...], mask: E.Expr | None, defs: dict[str, N.Stmt]) -> bool:
    """Whether ``load`` reads ``index`` under ``mask`` (its lets inlined)."""
    if len(load.index) != len(index):
        return False
    if not all(E.same(E.fold(_inlined(i, defs)), x) for i, x in zip(load.index, index, strict=True)):
        return False
    got = _mask_value(load.mask, defs, {})
    return (got is None) == (mask is None) and (got is None or mask is None or E.same(got, mask))


def _recomputed(
    load: N.Load,
    store: N.Store,
    stmts: list[N.Stmt],
    swap: dict[str, E.Expr],
    tensor: str,
    kernel: N.Kernel,
    taken: set[str],
) -> list[N.Stmt]:
    """The statements computing again in the later loop what ``store`` stored, ending in ``load.var``."""
    names = {s.var.name: N.fresh_name(s.var.name, taken) for s in stmts}  # type: ignore[attr-defined]
    env: dict[str, E.Expr] = dict(swap)

    def rename(e: E.Expr) -> E.Expr:
        return E.fold(E.substitute(e, env))

    out: list[N.Stmt] = []
    for s in stmts:
        assert isinstance(s, (N.Let, N.Load))
        var = dataclasses.replace(s.var, name=names[s.var.name])
        if isinstance(s, N.Let):
            out.append(N.Let(var, rename(s.value), line=load.line))
        else:
            mask = s.mask
            if mask is not None:
                m = env.get(mask.name, mask)
                mask = m if isinstance(m, E.Var) else None
                if mask is None:
                    raise AssertionError("a mask renamed to an expression")
            out.append(
                dataclasses.replace(s, var=var, index=tuple(rename(i) for i in s.index), mask=mask, line=load.line)
            )
        env[s.var.name] = var
    arg = _arg(kernel, tensor)
    assert isinstance(arg, N.Pointer)
    value = rename(store.value)
    if value.dtype != arg.dtype:
        value = E.Cast(value, arg.dtype)
    if load.mask is not None:
        other = load.other if load.other is not None else 0
        value = E.Where(load.mask, value, E.Const(E.typed(other, arg.dtype), arg.dtype))
    out.append(N.Let(load.var, E.fold(value), line=load.line))
    return out


def _overwrites(
    loop: N.For, tensor: str, index: tuple[E.Expr, ...], mask: E.Expr | None, defs: dict[str, N.Stmt]
) -> bool:
    """Whether ``loop`` stores into ``tensor`` at ``index`` under ``mask`` at its top level."""
    for s in loop.body:
        if isinstance(s, N.Store) and s.base == tensor:
            probe = N.Load(E.Var("_", "f32"), tensor, s.index, s.mask)
            return _reads(probe, index, mask, defs)
    return False


def _reads_tensor(body: list[N.Stmt], tensor: str, after: N.Stmt) -> bool:
    """Whether ``body`` loads ``tensor`` after the statement ``after``."""
    at = next(i for i, s in enumerate(body) if s is after)
    return any(isinstance(s, N.Load) and s.base == tensor for s in N.walk(body[at + 1 :]))


def _without_barriers(s: N.Stmt) -> N.Stmt:
    if isinstance(s, N.For) and any(isinstance(x, N.Barrier) for x in s.body):
        return dataclasses.replace(s, body=[x for x in s.body if not isinstance(x, N.Barrier)])
    return s


def _arg(kernel: N.Kernel, name: str) -> N.Arg | None:
    return next((x for x in kernel.args if x.name == name), None)
