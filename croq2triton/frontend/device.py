"""``__device__`` helper functions of a .co file (LANGUAGE.md 1, 7.7), read so that ``call`` can
use the ones Triton can express.

The front end keeps device code as text islands (frontend/preprocess.py).  A helper whose body
computes a value from its parameters, with arithmetic and CUDA intrinsics that have a Triton
counterpart, is read here into a Croqtile expression (the front end's own AST): math
intrinsics become the Croqtile builtins that compute them (``fabsf`` is ``__fabs``, ``__expf`` is
``__exp``), atomics the Croqtile atomics on the element their pointer addresses (``atomicAdd(a, b)``
is ``__atomic_add(*a, b)``; a call passes ``&t.at(i)`` for ``a``), warp shuffles a builtin of
their own (``__shfl_xor_sync``, a permutation of the threads' values that the lifting knows).
A body of statements (locals, assignments, ``if``, ``for`` / ``while`` loops, early ``return``s,
atomics in any number and under conditions) is that one expression by substitution, with its
effects in order beside it (frontend/device_body.py).
Anything else leaves the function with the reason, naming the construct where it stands
(``a 'for' loop at line 12``), which a call of it reports.

The C++ read here is a small expression language: literals, parameters, ``+ - * / % << >> & | ^
&& || ! ~``, comparisons, ``?:``, casts (``(float)x``, ``float(x)``, ``static_cast<float>(x)``),
calls of the intrinsics below and of other helpers (``F<float, 3>(x)`` too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from ..errors import Span
from . import ast as A
from .bitintrinsics import BITS, REDUCES, VOTES, active_mask, bit_intrinsic, vote, warp_reduce
from .cudaconversions import BITCASTS, CONVERSIONS, conversion
from .device_body import Refused as _Refused
from .device_body import StatementReader
from .preprocess import C_BINARY_LEVELS

# C spellings of the element types (``choreo::`` / ``croq::`` names are the Croqtile ones)
C_TYPES = {
    "float": "f32", "double": "f64", "bool": "bool", "half": "f16", "__half": "f16",
    "__nv_bfloat16": "bf16", "nv_bfloat16": "bf16", "__nv_fp8_e4m3": "f8_e4m3", "__nv_fp8_e5m2": "f8_e5m2",
    "int": "s32", "signed": "s32", "signed int": "s32", "unsigned": "u32", "unsigned int": "u32",
    "short": "s16", "short int": "s16", "unsigned short": "u16", "char": "s8", "signed char": "s8",
    "unsigned char": "u8", "long": "s64", "long int": "s64", "long long": "s64", "long long int": "s64",
    "unsigned long": "u64", "unsigned long long": "u64", "size_t": "u64",
    "int8_t": "s8", "int16_t": "s16", "int32_t": "s32", "int64_t": "s64",
    "uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32", "uint64_t": "u64",
}  # fmt: skip
# Croqtile's own names of the element types Triton has (``choreo::f16``)
CROQ_TYPES = {"f64", "f32", "f16", "bf16", "f8_e4m3", "f8_e5m2", "s64", "s32", "s16", "s8", "u64", "u32", "u16", "u8"}
QUALIFIERS = {
    "__device__", "__co_device__", "__host__", "__forceinline__", "__inline__", "inline", "static", "constexpr",
    "extern", "__noinline__", "const", "volatile", "__restrict__", "__restrict", "typename",
}  # fmt: skip

# intrinsics computed by a Croqtile builtin of the same arguments
MATH = {
    "fabsf": "__fabs", "fabs": "__fabs", "abs": "__fabs", "__expf": "__exp", "expf": "__exp", "exp2f": "__exp2f",
    "__exp2f": "__exp2f", "expm1f": "__expm1", "__logf": "__log", "logf": "__log", "log1pf": "__log1p",
    "sqrtf": "__sqrt", "__fsqrt_rn": "__sqrt", "rsqrtf": "__rsqrt", "__sinf": "__sin", "sinf": "__sin",
    "__cosf": "__cos", "cosf": "__cos", "__tanf": "__tan", "tanf": "__tan", "tanhf": "__tanh", "asinf": "__asin",
    "acosf": "__acos", "atanf": "__atan", "atan2f": "__atan2", "sinhf": "__sinh", "coshf": "__cosh",
    "floorf": "__floor", "ceilf": "__ceil", "roundf": "__round", "powf": "__pow", "__powf": "__pow",
    "fmaf": "__fmaf", "__fmaf_rn": "__fmaf", "max": "__max", "min": "__min", "fmaxf": "__max", "fminf": "__min",
    "fmax": "__max", "fmin": "__min", "::max": "__max", "::min": "__min", "labs": "__fabs", "llabs": "__fabs",
    "__frsqrt_rn": "__rsqrt",
}  # fmt: skip
ARITY = {"__fmaf": 3, "__max": 2, "__min": 2, "__pow": 2, "__atan2": 2}
# CUDA's float math functions that no Croqtile builtin spells: a builtin of the lifting (lift/arith.py
# MATH_F32), each computed in f32 with C's values (runtime/libmath.py); name -> (builtin, arity)
LIBM = {
    "truncf": ("__c_trunc", 1), "rintf": ("__c_rint", 1), "nearbyintf": ("__c_rint", 1),
    "log2f": ("__c_log2", 1), "__log2f": ("__c_log2", 1), "log10f": ("__c_log10", 1), "__log10f": ("__c_log10", 1),
    "exp10f": ("__c_exp10", 1), "__exp10f": ("__c_exp10", 1), "cbrtf": ("__c_cbrt", 1), "erff": ("__c_erf", 1),
    "hypotf": ("__c_hypot", 2), "copysignf": ("__c_copysign", 2),
}  # fmt: skip
# C++'s overloads of the math functions without a suffix (``sqrt(x)``): computed in the type of their
# argument, float for a float or half, double for a double or an integer (lift/arith.py ``__c_ovl_*``)
OVERLOADED = frozenset({"sqrt", "exp", "log", "sin", "cos", "floor", "ceil", "exp2", "log2", "::sqrt", "std::sqrt"})
# float tests (C's macros, CUDA's functions): their result an int
FLOAT_TESTS = frozenset({"isnan", "isinf", "isfinite", "signbit", "__isnanf", "__isinff", "__finitef"})
# half-precision arithmetic (cuda_fp16.h): the operator on the operands as halves, the result a half
# (``__hadd`` is also the integer average of two ints: lift/arith.py ``__c_hadd`` picks by the type)
HALF_OPS = {"__hsub": "-", "__hmul": "*", "__hdiv": "/"}
# half comparisons (cuda_fp16.h): the comparison of the operands as halves, a bool
HALF_COMPARES = {"__heq": "==", "__hne": "!=", "__hlt": "<", "__hle": "<=", "__hgt": ">", "__hge": ">="}
# typed minimum / maximum (CUDA's integer math API): name -> (builtin, the type of both operands)
TYPED_MINMAX = {
    "umin": ("__min", "u32"), "umax": ("__max", "u32"), "llmin": ("__min", "s64"), "llmax": ("__max", "s64"),
    "ullmin": ("__min", "u64"), "ullmax": ("__max", "u64"), "__hmin": ("__min", "f16"), "__hmax": ("__max", "f16"),
}  # fmt: skip
# CUDA's integer intrinsics, as the 64-bit arithmetic that computes them exactly: name -> arity
INT_INTRINSICS = {
    "__umulhi": 2, "__mulhi": 2, "__mul24": 2, "__umul24": 2, "__sad": 3, "__usad": 3, "__uhadd": 2,
    "__rhadd": 2, "__urhadd": 2, "__funnelshift_l": 3, "__funnelshift_r": 3, "__funnelshift_lc": 3,
    "__funnelshift_rc": 3, "__byte_perm": 3,
}  # fmt: skip
# rounding-mode arithmetic: the operator itself (Triton rounds to nearest)
# CUDA's loads through a pointer with a cache hint (read-only path, cache global / all / streaming /
# last use / volatile): each returns the value the pointer addresses, ``*p``
CACHED_LOADS = frozenset({"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"})
OPERATORS = {"__fdividef": "/", "__fdiv_rn": "/", "__fmul_rn": "*", "__fadd_rn": "+", "__fsub_rn": "-"}
ATOMICS = {
    "atomicAdd": "__atomic_add", "atomicSub": "__atomic_sub", "atomicExch": "__atomic_exch",
    "atomicMin": "__atomic_min", "atomicMax": "__atomic_max", "atomicAnd": "__atomic_and",
    "atomicOr": "__atomic_or", "atomicXor": "__atomic_xor", "atomicCAS": "__atomic_cas",
}  # fmt: skip
# warp shuffles: (the builtin, whether the first argument is the mask of participating threads)
SHUFFLES = {
    "__shfl_xor_sync": ("__shfl_xor_sync", True), "__shfl_sync": ("__shfl_sync", True),
    "__shfl_down_sync": ("__shfl_down_sync", True), "__shfl_up_sync": ("__shfl_up_sync", True),
    "__shfl_xor": ("__shfl_xor_sync", False), "__shfl": ("__shfl_sync", False),
    "__shfl_down": ("__shfl_down_sync", False), "__shfl_up": ("__shfl_up_sync", False),
}  # fmt: skip
SHUFFLE_BUILTINS = frozenset(b for b, _ in SHUFFLES.values())


MAX_PATHS = 200_000  # nodes of an expanded helper's body counted once per path to them


def _paths(*roots: A.Node) -> int:
    """The nodes under ``roots`` counted once per path to them (a shared named value once per
    reader): what a walk of the expression visits."""
    memo: dict[int, int] = {}
    for root in roots:  # (children first: no recursion)
        stack: list[tuple[A.Node, bool]] = [(root, False)]
        while stack:
            n, done = stack.pop()
            if id(n) in memo:
                continue
            kids = list(n.children())
            if done:
                memo[id(n)] = 1 + sum(memo[id(k)] for k in kids)
                continue
            stack.append((n, True))
            stack.extend((k, False) for k in kids if id(k) not in memo)
    return sum(memo[id(r)] for r in roots)


@dataclass
class DeviceParam:
    name: str
    ctype: str | None  # the Croqtile element type; None for a template's type (the argument's)
    pointer: bool = False
    template: str | None = None  # the template's type parameter it has (``T``)
    default: A.Expr | None = None  # ``float t = 0.5f``: its value where a call leaves it out


@dataclass
class DeviceFunction:
    """One ``__device__`` function: its signature, and either its body as one Croqtile expression
    over the parameters' names or why it has none (``refusal``, naming the construct)."""

    name: str
    params: list[DeviceParam]
    returns: str | None  # Croqtile type, 'void', or None for a template's type
    body: A.Expr | None
    refusal: str | None
    span: Span | None = field(default=None, compare=False, repr=False)
    # ``template <typename T, int S>``: its parameters in order, each with whether it is a type
    tparams: tuple[tuple[str, bool], ...] = ()
    # values the body names (frontend/device_body.py), in order: each over the parameters and earlier ones
    lets: list[tuple[str, A.Expr]] = field(default_factory=list)
    # its effects (atomics, calls of helpers with effects) in the order they run: names of ``lets``
    # (after :meth:`flatten`, the shared values themselves), each run whether or not the value reads it
    effects: list[A.Expr] = field(default_factory=list)
    # what it was read from: its text, where, its template's type and value parameters (read again
    # where a call gives the values: frontend/helpers.py)
    source: tuple[str, Span | None, frozenset[str], frozenset[str], frozenset[str]] | None = field(
        default=None, compare=False, repr=False
    )
    instance: str = ""  # the template values it was read with (``3`` of ``POW<3>``): its helper's name has them
    signature_read: bool = True  # False where its return type or parameters were not read (params unknown)

    def nodes(self) -> list[A.Node]:
        """Every node of the body and of its named values."""
        if self.body is None:
            return []
        return list(A.walk_once(*(e for _, e in self.lets), *self.effects, self.body))

    @property
    def has_effects(self) -> bool:
        """Does a call of it change something (an atomic, a call of a helper that does)?"""
        return bool(self.effects) or any(isinstance(n, A.Call) and n.kind == "atomic" for n in self.nodes())

    def flatten(self) -> None:
        """The named values substituted into the body (for a helper expanded at its call): each one
        node (``Paren.shared``) that its reads share, not a copy per read."""
        if self.body is None or not self.lets:
            return
        values: dict[str, A.Expr] = {}
        seen: set[int] = set()  # (a node several share, a loop its values read: looked into once)

        def sub(e: A.Expr) -> A.Expr:
            if isinstance(e, A.Name) and e.name in values:
                return values[e.name]
            if id(e) in seen:
                return e
            seen.add(id(e))
            for f in fields(e):
                v = getattr(e, f.name)
                if f.name in ("span", "device", "written", "effects", "expanded"):
                    continue
                if isinstance(v, A.Expr):
                    setattr(e, f.name, sub(v))
                elif isinstance(v, list):
                    setattr(e, f.name, [sub(x) if isinstance(x, A.Expr) else x for x in v])
            return e

        for name, e in self.lets:
            values[name] = A.Paren(sub(e), shared=name, span=e.span)
        self.body = sub(self.body)
        self.effects = [sub(e) for e in self.effects]
        self.lets = []
        paths = _paths(self.body, *self.effects)
        if paths > MAX_PATHS:  # (the later stages look at an expression along each of its paths)
            self.body, self.effects = None, []
            self.refusal = (
                f"a body whose values read one another along more than {MAX_PATHS} paths (about {paths}) once"
                " expanded at its call: write it with fewer merges of locals (loops unrolled around loops"
                " of a run-time trip count, 'if's or 'break's that change many locals)"
            )

    @property
    def loops(self) -> bool:
        """Does the body run a loop of a run-time trip count (lifted where the call is)?"""
        return any(isinstance(n, A.DeviceLoop) for n in self.nodes())

    @property
    def shuffles(self) -> bool:
        """Does the body exchange values between threads (a warp shuffle)?"""
        return any(isinstance(n, A.Builtin) and n.name in SHUFFLE_BUILTINS for n in self.nodes())

    @property
    def addresses(self) -> bool:
        """Does the body take an address or go through a pointer (an atomic, a read through ``*p``)?"""
        if any(p.pointer for p in self.params):
            return True
        return any(
            (isinstance(n, A.Call) and n.kind == "atomic") or (isinstance(n, A.Unary) and n.op in ("&", "*"))
            for n in self.nodes()
        )


