"""Static checks that need no type inference (run by ``croq2triton check``).

Each check walks one function and reports diagnostics with spans.  Errors are
raised together as one :class:`CroqSemanticError`; warnings are returned.

A family of checks of one construct lives in a module of its own (sema/returns.py, sema/calls.py,
...) as a function of the function it checks that returns its errors; it joins ``FUNCTION_CHECKS``.
The user's errors that need what the lifting knows (the shapes of views, the element types of MMA
operands, the ranges of indices) are lift/checks.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from ..errors import CroqSemanticError, Diagnostic
from ..frontend import ast as A
from ..frontend.preprocess import MacroUse
from .accumulators import accumulator_errors
from .afters import after_errors
from .arraydims import array_dim_errors
from .asserts import static_assert_errors
from .attributes import attribute_errors
from .bitgroups import bit_group_warnings
from .blanks import blank_index_errors
from .calls import arity_errors, helper_call_errors, unknown_calls
from .consteval import const_int, constant_values
from .directions import direction_errors
from .dmacfg import dma_cfg_errors
from .earlyreads import early_read_warnings
from .fills import fill_errors
from .futures import future_errors
from .hostcopies import host_copy_errors
from .initialised import uninitialised_errors
from .levelargs import level_arg_errors
from .levels import chains, sibling_thread_errors, thread_count_warnings, unit_thread_errors
from .mistakes import mistake_errors
from .misuse import misuse_errors
from .nesting import nesting_errors
from .outofscope import out_of_scope_errors
from .params import unbounded_param_errors
from .pbounds import buffer_extent_errors, parallel_bound_errors
from .ranges import range_errors
from .ranks import rank_errors, view_rank_errors
from .returns import return_errors
from .schedules import schedule_errors
from .scopes import Binding, Resolution, resolve
from .selects import select_option_errors
from .sizes import size_errors
from .slotbounds import slot_index_errors
from .squeeze import squeeze_errors
from .streams import stream_errors
from .swaps import swap_errors
from .swizzle import swizzle_errors
from .tiling import chunkat_warnings, source_text
from .tma_boxes import tma_box_errors
from .tmaloads import tma_load_errors
from .triggers import trigger_errors
from .viewbounds import view_bound_errors
from .viewfactors import view_factor_errors
from .withins import within_errors

LEVEL_ORDER = {"cluster": 0, "block": 1, "group-4": 2, "group": 3, "thread": 4}

# checks of one construct each, in their own modules: (function) -> its errors
FUNCTION_CHECKS: tuple[Callable[[A.CoFunction], list[Diagnostic]], ...] = (
    return_errors,
    arity_errors,
    helper_call_errors,
    attribute_errors,
    trigger_errors,
    blank_index_errors,
    swap_errors,
    static_assert_errors,
    stream_errors,
    tma_box_errors,
    unbounded_param_errors,
    range_errors,
    fill_errors,
    future_errors,
    schedule_errors,
    parallel_bound_errors,
    buffer_extent_errors,
    nesting_errors,
    uninitialised_errors,
    level_arg_errors,
)


def _walk_stmts(stmts: list[A.Stmt], parallel_depth: int = 0) -> Iterator[tuple[A.Stmt, int]]:
    for s in stmts:
        yield s, parallel_depth
        inner = parallel_depth + (1 if isinstance(s, A.Parallel) else 0)
        body = getattr(s, "body", None)
        if isinstance(body, A.Stmt):
            yield from _walk_stmts(body.stmts if isinstance(body, A.Block) else [body], inner)
        if isinstance(s, A.If):
            for b in (s.then, s.other):
                if b is not None:
                    yield from _walk_stmts(b.stmts if isinstance(b, A.Block) else [b], inner)


DEVICE_TARGETS = ("cpu", "gpu", "cuda", "host")  # ': device(T)'; the corpus uses cpu and gpu


def _ranks(fn: A.CoFunction) -> dict[str, int]:
    """Names whose value is a shape of known rank: mdspan declarations and shaped parameters
    (reached as ``x.span``)."""
    out: dict[str, int] = {}
    for p in fn.params:
        dims = getattr(getattr(p.type, "shape", None), "dims", None)
        rank = getattr(getattr(p.type, "shape", None), "rank", None)
        if p.name and (dims is not None or rank is not None):
            out[p.name + ".span"] = len(dims) if dims is not None else rank  # type: ignore[assignment]
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.MdspanDecl):
                r = n.rank if n.rank is not None else _rank_of(n.value, out)
                if r is not None:
                    out[n.name] = r
            elif isinstance(n, A.SpannedDecl) and n.shape is not None and all(not d.dims for d in n.items):
                for d in n.items:
                    out[d.name + ".span"] = len(n.shape)
            elif isinstance(n, A.ItupleDecl) and isinstance(n.value, A.ItupleLit):
                out[n.name] = len(n.value.items)
            elif isinstance(n, A.ScalarDecl):
                for d in n.items:
                    out.setdefault(d.name, 1)
    for p in fn.params:
        if p.name and p.type.kind in ("int", "bool", "elem"):
            out[p.name] = 1
    return out


def _rank_of(e: A.Expr, ranks: dict[str, int]) -> int | None:
    """How many extents ``e`` stands for in a bound list (None: not known statically)."""
    if isinstance(e, A.MdspanLit):
        parts = [_rank_of(x, ranks) for x in e.items]
        return None if None in parts else sum(parts)  # type: ignore[arg-type]
    if isinstance(e, A.Name):
        return ranks.get(e.name)  # a scalar (1), a shape of known rank, or unknown
    if isinstance(e, A.Member) and e.member == "span" and isinstance(e.base, A.Name):
        return ranks.get(e.base.name + ".span")
    if isinstance(e, (A.IntLit, A.GetIth, A.Builtin, A.Paren, A.Unary)):
        return 1
    if isinstance(e, A.Binary):
        a, b = _rank_of(e.lhs, ranks), _rank_of(e.rhs, ranks)
        return None if a is None or b is None else max(a, b)
    return None


def check_function(fn: A.CoFunction, macro_uses: Sequence[MacroUse] = ()) -> tuple[list[Diagnostic], list[Diagnostic]]:
    errors: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    for p in fn.params:  # constant parameter extents must be positive
        for d in getattr(getattr(p.type, "shape", None), "dims", None) or []:
            v = const_int(d)
            if v is not None and v <= 0:
                errors.append(
                    Diagnostic(
                        "error", f"the extent {v} of parameter '{p.name}' is invalid", d.span, "extents are >= 1"
                    )
                )
    ranks = _ranks(fn)
    indices: set[str] = set()  # parallel / foreach / with index names: not constants
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, (A.PBy, A.Within)):
                indices.update(x for x in ([n.name] + list(n.vars or [])) if x)
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.SpannedDecl):
                for dim in n.shape or []:  # constant buffer extents must be positive too
                    v = const_int(dim)
                    if v is not None and v <= 0:
                        names = ", ".join(f"'{d.name}'" for d in n.items)
                        errors.append(
                            Diagnostic("error", f"the extent {v} of {names} is invalid", dim.span, "extents are >= 1")
                        )
            if isinstance(n, A.ScalarDecl):
                warnings.extend(_lossy_initialisers(n))
            if isinstance(n, A.SpannedDecl):
                for d in n.items:
                    for dim in d.dims:  # an array of buffers: 'local u8 [M, N] smem[2][Y]'
                        bad = next((x for x in dim.walk() if isinstance(x, A.Name) and x.name in indices), None)
                        if bad is not None:
                            errors.append(
                                Diagnostic(
                                    "error",
                                    f"the dimensions of the buffer array '{d.name}' must be constant integers,"
                                    f" not the index '{bad.name}'",
                                    bad.span,
                                    "an array of buffers has one length for the whole block: give it as a literal, a"
                                    " #define or an int constant, and pick a buffer with the index: "
                                    f"{d.name}[{bad.name}]",
                                )
                            )
            if isinstance(n, A.DmaAttr) and n.name == "sp" and n.args and list(n.args) != [2, 4]:
                errors.append(
                    Diagnostic(
                        "error",
                        f"only 2:4 structured sparsity is supported; got {n.args[0]}:{n.args[1]}",
                        n.span,
                        "write .sp<2:4>: two values kept in every four (Hopper's sparse tensor cores take no other)",
                    )
                )
    seen: dict[str, A.Param] = {}
    for p in fn.params:
        if p.name is None:
            continue
        if p.name in seen:
            errors.append(Diagnostic("error", f"parameter '{p.name}' is declared twice", p.span))
        seen[p.name] = p
        if p.ref and p.storage == "global":
            errors.append(Diagnostic("error", f"'&' is not allowed on the global parameter '{p.name}'", p.span))
        if p.ref and p.type.kind != "spanned":
            errors.append(Diagnostic("error", f"scalar parameter '{p.name}' cannot be passed by reference", p.span))
    for s, depth in _walk_stmts(fn.body):
        if isinstance(s, A.Return) and depth > 0:
            errors.append(
                Diagnostic(
                    "error", "'return' inside 'parallel'", s.span, "use 'yield' to leave the device program early"
                )
            )
        if isinstance(s, (A.Parallel, A.Foreach, A.With)):
            errors += _names_twice(s)
        if isinstance(s, A.Parallel):
            last = -1
            for lvl in s.levels:
                counts = [_rank_of(b, ranks) for b in lvl.bound]  # an mdspan bound counts its extents
                nb = sum(counts) if None not in counts else None  # type: ignore[arg-type]
                if lvl.vars is not None and nb is not None and len(lvl.vars) != nb:
                    errors.append(
                        Diagnostic(
                            "error",
                            f"{len(lvl.vars)} parallel variable(s) but {nb} bound(s)",
                            lvl.span,
                            "give one bound per variable: 'parallel {p, q} by [P, Q]'",
                        )
                    )
                if lvl.level == "device" and lvl.level_arg is not None and lvl.level_arg not in DEVICE_TARGETS:
                    errors.append(
                        Diagnostic(
                            "error",
                            f"unknown device target '{lvl.level_arg}'",
                            lvl.span,
                            f"targets: {', '.join(DEVICE_TARGETS)}",
                        )
                    )
                if lvl.vars is not None and len(lvl.vars) > 3:
                    errors.append(Diagnostic("error", "a parallel level has at most 3 dimensions", lvl.span))
                if lvl.level in LEVEL_ORDER:
                    order = LEVEL_ORDER[lvl.level]
                    if order < last:
                        errors.append(
                            Diagnostic(
                                "error",
                                f"level ': {lvl.level}' is nested inside a finer level",
                                lvl.span,
                                "levels go from coarse to fine: cluster, block, group-4, group, thread",
                            )
                        )
                    last = order
        if isinstance(s, A.ScalarDecl) and s.mutable and s.type is None:
            for d in s.items:  # 'mutable x = v': the type comes from v
                if d.init is None and d.fill is None:
                    errors.append(
                        Diagnostic(
                            "error",
                            f"unable to deduce the type of '{d.name}'",
                            d.span or s.span,
                            f"give it a value or a type: 'mutable int {d.name} = 0;'",
                        )
                    )
                elif isinstance(d.init, A.ItupleLit):
                    errors.append(
                        Diagnostic(
                            "error", f"'{d.name}' is an ituple and cannot be declared 'mutable'", d.span or s.span
                        )
                    )
        if isinstance(s, A.AssignStmt):  # ``t = [1, 2]`` (LANGUAGE.md 5: rejected, 4.1: shapes take ':')
            for a in s.items:
                if a.op == "=" and isinstance(a.target, A.Name) and isinstance(a.value, A.MdspanLit):
                    errors.append(
                        Diagnostic(
                            "error",
                            f"'{a.target.name} = [..]': a bracket list is a shape, declared with ':'",
                            a.value.span,
                            f"write '{a.target.name} : [..];' for a shape, or use '{{}}' for an ituple:"
                            f" '{a.target.name} = {{..}};'",
                        )
                    )
        if isinstance(s, (A.SpannedDecl, A.EventDecl)) and s.storage in ("shared", "local") and depth == 0:
            errors.append(Diagnostic("error", f"'{s.storage}' storage is only allowed inside 'parallel'", s.span))
        elif isinstance(s, A.DmaStmt) and depth == 0 and _storage_dst(s) in ("shared", "local"):
            errors.append(_host_storage_copy(s))
        elif (
            isinstance(s, (A.EventDecl, A.FragDecl, A.FragInit))
            and depth == 0
            and not (isinstance(s, A.EventDecl) and s.storage == "global")  # (kernels share a global one)
        ):  # LANGUAGE.md 7.3
            what = "an 'event'" if isinstance(s, A.EventDecl) else "a fragment ('frag')"
            errors.append(
                Diagnostic(
                    "error",
                    f"{what} is only allowed inside 'parallel'",
                    s.span,
                    "events and fragments belong to the threads of a kernel: declare it inside the 'parallel'",
                )
            )
        for node in (
            s.walk() if not isinstance(s, (A.Parallel, A.With, A.Foreach, A.If, A.While, A.InThreads, A.Apply)) else []
        ):
            if isinstance(node, A.Binary) and node.op in ("#*", "#/", "#%"):
                errors.append(
                    Diagnostic("error", f"the operator '{node.op}' is not supported", node.span, "use '#+' or '#-'")
                )
    res = resolve(fn)
    value = constant_values(res)
    errors.extend(_reassignment_errors(res))
    errors.extend(_redeclaration_errors(res))
    warnings.extend(_nested_reassignment_warnings(res))
    errors.extend(unknown_calls(fn, res))
    errors.extend(out_of_scope_errors(res))
    errors.extend(size_errors(fn, res))
    errors.extend(rank_errors(fn, res))
    errors.extend(view_rank_errors(fn, res))
    errors.extend(misuse_errors(fn, res))
    errors.extend(mistake_errors(fn, res))
    errors.extend(_cmdline_size_errors(fn, macro_uses))
    errors.extend(swizzle_errors(fn))
    errors.extend(view_bound_errors(fn, res, value))
    errors.extend(direction_errors(fn, res))
    errors.extend(dma_cfg_errors(fn, res))
    errors.extend(within_errors(fn, res))
    errors.extend(array_dim_errors(fn, value))
    errors.extend(slot_index_errors(fn, value))
    errors.extend(select_option_errors(fn, res))
    errors.extend(host_copy_errors(fn, res, value))
    errors.extend(squeeze_errors(fn, res))
    errors.extend(view_factor_errors(fn, value))
    errors.extend(tma_load_errors(fn, res))
    errors.extend(after_errors(fn, res))
    errors.extend(accumulator_errors(fn, res))
    for s, depth in _walk_stmts(fn.body):
        if isinstance(s, A.Parallel) and depth == 0:  # a kernel: its whole nest at once
            warnings.extend(thread_count_warnings(s, value))
            errors.extend(unit_thread_errors(s, value))
            for d in sibling_thread_errors(s, value):
                (errors if d.severity == "error" else warnings).append(d)
            errors.extend(_nest_order_errors(s))
    warnings.extend(chunkat_warnings(fn, res, value))
    warnings.extend(early_read_warnings(fn))
    warnings.extend(bit_group_warnings(fn))
    for check in FUNCTION_CHECKS:
        errors.extend(check(fn))
    return errors, warnings


_INTEGERS = ("int", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64")


def _lossy_initialisers(n: A.ScalarDecl) -> list[Diagnostic]:
    """``int k = 3.5f;``: a float constant with a fraction converted to an integer (LANGUAGE.md 4.4:
    lossy implicit conversions warn)."""
    out: list[Diagnostic] = []
    if n.type not in _INTEGERS:
        return out
    for d in n.items:
        init = d.init
        while isinstance(init, (A.Paren, A.Unary)) and not isinstance(init, A.FloatLit):
            init = init.expr if isinstance(init, A.Paren) else init.operand if init.op in "+-" else None
        if isinstance(init, A.FloatLit) and init.value != int(init.value):
            out.append(
                Diagnostic(
                    "warning",
                    f"'{d.name}' is {n.type}: the float {init.text} converts to {int(init.value)} (the fraction is dropped)",
                    d.init.span if d.init is not None else d.span,
                    f"write an integer, or declare '{d.name}' as a float type (f32)",
                )
            )
    return out


def _storage_dst(s: A.DmaStmt) -> str | None:
    """The storage a copy allocates its destination in (``=> shared``), else None."""
    return s.dst.name if s.dst_storage and isinstance(s.dst, A.Name) else None


def _host_storage_copy(s: A.DmaStmt) -> Diagnostic:
    """``dma.copy a => local`` on the host: its destination would be a ``local``/``shared`` buffer
    outside any ``parallel``, which the storage rules forbid (LANGUAGE.md 7.3)."""
    where = _storage_dst(s)
    return Diagnostic(
        "error",
        f"'{s.engine}.{s.op} ... => {where}' outside 'parallel': a '{where}' buffer only exists inside a kernel",
        s.dst.span or s.span,
        "move the copy inside a 'parallel', or copy into device memory with '=> global'",
    )


def _nest_order_errors(top: A.Parallel) -> list[Diagnostic]:
    """Annotated levels of nested ``parallel`` statements go from coarse to fine (LANGUAGE.md 7.3);
    the order within one statement's comma list is checked where the levels are read."""
    out: list[Diagnostic] = []
    seen: set[int] = set()
    owner = {id(b): id(p) for p in top.walk() if isinstance(p, A.Parallel) for b in p.levels}
    for chain in chains(top):
        finest: A.PBy | None = None
        for b in chain:
            if b.level not in LEVEL_ORDER:
                continue
            inverted = finest is not None and LEVEL_ORDER[b.level] < LEVEL_ORDER[finest.level]  # type: ignore[index]
            if inverted and owner[id(b)] != owner[id(finest)] and id(b) not in seen:  # type: ignore[arg-type]
                seen.add(id(b))
                out.append(
                    Diagnostic(
                        "error",
                        f"level ': {b.level}' is nested inside the finer level ': {finest.level}'",
                        b.span,
                        "levels go from coarse to fine: cluster, block, group-4, group, thread",
                    )
                )
            if finest is None or LEVEL_ORDER[b.level] >= LEVEL_ORDER[finest.level]:  # type: ignore[index]
                finest = b
    return out


