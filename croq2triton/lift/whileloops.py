"""A counted ``while`` loop as the ``foreach`` it is (``--schedule auto``).

Code ported from CUDA walks a row with a counter and a ``while``::

    mutable int j = t;                         // or 0
    while (j < N) { s += x.at(r, j); j += 64; }

Lifted as written, a ``while`` runs while any lane's condition holds, each lane its own counter: the
loop is never a fold (schedule/foldloops.py folds ``foreach`` loops).  Where the source shows the
conditions below, the loop is ``foreach k in [cdiv(N, 64)] { int j_k = t + k * 64; if (j_k < N) {
s += x.at(r, j_k); } }``: the same iterations in the same order for every lane.

What the rewrite needs of the source (else the loop stays as written):

* the condition is ``j < e`` or ``j <= e`` (``e > j``, ``e >= j``) with ``j`` a ``mutable int``
  declared in the same statement list before the loop, its initial value ``j0`` not assigned
  between the declaration and the loop, and ``j0`` a sum or product of non-negative constants and
  indices of ``parallel`` levels (never negative); the start may instead be a plain ``j = j0``
  later in that list (a counter reused by the next loop: ``j = t; while (j < N) { ..; j += 64; }``),
  ``j`` being declared ``mutable int`` in the kernel and under no other type;
* the body's last statement is ``j += c`` (``j = j + c``) with ``c`` positive wherever the loop runs
  (a positive literal, a parallel level's extent ``n`` of ``parallel p by n``, ``#p``, or a product
  of them: a grid stride ``#b * #t``, a persistent loop's ``t += num_blocks``), and the body
  assigns ``j`` nowhere else, declares or loops over no other ``j``, and has no ``break``, ``continue``, ``yield``,
  barrier, event or ``parallel``;
* ``e`` reads only names the body does not assign (nor ``j``) and no element, and ``j`` is not read
  after the loop (its final value is not kept): the statements after it in its list do not name
  ``j``, and ``j`` is declared in that list (its scope ends there), or the first of them that names
  ``j`` is a plain ``j = e2`` whose ``e2`` does not read ``j`` (the next loop's start).

Then the loop's iterations are ``j = j0 + k * c`` for ``k = 0, 1, ..`` while ``j < e``: with ``j0 >=
0`` every such ``k`` is below ``cdiv(e, c)``, and the ``if`` drops the ones past ``e``.  From ``j0 =
0`` every ``k`` below ``cdiv(e, c)`` has ``k * c < e`` (none where ``e <= 0``): no ``if``, and ``j``
is read as ``(k * c)`` in the body (``foreach k in [cdiv(N, 4)] { foreach v in [4] { .. (k * 4) + v
.. } }``: a nest over blocks of one range, schedule/flatnest.py).

A body that steps the counter first (``mutable int j = -1; while (j < N - 1) { j += 1; .. }``: its other
statements read ``j0 + c, j0 + 2c, ..``) is the loop stepped last from ``j0 + c`` while ``j < e + c``
(``j0 - c`` while ``j > e - c`` walking down; ``-1 + 1`` folded to ``0``, ``N - 1 + 1`` to ``N``), under the
same conditions on the other statements, the shifted start and ``j``'s final value.

A loop walking down (``mutable int j = N - 1; while (j >= 0) { ..; j -= 1; }``) is the same with the
order reversed: the condition ``j >= e`` or ``j > e`` (``e <= j``, ``e < j``), the last statement
``j -= c`` (``j = j - c``, ``c`` as above), ``j0`` an expression of constants and names nothing in the kernel assigns
(``parallel`` indices, parameters, immutable ``int``s: its value where the loop starts, read again in
the loop), ``e`` as above.  Its iterations are ``j = j0 - k * c`` while ``j >= e``: ``k`` below
``cdiv(j0 - e + 1, c)`` (``cdiv(j0 - e, c)`` for ``>``), none where that is not positive; a start of
each thread's own is an extent of each thread's own (lift/loops.py runs the program to the largest,
each thread masked to its own).
"""

