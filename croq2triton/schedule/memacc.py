"""An accumulator kept in memory, held in registers: a loop that reads an element, adds to it and
writes it back each step (``y.at(r) += x.at(r, j)``: the output element itself; ``acc.at(0) += ..``:
a thread's local one-element buffer; ``acc.at(t) += ..``: its slot of a shared buffer) is lifted
as a load and a store of that element every iteration, which no fold sees.  Under ``--schedule
auto`` the element is read once before the loop into a variable, the loop assigns the variable,
and the variable is stored once after it (scalar replacement); schedule/foldloops.py then folds the
loop like any other accumulator's.

What it proves on the IR (else the loop stays as lifted), for a loop and a tensor or scratch area
``B``:

* the loop's body (nested statements included) reads ``B`` by exactly one load and writes it by
  exactly one store, both statements of the body itself (not under a branch or in an inner loop),
  the load first; no atomic, descriptor access or other access touches ``B`` in the loop;
* the two index the same element with the same mask (the body's lets put in), and neither index
  nor mask reads anything the loop defines or re-binds (its counter, its lets, loads and
  assignments): one element a lane for the whole loop, the same one read and written;

Then the value the load gives each step is the value the store wrote the step before (or, at the
first step, what memory holds before the loop), lane by lane where the mask holds; where it does
not, the load gives its fill and nothing is stored.  So ``acc = load B[i] mask m`` before the loop,
``v = where(m, acc, fill)`` for the load (``v = acc`` where only the store of ``B`` reads ``v``,
directly or through lets: the store's lanes are the mask's), ``acc := where(m, value, acc)`` for the
store, and ``store B[i] mask m = acc`` after the loop compute what the loop did: memory holds the
same values after it (a loop of no steps stores back what it read; another thread writing the
element meanwhile would be a race in the source).  A store into ``B`` just before the loop at the
same element, under a mask within the load's, gives ``acc`` its value instead of the load.
Distinct tensors are distinct memory (as schedule/sameloads.py and lift/hazards.py take them).
"""

from __future__ import annotations

import dataclasses
from typing import cast

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.expr import names as _names


