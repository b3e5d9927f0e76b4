"""``... => dst after g`` orders a copy after the future ``g`` completes (LANGUAGE.md 7.8): ``g`` is a
future (of a copy, an asynchronous MMA, a ``dma.any`` / ``tma.any`` placeholder, a ``select`` of
futures).  A name the function declares only as something else (a buffer, a scalar, an event, a
fragment ...) is an error; an undeclared one is sema/misuse.py's."""

from __future__ import annotations

from ..errors import Diagnostic, Span
from ..frontend import ast as A
from .scopes import KIND_WORDS, Resolution
from .tiling import span_text

_WHAT = {k: v for k, v in KIND_WORDS.items() if k != "future"}  # (what certainly is no future)


def after_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    kinds: dict[str, set[str]] = {}
    for b in res.bindings:
        kinds.setdefault(b.name, set()).add(b.kind)
    futures = _future_names(fn)
    out: list[Diagnostic] = []
    for n in fn.walk():
        if not (isinstance(n, A.DmaStmt) and n.after is not None):
            continue
        g = n.after
        seen = kinds.get(g)
        if not seen or g in futures or not seen <= _WHAT.keys():
            continue  # undeclared (sema/misuse.py), a future, or bound to what cannot be told
        what = " or ".join(sorted(_WHAT[k] for k in seen))
        out.append(
            Diagnostic(
                "error",
                f"'after {g}': '{g}' is {what}, not a future",
                _after_span(n) or n.span,
                "'after' orders a copy after an earlier asynchronous one: name that copy's future"
                " ('f = dma.copy.async ..;', then '... => dst after f;')",
            )
        )
    return out


def _future_names(fn: A.CoFunction) -> set[str]:
    """The names some statement binds to a future."""
    out: set[str] = set()
    for n in fn.walk():
        if isinstance(n, (A.DmaStmt, A.DmaAny, A.MmaOp)) or isinstance(n, A.MmaLoad) and n.is_async:
            if n.result:
                out.add(n.result)
        elif isinstance(n, A.AssignStmt):
            for a in n.items:
                if isinstance(a.target, A.Name) and any(isinstance(x, A.Select) for x in a.value.walk()):
                    out.add(a.target.name)
    return out


def _after_span(n: A.DmaStmt) -> Span | None:
    """The span of ``after g`` in the statement's text, where the statement is on one line."""
    sp, text = n.span, span_text(n.span)
    if sp is None or text is None:
        return None
    at = text.rfind(" after ")
    if at < 0 or not text[at + 7 :].strip().startswith(str(n.after)):
        return None
    start = sp.col + at + 1
    return Span.at(sp.file, sp.line, start, sp.line, start + 6 + len(str(n.after)))
