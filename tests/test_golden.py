"""The generated code of every corpus file and example matches its golden (tests/golden).

A module matches when it is the same Python modulo the names of temporaries and formatting, with
the same ``.co:LINE`` comments on the same statements; diagnostics match exactly. To accept a
deliberate change: ``CROQ2TRITON_ACCEPT=1 .venv/bin/python -m pytest -q tests/test_golden.py``.
"""

from __future__ import annotations

import ast
import textwrap

import golden_tool as gt
import pytest
import readable
from conftest import needs_corpus
from names_check import undefined_names


def _params(group: str) -> list[object]:
    marks = [needs_corpus] if group == "corpus" else []
    return [pytest.param(case, id=case.id, marks=marks) for case in gt.cases(group)]


@pytest.mark.parametrize("case", _params("examples") + _params("corpus"))
def test_golden(case: gt.Case) -> None:
    """The module matches its golden, reads as the issue asks (tests/readable.py) and uses no name
    it does not define (tests/names_check.py)."""
    message, out = gt.check(case, accept=gt.accepting())
    if message is not None:
        pytest.fail(message, pytrace=False)
    if out.raw is not None:
        found = readable.problems(out.raw, case.golden_py.name)
        assert not found, "\n".join(found[:20])
        assert undefined_names(out.raw) == []


def _no_stale(group: str) -> None:
    if gt.accepting():
        gt.remove_stale(group)
    stale = [gt.shown(p) for p in gt.stale_goldens(group)]
    assert not stale, f"goldens of inputs that no longer exist (accept with {gt.ACCEPT_CMD}): {stale}"


def test_no_stale_example_goldens() -> None:
    _no_stale("examples")


@needs_corpus
def test_no_stale_corpus_goldens() -> None:
    _no_stale("corpus")


def test_every_example_has_a_case() -> None:
    assert {c.key for c in gt.cases("examples")} >= {"examples/vadd.co", "examples/gemm_v2.co"}


# ---------------------------------------------------------------------------------------------
# the comparison itself

BASE = textwrap.dedent('''\
    """Triton translation of t.co."""
    import triton
    import triton.language as tl

    SCALE = 2.0


    @triton.jit
    def k0(x_ptr, n, BLOCK: tl.constexpr):
        pid_1 = tl.program_id(0)  # t.co:3
        offs_2 = pid_1 * BLOCK + tl.arange(0, BLOCK)
        mask_3 = offs_2 < n
        v_4 = tl.load(x_ptr + offs_2, mask=mask_3, other=0.0)  # t.co:4
        w_5 = [v_4 for _ in range(2)]
        tl.store(x_ptr + offs_2, v_4 * SCALE - w_5[0], mask=mask_3)  # t.co:5


    def run(x, *, _launch=None):
        x = x.contiguous()  # t.co:1
        n = x.numel()
        for i_0 in range(2):
            k0[(triton.cdiv(n, 128),)](x, n, BLOCK=128)  # t.co:2
        return x
''')


def _variant(*edits: tuple[str, str]) -> str:
    text = BASE
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


def test_identical_text_matches() -> None:
    assert gt.semantic_difference(BASE, BASE) is None


def test_renamed_temporaries_match() -> None:
    renamed = _variant(
        ("pid_1", "_pid"), ("offs_2", "offs"), ("mask_3", "m_7"), ("v_4", "tile"), ("w_5", "_w"),
        ("for _ in", "for j in"), ("x_ptr", "x"), ("def k0(x, n,", "def k0(x, size,"), ("< n\n", "< size\n"),
        ("i_0", "_it"),
    )  # fmt: skip
    assert gt.semantic_difference(BASE, renamed) is None


def test_reformatting_and_other_comments_match() -> None:
    reformatted = _variant(
        ("v_4 = tl.load(x_ptr + offs_2, mask=mask_3, other=0.0)  # t.co:4",
         "v_4 = tl.load(\n        (x_ptr + offs_2),  # t.co:4\n        mask=mask_3,\n        other=0.0,\n    )"),
        ('"""Triton translation of t.co."""', "'''Triton translation of t.co.'''"),
        ("mask_3 = offs_2 < n", "# a new explanation\n    mask_3 = (offs_2 < n)"),
    )  # fmt: skip
    assert gt.semantic_difference(BASE, reformatted) is None


