"""Register fragments the program writes element by element (LANGUAGE.md §7.4, §8).

``frag T [shape] x {v};`` declares a block-level register tile; ``apply {i, j} in x.span``
is an element-wise loop over it, lowered as whole-tile arithmetic: ``i`` and ``j`` become
broadcast ``tl.arange`` tensors, ``x.at(i, j)`` the tile itself (a lower-rank fragment indexed
by some of the apply indices is broadcast along the others), and a per-element condition
predicates the assignments with ``tl.where``. ``reduce_max`` / ``reduce_sum`` are ``tl.max`` /
``tl.sum`` along the axis, ``copy`` a tile copy.

Fragments live in the lifted block-level world: they may not depend on a thread-level lane
axis, and their extents must be translation-time powers of two (the tile has no padding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CroqLoweringError, CroqSemanticError
from ..frontend import ast as A
from . import exprs as X
from .symbolic import shape_text
from .values import Bounded, Frag, Val, const

if TYPE_CHECKING:
    from .kernel import KernelLowering

APPLY_AXIS = "@apply"


def _static_dims(self: KernelLowering, exprs: list[A.Expr], node: A.Node) -> list[int]:
    out: list[int] = []
    for e in exprs:
        v = self.ev(e)
        if not v.is_const or not isinstance(v.const, int) or v.const <= 0:
            raise CroqLoweringError("fragment extents must be positive constants", e.span)
        if v.const & (v.const - 1):
            raise CroqLoweringError(
                f"a fragment extent of {v.const} is not a power of two",
                e.span,
                "Triton register tiles have power-of-two extents: use 16, 32, 64, 128, ...",
            )
        out.append(int(v.const))
    if not out or len(out) > 2:
        raise CroqLoweringError("only 1-D and 2-D fragments can be lowered", node.span)
    return out


def _no_lanes(self: KernelLowering, node: A.Node, what: str) -> None:
    if self.lanes or self.cons_counts:
        raise CroqLoweringError(
            f"{what} inside a thread-level parallel or merged warpgroups is not lowered yet",
            node.span,
            "use fragments in a block with one warpgroup ('parallel p by 1 : group-4')",
        )


def s_FragDecl(self: KernelLowering, s: A.FragDecl) -> None:
    if s.elem is None or s.shape is None:
        raise CroqLoweringError("a 'frag' declaration needs an element type and a shape", s.span)
    _no_lanes(self, s, "a 'frag' declaration")
    dims = _static_dims(self, s.shape, s)
    pd = [str(d) for d in dims]
    dt = X.tl_dtype(s.elem)
    for d in s.items:
        if d.dims:
            raise CroqLoweringError("arrays of fragments are not lowered yet", d.span)
        if d.init is not None:
            raise CroqLoweringError("a fragment is initialised with '{v}', not '='", d.init.span)
        fill = self.ev(d.fill) if d.fill is not None else const(0)
        if not fill.uniform:
            raise CroqLoweringError("a fragment's fill value must be the same for the whole block", d.span)
        var = self.fresh(d.name)
        self.w.line(f"{var} = tl.full([{', '.join(pd)}], {self.cast(fill, s.elem)}, {dt})", d.span)
        self.bind(d.name, Frag(d.name, var, s.elem, s.elem, [const(x) for x in dims], pd))


def _frag_arg(self: KernelLowering, e: A.Expr) -> Frag:
    f = self.ev_any(e) if isinstance(e, A.Name) else None
    if not isinstance(f, Frag):
        raise CroqSemanticError("expected a register fragment", e.span)
    if f.split is not None:
        raise CroqLoweringError("a fragment split into power-of-two pieces cannot be used here yet", e.span)
    return f


def s_FragOp(self: KernelLowering, s: A.FragOp) -> None:
    if s.op == "all_reduce_sum":
        raise CroqLoweringError(
            "'all_reduce_sum' is not lowered yet", s.span, "a block-level fragment has one owner: drop the call"
        )
    if self.pred:
        raise CroqLoweringError(f"'{s.op}' under a per-element condition cannot be lowered", s.span)
    dst, src = (_frag_arg(self, a) for a in s.args[:2])
    sd, dd = src.pdims or [], dst.pdims or []
    if s.op == "copy":
        if sd != dd:
            raise CroqSemanticError(
                f"'copy' between fragments of shapes {shape_text(dst.dims, dd)} and {shape_text(src.dims, sd)}", s.span
            )
        self.w.line(f"{dst.var} = {_conv(src.var, src.compute, dst.compute)}", s.span)
        return
    axis = s.axis if s.axis is not None else len(sd) - 1
    if not 0 <= axis < len(sd):
        raise CroqSemanticError(f"'{s.op}' axis {axis} is out of range for a {len(sd)}-D fragment", s.span)
    want = [d for k, d in enumerate(sd) if k != axis]
    if want != dd:
        kept = [d for k, d in enumerate(src.dims) if k != axis] if src.dims is not None else None
        raise CroqSemanticError(
            f"'{s.op}' of a {shape_text(src.dims, sd)} fragment along axis {axis} gives {shape_text(kept, want)}, "
            f"but the destination is {shape_text(dst.dims, dd)}",
            s.span,
        )
    fn = "tl.max" if s.op == "reduce_max" else "tl.sum"
    self.w.line(f"{dst.var} = {_conv(f'{fn}({src.var}, axis={axis})', src.compute, dst.compute)}", s.span)


def _conv(code: str, have: str, want: str) -> str:
    return code if have == want else f"({code}).to({X.tl_dtype(want)})"


def s_Apply(self: KernelLowering, s: A.Apply) -> None:
    f = self.lookup(s.frag, s)
    if not isinstance(f, Frag) or f.pdims is None:
        raise CroqSemanticError(f"'{s.frag}' is not a register fragment", s.span)
    if f.split is not None:
        raise CroqLoweringError("'apply' over a fragment split into power-of-two pieces is not lowered yet", s.span)
    _no_lanes(self, s, "'apply'")
    if self.apply_ctx is not None:
        raise CroqLoweringError("nested 'apply' blocks cannot be lowered", s.span)
    rank = len(f.pdims)
    if len(s.vars) != rank:
        raise CroqSemanticError(f"'apply' binds {len(s.vars)} index(es) for the {rank}-D fragment '{s.frag}'", s.span)
    for d, pd in zip(f.dims or [], f.pdims, strict=True):
        if not (d.is_const and str(d.const) == pd):
            raise CroqLoweringError("'apply' over a fragment with padded extents is not lowered yet", s.span)
    self.w.comment(f"apply over {s.frag}.span: element-wise on the whole [{', '.join(f.pdims)}] tile")
    self.push()
    for k, nm in enumerate(s.vars):
        sl = "" if rank == 1 else "[:, None]" if k == 0 else "[None, :]"
        code = f"tl.arange(0, {f.pdims[k]}){sl}"  # spelled inline: most apply bodies never use the index
        v = Val(code, "int", None, frozenset([APPLY_AXIS]), None, (), True, const(int(f.pdims[k])))
        self.bind(nm, Bounded(nm, v, const(int(f.pdims[k])), "apply", s.span))
    self.apply_ctx = (list(s.vars), list(f.pdims))
    try:
        self.body(s.body)
    finally:
        self.apply_ctx = None
        self.pop()


def _positions(self: KernelLowering, f: Frag, items: list[A.Expr], node: A.Node) -> tuple[list[int], int]:
    """Which apply index each subscript of ``f.at(...)`` is, and the rank of the open apply."""
    ctx = self.apply_ctx
    if ctx is None:
        raise CroqLoweringError(
            f"element access to the fragment '{f.name}' outside an 'apply' block is not lowered",
            node.span,
            f"iterate with 'apply {{i, j}} in {f.name}.span'",
        )
    names, shape = ctx
    if len(items) != len(f.pdims or []):
        raise CroqSemanticError(f"{len(items)} index(es) for the {len(f.pdims or [])}-D fragment '{f.name}'", node.span)
    pos: list[int] = []
    for d, (e, pd) in enumerate(zip(items, f.pdims or [], strict=True)):
        if not isinstance(e, A.Name) or e.name not in names or e.name in [names[p] for p in pos]:
            raise CroqLoweringError(
                "fragment elements in 'apply' must be indexed by the apply indices, each at most once",
                e.span,
            )
        p = names.index(e.name)
        if shape[p] != pd and not self.changed:  # (a provisional accumulator shape is fixed next pass)
            ext = shape_text([f.dims[d]] if f.dims is not None else None, [pd])[1:-1]
            runs = shape[p] if shape[p].isdigit() else "a run-time extent"
            raise CroqSemanticError(
                f"'{f.name}' has extent {ext} where the 'apply' index '{e.name}' runs to {runs}", e.span
            )
        pos.append(p)
    return pos, len(names)


def _layout(code: str, pos: list[int], rank: int) -> str:
    """Spell a fragment whose dims are apply axes ``pos`` in the apply's ``rank``-D layout."""
    if len(pos) == rank:
        return code if pos == sorted(pos) else f"tl.trans({code})"
    if rank == 1 or not pos:
        return code
    return f"{code}[:, None]" if pos[0] == 0 else f"{code}[None, :]"


