"""Kernels of the tile IR: typed arguments, statements, and what the source says about its schedule.

One :class:`Kernel` is one program of a block-level ``parallel``: its grid, the arguments the
launcher passes, and a body of statements over block-level tiles (the warpgroup / warp / thread
levels of the source are lane axes, i.e. dimensions of the tiles).  Every statement carries the
``.co`` line it comes from (``line``); the emitter writes it as a comment.

Loads and stores name their mask (a :class:`Let` of a boolean tile) instead of repeating it; TMA
accesses carry the masked access that replaces them where the launch-time tensor breaks TMA's
rules; loops carry a :class:`Pipeline` when the source states one (roles, events, rings), which a
Triton emitter collapses into ``tl.range(..., num_stages=...)`` and an explicit-schedule emitter
can honour exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from .expr import Expr, Var, free_vars, substitute

# ------------------------------------------------------------------ kernel arguments


@dataclass(frozen=True)
class Pointer:
    """The base pointer of a tensor (``a_ptr``); ``tensor`` is the launcher's name for it, ``extents``
    its sizes (what masks must keep accesses within), ``strides`` the :class:`Stride` arguments."""

    name: str
    tensor: str
    dtype: str
    extents: tuple[Expr, ...]
    strides: tuple[str, ...]


@dataclass(frozen=True)
class Stride:
    """An element stride of a tensor, passed at launch (``a.stride(1)``)."""

    name: str
    tensor: str
    dim: int


@dataclass(frozen=True)
class Scalar:
    """A run-time scalar: a symbolic size (``M``) or a scalar parameter (``alpha``)."""

    name: str
    dtype: str
    host: Expr  # how the launcher computes it


@dataclass(frozen=True)
class Constexpr:
    """A compile-time parameter (``tl.constexpr``): a tile size, a flag, a tunable choice.  With a
    ``size`` it is a block extent fixed at launch (:class:`~.expr.Extent`): the launcher passes the
    power of two at or above that host expression, and ``value`` is unused.  ``launch`` says where
    else the launcher takes it from: the device's SM count ("sms", ``value`` is then what the
    verifier assumes), or the runtime's warp-specialization switch ("warp_specialize")."""

    name: str
    value: int | bool
    tunable: bool = False  # a tuning sweep may vary it without changing results
    size: Expr | None = None
    of: str = ""  # with a size: what it is an extent of, for the launcher's messages ("buffer 'tile'")
    fixed: int = 1  # with a size: the product of that tile's extents known when translating
    least: int = 1  # with a size: the smallest extent the launcher passes (16 for an MMA operand's)
    launch: Literal["value", "sms", "warp_specialize"] = "value"


@dataclass(frozen=True)
class Descriptor:
    """A host ``TensorDescriptor`` over a tensor, with the block it loads or stores.  ``flag`` names
    the constexpr argument saying whether this launch's tensor meets TMA's rules (the launcher
    checks it for ``what``: "loads" or "stores"), ``source`` the tensor's name in that check's
    messages, ``fill`` what loads read outside the tensor: zero, or what the OOB sanitizer asks for."""

    name: str
    tensor: str
    block: tuple[int, ...]
    padding: Literal["zero", "nan"] = "zero"
    flag: str = ""
    what: str = "loads"
    source: str = ""
    fill: Literal["zero", "sanitizer"] = "zero"
    window: tuple[Expr, ...] = ()  # host expressions of the copied window where it is only known at launch


@dataclass(frozen=True)
class Scratch:
    """Per-program global memory for a buffer addressed element by element."""

    name: str
    dtype: str
    elements: Expr  # per program, as the launcher computes it
    lanes: int | Expr = 1  # copies per program, one for each lane (a thread's own array: no lane shares it)
    area: str = ""  # the launcher's variable of an area an earlier launch filled (none allocated for this one)
    # every program stores all of its elements before any program reads one (the split loop's partial
    # folds): the area is allocated, not zeroed first (a launch of a fill kernel fewer)
    written: bool = False
    # counters a kernel leaves zero when it ends (schedule/lastcombine.py): the launcher keeps one zeroed
    # area per device and stream for them (runtime/launch.py ``counters``), never poisoned
    kept_zero: bool = False


Arg = Pointer | Stride | Scalar | Constexpr | Descriptor | Scratch


# ------------------------------------------------------------------ statements


@dataclass
class Stmt:
    line: int = field(default=0, kw_only=True)  # the .co line (0: none)


