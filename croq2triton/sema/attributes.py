"""``[[launch_bounds(max_threads, min_blocks [, max_cluster])]]`` and ``[[maxnreg(n)]]`` before a
``parallel`` (LANGUAGE.md 7.3): attributes of a kernel, so only of a block-level ``parallel``, with
one to three (``launch_bounds``) or one (``maxnreg``) compile-time integer arguments.  ``_`` lets the
compiler choose; ``max_threads`` may be 0 (the same), the other counts are positive; a
``max_threads`` below the block's thread count could not launch it.  croq2triton checks them as the
language states them (Triton chooses its own registers and occupancy: they change nothing in the
translation).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Diagnostic
from ..frontend import ast as A
from .consteval import constant_values
from .levels import block_threads, chains, kernels, nested_parallels, pby_levels
from .scopes import resolve
from .tiling import source_text

ARITY = {"launch_bounds": (1, 3), "maxnreg": (1, 1)}
Value = Callable[[A.Expr], int | None]
ROLES = {"launch_bounds": ("max_threads", "min_blocks", "max_cluster"), "maxnreg": ("register count",)}


def attribute_errors(fn: A.CoFunction) -> list[Diagnostic]:
    levels = pby_levels(fn)
    value = constant_values(resolve(fn))
    out: list[Diagnostic] = []
    for top in kernels(fn):
        for par in nested_parallels(top):
            for at in par.attrs:
                out.extend(_attribute(at, par, levels, value, top))
    return out


def _attribute(
    at: A.PbAttr, par: A.Parallel, levels: dict[int, str], value: Value, top: A.Parallel
) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    name = f"[[{at.name}]]"
    level = levels.get(id(par.levels[0]), "block")
    if level not in ("block", "cluster"):
        out.append(
            Diagnostic(
                "error",
                f"'{name}' is an attribute of a kernel: it goes before a block-level 'parallel', not a ': {level}' one",
                at.span,
                f"move it before the 'parallel' of ': block' that launches this {level} level",
            )
        )
    lo, hi = ARITY[at.name]
    if not lo <= len(at.args) <= hi:
        takes = f"{lo} to {hi} arguments" if lo != hi else "1 argument"
        out.append(
            Diagnostic("error", f"'{name}' takes {takes} ({', '.join(ROLES[at.name])}), {len(at.args)} given", at.span)
        )
        return out
    values: list[int | None] = []
    for k, arg in enumerate(at.args):
        role = ROLES[at.name][k]
        v = _blank_or_value(arg, value)
        if v == "blank":
            values.append(None)
            continue
        if isinstance(_strip(arg), A.FloatLit):
            out.append(
                Diagnostic("error", f"the {role} of '{name}' must be an integer, not '{source_text(arg)}'", arg.span)
            )
            values.append(None)
            continue
        if v is None:
            out.append(
                Diagnostic(
                    "error",
                    f"the {role} of '{name}' must be a compile-time integer constant: '{source_text(arg)}' is not",
                    arg.span,
                    "a kernel's attributes are fixed when it is compiled: write a literal or a #define",
                )
            )
            values.append(None)
            continue
        assert isinstance(v, int)
        positive = at.name == "maxnreg" or k > 0
        if v < 0 or (positive and v == 0):
            need = "a positive integer" if positive else "a non-negative integer (0: the compiler chooses)"
            out.append(Diagnostic("error", f"the {role} of '{name}' must be {need}, not {v}", arg.span))
            values.append(None)
            continue
        values.append(v)
    if at.name == "launch_bounds" and values and values[0]:
        most = max((c[0] for c in (block_threads(ch, value) for ch in chains(top)) if c is not None), default=None)
        if most is not None and most > values[0]:
            out.append(
                Diagnostic(
                    "error",
                    f"'{name}' allows at most {values[0]} threads a block, but this kernel's blocks have {most}",
                    at.args[0].span,
                    f"raise max_threads to {most} or more (0 or '_' lets the compiler choose)",
                )
            )
    return out


def _strip(e: A.Expr) -> A.Expr:
    while isinstance(e, A.Paren):
        e = e.expr
    if isinstance(e, A.Unary) and e.op == "-":
        return _strip(e.operand)
    return e


def _blank_or_value(e: A.Expr, value: Value) -> int | str | None:
    s = _strip(e)
    if isinstance(s, A.Name) and s.name == "_":
        return "blank"
    return value(e)
