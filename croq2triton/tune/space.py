"""The tuning space of one ``__co__`` function: its parameters, the values each may take, the points.

A parameter is either one of the source's own ``#define`` values that the function's code depends on
(``WARP_N``; a point sets it as a *forced* define, which wins over the file's own unguarded
``#define``) or a field of the :class:`~croq2triton.schedule.schedule.Schedule` (a contraction) or
:class:`~croq2triton.schedule.schedule.TileSchedule` (a tile kernel) a kernel runs under
(``matmul_k0.block_n``, or ``block_n`` when one kernel of the function has that field).

Values on the command line: ``64,128,256``; ``64..256:8`` (from 64 to 256 in steps of 8);
``1..4`` (steps of 1); ``16..256:*2`` (doubling); ``true,false``; factors of a tile kernel as
``1x2,2x2``.  Without ``--param`` the default space of each kernel kind is swept (the ``default``
of each field below); with ``--param`` only the named parameters vary and every other keeps what
the schedule picks.  Adding a schedule field to the space is one line in ``CONTRACTION_FIELDS`` or
``TILE_FIELDS``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ..errors import CroqError
from ..frontend import ast as A
from ..options import Point, Value
from ..schedule.schedule import Schedule, TileSchedule
from ..tir.contract import Contraction

Kind = Literal["int", "bool", "factors", "text"]

BYTES = {"f8_e4m3": 1, "f8_e5m2": 1, "s8": 1, "f16": 2, "bf16": 2, "f32": 4, "tf32": 4}


def _width(c: Contraction | None) -> int:
    if c is None:
        return 2
    return max(BYTES.get(c.a.elem, 2), BYTES.get(c.b.elem, 2))


Defaults = Callable[[Any, Contraction | None], tuple[Value, ...]] | None


@dataclass(frozen=True)
class FieldSpec:
    """A schedule field as a tuning parameter: its kind, the values it may take (text), what it
    changes, and the values the default space sweeps (None: not swept unless named)."""

    kind: Kind
    takes: str
    changes: str
    default: Defaults = None


# The default space of a contraction: 3 x 3 x 3 x 4 x 2 x 2 x 3 = 1296 points before pruning (the shared
# memory and register limits rule out about a third for 16-bit operands).
CONTRACTION_FIELDS: dict[str, FieldSpec] = {
    "block_m": FieldSpec("int", "a multiple of 16", "rows of the output tile one program computes",
                         lambda s, c: (64, 128, 256)),
    "block_n": FieldSpec("int", "a multiple of 16 (pieces of powers of two)", "columns of the output tile",
                         lambda s, c: (64, 128, 256)),
    "block_k": FieldSpec("int", "a power of two, at least 16", "the K step of the pipelined loop",
                         lambda s, c: {1: (64, 128, 256), 2: (32, 64, 128), 4: (16, 32, 64)}[_width(c)]),
    "num_stages": FieldSpec("int", "at least 1", "buffers of the software pipeline (shared memory)",
                            lambda s, c: (2, 3, 4, 5)),
    "num_warps": FieldSpec("int", "1, 2, 4, 8 or 16", "warps of a program", lambda s, c: (4, 8)),
    "group_m": FieldSpec("int", "at least 1", "row tiles of a program group (L2 reuse of B)"),
    "persistent": FieldSpec("bool", "true or false", "one program per SM walking the tiles, or one per tile",
                            lambda s, c: (True, False)),
    "tma": FieldSpec("bool", "true or false", "operands read through TMA descriptors (else masked loads)"),
    "tma_store": FieldSpec("bool", "true or false", "the epilogue as TMA boxes (else one masked store)"),
    "warp_specialize": FieldSpec("bool", "true or false", "ask Triton for warp specialization"),
    "flatten": FieldSpec("bool", "true or false",
                         "a persistent grid's tile loop and K loop fused into one pipeline (the next tile's "
                         "loads overlap this tile's epilogue)"),
    "split_k": FieldSpec("int", "1 (no split) to 64; 0: as the auto policy picks at launch",
                         "programs sharing each output tile's K loop (partial sums added by a second kernel)",
                         lambda s, c: (1, 2, 4)),
}  # fmt: skip


def _factor_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    axes = len(s.factors)
    choices = [(1, 2, 4, 8)] * min(axes, 2) + [(1,)] * max(0, axes - 2)
    return tuple(f for f in itertools.product(*choices) if _product(f) <= 16)


def _fold_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    return () if s.fold == 0 else (-1, 8, 32, 128, 512, 2048)


def _loop_split_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    return () if s.loop_split is None else (1, 2, 4, 8, 16, 32, 64)


def _combine_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    return () if s.combine_last is None else (True, False)


def _coarsen_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    return () if s.coarsen is None else (1, 2, 4, 8)


def _deviations_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    return () if s.deviations is None else (True, False)


def _load_stage_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    return () if s.num_stages is None else (1, 3)


def _rows_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    return () if s.rows is None else (0, 1, 2, 4, 8)


def _segment_rows_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    return () if s.segment_rows is None else (0, -1, 8, 32, 128)


def _serial_defaults(s: TileSchedule, c: Contraction | None) -> tuple[Value, ...]:
    if s.serial is None:
        return ()
    axes = len(s.factors)
    ones = (1,) * axes
    return (ones, *((*ones[:a], f, *ones[a + 1 :]) for a in range(min(axes, 2)) for f in (2, 4, 8, 16)))


# The default space of a tile kernel: widening factors (each of the first two grid axes 1..8, at
# most 16 blocks a program) x 2, 4, 8 warps; where the kernel's lanes loop over rows, the block each
# loop folds an iteration (x 6) and, where that loop splits across programs, how many (x 7) and who
# combines the partial folds (x 2: the last of their programs, or a second kernel); where a loop
# loads a tile and folds it, its iterations a step (x 4); where
# a loop only reads memory, plain or pipelined in 3 stages (x 2); where an atomic of the kernel would
# add once for several blocks, 1 to 16 blocks of one axis one after the other (x 9); where its lanes walk
# segments of their own, one segment a program, the forms before R a program was one, or 8, 32, 128 (x 5).
TILE_FIELDS: dict[str, FieldSpec] = {
    "factors": FieldSpec("factors", "a power of two per grid axis (1x2)", "consecutive blocks one program owns",
                         _factor_defaults),
    "num_warps": FieldSpec("int", "1, 2, 4, 8 or 16", "warps of a program", lambda s, c: (2, 4, 8)),
    "fold": FieldSpec("int", "-1 (each loop whole) or a power of two",
                      "elements of each lane's loop one step folds into a tile (schedule/foldloops.py)",
                      _fold_defaults),
    "loop_split": FieldSpec("int", "0 (the launcher picks for the SMs), 1 (not split) to 1024",
                            "programs each lane's folded loop is split across (schedule/splitloop.py)",
                            _loop_split_defaults),
    "combine_last": FieldSpec("bool", "true or false",
                              "a split loop's partial folds combined by the last of their programs (one launch), "
                              "or by a second kernel (schedule/lastcombine.py)", _combine_defaults),
    "coarsen": FieldSpec("int", "0 (the policy picks: 8 KB a step), 1 (as written) or a power of two to 64",
                         "iterations of a loop that loads a tile and folds it, one wider tile a step "
                         "(schedule/coarsen.py)", _coarsen_defaults),
    "deviations": FieldSpec("bool", "true or false",
                            "squared deviations from an earlier loop's result folded in that loop's pass by "
                            "Welford's update (schedule/moments.py), or a pass of their own", _deviations_defaults),
    "num_stages": FieldSpec("int", "1 (not pipelined) to 8",
                            "stages of the software pipeline of loops that only read memory (schedule/loadstages.py)",
                            _load_stage_defaults),
    "rows": FieldSpec("int", "0 (one row a program past 8 KB rows) or the rows a program (a divisor of the block's)",
                      "rows of a block of independent rows one program runs (lift/narrow.py)", _rows_defaults),
    "segment_rows": FieldSpec("int", "0 (one a program), -1 (the forms before R, at launch) or a power of two to the lanes",
                              "segments of their own (CSR rows) one program sums, an [R, fold] tile a step "
                              "(schedule/schedule.py)", _segment_rows_defaults),
    "serial": FieldSpec("factors", "a factor per grid axis, 1 to 64 (4x1)",
                        "consecutive blocks one program runs one after the other, their atomics added once"
                        " (schedule/serial.py)", _serial_defaults),
}  # fmt: skip


def _product(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


@dataclass(frozen=True)
class Parameter:
    """One parameter of the space: ``name`` as the command line writes it, where it lives (a define,
    or ``field`` of ``kernel``), its current value and the values swept (``values``; empty: it keeps
    the current one)."""

    name: str
    kind: Literal["define", "field"]
    type: Kind
    current: Value
    takes: str
    changes: str
    kernel: str | None = None
    field: str | None = None
    values: tuple[Value, ...] = ()

    def show(self, v: Value) -> str:
        return show_value(v)


def show_value(v: Value) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, tuple):
        return "x".join(str(x) for x in v)
    return str(v)


# ------------------------------------------------------------------ the source's own defines
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*?)\s*(?://.*)?$")
_IFNDEF = re.compile(r"^[ \t]*#[ \t]*ifndef[ \t]+([A-Za-z_]\w*)")
_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Define:
    name: str
    value: str
    line: int
    guarded: bool  # inside #ifndef NAME: -D chooses it even without a tuning point


def file_defines(text: str) -> dict[str, Define]:
    """The object-like ``#define``\\ s of a file (the first of each name)."""
    out: dict[str, Define] = {}
    guard: str | None = None
    for i, line in enumerate(text.splitlines(), 1):
        g = _IFNDEF.match(line)
        if g:
            guard = g.group(1)
            continue
        m = _DEFINE.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = Define(m.group(1), m.group(2).strip() or "1", i, guard == m.group(1))
        if line.strip():
            guard = None
    return out


