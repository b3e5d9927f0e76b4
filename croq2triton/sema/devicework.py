"""Work that exists only inside a kernel, written between launches, and launch attributes on the
wrong level (LANGUAGE.md 7.3):

* fragments belong to a kernel's threads: ``mma.fill``, ``mma.load``, an MMA, ``mma.store``,
  ``mma.scale``, ``apply`` and the fragment utilities (``reduce_*``, ``all_reduce_sum``,
  ``copy``) outside every ``parallel`` are errors ("events and fragments only inside a parallel");
* a raw named barrier ``__bar_sync`` / ``__bar_arrive`` (7.7) synchronises threads of a block:
  between launches there are none.  (7.3 puts ``call``, ``__asm__`` and intrinsic calls inside
  ``parallel`` too, but upstream accepts a ``call`` and an intrinsic call between launches -- its
  parse tests ``chunkat.co`` and ``intrinsic_scope.co`` -- so croq2triton refuses them as forms it
  does not translate, not as errors);
* ``<cooperative>`` asks for a cooperative launch of a grid of blocks: it belongs to a ``block``
  level (``: block<cooperative>``); on a cluster, group or thread level it is an error.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic
from ..frontend import ast as A

_FRAGMENT_WORK = {
    A.MmaFill: "mma.fill",
    A.MmaLoad: "mma.load",
    A.MmaOp: "an MMA",
    A.MmaStore: "mma.store",
    A.MmaScale: "mma.scale",
    A.Apply: "apply",
    A.FragOp: "",
}


def device_work_errors(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for s in _host_statements(fn.body):
        name = _FRAGMENT_WORK.get(type(s))
        if name is not None:
            what = f"'{s.op}'" if isinstance(s, A.FragOp) else f"'{name}'" if name != "an MMA" else name
            out.append(
                Diagnostic(
                    "error",
                    f"{what} outside 'parallel': fragments belong to the threads of a kernel",
                    s.span,
                    "move it into the 'parallel' whose threads own the fragment",
                )
            )
            continue
        for n in _own_nodes(s):
            if isinstance(n, A.Call) and n.kind == "bar":
                out.append(_outside(n, f"the named barrier '{n.name}'"))
    for n in fn.walk():
        if isinstance(n, A.PBy) and n.cooperative and n.level != "block":
            level = f"the ': {n.level}' level" if n.level else "a level without ': block'"
            out.append(
                Diagnostic(
                    "error",
                    f"'<cooperative>' on {level}: a cooperative launch is asked of a grid of blocks",
                    n.span,
                    "write it on the block level: 'parallel p by N : block<cooperative>'",
                )
            )
    return out


def _outside(n: A.Node, what: str) -> Diagnostic:
    return Diagnostic(
        "error",
        f"{what} outside 'parallel': it synchronises the threads of a block, and between launches there are none",
        n.span,
        "move it into the 'parallel' whose threads meet at it",
    )


def _host_statements(stmts: list[A.Stmt]) -> Iterator[A.Stmt]:
    """The statements outside every ``parallel``, nested ones included."""
    for s in stmts:
        if isinstance(s, A.Parallel):
            continue
        yield s
        for c in s.children():
            if isinstance(c, A.Block):
                yield from _host_statements(c.stmts)
            elif isinstance(c, A.Stmt):
                yield from _host_statements([c])


def _own_nodes(s: A.Stmt) -> Iterator[A.Node]:
    """The nodes of ``s`` that are not in a statement nested in it."""
    stack: list[A.Node] = list(s.children())
    while stack:
        n = stack.pop()
        if isinstance(n, A.Stmt):
            continue
        yield n
        stack.extend(n.children())
