"""Masks Triton can vectorise: guards on the contiguous axis rounded out on loads, complementary
stores merged into one.

Triton reads and writes 16 bytes a thread at once (``ld.global.v4.b32``) only where it proves an
access's mask the same over aligned groups of that many elements.  A bound ``j < N`` on the
contiguous axis passes (Triton specialises ``N`` divisible by 16 at launch); a guard that compares
the contiguous index with a lane's run-time value does not: a triangle's ``if (j <= r)``, a row's
own length ``j < len.at(r)``, a band ``j >= r - w``.  Every access under such a guard is compiled
element by element (a causal softmax written a thread per row: 16 scalar loads and 32 scalar
stores a thread where the same softmax without the guard has 4 and 4 vector ones, compiled for
sm_90a; it ran at 0.62-0.71 of the bandwidth roofline on the H100 against 0.97 without).

Two rewrites, under ``--schedule auto``, after every other pass:

* **Loads.** A guard term ``J op E`` of a load's mask, where ``J`` is the load's last index (the
  contiguous axis of a row-major tensor) and ``E`` an integer constant along ``J``'s lane axes that
  Triton cannot prove a multiple of the vector width (it reads a program id or a loaded value, not
  only the kernel's scalar arguments), is rounded out to the vector width ``v`` (16 bytes of the
  element): ``J < E`` becomes ``J < ceil_v(max(E, 0))``, ``J <= E`` ``J < ceil_v(max(E + 1, 0))``,
  ``J >= E`` ``J >= floor_v(max(E, 0))``, ``J > E`` ``J >= floor_v(max(E + 1, 0))``; ``J != E`` (a row
  but one element: a loss that skips the target's column) is left out.  The value
  loaded is then masked again with the exact mask (``tl.where(mask, loaded, other)``), so every
  lane holds what it held before.  Where the rounded edge is the old one (``j <= n - 1`` as ``j <
  n``; a window's ``p * 512 + 128``) the term is only rewritten, with no second mask.
  *Proof obligations* (checked here, else the load is left alone): every dimension's index keeps
  its bounds in the mask (``i >= 0`` unless ``i`` is non-negative by its range, ``i < extent``
  unless below it by its range), so the elements the rounded mask adds lie inside the tensor:
  reading them has no effect and their values are discarded.  For ``J >= 0`` the rounded terms
  admit a superset of what the exact ones admit (``max(E, 0)`` keeps the divisions on
  non-negative values, where C's truncation and the floor agree).
  A guard term that reads a loaded value varying along ``J``'s axes (a select's condition on
  another tensor's elements: ``m.at(i, j) != 0 ? -1e4 : x.at(i, j)``, whose branch reads ``x`` only
  where it is chosen, as C evaluates one branch) is left out of the load's mask the same way, under
  the same obligations: the load reads every element of its tile inside the tensor, and the exact
  mask selects what it keeps (a masked fill compiled 16 scalar loads a thread for ``x``, 4 vector
  ones without the condition's term, sm_90a).  Its lanes read elements the source skips: the
  16-byte groups of a scalar read are whole sectors of DRAM already where a quarter of the lanes
  or more are chosen; a very sparse condition reads more than it did.
  A load whose contiguous index holds a value loaded from memory (a segment's start: ``vals.at(lo +
  k)``, ``lo = ptr.at(r)``) is left alone: Triton proves no alignment of its address, so no mask makes
  it a vector load, and the rounded mask would only read past each segment's end.
* **Stores.** Two stores of the same tensor at the same index, with only lets and loads of other
  tensors between them, whose masks differ in one term and its complement (``if (c) y.at(i) = a;
  else y.at(i) = b;``) are one store of ``tl.where(c, a, b)`` under the common terms, where the
  second was: each lane writes what it wrote before (lanes writing one element twice are a race in
  the source already), and a load between them is of another tensor, so the store moved past it
  does not change what it reads.
"""

from __future__ import annotations

import dataclasses

from ..sema.types import TYPES
from ..tir import expr as E
from ..tir import nodes as N

VECTOR_BYTES = 16  # one 128-bit access a thread

