"""``yield`` under a condition every thread of a block agrees on, as a branch around the rest of the
kernel (LANGUAGE.md 7.4: ``yield;`` leaves the device program for the thread that runs it).

    parallel bm by n : block { A; if (bm * 32 >= rows) yield; B; parallel w by 2 : group { C; } D; }

is lifted as

    parallel bm by n : block { A; if (!(bm * 32 >= rows)) { B; parallel w by 2 : group { C; } D; } }

A ``yield`` inside an inner ``parallel`` leaves the program too, not only that ``parallel``: the
statements after the inner ``parallel`` are under the negated condition as well.  The condition
must be one the whole block agrees on (no index of an inner ``parallel``, no name an inner
``parallel`` binds: those pick some threads, which the lifting masks off lane by lane instead,
lift/kernel.py ``yield_stmt``), and the ``yield`` the whole body of an ``if`` without ``else`` that
stands in a statement list of the block or of a ``parallel`` inside it (a ``yield`` in a loop or
another statement is left to the lifting).  Every kind of statement after it (MMAs, copies, stores
of whole tiles) is then under an ordinary block-level branch.
"""

from __future__ import annotations

import copy
import dataclasses

from ..frontend import ast as A
from .exits import flag_clear, flag_decl


def early_exits(top: A.Parallel) -> A.Parallel:
    """``top`` with its block-uniform ``if (c) yield;`` as branches around what follows (a copy
    where there is one)."""
    if not any(isinstance(n, A.Yield) for n in top.walk()):
        return top
    top = inner_yields(top)
    top = loop_yields(top)
    per_unit = _per_unit_names(top)
    if not any(_guard(s, per_unit) is not None for s in top.walk() if isinstance(s, A.Stmt)):
        return top
    top = copy.deepcopy(top)
    body, _ = _stmt_list(_stmts(top.body), per_unit)
    top.body = A.Block(body, span=top.body.span)
    return top


def _per_unit_names(top: A.Parallel) -> set[str]:
    """Names whose value may differ between the threads of a block: the indices of the inner
    ``parallel`` levels and every name bound inside an inner ``parallel``."""
    out: set[str] = set()
    for n in top.body.walk():
        if isinstance(n, A.Parallel):
            for level in n.levels:
                out.update(level.names)
            for m in n.body.walk():
                if isinstance(m, A.Declarator):
                    out.add(m.name)
                elif isinstance(m, A.Assign) and isinstance(m.target, A.Name):
                    out.add(m.target.name)
                elif result := getattr(m, "result", None):
                    out.add(result)
    return out


def _guard(s: A.Stmt, per_unit: set[str]) -> A.Expr | None:
    """``c`` of ``if (c) yield;`` (``true`` of a bare ``yield;``) where the block agrees on it."""
    if isinstance(s, A.Yield):
        return A.BoolLit(True, span=s.span)
    if not isinstance(s, A.If) or s.other is not None:
        return None
    then = _stmts(s.then)
    if len(then) != 1 or not isinstance(then[0], A.Yield):
        return None
    if any(isinstance(n, A.Name) and n.name in per_unit for n in s.cond.walk()):
        return None
    return s.cond


def _stmt_list(stmts: list[A.Stmt], per_unit: set[str]) -> tuple[list[A.Stmt], list[A.Expr]]:
    """``stmts`` with the statements after a uniform ``yield`` under its negated condition, and the
    conditions of the yields that leave the program from inside it (which the statements after the
    list are under as well)."""
    out: list[A.Stmt] = []
    for i, s in enumerate(stmts):
        leaving: list[A.Expr] = []
        c = _guard(s, per_unit)
        if c is not None:
            leaving = [c]
        elif isinstance(s, (A.Parallel, A.Block)) and not (isinstance(s, A.Parallel) and s.is_async):
            inner, leaving = _stmt_list(_stmts(s.body if isinstance(s, A.Parallel) else s), per_unit)
            if isinstance(s, A.Parallel):
                s.body = A.Block(inner, span=s.body.span)
            else:
                s.stmts = inner
            out.append(s)
        else:
            out.append(s)
        if not leaving:
            continue
        rest, more = _stmt_list(stmts[i + 1 :], per_unit)
        if rest and not any(isinstance(x, A.BoolLit) and x.value for x in leaving):
            span = s.span
            stay = A.Unary("!", A.Paren(_any(leaving), span=span), span=span)
            out.append(A.If(stay, A.Block(rest, span=span), span=span))
        return out, leaving + more
    return out, []


