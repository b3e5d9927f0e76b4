"""Host scalars with C's semantics (:class:`~.host.CScalar`, LANGUAGE.md 4.4 and 7.7): the
expression a launcher evaluates, with the conversions that make Python's numbers compute as C's.

Python's integers do not overflow and its floats are doubles.  The launcher computes with them
and converts where C's value would differ (sema/carith.py):

* a sum, difference, product, ``-``, ``~``, ``&``, ``|``, ``^`` or ``<<`` of integers is congruent
  to C's result modulo 2^width, so it is left as it is (*raw*) until a use needs the value itself:
  a division, a shift right, a comparison, a conversion to a wider or a float type, a condition,
  a store into a scalar, a print; there it wraps (``_rt.s32(a * 65536) / 65536``);
* an operand converts to the type C computes in: ``-1 < u`` with ``u`` a ``u32`` compares
  ``_rt.u32(-1)``; an integer converts to ``f32`` rounded (``_rt.f32(a)``);
* an ``f32`` (``f16``, ``bf16``) result rounds to its type before any use (``_rt.f32(a + 1.0)``),
  an ``f32`` constant is the ``f32`` value (``0.1f`` is 0.10000000149011612);
* ``/`` and ``%`` of integers truncate (``_rt.idiv``, ``_rt.imod``, or ``//`` where both sides are
  known to be non-negative) and ``cdiv`` is C's (``_rt.cdiv``).

A value written into a tensor is left to the element write where it wraps or rounds it the same
way (``elem_set`` of an ``f32`` sum into an ``f32`` tensor, of an ``int`` product into an ``s32``
one).  :func:`host_scalars` names the launcher variables such code reads, so that a scalar
parameter among them is converted to its declared type once, when it is bound.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from ..sema import carith as C
from . import expr as E
from . import host as H

_RING = ("+", "-", "*", "&", "|", "^")  # congruent modulo 2^width: a raw operand of the same width is fine
_FLOATS_ROUNDED = ("f16", "bf16", "f32")  # results Python's doubles do not stand for


def c_type(e: E.Expr) -> str:
    """The C type of ``e``: integer promotion and the usual arithmetic conversions."""
    if isinstance(e, H.CScalar):
        return e.type or c_type(e.value)
    if isinstance(e, E.Bin):
        if e.op in ("min", "max"):
            return C.common(c_type(e.lhs), c_type(e.rhs))
        return C.result_type(e.op, c_type(e.lhs), c_type(e.rhs))
    if isinstance(e, E.Un):
        return "i1" if e.op == "!" else C.promoted(c_type(e.value))
    if isinstance(e, E.Where):
        a, b = c_type(e.then), c_type(e.other)
        return a if a == b else C.common(a, b)
    if isinstance(e, E.CDiv):
        return C.common(c_type(e.lhs), c_type(e.rhs))
    if isinstance(e, H.Logic):
        return "i1"
    return e.dtype


def lower(s: H.CScalar) -> E.Expr:
    """The launcher expression of ``s``: Python operations and ``_rt`` conversions."""
    t = s.type or c_type(s.value)
    if s.store and _written_as_c(c_type(s.value), t):
        return _exact(s.value)
    # a raw value written into a tensor: the element write wraps an integer to the tensor's width
    # and rounds a double to its float type once, which is C's conversion of that value
    x, raw = _to(s.value, t, ring=s.store, top=not s.store)
    if raw and not s.store:
        x = _settle(x, t)
    if (
        s.type is not None
        and not s.store
        and t in C.INT_BITS
        and c_type(s.value) == "i1"
        and not isinstance(x, E.Const)
    ):
        x = E.Cast(x, "i32")  # a bool stored as an integer: 0 or 1, as C prints it
    return x


def _written_as_c(src: str, t: str) -> bool:
    """Does the element write of a value of ``src`` into a tensor of ``t`` convert it as C does (a
    double or an integer of 32 bits at most rounded once to ``f32``, an integer into an ``f64``)?"""
    if t not in ("f32", "f64") or src == t:
        return False
    return (src == "f64") or (C.is_int(src) and (src == "i1" or C.INT_BITS[src] <= 32))


def host_scalars(stmts: tuple[H.Stmt, ...]) -> dict[str, str]:
    """The launcher variables the host code's C scalars read (name -> type), in the statements
    and the blocks in them."""
    out: dict[str, str] = {}

    def visit(x: object, inside: bool) -> None:
        if isinstance(x, H.CScalar):
            inside = True
        if isinstance(x, E.Var) and inside:
            out.setdefault(x.name, x.type)
        if isinstance(x, E.Expr):
            for c in x.children():
                visit(c, inside)
            return
        if isinstance(x, tuple):
            for item in x:
                visit(item, inside)
        elif is_dataclass(x) and not isinstance(x, type):
            for f in fields(x):
                visit(getattr(x, f.name), inside)

    visit(stmts, False)
    return out


# ------------------------------------------------------------------ the conversions


def _settle(x: E.Expr, t: str) -> E.Expr:
    """A raw value (congruent to C's, or an unrounded double) as the value of type ``t``."""
    if isinstance(x, E.Const):
        return E.Const(C.convert(x.value, t), t)
    return E.Call(f"_rt.{C.RUNTIME_NAME[t]}", (x,), t)


def _exact(e: E.Expr) -> E.Expr:
    """``e`` as the value of its own C type."""
    t = c_type(e)
    x, raw = _value(e)
    return _settle(x, t) if raw else x


def _to(e: E.Expr, t: str, ring: bool = False, top: bool = False) -> tuple[E.Expr, bool]:
    """``e`` converted to the type ``t`` as C converts it: the expression, and whether it is raw
    (only where ``ring``: its use computes modulo 2^width of ``t``, so the wrap can wait).  ``top``:
    the value is kept (an integer that is a float's value is made a Python float)."""
    src = c_type(e)
    x, raw = _value(e)
    if src == t:
        return (x, True) if raw and ring else (_settle(x, t) if raw else x, False)
    if isinstance(x, E.Const):
        return E.Const(C.convert(x.value, t), t), False
    if C.is_int(src) and C.is_int(t):
        if t == "i1":
            return E.Cast(_settle(x, src) if raw else x, "i1"), False
        if raw and C.INT_BITS[t] > C.INT_BITS[src]:
            x, raw = _settle(x, src), False  # C wraps before it widens
        if not raw and C.holds(t, src) or _fits(x, t):
            return x, False
        return (x, True) if ring else (_settle(x, t), False)
    if raw:
        x = _settle(x, src)
    if t == "i1":
        return E.Cast(x, "i1"), False
    if C.is_int(t):  # a float truncated toward zero, then wrapped to ``t`` (out of its range C has no value)
        whole = E.Cast(x, "i64")
        return (whole, True) if ring and t in ("i32", "u32", "i64", "u64") else (_settle(whole, t), False)
    if C.holds(t, src) or (C.is_int(src) and _exact_in(e, t)):
        return (E.Cast(x, "f64") if top and C.is_int(src) else x), False  # float(x): the same value
    if t in C.WRAP:
        return _settle(x, t), False
    return E.Cast(x, t), False  # to an f64: Python's float() rounds as C's (double) does


def _fits(x: E.Expr, t: str) -> bool:
    """Is the Python value of ``x`` within the integer type ``t`` whatever its variables' values (by
    their bounds: a loop counter's, a size's), so that it is C's value without a wrap?"""
    if any(isinstance(n, E.Cast) and n.type == "i1" for n in x.walk()):
        return False  # bounds() sees through a cast, not to a bool's 0 or 1
    lo, hi = E.bounds(x)
    tlo, thi = C.int_range(t)
    return lo is not None and hi is not None and tlo <= lo and hi <= thi


def _exact_in(e: E.Expr, t: str) -> bool:
    """Is every value the integer ``e`` may take (by the bounds of its variables: a loop counter's)
    one of the float type ``t``?"""
    lo, hi = E.bounds(e)
    return t in C.FLOAT_BITS and lo is not None and hi is not None and max(hi, -lo) <= 1 << C.FLOAT_BITS[t]


def _value(e: E.Expr) -> tuple[E.Expr, bool]:
    """``e`` computed in Python: the expression, and whether it is raw (see the module's text)."""
    if isinstance(e, E.Const):
        return _constant(e), False
    if isinstance(e, H.CScalar):
        return lower(e), False
    if isinstance(e, (E.Var, H.ElemGet)) or not e.children():
        if isinstance(e, H.ElemGet):
            return replace(e, index=tuple(_index(i) for i in e.index)), False
        return e, False
    if isinstance(e, E.Cast):
        return _to(e.value, e.type, ring=True)
    if isinstance(e, E.Un):
        return _unary(e)
    if isinstance(e, E.Bin):
        return _binary(e)
    if isinstance(e, E.Where):
        t = c_type(e)
        then, other = _to(e.then, t)[0], _to(e.other, t)[0]
        return E.Where(_exact(e.cond), then, other), False
    if isinstance(e, E.CDiv):
        t = c_type(e)
        return E.CDiv(_to(e.lhs, t)[0], _to(e.rhs, t)[0]), False
    if isinstance(e, H.Logic):  # each operand a condition; a bool, not the operand's value, as C gives
        values = tuple(v if c_type(v) == "i1" else E.Cast(v, "i1") for v in map(_exact, e.values))
        return H.Logic(e.op, values), False
    if isinstance(e, E.Call):  # a math builtin of f32 arguments (runtime/launch.py f32math): an f32
        return replace(e, args=tuple(_exact(a) for a in e.args)), False
    raise TypeError(f"no C semantics for the host expression {type(e).__name__}")


def _index(e: E.Expr) -> E.Expr:
    """An element index: raw where it is (the element access checks it against the extent, which a
    wrapped value within the extent is only where the raw one is too)."""
    return _to(e, c_type(e), ring=True)[0]


def _constant(e: E.Const) -> E.Const:
    if isinstance(e.value, bool) or e.type == "i1":
        return e
    if e.type in C.INT_BITS or e.type in C.WRAP:
        value = C.convert(e.value, e.type)
        return e if value == e.value and type(value) is type(e.value) else E.Const(value, e.type)
    return e


def _unary(e: E.Un) -> tuple[E.Expr, bool]:
    if e.op == "!":
        return E.Un("!", _exact(e.value)), False
    t = C.promoted(c_type(e.value))
    if C.is_int(t):
        x, _ = _to(e.value, t, ring=True)
        out = E.Un(e.op, x)
        return out, not _fits(out, t)
    x, _ = _to(e.value, t)
    return E.Un(e.op, x), False  # a float's sign flipped: exact


def _binary(e: E.Bin) -> tuple[E.Expr, bool]:
    ta, tb = c_type(e.lhs), c_type(e.rhs)
    if e.op in ("<<", ">>"):
        t = C.promoted(ta)
        lhs, _ = _to(e.lhs, t, ring=e.op == "<<")
        return E.Bin(e.op, lhs, _exact(e.rhs)), e.op == "<<"
    t = C.common(ta, tb)
    ints = C.is_int(t)
    ring = ints and e.op in _RING
    (lhs, ra), (rhs, rb) = _to(e.lhs, t, ring), _to(e.rhs, t, ring)
    if not ints and e.op in ("/", "%") and E.is_int(lhs.dtype) and E.is_int(rhs.dtype):
        lhs = E.Cast(lhs, "f64")  # integers that are floats' values (counters): divided as floats, not floored
    out = E.Bin(e.op, lhs, rhs)
    if e.op in E.COMPARE or e.op in ("min", "max"):
        return out, False
    if ints:
        return out, ring and (e.op in ("+", "-", "*") or ra or rb) and not _fits(out, t)
    return out, t in _FLOATS_ROUNDED
