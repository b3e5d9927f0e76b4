"""The Croqtile preprocessor (LANGUAGE.md section 2) and the file split (section 1).

One line-oriented pass over the file does both jobs, as upstream's ``copp``
does: it evaluates ``#if``/``#ifdef``/... everywhere, tracks where ``__co__``
functions begin and end (comment- and string-aware), expands macros only inside
``__co__`` functions (host text is passed through for the C++ compiler), keeps
``#define``\\ s made inside a function local to it, and rewrites ``#pragma croq
intrinsic`` into the statement form the DSL lexer understands.

The result is the preprocessed text, a :class:`SourceMap` from every output
column back to the original file, line and column (``#line`` honoured), and the
list of regions (host text, ``__co__`` functions, device-code islands).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ..errors import REGISTRY, CroqSyntaxError, Diagnostic, SourceMap, Span

# C's binary operators from the loosest to the tightest (#if expressions; __device__ bodies)
C_BINARY_LEVELS: tuple[tuple[str, ...], ...] = (
    ("||",),
    ("&&",),
    ("|",),
    ("^",),
    ("&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
)

RegionKind = Literal["host", "co", "device"]

_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*([A-Za-z_]\w*)")
_KNOWN = {"define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif", "pragma", "line", "include"}
_CODE_TOKEN = re.compile(
    r"""(?P<lc>//)|(?P<bc>/\*)|(?P<raw>R"(?P<delim>[^()\\ \t\n"]{0,16})\()"""
    r"""|(?P<str>"(?:[^"\\\n]|\\.)*"?)|(?P<chr>'(?:[^'\\\n]|\\.)*'?)"""
    r"""|(?P<id>[A-Za-z_]\w*)|(?P<num>\d[\w.']*)|(?P<p>[{}();])"""
)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_MACRO_SCAN = re.compile(
    r"""(?P<str>"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)|(?P<id>[A-Za-z_]\w*)|(?P<num>\d[\w.]*)"""
)
_MAX_EXPANSION = 200_000
_MAX_LINE = 2147483647


@dataclass
class Macro:
    name: str
    params: list[str] | None
    body: str
    span: Span | None = None
    command_line: bool = False  # seeded by ``-D NAME=VALUE``
    forced: bool = False  # a tuning point's value: the file's own ``#define`` / ``#undef`` of it is ignored
    paste: Span | None = None  # a C token paste '##' in the body (LANGUAGE.md 2: no '#' / '##' operators)

    @property
    def origin(self) -> str:
        return f"command line -D {self.name}={self.body}"


@dataclass
class MacroUse:
    """DSL text that came from expanding a ``-D`` macro whose value is not an integer.

    ``start``/``end`` are offsets in the preprocessed text (the whole top-level expansion the
    macro took part in); ``tokens`` are the identifiers and literals its value expands to, so a
    check can tell which nodes of that text the macro produced.
    """

    start: int
    end: int
    name: str
    value: str
    tokens: frozenset[str]
    via: str  # the macro written in the source (``name`` itself, or one that expands to it)


@dataclass
class Region:
    kind: RegionKind
    start: int
    end: int
    span: Span | None = None


@dataclass
class FilePragma:
    offset: int
    kind: Literal["prefix", "namespace"]
    name: str


@dataclass
class PPResult:
    text: str
    smap: SourceMap
    regions: list[Region]
    pragmas: list[FilePragma]
    filename: str
    notes: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    cmdline_uses: list[MacroUse] = field(default_factory=list)


class _Cond:
    __slots__ = ("active", "taken", "parent", "else_seen", "span")

    def __init__(self, active: bool, taken: bool, parent: bool, span: Span) -> None:
        self.active = active
        self.taken = taken
        self.parent = parent
        self.else_seen = False
        self.span = span


# A piece of an output line: text, original line, original column, exact mapping?
Piece = tuple[str, int, int, bool]