def used_defines(text: str, fn: A.CoFunction, defines: dict[str, Define]) -> dict[str, list[int]]:
    """The defines the function's text uses (directly, or through another define's value), each
    with the lines of the function that name it (empty: used through another define)."""
    span = fn.span
    if span is None:
        return {}
    lines = text.splitlines()
    first, last = span.line, max(span.end_line, span.line)
    uses: dict[str, list[int]] = {}
    for n in range(first, min(last, len(lines)) + 1):
        code = lines[n - 1].split("//", 1)[0]
        if _DEFINE.match(code):
            continue
        for w in _IDENT.findall(code):
            if w in defines:
                uses.setdefault(w, [])
                if n not in uses[w]:
                    uses[w].append(n)
    todo = list(uses)
    while todo:  # defines named in the values of used defines
        d = defines[todo.pop()]
        for w in _IDENT.findall(d.value):
            if w in defines and w not in uses:
                uses[w] = []
                todo.append(w)
    return dict(sorted(uses.items(), key=lambda kv: defines[kv[0]].line))


def _is_int(text: str) -> bool:
    try:
        int(text, 0)
        return True
    except ValueError:
        return False


# ------------------------------------------------------------------ the parameters of a function
def parameters(
    text: str,
    fn: A.CoFunction,
    schedules: dict[str, Schedule | TileSchedule],
    contractions: dict[str, Contraction],
    given: dict[str, str] | None = None,
) -> list[Parameter]:
    """Every parameter of ``fn``: the defines its code depends on (their current value: ``-D`` where
    given, else the file's), then each kernel's schedule fields (their current value: what the
    schedule picks), each with the values of the default space."""
    defs = file_defines(text)
    out: list[Parameter] = []
    for name, lines in used_defines(text, fn, defs).items():
        d = defs[name]
        value = (given or {}).get(name, d.value)
        where = f"at line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}" if lines else "in other defines"
        guard = "guarded by #ifndef" if d.guarded else "not guarded: a point's value wins over it"
        out.append(
            Parameter(
                name,
                "define",
                "int" if _is_int(value) else "text",
                int(value, 0) if _is_int(value) else value,
                "a value as -D gives it" + (" (an integer)" if _is_int(value) else ""),
                f"#define at line {d.line} ({guard}); used by {fn.name} {where}",
            )
        )
    counts: dict[str, int] = {}
    for s in schedules.values():
        for f in _spec_table(s):
            counts[f] = counts.get(f, 0) + 1
    for kernel, s in schedules.items():
        c = contractions.get(kernel)
        table = _spec_table(s)
        kind = "contraction" if isinstance(s, Schedule) else "tile kernel"
        for f, spec in table.items():
            current = getattr(s, f)
            values = spec.default(s, c) if spec.default is not None else ()
            out.append(
                Parameter(
                    f"{kernel}.{f}",
                    "field",
                    spec.kind,
                    current,
                    spec.takes,
                    f"{spec.changes} ({kind} {kernel}, {s.origin} schedule)",
                    kernel,
                    f,
                    tuple(values),
                )
            )
    return out


