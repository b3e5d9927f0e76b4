"""Collapse warp-specialised producer/consumer pipelines into one pipelined loop.

The form (LANGUAGE.md 7.10, the seed chapter, tutorial GEMM v3/v4)::

    parallel wg by N : group-4 [, t by 128 : thread] {
      inthreads.async (<producer>) { foreach k in S { wait empty..; tma.copy ... => buf[k % STAGES]; trigger full..; } }
      inthreads.async (<consumer>) { prologue; foreach k in S { wait full..; mma ...; trigger empty..; } epilogue }
    }

has the sequential meaning "for each k: the producer's copies, then the consumer's work"
(the events only order those two).  It becomes one ``tl.range(..., num_stages=STAGES,
warp_specialize=...)`` loop; events disappear; a stage ring ``buf[k % STAGES]`` is the tile
of the current iteration (Triton multi-buffers it).  Several consumer warpgroups, each owning a
row block selected by its index (``cidx = wg - 1``), merge into one tile of CONSUMERS x rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CroqLoweringError
from ..frontend import ast as A
from ..frontend.printer import Printer
from . import exprs as X
from .values import Bounded, Val, const

if TYPE_CHECKING:
    from .kernel import KernelLowering

EVENT_ONLY = (A.Wait, A.Trigger, A.Sync, A.MmaCommit, A.Empty)


def is_pipeline(body: A.Stmt) -> bool:
    stmts = body.stmts if isinstance(body, A.Block) else [body]
    return any(isinstance(s, A.InThreads) and s.is_async for s in stmts)


def _event_only(s: A.Stmt) -> bool:
    if isinstance(s, EVENT_ONLY):
        return True
    if isinstance(s, A.Foreach):
        inner = s.body.stmts if isinstance(s.body, A.Block) else [s.body]
        return all(_event_only(x) for x in inner)
    if isinstance(s, A.Block):
        return all(_event_only(x) for x in s.stmts)
    return False


def _stmts(s: A.Stmt) -> list[A.Stmt]:
    return s.stmts if isinstance(s, A.Block) else [s]


def _eval_pred(e: A.Expr, role: str, w: int, threads: set[str]) -> Any:
    """Evaluate a role predicate for warpgroup ``w``; comparisons on thread indices count as true."""
    if isinstance(e, A.Paren):
        return _eval_pred(e.expr, role, w, threads)
    if isinstance(e, A.IntLit):
        return e.value
    if isinstance(e, A.BoolLit):
        return e.value
    if isinstance(e, A.Name):
        if e.name == role:
            return w
        if e.name in threads:
            return "thread"
        raise CroqLoweringError(f"a role predicate may only test '{role}' and thread indices, not '{e.name}'", e.span)
    if isinstance(e, A.Unary) and e.op == "!":
        v = _eval_pred(e.operand, role, w, threads)
        return True if v == "thread" else not v
    if isinstance(e, A.Binary):
        a = _eval_pred(e.lhs, role, w, threads)
        b = _eval_pred(e.rhs, role, w, threads)
        if e.op == "&&":
            return (a is True or a == "thread" or (a not in (False, 0))) and (
                b is True or b == "thread" or b not in (False, 0)
            )
        if e.op == "||":
            return bool(a) or bool(b)
        if "thread" in (a, b):
            return True
        ops = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}
        if e.op in ops:
            return ops[e.op]
        if e.op in ("+", "-", "*", "%", "/"):
            return {"+": a + b, "-": a - b, "*": a * b, "%": a % b if b else 0, "/": a // b if b else 0}[e.op]
    raise CroqLoweringError(
        "this role predicate cannot be analysed", e.span, "write it as a comparison of the warpgroup index"
    )


def _has(s: A.Node, kinds: tuple[type, ...]) -> bool:
    return any(isinstance(n, kinds) for n in s.walk())


def lower_pipeline(self: KernelLowering, levels: list[A.PBy], body: A.Stmt, node: A.Node) -> None:
    role_level = next((b for b in levels if self.levels.get(id(b)) in ("group-4", "group") and b.name), None)
    if role_level is None:
        raise CroqLoweringError("warp roles need a named warpgroup index ('parallel wg by N : group-4')", node.span)
    role = role_level.name
    assert role is not None
    n_ext = self.fl.host_eval(role_level.bound[0])
    if not n_ext.is_const:
        raise CroqLoweringError("the number of warpgroups of a pipeline must be a constant", role_level.span)
    n = int(n_ext.const)
    threads = {nm for b in levels if b is not role_level for nm in (b.vars or [b.name]) if nm}
    stmts = _stmts(body)
    first = next(i for i, s in enumerate(stmts) if isinstance(s, A.InThreads) and s.is_async)
    pre = stmts[:first]
    roles: list[A.InThreads] = []
    i = first
    while i < len(stmts) and isinstance(stmts[i], A.InThreads) and stmts[i].is_async:  # type: ignore[union-attr]
        roles.append(stmts[i])  # type: ignore[arg-type]
        i += 1
    post = stmts[i:]
    if any(isinstance(s, A.InThreads) and s.is_async for s in post):
        raise CroqLoweringError("statements between warp roles cannot be lowered", post[0].span)
    members = []
    for r in roles:
        ws = [w for w in range(n) if _eval_pred(r.cond, role, w, threads)]
        members.append(ws)
    for a in range(len(roles)):
        for b in range(a + 1, len(roles)):
            both = set(members[a]) & set(members[b])
            if both:
                raise CroqLoweringError(
                    f"warp roles overlap: warpgroup {sorted(both)[0]} runs both",
                    roles[b].span,
                    "role predicates must be disjoint",
                )
    producers = [(r, m) for r, m in zip(roles, members) if not _has(r, (A.MmaOp,))]
    consumers = [(r, m) for r, m in zip(roles, members) if _has(r, (A.MmaOp,))]
    if len(producers) != 1 or len(consumers) != 1:
        bad = (
            roles[0]
            if not consumers
            else (consumers[1][0] if len(consumers) > 1 else producers[1][0] if len(producers) > 1 else roles[0])
        )
        raise CroqLoweringError(
            f"a pipeline needs one producer role (copies) and one consumer role (MMA); found {len(producers)} and {len(consumers)}",
            bad.span,
        )
    prod, pw = producers[0]
    cons, cw = consumers[0]
    if len(pw) != 1:
        raise CroqLoweringError("the producer role must be one warpgroup", prod.span)
    if not cw or cw != list(range(cw[0], cw[0] + len(cw))):
        raise CroqLoweringError("consumer warpgroups must be consecutive", cons.span)
    p_loop, p_pre, p_post = _split_loop(prod, "producer")
    c_loop, c_pre, c_post = _split_loop(cons, "consumer")
    if p_pre or p_post:
        bad = (p_pre + p_post)[0]
        raise CroqLoweringError("the producer role may only contain its loop (and event operations)", bad.span)
    pv, pshape = _loop_var(p_loop)
    cv, cshape = _loop_var(c_loop)
    pr = Printer()
    if pr.expr(pshape) != pr.expr(cshape):
        raise CroqLoweringError(
            f"producer and consumer loops iterate differently ({pr.expr(pshape)} vs {pr.expr(cshape)})",
            c_loop.span,
            "both roles must loop over the same K range",
        )
    consumers_n = len(cw)
    self.max_consumers = consumers_n
    w = self.w
    w.comment(
        f"warp-specialised pipeline ({self.fl.src_name}:{node.span.line if node.span else 0}): producer warpgroup {pw[0]}, "
        f"consumer warpgroup(s) {cw[0]}..{cw[-1]} merged into one loop; events become program order"
    )
    self.push()
    for s in pre:
        self.stmt(s)
    stages = _stages(self, prod)
    if self.fl.schedule != "auto" and _releases_in_flight(c_loop):
        stages += 1
    self.pipeline = {"consumers": consumers_n, "first": cw[0], "stages": stages}
    self.push()
    self.bind_role(role, cw[0], consumers_n)
    for s in c_pre:
        if not _event_only(s):
            self.stmt(s)
    bound = self.shape_extents(cshape, c_loop)
    if len(bound) != 1:
        raise CroqLoweringError("a pipelined loop must have one index", c_loop.span)
    stages = self.pipeline["stages"]
    var = self.fresh(pv)
    hi = bound[0]
    ws = self.constexpr("WARP_SPECIALIZE", "_rt.WARP_SPECIALIZE")
    ns = self.constexpr("NUM_STAGES", str(stages))
    self.pipelined = True
    self.loop_depth += 1
    with w.block(f"for {var} in tl.range(0, {hi.code}, num_stages={ns}, warp_specialize={ws}):", c_loop.span):
        lv = Val(var, "int", None, frozenset(), None, (), True, hi)
        self.push()
        self.bind_role(role, pw[0], 1)
        self.bind(pv, Bounded(pv, lv, hi, "loop"))
        for s in _stmts(p_loop.body):
            if not _event_only(s):
                self.stmt(s)
        self.pop()
        self.push()
        self.bind_role(role, cw[0], consumers_n)
        self.bind(cv, Bounded(cv, lv, hi, "loop"))
        for s in _stmts(c_loop.body):
            if not _event_only(s):
                self.stmt(s)
        self.pop()
    self.loop_depth -= 1
    for s in c_post:
        if not _event_only(s):
            self.stmt(s)
    self.pop()
    self.pipeline = None
    for s in post:
        self.stmt(s)
    self.pop()


def bind_role(self: KernelLowering, role: str, first: int, count: int) -> None:
    if count == 1:
        self.bind(role, Bounded(role, const(first), const(first + count), "role"))
        self.cons_counts = {}
        return
    self.cons_counts = {"@consumer": count}
    self.bind(role, Bounded(role, X.cons_val(const(first), {"@consumer": 1}), const(first + count), "role"))


def _split_loop(r: A.InThreads, what: str) -> tuple[A.Foreach, list[A.Stmt], list[A.Stmt]]:
    stmts = _stmts(r.body)
    loops = [i for i, s in enumerate(stmts) if isinstance(s, A.Foreach) and not _event_only(s)]
    if len(loops) != 1:
        raise CroqLoweringError(
            f"the {what} role must have exactly one main loop (found {len(loops)})",
            r.span,
            "a pipeline role is: prologue, one loop over the K tiles, epilogue",
        )
    k = loops[0]
    return stmts[k], stmts[:k], stmts[k + 1 :]  # type: ignore[return-value]


def _loop_var(f: A.Foreach) -> tuple[str, A.Expr]:
    if len(f.items) != 1 or not isinstance(f.items[0], A.Within):
        raise CroqLoweringError("a pipelined loop must be 'foreach k in [n]'", f.span)
    wi = f.items[0]
    names = wi.vars if wi.vars is not None else [wi.name]
    if len(names) != 1 or names[0] is None:
        raise CroqLoweringError("a pipelined loop must have one index", f.span)
    return names[0], wi.shape


# bytes of shared memory the stage buffers may take on Hopper (227 KB per block in all): the rest is
# for the epilogue (4 stages of 128 x 64 + 256 x 64 f16 tiles and a 128 x 256 output tile need 256 KB)
SMEM_BUDGET = 160 * 1024


def _releases_in_flight(c_loop: A.Foreach) -> bool:
    """Does the consumer free its slot right after ``mma.commit`` (without waiting for the MMAs)?

    Then the producer's next copy runs while the committed MMAs still read the slot: one tile more
    than ``STAGES`` is live.  Triton never lets a load overwrite a buffer an MMA may still read, so
    the same overlap needs one more buffer: the loop gets ``STAGES + 1`` stages (tutorial v3 with
    ``STAGES = 1``: 0.54 -> 0.73 of cuBLAS at 8192^3, perf/RESULTS.md 2026-11-30).
    """
    stmts = _stmts(c_loop.body)
    return any(isinstance(a, A.MmaCommit) and isinstance(b, A.Trigger) for a, b in zip(stmts, stmts[1:]))


def _stages(self: KernelLowering, prod: A.InThreads) -> int:
    """Pipeline depth: the size of the stage rings the producer fills.

    ``--schedule auto`` deepens it to as many stages (up to 4) as fit in shared memory.
    """
    from ..sema.types import TYPES

    best = 1
    per_stage = 0
    for n in prod.walk():
        if isinstance(n, A.DmaStmt) and isinstance(n.dst, A.Index) and isinstance(n.dst.base, A.Name):
            buf = self.lookup_opt(n.dst.base.name)
            count = getattr(buf, "count", 1)
            best = max(best, int(count))
            if buf is not None and all(d.is_const for d in buf.dims):
                size = TYPES[buf.elem].nbytes
                for d in buf.dims:
                    size *= int(d.const)
                per_stage += size
    if self.fl.schedule == "auto" and per_stage:
        best = max(best, min(4, SMEM_BUDGET // per_stage))
    return best
