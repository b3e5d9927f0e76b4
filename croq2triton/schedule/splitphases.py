"""Fold loops one after the other, each split across programs: one kernel a loop, in order, what
each loop's statements after it compute carried to the next kernel through a scratch area.

A thread per column computing its mean and then the squared deviations from it (a batch norm's
statistics written the textbook way, two passes)::

    foreach i in [M] { s += x.at(i, c); }
    f32 mu = s / M;
    foreach i in [M] { f32 d = x.at(i, c) - mu; q += d * d; }
    mean.at(c) = mu; var.at(c) = q / M;

has two loops over the rows, which schedule/splitloop.py does not split (one loop only): at 4096
columns it runs 32 programs of 128 columns (on the H100 0.41-0.52 of the roofline, 0.70-0.79x torch,
perf/RESULTS.md 2026-12-07).  The second loop needs the whole of the first one's fold (``mu``), which
no program of a split knows before every program of the first loop is done: a launch boundary.  So
the kernel becomes one kernel a loop (a **phase**):

* phase ``i`` runs what comes before the first loop (lets and loads, computed again in each
  phase), loads what the phases before it carried, starts the accumulators of its loop (their lets,
  constants), runs its loop, then the statements up to the next loop, and stores what the later
  phases read into its carry area, one slot a lane of each program of the grid (the last phase runs
  the kernel's statements after its loop instead);
* each phase is then split as one loop is (schedule/splitloop.py), its partial folds combined by the
  last of its programs (schedule/lastcombine.py): that program also runs the statements after the
  loop and so writes the carry, every element of it (the carried values are lanes' values, one a
  lane), before the next launch reads it.

What it proves on the IR (else :class:`NotPhased`, and the kernel runs as it is):

* the kernel's top level is lets and loads, then loops each followed by lets and assignments only
  (no store, atomic, barrier or branch before the last loop's end), and whatever comes after the last
  loop; every loop is one schedule/splitloop.py splits (its folds the only dependence between its
  iterations, no store in it) and its bounds are the first loop's;
* each loop's accumulators start at a constant (a let of their own, before the loop that folds them,
  assigned nowhere else before it);
* the values carried are the lanes' tiles (an extent fixed at launch counted by its constexpr).

The results are those of the kernel as written, but for the order of a float sum's terms (within the
rounding of the type, as every split fold), and the carried values are the values the kernel as
written has at that point: stored and loaded in their own type.
"""

from __future__ import annotations

import dataclasses

from ..tir import expr as E
from ..tir import nodes as N
from .foldloops import NotFolded, loop_folds
from .splitloop import _count, _slot, program_index


class NotPhased(Exception):
    """The kernel is not loops one after the other that split (module docstring)."""


