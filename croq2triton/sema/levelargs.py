"""``: LEVEL(IDENT)`` names a target only on ``: device`` (LANGUAGE.md 5: ``level := ':' LEVEL ['('
IDENT ')'] ...  # (IDENT) only for 'device'``): ``: block(cpu)`` would place a block somewhere, which
no level but ``device`` does.  (Which targets ``device`` takes is checked in sema/checks.py.)"""

from __future__ import annotations

from ..errors import Diagnostic, Span
from ..frontend import ast as A
from .tiling import span_text


def level_arg_errors(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if isinstance(n, A.PBy) and n.level_arg is not None and n.level != "device":
            out.append(
                Diagnostic(
                    "error",
                    f"': {n.level}({n.level_arg})': only the ': device' level names a target",
                    _arg_span(n) or n.span,
                    f"write ': {n.level}'; to run a region on '{n.level_arg}', put it in"
                    f" 'parallel by 1 : device({n.level_arg}) {{ .. }}'",
                )
            )
    return out


def _arg_span(n: A.PBy) -> Span | None:
    """The span of ``(IDENT)`` in the level's text, where it is on the level's line."""
    sp, text = n.span, span_text(n.span)
    if sp is None or text is None:
        return None
    colon = text.rfind(":")
    at = text.find("(", colon + 1) if colon >= 0 else -1
    close = text.find(")", at + 1) if at >= 0 else -1
    if at < 0 or close < 0 or n.level_arg not in text[at:close]:
        return None
    return Span.at(sp.file, sp.line, sp.col + at, sp.line, sp.col + close + 1)
