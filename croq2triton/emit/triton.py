"""The Triton emitter: one tile-IR :class:`~croq2triton.tir.nodes.Kernel` as a ``@triton.jit``
function.

Statements become Python ``ast`` nodes (expressions through :mod:`.pyexpr`), unparsed one line
at a time so each can carry the ``.co`` line it comes from as a comment.  Nothing here decides
anything: offsets and masks are named because the IR names them, constants are folded because
the IR's expressions are canonical.
"""

from __future__ import annotations

import ast

from ..tir import expr as E
from ..tir import nodes as N
from ..tir.pyexpr import TL_TYPES, call, call_method, constant, dim_node, name, tl_type, to_ast
from .layout import INDENT, LINE_LIMIT, docstring, layout

# integer parameters of types Triton's JIT does not give a Python int (an ``i32`` below 2^31, an
# ``i64`` from there): each is converted to its declared type where the kernel begins, so that an
# unsigned one compares, divides, shifts and wraps as unsigned and an ``s64`` computes in 64 bits
# (in the interpreter too, which takes no annotation).  An ``f64`` is declared in the signature: the
# JIT makes a Python float an ``fp32`` (the interpreter passes it on as Python's double)
_CONVERTED = ("u32", "i64", "u64")

# the integer word a float exchanges through (the interpreter exchanges integers only)
_EXCHANGE_BITS = {"f32": "i32", "f64": "i64"}
_SHORT = ("f16", "bf16", "i16", "u16")  # element types whose atomics are compare-and-swap loops


def _literal_of_another_type(e: E.Expr) -> bool:
    """A scalar constant that Triton would type otherwise than its type: a Python int is an int32 (an int64
    past its range), a Python float an fp32 (f64 constants are tl.full already: tir/pyexpr.py)."""
    if not isinstance(e, E.Const) or isinstance(e.value, bool):
        return False
    return e.dtype not in ("i32", "f32", "f64", "i1")


def param(arg: N.Arg) -> str:
    if isinstance(arg, N.Scalar) and arg.dtype == "f64":
        return f"{arg.name}: tl.float64"
    return f"{arg.name}: tl.constexpr" if isinstance(arg, N.Constexpr) else arg.name


def _constexprs_last(args: list[N.Arg]) -> list[N.Arg]:
    return [a for a in args if not isinstance(a, N.Constexpr)] + [a for a in args if isinstance(a, N.Constexpr)]


