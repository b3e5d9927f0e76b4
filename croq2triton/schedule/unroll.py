"""Loops of a few steps known when translating, whose loads move with the loop's variable, unrolled
(``tl.static_range``).

A filter's taps (``foreach k in [5] acc += w.at(c, k) * x.at(c, n + k - 2)``), a stencil's
neighbours, the few chunks of a short row: a loop of ``T`` steps, ``T`` a constant, that reads a
shifted window each step.  As a run-time loop (``for k in range(0, 5)``, or ``tl.range`` where its
loads are pipelined, schedule/loadstages.py) each step's window is one load after the last: the
offset ``k`` is a run-time value, so Triton cannot prove the window's alignment and reads it element
by element, and the ``T`` loads are issued one step at a time (pipelined, through shared memory by
``cp.async`` of 4 bytes an element).  Unrolled, each step's offset is a constant: the ``T`` windows
are issued together (one of them aligned and vectorised, the others as far as their offsets allow),
the ``T - 1`` past the first hit the lines the first brought into L1, and there is no loop and no
shared-memory pipeline.  It changes how the loop runs, never what it computes: Python runs the body
of a ``tl.static_range`` once per step, in order, with the variable a constant of each step's value,
and the loop's carried variables pass from step to step as they did.

Which loops (under ``--schedule auto``, after the other passes, before schedule/loadstages.py
pipelines what is left): innermost (no loop nested in it), bounds integer constants and a step of 1
(a loop over a tile's blocks steps by the block: its offsets are multiples of it, which Triton sees),
at most :data:`MOST_STEPS` steps, at most :data:`MOST_STATEMENTS` statements (its code is copied once
a step), no pipeline the source states, and at least one load whose contiguous index (its last)
depends on the loop's variable, through the body's lets and assignments: a loop whose windows do not
shift along the contiguous axis keeps its alignment as a loop (a loop over rows ``x.at(k, p)``).
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N

MOST_STEPS = 8
MOST_STATEMENTS = 24


def unroll_short_loops(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with each loop the module docstring names unrolled (``kernel`` itself where there is none)."""
    unrolled: list[N.For] = []

    def unroll(loop: N.For) -> N.For:
        if not _short(loop):
            return loop
        unrolled.append(loop)
        return dataclasses.replace(loop, unroll=True, pipeline=None)

    body = N.map_loops(kernel.body, unroll)
    return dataclasses.replace(kernel, body=body) if unrolled else kernel


def steps(loop: N.For) -> int | None:
    """The number of steps of ``loop`` where its bounds and step are integer constants, else None."""
    start, stop, step = (E.fold(x) for x in (loop.start, loop.stop, loop.step))
    if not all(isinstance(x, E.Const) and isinstance(x.value, int) for x in (start, stop, step)):
        return None
    a, b, c = (int(x.value) for x in (start, stop, step))  # type: ignore[union-attr]
    if c <= 0:
        return None
    return max(0, -(-(b - a) // c))


def _short(loop: N.For) -> bool:
    """Whether ``loop`` is unrolled (module docstring)."""
    if loop.unroll or loop.pipeline is not None:
        return False  # (a pipeline the source states is kept)
    n = steps(loop)
    step = E.fold(loop.step)
    if n is None or not 1 < n <= MOST_STEPS or not (isinstance(step, E.Const) and step.value == 1):
        return False  # (a loop over blocks, steps of a tile: its offsets are multiples of the block)
    inner = N.walk(loop.body)
    if len(inner) > MOST_STATEMENTS or any(isinstance(s, (N.For, N.While)) for s in inner):
        return False
    moving = {loop.var.name}  # the loop's variable and what the body computes from it
    for s in inner:
        if isinstance(s, (N.Let, N.Assign)) and _reads(s.value, moving):
            moving.add(s.var.name)
    # a load whose contiguous index (its last) shifts with the step: a window at a run-time offset
    return any(isinstance(s, N.Load) and s.index and _reads(s.index[-1], moving) for s in inner)


def _reads(e: E.Expr, names: set[str]) -> bool:
    return any(v.name in names for v in E.free_vars(e))
