"""The golden net: the generated code of every corpus file and example, in both schedules.

``tests/golden/<group>/<path>/<stem>.<schedule>.py`` holds the module ``translate_full`` returns and
``<stem>.<schedule>.diag`` its formatted diagnostics (only the ``.diag``, with the error, when the
input raises :class:`CroqError`), ``<stem>.<schedule>.tir`` the tile IR of its kernels and the host
IR of its launchers (``translate --dump-ir``: the lifting's and the schedule's output, compared
exactly; absent where no kernel is in the tile IR). Paths of the inputs are written relative to their group
(``corpus/...``, ``examples/...``) so goldens do not depend on where the checkout lives.

A generated module matches its golden when both parse to the same Python AST once the names bound
inside each function are renamed canonically, and both carry the same ``.co:LINE`` comments on the
same statements; text formatting and the spelling of temporaries may change. Diagnostics compare
exactly.

    python tests/golden_tool.py [--accept] [--only PATTERN]

compares (or, with ``--accept``, rewrites) the goldens; ``CROQ2TRITON_ACCEPT=1 pytest
tests/test_golden.py`` does the same inside pytest.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import fnmatch
import io
import os
import re
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import CORPUS, EXAMPLES, MANIFEST, REPO  # noqa: E402

from croq2triton.api import translate_full  # noqa: E402
from croq2triton.errors import CroqError  # noqa: E402
from croq2triton.frontend.driver import read_source  # noqa: E402

GOLDEN = REPO / "tests" / "golden"
SCHEDULES = ("source", "auto")
ACCEPT_ENV = "CROQ2TRITON_ACCEPT"
ACCEPT_CMD = f"{ACCEPT_ENV}=1 .venv/bin/python -m pytest -q tests/test_golden.py"
ROOTS = {"corpus": CORPUS, "examples": EXAMPLES}
DIFF_LINES = 80


# ---------------------------------------------------------------------------------------------
# cases


@dataclass(frozen=True)
class Case:
    """One input file translated with one schedule."""

    group: str  # "corpus" or "examples"
    rel: str  # the input's path relative to its group's root, with '/'
    schedule: str

    @property
    def key(self) -> str:
        """The input's stable name, e.g. ``examples/vadd.co``."""
        return f"{self.group}/{self.rel}"

    @property
    def id(self) -> str:
        return f"{self.key}:{self.schedule}"

    @property
    def input(self) -> Path:
        return ROOTS[self.group] / self.rel

    def golden(self, suffix: str) -> Path:
        stem = self.rel.removesuffix(".co")
        return GOLDEN / self.group / f"{stem}.{self.schedule}{suffix}"

    @property
    def golden_py(self) -> Path:
        return self.golden(".py")

    @property
    def golden_diag(self) -> Path:
        return self.golden(".diag")

    @property
    def golden_ir(self) -> Path:
        return self.golden(".tir")


def group_present(group: str) -> bool:
    """The corpus counts as present when conftest's ``needs_corpus`` says so."""
    return MANIFEST.exists() if group == "corpus" else ROOTS[group].is_dir()


def inputs(group: str) -> list[str]:
    """The ``.co`` files of a group relative to its root; from its goldens when the root is absent."""
    root = ROOTS[group]
    if group_present(group):
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.co"))
    return sorted({golden_key(p).split("/", 1)[1] for p in (GOLDEN / group).rglob("*.diag")})


def golden_key(path: Path) -> str:
    """The stable name of the input a golden file belongs to: ``tests/golden/examples/vadd.auto.py``
    -> ``examples/vadd.co``."""
    rel = path.relative_to(GOLDEN).as_posix()
    return rel.rsplit(".", 2)[0] + ".co"


def cases(group: str) -> list[Case]:
    return [Case(group, rel, schedule) for rel in inputs(group) for schedule in SCHEDULES]


