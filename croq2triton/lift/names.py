"""The launcher's own words: the names of a translated function are made Python's once, before
the lifting (emit/names.py), also apart from these; :func:`safe` keeps a launcher apart from them
where it names something after a Croqtile name itself."""

from __future__ import annotations

import keyword

# Python's keywords and the names the generated code uses itself
RESERVED = set(keyword.kwlist) | {
    "tl", "triton", "torch", "os", "range", "print", "len", "sum", "min", "max", "abs", "type", "list",
    "dict", "tuple", "id", "int", "float", "bool", "str", "object", "math", "None", "True", "False",
}  # fmt: skip


def safe(name: str) -> str:
    """A Croqtile name as a launcher's Python identifier that cannot clash with the launcher's own
    names (its private names start with ``_`` and do not end with one).  The names of a translated
    function are Python's already (emit/names.py): this leaves them as they are."""
    if name in RESERVED or (name.startswith("_") and not name.endswith("_")):
        return name + "_"
    return name