class Preprocessor:
    def __init__(
        self, text: str, filename: str, defines: dict[str, str] | None = None, forced: dict[str, str] | None = None
    ) -> None:
        self.src = text
        self.filename = filename
        self.globals: dict[str, Macro] = {}
        for name, value in (defines or {}).items():
            self.globals[name] = Macro(name, None, "1" if value is None else str(value), command_line=True)
        for name, value in (forced or {}).items():
            self.globals[name] = Macro(name, None, "1" if value is None else str(value), command_line=True, forced=True)
        self.warnings: list[Diagnostic] = []
        self.cmdline_uses: list[MacroUse] = []
        self.locals: dict[str, Macro] | None = None
        self.cond: list[_Cond] = []
        # logical position of the current physical line
        self.cur_file = filename
        self.line_delta = 0  # logical line = physical line + delta
        # boundary state
        self.mode: str = "host"  # host | co_head | co_body | device | cok
        self.depth = 0
        self.paren = 0
        self.head_seen = False
        self.host_depth = 0
        self.in_comment = False
        self.comment_start = (0, 0)
        self.raw_end: str | None = None
        self.region_start = 0
        self.region_span: Span | None = None
        self.co_start_line = 0
        # output
        self.out_lines: list[list[Piece]] = []
        self.out_files: list[str] = []
        self.out_pos = 0
        self.regions: list[Region] = []
        self.pragmas: list[FilePragma] = []

    # ---- positions -------------------------------------------------------
    def _span(self, phys_line: int, col: int, width: int = 1) -> Span:
        return Span.at(self.cur_file, phys_line + self.line_delta, col, phys_line + self.line_delta, col + width)

    def error(self, msg: str, phys_line: int, col: int = 1, width: int = 1, hint: str | None = None) -> CroqSyntaxError:
        return CroqSyntaxError(msg, self._span(phys_line, col, width), hint)

    @property
    def active(self) -> bool:
        return not self.cond or self.cond[-1].active

    @property
    def macros(self) -> dict[str, Macro]:
        return self.locals if self.locals is not None else self.globals

    # ---- main loop --------------------------------------------------------
    def run(self) -> PPResult:
        lines = self.src.split("\n")
        n = len(lines)
        i = 0
        while i < n:
            phys = i + 1
            line = lines[i]
            m = _DIRECTIVE.match(line) if not self.in_comment and self.raw_end is None else None
            if m and (m.group(1) in _KNOWN or self.mode == "host"):
                # join continuation lines
                text = line
                j = i
                while text.endswith("\\") and j + 1 < n:
                    j += 1
                    text = text[:-1] + " " + lines[j]
                self._directive(m.group(1), text, phys, m.start(1) + 1)
                i = j + 1
                continue
            if self.active:
                self._code_line(line, phys)
            i += 1
        if self.cond:
            c = self.cond[-1]
            raise CroqSyntaxError("unterminated conditional directive (missing '#endif')", c.span, "add '#endif'")
        if self.in_comment:
            cl, cc = self.comment_start
            raise CroqSyntaxError(
                "unterminated comment", Span.at(self.cur_file, cl, cc, cl, cc + 2), "close it with '*/'"
            )
        if self.mode in ("co_head", "co_body"):
            eof_line = n + self.line_delta
            raise CroqSyntaxError(
                "un-terminated '__co__' function is detected (end of file reached inside it)",
                Span.at(self.cur_file, eof_line, 1),
                f"the function starting at line {self.co_start_line} is missing its closing '}}'",
            )
        if self.mode in ("device", "cok"):
            self._close_region("device", self.out_pos)
        text_parts: list[str] = []
        for pieces in self.out_lines:
            text_parts.append("".join(p[0] for p in pieces))
        text = "\n".join(text_parts)
        smap = SourceMap(text)
        for idx, pieces in enumerate(self.out_lines):
            segs: list[tuple[int, str, int, int, bool]] = []
            col = 0
            f = self.out_files[idx]
            for ptext, pline, pcol, exact in pieces:
                if ptext:
                    segs.append((col, f, pline, pcol, exact))
                    col += len(ptext)
            if not segs:
                segs.append((0, f, pieces[0][1] if pieces else 0, 1, True))
            smap.set_line(idx, segs)
        if self.mode == "host":
            self._close_region("host", len(text))
        regions = [r for r in self.regions if r.end > r.start or r.kind != "host"]
        for r in regions:
            r.end = min(r.end, len(text))
        return PPResult(
            text, smap, regions, self.pragmas, self.filename, warnings=self.warnings, cmdline_uses=self.cmdline_uses
        )

    # ---- output helpers ---------------------------------------------------
    def _emit(self, pieces: list[Piece]) -> None:
        self.out_lines.append(pieces)
        self.out_files.append(self.cur_file)
        self.out_pos += sum(len(p[0]) for p in pieces) + 1

    def _close_region(self, kind: RegionKind, end: int) -> None:
        if end > self.region_start or kind != "host":
            self.regions.append(Region(kind, self.region_start, end, self.region_span))
        self.region_start = end
        self.region_span = None

    # ---- directives -------------------------------------------------------
    def _directive(self, word: str, text: str, phys: int, col: int) -> None:
        logical = phys + self.line_delta
        rest = text[_DIRECTIVE.match(text).end() :]  # type: ignore[union-attr]
        rest_nc = _strip_comments(rest).strip()
        span = self._span(phys, col - 1, len(word) + 1)
        if word in ("if", "ifdef", "ifndef"):
            parent = self.active
            if not parent:
                val = False
            elif word == "if":
                val = self._eval(rest_nc, phys, col)
            else:
                name_m = _IDENT.match(rest_nc)
                if not name_m:
                    raise self.error(f"#{word} needs a macro name", phys, col, len(word))
                val = (name_m.group(0) in self.macros) == (word == "ifdef")
            self.cond.append(_Cond(parent and val, parent and val, parent, span))
            return
        if word == "elif":
            if not self.cond:
                raise self.error("#elif without #if", phys, col, len(word))
            c = self.cond[-1]
            if c.else_seen:
                raise self.error("#elif after #else", phys, col, len(word))
            if c.parent and not c.taken:
                val = self._eval(rest_nc, phys, col)
                c.active = val
                c.taken = val
            else:
                c.active = False
            return
        if word == "else":
            if not self.cond:
                raise self.error("#else without #if", phys, col, len(word))
            c = self.cond[-1]
            if c.else_seen:
                raise self.error("#else after #else", phys, col, len(word))
            c.else_seen = True
            c.active = c.parent and not c.taken
            c.taken = True
            return
        if word == "endif":
            if not self.cond:
                raise self.error("#endif without #if", phys, col, len(word))
            self.cond.pop()
            return
        if not self.active:
            return
        in_co = self.mode in ("co_head", "co_body")
        if word == "define":
            self._define(rest, phys, col)
            if not in_co:
                self._emit([(text, logical, 1, True)])
            return
        if word == "undef":
            name_m = _IDENT.match(rest_nc)
            if not name_m:
                raise self.error("#undef needs a macro name", phys, col, len(word))
            old = self.macros.get(name_m.group(0))
            if old is None or not old.forced:  # a tuning point's value stays
                self.macros.pop(name_m.group(0), None)
            if not in_co:
                self._emit([(text, logical, 1, True)])
            return
        if word == "line":
            m = re.match(r'(\d+)(?:\s+"([^"]*)")?\s*$', rest_nc)
            if not m:
                raise self.error("malformed #line directive", phys, col, len(word), 'write #line NUMBER "file"')
            digits = m.group(1).lstrip("0")
            if not digits or len(digits) > 10 or int(digits) > _MAX_LINE:
                raise self.error(
                    f"#line number out of range (1 to {_MAX_LINE})", phys, col, len(word), 'write #line NUMBER "file"'
                )
            if m.group(2) is not None:
                self.cur_file = m.group(2)
            # the next physical line gets the given number
            self.line_delta = int(m.group(1)) - (phys + 1)
            return
        if word == "pragma":
            m = re.match(r"(croq|choreo)\s+intrinsic\b(.*)$", rest_nc)
            if m:
                items = m.group(2).split()
                if not items or len(items) % 2:
                    raise self.error(
                        "malformed intrinsic pragma",
                        phys,
                        col,
                        len(word),
                        "write '#pragma croq intrinsic prefix NAME' or '... namespace NAME'",
                    )
                stmts: list[str] = []
                for k in range(0, len(items), 2):
                    kind, name = items[k], items[k + 1]
                    if kind not in ("prefix", "namespace") or not _IDENT.fullmatch(name):
                        raise self.error(f"malformed intrinsic pragma item '{kind} {name}'", phys, col, len(word))
                    if name in ("croq", "choreo"):
                        raise self.error(
                            f"'{name}' is reserved and cannot be an intrinsic {kind}", phys, col, len(word)
                        )
                    if in_co:
                        stmts.append(f'__pragma_croq_intrinsic_{kind}("{name}");')
                    else:
                        self.pragmas.append(FilePragma(self.out_pos, kind, name))  # type: ignore[arg-type]
                if in_co:
                    self._emit([(" ".join(stmts), logical, 1, False)])
                else:
                    self._emit([(text, logical, 1, True)])
                return
        # #include, other pragmas, unknown directives in host text: passed through
        self._emit([(text, logical, 1, True)])

    def _define(self, rest: str, phys: int, col: int) -> None:
        rest = _strip_comments(rest)
        m = re.match(r"\s*([A-Za-z_]\w*)", rest)
        if not m:
            raise self.error("#define needs a macro name", phys, col, 6, "write '#define NAME value'")
        name = m.group(1)
        after = rest[m.end() :]
        params: list[str] | None = None
        if after.startswith("("):
            close = after.find(")")
            if close < 0:
                raise self.error(f"missing ')' in the parameter list of macro '{name}'", phys, col, 6)
            raw = after[1:close].strip()
            params = [p.strip() for p in raw.split(",")] if raw else []
            for p in params:
                if p == "..." or p.endswith("..."):
                    raise self.error(
                        f"macro '{name}' is variadic: the preprocessor has no '...' parameters or __VA_ARGS__",
                        phys,
                        col,
                        6,
                        "name each parameter (LANGUAGE.md 2)",
                    )
                if not _IDENT.fullmatch(p):
                    raise self.error(f"bad parameter '{p}' in macro '{name}'", phys, col, 6)
            body = after[close + 1 :].strip()
        else:
            body = after.strip()
            if body == "":
                body = "1"
        table = self.macros
        old = table.get(name)
        if old is not None and old.forced and params is None:
            return  # a tuning point sets this parameter: the file's own value gives way (no warning)
        if old is not None and (old.params is not None or params is not None):
            raise self.error(
                f"function-like macro '{name}' is redefined",
                phys,
                col,
                6,
                f"'#undef {name}' first, or give the new macro another name",
            )
        name_col = col + 6 + m.start(1)
        if old is not None and " ".join(old.body.split()) == " ".join(body.split()):
            return  # the same definition again: silent, and the first one stays the reference
        if old is not None:
            self._redefined(old, body, phys, name_col)
        paste_at = rest.find("##", m.end())
        paste = self._span(phys, col + 6 + paste_at, 2) if paste_at >= 0 else None
        table[name] = Macro(name, params, body, self._span(phys, name_col, len(name)), paste=paste)

    def _redefined(self, old: Macro, body: str, phys: int, col: int) -> None:
        """Warn about an object-like macro defined again with another value.

        Which value wins: the later ``#define``, as in a C preprocessor and in upstream's
        ``copp`` (LANGUAGE.md section 2: ``-D`` only *seeds* the global table, a ``#define``
        then replaces the entry).  The host C++ compiler sees the same ``#define`` after the
        ``-D`` and lets it win too, so the DSL sizes and the host code agree.  To let ``-D``
        choose, the file guards its default with ``#ifndef NAME``.  Redefining with the same
        value is silent (C compares the replacement lists), and so is a ``#define`` inside a
        ``__co__`` function that overrides a file-level ``#define``: that is the documented
        function scoping, not a redefinition; overriding a ``-D`` there still warns.
        """
        name = old.name
        in_co = self.mode in ("co_head", "co_body")
        if in_co and not old.command_line and self.globals.get(name) is old:
            return
        value = " ".join(body.split())
        span = self._span(phys, col, len(name))
        scope = " in this function" if in_co else ""
        if old.command_line:
            self.warnings.append(
                Diagnostic(
                    "warning",
                    f"'{name}' redefined: this #define's value {value} is used{scope}, not -D {name}={old.body}",
                    span,
                    f"to let -D choose the value, guard the #define with '#ifndef {name}' ... '#endif'",
                    [Diagnostic("note", f"previous definition: {old.origin}")],
                )
            )
            return
        prev = " ".join(old.body.split())
        self.warnings.append(
            Diagnostic(
                "warning",
                f"'{name}' redefined: the new value {value} is used from here on{scope} (it was {prev})",
                span,
                f"'#undef {name}' first if the change is meant",
                [Diagnostic("note", "previous definition is here", old.span)],
            )
        )

    # ---- #if expressions --------------------------------------------------
    def _eval(self, expr: str, phys: int, col: int) -> bool:
        try:
            return _IfExpr(expr, self.macros).value() != 0
        except _IfError as e:
            raise self.error(f"invalid #if expression: {e}", phys, col, 2) from None
        except RecursionError:
            raise self.error("invalid #if expression: nested too deeply", phys, col, 2) from None

    # ---- code lines -------------------------------------------------------
    def _code_line(self, line: str, phys: int) -> None:
        logical = phys + self.line_delta
        pieces: list[Piece] = []
        pos = 0
        n = len(line)
        line_out_start = self.out_pos
        out_col = 0

        def emit_raw(a: int, b: int) -> None:
            nonlocal out_col
            if b > a:
                pieces.append((line[a:b], logical, a + 1, True))
                out_col += b - a

        def emit_code(a: int, b: int) -> None:
            nonlocal out_col
            if b <= a:
                return
            if self.mode in ("co_head", "co_body"):
                for p in self._expand_segment(line, a, b, logical, phys, line_out_start + out_col):
                    pieces.append(p)
                    out_col += len(p[0])
            else:
                emit_raw(a, b)

        while pos < n:
            if self.in_comment:
                end = line.find("*/", pos)
                if end < 0:
                    emit_raw(pos, n)
                    pos = n
                    break
                emit_raw(pos, end + 2)
                pos = end + 2
                self.in_comment = False
                continue
            if self.raw_end is not None:
                end = line.find(self.raw_end, pos)
                if end < 0:
                    emit_raw(pos, n)
                    pos = n
                    break
                emit_raw(pos, end + len(self.raw_end))
                pos = end + len(self.raw_end)
                self.raw_end = None
                continue
            seg_start = pos
            m = None
            for m in _CODE_TOKEN.finditer(line, pos):
                kind = m.lastgroup
                if kind in ("id", "num"):
                    if kind == "id":
                        word = m.group("id")
                        if self.mode == "host":
                            if word == "__co__":
                                emit_code(seg_start, m.start())
                                self._close_region("host", line_out_start + out_col)
                                self.mode = "co_head"
                                self.paren = 0
                                self.head_seen = False
                                self.depth = 0
                                self.co_start_line = logical
                                self.region_span = self._span(phys, m.start() + 1, 6)
                                self.locals = dict(self.globals)
                                seg_start = m.start()
                            elif word in ("__device__", "__co_device__") and self.host_depth == 0:
                                emit_code(seg_start, m.start())
                                self._close_region("host", line_out_start + out_col)
                                self.mode = "device"
                                self.depth = 0
                                seg_start = m.start()
                            elif word in ("__cok__", "__real_cok__") and self.host_depth == 0:
                                rest = _strip_comments(line[m.end() :]).lstrip()
                                if rest and not rest.startswith("{"):
                                    off = m.end() + (len(line[m.end() :]) - len(line[m.end() :].lstrip()))
                                    raise self.error(
                                        "unexpected character outside of kernel code",
                                        phys,
                                        off + 1,
                                        hint=f"'{word}' must be followed by a '{{ ... }}' block",
                                    )
                                emit_code(seg_start, m.start())
                                self._close_region("host", line_out_start + out_col)
                                self.mode = "cok"
                                self.depth = 0
                                seg_start = m.start()
                    continue
                if kind == "p":
                    ch = m.group("p")
                    if self.mode == "host":
                        if ch == "{":
                            self.host_depth += 1
                        elif ch == "}":
                            self.host_depth = max(0, self.host_depth - 1)
                    elif self.mode == "co_head":
                        if ch == "(":
                            self.paren += 1
                            self.head_seen = True
                        elif ch == ")":
                            self.paren -= 1
                        elif ch == "{" and self.paren <= 0 and self.head_seen:
                            self.mode = "co_body"
                            self.depth = 1
                    elif self.mode == "co_body":
                        if ch == "{":
                            self.depth += 1
                        elif ch == "}":
                            self.depth -= 1
                            if self.depth == 0:
                                emit_code(seg_start, m.end())
                                self._close_region("co", line_out_start + out_col)
                                self.mode = "host"
                                self.locals = None
                                seg_start = m.end()
                    elif self.mode in ("device", "cok"):
                        if ch == "{":
                            self.depth += 1
                        elif ch == "}":
                            self.depth -= 1
                            if self.depth == 0:
                                emit_code(seg_start, m.end())
                                self._close_region("device", line_out_start + out_col)
                                self.mode = "host"
                                seg_start = m.end()
                        elif ch == ";" and self.depth == 0 and self.mode == "device":
                            emit_code(seg_start, m.end())
                            self._close_region("device", line_out_start + out_col)
                            self.mode = "host"
                            seg_start = m.end()
                    continue
                if kind in ("str", "chr"):
                    continue
                # comments and raw strings: flush code before them
                emit_code(seg_start, m.start())
                if kind == "lc":
                    emit_raw(m.start(), n)
                    pos = n
                    break
                if kind == "bc":
                    end = line.find("*/", m.end())
                    if end < 0:
                        emit_raw(m.start(), n)
                        self.in_comment = True
                        self.comment_start = (logical, m.start() + 1)
                        pos = n
                        break
                    emit_raw(m.start(), end + 2)
                    pos = end + 2
                    break
                if kind == "raw":
                    term = ")" + m.group("delim") + '"'
                    end = line.find(term, m.end())
                    if end < 0:
                        emit_raw(m.start(), n)
                        self.raw_end = term
                        pos = n
                        break
                    emit_raw(m.start(), end + len(term))
                    pos = end + len(term)
                    break
            else:
                emit_code(seg_start, n)
                pos = n
        if not pieces:
            pieces.append(("", logical, 1, True))
        self._emit(pieces)

    # ---- macro expansion --------------------------------------------------
    def _expand_segment(self, line: str, a: int, b: int, logical: int, phys: int, base: int) -> list[Piece]:
        """Expand macros in ``line[a:b]``; ``base`` is where its text lands in the output."""
        macros = self.macros
        text = line[a:b]
        if not macros or not any(k in text for k in macros):
            return [(text, logical, a + 1, True)]
        out: list[Piece] = []
        last = a
        pos = a
        budget = [_MAX_EXPANSION]
        while True:
            m = _MACRO_SCAN.search(line, pos, b)
            if not m:
                break
            if m.lastgroup != "id" or m.group("id") not in macros:
                pos = m.end()
                continue
            name = m.group("id")
            mac = macros[name]
            end = m.end()
            args: list[str] | None = None
            if mac.params is not None:
                parsed = _parse_args(line, end, b)
                if parsed is None:
                    pos = end
                    continue
                args, end = parsed
                if len(args) == 1 and args[0].strip() == "" and not mac.params:
                    args = []
                if len(args) != len(mac.params):
                    raise self.error(
                        f"macro '{name}' takes {len(mac.params)} argument(s), {len(args)} given",
                        phys,
                        m.start() + 1,
                        len(name),
                    )
            if m.start() > last:
                out.append((line[last : m.start()], logical, last + 1, True))
            used: set[str] = set()
            try:
                expanded = _expand(name, args, macros, frozenset(), budget, used)
            except _PasteError as e:
                raise self._paste_error(e.macro, name, phys, m.start() + 1) from None
            except _IfError as e:
                raise self.error(str(e), phys, m.start() + 1, len(name)) from None
            except RecursionError:
                raise self.error(f"the expansion of macro '{name}' is nested too deeply", phys, m.start() + 1) from None
            if used:
                start = base + sum(len(p[0]) for p in out)
                self._record_cmdline_uses(used, start, start + len(expanded), name)
            out.append((expanded, logical, m.start() + 1, False))
            last = pos = end
        if b > last:
            out.append((line[last:b], logical, last + 1, True))
        return out

    def _paste_error(self, mac: Macro, used: str, phys: int, col: int) -> CroqSyntaxError:
        """A macro whose body pastes tokens with C's '##', expanded in a ``__co__`` function: the
        error is at its ``#define``, a note at the use (host code may use it: the C++ compiler
        expands it there)."""
        err = CroqSyntaxError(
            f"macro '{mac.name}' pastes tokens with '##': the preprocessor of Croqtile has no '#' or '##' operators",
            mac.paste,
            "write the pasted name out in the function, or define a macro for the whole name (LANGUAGE.md 2)",
        )
        via = f" (through '{used}')" if used != mac.name else ""
        err.diagnostics[0].notes.append(
            Diagnostic("note", f"'{mac.name}' is expanded here{via}", self._span(phys, col, len(used)))
        )
        return err

    def _record_cmdline_uses(self, used: set[str], start: int, end: int, via: str) -> None:
        """Remember where ``-D`` macros with a non-integer value were expanded (sema reports
        them where a size needs an integer; elsewhere such a value may be meant, e.g. a type)."""
        for name in sorted(used):
            mac = self.macros[name]
            try:
                full = _expand(name, None, self.macros, frozenset(), [_MAX_EXPANSION])
            except (_IfError, RecursionError):
                full = mac.body
            if not _is_integer_text(full):
                tokens = frozenset(re.findall(r"[A-Za-z_]\w*|\d[\w.]*", full))
                self.cmdline_uses.append(MacroUse(start, end, name, mac.body, tokens, via))


