"""The static checks upstream's compiler makes that croq2triton made too few of (issue 28): kernel
attributes, ``trigger ... after``, ``_`` as an index, ``swap`` across scopes, static assertions,
``.sqz`` with nothing to drop, stream bindings, TMA boxes the host cannot compute, unbounded
parameters in host memory and empty index ranges.  Each is an error at the construct, tried on
programs of our own (with valid neighbours that must still pass); and every negative test of the
shared corpus (the files upstream rejects, with the error their ``CHECK`` lines name) is rejected
with an error that says the same."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from conftest import CORPUS, corpus_rows, needs_corpus
from kernel_util import assert_close, load_co, poisoned, randn

from croq2triton.cli import main
from croq2triton.errors import CroqError, Diagnostic
from croq2triton.frontend.driver import parse
from croq2triton.sema.checks import check_unit


def errors(src: str) -> list[Diagnostic]:
    with pytest.raises(CroqError) as info:
        check_unit(parse(src, "t.co"))
    return [d for d in info.value.diagnostics if d.severity == "error"]


def error_at(src: str, where: str, message: str) -> Diagnostic:
    """``src`` fails the static checks with ``message`` at ``where`` (``line:col``)."""
    found = [d for d in errors(src) if message in d.message]
    assert found, [d.message for d in errors(src)]
    d = found[0]
    assert d.span is not None and f"{d.span.line}:{d.span.col}" == where, (d.span, d.message)
    return d


def passes(src: str) -> None:
    check_unit(parse(src, "t.co"))


# ---- [[launch_bounds]] and [[maxnreg]] (LANGUAGE.md 7.3) ------------------------------------------

ATTR = """__co__ void f(global f32 [N] a, global f32 [N] out, int n) {{
  {attr}
  parallel p by cdiv(N, 128) : block {{
    parallel t by 128 : thread {{ out.at(p # t) = a.at(p # t) * 2.0f; }}
  }}
}}
"""


@pytest.mark.parametrize(
    ("attr", "where", "message"),
    [
        (
            "[[launch_bounds(64, 1)]]",
            "2:19",
            "'[[launch_bounds]]' allows at most 64 threads a block, but this kernel's",
        ),
        ("[[launch_bounds(n)]]", "2:19", "the max_threads of '[[launch_bounds]]' must be a compile-time integer"),
        ("[[launch_bounds(-1)]]", "2:19", "the max_threads of '[[launch_bounds]]' must be a non-negative integer"),
        (
            "[[launch_bounds(256, 0)]]",
            "2:24",
            "the min_blocks of '[[launch_bounds]]' must be a positive integer, not 0",
        ),
        ("[[launch_bounds(1.5)]]", "2:19", "the max_threads of '[[launch_bounds]]' must be an integer, not '1.5'"),
        ("[[launch_bounds(256, 1, 1, 1)]]", "2:3", "'[[launch_bounds]]' takes 1 to 3 arguments"),
        ("[[maxnreg(0)]]", "2:13", "the register count of '[[maxnreg]]' must be a positive integer, not 0"),
        ("[[maxnreg(64.0)]]", "2:13", "the register count of '[[maxnreg]]' must be an integer"),
        ("[[maxnreg(n)]]", "2:13", "must be a compile-time integer constant: 'n' is not"),
    ],
)
def test_kernel_attributes(attr: str, where: str, message: str) -> None:
    error_at(ATTR.format(attr=attr), where, message)


def test_kernel_attributes_belong_to_a_block_level_parallel() -> None:
    src = """__co__ void f(global f32 [N] out) {
  parallel p by cdiv(N, 64) : block {
    [[maxnreg(40)]]
    parallel t by 64 : thread { out.at(p # t) = 1.0f; }
  }
  [[launch_bounds(32)]]
  parallel t by 32 { out.at(t) = 2.0f; }
}
"""
    d = error_at(src, "3:5", "'[[maxnreg]]' is an attribute of a kernel: it goes before a block-level 'parallel'")
    assert "not a ': thread' one" in d.message
    error_at(src, "6:3", "'[[launch_bounds]]' is an attribute of a kernel")  # one level: threads of one block


@pytest.mark.parametrize(
    "attr", ["[[launch_bounds(128)]]", "[[launch_bounds(256, 2)]]", "[[launch_bounds(0, 1, 2)]]", "[[maxnreg(96)]]",
             "[[launch_bounds(_, 2)]] [[maxnreg(128)]]"],
)  # fmt: skip
def test_valid_kernel_attributes_change_nothing(attr: str, tmp_path: Path) -> None:
    path = tmp_path / "attr.co"
    path.write_text(ATTR.format(attr=attr))
    m = load_co(path)
    a, out = randn(300, seed=7), poisoned(300)
    m.f(a, out, 1)
    assert_close(out, a.double() * 2)


# ---- trigger ... after (LANGUAGE.md 7.10) ----------------------------------------------------------

TRIGGER = """__co__ void f(global f16 [64, 64] input, global f16 [64, 64] out) {{
  parallel b by 1 : block {{
    shared f16 [64, 64] tile;
    shared event full, done;
    local event mine;
    {body}
  }}
}}
"""


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        (
            "load = dma.copy.async input => tile;\n    trigger full after load;",
            "7:24",
            "'load' is the future of a 'dma.copy.async' (a DMA copy has no completion event)",
        ),
        (
            "load = tma.copy input => tile;\n    trigger full after load;",
            "7:24",
            "'load' is the future of a 'tma.copy', which is synchronous",
        ),
        (
            "load = tma.copy.async input => tile;\n    wait load;\n    trigger full after load;",
            "8:24",
            "the future 'load' was waited already",
        ),
        (
            "st = tma.copy.async tile => out;\n    trigger full after st;",
            "7:24",
            "from shared memory to global memory (a TMA store has no completion event)",
        ),
        (
            "st = tma.copy.async tile => local;\n    trigger full after st;",
            "7:24",
            "'st' is the future of a 'tma.copy.async' into local memory (a TMA load writes shared memory)",
        ),
        (
            "st = tma.copy.async tile => shared;\n    trigger full after st;",
            "7:24",
            "'st' is the future of a 'tma.copy.async' from shared memory (only a load from global memory completes",
        ),
        ("trigger full after tile;", "6:24", "'trigger ... after' takes futures; 'tile' is spanned data"),
        (
            "load = tma.copy.async input => tile;\n    trigger full, done after load;",
            "7:5",
            "binds the futures' completion to one event, here 2 are given",
        ),
        (
            "load = tma.copy.async input => tile;\n    trigger mine after load;",
            "7:13",
            "binds a TMA completion to a shared event; 'mine' is 'local'",
        ),
    ],
)
def test_trigger_after(body: str, where: str, message: str) -> None:
    error_at(TRIGGER.format(body=body), where, message)


def test_an_incremented_order_is_not_shared_by_joined_futures() -> None:
    src = """__co__ void f(global f16 [64, 64] lhs, global f16 [64, 64] rhs) {
  parallel b by 1 : block {
    shared f16 [64, 64] ls, rs;
    shared event full[2];
    mutable int order = 0;
    fl = tma.load.async lhs => ls;
    fr = tma.load.async rhs => rs;
    trigger full.at(order++) after fl, fr;
    trigger full.at(order++) after fl;
  }
}
"""
    errs = [d for d in errors(src) if "advances the order" in d.message]
    assert len(errs) == 1, errs  # one future: the order advances once
    assert errs[0].message == "'full.at(order++)' advances the order once for each of the 2 futures it joins"
    assert errs[0].span is not None and (errs[0].span.line, errs[0].span.col) == (8, 21)


def test_an_mma_future_cannot_complete_an_event() -> None:
    src = """__co__ void f(global f16 [64, 64] a, global f16 [64, 64] b, global f32 [64, 64] out) {
  parallel p by 1 : block {
    shared f16 [64, 64] sa, sb;
    shared event done;
    parallel g by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      dma.copy a => sa;
      dma.copy b => sb;
      m = mma.row.row.async acc, sa, sb;
      trigger done after m;
      mma.store acc, out;
    }
  }
}
"""
    error_at(src, "10:26", "'m' is an MMA future (an MMA has no completion event)")


def test_a_tma_pipeline_binds_its_loads() -> None:
    passes(
        TRIGGER.format(
            body="foreach k in [4] {\n      load = tma.copy.async input => tile;\n      trigger full.at(k) after load;\n"
            "      wait full.at(k);\n    }"
        )
    )
    passes(TRIGGER.format(body="load = dma.copy.async input => tile;\n    wait load;\n    trigger full;"))
    passes(TRIGGER.format(body="load = tma.copy.async input => shared;\n    trigger full after load;"))


# ---- '_' as an index --------------------------------------------------------------------------------

BLANK = """__co__ void f(s32 [16] i, s32 [16] o) {{
  parallel p by 4 {{
    {body}
  }}
}}
"""


@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        ("with {_} in [4] { foreach _ { dma.copy i.chunkat(_) => local; } }", "3:10", "'_' cannot be a 'with' index"),
        ("with _ = {t0} in [4] { foreach t0 { } }", "3:10", "'_' cannot be a 'with' index"),
        ("with {t0} in [4] { foreach _ { } }", "3:32", "'foreach' cannot iterate over '_'"),
        ("foreach {x, _} in [2, 2] { }", "3:13", "'_' cannot be a 'foreach' index"),
    ],
)
def test_blank_is_no_index(body: str, where: str, message: str) -> None:
    d = error_at(BLANK.format(body=body), where, message)
    assert d.hint is not None and "'_' only means 'no tiling' inside chunkat" in d.hint


def test_blank_in_chunkat_is_fine() -> None:
    passes(BLANK.format(body="with {t} in [4] { foreach t { l = dma.copy i.chunkat(t) => local; } }"))


# ---- swap and rotate across scopes ----------------------------------------------------------------

SWAP = """__co__ void f(u8 [16] i) {{
  parallel p by 1 {{
    {body}
  }}
}}
"""


def test_swap_across_scopes_is_an_error() -> None:
    body = "f = dma.any;\n    with index in [3] {\n      f = dma.copy i => local;\n      f1 = dma.copy i => local;\n"
    body += "      swap(f, f1);\n    }"
    d = error_at(SWAP.format(body=body), "7:7", "'swap' exchanges values declared in one scope")
    assert "'f' is declared in a 'parallel' (line 3), 'f1' in a 'with' (line 6)" in d.message
    assert [n.message for n in d.notes] == ["'f' is declared here", "'f1' is declared here"]


def test_swap_of_different_kinds_is_an_error() -> None:
    body = "shared u8 [16] s;\n    f = dma.copy i => local;\n    rotate(f, s);"
    error_at(SWAP.format(body=body), "5:5", "'rotate' exchanges values of one kind: 'f' is a future, 's' spanned data")


def test_swap_in_one_scope_is_fine() -> None:
    passes(SWAP.format(body="f = dma.any;\n    f1 = dma.copy i => local;\n    foreach k in [3] {\n"
                            "      f = dma.copy i => local;\n      swap(f, f1);\n    }"))  # fmt: skip
    passes(SWAP.format(body="foreach k in [3] {\n      f = dma.copy i => local;\n      f1 = dma.copy i => local;\n"
                            "      g = dma.copy i => local;\n      rotate(f, f1, g);\n    }"))  # fmt: skip


# ---- static assertions --------------------------------------------------------------------------

ASSERT = """__co__ void f(f32 [128, 512] a, int n) {{
  parallel p by 1, q by 4 {{
    local f32 [a.span(0) / #p, a.span(1) / #q] l {{0.0f}};
    {check}
  }}
}}
"""


@pytest.mark.parametrize(
    ("check", "text"),
    [
        ('assert(a.span(0) > a.span(1), "rows > cols");', "'a.span(0) > a.span(1)' is false when compiling (rows > cols)"),
        ('assert(l.span(0) != l.span(1), "128/1 == 512/4");', "'l.span(0) != l.span(1)' is false"),
        ('assert(|l.span| == 1024, "size");', "'|l.span| == 1024' is false"),
        ('assert(#q * 2 == 4 && a.span(1) % 3 == 0, "tiles");', "is false when compiling (tiles)"),
    ],
)  # fmt: skip
def test_a_static_assertion_that_fails(check: str, text: str) -> None:
    error_at(ASSERT.format(check=check), "4:5", text)


@pytest.mark.parametrize(
    "check",
    ['assert(a.span(0) < a.span(1), "ok");', 'assert(|l.span| == 16384, "ok");', 'assert(n > 4, "run time");'],
)
def test_static_assertions_that_hold_or_wait_for_the_run(check: str) -> None:
    passes(ASSERT.format(check=check))


# ---- .sqz ---------------------------------------------------------------------------------------

SQZ = """__co__ void f(f32 [10, 8] a) {{
  parallel p by 5 : block {{
    dma.copy {view} => local;
  }}
}}
"""


def test_sqz_needs_extents_before_it() -> None:
    d = error_at(SQZ.format(view="a.chunkat(p, _).sqz()"), "3:29", "'.sqz()' drops the extents of 1")
    assert "'a.chunkat(p, _)' has none" in d.message
    error_at(SQZ.format(view="a.sqz()"), "3:15", "'a' has none")
    passes(SQZ.format(view="a.subspan(1, 8).at(p, 0).sqz()"))
    passes(SQZ.format(view="a.span_as([2, 1, 40]).sqz()"))


# ---- stream bindings -----------------------------------------------------------------------------


def test_stream_bindings() -> None:
    src = """__co__ void f(stream s0, stream s1, int x, f32 [128] a) {
  parallel<x> p by 128 : block { a.at(p) = 1.0f; }
  parallel<s0> p by 128 : block {
    parallel<s1> q by 1 : thread { }
  }
  parallel<s9> p by 128 : block { a.at(p) = 2.0f; }
  parallel<s1> p by 128 : block { a.at(p) = 3.0f; }
}
"""
    error_at(src, "2:3", "'parallel<x>' binds the launch to a stream parameter, and 'x' is an 'int' parameter")
    error_at(src, "4:5", "only a block-level 'parallel' (a launch) has a stream; this ': thread' level")
    error_at(src, "6:3", "'s9' is not a parameter")
    assert len(errors(src)) == 3  # the last one is right


# ---- TMA boxes computable on the host ------------------------------------------------------------

TMA = """__co__ void f(f16 [M, K] input, f16 [M, 64] out, int rows) {{
  parallel b by cdiv(M, 128) : block, g by 1 : group-4 {{
    shared f16 [128, 64] s;
    {body}
    dma.copy s => out.subspan(128, 64).at(b, 0);
  }}
}}
"""


def test_a_tma_box_of_a_kernel_value_is_an_error() -> None:
    body = "TM = (128 < M - b * 128) ? 128 : M - b * 128;\n    tma.copy input.view(TM, 64).from(b * 128, 0) => s;"
    d = error_at(TMA.format(body=body), "5:25", "the box of a TMA copy is made on the host before the launch")
    assert "its extent 'TM' depends on 'TM', a value the kernel computes" in d.message
    body = "foreach k in [2] { tma.copy input.subspan(64 * (k + 1), 64).at(b, 0) => s; }"
    error_at(TMA.format(body=body), "4:47", "depends on 'k', a loop index of the kernel")


@pytest.mark.parametrize(
    "body",
    [
        "tma.copy input.subspan(128, 64).at(b, 0) => s;",
        "tma.copy input.view(rows, 64).from(b * 128, 0) => s;",  # a parameter: known on the host
        "int T = 128;\n    tma.copy input.view(T, 64).from(b * T, 0) => s;",  # a constant
        "dma.copy input.view(M - b * 128, 64).from(b * 128, 0) => s;",  # a DMA copy's extents may be the kernel's
    ],
)
def test_host_computable_tma_boxes(body: str) -> None:
    passes(TMA.format(body=body))


# ---- parameters and index ranges ------------------------------------------------------------------


def test_an_unbounded_dimension_is_for_global_parameters() -> None:
    error_at("__co__ void f(f32 [??, 16] a) {}\n", "1:20", "the parameter 'a' has an unbounded dimension '??'")
    passes("__co__ void f(global f32 [??, 16] a) {}\n")


def test_empty_index_ranges() -> None:
    src = """__co__ void f(f32 [2, 2] input) {
  tile : [4, 4];
  with t in [input.span / tile] { }
  parallel p by 0 { }
  parallel {x, y} by [3, 2 - 2] { }
  with u in [input.span / 2] { }
}
"""
    error_at(src, "3:13", "'[input.span / tile]' is the shape [0, 0]: an extent below 1 gives no index")
    error_at(src, "4:17", "a parallel bound is at least 1; '0' is 0")
    error_at(src, "5:26", "'2 - 2' is 0")
    assert len(errors(src)) == 3


# ---- mma.fill of an operand fragment ------------------------------------------------------------

FILL = """__co__ void f(global f16 [64, 32] a, global f16 [32, 64] b, global f32 [64, 64] out) {{
  parallel p by 1 : block {{
    mc = mma.fill 0.0f;
    parallel g by 4 : group {{
      ma = mma.load a.subspan(16, 32).at(g, 0);
      mb = mma.load b;
      {fill}
      mma.row.col mc, ma, mb;
      mma.store mc, out.subspan(16, 64).at(g, 0);
    }}
  }}
}}
"""


def test_mma_fill_is_for_accumulators() -> None:
    d = error_at(FILL.format(fill="mma.fill ma, 0.0f;"), "7:7", "'mma.fill' re-initialises an accumulator; 'ma' is")
    assert "'mma.load' filled (line 5)" in d.message
    passes(FILL.format(fill="mma.fill mc, 0.0f;"))
    passes(FILL.format(fill="ma = mma.fill 0.0f;\n      mma.fill ma, 1.0f;"))  # a new accumulator of that name


# ---- every negative test of the shared corpus -------------------------------------------------------

# An upstream message (after 'error:') and what croq2triton's says in its place; a message not here
# must appear in ours as written (case, quotes and the final full stop aside).  Every CHECK line of
# a negative test must be matched by some rule, so a new corpus file with a new message fails here
# until the rule is written.
SAME_MEANING: list[tuple[str, str]] = [
    (r"^syntax error\b.*", r"syntax error|unknown member"),
    (r"^the mdspan size '(-?\d+)' is invalid$", r"the extent \1 of parameter '\w+' is invalid"),
    (r"^'(\w+)' with a type of 'ituple<\d+>' can not be declared as 'mutable'$", r"'\1' is an ituple and cannot"),
    (r"^parallel variables are (?:less|more) than their bounds \((\d+) vs\. (\d+)\)$", r"\1 parallel variable\(s\) but \2 bound"),
    (r"^dimension of array can only be const integer value", r"the dimensions of the buffer array '\w+' must be constant"),
    (r"^\[\[launch_bounds\]\] maxthreadsperblock \((\d+)\) is less than", r"allows at most \1 threads a block"),
    (r"^\[\[(launch_bounds|maxnreg)\]\] is only valid on block-level", r"'\[\[\1\]\]' is an attribute of a kernel"),
    (r"^\[\[(launch_bounds|maxnreg)\]\] argument must be", r"of '\[\[\1\]\]' must be"),
    (r"^trigger-after requires native completion-event binding", r"binds the completion of asynchronous tma loads"),
    (r"^trigger-after cannot bind future '.*?(\w+)' after it was explicitly waited", r"the future '\1' was waited already"),
    (r"^an incremented event order cannot be shared", r"advances the order once for each"),
    (r"^_ is not allowed as (?:a with|an iteration) variable", r"'_' cannot be|cannot iterate over '_'"),
    (r"^swapping values defined in different scopes", r"exchanges values declared in one scope"),
    (r"^choreo assertion abort: (.*)$", r"this assertion fails whenever the function runs"),
    (r"^\.sqz requires a preceding", r"'\.sqz\(\)' drops the extents of 1"),
    (r"^the total thread dimension must be a multiple of (\d+)", r"are a multiple of \1"),
    (r"^'(\w+)' is not a stream type", r"'parallel<\1>' binds the launch to a stream parameter"),
    (r"^stream binding is only allowed on block-level", r"only a block-level 'parallel' \(a launch\) has a stream"),
    (r"^tma box shape must be host-computable", r"the box of a tma copy is made on the host"),
    (r"^the parameter with an unbounded dimension must be global", r"has an unbounded dimension '\?\?'"),
    (r"^zero value is deduced for the mdspan", r"an extent below 1 gives no index"),
    (r"^bound (-?\d+) in parallelby is invalid", r"a parallel bound is at least 1"),
    (r"^only the acc of mma operation can be used in fill op", r"'mma\.fill' re-initialises an accumulator"),
]  # fmt: skip

CHECK_ERROR = re.compile(r"^//\s*([A-Z][A-Z0-9-]*):\s*(?:(?:(\S+?):)?(\d+)\.(\d+):\s*)?error:\s*(.*)$")
OURS = re.compile(r"^(\S+?):(\d+):(\d+): error: (.*)$")


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("`", "'").replace('"', "'").split()).rstrip(".!")


def _matches(want: str, got: list[str]) -> bool:
    w = _norm(want)
    for pattern, ours in SAME_MEANING:
        m = re.search(pattern, w)
        if m:  # the groups of upstream's words, taken literally into ours
            expected = re.sub(r"\\(\d)", lambda g, m=m: re.escape(m.group(int(g.group(1)))), ours).lower()
            return any(re.search(expected, _norm(g)) for g in got)
    return any(w in _norm(g) for g in got)


def negative_tests() -> list[tuple[str, list[str], str]]:
    """(path, -D values, check prefix) of every run of a file upstream rejects whose CHECK lines name
    the error it expects (a file that is run under several -D values: one entry each)."""
    out: list[tuple[str, list[str], str]] = []
    for r in corpus_rows():
        if r["upstream_parse"] not in ("reject", "crash") and r["kind"] != "semantic-error-expected":
            continue
        text = (CORPUS / r["path"]).read_text(errors="replace")
        for run in re.findall(r"^//\s*RUN:(.*)$", text, flags=re.M):
            if "choreo" not in run or re.search(r"\s-E\b", run):
                continue  # preprocessor-only runs check its output, not an error
            prefix = re.search(r"--check-prefix(?:es)?=(\S+)", run)
            name = prefix.group(1) if prefix else "CHECK"
            if any(m and m.group(1) == name for m in map(CHECK_ERROR.match, text.splitlines())):
                out.append((r["path"], re.findall(r"-D\s*(\w+(?:=\S+)?)", run), name))
    return out


NEGATIVE = negative_tests()


@needs_corpus
def test_the_corpus_has_negative_tests() -> None:
    assert len(NEGATIVE) >= 30, len(NEGATIVE)


@needs_corpus
@pytest.mark.parametrize(("path", "defines", "prefix"), NEGATIVE, ids=[f"{p}:{' '.join(d)}" for p, d, _ in NEGATIVE])
def test_every_upstream_negative_test_is_rejected_for_its_reason(path: str, defines: list[str], prefix: str) -> None:
    text = (CORPUS / path).read_text(errors="replace")
    want = [m for m in map(CHECK_ERROR.match, text.splitlines()) if m and m.group(1) == prefix]
    argv = ["check", "--dialect", "upstream", *[x for d in defines for x in ("-D", d)], str(CORPUS / path)]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    ours = [m for m in map(OURS.match, err.getvalue().splitlines()) if m]
    assert rc == 1 and ours, f"{path} passes, upstream rejects it: {want[0].group(5)}"
    for w in want:
        message, file, line = w.group(5).strip(), w.group(2), w.group(3)
        if line is not None:  # 'ab.c:35.10: error:' names where, not what
            assert any(o.group(2) == line and o.group(1).endswith(file or "") for o in ours), (
                w.group(0),
                ours[0].group(0),
            )
        if message and not re.match(r"^Totally \d+ errors", message):
            assert _matches(message, [o.group(4) for o in ours]), f"{path}: upstream says {message!r}; ours:\n" + (
                "\n".join(o.group(4) for o in ours)
            )


@pytest.mark.skipif(bool(corpus_rows()), reason="runs where the shared corpus is absent")
def test_without_the_corpus_the_negative_tests_skip() -> None:
    assert not NEGATIVE and not (CORPUS / "MANIFEST.tsv").exists()


def test_the_rules_match_as_written() -> None:
    # the table itself, on upstream's words: a rule that could not match would pass anything
    assert _matches("swapping values defined in different scopes is forbidden (::f vs. ::g",
                    ["'swap' exchanges values declared in one scope: 'f' is declared in a 'parallel'"])  # fmt: skip
    assert not _matches("choreo assertion abort: x", ["the non-void function 'f' has no 'return'"])
    assert _matches("an ituple must be initialized.", ["An ituple must be initialized"])
    assert not _matches("an ituple must be initialized.", ["syntax error"])