def check_unit(tu: A.TranslationUnit) -> list[Diagnostic]:
    """Run every static check; raise on errors, return warnings (the preprocessor's first)."""
    errors: list[Diagnostic] = []
    warnings: list[Diagnostic] = list(tu.warnings)
    names: dict[str, A.CoFunction] = {}
    for fn in tu.functions:
        if fn.name in names:
            errors.append(Diagnostic("error", f"'__co__' function '{fn.name}' is defined twice", fn.span))
        names[fn.name] = fn
        e, w = check_function(fn, tu.macro_uses)
        errors.extend(e)
        warnings.extend(w)
    errors.extend(_co_calls(tu, names))
    if errors:
        raise CroqSemanticError.many(errors)
    return warnings


def _co_calls(tu: A.TranslationUnit, names: dict[str, A.CoFunction]) -> list[Diagnostic]:
    """``call f(..)`` of a ``__co__`` function: they cannot call each other (LANGUAGE.md 3)."""
    out: list[Diagnostic] = []
    for fn in tu.functions:
        for n in fn.walk():
            if isinstance(n, A.Call) and n.kind == "call" and n.name in names:
                out.append(
                    Diagnostic(
                        "error",
                        f"'{fn.name}' calls the __co__ function '{n.name}': __co__ functions cannot call each other",
                        n.span,
                        f"call both from the host program, or write the work of '{n.name}' into '{fn.name}'",
                    )
                )
    return out


