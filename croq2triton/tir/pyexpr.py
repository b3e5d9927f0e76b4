"""Tile-IR expressions as Python ``ast`` nodes, for kernel code (Triton) or launcher code (torch).

The two differ where Python's and C's integer division differ: in a kernel ``//`` and ``%`` on
integers are Triton's, which truncate like C (and like Croqtile's ``/``); on the host Python's
``//`` floors, so a division whose operands may be negative goes through ``_rt.idiv`` /
``_rt.imod`` there (and a float's through ``_rt.fdiv`` / ``_rt.fmod``, C's where Python raises
on a zero or floors); in a kernel, two scalars that may be Python ``int`` in Triton's interpreter
(loop counters, constants) are made a Triton scalar first.  Logical negation ``!`` is ``not`` on
the host and, in a kernel, the negated comparison or ``== 0`` (``~`` of a Python ``bool`` is an
``int``).  A choice (``Where``) is ``tl.where`` in a kernel and ``a if c else b`` in a
launcher; ``&&`` / ``||`` (:class:`~.host.Logic`), element reads (:class:`~.host.ElemGet`) and the
host code's scalars computed as C computes them (:class:`~.host.CScalar`, tir/hostc.py) are
launcher code only.  ``ast.unparse`` then writes the fewest parentheses the precedence needs.
"""

from __future__ import annotations

import ast
import math
from typing import Literal

from ..sema.ccast import NARROW
from . import expr as E
from . import host as H
from .hostc import lower

Where_ = Literal["kernel", "host"]

TL_TYPES = {
    "i1": "int1",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f8e4": "float8e4nv",
    "f8e5": "float8e5",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
}

# conversions to 8-bit floats: through runtime/fp8.py (the interpreter rounds them otherwise)
FP8_CONVERSIONS = {"f8e4": "_fp8.to_e4m3", "f8e5": "_fp8.to_e5m2"}

# the reductions of schedule/foldloops.py that Triton has no function of: tl.reduce with the generated
# module's combining function (emit/module.py), named for the fold, of the operator it applies
REDUCE_OPERATORS = {"prod": "*", "or": "|", "and": "&", "xor": "^"}
REDUCE_COMBINE = {op: f"_fold_{op}" for op in REDUCE_OPERATORS}
_BINOPS: dict[str, ast.operator] = {
    "+": ast.Add(),
    "-": ast.Sub(),
    "*": ast.Mult(),
    "&": ast.BitAnd(),
    "|": ast.BitOr(),
    "^": ast.BitXor(),
    "<<": ast.LShift(),
    ">>": ast.RShift(),
}
_CMPOPS: dict[str, ast.cmpop] = {
    "<": ast.Lt(),
    "<=": ast.LtE(),
    ">": ast.Gt(),
    ">=": ast.GtE(),
    "==": ast.Eq(),
    "!=": ast.NotEq(),
}


def name(text: str) -> ast.expr:
    """``a.b.c`` as nested attribute nodes."""
    parts = text.split(".")
    out: ast.expr = ast.Name(parts[0], ast.Load())
    for p in parts[1:]:
        out = ast.Attribute(out, p, ast.Load())
    return out


def call(fn: str, *args: ast.expr, **kwargs: ast.expr) -> ast.expr:
    return ast.Call(name(fn), list(args), [ast.keyword(k, v) for k, v in kwargs.items()])


def tl_type(dtype: str) -> ast.expr:
    return name(f"tl.{TL_TYPES[dtype]}")


def constant(value: E.Number) -> ast.expr:
    if isinstance(value, float) and math.isinf(value):
        return call("float", ast.Constant("inf" if value > 0 else "-inf"))
    if isinstance(value, float) and math.isnan(value):
        return call("float", ast.Constant("nan"))
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def to_ast(e: E.Expr, where: Where_ = "kernel") -> ast.expr:
    """``e`` (folded first) as a Python expression for a kernel or a launcher."""
    return _node(E.fold(e), where)


def host_ast(e: E.Expr) -> ast.expr:
    """``e`` as a launcher expression, as built (not folded first): the host lifting folds as it
    builds, and a launch folds its kernel's expressions when it derives them."""
    return _node(e, "host")


def host_source(e: E.Expr) -> str:
    """``e`` as launcher text (see :func:`host_ast`); ``a and b and c`` without the parentheses
    Python 3.11's unparse puts around the third and later operands of a chain."""
    node = host_ast(e)
    if not isinstance(node, ast.BoolOp):
        return ast.unparse(node)
    low = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr)  # operands that bind less tightly
    op = " and " if isinstance(node.op, ast.And) else " or "
    return op.join(f"({ast.unparse(v)})" if isinstance(v, low) else ast.unparse(v) for v in node.values)


