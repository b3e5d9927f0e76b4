"""Croqtile names as Python identifiers in the generated code (launchers and kernels)."""

from __future__ import annotations

import keyword

# Python's keywords and the names the generated code uses itself
RESERVED = set(keyword.kwlist) | {
    "tl", "triton", "torch", "os", "range", "print", "len", "sum", "min", "max", "abs", "type", "list",
    "dict", "tuple", "id", "int", "float", "bool", "str", "object", "math", "None", "True", "False",
}  # fmt: skip


def safe(name: str) -> str:
    """A Croqtile name as a Python identifier that cannot clash with the generated code's own names."""
    if name in RESERVED or name.startswith("_"):
        return name + "_"
    return name