def _spec_table(s: Schedule | TileSchedule) -> dict[str, FieldSpec]:
    table = CONTRACTION_FIELDS if isinstance(s, Schedule) else TILE_FIELDS
    known = {f.name for f in fields(s)}
    if isinstance(s, TileSchedule):  # a kernel whose lanes loop over rows folds them; some split the loop
        known -= {"fold"} if s.fold == 0 else set()
        known -= {"loop_split"} if s.loop_split is None else set()
        known -= {"combine_last"} if s.combine_last is None else set()
        known -= {"coarsen"} if s.coarsen is None else set()
        known -= {"deviations"} if s.deviations is None else set()
        known -= {"num_stages"} if s.num_stages is None else set()
        known -= {"rows"} if s.rows is None else set()
        known -= {"serial"} if s.serial is None else set()
        known -= {"segment_rows"} if s.segment_rows is None else set()
    return {k: v for k, v in table.items() if k in known}


def resolve(name: str, params: Sequence[Parameter]) -> Parameter:
    """The parameter ``name`` names: a define, ``kernel.field``, or a field one kernel has."""
    exact = [p for p in params if p.name == name]
    if exact:
        return exact[0]
    short = [p for p in params if p.kind == "field" and p.field == name]
    if len(short) == 1:
        return short[0]
    if len(short) > 1:
        raise CroqError(
            f"--param {name}: several kernels have this field ({', '.join(p.name for p in short)})",
            hint="name the kernel: --param " + short[0].name + "=...",
        )
    raise CroqError(
        f"--param {name}: no such parameter",
        hint="its parameters (croq2triton tune --list): " + ", ".join(p.name for p in params),
    )


