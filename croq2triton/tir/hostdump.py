"""The host IR as text (``croq2triton translate --dump-ir``, golden IR dumps in the tests).

Expressions are spelled as the launcher computes them; ``@N`` is the ``.co`` line of a statement.
"""

from __future__ import annotations

from . import expr as E
from . import host as H
from .pyexpr import host_source


def _e(e: E.Expr) -> str:
    return host_source(e)


def _es(items: tuple[E.Expr, ...]) -> str:
    return ", ".join(_e(x) for x in items)


def _at(line: int) -> str:
    return f"  @{line}" if line else ""


def _named(var: str, name: str) -> str:
    """A parameter's launcher variable, with its Croqtile name where that is another."""
    return var if var == name else f"{var} ({name!r})"


def _dim(d: H.DimCheck) -> str:
    if isinstance(d, H.BindDim):
        return d.symbol if d.var == d.symbol else f"{d.symbol} as {d.var}"
    if isinstance(d, H.AnyDim):
        return f"? as {d.var}"
    return str(d.extent)


def _item(x: H.PrintItem) -> str:
    if isinstance(x, str):
        return repr(x)
    if isinstance(x, H.Braced):
        return "{" + _es(x.items) + "}"
    return _e(x)


def _returned(v: E.Expr | H.TensorRef | H.Reshape | None) -> str:
    if v is None:
        return "None"
    if isinstance(v, H.TensorRef):
        return f"tensor {v.var}"
    if isinstance(v, H.Reshape):
        return f"tensor {v.var} as [{_es(v.dims)}]"
    return _e(v)


def _prepare(p: H.Preparation) -> str:
    if isinstance(p, H.NumSms):
        return f"{p.var} = number of SMs"
    if isinstance(p, H.TmaCheck):
        window = f" over [{_es(p.window)}]" if p.window else ""
        return f"{p.flag} = {p.tensor} ({p.source!r}) meets TMA's rules for {p.what} of boxes {list(p.box)}{window}"
    if isinstance(p, H.TmaDescriptor):
        return f"{p.var} = descriptor of {p.tensor} box {list(p.box)} if {p.flag}, fill {p.fill}"
    if isinstance(p, H.ScratchArea):
        zeroed = ", not zeroed (the kernel writes each before it reads it)" if p.written else ""
        return f"{p.var} = scratch<{p.dtype}> of {_e(p.elements)} elements{zeroed}"
    fixed = f" times {p.fixed} fixed" if p.fixed > 1 else ""
    return f"{', '.join(p.vars)} = block extents of {p.what}: next powers of 2 of ({_es(p.sizes)}){fixed}"


def _arg(a: H.LaunchArg) -> str:
    if isinstance(a, (H.TensorArg, H.DescriptorArg, H.ScratchArg)):
        return a.var
    if isinstance(a, H.StrideArg):
        return f"{a.tensor}.stride({a.dim})"
    return _e(a.value)


