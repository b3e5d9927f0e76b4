"""Re-tiling of block-level tensor-core kernels for ``--schedule auto``.

A pipelined GEMM such as the tutorial's v3 states 64 x 128 output tiles per block; Hopper runs the
same GEMM fastest with 128 x 256 tiles (perf/gemm_probe.py: 128 x 256 x 64 reaches cuBLAS at 8192^3,
128 x 128 stays at 0.92).  The tile a block owns along a grid dimension is a parameter of such a
program: block ``b`` of ``parallel {b, ..} by [cdiv(E, T), ..] : block`` owns rows
``[b * T, b * T + T)`` of every tensor dimension of extent ``E``, and nothing in the block depends on
which tile size was chosen.  This module proves that for one grid dimension and rewrites every
literal that carries the tile (the grid bound, the windows, the buffers) from ``T`` to ``T'``.

The proof is a whitelist over the statements of the block; the rewrite is done only when
* every use of ``b`` is the index of a ``X.subspan(T, ..).at(b, ..)`` window of a global tensor at a
  position whose extent is ``E`` (or ``b * 1 + r`` with ``r`` provably 0, the tutorial's
  ``block_m * CONSUMERS + cidx`` with one consumer); every window of such a position is indexed so;
* data taken from those windows ("tiled" dims) flows only through: copies into buffers whose
  extent at that dim is ``T`` (tiled as a whole), ``mma.load`` of such a buffer with the tiled
  dim whole (``_`` or ``subspan(T).at(0)``), the M / N dims of ``mma`` (never K, so no sum runs
  across tiled elements), ``mma.store`` into a buffer of extent ``T``, and copies of such buffers
  into windows of the same kind;
* a tiled buffer or fragment is used nowhere else.
Each element of a tiled dim is then computed from the same-index elements of the inputs only,
whatever ``T`` is, so a block of ``T'`` computes exactly what ``T' / T`` blocks of ``T`` computed (rows
past ``E`` of the last block are outside every tensor: reads zero, writes dropped).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from ..frontend import ast as A

AUTO_TILES = (128, 256)  # rows x columns per program (perf/gemm_probe.py, perf/RESULTS.md 2026-11-30)


class _No(Exception):
    pass


def _int(e: A.Expr | None) -> int | None:
    while isinstance(e, A.Paren):
        e = e.expr
    return e.value if isinstance(e, A.IntLit) else None


def _name(e: A.Expr | None) -> str | None:
    while isinstance(e, A.Paren):
        e = e.expr
    return e.name if isinstance(e, A.Name) else None


def _buf_name(e: A.Expr | None) -> str | None:
    """``buf`` or ``buf[stage]`` (a buffer or one element of a buffer array)."""
    if isinstance(e, A.Index):
        return _name(e.base)
    return _name(e)


@dataclass
class Retiled:
    top: A.Parallel  # the re-tiled statement
    old: tuple[int, int]  # the source's tiles (for the generated docstring)
    guards: list[tuple[str, int]]  # (extent, tile): launch it only when every extent % tile == 0


def retile(fn: A.CoFunction, top: A.Parallel, targets: tuple[int, int]) -> Retiled | None:
    """A copy of ``top`` with block tiles ``targets`` (rows, columns), or None when not provable."""
    blk = top.levels[0]
    if blk.vars is None or len(blk.vars) != 2 or None in blk.vars or not _mma_block(top):
        return None
    consts = _int_constants(fn, top)
    if consts:
        top = copy.deepcopy(top)
        _inline(top, consts)
    shapes: dict[str, list[str | None]] = {}
    for p in fn.params:
        dims = getattr(getattr(p.type, "shape", None), "dims", None)
        if dims is not None and p.name:
            shapes[p.name] = [_name(x) for x in dims]
    cur, old, changed = top, [0, 0], False
    guards: list[tuple[str, int]] = []
    for d, target in enumerate(targets):
        ext = cur.levels[0].bound[d]
        if not (isinstance(ext, A.Builtin) and ext.name == "cdiv" and len(ext.args) == 2):
            return None
        tile, extent = _int(ext.args[1]), _name(ext.args[0])
        if tile is None or extent is None:
            return None
        old[d] = tile
        if tile >= target:
            continue  # already as large
        new = copy.deepcopy(cur)
        proof = _Proof(new.levels[0].vars[d], extent, tile, shapes)  # type: ignore[index]
        try:
            proof.run(new, target)
        except _No:
            continue  # this dim keeps its tile; the other may still be re-tiled
        if proof.guarded:
            guards.append((extent, target))
        cur, changed = new, True
    return Retiled(cur, (old[0], old[1]), guards) if changed else None


def _int_constants(fn: A.CoFunction, top: A.Parallel) -> dict[str, int]:
    """Immutable ``int NAME = <literal>`` declarations of the function (``int WARP_M = 64, ...``) that
    the block does not redeclare or assign: their uses may be read as the literal."""
    out: dict[str, int] = {}
    for s in fn.body:
        if isinstance(s, A.ScalarDecl) and s.type == "int" and not s.mutable:
            for d in s.items:
                v = _int(d.init)
                if v is not None and not d.dims:
                    out[d.name] = v
    for n in top.walk():
        if isinstance(n, A.Assign) and _name(n.target) in out:
            out.pop(_name(n.target), None)  # type: ignore[arg-type]
        elif isinstance(n, (A.ScalarDecl, A.SpannedDecl)):
            for d in n.items:
                out.pop(d.name, None)
    return out


def _inline(node: A.Node, consts: dict[str, int]) -> None:
    """Replace every use of the constants in ``node`` (in place) by its literal."""
    for key, v in vars(node).items():
        if isinstance(v, A.Name) and v.name in consts:
            setattr(node, key, A.IntLit(consts[v.name], str(consts[v.name]), span=v.span))
        elif isinstance(v, A.Node):
            _inline(v, consts)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, A.Name) and x.name in consts:
                    v[i] = A.IntLit(consts[x.name], str(consts[x.name]), span=x.span)
                elif isinstance(x, A.Node):
                    _inline(x, consts)


def _mma_block(top: A.Parallel) -> bool:
    return any(isinstance(n, A.MmaOp) for n in top.body.walk())


@dataclass
class _Proof:
    b: str  # the block index
    extent: str  # the tensor extent it tiles
    tile: int
    shapes: dict[str, list[str | None]]
    allowed: set[int] = field(default_factory=set)  # ids of Name nodes whose use is proven
    sizes: list[A.Expr] = field(default_factory=list)  # literals to rewrite T -> T'
    tiled: dict[str, set[int]] = field(default_factory=dict)  # buffer / fragment -> tiled dims
    decls: dict[str, A.SpannedDecl] = field(default_factory=dict)
    zero: set[str] = field(default_factory=set)  # names proven to be 0
    mma_dims: list[tuple[str, set[int]]] = field(default_factory=list)  # (accumulator, tiled dims) per MMA
    guarded: bool = False  # windows use chunkat: valid when the new tile divides the extent

    def run(self, top: A.Parallel, target: int) -> None:
        """Prove the block's tile is a parameter, then rewrite every literal carrying it to ``target``."""
        body = top.body
        self.zero = _zero_names(top)
        for n in body.walk():
            if isinstance(n, A.SpannedDecl):
                for it in n.items:
                    self.decls[it.name] = n
        # propagate tiled dims to a fixed point (a store may come before its use in walk order)
        while True:
            before = {k: set(v) for k, v in self.tiled.items()}
            self.allowed.clear()
            self.sizes.clear()
            self.mma_dims.clear()
            for n in body.walk():
                self.visit(n)
            if before == self.tiled:
                break
        for n in body.walk():
            if isinstance(n, A.Name) and (n.name == self.b or n.name in self.tiled) and id(n) not in self.allowed:
                raise _No  # another use of the block index, or of a tiled buffer / fragment
        for acc, dims in self.mma_dims:
            if dims != self.tiled.get(acc, set()):
                raise _No  # the MMAs into one accumulator disagree on which dims are tiled
        blk = top.levels[0]
        assert blk.vars is not None
        bound = blk.bound[blk.vars.index(self.b)]
        assert isinstance(bound, A.Builtin)
        lits = {id(x): x for x in [bound.args[1], *self.sizes]}  # a literal may be recorded twice
        for lit in lits.values():
            assert isinstance(lit, A.IntLit) and lit.value == self.tile
            lit.value, lit.text = target, str(target)

    def visit(self, n: A.Node) -> None:
        if isinstance(n, A.DmaStmt):
            self.dma(n)
        elif isinstance(n, A.MmaLoad):
            self.mma_load(n)
        elif isinstance(n, A.MmaOp):
            self.mma(n)
        elif isinstance(n, A.MmaStore):
            self.mma_store(n)
        elif isinstance(n, A.MmaScale):
            self.mma_scale(n)
        elif isinstance(n, A.View):
            self.global_window(n)

    # ---------------------------------------------------------------- global windows
    def global_window(self, v: A.View) -> set[int]:
        """The tiled positions of a window of a global tensor (checked, literals recorded)."""
        base = _name(v.base)
        dims = self.shapes.get(base or "")
        if dims is None or self.extent not in dims:
            return set()
        op = v.ops[0] if len(v.ops) == 1 else None
        if op is not None and op.kind == "chunkat" and not op.step and not op.strides and op.at is None:
            # chunkat(b, ..) of a grid cdiv(E, T) has E // cdiv(E, T) rows: T (and T' after the
            # rewrite) exactly when T' divides E, which the launcher checks (self.guarded)
            out = set()
            for p, ext in enumerate(dims):
                if ext == self.extent:
                    if p >= len(op.args) or not self.is_b(op.args[p]) or _name(op.args[p]) != self.b:
                        raise _No
                    out.add(p)
            self.guarded = True
            return out
        if op is None or op.kind != "subspan" or op.at is None or op.step or op.strides:
            raise _No  # another kind of access to a tiled tensor dimension
        out = set()
        for p, ext in enumerate(dims):
            if ext != self.extent:
                continue
            if p >= len(op.args) or p >= len(op.at) or _int(op.args[p]) != self.tile or not self.is_b(op.at[p]):
                raise _No
            out.add(p)
            self.sizes.append(op.args[p])
        return out

    def is_b(self, e: A.Expr) -> bool:
        """``b``, or ``b * 1 + r`` with ``r`` proven to be 0 (ids of the names recorded)."""
        while isinstance(e, A.Paren):
            e = e.expr
        if _name(e) == self.b:
            self.allowed.add(id(e))
            return True
        if isinstance(e, A.Binary) and e.op == "+" and _name(e.rhs) in self.zero:
            m = e.lhs
            while isinstance(m, A.Paren):
                m = m.expr
            if isinstance(m, A.Binary) and m.op == "*" and _int(m.rhs) == 1 and _name(m.lhs) == self.b:
                self.allowed.add(id(m.lhs))
                return True
        return False

    # ---------------------------------------------------------------- data flow
    def buffer_dims(self, name: str, dims: set[int]) -> None:
        decl = self.decls.get(name)
        if decl is None or decl.shape is None or decl.storage not in ("shared", "local"):
            raise _No
        for p in dims:
            if p >= len(decl.shape) or _int(decl.shape[p]) != self.tile:
                raise _No
            self.sizes.append(decl.shape[p])
        self.tiled.setdefault(name, set()).update(dims)

    def dma(self, n: A.DmaStmt) -> None:
        if n.op != "copy":
            return
        src_buf, dst_buf = _buf_name(n.src), _buf_name(n.dst)
        if isinstance(n.src, A.View):
            dims = self.global_window(n.src)
            if dims:
                if dst_buf is None or dst_buf not in self.decls:
                    raise _No
                self.buffer_dims(dst_buf, dims)
                self.allow_buf(n.dst)
                return
        if src_buf in self.tiled:
            if not isinstance(n.dst, A.View) or self.global_window(n.dst) != self.tiled[src_buf]:
                raise _No  # a tiled buffer copied anywhere but a window of the same tiled dims
            self.buffer_dims(src_buf, self.tiled[src_buf])
            self.allow_buf(n.src)

    def allow_buf(self, e: A.Expr) -> None:
        base = e.base if isinstance(e, A.Index) else e
        self.allowed.add(id(base))

    def frag_view(self, e: A.Expr) -> tuple[str, set[int]] | None:
        """A tiled buffer read whole along its tiled dims: ``buf[s]``, ``.chunkat(_, k)``,
        ``.subspan(T, k).at(0, i)``."""
        ops: list[A.ViewOp] = []
        base = e
        if isinstance(e, A.View):
            base, ops = e.base, e.ops
        name = _buf_name(base)
        if name is None or name not in self.tiled:
            return None
        dims = self.tiled[name]
        if len(ops) > 1:
            raise _No
        for op in ops:
            for p in dims:
                if op.kind == "chunkat" and p < len(op.args) and _name(op.args[p]) == "_":
                    continue
                if (
                    op.kind == "subspan"
                    and op.at is not None
                    and not op.step
                    and p < len(op.args)
                    and _int(op.args[p]) == self.tile
                    and p < len(op.at)
                    and (_int(op.at[p]) == 0 or _name(op.at[p]) in self.zero)
                ):
                    self.sizes.append(op.args[p])
                    if _name(op.at[p]) is not None:
                        self.allowed.add(id(op.at[p]))
                    continue
                raise _No
        self.allowed.add(id(base.base if isinstance(base, A.Index) else base))
        return name, dims

    def mma_load(self, n: A.MmaLoad) -> None:
        got = self.frag_view(n.src)
        if got is None:
            return
        if n.result is None:
            raise _No
        self.tiled.setdefault(n.result, set()).update(got[1])

    def mma(self, n: A.MmaOp) -> None:
        acc, a, b = _name(n.acc), _name(n.a), _name(n.b)
        if None in (acc, a, b) or n.variant not in ("", "async") or n.result is not None:
            if any(_name(x) in self.tiled for x in (n.acc, n.a, n.b)):
                raise _No
            return
        assert acc is not None and a is not None and b is not None
        a_m, a_k = (0, 1) if n.layout[0] == "row" else (1, 0)
        b_n, b_k = (0, 1) if n.layout[1] == "row" else (1, 0)
        ta, tb = self.tiled.get(a, set()), self.tiled.get(b, set())
        if a_k in ta or b_k in tb:
            raise _No  # the sum of an MMA would run across tiled elements
        dims: set[int] = set()
        if a_m in ta:
            dims.add(0)
        if b_n in tb:
            dims.add(1)
        self.mma_dims.append((acc, dims))
        if dims:
            self.tiled.setdefault(acc, set()).update(dims)
        for x in (n.acc, n.a, n.b):
            if _name(x) in self.tiled:
                self.allowed.add(id(x))

    def mma_scale(self, n: A.MmaScale) -> None:
        # the split form (lower/splitscale.py) adds a hidden accumulator whose shape the lowering
        # finds while emitting; not re-tiled yet (the source's tiles are kept)
        raise _No

    def mma_store(self, n: A.MmaStore) -> None:
        acc = _name(n.acc)
        if acc not in self.tiled:
            return
        assert acc is not None
        if n.variant not in ("", "async"):
            raise _No
        self.allowed.add(id(n.acc))
        if isinstance(n.dst, A.View) and self.shapes.get(_name(n.dst.base) or "") is not None:
            if self.global_window(n.dst) != self.tiled[acc]:
                raise _No  # stored straight into a window of other tiled dims
            return
        dst = _buf_name(n.dst)
        if dst is None or isinstance(n.dst, A.View):
            raise _No
        self.buffer_dims(dst, self.tiled[acc])
        self.allow_buf(n.dst)