# ---- re-assigned immutables (LANGUAGE.md 4.3) ---------------------------------


def _immutable_why(b: Binding) -> tuple[str, str]:
    """Why ``b`` cannot be re-assigned, and how to fix it."""
    n = b.name
    init = source_text(b.value) if b.value is not None else "..."
    if b.kind in ("int", "bool"):
        if b.origin == "parameter":
            return f"the {b.kind} parameter '{n}' is immutable", f"copy it into a mutable: 'mutable {b.kind} v = {n};'"
        how = "declared without 'mutable'" if b.origin == "declaration" else f"declared by '{n} = {init};'"
        return f"it is an immutable {b.kind} ({how})", f"declare it 'mutable {b.kind} {n} = {init};'"
    other = "give the new value another name"
    if b.kind == "spanned":
        return (
            f"'{n}' is spanned data, changed only by copies, element writes, MMA stores and atomics",
            f"copy into it: 'dma.copy SOURCE => {n};', or write its elements: '{n}.at(..) = ..;'",
        )
    if b.kind == "bounded":
        what = {"parallel": "a parallel index", "with": "a bounded index of 'with'"}.get(b.origin, "a loop index")
        return f"'{n}' is {what}", other
    if b.kind == "dim":
        return f"'{n}' is a symbolic dimension of a parameter shape", other
    article = "an" if b.kind in ("mdspan", "ituple") else "a"
    return f"{article} {b.kind} is immutable", other


