"""``parallel<s> ... : block`` (LANGUAGE.md 7.3): a kernel launch bound to the stream parameter
``s``.  The name is a ``stream`` parameter of the function, and only a block-level ``parallel`` (a
launch) has a stream: the levels inside a block run on its stream."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .levels import kernels, nested_parallels, pby_levels


def stream_errors(fn: A.CoFunction) -> list[Diagnostic]:
    params = {p.name: p for p in fn.params if p.name}
    levels = pby_levels(fn)
    out: list[Diagnostic] = []
    for top in kernels(fn):
        for par in nested_parallels(top):
            if par.stream is None:
                continue
            p = params.get(par.stream)
            if p is None or p.type.kind != "stream":
                why = f"'{par.stream}' is not a parameter" if p is None else f"'{par.stream}' is {_type(p)}"
                out.append(
                    Diagnostic(
                        "error",
                        f"'parallel<{par.stream}>' binds the launch to a stream parameter, and {why}",
                        par.span,
                        f"declare a parameter 'stream {par.stream}'",
                    )
                )
            level = levels.get(id(par.levels[0]), "block")
            if level not in ("block", "cluster"):
                out.append(
                    Diagnostic(
                        "error",
                        f"only a block-level 'parallel' (a launch) has a stream; this ': {level}' level runs on its"
                        " block's",
                        par.span,
                        f"drop '<{par.stream}>' here, or bind the enclosing ': block' parallel to it",
                    )
                )
    return out


def _type(p: A.Param) -> str:
    t = p.type
    if t.kind == "spanned":
        return "a tensor parameter"
    return f"a{'n' if (t.elem or t.kind)[0] in 'aeiou' else ''} '{t.elem or t.kind}' parameter"
