"""Invalid programs ``check`` accepted (the SILENT findings of the second diagnostics probe,
2026-12): each breaks a rule of LANGUAGE.md and is now the user's error at its construct, with a
caret and a hint (a warning where the language does not call it an error), and a valid program
next to each rule still translates, so the checks do not reject more than the rule says.

* 4.3: an immutable ``int`` / ``bool`` declared without a value (sema/initialised.py);
* 6: ``return x;`` of another element type, rank or extent than the declared type (lift/returntypes.py;
  an extent only the launch knows is compared by the launcher);
* 5, 7.3: ``: LEVEL(IDENT)`` on a level other than ``device`` (sema/levelargs.py);
* 7.6: ``.sqz()`` with no ``.subspan`` / ``.view`` / ``.span_as`` before it, on any base (sema/squeeze.py);
  ``chunk(f)`` / ``modspan(e)`` / ``subspan(e)`` / ``view(e)`` of a factor or extent below 1, a
  ``chunk(f).at(i)`` index at or past ``f`` (sema/viewfactors.py);
* 7.8: ``tma.load`` out of shared memory or into global memory (sema/tmaloads.py), ``after g`` of what
  is no future (sema/afters.py), a TMA store from a part of a buffer that is not dense
  (lift/densestores.py), ``f.data`` read before ``wait f`` (a warning: sema/earlyreads.py);
* 7.8 / 7.9: an asynchronous MMA nothing waits for (sema/futures.py), an MMA accumulating into what
  is no fragment (sema/accumulators.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_util import assert_close, load_co, randn

from croq2triton.cli import main
from croq2triton.runtime.launch import CroqLaunchError


def check(capsys: pytest.CaptureFixture[str], tmp_path: Path, src: str) -> tuple[int, str]:
    path = tmp_path / "t.co"
    path.write_text(src)
    rc = main(["check", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in out + err, out + err
    return rc, out + err


ELEMENTWISE = """__co__ void ew(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    STMT
    y.at(p # t) = x.at(p # t);
  }
}
"""

RETURNING = """__co__ RET halved(global f32 [N] x, global f32 [M] w) {
  DECL y;
  parallel p by cdiv(N, 32) : block, t by 32 : thread
    y.at(p # t) = x.at(p # t) * 0.5f;
  return y;
}
"""

TILE = """__co__ void tile(global f32 [M, 64] x, global f32 [M, 64] y) {
  parallel bm by cdiv(M, 16) : block {
    shared f32 [16, 64] s;
    shared f32 [1, 64] r[2];
    dma.copy x.subspan(16, 64).at(bm, 0) => s;
    STMT
    dma.copy s => y.subspan(16, 64).at(bm, 0);
  }
}
"""

VIEWS = """__co__ void parts(global f32 [64] a, global f32 [16] out, global f32 [4, 16] b) {
  parallel p by 1 : block {
    s = dma.copy VIEW => shared;
    dma.copy s => out;
  }
}
"""

MM = """__co__ void mm(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared f16 [64, 32] sa, sb;
    shared f32 [64, 64] sc;
    parallel g by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach k in [cdiv(K, 32)] {
        dma.copy a.subspan(64, 32).at(bm, k) => sa;
        dma.copy b.subspan(64, 32).at(bn, k) => sb;
        MMA
      }
      STORE
    }
  }
}
"""

STAGES = """__co__ void stages(global f16 [M, 64] x, global f16 [M, 64] y) {
  parallel bm by cdiv(M, 32) : block {
    shared f16 [32, 64] s;
    STMT
  }
}
"""


def mm(mma: str = "mma.row.row acc, sa, sb;", store: str = "mma.store acc, c.subspan(64, 64).at(bm, bn);") -> str:
    return MM.replace("MMA", mma).replace("STORE", store)


# (id, program, where (line:col), message, hint)
ERRORS = [
    (
        "int without a value",
        ELEMENTWISE.replace("STMT", "int n;"),
        "3:9",
        "the immutable int 'n' is declared without a value",
        "'mutable int n;'",
    ),
    (
        "bool without a value, after one with",
        ELEMENTWISE.replace("STMT", "bool a = true, b;"),
        "3:20",
        "the immutable bool 'b' is declared without a value",
        "'bool b = false;'",
    ),
    (
        "return of another element type",
        RETURNING.replace("RET", "f16 [N]").replace("DECL", "f32 [N]"),
        "5:10",
        "'halved' is declared 'f16 [N]' but returns 'y' [N] of f32 elements",
        "declare the function 'f32 [..]'",
    ),
    (
        "return of another extent",
        RETURNING.replace("RET", "f32 [16]").replace("DECL", "f32 [8]"),
        "5:10",
        "'halved' is declared 'f32 [16]' but returns 'y' [8] of f32 elements: its extent along dimension 0 is 8, not 16",
        "the declared shape",
    ),
    (
        "return of another rank",
        RETURNING.replace("RET", "f32 [N, 1]").replace("DECL", "f32 [N]"),
        "5:10",
        "'halved' is declared 'f32 [N, 1]' (rank 2) but returns 'y' [N] of f32 elements (rank 1)",
        "'.span_as([..])'",
    ),
    (
        "a block level naming a target",
        ELEMENTWISE.replace(": block,", ": block(gpu),").replace("STMT", ""),
        "2:36",
        "': block(gpu)': only the ': device' level names a target",
        "'parallel by 1 : device(gpu) { .. }'",
    ),
    (
        "a thread level naming a target",
        ELEMENTWISE.replace(": thread", ": thread(cpu)").replace("STMT", ""),
        "2:54",
        "': thread(cpu)': only the ': device' level names a target",
        "write ': thread'",
    ),
    (
        ".sqz() of a buffer bound to a name",
        TILE.replace("STMT", "v = s.sqz();"),
        "6:10",
        "'s' has none ('s' is a buffer of the shape it was declared with)",
        "write the extents first",
    ),
    (
        ".sqz() of a buffer as a copy's destination",
        TILE.replace("STMT", "dma.copy x.subspan(1, 64).at(bm, 0) => r[0].sqz();"),
        "6:48",
        "'r[0]' has none",
        "declare the buffer without its extents of 1",
    ),
    (
        ".sqz() of a buffer as a copy's source",
        TILE.replace("STMT", "dma.copy s.sqz() => y.subspan(16, 64).at(bm, 0);"),
        "6:15",
        "'s' has none",
        "write the extents first",
    ),
    (
        ".sqz() of a named view with no shaping",
        TILE.replace("STMT", "v = s.chunkat(_, bm);\n    dma.copy v.sqz() => y.subspan(16, 64).at(bm, 0);"),
        "7:15",
        "'v' has none",
        "write the extents first",
    ),
    (
        "chunk index at its factor",
        VIEWS.replace("VIEW", "a.chunk(4).at(4)"),
        "3:32",
        "'.chunk(4).at(4)': the index 4 along dimension 0 is not below the factor 4: there are 4 parts, 0 to 3",
        "take a part from 0 to 3",
    ),
    (
        "chunk index past its factor along the second dimension",
        VIEWS.replace("global f32 [16] out", "global f32 [2, 4] out").replace("VIEW", "b.chunk(2, 4).at(1, 6)"),
        "3:38",
        "the index 6 along dimension 1 is not below the factor 4",
        "take a part from 0 to 3",
    ),
    (
        "chunk of factor 0",
        VIEWS.replace("VIEW", "a.chunk(0).at(0)"),
        "3:26",
        "'.chunk(0)': the factor 0 along dimension 0 cuts it into no parts",
        "f is at least 1",
    ),
    (
        "modspan of 0",
        VIEWS.replace("VIEW", "a.modspan(0)"),
        "3:28",
        "'.modspan(0)': the extent 0 along dimension 0",
        "e is at least 1",
    ),
    (
        "subspan of extent 0",
        VIEWS.replace("VIEW", "b.subspan(0, 16).at(0, 0)"),
        "3:28",
        "'.subspan(0, 16)': the extent 0 along dimension 0 makes a region of no elements",
        "extents are >= 1",
    ),
    (
        "view of extent 0",
        VIEWS.replace("VIEW", "b.view(4, 0).from(0, 0)"),
        "3:28",
        "'.view(4, 0)': the extent 0 along dimension 1",
        "extents are >= 1",
    ),
    (
        "tma.load out of shared memory",
        STAGES.replace(
            "STMT", "tma.load x.subspan(32, 64).at(bm, 0) => s;\n    tma.load s => y.subspan(32, 64).at(bm, 0);"
        ),
        "5:5",
        "'tma.load' copies global memory into shared memory; its source 's' is a shared buffer",
        "'tma.copy s => y.subspan(32, 64).at(bm, 0);'",
    ),
    (
        "tma.load into fresh local memory",
        STAGES.replace("STMT", "l = tma.load x.subspan(32, 64).at(bm, 0) => local;\n    dma.copy l.data => s;"),
        "4:5",
        "'tma.load' copies global memory into shared memory; its destination is fresh local memory",
        "'=> shared'",
    ),
    (
        "after an event",
        TILE.replace("shared f32 [1, 64] r[2];", "shared event e;").replace(
            "STMT", "dma.copy s => y.subspan(16, 64).at(bm, 0) after e;"
        ),
        "6:47",
        "'after e': 'e' is an event, not a future",
        "name that copy's future",
    ),
    (
        "after an int",
        TILE.replace("STMT", "int n = 1;\n    dma.copy s => y.subspan(16, 64).at(bm, 0) after n;"),
        "7:47",
        "'after n': 'n' is an int, not a future",
        "'f = dma.copy.async ..;'",
    ),
    (
        "TMA store of a part that is not dense",
        STAGES.replace(
            "STMT",
            "tma.load x.subspan(32, 64).at(bm, 0) => s;\n    tma.copy s.subspan(32, 16).at(0, 2) => y.subspan(32, 16).at(bm, 2);",
        ),
        "5:14",
        "a TMA store reads a dense part of shared memory, and this one takes 16 of 64 elements along dimension 1"
        " for each of 32 along dimension 0",
        "copy other parts with 'dma.copy'",
    ),
    (
        "an asynchronous MMA never waited for",
        mm(mma="h = mma.row.row.async acc, sa, sb;"),
        "10:9",
        "the asynchronous MMA 'h' (into 'acc') is never waited for",
        "add 'wait h;'",
    ),
    (
        "an MMA accumulating into a shared buffer",
        mm(mma="mma.row.row sc, sa, sb;"),
        "10:21",
        "the accumulator of 'mma.row.row' is a fragment; 'sc' is a buffer",
        "'acc = mma.fill.f32 0.0f;'",
    ),
    (
        "mma.store of a tensor",
        mm(store="mma.store c, sc;"),
        "12:17",
        "what 'mma.store' stores is a fragment; 'c' is a tensor parameter",
        "'mma.store acc, view;'",
    ),
]


@pytest.mark.parametrize(("src", "at", "message", "hint"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_an_invalid_program_is_the_users_error(
    src: str, at: str, message: str, hint: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, src)
    assert rc == 1, err
    first = next(ln for ln in err.splitlines() if ": error: " in ln)
    assert first.startswith(f"{tmp_path / 't.co'}:{at}: error: "), err
    assert message in first, err
    lines = err.splitlines()
    caret = lines[lines.index(first) + 2]
    assert caret.strip().startswith("|") and "^" in caret, err
    assert "hint: " in err and hint in err, err
    assert "does not translate" not in err, err


# (id, program): a valid program next to each rule, which translates
VALID = [
    ("a mutable bool given its value later", ELEMENTWISE.replace("STMT", "mutable bool b;\n    b = p > 0;")),
    ("an int with its value, and one filled", ELEMENTWISE.replace("STMT", "int n = 2, m{3};")),
    ("an element scalar without a value", ELEMENTWISE.replace("STMT", "f32 v;\n    v = 1.0f;")),
    ("return of the declared type", RETURNING.replace("RET", "f32 [N]").replace("DECL", "f32 [N]")),
    (
        "a device region naming its target",
        ELEMENTWISE.replace("STMT", "")
        .replace("  parallel p", "  parallel by 1 : device(gpu) {\n  parallel p")
        .replace("\n}\n", "\n}\n}\n", 1),
    ),
    (
        ".sqz() after a subspan",
        TILE.replace("STMT", "dma.copy s.subspan(1, 64).at(3, 0).sqz() => r[1].subspan(1, 64).at(0, 0).sqz();"),
    ),
    (
        ".sqz() of a named view with its extents",
        TILE.replace(
            "STMT", "v = s.subspan(1, 64).at(2, 0);\n    dma.copy v.sqz() => r[0].subspan(1, 64).at(0, 0).sqz();"
        ),
    ),
    (
        ".sqz() of a copy's data",
        TILE.replace(
            "STMT",
            "f = dma.copy x.subspan(1, 64).at(bm, 0) => shared;\n    dma.copy f.data.sqz() => r[0].subspan(1, 64).at(0, 0).sqz();",
        ),
    ),
    ("the last part of a chunk", VIEWS.replace("VIEW", "a.chunk(4).at(3)")),
    (
        "a modspan wider than the remainder",
        VIEWS.replace("global f32 [16] out", "global f32 [16] out").replace("VIEW", "a.modspan(48)"),
    ),
    (
        "a subspan taking the whole extent with '_'",
        VIEWS.replace("global f32 [16] out", "global f32 [64] out").replace("VIEW", "a.subspan(_).at(0)"),
    ),
    (
        "tma.load then a tma.copy store",
        STAGES.replace(
            "STMT", "tma.load x.subspan(32, 64).at(bm, 0) => s;\n    tma.copy s => y.subspan(32, 64).at(bm, 0);"
        ),
    ),
    (
        "a TMA store of whole rows of a buffer",
        STAGES.replace(
            "STMT",
            "tma.load x.subspan(32, 64).at(bm, 0) => s;\n    tma.copy s.subspan(16, 64).at(1, 0) => y.subspan(16, 64).at(bm * 2 + 1, 0);",
        ),
    ),
    (
        "after a copy's future",
        TILE.replace(
            "STMT",
            "f = dma.copy.async x.subspan(16, 64).at(bm, 0) => s;\n    g = dma.copy.async s => y.subspan(16, 64).at(bm, 0) after f;\n    wait f, g;",
        ),
    ),
    ("a waited asynchronous MMA", mm(mma="h = mma.row.row.async acc, sa, sb;\n        wait h;")),
    (
        "an accumulator stored into a buffer",
        mm(store="mma.store acc, sc;\n      dma.copy sc => c.subspan(64, 64).at(bm, bn);"),
    ),
]


@pytest.mark.parametrize("src", [v[1] for v in VALID], ids=[v[0] for v in VALID])
def test_a_valid_program_next_to_the_rule_translates(
    src: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = check(capsys, tmp_path, src)
    assert rc == 0, err
    assert "error:" not in err and "is read before" not in err, err


COPY_THEN_READ = """__co__ void cp(global f32 [M, 64] x, global f32 [M, 64] y) {
  parallel bm by cdiv(M, 16) : block {
    STMTS
  }
}
"""


def test_the_data_of_an_async_copy_read_before_its_wait_warns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # LANGUAGE.md 7.8 makes the future "consumed by wait f" but does not call an early read an error: a warning
    early = "f = dma.copy.async x.subspan(16, 64).at(bm, 0) => shared;\n    dma.copy f.data => y.subspan(16, 64).at(bm, 0);\n    wait f;"
    rc, err = check(capsys, tmp_path, COPY_THEN_READ.replace("STMTS", early))
    assert rc == 0, err
    assert (
        f"{tmp_path / 't.co'}:4:14: warning: 'f.data' is read before 'wait f': the asynchronous copy of line 3" in err
    )
    assert "hint: 'wait f;' before reading 'f.data'" in err
    # in one branch only: pending where that path leaves it
    branch = (
        "f = dma.copy.async x.subspan(16, 64).at(bm, 0) => shared;\n    if (bm > 0) { wait f; }\n"
        "    dma.copy f.data => y.subspan(16, 64).at(bm, 0);\n    wait f;"
    )
    rc, err = check(capsys, tmp_path, COPY_THEN_READ.replace("STMTS", branch))
    assert rc == 0 and ":5:14: warning: 'f.data' is read before 'wait f'" in err, err


@pytest.mark.parametrize(
    "stmts",
    [
        # waited first
        "f = dma.copy.async x.subspan(16, 64).at(bm, 0) => shared;\n    wait f;\n    dma.copy f.data => y.subspan(16, 64).at(bm, 0);",
        # only its shape read before the wait
        "f = dma.copy.async x.subspan(16, 64).at(bm, 0) => shared;\n    int n = |f.span|;\n    wait f;\n    dma.copy f.data => y.subspan(16, 64).at(bm, 0);",
        # a prefetch: each turn waits for the copy the previous one started
        "f = dma.copy.async x.subspan(16, 16).at(bm, 0) => shared;\n    foreach k in [4] {\n      wait f;\n"
        "      dma.copy f.data => y.subspan(16, 16).at(bm, k);\n      f = dma.copy.async x.subspan(16, 16).at(bm, k + 1) => shared;\n"
        "    }\n    wait f;",
    ],
    ids=["waited", "shape only", "prefetch loop"],
)
def test_reads_after_the_wait_do_not_warn(stmts: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, err = check(capsys, tmp_path, COPY_THEN_READ.replace("STMTS", stmts))
    assert rc == 0, err
    assert "is read before" not in err, err


def test_a_returned_extent_only_the_launch_knows_is_checked_by_the_launcher(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = RETURNING.replace("RET", "f32 [N]").replace("DECL", "f32 [M]").replace("cdiv(N, 32)", "cdiv(M, 32)")
    src = src.replace("x.at(p # t)", "w.at(p # t)")
    rc, err = check(capsys, tmp_path, src)
    assert rc == 0, err  # 'M' and 'N' may be equal: the launch decides
    path = tmp_path / "ret_mn.co"
    path.write_text(src)
    m = load_co(path)
    w = randn(40, seed=1)
    assert_close(m.halved(randn(40, seed=2), w), w * 0.5)  # M == N: the declared shape
    with pytest.raises(CroqLaunchError, match=r"'halved' is declared 'f32 \[N\]' but returns 'y' \[M\]") as info:
        m.halved(randn(40, seed=3), randn(24, seed=4))
    assert "differs from N" in str(info.value) and "ret_mn.co:5:" in str(info.value)
