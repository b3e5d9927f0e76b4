"""A thread's loop over independent steps run as more lanes (``--schedule auto``).

CUDA code makes each thread do several elements with a loop over a few steps (thread coarsening:
the transpose of a 32 x 32 tile by 32 x 8 threads, each thread four rows ``ty + k * 8``).  Lifted
as written, the loop stays a loop: each step moves one element a lane, and a shared buffer that a
step writes at ``ty + k * 8`` is not at any lane's own position, so it lives in scratch memory
(lift/placement.py).  The steps of one thread are as independent as its threads are where the
IR-free conditions below hold on the source, and then they are lanes too: the thread level ``{ty,
tx} by [8, 32]`` with the loop ``foreach k in [4]`` becomes ``{u, tx} by [32, 32]`` with ``ty = u %
8`` and ``k = u / 8`` (one lane for each pair: ``u = ty + 8 k``), and sums that hold ``ty`` and ``8
k`` with one coefficient are written ``u`` again, so ``tile.at(ty + k * 8, tx)`` is the lane's own
element ``tile.at(u, tx)``.

What the rewrite needs of the source (else the level stays as written):

* the thread level is one ``parallel`` of constant extents whose whole body is one ``foreach`` of
  one index over a constant extent;
* the loop's body only declares scalars, assigns them and elements, and branches, its expressions
  arithmetic and math builtins (no copy, MMA, call, atomic, print, barrier, event, nested loop or
  ``parallel``, no ``break`` / ``yield``): a step is then a function of its thread and its index;
* it assigns no name declared outside it (no state carried from one step to the next), assigns
  elements with ``=`` only, and reads nothing it assigns an element of (a step cannot see
  another's writes);
* each element it assigns is at an index with a dimension that is the new lane plus terms free of
  it (so the steps of one thread, at different ``u``, write different elements);
* at least one element access becomes a lane's own position (else there is nothing to gain).

The order of one thread's steps is then unobservable: each writes elements no other step of its
thread writes or reads.  Different threads writing one element race in the source as they race
here.
"""

from __future__ import annotations

import copy

from ..frontend import ast as A
from ..sema.consteval import const_int

Term = tuple[int, A.Expr | None]  # (coefficient, factor: None for a constant)


def lanes_from_steps(top: A.Parallel) -> A.Parallel | None:
    """``top`` with every thread level whose body is a loop over independent steps merged with that
    loop (module docstring); None where there is none."""
    taken = {n.name for n in top.walk() if isinstance(n, A.Name)}
    taken |= {v for n in top.walk() if isinstance(n, A.PBy) for v in n.names}
    # (_merged builds its result from copies: asked on the kernel as it is first, the kernel is
    # copied only where some level merges -- every kernel under auto asks)
    if not any(_merged(n, set(taken)) is not None for n in top.walk() if isinstance(n, A.Parallel) and n is not top):
        return None
    new = copy.deepcopy(top)
    changed = False

    def change(n: object) -> object | None:
        nonlocal changed
        if isinstance(n, A.Parallel) and n is not new:
            got = _merged(n, taken)
            if got is not None:
                changed = True
                return got
        return None

    new = A.rewrite(new, change)
    return new if changed else None


def _merged(par: A.Parallel, taken: set[str]) -> A.Parallel | None:
    if len(par.levels) != 1 or par.levels[0].level != "thread" or par.attrs or par.is_async:
        return None
    level = par.levels[0]
    names, extents = level.names, [const_int(b) for b in level.bound]
    if not names or len(names) != len(extents) or any(e is None or e < 1 for e in extents):
        return None
    stmts = par.body.stmts if isinstance(par.body, A.Block) else [par.body]
    if len(stmts) != 1 or not isinstance(stmts[0], A.Foreach):
        return None
    loop = stmts[0]
    if loop.suffixes or len(loop.items) != 1 or not isinstance(loop.items[0], A.Within):
        return None
    within = loop.items[0]
    shape = within.shape
    if within.vars or within.name is None or not isinstance(shape, A.MdspanLit) or len(shape.items) != 1:
        return None
    steps = const_int(shape.items[0])
    if steps is None or steps < 2 or not _independent(loop.body):
        return None
    best: tuple[int, A.Parallel] | None = None
    for j, (lane, extent) in enumerate(zip(names, extents, strict=True)):
        assert extent is not None
        if _bounded_uses(loop.body, {lane, within.name}):
            continue
        merged = f"{lane}_{within.name}"
        while merged in taken:
            merged += "_"
        body = _substituted(loop.body, lane, within.name, merged, extent)
        if not _distinct_writes(body, merged):
            continue
        own = _own_positions(body, set(names) - {lane} | {merged})
        if own and (best is None or own > best[0]):
            bound = list(level.bound)
            bound[j] = A.IntLit(value=steps * extent, text=str(steps * extent), span=level.bound[j].span)
            vars_ = list(names)
            vars_[j] = merged
            pby = A.PBy(bound=bound, vars=vars_, level="thread", bracketed=True, span=level.span)
            best = (own, A.Parallel(levels=[pby], body=body, span=par.span))
    if best is None:
        return None
    taken.update(best[1].levels[0].names)
    return best[1]


