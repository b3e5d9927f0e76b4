"""A seeded, deterministic mutation fuzzer for the front end.

Every case takes a real Croqtile file (the shared corpus when present, ``examples/*.co``,
``tests/programs/*.co`` and the inline snippets below), applies one to three
mutations (token delete / duplicate / swap / repeat / truncate, line delete /
duplicate / swap / truncate, or random byte insertion) and parses the result in both dialects.  The only exception the
front end may raise is :class:`CroqError`, whose diagnostics must format and
point at a real line; text that parses must survive ``print_unit`` + re-parse.
A second test sends mutated programs through the whole translation (checks and lowering, both
schedules): again only :class:`CroqError` may come out.

A failure message names the case index and seed and shows the mutated text, so
a case can be replayed with ``python tests/test_fuzz.py --case N``.
``python tests/test_fuzz.py --cases 50000`` runs a longer campaign.
"""

from __future__ import annotations

import random
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import CORPUS, EXAMPLES, LONG  # noqa: E402

PROGRAMS = Path(__file__).resolve().parent / "programs"

from croq2triton.errors import CroqError  # noqa: E402
from croq2triton.frontend.driver import parse  # noqa: E402
from croq2triton.frontend.printer import print_unit  # noqa: E402

SEED = 20240917
# the long tier (CROQ2TRITON_LONG=1, conftest.py) mutates twice as many programs
CASES = 2000 if LONG else 1000
DIALECTS = ("default", "upstream")
CASE_TIME_LIMIT = 30.0  # seconds; a slower case counts as a hang (10 s tripped on a loaded 2-core machine)

INLINE = [
    """#include <cstdio>
#define TILE 16
__co__ void add(f32 [6, 64] out, f32 [6, 64] in0) {
  parallel p by 6, q by 64 : block {
    out.at(p, q) = in0.at(p, q) + 1.0f;  // trailing comment
  }
}
int main() { /* host */ return 0; }
""",
    """__co__ void f(global f16 [M, K] lhs, f32 [36, 27, 128] input) {
  parallel p by 1 : block {
    shared f16 [64, 64] s[2];
    shared event full[2];
    f1 = dma.copy.async lhs.chunkat(p, _) => shared;
    f2 = tma.load.async.swiz<128> lhs.subspan(64, 64).at(p, 0) => s[0];
    trigger full[0] after f2;
    wait f1;
    foreach {i, j} in [4, cdiv(K, 64)] {
      if (i == 0 && j != 1) { x = select(p % 2, f1, f2); } else { break; }
    }
  }
}
""",
    """__co__ int g(s32 [8, 4] a, int c) {
  s : [3, c];
  ituple<2> u = {1, 2};
  int x = 1 + 2 * 3 - 4 / 2 % 3 << 1 >> 1;
  bool y = !(x == 1) && x != 2 || x <= 3;
  int z = y ? x & 3 | 1 ^ 2 : ~x;
  println("x = ", x, R"(raw)");
  call foo<3, f32>(a, nullptr);
  return |a.span|;
}
""",
    """__co__ void m(f16 [M, K] a, f16 [N, K] b, f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    parallel g by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach k in [cdiv(K, 16)] {
        ma = mma.load a.chunkat(bm, k);
        mb = mma.load b.chunkat(bn, k);
        mma.row.row acc, ma, mb;
      }
      mma.store acc, c.chunkat(bm, bn);
    }
  }
}
""",
]

# A simple tokenizer: whitespace runs and comments are kept as their own tokens,
# so joining the tokens gives the text back.
_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*[\s\S]*?\*/|"(?:[^"\\\n]|\\.)*"|[A-Za-z_]\w*|\d[\w.]*"""
    r"""|=>|<->|::|\+\+|--|==|!=|<=|>=|&&|\|\||<<|>>|\#[-+*/%]|\S"""
)
_JUNK = [
    "{", "}", "(", ")", "[", "]", ";", ",", ":", ".", "#", "<", ">", "=", "=>", '"', "'", "\\",
    "/*", "*/", "//", "\n", "\t", "\r", "\x00", "\x1b", "\u00e9", "\u2028", "\ufeff", "\U0001f600",
    "__co__", "#define X(", "#if", "#endif", "#else", "#line 0", "R\"(", "0x", "99999999999999999999",
    "1.", "@", "$", "`", "~", "?", "??", "|", "&", "parallel", "foreach", "dma.copy", "mma", "__device__",
    "\n#if 08\n", "\n#line 0\n", "\n#define A A A\n", "\n#endif\n", "9" * 5000, "0x" + "f" * 40,
]  # fmt: skip