def stale_goldens(group: str) -> list[Path]:
    """Golden files of ``group`` that belong to no current case (their input was removed)."""
    wanted = {p for case in cases(group) for p in (case.golden_py, case.golden_diag, case.golden_ir)}
    return sorted(p for p in (GOLDEN / group).rglob("*") if p.is_file() and p not in wanted)


# ---------------------------------------------------------------------------------------------
# generation


@dataclass(frozen=True)
class Output:
    """What the compiler produced for a case: the module (None when it raised) and diagnostics."""

    source: str | None
    diag: str
    raw: str | None = None  # the module as written, before the paths in it are normalised
    ir: str = ""  # the tile IR of its kernels (tir/dump.py), "" where none is lifted


@contextlib.contextmanager
def default_environment() -> Iterator[None]:
    """Translate as in a clean shell: without the CROQ2TRITON_* switches some lowerings read."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("CROQ2TRITON_")}
    for k in saved:
        del os.environ[k]
    try:
        yield
    finally:
        os.environ.update(saved)


def normalise_paths(text: str, group: str) -> str:
    """Write paths under the group's root as ``<group>/...`` (both the given and resolved root)."""
    root = ROOTS[group]
    for prefix in sorted({str(root), str(root.resolve())}, key=len, reverse=True):
        text = text.replace(prefix, group)
    return text


def format_diagnostics(texts: list[str]) -> str:
    return "".join(t + "\n" for t in texts)


def generate(case: Case) -> Output:
    path = case.input
    text = read_source(str(path))
    with default_environment():
        try:
            tr = translate_full(text, filename=str(path), schedule=case.schedule)
        except CroqError as e:
            return Output(None, normalise_paths(format_diagnostics([e.format()]), case.group))
    diag = format_diagnostics([d.format() for d in tr.diagnostics])
    ir = normalise_paths(ir_text(tr), case.group)
    return Output(normalise_paths(tr.source, case.group), normalise_paths(diag, case.group), tr.source, ir)


def ir_text(tr: object) -> str:
    """The IR of a translation as ``translate --dump-ir`` prints it (kernels and launchers); "" when
    no kernel of it is in the tile IR."""
    from croq2triton.tir.dump import dump_functions

    if not any(tr.ir.values()):  # type: ignore[attr-defined]
        return ""
    return dump_functions(tr.ir, tr.launchers)  # type: ignore[attr-defined]


def read_golden(case: Case) -> Output | None:
    if not case.golden_diag.exists():
        return None
    source = case.golden_py.read_text() if case.golden_py.exists() else None
    ir = case.golden_ir.read_text() if case.golden_ir.exists() else ""
    return Output(source, case.golden_diag.read_text(), ir=ir)


def write_golden(case: Case, out: Output) -> None:
    case.golden_diag.parent.mkdir(parents=True, exist_ok=True)
    case.golden_diag.write_text(out.diag)
    if out.source is None:
        case.golden_py.unlink(missing_ok=True)
    else:
        case.golden_py.write_text(out.source)
    if out.ir:
        case.golden_ir.write_text(out.ir)
    else:
        case.golden_ir.unlink(missing_ok=True)