from __future__ import annotations

import copy

from ..frontend import ast as A
from ..tir import nodes as N

_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


def counted_whiles(top: A.Parallel) -> A.Parallel | None:
    """``top`` with each ``while`` the conditions admit as a ``foreach`` (module docstring); None
    where there is none."""
    if not any(isinstance(n, A.While) for n in top.walk()):
        return None  # (every kernel under auto asks: no copy of the tree where there is nothing to do)
    indices = {v for n in top.walk() if isinstance(n, A.PBy) for v in ([n.name] if n.name else []) + (n.vars or [])}
    nodes = list(top.walk())
    mutated = _assigned(nodes)
    # names that are a parallel level's extent (``blk by nblocks``): positive wherever the body runs
    extents = {b.name for n in nodes if isinstance(n, A.PBy) for b in n.bound if isinstance(b, A.Name)}
    extents -= mutated | {d.name for n in nodes if isinstance(n, A.ScalarDecl) for d in n.items}
    taken = {n.name for n in top.walk() if isinstance(n, A.Name)} | indices
    ints = _int_counters(nodes)
    new = copy.deepcopy(top)
    changed = [0]

    def change(n: object) -> object | None:
        if isinstance(n, A.Block):
            n.stmts = _stmts(n.stmts, indices, extents, taken, changed, mutated, ints)
        return None

    A.rewrite(new, change)
    return new if changed[0] else None


def _stmts(
    stmts: list[A.Stmt],
    indices: set[str],
    extents: set[str],
    taken: set[str],
    changed: list[int],
    mutated: set[str],
    ints: set[str],
) -> list[A.Stmt]:
    out = list(stmts)
    for i, s in enumerate(out):
        if not isinstance(s, A.While):
            continue
        got = _counted(s, out[:i], out[i + 1 :], indices, extents, taken, mutated, ints)
        if got is not None:
            out[i] = got
            changed[0] += 1
    return out


