"""Every example of the user's guide (docs/*.md) runs and says what the page says.

The pages follow the convention of docs/README.md ("How the examples are checked"):

* a ```co block (optionally ```co file=NAME.co) is a complete program: it is saved as NAME.co
  (default example.co), loaded with ``croq2triton.load`` and must translate every function; the
  fenced block right after it must be a ```python block, run with ``mod`` (the loaded module),
  ``torch``, ``croq2triton`` and ``co_path`` (the file's path) bound;
* a ```co error block is a mistake: the block right after it is a ```text block holding exactly
  what ``croq2triton check NAME.co`` prints for it;
* a ```python generated block holds lines that the translation of the last program above it contains,
  in that order (``...`` lines stand for any lines), and a ```console block holds ``$ croq2triton ...``
  commands run next to that program's file, each followed by its output (``...`` again stands for any);
* any other ```python block (one that no program precedes) is an error: every Python a page shows runs.

The examples run in Triton's interpreter on small ragged sizes (the whole file takes well under a
minute on two cores).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE  # (importing it sets TRITON_INTERPRET on the CPU)

import croq2triton
from croq2triton.cli import main as cli_main
from croq2triton.runtime import launch as rt

DOCS = Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(r"^```(\S*)(.*)$")


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    words: list[str]
    text: str


@dataclass
class Example:
    program: Block
    check: Block
    extras: list[Block] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.program.page}:{self.program.line}"

    @property
    def filename(self) -> str:
        for w in self.program.words:
            if w.startswith("file="):
                return w[len("file=") :]
        return "example.co"

    @property
    def is_error(self) -> bool:
        return "error" in self.program.words


def blocks(path: Path) -> list[Block]:
    out: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path.name}:{start + 1}: a fenced block is not closed")
        out.append(Block(path.name, start + 1, m.group(1), m.group(2).split(), "\n".join(body) + "\n"))
        i += 1
    return out


def examples(path: Path) -> tuple[list[Example], list[str]]:
    """The page's programs with their checks, and what breaks the convention."""
    found: list[Example] = []
    problems: list[str] = []
    bs = blocks(path)
    for k, b in enumerate(bs):
        where = f"{b.page}:{b.line}"
        if b.lang == "co":
            nxt = bs[k + 1] if k + 1 < len(bs) else None
            want = "text" if "error" in b.words else "python"
            if nxt is None or nxt.lang != want or nxt.words:
                problems.append(
                    f"{where}: a ```{' '.join([b.lang, *b.words])} block must be followed by a ```{want} block"
                )
                continue
            found.append(Example(b, nxt))
        elif (b.lang, b.words) in (("python", ["generated"]), ("console", [])):
            if found:
                found[-1].extras.append(b)  # about the last program above it
            else:
                problems.append(f"{where}: a ```{' '.join([b.lang, *b.words])} block that no ```co program precedes")
        elif b.lang == "python":
            prev = bs[k - 1] if k else None
            if prev is None or prev.lang != "co" or b.words:
                problems.append(f"{where}: a ```python block that no ```co program precedes (nothing runs it)")
    return found, problems


PAGES = sorted(DOCS.glob("*.md"))
ALL = [ex for p in PAGES for ex in examples(p)[0]]


def test_the_guide_has_pages_and_examples() -> None:
    assert (DOCS / "README.md").exists()
    assert len(PAGES) >= 10 and len(ALL) >= 30, (len(PAGES), len(ALL))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_block_follows_the_convention(page: Path) -> None:
    _, problems = examples(page)
    assert not problems, "\n".join(problems)


def test_every_page_is_linked_from_the_index() -> None:
    index = (DOCS / "README.md").read_text()
    missing = [p.name for p in PAGES if p.name != "README.md" and f"({p.name})" not in index]
    assert not missing, f"pages not linked from docs/README.md: {missing}"


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of the page's headings: lower case, punctuation dropped, spaces as '-'."""
    prose = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    heads = [m.group(1) for m in re.finditer(r"^#+ (.+)$", prose, flags=re.M)]
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_links_between_pages_resolve() -> None:
    bad = []
    for p in PAGES:
        for target, anchor in re.findall(r"\]\(([^)#\s]*\.md)(?:#([^)]*))?\)", p.read_text()):
            path = (DOCS / target).resolve()
            if not path.exists():
                bad.append(f"{p.name}: {target}")
            elif anchor and path.parent == DOCS and anchor not in _anchors(path):
                bad.append(f"{p.name}: {target}#{anchor}")
    assert not bad, bad


def _run_cli(argv: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.chdir(cwd)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = cli_main(argv)
    return rc, buf.getvalue()


def _subsequence(want: str, got: str, what: str) -> None:
    """Every line of ``want`` but ``...`` appears in ``got`` in order (``...``: any lines between)."""
    lines = [x.rstrip() for x in got.splitlines()]
    pos = 0
    for w in want.splitlines():
        if w.strip() == "...":
            continue
        try:
            pos = lines.index(w.rstrip(), pos) + 1
        except ValueError:
            shown = got if len(got) < 6000 else got[:6000] + "\n[...]"
            raise AssertionError(f"{what}: line not found (in order):\n{w}\n--- in:\n{shown}") from None


def _console(block: Block, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = re.split(r"^\$ ", block.text, flags=re.M)
    assert not chunks[0].strip(), f"{block.page}:{block.line}: a console block starts with '$ croq2triton ...'"
    for chunk in chunks[1:]:
        command, _, expected = chunk.partition("\n")
        argv = shlex.split(command)
        assert argv[0] == "croq2triton", f"{block.page}:{block.line}: only croq2triton commands run here"
        _, out = _run_cli(argv[1:], cwd, monkeypatch)
        _subsequence(expected, out, f"{block.page}:{block.line}: $ {command}")


@pytest.mark.parametrize("ex", ALL, ids=lambda e: e.id)
def test_example(ex: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # buffers a function allocates start as NaN, so an example cannot lean on the launcher's zero fill
    monkeypatch.setattr(rt, "POISON", True)
    path = tmp_path / ex.filename
    path.write_text(ex.program.text)
    if ex.is_error:
        rc, out = _run_cli(["check", ex.filename], tmp_path, monkeypatch)
        assert rc == 1, f"{ex.id}: croq2triton check accepted a program the page shows as an error:\n{out}"
        assert out.strip() == ex.check.text.strip(), f"{ex.id}: croq2triton check printed\n{out}"
    else:
        mod = croq2triton.load(path)
        failed = mod.__croq_translation__.failed
        assert not failed, f"{ex.id}: functions not translated: {failed}"
        code = compile(ex.check.text, f"{ex.check.page}:{ex.check.line}", "exec")
        # the pages make their tensors with torch's default device: CROQ2TRITON_TEST_DEVICE=cuda runs them on a GPU
        with torch.device(DEVICE):
            exec(code, {"mod": mod, "torch": torch, "croq2triton": croq2triton, "co_path": str(path)})
    for extra in ex.extras:
        if extra.lang == "console":
            _console(extra, tmp_path, monkeypatch)
        else:
            generated = croq2triton.translate(ex.program.text, filename=ex.filename)
            _subsequence(extra.text, generated, f"{extra.page}:{extra.line}: generated code")
