"""The host IR as Python: one launcher function per ``__co__`` function (tir/host.py -> text).

Each statement is built as Python ``ast`` nodes (expressions through :func:`~..tir.pyexpr.host_ast`)
and unparsed onto one line; compound statements indent their bodies.  A statement from a ``.co``
line carries a ``# file.co:line`` comment, once per run of lines from the same ``.co`` line (again
after a block ends).  The launcher's names: ``_F`` (what the runtime's messages name: the function, its ``.co`` file
``_CO_FILE`` (a name the module defines) and where each parameter is declared), ``_dev``
(the kernels' device), ``_dims`` (the sizes bound so far), ``_launch`` (how kernels are launched:
``runtime.launch.launch`` unless the caller passes another), ``_rt`` (the runtime module).
"""

from __future__ import annotations

import ast
import dataclasses

from ..sema.carith import RUNTIME_NAME
from ..tir import expr as E
from ..tir import host as H
from ..tir.hostc import host_scalars
from ..tir.pyexpr import call, host_ast, host_source, name

TORCH_TYPES = {
    "f64": "float64",
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f8e4": "float8_e4m3fn",
    "f8e5": "float8_e5m2",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "u64": "uint64",
    "u32": "uint32",
    "u16": "uint16",
    "u8": "uint8",
    "i1": "bool",
}


def emit_launcher(launcher: H.Launcher) -> str:
    """The text of ``def name(...)`` for ``launcher``, after the statement that builds its ``_F``
    (once, as the module is imported)."""
    out = _Writer(launcher.source, host_scalars(launcher.body))
    fn = [_const(launcher.name), name("_CO_FILE"), _const(launcher.line)]
    if launcher.places:  # {parameter: (line, col, end)}: where the runtime's messages about it point
        places = [_tuple([_const(p.line), _const(p.col), _const(p.end)]) for p in launcher.places]
        fn.append(ast.Dict([_const(p.name) for p in launcher.places], places))
    key = _const(launcher.python_name)
    built = _code(ast.Assign([ast.Subscript(name("_FN"), key, ast.Store())], call("_rt.Fn", *fn)))
    out.line(_code(_assign("_F", ast.Subscript(name("_FN"), key, ast.Load()))))
    out.line("_launch = _launch or _rt.launch")
    binds = _leading_binds(launcher.body)
    rest = launcher.body[len(binds) :]
    guard = _one_test(binds)
    if guard is None:
        _checks(out, launcher, binds)
    else:
        at = binds[0].line
        for b in binds:
            if isinstance(b, H.BindTensor) and b.keep_caller:
                out.line(_code(_assign(f"{b.var}_caller", name(b.var))), at)
        scalars = [b for b in binds if isinstance(b, H.BindScalar)]
        out.comment(
            "the arguments as declared (plain tensors of the declared dtypes and ranks, on the kernels' device, "
            "sizes that agree) pass one test; any others are checked one by one, which says what is wrong"
        )
        if scalars:
            out.line(f"if {guard}:", at)
            out.depth += 1
            out.body(tuple(scalars))
            out.depth -= 1
            out.last = 0
            out.line("else:")
        else:
            out.line(f"if not ({guard}):", at)
        out.depth += 1
        _checks(out, launcher, binds, callers=False)
        out.depth -= 1
        out.last = 0
    out.body(rest)
    params = ", ".join([*launcher.params, "*, _launch=None"])
    head = f'{built}\n\n\n@_rt.launcher\ndef {launcher.python_name}({params}):\n    """{launcher.doc}"""'
    return head + "\n" + "\n".join(out.lines)


_BINDS = (H.BindTensor, H.BindScalar, H.BindStream)


def _leading_binds(body: tuple[H.Stmt, ...]) -> tuple[H.Stmt, ...]:
    """The statements that bind the launcher's parameters (they come first)."""
    n = 0
    while n < len(body) and isinstance(body[n], _BINDS):
        n += 1
    return body[:n]


