"""``break`` and ``continue`` in the loops of a kernel (LANGUAGE.md 7.4), as flags: Triton compiles
no ``break`` (TRITON.md), so a loop that leaves early runs every iteration with its body under
the flags instead, which the lifting makes branches or masks like any condition.

    foreach k in [n] { A; if (c) break; B; }

is lifted as

    mutable bool go = true;
    foreach k in [n] { if (go) { A; if (c) go = false; if (go) { B; } } }

and ``continue`` likewise with a flag set at the top of each iteration; a ``while`` loop also tests
its break flag with its condition.  The statements after one
that may leave are under the flags; a ``break`` of a thread (under a condition on the thread
index) stops that thread's iterations only, as it does in the source.  An exit inside any
statement but a branch or a block is left as it is.

A ``foreach`` over several names (``foreach {i, j} in [A, B]``, an index tuple ``foreach e in
x.span``, names of a ``with``) iterates as nested loops, but it is one statement: ``break`` leaves
the innermost ``foreach`` statement (LANGUAGE.md 7.4), that is every one of its loops, and
``continue`` goes on with its next iteration (the next index in its row-major order).  The flags
say exactly that whatever the number of loops: the body runs once per index, the break flag,
once cleared, guards every later one, and the continue flag is set again at the top of each.
"""

from __future__ import annotations

import copy

from ..frontend import ast as A


class _Uncovered(Exception):
    pass


def loop_exits(top: A.Parallel) -> A.Parallel | None:
    """``top`` with the ``break`` and ``continue`` of its loops as flags; None where it has none
    (or one this does not rewrite)."""
    if not any(isinstance(n, (A.Break, A.Continue)) for n in top.walk()):
        return None
    new = copy.deepcopy(top)
    rewriter = _Rewriter(new)
    try:
        new.body = rewriter.stmt(new.body)
    except _Uncovered:
        return None
    return new if rewriter.done else None


class _Rewriter:
    def __init__(self, top: A.Parallel) -> None:
        self.taken = {n.name for n in top.walk() if isinstance(n, A.Name)} | _declared(top)
        self.done = False
        self.uid = 0

    def fresh(self, base: str) -> str:
        while True:
            self.uid += 1
            name = f"{base}{self.uid}_"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def stmt(self, s: A.Stmt) -> A.Stmt:
        """``s`` with its loops rewritten (an exit outside every loop is left to the lifting)."""
        if isinstance(s, A.Foreach):
            body = self.stmt(s.body)
            loop = A.Foreach(s.items, body, s.suffixes, span=s.span)
            return self.loop(loop) if exits_here(body) else loop
        if isinstance(s, A.While):
            body = self.stmt(s.body)
            spin = A.While(s.cond, body, span=s.span)
            return self.loop(spin) if exits_here(body) else spin
        for name in ("body", "then", "other"):
            child = getattr(s, name, None)
            if isinstance(child, A.Stmt):
                setattr(s, name, self.stmt(child))
        if isinstance(s, A.Block):
            s.stmts = [self.stmt(x) for x in s.stmts]
        return s

    def loop(self, s: A.Foreach | A.While) -> A.Stmt:
        sp = s.span
        brk = self.fresh("go") if exits_here(s.body, A.Break) else None
        cont = self.fresh("next") if exits_here(s.body, A.Continue) else None
        body = self.block(_stmts(s.body), brk, cont)
        inner: list[A.Stmt] = [flag_decl(cont, sp), *body] if cont else body
        guarded: A.Stmt = A.Block(inner, span=sp)
        self.done = True
        loop: A.Stmt
        if isinstance(s, A.While):  # the loop ends at the next test of its condition
            cond = A.Binary("&&", A.Name(brk, span=sp), s.cond, span=sp) if brk else s.cond  # type: ignore[arg-type]
            loop = A.While(cond, guarded, span=sp)
        else:
            if brk:
                guarded = A.If(A.Name(brk, span=sp), guarded, span=sp)
            loop = A.Foreach(s.items, A.Block([guarded], span=sp), s.suffixes, span=sp)
        return A.Block([flag_decl(brk, sp), loop], span=sp) if brk else loop

    def block(self, stmts: list[A.Stmt], brk: str | None, cont: str | None) -> list[A.Stmt]:
        out: list[A.Stmt] = []
        for i, s in enumerate(stmts):
            if isinstance(s, (A.Break, A.Continue)):
                flag = brk if isinstance(s, A.Break) else cont
                assert flag is not None
                out.append(flag_clear(flag, s.span))
                return out  # what follows it is never run
            if not exits_here(s):
                out.append(s)
                continue
            out.append(self.leaving(s, brk, cont))
            rest = stmts[i + 1 :]
            if rest:
                out.append(
                    A.If(_live(brk, cont, s.span), A.Block(self.block(rest, brk, cont), span=s.span), span=s.span)
                )
            return out
        return out

    def leaving(self, s: A.Stmt, brk: str | None, cont: str | None) -> A.Stmt:
        """A statement an exit of the loop is inside."""
        if isinstance(s, A.Block):
            return A.Block(self.block(s.stmts, brk, cont), span=s.span)
        if isinstance(s, A.If):
            then = A.Block(self.block(_stmts(s.then), brk, cont), span=s.then.span)
            other = A.Block(self.block(_stmts(s.other), brk, cont), span=s.other.span) if s.other else None
            return A.If(s.cond, then, other, span=s.span)
        raise _Uncovered  # an exit inside a with, an inthreads, ...


def exits_here(s: A.Stmt, kind: type | tuple[type, ...] = (A.Break, A.Continue)) -> bool:
    """Does ``s`` hold an exit of the loop around it (not one of a loop inside it)?"""
    if isinstance(s, kind):
        return True
    if isinstance(s, (A.Foreach, A.While)):
        return False
    return any(isinstance(c, A.Stmt) and exits_here(c, kind) for c in s.children())


def _stmts(s: A.Stmt | None) -> list[A.Stmt]:
    if s is None:
        return []
    return list(s.stmts) if isinstance(s, A.Block) else [s]


def flag_decl(name: str, sp: object) -> A.Stmt:
    """``mutable bool name = true;`` (a flag a rewritten exit clears)."""
    init = A.Declarator(name, A.BoolLit(True, span=sp), span=sp)  # type: ignore[arg-type]
    return A.ScalarDecl("bool", [init], mutable=True, span=sp)  # type: ignore[arg-type]


def flag_clear(name: str, sp: object) -> A.Stmt:
    """``name = false;``"""
    assign = A.Assign(A.Name(name, span=sp), "=", A.BoolLit(False, span=sp), span=sp)  # type: ignore[arg-type]
    return A.AssignStmt([assign], span=sp)  # type: ignore[arg-type]


def _live(brk: str | None, cont: str | None, sp: object) -> A.Expr:
    flags = [A.Name(f, span=sp) for f in (brk, cont) if f]  # type: ignore[arg-type]
    out: A.Expr = flags[0]
    for f in flags[1:]:
        out = A.Binary("&&", out, f, span=sp)  # type: ignore[arg-type]
    return out


def _declared(top: A.Parallel) -> set[str]:
    out: set[str] = set()
    for n in top.walk():
        for attr in ("name", "result"):
            v = getattr(n, attr, None)
            if isinstance(v, str):
                out.add(v)
        for v in getattr(n, "vars", None) or []:
            if isinstance(v, str):
                out.add(v)
    return out