def dim_node(d: E.Dim) -> ast.expr:
    """A block extent: a literal, or the constexpr argument that holds one fixed at launch."""
    return ast.Name(d.name, ast.Load()) if isinstance(d, E.Extent) else ast.Constant(d)


def to_source(e: E.Expr, where: Where_ = "kernel") -> str:
    return ast.unparse(to_ast(e, where))


def negative_zero(value: E.Number) -> bool:
    return isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0


def _kernel_negative_zero(dtype: str) -> ast.expr:
    """``-0.0`` in a kernel: compiled Triton makes every constant equal to 0 a +0.0 (``x * -0.0``
    multiplies by +0.0), a zero tensor times -1.0 is -0.0 (folded to that constant)."""
    zero = call(
        "tl.full", ast.List([], ast.Load()), ast.Constant(0.0), tl_type(dtype if dtype in ("f16", "f64") else "f32")
    )
    return ast.BinOp(zero, ast.Mult(), ast.UnaryOp(ast.USub(), ast.Constant(1.0)))


def python_double(e: E.Expr) -> bool:
    """Is ``e``, in a kernel, a Python ``float`` that holds an f64: an f64 constant, or ``+ - *``
    and ``/`` by a non-zero constant of such (Python's float arithmetic is IEEE double's; a
    division by zero raises there)?  Triton makes a Python float an f32 wherever no f64 tensor
    gives it its type (a store, ``tl.where`` of two of them, ``tl.maximum``, a loop's initial value),
    so where one stands alone it is made an f64 scalar first (:func:`_node`)."""
    if e.dtype != "f64" or e.shape:
        return False
    if isinstance(e, E.Const):
        return isinstance(e.value, float) and not negative_zero(e.value)
    if isinstance(e, E.Un) and e.op == "-":
        return python_double(e.value)
    if isinstance(e, E.Bin) and e.op in ("+", "-", "*", "/"):
        if e.op == "/" and not (isinstance(e.rhs, E.Const) and e.rhs.value != 0):
            return False
        return python_double(e.lhs) and python_double(e.rhs)
    return False


def _f64_tensor(e: E.Expr) -> bool:
    """Is ``e``, in a kernel, an f64 Triton value (whose type a Python float beside it takes)?"""
    return e.dtype == "f64" and not python_double(e)


def _typed_scalar(e: E.Expr, where: Where_) -> ast.expr:
    """``e`` as an argument of a jit helper: a constant, or arithmetic of constants only, cast to its
    type (Triton passes a Python number to a jit function as a constexpr, which has no dtype)."""
    node = _node(e, where)
    if not e.shape and E.literal_only(e):
        return call("tl.cast", node, tl_type(e.dtype))
    return node


def _node(e: E.Expr, where: Where_) -> ast.expr:
    if where == "kernel" and python_double(e):
        return call("tl.full", ast.List([], ast.Load()), _bare(e), tl_type("f64"))
    return _bare(e, where)


def _operand(e: E.Expr, beside: E.Expr, where: Where_, both: bool) -> ast.expr:
    """An operand of a binary operation or a choice: a Python float of an f64 as it is where the
    other operand is an f64 tensor (Triton gives it that type) or, with ``both``, one too (Python
    computes in double)."""
    if where == "kernel" and python_double(e) and (_f64_tensor(beside) or (both and python_double(beside))):
        return _bare(e)
    return _node(e, where)


