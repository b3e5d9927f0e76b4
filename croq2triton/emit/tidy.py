"""The last step of every generated module: simplify its one-line statements, then format.

Before the module is formatted, every one-line statement is parsed back into a Python ``ast`` and
simplified where the result is the same value of the same shape (the rules are in
:class:`Simplify`; the tile-IR emitter already writes canonical statements, so on the corpus and
examples this changes no syntax tree today and stays as a net for what a new emission spells
out), temporaries nothing reads are dropped, its redundant parentheses drop out when it is printed
again, and a full-line comment or a docstring over the line limit is wrapped.

Then the module goes through ``ruff format`` (line length 120), so what a user reads is laid out
the way the Python world lays code out.  ruff is a dependency of the package; where it cannot be
run the module is returned unformatted (valid, only with longer lines), never changed in meaning.
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import textwrap
import tokenize
from functools import lru_cache

from .layout import LINE_LIMIT, docstring

_CO_LINE = re.compile(r"\S+\.co:\d+")
# Compound statement headers: parsed with a placeholder body.
_HEADERS = ("if ", "elif ", "else", "for ", "while ", "with ", "def ", "try", "except", "finally")


@lru_cache(maxsize=256)
def tidy(source: str) -> str:
    """``source`` simplified line by line, then formatted (see the module docstring); a module
    translated again (a test, a tuning sweep's repeated points) is not tidied again."""
    return format_source(simplify_lines(source))


# ------------------------------------------------------------------ simplification
def simplify_lines(source: str) -> str:
    try:
        tree: ast.Module | None = ast.parse(source)
    except SyntaxError:
        tree = None
    scalars = _Scalars(tree)
    single, comments = _line_kinds(source)
    dead = (_dead_lines(tree) if tree is not None else set()) & single
    lines = source.split("\n")
    out: list[str] = []
    for number, line in enumerate(lines, start=1):
        if number in dead:
            continue
        if number in comments:
            out.extend(_wrap_comment(line))
        else:
            out.extend(_line(line, scalars.at(number) if number in single else None))
    return "\n".join(out)


def _line_kinds(source: str) -> tuple[set[int], set[int]]:
    """The physical lines that hold one whole logical line each (statements laid out over several
    lines, and the lines inside multi-line strings, are not among them), and the comment lines."""
    out: set[int] = set()
    comments: set[int] = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out, comments
    first: int | None = None
    for tok in tokens:
        if tok.type == tokenize.COMMENT and tok.line.lstrip().startswith("#"):
            comments.add(tok.start[0])
        if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
            continue
        if tok.type == tokenize.NEWLINE:
            if first is not None and first == tok.start[0]:
                out.add(first)
            first = None
            continue
        if first is None:
            first = tok.start[0]
        if tok.end[0] != tok.start[0]:  # a multi-line string
            first = -1
    return out, comments


@lru_cache(maxsize=1 << 16)
def _line(line: str, scalars: frozenset[str] | None) -> tuple[str, ...]:
    """``line`` simplified (a pure function of its text and the scalars in scope: the variants of a
    kernel and a module translated again repeat most lines, so the results are kept)."""
    return tuple(_line_uncached(line, scalars))


def _line_uncached(line: str, scalars: frozenset[str] | None) -> list[str]:
    stripped = line.strip()
    indent = line[: len(line) - len(line.lstrip())]
    if scalars is None:
        return [line]
    if stripped.startswith('"""') and stripped.endswith('"""') and len(stripped) > 6:
        doc = stripped[3:-3]  # source text: a backslash in it is an escape, which repr() would double
        return docstring(doc, indent) if len(line) > LINE_LIMIT and "\\" not in doc else [line]
    if not stripped or stripped.startswith(("'", '"')):
        return [line]
    code, comment, kept = _split_comment(stripped)
    if code is None:
        return [line]
    above, comment = _comment_above(indent, code, comment)

    def rebuilt(text: str) -> list[str]:
        return [*above, indent + text + ("  " + comment if comment else "")]

    if kept == "strings":  # adjacent literals would be joined by printing them again
        return rebuilt(code)
    header = code.endswith(":") and code.startswith(_HEADERS)
    try:
        tree = ast.parse(code + "\n    pass" if header else code)
    except SyntaxError:
        return [line]
    before = ast.dump(tree)
    new = Simplify(scalars).visit(tree)
    if kept == "numbers" and ast.dump(new) == before:  # keep 0x7FC00000 as written
        return rebuilt(code)
    ast.fix_missing_locations(new)
    text = ast.unparse(new)
    if header:
        text = text.split("\n", 1)[0]
        if not text.endswith(":"):
            return [line]
    if "\n" in text:  # a decorator, or a statement that unparses to several lines: keep the original
        return [line]
    if ast.dump(new) == before and len(text) >= len(code):
        text = code  # nothing to drop (ast.unparse even adds parentheses to `a and b and c == d`)
    return rebuilt(text)


def _comment_above(indent: str, code: str, comment: str) -> tuple[list[str], str]:
    """A trailing comment that makes its line too long goes above the statement. Where the statement
    is too long by itself (ruff breaks it anyway), its final ``file.co:N`` part stays, at the end of
    the statement's last line; where only the comment makes it too long, all of it goes above
    (ruff would break the statement to make room for the comment)."""
    if not comment or len(indent) + len(code) + 2 + len(comment) <= LINE_LIMIT:
        return [], comment
    parts = [p.strip() for p in comment.lstrip("#").split("  # ")]
    keep = None
    if len(indent) + len(code) > LINE_LIMIT and _CO_LINE.fullmatch(parts[-1]):
        keep = parts.pop()
    above = [line for p in parts for line in _wrap_comment(indent + "# " + p)]
    return above, ("# " + keep if keep else "")


def _split_comment(code: str) -> tuple[str | None, str, str]:
    """(the statement, its trailing comment, what printing it again would lose) of one physical
    line: "strings" where two string literals are adjacent (they would be joined), "numbers" where
    a number is spelled otherwise than Python prints it (``0x7FC00000``, ``1e-6``), else ""."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None, "", ""
    kept = ""
    if any(a.type == b.type == tokenize.STRING for a, b in zip(tokens, tokens[1:])):
        kept = "strings"
    elif any(t.type == tokenize.NUMBER and t.string != repr(ast.literal_eval(t.string)) for t in tokens):
        kept = "numbers"
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            return code[: tok.start[1]].rstrip(), tok.string, kept
    return code, "", kept


def _wrap_comment(line: str) -> list[str]:
    if len(line) <= LINE_LIMIT:
        return [line]
    comment = line.lstrip()
    indent = line[: len(line) - len(comment)]
    body = comment.lstrip("#").strip()
    width = LINE_LIMIT - len(indent) - 2
    return [indent + "# " + part for part in textwrap.wrap(body, width, break_long_words=False)]


_PURE_CALLS = {"tl.arange", "tl.zeros", "tl.full", "tl.program_id", "tl.num_programs", "tl.cdiv", "min", "max"}


def _is_jit(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef) and any(
        ast.unparse(d).startswith("triton.jit") for d in node.decorator_list
    )


def _dead_lines(tree: ast.Module) -> set[int]:
    """The lines of ``@triton.jit`` functions that assign a name nothing in the function reads, from
    an expression without effects (``stage_5 = k % 2`` that nothing reads)."""
    out: set[int] = set()
    for fn in tree.body:
        if not _is_jit(fn):
            continue
        read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}
        for node in ast.walk(fn):
            for body in (getattr(node, "body", None), getattr(node, "orelse", None)):
                if not isinstance(body, list):
                    continue
                drop = [s for s in body if _dead(s, read)]
                if len(drop) < len(body):  # a block keeps at least one statement
                    out.update(s.lineno for s in drop if s.lineno == s.end_lineno)
    return out


def _dead(stmt: ast.stmt, read: set[str]) -> bool:
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    if stmt.targets[0].id in read:
        return False
    for n in ast.walk(stmt.value):
        if isinstance(n, ast.Call) and ast.unparse(n.func) not in _PURE_CALLS:
            return False
        if isinstance(n, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
    return True


class _Scalars:
    """Per line: the names that hold a scalar there (the parameters of the enclosing ``@triton.jit``
    function that are no pointers, tensor descriptors or scratch buffers), or every name in host
    code (``None`` only for lines that cannot be told)."""

    ANY = frozenset({"*"})

    def __init__(self, tree: ast.Module | None) -> None:
        self.ranges: list[tuple[int, int, frozenset[str]]] = []
        self.ok = tree is not None
        for node in tree.body if tree is not None else []:
            if isinstance(node, ast.FunctionDef):
                names = frozenset(_scalar_params(node)) if _is_jit(node) else self.ANY
                self.ranges.append((node.lineno, node.end_lineno or node.lineno, names))

    def at(self, line: int) -> frozenset[str] | None:
        if not self.ok:
            return None
        for first, last, names in self.ranges:
            if first <= line <= last:
                return names
        return self.ANY


def _scalar_params(fn: ast.FunctionDef) -> list[str]:
    out = []
    for a in fn.args.args:
        n = a.arg
        if n.endswith(("_ptr", "_scratch")) or "_desc" in n or n.startswith("desc"):
            continue
        out.append(n)
    return out


class Simplify(ast.NodeTransformer):
    """Rewrites that keep both the value and the shape of every expression:

    - integer constants fold (``(64) * 1 * (1 * 17)`` is ``1088``);
    - ``x * 1``, ``1 * x``, ``x - 0`` and ``x // 1`` are ``x``; so are ``x * 1.0`` and ``x - 0.0``
      where ``x`` is visibly a float block (``tl.full(..., tl.float32)``): on an integer they would
      change its type;
    - ``x + 0`` and ``0 + x`` are ``x`` only where ``x`` is visibly an integer (an integer literal,
      ``tl.program_id``, ``tl.arange``, a conversion to an integer type, arithmetic of those): for a
      float ``-0.0 + 0`` is ``+0.0``, so neither is ``x + 0.0``;
    - ``0 * x`` is ``0`` only where ``x`` is visibly an integer scalar: in a kernel
      ``0 * tl.arange(...)`` is a block of zeros, which ``0`` would not be, and ``0 * x`` of a float is
      NaN where ``x`` is NaN or infinite, ``-0.0`` where ``x`` is negative;
    - a conjunct repeated in a chain of ``&`` is written once (``a & a`` is ``a``).
    """

    def __init__(self, scalars: frozenset[str]) -> None:
        self.scalars = scalars

    def scalar(self, e: ast.expr) -> bool:
        if isinstance(e, ast.Constant):
            return isinstance(e.value, int) and not isinstance(e.value, bool)
        if isinstance(e, ast.Name):
            return "*" in self.scalars or e.id in self.scalars
        if isinstance(e, ast.Call):
            return ast.unparse(e.func) in _INT_SCALAR_CALLS
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            return self.scalar(e.left) and self.scalar(e.right)
        return False

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        left, right, op = node.left, node.right, node.op
        lv, rv = _int(left), _int(right)
        if lv is not None and rv is not None:
            folded = _fold(op, lv, rv)
            if folded is not None:
                return ast.Constant(folded)
        if lv is None and rv is None and isinstance(op, (ast.Sub, ast.Mult)):
            if _unit(right) is not None and _is_float(left):
                rv = _unit(right)
            elif _unit(left) is not None and _is_float(right) and not isinstance(op, ast.Sub):
                lv = _unit(left)
            if isinstance(op, ast.Mult) and 0.0 in (lv, rv):
                return node  # 0.0 * x is NaN where x is
        if isinstance(op, ast.Mult):
            if rv == 1:
                return left
            if lv == 1:
                return right
            if (lv == 0 and self.scalar(right) and _is_integer(right)) or (
                rv == 0 and self.scalar(left) and _is_integer(left)
            ):
                return ast.Constant(0)
        if isinstance(op, ast.Add):
            if rv == 0 and _is_integer(left):
                return left
            if lv == 0 and _is_integer(right):
                return right
        if isinstance(op, ast.Sub) and rv == 0:
            return left
        if isinstance(op, ast.FloorDiv) and rv == 1 and self.scalar(left):
            return left
        if isinstance(op, ast.BitAnd):
            return _dedup_conjuncts(node)
        return node


def _int(e: ast.expr) -> int | None:
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


_FLOAT_TYPES = {"tl.float16", "tl.float32", "tl.float64", "tl.bfloat16"}
_INT_TYPES = {f"tl.{s}int{n}" for s in ("", "u") for n in (8, 16, 32, 64)}
_INT_SCALAR_CALLS = {"tl.program_id", "tl.num_programs"}


def _is_integer(e: ast.expr) -> bool:
    """Is ``e`` visibly an integer (scalar or block), whatever its names hold?"""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, int) and not isinstance(e.value, bool)
    if isinstance(e, ast.Call) and e.args:
        func = ast.unparse(e.func)
        if func == "tl.arange" or func in _INT_SCALAR_CALLS:
            return True
        if func in ("tl.full", "tl.zeros", "tl.cast") or func.endswith(".to"):
            return ast.unparse(e.args[-1]) in _INT_TYPES
        return func == "tl.cdiv" and all(_is_integer(a) for a in e.args)
    if isinstance(e, ast.Call):
        return ast.unparse(e.func) in _INT_SCALAR_CALLS
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
        return _is_integer(e.left) and _is_integer(e.right)
    if isinstance(e, ast.Subscript):  # ``tl.arange(0, 64)[:, None]``
        return _is_integer(e.value)
    return False


def _is_float(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant):
        return isinstance(e.value, float)
    if isinstance(e, ast.Call) and e.args:
        func = ast.unparse(e.func)
        if func in ("tl.full", "tl.zeros") or func.endswith(".to"):
            return ast.unparse(e.args[-1]) in _FLOAT_TYPES
    return False


def _unit(e: ast.expr) -> float | None:
    """0.0 or 1.0 where ``e`` is that float literal."""
    if isinstance(e, ast.Constant) and isinstance(e.value, float) and e.value in (0.0, 1.0):
        return e.value if str(e.value)[0] != "-" else None  # (-0.0 is no unit)
    return None


def _fold(op: ast.operator, a: int, b: int) -> int | None:
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.FloorDiv) and b > 0 and a >= 0:  # Python and Triton agree on these
        return a // b
    return None


_PURE = (ast.Name, ast.Constant, ast.Compare, ast.BinOp, ast.UnaryOp, ast.Subscript, ast.Slice, ast.Tuple)


def _pure(e: ast.expr) -> bool:
    """No call but ``tl.arange`` in ``e``: evaluating it twice gives the same block."""
    for n in ast.walk(e):
        if isinstance(n, ast.Call):
            if ast.unparse(n.func) != "tl.arange":
                return False
        elif isinstance(n, ast.expr) and not isinstance(n, (*_PURE, ast.Attribute)):
            return False
    return True


def _dedup_conjuncts(node: ast.BinOp) -> ast.expr:
    items: list[ast.expr] = []
    e: ast.expr = node
    while isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitAnd):
        items.insert(0, e.right)
        e = e.left
    items.insert(0, e)
    seen: set[str] = set()
    kept: list[ast.expr] = []
    for it in items:
        key = ast.dump(it)
        if key in seen and _pure(it):
            continue
        seen.add(key)
        kept.append(it)
    out = kept[0]
    for it in kept[1:]:
        out = ast.BinOp(out, ast.BitAnd(), it)
    return out


# ------------------------------------------------------------------ formatting
def format_source(source: str) -> str:
    """``source`` through ``ruff format`` at line length 120; unchanged when ruff cannot run.

    Twice: ruff joins adjacent string literals that fit on one line only on a second pass."""
    binary = _ruff()
    if binary is None or os.environ.get("CROQ2TRITON_NO_FORMAT"):
        return source
    once = _ruff_format(binary, source)
    return _ruff_format(binary, once) if once is not source else source


def _ruff_format(binary: str, source: str) -> str:
    try:
        done = subprocess.run(
            [binary, "format", "--isolated", "--line-length", str(LINE_LIMIT), "--target-version", "py311", "-"],
            input=source,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return source
    return done.stdout if done.returncode == 0 and done.stdout else source


@lru_cache(maxsize=1)
def _ruff() -> str | None:
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError:
        return None
    try:
        return os.fspath(find_ruff_bin())
    except FileNotFoundError:
        return None