def _any(conds: list[A.Expr]) -> A.Expr:
    out = A.Paren(conds[0], span=conds[0].span)
    for c in conds[1:]:
        out = A.Binary("||", out, A.Paren(c, span=c.span), span=c.span)  # type: ignore[assignment]
    return out


def _stmts(s: A.Stmt) -> list[A.Stmt]:
    return list(s.stmts) if isinstance(s, A.Block) else [s]


# ----------------------------------------------------------------------------- a yield inside a loop


class _Uncovered(Exception):
    pass


def loop_yields(top: A.Parallel) -> A.Parallel:
    """``top`` with each ``yield`` inside a loop as a flag (LANGUAGE.md 7.4: ``yield`` leaves the
    program for the thread that runs it, so its loops, the rest of their bodies and every statement
    after them; lift/kernel.py ``yield_stmt`` takes a ``yield`` outside loops only):

        foreach k in [n] { A; if (c) yield; B; }  C;

    is rewritten as

        mutable bool live = true;
        foreach k in [n] { if (live) { A; if (c) live = false; if (live) { B; } } }
        if (!live) yield;  C;

    The flag is declared before the outermost loop that holds the ``yield`` (in the statement list
    of the same ``parallel``), and every loop between guards its body with it (a ``while`` also its
    condition); the ``yield`` after the loop is then one outside loops, which ``early_exits`` makes
    a branch where the block agrees on the flag and the lifting masks lane by lane elsewhere.  A
    loop whose ``yield`` is inside another statement than a block, a branch, a ``with`` or a loop
    (an inner ``parallel``, an ``inthreads``) is left as it is (and refused at the ``yield``)."""
    if not any(isinstance(n, (A.Foreach, A.While)) and _yields(n) for n in top.walk()):
        return top
    new = copy.deepcopy(top)
    taken = {n.name for n in new.walk() if isinstance(n, A.Name)} | {
        n.name for n in new.walk() if isinstance(n, A.Declarator)
    }
    _YieldRewriter(taken).walk_stmt(new)
    return new


def _yields(s: A.Stmt) -> bool:
    """Does ``s`` hold a ``yield`` of its own program part (not one inside an inner ``parallel``)?"""
    if isinstance(s, A.Yield):
        return True
    if isinstance(s, A.Parallel):
        return False
    return any(isinstance(c, A.Stmt) and _yields(c) for c in s.children())


