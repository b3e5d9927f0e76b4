"""Loops that are maps over elements (LANGUAGE.md 7.4): ``foreach i in [s.span] out.at(i) =
a.at(i) + b.at(i);`` runs its iterations one after another, but no iteration reads what another
writes, so running them all at once (as lanes of one tile, like ``apply``) computes the same.
The lifting then writes one tile statement instead of a loop of element accesses.

A ``foreach`` is such a map when, the loop's names being its counters (an index tuple counts as
its parts):

* every element access that writes (an assignment to ``x.at(...)``) names exactly the counters,
  in order, so two iterations never write one element;
* every read of something the body writes is at exactly the counters too;
* it assigns no name declared outside the body (nothing is carried from one iteration to the
  next) and its statements are assignments, declarations and ``if``s only (no loop, copy, call,
  wait, MMA or thread level inside), with no slices or steps on the loop.

The analysis reads the AST alone; the lifting and the buffer placement (lift/placement.py) use it
alike.
"""

from __future__ import annotations

from ..frontend import ast as A
from .terms import element_base, unparen

ALLOWED = (A.Block, A.AssignStmt, A.ScalarDecl, A.If, A.Empty)


def map_counters(s: A.Foreach) -> list[str] | None:
    """The names of ``s``'s counters in order where it is a map over elements (the parts of an
    index tuple are ``name#k`` as the lifting names them, and stand for the tuple), else None."""
    names: list[str] = []
    for it in s.items:
        if not isinstance(it, A.Within) or it.shape is None:
            return None
        if it.vars is not None:
            names.extend(v or "_" for v in it.vars)
        elif it.name is not None:
            names.append(it.name)
        else:
            return None
    if "_" in names or len(set(names)) != len(names):
        return None
    body = s.body
    if not all(isinstance(n, ALLOWED) or not isinstance(n, A.Stmt) for n in body.walk()):
        return None
    if any(isinstance(n, (A.Call, A.Select)) for n in body.walk()):
        return None
    declared = {d.name for n in body.walk() if isinstance(n, A.ScalarDecl) for d in n.items}
    written: set[str] = set()
    for n in body.walk():
        if isinstance(n, A.Assign):
            target = unparen(n.target)
            if isinstance(target, A.Name):
                if target.name not in declared:
                    return None  # carried from one iteration to the next
            elif isinstance(target, A.At):
                if not _at_counters(target, names):
                    return None
                base = element_base(target.base)
                if base is None:
                    return None
                written.add(base)
            else:
                return None
    for n in body.walk():
        if isinstance(n, A.At) and element_base(n.base) in written and not _at_counters(n, names):
            return None  # another iteration's element of something the loop writes
    return names


def _at_counters(at: A.At, names: list[str]) -> bool:
    """Does ``at`` name exactly the counters, in order (one index tuple, or each of them)?"""
    idx = [unparen(i) for i in at.indices]
    spelled = [i.name for i in idx if isinstance(i, A.Name)]
    if len(spelled) != len(idx):
        return False
    return spelled == names