def _checks(out: _Writer, launcher: H.Launcher, binds: tuple[H.Stmt, ...], callers: bool = True) -> None:
    """The parameters checked one by one: the kernels' device, then each parameter in order, its
    sizes bound (the first of a size binds it, the others must agree)."""
    devices = ast.Dict([_const(t) for t in launcher.tensors], [name(t) for t in launcher.tensors])
    out.line(_code(_assign("_dev", call("_rt.pick_device", name("_F"), devices, name("_launch")))))
    out.line("_dims = {}")
    for b in binds:
        if isinstance(b, H.BindTensor) and not callers and b.keep_caller:
            b = dataclasses.replace(b, keep_caller=False)  # (the caller's tensor is kept above)
        out.stmt(b)


def _one_test(binds: tuple[H.Stmt, ...]) -> str | None:
    """The launcher's test of all its tensor parameters at once, as one expression that binds their
    sizes and ``_dev`` (``runtime.launch.device_of``: the first tensor's device, where it is a plain
    tensor on the kernels' type of device): true exactly where the checks one by one
    (``tensor_arg``, ``bind_dim``, ``any_dim``, ``fixed_dim``) would pass with these values and leave
    every tensor where it is (a plain tensor cannot have negative strides: torch refuses them).
    None where the launcher has no tensor parameter, or where a size's name is also another
    parameter's (the checks one by one then bind it in their order)."""
    tensors = [b for b in binds if isinstance(b, H.BindTensor)]
    if not tensors:
        return None
    params = {b.var for b in binds if isinstance(b, (H.BindTensor, H.BindScalar, H.BindStream))}
    bound: set[str] = set()
    terms: list[str] = []
    for i, t in enumerate(tensors):
        if i == 0:
            terms.append(f"(_dev := _rt.device_of(_F, {t.var})) is not None")
        else:
            terms += [f"type({t.var}) in _rt.PLAIN", f"{t.var}.device == _dev"]
        terms += [f"{t.var}.dtype is torch.{TORCH_TYPES[t.dtype]}", f"{t.var}.dim() == {len(t.dims)}"]
        for d in t.dims:
            extent = f"{t.var}.shape[{d.dim}]"
            if isinstance(d, H.FixedDim):
                terms.append(f"{extent} == {d.extent}")
                continue
            if d.var in params:
                return None
            if d.var in bound:
                terms.append(f"{extent} == {d.var}")
            else:
                bound.add(d.var)
                terms.append(f"({d.var} := {extent}) > 0")
    return " and ".join(terms)


class _Writer:
    def __init__(self, source: str, computed: dict[str, str]) -> None:
        self.source = source
        self.computed = computed  # the launcher variables host code computes with, and their types
        self.lines: list[str] = []
        self.depth = 1
        self.last = 0  # the .co line of the last comment written

    def line(self, code: str, at: int = 0) -> None:
        comment = ""
        if at > 0 and at != self.last:
            comment = f"  # {self.source}:{at}"
            self.last = at
        self.lines.append("    " * self.depth + code + comment)

    def comment(self, text: str) -> None:
        self.lines.append("    " * self.depth + "# " + text)

    def block(self, header: str, at: int, body: tuple[H.Stmt, ...]) -> None:
        self.line(header, at)
        self.depth += 1
        self.body(body)
        if not body:
            self.line("pass")
        self.depth -= 1
        self.last = 0

    def body(self, stmts: tuple[H.Stmt, ...]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: H.Stmt) -> None:
        at = s.line
        if isinstance(s, H.If):
            note = f"  # {s.note}" if s.note else ""
            self.block(f"if {host_source(s.cond)}:{note}", at, s.then)
            if s.orelse:
                self.block("else:", s.else_line, s.orelse)
        elif isinstance(s, H.While):
            self.block(f"while {host_source(s.cond)}:", at, s.body)
        elif isinstance(s, H.For):
            self.block(f"for {s.var} in {_code(call('range', host_ast(s.stop)))}:", at, s.body)
        elif isinstance(s, H.Comment):
            self.comment(s.text)
        elif isinstance(s, H.CallTuned):
            self.call_tuned(s)
        elif isinstance(s, H.BindScalar):
            self.line(_code(_bind_scalar(s, self.computed.get(s.var))), at)
        else:
            for node in _simple(s):
                self.line(_code(node), at)

    def call_tuned(self, s: H.CallTuned) -> None:
        """The table of tuned sizes -> the launcher of the point tuned there, with a comment naming
        each point, and the call of the launcher chosen for this launch's sizes."""
        sizes = ", ".join(s.symbols)
        self.comment(
            f"the points croq2triton tune picked ({s.origin}), by the sizes ({sizes}) they won at: the launcher "
            "tuned at this launch's sizes runs, else the one tuned at the nearest (in log space, a tie to the larger)"
        )
        for c in s.choices:
            self.comment(f"  {c.launcher}: {c.point}")
        keys = [_tuple([_const(n) for n in sz]) for c in s.choices for sz in c.sizes]
        values = [name(c.launcher) for c in s.choices for _ in c.sizes]
        self.line(_code(_assign("_tuned", ast.Dict(keys, values))))
        chosen = call("_rt.nearest_tuned", name("_tuned"), _tuple([host_ast(v) for v in s.values]))
        forward = ast.Call(chosen, [name(a) for a in s.args], [ast.keyword("_launch", name("_launch"))])
        self.line(_code(ast.Return(forward)))


