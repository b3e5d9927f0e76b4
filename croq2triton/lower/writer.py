"""A small indented code writer that ties generated lines to ``.co`` lines."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import Span


class Writer:
    def __init__(self, src_name: str, indent: int = 1) -> None:
        self.lines: list[str] = []
        self.depth = indent
        self.src_name = src_name
        self._last_src: int | None = None

    def line(self, text: str, span: Span | None = None) -> None:
        comment = ""
        if span is not None and span.line > 0 and span.line != self._last_src:
            comment = f"  # {self.src_name}:{span.line}"
            self._last_src = span.line
        self.lines.append("    " * self.depth + text + comment)

    def comment(self, text: str) -> None:
        self.lines.append("    " * self.depth + "# " + text)

    @contextmanager
    def block(self, header: str, span: Span | None = None) -> Iterator[None]:
        self.line(header, span)
        self.depth += 1
        n = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == n:
                self.line("pass")
            self.depth -= 1
            self._last_src = None

    def text(self) -> str:
        return "\n".join(self.lines)
