"""Static checks that need no type inference (run by ``croq2triton check``).

Each check walks one function and reports diagnostics with spans.  Errors are
raised together as one :class:`CroqSemanticError`; warnings are returned.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import CroqSemanticError, Diagnostic
from ..frontend import ast as A

LEVEL_ORDER = {"cluster": 0, "block": 1, "group-4": 2, "group": 3, "thread": 4}


def _walk_stmts(stmts: list[A.Stmt], parallel_depth: int = 0) -> Iterator[tuple[A.Stmt, int]]:
    for s in stmts:
        yield s, parallel_depth
        inner = parallel_depth + (1 if isinstance(s, A.Parallel) else 0)
        body = getattr(s, "body", None)
        if isinstance(body, A.Stmt):
            yield from _walk_stmts(body.stmts if isinstance(body, A.Block) else [body], inner)
        if isinstance(s, A.If):
            for b in (s.then, s.other):
                if b is not None:
                    yield from _walk_stmts(b.stmts if isinstance(b, A.Block) else [b], inner)


def check_function(fn: A.CoFunction) -> tuple[list[Diagnostic], list[Diagnostic]]:
    errors: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    seen: dict[str, A.Param] = {}
    for p in fn.params:
        if p.name is None:
            continue
        if p.name in seen:
            errors.append(Diagnostic("error", f"parameter '{p.name}' is declared twice", p.span))
        seen[p.name] = p
        if p.ref and p.storage == "global":
            errors.append(Diagnostic("error", f"'&' is not allowed on the global parameter '{p.name}'", p.span))
        if p.ref and p.type.kind != "spanned":
            errors.append(Diagnostic("error", f"scalar parameter '{p.name}' cannot be passed by reference", p.span))
    for s, depth in _walk_stmts(fn.body):
        if isinstance(s, A.Return) and depth > 0:
            errors.append(
                Diagnostic(
                    "error", "'return' inside 'parallel'", s.span, "use 'yield' to leave the device program early"
                )
            )
        if isinstance(s, A.Parallel):
            last = -1
            for lvl in s.levels:
                if lvl.vars is not None and len(lvl.vars) != len(lvl.bound):
                    errors.append(
                        Diagnostic(
                            "error",
                            f"{len(lvl.vars)} parallel variable(s) but {len(lvl.bound)} bound(s)",
                            lvl.span,
                            "give one bound per variable: 'parallel {p, q} by [P, Q]'",
                        )
                    )
                if lvl.vars is not None and len(lvl.vars) > 3:
                    errors.append(Diagnostic("error", "a parallel level has at most 3 dimensions", lvl.span))
                if lvl.level in LEVEL_ORDER:
                    order = LEVEL_ORDER[lvl.level]
                    if order < last:
                        errors.append(
                            Diagnostic(
                                "error",
                                f"level ': {lvl.level}' is nested inside a finer level",
                                lvl.span,
                                "levels go from coarse to fine: cluster, block, group-4, group, thread",
                            )
                        )
                    last = order
        if isinstance(s, A.ScalarDecl) and s.mutable and s.type is None:
            for d in s.items:  # 'mutable x = v': the type comes from v
                if d.init is None and d.fill is None:
                    errors.append(
                        Diagnostic(
                            "error",
                            f"unable to deduce the type of '{d.name}'",
                            d.span or s.span,
                            f"give it a value or a type: 'mutable int {d.name} = 0;'",
                        )
                    )
                elif isinstance(d.init, A.ItupleLit):
                    errors.append(
                        Diagnostic(
                            "error", f"'{d.name}' is an ituple and cannot be declared 'mutable'", d.span or s.span
                        )
                    )
        if isinstance(s, (A.SpannedDecl, A.EventDecl)) and s.storage in ("shared", "local") and depth == 0:
            errors.append(Diagnostic("error", f"'{s.storage}' storage is only allowed inside 'parallel'", s.span))
        for node in (
            s.walk() if not isinstance(s, (A.Parallel, A.With, A.Foreach, A.If, A.While, A.InThreads, A.Apply)) else []
        ):
            if isinstance(node, A.Binary) and node.op in ("#*", "#/", "#%"):
                errors.append(
                    Diagnostic("error", f"the operator '{node.op}' is not supported", node.span, "use '#+' or '#-'")
                )
    return errors, warnings


def check_unit(tu: A.TranslationUnit) -> list[Diagnostic]:
    """Run every static check; raise on errors, return warnings."""
    errors: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    names: dict[str, A.CoFunction] = {}
    for fn in tu.functions:
        if fn.name in names:
            errors.append(Diagnostic("error", f"'__co__' function '{fn.name}' is defined twice", fn.span))
        names[fn.name] = fn
        e, w = check_function(fn)
        errors.extend(e)
        warnings.extend(w)
    if errors:
        raise CroqSemanticError.many(errors)
    return warnings
