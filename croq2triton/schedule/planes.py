"""Two nested loops over two axes that memory holds as one run, as one loop over the run.

A thread's reduction over the trailing axes of a tensor (the mean of a ``[B, C, H, W]`` tensor over
its plane, written ``foreach {h, w} in [H, W]``, LANGUAGE.md 7.4: two nested loops) folds only its
inner loop (schedule/foldloops.py): each ``h`` is a step of ``[lanes, W]`` tiles, short where ``W`` is
small.  Where a torch tensor's axes ``p`` and ``q`` satisfy ``stride(p) == size(q) * stride(q)`` (any
contiguous tensor: torch's rule for viewing two dimensions as one), its elements at ``(.., a, .., b,
..)`` are those of one axis of ``size(p) * size(q)`` elements at ``a * size(q) + b``.  A nest whose
every access reads (or writes) axis ``q`` of its tensor with the inner counter, all of it, and axis
``p`` with the outer counter then visits that merged axis in order, each element once: the nest is
one loop over ``u = (o - o0) * size(q) + (i - i0)``, which folds like a row.

What it proves on the IR (else the nest stays as written):

* the outer loop's body is the inner loop, after lets at most (moved into the inner body: the same
  values at each of its steps); both step by 1 from bounds that are the same for
  every lane, the inner one's do not read the outer counter, and neither states a pipeline;
* the inner body is lets, assignments, loads and stores; the counters are read, after the lets
  that read them are put in, only by the indices of loads and stores into tensors, and by the terms
  of masks;
* in each access that reads a counter: axis ``q`` is ``i - i0`` with ``i1 - i0`` the size of ``q``
  (the inner loop walks all of it, from its first element), axis ``p`` is ``r + o`` (``r`` free of
  both counters), and no other axis reads either counter.  Its index becomes ``(r + o0) * size(q) +
  u`` on the merged axis of a second pointer argument to the same tensor (the two axes one, the
  stride of ``q``): ``(r + o) * size(q) + (i - i0)`` with ``i - i0`` in ``[0, size(q))``;
* a mask term that reads the inner counter holds at both ends of its range (``w < W``, ``w >= 0``);
  it is dropped.  A term ``L(o) < R`` (or ``<=``, ``>``, ``>=``) with the outer counter in one
  side, coefficient 1, holds exactly where ``L(o) * n + (i - i0) < R * n`` does (``n = i1 - i0 > 0``,
  ``0 <= i - i0 < n``), which is ``L(o0) * n + u < R * n``: the merged axis's bound, as the access's
  own mask term says it (``offs < C`` becomes ``(g * cg) * HW + u < C * HW``).

The same merged axis serves an index split by hand: an access at ``(.., e / n, .., e % n, ..)`` with
``n`` the size of the second axis and ``e`` never negative (a loop over ``H * W`` reading ``x.at(b, c, i /
W, i % W)``) reads element ``e`` of the merged axis, with no division an element.  Mask terms ``e / n >=
0`` and ``e / n < X`` are ``e >= 0`` and ``e < X * n`` there; ``e % n >= 0`` and ``e % n < n`` always hold.

The launcher runs the merged kernel where every such tensor's two axes are one run and the inner
extent is positive (:func:`merge_planes` returns that condition), else the kernel as written.  A
nest of three (``foreach {k, h, w}``) merges its inner two, then the outer with them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.verify import VerifyError, verify

ACCESSES = (N.Load, N.Store)
ORDERS = ("<", "<=", ">", ">=")
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


class _NotMerged(Exception):
    pass


@dataclass
class _Merges:
    """What the rewrite of one kernel adds: the merged pointers (by the pointer, outer and inner
    axis), and the stride equalities the launcher must see."""

    args: dict[str, N.Arg]
    taken: set[str]
    pointers: dict[tuple[str, int, int], N.Pointer] = field(default_factory=dict)
    conds: list[E.Expr] = field(default_factory=list)
    count: int = 0  # nests merged
    divisions: bool = False  # accesses at (e / n, e % n) merged

    def saved(self) -> tuple[dict[str, N.Arg], dict[tuple[str, int, int], N.Pointer], list[E.Expr]]:
        """What a rewrite that may fail adds to, as it is before it (:meth:`restore`)."""
        return dict(self.args), dict(self.pointers), list(self.conds)

    def restore(self, saved: tuple[dict[str, N.Arg], dict[tuple[str, int, int], N.Pointer], list[E.Expr]]) -> None:
        self.args, self.pointers, self.conds = saved


def merge_planes(kernel: N.Kernel) -> tuple[N.Kernel, E.Expr] | None:
    """``kernel`` with each nest the proof admits as one loop, and the launcher's condition for it (as
    the launcher computes it: :func:`host_condition`); None where no nest merges."""
    taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
    m = _Merges({a.name: a for a in kernel.args}, taken)
    body = N.map_loops(kernel.body, lambda s: _loop(s, m))
    body = _Divisions(m, body).run(body)
    if not m.count and not m.divisions:
        return None
    # each merged pointer beside its tensor's (before the constexprs, which the launcher passes by name)
    args: list[N.Arg] = []
    for a in kernel.args:
        args.append(a)
        if isinstance(a, N.Pointer):
            args += [x for x in m.pointers.values() if x.tensor == a.tensor]
    args = _used(args, body)
    said = [
        *(["its loop nests over two axes that memory holds as one run are one loop"] if m.count else []),
        *(
            ["its indices split by / and % over two axes that memory holds as one run are one index"]
            if m.divisions
            else []
        ),
    ]
    doc = kernel.doc + " " + "; ".join(said).capitalize() + " (schedule/planes.py)."
    cond = host_condition(kernel, E.conj(m.conds))
    merged = dataclasses.replace(kernel, body=body, args=args, doc=doc)
    try:  # (a mask term the rewrite could not say of the merged index: the kernel as written)
        verify(merged)
    except VerifyError:
        return None
    return (merged, cond) if cond is not None else None


def _loop(s: N.For, m: _Merges) -> N.For:
    saved = m.saved()
    try:
        out = _merge(s, m)
    except _NotMerged:
        m.restore(saved)
        return s
    m.count += 1
    return out


def _merge(outer: N.For, m: _Merges) -> N.For:
    *lets, inner = outer.body or [None]
    if not isinstance(inner, N.For) or not all(isinstance(x, N.Let) for x in lets):
        raise _NotMerged
    if lets:  # (names the outer body gives before the inner loop: the same values at each inner step)
        if {v.var.name for v in lets} & (E.names(inner.start) | E.names(inner.stop) | {inner.var.name}):
            raise _NotMerged
        inner = dataclasses.replace(inner, body=[*lets, *inner.body])
    o, i = outer.var.name, inner.var.name
    for loop in (outer, inner):
        if not (isinstance(loop.step, E.Const) and loop.step.value == 1) or loop.pipeline is not None:
            raise _NotMerged
        if loop.start.shape or loop.stop.shape:
            raise _NotMerged
    if o in E.names(inner.start) | E.names(inner.stop):
        raise _NotMerged
    if not all(isinstance(s, (N.Let, N.Assign, *ACCESSES)) for s in inner.body):
        raise _NotMerged
    n = E.fold(E.Bin("-", inner.stop, inner.start))
    u = E.Var(N.fresh_name(f"{o}_{i}", m.taken), outer.var.dtype, lo=0)
    carried = {v.name for v in (*outer.carried, *inner.carried)}
    r = _Rewrite(o, i, outer.start, inner.start, inner.stop, n, u, m, carried)
    body = r.body(inner.body)
    stop = E.fold(E.Bin("*", E.Bin("-", outer.stop, outer.start), n))
    carried = tuple(dict.fromkeys([*outer.carried, *inner.carried]))
    return N.For(u, E.Const(0), stop, E.Const(1), body, carried=carried, line=inner.line)


@dataclass
class _Rewrite:
    o: str  # the outer counter, from o0
    i: str  # the inner counter, from i0 to i1
    o0: E.Expr
    i0: E.Expr
    i1: E.Expr
    n: E.Expr  # i1 - i0
    u: E.Var  # the merged counter
    m: _Merges
    carried: set[str]  # the names the two loops carry past their end

    def body(self, stmts: list[N.Stmt]) -> list[N.Stmt]:
        # the lets that read a counter put in where they are read (offsets, masks' operands), then
        # dropped: only accesses and masks may read the counters
        lets: dict[str, E.Expr] = {}
        out: list[N.Stmt] = []
        for s in stmts:
            s = N.map_exprs(s, lambda e: E.resolve(e, lets))  # (a mask is a boolean let: never in lets)
            if isinstance(s, N.Let) and self.reads(s.value) and s.var.dtype != "i1":
                if s.var.name in self.carried:
                    raise _NotMerged  # (read after the loop: it stays a name)
                lets[s.var.name] = s.value
                continue
            out.append(self.stmt(s))
        for s in out:
            if any(self.reads(e) for e in N.exprs_of(s)):
                raise _NotMerged
            if any(v.name in lets for e in N.exprs_of(s) for v in E.free_vars(e)):
                raise _NotMerged  # (a counter's let read through a variable: a mask)
        return out

    def reads(self, e: E.Expr | None) -> bool:
        return bool(E.names(e) & {self.o, self.i})

    def stmt(self, s: N.Stmt) -> N.Stmt:
        if isinstance(s, N.Let) and self.reads(s.value):
            return dataclasses.replace(s, value=self.mask(s.value))
        if isinstance(s, (N.Load, N.Store)) and any(self.reads(x) for x in s.index):
            base, index = self.access(s.base, s.index)
            return dataclasses.replace(s, base=base, index=index)
        return s

    def access(self, base: str, index: tuple[E.Expr, ...]) -> tuple[str, tuple[E.Expr, ...]]:
        """The merged pointer and index of an access reading the counters."""
        arg = self.m.args.get(base)
        if not isinstance(arg, N.Pointer):
            raise _NotMerged  # (a scratch area's flat index: no axes to merge)
        p = q = -1
        for d, x in enumerate(index):
            found = E.linear(x, [self.o, self.i])
            if found is None:
                raise _NotMerged
            coefs, rest = found
            if not coefs:
                continue
            if coefs == {self.o: 1} and p < 0:
                p = d
            elif coefs == {self.i: 1} and q < 0 and E.same(E.Bin("+", rest, self.i0), E.Const(0)):
                q = d
            else:
                raise _NotMerged
        if p < 0 or q < 0 or not E.same(self.n, arg.extents[q]):
            raise _NotMerged
        stride_p, stride_q = arg.strides[p], arg.strides[q]
        if not all(isinstance(self.m.args.get(x), N.Stride) for x in (stride_p, stride_q)):
            raise _NotMerged
        name = _merged_pointer(self.m, base, arg, p, q, "i64" if "i64" in (index[p].dtype, index[q].dtype) else "i32")
        merged = self.merged(index[p])
        out = [x for d, x in enumerate(index) if d != p]
        out[q - (p < q)] = merged
        return name, tuple(out)

    def merged(self, outer: E.Expr) -> E.Expr:
        """``outer(o) * n + (i - i0)`` as the merged counter says it: ``outer(o0) * n + u``."""
        first = E.substitute(outer, {self.o: self.o0})
        return E.fold(E.Bin("+", E.Bin("*", first, self.n), self.u))

    def mask(self, e: E.Expr) -> E.Expr:
        """A boolean ``e`` over the merged counter: its terms that read the inner counter hold over
        its whole range (dropped), those that read the outer one are the merged axis's bounds."""
        kept: list[E.Expr] = []
        for t in E.conjuncts(e):
            if not self.reads(t):
                kept.append(t)
                continue
            if not (isinstance(t, E.Bin) and t.op in ORDERS):
                raise _NotMerged
            if E.names(t) >= {self.o, self.i}:
                raise _NotMerged
            if self.i in E.names(t):
                if not self.always(t):
                    raise _NotMerged
                continue
            kept.append(self.bound(t))
        return E.conj(kept)

    def always(self, t: E.Bin) -> bool:
        """Whether ``t`` (affine in the inner counter) holds at both ends of the inner range, so at
        every step (the loop runs at least once where it runs: ``i1 - i0 >= 1``)."""
        for end in (self.i0, E.Bin("-", self.i1, E.Const(1))):
            at = E.substitute(t, {self.i: end})
            if isinstance(at, E.Const):
                if at.value is True:
                    continue
                return False
            # L < R: R - L >= 1, known from the bounds or as at least the (positive) extent
            if not (isinstance(at, E.Bin) and at.op in ORDERS):
                return False
            lo, hi = (at.lhs, at.rhs) if at.op in ("<", "<=") else (at.rhs, at.lhs)
            least = 1 if at.op in ("<", ">") else 0
            gap = E.fold(E.Bin("-", hi, lo))
            if not (_at_least(gap, least) or _at_least(E.fold(E.Bin("-", gap, self.n)), least - 1)):
                return False
        return True

    def bound(self, t: E.Bin) -> E.Expr:
        """``L(o) op R`` as the merged axis's bound ``L(o0) * n + u op' R' * n``."""
        op, lhs, rhs = t.op, t.lhs, t.rhs
        if self.o not in E.names(lhs):
            op, lhs, rhs = FLIP[op], rhs, lhs
        found = E.linear(lhs, [self.o])
        if found is None or found[0] != {self.o: 1} or self.o in E.names(rhs):
            raise _NotMerged
        if op in ("<=", ">"):  # L <= R is L < R + 1; L > R is L >= R + 1 (integers)
            op, rhs = {"<=": "<", ">": ">="}[op], E.Bin("+", rhs, E.Const(1, rhs.dtype))
        return E.fold(E.Bin(op, self.merged(lhs), E.Bin("*", rhs, self.n)))


