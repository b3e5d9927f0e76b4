"""Element-wise values around a contraction's sum: start values, operations after it, what is stored.

``out.at(m, n) = alpha * acc + beta * c.at(m, n)``, ``f32 acc = c.at(m, n);``, ``mc += bias;``:
each is evaluated with C's typing (lift/arith.py) into an :class:`~croq2triton.lift.terms.EpiValue`
whose leaves are the accumulator element (``ACC``), tensor elements and scalar parameters.  A value
that reads two accumulator elements, an element's position or anything the contraction analysis
does not know is not an epilogue (:class:`NotLifted`).
"""

from __future__ import annotations

from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from .arith import Arith, Value
from .host import ir_type
from .notlifted import NotLifted
from .terms import ACC, AccRead, Bounded, Cells, Elem, EpiValue, Scalar, Store
from .terms import unparen as _lit
from .views import FLOATS

INT_SCALARS = ("int", "s32", "u32", "s64", "u64", "bool")


def acc_ctype(cells: Cells) -> str:
    """The type the sum is kept in: f32 for every float accumulator (f16 ones too: rounded once at
    the store, LANGUAGE.md 9.3), s32 for integer ones."""
    return "f32" if cells.elem in FLOATS else "s32"


class EpilogueEval(Arith):
    """One element-wise value; ``it`` is the contraction interpreter (names, views, element reads)."""

    def __init__(self, it: Any) -> None:
        self.it = it
        self.acc: AccRead | None = None  # the one accumulator element the value reads
        self.reads: dict[str, Elem] = {}
        self.scalars: dict[str, str] = {}
        self.stored: list[tuple[Store, tuple[E.Expr, ...]]] = []  # stores read back, at these indices

    def evaluate(self, e: A.Expr) -> EpiValue:
        v = self.expr(e)
        return self.result(v)

    def started(self, cells: Cells, start: Value, node: A.Node) -> EpiValue:
        """``ACC + start``: what an accumulator that starts from ``start`` holds once its products are added."""
        return self.result(self.binary("+", self.accumulator(AccRead(cells, cells.coords), node), start, node))

    def result(self, v: Value) -> EpiValue:
        return EpiValue(v.expr, v.ctype, tuple(self.reads.items()), tuple(self.scalars.items()))

    def leaf(self, e: A.Expr, want: str | None) -> Value:
        it = self.it
        e = _lit(e)
        if isinstance(e, A.Name) and not it.known(e.name) and e.name in it.host.scalars:
            sc = it.host.scalars[e.name]
            if sc.elem not in INT_SCALARS:
                ty = ir_type(sc.elem)
                if ty is None:
                    raise NotLifted(f"a scalar of type '{sc.elem}' in an epilogue", e)
                self.scalars[e.name] = sc.elem
                return Value(E.Var(e.name, ty), sc.elem)
        v = it.value(e)
        if isinstance(v, Bounded):
            v = v.value
        if isinstance(v, Cells):
            v = AccRead(v, v.coords)
        if isinstance(v, AccRead):
            return self.accumulator(v, e)
        if isinstance(v, Scalar):
            if v.acc is not None:
                self.same_acc(v.acc, e)
            self.reads.update(v.value.reads)
            self.scalars.update(v.value.scalars)
            self.stored.extend(v.stored)
            return Value(v.value.expr, v.value.ctype)
        if isinstance(v, Elem):
            return self.read(v, e)
        if isinstance(v, E.Expr):
            f = E.fold(v)
            if isinstance(f, E.Const):
                return Value(f, "int")
            raise NotLifted("an epilogue that depends on the element's position", e)
        raise NotLifted("a value in an epilogue that the contraction analysis does not know", e)

    def same_acc(self, r: AccRead, node: A.Node | None) -> None:
        if self.acc is not None and not (self.acc.cells is r.cells and self.it.same_idx(self.acc.idx, r.idx)):
            raise NotLifted("a value of two accumulator elements", node)
        self.acc = r

    def accumulator(self, r: AccRead, node: A.Node | None) -> Value:
        self.same_acc(r, node)
        ctype = acc_ctype(r.cells)
        post = r.cells.post
        if post is None:
            return Value(E.Var(ACC, ir_type(ctype) or "f32"), ctype)
        post = post.subst_reads({v.name: i for v, i in zip(r.cells.coords, r.idx, strict=True)})
        self.reads.update(post.reads)
        self.scalars.update(post.scalars)
        return Value(post.expr, post.ctype)

    def stored_value(self, st: Store, env: dict[str, E.Expr], node: A.Node) -> Value:
        """The value store ``st`` wrote, at the values ``env`` of its own element variables."""
        read = AccRead(st.value.cells, tuple(_subst(i, env) for i in st.value.idx))
        if st.epi is None:
            return self.accumulator(read, node)
        self.same_acc(read, node)
        epi = st.epi.subst_reads(env)
        self.reads.update(epi.reads)
        self.scalars.update(epi.scalars)
        return Value(epi.expr, epi.ctype)

    def read(self, el: Elem, node: A.Node) -> Value:
        t = self.it.tensors[el.tensor]
        ty = ir_type(t.elem)
        if ty is None:
            raise NotLifted(f"a '{t.elem}' tensor in an epilogue", node)
        found = self.it.stored_at(el)
        if found is not None:  # an element this kernel stored before: what it stored, as the tensor holds it
            st, env = found
            self.stored.append((st, el.index))
            return self.convert(self.stored_value(st, env, node), t.elem)
        for name, x in self.reads.items():
            if x.tensor == el.tensor and self.it.same_idx(x.index, el.index):
                return Value(E.Var(name, ty), t.elem)
        name = f"%r{next(self.it.ids)}"
        self.reads[name] = el
        return Value(E.Var(name, ty), t.elem)


def _subst(e: E.Expr, env: dict[str, E.Expr]) -> E.Expr:
    return E.fold(E.substitute(e, env))


def start_value(it: Any, cells: Cells, init: A.Expr, node: A.Node) -> EpiValue:
    """``ACC + init`` converted to the accumulator's type: what an accumulator declared (or first
    assigned) with ``init`` holds once its products are added."""
    ev = EpilogueEval(it)
    v = ev.convert(ev.expr(init), cells.elem)
    if ev.acc is not None:
        raise NotLifted("an accumulator that starts from another accumulator", node)
    return ev.started(cells, v, node)


def transformed(it: Any, cells: Cells, op: str, rhs: A.Expr, node: A.Node) -> EpiValue:
    """What the accumulator holds after ``acc op= rhs`` (``op`` "=": ``acc = rhs``), as a function of its sum."""
    ev = EpilogueEval(it)
    if op == "=":
        v = ev.expr(rhs)
    else:
        v = ev.binary(op, ev.accumulator(AccRead(cells, cells.coords), node), ev.expr(rhs), node)
    return ev.result(ev.convert(v, acc_ctype(cells)))