class _IfError(Exception):
    pass


class _PasteError(_IfError):
    """A macro whose body has C's '##' was expanded."""

    def __init__(self, macro: Macro) -> None:
        super().__init__(f"macro '{macro.name}' pastes tokens with '##', which the preprocessor does not have")
        self.macro = macro


def _is_integer_text(text: str) -> bool:
    """Is ``text`` an integer constant expression (numbers and operators only, no names)?"""
    text = text.strip()
    pos = 0
    while pos < len(text):
        m = _IF_TOKEN.match(text, pos)
        if not m or m.group("id"):
            return False
        pos = m.end()
    try:
        _IfExpr(text, {}).value()
    except (_IfError, RecursionError):
        return False
    return True


def _parse_args(text: str, pos: int, limit: int) -> tuple[list[str], int] | None:
    """Arguments of a function-like macro call starting at ``pos`` (before '(')."""
    i = pos
    while i < limit and text[i] in " \t":
        i += 1
    if i >= limit or text[i] != "(":
        return None
    depth = 0
    args: list[str] = []
    cur_start = i + 1
    j = i
    while j < limit:
        c = text[j]
        if c == '"' or c == "'":
            k = j + 1
            while k < limit and text[k] != c:
                k += 2 if text[k] == "\\" else 1
            j = k + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append(text[cur_start:j])
                return [x.strip() for x in args], j + 1
        elif c == "," and depth == 1:
            args.append(text[cur_start:j])
            cur_start = j + 1
        j += 1
    return None


