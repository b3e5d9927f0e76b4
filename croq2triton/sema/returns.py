"""A function's ``return`` statements against its declared type (LANGUAGE.md 6).

* A ``void`` function returns no value: ``return x;`` is an error (``return;`` is not).
* A function of a declared type (``int``, ``f32``, ``f16 [M, N]`` ...) returns a value on every
  path: a path that reaches the end of the body, or a ``return;``, is an error.
* An ``auto`` function takes its type from its ``return x;`` statements: with none it is ``void``
  (as upstream deduces it), with some it returns a value on every path, as a declared type does.

A path ends in a ``return`` where the statement list holds one at its top level, or an ``if`` with
an ``else`` whose branches both end in one (or a ``with`` whose body does); a ``return`` inside a
loop does not end the path (the loop may not run), one inside ``parallel`` is an error of its own.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from ..frontend.printer import Printer


def return_errors(fn: A.CoFunction) -> list[Diagnostic]:
    host = _host_returns(fn.body)
    if fn.ret.kind == "void":
        return [
            Diagnostic(
                "error",
                f"the void function '{fn.name}' returns a value",
                r.span,
                "drop the value ('return;'), or declare the function's type (or 'auto') instead of 'void'",
            )
            for r in host
            if r.value is not None
        ]
    if fn.ret.kind == "auto" and all(r.value is None for r in host):
        return []  # returns nothing: 'void'
    declared = "'auto' with a 'return' of a value" if fn.ret.kind == "auto" else f"'{Printer().type(fn.ret)}'"
    out = [
        Diagnostic(
            "error",
            f"'{fn.name}' is declared {declared} but this 'return' gives no value",
            r.span,
            "return a value: 'return x;'",
        )
        for r in host
        if r.value is None
    ]
    out += _mismatched_values(fn, host, declared)
    if not _ends_in_return(fn.body):
        what = "has no 'return'" if not host else "can reach the end of its body without 'return'"
        out.append(
            Diagnostic(
                "error",
                f"the non-void function '{fn.name}' (declared {declared}) {what}",
                fn.name_span or fn.span,
                "end every path with 'return x;', or declare the function 'void'",
            )
        )
    return out


def _mismatched_values(fn: A.CoFunction, host: list[A.Return], declared: str) -> list[Diagnostic]:
    """``return 5;`` of a function of spanned data, ``return x;`` of a tensor parameter from a
    function of a scalar type: a value of the other kind."""
    out: list[Diagnostic] = []
    tensors = {p.name for p in fn.params if p.name is not None and p.type.kind == "spanned"}
    for r in host:
        if r.value is None:
            continue
        value = r.value.expr if isinstance(r.value, A.Paren) else r.value
        if fn.ret.kind == "spanned" and _literal(value):
            what = f"the number '{Printer().expr(value)}'"
            hint = "return spanned data: a buffer declared in the function, a parameter or a future's '.data'"
        elif fn.ret.kind in ("int", "bool", "elem") and isinstance(value, A.Name) and value.name in tensors:
            what = f"the tensor parameter '{value.name}'"
            hint = "return a scalar, or declare the function's type as spanned data ('f32 [N] f(...)') or 'auto'"
        else:
            continue
        out.append(Diagnostic("error", f"'{fn.name}' is declared {declared} but returns {what}", r.value.span, hint))
    return out


def _literal(e: A.Expr) -> bool:
    """Is ``e`` a number or bool written out (``5``, ``-1.5f``, ``2 * 3``)?"""
    if isinstance(e, (A.IntLit, A.FloatLit, A.BoolLit)):
        return True
    if isinstance(e, A.Paren):
        return _literal(e.expr)
    if isinstance(e, A.Unary):
        return _literal(e.operand)
    return isinstance(e, A.Binary) and _literal(e.lhs) and _literal(e.rhs)


def _host_returns(stmts: list[A.Stmt]) -> list[A.Return]:
    """The ``return`` statements outside ``parallel`` (those inside are an error of their own)."""
    out: list[A.Return] = []
    for s in stmts:
        if isinstance(s, A.Parallel):
            continue
        if isinstance(s, A.Return):
            out.append(s)
            continue
        out.extend(_host_returns([c for c in s.children() if isinstance(c, A.Stmt)]))
    return out


def _ends_in_return(stmts: list[A.Stmt]) -> bool:
    return any(_returns(s) for s in stmts)


def _returns(s: A.Stmt) -> bool:
    """Does every path through ``s`` end in a ``return``?"""
    if isinstance(s, A.Return):
        return True
    if isinstance(s, A.Block):
        return _ends_in_return(s.stmts)
    if isinstance(s, A.If):
        return s.other is not None and _returns(s.then) and _returns(s.other)
    if isinstance(s, A.With):
        return _returns(s.body)
    return False
