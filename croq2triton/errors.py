"""Source positions and diagnostics.

Every user-facing problem is a :class:`CroqError` carrying one or more
:class:`Diagnostic`\\ s.  A diagnostic prints as::

    file.co:12:5: error: message
       12 |     dma.copy a => b
          |     ^~~~
    hint: how to fix it

Internal bugs are ordinary Python exceptions; they never masquerade as
diagnostics.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "note"]


class SourceMap:
    """Maps offsets of a (preprocessed) text back to original file positions.

    The text is split into lines; each output line owns a list of segments
    ``(out_col, file, line, col, exact)``.  An exact segment maps column by
    column; an inexact one (text that came from a macro expansion) maps every
    column to the segment's origin.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        find = text.find
        i = find("\n")
        while i != -1:
            starts.append(i + 1)
            i = find("\n", i + 1)
        self.line_starts = starts
        self.segments: list[list[tuple[int, str, int, int, bool]]] = [[] for _ in starts]

    def set_line(self, out_line: int, segments: list[tuple[int, str, int, int, bool]]) -> None:
        self.segments[out_line] = segments

    def locate(self, offset: int) -> tuple[str, int, int]:
        """Return (file, line, col), 1-based, of ``offset`` in the output text."""
        offset = max(0, min(offset, len(self.text)))
        out_line = bisect.bisect_right(self.line_starts, offset) - 1
        col0 = offset - self.line_starts[out_line]
        segs = self.segments[out_line] if out_line < len(self.segments) else []
        if not segs:
            return ("<unknown>", out_line + 1, col0 + 1)
        idx = bisect.bisect_right([s[0] for s in segs], col0) - 1
        if idx < 0:
            idx = 0
        out_col, file, line, col, exact = segs[idx]
        if exact:
            return (file, line, col + (col0 - out_col))
        return (file, line, col)


class Span:
    """A half-open range of a source text, resolved to file positions lazily."""

    __slots__ = ("_map", "start", "end", "_resolved")

    def __init__(self, smap: SourceMap | None, start: int, end: int) -> None:
        self._map = smap
        self.start = start
        self.end = max(end, start)
        self._resolved: tuple[str, int, int, int, int] | None = None

    @classmethod
    def at(cls, file: str, line: int, col: int, end_line: int | None = None, end_col: int | None = None) -> Span:
        s = cls(None, 0, 0)
        s._resolved = (file, line, col, end_line or line, end_col or col + 1)
        return s

    @property
    def offsets_known(self) -> bool:
        """Do ``start``/``end`` index a preprocessed text (not a span made by :meth:`at`)?"""
        return self._map is not None

    def _resolve(self) -> tuple[str, int, int, int, int]:
        if self._resolved is None:
            if self._map is None:
                self._resolved = ("<unknown>", 0, 0, 0, 0)
            else:
                f, ln, c = self._map.locate(self.start)
                ef, eln, ec = self._map.locate(self.end) if self.end > self.start else (f, ln, c + 1)
                if ef != f:
                    eln, ec = ln, c + 1
                self._resolved = (f, ln, c, eln, ec)
        return self._resolved

    @property
    def file(self) -> str:
        return self._resolve()[0]

    @property
    def line(self) -> int:
        return self._resolve()[1]

    @property
    def col(self) -> int:
        return self._resolve()[2]

    @property
    def end_line(self) -> int:
        return self._resolve()[3]

    @property
    def end_col(self) -> int:
        return self._resolve()[4]

    def to(self, other: Span | None) -> Span:
        """The span from the start of ``self`` to the end of ``other``."""
        if other is None or other._map is not self._map:
            return self
        return Span(self._map, min(self.start, other.start), max(self.end, other.end))

    def __repr__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def __deepcopy__(self, memo: dict[int, object]) -> Span:
        """A span itself: nothing changes one, and a copy of a node need not copy the source map."""
        return self

    # Spans never take part in AST equality.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Span)

    def __hash__(self) -> int:
        return 0


