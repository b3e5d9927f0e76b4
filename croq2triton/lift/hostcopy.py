"""``dma.copy`` / ``dma.transp`` / ``dma.any`` / ``wait`` between launches (LANGUAGE.md 7.8 at host
level), as a mixin of the launcher lifting (lift/launcher.py).

Between launches a copy moves whole tensors: its source is a tensor (a parameter, a buffer the
function declares, the data of an earlier copy) or a ``span_as`` view of one, its destination
another such tensor, or a storage keyword (``=> global``: a fresh tensor of the source's shape).
The launcher does it with torch (``dst.copy_(src)``); the kernels of the function are launched in
order on the same stream, so a copy, ``.async`` or not, sees what the launches before it wrote and
``wait`` has nothing left to wait for.  ``f = dma.copy ...`` names the copy's destination
``f.data``; ``f = dma.any`` names a future that holds no copy yet.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

from ..errors import CroqSemanticError
from ..frontend import ast as A
from ..tir import expr as E
from ..tir import host as H
from .hostflow import line_of
from .hostvalues import Bounded, Reshaped, Tensor
from .names import safe


@dataclass(frozen=True)
class Pending:
    """``f = dma.any`` at host level: a future that holds no copy yet."""

    name: str


class HostCopies:
    names: dict[str, Any]
    body: list[H.Stmt]
    loops: int
    uid: int
    error: Any
    value: Any
    evaluate: Any
    named_extents: Any
    copies: set[str]
    counter_bounds: dict[str, E.Expr]

    def host_dma(self, s: A.DmaStmt) -> None:
        if s.engine != "dma" or s.op not in ("copy", "transp", "pad"):
            raise self.error(f"cannot lower a host-level '{s.engine}.{s.op}' to Triton yet", s)
        if s.after is not None or s.event is not None or s.attrs:
            what = "'after'" if s.after is not None else "an event" if s.event is not None else f"'.{s.attrs[0].name}'"
            raise self.error(f"a host-level dma.copy with {what} cannot be lowered yet", s)
        src = self.copied(s.src, "source")
        perm: tuple[int, ...] | None = None
        dims = src.dims
        if s.op == "transp":
            perm = tuple(self.permutation(s, len(src.dims)))
            dims = tuple(src.dims[k] for k in perm)
        pad = self.pad_config(s, len(src.dims)) if s.op == "pad" else None
        if pad is not None:  # each dimension: lo, its elements mid apart, hi (LANGUAGE.md 7.8)
            lo, hi, mid, _ = pad
            dims = tuple(
                E.fold(E.Bin("+", E.Bin("+", n, E.Bin("+", a, b)), E.Bin("*", E.Bin("-", n, E.Const(1)), m)))
                for n, a, b, m in zip(dims, lo, hi, mid, strict=True)
            )
        if s.dst_storage:
            self.uid += 1
            var = f"_{safe(s.result or 'copy')}{self.uid}"
            if pad is not None:
                self.body.append(H.HostPad(var, None, src.host, src.name, *pad, line=line_of(s)))
            else:
                self.body.append(H.HostCopy(var, None, src.host, src.name, perm, line=line_of(s)))
            node = s
            dst = Tensor(s.result or var, var, src.elem, src.dtype, self.named_extents(dims, var, node), s.span)
        else:
            dst = self.copied(s.dst, "destination")
            if dst.elem != src.elem:
                raise self.error(
                    f"dma.copy of '{src.name}' ({src.elem}) into '{dst.name}' ({dst.elem}): the element types differ",
                    s,
                )
            if pad is not None:
                self.body.append(H.HostPad(dst.host, dst.name, src.host, src.name, *pad, line=line_of(s)))
            else:
                self.body.append(H.HostCopy(dst.host, dst.name, src.host, src.name, perm, line=line_of(s)))
        if s.result is not None:
            self.names[s.result] = dst
            self.copies.add(s.result)

    def pad_config(
        self, s: A.DmaStmt, rank: int
    ) -> tuple[tuple[E.Expr, ...], tuple[E.Expr, ...], tuple[E.Expr, ...], E.Expr]:
        """``dma.pad<{lo..}, {hi..}, {mid..}, v>``: the borders before and after each dimension, the
        elements between two of the source's, and their value."""
        cfg = s.cfg or []
        lists = [x.items if isinstance(x, (A.ItupleLit, A.MdspanLit)) else None for x in cfg[:3]]
        if len(cfg) != 4 or any(x is None or len(x) != rank for x in lists):
            raise CroqSemanticError(
                f"dma.pad takes three lists of {rank} extents (low, high, interior) and a value here",
                s.span,
                "dma.pad<{lo..}, {hi..}, {mid..}, value> with one extent per dimension of the source",
            )
        lo, hi, mid = (tuple(self.scalar(x) for x in items or []) for items in lists)
        for what, items in (("low", lo), ("high", hi), ("interior", mid)):
            for x in items:
                if isinstance(x, E.Const) and int(x.value) < 0:
                    raise CroqSemanticError(f"a dma.pad with a negative {what} padding ({x.value})", s.span)
        return lo, hi, mid, self.evaluate(cfg[3])

    def permutation(self, s: A.DmaStmt, rank: int) -> list[int]:
        perm = []
        for c in s.cfg or []:
            v = self.evaluate(c)
            perm.append(int(v.value) if hasattr(v, "value") and isinstance(v.value, int) else -1)
        if sorted(perm) != list(range(rank)):
            raise self.error(f"dma.transp needs a permutation of the {rank} dimensions of its source", s)
        return perm

    def copied(self, e: A.Expr, what: str) -> Tensor:
        """The tensor a host-level copy reads or writes (a ``span_as`` view made into one)."""
        if isinstance(e, A.Member) and e.member == "data":
            e = e.base
        if isinstance(e, A.Name) and isinstance(self.names.get(e.name), Pending):
            raise self.error(f"the future '{e.name}' holds no copy here (it is a dma.any)", e)
        if isinstance(e, A.View) and any(op.kind != "span_as" for op in e.ops):
            return self.window(e, partial=True)
        v = self.value(e)
        if isinstance(v, Reshaped):
            self.uid += 1
            var = f"_view{self.uid}"
            self.body.append(H.SpanAs(var, v.tensor.name, v.tensor.host, v.dims, line=line_of(e)))
            t = v.tensor
            return Tensor(t.name, var, t.elem, t.dtype, self.named_extents(v.dims, var, e), e.span)
        if not isinstance(v, Tensor):
            raise self.error(f"the {what} of a host-level dma.copy must be a tensor or a span_as view of one", e)
        return v

    def window(self, e: A.View, partial: bool = False) -> Tensor:
        """``t.chunkat(..)`` / ``.chunk(..).at(..)`` / ``.subspan(..)[.step(..)][.at(..)]`` /
        ``.modspan(..)[.at(..)]`` / ``.view(..).from(..)`` / ``.sqz()`` of a tensor between launches
        (LANGUAGE.md 7.6): its window, a slice of the tensor checked at launch to lie inside it (a
        copy's, ``partial``, may reach past it: read zero and dropped writes there, LANGUAGE.md 14.3).
        With explicit strides (``.view(e : st).from(o)``, ``.subspan(e : st)``) the window is
        elements of the tensor's row-major order: a strided view of a contiguous tensor."""
        t = self.value(e.base)
        if not isinstance(t, Tensor):
            raise self.error("a host-level view of something other than a tensor", e.base)
        w = _Window(list(t.dims), list(t.dims), [E.Const(0) for _ in t.dims], list(range(len(t.dims))))
        for op in e.ops:
            self.window_op(w, op)
        self.uid += 1
        var = f"_window{self.uid}"
        line = line_of(e)
        if w.strides is not None:
            shape = tuple(w.shape)
            self.body.append(H.Strided(var, t.name, t.host, w.offset, shape, tuple(w.strides), line=line))
        else:
            drop = tuple(d for d in range(len(w.dims)) if d not in w.axes)
            window = H.Window(var, t.name, t.host, tuple(w.origin), tuple(w.dims), drop, partial, line=line)
            self.body.append(window)
            shape = tuple(w.dims[d] for d in w.axes)
        return Tensor(t.name, var, t.elem, t.dtype, self.named_extents(shape, var, e), e.span)

    def window_op(self, w: _Window, op: A.ViewOp) -> None:
        """One view operation on the window ``w`` (LANGUAGE.md 7.6's table)."""
        if op.kind not in ("chunkat", "chunk", "subspan", "modspan", "view", "sqz"):
            raise self.error(
                f"host-level '.{op.kind}' views cannot be lowered yet; take the view inside 'parallel'", op
            )
        if op.kind == "sqz":  # the dimensions of extent 1 go (LANGUAGE.md 7.6)
            # as inside a kernel (lift/views.py): an extent known only at launch stays
            w.keep([not (isinstance(n := E.fold(x), E.Const) and n.value == 1) for x in w.shape])
            return
        rank = len(w.shape)
        if op.kind == "view" and op.at is None:
            raise self.error("a host-level '.view' without '.from'", op)
        if op.kind in ("chunkat", "chunk"):
            if op.kind == "chunkat":
                pairs = [self.chunk_index(x) for x in op.args]
            else:
                at = op.at or []
                if len(at) != len(op.args):
                    raise self.error("a host-level '.chunk' needs an '.at' of its rank", op)
                pairs = [(self.scalar(i), self.scalar(f)) for i, f in zip(at, op.args, strict=True)]
            if len(pairs) != rank:
                raise self.error(f"'{op.kind}' takes {rank} indices here, {len(pairs)} given", op)
            shape = [E.fold(E.Bin("/", n, f)) for n, (_, f) in zip(w.shape, pairs, strict=True)]
            w.move([E.Bin("*", i, n) for (i, _), n in zip(pairs, shape, strict=True)], shape)
            return
        at = op.at
        if op.strides is not None and (op.kind == "view" or at is None):  # a view of its own rank
            strides = [self.scalar(x) for x in op.strides]
            if not len(op.args) == len(strides) == (len(at or []) if op.kind == "view" else len(strides)):
                raise CroqSemanticError(
                    f"'.{op.kind}' with {len(op.args)} extent(s), {len(strides)} stride(s)"
                    + (f" and {len(at or [])} offset(s)" if op.kind == "view" else ""),
                    op.span,
                    "give one stride (and one offset) per extent",
                )
            if any(_blank(x) for x in op.args) or op.step:
                raise self.error(f"a host-level '.{op.kind}' with explicit strides and '_' or '.step'", op)
            w.flatten()
            offset: E.Expr = E.Const(0)
            for o, st in zip(at or [], strides, strict=False):  # a flat offset in the new strides
                offset = E.Bin("+", offset, E.Bin("*", self.scalar(o), st))
            w.offset = E.fold(E.Bin("+", w.offset, offset))
            w.flat, w.strides = [self.scalar(x) for x in op.args], strides
            return
        if op.kind == "view" and op.strides is None and len(op.args) != rank:  # dense, in the tensor's order
            if any(_blank(x) for x in op.args) or len(at or []) != len(op.args):
                raise CroqSemanticError(
                    f"a '.view' of {len(op.args)} extent(s) that changes the rank takes {len(op.args)} offset(s)"
                    f" and no '_', {len(at or [])} given",
                    op.span,
                    "give one offset per extent of the view",
                )
            shape = [self.scalar(x) for x in op.args]
            dense: list[E.Expr] = []
            step: E.Expr = E.Const(1)
            for n in reversed(shape):
                dense.insert(0, step)
                step = E.fold(E.Bin("*", step, n))
            w.flatten()
            moved = sum_of([E.Bin("*", self.scalar(o), st) for o, st in zip(at or [], dense, strict=True)])
            w.offset = E.fold(E.Bin("+", w.offset, moved))
            w.flat, w.strides = shape, dense
            return
        if len(op.args) != rank:
            raise self.error(f"'.{op.kind}' takes {rank} extents here, {len(op.args)} given", op)
        extents = [n if _blank(x) else self.scalar(x) for n, x in zip(w.shape, op.args, strict=True)]
        strides = [self.scalar(x) for x in op.strides] if op.strides is not None else None
        if strides is not None and len(strides) != rank:
            raise CroqSemanticError(
                f"'.{op.kind}' with {rank} extent(s) and {len(strides)} stride(s)",
                op.span,
                "give one stride per extent",
            )
        if at is not None and len(at) != rank:
            raise self.error(f"'.{'from' if op.kind == 'view' else 'at'}' takes {rank} indices here", op)
        if op.kind == "modspan":  # the remainder of tiling by e, the tail piece by default
            shape = [E.fold(E.Bin("%", n, x)) for n, x in zip(w.shape, extents, strict=True)]
            shape = [E.fold(E.Where(E.Bin("==", r, E.Const(0)), E.Const(1), r)) for r in shape]  # 1 if it divides
            index = [self.scalar(i) for i in at] if at is not None else None
            if index is None:
                index = [E.fold(E.Bin("/", n, x)) for n, x in zip(w.shape, extents, strict=True)]
            w.move([E.Bin("*", i, x) for i, x in zip(index, extents, strict=True)], shape)
            return
        if op.kind == "view":  # element offsets in the parent's coordinates
            w.move([self.scalar(o) for o in at or []], extents)
            return
        steps = [self.scalar(x) for x in op.step] if op.step else extents
        moves = [E.Bin("*", self.scalar(i), s) for i, s in zip(at, steps, strict=True)] if at is not None else None
        if moves is not None:
            w.move(moves, extents)
        else:
            w.move([E.Const(0)] * rank, extents)
        if strides is not None:  # ``.subspan(e : st)``: the window's elements st apart
            w.flatten()
            w.strides = strides

    def chunk_index(self, x: A.Expr) -> tuple[E.Expr, E.Expr]:
        """A ``chunkat`` argument between launches: a bounded name (``with``) or ``_``."""
        if _blank(x):
            return E.Const(0), E.Const(1)
        v = self.value(x)
        if isinstance(v, E.Var) and v.name in self.counter_bounds:  # a foreach over a name of a 'with'
            return v, self.counter_bounds[v.name]
        if not isinstance(v, Bounded):
            raise self.error("a host-level 'chunkat' index must be a name bounded by a 'with'", x)
        return v.value, v.bound

    def scalar(self, x: A.Expr) -> E.Expr:
        v = self.value(x)
        v = v.value if isinstance(v, Bounded) else v
        if not isinstance(v, E.Expr):
            raise self.error("expected an integer here", x)
        return v

    def host_swap(self, s: A.Swap, params: set[str]) -> None:
        """``swap(a, b)`` / ``rotate(a, b, c..)`` between launches: the names move, not the bytes
        (LANGUAGE.md 7.8); ``a`` names what ``b`` named, and so on round.  In a host loop the
        launcher's variables exchange their tensors each time it runs."""
        if any(isinstance(self.names.get(n), Pending) for n in s.names) and all(
            isinstance(self.names.get(n), (Pending, Tensor)) and n not in params for n in s.names
        ):
            if self.loops:
                raise self.error(
                    f"a host-level '{s.kind}' of a dma.any placeholder in a host loop",
                    s,
                    "bind a copy to the placeholder before the loop ('f = dma.copy .. => global;'), or swap the"
                    " futures inside a kernel",
                )
            old = [self.names[n] for n in s.names]  # straight-line code: the names change places
            copies = any(n in self.copies for n in s.names)
            for n, v in zip(s.names, [*old[1:], old[0]], strict=True):
                self.names[n] = v
                if isinstance(v, Tensor) and copies:  # (``n.data`` reads the tensor, as a copy's does)
                    self.copies.add(n)
                else:
                    self.copies.discard(n)
            return
        tensors: list[Tensor] = []
        for n in s.names:
            v = self.names.get(n)
            if not isinstance(v, Tensor) or n in params:
                what = "a parameter" if n in params else "something other than a buffer or a copy"
                raise self.error(f"a host-level '{s.kind}' of '{n}', {what}", s)
            tensors.append(v)
        first = tensors[0]
        for t in tensors[1:]:
            if (
                t.dtype != first.dtype
                or len(t.dims) != len(first.dims)
                or not all(E.same(E.fold(a), E.fold(b)) for a, b in zip(t.dims, first.dims, strict=True))
            ):
                raise self.error(f"a host-level '{s.kind}' of '{first.name}' and '{t.name}', of other shapes", s)
        self.uid += 1
        tmp = f"_{s.kind}{self.uid}"
        line = line_of(s)
        self.body.append(H.Let(tmp, E.Var(first.host, first.dtype), line=line))
        for a, b in zip(tensors, tensors[1:], strict=False):
            self.body.append(H.Assign(a.host, E.Var(b.host, b.dtype), line=line))
        self.body.append(H.Assign(tensors[-1].host, E.Var(tmp, first.dtype), line=line))

    def host_any(self, s: A.DmaAny) -> None:
        self.names[s.result] = Pending(s.result)

    def host_wait(self, s: A.Wait) -> None:
        """Copies between launches are done when the next statement runs: nothing to wait for."""
        for x in s.items:
            name = x.name if isinstance(x, A.Name) else None
            if name is None or not isinstance(self.names.get(name), (Tensor, Pending)):
                raise self.error("a host-level 'wait' on something that is not a copy's future", x)