ALLOWED = (A.ScalarDecl, A.AssignStmt, A.If, A.Block, A.Empty)


def _independent(body: A.Stmt) -> bool:
    """The loop body's statements are of the kinds a step of a thread may run as a lane, it carries
    no state between steps and reads no element it assigns (module docstring)."""
    declared: set[str] = set()
    written: set[str] = set()
    for n in body.walk():
        if isinstance(n, A.Stmt) and not isinstance(n, ALLOWED):
            return False
        if isinstance(n, (A.IncDec, A.Call)):  # an atomic, a helper, a print: effects of their own
            return False
        if isinstance(n, A.ScalarDecl):
            declared.update(d.name for d in n.items)
    for n in body.walk():
        if isinstance(n, A.AssignStmt):
            for item in n.items:
                target = item.target
                if isinstance(target, A.Name):
                    if target.name not in declared:
                        return False
                elif isinstance(target, A.At) and isinstance(target.base, A.Name) and item.op == "=":
                    written.add(target.base.name)
                else:
                    return False
    targets = {
        id(item.target) for n in body.walk() if isinstance(n, A.AssignStmt) for item in n.items
    }  # the assigned elements themselves are not reads
    for n in body.walk():
        if isinstance(n, A.At) and id(n) not in targets and isinstance(n.base, A.Name) and n.base.name in written:
            return False
    return True


def _substituted(body: A.Stmt, lane: str, step: str, merged: str, extent: int) -> A.Stmt:
    """``body`` with ``lane`` as ``merged % extent`` and ``step`` as ``merged / extent``, sums
    simplified where the two come together (``lane + extent * step`` is ``merged``)."""
    out = copy.deepcopy(body)

    def put(n: object) -> object | None:
        if isinstance(n, A.Name) and n.name in (lane, step):
            op = "%" if n.name == lane else "/"
            return A.Binary(op=op, lhs=A.Name(name=merged, span=n.span), rhs=_int(extent, n), span=n.span)
        return None

    out = A.rewrite(out, put)

    def simplify(n: object) -> object | None:
        return _joined(n, merged, extent) if isinstance(n, A.Binary) and n.op in "+-" else None

    return A.rewrite(out, simplify)  # type: ignore[no-any-return]


def _int(v: int, near: A.Node) -> A.IntLit:
    return A.IntLit(value=v, text=str(v), span=near.span)


def _terms(e: A.Expr, sign: int = 1) -> list[Term] | None:
    """``e`` as a signed sum of (coefficient, factor) terms; None where it is not a sum of products
    of an integer constant and one factor."""
    if isinstance(e, A.Binary) and e.op in "+-":
        left, right = _terms(e.lhs, sign), _terms(e.rhs, sign if e.op == "+" else -sign)
        return None if left is None or right is None else left + right
    if isinstance(e, A.IntLit):
        return [(sign * e.value, None)]
    if isinstance(e, A.Binary) and e.op == "*":
        for c, f in ((e.rhs, e.lhs), (e.lhs, e.rhs)):
            if isinstance(c, A.IntLit):
                return [(sign * c.value, f)]
    return [(sign, e)]