class _YieldRewriter:
    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.uid = 0

    def fresh(self) -> str:
        while True:
            self.uid += 1
            name = f"live{self.uid}_"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def walk_stmt(self, s: A.Stmt) -> None:
        """Rewrite the outermost loops that yield, in every statement list under ``s``."""
        if isinstance(s, A.Block):
            s.stmts = self.stmt_list(s.stmts)
            return
        for name in ("body", "then", "other"):
            child = getattr(s, name, None)
            if isinstance(child, A.Block):
                self.walk_stmt(child)
            elif isinstance(child, A.Stmt) and _yields(child):
                block = A.Block(self.stmt_list([child]), span=child.span)
                setattr(s, name, block)

    def stmt_list(self, stmts: list[A.Stmt]) -> list[A.Stmt]:
        out: list[A.Stmt] = []
        for s in stmts:
            if isinstance(s, (A.Foreach, A.While)) and _yields(s):
                flag = self.fresh()
                try:
                    loop = self.loop(copy.deepcopy(s), flag)
                except _Uncovered:
                    out.append(s)
                    continue
                sp = s.span
                out += [
                    flag_decl(flag, sp),
                    loop,
                    A.If(A.Unary("!", A.Name(flag, span=sp), span=sp), A.Yield(span=sp), span=sp),
                ]
                continue
            self.walk_stmt(s)
            out.append(s)
        return out

    def test(self, flag: str, sp: object) -> A.Expr:
        """The flag holds: the thread has not left."""
        return A.Name(flag, span=sp)  # type: ignore[arg-type]

    def clear(self, flag: str, sp: object) -> A.Stmt:
        return flag_clear(flag, sp)

    def loop(self, s: A.Foreach | A.While, flag: str) -> A.Stmt:
        sp = s.span
        body = A.Block(self.guarded(_stmts(s.body), flag), span=sp)
        if isinstance(s, A.While):
            return A.While(A.Binary("&&", self.test(flag, sp), A.Paren(s.cond, span=sp), span=sp), body, span=sp)
        guarded = A.If(self.test(flag, sp), body, span=sp)
        return A.Foreach(s.items, A.Block([guarded], span=sp), s.suffixes, span=sp)

    def guarded(self, stmts: list[A.Stmt], flag: str) -> list[A.Stmt]:
        """``stmts`` with a ``yield`` as the flag cleared and what follows a statement that may
        clear it under the flag."""
        out: list[A.Stmt] = []
        for i, s in enumerate(stmts):
            if isinstance(s, A.Yield):
                out.append(self.clear(flag, s.span))
                return out  # what follows it is never run
            if not _yields(s):
                out.append(s)
                continue
            out.append(self.leaving(s, flag))
            rest = stmts[i + 1 :]
            if rest:
                sp = s.span
                out.append(A.If(self.test(flag, sp), A.Block(self.guarded(rest, flag), span=sp), span=sp))
            return out
        return out

    def leaving(self, s: A.Stmt, flag: str) -> A.Stmt:
        """A statement a ``yield`` is inside."""
        if isinstance(s, A.Block):
            return A.Block(self.guarded(s.stmts, flag), span=s.span)
        if isinstance(s, A.If):
            then = A.Block(self.guarded(_stmts(s.then), flag), span=s.then.span)
            other = A.Block(self.guarded(_stmts(s.other), flag), span=s.other.span) if s.other else None
            return A.If(s.cond, then, other, span=s.span)
        if isinstance(s, A.With):
            return A.With(
                s.withins, A.Block(self.guarded(_stmts(s.body), flag), span=s.body.span), s.where, span=s.span
            )
        if isinstance(s, (A.Foreach, A.While)):
            return self.loop(s, flag)
        raise _Uncovered  # a yield inside an inner parallel, an inthreads, ...


# ----------------------------------------------------------------------------- a yield of the threads of a loop


class _ThreadFlag(_YieldRewriter):
    """The flag of the threads of an inner ``parallel`` that may leave: an element of a ``local``
    array declared at block level, one copy per thread of the level that writes it."""

    def test(self, flag: str, sp: object) -> A.Expr:
        at = A.At(A.Name(flag, span=sp), [A.IntLit(0, "0", "s32", span=sp)], span=sp)  # type: ignore[arg-type]
        return A.Binary("!=", at, A.IntLit(0, "0", "s32", span=sp), span=sp)  # type: ignore[arg-type]

    def clear(self, flag: str, sp: object) -> A.Stmt:
        at = A.At(A.Name(flag, span=sp), [A.IntLit(0, "0", "s32", span=sp)], span=sp)  # type: ignore[arg-type]
        zero = A.IntLit(0, "0", "s32", span=sp)  # type: ignore[arg-type]
        return A.AssignStmt([A.Assign(at, "=", zero, span=sp)], span=sp)  # type: ignore[arg-type]

    def guard(self, p: A.Parallel, flag: str) -> A.Parallel:
        """``p`` run only by its threads that have not left, a ``yield`` in it clearing the flag."""
        sp = p.span
        body = A.Block(self.guarded(_stmts(p.body), flag), span=sp)
        return dataclasses.replace(p, body=A.Block([A.If(self.test(flag, sp), body, span=sp)], span=sp))


