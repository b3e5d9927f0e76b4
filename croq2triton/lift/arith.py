"""Typed scalar arithmetic of Croqtile expressions (LANGUAGE.md 4.4, 7.7) over tile-IR trees.

C's usual conversions with Triton's weak literals, bf16 and fp8 arithmetic carried out in f32,
the math builtins; a lifting supplies what names and element reads mean (:meth:`Arith.leaf`).
The elementwise lifting (lift/kernel.py) and the epilogues of contractions (lift/epilogue.py)
both evaluate through it, so one expression means the same on both paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..frontend.builtins import c_scalar
from ..frontend.describe import describe
from ..sema.types import SUB_BYTE, TYPES, wrap_sub_byte
from ..sema.types import promote as c_promote
from ..tir import expr as E
from ..tir.expr import literal_only
from .host import ir_type
from .notlifted import NotLifted

# Croqtile math builtins computed in f32 (LANGUAGE.md 7.7): tl functions, or libdevice's through
# runtime/libmath.py (imported by every generated module as _libm; it runs in the interpreter too)
MATH_F32 = {
    "__exp": "exp", "__exp2f": "exp2", "__log": "log", "__sqrt": "sqrt", "__rsqrt": "rsqrt", "__sin": "sin",
    "__cos": "cos", "__floor": "floor", "__ceil": "ceil", "__sigmoid": "sigmoid", "__fmaf": "fma",
    "__tanh": "_libm.tanh", "__pow": "_libm.pow",
    "__log1p": "_libm.log1p", "__expm1": "_libm.expm1",
    "__round": "_libm.round", "__atan2": "_libm.atan2",
    "__tan": "_libm.tan", "__asin": "_libm.asin",
    "__acos": "_libm.acos", "__atan": "_libm.atan",
    "__sinh": "_libm.sinh", "__cosh": "_libm.cosh",
    # a helper's CUDA math functions that no builtin spells (frontend/device.py LIBM): names no program can write
    "__c_log2": "log2", "__c_erf": "erf", "__c_trunc": "_libm.trunc", "__c_rint": "_libm.rint",
    "__c_log10": "_libm.log10", "__c_exp10": "_libm.exp10", "__c_cbrt": "_libm.cbrt",
    "__c_hypot": "_libm.hypot", "__c_copysign": "_libm.copysign",
}  # fmt: skip
# the bits of a value as another type of its width: (the source type, the result type, the function)
BITCASTS = {
    "__bits_f32_as_s32": ("f32", "s32", "_libm.as_int32"), "__bits_f32_as_u32": ("f32", "u32", "_libm.as_uint32"),
    "__bits_s32_as_f32": ("s32", "f32", "_libm.as_float32"), "__bits_u32_as_f32": ("u32", "f32", "_libm.as_float32"),
    "__bits_f64_as_s64": ("f64", "s64", "_libm.as_int64"), "__bits_s64_as_f64": ("s64", "f64", "_libm.as_float64"),
}  # fmt: skip
ARITH_OPS = {"+", "-", "*", "/", "%"}
BITWISE_OPS = {"&", "|", "^"}
COMPARE_OPS = {"<", "<=", ">", ">=", "==", "!="}


def literal_type(e: A.IntLit) -> str:
    """The C type of an integer literal (LANGUAGE.md 3.3): ``int`` (s32) where it fits, else ``long``
    (s64); a hexadecimal one that does not fit ``int`` is ``unsigned int`` (u32) where it fits that, as
    in C; ``u`` makes it u32 or u64, ``l`` / ``ll`` at least 64 bits (the lexer's type)."""
    suffix = e.text[len(e.text.rstrip("uUlL")) :].lower()
    if e.type == "s64" and not suffix and e.text[:2] in ("0x", "0X") and e.value <= 0xFFFFFFFF:
        return "u32"
    return e.type


def sub_byte_bits(x: E.Expr, ctype: str) -> E.Expr:
    """The integer ``x`` (of a type at least as wide as the sub-byte type ``ctype``) wrapped to it:
    ``x & mask`` when unsigned, ``((x & mask) ^ sign) - sign`` (the low bits sign-extended) when signed."""
    sb = SUB_BYTE[ctype]
    low = E.Bin("&", x, E.Const((1 << sb.width) - 1, x.dtype))
    if not sb.signed:
        return low
    sign = E.Const(1 << (sb.width - 1), x.dtype)
    return E.Bin("-", E.Bin("^", low, sign), sign)


def weak(v: Value) -> bool:
    """Does ``v`` take the type of the other operand (a literal of type int, bool or a float, or
    arithmetic of literals only: ``1.0 / 3.0`` is as weak as ``2.0 * 3.0``, which folds to ``6.0``,
    whether or not the folding keeps the operation)?"""
    return literal_only(v.expr) and v.ctype not in ("s64", "u32", "u64")


@dataclass
class Value:
    """A lifted expression with its Croqtile type (``int``, ``bool`` or an element type)."""

    expr: E.Expr
    ctype: str


class Arith:
    """Literals, operators, conversions and builtins; names and element reads are :meth:`leaf`."""

    def leaf(self, e: A.Expr, want: str | None) -> Value:
        raise NotLifted(describe(e), e)

    def expr(self, e: A.Expr, want: str | None = None) -> Value:
        """The typed value of ``e``; names and element reads are the user's (:meth:`leaf`)."""
        if isinstance(e, A.Paren):
            return self.expr(e.expr, want)
        if isinstance(e, A.IntLit):
            ctype = literal_type(e)
            if ctype == "s32":  # an int: weak, it takes the type of the other operand (binary)
                return Value(E.Const(e.value), "int")
            return Value(E.Const(e.value, ir_type(ctype) or "i64"), ctype)
        if isinstance(e, A.FloatLit):
            return Value(E.Const(e.value, "f64" if e.double else "f32"), "f64" if e.double else "f32")
        if isinstance(e, A.InfLit):
            return Value(E.Const(float("inf"), "f32"), "f32")
        if isinstance(e, A.BoolLit):
            return Value(E.Const(e.value, "i1"), "bool")
        if isinstance(e, A.Binary) and e.op in ("&&", "||"):
            # C evaluates the right operand only where the left one does not decide: an element it reads
            # is read under that condition (``j < N && x.at(r, j) < t`` never reads past the row)
            a = self.expr(e.lhs)
            left = self.truth(a)
            with self.guarded(left if e.op == "&&" else E.fold(E.Un("!", left))):
                b = self.expr(e.rhs)
            return self.binary(e.op, a, b, e)
        if isinstance(e, A.Binary) and e.op not in ("#", "#+", "#-"):
            return self.binary(e.op, self.expr(e.lhs), self.expr(e.rhs), e)
        if isinstance(e, A.Unary):
            v = self.expr(e.operand)
            if e.op == "-":
                t = TYPES[self.ctype_of(v)] if v.ctype != "bool" else None
                if t is None or (t.bits < 32 and t.kind in ("int", "uint")):
                    v = self.convert(v, "s32")  # C's integer promotions first: -u8(67) is the int -67
                return Value(E.fold(E.Un("-", v.expr)), v.ctype)
            if e.op == "!":
                return Value(E.fold(E.Un("!", self.truth(v))), "bool")
            if e.op == "~":  # bitwise not of an integer, after C's integer promotions
                if TYPES[self.ctype_of(v)].is_float:
                    raise CroqSemanticError("'~' needs an integer operand", e.span)
                t = TYPES[self.ctype_of(v)]
                if t.bits < 32 and t.kind in ("int", "uint"):  # ``~u8(5)`` is the int -6
                    return Value(E.fold(E.Un("~", self.convert(v, "s32").expr)), "s32")
                if t.kind == "uint":  # all bits flipped: Triton's interpreter cannot invert unsigned tiles
                    ones = E.Const((1 << t.bits) - 1, v.expr.dtype)
                    return Value(E.fold(E.Bin("^", v.expr, ones)), v.ctype)
                if v.ctype != "bool":
                    return Value(E.fold(E.Un("~", v.expr)), v.ctype)
            raise NotLifted(f"the unary operator '{e.op}'", e)
        if isinstance(e, A.Ternary):
            c = self.truth(self.expr(e.cond))
            with self.guarded(c):  # (each branch's element reads under its condition, as C evaluates one)
                a = self.expr(e.then)
            with self.guarded(E.fold(E.Un("!", c))):
                b = self.expr(e.other)
            ctype = c_promote(self.ctype_of(a), self.ctype_of(b)) or a.ctype
            a, b = self.convert(a, ctype), self.convert(b, ctype)
            return Value(E.fold(E.Where(c, a.expr, b.expr)), ctype)
        if isinstance(e, A.Cast) and (not e.is_string or c_scalar(e.type) is not None):
            to = c_scalar(e.type) if e.is_string else e.type  # ``__to<"int">``: a C scalar type's element type
            if to is None or ir_type(to) is None:
                raise NotLifted(f"a conversion to '{e.type}'", e)
            return self.convert(self.expr(e.expr), to)
        if isinstance(e, A.ConvertLike):  # a helper's ``auto`` / template-typed local (frontend/device_body.py)
            return self.convert(self.expr(e.expr), self.ctype_of(self.expr(e.like)))
        if isinstance(e, A.Builtin):
            return self.builtin(e)
        return self.leaf(e, want)

    def activation(self, name: str, arg: Value) -> Value:
        """``__gelu`` (the exact GELU, ``x / 2 * (1 + erf(x / sqrt 2))``), ``__softplus``
        (``log(1 + e^x)``, as ``max(x, 0) + log1p(e^-|x|)``), ``__sign`` (-1, 0 or 1, in the type of
        an integer argument) and ``__isfinite``, in f32 (LANGUAGE.md 7.7)."""
        if name == "__sign" and not TYPES[self.ctype_of(arg)].is_float:
            x, t = arg.expr, arg.expr.dtype
            one = E.Where(E.Bin("<", x, E.Const(0, t)), E.Const(-1, t), E.Const(0, t))
            return Value(E.fold(E.Where(E.Bin(">", x, E.Const(0, t)), E.Const(1, t), one)), arg.ctype)
        x = self.convert(arg, "f32").expr
        f32 = "f32"
        if name == "__gelu":
            erf = E.Call("erf", (E.Bin("*", x, E.Const(0.7071067811865476, f32)),), f32)
            half = E.Bin("*", E.Const(0.5, f32), x)
            return Value(E.fold(E.Bin("*", half, E.Bin("+", E.Const(1.0, f32), erf))), f32)
        if name == "__softplus":
            tail = E.Call("_libm.log1p", (E.Call("exp", (E.Un("-", E.Call("abs", (x,), f32)),), f32),), f32)
            return Value(E.fold(E.Bin("+", E.Bin("max", x, E.Const(0.0, f32)), tail)), f32)
        if name == "__sign":
            neg = E.Where(E.Bin("<", x, E.Const(0.0, f32)), E.Const(-1.0, f32), E.Const(0.0, f32))
            return Value(E.fold(E.Where(E.Bin(">", x, E.Const(0.0, f32)), E.Const(1.0, f32), neg)), f32)
        # NaN compares false; an infinity is above the largest f32
        return Value(E.Bin("<=", E.Call("abs", (x,), f32), E.Const(3.4028234663852886e38, f32)), "bool")

    @contextmanager
    def guarded(self, cond: E.Expr) -> Iterator[None]:
        """What is evaluated inside runs only where ``cond`` holds (the right operand of ``&&``, a
        branch of ``?:``): a lifter that masks element reads by their conditions takes it."""
        del cond
        yield

    def ctype_of(self, v: Value) -> str:
        return "s32" if v.ctype == "int" else v.ctype

    def binary(self, op: str, a: Value, b: Value, node: A.Node) -> Value:
        if op in ("&&", "||"):
            return Value(E.fold(E.Bin("&" if op == "&&" else "|", self.truth(a), self.truth(b))), "bool")
        if op in ("<<", ">>"):
            return self.shift(op, a, b, node)
        if op in BITWISE_OPS:
            return self.bitwise(op, a, b, node)
        if op not in ARITH_OPS | COMPARE_OPS:
            raise NotLifted(f"the operator '{op}'", node)
        ca, cb = self.ctype_of(a), self.ctype_of(b)
        ctype = c_promote(ca, cb) or ca
        if a.ctype == "int" and b.ctype == "int":
            ctype = "int"
        # a literal takes the type of the other operand (Triton's weak scalar types), unless it is an
        # integer literal of a wider type than int (C: ``v + 2147483648`` is a long sum)
        if weak(a) and not literal_only(b.expr) and TYPES[ctype].is_float == TYPES[cb].is_float:
            ctype = b.ctype
        if weak(b) and not literal_only(a.expr) and TYPES[ctype].is_float == TYPES[ca].is_float:
            ctype = a.ctype
        compute = self.compute(ctype)
        x, y = self.convert(a, compute).expr, self.convert(b, compute).expr
        e = E.fold(E.Bin(op, x, y))
        return Value(e, "bool" if op in COMPARE_OPS else compute)

    def bitwise(self, op: str, a: Value, b: Value, node: A.Node) -> Value:
        """``a & b``, ``a | b``, ``a ^ b`` of integers (C's conversions; of two bools a bool)."""
        if a.ctype == "bool" and b.ctype == "bool":
            return Value(E.fold(E.Bin("!=" if op == "^" else op, a.expr, b.expr)), "bool")
        ca, cb = (self.ctype_of(v) if v.ctype != "bool" else "s32" for v in (a, b))
        if TYPES[ca].is_float or TYPES[cb].is_float:
            raise CroqSemanticError(f"the operator '{op}' needs integer operands", node.span)
        ctype = c_promote(ca, cb) or ca
        if weak(a) and not literal_only(b.expr):
            ctype = cb  # a literal takes the type of the other operand
        elif weak(b) and not literal_only(a.expr):
            ctype = ca
        compute = "int" if a.ctype == b.ctype == "int" else self.compute(ctype)
        x, y = (self.convert(Value(v.expr, "s32") if v.ctype == "bool" else v, compute).expr for v in (a, b))
        return Value(E.fold(E.Bin(op, x, y)), compute)

    def shift(self, op: str, a: Value, b: Value, node: A.Node) -> Value:
        """``a << b`` / ``a >> b`` of integers: the type of ``a`` after C's integer promotions;
        ``>>`` of a signed value is arithmetic, of an unsigned one logical (C and Triton agree)."""
        ca, cb = self.ctype_of(a), self.ctype_of(b)
        if TYPES[ca].kind not in ("int", "uint") or TYPES[cb].kind not in ("int", "uint"):
            raise NotLifted(f"the operator '{op}' on a value that is not an integer", node)
        ctype = "int" if a.ctype == "int" else self.compute(ca)
        x, y = self.convert(a, ctype).expr, self.convert(b, ctype).expr
        return Value(E.fold(E.Bin(op, x, y)), ctype)

    def compute(self, ctype: str) -> str:
        """bf16 and fp8 arithmetic is carried out in f32 (the interpreter computes bf16 wrongly);
        integers narrower than 32 bits in s32 (C's integer promotions; Triton keeps int8 * int8 in int8)."""
        if ctype in ("s8", "s16", "u8", "u16") or ctype in SUB_BYTE:
            return "s32"
        return "f32" if ctype in ("bf16", "f8_e4m3", "f8_e5m2", "tf32") else ctype

    def convert(self, v: Value, ctype: str) -> Value:
        if v.ctype == ctype or (ctype == "int" and v.ctype == "s32") or (ctype == "s32" and v.ctype == "int"):
            return Value(v.expr, ctype)
        target = ir_type(ctype)
        if target is None:
            raise NotLifted(f"a conversion to '{ctype}'", None)
        if ctype in SUB_BYTE:  # its low bits, in its byte (sign-extended if signed)
            if isinstance(v.expr, E.Const):
                return Value(E.Const(wrap_sub_byte(int(v.expr.value), ctype), target), ctype)
            a, b = SUB_BYTE.get(v.ctype), SUB_BYTE[ctype]
            if a is not None and b.lo <= a.lo and a.hi <= b.hi:  # every value of v's type is one of ctype's
                return Value(E.fold(E.Cast(v.expr, target)), ctype)
            low = sub_byte_bits(self.convert(v, "s32").expr, ctype)
            return Value(E.fold(E.Cast(low, target)), ctype)
        if isinstance(v.expr, E.Const) and not isinstance(v.expr.value, bool):
            value = float(v.expr.value) if TYPES[ctype].is_float else int(v.expr.value)
            return Value(E.Const(E.typed(value, target), target), ctype)  # wrapped or rounded, as C converts
        return Value(E.fold(E.Cast(v.expr, target)), ctype)

    def truth(self, v: Value) -> E.Expr:
        if v.ctype == "bool":
            return v.expr
        zero = E.Const(0.0, v.expr.dtype) if TYPES[self.ctype_of(v)].is_float else E.Const(0, v.expr.dtype)
        return E.fold(E.Bin("!=", v.expr, zero))

    def builtin(self, e: A.Builtin) -> Value:
        args = [self.expr(a) for a in e.args]
        if e.name == "cdiv" and len(args) == 2:
            return Value(E.fold(E.CDiv(args[0].expr, args[1].expr)), "int")
        if e.name in ("__max", "__min") and len(args) == 2:
            ctype = c_promote(self.ctype_of(args[0]), self.ctype_of(args[1])) or args[0].ctype
            x, y = self.convert(args[0], ctype).expr, self.convert(args[1], ctype).expr
            return Value(E.fold(E.Bin("max" if e.name == "__max" else "min", x, y)), ctype)
        if e.name in ("__alignup", "__aligndown") and len(args) == 2:  # to a multiple of the second
            x, a = args
            if TYPES[self.ctype_of(x)].is_float or TYPES[self.ctype_of(a)].is_float:
                raise CroqSemanticError(f"{e.name} needs integer operands", e.span)
            up = self.binary("-", self.binary("+", x, a, e), Value(E.Const(1), "int"), e)
            low = self.binary("/", up if e.name == "__alignup" else x, a, e)
            return self.binary("*", low, a, e)
        if e.name == "__fabs" and len(args) == 1:
            return Value(E.Call("abs", (args[0].expr,), args[0].expr.dtype), args[0].ctype)
        if e.name == "__frcp_rn" and len(args) == 1:  # 1 / x, rounded to the nearest (Triton's division)
            x = self.convert(args[0], "f32").expr
            return Value(E.fold(E.Bin("/", E.Const(1.0, "f32"), x)), "f32")
        if e.name in BITCASTS and len(args) == 1:  # a helper's __float_as_int (frontend/cudaconversions.py)
            src, dst, fn = BITCASTS[e.name]
            arg = self.convert(args[0], src).expr
            return Value(E.Call(fn, (arg,), ir_type(dst) or dst), dst)
        if e.name.startswith("__c_ovl_") and len(args) == 1:  # a helper's sqrt(x): in the argument's type
            fn = e.name.removeprefix("__c_ovl_")
            ctype = "f32" if self.ctype_of(args[0]) in ("f32", "f16", "bf16") else "f64"
            return Value(E.Call(fn, (self.convert(args[0], ctype).expr,), ctype), ctype)
        if e.name == "__c_hadd" and len(args) == 2:  # a helper's __hadd: of halves, or of ints (their average)
            if all(TYPES[self.ctype_of(a)].is_float for a in args):
                h = [self.convert(a, "f16") for a in args]
                return self.convert(self.binary("+", h[0], h[1], e), "f16")
            w = [self.convert(self.convert(a, "s32"), "s64") for a in args]
            total = self.binary("+", w[0], w[1], e)
            return self.convert(self.binary(">>", total, Value(E.Const(1), "int"), e), "s32")
        if e.name in ("__gelu", "__softplus", "__sign", "__isfinite") and len(args) == 1:
            return self.activation(e.name, args[0])
        fn = MATH_F32.get(e.name)
        if fn is None:
            raise NotLifted(f"the builtin '{e.name}'", e)
        f32 = tuple(self.convert(a, "f32").expr for a in args)
        return Value(E.Call(fn, f32, "f32"), "f32")