class KernelEmitter:
    def __init__(self, kernel: N.Kernel, src_name: str) -> None:
        self.kernel = kernel
        self.src_name = src_name
        self.args = {a.name: a for a in kernel.args}
        self.lines: list[str] = []
        self.last_line = 0
        # variables assigned after their let: a loop carries them, and Triton wants their first value of
        # the type they keep (a literal 0 is an int32, 0.0 an fp32)
        self.assigned = {s.var.name for s in N.walk(kernel.body) if isinstance(s, N.Assign)}

    def emit(self) -> str:
        k = self.kernel
        self.lines = [
            *autotune(k.autotune),
            "@triton.jit",
            # (constexprs last: the launcher passes the others by position, the constexprs by name,
            # and a split adds arguments after a kernel's constexprs, schedule/splitloop.py)
            *wrapped(f"def {k.name}(", [param(a) for a in _constexprs_last(k.args)], "):", 0, ""),
        ]
        if k.doc:
            self.lines.extend(docstring(k.doc))
        for a in k.args:
            if isinstance(a, N.Scalar) and a.dtype in _CONVERTED:
                self.line(f"{a.name} = tl.cast({a.name}, tl.{TL_TYPES[a.dtype]})", 1, k.line)
        for axis, v in enumerate(k.program_ids):
            self.line(f"{v.name} = tl.program_id({axis})", 1, k.line)
        self.block(k.body, 1)
        return "\n".join(self.lines) + "\n"

    # -------------------------------------------------------------- lines
    def line(self, text: str, depth: int, co_line: int, node: ast.expr | None = None, prefix: str = "") -> None:
        comment = ""
        if co_line and co_line != self.last_line:
            comment = f"  # {self.src_name}:{co_line}"
            self.last_line = co_line
        if node is not None and len(INDENT * depth + text + comment) > LINE_LIMIT:
            self.lines.extend(layout(node, depth, prefix, comment))  # the comment ends the statement, as ruff puts it
            return
        self.lines.append(INDENT * depth + text + comment)

    def assign(self, target: str | None, node: ast.expr, depth: int, co_line: int) -> None:
        prefix = f"{target} = " if target else ""
        self.line(prefix + ast.unparse(node), depth, co_line, node, prefix)

    def block(self, stmts: list[N.Stmt], depth: int) -> None:
        if not stmts:
            self.lines.append(INDENT * depth + "pass")
        for s in stmts:
            self.stmt(s, depth)

    def stmt(self, s: N.Stmt, depth: int) -> None:
        if isinstance(s, N.Let) and s.var.name in self.assigned and _literal_of_another_type(s.value):
            # (an s64 accumulator from 0: tl.full([], 0, tl.int64))
            value = call("tl.full", ast.List([], ast.Load()), to_ast(s.value), tl_type(s.value.dtype))
            self.assign(s.var.name, value, depth, s.line)
        elif isinstance(s, (N.Let, N.Assign)):
            self.assign(s.var.name, to_ast(s.value), depth, s.line)
        elif isinstance(s, N.Load):
            self.assign(s.var.name, self.load(s), depth, s.line)
        elif isinstance(s, N.Store):
            self.assign(None, self.store(s), depth, s.line)
        elif isinstance(s, N.TmaLoad):
            coords = ast.List([to_ast(c) for c in s.coords], ast.Load())
            self.line(f"if {s.flag}:", depth, s.line)
            loaded: ast.expr = ast.Call(name(f"{s.desc}.load"), [coords], [])
            if s.reshape is not None:
                loaded = call_method(loaded, "reshape", ast.List([dim_node(d) for d in s.reshape], ast.Load()))
            self.assign(s.var.name, loaded, depth + 1, s.line)
            self.line("else:", depth, s.line)
            self.assign(s.var.name, self.load(s.fallback), depth + 1, s.line)
        elif isinstance(s, N.TmaStore):
            self.line(f"if {s.flag}:", depth, s.line)
            self.tma_store(s, depth + 1)
            self.line("else:", depth, s.line)
            self.assign(None, self.store(s.fallback), depth + 1, s.line)
        elif isinstance(s, N.Dot):
            self.assign(s.out.name, self.dot(s), depth, s.line)
        elif isinstance(s, N.Atomic):
            self.assign(s.result.name if s.result is not None else None, self.atomic(s), depth, s.line)
        elif isinstance(s, N.Print):
            self.assign(
                None, call("tl.device_print", ast.Constant(s.text), *(to_ast(v) for v in s.values)), depth, s.line
            )
        elif isinstance(s, N.Assert):
            self.assign(None, call("tl.device_assert", to_ast(s.cond), ast.Constant(s.message)), depth, s.line)
        elif isinstance(s, N.Barrier):
            self.assign(None, call("tl.debug_barrier"), depth, s.line)
        elif isinstance(s, N.For):
            self.line(f"for {s.var.name} in {_src(self.loop_range(s))}:", depth, s.line)
            self.block(s.body, depth + 1)
        elif isinstance(s, N.While):
            self.line(f"while {_src(to_ast(s.cond))}:", depth, s.line)
            self.block(s.body, depth + 1)
        elif isinstance(s, N.If):
            self.line(f"if {_src(to_ast(s.cond))}:", depth, s.line)
            self.block(s.then, depth + 1)
            if s.orelse:
                self.line("else:", depth, 0)
                self.block(s.orelse, depth + 1)
        else:  # pragma: no cover - every statement kind is handled above
            raise TypeError(f"cannot emit {type(s).__name__}")

    def tma_store(self, s: N.TmaStore, depth: int) -> None:
        if s.split == 1:
            coords = ast.List([to_ast(c) for c in s.coords], ast.Load())
            self.assign(None, ast.Call(name(f"{s.desc}.store"), [coords, to_ast(s.value)], []), depth, s.line)
            return
        rows, cols = s.value.shape
        width = cols // s.split
        value = _src(to_ast(s.value))
        pieces = [f"{value}_{i}" for i in range(s.split)]
        assert s.split == 2, "column pieces come from tl.split: two of them"
        self.line(
            f"{', '.join(pieces)} = tl.split(tl.permute(tl.reshape({value}, ({rows}, 2, {width})), (0, 2, 1)))",
            depth,
            s.line,
        )
        for i, piece in enumerate(pieces):
            coords = [*s.coords[:-1], E.fold(s.coords[-1] + i * width)]
            node = ast.Call(
                name(f"{s.desc}.store"), [ast.List([to_ast(c) for c in coords], ast.Load()), name(piece)], []
            )
            self.assign(None, node, depth, s.line)

    # -------------------------------------------------------------- pieces
    def address(self, base: str, index: tuple[E.Expr, ...]) -> ast.expr:
        arg = self.args[base]
        if isinstance(arg, N.Scratch):
            offset = index[0]
        else:
            assert isinstance(arg, N.Pointer)
            offset = E.Const(0)
            for i, stride in zip(index, arg.strides, strict=True):
                offset = E.Bin("+", offset, E.Bin("*", i, E.Var(stride)))
        # base + t0 + t1 - t2 ...: the terms of the folded offset added one by one, so the pointer
        # reads left to right like a tutorial kernel's (no parentheses around the offset)
        out: ast.expr = name(base)
        for op, term in _terms(E.fold(offset)):
            if not (isinstance(term, E.Const) and term.value == 0):
                out = ast.BinOp(out, ast.Add() if op == "+" else ast.Sub(), to_ast(term))
        return out

    def load(self, s: N.Load) -> ast.expr:
        kw: dict[str, ast.expr] = {}
        if s.mask is not None:
            kw["mask"] = name(s.mask.name)
            if s.other is not None:
                kw["other"] = constant(s.other)
        value = call("tl.load", self.address(s.base, s.index), **kw)
        if s.nan_outside and s.mask is not None:
            value = call("_oob_fill", value, name(s.mask.name))
        return value

    def store(self, s: N.Store) -> ast.expr:
        kw = {"mask": name(s.mask.name)} if s.mask is not None else {}
        return call("tl.store", self.address(s.base, s.index), to_ast(s.value), **kw)

    def atomic(self, s: N.Atomic) -> ast.expr:
        address = self.address(s.base, s.index)
        if s.op != "cas":
            kw = {"mask": name(s.mask.name)} if s.mask is not None else {}
            dtype = self.args[s.base].dtype
            if dtype in _SHORT and (s.op in ("min", "max", "xchg") or dtype in ("i16", "u16", "bf16")):
                # (Triton's atomics take 16-bit floats for add only, 16-bit integers for nothing; the
                # interpreter adds no bf16): a compare-and-swap loop (runtime/atomics.py)
                mask = name(s.mask.name) if s.mask is not None else ast.Constant(True)
                return call("_atomics.rmw16", address, to_ast(s.value), mask, name(s.base), OP=ast.Constant(s.op))
            bits = _EXCHANGE_BITS.get(dtype) if s.op == "xchg" else None
            if bits is not None:
                # a float's exchange through its bits: Triton's interpreter exchanges integers only
                # ('Unsupported data type'); compiled, both are the same atom.exch.b32 / .b64
                flt, word = tl_type(dtype), tl_type(bits)
                address = call("tl.cast", address, call("tl.pointer_type", word))
                value = ast.Call(
                    ast.Attribute(call("tl.cast", to_ast(s.value), flt), "to", ast.Load()),
                    [word],
                    [ast.keyword("bitcast", ast.Constant(True))],
                )
                old = call("tl.atomic_xchg", address, value, **kw)
                return ast.Call(
                    ast.Attribute(old, "to", ast.Load()), [flt], [ast.keyword("bitcast", ast.Constant(True))]
                )
            return call(f"tl.atomic_{s.op}", address, to_ast(s.value), **kw)
        assert s.compare is not None
        compare, value = to_ast(s.compare), to_ast(s.value)
        if s.mask is not None:  # masked-off lanes: 0 for 0 at the area's first element, no change
            mask = name(s.mask.name)
            address = call("tl.where", mask, address, name(s.base))
            compare, value = call("tl.where", mask, compare, constant(0)), call("tl.where", mask, value, constant(0))
        return call("_atomics.cas", address, compare, value)

    def dot(self, s: N.Dot) -> ast.expr:
        a, b = to_ast(s.a), to_ast(s.b)
        a = call("tl.trans", a) if s.trans_a else a
        b = call("tl.trans", b) if s.trans_b else b
        args = [a, b] + ([to_ast(s.acc)] if s.acc is not None else [])
        kw: dict[str, ast.expr] = {}
        if s.precision is not None:
            kw["input_precision"] = ast.Constant(s.precision)
        if s.out_dtype is not None:
            kw["out_dtype"] = name(f"tl.{TL_TYPES[s.out_dtype]}")
        return call("tl.dot", *args, **kw)

    def loop_range(self, s: N.For) -> ast.expr:
        bounds = [to_ast(s.start), to_ast(s.stop)]
        if not (isinstance(E.fold(s.step), E.Const) and E.fold(s.step).value == 1):  # type: ignore[union-attr]
            bounds.append(to_ast(s.step))
        if s.unroll:
            return call("tl.static_range", *bounds)
        if s.pipeline is None:
            return call("range", *bounds)
        p = s.pipeline
        stages = name(p.stages) if isinstance(p.stages, str) else ast.Constant(p.stages)
        kw: dict[str, ast.expr] = {"num_stages": stages}
        if isinstance(p.warp_specialize, str):
            kw["warp_specialize"] = name(p.warp_specialize)
        elif p.warp_specialize:
            kw["warp_specialize"] = ast.Constant(True)
        if p.flatten:
            kw["flatten"] = ast.Constant(True)
        return call("tl.range", *bounds, **kw)