def _expand(
    name: str,
    args: list[str] | None,
    macros: dict[str, Macro],
    hide: frozenset[str],
    budget: list[int],
    used: set[str] | None = None,
) -> str:
    """The expansion of macro ``name``; ``used`` collects the ``-D`` macros taking part."""
    mac = macros[name]
    if used is not None and mac.command_line:
        used.add(name)
    if mac.paste is not None:
        raise _PasteError(mac)
    body = mac.body
    if mac.params is not None and args is not None:
        exp_args = [_rescan(a, macros, hide, budget, used) for a in args]
        sub = dict(zip(mac.params, exp_args, strict=True))
        body = _IDENT.sub(lambda m: sub.get(m.group(0), m.group(0)), body)
    return _rescan(body, macros, hide | {name}, budget, used)


def _rescan(
    text: str, macros: dict[str, Macro], hide: frozenset[str], budget: list[int], used: set[str] | None = None
) -> str:
    budget[0] -= len(text) + 1
    if budget[0] < 0:
        raise _IfError("macro expansion is too large (recursive macro?)")
    out: list[str] = []
    pos = 0
    last = 0
    n = len(text)
    while True:
        m = _MACRO_SCAN.search(text, pos)
        if not m:
            break
        word = m.group("id") if m.lastgroup == "id" else None
        if word is None or word not in macros or word in hide:
            pos = m.end()
            continue
        mac = macros[word]
        end = m.end()
        args = None
        if mac.params is not None:
            parsed = _parse_args(text, end, n)
            if parsed is None:
                pos = end
                continue
            args, end = parsed
            if len(args) == 1 and args[0] == "" and not mac.params:
                args = []
            if len(args) != len(mac.params):
                raise _IfError(f"macro '{word}' takes {len(mac.params)} argument(s), {len(args)} given")
        out.append(text[last : m.start()])
        out.append(_expand(word, args, macros, hide, budget, used))
        last = pos = end
    out.append(text[last:])
    return "".join(out)