def remove_stale(group: str, pattern: str | None = None) -> list[Path]:
    """Delete the stale goldens of ``group`` (those whose input matches ``pattern``, if given)."""
    stale = [p for p in stale_goldens(group) if pattern is None or fnmatch.fnmatchcase(golden_key(p), pattern)]
    for p in stale:
        p.unlink()
    for d in sorted((GOLDEN / group).rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    return stale


# ---------------------------------------------------------------------------------------------
# canonical form of a module


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def is_jit(fn: ast.AST) -> bool:
    """A ``@triton.jit`` function: the names of its run-time parameters are generated, not an API."""
    decorators = getattr(fn, "decorator_list", [])
    return any(_dotted(d) in ("triton.jit", "jit") for d in decorators)


def _is_constexpr(a: ast.arg) -> bool:
    """A meta-parameter: launches set it by keyword, ``tuned(...)`` and the runtime name it."""
    return a.annotation is not None and _dotted(a.annotation) in ("tl.constexpr", "triton.language.constexpr")


def _params(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def outer_parts(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.expr]:
    """Decorators, defaults, annotations: evaluated in the scope where the function is defined."""
    args = fn.args
    notes = [a.annotation for a in _params(args) if a.annotation is not None]
    returns = [r] if (r := getattr(fn, "returns", None)) is not None else []
    defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    return [*getattr(fn, "decorator_list", []), *defaults, *notes, *returns]


def _scope_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes below ``node`` evaluated in its scope, in pre-order; nested functions are yielded but
    only their outer parts entered (comprehensions count as the enclosing scope, classes are not
    entered)."""
    stack = list(reversed(list(ast.iter_child_nodes(node))))
    while stack:
        child = stack.pop()
        yield child
        if isinstance(child, _FUNCTIONS):
            stack.extend(reversed(outer_parts(child)))
        elif not isinstance(child, ast.ClassDef):
            stack.extend(reversed(list(ast.iter_child_nodes(child))))


def _body(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.AST]:
    return list(fn.body) if isinstance(fn.body, list) else [fn.body]


def _in_scope(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> Iterator[ast.AST]:
    """The nodes of ``fn``'s body evaluated in its scope, in pre-order."""
    for stmt in _body(fn):
        yield stmt
        yield from _scope_nodes(stmt)


def local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, rename_params: bool) -> list[str]:
    """Names bound in ``fn`` by order of first appearance: its parameters only when ``rename_params``
    and not ``tl.constexpr`` (a kept parameter stays kept where the body assigns it again)."""
    params = _params(fn.args)
    seen = [a.arg for a in params if rename_params and not _is_constexpr(a)]
    bound = set(seen)
    declared = {a.arg for a in params} - bound
    for node in _in_scope(fn):
        name, binds = _occurrence(node)
        if isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        if name is not None:
            seen.append(name)
            if binds:
                bound.add(name)
    ordered = dict.fromkeys(n for n in seen if n in bound and n not in declared)
    return list(ordered)


def _occurrence(node: ast.AST) -> tuple[str | None, bool]:
    """The local name ``node`` mentions, if any, and whether it binds it."""
    if isinstance(node, ast.Name):
        return node.id, not isinstance(node.ctx, ast.Load)
    if isinstance(node, _DEFS):
        return node.name, True
    if isinstance(node, ast.ExceptHandler) and node.name:
        return node.name, True
    return None, False


class _Canonicaliser(ast.NodeVisitor):
    """Renames, in place, the names bound inside each function to ``$<depth>.<index>``.

    ``$`` cannot start a Python identifier, so a canonical name never equals a kept one. Parameters
    are renamed for ``@triton.jit`` kernels (but not their ``tl.constexpr`` meta-parameters, set by
    keyword), lambdas and nested functions; a module-level launcher's parameters are its API and
    stay. Module-level names, attributes and keyword names stay.
    """

    def __init__(self) -> None:
        self.scopes: list[dict[str, str]] = [{}]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for n in outer_parts(node):
            self.visit(n)
        node.name = self.scopes[-1].get(node.name, node.name)
        self._enter(node, rename_params=is_jit(node) or len(self.scopes) > 1)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for n in outer_parts(node):
            self.visit(n)
        self._enter(node, rename_params=True)

    def visit_Name(self, node: ast.Name) -> None:
        node.id = self.scopes[-1].get(node.id, node.id)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            node.name = self.scopes[-1].get(node.name, node.name)
        self.generic_visit(node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        node.names = [self.scopes[-1].get(n, n) for n in node.names]

    def _enter(self, fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, rename_params: bool) -> None:
        depth = len(self.scopes)
        scope = dict(self.scopes[-1])
        for a in _params(fn.args):
            scope.pop(a.arg, None)  # a kept parameter shadows an outer name
        for node in _in_scope(fn):
            if isinstance(node, ast.Global):  # names the module's binding, not an outer function's
                for name in node.names:
                    scope.pop(name, None)
        for i, name in enumerate(local_names(fn, rename_params)):
            scope[name] = f"${depth}.{i}"
        for a in _params(fn.args):
            a.arg = scope.get(a.arg, a.arg)
        self.scopes.append(scope)
        for node in _body(fn):
            self.visit(node)
        self.scopes.pop()


@dataclass(frozen=True)
class Canonical:
    """A module text reduced to what the golden comparison looks at."""

    statements: list[tuple[str, str]]  # (name, canonical dump) of each top-level statement
    refs: list[tuple[int, str, str]]  # see line_refs


def canonical(text: str) -> Canonical:
    """Raises SyntaxError when ``text`` is not Python."""
    tree = ast.parse(text)
    refs = line_refs(tree, text)
    _Canonicaliser().visit(tree)
    dumps = [(_statement_name(s, i), ast.dump(s, include_attributes=False)) for i, s in enumerate(tree.body)]
    return Canonical(dumps, refs)


def _statement_name(stmt: ast.stmt, index: int) -> str:
    if isinstance(stmt, _DEFS):
        return stmt.name
    return f"module statement {index + 1} (line {stmt.lineno})"


def _inner_statements(stmt: ast.stmt) -> list[ast.stmt]:
    blocks = [getattr(stmt, f, []) for f in ("body", "orelse", "finalbody")]
    blocks += [h.body for h in getattr(stmt, "handlers", [])] + [c.body for c in getattr(stmt, "cases", [])]
    return [s for block in blocks for s in block]


def statements(tree: ast.Module) -> list[tuple[ast.stmt, str]]:
    """Every statement in pre-order, with the name of the top-level statement that holds it."""
    out: list[tuple[ast.stmt, str]] = []

    def walk(stmt: ast.stmt, owner: str) -> None:
        out.append((stmt, owner))
        for inner in _inner_statements(stmt):
            walk(inner, owner)

    for i, top in enumerate(tree.body):
        walk(top, _statement_name(top, i))
    return out


CO_REF = re.compile(r"[\w.+-]+\.co:\d+")


def line_refs(tree: ast.Module, text: str) -> list[tuple[int, str, str]]:
    """(statement index, top-level owner, ``x.co:LINE``) of every ``.co:LINE`` in a comment.

    A comment belongs to the innermost statement whose lines hold it (its pre-order index among the
    module's statements, -1 between top-level statements), so a reference that moves to another
    statement is a difference while reformatting is not.
    """
    stmts = statements(tree)
    innermost: dict[int, int] = {}  # line -> index of the innermost statement holding it
    for i, (s, _) in enumerate(stmts):  # pre-order: inner statements come later and overwrite
        for line in range(s.lineno, (s.end_lineno or s.lineno) + 1):
            innermost[line] = i
    refs: list[tuple[int, str, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and (found := CO_REF.findall(tok.string)):
            index = innermost.get(tok.start[0], -1)
            owner = stmts[index][1] if index >= 0 else "<module>"
            refs.extend((index, owner, ref) for ref in found)
    return refs


def semantic_difference(golden: str, actual: str) -> str | None:
    """Why two module texts differ beyond temporaries' names and formatting; None when they do not."""
    if golden == actual:
        return None
    try:
        want, got = canonical(golden), canonical(actual)
    except SyntaxError as e:
        return f"does not parse: {e}"
    if want.statements != got.statements:
        return _first_statement_difference(want.statements, got.statements)
    if want.refs != got.refs:
        return _first_ref_difference(want.refs, got.refs)
    return None


def _first_statement_difference(want: list[tuple[str, str]], got: list[tuple[str, str]]) -> str:
    for (wname, wdump), (gname, gdump) in zip(want, got):
        if wname != gname:
            return f"top-level '{gname}' where the golden has '{wname}'"
        if wdump != gdump:
            return f"'{wname}' differs (beyond names of temporaries and formatting)"
    return f"{len(got)} top-level statements where the golden has {len(want)}"


def _first_ref_difference(want: list[tuple[int, str, str]], got: list[tuple[int, str, str]]) -> str:
    for w, g in zip(want, got):
        if w != g:
            return (
                f".co:LINE comments differ in '{w[1]}': golden {w[2]} (statement {w[0]}), now {g[2]} (statement {g[0]})"
            )
    return f"{len(got)} .co:LINE comments where the golden has {len(want)}"


# ---------------------------------------------------------------------------------------------
# comparison of a case with its golden


def text_diff(golden: str, actual: str, name: str, limit: int = DIFF_LINES) -> str:
    lines = list(
        difflib.unified_diff(golden.splitlines(), actual.splitlines(), f"golden/{name}", f"now/{name}", lineterm="")
    )
    if len(lines) > limit:
        lines = [*lines[:limit], f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)


def compare(case: Case, golden: Output | None, out: Output) -> str | None:
    """A failure message, or None when ``out`` matches the golden."""
    footer = f"accept with: {ACCEPT_CMD}  (or: python tests/golden_tool.py --accept --only '{case.key}')"
    if golden is None:
        return f"{case.id}: no golden at {shown(case.golden_diag)}\n{footer}"
    problems: list[str] = []
    if (golden.source is None) != (out.source is None):
        was, now = ("raised CroqError", "translates") if golden.source is None else ("translated", "raises CroqError")
        problems.append(f"{case.id}: {now}; the golden {was}")
    elif golden.source is not None and out.source is not None:
        why = semantic_difference(golden.source, out.source)
        if why is not None:
            diff = text_diff(golden.source, out.source, case.golden_py.name)
            problems.append(f"{case.id}: generated module: {why}\ngolden: {shown(case.golden_py)}\n{diff}")
    if golden.diag != out.diag:
        diff = text_diff(golden.diag, out.diag, case.golden_diag.name)
        problems.append(f"{case.id}: diagnostics differ\ngolden: {shown(case.golden_diag)}\n{diff}")
    if golden.ir != out.ir:  # the IR compares exactly: it is the lifting's and the schedule's output
        diff = text_diff(golden.ir, out.ir, case.golden_ir.name)
        problems.append(f"{case.id}: tile IR differs\ngolden: {shown(case.golden_ir)}\n{diff}")
    return "\n\n".join([*problems, footer]) if problems else None


def shown(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def accepting() -> bool:
    return os.environ.get(ACCEPT_ENV, "") not in ("", "0")


def check(case: Case, accept: bool = False) -> tuple[str | None, Output]:
    """Compare ``case`` with its golden (rewrite the golden instead when ``accept``); the failure
    message (None when it matches) and what was generated."""
    out = generate(case)
    if "internal error" in (out.raw or "") + out.diag:  # a translator bug is never a golden
        return f"{case.id}: the translation reports an internal error (a bug to fix, not to accept)", out
    if accept:
        write_golden(case, out)
        return None, out
    return compare(case, read_golden(case), out), out


# ---------------------------------------------------------------------------------------------
# command line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--accept", action="store_true", help="rewrite the goldens (and remove stale ones)")
    ap.add_argument(
        "--only", metavar="PATTERN", help="glob on corpus/<path> or examples/<name>, e.g. 'examples/gemm_*'"
    )
    args = ap.parse_args(argv)
    failures = 0
    for group in ROOTS:
        if not group_present(group):
            print(f"skipped {group}: {ROOTS[group]} is not present")
            continue
        selected = [c for c in cases(group) if args.only is None or fnmatch.fnmatchcase(c.key, args.only)]
        for case in selected:
            try:
                message, _ = check(case, accept=args.accept)
            except Exception as e:  # a compiler bug: report it, keep going, write nothing
                message = f"{case.id}: internal error: {type(e).__name__}: {e}"
            if message is not None:
                failures += 1
                print(message, end="\n\n")
        if args.accept:
            for p in remove_stale(group, args.only):
                print(f"removed stale {shown(p)}")
        print(f"{group}: {len(selected)} cases {'written' if args.accept else 'compared'}")
    if failures:
        print(f"{failures} cases differ from their goldens")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
