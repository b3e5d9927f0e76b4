"""PLY grammar for ``__co__`` functions (LANGUAGE.md section 5).

The grammar follows the upstream bison grammar's structure.  Two dialects:

* ``default`` accepts the current upstream syntax and the tutorial / seed-chapter
  forms upstream removed (``.swiz<0..3>``, ``mma.commit``, ``tma.copy.async<ev>``,
  ``.zfill`` on the source view) and records a note naming the modern spelling;
* ``upstream`` rejects those forms the way upstream does.

The parse tables are built once per process (or loaded from the checked-in
``_parsetab.py``; ``python -m croq2triton.frontend.parser --write-tables``
regenerates it).  Nothing is ever written at run time.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import ply.yacc as yacc

from ..errors import CroqError, CroqSyntaxError, Diagnostic, SourceMap, Span
from . import ast as A
from . import cisms, repair, reserved, suggest
from .lexer import CoLexer, IntValue, tokens  # noqa: F401  (PLY reads `tokens`)

DIALECTS = ("default", "upstream")

# what 'mma.' is followed by (LANGUAGE.md 5, mma_stmt)
MMA_MEMBERS = ("fill", "load", "store", "row", "col", "scale")

TOKEN_NAMES = {
    "IDENT": "identifier", "QNAME": "qualified name", "NUM": "integer", "FLOATLIT": "floating-point literal",
    "STRING": "string", "ELEMTYPE": "element type", "INTRINSIC": "intrinsic call", "ARROW": "'=>'",
    "SWAPARROW": "'<->'", "INC": "'++'", "DEC": "'--'", "EQ": "'=='", "NE": "'!='", "LE": "'<='",
    "GE": "'>='", "ANDAND": "'&&'", "OROR": "'||'", "SHL": "'<<'", "SHR": "'>>'", "DOT": "'.'",
    "HASHPLUS": "'#+'", "HASHMINUS": "'#-'", "HASHSTAR": "'#*'", "HASHSLASH": "'#/'",
    "HASHPERCENT": "'#%'", "QQ": "'??'", "GROUP4": "'group-4'", "CO": "'__co__'",
    "ATTR_OPEN": "'[['", "ATTR_SCHED": "'[['", "REMOVED_STAGE": "removed 'stage<N>(' syntax",
    "PRAGMA": "intrinsic pragma", "$end": "end of function",
}  # fmt: skip


def describe(tok_type: str) -> str:
    if tok_type in TOKEN_NAMES:
        return TOKEN_NAMES[tok_type]
    if len(tok_type) == 1:
        return f"'{tok_type}'"
    if tok_type.startswith("M_"):
        return f"'.{tok_type[2:].lower()}'"
    return f"'{tok_type.lower()}'"


def _tok_text(tok: Any) -> str:
    v = tok.value
    if isinstance(v, IntValue):
        return v.text
    if isinstance(v, tuple):
        return str(v[1])
    return str(v)


class _Rules:
    tokens = tokens
    start = "function"

    precedence = (
        ("nonassoc", "IFX"),
        ("nonassoc", "ELSE"),
        ("right", "?", ":"),
        ("left", "OROR"),
        ("left", "ANDAND"),
        ("left", "EQ", "NE"),
        ("left", "<", ">", "LE", "GE"),
        ("left", "SHL", "SHR"),
        ("left", "+", "-"),
        ("left", "*", "/", "%"),
        ("left", "HASHPLUS", "HASHMINUS"),
        ("left", "HASHSTAR", "HASHSLASH", "HASHPERCENT"),
        ("right", "!", "UMINUS"),
        ("left", "&", "^", "|"),
        ("left", "#"),
        ("right", "~"),
    )

    def __init__(self) -> None:
        self.lexer: CoLexer | None = None
        self.smap: SourceMap | None = None
        self.dialect = "default"
        self.notes: list[Diagnostic] = []
        self.parser: Any = None
        # where the parse stopped, as p_error saw it: None (it did not), "token" (at the last token
        # lexed) or "end" (at the end of the function)
        self.failed: str | None = None

    # ------------------------------------------------------------ helpers
    def sp(self, p: Any, a: int = 1, b: int | None = None) -> Span:
        if b is None:
            b = len(p) - 1
        start = p.lexspan(a)[0]
        last = p.lexspan(b)[1]
        end = self.lexer.ends.get(last, last + 1) if self.lexer else last + 1
        return Span(self.smap, start, end)

    def tspan(self, p: Any, i: int) -> Span:
        s = p.lexpos(i)
        return Span(self.smap, s, self.lexer.ends.get(s, s + 1) if self.lexer else s + 1)

    def err(self, msg: str, span: Span, hint: str | None = None) -> CroqSyntaxError:
        return CroqSyntaxError(msg, span, hint)

    def tutorial(self, p: Any, i: int, what: str, modern: str, upstream_msg: str | None = None) -> None:
        """A tutorial-dialect form: a note by default, an error in the upstream dialect."""
        span = self.tspan(p, i)
        if self.dialect == "upstream":
            raise self.err(
                upstream_msg or f"syntax error, unexpected {describe(p.slice[i].type)}", span, f"{what}; {modern}"
            )
        self.notes.append(Diagnostic("note", f"{what} (tutorial dialect); {modern}", span))

    # ------------------------------------------------------------ function
    def p_function(self, p: Any) -> None:
        "function : CO ret_type IDENT '(' params_opt ')' '{' stmts '}'"
        p[0] = A.CoFunction(p[2], p[3], p[5], p[8], span=self.sp(p), name_span=self.tspan(p, 3))

    def p_ret_type(self, p: Any) -> None:
        """ret_type : VOID
        | AUTO
        | STREAM
        | INT
        | BOOL"""
        p[0] = A.TypeRef(p[1], span=self.sp(p))

    def p_ret_type_elem(self, p: Any) -> None:
        "ret_type : ELEMTYPE"
        p[0] = A.TypeRef("elem", p[1], span=self.sp(p))

    def p_ret_type_spanned(self, p: Any) -> None:
        "ret_type : ELEMTYPE param_shape"
        p[0] = A.TypeRef("spanned", p[1], p[2], span=self.sp(p))

    def p_params_opt(self, p: Any) -> None:
        """params_opt :
        | params"""
        p[0] = p[1] if len(p) > 1 else []

    def p_params(self, p: Any) -> None:
        """params : param
        | params ',' param"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_param(self, p: Any) -> None:
        """param : ptype
        | ptype IDENT
        | ptype '&'
        | ptype '&' IDENT
        | GLOBAL ptype
        | GLOBAL ptype IDENT
        | GLOBAL ptype '&'
        | GLOBAL ptype '&' IDENT"""
        items = list(p)[1:]
        storage = None
        if items[0] == "global":
            storage = "global"
            items = items[1:]
        t = items[0]
        ref = "&" in items[1:]
        name = items[-1] if len(items) > 1 and items[-1] != "&" else None
        p[0] = A.Param(t, name, storage, ref, span=self.sp(p))

    def p_ptype(self, p: Any) -> None:
        """ptype : INT
        | BOOL
        | STREAM"""
        p[0] = A.TypeRef(p[1], span=self.sp(p))

    def p_ptype_elem(self, p: Any) -> None:
        "ptype : ELEMTYPE"
        p[0] = A.TypeRef("elem", p[1], span=self.sp(p))

    def p_ptype_spanned(self, p: Any) -> None:
        "ptype : ELEMTYPE param_shape"
        p[0] = A.TypeRef("spanned", p[1], p[2], span=self.sp(p))

    def p_param_shape(self, p: Any) -> None:
        """param_shape : '[' pdims ']'
        | MDSPAN '[' pdims ']'
        | MDSPAN '<' NUM '>'"""
        if p[1] == "[":
            p[0] = A.ParamShape(p[2], "brackets", span=self.sp(p))
        elif p[2] == "[":
            p[0] = A.ParamShape(p[3], "mdspan", span=self.sp(p))
        else:
            p[0] = A.ParamShape(None, "rank", p[3].value, span=self.sp(p))

    def p_pdims(self, p: Any) -> None:
        """pdims : pdim
        | pdims ',' pdim"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_pdim(self, p: Any) -> None:
        """pdim : pexpr
        | IDENT
        | '?'
        | QQ"""
        if isinstance(p[1], A.Node):
            p[0] = p[1]
        elif p.slice[1].type == "IDENT":
            p[0] = A.Name(p[1], span=self.sp(p))
        else:
            p[0] = A.Unknown(p[1], span=self.sp(p))

    def p_pexpr_num(self, p: Any) -> None:
        "pexpr : NUM"
        p[0] = A.IntLit(p[1].value, p[1].text, p[1].type, span=self.sp(p))

    def p_pexpr_bin(self, p: Any) -> None:
        """pexpr : pexpr '+' pexpr
        | pexpr '-' pexpr
        | pexpr '*' pexpr
        | pexpr '/' pexpr
        | pexpr '%' pexpr"""
        p[0] = A.Binary(p[2], p[1], p[3], span=self.sp(p))

    def p_pexpr_paren(self, p: Any) -> None:
        "pexpr : '(' pexpr ')'"
        p[0] = A.Paren(p[2], span=self.sp(p))

    def p_pexpr_neg(self, p: Any) -> None:
        "pexpr : '-' pexpr %prec UMINUS"
        p[0] = A.Unary("-", p[2], span=self.sp(p))

    # ------------------------------------------------------------ statements
    def p_stmts(self, p: Any) -> None:
        """stmts :
        | stmts stmt"""
        if len(p) == 1:
            p[0] = []
        else:
            p[1].append(p[2])
            p[0] = p[1]

    def p_body(self, p: Any) -> None:
        """body : '{' stmts '}'
        | stmt"""
        if len(p) == 4:
            p[0] = A.Block(p[2], span=self.sp(p))
        else:
            p[0] = p[1]

    def p_stmt_simple(self, p: Any) -> None:
        """stmt : decl ';'
        | dma_stmt ';'
        | map_stmt ';'
        | mma_stmt ';'
        | frag_stmt ';'
        | trigger_stmt ';'
        | swap_stmt ';'
        | sync_stmt ';'
        | asm_stmt ';'"""
        p[0] = p[1]

    def p_stmt_compound(self, p: Any) -> None:
        """stmt : parallel_stmt
        | with_stmt
        | foreach_stmt
        | apply_stmt
        | inthreads_stmt
        | if_stmt"""
        p[0] = p[1]

    def p_stmt_assign(self, p: Any) -> None:
        "stmt : assign_list ';'"
        p[0] = A.AssignStmt(p[1], span=self.sp(p))

    def p_stmt_mma_sched(self, p: Any) -> None:
        "stmt : ATTR_SCHED IDENT '(' IDENT '(' nums ')' ')' ']' ']' mma_stmt ';'"
        if p[2] != "schedule" or p[4] != "k_tiles":
            raise self.err("unknown attribute", self.sp(p, 2, 8), "write [[schedule(k_tiles(i, j, ...))]]")
        if not isinstance(p[11], A.MmaOp):
            raise self.err("[[schedule(...)]] only applies to an MMA operation", p[11].span)
        p[11].schedule = p[6]
        p[11].schedule_span = self.sp(p, 6, 6)
        p[0] = p[11]

    def p_nums(self, p: Any) -> None:
        """nums : NUM
        | nums ',' NUM"""
        p[0] = [p[1].value] if len(p) == 2 else p[1] + [p[3].value]

    def p_stmt_wait(self, p: Any) -> None:
        "stmt : WAIT expr_list ';'"
        p[0] = A.Wait(p[2], span=self.sp(p))

    def p_stmt_call(self, p: Any) -> None:
        "stmt : call ';'"
        p[0] = A.CallStmt(p[1], span=self.sp(p))

    def p_stmt_return(self, p: Any) -> None:
        """stmt : RETURN ';'
        | RETURN expr ';'"""
        p[0] = A.Return(p[2] if len(p) == 4 else None, span=self.sp(p))

    def p_stmt_cpp(self, p: Any) -> None:
        "stmt : CPP '(' strings ')' ';'"
        p[0] = A.Cpp(p[3], span=self.sp(p))

    def p_stmt_jump(self, p: Any) -> None:
        """stmt : BREAK ';'
        | CONTINUE ';'
        | YIELD ';'"""
        cls = {"break": A.Break, "continue": A.Continue, "yield": A.Yield}[p[1]]
        p[0] = cls(span=self.sp(p))

    def p_stmt_while(self, p: Any) -> None:
        "stmt : WHILE '(' expr ')' body"
        p[0] = A.While(p[3], p[5], span=self.sp(p))

    def p_stmt_empty(self, p: Any) -> None:
        "stmt : ';'"
        p[0] = A.Empty(span=self.sp(p))

    def p_stmt_pragma(self, p: Any) -> None:
        "stmt : PRAGMA ';'"
        p[0] = A.PragmaStmt(p[1][0], p[1][1], span=self.sp(p))

    # ------------------------------------------------------------ declarations
    def p_rank_opt(self, p: Any) -> None:
        """rank_opt :
        | '<' NUM '>'"""
        p[0] = p[2].value if len(p) == 4 else None

    def p_decl_mdspan(self, p: Any) -> None:
        "decl : MDSPAN rank_opt IDENT ':' expr"
        p[0] = A.MdspanDecl(p[3], p[5], True, p[2], span=self.sp(p))

    def p_decl_mdspan_bad(self, p: Any) -> None:
        "decl : MDSPAN rank_opt IDENT '=' expr"
        raise self.err("must use ':' to initialize a mdspan.", self.tspan(p, 4), f"write 'mdspan {p[3]} : [...]'")

    def p_decl_shape(self, p: Any) -> None:
        "decl : IDENT ':' expr"
        p[0] = A.MdspanDecl(p[1], p[3], False, None, span=self.sp(p))

    def p_decl_ituple(self, p: Any) -> None:
        "decl : ITUPLE rank_opt IDENT '=' expr"
        p[0] = A.ItupleDecl(p[3], p[5], p[2], span=self.sp(p))

    def p_decl_ituple_colon(self, p: Any) -> None:
        "decl : ITUPLE rank_opt IDENT ':' expr"
        raise self.err("must use '=' to initialize an ituple.", self.tspan(p, 4), f"write 'ituple {p[3]} = {{...}}'")

    def p_decl_ituple_noinit(self, p: Any) -> None:
        "decl : ITUPLE rank_opt IDENT"
        raise self.err("an ituple must be initialized.", self.tspan(p, 3), f"write 'ituple {p[3]} = {{...}}'")

    def p_decl_ituple_array(self, p: Any) -> None:
        "decl : ITUPLE rank_opt IDENT '[' expr ']' '=' expr"
        raise self.err(cisms.ITUPLE_ARRAY, self.sp(p, 4, 6), cisms.ITUPLE_ARRAY_HINT)

    def p_scalar_type(self, p: Any) -> None:
        """scalar_type : INT
        | BOOL
        | ELEMTYPE"""
        p[0] = p[1]

    def p_storage(self, p: Any) -> None:
        """storage : LOCAL
        | SHARED
        | GLOBAL"""
        p[0] = p[1]

    def p_decl_scalar(self, p: Any) -> None:
        """decl : scalar_type sdecls
        | MUTABLE scalar_type sdecls
        | MUTABLE sdecls
        | storage scalar_type sdecls"""
        if p[1] == "mutable" and len(p) == 4:
            p[0] = A.ScalarDecl(p[2], p[3], True, span=self.sp(p))
        elif p[1] == "mutable":  # 'mutable x = ...': the type comes from the value
            p[0] = A.ScalarDecl(None, p[2], True, span=self.sp(p))
        elif len(p) == 3:
            p[0] = A.ScalarDecl(p[1], p[2], span=self.sp(p))
        else:
            p[0] = A.ScalarDecl(p[2], p[3], False, p[1], span=self.sp(p))

    def p_sdecls(self, p: Any) -> None:
        """sdecls : sdecl
        | sdecls ',' sdecl"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_sdecl(self, p: Any) -> None:
        """sdecl : IDENT
        | IDENT '=' expr
        | IDENT '=' call
        | IDENT '{' expr '}'"""
        if len(p) == 2:
            p[0] = A.Declarator(p[1], span=self.sp(p))
        elif p[2] == "=":
            p[0] = A.Declarator(p[1], init=p[3], span=self.sp(p))
        else:
            p[0] = A.Declarator(p[1], fill=p[3], span=self.sp(p))

    def p_decl_spanned(self, p: Any) -> None:
        """decl : ELEMTYPE '[' expr_list ']' bdecls
        | storage ELEMTYPE '[' expr_list ']' bdecls"""
        if len(p) == 6:
            p[0] = A.SpannedDecl(p[1], p[3], p[5], span=self.sp(p))
        else:
            p[0] = A.SpannedDecl(p[2], p[4], p[6], p[1], span=self.sp(p))

    def p_decl_spanned_auto(self, p: Any) -> None:
        """decl : ELEMTYPE '[' AUTO ']' bdecls
        | storage ELEMTYPE '[' AUTO ']' bdecls"""
        if len(p) == 6:
            p[0] = A.SpannedDecl(p[1], None, p[5], span=self.sp(p))
        else:
            p[0] = A.SpannedDecl(p[2], None, p[6], p[1], span=self.sp(p))

    def p_bdecls(self, p: Any) -> None:
        """bdecls : bdecl
        | bdecls ',' bdecl"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_bdecl(self, p: Any) -> None:
        """bdecl : IDENT dims
        | IDENT dims '{' expr '}'"""
        fill = p[4] if len(p) == 6 else None
        p[0] = A.Declarator(p[1], fill=fill, dims=p[2], span=self.sp(p))

    def p_dims(self, p: Any) -> None:
        """dims :
        | dims '[' expr ']'"""
        p[0] = [] if len(p) == 1 else p[1] + [p[3]]

    def p_decl_frag(self, p: Any) -> None:
        "decl : FRAG ELEMTYPE '[' expr_list ']' bdecls"
        p[0] = A.FragDecl(p[2], p[4], p[6], span=self.sp(p))

    def p_decl_event(self, p: Any) -> None:
        """decl : EVENT rank_opt edecls
        | storage EVENT rank_opt edecls"""
        if len(p) == 4:
            p[0] = A.EventDecl(p[3], None, p[2], span=self.sp(p))
        else:
            p[0] = A.EventDecl(p[4], p[1], p[3], span=self.sp(p))

    def p_edecls(self, p: Any) -> None:
        """edecls : edecl
        | edecls ',' edecl"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_edecl(self, p: Any) -> None:
        """edecl : IDENT dims
        | IDENT dims '=' IDENT"""
        ready = False
        if len(p) == 5:
            if p[4] != "ready":
                raise self.err(f"an event can only be initialised as 'ready', not '{p[4]}'", self.tspan(p, 4))
            ready = True
        p[0] = A.EventDeclarator(p[1], p[2], ready, span=self.sp(p))

    # ------------------------------------------------------------ assignment
    def p_assign_list(self, p: Any) -> None:
        """assign_list : assign
        | assign_list ',' assign"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_assign(self, p: Any) -> None:
        """assign : IDENT '=' expr
        | IDENT '=' call
        | elem_access '=' expr
        | elem_access '=' call"""
        target = p[1] if isinstance(p[1], A.Node) else A.Name(p[1], span=self.tspan(p, 1))
        p[0] = A.Assign(target, "=", p[3], span=self.sp(p))

    def p_assign_op(self, p: Any) -> None:
        """assign : IDENT '+' '=' expr
        | IDENT '-' '=' expr
        | IDENT '*' '=' expr
        | IDENT '/' '=' expr
        | IDENT '%' '=' expr
        | elem_access '+' '=' expr
        | elem_access '-' '=' expr
        | elem_access '*' '=' expr
        | elem_access '/' '=' expr
        | elem_access '%' '=' expr"""
        target = p[1] if isinstance(p[1], A.Node) else A.Name(p[1], span=self.tspan(p, 1))
        p[0] = A.Assign(target, p[2], p[4], span=self.sp(p))

    def p_assign_derive(self, p: Any) -> None:
        "assign : IDENT '=' IDENT '{' expr_list '}'"
        base = A.Name(p[3], span=self.tspan(p, 3))
        p[0] = A.Assign(
            A.Name(p[1], span=self.tspan(p, 1)), "=", A.Derive(base, p[5], span=self.sp(p, 3)), span=self.sp(p)
        )

    def p_elem_access(self, p: Any) -> None:
        """elem_access : IDENT M_AT '(' expr_list ')'
        | IDENT M_DATA M_AT '(' expr_list ')'
        | IDENT M_MDATA M_AT '(' expr_list ')'"""
        base: A.Expr = A.Name(p[1], span=self.tspan(p, 1))
        if len(p) == 7:
            base = A.Member(base, p[2][1:], span=self.sp(p, 1, 2))
            p[0] = A.At(base, p[5], span=self.sp(p))
        else:
            p[0] = A.At(base, p[4], span=self.sp(p))

    # ------------------------------------------------------------ DMA / TMA
    def p_dma_stmt(self, p: Any) -> None:
        """dma_stmt : dma_core
        | IDENT '=' dma_core"""
        if len(p) == 4:
            p[3].result = p[1]
            p[3].span = self.sp(p)
            p[0] = p[3]
        else:
            p[0] = p[1]

    def p_dma_any(self, p: Any) -> None:
        """dma_stmt : IDENT '=' DMA M_ANY
        | IDENT '=' TMA M_ANY"""
        p[0] = A.DmaAny(p[1], p[3], span=self.sp(p))

    def p_engine(self, p: Any) -> None:
        """engine : DMA
        | TMA"""
        p[0] = p[1]

    def p_dma_head(self, p: Any) -> None:
        """dma_head : engine M_COPY
        | engine M_LOAD"""
        if p[2] == ".load" and p[1] == "dma":
            raise self.err("'.load' is a TMA-only operation.", self.tspan(p, 2), "use 'dma.copy' (or 'tma.load')")
        p[0] = (p[1], p[2][1:], None, self.tspan(p, 2))

    def p_dma_head_pad(self, p: Any) -> None:
        "dma_head : engine M_PAD '<' '{' expr_list '}' ',' '{' expr_list '}' ',' '{' expr_list '}' ',' cfg_value '>'"
        cfg = [A.ItupleLit(p[5]), A.ItupleLit(p[9]), A.ItupleLit(p[13]), p[16]]
        p[0] = (p[1], "pad", cfg, self.tspan(p, 2))

    def p_dma_head_transp(self, p: Any) -> None:
        "dma_head : engine M_TRANSP '<' nums '>'"
        cfg = [A.IntLit(v, str(v)) for v in p[4]]
        p[0] = (p[1], "transp", cfg, self.tspan(p, 2))

    def p_cfg_value(self, p: Any) -> None:
        """cfg_value : literal
        | '-' literal
        | IDENT"""
        if len(p) == 3:
            p[0] = A.Unary("-", p[2], span=self.sp(p))
        elif isinstance(p[1], A.Node):
            p[0] = p[1]
        else:
            p[0] = A.Name(p[1], span=self.sp(p))

    def p_dma_async_opt(self, p: Any) -> None:
        """dma_async_opt :
        | M_ASYNC
        | M_ASYNC '<' event_ref '>'"""
        if len(p) == 1:
            p[0] = (False, None)
        elif len(p) == 2:
            p[0] = (True, None)
        else:
            self.tutorial(
                p, 2, "'.async<event>' binds the copy to an event", "write 'f = tma.copy.async ...; trigger ev after f;'",
                "syntax error, unexpected '<'",
            )  # fmt: skip
            p[0] = (True, p[3])

    def p_event_ref(self, p: Any) -> None:
        """event_ref : IDENT
        | event_ref '[' expr ']'
        | IDENT M_AT '(' expr ')'"""
        if len(p) == 2:
            p[0] = A.Name(p[1], span=self.sp(p))
        elif p[2] == "[":
            p[0] = A.Index(p[1], [p[3]], span=self.sp(p))
        else:
            p[0] = A.At(A.Name(p[1], span=self.tspan(p, 1)), [p[4]], span=self.sp(p))

    def p_dma_attrs(self, p: Any) -> None:
        """dma_attrs :
        | dma_attrs dma_attr"""
        p[0] = [] if len(p) == 1 else p[1] + [p[2]]

    def p_dma_attr(self, p: Any) -> None:
        """dma_attr : M_SWIZ
        | M_SWIZ '<' NUM '>'
        | M_ZFILL
        | M_MULTICAST
        | M_SP
        | M_SP '<' NUM ':' NUM '>'
        | M_SP '<' NUM ',' NUM '>'
        | M_PROMOTE '<' NUM '>'
        | M_EVICT_FIRST
        | M_EVICT_LAST"""
        name = p.slice[1].type[2:].lower()
        args = None
        if name == "swiz" and len(p) == 5:
            args = [self.check_swiz(p, 3)]
        elif name == "sp" and len(p) == 7:
            args = [p[3].value, p[5].value]
        elif name == "promote":
            if p[3].value not in (64, 128, 256):
                raise self.err("L2 promotion size must be 64, 128 or 256", self.tspan(p, 3))
            args = [p[3].value]
        p[0] = A.DmaAttr(name, args, span=self.sp(p))

    def check_swiz(self, p: Any, i: int) -> int:
        v = p[i].value
        if v in (32, 64, 128):
            return v
        if v in (0, 1, 2, 3) and self.dialect == "default":
            modern = {0: "'.swiz' (none)", 1: "'.swiz<32>'", 2: "'.swiz<64>'", 3: "'.swiz<128>'"}[v]
            self.notes.append(
                Diagnostic(
                    "note", f"'.swiz<{v}>' is a tutorial swizzle level; upstream spells it {modern}", self.tspan(p, i)
                )
            )
            return v
        hint = "use 32, 64 or 128 (bytes)" + (", or a tutorial level 0..3" if self.dialect == "default" else "")
        raise self.err("swizzle value must be 128, 64, or 32", self.tspan(p, i), hint)

    def p_dma_core(self, p: Any) -> None:
        """dma_core : dma_head dma_async_opt dma_attrs expr ARROW dma_dst
        | dma_head dma_async_opt dma_attrs expr ARROW dma_dst AFTER IDENT"""
        engine, op, cfg, op_span = p[1]
        is_async, event = p[2]
        attrs: list[A.DmaAttr] = p[3]
        seen_swiz = False
        for at in attrs:
            if at.name in ("evict_first", "evict_last"):
                if not (engine == "tma" and op == "load"):
                    raise self.err(
                        "TMA L2 eviction modifiers are only valid on 'tma.load'.",
                        op_span,
                        "write 'tma.load' for loads with hints",
                    )
                if seen_swiz:
                    raise self.err("TMA eviction modifier must precede '.swiz'.", at.span, "move it before '.swiz<N>'")
            if at.name == "swiz":
                seen_swiz = True
        src = p[4]
        if isinstance(src, A.View) and src.ops and src.ops[-1].kind == "zfill":
            # the tutorial's `src.zfill => dst` (note recorded when the op was parsed) is the copy
            # modifier: `dma.copy.zfill src => dst`
            zfill = src.ops[-1]
            src = A.View(src.base, src.ops[:-1], span=src.span) if len(src.ops) > 1 else src.base
            if not any(at.name == "zfill" for at in attrs):
                attrs = [*attrs, A.DmaAttr("zfill", None, span=zfill.span)]
        dst, storage = p[6]
        after = p[8] if len(p) == 9 else None
        p[0] = A.DmaStmt(engine, op, src, dst, None, cfg, is_async, attrs, after, event, storage, span=self.sp(p))

    def p_dma_dst(self, p: Any) -> None:
        """dma_dst : expr
        | storage"""
        if isinstance(p[1], str):
            p[0] = (A.Name(p[1], span=self.sp(p)), True)
        else:
            p[0] = (p[1], False)

    def p_map_stmt(self, p: Any) -> None:
        """map_stmt : IDENT '=' expr M_MAP '<' storage '>' '(' expr ',' expr ')'
        | IDENT '=' expr M_REMAP '<' storage '>' '(' expr ',' expr ')'"""
        p[0] = A.MapStmt(p[1], p[3], p[4][1:], p[6], p[9], p[11], span=self.sp(p))

    # ------------------------------------------------------------ MMA
    def p_elem_suffix_opt(self, p: Any) -> None:
        """elem_suffix_opt :
        | DOT ELEMTYPE"""
        p[0] = p[2] if len(p) == 3 else None

    def p_mma_fill_decl(self, p: Any) -> None:
        "mma_stmt : IDENT '=' MMA M_FILL elem_suffix_opt expr"
        p[0] = A.MmaFill(p[6], p[1], None, p[5], span=self.sp(p))

    def p_mma_fill_into(self, p: Any) -> None:
        "mma_stmt : MMA M_FILL elem_suffix_opt frag_ref ',' expr"
        p[0] = A.MmaFill(p[6], None, p[4], p[3], span=self.sp(p))

    def p_frag_init(self, p: Any) -> None:
        """mma_stmt : FRAG IDENT dims '{' expr '}'
        | FRAG DOT ELEMTYPE IDENT dims '{' expr '}'"""
        if len(p) == 7:
            p[0] = A.FragInit(p[2], p[3], p[5], None, span=self.sp(p))
        else:
            p[0] = A.FragInit(p[4], p[5], p[7], p[3], span=self.sp(p))

    def p_frag_ref(self, p: Any) -> None:
        """frag_ref : IDENT
        | frag_ref '[' expr ']'"""
        if len(p) == 2:
            p[0] = A.Name(p[1], span=self.sp(p))
        else:
            p[0] = A.Index(p[1], [p[3]], span=self.sp(p))

    def p_mma_load(self, p: Any) -> None:
        "mma_stmt : IDENT '=' MMA M_LOAD mma_load_mods expr"
        frag, swiz, swiz_given, is_async = p[5]
        p[0] = A.MmaLoad(p[6], p[1], None, frag, swiz, swiz_given, is_async, span=self.sp(p))

    def p_mma_load_into(self, p: Any) -> None:
        "mma_stmt : MMA M_LOAD mma_load_mods expr ',' frag_ref"
        frag, swiz, swiz_given, is_async = p[3]
        p[0] = A.MmaLoad(p[4], None, p[6], frag, swiz, swiz_given, is_async, span=self.sp(p))

    def p_mma_load_mods(self, p: Any) -> None:
        "mma_load_mods : frag_opt swiz_opt async_opt"
        p[0] = (p[1], p[2][0], p[2][1], p[3])

    def p_frag_opt(self, p: Any) -> None:
        """frag_opt :
        | DOT FRAG"""
        p[0] = len(p) == 3

    def p_swiz_opt(self, p: Any) -> None:
        """swiz_opt :
        | M_SWIZ
        | M_SWIZ '<' NUM '>'"""
        if len(p) == 1:
            p[0] = (None, False)
        elif len(p) == 2:
            p[0] = (None, True)
        else:
            p[0] = (self.check_swiz(p, 3), True)

    def p_async_opt(self, p: Any) -> None:
        """async_opt :
        | M_ASYNC"""
        p[0] = len(p) == 2

    def p_layout(self, p: Any) -> None:
        """layout : M_ROW M_ROW
        | M_ROW M_COL
        | M_COL M_ROW
        | M_COL M_COL"""
        p[0] = (p[1][1:], p[2][1:])

    def p_mma_op(self, p: Any) -> None:
        "mma_stmt : MMA layout frag_ref ',' expr ',' expr"
        p[0] = A.MmaOp(p[2], p[3], p[5], p[7], span=self.sp(p))

    def p_mma_op_async(self, p: Any) -> None:
        "mma_stmt : IDENT '=' MMA layout M_ASYNC frag_ref ',' expr ',' expr"
        p[0] = A.MmaOp(p[4], p[6], p[8], p[10], "async", p[1], span=self.sp(p))

    def p_mma_op_scale(self, p: Any) -> None:
        "mma_stmt : MMA layout M_SCALE frag_ref ',' expr ',' expr ',' expr ',' expr"
        p[0] = A.MmaOp(p[2], p[4], p[6], p[8], "scale", None, [p[10], p[12]], span=self.sp(p))

    def p_mma_op_sp(self, p: Any) -> None:
        """mma_stmt : MMA layout M_SP frag_ref ',' expr ',' expr
        | MMA layout M_SP frag_ref ',' expr ',' expr ',' frag_ref"""
        extra = [p[10]] if len(p) == 11 else []
        p[0] = A.MmaOp(p[2], p[4], p[6], p[8], "sp", None, extra, span=self.sp(p))

    def p_mma_store(self, p: Any) -> None:
        """mma_stmt : MMA M_STORE frag_ref ',' expr
        | MMA M_STORE M_ASYNC frag_ref ',' expr
        | MMA M_STORE M_TRANSP frag_ref ',' expr"""
        if len(p) == 6:
            p[0] = A.MmaStore(p[3], p[5], span=self.sp(p))
        else:
            p[0] = A.MmaStore(p[4], p[6], p[3][1:], span=self.sp(p))

    def p_mma_store_mask(self, p: Any) -> None:
        """mma_stmt : MMA M_STORE M_MASK frag_ref ',' expr ',' expr
        | MMA M_STORE M_MASK frag_ref ',' expr ',' expr ',' expr"""
        extra = [p[8]] + ([p[10]] if len(p) == 11 else [])
        p[0] = A.MmaStore(p[4], p[6], "mask", extra, span=self.sp(p))

    def p_mma_scale(self, p: Any) -> None:
        "mma_stmt : MMA M_SCALE frag_ref ',' expr ',' expr"
        p[0] = A.MmaScale(p[3], p[5], p[7], span=self.sp(p))

    def p_mma_commit(self, p: Any) -> None:
        "mma_stmt : MMA DOT IDENT"
        if p[3] != "commit":
            near = [m for m in suggest.member(p[3]) if m in MMA_MEMBERS]
            raise self.err(
                f"unknown member '.{p[3]}' of 'mma'" + (f"; {suggest.did_you_mean(near, '.')}" if near else ""),
                self.sp(p, 2, 3),
                "'mma' is followed by " + suggest.one_of("." + m for m in MMA_MEMBERS),
            )
        if self.dialect == "upstream":
            raise self.err(
                "syntax error, unexpected '.'",
                self.tspan(p, 2),
                "'mma.commit' was removed upstream: the commit is inferred from 'wait' on MMA futures",
            )
        self.notes.append(
            Diagnostic(
                "note",
                "'mma.commit' is tutorial dialect; upstream infers the commit from 'wait' on MMA futures",
                self.sp(p),
            )
        )
        p[0] = A.MmaCommit(span=self.sp(p))

    def p_frag_stmt(self, p: Any) -> None:
        """frag_stmt : REDUCE_MAX '(' frag_ref ',' frag_ref ',' NUM ')'
        | REDUCE_SUM '(' frag_ref ',' frag_ref ',' NUM ')'
        | ALL_REDUCE_SUM '(' frag_ref ')'
        | COPY '(' frag_ref ',' frag_ref ')'"""
        if len(p) == 9:
            p[0] = A.FragOp(p[1], [p[3], p[5]], p[7].value, span=self.sp(p))
        elif len(p) == 5:
            p[0] = A.FragOp(p[1], [p[3]], span=self.sp(p))
        else:
            p[0] = A.FragOp(p[1], [p[3], p[5]], span=self.sp(p))

    # ------------------------------------------------------------ sync & events
    def p_trigger_stmt(self, p: Any) -> None:
        """trigger_stmt : TRIGGER expr_list
        | TRIGGER expr_list AFTER expr_list
        | TRIGGER DOT CLUSTER expr_list
        | TRIGGER DOT CLUSTER expr_list AFTER expr_list"""
        cluster = p[2] == "."
        items = p[4] if cluster else p[2]
        after = p[len(p) - 1] if "after" in list(p)[1:] else []
        p[0] = A.Trigger(items, after, cluster, span=self.sp(p))

    def p_swap_stmt(self, p: Any) -> None:
        """swap_stmt : SWAP '(' idents ')'
        | SWAP idents
        | ROTATE '(' idents ')'
        | ROTATE idents"""
        parens = len(p) == 5
        names = p[3] if parens else p[2]
        if p[1] == "swap" and len(names) != 2:
            raise self.err(
                "Builtin function 'swap' accept exact two parameters.",
                self.sp(p, 3 if parens else 2),
                "swap(a, b) exchanges two buffers or futures; rotate(a, b, c, ...) moves several round",
            )
        if p[1] == "rotate" and len(names) < 2:
            raise self.err(
                "Builtin function 'rotate' needs at least two parameters.",
                self.sp(p, 3 if parens else 2),
                "rotate(a, b, c) moves b's buffer to a, c's to b and a's to c",
            )
        p[0] = A.Swap(p[1], names, parens, span=self.sp(p))

    def p_idents(self, p: Any) -> None:
        """idents : IDENT
        | idents ',' IDENT"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_level(self, p: Any) -> None:
        """level : BLOCK
        | GROUP4
        | GROUP
        | THREAD
        | CLUSTER
        | DEVICE
        | TERM"""
        p[0] = p[1]

    def p_sync_stmt(self, p: Any) -> None:
        """sync_stmt : SYNC DOT storage
        | SYNC DOT BARRIER ':' level
        | SYNC DOT FENCE ':' level
        | SYNC DOT FENCE ':' level '<' storage '>'"""
        if len(p) == 4:
            p[0] = A.Sync(p[3], span=self.sp(p))
        elif len(p) == 6:
            p[0] = A.Sync(p[3], p[5], span=self.sp(p))
        else:
            p[0] = A.Sync("fence", p[5], p[7], span=self.sp(p))

    def p_asm_stmt(self, p: Any) -> None:
        """asm_stmt : ASM asm_vol '(' strings ')'
        | ASM asm_vol '(' strings ':' asm_ops ')'
        | ASM asm_vol '(' strings ':' asm_ops ':' asm_ops ')'
        | ASM asm_vol '(' strings ':' asm_ops ':' asm_ops ':' asm_clobbers ')'"""
        outs = p[6] if len(p) >= 8 else None
        ins = p[8] if len(p) >= 10 else None
        clob = p[10] if len(p) == 12 else None
        p[0] = A.Asm(p[4], outs, ins, clob, p[2], p[1], span=self.sp(p))

    def p_asm_vol(self, p: Any) -> None:
        """asm_vol :
        | VOLATILE"""
        p[0] = len(p) == 2

    def p_asm_ops(self, p: Any) -> None:
        """asm_ops :
        | asm_oplist"""
        p[0] = p[1] if len(p) == 2 else []

    def p_asm_oplist(self, p: Any) -> None:
        """asm_oplist : asm_op
        | asm_oplist ',' asm_op"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_asm_op(self, p: Any) -> None:
        """asm_op : strings '(' expr ')'
        | '[' IDENT ']' strings '(' expr ')'"""
        if len(p) == 5:
            p[0] = A.AsmOperand(p[1], p[3], span=self.sp(p))
        else:
            p[0] = A.AsmOperand(p[4], p[6], p[2], span=self.sp(p))

    def p_asm_clobbers(self, p: Any) -> None:
        """asm_clobbers : strings
        | asm_clobbers ',' strings"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    # ------------------------------------------------------------ parallel & loops
    def p_parallel_stmt(self, p: Any) -> None:
        """parallel_stmt : pb_attrs PARALLEL par_async par_stream pbys body"""
        p[0] = A.Parallel(p[5], p[6], p[1], p[3], p[4], span=self.sp(p, 2) if not p[1] else self.sp(p))

    def p_pb_attrs(self, p: Any) -> None:
        """pb_attrs :
        | pb_attrs ATTR_OPEN IDENT '(' expr_list ')' ']' ']'"""
        if len(p) == 1:
            p[0] = []
            return
        if p[3] not in ("launch_bounds", "maxnreg"):
            raise self.err(f"unknown attribute '{p[3]}'", self.tspan(p, 3))
        p[0] = p[1] + [A.PbAttr(p[3], p[5], span=self.sp(p, 2))]

    def p_par_async(self, p: Any) -> None:
        """par_async :
        | M_ASYNC"""
        p[0] = len(p) == 2

    def p_par_stream(self, p: Any) -> None:
        """par_stream :
        | '<' IDENT '>'"""
        p[0] = p[2] if len(p) == 4 else None

    def p_pbys(self, p: Any) -> None:
        """pbys : pby
        | pbys ',' pby"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_pby_single(self, p: Any) -> None:
        """pby : BY expr level_opt
        | IDENT BY expr level_opt"""
        name = p[1] if len(p) == 5 else None
        bound = p[len(p) - 2]
        level = p[len(p) - 1]
        bracketed = False
        if isinstance(bound, A.MdspanLit):
            if len(bound.items) != 1:
                who = f"parallel variable '{name}'" if name else "anonymous parallel variable"
                raise self.err(
                    f"The {who} can not be assigned multiple bounds.",
                    self.tspan(p, 1) if name else bound.span,
                    f"write 'parallel {{{name or 'x'}, ...}} by [...]' for several dimensions",
                )
            bound = bound.items[0]
            bracketed = True
        p[0] = A.PBy([bound], name, None, *level, bracketed=bracketed, span=self.sp(p))

    def p_pby_multi(self, p: Any) -> None:
        """pby : '{' idents '}' BY '[' expr_list ']' level_opt
        | IDENT '=' '{' idents '}' BY '[' expr_list ']' level_opt"""
        if len(p) == 9:
            p[0] = A.PBy(p[6], None, p[2], *p[8], span=self.sp(p))
        else:
            p[0] = A.PBy(p[8], p[1], p[4], *p[10], span=self.sp(p))

    def p_level_opt(self, p: Any) -> None:
        """level_opt :
        | ':' level
        | ':' level '(' IDENT ')'
        | ':' level '<' COOPERATIVE '>'
        | ':' level '(' IDENT ')' '<' COOPERATIVE '>'"""
        if len(p) == 1:
            p[0] = (None, None, False)
        elif len(p) == 3:
            p[0] = (p[2], None, False)
        elif len(p) == 6 and p[3] == "(":
            p[0] = (p[2], p[4], False)
        elif len(p) == 6:
            p[0] = (p[2], None, True)
        else:
            p[0] = (p[2], p[4], True)

    def p_with_stmt(self, p: Any) -> None:
        """with_stmt : WITH withins body
        | WITH withins WHERE binds body"""
        if len(p) == 4:
            p[0] = A.With(p[2], p[3], span=self.sp(p))
        else:
            p[0] = A.With(p[2], p[5], p[4], span=self.sp(p))

    def p_binds(self, p: Any) -> None:
        """binds : IDENT SWAPARROW IDENT
        | binds ',' IDENT SWAPARROW IDENT"""
        p[0] = [(p[1], p[3])] if len(p) == 4 else p[1] + [(p[3], p[5])]

    def p_withins(self, p: Any) -> None:
        """withins : within
        | withins ',' within"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_within(self, p: Any) -> None:
        """within : IDENT IN shape
        | '{' idents '}' IN shape
        | IDENT '=' '{' idents '}' IN shape"""
        if len(p) == 4:
            p[0] = A.Within(p[3], p[1], None, span=self.sp(p))
        elif len(p) == 6:
            p[0] = A.Within(p[5], None, p[2], span=self.sp(p))
        else:
            p[0] = A.Within(p[7], p[1], p[4], span=self.sp(p))

    def p_shape(self, p: Any) -> None:
        """shape : shape_term
        | shape '+' shape_term
        | shape '-' shape_term
        | shape '*' shape_term
        | shape '/' shape_term
        | shape '%' shape_term"""
        p[0] = p[1] if len(p) == 2 else A.Binary(p[2], p[1], p[3], span=self.sp(p))

    def p_shape_term(self, p: Any) -> None:
        """shape_term : '[' expr_list ']'
        | '{' expr_list '}'
        | NUM
        | '-' NUM
        | IDENT
        | IDENT M_SPAN
        | IDENT '[' expr_list ']'
        | IDENT M_SPAN '[' expr_list ']'"""
        s = self.sp(p)
        if p[1] == "[":
            p[0] = A.MdspanLit(p[2], span=s)
        elif p[1] == "{":
            p[0] = A.ItupleLit(p[2], span=s)
        elif p[1] == "-":
            p[0] = A.Unary("-", A.IntLit(p[2].value, p[2].text, p[2].type, span=self.tspan(p, 2)), span=s)
        elif isinstance(p[1], IntValue):
            p[0] = A.IntLit(p[1].value, p[1].text, p[1].type, span=s)
        else:
            base: A.Expr = A.Name(p[1], span=self.tspan(p, 1))
            rest = list(p)[2:]
            if rest and rest[0] == ".span":
                base = A.Member(base, "span", span=self.sp(p, 1, 2))
                rest = rest[1:]
            if rest:
                base = A.Index(base, rest[1], span=s)
            p[0] = base

    def p_foreach_within(self, p: Any) -> None:
        """foreach_stmt : FOREACH withins suffixes_opt body"""
        p[0] = A.Foreach(p[2], p[4], p[3], span=self.sp(p))

    def p_foreach_range(self, p: Any) -> None:
        """foreach_stmt : FOREACH ranges suffixes_opt body"""
        p[0] = A.Foreach(p[2], p[4], p[3], span=self.sp(p))

    def p_ranges(self, p: Any) -> None:
        """ranges : range
        | ranges ',' range"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_range(self, p: Any) -> None:
        """range : IDENT
        | IDENT '(' slice ')'
        | IDENT '=' IDENT
        | IDENT '=' IDENT '(' slice ')'"""
        if len(p) == 2:
            p[0] = A.RangeItem(p[1], span=self.sp(p))
        elif len(p) == 5:
            p[0] = A.RangeItem(p[1], None, *p[3], span=self.sp(p))
        elif len(p) == 4:
            p[0] = A.RangeItem(p[3], p[1], span=self.sp(p))
        else:
            p[0] = A.RangeItem(p[3], p[1], *p[5], span=self.sp(p))

    def p_slice(self, p: Any) -> None:
        """slice : expr_opt ':' expr_opt
        | expr_opt ':' expr_opt ':'
        | expr_opt ':' expr_opt ':' NUM
        | expr_opt ':' expr_opt ':' '-' NUM"""
        step = None
        if len(p) == 6:
            step = A.IntLit(p[5].value, p[5].text, p[5].type, span=self.tspan(p, 5))
        elif len(p) == 7:
            step = A.Unary("-", A.IntLit(p[6].value, p[6].text, p[6].type), span=self.sp(p, 5, 6))
        p[0] = (p[1], p[3], step, True, len(p) >= 5)

    def p_expr_opt(self, p: Any) -> None:
        """expr_opt :
        | expr"""
        p[0] = p[1] if len(p) == 2 else None

    def p_suffixes_opt(self, p: Any) -> None:
        """suffixes_opt :
        | ':' suffixes"""
        p[0] = p[2] if len(p) == 3 else []

    def p_suffixes(self, p: Any) -> None:
        """suffixes : suffix
        | suffixes ',' suffix"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_suffix(self, p: Any) -> None:
        """suffix : UNROLL
        | UNROLL '(' NUM ')'
        | VECTORIZE '(' IDENT ',' expr ')'"""
        if len(p) == 2:
            p[0] = A.LoopSuffix("unroll", span=self.sp(p))
        elif len(p) == 5:
            if p[3].value <= 0:  # upstream's parser rejects it with this message
                raise self.err(
                    "unroll factor must be a positive integer", self.tspan(p, 3), "write ': unroll(N)' with N >= 1"
                )
            p[0] = A.LoopSuffix("unroll", [A.IntLit(p[3].value, p[3].text, p[3].type)], span=self.sp(p))
        else:
            p[0] = A.LoopSuffix("vectorize", [A.Name(p[3]), p[5]], span=self.sp(p))

    def p_apply_stmt(self, p: Any) -> None:
        "apply_stmt : APPLY '{' idents '}' IN IDENT M_SPAN body"
        p[0] = A.Apply(p[3], p[6], p[8], span=self.sp(p))

    def p_inthreads_stmt(self, p: Any) -> None:
        """inthreads_stmt : INTHREADS '(' expr ')' body
        | INTHREADS M_ASYNC '(' expr ')' body"""
        if len(p) == 6:
            p[0] = A.InThreads(p[3], p[5], False, span=self.sp(p))
        else:
            p[0] = A.InThreads(p[4], p[6], True, span=self.sp(p))

    def p_if_stmt(self, p: Any) -> None:
        """if_stmt : IF '(' cond ')' body %prec IFX
        | IF '(' cond ')' body ELSE body"""
        p[0] = A.If(p[3], p[5], p[7] if len(p) == 8 else None, span=self.sp(p))

    def p_cond(self, p: Any) -> None:
        """cond : expr
        | call"""
        p[0] = p[1]

    # ------------------------------------------------------------ calls
    def p_call(self, p: Any) -> None:
        """call : CALL qname '(' args_opt ')'
        | CALL qname '<' targs '>' '(' args_opt ')'
        | INTRINSIC '(' args_opt ')'
        | INTRINSIC '<' targs '>' '(' args_opt ')'"""
        if p[1] == "call":
            if len(p) == 6:
                p[0] = A.Call("call", p[2], p[4], span=self.sp(p))
            else:
                p[0] = A.Call("call", p[2], p[7], p[4], span=self.sp(p))
        elif len(p) == 5:
            p[0] = A.Call("intrinsic", p[1], p[3], span=self.sp(p))
        else:
            p[0] = A.Call("intrinsic", p[1], p[6], p[3], span=self.sp(p))

    def p_call_builtin(self, p: Any) -> None:
        """call : LIB_CALL '(' expr_list ')'
        | ATOMIC '(' expr_list ')'
        | BARFN '(' expr_list ')'"""
        kind = {"LIB_CALL": "lib", "ATOMIC": "atomic", "BARFN": "bar"}[p.slice[1].type]
        p[0] = A.Call(kind, p[1], p[3], span=self.sp(p))

    def p_call_assert(self, p: Any) -> None:
        "call : ASSERT '(' expr ',' strings ')'"
        p[0] = A.Call("assert", "assert", [p[3], p[5]], span=self.sp(p))

    def p_call_print(self, p: Any) -> None:
        """call : PRINT '(' expr_list ')'
        | PRINTLN '(' expr_list ')'
        | PRINT '!' '(' expr_list ')'
        | PRINTLN '!' '(' expr_list ')'"""
        bang = p[2] == "!"
        p[0] = A.Call(p[1], p[1], p[4] if bang else p[3], None, bang, span=self.sp(p))

    def p_qname(self, p: Any) -> None:
        """qname : IDENT
        | QNAME"""
        p[0] = p[1]

    def p_args_opt(self, p: Any) -> None:
        """args_opt :
        | args"""
        p[0] = p[1] if len(p) == 2 else []

    def p_args(self, p: Any) -> None:
        """args : arg
        | args ',' arg"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_arg(self, p: Any) -> None:
        """arg : expr
        | NULLPTR"""
        p[0] = p[1] if isinstance(p[1], A.Node) else A.NullPtr(span=self.sp(p))

    def p_targs(self, p: Any) -> None:
        """targs : targ
        | targs ',' targ"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_targ_leaf(self, p: Any) -> None:
        """targ : NUM
        | '-' NUM
        | qname
        | qname M_SPAN
        | INT
        | BOOL
        | ELEMTYPE
        | '#' IDENT"""
        s = self.sp(p)
        t1 = p.slice[1].type
        if isinstance(p[1], IntValue):
            p[0] = A.IntLit(p[1].value, p[1].text, p[1].type, span=s)
        elif p[1] == "-":
            p[0] = A.Unary("-", A.IntLit(p[2].value, p[2].text, p[2].type, span=self.tspan(p, 2)), span=s)
        elif p[1] == "#":
            p[0] = A.UBound(p[2], span=s)
        elif t1 in ("INT", "BOOL", "ELEMTYPE"):
            p[0] = A.TypeArg(p[1], span=s)
        elif len(p) == 3:
            p[0] = A.Member(A.Name(p[1], span=self.tspan(p, 1)), "span", span=s)
        else:
            p[0] = A.Name(p[1], span=s)

    def p_targ_bin(self, p: Any) -> None:
        """targ : targ '+' targ
        | targ '-' targ
        | targ '*' targ
        | targ '/' targ
        | targ '%' targ
        | targ '#' targ"""
        p[0] = A.Binary(p[2], p[1], p[3], span=self.sp(p))

    def p_targ_cdiv(self, p: Any) -> None:
        "targ : CDIV '(' targ ',' targ ')'"
        p[0] = A.Builtin("cdiv", [p[3], p[5]], span=self.sp(p))

    def p_targ_getith(self, p: Any) -> None:
        """targ : targ '(' NUM ')'
        | targ '(' IDENT ')'"""
        idx = A.IntLit(p[3].value, p[3].text, p[3].type) if isinstance(p[3], IntValue) else A.Name(p[3])
        p[0] = A.GetIth(p[1], idx, span=self.sp(p))

    # ------------------------------------------------------------ expressions
    def p_expr_list(self, p: Any) -> None:
        """expr_list : expr
        | expr_list ',' expr"""
        p[0] = [p[1]] if len(p) == 2 else p[1] + [p[3]]

    def p_expr_binary(self, p: Any) -> None:
        """expr : expr '+' expr
        | expr '-' expr
        | expr '*' expr
        | expr '/' expr
        | expr '%' expr
        | expr '<' expr
        | expr '>' expr
        | expr LE expr
        | expr GE expr
        | expr EQ expr
        | expr NE expr
        | expr ANDAND expr
        | expr OROR expr
        | expr SHL expr
        | expr SHR expr
        | expr '&' expr
        | expr '|' expr
        | expr '^' expr
        | expr '#' expr
        | expr HASHPLUS expr
        | expr HASHMINUS expr
        | expr HASHSTAR expr
        | expr HASHSLASH expr
        | expr HASHPERCENT expr"""
        p[0] = A.Binary(p[2], p[1], p[3], span=self.sp(p))

    def p_expr_ternary(self, p: Any) -> None:
        "expr : expr '?' expr ':' expr"
        p[0] = A.Ternary(p[1], p[3], p[5], span=self.sp(p))

    def p_expr_unary(self, p: Any) -> None:
        """expr : '-' expr %prec UMINUS
        | '!' expr
        | '~' expr"""
        p[0] = A.Unary(p[1], p[2], span=self.sp(p))

    def p_expr_addr(self, p: Any) -> None:
        "expr : '&' postfix"
        p[0] = A.Unary("&", p[2], span=self.sp(p))

    def p_expr_preinc(self, p: Any) -> None:
        """expr : INC IDENT
        | DEC IDENT"""
        p[0] = A.IncDec(p[1], True, p[2], span=self.sp(p))

    def p_expr_ubound(self, p: Any) -> None:
        "expr : '#' IDENT"
        p[0] = A.UBound(p[2], span=self.sp(p))

    def p_expr_postfix(self, p: Any) -> None:
        """expr : postfix
        | viewexpr"""
        p[0] = p[1]

    def p_postfix_primary(self, p: Any) -> None:
        "postfix : primary"
        p[0] = p[1]

    def p_postfix_index(self, p: Any) -> None:
        "postfix : postfix '[' expr_list ']'"
        p[0] = A.Index(p[1], p[3], span=self.sp(p))

    def p_postfix_getith(self, p: Any) -> None:
        """postfix : postfix '(' NUM ')'
        | postfix '(' '-' NUM ')'
        | postfix '(' IDENT ')'"""
        if len(p) == 6:
            idx: A.Expr = A.Unary(
                "-", A.IntLit(p[4].value, p[4].text, p[4].type, span=self.tspan(p, 4)), span=self.sp(p, 3, 4)
            )
        elif isinstance(p[3], IntValue):
            idx = A.IntLit(p[3].value, p[3].text, p[3].type, span=self.tspan(p, 3))
        else:
            idx = A.Name(p[3], span=self.tspan(p, 3))
        p[0] = A.GetIth(p[1], idx, span=self.sp(p))

    def p_postfix_at(self, p: Any) -> None:
        "postfix : postfix M_AT '(' expr_list ')'"
        p[0] = A.At(p[1], p[4], span=self.sp(p))

    def p_postfix_member(self, p: Any) -> None:
        """postfix : postfix M_SPAN
        | postfix M_DATA
        | postfix M_MDATA"""
        p[0] = A.Member(p[1], p[2][1:], span=self.sp(p))

    def p_postfix_inc(self, p: Any) -> None:
        """postfix : IDENT INC
        | IDENT DEC"""
        p[0] = A.IncDec(p[2], False, p[1], span=self.sp(p))

    def p_viewexpr(self, p: Any) -> None:
        """viewexpr : postfix spanned_op
        | viewexpr spanned_op"""
        if isinstance(p[1], A.View):
            p[1].ops.append(p[2])
            p[1].span = self.sp(p)
            p[0] = p[1]
        else:
            p[0] = A.View(p[1], [p[2]], span=self.sp(p))

    def p_spanned_op_simple(self, p: Any) -> None:
        """spanned_op : M_CHUNKAT '(' expr_list ')'
        | M_SPAN_AS '(' expr_list ')'"""
        p[0] = A.ViewOp(p[1][1:], p[3], span=self.sp(p))

    def p_spanned_op_chunk(self, p: Any) -> None:
        "spanned_op : M_CHUNK '(' expr_list ')' M_AT '(' expr_list ')'"
        p[0] = A.ViewOp("chunk", p[3], at=p[7], span=self.sp(p))

    def p_spanned_op_subspan(self, p: Any) -> None:
        """spanned_op : M_SUBSPAN '(' span_args ')' step_opt at_opt
        | M_MODSPAN '(' span_args ')' step_opt at_opt"""
        args, strides = p[3]
        p[0] = A.ViewOp(p[1][1:], args, strides, p[5], p[6], span=self.sp(p))

    def p_spanned_op_view(self, p: Any) -> None:
        """spanned_op : M_VIEW '(' span_args ')'
        | M_VIEW '(' span_args ')' M_FROM '(' expr_list ')'"""
        args, strides = p[3]
        p[0] = A.ViewOp("view", args, strides, None, p[7] if len(p) == 9 else None, span=self.sp(p))

    def p_spanned_op_sqz(self, p: Any) -> None:
        "spanned_op : M_SQZ '(' ')'"
        p[0] = A.ViewOp("sqz", [], span=self.sp(p))

    def p_spanned_op_zfill(self, p: Any) -> None:
        "spanned_op : M_ZFILL"
        self.tutorial(
            p, 1, "'.zfill' on the source view", "write it as a copy modifier: 'tma.copy.zfill src => dst'",
            "syntax error, unexpected '.zfill'",
        )  # fmt: skip
        p[0] = A.ViewOp("zfill", [], span=self.sp(p))

    def p_span_args(self, p: Any) -> None:
        """span_args : expr_list
        | expr_list ':' expr_list"""
        p[0] = (p[1], p[3] if len(p) == 4 else None)

    def p_step_opt(self, p: Any) -> None:
        """step_opt :
        | M_STEP '(' expr_list ')'"""
        p[0] = p[3] if len(p) == 5 else None

    def p_at_opt(self, p: Any) -> None:
        """at_opt :
        | M_AT '(' expr_list ')'"""
        p[0] = p[3] if len(p) == 5 else None

    def p_primary_literal(self, p: Any) -> None:
        "primary : literal"
        p[0] = p[1]

    def p_literal(self, p: Any) -> None:
        """literal : NUM
        | FLOATLIT
        | TRUE
        | FALSE
        | INF"""
        s = self.sp(p)
        v = p[1]
        if isinstance(v, IntValue):
            p[0] = A.IntLit(v.value, v.text, v.type, span=s)
        elif isinstance(v, tuple):
            p[0] = A.FloatLit(v[0], v[1], v[2], span=s)
        elif v == "inf":
            p[0] = A.InfLit(span=s)
        else:
            p[0] = A.BoolLit(v == "true", span=s)

    def p_primary_strings(self, p: Any) -> None:
        "primary : strings"
        p[0] = p[1]

    def p_strings(self, p: Any) -> None:
        """strings : STRING
        | strings STRING"""
        if len(p) == 2:
            p[0] = A.StringLit([p[1]], span=self.sp(p))
        else:
            p[1].pieces.append(p[2])
            p[1].span = self.sp(p)
            p[0] = p[1]

    def p_primary_ident(self, p: Any) -> None:
        "primary : IDENT"
        p[0] = A.Name(p[1], span=self.sp(p))

    def p_primary_paren(self, p: Any) -> None:
        "primary : '(' expr ')'"
        p[0] = A.Paren(p[2], span=self.sp(p))

    def p_primary_mdspan(self, p: Any) -> None:
        "primary : '[' expr_list ']'"
        p[0] = A.MdspanLit(p[2], span=self.sp(p))

    def p_primary_ituple(self, p: Any) -> None:
        "primary : '{' expr_list '}'"
        p[0] = A.ItupleLit(p[2], span=self.sp(p))

    def p_primary_cdiv(self, p: Any) -> None:
        "primary : CDIV '(' expr ',' expr ')'"
        p[0] = A.Builtin("cdiv", [p[3], p[5]], span=self.sp(p))

    def p_primary_math(self, p: Any) -> None:
        "primary : MATHFN '(' expr_list ')'"
        p[0] = A.Builtin(p[1], p[3], span=self.sp(p))

    def p_primary_cast(self, p: Any) -> None:
        """primary : TO '<' ELEMTYPE '>' '(' expr ')'
        | TO '<' strings '>' '(' expr ')'
        | TO '<' strings '>' '(' NULLPTR ')'"""
        if isinstance(p[3], A.StringLit):
            e = p[6] if isinstance(p[6], A.Node) else A.NullPtr(span=self.tspan(p, 6))
            p[0] = A.Cast(p[3].pieces[0] if len(p[3].pieces) == 1 else "".join(p[3].pieces), True, e, span=self.sp(p))
        else:
            p[0] = A.Cast(p[3], False, p[6], span=self.sp(p))

    def p_primary_select(self, p: Any) -> None:
        "primary : SELECT '(' expr ',' expr_list ')'"
        p[0] = A.Select(p[3], p[5], span=self.sp(p))

    def p_primary_sizeof(self, p: Any) -> None:
        """primary : '|' size_expr '|'
        | '|' ELEMTYPE '|'"""
        if isinstance(p[2], A.Node):
            p[0] = A.SizeOf(p[2], span=self.sp(p))
        else:
            p[0] = A.SizeOf(None, p[2], span=self.sp(p))

    def p_size_expr(self, p: Any) -> None:
        """size_expr : size_term
        | size_expr '+' size_expr
        | size_expr '-' size_expr
        | size_expr '*' size_expr
        | size_expr '/' size_expr
        | size_expr '%' size_expr"""
        p[0] = p[1] if len(p) == 2 else A.Binary(p[2], p[1], p[3], span=self.sp(p))

    def p_size_term(self, p: Any) -> None:
        """size_term : IDENT
        | IDENT M_SPAN
        | NUM
        | CDIV '(' size_expr ',' size_expr ')'
        | '(' size_expr ')'"""
        s = self.sp(p)
        if isinstance(p[1], IntValue):
            p[0] = A.IntLit(p[1].value, p[1].text, p[1].type, span=s)
        elif p[1] == "cdiv":
            p[0] = A.Builtin("cdiv", [p[3], p[5]], span=s)
        elif p[1] == "(":
            p[0] = A.Paren(p[2], span=s)
        elif len(p) == 3:
            p[0] = A.Member(A.Name(p[1], span=self.tspan(p, 1)), "span", span=s)
        else:
            p[0] = A.Name(p[1], span=s)

    # ------------------------------------------------------------ errors
    def p_error(self, tok: Any) -> None:
        self.failed = "end" if tok is None else "token"
        expected = self.expected_tokens()
        if tok is None:
            end = len(self.smap.text) if self.smap else 0
            if self.lexer is not None:
                end = self.lexer.lexer.lexpos
            raise CroqSyntaxError(
                "syntax error, unexpected end of input",
                Span(self.smap, max(0, end - 1), end),
                "the function body is not closed; check for a missing '}'",
            )
        text = _tok_text(tok)
        what = describe(tok.type)
        msg = f"syntax error, unexpected {what}"
        named = tok.type in ("IDENT", "NUM", "FLOATLIT") or (tok.type not in TOKEN_NAMES and len(tok.type) > 1)
        if named and what != f"'{text}'":
            msg += f" '{text}'"
        exp_names = sorted({describe(t) for t in expected if t != "error"})
        if 0 < len(exp_names) <= 5:
            msg += ", expecting " + " or ".join(exp_names)
        span = Span(
            self.smap, tok.lexpos, self.lexer.ends.get(tok.lexpos, tok.lexpos + 1) if self.lexer else tok.lexpos + 1
        )
        raise CroqSyntaxError(msg, span, self.hint_for(tok, expected))

    def expected_tokens(self) -> list[str]:
        parser = self.parser
        if parser is None or not getattr(parser, "statestack", None):
            return []
        state = parser.statestack[-1]
        return list(parser.action[state].keys())

    def after_by(self) -> bool:
        """Is the symbol before the failing token the keyword 'by'?"""
        stack = getattr(self.parser, "symstack", None) or []
        return bool(stack) and getattr(stack[-1], "type", None) in ("BY", "by")

    def hint_for(self, tok: Any, expected: list[str]) -> str | None:
        t = tok.type
        if t == "[" and ")" in expected and "," in expected:
            return "the shape goes before the name: write 'f32 [M, N] name'"
        if t == "REMOVED_STAGE":
            return "'stage<N>(x)' was removed; write 'x % N' and use event rings 'e.at(k)'"
        if t == "IDENT" and {e for e in expected if e != "error"} == {"["} and self.after_by():
            name = _tok_text(tok)
            return (
                f"the bounds of '{{..}} by' are a bracket list (LANGUAGE.md 7.3): write 'by [{name}]', which gives"
                f" one bound per extent of the shape '{name}'"
            )
        if t == "CDIV" and "[" in expected:
            return "a shape after 'in' needs brackets: 'in [cdiv(K, 64)]'"
        if t == "M_STRIDE":
            return "'.stride' is not supported; use '.subspan(extents : strides)' or '.view(...)'"
        if ";" in expected and t in ("IDENT", "}", "NUM") and len(expected) < 40:
            return "is a ';' missing before it?"
        if t == "M_STORE" and "M_COPY" in expected:
            return "'tma.store' was removed: write 'tma.copy shared_buf => global_view'"
        return None