def promote_accumulators(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each element accumulated in memory by a loop held in registers (see the module
    docstring); the kernel itself where there is none."""
    taken = {v.name for s in N.walk(kernel.body) for v in N.defines(s)} | {a.name for a in kernel.args}
    done = [0]
    body = _block(kernel.body, taken, done)
    if not done[0]:
        return kernel
    doc = kernel.doc + " Its accumulators kept in memory are held in registers in their loops (schedule/memacc.py)."
    return dataclasses.replace(kernel, body=N.without_dead_lets(body), doc=doc)


def _block(body: list[N.Stmt], taken: set[str], done: list[int]) -> list[N.Stmt]:
    out: list[N.Stmt] = []
    for s in body:
        if isinstance(s, N.For):
            loop = dataclasses.replace(s, body=_block(s.body, taken, done))
            tail: list[N.Stmt] = []
            while (found := _promote(loop, out, taken)) is not None:
                before, loop, after = found
                out.extend(before)
                tail = after + tail
                done[0] += 1
            out.append(loop)
            out.extend(tail)
            continue
        if isinstance(s, N.While):
            s = dataclasses.replace(s, body=_block(s.body, taken, done))
        elif isinstance(s, N.If):
            s = dataclasses.replace(s, then=_block(s.then, taken, done), orelse=_block(s.orelse, taken, done))
        out.append(s)
    return out


def _defined_in(loop: N.For) -> set[str]:
    """The names the loop defines or re-binds (its counter, lets, loads, assignments)."""
    out = {loop.var.name}
    for x in N.walk(loop.body):
        out |= {v.name for v in N.defines(x)}
        if isinstance(x, N.Assign):
            out.add(x.var.name)
    return out


def _base_of(s: N.Stmt) -> str | None:
    if isinstance(s, (N.Load, N.Store, N.Atomic)):
        return s.base
    if isinstance(s, (N.TmaLoad, N.TmaStore)):
        return s.fallback.base
    return None


def _promote(loop: N.For, before: list[N.Stmt], taken: set[str]) -> tuple[list[N.Stmt], N.For, list[N.Stmt]] | None:
    """The first element ``loop`` accumulates in memory, held in a register: (the statements before
    the loop, the loop, the statements after it); None where there is none.  ``before``: the
    statements of the enclosing body before the loop (a store just before it gives the value)."""
    accesses: dict[str, list[N.Stmt]] = {}
    for x in N.walk(loop.body):
        base = _base_of(x)
        if base is not None:
            accesses.setdefault(base, []).append(x)
    inner = _defined_in(loop)
    lets = {x.var.name: x.value for x in loop.body if isinstance(x, N.Let)}
    for found in accesses.values():
        if len(found) != 2 or not isinstance(found[0], N.Load) or not isinstance(found[1], N.Store):
            continue
        load, store = found
        if not any(x is load for x in loop.body) or not any(x is store for x in loop.body):
            continue  # (under a branch or in an inner loop)
        if load.var.shape != E.broadcast(*(i.shape for i in store.index), store.value.shape):
            continue
        index = tuple(E.resolve(i, lets) for i in load.index)
        if len(index) != len(store.index) or not all(
            E.same(a, E.resolve(b, lets)) for a, b in zip(index, store.index, strict=True)
        ):
            continue
        mask = E.resolve(load.mask, lets) if load.mask is not None else None
        if (mask is None) != (store.mask is None):
            continue
        if mask is not None and not E.same(mask, E.resolve(store.mask, lets)):
            continue
        if any(_names(i) & inner for i in index) or _names(mask) & inner:
            continue
        return _rewrite(loop, load, store, index, mask, before, taken)
    return None


def _rewrite(
    loop: N.For,
    load: N.Load,
    store: N.Store,
    index: tuple[E.Expr, ...],
    mask: E.Expr | None,
    before: list[N.Stmt],
    taken: set[str],
) -> tuple[list[N.Stmt], N.For, list[N.Stmt]]:
    line = loop.line
    var = load.var
    acc = E.Var(N.fresh_name(f"{var.name}_acc", taken), var.type, dims=var.shape)
    mask_var = None
    pre: list[N.Stmt] = []
    if mask is not None:
        mask_var = E.Var(N.fresh_name(f"{var.name}_mask", taken), "i1", dims=mask.shape)
        pre.append(N.Let(mask_var, mask, line=line))
    first = _stored_before(before, load.base, index, mask)
    if first is not None and first.dtype != var.type and not (_is_float(first.dtype) and _is_float(var.type)):
        first = None  # (a conversion on store other than a float's rounding: read back)
    if first is not None:
        value0 = _spread(first, var)
        pre.append(N.Let(acc, value0 if value0.dtype == var.type else E.Cast(value0, var.type), line=line))
    else:
        pre.append(dataclasses.replace(load, var=acc, index=index, mask=mask_var))
    fill = load.other if load.other is not None else (0 if E.is_int(var.type) else 0.0)
    only_store = _read_only_by(loop.body, var.name, store)
    body: list[N.Stmt] = []
    for x in loop.body:
        if x is load:
            value: E.Expr = acc
            if mask_var is not None and not only_store:
                value = E.Where(mask_var, acc, E.Full(var.shape, fill, var.type))
            body.append(N.Let(var, value, line=x.line))
        elif x is store:
            new: E.Expr = _spread(store.value, acc)
            if new.dtype != acc.type:
                new = E.Cast(new, acc.type)
            if mask_var is not None:
                new = E.Where(mask_var, new, acc)
            body.append(N.Assign(acc, new, line=x.line))
        else:
            body.append(x)
    out = dataclasses.replace(loop, body=body, carried=(*loop.carried, acc))
    post: list[N.Stmt] = [N.Store(store.base, index, acc, mask_var, line=line)]
    return pre, out, post


def _is_float(dtype: str) -> bool:
    return dtype in ("f16", "bf16", "f32", "f64")


def _spread(value: E.Expr, like: E.Var) -> E.Expr:
    """``value`` broadcast to ``like``'s shape (a scalar stored into every lane's element)."""
    if value.shape == like.shape:
        return value
    return E.fold(E.Bin("+", value, E.Full(cast(E.Shape, like.shape), 0, like.type)))


def _stored_before(before: list[N.Stmt], base: str, index: tuple[E.Expr, ...], mask: E.Expr | None) -> E.Expr | None:
    """The value a store into ``base`` just before the loop (only lets between) wrote at ``index``,
    under a mask whose terms are all the load's (or none).  Where its mask is the load's (the store
    after the loop writes every element it wrote), the store is taken out of ``before``."""
    lets = {x.var.name: x.value for x in before if isinstance(x, N.Let)}
    for at in range(len(before) - 1, -1, -1):
        x = before[at]
        if isinstance(x, N.Let):
            continue
        if not isinstance(x, N.Store) or x.base != base or len(x.index) != len(index):
            return None
        if not all(E.same(E.resolve(a, lets), E.resolve(b, lets)) for a, b in zip(x.index, index, strict=True)):
            return None
        held = E.conjuncts(E.resolve(mask, lets)) if mask is not None else []
        wrote = E.conjuncts(E.resolve(x.mask, lets)) if x.mask is not None else []
        if not _within(wrote, held):
            return None
        if _within(held, wrote):
            del before[at]  # (the store after the loop writes the same elements: this one is dead)
        return x.value
    return None


def _within(small: list[E.Expr], big: list[E.Expr]) -> bool:
    """Every term of ``small`` is one of ``big``."""
    return all(any(E.same(t, u) for u in big) for t in small)


def _read_only_by(body: list[N.Stmt], name: str, store: N.Store) -> bool:
    """Whether ``name`` (a loaded value) is read, directly or through lets, only by ``store``'s value."""
    reading = {name}
    for x in body:
        if isinstance(x, N.Let) and _names(x.value) & reading:
            reading.add(x.var.name)
    for x in body:
        if x is store:
            if any(_names(i) & reading for i in store.index) or (store.mask is not None and store.mask.name in reading):
                return False
            continue
        if isinstance(x, N.Let) and x.var.name in reading:
            continue
        if any(_names(e) & reading for e in N.exprs_of(x)):
            return False
    return True
