"""Syntax errors that come from naming a variable or a parameter with a reserved word (LANGUAGE.md
3.4: ``int block = 4;``, ``global f32 [N] in``, ``f32 copy = ..``).  The parser stops at the word
where a declaration names it (after a type, ``mutable``, a parameter's shape); it is the cause when
the same statement parses on with an ordinary name in its place (the trial parse frontend/repair.py
uses), so only a word the grammar would take as a name is reported.  Run only after a syntax error.
"""

from __future__ import annotations

from typing import Any

from ..errors import CroqSyntaxError, SourceMap
from .lexer import KEYWORDS
from .repair import BEYOND, Trial, _like, token_span

_RESERVED = frozenset(KEYWORDS) - {"__cpp__", "__asm__", "__to", "__co__"}
# the literals among them (LANGUAGE.md 3.3): said to be literals, not reserved words
_LITERALS = {
    "true": "a bool literal",
    "false": "a bool literal",
    "nullptr": "the null literal",
    "inf": "a float literal (infinity)",
}
# the tokens a declared name follows: a type, 'mutable', a parameter's shape or '&', and those a
# bounded name follows ('parallel by', 'foreach k in', 'with', a tuple of names '{bx, by}')
_BEFORE_NAME = frozenset(
    {"ELEMTYPE", "INT", "BOOL", "MUTABLE", "STREAM", "EVENT", "]", "&", ",", "{", "PARALLEL", "FOREACH", "WITH"}
)


def explain(
    tokens: list[Any], err: int, trial: Trial, smap: SourceMap | None, ends: dict[int, int]
) -> CroqSyntaxError | None:
    if not 0 <= err < len(tokens):
        return None
    tok = tokens[err]
    word = tok.value if isinstance(tok.value, str) else None
    if word is None or word not in _RESERVED or KEYWORDS[word] != tok.type:
        return None
    if err == 0 or tokens[err - 1].type not in _BEFORE_NAME:  # (only where a declaration names it)
        return None
    renamed = word + "_"
    new = tokens[:err] + [_like(tok, "IDENT", renamed)] + tokens[err + 1 :]
    need = min(err + BEYOND, len(new))
    failed = trial(new, need)
    if failed is not None and failed < need:
        return None
    if word in _LITERALS:
        return CroqSyntaxError(
            f"syntax error: '{word}' is {_LITERALS[word]} and cannot be a name",
            token_span(tokens, err, err + 1, smap, ends),
            f"give it another name ('{renamed}', ..)",
        )
    return CroqSyntaxError(
        f"syntax error: '{word}' is a reserved word of Croqtile and cannot be a name",
        token_span(tokens, err, err + 1, smap, ends),
        f"give it another name ('{renamed}', ..); LANGUAGE.md 3.4 lists the reserved words",
    )