_TOKEN = re.compile(
    r"(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)"
    r"|(?P<num>0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFuUlL]*)"
    r"|(?P<id>(?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)"
    r"|(?P<str>\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*')"
    r"|(?P<op><<=|>>=|->|\+=|-=|\*=|/=|%=|&=|\|=|\^=|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^~!<>=?:;,.(){}\[\]#])",
    re.S,
)


@dataclass
class _Tok:
    kind: str  # num id str op end
    text: str
    start: int  # offset in the preprocessed text
    end: int


def _tokens(text: str, base: int) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _Refused(f"the character {text[pos]!r}")
        kind = m.lastgroup or "op"
        if kind not in ("ws", "comment"):
            value = re.sub(r"\s+", "", m.group()) if kind == "id" else m.group()
            out.append(_Tok(kind, value, base + m.start(), base + m.end()))
        pos = m.end()
    out.append(_Tok("end", "", base + len(text), base + len(text)))
    return out


def template_params(host_before: str) -> set[str]:
    """The type parameters of a ``template <typename T, class C>`` that ends the host text before
    a device function (the front end leaves it there)."""
    return {name for name, is_type in template_list(host_before) if is_type}


def template_list(host_before: str) -> list[tuple[str, bool]]:
    """The parameters of the ``template <typename T, int S>`` that ends the host text before a
    device function, in order, each with whether it is a type (``typename`` / ``class``)."""
    qualifiers = r"(?:(?:__host__|static|inline|__inline__|__forceinline__|constexpr|extern)\s+)*"
    m = re.search(r"template\s*<([^<>]*)>\s*" + qualifiers + "$", _strip_comments(host_before))
    if m is None:
        return []
    out: list[tuple[str, bool]] = []
    for part in m.group(1).split(","):
        words = part.split("=")[0].split()
        if len(words) >= 2:
            out.append((words[-1], words[0] in ("typename", "class")))
    return out


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def read_device(
    text: str,
    span: Span | None,
    templates: set[str] | None = None,
    values: set[str] | None = None,
    given: dict[str, int] | None = None,
    effectful: set[str] | None = None,
) -> DeviceFunction | None:
    """The device function of one device-code island (None when it declares something else: a
    variable, a struct); ``templates`` / ``values``: the names of its template's type and value
    parameters (a value parameter is a name of its body that a call's template argument gives);
    ``given``: the values of those a call's template arguments give (a loop's bound);
    ``effectful``: the helpers read before it whose calls change something (its calls of them are
    effects, frontend/device_body.py)."""
    base = span.start if span is not None and span.offsets_known else 0
    smap = span._map if span is not None and span.offsets_known else None  # noqa: SLF001 - the island's own map
    reader = _Reader(text, base, smap, span, templates or set())
    reader.values = values or set()
    reader.given = given or {}
    reader.effectful = set(effectful or ())
    try:
        toks = _tokens(text, base)
    except _Refused:
        return None
    reader.toks = toks
    df = reader.function()
    if df is not None:
        df.source = (text, span, frozenset(templates or ()), frozenset(values or ()), frozenset(effectful or ()))
    return df