@dataclass
class Diagnostic:
    severity: Severity
    message: str
    span: Span | None = None
    hint: str | None = None
    notes: list[Diagnostic] = field(default_factory=list)

    def format(self, sources: SourceRegistry | None = None) -> str:
        reg = sources or REGISTRY
        out: list[str] = []
        if self.span is not None and self.span.line > 0:
            out.append(f"{self.span.file}:{self.span.line}:{self.span.col}: {self.severity}: {self.message}")
            text = reg.line(self.span.file, self.span.line)
            if text is not None:
                text = text.rstrip("\n").expandtabs(1)
                if len(text) > 240:
                    text = text[:240] + " ..."
                lineno = str(self.span.line)
                out.append(f" {lineno} | {text}")
                col = max(1, self.span.col)
                width = 1
                if self.span.end_line == self.span.line and self.span.end_col > col:
                    width = min(self.span.end_col - col, max(1, len(text) - col + 1))
                out.append(" " * (len(lineno) + 1) + " | " + " " * (col - 1) + "^" + "~" * (width - 1))
        elif self.span is not None and self.span.file not in ("<unknown>", ""):
            out.append(f"{self.span.file}: {self.severity}: {self.message}")
        else:
            out.append(f"{self.severity}: {self.message}")
        if self.hint:
            out.append(f"hint: {self.hint}")
        for n in self.notes:
            out.append(n.format(reg))
        return "\n".join(out)


class SourceRegistry:
    """Original texts of the files seen in this process, for caret lines."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    def add(self, name: str, text: str) -> None:
        self._lines[name] = text.split("\n")

    def has(self, name: str) -> bool:
        return name in self._lines

    def line(self, name: str, line: int) -> str | None:
        lines = self._lines.get(name)
        if lines is None or not (1 <= line <= len(lines)):
            return None
        return lines[line - 1]


REGISTRY = SourceRegistry()


class CroqError(Exception):
    """A problem in the user's program or inputs, with source positions."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None) -> None:
        self.diagnostics = [Diagnostic("error", message, span, hint)]
        super().__init__(message)

    @classmethod
    def many(cls, diags: list[Diagnostic]) -> CroqError:
        err = cls(diags[0].message, diags[0].span, diags[0].hint)
        err.diagnostics = list(diags)
        return err

    @property
    def span(self) -> Span | None:
        return self.diagnostics[0].span

    @property
    def message(self) -> str:
        return self.diagnostics[0].message

    def format(self) -> str:
        return "\n".join(d.format() for d in self.diagnostics)

    def __str__(self) -> str:
        return self.format()


class CroqWarning(UserWarning):
    """A problem the user should see that does not stop the call (``croq2triton.load`` of a file
    whose functions do not all translate): its text is the formatted diagnostic, caret included.

    It is also made from that text alone (``CroqWarning(*w.args)``), as pytest-xdist rebuilds the
    warnings of its workers: the diagnostic is then the text, unlocated."""

    def __init__(self, diagnostic: Diagnostic | str) -> None:
        if isinstance(diagnostic, str):
            diagnostic = Diagnostic("warning", diagnostic)
            text = diagnostic.message
        else:
            text = diagnostic.format()
        self.diagnostic = diagnostic
        super().__init__(text)


class CroqSyntaxError(CroqError):
    """The text is not valid Croqtile (lexer, preprocessor or parser)."""


class CroqSemanticError(CroqError):
    """The program parses but is not meaningful."""


class CroqLoweringError(CroqError):
    """Valid Croqtile that cannot be expressed in Triton."""


class CroqInternalError(CroqError):
    """A bug of the translator met while translating one kernel, located at the kernel's ``.co``
    line so the file's other functions still translate and the report says where to look; the
    message says plainly that it is not the user's mistake."""

    def __init__(self, what: str, span: Span | None) -> None:
        super().__init__(
            f"internal error: {what}",
            span,
            "this is a bug in croq2triton, not in your program; CROQ2TRITON_DEBUG=1 shows the traceback",
        )


@contextmanager
def internal_errors(what: str, span: Span | None, *expected: type[Exception]) -> Iterator[None]:
    """Inside ``what`` (a stage of translating one function or kernel) an exception that is neither
    a :class:`CroqError` nor one of ``expected`` (the stage's "not covered") is a bug: reported as
    an internal error located at ``span`` (``CROQ2TRITON_DEBUG=1`` re-raises it)."""
    try:
        yield
    except (CroqError, *expected):
        raise
    except Exception as e:
        if os.environ.get("CROQ2TRITON_DEBUG"):
            raise
        raise CroqInternalError(f"{type(e).__name__} in {what}: {e}", span) from e
