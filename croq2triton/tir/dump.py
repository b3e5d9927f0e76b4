"""The tile IR as text (``croq2triton translate --dump-ir``, golden IR dumps in the tests); the
launchers' host IR through tir/hostdump.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from . import expr as E
from . import host as H
from . import nodes as N
from .hostdump import dump_launcher
from .pyexpr import to_source


def _e(e: E.Expr) -> str:
    return to_source(e)


def _arg(a: N.Arg) -> str:
    if isinstance(a, N.Pointer):
        dims = ", ".join(_e(x) for x in a.extents)
        return f"{a.name}: ptr<{a.dtype}> to {a.tensor} [{dims}] strides ({', '.join(a.strides)})"
    if isinstance(a, N.Stride):
        return f"{a.name}: stride {a.tensor}[{a.dim}]"
    if isinstance(a, N.Scalar):
        return f"{a.name}: {a.dtype} = {to_source(a.host, 'host')}"
    if isinstance(a, N.Constexpr) and a.size is not None:
        return f"{a.name}: constexpr = next_power_of_2({to_source(a.size, 'host')})"
    if isinstance(a, N.Constexpr):
        return f"{a.name}: constexpr = {a.value}" + (" (tunable)" if a.tunable else "")
    if isinstance(a, N.Descriptor):
        return f"{a.name}: descriptor of {a.tensor} block {list(a.block)} padding {a.padding}"
    count = a.lanes if isinstance(a.lanes, int) else to_source(a.lanes, "kernel")
    lanes = f" (a copy for each of {count} lanes)" if not isinstance(a.lanes, int) or a.lanes > 1 else ""
    return f"{a.name}: scratch<{a.dtype}> {to_source(a.elements, 'host')} per program{lanes}"


def _access(base: str, index: tuple[E.Expr, ...], mask: E.Var | None) -> str:
    text = f"{base}[{', '.join(_e(i) for i in index)}]"
    return text + (f" mask {mask.name}" if mask is not None else "")


def _stmt(s: N.Stmt, depth: int, out: list[str]) -> None:
    pad = "  " * depth
    at = f"  @{s.line}" if s.line else ""
    if isinstance(s, N.Let):
        out.append(f"{pad}{s.var.name}: {s.var.type}{list(s.var.dims)} = {_e(s.value)}{at}")
    elif isinstance(s, N.Assign):
        out.append(f"{pad}{s.var.name} := {_e(s.value)}{at}")
    elif isinstance(s, N.Load):
        other = f" other {s.other}" if s.other is not None else ""
        nan = " (nan outside when sanitizing)" if s.nan_outside else ""
        out.append(f"{pad}{s.var.name} = load {_access(s.base, s.index, s.mask)}{other}{nan}{at}")
    elif isinstance(s, N.Store):
        out.append(f"{pad}store {_access(s.base, s.index, s.mask)} = {_e(s.value)}{at}")
    elif isinstance(s, N.TmaLoad):
        coords = ", ".join(_e(c) for c in s.coords)
        out.append(f"{pad}{s.var.name} = tma load {s.desc}[{coords}] if {s.flag}{at}")
        _stmt(s.fallback, depth + 1, out)
    elif isinstance(s, N.TmaStore):
        coords = ", ".join(_e(c) for c in s.coords)
        pieces = f" in {s.split} column pieces" if s.split > 1 else ""
        out.append(f"{pad}tma store {s.desc}[{coords}] = {_e(s.value)}{pieces} if {s.flag}{at}")
        _stmt(s.fallback, depth + 1, out)
    elif isinstance(s, N.Dot):
        acc = f" + {_e(s.acc)}" if s.acc is not None else ""
        a = f"trans({_e(s.a)})" if s.trans_a else _e(s.a)
        b = f"trans({_e(s.b)})" if s.trans_b else _e(s.b)
        how = "".join(f" {k} {v}" for k, v in (("precision", s.precision), ("out", s.out_dtype)) if v is not None)
        out.append(f"{pad}{s.out.name} = dot({a}, {b}){acc}{how}{at}")
    elif isinstance(s, N.Barrier):
        out.append(f"{pad}barrier{at}")
    elif isinstance(s, N.Atomic):
        res = f"{s.result.name} = " if s.result is not None else ""
        cmp = f"{_e(s.compare)}, " if s.compare is not None else ""
        out.append(f"{pad}{res}atomic {s.op} {_access(s.base, s.index, s.mask)}, {cmp}{_e(s.value)}{at}")
    elif isinstance(s, N.Print):
        out.append(f"{pad}print {s.text!r}{''.join(', ' + _e(v) for v in s.values)}{at}")
    elif isinstance(s, N.Assert):
        out.append(f"{pad}assert {_e(s.cond)}, {s.message!r}{at}")
    elif isinstance(s, N.For):
        pipe = ""
        if s.pipeline is not None:
            p = s.pipeline
            stated = "".join(f", {k}=[{'; '.join(v)}]" for k, v in (("roles", p.roles), ("events", p.events)) if v)
            fused = ", flatten" if p.flatten else ""
            pipe = f" pipeline(stages={p.stages}, ring={p.ring}, warp_specialize={p.warp_specialize}{fused}{stated})"
        out.append(f"{pad}for {s.var.name} in [{_e(s.start)}, {_e(s.stop)}) step {_e(s.step)}{pipe}{at}")
        for x in s.body:
            _stmt(x, depth + 1, out)
    elif isinstance(s, N.While):
        out.append(f"{pad}while {_e(s.cond)}{at}")
        for x in s.body:
            _stmt(x, depth + 1, out)
    elif isinstance(s, N.If):
        out.append(f"{pad}if {_e(s.cond)}{at}")
        for x in s.then:
            _stmt(x, depth + 1, out)
        if s.orelse:
            out.append(f"{pad}else")
            for x in s.orelse:
                _stmt(x, depth + 1, out)


def dump(kernel: N.Kernel) -> str:
    grid = ", ".join(to_source(g, "host") for g in kernel.grid)
    out = [
        f"kernel {kernel.name} grid ({grid}) num_warps {kernel.num_warps}"
        + (f"  @{kernel.line}" if kernel.line else "")
    ]
    out.extend(f"  arg {_arg(a)}" for a in kernel.args)
    out.extend(f"  {v.name} = program_id({i})" for i, v in enumerate(kernel.program_ids))
    for s in kernel.body:
        _stmt(s, 1, out)
    return "\n".join(out) + "\n"


def dump_functions(
    ir: Mapping[str, Sequence[N.Kernel]],
    launchers: Mapping[str, H.Launcher],
) -> str:
    """The IR of every function's kernels (``translate --dump-ir``), then its launcher in the host IR."""
    out: list[str] = []
    for fn, kernels in ir.items():
        out += [f"# {fn}\n{dump(k)}" for k in kernels]
        if fn in launchers:
            out.append(f"# {fn}: the launcher\n{dump_launcher(launchers[fn])}")
    return "".join(out)
