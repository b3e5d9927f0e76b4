"""K-step splitting of staged per-thread dot products for ``--schedule auto``.

The tutorial's v1 GEMM stages 128-wide K tiles of both operands in shared buffers and then runs the
per-thread dot product over them::

    foreach {iv} in [cdiv(K, 128)] {
      dma.copy lhs.subspan(TM, 128).at(bm, iv) => lhs_s;
      dma.copy rhs.subspan(TN, 128).at(bn, iv) => rhs_s;
      foreach {ik} in [128]
        acc += lhs_s.at(tm, ik) * rhs_s.at(tn, ik);
    }

Lifted to Triton, one pipeline stage holds both 128-wide tiles (64 KB at 128 x 128): only three
stages fit, and a 128 x 256 block only two (perf/RESULTS.md 2026-11-30: 0.77-0.89 of cuBLAS).  The
K tile is a parameter of such a loop: the same sum is computed, in the same order, by
``foreach {iv} in [cdiv(K, 128) * 2]`` over 64-wide windows ``subspan(TM, 64).at(bm, iv)`` and an
inner loop over ``[64]``: step ``2 * i + h`` reads columns ``[128 * i + 64 * h, 128 * i + 64 * h + 64)``,
exactly the ``h``-th half of the source's step ``i`` (columns past ``K`` are out of bounds in both).

The rewrite is done only when it provably keeps the meaning:
* the loop has one counter ``iv``, used only as the K index of ``X.subspan(.., TK, ..).at(.., iv, ..)``
  windows of synchronous ``dma.copy`` / ``tma.copy`` statements (no swizzle, no futures), and
  its body is those copies followed by one ``foreach {ik} in [TK]`` whose body is one ``acc += e``;
* every buffer the copies fill is a plain shared/local buffer of extent ``TK`` at the K position,
  used nowhere but as a copy destination in this loop and as ``buf.at(.., ik, ..)`` (``ik`` at the
  K position) in ``e``; ``ik`` appears in ``e`` only there, ``iv`` not at all.
Then every term ``e(k)`` of the sum is visited once, in increasing ``k``, in both forms.
"""

from __future__ import annotations

import copy

from ..frontend import ast as A
from .rewrites import NotProven as _No
from .rewrites import int_lit as _int
from .rewrites import name_of as _name

# --schedule auto: the K width of a staged step (perf/gemm_probe.py: 128 x 256 x 64 reaches cuBLAS)
AUTO_K_STEP = 64


def _stmts(s: A.Stmt) -> list[A.Stmt]:
    return s.stmts if isinstance(s, A.Block) else [s]


def _counter(s: A.Foreach) -> tuple[str, A.Expr] | None:
    """``foreach {iv} in [bound]``: (iv, bound)."""
    if len(s.items) != 1 or not isinstance(s.items[0], A.Within) or s.suffixes:
        return None
    wi = s.items[0]
    names = wi.vars if wi.vars is not None else [wi.name]
    if len(names) != 1 or names[0] is None:
        return None
    if not isinstance(wi.shape, A.MdspanLit) or len(wi.shape.items) != 1:
        return None
    return names[0], wi.shape.items[0]


def ksplit(top: A.Parallel, step: int | None = None) -> tuple[A.Parallel, tuple[int, int]] | None:
    """``top`` with its staged K loops stepping at most ``step`` wide (a copy where one was
    rewritten) and (the source's widest K tile, the widest step now), or None when the block has no
    such loop (or one that cannot be proven)."""
    step = AUTO_K_STEP if step is None else step
    if step <= 0:
        return None
    new = copy.deepcopy(top)
    decls = _buffers(new)
    widths: list[int] = []
    for n in list(new.body.walk()):
        if isinstance(n, A.Foreach) and any(isinstance(x, A.DmaStmt) for x in _stmts(n.body)):
            try:
                widths.append(_split(new, n, decls, step))
            except _No:
                return None  # a staged loop that keeps its width: its stage size decides
    if not widths:
        return None
    tk = max(widths)
    return (new if tk > step else top, (tk, min(tk, step)))


