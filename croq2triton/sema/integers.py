"""The places that take an integer, given a floating-point value (LANGUAGE.md 7.1: a shape is a
list of integer extents; 7.2: ``a #+ c`` changes a bound by an int; 7.4: a loop's extent and
range; 7.5: an element index and an array's index; 7.6: the extents, indices, strides and steps
of a view; 7.7: C's shifts and bit operations take integers):

* ``foreach i in [4.0]``, ``with i in [x]`` of an ``f32 x``, ``foreach c = v(0.5:)``;
* ``a.at(1.5f)``, ``buf[x]``, ``t(1.0)``, ``a.span(1.0)``;
* ``a.subspan(16.0)``, ``.at(x)``, ``.step(..)``, ``: st``, ``.chunk(2.0)``;
* ``x << 1``, ``x & m``, ``~x`` of a float ``x``;
* ``p #+ 1.5f``;
* the dimensions of an array of buffers, events or fragments, and a fragment's extents.

What a value is comes from sema/valuetypes.py (only where the source shows it for sure).  A
parallel's bound and a buffer's extent are sema/pbounds.py's.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution
from .tiling import source_text
from .valuetypes import ValueTypes

_BITS = ("<<", ">>", "&", "|", "^")
_CONVERT = "convert it with '__to<s32>(..)', or compute it from integers"
_VIEW_ARGS = {
    "chunkat": "indices",
    "chunk": "factors",
    "subspan": "extents",
    "modspan": "extents",
    "view": "extents",
    "span_as": "extents",
}


def float_integer_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    types = ValueTypes(fn, res)
    out: list[Diagnostic] = []
    for e, what, hint, at in _integer_places(fn):
        if types.kind(e) == "float":
            out.append(Diagnostic("error", f"{what}, but '{source_text(e)}' is a floating-point value", at.span, hint))
    return out


def _integer_places(fn: A.CoFunction) -> Iterator[tuple[A.Expr, str, str, A.Node]]:
    """Each expression that must be an integer, with what it is, how to fix it and where to say it."""
    for e, what, hint in _places(fn):
        yield e, what, hint, e
    for n in fn.walk():
        if isinstance(n, A.Unary) and n.op == "~":  # (at the operator, as the lifting said it)
            yield n.operand, "the operator '~' needs an integer operand", _bits_hint("~"), n


def _places(fn: A.CoFunction) -> Iterator[tuple[A.Expr, str, str]]:
    for n in fn.walk():
        if isinstance(n, A.Within):
            items = n.shape.items if isinstance(n.shape, A.MdspanLit) else [n.shape]
            names = ", ".join(n.names)
            for x in items:
                yield x, f"the extent of '{names}' counts its values", f"give an integer extent: '[4]'; {_CONVERT}"
        elif isinstance(n, A.RangeItem):
            for x in (n.lo, n.hi, n.step):
                if x is not None:
                    yield x, f"the range '{n.name}(lo:hi:step)' takes integers", _CONVERT
        elif isinstance(n, A.At):
            for x in n.indices:
                yield x, "an element index is an integer", _CONVERT
        elif isinstance(n, A.Index) and not any(isinstance(i, A.Paren) for i in n.indices):
            for x in n.indices:  # (``s[(0) / 2, 8]`` derives a shape)
                yield x, f"the index of an array '{source_text(n.base)}[..]' is an integer", _CONVERT
        elif isinstance(n, A.GetIth):
            yield n.index, f"'{source_text(n.base)}(k)' takes an integer position k", "write the position: '0', '1', .."
        elif isinstance(n, A.ViewOp):
            if n.kind in _VIEW_ARGS:
                for x in n.args:
                    if not (isinstance(x, A.Name) and x.name == "_"):
                        yield x, f"the {_VIEW_ARGS[n.kind]} of '.{n.kind}' are integers", _CONVERT
            after = "from" if n.kind == "view" else "at"
            for group, what in ((n.at, f"the indices of '.{after}'"), (n.strides, "strides"), (n.step, "steps")):
                for x in group or []:
                    yield x, f"{what} are integers", _CONVERT
        elif isinstance(n, A.Binary) and n.op in _BITS:
            for x in (n.lhs, n.rhs):
                yield x, f"the operator '{n.op}' needs integer operands", _bits_hint(n.op)
        elif isinstance(n, A.Binary) and n.op in ("#+", "#-"):
            yield n.rhs, f"'{n.op}' changes a bound by an integer", _CONVERT
        elif isinstance(n, (A.SpannedDecl, A.FragDecl, A.EventDecl)):
            for d in n.items:
                for x in d.dims:
                    yield x, f"the dimensions of the array '{d.name}' are integers", "give a constant integer"
            if isinstance(n, A.FragDecl):
                for x in n.shape or []:
                    yield x, "a fragment's extents are integers", "give a constant integer"


def _bits_hint(op: str) -> str:
    if op in ("<<", ">>"):
        return (
            "shifts act on integers: multiply or divide a float by a power of two, or convert it with '__to<s32>(..)'"
        )
    return "bit operations act on integers: convert the value with '__to<s32>(..)' first"
