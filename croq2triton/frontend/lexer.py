"""PLY lexer for ``__co__`` bodies (LANGUAGE.md section 3)."""

from __future__ import annotations

import re
from typing import Any

import ply.lex as lex

from ..errors import CroqSyntaxError, SourceMap, Span
from .builtins import names

ELEM_TYPES = {
    "f64": "f64", "double": "f64", "tf32": "tf32", "f32": "f32", "float": "f32",
    "f16": "f16", "half": "f16", "bf16": "bf16", "bfp16": "bf16",
    "f8": "f8_e4m3", "f8_e4m3": "f8_e4m3", "f8_e5m2": "f8_e5m2", "f8_ue4m3": "f8_ue4m3",
    "f8_ue8m0": "f8_ue8m0", "f6_e3m2": "f6_e3m2", "f6_e2m3": "f6_e2m3", "f4_e2m1": "f4_e2m1",
    "u64": "u64", "s64": "s64", "u32": "u32", "s32": "s32", "u16": "u16", "s16": "s16",
    "u8": "u8", "s8": "s8", "u6": "u6", "s6": "s6", "u4": "u4", "s4": "s4", "u2": "u2",
    "s2": "s2", "u1": "u1", "bin1": "bin1",
}  # fmt: skip

_KEYWORDS = [
    "auto", "mdspan", "ituple", "stream", "event", "frag", "mutable", "local", "shared", "global",
    "void", "int", "bool", "parallel", "by", "with", "in", "foreach", "apply", "where", "if", "else",
    "while", "break", "continue", "yield", "return", "inthreads", "wait", "trigger", "after", "call",
    "select", "swap", "rotate", "dma", "tma", "mma", "sync", "barrier", "fence", "cooperative",
    "assert", "print", "println", "copy", "reduce_max", "reduce_sum", "all_reduce_sum", "vectorize",
    "unroll", "cdiv", "volatile", "goto", "term", "device", "cluster", "block", "group", "thread",
    "true", "false", "nullptr", "inf",
]  # fmt: skip
KEYWORDS = {k: k.upper() for k in _KEYWORDS}
KEYWORDS["__cpp__"] = "CPP"
KEYWORDS["__asm__"] = "ASM"
KEYWORDS["asm"] = "ASM"
KEYWORDS["__to"] = "TO"
KEYWORDS["__co__"] = "CO"

MATH_FUNCS = names("math")  # the builtins' names, from the one table of them (frontend/builtins.py)
ATOMICS = names("atomic")
BAR_FUNCS = names("barrier")

MEMBERS = [
    "span_as", "swizzle", "evict_first", "evict_last", "multicast", "promote", "chunkat", "subspan",
    "modspan", "transp", "stride", "remap", "chunk", "async", "zfill", "mdata", "store", "scale",
    "copy", "load", "swiz", "span", "data", "view", "from", "step", "fill", "mask", "pad", "any",
    "map", "sqz", "row", "col", "sp", "at",
]  # fmt: skip
MEMBER_TOKENS = {m: "M_" + m.upper() for m in MEMBERS}
MEMBER_TOKENS["swizzle"] = "M_SWIZ"

tokens = sorted(
    set(KEYWORDS.values())
    | set(MEMBER_TOKENS.values())
    | {
        "ELEMTYPE", "GROUP4", "IDENT", "QNAME", "INTRINSIC", "LIB_CALL", "MATHFN", "ATOMIC", "BARFN",
        "NUM", "FLOATLIT", "STRING", "PRAGMA", "REMOVED_STAGE", "ATTR_OPEN", "ATTR_SCHED",
        "ARROW", "SWAPARROW", "INC", "DEC", "EQ", "NE", "LE", "GE", "ANDAND", "OROR", "SHL", "SHR",
        "HASHPLUS", "HASHMINUS", "HASHSTAR", "HASHSLASH", "HASHPERCENT", "QQ", "DOT",
    }
)  # fmt: skip

literals = "=+-*/%<>!~&|^?:,;()[]{}#"

U64_MAX = (1 << 64) - 1
S64_MAX = (1 << 63) - 1
S32_MAX = (1 << 31) - 1
U32_MAX = (1 << 32) - 1


class IntValue:
    """Value of an integer literal: number, its spelling and its Croqtile type."""

    __slots__ = ("value", "text", "type")

    def __init__(self, value: int, text: str, type_: str) -> None:
        self.value = value
        self.text = text
        self.type = type_