class Parser:
    """Builds the LALR tables once; parses one ``__co__`` function at a time."""

    _instance: Parser | None = None

    def __init__(self) -> None:
        self.rules = _Rules()
        self.lexer = CoLexer()
        self.yacc = _build(self.rules)
        self.rules.parser = self.yacc

    @classmethod
    def get(cls) -> Parser:
        if cls._instance is None:
            cls._instance = Parser()
        return cls._instance

    def parse_function(
        self,
        text: str,
        smap: SourceMap,
        start: int,
        end: int,
        prefixes: list[tuple[str, str]],
        dialect: str = "default",
    ) -> tuple[A.CoFunction, list[Diagnostic]]:
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}")
        self.rules.lexer = self.lexer
        self.rules.smap = smap
        self.rules.dialect = dialect
        self.rules.notes = []
        self.rules.failed = None
        self.lexer.setup(text, smap, start, end, prefixes)
        try:
            fn = self.yacc.parse(lexer=self.lexer, tracking=True)
        except CroqSyntaxError as e:
            if self.rules.failed != "token":
                raise
            better = self.explain(e)
            if better is None:
                raise
            raise better from None
        deep = too_deep(fn)
        if deep is not None:
            raise CroqSyntaxError(
                f"the program is nested too deeply (more than {MAX_NESTING} levels)",
                deep.span,
                "split the expression or statement with temporaries",
            )
        return fn, self.rules.notes

    def explain(self, error: CroqSyntaxError) -> CroqSyntaxError | None:
        """After the parse stopped at a token: C written for Croqtile (frontend/cisms.py), or a
        misspelt word (frontend/repair.py), that explains it."""
        tokens = self.lexer.history
        err = len(tokens) - 1
        try:
            while len(tokens) < err + repair.BEYOND + 3 and self.lexer.token() is not None:
                pass
        except CroqError:
            pass  # the text after the error does not even lex: the replacement parses stop there
        c = cisms.explain(list(tokens), err)
        if c is not None:
            message = f"syntax error: {c.message}" if c.message else error.diagnostics[0].message
            until = c.at if c.until is None else c.until
            span = repair.token_span(tokens, c.at, until + 1, self.rules.smap, self.lexer.ends)
            return CroqSyntaxError(message, span, c.hint)
        named = reserved.explain(list(tokens), err, self.trial, self.rules.smap, self.lexer.ends)
        if named is not None:
            return named
        return repair.explain(list(tokens), err, self.trial, self.rules.smap, self.lexer.ends)

    def trial(self, tokens: list[Any], stop: int) -> int | None:
        """Parse the first ``stop`` of ``tokens``: None when that went through, else the index of the
        token the parse failed at."""
        feed = _Feed(tokens, stop)
        notes = self.rules.notes
        try:
            self.yacc.parse(lexer=feed, tracking=True)
            return None
        except CroqError:
            return feed.look
        except Exception:
            if os.environ.get("CROQ2TRITON_DEBUG"):
                raise
            return feed.look
        finally:
            self.rules.notes = notes


