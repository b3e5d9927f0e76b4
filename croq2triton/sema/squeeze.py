"""``.sqz()`` drops the dimensions of extent 1 that the ``.subspan``, ``.view`` or ``.span_as`` before
it made (LANGUAGE.md 7.6: ``Q.subspan(1, S, 1, D).at(b, 0, h, 0).sqz()``); a view with no such
operation before it has no written extents for it to drop."""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .tiling import source_text

SHAPING = ("subspan", "view", "span_as")


def squeeze_errors(fn: A.CoFunction) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for s in fn.body:
        for n in s.walk():
            if not isinstance(n, A.View):
                continue
            for k, op in enumerate(n.ops):
                if op.kind == "sqz" and not any(p.kind in SHAPING for p in n.ops[:k]):
                    before = source_text(A.View(n.base, n.ops[:k])) if k else source_text(n.base)
                    out.append(
                        Diagnostic(
                            "error",
                            "'.sqz()' drops the extents of 1 that a '.subspan', '.view' or '.span_as' before it wrote;"
                            f" '{before}' has none",
                            op.span or n.span,
                            "write the extents first: 'x.subspan(1, N).at(i, 0).sqz()'",
                        )
                    )
    return out