def _joined(e: A.Binary, merged: str, extent: int) -> A.Expr | None:
    """The sum ``e`` with ``a * (m % n) + a * n * (m / n)`` written ``a * m``; None where no such
    pair is in it."""
    terms = _terms(e)
    if terms is None:
        return None
    mod = [i for i, (_, f) in enumerate(terms) if _is(f, "%", merged, extent)]
    div = [i for i, (_, f) in enumerate(terms) if _is(f, "/", merged, extent)]
    for i in mod:
        for j in div:
            if terms[j][0] == terms[i][0] * extent:
                a = terms[i][0]
                joined: list[Term] = []  # the lane where the first of the two stood
                for k, t in enumerate(terms):
                    if k == min(i, j):
                        joined.append((a, A.Name(name=merged, span=e.span)))
                    elif k != max(i, j):
                        joined.append(t)
                return _sum(joined, e)
    return None


def _is(f: A.Expr | None, op: str, merged: str, extent: int) -> bool:
    return (
        isinstance(f, A.Binary)
        and f.op == op
        and isinstance(f.lhs, A.Name)
        and f.lhs.name == merged
        and isinstance(f.rhs, A.IntLit)
        and f.rhs.value == extent
    )


def _sum(terms: list[Term], near: A.Node) -> A.Expr:
    out: A.Expr | None = None
    for coef, factor in terms:
        if factor is None:
            term: A.Expr = _int(abs(coef), near)
        elif abs(coef) == 1:
            term = factor
        else:
            term = A.Binary(op="*", lhs=factor, rhs=_int(abs(coef), near), span=near.span)
        if out is None:
            out = term if coef >= 0 else A.Binary(op="-", lhs=_int(0, near), rhs=term, span=near.span)
        else:
            out = A.Binary(op="+" if coef >= 0 else "-", lhs=out, rhs=term, span=near.span)
    return out if out is not None else _int(0, near)


def _locals(body: A.Stmt) -> dict[str, A.Expr]:
    """The scalars the body declares once with a value and never assigns: their values."""
    values: dict[str, A.Expr] = {}
    assigned: set[str] = set()
    for n in body.walk():
        if isinstance(n, A.ScalarDecl) and not n.mutable:
            for d in n.items:
                if d.init is not None and not d.dims:
                    values[d.name] = d.init
        if isinstance(n, A.AssignStmt):
            assigned.update(i.target.name for i in n.items if isinstance(i.target, A.Name))
    return {k: v for k, v in values.items() if k not in assigned}


def _inlined(e: A.Expr, values: dict[str, A.Expr]) -> A.Expr:
    for _ in range(8):
        if not any(isinstance(n, A.Name) and n.name in values for n in e.walk()):
            return e
        e = A.rewrite(
            copy.deepcopy(e),
            lambda n: copy.deepcopy(values[n.name]) if isinstance(n, A.Name) and n.name in values else None,
        )
    return e


def _distinct_writes(body: A.Stmt, merged: str) -> bool:
    """Every element the body assigns is at an index with a dimension ``c * merged + terms free
    of it`` (c not 0): one thread's steps write different elements."""
    values = _locals(body)
    for n in body.walk():
        if not isinstance(n, A.AssignStmt):
            continue
        for item in n.items:
            if not isinstance(item.target, A.At):
                continue
            if not any(_linear_in(_inlined(i, values), merged) for i in item.target.indices):
                return False
    return True


def _linear_in(e: A.Expr, merged: str) -> bool:
    terms = _terms(e)
    if terms is None:
        return False
    hits = [
        (c, f) for c, f in terms if f is not None and any(isinstance(x, A.Name) and x.name == merged for x in f.walk())
    ]
    return len(hits) == 1 and isinstance(hits[0][1], A.Name) and hits[0][0] != 0


def _own_positions(body: A.Stmt, lanes: set[str]) -> int:
    """How many element accesses index with lane names alone (a lane's own position)."""
    return sum(
        1
        for n in body.walk()
        if isinstance(n, A.At) and n.indices and all(isinstance(i, A.Name) and i.name in lanes for i in n.indices)
    )


def _bounded_uses(body: A.Stmt, names: set[str]) -> bool:
    """Whether the body uses one of ``names`` as a bounded index (``#ty``, ``by_ # ty``), which a
    lane computed from the merged one is not."""
    for n in body.walk():
        if isinstance(n, A.UBound) and n.name in names:
            return True
        composed = isinstance(n, A.Binary) and n.op == "#"
        if composed and any(isinstance(x, A.Name) and x.name in names for x in (n.lhs, n.rhs)):  # type: ignore[attr-defined]
            return True
    return False
