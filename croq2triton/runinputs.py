"""``croq2triton run``: random inputs for a function, poisoned outputs, and what was left unwritten.

A tensor parameter the function only writes (``sema/writes.py`` finds the written ones; one it also
reads, e.g. ``out.at(i) += ..``, keeps random values) is filled with poison
(``runtime/poison.py``) before the launch; so is a buffer the function returns, when every buffer
it declares without a value is only written (the launcher zero-fills such buffers otherwise, as
LANGUAGE.md asks of programs that accumulate into them).  After the launch, elements still holding
the poison were not written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import CroqError
from .frontend import ast as A
from .runsizes import DEFAULT_UNKNOWN, Value, scalar_knob
from .sema.types import SUB_BYTE, TYPES
from .sema.writes import root_name, written_params

RETURNED = "return value"  # the name of a returned buffer in reports


# ------------------------------------------------------------------ which names are only written
def _string_names(n: A.Node) -> list[str]:
    """Names a node holds as strings (not as ``Name`` nodes): uses we cannot classify."""
    if isinstance(n, A.Swap):
        return list(n.names)
    if isinstance(n, A.IncDec):
        return [n.target]
    if isinstance(n, A.RangeItem):
        return [n.name]
    if isinstance(n, A.Apply):
        return [n.frag]
    return []


def _body_nodes(fn: A.CoFunction) -> list[A.Node]:
    return [n for s in fn.body for n in s.walk()]


def only_written(fn: A.CoFunction, names: set[str]) -> set[str]:
    """The subset of ``names`` (parameters or buffers of ``fn``) that ``fn`` writes and never reads.

    Syntactic and conservative: every mention of a name other than as the root of a plain store
    target (``x.at(i) = v``, a copy destination, ``mma.store`` destination), of a view bound to
    another name (whose mentions then count) or of ``return x`` counts as a read."""
    nodes = _body_nodes(fn)
    alias: dict[str, str] = {}
    not_reads: set[int] = set()  # ids of Name nodes that are no reads
    for n in nodes:
        value: A.Expr | None = None
        target: str | None = None
        if isinstance(n, A.Assign) and n.op == "=" and isinstance(n.target, A.Name):
            value, target = n.value, n.target.name
        elif isinstance(n, A.Declarator) and n.init is not None:
            value, target = n.init, n.name
        if target is not None and isinstance(value, (A.View, A.Name, A.Paren)):
            r = root_name(value)
            if r is not None and (r.name in names or r.name in alias):
                alias[target] = alias.get(r.name, r.name)
                not_reads.add(id(r))
                if isinstance(n, A.Assign):
                    not_reads.add(id(n.target))
    stores: list[A.Expr | None] = []
    for n in nodes:
        if isinstance(n, A.Assign) and n.op == "=" and not isinstance(n.target, A.Name):
            stores.append(n.target)
        elif isinstance(n, A.DmaStmt) and not n.dst_storage:
            stores.extend(n.dst.options if isinstance(n.dst, A.Select) else [n.dst])
        elif isinstance(n, A.MmaStore):
            stores.append(n.dst)
        elif isinstance(n, A.Return) and isinstance(n.value, A.Name):
            not_reads.add(id(n.value))
    written: set[str] = set()
    for t in stores:
        r = root_name(t)
        if r is not None:
            root = alias.get(r.name, r.name)
            if root in names:
                written.add(root)
                not_reads.add(id(r))
    read: set[str] = set()
    for n in nodes:
        if isinstance(n, A.Name) and id(n) not in not_reads:
            read.add(alias.get(n.name, n.name))
        read.update(alias.get(s, s) for s in _string_names(n))
    return (written & names) - read


def _host_buffers(stmts: Sequence[A.Stmt]) -> Iterator[tuple[A.SpannedDecl, A.Declarator]]:
    """Buffers declared outside ``parallel`` (the launcher allocates them)."""
    for s in stmts:
        if isinstance(s, A.Parallel):
            continue
        if isinstance(s, A.SpannedDecl) and s.storage in (None, "global"):
            for d in s.items:
                yield s, d
        for c in s.children():
            if isinstance(c, A.Stmt):
                yield from _host_buffers([c])


def returned_name(fn: A.CoFunction) -> str | None:
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.Return) and isinstance(n.value, A.Name):
                return n.value.name
    return None


def poison_allocations(fn: A.CoFunction) -> bool:
    """May the launcher's allocations of ``fn`` be poisoned?  Only when a buffer is returned and every
    buffer declared without a value is only written."""
    ret = returned_name(fn)
    unfilled = {d.name for _, d in _host_buffers(fn.body) if d.init is None and d.fill is None}
    return ret is not None and ret in unfilled and only_written(fn, unfilled) == unfilled


# ------------------------------------------------------------------ inputs
@dataclass
class Inputs:
    args: list[Any]
    poisoned: list[str] = field(default_factory=list)  # tensor parameters filled with poison
    kept: list[str] = field(default_factory=list)  # written parameters also read: random values kept
    poison_returned: bool = False


def _dim(d: A.Expr, p: A.Param, values: dict[str, Value]) -> int:
    if isinstance(d, A.Name):
        return int(values[d.name])
    if isinstance(d, A.IntLit):
        return d.value
    if isinstance(d, A.Unknown):
        return int(values.get(p.name or "", DEFAULT_UNKNOWN))  # an unnamed parameter has no knob
    if isinstance(d, A.Paren):
        return _dim(d.expr, p, values)
    if isinstance(d, A.Binary) and d.op in ("+", "-", "*", "/"):
        a, b = _dim(d.lhs, p, values), _dim(d.rhs, p, values)
        return a + b if d.op == "+" else a - b if d.op == "-" else a * b if d.op == "*" else a // b if b else 0
    raise CroqError(f"cannot build a random input for parameter '{p.name}'", p.span)


def make_inputs(fn: A.CoFunction, values: dict[str, Value], device: str, seed: int = 0, empty: bool = False) -> Inputs:
    """Random inputs (normal floats, small integers, random bools) and poisoned outputs; ``empty``:
    uninitialised tensors of the same shapes and dtypes (for recording launches, which read none)."""
    import torch

    from .runtime.poison import can_poison, poisoned

    gen = torch.Generator().manual_seed(seed)
    writes = written_params(fn)
    only = only_written(fn, writes)
    out = Inputs([], poison_returned=poison_allocations(fn))
    for p in fn.params:
        t = p.type
        if t.kind == "spanned":
            dims_e = t.shape.dims if t.shape is not None else None
            rank = t.shape.rank if t.shape is not None and t.shape.rank else 1
            dims = (
                [_dim(d, p, values) for d in dims_e]
                if dims_e is not None
                else [int(values.get(p.name or "", DEFAULT_UNKNOWN))] * rank
            )
            for n in dims:
                if n <= 0:
                    raise CroqError(f"parameter '{p.name}' would have shape {dims}; extents must be positive", p.span)
            et = TYPES[t.elem or "f32"]
            if et.torch is None:
                raise CroqError(f"parameter '{p.name}': no torch type for '{t.elem}'", p.span)
            dtype = getattr(torch, et.torch)
            if empty:
                x = torch.empty(*dims, dtype=dtype, device=device)
            elif p.name in only and can_poison(dtype):
                x = poisoned(tuple(dims), dtype, device)
                out.poisoned.append(p.name or "")
            elif et.is_float:
                x = torch.randn(*dims, generator=gen).to(dtype).to(device)
            elif et.kind == "bool":
                x = (torch.rand(*dims, generator=gen) > 0.5).to(device)
            elif t.elem in SUB_BYTE:  # every value of the type, and only those
                sb = SUB_BYTE[t.elem]
                x = torch.randint(sb.lo, sb.hi + 1, tuple(dims), generator=gen).to(dtype).to(device)
            else:
                x = torch.randint(0, 8, tuple(dims), generator=gen).to(dtype).to(device)
            if p.name in writes and p.name not in only:
                out.kept.append(p.name or "")
            out.args.append(x)
        elif t.kind in ("int", "elem", "bool"):
            knob = scalar_knob(p)
            assert knob is not None
            out.args.append(values[p.name] if p.name else knob.default)  # unnamed: the body cannot read it
        else:
            out.args.append(None)
    return out


# ------------------------------------------------------------------ unwritten elements
@dataclass
class Unwritten:
    name: str
    count: int
    total: int
    first: list[tuple[int, ...]]
    poison: str

    def format(self) -> str:
        idx = ", ".join(str(list(i)) for i in self.first)
        more = ", ..." if self.count > len(self.first) else ""
        return (
            f"{self.name}: {self.count} of {self.total} elements not written "
            f"(still the poison {self.poison}; first: {idx}{more})"
        )


def find_unwritten(tensors: dict[str, Any], shown: int = 4) -> list[Unwritten]:
    """For each poisoned tensor, the elements still holding the poison."""
    import torch

    from .runtime.poison import describe, unwritten

    out: list[Unwritten] = []
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            continue
        mask = unwritten(t.detach())
        count = int(mask.sum())
        if count:
            first = [tuple(int(i) for i in ix) for ix in torch.nonzero(mask)[:shown].tolist()]
            out.append(Unwritten(name, count, t.numel(), first, describe(t.dtype)))
    return out


# ------------------------------------------------------------------ results of out-of-bounds reads
@dataclass
class OutOfBounds:
    """Elements of an output that the OOB sanitizer made NaN: computed from reads outside a tensor."""

    name: str
    count: int
    total: int
    first: list[tuple[int, ...]]

    def format(self) -> str:
        idx = ", ".join(str(list(i)) for i in self.first)
        more = ", ..." if self.count > len(self.first) else ""
        return (
            f"{self.name}: {self.count} of {self.total} elements computed from out-of-bounds reads "
            f"(the sanitizer's NaN; first: {idx}{more})"
        )


def find_out_of_bounds(
    tensors: dict[str, Any], zero_fill: dict[str, Any] | None = None, shown: int = 4
) -> list[OutOfBounds]:
    """For each output of a run under ``--oob-fill nan``: the elements that are NaN but not the poison
    (written, as NaN); with ``zero_fill`` (the same call's outputs with reads outside reading zero),
    only those that are a number there, so a NaN the computation makes itself is not counted."""
    import torch

    from .runtime.poison import unwritten

    out: list[OutOfBounds] = []
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point:
            continue
        t = t.detach()
        mask = torch.isnan(t) & ~unwritten(t)
        ref = (zero_fill or {}).get(name)
        if isinstance(ref, torch.Tensor) and ref.shape == t.shape:
            mask &= ~torch.isnan(ref.detach().to(t.device))
        count = int(mask.sum())
        if count:
            first = [tuple(int(i) for i in ix) for ix in torch.nonzero(mask)[:shown].tolist()]
            out.append(OutOfBounds(name, count, t.numel(), first))
    return out
