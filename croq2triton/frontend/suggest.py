"""Did-you-mean: the words of the language a misspelt word may have meant.

One place for the vocabulary (LANGUAGE.md 3.4 reserved words, 4.2 element types, 3.4 builtins,
3.5 member tokens) and for how near a word must be to count: a Damerau-Levenshtein distance
(adjacent transpositions count once) that grows with the word's length, after spellings other
languages use are mapped (``int32``/``i32`` -> ``s32``, ``fp16`` -> ``f16``, ``expf`` -> ``__exp``,
``atomicAdd`` -> ``__atomic_add``, ``chunk_at`` -> ``chunkat``).  Where a suggestion is valid is
not decided here: the parser tries each one (frontend/repair.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from .lexer import ATOMICS, BAR_FUNCS, ELEM_TYPES, KEYWORDS, MATH_FUNCS, MEMBERS

# reserved words that start statements, declarations and clauses (not the element types)
KEYWORD_WORDS: tuple[str, ...] = (*sorted(KEYWORDS), "group-4")
ELEM_TYPE_WORDS: tuple[str, ...] = tuple(ELEM_TYPES)
BUILTIN_WORDS: tuple[str, ...] = tuple(sorted(MATH_FUNCS | ATOMICS | BAR_FUNCS | {"__to"}))
MEMBER_WORDS: tuple[str, ...] = tuple(MEMBERS)

# the spellings of C, CUDA, torch and numpy for Croqtile's element types (LANGUAGE.md 4.2)
TYPE_ALIASES: dict[str, str] = {
    **{f"{p}{n}": f"s{n}" for p in ("i", "int", "int", "si") for n in (8, 16, 32, 64)},
    **{f"int{n}_t": f"s{n}" for n in (8, 16, 32, 64)},
    **{f"{p}{n}": f"u{n}" for p in ("ui", "uint") for n in (8, 16, 32, 64)},
    **{f"uint{n}_t": f"u{n}" for n in (8, 16, 32, 64)},
    **{f"{p}{n}": f"f{n}" for p in ("fp", "float") for n in (16, 32, 64)},
    "float8": "f8_e4m3", "fp8": "f8_e4m3", "e4m3": "f8_e4m3", "fp8_e4m3": "f8_e4m3", "float8_e4m3": "f8_e4m3",
    "float8_e4m3fn": "f8_e4m3", "e5m2": "f8_e5m2", "fp8_e5m2": "f8_e5m2", "float8_e5m2": "f8_e5m2",
    "fp4": "f4_e2m1", "float4_e2m1": "f4_e2m1", "float4_e2m1fn_x2": "f4_e2m1",
    "bfloat16": "bf16", "bfloat": "bf16", "bfp": "bf16", "__nv_bfloat16": "bf16", "__half": "f16",
    "char": "s8", "uchar": "u8", "short": "s16", "ushort": "u16", "long": "s64", "unsigned": "u32",
    "uint": "u32", "size_t": "u64", "fp32_t": "f32", "float32_t": "f32", "f8e4m3": "f8_e4m3", "f8e5m2": "f8_e5m2",
}  # fmt: skip


def distance(a: str, b: str) -> int:
    """The optimal-string-alignment (restricted Damerau-Levenshtein) distance of ``a`` and ``b``:
    insertions, deletions, substitutions and swaps of adjacent characters each cost 1."""
    if a == b:
        return 0
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def _limit(word: str) -> int:
    """How many edits a word of this length may be away from what it meant."""
    n = len(word)
    return 0 if n < 3 else 1 if n <= 4 else 2 if n <= 9 else 3


def close(word: str, vocabulary: Iterable[str], limit: int | None = None) -> list[str]:
    """The words of ``vocabulary`` within the edit limit of ``word``, nearest first (ties keep the
    vocabulary's order); letter case is ignored."""
    most = _limit(word) if limit is None else limit
    low = word.lower()
    scored = []
    for i, w in enumerate(vocabulary):
        if abs(len(w) - len(word)) > most:
            continue  # at least that many insertions or deletions
        d = distance(low, w.lower())
        if d <= most and w != word:
            scored.append((d, i, w))
    return [w for _, _, w in sorted(scored)]


def _squash(word: str) -> str:
    """Case, underscores and dashes ignored: ``chunk_at``, ``ChunkAt`` and ``chunkat`` are one word."""
    return word.replace("_", "").replace("-", "").lower()


def _snake(word: str) -> str:
    """``atomicAdd`` -> ``atomic_add``."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", word).lower()


@lru_cache(maxsize=4096)
def keyword(word: str) -> tuple[str, ...]:
    """Reserved words ``word`` may have meant."""
    same = [k for k in KEYWORD_WORDS if _squash(k) == _squash(word) and k != word]
    return tuple(same + [k for k in close(word, KEYWORD_WORDS) if k not in same])


@lru_cache(maxsize=4096)
def elem_type(word: str) -> tuple[str, ...]:
    """Element types ``word`` may have meant: the other languages' spellings first."""
    out: list[str] = []
    alias = TYPE_ALIASES.get(word) or TYPE_ALIASES.get(word.lower())
    if alias is not None:
        out.append(alias)
    canonical = {v for v in ELEM_TYPES.values()}
    for t in close(word, ELEM_TYPE_WORDS):
        t = ELEM_TYPES[t] if t not in canonical else t
        if t not in out and t != word:
            out.append(t)
    return tuple(out)


@lru_cache(maxsize=4096)
def builtin(word: str) -> tuple[str, ...]:
    """Builtin functions ``word`` may have meant: ``expf``, ``__expf`` and ``exp`` all mean
    ``__exp``; ``fmaxf`` and ``max`` mean ``__max``; ``atomicAdd`` means ``__atomic_add``."""
    bare = _snake(word.lstrip("_"))
    forms = [bare, bare[:-1] if bare.endswith("f") else bare, bare[1:] if bare.startswith("f") else bare]
    forms.append(forms[1][1:] if forms[1].startswith("f") else forms[1])  # fmaxf -> max
    out: list[str] = []
    for f in forms:
        for b in BUILTIN_WORDS:
            if b[2:] == f and b not in out and b != word:
                out.append(b)
    if len(word) >= 4 or word.startswith("__"):
        out += [b for b in close(word, BUILTIN_WORDS) if b not in out]
        if not word.startswith("__"):
            out += [b for b in close("__" + word, BUILTIN_WORDS) if b not in out]
    return tuple(out)


@lru_cache(maxsize=4096)
def member(word: str) -> tuple[str, ...]:
    """Member tokens (without the dot) ``word`` may have meant."""
    same = [m for m in MEMBER_WORDS if _squash(m) == _squash(word) and m != word]
    return tuple(same + [m for m in close(word, MEMBER_WORDS) if m not in same])


def shown(word: str, most: int = 40) -> str:
    """A word as a message quotes it: a very long one cut short."""
    return word if len(word) <= most else word[: most - 3] + "..."


def call_hint(word: str) -> str:
    """How a C++/CUDA device function is called (LANGUAGE.md 7.7)."""
    return f"to call a C++/CUDA device function, write 'call {word}(...)' (a statement, or 'x = call {word}(...);')"


def one_of(words: Iterable[str], quote: str = "'") -> str:
    """``'a'``, ``'a' or 'b'``, ``'a', 'b' or 'c'``."""
    items = [f"{quote}{w}{quote}" for w in words]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def did_you_mean(words: Sequence[str], prefix: str = "", most: int = 3) -> str:
    """``did you mean 'x'?`` (or ``'x' or 'y'``); empty when there is nothing to suggest."""
    if not words:
        return ""
    return f"did you mean {one_of(prefix + w for w in words[:most])}?"


ELEM_TYPES_TEXT = " ".join(sorted(set(ELEM_TYPES.values()), key=list(ELEM_TYPES.values()).index))
MEMBERS_TEXT = " ".join("." + m for m in MEMBERS)
BUILTINS_TEXT = "__exp, __log, __sqrt, __max, __min, __fabs, __tanh ... (LANGUAGE.md 7.7) and __atomic_add ..."