class _Divisions:
    """Accesses at ``(e / n, e % n)`` on two axes of a tensor (``n`` the second's size, ``e >= 0``) as
    element ``e`` of the merged axis, and the mask terms of those quotients and remainders said of ``e``."""

    def __init__(self, m: _Merges, body: list[N.Stmt]) -> None:
        self.m = m
        assigned = {s.var.name for s in N.walk(body) if isinstance(s, N.Assign)}
        # the lets an index or a mask reads, put in to see its quotients (none that reads a re-bound variable)
        bound = [s.var.name for s in N.walk(body) if isinstance(s, N.Let)]
        once = {x for x in bound if bound.count(x) == 1}  # (a name bound twice: its value depends on where)
        self.lets = {
            s.var.name: s.value
            for s in N.walk(body)
            if isinstance(s, N.Let) and s.var.name in once and E.is_int(s.var.type) and not E.names(s.value) & assigned
        }
        self.pairs: list[tuple[E.Expr, E.Expr]] = []  # (e, n) of the accesses merged

    def run(self, body: list[N.Stmt]) -> list[N.Stmt]:
        saved = self.m.saved()
        out = [self.stmt(s) for s in body]
        if not self.pairs:
            self.m.restore(saved)
            return body
        # (a quotient or remainder an access still reads keeps its mask terms: its bounds)
        left = {
            (x.op, x.lhs, x.rhs)
            for st in N.walk(out)
            if isinstance(st, (N.Load, N.Store, N.Atomic))
            for i in st.index
            for x in E.resolve(i, self.lets).walk()
            if isinstance(x, E.Bin) and x.op in ("/", "%")
        }
        self.pairs = [(e, n) for e, n in self.pairs if not any(E.same(a, e) and E.same(b, n) for _, a, b in left)]
        out = [self.masks(s) for s in out]
        self.m.divisions = True
        return out

    def stmt(self, s: N.Stmt) -> N.Stmt:
        if isinstance(s, (N.For, N.While)):
            return dataclasses.replace(s, body=[self.stmt(x) for x in s.body])
        if isinstance(s, N.If):
            return dataclasses.replace(s, then=[self.stmt(x) for x in s.then], orelse=[self.stmt(x) for x in s.orelse])
        if not isinstance(s, (N.Load, N.Store)):
            return s
        arg = self.m.args.get(s.base)
        if not isinstance(arg, N.Pointer):
            return s
        index = tuple(E.resolve(x, self.lets) for x in s.index)
        for p, x in enumerate(index):
            if not (isinstance(x, E.Bin) and x.op == "/" and E.is_int(x.dtype)):
                continue
            e, n = x.lhs, x.rhs
            q = next(
                (
                    d
                    for d, y in enumerate(index)
                    if isinstance(y, E.Bin) and y.op == "%" and E.same(y.lhs, e) and E.same(y.rhs, n)
                ),
                -1,
            )
            if q < 0 or not E.same(n, arg.extents[q]) or not _at_least(e, 0) or e.shape != x.shape:
                continue
            stride_p, stride_q = arg.strides[p], arg.strides[q]
            if not all(isinstance(self.m.args.get(v), N.Stride) for v in (stride_p, stride_q)):
                continue
            name = _merged_pointer(self.m, s.base, arg, p, q, index[p].dtype)
            out = [y for d, y in enumerate(s.index) if d != p]  # (the other axes as written)
            written = self.top(s.index[p])
            out[q - (p < q)] = written.lhs if isinstance(written, E.Bin) and written.op == "/" else e
            self.pairs.append((e, n))
            return dataclasses.replace(s, base=name, index=tuple(out))
        return s

    def top(self, x: E.Expr) -> E.Expr:
        """``x``, or the value of the let it names (one step: the names it reads kept)."""
        return self.lets.get(x.name, x) if isinstance(x, E.Var) else x

    def masks(self, s: N.Stmt) -> N.Stmt:
        if isinstance(s, (N.For, N.While)):
            return dataclasses.replace(s, body=[self.masks(x) for x in s.body])
        if isinstance(s, N.If):
            return dataclasses.replace(
                s, then=[self.masks(x) for x in s.then], orelse=[self.masks(x) for x in s.orelse]
            )
        if not (isinstance(s, N.Let) and s.var.type == "i1"):
            return s
        terms = E.conjuncts(s.value)
        said = [self.term(t) for t in terms]
        if all(a is t for a, t in zip(said, terms, strict=True)):
            return s
        return dataclasses.replace(s, value=E.conj(said))

    def term(self, written: E.Expr) -> E.Expr:
        """A mask term of a merged quotient or remainder said of ``e`` (else the term itself), in the
        names it is written with where it has the same form."""
        t = E.resolve(written, self.lets)
        if not (isinstance(t, E.Bin) and t.op in (">=", "<") and isinstance(t.lhs, E.Bin)):
            return written
        lhs = self.top(written.lhs) if isinstance(written, E.Bin) else None
        same_form = isinstance(lhs, E.Bin) and lhs.op == t.lhs.op
        e_, n_, rhs = (lhs.lhs, lhs.rhs, written.rhs) if same_form else (t.lhs.lhs, t.lhs.rhs, t.rhs)  # type: ignore[union-attr]
        for e, n in self.pairs:
            if not (E.same(t.lhs.lhs, e) and E.same(t.lhs.rhs, n)):
                continue
            if t.lhs.op == "/" and t.op == ">=" and E.same(t.rhs, E.Const(0)):
                return E.fold(E.Bin(">=", e_, E.Const(0, e.dtype)))
            if t.lhs.op == "/" and t.op == "<":
                return E.fold(E.Bin("<", e_, E.Bin("*", rhs, n_)))
            if t.lhs.op == "%" and (t.op == ">=" and E.same(t.rhs, E.Const(0)) or E.same(t.rhs, n)):
                return E.Const(True, "i1")
        return written


