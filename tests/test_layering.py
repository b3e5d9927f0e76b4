"""The package's imports follow its stages (DESIGN.md): preprocess/parse (frontend) -> sema -> tir
-> lift -> schedule -> emit -> runtime; no stage imports a later one, and there is no import cycle,
counting every import a module runs (at its top or inside a function); imports under
``if TYPE_CHECKING:`` never run and are for annotations only."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "croq2triton"
STAGES = ["frontend", "sema", "tir", "lift", "schedule", "emit", "runtime"]


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text())
    for n in ast.walk(tree):  # annotations only: drop them
        if isinstance(n, ast.If) and ast.unparse(n.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            n.body = []
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            base = package.split(".")
            if n.level:
                base = base[: len(base) - n.level + 1]
            target = ".".join(base + ([n.module] if n.module else [])) if n.level else (n.module or "")
            for a in n.names:
                cand = f"{target}.{a.name}"
                out.add(cand if cand in mods else target)
        elif isinstance(n, ast.Import):
            out.update(a.name for a in n.names)
    return {m for m in out if m in mods and m != name}


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module's imports (parsed once for both tests)."""
    mods = _modules()
    return {name: _imports(name, path, mods) for name, path in mods.items()}


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def test_no_stage_imports_a_later_one() -> None:
    bad = []
    for name, deps in _graph().items():
        here = _stage(name)
        if here is None:
            continue
        for dep in deps:
            there = _stage(dep)
            if there is not None and STAGES.index(there) > STAGES.index(here):
                bad.append(f"{name} imports {dep}")
    assert not bad, "\n".join(bad)


def test_no_import_cycles() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    assert [sorted(c) for c in cycles] == []