@dataclass
class Let(Stmt):
    """``var = value``: defines ``var`` (offsets, masks, values); re-binding is :class:`Assign`."""

    var: Var
    value: Expr


@dataclass
class Assign(Stmt):
    """``var = value`` for a variable defined before (a loop-carried accumulator)."""

    var: Var
    value: Expr


@dataclass
class Load(Stmt):
    """``var = tl.load(base + index[0] * stride[0] + ..., mask=mask, other=other)``: one element
    index per dimension of the tensor (a :class:`Scratch` area has one, flat)."""

    var: Var
    base: str  # a Pointer or Scratch argument
    index: tuple[Expr, ...]
    mask: Var | None = None
    other: float | int | None = None
    nan_outside: bool = False  # the OOB sanitizer may fill masked-off lanes with NaN (not .zfill)


@dataclass
class Store(Stmt):
    base: str
    index: tuple[Expr, ...]
    value: Expr
    mask: Var | None = None


@dataclass
class TmaLoad(Stmt):
    """``var = desc.load([coords])``, or ``fallback`` where the launcher found TMA's rules broken
    (a constexpr flag chooses)."""

    var: Var
    desc: str
    coords: tuple[Expr, ...]
    fallback: Load
    flag: str  # the constexpr that says whether the descriptor is used
    reshape: tuple[int, ...] | None = None  # the loaded box reshaped (a [1, BM, BK] box as [BM, BK])


@dataclass
class TmaStore(Stmt):
    """``desc.store([coords], value)`` where the flag says TMA may be used, ``fallback`` elsewhere.
    ``split`` > 1 stores a 2-D value as that many column pieces, one descriptor box each (the
    epilogue measured faster with two half-width stores: schedule/policy.py)."""

    desc: str
    coords: tuple[Expr, ...]
    value: Expr
    fallback: Store
    flag: str
    split: int = 1


@dataclass
class Dot(Stmt):
    """``out = tl.dot(a, b, acc)`` (``acc`` None: a fresh product)."""

    out: Var
    a: Expr
    b: Expr
    acc: Expr | None = None
    precision: str | None = None  # "tf32", "ieee"
    out_dtype: str | None = None
    trans_a: bool = False  # the operand tile is stored [K, M]: the dot reads its transpose
    trans_b: bool = False  # stored [N, K]


@dataclass
class Barrier(Stmt):
    """``tl.debug_barrier()``: the block's threads meet (between accesses of different threads to
    memory they share: lift/hazards.py)."""


@dataclass
class Atomic(Stmt):
    """``result = tl.atomic_<op>(address, value, mask)``, one for each lane; ``cas`` compares
    with ``compare`` (Triton's takes no mask: masked-off lanes swap nothing for nothing)."""

    op: str  # add, max, min, xchg, cas, and, or, xor
    base: str
    index: tuple[Expr, ...]
    value: Expr
    mask: Var | None = None
    result: Var | None = None
    compare: Expr | None = None


@dataclass
class Print(Stmt):
    """``tl.device_print(text, values...)``: every lane prints."""

    text: str
    values: tuple[Expr, ...]


@dataclass
class Assert(Stmt):
    """``tl.device_assert(cond, message)``."""

    cond: Expr
    message: str


@dataclass
class Pipeline:
    """What the source states about a software pipeline, kept even where Triton collapses it."""

    stages: int | str  # a literal, or the name of a Constexpr argument (tunable)
    warp_specialize: bool | str = False  # or the name of a Constexpr the launcher sets
    roles: tuple[str, ...] = ()  # e.g. ("producer: wg == 0", "consumer: wg >= 1")
    events: tuple[str, ...] = ()  # events with their generation counters
    ring: int = 0  # slots of the stage ring the source declares (0: none)
    flatten: bool = False  # Triton fuses this loop with the loop nested in it into one pipeline


@dataclass
class For(Stmt):
    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: list[Stmt]
    pipeline: Pipeline | None = None
    carried: tuple[Var, ...] = ()  # variables assigned in the body and read after it
    unroll: bool = False  # ``tl.static_range``: bounds and step constants, the body copied once a step


@dataclass
class If(Stmt):
    cond: Expr
    then: list[Stmt]
    orelse: list[Stmt] = field(default_factory=list)


@dataclass
class While(Stmt):
    """``while cond: body`` (a ``while`` of the source, LANGUAGE.md 7.4): ``cond`` is a scalar
    ``i1`` variable defined before the loop and assigned again at the end of ``body``."""

    cond: Var
    body: list[Stmt]
    carried: tuple[Var, ...] = ()  # variables assigned in the body and read after it


