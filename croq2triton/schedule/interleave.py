"""Whole lines for accesses a lane makes at a stride along the contiguous axis: interleaved pairs
read and written as one tile, elements read by neighbouring lanes read once and repeated.

Triton reads 16 bytes a thread at once only where consecutive lanes of an access's contiguous
axis read consecutive addresses.  Two common forms do not, though together they read whole lines:

* **Interleaved groups** (rotary embeddings on pairs, complex numbers stored as pairs, a GLU of
  interleaved halves): lane ``j`` of a lane axis of ``L`` reads ``x.at(.., c * j + k)`` for each
  ``k`` in ``0 .. c - 1`` (``c`` a power of two), one access each, every one at a stride of ``c``.
  Together they are the ``c * L`` consecutive elements ``R + f`` for a lane ``f`` of ``c * L``
  (``f = c * j + k``): one load of those, reshaped to ``[.., L, c]`` and taken apart with
  ``tl.split`` (each element exactly as loaded: no arithmetic touches it, so -0.0 and NaN stay),
  and, for stores, the values joined (``tl.join``) and reshaped into one store.
* **Lanes split by a division** (nearest upsampling's ``x.at(w / 2)``, pixel shuffle's
  ``x.at(c * 4 + w % 2, .., w / 2)``): the index of lane ``J`` of ``L`` reads ``J`` only through
  ``P / c`` and ``P % c`` (``P = c * Q + J``).  With ``J = c * j + r`` (``j`` a lane of ``L / c``,
  ``r`` in ``0 .. c - 1``) the index is, for each ``r``, ``Q + j`` and ``r`` there: the access is
  the ``c`` loads of ``j`` (one where they are the same: a repeated read), each along whole lines,
  interleaved back into the lanes of ``J`` (``tl.join`` and a reshape: lane ``J`` gets load
  ``J % c``'s element ``J / c``).

* **A lone stride** (every other column, ``x[:, ::c]``): a load at ``c * j + R`` that no group
  completes, along the tile's last axis, of an element of at most ``SECTOR_BYTES / c`` bytes, reads
  the whole line ``R + f`` (every 32-byte DRAM sector of it holds an element the source reads, so
  it reads the sectors the strided load reads) and keeps part 0 of it (``tl.split``): the register
  tile ``c`` times wider, at most ``LONE_THREAD_ELEMS`` elements a thread.
* **An index chosen by a select** (a roll's wrap-around ``x.at(r, src < 0 ? src + N : src)``): the
  last index holds one ``c ? a : b`` whose condition is a threshold on a lane ``j`` of the tile's
  last axis (``j`` with coefficient +-1 against what is constant along that axis: one run of lanes
  each side), and the index is contiguous along ``j`` with ``a`` and with ``b``.  Triton cannot
  prove a select contiguous, so it read element by element; as two loads, of ``a`` where ``c``
  holds and of ``b`` where it does not, each is contiguous, and vectors where the threshold and the
  start are aligned (a shift Triton specialises as a multiple of 16).  Where they are not, each
  element is two scalar loads, one of them masked off (unmeasured against the one of before; in
  all but the program that holds the threshold, a whole warp's is off).

*Proof obligations* (checked here, else the accesses are left alone):

* Groups: the ``c`` accesses are of one tensor, under one mask, at indices equal in every
  dimension but the last, which is ``c * j + R + k`` for the ``k``-th (``R`` constant along the
  lanes, the other dimensions free of ``j``); between the first and the last of them only lets and
  loads (of a group of stores: lets and loads of other tensors), so moving them together changes
  nothing a statement reads.  The one access at ``R + f`` is, at ``f = c * j + k``, the ``k``-th
  access at lane ``j``: the same element, under the same mask (a mask that reads ``j`` is
  rewritten with ``j = f / c``, which holds for ``f >= 0``).  The stored values are broadcast to a
  tile with ``L`` lanes along ``j``'s axis (the reshape's), of the tensor's type.
* Lone stride: the line's mask is the load's terms constant along ``j``'s axis and the bounds
  of ``R + f`` in the last dimension (``R + f < extent``, ``R + f >= 0`` unless non-negative), and
  every dimension's index keeps both bounds there (a term or its range), so the elements the
  source skips lie inside the tensor: reading them has no effect and their values are dropped.
  Part 0 at ``j`` is the element ``R + c * j``, the load's own; the load's exact mask is applied to
  it (``tl.where(mask, part, other)``, and the OOB fill), so every lane holds what it held.
* Select: where ``c`` holds the index is the one with ``a`` in place of the select (``b`` where it
  does not), so the load of ``a`` under ``c`` and the load's mask terms with ``a`` in place of the
  select reads what the load read on those lanes, masked off where it was (filled alike: the same
  ``other`` and OOB fill), and the other load the rest; ``tl.where(c, ..)`` takes each lane's.
  The condition is evaluated twice more, as an expression (no effect).
* Divisions: ``P`` is affine in ``J`` with coefficient 1 and ``Q = (P - J) / c`` is exact and
  non-negative (every other coefficient of ``P`` a multiple of ``c``), so ``P / c = Q + j`` and
  ``P % c = r`` (C's truncation is the floor on non-negative values); every other use of ``J`` is
  ``c * j + r``.  The mask terms become the terms at ``J = c * j + r``; the ones that still vary
  along ``j``'s axis and are not the bounds of the new index are left out of the new load's mask
  where the bounds of every dimension are kept (a term, or the index's range: the elements the
  wider mask reads lie inside the tensor, reading them has no effect) and the exact mask is applied
  to the interleaved value (``tl.where(mask, value, other)``), so every lane holds what it held.
  A single repeated load needs its mask the same for every ``r``.

Measured: compiled for sm_90a (tests/test_irregular_forms2.py ``test_auto_accesses_whole_lines``),
rope on interleaved pairs, nearest upsampling and pixel shuffle go from one element a thread to
vector loads and stores; every other column (tests/test_irregular_forms3.py) from 64 scalar loads
to 32 ``v4`` ones.
"""