def _counted(
    w: A.While,
    before: list[A.Stmt],
    after: list[A.Stmt],
    indices: set[str],
    extents: set[str],
    taken: set[str],
    mutated: set[str],
    ints: set[str],
) -> A.Stmt | None:
    if not isinstance(w.body, A.Block) or not w.body.stmts:
        return None
    body = w.body.stmts
    found = [(j, op, end) for j, op, end in _conditions(w.cond) if _increment(body[-1], j) is not None]
    first = False  # the counter stepped by the body's first statement (``j = -1; while (j < N - 1) { j += 1; .. }``)
    if not found and len(body) > 1:
        found = [(j, op, end) for j, op, end in _conditions(w.cond) if _increment(body[0], j) is not None]
        first = True
    if len(found) != 1:
        return None
    j, op, end = found[0]
    stepped = _increment(body[0] if first else body[-1], j)
    if stepped is None:
        return None
    up, step = stepped
    if not _positive(step, indices, extents) or up != (op in ("<", "<=")):
        return None  # (up while below, down while above, by a step positive wherever the loop runs)
    rest = body[1:] if first else body[:-1]
    nodes = [n for s in rest for n in s.walk()]
    if any(isinstance(n, (A.Break, A.Continue, A.Yield, A.Sync, A.Wait, A.Trigger, A.Parallel)) for n in nodes):
        return None  # (a barrier or an event under the new condition: not as written)
    assigned = _assigned(nodes)
    declared = {d.name for n in nodes if isinstance(n, A.ScalarDecl) for d in n.items}
    declared |= {x for n in nodes if isinstance(n, A.Within) for x in ([n.name] if n.name else []) + (n.vars or [])}
    declared |= {x for n in nodes if isinstance(n, A.RangeItem) for x in (n.name, n.alias) if x}
    if j in assigned or j in declared:
        return None
    end_nodes = list(end.walk())
    if any(isinstance(n, (A.At, A.Call, A.IncDec)) for n in end_nodes):
        return None
    if {n.name for n in end_nodes if isinstance(n, A.Name)} & (assigned | {j}):
        return None
    if {n.name for n in step.walk() if isinstance(n, A.Name)} & (assigned | {j}):
        return None
    start = _start(before, j, j in ints)
    if start is None:
        return None
    if first:
        # the body reads j' = j + c (j - c walking down) in each step the condition admits j: the loop
        # stepped last from j0 + c while j' < e + c (j' > e - c)
        sign = "+" if up else "-"
        start, end = _shifted(start, sign, step), _shifted(end, sign, step)
    if up and not _never_negative(start, indices):
        return None
    if not up and not _stable(start, mutated | assigned | {j}):
        return None
    if not _dead_after(after, j, _declares(before, j)):
        return None
    k = N.fresh_name(f"{j}_step", taken)
    at = N.fresh_name(f"{j}_at", taken)
    span = w.span
    renamed = [_renamed(copy.deepcopy(s), j, at) for s in rest]
    if up:
        stop = end if op == "<" else A.Binary("+", end, A.IntLit(1, "1"))
        value = A.Binary("+", copy.deepcopy(start), A.Binary("*", A.Name(k), copy.deepcopy(step)))
        guard = A.If(A.Binary("<", A.Name(at), copy.deepcopy(stop)), A.Block(renamed))
        extent = A.Builtin("cdiv", [copy.deepcopy(stop), copy.deepcopy(step)])
    else:  # walking down from j0 while j >= e (j > e): cdiv(j0 - e + 1, c) steps (cdiv(j0 - e, c))
        low = end if op == ">=" else A.Binary("+", end, A.IntLit(1, "1"))
        value = A.Binary("-", copy.deepcopy(start), A.Binary("*", A.Name(k), copy.deepcopy(step)))
        guard = A.If(A.Binary(">=", A.Name(at), copy.deepcopy(low)), A.Block(renamed))
        count = A.Binary(
            "+", A.Binary("-", A.Paren(copy.deepcopy(start)), A.Paren(copy.deepcopy(low))), A.IntLit(1, "1")
        )
        extent = A.Builtin("cdiv", [count, copy.deepcopy(step)])
    if up and _zero(start):
        # from 0: every k below cdiv(stop, c) has k * c < stop, no guard; j read as (k * c) itself, so
        # that a loop over its step's elements inside (``foreach v in [4] { .. j + v .. }``) is a nest
        # over blocks of one range (schedule/flatnest.py)
        at_k = A.Paren(A.Binary("*", A.Name(k), copy.deepcopy(step)))
        inner = [_substituted(copy.deepcopy(s), j, at_k) for s in rest]
        loop = A.Foreach([A.Within(A.MdspanLit([extent]), name=k)], A.Block(inner))
        for n in (loop, loop.body, extent, at_k):
            n.span = span
        return loop
    decl = A.ScalarDecl("int", [A.Declarator(at, init=value)])
    loop = A.Foreach([A.Within(A.MdspanLit([extent]), name=k)], A.Block([decl, guard]))
    for n in (loop, decl, guard, guard.then, loop.body, value, extent):
        n.span = span
    return loop


def _const(e: A.Expr) -> int | None:
    """The value of an integer expression of literals (``-1``, ``(4 - 1)``), or None."""
    if isinstance(e, A.Paren):
        return _const(e.expr)
    if isinstance(e, A.IntLit):
        return e.value
    if isinstance(e, A.Unary) and e.op == "-":
        v = _const(e.operand)
        return None if v is None else -v
    if isinstance(e, A.Binary) and e.op in ("+", "-", "*"):
        a, b = _const(e.lhs), _const(e.rhs)
        if a is None or b is None:
            return None
        return a + b if e.op == "+" else a - b if e.op == "-" else a * b
    return None