class _Reader(StatementReader):
    def __init__(self, text: str, base: int, smap: object, span: Span | None, templates: set[str]) -> None:
        self.text = text
        self.base = base
        self.smap = smap
        self.span = span
        self.templates = templates
        self.values: set[str] = set()  # the template's value parameters (``template <int S>``)
        self.toks: list[_Tok] = []
        self.pos = 0
        self.params: dict[str, DeviceParam] = {}
        self.effectful: set[str] = set()  # the helpers read before it whose calls are effects
        self.returns_like: A.Expr | None = None

    # ------------------------------------------------------------ helpers
    def sp(self, start: int, end: int) -> Span | None:
        if self.smap is None:
            return self.span
        return Span(self.smap, start, end)  # type: ignore[arg-type]

    def line_of(self, tok: _Tok) -> str:
        s = self.sp(tok.start, tok.end)
        return f" at line {s.line}" if s is not None and s.line else ""

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def take(self) -> _Tok:
        t = self.peek()
        self.pos += 1
        return t

    def expect(self, text: str) -> _Tok:
        t = self.take()
        if t.text != text:
            raise _Refused(f"'{t.text or 'the end'}' where '{text}' was expected{self.line_of(t)}")
        return t

    # ------------------------------------------------------------ signature
    def function(self) -> DeviceFunction | None:
        head: list[_Tok] = []
        while self.peek().kind != "end" and self.peek().text not in ("(", "{", ";", "="):
            head.append(self.take())
        if self.peek().text != "(" or not head or head[-1].kind != "id":
            return None  # a variable, a struct: not a function
        name = head[-1].text
        span = self.sp(head[-1].start, head[-1].end)
        words = [t.text for t in head[:-1] if t.text not in QUALIFIERS and not t.text.startswith("__launch_bounds__")]
        auto = words == ["auto"]  # (its value's type: each return's value kept as it is)
        try:
            returns = None if auto else self.type_of(words, allow_void=True)
        except _Refused as e:
            return DeviceFunction(name, [], None, None, f"it returns {e.message}", span, signature_read=False)
        try:
            params = self.signature()
        except _Refused as e:
            return DeviceFunction(name, [], returns, None, e.message, span, signature_read=False)
        self.params = {p.name: p for p in params}
        if self.peek().text in ("const", "noexcept"):
            self.take()
        if self.peek().text != "{":
            return DeviceFunction(name, params, returns, None, "it is declared here without a body", span)
        try:
            self.returns_like = self.like_of(words, head[-1]) if returns is None and not auto else None
            body = self.body(returns)
        except _Refused as e:
            return DeviceFunction(name, params, returns, None, e.message, span)
        effects: list[A.Expr] = [A.Name(n) for n in self.effect_names]
        return DeviceFunction(name, params, returns, body, None, span, lets=self.lets, effects=effects)

    def type_of(self, words: list[str], allow_void: bool = False) -> str | None:
        """The Croqtile type of a C type spelt by ``words`` (None: a template's type parameter)."""
        spelled = " ".join(w for w in words if w not in ("*", "&"))
        for prefix in ("choreo::", "croq::", "std::"):
            spelled = spelled.replace(prefix, "")
        if spelled in self.templates:
            return None
        if spelled == "void" and allow_void:
            return "void"
        if spelled in C_TYPES:
            return C_TYPES[spelled]
        if spelled in CROQ_TYPES:
            return spelled
        raise _Refused(f"a value of type '{spelled or '?'}'")

    def signature(self) -> list[DeviceParam]:
        self.expect("(")
        params: list[DeviceParam] = []
        if self.peek().text == ")":
            self.take()
            return params
        if self.peek().text == "void" and self.peek(1).text == ")":
            self.pos += 2
            return params
        while True:
            words: list[_Tok] = []
            depth = 0
            while self.peek().kind != "end" and not (depth == 0 and self.peek().text in (",", ")", "=")):
                t = self.take()
                depth += t.text in ("<", "(", "[") and 1 or 0
                depth -= t.text in (">", ")", "]") and 1 or 0
                words.append(t)
            default = None
            if self.peek().text == "=":  # ``float t = 0.5f``: a default argument
                self.take()
                default = self.expr()
            names = [t for t in words if t.kind == "id" and t.text not in QUALIFIERS]
            if len(names) < 2 or any(t.text in ("[", "(") for t in words):
                what = " ".join(t.text for t in words)
                raise _Refused(f"a parameter '{what}' of a form this translator does not read")
            pointer = any(t.text == "*" for t in words)
            type_words = [t.text for t in names[:-1]]
            try:
                ctype = self.type_of(type_words)
            except _Refused as e:
                raise _Refused(f"its parameter '{names[-1].text}' is {e.message}") from None
            template = " ".join(type_words) if ctype is None else None
            params.append(DeviceParam(names[-1].text, ctype, pointer, template, default))
            sep = self.take()
            if sep.text == ")":
                return params
            if sep.text != ",":
                raise _Refused(f"'{sep.text}' in its parameter list{self.line_of(sep)}")

    # ------------------------------------------------------------ body
    def body(self, returns: str | None) -> A.Expr:
        """The body as one expression (frontend/device_body.py)."""
        return self.statements(returns == "void", returns)

    # ------------------------------------------------------------ expressions (C precedence)
    BINARY_LEVELS = C_BINARY_LEVELS

    def expr(self) -> A.Expr:
        t = self.peek()
        if t.text in ("=", "+=", "-=", "*=", "/=", "<<=", ">>="):
            raise _Refused(f"an assignment{self.line_of(t)}")
        cond = self.binary(0)
        if self.peek().text in ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="):
            raise _Refused(f"an assignment{self.line_of(self.peek())}")
        if self.peek().text != "?":
            return cond
        self.take()
        then = self.expr()
        self.expect(":")
        other = self.expr()
        return A.Ternary(cond, then, other, span=self.join(cond, other))

    def join(self, a: A.Node, b: A.Node) -> Span | None:
        if a.span is None or b.span is None or not a.span.offsets_known:
            return a.span
        return self.sp(a.span.start, b.span.end)

    def binary(self, level: int) -> A.Expr:
        if level == len(self.BINARY_LEVELS):
            return self.unary()
        lhs = self.binary(level + 1)
        while self.peek().text in self.BINARY_LEVELS[level]:
            op = self.take().text
            rhs = self.binary(level + 1)
            lhs = A.Binary(op, lhs, rhs, span=self.join(lhs, rhs))
        return lhs

    def unary(self) -> A.Expr:
        t = self.peek()
        if t.text in ("-", "!", "~", "&", "*", "+"):
            if t.text == "&" and self.is_local(self.peek(1)):
                raise _Refused(f"the address of the local '{self.peek(1).text}'{self.line_of(t)}")
            self.take()
            operand = self.unary()
            if t.text == "+":
                return operand
            if t.text == "-" and isinstance(operand, A.IntLit):
                return A.IntLit(
                    -operand.value,
                    f"-{operand.text}",
                    operand.type,
                    span=self.sp(t.start, operand.span.end if operand.span else t.end),
                )
            return A.Unary(
                t.text,
                operand,
                span=self.sp(t.start, operand.span.end if operand.span and operand.span.offsets_known else t.end),
            )
        if t.text in ("++", "--"):
            raise _Refused(f"'{t.text}' (it changes a variable){self.line_of(t)}")
        if t.text == "(" and self.is_type(self.peek(1)):
            close = self.pos + 1
            while close < len(self.toks) and self.toks[close].text != ")":
                close += 1
            words = [x.text for x in self.toks[self.pos + 1 : close]]
            if all(self.is_type(x) or x.text in ("*", "const") for x in self.toks[self.pos + 1 : close]):
                self.pos = close + 1
                value = self.unary()
                return self.cast(words, value, t)
        return self.postfix(self.primary())

    def is_type(self, t: _Tok) -> bool:
        word = t.text
        for prefix in ("choreo::", "croq::", "std::"):
            word = word.replace(prefix, "")
        return t.kind == "id" and (
            word in C_TYPES or word in self.templates or word in ("unsigned", "signed", "long", "short", "const")
        )

    def cast(self, words: list[str], value: A.Expr, at: _Tok) -> A.Expr:
        if "*" in words:
            raise _Refused(f"a pointer cast{self.line_of(at)}")
        plain = [w for w in words if w != "const"]
        ctype = self.type_of(plain)
        if ctype is None:  # to a template's type: to the type of a parameter of it
            return A.ConvertLike(value, self.like_of(plain, at), span=value.span)
        end = value.span.end if value.span is not None and value.span.offsets_known else at.end
        return A.Cast(ctype, False, value, span=self.sp(at.start, end))

    def postfix(self, e: A.Expr) -> A.Expr:
        t = self.peek()
        param = self.params.get(e.name) if isinstance(e, A.Name) else None
        if t.text == "[" and param is not None and param.pointer:  # ``p[i]`` is ``*(p + i)``
            self.take()
            index = self.expr()
            close = self.expect("]")
            sp = self.sp(e.span.start if e.span is not None and e.span.offsets_known else t.start, close.end)
            element = A.Unary("*", A.Paren(A.Binary("+", e, index, span=sp), span=sp), span=sp)
            if self.peek().text == "[":
                raise _Refused(f"indexing of an element of '{e.name}'{self.line_of(self.peek())}")
            return element
        if t.text in ("[", ".", "->", "++", "--"):
            what = {"[": "indexing", ".": "a member access", "->": "a member access"}.get(t.text, f"'{t.text}'")
            raise _Refused(f"{what}{self.line_of(t)}")
        return e

    def primary(self) -> A.Expr:
        t = self.take()
        sp = self.sp(t.start, t.end)
        if t.kind == "num":
            return _number(t.text, sp)
        if t.text == "(":
            inner = self.expr()
            close = self.expect(")")
            return A.Paren(inner, span=self.sp(t.start, close.end))
        if t.kind == "id":
            if t.text in ("true", "false"):
                return A.BoolLit(t.text == "true", span=sp)
            if t.text in ("static_cast", "reinterpret_cast", "const_cast", "__builtin_bit_cast"):
                if t.text != "static_cast":
                    raise _Refused(f"'{t.text}'{self.line_of(t)}")
                self.expect("<")
                words = []
                while self.peek().text != ">" and self.peek().kind != "end":
                    words.append(self.take().text)
                self.expect(">")
                self.expect("(")
                value = self.expr()
                self.expect(")")
                return self.cast(words, value, t)
            if self.peek().text == "(":
                if self.is_type(t):  # ``float(x)``, ``uint32_t(-1)``
                    self.take()
                    value = self.expr()
                    self.expect(")")
                    return self.cast([t.text], value, t)
                return self.call(t)
            local = self.local_value(t)
            if local is not None:
                return local
            if self.peek().text == "<" and t.text not in self.params and t.text not in self.values:
                targs = self.template_args(t)
                if targs is not None:
                    c = self.call(t)
                    assert isinstance(c, A.Call)
                    c.targs = targs or None
                    return c
            if t.text in self.params or t.text in self.values:
                return A.Name(t.text, span=sp)
            raise _Refused(f"it reads '{t.text}', which is not one of its parameters{self.line_of(t)}")
        if t.kind == "str":
            raise _Refused(f"a string{self.line_of(t)}")
        raise _Refused(f"'{t.text or 'the end'}' where a value was expected{self.line_of(t)}")

    def template_args(self, fn: _Tok) -> list[A.Expr] | None:
        """``F<float, 3>`` before ``(``: its template arguments (a type, a constant over the
        template's values); an argument that is this function's own type parameter is left to the
        call to deduce.  None: ``<`` is a comparison."""
        depth, k = 0, self.pos
        while k < len(self.toks) - 1:
            x = self.toks[k].text
            depth += (x == "<") - (x == ">")
            if depth == 0:
                break
            if x in (";", "{", "}", "&&", "||"):
                return None
            k += 1
        if depth or self.toks[k + 1].text != "(":
            return None
        pieces: list[list[_Tok]] = [[]]
        nest = 0
        for tok in self.toks[self.pos + 1 : k]:
            nest += (tok.text in ("<", "(")) - (tok.text in (">", ")"))
            if tok.text == "," and nest == 0:
                pieces.append([])
            else:
                pieces[-1].append(tok)
        out: list[A.Expr] = []
        saved = self.toks, self.pos
        try:
            for piece in pieces:
                words = [x.text for x in piece]
                if piece and all(self.is_type(x) or x.text in ("*", "const") for x in piece):
                    spelled = " ".join(w for w in words if w != "const")
                    if spelled in self.templates:
                        self.pos = k + 1
                        return []  # (the call deduces it from its arguments)
                    ctype = self.type_of([w for w in words if w != "const"])
                    out.append(A.TypeArg(ctype or spelled, span=self.sp(piece[0].start, piece[-1].end)))
                    continue
                end = _Tok("end", "", piece[-1].end if piece else fn.end, piece[-1].end if piece else fn.end)
                self.toks, self.pos = [*piece, end], 0
                out.append(self.expr())
                if self.peek().kind != "end":
                    raise _Refused(f"'{self.peek().text}' in the template arguments of '{fn.text}'{self.line_of(fn)}")
                self.toks, self.pos = saved
        finally:
            self.toks = saved[0]
        self.pos = k + 1
        return out

    def arguments(self) -> list[A.Expr]:
        self.expect("(")
        args: list[A.Expr] = []
        if self.peek().text == ")":
            self.take()
            return args
        while True:
            args.append(self.expr())
            sep = self.take()
            if sep.text == ")":
                return args
            if sep.text != ",":
                raise _Refused(f"'{sep.text}' in the arguments of a call{self.line_of(sep)}")

    def call(self, fn: _Tok) -> A.Expr:
        name = fn.text
        args = self.arguments()
        end = self.toks[self.pos - 1].end
        sp = self.sp(fn.start, end)
        if name in MATH:
            builtin = MATH[name]
            if len(args) != ARITY.get(builtin, 1):
                raise _Refused(f"'{name}' with {len(args)} arguments{self.line_of(fn)}")
            return A.Builtin(builtin, args, span=sp)
        if name in LIBM:
            builtin, arity = LIBM[name]
            if len(args) != arity:
                raise _Refused(f"'{name}' with {len(args)} arguments{self.line_of(fn)}")
            return A.Builtin(builtin, args, span=sp)
        if name == "fmodf" and len(args) == 2:  # C's fmod: a Croqtile '%' of floats (exact, the dividend's sign)
            a, b = (A.Cast("f32", False, x, span=sp) for x in args)
            return A.Paren(A.Binary("%", a, b, span=sp), span=sp)
        if name == "fdimf" and len(args) == 2:  # a - b where a > b, else +0 (NaN where either is)
            a, b = (self.named(A.Cast("f32", False, x, span=sp), "dim") for x in args)
            zero = A.FloatLit(0.0, "0.0f", span=sp)
            return A.Ternary(A.Binary("<=", a, b, span=sp), zero, A.Binary("-", a, b, span=sp), span=sp)
        if name in FLOAT_TESTS and len(args) == 1:
            return self.float_test(name, args[0], sp)
        if name in OVERLOADED and len(args) == 1:
            return A.Builtin("__c_ovl_" + name.rsplit(":", 1)[-1], args, span=sp)
        if name == "__hadd" and len(args) == 2:
            return A.Builtin("__c_hadd", args, span=sp)
        if name in INT_INTRINSICS:
            if len(args) != INT_INTRINSICS[name]:
                raise _Refused(f"'{name}' with {len(args)} arguments{self.line_of(fn)}")
            return self.int_intrinsic(name, args, sp)
        if name in HALF_COMPARES and len(args) == 2:
            a, b = (A.Cast("f16", False, x, span=sp) for x in args)
            return A.Paren(A.Binary(HALF_COMPARES[name], a, b, span=sp), span=sp)
        if name in TYPED_MINMAX and len(args) == 2:
            builtin, t = TYPED_MINMAX[name]
            value = A.Builtin(builtin, [A.Cast(t, False, x, span=sp) for x in args], span=sp)
            return A.Cast(t, False, value, span=sp)
        if name in HALF_OPS and len(args) == 2:
            a, b = (A.Cast("f16", False, x, span=sp) for x in args)
            return A.Cast("f16", False, A.Paren(A.Binary(HALF_OPS[name], a, b, span=sp), span=sp), span=sp)
        if name in ("__hneg", "__habs") and len(args) == 1:
            h = A.Cast("f16", False, args[0], span=sp)
            inner = A.Unary("-", h, span=sp) if name == "__hneg" else A.Builtin("__fabs", [h], span=sp)
            return A.Cast("f16", False, inner, span=sp)
        if name in OPERATORS and len(args) == 2:
            return A.Paren(A.Binary(OPERATORS[name], args[0], args[1], span=sp), span=sp)
        if name in ("__frcp_rn", "__fdividef") and len(args) == 1:
            return A.Paren(A.Binary("/", A.FloatLit(1.0, "1.0f", span=sp), args[0], span=sp), span=sp)
        if name == "__saturatef" and len(args) == 1:
            zero, one = A.FloatLit(0.0, "0.0f", span=sp), A.FloatLit(1.0, "1.0f", span=sp)
            return A.Builtin("__min", [A.Builtin("__max", [args[0], zero], span=sp), one], span=sp)
        if name in CONVERSIONS and len(args) == 1:
            return conversion(name, args[0], sp)
        if name in BITCASTS and len(args) == 1:
            return A.Builtin(BITCASTS[name], args, span=sp)
        if name == "__activemask":  # the ballot of the threads that run the call (frontend/bitintrinsics.py)
            if args:
                raise _Refused(f"'{name}' with {len(args)} arguments{self.line_of(fn)}")
            return active_mask(list(self.path), sp, self.named)
        if name in REDUCES:
            if len(args) != 2:
                raise _Refused(f"'{name}' with {len(args)} arguments{self.line_of(fn)}")
            return warp_reduce(name, args[1], sp, self.named)
        if name in BITS or name in VOTES:
            rest = args[1:] if VOTES.get(name) else args
            if len(rest) != 1:
                raise _Refused(f"'{name}' with {len(args)} arguments{self.line_of(fn)}")
            return bit_intrinsic(name, rest[0], sp, self.named) if name in BITS else vote(name, rest[0], sp, self.named)
        if name in CACHED_LOADS:  # a read through the pointer with a cache hint, which Triton's loads choose
            if len(args) != 1:
                raise _Refused(f"'{name}' with {len(args)} arguments{self.line_of(fn)}")
            return A.Paren(A.Unary("*", args[0], span=sp), span=sp)
        if name in ATOMICS:
            n = 3 if name == "atomicCAS" else 2
            if len(args) != n:
                raise _Refused(f"'{name}' with {len(args)} arguments{self.line_of(fn)}")
            target = A.Unary("*", args[0], span=args[0].span)
            return A.Call("atomic", ATOMICS[name], [target, *args[1:]], span=sp)
        if name in SHUFFLES:
            builtin, masked = SHUFFLES[name]
            rest = args[1:] if masked else args
            if len(rest) not in (2, 3):
                raise _Refused(f"'{name}' with {len(args)} arguments{self.line_of(fn)}")
            width = rest[2] if len(rest) == 3 else A.IntLit(32, "32", span=sp)
            return A.Builtin(builtin, [rest[0], rest[1], width], span=sp)
        # another function: a helper of the file, resolved where a call uses this one
        return A.Call("call", name, args, span=sp)

    def int_intrinsic(self, name: str, args: list[A.Expr], sp: Span | None) -> A.Expr:
        """CUDA's integer intrinsic ``name`` of ``args`` (their C prototype's types: ``unsigned int``
        or ``int``), computed exactly in 64 bits and converted to its 32-bit result."""

        def cast(t: str, e: A.Expr) -> A.Expr:
            return A.Cast(t, False, e, span=sp)

        def num(v: int, t: str) -> A.Expr:
            suffix = {"u32": "u", "u64": "ull", "s64": "ll"}.get(t, "")
            return A.IntLit(v, f"{v}{suffix}", t, span=sp)

        def op(o: str, a: A.Expr, b: A.Expr) -> A.Expr:
            return A.Paren(A.Binary(o, a, b, span=sp), span=sp)

        def u64(e: A.Expr) -> A.Expr:
            return cast("u64", cast("u32", e))

        def s64(e: A.Expr) -> A.Expr:
            return cast("s64", cast("s32", e))

        a = args
        if name == "__umulhi":
            return cast("u32", op(">>", op("*", u64(a[0]), u64(a[1])), num(32, "s32")))
        if name == "__mulhi":
            return cast("s32", op(">>", op("*", s64(a[0]), s64(a[1])), num(32, "s32")))
        if name in ("__mul24", "__umul24"):
            if name == "__umul24":
                lo = [op("&", cast("u32", x), num(0xFFFFFF, "u32")) for x in a]
                return op("*", lo[0], lo[1])
            # the low 24 bits sign-extended, their product's low 32 bits
            ext = [op(">>", cast("s32", op("<<", cast("u32", x), num(8, "s32"))), num(8, "s32")) for x in a]
            return cast("s32", op("*", cast("u32", ext[0]), cast("u32", ext[1])))
        if name in ("__sad", "__usad"):
            wide = s64 if name == "__sad" else (lambda e: cast("s64", cast("u32", e)))
            diff = self.named(op("-", wide(a[0]), wide(a[1])), "sad")
            absd = A.Ternary(A.Binary("<", diff, num(0, "s64"), span=sp), A.Unary("-", diff, span=sp), diff, span=sp)
            return cast("u32", op("+", cast("u64", A.Paren(absd, span=sp)), u64(a[2])))
        if name in ("__uhadd", "__urhadd"):
            total = op("+", u64(a[0]), u64(a[1]))
            if name == "__urhadd":
                total = op("+", total, num(1, "u64"))
            return cast("u32", op(">>", total, num(1, "s32")))
        if name == "__rhadd":
            total = op("+", op("+", s64(a[0]), s64(a[1])), num(1, "s64"))
            return cast("s32", op(">>", total, num(1, "s32")))
        # funnel shifts and byte permutes: the 64 bits hi:lo (``__byte_perm(x, y, s)``: y:x)
        lo, hi = (a[0], a[1])
        both = self.named(op("|", op("<<", u64(hi), num(32, "s32")), u64(lo)), "pair")
        if name == "__byte_perm":
            sel = self.named(cast("u32", a[2]), "sel")
            out: A.Expr | None = None
            for i in range(4):
                which = op("&", op(">>", sel, num(4 * i, "s32")), num(7, "u32"))
                byte = op("&", op(">>", both, op("*", which, num(8, "u32"))), num(0xFF, "u64"))
                part = op("<<", byte, num(8 * i, "s32"))
                out = part if out is None else op("|", out, part)
            assert out is not None
            return cast("u32", out)
        shift = cast("u32", a[2])
        if name.endswith("c"):  # clamped to 32
            shift = A.Builtin("__min", [shift, num(32, "u32")], span=sp)
        else:
            shift = op("&", shift, num(31, "u32"))
        if name.startswith("__funnelshift_l"):
            return cast("u32", op(">>", op("<<", both, shift), num(32, "s32")))
        return cast("u32", op(">>", both, shift))

    def float_test(self, name: str, arg: A.Expr, sp: Span | None) -> A.Expr:
        """``isnan`` / ``isinf`` / ``isfinite`` / ``signbit`` of ``arg`` as an int (1 or 0)."""
        x = self.named(A.Cast("f32", False, arg, span=sp), "fv")
        if name in ("isnan", "__isnanf"):
            test: A.Expr = A.Binary("!=", x, x, span=sp)
        elif name in ("isinf", "__isinff"):
            inf = A.FloatLit(float("inf"), "inf", span=sp)
            test = A.Binary("==", A.Builtin("__fabs", [x], span=sp), inf, span=sp)
        elif name in ("isfinite", "__finitef"):
            test = A.Builtin("__isfinite", [x], span=sp)
        else:  # signbit: set for -0.0 and negative NaNs too
            bits = A.Builtin("__bits_f32_as_s32", [x], span=sp)
            test = A.Binary("<", bits, A.IntLit(0, "0", "s32", span=sp), span=sp)
        one, zero = A.IntLit(1, "1", "s32", span=sp), A.IntLit(0, "0", "s32", span=sp)
        return A.Ternary(test, one, zero, span=sp)


def _number(text: str, span: Span | None) -> A.Expr:
    low = text.lower()
    is_hex = low.startswith("0x")
    if not is_hex and ("." in low or "e" in low or low.endswith("f")):
        single = low.endswith("f")
        value = float(low.rstrip("fl"))
        return A.FloatLit(value, text, double=not single, span=span)
    digits = low.rstrip("ul")
    value = int(digits, 16) if is_hex else int(digits)
    unsigned = "u" in low[len(digits) :]
    wide = "l" in low[len(digits) :]
    ctype = ("u64" if wide else "u32") if unsigned else ("s64" if wide or value > 2**31 - 1 else "s32")
    return A.IntLit(value, text, ctype, span=span)
