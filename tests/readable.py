"""What every generated module must look like (issue 11): lines of at most 120 characters, no
``0 *`` / ``+ 0`` / ``* 1`` terms, no conjunct written twice in one mask, and ``ruff format`` has
nothing to change."""

from __future__ import annotations

import ast
import subprocess

from croq2triton.emit.layout import LINE_LIMIT
from croq2triton.emit.tidy import _ruff


def problems(source: str, name: str) -> list[str]:
    out = [
        f"{name}:{i}: {len(line)} characters" for i, line in enumerate(source.splitlines(), 1) if len(line) > LINE_LIMIT
    ]
    tree = ast.parse(source)
    for node in ast.walk(tree):
        term = noise(node)
        if term is not None:
            out.append(f"{name}:{node.lineno}: a '{term}' term: {ast.unparse(node)[:100]}")
        if isinstance(node, ast.keyword) and node.arg == "mask":
            seen: set[str] = set()
            for c in conjuncts(node.value):
                key = ast.dump(c)
                if key in seen:
                    out.append(f"{name}:{node.value.lineno}: the mask repeats {ast.unparse(c)[:100]}")
                seen.add(key)
    binary = _ruff()
    if binary is None:
        out.append("ruff is not installed (a dependency of croq2triton): cannot check the formatting")
    else:
        done = subprocess.run(
            [binary, "format", "--check", "--isolated", "--line-length", str(LINE_LIMIT), "-"],
            input=source, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            out.append(f"{name}: ruff format would change it")
    return out


def noise(node: ast.AST) -> str | None:
    if not isinstance(node, ast.BinOp):
        return None
    for side in (node.left, node.right):
        if isinstance(side, ast.Constant) and type(side.value) in (int, float):
            v = side.value
            if isinstance(node.op, ast.Mult) and v in (0, 1):
                return f"* {v}"
            if isinstance(node.op, ast.Add) and v == 0:
                return "+ 0"
            if isinstance(node.op, ast.Sub) and v == 0 and side is node.right:
                return "- 0"
    return None


def conjuncts(e: ast.expr) -> list[ast.expr]:
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitAnd):
        return conjuncts(e.left) + conjuncts(e.right)
    return [e]