def parse_values(text: str, kind: Kind, what: str) -> tuple[Value, ...]:
    """``64,128,256`` / ``64..256:8`` / ``1..4`` / ``16..256:*2`` / ``true,false`` / ``1x2,2x2``."""
    out: list[Value] = []
    bad = CroqError(
        f"bad values '{text}' for {what}",
        hint="write a list (64,128,256), a range (64..256:8, 1..4, 16..256:*2), true,false, or factors (1x2,2x2)",
    )
    for item in (t.strip() for t in text.split(",")):
        if not item:
            raise bad
        if kind == "text":
            out.append(item)
        elif kind == "bool":
            low = item.lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise bad
            out.append(low in ("true", "1", "yes"))
        elif kind == "factors":
            parts = item.lower().split("x")
            if not all(p.strip().isdigit() for p in parts):
                raise bad
            out.append(tuple(int(p) for p in parts))
        else:
            out.extend(_int_items(item, bad))
    unique: list[Value] = []
    for v in out:
        if v not in unique:
            unique.append(v)
    return tuple(unique)


_RANGE = re.compile(r"^(-?\d+)\s*\.\.\s*(-?\d+)(?:\s*:\s*(\*?)\s*(\d+))?$")


def _int_items(item: str, bad: CroqError) -> Iterator[int]:
    m = _RANGE.match(item)
    if m is None:
        try:
            yield int(item, 0)
        except ValueError:
            raise bad from None
        return
    lo, hi, times, step = int(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4) or 1)
    if hi < lo or step < 1 or (times and (step < 2 or lo < 1)):
        raise bad
    v = lo
    count = 0
    while v <= hi:
        yield v
        v = v * step if times else v + step
        count += 1
        if count > 100_000:
            raise bad