def _bare(e: E.Expr, where: Where_ = "kernel") -> ast.expr:
    if isinstance(e, E.Const):
        if where == "kernel" and negative_zero(e.value):
            return _kernel_negative_zero(e.dtype)
        return constant(e.value)
    if isinstance(e, E.Var):
        return name(e.name)  # a launcher variable may be a module's (``_rt.WARP_SPECIALIZE``)
    if isinstance(e, E.Arange):
        return call("tl.arange", ast.Constant(0), dim_node(e.n))
    if isinstance(e, E.Lift):
        return _lift(_node(e.value, where), e.rank, e.dims)
    if isinstance(e, E.Permute):
        if e.dims == (1, 0):
            return call("tl.trans", _node(e.value, where))
        return call("tl.permute", _node(e.value, where), ast.Tuple([ast.Constant(d) for d in e.dims], ast.Load()))
    if isinstance(e, E.Reshape):
        return call("tl.reshape", _node(e.value, where), ast.List([dim_node(d) for d in e.dims], ast.Load()))
    if isinstance(e, E.Join):
        return call("tl.join", _node(e.lhs, where), _node(e.rhs, where))
    if isinstance(e, E.Split):
        return ast.Subscript(call("tl.split", _node(e.value, where)), ast.Constant(e.half), ast.Load())
    if isinstance(e, E.Un):
        if e.op == "!" and where == "kernel":
            return _kernel_not(e.value)
        if e.op == "-" and where == "kernel" and not E.is_int(e.dtype):
            # Triton's ``-x`` is ``0 - x``, which makes -(+0.0) +0.0: times -1.0 flips the sign bit
            # exactly, as C's negation does (-0.0, -inf, NaN kept; compiled, an fneg: neg.f32)
            value = _bare(e.value) if python_double(e) else _node(e.value, where)
            return ast.BinOp(value, ast.Mult(), ast.UnaryOp(ast.USub(), ast.Constant(1.0)))
        op: ast.unaryop = ast.USub() if e.op == "-" else ast.Invert()
        if e.op == "!":
            op = ast.Not()
        return ast.UnaryOp(op, _node(e.value, where))
    if isinstance(e, E.Cast):
        if where == "host":
            return _host_cast(_node(e.value, where), e.type)
        if e.type in FP8_CONVERSIONS and e.value.dtype not in FP8_CONVERSIONS and e.value.dtype != "i1":
            # rounded and saturated as compiled, in the interpreter too (runtime/fp8.py)
            value = _node(e.value, where)
            if E.is_int(e.value.dtype):
                value = call("tl.cast", value, tl_type("f32"))
            return call(FP8_CONVERSIONS[e.type], value)
        if not e.value.shape:
            # a scalar argument may reach the kernel as a Python int (Triton specializes 1): tl.cast takes it;
            # a Python float of an f64 is rounded to f32 once there, to any other type from an f64 scalar
            value = _bare(e.value) if e.type == "f32" and python_double(e.value) else _node(e.value, where)
            return call("tl.cast", value, tl_type(e.type))
        return call_method(_node(e.value, where), "to", tl_type(e.type))
    if isinstance(e, E.CDiv):
        fn = "tl.cdiv" if where == "kernel" else "_rt.cdiv"
        return call(fn, _node(e.lhs, where), _node(e.rhs, where))
    if isinstance(e, E.Where):
        if where == "host":
            return ast.IfExp(_node(e.cond, where), _node(e.then, where), _node(e.other, where))
        then, other = _operand(e.then, e.other, where, False), _operand(e.other, e.then, where, False)
        return call("tl.where", _node(e.cond, where), then, other)
    if isinstance(e, E.Full):
        shape = ast.List([dim_node(d) for d in e.dims], ast.Load())
        if where == "kernel" and negative_zero(e.value):  # (see _kernel_negative_zero)
            minus_one = ast.UnaryOp(ast.USub(), ast.Constant(1.0))
            return ast.BinOp(call("tl.zeros", shape, tl_type(e.type)), ast.Mult(), minus_one)
        if e.value == 0 and not isinstance(e.value, bool):
            return call("tl.zeros", shape, tl_type(e.type))
        return call("tl.full", shape, constant(e.value), tl_type(e.type))
    if isinstance(e, E.Call):
        if e.fn.startswith("_libm.") and where == "kernel":
            # runtime/libmath.py's functions read their operands' dtype (compiled, an f32 subnormal is
            # scaled before libdevice): a constant is a Triton scalar of its type, not a Python float
            # (``__pow(0.5f, p)`` failed to compile for sm_90a: 'float' object has no attribute 'dtype')
            return call(e.fn, *(_typed_scalar(a, where) for a in e.args))
        if e.fn.startswith("_"):  # a helper of the generated module (``_as_dot_operand``)
            return call(e.fn, *(_node(a, where) for a in e.args))
        return call(f"tl.{e.fn}" if where == "kernel" else f"math.{e.fn}", *(_node(a, where) for a in e.args))
    if isinstance(e, E.Reduce):
        if e.op in REDUCE_COMBINE:  # (a fold Triton has no reduction of: tl.reduce with the module's function)
            return call("tl.reduce", _node(e.value, where), ast.Constant(e.axis), ast.Name(REDUCE_COMBINE[e.op]))
        return call(f"tl.{e.op}", _node(e.value, where), axis=ast.Constant(e.axis))
    if isinstance(e, (H.Logic, H.ElemGet, H.CScalar)):
        return _host_only(e, where)
    assert isinstance(e, E.Bin), e
    # two Python floats of f64s are computed by Python, in double, where they make a Python float
    # again (``python_double``) or a comparison's bool; a minimum of two would be an f32's
    both = python_double(e) or e.op in _CMPOPS
    lhs, rhs = _operand(e.lhs, e.rhs, where, both), _operand(e.rhs, e.lhs, where, both)
    if e.op in _BINOPS:
        return ast.BinOp(lhs, _BINOPS[e.op], rhs)
    if e.op in _CMPOPS:
        return ast.Compare(lhs, [_CMPOPS[e.op]], [rhs])
    if e.op in ("min", "max"):
        fn = {"min": "tl.minimum", "max": "tl.maximum"}[e.op] if where == "kernel" else e.op
        return call(fn, lhs, rhs)
    integer = E.is_int(e.lhs.dtype) and E.is_int(e.rhs.dtype)
    if not integer:
        if where == "kernel" and e.op == "/" and e.dtype in ("f32", "f16", "bf16"):
            return _kernel_fdiv(e, lhs, rhs)
        if where == "kernel" and e.op == "%" and not e.lhs.shape and not e.rhs.shape:
            # C's fmod, Triton's '%' of float tensors (frem): two Python floats (constants, and
            # parameters in the interpreter) would floor, so the dividend is made a Triton scalar
            lhs = lhs if python_double(e.lhs) else call("tl.cast", lhs, tl_type(e.dtype))  # (an f64 scalar)
        if where == "kernel" and e.op == "%":
            # C's fmod: exact, with the dividend's sign (runtime/libmath.py); libdevice takes operands of one
            # type (an f64 scalar with a literal failed to compile for sm_90a: tests/test_f64_constants.py)
            # (a Python float of an f64 as an f64 scalar first: cast from the f32 Triton makes of it, 0.03
            # would lose its double's bits)
            ty = tl_type(e.dtype)
            x, y = ((_node(v, where) if python_double(v) else n) for v, n in ((e.lhs, lhs), (e.rhs, rhs)))
            return call("_libm.fmod", call("tl.cast", x, ty), call("tl.cast", y, ty))
        if where == "host" and e.op == "%":
            return call("_rt.fmod", lhs, rhs)  # C's fmod (truncating), where Python's '%' floors
        if where == "host" and not (isinstance(e.rhs, E.Const) and e.rhs.value != 0):
            return call("_rt.fdiv", lhs, rhs)  # IEEE's: by zero an infinity or NaN, where Python raises
        return ast.BinOp(lhs, ast.Div() if e.op == "/" else ast.Mod(), rhs)
    if not (E.nonneg(e.lhs) and E.nonneg(e.rhs)):
        if where == "host":
            return call("_rt.idiv" if e.op == "/" else "_rt.imod", lhs, rhs)
        if _python_ints(e.lhs) and _python_ints(e.rhs):
            # two Python ints in the interpreter (a loop counter and a constant) would floor: as a
            # Triton scalar the quotient truncates like C, as it does compiled
            lhs = call("tl.cast", lhs, tl_type(e.lhs.dtype))
    return ast.BinOp(lhs, ast.FloorDiv() if e.op == "/" else ast.Mod(), rhs)


