"""Cluster levels (LANGUAGE.md 7.3): ``parallel {c} by [2] : cluster { parallel ... : block }``
groups the grid's blocks into clusters without enlarging the grid.  Triton's programs have no
clusters, and a kernel that does not read the cluster index computes the same without them: the
kernel is its block-level parallel.  (A TMA ``.multicast`` of the source shares one load between
a cluster's blocks; each program loads its own tile then, the same data.)  A kernel that reads the
cluster index stays as written, for the lifting to refuse."""

from __future__ import annotations

import copy

from ..errors import Diagnostic
from ..frontend import ast as A
from ..sema.levels import chain_levels

MULTICAST = "'.multicast' is a cluster hint: each program loads its own tile"


def multicast_notes(top: A.Parallel) -> list[Diagnostic]:
    """A note at each ``.multicast`` copy of ``top``: the programs do not share the load."""
    copies = [n for n in top.walk() if isinstance(n, A.DmaStmt) and any(a.name == "multicast" for a in n.attrs)]
    return [Diagnostic("note", MULTICAST, n.span) for n in copies]


def without_clusters(top: A.Parallel) -> A.Parallel:
    """``top`` without its leading cluster levels, where nothing reads their indices."""
    levels = chain_levels(list(top.levels))
    if not levels or levels[0] != "cluster":
        return top
    kept = [b for b, lvl in zip(top.levels, levels, strict=True) if lvl != "cluster"]
    names = {n for b in top.levels if b.level == "cluster" for n in (b.vars or [b.name]) if n}
    if any(isinstance(n, A.Name) and n.name in names for n in top.body.walk()):
        return top
    if kept:
        out = copy.copy(top)
        out.levels = kept
        return out
    body = top.body
    while isinstance(body, A.Block) and len(body.stmts) == 1:
        body = body.stmts[0]
    if not isinstance(body, A.Parallel):
        return top
    out = copy.copy(body)  # the launch the cluster's parallel states: its stream, asynchrony, attributes
    out.is_async, out.stream, out.attrs = (
        top.is_async or body.is_async,
        top.stream or body.stream,
        top.attrs + body.attrs,
    )
    return out