def autotune(a: N.Autotune | None) -> list[str]:
    """The ``@triton.autotune(...)`` decorator of a kernel whose launch parameters it chooses (one
    line: the module's formatter lays it out); its timer is the runtime's (Triton's own needs a
    GPU driver, which the interpreter lacks)."""
    if a is None:
        return []
    configs = []
    for c in a.configs:
        kw = {k: v for k, v in c if k != "num_warps"}
        warps = [ast.keyword("num_warps", ast.Constant(v)) for k, v in c if k == "num_warps"]
        consts = ast.Dict([ast.Constant(k) for k in kw], [ast.Constant(v) for v in kw.values()])
        configs.append(ast.Call(name("triton.Config"), [consts], warps))
    keywords = {
        "configs": ast.List(configs, ast.Load()),
        "key": ast.List([ast.Constant(k) for k in a.key], ast.Load()),
    }
    if a.restore:
        keywords["restore_value"] = ast.List([ast.Constant(r) for r in a.restore], ast.Load())
    keywords["do_bench"] = name("_rt.autotune_bench")
    note = [f"# {a.note}"] if a.note else []
    return [*note, "@" + _src(call("triton.autotune", **keywords))]


def wrapped(head: str, items: list[str], tail: str, depth: int, comment: str) -> list[str]:
    """``head item, item tail`` on one line if it fits, else as ruff format writes it: the items on
    one indented line if they fit there, else one a line with a trailing comma."""
    pad = INDENT * depth
    one = pad + head + ", ".join(items) + tail + comment
    if len(one) <= LINE_LIMIT:
        return [one]
    inner = INDENT * (depth + 1) + ", ".join(items)
    if len(inner) <= LINE_LIMIT:
        return [pad + head + comment, inner, pad + tail]
    return [pad + head + comment, *(INDENT * (depth + 1) + it + "," for it in items), pad + tail]