def frag_element(self: KernelLowering, f: Frag, e: A.At) -> Val:
    pos, rank = _positions(self, f, e.indices, e)
    return Val(_layout(f.var, pos, rank), f.compute, None, frozenset([APPLY_AXIS]))


def store_frag_element(self: KernelLowering, f: Frag, a: A.Assign) -> None:
    assert isinstance(a.target, A.At)
    pos, rank = _positions(self, f, a.target.indices, a.target)
    if len(pos) != rank:
        raise CroqLoweringError(
            f"the {len(pos)}-D fragment '{f.name}' is written once per element of a {rank}-D 'apply'",
            a.span,
            "write a lower-rank fragment in an 'apply' over its own span, or reduce with reduce_max/reduce_sum",
        )
    value = self.ev(a.value)
    if a.op != "=":
        value = X.binary(a.op, frag_element(self, f, a.target), value, False)
    val = self.cast(value, f.compute)
    # the value in the fragment's own layout (transposed when the indices are)
    if pos != sorted(pos):
        val = f"tl.trans({val})" if not value.uniform else val
    if self.pred:
        cond = self.pred_code()
        if pos != sorted(pos):
            cond = f"tl.trans({cond})"
        self.w.line(f"{f.var} = tl.where({cond}, {val}, {f.var})", a.span)
    else:
        zero = f"tl.zeros([{', '.join(f.pdims or [])}], {X.tl_dtype(f.compute)})"
        self.w.line(f"{f.var} = {zero} + {val}", a.span)


def frag_base(self: KernelLowering, base: A.Expr) -> Any:
    """The fragment an ``x.at(...)`` refers to, or None."""
    if not isinstance(base, A.Name):
        return None
    v = self.lookup_opt(base.name)
    return v if isinstance(v, Frag) else None