def phases_of(kernel: N.Kernel) -> list[N.Kernel]:
    """The phase kernels of ``kernel`` (module docstring), named ``{kernel}_phase{n}``; a phase's carry
    areas from the phase before refer to the launcher's variables of that phase run as one kernel
    whose last program combines (``_{kernel}_phase{n}_split_{area}``, schedule/lastcombine.py)."""
    at = [i for i, s in enumerate(kernel.body) if isinstance(s, N.For)]
    if len(at) < 2:
        raise NotPhased("a kernel with fewer than two top-level loops")
    pre = kernel.body[: at[0]]
    if any(not isinstance(s, (N.Let, N.Load)) for s in pre):
        raise NotPhased("a statement before the first loop other than a let or a load")
    first = kernel.body[at[0]]
    assert isinstance(first, N.For)
    ends = [*at[1:], len(kernel.body)]
    for n, (i, end) in enumerate(zip(at, ends, strict=True)):
        loop = kernel.body[i]
        assert isinstance(loop, N.For)
        if n + 1 < len(at) and any(not isinstance(s, (N.Let, N.Assign)) for s in kernel.body[i + 1 : end]):
            raise NotPhased("a statement between two loops other than a let or an assignment")
        if not (E.same(loop.start, first.start) and E.same(loop.stop, first.stop) and E.same(loop.step, first.step)):
            raise NotPhased("loops over different ranges")
        if any(isinstance(s, (N.Store, N.Atomic, N.TmaStore, N.Barrier)) for s in N.walk(loop.body)):
            raise NotPhased("a loop that stores")
        try:
            folds = loop_folds(loop, kernel.body[i + 1 :], tiled=True)
        except NotFolded as e:
            raise NotPhased(str(e)) from None
        if not folds or any(f.rescaled is not None or f.pick is not None for f in folds.values()):
            raise NotPhased("a loop without plain folds")
    taken = {a.name for a in kernel.args} | {p.name for p in kernel.program_ids}
    taken |= {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    program = program_index(kernel.program_ids)
    inits = _inits(kernel, at)
    out: list[N.Kernel] = []
    carried_in: list[tuple[E.Var, N.Scratch]] = []
    defined: dict[str, E.Var] = {}  # the values defined or assigned from the first loop on
    for n, (i, end) in enumerate(zip(at, ends, strict=True)):
        loop = kernel.body[i]
        assert isinstance(loop, N.For)
        name = f"{kernel.name}_phase{n}"
        slot = lambda v: (_slot(program, E.Const(1), E.Const(0), v.shape),)  # noqa: E731
        body: list[N.Stmt] = list(pre)
        body += [N.Load(var, area.name, slot(var), line=loop.line) for var, area in carried_in]
        body += inits[n]
        body += kernel.body[i:end]
        for s in kernel.body[i:end]:
            for x in N.walk([s]):
                if isinstance(x, (N.Let, N.Assign)):
                    defined[x.var.name] = x.var
        args = [*kernel.args]
        if out:  # (the areas the phase before wrote, as the launcher's variables of its launch)
            args += [dataclasses.replace(a, area=f"_{out[-1].name}_split_{a.name}") for _, a in carried_in]
        if n + 1 < len(at):
            later = kernel.body[end:]
            read = {v.name for s in N.walk(later) for e in N.exprs_of(s) for v in E.free_vars(e)}
            read |= {v.name for s in N.walk(later) if isinstance(s, (N.For, N.While)) for v in s.carried}
            restarted = {s.var.name for s in inits[n + 1] if isinstance(s, N.Let)}
            carried_next: list[tuple[E.Var, N.Scratch]] = []
            for x in sorted(read):
                if x not in defined or x in restarted:
                    continue
                var = defined[x]
                area = N.Scratch(N.fresh_name(f"{x}_carry", taken), var.type, _count(var.shape), written=True)
                body.append(N.Store(area.name, slot(var), var, line=loop.line))
                carried_next.append((var, area))
            args += [a for _, a in carried_next]
            carried_in = carried_next
        note = f" Phase {n + 1} of {len(at)}: the loop at line {loop.line} (schedule/splitphases.py)."
        out.append(
            dataclasses.replace(kernel, name=name, args=args, body=N.without_dead_lets(body), doc=kernel.doc + note)
        )
    return out


def _inits(kernel: N.Kernel, at: list[int]) -> list[list[N.Stmt]]:
    """The lets starting each loop's accumulators where they stand after the first loop (constants,
    not assigned between them and the loop): each phase runs its own again, and they are not carried
    (those before the first loop run in every phase with the other lets there)."""
    out: list[list[N.Stmt]] = []
    for i in at:
        loop = kernel.body[i]
        assert isinstance(loop, N.For)
        accs = sorted({s.var.name for s in N.walk(loop.body) if isinstance(s, N.Assign)})
        lets: list[N.Stmt] = []
        for name in accs:
            found = [(j, s) for j, s in enumerate(kernel.body[:i]) if isinstance(s, N.Let) and s.var.name == name]
            if len(found) != 1 or E.free_vars(found[0][1].value):
                raise NotPhased("an accumulator that does not start at a constant")
            start = found[0][0]
            if any(isinstance(s, N.Assign) and s.var.name == name for s in N.walk(kernel.body[start + 1 : i])):
                raise NotPhased("an accumulator assigned before its loop")
            if start > at[0]:
                lets.append(found[0][1])
        out.append(lets)
    return out