def _terms(e: E.Expr) -> list[tuple[str, E.Expr]]:
    """The summands of a left-leaning chain of + and -, with their signs."""
    out: list[tuple[str, E.Expr]] = []
    while isinstance(e, E.Bin) and e.op in ("+", "-"):
        out.insert(0, (e.op, e.rhs))
        e = e.lhs
    out.insert(0, ("+", e))
    return out


def _src(node: ast.expr) -> str:
    return ast.unparse(node)


def emit_kernel(kernel: N.Kernel, src_name: str) -> str:
    """The ``@triton.jit`` source of ``kernel`` (verified first: a bad kernel is a translator bug)."""
    from ..tir.verify import verify

    verify(kernel)
    return KernelEmitter(kernel, src_name).emit()


def emit_helper(helper: N.Helper, src_name: str) -> str:
    """The ``@triton.jit`` source of a helper function of the module."""
    params = ", ".join(p.name for p in helper.params)
    where = f"  # {src_name}:{helper.line}" if helper.line else ""
    lines = ["@triton.jit", f"def {helper.name}({params}):{where}"]
    lines.extend(docstring(f"The {helper.doc} of {src_name}." if helper.doc else "A helper."))
    for var, value in helper.lets:
        lines.extend(layout(to_ast(value), 1, f"{var.name} = "))
    lines.extend(layout(to_ast(helper.body), 1, "return "))
    return "\n".join(lines) + "\n"
