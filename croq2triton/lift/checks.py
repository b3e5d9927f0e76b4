"""The user's errors that only the lifting can see (its shapes of views, element types of operands,
ranges of indices), each a :class:`CroqSemanticError` at the construct: the function being
translated fails with it, the file's other functions still translate.  The static checks that
need only the AST are sema/checks.py's.

* Copies (LANGUAGE.md 7.8): the destination has the source's shape, after ``.transp`` / ``.pad``;
  a source smaller than its destination is the tail rule (the rest is zero-filled), a larger one,
  or one of another rank, is an error.  An extent that only the launch knows is compared there
  (:func:`copy_shapes` returns those pairs; the copies lifting turns them into launcher checks).
* Element indices (LANGUAGE.md 7.5) against the extents of ``shared`` / ``local`` buffers and
  fragments: an index that provably takes a value outside ``[0, extent)`` is an error.  Where the
  index is affine in lanes, loop counters and program ids whose ranges are known exactly, every
  value of its range is taken and any one outside is an error; otherwise its bounds decide only
  where every value lies outside.  A global tensor of constant extent: only an index that lies
  outside for every value (reading outside a tensor is legal, LANGUAGE.md 14.3: masked tails).
  An access under a condition (``if``, ``inthreads``, after a ``yield``) is not checked: the
  condition may exclude the values outside.
* MMA (LANGUAGE.md 7.9): the operand types make one of the language's pairs, and the accumulator
  has a type an MMA of them gives (sema/mma_rules.py); a valid pair croq2triton does not translate
  stays a "not translated" (lift/mma.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..sema.mma_rules import accumulator_error, operand_error
from ..sema.tiling import source_text
from ..tir import expr as E
from .terms import const_int

# ---------------------------------------------------------------- copies

COPY_HINT = (
    "a copy's destination has its source's shape (after .transp / .pad); a smaller source fills the"
    " rest with zeros (the tail rule), a larger one does not fit"
)


def size_text(e: E.Expr) -> str:
    """An extent as the source would spell it (``32``, ``K``, ``cdiv(K, 32)``)."""
    if isinstance(e, E.Const):
        return str(e.value)
    if isinstance(e, E.Var):
        return e.name
    if isinstance(e, E.CDiv):
        return f"cdiv({size_text(e.lhs)}, {size_text(e.rhs)})"
    if isinstance(e, E.Bin):
        parts = [size_text(x) if not isinstance(x, E.Bin) else f"({size_text(x)})" for x in (e.lhs, e.rhs)]
        return f"{parts[0]} {e.op} {parts[1]}"
    if isinstance(e, E.Call) and e.fn == "num_programs" and len(e.args) == 1:
        return f"(the grid's extent {size_text(e.args[0])})"  # a block level's bound, as the launch sets it
    if isinstance(e, E.Call):
        return f"{e.fn}({', '.join(size_text(a) for a in e.args)})"
    return repr(e)


def shape_text(shape: Sequence[E.Expr]) -> str:
    return "[" + ", ".join(size_text(E.fold(n)) for n in shape) + "]"


def copy_shapes(
    src: Sequence[E.Expr], moved: Sequence[E.Expr], dst: Sequence[E.Expr], s: A.DmaStmt
) -> list[tuple[int, E.Expr, E.Expr]]:
    """Check a copy's shapes: ``src`` the source view's, ``moved`` the same after ``.transp`` /
    ``.pad``, ``dst`` the destination view's.  Raises where the source provably does not fit;
    returns the dimensions only the launch decides, as (dimension, source extent, destination
    extent)."""
    later: list[tuple[int, E.Expr, E.Expr]] = []
    larger: list[tuple[int, E.Expr, E.Expr]] = []
    if len(moved) == len(dst):
        for d, (a, b) in enumerate(zip(moved, dst, strict=True)):
            a, b = E.fold(a), E.fold(b)
            if E.same(a, b):
                continue
            fits = E.fold(E.Bin("<=", a, b))
            if isinstance(fits, E.Const):
                if not fits.value:
                    larger.append((d, a, b))
            else:
                later.append((d, a, b))
        if not larger:
            return later
    what = f"{s.engine}.{s.op}"
    source = f"'{source_text(s.src)}' {shape_text(src)}"
    if list(moved) != list(src):
        source += f" ({'transposed' if s.op == 'transp' else 'padded'}: {shape_text(moved)})"
    target = f"'{source_text(s.dst)}' {shape_text(dst)}"
    if larger:
        d, a, b = larger[0]
        why = f"the source is larger along dimension {d} ({size_text(a)} > {size_text(b)})"
        hint = COPY_HINT
    else:
        why = f"the source has {len(moved)} dimension(s), the destination {len(dst)}"
        hint = COPY_HINT + "; '.sqz()' drops a view's dimensions of extent 1, '.span_as([..])' reshapes it"
    raise CroqSemanticError(f"{what} of {source} into {target}: {why}", s.span, hint)


def fits(a: E.Expr, b: E.Expr) -> bool:
    """Is ``a <= b`` for every value of the sizes (non-negative)?  Where the folding decides it, or
    ``a`` is a chunk's extent ``p / cdiv(p, c)`` (a ``chunkat`` over ``cdiv(p, c)`` tiles) and
    ``c <= b``; False where it is not proved."""
    a, b = E.fold(a), E.fold(b)
    decided = E.fold(E.Bin("<=", a, b))
    if E.same(a, b) or (isinstance(decided, E.Const) and decided.value):
        return True
    a_max, b_min = E.bounds(a)[1], E.bounds(b)[0]
    if a_max is not None and b_min is not None and a_max <= b_min:
        return True
    if isinstance(a, E.Bin) and a.op == "/" and isinstance(a.rhs, E.CDiv) and E.same(a.lhs, a.rhs.lhs):
        c, n = const_int(a.rhs.rhs), const_int(b)
        return c is not None and n is not None and 0 < c <= n
    return False


def larger_at_launch(src: E.Expr, dst: E.Expr, d: int, s: A.DmaStmt) -> str:
    """The message of the launcher's check that the source's extent ``src`` fits ``dst``."""
    return (
        f"{s.engine}.{s.op} of '{source_text(s.src)}' into '{source_text(s.dst)}': the source is larger"
        f" along dimension {d} ({size_text(src)} > {size_text(dst)})"
    )


# ---------------------------------------------------------------- element indices


@dataclass(frozen=True)
class IndexRange:
    lo: int | None
    hi: int | None
    exact: bool  # every value of [lo, hi] is taken (else only bounds)


def index_range(e: E.Expr, exact: Mapping[str, tuple[int, int]]) -> IndexRange | None:
    """The values ``e`` takes, given the variables whose ranges are known exactly (lanes, loop
    counters, program ids); None where it is in code that never runs (a loop of no iterations)."""
    e = E.fold(e)
    free = E.free_vars(e)
    if any(v.lo is not None and v.hi is not None and v.lo > v.hi for v in free):
        return None
    if free and all(v.name in exact for v in free) or not free:
        lin = E.linear(e, [v.name for v in free])
        if lin is not None and isinstance(lin[1], E.Const) and isinstance(lin[1].value, int):
            coefs, rest = lin
            lo = hi = int(rest.value)
            for name, c in coefs.items():
                a, b = exact[name]
                lo += c * (a if c > 0 else b)
                hi += c * (b if c > 0 else a)
            return IndexRange(lo, hi, True)
    known = {v.name: E.Var(v.name, v.type, exact[v.name][0], exact[v.name][1], v.dims) for v in free if v.name in exact}
    lo, hi = E.bounds(E.substitute(e, known) if known else e)
    return IndexRange(lo, hi, False)


def outside(r: IndexRange, extent: int, every: bool) -> str | None:
    """How ``r`` leaves ``[0, extent)`` (None: it provably does not, or not provably): ``every``
    only where all its values lie outside."""
    lo, hi = r.lo, r.hi
    if (hi is not None and hi < 0) or (lo is not None and lo >= extent):
        if r.exact:
            return f"takes the values {lo} to {hi}, all outside" if lo != hi else f"is {lo}"
        if lo is not None and hi is not None:
            return f"lies between {lo} and {hi}"
        return f"is at least {lo}" if lo is not None else f"is at most {hi}"
    if every or not r.exact or lo is None or hi is None:
        return None
    if lo >= 0 and hi < extent:
        return None
    parts = []
    if lo < 0:
        parts.append(f"{lo}" if lo == -1 else f"{lo} to -1")
    if hi >= extent:
        parts.append(f"{hi}" if hi == extent else f"{extent} to {hi}")
    one = len(parts) == 1 and " to " not in parts[0]
    return f"takes the values {lo} to {hi}: {' and '.join(parts)} {'is' if one else 'are'} outside"


def check_indices(
    name: str,
    extents: Sequence[E.Expr | int],
    index: Sequence[E.Expr],
    nodes: Sequence[A.Node],
    exact: Mapping[str, tuple[int, int]],
    every: bool = False,
) -> None:
    """Raise where an index of ``name`` provably leaves its extent (see the module's doc)."""
    if not len(extents) == len(index) == len(nodes):  # a wrong count is an error of its own
        return
    for d, (n, i, node) in enumerate(zip(extents, index, nodes, strict=True)):
        extent = n if isinstance(n, int) else const_int(n)
        if extent is None or extent < 1:  # an extent known only at launch
            continue
        r = index_range(i, exact)
        how = outside(r, extent, every) if r is not None else None
        if how is None:
            continue
        raise CroqSemanticError(
            f"'{name}' has {extent} element{'s' if extent != 1 else ''} along dimension {d}, but its index"
            f" '{source_text(node)}' there {how}",
            node.span,
            f"the indices of '{name}' along dimension {d} run from 0 to {extent - 1}",
        )


# ---------------------------------------------------------------- MMA


def mma_types(a: str, b: str, acc: str | None, s: A.MmaOp) -> None:
    """Raise where ``mma acc, a, b`` has operand types that make no MMA, or an accumulator type
    (``acc``: as declared, None where it follows the operands) that no MMA of them gives."""
    why = operand_error(a, b) or (accumulator_error(a, b, acc) if acc is not None else None)
    if why is not None:
        raise CroqSemanticError(why[0], s.span, why[1])


class Checked:
    """The lifter's side of the index checks (a mixin of lift/kernel.py): the exact ranges of its
    lanes, loop counters and program ids, and whether the statement being lifted runs under a
    condition."""

    exact: dict[str, tuple[int, int]]  # variable -> the first and last value it takes
    branches: int  # block-level branches (lift/kernel.py ``branch``) around the statement
    pred: list[E.Expr]
    padding: list[E.Expr]
    lane_axis: dict[str, int]

    def unconditional(self) -> bool:
        """Does the statement run wherever its lanes exist (no ``if``, no ``yield`` before it)?"""
        return not self.pred and not self.branches and all(self.pads_lanes(t) for t in self.padding)

    def pads_lanes(self, t: E.Expr) -> bool:
        """``t < n``: the lanes past a level's count (not a ``yield``'s condition)."""
        return isinstance(t, E.Bin) and t.op == "<" and isinstance(t.lhs, E.Var) and t.lhs.name in self.lane_axis

    def check_access(
        self,
        name: str,
        extents: Sequence[E.Expr | int],
        index: Sequence[E.Expr],
        nodes: Sequence[A.Node],
        every: bool = False,
    ) -> None:
        """The indices of an element access of ``name`` against its extents (see the module)."""
        if self.unconditional():
            check_indices(name, extents, index, nodes, self.exact, every)