def _merged_pointer(m: _Merges, base: str, arg: N.Pointer, p: int, q: int, dtype: str) -> str:
    """The pointer to ``arg``'s tensor with axes ``p`` and ``q`` one axis (at ``q``'s place, of ``q``'s
    stride), made once, and the launcher's condition that they are one run."""
    key = (base, p, q)
    if key not in m.pointers:
        extents = list(arg.extents)
        extents[q] = E.fold(E.Bin("*", arg.extents[p], arg.extents[q]))
        strides = list(arg.strides)
        del extents[p], strides[p]
        name = N.fresh_name(f"{arg.tensor}_{len(extents)}d_ptr", m.taken)  # (x as 3-D: x_3d_ptr)
        m.pointers[key] = N.Pointer(name, arg.tensor, arg.dtype, tuple(extents), tuple(strides))
        m.args[name] = m.pointers[key]
        index_type = "i64" if dtype == "i64" else "i32"
        run = E.Bin("*", E.Var(arg.strides[q], index_type), arg.extents[q])
        m.conds.append(E.Bin("==", E.Var(arg.strides[p], index_type), run))
        m.conds.append(E.Bin(">", arg.extents[q], E.Const(0)))
    return m.pointers[key].name


def _used(args: list[N.Arg], body: list[N.Stmt]) -> list[N.Arg]:
    """``args`` without the pointers no access of ``body`` names any more (a merged one's tensor read
    only through the merged pointer) and the strides nothing reads."""
    based = {s.base for s in N.walk(body) if isinstance(s, (N.Load, N.Store, N.Atomic))}
    based |= {s.fallback.base for s in N.walk(body) if isinstance(s, N.TmaLoad)}
    based |= {s.fallback.base for s in N.walk(body) if isinstance(s, N.TmaStore)}
    kept = [a for a in args if not isinstance(a, N.Pointer) or a.name in based]
    read = {v.name for s in N.walk(body) for e in N.exprs_of(s) for v in E.free_vars(e)}
    read |= {x for a in kept if isinstance(a, N.Pointer) for x in a.strides}
    return [a for a in kept if not isinstance(a, N.Stride) or a.name in read]


def _at_least(x: E.Expr, least: int) -> bool:
    lo = E.bounds(x)[0]
    return lo is not None and lo >= least


def host_condition(kernel: N.Kernel, cond: E.Expr) -> E.Expr | None:
    """``cond``, an expression of ``kernel``'s stride and scalar arguments, as the launcher computes it
    (a stride as ``_rt.stride(tensor, dim)``); None where it reads anything else."""
    env: dict[str, E.Expr] = {}
    args = {a.name: a for a in kernel.args}
    for v in E.free_vars(cond):
        a = args.get(v.name)
        if isinstance(a, N.Scalar):
            env[v.name] = a.host
        elif isinstance(a, N.Stride):
            env[v.name] = E.Call("_rt.stride", (E.Var(a.tensor, "i64"), E.Const(a.dim)), "i64")
        else:
            return None
    return E.substitute(cond, env)