def _simple(s: H.Stmt) -> list[ast.stmt]:
    """The Python statements of a statement without a body."""
    if isinstance(s, H.BindTensor):
        return _bind_tensor(s)
    if isinstance(s, H.BindStream):
        return [_expr(call("_rt.stream_arg", name("_F"), _const(s.var), name(s.var)))]
    if isinstance(s, (H.Let, H.Assign)):
        return [_assign(s.var, host_ast(s.value))]
    if isinstance(s, H.Alloc):
        fill = host_ast(s.fill) if s.fill is not None else _const(None)
        shape = _tuple([host_ast(d) for d in s.shape])
        if s.empty:
            return [
                _assign(s.var, call("_rt.alloc", name("_F"), shape, _torch(s.dtype), name("_dev"), empty=_const(True)))
            ]
        return [_assign(s.var, call("_rt.alloc", name("_F"), shape, _torch(s.dtype), name("_dev"), fill))]
    if isinstance(s, H.SpanAs):
        shape = _tuple([host_ast(d) for d in s.shape])
        return [_assign(s.var, call("_rt.span_as", name("_F"), _const(s.tensor), name(s.host), shape))]
    if isinstance(s, H.Window):
        origin, shape = _tuple([host_ast(d) for d in s.origin]), _tuple([host_ast(d) for d in s.shape])
        args = (name("_F"), _const(s.tensor), name(s.host), origin, shape, _const(s.line))
        kw = {"drop": _tuple([_const(d) for d in s.drop])} if s.drop else {}
        if s.partial:
            kw["partial"] = _const(True)
        return [_assign(s.var, call("_rt.window", *args, **kw))]
    if isinstance(s, H.Strided):
        shape, strides = _tuple([host_ast(d) for d in s.shape]), _tuple([host_ast(d) for d in s.strides])
        args = (name("_F"), _const(s.tensor), name(s.host), host_ast(s.offset), shape, strides, _const(s.line))
        return [_assign(s.var, call("_rt.strided", *args))]
    if isinstance(s, H.HostCopy):
        perm = _tuple([_const(k) for k in s.perm]) if s.perm is not None else _const(None)
        into = (_const(s.dst_name), name(s.dst)) if s.dst_name is not None else (_const(None), _const(None))
        copied = call("_rt.host_copy", name("_F"), *into, _const(s.src_name), name(s.src), perm, _const(s.line))
        return [_assign(s.dst, copied) if s.dst_name is None else _expr(copied)]
    if isinstance(s, H.HostPad):
        into = (_const(s.dst_name), name(s.dst)) if s.dst_name is not None else (_const(None), _const(None))
        borders = [_tuple([host_ast(x) for x in xs]) for xs in (s.lo, s.hi, s.mid)]
        padded = call(
            "_rt.host_pad",
            name("_F"),
            *into,
            _const(s.src_name),
            name(s.src),
            *borders,
            host_ast(s.value),
            _const(s.line),
        )
        return [_assign(s.dst, padded) if s.dst_name is None else _expr(padded)]
    if isinstance(s, H.ElemSet):
        index = _tuple([host_ast(i) for i in s.index])
        args = (name("_F"), _const(s.tensor), name(s.host), index, host_ast(s.value), _const(s.line))
        return [_expr(call("_rt.elem_set", *args))]
    if isinstance(s, H.Assert):
        return [_expr(call("_rt.host_assert", name("_F"), host_ast(s.cond), _const(s.message), _const(s.line)))]
    if isinstance(s, H.Print):
        items = [_print_item(x) for x in s.items]
        end = _const("\n" if s.newline else "")
        return [_expr(call("print", *items, sep=_const(""), end=end))]
    if isinstance(s, H.Sync):
        return [_expr(call("_rt.sync", name("_dev")))]
    if isinstance(s, H.Break):
        return [ast.Break()]
    if isinstance(s, H.Continue):
        return [ast.Continue()]
    if isinstance(s, H.CopyBack):
        return [_expr(call("_rt.copy_back", name(s.caller), name(s.device)))]
    if isinstance(s, H.Return):
        return [ast.Return(_returned(s.value))]
    if isinstance(s, H.Launch):
        return [*(_prepare(p) for p in s.prepare), _expr(_launch(s))]
    raise TypeError(f"no Python for the host statement {type(s).__name__}")