@dataclass(frozen=True)
class Autotune:
    """The kernel is launched through ``triton.autotune``, which times ``configs`` at the first launch
    of each value of ``key`` (its integer scalar arguments) and keeps the fastest: each config gives
    launch parameters only (tunable constexprs such as ``GROUP_M`` and ``NUM_STAGES``, and
    ``num_warps``), so the launcher no longer passes them.  ``restore`` names the tensors the kernel
    writes, restored after each timed config; ``note`` says where the configs come from."""

    configs: tuple[tuple[tuple[str, int], ...], ...]
    key: tuple[str, ...]
    restore: tuple[str, ...]
    note: str = ""

    @property
    def names(self) -> frozenset[str]:
        """The launch parameters the configs set."""
        return frozenset(k for c in self.configs for k, _ in c)


@dataclass(frozen=True)
class Helper:
    """A ``@triton.jit`` function of the module that a kernel's expressions call (``Call(name,
    ...)``): a ``__device__`` helper of the source whose body is one value of its parameters
    (after the values it names, ``lets``)."""

    name: str
    params: tuple[Var, ...]
    body: Expr
    ctype: str  # the Croqtile type of its value
    doc: str = ""  # what it is in the source
    line: int = 0  # the .co line of its definition
    lets: tuple[tuple[Var, Expr], ...] = ()  # named values before ``body``, in order (``count_2 = ...``)


@dataclass
class Kernel:
    """One ``@triton.jit`` function and how it is launched."""

    name: str
    grid: tuple[Expr, ...]  # host expressions
    program_ids: tuple[Var, ...]  # tl.program_id(axis) per grid axis, in order
    args: list[Arg]
    body: list[Stmt]
    num_warps: int = 4
    # the warps chosen at launch instead: (a constexpr block extent, its lanes, elements a thread) ->
    # the power of two of warps that gives each thread about that many elements, 4 to 16
    warps_per: tuple[str, int, int] | tuple[str, int, int, int] | None = None  # (.., the fewest warps: 4)
    num_stages: int | None = None
    doc: str = ""
    line: int = 0  # the .co line of the parallel
    autotune: Autotune | None = None  # launch parameters chosen by triton.autotune (--emit-autotune)
    helpers: tuple[Helper, ...] = ()  # the module's @triton.jit functions its expressions call

    def arg(self, name: str) -> Arg:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(name)

    def on_host(self, x: Expr) -> Expr | None:
        """``x``, an expression of the kernel's scalar arguments, as the launcher computes it (each
        :class:`Scalar` by its ``host``); None where ``x`` reads anything else or is a tile."""
        scalars = {a.name: a.host for a in self.args if isinstance(a, Scalar)}
        names = {v.name for v in free_vars(x)}
        if x.shape or not names <= scalars.keys():
            return None
        return substitute(x, {n: scalars[n] for n in names})


def walk(stmts: list[Stmt]) -> list[Stmt]:
    """Every statement, nested bodies included, in program order."""
    out: list[Stmt] = []
    for s in stmts:
        out.append(s)
        if isinstance(s, (For, While)):
            out.extend(walk(s.body))
        elif isinstance(s, If):
            out.extend(walk(s.then))
            out.extend(walk(s.orelse))
    return out


def exprs_of(s: Stmt) -> list[Expr]:
    """The expressions a statement reads (not the variables it defines)."""
    if isinstance(s, (Let, Assign)):
        return [s.value]
    if isinstance(s, Load):
        return list(s.index) + ([s.mask] if s.mask is not None else [])
    if isinstance(s, Store):
        return [*s.index, s.value] + ([s.mask] if s.mask is not None else [])
    if isinstance(s, TmaLoad):
        return list(s.coords) + exprs_of(s.fallback)
    if isinstance(s, TmaStore):
        return list(s.coords) + [s.value] + exprs_of(s.fallback)
    if isinstance(s, Dot):
        return [s.a, s.b] + ([s.acc] if s.acc is not None else [])
    if isinstance(s, Atomic):
        extra = [x for x in (s.mask, s.compare) if x is not None]
        return [*s.index, s.value, *extra]
    if isinstance(s, Print):
        return list(s.values)
    if isinstance(s, Assert):
        return [s.cond]
    if isinstance(s, For):
        return [s.start, s.stop, s.step]
    if isinstance(s, (If, While)):
        return [s.cond]
    return []


