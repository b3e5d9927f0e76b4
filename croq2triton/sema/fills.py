"""``mma.fill acc, v;`` re-initialises an accumulator (LANGUAGE.md 7.9: ``acc = mma.fill v`` makes
one, an MMA accumulates into it); an operand fragment that ``mma.load`` filled from memory is no
accumulator, and filling it would throw away the data it was loaded for."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .writes import root_name


def fill_errors(fn: A.CoFunction) -> list[Diagnostic]:
    loaded: dict[str, A.MmaLoad] = {}  # names that last held an operand fragment of mma.load
    out: list[Diagnostic] = []
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.MmaLoad):
                target = n.result or (root.name if (root := root_name(n.target)) is not None else None)
                if target:
                    loaded[target] = n
            elif isinstance(n, (A.FragInit, A.FragDecl, A.MmaFill)) and _bound(n):
                for name in _bound(n):
                    loaded.pop(name, None)
            elif isinstance(n, A.MmaOp):
                root = root_name(n.acc)
                if root is not None:
                    loaded.pop(root.name, None)
            if isinstance(n, A.MmaFill) and n.target is not None:
                root = root_name(n.target)
                load = loaded.get(root.name) if root is not None else None
                if root is not None and load is not None:
                    out.append(
                        Diagnostic(
                            "error",
                            f"'mma.fill' re-initialises an accumulator; '{root.name}' is an operand fragment"
                            f" 'mma.load' filled (line {load.span.line if load.span else '?'})",
                            n.span,
                            "make an accumulator with 'acc = mma.fill 0.0f;' and pass the loaded fragment to 'mma'",
                        )
                    )
    return out


def _bound(n: A.Stmt) -> list[str]:
    """The fragment names a statement (re)binds as accumulators."""
    if isinstance(n, A.MmaFill):
        return [n.result] if n.result else []
    if isinstance(n, A.FragInit):
        return [n.name]
    if isinstance(n, A.FragDecl):
        return [d.name for d in n.items]
    return []
