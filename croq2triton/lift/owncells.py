"""Elements of a shared buffer each only its own thread touches, as that thread's scalars.

Code ported from CUDA keeps a per-thread accumulator in shared memory::

    shared f32 [32, 32] cs;
    parallel {i, j} by [32, 32] : thread {
      cs.at(i, j) = 0.0f;
      foreach k in [K] cs.at(i, j) += a.at(bm # i, k) * b.at(bn # j, k);
      out.at(bm # i, bn # j) = cs.at(i, j);
    }

Where every use of a shared buffer in the kernel is ``cs.at(i, j, ..)`` with one and the same index,
made of distinct indices of one ``: thread`` parallel (none of them bound again inside it), each
thread reads and writes only its own element, which no other thread reaches: the element is that
thread's private value (LANGUAGE.md 7.5: ``shared`` is visible to the block, but nothing else looks).
Where, moreover, the first statement of that parallel's body to name the buffer is a plain
assignment ``cs.at(i, j) = e;`` standing directly in the body (not in a loop or a branch, ``e`` not
reading the buffer), every later read sees what this instance of the parallel wrote: the element is
``mutable T cs_own = e;`` there and ``cs_own`` after (the buffer's element type ``T``).  A buffer with
any other use (copied, viewed, an MMA's, another index, read before that assignment) stays as
written.

Used as a second try of the contraction analysis under ``--schedule auto`` (emit/kernels.py): what
the contraction proves of the rewritten kernel is what the kernel as written computes.
"""

from __future__ import annotations

import copy

from ..frontend import ast as A
from ..frontend.printer import Printer


def own_cells(top: A.Parallel) -> A.Parallel | None:
    """``top`` with each shared buffer used only as its threads' own elements (above) as scalars, or
    None where there is none."""
    decls: dict[str, tuple[A.SpannedDecl, A.Declarator]] = {}
    for n in top.walk():
        if isinstance(n, A.SpannedDecl):
            for d in n.items:
                if d.name in decls:
                    decls[d.name] = (n, d)  # declared twice: refused below
                    decls.pop(d.name)
                    continue
                if n.storage == "shared" and n.shape and d.init is None and d.fill is None and not d.dims:
                    decls[d.name] = (n, d)
    names = {n.name for n in top.walk() if isinstance(n, A.Name)}
    found: dict[str, tuple[A.Parallel, str, str, str]] = {}
    for name, (decl, _) in decls.items():
        hit = _owned(top, name)
        if hit is None:
            continue
        par, key = hit
        own = f"{name}_own"
        while own in names:
            own += "_"
        names.add(own)
        found[name] = (par, key, own, decl.elem)
    if not found:
        return None
    top = copy.deepcopy(top)
    done = []
    for name, (_, key, own, elem) in found.items():
        par = _parallel_using(top, name)
        if par is None or not _declare(par, name, key, own, elem):
            continue
        done.append(name)

        def use(x: object, name: str = name, key: str = key, own: str = own) -> A.Node | None:
            if isinstance(x, A.At) and _is(x.base, name) and _key(x) == key:
                return A.Name(own, span=x.span)
            return None

        A.rewrite(par.body, use)
    return top if done else None


def _is(e: A.Expr, name: str) -> bool:
    e = A.unparen(e)
    return isinstance(e, A.Name) and e.name == name


def _key(at: A.At) -> str | None:
    try:
        return ", ".join(Printer().expr(i) for i in at.indices)
    except NotImplementedError:
        return None


def _owned(top: A.Parallel, name: str) -> tuple[A.Parallel, str] | None:
    """The ``: thread`` parallel in which every use of ``name`` is ``name.at(i, j, ..)`` at one
    index of its distinct thread indices, and that index; None otherwise."""
    uses = [n for n in top.walk() if isinstance(n, A.Name) and n.name == name]
    ats = [n for n in top.walk() if isinstance(n, A.At) and _is(n.base, name)]
    if not ats or len(ats) != len(uses):
        return None  # a use that is not an element (copied, viewed, an operand)
    par = _parallel_using(top, name)
    if par is None or len(par.levels) != 1 or par.levels[0].level != "thread":
        return None
    inside = {id(n) for n in par.body.walk()}
    if any(id(a) not in inside for a in ats):
        return None
    keys = {_key(a) for a in ats}
    if len(keys) != 1 or None in keys:
        return None
    idx = ats[0].indices
    own = par.levels[0].names
    got = [A.unparen(i).name if isinstance(A.unparen(i), A.Name) else None for i in idx]  # type: ignore[attr-defined]
    if any(g is None or g not in own for g in got) or len(set(got)) != len(got):
        return None
    if _rebinds(par.body, set(got)):  # type: ignore[arg-type]
        return None
    key = next(iter(keys))
    assert key is not None
    return par, key


def _parallel_using(top: A.Parallel, name: str) -> A.Parallel | None:
    """The innermost parallel of ``top`` holding every use of ``name`` (None: no single one)."""
    best = None
    for p in top.walk():
        if isinstance(p, A.Parallel) and p is not top:
            inner = [n for n in p.body.walk() if isinstance(n, A.Name) and n.name == name]
            total = [n for n in top.walk() if isinstance(n, A.Name) and n.name == name]
            if inner and len(inner) == len(total):
                best = p
    return best


def _rebinds(body: A.Stmt, names: set[str]) -> bool:
    for n in body.walk():
        if isinstance(n, A.ScalarDecl) and any(d.name in names for d in n.items):
            return True
        if isinstance(n, A.Within) and ({n.name} | set(n.vars or [])) & names:
            return True
        if isinstance(n, A.Parallel) and any(set(b.names) & names for b in n.levels):
            return True
        if isinstance(n, A.Apply) and set(n.vars) & names:
            return True
        if isinstance(n, A.Assign) and isinstance(A.unparen(n.target), A.Name) and A.unparen(n.target).name in names:  # type: ignore[attr-defined]
            return True
        if isinstance(n, A.RangeItem) and ({n.name, n.alias} & names):
            return True
    return False


def _declare(par: A.Parallel, name: str, key: str, own: str, elem: str) -> bool:
    """The first statement of ``par``'s body naming ``name``, if a plain ``name.at(key) = e;`` there
    (``e`` not naming it), made the declaration ``mutable elem own = e;``."""
    body = par.body
    stmts = body.stmts if isinstance(body, A.Block) else None
    if stmts is None:
        return False
    for i, s in enumerate(stmts):
        if not any(isinstance(n, A.Name) and n.name == name for n in s.walk()):
            continue
        if not (isinstance(s, A.AssignStmt) and len(s.items) == 1):
            return False
        a = s.items[0]
        t = A.unparen(a.target)
        if a.op != "=" or not (isinstance(t, A.At) and _is(t.base, name) and _key(t) == key):
            return False
        if any(isinstance(n, A.Name) and n.name == name for n in a.value.walk()):
            return False
        stmts[i] = A.ScalarDecl(elem, [A.Declarator(own, init=a.value, span=a.span)], mutable=True, span=s.span)
        return True
    return False