CHANGES = [
        ("a different constant", [("other=0.0", "other=1.0")]),
        ("a different tile size", [("BLOCK=128", "BLOCK=64")]),
        ("swapped operands", [("v_4 * SCALE - w_5[0]", "w_5[0] - v_4 * SCALE")]),
        ("one temporary used for another", [("tl.store(x_ptr + offs_2", "tl.store(x_ptr + pid_1")]),
        ("a dropped mask", [("w_5[0], mask=mask_3)", "w_5[0])")]),
        ("a changed .co:LINE comment", [("# t.co:4", "# t.co:6")]),
        ("a dropped .co:LINE comment", [("  # t.co:5", "")]),
        ("a .co:LINE comment moved to another statement", [("  # t.co:3", ""), ("mask_3 = offs_2 < n", "mask_3 = offs_2 < n  # t.co:3")]),
        ("a renamed launcher parameter (the API)", [
            ("def run(x,", "def run(y,"), ("x = x.contiguous()", "y = y.contiguous()"), ("n = x.numel()", "n = y.numel()"),
            ("](x, n, BLOCK", "](y, n, BLOCK"), ("return x", "return y"),
        ]),
        ("a renamed keyword argument", [("BLOCK=128", "BLK=128"), ("BLOCK: tl", "BLK: tl"), ("* BLOCK + tl.arange(0, BLOCK)", "* BLK + tl.arange(0, BLK)")]),
        ("a renamed meta-parameter", [("BLOCK: tl", "BLK: tl"), ("* BLOCK + tl.arange(0, BLOCK)", "* BLK + tl.arange(0, BLK)")]),
        ("a renamed module-level name", [("SCALE = 2.0", "FACTOR = 2.0"), ("v_4 * SCALE", "v_4 * FACTOR")]),
        ("a temporary renamed to a global's name", [("pid_1", "tl")]),
        ("a different called function", [("tl.program_id(0)", "tl.num_programs(0)")]),
        ("a reordered statement", [("    mask_3 = offs_2 < n\n    v_4", "    v_4"), ("    w_5", "    mask_3 = offs_2 < n\n    w_5")]),
        ("a syntax error", [("def run(x,", "def run(x,,")]),
]  # fmt: skip


@pytest.mark.parametrize(("what", "edits"), CHANGES, ids=[what for what, _ in CHANGES])
def test_real_changes_differ(what: str, edits: list[tuple[str, str]]) -> None:
    changed = _variant(*edits)
    assert changed != BASE
    assert gt.semantic_difference(BASE, changed) is not None, what


LAUNCHER = textwrap.dedent("""\
    def run(x):
        n = x.numel()
        k = 2
        grid = lambda meta: (n // meta["B"], k)
        pick = lambda n: n + k
        return grid, pick
""")


@pytest.mark.parametrize(
    ("edits", "same"),
    [
        ([("meta", "m"), ("grid", "g"), ("    n = x", "    size = x"), ("(n //", "(size //")], True),
        ([("lambda n: n + k", "lambda q: q + k")], True),
        ([("lambda n: n + k", "lambda q: n + k")], False),  # the outer n, not the parameter
        ([("(n //", "(k //"), (", k)", ", n)")], False),  # closures swapped
    ],
    ids=["renamed", "lambda parameter renamed", "lambda reads the outer name", "closures swapped"],
)
def test_lambdas_are_scopes_of_their_own(edits: list[tuple[str, str]], same: bool) -> None:
    changed = LAUNCHER
    for old, new in edits:
        assert old in changed, old
        changed = changed.replace(old, new)
    assert (gt.semantic_difference(LAUNCHER, changed) is None) == same