from __future__ import annotations

import dataclasses

from ..sema.types import TYPES
from ..tir import expr as E
from ..tir import nodes as N
from .vecmasks import _NEGATED, VECTOR_BYTES, _bound_terms

MOST = 8  # the widest group: 8 accesses a lane (c = 8)
SECTOR_BYTES = 32  # a DRAM sector: a lone stride of at most this many bytes reads the sectors of its whole line
LONE_THREAD_ELEMS = 64  # a lone stride's line: at most this many elements a thread (its tile in registers)


@dataclasses.dataclass(frozen=True)
class _Lane:
    var: E.Var
    value: E.Expr  # tl.arange(0, L), lifted
    extent: int
    axis: int  # from the right: -1 the last axis of a tile


def interleave(kernel: N.Kernel) -> N.Kernel:
    """``kernel`` with its interleaved groups and lanes split by a division read as whole lines (module
    doc); ``kernel`` itself where nothing applies."""
    lanes: dict[str, _Lane] = {}
    for s in kernel.body:
        if isinstance(s, N.Let) and E.is_lane(s.value):
            arange = s.value if isinstance(s.value, E.Arange) else s.value.value  # type: ignore[attr-defined]
            n, shape = arange.n, s.value.shape
            if isinstance(n, int) and sum(1 for d in shape if d != 1) == 1:
                axis = next(k for k, d in enumerate(shape) if d != 1) - len(shape)
                lanes[s.var.name] = _Lane(s.var, s.value, n, axis)
    if not lanes:
        return kernel
    rewrite = _Rewrite(kernel, lanes)
    body = rewrite.stmts(kernel.body, {})
    if not rewrite.changed:
        return kernel
    return dataclasses.replace(kernel, body=body)