def _shifted(e: A.Expr, sign: str, c: A.Expr) -> A.Expr:
    """``e + c`` (``e - c``) as an expression: folded where both are literals, ``x - c + c`` as ``x``."""
    a, b = _const(e), _const(c)
    if a is not None and b is not None:
        v = a + b if sign == "+" else a - b
        out: A.Expr = A.IntLit(v, str(v)) if v >= 0 else A.Unary("-", A.IntLit(-v, str(-v)))
        return out
    inner = e.expr if isinstance(e, A.Paren) else e
    undo = "-" if sign == "+" else "+"
    if isinstance(inner, A.Binary) and inner.op == undo and b is not None and _const(inner.rhs) == b:
        return copy.deepcopy(inner.lhs)
    return A.Binary(sign, A.Paren(copy.deepcopy(e)), copy.deepcopy(c))


def _zero(e: A.Expr) -> bool:
    while isinstance(e, A.Paren):
        e = e.expr
    return isinstance(e, A.IntLit) and e.value == 0


def _substituted(s: A.Stmt, j: str, value: A.Expr) -> A.Stmt:
    """``s`` with every read of ``j`` (which nothing in the loop assigns) as a copy of ``value``."""

    def change(n: object) -> object | None:
        if isinstance(n, A.Name) and n.name == j:
            got = copy.deepcopy(value)
            got.span = n.span
            return got
        return None

    return A.rewrite(s, change)


def _conditions(cond: A.Expr) -> list[tuple[str, str, A.Expr]]:
    """``j < e`` / ``j <= e`` / ``j > e`` / ``j >= e`` (or flipped): each reading as (j, the comparison
    with j on the left, e); the counter is the one the body's last statement steps."""
    while isinstance(cond, A.Paren):
        cond = cond.expr
    if not isinstance(cond, A.Binary) or cond.op not in _FLIP:
        return []
    out = []
    if isinstance(cond.lhs, A.Name):
        out.append((cond.lhs.name, cond.op, cond.rhs))
    if isinstance(cond.rhs, A.Name):
        out.append((cond.rhs.name, _FLIP[cond.op], cond.lhs))
    return out


def _increment(s: A.Stmt, j: str) -> tuple[bool, A.Expr] | None:
    """``j += c`` / ``j = j + c`` / ``j = c + j``: (True, c); ``j -= c`` / ``j = j - c``: (False, c)."""
    if not (isinstance(s, A.AssignStmt) and len(s.items) == 1):
        return None
    a = s.items[0]
    if not (isinstance(a.target, A.Name) and a.target.name == j):
        return None
    if a.op in ("+", "-"):
        return a.op == "+", a.value
    v = a.value
    if a.op == "=" and isinstance(v, A.Binary) and v.op == "+":
        for x, y in ((v.lhs, v.rhs), (v.rhs, v.lhs)):
            if isinstance(x, A.Name) and x.name == j:
                return True, y
    minus = a.op == "=" and isinstance(v, A.Binary) and v.op == "-"
    if minus and isinstance(v.lhs, A.Name) and v.lhs.name == j:
        return False, v.rhs
    return None


def _assigned(nodes: list[A.Node]) -> set[str]:
    out = {n.target.name for n in nodes if isinstance(n, A.Assign) and isinstance(n.target, A.Name)}
    return out | {n.operand.name for n in nodes if isinstance(n, A.IncDec) and isinstance(n.operand, A.Name)}


def _int_counters(nodes: list[A.Node]) -> set[str]:
    """Names declared ``mutable int`` in the kernel and under no other type anywhere in it."""
    ints: set[str] = set()
    other: set[str] = set()
    for n in nodes:
        if isinstance(n, A.ScalarDecl):
            for d in n.items:
                (ints if n.mutable and n.type == "int" and not d.dims else other).add(d.name)
        elif isinstance(n, A.Within):
            other |= set(([n.name] if n.name else []) + (n.vars or []))
        elif isinstance(n, A.RangeItem):
            other |= {x for x in (n.name, n.alias) if x}
        elif isinstance(n, A.PBy):
            other |= set(([n.name] if n.name else []) + (n.vars or []))
    return ints - other