class CoLexer:
    """Wraps a PLY lexer; classifies identifiers (intrinsics by scope) and maps spans."""

    tokens = tokens + ["COMMENT", "UNTERMINATED_COMMENT", "UNTERMINATED_STRING", "LBRACE", "RBRACE", "MEMBER"]
    literals = literals
    t_ignore = " \t\r\f\v\n"

    def __init__(self) -> None:
        self.lexer = lex.lex(module=self, optimize=False, debug=False, reflags=int(re.VERBOSE))
        self.smap: SourceMap | None = None
        self.base = 0
        self.ends: dict[int, int] = {}
        self.prefixes: list[tuple[int, str, str]] = []
        self.depth = 0
        self.history: list[Any] = []  # the tokens handed out since setup (frontend/repair.py reads them)

    # -- order matters: PLY tries function rules in definition order --------
    def t_COMMENT(self, t: Any) -> None:
        r"//[^\n]*|/\*[\s\S]*?\*/"

    def t_UNTERMINATED_COMMENT(self, t: Any) -> None:
        r"/\*"
        raise CroqSyntaxError(
            "unterminated comment",
            self._span(t.lexpos, t.lexpos + 2),
            "close the comment with '*/'",
        )

    def t_PRAGMA(self, t: Any) -> Any:
        r'__pragma_croq_intrinsic_(prefix|namespace)\("[A-Za-z_]\w*"\)'
        kind = "prefix" if "_prefix(" in t.value else "namespace"
        name = t.value[t.value.index('"') + 1 : -2]
        self.prefixes.append((self.depth, kind, name))
        t.value = (kind, name)
        return self._tok(t, len(t.lexer.lexmatch.group(0)))

    def t_REMOVED_STAGE(self, t: Any) -> Any:
        r"\bstage<[ \t]*[0-9]+[ \t]*>[ \t]*\("
        return self._tok(t)

    def t_FLOATLIT(self, t: Any) -> Any:
        r"-?[0-9]+\.[0-9]+[fF]?"
        text = t.value
        double = not text.endswith(("f", "F"))
        t.value = (float(text.rstrip("fF")), text, double)
        return self._tok(t, len(text))

    def t_NUM(self, t: Any) -> Any:
        r"(0[xX][0-9a-fA-F]+|0|[1-9][0-9]*)[uU]?([lL][lL]?)?"
        text = t.value
        digits = text.rstrip("uUlL")
        suffix = text[len(digits) :].lower()
        is_hex = digits[:2] in ("0x", "0X")
        # a decimal literal this long is out of range anyway; int() would refuse it
        value = int(digits, 16 if is_hex else 10) if is_hex or len(digits) <= 40 else U64_MAX + 1
        unsigned = "u" in suffix
        long = "l" in suffix
        if unsigned:
            if value > U64_MAX:
                lim = "0xffffffffffffffff" if is_hex else str(U64_MAX)
                raise CroqSyntaxError(
                    f"unsigned integer literal '{text}' out of range [0, {lim}].",
                    self._span(t.lexpos, t.lexpos + len(text)),
                    "integers are at most 64 bits: a larger value is a floating literal (with a '.' or an exponent)",
                )
            type_ = "u32" if value <= U32_MAX and not long else "u64"
        else:
            if value > S64_MAX:
                lim = "0x7fffffffffffffff" if is_hex else str(S64_MAX)
                raise CroqSyntaxError(
                    f"signed integer literal '{text}' out of range [0, {lim}].",
                    self._span(t.lexpos, t.lexpos + len(text)),
                    "add a 'u' suffix for an unsigned 64-bit literal" if value <= U64_MAX else None,
                )
            type_ = "s32" if value <= S32_MAX and not long else "s64"
        t.value = IntValue(value, text, type_)
        return self._tok(t, len(text))

    def t_STRING(self, t: Any) -> Any:
        r'R"(?P<d>[^()\\ \t\n"]{0,16})\([\s\S]*?\)(?P=d)"|"([^"\\\n]|\\.)*"'
        return self._tok(t)

    def t_UNTERMINATED_STRING(self, t: Any) -> None:
        r'"'
        raise CroqSyntaxError("missing terminating '\"' character", self._span(t.lexpos, t.lexpos + 1))

    def t_GROUP4(self, t: Any) -> Any:
        r"group-4\b"
        return self._tok(t)

    def t_ATTR_SCHED(self, t: Any) -> Any:
        r"\[\[(?=\s*schedule\b)"
        return self._tok(t)

    def t_ATTR_OPEN(self, t: Any) -> Any:
        r"\[\[(?=\s*(launch_bounds|maxnreg)\b)"
        return self._tok(t)

    def t_MEMBER(self, t: Any) -> Any:
        r"\.(span_as|swizzle|evict_first|evict_last|multicast|promote|chunkat|subspan|modspan|transp|stride|remap|chunk|async|zfill|mdata|store|scale|copy|load|swiz|span|data|view|from|step|fill|mask|pad|any|map|sqz|row|col|sp|at)\b"
        t.type = MEMBER_TOKENS[t.value[1:]]
        return self._tok(t)

    def t_QNAME(self, t: Any) -> Any:
        r"[A-Za-z_]\w*(\s*::\s*[A-Za-z_]\w*)+"
        parts = [p.strip() for p in t.value.split("::")]
        raw = t.value
        t.value = "::".join(parts)
        if self._is_intrinsic_ns(parts[0]):
            t.type = "INTRINSIC"
        return self._tok(t, len(raw))

    def t_IDENT(self, t: Any) -> Any:
        r"[A-Za-z_]\w*"
        word = t.value
        kw = KEYWORDS.get(word)
        if kw is not None:
            t.type = kw
        elif word in ELEM_TYPES:
            t.type = "ELEMTYPE"
            t.value = ELEM_TYPES[word]
        elif word in MATH_FUNCS:
            t.type = "MATHFN"
        elif word in ATOMICS:
            t.type = "ATOMIC"
        elif word in BAR_FUNCS:
            t.type = "BARFN"
        elif word.startswith("__lib_"):
            t.type = "LIB_CALL"
        elif self._is_intrinsic_prefix(word):
            t.type = "INTRINSIC"
        return self._tok(t, len(word))

    t_ARROW = r"=>"
    t_SWAPARROW = r"<->"
    t_INC = r"\+\+"
    t_DEC = r"--"
    t_EQ = r"=="
    t_NE = r"!="
    t_LE = r"<="
    t_GE = r">="
    t_ANDAND = r"&&"
    t_OROR = r"\|\|"
    t_SHL = r"<<"
    t_SHR = r">>"
    t_HASHPLUS = r"\#\+"
    t_HASHMINUS = r"\#-"
    t_HASHSTAR = r"\#\*"
    t_HASHSLASH = r"\#/"
    t_HASHPERCENT = r"\#%"
    t_QQ = r"\?\?"
    t_DOT = r"\."

    def t_LBRACE(self, t: Any) -> Any:
        r"\{"
        self.depth += 1
        t.type = "{"
        return self._tok(t, 1)

    def t_RBRACE(self, t: Any) -> Any:
        r"\}"
        self.depth -= 1
        self.prefixes = [p for p in self.prefixes if p[0] <= self.depth]
        t.type = "}"
        return self._tok(t, 1)

    def t_error(self, t: Any) -> None:
        ch = t.value[0]
        shown = repr(ch) if not ch.isprintable() or ch in "'\"" else f"'{ch}'"
        hint = None
        if ch == "#":
            hint = "'#' is the bound/compose operator here; a preprocessor directive must start its own line"
        elif ch == "@" or ch == "$" or ch == "`":
            hint = "this character has no meaning in Croqtile"
        raise CroqSyntaxError(f"unexpected character {shown}", self._span(t.lexpos, t.lexpos + 1), hint)

    # -- helpers -------------------------------------------------------------
    def _tok(self, t: Any, length: int | None = None) -> Any:
        n = length if length is not None else len(t.value)
        self.ends[t.lexpos] = t.lexpos + n
        return t

    def _span(self, start: int, end: int) -> Span:
        return Span(self.smap, start, end)

    def _is_intrinsic_prefix(self, word: str) -> bool:
        return any(k == "prefix" and word.startswith(n) for _, k, n in self.prefixes)

    def _is_intrinsic_ns(self, ns: str) -> bool:
        return any(k == "namespace" and ns == n for _, k, n in self.prefixes)

    # -- PLY interface -------------------------------------------------------
    def setup(self, text: str, smap: SourceMap, start: int, end: int, prefixes: list[tuple[str, str]]) -> None:
        """Lex ``text[start:end]``; positions stay offsets into ``text``."""
        self.smap = smap
        self.ends = {}
        self.depth = 0
        self.prefixes = [(-1, k, n) for k, n in prefixes]
        self.history = []
        self.lexer.input(text[:end])
        self.lexer.lexpos = start

    def input(self, text: str) -> None:  # PLY calls this only if we pass input=; unused
        self.lexer.input(text)

    def token(self) -> Any:
        tok = self.lexer.token()
        if tok is not None:
            self.history.append(tok)
        return tok

    @property
    def lineno(self) -> int:
        return 0

    @property
    def lexpos(self) -> int:
        inner = self.__dict__.get("lexer")
        return int(inner.lexpos) if inner is not None else 0


def token_end(lexer: CoLexer, start: int) -> int:
    return lexer.ends.get(start, start + 1)