def _reassignment_errors(res: Resolution) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for r in res.reassigned:
        b = r.binding
        why, hint = _immutable_why(b)
        if r.op == "=":
            msg = f"cannot re-assign '{b.name}': {why}"
        elif r.op in ("++", "--"):
            msg = f"cannot apply '{r.op}' to '{b.name}': {why}"
        else:
            msg = f"cannot update '{b.name}' with '{r.op}=': {why}"
        notes = [Diagnostic("note", f"'{b.name}' is declared here", b.span)] if b.span is not None else []
        out.append(Diagnostic("error", msg, r.node.span, hint, notes))
    return out


def _redeclaration_errors(res: Resolution) -> list[Diagnostic]:
    """A name declared twice in one scope (``int k = 4; int k = 5;``, a buffer declared again, a
    parameter declared again at the function's top level): an error, as in C; an inner scope may
    shadow it (LANGUAGE.md 6)."""
    out: list[Diagnostic] = []
    for new, old in res.redeclared:
        what = "a parameter" if old.origin == "parameter" else "declared"
        notes = [Diagnostic("note", f"'{old.name}' is {what} here", old.span)] if old.span is not None else []
        hint = f"give the second one another name, or assign to it: '{new.name} = ..;'" + (
            f" ('{new.name}' must be declared 'mutable' for that)" if old.kind in ("int", "bool") else ""
        )
        out.append(Diagnostic("error", f"'{new.name}' is declared twice in the same scope", new.span, hint, notes))
    return out