def _plain_set(s: A.Stmt, j: str) -> A.Expr | None:
    """The value of ``s`` where it is the plain ``j = e`` and ``e`` does not read ``j``."""
    if not (isinstance(s, A.AssignStmt) and len(s.items) == 1):
        return None
    a = s.items[0]
    if not (a.op == "=" and isinstance(a.target, A.Name) and a.target.name == j):
        return None
    if any(isinstance(n, A.Name) and n.name == j for n in a.value.walk()):
        return None
    return a.value


def _declares(stmts: list[A.Stmt], j: str) -> bool:
    return any(isinstance(s, A.ScalarDecl) and any(d.name == j for d in s.items) for s in stmts)


def _dead_after(after: list[A.Stmt], j: str, scoped: bool) -> bool:
    """Whether ``j``'s value where the loop ends is never read: the first statement of ``after`` that
    names ``j`` sets it afresh (``j = e``, ``e`` not reading ``j``), or none names it and ``j``'s scope
    ends with the list (``scoped``: declared in it)."""
    for s in after:
        if any(isinstance(n, A.Name) and n.name == j for n in s.walk()):
            return _plain_set(s, j) is not None
    return scoped


def _start(before: list[A.Stmt], j: str, int_counter: bool) -> A.Expr | None:
    """The initial value of the ``mutable int j`` declared in ``before``, where nothing after the
    declaration in ``before`` assigns ``j``; or of the last plain ``j = j0`` of ``before`` (``j0`` not
    reading ``j``) where ``int_counter`` (``j`` is a ``mutable int`` of the kernel's only) and nothing
    after it in ``before`` assigns ``j``."""
    for i in range(len(before) - 1, -1, -1):
        s = before[i]
        later = [n for x in before[i + 1 :] for n in x.walk()]
        value = _plain_set(s, j)
        if value is not None:
            return value if int_counter and j not in _assigned(later) else None
        if isinstance(s, A.ScalarDecl):
            for d in s.items:
                if d.name == j:
                    ok = s.mutable and s.type == "int" and d.init is not None and not d.dims
                    return d.init if ok and j not in _assigned(later) else None
    return None


def _never_negative(e: A.Expr, indices: set[str]) -> bool:
    if isinstance(e, A.Paren):
        return _never_negative(e.expr, indices)
    if isinstance(e, A.IntLit):
        return e.value >= 0
    if isinstance(e, A.Name):
        return e.name in indices
    if isinstance(e, A.Binary) and e.op in ("+", "*", "#"):
        return _never_negative(e.lhs, indices) and _never_negative(e.rhs, indices)
    return False


def _positive(e: A.Expr, indices: set[str], extents: set[str]) -> bool:
    """Whether the step ``e`` is positive wherever the loop runs: a positive literal, a parallel level's
    extent (``t += nblocks`` in ``parallel blk by nblocks``: no block runs where it is not), ``#p`` of
    a parallel index, or a product of them (a grid stride ``#b * #t``)."""
    if isinstance(e, A.Paren):
        return _positive(e.expr, indices, extents)
    if isinstance(e, A.IntLit):
        return e.value > 0
    if isinstance(e, A.Name):
        return e.name in extents
    if isinstance(e, A.UBound):
        return e.name in indices
    if isinstance(e, A.Binary) and e.op == "*":
        return _positive(e.lhs, indices, extents) and _positive(e.rhs, indices, extents)
    return False


def _stable(e: A.Expr, mutated: set[str]) -> bool:
    """``e`` has the same value wherever the loop reads it: integer literals and names nothing
    assigns, under ``+ - * / #`` and parentheses."""
    if isinstance(e, A.Paren):
        return _stable(e.expr, mutated)
    if isinstance(e, A.IntLit):
        return True
    if isinstance(e, A.Name):
        return e.name not in mutated
    if isinstance(e, A.Binary) and e.op in ("+", "-", "*", "/", "#"):
        return _stable(e.lhs, mutated) and _stable(e.rhs, mutated)
    return False


def _renamed(s: A.Stmt, old: str, new: str) -> A.Stmt:
    for n in s.walk():
        if isinstance(n, A.Name) and n.name == old:
            n.name = new
    return s
