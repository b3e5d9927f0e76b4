"""A loop nest that walks one range, written as blocks by hand, as the one loop it is.

A thread's row walked in blocks of a fixed size (``foreach jb in [cdiv(N, 64)] { foreach jj in [64]
{ if (jb * 64 + jj < N) s += x.at(r, jb * 64 + jj); } }``) is one loop over ``jb * 64 + jj``: the
nest visits its values in increasing order, once each.  Lifted as written, the inner loop is not at
the kernel's top level and the folding of schedule/foldloops.py never sees it; as one loop it folds
like a row walked element by element.

What it proves on the IR (else the nest stays as written):

* the outer loop's body is the inner loop and nothing else, both step by 1, the inner loop's
  bounds are the same for every lane and do not depend on the outer counter, and the inner loop
  runs a constant number ``B > 0`` of iterations;
* every expression of the inner body reads the two counters only through ``c * (B * jb + jj)``
  (an affine expression whose outer coefficient is ``B`` times its inner one).

A nest over whole blocks of a run guarded by its end (``foreach c in [cdiv(N, 128)] { foreach jj in [128]
{ int j = c * 128 + jj; if (j < N) y.at(r, j) = ..; } }``) is then one loop over ``u < cdiv(N, 128) *
128`` whose every store is masked by ``u < N``: where its body is only lets, loads and such stores, the
iterations from ``N`` on do nothing (a load has no effect; ``cdiv(N, B) * B >= N`` for every ``N``), so
the loop may run to ``N``.  It does where another loop of the kernel runs over ``[0, N)`` (a row's
statistic written ``foreach j in [N]``): the two then fold into tiles of one extent.

A loop that steps by a constant ``c > 1`` (``foreach c = j(1::2)``) is first a loop by 1 over ``k`` with
``let j = start + k * c`` (the same values in the same order), which folds like any other.

Then ``u = B * (jb - jb0) + (jj - jj0)`` runs over ``0 .. (jb1 - jb0) * B`` in the order the nest
visits its pairs, each once, and ``B * jb + jj`` is ``u + B * jb0 + jj0``: the body is the same
statements on the same values in the same order (an outer extent of zero or less gives no
iterations either way).
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N


class _NotFlat(Exception):
    pass


def flatten_nests(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each loop nest the proof admits as one loop (the kernel itself where none)."""
    taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    done = [0, 0]  # nests flattened, loops with a step made loops by 1
    body = N.map_loops(kernel.body, lambda s: _loop(s, taken, done))
    if done[0]:
        ends = [s.stop for s in N.walk(body) if isinstance(s, N.For) and E.same(s.start, E.Const(0))]
        body = N.map_loops(body, lambda s: _trimmed(s, ends))
    if not any(done):
        return kernel
    what = [
        x
        for x, n in zip(
            ("its loop nests over blocks of one range are one loop", "its loops with a step run by 1"),
            done,
            strict=True,
        )
        if n
    ]
    doc = kernel.doc + " " + "; ".join(what).capitalize() + " (schedule/flatnest.py)."
    return dataclasses.replace(kernel, body=body, doc=doc)


def _loop(s: N.For, taken: set[str], done: list[int]) -> N.For:
    """``s`` (its body done already) by unit steps, then flattened with the loop it holds while it can."""
    stepped = _unit_steps(s, taken)
    if stepped is not None:
        s = stepped
        done[1] += 1
    while True:  # (a nest of three: the inner two first, then the outer with them)
        try:
            s = _flatten(s, taken)
        except _NotFlat:
            return s
        done[0] += 1


def _trimmed(loop: N.For, ends: list[E.Expr]) -> N.For:
    """``loop`` over ``[0, cdiv(Y, B) * B)`` run to ``Y`` where its iterations from ``Y`` on do nothing
    and another loop of the kernel runs over ``[0, Y)`` (module docstring); ``loop`` itself otherwise."""
    stop = loop.stop
    if not (
        isinstance(loop.start, E.Const)
        and loop.start.value == 0
        and isinstance(stop, E.Bin)
        and stop.op == "*"
        and isinstance(stop.lhs, E.CDiv)
        and isinstance(stop.rhs, E.Const)
        and isinstance(stop.rhs.value, int)
        and stop.rhs.value > 0
        and E.same(stop.lhs.rhs, stop.rhs)
    ):
        return loop
    end = stop.lhs.lhs
    if not any(E.same(end, e) for e in ends):
        return loop
    lets: dict[str, E.Expr] = {}
    stores = 0
    for s in loop.body:
        if isinstance(s, N.Let):
            lets[s.var.name] = s.value
        elif isinstance(s, N.Load):
            continue
        elif isinstance(s, N.Store) and s.mask is not None and _bounded(s.mask, loop.var, end, lets):
            stores += 1
        else:
            return loop
    if not stores:
        return loop
    return dataclasses.replace(loop, stop=end)


