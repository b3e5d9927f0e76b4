"""Syntax errors that come from a misspelt word: which word, and what it should have been.

When the parser stops at a token, a misspelt reserved word, element type, builtin or member
(``paralel p by 4``, ``global i32 [N] x``, ``__expf(x.at(i))``, ``x.chunk_at(i)``) is usually the
cause, at that token or a few before it in the same statement: a misspelt word lexes as an
identifier, and the parser only notices later.  Each identifier near the error is replaced by the
words it may have meant (frontend/suggest.py) and the function is parsed again with it; a
replacement explains the error when the parser then gets past the error token and a few more.  So
a word is only suggested where the grammar accepts it, and a valid program never sees any of this:
it runs only after a syntax error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ply.lex import LexToken

from ..errors import CroqSyntaxError, SourceMap, Span
from . import suggest
from .lexer import ATOMICS, BAR_FUNCS, ELEM_TYPES, KEYWORDS, MATH_FUNCS, MEMBER_TOKENS

# the parse of a token list that stops after its first ``stop`` tokens: None when it got through
# them (or parsed the whole list), else the index of the token it failed at
Trial = Callable[[list[Any], int], int | None]

NEAR = 4  # identifiers tried, the one at the error and those before it in its statement
BEYOND = 3  # a replacement must let the parse take the error token and this many more, less one
MOST_TRIALS = 24  # parses tried at most for one error
MEMBERS_DOCS = "docs/views.md, docs/copies.md and docs/mma.md list the members of views, copies and MMAs"


@dataclass
class Fix:
    """Tokens ``start:stop`` of the function replaced by ``tokens``: what ``word`` should be."""

    start: int
    stop: int
    tokens: list[Any]
    kind: str  # keyword, type, builtin, call (no builtin is near: an unknown function), member
    word: str
    right: str


def explain(
    tokens: list[Any], err: int, trial: Trial, smap: SourceMap | None, ends: dict[int, int]
) -> CroqSyntaxError | None:
    """The error for a parse of ``tokens`` that failed at ``tokens[err]``, when a misspelt word
    explains it; else None (the parser's own message stands)."""
    if err >= len(tokens):
        return None
    for fix in _fixes(tokens, err)[:MOST_TRIALS]:
        new = tokens[: fix.start] + fix.tokens + tokens[fix.stop :]
        at = err - (fix.stop - fix.start) + len(fix.tokens) if fix.stop <= err else fix.start + len(fix.tokens) - 1
        if fix.kind in ("builtin", "call"):  # the call must parse up to its ')' and what follows it
            at = max(at, _closing(new, fix.start + 1))
        need = min(at + BEYOND, len(new))
        failed = trial(new, need)
        if failed is None or failed >= need:
            return _error(fix, tokens, smap, ends)
    return _unknown_member(tokens, err, smap, ends)


def _fixes(tokens: list[Any], err: int) -> list[Fix]:
    """The replacements worth a parse, nearest the error first, likeliest first."""
    out: list[Fix] = []
    for i in _near_idents(tokens, err):
        word = tokens[i].value
        after = tokens[i + 1].type if i + 1 < len(tokens) else None
        if i > 0 and tokens[i - 1].type == "DOT":
            for m in suggest.member(word)[:3]:
                tok = _like(tokens[i - 1], MEMBER_TOKENS[m], "." + m)
                out.append(Fix(i - 1, i + 1, [tok], "member", "." + word, "." + m))
        words: list[tuple[str, str]] = []
        if after == "(":
            words += [("builtin", b) for b in suggest.builtin(word)[:3]]
        words += [("type", t) for t in suggest.elem_type(word)[:3]]
        words += [("keyword", k) for k in suggest.keyword(word)[:3]]
        for kind, right in sorted(words, key=lambda kw: _rank(word, kw[1])):
            out.append(Fix(i, i + 1, [_word_token(tokens[i], kind, right)], kind, word, right))
        if after == "(" and not words:  # an unknown function (not a misspelt word): would a builtin parse here?
            for stand_in, tok_type in (("__exp", "MATHFN"), ("__atomic_add", "ATOMIC")):
                out.append(Fix(i, i + 1, [_like(tokens[i], tok_type, stand_in)], "call", word, ""))
    return out


def _closing(tokens: list[Any], open_at: int) -> int:
    """The index of the ')' that closes the '(' at ``open_at`` (or of the last token)."""
    depth = 0
    for i in range(open_at, len(tokens)):
        t = tokens[i].type
        depth += 1 if t == "(" else -1 if t == ")" else 0
        if depth == 0:
            return i
    return len(tokens) - 1


def _rank(word: str, right: str) -> tuple[int, int]:
    alias = suggest.TYPE_ALIASES.get(word) == right or right in suggest.builtin(word)[:1]
    return (0 if alias else 1, suggest.distance(word.lower(), right.lower()))


def _near_idents(tokens: list[Any], err: int) -> list[int]:
    """Indices of the identifiers to try: the error token (or the one after an error at a '.'),
    then those before the error in its statement, nearest first."""
    out: list[int] = []
    if tokens[err].type == "IDENT":
        out.append(err)
    elif tokens[err].type == "DOT" and err + 1 < len(tokens) and tokens[err + 1].type == "IDENT":
        out.append(err + 1)
    i = err - 1
    while i >= 0 and len(out) < NEAR and tokens[i].type not in (";", "{", "}"):
        if tokens[i].type == "IDENT":
            out.append(i)
        i -= 1
    return out


def _word_token(like: Any, kind: str, right: str) -> Any:
    if kind == "type":
        return _like(like, "ELEMTYPE", ELEM_TYPES[right])
    if kind == "keyword":
        return _like(like, KEYWORDS.get(right, "GROUP4"), right)
    tok_type = "MATHFN" if right in MATH_FUNCS else "ATOMIC" if right in ATOMICS else "BARFN"
    if right not in MATH_FUNCS | ATOMICS | BAR_FUNCS:
        tok_type = KEYWORDS[right]  # __to
    return _like(like, tok_type, right)


def _like(tok: Any, tok_type: str, value: Any) -> Any:
    t = LexToken()
    t.type = tok_type
    t.value = value
    t.lineno = tok.lineno
    t.lexpos = tok.lexpos
    return t


def token_span(tokens: list[Any], start: int, stop: int, smap: SourceMap | None, ends: dict[int, int]) -> Span:
    """The source of ``tokens[start:stop]``."""
    last = tokens[stop - 1].lexpos
    return Span(smap, tokens[start].lexpos, ends.get(last, last + 1))


def _error(fix: Fix, tokens: list[Any], smap: SourceMap | None, ends: dict[int, int]) -> CroqSyntaxError:
    span = token_span(tokens, fix.start, fix.stop, smap, ends)
    w, r = suggest.shown(fix.word), fix.right
    if fix.kind == "member":
        return CroqSyntaxError(
            f"unknown member '{w}'; did you mean '{r}'?", span, f"the members are {suggest.MEMBERS_TEXT}"
        )
    if fix.kind == "type":
        hint = f"the element types are {suggest.ELEM_TYPES_TEXT}"
        if w.startswith("int"):
            hint += "; 'int' is the 32-bit integer of control code (sizes, indices)"
        return CroqSyntaxError(f"unknown element type '{w}'; did you mean '{r}'?", span, hint)
    if fix.kind == "builtin":
        return CroqSyntaxError(f"'{w}' is not a builtin; did you mean '{r}'?", span, suggest.call_hint(w))
    if fix.kind == "call":
        return CroqSyntaxError(
            f"'{w}' is not a builtin function",
            span,
            f"{suggest.call_hint(w)}; the builtins are {suggest.BUILTINS_TEXT}",
        )
    return CroqSyntaxError(
        f"unknown word '{w}'; did you mean '{r}'?",
        span,
        f"a misspelt reserved word reads as a name, and a name cannot stand here; write '{r}'",
    )


def _unknown_member(
    tokens: list[Any], err: int, smap: SourceMap | None, ends: dict[int, int]
) -> CroqSyntaxError | None:
    """``x.chunk_at(...)`` where no member parses: still an unknown member (a '.' directly before a
    name is never valid after an expression)."""
    i = err if tokens[err].type == "DOT" else err - 1
    if i < 1 or i + 1 >= len(tokens) or tokens[i].type != "DOT" or tokens[i + 1].type != "IDENT":
        return None
    if tokens[i - 1].type not in ("IDENT", ")", "]") and not tokens[i - 1].type.startswith("M_"):
        return None  # after a keyword ('mma.', 'sync.'): the parser's message names what may follow
    if ends.get(tokens[i].lexpos, tokens[i].lexpos + 1) != tokens[i + 1].lexpos:
        return None  # 'x . y': not written as a member
    word = tokens[i + 1].value
    near = suggest.member(word)
    text = f"unknown member '.{suggest.shown(word)}'"
    if near:
        text += "; " + suggest.did_you_mean(near, ".")
    hint = f"the members are {suggest.MEMBERS_TEXT}" if near else MEMBERS_DOCS
    return CroqSyntaxError(text, token_span(tokens, i, i + 2, smap, ends), hint)