def _zero_names(top: A.Parallel) -> set[str]:
    """Names assigned once, from a role index, that are 0 wherever they are defined: ``cidx = wg - 1``
    inside ``inthreads.async (wg >= 1)`` with ``parallel wg by 2``."""
    bounds: dict[str, int] = {}
    for n in top.walk():
        if isinstance(n, A.Parallel):
            for lv in n.levels:
                names = lv.vars if lv.vars is not None else [lv.name]
                for k, nm in enumerate(names):
                    if nm and k < len(lv.bound) and _int(lv.bound[k]) is not None:
                        bounds[nm] = _int(lv.bound[k])  # type: ignore[assignment]
    assigned: dict[str, int] = {}
    out: set[str] = set()

    def walk(s: A.Node, env: dict[str, tuple[int, int]]) -> None:
        if isinstance(s, A.InThreads):
            env = _narrow(s.cond, env)
            walk(s.body, env)
            return
        if isinstance(s, A.Assign) and isinstance(s.target, A.Name) and s.op == "=":
            nm = s.target.name
            assigned[nm] = assigned.get(nm, 0) + 1
            r = _interval(s.value, env)
            if r == (0, 0):
                out.add(nm)
            return
        for c in s.children():
            walk(c, env)

    walk(top.body, {k: (0, v - 1) for k, v in bounds.items()})
    return {n for n in out if assigned.get(n) == 1}


