"""Syntax errors that come from writing C, C++ or CUDA in a ``.co`` file: what was written, and
how Croqtile says it.

Run only after the parser stopped at a token (a valid program never sees any of this): the tokens
of the statement up to the error, and the one after it, are matched against the forms a CUDA
programmer writes first (``__syncthreads()``, ``threadIdx.x``, a C ``for``, ``x >>= 1``, ``i++;``,
``(float)x``, ``const``, ``1e-3f``, ``a and b``, ``if (a = b)``, ``float*`` parameters, ``switch``,
``goto``, ``a[0:16]``, Triton's ``tl.program_id(0)`` ...), and the Croqtile forms easiest to get
wrong (``5.``, ``12ulx``, a ``?`` extent of a buffer, ``[N * 2]`` in a parameter, ``event e = 1``,
``assert(c)`` without its message, ``ituple t[2]``).  A match
keeps the parser's location and gives the Croqtile form as the hint (and, where the parser's
message would mislead, a message that names the C form).  The docs named are the repository's
``docs/`` pages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CUDA_INDICES = ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "laneId")
BARRIERS = ("__syncthreads", "__syncwarp", "__threadfence", "__threadfence_block", "cudaDeviceSynchronize")
# CUDA intrinsics of no arguments, which Croqtile code cannot call (a builtin takes arguments)
NULLARY_INTRINSICS = ("__activemask", "__lanemask_lt", "__lanemask_le", "__lanemask_gt", "__lanemask_ge")
C_TYPES = {  # C / CUDA spellings of types the lexer does not map to an element type already
    "unsigned": "u32",
    "size_t": "u64",
    "int32_t": "s32",
    "int64_t": "s64",
    "uint32_t": "u32",
    "uint8_t": "u8",
    "char": "s8",
    "long": "s64",
    "short": "s16",
    "float2": "f32",
    "float4": "f32",
    "half2": "f16",
}
_BLOCK_INDEX = (
    "a block's index is the variable of its 'parallel' ('parallel p by cdiv(N, 128) : block' names it p;"
    " '#p' is the number of blocks); docs/parallel.md"
)
_ELEMENTS = "read and write elements with '.at' ('y.at(i) = x.at(i) + 1.0f;'), copy tiles with 'dma.copy'"
_REDUCE = "reduce a loop's values into a mutable scalar ('s += x.at(i);' in a 'foreach'), or a fragment with reduce_sum"
TRITON_HINTS = {
    "program_id": _BLOCK_INDEX,
    "num_programs": _BLOCK_INDEX,
    "arange": "a thread's index is the variable of a thread-level 'parallel' ('t by 128 : thread'); docs/parallel.md",
    "load": _ELEMENTS,
    "store": _ELEMENTS,
    "dot": "a tensor-core product is 'mma.row.row acc, a, b;' (docs/mma.md)",
    "sum": _REDUCE,
    "max": _REDUCE,
    "min": _REDUCE,
    "zeros": "declare a buffer with a fill value: 'local f32 [16] acc {0.0f};'",
    "full": "declare a buffer with a fill value: 'local f32 [16] acc {1.0f};'",
    "where": "choose with '?:' ('c ? a : b')",
    "exp": "the math builtins are '__exp', '__log', '__sqrt' ... (docs/builtins.md)",
    "cdiv": "'cdiv(a, b)' needs no prefix",
    "constexpr": "a compile-time constant is a '#define' or a literal",
    "jit": "a kernel is a '__co__' function with a 'parallel' inside",
}
COMPOUND = {"SHR": ">>", "SHL": "<<", "|": "|", "&": "&", "^": "^"}
STATEMENT_ENDS = (";", "{", "}")


@dataclass(frozen=True)
class CHint:
    """What the C form is (None: the parser's message stands) and its Croqtile spelling."""

    message: str | None
    hint: str
    at: int  # the token the error points at
    until: int | None = None  # the last token it points at (None: ``at`` alone)


def _text(tok: Any) -> str:
    v = tok.value
    return str(v[1]) if isinstance(v, tuple) else str(getattr(v, "text", v))


def explain(tokens: list[Any], err: int) -> CHint | None:
    """The C form that explains a parse stopped at ``tokens[err]``, if one does."""
    if not 0 <= err < len(tokens):
        return None
    start = err
    while start > 0 and tokens[start - 1].type not in STATEMENT_ENDS and err - start < 24:
        start -= 1
    for rule in RULES:
        found = rule(tokens, start, err)
        if found is not None:
            return found
    return None


def _ident(tok: Any, *names: str) -> bool:
    return tok.type == "IDENT" and _text(tok) in names


def _cuda_index(tokens: list[Any], start: int, err: int) -> CHint | None:
    for k in range(start, min(err + 1, len(tokens))):
        if _ident(tokens[k], *CUDA_INDICES):
            name = _text(tokens[k])
            return CHint(
                f"'{name}' is CUDA, not Croqtile: there are no built-in thread or block indices",
                "a thread's index is the variable of its 'parallel' ('parallel p by cdiv(N, 128) : block,"
                " t by 128 : thread', then 'p # t'); docs/parallel.md",
                k,
            )
    return None


def _barrier(tokens: list[Any], start: int, err: int) -> CHint | None:
    for k in range(start, min(err + 1, len(tokens))):
        if _ident(tokens[k], *BARRIERS):
            return CHint(
                f"'{_text(tokens[k])}' is CUDA, not Croqtile",
                "a barrier of a block's threads is 'sync.shared;' (docs/pipelines.md)",
                k,
            )
    return None


def _nullary_intrinsic(tokens: list[Any], start: int, err: int) -> CHint | None:
    for k in range(start, min(err + 1, len(tokens))):
        if _ident(tokens[k], *NULLARY_INTRINSICS):
            name = _text(tokens[k])
            return CHint(
                f"'{name}()' is a CUDA intrinsic, not a Croqtile builtin",
                f"call it in a __device__ helper: '__device__ unsigned int MASK() {{ return {name}(); }}', then"
                " 'm = call MASK();' (the README lists the intrinsics helpers translate)",
                k,
            )
    return None


def _c_for(tokens: list[Any], start: int, err: int) -> CHint | None:
    for k in range(start, min(err + 1, len(tokens) - 1)):
        if _ident(tokens[k], "for") and tokens[k + 1].type == "(":
            return CHint(
                "a C 'for' loop: Croqtile has no 'for'",
                "write 'foreach i in [n] { .. }' (i from 0 to n - 1); docs/control.md has ranges and steps",
                k,
            )
        if _ident(tokens[k], "while") or tokens[k].type == "WHILE":
            break
    return None


def _compound(tokens: list[Any], start: int, err: int) -> CHint | None:
    tok = tokens[err]
    at = err if tok.type in COMPOUND and err + 1 < len(tokens) and tokens[err + 1].type == "=" else err - 1
    if at >= 0 and tokens[at].type in COMPOUND and at + 1 < len(tokens) and tokens[at + 1].type == "=":
        op = COMPOUND[tokens[at].type]
        target = _text(tokens[start]) if tokens[start].type == "IDENT" else "x"
        return CHint(
            f"'{op}=' is not Croqtile: compound assignment takes + - * / % only",
            f"write '{target} = {target} {op} ..;'",
            at,
        )
    return None


def _postfix_statement(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``i++;`` or ``++i;`` as a statement (an increment is an expression, not a statement)."""
    kinds = [t.type for t in tokens[start : err + 1]]
    if kinds[:2] in (["IDENT", "INC"], ["IDENT", "DEC"], ["INC", "IDENT"], ["DEC", "IDENT"]):
        name = _text(tokens[start] if kinds[0] == "IDENT" else tokens[start + 1])
        op = "+" if "INC" in kinds[:2] else "-"
        return CHint(
            None, f"an increment is not a statement: write '{name} {op}= 1;' ('{name}' declared 'mutable')", err
        )
    return None


def _cast(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``(float)x``: a C cast (the lexer reads ``float`` as ``f32``)."""
    for k in range(max(start, err - 3), min(err + 1, len(tokens) - 2)):
        if tokens[k].type == "(" and tokens[k + 1].type in ("ELEMTYPE", "INT") and tokens[k + 2].type == ")":
            t = _text(tokens[k + 1])
            return CHint(None, f"a C cast: write '__to<{t}>(x)' (docs/builtins.md)", k)
    return None


def _c_words(tokens: list[Any], start: int, err: int) -> CHint | None:
    for k in range(start, min(err + 1, len(tokens))):
        tok = tokens[k]
        if _ident(tok, "const", "constexpr", "static", "volatile", "register", "__restrict__", "__shared__"):
            word = _text(tok)
            if word == "__shared__":
                return CHint(None, "declare a block's buffer as 'shared f32 [64] s;' inside 'parallel'", k)
            return CHint(
                f"'{word}' is C++, not Croqtile",
                "names are immutable unless declared 'mutable': drop it"
                if word in ("const", "constexpr")
                else "drop it",
                k,
            )
        if tok.type == "IDENT" and _text(tok) in C_TYPES:
            word = _text(tok)
            return CHint(f"'{word}' is a C type", f"Croqtile spells it '{C_TYPES[word]}' (docs/types.md)", k)
        if _ident(tok, "and", "or", "not"):
            word = _text(tok)
            return CHint(None, f"write '{ {'and': '&&', 'or': '||', 'not': '!'}[word] }' for '{word}'", k)
    return None


def _pointer(tokens: list[Any], start: int, err: int) -> CHint | None:
    tok = tokens[err]
    if tok.type == "*" and err > 0 and tokens[err - 1].type in ("ELEMTYPE", "INT"):
        return CHint(
            "a pointer type: Croqtile has no pointers",
            "a tensor parameter is 'global f32 [N] x' (its shape, then its name); docs/types.md",
            err,
        )
    arrow = (tok.type == "-" and err + 1 < len(tokens) and tokens[err + 1].type == ">") or (
        tok.type == ">" and err > 0 and tokens[err - 1].type == "-"
    )
    if arrow:
        return CHint("'->' is C++, not Croqtile", "a copy's destination follows '=>' ('dma.copy x => s;')", err)
    return None


def _exponent(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``1e-3f`` lexes as ``1``, ``e``, ``-``, ``3``, ``f``: the parser stops at ``e``."""
    tok = tokens[err]
    if tok.type == "IDENT" and err > 0 and tokens[err - 1].type in ("NUM", "FLOATLIT"):
        word = _text(tok)
        if word[:1] in ("e", "E") and (word[1:].rstrip("fF").isdigit() or len(word) == 1):
            return CHint(
                "a float with an exponent: Croqtile has no exponent literals",
                "write the number out ('0.001f' for '1e-3f')",
                err - 1,
            )
    return None


def _literal_suffix(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``12ulx``, ``12lu``, ``0x1g``, ``1.5d``: letters the literal's form does not have, which lex as
    a name right after it (LANGUAGE.md 3.3: an integer's suffix is ``u`` then ``l`` or ``ll``, a
    float's only ``f``)."""
    tok = tokens[err]
    if tok.type != "IDENT" or err == 0 or tokens[err - 1].type not in ("NUM", "FLOATLIT"):
        return None
    lit = tokens[err - 1]
    digits, word = _text(lit), _text(tok)
    if lit.lexpos + len(digits) != tok.lexpos:
        return None  # '12 x': two operands, not one literal
    text = digits + word
    if lit.type == "FLOATLIT":
        number = digits.rstrip("fF")
        return CHint(
            f"'{text}' is not a float literal: the only suffix of a float is 'f'",
            f"write '{number}f' (f32) or '{number}' (f64)",
            err - 1,
            err,
        )
    number = digits.rstrip("uUlL")
    if word[:1] in ("f", "F") and not number.lower().startswith("0x"):
        return CHint(
            f"'{text}' is not a number: a float literal has a point",
            f"write '{number}.0f' (f32) or '{number}.0' (f64)",
            err - 1,
            err,
        )
    return CHint(
        f"'{text}' is not an integer literal: its suffix is 'u', 'l', 'll', 'ul' or 'ull' (LANGUAGE.md 3.3)",
        f"write '{number}' (an int), '{number}u' (unsigned) or '{number}ll' (64 bits)",
        err - 1,
        err,
    )


def _dot_float(tokens: list[Any], start: int, err: int) -> CHint | None:
    tok = tokens[err]
    if tok.type == "DOT" and err + 1 < len(tokens) and tokens[err + 1].type == "NUM":
        return CHint(None, f"write '0.{_text(tokens[err + 1])}' with its leading 0", err)
    return None


def _signed_literal(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``a-1.5f``: the lexer reads ``-1.5f`` as one literal, so two operands meet."""
    tok = tokens[err]
    after_operand = err > start and tokens[err - 1].type in ("IDENT", ")", "NUM", "FLOATLIT", "]")
    if tok.type in ("FLOATLIT", "NUM") and _text(tok).startswith("-") and after_operand:
        return CHint(None, f"put a space after '-': '.. - {_text(tok)[1:]}'", err)
    return None


def _assign_in_condition(tokens: list[Any], start: int, err: int) -> CHint | None:
    tok = tokens[err]
    if tok.type == "=" and any(t.type in ("IF", "WHILE") for t in tokens[max(0, start - 1) : err]):
        return CHint(None, "compare with '==' ('=' assigns)", err)
    return None


def _call_in_expression(tokens: list[Any], start: int, err: int) -> CHint | None:
    calls = [k for k in range(start, err + 1) if tokens[k].type == "CALL"]
    if calls and (calls[-1] == err and err > start + 2 or calls[-1] < err):
        return CHint(
            None,
            "a call stands alone or as the whole value of an assignment: 'v = call f(..);', then use 'v'",
            err,
        )
    return None


def _pragma_unroll(tokens: list[Any], start: int, err: int) -> CHint | None:
    for k in range(max(0, start - 1), min(err + 2, len(tokens))):
        if _ident(tokens[k], "pragma", "unroll"):
            return CHint(None, "unroll a loop with a suffix: 'foreach i in [8] : unroll { .. }'", k)
    return None


def _signature(tokens: list[Any], start: int, err: int) -> CHint | None:
    """Mistakes in a ``__co__`` function's signature."""
    co = next((k for k in range(start, err + 1) if tokens[k].type == "CO"), None)
    if co is None:
        return None
    tok = tokens[err]
    if err == co + 1 and tok.type == "IDENT" and err + 1 < len(tokens) and tokens[err + 1].type == "(":
        name = _text(tok)
        return CHint(None, f"a __co__ function declares its type: '__co__ void {name}(..)' (or 'auto', 'f32 [N]')", err)
    if tok.type in ("SHARED", "LOCAL"):
        return CHint(
            f"a '{_text(tok)}' parameter: parameters are in global memory or on the host",
            "write 'global f32 [N] a' (or no storage: host data); declare 'shared' and 'local' buffers inside"
            " 'parallel'",
            err,
        )
    if tok.type in ("MDSPAN", "ITUPLE"):
        kind = "mdspan" if tok.type == "MDSPAN" else "ituple"
        return CHint(
            f"an '{kind}' parameter: shapes and index tuples cannot be parameters (LANGUAGE.md 6)",
            "name the extents in a tensor's shape ('global f32 [M, N] x', then 'x.span') or pass them as 'int'"
            " parameters",
            err,
        )
    if tok.type == "[" and err > 0 and tokens[err - 1].type == "INT":
        return CHint(
            None,
            "'int' is a scalar type: a tensor of 32-bit integers is 's32' ('global s32 [N] a'); docs/types.md",
            err - 1,
        )
    return None


def _declarations(tokens: list[Any], start: int, err: int) -> CHint | None:
    tok = tokens[err]
    if tok.type == "AUTO" and err == start:
        name = _text(tokens[err + 1]) if err + 1 < len(tokens) and tokens[err + 1].type == "IDENT" else "x"
        return CHint(
            None,
            f"'auto' gives a function's type only: declare a scalar by assigning it ('{name} = ..;') or with"
            f" its type ('int {name} = ..;')",
            err,
        )
    in_signature = any(t.type == "CO" for t in tokens[start:err])  # the parser's own hint says it there
    c_array = err - 2 >= start and tokens[err - 1].type == "IDENT" and tokens[err - 2].type == "ELEMTYPE"
    if tok.type == "[" and c_array and not in_signature:
        t, name = _text(tokens[err - 2]), _text(tokens[err - 1])
        return CHint(None, f"the shape goes before the name: '{t} [..] {name};' (docs/types.md)", err)
    return None


def _without_leading_zeros(tokens: list[Any], first: int) -> str:
    """The number written from ``tokens[first]`` on (``007`` lexes as three numbers, each following
    the other with no space) without its leading zeros: what the hint says to write."""
    text, k = _text(tokens[first]), first + 1
    while (
        k < len(tokens)
        and tokens[k].type == "NUM"
        and tokens[k].lexpos == tokens[k - 1].lexpos + len(_text(tokens[k - 1]))
    ):
        text += _text(tokens[k])
        k += 1
    return text.lstrip("0") or "0"


def _statements(tokens: list[Any], start: int, err: int) -> CHint | None:
    tok = tokens[err]
    kinds = [t.type for t in tokens[start : err + 1]]
    if kinds and kinds[0] in ("DMA", "TMA") and "LE" in kinds:
        return CHint(None, "a copy reads from left to right: 'dma.copy SOURCE => DESTINATION;'", err)
    if tok.type == "QNAME":
        word = _text(tok)
        if word.split("::")[0] in ("wmma", "nvcuda", "cute", "cutlass"):
            return CHint(
                f"'{word}' is CUDA C++, not Croqtile",
                "tensor-core products are 'mma.row.row acc, a, b;' (docs/mma.md)",
                err,
            )
        return CHint(None, f"call a C++ function with 'call {word}(..);'", err)
    zero = err > start and tokens[err - 1].type == "NUM" and _text(tokens[err - 1]) == "0"
    if tok.type == "NUM" and zero and tok.lexpos == tokens[err - 1].lexpos + 1:  # (007: no space between)
        return CHint(None, f"a number has no leading 0: write '{_without_leading_zeros(tokens, err - 1)}'", err - 1)
    if tok.type in ("=", ";") and kinds.count("(") > kinds.count(")"):
        return CHint(None, "is a ')' missing before it?", err)
    if tok.type == "ELSE":
        return CHint(None, "'else' follows the statement of an 'if': is there a ';' or a '}' too many before it?", err)
    return None


def _goto(tokens: list[Any], start: int, err: int) -> CHint | None:
    if tokens[err].type == "GOTO" and err > 0 and tokens[err - 1].type == "ASM":
        return CHint(
            "'asm goto' is not supported (LANGUAGE.md 7.7)", "write '__asm__ volatile (\"..\" : outs : ins);'", err
        )
    if tokens[err].type == "GOTO":
        return CHint(
            "'goto' is a reserved word: Croqtile has no goto",
            "leave a loop with 'break' or 'continue', the kernel with 'yield', or branch with 'if'",
            err,
        )
    return None


def _trailing_dot(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``5.``: a float literal needs a digit after its point (LANGUAGE.md 3.3)."""
    tok = tokens[err]
    if tok.type == "DOT" and err > 0 and tokens[err - 1].type == "NUM":
        after = tokens[err + 1].type if err + 1 < len(tokens) else None
        if after != "NUM":
            n = _text(tokens[err - 1])
            return CHint(f"'{n}.' is not a float literal", f"write '{n}.0f' (f32) or '{n}.0'", err - 1)
    return None


def _open_bracket(tokens: list[Any], start: int, err: int) -> int | None:
    """The index of the '[' still open at ``err`` in its statement (None: none is)."""
    depth = 0
    for k in range(err - 1, start - 1, -1):
        if tokens[k].type == "]":
            depth += 1
        elif tokens[k].type == "[":
            if depth == 0:
                return k
            depth -= 1
    return None


def _shapes(tokens: list[Any], start: int, err: int) -> CHint | None:
    """A ``?`` extent of a buffer declared in a body; an expression as a parameter's extent."""
    tok = tokens[err]
    opened = _open_bracket(tokens, start, err)
    if opened is None or opened == 0 or tokens[opened - 1].type != "ELEMTYPE":
        return None
    in_signature = any(t.type == "CO" for t in tokens[start:err])
    if tok.type in ("?", "QQ") and not in_signature:
        return CHint(
            f"a '{_text(tok)}' extent of a buffer: dynamic extents are only in parameter shapes (LANGUAGE.md 6)",
            "give the buffer a shape of constants and the parameters' sizes ('shared f32 [TM, N] s;')",
            err,
        )
    if tok.type in ("*", "+", "-", "/", "%") and in_signature:
        return CHint(
            "a parameter's extent is an integer or one name, not an expression",
            "name the extent ('[N2]') and relate the names in the body: 'assert(N2 == N * 2, \"..\");'",
            err,
        )
    return None


def _event_value(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``shared event e = 1;``: an event starts pending, or ready with ``= ready``."""
    kinds = [t.type for t in tokens[start:err]]
    if "EVENT" in kinds and err > start and tokens[err - 1].type == "=" and not _ident(tokens[err], "ready"):
        return CHint(
            "an event is initialised with '= ready' only",
            "declare it pending ('shared event e[2];') or ready ('shared event e[2] = ready;')",
            err,
        )
    return None


def _assert(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``assert(c)``, ``assert(c, 5)``, ``assert(c "m")``, ``assert c;``: an assert is
    ``assert(condition, "message")`` (LANGUAGE.md 5: ``assert(expr, STRING+)``)."""
    if tokens[start].type != "ASSERT" or any(t.type == "STRING" for t in tokens[start:err]):
        return None
    tok = tokens[err]
    if err == start + 1:
        return CHint(
            "'assert' takes its condition and message in parentheses",
            "write 'assert(N > 0, \"N must be positive\");'",
            err,
        )
    commas = [k for k in range(start + 2, err) if tokens[k].type == ","]
    cond = " ".join(_text(t) for t in tokens[start + 2 : commas[0] if commas else err]) or "c"
    fix = f"write 'assert({cond}, \"..\");'"
    if tok.type == ")" and not commas:
        return CHint("'assert' needs a message: assert(condition, \"message\")", fix, err)
    if commas:
        return CHint("the message of an 'assert' is a string literal", fix, err)
    if tok.type == "STRING":
        return CHint("a ',' is missing between the condition and the message of the 'assert'", fix, err)
    return None


ITUPLE_ARRAY = "no ituple array is allowed."
ITUPLE_ARRAY_HINT = "an ituple holds several ints: 'ituple<2> t = {a, b};', then t(0) and t(1) (LANGUAGE.md 5)"


def _ituple_array(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``ituple t[2];``, ``ituple t[2][3] = ..``: no array of ituples (LANGUAGE.md 5; the parser
    reports ``ituple t[2] = ..`` itself)."""
    if tokens[start].type != "ITUPLE":
        return None
    k = start + 1
    if k + 2 < err and tokens[k].type == "<" and tokens[k + 2].type == ">":
        k += 3
    if not (k + 1 < err and tokens[k].type == "IDENT" and tokens[k + 1].type == "["):
        return None
    opened = k + 1
    close = next((j for j in range(opened, err) if tokens[j].type == "]"), None)
    return CHint(ITUPLE_ARRAY, ITUPLE_ARRAY_HINT, opened, close if close is not None else opened)


def _triton(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``tl.program_id(0)``, ``tl.arange(0, 64)``, ``tl.load(p)`` ...: Triton written in Croqtile."""
    for k in range(start, min(err + 1, len(tokens) - 1)):
        if not _ident(tokens[k], "tl", "triton"):
            continue
        after = tokens[k + 1]
        if after.type == "DOT" and k + 2 < len(tokens):
            member, last = _text(tokens[k + 2]), k + 2
        elif after.type.startswith("M_") or after.type == "MEMBER":  # '.store', '.span': member tokens
            member, last = _text(after).lstrip("."), k + 1
        else:
            continue
        if member not in TRITON_HINTS and not member.startswith(("atomic_", "float", "int", "uint")):
            continue
        if member.startswith("atomic_"):
            hint = f"write '__atomic_{member[7:].replace('xchg', 'exch')}(x.at(i), v);' (docs/builtins.md)"
        elif member not in TRITON_HINTS:
            hint = "an element type is 'f32', 'f16', 'bf16', 's32' .. ('__to<f32>(x)' converts); docs/types.md"
        else:
            hint = TRITON_HINTS[member]
        return CHint(f"'{_text(tokens[k])}.{member}' is Triton, not Croqtile", hint, k, last)
    return None


def _c_control(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``switch (x) { .. }``, ``do { .. } while (c);``, ``assert(c);`` without its message, and a
    numpy slice ``a[0:16]``."""
    tok = tokens[err]
    if _ident(tokens[start], "switch") and err == start + 1:
        return CHint("'switch' is C, not Croqtile", "branch with 'if (..) { .. } else if (..) { .. }'", start)
    if _ident(tokens[start], "do") and err == start + 1 and tok.type == "{":
        return CHint("'do .. while' is C, not Croqtile", "write the loop as 'while (c) { .. }'", start)
    opened = _open_bracket(tokens, start, err)
    if tok.type == ":" and opened is not None and opened > 0 and tokens[opened - 1].type == "IDENT":
        name = _text(tokens[opened - 1])
        return CHint(
            "a slice 'x[a:b]' is Python, not Croqtile",
            f"take a view: '{name}.subspan(16).at(i)' (the i-th tile of 16) or '{name}.view(16).from(o)'"
            " (16 elements from o); docs/views.md",
            err,
        )
    return None


def _closing(tokens: list[Any], k: int, open_: str, close: str) -> int | None:
    """The index of the token that closes the ``open_`` at ``tokens[k]``."""
    depth = 0
    for m in range(k, len(tokens)):
        if tokens[m].type == open_:
            depth += 1
        elif tokens[m].type == close:
            depth -= 1
            if depth == 0:
                return m
    return None


def _array_element_write(tokens: list[Any], start: int, err: int) -> CHint | None:
    """``ring[k].at(i) = v``: LANGUAGE.md 5 writes elements of a named buffer only (``elem_access :=
    IDENT .at(..)``); one buffer of an array of buffers is named first (7.5: ``buf[s]`` is a view)."""
    if tokens[err].type != "[" or err == 0 or tokens[err - 1].type != "IDENT":
        return None
    end = _closing(tokens, err, "[", "]")
    if end is None or end + 2 >= len(tokens) or tokens[end + 1].type != "M_AT" or tokens[end + 2].type != "(":
        return None
    # (at a statement's start an element access is written; the tokens after the error are few)
    close = _closing(tokens, end + 2, "(", ")")
    after = [t.type for t in tokens[close + 1 : close + 3]] if close is not None else []
    if after and "=" not in after:
        return None
    name = _text(tokens[err - 1])
    return CHint(
        "an element of one buffer of an array of buffers is written through a name",
        f"name the buffer first: 'cur = {name}[..]; cur.at(..) = ..;' (LANGUAGE.md 7.5)",
        err - 1,
        end,
    )


RULES: tuple[Callable[[list[Any], int, int], CHint | None], ...] = (
    _cuda_index,
    _barrier,
    _nullary_intrinsic,
    _c_for,
    _compound,
    _postfix_statement,
    _pointer,
    _exponent,
    _literal_suffix,
    _signed_literal,
    _cast,
    _c_words,
    _dot_float,
    _assign_in_condition,
    _call_in_expression,
    _pragma_unroll,
    _signature,
    _declarations,
    _statements,
    _goto,
    _trailing_dot,
    _shapes,
    _event_value,
    _assert,
    _ituple_array,
    _triton,
    _c_control,
    _array_element_write,
)