def test_failure_shows_a_bounded_text_diff_and_how_to_accept() -> None:
    case = gt.Case("examples", "vadd.co", "source")
    golden = gt.Output(BASE, "")
    changed = gt.Output(_variant(("other=0.0", "other=1.0")) + "".join(f"X_{i} = {i}\n" for i in range(200)), "")
    message = gt.compare(case, golden, changed)
    assert message is not None
    assert "tests/golden/examples/vadd.source.py" in message
    assert "-    v_4 = tl.load(x_ptr + offs_2, mask=mask_3, other=0.0)  # t.co:4" in message
    assert "more diff lines" in message and message.count("\n+X_") < gt.DIFF_LINES
    assert gt.ACCEPT_CMD in message


def test_text_change_with_the_same_meaning_passes_and_diagnostics_compare_exactly() -> None:
    case = gt.Case("examples", "vadd.co", "source")
    renamed = _variant(("pid_1", "_pid"))
    assert gt.compare(case, gt.Output(BASE, "w\n"), gt.Output(renamed, "w\n")) is None
    message = gt.compare(case, gt.Output(BASE, "w\n"), gt.Output(BASE, "w \n"))
    assert message is not None and "diagnostics differ" in message


def test_a_translation_that_now_raises_differs() -> None:
    case = gt.Case("examples", "vadd.co", "auto")
    message = gt.compare(case, gt.Output(BASE, ""), gt.Output(None, "t.co:1:1: error: no\n"))
    assert message is not None and "raises CroqError" in message


def test_paths_are_written_relative_to_their_group() -> None:
    root = gt.ROOTS["examples"]
    text = f"cannot run ({root / 'vadd.co'}:3:1) and ({root.resolve() / 'x.co'}:1:1)"
    assert gt.normalise_paths(text, "examples") == "cannot run (examples/vadd.co:3:1) and (examples/x.co:1:1)"


# the comparison on real generated modules (the example goldens are always present)

EXAMPLE_GOLDENS = sorted((gt.GOLDEN / "examples").glob("*.py"))


def _respell_locals(text: str) -> str:
    """``text`` with every name the canonical form renames spelled differently (``x`` -> ``x_re``)."""
    edits: dict[int, list[tuple[int, int, str]]] = {}  # line -> (start, end, new) in UTF-8 bytes
    for fn in ast.parse(text).body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        names = set(gt.local_names(fn, rename_params=gt.is_jit(fn)))
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and node.id in names:
                edits.setdefault(node.lineno, []).append((node.col_offset, node.end_col_offset or 0, node.id + "_re"))
            elif isinstance(node, ast.arg) and node.arg in names:
                end = node.col_offset + len(node.arg)
                edits.setdefault(node.lineno, []).append((node.col_offset, end, node.arg + "_re"))
    lines = [line.encode() for line in text.splitlines(keepends=True)]
    for lineno, spans in edits.items():
        line = lines[lineno - 1]
        for start, end, new in sorted(spans, reverse=True):
            line = line[:start] + new.encode() + line[end:]
        lines[lineno - 1] = line
    return b"".join(lines).decode()


def test_there_are_example_goldens() -> None:
    assert len(EXAMPLE_GOLDENS) >= 10


@pytest.mark.parametrize("golden", EXAMPLE_GOLDENS, ids=[p.name for p in EXAMPLE_GOLDENS])
def test_real_module_with_every_local_respelled_matches(golden: object) -> None:
    text = golden.read_text()  # type: ignore[attr-defined]
    respelled = _respell_locals(text)
    assert respelled.count("_re") > 20
    assert gt.semantic_difference(text, respelled) is None


@pytest.mark.parametrize(
    ("old", "new"),
    [("tl.float32", "tl.float16"), ("tl.dot(lhs_s, tl.trans(rhs_s), mc)", "tl.dot(rhs_s, tl.trans(lhs_s), mc)"),
     ("  # gemm_v2.co:23", ""), ("num_warps=4", "num_warps=8")],
)  # fmt: skip
def test_real_module_with_a_real_change_differs(old: str, new: str) -> None:
    text = (gt.GOLDEN / "examples/gemm_v2.source.py").read_text()
    assert old in text
    changed = _respell_locals(text.replace(old, new, 1))
    assert gt.semantic_difference(text, changed) is not None
