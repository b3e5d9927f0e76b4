"""The statements of a ``__device__`` helper's body, read into the one expression its call computes
(a mixin of frontend/device.py's reader).

A body of local declarations with initialisers, assignments and compound assignments to locals,
``++`` / ``--`` statements, ``if`` / ``else`` (with early ``return``s), ``for`` / ``while`` / ``do``
loops whose trip count is known at translation (at most :data:`MAX_TRIPS` iterations, unrolled) and a
final ``return`` is one expression by substitution: each local has, at each point of the body, a value
over the parameters; reading it reads that value, an ``if`` merges the values of its two branches with
``?:``, and a ``return`` under a condition makes the rest of the body the other side of a ``?:``.
A loop is read again for each iteration, its counter a constant.  ``break`` / ``continue`` set flags
of their loop (locals of it, :class:`Jumps`): a statement after one in the loop's body runs where
neither is set (the locals keep their values where one is: merged like an ``if``), the next
iteration where no ``break`` is.  A ``for`` / ``while`` / ``do`` loop whose condition is not known at
translation (a bound given at run time), or that runs longer than that, is an A.DeviceLoop from
there: its body read once over names of the locals it changes, lifted where the call is expanded
(lift/helpers.py); the conditions it is reached under are part of its condition, its ``break`` flag
and (where its body returns) a flag and the value returned are locals of it, and loops inside it are
loops inside its body.  A value given to a local (or merged by an ``if``) that is more than a name or
a literal is named (``count_2``, a line of the ``@triton.jit`` helper), so that reading it twice does
not compute it twice.  C's conversions stay: a value given to a local of a declared type is converted
to that type (``int k = x / 2`` truncates), one given to an ``auto`` local to the type of its first
value, one given to a local of a template's type ``T`` to the type of a parameter of type ``T``
(A.ConvertLike: the type is the argument's, known where the call is lifted), and each ``return`` of
several converts to the function's type.

Effects (atomics through pointer parameters, calls of helpers that have effects, any call in a
statement of its own) are named values too (``old_1``, the atomic's old value), listed in the order
the statements run them (``DeviceFunction.effects``): a call runs each, read or not.  One under
conditions (the enclosing ``if``s, the ``return``s before it, a ``?:`` or ``&&`` around it) is
``cond ? atomic : 0``, which the lifting masks by ``cond``.  Effects in a loop of a run-time trip
count are named values of the loop (run each iteration, where the thread runs it); the loop is then an
effect itself.  Everything else is refused naming the construct at its line: an effect in the
condition of a loop of a run-time trip count, a loop without a way to end, arrays, address-taking of
locals, ``goto`` / ``switch``, a ``break`` / ``continue`` outside a loop, stores through pointers.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

from . import ast as A

MAX_TRIPS = 64  # iterations of one loop that are unrolled
MAX_UNROLLED = 256  # iterations of all the loops of a body (nested ones multiply)
MAX_TERMS = 4000  # nodes of a value: substitution doubles a value read twice per statement
ASSIGN_OPS = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
REFUSED_WORDS = {
    "switch": "a 'switch'", "goto": "a 'goto'", "asm": "inline asm", "__asm__": "inline asm",
    "__asm": "inline asm", "__shared__": "a '__shared__' variable", "static": "a 'static' local",
    "extern": "an 'extern' declaration",
}  # fmt: skip
# barriers and fences: the threads of a program run each statement together (LANGUAGE.md 14.4: the
# translation is correct with or without them), so what one makes visible is visible already; a
# helper's effects are its atomics, which run in order for all threads (``__syncwarp(mask)`` too)
BARRIERS = ("__syncthreads", "__syncwarp", "__threadfence", "__threadfence_block")
INT_TYPES = {"s8": 8, "s16": 16, "s32": 32, "s64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


class Refused(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Local:
    ctype: str | None  # its declared Croqtile type; None: ``auto`` or a template's type (see ``like``)
    value: A.Expr | None  # its value at this point over the parameters; None: not given one yet
    fixed: bool = False  # a pointer or a template's value parameter: never assigned
    # ``auto`` or a template's type: a value of its type (its first value, a parameter of that
    # type), which a value given to it is converted to (A.ConvertLike); None: no conversion
    like: A.Expr | None = None


@dataclass
class Flow:
    """Where the statements read so far leave control: ``env`` the locals where it goes on (None:
    every path returned), ``done`` the condition under which it returned (None: it never did) and
    ``value`` what it returned there."""

    env: dict[str, Local] | None
    done: A.Expr | None = None
    value: A.Expr | None = None


Cond = A.Expr | bool  # a condition, or one known at translation


@dataclass
class Jumps:
    """The flags of a loop whose body has ``break`` / ``continue`` (the names of locals of the
    loop; None: no such statement)."""

    brk: str | None
    cont: str | None


@dataclass
class LoopText:
    """Where the parts of a loop are in the text: its keyword, its condition, its step (None: not
    a ``for``), its body and the end of its body; its flags."""

    at: Any
    cond_at: int
    step_at: int | None
    body_at: int
    body_end: int
    jumps: Jumps


class StatementReader:
    """Reads ``{ statements }`` into one expression (see the module's docstring); the expression
    reader's methods (``expr``, ``peek``, ...) come from the class it is mixed into."""

    toks: list[Any]
    pos: int
    text: str
    base: int
    params: dict[str, Any]
    values: set[str]
    expr: Any
    peek: Any
    take: Any
    expect: Any
    line_of: Any
    type_of: Any
    is_type: Any
    sp: Any

    env: dict[str, Local] | None = None  # the locals where the reader is (None: outside a body)
    declared: set[str]  # the names the body declares (their address cannot be taken)
    scope: list[tuple[set[str], dict[str, Local]]]  # per block: names it declares, outer locals they hide
    returns: str | None
    void: bool
    given: dict[str, int]  # template value parameters a call gives (``POW<3>``)
    unrolled: int  # loop iterations read so far
    returned: list[tuple[A.Expr, A.Expr]]  # each ``return`` read: its value as written, converted
    lets: list[tuple[str, A.Expr]]  # named values (``count_2``): each over the parameters and earlier ones
    path: list[A.Expr]  # the conditions the statement being read runs under (``if``s, earlier returns)
    effect_names: list[str]  # the named values that are effects (``old_1``: an atomic), in order
    effectful: set[str]  # the helpers read before this one that have effects (their calls are effects)
    returns_like: A.Expr | None  # a template's return type: a parameter of that type
    jumps: list[Jumps]  # the flags of the loops around the statement being read, innermost last
    reserved: set[str]  # names a loop of a run-time trip count uses (its state, its named values)

    # ------------------------------------------------------------ entry
    def statements(self, void: bool, returns: str | None) -> A.Expr:
        """The body (at its ``{``) as one expression: the value a call of it has (a ``void``
        function's: its last effect, or 0), its effects in :attr:`effect_names`."""
        self.void, self.returns = void, returns
        self.declared, self.scope, self.returned = set(), [], []
        self.lets, self.unrolled, self.path, self.effect_names = [], 0, [], []
        self.jumps, self.reserved = [], set()
        env = {
            name: Local(p.ctype, A.Name(name, span=None), p.pointer, A.Name(name) if p.template else None)
            for name, p in self.params.items()
        }
        for name in self.values:
            known = self.given.get(name)
            value = A.Name(name) if known is None else A.IntLit(known, str(known))
            env[name] = Local(None, value, True)
        open_ = self.peek()
        flow = self.block(env)
        if void:
            if self.effect_names:  # (its last effect as its value: one atomic is the atomic itself)
                return self.used(A.Name(self.effect_names[-1]))
            return self.used(A.IntLit(0, "0", span=self.sp(open_.start, open_.end)))  # nothing reaches Triton
        if flow.env is not None:
            end = self.toks[self.pos - 1]
            raise Refused(f"a path to the end of its body without a 'return'{self.line_of(end)}")
        assert flow.value is not None
        if len(self.returned) == 1 and self.returned[0][1] is flow.value and self.returns is not None:
            return self.used(self.returned[0][0])  # one return: its value as written (the call converts it)
        return self.used(flow.value)

    def used(self, value: A.Expr) -> A.Expr:
        """``value``, keeping of :attr:`lets` the ones it or an effect reads (and the effects); where
        it is the last of them, that one's value itself."""
        need = {n.name for n in value.walk() if isinstance(n, A.Name)} | set(self.effect_names)
        kept: list[tuple[str, A.Expr]] = []
        for name, e in reversed(self.lets):
            if name in need:
                kept.append((name, e))
                need |= {n.name for n in e.walk() if isinstance(n, A.Name)}
        self.lets = kept[::-1]
        last = self.lets[-1][0] if self.lets else None
        if isinstance(value, A.Name) and value.name == last and not self.reads(last):
            if self.effect_names and self.effect_names[-1] == last:
                self.effect_names.pop()  # (the value runs it, after the others)
            return self.lets.pop()[1]  # ``return acc_6``: its value itself
        return value

    def reads(self, name: str) -> bool:
        """Does a named value read ``name``?"""
        return any(isinstance(n, A.Name) and n.name == name for _, e in self.lets for n in e.walk())

    def named(self, e: A.Expr, hint: str) -> A.Expr:
        """``e`` as a named value of the helper where it is more than a name or a literal (a value
        that later statements read twice is computed once)."""
        inner = e.expr if isinstance(e, A.Cast) else e
        if isinstance(inner, (A.Name, A.IntLit, A.FloatLit, A.BoolLit)):
            return e
        taken = {n for n, _ in self.lets} | set(self.params) | self.values | self.reserved
        k = 1
        while f"{hint}_{k}" in taken:
            k += 1
        self.lets.append((f"{hint}_{k}", e))
        return A.Name(f"{hint}_{k}", span=e.span)

    # ------------------------------------------------------------ statements
    def block(self, env: dict[str, Local]) -> Flow:
        """``{ s; s; ... }`` from ``env``; its own locals end with it."""
        self.expect("{")
        self.scope.append((set(), {}))
        flow = Flow(dict(env))
        while self.peek().text != "}":
            if self.peek().kind == "end":
                raise Refused("the end of the text inside its body")
            if flow.env is None:  # after a return on every path: never runs
                self.skip_statement()
                continue
            stop = self.stopped(flow.env)  # (a 'break' / 'continue' before it in its loop's body)
            if stop is True:
                self.skip_statement()
                continue
            with self.unless(flow.done):
                then = self.guarded(stop, flow.env, self.statement)
            flow = self.sequence(flow, then)
        self.take()
        return self.leave(flow, env)

    def leave(self, flow: Flow, outer: dict[str, Local]) -> Flow:
        _, hidden = self.scope.pop()
        if flow.env is not None:
            flow.env = {n: hidden[n] if n in hidden else flow.env[n] for n in outer}
        return flow

    def sequence(self, first: Flow, then: Flow) -> Flow:
        """``then`` ran where ``first`` went on: the two as one."""
        if first.done is None:
            return then
        assert first.value is not None
        if then.env is None:
            assert then.value is not None
            return Flow(None, None, self.choose(first.done, first.value, then.value))
        if then.done is None:
            return Flow(then.env, first.done, first.value)
        assert then.value is not None
        done = self.either(first.done, then.done)
        assert not isinstance(done, bool)
        value = self.choose(first.done, first.value, then.value)
        return Flow(then.env, self.named(done, "done"), self.named(value, "ret"))

    def statement(self, env: dict[str, Local]) -> Flow:
        t = self.peek()
        if t.text == "{":
            return self.block(env)
        if t.text == ";":
            self.take()
            return Flow(env)
        if t.text == "#":
            self.skip_line(t)
            return Flow(env)
        if t.text == "return":
            return self.return_(env)
        if t.text == "if":
            return self.if_(env)
        if t.text in ("for", "while", "do"):
            return self.for_(env)
        if t.text in ("break", "continue"):
            return self.jump(env)
        if t.text in REFUSED_WORDS:
            raise Refused(f"{REFUSED_WORDS[t.text]}{self.line_of(t)}")
        if t.text in BARRIERS and self.peek(1).text == "(":
            self.take()
            self.skip_parens()
            self.expect(";")
            return Flow(env)
        if self.starts_declaration():
            self.declaration(env)
            self.expect(";")
            return Flow(env)
        self.simple(env, ";")
        return Flow(env)

    def skip_line(self, hash_: Any) -> None:
        """``#pragma unroll``: the tokens to the end of its line."""
        self.take()
        while (
            self.peek().kind != "end" and "\n" not in self.text[hash_.end - self.base : self.peek().start - self.base]
        ):
            self.take()

    def skip_statement(self) -> None:
        """Past one statement that never runs."""
        t = self.take()
        if t.text == "{":
            depth = 1
            while depth and self.peek().kind != "end":
                x = self.take().text
                depth += (x == "{") - (x == "}")
        elif t.text in ("if", "for", "while"):
            self.skip_parens()
            self.skip_statement()
            if t.text == "if" and self.peek().text == "else":
                self.take()
                self.skip_statement()
        elif t.text == "do":
            self.skip_statement()
            if self.peek().text == "while":
                self.take()
                self.skip_parens()
                self.expect(";")
        elif t.text == "#":
            self.pos -= 1
            self.skip_line(t)
        else:
            while t.text != ";" and self.peek().kind != "end":
                t = self.take()

    def skip_parens(self) -> None:
        self.expect("(")
        depth = 1
        while depth and self.peek().kind != "end":
            x = self.take().text
            depth += (x == "(") - (x == ")")

    # ------------------------------------------------------------ return / if / for
    def return_(self, env: dict[str, Local]) -> Flow:
        at = self.take()
        if self.void:
            if self.peek().text != ";":
                raise Refused(f"a 'return' of a value from a void function{self.line_of(at)}")
            self.take()
            return Flow(None, None, A.IntLit(0, "0"))
        raw = self.value(env)
        self.expect(";")
        kept = isinstance(raw, A.Name) and raw.name in self.effect_names  # an atomic's old value itself
        value = raw if kept else self.convert(raw, self.returns, self.returns_like)  # C converts at each return
        self.returned.append((raw, value))
        return Flow(None, None, value)

    def if_(self, env: dict[str, Local]) -> Flow:
        self.take()
        self.expect("(")
        cond = self.value(env)
        self.expect(")")
        known = self.truth(cond)
        if known is False:
            self.skip_statement()
            then = Flow(env)
        else:
            with self.unless(None if known else self.negate(cond)):
                then = self.branch(env)
        if self.peek().text == "else":
            self.take()
            if known is True:
                self.skip_statement()
                other = Flow(env)
            else:
                with self.unless(None if known is False else cond):
                    other = self.branch(env)
        else:
            other = Flow(env)
        if known is not None:
            return then if known else other
        return self.merge(cond, then, other)

    def branch(self, env: dict[str, Local]) -> Flow:
        """One statement in a scope of its own (the body of an ``if`` or a ``for``)."""
        self.scope.append((set(), {}))
        flow = self.statement(dict(env))
        return self.leave(flow, env)

    def merge(self, c: A.Expr, a: Flow, b: Flow, fresh: set[str] | None = None) -> Flow:
        """``if (c) a else b``: the flows of the two branches as one (``fresh``: locals ``b``
        declares, which it alone sees)."""

        def done(f: Flow) -> Cond:
            return True if f.env is None else False if f.done is None else f.done

        da, db = done(a), done(b)
        if da is True:  # (c || (!c && db) is c || db)
            when = self.either(c, db)
        elif db is True:
            when = self.either(self.negate(c), da)
        else:
            when = self.either(self.both(c, da), self.both(self.negate(c), db))
        value = a.value if b.value is None else b.value if a.value is None else self.choose(c, a.value, b.value)
        if a.env is None:
            env = b.env
        elif b.env is None:
            env = a.env
        else:
            env = {n: self.merge_local(c, a.env[n], b.env[n], n) for n in a.env if n not in (fresh or ())}
            env.update({n: b.env[n] for n in fresh or () if n in b.env})
        if when is True:
            return Flow(None, None, value)
        if when is False:
            return Flow(env)
        assert value is not None
        return Flow(env, self.named(when, "done"), self.named(value, "ret"))

    def merge_local(self, c: A.Expr, a: Local, b: Local, name: str) -> Local:
        if a.value is b.value or a.value == b.value:
            return a
        if a.value is None or b.value is None:
            return Local(a.ctype, None, a.fixed, a.like)
        if a.ctype == "bool" and _is_test(c) and {_bool(a.value), _bool(b.value)} == {True, False}:
            value = c if _bool(a.value) else self.negate(c)  # (a flag: the condition itself)
            return Local(a.ctype, self.named(value, name), a.fixed, a.like)
        return Local(a.ctype, self.named(self.choose(c, a.value, b.value), name), a.fixed, a.like)

    def for_(self, env: dict[str, Local]) -> Flow:
        """A ``for``, ``while`` or ``do`` loop: unrolled while its condition is known at translation
        (a ``do`` loop's body once before it is looked at), the rest of it a loop of its own
        (:meth:`runtime_loop`) from where it is not.  ``break`` / ``continue`` in its body set a
        flag of the loop (:class:`Jumps`): what follows them in the iteration runs where neither
        is set, the next iteration where no ``break`` is."""
        at = self.take()
        self.scope.append((set(), {}))
        inner = dict(env)
        step_at: int | None = None
        if at.text == "do":
            body_at = self.pos
            self.skip_statement()
            body_end = self.pos
            if self.peek().text != "while":
                raise Refused(f"a 'do' loop without its 'while'{self.line_of(at)}")
            self.take()
            self.expect("(")
            cond_at = self.pos
            self.pos = self.skip_to(")")
            self.expect(")")
            self.expect(";")
        else:
            self.expect("(")
            if at.text == "for":
                if self.starts_declaration():
                    self.declaration(inner)
                elif self.peek().text != ";":
                    self.simple(inner, ";", consume=False)
                self.expect(";")
                cond_at = self.pos
                self.pos = self.skip_to(";")
                step_at = self.pos + 1
                self.pos = self.skip_to(")", step_at)
            else:
                cond_at = self.pos
                self.pos = self.skip_to(")")
            body_at = self.pos + 1
            self.pos = body_at
            self.skip_statement()
            body_end = self.pos
        after = self.pos
        jumps = self.loop_flags(inner, body_at, body_end)
        loop = LoopText(at, cond_at, step_at, body_at, body_end, jumps)
        flow = Flow(inner)
        trips = 0
        start = (Flow(dict(inner)), len(self.lets), len(self.effect_names), self.unrolled)  # (to read it again)
        cond_end = step_at - 1 if step_at is not None else body_at - 1 if at.text != "do" else after - 2
        always = not any(t.kind == "id" and t.text not in ("true", "false") for t in self.toks[cond_at:cond_end])
        if always and cond_at < cond_end:  # (a condition of constants: one that holds)
            self.pos = cond_at
            always = self.truth(self.value(inner)) is True
        while flow.env is not None:
            assert flow.env is not None
            if self.truth_of(self.flag(flow.env, jumps.brk)) is True:
                break  # (every path left it)
            go: bool | None = True
            if not (at.text == "do" and trips == 0):  # (a ``do`` loop's first iteration: no test)
                self.pos = cond_at
                if self.peek().text not in (";", ")"):
                    go = self.truth(self.value(flow.env))
            if go is None:
                flow = self.rest_at_run_time(flow, loop, "of a run-time trip count")
                break
            if not go:
                break
            trips += 1
            self.unrolled += 1
            if trips > MAX_TRIPS or self.unrolled > MAX_UNROLLED:  # too long to unroll: a loop from its start
                flow, marks = Flow(dict(start[0].env or {}), start[0].done, start[0].value), start[1:]
                del self.lets[marks[0] :], self.effect_names[marks[1] :]
                self.unrolled = marks[2]
                why = f"of more than {MAX_TRIPS} iterations" if trips > MAX_TRIPS else "in loops too long to unroll"
                flow = self.rest_at_run_time(flow, loop, why)
                break
            flow = self.iteration(flow, loop)
            if at.text == "do" and trips == 1:  # (too long: unrolled once, a loop from the second)
                again = Flow(dict(flow.env or {}), flow.done, flow.value)
                start = (again, len(self.lets), len(self.effect_names), self.unrolled)
            if (
                always
                and flow.env is not None
                and (flow.done is not None or self.truth_of(self.flag(flow.env, jumps.brk)) is not False)
            ):  # (no bound, left where a value of a thread says: a loop from its start, not 64 unrolled)
                flow, marks = Flow(dict(start[0].env or {}), start[0].done, start[0].value), start[1:]
                del self.lets[marks[0] :], self.effect_names[marks[1] :]
                self.unrolled = marks[2]
                flow = self.rest_at_run_time(flow, loop, "without a bound")
                break
        self.pos = after
        return self.leave(flow, env)

    def iteration(self, flow: Flow, loop: LoopText) -> Flow:
        """One unrolled iteration of ``loop`` from ``flow``: its body (where no ``break`` is set and
        no ``return`` ran), then its step (where no ``break`` is set)."""
        assert flow.env is not None
        env = dict(flow.env)
        if loop.jumps.cont is not None:
            env[loop.jumps.cont] = Local("bool", A.BoolLit(False))
        self.pos = loop.body_at
        self.jumps.append(loop.jumps)
        try:
            with self.unless(flow.done):
                then = self.guarded(self.stopped(env), env, self.branch)
        finally:
            self.jumps.pop()
        flow = self.sequence(flow, then)
        if flow.env is None or loop.step_at is None:
            return flow
        stop = self.truth_of(self.flag(flow.env, loop.jumps.brk))
        if stop is True:
            return flow
        with self.unless(flow.done):  # (the loop's own locals, its counter: read by no one after a 'break')
            stepped = self.guarded(stop, flow.env, lambda e: self.step(e, loop.step_at), self.scope[-1][0])
        return Flow(stepped.env, flow.done, flow.value)

    def step(self, env: dict[str, Local], step_at: int | None) -> Flow:
        """The step of a ``for`` loop (``++i``, ``i += 2``, ``i = 2 * i``)."""
        if step_at is None:
            return Flow(env)
        self.pos = step_at
        if self.peek().text != ")":
            self.simple(env, ")", consume=False)
        if self.peek().text != ")":
            raise Refused(f"'{self.peek().text}' in the step of a 'for' loop{self.line_of(self.peek())}")
        return Flow(env)

    def rest_at_run_time(self, flow: Flow, loop: LoopText, why: str) -> Flow:
        """The rest of ``loop`` from ``flow`` a loop of the program (:meth:`runtime_loop`), where no
        ``return`` before it ran."""
        with self.unless(flow.done):
            rest = self.runtime_loop(flow, loop, why)
        return self.sequence(flow, rest)

    def runtime_loop(self, flow: Flow, loop: LoopText, why: str) -> Flow:
        """The rest of a loop whose condition is not known at translation (a bound given at run
        time, or too many iterations to unroll: ``why``), from ``flow``: an A.DeviceLoop over the
        locals it changes, which each thread runs while its own condition holds (a condition the
        threads share: a loop of the program).  Its body is read once over names of those locals
        (``x_loop1``); its named values stay in it (a loop inside it, atomics: run each iteration,
        where the thread runs it).  The conditions it is reached under (``if``s, earlier
        ``return``s) are part of its condition; a ``break`` flag and, where its body returns, a
        flag and the value returned are locals of it too (the thread stops once one is set).  The
        loop is an effect where its body has one (it runs whether or not its values are read).
        Refused: a loop without a way to end (no condition, no ``break``, no ``return``), an
        effect in its condition."""
        at, jumps = loop.at, loop.jumps
        what = f"a '{at.text}' loop {why}{self.line_of(at)}"
        assert flow.env is not None
        env = dict(flow.env)
        returned = value = None
        if self.has_word(loop.body_at, loop.body_end, "return"):  # (a flag, and the value returned)
            returned = self.fresh_local("returned")
            env[returned] = Local("bool", A.BoolLit(False))
            if not self.void:
                value = self.fresh_local("result")
                zero = self.convert(A.IntLit(0, "0"), self.returns, self.returns_like)
                env[value] = Local(self.returns, zero, like=self.returns_like)
        names = [n for n, local in env.items() if not local.fixed and local.value is not None and n != jumps.cont]
        taken = {n for n, _ in self.lets} | set(self.params) | self.values | self.reserved
        state: dict[str, str] = {}
        for n in names:
            k = 1
            while f"{n}_loop{k}" in taken:
                k += 1
            state[n] = f"{n}_loop{k}"
            taken.add(state[n])
        self.reserved |= set(state.values())
        inner = dict(env)
        for n in names:
            inner[n] = Local(env[n].ctype, A.Name(state[n]), env[n].fixed, env[n].like)
        mark, effects = len(self.lets), len(self.effect_names)
        self.pos = loop.cond_at
        if self.peek().text in (";", ")"):
            cond: A.Expr = A.BoolLit(True)
        else:
            cond = self.value(inner)
        if len(self.effect_names) > effects:
            raise Refused(f"an atomic or a call of a helper with atomics in the condition of {what}")
        if self.truth(cond) is True and jumps.brk is None and returned is None:
            raise Refused(f"{what} without a way to end (no condition, 'break' or 'return')")
        # (``while (true)`` left only by its ``return``s: nothing after it is reached)
        only_returns = self.truth(cond) is True and jumps.brk is None and returned is not None
        for flag in (jumps.brk, returned):
            if flag is not None:
                whole = self.both(self.negate(A.Name(state[flag])), cond)
                assert not isinstance(whole, bool)
                cond = whole
        for c in reversed(self.path):  # (where the loop is not reached, no thread runs it)
            whole = self.both(c, cond)
            assert not isinstance(whole, bool)
            cond = whole
        for flag in (jumps.brk, jumps.cont, returned):  # (none is set where an iteration starts)
            if flag is not None:
                inner[flag] = Local("bool", A.BoolLit(False))
        self.pos = loop.body_at
        self.jumps.append(jumps)
        try:
            body = self.branch(inner)
        finally:
            self.jumps.pop()
        updates: dict[str, A.Expr] = {n: A.Name(state[n]) for n in names}
        if body.env is not None:
            stop = self.truth_of(self.flag(body.env, jumps.brk))
            if stop is not True:
                with self.unless(body.done):
                    stepped = self.guarded(stop, body.env, lambda e: self.step(e, loop.step_at), self.scope[-1][0])
                body = Flow(stepped.env, body.done, body.value)
            assert body.env is not None
            for n in names:
                local = body.env[n]
                if local.value is None:
                    raise Refused(f"'{n}' without a value at the end of an iteration of {what}")
                updates[n] = local.value
        if returned is not None:
            updates[returned] = A.BoolLit(True) if body.env is None else body.done or A.BoolLit(False)
            if value is not None and body.value is not None:  # (the value where it returned this time)
                done: Cond = True if body.env is None else body.done or False
                updates[value] = self.choose(done, body.value, A.Name(state[value]))
        if len(self.effect_names) > effects:
            del self.effect_names[effects:]  # (the loop's named values: they run in it)
            ran = True
        else:
            ran = False
        lets = self.lets[mark:]
        del self.lets[mark:]
        self.reserved |= {n for n, _ in lets}
        changed = [n for n in names if not (isinstance(updates[n], A.Name) and updates[n].name == state[n])]
        kept = {state[n]: env[n].value for n in names if n not in changed}  # (the loop does not change them)

        def before(x: Any) -> Any:
            return copy.deepcopy(kept[x.name]) if isinstance(x, A.Name) and x.name in kept else None

        cond = A.rewrite(cond, before)
        values = [A.rewrite(e, before) for _, e in lets]
        if not changed and not ran:  # a loop that changes no local and has no effect computes nothing
            return Flow(flow.env)
        node = A.DeviceLoop(
            [state[n] for n in changed],
            [copy.deepcopy(env[n].value) for n in changed],  # type: ignore[misc]
            cond,
            [n for n, _ in lets],
            values,
            [A.rewrite(updates[n], before) for n in changed],
            span=self.sp(at.start, at.end),
        )
        if ran:  # (its effects run where the loop is, in the order of the others)
            name = self.named(A.LoopOut(node, 0 if changed else -1, span=node.span), "loop")
            assert isinstance(name, A.Name)
            self.effect_names.append(name.name)
        out = dict(flow.env)
        outs: dict[str, A.Expr] = {}
        for i, n in enumerate(changed):
            outs[n] = self.named(A.LoopOut(node, i, span=node.span), n)
            if n in out:
                out[n] = Local(env[n].ctype, outs[n], env[n].fixed, env[n].like)
        if returned is None or returned not in outs:
            return Flow(out)
        result = outs.get(value) if value is not None else None
        if result is None:
            result = env[value].value if value is not None else A.IntLit(0, "0")
        assert result is not None
        if only_returns:
            return Flow(None, None, result)
        return Flow(out, outs[returned], result)

    # ------------------------------------------------------------ break / continue
    def loop_flags(self, env: dict[str, Local], body_at: int, body_end: int) -> Jumps:
        """The flags of a loop whose body has a ``break`` / ``continue`` (locals of the loop, named
        apart from every name of the body's text), ``False`` where it starts."""
        jumps = Jumps(None, None)
        for word, role in (("break", "brk"), ("continue", "cont")):
            if self.has_word(body_at, body_end, word):
                name = self.fresh_local("broke" if word == "break" else "skip")
                self.declare(env, name, Local("bool", A.BoolLit(False)))
                setattr(jumps, role, name)
        return jumps

    def jump(self, env: dict[str, Local]) -> Flow:
        """``break;`` / ``continue;``: the innermost loop's flag set."""
        t = self.take()
        self.expect(";")
        jumps = self.jumps[-1] if self.jumps else None
        name = None if jumps is None else jumps.brk if t.text == "break" else jumps.cont
        if name is None:
            raise Refused(f"a '{t.text}' outside a loop{self.line_of(t)}")
        env[name] = Local("bool", A.BoolLit(True, span=self.sp(t.start, t.end)))
        return Flow(env)

    def stopped(self, env: dict[str, Local]) -> Cond:
        """Whether a ``break`` or ``continue`` of the innermost loop ran (its statements after it do not)."""
        if not self.jumps:
            return False
        jumps = self.jumps[-1]
        return self.either(self.truth_of(self.flag(env, jumps.brk)), self.truth_of(self.flag(env, jumps.cont)))

    def flag(self, env: dict[str, Local], name: str | None) -> A.Expr | None:
        if name is None or name not in env:
            return None
        return env[name].value

    def truth_of(self, e: A.Expr | None) -> Cond:
        """``e`` as a condition (None: one that never holds)."""
        if e is None:
            return False
        known = self.truth(e)
        return e if known is None else known

    def guarded(self, stop: Cond, env: dict[str, Local], read: Any, own: set[str] | None = None) -> Flow:
        """``read(env)`` (a statement) where ``stop`` does not hold: where it does, the locals keep
        their values and nothing returns (``own``: locals that nothing reads where it holds, their
        values as ``read`` leaves them)."""
        if stop is False:
            return read(env)  # type: ignore[no-any-return]
        assert not isinstance(stop, bool)
        before = dict(env)
        declared = set(self.scope[-1][0])
        with self.unless(stop):
            then = read(dict(env))
        return self.merge(stop, Flow(before), then, fresh=(self.scope[-1][0] - declared) | (own or set()))

    def has_word(self, start: int, end: int, word: str) -> bool:
        return any(t.text == word for t in self.toks[start:end])

    def fresh_local(self, hint: str) -> str:
        """A name for a local of the translator's own that no name of the function's text is."""
        words = {t.text for t in self.toks if t.kind == "id"} | set(self.params) | self.values | self.reserved
        k, name = 1, hint
        while name in words or name in self.declared:
            k += 1
            name = f"{hint}{k}"
        self.declared.add(name)
        return name

    def skip_to(self, text: str, start: int | None = None) -> int:
        """The position of the next ``text`` outside parentheses from ``start``."""
        k = self.pos if start is None else start
        depth = 0
        while k < len(self.toks) - 1:
            x = self.toks[k].text
            if depth == 0 and x == text:
                return k
            depth += (x == "(") - (x == ")")
            k += 1
        raise Refused(f"a 'for' loop without its '{text}'")

    # ------------------------------------------------------------ declarations and assignments
    def starts_declaration(self) -> bool:
        t = self.peek()
        if t.text in ("auto", "const", "constexpr", "unsigned", "signed", "volatile", "register"):
            return True
        return self.is_type(t) and self.peek(1).text not in ("(",)

    def declaration(self, env: dict[str, Local]) -> None:
        """``float a = x, b = a * 2`` (no ``;``)."""
        words: list[str] = []
        while self.peek().kind == "id" and (
            self.is_type(self.peek()) or self.peek().text in ("auto", "const", "constexpr", "volatile", "register")
        ):
            if self.peek(1).text in ("=", ",", ";", "[", "(", "{") and words and self.peek().text not in ("const",):
                break  # the name itself (a type's word never comes right before '=')
            words.append(self.take().text)
        plain = [w for w in words if w not in ("const", "constexpr", "volatile", "register")]
        auto = plain == ["auto"]
        ctype = None if auto else self.type_of(plain)
        like = None if auto or ctype is not None else self.like_of(plain, self.peek())
        while True:
            t = self.take()
            if t.text in ("*", "&"):
                what = "a pointer" if t.text == "*" else "a reference"
                raise Refused(f"{what} local{self.line_of(t)}")
            if t.kind != "id":
                raise Refused(f"'{t.text}' where a local's name was expected{self.line_of(t)}")
            nxt = self.peek()
            if nxt.text == "[":
                raise Refused(f"an array '{t.text}'{self.line_of(t)}")
            if nxt.text in ("(", "{"):
                raise Refused(f"a declaration of '{t.text}' with '{nxt.text}'{self.line_of(t)}")
            value = None
            if nxt.text == "=":
                self.take()
                value = self.named(self.convert(self.value(env), ctype, like), t.text)
            elif auto:
                raise Refused(f"an 'auto' local without a value{self.line_of(t)}")
            # (``auto``: the type of its first value, which later values are converted to)
            self.declare(env, t.text, Local(ctype, value, like=value if auto else like))
            if self.peek().text != ",":
                return
            self.take()

    def declare(self, env: dict[str, Local], name: str, local: Local) -> None:
        declared, hidden = self.scope[-1]
        if name in env and name not in declared and name not in hidden:
            hidden[name] = env[name]
        declared.add(name)
        self.declared.add(name)
        env[name] = local

    def simple(self, env: dict[str, Local], end: str, consume: bool = True) -> None:
        """An assignment, ``++x`` / ``x--``, or (in a void function) an effect, up to ``end``."""
        t = self.peek()
        if t.text in ("++", "--") and self.peek(1).kind == "id":
            self.take()
            name = self.take()
            self.assign(env, name, "+=" if t.text == "++" else "-=", A.IntLit(1, "1", span=self.sp(t.start, t.end)))
        elif t.kind == "id" and self.peek(1).text in ("++", "--"):
            name = self.take()
            op = self.take()
            self.assign(env, name, "+=" if op.text == "++" else "-=", A.IntLit(1, "1", span=self.sp(op.start, op.end)))
        elif t.kind == "id" and self.peek(1).text in ASSIGN_OPS:
            name = self.take()
            op = self.take().text
            self.assign(env, name, op, self.value(env))
        elif t.kind == "id" and self.peek(1).kind == "id":
            raise Refused(f"a local of type '{t.text}'{self.line_of(t)}")
        elif t.text == "*" and self.peek(1).kind == "id" and self.peek(2).text in ASSIGN_OPS:
            raise Refused(f"a store through the pointer '{self.peek(1).text}'{self.line_of(t)}")
        else:  # an expression for its effects: its atomics and calls run here (their values unused)
            self.value(env, statement=True)
            if self.peek().text in ASSIGN_OPS:
                raise Refused(f"an assignment to something other than a local{self.line_of(self.peek())}")
        if consume:
            self.expect(end)

    def assign(self, env: dict[str, Local], name: Any, op: str, value: A.Expr) -> None:
        local = env.get(name.text)
        if local is None:
            raise Refused(f"an assignment to '{name.text}', which is not a local{self.line_of(name)}")
        if local.fixed:
            raise Refused(f"an assignment to '{name.text}', which cannot change{self.line_of(name)}")
        if op != "=":
            if local.value is None:
                raise Refused(f"'{name.text}' read before it is given a value{self.line_of(name)}")
            old = A.Paren(copy.deepcopy(local.value), span=local.value.span)
            value = A.Binary(op[:-1], old, A.Paren(value, span=value.span), span=self.sp(name.start, name.end))
        value = self.convert(value, local.ctype, local.like)
        env[name.text] = Local(local.ctype, self.named(value, name.text), local.fixed, local.like)

    # ------------------------------------------------------------ values
    def value(self, env: dict[str, Local], statement: bool = False) -> A.Expr:
        """An expression read over ``env``'s values, its effects named (:meth:`hoist`; in a
        ``statement`` every call of a function is one)."""
        saved, self.env = self.env, env
        try:
            start = self.peek()
            e = self.hoist(self.expr(), [], statement)
        finally:
            self.env = saved
        if sum(1 for _ in e.walk()) > MAX_TERMS:
            raise Refused(
                f"a value of more than {MAX_TERMS} terms once its locals are substituted{self.line_of(start)}"
            )
        return e

    def local_value(self, tok: Any) -> A.Expr | None:
        """The value of the local ``tok`` names where the reader is (None: not a local)."""
        if self.env is None or tok.text not in self.env:
            return None
        local = self.env[tok.text]
        if local.value is None:
            raise Refused(f"'{tok.text}' read before it is given a value{self.line_of(tok)}")
        v = copy.deepcopy(local.value)
        if isinstance(v, A.Name) and v.span is None:
            v.span = self.sp(tok.start, tok.end)
            return v
        return v if isinstance(v, (A.Name, A.IntLit, A.FloatLit, A.BoolLit, A.Paren)) else A.Paren(v, span=v.span)

    def is_local(self, tok: Any) -> bool:
        return tok.text in self.declared and self.env is not None and tok.text in self.env

    def hoist(self, e: A.Expr, conds: list[A.Expr], statement: bool) -> A.Expr:
        """``e`` with each effect in it (an atomic, a call of a helper with effects, in a
        ``statement`` any call) a named value (``old_1``, its old value), in :attr:`effect_names`
        in the order C runs them: operands first, a ``?:``'s branch and the right operand of ``&&``
        / ``||`` under their conditions.  An effect under conditions (the enclosing ``if``s, earlier
        ``return``s: :attr:`path`, ``conds``) is ``cond ? effect : 0``: it runs where they hold."""
        if isinstance(e, A.Ternary):
            e.cond = self.hoist(e.cond, conds, False)
            e.then = self.hoist(e.then, [*conds, e.cond], False)
            e.other = self.hoist(e.other, [*conds, self.negate(e.cond)], False)
            return e
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            e.lhs = self.hoist(e.lhs, conds, False)
            e.rhs = self.hoist(e.rhs, [*conds, e.lhs if e.op == "&&" else self.negate(e.lhs)], False)
            return e
        for f in fields(e):
            if f.name in ("span", "device", "written", "effects", "expanded"):
                continue
            v = getattr(e, f.name)
            if isinstance(v, A.Expr):
                setattr(e, f.name, self.hoist(v, conds, False))
            elif isinstance(v, list):
                setattr(e, f.name, [self.hoist(x, conds, False) if isinstance(x, A.Expr) else x for x in v])
        if not isinstance(e, A.Call) or not (
            e.kind == "atomic" or (e.kind == "call" and (statement or e.name in self.effectful))
        ):
            return e
        when: Cond = True
        for c in [*self.path, *conds]:
            when = self.both(when, c)
        effect = self.choose(when, e, A.IntLit(0, "0", span=e.span))
        name = self.named(effect, "old")
        assert isinstance(name, A.Name)
        self.effect_names.append(name.name)
        return name

    @contextmanager
    def unless(self, done: A.Expr | None) -> Iterator[None]:
        """The statements read inside run only where ``done`` does not hold (None: always)."""
        if done is None:
            yield
            return
        self.path.append(self.negate(done))
        try:
            yield
        finally:
            self.path.pop()

    def like_of(self, words: list[str], at: Any) -> A.Expr:
        """A parameter of the template's type ``words`` spell (its values have that type)."""
        spelled = " ".join(w for w in words if w not in ("*", "&"))
        for name, p in self.params.items():
            if p.template == spelled:
                return A.Name(name)
        raise Refused(f"a value of the template's type '{spelled}', which no parameter has{self.line_of(at)}")

    def convert(self, value: A.Expr, ctype: str | None, like: A.Expr | None = None) -> A.Expr:
        """``value`` given to a local of type ``ctype`` (None: of the type of ``like``, or kept): a
        constant of an integer type folds."""
        if ctype is None and like is not None:
            known = A.unparen(like)
            if isinstance(known, A.IntLit):  # ``auto i = 0``: an int (a loop's counter stays known)
                ctype = known.type
            elif isinstance(known, A.FloatLit):
                ctype = "f64" if known.double else "f32"
            elif isinstance(known, A.Cast) and not known.is_string:
                ctype = known.type
            else:
                return A.ConvertLike(value, copy.deepcopy(like), span=value.span)
        if ctype is None:
            return value
        known = fold(value)
        if ctype in INT_TYPES and isinstance(known, int) and not isinstance(known, bool):
            bits = INT_TYPES[ctype]
            known &= (1 << bits) - 1
            if ctype.startswith("s") and known >= 1 << (bits - 1):
                known -= 1 << bits
            return A.IntLit(known, str(known), ctype, span=value.span)
        if isinstance(value, A.Cast) and value.type == ctype and not value.is_string:
            return value
        return A.Cast(ctype, False, value, span=value.span)

    def truth(self, cond: A.Expr) -> bool | None:
        known = fold(cond)
        return None if known is None else bool(known)

    # ------------------------------------------------------------ building conditions and values
    def choose(self, c: Cond, a: A.Expr, b: A.Expr) -> A.Expr:
        if c is True:
            return a
        if c is False:
            return b
        return A.Ternary(copy.deepcopy(c), copy.deepcopy(a), copy.deepcopy(b), span=c.span)

    def either(self, a: Cond, b: Cond) -> Cond:
        if a is True or b is True:
            return True
        if a is False:
            return b
        if b is False:
            return a
        return A.Binary("||", A.Paren(copy.deepcopy(a)), A.Paren(copy.deepcopy(b)), span=a.span)

    def both(self, a: Cond, b: Cond) -> Cond:
        if a is False or b is False:
            return False
        if a is True:
            return b
        if b is True:
            return a
        return A.Binary("&&", A.Paren(copy.deepcopy(a)), A.Paren(copy.deepcopy(b)), span=a.span)

    def negate(self, c: A.Expr) -> A.Expr:
        return A.Unary("!", A.Paren(copy.deepcopy(c), span=c.span), span=c.span)


def _bool(e: A.Expr) -> bool | None:
    return e.value if isinstance(e, A.BoolLit) else None


def _is_test(e: A.Expr) -> bool:
    """Is ``e`` a comparison or a logical operation (a value of type bool)?"""
    e = A.unparen(e)
    if isinstance(e, A.Unary):
        return e.op == "!"
    return isinstance(e, A.Binary) and e.op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||")


def fold(e: A.Expr) -> int | bool | None:
    """The value of an integer / boolean expression of constants, as C computes it (None: not one)."""
    if isinstance(e, A.IntLit):
        return e.value
    if isinstance(e, A.BoolLit):
        return e.value
    if isinstance(e, A.Paren):
        return fold(e.expr)
    if isinstance(e, A.Cast) and not e.is_string and e.type in INT_TYPES | {"bool": 1}:
        v = fold(e.expr)
        if v is None:
            return None
        if e.type == "bool":
            return bool(v)
        bits = INT_TYPES[e.type]
        v = int(v) & ((1 << bits) - 1)
        return v - (1 << bits) if e.type.startswith("s") and v >= 1 << (bits - 1) else v
    if isinstance(e, A.Unary) and e.op in ("-", "!", "~"):
        v = fold(e.operand)
        if v is None:
            return None
        return -int(v) if e.op == "-" else (not v) if e.op == "!" else ~int(v)
    if isinstance(e, A.Ternary):
        c = fold(e.cond)
        return None if c is None else fold(e.then if c else e.other)
    if isinstance(e, A.Binary):
        a = fold(e.lhs)
        if a is None:
            return None
        if e.op == "&&" and not a:
            return False
        if e.op == "||" and a:
            return True
        b = fold(e.rhs)
        if b is None:
            return None
        return _binary(e.op, int(a), int(b))
    return None


def _binary(op: str, a: int, b: int) -> int | bool | None:
    if op in ("/", "%"):
        if b == 0:
            return None
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates
        return q if op == "/" else a - q * b
    ops = {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "<<": lambda: a << b if b >= 0 else None,
        ">>": lambda: a >> b if b >= 0 else None, "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
        "<": lambda: a < b, ">": lambda: a > b, "<=": lambda: a <= b, ">=": lambda: a >= b, "==": lambda: a == b,
        "!=": lambda: a != b, "&&": lambda: bool(a and b), "||": lambda: bool(a or b),
    }  # fmt: skip
    f = ops.get(op)
    return None if f is None else f()
