"""Print an AST back as Croqtile source (``parse(print(ast)) == ast``).

Parentheses are kept as :class:`~.ast.Paren` nodes, so printing never needs to
add any.  Output uses the spelling of the dialect the AST came from (tutorial
forms stay tutorial forms).
"""

from __future__ import annotations

from . import ast as A

_IND = "  "


class Printer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    # ------------------------------------------------------------ top level
    def unit(self, tu: A.TranslationUnit) -> str:
        out: list[str] = []
        for item in tu.items:
            if isinstance(item, (A.HostText, A.DeviceCode)):
                out.append(item.text)
            else:
                out.append(self.function(item))
        return "".join(out)

    def function(self, fn: A.CoFunction) -> str:
        self.lines = []
        params = ", ".join(self.param(p) for p in fn.params)
        self.lines.append(f"__co__ {self.type(fn.ret)} {fn.name}({params}) {{")
        for s in fn.body:
            self.stmt(s, 1)
        self.lines.append("}")
        return "\n".join(self.lines)

    def type(self, t: A.TypeRef) -> str:
        if t.kind == "elem":
            return t.elem or ""
        if t.kind == "spanned":
            return f"{t.elem} {self.shape(t.shape)}"
        return t.kind

    def shape(self, s: A.ParamShape | None) -> str:
        if s is None:
            return ""
        if s.form == "rank":
            return f"mdspan<{s.rank}>"
        dims = ", ".join(self.expr(d) for d in s.dims or [])
        return f"mdspan[{dims}]" if s.form == "mdspan" else f"[{dims}]"

    def param(self, p: A.Param) -> str:
        parts = []
        if p.storage:
            parts.append(p.storage)
        parts.append(self.type(p.type))
        if p.ref:
            parts.append("&")
        if p.name:
            parts.append(p.name)
        return " ".join(parts)

    # ------------------------------------------------------------ statements
    def emit(self, text: str, depth: int) -> None:
        self.lines.append(_IND * depth + text)

    def body(self, head: str, body: A.Stmt, depth: int) -> None:
        if isinstance(body, A.Block):
            self.emit(head + " {", depth)
            for s in body.stmts:
                self.stmt(s, depth + 1)
            self.emit("}", depth)
        else:
            self.emit(head, depth)
            self.stmt(body, depth + 1)

    def stmt(self, s: A.Stmt, depth: int) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise NotImplementedError(f"internal error: printer has no rule for {type(s).__name__}")
        m(s, depth)

    def s_Block(self, s: A.Block, d: int) -> None:
        # only reachable for a bare nested block (not produced by the parser)
        self.emit("{", d)
        for x in s.stmts:
            self.stmt(x, d + 1)
        self.emit("}", d)

    def s_Empty(self, s: A.Empty, d: int) -> None:
        self.emit(";", d)

    def s_PragmaStmt(self, s: A.PragmaStmt, d: int) -> None:
        self.emit(f'__pragma_croq_intrinsic_{s.kind}("{s.name}");', d)

    def s_MdspanDecl(self, s: A.MdspanDecl, d: int) -> None:
        kw = ""
        if s.keyword:
            kw = "mdspan" + (f"<{s.rank}>" if s.rank is not None else "") + " "
        self.emit(f"{kw}{s.name} : {self.expr(s.value)};", d)

    def s_ItupleDecl(self, s: A.ItupleDecl, d: int) -> None:
        rank = f"<{s.rank}>" if s.rank is not None else ""
        self.emit(f"ituple{rank} {s.name} = {self.expr(s.value)};", d)

    def declarator(self, x: A.Declarator) -> str:
        out = x.name + "".join(f"[{self.expr(e)}]" for e in x.dims)
        if x.init is not None:
            out += f" = {self.expr(x.init)}"
        if x.fill is not None:
            out += f" {{{self.expr(x.fill)}}}"
        return out

    def s_ScalarDecl(self, s: A.ScalarDecl, d: int) -> None:
        head = " ".join(x for x in ("mutable" if s.mutable else None, s.storage, s.type) if x)
        self.emit(f"{head} {', '.join(self.declarator(x) for x in s.items)};", d)

    def s_SpannedDecl(self, s: A.SpannedDecl, d: int) -> None:
        shape = "auto" if s.shape is None else self.exprs(s.shape)
        head = (s.storage + " " if s.storage else "") + f"{s.elem} [{shape}]"
        self.emit(f"{head} {', '.join(self.declarator(x) for x in s.items)};", d)

    def s_FragDecl(self, s: A.FragDecl, d: int) -> None:
        self.emit(f"frag {s.elem} [{self.exprs(s.shape or [])}] {', '.join(self.declarator(x) for x in s.items)};", d)

    def s_EventDecl(self, s: A.EventDecl, d: int) -> None:
        head = (s.storage + " " if s.storage else "") + "event" + (f"<{s.count}>" if s.count is not None else "")
        items = []
        for e in s.items:
            t = e.name + "".join(f"[{self.expr(x)}]" for x in e.dims)
            if e.ready:
                t += " = ready"
            items.append(t)
        self.emit(f"{head} {', '.join(items)};", d)

    def assign(self, a: A.Assign) -> str:
        op = "=" if a.op == "=" else f"{a.op}="
        return f"{self.expr(a.target)} {op} {self.expr(a.value)}"

    def s_AssignStmt(self, s: A.AssignStmt, d: int) -> None:
        self.emit(", ".join(self.assign(a) for a in s.items) + ";", d)

    def s_DmaStmt(self, s: A.DmaStmt, d: int) -> None:
        out = f"{s.engine}.{s.op}"
        if s.op == "pad" and s.cfg:
            out += f"<{self.expr(s.cfg[0])}, {self.expr(s.cfg[1])}, {self.expr(s.cfg[2])}, {self.expr(s.cfg[3])}>"
        elif s.op == "transp" and s.cfg:
            out += f"<{self.exprs(s.cfg)}>"
        if s.is_async:
            out += ".async"
            if s.event is not None:
                out += f"<{self.expr(s.event)}>"
        for at in s.attrs:
            out += "." + at.name
            if at.args is not None:
                sep = ":" if at.name == "sp" else ", "
                out += "<" + sep.join(str(a) for a in at.args) + ">"
        out += f" {self.expr(s.src)} => {self.expr(s.dst)}"
        if s.after:
            out += f" after {s.after}"
        if s.result:
            out = f"{s.result} = {out}"
        self.emit(out + ";", d)

    def s_DmaAny(self, s: A.DmaAny, d: int) -> None:
        self.emit(f"{s.result} = {s.engine}.any;", d)

    def s_MapStmt(self, s: A.MapStmt, d: int) -> None:
        self.emit(
            f"{s.result} = {self.expr(s.src)}.{s.kind}<{s.storage}>({self.expr(s.offset)}, {self.expr(s.size)});", d
        )

    def s_MmaFill(self, s: A.MmaFill, d: int) -> None:
        suffix = f".{s.elem}" if s.elem else ""
        if s.result is not None:
            self.emit(f"{s.result} = mma.fill{suffix} {self.expr(s.value)};", d)
        else:
            assert s.target is not None
            self.emit(f"mma.fill{suffix} {self.expr(s.target)}, {self.expr(s.value)};", d)

    def s_FragInit(self, s: A.FragInit, d: int) -> None:
        suffix = f".{s.elem}" if s.elem else ""
        dims = "".join(f"[{self.expr(x)}]" for x in s.dims)
        self.emit(f"frag{suffix} {s.name}{dims} {{{self.expr(s.value)}}};", d)

    def s_MmaLoad(self, s: A.MmaLoad, d: int) -> None:
        mods = ".frag" if s.frag else ""
        if s.swiz_given:
            mods += ".swiz" + (f"<{s.swiz}>" if s.swiz is not None else "")
        if s.is_async:
            mods += ".async"
        if s.result is not None:
            self.emit(f"{s.result} = mma.load{mods} {self.expr(s.src)};", d)
        else:
            assert s.target is not None
            self.emit(f"mma.load{mods} {self.expr(s.src)}, {self.expr(s.target)};", d)

    def s_MmaOp(self, s: A.MmaOp, d: int) -> None:
        if s.schedule is not None:
            self.emit(f"[[schedule(k_tiles({', '.join(str(k) for k in s.schedule)}))]]", d)
        head = f"mma.{s.layout[0]}.{s.layout[1]}" + (f".{s.variant}" if s.variant else "")
        args = ", ".join(self.expr(e) for e in [s.acc, s.a, s.b, *s.extra])
        self.emit((f"{s.result} = " if s.result else "") + f"{head} {args};", d)

    def s_MmaStore(self, s: A.MmaStore, d: int) -> None:
        head = "mma.store" + (f".{s.variant}" if s.variant else "")
        self.emit(f"{head} {', '.join(self.expr(e) for e in [s.acc, s.dst, *s.extra])};", d)

    def s_MmaScale(self, s: A.MmaScale, d: int) -> None:
        self.emit(f"mma.scale {self.expr(s.acc)}, {self.expr(s.sa)}, {self.expr(s.sb)};", d)

    def s_MmaCommit(self, s: A.MmaCommit, d: int) -> None:
        self.emit("mma.commit;", d)

    def s_FragOp(self, s: A.FragOp, d: int) -> None:
        args = [self.expr(a) for a in s.args] + ([str(s.axis)] if s.axis is not None else [])
        self.emit(f"{s.op}({', '.join(args)});", d)

    def s_Wait(self, s: A.Wait, d: int) -> None:
        self.emit(f"wait {self.exprs(s.items)};", d)

    def s_Trigger(self, s: A.Trigger, d: int) -> None:
        out = "trigger" + (".cluster" if s.cluster else "") + " " + self.exprs(s.items)
        if s.after:
            out += " after " + self.exprs(s.after)
        self.emit(out + ";", d)

    def s_CallStmt(self, s: A.CallStmt, d: int) -> None:
        self.emit(self.expr(s.call) + ";", d)

    def s_Swap(self, s: A.Swap, d: int) -> None:
        names = ", ".join(s.names)
        self.emit(f"{s.kind}({names});" if s.parens else f"{s.kind} {names};", d)

    def s_Return(self, s: A.Return, d: int) -> None:
        self.emit("return;" if s.value is None else f"return {self.expr(s.value)};", d)

    def s_Sync(self, s: A.Sync, d: int) -> None:
        if s.kind in ("barrier", "fence"):
            out = f"sync.{s.kind} : {s.level}"
            if s.storage:
                out += f"<{s.storage}>"
        else:
            out = f"sync.{s.kind}"
        self.emit(out + ";", d)

    def s_Cpp(self, s: A.Cpp, d: int) -> None:
        self.emit(f"__cpp__({self.expr(s.text)});", d)

    def s_Break(self, s: A.Break, d: int) -> None:
        self.emit("break;", d)

    def s_Continue(self, s: A.Continue, d: int) -> None:
        self.emit("continue;", d)

    def s_Yield(self, s: A.Yield, d: int) -> None:
        self.emit("yield;", d)

    def asm_ops(self, ops: list[A.AsmOperand]) -> str:
        out = []
        for o in ops:
            name = f"[{o.name}] " if o.name else ""
            out.append(f"{name}{self.expr(o.constraint)}({self.expr(o.expr)})")
        return ", ".join(out)

    def s_Asm(self, s: A.Asm, d: int) -> None:
        out = s.keyword + (" volatile" if s.volatile else "") + "(" + self.expr(s.template)
        if s.outputs is not None:
            out += " : " + self.asm_ops(s.outputs)
        if s.inputs is not None:
            out += " : " + self.asm_ops(s.inputs)
        if s.clobbers is not None:
            out += " : " + ", ".join(self.expr(c) for c in s.clobbers)
        self.emit(out + ");", d)

    def pby(self, b: A.PBy) -> str:
        if b.vars is not None:
            out = (f"{b.name} = " if b.name else "") + "{" + ", ".join(b.vars) + "} by [" + self.exprs(b.bound) + "]"
        else:
            bound = self.expr(b.bound[0])
            out = (f"{b.name} " if b.name else "") + "by " + (f"[{bound}]" if b.bracketed else bound)
        if b.level:
            out += f" : {b.level}"
            if b.level_arg:
                out += f"({b.level_arg})"
            if b.cooperative:
                out += "<cooperative>"
        return out

    def s_Parallel(self, s: A.Parallel, d: int) -> None:
        for a in s.attrs:
            self.emit(f"[[{a.name}({self.exprs(a.args)})]]", d)
        head = "parallel" + (".async" if s.is_async else "") + (f"<{s.stream}>" if s.stream else "")
        head += " " + ", ".join(self.pby(b) for b in s.levels)
        self.body(head, s.body, d)

    def within(self, w: A.Within | A.RangeItem) -> str:
        if isinstance(w, A.RangeItem):
            out = (f"{w.alias} = " if w.alias else "") + w.name
            if w.sliced:
                lo = self.expr(w.lo) if w.lo is not None else ""
                hi = self.expr(w.hi) if w.hi is not None else ""
                out += f"({lo}:{hi}"
                if w.has_step:
                    out += ":" + (self.expr(w.step) if w.step is not None else "")
                out += ")"
            return out
        if w.vars is not None:
            head = (f"{w.name} = " if w.name else "") + "{" + ", ".join(w.vars) + "}"
        else:
            head = w.name or ""
        return f"{head} in {self.expr(w.shape)}"

    def s_With(self, s: A.With, d: int) -> None:
        head = "with " + ", ".join(self.within(w) for w in s.withins)
        if s.where:
            head += " where " + ", ".join(f"{a} <-> {b}" for a, b in s.where)
        self.body(head, s.body, d)

    def s_Foreach(self, s: A.Foreach, d: int) -> None:
        head = "foreach " + ", ".join(self.within(w) for w in s.items)
        if s.suffixes:
            sfx = []
            for x in s.suffixes:
                sfx.append(x.kind + (f"({self.exprs(x.args)})" if x.args else ""))
            head += " : " + ", ".join(sfx)
        self.body(head, s.body, d)

    def s_Apply(self, s: A.Apply, d: int) -> None:
        self.body(f"apply {{{', '.join(s.vars)}}} in {s.frag}.span", s.body, d)

    def s_InThreads(self, s: A.InThreads, d: int) -> None:
        self.body(f"inthreads{'.async' if s.is_async else ''} ({self.expr(s.cond)})", s.body, d)

    def s_While(self, s: A.While, d: int) -> None:
        self.body(f"while ({self.expr(s.cond)})", s.body, d)

    def s_If(self, s: A.If, d: int) -> None:
        then = s.then
        # a nested if without braces would capture our else: brace it
        if s.other is not None and not isinstance(then, A.Block) and _dangles(then):
            then = A.Block([then])
        self.body(f"if ({self.expr(s.cond)})", then, d)
        if s.other is not None:
            if isinstance(s.other, A.If):
                start = len(self.lines)
                self.s_If(s.other, d)
                self.lines[start] = _IND * d + "else " + self.lines[start].lstrip()
            else:
                self.body("else", s.other, d)

    # ------------------------------------------------------------ expressions
    def exprs(self, es: list[A.Expr]) -> str:
        return ", ".join(self.expr(e) for e in es)

    def expr(self, e: A.Node) -> str:
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            raise NotImplementedError(f"internal error: printer has no rule for {type(e).__name__}")
        return str(m(e))

    def e_IntLit(self, e: A.IntLit) -> str:
        return e.text

    def e_FloatLit(self, e: A.FloatLit) -> str:
        return e.text

    def e_BoolLit(self, e: A.BoolLit) -> str:
        return "true" if e.value else "false"

    def e_NullPtr(self, e: A.NullPtr) -> str:
        return "nullptr"

    def e_InfLit(self, e: A.InfLit) -> str:
        return "inf"

    def e_StringLit(self, e: A.StringLit) -> str:
        return " ".join(e.pieces)

    def e_Name(self, e: A.Name) -> str:
        return e.name

    def e_TypeArg(self, e: A.TypeArg) -> str:
        return e.name

    def e_Unknown(self, e: A.Unknown) -> str:
        return e.text

    def e_Unary(self, e: A.Unary) -> str:
        inner = self.expr(e.operand)
        # '- 1.5' keeps the operator apart from a literal ('-1.5' lexes as one token)
        return f"{e.op} {inner}" if e.op == "-" else f"{e.op}{inner}"

    def e_IncDec(self, e: A.IncDec) -> str:
        return f"{e.op}{e.target}" if e.prefix else f"{e.target}{e.op}"

    def e_Binary(self, e: A.Binary) -> str:
        return f"{self.expr(e.lhs)} {e.op} {self.expr(e.rhs)}"

    def e_Ternary(self, e: A.Ternary) -> str:
        return f"{self.expr(e.cond)} ? {self.expr(e.then)} : {self.expr(e.other)}"

    def e_Paren(self, e: A.Paren) -> str:
        if e.written is not None:  # an expanded __device__ helper call: the call as written
            return self.expr(e.written)
        return f"({self.expr(e.expr)})"

    def e_ConvertLike(self, e: A.ConvertLike) -> str:  # (inside a helper's body only)
        return self.expr(e.expr)

    def e_UBound(self, e: A.UBound) -> str:
        return f"#{e.name}"

    def e_Member(self, e: A.Member) -> str:
        return f"{self.expr(e.base)}.{e.member}"

    def e_At(self, e: A.At) -> str:
        return f"{self.expr(e.base)}.at({self.exprs(e.indices)})"

    def e_Index(self, e: A.Index) -> str:
        return f"{self.expr(e.base)}[{self.exprs(e.indices)}]"

    def e_GetIth(self, e: A.GetIth) -> str:
        idx = e.index
        inner = f"-{self.expr(idx.operand)}" if isinstance(idx, A.Unary) else self.expr(idx)
        return f"{self.expr(e.base)}({inner})"

    def e_MdspanLit(self, e: A.MdspanLit) -> str:
        return f"[{self.exprs(e.items)}]"

    def e_ItupleLit(self, e: A.ItupleLit) -> str:
        return f"{{{self.exprs(e.items)}}}"

    def e_Derive(self, e: A.Derive) -> str:
        return f"{self.expr(e.base)} {{{self.exprs(e.items)}}}"

    def e_Builtin(self, e: A.Builtin) -> str:
        return f"{e.name}({self.exprs(e.args)})"

    def e_Cast(self, e: A.Cast) -> str:
        return f"__to<{e.type}>({self.expr(e.expr)})"

    def e_SizeOf(self, e: A.SizeOf) -> str:
        return f"|{e.elem}|" if e.expr is None else f"|{self.expr(e.expr)}|"

    def e_Select(self, e: A.Select) -> str:
        return f"select({self.expr(e.index)}, {self.exprs(e.options)})"

    def e_View(self, e: A.View) -> str:
        return self.expr(e.base) + "".join(self.view_op(o) for o in e.ops)

    def view_op(self, o: A.ViewOp) -> str:
        if o.kind == "sqz":
            return ".sqz()"
        if o.kind == "zfill":
            return ".zfill"
        args = self.exprs(o.args)
        if o.strides is not None:
            args += " : " + self.exprs(o.strides)
        out = f".{o.kind}({args})"
        if o.kind == "chunk":
            return out + f".at({self.exprs(o.at or [])})"
        if o.step is not None:
            out += f".step({self.exprs(o.step)})"
        if o.at is not None:
            out += (".from" if o.kind == "view" else ".at") + f"({self.exprs(o.at)})"
        return out

    def e_Call(self, e: A.Call) -> str:
        args = self.exprs(e.args)
        if e.kind == "call":
            targs = f"<{self.exprs(e.targs)}>" if e.targs is not None else ""
            return f"call {e.name}{targs}({args})"
        if e.kind == "intrinsic" and e.targs is not None:
            return f"{e.name}<{self.exprs(e.targs)}>({args})"
        if e.kind in ("print", "println") and e.bang:
            return f"{e.name}!({args})"
        return f"{e.name}({args})"


def _dangles(s: A.Stmt) -> bool:
    """Would ``s``, printed unbraced before an ``else``, capture that else?"""
    while True:
        if isinstance(s, A.If):
            if s.other is None:
                return True
            s = s.other
        elif isinstance(s, (A.While, A.Parallel, A.With, A.Foreach, A.Apply, A.InThreads)):
            if isinstance(s.body, A.Block):
                return False
            s = s.body
        else:
            return False


def print_unit(tu: A.TranslationUnit) -> str:
    return Printer().unit(tu)


def print_function(fn: A.CoFunction) -> str:
    return Printer().function(fn)
