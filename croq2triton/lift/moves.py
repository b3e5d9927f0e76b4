"""Data movement in the symbolic run of a kernel (lift/contraction.py), as a mixin of its
interpreter: copies between tensors and buffers, element writes of buffers, MMA fills, loads,
block-scaled MMAs and stores, each recorded as the regions, products and stores the proof reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..frontend import ast as A
from ..tir import expr as E
from .checks import mma_types
from .copies import same_elements
from .epilogue import EpilogueEval, start_value
from .notlifted import NotLifted
from .terms import (
    AccRead,
    Buffer,
    Cells,
    Elem,
    EpiValue,
    Future,
    Loaded,
    Placed,
    Region,
    Store,
    Term,
    Value,
    View,
    Written,
    unparen,
)  # fmt: skip
from .terms import (
    const_int as _const,
)
from .terms import (
    subst_elem as _subst_elem,
)
from .views import FLOATS


class Moves:
    """Copies, buffer writes and MMA statements of the interpreter (lift/contraction.py)."""

    host: Any
    scopes: Any
    stores: Any
    loops: Any
    frames: Any
    touched: Any
    lookup: Any
    bind: Any
    set: Any
    fresh: Any
    data_var: Any
    size: Any
    known: Any
    expr: Any
    value: Any
    view: Any
    new_acc: Any
    update: Any
    touch: Any
    covers_all: Any
    reset: Any
    same_idx: Any
    stmts: Any
    summed_accs: Any
    pins: dict[str, E.Expr]

    # ---------------------------------------------------------------- data movement
    def dma(self, s: A.DmaStmt) -> None:
        # ``tma.load`` is the global -> shared spelling of ``tma.copy`` (LANGUAGE.md §8)
        if s.op not in ("copy", "load", "transp") or any(at.name in ("sp", "transp") for at in s.attrs):
            raise NotLifted(f"a {s.engine}.{s.op} with these attributes", s)
        src = self.value(s.src)
        line = self.line(s)
        if isinstance(src, Cells) and src.coords and not s.dst_storage and s.op == "copy":
            dst = self.value(s.dst)  # a thread's local accumulator array copied out whole
            if not isinstance(dst, Region):
                raise NotLifted("a copy of an accumulator array into something other than a global view", s)
            self.store_tile(src, dst, line)
            return
        if s.op == "transp":  # ``dma.transp<1, 0>``: the buffer's dimension c is the source's perm[c]
            if not isinstance(src, Region):
                raise NotLifted("a dma.transp whose source is not a global view", s)
            perm = [_const(self.int_expr(x)) for x in s.cfg or []]
            if sorted(p for p in perm if p is not None) != list(range(len(src.shape))):
                raise NotLifted("a dma.transp whose order is not a permutation of the source's dimensions", s)
            src = dataclasses.replace(
                src.whole(),
                axes=tuple(src.axes[p] for p in perm),  # type: ignore[index]
                shape=tuple(src.shape[p] for p in perm),  # type: ignore[index]
                steps=None if src.steps is None else tuple(src.steps[p] for p in perm),  # type: ignore[index]
            )
        if s.op == "load" and not isinstance(src, Region):
            raise NotLifted("a tma.load whose source is not a global view", s)
        if isinstance(src, View) and isinstance(src.base.content, list) and not s.dst_storage:
            self.copy_placed_part(src, s)  # a unit's part of a staged output (``so.subspan(64, N).at(g, 0)``)
            return
        if isinstance(src, (Buffer, View)):
            content = self.buffer_content(src, s)
            dst = self.value(s.dst) if not s.dst_storage else None
            if isinstance(dst, Region):
                same_elements((src.base if isinstance(src, View) else src).elem, self.tensors[dst.tensor].elem, s)
            if isinstance(content, list) and isinstance(src, Buffer) and isinstance(dst, Region):
                if len(dst.shape) != len(src.shape) or not all(
                    E.same(x, y) for x, y in zip(dst.shape, src.shape, strict=True)
                ):
                    raise NotLifted("a copy whose source and destination shapes differ", s)
                for placed in content:
                    if isinstance(placed, Written):
                        self.copy_written(placed, dst, line)
                        continue
                    dims = placed.cells.shape[::-1] if placed.transp else placed.cells.shape
                    shape = [E.Const(n) for n in dims]
                    here = {v.name for v, _ in self.spatial}
                    extra = [(v, x) for v, x in placed.spatial if v.name not in here]
                    self.spatial.extend(extra)  # each unit's part of the buffer, copied out together
                    sub = dst.sub(list(placed.offsets), shape, [True] * len(shape))
                    self.placed_store(placed, sub, line)
                    del self.spatial[len(self.spatial) - len(extra) :]
                return
            raise NotLifted("a copy out of a buffer that is not an output store", s)
        if not isinstance(src, Region):
            raise NotLifted("a copy whose source is not a global view", s)
        src = src.whole()
        if any(at.name == "zfill" for at in s.attrs):  # zero outside the tensor, as the source states
            src = dataclasses.replace(src, zfill=True)
        if s.dst_storage:
            buf = Buffer(self.tensors[src.tensor].elem, src.shape, src)
        else:
            dst = self.value(s.dst)
            if not isinstance(dst, Buffer):
                raise NotLifted("a copy into something other than a shared buffer", s)
            same_elements(self.tensors[src.tensor].elem, dst.elem, s)
            if len(dst.shape) != len(src.shape) or not all(
                E.same(x, y) for x, y in zip(dst.shape, src.shape, strict=True)
            ):
                raise NotLifted("a copy whose source and destination shapes differ", s)
            dst.content = src
            self.touch(dst, True)
            buf = dst
        if any(at.name == "swiz" for at in s.attrs):
            self.notes.append("swizzle")
        if _const(src.shape[-1]) is not None:
            self.ksteps.append(int(_const(src.shape[-1])))  # type: ignore[arg-type]
        if (
            s.result
        ):  # a future's name assigned again (``f = dma.copy ..`` in a loop) is the same name (LANGUAGE.md 4.3)
            if isinstance(self.binding(s.result), Future):
                self.set(s.result, Future(buf))
            else:
                self.bind(s.result, Future(buf))

    def binding(self, name: str) -> Value | None:
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]  # type: ignore[no-any-return]
        return None

    def dma_any(self, s: A.DmaAny) -> None:
        """``f = dma.any``: a future of no copy yet (a later copy or a swap gives it one)."""
        self.bind(s.result, Future(Buffer("", ())))

    def swap(self, s: A.Swap) -> None:
        """``swap(a, b)`` / ``rotate(a, b, c)``: the futures change names (``a`` gets what ``b`` had, ..,
        the last what ``a`` had)."""
        values = [self.binding(n) for n in s.names]
        if len(values) < 2 or not all(isinstance(v, Future) for v in values):
            raise NotLifted(f"a '{s.kind}' of something other than futures", s)
        for n, v in zip(s.names, values[1:] + values[:1], strict=True):
            self.set(n, v)

    def copy_placed_part(self, src: View, s: A.DmaStmt) -> None:
        """A copy out of a part of a buffer that accumulators were stored into: each store into
        exactly that part (its offsets and shape) is that part's content, stored into the window;
        a part any other store may overlap is not a form the proof takes."""
        dst = self.value(s.dst)
        if not isinstance(dst, Region):
            raise NotLifted("a copy out of a part of an accumulator buffer into something other than a view", s)
        same_elements(src.base.elem, self.tensors[dst.tensor].elem, s)
        self.touch(src.base, False)
        shape = tuple(_const(x) for x in src.shape)
        if not all(src.keep) or tuple(_const(x) for x in dst.shape) != shape:
            raise NotLifted("a copy out of a part of an accumulator buffer into a window of another shape", s)
        content = src.base.content
        assert isinstance(content, list)
        for placed in content:
            if not _exactly_at(placed, src.offsets, shape):
                raise NotLifted("a copy out of a part of an accumulator buffer that other stores may overlap", s)
        line = self.line(s)
        for placed in content:
            here = {v.name for v, _ in self.spatial}
            extra = [(v, x) for v, x in placed.spatial if v.name not in here]
            self.spatial.extend(extra)
            self.placed_store(placed, dst, line)
            del self.spatial[len(self.spatial) - len(extra) :]

    def placed_store(self, placed: Placed, dst: Region, line: int) -> None:
        """An accumulator stored into a buffer, copied out to ``dst``: its terms read at the units
        fixed where it was stored (``inthreads (p == 1) mma.store acc, o1;``, copied out after)."""
        if placed.terms not in (-1, len(placed.cells.terms)):
            raise NotLifted("an accumulator copied out of a buffer that holds it as it was before", None)
        pins = self.pins
        self.pins = {**pins, **dict(placed.pins)}
        try:
            self.store_tile(placed.cells, dst, line, placed.transp)
        finally:
            self.pins = pins

    def copy_written(self, w: Written, dst: Region, line: int) -> None:
        """A buffer element written by a unit, copied out to ``dst``: that unit's store."""
        here = {v.name for v, _ in self.spatial}
        extra = [(v, x) for v, x in w.spatial if v.name not in here]
        guards = [g for g in w.guard if not any(g is h for h in self.guard)]
        self.spatial.extend(extra)
        self.guard.extend(guards)
        self.store(dst.elem(w.index), w.value, line, w.epi)
        del self.guard[len(self.guard) - len(guards) :]
        del self.spatial[len(self.spatial) - len(extra) :]

    def buffer_write(self, buf: Buffer, idx: tuple[E.Expr, ...], a: A.Assign) -> None:
        """``so.at(i, j) = value`` of an accumulator element: kept with its writers, for the copy out;
        or a tile of a tensor staged by the threads, one element each (:meth:`staged`)."""
        region = self.staged(buf, idx, a)
        if region is not None:
            self.touch(buf, True)
            buf.content = region
            buf.guard = tuple(self.guard)
            return
        old = buf.content if isinstance(buf.content, list) else []
        if a.op != "=" or buf.content is not None and not isinstance(buf.content, list):
            raise NotLifted("an update of a buffer element", a)
        if any(isinstance(x, Written) for x in old):
            raise NotLifted("a buffer written element by element in two places", a)
        ev = EpilogueEval(self)
        v = ev.expr(a.value)
        if ev.acc is None or len(idx) != len(buf.shape):
            raise NotLifted("a buffer element written with something other than an accumulator", a)
        epi = ev.result(v)
        guard = buf.guard
        self.touch(buf, True)
        buf.guard = guard  # each element keeps the conditions it was written under
        buf.content = [*old, Written(idx, ev.acc, None if epi.plain else epi, tuple(self.spatial), tuple(self.guard))]

    def staged(self, buf: Buffer, idx: tuple[E.Expr, ...], a: A.Assign) -> Region | None:
        """The classic CUDA staging of an operand tile, ``as.at(i, j) = a.at(bm # i, kt * 16 + j)``
        (also under ``cond ? a.at(..) : 0`` where ``cond`` only keeps the element inside its tensor):
        the buffer then holds a region of the tensor, as after a copy, where the proof holds (else
        None and the write is looked at as an accumulator's):

        * each buffer index runs once over its extent as the indices of the enclosing levels and
          loops in it run over theirs (:meth:`staged_index_covers`: ``i``, or ``ty * 4 + l`` of a loop over four
          rows a thread), no index in two of them: the writes cover the buffer once;
        * each buffer index is, up to terms free of those indices, the index of one dimension of
          the element read, and the other dimensions are free of them: buffer element ``idx`` is
          tensor element ``origin + idx`` along those dimensions;
        * a condition says only ``index < extent`` of the element read (as an ``if`` around an
          accumulation may, :meth:`only_in_bounds`): outside, the read is zero (``zfill``)."""
        if a.op != "=" or (buf.content is not None and not isinstance(buf.content, Region)):
            return None
        if len(idx) != len(buf.shape):
            return None
        value = unparen(a.value)
        bounds: list[E.Expr] = []
        if isinstance(value, A.Ternary):
            if not self.is_zero(value.other):
                return None
            bounds = E.conjuncts(self.bool_expr(value.cond))
            value = unparen(value.then)
        if not isinstance(value, A.At):
            return None
        try:
            el = self.value(value)
        except NotLifted:
            return None
        if not isinstance(el, Elem):
            return None
        extents = {v.name: x for v, x in self.spatial}
        split = self.flat_split(idx, extents)
        if split is not None:  # `e = l * 256 + tid; as.at(e % 8, e / 8) = ..`: a flat element number
            sub, gone = split
            idx = tuple(sub(i) for i in idx)
            el = el.mapped(sub)
            bounds = [sub(b) for b in bounds]
            if not all(_free_of(x, gone) for x in (*idx, *el.index, *bounds)):
                return None
        used: set[str] = set()
        for i, n in zip(idx, buf.shape, strict=True):
            if not self.staged_index_covers(i, n, extents, used):
                return None
        origin: list[E.Expr] = []
        axes: list[int | None] = [None] * len(idx)
        for t, x in enumerate(el.index):
            at = [c for c, i in enumerate(idx) if axes[c] is None and _free_of(E.fold(E.Bin("-", x, i)), used)]
            if at:
                axes[at[0]] = t
                origin.append(E.fold(E.Bin("-", x, idx[at[0]])))
            elif _free_of(x, used):
                origin.append(x)
            else:
                return None
        if any(a is None for a in axes):
            return None
        if not self.own_bounds(bounds, [el]):  # (only the element's own bounds: zero outside)
            return None
        return Region(el.tensor, tuple(origin), tuple(axes), tuple(buf.shape), el.limits, el.zfill or bool(bounds))  # type: ignore[arg-type]

    def flat_split(
        self, idx: tuple[E.Expr, ...], extents: dict[str, E.Expr]
    ) -> tuple[Callable[[E.Expr], E.Expr], set[str]] | None:
        """Buffer indices that split one flat number ``t`` of the threads and loops as ``t / D`` and
        ``t % D`` (D a constant): ``t`` a mixed-radix number of its variables over ``[0, R)``, ``R``
        a multiple of D, so that the pair runs over ``[0, R / D) x [0, D)`` one to one.  Each pair
        becomes two fresh variables of those extents (added to ``extents``, ``t``'s variables taken
        out of it): the substitution and the variables gone; None where no index is such a split."""
        divs = {repr(a): a for i in idx for a in E.fold(i).walk() if isinstance(a, E.Bin) and a.op == "/"}
        pairs: list[tuple[E.Expr, E.Expr, E.Expr, E.Var, E.Var]] = []
        gone: set[str] = set()
        for div in divs.values():
            t, d = div.lhs, div.rhs
            dc = _const(d)
            found = E.linear(t, list(extents))
            if dc is None or dc <= 0 or found is None or not found[0] or _const(E.fold(found[1])) != 0:
                continue
            coefs = found[0]
            if gone & coefs.keys():
                return None
            step = _radix_span(coefs, extents)
            if step is None or step % dc:
                return None
            q, r = self.fresh("fq", E.Const(step // dc)), self.fresh("fr", d)
            pairs.append((div, E.Bin("%", t, d), t, q, r))
            gone.update(coefs)
            for name in coefs:
                extents.pop(name)
            extents[q.name], extents[r.name] = E.Const(step // dc), d
        if not pairs:
            return None

        def sub(e: E.Expr) -> E.Expr:
            e = E.fold(e)
            for div, mod, _, q, r in pairs:
                e = E.replace_same(E.replace_same(e, E.fold(div), q), E.fold(mod), r)
            return E.fold(e)

        return sub, gone

    def staged_index_covers(self, i: E.Expr, n: E.Expr, extents: dict[str, E.Expr], used: set[str]) -> bool:
        """Whether buffer index ``i`` runs once over ``0 .. n`` as its variables (indices of the
        enclosing levels and loops, none in ``used``, added to it) run over their extents: ``i``
        is ``sum c_v * v`` with each ``c_v`` the product of the extents of the variables of smaller
        coefficient (mixed radix, ``ty * 4 + l``) and all the extents' product ``n``."""
        found = E.linear(i, list(extents))
        size = _const(n)
        if found is None or size is None:
            return False
        coefs, rest = found
        if not (isinstance(E.fold(rest), E.Const) and E.fold(rest).value == 0) or not coefs or used & coefs.keys():  # type: ignore[attr-defined]
            return False
        step = _radix_span(coefs, extents)
        if step is None:
            return False
        used.update(coefs)
        return step == size

    def buffer_content(self, v: Buffer | View, node: A.Node) -> Region | list[Placed | Written]:
        base = v.base if isinstance(v, View) else v
        self.touch(base, False)
        if base.content is None:
            raise NotLifted("a buffer read before anything was copied into it", node)
        if isinstance(v, View):
            if not isinstance(base.content, Region):
                raise NotLifted("a view of an accumulator buffer", node)
            return base.content.sub(list(v.offsets), list(v.shape), list(v.keep))
        return base.content

    def mma_fill(self, s: A.MmaFill) -> None:
        """``acc = mma.fill v`` (or ``mma.fill acc, v``): an accumulator whose every element starts at
        ``v``; a ``v`` other than zero is its start value (``ACC + v``, lift/epilogue.py), as for
        ``f32 acc = v;``."""
        if s.result:  # the fragment's shape comes with its first MMA
            cells = self.new_acc(Cells(s.elem or "f32", (), (), zero=True, line=self.line(s)))
        else:
            cur = self.value(s.target) if s.target is not None else None
            if not isinstance(cur, Cells):
                raise NotLifted("an mma.fill of something other than an accumulator", s)
            self.reset(cur, (), s)
            cells = cur
        if not self.is_zero(s.value):
            cells.post = start_value(self, cells, s.value, s)
        if s.result:
            self.bind(s.result, cells)

    def mma_load(self, s: A.MmaLoad) -> None:
        src = self.value(s.src)
        kept = self.kept_acc(src, s)
        if kept is not None:
            self.bind(s.result, kept)
            return
        v = self.operand(s.src, s)
        if not s.result:
            raise NotLifted("mma.load into a named fragment", s)
        cells = self.loaded_acc(v, s) if isinstance(src, Region) else None
        self.bind(s.result, Loaded(v, cells) if cells is not None else v)

    def kept_acc(self, src: Value, s: A.MmaLoad) -> Cells | None:
        """``acc = mma.load cs`` of a whole shared buffer that holds one accumulator stored whole into
        it (``mma.store acc, cs``, untransposed): that accumulator, carried through shared memory (an
        MMA adds to its sum).  Read in a loop before the loop's body writes the buffer, the buffer
        must hold that same accumulator, stored the same way, when the body ends (LoopFrame.kept):
        what each iteration starts from is then what the one before left.  None for any other load."""
        buf = src.buffer if isinstance(src, Future) else src
        if not isinstance(buf, Buffer) or not isinstance(buf.content, list) or len(buf.content) != 1:
            return None
        placed = buf.content[0]
        if not isinstance(placed, Placed) or placed.transp or not s.result:
            return None
        cells = placed.cells
        if placed.terms != len(cells.terms) or cells.transformed:
            raise NotLifted("an accumulator loaded from a buffer that holds it as it was before", s)
        if not all(_const(o) == 0 for o in placed.offsets) or tuple(_const(x) for x in buf.shape) != cells.shape:
            return None
        units = _units(placed.spatial, self.counters())
        if units != _units(tuple(self.spatial), self.counters()) or placed.pins != tuple(self.pins.items()):
            return None  # stored by other units than those that load it
        if tuple(self.guard[: len(buf.guard)]) != buf.guard:
            raise NotLifted("a buffer read outside the condition it was written under", s)
        for f in self.loops:
            if id(buf) not in f.written:
                f.kept.setdefault(id(buf), (buf, placed))
        # the names of the accumulator as it was stored (``z`` of ``mma.store z, cs``) no longer name
        # what the buffer's loads add to: used again, they are not lifted
        for scope in self.scopes:
            for name, v in list(scope.items()):
                if v is cells:
                    scope[name] = E.Const(0)
        return cells

    def counters(self) -> set[str]:
        """The counters of the loops open here."""
        return {c for f in self.loops for c in f.counters}

    def operand(self, e: A.Expr, node: A.Node) -> Region:
        v = self.value(e)
        if isinstance(v, Future):
            v = v.buffer
        if isinstance(v, Loaded):
            v = v.tile
        if isinstance(v, (Buffer, View)):
            v = self.buffer_content(v, node)
        if not isinstance(v, Region) or len(v.shape) != 2 or any(_const(x) is None for x in v.shape):
            raise NotLifted("an MMA operand that is not a 2-D tile of a global tensor", node)
        return v.whole()

    def scale_factors(self, acc: Cells, extra: list[A.Expr], node: A.Node) -> tuple[Elem, Elem]:
        """The factors ``sa`` (a scalar or one per row of the tile) and ``sb`` (a scalar or one per
        column) of a block-scaled MMA (LANGUAGE.md 7.9), as elements at the tile's coordinates."""
        if len(extra) != 2 or len(acc.coords) != 2:
            raise NotLifted("a block-scaled MMA of this form", node)
        out: list[Elem] = []
        for e, coord in zip(extra, acc.coords, strict=True):
            v = self.value(e)
            if isinstance(v, Elem):
                out.append(v)
                continue
            if not isinstance(v, Region) or any(_const(x) is None for x in v.shape):
                raise NotLifted("a scale that is not a tensor element or a vector of one", node)
            dims = [int(_const(x)) for x in v.shape]  # type: ignore[arg-type]
            n = acc.shape[acc.coords.index(coord)]
            if sorted(dims) not in ([n], [1, n]) or (len(dims) == 2 and n == 1):
                raise NotLifted("a scale whose shape is not the tile's rows or columns", node)
            out.append(v.elem(tuple(coord if d == n else E.Const(0) for d in dims)))
        return out[0], out[1]

    def mma_scale(self, s: A.MmaScale) -> None:
        """``mma.scale acc, sa, sb``: the MMAs into ``acc`` since the previous one of this loop body
        (or its start) are scaled."""
        acc = as_cells(self.value(s.acc))
        if s.temp is not None:  # lift/splitscale.py made the hidden accumulator explicit
            self.scale_temp(acc, s)
            return
        if not isinstance(acc, Cells) or not acc.coords:
            raise NotLifted("an mma.scale of something other than an accumulator", s)
        sa, sb = self.scale_factors(acc, [s.sa, s.sb], s)
        for i in range(acc.scale_mark, len(acc.terms)):
            t = acc.terms[i]
            if t.scales:
                raise NotLifted("an MMA scaled twice", s)
            acc.terms[i] = Term(t.sums, t.a, t.b, t.conds, (sa, sb))
        acc.scale_mark = len(acc.terms)

    def scale_temp(self, acc: Value, s: A.MmaScale) -> None:
        """``acc += temp * sa * sb``: the products summed in ``temp`` join ``acc``'s, scaled."""
        tmp = as_cells(self.lookup(s.temp or "", s))
        if not isinstance(acc, Cells) or not isinstance(tmp, Cells) or not tmp.coords or not acc.zero:
            raise NotLifted("an mma.scale of something other than an accumulator", s)
        if acc.transformed or tuple(self.guard) != acc.guard:
            raise NotLifted("an mma.scale after an operation on the accumulator or under a condition", s)
        if not acc.coords:
            acc.shape, acc.coords = tmp.shape, (self.fresh("r"), self.fresh("c"))
        elif acc.shape != tmp.shape:
            raise NotLifted("an accumulator used with two tile shapes", s)
        sa, sb = self.scale_factors(acc, [s.sa, s.sb], s)
        env = {v.name: c for v, c in zip(tmp.coords, acc.coords, strict=True)}
        for t in tmp.terms:
            if t.conds or t.scales:
                raise NotLifted("a scaled segment of this form", s)
            acc.terms.append(Term(t.sums, _subst_elem(t.a, env), _subst_elem(t.b, env), (), (sa, sb)))
        tmp.terms = []

    def mma_op(self, s: A.MmaOp) -> None:
        if s.variant not in ("", "async", "scale") or (s.extra and s.variant != "scale"):
            raise NotLifted(f"mma.{s.variant}", s)
        acc = as_cells(self.value(s.acc))
        if not isinstance(acc, Cells) or not acc.zero or acc.transformed:
            raise NotLifted("an MMA into something other than a zero-filled accumulator", s)
        a, b = self.operand(s.a, s), self.operand(s.b, s)
        types = (self.tensors[a.tensor].elem, self.tensors[b.tensor].elem)
        if "f64" in types:  # summed here in f32: the tile-IR path keeps f64 (and checks the types)
            raise NotLifted("an MMA on f64 operands", s)
        # the user's errors (lift/checks.py); an accumulator without a declared type reads f32 here
        mma_types(*types, acc.elem if all(t in FLOATS for t in types) else None, s)
        # (rows, k) of A and (columns, k) of B in their stored order (LANGUAGE.md 7.9)
        a_mk = s.layout[0] == "row"
        b_nk = s.layout[1] == "row"
        rows, ka = (a.shape[0], a.shape[1]) if a_mk else (a.shape[1], a.shape[0])
        cols, kb = (b.shape[0], b.shape[1]) if b_nk else (b.shape[1], b.shape[0])
        if _const(ka) != _const(kb):
            raise NotLifted("MMA operands with different K extents", s)
        shape = (int(_const(rows)), int(_const(cols)))  # type: ignore[arg-type]
        if not acc.coords:
            acc.shape, acc.coords = shape, (self.fresh("r"), self.fresh("c"))
        elif acc.shape != shape:
            raise NotLifted("an accumulator used with two tile shapes", s)
        if tuple(self.guard) != acc.guard:
            raise NotLifted("an MMA under a condition", s)
        kk = self.fresh("kk", ka)
        r, c = acc.coords
        ea = a.elem((r, kk) if a_mk else (kk, r))
        eb = b.elem((c, kk) if b_nk else (kk, c))
        scales = self.scale_factors(acc, s.extra, s) if s.variant == "scale" else ()
        acc.terms.append(Term(((kk, ka),), ea, eb, (), scales))
        self.red_line = self.red_line or self.line(s)
        self.ksteps.append(int(_const(ka)))  # type: ignore[arg-type]
        if s.result:
            self.bind(s.result, E.Const(0))  # an operation future: waiting on it does nothing here

    def loaded_acc(self, tile: Region, s: A.MmaLoad) -> Cells | None:
        """The accumulator ``mc = mma.load C.chunkat(..)`` is when an MMA adds into it: one that starts
        from that tile of a global tensor (None: a tile that cannot be one)."""
        if len(tile.shape) != 2 or any(_const(x) is None for x in tile.shape):
            return None
        elem = self.tensors[tile.tensor].elem
        if elem not in FLOATS:
            return None
        shape = (int(_const(tile.shape[0])), int(_const(tile.shape[1])))  # type: ignore[arg-type]
        cells = self.new_acc(Cells(elem, shape, (self.fresh("r"), self.fresh("c")), zero=True, line=self.line(s)))
        ev = EpilogueEval(self)
        cells.post = ev.started(cells, ev.read(tile.elem(cells.coords), s), s)
        return cells

    def line(self, s: A.Node) -> int:
        return s.span.line if s.span else 0

    def mma_store(self, s: A.MmaStore) -> None:
        if s.variant not in ("", "async", "transp", "mask"):
            raise NotLifted(f"mma.store.{s.variant}", s)
        acc = as_cells(self.value(s.acc))
        dst = self.value(s.dst)
        if isinstance(acc, Cells) and not acc.coords and not acc.terms and s.variant in ("", "async"):
            # a fill stored before any MMA: its shape is the buffer's it is stored into (shared)
            whole = dst.buffer if isinstance(dst, Future) else dst
            if isinstance(whole, Buffer) and len(whole.shape) == 2 and all(_const(x) for x in whole.shape):
                acc.shape = tuple(int(_const(x)) for x in whole.shape)  # type: ignore[arg-type]
                acc.coords = (self.fresh("r"), self.fresh("c"))
        if not isinstance(acc, Cells) or not acc.coords:
            raise NotLifted("an mma.store of something other than an accumulator", s)
        line = self.line(s)
        if isinstance(dst, Future):
            dst = dst.buffer
        if isinstance(dst, Buffer):
            dst = View(dst, tuple(E.Const(0) for _ in dst.shape), dst.shape, tuple(True for _ in dst.shape))
        transp = s.variant == "transp"
        if isinstance(dst, View):
            if s.variant == "mask":
                raise NotLifted("an mma.store.mask into a buffer", s)
            shape = acc.shape[::-1] if transp else acc.shape
            if not all(dst.keep) or tuple(_const(x) for x in dst.shape) != shape:
                raise NotLifted("an mma.store into a buffer view of another shape", s)
            old = dst.base.content if isinstance(dst.base.content, list) else []
            new = Placed(acc, dst.offsets, tuple(self.spatial), transp, tuple(self.pins.items()), len(acc.terms))
            # (an accumulator the same units stored at the same place before is overwritten)
            old = [x for x in old if not (isinstance(x, Placed) and _over(x, new, self.counters()))]
            dst.base.content = [*old, new]
            self.touch(dst.base, True)
            return
        if not isinstance(dst, Region):
            raise NotLifted("an mma.store into something other than a view", s)
        limits = [self.int_expr(x) for x in s.extra] if s.variant == "mask" else []
        self.store_tile(acc, dst, line, transp, limits)

    def store_tile(
        self, acc: Cells, dst: Region, line: int, transp: bool = False, limits: list[E.Expr] | None = None
    ) -> None:
        """``acc`` (transposed: ``.transp``) written over the 2-D view ``dst``; ``limits``: only its
        first rows (and columns) are (``mma.store.mask``)."""
        shape = acc.shape[::-1] if transp else acc.shape
        if len(dst.shape) != 2 or tuple(_const(x) for x in dst.shape) != shape:
            raise NotLifted("an accumulator stored into a view of another shape", None)
        dst = dst.whole()
        r, c = self.fresh("sr", E.Const(shape[0])), self.fresh("sc", E.Const(shape[1]))
        self.spatial.extend([(r, E.Const(shape[0])), (c, E.Const(shape[1]))])
        at = dst.elem((r, c))
        guards = []
        for d, lim in enumerate(limits or []):  # `r < rows` as a bound of the output's index
            i = at.index[dst.axes[d]]
            guards.append(E.Bin("<", i, E.fold(i - (r, c)[d] + lim)))
        self.guard.extend(guards)
        read = AccRead(acc, (c, r) if transp else (r, c))
        self.store(at, read, line, self.acc_epi(read))
        del self.guard[len(self.guard) - len(guards) :]
        del self.spatial[-2:]

    def acc_epi(self, read: AccRead) -> EpiValue | None:
        """What an element of the accumulator holds (None: its sum)."""
        if read.cells.post is None:
            return None
        ev = EpilogueEval(self)
        return ev.result(ev.accumulator(read, None))

    def store_value(self, at: Elem, a: A.Assign, line: int) -> None:
        """``out.at(..) = value`` (or ``op=``): an element-wise function of one accumulator element."""
        merged = self.summed_accs(a.value) if a.op == "=" else None
        if merged is not None:  # `out.at(m, n) = s0 + s1`: partial sums of one dot product
            self.store(at, AccRead(merged, ()), line)
            return
        ev = EpilogueEval(self)
        v = ev.expr(a.value)
        if a.op != "=":
            v = ev.binary(a.op, ev.read(at, a), v, a)
        if ev.acc is None:
            raise NotLifted("a store of something other than an accumulator", a)
        epi = ev.result(v)
        # a store over an element an earlier store wrote, of a value computed from it (``out.at(m, n) =
        # f(out.at(m, n))`` after the sum was stored there): it replaces that store (the proof then
        # needs this one to write every element of the output)
        for st, idx in ev.stored:
            if st.tensor == at.tensor and self.same_idx(idx, at.index) and st in self.stores:
                self.stores.remove(st)
        self.store(at, ev.acc, line, None if epi.plain else epi)

    def stored_at(self, el: Elem) -> tuple[Store, dict[str, E.Expr]] | None:
        """The store of this kernel an element read finds (``f32 v = out.at(m, n);`` after ``out.at(m,
        n) = s;``, or ``out.at(m, n)`` of an element loop over a tile ``mma.store`` wrote): the last
        store into its tensor, where its index is the read's once its own element variables (those not
        around the read: the tile's, a closed element loop's) take values inside their ranges, and the
        read runs under its conditions and unit pins; with those values. None where the read is of
        the tensor (a read the last store need not have written: the two stores make the kernel
        no contraction, lift/proof.py)."""
        last = next((st for st in reversed(self.stores) if st.tensor == el.tensor), None)
        if last is None or el.limits or last.limits or last.pins != tuple(self.pins.items()):
            return None
        if tuple(self.guard[: len(last.guard)]) != last.guard:
            return None
        here = {v.name for v, _ in self.spatial}
        own = {v.name: (v, ext) for v, ext in last.spatial if v.name not in here}
        since = {v.name for v, ext in self.spatial if _const(ext) != 1} - {v.name for v, _ in last.spatial}
        if not since <= {v.name for i in el.index for v in E.free_vars(i)}:
            return None  # (a loop entered since the store that reads one element again and again)
        env: dict[str, E.Expr] = {}
        zero = {n: E.Const(0) for n in own}
        for i_st, i_rd in zip(last.index, el.index, strict=True):
            base = E.fold(E.substitute(i_st, zero))
            rest = E.fold(i_st - base)
            diff = E.fold(i_rd - base)
            if _const(rest) == 0:
                if _const(diff) != 0:
                    return None
                continue
            if not (isinstance(rest, E.Var) and rest.name in own and rest.name not in env):
                return None
            n = _const(own[rest.name][1])
            lo, hi = E.bounds(diff)
            if n is None or lo is None or hi is None or lo < 0 or hi >= n:
                return None
            env[rest.name] = diff
        for name, (_, ext) in own.items():
            if name not in env and _const(ext) == 1:
                env[name] = E.Const(0)  # (a unit level of one: ``parallel by 1 : group-4``)
        if set(env) != set(own):
            return None  # (a variable of the store that places no element: it wrote the element several times)
        return last, env

    def store(self, at: Elem, value: AccRead, line: int, epi: EpiValue | None = None) -> None:
        store = Store(
            at.tensor,
            at.index,
            value,
            tuple(self.guard),
            tuple(self.spatial),
            line,
            epi,
            at.limits,
            tuple(self.pins.items()),
        )
        self.stores.append(store)


def as_cells(v: Value) -> Value:
    """A loaded tile where it is used as an accumulator is its accumulator."""
    return v.cells if isinstance(v, Loaded) else v


def _exactly_at(placed: Placed | Written, offsets: tuple[E.Expr, ...], shape: tuple[Any, ...]) -> bool:
    """Is ``placed`` an accumulator stored at exactly ``offsets`` with ``shape`` (as stored)?"""
    if not isinstance(placed, Placed):
        return False
    dims = placed.cells.shape[::-1] if placed.transp else placed.cells.shape
    return tuple(dims) == shape and all(
        E.same(E.fold(a), E.fold(b)) for a, b in zip(placed.offsets, offsets, strict=True)
    )


def _radix_span(coefs: dict[str, int], extents: dict[str, E.Expr]) -> int | None:
    """The count of values ``sum c_v * v`` takes, each ``v`` over its constant extent, where each ``c_v`` is
    the product of the extents of the variables of smaller coefficient (mixed radix, ``ty * 4 + l``): the
    product of all the extents; None where the coefficients are not such."""
    step = 1
    for name, c in sorted(coefs.items(), key=lambda kv: kv[1]):
        ext = _const(extents[name])
        if c != step or ext is None:
            return None
        step *= ext
    return step


def _free_of(e: E.Expr, names: set[str]) -> bool:
    return not {v.name for v in E.free_vars(e)} & names


def _units(spatial: tuple[tuple[E.Var, E.Expr], ...], counters: set[str]) -> tuple[tuple[E.Var, E.Expr], ...]:
    """The parallel indices (and element loops) among ``spatial``, the ``counters`` of open loops left out."""
    return tuple((v, x) for v, x in spatial if v.name not in counters)


def _over(old: Placed, new: Placed, counters: set[str]) -> bool:
    """``new`` is stored by the units that stored ``old`` (in a loop over ``counters``, open now),
    over the same elements."""
    return (
        old.cells.shape == new.cells.shape
        and old.transp == new.transp
        and _units(old.spatial, counters) == _units(new.spatial, counters)
        and old.pins == new.pins
        and all(E.same(E.fold(a), E.fold(b)) for a, b in zip(old.offsets, new.offsets, strict=True))
    )
