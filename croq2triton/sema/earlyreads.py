"""The data of an asynchronous copy read before the copy is waited for (LANGUAGE.md 7.8: an ``.async``
copy "returns immediately; the data future must be consumed by ``wait f``"): ``f = dma.copy.async a
=> shared; dma.copy f.data => b; wait f;`` reads ``f.data`` while the copy may still be running.  The
language does not call it an error (the program is well formed; it races), and croq2triton's copies
complete before the next statement, so the translation reads the copied data: ``check`` warns, as
the source would read stale data on the GPU it was written for.

The walk follows program order: after ``f = ..copy.async ..`` the name is pending until a ``wait``
names it, a ``trigger .. after f`` hands it to an event (the consumer waits for the event), or a
synchronous copy binds it again; a read of ``f.data`` / ``f.mdata`` or of ``f`` as a view while it is
pending warns, except in a copy ordered ``after f``.  A branch or loop may wait: after it, a name is
pending where some path leaves it pending, and a loop's body starts with what its previous turn left
pending.  Names that move between futures (``swap``, ``rotate``, ``select``, ``dma.any``) are not
followed."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .futures import _moved

_LOOPS = (A.Foreach, A.While)


def early_read_warnings(fn: A.CoFunction) -> list[Diagnostic]:
    walk = _Walk(_moved(list(fn.walk())))
    walk.block(fn.body, {}, report=True)
    return walk.out


class _Walk:
    def __init__(self, moved: set[str]) -> None:
        self.moved = moved
        self.out: list[Diagnostic] = []
        self.seen: set[int] = set()  # ids of the reads already reported

    def block(self, stmts: list[A.Stmt], pending: dict[str, A.DmaStmt], report: bool) -> dict[str, A.DmaStmt]:
        """``pending`` (name -> the copy it waits for) after ``stmts``."""
        for s in stmts:
            pending = self.stmt(s, pending, report)
        return pending

    def body(self, s: A.Stmt | None, pending: dict[str, A.DmaStmt], report: bool) -> dict[str, A.DmaStmt]:
        if s is None:
            return dict(pending)
        return self.block(s.stmts if isinstance(s, A.Block) else [s], dict(pending), report)

    def stmt(self, s: A.Stmt, pending: dict[str, A.DmaStmt], report: bool) -> dict[str, A.DmaStmt]:
        if report:
            self.reads(s, pending)
        bodies = [c for c in s.children() if isinstance(c, A.Stmt)]
        if bodies:
            if isinstance(s, _LOOPS):  # a turn starts with what the previous one left pending
                end = self.body(bodies[0], pending, report=False)
                start = {**pending, **end}
                end = self.body(bodies[0], start, report)
                return {**pending, **end}
            after = dict(pending) if isinstance(s, A.If) and s.other is None else {}
            for b in bodies:  # pending after it where pending at the end of some path
                after.update(self.body(b, pending, report))
            return after
        return self.effect(s, pending)

    def effect(self, s: A.Stmt, pending: dict[str, A.DmaStmt]) -> dict[str, A.DmaStmt]:
        out = dict(pending)
        if isinstance(s, A.Wait):
            for item in s.items:
                for x in item.walk():
                    if isinstance(x, A.Name):
                        out.pop(x.name, None)
        elif isinstance(s, A.Trigger):
            for item in s.after:
                for x in item.walk():
                    if isinstance(x, A.Name):
                        out.pop(x.name, None)
        elif isinstance(s, A.DmaStmt) and s.result:
            if s.is_async and s.event is None and s.result not in self.moved:
                out[s.result] = s
            else:
                out.pop(s.result, None)
        return out

    def reads(self, s: A.Stmt, pending: dict[str, A.DmaStmt]) -> None:
        """Warn where ``s`` itself (not the statements of its body) reads the data of a pending copy."""
        if not pending or isinstance(s, (A.Wait, A.Swap)):
            return
        exprs = [c for c in s.children() if not isinstance(c, A.Stmt)]
        if isinstance(s, A.Trigger):
            exprs = list(s.items)
        shapes: set[int] = set()  # names read only for their shape: 'f.span'
        members: dict[int, A.Member] = {}  # name -> its 'f.data' / 'f.mdata'
        for e in exprs:
            for x in e.walk():
                if isinstance(x, A.Member):
                    if x.member == "span":  # 'f.span', 'f.data.span'
                        shapes.add(id(x.base))
                        if isinstance(x.base, A.Member):
                            shapes.add(id(x.base.base))
                    elif x.member in ("data", "mdata"):
                        members[id(x.base)] = x
                if not (isinstance(x, A.Name) and x.name in pending) or id(x) in shapes or id(x) in self.seen:
                    continue
                if isinstance(s, A.DmaStmt) and s.after == x.name:
                    continue  # ordered after the copy
                self.seen.add(id(x))
                copy = pending[x.name]
                line = copy.span.line if copy.span else "?"
                read = members.get(id(x))
                what = f"{x.name}.{read.member}" if read is not None else x.name
                self.out.append(
                    Diagnostic(
                        "warning",
                        f"'{what}' is read before 'wait {x.name}': the asynchronous copy of line {line} may not"
                        " have landed yet (croq2triton's copy completes first, so the translation reads the"
                        " copied data; on the GPU the source races)",
                        (read.span if read is not None else None) or x.span or s.span,
                        f"'wait {x.name};' before reading '{x.name}.data'",
                    )
                )
