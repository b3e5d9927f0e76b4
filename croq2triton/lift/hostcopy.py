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
    uid: int
    error: Any
    value: Any
    evaluate: Any
    named_extents: Any
    copies: set[str]
    counter_bounds: dict[str, E.Expr]

    def host_dma(self, s: A.DmaStmt) -> None:
        if s.engine != "dma" or s.op not in ("copy", "transp"):
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
        if s.dst_storage:
            self.uid += 1
            var = f"_{safe(s.result or 'copy')}{self.uid}"
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
            self.body.append(H.HostCopy(dst.host, dst.name, src.host, src.name, perm, line=line_of(s)))
        if s.result is not None:
            self.names[s.result] = dst
            self.copies.add(s.result)

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
            return self.window(e)
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

    def window(self, e: A.View) -> Tensor:
        """``t.chunkat(..)`` / ``.chunk(..).at(..)`` / ``.subspan(..)[.step(..)][.at(..)]`` /
        ``.view(..).from(..)`` of a tensor between launches (LANGUAGE.md 7.6): its window, a
        slice of the tensor checked at launch to lie inside it."""
        t = self.value(e.base)
        if not isinstance(t, Tensor):
            raise self.error("a host-level view of something other than a tensor", e.base)
        origin: list[E.Expr] = [E.Const(0) for _ in t.dims]
        dims = list(t.dims)
        rank = len(dims)
        for op in e.ops:
            if op.strides or op.kind not in ("chunkat", "chunk", "subspan", "view"):
                raise self.error(
                    f"host-level '.{op.kind}' views cannot be lowered yet; take the view inside 'parallel'", op
                )
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
                for d, (i, f) in enumerate(pairs):
                    dims[d] = E.fold(E.Bin("/", dims[d], f))
                    origin[d] = E.fold(E.Bin("+", origin[d], E.Bin("*", i, dims[d])))
                continue
            if len(op.args) != rank:
                raise self.error(f"'.{op.kind}' takes {rank} extents here, {len(op.args)} given", op)
            new = [dims[d] if _blank(x) else self.scalar(x) for d, x in enumerate(op.args)]
            if op.at is not None:
                if len(op.at) != rank:
                    raise self.error(f"'.{'from' if op.kind == 'view' else 'at'}' takes {rank} indices here", op)
                steps = [self.scalar(x) for x in op.step] if op.step else new
                for d, x in enumerate(op.at):
                    off = self.scalar(x) if op.kind == "view" else E.Bin("*", self.scalar(x), steps[d])
                    origin[d] = E.fold(E.Bin("+", origin[d], off))
            dims = new
        self.uid += 1
        var = f"_window{self.uid}"
        self.body.append(H.Window(var, t.name, t.host, tuple(origin), tuple(dims), line=line_of(e)))
        return Tensor(t.name, var, t.elem, t.dtype, self.named_extents(tuple(dims), var, e), e.span)

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


def _blank(x: A.Expr) -> bool:
    return isinstance(x, A.Name) and x.name == "_"