def _narrow(cond: A.Expr, env: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    while isinstance(cond, A.Paren):
        cond = cond.expr
    if isinstance(cond, A.Binary) and cond.op == "&&":
        return _narrow(cond.rhs, _narrow(cond.lhs, env))
    if isinstance(cond, A.Binary):
        nm, c = _name(cond.lhs), _int(cond.rhs)
        if nm in env and c is not None:
            lo, hi = env[nm]
            op = cond.op
            if op == ">=":
                lo = max(lo, c)
            elif op == ">":
                lo = max(lo, c + 1)
            elif op == "<=":
                hi = min(hi, c)
            elif op == "<":
                hi = min(hi, c - 1)
            elif op == "==":
                lo, hi = max(lo, c), min(hi, c)
            else:
                return env
            return {**env, nm: (lo, hi)}
    return env


def _interval(e: A.Expr, env: dict[str, tuple[int, int]]) -> tuple[int, int] | None:
    while isinstance(e, A.Paren):
        e = e.expr
    c = _int(e)
    if c is not None:
        return (c, c)
    nm = _name(e)
    if nm is not None:
        return env.get(nm)
    if isinstance(e, A.Binary) and e.op in ("+", "-"):
        a, b = _interval(e.lhs, env), _interval(e.rhs, env)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1]) if e.op == "+" else (a[0] - b[1], a[1] - b[0])
    return None