def _bind_scalar(s: H.BindScalar, computed: str | None) -> ast.stmt:
    """A scalar parameter; converted to its declared type (C's conversion of the argument: ``f32``
    rounded, an ``int`` wrapped) where host code computes with it, so that it computes with that
    value; a parameter only passed to kernels is converted by the kernel's argument."""
    value = call("_rt.scalar_arg", name("_F"), _const(s.name), name(s.var), name(s.kind))
    if computed in RUNTIME_NAME:
        value = call(f"_rt.{RUNTIME_NAME[computed]}", value)
    return _assign(s.var, value)


def _bind_tensor(s: H.BindTensor) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    if s.keep_caller:
        out.append(_assign(f"{s.var}_caller", name(s.var)))
    rank = _const(len(s.dims))
    arg = call("_rt.tensor_arg", name("_F"), _const(s.name), name(s.var), _torch(s.dtype), rank, name("_dev"))
    assert isinstance(arg, ast.Call)
    arg.keywords.append(ast.keyword("is_global", _const(s.is_global)))
    if s.move:
        out.append(_assign(s.var, arg))
    else:  # checked only: the caller's tensor goes on as it is
        arg.keywords.append(ast.keyword("move", _const(False)))
        out.append(_expr(arg))
    for d in s.dims:
        if isinstance(d, H.BindDim):
            dims = (name("_F"), name("_dims"), _const(d.symbol), _const(s.name), name(s.var), _const(d.dim))
            out.append(_assign(d.var, call("_rt.bind_dim", *dims)))
        elif isinstance(d, H.AnyDim):
            out.append(_assign(d.var, call("_rt.any_dim", name("_F"), _const(s.name), name(s.var), _const(d.dim))))
        else:
            fixed = (name("_F"), _const(s.name), name(s.var), _const(d.dim), _const(d.extent))
            out.append(_expr(call("_rt.fixed_dim", *fixed)))
    return out


def _print_item(x: H.PrintItem) -> ast.expr:
    if isinstance(x, str):
        return _const(x)
    if isinstance(x, H.Braced):  # '{' + ', '.join(map(str, (a, b))) + '}'
        items = _tuple([host_ast(i) for i in x.items])
        joined = ast.Call(ast.Attribute(_const(", "), "join", ast.Load()), [call("map", name("str"), items)], [])
        return ast.BinOp(ast.BinOp(_const("{"), ast.Add(), joined), ast.Add(), _const("}"))
    return host_ast(x)