def inner_yields(top: A.Parallel) -> A.Parallel:
    """``top`` with a ``yield`` in an inner thread-level ``parallel`` inside a loop of the block
    (LANGUAGE.md 7.4: the thread that runs it leaves the program, so it runs no later iteration of
    that ``parallel`` and nothing after it) as a flag of each of those threads:

        foreach k in [n] { parallel t by T : thread { A; if (c) yield; B; } }  parallel t by T : thread { C; }

    is rewritten as

        local s32 [1] live {1};
        foreach k in [n] { parallel t by T : thread { if (live.at(0) != 0) { A; if (c) live.at(0) = 0;
            if (live.at(0) != 0) { B; } } } }
        parallel t by T : thread { if (live.at(0) != 0) { C; } }

    (``live``: one copy per thread, lift/placement.py).  It applies where the loop stands in the
    block's own statements, every ``parallel`` in the loop and after it in the block is a
    thread-level one of the same levels, and the rest of them is control flow, scalars or barriers
    (a copy or an MMA of the whole block, which the threads that left no longer take part in, keeps
    the form refused at the ``yield``)."""
    stmts = _stmts(top.body)
    for i, s in enumerate(stmts):
        if not isinstance(s, (A.Foreach, A.While)) or _yields(s):
            continue
        inner = [p for p in _parallels(s) if any(isinstance(n, A.Yield) for n in p.body.walk())]
        if not inner:
            continue
        levels = inner[0].levels
        rest = stmts[i + 1 :]
        if not all(_thread_part(x, levels) for x in [s, *rest]):
            continue
        new = copy.deepcopy(top)
        body = _stmts(new.body)
        taken = {n.name for n in new.walk() if isinstance(n, A.Name)} | {
            n.name for n in new.walk() if isinstance(n, A.Declarator)
        }
        rewriter = _ThreadFlag(taken)
        flag = rewriter.fresh()
        sp = s.span
        one = A.IntLit(1, "1", "s32", span=sp)
        decl = A.SpannedDecl(
            "s32", [A.IntLit(1, "1", "s32", span=sp)], [A.Declarator(flag, fill=one, span=sp)], "local", span=sp
        )
        try:
            tail = [_guard_parallels(x, rewriter, flag) for x in body[i:]]
        except _Uncovered:  # (a yield inside another statement of the parallel: an inthreads, ...)
            continue
        new.body = A.Block([*body[:i], decl, *tail], span=new.body.span)
        return inner_yields(new)  # (another such loop of the block)
    return top


def _parallels(s: A.Stmt) -> list[A.Parallel]:
    """The outermost ``parallel`` statements inside ``s``."""
    if isinstance(s, A.Parallel):
        return [s]
    return [p for c in s.children() if isinstance(c, A.Stmt) for p in _parallels(c)]


def _thread_part(s: A.Stmt, levels: list[A.PBy]) -> bool:
    """Is ``s`` made of thread-level ``parallel`` statements of ``levels`` (none ``.async``, no
    ``yield`` of a deeper level), control flow, scalars and barriers?"""
    if isinstance(s, A.Parallel):
        return (
            not s.is_async
            and s.levels == levels
            and all(lvl.level == "thread" for lvl in s.levels)
            and not any(isinstance(n, A.Yield) for p in _parallels_in(s.body) for n in p.walk())
        )
    if isinstance(s, (A.Block, A.If, A.Foreach, A.While)):
        if isinstance(s, A.If) and any(isinstance(n, A.Yield) for n in s.walk() if not _in_parallel(s, n)):
            return False
        return all(_thread_part(c, levels) for c in s.children() if isinstance(c, A.Stmt))
    return isinstance(s, (A.Sync, A.ScalarDecl, A.AssignStmt, A.Empty))


def _parallels_in(s: A.Stmt) -> list[A.Parallel]:
    return [p for c in s.children() if isinstance(c, A.Stmt) for p in _parallels(c)]


def _in_parallel(root: A.Stmt, node: A.Node) -> bool:
    """Is ``node`` inside a ``parallel`` of ``root``?"""
    return any(node is n for p in _parallels(root) for n in p.walk())


def _guard_parallels(s: A.Stmt, rewriter: _ThreadFlag, flag: str) -> A.Stmt:
    """``s`` with every ``parallel`` in it run only by the threads that have not left."""
    if isinstance(s, A.Parallel):
        return rewriter.guard(s, flag)
    if isinstance(s, A.Block):
        return A.Block([_guard_parallels(x, rewriter, flag) for x in s.stmts], span=s.span)
    for name in ("body", "then", "other"):
        child = getattr(s, name, None)
        if isinstance(child, A.Stmt):
            setattr(s, name, _guard_parallels(child, rewriter, flag))
    return s