def _nested_reassignment_warnings(res: Resolution) -> list[Diagnostic]:
    """``x = e`` inside a loop or branch, ``x`` an immutable int or bool declared outside it:
    LANGUAGE.md 4.3 makes re-assigning an immutable an error, upstream accepts the form (its parse
    tests use it); croq2triton accepts it too and updates ``x``, and says so."""
    out: list[Diagnostic] = []
    for r in res.nested:
        b = r.binding
        init = source_text(b.value) if b.value is not None else "..."
        notes = [Diagnostic("note", f"'{b.name}' is declared here", b.span)] if b.span is not None else []
        out.append(
            Diagnostic(
                "warning",
                f"'{b.name}' is an immutable {b.kind} of an enclosing scope: this assignment re-assigns it"
                f" (LANGUAGE.md 4.3 makes that an error; croq2triton accepts it, as upstream does, and updates"
                f" '{b.name}')",
                r.node.span,
                f"declare it 'mutable {b.kind} {b.name} = {init};', or give the new value another name",
                notes,
            )
        )
    return out


# ---- sizes made from -D values that are not integers (LANGUAGE.md 2) -----------


def _size_exprs(fn: A.CoFunction) -> Iterator[A.Node]:
    """Every expression that must be an integer size: extents, shapes, bounds, tile extents."""
    for p in fn.params:
        if p.type.shape is not None:
            yield from p.type.shape.dims or []
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, (A.SpannedDecl, A.FragDecl)):
                yield from n.shape or []
                for d in n.items:
                    yield from d.dims
            elif isinstance(n, A.EventDecl):
                for e in n.items:
                    yield from e.dims
            elif isinstance(n, A.FragInit):
                yield from n.dims
            elif isinstance(n, (A.MdspanDecl, A.ItupleDecl)):
                yield n.value
            elif isinstance(n, A.PBy):
                yield from n.bound
            elif isinstance(n, A.Within):
                yield n.shape
            elif isinstance(n, A.RangeItem):
                yield from (x for x in (n.lo, n.hi, n.step) if x is not None)
            elif isinstance(n, A.ViewOp) and n.kind in ("subspan", "chunk", "modspan", "view", "span_as"):
                yield from n.args
                yield from n.strides or []
                yield from n.step or []