def _buffers(top: A.Parallel) -> dict[str, A.SpannedDecl]:
    """Plain (single, unarrayed) shared/local buffers declared in the block, by name."""
    out: dict[str, A.SpannedDecl] = {}
    seen: set[str] = set()
    for n in top.body.walk():
        if isinstance(n, A.SpannedDecl):
            for d in n.items:
                if d.name in seen:
                    out.pop(d.name, None)  # declared twice: leave it alone
                seen.add(d.name)
                if n.storage in ("shared", "local") and n.shape and len(n.items) == 1 and not d.dims and d.init is None:
                    out[d.name] = n
    return out


def _split(top: A.Parallel, loop: A.Foreach, decls: dict[str, A.SpannedDecl], step: int) -> int:
    head = _counter(loop)
    if head is None:
        raise _No
    iv, bound = head
    body = _stmts(loop.body)
    if len(body) < 2 or not isinstance(body[-1], A.Foreach):
        raise _No
    copies, inner = body[:-1], body[-1]
    allowed: set[int] = set()  # ids of Name nodes whose use is proven
    tk: int | None = None
    kpos: dict[str, int] = {}  # buffer -> its K position
    windows: list[tuple[A.ViewOp, int]] = []
    for c in copies:
        if not (
            isinstance(c, A.DmaStmt)
            and c.engine in ("dma", "tma")
            and c.op == "copy"
            and not c.is_async
            and c.result is None
            and c.event is None
            and c.after is None
            and not c.dst_storage
            and all(a.name == "zfill" for a in c.attrs)
            and isinstance(c.src, A.View)
            and len(c.src.ops) == 1
        ):
            raise _No
        op = c.src.ops[0]
        buf = _name(c.dst)
        if op.kind != "subspan" or op.at is None or op.step or op.strides or buf not in decls or buf in kpos:
            raise _No
        pos = [k for k, x in enumerate(op.at) if _name(x) == iv]
        if len(pos) != 1 or len(op.args) != len(op.at):
            raise _No
        p = pos[0]
        width = _int(op.args[p])
        shape = decls[buf].shape or []
        if width is None or (tk is not None and width != tk) or len(shape) != len(op.at) or _int(shape[p]) != width:
            raise _No
        tk = width
        kpos[buf] = p
        windows.append((op, p))
        allowed.add(id(op.at[p]))
        allowed.add(id(c.dst))
    if tk is None or (tk > step and tk % step):
        raise _No
    ihead = _counter(inner)
    if ihead is None or _int(ihead[1]) != tk:
        raise _No
    ik = ihead[0]
    red = _stmts(inner.body)
    if len(red) != 1 or not isinstance(red[0], A.AssignStmt) or len(red[0].items) != 1:
        raise _No
    asg = red[0].items[0]
    if asg.op != "+" or _name(asg.target) is None or _name(asg.target) in kpos:
        raise _No
    for n in asg.value.walk():
        if isinstance(n, A.At) and _name(n.base) in kpos:
            p = kpos[_name(n.base)]  # type: ignore[index]
            if len(n.indices) <= p or _name(n.indices[p]) != ik:
                raise _No
            allowed.update({id(n.base), id(n.indices[p])})
    names = [n for n in top.body.walk() if isinstance(n, A.Name)]
    for n in names:
        if n.name in kpos and id(n) not in allowed:
            raise _No  # the buffer is read or written elsewhere
    for n in loop.body.walk():
        if isinstance(n, A.Name) and n.name in (iv, ik) and id(n) not in allowed:
            raise _No  # another use of a counter
    if any(isinstance(n, A.Name) and n.name == ik for n in asg.target.walk()):
        raise _No
    if tk <= step:
        return tk  # already as narrow: nothing to rewrite
    f = tk // step
    assert isinstance(loop.items[0], A.Within) and isinstance(loop.items[0].shape, A.MdspanLit)
    loop.items[0].shape.items[0] = A.Binary("*", A.Paren(bound, span=bound.span), _lit(f, bound), span=bound.span)
    for op, p in windows:
        op.args[p] = _lit(step, op.args[p])
    for buf, p in kpos.items():
        shape = decls[buf].shape
        assert shape is not None
        shape[p] = _lit(step, shape[p])
    assert isinstance(inner.items[0], A.Within) and isinstance(inner.items[0].shape, A.MdspanLit)
    inner.items[0].shape.items[0] = _lit(step, inner.items[0].shape.items[0])
    return tk


def _lit(v: int, old: A.Expr) -> A.IntLit:
    return A.IntLit(v, str(v), span=old.span)