class _Feed:
    """A token list as PLY's lexer: the first ``stop`` tokens, then the end."""

    def __init__(self, tokens: list[Any], stop: int) -> None:
        self.tokens = tokens
        self.stop = min(stop, len(tokens))
        self.look = -1  # the index of the last token handed out (``stop`` once the end was)
        self.lineno = 0
        self.lexpos = 0

    def token(self) -> Any:
        self.look += 1
        if self.look >= self.stop:
            self.look = self.stop
            return None
        tok = self.tokens[self.look]
        self.lexpos = tok.lexpos
        return tok


# The deepest AST the front end accepts.  Later passes walk the AST recursively;
# this keeps them well inside Python's recursion limit (the corpus needs < 30).
MAX_NESTING = 200


def too_deep(root: A.Node, limit: int = MAX_NESTING) -> A.Node | None:
    """The first node found more than ``limit`` levels below ``root``, if any."""
    stack: list[tuple[Any, int]] = [(root, 1)]
    pop, push = stack.pop, stack.append
    node_t = A.Node
    while stack:
        obj, d = pop()
        if isinstance(obj, node_t):
            if d > limit:
                return obj
            for v in obj.__dict__.values():
                if isinstance(v, (node_t, list, tuple)):
                    push((v, d + 1))
        else:  # a list or tuple: its items are at its level
            for v in obj:
                if isinstance(v, (node_t, list, tuple)):
                    push((v, d))
    return None


