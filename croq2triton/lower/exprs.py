"""Spelling scalar/tensor arithmetic in Python (launcher) and Triton (kernel) code."""

from __future__ import annotations

from typing import Any

from ..errors import CroqSemanticError
from ..sema.consteval import fold_binary
from ..sema.types import TYPES, promote
from .values import Bounded, Shape, Tuple_, Val, const

TL_CMP = {"<", ">", "<=", ">=", "==", "!="}


def is_int(ty: str | None) -> bool:
    return ty in ("int", "bool") or (ty in TYPES and TYPES[ty].kind in ("int", "uint", "bool"))


def is_float(ty: str | None) -> bool:
    return ty in TYPES and TYPES[ty].is_float


def tl_dtype(ty: str | None) -> str:
    if ty in (None, "int"):
        return "tl.int32"
    if ty == "bool":
        return "tl.int1"
    t = TYPES[ty]
    assert t.triton is not None, ty
    return f"tl.{t.triton}"


def torch_dtype(ty: str) -> str:
    t = TYPES[ty]
    assert t.torch is not None, ty
    return f"torch.{t.torch}"


SMALL_INTS = ("s8", "s16", "u8", "u16")


def compute_type(ty: str | None) -> str | None:
    """The type arithmetic on ``ty`` values is carried out in (bf16/f8 upcast to f32; integers
    narrower than 32 bits promoted to s32, C's integer promotions: Triton keeps int8 * int8 in int8)."""
    if ty in ("bf16", "f8_e4m3", "f8_e5m2", "tf32"):
        return "f32"
    if ty in SMALL_INTS:
        return "s32"
    return ty


class ConsumerIndexError(Exception):
    """A consumer warpgroup index used in a way that several consumers cannot share."""


def cons_val(base: Val, coefs: dict[str, int]) -> Val:
    """``base + sum(coef * unit)`` over merged warp/warpgroup axes (only usable to select blocks)."""
    coefs = {k: v for k, v in coefs.items() if v}
    if not coefs:
        return base
    items = tuple(sorted(coefs.items()))
    tag = ", ".join(f"{k}*{v}" for k, v in items)
    return Val(f"@CONS({base.code}, {tag})", "int", None, base.axes, None, base.masks, base.nonneg, None, (base, items))


def _cons_binary(op: str, a: Val, b: Val, host: bool) -> Val:
    ab, ac = a.cons if a.cons is not None else (a, ())
    bb, bc = b.cons if b.cons is not None else (b, ())
    ca, cb = dict(ac), dict(bc)
    if op in ("+", "-"):
        base = binary(op, ab, bb, host)
        sign = 1 if op == "+" else -1
        coefs = dict(ca)
        for k, v in cb.items():
            coefs[k] = coefs.get(k, 0) + sign * v
        return cons_val(base, coefs)
    if op == "*" and b.cons is None and b.is_const and isinstance(b.const, int):
        return cons_val(binary("*", ab, b, host), {k: v * b.const for k, v in ca.items()})
    if op == "*" and a.cons is None and a.is_const and isinstance(a.const, int):
        return cons_val(binary("*", a, bb, host), {k: v * a.const for k, v in cb.items()})
    raise ConsumerIndexError(op)


