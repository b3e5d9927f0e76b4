"""The host scalars whose value changes where a constant cannot follow it (LANGUAGE.md 4.1, 4.3,
7.4): the launcher binds a scalar declared with a constant (``f32 acc = 0.0f;``, ``int n = 3;``)
as that constant, and must make it a launcher variable instead where it is updated

* inside a loop or a branch of an ``if`` (or a ``with``, a ``: device`` region) of host code
  below its own scope: ``foreach i in [n] { acc = acc + x.at(i); }`` (an element scalar is
  mutable; an immutable ``int`` assigned there is accepted with a warning and updated,
  sema/checks.py), so that the loop's later iterations, the code after it and the kernels that
  read it see the new value;
* by a compound assignment or ``++`` / ``--``, anywhere (``acc += y;``).

A plain ``acc = e;`` in the scalar's own scope rebinds it in program order, and an update inside
a kernel (a ``parallel`` that is not a ``: device`` region) is the kernel's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Span
from ..frontend import ast as A
from ..sema.scopes import Binding, Scope, resolve


@dataclass
class Updated:
    """The bindings host code updates as above."""

    decls: set[Span] = field(default_factory=set)  # where each is declared (an item, an assignment's target)
    targets: set[int] = field(default_factory=set)  # ids of the names that host assignments to them assign

    def declares(self, span: Span | None) -> bool:
        return span is not None and span in self.decls


def updated_scalars(fn: A.CoFunction) -> Updated:
    """The bindings of ``fn`` that host code updates as above."""
    res = resolve(fn)
    in_kernels = _kernel_nodes(fn)
    out = Updated()
    for u in res.updates:
        b = u.binding
        if b.span is not None and id(u.node) not in in_kernels and (u.op != "=" or _below(u.scope, b)):
            out.decls.add(b.span)
    for u in res.updates:
        if isinstance(u.node, A.Assign) and id(u.node) not in in_kernels and u.binding.span in out.decls:
            out.targets.add(id(u.node.target))
    return out


def _below(scope: Scope, b: Binding) -> bool:
    """Is ``scope`` a scope inside the one that declares ``b``?"""
    s = scope.parent
    while s is not None:
        if s is b.scope:
            return True
        s = s.parent
    return False


def _kernel_nodes(fn: A.CoFunction) -> set[int]:
    """The ids of the nodes inside a kernel: a ``parallel`` that is not a ``: device`` region."""
    out: set[int] = set()
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.Parallel) and id(n) not in out and not (n.levels and n.levels[0].level == "device"):
                out.update(id(x) for x in n.walk())
    return out