def sources() -> list[tuple[str, str]]:
    """(name, text) of every seed file, in a stable order."""
    found: list[tuple[str, str]] = []
    for root in (CORPUS, EXAMPLES, PROGRAMS):
        if root.is_dir():
            for p in sorted(root.rglob("*.co")):
                try:
                    found.append((str(p.relative_to(root.parent)), p.read_text(encoding="utf-8")))
                except (OSError, UnicodeDecodeError):
                    continue
    found.extend((f"<inline {i}>", t) for i, t in enumerate(INLINE))
    return found


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _significant(toks: list[str]) -> list[int]:
    return [i for i, t in enumerate(toks) if not t.isspace()]


def _tok_mutation(kind: str) -> Callable[[random.Random, str], str]:
    def mutate(rng: random.Random, text: str) -> str:
        toks = _tokens(text)
        sig = _significant(toks)
        if not sig:
            return text
        i = rng.choice(sig)
        if kind == "delete":
            del toks[i]
        elif kind == "duplicate":
            toks.insert(i, toks[i] + " ")
        elif kind == "swap":
            j = rng.choice(sig)
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == "repeat":  # deep nesting, long chains
            toks.insert(i, toks[i] * rng.choice((3, 50, 250)))
        else:  # truncate
            toks = toks[:i]
        return "".join(toks)

    return mutate


def _line_mutation(kind: str) -> Callable[[random.Random, str], str]:
    def mutate(rng: random.Random, text: str) -> str:
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        else:  # truncate: cut the file in the middle of a line
            lines = lines[:i] + [lines[i][: rng.randrange(len(lines[i]) + 1)]]
        return "\n".join(lines)

    return mutate


