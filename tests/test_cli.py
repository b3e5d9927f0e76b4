"""The command line on hostile inputs: exit status, located messages, no tracebacks."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NUMPY_TOO_NEW, pythonpath

import croq2triton
from croq2triton.cli import main

REPO = Path(__file__).resolve().parent.parent
PACKAGE = Path(croq2triton.__file__).resolve().parent
LOCATED = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):(?P<col>\d+): error: ", re.M)

GOOD = """#include <cstdio>
__co__ void add(f32 [6, 64] out, f32 [6, 64] in0) {
  parallel p by 6, q by 64 : block {
    out.at(p, q) = in0.at(p, q) + 1.0f;
  }
}
int main() { return 0; }
"""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["parse", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, out, err


def write(tmp_path: Path, name: str, data: str | bytes) -> str:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        p.write_text(data, encoding="utf-8")
    else:
        p.write_bytes(data)
    return str(p)


def junk_text(size: int, seed: int = 11) -> str:
    """Deterministic random Croqtile-ish word salad of about ``size`` characters."""
    rng = random.Random(seed)
    words = [
        "__co__", "void", "f", "(", ")", "{", "}", ";", "parallel", "p", "by", "4", ":", "block", "x", "=",
        "1", "+", "dma.copy", "=>", "local", "/*", "*/", "//", '"', "#", "\n", "\n", "foreach", "in", "[",
        "]", ",", "mma", ".at(", "int", "f32", "__device__", 'R"(', ')"', "0x", "9999999999999999999999",
    ]  # fmt: skip
    out: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(words)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


VALID = {
    "empty": "",
    "host only": "int main() { return 0; }\n",
    "a function": GOOD,
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_inputs_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = write(tmp_path, "ok.co", VALID[name])
    rc, out, err = run_cli(capsys, path)
    assert (rc, out, err) == (0, "", "")


INVALID: dict[str, tuple[str | bytes, int | None]] = {
    # name: (file contents, line of the error or None when there is no position)
    "binary (NUL bytes)": (b"int x;\x00\x01\x02\n", 1),
    "invalid UTF-8": (b"__co__ void f() {\n  x = 1;\xff\xfe\n}\n", 2),
    "truncated in a function": (GOOD[: GOOD.index("+ 1.0f")], 4),
    "unterminated comment in a function": ("__co__ void f() {\n  x = 1; /* never closed\n}\n", 2),
    "unterminated comment in host text": ("int a;\nint b; /* never closed\n", 2),
    "syntax error": (GOOD.replace("+ 1.0f", "+ + ;"), 4),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_inputs_exit_1_with_a_located_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    data, line = INVALID[name]
    path = write(tmp_path, "bad.co", data)
    rc, out, err = run_cli(capsys, path)
    assert rc == 1 and out == ""
    m = LOCATED.search(err)
    assert m is not None, err
    assert (m["file"], int(m["line"])) == (path, line), err
    assert err.count("\n") >= 1


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "nope.co")
    rc, out, err = run_cli(capsys, path)
    assert rc == 1
    assert err.startswith("error: cannot read") and path in err


def test_directory_is_walked_for_co_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "d/a.co", GOOD)
    write(tmp_path, "d/sub/b.co", GOOD)
    write(tmp_path, "d/notes.txt", "not Croqtile {")
    rc, out, err = run_cli(capsys, str(tmp_path / "d"))
    assert (rc, err) == (0, "")
    bad = write(tmp_path, "d/sub/c.co", "__co__ void f() {\n")
    rc, out, err = run_cli(capsys, str(tmp_path / "d"))
    assert rc == 1
    assert [m["file"] for m in LOCATED.finditer(err)] == [bad]


def test_empty_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    rc, out, err = run_cli(capsys, str(tmp_path / "empty"))
    assert rc == 1 and out == ""
    assert err.startswith(f"error: no .co files in {tmp_path / 'empty'}"), err


def test_ten_megabytes_of_junk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "junk.co", junk_text(10_000_000))
    assert os.path.getsize(path) >= 10_000_000
    rc, out, err = run_cli(capsys, path)
    assert rc == 1
    assert LOCATED.search(err) is not None, err[:2000]


def test_report_has_one_line_per_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {
        "a_good.co": GOOD,
        "b_empty.co": "",
        "c_bad.co": "__co__ void f() {\n  x = ;\n}\n",
        "d_binary.co": b"\x00\x01",
        "e_utf8.co": b"int x;\n\xc3\x28\n",
    }
    paths = [write(tmp_path, n, d) for n, d in files.items()]
    missing = str(tmp_path / "f_missing.co")
    rc, out, err = run_cli(capsys, "--report", *paths, missing)
    assert rc == 1 and err == ""
    lines = out.splitlines()
    assert len(lines) == len(paths) + 1
    assert lines[0] == f"{paths[0]}\tok"
    assert lines[1] == f"{paths[1]}\tok"
    assert lines[2].startswith(f"{paths[2]}\terror\t2:")
    assert lines[3].startswith(f"{paths[3]}\terror\t1:1\t")
    assert lines[4].startswith(f"{paths[4]}\terror\t2:1\tinvalid UTF-8")
    assert lines[5].startswith(f"{missing}\terror\t0:0\tcannot read")
    for ln, path in zip(lines, [*paths, missing], strict=True):
        assert re.fullmatch(re.escape(path) + r"\t(ok|error\t\d+:\d+\t[^\t\n]+)", ln), ln

    rc, out, err = run_cli(capsys, "--report", paths[0], paths[1])
    assert rc == 0 and out == f"{paths[0]}\tok\n{paths[1]}\tok\n" and err == ""


def test_ast_prints_a_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(capsys, "--ast", write(tmp_path, "ok.co", GOOD))
    assert rc == 0 and err == ""
    assert out.startswith("TranslationUnit")
    assert re.search(r"^ +CoFunction name='add'.* @2:1$", out, re.M), out
    assert re.search(r"^ {4,}Parallel", out, re.M), out


def _listing(root: Path) -> set[str]:
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
    }


def test_subprocess_writes_no_files(tmp_path: Path) -> None:
    work = tmp_path / "cwd"
    work.mkdir()
    write(work, "good.co", GOOD)
    write(work, "bad.co", "__co__ void f() {\n  parallel p by 4 {\n    x = \n")
    before_cwd, before_pkg = _listing(work), _listing(PACKAGE)
    env = dict(os.environ, PYTHONPATH=pythonpath(REPO), PYTHONDONTWRITEBYTECODE="1")
    env.pop("CROQ2TRITON_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "croq2triton", "parse", "good.co", "bad.co"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("bad.co:4:1: error: "), proc.stderr
    # building the LALR tables from scratch (as the grammar checks do) writes nothing either
    proc2 = subprocess.run(
        [sys.executable, "-c", "from croq2triton.frontend.parser import conflicts; assert conflicts() == []"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc2.returncode == 0, proc2.stderr
    assert _listing(work) == before_cwd
    assert _listing(PACKAGE) == before_pkg
    assert not {"parsetab.py", "parser.out", "lextab.py"} & set(os.listdir(work))


# (the README's first command, smaller, runs in tests/test_cli_user.py: its launch-time warnings)
@pytest.mark.parametrize(
    "argv",
    [["examples/attention.co", "--size", "BH=1,SEQ_Q=70,SEQ_K=90", "--oob-fill", "nan", "--schedule", "auto"]],
)
@NUMPY_TOO_NEW
def test_run_subcommand(argv: list[str]) -> None:
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=pythonpath(REPO))
    r = subprocess.run(
        [sys.executable, "-m", "croq2triton", "run", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-2000:]
    assert "ms per call" in r.stdout


def test_the_readme_main_command_runs_in_a_fresh_process_as_written(tmp_path: Path) -> None:
    """The README's first command after its set-up part (translate an example, run it with --check),
    in a fresh process without TRITON_INTERPRET in the environment, as a user types it: on a
    machine without a GPU croq2triton picks the interpreter itself (importing Triton before that
    choice once built triton.language's own jit functions compiled: 'Cannot call @triton.jit'd
    outside of the scope of a kernel')."""
    readme = (REPO / "README.md").read_text()
    line = next(x for x in readme.splitlines() if "croq2triton translate" in x and "pip install" in x)
    steps = [s.strip() for s in line.split("&&") if s.strip().startswith(".venv/bin/croq2triton")]
    assert [s.split()[1] for s in steps] == ["translate", "run"], steps
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "CROQ2TRITON_NUM_SMS")}
    env["PYTHONPATH"] = pythonpath(REPO)
    for step in steps:
        argv = step.split()[1:]
        if argv[0] == "translate":
            argv[argv.index("-o") + 1] = str(tmp_path / "out.py")
        r = subprocess.run(
            [sys.executable, "-m", "croq2triton", *argv], cwd=REPO, capture_output=True, text=True, env=env, timeout=600
        )
        assert r.returncode == 0, r.stderr[-2000:]
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-2000:]
