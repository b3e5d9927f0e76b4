"""A buffer's shape is known when the function is entered (LANGUAGE.md 6: "local buffers must have
shapes computable from parameters at entry (constants, symbolic dims and arithmetic on them)";
7.1: shapes are evaluated at compile time or once at entry on the host, "it never depends on device
state").  An extent of a declared buffer or fragment that uses the current value of a ``parallel``,
``with``, ``foreach`` or ``apply`` index, or an element read from spanned data, directly or through
the ``int`` names computed from them, is an error.  The bound ``#p`` of an index is known at entry
and is fine.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Binding, Resolution
from .tiling import source_text

_ORIGIN = {"parallel": "a 'parallel'", "with": "a 'with'", "loop": "a loop"}


def entry_shape_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for n in fn.walk():
        if not isinstance(n, (A.SpannedDecl, A.FragDecl)) or not n.shape:
            continue
        for extent in n.shape:
            why = _runtime(extent, res, set())
            if why is None:
                continue
            names = ", ".join(f"'{d.name}'" for d in n.items)
            out.append(
                Diagnostic(
                    "error",
                    f"the extent '{source_text(extent)}' of {names} depends on {why}: a buffer's shape is fixed when"
                    " the function is entered (constants, the parameters' sizes and arithmetic on them)",
                    extent.span,
                    "size the buffer by a bound or a constant ('#p', 'TILE') and index into it instead",
                )
            )
            break
    return out


def _runtime(e: A.Node, res: Resolution, busy: set[int]) -> str | None:
    """What makes ``e`` a value of the running kernel (None: it is known at entry)."""
    if isinstance(e, A.At):
        return f"the element '{source_text(e)}'"
    if isinstance(e, A.GetIth):  # (``p(k)`` is the index k among #p: known)
        return _runtime(e.index, res, busy)
    if isinstance(e, A.Name):
        b = res.binding(e)
        if b is None:
            return None
        if _index(b):
            return f"the index '{b.name}' of {_ORIGIN.get(b.origin, 'a loop')}"
        if b.kind == "int" and b.value is not None and id(b) not in busy and b.origin != "parameter":
            busy.add(id(b))
            inner = _runtime(b.value, res, busy)
            if inner is not None:
                return f"'{b.name}', which uses {inner}"
        return None
    for c in e.children():
        found = _runtime(c, res, busy)
        if found is not None:
            return found
    return None


def _index(b: Binding) -> bool:
    """A name whose value is the current one of an index (not its bound)."""
    if b.kind == "bounded":
        return True
    return b.kind == "int" and b.origin == "loop"  # (the indices of 'apply')