def defines(s: Stmt) -> list[Var]:
    """The variables a statement defines."""
    if isinstance(s, (Let, Load, TmaLoad)):
        return [s.var]
    if isinstance(s, Dot):
        return [s.out]
    if isinstance(s, Atomic) and s.result is not None:
        return [s.result]
    if isinstance(s, For):
        return [s.var]
    return []


def map_loops(body: list[Stmt], f: Callable[[For], For]) -> list[Stmt]:
    """``body`` with ``f`` applied to every ``for`` loop, nested bodies included, innermost first
    (``f`` sees a loop whose own body is already mapped)."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, For):
            s = f(dataclasses.replace(s, body=map_loops(s.body, f)))
        elif isinstance(s, While):
            s = dataclasses.replace(s, body=map_loops(s.body, f))
        elif isinstance(s, If):
            s = dataclasses.replace(s, then=map_loops(s.then, f), orelse=map_loops(s.orelse, f))
        out.append(s)
    return out


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``, .. the first not in ``taken`` (added to it)."""
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def without_dead_lets(body: list[Stmt]) -> list[Stmt]:
    """``body`` without the lets nothing reads, repeated until none is left; lets only name
    values, so dropping one changes nothing."""
    while True:
        read = {v.name for s in walk(body) for e in exprs_of(s) for v in free_vars(e)}
        read |= {v.name for s in walk(body) if isinstance(s, (For, While)) for v in s.carried}
        read |= {s.var.name for s in walk(body) if isinstance(s, Assign)}  # re-bound later: defined here
        kept = _drop(body, read)
        if len(walk(kept)) == len(walk(body)):
            return kept
        body = kept


def without(body: list[Stmt], gone: Callable[[Stmt], bool]) -> list[Stmt]:
    """``body`` without the statements ``gone`` says, nested bodies included."""
    out: list[Stmt] = []
    for s in body:
        if gone(s):
            continue
        if isinstance(s, (For, While)):
            s = dataclasses.replace(s, body=without(s.body, gone))
        elif isinstance(s, If):
            s = dataclasses.replace(s, then=without(s.then, gone), orelse=without(s.orelse, gone))
        out.append(s)
    return out


def _drop(body: list[Stmt], read: set[str]) -> list[Stmt]:
    return without(body, lambda s: isinstance(s, Let) and s.var.name not in read)


def map_exprs(s: Stmt, f: Callable[[Expr], Expr]) -> Stmt:
    """``s`` with ``f`` applied to every expression it reads (nested bodies included); a mask, a
    variable, must map to a variable."""

    def var(v: Var | None) -> Var | None:
        if v is None:
            return None
        out = f(v)
        assert isinstance(out, Var), out
        return out

    if isinstance(s, (Let, Assign)):
        return dataclasses.replace(s, value=f(s.value))
    if isinstance(s, Load):
        return dataclasses.replace(s, index=tuple(f(x) for x in s.index), mask=var(s.mask))
    if isinstance(s, Store):
        return dataclasses.replace(s, index=tuple(f(x) for x in s.index), value=f(s.value), mask=var(s.mask))
    if isinstance(s, TmaLoad):
        fallback = map_exprs(s.fallback, f)
        return dataclasses.replace(s, coords=tuple(f(x) for x in s.coords), fallback=fallback)
    if isinstance(s, TmaStore):
        fallback = map_exprs(s.fallback, f)
        return dataclasses.replace(s, coords=tuple(f(x) for x in s.coords), value=f(s.value), fallback=fallback)
    if isinstance(s, Dot):
        return dataclasses.replace(s, a=f(s.a), b=f(s.b), acc=f(s.acc) if s.acc is not None else None)
    if isinstance(s, Atomic):
        compare = f(s.compare) if s.compare is not None else None
        return dataclasses.replace(
            s, index=tuple(f(x) for x in s.index), value=f(s.value), mask=var(s.mask), compare=compare
        )
    if isinstance(s, Print):
        return dataclasses.replace(s, values=tuple(f(x) for x in s.values))
    if isinstance(s, Assert):
        return dataclasses.replace(s, cond=f(s.cond))
    if isinstance(s, For):
        body = [map_exprs(x, f) for x in s.body]
        return dataclasses.replace(s, start=f(s.start), stop=f(s.stop), step=f(s.step), body=body)
    if isinstance(s, While):
        return dataclasses.replace(s, cond=var(s.cond), body=[map_exprs(x, f) for x in s.body])
    if isinstance(s, If):
        then = [map_exprs(x, f) for x in s.then]
        return dataclasses.replace(s, cond=f(s.cond), then=then, orelse=[map_exprs(x, f) for x in s.orelse])
    return s