def _cmdline_size_errors(fn: A.CoFunction, uses: Sequence[MacroUse]) -> list[Diagnostic]:
    if not uses:
        return []
    out: list[Diagnostic] = []
    seen: set[tuple[str, int]] = set()
    for e in _size_exprs(fn):
        for n in e.walk():
            text = n.name if isinstance(n, A.Name) else n.text if isinstance(n, (A.FloatLit, A.IntLit)) else None
            sp = n.span
            if text is None or sp is None or not sp.offsets_known:
                continue
            for u in uses:
                if u.start <= sp.start < u.end and text in u.tokens and (u.name, sp.start) not in seen:
                    seen.add((u.name, sp.start))
                    out.append(
                        Diagnostic(
                            "error",
                            f"-D {u.name}={u.value} is not an integer, but '{u.name}' is used as a size here"
                            + (f" (through '{u.via}')" if u.via != u.name else ""),
                            sp,
                            f"pass an integer: -D {u.name}=<N>",
                        )
                    )
    return out


def _names_twice(s: A.Parallel | A.Foreach | A.With) -> list[Diagnostic]:
    """A name that one ``parallel``, ``foreach`` or ``with`` binds twice (``parallel {a, a} by [2, 2]``,
    ``foreach {i, i} in [..]``): two indices of one statement under one name, which C would reject as
    a redeclaration and no read could tell apart."""
    parts: list[A.PBy | A.Within] = list(s.levels) if isinstance(s, A.Parallel) else [
        x for x in (s.items if isinstance(s, A.Foreach) else s.withins) if isinstance(x, A.Within)
    ]  # fmt: skip
    what = "parallel" if isinstance(s, A.Parallel) else "foreach" if isinstance(s, A.Foreach) else "with"
    seen: set[str] = set()
    out: list[Diagnostic] = []
    for part in parts:
        for name in part.names:
            if name in seen and name != "_":
                hint = "give each index a name of its own"
                out.append(Diagnostic("error", f"'{name}' names two indices of one '{what}'", part.span, hint))
            seen.add(name)
    return out