def _build(rules: _Rules, write: bool = False) -> Any:
    here = os.path.dirname(os.path.abspath(__file__))
    if write:
        return yacc.yacc(
            module=rules, start="function", debug=False, write_tables=True, tabmodule="_parsetab", outputdir=here,
            errorlog=yacc.NullLogger(),
        )  # fmt: skip
    return yacc.yacc(
        module=rules, start="function", debug=False, write_tables=False,
        tabmodule="croq2triton.frontend._parsetab", errorlog=yacc.NullLogger(),
    )  # fmt: skip


def grammar_report() -> str:
    """PLY's full LALR report (parser.out contents), built in memory."""
    import io

    out = io.StringIO()
    err = io.StringIO()
    yacc.yacc(
        module=_Rules(), start="function", debug=True, write_tables=False, debuglog=yacc.PlyLogger(out),
        errorlog=yacc.PlyLogger(err),
    )  # fmt: skip
    return out.getvalue() + err.getvalue()


def tables_current() -> bool:
    """Does the checked-in ``_parsetab.py`` match the grammar (so loading it is instant)?"""
    rules = _Rules()
    pdict = {k: getattr(rules, k) for k in dir(rules)}
    pdict["start"] = "function"
    pinfo = yacc.ParserReflect(pdict, log=yacc.NullLogger())
    pinfo.get_all()
    try:
        read = yacc.LRTable().read_table("croq2triton.frontend._parsetab")
    except Exception:
        return False
    return bool(read == pinfo.signature())


def conflicts() -> list[str]:
    """Conflict lines of the grammar (the tests require none)."""
    return [ln for ln in grammar_report().splitlines() if "conflict" in ln and "WARNING" in ln]


if __name__ == "__main__":
    if "--write-tables" in sys.argv:
        _build(_Rules(), write=True)
        print("wrote", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_parsetab.py"))
    else:
        if "--report" in sys.argv:
            print(grammar_report())
        found = conflicts()
        print("\n".join(found))
        print(f"{len(found)} conflicts")