def binary(op: str, a: Val, b: Val, host: bool) -> Val:
    """``a op b`` with C semantics (truncating integer division)."""
    if a.cons is not None or b.cons is not None:
        return _cons_binary(op, a, b, host)
    if op in TL_CMP or op in ("&&", "||"):
        ty = "bool"
    else:
        ty = promote(a.ty if a.ty != "bool" else "int", b.ty if b.ty != "bool" else "int")
    if a.is_const and b.is_const:
        try:
            v = fold_binary(op, a.const, b.const)
        except (ZeroDivisionError, TypeError, ValueError):
            v = None
        if v is not None:
            if isinstance(v, float) and is_int(ty):
                v = int(v)
            return const(v, ty if not isinstance(v, bool) else "bool")  # type: ignore[arg-type]
    axes = a.axes | b.axes
    ints = is_int(a.ty) and is_int(b.ty)
    # algebraic identities keep generated index arithmetic readable
    if op == "+" and a.is_const and a.const == 0 and ints:
        return b
    if op in ("+", "-") and b.is_const and b.const == 0 and ints:
        return a
    if op == "*" and ints and ((a.is_const and a.const == 1) or (b.is_const and b.const == 1)):
        return b if a.is_const and a.const == 1 else a
    if op == "/" and ints and b.is_const and b.const == 1:
        return a
    if op == "/" and ints and a.code == b.code and not a.axes and a.cons is None:
        return const(1)  # an extent divided by itself (sizes are positive)
    ac, bc = a.code, b.code
    if op in ("/", "%") and ints:
        if host:
            code = f"_rt.{'idiv' if op == '/' else 'imod'}({ac}, {bc})"
        else:
            # C truncation; equal to floor division for the non-negative indices Croqtile uses
            code = f"({ac} {'//' if op == '/' else '%'} {bc})"
    elif op == "&&":
        code = f"({ac} and {bc})" if host else f"(({ac}) & ({bc}))"
    elif op == "||":
        code = f"({ac} or {bc})" if host else f"(({ac}) | ({bc}))"
    else:
        code = f"({ac} {op} {bc})"
    hst = None
    if a.host is not None and b.host is not None and not axes:
        hv = binary(op, Val(a.host, a.ty, a.const), Val(b.host, b.ty, b.const), True) if not host else None
        hst = hv.code if hv is not None else code
    masks = tuple(dict.fromkeys(a.masks + b.masks))
    nonneg = a.nonneg and b.nonneg and op in ("+", "*", "/", "%", "<<", ">>", "&", "|", "^")
    ub = None
    if nonneg and ints:
        ua, ubb = a.ub, b.ub
        if op == "+" and ua is not None and ubb is not None and ua.is_const and ubb.is_const:
            ub = const(ua.const + ubb.const - 1)
        elif op == "*" and ua is not None and b.is_const and ua.is_const:
            ub = const((ua.const - 1) * b.const + 1)
        elif op == "%" and b.is_const:
            ub = b
    return Val(code, ty, None, axes, hst if not host else code, masks, nonneg, ub)


def cdiv(a: Val, b: Val, host: bool) -> Val:
    if a.is_const and b.is_const and b.const:
        return const(-(-a.const // b.const))
    code = f"_rt.cdiv({a.code}, {b.code})" if host else f"tl.cdiv({a.code}, {b.code})"
    hst = None
    if a.host is not None and b.host is not None and not (a.axes or b.axes):
        hst = f"_rt.cdiv({a.host}, {b.host})"
    return Val(code, "int", None, a.axes | b.axes, hst, tuple(dict.fromkeys(a.masks + b.masks)), a.nonneg and b.nonneg)


def shape_arith(op: str, a: Any, b: Any, span: Any, host: bool) -> Shape:
    """Element-wise arithmetic of an mdspan with another mdspan, an ituple or an integer."""

    def items(v: Any) -> list[Val] | None:
        if isinstance(v, Shape):
            return v.dims
        if isinstance(v, Tuple_):
            return v.items
        return None

    def scalar(v: Any) -> Val:
        v = v.value if isinstance(v, Bounded) else v
        if not isinstance(v, Val):
            raise CroqSemanticError(
                "shape arithmetic takes shapes, ituples and integers",
                span,
                "for the shape of a tensor or view write 'x.span'",
            )
        return v

    ia, ib = items(a), items(b)
    if ia is not None and ib is not None:
        if len(ia) != len(ib):
            raise CroqSemanticError("shape arithmetic needs equal ranks", span)
        return Shape([binary(op, x, y, host) for x, y in zip(ia, ib, strict=True)])
    if ia is not None:
        bv = scalar(b)
        return Shape([binary(op, x, bv, host) for x in ia])
    av = scalar(a)
    return Shape([binary(op, av, y, host) for y in ib or []])