def _stmt(s: H.Stmt, depth: int, out: list[str]) -> None:
    pad = "  " * depth
    at = _at(s.line)
    if isinstance(s, H.BindTensor):
        how = "".join((" global" if s.is_global else "", " (the caller's copied back)" if s.keep_caller else ""))
        how += "" if s.move else " (checked, not moved)"
        out.append(f"{pad}tensor {_named(s.var, s.name)}: {s.dtype} [{', '.join(_dim(d) for d in s.dims)}]{how}{at}")
    elif isinstance(s, H.BindScalar):
        out.append(f"{pad}scalar {_named(s.var, s.name)}: {s.kind}{at}")
    elif isinstance(s, H.BindStream):
        out.append(f"{pad}stream {s.var}{at}")
    elif isinstance(s, H.Let):
        out.append(f"{pad}{s.var} = {_e(s.value)}{at}")
    elif isinstance(s, H.Assign):
        out.append(f"{pad}{s.var} := {_e(s.value)}{at}")
    elif isinstance(s, H.Alloc):
        fill = f" fill {_e(s.fill)}" if s.fill is not None else " unfilled" if s.empty else ""
        out.append(f"{pad}{s.var} = alloc {s.dtype} [{_es(s.shape)}]{fill}{at}")
    elif isinstance(s, H.SpanAs):
        out.append(f"{pad}{s.var} = {s.host} as [{_es(s.shape)}]{at}")
    elif isinstance(s, H.Window):
        drop = f" dropping ({', '.join(map(str, s.drop))})" if s.drop else ""
        out.append(f"{pad}{s.var} = {s.host} from [{_es(s.origin)}] by [{_es(s.shape)}]{drop}{at}")
    elif isinstance(s, H.Strided):
        out.append(f"{pad}{s.var} = {s.host} from {_e(s.offset)} by [{_es(s.shape)}] strides [{_es(s.strides)}]{at}")
    elif isinstance(s, H.HostCopy):
        perm = f" permuted ({', '.join(map(str, s.perm))})" if s.perm is not None else ""
        into = f"copy into {s.dst}" if s.dst_name is not None else f"{s.dst} = copy"
        out.append(f"{pad}{into} {s.src}{perm}{at}")
    elif isinstance(s, H.HostPad):
        into = f"pad into {s.dst}" if s.dst_name is not None else f"{s.dst} = pad"
        borders = f"low [{_es(s.lo)}] high [{_es(s.hi)}] interior [{_es(s.mid)}] value {_e(s.value)}"
        out.append(f"{pad}{into} {s.src} {borders}{at}")
    elif isinstance(s, H.ElemSet):
        out.append(f"{pad}{s.host}[{_es(s.index)}] := {_e(s.value)}{at}")
    elif isinstance(s, H.Assert):
        out.append(f"{pad}assert {_e(s.cond)}, {s.message!r}{at}")
    elif isinstance(s, H.Print):
        end = " (newline)" if s.newline else ""
        out.append(f"{pad}print {', '.join(_item(x) for x in s.items)}{end}{at}")
    elif isinstance(s, H.Sync):
        out.append(f"{pad}sync{at}")
    elif isinstance(s, H.Comment):
        out.append(f"{pad}# {s.text}")
    elif isinstance(s, H.If):
        note = f"  # {s.note}" if s.note else ""
        out.append(f"{pad}if {_e(s.cond)}{note}{at}")
        _body(s.then, depth + 1, out)
        if s.orelse:
            out.append(f"{pad}else{_at(s.else_line)}")
            _body(s.orelse, depth + 1, out)
    elif isinstance(s, H.While):
        out.append(f"{pad}while {_e(s.cond)}{at}")
        _body(s.body, depth + 1, out)
    elif isinstance(s, H.For):
        out.append(f"{pad}for {s.var} in [0, {_e(s.stop)}){at}")
        _body(s.body, depth + 1, out)
    elif isinstance(s, (H.Break, H.Continue)):
        out.append(f"{pad}{type(s).__name__.lower()}{at}")
    elif isinstance(s, H.CopyBack):
        out.append(f"{pad}copy {s.device} back to {s.caller}{at}")
    elif isinstance(s, H.Return):
        out.append(f"{pad}return {_returned(s.value)}{at}")
    elif isinstance(s, H.CallTuned):
        out.append(f"{pad}return the launcher tuned nearest ({_es(s.values)}) of{at}")
        for c in s.choices:
            sizes = ", ".join(f"({', '.join(map(str, sz))})" for sz in c.sizes)
            out.append(f"{pad}  {c.launcher} at {sizes}: {c.point}")
        out.append(f"{pad}  args [{', '.join(s.args)}]")
    elif isinstance(s, H.Launch):
        out.append(f"{pad}launch {s.kernel} grid ({_es(s.grid)}){at}")
        out.extend(f"{pad}  prepare {_prepare(p)}" for p in s.prepare)
        out.append(f"{pad}  args [{', '.join(_arg(a) for a in s.args)}]")
        out.append(f"{pad}  constexprs {', '.join(f'{k}={_e(v)}' for k, v in s.constexprs)}")
    else:
        raise TypeError(f"no dump for the host statement {type(s).__name__}")


def _body(stmts: tuple[H.Stmt, ...], depth: int, out: list[str]) -> None:
    for s in stmts:
        _stmt(s, depth, out)


def dump_launcher(launcher: H.Launcher) -> str:
    sig = launcher.signature
    kinds = ", ".join(f"{n}: {k}" for n, k in sig.params)
    writes = f" writes {', '.join(sig.writes)}" if sig.writes else ""
    out = [f"launcher {launcher.python_name}({kinds}) -> {sig.returns}{writes}  @{launcher.line}"]
    _body(launcher.body, 1, out)
    return "\n".join(out) + "\n"