# ------------------------------------------------------------------ the space
@dataclass
class Space:
    """The parameters of one function and the values swept: the points are their product."""

    func: str
    parameters: list[Parameter]
    swept: list[Parameter] = field(default_factory=list)

    def size(self) -> int:
        return _product([len(p.values) for p in self.swept]) if self.swept else 1

    def point(self, values: dict[str, Value]) -> Point:
        """The point giving each swept parameter (by name) its value in ``values``."""
        defines: dict[str, object] = {}
        kernels: dict[str, dict[str, Any]] = {}
        for p in self.swept:
            v = values[p.name]
            if p.kind == "define":
                defines[p.name] = v
            else:
                assert p.kernel is not None and p.field is not None
                kernels.setdefault(p.kernel, {})[p.field] = v
        return Point.of(defines, kernels)

    def points(self) -> Iterator[Point]:
        names = [p.name for p in self.swept]
        for combo in itertools.product(*[p.values for p in self.swept]):
            yield self.point(dict(zip(names, combo)))

    def seed(self) -> Point:
        """The point of the current values: what the schedule (and the file) pick, untuned."""
        return self.point({p.name: p.current for p in self.swept})

    def values_of(self, point: Point) -> dict[str, Value]:
        """Each swept parameter's value at ``point``."""
        defines = dict(point.defines)
        out: dict[str, Value] = {}
        for p in self.swept:
            if p.kind == "define":
                raw = defines.get(p.name, p.current)
                out[p.name] = int(raw) if p.type == "int" and _is_int(str(raw)) else raw
            else:
                assert p.kernel is not None and p.field is not None
                out[p.name] = point.overrides(p.kernel).get(p.field, p.current)
        return out


def build_space(func: str, params: list[Parameter], specs: Sequence[str] | None) -> Space:
    """The space of ``--param NAME=VALUES`` items (none: the default space of every kernel)."""
    if not specs:
        swept = [p for p in params if p.kind == "field" and p.values]
        return Space(func, params, swept)
    chosen: dict[str, Parameter] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise CroqError(f"bad --param '{spec}'", hint="write --param NAME=VALUES, e.g. --param block_n=64,128,256")
        p = resolve(name.strip(), params)
        values = parse_values(text, p.type, p.name)
        if p.type == "int":
            values = tuple(int(v) for v in values)  # type: ignore[arg-type]
        chosen[p.name] = _with_values(p, values)
    return Space(func, params, list(chosen.values()))


def _with_values(p: Parameter, values: tuple[Value, ...]) -> Parameter:
    from dataclasses import replace

    return replace(p, values=values)


def list_text(func: str, params: Sequence[Parameter], space: Space | None = None) -> str:
    """``tune --list``: every parameter, its current value, what it may take, what it changes and
    the values the default space (or ``--param``) sweeps."""
    swept = {p.name: p for p in (space.swept if space is not None else [])}
    rows = [("parameter", "current", "takes", "swept", "changes")]
    for p in params:
        s = swept.get(p.name)
        values = s.values if s is not None else ()
        shown = ",".join(show_value(v) for v in values) if values else "-"
        if len(shown) > 40:
            shown = shown[:37] + "..."
        rows.append((p.name, show_value(p.current), p.takes, shown, p.changes))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [f"{func}: {len(params)} parameters"]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4])
    if space is not None:
        lines.append(f"space: {space.size()} points ({' x '.join(str(len(p.values)) for p in space.swept) or '1'})")
    return "\n".join(lines)