def _returned(value: E.Expr | H.TensorRef | H.Reshape | None) -> ast.expr:
    if value is None:
        return _const(None)
    if isinstance(value, H.TensorRef):
        return name(value.var)
    if isinstance(value, H.Reshape):
        return ast.Call(ast.Attribute(name(value.var), "reshape", ast.Load()), [host_ast(d) for d in value.dims], [])
    return host_ast(value)


def _prepare(p: H.Preparation) -> ast.stmt:
    if isinstance(p, H.NumSms):
        return _assign(p.var, call("_rt.num_sms", name("_dev")))
    if isinstance(p, H.TmaCheck):
        # (tuples: constants where known, and compared as they are, runtime/tma.py runtime_fits)
        window = _tuple([host_ast(x) for x in p.window]) if p.window else _ints(p.box)
        check = (name("_F"), _const(p.source), name(p.tensor), _ints(p.box), window, _const(p.what))
        return _assign(p.flag, call("_rt.tma_ok", *check))
    if isinstance(p, H.TmaDescriptor):
        fill = _const("zero") if p.fill == "zero" else name("_OOB_PADDING")
        return _assign(p.var, call("_rt.tma_desc", name(p.tensor), _ints(p.box), name(p.flag), fill))
    if isinstance(p, H.ScratchArea) and p.kept_zero:
        return _assign(p.var, call("_rt.counters", host_ast(p.elements), _torch(p.dtype), name("_dev")))
    if isinstance(p, H.ScratchArea):
        written = {"written": _const(True)} if p.written else {}
        area = call("_rt.scratch", name("_F"), host_ast(p.elements), _torch(p.dtype), name("_dev"), **written)
        return _assign(p.var, area)
    sizes = _tuple([host_ast(x) for x in p.sizes])
    args = [name("_F"), _const(p.what), sizes]
    args += [_const(p.fixed), _const(p.least)] if p.least > 1 else [_const(p.fixed)] if p.fixed > 1 else []
    target = ast.Tuple([ast.Name(v, ast.Store()) for v in p.vars], ast.Store())
    return ast.Assign([target], call("_rt.block_extents", *args))


def _launch(s: H.Launch) -> ast.expr:
    args: list[ast.expr] = []
    for a in s.args:
        if isinstance(a, (H.TensorArg, H.DescriptorArg, H.ScratchArg)):
            args.append(name(a.var))
        elif isinstance(a, H.StrideArg):  # (``x.stride()[d]``: torch parses ``x.stride(d)``'s argument, 2x the time)
            strides = ast.Call(ast.Attribute(name(a.tensor), "stride", ast.Load()), [], [])
            args.append(ast.Subscript(strides, _const(a.dim), ast.Load()))
        else:
            args.append(host_ast(a.value))
    constexprs = call("dict", **{k: host_ast(v) for k, v in s.constexprs})
    grid = _tuple([host_ast(g) for g in s.grid])
    return call("_launch", name(s.kernel), grid, _list(args), constexprs)


def _torch(dtype: str) -> ast.expr:
    return name(f"torch.{TORCH_TYPES[dtype]}")


def _const(value: object) -> ast.expr:
    return ast.Constant(value)


def _ints(values: tuple[int, ...]) -> ast.expr:
    return _tuple([_const(v) for v in values])


def _list(items: list[ast.expr]) -> ast.expr:
    return ast.List(items, ast.Load())


def _tuple(items: list[ast.expr]) -> ast.expr:
    return ast.Tuple(items, ast.Load())


def _assign(target: str, value: ast.expr) -> ast.stmt:
    return ast.Assign([ast.Name(target, ast.Store())], value)


def _expr(value: ast.expr) -> ast.stmt:
    return ast.Expr(value)


def _code(node: ast.AST) -> str:
    return ast.unparse(ast.fix_missing_locations(node))