def _insert_bytes(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        pos = rng.randrange(len(text) + 1)
        if rng.random() < 0.5:
            junk = rng.choice(_JUNK)
        else:
            junk = "".join(chr(rng.choice([rng.randrange(0x20, 0x7F), rng.randrange(0, 0x250)])) for _ in range(3))
        text = text[:pos] + junk + text[pos:]
    return text


MUTATIONS: dict[str, Callable[[random.Random, str], str]] = {
    **{f"token-{k}": _tok_mutation(k) for k in ("delete", "duplicate", "swap", "repeat", "truncate")},
    **{f"line-{k}": _line_mutation(k) for k in ("delete", "duplicate", "swap", "truncate")},
    "insert-bytes": _insert_bytes,
}
_NAMES = sorted(MUTATIONS)


def make_case(index: int, srcs: list[tuple[str, str]], seed: int = SEED) -> tuple[str, list[str], str]:
    """Case ``index``: (source name, mutations applied, mutated text).  Deterministic."""
    rng = random.Random(seed * 1_000_003 + index)
    name, text = srcs[index % len(srcs)] if index < len(srcs) * 4 else rng.choice(srcs)
    applied = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        kind = rng.choice(_NAMES)
        text = MUTATIONS[kind](rng, text)
        applied.append(kind)
    return name, applied, text


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the main thread if the block runs too long (Unix only)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"no answer within {seconds:g} s (an infinite loop?)")

    try:
        old = signal.signal(signal.SIGALRM, on_alarm)
    except ValueError:  # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _shorten(text: str, limit: int = 1500) -> str:
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f"\n... [{len(text) - limit} chars cut] ...\n" + text[-limit // 2 :]


def check_text(text: str, dialect: str) -> str | None:
    """None if the front end behaves on ``text``, else what went wrong."""
    try:
        with _time_limit(CASE_TIME_LIMIT):
            try:
                tu = parse(text, "fuzz.co", dialect=dialect)
            except CroqError as err:
                formatted = err.format()
                span = err.diagnostics[0].span
                if not formatted or span is None or span.line < 1:
                    return f"diagnostic without a position: {formatted!r}"
                return None
            printed = print_unit(tu)
            try:
                again = parse(printed, "printed.co", dialect=dialect)
            except CroqError as err:
                return f"printed text does not parse: {err.format()}\n--- printed ---\n{_shorten(printed)}"
            if again != tu:
                return f"AST differs after print + re-parse\n--- printed ---\n{_shorten(printed)}"
    except Exception as exc:  # noqa: BLE001 - anything but CroqError is a bug
        return f"{type(exc).__name__}: {exc}"
    return None


def run_cases(indices: range, seed: int = SEED) -> list[str]:
    srcs = sources()
    failures = []
    for index in indices:
        name, applied, text = make_case(index, srcs, seed)
        for dialect in DIALECTS:
            problem = check_text(text, dialect)
            if problem is not None:
                failures.append(
                    f"case {index} (seed {seed}, source {name}, mutations {applied}, dialect {dialect}): {problem}\n"
                    f"--- mutated text (replay: python tests/test_fuzz.py --case {index}) ---\n{_shorten(text)}"
                )
                break
    return failures


CHUNKS = 8


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_mutated_sources_fail_only_with_diagnostics(chunk: int) -> None:
    size = -(-CASES // CHUNKS)
    failures = run_cases(range(chunk * size, min(CASES, (chunk + 1) * size)))
    assert not failures, f"{len(failures)} failing case(s); the first:\n" + failures[0]


LOWER_CASES = 240 if LONG else 120


def test_mutated_sources_translate_or_fail_with_diagnostics() -> None:
    # the lowering (both schedules) on mutated programs: a CroqError or a module, never another
    # exception; the mutations must leave enough programs that parse for this to mean something
    from croq2triton.api import translate_full

    srcs = sources()
    parsed = translated = 0
    # LOWER_CASES cases, and more (up to four times as many) until a fifth of that many parse: most of
    # what mutates a file of several functions breaks the file (a truncation, a brace), and which
    # files come first depends on the checkout (without ../shared: examples/ and tests/programs/)
    for index in range(4 * LOWER_CASES):
        if index >= LOWER_CASES and parsed >= LOWER_CASES // 5:
            break
        name, applied, text = make_case(index, srcs, SEED + 1)
        for schedule in ("source", "auto"):
            try:
                with _time_limit(CASE_TIME_LIMIT):
                    out = translate_full(text, filename=name, schedule=schedule)
            except CroqError:
                continue
            except Exception as e:  # noqa: BLE001 - the point of the test
                pytest.fail(
                    f"case {index} (seed {SEED + 1}, source {name}, mutations {applied}, {schedule}): "
                    f"{type(e).__name__}: {e}\n--- mutated text ---\n{_shorten(text)}"
                )
            parsed += schedule == "source"
            translated += schedule == "source" and bool(out.lowered)
    # at least a fifth of LOWER_CASES must parse and a third of those must translate a function (a bare
    # clone at 8354afe: 17 of the first 120 cases parse, 13 translate; the cases after them make 24)
    assert parsed >= LOWER_CASES // 5 and translated >= parsed // 3, (parsed, translated)


def test_mutations_are_deterministic() -> None:
    srcs = sources()
    assert [make_case(i, srcs) for i in range(20)] == [make_case(i, srcs) for i in range(20)]
    assert len({make_case(i, srcs)[2] for i in range(40)}) > 30


def test_tokenizer_round_trips() -> None:
    for _, text in sources()[:50]:
        assert "".join(_tokens(text)) == text


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=CASES)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--case", type=int, help="print and check one case")
    args = ap.parse_args()
    if args.case is not None:
        name, applied, text = make_case(args.case, sources(), args.seed)
        print(f"source {name}, mutations {applied}\n{text}")
        for d in DIALECTS:
            print(f"[{d}]", check_text(text, d) or "ok")
        sys.exit(0)
    t0 = time.perf_counter()
    found = run_cases(range(args.start, args.start + args.cases), args.seed)
    for f in found:
        print(f, "\n" + "=" * 80)
    print(f"{args.cases} cases, {len(found)} failures, {time.perf_counter() - t0:.1f} s")
    sys.exit(1 if found else 0)