def _strip_comments(s: str) -> str:
    s = re.sub(r"/\*.*?\*/", " ", s)
    i = s.find("//")
    return s if i < 0 else s[:i]


_IF_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|\d+)[uUlL]*|(?P<id>[A-Za-z_]\w*)|(?P<op>&&|\|\||<<|>>|<=|>=|==|!=|[-+*/%<>!~&|^?:()]))"
)


class _IfExpr:
    """Integer expression of ``#if`` / ``#elif`` (C semantics, unknown names are 0)."""

    def __init__(self, text: str, macros: dict[str, Macro]) -> None:
        self.toks: list[tuple[str, str]] = []
        self._lex(text, macros, frozenset(), 0)
        self.i = 0

    def _lex(self, text: str, macros: dict[str, Macro], hide: frozenset[str], depth: int) -> None:
        if depth > 64:
            raise _IfError("macro nesting too deep")
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _IF_TOKEN.match(text, pos)
            if not m:
                raise _IfError(f"unexpected '{text[pos:].strip()[:20]}'")
            pos = m.end()
            if m.group("num"):
                self.toks.append(("num", m.group("num")))
            elif m.group("id"):
                word = m.group("id")
                if word == "defined":
                    m2 = re.match(r"\s*(\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))", text[pos:])
                    if not m2:
                        raise _IfError("'defined' needs a macro name")
                    nm = m2.group(2) or m2.group(3)
                    self.toks.append(("num", "1" if nm in macros else "0"))
                    pos += m2.end()
                elif word in macros and word not in hide:
                    mac = macros[word]
                    if mac.params is not None:
                        parsed = _parse_args(text, pos, len(text))
                        if parsed is None:
                            self.toks.append(("num", "0"))
                            continue
                        args, pos = parsed
                        budget = [_MAX_EXPANSION]
                        body = _expand(word, args, macros, hide, budget)
                    else:
                        body = mac.body
                    self._lex(body, macros, hide | {word}, depth + 1)
                else:
                    self.toks.append(("num", "0"))
            elif m.group("op"):
                self.toks.append(("op", m.group("op")))
            else:
                break

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise _IfError("unexpected end of expression")
        t = self.toks[self.i]
        self.i += 1
        return t

    def value(self) -> int:
        if not self.toks:
            raise _IfError("empty expression")
        v = self.ternary()
        if self.i != len(self.toks):
            raise _IfError(f"unexpected '{self.toks[self.i][1]}'")
        return v

    def ternary(self) -> int:
        c = self.binary(0)
        if self.peek() == "?":
            self.take()
            a = self.ternary()
            if self.take()[1] != ":":
                raise _IfError("expected ':'")
            b = self.ternary()
            return a if c else b
        return c

    _LEVELS = C_BINARY_LEVELS

    def binary(self, level: int) -> int:
        if level == len(self._LEVELS):
            return self.unary()
        v = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()[1]
            if op == "||":
                r = self.binary(level + 1)
                v = int(bool(v) or bool(r))
                continue
            if op == "&&":
                r = self.binary(level + 1)
                v = int(bool(v) and bool(r))
                continue
            r = self.binary(level + 1)
            v = _apply(op, v, r)
        return v

    def unary(self) -> int:
        t = self.peek()
        if t in ("-", "+", "!", "~"):
            self.take()
            v = self.unary()
            return _wrap({"-": -v, "+": v, "!": int(not v), "~": ~v}[t])
        kind, val = self.take()
        if kind == "num":
            if len(val) > 1 and val[0] == "0" and val[1] not in "xX":
                if val.strip("01234567"):
                    raise _IfError(f"invalid digit in octal constant '{val}'")
                if int(val, 8) >= 1 << 64:
                    raise _IfError(f"integer constant '{val[:24]}' is too large")
                return _wrap(int(val, 8))
            # (checking the length first keeps int() below Python's digit limit)
            if len(val) > 64 or int(val, 0) >= 1 << 64:
                raise _IfError(f"integer constant '{val[:24]}' is too large")
            return _wrap(int(val, 0))
        if val == "(":
            v = self.ternary()
            if self.take()[1] != ")":
                raise _IfError("expected ')'")
            return v
        raise _IfError(f"unexpected '{val}'")