class _Rewrite:
    def __init__(self, kernel: N.Kernel, lanes: dict[str, _Lane]) -> None:
        self.pointers = {a.name: a for a in kernel.args if isinstance(a, N.Pointer)}
        self.lanes = lanes
        self.taken = {a.name for a in kernel.args} | {v.name for s in N.walk(kernel.body) for v in N.defines(s)}
        self.taken |= {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Assign)}
        self.changed = False
        self.warps = kernel.num_warps

    def fresh(self, base: str, type_: str = "i32", dims: E.Shape = (), extent: int = 0) -> E.Var:
        """A new variable; with an ``extent``, a lane of that many (bounded by its range)."""
        name = N.fresh_name(base, self.taken)
        if extent:
            return E.Var(name, type_, lo=0, hi=extent - 1, dims=dims)
        return E.Var(name, type_, dims=dims)

    def resolve(self, e: E.Expr, lets: dict[str, E.Expr]) -> E.Expr:
        return E.fold(E.resolve(e, lets))

    def stmts(self, body: list[N.Stmt], lets: dict[str, E.Expr]) -> list[N.Stmt]:
        lets = dict(lets)
        out: list[N.Stmt] = []
        gone: set[int] = set()  # positions of accesses taken into a group
        later: dict[int, list[N.Stmt]] = {}  # a group's store, where its last store was
        for p, s in enumerate(body):
            if isinstance(s, N.Let) and s.var.name not in self.lanes:
                lets[s.var.name] = s.value
            elif isinstance(s, N.Assign):
                lets.pop(s.var.name, None)
            if p in later:
                out += later[p]
                continue
            if p in gone:
                continue
            if isinstance(s, (N.For, N.While)):
                s = dataclasses.replace(s, body=self.stmts(s.body, lets))
            elif isinstance(s, N.If):
                s = dataclasses.replace(s, then=self.stmts(s.then, lets), orelse=self.stmts(s.orelse, lets))
            elif isinstance(s, N.Load) and s.base in self.pointers:
                group = self.load_group(body, p, lets)
                found = group[0] if group is not None else self.divided(s, lets)
                if found is None and group is None:
                    found = self.lone(s, lets) or self.chosen(s, lets)
                if found is not None:
                    out += found
                    gone.update(group[1] if group is not None else ())
                    self.changed = True
                    continue
            elif isinstance(s, N.Store) and s.base in self.pointers:
                stored = self.store_group(body, p, lets)
                if stored is not None:
                    members, replaced = stored
                    gone.update(members)
                    later[max(members)] = replaced
                    self.changed = True
                    continue
            out.append(s)
        return out

    # ---------------------------------------------------------------- groups: c * j + k

    def pattern(self, index: tuple[E.Expr, ...], lets: dict[str, E.Expr]) -> tuple[_Lane, int, E.Expr] | None:
        """(the lane ``j``, ``c``, ``R``) where ``index``'s last dimension is ``c * j + R`` (``c`` a
        power of two from 2 to MOST, ``R`` free of lanes along ``j``'s axis) and no other reads ``j``."""
        if not index:
            return None
        last = self.resolve(index[-1], lets)
        found = E.linear(last, self.lanes)
        if found is None:
            return None
        coefs, rest = found
        strided = [(n, c) for n, c in coefs.items() if c > 1 and c & (c - 1) == 0 and c <= MOST]
        if len(strided) != 1:
            return None
        name, c = strided[0]
        lane = self.lanes[name]
        if any(self.lanes[n].axis == lane.axis for n in coefs if n != name) or not _constant_along(rest, lane.axis):
            return None
        if any(name in {v.name for v in E.free_vars(self.resolve(i, lets))} for i in index[:-1]):
            return None
        return lane, c, E.fold(E.Bin("+", E.Bin("*", E.Const(c), lane.var), rest))

    def members(
        self, body: list[N.Stmt], p: int, lets: dict[str, E.Expr], stores: bool
    ) -> tuple[dict[int, int], dict[str, E.Expr]] | None:
        """{k: position} of the group that ``body[p]`` starts (the module doc's obligations), and the lets
        up to its last member; None where it is not the first of a whole group."""
        s = body[p]
        assert isinstance(s, (N.Load, N.Store))
        found = self.pattern(s.index, lets)
        if found is None:
            return None
        lane, c, first = found
        group = {0: p}
        lets = dict(lets)
        for q in range(p + 1, len(body)):
            t = body[q]
            if isinstance(t, N.Let):
                lets[t.var.name] = t.value
                continue
            kind = N.Store if stores else N.Load
            if isinstance(t, kind) and t.base == s.base and len(t.index) == len(s.index):
                same_mask = (t.mask is None) == (s.mask is None)
                if isinstance(t, N.Load) and isinstance(s, N.Load):  # (filled alike outside the mask)
                    same_mask = same_mask and t.other == s.other and t.nan_outside == s.nan_outside
                other = self.pattern(t.index, lets)
                if same_mask and other is not None and other[0].var.name == lane.var.name and other[1] == c:
                    k = E.fold(E.Bin("-", other[2], first))
                    rest_same = all(
                        E.same(self.resolve(a, lets), self.resolve(b, lets))
                        for a, b in zip(t.index[:-1], s.index[:-1], strict=True)
                    )
                    if isinstance(k, E.Const) and 0 < int(k.value) < c and int(k.value) not in group and rest_same:
                        group[int(k.value)] = q
                        if len(group) == c:
                            return group, lets
                        continue
            if isinstance(t, N.Load) and (not stores or t.base != s.base):
                continue
            return None
        return None

    def flat(self, index: tuple[E.Expr, ...], lets: dict[str, E.Expr], lane: _Lane, c: int) -> tuple:
        """The group's index: its last dimension ``R + f`` for the new lane ``f`` of ``c * L``."""
        f = self.fresh(f"{lane.var.name}_x{c}", dims=_dims(lane, c * lane.extent), extent=c * lane.extent)
        f_value = _lane_value(lane, c * lane.extent)
        last = self.resolve(index[-1], lets)
        coefs, rest = E.linear(last, [lane.var.name])  # type: ignore[misc]
        new_last = E.fold(E.Bin("+", rest, f))
        return f, f_value, (*index[:-1], new_last)

    def group_mask(
        self, masks: list[E.Var | None], lets: dict[str, E.Expr], lane: _Lane, f: E.Var, c: int, line: int
    ) -> tuple[E.Var | None, list[N.Stmt]] | None:
        """The mask of the group's access at ``f``: for each term of the members' masks (``k``-th
        member's term ``t_k``), a term ``T`` of ``f`` with ``T(c * j + k) = t_k(j)`` (a term free of
        ``j`` as it is; a bound ``c * j + R + k < E`` as ``R + f < E``; one the same for every member,
        at ``j = f / c``), each checked by putting ``f = c * j + k`` back; None where one is not found."""
        if all(m is None for m in masks):
            return None, []
        if any(m is None for m in masks):
            return None
        terms = [E.conjuncts(self.resolve(m, lets)) for m in masks]  # type: ignore[arg-type]
        if len({len(t) for t in terms}) != 1:
            return None
        j = lane.var
        out: list[E.Expr] = []
        for pos in range(len(terms[0])):
            ts = [t[pos] for t in terms]
            free = j.name not in {v.name for v in E.free_vars(ts[0])}
            for candidate in (ts[0], _lifted(ts[0], j, f, c), E.substitute(ts[0], {j.name: E.Bin("/", f, E.Const(c))})):
                if candidate is None or (candidate is ts[0] and not free):
                    continue
                back = [_divmods(E.substitute(candidate, {f.name: c * j + k}), j, c) for k in range(c)]
                if all(_same(b, t) for b, t in zip(back, ts, strict=True)):
                    out.append(E.fold(candidate))
                    break
            else:
                return None
        reads = {v.name for t in out for v in E.free_vars(t)}
        if j.name not in reads and f.name not in reads and len({m.name for m in masks if m}) == 1:
            return masks[0], []  # (one mask, constant along the lanes of the group)
        value = E.conj(out)
        new = self.fresh(f"{masks[0].name}_x{c}", type_="i1", dims=value.shape)  # type: ignore[union-attr]
        return new, [N.Let(new, value, line=line)]

    def load_group(self, body: list[N.Stmt], p: int, lets: dict[str, E.Expr]) -> tuple[list[N.Stmt], list[int]] | None:
        found = self.members(body, p, lets, stores=False)
        if found is None:
            return None
        group, upto = found
        s = body[p]
        assert isinstance(s, N.Load)
        lane, c, _ = self.pattern(s.index, lets)  # type: ignore[misc]
        f, f_value, index = self.flat(s.index, lets, lane, c)
        masked = self.group_mask([body[q].mask for _, q in sorted(group.items())], upto, lane, f, c, s.line)  # type: ignore[attr-defined]
        if masked is None:
            return None
        mask, head = masked
        # the load goes where the first member was: nothing it reads may be loaded after that
        later = {x.var.name for x in body[p + 1 : max(group.values()) + 1] if isinstance(x, N.Load)}
        reads = {v.name for x in head for e in N.exprs_of(x) for v in E.free_vars(e)}
        if reads & later:
            return None
        shape = E.broadcast(*(i.shape for i in index), *(() if mask is None else (mask.shape,)))
        rank = len(shape)
        axis = rank + lane.axis
        if axis < 0 or shape[axis] != c * lane.extent:
            return None
        whole = self.fresh(f"{s.var.name}_x{c}", type_=s.var.type, dims=shape)
        out: list[N.Stmt] = [N.Let(f, f_value, line=s.line), *head]
        out.append(dataclasses.replace(s, var=whole, index=index, mask=mask))
        parts = _parted(whole, shape, axis, c)
        for k, q in sorted(group.items()):
            load = body[q]
            assert isinstance(load, N.Load)
            out.append(N.Let(load.var, parts[k], line=load.line))
        return out, list(group.values())

    def store_group(self, body: list[N.Stmt], p: int, lets: dict[str, E.Expr]) -> tuple[list[int], list[N.Stmt]] | None:
        found = self.members(body, p, lets, stores=True)
        if found is None:
            return None
        group, lets = found
        s = body[p]
        assert isinstance(s, N.Store)
        ptr = self.pointers[s.base]
        lane, c, _ = self.pattern(s.index, lets)  # type: ignore[misc]
        values = [body[group[k]].value for k in range(c)]  # type: ignore[attr-defined]
        if any(v.dtype != ptr.dtype or not v.shape for v in values):
            return None
        shape = E.broadcast(*(v.shape for v in values))
        axis = len(shape) + lane.axis
        if axis < 0 or shape[axis] != lane.extent:
            return None
        last = body[max(group.values())]
        f, f_value, index = self.flat(s.index, lets, lane, c)
        masked = self.group_mask([body[group[k]].mask for k in range(c)], lets, lane, f, c, last.line)  # type: ignore[attr-defined]
        if masked is None:
            return None
        mask, head = masked
        value = _interleaved(values, shape, axis)
        store = dataclasses.replace(s, index=index, value=value, mask=mask, line=last.line)
        return sorted(group.values()), [N.Let(f, f_value, line=last.line), *head, store]

    # ---------------------------------------------------------------- a lone stride: c * j + R

    def lone(self, s: N.Load, lets: dict[str, E.Expr]) -> list[N.Stmt] | None:
        """A load at ``c * j + R`` with no group: the whole line ``R + f`` (``f`` a lane of ``c * L``)
        read under its bounds, part 0 of it kept and masked again with the load's own mask (module
        doc); None where the line holds more than one DRAM sector a kept element or a bound is missing."""
        ptr = self.pointers[s.base]
        found = self.pattern(s.index, lets)
        if found is None:
            return None
        lane, c, _ = found
        nbytes = TYPES[ptr.dtype].nbytes if ptr.dtype in TYPES else 0
        if not nbytes or c * nbytes > SECTOR_BYTES or lane.axis != -1:
            return None
        f, f_value, index = self.flat(s.index, lets, lane, c)
        last = index[-1]
        terms = E.conjuncts(self.resolve(s.mask, lets)) if s.mask is not None else []
        kept = [t for t in terms if _constant_along(t, lane.axis)]
        # the line's own bounds: the elements the source skips lie inside the tensor
        kept.append(E.fold(E.Bin("<", last, ptr.extents[-1])))
        if not E.nonneg(last):
            kept.append(E.fold(E.Bin(">=", last, E.Const(0))))
        if _bound_terms(tuple(self.resolve(i, lets) for i in index), ptr.extents, kept) is None:
            return None
        line = s.line
        out: list[N.Stmt] = [N.Let(f, f_value, line=line)]
        value = E.conj(kept)
        mask = self.fresh(f"{s.mask.name}_x{c}" if s.mask else "mask", type_="i1", dims=value.shape)
        out.append(N.Let(mask, value, line=line))
        shape = E.broadcast(*(i.shape for i in index), mask.shape)
        axis = len(shape) + lane.axis
        if axis < 0 or shape[axis] != c * lane.extent:
            return None
        if _product(shape) > LONE_THREAD_ELEMS * 32 * self.warps:
            return None  # the line's tile would not stay in registers
        whole = self.fresh(f"{s.var.name}_x{c}", type_=s.var.type, dims=shape)
        out.append(dataclasses.replace(s, var=whole, index=index, mask=mask, nan_outside=False))
        part = _parted(whole, shape, axis, c)[0]
        if s.mask is not None:  # the lanes the load's mask leaves out hold what they held
            part = E.Where(s.mask, part, E.Const(s.other if s.other is not None else 0, ptr.dtype))
            if s.nan_outside:
                part = E.Call("_oob_fill", (part, s.mask), s.var.type)
        out.append(N.Let(s.var, part, line=line))
        return out

    # ---------------------------------------------------------------- an index chosen by a select

    def chosen(self, s: N.Load, lets: dict[str, E.Expr]) -> list[N.Stmt] | None:
        """A load whose last index holds one ``c ? a : b`` with ``c`` a threshold on a lane ``j`` of the
        tile's last axis and the index contiguous along ``j`` with either branch: two loads, of ``a``
        where ``c`` holds and of ``b`` where it does not, chosen by ``tl.where(c, .., ..)`` (module doc);
        None where it is not that."""
        index = tuple(self.resolve(i, lets) for i in s.index)
        if not index:
            return None
        picks = [w for w in index[-1].walk() if isinstance(w, E.Where)]
        if len(picks) != 1 or any(isinstance(w, E.Where) for i in index[:-1] for w in i.walk()):
            return None
        pick = picks[0]
        lane = self.threshold(pick.cond)
        if lane is None:
            return None
        sides = [_replaced(index[-1], pick, branch) for branch in (pick.then, pick.other)]
        ptr = self.pointers[s.base]
        width = VECTOR_BYTES // TYPES[ptr.dtype].nbytes if ptr.dtype in TYPES else 1
        for side in sides:
            found = E.linear(side, self.lanes)
            if found is None or found[0].get(lane.var.name) != 1:
                return None
            if any(self.lanes[n].axis == lane.axis for n in found[0] if n != lane.var.name):
                return None
            if _misaligned(side, width, set(self.lanes)):
                return None  # (a stencil's clamped neighbour: scalar reads either way, two of them split)
        terms = E.conjuncts(self.resolve(s.mask, lets)) if s.mask is not None else []
        negated = (
            E.Bin(_NEGATED[pick.cond.op], pick.cond.lhs, pick.cond.rhs)
            if isinstance(pick.cond, E.Bin) and pick.cond.op in _NEGATED
            else E.Un("!", pick.cond)
        )
        line = s.line
        out: list[N.Stmt] = []
        values: list[E.Var] = []
        for k, (branch, holds) in enumerate(((pick.then, pick.cond), (pick.other, negated))):
            # where ``holds``, the index is the branch's: the mask's terms at it, under ``holds``
            value = E.conj([holds, *(E.fold(_replaced(t, pick, branch)) for t in terms)])
            mask = self.fresh(f"{s.mask.name}_{'ab'[k]}" if s.mask else "mask", type_="i1", dims=value.shape)
            out.append(N.Let(mask, value, line=line))
            at = (*s.index[:-1], E.fold(sides[k]))
            shape = E.broadcast(*(i.shape for i in at), mask.shape)
            var = self.fresh(f"{s.var.name}_{'ab'[k]}", type_=s.var.type, dims=shape)
            out.append(dataclasses.replace(s, var=var, index=at, mask=mask))
            values.append(var)
        out.append(N.Let(s.var, E.Where(pick.cond, values[0], values[1]), line=line))
        return out

    def threshold(self, c: E.Expr) -> _Lane | None:
        """The lane ``j`` of the tile's last axis where ``c`` compares ``j`` (coefficient +-1, other
        lanes of that axis absent) with what is constant along it: ``c`` holds on one run of lanes and
        not on the other."""
        if not (isinstance(c, E.Bin) and c.op in ("<", "<=", ">", ">=")):
            return None
        found = E.linear(E.fold(E.Bin("-", c.lhs, c.rhs)), self.lanes)
        if found is None:
            return None
        along = [n for n in found[0] if self.lanes[n].axis == -1]
        if len(along) != 1 or abs(found[0][along[0]]) != 1 or not _constant_along(found[1], -1):
            return None
        return self.lanes[along[0]]

    # ---------------------------------------------------------------- lanes split by a division

    def divided(self, s: N.Load, lets: dict[str, E.Expr]) -> list[N.Stmt] | None:
        ptr = self.pointers[s.base]
        index = tuple(self.resolve(i, lets) for i in s.index)
        if not index:
            return None
        found = self.division(index[-1])
        if found is None:
            return None
        lane, c = found
        if lane.extent % c or lane.extent < c:
            return None
        j = self.fresh(f"{lane.var.name}_by{c}", dims=_dims(lane, lane.extent // c), extent=lane.extent // c)
        j_value = _lane_value(lane, lane.extent // c)
        terms = E.conjuncts(self.resolve(s.mask, lets)) if s.mask is not None else []
        loads: list[tuple[tuple[E.Expr, ...], list[E.Expr]]] = []
        exact = True
        for r in range(c):
            at = {lane.var.name: E.fold(E.Bin("+", E.Bin("*", E.Const(c), j), E.Const(r)))}
            idx = tuple(_divmods(E.substitute(i, at), j, c) for i in index)
            if any(lane.var.name in {v.name for v in E.free_vars(i)} for i in idx):
                return None
            coefs = E.linear(idx[-1], [j.name])
            if coefs is None or coefs[0].get(j.name) != 1:
                return None  # not along whole lines
            ts = [_divmods(E.substitute(t, at), j, c) for t in terms]
            kept = [t for t in ts if _constant_along(t, lane.axis)]
            if len(kept) < len(ts):
                bounds = _bound_terms(idx, ptr.extents, ts)
                if bounds is None:
                    return None
                kept = [t for t in ts if _constant_along(t, lane.axis) or any(t is b for b in bounds)]
                exact = exact and len(kept) == len(ts)
            loads.append((idx, kept))
        one = all(_same_all(i, loads[0][0]) and _same_all(k, loads[0][1]) for i, k in loads)
        if one:
            loads = loads[:1]
        line = s.line
        out: list[N.Stmt] = [N.Let(j, j_value, line=line)]
        values: list[E.Expr] = []
        for r, (idx, kept) in enumerate(loads):
            mask: E.Var | None = None
            if kept:
                value = E.conj(kept)
                mask = self.fresh(f"{s.mask.name}_by{c}" if s.mask else "mask", type_="i1", dims=value.shape)
                out.append(N.Let(mask, value, line=line))
            shape = E.broadcast(*(i.shape for i in idx), *(() if mask is None else (mask.shape,)))
            var = self.fresh(f"{s.var.name}_{r}" if not one else f"{s.var.name}_by{c}", type_=s.var.type, dims=shape)
            out.append(dataclasses.replace(s, var=var, index=idx, mask=mask, nan_outside=s.nan_outside and exact))
            values.append(var)
        if one:
            values = values * c
        shape = E.broadcast(*(v.shape for v in values))
        axis = len(shape) + lane.axis
        if axis < 0 or shape[axis] != lane.extent // c:
            return None
        value = _interleaved(values, shape, axis)
        if not exact:
            assert s.mask is not None
            value = E.Where(s.mask, value, E.Const(s.other if s.other is not None else 0, ptr.dtype))
            if s.nan_outside:
                value = E.Call("_oob_fill", (value, s.mask), s.var.type)
        out.append(N.Let(s.var, value, line=line))
        return out

    def division(self, e: E.Expr) -> tuple[_Lane, int] | None:
        """The lane ``J`` and ``c`` of the first ``P / c`` of ``e`` with ``P = c * Q + J``."""
        for n in e.walk():
            if not (isinstance(n, E.Bin) and n.op == "/" and isinstance(n.rhs, E.Const)):
                continue
            c = n.rhs.value
            if not (isinstance(c, int) and 2 <= c <= MOST and c & (c - 1) == 0):
                continue
            found = E.linear(n.lhs, self.lanes)
            if found is None:
                continue
            ones = [name for name, k in found[0].items() if k == 1]
            if len(found[0]) == 1 and ones:
                return self.lanes[ones[0]], c
        return None


def _misaligned(e: E.Expr, width: int, lanes: set[str]) -> bool:
    """Whether ``e`` is provably not a multiple of ``width`` at the lanes that start a group of that
    many (``i - 1``): every coefficient of a variable but the lanes a multiple of ``width``, the
    constant not."""
    if width <= 1:
        return False
    found = E.linear(e, {v.name for v in E.free_vars(e)})
    if found is None or not isinstance(found[1], E.Const) or not isinstance(found[1].value, int):
        return False
    return all(c % width == 0 for n, c in found[0].items() if n not in lanes) and found[1].value % width != 0


def _replaced(e: E.Expr, old: E.Expr, new: E.Expr) -> E.Expr:
    """``e`` with each occurrence of ``old`` as ``new``."""

    def go(x: E.Expr) -> E.Expr:
        return new if x == old else E.map_children(x, go)

    return go(e)


def _product(shape: E.Shape) -> int:
    n = 1
    for d in shape:
        n *= d if isinstance(d, int) else 1 << 30
    return n


def _same_all(a: tuple[E.Expr, ...] | list[E.Expr], b: tuple[E.Expr, ...] | list[E.Expr]) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))


def _same(a: E.Expr, b: E.Expr) -> bool:
    """``E.same``, and comparisons of the same operator whose sides are the same."""
    if isinstance(a, E.Bin) and isinstance(b, E.Bin) and a.op == b.op and a.op in E.COMPARE + E.LOGIC:
        return _same(a.lhs, b.lhs) and _same(a.rhs, b.rhs)
    return E.same(a, b)


def _dims(lane: _Lane, n: int) -> E.Shape:
    return tuple(n if d != 1 else 1 for d in lane.var.shape)


def _lane_value(lane: _Lane, n: int) -> E.Expr:
    if isinstance(lane.value, E.Lift):
        return E.Lift(E.Arange(n), lane.value.rank, lane.value.dims)
    return E.Arange(n)


def _lifted(t: E.Expr, j: E.Var, f: E.Var, c: int) -> E.Expr | None:
    """Comparison ``t`` with each side's ``g * c * j`` as ``g * f`` (``c * j + R + k < E`` as
    ``R + f < E``: the same at ``f = c * j + k`` where the ``k``-th member's term is ``t`` plus ``k``)."""
    if not (isinstance(t, E.Bin) and t.op in E.COMPARE):
        return None
    sides: list[E.Expr] = []
    for side in (t.lhs, t.rhs):
        found = E.linear(side, [j.name])
        if found is None:
            return None
        g = found[0].get(j.name, 0)
        if g % c:
            return None
        sides.append(E.fold(E.Bin("+", found[1], E.Bin("*", E.Const(g // c), f))) if g else side)
    return E.Bin(t.op, sides[0], sides[1])


def _constant_along(t: E.Expr, axis: int) -> bool:
    shape = t.shape
    return len(shape) < -axis or shape[axis] == 1


def _divmods(e: E.Expr, j: E.Var, c: int) -> E.Expr:
    """``e`` with each ``(c * j + c * Q + r) / c`` as ``j + Q`` and ``% c`` as ``r`` (``0 <= r < c``,
    ``Q`` exact and non-negative), folded."""

    def go(x: E.Expr) -> E.Expr:
        x = E.map_children(x, go)
        if isinstance(x, E.Bin) and x.op in ("/", "%") and x.rhs == E.Const(c):
            found = E.linear(E.fold(x.lhs), [j.name])
            if found is not None and found[0].get(j.name) == c:
                rest = found[1]
                for r in range(c):
                    q = E.fold(E.Bin("-", rest, E.Const(r)))
                    whole = E.fold(E.Bin("/", q, E.Const(c)))
                    if E.nonneg(q) and E.same(E.fold(E.Bin("*", whole, E.Const(c))), q):
                        return E.fold(E.Bin("+", j, whole)) if x.op == "/" else E.Const(r, x.dtype)
        return x

    return E.fold(go(E.fold(e)))


def _interleaved(values: list[E.Expr], shape: E.Shape, axis: int) -> E.Expr:
    """The values, of ``shape`` (broadcast), as one tile whose ``axis`` interleaves them: element
    ``c * j + k`` of it is element ``j`` of ``values[k]``."""
    c = len(values)

    def join(vs: list[E.Expr]) -> E.Expr:
        if len(vs) == 1:
            return vs[0]
        return E.Join(join(vs[0::2]), join(vs[1::2]))

    joined = join(values)
    rank = len(shape)
    bits = c.bit_length() - 1
    order = (*range(axis + 1), *range(rank, rank + bits), *range(axis + 1, rank))
    if order != tuple(range(rank + bits)):
        joined = E.Permute(joined, order)
    return E.Reshape(joined, (*shape[:axis], c * shape[axis], *shape[axis + 1 :]))  # type: ignore[operator]


def _parted(whole: E.Var, shape: E.Shape, axis: int, c: int) -> list[E.Expr]:
    """The ``c`` tiles of ``whole`` (of ``shape``) that :func:`_interleaved` joins: element ``j`` of
    the ``k``-th is element ``c * j + k`` along ``axis``."""
    rank = len(shape)
    bits = c.bit_length() - 1
    n = shape[axis] // c  # type: ignore[operator]
    split: E.Expr = E.Reshape(whole, (*shape[:axis], n, *([2] * bits), *shape[axis + 1 :]))
    order = (*range(axis + 1), *range(axis + 1 + bits, rank + bits), *range(axis + 1, axis + 1 + bits))
    if order != tuple(range(rank + bits)):
        split = E.Permute(split, order)
    out: list[E.Expr] = []
    for k in range(c):
        e = split
        for b in range(bits):
            e = E.Split(e, (k >> b) & 1)
        out.append(e)
    return out
