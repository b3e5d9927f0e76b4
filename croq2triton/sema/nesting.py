"""Where ``inthreads`` and asynchronous ``parallel`` may stand (LANGUAGE.md 7.3, 7.4):

* ``inthreads (pred)`` selects the instances of a ``parallel`` that satisfy ``pred``; outside any
  ``parallel`` there are no instances to select;
* only an outermost ``inthreads`` may be ``.async`` (the roles of a warp-specialised kernel);
* ``parallel.async`` makes a kernel launch non-blocking: a ``parallel`` nested in another launches
  nothing, so it cannot be ``.async`` (a stream on one is sema/streams.py's).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic
from ..frontend import ast as A


def nesting_errors(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for s, in_parallel, in_threads in _walk(fn.body, False, False):
        if isinstance(s, A.InThreads):
            if not in_parallel:
                out.append(
                    Diagnostic(
                        "error",
                        "'inthreads' outside 'parallel': its predicate selects instances of a 'parallel',"
                        " and there are none here",
                        s.span,
                        "put the 'inthreads' inside the 'parallel' whose indices its predicate tests",
                    )
                )
            elif s.is_async and in_threads:
                out.append(
                    Diagnostic(
                        "error",
                        "an 'inthreads.async' inside another 'inthreads': only an outermost 'inthreads' may be"
                        " '.async'",
                        s.span,
                        "drop '.async', or make this 'inthreads' a sibling of the outer one",
                    )
                )
        elif isinstance(s, A.Parallel) and in_parallel and s.is_async:
            out.append(
                Diagnostic(
                    "error",
                    "an inner 'parallel' cannot be '.async': only the outermost 'parallel' launches a kernel",
                    s.span,
                    "drop '.async' here; put it on the outermost 'parallel'",
                )
            )
    return out


def _walk(stmts: list[A.Stmt], in_parallel: bool, in_threads: bool) -> Iterator[tuple[A.Stmt, bool, bool]]:
    for s in stmts:
        yield s, in_parallel, in_threads
        inner_p = in_parallel or isinstance(s, A.Parallel)
        inner_t = in_threads or isinstance(s, A.InThreads)
        for c in s.children():
            if isinstance(c, A.Block):
                yield from _walk(c.stmts, inner_p, inner_t)
            elif isinstance(c, A.Stmt):
                yield from _walk([c], inner_p, inner_t)