def _bounded(mask: E.Expr, u: E.Var, end: E.Expr, lets: dict[str, E.Expr]) -> bool:
    """Whether ``mask`` holds only where ``u < end``: one of its conjuncts is that comparison."""
    for c in E.conjuncts(E.resolve(mask, lets)):
        if isinstance(c, E.Bin) and c.op == "<" and E.same(c.rhs, end):
            lhs = E.fold(c.lhs)
            if isinstance(lhs, E.Var) and lhs.name == u.name:
                return True
    return False


def _unit_steps(loop: N.For, taken: set[str]) -> N.For | None:
    """A loop stepping by a constant ``c > 1`` (``foreach c = j(1::2)``) as a loop by 1 over ``k`` whose
    body starts with ``let j = start + k * c``: the same values of ``j`` in the same order (``k``
    runs to ``cdiv(stop - start, c)``, none where ``stop <= start``); None for a loop by 1 or by a
    step not known when translating."""
    step = E.fold(loop.step)
    if not (isinstance(step, E.Const) and isinstance(step.value, int) and step.value > 1):
        return None
    if loop.start.shape or loop.stop.shape:
        return None
    k = E.Var(N.fresh_name(f"{loop.var.name}_step", taken), loop.var.dtype, lo=0)
    value = E.fold(E.Bin("+", loop.start, E.Bin("*", k, step)))
    stop = E.fold(E.CDiv(E.Bin("-", loop.stop, loop.start), step))
    body = [N.Let(loop.var, value, line=loop.line), *loop.body]
    return dataclasses.replace(loop, var=k, start=E.Const(0), stop=stop, step=E.Const(1), body=body)


def _flatten(outer: N.For, taken: set[str]) -> N.For:
    if len(outer.body) != 1 or not isinstance(outer.body[0], N.For):
        raise _NotFlat
    inner = outer.body[0]
    jb, jj = outer.var.name, inner.var.name
    for loop in (outer, inner):
        if not (isinstance(loop.step, E.Const) and loop.step.value == 1):
            raise _NotFlat
        if loop.start.shape or loop.stop.shape:
            raise _NotFlat
    if {jb} & {v.name for x in (inner.start, inner.stop) for v in E.free_vars(x)}:
        raise _NotFlat
    extent = E.fold(E.Bin("-", inner.stop, inner.start))
    if not (isinstance(extent, E.Const) and isinstance(extent.value, int) and extent.value > 0):
        raise _NotFlat
    b = int(extent.value)
    name = N.fresh_name(f"{jb}_{jj}", taken)
    stop = E.fold(E.Bin("*", E.Bin("-", outer.stop, outer.start), E.Const(b)))
    last = int(stop.value) - 1 if isinstance(stop, E.Const) and isinstance(stop.value, int) else None
    u = E.Var(name, outer.var.dtype, lo=0, hi=last)  # (from 0: an index of it is not negative)
    # B * jb + jj, as u
    flat = E.fold(E.Bin("+", u, E.Bin("+", E.Bin("*", E.Const(b), outer.start), inner.start)))
    body = [N.map_exprs(s, lambda e: _combined(e, jb, jj, b, flat)) for s in inner.body]
    return N.For(
        u,
        E.Const(0),
        stop,
        E.Const(1),
        body,
        pipeline=inner.pipeline,
        carried=outer.carried,
        line=inner.line,
    )


def _combined(e: E.Expr, jb: str, jj: str, b: int, flat: E.Expr) -> E.Expr:
    """``e`` with each ``c * (b * jb + jj)`` in it as ``c * flat``; :class:`_NotFlat` where a
    counter appears otherwise."""
    names = {v.name for v in E.free_vars(e)}
    if not names & {jb, jj}:
        return e
    found = E.linear(e, [jb, jj])
    if found is not None:
        coefs, rest = found
        cb, cj = coefs.get(jb, 0), coefs.get(jj, 0)
        if cb != b * cj:
            raise _NotFlat
        return E.fold(E.Bin("+", E.Bin("*", E.Const(cj, flat.dtype), flat), rest))
    if isinstance(e, E.Var):
        raise _NotFlat  # a counter read other than through the combination
    return E.map_children(e, lambda x: _combined(x, jb, jj, b, flat))
