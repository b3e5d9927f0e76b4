"""A split loop's partial folds combined by the last program to finish: one launch instead of two
(schedule/splitloop.py makes the partial and combine kernels; this makes one kernel of them).

A split column fold is short work at a wide grid: 16384 x 4096 f16 column means read 128 MB in
about 40 us on an H100, and a second launch for the combine costs its host time again (about 15-30
us of the launcher and Triton's launch, perf/RESULTS.md 2026-12-07), which the GPU waits for when
the launches come faster than the kernels.  The classic answer (CUDA's threadFenceReduction sample,
split-K with a semaphore): each program stores its partials, then counts itself done on a counter
of its group (the ``S`` programs of one original program); the program that counts last reads the
``S`` partials and runs the combine kernel's body.

* **Ordering.** The program's threads meet at a barrier after their stores (``bar.sync`` orders
  them before the counting thread's atomic at the block's scope), and the count is Triton's default
  atomic, ``acq_rel`` at the GPU's scope: the release makes the partials visible before the count,
  the last program's acquire makes every group member's partials visible to the loads after it
  (the result reaches the block's other threads through shared memory and a barrier).  In the
  interpreter the programs run one after the other: the last of a group reads them all.
* **Counters kept zero.** The last program of a group stores 0 back into its counter, so the
  counters are zero after every launch and the launcher keeps one zeroed area per device and
  stream (``runtime/launch.py counters``: no fill kernel a call).  A launch that fails on the
  device leaves the context unusable anyway.
* **Names.** The combine body's variables are renamed apart from the partial body's: a Triton
  ``if`` merges the names its branch rebinds with the names before it, which must then agree in
  type and shape.

The combine body as given (the caller folds its loop over the partials in blocks, so that one
program holds a block of partials at a time, not all ``S``: the partial kernel's warps run it).
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N
from .splitloop import program_index


class NotCombined(Exception):
    """The combine kernel's body cannot run inside the partial kernel (the two kernels stay)."""


def combined_by_last(partial: N.Kernel, combine: N.Kernel, splits: str) -> N.Kernel:
    """One kernel: ``partial``'s body, then its group's count, then ``combine``'s body in the last
    program of each group (``splits``: the partial kernel's scalar argument holding ``S``).  The
    partial kernel's last grid axis is the split (schedule/splitloop.py)."""
    taken = {a.name for a in partial.args} | {p.name for p in partial.program_ids}
    taken |= {v.name for s in N.walk(partial.body) for v in N.defines(s)}
    taken |= {s.var.name for s in N.walk(partial.body) if isinstance(s, N.Assign)}
    known = {a.name for a in partial.args}
    areas = {a.name for a in partial.args if isinstance(a, N.Scratch)}  # (the partials: one per fold)
    loaded = {s.base for s in N.walk(combine.body) if isinstance(s, N.Load)}
    for s in N.walk(combine.body):
        # (an area stored and never loaded here: carried to a later launch, schedule/splitphases.py)
        if isinstance(s, N.Barrier) or (isinstance(s, (N.Store, N.Atomic)) and s.base in areas & loaded):
            # (threads that exchange data through scratch memory after the loop: their barriers are
            # placed for a kernel of its own, the second one)
            raise NotCombined("the statements after the loop exchange data between threads through scratch memory")
    extra = [a for a in combine.args if a.name not in known]
    if any(isinstance(a, N.Scratch) for a in extra):
        raise NotCombined("the combine kernel reads a scratch area the partial kernel does not write")
    taken |= {a.name for a in extra}
    taken |= {v.name for s in N.walk(combine.body) for v in N.defines(s)}  # (fresh of both: renamed once)
    renames: dict[str, str] = {}
    for s in N.walk(combine.body):
        for v in N.defines(s):
            if v.name not in renames:
                renames[v.name] = N.fresh_name(v.name, taken)
    body = [_renamed(s, renames) for s in combine.body]
    counters = N.Scratch(N.fresh_name("arrivals", taken), "i32", E.Const(1), kept_zero=True)
    arrived = E.Var(N.fresh_name("arrived", taken), "i32")
    group = program_index(partial.program_ids[:-1])
    last = E.Bin("==", arrived, E.fold(E.Var(splits, "i32") - 1))
    line = partial.line
    tail: list[N.Stmt] = [
        N.Barrier(line=line),
        N.Atomic("add", counters.name, (group,), E.Const(1), result=arrived, line=line),
        N.If(last, [*body, N.Store(counters.name, (group,), E.Const(0), line=line)], line=line),
    ]
    return dataclasses.replace(
        partial,
        name=partial.name.removesuffix("_partial") + "_split",
        args=[*partial.args, *extra, counters],
        body=[*partial.body, *tail],
        doc=partial.doc.replace(" The partial folds of 1 / S", " Each program folds 1 / S", 1)
        + " The last of each group of split programs to finish combines their partial folds (schedule/lastcombine.py).",
        autotune=None,
    )


def _renamed(s: N.Stmt, names: dict[str, str]) -> N.Stmt:
    """``s`` with every variable of ``names`` renamed, where it is read and where it is defined."""

    def expr(e: E.Expr) -> E.Expr:
        if isinstance(e, E.Var):
            return dataclasses.replace(e, name=names[e.name]) if e.name in names else e
        return E.map_children(e, expr)

    return _defs(N.map_exprs(s, expr), names)


def _defs(s: N.Stmt, names: dict[str, str]) -> N.Stmt:
    """``s`` with the variables it defines (nested bodies included) renamed by ``names``; what it
    reads is renamed already."""

    def var(v: E.Var) -> E.Var:
        return dataclasses.replace(v, name=names[v.name]) if v.name in names else v

    if isinstance(s, (N.Let, N.Assign, N.Load)):
        return dataclasses.replace(s, var=var(s.var))
    if isinstance(s, N.TmaLoad):
        return dataclasses.replace(s, var=var(s.var), fallback=_defs(s.fallback, names))
    if isinstance(s, N.Dot):
        return dataclasses.replace(s, out=var(s.out))
    if isinstance(s, N.Atomic) and s.result is not None:
        return dataclasses.replace(s, result=var(s.result))
    if isinstance(s, N.For):
        body = [_defs(x, names) for x in s.body]
        return dataclasses.replace(s, var=var(s.var), body=body, carried=tuple(var(v) for v in s.carried))
    if isinstance(s, N.While):
        body = [_defs(x, names) for x in s.body]
        return dataclasses.replace(s, body=body, carried=tuple(var(v) for v in s.carried))
    if isinstance(s, N.If):
        return dataclasses.replace(
            s, then=[_defs(x, names) for x in s.then], orelse=[_defs(x, names) for x in s.orelse]
        )
    return s