def copies_as_tensors(top: A.Parallel, copies: set[str]) -> A.Parallel:
    """``top`` with ``f.data`` of the copies made between launches (``copies``) read as the tensor
    ``f`` they hold (the kernels take them as tensors)."""

    def hit(n: A.Node) -> bool:
        return isinstance(n, A.Member) and n.member == "data" and isinstance(n.base, A.Name) and n.base.name in copies

    if not copies or not any(hit(n) for n in top.walk()):
        return top
    new = copy.deepcopy(top)

    def fix(v: Any) -> Any:
        if isinstance(v, A.Node) and hit(v):
            return A.Name(v.base.name, span=v.span)
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, tuple):
            return tuple(fix(x) for x in v)
        if isinstance(v, A.Node):
            for f in dataclasses.fields(v):
                if f.name != "span":
                    setattr(v, f.name, fix(getattr(v, f.name)))
        return v

    return fix(new)


@dataclass
class _Window:
    """A window of a tensor while its view operations apply.  Rectangular (``strides`` None):
    ``origin`` and ``dims`` per dimension of the tensor, ``axes`` the dimensions the view keeps
    (``.sqz()`` drops some).  Strided: ``offset`` in the tensor's row-major elements, and per
    dimension of the view its ``shape`` and ``strides`` (in those elements)."""

    root: list[E.Expr]  # the tensor's extents
    dims: list[E.Expr]
    origin: list[E.Expr]
    axes: list[int]
    offset: E.Expr = E.Const(0)
    strides: list[E.Expr] | None = None
    flat: list[E.Expr] | None = None  # strided: the view's extents

    @property
    def shape(self) -> list[E.Expr]:
        return self.flat if self.flat is not None else [self.dims[d] for d in self.axes]

    @shape.setter
    def shape(self, value: list[E.Expr]) -> None:
        if self.strides is not None:
            self.flat = list(value)
            return
        for d, n in zip(self.axes, value, strict=True):
            self.dims[d] = n

    def move(self, by: list[E.Expr], shape: list[E.Expr]) -> None:
        """The origin moves ``by`` (in the view's coordinates); the extents become ``shape``."""
        if self.strides is not None:
            for b, st in zip(by, self.strides, strict=True):
                self.offset = E.fold(E.Bin("+", self.offset, E.Bin("*", b, st)))
        else:
            for d, b in zip(self.axes, by, strict=True):
                self.origin[d] = E.fold(E.Bin("+", self.origin[d], b))
        self.shape = shape

    def keep(self, keep: list[bool]) -> None:
        if self.strides is not None:
            self.flat = [n for n, k in zip(self.shape, keep, strict=True) if k]
            self.strides = [s for s, k in zip(self.strides, keep, strict=True) if k]
        else:
            self.axes = [d for d, k in zip(self.axes, keep, strict=True) if k]

    def flatten(self) -> None:
        """From here on a strided view: the offset and strides of the rectangular window, in the
        tensor's row-major elements."""
        if self.strides is not None:
            return
        row: list[E.Expr] = []
        step: E.Expr = E.Const(1)
        for n in reversed(self.root):
            row.insert(0, step)
            step = E.fold(E.Bin("*", step, n))
        self.offset = E.fold(sum_of([E.Bin("*", o, r) for o, r in zip(self.origin, row, strict=True)]))
        shape = self.shape
        self.strides = [row[d] for d in self.axes]
        self.flat = shape


def sum_of(items: list[E.Expr]) -> E.Expr:
    out: E.Expr = E.Const(0)
    for x in items:
        out = E.Bin("+", out, x)
    return out


def _blank(x: A.Expr) -> bool:
    return isinstance(x, A.Name) and x.name == "_"
