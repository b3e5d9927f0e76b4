"""``croq2triton run --size``: the values a run gives symbolic sizes and scalar parameters.

A function's *knobs* are the names ``--size`` may set: its symbolic extents (``M`` of ``f32 [M, K]``,
positive integers), the parameters whose extents are not named (``?`` dims and ``mdspan<R>``, set by
the parameter's name) and its scalar parameters (integers for ``int`` and integer element types,
numbers for float element types, ``true``/``false`` for ``bool``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .errors import CroqError
from .frontend import ast as A
from .sema.types import TYPES

DEFAULT_SIZE = 256  # symbolic extents
DEFAULT_UNKNOWN = 64  # extents of `?` dims and mdspan<R> parameters

Value = int | float | bool


@dataclass(frozen=True)
class Knob:
    name: str
    kind: str  # size | int | float | bool
    default: Value

    def convert(self, text: str) -> Value:
        """The value of ``--size NAME=text`` for this knob."""
        what = {
            "size": "a positive integer",
            "int": "an integer",
            "float": "a number",
            "bool": "true or false",
        }[self.kind]
        bad = CroqError(
            f"bad --size value '{text}' for '{self.name}': it must be {what}",
            hint=f"'{self.name}' is {_KIND_TEXT[self.kind]}",
        )
        t = text.strip()
        if self.kind == "bool":
            low = t.lower()
            if low in ("true", "1"):
                return True
            if low in ("false", "0"):
                return False
            raise bad
        if self.kind == "float":
            try:
                return float(t)
            except ValueError:
                raise bad from None
        try:
            v = int(t, 0) if t.lower().startswith(("0x", "-0x", "0b", "0o")) else int(t)
        except ValueError:
            raise bad from None
        if self.kind == "size" and v <= 0:
            raise bad
        return v


_KIND_TEXT = {
    "size": "a symbolic size",
    "int": "an integer parameter",
    "float": "a floating-point parameter",
    "bool": "a bool parameter",
}


def parse_sizes(items: Sequence[str] | None) -> dict[str, str]:
    """``--size M=128,N=64 --size alpha=0.5`` as written (values are checked against the functions)."""
    out: dict[str, str] = {}
    for item in items or []:
        for part in item.split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip().isidentifier() or not value.strip():
                raise CroqError(f"bad --size item '{part}'", hint="write --size M=128,N=64 (or NAME=0.5 for a float)")
            out[name.strip()] = value.strip()
    return out


def knobs(fn: A.CoFunction) -> dict[str, Knob]:
    """The names ``--size`` may set for ``fn``, in parameter order."""
    out: dict[str, Knob] = {}
    for p in fn.params:
        t = p.type
        if t.kind == "spanned":
            shape = t.shape
            dims = shape.dims if shape is not None and shape.dims is not None else None
            if dims is None:  # mdspan<R>: extents from the tensor
                if p.name:
                    out.setdefault(p.name, Knob(p.name, "size", DEFAULT_UNKNOWN))
                continue
            for d in dims:
                for n in d.walk():
                    if isinstance(n, A.Name):
                        out.setdefault(n.name, Knob(n.name, "size", DEFAULT_SIZE))
                    elif isinstance(n, A.Unknown) and p.name:
                        out.setdefault(p.name, Knob(p.name, "size", DEFAULT_UNKNOWN))
        elif p.name:
            knob = scalar_knob(p)
            if knob is not None:
                out[p.name] = knob
    return out


def scalar_knob(p: A.Param) -> Knob | None:
    """The knob of a scalar parameter (None: not a scalar).  An unnamed one (``int`` in
    ``f(int, f32 [N] x)``) is no name ``--size`` may set, but a run still passes it this default."""
    t = p.type
    name = p.name or ""
    if t.kind == "int":
        return Knob(name, "int", 1)
    if t.kind == "bool":
        return Knob(name, "bool", True)
    if t.kind == "elem":
        et = TYPES.get(t.elem or "")
        if et is not None and et.kind == "bool":
            return Knob(name, "bool", True)
        if et is not None and et.is_float:
            return Knob(name, "float", 1.0)
        return Knob(name, "int", 1)
    return None


@dataclass
class Chosen:
    """The values of one function's knobs for a run, and which of them were given."""

    values: dict[str, Value]
    given: set[str]

    kinds: dict[str, str] = field(default_factory=dict)

    def defaults_used(self) -> bool:
        """Does some symbolic size take its default?"""
        return any(k == "size" and n not in self.given for n, k in self.kinds.items())

    def describe(self) -> str:
        parts = [f"{k}={show(v)}" + ("" if k in self.given else " (default)") for k, v in self.values.items()]
        return ", ".join(parts) or "no sizes"


def show(v: Value) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def choose(fns: Sequence[A.CoFunction], raw: dict[str, str]) -> dict[str, Chosen]:
    """Each function's values: ``raw`` where given, defaults elsewhere.

    A name that is no knob of any function in ``fns`` is an error listing the names there are."""
    per_fn = {fn.name: knobs(fn) for fn in fns}
    known: dict[str, Knob] = {}
    for ks in per_fn.values():
        for k in ks.values():
            known.setdefault(k.name, k)
    unknown = [n for n in raw if n not in known]
    if unknown:
        names = ", ".join(fn.name for fn in fns)
        listed = ", ".join(f"{k.name} ({_KIND_TEXT[k.kind]})" for k in known.values()) or "none"
        raise CroqError(
            f"--size {', '.join(unknown)}: no size or parameter of that name in {names}",
            hint=f"the names --size can set: {listed}",
        )
    out: dict[str, Chosen] = {}
    for fn in fns:
        ks = per_fn[fn.name]
        values = {n: (k.convert(raw[n]) if n in raw else k.default) for n, k in ks.items()}
        out[fn.name] = Chosen(values, {n for n in ks if n in raw}, {n: k.kind for n, k in ks.items()})
    return out
