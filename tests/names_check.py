"""A static check of generated modules: every name a function reads is defined before it.

A cheap "undefined name" verifier (pyflakes-like, with the ``ast`` module): inside each top-level
function of a generated module (the ``@triton.jit`` kernels and helpers, and the launchers) every
name that is read must be a parameter, assigned earlier in source order (a name bound in one branch
of an ``if`` counts as bound after it), a module global or import, or a builtin.  Kernels in
Triton's interpreter only fail on such a name when the line runs; a compiled kernel fails to build.
"""

from __future__ import annotations

import ast
import builtins


def _is_jit(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        t = d.func if isinstance(d, ast.Call) else d
        if (
            isinstance(t, ast.Attribute)
            and t.attr == "jit"
            and isinstance(t.value, ast.Name)
            and t.value.id == "triton"
        ):
            return True
    return False


def _targets(t: ast.expr) -> list[str]:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _targets(e)]
    if isinstance(t, ast.Starred):
        return _targets(t.value)
    return []  # subscripts / attributes bind nothing


def _walrus(e: ast.expr) -> set[str]:
    """The names the ``:=`` inside ``e`` bind."""
    return {n for x in ast.walk(e) if isinstance(x, ast.NamedExpr) for n in _targets(x.target)}


class _Flow:
    """Names defined before each use, in source order (a name bound in only one branch of an
    ``if`` counts as bound after it, like pyflakes)."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.errors: list[tuple[int, str]] = []

    def uses(self, node: ast.AST | None, defined: set[str]) -> None:
        if node is None:
            return
        local = set(defined)  # names bound by comprehensions and lambdas inside the expression
        for n in ast.walk(node):
            if isinstance(n, ast.comprehension):
                local |= set(_targets(n.target))
            elif isinstance(n, ast.Lambda):
                local |= {a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs}
            elif isinstance(n, ast.NamedExpr):  # (x := ..): bound for the whole expression (its order unchecked)
                local |= set(_targets(n.target))
        defined = local
        for n in ast.walk(node):
            if (
                isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Load)
                and n.id not in defined
                and n.id not in self.known
            ):
                self.errors.append((n.lineno, n.id))

    def block(self, stmts: list[ast.stmt], defined: set[str]) -> set[str]:
        for s in stmts:
            defined = self.stmt(s, defined)
        return defined

    def stmt(self, s: ast.stmt, defined: set[str]) -> set[str]:
        if isinstance(s, ast.Assign):
            self.uses(s.value, defined)
            for t in s.targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Subscript):
                        self.uses(sub, defined)
            return defined | {n for t in s.targets for n in _targets(t)}
        if isinstance(s, ast.AnnAssign):
            self.uses(s.value, defined)
            return defined | set(_targets(s.target))
        if isinstance(s, ast.AugAssign):
            self.uses(s.value, defined)
            target = s.target
            self.uses(
                ast.Name(id=target.id, ctx=ast.Load(), lineno=s.lineno) if isinstance(target, ast.Name) else target,
                defined,
            )
            return defined | set(_targets(s.target))
        if isinstance(s, (ast.For, ast.AsyncFor)):
            self.uses(s.iter, defined)
            inner = self.block(s.body, defined | set(_targets(s.target)))
            after = self.block(s.orelse, inner)
            return after
        if isinstance(s, ast.While):
            self.uses(s.test, defined)
            inner = self.block(s.body, defined)
            return self.block(s.orelse, inner)
        if isinstance(s, ast.If):
            self.uses(s.test, defined)
            defined = defined | _walrus(s.test)  # (a launcher's one test of its arguments binds sizes)
            return self.block(s.body, set(defined)) | self.block(s.orelse, set(defined))
        if isinstance(s, ast.With):
            for it in s.items:
                self.uses(it.context_expr, defined)
                if it.optional_vars is not None:
                    defined = defined | set(_targets(it.optional_vars))
            return self.block(s.body, defined)
        if isinstance(s, ast.Try):
            body = self.block(s.body, set(defined))
            for h in s.handlers:
                self.uses(h.type, defined)
                body |= self.block(h.body, defined | ({h.name} if h.name else set()))
            body = self.block(s.orelse, body)
            return self.block(s.finalbody, body)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return defined | {s.name}
        for child in ast.iter_child_nodes(s):
            if isinstance(child, ast.expr):
                self.uses(child, defined)
        return defined


def undefined_names(source: str, jit_only: bool = False) -> list[str]:
    """``function:line: name`` for every name read inside a top-level function of ``source`` (only
    the ``@triton.jit`` ones with ``jit_only``) that is neither a parameter, nor assigned before,
    nor a module global, nor a builtin."""
    tree = ast.parse(source)
    module: set[str] = set(dir(builtins))
    for s in tree.body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            module.add(s.name)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            module |= {(a.asname or a.name).split(".")[0] for a in s.names}
        elif isinstance(s, ast.Assign):
            module |= {n for t in s.targets for n in _targets(t)}
        elif isinstance(s, (ast.AnnAssign, ast.AugAssign)):
            module |= set(_targets(s.target))
        elif isinstance(s, ast.If):  # module-level conditionals (the interpreter switch)
            for sub in ast.walk(s):
                if isinstance(sub, ast.Assign):
                    module |= {n for t in sub.targets for n in _targets(t)}
    out: list[str] = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or (jit_only and not _is_jit(fn)):
            continue
        a = fn.args
        params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        flow = _Flow(module)
        for d in a.defaults + [d for d in a.kw_defaults if d is not None]:
            flow.uses(d, set())
        flow.block(fn.body, params)
        out += [f"{fn.name}:{line}: {name}" for line, name in flow.errors]
    return out