def _kernel_fdiv(e: E.Bin, lhs: ast.expr, rhs: ast.expr) -> ast.expr:
    """A float ``/`` in a kernel, correctly rounded as C's ``/`` is on CUDA: ``tl.math.div_rn``
    (``div.rn.f32``; Triton's ``/`` is ``div.full.f32``, up to 2 ulp off).  16-bit floats are
    divided in f32 and the quotient rounded to their type (rounding the correctly rounded f32
    quotient again is exact for f16 and bf16: f32 has more than twice their precision, plus two
    bits), as the source's f16 arithmetic is (docs/precision.md)."""
    if e.dtype == "f32":
        return call("tl.math.div_rn", *(_as_f32(x, v) for x, v in ((e.lhs, lhs), (e.rhs, rhs))))
    quotient = call("tl.math.div_rn", _as_f32(e.lhs, lhs, force=True), _as_f32(e.rhs, rhs, force=True))
    return call_method(quotient, "to", tl_type(e.dtype))


def _as_f32(e: E.Expr, node: ast.expr, force: bool = False) -> ast.expr:
    """An operand of ``div_rn`` (which takes f32 operands only): an f32 as it is, a literal as the
    value of its type (it takes the f32 of the other operand), anything else converted."""
    if e.dtype == "f32" and not force:
        return node
    if isinstance(e, E.Const) and negative_zero(e.value):
        return _kernel_negative_zero("f32")
    if isinstance(e, E.Const):
        return constant(E.typed(e.value, e.dtype)) if e.dtype in ("f16", "bf16") else node
    if not e.shape:
        return call("tl.cast", node, tl_type("f32"))
    return call_method(node, "to", tl_type("f32"))