def _wrap(v: int) -> int:
    """``v`` as a 64-bit two's-complement value (``#if`` arithmetic is intmax_t)."""
    return ((v + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


def _apply(op: str, a: int, b: int) -> int:
    return _wrap(_apply_exact(op, a, b))


def _apply_exact(op: str, a: int, b: int) -> int:
    if op in ("/", "%") and b == 0:
        raise _IfError("division by zero")
    if op == "/":
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if op == "%":
        return a - b * _apply("/", a, b)
    ops = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "<<": lambda: a << b if 0 <= b < 64 else 0,
        ">>": lambda: a >> b if 0 <= b < 64 else 0,
        "<": lambda: int(a < b),
        ">": lambda: int(a > b),
        "<=": lambda: int(a <= b),
        ">=": lambda: int(a >= b),
        "==": lambda: int(a == b),
        "!=": lambda: int(a != b),
        "&": lambda: a & b,
        "|": lambda: a | b,
        "^": lambda: a ^ b,
    }
    return ops[op]()


def preprocess(
    text: str, filename: str = "<input>", defines: dict[str, str] | None = None, forced: dict[str, str] | None = None
) -> PPResult:
    """Run the preprocessor and split the file into regions.

    ``defines`` seed the macro table as ``-D`` does (a later ``#define`` in the file wins, with a
    warning); ``forced`` ones are a tuning point's values (croq2triton/options.py ``Point``): they win
    over the file's own ``#define`` and ``#undef`` of the name, silently, so that a sweep can vary a
    parameter the file defines without an ``#ifndef`` guard."""
    REGISTRY.add(filename, text)
    return Preprocessor(text, filename, defines, forced).run()
