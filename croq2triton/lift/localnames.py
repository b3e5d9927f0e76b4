"""The names a piece of code binds for itself, and renaming them: the copies of a unit's code
(lift/unroll.py) and warp roles that each bind a name of their own (lift/collapse.py) keep them
apart."""

from __future__ import annotations

from collections.abc import Iterator

from ..frontend import ast as A

RENAMED_FIELDS = ("name", "result", "after", "frag", "vars", "names")  # names: swap / rotate


def defined_names(body: A.Stmt) -> list[str]:
    """The names ``body`` binds before it reads them: its own (a unit's, a role's); a ``shared``
    buffer it declares is the block's."""
    seen: set[str] = set()
    out: list[str] = []

    def visit(n: A.Node) -> None:
        if isinstance(n, A.Assign):
            visit(n.value)
            if isinstance(n.target, A.Name) and n.op == "=" and n.target.name not in seen:
                out.append(n.target.name)
            visit(n.target)
            return
        if isinstance(n, A.Name):
            seen.add(n.name)
            return
        if isinstance(n, A.Declarator):
            if n.name not in seen:
                out.append(n.name)
            seen.add(n.name)
        if isinstance(n, A.SpannedDecl) and n.storage == "shared":
            seen.update(d.name for d in n.items)  # the block's buffer: one for all units
            return
        for f in ("result",):
            r = getattr(n, f, None)
            if isinstance(r, str) and r not in seen:
                out.append(r)
        for c in n.children():
            visit(c)

    visit(body)
    return list(dict.fromkeys(out))


def rename(node: A.Node, renames: dict[str, str]) -> None:
    """Every name of ``renames`` bound or read in ``node`` as its new name, in place."""
    for n in _all(node):
        for f in RENAMED_FIELDS:
            v = getattr(n, f, None)
            if isinstance(v, str) and v in renames:
                setattr(n, f, renames[v])
            elif isinstance(v, list) and any(isinstance(x, str) and x in renames for x in v):
                setattr(n, f, [renames.get(x, x) if isinstance(x, str) else x for x in v])


def _all(node: A.Node) -> Iterator[A.Node]:
    yield from node.walk()