def _python_ints(e: E.Expr) -> bool:
    """Whether ``e`` may be a Python ``int`` in Triton's interpreter: a scalar of constants and
    variables bounded below (loop counters; a call such as ``tl.num_programs``, and a value computed
    without known bounds, are Triton scalars there, whose ``//`` truncates)."""
    if e.shape or any(isinstance(n, (E.Call, E.Reduce)) for n in e.walk()):
        return False
    return all(v.lo is not None for v in E.free_vars(e))


_NEGATED = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _kernel_not(value: E.Expr) -> ast.expr:
    """``!value`` in a kernel. Not ``~value``: a condition on loop counters and constants is a
    Python ``bool`` in Triton's interpreter, where ``~True`` is ``-2`` (true). A comparison is
    negated (``<`` as ``>=`` only between integers, where no NaN makes both false); anything else
    is ``value == 0``, which is the negation for a Python bool, a scalar and a block of ``int1``;
    ``!(a | b)`` is ``!a & !b`` and ``!(a & b)`` is ``!a | !b`` (De Morgan, on conditions), ``!!a`` is ``a``."""
    if isinstance(value, E.Un) and value.op == "!":
        return _node(value.value, "kernel")
    if isinstance(value, E.Bin) and value.op in E.LOGIC and value.dtype == "i1":
        other = ast.BitAnd() if value.op == "|" else ast.BitOr()
        return ast.BinOp(_kernel_not(value.lhs), other, _kernel_not(value.rhs))
    if isinstance(value, E.Bin) and value.op in _NEGATED:
        exact = value.op in ("==", "!=") or (E.is_int(value.lhs.dtype) and E.is_int(value.rhs.dtype))
        if exact:
            negated = E.Bin(_NEGATED[value.op], value.lhs, value.rhs)
            return _node(negated, "kernel")
    return ast.Compare(_node(value, "kernel"), [ast.Eq()], [ast.Constant(0)])


def call_method(obj: ast.expr, method: str, *args: ast.expr) -> ast.expr:
    return ast.Call(ast.Attribute(obj, method, ast.Load()), list(args), [])


def _lift(value: ast.expr, rank: int, dims: tuple[int, ...]) -> ast.expr:
    items: list[ast.expr] = [ast.Slice() if d in dims else ast.Constant(None) for d in range(rank)]
    return ast.Subscript(value, ast.Tuple(items, ast.Load()), ast.Load())


def _host_only(e: H.Logic | H.ElemGet | H.CScalar, where: Where_) -> ast.expr:
    if where != "host":
        raise ValueError(f"{type(e).__name__} is launcher code, not kernel code")
    if isinstance(e, H.CScalar):  # the source's host code: computed as C computes it
        return _node(lower(e), where)
    if isinstance(e, H.Logic):
        a, b = e.values[0], e.values[-1]
        chained = e.op == "and" and len(e.values) == 2 and isinstance(a, E.Bin) and isinstance(b, E.Bin)
        if chained and a.op in _CMPOPS and b.op in _CMPOPS and a.rhs == b.lhs:  # lo <= x < hi
            return ast.Compare(
                _node(a.lhs, where), [_CMPOPS[a.op], _CMPOPS[b.op]], [_node(a.rhs, where), _node(b.rhs, where)]
            )
        op: ast.boolop = ast.And() if e.op == "and" else ast.Or()
        return ast.BoolOp(op, [_node(v, where) for v in e.values])
    index = ast.Tuple([_node(i, where) for i in e.index], ast.Load())
    tensor = ast.Name(e.host, ast.Load())
    fn = "_rt.elem_address" if e.address else "_rt.elem_get"
    return call(fn, ast.Name("_F", ast.Load()), ast.Constant(e.tensor), tensor, index, ast.Constant(e.line))


def _host_cast(value: ast.expr, dtype: str) -> ast.expr:
    if dtype in NARROW:  # rounded or wrapped as C converts (sema/ccast.py)
        return call("_rt.host_cast", value, ast.Constant(dtype))
    if dtype == "i1":
        return call("bool", value)
    if E.is_int(dtype):
        return call("int", value)
    return call("float", value)