_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def vector_masks(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with guarded loads rounded out and complementary stores merged (module doc);
    ``kernel`` itself where nothing applies."""
    rewrite = _Rewrite(kernel)
    body = rewrite.stmts(kernel.body, {})
    if not rewrite.changed:
        return kernel
    return dataclasses.replace(kernel, body=body)


class _Rewrite:
    def __init__(self, kernel: N.Kernel) -> None:
        self.pointers = {a.name: a for a in kernel.args if isinstance(a, N.Pointer)}
        self.scalars = {a.name for a in kernel.args if isinstance(a, N.Scalar)}
        self.taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
        self.taken |= {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Assign)}
        self.loaded = {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Load)}
        self.changed = False

    def stmts(self, body: list[N.Stmt], lets: dict[str, E.Expr]) -> list[N.Stmt]:
        lets = dict(lets)
        out: list[N.Stmt] = []
        for s in body:
            if isinstance(s, N.Let):
                lets[s.var.name] = s.value
            elif isinstance(s, N.Assign):
                lets.pop(s.var.name, None)
            if isinstance(s, (N.For, N.While)):
                s = dataclasses.replace(s, body=self.stmts(s.body, lets))
            elif isinstance(s, N.If):
                s = dataclasses.replace(s, then=self.stmts(s.then, lets), orelse=self.stmts(s.orelse, lets))
            elif isinstance(s, N.Load):
                rounded = self.load(s, lets)
                if rounded is not None:
                    out += rounded
                    self.changed = True
                    continue
            elif isinstance(s, N.Store):
                merged = self.merge(out, s, lets)
                if merged is not None:
                    out = merged
                    self.changed = True
                    continue
            out.append(s)
        return out

    # ---------------------------------------------------------------- loads

    def load(self, s: N.Load, lets: dict[str, E.Expr]) -> list[N.Stmt] | None:
        ptr = self.pointers.get(s.base)
        if ptr is None or s.mask is None or s.mask.name not in lets or not s.index:
            return None
        terms = E.conjuncts(lets[s.mask.name])
        bounds = _bound_terms(s.index, ptr.extents, terms)
        if bounds is None:
            return None
        last = s.index[-1]
        axes = [a for a, n in enumerate(last.shape) if n != 1]
        if not axes or _reads_loaded(last, lets, self.loaded):
            return None
        width = max(1, VECTOR_BYTES // (TYPES[ptr.dtype].nbytes if ptr.dtype in TYPES else 4))
        wide: list[E.Expr] = []
        exact = True
        for t in terms:
            if any(t is b for b in bounds):
                wide.append(t)
                continue
            r = self.rounded(t, last, axes, width)
            if r is None and _speculated(t, axes, len(last.shape), lets, self.loaded):
                exact = False  # (left out: the lanes it held are masked again below)
                continue
            wide.append(t if r is None else r[0])
            exact = exact and (r is None or r[1])
        if len(wide) == len(terms) and all(a is b for a, b in zip(wide, terms, strict=True)):
            return None
        line = s.line
        mask: E.Var | None = None
        head: list[N.Stmt] = []
        if wide:
            mask = E.Var(N.fresh_name(f"{s.mask.name}_vec", self.taken), "i1", dims=s.mask.shape)
            head.append(N.Let(mask, E.conj(wide), line=line))
        if exact:  # the same lanes, written as Triton proves them aligned
            return [*head, dataclasses.replace(s, mask=mask)]
        read = E.Var(N.fresh_name(f"{s.var.name}_vec", self.taken), s.var.type, dims=s.var.dims)
        other = E.Const(s.other if s.other is not None else 0, ptr.dtype)
        value: E.Expr = E.Where(s.mask, read, other)
        if s.nan_outside:  # the OOB sanitizer fills what the exact mask leaves out, as before
            value = E.Call("_oob_fill", (value, s.mask), s.var.type)
        return [
            *head,
            dataclasses.replace(s, var=read, mask=mask, nan_outside=False),
            N.Let(s.var, value, line=line),
        ]

    def rounded(self, t: E.Expr, last: E.Expr, axes: list[int], width: int) -> tuple[E.Expr, bool] | None:
        """Guard term ``t`` rounded out to ``width`` elements where it compares ``last`` with an
        integer constant along ``axes``, and whether the new term is exact (the same lanes: ``j <=
        n - 1`` as ``j < n``, an edge Triton proves aligned where the old one hid it); None where
        nothing changes."""
        t = _positive(t)
        if not (isinstance(t, E.Bin) and t.op in ("<", "<=", ">", ">=", "!=")):
            return None
        compared = _compared(t, last, axes)
        if compared is None:
            return None
        op, bound = compared
        if op == "!=":
            # j != e leaves out one element of the row: read it too (inside the tensor by the bounds the
            # mask keeps), masked again below (a loss that skips the target's column)
            return E.Const(True, "i1"), False
        lower = op in (">", ">=")
        if op in ("<=", ">"):  # j <= e as j < e + 1, j > e as j >= e + 1
            bound = E.fold(E.Bin("+", bound, E.Const(1)))
        exact = E.Bin(">=" if lower else "<", last, bound)
        if all(v.name in self.scalars for v in E.free_vars(bound)):
            # constants and scalar arguments: Triton specialises their divisibility at launch
            return (exact, True) if op in ("<=", ">") else None
        w = E.Const(width)
        kept = E.Bin("max", bound, E.Const(0))
        if lower:  # j >= floor(e)
            edge = E.fold(E.Bin("*", E.Bin("/", kept, w), w))
        else:  # j < ceil(e)
            edge = E.fold(E.Bin("*", E.Bin("/", E.Bin("+", kept, E.Const(width - 1)), w), w))
        if E.same(edge, bound):  # a multiple of the width already (``p * 512 + 128``)
            return (exact, True) if op in ("<=", ">") else None
        return E.Bin(">=" if lower else "<", last, edge), False

    # ---------------------------------------------------------------- stores

    def merge(self, out: list[N.Stmt], s: N.Store, lets: dict[str, E.Expr]) -> list[N.Stmt] | None:
        """``out`` with its last store of ``s``'s element under the complementary guard (only lets and
        loads of other tensors after it) replaced by one store of both, and ``s`` merged into it; None
        where there is none."""
        k = len(out) - 1
        while k >= 0 and (isinstance(out[k], N.Let) or (isinstance(out[k], N.Load) and out[k].base != s.base)):
            k -= 1
        if k < 0 or s.mask is None:
            return None
        first = out[k]
        if not (isinstance(first, N.Store) and first.base == s.base and first.mask is not None):
            return None
        if len(first.index) != len(s.index) or not all(E.same(a, b) for a, b in zip(first.index, s.index, strict=True)):
            return None
        if first.mask.name not in lets or s.mask.name not in lets:
            return None
        a_terms, b_terms = E.conjuncts(lets[first.mask.name]), E.conjuncts(lets[s.mask.name])
        split = _complementary(a_terms, b_terms)
        if split is None:
            return None
        cond, common = split
        value = E.Where(cond, first.value, s.value)
        merged: list[N.Stmt] = []
        mask: E.Var | None = None
        if common:
            mask = E.Var(N.fresh_name(f"{s.mask.name}_both", self.taken), "i1", dims=E.conj(common).shape)
            merged.append(N.Let(mask, E.conj(common), line=s.line))
        merged.append(dataclasses.replace(s, value=value, mask=mask, line=first.line))
        return out[:k] + out[k + 1 :] + merged


def _compared(t: E.Bin, last: E.Expr, axes: list[int]) -> tuple[str, E.Expr] | None:
    """``t`` as ``last op bound`` where it compares ``last`` with an integer that is the same along
    ``axes`` (not varying along the contiguous axis itself); None otherwise."""
    if E.same(t.lhs, last):
        op, bound = t.op, t.rhs
    elif E.same(t.rhs, last):
        op, bound = _FLIPPED[t.op], t.lhs
    else:
        return None
    if not E.is_int(bound.dtype) or bound.dtype == "i1":
        return None
    shape = (1,) * (len(last.shape) - len(bound.shape)) + tuple(bound.shape)
    if len(shape) != len(last.shape) or any(shape[a] != 1 for a in axes):
        return None
    return op, bound


def _reads_loaded(index: E.Expr, lets: dict[str, E.Expr], loaded: set[str]) -> bool:
    """Whether the contiguous index ``index`` of a load adds a value loaded from memory as a term of its
    own (a segment's start, ``vals.at(lo + k)`` with ``lo = ptr.at(r)``; through sums, differences,
    casts and placements, not through a product: ``ids.at(b) * D + j`` is aligned where ``D`` is): Triton
    proves no alignment of such an address, so it reads the load element by element whatever its mask,
    and rounding out or leaving out a guard would only read elements the source skips (up to a whole step
    past each segment's end, every step of a loop that runs to the longest of a program's segments)."""
    seen: set[str] = set()

    def additive(e: E.Expr) -> bool:
        if isinstance(e, E.Var):
            if e.name in loaded:
                return True
            if e.name in lets and e.name not in seen:
                seen.add(e.name)
                return additive(lets[e.name])
            return False
        if isinstance(e, E.Bin) and e.op in ("+", "-"):
            return additive(e.lhs) or additive(e.rhs)
        if isinstance(e, (E.Cast, E.Lift)):
            return additive(e.value)
        return False

    return additive(index)


def _speculated(t: E.Expr, axes: list[int], rank: int, lets: dict[str, E.Expr], loaded: set[str]) -> bool:
    """Whether guard term ``t`` of a load is left out of its mask (the load reads anyway, its value
    masked again after): ``t`` reads a loaded value that varies along the contiguous axis (a select's
    condition on another tensor's elements, ``m.at(i, j) != 0 ? -1e4 : x.at(i, j)``), so it differs
    from lane to lane along the axis and Triton compiles the load element by element."""
    seen: set[str] = set()
    todo = list(E.free_vars(t))
    while todo:
        v = todo.pop()
        if v.name in seen:
            continue
        seen.add(v.name)
        if v.name in lets:
            todo += E.free_vars(lets[v.name])
        elif v.name in loaded:
            shape = (1,) * (rank - len(v.shape)) + tuple(v.shape)
            if len(shape) == rank and any(shape[a] != 1 for a in axes):
                return True
    return False


def _positive(t: E.Expr) -> E.Expr:
    """``!(a < b)`` of integers as ``a >= b`` (no NaN makes both false); anything else as it is."""
    if isinstance(t, E.Un) and t.op == "!" and isinstance(t.value, E.Bin) and t.value.op in _NEGATED:
        c = t.value
        if E.is_int(c.lhs.dtype) and E.is_int(c.rhs.dtype):
            return E.Bin(_NEGATED[c.op], c.lhs, c.rhs)
    return t


def _bound_terms(index: tuple[E.Expr, ...], extents: tuple[E.Expr, ...], terms: list[E.Expr]) -> list[E.Expr] | None:
    """The terms of a mask that keep ``index`` inside the tensor, where every dimension's index
    keeps both its bounds (a term, or its range); None where one is missing."""
    if len(index) != len(extents):
        return None
    found: list[E.Expr] = []
    for i, n in zip(index, extents, strict=True):
        upper = _term(terms, E.Bin("<", i, n))
        lower = _term(terms, E.Bin(">=", i, E.Const(0)))
        hi, top = E.bounds(i)[1], E.bounds(n)[0]
        if upper is None and not (hi is not None and top is not None and hi < top):
            return None
        if lower is None and not E.nonneg(i):
            return None
        found += [t for t in (upper, lower) if t is not None]
    return found


def _term(terms: list[E.Expr], want: E.Expr) -> E.Expr | None:
    want = E.fold(want)
    for t in terms:
        if t == want or (isinstance(t, E.Bin) and isinstance(want, E.Bin) and _same_compare(t, want)):
            return t
    return None


def _same_compare(a: E.Bin, b: E.Bin) -> bool:
    if a.op == b.op and E.same(a.lhs, b.lhs) and E.same(a.rhs, b.rhs):
        return True
    return a.op == _FLIPPED.get(b.op) and E.same(a.lhs, b.rhs) and E.same(a.rhs, b.lhs)


def _complementary(a: list[E.Expr], b: list[E.Expr]) -> tuple[E.Expr, list[E.Expr]] | None:
    """(``c``, the common terms) where masks ``a`` and ``b`` are the same terms and ``c`` in ``a``
    whose complement is in ``b``; None otherwise."""
    if len(a) != len(b):
        return None
    for i, c in enumerate(a):
        for j, d in enumerate(b):
            if not _negates(c, d):
                continue
            rest_a, rest_b = a[:i] + a[i + 1 :], b[:j] + b[j + 1 :]
            if _same_terms(rest_a, rest_b):
                return c, rest_a
    return None


def _negates(c: E.Expr, d: E.Expr) -> bool:
    if isinstance(d, E.Un) and d.op == "!":
        return c == E.fold(d.value) or c == d.value
    if isinstance(c, E.Un) and c.op == "!":
        return d == E.fold(c.value) or d == c.value
    if not (isinstance(c, E.Bin) and isinstance(d, E.Bin) and c.op in _NEGATED and d.op in _NEGATED):
        return False
    negated = E.Bin(_NEGATED[c.op], c.lhs, c.rhs)
    return _same_compare(negated, d)


def _same_terms(a: list[E.Expr], b: list[E.Expr]) -> bool:
    left = list(b)
    for t in a:
        for k, u in enumerate(left):
            if t == u or (isinstance(t, E.Bin) and isinstance(u, E.Bin) and t.op in _FLIPPED and _same_compare(t, u)):
                del left[k]
                break
        else:
            return False
    return not left
