"""Constructs given a thing of the wrong kind: a number where spanned data is needed, a tensor
where a fragment is, an event where a value is (LANGUAGE.md 7.2, 7.4, 7.6, 7.7, 7.8, 7.9, 7.10):

* a view's base is spanned data, a future or a named view (7.6): ``n.chunkat(p)`` of an ``int n``;
* a copy's source and destination are views or futures, or a storage keyword (7.8): ``dma.copy s
  => n``; the same for ``mma.load``'s source and ``mma.store``'s destination (7.9);
* ``f.data`` is a future's destination (7.8): ``.data`` of a number, a shape or an event is an error
  (of spanned data it is the data itself, as upstream reads ``return d.data;`` of a parameter);
  ``f.mdata`` is the metadata of a ``.sp`` copy: ``.mdata`` of a future of any other copy;
  ``.span`` is the shape of spanned data or of a future: ``.span`` of a number or an event;
* an MMA's operands are fragments or views (7.9); ``apply`` loops over a fragment's elements
  (7.4); ``reduce_*``, ``all_reduce_sum`` and ``copy`` take fragments (an MMA's accumulator is
  sema/accumulators.py's, on the main line);
* an atomic acts on one element ``x.at(..)`` (7.7), not on a whole tensor or buffer;
* ``a #+ c``, ``a #- c`` and ``a # b`` compose bounded indices (7.2): a declared ``int``, a scalar,
  a tensor ... is none;
* a condition (``if``, ``while``, ``inthreads``, ``c ? a : b``) is an integer or bool expression, or
  (``while``, 7.4) an event predicate: a tensor, a buffer, a view, a shape, a tuple, a fragment or a
  stream is none;
* an event is triggered and waited on (7.10) or tested as a predicate: in arithmetic, as an index,
  an initialiser or an assigned value it is an error; so is a stream parameter there (6, 7.3: it
  says where a ``parallel<s>`` launches).

What a name is comes from sema/scopes.py; a name it cannot resolve is left alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import KIND_WORDS, Binding, Resolution
from .tiling import source_text

_WHAT = KIND_WORDS
# kinds that hold no spanned data: what a view, a copy or an MMA operand cannot be
_NO_DATA = frozenset({"int", "bool", "elem", "mdspan", "ituple", "stream", "bounded", "dim", "event"})
# kinds that are no fragment: what 'apply' and the fragment utilities cannot take
_NOT_FRAGMENT = _NO_DATA | {"spanned", "view", "future"}
# kinds that are no condition
_NO_CONDITION = frozenset({"spanned", "view", "mdspan", "ituple", "frag", "stream"})


def wrong_kind_errors(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    sparse = _sparse_futures(fn)
    for n in fn.walk():
        if isinstance(n, A.View):
            out.extend(_need(n.base, res, _NO_DATA, lambda w, x=n: _view(x, w)))
        elif isinstance(n, A.Member):
            out.extend(_member(n, res, sparse))
        elif isinstance(n, A.DmaStmt):
            out.extend(_need(n.src, res, _NO_DATA, lambda w, s=n: _copy_side(s, "source", s.src, w)))
            if not n.dst_storage and not isinstance(n.dst, A.Select):
                out.extend(_need(n.dst, res, _NO_DATA, lambda w, s=n: _copy_side(s, "destination", s.dst, w)))
        elif isinstance(n, A.MmaLoad):
            out.extend(_need(n.src, res, _NO_DATA, lambda w, s=n: _mma_view("mma.load", "source", s.src, w)))
        elif isinstance(n, A.MmaStore):
            out.extend(_need(n.dst, res, _NO_DATA, lambda w, s=n: _mma_view("mma.store", "destination", s.dst, w)))
        elif isinstance(n, A.MmaOp):
            for x in (n.a, n.b):
                out.extend(_need(x, res, _NO_DATA, lambda w, x=x: _operand(x, w)))
        elif isinstance(n, A.Apply):
            b = res.binding(n)
            if b is not None and b.kind in _NOT_FRAGMENT:
                out.append(_apply(n, b))
        elif isinstance(n, A.FragOp):
            for x in n.args:
                out.extend(_need(x, res, _NOT_FRAGMENT, lambda w, x=x, s=n: _frag_op(s, x, w)))
        elif isinstance(n, A.Call) and n.kind == "atomic" and n.args:
            out.extend(_atomic(n, res))
        elif isinstance(n, A.Binary) and n.op in ("#", "#+", "#-"):
            out.extend(_compose(n, res))
        elif isinstance(n, (A.If, A.While, A.InThreads, A.Ternary)):
            out.extend(_condition(n, res))
    out.extend(_events_as_values(fn, res))
    return out


# ---- helpers ------------------------------------------------------------------


def _root(e: A.Expr) -> A.Expr:
    """The name a view, an element, an array's item or a future's ``.data`` starts from."""
    while True:
        if isinstance(e, A.Paren):
            e = e.expr
        elif isinstance(e, (A.View, A.Index, A.At)) or (isinstance(e, A.Member) and e.member in ("data", "mdata")):
            e = e.base
        else:
            return e


def _bound(e: A.Expr, res: Resolution) -> Binding | None:
    root = _root(e)
    return res.binding(root) if isinstance(root, A.Name) else None


def _need(e: A.Expr, res: Resolution, wrong: frozenset[str], report: object) -> list[Diagnostic]:
    """``report(what)`` where ``e`` starts from a name of a kind in ``wrong`` (``e`` itself: a
    future's ``.data`` or an element of an event array is checked by its own rule)."""
    b = _bound(e, res)
    if b is None or b.kind not in wrong:
        return []
    if isinstance(A.unparen(e), A.Member):  # (``n.data`` of an int: the '.data' rule says it)
        return []
    return [report(f"'{b.name}' is {_WHAT[b.kind]}")]  # type: ignore[operator]


def _view(v: A.View, what: str) -> Diagnostic:
    return Diagnostic(
        "error",
        f"'{source_text(v)}': {what}; a view is taken of spanned data (a tensor or buffer), a future or a named view",
        v.base.span,
        "take the view of a tensor or buffer: 'x.chunkat(p)', 'x.subspan(16).at(i)'",
    )


def _copy_side(s: A.DmaStmt, side: str, e: A.Expr, what: str) -> Diagnostic:
    storage = ", or a storage ('=> shared', '=> local', '=> global')" if side == "destination" else ""
    return Diagnostic(
        "error",
        f"the {side} of '{s.engine}.{s.op}' is a view of spanned data, a future{storage}; {what}",
        e.span,
        "copy into or out of a tensor or buffer: 'dma.copy a.chunkat(p) => s;'",
    )


def _mma_view(stmt: str, side: str, e: A.Expr, what: str) -> Diagnostic:
    return Diagnostic(
        "error",
        f"the {side} of '{stmt}' is a view of spanned data or a future; {what}",
        e.span,
        "name a buffer or a view of one: 'x.chunkat(_, k)'",
    )


def _operand(e: A.Expr, what: str) -> Diagnostic:
    return Diagnostic(
        "error",
        f"an MMA operand is a fragment ('mma.load ..') or a view of spanned data; {what}",
        e.span,
        "pass the shared buffer or view that holds the operand tile",
    )


def _apply(s: A.Apply, b: Binding) -> Diagnostic:
    return Diagnostic(
        "error",
        f"'apply' loops over the elements of a fragment; '{b.name}' is {_WHAT[b.kind]}",
        s.span,
        f"loop over a tensor's elements with 'foreach {{{', '.join(s.vars)}}} in [..]'",
    )


def _frag_op(s: A.FragOp, e: A.Expr, what: str) -> Diagnostic:
    return Diagnostic(
        "error",
        f"'{s.op}' takes fragments; {what}",
        e.span,
        "give it fragments: an accumulator of 'mma.fill' or a 'frag' declaration",
    )


def _member(n: A.Member, res: Resolution, sparse: dict[str, bool]) -> list[Diagnostic]:
    base = A.unparen(n.base)
    b = res.binding(base) if isinstance(base, A.Name) else None
    if b is None:
        return []
    text = source_text(n)
    if n.member == "data" and b.kind in _NO_DATA:  # (``x.data`` of spanned data is ``x``: upstream's 'dataof')
        return [
            Diagnostic(
                "error",
                f"'{text}': '.data' is the destination of a copy's future ('f = dma.copy .. => shared;');"
                f" '{b.name}' is {_WHAT[b.kind]}",
                n.span,
                "name the future of a copy, or the tensor or buffer itself",
            )
        ]
    if n.member == "mdata" and (
        b.kind in _NO_DATA | {"spanned"} or (b.kind == "future" and sparse.get(b.name) is False)
    ):
        what = "the future of a copy without '.sp'" if b.kind == "future" else _WHAT[b.kind]
        return [
            Diagnostic(
                "error",
                f"'{text}': '.mdata' is the sparsity metadata of a '.sp<2:4>' copy; '{b.name}' is {what}",
                n.span,
                "copy the operand with '.sp<2:4>' to get its metadata",
            )
        ]
    if n.member == "span" and b.kind in ("int", "bool", "elem", "event", "stream", "dim"):
        return [
            Diagnostic(
                "error",
                f"'{text}': '.span' is the shape of spanned data or of a future; '{b.name}' is {_WHAT[b.kind]}",
                n.span,
                "take the shape of a tensor, a buffer or a future: 'x.span', 'x.span(0)'",
            )
        ]
    return []


def _sparse_futures(fn: A.CoFunction) -> dict[str, bool]:
    """Each future's name: True where a ``.sp`` copy gives it, False where only other copies do."""
    out: dict[str, bool] = {}
    for n in fn.walk():
        if isinstance(n, A.DmaStmt) and n.result:
            out[n.result] = out.get(n.result, False) or any(a.name == "sp" for a in n.attrs)
        elif isinstance(n, A.DmaAny):
            out[n.result] = True  # (a placeholder: any copy may come)
        elif isinstance(n, A.Swap):
            for name in n.names:
                out[name] = True  # (the names move: left alone)
    return out


def _atomic(c: A.Call, res: Resolution) -> list[Diagnostic]:
    target = A.unparen(c.args[0])
    if isinstance(target, A.At):
        return []
    b = _bound(target, res)
    if b is None and not isinstance(target, (A.View, A.Index)):
        return []
    what = f"'{source_text(target)}' is {_WHAT.get(b.kind, 'no element') if b is not None else 'a view'}"
    if b is not None and b.kind == "spanned" and isinstance(target, (A.View, A.Index)):
        what = f"'{source_text(target)}' is a view"
    return [
        Diagnostic(
            "error",
            f"'{c.name}' acts on one element of shared or global data, 'x.at(..)'; {what}",
            c.args[0].span,
            f"name the element: '{c.name}({source_text(target)}.at(i), v)'",
        )
    ]


def _compose(n: A.Binary, res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for x in (n.lhs,) if n.op != "#" else (n.lhs, n.rhs):
        x = A.unparen(x)
        b = res.binding(x) if isinstance(x, A.Name) else None
        # (a name assigned a composed index, ``tile = k # p``, keeps its bound: an 'int' declared
        # with its type, ``int k = 3;``, has none)
        if (
            b is None
            or b.kind in ("bounded", "dim", "unknown", "view")
            or (b.kind == "int" and b.origin != "declaration")
        ):
            continue
        what = "composes bounded indices" if n.op == "#" else "changes the bound of a bounded index"
        out.append(
            Diagnostic(
                "error",
                f"'{source_text(n)}': '{n.op}' {what}; '{b.name}' is {_WHAT.get(b.kind, b.kind)}, not a bounded index",
                x.span,
                "bounded indices come from 'parallel', 'with' and 'foreach' (LANGUAGE.md 7.2); for a number write"
                " the arithmetic out",
            )
        )
    return out


def _condition(n: A.Node, res: Resolution) -> list[Diagnostic]:
    cond = n.cond  # type: ignore[attr-defined]
    out: list[Diagnostic] = []
    for leaf in _predicate_leaves(cond):
        b = _bound(leaf, res)
        if b is None or b.kind not in _NO_CONDITION:
            continue
        if isinstance(leaf, A.At) or isinstance(A.unparen(leaf), A.Member):
            continue  # (an element of a tensor is a number)
        if b.kind == "spanned" and isinstance(leaf, A.Index):
            continue  # (an item of an array of buffers is not a number, but left to the lifting)
        word = {A.If: "if", A.While: "while", A.InThreads: "inthreads", A.Ternary: "?:"}[type(n)]
        out.append(
            Diagnostic(
                "error",
                f"the condition of '{word}' is an integer or bool expression; '{source_text(leaf)}' is {_WHAT[b.kind]}",
                leaf.span,
                "compare a value: 'x.at(i) > 0', or test a count: 'n > 0'",
            )
        )
    return out


def _predicate_leaves(e: A.Expr) -> Iterator[A.Expr]:
    """The operands of a condition's ``&&``, ``||`` and ``!``."""
    e = A.unparen(e)
    if isinstance(e, A.Binary) and e.op in ("&&", "||"):
        yield from _predicate_leaves(e.lhs)
        yield from _predicate_leaves(e.rhs)
    elif isinstance(e, A.Unary) and e.op == "!":
        yield from _predicate_leaves(e.operand)
    else:
        yield e


def _events_as_values(fn: A.CoFunction, res: Resolution) -> list[Diagnostic]:
    """An event (``e``, ``full[s]``, ``full.at(k)``) or a stream parameter used as a number: an
    operand of arithmetic or a comparison, an index, an initialiser or an assigned value."""
    out: list[Diagnostic] = []
    seen: set[int] = set()

    def named(e: A.Expr) -> Binding | None:
        e = A.unparen(e)
        if isinstance(e, A.Name):
            b = res.binding(e)
            return b if b is not None and b.kind in ("event", "stream") else None
        if not isinstance(e, (A.Index, A.At)):
            return None
        b = _bound(e, res)
        return b if b is not None and b.kind == "event" else None

    def value(e: A.Expr | None) -> None:
        if e is None:
            return
        b = named(e)
        if b is None or id(e) in seen:
            return
        seen.add(id(e))
        if b.kind == "stream":
            out.append(
                Diagnostic(
                    "error",
                    f"'{b.name}' is a stream parameter, used here as a value: a stream says where kernels launch",
                    e.span,
                    f"launch on it with 'parallel<{b.name}> p by ..', or pass the value as an 'int' parameter",
                )
            )
            return
        out.append(
            Diagnostic(
                "error",
                f"'{source_text(e)}' is an event, used here as a value: an event is triggered and waited on"
                " ('trigger e;', 'wait e;')",
                e.span,
                "count with an int ('mutable int n = 0;'), and synchronise with 'trigger' and 'wait'",
            )
        )

    for n in fn.walk():
        if isinstance(n, A.Binary) and n.op not in ("&&", "||"):
            value(n.lhs)
            value(n.rhs)
        elif isinstance(n, A.Unary) and n.op != "!":
            value(n.operand)
        elif isinstance(n, (A.At, A.Index)):
            for i in n.indices:
                value(i)
        elif isinstance(n, A.ScalarDecl):
            for d in n.items:
                value(d.init)
        elif isinstance(n, A.Assign):
            value(n.value)
        elif isinstance(n, (A.Builtin, A.Cast)):
            for x in n.args if isinstance(n, A.Builtin) else [n.expr]:
                value(x)
    return out
