"""What a statement or expression is, as the source spells it: for messages that name a construct
(``croq2triton does not translate 'break'``), never the AST's class name.

One entry per AST class (tests/test_parser.py checks every statement and expression class has one);
an entry is a fixed phrase or a function of the node (``'__to<"float4">(...)'``, ``'tma.copy'``).
"""

from __future__ import annotations

from collections.abc import Callable

from . import ast as A


def describe(node: A.Node) -> str:
    """``node`` as the source spells it, as a noun phrase (``'break'``, ``an 'ituple' declaration``)."""
    spelling = SPELLINGS.get(type(node))
    if spelling is None:
        return "this construct"
    return spelling if isinstance(spelling, str) else spelling(node)


def _base(e: A.Expr) -> str:
    """The name an access starts from (``f`` of ``f.data``), or nothing where it is not a name."""
    return e.name if isinstance(e, A.Name) else ""


def _cast(e: A.Cast) -> str:
    return f"'__to<{e.type}>(...)'"  # a C++ type keeps its quotes: __to<"float4">


def _call(e: A.Call) -> str:
    bang = "!" if e.bang else ""
    if e.kind == "call":
        return f"'call {e.name}(...)'"
    if e.kind in ("print", "println", "assert"):
        return f"'{e.kind}{bang}(...)'"
    return f"'{e.name}(...)'"


def _view(e: A.View) -> str:
    ops = "".join(f".{op.kind}(...)" if op.kind not in ("sqz", "zfill") else f".{op.kind}" for op in e.ops)
    return f"the view '{ops.lstrip('.')}'" if ops else "a view"


def _scalar(s: A.ScalarDecl) -> str:
    return f"a '{s.type}' declaration" if s.type else "a declaration"


def _spanned(s: A.SpannedDecl) -> str:
    return f"a '{s.storage}' buffer declaration" if s.storage else "a buffer declaration"


def _mma(s: A.MmaOp) -> str:
    variant = f".{s.variant}" if s.variant else ""
    return f"'mma.{s.layout[0]}.{s.layout[1]}{variant}'"


def _sync(s: A.Sync) -> str:
    return f"'sync.{s.kind}'" if s.kind in ("shared", "global", "local") else f"'sync.{s.kind} : {s.level}'"


Spelling = str | Callable[..., str]

SPELLINGS: dict[type[A.Node], Spelling] = {
    # expressions
    A.IntLit: "an integer literal",
    A.FloatLit: "a floating-point literal",
    A.BoolLit: lambda e: f"'{'true' if e.value else 'false'}'",
    A.NullPtr: "'nullptr'",
    A.InfLit: "'inf'",
    A.StringLit: "a string literal",
    A.Name: lambda e: f"the name '{e.name}'",
    A.Unknown: lambda e: f"the dimension '{e.text}'",
    A.Unary: lambda e: f"the operator '{e.op}' (unary)",
    A.IncDec: lambda e: f"'{e.op}{e.target}'" if e.prefix else f"'{e.target}{e.op}'",
    A.Binary: lambda e: f"the operator '{e.op}'",
    A.Ternary: "the operator '?:'",
    A.Paren: lambda e: describe(e.expr),
    A.ConvertLike: lambda e: describe(e.expr),
    A.DeviceLoop: "a loop of a '__device__' helper of a run-time trip count",
    A.LoopOut: "a local of a '__device__' helper after its run-time loop",
    A.UBound: lambda e: f"'#{e.name}'",
    A.Member: lambda e: f"'{_base(e.base)}.{e.member}'",
    A.At: lambda e: f"an element access '{_base(e.base)}.at(...)'",
    A.Index: lambda e: f"an element of an array '{_base(e.base)}[...]'",
    A.GetIth: "an extent of a shape 'x(i)'",
    A.MdspanLit: "a shape '[...]'",
    A.ItupleLit: "an index tuple '{...}'",
    A.Derive: "a derived index tuple 't {(i), ...}'",
    A.Builtin: lambda e: f"'{e.name}(...)'",
    A.Cast: _cast,
    A.SizeOf: "a size '|...|'",
    A.Select: "'select(...)'",
    A.View: _view,
    A.Call: _call,
    A.TypeArg: lambda e: f"the type argument '{e.name}'",
    # statements
    A.Block: "a block '{ ... }'",
    A.Empty: "an empty statement ';'",
    A.PragmaStmt: "'#pragma croq intrinsic'",
    A.MdspanDecl: "an 'mdspan' declaration",
    A.ItupleDecl: "an 'ituple' declaration",
    A.ScalarDecl: _scalar,
    A.SpannedDecl: _spanned,
    A.FragDecl: "a 'frag' declaration",
    A.EventDecl: "an 'event' declaration",
    A.AssignStmt: "an assignment",
    A.DmaStmt: lambda s: f"'{s.engine}.{s.op}'",
    A.DmaAny: lambda s: f"'{s.engine}.any'",
    A.MapStmt: lambda s: f"'.{s.kind}<{s.storage}>(...)'",
    A.MmaFill: "'mma.fill'",
    A.FragInit: "a 'frag' initialisation",
    A.MmaLoad: "'mma.load'",
    A.MmaOp: _mma,
    A.MmaStore: "'mma.store'",
    A.MmaScale: "'mma.scale'",
    A.MmaCommit: "'mma.commit'",
    A.FragOp: lambda s: f"'{s.op}(...)'",
    A.Wait: "'wait'",
    A.Trigger: "'trigger'",
    A.CallStmt: lambda s: describe(s.call),
    A.Swap: lambda s: f"'{s.kind}(...)'",
    A.Return: "'return'",
    A.Sync: _sync,
    A.Cpp: "'__cpp__(...)'",
    A.Break: "'break'",
    A.Continue: "'continue'",
    A.Yield: "'yield'",
    A.Asm: lambda s: f"inline '{s.keyword}(...)'",
    A.Parallel: lambda s: "'parallel.async'" if s.is_async else "'parallel'",
    A.With: "'with'",
    A.Foreach: "'foreach'",
    A.Apply: "'apply'",
    A.InThreads: lambda s: "'inthreads.async'" if s.is_async else "'inthreads'",
    A.While: "'while'",
    A.If: "'if'",
}
