"""``croq2triton check --lowerability``: a file x function x status table (translated; refused,
naming the construct; invalid, with the diagnostic), the counts at the end, exit 0 unless a file
cannot be read.  Each function is judged alone: an invalid or refused function leaves its
neighbours' rows as they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS, needs_corpus

from croq2triton.cli import main

MIXED = """__co__ void good(global f32 [N] a, global f32 [N] out) {
  parallel p by cdiv(N, 64) : block, t by 64 : thread
    out.at(p # t) = a.at(p # t) + 1.0f;
}
__co__ void inline_ptx(global f32 [N] a) {
  parallel p by 1 : block {
    __asm__ volatile("nop;");
  }
}
__co__ void bad(global f32 [N] a) {
  parallel p by 1 : block {
    with {_} in [4] { }
  }
}
__co__ void also_good(global f32 [N] a, global f32 [N] out) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread
    out.at(p # t) = a.at(p # t) * 2.0f;
}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["check", "--lowerability", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def rows(tsv: str) -> list[list[str]]:
    return [ln.split("\t") for ln in tsv.splitlines()[1:] if not ln.startswith("#")]


def test_one_row_per_function(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mixed.co").write_text(MIXED)
    (tmp_path / "syntax.co").write_text("__co__ void f(global f32 [N] a) {\n  a.at(0) = ;\n}\n")
    (tmp_path / "host.co").write_text("int main() { return 0; }\n")
    rc, out, err = run(capsys, "--format", "tsv", str(tmp_path))
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "file\tfunction\tstatus\twhere\tmessage"
    got = {(Path(r[0]).name, r[1]): r[2:] for r in rows(out)}
    assert got[("mixed.co", "good")] == ["translated", "", ""]
    assert got[("mixed.co", "also_good")] == ["translated", "", ""]
    status, where, message = got[("mixed.co", "inline_ptx")]
    assert status == "refused" and where == "7:5" and "inline '__asm__(...)'" in message
    assert got[("mixed.co", "bad")][:2] == ["invalid", "12:10"]
    assert got[("mixed.co", "bad")][2].startswith("'_' cannot be a 'with' index")
    status, where, message = got[("syntax.co", "-")]
    assert status == "invalid" and where == "2:13" and message.startswith("syntax error")
    assert got[("host.co", "-")] == ["empty", "", "no __co__ function"]
    counts = dict(ln[2:].split("\t") for ln in lines if ln.startswith("# "))
    assert counts == {
        "functions translated": "2",
        "functions refused": "1",
        "functions invalid": "1",
        "functions internal": "0",
        "files complete": "0",
        "files partial": "1",
        "files none": "0",
        "files invalid": "1",
        "files empty": "1",
    }


def test_the_text_table_ends_with_the_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mixed.co").write_text(MIXED)
    rc, out, _ = run(capsys, str(tmp_path / "mixed.co"))
    assert rc == 0
    head, *body = out.splitlines()
    assert head.split() == ["FILE", "FUNCTION", "STATUS", "WHERE", "MESSAGE"]
    assert any(ln.split()[1:3] == ["good", "translated"] for ln in body if ln.strip())
    assert out.endswith(
        "4 function(s): 2 translated, 1 refused, 1 invalid\n"
        "1 file(s): 0 translate completely, 1 in part, 0 translate nothing\n"
    )


def test_it_is_a_report_unless_a_file_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.co").write_text("__co__ void f() { parallel p by 0 { } }\n")
    rc, out, err = run(capsys, "--format", "tsv", str(tmp_path / "bad.co"))
    assert rc == 0 and rows(out)[0][2] == "invalid" and not err
    rc, out, err = run(capsys, str(tmp_path / "bad.co"), str(tmp_path / "missing.co"))
    assert rc == 1 and "cannot read" in err and "missing.co" in err
    assert "1 function(s): 0 translated, 0 refused, 1 invalid" in out  # the readable file is still reported


def test_format_goes_with_lowerability(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.co").write_text(MIXED)
    assert main(["check", "--format", "tsv", str(tmp_path / "a.co")]) == 1
    assert "--format goes with --lowerability" in capsys.readouterr().err


def test_a_function_is_judged_as_translate_judges_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a file whose functions all pass: the table says what translate does, function by function
    path = tmp_path / "two.co"
    path.write_text(MIXED.replace("with {_} in [4] { }", ""))
    _, out, _ = run(capsys, "--format", "tsv", str(path))
    table = {r[1]: r[2] for r in rows(out)}
    assert main(["translate", "--allow-partial", str(path), "-o", str(tmp_path / "two.py")]) == 0
    err = capsys.readouterr().err
    assert "not translated, raise when called: inline_ptx" in err
    assert table == {"good": "translated", "inline_ptx": "refused", "bad": "translated", "also_good": "translated"}


@needs_corpus
def test_the_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "--format", "tsv", str(CORPUS))
    assert rc == 0, err
    table = rows(out)
    assert len({r[0] for r in table}) >= 150
    assert {r[2] for r in table} <= {"translated", "refused", "invalid", "empty"}  # no internal errors
    assert sum(r[2] == "translated" for r in table) >= 150
    for r in table:
        if r[2] in ("refused", "invalid"):
            assert r[4] and r[3], r  # the construct or the diagnostic, and where
