"""``.sqz()`` drops the dimensions of extent 1 that the ``.subspan``, ``.view`` or ``.span_as`` before
it made (LANGUAGE.md 7.6: ``Q.subspan(1, S, 1, D).at(b, 0, h, 0).sqz()``); a view with no such
operation before it has no written extents for it to drop.  The rule is the same for every base and
wherever the view stands (bound to a name, a copy's source or destination, an MMA operand ...):

* a tensor parameter, a declared buffer (or one buffer of an array of them): their extents are
  the declared shape, none written by a view operation: an error;
* a named view (``v = x.subspan(1, 64).at(i, 0);``): the operations of its value count;
* a copy's future, or its ``.data``: the copy's source (and a destination view) count, since a copy
  into fresh memory keeps the extents of 1 of the view it was copied from
  (``a_s = dma.copy a.subspan(1, 64, 64).at(..) => shared;`` then ``a_s.data.sqz()``).

What cannot be followed (a name bound by a ``select``, moved by ``swap``, a fragment ...) is left
alone."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution
from .tiling import source_text

SHAPING = ("subspan", "view", "span_as")
_DEPTH = 16  # named views and futures followed through at most this many names


def squeeze_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    copies: dict[str, list[A.DmaStmt]] = {}
    for n in fn.walk():
        if isinstance(n, A.DmaStmt) and n.result:
            copies.setdefault(n.result, []).append(n)
    shaped = _Shaped(res, copies)
    out: list[Diagnostic] = []
    for n in fn.walk():
        if not isinstance(n, A.View):
            continue
        for k, op in enumerate(n.ops):
            if op.kind != "sqz" or any(p.kind in SHAPING for p in n.ops[:k]) or shaped.base(n.base) is not False:
                continue
            before = source_text(A.View(n.base, n.ops[:k])) if k else source_text(n.base)
            buffer = shaped.declared(n.base)
            out.append(
                Diagnostic(
                    "error",
                    "'.sqz()' drops the extents of 1 that a '.subspan', '.view' or '.span_as' before it wrote;"
                    f" '{before}' has none"
                    + (f" ('{buffer}' is a buffer of the shape it was declared with)" if buffer else ""),
                    op.span or n.span,
                    "write the extents first: 'x.subspan(1, N).at(i, 0).sqz()'"
                    + (", or declare the buffer without its extents of 1" if buffer else ""),
                )
            )
    return out


class _Shaped:
    """Whether a view's base carries extents a view operation wrote: True, False, or None (not
    known)."""

    def __init__(self, res: Resolution, copies: dict[str, list[A.DmaStmt]]) -> None:
        self.res = res
        self.copies = copies

    def base(self, e: A.Expr, depth: int = 0) -> bool | None:
        if depth > _DEPTH:
            return None
        if isinstance(e, A.Paren):
            return self.base(e.expr, depth)
        if isinstance(e, A.View):
            if any(op.kind in SHAPING for op in e.ops):
                return True
            return self.base(e.base, depth + 1)
        if isinstance(e, A.Index):  # one buffer of an array of buffers
            return self.base(e.base, depth + 1)
        if isinstance(e, A.Member) and e.member == "data":
            return self.base(e.base, depth + 1)
        if not isinstance(e, A.Name):
            return None
        b = self.res.binding(e)
        if b is None:
            return None
        if b.kind == "spanned" and b.origin in ("parameter", "declaration"):
            return False
        if b.kind == "view" and b.value is not None:
            return self.base(b.value, depth + 1)
        if b.kind == "future":
            sides: list[bool | None] = []
            for c in self.copies.get(e.name, []):
                sides.append(self.base(c.src, depth + 1))
                if not c.dst_storage:
                    sides.append(self.base(c.dst, depth + 1))
            if any(sides):
                return True
            return False if sides and all(s is False for s in sides) else None
        return None

    def declared(self, e: A.Expr) -> str | None:
        """The name of the declared buffer ``e`` is (or is one of an array of), else None."""
        while isinstance(e, (A.Paren, A.Index)):
            e = e.expr if isinstance(e, A.Paren) else e.base
        if not isinstance(e, A.Name):
            return None
        b = self.res.binding(e)
        return e.name if b is not None and b.kind == "spanned" and b.origin == "declaration" else None
